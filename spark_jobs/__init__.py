"""The PySpark SLO job: SLO definitions, per-minute SLIs, rolling windows, burn rates and alerts
from the lake, written back as the slo_minute, slo_hour and slo_status tables (``kpulse slo``)."""
