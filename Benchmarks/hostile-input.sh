#!/usr/bin/env bash
# What each hostile flood of issue 29 costs a running jambridge, on 127.0.0.1 with a release build: for each, the
# daemon's RSS and open files before and after, the CPU it spent, the log lines it wrote, and what it let through
# (a fresh daemon for each).
#   osc-nan      10,000 datagrams /jambridge/drums/level with NaN (and inf, 1e30) to an endpoint with control: true
#   osc-commands /jambridge/start and /stop in turn, 5,000 a second for 10 s (control: true)
#   transport    a joined peer's Start and Stop in turn, 10,000 a second for 10 s (Tests/Peers/hostile.py)
#   backdated    a joined peer's Start stamped 30 s in the past, against a running master
#   invitations  forged AppleMIDI INs, 2,000 a second for 10 s, while a real peer joins (time to its joining)
#   forged-stop, forged-sequence, forged-journal
#                a joined peer leads a song for 4 s (192 ticks) with one forged packet under its SSRC 2 s in: a Stop
#                from 127.0.0.2, a tick 30,000 on in sequence, a journal putting the song at tick 500,000 (the last
#                two from the peer's own address, as a spoofer would; Tests/Peers/hostile.py forged)
#   operator     OSC /jambridge/start and /stop, 5,000 a second for 10 s, while `jambridge stop` runs every 2 s
#                (issue 41: how many are carried out, and the jam's own log lines of the flood)
#
#   Benchmarks/hostile-input.sh [osc-nan] [osc-commands] [transport] [backdated] [invitations] [operator] [forged-stop] ...
#   JAMBRIDGE=/path/to/jambridge Benchmarks/hostile-input.sh      # another build (e.g. an older one)
# Needs scripts/install-deps.sh's Python (.build-peers/venv with pymidi and python-osc).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
python=$root/.build-peers/venv/bin/python
peers=$root/Tests/Peers
if [ -z "${JAMBRIDGE:-}" ]; then
    swift build -c release --product jambridge --scratch-path .build-bench >/dev/null
    JAMBRIDGE=$root/.build-bench/release/jambridge
