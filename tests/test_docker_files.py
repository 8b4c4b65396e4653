"""Static checks of the Docker deployment under docker/: no Docker engine, no network.

Each check is a small function returning a list of problems (empty when fine), run once on the real
files and once on a deliberately broken in-memory input, so that every check is shown able to fail.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCKER_DIR = ROOT / "docker"
COMPOSE_FILE = DOCKER_DIR / "compose.yaml"
PROMETHEUS_FILE = DOCKER_DIR / "prometheus" / "prometheus.yml"
KPULSE_CONFIG_FILE = DOCKER_DIR / "kpulse.yaml"
ALERTMANAGER_FILE = DOCKER_DIR / "alertmanager" / "alertmanager.yml"
GRAFANA_DIR = DOCKER_DIR / "grafana"
GRAFANA_DATASOURCES = GRAFANA_DIR / "provisioning" / "datasources" / "prometheus.yml"
GRAFANA_PROVIDERS = GRAFANA_DIR / "provisioning" / "dashboards" / "kpulse.yml"
AMTOOL = "/usr/bin/amtool"
POM = ROOT / "localkafka" / "java" / "pom.xml"
# Every Dockerfile under docker/ is built with the repository root as context (docker/README.md).
DOCKERFILES = sorted(DOCKER_DIR.rglob("Dockerfile"))


# --- loading ----------------------------------------------------------------------------------------


def load_yaml(path: Path):
    return yaml.safe_load(path.read_text())


def yaml_parse_problems(paths: list[Path]) -> list[str]:
    problems = []
    for path in paths:
        try:
            if load_yaml(path) is None:
                problems.append(f"{path}: empty document")
        except yaml.YAMLError as error:
            problems.append(f"{path}: {error}")
    return problems


def compose() -> dict:
    return load_yaml(COMPOSE_FILE)


def services_of(compose_doc: dict) -> dict[str, dict]:
    return {name: (spec or {}) for name, spec in (compose_doc.get("services") or {}).items()}


# --- Dockerfiles ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case
    value: str
    line: int


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined and comment lines dropped (as Docker does)."""
    instructions: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not pending):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        joined = " ".join(part for part in pending if part)
        pending = []
        keyword, _, value = joined.partition(" ")
        instructions.append(Instruction(keyword.upper(), value.strip(), start))
    if pending:
        joined = " ".join(part for part in pending if part)
        keyword, _, value = joined.partition(" ")
        instructions.append(Instruction(keyword.upper(), value.strip(), start))
    return instructions


def image_ref_problems(ref: str) -> list[str]:
    """An image must be pinned (explicit tag other than `latest`, or a digest) and named plainly,
    without a registry host."""
    problems = []
    if "$" in ref:
        return [f"{ref}: unresolved variable in image name"]
    name, _, digest = ref.partition("@")
    first, slash, _ = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        problems.append(f"{ref}: names a registry host; use the plain image name")
    last = name.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    if digest:
        if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
            problems.append(f"{ref}: malformed digest")
    elif not tag:
        problems.append(f"{ref}: not pinned (no tag)")
    elif tag == "latest":
        problems.append(f"{ref}: not pinned (tag 'latest')")
    return problems


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def dockerfile_from_problems(text: str) -> list[str]:
    """Every FROM names a pinned image or an earlier stage."""
    problems = []
    global_args: dict[str, str] = {}
    stages: set[str] = set()
    seen_from = False
    for ins in parse_dockerfile(text):
        if ins.keyword == "ARG" and not seen_from:
            name, _, default = ins.value.partition("=")
            global_args[name.strip()] = default.strip().strip('"')
        if ins.keyword != "FROM":
            continue
        seen_from = True
        words = [w for w in ins.value.split() if not w.startswith("--")]
        if not words:
            problems.append(f"line {ins.line}: FROM without an image")
            continue
        image = _VAR.sub(lambda m: global_args.get(m.group(1) or m.group(2), m.group(0)), words[0])
        if len(words) >= 3 and words[1].lower() == "as":
            stages_after = words[2].lower()
        else:
            stages_after = None
        if image.lower() in stages or image == "scratch":
            pass
        else:
            problems += [f"line {ins.line}: {p}" for p in image_ref_problems(image)]
        if stages_after:
            stages.add(stages_after)
    if not seen_from:
        problems.append("no FROM instruction")
    return problems


def _dockerignore_regex(pattern: str) -> re.Pattern:
    out, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):  # any number of directories, including none
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = pattern.find("]", i)
            if end == -1:
                out.append(re.escape(char))
            else:
                out.append(pattern[i:end + 1])
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return re.compile("".join(out) + r"\Z")


def dockerignored(path: str, dockerignore_text: str) -> bool:
    """Whether .dockerignore drops `path` (relative, posix) from the context: a pattern matches the
    path or one of its parent directories; the last matching pattern wins; `!` re-includes."""
    ignored = False
    candidates = [path] + [str(parent) for parent in PurePosixPath(path).parents if str(parent) != "."]
    for raw in dockerignore_text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
        if pattern.startswith("./"):
            pattern = pattern[2:]
        regex = _dockerignore_regex(pattern)
        if any(regex.match(candidate) for candidate in candidates):
            ignored = not negate
    return ignored


