#!/usr/bin/env bash
# Runs the ALSA integration suites (Swift Testing suites whose type name has ALSA in it and
# ends in IntegrationTests: HotplugALSAIntegrationTests, ALSASequencerIntegrationTests; in
# any test target) of the already-built test binary on a real ALSA
# sequencer: directly where /dev/snd/seq exists, otherwise in one throw-away VM per suite
# (scripts/alsa-vm.sh, about 10-25 s to boot). See docs/testing.md.
#
#   scripts/alsa-tests.sh [--vm] [SUITE...]
#
# SUITE: a suite's name, with or without its module (ALSASequencerIntegrationTests or
# JamBridgeTests.ALSASequencerIntegrationTests); all of them by default. --vm: use a VM even
# where /dev/snd/seq exists. Build first: swift build --build-tests; the suites run the release jambridge, which this
# script builds (swift build -c release --product jambridge).
# Environment: ALSA_TESTS_TIMEOUT (seconds per VM, default 1200); ALSA_VM_KEEP=1 and
# ALSA_VM_CONSOLE=1 are passed to scripts/alsa-vm.sh (keep or show the VM's console).
# Prints one PASS/FAIL line per suite with its time; exits 1 if a suite failed or a VM did
# not finish, 2 if there is no test binary.
set -euo pipefail
cd "$(dirname "$0")/.."
pattern="ALSA[A-Za-z0-9_]*IntegrationTests"

vm=""
[ "${1:-}" = --vm ] && { vm=1; shift; }
[ -e /dev/snd/seq ] || vm=1

binary=$(ls -d .build/debug/*PackageTests.xctest 2>/dev/null | head -n 1 || true)
[ -n "$binary" ] || { echo "alsa-tests: no test binary in .build/debug: run swift build --build-tests first" >&2; exit 2; }
run=("$binary" --testing-library swift-testing)

# The suites, from the binary's list of tests ("Module.Suite/test()"), so new ones are found.
all=$("${run[@]}" --list-tests | sed -n "s#^\([A-Za-z0-9_]*\.[A-Za-z0-9_]*$pattern\)/.*#\1#p" | sort -u)
if [ $# -gt 0 ]; then
    suites=""
    for want in "$@"; do
        found=$(printf '%s\n' "$all" | grep -x -E "([A-Za-z0-9_]+\.)?$want" || true)
        [ -n "$found" ] || { echo "alsa-tests: no suite $want (found: ${all:-none})" >&2; exit 2; }
        suites+="$found"$'\n'
    done
else
    suites=$all
fi
suites=$(printf '%s' "$suites" | sed '/^$/d')
if [ -z "$suites" ]; then
    echo "alsa-tests: no *ALSA*IntegrationTests suite in $binary: nothing to run"
    exit 0
fi

# The suites run the release jambridge (JAMBRIDGE_EXECUTABLE), as users do: emulated in the VM, the debug build's
# audio and clock threads fell behind on the machines of 2026-11-26 (underruns, clock syncs answered seconds late).
echo "alsa-tests: building jambridge (release) for the suites"
swift build -c release --product jambridge 2>&1 | grep -E "error|warning: unre" || true
release="$(swift build -c release --show-bin-path)/jambridge"
[ -x "$release" ] || { echo "alsa-tests: the release build of jambridge failed" >&2; exit 2; }

count=$(printf '%s\n' "$suites" | wc -l)
if [ -n "$vm" ]; then
    where="in a VM each (scripts/alsa-vm.sh)"
    [ -e /dev/snd/seq ] || where="$where: this machine has no /dev/snd/seq"
else
    where="directly on this machine's /dev/snd/seq"
fi
echo "alsa-tests: $count suite(s) $where"

summary=() failed=0
while read -r suite; do
    filter="^${suite//./\\.}\$" # the suite's own ID: not a file or a test that merely contains the name
    echo "=== $suite"
    start=$(date +%s.%N)
    status=0
    if [ -n "$vm" ]; then
        scripts/alsa-vm.sh --timeout "${ALSA_TESTS_TIMEOUT:-1200}" -- env JAMBRIDGE_EXECUTABLE="$release" "${run[@]}" \
            --filter "$filter" </dev/null || status=$?
    else
        JAMBRIDGE_EXECUTABLE="$release" "${run[@]}" --filter "$filter" </dev/null || status=$?
    fi
    seconds=$(echo "$(date +%s.%N) $start" | awk '{ printf "%.1f", $1 - $2 }')
    case $status in
        0) line="PASS  $suite  ${seconds} s" ;;
        124) line="FAIL  $suite  ${seconds} s (the VM did not finish)" ;;
        *) line="FAIL  $suite  ${seconds} s (exit status $status)" ;;
    esac
    [ "$status" -eq 0 ] || failed=$((failed + 1))
    summary+=("$line")
    echo "$line"
done <<<"$suites"

echo "=== ALSA integration suites ($where)"
printf '%s\n' "${summary[@]}"
if [ "$failed" -gt 0 ]; then
    echo "alsa-tests: $failed of $count suite(s) failed"
    exit 1
fi
echo "alsa-tests: all $count suite(s) passed"
