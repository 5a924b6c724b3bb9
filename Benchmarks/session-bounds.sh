#!/usr/bin/env bash
# What a spoofed flood, many peers and a rebooting peer cost a running jambridge (issue 12), on
# 127.0.0.1 with a release build:
#   flood     RSS before, after 10,000 forged AppleMIDI invitations (each from its own socket, never
#             followed up), after 10,000 OSC fader datagrams from as many sockets, and 6 s later
#   peers     RSS idle, then with N real AppleMIDI sessions (Tests/Peers/applemidi_players.py) that each
#             play a note and a controller on all 16 channels while jambridge sends them a looped
#             song: N = 16, 32 (the default max-peers) and 40 (8 are refused)
#   restart   a pymidi peer jambridge invited is SIGKILLed, stays down D seconds and starts again:
#             the time from its sockets being bound to the first note it receives, for D = 1, 5, 10, 20
#
#   Benchmarks/session-bounds.sh [flood] [peers] [restart]
#   JAMBRIDGE=/path/to/jambridge Benchmarks/session-bounds.sh flood    # another build (e.g. an older one)
# Needs scripts/install-deps.sh's Python (.build-peers/venv with pymidi).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
python=.build-peers/venv/bin/python
if [ -z "${JAMBRIDGE:-}" ]; then
    swift build -c release --product jambridge --scratch-path .build-bench >/dev/null
    JAMBRIDGE=$root/.build-bench/release/jambridge
fi
scenarios=("$@")
[ ${#scenarios[@]} -eq 0 ] && scenarios=(flood peers restart)
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
base=$(( (RANDOM % 9000 + 20000) * 2 ))
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
bound() { # waits until UDP port $1 is bound
    local hex; hex=$(printf ':%04X ' "$1")
    for _ in $(seq 200); do grep -q "$hex" /proc/net/udp && return 0; sleep 0.05; done
    echo "port $1 never bound" >&2; exit 1
}
# A song: note 60 on and off four times a second, looped.
"$python" - "$work/song.mid" <<'EOF'
import struct, sys
track = b"\x00\x90\x3c\x64" + b"\x60\x80\x3c\x00" + b"\x81\x00\xb0\x01\x00" + b"\x00\xff\x2f\x00"
open(sys.argv[1], "wb").write(b"MThd" + struct.pack(">IHHH", 6, 0, 1, 480) + b"MTrk" + struct.pack(">I", len(track)) + track)
EOF

for scenario in "${scenarios[@]}"; do
    case $scenario in
    flood)
        port=$base osc=$((base + 10))
        cat > "$work/flood.yaml" <<EOF
session: { name: hub, port: $port, bind: 127.0.0.1, advertise: false }
endpoints:
  phone: { osc: { listen: $osc, host: 127.0.0.1 } }
routes:
  - from: phone
    to: [session, phone]
    osc: { /1/fader1: { cc: 21 } }
EOF
        "$JAMBRIDGE" run --log-level error "$work/flood.yaml" & pid=$!; pids+=("$pid")
        bound "$osc"; sleep 1
        echo "flood: RSS $(rss $pid) kB at start"
        "$python" Tests/Peers/flood.py applemidi "$port" 10000 >/dev/null; sleep 1
        echo "flood: RSS $(rss $pid) kB after 10,000 forged invitations"
        "$python" Tests/Peers/flood.py osc "$osc" 10000 >/dev/null; sleep 1
        echo "flood: RSS $(rss $pid) kB after 10,000 OSC senders"
        sleep 6
        echo "flood: RSS $(rss $pid) kB 6 s later"
        kill -INT "$pid"; wait "$pid" || true
        ;;
    peers)
        for count in 16 32 40; do
            port=$((base + 20))
            cat > "$work/peers.yaml" <<EOF
session: { name: hub, port: $port, bind: 127.0.0.1, advertise: false }
endpoints:
  song: { file: $work/song.mid, loop: true }
routes:
  - { from: song, to: session }
EOF
            "$JAMBRIDGE" run --log-level error "$work/peers.yaml" & pid=$!; pids+=("$pid")
            bound "$((port + 1))"; sleep 1
            idle=$(rss $pid)
            "$python" Tests/Peers/applemidi_players.py "$port" "$count" 8 > "$work/players.out" & players=$!
            for _ in $(seq 200); do grep -q joined "$work/players.out" && break; sleep 0.05; done
            sleep 3 # every peer has been sent the song for a while: its journal history is there
            echo "peers: $count players ($(head -1 "$work/players.out")): RSS $idle kB idle, $(rss $pid) kB with them"
            wait "$players"
            kill -INT "$pid"; wait "$pid" || true
            base=$((base + 100))
        done
        ;;
    restart)
        port=$((base + 40))
        cat > "$work/restart.yaml" <<EOF
session: { name: rack, port: $((port + 2)), bind: 127.0.0.1, advertise: false, invite: [ { host: 127.0.0.1, port: $port } ] }
endpoints:
  song: { file: $work/song.mid, loop: true }
routes:
  - { from: song, to: session }
EOF
        "$JAMBRIDGE" run --log-level error "$work/restart.yaml" & pid=$!; pids+=("$pid")
        "$python" - "$port" <<'EOF'
import subprocess, sys, time
port, script = sys.argv[1], "Tests/Peers/pymidi_peer.py"
def start():
    peer = subprocess.Popen([".build-peers/venv/bin/python", script, port, "300"], stdout=subprocess.PIPE, text=True)
    peer.stdout.readline()  # {"event": "listening"}: its sockets are bound
    return peer, time.monotonic()
def first_note(peer, since):
    for line in peer.stdout:
        if "note_on" in line:
            return time.monotonic() - since
peer, since = start()
print("restart: first note %.0f ms after the peer first listened" % (first_note(peer, since) * 1000))
for down in (1, 5, 10, 20):
    peer.kill(); peer.wait()
    time.sleep(down)
    peer, since = start()
    print("restart: down %2d s: first note %.0f ms after it listened again" % (down, first_note(peer, since) * 1000))
peer.kill()
EOF
        kill -INT "$pid"; wait "$pid" || true
        ;;
    *) echo "usage: $0 [flood] [peers] [restart]" >&2; exit 2 ;;
    esac
done
