"""The lake: what collectors write is what the dashboard and Spark read back, and nothing is lost
silently when the disk or the network is not there."""

from __future__ import annotations

import errno
import io
import logging
import re
import threading
import time
from datetime import date, datetime, UTC
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from kpulse.lake.reader import read_table, read_table_with_problems
from kpulse.lake.store import LakeWriter, rows_to_arrow
from kpulse.lake.schema import SCHEMAS
from kpulse.lake.rows import Columns

DOCS = Path(__file__).resolve().parent.parent / "docs" / "lake.md"
PART_NAME = re.compile(r"part-\d{8}T\d{6}Z-[0-9a-f]{8}\.parquet")
NOON = datetime(2024, 3, 9, 12, 0, tzinfo=UTC).timestamp()
BEFORE_MIDNIGHT = datetime(2024, 3, 9, 23, 59, 59, 500000, tzinfo=UTC).timestamp()
AFTER_MIDNIGHT = datetime(2024, 3, 10, 0, 0, 1, tzinfo=UTC).timestamp()


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0,
        microsecond: int = 0) -> pd.Timestamp:
    return pd.Timestamp(datetime(year, month, day, hour, minute, second, microsecond, tzinfo=UTC))


def broker_rows(times: list[float], cluster: str = "prod") -> list[dict]:
    return [{"time": t, "cluster": cluster, "broker_id": i, "up": True, "partition_count": 10 + i,
             "leader_count": i} for i, t in enumerate(times)]


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


# --- write, read back ------------------------------------------------------------------------------

def test_rows_read_back_with_the_values_and_dtypes_written(tmp_path):
    writer = LakeWriter(str(tmp_path), clock=lambda: NOON)
    writer.append("alert_event", [
        {"time": NOON, "cluster": "prod", "rule": "urp", "severity": "critical", "entity": "broker 2",
         "state": "firing", "value": 3.0, "since": datetime(2024, 3, 9, 11, 58, tzinfo=UTC),
         "summary": "3 under-replicated partitions"},
        {"time": datetime(2024, 3, 9, 12, 0, 10, 250000, tzinfo=UTC), "cluster": "prod",
         "rule": "urp", "state": "resolved", "value": float("nan")},
    ])
    writer.append("broker_state", [{"time": NOON, "cluster": "prod", "broker_id": 1, "up": None,
                                    "partition_count": 7, "leader_count": None}])

    result = writer.flush()

    assert result.ok and result.written == {"alert_event": 2, "broker_state": 1}
    expected = pd.DataFrame({
        "time": [utc(2024, 3, 9, 12), utc(2024, 3, 9, 12, 0, 10, 250000)],
        "cluster": ["prod", "prod"], "rule": ["urp", "urp"], "severity": ["critical", None],
        "entity": ["broker 2", None], "state": ["firing", "resolved"], "value": [3.0, float("nan")],
        "since": [utc(2024, 3, 9, 11, 58), pd.NaT], "summary": ["3 under-replicated partitions", None],
    }).astype({"time": "datetime64[ns, UTC]", "since": "datetime64[ns, UTC]"})
    pd.testing.assert_frame_equal(read_table(str(tmp_path), "alert_event"), expected)
    expected_brokers = pd.DataFrame({
        "time": pd.Series([utc(2024, 3, 9, 12)], dtype="datetime64[ns, UTC]"), "cluster": ["prod"],
        "broker_id": pd.Series([1], dtype="Int32"), "up": pd.Series([pd.NA], dtype="boolean"),
        "partition_count": pd.Series([7], dtype="Int32"), "leader_count": pd.Series([pd.NA], dtype="Int32")})
    pd.testing.assert_frame_equal(read_table(str(tmp_path), "broker_state"), expected_brokers)


def test_each_file_has_exactly_the_table_schema_and_no_date_column(tmp_path):
    writer = LakeWriter(str(tmp_path), clock=lambda: NOON)
    writer.append("consumer_lag", [{"time": NOON, "cluster": "prod", "group_id": "g", "topic": "t",
                                    "partition": 0, "lag": 5}])
    (written,) = writer.flush().files

    assert Path(written).parent == tmp_path / "consumer_lag" / "date=2024-03-09"
    assert PART_NAME.fullmatch(Path(written).name)
    assert pq.read_schema(written).remove_metadata() == SCHEMAS["consumer_lag"]


