"""The collection bench through SASL_SSL/SCRAM-SHA-512 against PLAINTEXT, on the same brokers
(``bench/lag_collection.py --secure``; issue 26: the lag cycle's ratio, goal <= 1.3).

The bench's own cluster gets, beside each node's PLAINTEXT listener, a SASL_SSL listener (TLS with
a CA made on the fly, SCRAM-SHA-512 user created at format time; the brokers talk to each other
over PLAINTEXT; no authorizer: ``localkafka/layout.py`` ``SaslSslListener``). Two kpulse configs
that differ only in ``bootstrap_servers`` and ``security`` (:func:`secure_configs`) are measured in
the same process, cycle after cycle: the plaintext side then the secured side, then the other way
round (the order alternates each cycle), so that both see the same load on the shared cores. The
same collector code runs on both sides: librdkafka (cluster metadata, probe, the Admin API calls)
and kafka-python (the lag collector's batched OffsetFetch, ListOffsets, ListGroups and describes)
each over their own TLS.

Per side: the median, quartiles and every cycle's time, kpulse's process CPU per cycle (every
thread, both sides' clients are in the process: the other side's idle clients count too, a few
ms), and the brokers' CPU per cycle (``/proc/<pid>/stat`` of the three broker JVMs, 10 ms ticks:
the mean over the measured cycles). Ratios: of the medians, and the median and quartiles of the
paired ratios (each cycle against the other side's cycle next to it).
"""

from __future__ import annotations

import statistics
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kpulse.snapshot import Snapshot

SIDES = ("plaintext", "sasl_ssl")


def secure_configs(bench_config, bootstrap: str, secure_bootstrap: str, security: dict, metrics_urls: list[str],
                   include: str) -> dict:
    """Side name -> the kpulse config of that side: the same but for bootstrap and security."""
    return {"plaintext": bench_config(bootstrap, metrics_urls, include),
            "sasl_ssl": bench_config(secure_bootstrap, metrics_urls, include, security=security)}


def broker_cpu_s(pids: list[int]) -> float:
    from bench.scale_state import process_cpu_seconds

    return sum(process_cpu_seconds(pid) for pid in pids)


class _Side:
    """One side's cycle: the lag collector's (``lag``) or the whole collection's (``whole``)."""

    def __init__(self, config, part: str):
        self.part = part
        if part == "lag":
            from collectors.lag.consumer_lag import ConsumerLagCollector

            self.cluster = config.cluster(None)
            self.lag = ConsumerLagCollector(self.cluster)
        else:
            from collectors.runner import GC_SETTLE_CYCLES, CollectionService

            self.service = CollectionService(config, flush_seconds=3600, gc_settle_cycles=GC_SETTLE_CYCLES)
        self.last_groups: list[dict[str, Any]] = []
        """The lag side's last consumer_groups section."""
        self.last_snapshot: Snapshot | None = None
        """The whole side's last snapshot."""

    def cycle(self) -> None:
        if self.part == "lag":
            from collectors.protocol import CollectContext

            groups = self.lag.collect(CollectContext(self.cluster, time.time())).sections["consumer_groups"]
            assert isinstance(groups, list)  # the lag collector's section: its groups
            self.last_groups = groups
        else:
            self.last_snapshot = self.service.cycle().snapshots["bench"]

    def flush(self) -> None:
        if self.part == "whole":
            self.service.flush()

    def summary(self) -> dict:
        if self.part == "lag":
            client = self.lag.batched_client
            assert client is not None  # the lag collector is built batched (its default)
            return {"groups": len(self.last_groups),
                    "partitions": sum(len(g["partitions"]) for g in self.last_groups),
                    "librdkafka_fallbacks": client.fallbacks, "fallback_reason": client.unavailable_reason}
        snapshot = self.last_snapshot
        assert snapshot is not None, "cycle() first"
        return {"collectors": {c["name"]: c["error"] for c in snapshot["collectors"]},
                "groups": len(snapshot["consumer_groups"])}

    def close(self) -> None:
        if self.part == "lag":
            self.lag.close()
        else:
            self.service.close()


def warm_up_pair(configs: dict, seconds: float, spacing: float) -> None:
    """Whole collection cycles through both listeners, alternately, for ``seconds``."""
    from collectors.runner import CollectionService

    services = [CollectionService(configs[side], flush_seconds=60) for side in SIDES]
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        for service in services:
            service.cycle()
            time.sleep(spacing / 2)
    for service in services:
        service.close()


