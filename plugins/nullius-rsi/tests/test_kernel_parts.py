"""The kernel's parts in-process: the reply grammar, the harness surface, blind ids."""

import json

import pytest

from nanorsi import harness as hz
from nanorsi.model import ModelError, fence, parse_reply
from nanorsi.select import anonymise
from nanorsi.tasks import Task


def test_the_reply_grammar_reads_a_header_and_fenced_bodies():
    text = ('Sure.\n{"component": "memory.md"}\n```memory.md\nline 1\n\nline 3\n```\n'
            '````scripts/x.py\nprint("```")\n````\n')
    header, bodies = parse_reply(text)
    assert header == {"component": "memory.md"}
    assert bodies == {"memory.md": "line 1\n\nline 3\n", "scripts/x.py": 'print("```")\n'}
    for bad, why in [("no header", "no JSON header"), ('{"a": 1', "not JSON"), ("[1]\n{1}", "not JSON"),
                     ('{"a": 1}\n```m.md\nopen', "no closing fence")]:
        with pytest.raises(ModelError, match=why):
            parse_reply(bad)


def test_fence_survives_backticks_inside():
    body = "```\ncode\n```\n"
    header, bodies = parse_reply('{"x": 1}\n' + fence("skills/a/SKILL.md", body))
    assert bodies["skills/a/SKILL.md"] == body


def test_harness_validation():
    base = {"systemprompt.md": "Be careful.\n"}
    assert hz.validate(base) == []
    assert "all empty" in hz.validate({"memory.md": " \n"})[0]
    assert "at most 24000" in hz.validate({"memory.md": "x" * 12_000, "guardrails.md": "y" * 12_001})[0]
    assert "describe the skill" in hz.validate({**base, "skills/s/SKILL.md": "\nbody"})[0]
    assert "not valid Python" in hz.validate({**base, "scripts/s.py": "def ("})[0]
    assert "not a harness component" in hz.validate({**base, "skills/S!/SKILL.md": "d"})[0]
    assert "not a harness component" in hz.validate({**base, "subagents/a.md": "d"})[0]


def test_render_always_on_shows_files_the_skill_index_and_the_script_roster():
    h = {"systemprompt.md": "Be careful.\n", "memory.md": "", "skills/totals/SKILL.md": "Sum a CSV\nsteps\n",
         "scripts/sum.py": "print(1)\n"}
    text = hz.render_always_on(h)
    assert "## systemprompt.md\n\nBe careful." in text and "memory.md" not in text
    assert "- totals: Sum a CSV" in text and "steps" not in text  # skills load on demand
    assert "- scripts/sum.py" in text and "print(1)" not in text
    assert hz.diff(h, hz.apply(h, "memory.md", "new\n")).startswith("--- a/memory.md\n+++ b/memory.md")


def test_blind_ids_are_a_seeded_shuffle_of_the_task():
    finals = [{"label": f"agg{i}"} for i in range(1, 7)]
    task = Task("t", "do", {}, ("a.md",))
    first = anonymise(task, 0, finals)
    assert list(first) == [f"F{i}" for i in range(1, 7)]
    assert first == anonymise(task, 0, list(reversed(finals)))  # the order given does not matter
    orders = {tuple(r["label"] for r in anonymise(task, seed, finals).values()) for seed in range(8)}
    assert len(orders) > 1  # the seed shuffles


def test_the_loopback_agent_loads_a_skill_on_demand(fake_model, tmp_path):
    from kernel_world import header
    from nanorsi.model import Client
    from nanorsi.runner import rollout

    key = tmp_path / "key"
    key.write_text("k\n")
    fake_model.use({"rules": [
        {"when": {"contains": "Quote the source line"},
         "reply": {"text": header({"action": "write_deliverable", "name": "a.md"}, **{"a.md": "quoted\n"})}},
        {"when": {"contains": "wrote a.md"}, "reply": {"text": header({"action": "done"})}},
        {"when": {"contains": "nanorsi:agent task"},
         "reply": {"text": header({"action": "read", "name": "skills/documents/SKILL.md"})}},
    ]})
    cfg = {"runner": {"kind": "loopback", "max_steps": 5}}
    model = {"base_url": fake_model.openai_base_url, "name": "m", "temperature": 0.0, "max_tokens": 100,
             "retries": 0, "timeout": 30.0}
    h = {"systemprompt.md": "Be careful.\n",
         "skills/documents/SKILL.md": "Answer from documents\nQuote the source line.\n"}
    task = Task("t", "do", {"d.txt": "x"}, ("a.md",))
    r = rollout(cfg, tmp_path, task, h, "base1", tmp_path / "r", Client(model, key))
    assert (r["ok"], r["delivered"], r["deliverables"], r["usage"]["calls"]) == (True, True, {"a.md": "quoted\n"}, 3)
    assert "- documents: Answer from documents" in fake_model.requests[0].body["messages"][0]["content"]
    assert "Quote the source line" not in fake_model.requests[0].body["messages"][0]["content"]
    assert (tmp_path / "r" / "deliverables" / "a.md").read_text() == "quoted\n"
    assert json.loads((tmp_path / "r" / "result.json").read_text())["delivered"] is True


