"""The ``kpulse`` command: the only package that imports every other."""
