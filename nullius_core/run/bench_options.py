"""A benchmark's own options for one run: which apply, their values, and what each chosen value needs of the machine.

An option applies to a run when its `datasets` hold the run's dataset, its
`setups` hold the run's setup (`original` or `model` for No agent · Original,
`yours` for a run of an agent, a capability or a control; an option without
`setups` is `yours` alone) and, for each option its `when` names, that
option applies and holds one of the values listed. One that does not apply is
neither set for the driver nor recorded; a value given for it is refused,
saying why (the rules are definitions/setups.py's, shared with the app's
builder). A chosen value's `needs.host` (programs on PATH, a CUDA GPU) is
checked before any unit, whatever the backend; its `needs.embeddings` gets
the run's own relay (engine.py).
"""

from __future__ import annotations

import shutil
import subprocess

from nullius_core.contracts.refused import RunRefused
from nullius_core.definitions import ResolvedBenchmark
from nullius_core.definitions.common import Host, ValueNeeds
from nullius_core.definitions.setups import SETUPS, YOURS, applying  # noqa: F401  (the rules the app's builder shares)


def refuse_given(given: dict[str, str], why: dict[str, str]) -> None:
    """A value given (--bench-option) for an option that does not apply is refused before any unit."""
    for name in given:
        if name in why:
            raise RunRefused(why[name])


def chosen_needs(bench: ResolvedBenchmark, options: dict[str, str]) -> list[tuple[str, str, ValueNeeds]]:
    """What each option value the run chose needs: (option, value, needs)."""
    out = []
    for name, value in options.items():
        option = (bench.standard.options or {}).get(name)
        needed = (option.needs or {}).get(value) if option is not None else None
        if needed is not None:
            out.append((name, value, needed))
    return out


def check_hosts(bench: ResolvedBenchmark, options: dict[str, str]) -> None:
    """The driver's host, then each chosen value's: refused, saying the programs, the install commands or the hardware."""
    if bench.driver is not None and bench.driver.host is not None:
        check_host(bench.driver.host, bench.ref)
    for name, value, needed in chosen_needs(bench, options):
        if needed.host is not None:
            check_host(needed.host, f"{bench.ref} with {name}={value}")


def check_host(host: Host, who: str) -> None:
    missing = [program for program in host.check if shutil.which(program) is None]
    if not missing and host.probe:
        # Present is not working: bwrap without user namespaces, say.
        try:
            done = subprocess.run(host.probe, capture_output=True, text=True, timeout=30)
            failure = None if done.returncode == 0 else (done.stderr.strip() or f"exit {done.returncode}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            failure = str(exc)
        if failure:
            raise RunRefused(f"{who} needs {' '.join(host.probe)} to work on this machine ({host.summary}); it failed: {failure}")
    if missing:
        how = []
        if host.install and host.install.apt:
            how.append("apt-get install -y " + " ".join(host.install.apt))
        if host.install and host.install.npm:
            how.append("npm install -g " + " ".join(host.install.npm))
        hint = f"; install with: {' && '.join(how)}" if how else ""
        raise RunRefused(f"{who} needs {', '.join(missing)} on PATH ({host.summary}){hint}")
    if host.gpu == "cuda":
        found = _cuda_gpus()
        if not found:
            raise RunRefused(f"{who} needs a CUDA GPU ({host.summary}); nvidia-smi finds none here"
                             f"{'' if shutil.which('nvidia-smi') else ' (nvidia-smi is not on PATH)'}: hardware, which no command installs")


def _cuda_gpus() -> list[str]:
    """The GPUs `nvidia-smi -L` lists (`GPU 0: ...`), none when it is missing or fails."""
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line for line in done.stdout.splitlines() if line.startswith("GPU ")] if done.returncode == 0 else []


def embeddings_model(bench: ResolvedBenchmark, options: dict[str, str]) -> str | None:
    """The embeddings model the chosen values need through the run's own relay; refused when they name two."""
    models = {needed.embeddings: f"{name}={value}" for name, value, needed in chosen_needs(bench, options) if needed.embeddings}
    if len(models) > 1:
        raise RunRefused(f"{bench.ref}: the options chosen need two embeddings models ({', '.join(f'{m} for {o}' for m, o in models.items())}); "
                         "the run's own relay sends one")
    return next(iter(models), None)
