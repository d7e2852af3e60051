"""The viewer's pictures, as inline SVG made here: a grid of cells (a job's units and attempts, two jobs' units) and a timeline.

The CSP forbids inline styles, so every colour is a class of viewer.css and
every size an attribute. Each mark carries a `<title>`: the browser shows it
on hover. Text is escaped; links are quoted paths of the app's own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
from markupsafe import Markup, escape

CELL, GAP = 14, 3
LABEL = 64  # the grid's left column, for each row's unit numbers


@attrs.frozen
class Cell:
    css: str  # its class in viewer.css (`o-passed`, `cmp-a`, ...)
    title: str
    href: str | None = None
    opacity: float | None = None  # a scored cell's reward, as its fill's strength


def grid(columns: Sequence[Sequence[Cell | None]], label: str = "units", width: int = 1080) -> Markup:
    """Columns of cells (a unit each, its attempts top to bottom), as many a row as fit in `width`, each row labelled by
    its first and last column's number. A None cell is drawn empty (an attempt a unit does not have). Few units get
    big cells, many small ones."""
    if not columns:
        return Markup("")
    size = 28 if len(columns) <= 25 else 20 if len(columns) <= 60 else CELL
    depth = max(len(c) for c in columns) or 1
    across = min((width - LABEL) // (size + GAP), len(columns))
    block = depth * (size + GAP) + 10
    rows = math.ceil(len(columns) / across)
    full, height = LABEL + across * (size + GAP), rows * block
    out = [f'<svg class="grid" xmlns="http://www.w3.org/2000/svg" width="{full}" height="{height}" '
           f'viewBox="0 0 {full} {height}" role="img" aria-label="{escape(label)}">']
    for row in range(rows):
        first, last = row * across + 1, min((row + 1) * across, len(columns))
        y0 = row * block
        out.append(f'<text class="axis" x="{LABEL - 8}" y="{y0 + size / 2 + 4}" text-anchor="end">{first}–{last}</text>')
        for i, column in enumerate(columns[first - 1:last]):
            x = LABEL + i * (size + GAP)
            for k, cell in enumerate(column):
                if cell is not None:
                    out.append(_cell(cell, x, y0 + k * (size + GAP), size))
    out.append("</svg>")
    return Markup("".join(out))


def _cell(cell: Cell, x: int, y: int, size: int) -> str:
    strength = f' fill-opacity="{0.2 + 0.8 * max(0.0, min(1.0, cell.opacity)):.2f}"' if cell.opacity is not None else ""
    rect = (f'<rect class="cell {escape(cell.css)}" x="{x}" y="{y}" width="{size}" height="{size}" rx="2"{strength}>'
            f"<title>{escape(cell.title)}</title></rect>")
    return f'<a href="{escape(cell.href)}">{rect}</a>' if cell.href else rect


@attrs.frozen
class Span:
    """A mark on a timeline: seconds from the trial's start; `end` None for one never ended (drawn to the end, open)."""

    lane: str
    start: float
    end: float | None
    css: str
    title: str
    first_byte: float | None = None  # a model call's first byte: the part before it is drawn as waiting
    text: str = ""  # written inside the bar where it fits


WIDTH, LANES_AT, LANE, SUB = 1120, 170, 22, 8  # the picture, where lanes begin, a lane's height, its most sub-lanes


