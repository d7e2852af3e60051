"""Per-task environments and licences without docker: `nullius check`, the secrets store, the local backend's rules."""

from __future__ import annotations

import json
import shutil
import stat

import pytest
from conftest import ROOT

from nullius_core.licences import SecretStore
from nullius_core.testing import run_cli

ENVBENCH = ROOT / "plugins" / "nullius-backend-docker" / "tests" / "fixtures" / "catalogue" / "benchmarks" / "envbench"


@pytest.fixture
def catalogue(tmp_path):
    target = tmp_path / "catalogue" / "benchmarks" / "envbench"
    shutil.copytree(ENVBENCH, target)
    return target


@pytest.fixture
def env(nullius_env, tmp_path, catalogue):
    return {**nullius_env, "NULLIUS_CATALOGUE": str(tmp_path / "catalogue"), "SECRETS_DIR": str(tmp_path / "secrets"),
            "NULLIUS_JOBS_DIR": str(tmp_path / "jobs")}


def test_check_reads_each_dockerfile_as_a_layer_and_names_the_line(env, catalogue):
    (catalogue / "env" / "bad.Dockerfile").write_text(
        "# a comment\nFROM debian:12\nADD https://example.com/x /x\nCOPY env/marker.txt \\\n     env/secret.txt /opt/\nCOPY --from=builder /a /b\n"
    )
    standard = json.loads((catalogue / "standard.json").read_text())
    standard["environments"]["bad"] = {
        "dockerfile": "env/bad.Dockerfile",
        "files": ["env/marker.txt", "env/missing.txt"],
        "needs_secrets": [{"name": "SCORER_TOKEN", "kind": "file", "to": "driver", "path": "/opt/t"}],
    }
    (catalogue / "standard.json").write_text(json.dumps(standard))
    result = run_cli(["check"], env, in_process=True)
    assert result.code == 2 and "Traceback" not in result.stderr
    out = result.stderr
    assert "env/bad.Dockerfile:2: FROM is not allowed" in out
    assert "env/bad.Dockerfile:3: ADD is refused" in out
    assert "env/bad.Dockerfile:4: COPY of 'env/secret.txt', which the environment's files do not list" in out
    assert "env/bad.Dockerfile:6: COPY --from is refused" in out
    assert "$.environments.bad.files[1]: expected a file inside the benchmark's folder, found 'env/missing.txt'" in out
    assert "$.environments.bad.needs_secrets[0].kind: expected 'value', as environment 'licensed' declares SCORER_TOKEN" in out


def test_secrets_are_kept_without_values_and_expire(env, tmp_path):
    assert run_cli(["secrets", "set", "envbench", "TOOL_LICENSE_KEY", "--expires", "2000-01-01"], env, input="k-123\n", in_process=True).code == 0
    store = SecretStore(tmp_path / "secrets", "envbench")
    assert store.get("TOOL_LICENSE_KEY") is None  # expired: counts as not set
    assert store.index()["TOOL_LICENSE_KEY"]["expires"] == "2000-01-01"
    assert run_cli(["secrets", "set", "envbench", "TOOL_LICENSE_KEY"], env, input="k-123\n", in_process=True).code == 0
    assert store.get("TOOL_LICENSE_KEY") == b"k-123"  # one trailing newline dropped from a value
    assert stat.S_IMODE((tmp_path / "secrets").stat().st_mode) == 0o700
    assert "k-123" not in (tmp_path / "secrets" / "envbench" / "index.json").read_text()
    listed = run_cli(["secrets", "list", "envbench"], env, in_process=True)
    assert "TOOL_LICENSE_KEY" in listed.stdout and "k-123" not in listed.stdout and "not set" in listed.stdout
    assert run_cli(["secrets", "set", "envbench", "TOOL_LICENSE_KEY", "--expires", "soon"], env, input="x", in_process=True).code == 2
    assert run_cli(["secrets", "unset", "envbench", "TOOL_LICENSE_KEY"], env, in_process=True).code == 0
    assert store.get("TOOL_LICENSE_KEY") is None


def test_secrets_list_json_says_each_declared_name_whether_set_and_when_never_a_value(env, tmp_path):
    """The app's Licences panel reads this: name, kind, to, summary, set, set_at, expires, expired."""
    assert run_cli(["secrets", "set", "envbench", "TOOL_LICENSE_KEY", "--expires", "2999-12-31"], env, input="k-456", in_process=True).code == 0
    assert run_cli(["secrets", "set", "envbench", "SCORER_TOKEN", "--expires", "2000-01-01"], env, input="t-789", in_process=True).code == 0
    listed = run_cli(["secrets", "list", "envbench", "--json"], env, in_process=True)
    assert listed.code == 0 and "k-456" not in listed.output and "t-789" not in listed.output
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert sorted(rows) == ["SCORER_TOKEN", "TOOL_LICENSE_FILE", "TOOL_LICENSE_KEY", "TOOL_LICENSE_SERVER"]
    key = rows["TOOL_LICENSE_KEY"]
    assert {k: key[k] for k in ("kind", "to", "summary", "set", "expires", "expired")} == {
        "kind": "value", "to": "agent", "summary": "the tool's licence key", "set": True, "expires": "2999-12-31", "expired": False}
    assert key["set_at"].endswith("Z")
    assert rows["SCORER_TOKEN"]["set"] is False and rows["SCORER_TOKEN"]["expired"] is True  # past its day: counts as not set
    assert rows["TOOL_LICENSE_FILE"] == {"name": "TOOL_LICENSE_FILE", "kind": "file", "to": "agent", "summary": None, "set": False,
                                         "set_at": None, "expires": None, "expired": False}
    assert rows["TOOL_LICENSE_SERVER"]["kind"] == "server"
    plain = run_cli(["secrets", "list", "envbench"], env, in_process=True).stdout
    assert "not set (expired 2000-01-01)" in plain and "expires 2999-12-31" in plain


