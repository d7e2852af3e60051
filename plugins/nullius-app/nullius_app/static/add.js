// Add: copy the prompt the page wrote.
"use strict";

document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) { return; }
  const text = document.getElementById(button.dataset.copy);
  const said = document.getElementById("copied");
  try {
    await navigator.clipboard.writeText(text.textContent);
    said.textContent = "copied";
  } catch (error) {
    const range = document.createRange();  // no clipboard for this page: the prompt is selected, for Ctrl-C
    range.selectNodeContents(text);
    window.getSelection().removeAllRanges();
    window.getSelection().addRange(range);
    said.textContent = "selected: press Ctrl-C to copy";
  }
});