def test_rows_across_midnight_utc_go_to_two_date_partitions(tmp_path):
    writer = LakeWriter(str(tmp_path))
    writer.append("broker_state", broker_rows([BEFORE_MIDNIGHT, AFTER_MIDNIGHT, BEFORE_MIDNIGHT]))

    writer.flush()

    table_dir = tmp_path / "broker_state"
    assert sorted(p.name for p in table_dir.iterdir()) == ["date=2024-03-09", "date=2024-03-10"]
    assert [len(pq.read_table(f)) for f in files_under(table_dir)] == [2, 1]
    day_two = read_table(str(tmp_path), "broker_state", since=datetime(2024, 3, 10, tzinfo=UTC))
    assert day_two["broker_id"].tolist() == [1]


def test_since_until_and_cluster_select_rows_and_prune_partitions(tmp_path):
    writer = LakeWriter(str(tmp_path))
    writer.append("broker_state", broker_rows([NOON, NOON + 60, NOON + 120], cluster="prod"))
    writer.append("broker_state", broker_rows([NOON + 60], cluster="staging"))
    writer.append("broker_state", broker_rows([NOON - 86400]))  # the day before
    writer.flush()
    # A corrupt file in the day before: listed only if that partition is not pruned.
    (tmp_path / "broker_state" / "date=2024-03-08" / "part-corrupt.parquet").write_bytes(b"junk")

    frame, skipped = read_table_with_problems(str(tmp_path), "broker_state", since=NOON + 60,
                                              until=NOON + 120, cluster="prod", columns=["cluster", "time"])

    assert skipped == []
    assert frame.columns.tolist() == ["cluster", "time"]
    assert frame["time"].tolist() == [utc(2024, 3, 9, 12, 1)]
    both = read_table(str(tmp_path), "broker_state", since=NOON, until=NOON + 61, cluster=["prod", "staging"])
    assert sorted(both["cluster"]) == ["prod", "prod", "staging"]


def test_missing_table_reads_as_empty_frame_with_the_same_columns_and_dtypes(tmp_path):
    empty = read_table(str(tmp_path / "no-lake-yet"), "broker_state")
    writer = LakeWriter(str(tmp_path))
    writer.append("broker_state", broker_rows([NOON]))
    writer.flush()
    full = read_table(str(tmp_path), "broker_state")

    assert len(empty) == 0 and len(full) == 1
    assert empty.dtypes.to_dict() == full.dtypes.to_dict()


# --- the contract is enforced at append ------------------------------------------------------------

def test_unknown_column_is_an_error_naming_key_and_table(tmp_path):
    writer = LakeWriter(str(tmp_path))
    with pytest.raises(ValueError, match=r"'broker_state' has no column 'brokerid'"):
        writer.append("broker_state", [{"time": NOON, "cluster": "prod", "up": True},
                                       {"time": NOON, "cluster": "prod", "brokerid": 1}])
    assert writer.buffered_rows() == {}


def test_unknown_table_is_an_error_naming_the_known_tables(tmp_path):
    writer = LakeWriter(str(tmp_path))
    with pytest.raises(ValueError, match=r"unknown lake table 'brokers'.*broker_state.*consumer_lag"):
        writer.append("brokers", [{"time": NOON, "cluster": "prod"}])
    with pytest.raises(ValueError, match="unknown lake table"):
        read_table(str(tmp_path), "brokers")