def dockerfile_copy_problems(text: str, context: Path, dockerignore_text: str = "") -> list[str]:
    """Every COPY/ADD source (not `--from=` ones) exists in the build context and is not excluded
    by its .dockerignore."""
    problems = []
    for ins in parse_dockerfile(text):
        if ins.keyword not in ("COPY", "ADD"):
            continue
        value = ins.value
        flags = []
        while value.startswith("--"):
            flag, _, value = value.partition(" ")
            flags.append(flag)
            value = value.strip()
        if any(flag.startswith("--from=") for flag in flags):
            continue
        if value.startswith("<<"):
            continue  # heredoc: no source files
        words = json.loads(value) if value.startswith("[") else value.split()
        if len(words) < 2:
            problems.append(f"line {ins.line}: {ins.keyword} needs a source and a destination")
            continue
        for source in words[:-1]:
            if re.match(r"^[a-z]+://|^git@", source):
                problems.append(f"line {ins.line}: {source}: fetches from the network; use pip or Maven")
                continue
            relative = os.path.normpath(source.lstrip("/"))
            if relative == ".." or relative.startswith("../"):
                problems.append(f"line {ins.line}: {source}: outside the build context")
                continue
            if any(char in relative for char in "*?["):
                matches = [p.relative_to(context).as_posix() for p in context.glob(relative)]
            else:
                matches = [relative] if (context / relative).exists() else []
            if not matches:
                problems.append(f"line {ins.line}: {source}: not found in build context {context}")
            elif all(dockerignored(match, dockerignore_text) for match in matches if match != "."):
                if relative != ".":
                    problems.append(f"line {ins.line}: {source}: excluded by .dockerignore")
    return problems


def dockerfile_has_healthcheck(text: str) -> bool:
    checks = [ins for ins in parse_dockerfile(text) if ins.keyword == "HEALTHCHECK"]
    return bool(checks) and checks[-1].value.strip().upper() != "NONE"


# --- compose ----------------------------------------------------------------------------------------


def compose_builds(compose_doc: dict, base: Path) -> list[tuple[str, Path, Path]]:
    """(service, Dockerfile, context) of every service that builds."""
    builds = []
    for name, spec in services_of(compose_doc).items():
        build = spec.get("build")
        if build is None:
            continue
        if isinstance(build, str):
            build = {"context": build}
        context = (base / build.get("context", ".")).resolve()
        builds.append((name, (context / build.get("dockerfile", "Dockerfile")).resolve(), context))
    return builds


def compose_build_problems(compose_doc: dict, base: Path) -> list[str]:
    problems = []
    for name, dockerfile, context in compose_builds(compose_doc, base):
        if not context.is_dir():
            problems.append(f"{name}: build context {context} does not exist")
        elif not dockerfile.is_file():
            problems.append(f"{name}: Dockerfile {dockerfile} does not exist")
    return problems


def _volume_entries(spec: dict) -> list[tuple[str, str | None]]:
    """(type, source) of a service's volumes: type 'bind', 'volume' or 'anonymous'."""
    entries = []
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict):
            kind = volume.get("type", "volume")
            source = volume.get("source")
            entries.append((kind if source or kind != "volume" else "anonymous", source))
            continue
        parts = str(volume).split(":")
        if len(parts) == 1:
            entries.append(("anonymous", None))
            continue
        source = parts[0]
        kind = "bind" if source.startswith((".", "/", "~")) else "volume"
        entries.append((kind, source))
    return entries


def compose_bind_mount_problems(compose_doc: dict, base: Path) -> list[str]:
    problems = []
    for name, spec in services_of(compose_doc).items():
        for kind, source in _volume_entries(spec):
            if kind == "bind" and (source is None or not (base / os.path.expanduser(source)).exists()):
                problems.append(f"{name}: bind-mount source {source} does not exist (relative to {base})")
    return problems


def compose_named_volume_problems(compose_doc: dict) -> list[str]:
    declared = set(compose_doc.get("volumes") or {})
    problems = []
    for name, spec in services_of(compose_doc).items():
        for kind, source in _volume_entries(spec):
            if kind == "volume" and source not in declared:
                problems.append(f"{name}: named volume {source} is not declared under top-level volumes")
    return problems


def compose_image_problems(compose_doc: dict) -> list[str]:
    problems = []
    for name, spec in services_of(compose_doc).items():
        if "image" in spec:
            problems += [f"{name}: {p}" for p in image_ref_problems(str(spec["image"]))]
        elif "build" not in spec:
            problems.append(f"{name}: neither image nor build")
    return problems


