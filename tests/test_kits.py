"""The conformance kits' drivers of agent.task/v1, agent.workspace/v1 and agent.conversation/v1.

Each driver runs as a real process, spoken to over JSON lines as Nullius does:
its units, a fresh seed per setup (two setups never give the same answer, and
the prompt carries no seed), the reference passing every check, an empty or
plausible-but-wrong answer failing it; the workspace kit's symlink and
signature traps; the conversation kit's turns.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.testing import run_cli

KITS = ROOT / "nullius_plugins" / "ports_v1" / "kits"
SEEDLIKE = re.compile(r"[0-9a-fA-F]{16,}")  # a seed is 32 hex digits; no prompt carries even half of one
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="the workspace kit's scorer needs bubblewrap")


def machine_python() -> str:
    """The first python3 on PATH outside Nullius's own environment, as a run picks it."""
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(folder) / "python3"
        if candidate.is_file() and os.access(candidate, os.X_OK) and not str(candidate).startswith(sys.prefix):
            return str(candidate)
    return sys.executable


class Driver:
    """A kit's driver process: `call(op, **fields)` writes one request line and reads one reply line."""

    def __init__(self, kit: str) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
        self.proc = subprocess.Popen(
            [machine_python(), str(KITS / kit / "driver.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
        )

    def call(self, op: str, **fields) -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"op": op, "dataset": "checks", **fields}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line.endswith("\n"), f"the driver gave no reply line to {op}"
        reply = json.loads(line)
        assert isinstance(reply, dict)
        return reply

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        assert self.proc.wait(timeout=120) == 0


@pytest.fixture
def driver():
    made: list[Driver] = []

    def start(kit: str) -> Driver:
        made.append(Driver(kit))
        return made[-1]

    yield start
    for d in made:
        d.close()


def workspace(tmp_path: Path, name: str) -> str:
    folder = tmp_path / name
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return str(folder)


def files_of(folder: str) -> dict[str, str]:
    root = Path(folder)
    return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file() and ".git" not in p.relative_to(root).parts}


def score(d: Driver, unit: str, folder: str, answer: str) -> dict:
    reply = d.call("score", unit=unit, dir=folder, answer=answer,
                   transcript=[{"role": "user", "text": "..."}, {"role": "agent", "text": answer}])
    assert "error" not in reply, reply
    assert isinstance(reply["reward"], float) and isinstance(reply["passed"], bool) and isinstance(reply["detail"], dict)
    assert reply["reward"] == (1.0 if reply["passed"] else 0.0)
    return reply


@pytest.mark.parametrize(
    "kit, units",
    [
        ("agent-task-v1", ["word-1", "word-2", "word-3"]),
        ("agent-workspace-v1", ["write-file", "fix-bug"]),
        ("agent-conversation-v1", ["recall-turn-1"]),
    ],
)
def test_units_are_the_checks_in_the_kits_order(driver, kit, units):
    standard = json.loads((KITS / kit / "standard.json").read_text())
    assert standard["kit"]["basic"] + list(standard["kit"].get("skills", {})) == units
    assert standard["datasets"]["checks"]["units"] == len(units)
    d = driver(kit)
    assert d.call("units") == {"units": units}
    assert d.call("units") == {"units": units}
    assert "error" in d.call("units", dataset="other")
    assert "error" in d.call("setup", unit="nope", dir="/tmp")
    assert "error" in d.call("frobnicate")


@pytest.mark.parametrize("kit", ["agent-task-v1", "agent-workspace-v1", "agent-conversation-v1"])
def test_each_kit_definition_checks_clean(kit, nullius_env):
    result = run_cli(["check", str(KITS / kit / "standard.json")], nullius_env, in_process=True)
    assert result.code == 0, result.output
    standard = json.loads((KITS / kit / "standard.json").read_text())
    assert standard["driver"]["command"] == ["python3", "{here}/driver.py"]
    assert standard["controls"]["nop"]["source"] == standard["controls"]["oracle"]["source"] == "nullius"


# agent.task/v1


