"""What `harbor view` shows of a job, asked of Harbor 0.25.0's own viewer (its FastAPI app, in process).

Runs INSIDE the Harbor venv (see venv.py):

    <harbor-venv>/bin/python tests/harbor/view_job.py JOBS_DIR JOB_NAME

Prints one JSON object: the job's row of `/api/jobs` (environment type,
tokens, cost), each trial's row of `/api/jobs/{job}/trials`, and per trial
what the Verifier tab (`verifier-output`), the timing bar (`TrialResult`'s
phases) and the trajectory tab (the tool calls' names) get.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]  # keep venv.py from shadowing anything

from fastapi.testclient import TestClient  # noqa: E402

from harbor.viewer.server import create_app  # noqa: E402


def view(jobs_dir: Path, job: str) -> dict:
    client = TestClient(create_app(jobs_dir))

    def get(path: str) -> dict:
        reply = client.get(path)
        reply.raise_for_status()
        return reply.json()

    row = next(j for j in get("/api/jobs")["items"] if j["name"] == job)
    trials = {}
    for summary in get(f"/api/jobs/{job}/trials")["items"]:
        name = summary["name"]
        detail = get(f"/api/jobs/{job}/trials/{name}")
        trajectory = get(f"/api/jobs/{job}/trials/{name}/trajectory") or {"steps": []}
        trials[name] = {
            "summary": summary,
            "verifier_output": get(f"/api/jobs/{job}/trials/{name}/verifier-output"),
            "phases": {k: detail.get(k) for k in ("environment_setup", "agent_setup", "agent_execution", "verifier")},
            "started_at": detail.get("started_at"),
            "finished_at": detail.get("finished_at"),
            "tools": [c["function_name"] for s in trajectory["steps"] for c in s.get("tool_calls") or []],
            "total_cost_usd": (trajectory.get("final_metrics") or {}).get("total_cost_usd"),
        }
    return {"job": row, "config": get(f"/api/jobs/{job}/config"), "trials": trials}


if __name__ == "__main__":
    print(json.dumps(view(Path(sys.argv[1]), sys.argv[2]), indent=1, default=str))
