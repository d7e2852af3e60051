// The builder: the form sent to /build/plan as it changes, the plan drawn (jobs, commands, what applies), then saved or run.
"use strict";

(() => {
  const form = document.getElementById("builder");
  // Choosing a benchmark or a version draws its form (a GET of /build).
  for (const chooser of document.querySelectorAll("form[data-go]")) {
    chooser.querySelector(".go").hidden = true;
    chooser.querySelector("select").addEventListener("change", () => chooser.submit());
  }
  if (!form) { return; }

  const $ = (id) => document.getElementById(id);
  const LISTS = new Set(["datasets", "participants"]);
  let asked = 0; // the latest plan asked; an older answer is dropped
  let timer = null;
  let latest = null;

  function collect() {
    const data = {};
    for (const [key, value] of new FormData(form).entries()) {
      if (LISTS.has(key)) { (data[key] = data[key] || []).push(value); } else { data[key] = value; }
    }
    for (const key of LISTS) { data[key] = data[key] || []; }
    return data;
  }

  const choice = () => (form.querySelector('input[name="model_choice"]:checked') || {value: "any"}).value;

  // What the page shows without asking the server: the model fields of the choice, Served by on OpenRouter.
  function showChoice() {
    const now = choice();
    for (const el of form.querySelectorAll("[data-choice]")) {
      el.hidden = !el.dataset.choice.split(" ").includes(now);
    }
    for (const el of form.querySelectorAll("[data-voice] input")) {
      el.disabled = now !== "any"; // the paper's and the leaderboard's simulator and judge are theirs
      el.title = now === "any" ? "" : "fixed by the choice above";
    }
    const onHost = (form.querySelector('input[name="where"]:checked') || {value: "here"}).value === "host";
    for (const el of form.querySelectorAll("[data-host]")) { el.hidden = !onHost; }
    const openrouter = form.querySelector('[name="provider"]').value === "openrouter";
    for (const el of form.querySelectorAll("[data-served]")) {
      const voice = form.querySelector(`[data-voice="${el.dataset.served}"] input`);
      el.hidden = !openrouter || (voice !== null && voice.disabled);
    }
  }

  // A model field's Served by is cleared when its model changes: a pin is a model's.
  const modelOf = {model: ["model", "model_paper"], simulator: ["simulator_model"], judge: ["judge_model"]};
  const before = {};
  for (const [served, names] of Object.entries(modelOf)) {
    for (const name of names) {
      const input = form.querySelector(`[name="${name}"]`);
      if (!input) { continue; }
      before[name] = input.value;
      input.addEventListener("input", () => {
        if (input.value === before[name]) { return; }
        before[name] = input.value;
        const pin = form.querySelector(`[name="served_by:${served}"]`);
        if (pin) { pin.value = ""; }
      });
    }
  }

  function applies(selector, attribute, rules, values) {
    for (const row of form.querySelectorAll(selector)) {
      const name = row.getAttribute(attribute);
      const why = rules[name];
      const control = row.querySelector("select, input");
      const note = row.querySelector(".why");
      const fixed = latest && latest.fixed && attribute === "data-bench-option" ? latest.fixed[name] : undefined;
      row.classList.toggle("off", Boolean(why) || fixed !== undefined);
      control.disabled = Boolean(why) || fixed !== undefined;
      note.hidden = !why && fixed === undefined;
      note.textContent = fixed !== undefined ? `The leaderboard sets it: ${fixed}` : (why || "");
      if (values && values[name] && control.tagName === "SELECT") {
        for (const option of control.options) {
          option.disabled = option.value !== "" && !values[name].includes(option.value);
        }
      }
    }
  }

  function list(id, items) {
    const el = $(id);
    el.replaceChildren(...items.map((text) => { const li = document.createElement("li"); li.textContent = text; return li; }));
  }

  // Each problem the plan ties to a field is said beside it too.
  function markFields(fields) {
    for (const el of document.querySelectorAll(".field-problem")) { el.remove(); }
    for (const el of document.querySelectorAll(".invalid")) { el.classList.remove("invalid"); }
    for (const [name, text] of Object.entries(fields || {})) {
      const input = document.querySelector(`[name="${CSS.escape(name)}"]`);
      if (!input) { continue; }
      const place = input.type === "checkbox" || input.type === "radio" ? input.closest("ul, .choice") : input;
      place.classList.add("invalid");
      const note = document.createElement("p");
      note.className = "field-problem";
      note.textContent = text;
      place.after(note);
    }
  }

  function draw(plan) {
    latest = plan;
    markFields(plan.fields);
    list("problems", plan.problems);
    list("warnings", plan.warnings);
    const rows = plan.jobs.map((job) => {
      const tr = document.createElement("tr");
      if (job.exists) { tr.className = "exists"; }
      for (const text of [job.name, job.dataset || "default", job.participant, job.shard || ""]) {
        const td = document.createElement("td");
        if (text === job.name) { const code = document.createElement("code"); code.textContent = text; td.append(code); } else { td.textContent = text; }
        tr.append(td);
      }
      return tr;
    });
    $("jobs").querySelector("tbody").replaceChildren(...rows);
    $("job-count").textContent = String(plan.jobs.length);
    $("commands").textContent = plan.commands.length ? plan.commands.join("\n") : "Nothing to run until the problems above are put right.";
    $("jobs").hidden = plan.jobs.length === 0;
    if (plan.file) { $("recipe-file").textContent = plan.file; }
    const ready = plan.problems.length === 0 && plan.jobs.length > 0;
    $("save-recipe").disabled = !ready;
    $("run-recipe").disabled = !ready;
    $("run-recipe").textContent = plan.jobs.length > 1 ? `Run ${plan.jobs.length} jobs` : "Run";
    applies("[data-bench-option]", "data-bench-option", plan.bench_options, null);
    applies("[data-agent-option]", "data-agent-option", plan.options, plan.option_values);
    for (const el of form.querySelectorAll("[data-consent]")) { el.hidden = !plan.consent; }
    for (const el of form.querySelectorAll("[data-agent-option]")) { el.hidden = !plan.chosen; }
    for (const el of form.querySelectorAll("[data-no-agent]")) { el.hidden = plan.chosen; }
  }

  // form.dataset.plan: "pending" from a change until the plan that answers it is drawn, then "drawn".
  async function ask() {
    const mine = ++asked;
    try {
      const plan = await window.nullius.post("/build/plan", collect());
      if (mine === asked) { draw(plan); }
    } catch (error) {
      if (mine === asked) { list("problems", [error.message]); }
    }
    if (mine === asked) { form.dataset.plan = "drawn"; }
  }

  function changed() {
    form.dataset.plan = "pending";
    showChoice();
    window.clearTimeout(timer);
    timer = window.setTimeout(ask, 250);
  }

  form.addEventListener("submit", (event) => event.preventDefault()); // Enter in a field changes nothing but the plan
  form.addEventListener("input", changed);
  form.addEventListener("change", changed);
  $("name").addEventListener("input", changed); // the recipe's name sits beside the plan, outside the form's own tree

  const said = (text, ok) => { $("said").textContent = text; $("said").className = ok ? "ok" : "bad"; };

  $("save-recipe").addEventListener("click", async () => {
    try {
      const body = await window.nullius.post("/build/save", collect());
      said(body.said, true);
      draw(body.plan);
    } catch (error) { said(error.message, false); }
  });

  // Each job started is watched here until it is under way or has ended: a refusal is said in the CLI's own words.
  async function watch(item, id) {
    try {
      const run = await window.nullius.getJson(`/runs/${encodeURIComponent(id)}.json`);
      const job = run.jobs[0] || {};
      const figures = job.planned ? ` · ${job.done} of ${job.planned} done` : "";
      item.querySelector(".state").textContent = run.running ? `${job.state || "running"}${figures}` : run.state;
      item.querySelector(".state").className = `state state-${(run.running ? job.state || "running" : run.state).replace(/ /g, "-")}`;
      const words = item.querySelector(".words");
      words.hidden = !run.said;
      words.textContent = run.said || "";
      words.classList.toggle("bad", run.code !== 0 && run.code !== null);
      if (run.running) { window.setTimeout(() => watch(item, id), 1000); }
    } catch (error) {
      window.setTimeout(() => watch(item, id), 2000);
    }
  }

  $("run-recipe").addEventListener("click", async () => {
    $("run-recipe").disabled = true;
    try {
      const body = await window.nullius.post("/build/run", collect());
      said(body.said, true);
      const items = body.runs.map((run) => {
        const li = document.createElement("li");
        li.dataset.run = run.id;
        const name = document.createElement("code");
        name.textContent = run.job;
        const state = document.createElement("span");
        state.className = "state";
        state.textContent = "starting";
        const words = document.createElement("pre");
        words.className = "words";
        words.hidden = true;
        li.append(name, " ", state, words);
        watch(li, run.id);
        return li;
      });
      const more = document.createElement("li");
      const link = document.createElement("a");
      link.href = "/runs";
      link.textContent = "Follow them on Runs";
      more.append(link);
      $("started").replaceChildren(...items, more);
      draw(body.plan);
    } catch (error) {
      said(error.message, false);
    } finally {
      form.dataset.plan = "pending";
      window.setTimeout(ask, 0); // its jobs now exist: the plan says so
    }
  });

  // `nullius host check` for the host in the form: what it has, what a run there would lack (its own words).
  const checkHost = $("check-host");
  if (checkHost) {
    checkHost.addEventListener("click", async () => {
      const box = $("host-said");
      box.hidden = false;
      box.className = "";
      box.replaceChildren(Object.assign(document.createElement("p"), {textContent: "asking the host…"}));
      checkHost.disabled = true;
      let answer;
      try {
        answer = await window.nullius.post("/build/host-check", {...collect(), accept_new: $("accept-new").checked});
      } catch (error) {
        answer = {ok: false, problems: [error.message], found: {}};
      }
      checkHost.disabled = false;
      const verdict = document.createElement("p");
      verdict.className = "verdict";
      verdict.textContent = answer.ok ? `${answer.host} can run it (${answer.backend} backend)` : "The host cannot run it yet:";
      const problems = document.createElement("ul");
      problems.replaceChildren(...(answer.problems || []).map((text) => Object.assign(document.createElement("li"), {textContent: text})));
      const table = document.createElement("table");
      for (const [name, value] of Object.entries(answer.found || {})) {
        const tr = table.insertRow();
        tr.insertCell().textContent = name;
        const cell = tr.insertCell();
        cell.textContent = value || "missing";
        if (!value) { cell.className = "missing"; }
      }
      box.className = answer.ok ? "ok" : "bad";
      box.dataset.checked = answer.ok ? "ok" : "refused";
      box.replaceChildren(verdict, problems, table);
    });
  }

  form.dataset.plan = "pending";
  showChoice();
  ask();
})();
