"""Reading committed offsets: a sliding window of OffsetFetch requests, every group answered or
failed with its reason, never left out (a fake Admin client; the real cluster is in
tests/test_consumer_lag_collector.py)."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace

import pytest

from kpulse.kafka import group_offsets


class SlowAdmin:
    """Answers OffsetFetch for the groups in ``answering``; the others never answer."""

    def __init__(self, answering: set[str]):
        self.answering = answering
        self.sent: list[str] = []
        self.most_in_flight = 0
        self._pending: list[Future] = []

    def list_consumer_group_offsets(self, requests, request_timeout):
        group_id = requests[0].group_id
        self.sent.append(group_id)
        future = Future()
        if group_id in self.answering:
            future.set_result(SimpleNamespace(topic_partitions=[
                SimpleNamespace(topic="t", partition=0, offset=7), SimpleNamespace(topic="t", partition=1, offset=-1)]))
        else:
            self._pending.append(future)
        self.most_in_flight = max(self.most_in_flight, len(self._pending))
        return {group_id: future}


def test_every_group_is_answered_and_at_most_the_window_is_in_flight():
    admin = SlowAdmin({f"g{i}" for i in range(7)})
    committed = group_offsets._committed_offsets(admin, [f"g{i}" for i in range(7)], 3, 5.0)
    assert committed == {f"g{i}": {("t", 0): 7} for i in range(7)}  # -1: never committed, left out
    assert admin.sent == [f"g{i}" for i in range(7)]


def test_groups_without_an_answer_in_time_fail_with_the_reason_sent_or_not():
    admin = SlowAdmin({"g0"})
    committed = group_offsets._committed_offsets(admin, ["g0", "g1", "g2", "g3", "g4"], 2, 0.2)
    assert committed["g0"] == {("t", 0): 7}
    for group in ("g1", "g2", "g3", "g4"):  # g1, g2 were in flight; g3, g4 never sent
        assert isinstance(committed[group], TimeoutError), group
        assert "no answer to OffsetFetch in 0.2 s" in str(committed[group])
    assert admin.most_in_flight <= 2


@pytest.mark.parametrize("committed", [{("t", 1): 5, ("t", 0): 7}, {}, None,
                                       Exception("OffsetFetch: GROUP_AUTHORIZATION_FAILED")],
                         ids=["offsets", "no-offsets", "not-answered", "failed"])
def test_a_group_listed_empty_is_read_as_a_group_described_with_no_members(committed):
    listed = {"type": "classic", "protocol_type": "consumer"}
    no_members = SimpleNamespace(state=SimpleNamespace(name="EMPTY"), members=())
    assert (group_offsets._empty_group("g", committed, listed)
            == group_offsets._group("g", no_members, committed, listed))


def test_a_listing_through_librdkafka_that_times_out_says_what_was_waited_for():
    """librdkafka's ListConsumerGroups waits for every broker it knows; when it runs into the
    timeout, the collector's status line says what did not answer (concurrent.futures' TimeoutError
    has no text: the status read "TimeoutError: ")."""
    class Unanswered:
        def list_consumer_groups(self, request_timeout):
            return Future()  # never answered

    with pytest.raises(TimeoutError, match=r"^no answer to ListGroups \(through librdkafka\) within 0.1 s$"):
        group_offsets.read_cluster_offsets(Unanswered(), lambda group_id: True, timeout=0.1)


def test_a_listing_whose_every_broker_failed_is_an_error_not_a_cluster_without_groups():
    """librdkafka's ListConsumerGroups answers with ``valid`` and ``errors``: a listing refused by
    every broker (a certificate the brokers reject, a wrong password) made the lag collector "up"
    with 0 groups when only ``valid`` was read."""
    from confluent_kafka import KafkaError, KafkaException

    class Refused:
        def list_consumer_groups(self, request_timeout):
            future = Future()
            refusal = KafkaException(KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error"))
            future.set_result(SimpleNamespace(valid=[], errors=[refusal, refusal]))
            return future

    with pytest.raises(group_offsets.ListingFailed,
                       match=r"^ListGroups failed on every broker: SASL authentication error$"):
        group_offsets.read_cluster_offsets(Refused(), lambda group_id: True, timeout=1)
