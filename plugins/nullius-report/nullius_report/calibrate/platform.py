"""The platform layer: pull (merge) requests and their review comments, through `gh` or `glab`, behind a Protocol.

The git layer (git_ops.py) needs only git and a remote; this one needs the
platform's CLI, logged in, and the repository to exist, and says precisely
which is missing before any work (`preflight`). None of it can be exercised
offline: the tests cover the preflight's refusals and the detection.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Protocol, runtime_checkable
from urllib.parse import urlparse

import attrs

from nullius_report.records import ReportError


@attrs.frozen
class PullRequest:
    number: int
    url: str
    branch: str


@runtime_checkable
class GitPlatform(Protocol):
    name: str  # github, gitlab
    cli: str  # the program: gh, glab

    def validate_cli_installed(self) -> None: ...
    def validate_auth(self) -> None: ...
    def repo_exists(self, repo: str) -> bool: ...
    def find_open_pr_for_branch(self, repo: str, branch: str) -> PullRequest | None: ...
    def create_pr(self, repo: str, head: str, base: str, title: str, body: str) -> PullRequest: ...
    def fetch_pr_comments(self, repo: str, number: int) -> list[dict]: ...


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


@attrs.frozen
class CliPlatform:
    """What gh and glab share: the program, how to install it, and how each asks for its facts."""

    name: str
    cli: str
    install: str
    host: str

    def validate_cli_installed(self) -> None:
        if shutil.which(self.cli) is None:
            raise ReportError(f"calibrate refused: {self.cli} (the {self.name} CLI) is not installed, and opening "
                              f"pull requests on {self.host} needs it: install it ({self.install}) and log in with "
                              f"`{self.cli} auth login`, or publish the branches alone (without --open-prs)")

    def validate_auth(self) -> None:
        done = _run([self.cli, "auth", "status"])
        if done.returncode != 0:
            raise ReportError(f"calibrate refused: {self.cli} is not logged in to {self.host} "
                              f"(`{self.cli} auth status` exited {done.returncode}): run `{self.cli} auth login`")

    def repo_exists(self, repo: str) -> bool:
        view = [self.cli, "repo", "view", repo] + (["--json", "name"] if self.name == "github" else ["--output", "json"])
        done = _run(view)
        # gh can exit 0 with an error for a missing repository: its output decides
        try:
            return done.returncode == 0 and bool(json.loads(done.stdout or "null"))
        except json.JSONDecodeError:
            return False

    def find_open_pr_for_branch(self, repo: str, branch: str) -> PullRequest | None:
        if self.name == "github":
            done = _run(["gh", "pr", "list", "--repo", repo, "--head", branch, "--state", "open", "--json", "number,url"])
        else:
            done = _run(["glab", "mr", "list", "--repo", repo, "--source-branch", branch, "--output", "json"])
        found = json.loads(done.stdout or "[]") if done.returncode == 0 else []
        if not found:
            return None
        first = found[0]
        return PullRequest(number=int(first.get("number") or first.get("iid")), url=first.get("url") or first.get("web_url", ""),
                           branch=branch)

    def create_pr(self, repo: str, head: str, base: str, title: str, body: str) -> PullRequest:
        if self.name == "github":
            args = ["gh", "pr", "create", "--repo", repo, "--head", head, "--base", base, "--title", title, "--body", body]
        else:
            args = ["glab", "mr", "create", "--repo", repo, "--source-branch", head, "--target-branch", base,
                    "--title", title, "--description", body, "--yes"]
        done = _run(args)
        if done.returncode != 0:
            raise ReportError(f"{self.cli}: could not open a request for {head}: {done.stderr.strip()}")
        url = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        number = int(url.rstrip("/").rsplit("/", 1)[-1]) if url.rstrip("/").rsplit("/", 1)[-1].isdigit() else 0
        return PullRequest(number=number, url=url, branch=head)

    def fetch_pr_comments(self, repo: str, number: int) -> list[dict]:
        if self.name == "github":
            done = _run(["gh", "api", f"repos/{repo}/pulls/{number}/comments"])
        else:
            done = _run(["glab", "api", f"projects/{repo.replace('/', '%2F')}/merge_requests/{number}/notes"])
        if done.returncode != 0:
            raise ReportError(f"{self.cli}: could not read the comments of #{number}: {done.stderr.strip()}")
        return json.loads(done.stdout or "[]")


def detect(url: str) -> GitPlatform | None:
    """github.com -> gh, a host with gitlab in its name -> glab; None for another host (a local path, a plain server)."""
    host = urlparse(url).hostname or (url.split("@", 1)[-1].split(":", 1)[0] if "@" in url else "")
    if host == "github.com":
        return CliPlatform(name="github", cli="gh", install="https://cli.github.com", host=host)
    if "gitlab" in host:
        return CliPlatform(name="gitlab", cli="glab", install="https://gitlab.com/gitlab-org/cli", host=host)
    return None


def slug(url: str) -> str:
    """owner/name of a platform URL: https://github.com/o/r.git and git@github.com:o/r.git -> o/r."""
    path = urlparse(url).path if "://" in url else url.split(":", 1)[-1]
    return path.strip("/").removesuffix(".git")


def preflight(url: str) -> GitPlatform:
    """The platform for `url`, its CLI installed and logged in and the repository there; else a precise refusal."""
    platform = detect(url)
    if platform is None:
        raise ReportError(f"calibrate refused: --open-prs needs a github.com or GitLab repository, and {url} is neither "
                          "(the branches can still be published there without --open-prs)")
    platform.validate_cli_installed()
    platform.validate_auth()
    if not platform.repo_exists(slug(url)):
        raise ReportError(f"calibrate refused: {slug(url)} does not exist on {platform.name}, or {platform.cli} "
                          "cannot see it (creating it is not calibrate's job)")
    return platform
