// callplane dashboard: the few behaviours plain HTML lacks. Everything works without it.
"use strict";

document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const field = document.querySelector(button.dataset.copy);
  if (!field) return;
  const done = () => {
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = "Copy"; }, 2000);
  };
  field.select();
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(field.value).then(done, () => document.execCommand("copy") && done());
  } else if (document.execCommand("copy")) {
    done();
  }
});

document.addEventListener("submit", (event) => {
  const message = event.target.dataset && event.target.dataset.confirm;
  if (message && !window.confirm(message)) event.preventDefault();
});

// "Place a call": the branch list shows only the chosen agent's branches.
document.querySelectorAll("select[data-branches-of]").forEach((branches) => {
  const agent = document.getElementById(branches.dataset.branchesOf);
  if (!agent) return;
  const sync = () => {
    branches.querySelectorAll("optgroup[data-agent]").forEach((group) => {
      const mine = group.dataset.agent === agent.value;
      group.hidden = !mine;
      group.disabled = !mine;
      if (!mine && group.contains(branches.selectedOptions[0])) branches.value = "";
    });
  };
  agent.addEventListener("change", sync);
  sync();
});

// The agent editor: the voice player plays the voice chosen in the list, committed or not.
document.querySelectorAll("audio[data-preview-of]").forEach((player) => {
  const choice = document.getElementById(player.dataset.previewOf);
  if (!choice) return;
  choice.addEventListener("change", () => {
    const row = player.closest("p") || player;
    if (choice.value) {
      player.src = player.dataset.previewBase + encodeURIComponent(choice.value) + "/preview";
      row.hidden = false;
    } else {
      player.removeAttribute("src");
      row.hidden = true;
    }
  });
});

// The agent editor's live check fills each field's error slot out of band; the field it
// describes is marked invalid with it, as on a page the server rendered.
document.addEventListener("htmx:afterSettle", () => {
  document.querySelectorAll(".field-error[id]").forEach((slot) => {
    document.querySelectorAll(`[aria-describedby~="${slot.id}"]`).forEach((field) => {
      if (slot.textContent.trim()) field.setAttribute("aria-invalid", "true");
      else field.removeAttribute("aria-invalid");
    });
  });
});
