// The app's pages: every request that changes anything carries the session's form token.
"use strict";

const token = () => document.querySelector('meta[name="nullius-token"]').content;

async function post(url, data) {
  const response = await fetch(url, {
    method: "POST",
    headers: {"Content-Type": "application/json", "X-Nullius-Token": token()},
    body: JSON.stringify(data || {}),
  });
  const text = await response.text();
  let body;
  try { body = JSON.parse(text); } catch (e) { body = {said: text}; }
  if (!response.ok) { throw new Error(body.said || body.error || text); }
  return body;
}

async function getJson(url) {
  const response = await fetch(url, {headers: {"Accept": "application/json"}});
  if (!response.ok) { throw new Error(await response.text()); }
  return response.json();
}

// Forms marked data-post are sent as JSON with the token; their result is said in the element data-said names.
document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!form.matches("form[data-post]")) { return; }
  event.preventDefault();
  const said = document.getElementById(form.dataset.said || "said");
  const data = Object.fromEntries(new FormData(form).entries());
  try {
    const body = await post(form.dataset.post, data);
    if (said) { said.textContent = body.said || "done"; said.className = "ok"; }
    if (body.go) { window.location = body.go; }
    else if (form.dataset.reload !== undefined) { window.location.reload(); }
  } catch (error) {
    if (said) { said.textContent = error.message; said.className = "bad"; }
  }
});

window.nullius = {post, getJson};
