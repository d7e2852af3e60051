"""The bwrap backend: the Backend contract, its ports proven in sandboxes, and the adversaries of the hardening work finding nothing.

The adversaries are the docker backend's (tests/fixtures/models/adversary.py,
planter.py): the reference agent on the fake model runs them with its
run_command, inside its sandbox. They need bubblewrap and a kernel that lets
it make the namespaces; where the kernel forbids one, these tests are
skipped with what is missing (kernel.missing()), and the refusal itself is
tested in a sandbox whose user namespaces are truly refused.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

from nullius_core.testing import isolated_env, run_cli
from nullius_core.testing.backend_contract import check_backend
from nullius_core.testing.fake_model import running_fake_model
from nullius_plugins.bwrap_backend import BwrapBackend, kernel

sys.path.insert(0, str(ROOT / "tests"))
from fixtures.models.adversary import commands, hunt_command, listening_everywhere, machine_addresses, printed, scan_command  # noqa: E402
from fixtures.models.planter import run_planted  # noqa: E402

PLAYER = "nullius_agent_reference.player"
KEY = "sk-upstream-held-by-the-relay-bwrap-0123456789"
MISSING = kernel.missing()
needs_sandbox = pytest.mark.skipif(MISSING is not None, reason=f"this machine cannot make the sandbox: {MISSING}")


@pytest.fixture(scope="module")
def world(tmp_path_factory, nullius_installs):
    root = tmp_path_factory.mktemp("bwrap")
    env = {**isolated_env(root, standard_dir=nullius_installs), "OPENAI_COMPATIBLE_API_KEY": KEY}
    with running_fake_model(f"{PLAYER}:respond") as fake:
        yield env, fake, root


def model_args(fake, backend: str = "bwrap") -> list[str]:
    return ["--model", "fake-model", "--provider", "openai-compatible", "--base-url", fake.openai_base_url, "--backend", backend,
            *(["--unsandboxed"] if backend == "local" else [])]


@needs_sandbox
def test_the_bwrap_backend_keeps_the_contract(nullius_env, tmp_path):
    assert check_backend(BwrapBackend, tmp_path, nullius_env) == []


@needs_sandbox
def test_the_reference_agent_proves_its_ports_in_sandboxes_without_consent(world):
    env, fake, _ = world
    fake.use(f"{PLAYER}:respond")
    result = run_cli(["conform", "reference", *model_args(fake), "--json"], env)  # no --unsandboxed: bwrap isolates
    assert result.code == 0, result.output
    ports = {r["port"]: r for r in json.loads(result.stdout)}
    assert {p for p, r in ports.items() if r["proven"]} == {"agent.task/v1", "agent.workspace/v1", "agent.conversation/v1", "agent.tools/v1"}
    assert {r["backend"] for r in ports.values() if r["proven"]} == {"bwrap"}
    tools = Path(env["NULLIUS_JOBS_DIR"]) / ports["agent.tools/v1"]["job"]
    # the office's tools ran on this machine, reached through the unit's door: their log, out of the agent's reach, shows the chain
    log = tools / "chain" / "verifier" / "mcp-calls.jsonl"
    assert [json.loads(line)["tool"] for line in log.read_text().splitlines()] == ["locate_parcel", "shift_lead", "radio_call_sign"]
    assert "started for a connection through the door" in (tools / "chain" / ".work" / "mcp-servers.log").read_text()
    config = json.loads((tools / "config.json").read_text())
    assert config["standard"]["backend"]["name"] == "bwrap" and config["standard"]["backend"]["bwrap"].startswith("bubblewrap")


def _trials(env, job: str) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in (Path(env["NULLIUS_JOBS_DIR"]) / job).glob("*/result.json")}


@needs_sandbox
def test_an_adversary_finds_no_key_no_other_units_token_no_service_and_writes_only_its_own_folders(world, tmp_path):
    """Two units side by side, each hunting: the key, the other's token, every process and file it can read, every port."""
    env, fake, root = world
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    job = jobs / "hunt"
    machine = machine_addresses()
    agents = Path(env["STANDARD_DIR"]) / "agents" / "reference"
    definition = ROOT / "plugins" / "nullius-agent-reference" / "nullius_agent_reference" / "catalogue" / "agents" / "reference"
    units = ["u0000", "u0001"]
    places = [str(job), *(str(job / u) for u in units), *(str(job / u / ".work") for u in units), str(agents), str(definition),
              str(next(agents.glob("*/*"))), env["STANDARD_DIR"], str(root), "/", "/usr", "/etc", "/tmp", '"$HOME"', "."]
    assert not Path("/tmp/hunt-was-here.txt").exists()
    hunt = hunt_command(KEY, units, places)
    with listening_everywhere() as port:  # as a model server listening on all interfaces: the scan must not find it
        fake.use(commands(hunt, scan_command(["127.0.0.1", *machine, "1.1.1.1"])))
        result = run_cli(["run", "humaneval", "reference", *model_args(fake), "--limit", "2", "-j", "2",
                          "--job-name", "hunt"], env)
    assert result.code == 0, result.output
    found = {}
    for unit in units:
        records = job / unit / "agent" / "acp.jsonl"
        found[unit] = printed(records, "HUNT")
        scan = printed(records, "SCAN")
        assert scan["127.0.0.1"]["open"] == [61080, 61090]  # its own loopback: its door, and nothing else
        for address in [*machine, "1.1.1.1"]:
            assert scan[address]["open"] == [], (address, port, scan[address])
            assert sum(scan[address]["not"].values()) == 65535
    for unit, hunt_found in found.items():
        assert hunt_found["unit"] == unit
        other = units[1 - units.index(unit)]
        assert hunt_found["key"] == [], hunt_found["key"]
        assert hunt_found["files"] > 1000  # it did read: the install, the definition, its folders
        own = set(hunt_found["tokens"])  # its own token, in its agent's environment: one, and no other unit's anywhere
        assert len(own) == 1 and all(w.startswith("/proc/") for w in hunt_found["tokens"][next(iter(own))]), hunt_found["tokens"]
        assert not own & set(found[other]["tokens"])
        assert hunt_found["routes"] == {"other unit, own token": 403, "own unit, no token": 401}
        # its own pid namespace: bwrap's init, its agent, the commands it ran; nothing of the run or this machine
        seen = hunt_found["pids"]
        assert max(map(int, seen)) < 100 and seen["1"].startswith("/usr/bin/bwrap"), seen
        assert not [c for c in seen.values() if "-m nullius_core" in c or "watcher" in c or "pytest" in c.split()[0]], seen
        assert not [c for c in seen.values() if "nlr-" in c or "sk-" in c], seen  # no token or key on a command line either
        home = job / unit / ".work" / "home"
        # beyond its workspace and HOME it writes only in its own /tmp, a tmpfs that dies with it (the test's job folders
        # lie under /tmp here: the folders leading to its binds are in that tmpfs); `left` below: nothing reached this machine
        beyond = [w for w in hunt_found["written"] if w not in (str(home), ".") and not Path(w).is_relative_to("/tmp")]
        assert beyond == [] and {str(home), ".", "/tmp"} <= set(hunt_found["written"]), hunt_found["written"]
        assert (home / "hunt-was-here.txt").is_file() and (job / unit / ".work" / "workspace" / "hunt-was-here.txt").is_file()
    left = [p for p in [*map(Path, places[:-2]), Path("/tmp")] if (p / "hunt-was-here.txt").exists()]
    assert left == []  # nothing reached this machine but in the units' own workspaces and HOMEs
    calls = [json.loads(line) for line in (job / "u0000" / "agent" / "calls.jsonl").read_text().splitlines()]
    assert [c["status"] for c in calls] == [200, 200, 200]  # the relay, through the door, it does reach


