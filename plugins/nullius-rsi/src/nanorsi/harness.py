"""The editable surface: a harness is {relative path: text}, restricted to the paths below."""

import ast
import difflib
import hashlib
import json
import re
from pathlib import Path

from . import NanoError

ALWAYS_ON = ("systemprompt.md", "guardrails.md", "memory.md", "tool_guidance.md")
ALWAYS_ON_CAP = 24_000
SKILL = re.compile(r"skills/([a-z0-9][a-z0-9_-]{0,63})/SKILL\.md")
SCRIPT = re.compile(r"scripts/([a-z0-9][a-z0-9_-]{0,63})\.py")


def is_component(path: str) -> bool:
    return path in ALWAYS_ON or bool(SKILL.fullmatch(path) or SCRIPT.fullmatch(path))


def validate(harness: dict[str, str]) -> list[str]:
    """Every problem of the harness; [] when it is valid."""
    errors = [f"{p}: not a harness component (expected one of {', '.join(ALWAYS_ON)}, "
              "skills/<slug>/SKILL.md, scripts/<slug>.py)" for p in harness if not is_component(p)]
    total = sum(len(harness.get(p, "")) for p in ALWAYS_ON)
    if total > ALWAYS_ON_CAP:
        errors.append(f"always-on files: {total} characters, expected at most {ALWAYS_ON_CAP}")
    if not any(harness.get(p, "").strip() for p in ALWAYS_ON):
        errors.append(f"always-on files: all empty, expected at least one of {', '.join(ALWAYS_ON)} with text")
    for path, text in harness.items():
        if SKILL.fullmatch(path) and not text.split("\n", 1)[0].strip():
            errors.append(f"{path}: the first line must describe the skill, found an empty line")
        if SCRIPT.fullmatch(path):
            try:
                ast.parse(text, filename=path)
            except SyntaxError as exc:
                errors.append(f"{path}: line {exc.lineno}: not valid Python ({exc.msg})")
    return errors


def load(root: Path) -> dict[str, str]:
    root = Path(root)
    if not root.is_dir():
        raise NanoError(f"{root}: no harness folder")
    found = {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*")) if p.is_file()}
    stray = [p for p in found if not is_component(p)]
    if stray:
        raise NanoError(f"{root}: {stray[0]}: not a harness component (expected one of {', '.join(ALWAYS_ON)}, "
                        "skills/<slug>/SKILL.md, scripts/<slug>.py)")
    harness = {p: f.read_text(encoding="utf-8") for p, f in found.items()}
    errors = validate(harness)
    if errors:
        raise NanoError(f"{root}: " + f"\n{root}: ".join(errors))
    return harness


def write(root: Path, harness: dict[str, str]) -> None:
    for path, text in harness.items():
        target = Path(root) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def digest(harness: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(harness, sort_keys=True).encode()).hexdigest()[:16]


def apply(harness: dict[str, str], component: str, text: str | None) -> dict[str, str]:
    """A copy with one component set (None removes it)."""
    out = dict(harness)
    if text is None:
        out.pop(component, None)
    else:
        out[component] = text
    return out


def diff(before: dict[str, str], after: dict[str, str]) -> str:
    """A unified diff over every changed component."""
    chunks = []
    for path in sorted(set(before) | set(after)):
        a, b = before.get(path), after.get(path)
        if a != b:
            chunks += difflib.unified_diff((a or "").splitlines(True), (b or "").splitlines(True),
                                           f"a/{path}" if a is not None else "/dev/null",
                                           f"b/{path}" if b is not None else "/dev/null")
    return "".join(chunks)


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def render_always_on(harness: dict[str, str]) -> str:
    """What every executor sees before the task: the always-on files, the skill index and the script roster."""
    parts = [f"## {p}\n\n{harness[p].strip()}\n" for p in ALWAYS_ON if harness.get(p, "").strip()]
    skills = [(m.group(1), harness[p].split("\n", 1)[0].strip())
              for p in sorted(harness) if (m := SKILL.fullmatch(p))]
    if skills:
        parts.append("## Skills (load one on demand by reading skills/<slug>/SKILL.md)\n\n"
                     + "\n".join(f"- {slug}: {desc}" for slug, desc in skills) + "\n")
    scripts = [p for p in sorted(harness) if SCRIPT.fullmatch(p)]
    if scripts:
        parts.append("## Scripts\n\n" + "\n".join(f"- {p}" for p in scripts) + "\n")
    return "\n".join(parts)
