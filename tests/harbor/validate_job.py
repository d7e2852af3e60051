"""Validate a job directory against Harbor 0.25.0's own pydantic models.

Runs INSIDE the Harbor venv (see venv.py), never in Nullius's own environment:

    <harbor-venv>/bin/python tests/harbor/validate_job.py JOB_DIR

Each file is read the way Harbor itself reads it (``Model.model_validate_json``
on the file text, pydantic's default JSON mode: Harbor's loaders in
``harbor/cli/jobs.py``, ``harbor/viewer/scanner.py`` and ``harbor/upload/uploader.py``
do exactly this):

| file                             | model                                             |
|----------------------------------|---------------------------------------------------|
| JOB_DIR/result.json  (required)  | harbor.models.job.result.JobResult                |
| JOB_DIR/config.json  (if there)  | harbor.models.job.config.JobConfig                |
| JOB_DIR/*/result.json            | harbor.models.trial.result.TrialResult            |
| JOB_DIR/*/config.json            | harbor.models.trial.config.TrialConfig            |
| JOB_DIR/*/agent/trajectory.json  | harbor.models.trajectories.Trajectory             |
| JOB_DIR/lock.json    (if there)  | harbor.models.job.lock.JobLock                    |
| JOB_DIR/*/lock.json  (if there)  | harbor.models.job.lock.TrialLock                  |

A trial lock's task digest is also checked against the task folder it names,
hashed by Harbor's own Packager (what `harbor jobs diff` and the uploader trust).

JobConfig and TrialConfig do NOT forbid unknown keys (pydantic's default is to
ignore them), so Nullius's extra ``standard`` block passes validation; it is
reported under ``warnings`` because Harbor drops it silently when it re-reads
the config, and ``harbor run -c config.json --dry-run`` (which validates with
``extra="forbid"``) would reject it. Trajectory and all ATIF sub-models DO
forbid unknown keys: there an extra key is an error.

Prints one JSON object and exits 1 if there is any error (2 if harbor is not
importable, i.e. the wrong interpreter was used):

    {"ok": bool,
     "checked": {"job": n, "trials": n, "trajectories": n, "config": n, "trial_configs": n, "locks": n, "job_lock": n},
     "errors": [{"file": "<path relative to JOB_DIR>", "model": "...", "error": "...",
                 "details": [{"loc": "...", "type": "...", "msg": "..."}]}],
     "warnings": [{"file": ..., "warning": ...}],
     "harbor": "0.25.0"}
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _fail_import(exc: BaseException) -> None:
    print(
        json.dumps(
            {
                "ok": False,
                "checked": {"job": 0, "trials": 0, "trajectories": 0},
                "errors": [
                    {
                        "file": None,
                        "model": None,
                        "error": f"cannot import harbor ({exc!r}); run this with the Harbor venv's python "
                        f"(tests/harbor/venv.py ensure_harbor_python()), not {sys.executable}",
                    }
                ],
            }
        )
    )
    sys.exit(2)


# This script's folder (tests/harbor) holds a venv.py: keep it from shadowing anything.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

try:
    import importlib.metadata as _md

    from pydantic import BaseModel, ValidationError

    from harbor.models.job.config import JobConfig
    from harbor.models.job.lock import JobLock, TrialLock
    from harbor.publisher.packager import Packager
    from harbor.models.job.result import JobResult
    from harbor.models.trajectories import Trajectory
    from harbor.models.trial.config import TrialConfig
    from harbor.models.trial.result import TrialResult
except ImportError as exc:  # pragma: no cover - exercised only with a wrong interpreter
    _fail_import(exc)


def _details(exc: ValidationError) -> list[dict[str, str]]:
    return [
        {"loc": ".".join(str(p) for p in err["loc"]), "type": err["type"], "msg": err["msg"]}
        for err in exc.errors(include_url=False)
    ]


def _unknown_keys(model: type[BaseModel], text: str) -> list[str]:
    try:
        data = json.loads(text)
    except ValueError:
        return []
    if not isinstance(data, dict):
        return []
    return sorted(k for k in data if k not in model.model_fields)


def _digest_problems(job_dir: Path, lock: Path) -> list[dict]:
    """The lock's task digest against Harbor's own hash of the folder it names (when that folder is here)."""
    try:
        task = TrialLock.model_validate_json(lock.read_text()).task
    except Exception:  # noqa: BLE001 - reported by check() already
        return []
    if task.path is None or not Path(task.path).is_dir():
        return []
    content_hash, _ = Packager.compute_content_hash(Path(task.path))
    if task.digest == f"sha256:{content_hash}":
        return []
    return [{"file": lock.relative_to(job_dir).as_posix(), "model": "TrialLock",
             "error": f"task digest {task.digest} is not Harbor's hash of {task.path} (sha256:{content_hash})", "details": []}]


def validate(job_dir: Path) -> dict:
    errors: list[dict] = []
    warnings: list[dict] = []
    checked = {"job": 0, "trials": 0, "trajectories": 0, "config": 0, "trial_configs": 0, "locks": 0, "job_lock": 0}

    def check(path: Path, model: type[BaseModel], kind: str, warn_unknown: bool = False) -> None:
        rel = path.relative_to(job_dir).as_posix()
        checked[kind] += 1
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            errors.append({"file": rel, "model": model.__name__, "error": f"cannot read: {exc}", "details": []})
            return
        try:
            model.model_validate_json(text)
        except ValidationError as exc:
            errors.append({"file": rel, "model": model.__name__, "error": str(exc), "details": _details(exc)})
            return
        except Exception as exc:  # a validator raising something pydantic does not wrap
            errors.append({"file": rel, "model": model.__name__, "error": f"{type(exc).__name__}: {exc}", "details": []})
            return
        if warn_unknown:
            extra = _unknown_keys(model, text)
            if extra:
                warnings.append(
                    {
                        "file": rel,
                        "warning": f"top-level keys unknown to Harbor's {model.__name__}: {extra}. "
                        "Harbor ignores them when reading (so this validates) and drops them "
                        "when it rewrites the file; `harbor run -c <file> --dry-run` rejects them.",
                    }
                )

    if not job_dir.is_dir():
        errors.append({"file": ".", "model": None, "error": f"not a directory: {job_dir}", "details": []})
    else:
        job_result = job_dir / "result.json"
        if job_result.is_file():
            check(job_result, JobResult, "job")
        else:
            errors.append({"file": "result.json", "model": "JobResult", "error": "missing", "details": []})
        job_config = job_dir / "config.json"
        if job_config.is_file():
            check(job_config, JobConfig, "config", warn_unknown=True)
        for trial_result in sorted(job_dir.glob("*/result.json")):
            check(trial_result, TrialResult, "trials")
        for trial_config in sorted(job_dir.glob("*/config.json")):
            check(trial_config, TrialConfig, "trial_configs", warn_unknown=True)
        for trajectory in sorted(job_dir.glob("*/agent/trajectory.json")):
            check(trajectory, Trajectory, "trajectories")
        if (job_dir / "lock.json").is_file():
            check(job_dir / "lock.json", JobLock, "job_lock")
        for lock in sorted(job_dir.glob("*/lock.json")):
            check(lock, TrialLock, "locks")
            errors.extend(_digest_problems(job_dir, lock))

    return {
        "ok": not errors,
        "checked": checked,
        "errors": errors,
        "warnings": warnings,
        "harbor": _md.version("harbor"),
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python validate_job.py JOB_DIR", file=sys.stderr)
        return 2
    report = validate(Path(argv[0]).resolve())
    print(json.dumps(report, indent=2))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
