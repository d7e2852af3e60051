"""Whole runs through the CLI as a user types it: new, configure, doctor, evolve, freeze, judge, report, verify."""

import json

from kernel_world import KEY, events, of, run

TASKS = ["incident-summary", "invoice-totals", "refund-decision"]


def _labels(ws, task):
    return [e["label"] for e in of(ws, "rollout", task=task)], [e["label"] for e in of(ws, "rollout_reused", task=task)]


def _no_key_anywhere(ws, tmp_path):
    for path in ws.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), f"the key leaked into {path}"


def test_agg_run_over_three_tasks_freezes_judges_and_reports(typed_workspace, fake_model, roles, tmp_path):
    ws = typed_workspace
    doctor = run(["doctor"], ws)
    assert "api key file" in doctor.stdout and KEY not in doctor.stdout
    out = run(["evolve"], ws)
    assert "evolve finished: 3 task(s) done" in out.stdout

    for task in TASKS:
        rolled, reused = _labels(ws, task)
        # The pairs run at once (parallel defaults to k), so their rollouts interleave; the compositions follow.
        assert rolled[0] == "base1" and sorted(rolled[1:5]) == ["dom1", "dom2", "inv1", "inv2"]
        assert rolled[5:] in (["agg1", "agg2"], ["agg2", "agg1"])
        assert reused == []
        verdicts = {e["candidate"]: e["verdict"] for e in of(ws, "contrast", task=task)}
        assert verdicts == {"inv1": "mitigates", "dom1": "neutral", "inv2": "mitigates", "dom2": "neutral"}
        composed = sorted(of(ws, "compose", task=task), key=lambda e: e["pair"])  # ledgered as each finished
        assert [(e["label"], e["decision"], e["edits"]) for e in composed] == [
            ("agg1", "adopt", ["inv1"]), ("agg2", "adopt", ["inv2"])]
        assert composed[0]["evidence"] == {"inv1": "the candidate checks every figure"}
        [sel] = of(ws, "selection", task=task)
        assert sel["fallback"] is False and sel["chosen"] in ("agg1", "agg2")
        assert sorted(sel["ids"].values()) == ["agg1", "agg2"] and set(sel["ids"]) == {"F1", "F2"}
        [done] = of(ws, "task_done", task=task)
        assert done["chosen"] == sel["chosen"]
        folder = ws / ".nanorsi" / "rollouts" / task / "agg1"
        assert (folder / "harness" / "memory.md").read_text().startswith("CHECKLIST")
        assert (folder / "trajectory.md").exists() and any((folder / "deliverables").iterdir())

    # One lesson per adopted harness, and later tasks see the library before proposing.
    library = [json.loads(x) for x in (ws / ".nanorsi" / "library.jsonl").read_text().splitlines()]
    assert [x["task"] for x in library] == TASKS
    later = [r.body["messages"][1]["content"] for r in fake_model.requests
             if "nanorsi:propose" in r.body["messages"][1]["content"] and "task refund-decision" in
             r.body["messages"][1]["content"]]
    assert later and all("A checklist in memory makes the agent verify figures." in u for u in later)
    # Scores never reach the improver: nothing is judged before the freeze.
    assert not of(ws, "judged")

    refused = run(["evolve"], ws)  # a second evolve skips done tasks and spends nothing
    assert len(of(ws, "task_started")) == 3 and len(of(ws, "run_started")) == 1 and refused.returncode == 0
    run(["freeze"], ws)
    assert run(["evolve"], ws, code=2).stderr.startswith("nanorsi: the run is frozen")
    judged = run(["judge"], ws).stdout
    assert "task invoice-totals base1: 0.250 (1/4)" in judged and "1.000 (4/4)" in judged
    assert {(e["task"], e["label"]) for e in of(ws, "judged")} == {
        (t, lab) for t in TASKS for lab in ("base1", of(ws, "task_done", task=t)[0]["chosen"])}

    report = run(["report"], ws).stdout
    assert "win/tie/loss 3/0/0; ungraded 0" in report
    assert "contrast inv1 vs base1: mitigates" in report and "decision agg1: adopt inv1" in report
    assert "budget: rollouts 21/100, improver calls" in report
    data = json.loads(run(["report", "--json"], ws).stdout)
    assert data["means"]["n"] == 3 and data["means"]["final"] == 1.0 and data["means"]["base"] < 0.5
    assert data["budget"]["rollouts"] == 21
    assert data["usage"]["improver"]["calls"] == len(of(ws, "charge", what="improver"))
    assert run(["verify"], ws).stdout.startswith(f"ledger ok: {len(events(ws))} events")

    # The key is read from its file at each call (the model saw it) and copied nowhere.
    assert {r.headers.get("authorization") for r in fake_model.requests} == {f"Bearer {KEY}"}
    _no_key_anywhere(ws, tmp_path)


def test_seq_run_composes_round_on_round(typed_workspace, roles):
    ws = typed_workspace
    run(["configure", "experiment.mode=seq", "experiment.k=2"], ws)
    run(["evolve"], ws)
    for task in TASKS:
        rolled, reused = _labels(ws, task)
        assert rolled == ["base1", "inv1", "dom1", "c1", "inv2", "dom2"]
        assert reused == ["c2keep"]
        assert [e["reference"] for e in of(ws, "proposal", task=task)] == ["base1", "base1", "c1", "c1"]
        # Round 2 is contrasted against c1, which already checks its figures: nothing mitigates, so keep.
        assert [(e["label"], e["decision"], e["called"]) for e in of(ws, "compose", task=task)] == [
            ("c1", "adopt", True), ("c2", "keep", False)]
        [reuse] = of(ws, "rollout_reused", task=task)
        assert reuse["reused"] == "c1" and reuse["dir"].endswith(f"{task}/c1")
        assert of(ws, "task_done", task=task)[0]["chosen"] == "c1"
        assert not of(ws, "selection", task=task)  # one final: no selection
    run(["freeze"], ws)
    run(["judge"], ws)
    report = run(["report"], ws).stdout
    assert "decision c1: adopt inv1" in report and "decision c2: keep" in report
    assert "win/tie/loss 3/0/0" in report and "mode seq, k 2" in report


def test_rejected_edits_feed_the_next_proposals(workspace, fake_model, roles):
    ws = workspace
    # One pair after another (parallel = 1): pair 2 sees pair 1's rejections (test_kernel_parallel.py: at once, not).
    run(["configure", 'tasks.select=["invoice-totals"]', "experiment.parallel=1"], ws)
    run(["evolve"], ws)
    second = [r.body["messages"][1]["content"] for r in fake_model.requests
              if r.body["messages"][1]["content"].startswith("nanorsi:propose") and r.body["messages"][0][
                  "content"].startswith("nanorsi:propose")]
    assert "RECENTLY REJECTED EDITS:\n(none)" in second[0]
    assert "- dom1 on skills/documents/SKILL.md: neutral: no behavioural change" in second[2]
