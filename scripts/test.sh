#!/usr/bin/env bash
# Lint, type-check the rule modules, run the whole test suite. Exit code: first failure wins.
set -uo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

.venv/bin/ruff check . || exit 1
.venv/bin/mypy || exit 1
.venv/bin/python -m pytest "$@"
status=$?
case "$status" in
  0) ;;
  5) echo "test.sh: pytest collected no tests: treating as a failure" >&2 ;;
  *) echo "test.sh: pytest exited with $status" >&2 ;;
esac
exit "$status"
