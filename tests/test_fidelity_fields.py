"""What `nullius fidelity` keeps of a request, and how it tells a difference from noise (fidelity_fields.py)."""

from __future__ import annotations

import json

from nullius_core.run.fidelity_fields import compare, distilled

PROMPT = "In the current folder, create the file notes/word.txt"


def body(effort: str = "medium", system: str = "You are Codex.", cache: str = "s1", extra: list | None = None) -> dict:
    return {"model": "m", "instructions": system, "reasoning": {"effort": effort, "summary": "auto"}, "include": ["reasoning.encrypted_content"],
            "tools": [{"type": "function", "name": "exec_command", "parameters": {}}], "prompt_cache_key": cache,
            "client_metadata": {"session": cache}, "input": [{"role": "user", "content": PROMPT}, *(extra or [])]}


def run(**kw) -> dict:
    return {"u": distilled([body(**kw), body(**kw, extra=[{"type": "function_call_output", "output": "ok"}])])}


def test_the_prompt_is_kept_as_digests_and_the_session_left_out():
    kept = distilled([body()])
    text = json.dumps(kept)
    assert PROMPT not in text and "You are Codex." not in text
    assert "prompt_cache_key" not in kept["configuration"] and not any(k.startswith("client_metadata") for k in kept["configuration"])
    assert kept["configuration"]["reasoning.effort"] == ["medium"]
    assert kept["configuration"]["instructions"][0].startswith("sha256:")
    assert kept["configuration"]["tools[exec_command]"][0].startswith("sha256:")
    assert kept["first"]["input"] == 1 and kept["first"]["input[0]"].startswith("sha256:")


def test_a_field_that_differs_between_the_ways_is_named_and_the_session_is_not():
    differs, noise = compare([run(cache="a1"), run(cache="a2")], [run(effort="high", cache="c1"), run(effort="high", cache="c2")])
    assert differs == ["reasoning.effort"] and noise == []
    differs, _ = compare([run(), run()], [run(system="Be brief."), run(system="Be brief.")])
    assert differs == ["instructions"]
    assert compare([run(), run()], [run(), run()]) == ([], [])


def test_a_field_that_differs_between_two_runs_of_one_way_is_noise_not_a_difference():
    differs, noise = compare([run(system="at 10:01"), run(system="at 10:02")], [run(system="x"), run(system="x")])
    assert noise == ["instructions"] and differs == []
