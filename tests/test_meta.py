"""Every hook specification is documented (in its docstring and in docs/plugins.md) and has a test."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from nullius_core import hookspecs
from nullius_core.plugins import spec_names

ROOT = Path(__file__).resolve().parent.parent
HOOKS = spec_names()


def test_there_are_hooks():
    assert "nullius_register_ports" in HOOKS and len(HOOKS) >= 7


@pytest.mark.parametrize("name", HOOKS)
def test_hook_has_a_full_docstring(name):
    doc = inspect.getdoc(getattr(hookspecs, name)) or ""
    assert "Called" in doc, f"{name}: say when it is called"
    assert "firstresult" in doc, f"{name}: say whether it is firstresult"
    assert ".. versionadded::" in doc, f"{name}: say since when it exists"
    for param in inspect.signature(getattr(hookspecs, name)).parameters:
        assert f":param {param}:" in doc, f"{name}: document parameter {param}"


@pytest.mark.parametrize("name", HOOKS)
def test_hook_is_documented_in_the_plugin_guide(name):
    guide = (ROOT / "docs" / "plugins.md").read_text()
    params = ", ".join(inspect.signature(getattr(hookspecs, name)).parameters)
    assert f"### `{name}({params})`" in guide


@pytest.mark.parametrize("name", HOOKS)
def test_hook_has_a_test(name):
    tests = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py"))
    assert re.search(rf"def test_hook_{name}\b", tests), f"write test_hook_{name}"


def test_every_distribution_depends_on_the_core_by_its_pypi_name():
    """On PyPI `nullius` is an unrelated project: the core is `nullius-core`, and each plugin depends on that."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    assert tomllib.loads((root / "pyproject.toml").read_text())["project"]["name"] == "nullius-core"
    projects = [*root.glob("plugins/*/pyproject.toml"), *root.glob("examples/*/pyproject.toml")]
    assert len(projects) >= 7
    for path in projects:
        deps = tomllib.loads(path.read_text())["project"].get("dependencies", [])
        names = [re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0].strip().lower() for d in deps]
        assert "nullius-core" in names and "nullius" not in names, (path, deps)
