"""Where a lake bench's time goes: its filesystem calls and its phases, on a local directory or S3.

- :class:`CountingHandler` wraps the lake's pyarrow filesystem (``pyarrow.fs.PyFileSystem``) and
  appends one line per call to ``$KPULSE_BENCH_FS_LOG/<pid>.jsonl``: the request kind (``list``,
  ``head``, ``get``, ``put``, ``delete``, ``copy``, ``mkdir``), when it began, the seconds it held
  the caller and the bytes it moved. :func:`install` puts it behind ``kpulse.lake.store.resolve``
  (and every module that imported it by name), so the code measured is kpulse's own.
- Spark's Python workers are other processes: run as Spark's daemon module
  (``spark.python.daemon.module=bench.lake_timing``, :data:`SPARK_CONF`), this file installs the same
  wrapper in the daemon before it forks the workers, so the tasks' calls land in the same folder.
- :class:`Phases` is a :class:`kpulse.progress.Progress` that also keeps each step's wall and CPU
  time (the job's own steps: ``listing the lake's partitions``, ``computing per-minute ...``).
- :func:`account` (pure) assigns the calls to the phases they began in, by process (driver or
  tasks) and kind.

Kinds: ``open`` is opening a file to read (a HEAD on S3), ``get`` one read of it (a ranged GET),
``put`` writing one (counted once per file; the time of its writes and its close, the upload),
``copy`` a move (S3 has no rename: a copy and a delete), ``head`` a file info, ``list`` a
directory listing, ``mkdir`` a directory (on S3 an empty marker object, when there is none).
"""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator
from typing import TextIO

import pyarrow as pa
import pyarrow.fs as pafs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kpulse.progress import Progress  # noqa: E402

LOG_ENV = "KPULSE_BENCH_FS_LOG"
KINDS = ("list", "head", "open", "get", "put", "copy", "delete", "mkdir")
SPARK_CONF = {"spark.python.daemon.module": "bench.lake_timing"}
"""Spark configuration that runs the tasks' workers with the wrapper (the repository on their
PYTHONPATH: :func:`enable`)."""


class _Log:
    """This process's call log (opened after a fork in the child's own name)."""

    pid = -1
    sink: TextIO | None = None

    @classmethod
    def write(cls, kind: str, began: float, seconds: float, size: int = 0, calls: int = 1) -> None:
        folder = os.environ.get(LOG_ENV)
        if not folder:
            return
        sink = cls.sink
        if cls.pid != os.getpid() or sink is None:
            cls.pid, cls.sink = os.getpid(), (sink := open(Path(folder) / f"{os.getpid()}.jsonl", "a", buffering=1))  # noqa: SIM115
        sink.write(json.dumps([os.getpid(), kind, began, seconds, size, calls]) + "\n")


@contextmanager
def _timed(kind: str, calls: int = 1) -> Iterator[list[int]]:
    size = [0]
    began, start = time.time(), time.perf_counter()
    try:
        yield size
    finally:
        _Log.write(kind, began, time.perf_counter() - start, size[0], calls)


class _Reader:
    """A file opened for reading whose reads are timed and counted (``get``)."""

    def __init__(self, native: pa.NativeFile) -> None:
        self.native, self.closed = native, False

    def read(self, nbytes: int = -1) -> bytes:
        with _timed("get") as size:
            data = self.native.read() if nbytes is None or nbytes < 0 else self.native.read(nbytes)
            size[0] = len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.native.seek(offset, whence)

    def tell(self) -> int:
        return self.native.tell()

    def size(self) -> int:
        return self.native.size()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self.native.close()
        self.closed = True


class _Writer:
    """A file opened for writing whose writes and close (the upload on S3) are timed (``put``)."""

    def __init__(self, native: pa.NativeFile) -> None:
        self.native, self.closed = native, False

    def write(self, data) -> int:
        with _timed("put", 0) as size:
            size[0] = len(memoryview(data).cast("B"))
            return self.native.write(data)

    def flush(self) -> None:
        self.native.flush()

    def tell(self) -> int:
        return self.native.tell()

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def close(self) -> None:
        with _timed("put", 0):
            self.native.close()
        self.closed = True


