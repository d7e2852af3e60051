"""One validated TOML (nanorsi.toml): every field, its type and default in one table."""

import hashlib
import json
import tomllib
from pathlib import Path

from . import NanoError

CONFIG_NAME = "nanorsi.toml"
STR, INT, FLOAT, BOOL = "a string", "an integer", "a number", "true or false"
ARGV, IDS = "a list of strings", "a list of task ids"

# table -> field -> (expected, default, check). A default of None means the field is required.
SCHEMA = {
    "experiment": {
        "mode": (STR, "agg", lambda v: v in ("agg", "seq") or "agg or seq"),
        "k": (INT, 2, lambda v: 1 <= v <= 32 or "an integer from 1 to 32"),
        "seed": (INT, 0, None),
        "final_repeats": (INT, 1, lambda v: 1 <= v <= 16 or "an integer from 1 to 16"),
        "parallel": (INT, 0, lambda v: 1 <= v <= 32 or "an integer from 1 to 32"),  # absent (0): k, set below
    },
    "model": {
        "base_url": (STR, None,
                     lambda v: v.startswith(("http://", "https://")) or "an http(s) URL (an OpenAI-compatible .../v1)"),
        "name": (STR, None, lambda v: bool(v) or "a model name"),
        "api_key_file": (STR, None, None),
        "temperature": (FLOAT, 0.0, lambda v: 0 <= v <= 2 or "a number from 0 to 2"),
        "max_tokens": (INT, 4096, lambda v: v >= 1 or "an integer >= 1"),
        "retries": (INT, 2, lambda v: 0 <= v <= 10 or "an integer from 0 to 10"),
        "timeout": (FLOAT, 300.0, lambda v: v > 0 or "a number > 0"),
    },
    "runner": {
        "kind": (STR, "loopback", lambda v: v in ("loopback", "command", "nullius") or "loopback, command or nullius"),
        "command": (ARGV, [], None),
        "nullius": (STR, "nullius", None),
        "max_steps": (INT, 12, lambda v: v >= 1 or "an integer >= 1"),
        "timeout": (FLOAT, 1800.0, lambda v: v > 0 or "a number > 0"),
    },
    "harness": {"root": (STR, "harness", None)},
    "tasks": {"manifest": (STR, "tasks.json", None), "select": (IDS, [], None)},
    "judge": {"command": (ARGV, [], None), "timeout": (FLOAT, 600.0, lambda v: v > 0 or "a number > 0")},
    "budget": {
        "max_rollouts": (INT, 100, lambda v: v >= 0 or "an integer >= 0"),
        "max_proposer_calls": (INT, 200, lambda v: v >= 0 or "an integer >= 0"),
    },
}


def _type_ok(expected: str, value) -> bool:
    if expected == STR:
        return isinstance(value, str)
    if expected == INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == FLOAT:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected == BOOL:
        return isinstance(value, bool)
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _field(path: Path, table: str, name: str, spec, raw: dict, errors: list):
    expected, default, check = spec
    if name not in raw:
        if default is None:
            errors.append(f"{path}: [{table}] {name}: expected {expected}, found nothing (required)")
        return default
    value = raw[name]
    if not _type_ok(expected, value):
        errors.append(f"{path}: [{table}] {name}: expected {expected}, found {json.dumps(value)}")
        return default
    verdict = check(value) if check else True
    if verdict is not True:
        errors.append(f"{path}: [{table}] {name}: expected {verdict}, found {json.dumps(value)}")
    return float(value) if expected == FLOAT else value


