"""Views derived from the ledger alone: per-task decisions, contrasts, scores; means, win/tie/loss, budget, usage."""

from .ledger import Ledger

IMPROVER_EVENTS = ("proposal", "contrast", "compose", "selection", "lesson")


def _last_attempt(events: list[dict], task: str) -> list[dict]:
    starts = [e["seq"] for e in events if e["event"] == "task_started" and e["task"] == task]
    since = starts[-1] if starts else 0
    return [e for e in events if e.get("task") == task and e["seq"] >= since]


def _score(events: list[dict], task: str, label: str | None) -> dict | None:
    found = [e for e in events if e["event"] == "judged" and e["task"] == task and e["label"] == label]
    return found[-1] if found else None


def _task_view(events: list[dict], task: str, choice: str | None) -> dict:
    # agg's pairs run at once and their events interleave: read them in pair order (stable within a pair).
    mine = sorted(_last_attempt(events, task), key=lambda e: e.get("pair", 0))
    rollbacks = {e["label"] for e in mine if e["event"] == "rollback"}
    done = [e for e in mine if e["event"] == "task_done"]
    chosen = choice or (done[-1]["chosen"] if done else None)
    base, final = _score(events, task, "base1"), _score(events, task, chosen)
    view = {
        "task": task, "done": bool(done), "chosen": chosen,
        "attempts": sum(1 for e in events if e["event"] == "task_started" and e["task"] == task),
        "proposals": [{k: e[k] for k in ("label", "kind", "component", "valid", "error")}
                      for e in mine if e["event"] == "proposal"],
        "contrasts": [{k: e[k] for k in ("candidate", "reference", "verdict", "observation", "called", "error")}
                      for e in mine if e["event"] == "contrast"],
        "decisions": [{"label": e["label"], "decision": "rollback" if e["label"] in rollbacks else e["decision"],
                       "edits": e["edits"], "observation": e["observation"]}
                      for e in mine if e["event"] == "compose"],
        "selection": next(({"chosen": e["chosen"], "fallback": e["fallback"]}
                           for e in mine if e["event"] == "selection"), None),
        "base_score": base and base["score"], "final_score": final and final["score"],
        "graded": bool(base and final and base["graded"] and final["graded"]),
    }
    if view["graded"]:
        d = view["final_score"] - view["base_score"]
        view["outcome"] = "win" if d > 1e-9 else "loss" if d < -1e-9 else "tie"
    return view


def build(ledger: Ledger) -> dict:
    events = ledger.events()
    started = next((e for e in events if e["event"] == "run_started"), None)
    choices = ledger.frozen() or {}
    names = list(started["tasks"]) if started else []
    names += [e["task"] for e in events if e["event"] == "task_started" and e["task"] not in names]
    views = [_task_view(events, t, choices.get(t)) for t in names]
    graded = [v for v in views if v["graded"]]
    limits = [e["budget"] for e in events if e["event"] == "evolve_started"]
    usage = {"rollouts": ledger.usage("rollout"), "improver": ledger.usage(*IMPROVER_EVENTS)}
    return {
        "run": {k: started[k] for k in ("mode", "k", "final_repeats", "seed", "model", "runner")} if started else None,
        "frozen": bool(choices), "tasks": views,
        "means": {"n": len(graded),
                  "base": sum(v["base_score"] for v in graded) / len(graded) if graded else None,
                  "final": sum(v["final_score"] for v in graded) / len(graded) if graded else None},
        "win_tie_loss": [sum(v.get("outcome") == o for v in graded) for o in ("win", "tie", "loss")],
        "ungraded": sum(1 for v in views if choices and not v["graded"]),
        "budget": {"rollouts": ledger.charged("rollout"), "improver_calls": ledger.charged("improver"),
                   "limits": limits[-1] if limits else None, "exhausted": len(ledger.of("budget_exhausted"))},
        "usage": usage,
    }


def _fmt(x) -> str:
    return "ungraded" if x is None else f"{x:.3f}"


def render(rep: dict, verified: tuple[int, str]) -> str:
    run = rep["run"]
    lines = [f"nanoRSI report: ledger verified ({verified[0]} events, head {verified[1][:12]})"]
    if run is None:
        return lines[0] + "\nno run has started."
    lines.append(f"mode {run['mode']}, k {run['k']}, final_repeats {run['final_repeats']}, model {run['model']}, "
                 f"runner {run['runner']}, {'frozen' if rep['frozen'] else 'not frozen'}")
    for v in rep["tasks"]:
        lines.append(f"\ntask {v['task']}: chosen {v['chosen'] or '-'}"
                     f"{'' if v['done'] else ' (not done)'}, attempts {v['attempts']}")
        lines += [f"  proposal {p['label']} {p['kind']} {p['component'] or '-'}"
                  f"{'' if p['valid'] else ' INVALID: ' + str(p['error'])}" for p in v["proposals"]]
        lines += [f"  contrast {c['candidate']} vs {c['reference']}: {c['verdict']}"
                  f"{'' if c['called'] else ' (no call)'}{' error: ' + c['error'] if c['error'] else ''}"
                  f" - {c['observation'][:100]}" for c in v["contrasts"]]
        lines += [f"  decision {d['label']}: {d['decision']} {','.join(d['edits'])}".rstrip() for d in v["decisions"]]
        if v["selection"]:
            sel = v["selection"]
            lines.append(f"  selection: {sel['chosen']}{' (fallback)' if sel['fallback'] else ''}")
        lines.append(f"  score: base1 {_fmt(v['base_score'])} -> {v['chosen']} {_fmt(v['final_score'])}"
                     f"{' (' + v['outcome'] + ')' if v.get('outcome') else ''}")
    m, (w, t, lo) = rep["means"], rep["win_tie_loss"]
    lines.append(f"\nmeans over {m['n']} graded task(s): base {_fmt(m['base'])}, final {_fmt(m['final'])}; "
                 f"win/tie/loss {w}/{t}/{lo}; ungraded {rep['ungraded']}")
    b, lim = rep["budget"], rep["budget"]["limits"] or {}
    lines.append(f"budget: rollouts {b['rollouts']}/{lim.get('max_rollouts', '?')}, improver calls "
                 f"{b['improver_calls']}/{lim.get('max_proposer_calls', '?')}, exhausted {b['exhausted']} time(s)")
    for key, u in rep["usage"].items():
        lines.append(f"usage ({key}): {u['calls']} calls, {u['input_tokens']} input and "
                     f"{u['output_tokens']} output tokens")
    return "\n".join(lines)
