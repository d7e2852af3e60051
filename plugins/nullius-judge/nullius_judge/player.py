"""A scripted judge for the fake model: it answers the judge's prompt with an assessment computed from what it is shown.

It reads the prompt the `judge` benchmark gives (the rubric, the verifier's
reward, the number of changed lines, the evaluation's number) from the
request, in any API shape: OpenAI Chat Completions (the reference agent),
Anthropic Messages (Claude Agent ACP) or OpenAI Responses (Codex). Each dimension's score is
`round(max_score * (0.6 * reward + 0.4 * min(lines, 20) / 20))`, lines being the diff's
changed lines plus the final answer's lines, so two
trials that differ are scored differently; each evaluation leans by its
number (0, -0.05, -0.1, then again), as a real judge varies between repetitions.

Variants, for the ungraded paths:

- `respond_garbage`: prose with no JSON in it, every time.
- `respond_garbage_second`: garbage for evaluation 2 only, a valid assessment otherwise.
- `respond_out_of_range`: a first dimension scored one above its max.
- `respond_missing`: the last dimension left out.

A request that is not the judge's prompt (a side call, a title) gets a short text;
`count_tokens` gets the fake server's own count. Serve it with
`nullius fake-model serve --script nullius_judge.player:respond`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from nullius_core.testing.fake_model import FakeRequest, Reply

MARK = "NULLIUS JUDGE ASSESSMENT"
RUBRIC = re.compile(r"## Rubric \(assessment_dimensions\.json\)\n```json\n(.*?)\n```", re.S)
REWARD = re.compile(r"verifier reward: (\S+)")
CHANGED = re.compile(r"changed lines in changes\.patch: (\d+)")
ANSWER = re.compile(r"lines in the agent's final answer \(answer\.txt\): (\d+)")
EVALUATION = re.compile(re.escape(MARK) + r" \(evaluation (\d+)\)")
GARBAGE = "Looks good to me overall; I would give it a solid mark."


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for item in value for t in _texts(item)]
    if isinstance(value, dict):
        return [value["text"]] if isinstance(value.get("text"), str) else _texts(value.get("content"))
    return []


def judge_prompt(request: FakeRequest) -> str | None:
    """The judge's prompt among the request's user messages, in any API shape."""
    body = request.body if isinstance(request.body, dict) else {}
    for message in body.get("messages") or body.get("input") or []:
        if isinstance(message, dict) and message.get("role") == "user":
            for text in _texts(message.get("content")):
                if MARK in text:
                    return text
    return None


def assessment(prompt: str) -> dict[str, Any]:
    rubric = json.loads(RUBRIC.search(prompt).group(1))
    reward_text = REWARD.search(prompt).group(1)
    reward = 0.0 if reward_text == "null" else float(reward_text)
    changed = int(CHANGED.search(prompt).group(1)) + int(ANSWER.search(prompt).group(1))
    evaluation = _evaluation(prompt) or 1
    # a judge is not deterministic: each evaluation's own small lean (0, -0.05, -0.1, 0, ...) plays that
    share = max(0.0, 0.6 * max(0.0, min(reward, 1.0)) + 0.4 * min(changed, 20) / 20 - 0.05 * ((evaluation - 1) % 3))
    why = f"reward {reward}, {changed} lines changed or answered"
    scores = {d["name"]: {"score": round(d["max_score"] * share), "reasoning": why} for d in rubric["dimensions"]}
    return {"dimensions": scores, "overall": f"Scored from the verifier's reward ({reward}) and the work's size ({changed} lines)."}


def _answer(request: FakeRequest, change=None) -> Reply | None:
    if request.api in ("count_tokens", "gemini_count_tokens"):
        return None
    prompt = judge_prompt(request)
    if prompt is None:
        return Reply(text="Nullius judge")
    if change is not None:
        text = change(prompt)
        if text is not None:
            return Reply(text=text)
    return Reply(text="```json\n" + json.dumps(assessment(prompt), indent=1) + "\n```")


def respond(request: FakeRequest) -> Reply | None:
    return _answer(request)


def respond_garbage(request: FakeRequest) -> Reply | None:
    return _answer(request, lambda prompt: GARBAGE)


def _evaluation(prompt: str) -> int | None:
    found = EVALUATION.search(prompt)
    return int(found.group(1)) if found else None


def respond_garbage_second(request: FakeRequest) -> Reply | None:
    return _answer(request, lambda prompt: GARBAGE if _evaluation(prompt) == 2 else None)


def respond_out_of_range(request: FakeRequest) -> Reply | None:
    def change(prompt: str) -> str:
        found = assessment(prompt)
        rubric = json.loads(RUBRIC.search(prompt).group(1))
        first = rubric["dimensions"][0]
        found["dimensions"][first["name"]]["score"] = first["max_score"] + 1
        return json.dumps(found)
    return _answer(request, change)


def respond_missing(request: FakeRequest) -> Reply | None:
    def change(prompt: str) -> str:
        found = assessment(prompt)
        found["dimensions"].popitem()
        return json.dumps(found)
    return _answer(request, change)
