/*
 * s3_key.h — the layout of a store in a bucket, and the manifest that
 * describes each shipped segment.
 *
 * Layout (PREFIX may be empty, then keys start at HOST):
 *   PREFIX/HOST/YYYY-MM-DD/PID-START/ID.d9seg           the segment file, byte for byte
 *   PREFIX/HOST/YYYY-MM-DD/PID-START/ID.manifest.json   its manifest
 * HOST: the store's host name with every byte outside [A-Za-z0-9._-]
 * replaced by '_'; YYYY-MM-DD: UTC day of the segment's first record
 * (boot_realtime_ns + t_min); PID-START: pid and start time (clock ticks
 * after boot, /proc/PID/stat field 22) of the traced process; ID: the
 * segment id, decimal. The manifest is uploaded after its segment, so a
 * manifest present means its segment is whole in the bucket.
 *
 * With --ship-parquet the segment's rows as Parquet, one file per table of
 * d9 sql, Hive-style for engines that prune by partition:
 *   PREFIX/parquet/table=TABLE/date=YYYY-MM-DD/host=HOST/ID.parquet
 * TABLE as HOST above; YYYY-MM-DD, HOST and ID the segment's.
 *
 * Manifest: one JSON object, keys below (s3_key_manifest_write), string
 * and unsigned integer values, and one array: "threads", the named threads
 * that have blocks in the segment, each a flat object {"tid", "ring",
 * "generation", "name"} (the names live only in the collector's index, so a
 * pulled store gets them from here). Readers ignore keys they do not know
 * whose values are strings or numbers. "format": 1 is its version; crc32c
 * and sha256 are of the whole segment file.
 *
 * Called by: the collector's uploader (ship.c), d9 pull / --store s3://.
 *
 * Must never: trust a manifest read back: s3_key_manifest_parse bounds
 * every string and number and rejects anything else (fuzzed).
 */
#ifndef D9_S3_KEY_H
#define D9_S3_KEY_H

#include <stddef.h>
#include <stdint.h>

#define S3_KEY_MANIFEST_FORMAT 1
#define S3_KEY_MANIFEST_MAX 65536         /* bytes of a manifest */
/* threads in a manifest: a writer names the first this many, a reader
 * refuses more; each writes as at most ~180 bytes, so they fit the above */
#define S3_KEY_THREADS_MAX 256
#define S3_KEY_THREAD_NAME_MAX 16         /* bytes of a thread name (D9_COMM_MAX) */
#define S3_KEY_SEG_SUFFIX ".d9seg"
#define S3_KEY_MANIFEST_SUFFIX ".manifest.json"
#define S3_KEY_PARQUET_DIR "parquet"
#define S3_KEY_PARQUET_SUFFIX ".parquet"
#define S3_KEY_TABLE_MAX 128              /* bytes of a table name in a Parquet key */

struct s3_key_manifest {
    uint64_t format;                  /* S3_KEY_MANIFEST_FORMAT */
    char host[256];
    char boot_id[64];
    uint64_t pid, start_time;
    char comm[64];
    uint64_t segment_id;
    uint64_t t_min_ns, t_max_ns;      /* CLOCK_MONOTONIC of the host */
    uint64_t boot_realtime_ns;        /* add to the above for wall-clock time */
    uint64_t records, lost, bytes;
    uint64_t crc32c;                  /* of the whole file */
    char sha256[65];                  /* hex, of the whole file */
    /* a kept window's segment (--retain triggered, seg.h's struct seg_keep):
     * written as the flat keys "trigger_t_ns", "trigger_t0_ns",
     * "trigger_t1_ns", "trigger_pid", "trigger_count", "trigger_source_segment"
     * and "trigger_reason" (older readers ignore them); none when kept is 0 */
    int kept;
    uint64_t trigger_t_ns, trigger_t0_ns, trigger_t1_ns, trigger_pid, trigger_count,
        trigger_source_segment;
    char trigger_reason[64];
};

/* One thread of a manifest: a ring generation of the segment's process. */
struct s3_key_thread {
    uint32_t tid, ring, generation;
    char name[S3_KEY_THREAD_NAME_MAX + 1];  /* non-empty; may hold any byte but NUL */
};
struct s3_key_threads {
    uint32_t n;                           /* <= S3_KEY_THREADS_MAX */
    struct s3_key_thread t[S3_KEY_THREADS_MAX];
};

/* "HOST/YYYY-MM-DD/PID-START/ID" (no prefix, no suffix): the name both
 * objects share; append S3_KEY_SEG_SUFFIX or S3_KEY_MANIFEST_SUFFIX. */
int s3_key_stem(const struct s3_key_manifest *m, char *out, size_t cap);

/* "parquet/table=TABLE/date=YYYY-MM-DD/host=HOST/ID.parquet" (no prefix):
 * the key of the segment's Parquet file of TABLE; -EINVAL for an empty or
 * over-long table name or host, -ENAMETOOLONG if cap is short. */
int s3_key_parquet(const struct s3_key_manifest *m, const char *table, char *out, size_t cap);

/* The manifest as JSON (NUL-terminated) with threads t (NULL = none, no
 * "threads" key); -ENAMETOOLONG if cap is short, -EINVAL if t->n is over
 * S3_KEY_THREADS_MAX or a name is empty. */
int s3_key_manifest_write(const struct s3_key_manifest *m, const struct s3_key_threads *t,
                          char *out, size_t cap);

/* Parse a manifest into m and its threads into t (NULL: checked, not kept;
 * none in the manifest: t->n = 0); -EBADMSG on anything malformed, too
 * long, of another format, or with more than S3_KEY_THREADS_MAX threads, a
 * thread name empty or longer than S3_KEY_THREAD_NAME_MAX. Unknown keys are
 * skipped. */
int s3_key_manifest_parse(const char *buf, size_t len, struct s3_key_manifest *m,
                          struct s3_key_threads *t);

#endif /* D9_S3_KEY_H */
