"""What `nullius list` and `nullius fit` say, as plain data (the CLI only renders it)."""

from __future__ import annotations

from typing import Any

import attrs

from nullius_core.catalogue.catalogue import Catalogue, Entry, split_ref
from nullius_core.catalogue.proofs import SECTIONS, not_looked_for
from nullius_core.definitions import Agent, Capability, DefinitionError, Proof, Resolved, ResolvedBenchmark, Standard
from nullius_core.ports.fit import FitResult, fit, not_holding, offered, shown_skills
from nullius_core.ports.model import Port

CONTROLS = ("nop", "oracle")


def participants(catalogue: Catalogue) -> tuple[list[Resolved], list[dict[str, Any]]]:
    """Every version of every agent and capability; and the entries that could not be read."""
    out: list[Resolved] = []
    broken: list[dict[str, Any]] = []
    for entry in catalogue.entries("agent") + catalogue.entries("capability"):
        try:
            definition: Agent | Capability = catalogue.load(entry)
        except DefinitionError as exc:
            broken.append(_broken(entry, exc))
            continue
        names = definition.version_names() or [None]
        out.extend(definition.resolve(entry.key, name) for name in names)
    return out, broken


def benchmarks(catalogue: Catalogue) -> tuple[list[tuple[Entry, ResolvedBenchmark]], list[dict[str, Any]]]:
    out: list[tuple[Entry, ResolvedBenchmark]] = []
    broken: list[dict[str, Any]] = []
    for entry in catalogue.entries("benchmark"):
        try:
            standard: Standard = catalogue.load(entry)
        except DefinitionError as exc:
            broken.append(_broken(entry, exc))
            continue
        for name in standard.version_names() or [None]:
            out.append((entry, standard.resolve(entry.key, name)))
    return out, broken


def _broken(entry: Entry, exc: DefinitionError) -> dict[str, Any]:
    return {
        "kind": entry.kind,
        "key": entry.key,
        "source": entry.source(),
        "problems": [p.render() for p in exc.problems],
    }


def resolve_benchmark(catalogue: Catalogue, ref: str) -> tuple[Entry, ResolvedBenchmark]:
    key, version = split_ref(ref)
    entry, standard = catalogue.benchmark(key)
    try:
        return entry, standard.resolve(key, version)
    except KeyError:
        names = ", ".join(standard.version_names()) or "none: it has no versions"
        raise LookupError(f"benchmark {key!r} has no version {version!r} (versions: {names})") from None


def fits_for(bench: ResolvedBenchmark, catalogue: Catalogue, ports: dict[str, Port]) -> tuple[list[FitResult], list[dict[str, Any]]]:
    """Every participant of the benchmark's family, fitting or with its reasons."""
    found, broken = participants(catalogue)
    family = "capability" if bench.standard.family == "capability" else "agent"
    results = [fit(bench, p, ports) for p in found if p.family == family]
    return results, [b for b in broken if b["kind"] == family]


def offers_of(participant: Resolved, ports: dict[str, Port]) -> dict[str, Any]:
    """The ports this version offers, each with everything its proof records."""
    return {name: proof_fields(proof, ports.get(name)) for name, proof in offered(participant).items()}


def not_offered(participant: Resolved, ports: dict[str, Port]) -> dict[str, Any]:
    """The proofs recorded that offer nothing for this version (failed, or made on another), each with why."""
    out = {}
    for name, proof in participant.proven.items():
        why = not_holding(participant, proof)
        if why is not None:
            out[name] = {**proof_fields(proof, ports.get(name)), "why": why}
    return out


def proof_fields(proof: Proof, port: Port | None) -> dict[str, Any]:
    """A port's proof as `list` shows it: every field it records, None where the record has none.

    `kit_version` and `skills` follow the "Kit versions" rules (none means
    kit v1; a proof from before skills shows every skill of the kit);
    `skill_checks` is what was recorded of each skill, None before skills were.
    """
    return {
        "passed": proof.passed,
        "ok": proof.ok,
        "kit_version": proof.kit_version or 1,
        "skills": sorted(shown_skills(proof, port)),
        "skill_checks": {name: {"passed": s.passed, "ok": s.ok} for name, s in proof.skills.items()} if proof.skills is not None else None,
        "score": proof.score,
        "model": proof.model,
        "version": proof.version,
        "backend": proof.backend,
        "repeat": proof.repeat,
        "checks": dict(proof.checks) if proof.checks is not None else None,
        "date": proof.date,
        "job": proof.job,
    }


