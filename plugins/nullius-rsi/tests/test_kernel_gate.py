"""The contrast gate, composition, final confirmation and selection: their rules, and failures as recorded outcomes."""

from kernel_world import events, header, of, run

TASK = "invoice-totals"


def _one_task(ws, *extra):
    run(["configure", f'tasks.select=["{TASK}"]', "experiment.k=1", *extra], ws)


def test_a_proposal_that_fails_validation_counts_as_regresses(workspace, roles):
    ws = workspace
    _one_task(ws)
    roles.overrides[("propose DOM", TASK)] = header({"component": "notes.txt"}, **{"notes.txt": "x\n"})
    too_long = "y" * 24_001 + "\n"
    roles.overrides[("propose INV", TASK)] = header({"component": "memory.md"}, **{"memory.md": too_long})
    run(["evolve"], ws)
    props = {e["label"]: e for e in of(ws, "proposal")}
    assert props["inv1"]["valid"] is False and "at most 24000" in props["inv1"]["error"]
    assert props["dom1"]["valid"] is False and "not a harness component" in props["dom1"]["error"]
    for label in ("inv1", "dom1"):
        [c] = of(ws, "contrast", candidate=label)
        assert c["verdict"] == "regresses" and c["called"] is False
        assert c["observation"].startswith("the proposal failed validation")
    assert [e["label"] for e in of(ws, "rollout")] == ["base1"]  # no rollout spent on an invalid edit
    [comp] = of(ws, "compose")
    assert (comp["decision"], comp["called"]) == ("keep", False)
    assert [e["label"] for e in of(ws, "rollout_reused")] == ["agg1keep"]
    assert of(ws, "task_done")[0]["chosen"] == "agg1keep" and not of(ws, "lesson")
    assert "proposal dom1 DOM notes.txt INVALID" in run(["report"], ws).stdout


def test_failed_contrast_calls_read_neutral_and_a_failed_selector_falls_back(workspace, roles):
    ws = workspace
    run(["configure", f'tasks.select=["{TASK}"]', "experiment.k=2"], ws)
    roles.overrides[("contrast", "inv1")] = "I think it is better."
    roles.overrides[("contrast", "dom1")] = {"fault": {"status": 500}}
    roles.overrides[("select", TASK)] = header({"choice": "F7"})
    run(["evolve"], ws)
    c = {e["candidate"]: e for e in of(ws, "contrast")}
    assert (c["inv1"]["verdict"], c["inv1"]["called"]) == ("neutral", True)
    assert "no JSON header line" in c["inv1"]["error"]
    assert c["dom1"]["verdict"] == "neutral" and "HTTP 500" in c["dom1"]["error"]
    assert c["inv2"]["verdict"] == "mitigates"
    composed = sorted(of(ws, "compose"), key=lambda e: e["pair"])  # the compositions ran at once
    assert [(e["label"], e["decision"]) for e in composed] == [("agg1", "keep"), ("agg2", "adopt")]
    [sel] = of(ws, "selection")
    assert sel["fallback"] is True and "F7" in sel["error"]
    assert sel["chosen"] == "agg1keep"  # the first delivered final


def test_compose_merges_two_mitigating_edits_and_is_overruled_on_a_neutral_one(workspace, roles):
    ws = workspace
    run(["configure", f'tasks.select=["{TASK}"]', "experiment.k=2"], ws)
    roles.overrides[("contrast", "dom1")] = header({"verdict": "mitigates", "observation": "quotes sources"})
    merge = {"decision": "merge", "edits": ["inv1", "dom1"], "observation": "both"}
    roles.overrides[("compose", "inv1")] = header(merge)
    roles.overrides[("compose", "inv2")] = header({"decision": "adopt", "edits": ["dom2"], "observation": "x"})
    run(["evolve"], ws)
    agg1, agg2 = sorted(of(ws, "compose"), key=lambda e: e["pair"])  # the compositions ran at once
    assert (agg1["decision"], agg1["edits"]) == ("merge", ["inv1", "dom1"])
    merged = ws / ".nanorsi" / "rollouts" / TASK / "agg1" / "harness"
    assert (merged / "memory.md").read_text().startswith("CHECKLIST")
    assert (merged / "skills" / "documents" / "SKILL.md").exists()
    assert agg2["decision"] == "keep" and agg2["error"] == "overruled: only mitigating edits may be adopted"
    assert [e["label"] for e in of(ws, "rollout_reused")] == ["agg2keep"]


def test_a_regressing_final_draw_rolls_the_adoption_back(workspace, roles):
    ws = workspace
    _one_task(ws, "experiment.final_repeats=2")
    roles.overrides[("contrast", "agg1r2")] = header({"verdict": "regresses", "observation": "stopped early"})
    run(["evolve"], ws)
    assert [e["label"] for e in of(ws, "rollout")] == ["base1", "inv1", "dom1", "agg1", "agg1r2"]
    [rb] = of(ws, "rollback")
    assert rb["draws"] == {"agg1": "mitigates", "agg1r2": "regresses"} and rb["reference"] == "base1"
    assert not of(ws, "final_confirmed")
    [reuse] = of(ws, "rollout_reused")
    assert (reuse["label"], reuse["reused"]) == ("agg1keep", "base1")
    assert of(ws, "task_done")[0]["chosen"] == "agg1keep" and not of(ws, "lesson")
    assert "decision agg1: rollback inv1" in run(["report"], ws).stdout


def test_confirmed_final_draws_all_enter_selection(workspace, roles):
    ws = workspace
    _one_task(ws, "experiment.final_repeats=2")
    run(["evolve"], ws)
    [ok] = of(ws, "final_confirmed")
    assert ok["draws"] == {"agg1": "mitigates", "agg1r2": "mitigates"}
    [sel] = of(ws, "selection")
    assert sorted(sel["ids"].values()) == ["agg1", "agg1r2"]
    assert of(ws, "lesson")[0]["lesson"]


def test_in_seq_a_rollback_leaves_the_next_round_on_the_previous_harness(workspace, roles):
    ws = workspace
    run(["configure", f'tasks.select=["{TASK}"]', "experiment.mode=seq", "experiment.k=2",
         "experiment.final_repeats=2"], ws)
    roles.overrides[("contrast", "c1r2")] = header({"verdict": "regresses", "observation": "stopped early"})
    run(["evolve"], ws)
    assert [e["label"] for e in of(ws, "rollback")] == ["c1"]
    assert [e["reference"] for e in of(ws, "proposal")] == ["base1", "base1", "base1", "base1"]
    assert [e["label"] for e in of(ws, "final_confirmed")] == ["c2"]
    assert of(ws, "task_done")[0]["chosen"] in ("c2", "c2r2")
    assert all(e["event"] != "budget_exhausted" for e in events(ws))