def measure_pair(configs: dict, part: str, cycles: int, spacing: float, broker_pids: list[int],
                 warm_up_cycles: int, cycles_per_flush: int) -> dict:
    """Both sides' cycles, interleaved (ABBA...), the first ``warm_up_cycles`` of each not counted."""
    from collectors.runner import settle_gc
    from bench.lag_collection import process_cpu_s

    sides = {side: _Side(configs[side], part) for side in SIDES}
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    cpu: dict[str, list[float]] = {side: [] for side in SIDES}
    brokers: dict[str, list[float]] = {side: [] for side in SIDES}
    for cycle in range(warm_up_cycles + cycles):
        if part == "lag" and cycle == 1:
            settle_gc()  # as `kpulse collect` does after its first cycle (the whole collection does it itself)
        for side in (SIDES if cycle % 2 == 0 else SIDES[::-1]):
            broker_began = broker_cpu_s(broker_pids)
            began, cpu_began = time.perf_counter(), process_cpu_s()
            sides[side].cycle()
            elapsed, used = time.perf_counter() - began, process_cpu_s() - cpu_began
            broker_used = broker_cpu_s(broker_pids) - broker_began
            if cycle >= warm_up_cycles:
                times[side].append(elapsed)
                cpu[side].append(used)
                brokers[side].append(broker_used)
            if cycle % cycles_per_flush == cycles_per_flush - 1:
                sides[side].flush()  # as the loop does once a minute (not timed)
            time.sleep(spacing / 2)
    per_side: dict[str, dict[str, Any]] = {}
    figures: dict[str, Any] = {"part": part, "sides": per_side}
    for side in SIDES:
        per_side[side] = {"median_s": statistics.median(times[side]),
                                  "quartiles_s": statistics.quantiles(times[side], n=4)[::2],
                                  "times_s": times[side],
                                  "cpu_median_s": statistics.median(cpu[side]),
                                  "brokers_cpu_mean_s": statistics.fmean(brokers[side]),
                                  **sides[side].summary()}
        sides[side].close()
    figures.update(ratios(times["plaintext"], times["sasl_ssl"]))
    figures["cpu_ratio"] = per_side["sasl_ssl"]["cpu_median_s"] / per_side["plaintext"]["cpu_median_s"]
    return figures


def ratios(plain: list[float], secure: list[float]) -> dict:
    """The ratio of the medians (secured / plaintext), and the median and quartiles of the ratios of
    the cycles measured next to each other."""
    paired = [s / p for p, s in zip(plain, secure)]
    return {"ratio_of_medians": statistics.median(secure) / statistics.median(plain),
            "paired_ratio_median": statistics.median(paired),
            "paired_ratio_quartiles": statistics.quantiles(paired, n=4)[::2] if len(paired) > 1 else [paired[0]] * 2}


LAG_GOAL = 1.3


def print_pair(title: str, figures: dict) -> None:
    plain, secure = figures["sides"]["plaintext"], figures["sides"]["sasl_ssl"]
    goal = f" (goal <= {LAG_GOAL:g})" if figures["part"] == "lag" else ""
    print(f"\n{title}:")
    for side, values in (("PLAINTEXT", plain), ("SASL_SSL/SCRAM", secure)):
        low, high = values["quartiles_s"]
        print(f"  {side:<15} median {values['median_s']:.3f} s (quartiles {low:.3f}-{high:.3f}); kpulse CPU "
              f"{values['cpu_median_s']:.3f} s a cycle; brokers' CPU {values['brokers_cpu_mean_s']:.3f} s a cycle")
    low, high = figures["paired_ratio_quartiles"]
    print(f"  SASL_SSL / PLAINTEXT: {figures['ratio_of_medians']:.2f} x the median{goal}; paired cycles "
          f"{figures['paired_ratio_median']:.2f} x (quartiles {low:.2f}-{high:.2f}); kpulse CPU "
          f"{figures['cpu_ratio']:.2f} x; brokers' CPU "
          f"{secure['brokers_cpu_mean_s'] / max(plain['brokers_cpu_mean_s'], 1e-9):.2f} x")
    if figures["part"] == "lag":
        print(f"  groups / group partitions read: {plain['groups']} / {plain['partitions']} (PLAINTEXT), "
              f"{secure['groups']} / {secure['partitions']} (SASL_SSL)")
        for side, values in (("PLAINTEXT", plain), ("SASL_SSL", secure)):
            if values["librdkafka_fallbacks"]:
                print(f"  {side}: {values['librdkafka_fallbacks']} reads fell back to librdkafka "
                      f"(last: {values['fallback_reason']})")
    else:
        for side, values in (("PLAINTEXT", plain), ("SASL_SSL", secure)):
            down = {name: error for name, error in values["collectors"].items() if error is not None}
            print(f"  {side}: {values['groups']} groups in the snapshot; collectors "
                  + (", ".join(sorted(values["collectors"])) + (f"; DOWN: {down}" if down else "")))


