"""The nanorsi command: new, configure, evolve, freeze, judge, report, verify, doctor.

Exit status: 0 done, 1 a check failed (verify, doctor), 2 refused or bad input, 3 stopped by the budget.
"""

import argparse
import json
import shutil
import sys
import tomllib
from pathlib import Path

from . import SPEC, NanoError, __version__, config as cf, harness as hz, judge as jd, recursion, report as rp, tasks as tk
from . import templates
from .ledger import Ledger
from .model import Client


WRITERS = ("configure", "evolve", "freeze", "judge")


def _ledger(ws: Path) -> Ledger:
    return Ledger(ws / ".nanorsi" / "ledger.jsonl")


def cmd_new(args) -> int:
    templates.new(Path(args.dir))
    print(f"{args.dir}: starter written (harness/, tasks.json, judge/, {cf.CONFIG_NAME}); "
          f"next: nanorsi configure model.base_url=... model.name=... model.api_key_file=...")
    return 0


def cmd_configure(args) -> int:
    ws, path = args.workspace, args.workspace / cf.CONFIG_NAME
    if _ledger(ws).started:
        raise NanoError("configure is refused once the ledger has started (the run is pinned to its configuration)")
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise NanoError(f"{path}: not valid TOML: {exc}") from None
    for item in args.assignments:
        table, field, value = cf.parse_assignment(item)
        if table not in cf.SCHEMA:
            raise NanoError(f"{item!r}: unknown table [{table}]: expected one of {', '.join(cf.SCHEMA)}")
        raw.setdefault(table, {})[field] = value
    cfg = cf.validate(raw, path)
    path.write_text(_leading_comments(text) + cf.dumps(raw), encoding="utf-8")
    print(f"{path}: valid; mode {cfg['experiment']['mode']}, k {cfg['experiment']['k']}, model "
          f"{cfg['model']['name']} at {cfg['model']['base_url']}, runner {cfg['runner']['kind']}")
    return 0


def _leading_comments(text: str) -> str:
    """The comment lines a config starts with: configure keeps them when it rewrites the file."""
    out = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        out.append(line + "\n")
    return "".join(out)


def _client(ws: Path, cfg: dict) -> Client:
    return Client(cfg["model"], cf.key_path(cfg, ws))


def _print_done(task: str, chosen: str) -> None:
    print(f"task {task}: done, chosen {chosen}", flush=True)


def cmd_evolve(args) -> int:
    ws = args.workspace
    cfg, ledger = cf.load(ws), _ledger(ws)
    ledger.verify()
    stopped = recursion.evolve(ws, cfg, ledger, _client(ws, cfg), _print_done)
    if stopped:
        print(f"evolve stopped: {stopped}; raise [budget] in {cf.CONFIG_NAME} and run evolve again to resume",
              file=sys.stderr)
        return 3
    print(f"evolve finished: {len(ledger.done_tasks())} task(s) done; next: nanorsi freeze")
    return 0


def cmd_freeze(args) -> int:
    ws = args.workspace
    ledger = _ledger(ws)
    ledger.verify()
    started = ledger.of("run_started")
    if not started:
        raise NanoError("freeze is refused: no run has started (run `nanorsi evolve` first)")
    if ledger.frozen() is not None:
        raise NanoError("the run is already frozen")
    done = ledger.done_tasks()
    missing = [t for t in started[0]["tasks"] if t not in done]
    if missing and not args.partial:
        raise NanoError(f"freeze is refused: task(s) {', '.join(missing)} not done; run evolve, or freeze --partial")
    ledger.append("freeze", choices=done, missing=missing)
    print("frozen: " + ", ".join(f"{t}={label}" for t, label in done.items()))
    return 0


def cmd_judge(args) -> int:
    ws = args.workspace
    cfg, ledger = cf.load(ws, need_key=False), _ledger(ws)
    ledger.verify()
    for e in jd.judge(ws, cfg, ledger):
        shown = f"{e['score']:.3f} ({e['n_passed']}/{e['n_criteria']})" if e["graded"] else f"ungraded: {e['error']}"
        print(f"task {e['task']} {e['label']}: {shown}")
    return 0


