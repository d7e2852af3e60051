"""agg's pairs and compositions at once ([experiment] parallel): overlap shown by rollouts that wait for each other,
the same decisions one at a time, and a budget run out under concurrency that verifies and resumes."""

import json
import signal
import subprocess
import sys
import time

from kernel_world import GOOD, NANORSI, WEAK, events, make_workspace, of, run

TASK = "invoice-totals"

# A command runner. Each rollout marks its start in signals/<label>; waits.json tells a label to wait (120 s at most)
# for an event: "started:<label>" (another rollout began) or "ledger:<event>" (the ledger recorded one). Without
# waits.json nothing waits. The trajectory says what the rollout saw; one that gave up is a failed rollout.
RUNNER = '''import json, os, time
from pathlib import Path
req = json.loads(Path(os.environ["NANORSI_REQUEST"]).read_text())
label = req["label"]
Path("signals").mkdir(exist_ok=True)
Path("signals", label).write_text("started")
waits = json.loads(Path("waits.json").read_text()) if Path("waits.json").exists() else {}
want = waits.get(label) or waits.get(label[:3] + "*")

def seen(want):
    kind, _, what = want.partition(":")
    if kind == "started":
        return Path("signals", what).exists()
    return any(json.loads(line)["event"] == what for line in Path(".nanorsi/ledger.jsonl").read_text().splitlines())

trajectory, ok = "# " + label + "\\n", True
if want:
    deadline = time.monotonic() + 120
    while not seen(want) and time.monotonic() < deadline:
        time.sleep(0.02)
    ok = seen(want)
    trajectory += ("saw " if ok else "gave up waiting for ") + want + "\\n"
name = req["task"]["deliverables"][0]
text = (GOOD if "CHECKLIST" in req["always_on"] else WEAK)[name]
Path(os.environ["NANORSI_RESULT"]).write_text(json.dumps({
    "ok": ok, "delivered": True, "trajectory": trajectory, "deliverables": {name: text},
    "usage": {"calls": 1, "input_tokens": 1, "output_tokens": 1}, "error": None if ok else trajectory}))
'''


def _command_workspace(ws, waits, *extra):
    (ws / "runner.py").write_text(f"GOOD = {GOOD!r}\nWEAK = {WEAK!r}\n" + RUNNER)
    if waits:
        (ws / "waits.json").write_text(json.dumps(waits))
    run(["configure", "runner.kind=command", f'runner.command=["{sys.executable}", "runner.py"]',
         f'tasks.select=["{TASK}"]', *extra], ws)


def _trajectory(ws, label):
    return (ws / ".nanorsi" / "rollouts" / TASK / label / "trajectory.md").read_text()


def _decisions(ws):
    return [(e["label"], e["decision"], e["edits"]) for e in sorted(of(ws, "compose"), key=lambda e: e["pair"])]


def test_agg_pairs_and_compositions_run_at_once_and_decide_as_one_at_a_time(tmp_path, fake_model, roles):
    (tmp_path / "at-once").mkdir()
    (tmp_path / "one-by-one").mkdir()
    ws = make_workspace(tmp_path / "at-once", fake_model, via_cli=False)
    # inv1 can only finish if inv2 starts while it runs; agg1 likewise needs agg2.
    _command_workspace(ws, {"inv1": "started:inv2", "agg1": "started:agg2"}, "experiment.k=2")
    run(["evolve"], ws)
    assert "saw started:inv2" in _trajectory(ws, "inv1") and "saw started:agg2" in _trajectory(ws, "agg1")
    assert all(e["ok"] for e in of(ws, "rollout"))
    assert of(ws, "run_started")[0]["parallel"] == 2  # the default: k
    # The compositions start only after every pair is contrasted.
    kinds = [(e["event"], e.get("label") or e.get("candidate")) for e in events(ws)]
    assert max(kinds.index(("contrast", c)) for c in ("inv1", "dom1", "inv2", "dom2")) < min(
        kinds.index(("compose", c)) for c in ("agg1", "agg2"))
    # Pairs at once are independent: pair 2's proposals never see pair 1's rejections.
    proposals = [r.body["messages"][1]["content"] for r in fake_model.requests
                 if r.body["messages"][0]["content"].startswith("nanorsi:propose")]
    assert len(proposals) == 4 and all("RECENTLY REJECTED EDITS:\n(none)" in p for p in proposals
                                       if p.startswith("nanorsi:propose INV"))

    serial = make_workspace(tmp_path / "one-by-one", fake_model, via_cli=False)
    _command_workspace(serial, None, "experiment.k=2", "experiment.parallel=1")  # told not to wait: it would not end
    run(["evolve"], serial)
    assert [e["label"] for e in of(serial, "rollout")] == ["base1", "inv1", "dom1", "inv2", "dom2", "agg1", "agg2"]
    # The same decisions, read in pair order by compose and by the report, whichever thread finished first.
    assert _decisions(ws) == _decisions(serial) == [("agg1", "adopt", ["inv1"]), ("agg2", "adopt", ["inv2"])]
    for w in (ws, serial):
        assert run(["verify"], w).stdout.startswith(f"ledger ok: {len(events(w))} events")
    reports = [run(["report"], w).stdout for w in (ws, serial)]
    views = [json.loads(run(["report", "--json"], w).stdout)["tasks"][0] for w in (ws, serial)]
    assert [v["decisions"] for v in views][0] == [v["decisions"] for v in views][1]
    assert [c["candidate"] for c in views[0]["contrasts"]] == ["inv1", "dom1", "inv2", "dom2"]
    assert [p["label"] for p in views[0]["proposals"]] == ["inv1", "dom1", "inv2", "dom2"]
    lines = [[x for x in r.splitlines() if x.startswith(("  proposal", "  contrast", "  decision"))] for r in reports]
    assert lines[0] == lines[1] and "  decision agg1: adopt inv1" in lines[0]