@pytest.mark.parametrize("unit", ["word-1", "word-2", "word-3"])
def test_task_kit_reference_passes_and_others_fail(driver, tmp_path, unit):
    d = driver("agent-task-v1")
    here, there = workspace(tmp_path, "a"), workspace(tmp_path, "b")
    prompt = d.call("setup", unit=unit, dir=here)["prompt"]
    other_prompt = d.call("setup", unit=unit, dir=there)["prompt"]
    word = d.call("oracle", unit=unit, dir=here)["answer"]
    other = d.call("oracle", unit=unit, dir=there)["answer"]
    assert word != other and prompt != other_prompt
    assert word in prompt and other not in prompt and not SEEDLIKE.search(prompt)
    assert re.fullmatch(r"[a-z]{7}", word)
    assert score(d, unit, here, word)["passed"] is True
    for fine in (f"  {word}\n", f"`{word}`", f'"{word}".', f"{word}.", f"```\n{word}\n```"):
        assert score(d, unit, here, fine)["passed"] is True, fine
    for wrong in ("", other, word.capitalize(), word.upper(), f"The word is {word}", f"{word} {word}", word[:-1]):
        reply = score(d, unit, here, wrong)
        assert reply["passed"] is False and reply["detail"]["expected"] == word, wrong
    assert score(d, unit, there, other)["passed"] is True  # the other setup keeps its own word


def test_task_kit_prompts_differ_by_check_and_setup_draws_afresh(driver, tmp_path):
    d = driver("agent-task-v1")
    here = workspace(tmp_path, "a")
    templates = set()
    for unit in ("word-1", "word-2", "word-3"):
        prompt = d.call("setup", unit=unit, dir=here)["prompt"]
        templates.add(prompt.replace(d.call("oracle", unit=unit, dir=here)["answer"], "WORD"))
    assert len(templates) == 3
    words = set()
    for _ in range(5):  # the same unit and dir: each setup a new seed, the last one scored
        d.call("setup", unit="word-1", dir=here)
        words.add(d.call("oracle", unit="word-1", dir=here)["answer"])
    assert len(words) == 5
    fresh = workspace(tmp_path, "fresh")
    assert "error" in d.call("score", unit="word-1", dir=fresh, answer="x", transcript=[])  # no setup, no seed


# agent.workspace/v1


def write_file_target(prompt: str) -> tuple[str, str]:
    path = re.search(r"notes/[a-z]+\.txt", prompt).group(0)
    token = re.search(r"^NLS-[0-9A-F]{12}$", prompt, re.MULTILINE).group(0)
    return path, token


def test_workspace_write_file(driver, tmp_path):
    d = driver("agent-workspace-v1")
    here, there = workspace(tmp_path, "a"), workspace(tmp_path, "b")
    prompt = d.call("setup", unit="write-file", dir=here)["prompt"]
    other_prompt = d.call("setup", unit="write-file", dir=there)["prompt"]
    assert files_of(here) == {}
    path, token = write_file_target(prompt)
    other_path, other_token = write_file_target(other_prompt)
    assert path != other_path and token != other_token
    assert not SEEDLIKE.search(prompt)
    assert score(d, "write-file", here, "")["passed"] is False  # nop: nothing written

    target = Path(here) / path
    target.parent.mkdir()
    target.write_text(other_token + "\n")  # the right place, another setup's line
    assert score(d, "write-file", here, "")["passed"] is False
    target.write_text(f"{token}\nand more\n")
    assert score(d, "write-file", here, "")["passed"] is False
    target.unlink()
    (Path(here) / other_path).write_text(token + "\n")  # the right line, another setup's place
    assert score(d, "write-file", here, "")["passed"] is False

    outside = tmp_path / "outside.txt"  # a symlink out of the workspace, to the right content
    outside.write_text(token + "\n")
    target.symlink_to(outside)
    reply = score(d, "write-file", here, "")
    assert reply["passed"] is False and "outside the workspace" in reply["detail"]["found"]
    target.unlink()
    (Path(here) / "notes").rename(Path(here) / "kept")
    (Path(here) / "notes").symlink_to(tmp_path)  # the folder a symlink out instead
    (tmp_path / Path(path).name).write_text(token + "\n")
    assert score(d, "write-file", here, "")["passed"] is False
    (Path(here) / "notes").unlink()

    target.parent.mkdir()
    target.write_text(f"  {token}  \n")  # as an agent would write it: passes
    reply = score(d, "write-file", here, "I created the file.")
    assert reply["passed"] is True and reply["detail"] == {"path": path, "expected": token, "found": token}
    target.unlink()

    assert d.call("oracle", unit="write-file", dir=here)["answer"]
    assert target.read_text().strip() == token
    assert score(d, "write-file", here, "")["passed"] is True


