"""What floods of the status page and the control socket cost a running jambridge (issue 29, items 5 and 6), on
127.0.0.1 (and 127.0.0.2 for a second client host), each against a fresh daemon under the unit's file limit
(prlimit --nofile=1024): its RSS, open files and CPU, how soon connections are closed, and whether real requests
are served meanwhile. One JSON line per flood:
  emfile   under a limit of 64 files, silent page connections take the rest; a control socket client waits
  idle     nothing (the baseline)
  silent   1,000 connections at once that send nothing; a real GET /status every 2 s
  trickle  1,000 connections at once, each sending a request a byte every 3 s; a real GET every 2 s
  events   40 /events clients that never read, then a real page from 127.0.0.2, then one that never reads
           with a 4 KB receive buffer (dropped once its send buffer stays full)
Usage: python3 Benchmarks/status-page-floods.py JAMBRIDGE REPOSITORY [emfile] [idle] [silent] [trickle] [events]
(a release build: swift build -c release --product jambridge; Python's standard library only)"""
import json, os, selectors, socket, subprocess, sys, tempfile, threading, time

JAMBRIDGE, REPO = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(port, nofile=1024, control=None):
    d = tempfile.mkdtemp()
    path = os.path.join(d, "rack.yaml")
    with open(path, "w") as f:
        f.write(f"""http: {{ listen: {port} }}
clock: {{}}
endpoints:
  song: {{ file: {REPO}/routes/songs/demo.mid, loop: true }}
  tape: {{ record: take.mid }}
routes:
  - {{ from: song, to: tape }}
""")
    p = subprocess.Popen(["prlimit", f"--nofile={nofile}", "--", JAMBRIDGE, "run", "--stop-after", "600"]
                         + (["--control", control] if control else []) + [path],
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "err.log"), "w"), cwd=d)
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p, d
        except OSError:
            time.sleep(0.05)
    raise SystemExit("no listener")


