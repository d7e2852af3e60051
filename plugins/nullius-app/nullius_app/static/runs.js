// Runs: the figures of every command and job, asked of /runs.json each second and written in place (no reload).
"use strict";

(() => {
  const EVERY = 1000;
  const IDLE_EVERY = 5000; // when nothing runs, ask less often

  const field = (root, name) => root.querySelector(`[data-field="${name}"]`);
  const put = (root, name, text) => { const el = field(root, name); if (el && el.textContent !== text) { el.textContent = text; } };
  const stateClass = (el, state) => {
    el.className = el.className.split(" ").filter((c) => !c.startsWith("state-")).join(" ") + " state-" + state.replace(/ /g, "-");
  };
  const when = (iso) => iso ? iso.slice(0, 19).replace("T", " ") + " UTC" : "";
  const cost = (job) => job.cost_usd !== null && job.cost_usd !== undefined ? "$" + job.cost_usd.toFixed(4) : (job.cost_known ? "none: no model called" : "unknown: a call without a price");

  function showJob(row, job) {
    const state = field(row, "state");
    put(row, "state", job.state);
    stateClass(state, job.state);
    put(row, "done", `${job.done} of ${job.planned === null ? "?" : job.planned}`);
    put(row, "passed", String(job.passed) + (job.scored ? ` (+${job.scored} scored)` : ""));
    put(row, "failed", String(job.failed));
    put(row, "errored", String(job.errored));
    put(row, "running", String(job.running));
    put(row, "cost", cost(job));
    for (const part of job.bar || []) {
      const rect = row.querySelector(`rect[data-kind="${part.kind}"]`);
      if (rect) {
        rect.setAttribute("x", part.x);
        rect.setAttribute("width", part.width);
        rect.querySelector("title").textContent = `${part.kind}: ${part.n}`;
      }
    }
    const resume = row.querySelector("[data-resume]");
    if (resume) {
      resume.hidden = !job.resumable;
      resume.textContent = job.on_host ? "Follow again" : "Resume";
      resume.dataset.asksUnsandboxed = job.asks_unsandboxed ? "yes" : "";
      resume.dataset.asksBaseUrl = job.asks_base_url || "";
    }
    const reason = row.parentElement.querySelector(`tr[data-reason="${CSS.escape(job.name)}"]`);
    if (reason) { reason.hidden = !job.reason; put(reason, "reason", job.reason || ""); }
  }

  function showRun(section, run) {
    const state = field(section, "state");
    put(section, "state", run.state);
    stateClass(state, run.state);
    put(section, "ended", run.ended ? `, ended ${when(run.ended)}` : "");
    const said = field(section, "said");
    said.hidden = !run.said;
    said.classList.toggle("warn", run.code === 130); // cancelled: resumable
    said.classList.toggle("bad", run.code !== 0 && run.code !== null && run.code !== 130);
    put(section, "said", run.said || "");
    put(section, "log", (run.log || []).join("\n"));
    section.querySelector("[data-cancel]").hidden = !run.running;
    for (const job of run.jobs) {
      const row = section.querySelector(`tr[data-job="${CSS.escape(job.name)}"]`);
      if (row) { showJob(row, job); }
    }
  }

  async function poll() {
    let running = false;
    try {
      const body = await window.nullius.getJson("/runs.json");
      for (const run of body.runs) {
        running = running || run.running;
        const section = document.querySelector(`section.run[data-run="${CSS.escape(run.id)}"]`);
        if (section) { showRun(section, run); } else { document.getElementById("runs-news").hidden = false; }
      }
    } catch (error) {
      running = true; // the app may be busy: ask again soon
    }
    window.setTimeout(poll, running ? EVERY : IDLE_EVERY);
  }

  document.addEventListener("click", async (event) => {
    const cancel = event.target.closest("[data-cancel]");
    const resume = event.target.closest("[data-resume]");
    if (!cancel && !resume) { return; }
    const section = event.target.closest("section.run");
    const acted = field(section, "acted");
    try {
      if (cancel) {
        cancel.disabled = true;
        const body = await window.nullius.post(`/runs/${encodeURIComponent(cancel.dataset.cancel)}/cancel`);
        acted.textContent = body.said;
        acted.className = "acted ok";
      } else {
        // a job's record consents to nothing: what it asks is asked of the person, and only what they accept is sent
        const asks = [];
        if (resume.dataset.asksUnsandboxed) { asks.push("run its agent without a sandbox, as you, on this machine"); }
        if (resume.dataset.asksBaseUrl) { asks.push(`send your provider's key to ${resume.dataset.asksBaseUrl}`); }
        if (asks.length && !window.confirm(`Resuming ${resume.dataset.resume} will ${asks.join(" and ")}. Resume it?`)) { return; }
        const consent = {unsandboxed: Boolean(resume.dataset.asksUnsandboxed), base_url: resume.dataset.asksBaseUrl || null};
        resume.disabled = true;
        await window.nullius.post("/runs/resume", {job: resume.dataset.resume, consent});
        window.location.reload(); // its own command, drawn at the top
      }
    } catch (error) {
      acted.textContent = error.message;
      acted.className = "acted bad";
      (cancel || resume).disabled = false;
    }
  });

  window.setTimeout(poll, EVERY);
})();
