"""What `nullius fidelity` keeps of a model request, and how two ways' requests are compared.

The prompt is never kept: the instructions, each tool and each input item
(each message, for the Messages API) are kept as a sha256 digest, so two runs
can be compared without their text. `client_metadata` and `prompt_cache_key`
are left out: they name the session, never the configuration.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

LEFT_OUT = frozenset({"client_metadata", "prompt_cache_key"})
ITEMS = ("input", "messages")  # the conversation's items, compared one by one in a unit's first request
DIGESTED = frozenset({"instructions", "system"})  # the prompt's text, kept as a digest
ABSENT = "(absent)"


def digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _plain(value: Any) -> Any:
    """A value as it may be kept: a number, true/false, null or a short word; anything else as its digest."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str) and len(value) <= 40 and not any(c.isspace() for c in value):
        return value
    return digest(value)


def _tool_name(tool: Any, i: int) -> str:
    if not isinstance(tool, dict):
        return str(i)
    function = tool.get("function") if isinstance(tool.get("function"), dict) else {}
    return str(tool.get("name") or function.get("name") or tool.get("type") or i)


def configuration(body: dict[str, Any]) -> dict[str, Any]:
    """A request's configuration fields: `reasoning.effort`, `tools[<name>]`, `instructions`, `include`, ..."""
    out: dict[str, Any] = {}
    for key, value in body.items():
        if key in LEFT_OUT or key in ITEMS:
            continue
        if key in DIGESTED:
            out[key] = digest(value)
        elif key == "tools" and isinstance(value, list):
            out["tools"] = len(value)
            for i, tool in enumerate(value):
                out[f"tools[{_tool_name(tool, i)}]"] = digest(tool)
        elif isinstance(value, dict):
            for sub, inner in value.items():
                out[f"{key}.{sub}"] = _plain(inner)
        elif isinstance(value, list) and all(isinstance(v, str) and len(v) <= 80 for v in value):
            out[key] = json.dumps(value)  # `include`: names, never the prompt
        else:
            out[key] = _plain(value)
    return out


def items(body: dict[str, Any]) -> dict[str, Any]:
    """A request's conversation, item by item, as digests: `input[0]`, `input[1]`, ... and their count."""
    for key in ITEMS:
        value = body.get(key)
        if isinstance(value, list):
            return {key: len(value), **{f"{key}[{i}]": digest(item) for i, item in enumerate(value)}}
    return {}


def distilled(bodies: list[dict[str, Any]]) -> dict[str, Any]:
    """One unit's run: every configuration field with the values it took over every request, and the first request's items."""
    configs = [configuration(b) for b in bodies]
    fields = sorted({f for config in configs for f in config})
    values = {f: sorted({json.dumps(config.get(f, ABSENT)) for config in configs}) for f in fields}
    return {
        "requests": len(bodies),
        "configuration": {f: [json.loads(v) for v in vs] for f, vs in values.items()},  # each value it took, over every request
        "first": items(bodies[0]) if bodies else {},
    }


def comparable(run: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A run of one way (both units) as flat fields: the configuration over every request of both, each unit's first items."""
    out: dict[str, Any] = {}
    config: dict[str, set[str]] = {}
    for unit in sorted(run):
        for field, values in run[unit]["configuration"].items():
            config.setdefault(field, set()).update(json.dumps(v) for v in values)
        for field, value in run[unit]["first"].items():
            out[f"{unit}: {field}"] = value
        out[f"{unit}: requests made"] = "some" if run[unit]["requests"] else "none"
    for field, values in config.items():
        out[field] = sorted(values)
    return out


def compare(acp: list[dict[str, Any]], cli: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(fields that differ between the ways, fields that are noise: they differ between two runs of one way)."""
    acp_flat, cli_flat = [comparable(r) for r in acp], [comparable(r) for r in cli]
    fields = sorted({f for r in acp_flat + cli_flat for f in r})
    noise = [f for f in fields if any(len({json.dumps(r.get(f, ABSENT)) for r in way}) > 1 for way in (acp_flat, cli_flat))]
    differs = [f for f in fields if f not in noise and acp_flat[0].get(f, ABSENT) != cli_flat[0].get(f, ABSENT)]
    return differs, noise
