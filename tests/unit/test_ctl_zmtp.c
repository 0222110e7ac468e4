/*
 * test_ctl_zmtp.c — the control channel's ZMTP 3.0 decoder
 * (collector/ctl/ctl_zmtp.c) as a specification: what a libzmq DEALER sends
 * decodes to a handshake and [empty][request] messages, in any pieces; the
 * server's hello and frame headers are what RFC 23 says; every protocol
 * violation is an error, final, with a reason.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "collector/ctl/ctl_zmtp.h"

#define FRAME_MAX 1000u

struct bytes {
    uint8_t b[4096];
    size_t n;
};

static void put(struct bytes *o, const void *p, size_t n)
{
    assert_true(o->n + n <= sizeof o->b);
    memcpy(o->b + o->n, p, n);
    o->n += n;
}

/* A libzmq 4.3 client's greeting: padding holds its identity size + 1. */
static void greeting(struct bytes *o, uint8_t major, const char *mech)
{
    uint8_t g[CTL_ZMTP_GREETING_SIZE] = { 0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, major, 1 };
    memcpy(g + 12, mech, strlen(mech));
    put(o, g, sizeof g);
}

static void prop(uint8_t *b, size_t *n, const char *k, const char *v)
{
    size_t kl = strlen(k), vl = strlen(v);
    b[(*n)++] = (uint8_t)kl;
    memcpy(b + *n, k, kl);
    *n += kl;
    b[(*n)++] = 0, b[(*n)++] = 0, b[(*n)++] = 0, b[(*n)++] = (uint8_t)vl;
    memcpy(b + *n, v, vl);
    *n += vl;
}

static void command(struct bytes *o, const char *name, const char *type)
{
    uint8_t b[256];
    size_t n = 0;
    b[n++] = (uint8_t)strlen(name);
    memcpy(b + n, name, strlen(name));
    n += strlen(name);
    if (type) {
        prop(b, &n, "Socket-Type", type);
        prop(b, &n, "Identity", "");
    }
    uint8_t h[2] = { 0x04, (uint8_t)n };
    put(o, h, 2);
    put(o, b, n);
}

static void frame(struct bytes *o, const void *p, size_t n, int more)
{
    uint8_t h[CTL_ZMTP_HDR_MAX];
    put(o, h, ctl_zmtp_frame_hdr(h, n, more));
    put(o, p, n);
}

static void dealer_hello(struct bytes *o)
{
    greeting(o, 3, "NULL");
    command(o, "READY", "DEALER");
}

/* Feed everything in pieces of `piece` bytes; the events into ev (MESSAGE
 * as 100 + frames), returns their count; *last gets the last message. */
static int feed_all(struct ctl_zmtp *z, const struct bytes *o, size_t piece, int *ev, int cap,
                    uint8_t *last, size_t *last_len)
{
    int n = 0;
    for (size_t pos = 0; pos < o->n;) {
        size_t len = o->n - pos < piece ? o->n - pos : piece, used = 0;
        struct ctl_zmtp_msg m;
        int e = ctl_zmtp_feed(z, o->b + pos, len, &used, &m);
        pos += used;
        if (e == CTL_ZMTP_MORE)
            continue;
        assert_true(n < cap);
        ev[n++] = e == CTL_ZMTP_MESSAGE ? 100 + (int)m.nframes : e;
        if (e == CTL_ZMTP_MESSAGE && last) {
            memcpy(last, m.second, m.second_len);
            *last_len = m.second_len;
        }
        if (e == CTL_ZMTP_ERROR)
            break;
    }
    return n;
}

static void a_dealer_s_handshake_and_request_decode_in_any_pieces(void **s)
{
    (void)s;
    struct bytes o = { .n = 0 };
    dealer_hello(&o);
    frame(&o, "", 0, 1);
    frame(&o, "request-1", 9, 0);
    frame(&o, "", 0, 1);
    frame(&o, "request-2", 9, 0);
    const size_t pieces[] = { 1, 2, 7, 64, 65, 4096 };
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        struct ctl_zmtp z;
        ctl_zmtp_init(&z, FRAME_MAX);
        int ev[8];
        uint8_t last[64];
        size_t ll = 0;
        assert_int_equal(feed_all(&z, &o, pieces[i], ev, 8, last, &ll), 3);
        assert_int_equal(ev[0], CTL_ZMTP_READY);
        assert_int_equal(ev[1], 102);
        assert_int_equal(ev[2], 102);
        assert_int_equal(ll, 9);
        assert_memory_equal(last, "request-2", 9);
        assert_true(ctl_zmtp_open(&z));
        assert_false(ctl_zmtp_partial(&z));
        ctl_zmtp_free(&z);
    }
}

