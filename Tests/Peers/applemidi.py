"""AppleMIDI initiators for jambridge's tests, on 127.0.0.1: the session handshake and RTP-MIDI
packets built by hand (RFC 6295, no journal), and what jambridge sends back decoded by PyPI
pymidi's packet parser (`pymidi.packets`), which nobody here wrote.
"""
import random
import socket
import struct
import time

from pymidi import packets

IN, OK, NO, BY = 0x494E, 0x4F4B, 0x4E4F, 0x4259


def handshake(command, token, ssrc, name=None):
    packet = struct.pack(">HHIII", 0xFFFF, command, 2, token, ssrc)
    return packet + (name.encode() + b"\0" if name is not None else b"")


def port_pair():
    """Two UDP sockets on consecutive ports (control, data)."""
    while True:
        control = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        control.bind(("127.0.0.1", 0))
        data = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            data.bind(("127.0.0.1", control.getsockname()[1] + 1))
            return control, data
        except OSError:
            control.close()
            data.close()


def answer(sock):
    """The command of the next session packet `sock` receives (OK or NO), or None after 5 s."""
    sock.settimeout(5)
    try:
        while True:
            packet = sock.recv(2048)
            if packet[:2] == b"\xff\xff" and packet[2:4] in (b"OK", b"NO"):
                return packet[2:4].decode()
    except socket.timeout:
        return None


class Player:
    """One AppleMIDI session that invites jambridge's session at PORT and plays into it."""

    def __init__(self, port, name):
        self.port, self.name = port, name
        self.control, self.data = port_pair()
        self.token, self.ssrc = random.randint(1, 2 ** 32 - 1), random.randint(1, 2 ** 32 - 1)
        self.sequence = random.randint(0, 65535)

    def join(self):
        """True once both ports are accepted."""
        for sock, port in ((self.control, self.port), (self.data, self.port + 1)):
            sock.sendto(handshake(IN, self.token, self.ssrc, self.name), ("127.0.0.1", port))
            if answer(sock) != "OK":
                return False
        return True

    def play(self, *commands):
        """One RTP-MIDI packet carrying `commands` (each a tuple of MIDI bytes), 0 delta times."""
        body = b"\x00".join(bytes(command) for command in commands)
        header = struct.pack(">BBHII", 0x80, 0x61, self.sequence & 0xFFFF,
                             int(time.monotonic() * 10000) & 0xFFFFFFFF, self.ssrc)
        self.data.sendto(header + bytes([len(body)]) + body, ("127.0.0.1", self.port + 1))
        self.sequence += 1

    def leave(self):
        self.control.sendto(handshake(BY, self.token, self.ssrc), ("127.0.0.1", self.port))

    def heard(self):
        """What jambridge sent to this player so far, as 'on K', 'off K' and 'cc N V' (pymidi's decoding)."""
        self.data.setblocking(False)
        heard = []
        while True:
            try:
                datagram = self.data.recv(65536)
            except BlockingIOError:
                return heard
            if datagram[:2] == b"\xff\xff":
                continue
            for entry in packets.MIDIPacket.parse(datagram).command.midi_list:
                if entry.command == "note_on" and entry.params.velocity > 0:
                    heard.append("on %d" % int(entry.params.key))
                elif entry.command in ("note_on", "note_off"):
                    heard.append("off %d" % int(entry.params.key))
                elif entry.command == "control_mode_change":
                    heard.append("cc %d %d" % (entry.params.controller, entry.params.value))
