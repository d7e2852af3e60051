"""The driver's ops: units, setup, turn, oracle, score. One unit at a time, as Nullius drives it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import multi, oracle, single
from .calls import read_calls
from .data import Category, DataError, category_of
from .mcp_client import play

SERVER = "bfcl"  # standard.json's mcp_servers entry
UNIT_NAME, LOG_NAME = "bfcl-unit.json", "mcp-calls.jsonl"


class OpError(Exception):
    """A request the driver cannot serve: the op's error, said in one line."""


def render(messages: list[dict]) -> str:
    """A turn's messages as the agent's prompt: the user's words alone, or each message under its role."""
    if all(m.get("role") == "user" for m in messages):
        return "\n\n".join(m["content"] for m in messages)
    return "\n\n".join(f"{m['role']}: {m['content']}" for m in messages)


class Driver:
    def __init__(self) -> None:
        self.categories: dict[str, Category] = {}

    def category(self, request: dict) -> Category:
        dataset = request.get("dataset")
        if not isinstance(dataset, str):
            raise OpError("dataset: expected the dataset's name, a string")
        name = category_of(dataset)
        if name not in self.categories:
            path = os.environ.get("NULLIUS_DATASET", "")
            if not path or not Path(path).is_file():
                raise OpError(f"NULLIUS_DATASET: expected the questions file of {name}, found {path!r}")
            self.categories[name] = Category(name, path)
        return self.categories[name]

    def unit(self, request: dict) -> tuple[Category, dict]:
        category = self.category(request)
        unit = request.get("unit")
        if not isinstance(unit, str):
            raise OpError("unit: expected a unit id, a string")
        return category, category.entry(unit)

    def units(self, request: dict) -> dict:
        return {"units": self.category(request).unit_ids()}

    def setup(self, request: dict) -> dict:
        category, entry = self.unit(request)
        verifier = verifier_of(request)
        log_path = verifier / LOG_NAME
        if log_path.exists():
            log_path.unlink()  # an earlier setup's calls are not this one's
        if category.multi_turn:
            unit_file, prompt = multi.unit_file(entry, category.name), multi.messages(entry)[0]
        else:
            unit_file = {"id": entry["id"], "multi_turn": False, "turn": 0,
                         "tools_by_turn": [single.mcp_tools(entry["function"], category.name)]}
            prompt = render(entry["question"][0])
        write_json(verifier / UNIT_NAME, unit_file)
        env = {"BFCL_UNIT": str(verifier / UNIT_NAME), "NULLIUS_MCP_LOG": str(log_path)}
        return {"prompt": prompt, "mcp": [{"name": SERVER, "server": SERVER, "env": env}]}

    def turn(self, request: dict) -> dict:
        category, entry = self.unit(request)
        if not category.multi_turn:
            return {"done": True}
        transcript = request.get("transcript")
        if not isinstance(transcript, list):
            raise OpError("transcript: expected a list of {role, text}")
        done = sum(1 for item in transcript if isinstance(item, dict) and item.get("role") == "agent")
        said = multi.messages(entry)
        if done >= len(said):
            return {"done": True}
        set_turn(verifier_of(request) / UNIT_NAME, done)
        return {"message": said[done]}

    def oracle(self, request: dict) -> dict:
        """The possible answer's calls, made through the benchmark's own MCP server, as an agent makes them."""
        category, entry = self.unit(request)
        answer_entry = category.answers.get(entry["id"])
        verifier = verifier_of(request)
        if category.multi_turn:
            turns = multi.oracle_calls(entry, answer_entry)
        else:
            turns = [oracle.calls(entry, answer_entry, category.name)]
        made = play(verifier / UNIT_NAME, verifier / LOG_NAME, turns, lambda k: set_turn(verifier / UNIT_NAME, k))
        # a call the server refused (a ground truth calling a function its turn does not list: README) is
        # left refused, as it would be for an agent, and the checker says what that costs
        return {"answer": json.dumps(made)}

    def score(self, request: dict) -> dict:
        category, entry = self.unit(request)
        verifier = verifier_of(request)
        unit_file = json.loads((verifier / UNIT_NAME).read_text())
        calls, notes = read_calls(verifier / LOG_NAME, unit_file["tools_by_turn"], category.multi_turn)
        answer = request.get("answer") if isinstance(request.get("answer"), str) else ""
        answer_entry = category.answers.get(entry["id"])
        if category.multi_turn:
            verdict = multi.evaluate(category.name, entry, answer_entry, calls)
        else:
            verdict = single.evaluate(category.name, entry, answer_entry, calls, answer)
        passed = bool(verdict.get("valid"))
        detail = {"category": category.name, "id": entry["id"], "calls": calls[:200], "checker": _plain(verdict)}
        if notes:
            detail["log_notes"] = notes
        return {"reward": 1.0 if passed else 0.0, "passed": passed, "detail": detail}


def _plain(verdict: dict) -> dict:
    """The checker's verdict, JSON-safe (it may hold the upstream's own objects), without the prompt it echoes."""
    kept = {k: v for k, v in verdict.items() if k not in ("prompt", "possible_answer", "inference_log")}
    return json.loads(json.dumps(kept, default=str))


def verifier_of(request: dict) -> Path:
    """The trial's verifier folder; for a request without one (prove's leak check sends setup and oracle with
    none), a folder of the driver's own scratch working directory, per unit."""
    verifier, directory = request.get("verifier"), request.get("dir")
    if verifier is None and isinstance(request.get("unit"), str):
        verifier = str(Path.cwd() / "no-verifier" / request["unit"])
    if not isinstance(verifier, str) or not os.path.isabs(verifier):
        raise OpError("verifier: expected the trial's verifier folder, an absolute path (the call log goes there)")
    if isinstance(directory, str) and directory:
        real, root = os.path.realpath(verifier), os.path.realpath(directory)
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            raise OpError(f"verifier: {verifier} lies inside the workspace {directory}: the call log must stay out of it")
    Path(verifier).mkdir(parents=True, exist_ok=True)
    return Path(verifier)


def write_json(path: Path, value: dict) -> None:
    """Written whole and renamed into place: the MCP server never reads half a file."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(value))
    os.replace(partial, path)


def set_turn(path: Path, turn: int) -> None:
    unit_file = json.loads(path.read_text())
    unit_file["turn"] = turn
    write_json(path, unit_file)


__all__ = ["Driver", "OpError", "DataError"]
