"""What the substrate's tests share: a Nullius home with GSM8K's offline seed, the fake model playing the agent's model.

Each test_improve_*.py imports it (its fixture `world` too): the kernel's tests own conftest.py.

The model is the scripted fake model (the one double allowed); the relay, the
reference agent's process, GSM8K's driver and the `nullius` commands are real.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from nullius_core.testing import isolated_env, run_cli
from nullius_core.testing.fake_model import Fault, FakeRequest, Reply, ToolCall, running_fake_model

# GSM8K's test split as its plugin ships it: read as a file, never imported (a plugin's tests import no other plugin's code)
TEST_SPLIT = (Path(__file__).resolve().parents[2] / "nullius-bench-gsm8k" / "nullius_bench_gsm8k" / "catalogue" / "benchmarks" / "gsm8k"
              / "data" / "test.jsonl")
KEY = "sk-upstream-held-by-the-relay-rsi-7c1e55aa"  # the provider key the tests plant: it must be found nowhere
SLOW_SECONDS = 30.0  # past the slow rollout's [runner] timeout, which is what is tested
ANSWERS = {"u0000": "18", "u0001": "3", "u0002": "70000"}  # GSM8K's first three answers


def texts(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def agent_reply(request: FakeRequest) -> Reply:
    """The reference agent's model: it writes notes.md in the workspace, then answers GSM8K's question.

    Its answer is right under a harness that holds a CHECKLIST (marked "(checked)", what the contrast classifier
    looks for) or the rollout tests' HARNESS-MARKER, and wrong ("#### 0") under `nullius improve`'s base harness.
    """
    messages = request.body.get("messages", [])
    system = texts(messages[0]) if messages else ""
    question = next((texts(m) for m in messages if m.get("role") == "user"), "")
    answer = next((a for q, a in QUESTIONS.items() if q in question), "0")
    if JUDGE_MARK in question:  # nullius assess's judge (the reference agent): each dimension scored by the verifier's reward
        return Reply(text=judge_reply(question))
    if "SLOW-MARKER" in system:  # a model that does not answer in time: the rollout's own limit stops its run
        return Reply(text="late", fault=Fault(first_byte_delay=SLOW_SECONDS))
    if not any(m.get("role") == "tool" for m in messages):
        return Reply(tool_calls=[ToolCall(name="write_file", arguments={"path": "notes.md", "content": f"working: {answer}\n"})])
    if "CHECKLIST" in system:
        return Reply(text=f"Each step checked against the question. (checked)\n#### {answer}")
    if "HARNESS-MARKER" in system:
        return Reply(text=f"The answer.\n#### {answer}")
    return Reply(text="A guess.\n#### 0")


JUDGE_MARK = "NULLIUS JUDGE ASSESSMENT"


def judge_reply(prompt: str) -> str:
    rubric = json.loads(re.search(r"## Rubric \(assessment_dimensions\.json\)\n```json\n(.*?)\n```", prompt, re.S).group(1))
    said = re.search(r"verifier reward: (\S+)", prompt).group(1)
    reward = 0.0 if said == "null" else float(said)
    scores = {d["name"]: {"score": round(d["max_score"] * reward), "reasoning": f"reward {reward}"} for d in rubric["dimensions"]}
    return "```json\n" + json.dumps({"dimensions": scores, "overall": "as the reward says"}) + "\n```"


def header(obj: dict[str, Any], **bodies: str) -> str:
    return json.dumps(obj) + "".join(f"\n```{name}\n{body}```" for name, body in bodies.items())


class Improver:
    """The fake model as nanoRSI's improver: proposer (INV, DOM), contrast classifier, composer, selector, lesson extractor."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, system: str, user: str) -> str:
        role = system.split("\n", 1)[0].removeprefix("nanorsi:")
        self.seen.append(role)
        return getattr(self, role.replace(" ", "_"))(user)

    def propose_INV(self, user: str) -> str:
        return header({"component": "memory.md", "deficiency": "answers without checking", "rationale": "a checklist"},
                      **{"memory.md": "CHECKLIST: work the arithmetic step by step, check each step, then answer.\n"})

    def propose_DOM(self, user: str) -> str:
        return header({"component": "skills/arith/SKILL.md", "rationale": "word problems"},
                      **{"skills/arith/SKILL.md": "How to read a word problem\nList the quantities first.\n"})

    def contrast(self, user: str) -> str:
        ref, cand = user.split("\nCANDIDATE (", 1)
        better = "(checked)" in cand.split("DELIVERABLES:")[-1] and "(checked)" not in ref.split("DELIVERABLES:")[-1]
        return header({"verdict": "mitigates" if better else "neutral",
                       "observation": "the candidate checks each step and answers right" if better else "no behavioural change"})

    def compose(self, user: str) -> str:
        mitigating = re.findall(r"- (\w+) \(\w+, [^)]*\): mitigates", user)
        if not mitigating:
            return header({"decision": "keep", "edits": [], "observation": "nothing mitigates"})
        return header({"decision": "adopt", "edits": mitigating[:1], "observation": "adopt the checklist"})

    def select(self, user: str) -> str:
        return header({"choice": "F1", "reason": "complete"})

    def lesson(self, user: str) -> str:
        first = re.search(r"CONTRASTS:\n- (\w+)", user).group(1)
        return header({"lesson": "A checklist in memory makes the agent check its arithmetic.", "evidence": [first]})


