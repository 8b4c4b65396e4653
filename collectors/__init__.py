"""kpulse collectors: broker health, consumer lag, Streams state and the end-to-end probe.

Every collector follows :class:`collectors.protocol.Collector`; values that could not be collected
are ``None`` with a reason, never a silent zero."""
