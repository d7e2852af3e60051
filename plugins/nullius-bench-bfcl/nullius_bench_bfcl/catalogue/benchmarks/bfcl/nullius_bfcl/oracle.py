"""The oracle's calls for a single-turn question: the possible answer's calls, each argument its first allowed value.

A possible answer lists, per call, each parameter's allowed values; `""`
among them means the parameter may be left out. The oracle takes the first
value that is not `""` (and leaves a parameter out when `""` is all it may
be), recursing into a dict's own allowed values. For Java and JavaScript,
BFCL's FC models pass every argument as a string in the language's syntax
(the function documents say so): the oracle writes each value as the
upstream's type converters (java_type_converter, js_type_converter) read it
back.
"""

from __future__ import annotations

import json
import re

OPTIONAL = ""


def first_allowed(values: list):
    """The first allowed value that is not the mark of an optional parameter; OPTIONAL when there is none."""
    for value in values:
        if not (isinstance(value, str) and value == OPTIONAL):
            return value
    return OPTIONAL


def materialize(value):
    """A chosen value with its nested dicts' own allowed values chosen too (a dict of lists is a dict's options)."""
    if isinstance(value, dict):
        out = {}
        for key, allowed in value.items():
            chosen = first_allowed(allowed) if isinstance(allowed, list) else allowed
            if not (isinstance(chosen, str) and chosen == OPTIONAL):
                out[key] = materialize(chosen)
        return out
    if isinstance(value, list):
        return [materialize(item) for item in value]
    return value


def _java(value, kind: str, nested: str | None) -> str:
    if isinstance(value, str):
        return value  # already Java source: a variable, an expression, or a String's text
    if kind in ("Array", "ArrayList"):
        items = ", ".join(_java_item(v, nested, kind == "Array") for v in value)
        if kind == "Array":
            return f"new {nested or 'Object'}[]{{{items}}}"
        return f"new ArrayList<>(Arrays.asList({items}))" if value else "new ArrayList<>()"
    if kind == "HashMap":
        puts = " ".join(f"put({_java_item(k, 'String')}, {_java_item(v, None)});" for k, v in value.items())
        return f"new HashMap<String, String>() {{{{ {puts} }}}}"
    if kind == "boolean":
        return "true" if value else "false"
    if kind == "long":
        return f"{value}L"
    if kind == "float":
        return f"{value}f"
    return value if isinstance(value, str) else json.dumps(value)


def _java_item(value, nested: str | None, in_array: bool = False) -> str:
    if nested == "char":
        return f"'{value}'"
    if nested == "String" and in_array:
        return value  # parse_array hands each element to java_type_converter("String"), which keeps quotes
    if nested == "String" or (nested is None and isinstance(value, str)):
        return json.dumps(value)
    return _java(value, nested or "String", None)


def _js(value, kind: str) -> str:
    if isinstance(value, str):
        return value
    if kind == "Boolean":
        return "true" if value else "false"
    if kind == "Bigint":
        return f"{value}n"
    if kind in ("array", "dict"):
        return _js_literal(value)
    return value if isinstance(value, str) else json.dumps(value)


def _js_literal(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_js_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_js_literal(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return json.dumps(value)


def render(value, spec: dict, category: str):
    """The argument as the agent passes it: as it is for Python, a string in the language's syntax for Java and JavaScript."""
    kind = spec.get("type", "string")
    nested = (spec.get("items") or {}).get("type")
    if category == "simple_java":
        return _java(value, kind, nested)
    if category == "simple_javascript":
        return _js(value, kind)
    return value


def tool_name(function: str) -> str:
    """The tool's name as served (BFCL's FC conversion: a `.` becomes `_`)."""
    return re.sub(r"\.", "_", function)


def calls(entry: dict, answer_entry: dict | None, category: str) -> list[dict]:
    """The oracle's calls, in the possible answer's order: [{"tool", "arguments"}]."""
    if answer_entry is None:
        return relevance_call(entry) if "irrelevance" not in category else []
    docs = {f["name"]: f for f in entry.get("function", [])}
    out = []
    for call in answer_entry["ground_truth"]:
        (function, params), = call.items()
        properties = docs.get(function, {}).get("parameters", {}).get("properties", {})
        required = docs.get(function, {}).get("parameters", {}).get("required", [])
        arguments = {}
        for param, allowed in params.items():
            if param not in properties and OPTIONAL in allowed:
                continue  # a parameter the function does not declare passes only when left out
            chosen = first_allowed(allowed)
            if isinstance(chosen, str) and chosen == OPTIONAL:
                if param in required and OPTIONAL in allowed:
                    arguments[param] = OPTIONAL  # required, yet "" is all it may be: "" is the value that passes
                continue
            arguments[param] = render(materialize(chosen), properties.get(param, {}), category)
        out.append({"tool": tool_name(function), "arguments": arguments})
    return out


PLACEHOLDERS = {"string": "", "integer": 0, "float": 0.0, "number": 0.0, "boolean": False, "array": [], "tuple": [],
                "dict": {}, "object": {}}


def relevance_call(entry: dict) -> list[dict]:
    """live_relevance has no possible answer: BFCL passes any call it can decode. One call of the first function,
    each required parameter at its declared default, else an empty value of its type."""
    function = entry["function"][0]
    properties = function.get("parameters", {}).get("properties", {})
    arguments = {}
    for param in function.get("parameters", {}).get("required", []):
        spec = properties.get(param, {})
        arguments[param] = spec["default"] if "default" in spec else PLACEHOLDERS.get(spec.get("type"), "")
    return [{"tool": tool_name(function["name"]), "arguments": arguments}]
