/*
 * region.c — per-process region files (see region.h).
 *
 * Agent side creates and lays out the region and claims/releases ring
 * slots; collector side maps a region it does not trust and derives a
 * validated geometry from a private copy of the header. The collector never
 * re-reads geometry from shm after shm_region_map() returns.
 *
 * Slot protocol (the only cross-process writes besides ring cursors):
 *   claim:   CAS state FREE -> CLAIMING (or RELEASED -> CLAIMING when
 *            head == tail, i.e. the collector has copied everything), write
 *            tid/generation/name, then store OWNED with release.
 *   release: store RELEASED with release, after the thread's last commit.
 *   recycle: the collector CASes RELEASED -> FREE once head == tail.
 * Because a ring is only re-claimed when fully drained, the records in
 * [tail, head) always belong to the generation the consumer reads *after*
 * its acquire-load of head (see shm_ring_snapshot in ring.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "shm/region.h"
#include "shm/clock.h"

#define STAT_BLOCK_BYTES 512u      /* st_blocks counts 512-byte units (POSIX) */

int shm_region_name(char *buf, size_t cap, uint32_t uid, uint32_t pid, uint64_t start_time)
{
    int n = snprintf(buf, cap, D9_REGION_PREFIX "%" PRIu32 ".%" PRIu32 ".%" PRIu64,
                     uid, pid, start_time);
    return (n < 0 || (size_t)n >= cap) ? -ENAMETOOLONG : 0;
}

static int parse_u64(const char **p, uint64_t *out, char stop)
{
    const char *s = *p;
    if (*s < '0' || *s > '9')
        return -EINVAL;
    uint64_t v = 0;
    while (*s >= '0' && *s <= '9') {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -EINVAL;
        v = v * 10 + d;
        s++;
    }
    if (*s != stop)
        return -EINVAL;
    *out = v;
    *p = s + (stop ? 1 : 0);
    return 0;
}

int shm_region_parse_name(const char *name, uint32_t *uid, uint32_t *pid, uint64_t *start_time)
{
    size_t pl = strlen(D9_REGION_PREFIX);
    if (!name || strncmp(name, D9_REGION_PREFIX, pl) != 0)
        return -EINVAL;
    const char *p = name + pl;
    uint64_t u, q, s;
    if (parse_u64(&p, &u, '.') || parse_u64(&p, &q, '.') || parse_u64(&p, &s, '\0'))
        return -EINVAL;
    if (u > UINT32_MAX || q == 0 || q > INT32_MAX)
        return -EINVAL;
    *uid = (uint32_t)u;
    *pid = (uint32_t)q;
    *start_time = s;
    return 0;
}

int shm_proc_stat(uint32_t pid, char *state, uint64_t *start_time)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%" PRIu32 "/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -ESRCH : -errno;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    int err = errno;
    close(fd);
    if (n <= 0)
        return n < 0 ? -err : -ESRCH;
    buf[n] = 0;
    /* comm may contain spaces and ')': fields restart after the last ')' */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || !p[2])
        return -EBADMSG;
    char st = p[2];
    p++;
    /* after ')' comes field 3 (the state); starttime is field 22 */
    for (int field = 3; field < 22; field++) {
        p = strchr(p + 1, ' ');
        if (!p)
            return -EBADMSG;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p + 1, &end, 10);
    if (errno || end == p + 1)
        return -EBADMSG;
    if (state)
        *state = st;
    *start_time = v;
    return 0;
}

int shm_proc_start_time(uint32_t pid, uint64_t *start_time)
{
    return shm_proc_stat(pid, NULL, start_time);
}

static int is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

