"""Readings shared by the collectors of one cycle (``collectors.protocol.CycleReadings``): a
collector waits for another's reading instead of reading the same thing again, and never for a
collector that is not in the cycle or that finished without publishing."""

from __future__ import annotations

import threading

from collectors.protocol import CollectContext, CollectorResult, CycleReadings, run_isolated

WAIT = 30.0
"""Long enough that a test waiting for it would be seen to hang rather than pass by luck."""


def test_a_published_reading_is_given_to_whoever_asks_in_the_cycle():
    shared = CycleReadings(["lag", "streams"])
    shared.publish("lag", {"groups": 3})
    shared.publish("lag", {"groups": 4})  # the first reading of the cycle counts
    assert shared.of("lag", WAIT) == {"groups": 3}


def test_no_reading_from_a_collector_not_in_the_cycle_or_finished_without_one():
    shared = CycleReadings(["lag", "streams"])
    assert shared.of("probe", WAIT) is None  # not in the cycle: not waited for
    shared.finished("lag")
    assert shared.of("lag", WAIT) is None
    shared.publish("lag", {"late": True})  # after it finished: ignored
    assert shared.of("lag", WAIT) is None


def test_others_running_until_every_other_collector_returned():
    shared = CycleReadings(["share", "lag", "streams"])
    assert shared.others_running("share")
    shared.finished("lag")
    assert shared.others_running("share")
    shared.finished("streams")
    assert not shared.others_running("share")
    assert shared.others_running("lag") is True  # share itself has not returned


class Publisher:
    name = "lag"

    def __init__(self, fail: bool = False):
        self.fail = fail
        self.go = threading.Event()

    def collect(self, context):
        assert self.go.wait(WAIT)
        if self.fail:
            raise RuntimeError("brokers down")
        context.shared.publish(self.name, ("groups", context.now))
        return CollectorResult(sections={"lag": "read"})


class Taker:
    name = "streams"

    def __init__(self, publisher: Publisher):
        self.publisher = publisher

    def collect(self, context):
        self.publisher.go.set()  # the publisher reads only once this one waits: the wait is real
        return CollectorResult(sections={"streams": context.shared.of("lag", WAIT)})


def test_run_isolated_gives_each_cycle_its_shared_readings():
    publisher = Publisher()
    sections, _, statuses = run_isolated([Taker(publisher), publisher], CollectContext(cluster=None, now=5.0))
    assert sections == {"lag": "read", "streams": ("groups", 5.0)}
    assert all(status.up for status in statuses)

    publisher.go.clear()
    sections, _, _ = run_isolated([Taker(publisher), publisher], CollectContext(cluster=None, now=15.0))
    assert sections["streams"] == ("groups", 15.0)  # this cycle's, not the last one's


def test_a_publisher_that_fails_releases_whoever_waits_for_it():
    publisher = Publisher(fail=True)
    sections, _, statuses = run_isolated([Taker(publisher), publisher], CollectContext(cluster=None, now=5.0))
    assert sections == {"streams": None}
    assert [(s.name, s.up) for s in statuses] == [("streams", True), ("lag", False)]
