"""The contrast gate: a candidate's rollout against the reference's under matched configuration, no ground truth."""

from .model import Client, ModelError, ask, zero_usage
from .propose import rollout_text
from .tasks import Task

VERDICTS = ("mitigates", "neutral", "regresses")


def contrast(client: Client, task: Task, ref: dict, cand: dict, edit: str, charge) -> dict:
    """{verdict, observation, called, error, usage}. Decided without a call when a deliverable went missing;
    charge() pays for the call before it is made."""
    lost = [n for n, text in sorted(ref["deliverables"].items())
            if text.strip() and not cand["deliverables"].get(n, "").strip()]
    if lost:
        return _verdict("regresses", f"no deliverable {', '.join(lost)} where the reference had one", False)
    system = ("nanorsi:contrast\nYou compare two rollouts of one task under matched configuration; they differ only "
              "in the harness edit shown. Without ground truth, judge whether the candidate's behaviour mitigates "
              "a deficiency of the reference, is neutral, or regresses. Reply with one JSON header line "
              '{"verdict": "mitigates"|"neutral"|"regresses", "observation": "the behaviour that decides it"}.')
    user = (f"nanorsi:contrast task {task.id}\nTASK:\n{task.instruction}\n\nEDIT ({cand['label']}):\n{edit}\n\n"
            f"REFERENCE ({ref['label']}):\n{rollout_text(ref)}\n\nCANDIDATE ({cand['label']}):\n{rollout_text(cand)}")
    charge()
    try:
        header, _, usage = ask(client, system, user)
    except ModelError as exc:
        return {**_verdict("neutral", "the contrast call failed", True), "error": str(exc),
                "usage": getattr(exc, "usage", zero_usage())}
    verdict = header.get("verdict")
    if verdict not in VERDICTS:
        return {**_verdict("neutral", "the contrast reply named no verdict", True),
                "error": f"verdict {verdict!r}: expected one of {', '.join(VERDICTS)}", "usage": usage}
    return {**_verdict(verdict, str(header.get("observation", ""))[:2000], True), "usage": usage}


def _verdict(verdict: str, observation: str, called: bool) -> dict:
    return {"verdict": verdict, "observation": observation, "called": called, "error": None, "usage": zero_usage()}
