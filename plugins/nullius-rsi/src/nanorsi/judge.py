"""Post-freeze judging of base1 and the chosen final per task through the workspace judge command.

A missing or malformed judge result is graded: false, never a score of zero.
"""

import json
import os
import subprocess
from pathlib import Path

from . import NanoError, tasks as tk
from .ledger import Ledger


def rollout_dir(ledger: Ledger, task: str, label: str) -> str | None:
    """The folder of a task's rollout by label, following a reused label to the rollout it reuses."""
    found = ledger.of("rollout", task=task, label=label) + ledger.of("rollout_reused", task=task, label=label)
    return max(found, key=lambda e: e["seq"])["dir"] if found else None


def judge(workspace: Path, cfg: dict, ledger: Ledger) -> list[dict]:
    """Judge every frozen choice not judged yet; returns the judged events written now."""
    choices = ledger.frozen()
    if choices is None:
        raise NanoError("judge is refused before freeze: run `nanorsi freeze` first (scores never reach evolve)")
    manifest = Path(workspace) / cfg["tasks"]["manifest"]
    by_id = {t.id: t for t in tk.load(manifest)}
    done = {(e["task"], e["label"]) for e in ledger.of("judged")}
    written = []
    for task, chosen in choices.items():
        for label in dict.fromkeys(["base1", chosen]):
            if (task, label) in done:
                continue
            if task not in by_id:
                grade = _ungraded(f"task {task!r} is no longer in {manifest.name}")
            else:
                grade = _grade(Path(workspace), cfg["judge"], by_id[task], label, rollout_dir(ledger, task, label))
            written.append(ledger.append("judged", task=task, label=label, **grade))
    return written


def _grade(workspace: Path, judge_cfg: dict, task: tk.Task, label: str, rdir: str | None) -> dict:
    if rdir is None:
        return _ungraded(f"no rollout {label} in the ledger")
    folder = workspace / ".nanorsi" / "judge" / task.id / label
    folder.mkdir(parents=True, exist_ok=True)
    req, res = folder / "request.json", folder / "result.json"
    res.unlink(missing_ok=True)
    result_file = workspace / rdir / "result.json"
    try:
        result = json.loads(result_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        result = {}  # a failed rollout may have left no result; the judge still gets the folder
    req.write_text(json.dumps({"task": task.as_json(), "label": label, "rollout_dir": str((workspace / rdir).resolve()),
                               "result": result}, indent=2), encoding="utf-8")
    env = {**os.environ, "NANORSI_JUDGE_REQUEST": str(req.resolve()), "NANORSI_JUDGE_RESULT": str(res.resolve())}
    with (folder / "judge.log").open("w", encoding="utf-8") as log:
        try:
            proc = subprocess.run(judge_cfg["command"], cwd=workspace, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=judge_cfg["timeout"])
            status = f"exit status {proc.returncode}"
        except (OSError, subprocess.TimeoutExpired) as exc:
            status = f"could not finish: {exc}"
    return _read(res, status)


def _read(res: Path, status: str) -> dict:
    try:
        raw = json.loads(res.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return _ungraded(f"the judge wrote no result ({status})")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return _ungraded(f"the judge's result is not JSON: {exc} ({status})")
    passed, total = (raw.get("n_passed"), raw.get("n_criteria")) if isinstance(raw, dict) else (None, None)
    if not (_count(passed) and _count(total) and 0 < total and passed <= total):
        return _ungraded(f"expected n_passed and n_criteria with 0 <= n_passed <= n_criteria and n_criteria > 0, "
                         f"found {json.dumps(raw)[:120]} ({status})")
    return {"graded": True, "score": passed / total, "n_passed": passed, "n_criteria": total,
            "detail": raw.get("detail"), "error": None}


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _ungraded(why: str) -> dict:
    return {"graded": False, "score": None, "n_passed": None, "n_criteria": None, "detail": None, "error": why}
