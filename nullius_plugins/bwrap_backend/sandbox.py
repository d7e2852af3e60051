"""A bubblewrap sandbox's command line: its namespaces, what it sees of this machine, its environment.

    namespaces   user (further ones refused), pid, IPC, UTS, network (a loopback alone), cgroup, mount
    sees         the system's own folders (/usr, /bin, /lib...) and a few files of /etc, read-only;
                 the folders the launch reads (an install, a definition folder, their interpreters), read-only;
                 the folders it writes (a unit's workspace and HOME), at their paths;
                 a fresh /proc of its own pid namespace, a minimal /dev, an empty /tmp of its own
    never        this machine's /proc, /home, /root, /run, other units' folders, its sockets, its environment
    process      --die-with-parent, --new-session, no capabilities, no new privileges (bwrap sets no_new_privs)
    environment  exactly the launch's: bwrap is started with it (never on its command line, which any user may read
                 with ps), and passes it on without the run's marker

Everything else of the root is bwrap's own empty, read-only tmpfs.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path

from nullius_core.processes import MARKER
from nullius_core.sandbox import mounts

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Of /etc, only what programs need to start and name things: no machine's secrets, configuration or sockets.
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "passwd", "group", "nsswitch.conf", "localtime",
       "ssl", "ca-certificates", "mime.types", "os-release", "debian_version", "protocols", "services", "gitconfig")
NAMESPACES = ["--unshare-all", "--unshare-user", "--disable-userns", "--hostname", "nullius"]
HARDENED = ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--unsetenv", MARKER]
TMP_BYTES = 1 << 30  # the sandbox's /tmp: memory, used only as it is written


def bwrap_program() -> str | None:
    return shutil.which("bwrap")


def python_home() -> tuple[Path, Path]:
    """The interpreter that runs the door and the MCP bridges, and its prefix (to show read-only).

    The system's python3 where there is one (it is in /usr, shown already,
    and starts faster than most others); else the interpreter Nullius runs on
    (its base, not a virtual environment's link). Both scripts need only
    the standard library, of any Python 3.
    """
    system = Path("/usr/bin/python3")
    if os.access(system, os.X_OK):
        return system, Path("/usr")
    base = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    return base, base.parent.parent


def _system() -> list[str]:
    out: list[str] = []
    for top in SYSTEM:
        if os.path.islink(top):
            out += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            out += ["--ro-bind", top, top]
    for name in ETC:
        if os.path.exists(f"/etc/{name}"):
            out += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    return out


def visible_path(path: str, reads: Iterable[Path]) -> str:
    """PATH inside: the launch's entries the sandbox shows (in a folder it reads), then the system's."""
    shown = [str(p) for p in reads]
    kept = [p for p in path.split(os.pathsep) if p and any(p == s or p.startswith(s + "/") for s in shown)]
    return os.pathsep.join([*kept, SYSTEM_PATH])


def argv(
    bwrap: str,
    command: list[str],
    *,
    cwd: Path,
    writes: Iterable[Path],
    reads: Iterable[Path],
    files: Iterable[tuple[Path, str]] = (),
    options: Iterable[str] = (),
) -> list[str]:
    """bwrap's command line for `command`: `writes` bound at their paths, `reads` (and their interpreters) read-only.

    `files` are (a file or folder here, its path inside), read-only; `options` are bwrap's
    own further ones (the room's --info-fd and --block-fd). There is no way to this
    machine's network: the sandbox's namespace has a loopback alone.
    """
    shown = mounts.outermost(reads)
    out = [bwrap, *NAMESPACES, *HARDENED, *_system(),
           "--proc", "/proc", "--dev", "/dev", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    for folder in mounts.outermost([*shown, *mounts.interpreters_of(shown)]):
        out += ["--ro-bind", str(folder), str(folder)]
    for folder in mounts.outermost(writes):
        out += ["--bind", str(folder), str(folder)]
    for here, inside in files:
        out += ["--ro-bind", str(here), inside]
    out += ["--remount-ro", "/", "--chdir", str(cwd.resolve()), *options]
    return [*out, "--", *command]


def probe_env() -> dict[str, str]:
    """The environment of a bwrap that only checks the kernel: a PATH, nothing of this process's."""
    return {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8"}
