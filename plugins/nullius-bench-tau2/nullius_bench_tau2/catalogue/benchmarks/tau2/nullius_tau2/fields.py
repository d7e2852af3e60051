"""Reading a request's fields and the run's options: a bad one is an error naming it."""

from __future__ import annotations

import os
from typing import Any, Optional

from tau2.evaluator.evaluator import EvaluationType

from .runs import Endpoint


class OpError(Exception):
    """The request cannot be answered; the message names the op and the field."""


def text(request: dict, op: str, name: str, default: Optional[str] = None) -> str:
    value = request.get(name, default)
    if not isinstance(value, str):
        raise OpError(f"{op}: {name}: expected a string, found {_kind(value)}")
    return value


def attempt(request: dict, op: str) -> int:
    value = request.get("attempt", 1)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise OpError(f"{op}: attempt: expected an integer from 1, found {_kind(value)}")
    return value


def transcript(request: dict, op: str) -> list[dict]:
    value = request.get("transcript", [])
    if not isinstance(value, list):
        raise OpError(f"{op}: transcript: expected a list of {{role, text}}, found {_kind(value)}")
    for i, entry in enumerate(value):
        if not isinstance(entry, dict) or not isinstance(entry.get("role"), str) \
                or not isinstance(entry.get("text"), str):
            raise OpError(f"{op}: transcript[{i}]: expected {{role, text}} with two strings, found {_kind(entry)}")
    return value


def endpoint(request: dict, op: str, name: str, why: str) -> Optional[Endpoint]:
    """`{model, base_url, key}` under `name`, or None when the request has none."""
    value = request.get(name)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise OpError(f"{op}: {name}: expected {{model, base_url, key}} ({why}), found {_kind(value)}")
    return endpoint_of(value, op, f"{name}.", why)


def endpoint_of(value: dict, op: str, prefix: str, why: str) -> Endpoint:
    """`model`, `base_url` and `key` of `value`, each a non-empty string, the URL http(s)."""
    for key in ("model", "base_url", "key"):
        if not isinstance(value.get(key), str) or not value[key]:
            raise OpError(f"{op}: {prefix}{key}: expected a non-empty string ({why}), found {_kind(value.get(key))}")
    if not value["base_url"].startswith(("http://", "https://")):
        raise OpError(f"{op}: {prefix}base_url: expected an http:// or https:// URL, found {value['base_url']!r}")
    return Endpoint(model=value["model"], base_url=value["base_url"], key=value["key"])


def required_endpoint(request: dict, op: str, name: str, why: str) -> Endpoint:
    found = endpoint(request, op, name, why)
    if found is None:
        raise OpError(f"{op}: {name}: required: {{model, base_url, key}} ({why})")
    return found


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value[:60]!r}"
    return f"a {type(value).__name__}"


EVALUATIONS = {"all": EvaluationType.ALL, "all_with_nl_assertions": EvaluationType.ALL_WITH_NL_ASSERTIONS,
               "nl_assertions": EvaluationType.NL_ASSERTIONS}


def option_evaluation() -> EvaluationType:
    value = os.environ.get("NULLIUS_OPTION_EVALUATION", "all")
    if value not in EVALUATIONS:
        raise OpError(f"option evaluation: expected one of {', '.join(EVALUATIONS)}, found {value!r}")
    return EVALUATIONS[value]


def option_seconds(name: str, default: float) -> float:
    value = os.environ.get(f"NULLIUS_OPTION_{name.upper()}", "")
    if not value:
        return default
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise OpError(f"option {name}: expected a positive number of seconds, found {value!r}")
    return seconds
