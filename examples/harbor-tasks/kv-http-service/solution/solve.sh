#!/bin/bash
# Reference solution: a ThreadingHTTPServer with one lock around the store and an atomic rewrite of the file,
# started detached (setsid, nohup, no inherited output) so that it outlives this script.
set -euo pipefail
cat > /srv/kv/server.py <<'PY'
import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STORE = "/srv/kv/store.json"
KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")
lock = threading.Lock()
with open(STORE) as f:
    data = json.load(f)


def save():
    tmp = STORE + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, ensure_ascii=False, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, STORE)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, body=b"", ctype="text/plain; charset=utf-8"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def key(self):
        if not self.path.startswith("/kv/"):
            self.reply(404)
            return None
        key = self.path[4:]
        if not KEY.fullmatch(key):
            self.reply(400, b"bad key")
            return None
        return key

    def do_GET(self):
        if self.path == "/health":
            return self.reply(200, b"ok")
        if self.path == "/kv":
            with lock:
                keys = sorted(data)
            return self.reply(200, json.dumps(keys).encode(), "application/json")
        key = self.key()
        if key is None:
            return
        with lock:
            value = data.get(key)
        self.reply(404) if value is None else self.reply(200, value.encode())

    def do_PUT(self):
        key = self.key()
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        if key is None:
            return
        with lock:
            existed = key in data
            data[key] = body
            save()
        self.reply(200 if existed else 201)

    def do_DELETE(self):
        key = self.key()
        if key is None:
            return
        with lock:
            if key not in data:
                return self.reply(404)
            del data[key]
            save()
        self.reply(204)

    def log_message(self, fmt, *args):
        pass


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", 8080), Handler).serve_forever()
PY
setsid nohup python3 /srv/kv/server.py > /var/log/kv.log 2>&1 < /dev/null &
for _ in $(seq 100); do
  curl -s --max-time 1 http://127.0.0.1:8080/health | grep -qx ok && exit 0
  sleep 0.1
done
echo "the service did not come up" >&2
cat /var/log/kv.log >&2
exit 1
