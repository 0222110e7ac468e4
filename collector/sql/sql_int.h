/*
 * sql_int.h — the types the modules of collector/sql/ share: table kinds and
 * their definitions, the connection's context, a table and a cursor. Private
 * to collector/sql/ (d9 sql's command and the tests use sql_vtab.h).
 *
 * A cursor serves one kind of table at a time: a listing (sql_list.c, or
 * the stacks of sql_stack.c), a record table (sql_scan.c) or a paired table
 * (sql_pair.c); the fields of the others stay zero.
 */
#ifndef D9_COL_SQL_INT_H
#define D9_COL_SQL_INT_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include "collector/query/q_decode.h"
#include "collector/store/store_hash.h"
#include "collector/query/q_loc.h"
#include "collector/query/q_names.h"
#include "collector/query/q_pair.h"
#include "collector/query/q_scan.h"
#include "collector/query/q_sym.h"
#include "collector/store/sym.h"
#include "collector/sql/sql_group.h"

#define SQL_COST_RECORDS  1e7   /* planner cost of a full record scan */
#define SQL_COST_LISTING  1e3   /* of a listing table */
#define SQL_MAX_CODES     32    /* pushed constraints per scan */
#define SQL_LOC_CACHE     256   /* location texts kept per polls cursor */
#define SQL_THR_CACHE     256   /* thread indices kept per grouped polls cursor */
/* Polls served grouped (GROUP BY / ORDER BY loc or location) are held in
 * memory until the scan ends: the planner takes that path only when the
 * index's poll_start counts say they fit in SQL_GROUP_MEM; past
 * SQL_GROUP_MEM_HARD at run time the query fails rather than grow on. */
#define SQL_GROUP_MEM      (1ull << 30)
#define SQL_GROUP_MEM_HARD (2ull << 30)
/* idxNum of a polls scan that serves its rows grouped */
enum { GRP_NONE, GRP_BY_LOC, GRP_BY_LOCATION };

enum kind {
    K_PROCESSES, K_THREADS, K_RUNTIMES, K_LOCATIONS, K_SEGMENTS, K_STACKS,
    K_POLLS, K_PARKS, K_WAKES, K_SPAWNS, K_TERMINATES, K_QUEUE_DEPTHS, K_CPU_SAMPLES,
    K_EVENTS, K_CUSTOM, K_SCHED_WAITS, K_WORKERS, K_POLL_STATS, K_WORKER_STATS,
    K_LOOP_WORK, K_LOCATION_STATS, K_WAKE_STATS, K_EVENT_STATS, K_TRIGGERS,
    K_KEPT, K_EVENT_FIELD_STATS,
};

#define T(x) (1u << (x))
struct tab_def {
    const char *name;
    enum kind kind;
    const char *cols;
    int pid_col, tid_col, ts_col, rt_col;   /* -1: none */
    uint32_t types;                         /* record types scanned; 0: a listing */
    bool tid_blocks;                        /* tid selects blocks (records of that ring) */
    bool ordered;                           /* rows come in ts_col order */
    const char *doc;
};

/* record tables share their first columns: pid, tid, ts_ns */
enum { C_PID, C_TID, C_TS, C_TASK, C_FIELDS };   /* a custom event's table: fields from C_FIELDS */
enum { PL_PID, PL_TID, PL_RUNTIME, PL_WORKER, PL_TASK, PL_LOC, PL_LOCATION, PL_START, PL_END,
       PL_DUR, PL_UNFINISHED };
enum { PK_PID, PK_TID, PK_RUNTIME, PK_WORKER, PK_START, PK_END, PK_DUR, PK_CPU, PK_WAIT,
       PK_PARK_WAIT };
enum { SW_PID, SW_TID, SW_TS, SW_RUNTIME, SW_WORKER, SW_KIND, SW_WAIT, SW_CPU };
enum { ST_ID, ST_DEPTH, ST_FRAME, ST_ADDRESS, ST_PID };

struct event_def {                  /* one custom-event table */
    char *table;                    /* SQL name */
    char *event;                    /* schema name */
    unsigned nfields;
    char *fields[D9_SCHEMA_MAX_FIELDS * 4];     /* union over the processes */
    char *colnames[D9_SCHEMA_MAX_FIELDS * 4];
    uint8_t ftype[D9_SCHEMA_MAX_FIELDS * 4];    /* D9_FT_*, 0 = differs between schemas */
    uint32_t pid;                   /* the one pid whose processes have it, 0 = several */
};

struct stk {
    uint64_t id;
    int64_t process_id;
    uint32_t pid;
    uint16_t nframes;               /* its frames as q_sym_frames gives them */
    uint64_t *ips;                  /* innermost first */
    const char **names;             /* q_sym's names */
};