def profile_side(config, cycles: int, spacing: float, warm_up_cycles: int = 3) -> dict:
    """The lag collector's cycles through one listener, alone (run under a profiler: the first
    cycles connect, so the handshakes are in the profile once, as in a long run)."""
    from collectors.runner import settle_gc

    side = _Side(config, "lag")
    times = []
    for cycle in range(warm_up_cycles + cycles):
        if cycle == 1:
            settle_gc()
        began = time.perf_counter()
        side.cycle()
        if cycle >= warm_up_cycles:
            times.append(time.perf_counter() - began)
        time.sleep(spacing)
    side.close()
    return {"median_s": statistics.median(times), "cycles": len(times)}


PROFILE_RATE = 200
"""py-spy samples a second."""

CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("connecting: TLS context and handshake, SASL, API versions (once per connection)",
     ("KafkaConnectionManager._connect (", "_build_transport (", "do_handshake", "kafka/net/sasl/",
      "_sasl_authenticate")),
    ("TLS record reads and writes (ssl.py: OpenSSL's decryption and encryption)", ("(ssl.py:",)),
    ("answers decoded (kafka-python and kpulse's decoders)", ("(kafka/protocol/", "offset_fetch_decoder")),
    ("socket reads and writes, selector (plain sockets)", ("(selectors.py:", "(kafka/net/transport.py:",
                                                           "(kafka/net/selector.py:")),
)
"""Where a sample's stack goes (frames are ``function (file:line)``): the handshakes when any frame
is one of theirs, else the first match from the leaf up."""


def categorize(frames: list[str]) -> str:
    handshakes, needles = CATEGORIES[0]
    if any(needle in frame for frame in frames for needle in needles):
        return handshakes
    if any("<frozen importlib" in frame for frame in frames):
        return "imports (the first cycle's)"
    for frame in reversed(frames):
        for name, needles in CATEGORIES[1:]:
            if any(needle in frame for needle in needles):
                return name
    return "the rest (kpulse's evaluation, librdkafka calls' Python side, ...)"


IDLE_LEAVES = ("select (selectors.py", "wait (threading.py", "profile_side (lag_secure.py")
"""A sample whose innermost frame is one of these waits (py-spy cannot tell idle threads here)."""
IN_CYCLE = ("_Side.cycle (", "NetworkSelector.run_forever (")
"""A sample counts when it is in a cycle (the collector's thread) or on kafka-python's I/O thread:
not the imports, the configuration and the garbage collector's settling around the cycles."""


def read_collapsed(text: str) -> dict:
    """py-spy's ``--format raw`` output (``frame;frame;... count`` lines, root first) -> the busy
    samples in the cycles, by category, by the leaf function (own time), and in total."""
    categories: dict[str, int] = {}
    leaves: dict[str, int] = {}
    total = 0
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [frame for frame in stack.split(";") if not frame.startswith(("thread ", "process "))]
        if not frames or any(idle in frames[-1] for idle in IDLE_LEAVES):
            continue
        if not any(frame.startswith(IN_CYCLE) for frame in frames):
            continue
        n = int(count)
        total += n
        category = categorize(frames)
        categories[category] = categories.get(category, 0) + n
        leaves[frames[-1]] = leaves.get(frames[-1], 0) + n
    return {"samples": total, "categories": categories,
            "leaves": dict(sorted(leaves.items(), key=lambda item: -item[1])[:15])}


def profiled(py_spy: str, command: list[str]) -> dict:
    """Run ``command`` (a ``--profile-side`` step) under ``py-spy record`` (every Python thread,
    active samples only); its answer and the samples read back."""
    import json
    import subprocess
    import tempfile
    from pathlib import Path

    from cli.collect import LOOP_ENVIRONMENT

    out = Path(tempfile.mkdtemp(prefix="kpulse-bench-profile-")) / "stacks.txt"
    done = subprocess.run([py_spy, "record", "--format", "raw", "--rate", str(PROFILE_RATE), "--threads",
                           "--output", str(out), "--", *command],
                          capture_output=True, text=True, env={**LOOP_ENVIRONMENT, **__import__("os").environ})
    answers = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not answers or not out.exists():
        raise SystemExit(f"py-spy record failed ({done.returncode}):\n" + "\n".join(done.stderr.splitlines()[-15:]))
    return {**json.loads(answers[-1]), **read_collapsed(out.read_text()), "stacks": str(out)}


def print_profile(side: str, profile: dict) -> None:
    seconds = profile["samples"] / PROFILE_RATE
    print(f"\nprofile of {profile['cycles']} + 3 lag cycles through {side} (py-spy, every Python thread, "
          f"busy in the cycles: {seconds:.1f} s; cycle median under the profiler {profile['median_s']:.3f} s; "
          f"stacks: {profile['stacks']}):")
    for name, count in sorted(profile["categories"].items(), key=lambda item: -item[1]):
        print(f"  {count / PROFILE_RATE:7.2f} s  {100 * count / max(profile['samples'], 1):5.1f} %  {name}")
    print("  own time, top functions:")
    for frame, count in profile["leaves"].items():
        print(f"  {count / PROFILE_RATE:7.2f} s  {frame}")
