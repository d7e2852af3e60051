"""`nullius improve judge`: after the freeze, the rollout's job scored by the benchmark's own `score`.

The kernel runs it with NANORSI_JUDGE_REQUEST ({task, label, rollout_dir,
result}, the result naming the rollout's job) and reads
NANORSI_JUDGE_RESULT ({n_passed, n_criteria, detail}). The trial the run
held is scored now (`nullius score`'s own code), from its kept answer and
workspace. A trial that cannot be scored gets no result at all: the kernel
reads that as ungraded, never as zero.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nullius_rsi.nullius_cli import CommandFailed, kernel_request, run_nullius

SCALE = 1000  # a reward between 0 and 1 that is neither: n_passed of SCALE criteria, the reward itself in detail


class Ungraded(Exception):
    """The rollout cannot be scored: no result is written, and this says why."""


def criteria(result: dict[str, Any]) -> tuple[int, int]:
    """(n_passed, n_criteria) from a scored trial's result.json: a pass is 1 of 1, parts count each part, a reward in [0, 1] by SCALE."""
    standard = result.get("standard") or {}
    reward = ((result.get("verifier_result") or {}).get("rewards") or {}).get("reward")
    if not isinstance(reward, (int, float)):
        raise Ungraded("the trial has no reward")
    if isinstance(standard.get("passed"), bool):
        return int(standard["passed"]), 1
    parts = (standard.get("parts") or {}).get("parts") if isinstance(standard.get("parts"), dict) else None
    if parts:
        return sum(1 for p in parts if isinstance(p.get("reward"), (int, float)) and p["reward"] >= 1), len(parts)
    if not 0 <= reward <= 1:
        raise Ungraded(f"the reward {reward} is not between 0 and 1: it is no share of criteria")
    return (int(reward), 1) if reward in (0, 1) else (round(reward * SCALE), SCALE)


def judge(request_path: str | None) -> dict[str, Any]:
    """The judge result of one rollout; Ungraded when there is none."""
    try:
        request = kernel_request(request_path, "NANORSI_JUDGE_REQUEST", "judge")
    except ValueError as exc:
        raise Ungraded(str(exc)) from None
    job = ((request.get("result") or {}).get("job")) if isinstance(request, dict) else None
    if not isinstance(job, str) or not (Path(job) / "config.json").is_file():
        raise Ungraded(f"the rollout {request.get('label') if isinstance(request, dict) else '?'} names no Nullius job ({job!r})")
    try:  # `nullius score`: the held trial scored by the benchmark's own driver (nothing to do once it is)
        run_nullius(["score", job, "--json"], log=Path(job) / "score.log")
    except CommandFailed as exc:
        raise Ungraded(f"the job's benchmark cannot score it: {exc}") from None
    trials = sorted(Path(job).glob("*/result.json"))
    if len(trials) != 1:
        raise Ungraded(f"{job} holds {len(trials)} trials, not one")
    result = json.loads(trials[0].read_text(encoding="utf-8"))
    exception = result.get("exception_info") or {}
    if not result.get("verifier_result"):
        raise Ungraded(f"{trials[0].parent}: not scored: {exception.get('exception_type')}: {exception.get('exception_message')}")
    n_passed, n_criteria = criteria(result)
    detail = {"job": job, "trial": trials[0].parent.name, "reward": result["verifier_result"]["rewards"]["reward"],
              "outcome": (result.get("standard") or {}).get("outcome"), "agent_failure": exception.get("exception_type")}
    assess = _assess_args(request)
    if assess:
        detail["assessment"] = assessment(Path(job), trials[0].parent, assess)
    return {"n_passed": n_passed, "n_criteria": n_criteria, "detail": detail}


def _assess_args(request: dict[str, Any]) -> list[str]:
    """[runner] assess, as the rollout's request.json carries the table: `nullius assess`'s options, or none."""
    try:
        runner = json.loads((Path(str(request.get("rollout_dir"))) / "request.json").read_text(encoding="utf-8")).get("runner") or {}
    except (OSError, ValueError, AttributeError):
        return []
    args = runner.get("assess") if isinstance(runner, dict) else None
    return [str(a) for a in args] if isinstance(args, list) else []


def assessment(job: Path, trial: Path, args: list[str]) -> dict[str, Any]:
    """The rubric assessment of the scored trial (`nullius assess`, where installed): its dominant cluster; an error says why not.

    It is detail beside the score, never the score: the benchmark's own `score` is what n_passed counts.
    """
    try:
        run_nullius(["assess", str(job), *args, "--trial", trial.name], log=job / "assess.log")
        summary = json.loads((trial / "assessment_summary.json").read_text(encoding="utf-8"))
    except (CommandFailed, OSError, ValueError) as exc:
        return {"error": str(exc)}
    top = summary.get("dominant") or {}
    cluster = next((c for c in summary.get("clusters") or [] if top and c.get("judge_model") == top.get("judge_model")
                    and c.get("rubric_fingerprint") == top.get("rubric_fingerprint")), {})
    if not cluster:
        return {"error": f"{trial.name}: no graded assessment ({trial / 'assessment_summary.json'})"}
    score = cluster.get("normalized_score") or {}
    return {"normalized_score": score.get("mean"), "n": score.get("n"), "ungraded": len(cluster.get("ungraded") or []),
            "judge_model": cluster.get("judge_model"), "rubric_fingerprint": cluster.get("rubric_fingerprint")}
