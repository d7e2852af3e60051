"""The comparison on a terminal: a rich table of the rows (the front marked), and the paired statistics."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from nullius_report.compare import Comparison, Figure


def fmt(f: Figure, digits: int = 3, unknown: str = "unknown") -> str:
    if f.mean is None:
        return unknown
    text = f"{f.mean:,.{digits}f}"
    return text + (f" ± {f.std:,.{digits}f}" if f.std is not None else "")


def show(comparison: Comparison, console: Console) -> None:
    table = Table(title="Jobs compared (± inter-trial std, n-1, when n ≥ 2)")
    for name in ("job", "agent", "model", "effort", "variant", "trials", "quality", "score (reward)", "tokens",
                 "cost USD (first run)", "priced", "front"):
        table.add_column(name, overflow="fold")
    for r in comparison.rows:
        front = ", ".join(n for n, on in (("cost", r.front_cost), ("tokens", r.front_tokens)) if on) or "-"
        cost = fmt(r.cost, 6, unknown=f"unknown ({r.cost_unknown} unpriced)")
        table.add_row(r.job, r.agent, r.model, r.effort or "-", r.variant or "-", str(r.trials),
                      f"{r.quality_source}: {fmt(r.quality)}", fmt(r.reward), fmt(r.tokens, 0), cost,
                      r.pricing_as_of or "-", front)
    console.print(table)
    for p in comparison.paired:
        console.print(paired_text(p))
    for w in comparison.warnings:
        console.print(f"[yellow]warning[/yellow]: {w}")


def paired_text(p: dict[str, Any]) -> str:
    lines = [f"paired: {p['a']} (A) against {p['b']} (B) on {p['units']} units: "
             f"A better on {p['wins']}, B better on {p['losses']}, tied on {p['ties']}"]
    ci = p["ci95"]
    lines.append(f"  mean difference A-B {p['mean_difference']:+.4f}" +
                 (f", 95% CI [{ci[0]:+.4f}, {ci[1]:+.4f}] (Student's t over units)" if ci else ", no CI under 2 units"))
    if p["mcnemar"]:
        m = p["mcnemar"]
        lines.append(f"  McNemar exact: only A passed {m['only_a']}, only B passed {m['only_b']}, p = {m['p']:.4g}")
    for side in ("a", "b"):
        c = p["clustered"][side]
        if c["se"] is not None:
            lines.append(f"  {side.upper()}: mean {c['mean']:.4f} over {c['observations']} observations, "
                         f"clustered SE by unit {c['se']:.4f}")
    return "\n".join(lines)
