"""The agent.tools/v1 kit (version 2): its driver and its MCP server, as real processes.

The driver runs over JSON lines as Nullius runs it, and the test acts as the
agent: it starts mcp_kit.py with the env the setup reply gives and calls the
tools with the mcp SDK's stdio Client. Both run under this test's interpreter,
the development venv, which has mcp==2.3.0 and mcp-types==2.3.0 at the kit's
own pins (checked below) rather than the kit's installed environment, which a
run builds from driver.install.

Covered: each check passes with the right calls and answer; answering without
calling, from a decoy, after skipping a hop or without the retry fails; a
second setup gives other answers; prompts carry no tool name and no seed; the
log lands in the verifier folder, never in the workspace; the engine's
mcp_servers() turns the setup entry into the kit's command; `nullius check`
passes on the kit.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import ROOT

from nullius_core.testing import run_cli

KIT = ROOT / "nullius_plugins" / "ports_v1" / "kits" / "agent-tools-v1"
CHECKS = ["one-tool", "arguments", "decoys", "chain", "retry"]
SEEDLIKE = re.compile(r"[0-9a-fA-F]{16,}")

sys.path.insert(0, str(KIT))
import mcp_kit  # noqa: E402  (the kit's office: plain Python, no mcp import)

TOOL_NAMES = list(mcp_kit.Office.TOOLS)


# ---------------------------------------------------------------- the driver and the agent


class Driver:
    """The kit's driver process: `call(op, **fields)` writes one request line and reads one reply line."""

    def __init__(self) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
        self.proc = subprocess.Popen(
            [sys.executable, str(KIT / "driver.py")],
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


@pytest.fixture(scope="module")
def driver():
    d = Driver()
    yield d
    d.close()


class Agent:
    """The test as an agent: one stdio session with mcp_kit.py (the SDK's Client), kept open across calls.

    The Client is an anyio context, entered and left by one task: that task lives
    in a thread of its own and takes calls from a queue, so the test can score
    between two calls of the same session.
    """

    def __init__(self, env: dict) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        ready: concurrent.futures.Future = concurrent.futures.Future()
        self.owner = asyncio.run_coroutine_threadsafe(self._own(env, ready), self.loop)
        self.tools = ready.result(timeout=300)

    async def _own(self, env: dict, ready: concurrent.futures.Future) -> None:
        from mcp import Client, StdioServerParameters

        self.inbox: asyncio.Queue = asyncio.Queue()
        try:
            params = StdioServerParameters(command=sys.executable, args=[str(KIT / "mcp_kit.py")], env=env)
            async with Client(params) as client:
                ready.set_result(sorted(t.name for t in (await client.list_tools()).tools))
                while (item := await self.inbox.get()) is not None:
                    tool, arguments, answer = item
                    try:
                        result = await client.call_tool(tool, arguments)
                        answer.set_result((bool(result.is_error), "\n".join(getattr(c, "text", "") for c in result.content)))
                    except Exception as exc:  # noqa: BLE001 - handed to the caller
                        answer.set_exception(exc)
        except Exception as exc:  # noqa: BLE001
            if not ready.done():
                ready.set_exception(exc)
            raise

    def call(self, tool: str, arguments: dict) -> tuple[bool, str]:
        answer: concurrent.futures.Future = concurrent.futures.Future()
        self.loop.call_soon_threadsafe(self.inbox.put_nowait, (tool, arguments, answer))
        return answer.result(timeout=300)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.inbox.put_nowait, None)
        try:
            self.owner.result(timeout=300)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=120)


