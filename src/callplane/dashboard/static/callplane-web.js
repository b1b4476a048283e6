/*
 * callplane-web.js: talk to a callplane agent from any web page (docs/web-calls.md).
 * No framework, no CDN: serve this file from your callplane server and embed it.
 *
 *   <script src="https://callplane.example.com/dashboard/static/callplane-web.js"></script>
 *   const call = await CallplaneWeb.start({
 *     token,                                  // from POST /v1/web_calls/tokens, made by your server
 *     onTranscript: (entries) => { ... },     // [{role: "user" | "assistant", text, timestamp}]
 *     onStatus: (status) => { ... },          // "connecting", "connected", "ended"
 *   });
 *   call.callId; call.hangup();
 *
 * The page never holds an API key: the token is single use, expires within 300 s and works only
 * from the origin it names. The microphone is asked for when start() is called.
 */
(function (global) {
  "use strict";

  var script = document.currentScript;
  // The server this file was loaded from is the server to call, unless told otherwise.
  var defaultBase = script && script.src ? new URL(script.src).origin : global.location.origin;

  function waitForCandidates(pc, limitMs) {
    // The server answers once, with no trickle ICE: the offer must carry its candidates.
    if (pc.iceGatheringState === "complete") return Promise.resolve();
    return new Promise(function (resolve) {
      var timer = setTimeout(resolve, limitMs);
      pc.addEventListener("icegatheringstatechange", function () {
        if (pc.iceGatheringState === "complete") {
          clearTimeout(timer);
          resolve();
        }
      });
    });
  }

  function start(options) {
    options = options || {};
    if (!options.token) return Promise.reject(new Error("CallplaneWeb.start: a token is required"));
    var base = (options.baseUrl || defaultBase).replace(/\/+$/, "");
    var onTranscript = options.onTranscript || function () {};
    var onStatus = options.onStatus || function () {};
    var audio = options.audio || new Audio();
    audio.autoplay = true;
    var pc = null;
    var stream = null;
    var ended = false;

    function end() {
      if (ended) return;
      ended = true;
      if (stream) stream.getTracks().forEach(function (t) { t.stop(); });
      if (pc) pc.close();
      onStatus("ended");
    }

    onStatus("connecting");
    var media = options.stream
      ? Promise.resolve(options.stream)
      : navigator.mediaDevices.getUserMedia({ audio: true });
    return media
      .then(function (microphone) {
        stream = microphone;
        // ICE servers only if the page names them: by default none (no public STUN).
        pc = new RTCPeerConnection({ iceServers: options.iceServers || [] });
        var channel = pc.createDataChannel("callplane");
        channel.onmessage = function (event) {
          var message;
          try { message = JSON.parse(event.data); } catch (e) { return; }
          if (message && message.type === "transcript" && Array.isArray(message.entries)) {
            onTranscript(message.entries);
          }
          if (message && message.type === "ended") end();
        };
        channel.onclose = function () { if (call && call.callId) end(); };
        stream.getAudioTracks().forEach(function (track) { pc.addTrack(track, stream); });
        pc.ontrack = function (event) {
          audio.srcObject = event.streams[0] || new MediaStream([event.track]);
          var playing = audio.play();
          if (playing && playing.catch) playing.catch(function () {});
        };
        pc.onconnectionstatechange = function () {
          if (pc.connectionState === "connected") onStatus("connected");
          if (pc.connectionState === "failed" || pc.connectionState === "closed") end();
        };
        var call = {
          callId: null,
          peerConnection: pc,
          hangup: function () {
            try { if (channel.readyState === "open") channel.send('{"type":"hangup"}'); } catch (e) {}
            // A moment for the message to leave before the connection closes.
            setTimeout(end, 100);
          },
        };
        return pc.createOffer()
          .then(function (offer) { return pc.setLocalDescription(offer); })
          .then(function () { return waitForCandidates(pc, 3000); })
          .then(function () {
            return fetch(base + "/v1/web_calls", {
              method: "POST",
              mode: "cors",
              credentials: "omit",
              headers: { "Authorization": "Bearer " + options.token, "Content-Type": "application/json" },
              body: JSON.stringify({ sdp: pc.localDescription.sdp }),
            });
          })
          .then(function (response) {
            return response.json().then(function (body) {
              if (!response.ok) throw new Error(body.error || "the web call was refused (" + response.status + ")");
              return body;
            }, function () {
              throw new Error("the web call was refused (" + response.status + ")");
            });
          })
          .then(function (body) {
            call.callId = body.call_id;
            return pc.setRemoteDescription({ type: "answer", sdp: body.sdp });
          })
          .then(function () { return call; });
      })
      .catch(function (error) {
        end();
        throw error;
      });
  }

  global.CallplaneWeb = { start: start };
})(window);
