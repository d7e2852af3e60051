"""Shared by every step's hidden tests (Harbor uploads tests/ and then steps/<name>/tests/ into /tests)."""

import csv
import os
import subprocess
import sys
import tempfile
from pathlib import Path

LEDGER = "/app/ledger.py"


class Ledger:
    """A scratch ledger file and a way to run the tool against it."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="ledger-test-"))
        self.file = self.dir / "ledger.csv"

    def run(self, *args):
        env = {**os.environ, "LEDGER_FILE": str(self.file)}
        return subprocess.run([sys.executable, LEDGER, *args], env=env, capture_output=True, text=True, timeout=30, cwd=self.dir)

    def rows(self):
        with open(self.file, newline="") as f:
            return list(csv.reader(f))
