#!/usr/bin/env bash
# Builds the libFuzzer targets in Fuzz/ (address sanitizer on) and runs each for a fixed
# number of runs and seed, on a scratch copy of its committed seed corpus, so a run is
# repeatable and bounded. Fails if any target finds a crash, a hang or a leak.
#   FUZZ_RUNS=10000000 scripts/fuzz.sh     # a long campaign, by hand
set -euo pipefail
cd "$(dirname "$0")/../Fuzz"
runs=${FUZZ_RUNS:-50000}
seed=${FUZZ_SEED:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# target -> seed corpus folder in Fuzz/corpus/
declare -A corpus=(
    [FuzzMIDIParser]=midi-parser
    [FuzzStandardMIDIFile]=smf-reader
    [FuzzRouteFile]=route-file
    [FuzzSessionPacket]=session-packet
    [FuzzRTPMIDIPayload]=rtpmidi-payload
    [FuzzRecoveryJournal]=recovery-journal
    [FuzzOSCPacket]=osc-packet
    [FuzzOSCMapping]=osc-mapping
    [FuzzDrumkitXML]=drumkit-xml
    [FuzzOSCControl]=osc-control
    [FuzzControlRequest]=control-request
)
# Targets slower per input (two connected sessions each; a stream of messages through several
# mappers with ticks) run a fifth of the runs.
declare -A divisor=([FuzzRecoveryJournal]=5 [FuzzOSCMapping]=5)

# A build that fails stops here: the targets of an earlier build must not be fuzzed in its place.
swift build --scratch-path .build-fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld > "$work/build.log" 2>&1 \
    || { grep -E "error" "$work/build.log" | head -20 >&2; echo "fuzz: the build failed" >&2; exit 1; }
grep -E "warning: unre|Compiling Fuzz|Build complete" "$work/build.log" || true
for target in "${!corpus[@]}"; do
    test -x ".build-fuzz/debug/$target" || { echo "fuzz: $target did not build" >&2; exit 1; }
done

for target in $(printf '%s\n' "${!corpus[@]}" | sort); do
    mkdir -p "$work/$target"
    cp "corpus/${corpus[$target]}/"* "$work/$target/"
    start=$(date +%s%N)
    if ! SWIFT_BACKTRACE=enable=no ".build-fuzz/debug/$target" -runs="$(( runs / ${divisor[$target]:-1} ))" -seed="$seed" -timeout=10 \
        -rss_limit_mb=2048 -max_len=4096 -artifact_prefix="$work/" "$work/$target" >"$work/$target.log" 2>&1; then
        tail -40 "$work/$target.log" >&2
        mkdir -p ../fuzz-work && cp "$work"/crash-* "$work"/timeout-* "$work"/leak-* ../fuzz-work/ 2>/dev/null || true
        echo "fuzz: $target FAILED (reproducer, if any, copied to fuzz-work/)" >&2
        exit 1
    fi
    end=$(date +%s%N)
    execs=$(grep -o 'Done [0-9]* runs' "$work/$target.log" | grep -o '[0-9]*' || echo "?")
    printf 'fuzz: %-22s %s runs, seed %s, %d ms, no crash\n' "$target" "$execs" "$seed" $(( (end - start) / 1000000 ))
done
