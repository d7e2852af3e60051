"""The task-level recursion, agg (k independent pairs, k compositions) or seq (k rounds); every step ledgered.

agg runs its pairs, then its compositions, [experiment] parallel at a time in threads (rollouts and model calls are
I/O bound). The budget is charged before each rollout and each improver call, under the ledger's lock; a refused
charge is a budget_exhausted event and stops the run: calls in flight finish, nothing new starts. Scores do not exist
here: judging happens only after freeze.
"""

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import NanoError, config as cf, experience, harness as hz, probe, propose, runner, select, tasks as tk
from .ledger import Ledger
from .model import Client

REJECTED_SHOWN = 8


class BudgetExhausted(Exception):
    """A charge was refused; the ledger already says so."""


class Run:
    def __init__(self, workspace: Path, cfg: dict, ledger: Ledger, client: Client):
        self.ws, self.cfg, self.ledger, self.client = Path(workspace), cfg, ledger, client
        self.state = Path(workspace) / ".nanorsi"
        self.limits = {"rollout": cfg["budget"]["max_rollouts"], "improver": cfg["budget"]["max_proposer_calls"]}
        self.stopped: str | None = None  # why the run stops (budget, interrupt): later charges refused, no call

    def charge(self, what: str, task: str, label: str) -> None:
        """Count and charge under one lock, so that two threads never both take the last unit."""
        with self.ledger.mutex:
            used, limit = self.ledger.charged(what), self.limits[what]
            if self.stopped is None and used >= limit:
                self.ledger.append("budget_exhausted", task=task, label=label, what=what, used=used, limit=limit)
                self.stopped = (f"budget exhausted: {used} of [budget] "
                                f"{'max_rollouts' if what == 'rollout' else 'max_proposer_calls'} = {limit} spent")
            if self.stopped is not None:
                raise BudgetExhausted(self.stopped)
            self.ledger.append("charge", task=task, label=label, what=what, used=used + 1, limit=limit)

    def improver(self, task: str, label: str):
        return lambda: self.charge("improver", task, label)

    def rollout(self, task: tk.Task, harness: dict, label: str, attempt: int) -> dict:
        self.charge("rollout", task.id, label)
        out = self.state / "rollouts" / task.id / (label if attempt == 1 else f"attempt{attempt}/{label}")
        r = runner.rollout(self.cfg, self.ws, task, harness, label, out, self.client)
        self.ledger.append("rollout", task=task.id, label=label, attempt=attempt, harness=hz.digest(harness),
                           config=cf.digest(self.cfg), ok=r["ok"], delivered=r["delivered"], error=r["error"],
                           deliverables=sorted(r["deliverables"]), usage=r["usage"], job=r["job"],
                           dir=out.relative_to(self.ws).as_posix())
        return {**r, "harness": harness}

    def reuse(self, task: tk.Task, ref: dict, label: str) -> dict:
        self.ledger.append("rollout_reused", task=task.id, label=label, reused=ref["label"],
                           dir=Path(ref["dir"]).relative_to(self.ws).as_posix())
        return {**ref, "label": label}


class Unit:
    """One pair or composition (pair index i) as it runs: the rejected edits it sees and adds, its contrasts."""

    def __init__(self, i: int, rejected: list[dict]):
        self.i, self.seen, self.rejected, self.contrasts = i, len(rejected), list(rejected), []


