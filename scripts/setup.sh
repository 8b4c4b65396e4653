#!/usr/bin/env bash
# Sets kpulse up on a fresh machine, idempotently, printing each step:
#   1. system packages when missing (a JDK 17+, Maven, python3-venv; with KPULSE_WITH_BROWSER=1, as
#      `make test` sets: Chromium, and the Prometheus, promtool and Alertmanager the tests start)
#   2. the virtualenv .venv and the pinned Python packages (skipped while requirements are unchanged)
#   3. the Java runtime: Kafka and the JMX exporter from Maven Central, the demo Streams app compiled
#      (and with KPULSE_WITH_BROWSER=1, the S3 server the lake's tests start: s3proxy's jar)
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '[setup %4ss] %s\n' "$SECONDS" "$*"; }

missing=()
if ! command -v java >/dev/null || ! command -v javac >/dev/null; then missing+=(openjdk-17-jdk-headless); fi
command -v mvn >/dev/null || missing+=(maven)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
# Chromium (headless) drives the dashboard tests; `make test` sets KPULSE_WITH_BROWSER=1.
if [ "${KPULSE_WITH_BROWSER:-0}" = 1 ] && ! command -v chromium >/dev/null; then missing+=(chromium fonts-dejavu-core); fi
# A real Prometheus (with promtool) and Alertmanager, started on loopback by the on-call tests.
if [ "${KPULSE_WITH_BROWSER:-0}" = 1 ]; then
  command -v promtool >/dev/null || missing+=(prometheus)
  command -v prometheus-alertmanager >/dev/null || missing+=(prometheus-alertmanager)
fi
if [ ${#missing[@]} -gt 0 ]; then
  step "installing system packages: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "kpulse setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo=sudo
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
java_major=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/ *java.specification.version = //p')
if [ "${java_major%%.*}" -lt 17 ] 2>/dev/null; then
  echo "kpulse setup: Java 17 or newer is needed, found ${java_major}" >&2; exit 1
fi

if [ ! -x .venv/bin/python ]; then
  step "creating the virtualenv .venv"
  "${KPULSE_PYTHON:-python3}" -m venv .venv
fi
stamp=.venv/.kpulse-requirements
wanted=$(cat requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  step "installing the pinned Python packages (the first time takes a few minutes: pyspark is large)"
  .venv/bin/pip install --progress-bar off --quiet -r requirements.txt
  .venv/bin/pip install --quiet --no-deps -e .
  echo "$wanted" > "$stamp"
fi

step "Java runtime: Kafka, the JMX exporter agent and the demo Streams app"
.venv/bin/kpulse setup
if [ "${KPULSE_WITH_BROWSER:-0}" = 1 ]; then
  step "the S3 server the lake's tests start (s3proxy, from Maven Central)"
  .venv/bin/python -m localkafka.s3_server fetch >/dev/null
fi
step "setup complete"
