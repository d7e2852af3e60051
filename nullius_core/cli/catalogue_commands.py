"""`list`, `check`, `fit` and `new`: the catalogue from the command line."""

from __future__ import annotations

import sys
from pathlib import Path

from typing import TYPE_CHECKING

import click

from nullius_core.catalogue.catalogue import scan
from nullius_core.catalogue.checks import check_file
from nullius_core.catalogue.listing import CONTROLS, fits_for, listing, participant_sources, resolve_benchmark, sources_of
from nullius_core.catalogue.proofs import SECTIONS, not_looked_for
from nullius_core.catalogue.scaffold import ScaffoldError, new_entry, new_version, use_bundled
from nullius_core.cli.base import USAGE_ERROR, Refused, console, json_option, print_json, refusals, session_for
from nullius_core.cli.proof_lines import check_line, port_line
from nullius_core.definitions import FILE_KINDS, DefinitionError
from nullius_core.definitions.compat import canonical_family

if TYPE_CHECKING:  # rich is imported when a table is drawn: `list --json` and `check` draw none
    from rich.table import Table
    from rich.text import Text


@click.command("list")
@json_option
@refusals
def list_(as_json: bool) -> None:
    """Every definition, its offers, and which pairs fit."""
    session = session_for(click.get_current_context())
    data = listing(session.catalogue, dict(_ports(session)))
    if as_json:
        print_json(data)
    else:
        _render_listing(data)
    if data["invalid"]:
        sys.exit(USAGE_ERROR)


def _ports(session):  # type: ignore[no-untyped-def]
    return {p.name: p for p in session.ports}


def _render_listing(data: dict) -> None:  # type: ignore[type-arg]
    out = console()
    table = _table("Benchmarks")
    for col in ("benchmark", "needs", "datasets", "proven", "source (proofs from)"):
        table.add_column(col)
    for row in data["benchmarks"]:
        needs = ", ".join(row["needs"]) or "-"
        for port, skills in row["needs_skills"].items():
            needs += f" (skills of {port}: {', '.join(skills)})"
        datasets = ", ".join(f"{k} ({v})" for k, v in row["datasets"].items())
        proven = "; ".join(f"{ds}: {', '.join(checks)}" for ds, checks in row["proven"].items() if checks) or "not proven"
        for ds, checks in row["not_checked"].items():
            proven += f"; {ds}: not checked: {', '.join(checks)}"
        table.add_row(*_plain(row["ref"], needs, datasets, proven, _source_cell(row)))
    out.print(table)
    _lines("Benchmarks' checks", [f"{row['ref']} {line}" for row in data["benchmarks"] for line in _check_lines(row["records"])])
    for title, rows in (("Agents", data["agents"]), ("Capabilities", data["capabilities"])):
        table = _table(title)
        for col in ("name", "upstream", "offers (proven)", "source (proofs from)"):
            table.add_column(col)
        for row in rows:
            offers = "\n".join(
                f"{port} {o['passed']} kit v{o['kit_version']}" + (f" skills: {', '.join(o['skills'])}" if o["skills"] else "")
                for port, o in row["offers"].items()
            ) or "nothing proven"
            if row.get("fidelity"):  # `nullius fidelity`'s verdict: ACP against the agent's own CLI
                said = row["fidelity"]
                offers += f"\nfidelity: {said['verdict']}" + (f" ({', '.join(said['fields'])})" if said["fields"] else "")
            upstream = f"{row['upstream']} {row['version']}" if row["upstream"] else "-"
            if row.get("core"):
                upstream += f"\ncore {row['core']}"
            table.add_row(*_plain(row["ref"], upstream, offers, _source_cell(row)))
        out.print(table)
        _lines(f"{title}' proofs", [f"{row['ref']} {port_line(port, proof)}" for row in rows
                                     for port, proof in {**row["offers"], **row["not_offered"]}.items()])
    table = _table("Pairs that fit")
    table.add_column("benchmark")
    table.add_column("can run it")
    by_bench: dict[str, list[str]] = {}
    for pair in data["fits"]:
        by_bench.setdefault(pair["benchmark"], []).append(pair["participant"])
    for row in data["benchmarks"]:
        table.add_row(*_plain(row["ref"], ", ".join(by_bench.get(row["ref"], []) + [f"{c} (control)" for c in CONTROLS])))
    out.print(table)
    for broken in data["invalid"]:
        click.echo(f"invalid {broken['kind']} {broken['key']!r} ({broken['source']}):", err=True)
        for line in broken["problems"]:
            click.echo(f"  {line}", err=True)


