"""The trial's reward from what the check collected, by Harbor's Verifier's rules (harbor/verifier/verifier.py).

reward.json wins over reward.txt; an empty file, a value that is not a
finite number, or neither file is the error Harbor names
(RewardFileEmptyError, VerifierOutputParseError, RewardFileNotFoundError);
a check past its [verifier] timeout_sec is VerifierTimeoutError. The check's
exit status counts for nothing, as in Harbor.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any


class RewardError(Exception):
    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(message)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def read_rewards(verifier_dir: Path, collected: list[str]) -> tuple[dict[str, float], str]:
    """The rewards and the file they came from."""
    if "reward.json" in collected:
        path = verifier_dir / "reward.json"
        text = path.read_text(errors="replace")
        if not text:
            raise RewardError("RewardFileEmptyError", f"Reward file is empty at {path}")
        try:
            rewards = json.loads(text)
        except ValueError:
            raise RewardError("VerifierOutputParseError", f"Failed to parse rewards from JSON file {path}") from None
        if not isinstance(rewards, dict) or not rewards:
            raise RewardError("VerifierOutputParseError", f"Rewards in JSON file {path} are not an object of numbers: {text[:200]!r}")
        for value in rewards.values():
            if not _finite(value):
                raise RewardError("VerifierOutputParseError", f"Non-numeric or non-finite reward {value!r} in JSON file {path}")
        return {str(k): float(v) for k, v in rewards.items()}, "reward.json"
    if "reward.txt" in collected:
        path = verifier_dir / "reward.txt"
        text = path.read_text(errors="replace")
        if not text:
            raise RewardError("RewardFileEmptyError", f"Reward file is empty at {path}")
        try:
            value = float(text)
        except ValueError:
            raise RewardError("VerifierOutputParseError", f"Failed to parse rewards from text file {path}: {text[:200]!r}") from None
        if not math.isfinite(value):
            raise RewardError("VerifierOutputParseError", f"Non-finite reward {value!r} in text file {path}")
        return {"reward": value}, "reward.txt"
    raise RewardError("RewardFileNotFoundError", f"No reward file found at {verifier_dir / 'reward.txt'} or {verifier_dir / 'reward.json'}")


def step_reply(verified: dict[str, Any], min_reward: float | dict[str, float] | None) -> dict[str, Any]:
    """One step's check (the `step` op): its rewards, or its failure's name, and whether the task goes on (Harbor's min_reward gate).

    A step whose check failed stops the task, as Harbor's MultiStepTrial
    stops after a step with an exception and no verifier result; a missing
    gated key reads as -inf.
    """
    scored = score_reply(verified)
    if "error" in scored:
        return {"rewards": None, "exception_type": scored["exception_type"], "message": scored["error"], "continue": False}
    rewards = scored["rewards"]
    thresholds = {"reward": min_reward} if isinstance(min_reward, (int, float)) else (min_reward or {})
    below = [f"{k}={rewards.get(k, float('-inf'))} below min_reward {t}" for k, t in thresholds.items() if rewards.get(k, float("-inf")) < t]
    return {"rewards": rewards, "detail": scored["detail"], "continue": not below, **({"stopped": below[0]} if below else {})}


def steps_score(steps: list[dict[str, Any]], strategy: str) -> dict[str, Any]:
    """The trial's reward from its steps, by Harbor's multi-step reward strategy.

    `final`: the last step's rewards as they are; `mean` (the default): each
    key's mean over the steps that have rewards, a key a step lacks counting
    0. No step with rewards: the last step's failure, by its name.
    """
    replies = [s.get("reply") or {} for s in steps]
    scored = [r["rewards"] for r in replies if r.get("rewards")]
    detail = {"steps": [{"name": s["name"], **{k: v for k, v in (s.get("reply") or {}).items() if k != "detail"}} for s in steps],
              "strategy": strategy}
    if strategy == "final":
        last = replies[-1] if replies else {}
        if not last.get("rewards"):
            return {"error": f"the last step run ({steps[-1]['name'] if steps else 'none'}) has no reward: {last.get('message', '')}",
                    "exception_type": last.get("exception_type") or "RewardFileNotFoundError"}
        rewards = last["rewards"]
    else:
        if not scored:
            last = replies[-1] if replies else {}
            return {"error": f"no step has a reward: {last.get('message', '')}", "exception_type": last.get("exception_type") or "RewardFileNotFoundError"}
        keys = sorted({k for r in scored for k in r})
        rewards = {k: sum(r.get(k, 0.0) for r in scored) / len(scored) for k in keys}
    reward = rewards["reward"] if "reward" in rewards else sum(rewards.values()) / len(rewards)
    return {"reward": reward, "rewards": rewards, "detail": detail}


def score_reply(verified: dict[str, Any] | None) -> dict[str, Any]:
    """The score op's reply: the reward (the `reward` key, else the mean of the keys), all of Harbor's rewards, and the check's facts."""
    if not verified:
        return {"error": "the task's check did not run (no verified in the request)", "exception_type": "VerifierError"}
    detail = {k: verified.get(k) for k in ("exit", "timed_out", "collected")}
    detail["output"] = (verified.get("output") or "")[-2000:]
    if verified.get("timed_out"):
        return {"error": "the task's tests/test.sh did not end within [verifier] timeout_sec", "exception_type": "VerifierTimeoutError"}
    try:
        rewards, source = read_rewards(Path(verified["dir"]), list(verified.get("collected") or []))
    except RewardError as exc:
        return {"error": str(exc), "exception_type": exc.kind}
    reward = rewards["reward"] if "reward" in rewards else sum(rewards.values()) / len(rewards)
    return {"reward": reward, "rewards": rewards, "detail": {**detail, "rewards_from": source}}