class Unit:
    """One setup: its workspace, its verifier folder, the reply, and the test's knowledge of the answer."""

    def __init__(self, d: Driver, tmp_path: Path, check: str, name: str = "u") -> None:
        self.d, self.check = d, check
        self.agent: Agent | None = None
        self.dir = tmp_path / name / "workspace"
        self.verifier = tmp_path / name / "verifier"
        self.dir.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(self.dir)], check=True)
        self.reply = d.call("setup", unit=check, dir=str(self.dir), verifier=str(self.verifier))
        assert "error" not in self.reply, self.reply
        [entry] = self.reply["mcp"]
        assert entry["name"] == "office" and entry["server"] == "office"
        self.env = entry["env"]
        # the test knows the seed from the env (as the agent's MCP server does), so it can plan like the driver
        self.plan = mcp_kit.plan(check, self.env["NULLIUS_KIT_SEED"])

    @property
    def prompt(self) -> str:
        return self.reply["prompt"]

    @property
    def log(self) -> Path:
        return self.verifier / "mcp-calls.jsonl"

    def calls(self, *steps: tuple[str, dict]) -> list:
        """Call the tools over stdio, in this unit's one session; each step's result is (is_error, text)."""
        if self.agent is None:
            self.agent = Agent(self.env)
            assert self.agent.tools == sorted(TOOL_NAMES) and len(self.agent.tools) == 20
        return [self.agent.call(tool, arguments) for tool, arguments in steps]

    def close(self) -> None:
        if self.agent is not None:
            self.agent.close()
            self.agent = None

    def score(self, answer: str) -> dict:
        reply = self.d.call("score", unit=self.check, dir=str(self.dir), verifier=str(self.verifier), answer=answer,
                            transcript=[{"role": "user", "text": self.prompt}, {"role": "agent", "text": answer}])
        assert "error" not in reply, reply
        assert isinstance(reply["passed"], bool) and reply["reward"] == (1.0 if reply["passed"] else 0.0)
        assert isinstance(reply["detail"], dict)
        return reply


@pytest.fixture
def make(driver, tmp_path):
    """`make(check, name="u")`: a set-up unit; its MCP session is closed at teardown."""
    made: list[Unit] = []

    def start(check: str, name: str = "u") -> Unit:
        made.append(Unit(driver, tmp_path, check, name))
        return made[-1]

    yield start
    for unit in made:
        unit.close()


def right_calls(plan: dict, check: str) -> list:
    if check == "chain":
        return [(tool, args) for tool, args, _ in plan["hops"]]
    if check == "retry":
        wrong = {"depot_code": plan["arguments"]["depot_code"].lower(), "date": "13/06/2026"}
        return [("book_collection", wrong), ("book_collection", plan["arguments"])]
    if check == "arguments":
        return [("rate_quote", {"destination": plan["arguments"]["destination"].title(), "weight_kg": plan["arguments"]["weight_kg"]})]
    return [(plan["tool"], plan["arguments"])]


def log_lines(unit: Unit) -> list:
    return [json.loads(line) for line in unit.log.read_text().splitlines()]


# ---------------------------------------------------------------- the definition


def test_the_kit_definition_checks_clean_and_names_its_server(nullius_env):
    result = run_cli(["check", str(KIT / "standard.json")], nullius_env, in_process=True)
    assert result.code == 0, result.output
    standard = json.loads((KIT / "standard.json").read_text())
    assert standard["kit"] == {
        "port": "agent.tools/v1", "kit_version": 2, "basic": ["one-tool", "arguments"],
        "skills": {"decoys": standard["kit"]["skills"]["decoys"], "chain": standard["kit"]["skills"]["chain"],
                   "retry": standard["kit"]["skills"]["retry"]},
    }
    assert standard["datasets"]["checks"]["units"] == 5 and standard["limits"]["turn_seconds"] == 300
    assert standard["driver"]["command"] == ["{install}/.venv/bin/python", "{here}/driver.py"]
    assert standard["mcp_servers"]["office"]["command"] == ["{install}/.venv/bin/python", "{here}/mcp_kit.py"]
    assert standard["controls"]["nop"]["source"] == standard["controls"]["oracle"]["source"] == "nullius"
    pins = dict(p.split("==") for p in standard["driver"]["install"]["pip"])
    # this test's interpreter stands in for the kit's environment: the same mcp SDK
    for name in ("mcp", "mcp-types"):
        assert importlib.metadata.version(name) == pins[name] == "2.3.0"


