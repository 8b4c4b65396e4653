"""The tests' own layout, checked by walking every import of every module under tests/ (including
imports inside functions and in the Python source a test hands to a subprocess): shared helpers
live in support modules (``tests/support.py`` and the non-test helpers beside it), a test module
never imports another test module nor anybody's underscore-private names, the helpers every
cluster test needs are defined once, and a ``test_*.py`` file holds tests."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent

SHARED_ONCE = ("free_port", "admin_for", "create_topic", "produce", "commit", "committed")
"""Helpers defined once, in tests/support.py (they were copied into several modules)."""

SOURCE_IMPORT = re.compile(r"\b(?:from|import)\s+(tests\.\w+)(?:\s+import\s+([\w ,]+))?")
"""An import written inside a string (the script of a subprocess)."""


def imports(tree: ast.AST) -> list[tuple[str, list[str], int]]:
    """``(module, imported names, line)`` of every import of a tests module, ``tests.``-relative
    imports resolved, plus those in string constants (code run by ``python -c``)."""
    found: list[tuple[str, list[str], int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, [], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = f"tests.{node.module or ''}".rstrip(".") if node.level else node.module or ""
            found.append((module, [alias.name for alias in node.names], node.lineno))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for match in SOURCE_IMPORT.finditer(node.value):
                names = [name.strip() for name in (match.group(2) or "").split(",") if name.strip()]
                found.append((match.group(1), names, node.lineno))
    return sorted(found, key=lambda item: item[2])


def layout_problems(root: Path = TESTS) -> list[str]:
    problems = []
    definitions: dict[str, list[str]] = {name: [] for name in SHARED_ONCE}
    for path in sorted(root.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for module, names, line in imports(tree):
            where = f"{path.name}:{line}"
            if module.startswith("tests.test_"):
                problems.append(f"{where} imports the test module {module}")
            private = [name for name in names if name.startswith("_")]
            if module.startswith("tests.") and private:
                problems.append(f"{where} imports {', '.join(private)} (private) from {module}")
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in definitions:
                definitions[node.name].append(path.name)
        if path.name.startswith("test_") and not any(
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_")
                for node in tree.body):
            problems.append(f"{path.name} is named as a test module but holds no test")
    for name, modules in definitions.items():
        if modules != ["support.py"]:
            problems.append(f"def {name} is in {', '.join(modules) or 'no module'}, not once in support.py")
    return problems


def test_no_test_module_imports_another_and_shared_helpers_are_defined_once():
    problems = layout_problems()
    assert not problems, "\n".join(problems)


def test_the_check_finds_each_kind_of_problem(tmp_path):
    (tmp_path / "support.py").write_text("".join(f"def {name}():\n    pass\n" for name in SHARED_ONCE))
    other = "tests.{}".format("test_b")  # spelled out, this file would trip its own check
    (tmp_path / "test_a.py").write_text(
        f"from {other} import helper\nfrom .dashboard_lake import _write\n\n\n"
        "def free_port():\n    pass\n\n\n"
        f"def test_a():\n    script = 'from {other} import admin_for, commit'\n")
    (tmp_path / "test_b.py").write_text("def helper():\n    import tests.support\n")
    assert layout_problems(tmp_path) == [
        "test_a.py:1 imports the test module tests.test_b",
        "test_a.py:2 imports _write (private) from tests.dashboard_lake",
        "test_a.py:10 imports the test module tests.test_b",
        "test_b.py is named as a test module but holds no test",
        "def free_port is in support.py, test_a.py, not once in support.py",
    ]
