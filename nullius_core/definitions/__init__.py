"""Definitions: frozen attrs models of every file of the standard, read strictly.

Public API for plugins: the model classes, `load`, `read_json`, `write_json`,
`DefinitionError` and `Problem`.
"""

from nullius_core.definitions import versions as _versions  # noqa: F401  (registers the versions hooks)
from nullius_core.definitions.agent import (
    AGENT_SCHEMA,
    CAPABILITY_SCHEMA,
    Agent,
    Capability,
    ModelWiring,
    Resolved,
    VersionBlock,
    Versions,
)
from nullius_core.definitions.benchmark import (
    STANDARD_SCHEMA,
    BenchmarkVersion,
    BenchmarkVersions,
    Control,
    Controls,
    Dataset,
    Driver,
    Kit,
    Limits,
    ResolvedBenchmark,
    Standard,
)
from nullius_core.definitions.common import Install, Option, Proof, SkillProof, Upstream, fraction
from nullius_core.definitions.converter import structure, unstructure
from nullius_core.definitions.entry import CatalogueEntry, UpstreamSetting, UpstreamSettings
from nullius_core.definitions.files import FILE_KINDS, dumps, load, read_json, write_json
from nullius_core.definitions.problems import DefinitionError, Problem

__all__ = [
    "AGENT_SCHEMA",
    "CAPABILITY_SCHEMA",
    "FILE_KINDS",
    "STANDARD_SCHEMA",
    "Agent",
    "BenchmarkVersion",
    "BenchmarkVersions",
    "Capability",
    "CatalogueEntry",
    "Control",
    "Controls",
    "Dataset",
    "DefinitionError",
    "Driver",
    "Install",
    "Kit",
    "Limits",
    "ModelWiring",
    "Option",
    "Problem",
    "Proof",
    "Resolved",
    "ResolvedBenchmark",
    "SkillProof",
    "Standard",
    "Upstream",
    "UpstreamSetting",
    "UpstreamSettings",
    "VersionBlock",
    "Versions",
    "dumps",
    "fraction",
    "load",
    "read_json",
    "structure",
    "unstructure",
    "write_json",
]
