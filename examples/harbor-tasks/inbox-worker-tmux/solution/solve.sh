#!/bin/bash
# Reference solution: a polling worker in Python (sizes remembered between passes), run in a detached
# tmux session.
set -euo pipefail
cat > /usr/local/bin/inbox-worker <<'PY'
#!/usr/bin/env python3
import csv
import json
import os
import shutil
import time
from decimal import Decimal, InvalidOperation, ROUND_HALF_UP

INBOX, OUTBOX, DONE = "/srv/inbox", "/srv/outbox", "/srv/inbox/done"
seen = {}  # name -> (size, first time that size was seen)


def summarise(path, name):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        if not rows and not open(path).readline():
            raise ValueError("empty file")
        with open(path, newline="") as f:
            header = next(csv.reader(f), [])
        if "sku" not in header or "amount" not in header:
            raise ValueError("missing sku or amount column")
        total = sum((Decimal(r["amount"].strip()) for r in rows), Decimal("0"))
        return {"file": name, "rows": len(rows), "total": str(total.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)),
                "skus": len({r["sku"] for r in rows})}
    except (ValueError, InvalidOperation, csv.Error, UnicodeDecodeError, AttributeError) as e:
        return {"file": name, "error": str(e) or type(e).__name__}


while True:
    now = time.monotonic()
    for name in sorted(os.listdir(INBOX)):
        path = os.path.join(INBOX, name)
        if not name.endswith(".csv") or not os.path.isfile(path):
            continue
        size = os.path.getsize(path)
        if seen.get(name, (None,))[0] != size:
            seen[name] = (size, now)
            continue
        if now - seen[name][1] < 1.0:
            continue
        result = summarise(path, name)
        out = os.path.join(OUTBOX, name[:-4] + ".json")
        with open(out + ".part", "w") as f:
            json.dump(result, f)
        os.replace(out + ".part", out)
        shutil.move(path, os.path.join(DONE, name))
        del seen[name]
    time.sleep(0.25)
PY
chmod 755 /usr/local/bin/inbox-worker
tmux kill-session -t =worker 2>/dev/null || true
tmux new-session -d -s worker /usr/local/bin/inbox-worker
tmux has-session -t =worker
