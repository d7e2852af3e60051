"""Fit: every needed port offered by a proof that holds for this version, every needed skill shown."""

from __future__ import annotations

import json

from nullius_core.definitions import Agent, Capability, Standard, structure
from nullius_core.ports import fit
from nullius_core.ports.model import Port
from nullius_core.definitions import Kit

PORTS = {
    "agent.task/v1": Port(name="agent.task/v1", contract="c", kit=Kit(port="agent.task/v1", basic=["a", "b", "c"])),
    "agent.tools/v1": Port(
        name="agent.tools/v1",
        contract="c",
        kit=Kit(port="agent.tools/v1", basic=["one-tool", "arguments"], kit_version=2, skills={"decoys": "", "chain": "", "retry": ""}),
    ),
    "cap.memory/v1": Port(name="cap.memory/v1", contract="c", kit=Kit(port="cap.memory/v1", basic=["recall"])),
}


def bench(needs, skills=None, family="agent"):
    return structure(
        {"family": family, "needs": needs, "needs_skills": skills or {}, "datasets": {"t": {"units": 1}}, "kit": {"port": needs[0], "basic": ["x"]}},
        Standard,
    ).resolve("b")


def agent(proven, version="1.0.0", **extra):
    data = {"schema": "nullius.agent/v1", "upstream": {"npm": "a", "version": version}, "start": ["a"], "proven": proven, **extra}
    return structure(data, Agent)


def reasons(b, a, version=None):
    return list(fit(b, a.resolve("a", version), PORTS).reasons)


TOOLS_V2 = {"passed": "2/2", "kit_version": 2, "skills": {"decoys": {"passed": "1/1", "ok": True}, "chain": {"passed": "0/1", "ok": False}}}


def test_every_needed_port_offered():
    b = bench(["agent.task/v1", "agent.tools/v1"])
    assert reasons(b, agent({"agent.task/v1": {"passed": "3/3"}, "agent.tools/v1": TOOLS_V2})) == []
    assert reasons(b, agent({"agent.task/v1": {"passed": "3/3"}})) == ["missing port agent.tools/v1"]
    assert reasons(b, agent({})) == ["missing port agent.task/v1", "missing port agent.tools/v1"]


def test_a_failed_proof_offers_nothing():
    b = bench(["agent.task/v1"])
    assert reasons(b, agent({"agent.task/v1": {"passed": "2/3"}})) == ["missing port agent.task/v1 (its proof failed: 2/3)"]
    assert reasons(b, agent({"agent.task/v1": {"passed": "3/3", "ok": False}})) == ["missing port agent.task/v1 (its proof failed: 3/3)"]


def test_skills_needed_must_be_shown():
    b = bench(["agent.tools/v1"], {"agent.tools/v1": ["decoys", "chain"]})
    assert reasons(b, agent({"agent.tools/v1": TOOLS_V2})) == ["skill chain of agent.tools/v1 not shown"]


def test_a_proof_from_before_skills_shows_every_skill_and_reads_as_kit_v1():
    b = bench(["agent.tools/v1"], {"agent.tools/v1": ["decoys", "chain", "retry"]})
    old = agent({"agent.tools/v1": {"passed": "1/1"}})
    assert reasons(b, old) == []
    assert old.resolve("a").proven["agent.tools/v1"].kit_version is None  # read as kit v1


def test_a_proof_on_another_upstream_version_does_not_count():
    b = bench(["agent.task/v1"])
    a = agent({"agent.task/v1": {"passed": "3/3", "version": "0.9.0"}}, version="1.0.0")
    assert reasons(b, a) == ["missing port agent.task/v1 (proven on upstream version 0.9.0, this is 1.0.0)"]


def test_a_version_runs_nothing_until_proven():
    data = {
        "schema": "nullius.agent/v1",
        "start": ["a"],
        "versions": {
            "default": "2.0.0",
            "2.0.0": {"upstream": {"npm": "a", "version": "2.0.0"}, "proven": {"agent.task/v1": {"passed": "3/3"}}},
            "2.1.0": {"upstream": {"npm": "a", "version": "2.1.0"}},
        },
    }
    a = structure(data, Agent)
    b = bench(["agent.task/v1"])
    assert fit(b, a.resolve("a"), PORTS).participant == "a@2.0.0"
    assert reasons(b, a) == []
    assert reasons(b, a, "2.1.0") == ["missing port agent.task/v1"]


def test_families_do_not_mix():
    cap = structure(
        {"schema": "nullius.capability/v1", "upstream": {"pypi": "m", "version": "1"}, "start": ["m"], "proven": {"cap.memory/v1": {"passed": "1/1"}}},
        Capability,
    )
    memory = bench(["cap.memory/v1"], family="capability")
    assert fit(memory, cap.resolve("m"), PORTS).ok
    task = bench(["agent.task/v1"])
    assert fit(task, cap.resolve("m"), PORTS).reasons == ("a capability cannot run an agent benchmark",)


def test_an_option_value_with_its_own_ports_needs_them_instead():
    """`options.NAME.needs.VALUE.ports`: a run with that value needs those ports, not `needs`; a bad declaration is refused."""
    import pytest

    from nullius_core.definitions import DefinitionError

    def with_option(ports):
        return structure({"needs": ["agent.task/v1"], "datasets": {"t": {"units": 1}}, "kit": {"port": "agent.task/v1", "basic": ["x"]},
                          "options": {"answer": {"summary": "s", "values": ["task", "workspace"], "default": "task",
                                                 "needs": {"workspace": {"ports": ports}}}}}, Standard).resolve("b")

    b = with_option(["agent.tools/v1"])
    task_only = agent({"agent.task/v1": {"passed": "3/3"}}).resolve("a")
    assert fit(b, task_only, PORTS).ok and fit(b, task_only, PORTS, {"answer": "task"}).ok
    assert fit(b, task_only, PORTS, {"answer": "workspace"}).reasons == ("missing port agent.tools/v1",)
    for bad, says in (([], "expected a non-empty list of port names"), (["cap.memory/v1"], "expected a port of the agent family")):
        with pytest.raises(DefinitionError) as caught:
            with_option(bad)
        assert "$.options.answer.needs.workspace.ports" in caught.value.render() and says in caught.value.render()


def test_fit_bfcl_names_the_agents_that_showed_its_tools_skills(nullius_cli):
    """BFCL needs agent.tools/v1 with decoys and chain (and agent.conversation/v1 for its multi-turn turns):
    claude, codex, fast-agent, gemini, kilo, kimi, opencode, qwen, vibe and the reference agent have shown them;
    copilot proves no agent.tools/v1."""
    for ref in ("bfcl", "bfcl@2026.3.23-irrelevance"):
        got = nullius_cli("fit", ref, "--json", in_process=True)
        assert got.code == 0, got.output
        data = json.loads(got.stdout)
        assert data["needs_skills"] == {"agent.tools/v1": ["decoys", "chain"]}
        assert sorted(data["fits"]) == ["claude", "codex", "fast-agent", "gemini", "kilo", "kimi", "opencode", "qwen",
                                        "reference", "vibe"], data["fits"]
        refused = {r["participant"]: r["reasons"] for r in data["refused"]}
        assert refused["copilot"] == ["missing port agent.tools/v1"]
