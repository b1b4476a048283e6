// A chosen CSV file fills the textarea, so the form (text fields only) carries it and the
// Preview button shows what it would add and reject before anything is created.
async function fillFrom(input) {
  const file = input.files && input.files[0];
  if (!file) return;
  document.getElementById(input.dataset.fills).value = await file.text();
}

document.querySelectorAll("input[type=file][data-fills]").forEach((input) => {
  input.addEventListener("change", () => fillFrom(input));
  // A file chosen before this (deferred) script ran fired its change event unheard.
  fillFrom(input);
});
