#!/usr/bin/env bash
# ALSA forwarding latency, inside the test VM (scripts/alsa-vm.sh: the only sequencer here):
# note-ons written into virmidi hw:0,0 and read back from hw:0,1, first through the kernel's
# own routing (aconnect 'Virtual Raw MIDI 0-0' -> 'Virtual Raw MIDI 0-1'), then through
# jambridge (release) with a route between the two devices; same run, same VM. The VM
# emulates the CPU, so absolute times are slow: compare the two paths.
#   Benchmarks/alsa-latency.sh [SAMPLES]      (default 300)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
samples=${1:-300}
if [ ! -e /dev/snd/seq ]; then
    echo "building jambridge (release) in $root/.build-bench-main ..." >&2
    (cd "$root" && swift build -c release --scratch-path .build-bench-main --product jambridge >/dev/null)
    cd "$root" && exec scripts/alsa-vm.sh --timeout 900 -- bash Benchmarks/alsa-latency.sh "$samples"
fi
probe() { # $1: label
    python3 - "$1" "$samples" <<'PY'
import os, sys, time, select
label, samples = sys.argv[1], int(sys.argv[2])
out = os.open('/dev/snd/midiC0D0', os.O_WRONLY)
inp = os.open('/dev/snd/midiC0D1', os.O_RDONLY | os.O_NONBLOCK)
lat = []
for i in range(samples + 20):
    note = 36 + i % 48
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    os.write(out, bytes([0x90 | i % 2, note, 100]))  # alternating channels: no running status on the way out
    got = b''
    while len(got) < 3:
        r, _, _ = select.select([inp], [], [], 2)
        if not r: break
        got += os.read(inp, 64)
    t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    if len(got) >= 3 and i >= 20: lat.append((t1 - t0) / 1000)
    time.sleep(0.02)
lat.sort()
if not lat: sys.exit(f'{label}: nothing came back')
pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
print(f"{label:10s} n={len(lat)} p50={pick(0.5):.0f} us p90={pick(0.9):.0f} us p99={pick(0.99):.0f} us")
PY
}
aconnect 'Virtual Raw MIDI 0-0' 'Virtual Raw MIDI 0-1'
probe kernel
aconnect -d 'Virtual Raw MIDI 0-0' 'Virtual Raw MIDI 0-1'
cat > /tmp/latency.yaml <<'Y'
endpoints:
  keys: { alsa: "Virtual Raw MIDI 0-0" }
  synth: { alsa: "Virtual Raw MIDI 0-1" }
routes:
  - { from: keys, to: synth }
Y
"$root/.build-bench-main/release/jambridge" run /tmp/latency.yaml 2>/tmp/jb.err &
for _ in $(seq 300); do grep -q "connected to synth" /tmp/jb.err 2>/dev/null && break; sleep 0.1; done
probe jambridge
kill %1
