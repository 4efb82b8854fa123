#!/usr/bin/env sh
# Debian's package PACKAGE when CHECK (a shell test) fails, for a test that runs the real program
# (make test: prometheus for the dashboard test, postgresql for the history tests). The package's own
# service is turned off where systemd runs: the tests start their own, on 127.0.0.1.
#     tools/install_debian_package.sh PACKAGE 'CHECK' WHY
set -eu
package=$1 check=$2 why=$3
if sh -c "$check" >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
echo "installing Debian's $package package ($why)"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$package" >/dev/null
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    $SUDO systemctl disable --now "$package" >/dev/null 2>&1 || true
fi
