#!/usr/bin/env sh
# Debian's postgresql package, when missing: the history tests (tests/integration/test_history_grpc.py)
# run a real PostgreSQL, a cluster of their own made by initdb in a temporary directory on 127.0.0.1.
# The package's own cluster and service are not used.
set -eu
if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
echo "installing Debian's postgresql package (for the history tests)"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
# The package starts its own cluster where systemd runs: not wanted here (the tests run their own).
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    $SUDO systemctl disable --now postgresql >/dev/null 2>&1 || true
fi
