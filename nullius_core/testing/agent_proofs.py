"""What a plugin's test of a real agent needs to prove its ports with `nullius conform` against the fake model.

    with agent_world(root, installs, "fast-agent", "nullius_agent_fast_agent.player", "fake-fast-agent", KEY) as world:
        code, rows, stderr = world.conform("--port", "agent.task/v1")

The agent is installed into `installs` (the session's `nullius_installs`),
with pip's own cache when the agent is a Python package; every other Nullius
location lies under `root`. The provider's key goes to Nullius, for the relay
(the openai provider, pointed at the fake model); the agent sees only its
route's token. Variables of the machine that would reach a model
(`OPENAI_*`, `ANTHROPIC_*` and those named in `clear`) are not passed on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import attrs
import pytest

from nullius_core.testing.fake_model import running_fake_model
from nullius_core.testing.fake_model.sync import SyncFakeModel
from nullius_core.testing.helpers import CliResult, isolated_env, processes_under, run_cli

AGENT_SECONDS = 900  # the first conform installs the agent from its registry


@attrs.frozen
class AgentWorld:
    env: dict[str, str]
    fake: SyncFakeModel
    root: Path
    agent: str
    model: str
    seconds: float = AGENT_SECONDS

    @property
    def jobs(self) -> Path:
        return Path(self.env["NULLIUS_JOBS_DIR"])

    def cli(self, args: list[str]) -> CliResult:
        """`nullius ARGS --model M --provider openai --base-url <the fake model>`; an install that failed fails the test."""
        result = run_cli([*args, "--model", self.model, "--provider", "openai", "--base-url", self.fake.openai_base_url],
                         self.env, timeout=self.seconds)
        if "cannot be installed" in result.output:
            pytest.fail(f"{self.agent} could not be installed from its registry:\n" + result.output[-3000:])
        return result

    def conform(self, *args: str) -> tuple[int, dict[str, dict], str]:
        """`nullius conform AGENT --unsandboxed --json ARGS`: its exit status, its rows by port, its stderr."""
        result = self.cli(["conform", self.agent, "--unsandboxed", "--json", *args])
        assert result.stdout.strip(), result.output
        return result.code, {r["port"]: r for r in json.loads(result.stdout)}, result.stderr

    def offers(self) -> set[str]:
        """The ports `nullius list` says the agent offers."""
        listed = json.loads(run_cli(["list", "--json"], self.env).stdout)
        return set(next(a for a in listed["agents"] if a["ref"] == self.agent)["offers"])


@contextmanager
def agent_world(root: Path, installs: Path, agent: str, player: str, model: str, key: str,
                clear: Iterable[str] = ()) -> Iterator[AgentWorld]:
    """An isolated home, the fake model serving `player` (`module:respond`), and the key the relay holds."""
    cache = Path.home() / ".cache" / "pip"  # the user's pip cache, looked up before HOME is the test's
    env = isolated_env(root, standard_dir=installs)
    for name in [k for k in env if k.startswith(("OPENAI_", "ANTHROPIC_", *clear))]:
        del env[name]
    env["PIP_CACHE_DIR"] = str(cache)
    env["OPENAI_API_KEY"] = key  # the relay's, for the openai provider; never the agent's
    with running_fake_model(player) as fake:
        yield AgentWorld(env=env, fake=fake, root=root, agent=agent, model=model)
    assert processes_under(root) == []


def files_holding(folder: Path, needle: bytes) -> list[str]:
    """The regular files under folder that hold needle (a key that must not leak)."""
    return [str(p) for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and needle in p.read_bytes()]


def trial_calls(jobs: Path) -> dict[Path, list[dict]]:
    """Each trial's relay record of its agent's model calls (agent/calls.jsonl), for every job under jobs."""
    return {trial: [json.loads(line) for line in (trial / "agent" / "calls.jsonl").read_text().splitlines()]
            for trial in (p.parent for p in jobs.glob("*/*/result.json"))}


def offered_tools(requests: Iterable) -> set[str]:
    """The names of every tool offered in the recorded Chat Completions requests."""
    return {t["function"]["name"] for r in requests for t in r.body.get("tools") or []}


def called_tools(requests: Iterable) -> set[str]:
    """The names of every tool call the model made, as the agent sent them back in later Chat Completions requests."""
    return {c["function"]["name"] for r in requests for m in r.body.get("messages") or [] for c in m.get("tool_calls") or []}


def workspace_kit_done(job: Path) -> None:
    """The workspace kit's job left what its checks asked for: the file written, the bug fixed as README.md says."""
    written = json.loads((job / "write-file" / "verifier" / "score.json").read_text())["detail"]
    assert (job / "write-file" / ".work" / "workspace" / written["path"]).read_text().strip() == written["expected"]
    fixed = json.loads((job / "fix-bug" / "verifier" / "score.json").read_text())["detail"]["expected"]
    charge = fixed.split("sum(prices) + ")[1].split(",")[0]
    assert f"return sum(prices) + {charge}\n" in (job / "fix-bug" / ".work" / "workspace" / "ledger.py").read_text()


def prove_ports(world: AgentWorld, ports: set[str], version: str, key: str, skills: set[str] = frozenset()) -> dict[str, dict]:
    """`nullius conform` of `ports` with the player being served, and what every proof of a real agent must show.

    Each port proven on this model and version, the tools kit's `skills`
    shown, the workspace kit's files as asked, the chain's three calls in the
    office's log, every model call of every trial sent as the model and
    answered 200, the relay's `key` on every upstream request and in no file
    of the jobs or the HOME, no process left. The rows by port, for the
    agent's own checks.
    """
    world.fake.clear()
    code, rows, stderr = world.conform(*(a for port in sorted(ports) for a in ("--port", port)))
    assert code == 0, stderr
    assert {p for p, r in rows.items() if r["proven"]} == ports, rows
    assert all(rows[p]["model"] == world.model and rows[p]["version"] == version for p in ports)
    if "agent.tools/v1" in ports:
        assert {s for s, v in rows["agent.tools/v1"]["skills"].items() if v["ok"]} == skills, rows["agent.tools/v1"]
        chain = world.jobs / rows["agent.tools/v1"]["job"] / "chain" / "verifier" / "mcp-calls.jsonl"
        assert [json.loads(line)["tool"] for line in chain.read_text().splitlines()] == ["locate_parcel", "shift_lead", "radio_call_sign"]
    if "agent.workspace/v1" in ports:
        workspace_kit_done(world.jobs / rows["agent.workspace/v1"]["job"])
    for trial, calls in trial_calls(world.jobs).items():
        assert calls and all(c["model_sent"] == world.model and c["status"] == 200 for c in calls), (trial, calls)
    requests = list(world.fake.requests)
    assert requests and all(r.path == "/v1/chat/completions" and r.body["model"] == world.model for r in requests)
    assert all(r.headers.get("authorization") == f"Bearer {key}" for r in requests)
    assert files_holding(world.jobs, key.encode()) == [] and files_holding(world.root / "home", key.encode()) == []
    assert processes_under(world.root) == []
    assert world.offers() == ports
    return rows


def wrong_answers_prove_nothing(world: AgentWorld, wrong: str, right: str, port: str = "agent.tools/v1") -> None:
    """A model that answers wrongly (the player's `respond_wrongly`) proves no port: the kit can fail."""
    world.fake.use(wrong)
    try:
        code, rows, _ = world.conform("--port", port)
    finally:
        world.fake.use(right)
    assert code == 1 and not rows[port]["proven"] and rows[port]["passed"].startswith("0/"), rows[port]