def test_the_engine_fills_the_servers_command_from_the_drivers_install_and_the_kit_folder(tmp_path):
    from nullius_core.definitions.files import load
    from nullius_core.run.agent_unit import mcp_servers

    bench = load(KIT / "standard.json").resolve("agent-tools-v1")
    install = tmp_path / "install"
    prepared = SimpleNamespace(bench=bench, entry=SimpleNamespace(folder=KIT), install_dir=install, bench_route=None)
    setup = {"mcp": [{"name": "office", "server": "office", "env": {"NULLIUS_KIT_SEED": "s", "NULLIUS_MCP_LOG": "/v/l", "NULLIUS_KIT_CHECK": "retry"}}]}
    [entry] = mcp_servers(prepared, setup)
    assert entry.name == "office"
    assert entry.command == str(install / ".venv" / "bin" / "python")
    assert entry.args == [str(KIT / "mcp_kit.py")]
    assert entry.env == setup["mcp"][0]["env"]


def test_units_are_the_checks_in_order(driver):
    assert driver.call("units") == {"units": CHECKS}
    assert "error" in driver.call("units", dataset="other")
    assert "error" in driver.call("setup", unit="nope", dir="/tmp", verifier="/tmp/v")
    assert "error" in driver.call("frobnicate")


# ---------------------------------------------------------------- each check, done right


@pytest.mark.parametrize("check", CHECKS)
def test_the_right_calls_and_answer_pass(make, check):
    unit = make(check)
    results = unit.calls(*right_calls(unit.plan, check))
    if check == "retry":
        assert results[0][0] is True and "upper case" in results[0][1] and "YYYY-MM-DD" in results[0][1]
        assert results[1][0] is False
    else:
        assert not any(error for error, _ in results)
    answer = unit.plan["answer"]
    assert answer in results[-1][1]
    reply = unit.score(answer)
    assert reply["passed"] is True, reply["detail"]
    assert reply["detail"]["expected"] == answer and reply["detail"]["producing_calls"]
    assert unit.score(f"  `{answer}`.\n")["passed"] is True  # quoted, with a period
    # the log is in the verifier folder, one line per call, and the workspace holds nothing but .git
    lines = log_lines(unit)
    assert [line["tool"] for line in lines] == [tool for tool, _ in right_calls(unit.plan, check)]
    assert all({"at", "tool", "arguments", "ok"} <= set(line) and line["check"] == check for line in lines)
    assert [p.name for p in unit.dir.iterdir()] == [".git"]
    assert not any("mcp-calls" in str(p) for p in unit.dir.rglob("*"))


# ---------------------------------------------------------------- the ways to fail


@pytest.mark.parametrize("check", CHECKS)
def test_answering_without_calling_fails_and_nop_fails(make, check):
    unit = make(check)
    reply = unit.score(unit.plan["answer"])  # the right answer, but no call was made
    assert reply["passed"] is False and "no call log" in reply["detail"]["why"]
    assert unit.score("")["passed"] is False


@pytest.mark.parametrize("check", CHECKS)
def test_the_oracle_passes_without_a_log_and_its_mark_is_its_own(driver, make, check):
    unit = make(check)
    other = make(check, name="other")
    answer = driver.call("oracle", unit=check, dir=str(unit.dir), verifier=str(unit.verifier))["answer"]
    assert answer == unit.plan["answer"]
    reply = unit.score(answer)
    assert reply["passed"] is True and "oracle" in reply["detail"]
    assert unit.score("")["passed"] is False
    assert other.score(other.plan["answer"])["passed"] is False  # no oracle op for that setup: the log is needed
    again = driver.call("setup", unit=check, dir=str(unit.dir), verifier=str(unit.verifier))  # a new setup clears the mark
    fresh = mcp_kit.plan(check, again["mcp"][0]["env"]["NULLIUS_KIT_SEED"])["answer"]
    assert unit.score(fresh)["passed"] is False


