/*
 * meta.c — the region's append-only metadata log (see meta.h).
 *
 * Writer invariant: bytes [0, meta_head) are whole, immutable entries. An
 * entry is copied in first and meta_head is release-stored after it, so a
 * reader that acquire-loads meta_head never sees a torn entry (from an
 * honest agent; a hostile one is handled by the reader's validation).
 *
 * Reader invariant: shm_meta_next() looks only at buf[0, len) and hands out
 * strings it has proved NUL-terminated inside the entry.
 */
#include <errno.h>
#include <string.h>
#include <stdatomic.h>
#include "shm/meta.h"

static size_t align8(size_t n) { return (n + 7u) & ~(size_t)7u; }

int shm_meta_append(struct d9_region_hdr *hdr, uint8_t *meta_area,
                    uint16_t kind, uint32_t id, const void *payload, size_t len)
{
    size_t total = align8(sizeof(struct d9_meta_hdr) + len);
    if (total > UINT16_MAX)
        return -EINVAL;
    /* only the agent (under its metadata lock) writes meta_head */
    uint32_t head = atomic_load_explicit(&hdr->meta_head, memory_order_relaxed);
    if (head > hdr->meta_size || hdr->meta_size - head < total) {
        atomic_fetch_add_explicit(&hdr->meta_lost, 1, memory_order_relaxed);
        return -ENOSPC;
    }
    struct d9_meta_hdr mh = { .len = (uint16_t)total, .kind = kind, .id = id };
    uint8_t *dst = meta_area + head;
    memcpy(dst, &mh, sizeof mh);
    memcpy(dst + sizeof mh, payload, len);
    memset(dst + sizeof mh + len, 0, total - sizeof mh - len);
    /* release: the entry bytes happen-before the new head */
    atomic_store_explicit(&hdr->meta_head, head + (uint32_t)total, memory_order_release);
    return 0;
}

/* A NUL-terminated string starting at p inside [p, end); returns the byte
 * after its NUL, or NULL if there is no NUL or it is empty/too long. */
static const uint8_t *take_str(const uint8_t *p, const uint8_t *end, const char **out)
{
    const uint8_t *nul = memchr(p, 0, (size_t)(end - p));
    if (!nul || nul == p || nul - p > (ptrdiff_t)D9_NAME_MAX * 4)
        return NULL;
    *out = (const char *)p;
    return nul + 1;
}

/* Like take_str but allows the empty string (function names may be unknown). */
static const uint8_t *take_str0(const uint8_t *p, const uint8_t *end, const char **out)
{
    const uint8_t *nul = memchr(p, 0, (size_t)(end - p));
    if (!nul || nul - p > (ptrdiff_t)D9_NAME_MAX * 4)
        return NULL;
    *out = (const char *)p;
    return nul + 1;
}

int shm_meta_next(const uint8_t *buf, size_t len, size_t *off, struct shm_meta_entry *e)
{
    if (*off >= len)
        return 0;
    if (len - *off < sizeof(struct d9_meta_hdr))
        return -EBADMSG;
    struct d9_meta_hdr mh;
    memcpy(&mh, buf + *off, sizeof mh);
    if (mh.len < sizeof mh || mh.len % 8 != 0 || mh.len > len - *off || mh.id == 0)
        return -EBADMSG;
    const uint8_t *p = buf + *off + sizeof mh;
    const uint8_t *end = buf + *off + mh.len;

    memset(e, 0, sizeof *e);
    e->kind = mh.kind;
    e->id = mh.id;
    switch (mh.kind) {
    case D9_META_RUNTIME:
        if (!take_str(p, end, &e->name) || strlen(e->name) > D9_NAME_MAX)
            return -EBADMSG;
        break;
    case D9_META_LOCATION:
        if (end - p < 4)
            return -EBADMSG;
        memcpy(&e->line, p, 4);
        p += 4;
        if (!(p = take_str(p, end, &e->name)) || !take_str0(p, end, &e->func))
            return -EBADMSG;
        break;
    case D9_META_SCHEMA: {
        uint16_t nf;
        if (end - p < 4)
            return -EBADMSG;
        memcpy(&nf, p, 2);
        p += 4;
        if (nf > D9_SCHEMA_MAX_FIELDS)
            return -EBADMSG;
        if (!(p = take_str(p, end, &e->name)) || strlen(e->name) > D9_NAME_MAX)
            return -EBADMSG;
        for (uint16_t i = 0; i < nf; i++) {
            if (p >= end)
                return -EBADMSG;
            uint8_t t = *p++;
            if (t < D9_FT_U64 || t > D9_FT_STR)
                return -EBADMSG;
            if (p >= end || !(p = take_str(p, end, &e->fields[i].name)) ||
                strlen(e->fields[i].name) > D9_NAME_MAX)
                return -EBADMSG;
            e->fields[i].type = t;
        }
        e->nfields = nf;
        break;
    }
    case D9_META_OBJECT: {
        struct d9_meta_object o;
        if ((size_t)(end - p) < sizeof o)
            return -EBADMSG;
        memcpy(&o, p, sizeof o);
        p += sizeof o;
        if (o.build_id_len > D9_BUILD_ID_MAX || (size_t)(end - p) < o.build_id_len ||
            o.end <= o.start)
            return -EBADMSG;
        memcpy(e->build_id, p, o.build_id_len);
        e->build_id_len = o.build_id_len;
        p += o.build_id_len;
        if (!take_str(p, end, &e->name))
            return -EBADMSG;
        e->start = o.start;
        e->end = o.end;
        e->pgoff = o.pgoff;
        break;
    }
    default:
        return -EBADMSG;
    }
    *off += mh.len;
    return 1;
}

