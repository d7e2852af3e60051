"""Single-turn questions: the tools BFCL hands a function-calling model, and BFCL's own per-entry evaluation.

Both sides are the upstream's code, as `bfcl generate` and `bfcl evaluate`
run them for a function-calling (FC) model of BFCL's registry
(`CHECKER_MODEL`): the function documents get the language hints and type
mapping (`_func_doc_language_specific_pre_processing`, `convert_to_tool`),
and the calls the agent made are scored by `_evaluate_single_ast_entry` (the
AST checker) or `_evaluate_single_relevance_entry` (relevance and
irrelevance), on the question entry as `bfcl evaluate` loads it (without the
hints).
"""

from __future__ import annotations

import copy
import json

from .data import CHECKER_MODEL

_HANDLER = None


def handler():
    """The registry entry's handler, for its decode_ast (FC: each call's JSON arguments); it makes no request."""
    global _HANDLER
    if _HANDLER is None:
        from bfcl_eval.eval_checker.eval_runner import get_handler

        _HANDLER = get_handler(CHECKER_MODEL)
    return _HANDLER


def mcp_tools(functions: list[dict], category: str) -> list[dict]:
    """The functions as MCP tools, as BFCL hands them to an Anthropic-style FC model (`.` in a name becomes `_`)."""
    from bfcl_eval.constants.enums import ModelStyle
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    from bfcl_eval.model_handler.utils import convert_to_tool
    from bfcl_eval.utils import _func_doc_language_specific_pre_processing

    hinted = _func_doc_language_specific_pre_processing(copy.deepcopy(functions), category)
    tools = convert_to_tool(hinted, GORILLA_TO_OPENAPI, ModelStyle.ANTHROPIC)
    return [{"name": t["name"], "description": t.get("description", ""), "inputSchema": t["input_schema"]} for t in tools]


def model_result(calls: list[dict], answer: str):
    """What BFCL's FC handler records for the turn: one {name: JSON arguments} per call; with none, the text."""
    if not calls:
        return answer
    return [{call["tool"]: json.dumps(call["arguments"])} for call in calls]


def language_of(category: str):
    from bfcl_eval.constants.enums import Language, ReturnFormat
    from bfcl_eval.utils import is_java, is_js

    if is_java(category):
        return Language.JAVA, ReturnFormat.JAVA
    if is_js(category):
        return Language.JAVASCRIPT, ReturnFormat.JAVASCRIPT
    return Language.PYTHON, ReturnFormat.PYTHON


def evaluate(category: str, entry: dict, answer_entry: dict | None, calls: list[dict], answer: str) -> dict:
    """BFCL's verdict on one entry: {"valid": bool, ...the checker's error and error_type when not}."""
    from bfcl_eval.eval_checker import eval_runner
    from bfcl_eval.utils import is_relevance_or_irrelevance

    result = model_result(calls, answer)
    prompt_entry = copy.deepcopy(entry)
    if is_relevance_or_irrelevance(category):
        return eval_runner._evaluate_single_relevance_entry(handler(), entry["id"], result, prompt_entry,
                                                            CHECKER_MODEL, category)
    language, return_format = language_of(category)
    return eval_runner._evaluate_single_ast_entry(handler(), entry["id"], result, answer_entry["ground_truth"],
                                                  prompt_entry, CHECKER_MODEL, category, language=language,
                                                  return_format=return_format, has_tool_call_tag=False)
