#!/usr/bin/env bash
# How often an idle jambridge wakes (issue 42: "nothing wakes when nothing is due"), per configuration, on
# 127.0.0.1 only (the session binds 127.0.0.1 and does not advertise: no Bonjour, no Link; the status page listens
# on loopback; no client ever joins the session or opens the page). For each configuration it starts
# `jambridge run FILE`, waits SETTLE seconds (default 3), then reads the context switches of every thread of the
# process (/proc/PID/task/TID/status: voluntary_ctxt_switches + nonvoluntary_ctxt_switches, with the thread's name
# from /proc/PID/task/TID/comm) at the start and the end of SECONDS_EACH seconds (default 20), and prints the
# wake-ups a second of the whole process (voluntary switches apart: a thread that sleeps and is woken counts one),
# its CPU time, and its busiest threads with their scheduling policy, which tells jambridge's unnamed threads apart
# (SCHED_FIFO 20: the jam's clock and the session's lane; 18: the drums' audio; 17: the drums' timer; NIO-ELT: the
# servers' event loop). A thread that started during the window counts from 0; one that ended is listed as gone
# (its switches are lost: a Dispatch worker, `jambridge-qos.overcommit`, retires a few seconds after start-up).
#
#   Benchmarks/idle-wakeups.sh                              # every configuration below
#   Benchmarks/idle-wakeups.sh jam drums                    # only these
#   SECONDS_EACH=60 TOP=10 Benchmarks/idle-wakeups.sh
#   BIN=/path/to/jambridge Benchmarks/idle-wakeups.sh       # another build (without BIN: release, .build-bench-main)
#
# The configurations (the jam is never started; nobody joins the session):
#   session       a session alone (`session: { bind: 127.0.0.1, advertise: false }`)
#   jam           the session and a stopped jam (`clock: {}`)
#   drums         ... and stopped drums (`drums: { style: rock }`: notes only, no audio)
#   drums-audio   ... and stopped drums playing through ALSA's null PCM (`audio: { device: "null" }`: it needs no
#                 sound hardware). The null PCM takes every write at once, so the audio thread (which blocks in
#                 snd_pcm_writei on a real device, once a period) never sleeps there: it spins at its real-time
#                 priority, held to 95 % of a core by the kernel's real-time throttling, and shows as preemptions
#                 and CPU time, not wake-ups. A row that never slept and used over half a core says so.
#   page          the session, the stopped jam and the status page (`http: { listen: "127.0.0.1:PORT" }`), no
#                 client connected
#   all           the session, the stopped jam, stopped drums (no audio) and the status page: issue 42's target,
#                 0 wake-ups a second
# Needs nothing but a release build and python3; as root, jambridge's real-time threads get their priorities as
# in use. Every jambridge it starts is ended by its PID (SIGTERM, then SIGKILL after 10 s); its route files,
# logs and control socket go to a temporary directory, removed at the end (KEEP=1 keeps it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
seconds=${SECONDS_EACH:-20}
settle=${SETTLE:-3}
top=${TOP:-6}
all_configurations=(session jam drums drums-audio page all)
configurations=("$@")
[ ${#configurations[@]} -eq 0 ] && configurations=("${all_configurations[@]}")
for configuration in "${configurations[@]}"; do
    case " ${all_configurations[*]} " in *" $configuration "*) ;;
    *) echo "usage: $0 [${all_configurations[*]}]  (unknown: $configuration)" >&2; exit 2 ;; esac
done

. "$here/release-binary.sh"
release_binary
BIN=$binary

work=$(mktemp -d /tmp/idle-wakeups-XXXXXX)
pid=""
finish() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    pid=""
}
trap 'finish; [ -n "${KEEP:-}" ] && echo "# kept $work" >&2 || rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# An even port p with p, p+1 (the session) and p+2 (the page) free on 127.0.0.1.
free_port() {
    python3 - <<'EOF'
import random, socket
for _ in range(100):
    base, socks = random.randrange(20000, 38000, 2), []
    try:
        for port, kind in ((0, socket.SOCK_DGRAM), (1, socket.SOCK_DGRAM), (2, socket.SOCK_STREAM)):
            sock = socket.socket(socket.AF_INET, kind)
            socks.append(sock)
            sock.bind(("127.0.0.1", base + port))
        print(base)
        break
    except OSError:
        pass
    finally:
        for sock in socks:
            sock.close()
EOF
}

routes() { # configuration port -> the route file
    local session="session: { name: idle-wakeups, port: $2, bind: 127.0.0.1, advertise: false }"
    case $1 in
    session) echo "$session" ;;
    jam) printf '%s\nclock: {}\n' "$session" ;;
    drums) printf '%s\nclock: {}\ndrums: { style: rock }\n' "$session" ;;
    drums-audio) printf '%s\nclock: {}\ndrums: { style: rock, audio: { device: "null" } }\n' "$session" ;;
    page) printf '%s\nclock: {}\nhttp: { listen: "127.0.0.1:%d" }\n' "$session" $(($2 + 2)) ;;
    all) printf '%s\nclock: {}\ndrums: { style: rock }\nhttp: { listen: "127.0.0.1:%d" }\n' "$session" $(($2 + 2)) ;;
    esac
}

