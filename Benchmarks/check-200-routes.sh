#!/usr/bin/env bash
# Times `jambridge check` (release build, process start included) on a generated
# 200-route file, 30 runs; prints the median and the slowest.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product jambridge >/dev/null
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
{
    echo "endpoints:"
    for i in 0 1 2 3 4; do echo "  song$i: { file: song$i.mid, loop: true }"; done
    for i in 0 1 2 3 4; do echo "  tape$i: { record: tape$i.mid }"; done
    echo "routes:"
    for i in $(seq 0 199); do
        cat <<ROUTE
  - from: song$((i % 5))
    to: [tape$((i % 5)), tape$(((i + 1) % 5))]
    only: [note, cc, pitchbend]
    channels: [$((1 + i % 16))]
    notes: C2..C6
    transpose: $((i % 12))
    velocity: { curve: 1.5, from: [0, 127], to: [20, 127] }
    cc: { 1: 74 }
    channel: { $((1 + i % 16)): $((1 + (i + 3) % 16)) }
ROUTE
    done
} > "$dir/200-routes.yaml"
.build/release/jambridge check "$dir/200-routes.yaml"
times=()
for _ in $(seq 30); do
    start=$(date +%s%N)
    .build/release/jambridge check "$dir/200-routes.yaml" >/dev/null
    times+=($(( ($(date +%s%N) - start) / 1000 )))
done
sorted=($(printf '%s\n' "${times[@]}" | sort -n))
echo "jambridge check, 200 routes, 30 runs: median ${sorted[15]} us, slowest ${sorted[29]} us"
