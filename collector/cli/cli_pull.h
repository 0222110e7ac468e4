/*
 * cli_pull.h — fetch a host's shipped segments from a bucket into a local
 * store and index them: `d9 pull` and the cache behind `d9 --store s3://...`.
 *
 * Called by: cli_pull.c's own `d9 pull` command and cli_s3store.c.
 *
 * What a pull does, in order:
 *   1. list the keys under the prefixes cli_s3path_prefixes gives for the
 *      host and window (host and day come first in the key layout);
 *   2. keep the segments whose key (host, day) and manifest (pid, time
 *      range) match, whose local file is not already there whole;
 *   3. refuse a selection of more than one host (a store is one host's:
 *      segment ids and pids are only unique per host);
 *   4. per segment: GET it into DIR/.pull.<name>.part, check its size and
 *      CRC-32C against the manifest and verify it whole (seg_reader), then
 *      rename it to DIR/<pid>-<start>-<id>.d9seg, and index it from its
 *      contents (reindex_file); a corrupt object is counted and skipped.
 *
 * Invariants: a partial download never has a segment's name, so neither
 * the index nor `d9 fsck` ever sees it; the store lock (store_lock) is
 * held for the whole pull, so two pulls (or a collector) never write the
 * same store; a second pull of the same selection fetches nothing.
 * Must never: write outside DIR, trust a key, a manifest or an object
 * (everything from the bucket is checked before use), print credentials.
 */
#ifndef D9_CLI_PULL_H
#define D9_CLI_PULL_H

#include <stdbool.h>
#include <stdint.h>
#include "collector/cli/cli.h"

struct cli_pull_opts {
    const char *url;                /* s3://BUCKET[/PREFIX] */
    const char *endpoint;           /* NULL or "" = AWS */
    const char *region;             /* NULL or "" = environment, then us-east-1 */
    const char *host;               /* NULL or "" = the one host of the prefix */
    uint32_t pid;                   /* 0 = every process */
    int64_t from_ns, to_ns;         /* CLOCK_REALTIME window; 0 and INT64_MAX = open */
    const char *dir;                /* the local store */
    bool quiet;                     /* no per-segment progress lines */
};

struct cli_pull_result {
    uint64_t listed;                /* segments listed (after the key filter) */
    uint64_t selected;              /* after the manifest filter */
    uint64_t present;               /* already in DIR, not fetched */
    uint64_t fetched, bytes;        /* downloaded and indexed now */
    uint64_t corrupt;               /* objects that failed verification: skipped */
    uint64_t failed;                /* other errors (download, index) */
    uint64_t incomplete;            /* a segment without its manifest or the reverse */
    char host[64];                  /* the host pulled ("" when nothing matched) */
};

/* Run a pull. Prints progress and one line per problem on stderr (as
 * "d9 <cmd>: ..."). Returns CLI_EXIT_OK when every selected segment is in
 * DIR and indexed, CLI_EXIT_FAIL otherwise (r says what happened),
 * CLI_EXIT_USAGE for a bad URL. */
int cli_pull_run(const struct cli_env *env, const struct cli_pull_opts *o,
                 struct cli_pull_result *r);

#endif /* D9_CLI_PULL_H */
