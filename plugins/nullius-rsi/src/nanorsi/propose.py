"""INV / DOM single-component proposals from execution evidence, and the compose step (adopt / merge / keep)."""

import json
from dataclasses import dataclass, field

from . import harness as hz
from .model import Client, ModelError, ask, fence, zero_usage
from .tasks import Task

KINDS = {
    "INV": "an INV edit: fix a cross-domain agentic deficiency (how the agent plans, reads, checks, finishes), "
           "useful on any task",
    "DOM": "a DOM edit: add domain-specific knowledge or procedure for tasks like this one",
}
EVIDENCE_CHARS = 12_000


@dataclass(frozen=True)
class Proposal:
    label: str
    kind: str
    component: str
    rationale: str
    valid: bool
    error: str | None
    harness: dict = field(default_factory=dict)
    usage: dict = field(default_factory=zero_usage)


def _harness_text(harness: dict) -> str:
    return "\n\n".join(fence(path, text) for path, text in sorted(harness.items()))


def rollout_text(r: dict) -> str:
    docs = "\n\n".join(fence(n, t) for n, t in sorted(r["deliverables"].items())) or "(no deliverable)"
    state = f"ok={r['ok']} delivered={r['delivered']} error={r['error']}"
    return f"{state}\n\nTRAJECTORY:\n{r['trajectory'][-EVIDENCE_CHARS:]}\n\nDELIVERABLES:\n{docs}"


def proposal_prompt(kind: str, task: Task, harness: dict, ref: dict, rejected: list, lessons: list) -> tuple:
    system = (f"nanorsi:propose {kind}\nYou improve an agent's harness. Propose {KINDS[kind]}. Edit exactly one "
              f"component: one of {', '.join(hz.ALWAYS_ON)}, skills/<slug>/SKILL.md (first line: a description) "
              "or scripts/<slug>.py. Reply with one JSON header line "
              '{"component": PATH, "deficiency": "...", "rationale": "..."} (add "delete": true to remove it), '
              "then the component's whole new text fenced as ```PATH ... ```.")
    rej = "\n".join(f"- {r['label']} on {r['component']}: {r['verdict']}: {r['observation']}" for r in rejected)
    lib = "\n".join(f"- {x['lesson']}" for x in lessons)
    user = (f"nanorsi:propose {kind} task {task.id}\nTASK:\n{task.instruction}\n\nCURRENT HARNESS:\n"
            f"{_harness_text(harness)}\n\nREFERENCE ROLLOUT ({ref['label']}):\n{rollout_text(ref)}\n\n"
            f"RECENTLY REJECTED EDITS:\n{rej or '(none)'}\n\nLESSONS FROM EARLIER TASKS:\n{lib or '(none)'}")
    return system, user


def propose(client: Client, kind: str, label: str, task: Task, harness: dict, ref: dict,
            rejected: list, lessons: list, charge) -> Proposal:
    """One proposal; a model failure or an edit that does not validate is an invalid proposal, never a crash."""
    system, user = proposal_prompt(kind, task, harness, ref, rejected, lessons)
    charge()
    try:
        header, bodies, usage = ask(client, system, user)
    except ModelError as exc:
        return Proposal(label, kind, "", "", False, str(exc), usage=getattr(exc, "usage", zero_usage()))
    component = header.get("component")
    rationale = str(header.get("rationale", ""))[:2000]
    problem, after = _edit(harness, component, header.get("delete") is True, bodies)
    if problem:
        return Proposal(label, kind, str(component or ""), rationale, False, problem, usage=usage)
    return Proposal(label, kind, component, rationale, True, None, after, usage)


def _edit(harness: dict, component, delete: bool, bodies: dict) -> tuple[str | None, dict]:
    if not isinstance(component, str) or not hz.is_component(component):
        return f"component {component!r} is not a harness component", {}
    if not delete and component not in bodies:
        return f"no body fenced as {component}", {}
    after = hz.apply(harness, component, None if delete else bodies[component])
    if after == harness:
        return f"the edit leaves {component} unchanged", {}
    errors = hz.validate(after)
    return ("; ".join(errors), {}) if errors else (None, after)


def compose(client: Client, task: Task, ref_label: str, harness: dict, pair: list, charge) -> dict:
    """{decision, edits, observation, harness, called, error, usage}. Only mitigating edits can be taken."""
    mitigating = [c for c in pair if c["verdict"] == "mitigates"]
    if not mitigating:
        return _keep(harness, "no edit mitigates; keep beats adopting neutral or regressing edits", False)
    lines = "\n".join(f"- {c['label']} ({c['kind']}, {c['component']}): {c['verdict']}: {c['observation']}"
                      for c in pair)
    system = ("nanorsi:compose\nYou compose the next harness from contrasted edits. Reply with one JSON header line "
              '{"decision": "adopt"|"merge"|"keep", "edits": [LABEL, ...], "observation": "..."}. adopt takes one '
              "mitigating edit; merge takes two mitigating edits on different components; keep takes none. "
              "Tie the decision to the observations.")
    user = f"nanorsi:compose task {task.id}\nREFERENCE: {ref_label}\nCONTRASTED EDITS:\n{lines}"
    charge()
    try:
        header, _, usage = ask(client, system, user)
    except ModelError as exc:
        return {**_keep(harness, "the compose call failed", True), "error": str(exc),
                "usage": getattr(exc, "usage", zero_usage())}
    return {**_decide(header, harness, {c["label"]: c for c in pair}), "usage": usage}


def _decide(header: dict, harness: dict, by_label: dict) -> dict:
    decision, edits = header.get("decision"), header.get("edits") or []
    observation = str(header.get("observation", ""))[:2000]
    chosen = [by_label.get(e) for e in edits] if isinstance(edits, list) else [None]
    if decision == "keep":
        return _keep(harness, observation, True)
    wrong = _rule_broken(decision, chosen) or ("" if observation.strip() else "an adoption must name its observation")
    if wrong:
        return {**_keep(harness, observation, True), "error": f"overruled: {wrong}"}
    after = dict(harness)
    for c in chosen:
        after = hz.apply(after, c["component"], c["harness"].get(c["component"]))
    problems = hz.validate(after)
    if problems:
        return {**_keep(harness, observation, True), "error": "overruled: " + "; ".join(problems)}
    return {"decision": decision, "edits": [c["label"] for c in chosen], "observation": observation,
            "evidence": {c["label"]: c["observation"] for c in chosen}, "harness": after, "called": True,
            "error": None}


def _rule_broken(decision, chosen: list) -> str:
    if decision not in ("adopt", "merge"):
        return f"decision {json.dumps(decision)} is not adopt, merge or keep"
    if any(c is None for c in chosen):
        return "an edit label names no contrasted edit"
    if any(c["verdict"] != "mitigates" for c in chosen):
        return "only mitigating edits may be adopted"
    if decision == "adopt" and len(chosen) != 1:
        return "adopt takes exactly one edit"
    if decision == "merge" and (len(chosen) != 2 or chosen[0]["component"] == chosen[1]["component"]):
        return "merge takes two mitigating edits on different components"
    return ""


def _keep(harness: dict, observation: str, called: bool) -> dict:
    return {"decision": "keep", "edits": [], "observation": observation, "evidence": {}, "harness": harness,
            "called": called, "error": None, "usage": zero_usage()}