def cmd_report(args) -> int:
    ledger = _ledger(args.workspace)
    verified = ledger.verify()
    rep = rp.build(ledger)
    print(json.dumps(rep, indent=2) if args.json else rp.render(rep, verified))
    return 0


def cmd_verify(args) -> int:
    ledger = _ledger(args.workspace)
    if not ledger.started:
        print("no ledger yet: nothing to verify")
        return 0
    try:
        count, head = ledger.verify()
    except NanoError as exc:
        print(f"nanorsi: {exc}", file=sys.stderr)
        return 1
    print(f"ledger ok: {count} events, head {head}")
    return 0


def _checks(ws: Path):
    cfg = cf.load(ws)
    yield "config", f"{cf.CONFIG_NAME} valid"
    key = cf.key_path(cfg, ws)
    yield "api key file", (f"{key} readable" if key.read_text(encoding="utf-8").strip() else f"FAIL {key} is empty")
    yield "harness", f"{len(hz.load(ws / cfg['harness']['root']))} component(s) valid"
    yield "tasks", f"{len(tk.load(ws / cfg['tasks']['manifest']))} task(s) valid"
    for what, argv in (("judge", cfg["judge"]["command"]), ("runner", _runner_argv(cfg))):
        if argv:
            found = shutil.which(argv[0]) or (ws / argv[0]).exists()
            yield f"{what} command", f"{argv[0]} found" if found else f"FAIL {argv[0]} not found"
    ledger = _ledger(ws)
    yield "ledger", f"{ledger.verify()[0]} events verified" if ledger.started else "not started"


def _runner_argv(cfg: dict) -> list:
    kind = cfg["runner"]["kind"]
    return [cfg["runner"]["nullius"]] if kind == "nullius" else cfg["runner"]["command"] if kind == "command" else []


def cmd_doctor(args) -> int:
    print(f"nanorsi {__version__} (spec v{SPEC}) on Python {sys.version.split()[0]}")
    failed = sys.version_info < (3, 11)
    try:
        for name, said in _checks(args.workspace):
            print(f"{name}: {said}")
            failed |= said.startswith("FAIL")
    except (NanoError, OSError) as exc:
        print(f"FAIL {exc}")
        failed = True
    return 1 if failed else 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nanorsi", description="Recursive harness improvement, auditable from its ledger.")
    p.add_argument("--version", action="version", version=f"nanorsi {__version__}")
    p.add_argument("-C", "--workspace", type=Path, default=Path("."), help="the workspace folder (default: .)")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("new", help="write the starter workspace").add_argument("dir")
    sub.add_parser("configure", help="set TABLE.FIELD=VALUE in nanorsi.toml and validate it").add_argument(
        "assignments", nargs="*")
    sub.add_parser("evolve", help="run (or resume) the recursion over the tasks")
    sub.add_parser("freeze", help="pin each task's chosen final").add_argument(
        "--partial", action="store_true", help="freeze even if some tasks are not done")
    sub.add_parser("judge", help="score base1 and the chosen final of each task (after freeze)")
    sub.add_parser("report", help="per-task decisions, contrasts, scores and budget").add_argument(
        "--json", action="store_true")
    sub.add_parser("verify", help="check the ledger's hash chain")
    sub.add_parser("doctor", help="check the workspace, the key file and the commands")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    handler = globals()[f"cmd_{args.command}"]
    try:
        if args.command not in WRITERS:
            return handler(args)
        if not (args.workspace / cf.CONFIG_NAME).exists():
            raise NanoError(f"{args.workspace / cf.CONFIG_NAME}: no such file (run `nanorsi new DIR`, or pass -C DIR)")
        with _ledger(args.workspace).lock():
            return handler(args)
    except NanoError as exc:
        print(f"nanorsi: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nanorsi: interrupted; the ledger holds every step done (evolve resumes)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
