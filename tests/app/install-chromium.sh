#!/usr/bin/env bash
# Debian's Chromium for the browser test (tests/app/test_browser.py); does nothing when a
# chromium is already on PATH. Needs root or sudo (apt-get).
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
$sudo apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
