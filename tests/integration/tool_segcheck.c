/*
 * tool_segcheck.c — reads every sealed segment of a store and prints what
 * the collector integration tests compare against prog_workload's output.
 *
 *   tool_segcheck STORE [PID]
 *
 * Output, one "key=value" per line:
 *   segments records custom wl_events wl_unique wl_dups
 *   exit_clean exit_crashed exit_unknown thread_ends lost pids bad_segments
 *   type.<record type name> (records per type, e.g. type.poll_end)
 * wl_* count the prog_workload events "wl_seq" {thread, seq}: wl_unique is
 * the number of distinct (pid, thread, seq), wl_dups the repeats.
 * Exit status 0 unless the store cannot be read. Linked with libcol.a.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/seg_reader.h"
#include "shm/record.h"

struct key { uint32_t pid; uint64_t thread, seq; };

static struct key *keys;
static size_t nkeys, capkeys;

static int cmp_key(const void *a, const void *b)
{
    const struct key *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->thread != y->thread) return x->thread < y->thread ? -1 : 1;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    return 0;
}

static void add_key(uint32_t pid, uint64_t t, uint64_t s)
{
    if (nkeys == capkeys) {
        capkeys = capkeys ? capkeys * 2 : 4096;
        keys = realloc(keys, capkeys * sizeof *keys);
        if (!keys) {
            perror("realloc");
            exit(1);
        }
    }
    keys[nkeys++] = (struct key){ pid, t, s };
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: tool_segcheck STORE [PID]\n");
        return 2;
    }
    uint32_t only = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 0;
    DIR *d = opendir(argv[1]);
    if (!d) {
        perror(argv[1]);
        return 1;
    }
    uint64_t segments = 0, records = 0, custom = 0, wl = 0, clean = 0, crashed = 0, unknown = 0;
    uint64_t tends = 0, lost = 0, bad = 0;
    uint64_t by_type[D9_REC_TYPE_COUNT] = { 0 };
    uint32_t pids[1024];
    size_t npids = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name), sl = strlen(SEG_FILE_SUFFIX);
        if (de->d_name[0] == '.' || n <= sl || strcmp(de->d_name + n - sl, SEG_FILE_SUFFIX))
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", argv[1], de->d_name);
        struct seg_reader *r;
        if (seg_reader_open(&r, path, 0) != 0) {
            fprintf(stderr, "tool_segcheck: cannot open %s\n", path);
            bad++;
            continue;
        }
        uint32_t pid = seg_reader_header(r)->pid;
        if (only && pid != only) {
            seg_reader_close(r);
            continue;
        }
        size_t k;
        for (k = 0; k < npids && pids[k] != pid; k++) {}
        if (k == npids && npids < 1024)
            pids[npids++] = pid;
        segments++;
        struct seg_block b;
        int rc;
        while ((rc = seg_reader_next(r, &b)) == 1) {
            lost += b.h.lost;
            if (b.h.kind == SEG_BLK_THREAD_END)
                tends++;
            if (b.h.kind == SEG_BLK_EXIT) {
                struct seg_exit e;
                memcpy(&e, b.payload, sizeof e);
                if (e.reason == SEG_EXIT_CLEAN) clean++;
                else if (e.reason == SEG_EXIT_CRASHED) crashed++;
                else unknown++;
            }
            if (b.h.kind != SEG_BLK_DATA)
                continue;
            size_t off = 0;
            const struct d9_rec_hdr *rec;
            while (seg_reader_next_record(&b, &off, &rec) == 1) {
                records++;
                if (rec->type < D9_REC_TYPE_COUNT)
                    by_type[rec->type]++;
                if (rec->type != D9_REC_CUSTOM)
                    continue;
                custom++;
                const struct d9_rec_custom *c = (const void *)rec;
                const struct shm_meta_entry *s = seg_reader_schema(r, c->schema);
                if (!s || strcmp(s->name, "wl_seq") || c->payload_len < 16)
                    continue;
                uint64_t v[2];
                memcpy(v, (const uint8_t *)rec + sizeof *c, sizeof v);
                wl++;
                add_key(pid, v[0], v[1]);
            }
        }
        if (rc < 0) {
            fprintf(stderr, "tool_segcheck: %s: corrupt block\n", path);
            bad++;
        }
        seg_reader_close(r);
    }
    closedir(d);
    qsort(keys, nkeys, sizeof *keys, cmp_key);
    uint64_t uniq = 0, dups = 0;
    for (size_t i = 0; i < nkeys; i++) {
        if (i && cmp_key(&keys[i], &keys[i - 1]) == 0)
            dups++;
        else
            uniq++;
    }
    printf("segments=%" PRIu64 "\nrecords=%" PRIu64 "\ncustom=%" PRIu64 "\nwl_events=%" PRIu64
           "\nwl_unique=%" PRIu64 "\nwl_dups=%" PRIu64 "\nexit_clean=%" PRIu64
           "\nexit_crashed=%" PRIu64 "\nexit_unknown=%" PRIu64 "\nthread_ends=%" PRIu64
           "\nlost=%" PRIu64 "\npids=%zu\nbad_segments=%" PRIu64 "\n",
           segments, records, custom, wl, uniq, dups, clean, crashed, unknown, tends, lost,
           npids, bad);
    for (int t = 1; t < D9_REC_TYPE_COUNT; t++)
        printf("type.%s=%" PRIu64 "\n", shm_record_type_name((uint16_t)t), by_type[t]);
    free(keys);
    return 0;
}
