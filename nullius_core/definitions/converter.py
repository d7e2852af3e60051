"""The strict cattrs converter that reads and writes every definition file.

cattrs does the structuring; this module makes it strict and exact:

* primitives are never coerced (`"3"` is not an integer, `3` is not a string);
* lists must be JSON lists and objects JSON objects with string keys;
* unknown keys are refused, except extension keys (`x-...`) on classes that
  keep them in an `extensions` field, so a round trip loses nothing;
* a JSON key that is not a Python name (`from`) is given by field metadata;
* a class may state invariants (`_invariants`) that are checked as it is
  structured, so they are reported together with every other problem;
* writing omits values left at their defaults, so a file read and written
  again keeps its meaning and its shape.
"""

from __future__ import annotations

import typing
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Literal

import attrs
import cattrs
from cattrs.cols import is_mapping, is_sequence
from cattrs.errors import (
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
)
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from nullius_core.definitions.problems import Problem, child_path, describe_value

EXTENSION_PREFIX = "x-"
JSON_KEY = "nullius_json_key"


class Mismatch(Exception):
    """A value of the wrong kind: carries what was expected and what was found."""

    def __init__(self, expected: str, found: Any):
        self.expected = expected
        self.found = found
        super().__init__(f"expected {expected}, found {describe_value(found)}")


class Invariants(Exception):
    """Broken rules of a structured object: (relative path, message) pairs."""

    def __init__(self, issues: list[tuple[tuple[str | int, ...], str]]):
        self.issues = issues
        super().__init__("; ".join(m for _, m in issues))


def json_key(attribute: attrs.Attribute) -> str:
    return attribute.metadata.get(JSON_KEY, attribute.name)


def renamed(key: str, **kwargs: Any) -> Any:
    """An attrs field whose JSON key differs from its Python name (`from`)."""
    metadata = dict(kwargs.pop("metadata", {}) or {})
    metadata[JSON_KEY] = key
    return attrs.field(metadata=metadata, **kwargs)


def extensions_field() -> Any:
    """The field that keeps a class's `x-...` keys for the round trip."""
    return attrs.field(factory=dict, kw_only=True)


# --- describing types ------------------------------------------------------

_ARTICLES = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


def describe_type(t: Any) -> str:
    if t in _ARTICLES:
        return _ARTICLES[t]
    if t is Any:
        return "any value"
    origin = typing.get_origin(t)
    args = typing.get_args(t)
    if origin is Literal:
        return repr(args[0]) if len(args) == 1 else "one of " + ", ".join(repr(a) for a in args)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        parts = [describe_type(a) for a in args if a is not type(None)]
        text = " or ".join(parts)
        return text + " or null" if type(None) in args else text
    if is_sequence(t) and args:
        inner = describe_type(args[0])
        return f"a list of {_plural(inner)}"
    if is_mapping(t) and len(args) == 2:
        return f"an object of {_plural(describe_type(args[1]))}"
    if attrs.has(t):
        return "an object"
    return getattr(t, "__name__", str(t))


def _plural(text: str) -> str:
    for article in ("an ", "a "):
        if text.startswith(article):
            noun = text[len(article):]
            if noun.startswith("object of "):
                return "objects of " + noun[len("object of "):]
            if noun.startswith("list of "):
                return "lists of " + noun[len("list of "):]
            return noun + "s"
    return text


# --- the converter ---------------------------------------------------------