static void a_message_s_frames_are_counted_and_only_the_second_kept(void **s)
{
    (void)s;
    struct bytes o = { .n = 0 };
    dealer_hello(&o);
    frame(&o, "x", 1, 1);
    frame(&o, "second", 6, 1);
    frame(&o, "third", 5, 1);
    frame(&o, "fourth", 6, 0);
    frame(&o, "alone", 5, 0);
    struct ctl_zmtp z;
    ctl_zmtp_init(&z, FRAME_MAX);
    size_t used;
    struct ctl_zmtp_msg m;
    assert_int_equal(ctl_zmtp_feed(&z, o.b, o.n, &used, &m), CTL_ZMTP_READY);
    size_t pos = used;
    assert_int_equal(ctl_zmtp_feed(&z, o.b + pos, o.n - pos, &used, &m), CTL_ZMTP_MESSAGE);
    pos += used;
    assert_int_equal(m.nframes, 4);
    assert_int_equal(m.first_len, 1);
    assert_int_equal(m.second_len, 6);
    assert_memory_equal(m.second, "second", 6);
    assert_int_equal(ctl_zmtp_feed(&z, o.b + pos, o.n - pos, &used, &m), CTL_ZMTP_MESSAGE);
    assert_int_equal(m.nframes, 1);
    assert_int_equal(m.first_len, 5);
    assert_null(m.second);
    ctl_zmtp_free(&z);
}

/* A slow peer is visible: a message begun and not ended is partial. */
static void half_a_message_is_partial(void **s)
{
    (void)s;
    struct bytes o = { .n = 0 };
    dealer_hello(&o);
    frame(&o, "", 0, 1);
    struct ctl_zmtp z;
    ctl_zmtp_init(&z, FRAME_MAX);
    assert_true(ctl_zmtp_partial(&z));          /* no handshake yet */
    int ev[4];
    assert_int_equal(feed_all(&z, &o, 4096, ev, 4, NULL, NULL), 1);
    assert_true(ctl_zmtp_partial(&z));          /* the delimiter came, the request did not */
    uint8_t h[2] = { 0x00, 10 };
    size_t used;
    struct ctl_zmtp_msg m;
    assert_int_equal(ctl_zmtp_feed(&z, h, 2, &used, &m), CTL_ZMTP_MORE);
    assert_true(ctl_zmtp_partial(&z));
    ctl_zmtp_free(&z);
}

/* Each violation: an error with a reason, and every later feed too. */
static void expect_error(const struct bytes *o, const char *why_part)
{
    struct ctl_zmtp z;
    ctl_zmtp_init(&z, FRAME_MAX);
    int ev[8];
    int n = feed_all(&z, o, 4096, ev, 8, NULL, NULL);
    assert_true(n >= 1);
    assert_int_equal(ev[n - 1], CTL_ZMTP_ERROR);
    assert_non_null(z.error);
    if (!strstr(z.error, why_part))
        fail_msg("error \"%s\" does not say \"%s\"", z.error, why_part);
    size_t used;
    struct ctl_zmtp_msg m;
    assert_int_equal(ctl_zmtp_feed(&z, o->b, o->n, &used, &m), CTL_ZMTP_ERROR);
    ctl_zmtp_free(&z);
}

static void every_protocol_violation_is_a_final_error(void **s)
{
    (void)s;
    struct bytes o = { .n = 0 };
    put(&o, "GET / HTTP/1.1\r\n", 16);
    expect_error(&o, "signature");
    o.n = 0;
    greeting(&o, 2, "NULL");
    expect_error(&o, "3.0 or later");
    o.n = 0;
    greeting(&o, 3, "PLAIN");
    expect_error(&o, "NULL");
    o.n = 0;
    greeting(&o, 3, "NULL");
    command(&o, "READY", "PUB");
    expect_error(&o, "socket type");
    o.n = 0;
    greeting(&o, 3, "NULL");
    command(&o, "READY", NULL);
    expect_error(&o, "socket type");
    o.n = 0;
    greeting(&o, 3, "NULL");
    command(&o, "ERROR", NULL);
    expect_error(&o, "ERROR");
    o.n = 0;
    greeting(&o, 3, "NULL");
    frame(&o, "", 0, 0);
    expect_error(&o, "before the handshake");
    o.n = 0;
    dealer_hello(&o);
    uint8_t bad[2] = { 0x08, 0 };
    put(&o, bad, 2);
    expect_error(&o, "reserved");
    o.n = 0;
    dealer_hello(&o);
    uint8_t h[CTL_ZMTP_HDR_MAX];
    put(&o, h, ctl_zmtp_frame_hdr(h, FRAME_MAX + 1, 0));   /* only the header: no allocation */
    expect_error(&o, "size limit");
    o.n = 0;
    dealer_hello(&o);
    put(&o, h, ctl_zmtp_frame_hdr(h, UINT64_MAX, 0));
    expect_error(&o, "size limit");
    o.n = 0;
    dealer_hello(&o);
    frame(&o, "", 0, 1);
    command(&o, "PING", NULL);
    expect_error(&o, "inside a message");
    o.n = 0;
    greeting(&o, 3, "NULL");
    uint8_t big[3] = { 0x06, 0, 0 };               /* a long handshake command of 64 KiB */
    put(&o, big, 1);
    uint8_t sz[8] = { 0, 0, 0, 0, 0, 1, 0, 0 };
    put(&o, sz, 8);
    expect_error(&o, "size limit");
}

