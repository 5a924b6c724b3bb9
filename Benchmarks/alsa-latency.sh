#!/usr/bin/env bash
# ALSA forwarding latency, inside the test VM (scripts/alsa-vm.sh: the only sequencer here). In one boot, three paths
# taken in turn, note by note, each written into one virmidi device and read back from the next:
#   kernel     hw:0,0 -> the kernel's own routing (aconnect 'Virtual Raw MIDI 0-0' 'Virtual Raw MIDI 0-1') -> hw:0,1
#   relay      hw:0,1 -> Benchmarks/alsa-latency/relay.c, a process that reads each event and writes it on -> hw:0,2
#   jambridge  hw:0,2 -> jambridge (release), a route between two ALSA endpoints -> hw:0,3
# (A device is the source of one path and the destination of the next: what a virmidi device's sequencer port is
# sent goes to its rawmidi input only, never out of the port again.) The probe times each note-on from just before
# its write() to the return of the read() that has it (Python, CLOCK_MONOTONIC: its own wake-up is in every path);
# each note-off is awaited, not counted; it also prints the RSS of jambridge and the relay, and the CPU time each used
# over the notes. The VM emulates the CPU, so absolute times are slow: compare the paths.
#   Benchmarks/alsa-latency.sh [SAMPLES] [static]   (default 300 per path; static: jambridge built
#                                                    --static-swift-stdlib, as scripts/run.sh builds it)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
samples=${1:-300}
linking=${2:-}
build=$root/.build-bench-main${linking:+-static}
if [ ! -e /dev/snd/seq ]; then
    echo "building jambridge (release${linking:+, static}) and the bare ALSA relay in $build ..." >&2
    (cd "$root" && swift build -c release ${linking:+--static-swift-stdlib} --scratch-path "$build" --product jambridge >/dev/null)
    cc -O2 -Wall -o "$build/alsa-relay" "$root/Benchmarks/alsa-latency/relay.c" -lasound
    cd "$root" && exec scripts/alsa-vm.sh --timeout 900 -- bash Benchmarks/alsa-latency.sh "$samples" $linking
fi
aconnect 'Virtual Raw MIDI 0-0' 'Virtual Raw MIDI 0-1'
"$build/alsa-relay" 'Virtual Raw MIDI 0-1' 'Virtual Raw MIDI 0-2' >/tmp/alsa-relay.out &
relay=$!
cat > /tmp/latency.yaml <<'Y'
endpoints:
  keys: { alsa: "Virtual Raw MIDI 0-2" }
  synth: { alsa: "Virtual Raw MIDI 0-3" }
routes:
  - { from: keys, to: synth }
Y
"$build/release/jambridge" run /tmp/latency.yaml 2>/tmp/jb.err &
jambridge=$!
for _ in $(seq 300); do grep -q "connected to synth" /tmp/jb.err 2>/dev/null && grep -q ready /tmp/alsa-relay.out && break; sleep 0.1; done
python3 - "$samples" "$jambridge" "$relay" <<'PY'
import os, sys, time, select
samples, pids = int(sys.argv[1]), {'jambridge': sys.argv[2], 'relay': sys.argv[3]}
paths = [('kernel', 0, 1), ('relay', 1, 2), ('jambridge', 2, 3)]
outs = {d: os.open(f'/dev/snd/midiC0D{d}', os.O_WRONLY) for d in range(3)}
ins = {d: os.open(f'/dev/snd/midiC0D{d}', os.O_RDONLY | os.O_NONBLOCK) for d in range(1, 4)}
lat = {label: [] for label, _, _ in paths}
lost = {label: 0 for label, _, _ in paths}

def drain(fd):
    try:
        while os.read(fd, 256): pass
    except BlockingIOError:
        pass

def send(fd_out, fd_in, message):  # the time from just before the write to the read that completes `message`
    drain(fd_in)
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    os.write(fd_out, message)
    got = b''
    while message not in got:
        r, _, _ = select.select([fd_in], [], [], 2)
        if not r: return None
        got += os.read(fd_in, 256)
    return (time.clock_gettime_ns(time.CLOCK_MONOTONIC) - t0) / 1000

def cpu(pid):  # user and system CPU time of process `pid`, all its threads, in seconds
    fields = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')  # utime, stime: fields 14 and 15

started = {label: cpu(pid) for label, pid in pids.items()}
for i in range(samples + 20):
    for label, source, destination in paths:
        note = 36 + i % 48
        t = send(outs[source], ins[destination], bytes([0x90 | i % 2, note, 100]))  # alternating channels: no running status
        if i >= 20:
            if t is None: lost[label] += 1
            else: lat[label].append(t)
        send(outs[source], ins[destination], bytes([0x80 | i % 2, note, 0]))
        time.sleep(0.02)
pick = lambda values, q: values[min(len(values) - 1, int(q * len(values)))]
figures = {}
print('| path | n | lost | p50 µs | p90 µs | p99 µs |')
print('|---|---|---|---|---|---|')
for label, _, _ in paths:
    values = sorted(lat[label])
    if not values: sys.exit(f'{label}: nothing came back')
    figures[label] = [pick(values, q) for q in (0.5, 0.9, 0.99)]
    print(f'| {label} | {len(values)} | {lost[label]} | ' + ' | '.join(f'{v:.0f}' for v in figures[label]) + ' |')
for label in ('jambridge', 'relay'):
    for base in ('kernel', 'relay'):
        if label != base:
            print(f'{label}/{base}: p50 {figures[label][0] / figures[base][0]:.1f}x, p99 {figures[label][2] / figures[base][2]:.1f}x')
for label, pid in pids.items():
    status = dict(line.split(':', 1) for line in open(f'/proc/{pid}/status'))
    print(f"{label}: VmRSS {status['VmRSS'].strip()}, CPU {cpu(pid) - started[label]:.2f} s over the notes")
PY
kill $jambridge $relay