def test_the_local_backend_runs_controls_in_any_environment_but_not_without_licences(env, tmp_path):
    result = run_cli(["run", "envbench", "oracle", "--job-name", "first"], env)
    assert result.code == 0, result.output
    trials = {p.parent.name: json.loads(p.read_text()) for p in (tmp_path / "jobs" / "first").glob("*/result.json")}
    assert trials["u0002"]["exception_info"]["exception_type"] == "EnvironmentSecretMissingError"
    assert trials["u0002"]["standard"]["environment"] == "licensed"
    assert trials["u0001"].get("exception_info") is None and trials["u0001"]["standard"]["environment"] == "tool"  # a control is never refused
    for name, value in (("TOOL_LICENSE_KEY", "k"), ("TOOL_LICENSE_FILE", "f"), ("TOOL_LICENSE_SERVER", "127.0.0.1:1"), ("SCORER_TOKEN", "scorer-token-9")):
        assert run_cli(["secrets", "set", "envbench", name], env, input=value).code == 0
    result = run_cli(["run", "envbench", "oracle", "--job-name", "second"], env)
    assert result.code == 0, result.output
    score = json.loads((tmp_path / "jobs" / "second" / "u0002" / "verifier" / "score.json").read_text())
    assert score["detail"]["scorer_token_set"] is True  # the driver's licence reached its environment
    leaked = [p for p in (tmp_path / "jobs" / "second").rglob("*") if p.is_file() and "scorer-token-9" in p.read_text(errors="replace")]
    assert leaked == []


def test_proves_own_units_and_leak_checks_get_the_drivers_licences(env, catalogue, tmp_path):
    """A driver that needs its licence (to: driver) to list or set up its units gets it in prove's checks, as in a run."""
    driver = catalogue / "driver.py"
    driver.write_text(driver.read_text().replace(
        '    op = request["op"]\n',
        '    op = request["op"]\n    if op in ("units", "setup") and not os.environ.get("SCORER_TOKEN"):\n'
        '        return {"error": "this upstream lists and sets up its units with SCORER_TOKEN"}\n', 1))
    without = run_cli(["prove", "envbench", "--json"], env)
    assert without.code == 1, without.output
    assert "with SCORER_TOKEN" in json.loads(without.stdout)["test"]["units"]["failed"]
    assert run_cli(["secrets", "set", "envbench", "SCORER_TOKEN"], env, input="scorer-token-9").code == 0
    proved = run_cli(["prove", "envbench", "--json"], env)
    checks = json.loads(proved.stdout)["test"]
    assert checks["units"]["ok"] and "failed" not in checks["leak"], proved.output  # setup ran with it too
    assert [p for p in (tmp_path / "jobs").rglob("*") if p.is_file() and "scorer-token-9" in p.read_text(errors="replace")] == []


def test_licences_handed_on_stdin_stay_in_memory(env, tmp_path):
    """`nullius run --licences-stdin`, as a host's launcher starts a run: SECRETS_DIR is not read, the values handed are used."""
    import base64

    handed = {n: base64.b64encode(v.encode()).decode() for n, v in
              (("TOOL_LICENSE_KEY", "k"), ("TOOL_LICENSE_FILE", "f"), ("TOOL_LICENSE_SERVER", "127.0.0.1:1"), ("SCORER_TOKEN", "scorer-token-9"))}
    result = run_cli(["run", "envbench", "oracle", "--job-name", "handed", "--licences-stdin"], env, input=json.dumps(handed))
    assert result.code == 0, result.output
    score = json.loads((tmp_path / "jobs" / "handed" / "u0002" / "verifier" / "score.json").read_text())
    assert score["detail"]["scorer_token_set"] is True
    assert not (tmp_path / "secrets").exists()  # nothing was kept, nothing read
    assert [p for p in (tmp_path / "jobs").rglob("*") if p.is_file() and "scorer-token-9" in p.read_text(errors="replace")] == []
    # what is not handed is not set, whatever SECRETS_DIR holds
    assert run_cli(["secrets", "set", "envbench", "SCORER_TOKEN"], env, input="from-the-store").code == 0
    none = run_cli(["run", "envbench", "oracle", "--job-name", "none", "--licences-stdin"], env, input="{}")
    assert none.code == 0, none.output
    trial = json.loads((tmp_path / "jobs" / "none" / "u0002" / "result.json").read_text())
    assert trial["exception_info"]["exception_type"] == "EnvironmentSecretMissingError"
    bad = run_cli(["run", "envbench", "oracle", "--job-name", "bad", "--licences-stdin"], env, input="[1]")
    assert bad.code == 2 and "--licences-stdin: expected on stdin a JSON object of NAME: base64 value" in bad.stderr
