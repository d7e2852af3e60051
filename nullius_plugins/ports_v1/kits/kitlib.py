"""What every kit's driver shares: the JSON-lines loop and the check of a unit's request.

Kit drivers run on the machine's python3 (or a kit's own environment), never
in Nullius's process, so this is a plain module beside them, imported by path.
"""

import hashlib
import json
import os
import sys

# Made-up words: three consonant-vowel syllables and a closing consonant.
ONSETS = "b d f g k l m n p r s t v z".split()
VOWELS = "a e i o u".split()
CODAS = "k l m n r s t".split()


def made_up_word(seed, label):
    """A word drawn from the seed and a label: 2.4 million of them, none a real word's guess."""
    digest = hashlib.sha256(f"{seed}/{label}".encode()).digest()
    n = int.from_bytes(digest[:8], "big")
    parts = []
    for _ in range(3):
        n, onset = divmod(n, len(ONSETS))
        n, vowel = divmod(n, len(VOWELS))
        parts.append(ONSETS[onset] + VOWELS[vowel])
    n, coda = divmod(n, len(CODAS))
    return "".join(parts) + CODAS[coda]


def check_dataset(request, dataset="checks"):
    asked = request.get("dataset", dataset)
    if asked != dataset:
        raise ValueError(f"unknown dataset {asked!r}: this kit has only {dataset!r}")


def check_request(request, checks, dataset="checks"):
    """(unit, workspace) of a request for one of `checks`, or a ValueError saying what is wrong."""
    check_dataset(request, dataset)
    unit = request.get("unit")
    if unit not in checks:
        raise ValueError(f"unknown unit {unit!r}: expected one of {', '.join(checks)}")
    directory = request.get("dir")
    if not isinstance(directory, str) or not directory:
        raise ValueError("expected dir, the unit's workspace, as a string")
    return unit, os.path.normpath(directory)


def dispatch(request, ops, checks, dataset="checks"):
    """The reply to one request: `units` lists `checks`; any other op goes to its function in `ops`."""
    if not isinstance(request, dict):
        raise ValueError("expected a JSON object")
    op = request.get("op")
    if op == "units":
        check_dataset(request, dataset)
        return {"units": list(checks)}
    if op not in ops:
        return {"error": f"unknown op {op!r}"}
    return ops[op](request)


def serve(ops, checks, dataset="checks"):
    """One JSON request per line in, one reply per line out; an op's error goes back as its reply."""
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = dispatch(json.loads(line), ops, checks, dataset)
        except Exception as exc:  # the op's error goes back to Nullius, which records it
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
