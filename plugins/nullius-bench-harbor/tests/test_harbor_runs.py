"""A folder of Harbor tasks run as the benchmark `harbor` on docker: each way a task can go wrong is its recorded outcome, with Harbor's name.

The tasks are written here (harbor_tasks.py) in Harbor 0.25's format; the
driver reads them with Harbor's own models, in its own Python 3.12
environment (installed once a session), and the tasks' images build on this
machine's base image (NULLIUS_BASE).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from harbor_tasks import CHECK_42, write_task

from nullius_core.testing import run_cli

RUN_SECONDS = 1800  # the first run installs the driver's environment (harbor 0.25.0 and its 91 pins) and builds the images


def trials(job: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in job.glob("*/result.json")}


def kinds(found: dict[str, dict]) -> dict[str, str | None]:
    return {u: (t.get("exception_info") or {}).get("exception_type") for u, t in found.items()}


def failing_folder(root: Path) -> Path:
    folder = root / "failing"
    write_task(folder, "good", toml="[verifier]\ntimeout_sec = 120.0\n[environment]\nmemory_mb = 512\ncpus = 1\n")
    write_task(folder, "no-reward", test_sh="#!/bin/bash\necho 'checked, and wrote no reward'\n")
    write_task(folder, "bad-json", test_sh="#!/bin/bash\nmkdir -p /logs/verifier\necho '{\"reward\": ' > /logs/verifier/reward.json\n")
    write_task(folder, "empty-reward", test_sh="#!/bin/bash\nmkdir -p /logs/verifier\n: > /logs/verifier/reward.txt\n")
    write_task(folder, "slow", test_sh="#!/bin/bash\nsleep 600\n", toml="[verifier]\ntimeout_sec = 3.0\n")
    write_task(folder, "broken-image", dockerfile="ARG NULLIUS_BASE\nFROM ${NULLIUS_BASE}\nRUN exit 3\n")
    write_task(folder, "bad-solve", solve_sh="#!/bin/bash\necho 'cannot solve it' >&2\nexit 3\n")
    write_task(folder, "json-wins", test_sh="#!/bin/bash\nmkdir -p /logs/verifier\necho 0 > /logs/verifier/reward.txt\n"
               "echo '{\"reward\": 0.5, \"style\": 1}' > /logs/verifier/reward.json\n")
    write_task(folder, "env-passed", test_sh='#!/bin/bash\nmkdir -p /logs/verifier\n[ "$MODE" = strict ] && cat /app/mode > /logs/verifier/reward.txt\n',
               solve_sh='#!/bin/bash\n[ "$SOLVER" = harbor ] && echo 1 > /app/mode\n',
               toml='[verifier.env]\nMODE = "strict"\n[solution.env]\nSOLVER = "${NULLIUS_TEST_UNSET_VAR:-harbor}"\n')
    write_task(folder, "allowlist", test_sh="#!/bin/bash\nmkdir -p /logs/verifier\ncurl -s -m 20 http://example.org/ >/dev/null\n"
               "curl -s -m 20 http://example.com/ >/dev/null\necho 1 > /logs/verifier/reward.txt\n",
               toml='[environment]\nnetwork_mode = "allowlist"\nallowed_hosts = ["example.com"]\n')
    write_task(folder, "offline", toml='[environment]\nnetwork_mode = "no-network"\n')
    write_task(folder, "as-user", toml='[agent]\nuser = "nobody"\n')
    write_task(folder, "healthy", dockerfile="ARG NULLIUS_BASE\nFROM ${NULLIUS_BASE}\nWORKDIR /app\nRUN touch /app/ready\n",
               toml='[environment.healthcheck]\ncommand = "test -f /app/ready"\ninterval_sec = 0.2\n')
    write_task(folder, "sick", toml='[environment.healthcheck]\ncommand = "echo not yet; exit 1"\ninterval_sec = 0.2\nretries = 2\n')
    write_task(folder, "kept", solve_sh="#!/bin/bash\nmkdir -p /app/out/cache\necho 42 > /app/answer.txt\necho made > /app/out/result.txt\n"
               "echo big > /app/out/cache/blob.bin\necho published > /logs/artifacts/note.txt\n",
               test_sh=CHECK_42 + '[ "$GREETING" = hello ] || echo 0 > /logs/verifier/reward.txt\n',
               top='artifacts = [{source = "/app/out", exclude = ["cache"]}, "/app/missing.txt"]\n', toml='[environment.env]\nGREETING = "hello"\n')
    write_task(folder, "bad-toml", toml='[agent]\ntimeout_sec = "soon"\n')
    return folder


def test_each_way_a_harbor_task_goes_wrong_is_its_own_outcome_and_the_run_goes_on(harbor_world):
    env, _, root = harbor_world
    folder = failing_folder(root)
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    result = run_cli(["run", "harbor", "oracle", "--dataset", str(folder), "--backend", "docker", "-j", "3", "--job-name", "failing"],
                     env, timeout=RUN_SECONDS)
    assert result.code == 0, result.output
    found = trials(jobs / "failing")
    assert kinds(found) == {
        "good": None, "allowlist": None, "offline": None, "json-wins": None, "env-passed": None, "bad-solve": None,
        "no-reward": "RewardFileNotFoundError", "bad-json": "VerifierOutputParseError", "empty-reward": "RewardFileEmptyError",
        "slow": "VerifierTimeoutError", "broken-image": "SandboxBuildFailedError",
        "as-user": "EnvironmentSetupError", "bad-toml": "EnvironmentSetupError", "healthy": None, "sick": "HealthcheckError", "kept": None,
    }
    rewards = {u: (t.get("verifier_result") or {}).get("rewards") for u, t in found.items() if t.get("verifier_result")}
    assert rewards == {"good": {"reward": 1.0}, "allowlist": {"reward": 1.0}, "offline": {"reward": 1.0}, "env-passed": {"reward": 1.0}, "bad-solve": {"reward": 0.0}, "healthy": {"reward": 1.0},
                       "kept": {"reward": 1.0}, "json-wins": {"reward": 0.5, "style": 1.0}}  # reward.json wins over reward.txt, every key kept
    job = jobs / "failing"
    # the oracle's solve that failed: said beside its output, as Harbor's OracleAgent does, and the check still ran
    assert (job / "bad-solve" / "agent" / "exit-code.txt").read_text() == "3\n"
    assert "cannot solve it" in (job / "bad-solve" / "agent" / "solve-stdout.txt").read_text()
    assert "checked, and wrote no reward" in (job / "no-reward" / "verifier" / "test-stdout.txt").read_text()
    messages = {u: (t.get("exception_info") or {}).get("exception_message", "") for u, t in found.items()}
    assert "not run: this task uses agent.user / verifier.user" in messages["as-user"]
    # the check's network policy: an allowlist lets only its hosts be asked for (none resolves here), no-network gives no way out
    asked = {e["host"]: e for e in map(json.loads, (job / "allowlist" / "verifier" / "egress.log").read_text().splitlines())}
    assert asked["example.org"]["why"] == "not among the task's allowed hosts" and asked["example.com"]["why"] == "cannot resolve"
    assert not (job / "offline" / "verifier" / "egress.log").exists() and (job / "good" / "verifier" / "egress.log").exists()
    assert "the task's healthcheck failed 2 times in a row (exit 1): not yet" in messages["sick"]
    # artifacts as Harbor collects them: /logs/artifacts first, each where Harbor puts it, excluded files left out, a manifest
    artifacts = job / "kept" / "artifacts"
    assert (artifacts / "app" / "out" / "result.txt").read_text() == "made\n" and not (artifacts / "app" / "out" / "cache").exists()
    assert (artifacts / "logs" / "artifacts" / "note.txt").read_text() == "published\n"
    manifest = json.loads((artifacts / "manifest.json").read_text())
    assert [(e["source"], e["destination"], e["type"], e["status"]) for e in manifest] == [
        ("/logs/artifacts", "logs/artifacts", "directory", "ok"), ("/app/out", "app/out", "directory", "ok"),
        ("/app/missing.txt", "app/missing.txt", "file", "failed")]
    assert json.loads((job / "good" / "artifacts" / "manifest.json").read_text())[0]["status"] == "empty"
    assert "task.toml: agent.timeout_sec: Input should be a valid number" in messages["bad-toml"]
    assert "did not build (docker build exit 1" in messages["broken-image"] or "did not build" in messages["broken-image"]
    # the task's own limits, from task.toml, as the box ran with them
    good = found["good"]  # Harbor's names for it: its [task] name, the digest Harbor's lock pins it by, its folder
    assert good["task_name"] == "nullius-tests/good" and good["source"] == "failing" and len(good["task_checksum"]) == 64
    assert good["task_id"] == {"path": str((folder / "good").resolve())}
    assert json.loads((job / "config.json").read_text())["standard"]["dataset_folder"] == str(folder.resolve())


def test_prove_names_the_task_whose_oracle_fails_and_the_one_an_empty_agent_passes(harbor_world):
    env, _, root = harbor_world
    folder = root / "linted"
    write_task(folder, "sound")
    write_task(folder, "unsolved", solve_sh="#!/bin/bash\necho 41 > /app/answer.txt\n")
    write_task(folder, "always", test_sh="#!/bin/bash\nmkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n")
    write_task(folder, "leaky", instruction="Write 42 into /app/answer.txt. The check reads:\n"
               "if [ \"$(cat /app/answer.txt 2>/dev/null)\" = \"42\" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n")
    result = run_cli(["prove", "harbor", "--dataset", str(folder)], env, timeout=RUN_SECONDS)
    assert result.code == 1, result.output
    lines = {line.split(":", 1)[0]: line for line in result.stdout.splitlines() if line.startswith("harbor/linted ")}
    assert lines["harbor/linted oracle"].endswith("failing: unsolved")
    assert lines["harbor/linted nop"].endswith("passing: always")
    assert "leaked: leaky" in lines["harbor/linted leak"]
    assert CHECK_42.splitlines()[2] not in (folder / "sound" / "instruction.md").read_text()


def test_an_agent_cannot_plant_the_check_or_its_reward(harbor_world):
    """The reference agent, played by the fake model, plants its own /tests/test.sh and a reward of 1: the task's own check decides."""
    env, fake, root = harbor_world
    folder = root / "tamper"
    plant = ("mkdir -p /tests /logs/verifier; printf '#!/bin/bash\\necho 1 > /logs/verifier/reward.txt\\n' > /tests/test.sh; "
             "echo extra > /tests/extra.txt; echo 1 > /logs/verifier/reward.txt; echo 41 > answer.txt; pwd > where.txt")
    write_task(folder, "tamper", instruction=f"Write 42 into /app/answer.txt.\n<!-- nullius-play: {plant} -->\n",
               test_sh=CHECK_42 + "ls /tests > /logs/verifier/tests-seen.txt\n")
    write_task(folder, "honest", instruction="Write 42 into /app/answer.txt.\n<!-- nullius-play: echo 42 > /app/answer.txt -->\n")
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    result = run_cli(["run", "harbor", "reference", "--dataset", str(folder), "--model", "fake-model", "--provider", "openai-compatible",
                      "--base-url", fake.openai_base_url, "--backend", "docker", "--job-name", "tamper"], env, timeout=RUN_SECONDS)
    assert result.code == 0, result.output
    found = trials(jobs / "tamper")
    assert {u: t["verifier_result"]["rewards"]["reward"] for u, t in found.items()} == {"tamper": 0.0, "honest": 1.0}
    seen = (jobs / "tamper" / "tamper" / "verifier" / "tests-seen.txt").read_text().split()
    assert seen == ["test.sh"]  # its /tests went before the task's were copied in
    changes = (jobs / "tamper" / "tamper" / "agent" / "container-changes.txt").read_text()
    assert "/app/answer.txt" in changes and "/tests/extra.txt" in changes  # what it did is on record
    assert env["OPENAI_COMPATIBLE_API_KEY"] not in (jobs / "tamper" / "tamper" / "agent" / "acp.jsonl").read_text()


