#!/usr/bin/env bash
# The jam's clock against issue 13's targets, on 127.0.0.1 only: the master's generated clock (tick jitter, with
# and without SCHED_FIFO, idle and with one or both cores kept busy) and a follower through a relay adding 0-10 ms
# of random delay per datagram (its beat times against the master's on one CLOCK_MONOTONIC, and an "immediate"
# follower's beside it). Builds jambridge (release) in .build-bench-main, then runs Benchmarks/jam_clock_bench.py
# (which starts and ends every jambridge it uses, by PID) and prints its figures.
#
#   Benchmarks/jam-clock-bench.sh                       # both scenarios, every variant, 60 s each
#   Benchmarks/jam-clock-bench.sh jitter                # the generator only
#   SECONDS_EACH=20 RUNS=3 Benchmarks/jam-clock-bench.sh follow
#   Benchmarks/jam_clock_bench.py --help                # one run, every option
#
# jitter variants: {SCHED_FIFO, normal priority (jambridge without CAP_SYS_NICE, through setpriv)} x {idle, a busy
# loop pinned to CPU 1, busy loops on both CPUs}. follow variants: every datagram delayed (CK included) and only
# the master's RTP packets delayed (CK exact), RUNS seeds each. The receivers are AppleMIDI listeners decoding with
# PyPI pymidi (.build-peers/venv, scripts/install-deps.sh) and stamping with the kernel's receive time.
# Needs root for SCHED_FIFO (the normal-priority runs drop it with setpriv).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
seconds=${SECONDS_EACH:-60}
runs=${RUNS:-1}
python="$root/.build-peers/venv/bin/python"
[ -x "$python" ] || { echo "no $python: run scripts/install-deps.sh first" >&2; exit 1; }
scenarios=("$@")
[ ${#scenarios[@]} -eq 0 ] && scenarios=(jitter follow)
for scenario in "${scenarios[@]}"; do
    case $scenario in jitter|follow) ;; *) echo "usage: $0 [jitter] [follow]  (unknown: $scenario)" >&2; exit 2 ;; esac
done

echo "building jambridge (release) in $root/.build-bench-main ..." >&2
if ! log=$(cd "$root" && swift build -c release --scratch-path "$root/.build-bench-main" --product jambridge 2>&1); then
    echo "$log" | grep -E "error|warning: " >&2 || echo "$log" >&2
    exit 1
fi
binary="$root/.build-bench-main/release/jambridge"

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), kernel $(uname -r), swift $(swift --version 2>&1 | sed -n 's/.*Swift version \([0-9.]*\).*/\1/p' | head -1), jambridge $(cd "$root" && git rev-parse --short HEAD)$(cd "$root" && git diff --quiet HEAD -- Sources Package.swift || echo ' + uncommitted changes in Sources')"
run() {
    echo
    echo "## $*"
    "$python" "$here/jam_clock_bench.py" "$@" --jambridge "$binary" --seconds "$seconds"
}
for scenario in "${scenarios[@]}"; do
    if [ "$scenario" = jitter ]; then
        for priority in rt no-rt; do
            for load in "" 1 0,1; do
                args=(jitter)
                [ "$priority" = no-rt ] && args+=(--no-rt)
                [ -n "$load" ] && args+=(--load "$load")
                for _ in $(seq "$runs"); do run "${args[@]}"; done
            done
        done
    else
        for delay in all rtp; do
            for seed in $(seq 13 $((12 + runs))); do run follow --delay "$delay" --seed "$seed"; done
        done
    fi
done
