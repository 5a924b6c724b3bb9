"""LinkHut, Ableton's own Link example app (Debian's ableton-link-utils), as a Link peer for jambridge's Link tests
(issue 32). Run it in a network namespace of the test's own (Link multicasts to 224.76.78.75:20808; see
docs/testing.md). LinkHut is a terminal app: it reads keys (a: enable/disable Link, space: start/stop, w/e: tempo
-1/+1 BPM, r/t: quantum -1/+1, s: start/stop sync on/off, q: quit) and rewrites one status line every 10 ms:

  enabled | num peers | quantum | start stop sync | tempo   | beats   | metro
  yes     | 1         | 4       | yes [playing]   | 120.00  | 12.34   | XXXO

This script runs it in a pseudo-terminal, presses its keys and reads that line back. LinkHut plays through JACK
and only changes the tempo, the quantum and start/stop from its audio callback, so the script first starts a JACK
server of its own (Debian's jackd2: `jackd --name linkhut-PID --no-realtime --timeout 10000 -d dummy`, no sound card) and stops
it at the end. At start it presses "a" and "s" (Link and start/stop sync on), then reads commands from standard
input, one a line, and prints one JSON line for each, flushed at once; "t" is the time on CLOCK_MONOTONIC in
seconds at which this script read the status line the values come from:

  (at start)          {"event": "enabled", "pid": LinkHut's, "jack": server name, STATE}
  state               {"event": "state", STATE}    the newest status line
  tempo BPM           {"event": "tempo", STATE}    presses w or e, each once the last one shows, until the
                                                   tempo is within 0.5 BPM of BPM (LinkHut's steps are 1 BPM)
  play / stop         {"event": "play" | "stop", STATE}         presses space if LinkHut is not so already
  quantum Q           {"event": "quantum", STATE}               presses r or t (whole beats, 1 or more)
  startstop on|off    {"event": "startstop", STATE}             presses s if needed
  enable / disable    {"event": "enable" | "disable", STATE}    presses a if needed
  key KEY...          {"event": "key", STATE}      presses the keys ("key e e", "key space"; a word of several
                                                   letters is as many keys), then answers with the status
                                                   line after the next one
  watch               {"event": "watch", STATE}    from now on also prints a line for each change it reads:
                      {"event": "changed", "peers" | "tempo" | "playing": new value, "t": ...}
  quit                {"event": "quit", "t": ...}, then presses q and stops JACK (so do end of input and SIGTERM;
                      if this script is killed, LinkHut and jackd get a SIGTERM from the kernel)
  (anything else)     {"event": "error", "error": ...}; a command whose key shows no effect within 5 s
                      answers {"event": "error", "error": "timeout ...", STATE}

STATE is LinkHut's status: "enabled", "peers", "quantum", "start_stop_sync", "playing", "tempo" (BPM, 2 decimals),
"beat" (LinkHut's beat when it wrote the line, 2 decimals), "t". The beat was read by LinkHut at most about
a millisecond before "t" here, and is rounded to 0.01 beat: compare it with another peer's beat at "t"
within about 0.02 beats (0.0055 at most was measured against link_peer.py at 140 BPM).

LinkHut's own quirk: once it has set the tempo itself (w/e), starting it with space after another peer changed the
tempo puts LinkHut's last tempo back into the session (Link 3.0.6's audio-thread session state, which it commits
whole): change the tempo from one side only, or expect that.

  linkhut.py [--linkhut PATH] [--jackd PATH]    (defaults: /usr/bin/LinkHut, /usr/bin/jackd)
"""
import argparse
import ctypes
import os
import re
import signal
import subprocess
import sys
import termios
import threading

from json_lines import monotonic, say

STATUS = re.compile(r"(yes|no)\s*\|\s*(\d+)\s*\|\s*(-?[\d.]+)\s*\|\s*(yes|no)\s*\[(playing|stopped)\]\s*\|"
                    r"\s*(-?[\d.]+)\s*\|\s*(-?[\d.]+)\s*\|")
WAIT = 5.0


