"""The spec's budgets: kernel <= 2,500 lines, a module <= 300, a function <= 50, only the standard library."""

import ast
import sys
from pathlib import Path

import nanorsi

KERNEL = Path(nanorsi.__file__).parent
MODULES = sorted(KERNEL.glob("*.py"))
SPEC_MAP = {"__init__", "cli", "config", "ledger", "model", "harness", "tasks", "runner", "propose", "probe",
            "recursion", "select", "experience", "judge", "report", "templates"}


def test_the_module_map_is_the_specs():
    assert {p.stem for p in MODULES} == SPEC_MAP


def test_line_budgets():
    lines = {p.name: len(p.read_text().splitlines()) for p in MODULES}
    assert sum(lines.values()) <= 2500, lines
    assert {name: n for name, n in lines.items() if n > 300} == {}


def test_function_budget():
    long = []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = node.end_lineno - node.lineno + 1
                if size > 50:
                    long.append(f"{path.name}:{node.name} {size}")
    assert long == []


def test_only_the_standard_library_is_imported():
    foreign = []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            foreign += [f"{path.name}: {n}" for n in names if n.split(".")[0] not in sys.stdlib_module_names]
    assert foreign == []