def test_compose_is_held_to_its_rules():
    from nanorsi.propose import _decide

    base = {"systemprompt.md": "Be careful.\n"}
    edits = {
        "inv1": {"label": "inv1", "component": "memory.md", "verdict": "mitigates", "observation": "checks figures",
                 "harness": {**base, "memory.md": "CHECKLIST\n"}},
        "dom1": {"label": "dom1", "component": "memory.md", "verdict": "mitigates", "observation": "quotes",
                 "harness": {**base, "memory.md": "QUOTE\n"}},
        "inv2": {"label": "inv2", "component": "guardrails.md", "verdict": "neutral", "observation": "same",
                 "harness": {**base, "guardrails.md": "x\n"}},
    }
    adopted = _decide({"decision": "adopt", "edits": ["inv1"], "observation": "the checklist helps"}, base, edits)
    assert adopted["harness"] == {**base, "memory.md": "CHECKLIST\n"}
    assert adopted["evidence"] == {"inv1": "checks figures"}
    for header, why in [
        ({"decision": "adopt", "edits": ["inv1"], "observation": ""}, "must name its observation"),
        ({"decision": "adopt", "edits": ["inv2"], "observation": "o"}, "only mitigating edits"),
        ({"decision": "adopt", "edits": ["inv1", "dom1"], "observation": "o"}, "adopt takes exactly one"),
        ({"decision": "merge", "edits": ["inv1", "dom1"], "observation": "o"}, "on different components"),
        ({"decision": "adopt", "edits": ["inv9"], "observation": "o"}, "names no contrasted edit"),
        ({"decision": "take all", "edits": [], "observation": "o"}, "is not adopt, merge or keep"),
    ]:
        kept = _decide(header, base, edits)
        assert kept["decision"] == "keep" and kept["harness"] == base and why in kept["error"]


def test_a_broken_library_line_is_named(tmp_path):
    from nanorsi import NanoError
    from nanorsi.experience import library

    path = tmp_path / "library.jsonl"
    path.write_text('{"task": "t", "lesson": "check figures"}\n\n{"task": \n')
    with pytest.raises(NanoError, match=r"library.jsonl: line 3: not JSON"):
        library(path)
    path.write_text('{"task": "t", "lesson": "check figures"}\n')
    assert library(path) == [{"task": "t", "lesson": "check figures"}]


def test_the_client_retries_a_bounded_number_of_times_and_reads_the_key_each_call(fake_model, tmp_path):
    from nanorsi.model import Client

    key = tmp_path / "key"
    key.write_text("first\n")
    model = {"base_url": fake_model.openai_base_url, "name": "m", "temperature": 0.0, "max_tokens": 100,
             "retries": 1, "timeout": 30.0}
    fake_model.use({"rules": [{"when": {"call": 1}, "times": 1, "reply": {"fault": {"status": 500}}}],
                    "default": {"text": '{"ok": true}'}})
    reply = Client(model, key).chat([{"role": "user", "content": "hi"}])
    assert parse_reply(reply.text)[0] == {"ok": True} and reply.usage["calls"] == 1
    assert [r.status for r in fake_model.requests] == [500, 200]
    key.write_text("second\n")  # a key replaced between calls is the one sent
    fake_model.use({"rules": [], "default": {"fault": {"status": 500}}})
    with pytest.raises(ModelError, match=r"after 1 attempt\(s\): HTTP 500"):
        Client({**model, "retries": 0}, key).chat([{"role": "user", "content": "hi"}])
    assert fake_model.requests[-1].headers["authorization"] == "Bearer second"
    fake_model.use({"rules": [], "default": {"fault": {"status": 401}}})
    with pytest.raises(ModelError, match="refused: HTTP 401"):  # not retried
        Client(model, key).chat([{"role": "user", "content": "hi"}])
    assert [r.status for r in fake_model.requests][-2:] == [500, 401]
