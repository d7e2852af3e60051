"""Each evaluation the judge's run made, appended to its trial as `assessment_eval_<i>.json` (never overwritten).

An evaluation of the internal run is its trial `<trial>-judge-<k>`; what the
driver graded is its `verifier/score.json`, and an ungraded one is its
exception, with the reason. The judge's calls (its relay's record) are copied
to `<trial>/assessment/eval_<i>/calls.jsonl` and priced apart from the agent's.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

EVAL_FILE = re.compile(r"^assessment_eval_(\d+)\.json$")
def unit_of(trial: str, evaluation: int) -> str:
    """The judge's unit (and so its trial and relay route) for one evaluation of `trial`: `<trial>-judge-<k>`."""
    return f"{trial}-judge-{evaluation}"


def next_index(trial: Path) -> int:
    taken = [int(m.group(1)) for p in trial.iterdir() if (m := EVAL_FILE.match(p.name))]
    return max(taken, default=0) + 1


def read_evals(trial: Path) -> list[dict[str, Any]]:
    found = []
    for path in trial.iterdir():
        match = EVAL_FILE.match(path.name)
        if match:
            record = json.loads(path.read_text())
            record.setdefault("index", int(match.group(1)))
            found.append(record)
    return sorted(found, key=lambda r: r["index"])


def judge_of(run_job: Path) -> dict[str, Any]:
    standard = json.loads((run_job / "config.json").read_text()).get("standard") or {}
    agent = standard.get("agent") or {}
    return {"agent": agent.get("key"), "version": agent.get("version"), "model": standard.get("model"),
            "provider": agent.get("provider"), "protocol": agent.get("protocol")}


def _usage(result: dict[str, Any]) -> dict[str, Any]:
    usage = result.get("agent_result") or {}
    cost = (usage.get("metadata") or {}).get("cost") or {}
    return {"n_input_tokens": usage.get("n_input_tokens"), "n_cache_tokens": usage.get("n_cache_tokens"),
            "n_output_tokens": usage.get("n_output_tokens"), "cost_usd": cost.get("as_served_usd", usage.get("cost_usd")),
            "first_run_usd": cost.get("first_run_usd"), "priced_as": cost.get("priced_as")}


def _verdict(run_trial: Path, result: dict[str, Any]) -> dict[str, Any]:
    score = run_trial / "verifier" / "score.json"
    if score.is_file() and not result.get("exception_info"):
        detail = json.loads(score.read_text()).get("detail") or {}
        return {"graded": True, "ungraded_reason": None, **detail}
    info = result.get("exception_info") or {}
    why = info.get("exception_message") or "the judge's run recorded no score"
    kind = info.get("exception_type") or "NoScore"
    reason = why.split("ungraded: ", 1)[1] if "ungraded: " in why else f"{kind}: {why}"  # the driver's own why, else the failure's
    return {"graded": False, "ungraded_reason": reason,
            "dimensions": [], "total": None, "max_total": None, "normalized_score": None, "overall": None}


def record_eval(trial: Path, run_job: Path, run_trial: Path, fingerprint: str, judge: dict[str, Any],
                include_trajectory: bool) -> Path:
    """Append one evaluation to `trial`: the next free index, written exclusively (an existing file is never touched)."""
    result = json.loads((run_trial / "result.json").read_text())
    while True:
        index = next_index(trial)
        target = trial / f"assessment_eval_{index}.json"
        own = trial / "assessment" / f"eval_{index}"
        record = {
            "index": index, "trial": trial.name, "judge": judge, "rubric_fingerprint": fingerprint,
            "include_trajectory": include_trajectory,
            "started_at": result.get("started_at"), "finished_at": result.get("finished_at"),
            **_verdict(run_trial, result),
            "usage": _usage(result),
            "calls": f"assessment/eval_{index}/calls.jsonl",
            "run": {"job": str(run_job.relative_to(trial.parent)), "trial": run_trial.name},
        }
        try:
            with target.open("x", encoding="utf-8") as handle:
                json.dump(record, handle, indent=2)
                handle.write("\n")
        except FileExistsError:  # another assess took this index meanwhile: take the next
            continue
        break
    own.mkdir(parents=True, exist_ok=True)
    for name in ("calls.jsonl", "trajectory.json"):
        if (run_trial / "agent" / name).is_file():
            shutil.copyfile(run_trial / "agent" / name, own / name)
    return target
