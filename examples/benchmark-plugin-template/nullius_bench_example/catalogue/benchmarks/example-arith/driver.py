"""Driver of example-arith: one JSON request per line on stdin, one JSON reply per line on stdout."""

import json
import os
import sys


def load():
    with open(os.environ["NULLIUS_DATASET"], encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return {f"u{i:04d}": row for i, row in enumerate(rows)}


UNITS = load()


def handle(request):
    op = request.get("op")
    if op == "units":
        return {"units": list(UNITS)}
    row = UNITS[request["unit"]]
    if op == "setup":
        return {"prompt": row["question"]}
    if op == "oracle":
        return {"answer": row["answer"]}
    if op == "score":
        passed = (request.get("answer") or "").strip() == row["answer"]
        return {"reward": 1.0 if passed else 0.0, "passed": passed, "detail": {"expected": row["answer"]}}
    return {"error": f"unknown op {op!r}"}


for line in sys.stdin:
    try:
        reply = handle(json.loads(line))
    except Exception as exc:  # the op's error goes back to Nullius, which records it
        reply = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