def _published(entry) -> list[tuple[str, int, str]]:
    """(host ip, host port, protocol) that one `ports:` entry publishes."""
    if isinstance(entry, int):
        return []
    if isinstance(entry, dict):
        published = entry.get("published")
        if published in (None, ""):
            return []
        ip, host, protocol = str(entry.get("host_ip", "")), str(published), entry.get("protocol", "tcp")
    else:
        text, _, protocol = str(entry).partition("/")
        protocol = protocol or "tcp"
        ip = ""
        if text.startswith("["):
            ip, _, text = text[1:].partition("]")
            text = text.lstrip(":")
        parts = text.split(":")
        if len(parts) == 1:
            return []
        if len(parts) == 3:
            ip = parts[0]
        host = parts[-2]
        if not host:
            return []
    low, _, high = host.partition("-")
    return [(ip, port, protocol) for port in range(int(low), int(high or low) + 1)]


def compose_port_problems(compose_doc: dict) -> list[str]:
    wildcard = {"", "0.0.0.0", "::"}
    seen: list[tuple[str, str, int, str]] = []
    problems = []
    for name, spec in services_of(compose_doc).items():
        for entry in spec.get("ports") or []:
            for ip, port, protocol in _published(entry):
                for other, other_ip, other_port, other_protocol in seen:
                    if (port, protocol) == (other_port, other_protocol) and (
                            ip == other_ip or ip in wildcard or other_ip in wildcard):
                        problems.append(f"host port {port}/{protocol} published by both {other} and {name}")
                seen.append((name, ip, port, protocol))
    return problems


CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}


def _depends_on(spec: dict) -> dict[str, str]:
    depends = spec.get("depends_on") or {}
    if isinstance(depends, list):
        return {name: "service_started" for name in depends}
    return {name: (cond or {}).get("condition", "service_started") for name, cond in depends.items()}


def compose_depends_on_problems(compose_doc: dict) -> list[str]:
    services = services_of(compose_doc)
    problems = []
    for name, spec in services.items():
        for dependency, condition in _depends_on(spec).items():
            if dependency not in services:
                problems.append(f"{name}: depends_on names undefined service {dependency}")
            if dependency == name:
                problems.append(f"{name}: depends on itself")
            if condition not in CONDITIONS:
                problems.append(f"{name}: unknown depends_on condition {condition}")
    return problems


def compose_healthy_dependency_problems(compose_doc: dict, base: Path) -> list[str]:
    """A `service_healthy` dependency must have a healthcheck: in compose, or in its Dockerfile."""
    services = services_of(compose_doc)
    dockerfiles = {name: dockerfile for name, dockerfile, _ in compose_builds(compose_doc, base)}
    problems = []
    for name, spec in services.items():
        for dependency, condition in _depends_on(spec).items():
            if condition != "service_healthy" or dependency not in services:
                continue
            check = services[dependency].get("healthcheck")
            if check is not None:
                disabled = check.get("disable") or check.get("test") in (["NONE"], "NONE")
                if not disabled:
                    continue
            elif dependency in dockerfiles and dockerfiles[dependency].is_file() and \
                    dockerfile_has_healthcheck(dockerfiles[dependency].read_text()):
                continue
            problems.append(f"{name}: waits for {dependency} to be healthy, which has no healthcheck")
    return problems


def _service_hostnames(compose_doc: dict) -> set[str]:
    names = set()
    for name, spec in services_of(compose_doc).items():
        names.add(name)
        for key in ("hostname", "container_name"):
            if spec.get(key):
                names.add(spec[key])
    return names


# --- Prometheus and kpulse configuration ------------------------------------------------------------


def prometheus_target_problems(prometheus_doc: dict, compose_doc: dict) -> list[str]:
    hosts = _service_hostnames(compose_doc)
    problems = []
    jobs = prometheus_doc.get("scrape_configs") or []
    if not jobs:
        problems.append("no scrape_configs")
    for job in jobs:
        static = job.get("static_configs") or []
        if not static:
            problems.append(f"job {job.get('job_name')}: no static targets")
        for group in static:
            for target in group.get("targets") or []:
                host, _, port = str(target).rpartition(":")
                if not port.isdigit():
                    problems.append(f"job {job.get('job_name')}: target {target} has no port")
                if (host or target) not in hosts:
                    problems.append(f"job {job.get('job_name')}: target {target} is not a compose service")
    return problems


def _mount_targets(spec: dict) -> list[str]:
    targets = []
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict):
            targets.append(volume.get("target", ""))
        else:
            parts = str(volume).split(":")
            targets.append(parts[1] if len(parts) > 1 else parts[0])
    return targets


def prometheus_rule_file_problems(prometheus_doc: dict, compose_doc: dict,
                                  service: str = "prometheus") -> list[str]:
    """Every rule_files entry is mounted into the Prometheus service."""
    targets = _mount_targets(services_of(compose_doc).get(service, {}))
    problems = []
    for pattern in prometheus_doc.get("rule_files") or []:
        if not any(fnmatch.fnmatch(target, pattern) for target in targets):
            problems.append(f"rule_files {pattern}: nothing mounted there in service {service}")
    return problems


