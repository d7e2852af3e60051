"""`nullius calibrate publish` against local bare repositories; the platform's preflight refusals."""

import json
import os
import shutil
import subprocess
from pathlib import Path

from report_world import KEY

from nullius_core.testing import run_cli

SETUP_DATE = {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
              "GIT_AUTHOR_NAME": "setup", "GIT_AUTHOR_EMAIL": "s@s", "GIT_COMMITTER_NAME": "setup", "GIT_COMMITTER_EMAIL": "s@s"}


def git(repo, *args):
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env={**os.environ, **SETUP_DATE})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def bare(tmp_path: Path) -> Path:
    sink = tmp_path / "sink.git"
    subprocess.run(["git", "init", "-q", "--bare", str(sink)], check=True)
    return sink


def one_task(jobs, tmp_path):
    """Two trials of job a whose workspaces start at the same setup commit (one task's repository): their agents' own
    notes.txt, and an edit of the task's file each."""
    job = tmp_path / "a"
    for unit, edit in (("u0000", "print(2)\n"), ("u0002", "print(3)\n")):
        trial = job / unit
        shutil.copytree(jobs["a"] / unit, trial, symlinks=True)
        workspace = trial / ".work" / "workspace"
        (workspace / "task.py").write_text("print(1)\n")
        git(workspace, "add", "task.py")
        git(workspace, "commit", "-qm", "setup")  # the same tree, author and date: the same commit in both
        (workspace / "task.py").write_text(edit)
        (trial / "assessment_eval_1.json").write_text(json.dumps({"index": 1, "normalized_score": 0.5}))
    return job


def test_two_trials_of_one_base_make_one_orphan_base_and_two_branches(jobs, tmp_path):
    job = one_task(jobs, tmp_path)
    first = git(job / "u0000" / ".work" / "workspace", "rev-parse", "HEAD")
    assert first == git(job / "u0002" / ".work" / "workspace", "rev-parse", "HEAD")
    sink = bare(tmp_path)
    done = run_cli(["calibrate", "publish", str(job), "--repo", str(sink)], jobs["env"])
    assert done.code == 0, done.output
    heads = sorted(git(sink, "for-each-ref", "--format=%(refname:short)", "refs/heads").splitlines())
    key = f"gsm8k-{first[:12]}"
    assert heads == [f"base/{key}", f"calib/{key}/a__u0000", f"calib/{key}/a__u0002"], heads
    assert done.stdout.count("seeded") == 1
    base = f"base/{key}"
    assert git(sink, "rev-list", "--parents", "-n1", base).split()[1:] == []  # an orphan: no parent
    assert git(sink, "show", f"{base}:task.py") == "print(1)"  # the workspace at its first commit
    assert git(sink, "rev-parse", f"{base}^{{tree}}") == git(job / "u0000" / ".work" / "workspace", "rev-parse", "HEAD^{tree}")
    for unit, printed in (("u0000", "print(2)"), ("u0002", "print(3)")):
        branch = f"calib/{key}/a__{unit}"
        chain = git(sink, "rev-list", branch).splitlines()
        assert len(chain) == 3 and chain[-1] == git(sink, "rev-parse", base)  # base, the patch, .calibration
        assert git(sink, "show", f"{branch}~1:task.py") == printed  # the agent's change as a real commit
        changed = git(sink, "diff", "--name-only", f"{base}", f"{branch}~1").splitlines()
        assert "task.py" in changed and (unit != "u0000" or "notes.txt" in changed)
        files = git(sink, "ls-tree", "--name-only", f"{branch}:.calibration").splitlines()
        assert {"instruction.md", "assessment_eval_1.json", "metrics.json", "README.md"} <= set(files)
        assert "trajectory.json" not in files
        every = git(sink, "ls-tree", "-r", "--name-only", branch)
        assert "trajectory" not in every
        assert subprocess.run(["git", "-C", str(sink), "grep", "-q", KEY, branch]).returncode == 1  # the key: nowhere
    metrics = json.loads(git(sink, "show", f"calib/{key}/a__u0000:.calibration/metrics.json"))
    assert metrics["trial"] == "u0000" and metrics["patch_base"] == first
    again = run_cli(["calibrate", "publish", str(job), "--repo", str(sink)], jobs["env"])
    assert again.code == 0 and "seeded" not in again.stdout and again.stdout.count("already published") == 2, again.output


def test_an_empty_workspace_shares_the_empty_base(jobs, tmp_path):
    """GSM8K's setup commits nothing: its trials' base is the empty tree, one orphan base for all."""
    sink = bare(tmp_path)
    rubric = tmp_path / "assessment_dimensions.json"
    rubric.write_text(json.dumps({"dimensions": [{"name": "clarity", "title": "Clarity", "max_score": 5, "description": "d"}]}))
    done = run_cli(["calibrate", "publish", str(jobs["a"] / "u0000"), str(jobs["a"] / "u0001"), "--repo", str(sink),
                    "--rubric", str(rubric)], jobs["env"])
    assert done.code == 0, done.output
    assert json.loads(git(sink, "show", "calib/gsm8k-4b825dc642cb/a__u0001:.calibration/assessment_dimensions.json")) == \
        json.loads(rubric.read_text())
    heads = git(sink, "for-each-ref", "--format=%(refname:short)", "refs/heads").splitlines()
    assert sorted(heads) == ["base/gsm8k-4b825dc642cb", "calib/gsm8k-4b825dc642cb/a__u0000", "calib/gsm8k-4b825dc642cb/a__u0001"]
    assert git(sink, "show", "calib/gsm8k-4b825dc642cb/a__u0000~1:notes.txt") == "16 - 3 - 4 = 9; 9 * 2 = 18"


def test_a_missing_gh_is_a_precise_refusal_before_any_work(jobs, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git"))
    env = {**jobs["env"], "PATH": str(bin_dir)}  # git and nothing else: no gh, no glab
    done = run_cli(["calibrate", "publish", str(jobs["a"]), "--repo", "https://github.com/nullius/calibration", "--open-prs"], env)
    assert done.code == 2 and "Traceback" not in done.output
    assert "gh (the github CLI) is not installed" in done.stderr and "https://cli.github.com" in done.stderr, done.stderr
    lab = run_cli(["calibrate", "publish", str(jobs["a"]), "--repo", "git@gitlab.example.com:team/calib.git", "--open-prs"], env)
    assert lab.code == 2 and "glab (the gitlab CLI) is not installed" in lab.stderr, lab.stderr
    other = run_cli(["calibrate", "publish", str(jobs["a"]), "--repo", str(bare(tmp_path)), "--open-prs"], env)
    assert other.code == 2 and "needs a github.com or GitLab repository" in other.stderr
    assert git(tmp_path / "sink.git", "for-each-ref") == ""  # refused before anything was pushed


def test_a_sink_that_is_not_there_is_refused(jobs, tmp_path):
    done = run_cli(["calibrate", "publish", str(jobs["a"]), "--repo", str(tmp_path / "nowhere.git")], jobs["env"])
    assert done.code == 2 and "cannot be read" in done.stderr and "Traceback" not in done.output


def test_the_platform_protocol_is_met_by_both_clis():
    from nullius_report.calibrate import platform

    for url, cli in (("https://github.com/o/r.git", "gh"), ("https://gitlab.com/o/r", "glab")):
        found = platform.detect(url)
        assert isinstance(found, platform.GitPlatform) and found.cli == cli and platform.slug(url) == "o/r"
    assert platform.detect("/srv/git/calib.git") is None
