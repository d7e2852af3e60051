"""What is read of a box on this machine is what the daemon says: its changes (`docker diff`), its processes (`docker top`); every call timed.

The image has layers of its own that delete, make opaque and replace what
the layers below them hold; the container then changes, deletes and
replaces files of every layer in every way the daemon's diff tells apart
(content, size, time, mode, owner, a file's capability, a folder made
opaque, a file become a folder and back, links, a fifo). The daemon's own
diff walks the whole image; overlaydiff.py reads the upper folder alone and
must say the same, line for line.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from nullius_core.testing import run_cli

from docker_world import docker

from nullius_backend_docker import boxprocs, overlaydiff

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "catalogue"
LAYERS = """ARG NULLIUS_BASE
FROM ${NULLIUS_BASE}
RUN mkdir -p /data/keep /data/gone /data/opaque /data/replace /data/tofile /data/deep/a/b && echo a > /data/keep/a \\
    && echo b > /data/gone/b && echo c > /data/opaque/c && echo d > /data/replace/d && echo e > /data/tofile/e \\
    && echo f > /data/file && ln -s /data/file /data/link && echo g > /data/deep/a/b/g && cp /bin/true /data/cap
RUN rm -rf /data/gone /data/file /data/opaque && mkdir /data/opaque && echo c2 > /data/opaque/c2 && echo more > /data/keep/more
RUN rm -rf /data/tofile && echo now-a-file > /data/tofile && mkdir /data/file && echo x > /data/file/x
"""
CHANGES = """set -e
echo 42 > /data/keep/new; echo z >> /data/keep/a; printf a > /data/keep/more; touch -d 2001-01-01 /data/tofile
rm -rf /data/replace; mkdir /data/replace; echo n > /data/replace/n
rm /data/link; ln -s /etc /data/link; rm -rf /data/opaque; rm -rf /data/file; echo y > /data/file
mkdir -p /new/deep/er; echo 1 > /new/deep/er/f; mkfifo /fifo; ln /data/keep/a /hard
chmod 600 /data/keep/more; chown 1:1 /data/keep; rm -f /etc/hostname.nonexistent /usr/bin/tail; rm -rf /usr/share/doc
touch /data/deep/a/b/g; mkdir /data/made; rmdir /data/made; echo same > /tmp/t; rm /tmp/t
python3 -c "import os; os.setxattr('/data/cap', 'security.capability', bytes.fromhex('0100000200100000000000000000000000000000'))"
"""


@pytest.fixture(scope="module")
def layered(world, tmp_path_factory):
    env, _, _ = world
    base = run_cli(["docker", "base"], env).stdout.strip()
    folder = tmp_path_factory.mktemp("layers")
    (folder / "Dockerfile").write_text(LAYERS)
    tag = "nullius-test/layers:1"
    subprocess.run(["docker", "build", "-q", "--build-arg", f"NULLIUS_BASE={base}", "-t", tag, str(folder)], check=True,
                   capture_output=True, timeout=600)
    return tag


def test_the_upper_folder_says_what_the_daemons_diff_says(layered):
    name = "nullius-test-changes-box"
    subprocess.run(["docker", "rm", "-f", name], capture_output=True)
    docker("run", "-d", "--init", "--name", name, "--label", "nullius.job=test-changes", "--network", "none", "--entrypoint", "sleep",
           layered, "infinity")
    try:
        docker("exec", name, "sh", "-c", CHANGES)
        found = overlaydiff.folders(json.loads(docker("inspect", "--format", "{{json .GraphDriver}}", name)))
        if found is None:
            pytest.skip("the daemon's overlay2 folders cannot be read here (not root, or not on this machine): its own diff is used")
        ours = overlaydiff.changes(*found)
        theirs = docker("diff", name).splitlines()
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
    assert sorted(ours) == sorted(theirs)
    for line in ("C /data/cap", "D /data/opaque", "C /data/file", "C /data/replace", "D /data/replace/d", "A /data/replace/n",
                 "C /data/tofile", "C /data/keep", "C /data/keep/more", "A /fifo", "A /new/deep/er/f", "D /usr/share/doc", "C /data/deep/a/b/g"):
        assert line in ours, line
    assert not any(line.endswith(("/data/made", "/tmp/t")) for line in ours)  # made and gone again: no change


def test_the_boxs_processes_read_here_are_what_docker_top_lists(layered):
    name = "nullius-test-processes-box"
    subprocess.run(["docker", "rm", "-f", name], capture_output=True)
    docker("run", "-d", "--init", "--name", name, "--label", "nullius.job=test-changes", "--network", "none", "--entrypoint", "sleep",
           layered, "infinity")
    try:
        docker("exec", "-d", name, "sh", "-c", "sleep 300 & sleep 301; true")
        found = json.loads(docker("inspect", name))[0]
        # both seen at once: wait until the detached exec's two sleeps are there, as top shows them
        deadline = time.monotonic() + 60
        while len(docker("top", name, "-eo", "pid,ppid,args").splitlines()) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        ours = boxprocs.listed(found["State"]["Pid"], found["Id"])
        theirs = [line.split(None, 2) for line in docker("top", name, "-eo", "pid,ppid,args").splitlines()[1:]]
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
    if ours is None:
        pytest.skip("the box's cgroup cannot be read here (the daemon is elsewhere): docker top is asked")
    assert sorted(ours) == sorted(theirs) and len(ours) == 5  # init, the keep-alive, the shell and its two sleeps


def calls_of(unit: Path) -> list[list[str]]:
    """The trial's docker calls: [at_s, seconds, step, call, result] each."""
    return [line.split("\t") for line in (unit / ".work" / "docker-calls.tsv").read_text().splitlines()[2:]]


