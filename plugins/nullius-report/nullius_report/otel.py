"""Each trial's trace as OpenTelemetry spans, following the GenAI semantic conventions (gen_ai.*).

One trace per trial: a root `invoke_agent` span over the trial, a `chat` span
per model call as the relay timed it (calls.jsonl: started, ms_total, the
usage it metered), an `execute_tool` span per tool call and a span per turn
of the agent (trajectory.json, timed by trace.json where it has the call).
Only named fields are read from the records: no header, no body, so no key.
Written as OTLP JSON to a file, or sent to an OTLP/HTTP endpoint.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nullius_report.records import ReportError, read_json

from nullius_core.fsutil import read_json_lines


def _ns(stamp: str | None) -> int | None:
    if not stamp:
        return None
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1e9)


def _attrs(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _calls(tracer: trace.Tracer, parent: Any, folder: Path, provider: str | None) -> None:
    path = folder / "agent" / "calls.jsonl"
    for call in read_json_lines(path) if path.is_file() else []:
        start = _ns(call.get("started"))
        if start is None:
            continue
        usage = call.get("usage") or {}
        span = tracer.start_span(f"chat {call.get('model_sent') or call.get('model_asked')}", context=parent,
                                 kind=trace.SpanKind.CLIENT, start_time=start, attributes=_attrs({
                                     "gen_ai.operation.name": "chat", "gen_ai.provider.name": provider,
                                     "gen_ai.request.model": call.get("model_asked"),
                                     "gen_ai.response.model": call.get("model_served") or call.get("model_sent"),
                                     "gen_ai.usage.input_tokens": usage.get("input"),
                                     "gen_ai.usage.output_tokens": usage.get("output"),
                                     "gen_ai.usage.cached_input_tokens": usage.get("cached_input"),
                                     "gen_ai.response.finish_reasons": [call["end"]] if call.get("end") else None,
                                     "http.response.status_code": call.get("status"),
                                     "nullius.call.id": call.get("id"), "nullius.call.kind": call.get("kind"),
                                     "nullius.cost.first_run_usd": (call.get("cost") or {}).get("first_run_usd")}))
        span.end(end_time=start + int(float(call.get("ms_total") or 0) * 1e6))


def _steps(tracer: trace.Tracer, parent: Any, folder: Path, end: int) -> None:
    path = folder / "agent" / "trajectory.json"
    if not path.is_file():
        return
    steps = read_json(path).get("steps") or []
    timed = {}
    trace_file = folder / "agent" / "trace.json"
    if trace_file.is_file():
        timed = {t.get("id"): t for t in read_json(trace_file).get("tool_calls") or []}
    for i, step in enumerate(steps):
        start = _ns(step.get("timestamp"))
        if start is None:
            continue
        after = next((_ns(s.get("timestamp")) for s in steps[i + 1:] if s.get("timestamp")), None) or end
        metrics = step.get("metrics") or {}
        turn = tracer.start_span(f"{step.get('source')} turn {step.get('step_id')}", context=parent, start_time=start,
                                 attributes=_attrs({"nullius.step.source": step.get("source"),
                                                    "nullius.step.id": step.get("step_id"),
                                                    "gen_ai.usage.input_tokens": metrics.get("prompt_tokens"),
                                                    "gen_ai.usage.output_tokens": metrics.get("completion_tokens")}))
        for call in step.get("tool_calls") or []:
            seen = timed.get(call.get("tool_call_id")) or {}
            t0 = _ns(seen.get("started")) or start
            tool = tracer.start_span(f"execute_tool {call.get('function_name')}", context=trace.set_span_in_context(turn),
                                     start_time=t0, attributes=_attrs({
                                         "gen_ai.operation.name": "execute_tool",
                                         "gen_ai.tool.name": call.get("function_name"),
                                         "gen_ai.tool.call.id": call.get("tool_call_id"),
                                         "nullius.tool.status": seen.get("status")}))
            tool.end(end_time=max(_ns(seen.get("ended")) or t0, t0))
        turn.end(end_time=max(after, start))


def trial_spans(folder: Path) -> list[ReadableSpan]:
    result = read_json(folder / "result.json")
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "nullius", "nullius.job": folder.parent.name}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("nullius_report")
    info = result.get("agent_info") or {}
    model = info.get("model_info") or {}
    start = _ns(result.get("started_at")) or 0
    end = _ns(result.get("finished_at")) or start
    reward = ((result.get("verifier_result") or {}).get("rewards") or {}).get("reward")
    root = tracer.start_span(f"invoke_agent {info.get('name')}", start_time=start, attributes=_attrs({
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": info.get("name"),
        "gen_ai.request.model": model.get("name"), "gen_ai.provider.name": model.get("provider"),
        "nullius.trial": result.get("trial_name"), "nullius.unit": (result.get("standard") or {}).get("unit"),
        "nullius.outcome": (result.get("standard") or {}).get("outcome"), "nullius.reward": reward}))
    context = trace.set_span_in_context(root)
    _calls(tracer, context, folder, model.get("provider"))
    _steps(tracer, context, folder, end)
    root.end(end_time=end)
    provider.shutdown()
    return list(memory.get_finished_spans())


def _hex_ids(value: Any) -> Any:
    """OTLP JSON writes trace and span ids as hex, where protobuf's JSON mapping gives base64."""
    if isinstance(value, dict):
        return {k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") and v else _hex_ids(v))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


def export_traces(folders: list[Path], target: str) -> int:
    spans = [s for folder in folders for s in trial_spans(folder)]
    if target.startswith(("http://", "https://")):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        endpoint = target if target.rstrip("/").endswith("/v1/traces") else target.rstrip("/") + "/v1/traces"
        exporter = OTLPSpanExporter(endpoint=endpoint)  # its time limit: OTEL_EXPORTER_OTLP_TIMEOUT (default 10 s)
        if exporter.export(spans) != SpanExportResult.SUCCESS:
            raise ReportError(f"--otel {endpoint}: the endpoint did not accept the spans (retried until "
                              "OTEL_EXPORTER_OTLP_TIMEOUT; the exporter's warning above says why); the export itself is written")
        exporter.shutdown()
    else:
        body = _hex_ids(MessageToDict(encode_spans(spans), use_integers_for_enums=True))  # OTLP JSON: enums as integers
        Path(target).write_text(json.dumps(body, indent=1) + "\n")
    return len(spans)
