#!/usr/bin/env bash
# PostgreSQL server binaries for tests/test_ledger_concurrency.py, which starts a throwaway
# cluster (initdb + pg_ctl, dpfast.ledger.testing).  Runs as root on a fresh machine; the
# Debian package also creates the 'postgres' user that owns the cluster (initdb refuses root).
set -euo pipefail
if command -v pg_ctl >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null; then
    exit 0
fi
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql
