"""The core imports no plugin: neither nullius_plugins nor any distribution under plugins/."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "nullius_core"


def plugin_packages() -> set[str]:
    names = {"nullius_plugins"}
    for pyproject in (ROOT / "plugins").glob("*/pyproject.toml"):
        for child in pyproject.parent.iterdir():
            if child.is_dir() and (child / "__init__.py").exists():
                names.add(child.name)
    return names


def test_no_core_module_imports_a_plugin():
    forbidden = plugin_packages()
    offenders = []
    for path in CORE.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                if name.split(".")[0] in forbidden:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
    assert offenders == []


def test_importing_every_core_module_loads_no_plugin():
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in CORE.rglob("*.py")
        if p.name != "__main__.py" and "templates" not in p.parts
    )
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"bad = [m for m in sys.modules if m.split('.')[0] in {sorted(plugin_packages())!r}]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
