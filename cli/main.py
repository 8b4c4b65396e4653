"""The ``kpulse`` command: one CLI, one subcommand per job.

Every failure a user can cause or meet (unreachable broker, bad config, missing Java) ends as one
line on stderr and exit status 1, never a Python traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from kpulse.errors import KpulseError
from kpulse.progress import Progress


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kpulse", description="Monitor Apache Kafka clusters and Kafka Streams applications.")
    parser.add_argument("--config", help="kpulse YAML config (default: $KPULSE_CONFIG, else the local cluster)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    commands.add_parser("setup", help="fetch Kafka and the JMX exporter from Maven Central, compile the demo app")

    up = commands.add_parser("up", help="start everything: local cluster, demo workload (or check a configured cluster)")
    up.add_argument("--no-demo", action="store_true", help="start the local cluster without the demo workload")
    down = commands.add_parser("down", help="stop everything `up` started")
    down.add_argument("--wipe", action="store_true", help="also delete the local cluster's data")

    cluster = commands.add_parser("cluster", help="the local three-node KRaft cluster")
    cluster_commands = cluster.add_subparsers(dest="action", required=True, metavar="ACTION")
    cluster_commands.add_parser("up", help="format and start the nodes; wait until ready (no-op when up)")
    cluster_down = cluster_commands.add_parser("down", help="stop every node, by PID")
    cluster_down.add_argument("--wipe", action="store_true", help="also delete data and logs")
    status = cluster_commands.add_parser("status", help="nodes, ports, metrics endpoints, PIDs")
    status.add_argument("--json", action="store_true")
    for action, text in (("stop-broker", "controlled shutdown of one node (SIGTERM)"),
                         ("kill-broker", "kill one node as in a crash (SIGKILL)"),
                         ("start-broker", "start one stopped node and wait until it is registered")):
        command = cluster_commands.add_parser(action, help=text)
        command.add_argument("node_id", type=int, metavar="ID")

    kafka_cli = commands.add_parser("kafka-cli", help="run an official Kafka command-line tool",
                                    description="Run an official Kafka tool from the pinned release, e.g. "
                                                "`kpulse kafka-cli kafka-topics --bootstrap-server 127.0.0.1:19091 --list`. "
                                                "With a config (--config or $KPULSE_CONFIG), the tool is pointed at the "
                                                "configured cluster: --bootstrap-server and a client config file with its "
                                                "security settings are added unless given.")
    kafka_cli.add_argument("--cluster", help="with a config: the configured cluster to use (default: the first)")
    kafka_cli.add_argument("--config", default=argparse.SUPPRESS, help="kpulse YAML config (before TOOL)")
    kafka_cli.add_argument("tool", help="tool name as in Kafka's bin/ (kafka-topics, kafka-consumer-groups, ...)")
    kafka_cli.add_argument("args", nargs=argparse.REMAINDER)

    demo = commands.add_parser("demo", help="the demo workload on the local cluster")
    demo_commands = demo.add_subparsers(dest="action", required=True, metavar="ACTION")
    demo_commands.add_parser("start", help="producers, consumer groups of every kind (classic, KIP-848, "
                             "Streams, share) and the Streams apps")
    demo_commands.add_parser("stop", help="stop every demo process, by PID")
    demo_status = demo_commands.add_parser("status", help="demo processes and whether they run")
    demo_status.add_argument("--json", action="store_true")

    collect = commands.add_parser("collect", help="run the collectors (until stopped, or --once)")
    collect.add_argument("--once", action="store_true", help="collect one snapshot (two readings 2 s apart) and exit")
    collect.add_argument("--json", action="store_true", help="with --once: print the snapshot as JSON")
    collect.add_argument("--cluster", help="only this configured cluster (default: all)")

    alerts = commands.add_parser("alerts", help="alert rules")
    alerts_commands = alerts.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = alerts_commands.add_parser("export-rules", help="kpulse's alert rules as a Prometheus rule file")
    export.add_argument("--job", default="kafka", help="Prometheus job label of the brokers' exporters (default: kafka)")
    export.add_argument("--kpulse-job", default="kpulse", help="job label of kpulse's exporter (default: kpulse)")
    export.add_argument("--output", "-o", help="write to this file instead of stdout")

    config = commands.add_parser("config", help="check or show configuration")
    config_commands = config.add_subparsers(dest="action", required=True, metavar="ACTION")
    config_commands.add_parser("check", help="load the config and print it (passwords hidden)")
    config_commands.add_parser("reference", help="print the documented reference config")

    from operations.permissions import FEATURES

    acls = commands.add_parser("acls", help="print the kafka-acls commands that give a principal what kpulse needs",
                               description="Print the kafka-acls commands (as kpulse kafka-cli kafka-acls ...) that "
                                           "give PRINCIPAL the ACLs kpulse's features need on the configured cluster "
                                           "(its probe topic and monitored group patterns). Connects to nothing.")
    acls.add_argument("--principal", required=True, help="the principal kpulse connects as (User:NAME; NAME alone "
                                                         "means User:NAME)")
    acls.add_argument("--feature", action="append", choices=[f.name for f in FEATURES], metavar="FEATURE",
                      help="a feature (repeatable): " + ", ".join(f.name for f in FEATURES)
                           + " (default: monitoring and probe)")
    acls.add_argument("--operations", action="store_true", help="add every operation's ACLs")
    acls.add_argument("--cluster", help="the configured cluster (default: the first)")

    doctor = commands.add_parser("doctor", help="connect with the configured identity and say what it may do, "
                                                "feature by feature")
    doctor.add_argument("--cluster", help="the configured cluster (default: the first)")
    doctor.add_argument("--json", action="store_true")

    from spark_jobs.command import add_parsers as add_slo_parsers

    add_slo_parsers(commands)

    from spark_jobs.compact_command import add_parsers as add_lake_parsers

    add_lake_parsers(commands)

    dashboard = commands.add_parser("dashboard", help="the web dashboard (Streamlit) on the config's dashboard host and port")
    dashboard.add_argument("--port", type=int, help="serve on this port instead of dashboard.port")

    from cli.records_command import add_parser as add_records_parser

    add_records_parser(commands)

    from cli.operation_args import add_parsers as add_operation_parsers

    add_operation_parsers(commands)
    _accept_config_after_the_command(commands)
    return parser


def _accept_config_after_the_command(commands) -> None:
    """``kpulse collect --config F`` as well as ``kpulse --config F collect``: every command's
    parser takes ``--config`` too (``kafka-cli`` only before the tool: its arguments are the tool's)."""
    for name, sub in commands.choices.items():
        if name == "kafka-cli":
            continue
        if not any("--config" in action.option_strings for action in sub._actions):
            sub.add_argument("--config", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                _accept_config_after_the_command(action)


def main(argv: list[str] | None = None) -> int:
    """Run one command; everything it prints shows control characters as escapes (a topic or group
    name cannot drive the terminal)."""
    from kpulse.printable import visible_output

    with visible_output():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _dispatch(args) or 0
    except KeyboardInterrupt:
        return 130
    except KpulseError as error:
        if os.environ.get("KPULSE_DEBUG"):
            raise
        from kpulse.printable import visible

        source = getattr(error, "source", None)
        # one line, even when a name it quotes holds a newline
        print(visible(f"kpulse: error: {source + ': ' if source else ''}{error}"), file=sys.stderr)
        return 1


WITHOUT_CONFIG = ("setup", "down", "cluster", "demo")
"""Commands that never read the configuration (they work with a broken one)."""


def needs_config(args: argparse.Namespace) -> bool:
    """Whether the command reads the configuration: :func:`_dispatch` loads it once, for it."""
    if args.command in WITHOUT_CONFIG:
        return False
    if args.command == "kafka-cli":  # only when one is named: else the tool runs as given
        from kpulse.config import CONFIG_ENV_VAR

        return bool(args.config or os.environ.get(CONFIG_ENV_VAR) or args.cluster)
    if args.command == "config":
        return args.action == "check"
    if args.command == "slo":  # run: the lake, and its credentials (lake.s3) even with --lake
        return args.action == "run"
    return True


def _dispatch(args: argparse.Namespace) -> int | None:
    progress = Progress()
    config = None
    if needs_config(args):
        from kpulse.config import load_config
        from kpulse.lake.store import use_credentials

        config = load_config(args.config)
        use_credentials(config.lake.credential_environment())  # lake.s3: for this process and its children
    if args.command == "setup":
        from localkafka.runtime import ensure_runtime

        runtime = ensure_runtime(progress)
        print(f"Java runtime ready: {runtime.root}")
        return None
    if args.command == "kafka-cli":
        from localkafka.tools import kafka_cli

        return kafka_cli(args.tool, args.args, None if config is None else config.cluster(args.cluster), progress)
    if args.command == "config":
        _config(args, config)
        return None
    if args.command == "acls":
        _acls(args, config)
        return None
    if args.command == "doctor":
        return _doctor(args, config)
    if args.command == "alerts":
        _export_rules(args, config)
        return None
    if args.command == "dashboard":
        from dashboard.launch import dashboard_command

        dashboard_command(config, args.config, port=args.port)
        return None
    if args.command == "slo":
        from spark_jobs.command import run_command

        return run_command(args, config)
    if args.command == "lake":
        from spark_jobs.compact_command import run_command as run_lake_command

        return run_lake_command(args, config)
    if args.command == "records":
        from cli.records_command import run as run_records

        return run_records(args, config)
    from cli.operation_args import COMMANDS as OPERATION_COMMANDS

    if args.command in OPERATION_COMMANDS:
        from cli.operation_commands import run as run_operation

        return run_operation(args, config)
    if args.command == "collect":
        from cli.collect import collect_command

        return collect_command(config, once=args.once, as_json=args.json, cluster=args.cluster)

    from localkafka.demo.workload import DemoWorkload
    from localkafka.cluster import LocalCluster

    cluster = LocalCluster(progress=progress)
    demo = DemoWorkload(cluster, progress)
    if args.command == "up":
        _up(args, config, cluster, demo)
        return None
    if args.command == "down":
        from kpulse.home import state_dir
        from cli.services import Services

        services = Services(state_dir()).stop()
        demo.stop()
        stopped = cluster.down(wipe=args.wipe)
        print(f"stopped {len(services)} kpulse service(s), the demo workload and {len(stopped)} node(s)")
        return None
    if args.command == "cluster":
        _cluster(args, cluster)
        return None
    if args.command == "demo":
        _demo(args, demo)
        return None
    raise AssertionError(args.command)


def _up(args, config, cluster, demo) -> None:
    from kpulse.config import DEFAULT_SOURCE

    from kpulse.home import state_dir
    from cli.services import Service, Services

    local = config.source == DEFAULT_SOURCE
    if local:
        status = cluster.up()
        if not args.no_demo:
            demo.start()
    else:
        _check_configured_clusters(config)
    exporter = (f"Prometheus exporter http://{config.exporter.host}:{config.exporter.port}/metrics"
                if config.exporter.enabled else "exporter disabled")
    every = f"{config.intervals.slo_seconds:g}"
    services = [Service("collect", ("collect",), f"{exporter}; lake {config.lake.path}"),
                Service("slo", ("slo", "run", "--every", every), f"SLO job (Spark, local) every {every} s"),
                Service("compact", ("lake", "compact", "--daily"),
                        f"lake compaction and retention (Spark, local) daily at {config.lake.retention.daily_at} UTC"),
                Service("dashboard", ("dashboard",), f"http://{config.dashboard.host}:{config.dashboard.port}")]
    with cluster.progress.step("starting the kpulse collectors, SLO job, lake compaction and dashboard"):
        started = Services(state_dir(), None if local else str(Path(config.source).resolve())).start(services)
    if local:
        _print_cluster(status)
        if not args.no_demo:
            print("\nDemo workload: producers on demo.*, groups demo-healthy / demo-slow / demo-stopped,")
            print("Streams app kpulse-demo-streams (metrics: " + ", ".join(demo.streams_metrics_urls()) + "),")
            print("KIP-848 group demo-kip848, Streams group kpulse-demo-kip1071, share group demo-share,")
            print("demo-poison stuck on a malformed record of demo.poison (STALL: see it, skip it)")
    print()
    for service in started:
        print(f"kpulse {service.name}: {'running' if service.running else 'NOT RUNNING'} "
              f"(pid {service.pid or '-'}) - {service.where}; log {service.log}")
    if local:
        print("\nOfficial tools: kpulse kafka-cli kafka-consumer-groups --bootstrap-server "
              f"{status.bootstrap_servers.split(',')[0]} --describe --all-groups")
    print("One snapshot now: kpulse collect --once --json")
    print("Stop everything: kpulse down")


def _check_configured_clusters(config) -> None:
    from kpulse.kafka.clients import admin_client, error_text, wait
    from localkafka.cluster import ClusterError

    for cluster in config.clusters:
        admin = admin_client({**cluster.client_config(), "socket.connection.setup.timeout.ms": 5000},
                             connection_errors=True)
        try:
            described = wait(admin, admin.describe_cluster(request_timeout=10), 15)
        except Exception as error:  # noqa: BLE001 - any client failure is one line for the user
            raise ClusterError(f"cluster {cluster.name!r} at {cluster.bootstrap_servers} is unreachable: "
                               f"{error_text(error)}") from None
        print(f"cluster {cluster.name}: {len(described.nodes)} broker(s) reachable at {cluster.bootstrap_servers}")


def _cluster(args, cluster) -> None:
    if args.action == "up":
        _print_cluster(cluster.up())
    elif args.action == "down":
        stopped = cluster.down(wipe=args.wipe)
        print(f"stopped {len(stopped)} node(s)" + (" and deleted their data" if args.wipe else ""))
    elif args.action == "status":
        status = cluster.status()
        if args.json:
            print(json.dumps(status.to_dict(), indent=2))
        else:
            _print_cluster(status)
    elif args.action == "stop-broker":
        print(f"node {args.node_id}: " + ("stopped" if cluster.stop_broker(args.node_id) else "was not running"))
    elif args.action == "kill-broker":
        print(f"node {args.node_id}: " + ("killed" if cluster.kill_broker(args.node_id) else "was not running"))
    elif args.action == "start-broker":
        cluster.start_broker(args.node_id)
        print(f"node {args.node_id}: running and registered")


def _print_cluster(status) -> None:
    running = sum(node.running for node in status.nodes)
    print(f"Kafka {status.kafka_version} local cluster: {running}/{len(status.nodes)} nodes running")
    print(f"bootstrap servers: {status.bootstrap_servers}")
    print(f"{'node':>4}  {'port':>5}  {'state':<8} {'pid':>7}  metrics")
    for node in status.nodes:
        state = "running" if node.running else "stopped"
        print(f"{node.id:>4}  {node.port:>5}  {state:<8} {node.pid or '-':>7}  {node.metrics_url}")


def _demo(args, demo) -> None:
    if args.action == "start":
        items = demo.start()
        for item in items:
            print(f"{item.name:<24} {'running' if item.running else 'done':<8} {item.log}")
    elif args.action == "stop":
        print(f"stopped {len(demo.stop())} demo process(es)")
    elif args.action == "status":
        items = demo.status()
        if args.json:
            print(json.dumps(demo.as_dicts(items), indent=2))
        else:
            for item in items:
                print(f"{item.name:<24} {'running' if item.running else 'stopped':<8} {item.pid or '-':>7}  {item.log}")


def _export_rules(args, config) -> None:
    from alerting.rules_export import export_rules_yaml

    cluster = config.cluster(None)
    groups = cluster.consumer_groups
    text = export_rules_yaml(args.job, kpulse_job_label=args.kpulse_job,
                             voter_lag_records=cluster.kraft.voter_lag_records,
                             voter_lag_seconds=cluster.kraft.voter_lag_seconds,
                             lag_seconds_threshold=groups.lag_seconds_threshold,
                             lag_seconds_overrides={g: o.lag_seconds_threshold for g, o in groups.overrides.items()
                                                    if o.lag_seconds_threshold is not None})
    if args.output:
        Path(args.output).write_text(text)
        print(f"wrote {args.output}")
    else:
        print(text, end="")


def _acls(args, config) -> None:
    from operations.acl_commands import DEFAULT_FEATURES, acl_commands
    from operations.permissions import FEATURES, MONITORING, PROBE

    chosen = list(args.feature or ([] if args.operations else DEFAULT_FEATURES))
    if args.operations:
        chosen += [f.name for f in FEATURES if f.name not in (MONITORING, PROBE) and f.needs]
    for line in acl_commands(args.principal, dict.fromkeys(chosen), config.cluster(args.cluster)):
        print(line)


def _doctor(args, config) -> int:
    """0: monitoring has what it needs; 2: connected but it lacks a permission; 1 (an error line):
    the identity cannot even connect."""
    from collectors.connection_gate import ConnectionGate
    from kpulse.kafka.clients import admin_client, kafka_python_admin
    from operations import doctor, kafka_reads

    cluster = config.cluster(args.cluster)
    connection = ConnectionGate(cluster).check()
    if not connection["ok"]:
        raise KpulseError(f"cluster {cluster.name!r} cannot be read: {connection['error']}")
    admin = admin_client(cluster.client_config(), connection_errors=True)
    facts = doctor.gather(admin, cluster, connection["cluster_operations"], check_seconds=connection["check_seconds"],
                          list_groups=lambda: kafka_reads.all_groups(admin, lambda: kafka_python_admin(
                              cluster, client_id="kpulse-doctor", timeout=kafka_reads.TIMEOUT)))
    report = doctor.report(cluster.name, facts)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(f"cluster {cluster.name} ({cluster.bootstrap_servers}): what kpulse's identity may do")
        print("\n".join(report.lines()))
    return report.exit_code


def _config(args, config) -> None:
    from kpulse.config import reference_config_path

    if args.action == "reference":
        print(reference_config_path().read_text(), end="")
        return
    print(f"config from {config.source}: OK")
    print(json.dumps({"clusters": [cluster.redacted() for cluster in config.clusters]}, indent=2, default=str))


if __name__ == "__main__":
    sys.exit(main())