SECRET = "the machine's own file, never the job's 5c1e07"


@needs_sandbox
def test_no_check_reads_through_a_link_an_agent_in_a_sandbox_planted(world, tmp_path):
    env, fake, _ = world
    files, taken, leaked = run_planted(env, fake, tmp_path, SECRET, model_args(fake), "planted-bwrap")
    assert files["real.txt"] == files["ok.txt"] == "inside\n"
    assert "taken out before the check" in files["answer.txt"] and "hard.txt" not in files  # no hard link: the file is not in the sandbox
    assert set(taken) == {"answer.txt", "d/all", "up"}
    assert not leaked


@needs_sandbox
def test_gsm8k_and_humaneval_score_under_bwrap_as_locally(world):
    env, fake, _ = world
    fake.use({"default": {"text": "#### 18"}})
    rewards = {}
    for bench in ("gsm8k", "humaneval"):
        for backend in ("local", "bwrap"):
            job = f"same-{bench}-{backend}"
            result = run_cli(["run", bench, "reference", *model_args(fake, backend), "--limit", "3", "--job-name", job], env)
            assert result.code == 0, result.output
            trials = _trials(env, job)
            assert len(trials) == 3 and all(t.get("exception_info") is None for t in trials.values())
            rewards[bench, backend] = {u: t["verifier_result"]["rewards"] for u, t in trials.items()}
        assert rewards[bench, "bwrap"] == rewards[bench, "local"]
    assert rewards["gsm8k", "bwrap"]["u0000"]["reward"] == 1  # the first problem's answer is 18


