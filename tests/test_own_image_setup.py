"""A task's own image as setup asks for it: every malformed field named, without docker; `nullius check` on own-image environments."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import ROOT

from nullius_core.contracts.own_image import OwnImageProblem, read_own, read_solve
from nullius_core.testing import run_cli

OWNBENCH = ROOT / "plugins" / "nullius-backend-docker" / "tests" / "fixtures" / "catalogue" / "benchmarks" / "ownbench"
GOOD = {"prompt": "p", "environment": "task", "image": {"build": "tasks/answer/environment", "memory_mb": 512, "cpus": 1.5},
        "workdir": "/app", "verify": {"copy": {"tasks/answer/tests": "/tests"}, "write": {"/tests/x.txt": "x"},
                                      "run": ["sh", "/tests/test.sh"], "collect": "/logs", "seconds": 30, "network": True}}


def test_a_good_setup_is_read_whole():
    own = read_own(GOOD, OWNBENCH, "ownbench")
    assert (own.image.build, own.image.memory_mb, own.image.cpus, own.workdir) == ("tasks/answer/environment", 512, 1.5, "/app")
    assert own.verify.copy == {"tasks/answer/tests": "/tests"} and own.verify.run == ["sh", "/tests/test.sh"]
    assert (own.verify.seconds, own.verify.network, own.verify.keep_processes, own.verify.collect) == (30, True, False, "/logs")
    pulled = read_own({**GOOD, "image": {"pull": "ghcr.io/x/task@sha256:" + "a" * 64}, "verify": None, "workdir": None}, OWNBENCH, "b")
    assert pulled.image.pull.endswith("a" * 64) and pulled.verify is None and pulled.workdir is None


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"image": None}, "no image"),
        ({"image": {"build": "tasks/answer/environment", "pull": "x@sha256:" + "a" * 64}}, "exactly one of build"),
        ({"image": {"pull": "ubuntu:24.04"}}, "image.pull is 'ubuntu:24.04': expected a reference pinned by its digest"),
        ({"image": {"build": "../../envbench"}}, "image.build names '../../envbench', outside the upstream"),
        ({"image": {"build": "tasks/answer/tests"}}, "image.build names 'tasks/answer/tests': expected a folder of the upstream holding a Dockerfile"),
        ({"image": {"build": "tasks/answer/environment", "memory_mb": "512"}}, "image.memory_mb: expected an integer"),
        ({"image": {"build": "tasks/answer/environment", "colour": 1}}, "image.colour: unknown key"),
        ({"workdir": "app"}, "workdir is 'app': expected an absolute path"),
        ({"verify": {"copy": {"/etc": "/tests"}}}, "verify.copy names '/etc': expected a folder relative to the upstream"),
        ({"verify": {"copy": {"tasks/answer/tests": "tests"}}}, "verify.copy puts 'tasks/answer/tests' at 'tests'"),
        ({"verify": {"write": {"x.txt": "x"}}}, "verify.write names 'x.txt': expected an absolute file path"),
        ({"verify": {"run": []}}, "verify.run is empty"),
        ({"verify": {"run": "sh test.sh"}}, "verify.run: expected a list"),
        ({"verify": {"seconds": 0}}, "verify.seconds is 0: expected more than 0"),
        ({"verify": {"collect": "logs"}}, "verify.collect is 'logs': expected an absolute folder"),
        ({"verify": {"network": "yes"}}, "verify.network: expected true or false"),
        ({"verify": {"clear": ["/"]}}, "verify.clear names '/': expected an absolute path inside, not / itself"),
        ({"verify": {"clear": ["tests"]}}, "verify.clear names 'tests'"),
    ],
)
def test_a_malformed_field_is_named(change, named):
    with pytest.raises(OwnImageProblem) as caught:
        read_own({**GOOD, **change}, OWNBENCH, "ownbench")
    assert named in str(caught.value), str(caught.value)
    assert str(caught.value).startswith("setup")


def test_the_oracles_solve():
    assert read_solve({"answer": ""}) is None
    steps = read_solve({"answer": "", "solve": {"copy": {"tasks/answer/solution": "/solution"}, "run": ["sh", "/solution/solve.sh"]}})
    assert steps.run == ["sh", "/solution/solve.sh"] and steps.seconds == 600
    with pytest.raises(OwnImageProblem, match="solve.seconds"):
        read_solve({"solve": {"seconds": -1}})


def test_check_refuses_an_own_image_with_a_dockerfile_or_local_ok(nullius_env, tmp_path):
    target = tmp_path / "catalogue" / "benchmarks" / "ownbench"
    shutil.copytree(OWNBENCH, target)
    standard = json.loads((target / "standard.json").read_text())
    standard["environments"]["both"] = {"image": "own", "dockerfile": "tasks/answer/environment/Dockerfile"}
    standard["environments"]["local"] = {"image": "own", "local_ok": True}
    (target / "standard.json").write_text(json.dumps(standard))
    env = {**nullius_env, "NULLIUS_CATALOGUE": str(tmp_path / "catalogue")}
    result = run_cli(["check"], env, in_process=True)
    assert result.code == 2 and "Traceback" not in result.stderr
    assert "$.environments.both.image: expected either a dockerfile" in result.stderr
    assert "$.environments.local.local_ok: expected false: a task's own image never runs an agent on the local backend" in result.stderr
    del standard["environments"]["both"], standard["environments"]["local"]
    (target / "standard.json").write_text(json.dumps(standard))
    assert run_cli(["check"], env, in_process=True).code == 0


def test_an_agents_unit_in_an_own_image_is_refused_on_the_local_backend_naming_the_backend_it_needs():
    # the refusal's words are the ones the docker plugin's test reads from a real run; here, the rule itself
    import asyncio

    from nullius_core.run.environments import _box_host

    class Local:
        name = "local"

    with pytest.raises(ValueError, match=r"needs a backend that runs own images \(--backend docker\); the local backend does not"):
        asyncio.run(_box_host(None, Local(), "agent"))


def test_own_image_fields_without_an_own_image_environment_are_the_units_setup_error():
    from types import SimpleNamespace

    from nullius_core.definitions.benchmark import Environment
    from nullius_core.run.environments import EnvironmentProblem, unit_environment

    prepared = SimpleNamespace(
        dataset=SimpleNamespace(environment=None), source_dir=OWNBENCH, entry=SimpleNamespace(key="ownbench", folder=OWNBENCH),
        bench=SimpleNamespace(environments={"task": Environment(image="own"), "tool": Environment(dockerfile="env/tool.Dockerfile")}),
    )
    for setup in ({**GOOD, "environment": None}, {**GOOD, "environment": "tool"}, {"prompt": "p", "verify": {"run": ["true"]}}):
        with pytest.raises(EnvironmentProblem, match=r"only an environment declared \"image\": \"own\" reads"):
            unit_environment(prepared, setup, OWNBENCH)
    found = unit_environment(prepared, GOOD, OWNBENCH)
    assert found.name == "task" and found.own.workdir == "/app" and found.own.source == OWNBENCH
    assert unit_environment(prepared, {"prompt": "p"}, OWNBENCH) is None
