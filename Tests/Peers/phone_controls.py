"""The phone's controller app in the acceptance scenario (issue 16), with PyPI python-osc (an OSC client nobody here
wrote): sends OSC to jambridge at 127.0.0.1:PORT, as TouchOSC would, one action after another:
  ADDRESS=VALUE     one message with a float (/1/fader1=1.0, /1/push1=0.0)
  ADDRESS           one message without arguments (/jambridge/start)
  shake:SECONDS     the accelerometer (/accxyz) of a phone being shaken, 50 messages a second
  still:SECONDS     the accelerometer of a phone lying still (gravity only), 50 messages a second
  pid               prints this process's ID (to stop a long shake with SIGTERM)
Usage: python3 phone_controls.py PORT ACTION...
"""
import math
import os
import sys
import time

from pythonosc.udp_client import SimpleUDPClient


def accelerometer(phone, seconds, shaking):
    start = time.monotonic()
    k = 0
    while time.monotonic() < start + seconds:
        if shaking:
            phone.send_message("/accxyz", [math.sin(k) * 2.0, math.cos(k * 1.3) * 2.0, 1.0])
        else:
            phone.send_message("/accxyz", [0.0, 0.0, 1.0])
        k += 1
        time.sleep(max(0.0, start + k * 0.02 - time.monotonic()))


def main():
    phone = SimpleUDPClient("127.0.0.1", int(sys.argv[1]))
    for action in sys.argv[2:]:
        if action.startswith("shake:") or action.startswith("still:"):
            kind, seconds = action.split(":")
            accelerometer(phone, float(seconds), kind == "shake")
        elif action == "pid":
            print(os.getpid(), flush=True)
        elif "=" in action:
            address, value = action.split("=")
            phone.send_message(address, float(value))
        else:
            phone.send_message(action, [])


if __name__ == "__main__":
    main()
