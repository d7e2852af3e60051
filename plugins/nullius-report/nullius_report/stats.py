"""The small statistics a comparison needs, written out: sample std, Student's t, paired differences, McNemar, clustered SEs.

No scipy: each is a few lines, and tests/test_stats.py holds them to worked
values (textbook examples and figures scipy gave once, named in the tests).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

import attrs


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def sample_std(values: Sequence[float]) -> float | None:
    """The inter-trial standard deviation with n-1 in the denominator; None under two values."""
    return statistics.stdev(values) if len(values) >= 2 else None


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (Numerical Recipes, 3rd ed., 6.4), by Lentz's method."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile by bisection on the CDF (monotone; 200 halvings are far below float precision)."""
    lo, hi = -1e4, 1e4
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def mcnemar_exact(b: int, c: int) -> float:
    """McNemar's exact test: two-sided binomial p on the discordant pairs (b: only A passed, c: only B passed)."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def clustered_se(clusters: Sequence[Sequence[float]]) -> float | None:
    """The cluster-robust (CR1) standard error of the mean of every observation, clustered by unit.

    The mean regressed on a constant: sqrt(G/(G-1) * sum_g (sum_i (x_gi - mean))^2) / N, with G
    clusters and N observations. A unit's attempts or parts are not independent draws; its cluster is.
    """
    groups = [list(g) for g in clusters if g]
    n = sum(len(g) for g in groups)
    if len(groups) < 2:
        return None
    m = sum(sum(g) for g in groups) / n
    meat = sum(sum(x - m for x in g) ** 2 for g in groups)
    return math.sqrt(len(groups) / (len(groups) - 1) * meat) / n


@attrs.frozen(kw_only=True)
class Paired:
    """Two jobs on the units both have: A against B."""

    units: int
    wins: int  # units where A's reward beat B's
    losses: int
    ties: int
    mean_difference: float  # mean over units of (A's reward - B's), each unit's reward the mean of its trials
    ci95: tuple[float, float] | None  # Student's t over units (the units are the clusters); None under 2 units
    se: float | None
    mcnemar: dict | None  # {only_a, only_b, p}: when both jobs are pass/fail
    clustered: dict  # {a, b}: each job's mean over every observation, its clustered SE by unit (None: one obs a unit)


def paired(a: Mapping[str, Sequence[float]], b: Mapping[str, Sequence[float]],
           passed_a: Mapping[str, bool] | None = None, passed_b: Mapping[str, bool] | None = None,
           parts_a: Mapping[str, Sequence[float]] | None = None,
           parts_b: Mapping[str, Sequence[float]] | None = None) -> Paired:
    """`a` and `b`: unit -> its trials' rewards; `passed_*`: unit -> passed (pass/fail jobs); `parts_*`: unit -> every
    observation (each attempt's parts) for the clustered SEs."""
    units = sorted(set(a) & set(b))
    diffs = [sum(a[u]) / len(a[u]) - sum(b[u]) / len(b[u]) for u in units]
    wins = sum(1 for d in diffs if d > 1e-12)
    losses = sum(1 for d in diffs if d < -1e-12)
    sd = sample_std(diffs)
    se = None if sd is None else sd / math.sqrt(len(diffs))
    ci = None
    if se is not None:
        half = t_quantile(0.975, len(diffs) - 1) * se
        ci = (sum(diffs) / len(diffs) - half, sum(diffs) / len(diffs) + half)
    test = None
    if passed_a is not None and passed_b is not None:
        only_a = sum(1 for u in units if passed_a[u] and not passed_b[u])
        only_b = sum(1 for u in units if passed_b[u] and not passed_a[u])
        test = {"only_a": only_a, "only_b": only_b, "p": mcnemar_exact(only_a, only_b)}
    return Paired(units=len(units), wins=wins, losses=losses, ties=len(units) - wins - losses,
                  mean_difference=sum(diffs) / len(diffs), ci95=ci, se=se, mcnemar=test,
                  clustered={"a": _clustered(parts_a or a, units), "b": _clustered(parts_b or b, units)})


def _clustered(observations: Mapping[str, Sequence[float]], units: list[str]) -> dict:
    groups = [list(observations[u]) for u in units]
    flat = [x for g in groups for x in g]
    several = any(len(g) > 1 for g in groups)
    return {"observations": len(flat), "mean": mean(flat), "se": clustered_se(groups) if several else None}
