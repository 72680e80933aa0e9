#!/usr/bin/env bash
# Make sure the loopback PostgreSQL the store's tests use is running (the machine starts it; a stopped
# one is started again). Without one, the PostgreSQL tests fail with a message naming this script.
set -uo pipefail
if command -v pg_isready >/dev/null && ! pg_isready -q -h 127.0.0.1 -p 5432; then
  if command -v pg_ctlcluster >/dev/null; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
  fi
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi
pg_isready -h 127.0.0.1 -p 5432 || echo "services: PostgreSQL is not answering on 127.0.0.1:5432" >&2
exit 0
