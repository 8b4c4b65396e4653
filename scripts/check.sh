#!/usr/bin/env bash
# The linter and the type checker over the whole tree, with the rules in pyproject.toml ([tool.ruff],
# [tool.mypy]: the whole tree at mypy's default level, kpulse/, the collectors' models and the
# operations' plan types in strict mode). `make test` runs it before the tests; a finding fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '[check %4ss] %s\n' "$SECONDS" "$*"; }
step "ruff (linter)"
.venv/bin/ruff check --quiet .
step "mypy (type checker)"
.venv/bin/mypy --no-error-summary
step "no findings"
