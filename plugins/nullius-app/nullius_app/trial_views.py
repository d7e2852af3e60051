"""One trial, as the viewer shows it: its trajectory's steps, its timeline, its relay calls and their bodies, its score.

Read from the trial's own records (docs/agents.md, "The records in agent/"):
`agent/trajectory.json` (ATIF), `agent/trace.json`, the relay's
`calls.jsonl` of each route (`agent/`, `judge/`, `simulator/`, or the route's
own `.work/relay*/` while the trial runs) and its `bodies.jsonl`, already
cleaned of credentials by the relay; `verifier/`; `exception.txt`.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs

from nullius_app.job_files import Part, Unreadable, dig, read_lines, read_object, read_part, record, size_text
from nullius_app.job_views import moment, number, obj
from nullius_app.viewer_svg import Span

MESSAGE_CHARS = 20_000  # of one step's message, the page shows this much
BODY_CHARS = 48_000  # of a request or a reply, the trial's page shows this much (the call's own page more)
CALLS_SHOWN = 500

# Each route of a trial's relay: its name on the page, its calls (the copy kept when it ended, else the live record),
# its bodies, and its lane on the timeline.
ROUTES: dict[str, dict[str, str]] = {
    "agent": {"title": "Relay calls", "calls": "agent/calls.jsonl", "live": ".work/relay/calls.jsonl",
              "bodies": ".work/relay/bodies.jsonl", "lane": "model calls"},
    "judge": {"title": "The judge's calls", "calls": "judge/calls.jsonl", "live": ".work/relay-judge/calls.jsonl",
              "bodies": ".work/relay-judge/bodies.jsonl", "lane": "judge calls"},
    "simulator": {"title": "The simulated user's calls", "calls": "simulator/calls.jsonl",
                  "live": ".work/relay-simulator/calls.jsonl", "bodies": ".work/relay-simulator/bodies.jsonl",
                  "lane": "simulated user"},
}
PHASES = (("environment_setup", "setup"), ("agent_setup", "agent start"), ("agent_execution", "agent"), ("verifier", "verifier"))


def cut(text: str, limit: int) -> tuple[str, int]:
    """The text's first `limit` characters, and how many were left out."""
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def as_text(value: Any) -> str:
    """A record's value as the page shows it: a string as it is, anything else as indented JSON."""
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)


def offset(at: Any, origin: datetime | None) -> float | None:
    found = moment(at)
    return (found - origin).total_seconds() if found and origin else None


@attrs.frozen(kw_only=True)
class ToolCall:
    id: str
    name: str
    arguments: str
    results: list[str]


@attrs.frozen(kw_only=True)
class Step:
    number: int
    label: str
    css: str
    at: float | None
    message: str
    left_out: int
    reasoning: str
    calls: list[ToolCall]
    metrics: dict[str, Any]


def _tool_calls(step: dict[str, Any]) -> list[ToolCall]:
    """A step's tool calls, each with its results from the step's observation (results naming no call go with its last)."""
    results = {str(dig(r, "source_call_id", default="")): as_text(dig(r, "content", default=""))
               for r in dig(step, "observation", "results", default=[]) or [] if isinstance(r, dict)}
    calls = []
    for call in step.get("tool_calls") or []:
        if not isinstance(call, dict):
            continue
        named = str(call.get("tool_call_id") or "")
        arguments = call.get("arguments") if call.get("arguments") is not None else {}
        calls.append(ToolCall(id=named, name=str(call.get("function_name") or "tool"), arguments=as_text(arguments),
                              results=[results.pop(named)] if named in results else []))
    if calls and results:
        calls[-1] = attrs.evolve(calls[-1], results=calls[-1].results + list(results.values()))
    return calls


def steps_of(trajectory: dict[str, Any], origin: datetime | None, simulated: bool) -> list[Step]:
    """The ATIF steps as the page shows them: who spoke, when (seconds from the trial's start), what, and the tool calls."""
    out: list[Step] = []
    users = 0
    for i, step in enumerate(s for s in trajectory.get("steps") or [] if isinstance(s, dict)):
        source = str(step.get("source") or "")
        calls = _tool_calls(step)
        if source == "user":
            users += 1
            label = "user" if users == 1 else "simulated user" if simulated else f"user (turn {users})"
        elif source == "system":
            label = "notice" if dig(step, "extra", "notice") else "system"
        else:
            label = "tool call" if calls and not step.get("message") else source or "step"
        message, left_out = cut(as_text(step.get("message") or ""), MESSAGE_CHARS)
        out.append(Step(number=step.get("step_id") if isinstance(step.get("step_id"), int) else i + 1, label=label,
                        css="tool" if label == "tool call" else source or "other", at=offset(step.get("timestamp"), origin),
                        message=message, left_out=left_out, reasoning=as_text(step.get("reasoning_content") or ""),
                        calls=calls, metrics=obj(step.get("metrics"))))
    return out