struct sql_vtab {
    struct q_store *s;
    const char *prog;
    struct q_names *names;
    struct q_scan_stats st;
    struct event_def *ev;
    size_t nev;
    bool tables_done;               /* sql_vtab_attach_tables ran */
    bool stacks_built;
    struct stk *stk;
    size_t nstk, capstk;
    size_t *slot;                   /* hash of stk index + 1, 0 = empty */
    size_t capslot;
    struct q_sym *sym;              /* frame names, for the stacks table */
};

struct vt {
    sqlite3_vtab base;
    struct sql_vtab *ctx;
    const struct tab_def *def;
    const struct event_def *ev;     /* K_CUSTOM */
};

/* a listing row value */
struct mval {
    int t;                          /* SQLITE_NULL / INTEGER / FLOAT / TEXT */
    int64_t i;
    double d;
    char *s;
};

struct park_slot {
    int64_t process_id;
    uint32_t ring, generation;
    bool open;
    uint32_t pid, tid;
    uint16_t runtime, worker;
    uint64_t start_ns, cpu_ns, park_wait_ns;
    bool cpu_sampled;               /* cpu_ns and park_wait_ns were read at the park */
};

struct park_row {
    int64_t process_id;
    uint32_t pid, tid;
    uint16_t runtime, worker;
    uint64_t start_ns, end_ns, cpu_ns, park_wait_ns, wait_ns;
    bool finished, cpu_sampled, wait_sampled;
};

struct cur {
    sqlite3_vtab_cursor base;
    struct vt *vt;
    bool eof;
    /* filter */
    struct q_filter f;
    bool rt_set;
    char rt_name[D9_NAME_MAX + 1];
    uint32_t sample_tid;            /* cpu_samples: the sampled thread, 0 = any */
    uint64_t bucket_width;          /* *_stats: bucket_width_ns = this (merged rows); 0 = none */
    void *rollup_merge;             /* sql_rollup.c's merged rows while it fills */
    /* listing rows */
    struct mval *rows;              /* ncols values per row: the columns, then the key */
    size_t ncols, nrows, irow;
    /* stacks: stack indices to list, and the depth in the current one */
    size_t *sidx;
    size_t nsidx, isidx;
    uint16_t depth;
    /* scan */
    struct q_scan_it *it;
    struct q_scan_stats st;
    const struct q_rec_src *src;    /* the scan's (q_scan_step), valid with rec */
    const struct d9_rec_hdr *rec;
    size_t len;
    struct q_decoded *dec;
    bool decoded;
    char *json;
    size_t jsonlen;
    /* pairing */
    int phase;                      /* 1 window, 2 extension (ends only), 3 unfinished, 4 done */
    uint64_t win_to, ext_from, ext_len, tmax;
    struct q_pair *polls;
    struct q_poll poll;
    bool poll_unfinished;
    enum q_open_why poll_why;       /* when poll_unfinished */
    size_t open_it;
    struct park_slot *parks;
    size_t nparks, capparks, parks_open;
    struct park_row park;
    /* custom: the schema matched last (per segment metadata) */
    const void *last_meta;
    uint32_t last_schema;
    bool last_match;
    char text[Q_LOC_TEXT_MAX + 64];
    /* polls: location texts by loc id (direct-mapped), so a GROUP BY
     * location does not format the same name for every poll */
    struct loc_cache {
        int64_t process_id;
        uint32_t loc;
        char *text;
    } locs[SQL_LOC_CACHE];
    /* polls served grouped: the rows, their threads, caches of bucket and
     * thread by key (direct-mapped, index + 1; 0 = empty) */
    struct sql_group *grp;
    bool grp_serving;               /* the scan is over: rows come from grp */
    struct grp_thr *gthr;
    size_t ngthr, capgthr;
    struct grp_loc {
        int64_t process_id;
        uint32_t loc;
        int bucket;                 /* + 1 */
    } gloc[SQL_LOC_CACHE];
    uint32_t gthr_cache[SQL_THR_CACHE];
};

/* a poll held for grouped serving: 40 bytes, the thread in a side table */
struct grp_row {
    uint32_t thr;                   /* index in cur.gthr, | GRP_UNFINISHED */
    uint32_t loc;
    uint64_t task;
    uint16_t runtime, worker;
    uint32_t why;                   /* enum q_open_why, when unfinished */
    uint64_t start_ns, end_ns;
};
#define GRP_UNFINISHED 0x80000000u
_Static_assert(sizeof(struct grp_row) == 40, "grouped poll rows stay small");

struct grp_thr {
    int64_t process_id;
    uint32_t pid, tid, ring, generation;
};


#endif /* D9_COL_SQL_INT_H */