def test_budget_run_out_under_concurrency_verifies_and_evolve_resumes(workspace):
    ws = workspace
    # base1 takes one unit, inv1 and inv2 race for the last: the winner's rollout waits until the loser's refusal
    # is in the ledger, so it is in flight when the budget runs out, and must still finish and be recorded.
    _command_workspace(ws, {"inv*": "ledger:budget_exhausted"}, "experiment.k=3", "experiment.parallel=2",
                       "budget.max_rollouts=2")
    stopped = run(["evolve"], ws, code=3)
    assert "budget exhausted: 2 of [budget] max_rollouts = 2 spent" in stopped.stderr
    assert "Traceback" not in stopped.stderr
    [ex] = of(ws, "budget_exhausted")
    assert ex["what"] == "rollout" and ex["label"] in ("inv1", "inv2")
    [won] = [e for e in of(ws, "rollout") if e["label"] != "base1"]
    assert won["label"] in ("inv1", "inv2") and won["label"] != ex["label"]
    assert won["ok"] and won["seq"] > ex["seq"]  # finished after the refusal, and ledgered
    assert "saw ledger:budget_exhausted" in _trajectory(ws, won["label"])
    # Every unit charged was spent and recorded; nothing was charged after the refusal.
    assert sorted(e["label"] for e in of(ws, "charge", what="rollout")) == ["base1", won["label"]]
    assert all(e["seq"] < ex["seq"] for e in of(ws, "charge"))
    [halt] = of(ws, "stage_stopped")
    assert (halt["stage"], halt["finished"], halt["stopped"], halt["not_started"]) == ("pairs", [], [1, 2], [3])
    assert not of(ws, "compose") and not of(ws, "task_done")
    run(["verify"], ws)
    assert "exhausted 1 time(s)" in run(["report"], ws).stdout

    (ws / "waits.json").unlink()
    toml = ws / "nanorsi.toml"
    toml.write_text(toml.read_text().replace("max_rollouts = 2", "max_rollouts = 100"))
    run(["evolve"], ws)
    [done] = of(ws, "task_done")
    assert done["attempt"] == 2 and done["chosen"] in ("agg1", "agg2", "agg3")
    again = [e["label"] for e in of(ws, "rollout") if e["seq"] > of(ws, "task_started")[-1]["seq"]]
    assert sorted(again) == sorted(["base1", "inv1", "dom1", "inv2", "dom2", "inv3", "dom3", "agg1", "agg2", "agg3"])
    assert run(["verify"], ws).stdout.startswith(f"ledger ok: {len(events(ws))} events")
    run(["freeze"], ws)
    assert "attempts 2" in run(["report"], ws).stdout


def _wait_for(check, what):
    deadline = time.monotonic() + 120
    while not check():
        assert time.monotonic() < deadline, f"waited 120 s for {what}"
        time.sleep(0.02)


def test_an_interrupt_lets_the_rollouts_in_flight_finish_and_starts_nothing_more(workspace):
    ws = workspace
    _command_workspace(ws, {"inv*": "started:go"}, "experiment.k=2")  # inv1 and inv2 hold until signals/go
    proc = subprocess.Popen([NANORSI, "evolve"], cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: (ws / "signals" / "inv1").exists() and (ws / "signals" / "inv2").exists(), "inv1 and inv2")
        proc.send_signal(signal.SIGINT)
        assert proc.stderr.readline() == "nanorsi: interrupted; waiting for the calls in flight to finish\n"
        (ws / "signals" / "go").write_text("go")
        _, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 130 and "the ledger holds every step done" in err and "Traceback" not in err
    last = events(ws)[-1]
    assert {e["label"] for e in of(ws, "rollout")} == {"base1", "inv1", "inv2"}  # both finished, and were ledgered
    assert all(e["seq"] < min(r["seq"] for r in of(ws, "rollout", label="inv1") + of(ws, "rollout", label="inv2"))
               for e in of(ws, "charge"))  # no call started after the interrupt: no contrast, no dom
    assert last["event"] == "rollout" and not of(ws, "contrast") and not of(ws, "budget_exhausted")
    run(["verify"], ws)
    (ws / "waits.json").unlink()
    run(["evolve"], ws)
    assert of(ws, "task_done")[0]["attempt"] == 2
    run(["verify"], ws)
