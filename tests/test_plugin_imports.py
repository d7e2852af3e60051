"""Every plugin imports the core's public API only (nullius_core/__init__.py lists it), and no other plugin's code."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

# the public API, as nullius_core/__init__.py and docs/plugins.md list it (a listed package's submodules included)
EXACT = ("nullius_core",)  # the package itself (hookimpl), not everything under it
PUBLIC = (
    "nullius_core.hookspecs", "nullius_core.markers", "nullius_core.plugins", "nullius_core.ports",
    "nullius_core.definitions", "nullius_core.catalogue", "nullius_core.paths", "nullius_core.session",
    "nullius_core.run.agent", "nullius_core.run.backend", "nullius_core.run.driver", "nullius_core.run.events",
    "nullius_core.run.own_image", "nullius_core.relay.api", "nullius_core.relay.sse", "nullius_core.testing",
    "nullius_core.run.lifetime", "nullius_core.run.capped", "nullius_core.run.links",
    # used by plugins all the same, as docs/plugins.md says
    "nullius_core.run.prepare", "nullius_core.jsonfast", "nullius_core.fsutil", "nullius_core.jobs.records",
)


def plugin_packages() -> dict[str, Path]:
    found = {f"nullius_plugins.{p.name}": p for p in (ROOT / "nullius_plugins").iterdir() if (p / "__init__.py").exists()}
    for dist in (ROOT / "plugins").iterdir():
        for package in dist.iterdir():
            if (package / "__init__.py").exists() and package.name != "tests":
                found[package.name] = package
    return found


def imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
    return out


def test_plugins_import_the_public_api_alone_and_no_other_plugin():
    packages = plugin_packages()
    assert "nullius_backend_docker" in packages and "nullius_plugins.local_backend" in packages
    wrong = []
    for name, folder in packages.items():
        others = [p for p in packages if p != name]
        for path in folder.rglob("*.py"):
            for module in imports(path):
                public = module in EXACT or any(module == p or module.startswith(p + ".") for p in PUBLIC)
                if module.startswith("nullius_core") and not public:
                    wrong.append(f"{path.relative_to(ROOT)}: {module}")
                if any(module == o or module.startswith(o + ".") for o in others):
                    wrong.append(f"{path.relative_to(ROOT)}: {module} (another plugin)")
    assert wrong == []