def timeline(spans: Sequence[Span], lanes: Sequence[str], t0: float, t1: float, label: str) -> Markup:
    """Spans on lanes (in `lanes`' order, each split into sub-lanes where its spans overlap), between t0 and t1 seconds."""
    t1 = max(t1, t0 + 1e-3)
    plot = WIDTH - LANES_AT - 20

    def px(t: float) -> float:
        return LANES_AT + (min(max(t, t0), t1) - t0) / (t1 - t0) * plot

    placed = {lane: _pack([s for s in spans if s.lane == lane and _within(s, t0, t1)], px) for lane in lanes}
    shown = [lane for lane in lanes if placed[lane]]
    height = 34 + sum(max(1, len(placed[lane])) * LANE + 8 for lane in shown) + 6
    out = [f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="100%" viewBox="0 0 {WIDTH} {height}" '
           f'preserveAspectRatio="xMinYMin meet" role="img" aria-label="{escape(label)}">']
    out += _axis(t0, t1, px, height)
    y = 34
    for lane in shown:
        rows = placed[lane]
        out.append(f'<text class="lane" x="{LANES_AT - 10}" y="{y + LANE / 2 + 4}" text-anchor="end">{escape(lane)}</text>')
        out.append(f'<line class="lane-rule" x1="{LANES_AT}" x2="{WIDTH - 20}" y1="{y + len(rows) * LANE + 4}" '
                   f'y2="{y + len(rows) * LANE + 4}"/>')
        for r, row in enumerate(rows):
            out += [_bar(s, px, y + r * LANE, t1) for s in row]
        y += len(rows) * LANE + 8
    out.append("</svg>")
    return Markup("".join(out))


def _within(span: Span, t0: float, t1: float) -> bool:
    end = t1 if span.end is None else span.end
    return end >= t0 and span.start <= t1


def _pack(spans: list[Span], px) -> list[list[Span]]:  # noqa: ANN001 - px: seconds to pixels
    """Spans into sub-lanes, each taking the first whose last bar ends (in pixels) before it begins; at most SUB."""
    rows: list[list[Span]] = []
    ends: list[float] = []
    for span in sorted(spans, key=lambda s: s.start):
        begin = px(span.start)
        free = next((i for i, end in enumerate(ends) if end <= begin + 0.5), None)  # bars that touch share a row
        if free is None and len(rows) < SUB:
            rows.append([])
            ends.append(-math.inf)
            free = len(rows) - 1
        free = len(rows) - 1 if free is None else free
        rows[free].append(span)
        ends[free] = max(ends[free], begin + max(3.0, px(span.end if span.end is not None else math.inf) - begin) - 0.01)
    return rows


def _bar(span: Span, px, y: float, t1: float) -> str:  # noqa: ANN001
    x = px(span.start)
    end = px(t1 if span.end is None else span.end)
    width = max(3.0, end - x)
    css = escape(span.css) + (" open" if span.end is None else "")
    parts = [f'<g class="mark"><title>{escape(span.title)}</title>',
             f'<rect class="bar {css}" x="{x:.1f}" y="{y + 3}" width="{width:.1f}" height="{LANE - 6}" rx="2"/>']
    if span.first_byte is not None and span.end is not None:
        wait = min(px(span.first_byte), x + width) - x
        if wait >= 1.5:
            parts.append(f'<rect class="bar wait" x="{x:.1f}" y="{y + 3}" width="{wait:.1f}" height="{LANE - 6}" rx="2"/>')
    if span.text and width > 7 * len(span.text) + 8:
        parts.append(f'<text class="in-bar" x="{x + 5:.1f}" y="{y + LANE / 2 + 4}">{escape(span.text)}</text>')
    parts.append("</g>")
    return "".join(parts)


def _axis(t0: float, t1: float, px, height: float) -> list[str]:  # noqa: ANN001
    step = nice_step((t1 - t0) / 8)
    out = [f'<line class="axis-rule" x1="{LANES_AT}" x2="{WIDTH - 20}" y1="24" y2="24"/>']
    tick = math.ceil(t0 / step - 1e-9) * step
    while tick <= t1 + 1e-9:
        x = px(tick)
        out.append(f'<line class="tick" x1="{x:.1f}" x2="{x:.1f}" y1="20" y2="{height - 4}"/>')
        out.append(f'<text class="axis" x="{x:.1f}" y="14" text-anchor="middle">{escape(seconds_text(tick, step))}</text>')
        tick += step
    return out


def nice_step(raw: float) -> float:
    """1, 2 or 5 times a power of ten, the first at least `raw`."""
    if raw <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw * (1 - 1e-9))


def seconds_text(t: float, step: float) -> str:
    """A tick's label: `250 ms` under a second, else `1.5 s`."""
    if step < 1 and abs(t) < 1 - 1e-9:
        return f"{round(t * 1000, 3):g} ms"
    return f"{round(t, 3):g} s"