def alert_rule_problems(rules_doc: dict) -> list[str]:
    problems = []
    groups = (rules_doc or {}).get("groups") or []
    if not groups:
        problems.append("no rule groups")
    for group in groups:
        for rule in group.get("rules") or []:
            if not rule.get("expr") or not (rule.get("alert") or rule.get("record")):
                problems.append(f"group {group.get('name')}: rule {rule} needs expr and alert/record")
    return problems


def kpulse_wiring_problems(kpulse_doc: dict, compose_doc: dict, prometheus_doc: dict) -> list[str]:
    """docker/kpulse.yaml points at compose services, and Prometheus scrapes kpulse's exporter port."""
    hosts = _service_hostnames(compose_doc)
    problems = []
    for cluster in kpulse_doc.get("clusters") or []:
        for server in str(cluster.get("bootstrap_servers", "")).split(","):
            if server.strip().rpartition(":")[0] not in hosts:
                problems.append(f"cluster {cluster.get('name')}: bootstrap {server} is not a compose service")
        url = (cluster.get("metrics") or {}).get("prometheus_url")
        if url and urlsplit(url).hostname not in hosts:
            problems.append(f"cluster {cluster.get('name')}: prometheus_url {url} is not a compose service")
    exporter_port = (kpulse_doc.get("exporter") or {}).get("port")
    collect_targets = [
        str(target) for job in prometheus_doc.get("scrape_configs") or []
        for group in job.get("static_configs") or [] for target in group.get("targets") or []
        if str(target).startswith("kpulse-collect:")
    ]
    if not collect_targets:
        problems.append("Prometheus does not scrape kpulse-collect")
    for target in collect_targets:
        if target != f"kpulse-collect:{exporter_port}":
            problems.append(f"Prometheus scrapes {target} but kpulse's exporter port is {exporter_port}")
    return problems


def alertmanager_wiring_problems(kpulse_doc: dict, compose_doc: dict) -> list[str]:
    """docker/kpulse.yaml sends its alerts to a compose service publishing Alertmanager, whose config
    file is the one mounted."""
    hosts = _service_hostnames(compose_doc)
    urls = ((kpulse_doc.get("alerting") or {}).get("alertmanager") or {}).get("urls") or []
    problems = [] if urls else ["kpulse.yaml sends its alerts to no Alertmanager"]
    problems += [f"alertmanager url {url} is not a compose service" for url in urls
                 if urlsplit(url).hostname not in hosts]
    service = services_of(compose_doc).get("alertmanager")
    if service is None:
        return problems + ["no alertmanager service"]
    mounted = any(str(volume).startswith("./alertmanager/alertmanager.yml:") for volume in service.get("volumes") or [])
    if not mounted:
        problems.append("the alertmanager service does not mount ./alertmanager/alertmanager.yml")
    if "--config.file=/etc/alertmanager/alertmanager.yml" not in (service.get("command") or []):
        problems.append("the alertmanager service does not read /etc/alertmanager/alertmanager.yml")
    return problems


def grafana_wiring_problems(compose_doc: dict, datasources_doc: dict, providers_doc: dict, prometheus_doc: dict,
                            base: Path, service: str = "grafana") -> list[str]:
    """The Grafana service mounts its provisioning; its Prometheus data source is a compose service
    with the Prometheus scrape interval as ``timeInterval`` (Grafana's ``$__rate_interval``); each
    file provider's path is mounted from a directory of dashboards, whose ``$datasource`` defaults
    to a provisioned data source."""
    spec = services_of(compose_doc).get(service)
    if spec is None:
        return [f"no {service} service"]
    hosts = _service_hostnames(compose_doc)
    mounts = {target: source for source, target in (
        (str(v).split(":")[0], str(v).split(":")[1]) for v in spec.get("volumes") or [] if ":" in str(v))}
    problems = [] if mounts.get("/etc/grafana/provisioning") == "./grafana/provisioning" else [
        f"{service} does not mount ./grafana/provisioning at /etc/grafana/provisioning"]
    scrape = (prometheus_doc.get("global") or {}).get("scrape_interval", "1m")
    uids = set()
    for source in datasources_doc.get("datasources") or []:
        uids.add(source.get("uid"))
        if source.get("type") == "prometheus":
            if urlsplit(str(source.get("url"))).hostname not in hosts:
                problems.append(f"data source {source.get('name')}: {source.get('url')} is not a compose service")
            if (source.get("jsonData") or {}).get("timeInterval") != scrape:
                problems.append(f"data source {source.get('name')}: timeInterval is not Prometheus' scrape interval "
                                f"{scrape}")
    if not uids:
        problems.append("no data source provisioned")
    providers = providers_doc.get("providers") or []
    if not providers:
        problems.append("no dashboard provider")
    for provider in providers:
        path = str((provider.get("options") or {}).get("path"))
        source = mounts.get(path)
        dashboards = sorted((base / source).glob("*.json")) if source else []
        if not dashboards:
            problems.append(f"dashboard provider {provider.get('name')}: no dashboards mounted at {path}")
        for dashboard in dashboards:
            variables = {v.get("name"): v for v in json.loads(dashboard.read_text()).get("templating", {}).get("list", [])}
            default = ((variables.get("datasource") or {}).get("current") or {}).get("value")
            if default not in uids:
                problems.append(f"{dashboard.name}: $datasource defaults to {default}, not a provisioned data source")
    return problems


