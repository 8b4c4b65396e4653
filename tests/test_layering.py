"""The layers of docs/architecture.md, checked by walking every import of every module (including
imports inside functions): a package imports only from itself and the packages below it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

ALLOWED: dict[str, set[str]] = {
    "kpulse": set(),
    "localkafka": {"kpulse"},
    "alerting": {"kpulse"},
    "exporters": {"kpulse", "alerting"},
    "operations": {"kpulse"},
    "spark_jobs": {"kpulse"},
    "collectors": {"kpulse", "alerting", "exporters"},
    "dashboard": {"kpulse", "alerting", "operations", "spark_jobs", "collectors"},
    "cli": {"kpulse", "localkafka", "alerting", "exporters", "operations", "spark_jobs", "collectors", "dashboard"},
}
"""Package -> the other packages of the project it may import (docs/architecture.md, "Layers")."""


def imported_modules(path: Path, module: str) -> set[str]:
    """Every module ``path`` (the module ``module``) imports, relative imports resolved."""
    names: set[str] = set()
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                names.add(".".join(base + ([node.module] if node.module else [])))
            elif node.module:
                names.add(node.module)
    return names


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layering_violations(root: Path = ROOT, allowed: dict[str, set[str]] = ALLOWED) -> list[str]:
    violations = []
    for package in allowed:
        for path in sorted((root / package).rglob("*.py")):
            module = module_name(path) if root == ROOT else ".".join(path.relative_to(root).with_suffix("").parts)
            for imported in sorted(imported_modules(path, module)):
                top = imported.split(".")[0]
                if top in allowed and top != package and top not in allowed[package]:
                    violations.append(f"{path.relative_to(root)} imports {imported}")
    return violations


def test_every_package_of_the_project_has_a_layer():
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file() and p.name != "tests"}
    assert packages == set(ALLOWED)


def test_no_package_imports_from_a_higher_layer():
    assert layering_violations() == []


def test_the_layers_are_acyclic_and_only_the_cli_imports_everything():
    others = set(ALLOWED) - {"cli"}
    assert ALLOWED["cli"] == others
    assert all(package not in allowed for package, allowed in ALLOWED.items())
    seen: set[str] = set()
    order = []
    while len(order) < len(ALLOWED):  # a topological order exists only without cycles
        ready = sorted(p for p in ALLOWED if p not in seen and ALLOWED[p] <= seen)
        assert ready, f"a cycle among {sorted(set(ALLOWED) - seen)}"
        seen.update(ready)
        order.extend(ready)
    assert order[0] == "kpulse" and order[-1] == "cli"


@pytest.mark.parametrize("source,expected", [
    ("from collectors.runner import CollectionService\n", ["kpulse/x.py imports collectors.runner"]),
    ("def f():\n    import dashboard.app\n", ["kpulse/x.py imports dashboard.app"]),
    ("from .y import z\n", []),
    ("import kpulse.errors\n", []),
])
def test_the_walk_finds_an_upward_import_even_inside_a_function(tmp_path, source, expected):
    (tmp_path / "kpulse").mkdir()
    (tmp_path / "kpulse" / "x.py").write_text(source)
    assert layering_violations(tmp_path, {"kpulse": set(), "collectors": {"kpulse"}, "dashboard": {"kpulse"}}) == expected
