/*
 * ctl_zmtp.h — the server side of ZMTP 3.0 (ZeroMQ's wire protocol, RFC 23)
 * with the NULL mechanism, as much of it as a ROUTER needs to talk to
 * libzmq DEALERs: the greeting, the READY handshake and multi-frame
 * messages. Pure (no I/O, no clock): bytes in, events out.
 *
 * Why it exists: libzmq's listener aborts the whole process when accept(2)
 * fails with EMFILE (src/ipc_listener.cpp: an errno_assert that lists
 * ENFILE but not EMFILE), and offers no way to cap, inspect or close its
 * connections; the control socket is open to every local user. So the
 * collector accepts and reads its control connections itself
 * (ctl_server.c) and speaks the protocol through this decoder; the
 * clients (agents, d9) keep using libzmq.
 *
 * What it accepts: a greeting with the 0xFF...0x7F signature, version 3 or
 * later (a later one is spoken as 3.0, as the RFC says), mechanism NULL;
 * then one READY command whose Socket-Type is DEALER, REQ or ROUTER (the
 * types a ROUTER may talk to); then message frames, whose first two frames
 * are kept for the caller (the rest are counted and skipped) and commands,
 * which are skipped. Anything else (another signature or mechanism, an
 * ERROR command, a reserved flag bit, a frame over frame_max, a handshake
 * command over CTL_ZMTP_CMD_MAX, a command inside a message) is a protocol
 * error: the connection is to be closed.
 *
 * Called by: ctl_server.c; tests/unit/test_ctl_zmtp.c; tests/fuzz/fuzz_zmtp.c.
 * Invariants: memory per decoder is bounded by frame_max (the second frame
 * of a message) or CTL_ZMTP_CMD_MAX, whichever is larger; every length is
 * checked before a byte is copied. Must never: read past the input it was
 * given, trust a length it did not check, or allocate on a claim of the peer
 * that exceeds the limits above.
 */
#ifndef D9_CTL_ZMTP_H
#define D9_CTL_ZMTP_H

#include <stddef.h>
#include <stdint.h>

#define CTL_ZMTP_GREETING_SIZE 64
#define CTL_ZMTP_CMD_MAX       4096u    /* a handshake command larger than this is refused */
#define CTL_ZMTP_HDR_MAX       9u       /* flags + 8-byte size */
#define CTL_ZMTP_KEEP_MAX      4096u    /* a kept buffer larger than this is freed between messages */

enum ctl_zmtp_event {
    CTL_ZMTP_ERROR = -1,        /* protocol error (ctl_zmtp.error says which); close */
    CTL_ZMTP_MORE = 0,          /* every byte consumed, more are needed */
    CTL_ZMTP_READY = 1,         /* the handshake is done */
    CTL_ZMTP_MESSAGE = 2,       /* a whole message (ctl_zmtp_msg) */
};

/* A message as the decoder saw it: its frame count, the size of its first
 * frame and its second frame, if any (valid until the next feed). */
struct ctl_zmtp_msg {
    uint32_t nframes;           /* saturates at UINT32_MAX */
    uint64_t first_len;
    const uint8_t *second;      /* NULL when the message has one frame */
    size_t second_len;
};

struct ctl_zmtp {
    int phase;                  /* greeting, handshake, open */
    size_t frame_max;
    uint8_t greeting[CTL_ZMTP_GREETING_SIZE];
    size_t greeting_got;
    uint8_t hdr[CTL_ZMTP_HDR_MAX];
    size_t hdr_got;
    int in_frame;               /* the header is read, the body is being read */
    uint8_t flags;
    uint64_t size, got;         /* body of the current frame */
    int keep;                   /* the body goes into buf */
    uint8_t *buf;
    size_t cap;
    uint32_t nframes;           /* frames of the current message so far */
    uint64_t first_len;
    size_t second_len;
    const char *error;          /* static text, set with CTL_ZMTP_ERROR */
};

void ctl_zmtp_init(struct ctl_zmtp *z, size_t frame_max);
void ctl_zmtp_free(struct ctl_zmtp *z);

/* Decode from in[0, len): stops after an event. *used gets the bytes
 * consumed (all of them with CTL_ZMTP_MORE). With CTL_ZMTP_MESSAGE, *m
 * describes the message. -ENOMEM is not a protocol error: returned as
 * CTL_ZMTP_ERROR with error "out of memory". */
int ctl_zmtp_feed(struct ctl_zmtp *z, const uint8_t *in, size_t len, size_t *used,
                  struct ctl_zmtp_msg *m);

/* 1 while a frame or a message has begun and not ended (or the handshake is
 * not done): what a slow peer leaves behind. */
int ctl_zmtp_partial(const struct ctl_zmtp *z);
/* 1 once the handshake is done. */
int ctl_zmtp_open(const struct ctl_zmtp *z);

/* The server's first bytes: the greeting (3.0, NULL, as-server 0) and its
 * READY command (Socket-Type ROUTER). */
const uint8_t *ctl_zmtp_hello(size_t *len);

/* A message frame's header for size bytes (more: another frame follows)
 * into out; returns its length (2 or 9). */
size_t ctl_zmtp_frame_hdr(uint8_t out[CTL_ZMTP_HDR_MAX], uint64_t size, int more);

#endif /* D9_CTL_ZMTP_H */
