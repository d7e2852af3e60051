"""The Pareto picture: quality against cost and against tokens, each point with its inter-trial std as error bars."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display: files only

import matplotlib.pyplot as plt  # noqa: E402

from nullius_report.compare import Row  # noqa: E402

AXES = (("cost", "cost per trial, USD (as if every run were the first)", "front_cost"),
        ("tokens", "tokens per trial (input + output)", "front_tokens"))


def draw(rows: list[Row], out: Path, stem: str = "pareto") -> list[Path]:
    """Write OUT/STEM.png and OUT/STEM.svg; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    fig, panels = plt.subplots(1, 2, figsize=(13, 5.5))
    sources = sorted({r.quality_source for r in rows})
    quality = "reward (mean)" if sources == ["reward"] else "judge's normalized score" if sources == ["assessment"] \
        else "quality: judge's normalized score where assessed, else reward"
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for panel, (axis, title, flag) in zip(panels, AXES):
        shown = [r for r in rows if getattr(r, axis).mean is not None and r.quality.mean is not None]
        for i, row in enumerate(shown):
            fig_x = getattr(row, axis)
            panel.errorbar(fig_x.mean, row.quality.mean, xerr=fig_x.std or 0, yerr=row.quality.std or 0,
                           fmt="o" if getattr(row, flag) else "s", color=colours[i % len(colours)], capsize=4,
                           markersize=8, label=row.label + (" (front)" if getattr(row, flag) else ""))
            panel.annotate(row.label, (fig_x.mean, row.quality.mean), textcoords="offset points", xytext=(6, 6),
                           fontsize=8)
        front = sorted((getattr(r, axis).mean, r.quality.mean) for r in shown if getattr(r, flag))
        if len(front) > 1:
            panel.plot([p[0] for p in front], [p[1] for p in front], "--", color="grey", linewidth=1, label="Pareto front")
        missing = [r.label for r in rows if r not in shown]
        panel.set_title(f"{quality} against {axis}" + (f"\n(not shown, {axis} unknown: {', '.join(missing)})" if missing else ""),
                        fontsize=10)
        panel.set_xlabel(title)
        panel.set_ylabel(quality)
        panel.grid(True, alpha=0.3)
        if shown:
            panel.legend(fontsize=7, loc="best")
    fig.suptitle("Pareto front: up and to the left is better; circles are on the front, squares dominated; "
                 "bars are ± inter-trial std (n-1)", fontsize=11)
    fig.tight_layout()
    paths = [out / f"{stem}.png", out / f"{stem}.svg"]
    for path in paths:
        fig.savefig(path, dpi=110)
    plt.close(fig)
    return paths
