#!/usr/bin/env sh
# Debian's prometheus package (prometheus and promtool), when missing: the dashboard test
# (tests/integration/test_prometheus_dashboard.py) runs a real Prometheus against a core and a shim.
# The package's service is not used: the test starts its own server on 127.0.0.1.
set -eu
if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
echo "installing Debian's prometheus package (for the dashboard test)"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
# The package enables and starts its service where systemd runs: not wanted here (the test runs its own).
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
