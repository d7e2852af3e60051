"""The Harbor benchmark's driver: a folder of Harbor tasks, read with harbor==0.25.0's own models, as Nullius units.

Runs in its own environment (Python 3.12, harbor 0.25.0 and its pinned
dependencies, standard.json's driver.install). NULLIUS_DATASET is the
folder. It never runs docker: each setup names the task's own image and its
check, and Nullius runs them in the unit's box (docs/drivers.md, "Tasks that
are containers").
"""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from nullius_harbor import rewards, tasks  # noqa: E402

FOLDER = Path(os.environ.get("NULLIUS_DATASET") or ".")


def handle(request: dict) -> dict:
    op = request["op"]
    if op == "units":
        return {"units": list(tasks.task_dirs(FOLDER))}
    if op == "score" and "steps" not in request:
        return rewards.score_reply(request.get("verified"))
    try:
        task, rel = tasks.load(FOLDER, request["unit"])
        if op == "step":
            step = next(s for s in task.config.steps or [] if s.name == request["step"])
            return rewards.step_reply(request["verified"], step.min_reward)
        if op == "score":
            strategy = task.config.multi_step_reward_strategy
            return rewards.steps_score(request["steps"], strategy.value if strategy is not None else "mean")
        if op == "setup":
            return tasks.setup_reply(task, rel)
        if op == "oracle":
            return {"answer": "", "solve": tasks.solve(task, rel)}
    except tasks.NotMapped as exc:
        return {"error": str(exc)}
    except ValueError as exc:
        return {"error": str(exc)}
    return {"error": f"unknown op {op!r}"}


for line in sys.stdin:
    sys.stdout.write(json.dumps(handle(json.loads(line))) + "\n")
    sys.stdout.flush()