class Sampler(threading.Thread):
    """Samples the daemon's RSS and open files every 100 ms; CPU from /proc/PID/stat."""
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.rss, self.fds, self.running = pid, [], [], True

    def cpu(self):
        fields = open(f"/proc/{self.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK

    def run(self):
        while self.running:
            try:
                rss = int([l for l in open(f"/proc/{self.pid}/status") if l.startswith("VmRSS")][0].split()[1])
                self.rss.append(rss / 1024)
                self.fds.append(len(os.listdir(f"/proc/{self.pid}/fd")))
            except OSError:
                pass
            time.sleep(0.1)


def get(port, path="/status", timeout=30):
    t = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return data, (time.monotonic() - t) * 1000


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def flood(name, port, pid, count, trickle, seconds):
    """`count` connections at once; each sends nothing (or, with `trickle`, one byte of a request every 3 s).
    Times are from each connection's establishment (SYNs the full backlog dropped are retried by the kernel)."""
    sampler = Sampler(pid)
    sampler.start()
    cpu0, t0 = sampler.cpu(), time.monotonic()
    sel = selectors.DefaultSelector()
    established, closed = {}, {}
    request = f"GET /status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    sockets = []
    for i in range(count):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        sockets.append(s)
        sel.register(s, selectors.EVENT_WRITE)
    reals = []
    next_byte, sent = time.monotonic() + 3, 0
    next_real = time.monotonic() + 1
    while time.monotonic() - t0 < seconds:
        for key, events in sel.select(0.05):
            s = key.fileobj
            now = time.monotonic()
            if s not in established:
                established[s] = now
                sel.modify(s, selectors.EVENT_READ)
                continue
            try:
                data = s.recv(65536)
            except BlockingIOError:
                continue
            except ConnectionResetError:
                data = b""
            if data == b"":
                closed[s] = now - established[s]
                sel.unregister(s)
        now = time.monotonic()
        if trickle and now >= next_byte and sent < len(request):
            for s in established:
                if s not in closed:
                    try:
                        s.send(request[sent:sent + 1])
                    except OSError:
                        pass
            sent += 1
            next_byte = now + 3
        if now >= next_real:
            try:
                reply, ms = get(port)
                reals.append((reply.startswith(b"HTTP/1.1 200"), ms))
            except OSError as e:
                reals.append((False, 0))
            next_real = now + 2
    cpu = (sampler.cpu() - cpu0) / (time.monotonic() - t0) * 100
    sampler.running = False
    status = json.loads(get(port)[0].split(b"\r\n\r\n", 1)[1])["status"]["http"]
    for s in sockets:
        s.close()
    times = list(closed.values())
    at_once = [t for t in times if t < 5]
    later = [t for t in times if t >= 5]
    print(json.dumps({
        "flood": name, "connections": count, "seconds": seconds, "established": len(established),
        "rss_mb_max": round(max(sampler.rss), 1), "open_files_max": max(sampler.fds), "cpu_percent": round(cpu, 1),
        "closed": len(times), "closed_within_5s": len(at_once), "closed_ms_p50": round(pct(at_once, 0.5) * 1000, 2),
        "closed_ms_p99": round(pct(at_once, 0.99) * 1000, 2), "closed_ms_max": round(max(at_once, default=0) * 1000, 2),
        "closed_later": len(later), "closed_later_s_min": round(min(later, default=0), 2), "closed_later_s_max": round(max(later, default=0), 2),
        "real_requests_ok": sum(1 for ok, _ in reals if ok), "real_requests": len(reals),
        "real_ms_p50": round(pct([ms for ok, ms in reals if ok], 0.5), 1), "real_ms_max": round(max((ms for ok, ms in reals if ok), default=0), 1),
        "status_http": status,
    }), flush=True)


def events_client(port, source="127.0.0.1", rcvbuf=None):
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    return s


def refused(port):
    return json.loads(get(port)[0].split(b"\r\n\r\n", 1)[1])["status"]["http"]["refused"]


def never_reading(port, pid, count, seconds):
    """Times from the daemon's counters (a client that never reads cannot see its close before it reads)."""
    sampler = Sampler(pid)
    sampler.start()
    cpu0, t0 = sampler.cpu(), time.monotonic()
    clients = [events_client(port) for _ in range(count)]
    opened = time.monotonic()
    while refused(port)["displacedPage"] < count - 32:
        time.sleep(0.01)
    displaced_ms = (time.monotonic() - opened) * 1000
    # The real page, from another host: how soon its first event comes.
    t = time.monotonic()
    real = events_client(port, "127.0.0.2")
    data = b""
    while b"data: " not in data:
        data += real.recv(65536)
    first_event_ms = (time.monotonic() - t) * 1000
    stop = threading.Event()
    def read_on():
        real.settimeout(1)
        while not stop.is_set():
            try:
                if not real.recv(65536):
                    return
            except socket.timeout:
                pass
    threading.Thread(target=read_on, daemon=True).start()
    # One more that never reads, with a 4 KB receive buffer: its send buffer fills and it is dropped.
    small = events_client(port, rcvbuf=4096)
    small_opened = time.monotonic()
    dropped_s = None
    while time.monotonic() - t0 < seconds:
        if dropped_s is None and refused(port)["stalledStream"] >= 1:
            dropped_s = time.monotonic() - small_opened
        time.sleep(0.2)
    cpu = (sampler.cpu() - cpu0) / (time.monotonic() - t0) * 100
    sampler.running = False
    status = json.loads(get(port)[0].split(b"\r\n\r\n", 1)[1])["status"]["http"]
    stop.set()
    print(json.dumps({
        "flood": f"{count} never-reading /events clients, a real page from 127.0.0.2, one never-reading with a 4 KB receive buffer",
        "seconds": seconds, "rss_mb_max": round(max(sampler.rss), 1), "open_files_max": max(sampler.fds), "cpu_percent": round(cpu, 1),
        "displaced_all_beyond_32_ms": round(displaced_ms, 1), "real_page_first_event_ms": round(first_event_ms, 1),
        "small_buffer_dropped_after_s": dropped_s and round(dropped_s, 1), "status_http": status,
    }), flush=True)


def idle(port, pid, seconds=10):
    sampler = Sampler(pid)
    sampler.start()
    cpu0, t0 = sampler.cpu(), time.monotonic()
    time.sleep(seconds)
    sampler.running = False
    print(json.dumps({"flood": "none (idle)", "rss_mb_max": round(max(sampler.rss), 1), "open_files_max": max(sampler.fds),
                      "cpu_percent": round((sampler.cpu() - cpu0) / (time.monotonic() - t0) * 100, 1)}), flush=True)


def out_of_files(seconds=5):
    """Under a limit of 64 files, silent connections to the page take the rest; a control socket client waits."""
    port = free_port()
    control = tempfile.mkdtemp() + "/control.sock"
    daemon, directory = start(port, nofile=64, control=control)
    while not os.path.exists(control):
        time.sleep(0.05)
    held = []
    while len(os.listdir(f"/proc/{daemon.pid}/fd")) < 64 and len(held) < 200:
        held.append(socket.create_connection(("127.0.0.1", port)))
        time.sleep(0.01)
    sampler = Sampler(daemon.pid)
    client = socket.socket(socket.AF_UNIX)
    client.connect(control)
    client.sendall(b'{"command": "status"}\n')
    cpu0, t0 = sampler.cpu(), time.monotonic()
    time.sleep(seconds)
    cpu = (sampler.cpu() - cpu0) / (time.monotonic() - t0) * 100
    t = time.monotonic()
    for s in held:
        s.close()
    reply = client.recv(1 << 20)
    answered_ms = (time.monotonic() - t) * 1000
    daemon.terminate()
    daemon.wait()
    log = open(os.path.join(directory, "err.log")).read()
    print(json.dumps({"flood": "out of files (limit 64): a control socket client waits", "cpu_percent": round(cpu, 1),
                      "answered_after_release_ms": round(answered_ms, 1), "answered": reply.startswith(b'{"message":"jambridge'),
                      "log_lines": log.count("cannot accept a client")}), flush=True)


chosen = sys.argv[3:] or ["emfile", "idle", "silent", "trickle", "events"]
if "emfile" in chosen:
    out_of_files()
for name in [n for n in chosen if n != "emfile"]:
    port = free_port()
    daemon, directory = start(port)
    time.sleep(2)
    if name == "idle":
        idle(port, daemon.pid)
    elif name == "silent":
        flood("1000 silent connections", port, daemon.pid, 1000, trickle=False, seconds=30)
    elif name == "trickle":
        flood("1000 trickling connections (a byte every 3 s)", port, daemon.pid, 1000, trickle=True, seconds=30)
    elif name == "events":
        never_reading(port, daemon.pid, 40, seconds=60)
    daemon.terminate()
    daemon.wait()
