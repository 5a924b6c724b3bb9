"""A real browser for the status page's tests: Debian's headless chromium, driven through its DevTools protocol
over --remote-debugging-pipe (standard library only). Opens URL, then reads commands from standard input, one a
line, and prints one JSON line for each:

  wait EXPRESSION     evaluates the JavaScript EXPRESSION in the page until it is truthy (30 s at most);
                      prints {"ok": true, "value": ...} or {"ok": false, "value": last value}
  eval EXPRESSION     prints {"ok": true, "value": ...}
  screenshot PATH     writes a PNG of the page to PATH
  quit

  browser.py URL
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


class Browser:
    def __init__(self, url):
        self.profile = tempfile.mkdtemp(prefix="jambridge-chromium-")
        to_browser, self.commands = os.pipe()
        self.replies, from_browser = os.pipe()
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        assert chromium, "chromium is not installed (scripts/install-deps.sh installs it)"
        arguments = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--user-data-dir=" + self.profile, "--window-size=720,1100", "--remote-debugging-pipe",
                     "about:blank"]
        # The protocol's pipe is the browser's descriptors 3 (commands) and 4 (replies).
        self.process = subprocess.Popen(
            ["bash", "-c", f'exec "$@" 3<&{to_browser} 4>&{from_browser}', "browser"] + arguments,
            pass_fds=(to_browser, from_browser), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser)
        os.close(from_browser)
        self.next_id = 0
        self.buffer = b""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Page.navigate", {"url": url}, session=True)

    def call(self, method, params=None, session=False):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        while True:
            reply = self.read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def read(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.replies, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)
        if "exceptionDetails" in result:
            return None
        return result["result"].get("value")

    def close(self):
        try:
            self.call("Browser.close")
        except RuntimeError:
            pass
        self.process.wait(timeout=30)
        shutil.rmtree(self.profile, ignore_errors=True)


def main():
    browser = Browser(sys.argv[1])
    print(json.dumps({"ok": True, "event": "opened"}), flush=True)
    for line in sys.stdin:
        command, _, argument = line.rstrip("\n").partition(" ")
        if command == "wait":
            deadline = time.monotonic() + 30
            value = browser.evaluate(argument)
            while not value and time.monotonic() < deadline:
                time.sleep(0.1)
                value = browser.evaluate(argument)
            print(json.dumps({"ok": bool(value), "value": value}), flush=True)
        elif command == "eval":
            print(json.dumps({"ok": True, "value": browser.evaluate(argument)}), flush=True)
        elif command == "screenshot":
            png = browser.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=True)
            with open(argument, "wb") as file:
                file.write(base64.b64decode(png["data"]))
            print(json.dumps({"ok": True, "value": argument}), flush=True)
        elif command == "quit":
            break
    browser.close()


if __name__ == "__main__":
    main()
