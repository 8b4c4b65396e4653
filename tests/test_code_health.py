"""The linter and the type checker `make test` runs (scripts/check.sh) catch what they are there for:
an unused import, a wrong argument type, an unannotated function in the strict core, and a snapshot
field read under a name the model does not declare. Each finding is planted in a file of its own,
beside the code it imitates, and removed after."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


@pytest.fixture
def planted(tmp_path):
    """Writes a module into the tree (where the checker's per-folder rules apply), yields its path, removes it."""
    written: list[Path] = []

    def plant(relative: str, source: str) -> Path:
        path = ROOT / relative.replace("NAME", f"planted_{os.getpid()}")
        path.write_text(source)
        written.append(path)
        return path

    yield plant
    for path in written:
        path.unlink(missing_ok=True)


def mypy(path: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    """mypy on the planted file alone (the modules it imports are read, their own findings not reported)."""
    return subprocess.run([str(BIN / "mypy"), "--cache-dir", str(cache), "--follow-imports=silent",
                           str(path.relative_to(ROOT))],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_the_linter_fails_on_an_unused_import(planted):
    path = planted("dashboard/NAME.py", '"""Planted."""\n\nimport os\n')
    found = subprocess.run([str(BIN / "ruff"), "check", str(path)], cwd=ROOT, capture_output=True, text=True)
    assert found.returncode == 1 and "F401" in found.stdout, found.stdout + found.stderr


def test_the_checker_fails_on_a_wrong_argument_type(planted, tmp_path):
    path = planted("dashboard/NAME.py", '"""Planted."""\n\n\ndef twice(n: int) -> int:\n    return 2 * n\n\n\n'
                                        'twice("3")\n')
    found = mypy(path, tmp_path)
    assert found.returncode == 1 and "[arg-type]" in found.stdout, found.stdout + found.stderr


def test_the_core_is_checked_in_strict_mode_and_the_rest_at_the_default_level(planted, tmp_path):
    source = '"""Planted."""\n\n\ndef untyped(value):\n    return value\n'
    core = mypy(planted("kpulse/NAME.py", source), tmp_path)
    assert core.returncode == 1 and "[no-untyped-def]" in core.stdout, core.stdout + core.stderr
    page = mypy(planted("dashboard/NAME_page.py", source), tmp_path)
    assert page.returncode == 0, page.stdout + page.stderr


def test_a_snapshot_field_read_under_a_wrong_name_fails_the_checker(planted, tmp_path):
    """Readers index the snapshot through its model (kpulse/snapshot.py): renaming a field, or a typo
    in a reader, is a type error, not a silent None on a page."""
    reader = ('"""Planted."""\n\nfrom kpulse.snapshot import Snapshot\n\n\n'
              'def brokers_up(snapshot: Snapshot) -> int | None:\n'
              '    return snapshot["cluster"]["brokers_upp"]\n')
    found = mypy(planted("dashboard/NAME.py", reader), tmp_path)
    assert found.returncode == 1 and "brokers_upp" in found.stdout, found.stdout + found.stderr
    right = mypy(planted("dashboard/NAME_right.py", reader.replace("brokers_upp", "brokers_up")), tmp_path)
    assert right.returncode == 0, right.stdout + right.stderr


def test_a_snapshot_field_read_with_get_under_a_wrong_name_fails_the_checker(planted, tmp_path):
    """``.get`` on a TypedDict is checked too (scripts/mypy_typeddict_get.py): mypy alone types an
    undeclared key's ``.get`` as ``object`` and says nothing."""
    reader = ('"""Planted."""\n\nfrom kpulse.snapshot import ConsumerGroup\n\n\n'
              'def lag(group: ConsumerGroup) -> object:\n'
              '    return group.get("total_lagg")\n')
    found = mypy(planted("dashboard/NAME.py", reader), tmp_path)
    assert found.returncode == 1 and "total_lagg" in found.stdout, found.stdout + found.stderr
    right = mypy(planted("dashboard/NAME_right.py", reader.replace("total_lagg", "total_lag")), tmp_path)
    assert right.returncode == 0, right.stdout + right.stderr


def test_every_module_named_for_strict_mode_exists():
    """A strict section naming a module that was moved or renamed would silently check nothing."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    strict = [section["module"] for section in config["overrides"] if section.get("disallow_untyped_defs")]
    assert strict, "no strict section in pyproject.toml"
    for modules in strict:
        for module in modules:
            base = ROOT / module.removesuffix(".*").replace(".", "/")
            found = base.is_dir() if module.endswith(".*") else base.with_suffix(".py").is_file()
            assert found, f"{module} is named for strict mode in pyproject.toml but is not in the tree"
