"""Whether bubblewrap can make this backend's sandbox here, and when not, exactly what is missing.

A run on the bwrap backend is refused before its first unit when bwrap is
not on PATH or when the kernel forbids a namespace the sandbox needs (user
namespaces most often: `kernel.unprivileged_userns_clone=0`, AppArmor's
`apparmor_restrict_unprivileged_userns=1`, `user.max_user_namespaces=0`, or a
container that allows none). Each namespace is then tried alone, so the
refusal names the one the kernel refuses, with bwrap's own words.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from nullius_plugins.bwrap_backend import sandbox

# The namespaces the sandbox makes, each as bwrap is asked for it alone.
EACH = (("user", ["--unshare-user"]), ("pid", ["--unshare-pid"]), ("network", ["--unshare-net"]), ("IPC", ["--unshare-ipc"]),
        ("UTS", ["--unshare-uts"]), ("further user namespaces refused inside", ["--unshare-user", "--disable-userns"]))
SETTINGS = (("/proc/sys/kernel/unprivileged_userns_clone", "0", "kernel.unprivileged_userns_clone is 0"),
            ("/proc/sys/user/max_user_namespaces", "0", "user.max_user_namespaces is 0"),
            ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1", "kernel.apparmor_restrict_unprivileged_userns is 1"))
INSTALL = "install it with: apt-get install -y bubblewrap"


def _try(bwrap: str, flags: list[str]) -> str | None:
    """None when bwrap makes a sandbox with these flags and runs `true` in it; else what bwrap said."""
    argv = [bwrap, *flags, "--die-with-parent", "--ro-bind", "/", "/", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=sandbox.probe_env())
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if done.returncode == 0 else (done.stderr.strip().removeprefix("bwrap: ") or f"exit status {done.returncode}")


def missing() -> str | None:
    """Why this machine cannot run the sandbox, in one sentence; None when it can."""
    bwrap = sandbox.bwrap_program()
    if bwrap is None:
        return f"the bwrap backend needs bubblewrap (bwrap) on PATH; {INSTALL}"
    whole = _try(bwrap, [*sandbox.NAMESPACES, *sandbox.HARDENED])
    if whole is None:
        return None
    refused = [(name, said) for name, flags in EACH if (said := _try(bwrap, flags)) is not None]
    settings = [why for path, value, why in SETTINGS if _read(path) == value]
    if refused:
        names = ", ".join(name for name, _ in refused)
        return (f"the bwrap backend needs namespaces this machine's kernel refuses: {names} (bwrap: {refused[0][1]})"
                + (f"; {'; '.join(settings)}" if settings else ""))
    return f"bwrap cannot make the sandbox here: {whole}"


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None
