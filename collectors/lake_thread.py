"""The collection loop's lake I/O, in a thread of its own: the loop's cadence never waits on the
store.

A store that stops answering (an S3 endpoint behind a partition, a hung gateway) makes each request
wait out its timeout and attempts: 20-40 s per operation with the defaults. Written in the loop's
own thread, one flush and one snapshot upload held the 10 s cycle for up to a minute: samples not
taken, alerts evaluated late. Here the loop takes the buffered rows (:meth:`LakeWriter.take`) and
hands them to this thread; it goes on appending to the buffers meanwhile. One write runs at a time:
while it runs, a flush that falls due waits (the rows stay buffered, the buffer limit applies as
usual) and starts as soon as the store answers. Snapshots are uploaded in the same thread, newest
only: one that could not be uploaded before the next cycle's is replaced by it.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import Callable, Mapping

from kpulse.lake.store import FlushResult, LakeWriter, Taken
from kpulse.snapshot import Snapshot


class LakeThread:
    """Writes taken rows and uploads snapshots in one thread (``lake``). The constructor starts nothing."""

    def __init__(self, lake: LakeWriter, publish: Callable[[str, Snapshot], None]) -> None:
        self._lake = lake
        self._publish = publish
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lake")
        self._write: Future[FlushResult] | None = None
        self._upload: Future[None] | None = None
        self._lock = threading.Lock()
        self._newest: dict[str, Snapshot] = {}

    @property
    def writing(self) -> bool:
        """A write was started and its result not yet taken by :meth:`finished`."""
        return self._write is not None

    def write(self, taken: Taken) -> None:
        """Write ``taken`` (:meth:`LakeWriter.take`) in the thread; one write at a time."""
        if self._write is not None:
            raise RuntimeError("a lake write is already running")  # the loop checks `writing` first
        self._write = self._executor.submit(self._lake.write, taken)

    def finished(self, wait: bool = False) -> FlushResult | None:
        """The started write's result once it is done (``wait``: wait for it), then never again."""
        write = self._write
        if write is None or not (wait or write.done()):
            return None
        self._write = None
        return write.result()

    def publish(self, snapshots: Mapping[str, Snapshot]) -> None:
        """Upload these snapshots in the thread, after what it is doing; a cluster's snapshot still
        waiting is replaced by its newer one."""
        with self._lock:
            self._newest.update(snapshots)
        if self._upload is None or self._upload.done():
            self._upload = self._executor.submit(self._upload_newest)

    def close(self) -> FlushResult | None:
        """Wait for the running write and uploads; the write's result if it was not taken."""
        result = self.finished(wait=True)
        self._executor.shutdown(wait=True)
        return result

    def _upload_newest(self) -> None:
        with self._lock:
            newest, self._newest = self._newest, {}
        for name, snapshot in newest.items():
            self._publish(name, snapshot)
