/*
 * fuzz_zmtp.c — the control channel's ZMTP decoder (collector/ctl/ctl_zmtp.c),
 * fed what any local user can send the collector's control socket. The first
 * byte seeds the chunking (a peer's bytes arrive in any pieces); the rest is
 * the stream. Checks: no crash, no read past the input, every chunk either
 * consumed or stopped at an event, the same events whatever the chunking
 * (one piece vs. the seeded pieces), a message's kept frame within the frame
 * limit, and nothing after a protocol error.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collector/ctl/ctl_zmtp.h"

#define FRAME_MAX 1024u
#define EVENTS_MAX 4096

/* Decode data in pieces of the sizes the seed picks: the event trail. */
static size_t run(const uint8_t *data, size_t size, unsigned seed, int *trail)
{
    struct ctl_zmtp z;
    ctl_zmtp_init(&z, FRAME_MAX);
    size_t pos = 0, n = 0;
    while (pos < size && n < EVENTS_MAX) {
        size_t piece = seed ? 1 + (seed = seed * 1103515245u + 12345u) % 97u : size - pos;
        if (piece > size - pos)
            piece = size - pos;
        /* a private copy of exactly this piece: ASan catches any overread */
        uint8_t *buf = malloc(piece);
        if (!buf)
            abort();
        memcpy(buf, data + pos, piece);
        size_t off = 0;
        for (;;) {
            struct ctl_zmtp_msg m;
            size_t used = 0;
            int ev = ctl_zmtp_feed(&z, buf + off, piece - off, &used, &m);
            if (used > piece - off)
                abort();
            off += used;
            if (ev == CTL_ZMTP_MORE) {
                if (off != piece)
                    abort();            /* MORE means every byte was taken */
                break;
            }
            if (n < EVENTS_MAX)
                trail[n++] = ev == CTL_ZMTP_MESSAGE ? 100 + (int)(m.nframes > 2 ? 3 : m.nframes)
                                                    : ev;
            if (ev == CTL_ZMTP_ERROR) {
                size_t u2;
                if (ctl_zmtp_feed(&z, buf, piece, &u2, &m) != CTL_ZMTP_ERROR)
                    abort();            /* an error is final */
                free(buf);
                ctl_zmtp_free(&z);
                return n;
            }
            if (ev == CTL_ZMTP_MESSAGE) {
                if (m.nframes < 2 ? m.second || m.second_len
                                  : m.second_len > FRAME_MAX || (!m.second && m.second_len))
                    abort();
                volatile uint8_t sink = 0;
                for (size_t i = 0; i < m.second_len; i++)
                    sink ^= m.second[i];
                (void)sink;
            }
            if (off == piece)
                break;
        }
        free(buf);
        pos += piece;
    }
    ctl_zmtp_free(&z);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static int a[EVENTS_MAX], b[EVENTS_MAX];
    unsigned seed = data[0] | 1u;
    size_t na = run(data + 1, size - 1, 0, a);
    size_t nb = run(data + 1, size - 1, seed, b);
    if (na < EVENTS_MAX && nb < EVENTS_MAX && (na != nb || memcmp(a, b, na * sizeof a[0])))
        abort();                        /* the chunking changed what was decoded */
    return 0;
}