def end_with_this_script():
    """In a child before it runs: SIGTERM when this script ends, however it ends (prctl PR_SET_PDEATHSIG)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)


class LinkHut:
    def __init__(self, linkhut, jackd):
        self.jack = "linkhut-%d" % os.getpid()
        # A client late for a cycle is dropped by JACK after --timeout ms: on a loaded machine (the test suites share
        # two cores) 500 ms may pass, and LinkHut would leave the Link session.
        self.jackd = subprocess.Popen([jackd, "--name", self.jack, "--no-realtime", "--timeout", "10000", "-d", "dummy",
                                       "--rate", "48000", "--period", "1024"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, preexec_fn=end_with_this_script)
        env = dict(os.environ, JACK_DEFAULT_SERVER=self.jack, JACK_NO_START_SERVER="1")
        if subprocess.run(["jack_wait", "--server", self.jack, "--wait", "--timeout", "10"], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
            self.jackd.kill()
            raise SystemExit("linkhut.py: the JACK server did not start")
        self.master, follower = os.openpty()
        attributes = termios.tcgetattr(follower)
        attributes[3] &= ~termios.ECHO  # the keys pressed stay out of the status output
        termios.tcsetattr(follower, termios.TCSANOW, attributes)
        self.process = subprocess.Popen([linkhut], stdin=follower, stdout=follower, stderr=follower, env=env,
                                        start_new_session=True, preexec_fn=end_with_this_script)
        os.close(follower)
        self.status = None  # the newest status, a dict
        self.count = 0  # status lines read so far
        self.changed = threading.Condition()
        self.watching = False
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        pending = b""
        while True:
            try:
                data = os.read(self.master, 4096)
            except OSError:  # LinkHut has exited (EIO)
                data = b""
            if not data:
                with self.changed:
                    self.count = -1
                    self.changed.notify_all()
                return
            at = monotonic()
            pending += data
            *lines, pending = re.split(rb"[\r\n]", pending)
            for line in lines:
                match = STATUS.search(line.decode(errors="replace"))
                if match:
                    self.took(match, at)

    def took(self, match, at):
        enabled, peers, quantum, sync, playing, tempo, beat = match.groups()
        status = dict(enabled=enabled == "yes", peers=int(peers), quantum=float(quantum),
                      start_stop_sync=sync == "yes", playing=playing == "playing", tempo=float(tempo),
                      beat=float(beat), t=at)
        with self.changed:
            old, self.status = self.status, status
            self.count += 1
            self.changed.notify_all()
        if self.watching and old is not None:
            for name in ("peers", "tempo", "playing"):
                if status[name] != old[name]:
                    say(event="changed", t=at, **{name: status[name]})

    def next_status(self, after):
        """The first status read after the `after`-th; None if LinkHut ended or WAIT passed."""
        deadline = monotonic() + WAIT
        with self.changed:
            while 0 <= self.count <= after:
                if not self.changed.wait(deadline - monotonic()):
                    return None
            return self.status if self.count > 0 else None

    def until(self, done, field, key):
        """Presses `key` (a key, or a function of the status giving one) while the status is not `done`, each
        time waiting until `field` of the status has changed (LinkHut applies most keys in its audio callback)."""
        status = self.next_status(self.count)
        while status is not None and not done(status):
            before, deadline = status[field], monotonic() + WAIT
            self.press(key(status) if callable(key) else key)
            status = self.next_status(self.count)
            while status is not None and status[field] == before:
                if monotonic() > deadline:
                    return None
                status = self.next_status(self.count)
        return status

    def press(self, keys):
        os.write(self.master, keys.encode())

    def stop(self):
        if self.process.poll() is None:
            try:
                self.press("q")
                self.process.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
        self.jackd.terminate()
        try:
            self.jackd.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.jackd.kill()


def answer(hut, name, status, goal):
    if status is None:
        say(event="error", error="timeout waiting for LinkHut to show " + goal, **(hut.status or {}))
    else:
        say(event=name, **status)


def run(hut, line):
    """Answers one command; False once the driver is to quit."""
    words = line.split()
    if not words:
        return True
    name, arguments = words[0], words[1:]
    try:
        if name == "state" and not arguments:
            answer(hut, name, hut.status or hut.next_status(0), "a status")
        elif name == "tempo" and len(arguments) == 1:
            goal = float(arguments[0])
            answer(hut, name, hut.until(lambda s: abs(s["tempo"] - goal) < 0.5, "tempo",
                                        lambda s: "e" if s["tempo"] < goal else "w"), "tempo %g" % goal)
        elif name in ("play", "stop") and not arguments:
            answer(hut, name, hut.until(lambda s: s["playing"] == (name == "play"), "playing", " "), name)
        elif name == "quantum" and len(arguments) == 1:
            goal = max(1, round(float(arguments[0])))
            answer(hut, name, hut.until(lambda s: s["quantum"] == goal, "quantum",
                                        lambda s: "t" if s["quantum"] < goal else "r"), "quantum %g" % goal)
        elif name == "startstop" and arguments in (["on"], ["off"]):
            goal = arguments[0] == "on"
            answer(hut, name, hut.until(lambda s: s["start_stop_sync"] == goal, "start_stop_sync", "s"), line.strip())
        elif name in ("enable", "disable") and not arguments:
            answer(hut, name, hut.until(lambda s: s["enabled"] == (name == "enable"), "enabled", "a"), name)
        elif name == "key" and arguments:
            hut.press("".join(" " if word == "space" else word for word in arguments))
            hut.next_status(hut.count)
            answer(hut, name, hut.next_status(hut.count), "a status")
        elif name == "watch" and not arguments:
            hut.watching = True
            answer(hut, name, hut.status, "a status")
        elif name == "quit" and not arguments:
            return False
        else:
            say(event="error", error="unknown command: " + line.strip(), t=monotonic())
    except ValueError as error:
        say(event="error", error=str(error), t=monotonic())
    return True


def main():
    parser = argparse.ArgumentParser(description="LinkHut (Ableton Link's example app) driven through standard input.")
    parser.add_argument("--linkhut", default="/usr/bin/LinkHut")
    parser.add_argument("--jackd", default="/usr/bin/jackd")
    options = parser.parse_args()
    hut = LinkHut(options.linkhut, options.jackd)
    signal.signal(signal.SIGTERM, lambda *_: (hut.stop(), os._exit(0)))
    try:
        status = hut.until(lambda s: s["enabled"], "enabled", "a")
        status = status and hut.until(lambda s: s["start_stop_sync"], "start_stop_sync", "s")
        if status is None:
            say(event="error", error="LinkHut did not start: no status line with Link enabled", t=monotonic())
            return
        say(event="enabled", pid=hut.process.pid, jack=hut.jack, **status)
        for line in sys.stdin:
            if not run(hut, line):
                break
        say(event="quit", t=monotonic())
    finally:
        hut.stop()


if __name__ == "__main__":
    main()
