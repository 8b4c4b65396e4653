"""Where the configuration comes from: a YAML file, ``$KPULSE_CONFIG``, or the built-in default
(the embedded local cluster)."""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

import yaml

from kpulse import home
from kpulse.config.errors import ConfigError
from kpulse.config.model import KpulseConfig
from kpulse.config.parse import parse_config
from kpulse.local_layout import DEFAULT_PORT_BASE, ClusterLayout

CONFIG_ENV_VAR = "KPULSE_CONFIG"
DEFAULT_SOURCE = "built-in local cluster default"
STREAMS_DEMO_APPLICATION_ID = "kpulse-demo-streams"
STREAMS_DEMO_INSTANCES = (1, 2)


def reference_config_path() -> Path:
    """The documented reference config shipped with the package: every key, with its meaning,
    default and allowed values."""
    return home.PACKAGE_DIR / "reference-config.yaml"


def load_config(
    path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> KpulseConfig:
    """The configuration in ``path``; when ``path`` is ``None``, the file named by
    ``$KPULSE_CONFIG``, else :func:`default_config`. ``environ`` (default ``os.environ``) feeds
    ``${VAR}`` references and ``KPULSE_CONFIG``."""
    environ = os.environ if environ is None else environ
    if path is None:
        path = environ.get(CONFIG_ENV_VAR) or None
        if path is None:
            return default_config(environ)
    file = Path(path).expanduser()
    source = str(file)
    data = read_yaml(file)
    try:
        return parse_config(data, source=source, base_dir=file.resolve().parent, environ=environ)
    except ConfigError as error:
        error.source = source
        raise


def default_config(environ: Mapping[str, str] | None = None) -> KpulseConfig:
    """One cluster, ``local``: the embedded local cluster and its Streams demo, on the ports of
    :class:`ClusterLayout` (``$KPULSE_PORT_BASE`` read from ``environ``)."""
    environ = os.environ if environ is None else environ
    base = environ.get("KPULSE_PORT_BASE")
    if base is not None and not (base.strip().isascii() and base.strip().isdigit()):
        raise ConfigError(f"KPULSE_PORT_BASE: expected a port number, got {base!r}",
                          source=DEFAULT_SOURCE)
    layout = ClusterLayout.from_base(int(base) if base is not None else DEFAULT_PORT_BASE)
    cluster: dict[str, Any] = {
        "name": "local",
        "bootstrap_servers": layout.bootstrap_servers,
        "metrics": {
            "source": "jmx_exporter",
            "broker_endpoints": {node.node_id: node.metrics_url for node in layout.nodes},
        },
        "streams_apps": [{
            "application_id": STREAMS_DEMO_APPLICATION_ID,
            "metrics_endpoints": [f"http://127.0.0.1:{layout.streams_metrics_port(j)}/metrics"
                                  for j in STREAMS_DEMO_INSTANCES],
            "expected_instances": len(STREAMS_DEMO_INSTANCES),
        }],
        # the demo's made-up records (demo.*): an operator of the local cluster may reveal them, so the
        # poison record's workflow is whole on first start; any other topic stays hidden
        "records": {"visible_topics": [r"demo\..*"]},
    }
    data = {"clusters": [cluster], "lake": {"path": str(home.state_dir() / "lake")},
            "exporter": {"port": layout.exporter_port, "host": "127.0.0.1"},
            # Streamlit's usual 8501 beside the default cluster, base + 500 beside any other.
            "dashboard": {"port": 8501 if layout.base == DEFAULT_PORT_BASE else layout.base + 500,
                          "host": "127.0.0.1"}}
    return parse_config(data, source=DEFAULT_SOURCE, base_dir=Path.cwd(), environ=environ)


def read_yaml(file: Path) -> Any:
    """The parsed document in ``file``; duplicate keys are refused (YAML would keep the last)."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {file}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read config file {file}: {error}", source=str(file)) from None
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = error.problem or error.context or "cannot parse"
        if error.problem and error.context and error.context_mark:
            problem += (f" ({error.context} that starts at line {error.context_mark.line + 1},"
                        f" column {error.context_mark.column + 1})")
        raise ConfigError(f"{file}{where}: invalid YAML: {problem}", source=str(file)) from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{file}: invalid YAML: {error}", source=str(file)) from None


class _StrictLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                continue  # SafeLoader reports it
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)