class CountingHandler(pafs.FileSystemHandler):
    """Delegates every call to ``fs`` and logs it."""

    def __init__(self, fs: pafs.FileSystem) -> None:
        self.fs = fs

    def __eq__(self, other) -> bool:
        return isinstance(other, CountingHandler) and self.fs.equals(other.fs)

    def __ne__(self, other) -> bool:
        return not self == other

    def get_type_name(self) -> str:
        return self.fs.type_name

    def normalize_path(self, path: str) -> str:
        return self.fs.normalize_path(path)

    def get_file_info(self, paths):
        with _timed("head", len(paths)):
            return self.fs.get_file_info(paths)

    def get_file_info_selector(self, selector):
        with _timed("list"):
            return self.fs.get_file_info(selector)

    def create_dir(self, path, recursive):
        with _timed("mkdir"):
            self.fs.create_dir(path, recursive=recursive)

    def delete_dir(self, path):
        with _timed("delete"):
            self.fs.delete_dir(path)

    def delete_dir_contents(self, path, missing_dir_ok=False):
        with _timed("delete"):
            self.fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self):
        with _timed("delete"):
            self.fs.delete_dir_contents("/", accept_root_dir=True)

    def delete_file(self, path):
        with _timed("delete"):
            self.fs.delete_file(path)

    def move(self, src, dest):
        with _timed("copy"):
            self.fs.move(src, dest)

    def copy_file(self, src, dest):
        with _timed("copy"):
            self.fs.copy_file(src, dest)

    def open_input_stream(self, path):
        with _timed("open"):
            native = self.fs.open_input_stream(path)
        return pa.PythonFile(_Reader(native), mode="r")

    def open_input_file(self, path):
        with _timed("open"):
            native = self.fs.open_input_file(path)
        return pa.PythonFile(_Reader(native), mode="r")

    def open_output_stream(self, path, metadata):
        with _timed("put"):
            native = self.fs.open_output_stream(path, metadata=metadata)
        return pa.PythonFile(_Writer(native), mode="w")

    def open_append_stream(self, path, metadata):
        with _timed("put"):
            native = self.fs.open_append_stream(path, metadata=metadata)
        return pa.PythonFile(_Writer(native), mode="w")


class CountedFileSystem(pafs.PyFileSystem):
    """The wrapped filesystem, with the real one's type name (``s3``, ``local``): kpulse decides by
    it whether an upload is all-or-nothing (``kpulse.lake.store.ATOMIC_PUT_FILESYSTEMS``)."""

    @property
    def type_name(self) -> str:
        return self.handler.get_type_name()


def install() -> None:
    """Route every lake location kpulse resolves through :class:`CountingHandler` (this process and
    any it forks)."""
    import importlib

    from kpulse.lake import store

    original = store.resolve
    if getattr(original, "counting", False):
        return

    def resolve(path: str, filesystem: pafs.FileSystem | None = None) -> tuple[pafs.FileSystem, str]:
        fs, inner = original(path, filesystem)
        return CountedFileSystem(CountingHandler(fs)), inner

    resolve.counting = True  # type: ignore[attr-defined]
    for name in ("kpulse.lake.reader", "kpulse.lake.compaction", "spark_jobs.lake_io", "spark_jobs.compact_job",
                 "spark_jobs.tasks", "spark_jobs.job", "spark_jobs.lookback"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    for module in list(sys.modules.values()):
        if getattr(module, "resolve", None) is original:
            module.resolve = resolve  # type: ignore[attr-defined]


def enable(folder: Path) -> dict[str, str]:
    """Count this process's calls and those of Spark workers started from now on into ``folder``
    (removed when this process exits); the Spark configuration to add to the session."""
    import atexit
    import shutil

    folder.mkdir(parents=True, exist_ok=True)
    atexit.register(shutil.rmtree, folder, True)
    os.environ[LOG_ENV] = str(folder)
    root = str(Path(__file__).resolve().parent.parent)
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *[p for p in paths if p]])
    install()
    return dict(SPARK_CONF)


def calls(folder: Path) -> list[tuple[int, str, float, float, int, int]]:
    """Every call logged in ``folder``: (pid, kind, began epoch s, seconds, bytes, requests)."""
    found = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                pid, kind, began, seconds, size, count = json.loads(line)
                found.append((pid, kind, began, seconds, size, count))
    return found


# --- phases ------------------------------------------------------------------------------------------

@dataclass
class Phase:
    name: str
    began: float
    ended: float
    cpu: float = 0.0
    """CPU seconds of the bench's process tree (the driver, Spark's JVM, the Python workers)."""


class Phases(Progress):
    """Progress lines as usual; each step's wall clock (epoch seconds) and CPU seconds kept."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[Phase] = []

    @contextmanager
    def step(self, message: str) -> Iterator[None]:
        began, cpu = time.time(), tree_cpu_seconds(os.getpid())
        with Progress.step(self, message):
            yield
        self.steps.append(Phase(message, began, time.time(), tree_cpu_seconds(os.getpid()) - cpu))

    @contextmanager
    def timed(self, message: str) -> Iterator[None]:
        """A phase of the bench's own (not printed as progress)."""
        began, cpu = time.time(), tree_cpu_seconds(os.getpid())
        yield
        self.steps.append(Phase(message, began, time.time(), tree_cpu_seconds(os.getpid()) - cpu))