@pytest.mark.parametrize("row, message", [
    ({"cluster": "prod"}, "every row needs 'time'"),
    ({"time": NOON}, "every row needs 'cluster'"),
    ({"time": datetime(2024, 3, 9, 12), "cluster": "prod"}, "'time'.*naive datetime"),
    ({"time": "2024-03-09", "cluster": "prod"}, "'time'.*not a time"),
    ({"time": NOON, "cluster": "prod", "broker_id": "one"}, "'broker_id' \\(int32\\)"),
    ({"time": NOON, "cluster": "prod", "broker_id": 1.5}, "'broker_id'.*not a whole number"),
    ({"time": NOON, "cluster": "prod", "up": "yes"}, "'up' \\(bool\\)"),
])
@pytest.mark.parametrize("as_columns", [False, True], ids=["rows", "columns"])
def test_rows_outside_the_contract_are_refused(tmp_path, row, message, as_columns):
    writer = LakeWriter(str(tmp_path))
    with pytest.raises(ValueError, match=message):
        writer.append("broker_state", Columns(1, **{k: [v] for k, v in row.items()}) if as_columns else [row])
    assert writer.buffered_rows() == {}


def test_columns_give_the_same_table_as_the_same_rows_as_dicts():
    rows = [{"time": NOON, "cluster": "prod", "group_id": "g", "topic": "t", "partition": p, "committed_offset": c,
             "log_end_offset": 10, "lag": None if c is None else 10 - c, "lag_seconds": s, "status": st}
            for p, c, s, st in ((0, 4, 1.5, "OK"), (1, None, None, None), (2, 10, float("nan"), "WARN"))]
    columns = Columns(3, time=NOON, cluster="prod", group_id="g",  # one value: every row's
                      **{name: [row[name] for row in rows] for name in
                         ("topic", "partition", "committed_offset", "log_end_offset", "lag", "lag_seconds", "status")})

    table = rows_to_arrow("consumer_lag", columns)

    assert table.equals(rows_to_arrow("consumer_lag", rows))
    assert table["lag_seconds"].to_pylist() == [1.5, None, None]  # NaN is null here too
    as_rows = list(columns)  # what the Kafka sink sends
    assert as_rows[:2] == rows[:2] and as_rows[2]["status"] == "WARN" and len(as_rows) == len(columns) == 3


def test_columns_of_unequal_length_or_unknown_name_are_refused(tmp_path):
    with pytest.raises(ValueError, match="column 'topic' has 2 values for 3 rows"):
        Columns(3, time=NOON, cluster="prod", topic=["a", "b"])
    writer = LakeWriter(str(tmp_path))
    with pytest.raises(ValueError, match=r"'consumer_lag' has no column 'offset'"):
        writer.append("consumer_lag", Columns(1, time=NOON, cluster="prod", offset=[3]))
    assert writer.buffered_rows() == {}


def test_constructor_and_append_touch_no_files(tmp_path):
    writer = LakeWriter(str(tmp_path / "lake"))
    writer.append("broker_state", broker_rows([NOON]))
    assert not (tmp_path / "lake").exists()
    assert writer.buffered_rows() == {"broker_state": 1}


# --- atomic files ----------------------------------------------------------------------------------

def test_flush_leaves_only_final_files_and_readers_ignore_a_leftover_temporary_file(tmp_path):
    writer = LakeWriter(str(tmp_path))
    writer.append("broker_state", broker_rows([NOON, NOON + 1]))
    writer.flush()
    assert [PART_NAME.fullmatch(p.name) is not None for p in files_under(tmp_path)] == [True]

    # What a crash in the middle of a write leaves behind: a half-written file under a dot name.
    partition = tmp_path / "broker_state" / "date=2024-03-09"
    final = files_under(partition)[0]
    (partition / f".{final.name}.tmp").write_bytes(final.read_bytes()[:40])

    frame, skipped = read_table_with_problems(str(tmp_path), "broker_state")
    assert skipped == [] and len(frame) == 2


class _FullDiskOnce(io.FileIO):
    """A file on a disk that fills up after ``room`` bytes."""

    def __init__(self, path: str, room: int) -> None:
        super().__init__(path, "wb")
        self.room = room

    def write(self, data) -> int:
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= len(data)
        return super().write(data)


