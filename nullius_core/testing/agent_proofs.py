"""A real agent's proofs in a test: its home, the fake model playing its kits, `nullius conform` and runs through the CLI.

For the tests of agent distributions (plugins/nullius-agent-*). `agent_world`
makes an isolated home whose installs go to a shared STANDARD_DIR (the
session's `nullius_installs`), gives Nullius the provider's key (which the
relay keeps) and serves the agent's player on a fake model; `AgentWorld`
runs the CLI against it and checks what every trial must show.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest

from nullius_core.testing.chat import read_chat
from nullius_core.testing.fake_model import SyncFakeModel, running_fake_model
from nullius_core.testing.helpers import CliResult, files_holding, isolated_env, processes_under, run_cli

CLI_SECONDS = 900  # a first run installs the agent from its registry, and a kit's environment from PyPI


@attrs.frozen
class Wire:
    """A provider as the fake model stands in for it: the variable Nullius reads its key from, the fake model's URL
    for it, and how the relay sends the key upstream."""

    key_env: str
    base_url: str  # the attribute of the fake model
    header: str
    value: str  # the header's value, {} the key


WIRES = {
    "openai": Wire("OPENAI_API_KEY", "openai_base_url", "authorization", "Bearer {}"),
    "gemini": Wire("GEMINI_API_KEY", "base_url", "x-goog-api-key", "{}"),  # Gemini's paths start at /v1beta
}


@attrs.frozen
class AgentWorld:
    agent: str  # its key in the catalogue
    model: str  # the name the fake model is asked by; the proofs name it
    key: str  # the provider's key, given to Nullius only
    env: dict[str, str]
    fake: SyncFakeModel
    root: Path
    provider: str = "openai"  # a key of WIRES

    @property
    def jobs(self) -> Path:
        return Path(self.env["NULLIUS_JOBS_DIR"])

    def cli(self, args: list[str]) -> CliResult:
        """`nullius ARGS` with the run's model, provider and the fake model as its base URL."""
        base_url = getattr(self.fake, WIRES[self.provider].base_url)
        result = run_cli([*args, "--model", self.model, "--provider", self.provider, "--base-url", base_url],
                         self.env, timeout=CLI_SECONDS)
        if "cannot be installed" in result.output:
            pytest.fail(f"{self.agent} could not be installed:\n" + result.output[-3000:])
        return result

    def conform(self, *args: str) -> tuple[int, dict[str, dict[str, Any]], str]:
        """`nullius conform AGENT --unsandboxed --json ARGS`: its exit status, its rows by port, its stderr."""
        result = self.cli(["conform", self.agent, "--unsandboxed", "--json", *args])
        assert result.stdout.strip(), result.output[-3000:]
        return result.code, {row["port"]: row for row in json.loads(result.stdout)}, result.stderr

    def prove(self, ports: set[str], version: str) -> dict[str, dict[str, Any]]:
        """One `nullius conform` of every port: exactly `ports` proven on `version`, against this model, with every
        skill shown, and the kits' work really done (`assert_kits_done`). Its rows by port."""
        started = time.monotonic()
        code, rows, stderr = self.conform()
        print(f"conform of every port of {self.agent} took {time.monotonic() - started:.0f} s")
        assert code == 0, stderr[-3000:]
        assert {p for p, r in rows.items() if r["proven"]} == ports, rows
        assert rows["agent.browser/v1"]["skipped"] == "the port has no kit yet"
        assert all(rows[p]["model"] == self.model and rows[p]["version"] == version for p in ports)
        assert all(skill["ok"] for skill in rows["agent.tools/v1"]["skills"].values()), rows["agent.tools/v1"]
        self.assert_kits_done(rows)
        listed = json.loads(run_cli(["list", "--json"], self.env).stdout)
        assert set(next(a for a in listed["agents"] if a["ref"] == self.agent)["offers"]) == ports
        return rows

    def assert_kits_done(self, rows: dict[str, dict[str, Any]]) -> None:
        """The workspace kit's files are really there, and the office's own log shows each tools check's calls."""
        job = self.jobs / rows["agent.workspace/v1"]["job"]
        written = score(job, "write-file")["detail"]
        assert (job / "write-file" / ".work" / "workspace" / written["path"]).read_text() == written["expected"] + "\n"
        charge = score(job, "fix-bug")["detail"]["expected"].split("sum(prices) + ")[1].split(",")[0]
        assert f"return sum(prices) + {charge}\n" in (job / "fix-bug" / ".work" / "workspace" / "ledger.py").read_text()
        tools = self.jobs / rows["agent.tools/v1"]["job"]
        for check in ("one-tool", "arguments", "decoys", "chain", "retry"):
            assert score(tools, check)["passed"] and score(tools, check)["detail"]["calls"], check

    def assert_clean(self, trials: Iterable[Path]) -> None:
        """Every trial asked the model through the relay as the run's model; the key is in no file; nothing runs on."""
        for trial in trials:
            calls = [json.loads(line) for line in (trial / "agent" / "calls.jsonl").read_text().splitlines()]
            assert calls and all(c["model_sent"] == self.model and c["status"] == 200 for c in calls), (trial, calls)
        for folder in (self.jobs, Path(self.env["XDG_CONFIG_HOME"])):
            assert files_holding(folder, self.key.encode()) == []
        wire = WIRES[self.provider]
        assert all(r.headers.get(wire.header) == wire.value.format(self.key) for r in self.fake.requests)  # the relay's, upstream
        assert processes_under(self.root) == []


@contextmanager
def agent_world(root: Path, installs: Path, agent: str, model: str, key: str, player: str,
                drop: tuple[str, ...] = (), provider: str = "openai") -> Iterator[AgentWorld]:
    """An isolated home under root (installs under `installs`), the key for `provider` (openai or gemini), and the
    fake model serving `player` (`module:function`). Variables starting with `drop` (the agent's own) are removed."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.fail(f"node and npm must be on PATH: {agent} is installed from the npm registry")
    env = isolated_env(root, standard_dir=installs)
    for name in [k for k in env if k.startswith(("OPENAI_", "ANTHROPIC_", *drop))]:
        del env[name]
    env[WIRES[provider].key_env] = key  # the relay's, for the provider; never the agent's
    with running_fake_model(player) as fake:
        yield AgentWorld(agent=agent, model=model, key=key, env=env, fake=fake, root=root, provider=provider)
    assert processes_under(root) == []


def score(job: Path, unit: str) -> dict[str, Any]:
    """A kit unit's score.json."""
    return json.loads((job / unit / "verifier" / "score.json").read_text())


def tools_seen(requests: Iterable[Any]) -> tuple[set[str], set[str]]:
    """The tools an agent offered its model in recorded Chat Completions requests, and those the model called (as the
    agent sent the calls back)."""
    requests = list(requests)
    offered = {t.get("function", {}).get("name", "") for r in requests for t in r.body.get("tools") or []}
    return offered, {tool for r in requests for tool, _ in read_chat(r.body).calls}