def amtool_problems(path: Path) -> list[str]:
    """``amtool check-config`` on ``path``: its output when it fails."""
    result = subprocess.run([AMTOOL, "check-config", str(path)], capture_output=True, text=True, timeout=60)
    return [] if result.returncode == 0 else [(result.stdout + result.stderr).strip()]


# === tests on the real files ========================================================================


def test_every_yaml_file_under_docker_parses():
    paths = sorted([*DOCKER_DIR.rglob("*.yaml"), *DOCKER_DIR.rglob("*.yml")])
    assert COMPOSE_FILE in paths and PROMETHEUS_FILE in paths and KPULSE_CONFIG_FILE in paths
    assert yaml_parse_problems(paths) == []


def test_every_json_file_under_docker_parses():
    paths = sorted(DOCKER_DIR.rglob("*.json"))
    assert len(paths) >= 6  # kpulse's Grafana dashboards
    problems = []
    for path in paths:
        try:
            json.loads(path.read_text())
        except ValueError as error:
            problems.append(f"{path}: {error}")
    assert problems == []


def test_compose_builds_exist():
    builds = compose_builds(compose(), DOCKER_DIR)
    assert {dockerfile for _, dockerfile, _ in builds} == {p.resolve() for p in DOCKERFILES}
    assert compose_build_problems(compose(), DOCKER_DIR) == []


def test_compose_bind_mounts_exist():
    assert compose_bind_mount_problems(compose(), DOCKER_DIR) == []


def test_compose_images_pinned():
    assert compose_image_problems(compose()) == []


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_dockerfile_from_pinned(dockerfile):
    assert dockerfile_from_problems(dockerfile.read_text()) == []


def _builds_to_check() -> list[tuple[Path, Path]]:
    pairs = {(p.resolve(), ROOT) for p in DOCKERFILES}
    pairs |= {(dockerfile, context) for _, dockerfile, context in compose_builds(compose(), DOCKER_DIR)}
    return sorted(pairs)


@pytest.mark.parametrize("dockerfile,context", _builds_to_check(),
                         ids=lambda p: str(p.relative_to(ROOT)) if p != ROOT else ".")
def test_dockerfile_copy_sources_exist(dockerfile, context):
    ignore = context / ".dockerignore"
    ignore_text = ignore.read_text() if ignore.is_file() else ""
    assert dockerfile_copy_problems(dockerfile.read_text(), context, ignore_text) == []


def test_broker_jmx_rules_exist():
    # Referenced by docker/kafka/Dockerfile (written alongside it).
    assert (ROOT / "localkafka" / "java" / "jmx-exporter-broker.yaml").is_file()


def test_kafka_image_matches_pom_version():
    version = re.search(r"<kafka.version>([^<]+)</kafka.version>", POM.read_text()).group(1)
    kafka_dockerfile = (DOCKER_DIR / "kafka" / "Dockerfile").read_text()
    froms = [ins.value.split()[0] for ins in parse_dockerfile(kafka_dockerfile)
             if ins.keyword == "FROM"]
    assert f"apache/kafka:{version}" in froms
    kafka_images = {spec.get("image") for name, spec in services_of(compose()).items()
                    if name.startswith("kafka-")}
    assert all(version in str(image) for image in kafka_images), kafka_images


def test_compose_host_ports_do_not_clash():
    assert compose_port_problems(compose()) == []
    published = {port for spec in services_of(compose()).values()
                 for entry in spec.get("ports") or [] for _, port, _ in _published(entry)}
    assert {8501, 9090, 3000, 8080, 29092, 29093, 29094} <= published


def test_compose_depends_on_defined_services():
    assert compose_depends_on_problems(compose()) == []
    assert compose_healthy_dependency_problems(compose(), DOCKER_DIR) == []


def test_compose_named_volumes_declared():
    assert compose_named_volume_problems(compose()) == []


def test_compose_has_the_expected_services():
    expected = {"kafka-1", "kafka-2", "kafka-3", "prometheus", "grafana", "alertmanager", "spark-master",
                "spark-worker", "kpulse-collect", "kpulse-slo", "kpulse-ui"}
    assert expected <= set(services_of(compose()))


def test_prometheus_targets_are_compose_services():
    prometheus_doc = load_yaml(PROMETHEUS_FILE)
    assert prometheus_target_problems(prometheus_doc, compose()) == []
    targets = {target for job in prometheus_doc["scrape_configs"]
               for group in job["static_configs"] for target in group["targets"]}
    assert {"kafka-1:7071", "kafka-2:7071", "kafka-3:7071", "kpulse-collect:9308"} <= targets
    assert prometheus_rule_file_problems(prometheus_doc, compose()) == []
    assert alert_rule_problems(load_yaml(DOCKER_DIR / "prometheus" / "alerts.yml")) == []


