"""A trial as the results read it: which folders are jobs and trials, and one record per trial with its economics.

Everything is read from what the job already wrote: result.json (the relay's
tokens and priced cost in `agent_result`), config.json, and, when the judge
ran, assessment_summary.json. The variant's and the judge's fields are read
defensively: absent means no variant, not assessed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from nullius_core import handed
from nullius_core.logs import get_logger

log = get_logger("nullius.report")


class ReportError(Exception):
    """Input the report cannot use: the message names the folder or file and what was expected."""


def read_json(path: Path) -> Any:
    """A record of a job that may be someone else's: not through a link out of its folder, not past the records' bound."""
    try:
        return handed.read_json(path.parent, Path(path.name))
    except FileNotFoundError:
        raise ReportError(f"{path}: no such file") from None
    except handed.Refused as exc:
        raise ReportError(str(exc)) from None


def _is_trial(folder: Path) -> bool:
    """Whether the folder holds a trial's result.json: one that leads out of it, or is past the bound, is refused."""
    try:
        data = handed.read_bytes(folder, Path("result.json"))
    except FileNotFoundError:
        return False
    except handed.Refused as exc:
        raise ReportError(str(exc)) from None
    try:
        record = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(record, dict) and "trial_name" in record


def trial_folders(paths: Iterable[Path]) -> list[Path]:
    """Each path's trials, as nasde classifies them: a folder whose children are trials is a job; else a folder
    whose own result.json names a `trial_name` is a trial. Anything else is refused, naming it."""
    found: list[Path] = []
    for path in paths:
        path = Path(path)
        if not path.is_dir():
            raise ReportError(f"{path}: not a folder (expected a job's or a trial's folder)")
        children = sorted(c for c in path.iterdir() if c.is_dir() and not c.name.startswith(".") and _is_trial(c))
        if children:
            found += children
        elif _is_trial(path):
            found.append(path)
        elif (path / "result.json").is_file():
            log.warning("a job with no trials, skipped", folder=str(path))
        else:
            raise ReportError(f"{path}: neither a job (no trial folders with a result.json) nor a trial "
                              "(no result.json with a trial_name)")
    return list(dict.fromkeys(found))


def _variant(standard: dict[str, Any]) -> tuple[str, str, str]:
    """(variant name, digest, reasoning effort) as the variants plugin records them; "" for each one absent."""
    variant = standard.get("variant")
    if isinstance(variant, dict):
        return (str(variant.get("name") or ""), str(variant.get("digest") or ""),
                str(variant.get("reasoning_effort") or standard.get("reasoning_effort") or ""))
    return (str(variant or ""), str(standard.get("variant_digest") or ""), str(standard.get("reasoning_effort") or ""))


@attrs.frozen(kw_only=True)
class Economics:
    """One trial's tokens and cost from the relay's record. A cost is None when a call was unpriced."""

    input_tokens: int | None
    output_tokens: int | None
    cached_tokens: int | None
    total_tokens: int | None
    cost_usd: float | None  # as if every run were the first: the figure comparisons use
    as_served_usd: float | None
    pricing_as_of: str | None  # the price catalogue's date for the entry the model was priced by
    priced_as: dict[str, Any]
    warning: str | None = None


def economics(result: dict[str, Any]) -> Economics | None:
    """From result.json's `agent_result`; None for a control (no agent, no model calls)."""
    usage = result.get("agent_result")
    if not usage:
        return None
    cost = (usage.get("metadata") or {}).get("cost") or {}
    priced = cost.get("priced_as") or {}
    # priced_as: the catalogue entry each model was priced by -> its as-of date ({"fake-model": "2026-11-15"})
    dates = sorted({str(p.get("as_of") if isinstance(p, dict) else p) for p in priced.values() if p})
    inp, out = usage.get("n_input_tokens"), usage.get("n_output_tokens")
    warning = None
    if cost.get("first_run_usd") is None:
        warning = f"{result.get('trial_name')}: cost unknown: {cost.get('unpriced_calls', '?')} call(s) of a model without a price"
    return Economics(input_tokens=inp, output_tokens=out, cached_tokens=usage.get("n_cache_tokens"),
                     total_tokens=None if inp is None or out is None else inp + out,
                     cost_usd=cost.get("first_run_usd"), as_served_usd=cost.get("as_served_usd"),
                     pricing_as_of=dates[-1] if dates else None, priced_as=priced, warning=warning)


@attrs.frozen(kw_only=True)
class Assessed:
    """The judge's dominant cluster for a trial: its normalized score's mean over the graded evaluations."""

    normalized_score: float
    n: int
    judge_model: str
    fingerprint: str


