"""`versions`: `{"default": NAME, NAME: {...}, ...}` read as one typed object.

The file keeps the default's name beside the blocks; in memory the two are
apart (`default`, `blocks`), so nothing confuses a version named like a key.
"""

from __future__ import annotations

from typing import Any

from cattrs.errors import IterableValidationError

from nullius_core.definitions.agent import VersionBlock, Versions
from nullius_core.definitions.benchmark import BenchmarkVersion, BenchmarkVersions
from nullius_core.definitions.converter import IndexNote, Mismatch, converter


def _register(versions_cls: type, block_cls: type) -> None:
    block_hook = converter.get_structure_hook(block_cls)

    def structure(value: Any, _: Any) -> Any:
        if not isinstance(value, dict):
            raise Mismatch("an object of versions with a \"default\"", value)
        errors: list[Exception] = []
        default = value.get("default")
        if not isinstance(default, str):
            exc = Mismatch("the name of the default version", default)
            exc.__notes__ = [IndexNote("default", str)]
            errors.append(exc)
        blocks = {}
        for name, block in value.items():
            if name == "default":
                continue
            try:
                blocks[name] = block_hook(block, block_cls)
            except Exception as exc:  # noqa: BLE001 - collected, reported with its path
                exc.__notes__ = [*getattr(exc, "__notes__", []), IndexNote(name, block_cls)]
                errors.append(exc)
        if errors:
            raise IterableValidationError("While structuring versions", errors, versions_cls)
        return versions_cls(default=default, blocks=blocks)

    def unstructure(obj: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"default": obj.default}
        for name, block in obj.blocks.items():
            out[name] = converter.unstructure(block)
        return out

    converter.register_structure_hook(versions_cls, structure)
    converter.register_unstructure_hook(versions_cls, unstructure)


_register(Versions, VersionBlock)
_register(BenchmarkVersions, BenchmarkVersion)
