// "Talk to this agent": a token for this page's origin, then a web call with callplane-web.js.
"use strict";

(function () {
  const root = document.getElementById("talk");
  if (!root) return;
  const startButton = document.getElementById("talk-start");
  const stopButton = document.getElementById("talk-stop");
  const status = document.getElementById("talk-status");
  const transcript = document.getElementById("transcript");
  let call = null;

  function show(entries) {
    transcript.replaceChildren(...entries.filter((e) => e.text).map((entry) => {
      const item = document.createElement("li");
      item.className = entry.role;
      item.textContent = (entry.role === "user" ? "You: " : "Agent: ") + entry.text;
      return item;
    }));
  }

  function ended() {
    startButton.hidden = false;
    stopButton.hidden = true;
    call = null;
  }

  startButton.addEventListener("click", async () => {
    startButton.hidden = true;
    status.textContent = "Connecting…";
    try {
      const response = await fetch(root.dataset.tokenUrl, {
        method: "POST",
        headers: { "X-CSRF-Token": root.dataset.csrf },
        credentials: "same-origin",
      });
      if (!response.ok) throw new Error("no token (" + response.status + ")");
      const { token } = await response.json();
      call = await CallplaneWeb.start({
        token,
        baseUrl: location.origin + root.dataset.apiBase,
        audio: document.getElementById("talk-audio"),
        onTranscript: show,
        onStatus: (state) => {
          status.textContent = { connecting: "Connecting…", connected: "Connected: speak now.", ended: "Call ended." }[state] || state;
          if (state === "ended") ended();
        },
      });
      stopButton.hidden = false;
      const link = document.getElementById("talk-call-link");
      link.textContent = call.callId;
      link.href = root.dataset.apiBase + "/dashboard/calls/" + call.callId;
      document.getElementById("talk-call").hidden = false;
    } catch (error) {
      status.textContent = "Could not start the call: " + error.message;
      ended();
    }
  });

  stopButton.addEventListener("click", () => { if (call) call.hangup(); });
})();
