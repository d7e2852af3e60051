"""`benchmark.json` (a benchmark's catalogue entry) and `upstream-settings.json`."""

from __future__ import annotations

import re
from typing import Any, Literal

import attrs

from nullius_core.definitions.common import Issues
from nullius_core.definitions.converter import extensions_field


@attrs.frozen(kw_only=True)
class CatalogueEntry:
    """How a benchmark is shown: its name, what to know, what it cannot do."""

    name: str
    summary: str
    harness: Literal["standard", "harbor"] = "standard"
    good_to_know: list[str] = attrs.field(factory=list)
    limitations: list[str] = attrs.field(factory=list)
    reference_agent: str | None = None
    links: dict[str, str] = attrs.field(factory=dict)
    icon: str | None = None
    extensions: dict[str, Any] = extensions_field()


DECISION = re.compile(
    r"^(option:(?P<option>[A-Za-z0-9_]+)"
    r"|setup:(?P<setup>original|model)"
    r"|dataset:(?P<dataset>[a-z0-9][a-z0-9._-]*)"
    r"|fixed:(?P<fixed>.+) - (?P<fixed_why>.+)"
    r"|not offered - (?P<not_why>.+))$"
)


@attrs.frozen(kw_only=True)
class UpstreamSetting:
    """One setting of one of the upstream's evaluation entry points, and what Nullius does with it."""

    entry: str
    setting: str
    nullius: str
    values: Any = None
    default: Any = None
    summary: str | None = None

    def _invariants(self) -> Issues:
        if not DECISION.match(self.nullius):
            yield ("nullius",), (
                "expected exactly one of option:<name>, setup:original, setup:model, "
                f"dataset:<id>, 'fixed:<value> - <why>' or 'not offered - <why>', found {self.nullius!r}"
            )

    def decision(self) -> tuple[str, str] | None:
        match = DECISION.match(self.nullius)
        if not match:
            return None
        for kind in ("option", "setup", "dataset"):
            if match.group(kind):
                return kind, match.group(kind)
        return ("fixed", match.group("fixed")) if match.group("fixed") else ("not offered", "")


@attrs.frozen(kw_only=True)
class UpstreamSettings:
    """Every setting of every evaluation entry point of the upstream."""

    settings: list[UpstreamSetting]
    extensions: dict[str, Any] = extensions_field()