def _sandboxed(job: Path) -> dict[int, str]:
    """The job's sandboxes on this machine: each bwrap whose command line names the job's folders, and every descendant."""
    table = subprocess.run(["ps", "-eww", "-o", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    rows = {int(pid): (int(ppid), args) for pid, ppid, args in (line.split(None, 2) for line in table.splitlines() if len(line.split(None, 2)) == 3)}
    found = {pid for pid, (_, args) in rows.items() if args.startswith("/usr/bin/bwrap") and str(job) in args}
    while True:
        more = {pid for pid, (ppid, _) in rows.items() if ppid in found} - found
        if not more:
            return {pid: rows[pid][1] for pid in found}
        found |= more


@needs_sandbox
def test_a_killed_run_leaves_no_sandbox_and_no_door(world):
    env, fake, _ = world
    fake.use({"default": {"text": "late", "fault": {"first_byte_delay": 600}}})
    job = Path(env["NULLIUS_JOBS_DIR"]) / "killed-bwrap"
    args = [sys.executable, "-m", "nullius_core", "run", "gsm8k", "reference", *model_args(fake), "--limit", "2", "-j", "2",
            "--job-name", "killed-bwrap"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and sum("reference/agent.py" in args for args in _sandboxed(job).values()) < 2:
            time.sleep(0.2)
        running = _sandboxed(job)
        assert sum("reference/agent.py" in args for args in running.values()) >= 2, running  # two agents, each its sandbox's command
        assert not [a for a in running.values() if "door.py" in a], running  # no door runs in a sandbox: the run's process serves it
        helpers = _helpers(job)  # the run's maker of the doors' listeners
        assert len(helpers) == 1, helpers
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the run, at once: its watcher (a session of its own) is what is left to end them
        proc.wait(60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _alive([*running, *helpers]):
        time.sleep(0.2)
    assert _alive([*running, *helpers]) == []


def _helpers(job: Path) -> list[int]:
    table = subprocess.run(["ps", "-eww", "-o", "pid=,args="], capture_output=True, text=True).stdout
    return [int(line.split(None, 1)[0]) for line in table.splitlines() if "outside/listeners.py" in line and str(job) in line]


def _alive(pids) -> list[int]:
    """Those of pids still running (a zombie is gone: it only waits to be reaped)."""
    out = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.append(pid)
    return out


UNPRIVILEGED = r"""
import json, os, socket, subprocess, sys
helper = sys.argv[1]
ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
maker = subprocess.Popen([sys.executable, "-I", "-S", helper, "label"], stdin=theirs.fileno())
theirs.close()
info, block = os.pipe(), os.pipe()
agent = "import socket; print(socket.create_connection(('127.0.0.1', 61080), 5).recv(100).decode())"
sandbox = subprocess.Popen(["bwrap", "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--ro-bind", "/", "/",
                            "--proc", "/proc", "--info-fd", str(info[1]), "--block-fd", str(block[0]), "--", sys.executable, "-c", agent],
                           pass_fds=(info[1], block[0]), stdout=subprocess.PIPE, text=True)
os.close(info[1]); os.close(block[0])
told = b""
while (piece := os.read(info[0], 4096)):
    told += piece
netns = os.open(f"/proc/{json.loads(told)['child-pid']}/ns/net", os.O_RDONLY)
mine, reply = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
socket.send_fds(ours, [b"61080 61090"], [netns, reply.fileno()])
reply.close()
text, fds, _, _ = socket.recv_fds(mine, 4096, 2)
listener = socket.socket(fileno=fds[0])
os.write(block[1], b"\n")
conn, _ = listener.accept()
conn.sendall(b"served from outside, uid %d" % os.geteuid())
conn.close()
said = sandbox.communicate(timeout=60)[0].strip()
ours.close()
print(json.dumps({"answer": text.decode(), "fds": len(fds), "said": said, "status": sandbox.returncode, "maker": maker.wait(10)}))
"""


@needs_sandbox
def test_the_door_is_made_for_an_unprivileged_user_too(tmp_path):
    """The listener maker, run as `nobody`: its child enters the sandbox's user namespace, then its network namespace."""
    import shutil
    import tempfile

    python = Path("/usr/bin/python3")
    if os.geteuid() != 0 or shutil.which("setpriv") is None or not python.exists():
        pytest.skip("needs root (to become nobody), setpriv and /usr/bin/python3")
    from nullius_plugins.bwrap_backend.maker import HELPER

    shared = Path(tempfile.mkdtemp(prefix="nullius-unprivileged-"))  # tmp_path's parents are root's alone
    try:
        shared.chmod(0o755)
        shutil.copy(HELPER, shared / "listeners.py")
        (shared / "drive.py").write_text(UNPRIVILEGED)
        for made in shared.iterdir():
            made.chmod(0o644)
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(python), str(shared / "drive.py"),
                               str(shared / "listeners.py")], capture_output=True, text=True, timeout=120, cwd=shared, env={"PATH": "/usr/bin:/bin"})
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    if "setting up uid map" in done.stderr or "No permissions to create new namespace" in done.stderr:
        pytest.skip(f"this kernel makes no user namespace for an unprivileged user: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"answer": "ok", "fds": 2, "said": "served from outside, uid 65534", "status": 0, "maker": 0}


def test_a_kernel_that_refuses_user_namespaces_refuses_the_run_saying_so(world, tmp_path):
    """Inside a sandbox whose user namespaces are disabled (the kernel refuses every new one there), a bwrap run is refused."""
    if MISSING is not None:
        pytest.skip(f"this machine cannot make even the outer sandbox: {MISSING}")
    env, _, _ = world
    outer = ["bwrap", "--unshare-user", "--disable-userns", "--bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--die-with-parent"]
    done = subprocess.run([*outer, sys.executable, "-m", "nullius_core", "run", "gsm8k", "oracle", "--backend", "bwrap", "--limit", "1",
                           "--job-name", "refused-bwrap"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2, done.stderr
    assert "the bwrap backend needs namespaces this machine's kernel refuses: user" in done.stderr and "Traceback" not in done.stderr


def test_without_bwrap_the_backend_says_what_it_needs(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert kernel.missing() == "the bwrap backend needs bubblewrap (bwrap) on PATH; install it with: apt-get install -y bubblewrap"


PROBE = r"""
import json, os, socket, sys
out = {"host": socket.gethostname(), "env": sorted(os.environ), "pids": len([p for p in os.listdir("/proc") if p.isdigit()])}
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5).close()
    out["machine"] = "reached"
except OSError as exc:
    out["machine"] = type(exc).__name__
for place in (".", "/", sys.argv[2]):
    try:
        open(os.path.join(place, "probe.txt"), "w").close()
        out.setdefault("written", []).append(place)
    except OSError:
        pass
print(json.dumps(out))
"""


@needs_sandbox
def test_a_capability_runs_in_a_sandbox_of_its_own(world, tmp_path):
    """capability_launch's command, run as the stdio runner runs it: no network, its folder alone writable, its environment alone."""
    import asyncio
    import io

    from nullius_core.contracts.backend import RunContext
    from nullius_core.contracts.driver import DriverLaunch
    from nullius_core.testing.helpers import make_session

    env, fake, _ = world
    backend = BwrapBackend()
    session = make_session(env)
    asyncio.run(backend.start(RunContext(job="cap", job_dir=tmp_path, paths=session.paths, progress=io.StringIO())))
    folder, other = tmp_path / "unit", tmp_path / "other"
    folder.mkdir()
    other.mkdir()
    port = fake.openai_base_url.rsplit(":", 1)[1].split("/")[0]
    launch = backend.capability_launch(DriverLaunch(argv=[sys.executable, "-c", PROBE, port, str(other)], env={"NULLIUS_OPTION_K": "3", "PATH": "/usr/bin"},
                                                    cwd=folder, label="a capability"), [folder], "u0000")
    done = subprocess.run(launch.argv, env=dict(launch.env), cwd=launch.cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["host"] == "nullius" and seen["machine"] == "ConnectionRefusedError" and seen["pids"] <= 3
    assert seen["written"] == ["."] and (folder / "probe.txt").exists() and not (other / "probe.txt").exists()
    assert set(seen["env"]) <= {"NULLIUS_OPTION_K", "PATH", "HOME", "LC_CTYPE", "PWD"}  # bwrap sets PWD, its --chdir


@needs_sandbox
def test_a_capability_unit_answers_from_its_sandbox(world):
    """The bm25 memory, its process under bwrap: every unit recalled."""
    env, fake, _ = world
    from fixtures.models.reader import reader  # the docker test's model, reading a memory

    fake.use(reader)
    result = run_cli(["run", "recall", "bm25", *model_args(fake), "--job-name", "bm25-bwrap"],
                     {**env, "NULLIUS_CATALOGUE": str(ROOT / "tests" / "fixtures" / "catalogue")})
    assert result.code == 0, result.output
    outcomes = {u: t["standard"]["outcome"] for u, t in _trials(env, "bm25-bwrap").items()}
    assert outcomes == {f"u000{i}": "passed" for i in range(4)}