def _lines(title: str, lines: list[str]) -> None:
    """A table's records, one line each, under it: a line is as long as its record (a cell would wrap it)."""
    click.echo(f"{title}, one line each:" if lines else f"{title}: none")
    for line in lines:
        click.echo(f"  {line}")


def _check_lines(records: dict) -> list[str]:  # type: ignore[type-arg]
    """A benchmark's checks per dataset: those that stand, then those taken back and those not checked."""
    out = []
    for dataset, checks in records.items():
        if not isinstance(checks, dict):
            continue
        out += [check_line(dataset, name, record) for name, record in checks.items() if name not in SECTIONS and not not_looked_for(name, record)]
        out += [check_line(dataset, name, record, "not checked") for name, record in checks.items() if name not in SECTIONS and not_looked_for(name, record)]
        for section, state in (("failed", "failed, taken back"), ("not_checked", "not checked")):
            held = checks.get(section)
            out += [check_line(dataset, name, record, state) for name, record in held.items()] if isinstance(held, dict) else []
    return out


def _source_cell(row: dict) -> str:  # type: ignore[type-arg]
    """Which copy is used, what it shadows, and where its proofs come from."""
    cell = row["source"] + (f", over {row['shadows']}" if row.get("shadows") else "")
    proofs = row.get("proofs")
    return cell + (f"\nproofs: {proofs['says']}" if proofs else "")


@click.command("fit")
@click.argument("benchmark")
@json_option
@refusals
def fit_(benchmark: str, as_json: bool) -> None:
    """What can run BENCHMARK[@VERSION], and why each of the rest cannot."""
    session = session_for(click.get_current_context())
    catalogue = session.catalogue
    _, bench = resolve_benchmark(catalogue, benchmark)
    results, broken = fits_for(bench, catalogue, _ports(session))
    data = {
        "benchmark": bench.ref,
        "source": sources_of(catalogue, bench),
        "sources": {r.participant: participant_sources(catalogue, r.participant) for r in results},
        "needs": list(bench.standard.needs),
        "needs_skills": dict(bench.standard.needs_skills),
        "fits": [r.participant for r in results if r.ok],
        "controls": list(CONTROLS),
        "refused": [{"participant": r.participant, "reasons": list(r.reasons)} for r in results if not r.ok],
        "invalid": broken,
    }
    if as_json:
        print_json(data)
        return
    click.echo(f"{bench.ref} needs {', '.join(data['needs']) or 'no port'}")
    click.echo(f"  (from {data['source']['source']}; proofs: {data['source']['proofs']['says']})")
    click.echo("Can run it:")
    for ref in data["fits"]:
        used = data["sources"][ref]
        click.echo(f"  {ref}  (from {used['source']}; proofs: {used['proofs']['says']})")
    click.echo(f"  {', '.join(CONTROLS)} (controls)")
    if data["refused"]:
        click.echo("Cannot run it:")
        for row in data["refused"]:
            click.echo(f"  {row['participant']}: {'; '.join(row['reasons'])}")
    for row in broken:
        click.echo(f"  {row['key']}: invalid definition ({row['problems'][0]})")


@click.command("check")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@json_option
@refusals
def check(path: Path | None, as_json: bool) -> None:
    """Check every definition, or one file or folder."""
    session = session_for(click.get_current_context())
    ports = _ports(session)
    files = _files_to_check(session, path)
    problems = []
    for file in files:
        problems += check_file(file, ports, session.paths)
    if path is None:
        problems += _proofs_files(session.catalogue)
    if as_json:
        print_json({"checked": [str(f) for f in files], "problems": [p.render() for p in problems]})
    else:
        for problem in problems:
            click.echo(problem.render(), err=True)
        if not problems:
            click.echo(f"ok: {len(files)} definition{'s' if len(files) != 1 else ''} checked")
    if problems:
        sys.exit(USAGE_ERROR)


def _proofs_files(catalogue) -> list:  # type: ignore[no-untyped-def, type-arg]
    """The user catalogue's proofs file of each plugin's entry, read strictly (an invalid one makes its entry invalid)."""
    problems = []
    for entry in catalogue.entries():
        if not entry.from_user:
            try:
                catalogue.local_proofs(entry)
            except DefinitionError as exc:
                problems += exc.problems
    return problems