def _strict(t: type, check: Callable[[Any], bool]) -> Callable[[Any, Any], Any]:
    def hook(value: Any, _: Any) -> Any:
        if not check(value):
            raise Mismatch(describe_type(t), value)
        return value

    return hook


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    conv.register_structure_hook(str, _strict(str, lambda v: isinstance(v, str)))
    conv.register_structure_hook(int, _strict(int, _is_int))
    conv.register_structure_hook(bool, _strict(bool, lambda v: isinstance(v, bool)))
    conv.register_structure_hook(
        float, lambda v, _: float(_strict(float, _is_number)(v, _))
    )
    conv.register_structure_hook(Any, lambda v, _: v)

    def literal_factory(t: Any) -> Callable[[Any, Any], Any]:
        allowed = typing.get_args(t)

        def hook(value: Any, _: Any) -> Any:
            if value not in allowed or type(value) not in {type(a) for a in allowed}:
                raise Mismatch(describe_type(t), value)
            return value

        return hook

    conv.register_structure_hook_factory(
        lambda t: typing.get_origin(t) is Literal, literal_factory
    )

    def list_factory(t: Any) -> Callable[[Any, Any], Any]:
        (inner,) = typing.get_args(t) or (Any,)
        inner_hook = conv.get_structure_hook(inner)

        def hook(value: Any, _: Any) -> list[Any]:
            if not isinstance(value, list):
                raise Mismatch(describe_type(t), value)
            out, errors = [], []
            for i, item in enumerate(value):
                try:
                    out.append(inner_hook(item, inner))
                except Exception as exc:  # noqa: BLE001 - collected, reported with its path
                    exc.__notes__ = [*getattr(exc, "__notes__", []), IndexNote(i, inner)]
                    errors.append(exc)
            if errors:
                raise IterableValidationError(f"While structuring {t!r}", errors, t)
            return out

        return hook

    conv.register_structure_hook_factory(
        lambda t: typing.get_origin(t) is list or t is list, list_factory
    )

    def dict_factory(t: Any) -> Callable[[Any, Any], Any]:
        args = typing.get_args(t)
        inner = args[1] if len(args) == 2 else Any
        inner_hook = conv.get_structure_hook(inner)

        def hook(value: Any, _: Any) -> dict[str, Any]:
            if not isinstance(value, dict):
                raise Mismatch(describe_type(t), value)
            out, errors = {}, []
            for key, item in value.items():
                try:
                    out[key] = inner_hook(item, inner)
                except Exception as exc:  # noqa: BLE001 - collected, reported with its path
                    exc.__notes__ = [*getattr(exc, "__notes__", []), IndexNote(key, inner)]
                    errors.append(exc)
            if errors:
                raise IterableValidationError(f"While structuring {t!r}", errors, t)
            return out

        return hook

    conv.register_structure_hook_factory(
        lambda t: typing.get_origin(t) is dict or t is dict, dict_factory
    )

    conv.register_structure_hook_factory(attrs.has, lambda cl: _class_structure(conv, cl))
    conv.register_unstructure_hook_factory(attrs.has, lambda cl: _class_unstructure(conv, cl))
    return conv


class IndexNote(str):
    """Marks an item's index or key, as cattrs's IterableValidationNote does."""

    def __new__(cls, index: int | str, type_: Any) -> IndexNote:
        note = super().__new__(cls, f"Structuring item {index!r}")
        note.index = index  # type: ignore[attr-defined]
        note.type = type_  # type: ignore[attr-defined]
        return note


def _renames(cl: type) -> dict[str, Any]:
    return {
        a.name: override(rename=json_key(a))
        for a in attrs.fields(cl)
        if json_key(a) != a.name
    }


def _class_structure(conv: cattrs.Converter, cl: type) -> Callable[[Any, Any], Any]:
    names = {a.name for a in attrs.fields(cl)}
    keeps_extensions = "extensions" in names
    overrides = _renames(cl)
    if keeps_extensions:
        overrides["extensions"] = override(omit=True)
    base = make_dict_structure_fn(cl, conv, _cattrs_forbid_extra_keys=True, **overrides)
    invariants = getattr(cl, "_invariants", None)

    def hook(value: Any, _: Any) -> Any:
        if not isinstance(value, dict):
            raise Mismatch("an object", value)
        extensions = {}
        if keeps_extensions:
            extensions = {k: v for k, v in value.items() if k.startswith(EXTENSION_PREFIX)}
            value = {k: v for k, v in value.items() if not k.startswith(EXTENSION_PREFIX)}
        obj = base(value, cl)
        if extensions:
            obj = attrs.evolve(obj, extensions=extensions)
        _remember_keys(obj, value.keys())
        if invariants is not None:
            issues = list(invariants(obj))
            if issues:
                raise Invariants(issues)
        return obj

    return hook


