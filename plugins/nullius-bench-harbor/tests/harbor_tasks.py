"""Harbor task folders written by the tests (schema 1.4, as Harbor 0.25 reads them), and a model that plays them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from nullius_core.testing.fake_model import FakeRequest, Reply, ToolCall

DOCKERFILE = "ARG NULLIUS_BASE\nFROM ${NULLIUS_BASE}\nWORKDIR /app\n"
CHECK_42 = ('#!/bin/bash\nmkdir -p /logs/verifier\n'
            'if [ "$(cat /app/answer.txt 2>/dev/null)" = "42" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n')
SOLVE_42 = "#!/bin/bash\necho 42 > /app/answer.txt\n"
PLAY = re.compile(r"nullius-play: (.+?) -->")


def write_task(root: Path, name: str, *, test_sh: str = CHECK_42, solve_sh: str = SOLVE_42, toml: str = "", top: str = "",
               dockerfile: str = DOCKERFILE, instruction: str = "Write 42 into /app/answer.txt.\n", files: dict[str, str] | None = None) -> Path:
    task = root / name
    for folder in ("environment", "tests", "solution"):
        (task / folder).mkdir(parents=True, exist_ok=True)
    # `top`: keys of the file's root (artifacts, steps...), before the first table
    (task / "task.toml").write_text(f'schema_version = "1.4"\n{top}[task]\nname = "nullius-tests/{name}"\n' + toml)
    (task / "instruction.md").write_text(instruction)
    (task / "environment" / "Dockerfile").write_text(dockerfile)
    (task / "tests" / "test.sh").write_text(test_sh)
    (task / "solution" / "solve.sh").write_text(solve_sh)
    for rel, text in (files or {}).items():
        (task / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / rel).write_text(text)
    return task


def play(request: FakeRequest) -> Reply:
    """Runs the command an instruction names in `<!-- nullius-play: COMMAND -->`, with the agent's own shell tool, then stops."""
    if request.last_tool_result is not None:
        return Reply(text="done")
    found = PLAY.search(json.dumps(request.body))
    tool = "Bash" if "Bash" in request.tools else "run_command" if "run_command" in request.tools else None
    if found is None or tool is None:
        return Reply(text="nothing to do")
    command = json.loads(f'"{found.group(1)}"')  # as the request's JSON escaped it
    arguments = {"command": command, "description": "the task's command"} if tool == "Bash" else {"command": command}
    return Reply(tool_calls=[ToolCall(name=tool, arguments=arguments)])
