"""A candidate harness as a Nullius variant: the always-on text as the agent's instruction file, skills as skill folders.

The variant is scoped to the rollout's task (`tasks = [id]`), so its run is
that one unit. Where the agent reads its instruction file and finds its
skills is its definition's (agent.json `variant`): the variant holds the
file under the agent's own name for it (AGENTS.md for the reference agent),
and Nullius writes it where the agent reads it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any


SCRIPTS_SKILL = "harness-scripts"  # the harness's scripts, as one skill folder the agent can read and run
SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class HarnessProblem(Exception):
    """The harness cannot become a variant of this agent: the message says why."""


def instruction_file(places: dict[str, Any] | None, agent: str) -> tuple[str, bool]:
    """The agent's instruction file name (AGENTS.md, CLAUDE.md, ...) and whether it finds skills, from its `variant` places."""
    instructions = (places or {}).get("instructions")
    if not instructions:
        raise HarnessProblem(f"{agent} declares no instruction file (agent.json variant.instructions): "
                             "a harness's always-on text has nowhere to go")
    return str(instructions["file"]), bool((places or {}).get("skills"))


def _skill_text(slug: str, text: str) -> str:
    """A harness skill (first line its description) with the front matter agents read a skill's name and description from."""
    if text.startswith("---\n"):
        return text
    first = text.splitlines()[0].strip().lstrip("#").strip() if text.strip() else slug
    return f"---\nname: {slug}\ndescription: {first}\n---\n{text}"


def write_variant(folder: Path, *, harness_dir: Path, always_on: str, agent: str, model: str, task: str,
                  instructions: str, takes_skills: bool, effort: str | None = None) -> Path:
    """The variant folder for one rollout: variant.toml, the instruction file, the skills (and scripts as a skill)."""
    folder.mkdir(parents=True, exist_ok=False)
    lines = [f"agent = {json.dumps(agent)}", f"model = {json.dumps(model)}", f"tasks = [{json.dumps(task)}]"]
    if effort:
        lines.append(f"reasoning_effort = {json.dumps(effort)}")
    (folder / "variant.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / instructions).write_text(always_on, encoding="utf-8")
    skills = sorted(p for p in (harness_dir / "skills").glob("*/SKILL.md")) if (harness_dir / "skills").is_dir() else []
    scripts = sorted((harness_dir / "scripts").glob("*.py")) if (harness_dir / "scripts").is_dir() else []
    if (skills or scripts) and not takes_skills:
        raise HarnessProblem(f"{agent} declares no skills folder (agent.json variant.skills): the harness's skills and scripts have nowhere to go")
    for skill in skills:
        slug = skill.parent.name
        if not SLUG.match(slug):
            raise HarnessProblem(f"skill folder {slug!r} is not a plain name")
        target = folder / "skills" / slug
        target.mkdir(parents=True)
        (target / "SKILL.md").write_text(_skill_text(slug, skill.read_text(encoding="utf-8")), encoding="utf-8")
    if scripts:
        target = folder / "skills" / SCRIPTS_SKILL
        target.mkdir(parents=True)
        roster = "\n".join(f"- {p.name}" for p in scripts)
        (target / "SKILL.md").write_text(_skill_text(SCRIPTS_SKILL, "The harness's scripts; run one with python3 PATH.\n\n" + roster + "\n"),
                                         encoding="utf-8")
        for script in scripts:
            (target / script.name).write_text(script.read_text(encoding="utf-8"), encoding="utf-8")
    return folder
