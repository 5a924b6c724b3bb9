#!/usr/bin/env bash
# ALSA -> RTP-MIDI latency (issue 34), inside the test VM (scripts/alsa-vm.sh: the only sequencer here). In one
# boot, three paths taken in turn, one note-on every 20 ms, each path fed by a virmidi device of its own:
#   kernel     hw:0,0 -> the kernel's routing (aconnect 'Virtual Raw MIDI 0-0' -> 'Virtual Raw MIDI 0-1') -> hw:0,1
#   jambridge  hw:0,2 -> jambridge (release): an ALSA endpoint routed to its session (127.0.0.1, not advertised)
#   relay      hw:0,3 -> Benchmarks/alsa-rtp-latency/relay.c: libasound in, one RTP-MIDI datagram out, no journal
#   rtpmidid   only if RTPMIDID names an rtpmidid binary (for the record; nothing here fetches or builds it):
#              hw:0,1's output side -> rtpmidid (its ini's connect_to: 127.0.0.1, the probe) -> RTP-MIDI to the probe
# Benchmarks/alsa-rtp-latency/probe.py writes the notes, is the RTP-MIDI peer (it invites jambridge's session; the
# relay sends to the same data port) and times each note from just before write() to the kernel's stamp of its
# arrival; it prints n, p50/p90/p99 per path, the ratios, the RSS and CPU time of each process while running.
# The VM emulates the CPU, so absolute times are slow: compare the paths.
#   Benchmarks/alsa-rtp-latency.sh [SAMPLES] [static]   (default 300 per path; static: jambridge built
#                                                        --static-swift-stdlib, as scripts/run.sh builds it)
#   RTPMIDID=/path/to/rtpmidid Benchmarks/alsa-rtp-latency.sh ...   (the fourth path too)
# rtpmidid by hand, outside this repository (Debian: apt-get install cmake libfmt-dev libavahi-client-dev
# libasound2-dev): git clone https://github.com/davidmoreno/rtpmidid && cd rtpmidid && mkdir build && cd build &&
# cmake .. -DCMAKE_BUILD_TYPE=Release -DENABLE_TESTS=OFF && make; the binary is build/src/rtpmidid.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
samples=${1:-300}
linking=${2:-}
build=$root/.build-bench-main${linking:+-static}
if [ ! -e /dev/snd/seq ]; then
    echo "building jambridge (release${linking:+, static}) and the bare relay in $build ..." >&2
    (cd "$root" && swift build -c release ${linking:+--static-swift-stdlib} --scratch-path "$build" --product jambridge >/dev/null)
    cc -O2 -Wall -o "$build/alsa-rtp-relay" "$root/Benchmarks/alsa-rtp-latency/relay.c" -lasound
    rtpmidid=()
    if [ -n "${RTPMIDID:-}" ]; then
        [ -x "$RTPMIDID" ] || { echo "RTPMIDID=$RTPMIDID is not an executable" >&2; exit 2; }
        rtpmidid=(env RTPMIDID="$(realpath "$RTPMIDID")") # the VM sees this machine's files at the same paths
    fi
    cd "$root" && exec scripts/alsa-vm.sh --timeout 900 -- "${rtpmidid[@]}" bash Benchmarks/alsa-rtp-latency.sh "$samples" $linking
fi
session_port=5104 peer_port=5106
aconnect 'Virtual Raw MIDI 0-0' 'Virtual Raw MIDI 0-1'
cat >/tmp/alsa-rtp.yaml <<Y
session: { name: bench, port: $session_port, bind: 127.0.0.1, advertise: false }
endpoints:
  keys: { alsa: "Virtual Raw MIDI 0-2" }
routes:
  - { from: keys, to: session }
Y
"$build/release/jambridge" run /tmp/alsa-rtp.yaml 2>/tmp/jambridge.err &
jambridge=$!
"$build/alsa-rtp-relay" 'Virtual Raw MIDI 0-3' $((peer_port + 1)) >/tmp/relay.out &
relay=$!
rtpmidid= fourth=()
if [ -n "${RTPMIDID:-}" ]; then
    # No announcement, discovery or export: one ALSA port ('probe') whose first subscriber makes rtpmidid invite the
    # probe (the probe subscribes it to hw:0,1 once it listens).
    cat >/tmp/rtpmidid.ini <<I
[general]
alsa_name=rtpmidid
control=/tmp/rtpmidid.sock
log_level=warning
[rtpmidi_discover]
enabled=false
[connect_to]
hostname=127.0.0.1
port=$peer_port
name=probe
I
    "$RTPMIDID" --ini /tmp/rtpmidid.ini >/tmp/rtpmidid.err 2>&1 &
    rtpmidid=$!
fi
trap 'kill $jambridge $relay $rtpmidid 2>/dev/null || true' EXIT
# rtpmidid's port, as "client:port", once it is there (/proc/asound/seq/clients: a 'Client N : "rtpmidid"' line,
# then its ports as 'Port M : "probe"')
rtpmidid_port() {
    awk '/^Client/ { client = ($4 == "\"rtpmidid\"") ? $2 : "" }
         client != "" && /^  Port/ && $4 == "\"probe\"" { print client ":" $2 + 0; exit }' /proc/asound/seq/clients
}
for _ in $(seq 600); do
    grep -q "connected to keys" /tmp/jambridge.err && grep -q ready /tmp/relay.out &&
        { [ -z "$rtpmidid" ] || [ -n "$(rtpmidid_port)" ]; } && break
    sleep 0.1
done
grep -q "connected to keys" /tmp/jambridge.err || { echo "jambridge did not connect to the device:" >&2; cat /tmp/jambridge.err >&2; exit 1; }
grep -q ready /tmp/relay.out || { echo "the relay did not subscribe" >&2; exit 1; }
if [ -n "$rtpmidid" ]; then
    [ -n "$(rtpmidid_port)" ] || { echo "rtpmidid made no 'probe' port:" >&2; cat /tmp/rtpmidid.err >&2; exit 1; }
    fourth=(--rtpmidid "$(rtpmidid_port)" --pid rtpmidid=$rtpmidid)
fi
python3 "$root/Benchmarks/alsa-rtp-latency/probe.py" --samples "$samples" --session-port $session_port \
    --peer-port $peer_port --pid jambridge=$jambridge --pid relay=$relay "${fourth[@]}"