class TaskRun:
    """One attempt at one task: the base rollout, the recursion, the confirmation, selection and the lesson."""

    def __init__(self, run: Run, task: tk.Task, base: dict, attempt: int):
        self.run, self.task, self.base_h, self.attempt = run, task, base, attempt
        self.rejected: list[dict] = []
        self.contrasts: list[dict] = []

    def go(self) -> str:
        self.run.ledger.append("task_started", task=self.task.id, attempt=self.attempt)
        base = self.run.rollout(self.task, self.base_h, "base1", self.attempt)
        k = self.run.cfg["experiment"]["k"]
        if self.run.cfg["experiment"]["mode"] == "agg":
            pairs = self.stage("pairs", range(1, k + 1), lambda u: self.pair(base, u))
            composed = self.stage("compositions", range(1, k + 1),
                                  lambda u: self.compose(base, pairs[u.i - 1], f"agg{u.i}", u))
            finals = [d for _, draws in composed for d in draws]
        else:
            ref, finals = base, [base]
            for t in range(1, k + 1):
                [pair] = self.stage("pairs", [t], lambda u: self.pair(ref, u))
                [(adopted, draws)] = self.stage("compositions", [t], lambda u: self.compose(ref, pair, f"c{t}", u))
                ref, finals = (draws[0], draws) if adopted else (ref, finals)
        chosen = self.choose(finals)
        if chosen["harness"] != self.base_h:
            self.lesson(chosen)
        self.run.ledger.append("task_done", task=self.task.id, chosen=chosen["label"], attempt=self.attempt,
                               harness=hz.digest(chosen["harness"]))
        return chosen["label"]

    def stage(self, name: str, indices, work) -> list:
        """work(unit) for each pair index, [experiment] parallel at a time, in waves; the results in pair order.
        A wave sees the rejected edits of the waves before it, never those of a pair beside it, so what a pair
        decides does not hang on which thread finished first (parallel = 1: one after another, as seq runs)."""
        indices, width, results = list(indices), self.run.cfg["experiment"]["parallel"], []
        for n in range(0, len(indices), width):
            wave = [Unit(i, self.rejected) for i in indices[n:n + width]]
            outcomes = _at_once(self.run, work, wave)
            failed = [o for o in outcomes if isinstance(o, Exception)]
            if any(isinstance(o, BudgetExhausted) for o in failed):
                ended = {u.i: isinstance(o, Exception) for u, o in zip(wave, outcomes)}
                self.run.ledger.append("stage_stopped", task=self.task.id, stage=name,
                                       finished=[i for i, cut in ended.items() if not cut],
                                       stopped=[i for i, cut in ended.items() if cut], not_started=indices[n + width:])
            if failed:
                raise failed[0]
            for u in wave:
                self.rejected += u.rejected[u.seen:]
                self.contrasts += u.contrasts
            results += outcomes
        return results

    def pair(self, ref: dict, u: Unit) -> list[dict]:
        """One INV and one DOM proposal, each probed with its own rollout and contrasted against ref."""
        out = []
        for kind in ("INV", "DOM"):
            label = f"{kind.lower()}{u.i}"
            prop = propose.propose(self.run.client, kind, label, self.task, ref["harness"], ref,
                                   u.rejected[-REJECTED_SHOWN:], self.lessons(),
                                   self.run.improver(self.task.id, label))
            self.run.ledger.append("proposal", task=self.task.id, label=label, kind=kind, reference=ref["label"],
                                   component=prop.component, rationale=prop.rationale, valid=prop.valid,
                                   error=prop.error, usage=prop.usage, pair=u.i,
                                   harness=hz.digest(prop.harness) if prop.valid else None)
            c = self.probe(ref, prop, u) if prop.valid else self.record(ref, label, {
                "verdict": "regresses", "observation": f"the proposal failed validation: {prop.error}",
                "called": False, "error": None, "usage": {}}, u)
            out.append({"label": label, "kind": kind, "component": prop.component, "harness": prop.harness, **c})
            if c["verdict"] != "mitigates":
                u.rejected.append({"label": label, "component": prop.component, **c})
        return out

    def probe(self, ref: dict, prop: propose.Proposal, u: Unit) -> dict:
        cand = self.run.rollout(self.task, prop.harness, prop.label, self.attempt)
        edit = hz.diff(ref["harness"], prop.harness)
        return self.contrast(ref, cand, edit, u)

    def contrast(self, ref: dict, cand: dict, edit: str, u: Unit) -> dict:
        c = probe.contrast(self.run.client, self.task, ref, cand, edit,
                           self.run.improver(self.task.id, cand["label"]))
        return self.record(ref, cand["label"], c, u)

    def record(self, ref: dict, label: str, c: dict, u: Unit) -> dict:
        self.run.ledger.append("contrast", task=self.task.id, candidate=label, reference=ref["label"], pair=u.i,
                               **{k: c[k] for k in ("verdict", "observation", "called", "error", "usage")})
        u.contrasts.append({"candidate": label, **c})
        return c

    def compose(self, ref: dict, pair: list[dict], label: str, u: Unit) -> tuple[bool, list[dict]]:
        """(adopted, final draws): the composition rolled out final_repeats times, or ref reused on keep."""
        comp = propose.compose(self.run.client, self.task, ref["label"], ref["harness"], pair,
                               self.run.improver(self.task.id, label))
        self.run.ledger.append("compose", task=self.task.id, label=label, reference=ref["label"], pair=u.i,
                               decision=comp["decision"], edits=comp["edits"], observation=comp["observation"],
                               evidence=comp["evidence"],
                               called=comp["called"], error=comp["error"], usage=comp["usage"],
                               harness=hz.digest(comp["harness"]))
        if comp["decision"] == "keep":
            return False, [self.run.reuse(self.task, ref, f"{label}keep")]
        repeats = self.run.cfg["experiment"]["final_repeats"]
        draws = [self.run.rollout(self.task, comp["harness"], label if r == 1 else f"{label}r{r}", self.attempt)
                 for r in range(1, repeats + 1)]
        if repeats == 1 or self.confirm(ref, draws, label, u):
            return True, draws
        return False, [self.run.reuse(self.task, ref, f"{label}keep")]

    def confirm(self, ref: dict, draws: list[dict], label: str, u: Unit) -> bool:
        """Every draw contrasted as a FINAL pseudo-candidate: confirmed if none regresses and one mitigates."""
        edit = "FINAL (the composed harness)\n" + hz.diff(ref["harness"], draws[0]["harness"])
        verdicts = {d["label"]: self.contrast(ref, d, edit, u)["verdict"] for d in draws}
        ok = "regresses" not in verdicts.values() and "mitigates" in verdicts.values()
        self.run.ledger.append("final_confirmed" if ok else "rollback", task=self.task.id, label=label,
                               reference=ref["label"], draws=verdicts)
        return ok

    def choose(self, finals: list[dict]) -> dict:
        unique = list({f["dir"]: f for f in reversed(finals)}.values())[::-1]  # a reused rollout counts once
        delivered = [f for f in unique if f["delivered"]]
        if len(delivered) < 2:
            return (delivered or unique)[0]
        picked = select.blind(self.run.client, self.task, self.run.cfg["experiment"]["seed"], delivered,
                              self.run.improver(self.task.id, "select"))
        self.run.ledger.append("selection", task=self.task.id, chosen=picked["chosen"], ids=picked["ids"],
                               fallback=picked["fallback"], error=picked["error"], usage=picked["usage"])
        return next(f for f in delivered if f["label"] == picked["chosen"])

    def lessons(self) -> list[dict]:
        return experience.library(self.run.state / "library.jsonl")

    def lesson(self, chosen: dict) -> None:
        found = experience.extract(self.run.client, self.task, self.base_h, chosen["harness"], self.contrasts,
                                   self.run.improver(self.task.id, "lesson"))
        self.run.ledger.append("lesson", task=self.task.id, label=chosen["label"], lesson=found["lesson"],
                               evidence=found["evidence"], error=found["error"], usage=found["usage"])
        if found["lesson"]:
            experience.append(self.run.state / "library.jsonl", self.task.id, chosen["label"], found)