def with_gaps(steps: list[Phase], began: float, ended: float, label: str = "the rest (driver)") -> list[Phase]:
    """``steps`` in time order, with the time between them (and before and after, within
    ``began..ended``) as phases named ``label``. Pure."""
    ordered, out, at = sorted(steps, key=lambda p: p.began), [], began
    for step in ordered:
        if step.began > at + 0.05:
            out.append(Phase(label, at, step.began))
        out.append(step)
        at = max(at, step.ended)
    if ended > at + 0.05:
        out.append(Phase(label, at, ended))
    return out


@dataclass
class Usage:
    calls: int = 0
    seconds: float = 0.0
    bytes: int = 0


def account(records, phases: list[Phase], driver: int) -> list[dict[tuple[str, str], Usage]]:
    """For each phase, {(``driver`` or ``tasks``, kind): usage} of the calls that began in it. Pure.
    A call outside every phase is not counted."""
    out: list[dict[tuple[str, str], Usage]] = [{} for _ in phases]
    for pid, kind, began, seconds, size, count in records:
        for index, phase in enumerate(phases):
            if phase.began <= began < phase.ended:
                usage = out[index].setdefault(("driver" if pid == driver else "tasks", kind), Usage())
                usage.calls += count
                usage.seconds += seconds
                usage.bytes += size
                break
    return out


def report(title: str, phases: list[Phase], records, driver: int) -> list[str]:
    """Lines: each phase's wall and CPU seconds, and the filesystem calls begun in it."""
    lines = [f"where the time goes: {title}",
             f"  {'phase / filesystem calls':<62}{'wall s':>8}{'CPU s':>8}{'requests':>10}{'MB':>9}"]
    for phase, usage in zip(phases, account(records, phases, driver)):
        lines.append(f"  {phase.name[:62]:<62}{phase.ended - phase.began:>8.2f}{phase.cpu:>8.1f}")
        for (who, kind), use in sorted(usage.items(), key=lambda item: (item[0][0], KINDS.index(item[0][1]))):
            lines.append(f"    {who + ': ' + kind:<58}{use.seconds:>8.2f}{'':>8}{use.calls:>10,}{use.bytes / 1e6:>9.1f}")
    every = account(records, [Phase("all", min(p.began for p in phases), max(p.ended for p in phases))],
                    driver)[0] if phases else {}
    for who in ("driver", "tasks"):
        mine = [use for (whose, _), use in every.items() if whose == who]
        if mine:
            moved = {kind: sum(use.bytes for (whose, k), use in every.items() if whose == who and k == kind)
                     for kind in ("get", "put")}
            lines.append(f"  in all, {who}: {sum(u.calls for u in mine):,} requests, {sum(u.seconds for u in mine):.2f} s "
                         f"in filesystem calls, {moved['get'] / 1e6:.1f} MB read, {moved['put'] / 1e6:.1f} MB written")
    lines.append("  (requests: calls of that kind, 'put' one per file written, its seconds those of its writes and "
                 "upload; the tasks' seconds are summed over Spark's 2 slots; the rest of a phase is compute)")
    return lines


def warm_up(spark, modules: tuple[str, ...]) -> float:
    """Start Spark's Python workers (one task a slot) and import ``modules`` in them before a timed
    run, as an earlier run in the same session would have: with ``--compare`` the second lake
    would otherwise be timed warm and the first cold. Its seconds."""
    import importlib

    began = time.perf_counter()
    slots = spark.sparkContext.defaultParallelism
    spark.sparkContext.parallelize(range(slots), slots).map(
        lambda _: [importlib.import_module(name) and name for name in modules]).collect()
    return time.perf_counter() - began


def tree_cpu_seconds(root: int) -> float:
    """User + system CPU time so far of ``root`` and every process below it (the Spark JVM and its
    Python workers), with that of their children already reaped (``/proc/<pid>/stat`` utime, stime,
    cutime, cstime)."""
    parent, spent = {}, {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # exited meanwhile
            parent[int(entry.name)] = int(fields[1])
            spent[int(entry.name)] = sum(int(fields[i]) for i in (11, 12, 13, 14))
    below = {root}
    changed = True
    while changed:
        changed = False
        for pid, ppid in parent.items():
            if ppid in below and pid not in below:
                below.add(pid)
                changed = True
    return sum(spent[pid] for pid in below if pid in spent) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":  # Spark's daemon module (SPARK_CONF): the workers it forks count their calls
    install()
    from pyspark import daemon

    daemon.manager()
