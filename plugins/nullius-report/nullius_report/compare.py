"""`nullius compare`: jobs on the same units, as rows per (job, agent, model, effort, variant), a Pareto front, paired stats.

Quality is the reward's mean, or the judge's normalized score where every
trial of a row was assessed (the row says which). Cost is the relay's
"as if every run were the first" figure, the one that does not depend on
cache timing. The front is computed on means; the picture shows each
point's inter-trial std as its error bars.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import attrs

from nullius_report import stats
from nullius_report.records import ReportError, Trial, load_trials


@attrs.frozen(kw_only=True)
class Figure:
    mean: float | None
    std: float | None  # sample (n-1), None under two values
    n: int


def figure(values: list[float | None], weights: list[float] | None = None) -> Figure:
    """Mean (weighed, when weights are given, as the job's own mean weighs a trial by its score's parts.n) and the
    plain inter-trial sample std."""
    pairs = [(v, w) for v, w in zip(values, weights or [1.0] * len(values)) if v is not None]
    known = [v for v, _ in pairs]
    total = sum(w for _, w in pairs)
    mean = sum(v * w for v, w in pairs) / total if pairs and total else None
    return Figure(mean=mean, std=stats.sample_std(known), n=len(known))


@attrs.frozen(kw_only=True)
class Row:
    job: str
    agent: str
    model: str
    effort: str
    variant: str
    trials: int
    quality_source: str  # "reward" or "assessment"
    quality: Figure
    reward: Figure
    tokens: Figure
    cost: Figure  # None mean when some trial's cost is unknown
    cost_unknown: int
    pricing_as_of: str | None
    front_cost: bool = False
    front_tokens: bool = False

    @property
    def label(self) -> str:
        bits = [self.job, self.agent, self.model]
        bits += [f"effort={self.effort}"] if self.effort else []
        bits += [f"variant={self.variant}"] if self.variant else []
        return " ".join(b for b in bits if b)


def rows_of(trials: list[Trial]) -> list[Row]:
    groups: dict[tuple, list[Trial]] = defaultdict(list)
    for t in trials:
        groups[t.config_key].append(t)
    rows = []
    for (job, agent, model, effort, variant), members in groups.items():
        scored = [t for t in members if t.reward is not None]
        judged = [t.assessment.normalized_score for t in scored if t.assessment is not None]
        use_judge = bool(scored) and len(judged) == len(scored)
        costs = [t.economics.cost_usd if t.economics else 0.0 for t in scored]
        unknown = sum(1 for c in costs if c is None)
        dates = sorted({t.economics.pricing_as_of for t in members if t.economics and t.economics.pricing_as_of})
        reward = figure([t.reward for t in scored], [t.weight for t in scored])
        rows.append(Row(job=job, agent=agent, model=model, effort=effort, variant=variant, trials=len(members),
                        quality_source="assessment" if use_judge else "reward",
                        quality=figure(judged) if use_judge else reward, reward=reward,
                        tokens=figure([t.economics.total_tokens if t.economics else 0 for t in scored]),
                        cost=Figure(mean=None, std=None, n=len(costs)) if unknown else figure(costs),
                        cost_unknown=unknown, pricing_as_of=dates[-1] if dates else None))
    return mark_fronts(rows)


def pareto(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point dominates: as good or better in quality and as cheap or cheaper, and
    strictly better in one (points are (cost, quality); lower cost and higher quality are better)."""
    front = []
    for i, (c, q) in enumerate(points):
        dominated = any((c2 <= c and q2 >= q) and (c2 < c or q2 > q) for j, (c2, q2) in enumerate(points) if j != i)
        if not dominated:
            front.append(i)
    return front


def mark_fronts(rows: list[Row]) -> list[Row]:
    out = list(rows)
    for axis, flag in (("cost", "front_cost"), ("tokens", "front_tokens")):
        usable = [i for i, r in enumerate(out) if getattr(r, axis).mean is not None and r.quality.mean is not None]
        points = [(getattr(out[i], axis).mean, out[i].quality.mean) for i in usable]
        for k in pareto(points):
            out[usable[k]] = attrs.evolve(out[usable[k]], **{flag: True})
    return out


