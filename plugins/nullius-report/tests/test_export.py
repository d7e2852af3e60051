"""`nullius export`: the flat layout, the patch (untracked files in, the index untouched), the merge on re-export."""

import json
import shutil
import subprocess

from report_world import KEY

from nullius_core.testing import files_holding, run_cli


def export(jobs, *args):
    return run_cli(["export", *args], jobs["env"])


def lines(done):
    return dict(line.split(": ", 1) for line in done.stdout.splitlines() if line.startswith("a__") or line.startswith("odd__"))


def test_the_flat_layout_of_a_mixed_list(jobs, tmp_path):
    to = tmp_path / "export"
    # a job folder and a trial folder of another job, mixed
    done = export(jobs, str(jobs["a"]), str(jobs["odd"] / sorted(p.name for p in jobs["odd"].iterdir() if (p / "result.json").exists())[0]), "--to", str(to))
    assert done.code == 0, done.output
    names = sorted(p.name for p in to.iterdir())
    assert names[:4] == ["a__u0000", "a__u0001", "a__u0002", "a__u0003"] and names[4].startswith("odd__") and len(names) == 5
    flat = to / "a__u0000"
    assert {p.name for p in flat.iterdir()} == {"metrics.json", "trajectory.json", "changes.patch", "verifier_stdout.txt",
                                                  "score.json", "reward.txt"}
    metrics = json.loads((flat / "metrics.json").read_text())
    own = json.loads((jobs["a"] / "u0000" / "result.json").read_text())
    assert metrics["result"] == own and metrics["config"]["trial_name"] == "u0000"
    assert metrics["token_usage"]["input"] == own["agent_result"]["n_input_tokens"]
    assert metrics["cost_usd"] == own["agent_result"]["metadata"]["cost"]["first_run_usd"] and metrics["pricing_as_of"] == "2026-11-15"
    assert metrics["reasoning_effort"] == "" and metrics["reward"] == 1.0
    assert (flat / "reward.txt").read_text().strip() == "1"
    assert files_holding(to, KEY.encode()) == []


def dot_git(workspace):
    """Every file under the workspace's .git, with its bytes."""
    return {str(p.relative_to(workspace)): p.read_bytes() for p in (workspace / ".git").rglob("*") if p.is_file()}


