"""What a snapshot for a host holds: the code as it runs here (source edits included), the user's entries, nothing of the settings or secrets."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from nullius_core.paths import Paths
from nullius_core.testing import isolated_env, run_cli

from nullius_app.host import handover, snapshot

REPO = Path(__file__).resolve().parents[3]


def world(tmp_path: Path) -> tuple[dict[str, str], Paths]:
    env = isolated_env(tmp_path / "home")
    config = Path(env["XDG_CONFIG_HOME"]) / "nullius"
    catalogue = config / "catalogue"
    shutil.copytree(REPO / "tests" / "fixtures" / "catalogue", catalogue)
    (catalogue / ".set-aside" / "benchmarks" / "old").mkdir(parents=True)
    (catalogue / ".set-aside" / "benchmarks" / "old" / "standard.json").write_text("{}")
    (catalogue / "stray.txt").write_text("not an entry")
    (config / "settings.json").write_text(json.dumps({"keys": {"OPENAI_API_KEY": "sk-in-the-settings-0123456789"}}))
    (config / "secrets" / "faulty").mkdir(parents=True)
    (config / "secrets" / "faulty" / "TOKEN").write_text("licence-in-the-store-0123456789")
    return env, Paths.from_env(env)


def test_the_snapshot_holds_the_running_code_and_the_users_entries_alone(tmp_path):
    env, paths = world(tmp_path)
    running = handover.loaded(())
    made = snapshot.running(running.distributions, paths)
    files = {item.path: item for item in made.items}
    # the code as this process imports it: the editable source, as it is on disk now
    assert files["code/nullius_app/host/snapshot.py"].data == Path(snapshot.__file__).read_bytes()
    assert "code/nullius_core/cli/main.py" in files and "code/nullius_plugins/local_backend/__init__.py" in files
    assert not any("__pycache__" in p or p.endswith(".pyc") for p in files)
    listed = json.loads(run_cli(["plugins", "--json"], env).stdout)["plugins"]
    for dist in {p["distribution"] for p in listed if p["status"] == "loaded"}:
        info = next(p.rsplit("/", 1)[0] for p in files if p.startswith("code/" + dist.replace("-", "_") + "-") and p.endswith("entry_points.txt"))
        assert f"Name: {dist}" in files[f"{info}/METADATA"].data.decode()  # the host names each plugin's distribution as here
    # the user's entries and their proofs; not what was set aside, not a stray file, no settings, no secrets store
    assert "catalogue/benchmarks/faulty/standard.json" in files and "catalogue/agents/scripted/agent.json" in files
    assert not any(".set-aside" in p or p == "catalogue/stray.txt" or p.split("/")[-1] == "settings.json" or "secrets" in p.split("/")
                   for p in files)
    assert made.holding({"settings": b"sk-in-the-settings-0123456789", "store": b"licence-in-the-store-0123456789"}) == []
    # third parties from PyPI, as pinned here; Nullius's own come in the snapshot
    requirements = files["requirements.txt"].data.decode().split()
    assert "aiohttp<4,>=3.9" in requirements and not any(r.startswith("nullius") for r in requirements)
    assert any(line.startswith("aiohttp==") for line in files["constraints.txt"].data.decode().split())
    # content-addressed: the same content is the same id; an edited entry is another
    assert snapshot.running(running.distributions, paths).id == made.id
    (paths.catalogue / "benchmarks" / "faulty" / "standard.json").write_text("{}\n")
    assert snapshot.running(running.distributions, paths).id != made.id


def test_a_catalogue_link_that_leads_out_is_refused(tmp_path):
    env, paths = world(tmp_path)
    (paths.catalogue / "benchmarks" / "faulty" / "peek").symlink_to(paths.settings)
    import pytest

    with pytest.raises(snapshot.HostRefused, match="leads out of it"):
        snapshot.running(handover.loaded(()).distributions, paths)
