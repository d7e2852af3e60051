"""The judge's prompt and the reading of its reply (standard library only: the driver runs in the machine's python3).

A reply is graded only when it holds one JSON object that scores every
dimension of the rubric with an integer from 0 to its max_score. Anything else
is ungraded, with the reason: never a zero.
"""

from __future__ import annotations

import json
import re

FENCE = re.compile(r"```(?:json)?\s*\n(.*?)```", re.S)
MARK = "NULLIUS JUDGE ASSESSMENT"


class Ungraded(Exception):
    """The reply cannot be graded; the message says why."""


def prompt(unit: dict, evaluation: int | None) -> str:
    """What the judge is asked: the rubric, the criteria, the trial's outcome and diff, and the answer's shape."""
    rubric = unit["rubric"]
    shape = {d["name"]: {"score": f"<integer 0..{d['max_score']}>", "reasoning": "<why, citing the diff>"} for d in rubric["dimensions"]}
    lines = [
        f"{MARK}" + (f" (evaluation {evaluation})" if evaluation else ""),
        "",
        "You are the judge of a coding agent's work on a task. Assess the work against the rubric and the task's criteria.",
        "The working directory holds a READ-ONLY copy of the trial's artifacts: "
        + ", ".join(sorted(unit["files"])) + ". Do not change anything; read what you need.",
        "",
        "## The task given to the agent",
        unit.get("instruction") or "(not recorded)",
        "",
        "## Assessment criteria",
        unit.get("criteria") or "(none given for this task: judge by the rubric alone)",
        "",
        "## Rubric (assessment_dimensions.json)",
        "```json",
        json.dumps(rubric, indent=1, sort_keys=True),
        "```",
        "",
        "## Outcome",
        f"verifier reward: {json.dumps(unit.get('reward'))}",
        f"changed lines in changes.patch: {unit.get('changed_lines', 0)}",
        f"lines in the agent's final answer (answer.txt): {unit.get('answer_lines', 0)}",
        "",
        "## The agent's final answer (answer.txt, first 8000 characters)",
        "```",
        (unit.get("answer") or "")[:8000],
        "```",
        "",
        "## The diff (changes.patch, first 20000 characters)",
        "```diff",
        (unit.get("diff") or "")[:20000],
        "```",
        "",
        "Answer with ONE JSON object and nothing else, of this shape (every dimension, integer scores):",
        "```json",
        json.dumps({"dimensions": shape, "overall": "<an overall note>"}, indent=1),
        "```",
    ]
    return "\n".join(lines)


def _candidate(answer: str) -> str:
    blocks = FENCE.findall(answer)
    if blocks:
        return blocks[-1]
    start, end = answer.find("{"), answer.rfind("}")
    if start < 0 or end < start:
        raise Ungraded("the reply holds no JSON object")
    return answer[start:end + 1]


def _score(name: str, entry: object, top: int) -> tuple[int, str]:
    if not isinstance(entry, dict):
        raise Ungraded(f"dimension {name!r}: expected an object with score and reasoning, found {type(entry).__name__}")
    score = entry.get("score")
    if isinstance(score, float) and score.is_integer():
        score = int(score)
    if isinstance(score, bool) or not isinstance(score, int):
        raise Ungraded(f"dimension {name!r}: expected an integer score, found {json.dumps(score)}")
    if not 0 <= score <= top:
        raise Ungraded(f"dimension {name!r}: score {score} is out of range 0..{top}")
    reasoning = entry.get("reasoning", "")
    return score, reasoning if isinstance(reasoning, str) else json.dumps(reasoning)


def grade(answer: str, rubric: dict) -> dict:
    """The graded assessment in `answer`, or Ungraded saying why."""
    if not answer.strip():
        raise Ungraded("the reply is empty")
    try:
        reply = json.loads(_candidate(answer))
    except json.JSONDecodeError as exc:
        raise Ungraded(f"the reply's JSON does not parse: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    scored = reply.get("dimensions") if isinstance(reply, dict) else None
    if not isinstance(scored, dict):
        raise Ungraded("the reply has no \"dimensions\" object")
    wanted = {d["name"]: d for d in rubric["dimensions"]}
    missing = [n for n in wanted if n not in scored]
    if missing:
        raise Ungraded("the reply leaves out dimension(s) " + ", ".join(missing))
    extra = [n for n in scored if n not in wanted]
    if extra:
        raise Ungraded("the reply scores dimension(s) the rubric does not have: " + ", ".join(extra))
    dims = []
    for name, dim in wanted.items():
        score, reasoning = _score(name, scored[name], dim["max_score"])
        dims.append({"name": name, "score": score, "max_score": dim["max_score"], "reasoning": reasoning})
    total, top = sum(d["score"] for d in dims), sum(d["max_score"] for d in dims)
    overall = reply.get("overall", "")
    return {"dimensions": dims, "total": total, "max_total": top, "normalized_score": total / top,
            "overall": overall if isinstance(overall, str) else json.dumps(overall)}