def charge_of(folder: str) -> int:
    return int(re.search(r"handling charge of\s+(\d+)", (Path(folder) / "README.md").read_text()).group(1))


@needs_bwrap
def test_workspace_fix_bug(driver, tmp_path):
    d = driver("agent-workspace-v1")
    here, there = workspace(tmp_path, "a"), workspace(tmp_path, "b")
    prompt = d.call("setup", unit="fix-bug", dir=here)["prompt"]
    d.call("setup", unit="fix-bug", dir=there)
    assert sorted(files_of(here)) == ["README.md", "ledger.py"]  # the test stays out until score
    assert not SEEDLIKE.search(prompt) and not any(SEEDLIKE.search(t) for t in files_of(here).values())
    assert "ledger.py" in prompt and "README.md" in prompt
    charge, other_charge = charge_of(here), charge_of(there)
    module = Path(here) / "ledger.py"
    buggy = module.read_text()
    wrong = int(re.search(r"sum\(prices\) \+ (\d+)", buggy).group(1))
    assert wrong != charge

    reply = score(d, "fix-bug", here, "")  # nop: the bug is still there
    assert reply["passed"] is False and reply["detail"]["found"]["exit"] == 1
    assert str(charge) in reply["detail"]["expected"]
    assert sorted(files_of(here)) == ["README.md", "ledger.py"]  # score left no test behind

    if other_charge != charge:  # another setup's charge
        module.write_text(buggy.replace(f"+ {wrong}", f"+ {other_charge}"))
        assert score(d, "fix-bug", here, "")["passed"] is False
    module.write_text(buggy.replace("def total(prices):", "def total(prices, extra=0):").replace(f"+ {wrong}", f"+ {charge}"))
    reply = score(d, "fix-bug", here, "")  # right values, signature broken
    assert reply["passed"] is False and "parameters changed" in reply["detail"]["found"]
    module.write_text(buggy.replace("def total(prices):", "def total(items):").replace(f"+ {wrong}", f"+ {charge}"))
    assert score(d, "fix-bug", here, "")["passed"] is False
    module.write_text(f"total = lambda prices: sum(prices) + {charge}\n")
    assert score(d, "fix-bug", here, "")["passed"] is False
    module.write_text(f"def total(prices):\n    return str(sum(prices) + {charge})\n")
    assert score(d, "fix-bug", here, "")["passed"] is False
    module.write_text("def total(prices):\n    import os\n    os._exit(0)\n")
    assert score(d, "fix-bug", here, "")["passed"] is False  # exit 0 without a verdict proves nothing

    module.unlink()
    outside = tmp_path / "ledger.py"
    outside.write_text(buggy.replace(f"+ {wrong}", f"+ {charge}"))
    module.symlink_to(outside)
    reply = score(d, "fix-bug", here, "")
    assert reply["passed"] is False and "outside the workspace" in reply["detail"]["found"]
    module.unlink()

    module.write_text(buggy.replace(f"+ {wrong}", f"+ {charge}"))  # the fix an agent would make
    reply = score(d, "fix-bug", here, "Fixed it.")
    assert reply["passed"] is True and reply["detail"]["found"]["exit"] == 0
    assert all(case["ok"] for case in reply["detail"]["found"]["cases"])

    module.write_text(buggy)
    assert d.call("oracle", unit="fix-bug", dir=here)["answer"]
    assert f"+ {charge}" in module.read_text()
    assert score(d, "fix-bug", here, "")["passed"] is True
    assert sorted(files_of(here)) == ["README.md", "ledger.py"]


