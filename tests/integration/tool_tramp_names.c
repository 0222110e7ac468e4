/*
 * tool_tramp_names.c — how d9's readers name a CPU sample inside one of the
 * preload shim's trampolines (collector/query/q_sym.h), for
 * test_uv_tramp_names.sh: for every trampoline entry (D9_LOC_TRAMP_FILE)
 * a traced process's agent published, prints one line
 *
 *   tramp 0xADDR -> CALLBACK: LEAF | INNER
 *
 * CALLBACK: q_sym_name of an address 4 bytes into the trampoline; LEAF: the
 * frames q_sym_frames gives a sample whose leaf is that address (its
 * caller unknown), joined by ';'; INNER: a sample at the callback's entry
 * called from the trampoline. Usage: tool_tramp_names STORE PID. Exit 0,
 * 1 when the process or its entries are not found, 2 on usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/query/q_names.h"
#include "collector/query/q_store.h"
#include "collector/query/q_sym.h"
#include "collector/store/sym.h"
#include "shm/meta.h"
#include "shm/d9_abi.h"

struct pick {
    int64_t id;
    uint64_t first, last;
};

static int on_proc(void *arg, const struct idx_read_process *r)
{
    struct pick *p = arg;
    p->id = r->id;
    p->first = r->first_ns;
    p->last = r->last_ns ? r->last_ns : UINT64_MAX;
    return 0;
}

struct ctx {
    struct q_names *names;
    struct q_sym *y;
    int64_t id;
    int n;
};

/* the frames of a two-frame stack [leaf, caller], joined */
static void frames(struct ctx *c, uint64_t leaf, uint64_t caller, char *out, size_t cap)
{
    uint8_t buf[sizeof(struct d9_rec_stack) + 2 * 8];
    struct d9_rec_stack s;
    memset(&s, 0, sizeof s);
    s.h.type = D9_REC_CPU_SAMPLE;
    s.h.len = sizeof buf;
    s.nframes = 2;
    memcpy(buf, &s, sizeof s);
    memcpy(buf + sizeof s, &leaf, 8);
    memcpy(buf + sizeof s + 8, &caller, 8);
    struct q_frame f[D9_STACK_MAX_FRAMES];
    int n = q_sym_frames(c->y, c->id, (const struct d9_rec_hdr *)buf, sizeof buf, f);
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? ";" : "", f[i].name);
}

static int on_loc(void *arg, const struct shm_meta_entry *e)
{
    struct ctx *c = arg;
    uint64_t at, fn;
    uint32_t loc;
    if (!shm_meta_tramp(e, &at, &loc) ||
        !shm_meta_code_addr(q_names_meta(c->names, c->id, D9_META_LOCATION, loc), &fn))
        return 0;
    bool hidden = false;
    const char *cb = q_sym_name(c->y, c->id, at + 4, false, &hidden);
    char leaf[1024], inner[1024];
    frames(c, at + 4, 0, leaf, sizeof leaf);
    frames(c, fn, at + 5, inner, sizeof inner);
    printf("tramp 0x%" PRIx64 " -> %s%s: %s | %s\n", at, cb ? cb : "(null)",
           hidden ? " (hidden)" : "", leaf, inner);
    c->n++;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: tool_tramp_names STORE PID\n");
        return 2;
    }
    char why[256];
    struct q_store *s;
    if (q_store_open(&s, argv[1], why, sizeof why) < 0) {
        fprintf(stderr, "tool_tramp_names: %s\n", why);
        return 1;
    }
    struct pick p = { 0 };
    uint32_t pid = (uint32_t)strtoul(argv[2], NULL, 10);
    struct ctx c = { 0 };
    int rc = 1;
    if (q_store_processes(s, pid, 0, UINT64_MAX, on_proc, &p) < 0 || !p.id ||
        q_names_open(s, &c.names) < 0 || q_sym_new(&c.y, s) < 0)
        goto out;
    c.id = p.id;
    if (q_sym_load(c.y, pid, p.first, p.last, "tool_tramp_names") < 0)
        goto out;
    q_names_locations(c.names, c.id, on_loc, &c);
    rc = c.n ? 0 : 1;
out:
    if (c.n == 0)
        fprintf(stderr, "tool_tramp_names: no trampoline entry of pid %s\n", argv[2]);
    q_sym_free(c.y);
    q_names_close(c.names);
    q_store_close(s);
    return rc;
}
