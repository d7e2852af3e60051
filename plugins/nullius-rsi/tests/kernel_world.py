"""The kernel's tests: the scripted fake model plays every role, and the CLI is run as a user types it."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nanorsi import cli

sys.path.insert(0, str(Path(__file__).parents[1] / "examples"))
from fake_roles import GOOD, WEAK, Roles, header  # noqa: E402,F401  (one script: the tests' and the docs' example)

NANORSI = str(Path(sys.executable).with_name("nanorsi"))
KEY = "sk-nanorsi-SECRET-7f3a9c"


def run(args: list[str], cwd: Path, ok=True, code=None) -> subprocess.CompletedProcess:
    proc = subprocess.run([NANORSI, *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    expected = code if code is not None else (0 if ok else None)
    if expected is not None:
        assert proc.returncode == expected, f"nanorsi {' '.join(args)}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture
def roles(fake_model):
    r = Roles()
    fake_model.use(r)
    return r


def make_workspace(tmp_path: Path, fake_model, via_cli: bool) -> Path:
    """A starter workspace configured on the fake model, its key file outside the workspace; written by the CLI in
    a subprocess (as a user types it) or by the same code in-process (quicker, for the tests that start there)."""
    keydir = tmp_path / "secrets"
    keydir.mkdir()
    (keydir / "key").write_text(KEY + "\n")
    ws = tmp_path / "ws"
    configure = ["configure", f"model.base_url={fake_model.openai_base_url}", "model.name=fake-1",
                 f"model.api_key_file={keydir / 'key'}", "model.retries=0"]
    if via_cli:
        run(["new", "ws"], tmp_path)
        run(configure, ws)
    else:
        assert cli.main(["new", str(ws)]) == 0 and cli.main(["-C", str(ws), *configure]) == 0
    return ws


@pytest.fixture
def workspace(tmp_path, fake_model, roles):
    return make_workspace(tmp_path, fake_model, via_cli=False)


@pytest.fixture
def typed_workspace(tmp_path, fake_model, roles):
    return make_workspace(tmp_path, fake_model, via_cli=True)


def events(ws: Path) -> list[dict]:
    return [json.loads(x) for x in (ws / ".nanorsi" / "ledger.jsonl").read_text().splitlines()]


def of(ws: Path, kind: str, **match) -> list[dict]:
    return [e for e in events(ws) if e["event"] == kind and all(e.get(k) == v for k, v in match.items())]