class _FaultyLocalDisk(pafs.FileSystemHandler):
    """The local file system with a switchable fault (``"disk full"`` after 100 bytes of a file,
    or ``"rename"`` failing), recording the names files are opened for writing under."""

    def __init__(self) -> None:
        self.local = pafs.LocalFileSystem()
        self.fault: str | None = None
        self.opened_for_writing: list[str] = []

    def open_output_stream(self, path, metadata):
        self.opened_for_writing.append(path)
        if self.fault == "disk full":
            return pa.PythonFile(_FullDiskOnce(path, room=100), mode="w")
        return self.local.open_output_stream(path, metadata=metadata)

    def move(self, src, dest):
        if self.fault == "rename":
            raise OSError(errno.EIO, "Input/output error")
        self.local.move(src, dest)

    def get_type_name(self): return "faulty-local-test"
    def normalize_path(self, path): return self.local.normalize_path(path)
    def get_file_info(self, paths): return self.local.get_file_info(paths)
    def get_file_info_selector(self, selector): return self.local.get_file_info(selector)
    def create_dir(self, path, recursive): self.local.create_dir(path, recursive=recursive)
    def delete_dir(self, path): self.local.delete_dir(path)
    def delete_dir_contents(self, path, missing_dir_ok=False):
        self.local.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)
    def delete_root_dir_contents(self): raise NotImplementedError
    def delete_file(self, path): self.local.delete_file(path)
    def copy_file(self, src, dest): self.local.copy_file(src, dest)
    def open_input_stream(self, path): return self.local.open_input_stream(path)
    def open_input_file(self, path): return self.local.open_input_file(path)
    def open_append_stream(self, path, metadata):
        return self.local.open_append_stream(path, metadata=metadata)
    def __eq__(self, other): return self is other
    def __ne__(self, other): return self is not other


@pytest.mark.parametrize("fault, message", [("disk full", "No space left on device"),
                                            ("rename", "Input/output error")])
def test_failed_write_leaves_no_file_behind_and_keeps_the_rows(tmp_path, fault, message):
    disk = _FaultyLocalDisk()
    writer = LakeWriter(str(tmp_path), filesystem=pafs.PyFileSystem(disk))
    writer.append("broker_state", broker_rows([NOON, NOON + 1, NOON + 2]))

    disk.fault = fault
    failed = writer.flush()
    assert failed.failed == {"broker_state": 3} and message in failed.errors["broker_state"]
    assert files_under(tmp_path) == []  # neither the temporary nor a final file
    assert writer.buffered_rows() == {"broker_state": 3}

    disk.fault = None
    assert writer.flush().written == {"broker_state": 3}
    assert read_table(str(tmp_path), "broker_state")["broker_id"].tolist() == [0, 1, 2]
    # Every file was written under a name readers ignore, then renamed.
    assert {Path(p).name[0] for p in disk.opened_for_writing} == {"."}
    assert [PART_NAME.fullmatch(p.name) is not None for p in files_under(tmp_path)] == [True]


# --- outages: retry, then drop the oldest and record the gap ----------------------------------------

def test_flush_during_an_outage_keeps_every_row_until_the_lake_is_back(tmp_path):
    blocker = tmp_path / "mnt"
    blocker.write_text("the lake volume is not mounted: this is a file")
    writer = LakeWriter(str(blocker / "lake"))
    writer.append("broker_state", broker_rows([NOON, NOON + 1]))
    writer.append("cluster_health", [{"time": NOON, "cluster": "prod", "brokers_up": 3}])

    outage = writer.flush()

    assert not outage.ok and outage.written == {}
    assert outage.failed == {"broker_state": 2, "cluster_health": 1}
    assert "\n" not in outage.errors["broker_state"] and writer.last_error == outage.errors["cluster_health"]
    writer.append("broker_state", broker_rows([NOON + 2]))
    assert writer.buffered_rows() == {"broker_state": 3, "cluster_health": 1}

    blocker.unlink()
    recovered = writer.flush()

    assert recovered.ok and recovered.written == {"broker_state": 3, "cluster_health": 1}
    assert writer.buffered_rows() == {} and writer.last_error is None
    times = read_table(str(blocker / "lake"), "broker_state")["time"]
    assert times.tolist() == [pd.Timestamp(t, unit="s", tz="UTC") for t in (NOON, NOON + 1, NOON + 2)]
    assert read_table(str(blocker / "lake"), "cluster_health")["brokers_up"].tolist() == [3]
    assert writer.flush().written == {}  # nothing written twice


