"""The budget: charged before each rollout and improver call; exhaustion stops cleanly; evolve resumes."""

from kernel_world import events, of, run

TASKS = ["incident-summary", "invoice-totals", "refund-decision"]


def test_budget_exhaustion_stops_cleanly_and_evolve_resumes_past_done_tasks(workspace):
    ws = workspace
    # One pair after another (parallel = 1), so the refused charge is one label; test_kernel_parallel.py stops a
    # run whose pairs run at once.
    run(["configure", "budget.max_rollouts=10", "experiment.parallel=1"], ws)
    stopped = run(["evolve"], ws, code=3)
    assert "budget exhausted: 10 of [budget] max_rollouts = 10 spent" in stopped.stderr
    assert "Traceback" not in stopped.stderr
    [ex] = of(ws, "budget_exhausted")
    assert (ex["what"], ex["used"], ex["limit"]) == ("rollout", 10, 10)
    assert (ex["task"], ex["label"]) == ("invoice-totals", "inv2")
    # Charged before: every rollout event follows its charge, and the refused one was never run.
    kinds = [(e["event"], e.get("label")) for e in events(ws) if e["event"] in ("charge", "rollout")]
    for i, (kind, label) in enumerate(kinds):
        if kind == "rollout":
            assert kinds[i - 1] == ("charge", label)
    assert not of(ws, "rollout", label="inv2", task="invoice-totals")
    assert [e["task"] for e in of(ws, "task_done")] == ["incident-summary"]

    # While stopped: freeze waits for the tasks, configure is refused, judge needs a freeze.
    assert "not done" in run(["freeze"], ws, code=2).stderr
    assert "configure is refused once the ledger has started" in run(["configure", "budget.max_rollouts=99"], ws,
                                                                       code=2).stderr
    assert "judge is refused before freeze" in run(["judge"], ws, code=2).stderr

    toml = ws / "nanorsi.toml"  # [budget] is the one table a user may raise by hand to resume
    toml.write_text(toml.read_text().replace("max_rollouts = 10", "max_rollouts = 100"))
    run(["evolve"], ws)
    assert [e["task"] for e in of(ws, "task_started")] == ["incident-summary", "invoice-totals", "invoice-totals",
                                                           "refund-decision"]
    assert [e["attempt"] for e in of(ws, "task_started", task="invoice-totals")] == [1, 2]
    # The interrupted attempt's rollouts are kept apart, not overwritten.
    assert {e["dir"] for e in of(ws, "rollout", task="invoice-totals", label="base1")} == {
        ".nanorsi/rollouts/invoice-totals/base1", ".nanorsi/rollouts/invoice-totals/attempt2/base1"}
    assert [e["task"] for e in of(ws, "task_done")] == TASKS
    assert len(of(ws, "run_started")) == 1 and len(of(ws, "evolve_started")) == 2
    assert of(ws, "charge", what="rollout")[-1]["used"] == 10 + 7 + 7
    run(["freeze"], ws)
    report = run(["report"], ws).stdout
    assert "budget: rollouts 24/100" in report and "exhausted 1 time(s)" in report
    assert "task invoice-totals: chosen agg" in report and "attempts 2" in report


def test_improver_calls_are_charged_before_the_call(workspace, fake_model):
    ws = workspace
    run(["configure", "budget.max_proposer_calls=1", 'tasks.select=["invoice-totals"]', "experiment.parallel=1"], ws)
    run(["evolve"], ws, code=3)
    [ex] = of(ws, "budget_exhausted")
    assert (ex["what"], ex["label"], ex["used"]) == ("improver", "inv1", 1)  # inv1's contrast was refused
    roles = [r.body["messages"][0]["content"].split("\n", 1)[0] for r in fake_model.requests]
    assert roles.count("nanorsi:propose INV") == 1 and "nanorsi:contrast" not in roles
