"""Offline seeds of datasets the tests need and this machine cannot download (GSM8K's test.jsonl is on GitHub).

The development workspace keeps them in `shared/datasets/` beside the
repository; a clone elsewhere finds them in any folder above it, or where
NULLIUS_GSM8K_SEED names the file.
"""

from __future__ import annotations

import os
from pathlib import Path

import nullius_core

REPOSITORY = Path(nullius_core.__file__).resolve().parents[1]
GSM8K = Path("shared") / "datasets" / "gsm8k" / "test.jsonl"


def gsm8k_seed() -> Path:
    """GSM8K's test.jsonl, as the development workspace keeps it; FileNotFoundError saying where it was looked for."""
    given = os.environ.get("NULLIUS_GSM8K_SEED")
    candidates = [Path(given)] if given else []
    candidates += [folder / GSM8K for folder in REPOSITORY.parents]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"the offline seed of GSM8K's test.jsonl is missing: expected {GSM8K} in a folder above {REPOSITORY}, "
                            "or NULLIUS_GSM8K_SEED naming the file")
