"""What every kit's driver shares: the JSON-lines loop, the check of a unit's request, its setups, the answer's normal form.

Kit drivers run on the machine's python3 (or a kit's own environment), never
in Nullius's process, so this is a plain module beside them, imported by path.
"""

import hashlib
import json
import os
import sys
from collections import OrderedDict

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


# Quotes an agent may wrap a one-word answer in.
QUOTES = [('"', '"'), ("'", "'"), ("`", "`"), ("\u201c", "\u201d"), ("\u2018", "\u2019")]


def normalise(text, pairs=QUOTES):
    """The answer as compared: trimmed, surrounding `pairs` and a trailing period removed."""
    s = text.strip()
    while True:
        before = s
        if s.endswith("."):
            s = s[:-1].rstrip()
        for left, right in pairs:
            if len(s) >= len(left) + len(right) and s.startswith(left) and s.endswith(right):
                s = s[len(left):len(s) - len(right)].strip()
        if s == before:
            return s


class Setups:
    """What setup drew for each (unit, folder), newest last and at most `keep`, so a long run stays bounded."""

    def __init__(self, keep=64):  # one driver serves one unit at a time
        self._keep = keep
        self._units = OrderedDict()

    def put(self, key, state):
        self._units.pop(key, None)
        self._units[key] = state
        while len(self._units) > self._keep:
            self._units.popitem(last=False)

    def get(self, key):
        if key not in self._units:
            raise RuntimeError(f"no setup of {key[0]} in {key[1]} in this driver: setup draws the check's seed")
        return self._units[key]


def check_dataset(request, dataset="checks"):
    asked = request.get("dataset", dataset)
    if asked != dataset:
        raise ValueError(f"unknown dataset {asked!r}: this kit has only {dataset!r}")


def check_request(request, checks, dataset="checks", folder="workspace"):
    """(unit, workspace) of a request for one of `checks`, or a ValueError saying what is wrong."""
    check_dataset(request, dataset)
    unit = request.get("unit")
    if unit not in checks:
        raise ValueError(f"unknown unit {unit!r}: expected one of {', '.join(checks)}")
    directory = request.get("dir")
    if not isinstance(directory, str) or not directory:
        raise ValueError(f"expected dir, the unit's {folder}, as a string")
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
