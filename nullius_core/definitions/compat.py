"""The older capability names, read as the standard's "Capability naming compatibility" says.

Earlier catalogues used `features/`, `feature.json`, `nullius.feature/v1`, the
`feature` family and ports such as `feature.memory/v1`. They stay readable: the
names are normalised in memory, and everything else (commands, wrapper file
names, options, recorded proofs) is kept as it is.
"""

from __future__ import annotations

import copy
from typing import Any

OLD_SCHEMA = "nullius.feature/v1"
OLD_FOLDER = "features"
OLD_FILE = "feature.json"
OLD_FAMILY = "feature"
OLD_PORT_PREFIX = "feature."


def canonical_port(name: str) -> str:
    """`feature.memory/v1` -> `cap.memory/v1`; any other name as it is."""
    if isinstance(name, str) and name.startswith(OLD_PORT_PREFIX):
        return "cap." + name[len(OLD_PORT_PREFIX):]
    return name


def canonical_family(name: str) -> str:
    return "capability" if name == OLD_FAMILY else name


def _ports_keys(mapping: Any) -> Any:
    if not isinstance(mapping, dict):
        return mapping
    return {canonical_port(k): v for k, v in mapping.items()}


def normalise_capability(raw: Any) -> Any:
    """A capability.json or an old feature.json, in the canonical names."""
    if not isinstance(raw, dict):
        return raw
    out = copy.copy(raw)
    if out.get("schema") == OLD_SCHEMA:
        out["schema"] = "nullius.capability/v1"
    if "proven" in out:
        out["proven"] = _ports_keys(out["proven"])
    versions = out.get("versions")
    if isinstance(versions, dict):
        out["versions"] = {
            name: ({**block, "proven": _ports_keys(block["proven"])} if isinstance(block, dict) and "proven" in block else block)
            for name, block in versions.items()
        }
    return out


def normalise_standard(raw: Any) -> Any:
    """A standard.json whose family or ports use the older names, canonical."""
    if not isinstance(raw, dict):
        return raw
    out = copy.copy(raw)
    if isinstance(out.get("family"), str):
        out["family"] = canonical_family(out["family"])
    if isinstance(out.get("needs"), list):
        out["needs"] = [canonical_port(p) for p in out["needs"]]
    if "needs_skills" in out:
        out["needs_skills"] = _ports_keys(out["needs_skills"])
    kit = out.get("kit")
    if isinstance(kit, dict) and "port" in kit:
        out["kit"] = {**kit, "port": canonical_port(kit["port"])}
    return out
