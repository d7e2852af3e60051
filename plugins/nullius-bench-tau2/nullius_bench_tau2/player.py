"""Fake-model players for τ²-bench's two model-backed parts: tau2's user simulator and its NL-assertion judge.

    nullius fake-model serve --script nullius_bench_tau2.player:respond

`respond` answers the requests tau2 itself makes, and nothing else (None,
so a script's rules or default answer the rest):

- tau2's user simulator (a system prompt with tau2's <scenario>): the first
  message says the scenario's reason for call and what the user knows; each
  later one says "Yes, please go ahead." until the agent's message asks
  whether there is anything else (or says "Here is what you asked for"),
  which the user ends with tau2's ###STOP###. An agent scripted from a
  task's expected actions (the oracle's words) thus reaches tau2's reward 1.
- tau2's NL-assertion judge (its system prompt asks for `metExpectation`):
  every expected outcome of the request is met. `respond_unmet` says none is.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Optional

from nullius_core.testing.fake_model import FakeRequest, Reply

STOP = "###STOP###"  # tau2.user.base.STOP
GO_ON = "Yes, please go ahead."
DONE_MARKS = ("anything else", "here is what you asked for")
_SECTIONS = ("Reason for call:", "Known info:", "Unknown info:", "Task instructions:")


def respond(request: FakeRequest) -> Optional[Reply]:
    return _respond(request, met=True)


def respond_unmet(request: FakeRequest) -> Optional[Reply]:
    return _respond(request, met=False)


def _respond(request: FakeRequest, met: bool) -> Optional[Reply]:
    system = system_text(request)
    if "metExpectation" in system:
        return Reply(text=judge_verdict(request.last_user_message or "", met))
    if "<scenario>" in system:
        return Reply(text=user_says(request, system))
    return None


def system_text(request: FakeRequest) -> str:
    messages = request.body.get("messages") if isinstance(request.body, dict) else None
    for message in messages or []:
        if isinstance(message, dict) and message.get("role") == "system" and isinstance(message.get("content"), str):
            return message["content"]
    return ""


def user_says(request: FakeRequest, system: str) -> str:
    """The simulated user's next message. The user simulator sees roles flipped: its own turns are `assistant`."""
    messages = [m for m in request.body.get("messages", []) if isinstance(m, dict)]
    if not any(m.get("role") == "assistant" for m in messages):
        scenario = system.split("<scenario>", 1)[1].split("</scenario>", 1)[0]
        reason, known = section(scenario, "Reason for call:"), section(scenario, "Known info:")
        return " ".join(part for part in (f"Hi! {reason}", known) if part)
    agent_said = (request.last_user_message or "").lower()
    if any(mark in agent_said for mark in DONE_MARKS):
        return STOP
    return GO_ON


def section(scenario: str, title: str) -> str:
    """One section of tau2's str(UserScenario), its lines joined."""
    if title not in scenario:
        return ""
    body = scenario.split(title, 1)[1]
    for other in _SECTIONS:
        if other != title and other in body:
            body = body.split(other, 1)[0]
    return re.sub(r"\s+", " ", body).strip()


def judge_verdict(prompt: str, met: bool) -> str:
    """tau2's judge's JSON: one result per expected outcome listed after `expectedOutcomes:`."""
    listed = prompt.split("expectedOutcomes:", 1)[1].strip() if "expectedOutcomes:" in prompt else "[]"
    try:
        outcomes = ast.literal_eval(listed)
    except (ValueError, SyntaxError):
        outcomes = []
    results = [{"expectedOutcome": o, "reasoning": "scripted by the Nullius fake model", "metExpectation": met}
               for o in outcomes if isinstance(o, str)]
    return json.dumps({"results": results})
