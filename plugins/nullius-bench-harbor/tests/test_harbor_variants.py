"""A variant on a Harbor task in its own image: its files reach the box's working folder before the agent starts.

The reference agent runs inside the task's image (docker); its instructions
come only from the variant's AGENTS.md, which tells it (through the fake
model's `nullius-play`) what to write; the task's own check passes only when
that was done and the variant's skill, references/ included, is in /app.
"""

from __future__ import annotations

import json
from pathlib import Path

from harbor_tasks import write_task

from nullius_core.testing import run_cli

CHECK = ('#!/bin/bash\nmkdir -p /logs/verifier\n'
         'if [ "$(cat /app/answer.txt 2>/dev/null)" = "42" ] && [ -f /app/.agents/skills/s/references/r.md ]; then echo 1; else echo 0; fi'
         ' > /logs/verifier/reward.txt\n')


def test_a_variants_files_reach_an_agent_in_its_tasks_own_image(harbor_world):
    env, fake, root = harbor_world
    tasks = root / "variant-tasks"
    write_task(tasks, "told-by-the-variant", instruction="Do what your instructions say.\n", test_sh=CHECK)
    variant = root / "told"
    (variant / "skills" / "s" / "references").mkdir(parents=True)
    (variant / "variant.toml").write_text('agent = "reference"\nmodel = "fake-model"\n')
    (variant / "AGENTS.md").write_text("<!-- nullius-play: echo 42 > /app/answer.txt -->\n")
    (variant / "skills" / "s" / "SKILL.md").write_text("---\nname: s\ndescription: a skill\n---\n")
    (variant / "skills" / "s" / "references" / "r.md").write_text("r\n")
    result = run_cli(["run", "harbor", "--variant", str(variant), "--dataset", str(tasks), "--provider", "openai-compatible",
                      "--base-url", fake.openai_base_url, "--backend", "docker", "--job-name", "variant-box"], env, timeout=1800)
    assert result.code == 0, result.output
    trial = Path(env["NULLIUS_JOBS_DIR"]) / "variant-box" / "told-by-the-variant"
    found = json.loads((trial / "result.json").read_text())
    assert found.get("exception_info") is None, found.get("exception_info")
    assert found["verifier_result"]["rewards"]["reward"] == 1.0
    assert found["standard"]["variant"]["name"] == "told" and found["standard"]["image"]
    changes = (trial / "agent" / "container-changes.txt").read_text().splitlines()
    assert "A /app/AGENTS.md" in changes and "A /app/.agents/skills/s/references/r.md" in changes  # not the image's: on record
