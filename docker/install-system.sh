#!/bin/sh
# Debian packages of the validator and worker images, at build time: bubblewrap (the namespace sandbox
# backend), tini (reaps the sandboxes' orphans as pid 1) and, when $DOCKER_CLI is true, the docker CLI
# binary out of Debian's docker.io (not its engine: the host's is used, for the docker sandbox backend).
# setpriv, which drops each namespace slot to its own uid, is in util-linux, in every Debian base.
set -eu
apt-get update
apt-get install -y --no-install-recommends bubblewrap tini
if [ "${DOCKER_CLI:-true}" = true ]; then
  cd /tmp
  apt-get download docker.io
  dpkg-deb --fsys-tarfile docker.io_*.deb | tar -x -C / ./usr/bin/docker
  rm docker.io_*.deb
fi
rm -rf /var/lib/apt/lists/*
