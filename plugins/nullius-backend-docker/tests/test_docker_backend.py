"""The docker backend against a real daemon: ports proven in containers, the key kept in the relay, checks in throwaway containers, sweeps.

They need docker: see docker_world.py, whose `world` (one home, the
reference agent installed once) they share.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from nullius_core.testing import run_cli
from nullius_core.testing.fake_model import FakeRequest, Reply, ToolCall

from docker_world import (DOOR_PORTS, KEY, PLAYER, REPO, docker, events_since, labelled, listening_everywhere, machine_addresses, model_args,
                          scan_command, the_scan_in)
from nullius_backend_docker.sweep import folder_label


def test_the_reference_agent_proves_its_ports_in_containers_without_consent(world):
    env, fake, _ = world
    fake.use(f"{PLAYER}:respond")
    result = run_cli(["conform", "reference", *model_args(fake), "--json"], env)  # no --unsandboxed: docker isolates
    assert result.code == 0, result.output
    ports = {r["port"]: r for r in json.loads(result.stdout)}
    assert {p for p, r in ports.items() if r["proven"]} == {"agent.task/v1", "agent.workspace/v1", "agent.conversation/v1", "agent.tools/v1"}
    assert {r["backend"] for r in ports.values() if r["proven"]} == {"docker"}
    assert {name: skill["ok"] for name, skill in ports["agent.tools/v1"]["skills"].items()} == {"decoys": True, "chain": True, "retry": True}
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    tools = jobs / ports["agent.tools/v1"]["job"]
    # the office's tools ran on this machine, reached through the unit's door: their log shows the chain
    log = tools / "chain" / "verifier" / "mcp-calls.jsonl"
    assert [json.loads(line)["tool"] for line in log.read_text().splitlines()] == ["locate_parcel", "shift_lead", "radio_call_sign"]
    assert "started for a connection through the door" in (tools / "chain" / ".work" / "mcp-servers.log").read_text()
    config = json.loads((tools / "config.json").read_text())
    assert config["standard"]["backend"]["name"] == "docker" and config["standard"]["backend"]["image"].startswith("nullius/base:")
    calls = [json.loads(line) for line in (tools / "chain" / "agent" / "calls.jsonl").read_text().splitlines()]
    assert calls and all(c["status"] == 200 for c in calls)  # recorded by the run's relay, on the unit's route, through its door
    for job in ports.values():
        if job.get("job"):
            assert labelled(env, job["job"]) == {"containers": [], "networks": [], "volumes": []}


def _inspect(*ids: str) -> list[dict]:
    # a container may end between the listing and the inspection: inspect what is still there
    done = subprocess.run(["docker", "inspect", *ids], capture_output=True, text=True, timeout=120) if ids else None
    return json.loads(done.stdout or "[]") if done else []


def _agent_containers(root: Path) -> list[dict]:
    """The running containers of the job whose agent works under root (found by its mounts), by the job's label."""
    ours = [c for c in _inspect(*docker("ps", "-q", "--filter", "label=nullius.job").split()) if str(root) in json.dumps(c["Mounts"])]
    jobs = {c["Config"]["Labels"]["nullius.job"] for c in ours}
    return [c for job in jobs for c in _inspect(*docker("ps", "-q", "--filter", f"label=nullius.job={job}").split())]