@attrs.frozen(kw_only=True)
class Call:
    number: int
    id: str
    at: float | None
    api: str
    model: str
    status: Any
    ms_first_byte: float | None
    ms_total: float | None
    usage: dict[str, Any]
    served_by: str
    end: str
    cost: str
    cost_said: str
    notes: list[str]  # what went wrong: the error, a refusal, a cut, a cause
    css: str
    request: str | None = None
    response: str | None = None
    request_left: int = 0
    response_left: int = 0
    bodies: bool = False  # whether its bodies were read for this page


@attrs.frozen(kw_only=True)
class RouteCalls:
    route: str
    title: str
    calls: list[Call]
    total: int
    note: str  # how much of the record is shown
    problem: str | None = None
    calls_name: str = ""  # the records read, by their names in the trial's folder
    bodies_name: str = ""


def _cost(line: dict[str, Any]) -> tuple[str, str]:
    """The call's cost as served, short, and what the record says of it in full (a price's date, why there is none)."""
    cost = obj(line.get("cost"))
    served, first = number(cost.get("as_served_usd")), number(cost.get("first_run_usd"))
    if served is None:
        return "unpriced", str(cost.get("why") or "no price recorded")
    return f"${served:.6f}", (f"as served ${served:.6f}, as if the first run ${first:.6f}" if first is not None else "")
    

def _notes(line: dict[str, Any]) -> list[str]:
    out = []
    error = obj(line.get("error"))
    if error:
        out.append("error: " + ", ".join(f"{k} {error[k]}" for k in ("code", "type", "message") if k in error))
    for key in ("refused", "cut", "cause", "unread", "caller_gone"):
        if line.get(key):
            out.append(f"{key}: {line[key]}")
    if line.get("broken"):
        out.append("the stream broke")
    if line.get("empty"):
        out.append("the reply said nothing")
    if line.get("context_window"):
        out.append("refused for the model's context window")
    if line.get("held") is False:
        out.append("served by a provider outside its pin")
    return out


def _call(n: int, line: dict[str, Any], origin: datetime | None, body: dict[str, Any] | None) -> Call:
    status = line.get("status")
    asked, sent = line.get("model_asked"), line.get("model_sent")
    request, request_left = cut(as_text(body.get("request")), BODY_CHARS) if body is not None else (None, 0)
    response, response_left = cut(as_text(body.get("response")), BODY_CHARS) if body is not None else (None, 0)
    return Call(number=n, id=str(line.get("id") or ""), at=offset(line.get("started"), origin), api=str(line.get("api") or ""),
                model=str(sent or "") if asked in (None, sent) else f"{asked} → {sent}", status=status,
                ms_first_byte=number(line.get("ms_first_byte")), ms_total=number(line.get("ms_total")),
                usage=obj(line.get("usage")), served_by=str(line.get("served_by") or ""), end=str(line.get("end") or ""),
                cost=_cost(line)[0], cost_said=_cost(line)[1], notes=_notes(line),
                css="failed" if not isinstance(status, int) or status >= 400 or line.get("error") else "side" if line.get("side") else "",
                request=request, response=response, request_left=request_left, response_left=response_left,
                bodies=body is not None)


def route_calls(jobs_dir: Path, trial: Path, route: str, origin: datetime | None) -> RouteCalls | None:
    """A route's calls with, where its bodies.jsonl's first part holds them, each call's request and reply."""
    where = ROUTES[route]
    path = record(jobs_dir, trial, where["calls"]) or record(jobs_dir, trial, where["live"])
    bodies_path = record(jobs_dir, trial, where["bodies"])
    if path is None and bodies_path is None:
        return None
    try:
        lines, _, lines_cut = read_lines(path, where["calls"])
        bodies, size, bodies_cut = read_lines(bodies_path, where["bodies"])
    except Unreadable as exc:
        return RouteCalls(route=route, title=where["title"], calls=[], total=0, note="", problem=str(exc))
    names = {"calls_name": where["calls"] if record(jobs_dir, trial, where["calls"]) else where["live"] if path else "",
             "bodies_name": where["bodies"] if bodies_path else ""}
    by_id = {str(b.get("id")): b for b in bodies}
    calls = [_call(i + 1, line, origin, by_id.get(str(line.get("id")))) for i, line in enumerate(lines[:CALLS_SHOWN])]
    note = [f"{len(lines)} call(s)" + (f", the first {CALLS_SHOWN} shown" if len(lines) > CALLS_SHOWN else "")
            + (" (the record goes on past what was read)" if lines_cut else "")]
    if bodies_path is not None:
        note.append(f"bodies.jsonl {size_text(size)}" + (": requests and replies shown for the calls in its first part; "
                                                     "each call's own page reads the rest" if bodies_cut else ""))
    return RouteCalls(route=route, title=where["title"], calls=calls, total=len(lines), note="; ".join(note), **names)


