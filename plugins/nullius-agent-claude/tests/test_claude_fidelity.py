"""`nullius fidelity claude`: Claude Agent ACP against Claude Code's own CLI (`cli.js --print`, the same bundled cli.js), the fake model playing."""

from __future__ import annotations

import json

import pytest

from nullius_core.testing import files_holding, isolated_env, run_cli
from nullius_core.testing.fake_model import running_fake_model

PLAYER = "nullius_agent_claude.player"
KEY = "sk-ant-test-held-by-the-relay-0123456789abcdef"
MODEL = "fake-claude"
PROMPT_TEXT = [b"create the file notes/", b"does not do what README.md says it must"]

pytestmark = pytest.mark.slow


def test_claude_over_acp_is_compared_with_claude_print(tmp_path, nullius_installs):
    env = {**isolated_env(tmp_path, standard_dir=nullius_installs), "ANTHROPIC_API_KEY": KEY}
    env.pop("ANTHROPIC_AUTH_TOKEN", None)
    env.pop("ANTHROPIC_BASE_URL", None)
    with running_fake_model(f"{PLAYER}:respond") as fake:
        result = run_cli(["fidelity", "claude", "--model", MODEL, "--provider", "anthropic", "--base-url", fake.openai_base_url,
                          "--unsandboxed", "--json"], env, timeout=600)
    verdict = json.loads(result.stdout.strip().splitlines()[-1])
    assert verdict["passed"] == {"acp": "4/4", "cli": "4/4"}, result.output  # both ways did the kit's work
    # What Claude Agent ACP 0.23.1 changes against Claude Code 2.1.83's --print: its own system prompt, no
    # AskUserQuestion tool, and the prompt sent as another first message; Claude Code's metadata.user_id is per session.
    assert result.code == 1 and verdict["verdict"] == "differs", result.output
    assert {"system", "tools", "tools[AskUserQuestion]", "write-file: messages[0]", "fix-bug: messages[0]"} == set(verdict["fields"])
    assert verdict["noise"] == ["metadata.user_id"]
    proofs = json.loads((tmp_path / "config" / "nullius" / "catalogue" / "proofs" / "agents" / "claude.json").read_text())
    assert proofs["records"][0]["proven"]["fidelity"]["fields"] == verdict["fields"]
    for needle in PROMPT_TEXT:
        assert not files_holding(tmp_path, needle), needle
