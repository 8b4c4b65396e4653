"""``spark-submit spark_jobs/slo_job.py [--config FILE] [--lake PATH] [--definitions FILE] [--until TIME] [--cluster NAME]``.

The same job as ``kpulse slo run``, for an existing Spark cluster; ``--config`` gives the lake and
its credentials (``lake.s3``, handed to the executors). Ship the code with
``--py-files`` (a zip of ``spark_jobs/`` and ``kpulse/``) or run from a checkout.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from spark_jobs.command import main  # noqa: E402 - after the checkout is on the path

if __name__ == "__main__":
    sys.exit(main())