IMPROVER = Improver()


def respond(request: FakeRequest) -> Reply | dict[str, Any]:
    """One fake model for both: nanoRSI's improver (its system prompt starts nanorsi:) and the reference agent."""
    messages = request.body.get("messages", [])
    system = texts(messages[0]) if messages else ""
    if system.startswith("nanorsi:"):
        return {"text": IMPROVER(system, texts(messages[1]))}
    return agent_reply(request)


QUESTIONS: dict[str, str] = {}  # a distinctive start of each question -> its answer (filled from the seed)


def _questions() -> None:
    lines = TEST_SPLIT.read_text(encoding="utf-8").splitlines()[:3]
    for unit, line in zip(ANSWERS, lines):
        QUESTIONS[json.loads(line)["question"][:60]] = ANSWERS[unit]


def rollout_request(folder: Path, fake_url: str, *, task: str = "u0000", label: str = "base1", harness: dict[str, str] | None = None,
                    **runner: Any) -> Path:
    """A request.json as the kernel writes it for a nullius runner, and the harness folder it names."""
    harness_dir = folder / "harness"
    for name, text in (harness or {"systemprompt.md": "HARNESS-MARKER: show the working, then the number.\n"}).items():
        (harness_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (harness_dir / name).write_text(text)
    table = {"kind": "nullius", "nullius": "nullius", "benchmark": "gsm8k", "agent": "reference", "model": "fake-model",
             "provider": "openai-compatible", "base_url": fake_url, "unsandboxed": True, **runner}
    always_on = "\n\n".join(f"## {name}\n{text}" for name, text in sorted((harness or {}).items()) if not name.startswith("skills/")) \
        or "## systemprompt.md\nHARNESS-MARKER: show the working, then the number.\n"
    request = {"task": {"id": task, "instruction": "GSM8K's question", "documents": {}, "deliverables": ["answer.md"]},
               "harness_dir": str(harness_dir), "output_dir": str(folder), "always_on": always_on, "label": label, "runner": table}
    (folder / "request.json").write_text(json.dumps(request))
    return folder / "request.json"


def nullius_rsi(args: list[str], env: dict[str, str], **files: Path):
    """`nullius ARGS` with NANORSI_* set to the files given (REQUEST=..., RESULT=...)."""
    return run_cli(args, {**env, **{f"NANORSI_{k}": str(v) for k, v in files.items()}})


@pytest.fixture(scope="session")
def world(tmp_path_factory, nullius_installs):
    """A Nullius home with GSM8K's seed, the provider key in its variable (the relay's to hold), and the fake model."""
    _questions()
    root = tmp_path_factory.mktemp("rsi")
    env = {**isolated_env(root, standard_dir=nullius_installs), "OPENAI_COMPATIBLE_API_KEY": KEY}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with running_fake_model(respond) as fake:
        yield env, fake, root


def key_in(folder: Path) -> list[str]:
    """Every file under folder holding the planted key."""
    return [str(p) for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and KEY.encode() in p.read_bytes()]


__all__ = ["KEY", "ANSWERS", "rollout_request", "nullius_rsi", "key_in", "os"]