def test_the_key_is_in_no_container_the_agent_has_no_network_and_a_killed_job_is_swept(world):
    env, fake, root = world
    fake.use({"default": {"text": "late", "fault": {"first_byte_delay": 600}}})  # past the kit's turn limit: the unit stays up
    args = [sys.executable, "-m", "nullius_core", "conform", "reference", *model_args(fake), "--port", "agent.tools/v1"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        running: list[dict] = []
        pairs: list[tuple[dict, dict]] = []
        while time.monotonic() < deadline:
            running = _agent_containers(root)
            # one unit's agent and its own door (the kit's units run side by side: each has its pair)
            pairs = [(a, d) for a in running if a["Name"].endswith("-agent") for d in running
                     if d["Name"] == a["Name"].removesuffix("-agent") + "-door"]
            if pairs:
                break
            time.sleep(0.3)
        assert pairs, [c["Name"] for c in running]
        agent, door = pairs[0]
        job = agent["Config"]["Labels"]["nullius.job"]

        # the key: in no container of the job at all (the relay is in Nullius's own process)
        for container in _inspect(*docker("ps", "-aq", "--filter", f"label=nullius.job={job}").split()):
            assert KEY not in json.dumps(container["Config"]["Env"]) and KEY not in json.dumps(container["Args"]), container["Name"]
        # every file the agent can see, its mounts included, searched from inside as the agent sees them
        # (the pattern on stdin: on grep's argument list it would find itself in /proc)
        def search(text: str) -> list[str]:
            found = subprocess.run(
                ["docker", "exec", "-i", agent["Id"], "sh", "-c",
                 "grep -rlF -D skip -f - $(ls -d /* | grep -v -x -e /proc -e /sys -e /dev); true"],
                input=text + "\n", capture_output=True, text=True, timeout=600,
            )
            assert found.returncode == 0, found.stderr
            return found.stdout.split()

        assert any(p.endswith("/reference/agent.py") for p in search("NULLIUS_REFERENCE_MODEL"))  # the search does find
        assert search(KEY) == []
        assert agent["HostConfig"]["CapDrop"] == ["ALL"] and agent["Config"]["User"] == f"{os.getuid()}:{os.getgid()}"
        assert all(not m["RW"] for m in agent["Mounts"] if "reference" in m["Source"] and "/home" not in m["Destination"]
                   and "workspace" not in m["Destination"])
        # no network of its own: the door's namespace, whose one interface is the loopback
        # (the agent's container is made while its door starts: docker may keep the door's name or its id)
        assert agent["HostConfig"]["NetworkMode"] in (f"container:{door['Id']}", f"container:{door['Name'].lstrip('/')}")
        assert door["HostConfig"]["NetworkMode"] == "none"
        interfaces = docker("exec", agent["Id"], "cat", "/proc/net/dev").splitlines()[2:]
        assert [line.split(":")[0].strip() for line in interfaces] == ["lo"]
        assert not any(m["Destination"] == "/sockets" for m in agent["Mounts"])  # the sockets are the door's alone

        # killed mid-run: the run's watcher sweeps what it started (after_kill); `nullius docker sweep` finds nothing more
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and labelled(env, job) != {"containers": [], "networks": [], "volumes": []}:
            time.sleep(0.3)
        assert labelled(env, job) == {"containers": [], "networks": [], "volumes": []}
        swept = run_cli(["docker", "sweep", job, "--json"], env)
        assert swept.code == 0, swept.output
        assert json.loads(swept.stdout)["containers"] == []
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def scan_player(addresses: list[str]):
    """An agent that scans for a way out: every port of every address of this machine, and beyond."""
    def respond(request: FakeRequest) -> Reply:
        if request.last_tool_result is None:
            return Reply(tool_calls=[ToolCall(name="run_command", arguments={"command": scan_command(addresses)})])
        return Reply(text="scanned")
    return respond


def test_an_agent_scanning_every_port_of_the_machine_finds_only_its_door(world):
    env, fake, _ = world
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    machine = machine_addresses()
    assert any(a.startswith("172.17.") for a in machine), machine  # the docker bridge's gateway is among them
    with listening_everywhere() as port:  # as vLLM listens by default: reached from a container on today's bridge design
        fake.use(scan_player(["127.0.0.1", *machine, "1.1.1.1"]))
        result = run_cli(["run", "humaneval", "reference", *model_args(fake), "--limit", "1", "--job-name", "scan-agent"], env)
    assert result.code == 0, result.output
    trial = next((jobs / "scan-agent").glob("*/agent/acp.jsonl"))
    scan = the_scan_in(trial)
    assert scan["127.0.0.1"]["open"] == DOOR_PORTS  # its own loopback: the door, and nothing else
    for address in [*machine, "1.1.1.1"]:
        assert scan[address]["open"] == [], (address, port, scan[address])
        assert sum(scan[address]["not"].values()) == 65535
    calls = [json.loads(line) for line in (trial.parent / "calls.jsonl").read_text().splitlines()]
    assert len(calls) == 2 and all(c["status"] == 200 for c in calls)  # the relay, through the door, it does reach


def test_a_killed_jobs_containers_are_swept_by_its_watcher_and_the_job_resumes(world):
    """A SIGKILLed run cannot remove its containers: its watcher runs the backend's sweep (after_kill), so none is left working
    in the units' folders; --resume then runs those units again (and sweeps first too, for a watcher killed with the run)."""
    env, fake, root = world
    fake.use({"default": {"text": "late", "fault": {"first_byte_delay": 600}}})
    args = [sys.executable, "-m", "nullius_core", "run", "humaneval", "reference", *model_args(fake), "--limit", "1", "--job-name", "killed-docker"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not labelled(env, "killed-docker")["containers"]:
            time.sleep(0.3)
        agents = [c for c in _inspect(*labelled(env, "killed-docker")["containers"]) if c["Name"].endswith("-agent")]
        while time.monotonic() < deadline and not agents:
            time.sleep(0.3)
            agents = [c for c in _inspect(*labelled(env, "killed-docker")["containers"]) if c["Name"].endswith("-agent")]
        assert agents, "no agent container started"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(60)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and labelled(env, "killed-docker") != {"containers": [], "networks": [], "volumes": []}:
        time.sleep(0.3)
    assert labelled(env, "killed-docker") == {"containers": [], "networks": [], "volumes": []}
    runs = (Path(env["NULLIUS_JOBS_DIR"]) / "killed-docker" / ".work" / "runs.jsonl").read_text().splitlines()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any('"after_kill"' in line for line in runs):
        time.sleep(0.3)
        runs = (Path(env["NULLIUS_JOBS_DIR"]) / "killed-docker" / ".work" / "runs.jsonl").read_text().splitlines()
    swept = [json.loads(line) for line in runs if '"after_kill"' in line]
    assert len(swept) == 1 and swept[0]["status"] == 0 and swept[0]["after_kill"][-2:] == ["sweep", str(Path(env["NULLIUS_JOBS_DIR"]) / "killed-docker")]
    fake.use({"default": {"text": "def f(): pass"}})
    # a sandboxed job needs no consent; the key goes to the model's URL only when the command line names it again
    resumed = run_cli(["run", "--resume", str(Path(env["NULLIUS_JOBS_DIR"]) / "killed-docker"), "--base-url", fake.openai_base_url], env)
    assert resumed.code == 0, resumed.output
    result = json.loads((Path(env["NULLIUS_JOBS_DIR"]) / "killed-docker" / "result.json").read_text())
    assert result["standard"]["state"] == "finished" and result["stats"]["n_completed_trials"] == 1 and result["standard"]["errored"] == 0
    assert labelled(env, "killed-docker") == {"containers": [], "networks": [], "volumes": []}


def test_ctrl_c_leaves_nothing_of_the_job(world):
    env, fake, root = world
    fake.use({"default": {"text": "late", "fault": {"first_byte_delay": 120}}})
    args = [sys.executable, "-m", "nullius_core", "conform", "reference", *model_args(fake), "--port", "agent.task/v1"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        job = None
        while time.monotonic() < deadline and job is None:
            agents = [c for c in _agent_containers(root) if c["Name"].endswith("-agent")]
            job = agents[0]["Config"]["Labels"]["nullius.job"] if agents else None
            time.sleep(0.3)
        assert job, "no agent container started"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(90) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    assert labelled(env, job) == {"containers": [], "networks": [], "volumes": []}


def test_humaneval_checks_run_in_throwaway_containers(world):
    env, _, root = world
    jobs = Path(env["NULLIUS_JOBS_DIR"])
    since = time.time() - 1
    for control, passed in (("oracle", 4), ("nop", 0)):
        result = run_cli(["run", "humaneval", control, "--backend", "docker", "--limit", "4", "-j", "2", "--job-name", f"he-{control}"], env)
        assert result.code == 0, result.output
        trials = [json.loads(p.read_text()) for p in (jobs / f"he-{control}").glob("*/result.json")]
        assert len(trials) == 4 and sum(t["verifier_result"]["rewards"]["reward"] for t in trials) == passed
        assert all(t.get("exception_info") is None for t in trials)
    started = events_since(since, '{{index .Actor.Attributes "nullius.job"}}', "--filter", "event=start")
    assert started.count("he-oracle") == 4 and started.count("he-nop") == 4  # one container per check


def test_a_run_never_sweeps_a_job_of_its_name_in_another_jobs_folder(world, tmp_path):
    """Two jobs folders may each hold a job named `twin`, run at once: each run's sweeps take only its own folder's containers."""
    env, _, _ = world
    from nullius_backend_docker import image

    tag = image.ensure_base(tmp_path / "images")
    other = tmp_path / "elsewhere" / "twin"
    theirs = docker("create", "--label", "nullius.job=twin", "--label", f"nullius.folder={folder_label(other)}", tag, "true").strip()
    try:
        result = run_cli(["run", "humaneval", "oracle", "--backend", "docker", "--limit", "1", "--job-name", "twin"], env)
        assert result.code == 0, result.output
        assert docker("ps", "-aq", "--no-trunc", "--filter", f"id={theirs}").strip() == theirs  # the other folder's job keeps it
        assert labelled(env, "twin") == {"containers": [], "networks": [], "volumes": []}
    finally:
        subprocess.run(["docker", "rm", "-f", theirs], capture_output=True, timeout=120)


def test_a_check_never_reads_through_a_link_the_agent_planted(world, tmp_path):
    env, _, _ = world
    from nullius_backend_docker import image

    tag = image.ensure_base(tmp_path / "images")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("the machine's own file\n")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "planted").symlink_to(outside / "secret.txt")
    from nullius_backend_docker.backend import DockerBackend

    backend = DockerBackend()
    backend.image, backend.job = tag, "link-test"
    backend.folder = folder_label(Path(env["NULLIUS_JOBS_DIR"]) / "link-test")
    sandbox = backend.sandbox()
    seen = subprocess.run([*sandbox["argv"], "--volume", f"{workspace}:/work:ro", sandbox["image"], "cat", "/work/planted"],
                          capture_output=True, text=True, timeout=60)
    assert seen.returncode != 0 and "the machine's own file" not in seen.stdout
    # and the workspace kit's check refuses the link outright, with its sandbox
    kit = REPO / "nullius_plugins" / "ports_v1" / "kits" / "agent-workspace-v1" / "driver.py"
    driver = subprocess.Popen([sys.executable, str(kit)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def call(**request):
        driver.stdin.write(json.dumps(request) + "\n")
        driver.stdin.flush()
        return json.loads(driver.stdout.readline())

    work = tmp_path / "unit"
    work.mkdir()
    try:
        setup = call(op="setup", unit="fix-bug", dir=str(work), dataset="checks")
        call(op="oracle", unit="fix-bug", dir=str(work), dataset="checks")
        fixed = (work / "ledger.py").read_text()
        (outside / "ledger.py").write_text(fixed)
        (work / "ledger.py").unlink()
        (work / "ledger.py").symlink_to(outside / "ledger.py")
        linked = call(op="score", unit="fix-bug", dir=str(work), dataset="checks", answer="done", sandbox=sandbox)
        assert linked["passed"] is False and "outside the workspace" in linked["detail"]["found"]
        (work / "ledger.py").unlink()
        (work / "ledger.py").write_text(fixed)
        real = call(op="score", unit="fix-bug", dir=str(work), dataset="checks", answer="done", sandbox=sandbox)
        assert real["passed"] is True, real  # the same code, a regular file: the test passes in the container
        assert setup["prompt"]
    finally:
        driver.stdin.close()
        driver.wait(60)
        subprocess.run(["docker", "rm", "-f", *labelled(env, "link-test")["containers"]], capture_output=True)


SECRET = "the machine's own file, never the job's 9b41d2"


def test_no_check_reads_through_a_link_an_agent_in_a_container_planted(world, tmp_path):
    """Harmless inside its container, `answer.txt -> /outside/secret.txt` would lead the driver, on this machine, to this machine's file."""
    sys.path.insert(0, str(REPO / "tests"))
    from fixtures.models.planter import run_planted

    env, fake, _ = world
    files, taken, leaked = run_planted(env, fake, tmp_path, SECRET, model_args(fake), "planted-docker")
    assert files["real.txt"] == files["ok.txt"] == "inside\n"
    assert "taken out before the check" in files["answer.txt"] and "hard.txt" not in files  # no hard link: the file is not in the container
    assert set(taken) == {"answer.txt", "d/all", "up"}
    assert not leaked
    assert labelled(env, "planted-docker") == {"containers": [], "networks": [], "volumes": []}


def test_a_capability_runs_in_a_container_of_its_own(world):
    sys.path.insert(0, str(REPO / "tests"))
    from fixtures.models.reader import reader

    env, fake, _ = world
    fake.use(reader)
    since = time.time() - 1
    result = run_cli(["run", "recall", "bm25", *model_args(fake), "--job-name", "bm25-docker"],
                     {**env, "NULLIUS_CATALOGUE": str(REPO / "tests" / "fixtures" / "catalogue")})
    assert result.code == 0, result.output
    jobs = Path(env["NULLIUS_JOBS_DIR"]) / "bm25-docker"
    outcomes = {p.parent.name: json.loads(p.read_text())["standard"]["outcome"] for p in jobs.glob("*/result.json")}
    assert outcomes == {f"u000{i}": "passed" for i in range(4)}
    started = events_since(since, "{{.Actor.Attributes.name}}", "--filter", "event=start", "--filter", "label=nullius.job=bm25-docker")
    assert sorted(n.rsplit("-", 2)[-2:][0] for n in started) == [f"u000{i}" for i in range(4)]
    assert all(n.endswith("-capability") for n in started)
    assert labelled(env, "bm25-docker") == {"containers": [], "networks": [], "volumes": []}


def test_without_docker_the_run_says_what_it_needs(world, tmp_path):
    env, _, _ = world
    result = run_cli(["run", "humaneval", "oracle", "--backend", "docker", "--limit", "1"], {**env, "DOCKER_HOST": f"unix://{tmp_path}/no.sock"})
    assert result.code == 2
    assert "needs docker" in result.stderr and "apt-get install docker.io" in result.stderr and "Traceback" not in result.stderr


def test_the_base_image_is_built_once(world):
    env, _, _ = world
    first = run_cli(["docker", "base"], env)
    again = run_cli(["docker", "base"], env)
    assert first.code == 0 and again.code == 0
    assert first.stdout.strip() == again.stdout.strip() and first.stdout.startswith("nullius/base:")
    assert "state=cached" in again.stderr
    labels = json.loads(docker("image", "inspect", first.stdout.strip()))[0]["Config"]["Labels"]
    assert labels["nullius.base"] == first.stdout.strip()


FIXTURES = Path(__file__).resolve().parent / "fixtures" / "catalogue"
LICENCE_KEY = "lic-key-for-the-tool-9f8e7d6c5b4a"
LICENCE_FILE = "LICENSED TO: the docker backend's tests\n"
MARKER = "the tool layer is here"


def licensed_player(request: FakeRequest) -> Reply:
    """A model that looks at its environment with the reference agent's run_command, then says the marker."""
    result = request.last_tool_result
    if result is None:
        command = ('cat /opt/nullius-env/marker.txt; cat "$TOOL_LICENSE_PATH"; echo "path=$TOOL_LICENSE_PATH"; '
                   'printf %s "$TOOL_LICENSE_KEY" | sha256sum; echo "server=$TOOL_LICENSE_SERVER"; '
                   'test -n "$TOOL_LICENSE_SERVER" && python3 -c "import os,socket; h,p=os.environ[\'TOOL_LICENSE_SERVER\'].rsplit(\':\',1); '
                   'print(socket.create_connection((h,int(p)),5).recv(64).decode())"')
        return Reply(tool_calls=[ToolCall(name="run_command", arguments={"command": command})])
    text = result if isinstance(result, str) else json.dumps(result)
    return Reply(text=MARKER if MARKER in text else "no marker")


def test_environments_are_layers_built_once_and_licences_reach_only_their_part(world, tmp_path):
    import hashlib
    import stat

    env, fake, _ = world
    env = {**env, "NULLIUS_CATALOGUE": str(FIXTURES), "SECRETS_DIR": str(tmp_path / "secrets")}
    jobs = Path(env["NULLIUS_JOBS_DIR"])

    def trials(job: str) -> dict[str, dict]:
        return {p.parent.name: json.loads(p.read_text()) for p in (jobs / job).glob("*/result.json")}

    # without its licences the licensed unit is not run, a setup error; the others run in their images
    result = run_cli(["run", "envbench", "oracle", "--backend", "docker", "--job-name", "env-oracle"], env)
    assert result.code == 0, result.output
    found = trials("env-oracle")
    assert {u: t["standard"]["outcome"] for u, t in found.items()} == {"u0000": "passed", "u0001": "passed", "u0002": "error"}
    assert found["u0002"]["exception_info"]["exception_type"] == "EnvironmentSecretMissingError"
    assert found["u0002"]["exception_info"]["exception_message"] == "not run: needs TOOL_LICENSE_KEY, TOOL_LICENSE_FILE, TOOL_LICENSE_SERVER, SCORER_TOKEN"
    assert found["u0002"]["standard"]["environment"] == "licensed"
    assert found["u0001"]["standard"]["environment"] == "tool" and found["u0001"]["standard"]["image"].startswith("nullius/env-envbench-tool:")
    assert found["u0000"]["standard"]["image"].startswith("nullius/base:")
    assert (jobs / "env-oracle" / ".work" / "env-tool.log").exists()

    # on the local backend an agent's unit in an environment that is not local_ok is refused, the base runs
    local = run_cli(["run", "envbench", "reference", *model_args(fake)[:-2], "--unsandboxed", "--job-name", "env-local"], env)
    assert local.code == 0, local.output
    refused = trials("env-local")["u0001"]["exception_info"]
    assert refused["exception_type"] == "EnvironmentSetupError" and "local_ok" in refused["exception_message"]

    # licences: set from stdin or a file, kept 0600 in a 0700 folder, an index without values
    assert run_cli(["secrets", "set", "envbench", "NOT_DECLARED"], env, input="x").code == 2
    assert run_cli(["secrets", "set", "envbench", "TOOL_LICENSE_KEY"], env, input=LICENCE_KEY + "\n").code == 0
    licence = tmp_path / "licence.lic"
    licence.write_text(LICENCE_FILE)
    assert run_cli(["secrets", "set", "envbench", "TOOL_LICENSE_FILE", "--file", str(licence)], env).code == 0
    assert run_cli(["secrets", "set", "envbench", "SCORER_TOKEN"], env, input="scorer-token-123456").code == 0
    # a licence server on this machine's loopback: the agent reaches it as host.docker.internal, through its door
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def answer() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.sendall(b"LICENCE SERVER SAYS OK\n")
            conn.close()

    threading.Thread(target=answer, daemon=True).start()
    server = f"127.0.0.1:{listener.getsockname()[1]}"
    assert run_cli(["secrets", "set", "envbench", "TOOL_LICENSE_SERVER"], env, input=server).code == 0
    folder = tmp_path / "secrets" / "envbench"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()} == {
        "TOOL_LICENSE_KEY": 0o600, "TOOL_LICENSE_FILE": 0o600, "TOOL_LICENSE_SERVER": 0o600, "SCORER_TOKEN": 0o600, "index.json": 0o600}
    listed = run_cli(["secrets", "list", "envbench", "--json"], env)
    assert LICENCE_KEY not in listed.stdout and all(row["set"] for row in json.loads(listed.stdout))
    assert LICENCE_KEY not in (folder / "index.json").read_text()

    # the agent's container gets the key by name and the file at its path; the driver its token
    fake.use(licensed_player)
    since = time.time() - 1
    result = run_cli(["run", "envbench", "reference", *model_args(fake), "--job-name", "env-agent"], env)
    assert result.code == 0, result.output
    # every container a unit's room made is named for the job (a licence server's variable once named the agent's container);
    # the checks' throwaway containers carry no unit label and docker's own names
    made = events_since(since, "{{.Actor.Attributes.name}}", "--filter", "label=nullius.job=env-agent", "--filter", "label=nullius.unit",
                        "--filter", "event=create")
    assert made and all(n.startswith("nullius-") for n in made), made
    assert any(n.endswith("u0002-agent") for n in made)
    found = trials("env-agent")
    assert found["u0001"]["standard"]["outcome"] == "passed" and found["u0002"]["standard"]["outcome"] == "passed"
    score = json.loads((jobs / "env-agent" / "u0002" / "verifier" / "score.json").read_text())
    assert score["detail"]["scorer_token_set"] is True
    seen = (jobs / "env-agent" / "u0002" / "agent" / "acp.jsonl").read_text()
    assert "LICENSED TO: the docker backend" in seen and "path=/opt/tool/license.lic" in seen
    assert hashlib.sha256(LICENCE_KEY.encode()).hexdigest() in seen
    assert f"server=host.docker.internal:{server.split(':')[1]}" in seen and "LICENCE SERVER SAYS OK" in seen
    listener.close()
    unlicensed = (jobs / "env-agent" / "u0001" / "agent" / "acp.jsonl").read_text()
    assert "LICENSED TO" not in unlicensed and hashlib.sha256(LICENCE_KEY.encode()).hexdigest() not in unlicensed
    leaked = subprocess.run(["grep", "-rlF", LICENCE_KEY, str(jobs / "env-agent")], capture_output=True, text=True)
    assert leaked.stdout == ""  # never in a record, a config or a log
    assert not Path("/dev/shm/nullius-env-agent").exists()  # the licence files went with their part