def test_arguments_need_both_the_string_and_the_integer(make):
    unit = make("arguments")
    args = unit.plan["arguments"]
    [(_, wrong_weight), (_, wrong_town)] = unit.calls(
        ("rate_quote", {"destination": args["destination"], "weight_kg": args["weight_kg"] + 1}),
        ("rate_quote", {"destination": args["destination"] + "x", "weight_kg": args["weight_kg"]}),
    )
    assert unit.plan["answer"] not in wrong_weight + wrong_town  # the answer depends on both
    reply = unit.score(unit.plan["answer"])
    assert reply["passed"] is False and "none accepted with the right arguments" in reply["detail"]["why"]
    off_by_one = re.search(r"[A-Z]{2}-\d{6}", wrong_weight).group(0)
    assert unit.score(off_by_one)["passed"] is False
    unit.calls(("rate_quote", {"destination": args["destination"].upper(), "weight_kg": args["weight_kg"]}))
    assert unit.score(unit.plan["answer"])["passed"] is True  # the town's case is forgiven
    assert unit.score(f"{unit.plan['answer']} (or {off_by_one})")["passed"] is False  # hedging with another quote


def test_decoys_answering_from_a_look_alike_fails(make):
    unit = make("decoys")
    target, args = unit.plan["tool"], unit.plan["arguments"]
    decoy, decoy_value = next(iter(unit.plan["decoys"].items()))
    assert re.fullmatch(r"[A-Z]{2}-\d{6}", decoy_value) and re.fullmatch(r"[A-Z]{2}-\d{6}", unit.plan["answer"])
    [(_, text)] = unit.calls((decoy, args))
    assert decoy_value in text
    reply = unit.score(decoy_value)  # only the decoy was called, and answered from
    assert reply["passed"] is False and target in reply["detail"]["why"]
    unit.calls((target, args))
    assert unit.score(decoy_value)["passed"] is False  # the right tool called too, the decoy's number given
    both = unit.score(f"{unit.plan['answer']} or {decoy_value}")
    assert both["passed"] is False and "look-alike" in both["detail"]["why"]
    assert unit.score(unit.plan["answer"])["passed"] is True  # calling a decoy was allowed


def test_decoys_a_decoy_value_never_called_still_counts_as_a_look_alike(make):
    unit = make("decoys")
    unit.calls((unit.plan["tool"], unit.plan["arguments"]))
    for value in unit.plan["decoys"].values():
        assert unit.score(f"{unit.plan['answer']}, {value}")["passed"] is False


def test_chain_skipping_a_hop_or_breaking_the_order_fails(make):
    unit = make("chain")
    (t1, a1, _), (t2, a2, _), (t3, a3, sign) = unit.plan["hops"]
    unit.calls((t1, a1), (t3, a3))  # the test knows the lead's id; the log shows no hop 2
    reply = unit.score(sign)
    assert reply["passed"] is False and "hop 2" in reply["detail"]["why"]
    unit.calls((t2, a2))  # all three now, but hop 3 before hop 2
    reply = unit.score(sign)
    assert reply["passed"] is False and "hop 3" in reply["detail"]["why"] and "before" in reply["detail"]["why"]
    unit.calls((t3, a3))
    assert unit.score(sign)["passed"] is True


def test_chain_a_wrong_input_leads_elsewhere(make):
    unit = make("chain")
    (t1, a1, depot), (t2, _, lead), (t3, _, sign) = unit.plan["hops"]
    other_depot = ("AAA-00" if depot != "AAA-00" else "AAA-01")
    results = unit.calls((t1, a1), (t2, {"depot_code": other_depot}))
    wrong_lead = re.search(r"S-\d{5}", results[1][1]).group(0)
    assert wrong_lead != lead
    [(_, text)] = unit.calls((t3, {"staff_id": wrong_lead}))
    wrong_sign = re.search(r"[A-Z][a-z]+-\d{2}", text.split(":")[-1]).group(0)
    assert wrong_sign != sign and unit.score(wrong_sign)["passed"] is False