@needs_bwrap
def test_workspace_fix_bug_runs_the_module_sandboxed(driver, tmp_path):
    d = driver("agent-workspace-v1")
    here = workspace(tmp_path, "a")
    d.call("setup", unit="fix-bug", dir=here)
    charge = charge_of(here)
    canary = tmp_path / "canary"
    (Path(here) / "ledger.py").write_text(
        "import os\n"
        f"open({str(canary)!r}, 'w').close() if os.path.isdir({str(tmp_path)!r}) else None\n"
        "try:\n    open('/work/written', 'w').close()\nexcept OSError:\n    pass\n"
        f"def total(prices):\n    return sum(prices) + {charge}\n"
    )
    assert score(d, "fix-bug", here, "")["passed"] is True
    assert not canary.exists() and not (Path(here) / "written").exists()  # it saw neither the host nor a writable workspace


# agent.conversation/v1


def test_conversation_turns_and_recall(driver, tmp_path):
    d = driver("agent-conversation-v1")
    here, there = workspace(tmp_path, "a"), workspace(tmp_path, "b")
    first = d.call("setup", unit="recall-turn-1", dir=here)["prompt"]
    d.call("setup", unit="recall-turn-1", dir=there)
    word = re.search(r"code word for later in our conversation: ([a-z]+)\.", first).group(1)
    other = d.call("oracle", unit="recall-turn-1", dir=there)["answer"]
    assert word != other and not SEEDLIKE.search(first)

    transcript = [{"role": "user", "text": first}]
    assert "error" in d.call("turn", unit="recall-turn-1", dir=here, transcript=transcript)  # no agent reply yet
    transcript.append({"role": "agent", "text": "Got it."})
    assert "error" in d.call("turn", unit="recall-turn-1", dir=here, transcript=[*transcript, {"role": "robot", "text": ""}])
    second = d.call("turn", unit="recall-turn-1", dir=here, transcript=transcript)
    assert set(second) == {"message"} and isinstance(second["message"], str)
    assert word not in second["message"] and "code word" in second["message"]
    transcript += [{"role": "user", "text": second["message"]}, {"role": "agent", "text": f"It was {word}."}]
    assert d.call("turn", unit="recall-turn-1", dir=here, transcript=transcript) == {"done": True}

    assert score(d, "recall-turn-1", here, f"It was {word}.")["passed"] is True
    assert score(d, "recall-turn-1", here, word.capitalize())["passed"] is True
    for wrong in ("", other, f"It was {word}s.", "I don't remember.", word[:-1]):
        reply = score(d, "recall-turn-1", here, wrong)
        assert reply["passed"] is False and reply["detail"]["expected"] == word, wrong


def test_conversation_needs_the_second_turn(driver, tmp_path):
    d = driver("agent-conversation-v1")
    here = workspace(tmp_path, "a")
    first = d.call("setup", unit="recall-turn-1", dir=here)["prompt"]
    word = re.search(r": ([a-z]+)\.", first).group(1)
    reply = score(d, "recall-turn-1", here, f"Acknowledged: {word}.")  # one turn only: never asked
    assert reply["passed"] is False and reply["detail"]["asked"] is False and "never asked" in reply["detail"]["note"]
    d.call("setup", unit="recall-turn-1", dir=here)  # a new seed: the old word is now wrong
    assert d.call("oracle", unit="recall-turn-1", dir=here)["answer"] != word


def test_conversation_controls(driver, tmp_path):
    d = driver("agent-conversation-v1")
    here = workspace(tmp_path, "a")
    d.call("setup", unit="recall-turn-1", dir=here)
    assert score(d, "recall-turn-1", here, "")["passed"] is False  # nop
    answer = d.call("oracle", unit="recall-turn-1", dir=here)["answer"]
    assert score(d, "recall-turn-1", here, answer)["passed"] is True
    assert score(d, "recall-turn-1", here, "")["passed"] is False