int shm_region_create(const struct shm_region_params *params, struct shm_region *out)
{
    struct shm_region_params p = *params;
    if (!p.ring_count)
        p.ring_count = D9_RINGS_DEFAULT;
    if (!p.ring_data_size)
        p.ring_data_size = D9_RING_KB_DEFAULT * 1024u;
    if (!p.meta_size)
        p.meta_size = D9_META_SIZE_DEFAULT;
    if (!p.mode)
        p.mode = 0600;
    if (!p.dir)
        p.dir = D9_SHM_DIR;
    if (p.clock_source != D9_CLOCK_TSC && p.clock_source != D9_CLOCK_MONOTONIC)
        p.clock_source = D9_CLOCK_MONOTONIC;
    if (p.ring_count > D9_RINGS_MAX || !is_pow2(p.ring_data_size) ||
        p.ring_data_size < D9_RING_DATA_MIN || p.ring_data_size > D9_RING_DATA_MAX ||
        p.meta_size % 8 || p.meta_size > D9_META_SIZE_MAX)
        return -EINVAL;

    uint32_t pid = (uint32_t)getpid(), uid = (uint32_t)getuid();
    uint64_t start = 0;
    int rc = shm_proc_start_time(pid, &start);
    if (rc)
        return rc;

    memset(out, 0, sizeof *out);
    char name[96];
    if ((rc = shm_region_name(name, sizeof name, uid, pid, start)))
        return rc;
    int n = snprintf(out->path, sizeof out->path, "%s/%s", p.dir, name);
    if (n < 0 || (size_t)n >= sizeof out->path)
        return -ENAMETOOLONG;

    uint64_t stride = (uint64_t)D9_RING_HDR_SIZE + p.ring_data_size;
    uint64_t size = D9_REGION_HDR_SIZE + (uint64_t)p.meta_size + stride * p.ring_count;

    int fd = open(out->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, p.mode);
    if (fd < 0)
        return -errno;
    if (fchmod(fd, p.mode) != 0 || ftruncate(fd, (off_t)size) != 0) {
        rc = -errno;
        close(fd);
        unlink(out->path);
        return rc;
    }
    struct stat fst;
    if (fstat(fd, &fst) != 0) {
        rc = -errno;
        close(fd);
        unlink(out->path);
        return rc;
    }
    out->dev = (uint64_t)fst.st_dev;
    out->ino = (uint64_t)fst.st_ino;
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    rc = -errno;
    close(fd);
    if (base == MAP_FAILED) {
        unlink(out->path);
        return rc;
    }

    /* the file is zero-filled: every ring starts FREE with head == tail == 0 */
    struct d9_region_hdr *h = base;
    h->magic = D9_REGION_MAGIC;
    h->abi_version = D9_ABI_VERSION;
    h->hdr_size = D9_REGION_HDR_SIZE;
    h->region_size = size;
    h->meta_offset = D9_REGION_HDR_SIZE;
    h->meta_size = p.meta_size;
    h->ring_count = p.ring_count;
    h->rings_offset = D9_REGION_HDR_SIZE + (uint64_t)p.meta_size;
    h->ring_data_size = p.ring_data_size;
    h->ring_stride = (uint32_t)stride;
    h->pid = pid;
    h->uid = uid;
    h->start_time = start;
    h->clock_source = p.clock_source;
    h->flags = D9_REGION_F_BELL | p.flags;  /* producers attach with shm_producer_bell */
    h->created_ns = shm_mono_ns();
    /* NUL-padded; a name that fills the field is unterminated (readers cope) */
    if (p.comm)
        memcpy(h->comm, p.comm, strnlen(p.comm, sizeof h->comm));
    if (p.exe)
        memcpy(h->exe, p.exe, strnlen(p.exe, sizeof h->exe));
    /* release: the layout above happens-before anyone seeing READY */
    atomic_store_explicit(&h->state, D9_REGION_READY, memory_order_release);

    out->base = base;
    out->size = size;
    out->hdr = h;
    return 0;
}

void shm_region_close(struct shm_region *r)
{
    if (r->base)
        munmap(r->base, r->size);
    r->base = NULL;
    r->hdr = NULL;
    r->size = 0;
}

void shm_copy_name(char *dst, size_t dcap, const char *src, size_t scap)
{
    size_t n = strnlen(src, scap);
    if (n >= dcap)
        n = dcap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
    /* replace control bytes: these strings end up in terminals and JSON */
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)dst[i] < 0x20 || dst[i] == 0x7f)
            dst[i] = '?';
}

int shm_region_validate(const struct d9_region_hdr *hc, uint64_t file_size,
                        struct shm_geometry *g)
{
    if (file_size < D9_REGION_HDR_SIZE || hc->magic != D9_REGION_MAGIC ||
        hc->abi_version != D9_ABI_VERSION || hc->hdr_size != D9_REGION_HDR_SIZE)
        return -EBADMSG;
    if (hc->region_size != file_size || hc->meta_offset != D9_REGION_HDR_SIZE ||
        hc->meta_size % 8 || hc->meta_size > D9_META_SIZE_MAX)
        return -EBADMSG;
    if (hc->rings_offset != hc->meta_offset + hc->meta_size)
        return -EBADMSG;
    if (!is_pow2(hc->ring_data_size) || hc->ring_data_size < D9_RING_DATA_MIN ||
        hc->ring_data_size > D9_RING_DATA_MAX ||
        hc->ring_stride != D9_RING_HDR_SIZE + hc->ring_data_size)
        return -EBADMSG;
    if (hc->ring_count == 0 || hc->ring_count > D9_RINGS_MAX)
        return -EBADMSG;
    /* no overflow: count <= 2^12, stride < 2^27 */
    if (hc->rings_offset + (uint64_t)hc->ring_count * hc->ring_stride != file_size)
        return -EBADMSG;
    if (hc->clock_source != D9_CLOCK_TSC && hc->clock_source != D9_CLOCK_MONOTONIC)
        return -EBADMSG;