def test_flush_to_a_lake_uri_that_cannot_be_opened_reports_instead_of_raising():
    writer = LakeWriter("nosuchscheme://bucket/lake")
    writer.append("broker_state", broker_rows([NOON]))

    result = writer.flush()

    assert result.failed == {"broker_state": 1} and "nosuchscheme" in result.errors["broker_state"]
    assert writer.buffered_rows() == {"broker_state": 1} and writer.last_error == result.errors["broker_state"]


def test_full_buffer_drops_the_oldest_rows_and_writes_the_gap_to_lake_gap(tmp_path):
    blocker = tmp_path / "mnt"
    blocker.write_text("not a directory")
    writer = LakeWriter(str(blocker / "lake"), max_buffered_rows=5, clock=lambda: NOON + 100)
    writer.append("broker_state", broker_rows([NOON + s for s in range(4)]))
    assert not writer.flush().ok
    for second in range(4, 8):  # three of these appends overflow, one row each
        writer.append("broker_state", broker_rows([NOON + second]))
    writer.append("broker_state", broker_rows([NOON + 3], cluster="staging"))  # drops NOON+3 of prod

    assert writer.buffered_rows() == {"broker_state": 5}
    blocker.unlink()
    assert writer.flush().written == {"broker_state": 5, "lake_gap": 1}

    lake = str(blocker / "lake")
    kept = read_table(lake, "broker_state")
    at = [pd.Timestamp(NOON + s, unit="s", tz="UTC") for s in range(8)]
    assert list(zip(kept["cluster"], kept["time"])) == [("staging", at[3])] + [("prod", t) for t in at[4:]]
    gaps = read_table(lake, "lake_gap")
    assert gaps.drop(columns="reason").to_dict("records") == [{
        "time": pd.Timestamp(NOON + 100, unit="s", tz="UTC"), "cluster": "prod", "table_name": "broker_state",
        "first_time": utc(2024, 3, 9, 12), "last_time": utc(2024, 3, 9, 12, 0, 3), "rows_dropped": 4}]
    assert "buffer limit of 5 rows" in gaps["reason"][0] and "NotADirectoryError" in gaps["reason"][0]
    assert writer.pending_gaps() == []


class HangingStore(pafs.FileSystemHandler):
    """A local directory whose ``create_dir`` waits until released, then fails (``fail``) or not: a
    store that stopped answering, as a pyarrow filesystem."""

    def __init__(self, *, fail: bool) -> None:
        self.local, self.fail = pafs.LocalFileSystem(), fail
        self.entered, self.release = threading.Event(), threading.Event()

    def create_dir(self, path, recursive):
        self.entered.set()
        self.release.wait(30)
        if self.fail:
            raise OSError("AWS Error NETWORK_CONNECTION during PutObject operation: Timeout was reached")
        self.local.create_dir(path, recursive=recursive)

    def get_type_name(self):
        return "hanging"

    def normalize_path(self, path):
        return path

    def get_file_info(self, paths):
        return self.local.get_file_info(paths)

    def get_file_info_selector(self, selector):
        return self.local.get_file_info(selector)

    def open_output_stream(self, path, metadata):
        return self.local.open_output_stream(path, metadata=metadata)

    def move(self, src, dest):
        self.local.move(src, dest)

    def delete_file(self, path):
        self.local.delete_file(path)

    def unused(self, *args):
        raise AssertionError("not used by LakeWriter.write")

    copy_file = delete_dir = delete_dir_contents = delete_root_dir_contents = unused
    open_append_stream = open_input_file = open_input_stream = unused