def assessed(folder: Path) -> Assessed | None:
    path = folder / "assessment_summary.json"
    if not path.is_file():
        return None
    try:
        summary = json.loads(path.read_text())
        dominant = summary.get("dominant") or {}
        model = str(dominant.get("judge_model") or "")
        fingerprint = str(dominant.get("rubric_fingerprint") or "")
        # the dominant cluster names itself; its figures are in `clusters` (or beside the name)
        cluster = next((c for c in summary.get("clusters") or [] if (str(c.get("judge_model") or ""),
                        str(c.get("rubric_fingerprint") or "")) == (model, fingerprint)), dominant)
        score = cluster.get("normalized_score")
        value = score.get("mean") if isinstance(score, dict) else score
        if value is None:
            return None
        n = score.get("n") if isinstance(score, dict) else None
        return Assessed(normalized_score=float(value), n=int(n or 0), judge_model=model, fingerprint=fingerprint)
    except (json.JSONDecodeError, TypeError, ValueError, AttributeError) as exc:
        log.warning("an assessment summary that cannot be read, left out", file=str(path), error=str(exc))
        return None


LEFT_OUT = ("rate_limited", "cancelled")  # outside the agent's doing: they weigh nothing, as in the job's own mean


@attrs.frozen(kw_only=True)
class Trial:
    folder: Path
    job: str
    trial: str
    benchmark: str
    dataset: str
    unit: str
    attempt: int
    kind: str
    agent: str
    model: str
    effort: str
    variant: str
    variant_digest: str
    outcome: str
    reward: float | None  # None: left out; an errored trial unscored counts 0, as the job's mean counts it
    passed: bool | None
    parts: list[float]  # each part's reward when the score had parts, else [reward]
    weight: float  # the score's parts.n (1 without parts): the job's own mean weighs a trial by it
    economics: Economics | None
    assessment: Assessed | None

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes two trials of two jobs the same unit."""
        return (self.benchmark, self.dataset, self.unit)

    @property
    def config_key(self) -> tuple[str, str, str, str, str]:
        return (self.job, self.agent, self.model, self.effort, self.variant)


def load_trial(folder: Path) -> Trial:
    result = read_json(folder / "result.json")
    if not isinstance(result, dict):
        raise ReportError(f"{folder / 'result.json'}: expected an object")
    standard = result.get("standard") or {}
    config_std = ((result.get("config") or {}).get("standard")) or {}
    name, digest, effort = _variant({**config_std, **standard})
    info = result.get("agent_info") or {}
    outcome = str(standard.get("outcome") or "")
    raw = ((result.get("verifier_result") or {}).get("rewards") or {}).get("reward")
    if raw is not None and not isinstance(raw, (int, float)):
        raise ReportError(f"{folder / 'result.json'}: $.verifier_result.rewards.reward: expected a number, found {raw!r}")
    reward = None if outcome in LEFT_OUT else float(raw) if raw is not None else 0.0
    return Trial(folder=folder, job=str(standard.get("job") or folder.parent.name), trial=str(result["trial_name"]),
                 benchmark=str(standard.get("benchmark") or config_std.get("benchmark") or ""),
                 dataset=str(standard.get("dataset") or result.get("source") or ""),
                 unit=str(standard.get("unit") or result.get("task_name") or ""),
                 attempt=int(standard.get("attempt") or 1), kind=str(config_std.get("kind") or ""),
                 agent=str(info.get("name") or config_std.get("participant") or ""),
                 model=str((info.get("model_info") or {}).get("name") or config_std.get("model") or ""),
                 effort=effort, variant=name, variant_digest=digest, outcome=outcome, reward=reward,
                 passed=standard.get("passed"), parts=_parts(standard, reward), weight=_weight(standard),
                 economics=economics(result), assessment=assessed(folder))


def _weight(standard: dict[str, Any]) -> float:
    parts = standard.get("parts")
    n = parts.get("n") if isinstance(parts, dict) else None
    return float(n) if isinstance(n, (int, float)) and n > 0 else 1.0


def _parts(standard: dict[str, Any], reward: float | None) -> list[float]:
    parts = (standard.get("parts") or {}).get("parts") if isinstance(standard.get("parts"), dict) else None
    if isinstance(parts, list) and parts:
        values = [p.get("reward") if isinstance(p, dict) else p for p in parts]
        if all(isinstance(v, (int, float)) for v in values):
            return [float(v) for v in values]
    return [] if reward is None else [reward]


def load_trials(paths: Iterable[Path]) -> list[Trial]:
    return [load_trial(folder) for folder in trial_folders(paths)]