# Samples every thread of PID over SECONDS and prints the figures (one "total" line, then the busiest threads).
sample() {
    python3 - "$1" "$2" "$top" <<'EOF'
import os, sys, time
pid, seconds, top = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])

def snapshot():
    threads = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as file:
                fields = dict(line.split(":", 1) for line in file if ":" in line)
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as file:
                name = file.read().strip()
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as file:
                stat = file.read().rsplit(")", 1)[1].split()  # after the name, which may hold spaces
        except OSError:  # ended meanwhile
            continue
        cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime, seconds
        # Its policy, which tells jambridge's unnamed threads apart: SCHED_FIFO 20 the jam's clock and the session's
        # lane, 18 the drums' audio, 17 the drums' timer.
        policy = {0: "normal", 1: "FIFO %s" % stat[37], 2: "RR %s" % stat[37]}.get(int(stat[38]), "policy " + stat[38])
        threads[int(tid)] = ("%s (%s)" % (name, policy), int(fields["voluntary_ctxt_switches"]),
                             int(fields["nonvoluntary_ctxt_switches"]), cpu)
    return threads

before, started = snapshot(), time.monotonic()
time.sleep(seconds)
after, elapsed = snapshot(), time.monotonic() - started
rows = []
for tid, (name, voluntary, involuntary, cpu) in after.items():
    _, v0, i0, c0 = before.get(tid, (name, 0, 0, 0))
    rows.append((voluntary - v0 + involuntary - i0, voluntary - v0, involuntary - i0, cpu - c0, tid, name))
rows.sort(key=lambda row: (-row[0], -row[3], row[4]))
total = sum(row[0] for row in rows)
voluntary = sum(row[1] for row in rows)
cpu = sum(row[3] for row in rows)
gone = sorted(set(before) - set(after))
new = sorted(set(after) - set(before))
print("  total %8.1f wake-ups/s (%.1f voluntary, %.1f preempted), CPU %.1f %% of a core, over %.1f s, %d threads%s%s"
      % (total / elapsed, voluntary / elapsed, (total - voluntary) / elapsed, 100 * cpu / elapsed, elapsed, len(after),
         ", %d started during the window" % len(new) if new else "",
         ", %d ended (%s: its switches are not counted)" % (len(gone), ", ".join(before[t][0] for t in gone)) if gone else ""))
for count, v, i, used, tid, name in rows[:top]:
    if count == 0 and used == 0:
        break
    spinning = " (never slept: it spins)" if v == 0 and used > elapsed / 2 else ""
    print("    %-26s tid %-7d %8.1f/s  (%d voluntary, %d preempted), CPU %5.1f %%%s"
          % (name, tid, count / elapsed, v, i, 100 * used / elapsed, spinning))
quiet = sum(1 for row in rows if row[0] == 0 and row[3] == 0)
print("    (%d thread%s never woke)" % (quiet, "" if quiet == 1 else "s"))
EOF
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), kernel $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg), $described"
echo "# wake-ups = voluntary + nonvoluntary context switches of every thread, over ${seconds} s after ${settle} s of settling"
for configuration in "${configurations[@]}"; do
    port=$(free_port)
    [ -n "$port" ] || { echo "no free ports" >&2; exit 1; }
    file="$work/$configuration.yaml"
    routes "$configuration" "$port" > "$file"
    "$BIN" run --control "$work/$configuration.sock" "$file" > "$work/$configuration.log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
        grep -q "control socket:" "$work/$configuration.log" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if ! kill -0 "$pid" 2>/dev/null || ! grep -q "control socket:" "$work/$configuration.log"; then
        echo "$configuration: jambridge did not start:" >&2
        sed 's/^/  /' "$work/$configuration.log" >&2
        exit 1
    fi
    sleep "$settle"
    echo
    echo "## $configuration: $(tr '\n' ' ' < "$file" | sed 's/name: idle-wakeups, port: [0-9]*, //; s/"127.0.0.1:[0-9]*"/"127.0.0.1:PORT"/; s/ *$//')"
    sample "$pid" "$seconds"
    kill -0 "$pid" 2>/dev/null || { echo "$configuration: jambridge ended during the window:" >&2; cat "$work/$configuration.log" >&2; exit 1; }
    if grep -qiE "warning|error" "$work/$configuration.log"; then
        echo "  its log's warnings:"
        grep -iE "warning|error" "$work/$configuration.log" | sed 's/^/    /'
    fi
    finish
done