@pytest.mark.parametrize("fail", [True, False], ids=["write fails", "write succeeds"])
def test_rows_appended_while_a_write_hangs_do_not_wait_and_keep_their_order(tmp_path, fail):
    store = HangingStore(fail=fail)
    writer = LakeWriter(str(tmp_path / "lake"), filesystem=pafs.PyFileSystem(store), max_buffered_rows=4,
                        clock=lambda: NOON + 100)
    writer.append("broker_state", broker_rows([NOON, NOON + 1]))
    taken = writer.take()
    assert taken.rows() == 2 and writer.buffered_rows() == {}
    results: list = []
    writing = threading.Thread(target=lambda: results.append(writer.write(taken)))
    writing.start()
    assert store.entered.wait(10)
    began = time.monotonic()
    writer.append("broker_state", broker_rows([NOON + 2, NOON + 3, NOON + 4]))  # the store hangs: no wait here
    assert time.monotonic() - began < 1
    assert writer.buffered_rows() == {"broker_state": 3} and writer.unwritten_rows() == 5
    store.release.set()
    writing.join(30)
    result = results[0]
    if fail:
        assert result.failed == {"broker_state": 2} and "NETWORK_CONNECTION" in result.errors["broker_state"]
        # the two rows not written go back before the three appended during the write; the limit of
        # 4 then drops the oldest, recorded as a gap
        assert writer.buffered_rows() == {"broker_state": 4}
        assert [(g.first_time, g.rows_dropped) for g in writer.pending_gaps()] == [(utc(2024, 3, 9, 12), 1)]
        store.fail = False
        assert writer.flush().written == {"broker_state": 4, "lake_gap": 1}
        expected = [NOON + 1, NOON + 2, NOON + 3, NOON + 4]
        assert writer.rows_dropped_total == 1
    else:
        assert result.written == {"broker_state": 2} and writer.buffered_rows() == {"broker_state": 3}
        assert writer.flush().written == {"broker_state": 3}
        expected = [NOON + s for s in range(5)]
    times = read_table(str(tmp_path / "lake"), "broker_state", filesystem=pafs.LocalFileSystem())["time"]
    assert sorted(t.timestamp() for t in times) == expected
    assert writer.buffered_rows() == {} and writer.pending_gaps() == []


# --- reading around damage -------------------------------------------------------------------------

def test_corrupt_file_is_skipped_with_a_reason_and_good_files_are_read(tmp_path, caplog):
    writer = LakeWriter(str(tmp_path))
    writer.append("broker_state", broker_rows([NOON]))
    writer.flush()
    writer.append("broker_state", broker_rows([NOON + 1, NOON + 2]))
    writer.flush()
    corrupt = tmp_path / "broker_state" / "date=2024-03-09" / "part-20240309T120000Z-deadbeef.parquet"
    corrupt.write_bytes(b"\x00garbage, not parquet\x00" * 10)

    frame, skipped = read_table_with_problems(str(tmp_path), "broker_state")

    assert len(frame) == 3
    assert len(skipped) == 1 and str(skipped[0]).startswith(f"{corrupt}: ") and "magic bytes" in str(skipped[0])
    assert (skipped[0].table, str(skipped[0].day)) == ("broker_state", "2024-03-09")
    with caplog.at_level(logging.WARNING, logger="kpulse.lake.reader"):
        assert len(read_table(str(tmp_path), "broker_state")) == 3
    assert "deadbeef" in caplog.text


# --- the docs follow the contract ------------------------------------------------------------------

def _documented_columns() -> dict[str, dict[str, str]]:
    """Table -> {column: type} from the '### `table`' sections of docs/lake.md."""
    tables: dict[str, dict[str, str]] = {}
    current = None
    for line in DOCS.read_text().splitlines():
        if heading := re.fullmatch(r"### `(\w+)`", line):
            current = tables.setdefault(heading[1], {})
        elif line.startswith("#"):
            current = None
        elif current is not None and (row := re.match(r"\| `(\w+)` \| `([^`]+)` \|", line)):
            current[row[1]] = row[2]
    return tables


def test_docs_list_every_table_and_column_with_its_type():
    documented = _documented_columns()
    actual = {table: {f.name: str(f.type) for f in schema} for table, schema in SCHEMAS.items()}
    assert documented == actual


def test_docs_give_each_column_the_meaning_the_schema_declares():
    from kpulse.lake.schema import COLUMN_DOCS

    documented: dict[str, dict[str, str]] = {}
    current = None
    for line in DOCS.read_text().splitlines():
        if heading := re.fullmatch(r"### `(\w+)`", line):
            current = documented.setdefault(heading[1], {})
        elif line.startswith("#"):
            current = None
        elif current is not None and (row := re.fullmatch(r"\| `(\w+)` \| `[^`]+` \| (.*) \|", line)):
            current[row[1]] = row[2]
    assert documented == COLUMN_DOCS


