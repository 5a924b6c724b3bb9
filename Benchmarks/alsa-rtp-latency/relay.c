/* The bare relay of Benchmarks/alsa-rtp-latency.sh: the cost floor of "an event from the ALSA sequencer, out as
 * an RTP-MIDI datagram". It subscribes to SOURCE (a sequencer address, a client name as aconnect takes it) and, for
 * each event, sends one RTP-MIDI packet (RFC 6295: the 12-byte RTP header, a one-byte command section header, the
 * event's MIDI bytes with their status byte; no journal, no session, no delta time) to 127.0.0.1:PORT.
 *
 *   relay SOURCE PORT       e.g. relay 'Virtual Raw MIDI 0-3' 5107
 *
 * Prints "ready" once subscribed. Its SSRC is RELAY_SSRC, which the probe (probe.py) recognises it by.
 * Build: cc -O2 -o relay relay.c -lasound
 */
#include <alsa/asoundlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define RELAY_SSRC 0x62617265u /* "bare" */

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s SOURCE PORT\n", argv[0]);
        return 2;
    }
    snd_seq_t *seq;
    snd_seq_addr_t source;
    snd_midi_event_t *decoder;
    if (snd_seq_open(&seq, "default", SND_SEQ_OPEN_INPUT, 0) < 0) {
        fprintf(stderr, "relay: cannot open the sequencer\n");
        return 1;
    }
    snd_seq_set_client_name(seq, "bare relay");
    int port = snd_seq_create_simple_port(seq, "in", SND_SEQ_PORT_CAP_WRITE | SND_SEQ_PORT_CAP_SUBS_WRITE,
                                          SND_SEQ_PORT_TYPE_MIDI_GENERIC | SND_SEQ_PORT_TYPE_APPLICATION);
    if (port < 0 || snd_seq_parse_address(seq, &source, argv[1]) < 0 ||
        snd_seq_connect_from(seq, port, source.client, source.port) < 0) {
        fprintf(stderr, "relay: cannot subscribe to %s\n", argv[1]);
        return 1;
    }
    if (snd_midi_event_new(16, &decoder) < 0) return 1;
    snd_midi_event_no_status(decoder, 1); /* every command with its status byte, as RFC 6295 wants the first */

    int sock = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2])),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    uint8_t packet[13 + 15] = {0x80, 0x61}; /* V=2, no padding, extension or CSRC; M=0, PT=97 */
    uint32_t ssrc = htonl(RELAY_SSRC);
    memcpy(packet + 8, &ssrc, 4);
    uint16_t sequence = 0;
    printf("ready\n");
    fflush(stdout);

    snd_seq_event_t *event;
    int result;
    while ((result = snd_seq_event_input(seq, &event)) >= 0 || result == -ENOSPC) { /* ENOSPC: an overrun, told */
        if (result < 0) continue;
        long length = snd_midi_event_decode(decoder, packet + 13, 15, event);
        if (length <= 0) continue; /* not a MIDI message (port announcements and the like) */
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint16_t sequenceBE = htons(sequence++);
        uint32_t timestampBE = htonl((uint32_t)(now.tv_sec * 10000 + now.tv_nsec / 100000)); /* 10 kHz, as sessions */
        memcpy(packet + 2, &sequenceBE, 2);
        memcpy(packet + 4, &timestampBE, 4);
        packet[12] = (uint8_t)length; /* B=0 (short header), J=0, Z=0, P=0, LEN */
        sendto(sock, packet, 13 + (size_t)length, 0, (struct sockaddr *)&to, sizeof to);
    }
    fprintf(stderr, "relay: reading the sequencer failed: %s\n", snd_strerror(result));
    return 1;
}
