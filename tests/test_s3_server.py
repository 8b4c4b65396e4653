"""The real S3 server the lake's tests use (s3proxy on loopback, ``localkafka/s3_server.py``):
it speaks S3 as pyarrow does (put, list, get, delete, path-style) and refuses a wrong secret."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from localkafka.s3_server import JAR_SHA256, S3Server, is_ready, jar_path
from tests.conftest import S3_BUCKET


def test_the_fetched_jar_is_the_pinned_one(s3_server):
    assert is_ready() and jar_path().is_file() and len(JAR_SHA256) == 64


def test_objects_are_written_listed_read_and_deleted(s3_server: S3Server):
    fs = s3_server.filesystem()
    path = f"{S3_BUCKET}/server-check/t/date=2026-03-09/part-1.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3]}), path, filesystem=fs)
    listed = fs.get_file_info(pafs.FileSelector(f"{S3_BUCKET}/server-check/t"))
    assert [(e.base_name, e.type) for e in listed] == [("date=2026-03-09", pafs.FileType.Directory)]
    assert pq.read_table(path, filesystem=fs).column("a").to_pylist() == [1, 2, 3]
    fs.delete_file(path)
    assert fs.get_file_info(path).type == pafs.FileType.NotFound


def test_a_wrong_secret_is_refused(s3_server: S3Server):
    with pytest.raises(OSError, match="SIGNATURE_DOES_NOT_MATCH|InvalidAccessKeyId|ACCESS_DENIED"):
        s3_server.filesystem(secret_key="not-the-secret").get_file_info(pafs.FileSelector(S3_BUCKET))
