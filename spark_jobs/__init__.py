"""kpulse spark_jobs (later issues)."""