# The JSON keys each structured object was read from, so that writing it back
# keeps a key the file spelled out even when its value equals the default.
# Kept beside the frozen objects (by id, dropped when the object goes) rather
# than as a field of every model.
_PRESENT: dict[int, frozenset[str]] = {}


def _remember_keys(obj: Any, keys: Any) -> None:
    _PRESENT[id(obj)] = frozenset(keys)
    weakref.finalize(obj, _PRESENT.pop, id(obj), None)


def present_keys(obj: Any) -> frozenset[str]:
    return _PRESENT.get(id(obj), frozenset())


def _class_unstructure(conv: cattrs.Converter, cl: type) -> Callable[[Any], Any]:
    names = {a.name for a in attrs.fields(cl)}
    overrides = _renames(cl)
    if "extensions" in names:
        overrides["extensions"] = override(omit=True)
    base = make_dict_unstructure_fn(cl, conv, _cattrs_omit_if_default=False, **overrides)
    defaults = {
        json_key(a): a.default
        for a in attrs.fields(cl)
        if a.default is not attrs.NOTHING and a.name != "extensions"
    }

    def hook(obj: Any) -> dict[str, Any]:
        out = base(obj)
        present = present_keys(obj)
        for key, default in defaults.items():
            if key in out and key not in present and _is_default(out[key], default):
                del out[key]
        if "extensions" in names:
            out.update(obj.extensions)
        return out

    return hook


def _is_default(value: Any, default: Any) -> bool:
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        return value == default.factory()
    return value == default


converter = make_converter()


# --- problems out of cattrs's exception tree --------------------------------


def problems_from(exc: BaseException, path: str = "$") -> list[Problem]:
    """Flatten a structuring error into problems, each with its JSON path."""
    out: list[Problem] = []
    if isinstance(exc, ClassValidationError):
        json_names = {a.name: json_key(a) for a in attrs.fields(exc.cl)}
        for sub in exc.exceptions:
            note = _attribute_note(sub)
            if note is None:
                out.extend(problems_from(sub, path))
                continue
            key = json_names.get(note.name, note.name)
            if isinstance(sub, KeyError):
                out.append(Problem(child_path(path, key), f"required key missing: expected {describe_type(note.type)}"))
            else:
                out.extend(problems_from(sub, child_path(path, key)))
        return out
    if isinstance(exc, IterableValidationError):
        for sub in exc.exceptions:
            note = _index_note(sub)
            out.extend(problems_from(sub, child_path(path, note.index) if note else path))
        return out
    if isinstance(exc, ForbiddenExtraKeysError):
        allowed = sorted(json_key(a) for a in attrs.fields(exc.cl) if a.name != "extensions")
        for key in sorted(exc.extra_fields):
            out.append(Problem(child_path(path, key), f"unknown key: expected one of {', '.join(allowed)}"))
        return out
    if isinstance(exc, Invariants):
        for rel, message in exc.issues:
            p = path
            for part in rel:
                p = child_path(p, part)
            out.append(Problem(p, message))
        return out
    if isinstance(exc, Mismatch):
        return [Problem(path, str(exc))]
    return [Problem(path, f"{type(exc).__name__}: {exc}")]


def _attribute_note(exc: BaseException) -> Any:
    for note in getattr(exc, "__notes__", []):
        if hasattr(note, "name") and hasattr(note, "type"):
            return note
    return None


def _index_note(exc: BaseException) -> Any:
    for note in reversed(getattr(exc, "__notes__", [])):
        if hasattr(note, "index"):
            return note
    return None


def structure(data: Any, cl: type, path: str = "$") -> Any:
    """Structure `data` as `cl`, raising `DefinitionError` with every problem."""
    from nullius_core.definitions.problems import DefinitionError

    try:
        return converter.structure(data, cl)
    except (ClassValidationError, IterableValidationError, Mismatch, Invariants) as exc:
        raise DefinitionError(problems_from(exc, path)) from None


def unstructure(obj: Any) -> Any:
    return converter.unstructure(obj)


def mapping_of(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
