#!/usr/bin/env bash
# Installs what is missing, then runs the whole test suite: bounded fuzzing of every
# parser, then the unit, property and integration tests (swift test), whose summary
# line is the last thing printed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/fuzz.sh
swift build --build-tests
swift test --skip-build --disable-xctest
