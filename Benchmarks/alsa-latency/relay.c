/* The bare ALSA relay of Benchmarks/alsa-latency.sh: the cost floor of "an event from one ALSA sequencer port, out to
 * another, through a process of its own" (one wake-up of a user-space thread, one read, one write). It subscribes to
 * SOURCE and to DESTINATION and sends each event it reads on at once (direct, not through a queue).
 *
 *   alsa-relay SOURCE DESTINATION      e.g. alsa-relay 'Virtual Raw MIDI 0-1' 'Virtual Raw MIDI 0-2'
 *
 * Prints "ready" once connected. Build: cc -O2 -o alsa-relay relay.c -lasound
 */
#include <alsa/asoundlib.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s SOURCE DESTINATION\n", argv[0]);
        return 2;
    }
    snd_seq_t *seq;
    snd_seq_addr_t source, destination;
    if (snd_seq_open(&seq, "default", SND_SEQ_OPEN_DUPLEX, 0) < 0) {
        fprintf(stderr, "alsa-relay: cannot open the sequencer\n");
        return 1;
    }
    snd_seq_set_client_name(seq, "bare ALSA relay");
    int port = snd_seq_create_simple_port(seq, "relay",
                                          SND_SEQ_PORT_CAP_WRITE | SND_SEQ_PORT_CAP_SUBS_WRITE |
                                              SND_SEQ_PORT_CAP_READ | SND_SEQ_PORT_CAP_SUBS_READ,
                                          SND_SEQ_PORT_TYPE_MIDI_GENERIC | SND_SEQ_PORT_TYPE_APPLICATION);
    if (port < 0 || snd_seq_parse_address(seq, &source, argv[1]) < 0 ||
        snd_seq_parse_address(seq, &destination, argv[2]) < 0 ||
        snd_seq_connect_from(seq, port, source.client, source.port) < 0 ||
        snd_seq_connect_to(seq, port, destination.client, destination.port) < 0) {
        fprintf(stderr, "alsa-relay: cannot connect %s to %s\n", argv[1], argv[2]);
        return 1;
    }
    printf("ready\n");
    fflush(stdout);

    snd_seq_event_t *event;
    int result;
    while ((result = snd_seq_event_input(seq, &event)) >= 0 || result == -ENOSPC) { /* ENOSPC: an overrun, told */
        if (result < 0) continue;
        snd_seq_ev_set_source(event, port);
        snd_seq_ev_set_subs(event);
        snd_seq_ev_set_direct(event);
        snd_seq_event_output_direct(seq, event);
    }
    fprintf(stderr, "alsa-relay: reading the sequencer failed: %s\n", snd_strerror(result));
    return 1;
}