def test_the_patch_applies_to_its_base_and_the_index_is_untouched(jobs, tmp_path):
    workspace = jobs["a"] / "u0000" / ".work" / "workspace"
    index = workspace / ".git" / "index"
    before, git_before = (index.read_bytes() if index.exists() else None), dot_git(workspace)
    done = export(jobs, str(jobs["a"] / "u0000"), "--to", str(tmp_path / "e"))
    assert done.code == 0, done.output
    after = index.read_bytes() if index.exists() else None
    assert before == after  # byte for byte (or still absent)
    assert dot_git(workspace) == git_before  # nor any object written into it
    text = (tmp_path / "e" / "a__u0000" / "changes.patch").read_text()
    assert "notes.txt" in text and "+16 - 3 - 4 = 9; 9 * 2 = 18" in text  # the agent's untracked file
    status = subprocess.run(["git", "-C", str(workspace), "status", "--porcelain"], capture_output=True, text=True).stdout
    assert status == "?? notes.txt\n"  # still untracked: nothing was added to the workspace's index
    # the base: the workspace at its first commit (GSM8K's setup commits nothing: the empty tree)
    base = tmp_path / "base"
    subprocess.run(["git", "init", "-q", str(base)], check=True)
    metrics = json.loads((tmp_path / "e" / "a__u0000" / "metrics.json").read_text())
    assert metrics["patch_base"] == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    check = subprocess.run(["git", "-C", str(base), "apply", "--check", str(tmp_path / "e" / "a__u0000" / "changes.patch")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_a_committed_base_and_an_edit(jobs, tmp_path):
    """A workspace with a setup commit, then an edit and a new file: the patch is against the first commit."""
    trial = tmp_path / "job" / "u0000"
    shutil.copytree(jobs["a"] / "u0000", trial, symlinks=True)
    workspace = trial / ".work" / "workspace"
    git = ["git", "-C", str(workspace), "-c", "user.name=t", "-c", "user.email=t@t"]
    (workspace / "task.py").write_text("print(1)\n")
    subprocess.run([*git, "add", "task.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "setup"], check=True)
    (workspace / "task.py").write_text("print(2)\n")
    before, git_before = (workspace / ".git" / "index").read_bytes(), dot_git(workspace)
    export(jobs, str(trial), "--to", str(tmp_path / "e"))
    assert (workspace / ".git" / "index").read_bytes() == before and dot_git(workspace) == git_before
    text = (tmp_path / "e" / "a__u0000" / "changes.patch").read_text()
    assert "-print(1)" in text and "+print(2)" in text and "notes.txt" in text
    base = tmp_path / "base"
    subprocess.run(["git", "clone", "-q", str(workspace), str(base)], check=True)
    check = subprocess.run(["git", "-C", str(base), "apply", "--check", str(tmp_path / "e" / "a__u0000" / "changes.patch")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_a_re_export_copies_only_what_is_new(jobs, tmp_path):
    trial = tmp_path / "job" / "u0001"
    shutil.copytree(jobs["a"] / "u0001", trial, symlinks=True)
    to = tmp_path / "e"
    first = export(jobs, str(trial), "--to", str(to))
    assert "a__u0001: exported" in first.stdout and "1 of 1 trial(s) exported" in first.stdout, first.output
    (trial / "assessment_eval_1.json").write_text(json.dumps({"normalized_score": 0.5}))
    second = export(jobs, str(trial), "--to", str(to))
    assert "a__u0001: exported (assessment_eval_1.json)" in second.stdout, second.output
    (trial / "assessment_eval_1.json").write_text(json.dumps({"normalized_score": 0.9}))  # an evaluation is never rewritten
    third = export(jobs, str(trial), "--to", str(to))
    assert "a__u0001: skipped (nothing new)" in third.stdout and "0 of 1 trial(s) exported" in third.stdout, third.output
    assert json.loads((to / "a__u0001" / "assessment_eval_1.json").read_text()) == {"normalized_score": 0.5}


def test_a_folder_that_is_neither_is_refused(jobs, tmp_path):
    (tmp_path / "nothing").mkdir()
    done = export(jobs, str(tmp_path / "nothing"), "--to", str(tmp_path / "e"))
    assert done.code == 2 and "neither a job" in done.stderr and "Traceback" not in done.output


def test_an_unpriced_model_exports_a_null_cost_with_a_warning(jobs, tmp_path):
    done = export(jobs, str(jobs["c"]), "--to", str(tmp_path / "e"))
    assert done.code == 0 and "2 of 2 trial(s) exported" in done.stdout, done.output
    assert "warning: u0000: cost unknown: 2 call(s) of a model without a price" in done.stderr  # its tool call: 2 calls
    assert "warning: u0001: cost unknown: 1 call(s)" in done.stderr
    metrics = json.loads((tmp_path / "e" / "c__u0000" / "metrics.json").read_text())
    assert metrics["cost_usd"] is None and metrics["as_served_usd"] is None and metrics["token_usage"]["total"] > 0


def test_a_task_in_its_own_image_exports_the_patch_made_in_its_box(jobs, tmp_path):
    """No workspace here (the container is gone): the docker backend's agent/changes.patch is the export's changes.patch."""
    trial = tmp_path / "job" / "u0002"
    shutil.copytree(jobs["a"] / "u0002", trial, symlinks=True)
    shutil.rmtree(trial / ".work" / "workspace")
    made = "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-print(1)\n+print(2)\n"
    (trial / "agent" / "changes.patch").write_text(made)
    done = export(jobs, str(trial), "--to", str(tmp_path / "e"))
    assert done.code == 0, done.output
    assert (tmp_path / "e" / "a__u0002" / "changes.patch").read_text() == made
    assert json.loads((tmp_path / "e" / "a__u0002" / "metrics.json").read_text())["patch_base"] is None


def _handed(jobs, tmp_path):
    """A copy of job a, someone else's now: the tests tamper with it."""
    job = tmp_path / "handed" / "a"
    shutil.copytree(jobs["a"], job, symlinks=True)
    return job


def _refused(done, *said):
    assert done.code == 2 and "Traceback" not in done.output, done.output
    assert all(s in done.stderr for s in said) and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_handed_job_whose_records_are_links_out_of_it_exports_nothing_of_what_they_point_at(jobs, tmp_path):
    secret = tmp_path / "shadow"
    secret.write_text("root:this-machine's-own-secret:19000:0:99999:7:::\n")
    job = _handed(jobs, tmp_path)
    for record in ("verifier/score.json", "agent/trajectory.json"):
        (job / "u0001" / record).unlink()
        (job / "u0001" / record).symlink_to(secret)
    to = tmp_path / "e"
    _refused(export(jobs, str(job), "--to", str(to)), str(job / "u0001"), "leads out of")
    assert not to.exists() or files_holding(to, b"this-machine's-own-secret") == []
    # a trial folder that is itself a link to a folder elsewhere
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(jobs["a"] / "u0002", elsewhere, symlinks=True)
    shutil.rmtree(job / "u0001")
    (job / "u0001").symlink_to(elsewhere)
    _refused(export(jobs, str(job), "--to", str(tmp_path / "e2")), "u0001", "leads out of")


def test_a_trial_name_is_a_name_never_a_path(jobs, tmp_path):
    job = _handed(jobs, tmp_path)
    result = job / "u0000" / "result.json"
    record = json.loads(result.read_text())
    record["trial_name"] = "../../../../escaped"
    result.write_text(json.dumps(record))
    to = tmp_path / "deep" / "er" / "e"
    _refused(export(jobs, str(job / "u0000"), "--to", str(to)), str(result), "$.trial_name", "expected a plain name")
    assert not any(p.name.startswith("escaped") or p.name.endswith("escaped") for p in tmp_path.rglob("*escaped*"))


def test_a_sparse_record_of_gigabytes_is_refused_unread(jobs, tmp_path):
    job = _handed(jobs, tmp_path)
    trajectory = job / "u0000" / "agent" / "trajectory.json"
    trajectory.unlink()
    with trajectory.open("wb") as file:
        file.truncate(3 * 1024**3)  # 3 GB apparent, nothing on disk
    to = tmp_path / "e"
    _refused(export(jobs, str(job / "u0000"), "--to", str(to)), str(trajectory), "expected at most")
    assert sum(p.stat().st_size for p in to.rglob("*") if p.is_file()) < 10 * 1024**2


def test_a_handed_workspace_runs_none_of_the_commands_its_git_config_names(jobs, tmp_path):
    """core.fsmonitor and a filter's clean command are git's ways to run a program: the patch is made without its config."""
    job = _handed(jobs, tmp_path)
    workspace = job / "u0000" / ".work" / "workspace"
    ran = tmp_path / "ran"
    with (workspace / ".git" / "config").open("a") as config:
        config.write(f'[core]\n\tfsmonitor = "touch {ran}-fsmonitor; false"\n[filter "evil"]\n\tclean = "touch {ran}-filter; cat"\n'
                     f'[diff "evil"]\n\ttextconv = "touch {ran}-textconv; cat"\n')
    (workspace / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (workspace / "added.txt").write_text("made by the agent\n")
    done = export(jobs, str(job / "u0000"), "--to", str(tmp_path / "e"))
    assert done.code == 0, done.output
    assert sorted(p.name for p in tmp_path.glob("ran-*")) == []
    patch = (tmp_path / "e" / "a__u0000" / "changes.patch").read_text()
    assert "+made by the agent" in patch and "+* filter=evil diff=evil" in patch
    # a .git that is a link elsewhere is not the workspace's
    shutil.rmtree(workspace / ".git")
    (workspace / ".git").symlink_to(jobs["a"] / "u0001" / ".work" / "workspace" / ".git")
    _refused(export(jobs, str(job / "u0000"), "--to", str(tmp_path / "e2")), "expected its .git to be a folder inside it")


def test_calibrate_reads_a_handed_trial_as_export_does(jobs, tmp_path):
    import pytest

    from nullius_report.calibrate.publish import calibration_files
    from nullius_report.records import ReportError, load_trial

    secret = tmp_path / "secret"
    secret.write_text("this machine's own secret\n")
    job = _handed(jobs, tmp_path)
    (job / "u0001" / "assessment_summary.json").unlink(missing_ok=True)
    (job / "u0001" / "assessment_summary.json").symlink_to(secret)
    with pytest.raises(ReportError, match="leads out of"):
        calibration_files(load_trial(job / "u0001"), "0" * 40)


def test_folders_given_relative_to_here_export_as_absolute_ones_do(jobs, tmp_path):
    done = run_cli(["export", jobs["a"].name, "--to", str(tmp_path / "e")], jobs["env"], cwd=jobs["a"].parent)
    assert done.code == 0 and "4 of 4 trial(s) exported" in done.stdout, done.output
