#!/usr/bin/env bash
# Installs what is missing, then runs the whole test suite: bounded fuzzing of every
# parser, then the unit, property and integration tests (swift test) on this machine, then
# the ALSA integration suites (*ALSA*IntegrationTests) on a real ALSA sequencer: directly if
# this machine has /dev/snd/seq, otherwise in a VM per suite (scripts/alsa-tests.sh,
# docs/testing.md). The last lines printed say what passed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/fuzz.sh
swift build --build-tests

# The ALSA suites need a sequencer: skipped here (the pattern matches the suites' own IDs,
# Module.FooALSAIntegrationTests, Module.ALSAFooIntegrationTests), run by scripts/alsa-tests.sh below.
log=$(mktemp) alsa_log=$(mktemp)
trap 'rm -f "$log" "$alsa_log"' EXIT
host=0
swift test --skip-build --disable-xctest --skip 'ALSA[A-Za-z0-9_]*IntegrationTests$' 2>&1 | tee "$log" || host=$?
alsa=0
scripts/alsa-tests.sh 2>&1 | tee "$alsa_log" || alsa=$?

echo
echo "=== test.sh summary"
grep -a -E 'Test run with [0-9]+ tests?' "$log" | tail -n 1 | sed 's/\x1b\[[0-9;]*m//g; s/^/swift test (host, ALSA suites skipped): /'
[ "$host" -eq 0 ] || echo "swift test (host): FAILED (exit status $host)"
sed -n '/^=== ALSA integration suites/,$p' "$alsa_log" | grep -a -E '^(PASS|FAIL)  ' | sed 's/^/ALSA: /' || true
grep -a -E '^alsa-tests: (all|no|[0-9]+ of)' "$alsa_log" | tail -n 1 || true
[ "$alsa" -eq 0 ] || echo "ALSA integration suites: FAILED (exit status $alsa)"
[ "$host" -eq 0 ] && [ "$alsa" -eq 0 ]