def test_a_units_records_are_the_same_done_from_here_and_through_the_daemon_alone(world):
    """ownbench's oracle, once as it runs here (the box's changes and processes read here, its door made in its namespace) and
    once with NULLIUS_DOCKER_LOCAL=0 (docker diff, docker top, a door container joined to the box): the same records."""
    env, _, _ = world
    env = {**env, "NULLIUS_CATALOGUE": str(FIXTURES)}
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    for job, extra in (("box-here", {}), ("box-daemon", {"NULLIUS_DOCKER_LOCAL": "0"})):
        result = run_cli(["run", "ownbench", "oracle", "--backend", "docker", "--job-name", job], {**env, **extra})
        assert result.code == 0, result.output
    outcomes = {job: {p.parent.name: json.loads(p.read_text())["standard"]["outcome"] for p in (jobs / job).glob("*/result.json")}
                for job in ("box-here", "box-daemon")}
    assert outcomes["box-here"] == outcomes["box-daemon"] == {"answer": "passed", "kept": "passed", "slow": "failed", "network": "passed",
                                                              "badpull": "error"}
    here, daemon = jobs / "box-here", jobs / "box-daemon"
    for record in ("answer/agent/container-changes.txt", "answer/verifier/stopped.txt", "answer/verifier/test-stdout.txt",
                   "kept/verifier/stopped.txt", "network/agent/container-changes.txt", "slow/verifier/test-stdout.txt"):
        assert (here / record).read_text() == (daemon / record).read_text(), record
    assert (here / "answer" / "agent" / "container-changes.txt").read_text() == "C /app\nA /app/answer.txt\nA /solution\nA /solution/solve.sh\n"
    # the check's one way out, refused the bridge's gateway, either way
    for job in (here, daemon):
        log = [json.loads(line) for line in (job / "network" / "verifier" / "egress.log").read_text().splitlines()]
        assert [(e["host"], e["allowed"]) for e in log] == [("172.17.0.1", False)]
    steps = {(step, call) for _, _, step, call, _ in calls_of(daemon / "answer") + calls_of(daemon / "network")}
    for expected in (("start", "POST /containers/create"), ("start", "POST /containers/{id}/start"), ("solve", "PUT /containers/{id}/archive"),
                     ("solve", "POST /exec/{id}/start"), ("changes", "GET /containers/{id}/changes"), ("stop", "GET /containers/{id}/top"),
                     ("check", "POST /exec/{id}/start"), ("collect", "GET /containers/{id}/archive"), ("remove", "DELETE /containers/{id}"),
                     ("door", "docker run -i (the door, joined to the box)"),
                     ("check", "docker run -i (the egress proxy, at the check's first connection)")):
        assert expected in steps, expected
    assert all(float(seconds) >= 0 and result for _, seconds, _, _, result in calls_of(daemon / "answer"))
    assert not any(call.startswith("docker run -i (the egress") for _, _, _, call, _ in calls_of(daemon / "answer"))  # it made none
    calls = [call for _, _, _, call, _ in calls_of(here / "answer") + calls_of(here / "network")]
    if "the upper folder, read here" not in calls:
        pytest.skip("the daemon's folders and the box's namespace cannot be reached here: both runs went through the daemon")
    assert "GET /containers/{id}/changes" not in calls and "GET /containers/{id}/top" not in calls
    assert "listening in the box's namespace, from here" in calls and not any("the door, joined" in c for c in calls)
    run_calls = (here / ".work" / "docker-calls.tsv").read_text()
    assert "GET /version" in run_calls and "sweep\tGET /containers/json" in run_calls