def test_kpulse_config_wired_to_compose():
    assert kpulse_wiring_problems(load_yaml(KPULSE_CONFIG_FILE), compose(), load_yaml(PROMETHEUS_FILE)) == []


def kpulse_command_lines() -> list[list[str]]:
    """Every ``kpulse ...`` command of the compose services and the Dockerfiles' CMD lines."""
    lines = [service["command"] for service in services_of(compose()).values()
             if isinstance(service.get("command"), list) and service["command"][:1] == ["kpulse"]]
    for dockerfile in DOCKERFILES:
        for match in re.finditer(r"^CMD (\[.*\])$", dockerfile.read_text(), re.MULTILINE):
            command = json.loads(match.group(1))
            if command[:1] == ["kpulse"]:
                lines.append(command)
    return lines


def test_every_kpulse_command_of_the_deployment_parses():
    from cli.main import build_parser

    lines = kpulse_command_lines()
    assert len(lines) >= 4  # collect, slo run, dashboard (compose) and the image's CMD
    for line in lines:
        try:
            build_parser().parse_args(line[1:])
        except SystemExit:
            pytest.fail(f"not a valid kpulse command: {' '.join(line)}")


def test_kpulse_sends_its_alerts_to_the_compose_alertmanager():
    assert alertmanager_wiring_problems(load_yaml(KPULSE_CONFIG_FILE), compose()) == []
    config = load_yaml(ALERTMANAGER_FILE)
    assert config["route"]["group_by"] == ["alertname", "cluster"]  # the labels kpulse's alerts carry


def test_grafana_provisions_the_compose_prometheus_and_kpulses_dashboards():
    assert grafana_wiring_problems(compose(), load_yaml(GRAFANA_DATASOURCES), load_yaml(GRAFANA_PROVIDERS),
                                   load_yaml(PROMETHEUS_FILE), DOCKER_DIR) == []


@pytest.mark.skipif(not Path(AMTOOL).exists(), reason="amtool is not installed (make test installs it)")
def test_the_alertmanager_config_passes_amtool_check_config():
    assert amtool_problems(ALERTMANAGER_FILE) == []


def test_kpulse_config_loads():
    from kpulse.config import load_config

    load_config(KPULSE_CONFIG_FILE)


def test_the_containers_bind_every_interface_explicitly():
    """kpulse binds loopback by default; in a container that would answer nobody outside it."""
    from kpulse.config import load_config

    config = load_config(KPULSE_CONFIG_FILE)
    assert (config.exporter.host, config.dashboard.host) == ("0.0.0.0", "0.0.0.0")


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        self.send_response(200 if self.path == "/ok" else 503)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


def test_healthcheck_script():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    def probe(url: str) -> int:
        env = {**os.environ, "KPULSE_HEALTH_URL": url, "KPULSE_HEALTH_TIMEOUT": "5"}
        return subprocess.run([sys.executable, str(DOCKER_DIR / "healthcheck.py")], env=env,
                              capture_output=True, timeout=30).returncode

    try:
        assert probe(f"{base}/ok") == 0
        assert probe(f"{base}/broken") == 1
    finally:
        server.shutdown()
        server.server_close()
    assert probe(f"{base}/ok") == 1  # nothing listens any more


# === each check catches a broken input ==============================================================


