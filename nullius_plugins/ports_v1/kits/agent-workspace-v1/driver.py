"""Driver of the agent.workspace/v1 kit: one JSON request per line on stdin, one JSON reply per line on stdout.

Two checks, each from a fresh secret seed drawn by `setup` (kept in this
process, keyed by (unit, dir), until `score`; never written anywhere):

- write-file: the prompt asks for the file notes/<word>.txt holding one token
  line, both derived from the seed. It passes when that path is a regular
  file (not a symlink) whose real path is inside the workspace and whose
  content, stripped, is the token. The answer message is not read.
- fix-bug: setup writes ledger.py, whose `total(prices)` adds a wrong
  handling charge, and README.md, which gives the right one; both numbers
  derive from the seed. The test stays out of the workspace: `score` writes
  it to a folder of its own and runs it with the machine's python3 under
  bubblewrap (no network, read-only system, the workspace read-only, memory,
  file-size and time limits), never in this process. It passes when
  ledger.py is a regular file in the workspace, still defines
  `def total(prices)` with that one parameter (read with ast, not imported),
  and the test gives the right total for every seeded case and exits 0.
  Without bubblewrap, score replies with an error: the agent's code is never
  run unsandboxed. When the backend sends a `sandbox` (docker), the test runs
  there instead: a throwaway, network-less container of the unit's image,
  with the image's own python3.

`oracle` writes the reference into dir: the file, or the fixed module.
Standard library only; logs go to stderr.
"""

import ast
import hashlib
import json
import os
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import kitlib  # noqa: E402 - the kits' shared module, beside them

DATASET = "checks"
CHECKS = ["write-file", "fix-bug"]


MODULE = "ledger.py"
FUNCTION = "total"
PARAMETERS = ["prices"]
READ_BYTES = 1024 * 1024  # the most of any file the scorer reads

WALL_SECONDS = 20  # the sandboxed test, start-up included
MEMORY_BYTES = 1024**3  # RLIMIT_AS in the sandbox
FILE_BYTES = 4 * 1024**2  # RLIMIT_FSIZE in the sandbox
TMP_BYTES = 16 * 1024**2  # the sandbox's /tmp and /dev/shm
MARK = "NULLIUS-CHECK "

WRITE_PROMPT = (
    "In the current folder, create the file notes/{word}.txt (make the notes folder if it is not there). "
    "The file must contain exactly this one line and nothing else:\n\n{token}\n"
)
FIX_PROMPT = (
    "The function in ledger.py, in the current folder, does not do what README.md says it must. "
    "Find the bug and fix it in ledger.py, changing as little as you can. "
    "Keep the function's name and its parameters as they are."
)
README = """# Order desk

`ledger.py` has one function, `total(prices)`. It takes a list of prices
(whole numbers) and must return their sum plus a fixed handling charge of
{charge}. An empty list costs the handling charge alone: `total([])` must
return {charge}.
"""
LEDGER = '''"""The order desk's totals."""


def total(prices):
    """Return the sum of prices plus the handling charge that README.md gives."""
    return sum(prices) + {charge}
'''

# The test, run in the sandbox: limits first, then the agent's module.
TEST = r'''import json, resource, sys
for limit, value in ((resource.RLIMIT_AS, {memory}), (resource.RLIMIT_FSIZE, {file}), (resource.RLIMIT_CORE, 0)):
    resource.setrlimit(limit, (value, value))
sys.path.insert(0, "/work")
CASES = {cases}
EXPECTED = {expected}
from ledger import total
rows = []
for prices, want in zip(CASES, EXPECTED):
    try:
        got = total(list(prices))
        ok = type(got) in (int, float) and got == want
        found = repr(got)[:200]
    except Exception as exc:
        ok, found = False, ("raised " + type(exc).__name__ + ": " + str(exc))[:200]
    rows.append({{"prices": prices, "expected": want, "found": found, "ok": ok}})
sys.stdout.write({mark!r} + json.dumps(rows) + "\n")
sys.stdout.flush()
for row in rows:
    assert row["ok"], "total(%r) should be %r, found %s" % (row["prices"], row["expected"], row["found"])
'''

_SETUPS = kitlib.Setups()


def log(*parts):
    print("[agent-workspace-v1]", *parts, file=sys.stderr, flush=True)


def digest_of(seed, label):
    return hashlib.sha256(f"{seed}/{label}".encode()).digest()



