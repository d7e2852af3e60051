"""BFCL's questions and possible answers, read from the installed bfcl-eval 2026.3.23, each file checked by its pin.

The questions are the run's dataset (NULLIUS_DATASET, pinned by standard.json's
`datasets`); the possible answers and the multi-turn function documents lie in
the same package, and are pinned by standard.json's `x-bfcl` (sha256 of each
file), checked here before any is used.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
CHECKER_MODEL = "claude-sonnet-4-5-20250929-FC"  # a function-calling entry of BFCL's own registry: see README


class DataError(Exception):
    """A dataset or pin that cannot be used: the op's error."""


def pins() -> dict:
    return json.loads((HERE / "standard.json").read_text())["x-bfcl"]


def category_of(dataset: str) -> str:
    """The BFCL test category a dataset is: the datasets are named by category."""
    known = pins()["categories"]
    if dataset not in known:
        raise DataError(f"dataset: {dataset!r} is not a BFCL category of this benchmark: expected one of {', '.join(known)}")
    return dataset


def read_lines(path: Path, pin: str | None = None) -> list[dict]:
    raw = path.read_bytes()
    if pin is not None and hashlib.sha256(raw).hexdigest() != pin:
        raise DataError(f"{path}: its sha256 is {hashlib.sha256(raw).hexdigest()}, but x-bfcl pins {pin}")
    return [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]


class Category:
    """One category's questions, by id, and its possible answers (none for relevance and irrelevance)."""

    def __init__(self, category: str, questions_file: str) -> None:
        from bfcl_eval.constants.eval_config import POSSIBLE_ANSWER_PATH, VERSION_PREFIX

        self.name = category
        self.entries = read_lines(Path(questions_file))
        self.ids = [entry["id"] for entry in self.entries]
        self.by_id = {entry["id"]: entry for entry in self.entries}
        answer_pins = pins()["possible_answer"]
        self.answers: dict[str, dict] = {}
        if category in answer_pins:
            path = POSSIBLE_ANSWER_PATH / f"{VERSION_PREFIX}_{category}.json"
            self.answers = {a["id"]: a for a in read_lines(path, answer_pins[category])}
            missing = [i for i in self.ids if i not in self.answers]
            if missing:
                raise DataError(f"{path}: no possible answer for {len(missing)} questions ({', '.join(missing[:3])}, ...)")
        if self.multi_turn:
            self._check_func_docs()

    @property
    def multi_turn(self) -> bool:
        return self.name.startswith("multi_turn")

    def _check_func_docs(self) -> None:
        from bfcl_eval.constants.eval_config import MULTI_TURN_FUNC_DOC_PATH

        for name, pin in pins()["multi_turn_func_doc"].items():
            read_lines(MULTI_TURN_FUNC_DOC_PATH / name, pin)

    def unit_ids(self) -> list[str]:
        """Nullius's unit ids: BFCL's own ids, made plain enough for a folder name (`live_simple_0-0-0` stays)."""
        return self.ids

    def entry(self, unit: str) -> dict:
        if unit not in self.by_id:
            raise DataError(f"unit: {unit!r} is not a question of {self.name}")
        return self.by_id[unit]
