"""kafka-python is imported by one thread before the collectors' threads use it
(``kpulse/kafka/kafka_python.py``): two collectors importing its protocol modules for the first time
at once met Python's import deadlock detection, and the share groups collector was down for five
minutes (``kpulse collect`` on the demo, in tests/test_grafana_dashboards.py)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from kpulse.kafka.kafka_python import MODULES

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("alerting", "cli", "collectors", "dashboard", "exporters", "kpulse", "operations", "spark_jobs")


def kafka_python_imports() -> dict[str, set[str]]:
    """kafka-python module -> the product files that import it (``from kafka.x import y``, ``import kafka.x``)."""
    found: dict[str, set[str]] = {}
    for folder in PRODUCT:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = ([node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                         else [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
                for name in names:
                    if name == "kafka" or name.startswith("kafka."):
                        found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_kafka_python_module_the_product_imports_is_preloaded():
    imported = kafka_python_imports()
    assert "kafka.protocol.consumer" in imported  # the scan sees the lazy imports inside functions
    assert {name: sorted(files) for name, files in imported.items() if name not in MODULES} == {}


def test_the_collection_service_has_kafka_python_loaded_before_its_threads_start(tmp_path):
    config = tmp_path / "kpulse.yaml"
    config.write_text(json.dumps({"clusters": [{"name": "c", "bootstrap_servers": "127.0.0.1:9"}],
                                  "lake": {"path": str(tmp_path / "lake")}}))
    script = ("import json, sys\n"
              "from collectors.runner import CollectionService\n"
              "from kpulse.config import load_config\n"
              "before = 'kafka.protocol.consumer' in sys.modules\n"
              "service = CollectionService(load_config(sys.argv[1]))\n"
              f"print(json.dumps([before, [m for m in {list(MODULES)!r} if m not in sys.modules]]))\n")
    result = subprocess.run([sys.executable, "-c", script, str(config)], capture_output=True, text=True, cwd=ROOT,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    before, missing = json.loads(result.stdout.strip().splitlines()[-1])
    assert before is False, "importing the runner already loads kafka-python: this test shows nothing"
    assert missing == []
