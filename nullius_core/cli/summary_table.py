"""The end-of-run summary and `nullius view`, drawn: a rich table on a terminal, plain aligned lines elsewhere."""

from __future__ import annotations

from typing import TextIO

from nullius_core.jobs.configurations import Configuration, Figure
from nullius_core.jobs.report import Report


def _tokens(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _cost(report: Report) -> str:
    cost = report.cost
    if cost is None:
        return "none: no model was called (a control)" if report.participant in ("nop", "oracle") else "none recorded"
    served, first = cost.get("as_served_usd"), cost.get("first_run_usd")
    if served is None:
        unknown = cost.get("unknown_trials") or []
        return f"unknown: {len(unknown)} trial(s) called a model without a price (see prices in nullius paths)"
    text = f"${served:,.4f} as served, ${first:,.4f} as if the first run" if first is not None else f"${served:,.4f} as served"
    return text + (f"; {cost['stopped']}" if cost.get("stopped") else "")


def _mean(report: Report) -> str:
    if report.mean is None:
        return "none (no trial counts in the mean)"
    text = f"{report.mean:.4f} over {report.in_mean}"
    if report.mean_ci95 is not None:
        text += f"  (95% interval {report.mean_ci95[0]:.3f} to {report.mean_ci95[1]:.3f})"
    return text


def _attempts(combined: dict) -> str:
    """The units' attempts combined (a part solved in any attempt): their mean, and how many passed."""
    k, most = combined.get("k"), combined.get("most")
    each = f"{k}" if k == most else f"{k} to {most}"
    text = f"{float(combined.get('mean') or 0):.4f} over {combined.get('units')} units, {each} attempts each"
    if "passed" in combined:
        text += f"; {combined['passed']} passed"
    return text


def rows(report: Report) -> list[tuple[str, str]]:
    """The summary as (label, value) rows, in the order they are read."""
    out = [("job", str(report.job)), ("ran", f"{report.benchmark} with {report.participant}" + (f" on {report.model}" if report.model else ""))]
    if report.variant is not None or report.effort:
        out.append(("variant", (report.variant or "none") + f"; reasoning effort {report.effort or 'not set (the agent default)'}"))
    if report.derived is not None:
        out.append(("replay" if report.derived.startswith("replayed") else "rescore", report.derived))
    out.append(("state", report.state + (f": {report.reason}" if report.reason else "")))
    counted = ", ".join(f"{n} {name}" for name, n in report.outcomes.items() if n or name in ("passed", "failed", "scored"))
    out.append(("units", f"{counted} (of {report.planned} planned)"))
    if report.skipped:
        out.append(("skipped", f"{report.skipped} units outside the variant's scope (variant.toml tasks): not run, not errors"))
    for name, (n, phase) in sorted(report.errors.items()):
        out.append(("  error", f"{n} x {name} ({phase})"))
    out.append(("mean", _mean(report)))
    if report.attempts is not None:
        out.append(("any attempt", _attempts(report.attempts)))
    tokens = report.tokens
    out.append(("tokens", f"{_tokens(tokens['input'])} in, {_tokens(tokens['output'])} out, {_tokens(tokens['cached'])} cached"))
    out.append(("cost", _cost(report)))
    if report.wall_seconds is not None:
        out.append(("wall time", f"{report.wall_seconds:.1f} s"))
    if report.slowest is not None:
        out.append(("slowest", f"{report.slowest.trial} ({report.slowest.seconds:.1f} s)"))
    return out


def draw(report: Report, stream: TextIO, rich: bool | None = None) -> None:
    """The summary on `stream`: rich's table when it is a terminal (or `rich`), plain lines otherwise."""
    table_rows = rows(report)
    if rich if rich is not None else stream.isatty():
        from rich.console import Console
        from rich.table import Table

        table = Table(title="nullius: the run", show_header=False, title_justify="left")
        table.add_column(style="bold")
        table.add_column()
        for label, value in table_rows:
            table.add_row(label, value)
        Console(file=stream).print(table)
        return
    width = max(len(label) for label, _ in table_rows)
    for label, value in table_rows:
        stream.write(f"{label.ljust(width)}  {value}\n")
    stream.flush()


def draw_transcript(trial_name: str, lines: list[tuple[str, str]], stream: TextIO) -> None:
    """One trial's conversation, each line under who said it."""
    stream.write(f"\n--- {trial_name} ---\n")
    for who, text in lines:
        stream.write(f"[{who}]\n{text.rstrip()}\n\n")
    stream.flush()


def _figure(fig: Figure, fmt: str, unknown: str = "-") -> str:
    if fig.mean is None:
        return unknown
    return fmt.format(fig.mean) + (f" ± {fmt.format(fig.std)}" if fig.std is not None else "")


def configuration_rows(configs: list[Configuration]) -> list[list[str]]:
    """The run-end table's rows: a header, then one per configuration."""
    out = [["variant", "agent", "model", "effort", "trials", "score", "tokens", "cost (first run)"]]
    for c in configs:
        cost = _figure(c.cost, "${:,.4f}", unknown=f"unknown ({c.unknown_cost} unpriced)" if c.unknown_cost else "-")
        out.append([c.variant, c.agent, c.model, c.effort or "(not set)", str(c.trials), _figure(c.score, "{:.4f}"),
                    _figure(c.tokens, "{:,.0f}"), cost])
    return out


def draw_configurations(configs: list[Configuration], stream: TextIO, rich: bool | None = None) -> None:
    """One row per (variant, agent, model, effort): trials, and score, tokens and cost, each ± its inter-trial std (n >= 2)."""
    header, *body = configuration_rows(configs)
    if rich if rich is not None else stream.isatty():
        from rich.console import Console
        from rich.table import Table

        table = Table(title="nullius: the configurations (± sample std over trials)", title_justify="left")
        for name in header:
            table.add_column(name)
        for row in body:
            table.add_row(*row)
        Console(file=stream).print(table)
        return
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    stream.write("configurations (± sample std over trials, n >= 2):\n")
    for row in [header, *body]:
        stream.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n")
    stream.flush()
