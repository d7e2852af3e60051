"""`nullius export --otel`: spans with GenAI attributes, token counts equal to the relay's, to a file and to an endpoint."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from report_world import KEY
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from nullius_core.testing import run_cli


def calls(trial):
    return [json.loads(line) for line in (trial / "agent" / "calls.jsonl").read_text().splitlines()]


def attributes(span):
    out = {}
    for a in span["attributes"]:
        value = a["value"]
        out[a["key"]] = int(value["intValue"]) if "intValue" in value else value.get("stringValue", value)
    return out


def test_spans_in_an_otlp_json_file(jobs, tmp_path):
    file = tmp_path / "trace.json"
    done = run_cli(["export", str(jobs["a"] / "u0000"), "--to", str(tmp_path / "e"), "--otel", str(file)], jobs["env"])
    assert done.code == 0, done.output
    text = file.read_text()
    assert KEY not in text
    [resource] = json.loads(text)["resourceSpans"]
    spans = [s for scope in resource["scopeSpans"] for s in scope["spans"]]
    by_op = {}
    for span in spans:
        by_op.setdefault(attributes(span).get("gen_ai.operation.name"), []).append(span)
    [root] = by_op["invoke_agent"]
    assert by_op["chat"][0]["kind"] == 3  # SPAN_KIND_CLIENT: OTLP JSON writes enums as integers
    assert len(root["traceId"]) == 32 and all(s["traceId"] == root["traceId"] for s in spans)
    recorded = calls(jobs["a"] / "u0000")
    chats = sorted(by_op["chat"], key=lambda s: int(s["startTimeUnixNano"]))
    assert len(chats) == len(recorded) == 2
    for span, call in zip(chats, recorded):
        got = attributes(span)
        assert got["gen_ai.usage.input_tokens"] == call["usage"]["input"]
        assert got["gen_ai.usage.output_tokens"] == call["usage"]["output"]
        assert got["gen_ai.request.model"] == "fake-model" and got["gen_ai.response.model"] == "fake-model"
        assert got["gen_ai.provider.name"] == "openai-compatible" and span["parentSpanId"] == root["spanId"]
        # as the relay timed it: its start, and its ms_total
        assert (int(span["endTimeUnixNano"]) - int(span["startTimeUnixNano"])) / 1e6 == __import__("pytest").approx(call["ms_total"], abs=0.01)
    [tool] = by_op["execute_tool"]
    assert attributes(tool)["gen_ai.tool.name"] == "write_file notes.txt"
    turns = [s for s in spans if " turn " in s["name"]]
    assert [s["name"].split(" turn ")[0] for s in turns] == ["user", "agent", "agent"]


class Receiver(BaseHTTPRequestHandler):
    bodies: list = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.bodies.append((self.path, self.headers.get("Content-Type"), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()
        self.wfile.write(b"")

    def log_message(self, *args):
        pass


def test_spans_sent_to_an_otlp_http_endpoint(jobs, tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        done = run_cli(["export", str(jobs["a"]), "--to", str(tmp_path / "e"), "--otel", url], jobs["env"])
        assert done.code == 0, done.output
    finally:
        server.shutdown()
        server.server_close()
    assert Receiver.bodies, "the endpoint got nothing"
    spans = []
    for path, kind, body in Receiver.bodies:
        assert path == "/v1/traces" and kind == "application/x-protobuf"
        assert KEY.encode() not in body
        request = ExportTraceServiceRequest.FromString(body)
        spans += [s for r in request.resource_spans for scope in r.scope_spans for s in scope.spans]
    chats = [s for s in spans if s.name.startswith("chat ")]
    total = sum(c["usage"]["input"] for t in ("u0000", "u0001", "u0002", "u0003") for c in calls(jobs["a"] / t))
    got = sum(a.value.int_value for s in chats for a in s.attributes if a.key == "gen_ai.usage.input_tokens")
    assert got == total and len({s.trace_id for s in spans}) == 4  # a trace per trial


def test_an_endpoint_that_is_not_there_is_refused(jobs, tmp_path):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    env = {**jobs["env"], "OTEL_EXPORTER_OTLP_TIMEOUT": "2"}  # the exporter retries until then
    done = run_cli(["export", str(jobs["a"] / "u0000"), "--to", str(tmp_path / "e"), "--otel", dead], env)
    assert done.code == 2 and "did not accept the spans" in done.stderr and "Traceback" not in done.output, done.output
    assert (tmp_path / "e" / "a__u0000" / "metrics.json").exists()
