"""The command runner (request.json -> result.json, runner.log) and the nullius kind, as the contract says."""

import json
import stat
import sys

from kernel_world import GOOD, KEY, WEAK, of, run

RUNNER = '''import json, os, sys
from pathlib import Path
req = json.loads(Path(os.environ["NANORSI_REQUEST"]).read_text())
label, out = req["label"], Path(req["output_dir"])
(out / "env.json").write_text(json.dumps(dict(os.environ)))
(out / "argv.json").write_text(json.dumps(sys.argv))
print("runner for", label, "harness files:", sorted(p.name for p in Path(req["harness_dir"]).rglob("*.md")))
if label == "inv1":
    sys.exit(1)
result = Path(os.environ["NANORSI_RESULT"])
if label == "dom1":
    result.write_text("{not json")
    sys.exit(0)
name = req["task"]["deliverables"][0]
text = (GOOD if "CHECKLIST" in req["always_on"] else WEAK)[name]
result.write_text(json.dumps({"ok": "yes" if label == "inv2" else True, "delivered": True,
                              "trajectory": "# " + label + "\\n", "deliverables": {name: text},
                              "usage": {"calls": 2, "input_tokens": 30, "output_tokens": 7}, "error": None,
                              "job": "jobs/" + label if "runner" in req else None}))
'''


def _write_runner(path, shebang=False):
    head = f"#!{sys.executable}\n" if shebang else ""
    path.write_text(head + f"GOOD = {GOOD!r}\nWEAK = {WEAK!r}\n" + RUNNER)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_a_missing_or_malformed_result_is_a_failed_rollout_and_evolve_goes_on(workspace):
    ws = workspace
    _write_runner(ws / "runner.py")
    run(["configure", "runner.kind=command", f'runner.command=["{sys.executable}", "runner.py"]',
         'tasks.select=["invoice-totals"]'], ws)
    run(["evolve"], ws)
    r = {e["label"]: e for e in of(ws, "rollout")}
    assert r["base1"]["ok"] is True and r["base1"]["usage"] == {"calls": 2, "input_tokens": 30, "output_tokens": 7}
    assert r["inv1"]["ok"] is False and r["inv1"]["error"] == "the runner wrote no result.json (exit status 1)"
    assert r["dom1"]["ok"] is False and r["dom1"]["error"].startswith("result.json: not JSON")
    assert r["inv2"]["ok"] is False and r["inv2"]["error"].startswith('result.json: $.ok: expected true or false')
    assert r["dom2"]["ok"] is True
    c = {e["candidate"]: e for e in of(ws, "contrast")}
    for label in ("inv1", "dom1", "inv2"):  # lost the reference's deliverable: regresses, no model call
        assert (c[label]["verdict"], c[label]["called"]) == ("regresses", False)
        assert c[label]["observation"] == "no deliverable totals.md where the reference had one"
    assert c["dom2"]["called"] is True
    assert of(ws, "task_done")[0]["chosen"] == "agg1keep"

    folder = ws / ".nanorsi" / "rollouts" / "invoice-totals"
    request = json.loads((folder / "inv1" / "request.json").read_text())
    assert set(request) == {"task", "harness_dir", "output_dir", "always_on", "label"}
    assert request["label"] == "inv1" and request["task"]["deliverables"] == ["totals.md"]
    assert (folder / "inv1" / "harness" / "memory.md").read_text().startswith("CHECKLIST")
    assert request["harness_dir"] == str((folder / "inv1" / "harness").resolve())
    assert "CHECKLIST" in request["always_on"] and "runner for inv1" in (folder / "inv1" / "runner.log").read_text()
    for label in ("base1", "inv1", "dom1"):
        assert {p.name for p in (folder / label).iterdir()} >= {"harness", "trajectory.md", "deliverables",
                                                                 "request.json", "runner.log"}
    env = json.loads((folder / "base1" / "env.json").read_text())
    assert not any(KEY in v for v in env.values())  # the runner's environment has no key
    assert env["NANORSI_RESULT"] == str((folder / "base1" / "result.json").resolve())


def test_the_nullius_kind_runs_nullius_improve_rollout_with_the_runner_table(workspace, tmp_path):
    ws = workspace
    stand_in = tmp_path / "bin" / "nullius"  # stands in for `nullius`: the kernel's side of the contract only
    stand_in.parent.mkdir()
    _write_runner(stand_in, shebang=True)
    run(["configure", "runner.kind=nullius", f"runner.nullius={stand_in}", "runner.bench=gsm8k",
         "runner.agent=reference", 'tasks.select=["refund-decision"]', "experiment.k=1"], ws)
    assert "runner command: " in run(["doctor"], ws).stdout
    run(["evolve"], ws)
    base = ws / ".nanorsi" / "rollouts" / "refund-decision" / "base1"
    assert json.loads((base / "argv.json").read_text())[1:] == ["improve", "rollout"]
    request = json.loads((base / "request.json").read_text())
    assert request["runner"] == {"kind": "nullius", "command": [], "nullius": str(stand_in), "max_steps": 12,
                                 "timeout": 1800.0, "bench": "gsm8k", "agent": "reference"}
    assert of(ws, "rollout", label="base1")[0]["job"] == "jobs/base1"
    run(["freeze", "--partial"], ws)
    judged = run(["judge"], ws).stdout
    assert "refund-decision base1: 0.000 (0/2)" in judged
