/*
 * region.h — create, map and validate per-process shared-memory regions.
 *
 * Agent side: shm_region_create() makes /dev/shm/d9.<uid>.<pid>.<start>
 * (O_EXCL, mode 0600 unless told otherwise), sizes it, lays out the header
 * and rings, and publishes state READY last. Rings are sparse until used.
 * Slot claim/release (shm_slot_claim/shm_slot_release) are the only shared
 * writes an agent makes outside the producer line of its own ring.
 *
 * Collector side: shm_region_map() opens a region found by name, refuses it
 * unless the file's owner uid is the owner of the pid (or the file name's
 * uid matches and the process is gone), maps it and validates a private copy
 * of the header into struct shm_geometry. Every later access goes through
 * the geometry, never through header fields re-read from shm.
 */
#ifndef D9_SHM_REGION_H
#define D9_SHM_REGION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "shm/d9_abi.h"

struct shm_region_params {
    uint32_t ring_count;        /* D9_RINGS_DEFAULT if 0 */
    uint32_t ring_data_size;    /* bytes, power of two; D9_RING_KB_DEFAULT KiB if 0 */
    uint32_t meta_size;         /* D9_META_SIZE_DEFAULT if 0 */
    uint32_t clock_source;      /* enum d9_clock_source */
    mode_t mode;                /* 0600 if 0 */
    const char *dir;            /* D9_SHM_DIR if NULL (tests use a tmp dir) */
    const char *comm;           /* process name and executable, written before READY */
    const char *exe;            /*   so a collector never sees them empty; may be NULL */
    uint32_t flags;             /* D9_REGION_F_* besides BELL, set before READY (0: none) */
};

/* A mapped region (either side). */
struct shm_region {
    uint8_t *base;
    size_t size;
    struct d9_region_hdr *hdr;
    char path[256];
    uint64_t dev, ino;          /* the file mapped (collector: shm_region_map) */
};

/* Validated geometry: the only numbers the collector uses to index shm. */
struct shm_geometry {
    uint64_t region_size;
    uint64_t meta_offset;
    uint32_t meta_size;
    uint32_t ring_count;
    uint64_t rings_offset;
    uint32_t ring_data_size;
    uint32_t ring_stride;
    uint32_t pid;
    uint32_t uid;
    uint64_t start_time;
    uint32_t clock_source;
    uint32_t flags;             /* D9_REGION_F_* as the agent claimed them (a hint only) */
    char comm[D9_COMM_MAX + 1]; /* NUL-terminated copies */
    char exe[D9_EXE_MAX + 1];
};

/* Copy a fixed-size, possibly unterminated name field of scap bytes (from
 * shm or a copy of it) into dst (dcap bytes): always NUL-terminated, control
 * bytes replaced by '?' (these names end up in terminals and JSON). */
void shm_copy_name(char *dst, size_t dcap, const char *src, size_t scap);

/* Name of the region of (uid, pid, start_time) into buf. */
int shm_region_name(char *buf, size_t cap, uint32_t uid, uint32_t pid, uint64_t start_time);

/* Parse a region file name "d9.<uid>.<pid>.<start>"; 0 or -EINVAL. */
int shm_region_parse_name(const char *name, uint32_t *uid, uint32_t *pid, uint64_t *start_time);

/* Start time (field 22 of /proc/<pid>/stat) of a live process; -ESRCH if gone. */
int shm_proc_start_time(uint32_t pid, uint64_t *start_time);

/* The same read, also giving the state letter (field 3: 'R', 'S', 'Z', ...)
 * into *state when state is not NULL. 0, -ESRCH (gone), -EBADMSG or -errno
 * (then neither is set). */
int shm_proc_stat(uint32_t pid, char *state, uint64_t *start_time);

/* Agent: create and lay out the region for the calling process. */
int shm_region_create(const struct shm_region_params *params, struct shm_region *out);

/* Agent: unmap (the file stays for the collector to drain and unlink). */
void shm_region_close(struct shm_region *r);

/* Collector: open, check ownership, map and validate. expected_uid is the
 * uid that must own the file (the pid's uid, or the name's uid if the pid is
 * gone). Errors: -EPERM owner mismatch, -EBADMSG bad header, -EAGAIN header
 * still INIT, -errno from open/mmap. */
int shm_region_map(const char *path, uint32_t expected_uid, struct shm_region *out,
                   struct shm_geometry *geo);

/* Remove the region file r mapped (collector) or created (agent), only if
 * path still names that file (same device and inode, not a symlink): a file
 * put in its place is someone else's. 0, -ESTALE (another file there, left
 * alone) or -errno. */
int shm_region_unlink(const struct shm_region *r);

/* Collector: the region is adopted (hdr->adopted = D9_ADOPT_COLLECTOR,
 * seq_cst exchange); returns the value it replaced. From then on the agent
 * leaves the file at exit for a collector to drain and remove. The caller
 * guards the write against SIGBUS. */
uint32_t shm_region_mark_adopted(struct d9_region_hdr *hdr);

/* Agent, at clean exit with no collector to take the region: CAS adopted
 * 0 -> D9_ADOPT_ABANDONED (seq_cst) and, if that won, unlink the file (by
 * inode, as shm_region_unlink). 1 removed, 0 left (a collector adopted it
 * first: it drains and removes it), -errno (the unlink failed). A
 * collector that maps the file in the instant between the two still has
 * the whole region (the agent has CLOSED it; the mapping outlives the name). */
int shm_region_abandon(struct shm_region *r);

/* What the regions of user uid in dir (d9.<uid>.*) hold in memory that no
 * collector is draining: the allocated bytes (st_blocks) of every regular
 * file of uid whose header does not say a collector adopted it, or whose
 * process is gone (nothing writes to it; a running collector removes it
 * soon). bytes and files are set; 0 or -errno (dir unreadable). Reads 4
 * bytes of each file's header with pread (never maps, never follows links,
 * never blocks on a FIFO). Not a hot path: d9_init only. */
int shm_region_unadopted_bytes(const char *dir, uint32_t uid, uint64_t *bytes, uint32_t *files);

/* Validate a header copy against the actual file size. 0 or -EBADMSG. */
int shm_region_validate(const struct d9_region_hdr *hdr, uint64_t file_size,
                        struct shm_geometry *geo);

/* Ring idx of a validated region (idx < geo->ring_count). */
static inline struct d9_ring_hdr *shm_ring_hdr(const struct shm_region *r,
                                               const struct shm_geometry *g, uint32_t idx)
{
    return (struct d9_ring_hdr *)(r->base + g->rings_offset + (uint64_t)idx * g->ring_stride);
}
static inline uint8_t *shm_ring_data(const struct shm_region *r,
                                     const struct shm_geometry *g, uint32_t idx)
{
    return r->base + g->rings_offset + (uint64_t)idx * g->ring_stride + D9_RING_HDR_SIZE;
}

/* Agent: claim a free (or released and drained) ring for thread tid.
 * Returns the ring index or -ENOSPC (threads_untraced is incremented). */
int shm_slot_claim(struct shm_region *r, uint32_t tid, const char *thread_name);

/* Agent: release ring idx at thread exit (OWNED -> RELEASED). */
void shm_slot_release(struct shm_region *r, uint32_t idx);

/* Collector: RELEASED -> FREE after draining; 1 if recycled, 0 if not. */
int shm_slot_recycle(struct d9_ring_hdr *hdr);

#endif /* D9_SHM_REGION_H */
