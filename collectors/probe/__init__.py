"""The end-to-end probe: produce, consume, time."""