fi
floods=("$@")
[ ${#floods[@]} -eq 0 ] && floods=(osc-nan osc-commands transport backdated invitations operator forged-stop forged-sequence forged-journal)
work=$(mktemp -d)
pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
files() { ls "/proc/$1/fd" | wc -l; }
cpu() { awk '{ print ($14 + $15) * 10 }' "/proc/$1/stat"; } # milliseconds (100 ticks a second)
bound() { # waits until UDP port $1 is bound
    local hex; hex=$(printf ':%04X ' "$1")
    for _ in $(seq 200); do grep -q "$hex" /proc/net/udp && return 0; sleep 0.05; done
    echo "port $1 never bound" >&2; exit 1
}
session=$(( (RANDOM % 9000 + 20000) * 2 )) osc=$(( RANDOM % 4000 + 61000 ))
cat >"$work/routes.yaml" <<EOF
session: { name: hub, port: $session, bind: 127.0.0.1, advertise: false }
clock: { to: [drum-machine] }
endpoints:
  controls: { osc: { listen: $osc, host: 127.0.0.1, control: true } }
  drum-machine: { record: clock.mid }
  tape: { record: take.mid }
routes:
  - { from: session, to: tape }
  - { from: controls, to: tape }
EOF
start_daemon() { # a fresh daemon for each flood, so that what it counts is that flood's
    [ -z "$pid" ] || { kill "$pid"; wait "$pid" 2>/dev/null || true; }
    "$JAMBRIDGE" run "$work/routes.yaml" 2>"$work/log" &
    pid=$!
    bound "$session"; bound "$osc"
    sleep 0.5
}
printf '| flood | sent | RSS before -> after | open files before -> after | CPU | log lines | let through |\n|---|---|---|---|---|---|---|\n'
measure() { # $1: name, $2: what was let through (a command printing it), rest: the flood
    local name=$1 through=$2; shift 2
    local rss0 files0 cpu0 lines0 sent
    rss0=$(rss "$pid") files0=$(files "$pid") cpu0=$(cpu "$pid") lines0=$(wc -l <"$work/log")
    sent=$("$@" | tail -n 1)
    sleep 1
    printf '| %s | %s | %s -> %s kB | %s -> %s | %s ms | %s | %s |\n' "$name" "$sent" "$rss0" "$(rss "$pid")" "$files0" \
        "$(files "$pid")" $(( $(cpu "$pid") - cpu0 )) $(( $(wc -l <"$work/log") - lines0 )) "$(eval "$through")"
}
status() { "$JAMBRIDGE" status --json --pid "$pid" | "$python" -c "import json, sys; s = json.load(sys.stdin); print($1)"; }
osc_flood() { # $1: address, $2: per second (0: as fast as it goes), $3: count
    "$python" - "$osc" "$1" "$2" "$3" <<'EOF'
import sys, time
from pythonosc.udp_client import SimpleUDPClient
port, address, rate, count = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
client, begin = SimpleUDPClient("127.0.0.1", port), time.monotonic()
values = [float("nan"), float("inf"), 1e30]
for n in range(count):
    if address.endswith("level"):
        client.send_message(address, values[n % 3])
    else:
        client.send_message(address + ("start" if n % 2 == 0 else "stop"), [])
    if rate:
        pause = begin + (n + 1) / rate - time.monotonic()
        if pause > 0:
            time.sleep(pause)
print(count)
EOF
}
for flood in "${floods[@]}"; do
    start_daemon
    case $flood in
        osc-nan) measure "OSC level NaN/inf/1e30" "status '\"%d refused as no command, %d over the rate; still up\" % (s[\"endpoints\"][\"controls\"][\"dropped\"][\"rejected\"], s[\"endpoints\"][\"controls\"][\"dropped\"][\"commandsOverRate\"])'" \
            osc_flood /jambridge/drums/level 0 10000 ;;
        osc-commands) measure "OSC start/stop 5,000/s, 10 s" "status '\"%d over the rate\" % s[\"endpoints\"][\"controls\"][\"dropped\"][\"commandsOverRate\"]'" \
            osc_flood /jambridge/ 5000 50000 ;;
        transport)
            measure "peer Start/Stop 10,000/s, 10 s" "status '\"%d refused, %d relayed to the clock output\" % (s[\"jam\"][\"overRate\"], s[\"endpoints\"][\"drum-machine\"][\"out\"])'" \
            bash -c "'$python' '$peers/hostile.py' flood $session 10000 10 | '$python' -c 'import json, sys; print(json.loads(sys.stdin.readlines()[-1])[\"sent\"])'" ;;
        backdated)
            "$JAMBRIDGE" start --pid "$pid" >/dev/null
            measure "peer Start back-dated 30 s" "status '\"master: %s, %d back-dated\" % (s[\"jam\"][\"master\"], s[\"jam\"][\"backdated\"])'" \
                bash -c "'$python' '$peers/hostile.py' backdated $session 30 >/dev/null; echo 1" ;;
        invitations)
            join_during_flood() {
                "$python" "$peers/flood.py" applemidi "$session" 20000 2000 >/dev/null &
                local flood=$!
                sleep 2
                "$python" - "$session" "$peers" <<'EOF' >"$work/joined"
import sys, time
sys.path.insert(0, sys.argv[2])
from applemidi import Player
begin = time.monotonic()
player = Player(int(sys.argv[1]), "player")
print("joined in %.1f ms" % ((time.monotonic() - begin) * 1000) if player.join() else "refused")
EOF
                wait "$flood"
                echo 20000
            }
            measure "forged IN 2,000/s, 10 s" "echo \"a real peer \$(cat '$work/joined')\"" join_during_flood ;;
        forged-*)
            kind=${flood#forged-}
            counter=$(case $kind in stop) echo wrongAddress ;; sequence) echo outOfWindow ;; *) echo implausibleSongPositions ;; esac)
            measure "a peer's song, one forged $kind" "status '\"%d counted (%s); the clock output got %d messages (the peer sent 192 ticks, a Start, a Stop)\" % (s[\"session\"][\"counters\"].get(\"$counter\", 0), \"$counter\", s[\"endpoints\"][\"drum-machine\"][\"out\"])'" \
                bash -c "'$python' '$peers/hostile.py' forged $session $kind >/dev/null; echo 1" ;;
        operator)
            stop_during_flood() {
                osc_flood /jambridge/ 5000 50000 >/dev/null &
                local flood=$! carried=0
                for _ in 1 2 3 4 5; do
                    sleep 1.9
                    "$JAMBRIDGE" stop --pid "$pid" >/dev/null 2>&1 && carried=$((carried + 1))
                done
                wait "$flood"
                echo "$carried" >"$work/carried"
                echo 50000
            }
            measure "OSC start/stop 5,000/s, 10 s, jambridge stop every 2 s" \
                "echo \"jambridge stop carried out \$(cat '$work/carried') of 5; \$(grep -c 'jam: ' '$work/log') jam lines\"" stop_during_flood ;;
        *) echo "unknown flood $flood" >&2; exit 2 ;;
    esac
done