def two_steps(folder: Path, name: str, first_answer: str = "42", ready: str = "test -f /app/staged.txt") -> Path:
    top = ('multi_step_reward_strategy = "mean"\n[[steps]]\nname = "write"\nmin_reward = 1.0\n[[steps]]\nname = "extend"\n'
           f'healthcheck = {{ command = "{ready}", interval_sec = 0.2, retries = 2 }}\n')
    task = write_task(folder, name, top=top)
    check_both = ('#!/bin/bash\nmkdir -p /logs/verifier\n'
                  'if [ "$(cat /app/answer.txt)" = "$(printf "42\\n43")" ] && [ -f /app/staged.txt ]; then echo 1; else echo 0; fi'
                  ' > /logs/verifier/reward.txt\n')
    files = {
        "steps/write/instruction.md": "Write 42 into /app/answer.txt.\n<!-- nullius-play: echo 42 > /app/answer.txt -->\n",
        "steps/write/tests/test.sh": CHECK_42,
        "steps/write/solution/solve.sh": f"#!/bin/bash\necho {first_answer} > /app/answer.txt\n",
        "steps/extend/instruction.md": "Append a line 43 to /app/answer.txt.\n<!-- nullius-play: echo 43 >> /app/answer.txt -->\n",
        "steps/extend/workdir/setup.sh": "#!/bin/bash\necho staged > /app/staged.txt\n",
        "steps/extend/tests/test.sh": check_both,
        "steps/extend/solution/solve.sh": "#!/bin/bash\necho 43 >> /app/answer.txt\n",
    }
    for rel, text in files.items():
        (task / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / rel).write_text(text)
    return task