    memset(g, 0, sizeof *g);
    g->region_size = file_size;
    g->meta_offset = hc->meta_offset;
    g->meta_size = hc->meta_size;
    g->ring_count = hc->ring_count;
    g->rings_offset = hc->rings_offset;
    g->ring_data_size = hc->ring_data_size;
    g->ring_stride = hc->ring_stride;
    g->pid = hc->pid;
    g->uid = hc->uid;
    g->start_time = hc->start_time;
    g->clock_source = hc->clock_source;
    g->flags = hc->flags;
    shm_copy_name(g->comm, sizeof g->comm, hc->comm, sizeof hc->comm);
    shm_copy_name(g->exe, sizeof g->exe, hc->exe, sizeof hc->exe);
    return 0;
}

int shm_region_map(const char *path, uint32_t expected_uid, struct shm_region *out,
                   struct shm_geometry *geo)
{
    memset(out, 0, sizeof *out);
    const char *base_name = strrchr(path, '/');
    base_name = base_name ? base_name + 1 : path;
    uint32_t nuid, npid;
    uint64_t nstart;
    if (shm_region_parse_name(base_name, &nuid, &npid, &nstart))
        return -EINVAL;
    if (strlen(path) >= sizeof out->path)
        return -ENAMETOOLONG;

    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
    } else if (!S_ISREG(st.st_mode)) {
        rc = -EBADMSG;
    } else if (st.st_uid != expected_uid || st.st_uid != nuid) {
        rc = -EPERM;
    } else if ((uint64_t)st.st_size < D9_REGION_HDR_SIZE) {
        rc = -EAGAIN;   /* being created: ftruncate not done yet */
    }
    if (rc) {
        close(fd);
        return rc;
    }
    out->dev = (uint64_t)st.st_dev;
    out->ino = (uint64_t)st.st_ino;
    void *base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    rc = -errno;
    close(fd);
    if (base == MAP_FAILED)
        return rc;

    struct d9_region_hdr copy;
    memcpy(&copy, base, sizeof copy);
    uint32_t state = atomic_load_explicit(&((struct d9_region_hdr *)base)->state,
                                          memory_order_acquire);
    if (state == D9_REGION_INIT) {
        munmap(base, (size_t)st.st_size);
        return -EAGAIN;
    }
    /* re-copy after the acquire so the layout is the published one */
    memcpy(&copy, base, sizeof copy);
    rc = shm_region_validate(&copy, (uint64_t)st.st_size, geo);
    if (!rc && (geo->pid != npid || geo->uid != nuid || geo->start_time != nstart))
        rc = -EBADMSG;
    if (rc) {
        munmap(base, (size_t)st.st_size);
        return rc;
    }
    out->base = base;
    out->size = (size_t)st.st_size;
    out->hdr = base;
    memcpy(out->path, path, strlen(path) + 1);
    return 0;
}

static struct d9_ring_hdr *agent_ring(struct shm_region *r, uint32_t idx)
{
    struct d9_region_hdr *h = r->hdr;
    return (struct d9_ring_hdr *)(r->base + h->rings_offset + (uint64_t)idx * h->ring_stride);
}

