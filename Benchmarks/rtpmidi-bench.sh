#!/usr/bin/env bash
# RTP-MIDI through a running jambridge, on 127.0.0.1: forwarding latency against a bare UDP
# relay in the same run, 100k messages/s throughput with loss check and CPU, and idle RSS/CPU
# with 16 connected peers. Builds jambridge (release) and the benchmark in their own scratch
# paths, then runs each scenario RUNS times (default 3) and prints the figures.
#
#   Benchmarks/rtpmidi-bench.sh                     # all three, 3 runs each
#   RUNS=5 Benchmarks/rtpmidi-bench.sh latency      # one scenario
#   STATIC=1 Benchmarks/rtpmidi-bench.sh idle       # also with jambridge built --static-swift-stdlib
#   RELAY=process Benchmarks/rtpmidi-bench.sh latency   # the relay in its own process, like jambridge
#   RELAY=dispatch-async Benchmarks/rtpmidi-bench.sh latency   # diagnostic floor (see --relay)
#   Benchmarks/rtpmidi-bench.sh osc-latency osc-throughput     # OSC in -> RTP-MIDI out (issue 6)
#   OSC_THROUGHPUT_SECONDS=30 RUNS=1 Benchmarks/rtpmidi-bench.sh osc-throughput   # does RSS level off?
#
# Scenarios: latency, throughput, idle (the default three), glob, and the OSC ones:
#   osc-latency     an 'osc:' endpoint on 127.0.0.1 routed to peer B; the benchmark sends OSC datagrams
#                   (encoded by hand) and times each to its MIDI message at B: /1/faderN f (a mapped entry,
#                   CC 21-28) and /note iii (the MIDI-over-OSC family), interleaved with the bare relay's
#                   RTP-MIDI path; 1000/s per path for 10 s after 1 s of warm-up; p50/p90/p99/p99.9/max.
#   osc-throughput  20,000 /1/faderN f datagrams/s for 10 s in batches of 20 (every value new to its fader, so
#                   de-duplication drops none); loss at B, jambridge's CPU and its RSS each second.
#   Their settings are environment variables: OSC_LATENCY_SECONDS, OSC_LATENCY_RATE, OSC_WARMUP_SECONDS,
#   OSC_THROUGHPUT_SECONDS, OSC_THROUGHPUT_RATE, OSC_BATCH.
#
# Route files use 'advertise: false' and 'bind: 127.0.0.1': nothing goes to Bonjour or off the host.
# Ports: a random even base in 20000-38000 per run (BASE_PORT=N to choose), base..base+40 (OSC: base+20).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
runs=${RUNS:-3}
build() { # quiet unless it fails
    local log
    if ! log=$("$@" 2>&1); then echo "$log" | grep -E "error|warning: " >&2 || echo "$log" >&2; exit 1; fi
}
scenarios=("$@")
[ ${#scenarios[@]} -eq 0 ] && scenarios=(latency throughput idle)
for scenario in "${scenarios[@]}"; do
    case $scenario in
        latency|throughput|idle|glob|osc-latency|osc-throughput) ;;
        *) echo "usage: $0 [latency] [throughput] [idle] [glob] [osc-latency] [osc-throughput]  (unknown: $scenario)" >&2; exit 2 ;;
    esac
done

echo "building jambridge (release) in $root/.build-bench-main ..." >&2
(cd "$root" && build swift build -c release --scratch-path "$root/.build-bench-main" --product jambridge)
binaries=("$root/.build-bench-main/release/jambridge")
if [ "${STATIC:-0}" = 1 ]; then
    echo "building jambridge (release, --static-swift-stdlib) in $root/.build-bench-main-static ..." >&2
    (cd "$root" && build swift build -c release --static-swift-stdlib --scratch-path "$root/.build-bench-main-static" --product jambridge)
    binaries+=("$root/.build-bench-main-static/release/jambridge")
fi
echo "building rtpmidi-bench in $here/.build-bench ..." >&2
(cd "$here" && build swift build -c release --scratch-path .build-bench --product rtpmidi-bench)
bench="$here/.build-bench/release/rtpmidi-bench"

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, swift $(swift --version 2>&1 | sed -n 's/.*Swift version \([0-9.]*\).*/\1/p' | head -1), jambridge $(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD -- Sources Package.swift || echo ' + uncommitted changes in Sources')"
for scenario in "${scenarios[@]}"; do
    for binary in "${binaries[@]}"; do
        [ "$scenario" != idle ] && [ "$binary" != "${binaries[0]}" ] && continue
        for run in $(seq "$runs"); do
            echo
            echo "# $scenario run $run/$runs, load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
            args=("$scenario" --jambridge "$binary")
            [ -n "${BASE_PORT:-}" ] && args+=(--base-port "$BASE_PORT")
            [ -n "${RELAY:-}" ] && args+=(--relay "$RELAY")
            "$bench" "${args[@]}" 2> >(grep -v "left: \(said goodbye\|session closed\)" >&2)
            echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
        done
    done
done
