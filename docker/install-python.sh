#!/bin/sh
# Installs into the image's virtualenv /opt/venv, at build time (docker/validator and docker/worker):
#
#   install-python.sh torch              torch==$TORCH_VERSION: from $TORCH_FIND_LINKS (a directory or URL
#                                        holding its wheel, without index) when set, else from
#                                        $TORCH_INDEX_URL when set (the CPU index), else from PyPI
#   install-python.sh project [EXTRAS]   the project in the current directory, with its extras
#
# torch goes in first and alone: its own layer, reused while the project's code changes, and whichever
# build was chosen (CPU or CUDA) satisfies the project's torch requirement afterwards. The optional
# build secret `pip_ca` is a CA bundle for hosts whose route to PyPI re-signs TLS.
set -eu
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
if [ -s /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi
[ -x /opt/venv/bin/python ] || python3 -m venv /opt/venv
pip="/opt/venv/bin/pip"

case "${1:-}" in
  torch)
    if [ -n "${TORCH_FIND_LINKS:-}" ]; then
      echo "install-python: torch==$TORCH_VERSION from $TORCH_FIND_LINKS"
      "$pip" install -q --no-deps --no-index --find-links "$TORCH_FIND_LINKS" "torch==$TORCH_VERSION"
      "$pip" install -q "torch==$TORCH_VERSION"  # installs only its dependencies, from PyPI
    elif [ -n "${TORCH_INDEX_URL:-}" ]; then
      echo "install-python: torch==$TORCH_VERSION from $TORCH_INDEX_URL"
      "$pip" install -q --index-url "$TORCH_INDEX_URL" "torch==$TORCH_VERSION"
    else
      echo "install-python: torch==$TORCH_VERSION from PyPI"
      "$pip" install -q "torch==$TORCH_VERSION"
    fi
    ;;
  project)
    extras="${2:-}"
    echo "install-python: the project${extras:+ with [$extras]}"
    "$pip" install -q --no-compile ".${extras:+[$extras]}"
    ;;
  *)
    echo "usage: install-python.sh torch | project [EXTRAS]" >&2
    exit 2
    ;;
esac
