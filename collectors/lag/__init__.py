"""Consumer lag in offsets and seconds, with a Burrow-style status."""