def _at_once(run: Run, work, units: list[Unit]) -> list:
    """work(unit) for every unit, each in a thread of its own when there are several; its result or its exception.
    A stage waits for all its units: a call in flight finishes and is ledgered even when the budget ran out, or when
    the user interrupted (then no thread starts another call, and the workspace stays locked until they end)."""
    def one(u: Unit):
        try:
            return work(u)
        except Exception as exc:  # noqa: BLE001 - handed back; stage raises the first in pair order
            return exc
    if len(units) == 1:
        return [one(units[0])]
    pool = ThreadPoolExecutor(len(units), thread_name_prefix="nanorsi")
    try:
        return list(pool.map(one, units))
    except KeyboardInterrupt:
        run.stopped = "interrupted"
        print("nanorsi: interrupted; waiting for the calls in flight to finish", file=sys.stderr, flush=True)
        raise
    finally:
        pool.shutdown(wait=True)


def start(workspace: Path, cfg: dict, ledger: Ledger) -> list[tk.Task]:
    """Check that evolve may run (not frozen, the pinned configuration unchanged) and ledger its start."""
    if ledger.frozen() is not None:
        raise NanoError("the run is frozen: evolve is refused after freeze")
    manifest = Path(workspace) / cfg["tasks"]["manifest"]
    chosen = tk.select(tk.load(manifest), cfg["tasks"]["select"], manifest)
    base = hz.load(Path(workspace) / cfg["harness"]["root"])
    pinned = {"config": cf.digest(cfg), "manifest": tk.digest(manifest), "harness": hz.digest(base)}
    started = ledger.of("run_started")
    if not started:
        ledger.append("run_started", **pinned, mode=cfg["experiment"]["mode"], k=cfg["experiment"]["k"],
                      seed=cfg["experiment"]["seed"], final_repeats=cfg["experiment"]["final_repeats"],
                      parallel=cfg["experiment"]["parallel"],
                      model=cfg["model"]["name"], runner=cfg["runner"]["kind"], tasks=[t.id for t in chosen])
    else:
        moved = [k for k, v in pinned.items() if started[0][k] != v]
        if moved:
            raise NanoError(f"the {', '.join(moved)} changed since the ledger started; a run is evolved under one "
                            "configuration (only [budget] and [model] base_url, api_key_file, timeout, retries may "
                            "change)")
    ledger.append("evolve_started", budget=cfg["budget"])
    return chosen


def evolve(workspace: Path, cfg: dict, ledger: Ledger, client: Client, on_done=None) -> str | None:
    """Run every selected task without a task_done event; the reason it stopped early, or None.
    on_done(task, chosen label) is told as each task finishes."""
    todo = start(workspace, cfg, ledger)
    run, base = Run(workspace, cfg, ledger, client), hz.load(Path(workspace) / cfg["harness"]["root"])
    for task in todo:
        if task.id in ledger.done_tasks():
            continue
        attempt = len(ledger.of("task_started", task=task.id)) + 1
        try:
            chosen = TaskRun(run, task, base, attempt).go()
        except BudgetExhausted as exc:
            return str(exc)
        if on_done:
            on_done(task.id, chosen)
    return None
