"""The inventory API sidecar: paginated items behind a bearer token, and a place to post reports."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

TOKEN = "tok-7f3a9c51"
PAGE_SIZE = 7
ITEMS = json.load(open("/srv/api/items.json"))
LOG = open("/srv/api/requests.log", "a", buffering=1)
lock = threading.Lock()
reports = []


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def send_json(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def authorised(self):
        if self.headers.get("Authorization") == f"Bearer {TOKEN}":
            return True
        self.send_json(401, {"error": "missing or wrong bearer token"})
        return False

    def do_GET(self):
        url = urlsplit(self.path)
        if url.path == "/health":
            return self.send_json(200, {"status": "ok"})
        if not self.authorised():
            return
        if url.path == "/items":
            try:
                page = int(parse_qs(url.query).get("page", ["1"])[0])
            except ValueError:
                return self.send_json(400, {"error": "page must be a number"})
            start = (page - 1) * PAGE_SIZE
            chunk = ITEMS[start:start + PAGE_SIZE] if page >= 1 else []
            more = page >= 1 and start + PAGE_SIZE < len(ITEMS)
            return self.send_json(200, {"page": page, "items": chunk, "next": f"/items?page={page + 1}" if more else None})
        if url.path == "/reports/latest":
            with lock:
                latest = reports[-1] if reports else None
            return self.send_json(200, latest) if latest is not None else self.send_json(404, {"error": "no report yet"})
        self.send_json(404, {"error": "not found"})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.authorised():
            return
        if urlsplit(self.path).path != "/reports":
            return self.send_json(404, {"error": "not found"})
        try:
            report = json.loads(body)
        except ValueError:
            return self.send_json(400, {"error": "body is not JSON"})
        if not isinstance(report, dict):
            return self.send_json(400, {"error": "a report is a JSON object"})
        with lock:
            reports.append(report)
            number = len(reports)
        self.send_json(201, {"id": number})

    def log_message(self, fmt, *args):
        LOG.write("%s %s\n" % (self.log_date_time_string(), fmt % args))


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("0.0.0.0", 9000), Handler).serve_forever()