def validate(raw: dict, path: Path, need_key: bool = True) -> dict:
    """The config with defaults filled in, or one NanoError listing every bad field. need_key: the key file must
    exist (configure, evolve, doctor); judging and reading need no model."""
    errors, out = [], {}
    for table in raw:
        if table not in SCHEMA:
            errors.append(f"{path}: [{table}]: unknown table: expected one of {', '.join(SCHEMA)}")
    for table, fields in SCHEMA.items():
        got = raw.get(table, {})
        if not isinstance(got, dict):
            errors.append(f"{path}: [{table}]: expected a table, found {json.dumps(got)}")
            got = {}
        out[table] = {name: _field(path, table, name, spec, got, errors) for name, spec in fields.items()}
        extra = [k for k in got if k not in fields]
        if table == "runner" and out["runner"]["kind"] == "nullius":
            out[table].update({k: got[k] for k in extra})  # the nullius runner's own options travel in the request
        else:
            errors += [f"{path}: [{table}] {k}: unknown field: expected one of {', '.join(fields)}" for k in extra]
    _cross_checks(out, path, errors, need_key)
    if errors:
        raise NanoError("\n".join(errors))
    return out


def _cross_checks(cfg: dict, path: Path, errors: list, need_key: bool) -> None:
    cfg["experiment"]["parallel"] = cfg["experiment"]["parallel"] or cfg["experiment"]["k"]
    if cfg["runner"]["kind"] == "command" and not cfg["runner"]["command"]:
        errors.append(f"{path}: [runner] command: expected a non-empty list of strings for kind \"command\", found []")
    if not cfg["judge"]["command"]:
        errors.append(f"{path}: [judge] command: expected a non-empty list of strings, found []")
    key = cfg["model"]["api_key_file"]
    if key is None:
        return
    key_path = (path.parent / key).resolve()
    if need_key and not key_path.is_file():
        errors.append(f"{path}: [model] api_key_file: expected an existing file holding the key, found {key!r}")
    elif key_path.is_relative_to(path.parent.resolve()):
        errors.append(f"{path}: [model] api_key_file: expected a file outside the workspace "
                      f"(rollouts read the workspace), found {key!r}")


def load(workspace: Path, need_key: bool = True) -> dict:
    path = Path(workspace) / CONFIG_NAME
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NanoError(f"{path}: no such file (run `nanorsi new DIR` first)") from None
    except tomllib.TOMLDecodeError as exc:
        raise NanoError(f"{path}: not valid TOML: {exc}") from None
    return validate(raw, path, need_key)


def key_path(cfg: dict, workspace: Path) -> Path:
    return (Path(workspace) / cfg["model"]["api_key_file"]).resolve()


# Left out of the pinned configuration: the limits (raised to resume) and how the model is reached (a relay's route
# may move between invocations); what the model is and how it samples stays pinned.
UNPINNED = {"budget": set(SCHEMA["budget"]), "model": {"base_url", "api_key_file", "timeout", "retries"}}


def digest(cfg: dict) -> str:
    """The experiment's configuration hash, pinned at run_started and recorded with every rollout."""
    pinned = {t: {k: v for k, v in fields.items() if k not in UNPINNED.get(t, ())} for t, fields in cfg.items()}
    if pinned.get("experiment", {}).get("parallel") == pinned.get("experiment", {}).get("k"):
        del pinned["experiment"]["parallel"]  # at its default, so that a ledger begun before the field still resumes
    return hashlib.sha256(json.dumps(pinned, sort_keys=True).encode()).hexdigest()


def parse_assignment(text: str) -> tuple[str, str, object]:
    """TABLE.FIELD=VALUE, the value read as TOML (a bare word stays a string)."""
    name, sep, value = text.partition("=")
    table, dot, field = name.strip().partition(".")
    if not sep or not dot or not field:
        raise NanoError(f"{text!r}: expected TABLE.FIELD=VALUE, for example model.name=gpt-x")
    try:
        parsed = tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value.strip()
    return table, field, parsed


def dumps(raw: dict) -> str:
    lines = []
    for table, fields in raw.items():
        lines.append(f"[{table}]")
        lines += [f"{name} = {_toml_value(value)}" for name, value in fields.items() if value is not None]
        lines.append("")
    return "\n".join(lines)


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value, ensure_ascii=False)
