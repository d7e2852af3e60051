"""Reading scripts: files (JSON, TOML), dicts, and Python callables named `module:function`.

Structuring uses the project's strict converter, so a wrong key or value is
reported as `FILE: $.rules[0].when.contans: unknown key: ...`, every problem at once.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import tomllib
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
from cattrs.errors import ClassValidationError, IterableValidationError

from nullius_core.definitions.converter import Invariants, Mismatch, make_converter, problems_from
from nullius_core.definitions.problems import Problem
from nullius_core.testing.fake_model.openrouter import OpenRouter
from nullius_core.testing.fake_model.script import Reply, Rule, Script

_converter = make_converter()


class ScriptError(Exception):
    """A script could not be read; the message names the file (or source) and every bad field."""

    def __init__(self, problems: list[Problem] | str, source: str | None = None):
        if isinstance(problems, str):
            problems = [Problem("$", problems)]
        self.problems = problems
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__("\n".join(f"{where}{p.path}: {p.message}" for p in problems))


@attrs.frozen(kw_only=True)
class _ScriptData:
    rules: list[Rule] = attrs.field(factory=list)
    default: Reply = attrs.field(factory=lambda: Script().default)
    openrouter: OpenRouter | None = None


def _structure(data: Any, cl: type, source: str | None, path: str = "$") -> Any:
    try:
        return _converter.structure(data, cl)
    except (ClassValidationError, IterableValidationError, Mismatch, Invariants) as exc:
        raise ScriptError(problems_from(exc, path), source) from None


def script_from_dict(data: Any, source: str | None = None, base: Path | None = None) -> Script:
    """A script from its data form: {"rules": [...], "default": {...}, "respond": "mod:fn"}."""
    if not isinstance(data, Mapping):
        raise ScriptError(f"a script is an object with rules and default, found {type(data).__name__}", source)
    data = dict(data)
    respond_spec = data.pop("respond", None)
    respond = None
    if respond_spec is not None:
        if not isinstance(respond_spec, str):
            raise ScriptError([Problem("$.respond", "expected a string 'module:function' or 'file.py:function'")], source)
        try:
            respond = load_callable(respond_spec, base=base)
        except ScriptError as exc:
            raise ScriptError([Problem("$.respond", str(exc))], source) from None
    parsed = _structure(data, _ScriptData, source)
    return Script(rules=parsed.rules, default=parsed.default, respond=respond, openrouter=parsed.openrouter)


def reply_from_dict(data: Any, source: str | None = None) -> Reply:
    return _structure(data, Reply, source)


def load_callable(spec: str, base: Path | None = None) -> Callable[..., Any]:
    """`package.module:function` or `path/to/file.py:function` (relative to `base`)."""
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name.isidentifier():
        raise ScriptError(f"expected 'module:function' or 'file.py:function', found {spec!r}")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_absolute() and base is not None:
            path = base / path
        if not path.is_file():
            raise ScriptError(f"no such file: {path}")
        mod_name = f"_nullius_fake_script_{abs(hash(str(path.resolve())))}"
        module_spec = importlib.util.spec_from_file_location(mod_name, path)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[mod_name] = module
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001 - reported as the script's problem
            sys.modules.pop(mod_name, None)
            raise ScriptError(f"{path} failed to load: {type(exc).__name__}: {exc}") from exc
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise ScriptError(f"cannot import {target!r}: {exc}") from exc
    func = getattr(module, name, None)
    if not callable(func):
        raise ScriptError(f"{target} has no function {name!r}")
    return func


def load_script(spec: str | Path) -> Script:
    """A script from a .json or .toml file, or a callable named `module:function` / `file.py:function`."""
    text = str(spec)
    path = Path(text)
    if path.suffix.lower() in (".json", ".toml") or path.is_file():
        if not path.is_file():
            raise ScriptError("no such file", text)
        raw = path.read_bytes()
        try:
            if path.suffix.lower() == ".toml":
                data = tomllib.loads(raw.decode("utf-8"))
            else:
                data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ScriptError(f"not valid {path.suffix.lstrip('.').upper() or 'JSON'}: {exc}", text) from None
        return script_from_dict(data, source=text, base=path.parent)
    return Script(respond=load_callable(text))


ScriptLike = typing.Union[Script, Mapping[str, Any], Callable[..., Any], str, Path, None]


def as_script(value: ScriptLike) -> Script:
    """Whatever a caller gave as a script, as a Script."""
    if value is None:
        return Script()
    if isinstance(value, Script):
        return value
    if isinstance(value, Mapping):
        return script_from_dict(value, source="<script>")
    if isinstance(value, (str, Path)):
        return load_script(value)
    if callable(value):
        return Script(respond=value)
    raise TypeError(f"a script is a Script, a dict, a callable or a path, not {type(value).__name__}")


def as_reply(value: Any, source: str = "<respond>") -> Reply | None:
    """What a `respond` callable returned, as a Reply (None stays None)."""
    if value is None or isinstance(value, Reply):
        return value
    return reply_from_dict(value, source)
