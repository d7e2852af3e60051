"""A job's progress as the runs page reads it, and what resuming it asks of the person (a job's record consents to nothing)."""

from __future__ import annotations

import json

from nullius_app import job_progress


def _job(root, name, standard, config):
    job = root / name
    job.mkdir(parents=True)
    (job / "result.json").write_text(json.dumps({"standard": standard}))
    (job / "config.json").write_text(json.dumps({"standard": config}))
    return job


def test_resuming_a_job_asks_for_what_its_record_names_and_nothing_else(tmp_path):
    _job(tmp_path, "mine", {"state": "stopped"},
         {"unsandboxed": True, "agent": {"base_url": "http://127.0.0.1:9/v1", "provider": "openai-compatible"}})
    asked = job_progress.read(tmp_path, "mine", False)
    assert asked.resumable and asked.asks_unsandboxed and asked.asks_base_url == "http://127.0.0.1:9/v1"
    assert asked.json()["asks_base_url"] == "http://127.0.0.1:9/v1"
    _job(tmp_path, "boxed", {"state": "cancelled"}, {"unsandboxed": False, "agent": {"base_url": None}})
    plain = job_progress.read(tmp_path, "boxed", False)
    assert plain.resumable and not plain.asks_unsandboxed and plain.asks_base_url is None
    _job(tmp_path, "odd", {"state": "cancelled"}, {"unsandboxed": "yes", "agent": ["not", "an", "object"]})
    odd = job_progress.read(tmp_path, "odd", False)  # a malformed record asks for nothing (the CLI reads it again, strictly)
    assert not odd.asks_unsandboxed and odd.asks_base_url is None