def test_check_yaml_parse_catches_broken_file(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("services:\n  a: [unclosed\n")
    assert yaml_parse_problems([broken])


def test_check_build_catches_missing_dockerfile_and_context(tmp_path):
    doc = {"services": {"a": {"build": {"context": ".", "dockerfile": "nope/Dockerfile"}},
                        "b": {"build": "missing-dir"}}}
    problems = compose_build_problems(doc, tmp_path)
    assert len(problems) == 2 and "Dockerfile" in problems[0] and "context" in problems[1]


def test_check_bind_mount_catches_missing_source(tmp_path):
    (tmp_path / "present.yaml").write_text("x: 1\n")
    doc = {"services": {"a": {"volumes": ["./present.yaml:/etc/p.yaml:ro", "./absent.yaml:/etc/a.yaml",
                                          {"type": "bind", "source": "./gone", "target": "/g"},
                                          "named:/data"]}}}
    problems = compose_bind_mount_problems(doc, tmp_path)
    assert len(problems) == 2 and "absent.yaml" in problems[0] and "gone" in problems[1]


def test_check_images_catches_unpinned():
    doc = {"services": {"a": {"image": "prom/prometheus"}, "b": {"image": "python:latest"},
                        "c": {"image": "some.registry.example:5000/team/app:1.0"},
                        "d": {"image": "busybox@sha256:" + "0" * 64}, "e": {}}}
    problems = compose_image_problems(doc)
    assert [p.split(":")[0] for p in problems] == ["a", "b", "c", "e"]


def test_check_from_catches_unpinned_and_accepts_stages():
    dockerfile = """
ARG BASE=python:3.11.14-slim-bookworm
FROM maven:3.9.11-eclipse-temurin-17 AS jars
FROM ${BASE}
COPY --from=jars /a /a
FROM jars
FROM --platform=linux/amd64 ubuntu
FROM debian:latest AS later
"""
    problems = dockerfile_from_problems(dockerfile)
    assert len(problems) == 2 and "ubuntu" in problems[0] and "latest" in problems[1]
    assert dockerfile_from_problems("FROM undefinedstage\n")


def test_check_copy_catches_missing_sources(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("")
    (tmp_path / "req.txt").write_text("")
    dockerfile = """
FROM python:3.11.14-slim-bookworm
COPY req.txt app/main.py /src/
COPY --chown=1:1 app /src/app
COPY --from=build /nowhere /x
COPY ["app/*.py", "/src/"]
COPY missing.txt \\
     /src/
ADD app/absent.tar.gz /opt/
COPY ../outside /x
ADD https://example.invalid/x.tgz /x
COPY app/*.nope /src/
"""
    problems = dockerfile_copy_problems(dockerfile, tmp_path)
    assert len(problems) == 5, problems
    for expected in ("missing.txt", "absent.tar.gz", "outside", "network", "*.nope"):
        assert any(expected in p for p in problems), expected


def test_check_copy_catches_dockerignored_sources(tmp_path):
    for path in ("docker/health.py", "docker/kpulse.yaml", "localkafka/java/pom.xml", "req.txt"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    sources = ("docker/health.py", "docker/kpulse.yaml", "localkafka/java/pom.xml", "req.txt")
    dockerfile = "FROM python:3.11.14-slim-bookworm\n" + "".join(f"COPY {p} /x/\n" for p in sources)
    assert dockerfile_copy_problems(dockerfile, tmp_path, "docker\n!docker/kpulse.yaml\n**/*.xml\n") == [
        "line 2: docker/health.py: excluded by .dockerignore",
        "line 4: localkafka/java/pom.xml: excluded by .dockerignore",
    ]
    # `*` does not cross directories
    assert not dockerignored("docker/kpulse.yaml", "*.yaml")
    assert dockerignored("kpulse.yaml", "*.yaml")
    assert dockerignored("a/b/c.pyc", "**/*.pyc") and dockerignored("c.pyc", "**/*.pyc")


def test_check_ports_catches_clash():
    doc = {"services": {
        "a": {"ports": ["8080:8080", "127.0.0.1:9000:9000", "5000"]},
        "b": {"ports": [{"target": 80, "published": "8080"}, "127.0.0.2:9000:9000", "5000"]},
        "c": {"ports": ["29090-29092:9092", "9000:9000/udp"]},
        "d": {"ports": ["29092:1"]},
    }}
    problems = compose_port_problems(doc)
    assert problems == ["host port 8080/tcp published by both a and b",
                        "host port 29092/tcp published by both c and d"]


def test_check_depends_on_catches_undefined_service():
    doc = {"services": {"a": {"depends_on": ["b", "ghost"]},
                        "b": {"depends_on": {"a2": {"condition": "bogus"}}}}}
    problems = compose_depends_on_problems(doc)
    assert len(problems) == 3
    assert "ghost" in problems[0] and "a2" in problems[1] and "bogus" in problems[2]


def test_check_healthy_dependency_catches_missing_healthcheck(tmp_path):
    doc = {"services": {
        "db": {"image": "postgres:17.1"},
        "off": {"image": "redis:7.4.1", "healthcheck": {"disable": True}},
        "ok": {"image": "redis:7.4.1", "healthcheck": {"test": ["CMD", "true"]}},
        "app": {"image": "app:1", "depends_on": {"db": {"condition": "service_healthy"},
                                                 "off": {"condition": "service_healthy"},
                                                 "ok": {"condition": "service_healthy"}}},
    }}
    problems = compose_healthy_dependency_problems(doc, tmp_path)
    assert len(problems) == 2 and "db" in problems[0] and "off" in problems[1]


def test_check_named_volumes_catches_undeclared():
    doc = {"services": {"a": {"volumes": ["data:/data", "./local:/l", "/anon",
                                          {"type": "volume", "source": "other", "target": "/o"}]}},
           "volumes": {"data": None}}
    assert compose_named_volume_problems(doc) == [
        "a: named volume other is not declared under top-level volumes"]


def test_check_prometheus_targets_catches_unknown_host():
    doc = {"services": {"kafka-1": {}, "node": {"hostname": "alias"}}}
    prometheus_doc = {"scrape_configs": [{"job_name": "k", "static_configs": [
        {"targets": ["kafka-1:7071", "alias:1", "kafka-9:7071", "localhost:9090"]}]}]}
    problems = prometheus_target_problems(prometheus_doc, doc)
    assert len(problems) == 2 and "kafka-9" in problems[0] and "localhost" in problems[1]
    assert prometheus_target_problems({}, doc) == ["no scrape_configs"]


def test_check_prometheus_rule_files_and_alerts_catch_problems():
    doc = {"services": {"prometheus": {"volumes": ["./p.yml:/etc/prometheus/prometheus.yml"]}}}
    assert prometheus_rule_file_problems({"rule_files": ["/etc/prometheus/rules/*.yml"]}, doc)
    assert alert_rule_problems({"groups": [{"name": "g", "rules": [{"alert": "A"}]}]})
    assert alert_rule_problems({})


def test_check_kpulse_wiring_catches_mismatch():
    doc = {"services": {"kafka-1": {}, "prometheus": {}, "kpulse-collect": {}}}
    kpulse_doc = {"clusters": [{"name": "c", "bootstrap_servers": "kafka-1:9092,kafka-2:9092",
                                "metrics": {"prometheus_url": "http://prom:9090"}}],
                  "exporter": {"port": 9308}}
    prometheus_doc = {"scrape_configs": [{"job_name": "kpulse",
                                          "static_configs": [{"targets": ["kpulse-collect:9999"]}]}]}
    problems = kpulse_wiring_problems(kpulse_doc, doc, prometheus_doc)
    assert len(problems) == 3
    assert "kafka-2" in problems[0] and "prom:9090" in problems[1] and "9999" in problems[2]


def test_check_alertmanager_wiring_catches_mismatch():
    doc = {"services": {"alertmanager": {"volumes": ["./am.yml:/etc/alertmanager/alertmanager.yml"]}}}
    problems = alertmanager_wiring_problems({"alerting": {"alertmanager": {"urls": ["http://am:9093"]}}}, doc)
    assert len(problems) == 3
    assert "am:9093" in problems[0] and "does not mount" in problems[1] and "does not read" in problems[2]
    assert alertmanager_wiring_problems({}, {"services": {}}) == ["kpulse.yaml sends its alerts to no Alertmanager",
                                                                 "no alertmanager service"]


def test_check_grafana_wiring_catches_mismatch(tmp_path):
    (tmp_path / "boards").mkdir()
    (tmp_path / "boards" / "a.json").write_text(json.dumps({"templating": {"list": [
        {"name": "datasource", "type": "datasource", "current": {"value": "other-uid"}}]}}))
    doc = {"services": {"prometheus": {}, "grafana": {"volumes": ["./provisioning:/etc/grafana/provisioning",
                                                                  "./boards:/dashboards"]}}}
    datasources = {"datasources": [{"name": "P", "uid": "p", "type": "prometheus", "url": "http://prom:9090",
                                    "jsonData": {"timeInterval": "15s"}}]}
    providers = {"providers": [{"name": "k", "options": {"path": "/dashboards"}},
                               {"name": "empty", "options": {"path": "/nowhere"}}]}
    problems = grafana_wiring_problems(doc, datasources, providers, {"global": {"scrape_interval": "10s"}}, tmp_path)
    assert problems == [
        "grafana does not mount ./grafana/provisioning at /etc/grafana/provisioning",
        "data source P: http://prom:9090 is not a compose service",
        "data source P: timeInterval is not Prometheus' scrape interval 10s",
        "a.json: $datasource defaults to other-uid, not a provisioned data source",
        "dashboard provider empty: no dashboards mounted at /nowhere"]
    assert grafana_wiring_problems({"services": {}}, {}, {}, {}, tmp_path) == ["no grafana service"]


@pytest.mark.skipif(not Path(AMTOOL).exists(), reason="amtool is not installed (make test installs it)")
def test_check_amtool_catches_a_route_to_an_unknown_receiver(tmp_path):
    broken = tmp_path / "alertmanager.yml"
    broken.write_text(yaml.safe_dump({"route": {"receiver": "nobody"}, "receivers": [{"name": "on-call"}]}))
    [problem] = amtool_problems(broken)
    assert "nobody" in problem


def test_the_compose_alert_rules_are_what_kpulse_alerts_export_rules_writes_for_its_config():
    """docker/prometheus/alerts.yml is generated (`kpulse --config docker/kpulse.yaml alerts
    export-rules -o docker/prometheus/alerts.yml`); it must not drift from kpulse's own rules."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "cli.main", "--config", str(DOCKER_DIR / "kpulse.yaml"),
                             "alerts", "export-rules"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert (DOCKER_DIR / "prometheus" / "alerts.yml").read_text() == result.stdout


def test_the_image_copies_every_python_package_it_installs():
    """``pip install .`` in the image installs what pyproject.toml's package list finds in the
    build context: a package the Dockerfile does not copy is missing from the image (operations/
    was, until the layout of issue 14)."""
    import tomllib

    includes = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {pattern.rstrip("*") for pattern in includes}
    copied = set(re.findall(r"^COPY (\w+) \./\1$", (ROOT / "docker" / "Dockerfile").read_text(), re.M))
    assert packages - copied == set()
    assert packages == {p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file() and p.name != "tests"}
