"""Burrow-style consumer status over a sliding window of offset observations: the rules, their
defaults and the statuses. Pure, no I/O.

``collectors/lag/lag_arrays.py`` applies these rules to every group partition of a cycle at once;
``tests/lag_oracle.py`` states them one window at a time, as the reference it is tested against.

Burrow (``core/internal/evaluator/caching.go``) looks at the last N (default 10) offsets a group
*committed* for a partition. kpulse does not see commits: it polls committed offsets and log ends
once per collection cycle, so here an observation is one poll result, and "the consumer commits
but does not move" cannot be told from "the consumer stopped committing" by timestamps. The
group's membership tells them apart instead (``has_members``, from DescribeGroups).

Rules, evaluated top to bottom over the window of one partition; the first that matches wins:

====  =========================================================================  ==========
rule  condition                                                                  status
====  =========================================================================  ==========
0     no observation                                                             ``None``
1     the lag is 0 in any observation of the window (caught up at least once)    OK
2     fewer than ``min_observations`` (default 3) observations                   ``None``
3     the committed offset decreased between two consecutive observations        REWIND
4     committed offset unchanged across the window (lag > 0 by rule 1) and it
      has been unchanged for longer than ``err_after_seconds`` (default 900 s)   ERR
5     committed offset unchanged across the window, group has active members     STALL
6     committed offset unchanged across the window, group has no members         STOP
7     lag never decreased between consecutive observations and grew overall
      (last lag > first lag)                                                     WARN
8     otherwise                                                                  OK
====  =========================================================================  ==========

Differences from Burrow, on purpose:

* STOP/STALL: Burrow's STOP is "now - last commit time > last - first commit time" and its STALL
  is "commits that repeat the same offset". Without commit timestamps both become "the offset did
  not move across the window", split by ``has_members`` (no members = nobody is consuming = STOP;
  members present but no progress = STALL, e.g. a poison record or a hung poll loop).
* ERR: Burrow uses ERR only for groups (any partition in STOP/STALL/REWIND). kpulse keeps the
  partition statuses apart and uses ERR for escalation: a partition stuck (rule 5 or 6) for
  longer than ``err_after_seconds``. "Stuck since" is the first poll that saw the current
  committed offset, tracked beyond the window; if kpulse started while the group was already
  stuck, it is a lower bound.
* WARN: Burrow warns when the lag never decreased, which also flags a perfectly flat non-zero lag
  of a consumer that keeps pace; kpulse also requires that the lag grew (DOMAIN: "lag keeps
  growing"). With polling, a healthy consumer's lag is rarely exactly 0 but goes up and down.
* Rule 2: a partition seen fewer than ``min_observations`` times has no status (``None``), not OK
  (no data is not good), unless rule 1 already shows it caught up.

Group status is the worst status of its partitions by this severity ranking (``None`` partitions
are skipped; ``None`` when no partition has a status; names and order: ``kpulse/lag_contract.py``):

    OK < WARN < REWIND < STALL < STOP < ERR

REWIND is usually an operator's offset reset, and the consumer is moving; STALL is a live consumer
that makes no progress; STOP means nobody consumes at all (it may be a retired group, yet lag
grows for everyone downstream); ERR is STALL or STOP that has lasted.
"""

from __future__ import annotations

DEFAULT_WINDOW_SIZE = 10
DEFAULT_MIN_OBSERVATIONS = 3
DEFAULT_ERR_AFTER_SECONDS = 900.0


