#!/usr/bin/env bash
# Installs what jambridge needs to build and test on Debian 12, if it is missing.
# Swift 6.x itself is a prerequisite (https://www.swift.org/install/linux/): it is not an apt package.
set -euo pipefail

# Debian packages: mandoc lints the man pages in the tests.
packages=(mandoc)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "install-deps: installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1; then
    echo "install-deps: swift not found; install Swift 6.1 or later from swift.org and put it on PATH" >&2
    exit 1
fi