int shm_slot_claim(struct shm_region *r, uint32_t tid, const char *thread_name)
{
    struct d9_region_hdr *h = r->hdr;
    uint32_t count = h->ring_count;
    uint32_t start = atomic_load_explicit(&h->ring_hint, memory_order_relaxed) % count;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t idx = (start + i) % count;
        struct d9_ring_hdr *ring = agent_ring(r, idx);
        uint32_t s = atomic_load_explicit(&ring->state, memory_order_relaxed);
        if (s == D9_RING_RELEASED) {
            /* reusable only once the collector copied everything: tail only
             * moves towards head and head has no writer, so this is stable */
            uint64_t hd = atomic_load_explicit(&ring->head, memory_order_acquire);
            uint64_t tl = atomic_load_explicit(&ring->tail, memory_order_acquire);
            if (hd != tl)
                continue;
        } else if (s != D9_RING_FREE) {
            continue;
        }
        if (!atomic_compare_exchange_strong_explicit(&ring->state, &s, D9_RING_CLAIMING,
                                                     memory_order_acq_rel,
                                                     memory_order_relaxed))
            continue;
        __atomic_store_n(&ring->tid, tid, __ATOMIC_RELAXED);
        __atomic_store_n(&ring->generation, ring->generation + 1, __ATOMIC_RELAXED);
        char name[D9_COMM_MAX] = { 0 };
        if (thread_name)
            strncpy(name, thread_name, sizeof name - 1);
        memcpy(ring->thread_name, name, sizeof name);
        /* release: tid/generation/name happen-before OWNED and every record */
        atomic_store_explicit(&ring->state, D9_RING_OWNED, memory_order_release);
        atomic_store_explicit(&h->ring_hint, idx + 1, memory_order_relaxed);
        return (int)idx;
    }
    atomic_fetch_add_explicit(&h->threads_untraced, 1, memory_order_relaxed);
    return -ENOSPC;
}

void shm_slot_release(struct shm_region *r, uint32_t idx)
{
    if (idx >= r->hdr->ring_count)
        return;
    /* release: the thread's last head store happens-before RELEASED */
    atomic_store_explicit(&agent_ring(r, idx)->state, D9_RING_RELEASED, memory_order_release);
}

int shm_slot_recycle(struct d9_ring_hdr *hdr)
{
    uint32_t s = D9_RING_RELEASED;
    uint64_t hd = atomic_load_explicit(&hdr->head, memory_order_acquire);
    uint64_t tl = atomic_load_explicit(&hdr->tail, memory_order_relaxed);
    if (hd != tl)
        return 0;
    return atomic_compare_exchange_strong_explicit(&hdr->state, &s, D9_RING_FREE,
                                                   memory_order_acq_rel,
                                                   memory_order_relaxed) ? 1 : 0;
}

int shm_region_unlink(const struct shm_region *r)
{
    struct stat st;
    if (lstat(r->path, &st) != 0)
        return -errno;
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_dev != r->dev || (uint64_t)st.st_ino != r->ino)
        return -ESTALE;
    return unlink(r->path) == 0 ? 0 : -errno;
}

uint32_t shm_region_mark_adopted(struct d9_region_hdr *hdr)
{
    return atomic_exchange_explicit(&hdr->adopted, D9_ADOPT_COLLECTOR, memory_order_seq_cst);
}

int shm_region_abandon(struct shm_region *r)
{
    if (!r->hdr)
        return 0;
    uint32_t none = D9_ADOPT_NONE;
    if (!atomic_compare_exchange_strong_explicit(&r->hdr->adopted, &none, D9_ADOPT_ABANDONED,
                                                 memory_order_seq_cst, memory_order_seq_cst))
        return 0;
    int rc = shm_region_unlink(r);
    return rc == 0 ? 1 : rc;
}

/* 1 if the region file (open as fd) says a collector adopted it. */
static int file_adopted(int fd)
{
    uint32_t v = 0;
    ssize_t n = pread(fd, &v, sizeof v, (off_t)offsetof(struct d9_region_hdr, adopted));
    return n == (ssize_t)sizeof v && v == D9_ADOPT_COLLECTOR;
}

int shm_region_unadopted_bytes(const char *dir, uint32_t uid, uint64_t *bytes, uint32_t *files)
{
    *bytes = 0;
    *files = 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    DIR *d = fdopendir(dfd);
    if (!d) {
        int rc = -errno;
        close(dfd);
        return rc;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        uint32_t fuid, pid;
        uint64_t start, now_start;
        if (shm_region_parse_name(de->d_name, &fuid, &pid, &start) != 0 || fuid != uid)
            continue;
        int fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint32_t)st.st_uid == uid) {
            int live = shm_proc_start_time(pid, &now_start) == 0 && now_start == start;
            if (!live || !file_adopted(fd)) {
                *bytes += (uint64_t)st.st_blocks * STAT_BLOCK_BYTES;
                (*files)++;
            }
        }
        close(fd);
    }
    closedir(d);
    return 0;
}
