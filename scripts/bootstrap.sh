#!/usr/bin/env bash
# Create .venv and install the project with its dev tools. Safe to re-run.
# PyTorch goes in first as the CPU build: otherwise sentence-transformers pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"

# The namespace sandbox backend runs agents under bubblewrap (Debian package). Install it when we can.
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get install -y -qq bubblewrap >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq bubblewrap; }) \
      || echo "bootstrap: could not install bubblewrap; the namespace sandbox needs it" >&2
  else
    echo "bootstrap: bubblewrap (bwrap) not found; install it for the namespace sandbox (apt install bubblewrap)" >&2
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
