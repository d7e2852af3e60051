"""A port and its conformance kit, as plugins register them."""

from __future__ import annotations

from pathlib import Path

import attrs

from nullius_core.definitions import Kit, Standard, load, read_json
from nullius_core.definitions.common import bad_port


@attrs.frozen(kw_only=True)
class Port:
    """A named, versioned contract (`agent.workspace/v1`); its contract never changes.

    `kit` is None for a port defined without a kit yet (`agent.browser/v1`);
    `kit_folder` holds the kit's standard.json (and, once it runs, its driver).
    """

    name: str
    contract: str
    kit: Kit | None = None
    kit_folder: Path | None = None
    kit_summary: str | None = None

    def __attrs_post_init__(self) -> None:
        why = bad_port(self.name)
        if why:
            raise ValueError(why)

    @property
    def family(self) -> str:
        return "agent" if self.name.startswith("agent.") else "capability"

    @property
    def kit_version(self) -> int | None:
        return self.kit.kit_version if self.kit else None

    @property
    def skills(self) -> dict[str, str]:
        return dict(self.kit.skills) if self.kit else {}

    @property
    def basic(self) -> list[str]:
        return list(self.kit.basic) if self.kit else []

    def kit_cannot_run(self) -> str | None:
        """Why `nullius conform` cannot run this port's kit yet (no kit, or a kit with no driver), or None when it can."""
        if self.kit is None or self.kit_folder is None:
            return "the port has no kit yet"
        if "driver" not in read_json(self.kit_folder / "standard.json"):
            return "its kit has no driver yet"
        return None

    @classmethod
    def from_kit(cls, folder: Path, contract: str) -> Port:
        """The port a kit folder's standard.json declares in its `kit` block."""
        standard: Standard = load(folder / "standard.json")
        if standard.kit is None:
            raise ValueError(f"{folder / 'standard.json'}: $.kit: required key missing: expected the kit's port, checks and skills")
        return cls(
            name=standard.kit.port,
            contract=contract,
            kit=standard.kit,
            kit_folder=folder,
            kit_summary=standard.summary,
        )
