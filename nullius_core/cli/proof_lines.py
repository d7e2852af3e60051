"""`nullius list`'s proofs, one line each: a port's proof of an agent or capability, a benchmark's check.

Each line says every field its record holds, and nothing it does not: a
proof made before a field was recorded (an older Nullius's, or one written by
hand) is shown without it, never with a value made up for it.
"""

from __future__ import annotations

from typing import Any


def number(value: Any) -> str:
    """A figure as written plainly (1.0 as 1, 0.6667 as it is); anything else as it came."""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def port_line(port: str, proof: dict[str, Any]) -> str:
    """`agent.tools/v1: passed 2/2, kit v2, skills ..., repeat 3 (...), score 1, ...`, from listing.proof_fields()."""
    parts = [f"passed {proof['passed']}", f"kit v{proof['kit_version']}"]
    skills = _skills(proof)
    if skills:
        parts.append(skills)
    if proof.get("repeat") is not None or proof.get("checks"):
        checks = ", ".join(f"{name} {count}" for name, count in (proof.get("checks") or {}).items())
        repeat = f"repeat {proof['repeat']}" if proof.get("repeat") is not None else "checks"
        parts.append(f"{repeat} ({checks})" if checks else repeat)
    for key, label in (("score", "score"), ("model", "model"), ("version", "on upstream"), ("backend", "backend"), ("date", "date"), ("job", "job")):
        if proof.get(key) is not None:
            parts.append(f"{label} {number(proof[key])}")
    line = f"{port}: " + ", ".join(parts)
    return line + (f" (not offered: {proof['why']})" if proof.get("why") else "")


def _skills(proof: dict[str, Any]) -> str:
    recorded = proof.get("skill_checks")
    if recorded is None:  # made before skills were recorded: the standard reads it as every skill of the kit shown
        return f"skills {', '.join(proof['skills'])} (every skill of the kit: none recorded)" if proof.get("skills") else ""
    if not recorded:
        return ""
    said = [f"{name} {skill['passed']}" + ("" if skill["ok"] else " (not shown)") for name, skill in sorted(recorded.items())]
    return "skills " + ", ".join(said)


# A benchmark check's fields, in the order a line says them (prove.py writes them; the rest are in --json).
CHECK_FIELDS = (
    ("passed", "passed"), ("units", "units"), ("looked_for", "looked for"), ("short", "short"), ("in_prompt", "in prompt"),
    ("errors", "errors"), ("source", "source"), ("limit", "limit"), ("shard", "shard"), ("folder", "folder"),
    ("sha256", "sha256"), ("job", "job"), ("date", "date"),
)


def check_line(dataset: str, name: str, record: Any, state: str = "") -> str:
    """`test nop: passed 0/3, value 0 (at most 0), units 3, ...`; `state` says a check taken back or not checked."""
    if not isinstance(record, dict):
        return f"{dataset} {name}: {state + ': ' if state else ''}{record!r}"
    parts = []
    for key, label in CHECK_FIELDS:
        if record.get(key) is not None:
            parts.append(f"{label} {number(record[key])}")
        if key == "passed" and record.get("value") is not None:
            parts.append(f"value {number(record['value'])}" + _bound(record.get("expect")))
    why = record.get("failed") or record.get("not_checked")
    head = f"{dataset} {name}: " + (f"{state} ({why}): " if state and why else f"{state}: " if state else "")
    return head + ", ".join(parts)


def _bound(expect: Any) -> str:
    if not isinstance(expect, dict):
        return ""
    said = [f"{key.replace('_', ' ')} {number(value)}" for key, value in expect.items()]
    return f" ({', '.join(said)})" if said else ""
