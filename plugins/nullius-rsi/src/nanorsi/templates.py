"""The default starter: a base harness, three offline document tasks and a keyword judge command."""

import json
from pathlib import Path

from . import NanoError, config as cf, harness as hz

HARNESS = {
    "systemprompt.md": "You are a careful analyst. Read every document before you write.\n",
    "guardrails.md": "Use only facts found in the documents. Do not invent numbers.\n",
    "memory.md": "",
    "tool_guidance.md": "List the documents, read each one, write each deliverable, then say done.\n",
}

TASKS = [
    {"id": "incident-summary",
     "instruction": "Write summary.md: a short incident summary for the operations team, stating the cause, "
                    "the impact (with its duration) and the fix.",
     "documents": {"incident-log.txt": (
         "09:02 alerts: checkout latency above 5s\n09:05 on-call paged\n"
         "09:14 database connections at the pool limit (200/200)\n"
         "09:20 cause found: a deploy at 08:58 lowered the connection pool timeout, leaking connections\n"
         "09:31 deploy rolled back; connections recovering\n09:44 latency normal; incident closed\n"
         "impact: 42 minutes of slow checkout, about 3% of orders failed\n")},
     "deliverables": ["summary.md"]},
    {"id": "invoice-totals",
     "instruction": "Write totals.md: the total amount invoiced to each customer, and the grand total.",
     "documents": {"invoices.csv": ("invoice,customer,amount\nA-1,Acme,120.00\nA-2,Globex,80.50\n"
                                    "A-3,Acme,30.00\nA-4,Initech,45.25\nA-5,Globex,19.50\n")},
     "deliverables": ["totals.md"]},
    {"id": "refund-decision",
     "instruction": "Write decision.md: approve or deny the refund request under the policy, citing the clause "
                    "that decides it.",
     "documents": {"policy.txt": ("Clause 1: refunds are granted within 30 days of delivery.\n"
                                  "Clause 2: opened software is not refundable.\n"
                                  "Clause 3: damaged goods are refunded at any time with a photo.\n"),
                   "request.txt": "Order 5521, delivered 45 days ago. The lamp arrived cracked; photo attached.\n"},
     "deliverables": ["decision.md"]},
]

# The judge's criteria live outside the harness and the manifest: the improver never sees them.
KEYWORDS = {
    "incident-summary": {"summary.md": ["connection pool", "42 minutes", "rolled back"]},
    "invoice-totals": {"totals.md": ["150.00", "100.00", "45.25", "295.25"]},
    "refund-decision": {"decision.md": ["approve", "clause 3"]},
}

JUDGE = '''"""The starter's keyword judge: each keyword found in its deliverable is one passed criterion."""
import json
import os
from pathlib import Path

request = json.loads(Path(os.environ["NANORSI_JUDGE_REQUEST"]).read_text())
keywords = json.loads((Path(__file__).parent / "keywords.json").read_text())[request["task"]["id"]]
passed = total = 0
detail = {}
for name, words in keywords.items():
    path = Path(request["rollout_dir"]) / "deliverables" / name
    text = path.read_text().lower() if path.exists() else ""
    detail[name] = {w: w.lower() in text for w in words}
    passed += sum(detail[name].values())
    total += len(words)
Path(os.environ["NANORSI_JUDGE_RESULT"]).write_text(json.dumps({"n_passed": passed, "n_criteria": total,
                                                                 "detail": detail}))
'''

CONFIG = {
    "experiment": {"mode": "agg", "k": 2, "seed": 0, "final_repeats": 1},
    "model": {"base_url": "http://127.0.0.1:8000/v1", "name": "MODEL", "api_key_file": "/PATH/OUTSIDE/THE/WORKSPACE",
              "temperature": 0.0, "max_tokens": 4096, "retries": 2, "timeout": 300.0},
    "runner": {"kind": "loopback", "max_steps": 12, "timeout": 1800.0},
    "harness": {"root": "harness"},
    "tasks": {"manifest": "tasks.json", "select": []},
    "judge": {"command": ["python3", "judge/keyword_judge.py"], "timeout": 600.0},
    "budget": {"max_rollouts": 100, "max_proposer_calls": 200},
}
HEADER = "# nanoRSI experiment. Set [model] with `nanorsi configure model.FIELD=VALUE`; every field: docs/rsi.md.\n"


def new(target: Path) -> None:
    """Write the starter into target, which must not exist or be empty."""
    target = Path(target)
    if target.exists() and any(target.iterdir()):
        raise NanoError(f"{target}: not empty; `nanorsi new` writes a starter only into a new or empty folder")
    hz.write(target / "harness", HARNESS)
    (target / "tasks.json").write_text(json.dumps(TASKS, indent=2) + "\n", encoding="utf-8")
    (target / "judge").mkdir(parents=True, exist_ok=True)
    (target / "judge" / "keyword_judge.py").write_text(JUDGE, encoding="utf-8")
    (target / "judge" / "keywords.json").write_text(json.dumps(KEYWORDS, indent=2) + "\n", encoding="utf-8")
    (target / cf.CONFIG_NAME).write_text(HEADER + cf.dumps(CONFIG), encoding="utf-8")