def test_a_task_of_steps_runs_each_step_and_its_check_in_turn_gated_by_min_reward(harbor_world):
    env, fake, root = harbor_world
    folder = root / "stepped"
    two_steps(folder, "two-steps")
    two_steps(folder, "gated", first_answer="41")
    two_steps(folder, "not-ready", ready="exit 1")  # the second step's own healthcheck fails, after its setup
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    result = run_cli(["run", "harbor", "oracle", "--dataset", str(folder), "--backend", "docker", "--job-name", "stepped"], env, timeout=RUN_SECONDS)
    assert result.code == 0, result.output
    found = trials(jobs / "stepped")
    assert {u: (t.get("verifier_result") or {}).get("rewards", {}).get("reward") for u, t in found.items()} == {
        "two-steps": 1.0, "gated": 0.0, "not-ready": None}
    assert found["not-ready"]["exception_info"]["exception_type"] == "HealthcheckError"
    assert "step 'extend': the task's healthcheck failed 2 times in a row" in found["not-ready"]["exception_info"]["exception_message"]
    job = jobs / "stepped"
    assert (job / "two-steps" / "steps" / "extend" / "verifier" / "reward.txt").read_text() == "1\n"  # where Harbor keeps a step's
    assert (job / "gated" / "steps" / "write" / "verifier" / "reward.txt").read_text() == "0\n"
    assert not (job / "gated" / "steps" / "extend").exists()  # below step 1's min_reward: step 2 never ran
    detail = json.loads((job / "gated" / "verifier" / "score.json").read_text())["detail"]
    assert [s["name"] for s in detail["steps"]] == ["write"] and detail["steps"][0]["stopped"].startswith("reward=0.0 below min_reward 1.0")
    # Harbor's step_results: each step that was checked, its rewards and its turn's and check's times
    assert [(s["step_name"], s["verifier_result"]["rewards"]["reward"]) for s in found["two-steps"]["step_results"]] == [("write", 1.0), ("extend", 1.0)]
    assert [(s["step_name"], s["verifier_result"]["rewards"]["reward"]) for s in found["gated"]["step_results"]] == [("write", 0.0)]
    assert [s["step_name"] for s in found["not-ready"]["step_results"]] == ["write"]  # step 2 failed before its turn: not a step result
    assert all(s["agent_execution"]["finished_at"] <= s["verifier"]["started_at"] for s in found["two-steps"]["step_results"])

    # an agent: a new session for each step, with that step's instruction, each step checked after its turn
    result = run_cli(["run", "harbor", "reference", "--dataset", str(folder / "two-steps"), "--model", "fake-model",
                      "--provider", "openai-compatible", "--base-url", fake.openai_base_url, "--backend", "docker",
                      "--job-name", "stepped-agent"], env, timeout=RUN_SECONDS)
    assert result.code == 0, result.output
    trial = trials(jobs / "stepped-agent")["two-steps"]
    assert trial["verifier_result"]["rewards"]["reward"] == 1.0
    turns = [s["agent_execution"] for s in trial["step_results"]]
    assert len(turns) == 2 and turns[0]["started_at"] == trial["agent_execution"]["started_at"] and turns[0]["finished_at"] <= turns[1]["started_at"]
    transcript = [json.loads(line) for line in (jobs / "stepped-agent" / "two-steps" / "agent" / "acp.jsonl").read_text().splitlines()]
    prompts = [m for m in json.dumps(transcript).split("nullius-play: ")[1:]]
    assert len(prompts) >= 2 and prompts[0].startswith("echo 42") and any(p.startswith("echo 43") for p in prompts)


