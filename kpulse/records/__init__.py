"""Records read from a partition, for a person looking at the record a consumer is stuck on: the
typed read (:mod:`.model`), how keys, values and headers are shown (:mod:`.display`) and who may see
them (:mod:`.access`). Pure: the read itself is :mod:`kpulse.kafka.record_fetch`."""
