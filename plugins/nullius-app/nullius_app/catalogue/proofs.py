"""Proofs as the catalogue pages show them: a benchmark's checks per dataset, an agent's or capability's ports.

Everything comes from `nullius list --json`, whole: a check's record with
its date, value, bound, units and job; a failed check (kept under `failed`
until it passes) as failed; a check that found nothing to look at as not
checked, with why; a port's proof with its kit version, skills, model,
backend, repeat and counts; a proof that offers nothing, with why.
"""

from __future__ import annotations

from typing import Any

import attrs

CHECKS = ("units", "leak", "nop", "oracle")
SECTIONS = ("failed", "not_checked")
SHOWN = ("passed", "value", "expect", "units", "job", "date", "failed", "not_checked")  # the columns; the rest are details
DETAILS = ("source", "limit", "shard", "looked_for", "short", "in_prompt", "errors", "errored", "leaked", "passing", "failing",
           "problems", "folder", "sha256")


@attrs.frozen
class CheckRow:
    check: str
    state: str  # passed, failed, not checked, not proven
    record: dict[str, Any]
    why: str | None = None

    @property
    def bound(self) -> str:
        expect = self.record.get("expect") or {}
        if "at_least" in expect:
            return f"at least {number(expect['at_least'])}"
        if "at_most" in expect:
            return f"at most {number(expect['at_most'])}"
        return ""

    @property
    def details(self) -> list[tuple[str, str]]:
        return [(name.replace("_", " "), said(self.record[name])) for name in DETAILS if self.record.get(name) not in (None, "", [])]


@attrs.frozen
class DatasetProofs:
    name: str
    units: int | None
    checks: list[CheckRow]

    @property
    def failed(self) -> bool:
        return any(c.state == "failed" for c in self.checks)


def number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))
    return str(value)


def said(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return number(value)


def benchmark_proofs(row: dict[str, Any]) -> list[DatasetProofs]:
    """Each dataset (its own and any a proof was recorded for), each check's standing, failed and not-checked records."""
    records_by = {ds: r for ds, r in (row.get("records") or {}).items() if isinstance(r, dict)}
    names = list(row["datasets"]) + [ds for ds in records_by if ds not in row["datasets"]]
    return [DatasetProofs(ds, row["datasets"].get(ds), _checks(records_by.get(ds, {}), row["not_checked"].get(ds, {}))) for ds in names]


def _checks(records: dict[str, Any], not_checked: dict[str, str]) -> list[CheckRow]:
    failed = records.get("failed") or {}
    held_back = records.get("not_checked") or {}
    others = [n for n in [*records, *failed, *held_back] if n not in CHECKS and n not in SECTIONS]
    out: list[CheckRow] = []
    for name in [*CHECKS, *dict.fromkeys(others)]:
        found = False
        if isinstance(failed.get(name), dict):
            out.append(CheckRow(name, "failed", failed[name], failed[name].get("failed")))
            found = True
        if isinstance(records.get(name), dict):
            state = "not checked" if name in not_checked else "passed"
            out.append(CheckRow(name, state, records[name], not_checked.get(name)))
            found = True
        if isinstance(held_back.get(name), dict):
            out.append(CheckRow(name, "not checked", held_back[name], not_checked.get(name) or held_back[name].get("not_checked")))
            found = True
        if not found:
            out.append(CheckRow(name, "not proven", {}))
    return out


@attrs.frozen
class PortRow:
    port: str
    state: str  # offered, not offered, not proven
    proof: dict[str, Any] | None
    why: str | None = None
    conform: str | None = None  # why `nullius conform` cannot run its kit, or None

    @property
    def failed(self) -> bool:
        return self.state == "not offered" and (self.why or "").startswith("its proof failed")

    @property
    def skills(self) -> list[tuple[str, str, bool]]:
        """Each skill recorded (name, count, held); a proof from before skills were recorded: those it shows."""
        proof = self.proof or {}
        checks = proof.get("skill_checks")
        if checks:
            return [(name, s.get("passed") or "", bool(s.get("ok"))) for name, s in sorted(checks.items())]
        return [(name, "", True) for name in proof.get("skills") or []]


def port_rows(row: dict[str, Any], ports: list[dict[str, Any]]) -> list[PortRow]:
    """Every port of the definition's family: offered, recorded but not offered (why), or not proven."""
    family = [p for p in ports if p["family"] == row["family"]]
    names = [p["name"] for p in family] + [n for n in [*row["offers"], *row["not_offered"]] if n not in {p["name"] for p in family}]
    conform = {p["name"]: p["conform"] for p in family}
    out = []
    for name in names:
        if name in row["offers"]:
            out.append(PortRow(name, "offered", row["offers"][name], conform=conform.get(name)))
        elif name in row["not_offered"]:
            proof = row["not_offered"][name]
            out.append(PortRow(name, "not offered", proof, proof.get("why"), conform.get(name)))
        else:
            out.append(PortRow(name, "not proven", None, conform=conform.get(name)))
    return out


def runnable_ports(row: dict[str, Any], ports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ports of its family whose kit `nullius conform` can run now."""
    return [p for p in ports if p["family"] == row["family"] and p["conform"] is None]