COMPOSE = """services:
  main:
    build:
      context: .
    environment:
      GREETING: from-compose
  api:
    build:
      context: ./api
      args:
        NULLIUS_BASE: ${NULLIUS_BASE:-nullius/base:latest}
    expose:
      - "8080"
    command: ["python3", "-m", "http.server", "8080", "--directory", "/srv"]
    healthcheck:
      test: ["CMD", "python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/answer')"]
      interval: 1s
      retries: 30
"""


def test_a_compose_task_reaches_its_services_from_main_and_nothing_else(harbor_world):
    env, _, root = harbor_world
    folder = root / "composed"
    write_task(folder, "with-api", solve_sh="#!/bin/bash\ncurl -sf http://api:8080/answer > /app/answer.txt\n",
               test_sh=CHECK_42 + '[ "$GREETING" = from-compose ] || echo 0 > /logs/verifier/reward.txt\n',
               files={"environment/docker-compose.yaml": COMPOSE,
                      "environment/api/Dockerfile": "ARG NULLIUS_BASE\nFROM ${NULLIUS_BASE}\nRUN mkdir -p /srv && echo 42 > /srv/answer\n"})
    silent = 'services:\n  quiet:\n    build:\n      context: ./api\n      args:\n        NULLIUS_BASE: ${NULLIUS_BASE}\n    command: ["sleep", "infinity"]\n'
    write_task(folder, "silent-service", files={"environment/docker-compose.yaml": silent,
                                                "environment/api/Dockerfile": "ARG NULLIUS_BASE\nFROM ${NULLIUS_BASE}\n"})
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    result = run_cli(["run", "harbor", "oracle", "--dataset", str(folder), "--backend", "docker", "--job-name", "composed"], env, timeout=RUN_SECONDS)
    assert result.code == 0, result.output
    found = trials(jobs / "composed")
    assert kinds(found) == {"with-api": None, "silent-service": "EnvironmentSetupError"}
    assert found["with-api"]["verifier_result"]["rewards"]["reward"] == 1.0
    said = found["silent-service"]["exception_info"]["exception_message"]
    assert "service quiet declares no port (expose, ports) and listens on none once up: main could not reach it" in said
    left = subprocess.run(["docker", "ps", "-aq", "--filter", "label=nullius.job=composed"], capture_output=True, text=True).stdout.split()
    networks = subprocess.run(["docker", "network", "ls", "-q", "--filter", "label=nullius.job=composed"], capture_output=True, text=True).stdout
    assert left == [] and networks.split() == []  # the services went with the run
