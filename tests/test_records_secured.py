"""``kpulse records`` on the secured cluster: a principal the ACLs do not allow gets one line naming the
ACL it lacks (in a module of its own: the secured cluster's modules run in a worker of their own)."""

from __future__ import annotations

import pytest

from tests.conftest import one_error_line
from tests.secure_support import TOPIC, config_for

pytestmark = pytest.mark.cluster


def records_as(capsys, config, *args: str):
    """``kpulse --config CONFIG records ARGS`` in this process: (exit code, stdout, stderr)."""
    import subprocess

    from cli.main import main

    code = main(["--config", str(config), "records", *args])
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, captured.out, captured.err)


def test_a_principal_without_read_on_the_topic_gets_the_acl_it_lacks(capsys, secure_cluster, tmp_path):
    result = records_as(capsys, config_for(secure_cluster, tmp_path, "reader"), "--group", "team-a-billing",
                        "--topic", TOPIC, "--partition", "1")
    assert one_error_line(result) == f"kpulse: error: not authorized: Read on topic {TOPIC}"


def test_a_principal_without_describe_on_the_group_gets_the_acl_it_lacks(capsys, secure_cluster, tmp_path):
    result = records_as(capsys, config_for(secure_cluster, tmp_path, "partial"), "--group", "team-b-audit",
                        "--topic", TOPIC, "--partition", "1")
    assert one_error_line(result) == "kpulse: error: not authorized: Describe on group team-b-audit"
