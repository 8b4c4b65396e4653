"""Share groups (KIP-932): start offset and lag per partition as the broker reports them, members
and assignments, and a Burrow-style status."""
