#!/bin/bash
# Reference solution: strict validation, instants in UTC, a running gap test per user.
set -euo pipefail
mkdir -p /output
python3 - <<'PY'
import json
import re
from collections import defaultdict
from datetime import datetime, timezone

STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:Z|[+-]\d{2}:\d{2})")
events = defaultdict(list)
invalid = 0
with open("/data/events.jsonl") as f:
    for line in f:
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            ok = (isinstance(obj, dict) and isinstance(obj.get("user_id"), str) and obj["user_id"]
                  and isinstance(obj.get("event"), str) and isinstance(obj.get("ts"), str) and STAMP.fullmatch(obj["ts"]))
            if not ok:
                raise ValueError
            when = datetime.fromisoformat(obj["ts"].replace("Z", "+00:00")).astimezone(timezone.utc)
        except ValueError:
            invalid += 1
            continue
        events[obj["user_id"]].append(when)

def utc(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")

with open("/output/sessions.csv", "w") as out:
    out.write("user_id,session,start,end,events,duration_s\n")
    for user in sorted(events):
        times = sorted(events[user])
        number, start, prev, count = 0, None, None, 0
        for t in times + [None]:
            if t is None or (prev is not None and (t - prev).total_seconds() > 1800):
                number += 1
                out.write(f"{user},{number},{utc(start)},{utc(prev)},{count},{int((prev - start).total_seconds())}\n")
                start, count = t, 0
            if t is None:
                break
            if start is None:
                start = t
            prev, count = t, count + 1
with open("/output/invalid.txt", "w") as f:
    f.write(f"{invalid}\n")
PY
