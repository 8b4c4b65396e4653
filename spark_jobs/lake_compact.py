"""``spark-submit spark_jobs/lake_compact.py [--config kpulse.yaml] [--lake PATH] [--until TIME] [--dry-run]``.

The same job as ``kpulse lake compact``, for an existing Spark cluster. Ship the code with
``--py-files`` (a zip of ``spark_jobs/`` and ``kpulse/``) or run from a checkout.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from spark_jobs.compact_command import main  # noqa: E402 - after the checkout is on the path

if __name__ == "__main__":
    sys.exit(main())
