"""Capability keyword-memory: a library behind `add` and `recall`, one JSON line in, one out.

FILL IN: call the library you are bringing in. This skeleton keeps sessions in
memory and recalls the sessions sharing most words with the question.
"""

import json
import sys

SESSIONS = []


def op_add(request):
    SESSIONS.append(request["session"])
    return {"ok": True}


def op_recall(request):
    words = set(request["question"].lower().split())
    ranked = sorted(SESSIONS, key=lambda s: -len(words & set(s.get("text", "").lower().split())))
    return {"memory": "\n\n".join(s.get("text", "") for s in ranked[:3])}


OPS = {"add": op_add, "recall": op_recall}


def main():
    for line in sys.stdin:
        request = json.loads(line)
        op = OPS.get(request.get("op"))
        try:
            reply = op(request) if op else {"error": f"unknown op {request.get('op')!r}"}
        except Exception as exc:
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