def call_body(path: Path | None, call_id: str, limit: int) -> dict[str, Any] | None:
    """One call's line of bodies.jsonl, read through the whole file (only the line naming it is parsed)."""
    if path is None or not call_id.isalnum():
        return None
    needle = f'"id":"{call_id}"'.encode()
    spaced = f'"id": "{call_id}"'.encode()
    try:
        with path.open("rb") as handle:
            for line in handle:
                if needle in line[:64] or spaced in line[:64]:
                    found = json.loads(line)
                    if isinstance(found, dict):
                        return {k: cut(as_text(found.get(k)), limit) for k in ("request", "response")}
    except (OSError, ValueError):
        return None
    return None


def spans_of(trace: dict[str, Any], result: dict[str, Any], others: dict[str, list[dict[str, Any]]],
             origin: datetime | None) -> list[Span]:
    """The trial's phases, its model calls as the relay timed them, its tool calls as Nullius saw them, the judge's and
    the simulated user's calls."""
    out: list[Span] = []
    for key, text in PHASES:
        start, end = offset(dig(result, key, "started_at"), origin), offset(dig(result, key, "finished_at"), origin)
        if start is not None and end is not None:
            out.append(Span(lane="phases", start=start, end=end, css=f"ph-{key}", text=text,
                            title=f"{text}: {end - start:.3f} s (+{start:.3f} s to +{end:.3f} s)"))
    for call in trace.get("model_calls") or []:
        span = _call_span(obj(call), "model calls", origin)
        if span is not None:
            out.append(span)
    for tool in trace.get("tool_calls") or []:
        tool = obj(tool)
        start, end = offset(tool.get("started"), origin), offset(tool.get("ended"), origin)
        if start is None:
            continue
        lasted = f"{end - start:.3f} s" if end is not None else "never ended"
        out.append(Span(lane="tool calls", start=start, end=end, css=f"tool t-{tool.get('status') or 'unknown'}",
                        title=f"tool call {tool.get('id')}: {tool.get('title')} ({tool.get('kind')}), "
                              f"{tool.get('status')}, {lasted}, started +{start:.3f} s"))
    for route, lines in others.items():
        for line in lines:
            span = _call_span(line, ROUTES[route]["lane"], origin, css=route)
            if span is not None:
                out.append(span)
    return out


def _call_span(call: dict[str, Any], lane: str, origin: datetime | None, css: str = "model") -> Span | None:
    start, total, first = offset(call.get("started"), origin), number(call.get("ms_total")), number(call.get("ms_first_byte"))
    if start is None:
        return None
    status = call.get("status")
    failed = not isinstance(status, int) or status >= 400
    title = (f"{'side ' if call.get('side') else ''}{css if css != 'model' else 'model'} call {call.get('id')}: "
             f"{call.get('model_sent')}, status {status}"
             + (f", first byte {first:.1f} ms" if first is not None else "") + (f", total {total:.1f} ms" if total is not None else "")
             + (", streamed" if call.get("stream") else "") + f", started +{start:.3f} s")
    return Span(lane=lane, start=start, end=start + (total or 0) / 1000, title=title,
                css=css + (" failed" if failed else "") + (" side" if call.get("side") else ""),
                first_byte=start + first / 1000 if first is not None else None)


@attrs.frozen(kw_only=True)
class Verifier:
    score: dict[str, Any]
    detail: str
    parts: str
    stdout: Part | None
    problem: str | None


def verifier_of(jobs_dir: Path, trial: Path) -> Verifier | None:
    score_path = record(jobs_dir, trial, "verifier/score.json")
    stdout = read_part(record(jobs_dir, trial, "verifier/test-stdout.txt"))
    if score_path is None and stdout is None:
        return None
    score: dict[str, Any] = {}
    problem = None
    if score_path is not None:
        try:
            score = read_object(score_path, "verifier/score.json")
        except Unreadable as exc:
            problem = str(exc)
    return Verifier(score=score, detail=as_text(score["detail"]) if "detail" in score else "",
                    parts=as_text(score["parts"]) if "parts" in score else "", stdout=stdout, problem=problem)
