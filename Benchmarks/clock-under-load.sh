#!/usr/bin/env bash
# The jam's clock with the engine busy (issue 30), on 127.0.0.1 only: one jambridge leads the jam (`clock: {}`,
# SCHED_FIFO clock thread) while a load generator sends 10,000 MIDI-over-OSC messages a second through its router,
# to a session peer, to an OSC output and (channel 1) to an ALSA output that blocks; beside it, in the same
# seconds, a bare C thread at the same SCHED_FIFO priority sleeps with clock_nanosleep(TIMER_ABSTIME) to the same
# absolute deadlines as the jam's ticks. Prints, for both, the tick interval std and largest deviation, how late
# each was (the jam's ticks at a listener that stamps them with the kernel's receive time), the ticks over 0.5 ms
# late and how many of them the bare thread (or one of the bare threads pinned one per CPU) also saw, and issue
# 30's two targets; with the rate the router
# really carried, how long the ALSA output held the engine, the load average, steal time and the canaries (one at
# SCHED_FIFO 19 per CPU for stalls of the machine, one at normal priority for how long the scheduler kept normal
# threads, the engine's, waiting).
#
#   Benchmarks/clock-under-load.sh                         # RUNS (default 3) runs of SECONDS_EACH (default 60) s
#   SECONDS_EACH=30 RUNS=5 Benchmarks/clock-under-load.sh
#   Benchmarks/clock-under-load.sh --load 1                # and a busy loop on CPU 1
#   Benchmarks/clock-under-load.sh --stall-ms 0            # the ALSA output never blocks (the router's load only)
#   Benchmarks/clock-under-load.sh --quiet-listener        # the listener gets the clock only, not the notes
#   Benchmarks/clock-under-load.sh --drums                 # the drums play too (issue 42), below
#   Benchmarks/clock-under-load.sh --keep                  # keep route file, logs, ticks.txt (k, arrival, instant,
#                                                          # bare deadline, bare wake-up) in /tmp/clock-under-load-*
# Further options (rate, batch, the stand-in's pool and stalls): Benchmarks/jam_clock_bench.py --help, scenario busy.
#
# The ALSA output: this host has no /dev/snd/seq, so jambridge runs with Benchmarks/clock-under-load/
# alsa_seq_standin.c preloaded (LD_PRELOAD): it replaces every libasound sequencer call jambridge makes with a
# model of a client output pool (500 events) that a destination empties at a MIDI wire's pace (31,250 baud) and
# stops emptying for 1 s every 5 s. jambridge's own ALSA code runs unchanged: when the pool is full its send gets
# -EAGAIN, and the port keeps the event and tries it again every 5 ms from a timer (before issue 30's fix,
# waitForOutputRoom polled for room on the engine's queue, 10 ms at a time, up to 100 times).
# The bare thread is Benchmarks/clock-under-load/bare_clock.c. Both are compiled here with cc.
#
# --drums (issue 42): the same jambridge also plays drums, `drums: { style: rock, level: 5 }` with no audio, each
# voice on its own note on channel 10 (20-38, below the load's notes), routed to the listener's endpoint: the
# listener stamps the drums' notes with the kernel's receive time as it does the jam's ticks. Each hit is measured
# against the instant it was meant for: its step's tick on the jam's grid (rock's hits are on its 16th steps, every
# 6th tick of the song), moved by the style's humanize shift (up to +-3 ms), replayed from the seed and checked
# against the hit's RTP stamp. Printed beside the jam's ticks and the bare thread: the hits' interval and lateness
# figures, the hits over 0.5 ms late and how many of those the bare thread also saw, and issue 42's targets.
#
# Builds jambridge (release) in .build-bench-main, as jam-clock-bench.sh does, unless BIN names a jambridge binary
# to measure. Needs root (SCHED_FIFO) and the listeners' PyPI pymidi (.build-peers/venv, scripts/install-deps.sh;
# PYTHON names another venv's python). Every process a run starts (jambridge, the load generator, the bare thread,
# the canaries, busy loops) is ended by its PID before the next run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
seconds=${SECONDS_EACH:-60}
runs=${RUNS:-3}
python=${PYTHON:-$root/.build-peers/venv/bin/python}
[ -x "$python" ] || { echo "no $python: run scripts/install-deps.sh first" >&2; exit 1; }

. "$here/release-binary.sh"
release_binary
tools="$root/.build-bench-main/clock-under-load"
mkdir -p "$tools"
cc -O2 -Wall -Wextra -shared -fPIC -o "$tools/alsa_seq_standin.so" "$here/clock-under-load/alsa_seq_standin.c"
cc -O2 -Wall -Wextra -o "$tools/bare_clock" "$here/clock-under-load/bare_clock.c" -lm

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), kernel $(uname -r), swift $(swift --version 2>&1 | sed -n 's/.*Swift version \([0-9.]*\).*/\1/p' | head -1), $described"
for run in $(seq "$runs"); do
    echo
    echo "## run $run of $runs: busy $*"
    "$python" "$here/jam_clock_bench.py" busy --jambridge "$binary" --seconds "$seconds" \
        --standin "$tools/alsa_seq_standin.so" --bare "$tools/bare_clock" "$@"
done
