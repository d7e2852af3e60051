"""Add: the dialog that writes the prompt for a coding assistant to bring in a benchmark, an agent or a capability.

The prompt names the skill to use (`.claude/skills/<name>/SKILL.md` of a
source checkout: `/import-benchmark`, `/import-standard`, `/import-agent`,
`/import-capability`) and the user's writable catalogue (`nullius paths
--json`), and says that an assistant on another machine works in a source
checkout and asks the user to update Nullius. The app writes nothing here:
the prompt is for the user to copy.
"""

from __future__ import annotations

import attrs
from aiohttp import web

from nullius_app.cli_client import CommandFailed
from nullius_app.render import page

LIMIT = 2000  # a field's length: a name, a URL, a remark


@attrs.frozen
class Kind:
    skill: str
    noun: str
    folder: str
    files: str
    prove: str
    pin: str = ("Pin the upstream: a release tag's commit (for an annotated tag, the ^{} line of git ls-remote --tags), "
                "a default-branch commit only when there is no release.")


PACKAGE_PIN = ("Pin the upstream: the released package's exact version, every package of its install pinned "
               "(a release tag's commit for anything built from its repository; for an annotated tag, the ^{} line of git ls-remote --tags).")
KINDS = {
    "benchmark": Kind("/import-benchmark", "benchmark", "benchmarks",
                      "standard.json, benchmark.json, upstream-settings.json and driver.py; through Harbor there is none to write, "
                      "the pinned tasks folder is the dataset",
                      "`nullius check`, then `nullius prove <key> --limit 3`, then a short run"),
    "standard": Kind("/import-standard", "benchmark", "benchmarks", "standard.json, benchmark.json, upstream-settings.json and driver.py",
                     "`nullius check`, then `nullius prove <key> --limit 3`, then a short run"),
    "agent": Kind("/import-agent", "agent", "agents", "agent.json", "`nullius check`, then `nullius conform <key> --model MODEL ...`, then a short run",
                  PACKAGE_PIN),
    "capability": Kind("/import-capability", "capability", "capabilities", "capability.json and the program that speaks its port",
                       "`nullius check`, then `nullius conform <key>`, then a short run of a benchmark it fits", PACKAGE_PIN),
}
TYPES = (("benchmark", "A benchmark (the assistant chooses Harbor or the Nullius standard)"),
         ("standard", "A benchmark, through the Nullius standard"),
         ("agent", "An agent"),
         ("capability", "A capability"))


def prompt(kind: str, name: str, source: str, remark: str, catalogue: str) -> str:
    """The prompt for the assistant: the skill, the catalogue to write into, what to prove, and what to report."""
    k = KINDS[kind]
    skill = f"Use the {k.skill} skill" + (": it first chooses whether this benchmark runs through Harbor or through the Nullius standard."
                                          if kind == "benchmark" else ".")
    lines = [
        f'Bring the {k.noun} "{name}" into Nullius, from {source}.',
        "",
        skill,
        "",
        f"Write its definition into my user catalogue, which is writable: {catalogue}/{k.folder}/<key>/ ({k.files}). "
        f"Leave the installed Nullius package unchanged. {k.pin}",
        "",
        "If you run on another machine than mine, work in a source checkout of Nullius (a clone of its repository, "
        "set up with ./dev setup; the skills are in its .claude/skills/), write the entry into that checkout's user catalogue "
        "(nullius paths says where), and then tell me which folder to copy into "
        f"{catalogue}/{k.folder}/ and whether I need to update my Nullius for it to run.",
        "",
        f"Check and prove it: {k.prove}. Ask me before writing a custom implementation of anything the upstream does itself, "
        "and before model-backed checks (they cost provider charges).",
        "",
        "Report the evidence (each command you ran, its output, and the records it wrote: the proofs in the definition "
        "or the proofs file, the jobs) and the gaps (what you could not prove, and why).",
    ]
    if remark:
        lines += ["", f"My remark: {remark}"]
    return "\n".join(lines) + "\n"


def _field(request: web.Request, name: str) -> str:
    return request.query.get(name, "").strip()[:LIMIT]


async def add_page(request: web.Request) -> web.Response:
    state = request.app["state"]
    kind = _field(request, "type")
    kind = kind if kind in KINDS else "benchmark"
    name, source, remark = _field(request, "name"), _field(request, "source"), _field(request, "remark")
    catalogue, problem = "", ""
    try:
        catalogue = (await state.nullius.json("paths", "--json"))["user catalogue"]["path"]
    except (CommandFailed, KeyError, TypeError, ValueError) as exc:
        problem = f"nullius paths --json: {exc.done.said if isinstance(exc, CommandFailed) else 'no user catalogue in its answer'}"
    written = prompt(kind, name, source, remark, catalogue) if name and source and catalogue else ""
    return page(request, "add.html", "Add", kinds=TYPES, kind=kind, name=name, source=source, remark=remark,
                catalogue=catalogue, problem=problem, prompt=written, chosen=KINDS[kind])


def add_routes(app: web.Application) -> None:
    app.router.add_get("/add", add_page)
