"""Driver of gsm8k: one JSON request per line on stdin, one JSON reply per line on stdout.

Standard library only; it runs on the machine's python3. The upstream
(openai/grade-school-math) is not an installable package and its dataset.py
imports torch at the top, so its answer rule is re-implemented here, exactly
as grade_school_math/dataset.py has it at the pinned commit:

    ANS_RE = re.compile(r"#### (\\-?[0-9\\.\\,]+)")
    INVALID_ANS = "[invalid]"

    def extract_answer(completion):
        match = ANS_RE.search(completion)
        if match:
            match_str = match.group(1).strip()
            match_str = match_str.replace(",", "")
            return match_str
        else:
            return INVALID_ANS

The adapter adds two rules, both in benchmark.json: an answer without
"#### <number>" is read by its last number, and two extracted numbers that
are equal as decimals (18 and 18.0) are the same answer. Logs go to stderr.
"""

import json
import os
import re
import sys
from decimal import Decimal, InvalidOperation

# The upstream's (grade_school_math/dataset.py), unchanged.
ANS_RE = re.compile(r"#### (\-?[0-9\.\,]+)")
INVALID_ANS = "[invalid]"


def extract_answer(completion):
    match = ANS_RE.search(completion)
    if match:
        match_str = match.group(1).strip()
        match_str = match_str.replace(",", "")
        return match_str
    else:
        return INVALID_ANS


# The adapter's.
NUMBER = re.compile(r"-?[0-9][0-9,]*(?:\.[0-9]+)?")
INSTRUCTION = (
    "Solve the problem above. Show your reasoning, then end your reply with a line of "
    'the form "#### <number>" that gives the final answer as a number alone.'
)

_UNITS = None


def units():
    """Unit id -> {question, answer}, in the file's order (read once: the file never changes)."""
    global _UNITS
    if _UNITS is None:
        path = os.environ.get("NULLIUS_DATASET", "")
        if not path:
            raise RuntimeError("NULLIUS_DATASET is empty: the driver needs grade_school_math/data/test.jsonl")
        with open(path, encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
        _UNITS = {f"u{i:04d}": row for i, row in enumerate(rows)}
    return _UNITS


def row_of(request):
    unit = request.get("unit")
    if unit not in units():
        raise KeyError(f"unknown unit {unit!r}")
    return units()[unit]


def last_number(text):
    """The adapter's fallback: the last number in the text, commas removed as the upstream removes them."""
    found = NUMBER.findall(text)
    return found[-1].replace(",", "") if found else INVALID_ANS


def same_number(a, b):
    if a == b:  # the upstream's is_correct: equal strings
        return True
    try:
        return Decimal(a) == Decimal(b)
    except InvalidOperation:
        return False


def score(request):
    gold = extract_answer(row_of(request)["answer"])
    if gold == INVALID_ANS:  # the upstream asserts this never happens
        raise ValueError("the reference answer has no '#### <number>'")
    answer = request.get("answer") or ""
    given = upstream_given = extract_answer(answer)
    rule = "#### (upstream)"
    if given == INVALID_ANS:
        given = last_number(answer)
        rule = "last number (adapter)" if given != INVALID_ANS else "none"
    passed = given != INVALID_ANS and same_number(given, gold)
    detail = {"expected": gold, "extracted": given, "rule": rule, "upstream_is_correct": upstream_given == gold}
    return {"reward": 1.0 if passed else 0.0, "passed": passed, "detail": detail}


def handle(request):
    if not isinstance(request, dict):
        raise ValueError("expected a JSON object")
    op = request.get("op")
    if op == "units":
        return {"units": list(units())}
    if op == "setup":
        return {"prompt": row_of(request)["question"] + "\n\n" + INSTRUCTION}
    if op == "oracle":
        return {"answer": row_of(request)["answer"]}
    if op == "score":
        return score(request)
    return {"error": f"unknown op {op!r}"}


def main():
    for line in sys.stdin:
        try:
            reply = handle(json.loads(line))
        except Exception as exc:  # the op's error goes back to Nullius, which records it
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
