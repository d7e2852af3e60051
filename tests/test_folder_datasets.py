"""A user's folder as a benchmark's dataset (`--dataset PATH`, `dataset_folders`): pinned file by file, proven, resumed only unchanged."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.run.folders import FolderProblem, read_folder
from nullius_core.testing import run_cli

CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue"


@pytest.fixture
def env(nullius_env):
    return {**nullius_env, "NULLIUS_CATALOGUE": str(CATALOGUE)}


def questions(folder: Path, answers: dict[str, str]) -> Path:
    folder.mkdir(parents=True)
    for unit, answer in answers.items():
        (folder / f"{unit}.txt").write_text(f"{answer}\nwhat the question says\n")
    return folder


def test_the_folder_is_pinned_by_every_file_and_the_job_keeps_the_list(env, tmp_path):
    folder = questions(tmp_path / "My Questions", {"q1": "alpha", "q2": "beta"})
    (folder / ".git").mkdir()
    (folder / ".git" / "index").write_text("a checkout's index is not the dataset")
    result = run_cli(["run", "folders", "oracle", "--dataset", str(folder), "--job-name", "f1"], env)
    assert result.code == 0, result.output
    job = Path(env["NULLIUS_JOBS_DIR"]) / "f1"
    config = json.loads((job / "config.json").read_text())
    pinned = read_folder(str(folder))
    assert config["standard"]["dataset"] == "my-questions" == pinned.name  # the folder's own name, as Harbor names a source
    assert config["standard"]["dataset_folder"] == str(folder.resolve()) and config["datasets"][0]["path"] == str(folder.resolve())
    assert config["standard"]["dataset_sha256"] == pinned.sha256
    manifest = (job / "dataset.sha256").read_text()
    assert [line.split("  ")[1] for line in manifest.splitlines()] == ["q1.txt", "q2.txt"]  # .git left out
    # sha256sum reads the job's list: the folder checks against what ran
    assert subprocess.run(["sha256sum", "-c", str(job / "dataset.sha256")], cwd=folder, capture_output=True).returncode == 0
    trials = {p.parent.name: json.loads(p.read_text()) for p in job.glob("*/result.json")}
    assert {u: t["standard"]["outcome"] for u, t in trials.items()} == {"q1": "passed", "q2": "passed"}
    assert {t["source"] for t in trials.values()} == {"my-questions"}


def test_resume_refuses_a_folder_that_changed(env, tmp_path):
    folder = questions(tmp_path / "qs", {"q1": "alpha", "q2": "beta"})
    assert run_cli(["run", "folders", "nop", "--dataset", str(folder), "--limit", "1", "--job-name", "f2"], env).code == 0
    job = Path(env["NULLIUS_JOBS_DIR"]) / "f2"
    assert run_cli(["run", "--resume", str(job)], env).code == 0  # unchanged: resumes
    (folder / "q2.txt").write_text("gamma\n")
    refused = run_cli(["run", "--resume", str(job)], env)
    assert refused.code != 0 and "Traceback" not in refused.stderr
    assert f"the dataset folder {folder.resolve()} has changed since the job ran" in refused.stderr


def test_prove_on_a_folder_names_the_units_that_break_each_control(env, tmp_path):
    catalogue = tmp_path / "catalogue"
    shutil.copytree(CATALOGUE / "benchmarks" / "folders", catalogue / "benchmarks" / "folders")
    env = {**env, "NULLIUS_CATALOGUE": str(catalogue)}  # a user's own definition: prove writes its proofs into it
    folder = questions(tmp_path / "qs", {f"q{i}": f"the answer is number {i}" for i in (1, 2, 3)})  # long enough to look for
    result = run_cli(["prove", "folders", "--dataset", str(folder)], env)
    assert result.code == 0, result.output
    assert "folders/qs oracle: passed 3/3" in result.stdout and "folders/qs nop: passed 0/3" in result.stdout
    proven = json.loads((catalogue / "benchmarks" / "folders" / "standard.json").read_text())["proven"]["qs"]  # under the folder's name
    assert {proven[c]["sha256"] for c in ("units", "leak", "nop", "oracle")} == {read_folder(str(folder)).sha256}

    answers = folder / "q2.txt"
    answers.write_text("\n")  # an empty first line: the empty answer (nop) passes it, the oracle's empty answer too
    broken = run_cli(["prove", "folders", "--dataset", str(folder)], env)
    assert broken.code == 1, broken.output
    assert "folders/qs nop: FAILED 1/3 passing: q2" in broken.stdout


def test_what_cannot_be_a_folder_dataset_is_refused_in_one_line(env, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_text("not the dataset's\n")
    linked = questions(tmp_path / "linked", {"q1": "alpha"})
    os.symlink(outside, linked / "q2.txt")
    cases = [
        (["run", "folders", "oracle"], "folders takes a folder as its dataset: --dataset PATH (a folder of .txt files"),
        (["prove", "folders"], "folders takes a folder as its dataset: prove it with --dataset PATH"),
        (["run", "folders", "oracle", "--dataset", str(tmp_path / "nowhere")], f"the dataset folder {tmp_path / 'nowhere'} does not exist"),
        (["run", "folders", "oracle", "--dataset", str(outside)], f"the dataset {outside} is not a folder"),
        (["run", "folders", "oracle", "--dataset", str(empty)], "holds no file"),
        (["run", "folders", "oracle", "--dataset", str(linked)], "q2.txt is a link to"),
        (["run", "scored", "oracle", "--dataset", str(linked)], "scored takes no folder as its dataset (datasets: test)"),
    ]
    for argv, said in cases:
        result = run_cli(argv, env)
        assert result.code != 0 and said in result.stderr and "Traceback" not in result.stderr, (argv, result.stderr)


def test_a_folder_is_read_whole_and_its_links_inside_it_are_kept():
    here = Path(__file__).parent / "fixtures" / "catalogue" / "benchmarks" / "folders"
    pinned = read_folder(str(here))
    assert {rel for _, rel in pinned.files} >= {"driver.py", "standard.json"} and pinned.sha256 == read_folder(str(here)).sha256
    with pytest.raises(FolderProblem, match="does not exist"):
        read_folder(str(here / "nope"))


def test_a_definition_that_takes_folders_needs_no_dataset_and_names_a_declared_environment():
    from nullius_core.definitions.benchmark import Standard
    from nullius_core.definitions.converter import structure
    from nullius_core.definitions.problems import DefinitionError

    base = {"upstream": {"pypi": "x", "version": "1"}, "driver": {"command": ["x"]},
            "controls": {"nop": {"source": "nullius", "from": "x"}, "oracle": {"source": "nullius", "from": "y"}}}
    assert structure({**base, "dataset_folders": {"summary": "a folder"}}, Standard, "$").datasets == {}
    for extra, said in (({}, "$.datasets: expected at least one dataset (or dataset_folders: a folder as the dataset), found none"),
                        ({"dataset_folders": {"summary": "s", "environment": "nope"}},
                         "$.dataset_folders.environment: expected a declared environment, found 'nope'")):
        with pytest.raises(DefinitionError) as caught:
            structure({**base, **extra}, Standard, "$")
        assert [p.render() for p in caught.value.problems] == [said]
