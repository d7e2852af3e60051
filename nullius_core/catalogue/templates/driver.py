"""Driver of the benchmark {key}: answers Nullius's ops, one JSON line in, one out.

Fill in the parts marked FILL IN. Call the upstream's own loader and scorer
(import it from $NULLIUS_UPSTREAM); never copy or patch it. Print nothing but
replies on stdout: logs go to stderr.
"""

import json
import os
import sys


def load_units():
    # FILL IN: load the dataset with the upstream's own loader.
    path = os.environ.get("NULLIUS_DATASET", "")
    with open(path, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return {{f"u{{i:04d}}": row for i, row in enumerate(rows)}}


UNITS = None


def units():
    global UNITS
    if UNITS is None:
        UNITS = load_units()
    return UNITS


def op_units(request):
    return {{"units": list(units())}}


def op_setup(request):
    row = units()[request["unit"]]
    # FILL IN: the prompt, as the upstream words it.
    return {{"prompt": row["question"]}}


def op_score(request):
    row = units()[request["unit"]]
    # FILL IN: the upstream's own scorer.
    passed = request.get("answer", "").strip() == str(row["answer"]).strip()
    return {{"reward": 1.0 if passed else 0.0, "passed": passed, "detail": {{}}}}


def op_oracle(request):
    row = units()[request["unit"]]
    return {{"answer": str(row["answer"])}}


OPS = {{"units": op_units, "setup": op_setup, "score": op_score, "oracle": op_oracle}}


def main():
    for line in sys.stdin:
        request = json.loads(line)
        op = OPS.get(request.get("op"))
        if op is None:
            reply = {{"error": f"unknown op {{request.get('op')!r}}"}}
        else:
            try:
                reply = op(request)
            except Exception as exc:  # the error goes back to Nullius as this op's error
                reply = {{"error": f"{{type(exc).__name__}}: {{exc}}"}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