def numbers(seed, label, count, low, high):
    """`count` integers in [low, high], from the seed."""
    out, round_ = [], 0
    while len(out) < count:
        block = digest_of(seed, f"{label}/{round_}")
        for i in range(0, len(block) - 1, 2):
            out.append(low + int.from_bytes(block[i:i + 2], "big") % (high - low + 1))
        round_ += 1
    return out[:count]


def draw(unit):
    seed = secrets.token_hex(16)
    if unit == "write-file":
        word = kitlib.made_up_word(seed, "path")
        token = "NLS-" + digest_of(seed, "token").hex()[:12].upper()
        return {"seed": seed, "path": f"notes/{word}.txt", "word": word, "token": token}
    charge, wrong = numbers(seed, "charges", 2, 20, 99)
    if wrong == charge:
        wrong = 20 + (charge - 20 + 37) % 80
    values = numbers(seed, "prices", 9, 1, 500)
    cases = [[], [values[0]], values[1:4], values[4:9]]
    return {"seed": seed, "charge": charge, "wrong": wrong, "cases": cases}


def check_request(request):
    unit, directory = kitlib.check_request(request, CHECKS, DATASET)
    if not os.path.isdir(directory):
        raise ValueError(f"the workspace {directory} is not a folder")
    return unit, directory


def state_of(request):
    key = check_request(request)
    return key, _SETUPS.get(key)


def write_text(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def setup(request):
    key = check_request(request)
    unit, directory = key
    state = draw(unit)
    _SETUPS.put(key, state)
    log(f"setup {unit}: a fresh seed drawn")
    if unit == "write-file":
        return {"prompt": WRITE_PROMPT.format(word=state["word"], token=state["token"])}
    write_text(os.path.join(directory, "README.md"), README.format(charge=state["charge"]))
    write_text(os.path.join(directory, MODULE), LEDGER.format(charge=state["wrong"]))
    return {"prompt": FIX_PROMPT}


def oracle(request):
    (unit, directory), state = state_of(request)
    if unit == "write-file":
        write_text(os.path.join(directory, state["path"]), state["token"] + "\n")
        return {"answer": f"Created {state['path']}."}
    write_text(os.path.join(directory, MODULE), LEDGER.format(charge=state["charge"]))
    return {"answer": "Fixed the handling charge in ledger.py."}


def regular_file_inside(directory, relative):
    """(the file's real path, None) when it is a regular file, not a symlink, inside directory; else (None, why)."""
    path = os.path.join(directory, relative)
    if not os.path.lexists(path):
        return None, f"{relative} does not exist"
    real = os.path.realpath(path)
    root = os.path.realpath(directory)
    if os.path.commonpath([root, real]) != root:
        return None, f"{relative} resolves to {real}, outside the workspace"
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        return None, f"{relative} is a symlink, not a regular file"
    if not stat.S_ISREG(mode):
        return None, f"{relative} is not a regular file"
    return real, None


def read_limited(path):
    with open(path, "rb") as handle:
        return handle.read(READ_BYTES).decode("utf-8", "replace")


def score_write_file(directory, state):
    detail = {"path": state["path"], "expected": state["token"]}
    real, why = regular_file_inside(directory, state["path"])
    if why:
        detail["found"] = why
        return False, detail
    content = read_limited(real).strip()
    detail["found"] = content[:200]
    return content == state["token"], detail


def signature_problem(source):
    """None when the module's top-level `def total(prices)` is as setup wrote it; else what differs."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"{MODULE} does not parse: {type(exc).__name__}: {exc}"[:300]
    found = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == FUNCTION]
    if not found:
        return f"{MODULE} no longer defines {FUNCTION} at its top level"
    node = found[-1]
    if isinstance(node, ast.AsyncFunctionDef):
        return f"{FUNCTION} became async"
    args = node.args
    names = [a.arg for a in args.args]
    if args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg or args.defaults or names != PARAMETERS:
        return f"{FUNCTION}'s parameters changed: expected ({', '.join(PARAMETERS)}), found ({ast.unparse(args)})"
    return None


def sandbox_roots():
    """Folders the machine's Python needs, read-only: its prefixes, when outside /usr."""
    wanted = {
        sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
        os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))),
    }
    roots = []
    for path in sorted(os.path.realpath(p) for p in wanted):
        if path == "/" or path == "/usr" or path.startswith("/usr/"):
            continue
        if not any(path == r or path.startswith(r + "/") for r in roots):
            roots.append(path)
    return roots