/* After the handshake a command (a PING of ZMTP 3.1) is skipped. */
static void a_command_between_messages_is_skipped(void **s)
{
    (void)s;
    struct bytes o = { .n = 0 };
    dealer_hello(&o);
    command(&o, "PING", NULL);
    frame(&o, "", 0, 1);
    frame(&o, "r", 1, 0);
    struct ctl_zmtp z;
    ctl_zmtp_init(&z, FRAME_MAX);
    int ev[4];
    assert_int_equal(feed_all(&z, &o, 4096, ev, 4, NULL, NULL), 2);
    assert_int_equal(ev[1], 102);
    ctl_zmtp_free(&z);
}

/* A later ZMTP (4.x) is spoken as 3.0, as RFC 23 asks. */
static void a_later_version_is_accepted(void **s)
{
    (void)s;
    struct bytes o = { .n = 0 };
    greeting(&o, 4, "NULL");
    command(&o, "READY", "REQ");
    struct ctl_zmtp z;
    ctl_zmtp_init(&z, FRAME_MAX);
    int ev[4];
    assert_int_equal(feed_all(&z, &o, 4096, ev, 4, NULL, NULL), 1);
    assert_int_equal(ev[0], CTL_ZMTP_READY);
    ctl_zmtp_free(&z);
}

/* A second frame of a whole frame limit is not kept between messages. */
static void a_large_request_buffer_is_not_kept_while_idle(void **s)
{
    (void)s;
    static uint8_t payload[FRAME_MAX * 8];
    struct bytes o = { .n = 0 };
    dealer_hello(&o);
    struct ctl_zmtp z;
    ctl_zmtp_init(&z, sizeof payload);
    size_t used;
    struct ctl_zmtp_msg m;
    assert_int_equal(ctl_zmtp_feed(&z, o.b, o.n, &used, &m), CTL_ZMTP_READY);
    uint8_t h[CTL_ZMTP_HDR_MAX];
    uint8_t d[2] = { 0x01, 0 };
    assert_int_equal(ctl_zmtp_feed(&z, d, 2, &used, &m), CTL_ZMTP_MORE);
    size_t hl = ctl_zmtp_frame_hdr(h, sizeof payload, 0);
    assert_int_equal(hl, 9);
    assert_int_equal(ctl_zmtp_feed(&z, h, hl, &used, &m), CTL_ZMTP_MORE);
    assert_int_equal(ctl_zmtp_feed(&z, payload, sizeof payload, &used, &m), CTL_ZMTP_MESSAGE);
    assert_int_equal(m.second_len, sizeof payload);
    assert_true(z.cap >= sizeof payload);
    assert_int_equal(ctl_zmtp_feed(&z, d, 0, &used, &m), CTL_ZMTP_MORE);
    assert_true(z.cap <= CTL_ZMTP_KEEP_MAX);
    ctl_zmtp_free(&z);
}

static void the_server_s_hello_and_frame_headers_follow_rfc_23(void **s)
{
    (void)s;
    size_t n;
    const uint8_t *h = ctl_zmtp_hello(&n);
    assert_int_equal(n, CTL_ZMTP_GREETING_SIZE + 30);
    assert_int_equal(h[0], 0xff);
    assert_int_equal(h[9] & 1, 1);
    assert_int_equal(h[10], 3);
    assert_memory_equal(h + 12, "NULL\0\0\0\0", 8);
    assert_int_equal(h[64], 0x04);                     /* a short command */
    assert_int_equal(h[65], 28);
    assert_memory_equal(h + 66, "\x05READY\x0bSocket-Type\0\0\0\x06ROUTER", 28);
    uint8_t f[CTL_ZMTP_HDR_MAX];
    assert_int_equal(ctl_zmtp_frame_hdr(f, 0, 1), 2);
    assert_memory_equal(f, "\x01\x00", 2);
    assert_int_equal(ctl_zmtp_frame_hdr(f, 255, 0), 2);
    assert_memory_equal(f, "\x00\xff", 2);
    assert_int_equal(ctl_zmtp_frame_hdr(f, 256, 0), 9);
    assert_memory_equal(f, "\x02\0\0\0\0\0\0\x01\x00", 9);
    /* our own hello, fed back, is a valid handshake (REQ-ROUTER aside) */
    struct bytes o = { .n = 0 };
    put(&o, h, n);
    struct ctl_zmtp z;
    ctl_zmtp_init(&z, FRAME_MAX);
    int ev[2];
    assert_int_equal(feed_all(&z, &o, 3, ev, 2, NULL, NULL), 1);
    assert_int_equal(ev[0], CTL_ZMTP_READY);
    ctl_zmtp_free(&z);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_dealer_s_handshake_and_request_decode_in_any_pieces),
        cmocka_unit_test(a_message_s_frames_are_counted_and_only_the_second_kept),
        cmocka_unit_test(half_a_message_is_partial),
        cmocka_unit_test(every_protocol_violation_is_a_final_error),
        cmocka_unit_test(a_command_between_messages_is_skipped),
        cmocka_unit_test(a_later_version_is_accepted),
        cmocka_unit_test(a_large_request_buffer_is_not_kept_while_idle),
        cmocka_unit_test(the_server_s_hello_and_frame_headers_follow_rfc_23),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
