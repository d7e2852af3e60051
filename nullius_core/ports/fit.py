"""Which pairs fit: every needed port offered, every needed skill shown.

A port is offered only through a proof that holds (all its basic checks
passed) and that was made on the version that would run. Proofs are read by
the "Kit versions" rules: a proof with no `kit_version` is a kit-v1 proof and
still a proof; a proof from before skills were recorded shows every skill of
the current kit.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from nullius_core.definitions import Proof, Resolved, ResolvedBenchmark, Standard
from nullius_core.ports.model import Port


@attrs.frozen
class FitResult:
    """Whether one participant (an agent or capability version) can run a benchmark, and why not."""

    participant: str
    ok: bool
    reasons: tuple[str, ...] = ()

    def line(self) -> str:
        return f"{self.participant}: " + ("fits" if self.ok else "; ".join(self.reasons))


def proof_problem(participant: Resolved, port: str, proof: Proof | None) -> str | None:
    """Why `proof` does not offer `port` for this version, or None when it does."""
    if proof is None:
        return f"missing port {port}"
    why = not_holding(participant, proof)
    return f"missing port {port} ({why})" if why else None


def not_holding(participant: Resolved, proof: Proof) -> str | None:
    """Why a recorded proof offers nothing for this version (it failed, or was made on another), or None when it offers its port."""
    if not proof.held:
        return f"its proof failed: {proof.passed}"
    wanted = participant.upstream.version
    if proof.version is not None and wanted is not None and proof.version != wanted:
        return f"proven on upstream version {proof.version}, this is {wanted}"
    return None


def offered(participant: Resolved) -> dict[str, Proof]:
    """The ports this version offers: those whose proofs hold for it."""
    return {
        port: proof
        for port, proof in participant.proven.items()
        if proof_problem(participant, port, proof) is None
    }


def shown_skills(proof: Proof, port: Port | None) -> set[str]:
    """The skills a proof shows; a proof from before skills shows every current one."""
    if proof.skills is None:
        return set(port.skills) if port is not None else set()
    return {name for name, skill in proof.skills.items() if skill.ok}


def needs_of(standard: Standard, options: Mapping[str, str] | None = None) -> list[str]:
    """The ports a run with these option values needs: an option value's `needs.VALUE.ports` instead of `needs`.

    Unset options take their default, so without options this is what a run
    with the defaults needs (what `nullius list` and `fit` say).
    """
    for name, option in (standard.options or {}).items():
        value = (options or {}).get(name, option.default)
        needed = (option.needs or {}).get(value) if value is not None else None
        if needed is not None and needed.ports is not None:
            return list(needed.ports)
    return list(standard.needs)


def fit(benchmark: ResolvedBenchmark, participant: Resolved, ports: Mapping[str, Port],
        options: Mapping[str, str] | None = None) -> FitResult:
    """Can `participant` run `benchmark` (with these benchmark options)? Every reason it cannot, in the order of its needs."""
    standard = benchmark.standard
    family = "capability" if standard.family == "capability" else "agent"
    kind = participant.family
    if family != kind:
        return FitResult(participant.ref, False, (f"a {kind} cannot run an {family} benchmark" if family == "agent" else f"an {kind} cannot run a {family} benchmark",))
    reasons: list[str] = []
    for port in needs_of(standard, options):
        problem = proof_problem(participant, port, participant.proven.get(port))
        if problem:
            reasons.append(problem)
            continue
        skills = shown_skills(participant.proven[port], ports.get(port))
        for skill in standard.needs_skills.get(port, []):
            if skill not in skills:
                reasons.append(f"skill {skill} of {port} not shown")
    return FitResult(participant.ref, not reasons, tuple(reasons))

