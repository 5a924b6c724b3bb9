#!/usr/bin/env bash
# Installs what is missing, builds jambridge (release) and runs it with the given arguments.
#   scripts/run.sh run --monitor --stop-after 30 routes/demo.yaml
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh run
swift build -c release --product jambridge 2>&1 | grep -v '^\[' || true
test -x .build/release/jambridge
exec .build/release/jambridge "$@"
