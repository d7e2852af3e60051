"""Driver of the internal benchmark `judge`: each unit is one trial of a job to assess, its materials a folder.

`nullius assess` writes the dataset folder: one sub-folder per trial (trial.json
and files/, the trial's artifacts) and one per evaluation to make
(`<trial>-judge-<k>/unit.json`: which trial, which k), and runs this benchmark
with the judge as its agent. `setup` copies the artifacts
into the workspace read-only; `score` grades the judge's reply (grading.py).
An ungraded reply is the op's error, saying why: never a reward of zero.
"""

import json
import os
import shutil
import stat
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from grading import Ungraded, grade, prompt  # noqa: E402

ROOT = Path(os.environ.get("NULLIUS_DATASET") or ".")


def _unit(name):
    """The evaluation `name`: its trial's materials, its number, where its files are."""
    unit = json.loads((ROOT / name / "unit.json").read_text(encoding="utf-8"))
    trial = json.loads((ROOT / unit["trial"] / "trial.json").read_text(encoding="utf-8"))
    return {**trial, "evaluation": unit["evaluation"], "folder": ROOT / unit["trial"]}


def _copy_read_only(source, target):
    for path in sorted(source.rglob("*")):
        dest = target / path.relative_to(source)
        if path.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
        elif path.is_file() and not path.is_symlink():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
            dest.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)


def handle(request):
    op = request.get("op")
    if op == "units":
        return {"units": sorted(p.name for p in ROOT.iterdir() if (p / "unit.json").is_file())}
    unit = _unit(request["unit"])
    if op == "setup":
        _copy_read_only(unit["folder"] / "files", Path(request["dir"]))
        return {"prompt": prompt(unit, unit["evaluation"])}
    if op == "oracle":
        return {"error": "the judge benchmark has no reference answer: it is run only by `nullius assess`"}
    if op == "score":
        try:
            graded = grade(request.get("answer") or "", unit["rubric"])
        except Ungraded as exc:
            return {"error": f"ungraded: {exc}"}
        return {"reward": graded["normalized_score"], "detail": graded}
    return {"error": f"unknown op {op!r}"}


for line in sys.stdin:
    try:
        reply = handle(json.loads(line))
    except Exception as exc:  # the op's error goes back to Nullius, which records it
        reply = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