def listing(catalogue: Catalogue, ports: dict[str, Port]) -> dict[str, Any]:
    benches, broken_b = benchmarks(catalogue)
    people, broken_p = participants(catalogue)
    bench_rows = []
    pairs = []
    for entry, bench in benches:
        bench_rows.append(
            {
                "ref": bench.ref,
                "family": bench.standard.family,
                "kind": bench.standard.kind,
                "needs": list(bench.standard.needs),
                "needs_skills": dict(bench.standard.needs_skills),
                "datasets": {name: ds.units for name, ds in bench.datasets.items()},
                "proven": {ds: sorted(c for c, r in checks.items() if c not in SECTIONS and not not_looked_for(c, r))
                           for ds, checks in bench.proven.items() if isinstance(checks, dict)},
                "failed": {ds: sorted(checks["failed"]) for ds, checks in bench.proven.items() if isinstance(checks, dict) and checks.get("failed")},
                "records": bench.proven,  # every record whole: what each check covered, its job and its date
                "not_checked": _not_checked(bench.proven),
                "source": entry.source(),
                "from_user": entry.from_user,
                "definition": str(entry.file),  # the file a reader (the app) loads for the rest of the definition
                "shadows": _shadows(catalogue, entry),
                "proofs": catalogue.standing(entry, bench.version).as_json(),
            }
        )
        for person in people:
            if fit(bench, person, ports).ok:
                pairs.append({"benchmark": bench.ref, "participant": person.ref})
    people_rows = [
        {
            "ref": p.ref,
            "family": p.family,
            "upstream": p.upstream.package,
            "version": p.upstream.version,
            "core": p.upstream.core,
            # where a variant's files go (agent.json `variant`): what a tool that writes variants (nullius improve) reads
            "variant": attrs.asdict(p.variant) if getattr(p, "variant", None) is not None else None,
            "offers": offers_of(p, ports),
            "not_offered": not_offered(p, ports),
            **({"fidelity": {"verdict": p.fidelity_proof.verdict, "fields": p.fidelity_proof.fields, "model": p.fidelity_proof.model}}
               if p.fidelity_proof is not None else {}),
            **_sources(catalogue, p),
        }
        for p in people
    ]
    return {
        "benchmarks": bench_rows,
        "agents": [r for r in people_rows if r["family"] == "agent"],
        "capabilities": [r for r in people_rows if r["family"] == "capability"],
        "fits": pairs,
        "controls": list(CONTROLS),
        "ports": [port_row(port) for port in ports.values()],
        "invalid": broken_b + broken_p,
    }


def port_row(port: Port) -> dict[str, Any]:
    """A registered port: its kit's checks and skills, and why `nullius conform` cannot run its kit yet (None when it can)."""
    return {"name": port.name, "family": port.family, "kit_version": port.kit_version, "basic": port.basic,
            "skills": port.skills, "conform": port.kit_cannot_run()}


def _sources(catalogue: Catalogue, participant: Resolved) -> dict[str, Any]:
    """Which copy of the definition is used, what it shadows, and where its proofs come from."""
    entry = catalogue.get(participant.family, participant.key)
    if entry is None:
        return {"source": "", "from_user": False, "definition": None, "shadows": None, "proofs": None}
    block = participant.version if participant.has_versions else None
    return {"source": entry.source(), "from_user": entry.from_user, "definition": str(entry.file), "shadows": _shadows(catalogue, entry),
            "proofs": catalogue.standing(entry, block).as_json()}


def _shadows(catalogue: Catalogue, entry: Entry) -> str | None:
    """The plugin's entry a user's definition of the same key replaces (an older Nullius's copy, say)."""
    hidden = catalogue.overridden.get((entry.kind, entry.key)) if entry.from_user else None
    return hidden.source() if hidden else None


def _not_checked(proven: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Per dataset, the checks that found nothing to look at, with why (an older leak record of 0/0 included)."""
    out: dict[str, dict[str, str]] = {}
    for ds, checks in proven.items():
        if not isinstance(checks, dict):
            continue
        found = {name: str(r.get("not_checked", "")) for name, r in (checks.get("not_checked") or {}).items() if isinstance(r, dict)}
        for name, record in checks.items():
            if name not in SECTIONS and not_looked_for(name, record):
                found.setdefault(name, f"it looked for nothing ({record.get('passed')}): every reference is under 12 characters")
        if found:
            out[ds] = found
    return out


def sources_of(catalogue: Catalogue, bench: ResolvedBenchmark) -> dict[str, Any]:
    """A benchmark's copy in use and where its proofs come from."""
    entry = catalogue.get("benchmark", bench.key)
    assert entry is not None
    return {"source": entry.source(), "shadows": _shadows(catalogue, entry), "proofs": catalogue.standing(entry, bench.version).as_json()}


def participant_sources(catalogue: Catalogue, ref: str) -> dict[str, Any]:
    key, version = split_ref(ref)
    entry, definition = catalogue.participant(key)
    return _sources(catalogue, definition.resolve(key, version))
