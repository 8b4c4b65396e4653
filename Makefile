# The two commands of the README:
#   make up    set everything up and start kpulse (local cluster + demo workload + ...)
#   make test  set everything up and run the whole test suite (what CI runs)
.PHONY: setup up down test bench

setup:
	@scripts/setup.sh

up: setup
	@.venv/bin/kpulse up

down:
	@.venv/bin/kpulse down

# The tests drive the dashboard in a headless Chromium and start a real Prometheus and Alertmanager:
# setup installs Debian's chromium, prometheus and prometheus-alertmanager.
# scripts/check.sh runs the linter and the type checker first: a finding fails the run before the tests.
# Two pytest workers: one runs every module that uses a Kafka cluster, the other the rest (tests/conftest.py).
test:
	@KPULSE_WITH_BROWSER=1 scripts/setup.sh
	@scripts/check.sh
	@.venv/bin/python -m pytest -n 2 --dist loadgroup

bench: setup
	@.venv/bin/python bench/cluster_startup.py