int shm_meta_encode_runtime(uint8_t *out, size_t cap, const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > D9_NAME_MAX)
        return -EINVAL;
    if (n + 1 > cap)
        return -ENAMETOOLONG;
    memcpy(out, name, n + 1);
    return (int)(n + 1);
}

int shm_meta_encode_location(uint8_t *out, size_t cap, const char *file, uint32_t line,
                             const char *func)
{
    if (!file || !*file)
        return -EINVAL;
    if (!func)
        func = "";
    size_t fl = strlen(file), fn = strlen(func);
    /* keep the tail of long paths: it is the informative part */
    if (fl > D9_NAME_MAX * 4) {
        file += fl - D9_NAME_MAX * 4;
        fl = D9_NAME_MAX * 4;
    }
    if (fn > D9_NAME_MAX * 4)
        fn = D9_NAME_MAX * 4;
    size_t need = 4 + fl + 1 + fn + 1;
    if (need > cap)
        return -ENAMETOOLONG;
    memcpy(out, &line, 4);
    memcpy(out + 4, file, fl);
    out[4 + fl] = 0;
    memcpy(out + 5 + fl, func, fn);
    out[5 + fl + fn] = 0;
    return (int)need;
}

int shm_meta_encode_object(uint8_t *out, size_t cap, const struct d9_meta_object *o,
                           const uint8_t *build_id, const char *path)
{
    size_t pl = path ? strlen(path) : 0;
    if (pl == 0 || o->end <= o->start || o->build_id_len > D9_BUILD_ID_MAX)
        return -EINVAL;
    if (pl > D9_NAME_MAX * 4)           /* what readers accept (take_str) */
        return -ENAMETOOLONG;
    size_t need = sizeof *o + o->build_id_len + pl + 1;
    if (need > cap)
        return -ENAMETOOLONG;
    struct d9_meta_object h = *o;
    memset(h._zero, 0, sizeof h._zero);
    memcpy(out, &h, sizeof h);
    memcpy(out + sizeof h, build_id, o->build_id_len);
    memcpy(out + sizeof h + o->build_id_len, path, pl + 1);
    return (int)need;
}

int shm_meta_encode_schema(uint8_t *out, size_t cap, const char *name, uint16_t nfields,
                           const uint8_t *types, const char *const *names)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > D9_NAME_MAX || nfields > D9_SCHEMA_MAX_FIELDS)
        return -EINVAL;
    size_t pos = 0;
    if (cap < 4 + n + 1)
        return -ENAMETOOLONG;
    memcpy(out, &nfields, 2);
    out[2] = out[3] = 0;
    pos = 4;
    memcpy(out + pos, name, n + 1);
    pos += n + 1;
    for (uint16_t i = 0; i < nfields; i++) {
        size_t fl = names[i] ? strlen(names[i]) : 0;
        if (fl == 0 || fl > D9_NAME_MAX || types[i] < D9_FT_U64 || types[i] > D9_FT_STR)
            return -EINVAL;
        if (pos + 1 + fl + 1 > cap)
            return -ENAMETOOLONG;
        out[pos++] = types[i];
        memcpy(out + pos, names[i], fl + 1);
        pos += fl + 1;
    }
    return (int)pos;
}

char *shm_meta_code_func(uint64_t addr, char *out)
{
    static const char hex[] = "0123456789abcdef";
    char tmp[16];
    int n = 0;
    do {
        tmp[n++] = hex[addr & 15u];
        addr >>= 4;
    } while (addr);
    out[0] = '0';
    out[1] = 'x';
    for (int i = 0; i < n; i++)
        out[2 + i] = tmp[n - 1 - i];
    out[2 + n] = 0;
    return out;
}

/* The address in a code or trampoline entry's func ("0x" + hex). */
static int func_addr(const char *func, uint64_t *addr)
{
    if (func[0] != '0' || func[1] != 'x')
        return 0;
    const char *p = func + 2;
    uint64_t v = 0;
    int n = 0;
    for (; *p; p++, n++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (d < 0 || n >= 16)
            return 0;
        v = v << 4 | (uint64_t)d;
    }
    if (n == 0)
        return 0;
    *addr = v;
    return 1;
}

int shm_meta_code_addr(const struct shm_meta_entry *e, uint64_t *addr)
{
    if (!e || e->kind != D9_META_LOCATION || !e->name || !e->func || e->line != 0 ||
        strcmp(e->name, D9_LOC_CODE_FILE) != 0)
        return 0;
    return func_addr(e->func, addr);
}

int shm_meta_tramp(const struct shm_meta_entry *e, uint64_t *tramp, uint32_t *loc)
{
    if (!e || e->kind != D9_META_LOCATION || !e->name || !e->func || e->line == 0 ||
        strcmp(e->name, D9_LOC_TRAMP_FILE) != 0 || !func_addr(e->func, tramp))
        return 0;
    *loc = e->line;
    return 1;
}
