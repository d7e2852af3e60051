"""Multi-turn questions: their turns, their tools turn by turn, and BFCL's own multi-turn evaluation.

As BFCL's FC inference loop (`BaseHandler.inference_multi_turn_FC`) runs
them: the involved classes' function documents are the tools
(`populate_test_cases_with_predefined_functions`, which also takes a
multi_turn_miss_func question's withheld functions out); a withheld
function joins the tools at its turn, whose user message is then BFCL's
`DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC`. The agent's calls of
each turn, as the MCP server executed them, are scored by
`_evaluate_single_multi_turn_entry`, which re-executes them and the ground
truth on fresh backend instances and compares state and results.
"""

from __future__ import annotations

import ast
import copy
import inspect
import json

from .data import CHECKER_MODEL
from .single import handler, mcp_tools


def prepared(entry: dict) -> dict:
    """The entry as BFCL's loader hands it to inference: its functions filled in, the withheld ones set apart."""
    from bfcl_eval.utils import populate_test_cases_with_predefined_functions

    return populate_test_cases_with_predefined_functions([copy.deepcopy(entry)])[0]


def tools_by_turn(entry: dict, category: str) -> list[list[dict]]:
    """Each turn's MCP tools: the functions so far, a withheld function added from its turn on."""
    ready = prepared(entry)
    functions, held = list(ready["function"]), ready.get("missed_function", {})
    out = []
    for turn in range(len(ready["question"])):
        functions = functions + held.get(str(turn), [])
        out.append(mcp_tools(functions, category))
    return out


def messages(entry: dict) -> list[str]:
    """Each turn's user message, as the agent gets it (a holdout turn's is BFCL's own line)."""
    from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC

    held = entry.get("missed_function", {})
    out = []
    for turn, turn_messages in enumerate(entry["question"]):
        if str(turn) in held:
            out.append(DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC)
        else:
            out.append("\n\n".join(m["content"] for m in turn_messages if m.get("role") == "user"))
    return out


def unit_file(entry: dict, category: str) -> dict:
    """What the MCP server reads: the tools of each turn, the backends' config, and the current turn."""
    by_turn = tools_by_turn(entry, category)
    return {"id": entry["id"], "multi_turn": True, "turn": 0, "tools_by_turn": by_turn,
            "changes_tools": any(t != by_turn[0] for t in by_turn),
            "initial_config": entry.get("initial_config", {}), "involved_classes": entry["involved_classes"],
            "long_context": "long_context" in category}


def model_result(calls: list[dict], turns: int) -> list[list[list[dict]]]:
    """BFCL's record of the conversation: per turn, per step, the step's calls ({name: JSON arguments}).

    Each MCP call is a step of its own (an agent's calls reach the server one at a time)."""
    out: list[list] = [[] for _ in range(turns)]
    for call in calls:
        turn = call.get("turn", 0)
        if isinstance(turn, int) and 0 <= turn < turns:
            out[turn].append([{call["tool"]: json.dumps(call["arguments"])}])
    return out


def forget_instances(unit: str) -> None:
    """BFCL's executor keeps each question's backend instances in its module's globals, by model and id:
    dropped before a unit is scored, so one unit's state never reaches the next."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    marker = f"_{unit}_".replace("-", "_").replace(".", "_")
    for name in [n for n in vars(multi_turn_utils) if n.endswith("_instance") and marker in n]:
        del vars(multi_turn_utils)[name]


def evaluate(category: str, entry: dict, answer_entry: dict, calls: list[dict]) -> dict:
    from bfcl_eval.eval_checker import eval_runner

    forget_instances(entry["id"])
    result = model_result(calls, len(entry["question"]))
    try:
        return eval_runner._evaluate_single_multi_turn_entry(handler(), entry["id"], result,
                                                             answer_entry["ground_truth"], prepared(entry),
                                                             CHECKER_MODEL, category)
    finally:
        forget_instances(entry["id"])


def oracle_calls(entry: dict, answer_entry: dict) -> list[list[dict]]:
    """The ground truth's calls, turn by turn, as tool calls: positional arguments named by the backend's signature."""
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING
    import importlib

    signatures = {}
    for class_name in entry["involved_classes"]:
        cls = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name]), class_name)
        for name, method in inspect.getmembers(cls, predicate=inspect.isfunction):
            if not name.startswith("_"):
                signatures[name] = [p for p in inspect.signature(method).parameters if p != "self"]
    turns = []
    for turn_calls in answer_entry["ground_truth"]:
        out = []
        for source in turn_calls:
            call = ast.parse(source, mode="eval").body
            name = call.func.id
            arguments = {signatures[name][i]: ast.literal_eval(a) for i, a in enumerate(call.args)}
            arguments.update({k.arg: ast.literal_eval(k.value) for k in call.keywords})
            out.append({"tool": name, "arguments": arguments})
        turns.append(out)
    return turns
