"""The scripted fake model playing every nanoRSI role: the loopback agent, proposer (INV, DOM), contrast classifier,
composer, selector and lesson extractor. The kernel's tests use it, and so can a user trying nanorsi offline:

    nullius fake-model serve --port 8765 --script plugins/nullius-rsi/examples/fake_roles.py:respond

The agent writes a weak draft until its harness holds a CHECKLIST; the INV proposer adds one to memory.md, the DOM
proposer a skill; the contrast classifier calls a candidate whose deliverables got "(checked)" mitigating.
"""

import json
import re

# What the loopback agent writes: a weak draft by default, the full answer once its harness holds a CHECKLIST.
WEAK = {"summary.md": "Checkout was slow for a while.\n", "totals.md": "Acme 150.00\n",
        "decision.md": "Denied: the order is older than 30 days.\n"}
GOOD = {"summary.md": "Cause: a leaking connection pool after a deploy. Impact: 42 minutes of slow checkout. "
                      "Fix: the deploy was rolled back. (checked)\n",
        "totals.md": "Acme 150.00\nGlobex 100.00\nInitech 45.25\nGrand total 295.25 (checked)\n",
        "decision.md": "Approve: Clause 3 refunds damaged goods at any time with a photo. (checked)\n"}


def header(obj: dict, **bodies: str) -> str:
    return json.dumps(obj) + "".join(f"\n```{name}\n{body}```" for name, body in bodies.items())


class Roles:
    """The fake model as agent, proposer, contrast classifier, composer, selector and lesson extractor.

    overrides[(role, label)] = a reply's text (or a fake-model reply object, e.g. a fault) replaces a role's reply
    for one label: the candidate for contrast (inv1, agg1r2, ...), the first edit listed for compose, else the task."""

    def __init__(self):
        self.overrides: dict = {}
        self.seen: list[tuple[str, str]] = []

    def __call__(self, request):
        messages = request.body["messages"]
        system, user = messages[0]["content"], messages[1]["content"]
        role = system.split("\n", 1)[0].removeprefix("nanorsi:")
        label = self.label(role, user)
        self.seen.append((role, label))
        if (role, label) in self.overrides:
            reply = self.overrides[(role, label)]
            return reply if isinstance(reply, dict) else {"text": reply}
        return {"text": getattr(self, role.replace(" ", "_"))(system, user, messages)}

    @staticmethod
    def label(role: str, user: str) -> str:
        if role == "contrast":
            return re.search(r"\nCANDIDATE \((\w+)\)", user).group(1)
        if role == "compose":
            return re.search(r"\nCONTRASTED EDITS:\n- (\w+)", user).group(1)
        return re.search(r"task (\S+)", user).group(1)

    def agent(self, system, user, messages):
        name = re.search(r"Deliverables to write: (\S+)", user).group(1)
        step = sum(1 for m in messages if m["role"] == "assistant")
        if step == 0:
            return header({"action": "list"})
        if step == 1:
            return header({"action": "read", "name": re.search(r"Documents: ([^,\n]+)", user).group(1)})
        if step == 2 and "SILENT" not in system:
            text = (GOOD if "CHECKLIST" in system else WEAK)[name]
            return header({"action": "write_deliverable", "name": name}, **{name: text})
        return header({"action": "done"})

    def propose_INV(self, system, user, messages):
        text = "CHECKLIST: read every document, check each figure, then write.\n"
        if "CHECKLIST" in user.split("REFERENCE ROLLOUT")[0]:
            text += "Re-read the instruction before done.\n"
        return header({"component": "memory.md", "deficiency": "stops before checking", "rationale": "a checklist"},
                      **{"memory.md": text})

    def propose_DOM(self, system, user, messages):
        return header({"component": "skills/documents/SKILL.md", "rationale": "domain notes"},
                      **{"skills/documents/SKILL.md": "How to answer from documents\nQuote the source line.\n"})

    def contrast(self, system, user, messages):
        ref, cand = user.split("\nCANDIDATE (", 1)
        better = "(checked)" in cand.split("DELIVERABLES:")[-1] and "(checked)" not in ref.split("DELIVERABLES:")[-1]
        return header({"verdict": "mitigates" if better else "neutral",
                       "observation": "the candidate checks every figure" if better else "no behavioural change"})

    def compose(self, system, user, messages):
        mitigating = re.findall(r"- (\w+) \(\w+, [^)]*\): mitigates", user)
        return header({"decision": "adopt", "edits": mitigating[:1], "observation": "adopt the checklist"})

    def select(self, system, user, messages):
        return header({"choice": "F1", "reason": "complete"})

    def lesson(self, system, user, messages):
        first = re.search(r"CONTRASTS:\n- (\w+)", user).group(1)
        return header({"lesson": "A checklist in memory makes the agent verify figures.", "evidence": [first]})


respond = Roles()
