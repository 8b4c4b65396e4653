"""kpulse collectors (later issues)."""
