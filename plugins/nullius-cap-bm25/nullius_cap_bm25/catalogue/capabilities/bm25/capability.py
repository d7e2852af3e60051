"""A cap.memory/v1 capability: BM25 retrieval over whole sessions, with rank_bm25.BM25Okapi.

JSON lines over stdio: one request line in, one reply line out, flushed.
stdout carries only replies; logs go to stderr. The process's memory starts
empty and lives as long as the process (one process per unit).

    {"op": "add", "session": {"id", "date", "turns": [{"role", "text"}], "text"}}
        -> {"ok": true, "trace": {"stored": ID, "replaced": BOOL, "tokens": N, "sessions": N}}
    {"op": "recall", "question": STRING}
        -> {"memory": STRING, "trace": {"hits": [{"id", "date", "score"}, ...], "sessions": N, "top_k": K}}
    anything else, or a request that is not as above
        -> {"error": STRING}; the process goes on

A session's words are its `text` (its turns' text when `text` is empty),
lowercased, split into runs of letters and digits. `recall` scores every
session added so far with BM25Okapi (k1 1.5, b 0.75, epsilon 0.25, the
library's defaults) against the question's words, drops the sessions that
share no word with the question, and returns the best `top_k` (ties keep the
order they were added in), best first: each as a line "session ID (DATE):"
then its text, the sessions apart by a blank line. No hit is memory "".
Adding a session whose id was already added replaces it.

`top_k` comes from NULLIUS_OPTION_TOP_K (default 2): a positive integer, else
every request is answered with an error saying so.
"""

from __future__ import annotations

import json
import os
import re
import sys

from rank_bm25 import BM25Okapi

WORD = re.compile(r"[^\W_]+")
DEFAULT_TOP_K = "2"


def log(*parts: object) -> None:
    print("[bm25]", *parts, file=sys.stderr, flush=True)


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def read_top_k() -> int | str:
    """The option's value, or the error every request gets."""
    raw = os.environ.get("NULLIUS_OPTION_TOP_K", "").strip() or DEFAULT_TOP_K
    if raw.isdigit() and int(raw) >= 1:
        return int(raw)
    return f"NULLIUS_OPTION_TOP_K must be a positive integer, found {raw!r}"


class Memory:
    def __init__(self, top_k: int) -> None:
        self.top_k = top_k
        self.sessions: dict[str, dict] = {}  # id -> {"id", "date", "text", "words"}, in the order added

    def add(self, session: object) -> dict:
        if not isinstance(session, dict):
            raise ValueError("expected session, an object {id, date, turns: [{role, text}], text}")
        sid, date, turns, text = (session.get(k) for k in ("id", "date", "turns", "text"))
        if not isinstance(sid, str) or not sid:
            raise ValueError("expected session.id, a non-empty string")
        if not isinstance(date, str):
            raise ValueError("expected session.date, a string")
        if not isinstance(turns, list) or not all(
            isinstance(t, dict) and isinstance(t.get("role"), str) and isinstance(t.get("text"), str) for t in turns
        ):
            raise ValueError("expected session.turns, a list of {role, text} with string values")
        if not isinstance(text, str):
            raise ValueError("expected session.text, a string")
        if not text.strip():
            text = "\n".join(f"{t['role']}: {t['text']}" for t in turns)
        replaced = self.sessions.pop(sid, None) is not None
        tokens = words(text)
        self.sessions[sid] = {"id": sid, "date": date, "text": text, "words": tokens}
        log(f"add {sid}: {len(tokens)} words{' (replaced)' if replaced else ''}")
        return {"ok": True, "trace": {"stored": sid, "replaced": replaced, "tokens": len(tokens), "sessions": len(self.sessions)}}

    def recall(self, question: object) -> dict:
        if not isinstance(question, str) or not question.strip():
            raise ValueError("expected question, a non-empty string")
        query = words(question)
        stored = list(self.sessions.values())
        hits: list[tuple[float, int, dict]] = []
        if query and stored and any(s["words"] for s in stored):
            scores = BM25Okapi([s["words"] for s in stored]).get_scores(query)
            asked = set(query)
            for i, (session, score) in enumerate(zip(stored, scores)):
                if asked & set(session["words"]):
                    hits.append((float(score), i, session))
            hits.sort(key=lambda hit: (-hit[0], hit[1]))
            hits = hits[: self.top_k]
        memory = "\n\n".join(f"session {s['id']} ({s['date']}):\n{s['text']}" for _, _, s in hits)
        log(f"recall: {len(hits)} of {len(stored)} sessions")
        return {
            "memory": memory,
            "trace": {
                "hits": [{"id": s["id"], "date": s["date"], "score": round(score, 6)} for score, _, s in hits],
                "sessions": len(stored),
                "top_k": self.top_k,
            },
        }


def handle(memory: Memory | str, request: object) -> dict:
    if not isinstance(request, dict):
        raise ValueError("expected a JSON object")
    if isinstance(memory, str):
        raise ValueError(memory)
    op = request.get("op")
    if op == "add":
        return memory.add(request.get("session"))
    if op == "recall":
        return memory.recall(request.get("question"))
    raise ValueError(f"unknown op {op!r}: expected add or recall")


def main() -> None:
    top_k = read_top_k()
    memory: Memory | str = Memory(top_k) if isinstance(top_k, int) else top_k
    log(f"started: top_k {top_k}" if isinstance(top_k, int) else top_k)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = handle(memory, json.loads(line))
        except Exception as exc:  # the request's error goes back; the memory is kept
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
