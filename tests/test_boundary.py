"""The boundary between the core and its plugins: one list of the public API, held everywhere.

Every plugin (bundled under nullius_plugins/, separate under plugins/, the
example template) imports only modules `nullius_core.contracts.PUBLIC_API`
names, never the engine (`nullius_core.run`) or the relay
(`nullius_core.relay`), and no other plugin's code. The contracts import only
the definitions, `nullius_core.paths` and each other. docs/plugins.md shows
the same list.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

from conftest import ROOT

from nullius_core.contracts import PUBLIC_API, is_public

ENGINE = ("nullius_core.run", "nullius_core.relay")


def plugin_packages() -> dict[str, tuple[str, Path]]:
    """Each plugin package (and each distribution's tests) by import name: (the distribution it belongs to, its folder)."""
    found = {f"nullius_plugins.{p.name}": (p.name, p) for p in (ROOT / "nullius_plugins").iterdir() if (p / "__init__.py").exists()}
    for dist in [*(ROOT / "plugins").iterdir(), ROOT / "examples" / "benchmark-plugin-template"]:
        src = dist / "src"  # a src layout (plugins/nullius-rsi) holds its packages there
        for package in [*dist.iterdir(), *(src.iterdir() if src.is_dir() else ())]:
            if (package / "__init__.py").exists():
                found[package.name] = (dist.name, package)
            elif package.name == "tests":
                found[f"{dist.name}/tests"] = (dist.name, package)
    return found


def imports(path: Path) -> list[str]:
    """Every module `path` imports; `from nullius_core import jsonfast` is the module nullius_core.jsonfast."""
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                if node.module.startswith("nullius_core") and importlib.util.find_spec(node.module) and _is_module(name):
                    out.append(name)
        elif isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
    return out


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def test_plugins_import_the_public_api_alone_and_no_other_plugin():
    packages = plugin_packages()
    assert {"nullius_backend_docker", "nullius_plugins.local_backend", "nullius-backend-docker/tests"} <= set(packages)
    wrong = []
    for dist, folder in packages.values():
        others = [p for p, (d, _) in packages.items() if d != dist and "/" not in p]
        for path in folder.rglob("*.py"):
            if "build" in path.relative_to(folder).parts:
                continue
            for module in imports(path):
                if module.startswith(ENGINE):
                    wrong.append(f"{path.relative_to(ROOT)}: {module} (the engine)")
                elif module.startswith("nullius_core") and not is_public(module):
                    wrong.append(f"{path.relative_to(ROOT)}: {module} (not in PUBLIC_API)")
                if any(module == o or module.startswith(o + ".") for o in others):
                    wrong.append(f"{path.relative_to(ROOT)}: {module} (another plugin)")
    assert wrong == []


def test_the_check_catches_an_engine_import(tmp_path):
    planted = tmp_path / "plugin.py"
    planted.write_text("from nullius_core.run.engine import Engine\nfrom nullius_core import jsonfast\n")
    found = imports(planted)
    assert "nullius_core.run.engine" in found and "nullius_core.jsonfast" in found
    assert not is_public("nullius_core.run.engine") and not is_public("nullius_core.relay.server")
    assert is_public("nullius_core.definitions.benchmark") and not is_public("nullius_core.contracts.agentx")


def test_the_contracts_import_only_the_definitions():
    allowed = ("nullius_core.contracts", "nullius_core.definitions", "nullius_core.paths")
    wrong = []
    for path in (ROOT / "nullius_core" / "contracts").rglob("*.py"):
        for module in imports(path):
            if module.startswith("nullius_core") and not module.startswith(allowed):
                wrong.append(f"{path.relative_to(ROOT)}: {module}")
    assert wrong == []


def test_every_public_module_exists_and_docs_show_the_same_list():
    for entry in PUBLIC_API:
        assert _is_module(entry.module), entry.module
    text = (ROOT / "docs" / "plugins.md").read_text()
    section = text.split("## The public API", 1)[1].split("\n## ", 1)[0]
    shown = re.findall(r"^\| `(nullius_core[\w.]*)`", section, flags=re.M)
    assert shown == [entry.module for entry in PUBLIC_API]


def test_the_plugin_machinery_does_not_import_the_engine():
    wrong = []
    for path in [ROOT / "nullius_core" / "hookspecs.py", *(ROOT / "nullius_core" / "plugins").rglob("*.py")]:
        wrong += [f"{path.name}: {m}" for m in imports(path) if m.startswith(ENGINE)]
    assert wrong == []