def check_units(by_job: dict[str, list[Trial]]) -> None:
    """Refuse jobs that share no units, or whose unit sets differ (saying how many differ)."""
    sets = {job: {t.key for t in trials} for job, trials in by_job.items()}
    names = list(sets)
    common = set.intersection(*sets.values())
    if not common:
        raise ReportError("compare refused: the jobs share no units (" + ", ".join(
            f"{n}: {len(sets[n])} units" for n in names) + ")")
    every = set.union(*sets.values())
    if every != common:
        raise ReportError(f"compare refused: the jobs' unit sets differ: {len(every - common)} of {len(every)} units "
                          "are not in every job (" + ", ".join(f"{n}: {len(sets[n] - common)} of its own" for n in names)
                          + "); compare jobs run on the same units")


def _by_unit(trials: list[Trial]) -> tuple[dict, dict, dict]:
    """Unit -> its scored trials' rewards, every observation (each attempt's parts), and whether each attempt passed."""
    rewards: dict[tuple, list[float]] = defaultdict(list)
    parts: dict[tuple, list[float]] = defaultdict(list)
    passed: dict[tuple, list[bool]] = defaultdict(list)
    for t in trials:
        if t.reward is None:
            continue
        rewards[t.key].append(t.reward)
        parts[t.key] += t.parts
        passed[t.key].append(bool(t.passed))
    return rewards, parts, passed


def paired_between(a: list[Trial], b: list[Trial]) -> dict[str, Any]:
    """The paired statistics of A against B, and `by_unit`: each unit both have, A's and B's reward (the mean of its
    trials) and, for pass/fail jobs, whether it passed in each (most of its attempts did)."""
    ra, pa, sa = _by_unit(a)
    rb, pb, sb = _by_unit(b)
    pass_fail = all(t.kind == "pass" for t in a + b)
    # a unit passes when most of its attempts did: with one attempt, simply whether it passed
    va = {u: sum(v) * 2 > len(v) for u, v in sa.items()} if pass_fail else None
    vb = {u: sum(v) * 2 > len(v) for u, v in sb.items()} if pass_fail else None
    units = [{"benchmark": u[0], "dataset": u[1], "unit": u[2], "a": stats.mean(ra[u]), "b": stats.mean(rb[u]),
              "passed_a": va[u] if va is not None else None, "passed_b": vb[u] if vb is not None else None}
             for u in sorted(set(ra) & set(rb))]
    return {**attrs.asdict(stats.paired(ra, rb, va, vb, pa, pb)), "by_unit": units}


@attrs.frozen(kw_only=True)
class Comparison:
    rows: list[Row]
    paired: list[dict[str, Any]]  # one per consecutive pair of jobs: {a, b, ...Paired, by_unit}
    warnings: list[str]


def compare(paths: list[Path]) -> Comparison:
    trials = load_trials(paths)
    by_job: dict[str, list[Trial]] = defaultdict(list)
    for t in trials:
        by_job[str(t.folder.parent)].append(t)
    if len(by_job) < 2:
        raise ReportError(f"compare refused: it needs two jobs or more, found {len(by_job)}")
    check_units(by_job)
    jobs = list(by_job)
    paired = []
    for first, second in zip(jobs, jobs[1:]):
        paired.append({"a": Path(first).name, "b": Path(second).name, **paired_between(by_job[first], by_job[second])})
    warnings = [t.economics.warning for t in trials if t.economics and t.economics.warning]
    return Comparison(rows=rows_of(trials), paired=paired, warnings=warnings)


def as_json(comparison: Comparison, pictures: list[str]) -> dict[str, Any]:
    return {"rows": [attrs.asdict(r) for r in comparison.rows], "paired": comparison.paired,
            "warnings": comparison.warnings, "pictures": pictures}
