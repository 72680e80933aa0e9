#!/usr/bin/env bash
# Create .venv and install the project with its dev tools. Safe to re-run.
# PyTorch goes in first as the CPU build: otherwise sentence-transformers pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"

# Debian packages: bubblewrap runs the namespace sandbox backend; chromium renders the validator's
# leaderboard page in its test. Installed when we are root with apt; otherwise we say what is missing.
missing=""
command -v bwrap >/dev/null 2>&1 || missing="$missing bubblewrap"
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    (apt-get install -y -qq $missing >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq $missing; }) \
      || echo "bootstrap: could not install$missing (apt-get install -y$missing)" >&2
  else
    echo "bootstrap: missing Debian packages:$missing (sudo apt-get install -y$missing)" >&2
  fi
fi

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  # The project's machines carry a CPU wheel of this version on local disk. Elsewhere, install a CPU
  # build of torch into .venv yourself first (or set TORCH_SPEC), and this step is skipped.
  .venv/bin/python -m pip install --quiet "$TORCH_SPEC"
fi
.venv/bin/python -m pip install --quiet -e ".[dev]"
echo "bootstrap: ready (.venv)"