def test_retry_needs_the_refusal_and_the_corrected_call(make):
    unit = make("retry")
    args = unit.plan["arguments"]
    assert args["depot_code"].lower() in unit.prompt and args["depot_code"] not in unit.prompt
    [(error, text)] = unit.calls(("book_collection", {"depot_code": args["depot_code"].lower(), "date": args["date"]}))
    assert error and "upper case" in text
    reply = unit.score(unit.plan["answer"])  # refused, never retried
    assert reply["passed"] is False and "no accepted booking" in reply["detail"]["why"]
    [(error, text)] = unit.calls(("book_collection", {"depot_code": args["depot_code"], "date": "2026/01/13"}))
    assert error and "YYYY-MM-DD" in text and "upper case" not in text  # it says what is still wrong
    assert unit.score(unit.plan["answer"])["passed"] is False

    right_first = make("retry", name="right-first")
    [(error, _)] = right_first.calls(("book_collection", right_first.plan["arguments"]))
    assert error is False
    reply = right_first.score(right_first.plan["answer"])
    assert reply["passed"] is False and "no refused call" in reply["detail"]["why"]


def test_a_log_line_the_office_would_not_have_written_is_not_trusted(make):
    unit = make("one-tool")
    unit.log.parent.mkdir(parents=True, exist_ok=True)
    forged = {"at": "x", "check": "one-tool", "tool": "dispatch_passphrase", "arguments": {}, "ok": True,
              "result": "Today's dispatch passphrase: forged"}
    unit.log.write_text(json.dumps(forged) + "\nnot json\n")
    reply = unit.score("forged")
    assert reply["passed"] is False and reply["detail"]["calls"][0]["not_trusted"]
    assert reply["detail"]["log_notes"]


# ---------------------------------------------------------------- seeds, prompts, the log's place


@pytest.mark.parametrize("check", CHECKS)
def test_a_second_setup_gives_other_answers_and_no_prompt_names_a_tool_or_the_seed(make, check):
    first = make(check, name="first")
    second = make(check, name="second")
    assert first.env["NULLIUS_KIT_SEED"] != second.env["NULLIUS_KIT_SEED"]
    assert first.plan["answer"] != second.plan["answer"]
    for unit in (first, second):
        seed = unit.env["NULLIUS_KIT_SEED"]
        assert re.fullmatch(r"[0-9a-f]{32}", seed)
        assert seed not in unit.prompt and not SEEDLIKE.search(unit.prompt)
        assert unit.plan["answer"] not in unit.prompt
        for name in TOOL_NAMES:
            assert name not in unit.prompt, name
        assert unit.env["NULLIUS_KIT_CHECK"] == check
        assert unit.env["NULLIUS_MCP_LOG"] == str(unit.verifier / "mcp-calls.jsonl")
        assert "final message" in unit.prompt


def test_the_first_setups_calls_do_not_score_the_second(driver, make):
    unit = make("one-tool")
    unit.calls(("dispatch_passphrase", {}))
    old = unit.plan["answer"]
    again = driver.call("setup", unit="one-tool", dir=str(unit.dir), verifier=str(unit.verifier))
    assert not unit.log.exists()  # the stale log is gone
    new = mcp_kit.plan("one-tool", again["mcp"][0]["env"]["NULLIUS_KIT_SEED"])["answer"]
    assert new != old
    assert unit.score(old)["passed"] is False


def test_setup_refuses_a_verifier_inside_the_workspace_or_none(driver, tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    inside = driver.call("setup", unit="one-tool", dir=str(folder), verifier=str(folder / "verifier"))
    assert "error" in inside and "inside the workspace" in inside["error"]
    assert "error" in driver.call("setup", unit="one-tool", dir=str(folder))
    assert "error" in driver.call("setup", unit="one-tool", dir=str(folder), verifier="relative/verifier")


def test_the_server_refuses_to_start_without_its_seed_and_log(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NULLIUS_")}
    done = subprocess.run([sys.executable, str(KIT / "mcp_kit.py")], env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "NULLIUS_KIT_SEED" in done.stderr