def _files_to_check(session, path: Path | None) -> list[Path]:  # type: ignore[no-untyped-def]
    if path is None:
        files = [e.file for e in session.catalogue.entries()]
        files += [p.kit_folder / "standard.json" for p in session.ports if p.kit_folder is not None]
        return files
    if not path.exists():
        raise Refused(f"{path}: no such file or folder")
    if path.is_file():
        return [path]
    entries = scan(path)
    if entries:
        return [file for _, _, _, file in entries]
    own = [path / name for name in FILE_KINDS if (path / name).exists() and name not in ("benchmark.json", "upstream-settings.json")]
    if not own:
        raise Refused(f"{path}: no definition here (expected {', '.join(sorted(FILE_KINDS))}, or a catalogue folder)")
    return own


@click.group("new")
def new() -> None:
    """Write a definition to fill in, in the user catalogue."""


def _scaffold(kind: str, key: str, family: str = "agent", port: str | None = None) -> None:
    session = session_for(click.get_current_context())
    try:
        folder = new_entry(session.catalogue, kind, key, family=family, port=port)
    except ScaffoldError as exc:
        raise Refused(str(exc)) from None
    click.echo(f"wrote {folder}")
    click.echo(f"next: fill in the parts marked FILL IN, then: nullius check {folder}")


@new.command("benchmark")
@click.argument("key")
@click.option("--family", type=click.Choice(["agent", "capability", "feature"]), default="agent", show_default=True)
@click.option("--port", help="The port it needs (cap.memory/v1 for a capability benchmark).")
@refusals
def new_benchmark(key: str, family: str, port: str | None) -> None:
    """A benchmark: standard.json, driver.py, benchmark.json, upstream-settings.json."""
    _scaffold("benchmark", key, family=canonical_family(family), port=port)


@new.command("agent")
@click.argument("key")
@refusals
def new_agent(key: str) -> None:
    """An agent: agent.json."""
    _scaffold("agent", key)


@new.command("capability")
@click.argument("key")
@click.option("--port", default="cap.memory/v1", show_default=True)
@refusals
def new_capability(key: str, port: str) -> None:
    """A capability: capability.json and a capability.py to fill in."""
    _scaffold("capability", key, port=port)


@new.command("feature", hidden=True)
@click.argument("key")
@click.option("--port", default="cap.memory/v1")
@refusals
def new_feature(key: str, port: str) -> None:
    """The older name of `new capability`."""
    _scaffold("capability", key, port=port)


@new.command("version")
@click.argument("key")
@click.argument("version")
@refusals
def new_version_(key: str, version: str) -> None:
    """Add VERSION to KEY from its default's block, nothing proven."""
    session = session_for(click.get_current_context())
    catalogue = session.catalogue
    entry = catalogue.get("agent", key) or catalogue.get("capability", key) or catalogue.get("benchmark", key)
    if entry is None:
        raise Refused(f"no agent, capability or benchmark named {key!r} (see nullius list)")
    try:
        path = new_version(catalogue, entry, version)
    except ScaffoldError as exc:
        raise Refused(str(exc)) from None
    click.echo(f"wrote {path}: {key}@{version}, nothing proven yet; it runs nothing until its ports are proven")


@click.command("use-bundled")
@click.argument("key")
@refusals
def use_bundled_(key: str) -> None:
    """Use the plugin's own entry of KEY again: the user's copy and its local proofs set aside (never deleted)."""
    session = session_for(click.get_current_context())
    catalogue = session.catalogue
    kind = next((k for k in ("agent", "capability", "benchmark") if catalogue.get(k, key) is not None), None)
    if kind is None:
        raise Refused(f"no agent, capability or benchmark named {key!r} (see nullius list)")
    try:
        moved, proofs = use_bundled(catalogue, kind, key)
    except ScaffoldError as exc:
        raise Refused(str(exc)) from None
    click.echo(f"{kind} {key}: the bundled entry again; the user's copy is set aside in {moved}"
               + (f", its local proofs in {proofs}" if proofs else ""))


def _plain(*cells: str) -> list[Text]:
    """Cells as text, never markup: a definition's words (`tools[ask_user_question]`, a summary in brackets) print as written."""
    from rich.text import Text

    return [Text(cell) for cell in cells]


def _table(title: str) -> Table:
    from rich.table import Table

    return Table(title=title, title_justify="left")