def bwrap_argv(bwrap, workspace, check):
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
    for root in sandbox_roots():  # after /tmp, so an interpreter under /tmp shows through
        argv += ["--ro-bind", root, root]
    argv += ["--ro-bind", workspace, "/work", "--ro-bind", check, "/check", "--remount-ro", "/",
             "--chdir", "/check", sys.executable, "-I", "-B", "/check/test_ledger.py"]
    return argv


def container_argv(sandbox, workspace, check):
    """The backend's throwaway container (the request's `sandbox`): the image's own python3, the workspace read-only."""
    return [*sandbox["argv"], "--volume", f"{workspace}:/work:ro", "--volume", f"{check}:/check:ro",
            "--workdir", "/check", sandbox["image"],
            # the container's own limit: killing the docker client alone would leave it running
            "timeout", "-s", "KILL", str(WALL_SECONDS), "python3", "-I", "-B", "/check/test_ledger.py"]


def run_test(directory, state, sandbox=None):
    """The seeded test against the workspace, in a sandbox: (passed, what it found)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None and sandbox is None:
        raise RuntimeError("bubblewrap (bwrap) is not on PATH: install it (apt-get install bubblewrap); "
                           "the agent's code is never run unsandboxed")
    expected = [sum(case) + state["charge"] for case in state["cases"]]
    test = TEST.format(memory=MEMORY_BYTES, file=FILE_BYTES, cases=json.dumps(state["cases"]),
                       expected=json.dumps(expected), mark=MARK)
    with tempfile.TemporaryDirectory(prefix="nullius-kit-workspace-") as scratch:
        check = os.path.join(scratch, "check")
        os.mkdir(check)
        os.chmod(scratch, 0o755)
        os.chmod(check, 0o755)
        write_text(os.path.join(check, "test_ledger.py"), test)
        out_path, err_path = os.path.join(scratch, "out"), os.path.join(scratch, "err")
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            try:
                argv = (container_argv(sandbox, os.path.realpath(directory), check) if sandbox
                        else bwrap_argv(bwrap, os.path.realpath(directory), check))
                proc = subprocess.run(argv, stdin=subprocess.DEVNULL,
                                      stdout=out, stderr=err, timeout=WALL_SECONDS, cwd=scratch)
                code = proc.returncode
            except subprocess.TimeoutExpired:
                code = None
        stdout = read_limited(out_path)
        stderr = read_limited(err_path).strip()
    if stderr:
        log("test stderr:", stderr[-2000:])
    rows = None
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARK):
            try:
                rows = json.loads(line[len(MARK):])
            except ValueError:
                pass
            break
    found = {"exit": code if code is not None else f"killed after {WALL_SECONDS} s"}
    if rows is not None:
        found["cases"] = rows
    if code != 0 and stderr:
        found["stderr"] = stderr[-1500:]
    ok = (code == 0 and isinstance(rows, list) and len(rows) == len(expected)
          and all(isinstance(r, dict) and r.get("ok") is True and r.get("expected") == want for r, want in zip(rows, expected)))
    return ok, found


def score_fix_bug(directory, state, sandbox=None):
    detail = {"expected": f"{FUNCTION}(prices) returns sum(prices) + {state['charge']}, its signature unchanged",
              "cases": len(state["cases"])}
    real, why = regular_file_inside(directory, MODULE)
    if why:
        detail["found"] = why
        return False, detail
    problem = signature_problem(read_limited(real))
    if problem:
        detail["found"] = problem
        return False, detail
    passed, found = run_test(directory, state, sandbox)
    detail["found"] = found
    return passed, detail


def score(request):
    (unit, directory), state = state_of(request)
    if not isinstance(request.get("answer", ""), str):
        raise ValueError("expected answer, the agent's last message, as a string")
    if unit == "write-file":
        passed, detail = score_write_file(directory, state)
    else:
        passed, detail = score_fix_bug(directory, state, request.get("sandbox"))
    return {"reward": 1.0 if passed else 0.0, "passed": passed, "detail": detail}


def main():
    kitlib.serve({"setup": setup, "oracle": oracle, "score": score}, CHECKS, DATASET)


if __name__ == "__main__":
    main()