# --- Spark reads what we write ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()
    session = (SparkSession.builder.master("local[1]").appName("kpulse-test-lake")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1")
               .config("spark.sql.session.timeZone", "UTC").config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    if existing is None:
        session.stop()


def test_spark_reads_the_lake_with_a_date_partition_column(tmp_path, spark):
    from pyspark.sql.types import TimestampType

    writer = LakeWriter(str(tmp_path))
    writer.append("broker_state", broker_rows([BEFORE_MIDNIGHT, AFTER_MIDNIGHT, NOON]))
    writer.flush()
    writer.append("broker_state", broker_rows([NOON + 1]))
    writer.flush()
    partition = tmp_path / "broker_state" / "date=2024-03-09"
    (partition / ".part-20240309T235959Z-0badf11e.parquet.tmp").write_bytes(b"half a file")

    frame = spark.read.parquet(str(tmp_path / "broker_state"))

    assert frame.count() == 4
    assert "date" in frame.columns and isinstance(frame.schema["time"].dataType, TimestampType)
    rows = sorted((r["date"], r["time"]) for r in frame.select("date", "time").collect())
    day_one, day_two = date(2024, 3, 9), date(2024, 3, 10)
    assert rows == [(day_one, datetime(2024, 3, 9, 12)), (day_one, datetime(2024, 3, 9, 12, 0, 1)),
                    (day_one, datetime(2024, 3, 9, 23, 59, 59, 500000)),
                    (day_two, datetime(2024, 3, 10, 0, 0, 1))]


@pytest.mark.parametrize("unit", ["ms", "us", "ns"])
def test_a_read_given_times_skips_only_row_groups_that_cannot_hold_one(tmp_path, unit):
    """The SLO job reads a day's samples for an hour of them: row groups whose ``time`` statistics
    lie outside the range are skipped, every row inside it is still read (random times, bounds on
    and between rows, a file of another time unit, a group of nulls)."""
    import numpy as np

    from kpulse.lake import reader

    rng = np.random.default_rng(len(unit))
    base = int(datetime(2024, 3, 9, tzinfo=UTC).timestamp() * 1_000_000)
    micros = np.sort(base + rng.integers(0, 86_400_000_000, 5_000)) // 1000 * 1000
    times = pa.array(micros, pa.timestamp("us", tz="UTC")).cast(pa.timestamp(unit, tz="UTC"))
    times = pa.concat_arrays([times, pa.nulls(100, times.type)])
    rows = pa.table({"time": times, "cluster": ["prod"] * len(times),
                     "broker_id": pa.array(range(len(times)), pa.int32())})
    directory = tmp_path / "broker_metrics" / "date=2024-03-09"
    directory.mkdir(parents=True)
    path = str(directory / "part-20240310T000000Z-00000000.parquet")
    pq.write_table(rows, path, row_group_size=500)
    fs = pafs.LocalFileSystem()
    everything = reader.read_file(fs, path, SCHEMAS["broker_metrics"])
    for low, high in [(micros[1200], micros[1800]), (micros[1200] + 1, micros[1200] + 2), (base - 10, base),
                      (micros[-1], micros[-1] + 1), (base, base + 86_400_000_000)]:
        some = reader.read_file(fs, path, SCHEMAS["broker_metrics"], times=(int(low), int(high)))
        inside = lambda t, low=low, high=high: t.filter(pc.and_(pc.greater_equal(pc.cast(t["time"], pa.int64()), int(low)),  # noqa: E731 - used in this iteration only
                                            pc.less(pc.cast(t["time"], pa.int64()), int(high))))
        assert inside(some).equals(inside(everything))
        if high - low < 86_400_000_000:
            assert some.num_rows < everything.num_rows
    assert reader.read_days(str(tmp_path), "broker_metrics", date(2024, 3, 9), date(2024, 3, 9),
                            times=(base - 10, base)).num_rows == 100  # only the group of nulls: no statistics
