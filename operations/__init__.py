"""Operations that change a cluster: consumer-group offset resets, Streams application resets,
preferred leader elections and partition reassignments.

Every operation is plan-then-execute. A *planner* reads the cluster and returns a plan (plain,
frozen data that can be shown, exported to JSON or CSV and read back); it changes nothing. An
*executor* takes a plan and an actor, re-checks the preconditions right before applying it,
applies it, reads the result back and appends an audit record to the lake. The CLI
(``kpulse reset-offsets`` ...) and the dashboard call the same :class:`operations.service.Operations`.
"""
