// The catalogue's live parts: an action's form starts its command and the page reloads when it ends;
// a licence's form sends its value once, in a POST, and forgets it (it is never shown back).
"use strict";

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function say(output, text, good) {
  if (!output) { return; }
  output.textContent = text;
  output.className = "said " + (good ? "ok" : "bad");
}

// A command the app started: polled until it ends, its last words shown, then the page shows what it wrote.
async function watch(id, output) {
  for (;;) {
    let status;
    try {
      status = await window.nullius.getJson("/catalogue/started/" + encodeURIComponent(id));
    } catch (error) {
      say(output, error.message, false);
      return;
    }
    if (!status.running) { window.location.reload(); return; }
    if (output && status.said.length) { say(output, status.said[status.said.length - 1], true); }
    await pause(1000);
  }
}

function bytesToBase64(buffer) {
  const bytes = new Uint8Array(buffer);
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) { text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000)); }
  return btoa(text);
}

async function licenceFields(form) {
  const fields = {expires: form.elements.expires ? form.elements.expires.value : ""};
  if (form.dataset.kind === "file") {
    const file = form.elements.file.files[0];
    fields.value_b64 = file ? bytesToBase64(await file.arrayBuffer()) : "";
  } else {
    fields.value = form.elements.value.value;
  }
  return fields;
}

document.addEventListener("submit", async (event) => {
  const form = event.target;
  const licence = form.matches("form[data-licence]");
  if (!licence && !form.matches("form[data-action]")) { return; }
  event.preventDefault();
  const output = form.querySelector("output.said");
  const button = form.querySelector("button[type=submit]");
  if (button) { button.disabled = true; }
  try {
    const data = licence ? await licenceFields(form) : Object.fromEntries(new FormData(form).entries());
    const body = await window.nullius.post(licence ? form.dataset.licence : form.dataset.action, data);
    if (licence) { form.reset(); }
    say(output, body.said || "done", true);
    if (body.run) { await watch(body.run, output); } else { window.location.reload(); }
  } catch (error) {
    if (licence) { form.reset(); }
    say(output, error.message, false);
  } finally {
    if (button) { button.disabled = false; }
  }
});

// Commands already running when the page opened: watched too.
document.addEventListener("DOMContentLoaded", () => {
  for (const item of document.querySelectorAll("[data-watch]")) {
    watch(item.dataset.watch, null);
  }
});
