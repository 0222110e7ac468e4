/*
 * test_agent.c — the agent core on explicit instances (agent/agent.c,
 * agent/emit.c): region layout, clock calibration, metadata publication
 * (runtimes, locations, schemas decoded back with shm_meta_next), ring
 * claims from many threads, release and reuse, exact drop accounting, the
 * custom event encoding and the fork protocol. Every instance lives in a
 * fresh temp dir; nothing touches /dev/shm.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "agent/agent.h"
#include "agent/emit.h"
#include "shm/clock.h"
#include "shm/meta.h"
#include "shm/record.h"
#include "tests/unit/pagemap.h"

struct fx {
    char dir[64];
    struct ag_config cfg;
    struct ag_agent a;
    uint8_t out[1 << 16];
};

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/d9-test-agent.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    ag_env_defaults(&f->cfg, 1000, NULL, "unit");
    snprintf(f->cfg.shm_dir, sizeof f->cfg.shm_dir, "%s", f->dir);
    f->cfg.ring_data_size = D9_RING_DATA_MIN;
    f->cfg.max_threads = 8;
    f->cfg.housekeeping = 0;
    f->cfg.control = 0;
    f->cfg.clock_source = D9_CLOCK_MONOTONIC;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    ag_agent_destroy(&f->a);
    rm_dir(f->dir);
    free(f);
    return 0;
}

static void start(struct fx *f)
{
    assert_int_equal(ag_agent_start(&f->a, &f->cfg), 0);
}

static struct d9_ring_hdr *ring(struct fx *f, uint32_t idx)
{
    struct d9_region_hdr *h = f->a.region.hdr;
    return (struct d9_ring_hdr *)(f->a.region.base + h->rings_offset +
                                  (uint64_t)idx * h->ring_stride);
}

/* Copy out the committed records of ring idx (the collector's view). */
static long read_ring(struct fx *f, uint32_t idx, uint64_t *new_tail)
{
    struct shm_ring_snapshot s;
    shm_ring_snapshot(ring(f, idx), &s);
    return shm_ring_read((uint8_t *)ring(f, idx) + D9_RING_HDR_SIZE,
                         f->a.region.hdr->ring_data_size, &s, f->out, sizeof f->out, new_tail,
                         NULL);
}

static size_t meta_entries(struct fx *f, struct shm_meta_entry *e, size_t max, uint16_t kind)
{
    struct d9_region_hdr *h = f->a.region.hdr;
    uint32_t len = atomic_load(&h->meta_head);
    const uint8_t *buf = f->a.region.base + h->meta_offset;
    size_t off = 0, n = 0;
    struct shm_meta_entry tmp;
    int rc;
    while ((rc = shm_meta_next(buf, len, &off, &tmp)) == 1)
        if (tmp.kind == kind && n < max)
            e[n++] = tmp;
    assert_int_equal(rc, 0);    /* the whole log decodes */
    return n;
}

/* ---- region ------------------------------------------------------------------ */

static void test_start_creates_region_in_configured_dir(void **state)
{
    struct fx *f = *state;
    start(f);
    const char *path = ag_agent_region_path(&f->a);
    assert_non_null(path);
    assert_memory_equal(path, f->dir, strlen(f->dir));
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    struct d9_region_hdr *h = f->a.region.hdr;
    assert_int_equal(atomic_load(&h->state), D9_REGION_READY);
    assert_int_equal(h->pid, (uint32_t)getpid());
    assert_int_equal(h->ring_count, 8);
    assert_int_equal(h->ring_data_size, D9_RING_DATA_MIN);
    assert_int_equal(h->clock_source, D9_CLOCK_MONOTONIC);
}

static void test_region_header_names_comm_and_exe(void **state)
{
    struct fx *f = *state;
    start(f);
    struct d9_region_hdr *h = f->a.region.hdr;
    char comm[17] = { 0 }, exe[257] = { 0 };
    memcpy(comm, h->comm, 16);
    memcpy(exe, h->exe, 256);
    assert_string_equal(comm, "test_agent");
    assert_non_null(strstr(exe, "/test_agent"));
}

static void test_bad_shm_dir_fails_start_without_crashing(void **state)
{
    struct fx *f = *state;
    snprintf(f->cfg.shm_dir, sizeof f->cfg.shm_dir, "%s/missing", f->dir);
    assert_int_equal(ag_agent_start(&f->a, &f->cfg), -ENOENT);
    assert_int_equal(atomic_load(&f->a.live), 0);
    assert_null(ag_agent_region_path(&f->a));
    struct ag_thread t = { .ring = -1 };
    assert_int_equal(ag_agent_thread_attach(&f->a, &t), -ENOTCONN);
}

static void test_tsc_region_writes_calibration_pair_zero_at_start(void **state)
{
    struct fx *f = *state;
    f->cfg.clock_source = D9_CLOCK_TSC;
    start(f);
    struct d9_region_hdr *h = f->a.region.hdr;
    assert_int_equal(h->clock_source, D9_CLOCK_TSC);
    assert_int_equal(atomic_load(&h->cal_seq), 2);
    assert_true(h->cal_tsc0 != 0);
    assert_true(h->cal_ns0 != 0);
    assert_true(h->cal_tsc1 == 0);      /* pair 1 comes from the housekeeping thread */
}

static void test_tick_refreshes_pair_one_under_seqlock_and_heartbeat(void **state)
{
    struct fx *f = *state;
    f->cfg.clock_source = D9_CLOCK_TSC;
    start(f);
    struct d9_region_hdr *h = f->a.region.hdr;
    uint64_t hb0 = atomic_load(&h->heartbeat_ns);
    uint32_t seq0 = atomic_load(&h->cal_seq);
    usleep(2000);
    ag_agent_tick(&f->a);
    assert_int_equal(atomic_load(&h->cal_seq), seq0 + 2);     /* even: not mid-write */
    assert_true(h->cal_tsc1 > h->cal_tsc0);
    assert_true(h->cal_ns1 > h->cal_ns0);
    assert_true(atomic_load(&h->heartbeat_ns) > hb0);
    struct shm_clock_cal cal;
    assert_int_equal(shm_clock_cal_from_pairs(&cal, h->cal_tsc0, h->cal_ns0, h->cal_tsc1,
                                              h->cal_ns1), 0);
}

static void test_housekeeping_thread_writes_pair_one_by_itself(void **state)
{
    struct fx *f = *state;
    f->cfg.clock_source = D9_CLOCK_TSC;
    f->cfg.housekeeping = 1;
    start(f);
    struct d9_region_hdr *h = f->a.region.hdr;
    /* wait for the condition, not for a time: bounded only to never hang */
    for (int i = 0; i < 5000 && __atomic_load_n(&h->cal_tsc1, __ATOMIC_ACQUIRE) == 0; i++)
        usleep(1000);
    assert_true(__atomic_load_n(&h->cal_tsc1, __ATOMIC_ACQUIRE) > h->cal_tsc0);
    ag_agent_stop(&f->a);
    assert_int_equal(atomic_load(&h->cal_seq) % 2, 0);
}

static void test_stop_marks_region_closed_and_is_idempotent(void **state)
{
    struct fx *f = *state;
    f->cfg.housekeeping = 1;
    start(f);
    ag_agent_stop(&f->a);
    assert_int_equal(atomic_load(&f->a.region.hdr->state), D9_REGION_CLOSED);
    assert_int_equal(atomic_load(&f->a.live), 0);
    ag_agent_stop(&f->a);
    assert_int_equal(atomic_load(&f->a.region.hdr->state), D9_REGION_CLOSED);
}

static void test_stopped_agent_refuses_claims_and_registrations(void **state)
{
    struct fx *f = *state;
    start(f);
    ag_agent_stop(&f->a);
    struct ag_thread t = { .ring = -1 };
    assert_int_equal(ag_agent_thread_attach(&f->a, &t), -ENOTCONN);
    uint16_t id;
    assert_int_equal(ag_agent_runtime_register(&f->a, "late", &id), -ENOTCONN);
    assert_int_equal(id, 0);
    assert_int_equal(ag_agent_loc_register(&f->a, "f.c", 1, "fn"), 0);
}

/* ---- metadata ---------------------------------------------------------------- */

static void test_default_runtime_is_id_one_and_published(void **state)
{
    struct fx *f = *state;
    start(f);
    assert_int_equal(f->a.default_runtime, 1);
    struct shm_meta_entry e[4];
    assert_int_equal(meta_entries(f, e, 4, D9_META_RUNTIME), 1);
    assert_int_equal(e[0].id, 1);
    assert_string_equal(e[0].name, "unit");
}

static void test_runtime_same_name_same_id_other_name_new_id(void **state)
{
    struct fx *f = *state;
    start(f);
    uint16_t a1, a2, b;
    assert_int_equal(ag_agent_runtime_register(&f->a, "http", &a1), 0);
    assert_int_equal(ag_agent_runtime_register(&f->a, "db", &b), 0);
    assert_int_equal(ag_agent_runtime_register(&f->a, "http", &a2), 0);
    assert_int_equal(a1, a2);
    assert_int_not_equal(a1, b);
    assert_int_not_equal(a1, 1);
    struct shm_meta_entry e[8];
    assert_int_equal(meta_entries(f, e, 8, D9_META_RUNTIME), 3);  /* unit, http, db */
    assert_int_equal(e[1].id, a1);
    assert_string_equal(e[1].name, "http");
    assert_int_equal(e[2].id, b);
    assert_string_equal(e[2].name, "db");
}

static void test_runtime_bad_names_are_einval(void **state)
{
    struct fx *f = *state;
    start(f);
    uint16_t id = 9;
    char longname[D9_NAME_MAX + 2];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    assert_int_equal(ag_agent_runtime_register(&f->a, NULL, &id), -EINVAL);
    assert_int_equal(ag_agent_runtime_register(&f->a, "", &id), -EINVAL);
    assert_int_equal(ag_agent_runtime_register(&f->a, longname, &id), -EINVAL);
    assert_int_equal(ag_agent_runtime_register(&f->a, "a\tb", &id), -EINVAL);
    assert_int_equal(id, 0);
}

static void test_runtime_table_full_is_enospc(void **state)
{
    struct fx *f = *state;
    start(f);
    char name[32];
    uint16_t id;
    for (unsigned i = 1; i < AG_RUNTIME_MAX; i++) {
        snprintf(name, sizeof name, "rt%u", i);
        assert_int_equal(ag_agent_runtime_register(&f->a, name, &id), 0);
        assert_int_equal(id, i + 1);
    }
    assert_int_equal(ag_agent_runtime_register(&f->a, "one-too-many", &id), -ENOSPC);
    /* old names still resolve */
    assert_int_equal(ag_agent_runtime_register(&f->a, "rt7", &id), 0);
    assert_int_equal(id, 8);
}

static void test_location_dedupes_on_file_line_func(void **state)
{
    struct fx *f = *state;
    start(f);
    char file_copy[] = "src/server.c";      /* same content, other pointer */
    uint32_t a = ag_agent_loc_register(&f->a, "src/server.c", 10, "handle");
    uint32_t b = ag_agent_loc_register(&f->a, file_copy, 10, "handle");
    uint32_t c = ag_agent_loc_register(&f->a, "src/server.c", 11, "handle");
    uint32_t d = ag_agent_loc_register(&f->a, "src/server.c", 10, "other");
    assert_int_not_equal(a, 0);
    assert_int_equal(a, b);
    assert_int_not_equal(a, c);
    assert_int_not_equal(a, d);
    assert_int_not_equal(c, d);
    struct shm_meta_entry e[8];
    assert_int_equal(meta_entries(f, e, 8, D9_META_LOCATION), 3);
    assert_int_equal(e[0].id, a);
    assert_string_equal(e[0].name, "src/server.c");
    assert_string_equal(e[0].func, "handle");
    assert_int_equal(e[0].line, 10);
}

static void test_many_locations_keep_their_ids_across_table_growth(void **state)
{
    struct fx *f = *state;
    start(f);
    enum { N = 2000 };
    static uint32_t ids[N];
    for (int i = 0; i < N; i++) {
        ids[i] = ag_agent_loc_register(&f->a, "many.c", i, "fn");
        assert_int_equal(ids[i], (uint32_t)i + 1);
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(ag_agent_loc_register(&f->a, "many.c", i, "fn"), ids[i]);
    static struct shm_meta_entry e[N];
    assert_int_equal(meta_entries(f, e, N, D9_META_LOCATION), N);
}

static void test_location_without_file_is_unknown(void **state)
{
    struct fx *f = *state;
    start(f);
    assert_int_equal(ag_agent_loc_register(&f->a, NULL, 1, "f"), 0);
    assert_int_equal(ag_agent_loc_register(&f->a, "", 1, "f"), 0);
    assert_int_equal(ag_agent_loc_register(&f->a, "x.c", -1, "f"), 0);
    assert_int_not_equal(ag_agent_loc_register(&f->a, "x.c", 1, NULL), 0);
}

static void test_full_metadata_log_counts_lost_and_ids_stay_usable(void **state)
{
    struct fx *f = *state;
    f->cfg.meta_size = 512;
    start(f);
    uint32_t last = 0;
    for (int i = 0; i < 100; i++)
        last = ag_agent_loc_register(&f->a, "a-rather-long-file-name-for-the-log.c", i, "fn");
    assert_int_equal(last, 100);
    assert_true(atomic_load(&f->a.region.hdr->meta_lost) > 0);
    assert_true(atomic_load(&f->a.region.hdr->meta_head) <= 512);
    struct shm_meta_entry e[100];
    meta_entries(f, e, 100, D9_META_LOCATION);      /* what is there still decodes */
}

D9_SCHEMA(sch_http, "http_request", D9_FIELD_STR("path"), D9_FIELD_U64("status"),
          D9_FIELD_F64("ms"), D9_FIELD_BOOL("cached"), D9_FIELD_I64("delta"));

static void test_schema_published_once_with_names_and_types(void **state)
{
    struct fx *f = *state;
    start(f);
    sch_http.id = 0;
    uint32_t id = ag_agent_schema_id(&f->a, &sch_http);
    assert_int_equal(id, 1);
    assert_int_equal(ag_agent_schema_id(&f->a, &sch_http), 1);
    assert_int_equal(sch_http.id, 1);
    struct shm_meta_entry e[4];
    assert_int_equal(meta_entries(f, e, 4, D9_META_SCHEMA), 1);
    assert_int_equal(e[0].id, 1);
    assert_string_equal(e[0].name, "http_request");
    assert_int_equal(e[0].nfields, 5);
    const char *names[] = { "path", "status", "ms", "cached", "delta" };
    const uint8_t types[] = { D9_FT_STR, D9_FT_U64, D9_FT_F64, D9_FT_BOOL, D9_FT_I64 };
    for (int i = 0; i < 5; i++) {
        assert_string_equal(e[0].fields[i].name, names[i]);
        assert_int_equal(e[0].fields[i].type, types[i]);
    }
}

D9_SCHEMA(sch_race, "race", D9_FIELD_U64("n"));

static void *schema_racer(void *arg)
{
    struct fx *f = arg;
    return (void *)(uintptr_t)ag_agent_schema_id(&f->a, &sch_race);
}

static void test_schema_publication_is_thread_safe(void **state)
{
    struct fx *f = *state;
    start(f);
    sch_race.id = 0;
    enum { N = 8 };
    pthread_t th[N];
    for (int i = 0; i < N; i++)
        pthread_create(&th[i], NULL, schema_racer, f);
    uintptr_t first = 0;
    for (int i = 0; i < N; i++) {
        void *r;
        pthread_join(th[i], &r);
        if (!first)
            first = (uintptr_t)r;
        assert_int_equal((uintptr_t)r, first);
    }
    struct shm_meta_entry e[N];
    assert_int_equal(meta_entries(f, e, N, D9_META_SCHEMA), 1);
}

static const d9_field bad_type_fields[] = { { "x", (enum d9_type)9 } };
static const d9_field nameless_fields[] = { { NULL, D9_T_U64 } };

static void test_invalid_schemas_are_never_published(void **state)
{
    struct fx *f = *state;
    start(f);
    d9_schema bad_type = { "bad", bad_type_fields, 1, 0 };
    d9_schema nameless_field = { "bad2", nameless_fields, 1, 0 };
    d9_schema no_name = { "", NULL, 0, 0 };
    d9_field many[D9_SCHEMA_MAX_FIELDS + 1];
    for (unsigned i = 0; i < D9_SCHEMA_MAX_FIELDS + 1; i++)
        many[i] = (d9_field){ "f", D9_T_U64 };
    d9_schema too_many = { "many", many, D9_SCHEMA_MAX_FIELDS + 1, 0 };
    assert_int_equal(ag_agent_schema_id(&f->a, &bad_type), AG_SCHEMA_INVALID);
    assert_int_equal(ag_agent_schema_id(&f->a, &nameless_field), AG_SCHEMA_INVALID);
    assert_int_equal(ag_agent_schema_id(&f->a, &no_name), AG_SCHEMA_INVALID);
    assert_int_equal(ag_agent_schema_id(&f->a, &too_many), AG_SCHEMA_INVALID);
    struct shm_meta_entry e[4];
    assert_int_equal(meta_entries(f, e, 4, D9_META_SCHEMA), 0);
}

/* ---- threads and rings ------------------------------------------------------ */

struct claim_ctx {
    struct fx *f;
    pthread_barrier_t *hold;    /* all threads hold their rings until every one tried */
    int rc;
    int ring;
};

static void *claimer(void *arg)
{
    struct claim_ctx *c = arg;
    struct ag_thread t = { .ring = -1 };
    c->rc = ag_agent_thread_attach(&c->f->a, &t);
    c->ring = t.ring;
    if (c->rc == 0)
        ag_emit_poll_start(&t.p, D9_CLOCK_MONOTONIC, 1, 0, 42, 0);
    pthread_barrier_wait(c->hold);
    ag_agent_thread_detach(&c->f->a, &t);
    return NULL;
}

static int run_claimers(struct fx *f, int n, struct claim_ctx *c)
{
    pthread_t th[64];
    pthread_barrier_t b;
    pthread_barrier_init(&b, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        c[i] = (struct claim_ctx){ .f = f, .hold = &b, .rc = 1, .ring = -1 };
        pthread_create(&th[i], NULL, claimer, &c[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&b);
    int traced = 0;
    for (int i = 0; i < n; i++)
        traced += c[i].rc == 0;
    return traced;
}

static void test_concurrent_threads_get_distinct_rings(void **state)
{
    struct fx *f = *state;
    start(f);
    struct claim_ctx c[8];
    assert_int_equal(run_claimers(f, 8, c), 8);
    int seen[8] = { 0 };
    for (int i = 0; i < 8; i++) {
        assert_in_range(c[i].ring, 0, 7);
        assert_int_equal(seen[c[i].ring]++, 0);
    }
    assert_int_equal(atomic_load(&f->a.region.hdr->threads_untraced), 0);
}

static void test_threads_beyond_max_are_untraced_and_counted(void **state)
{
    struct fx *f = *state;
    f->cfg.max_threads = 3;
    start(f);
    struct claim_ctx c[10];
    assert_int_equal(run_claimers(f, 10, c), 3);
    for (int i = 0; i < 10; i++)
        assert_true(c[i].rc == 0 || c[i].rc == -ENOSPC);
    assert_int_equal(atomic_load(&f->a.region.hdr->threads_untraced), 7);
    d9_stats st;
    ag_agent_stats(&f->a, &st);
    assert_int_equal(st.threads_untraced, 7);
    assert_int_equal(st.rings_in_use, 0);           /* all exited */
}

/* d9_stats does not touch the rings no thread claimed: starting and
 * observing a process costs the same whatever DIAL9_MAX_THREADS is. */
static void test_stats_do_not_touch_rings_no_thread_claimed(void **state)
{
    struct fx *f = *state;
    f->cfg.max_threads = 512;
    f->cfg.ring_data_size = 64u * 1024u;    /* one ring header per page */
    start(f);
    struct ag_thread t = { .ring = -1 };
    assert_int_equal(ag_agent_thread_attach(&f->a, &t), 0);
    d9_stats st;
    ag_agent_stats(&f->a, &st);
    assert_int_equal(st.rings_in_use, 1);
    long untouched = 0;     /* ring 1's header shares the last page ring 0's claim mapped */
    for (uint32_t i = 2; i < 512; i++) {
        long m = pages_not_present(ring(f, i), 1);
        assert_true(m >= 0);
        untouched += m;
    }
    assert_int_equal(untouched, 510);
    ag_agent_thread_detach(&f->a, &t);
}

static void test_claimed_ring_records_tid_and_thread_name(void **state)
{
    struct fx *f = *state;
    start(f);
    pthread_setname_np(pthread_self(), "claim-me");
    struct ag_thread t = { .ring = -1 };
    assert_int_equal(ag_agent_thread_attach(&f->a, &t), 0);
    struct shm_ring_snapshot s;
    shm_ring_snapshot(ring(f, (uint32_t)t.ring), &s);
    assert_int_equal(s.state, D9_RING_OWNED);
    assert_int_equal(s.tid, (uint32_t)gettid());
    assert_string_equal(s.thread_name, "claim-me");
    d9_stats st;
    ag_agent_stats(&f->a, &st);
    assert_int_equal(st.rings_in_use, 1);
    ag_agent_thread_detach(&f->a, &t);
    shm_ring_snapshot(ring(f, 0), &s);
    assert_int_equal(s.state, D9_RING_RELEASED);
    assert_int_equal(ag_agent_thread_attach(&f->a, &t), -ESRCH);   /* exited: never again */
    pthread_setname_np(pthread_self(), "test_agent");
}

/* A claim maps its ring's pages at once (MADV_POPULATE_WRITE), so the
 * thread takes no page fault per 4 KiB on its first lap: every ring, not
 * just the page-aligned first one (ring k starts k x 256 bytes past a page
 * boundary). */
static void test_claimed_rings_are_mapped_before_the_first_record(void **state)
{
    struct fx *f = *state;
    f->cfg.ring_data_size = 256u * 1024u;
    f->cfg.max_threads = 4;
    start(f);
    struct ag_thread t[3];
    for (int i = 0; i < 3; i++) {
        t[i] = (struct ag_thread){ .ring = -1 };
        assert_int_equal(ag_agent_thread_attach(&f->a, &t[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        long missing = pages_not_present(ring(f, (uint32_t)t[i].ring),
                                         f->a.region.hdr->ring_stride);
        if (missing < 0)
            skip();     /* no /proc/self/pagemap here */
        assert_int_equal(missing, 0);
    }
    for (int i = 0; i < 3; i++)
        ag_agent_thread_detach(&f->a, &t[i]);
}

static void test_released_rings_are_reused_once_drained(void **state)
{
    struct fx *f = *state;
    f->cfg.max_threads = 2;
    start(f);
    struct claim_ctx c[2];
    assert_int_equal(run_claimers(f, 2, c), 2);      /* both recorded one event and exited */
    struct ag_thread t = { .ring = -1 };
    assert_int_equal(ag_agent_thread_attach(&f->a, &t), -ENOSPC);   /* released, not drained */
    for (uint32_t i = 0; i < 2; i++) {                       /* the collector drains */
        uint64_t nt;
        assert_true(read_ring(f, i, &nt) > 0);
        shm_ring_consume(ring(f, i), nt);
    }
    struct ag_thread t2 = { .ring = -1 };
    assert_int_equal(ag_agent_thread_attach(&f->a, &t2), 0);
    assert_in_range(t2.ring, 0, 1);
    assert_int_equal(ring(f, (uint32_t)t2.ring)->generation, 2);
    ag_agent_thread_detach(&f->a, &t2);
    ag_agent_thread_detach(&f->a, &t);
}

static void test_untraced_thread_retries_only_rarely(void **state)
{
    struct fx *f = *state;
    f->cfg.max_threads = 1;
    start(f);
    struct ag_thread owner = { .ring = -1 }, late = { .ring = -1 };
    assert_int_equal(ag_agent_thread_attach(&f->a, &owner), 0);
    assert_int_equal(ag_agent_thread_attach(&f->a, &late), -ENOSPC);
    assert_int_equal(atomic_load(&f->a.region.hdr->threads_untraced), 1);
    ag_agent_thread_detach(&f->a, &owner);                /* empty ring: reusable at once */
    for (unsigned i = 1; i < AG_CLAIM_RETRY_EVENTS; i++)
        if (ag_agent_thread_attach(&f->a, &late) != -ENOSPC)
            fail_msg("retried the claim at call %u", i);
    assert_int_equal(ag_agent_thread_attach(&f->a, &late), 0);
    assert_int_equal(atomic_load(&f->a.region.hdr->threads_untraced), 0);
    ag_agent_thread_detach(&f->a, &late);
}

static void test_failed_retry_does_not_count_the_thread_twice(void **state)
{
    struct fx *f = *state;
    f->cfg.max_threads = 1;
    start(f);
    struct ag_thread owner = { .ring = -1 }, late = { .ring = -1 };
    assert_int_equal(ag_agent_thread_attach(&f->a, &owner), 0);
    for (unsigned i = 0; i < 3 * AG_CLAIM_RETRY_EVENTS; i++)
        ag_agent_thread_attach(&f->a, &late);
    assert_int_equal(atomic_load(&f->a.region.hdr->threads_untraced), 1);
    ag_agent_thread_detach(&f->a, &owner);
}

/* ---- drops -------------------------------------------------------------------- */

static void test_full_ring_drop_count_is_exact_and_matches_seq_gaps(void **state)
{
    struct fx *f = *state;
    start(f);
    struct ag_thread t = { .ring = -1 };
    assert_int_equal(ag_agent_thread_attach(&f->a, &t), 0);
    enum { K = 1000 };
    for (uint64_t i = 0; i < K; i++)
        ag_emit_poll_start(&t.p, D9_CLOCK_MONOTONIC, 1, 2, i, 3);
    uint64_t lost = atomic_load(&t.p.hdr->lost), nt;
    long got = read_ring(f, (uint32_t)t.ring, &nt);
    assert_true(got > 0);
    uint64_t committed = (uint64_t)got / sizeof(struct d9_rec_poll_start);
    assert_int_equal(committed + lost, K);
    assert_int_equal(committed, D9_RING_DATA_MIN / sizeof(struct d9_rec_poll_start));
    for (uint64_t i = 0; i < committed; i++) {
        struct d9_rec_poll_start r;
        memcpy(&r, f->out + i * sizeof r, sizeof r);
        assert_int_equal(r.h.seq, i);
        assert_int_equal(r.task, i);
    }
    shm_ring_consume(t.p.hdr, nt);
    /* after the drain the next record carries seq K: the gap is the drop */
    ag_emit_poll_start(&t.p, D9_CLOCK_MONOTONIC, 1, 2, 777, 3);
    got = read_ring(f, (uint32_t)t.ring, &nt);
    assert_int_equal(got, sizeof(struct d9_rec_poll_start));
    struct d9_rec_poll_start r;
    memcpy(&r, f->out, sizeof r);
    assert_int_equal(r.h.seq, K);
    assert_int_equal(r.h.seq - committed, lost);
    d9_stats st;
    ag_agent_stats(&f->a, &st);
    assert_int_equal(st.lost, lost);
    ag_agent_thread_detach(&f->a, &t);
}

/* ---- built-in records ---------------------------------------------------------- */

static void test_builtin_records_round_trip_through_the_ring(void **state)
{
    struct fx *f = *state;
    f->cfg.ring_data_size = 64 * 1024;
    start(f);
    struct ag_thread t = { .ring = -1 };
    assert_int_equal(ag_agent_thread_attach(&f->a, &t), 0);
    ag_emit_poll_start(&t.p, D9_CLOCK_MONOTONIC, 3, 4, 0x1122334455667788ull, 9);
    ag_emit_poll_end(&t.p, D9_CLOCK_MONOTONIC, 3, 4, 0x1122334455667788ull);
    ag_emit_wake(&t.p, D9_CLOCK_MONOTONIC, 3, 5, 6, D9_WORKER_NONE);
    ag_emit_worker(&t.p, D9_CLOCK_MONOTONIC, D9_REC_WORKER_PARK, 3, 4, 0, 1000, 20);
    ag_emit_worker(&t.p, D9_CLOCK_MONOTONIC, D9_REC_WORKER_UNPARK, 3, 4, D9_WORKER_UNSAMPLED,
                   2000, 30);
    ag_emit_task(&t.p, D9_CLOCK_MONOTONIC, D9_REC_TASK_SPAWN, 3, 77, 9);
    ag_emit_task(&t.p, D9_CLOCK_MONOTONIC, D9_REC_TASK_TERMINATE, 3, 77, 0);
    ag_emit_queue_depth(&t.p, D9_CLOCK_MONOTONIC, 3, D9_WORKER_NONE, UINT64_MAX - 1);
    uint64_t nt;
    long got = read_ring(f, (uint32_t)t.ring, &nt);
    assert_int_equal(got, 32 + 32 + 40 + 40 + 40 + 32 + 32 + 32);
    const uint16_t types[] = { D9_REC_POLL_START, D9_REC_POLL_END, D9_REC_WAKE,
                               D9_REC_WORKER_PARK, D9_REC_WORKER_UNPARK, D9_REC_TASK_SPAWN,
                               D9_REC_TASK_TERMINATE, D9_REC_QUEUE_DEPTH };
    long off = 0;
    uint64_t last_ts = 0;
    for (int i = 0; i < 8; i++) {
        struct d9_rec_hdr h;
        memcpy(&h, f->out + off, sizeof h);
        assert_int_equal(h.type, types[i]);
        assert_true(h.ts >= last_ts && h.ts > 0);  /* stamped at commit, in order */
        last_ts = h.ts;
        assert_int_equal(h.seq, i);
        assert_int_equal(shm_record_check(f->out + off, (size_t)(got - off)), h.len);
        if (h.type == D9_REC_WAKE) {
            struct d9_rec_wake w;
            memcpy(&w, f->out + off, sizeof w);
            assert_int_equal(w.waker, 5);
            assert_int_equal(w.wakee, 6);
            assert_int_equal(w.target_worker, D9_WORKER_NONE);
        } else if (h.type == D9_REC_WORKER_UNPARK) {
            struct d9_rec_worker w;
            memcpy(&w, f->out + off, sizeof w);
            assert_int_equal(w.flags, D9_WORKER_UNSAMPLED);
            assert_int_equal(w.cpu_ns, 2000);
            assert_int_equal(w.sched_wait_ns, 30);
        } else if (h.type == D9_REC_QUEUE_DEPTH) {
            struct d9_rec_queue_depth q;
            memcpy(&q, f->out + off, sizeof q);
            assert_int_equal(q.depth, UINT64_MAX - 1);     /* u64, no truncation */
            assert_int_equal(q.worker, D9_WORKER_NONE);
        } else if (h.type == D9_REC_POLL_START) {
            struct d9_rec_poll_start p;
            memcpy(&p, f->out + off, sizeof p);
            assert_int_equal(p.task, 0x1122334455667788ull);
            assert_int_equal(p.loc, 9);
            assert_int_equal(p.runtime, 3);
            assert_int_equal(p.worker, 4);
        }
        off += h.len;
    }
    ag_agent_thread_detach(&f->a, &t);
}

/* CPU time the kernel has accounted to this thread so far (schedstat field 1
 * is brought up to date at a switch: yield first). */
static void burn_cpu_ms(unsigned ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do {
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < (long)ms * 1000000L);
    sched_yield();
}

static void test_thread_sched_every_call_reads_schedstat_on_a_cached_fd(void **state)
{
    struct fx *f = *state;
    (void)f;
    struct ag_thread t = { .ring = -1 };
    uint64_t cpu1, cpu2, w1, w2;
    assert_int_equal(ag_agent_thread_sched(&t, 0, &cpu1, &w1), 0);
    assert_int_equal(w1, 0);                         /* first sample is the baseline */
    assert_int_equal(t.sched_state, AG_SCHED_OPEN);
    int fd = t.sched_fd;
    burn_cpu_ms(20);
    assert_int_equal(ag_agent_thread_sched(&t, 0, &cpu2, &w2), 0);
    assert_int_equal(t.sched_fd, fd);
    assert_true(cpu1 > 0);
    assert_true(cpu2 >= cpu1 + 15000000u);           /* the 20 ms burnt, give or take a tick */
    ag_agent_thread_forget(&t);
    assert_int_equal(t.sched_state, AG_SCHED_UNOPENED);
    assert_int_equal(fcntl(fd, F_GETFD), -1);        /* closed */
}

static void test_thread_sched_reads_at_most_once_per_interval(void **state)
{
    struct fx *f = *state;
    (void)f;
    struct ag_thread t = { .ring = -1 };
    uint64_t cpu, w;
    const uint32_t interval_us = 200000;             /* 200 ms: the calls below fit in it */
    assert_int_equal(ag_agent_thread_sched(&t, interval_us, &cpu, &w), 0);     /* first: sampled */
    assert_true(cpu > 0);
    uint64_t base = t.last_wait_ns;
    for (int i = 0; i < 100; i++) {
        cpu = w = 7;
        assert_int_equal(ag_agent_thread_sched(&t, interval_us, &cpu, &w), D9_WORKER_UNSAMPLED);
        assert_int_equal(cpu, 0);
        assert_int_equal(w, 0);
    }
    assert_int_equal(t.last_wait_ns, base);          /* nothing read in between */
    /* once the interval has passed the next call samples again, and its
     * wait delta covers everything since the previous sample */
    t.sched_next_ns = shm_mono_ns() - 1;
    t.last_wait_ns = base >= 5 ? base - 5 : 0;       /* pretend 5+ ns of wait happened since */
    assert_int_equal(ag_agent_thread_sched(&t, interval_us, &cpu, &w), 0);
    assert_true(cpu > 0);
    assert_true(w >= (base >= 5 ? 5u : base));
    assert_true(t.sched_next_ns > shm_mono_ns());
    ag_agent_thread_forget(&t);
}

/* ---- custom events ------------------------------------------------------------- */

static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static void test_custom_event_round_trip_with_long_string_cut(void **state)
{
    struct fx *f = *state;
    f->cfg.ring_data_size = 64 * 1024;
    start(f);
    sch_http.id = 0;
    uint32_t id = ag_agent_schema_id(&f->a, &sch_http);
    struct ag_thread t = { .ring = -1 };
    assert_int_equal(ag_agent_thread_attach(&f->a, &t), 0);
    char longpath[400];
    for (size_t i = 0; i < sizeof longpath - 1; i++)
        longpath[i] = (char)('a' + i % 26);
    longpath[sizeof longpath - 1] = 0;
    const d9_value v1[] = { D9_STR("/index"), D9_U64(200), D9_F64(1.5), D9_BOOL(7),
                            D9_I64(-3) };
    const d9_value v2[] = { D9_STR(longpath), D9_U64(404), D9_F64(-0.25), D9_BOOL(0),
                            D9_I64(INT64_MIN) };
    assert_int_equal(ag_emit_custom(&t.p, D9_CLOCK_MONOTONIC, id, D9_TASK_NONE, &sch_http, v1, 5), 0);
    assert_int_equal(ag_emit_custom(&t.p, D9_CLOCK_MONOTONIC, id, D9_TASK_NONE, &sch_http, v2, 5), 0);
    uint64_t nt;
    long got = read_ring(f, (uint32_t)t.ring, &nt);
    /* first: 32 + (4+6 -> 16) + 8*4; second: 32 + (4+255 -> 264) + 8*4 */
    assert_int_equal(got, (32 + 16 + 32) + (32 + 264 + 32));

    const uint8_t *r = f->out;
    struct d9_rec_custom c;
    memcpy(&c, r, sizeof c);
    assert_int_equal(c.h.type, D9_REC_CUSTOM);
    assert_int_equal(c.h.len, 80);
    assert_int_equal(c.schema, id);
    assert_int_equal(c.payload_len, 48);
    assert_int_equal(shm_record_check(r, (size_t)got), 80);
    const uint8_t *p = r + sizeof c;
    assert_int_equal(rd32(p), 6);
    assert_memory_equal(p + 4, "/index", 6);
    assert_int_equal(p[10] | p[11] | p[12] | p[13] | p[14] | p[15], 0);   /* zero pad */
    p += 16;
    assert_int_equal(rd64(p), 200);
    double d;
    memcpy(&d, p + 8, 8);
    assert_true(d == 1.5);
    assert_int_equal(rd64(p + 16), 1);              /* BOOL is 0/1 */
    assert_int_equal((int64_t)rd64(p + 24), -3);

    r += 80;
    memcpy(&c, r, sizeof c);
    assert_int_equal(c.h.len, 328);
    assert_int_equal(c.payload_len, 296);
    p = r + sizeof c;
    assert_int_equal(rd32(p), D9_STR_MAX);
    assert_memory_equal(p + 4, longpath, D9_STR_MAX);
    assert_int_equal(p[4 + D9_STR_MAX], 0);
    p += 264;
    assert_int_equal(rd64(p), 404);
    memcpy(&d, p + 8, 8);
    assert_true(d == -0.25);
    assert_int_equal(rd64(p + 16), 0);
    assert_int_equal((int64_t)rd64(p + 24), INT64_MIN);
    ag_agent_thread_detach(&f->a, &t);
}

static void test_custom_null_string_is_empty(void **state)
{
    struct fx *f = *state;
    start(f);
    D9_SCHEMA(s, "s", D9_FIELD_STR("x"));
    struct ag_thread t = { .ring = -1 };
    assert_int_equal(ag_agent_thread_attach(&f->a, &t), 0);
    const d9_value v[] = { D9_STR(NULL) };
    assert_int_equal(ag_emit_custom(&t.p, D9_CLOCK_MONOTONIC, 5, D9_TASK_NONE, &s, v, 1), 0);
    uint64_t nt;
    assert_int_equal(read_ring(f, (uint32_t)t.ring, &nt), 32 + 8);
    assert_int_equal(rd32(f->out + 32), 0);
    ag_agent_thread_detach(&f->a, &t);
}

/* String fields of every padding length over a dirty ring (a lap of old
 * bytes): the length, the bytes, then zeros up to the 8-byte boundary. */
static void test_custom_string_padding_is_zero_over_old_bytes(void **state)
{
    struct fx *f = *state;
    start(f);
    D9_SCHEMA(s, "pad", D9_FIELD_STR("x"), D9_FIELD_BOOL("b"));
    struct ag_thread t = { .ring = -1 };
    assert_int_equal(ag_agent_thread_attach(&f->a, &t), 0);
    memset(t.p.data, 0xa5, t.p.size);       /* what a previous lap left */
    const char *str = "abcdefghijklmnopq";  /* 17 bytes: lengths 0..17 cover every pad */
    size_t expect = 0;
    for (uint32_t l = 0; l <= 17; l++) {
        char buf[18];
        memcpy(buf, str, l);
        buf[l] = 0;
        const d9_value v[] = { D9_STR(buf), D9_BOOL(l) };
        assert_int_equal(ag_emit_custom(&t.p, D9_CLOCK_MONOTONIC, 9, D9_TASK_NONE, &s, v, 2), 0);
        expect += 32 + ((4 + l + 7) & ~7u) + 8;
    }
    uint64_t nt;
    assert_int_equal(read_ring(f, (uint32_t)t.ring, &nt), (long)expect);
    const uint8_t *r = f->out;
    for (uint32_t l = 0; l <= 17; l++) {
        uint32_t field = (4 + l + 7) & ~7u;
        assert_int_equal(shm_record_check(r, 32 + field + 8), (long)(32 + field + 8));
        const uint8_t *p = r + 32;
        assert_int_equal(rd32(p), l);
        assert_memory_equal(p + 4, str, l);
        for (uint32_t k = 4 + l; k < field; k++)
            assert_int_equal(p[k], 0);
        assert_int_equal(rd64(p + field), l ? 1 : 0);   /* BOOL is 0/1 */
        r += 32 + field + 8;
    }
    ag_agent_thread_detach(&f->a, &t);
}

static void test_custom_mismatch_is_dropped_and_counted(void **state)
{
    struct fx *f = *state;
    start(f);
    sch_http.id = 0;
    uint32_t id = ag_agent_schema_id(&f->a, &sch_http);
    struct ag_thread t = { .ring = -1 };
    assert_int_equal(ag_agent_thread_attach(&f->a, &t), 0);
    const d9_value wrong_type[] = { D9_U64(1), D9_U64(200), D9_F64(1.5), D9_BOOL(1),
                                    D9_I64(0) };
    const d9_value too_few[] = { D9_STR("/"), D9_U64(200) };
    assert_int_equal(ag_emit_custom(&t.p, D9_CLOCK_MONOTONIC, id, D9_TASK_NONE, &sch_http, wrong_type, 5), -EINVAL);
    assert_int_equal(ag_emit_custom(&t.p, D9_CLOCK_MONOTONIC, id, D9_TASK_NONE, &sch_http, too_few, 2), -EINVAL);
    assert_int_equal(atomic_load(&t.p.hdr->lost), 2);
    ag_emit_poll_end(&t.p, D9_CLOCK_MONOTONIC, 1, 1, 1);
    uint64_t nt;
    assert_int_equal(read_ring(f, (uint32_t)t.ring, &nt), sizeof(struct d9_rec_poll_end));
    struct d9_rec_hdr h;
    memcpy(&h, f->out, sizeof h);
    assert_int_equal(h.seq, 2);                     /* two drops, two seq gaps */
    ag_agent_thread_detach(&f->a, &t);
}

static void test_custom_record_over_max_size_is_dropped_and_counted(void **state)
{
    struct fx *f = *state;
    f->cfg.ring_data_size = 64 * 1024;
    start(f);
    d9_field fields[D9_SCHEMA_MAX_FIELDS];
    d9_value vals[D9_SCHEMA_MAX_FIELDS];
    char s[D9_STR_MAX + 1];
    memset(s, 'x', D9_STR_MAX);
    s[D9_STR_MAX] = 0;
    for (unsigned i = 0; i < D9_SCHEMA_MAX_FIELDS; i++) {
        fields[i] = (d9_field){ "s", D9_T_STR };
        vals[i] = D9_STR(s);
    }
    d9_schema big = { "big", fields, D9_SCHEMA_MAX_FIELDS, 0 };
    uint32_t len;
    assert_int_equal(ag_emit_custom_size(&big, vals, D9_SCHEMA_MAX_FIELDS, &len), -EMSGSIZE);
    struct ag_thread t = { .ring = -1 };
    assert_int_equal(ag_agent_thread_attach(&f->a, &t), 0);
    assert_int_equal(ag_emit_custom(&t.p, D9_CLOCK_MONOTONIC, 1, D9_TASK_NONE, &big, vals, D9_SCHEMA_MAX_FIELDS), -EMSGSIZE);
    assert_int_equal(atomic_load(&t.p.hdr->lost), 1);
    uint64_t nt;
    assert_int_equal(read_ring(f, (uint32_t)t.ring, &nt), 0);
    ag_agent_thread_detach(&f->a, &t);
}

/* ---- fork ------------------------------------------------------------------------ */

#define CHILD_CHECK(c) do { if (!(c)) { fprintf(stderr, "child: %s:%d: %s\n", \
        __FILE__, __LINE__, #c); _exit(1); } } while (0)

static void test_fork_child_gets_own_region_with_parent_ids(void **state)
{
    struct fx *f = *state;
    start(f);
    uint16_t http;
    assert_int_equal(ag_agent_runtime_register(&f->a, "http", &http), 0);
    uint32_t loc = ag_agent_loc_register(&f->a, "fork.c", 5, "main");
    struct ag_thread t = { .ring = -1 };
    assert_int_equal(ag_agent_thread_attach(&f->a, &t), 0);
    ag_emit_poll_start(&t.p, D9_CLOCK_MONOTONIC, http, 0, 1, loc);
    uint64_t parent_head = atomic_load(&t.p.hdr->head);
    char parent_path[256];
    snprintf(parent_path, sizeof parent_path, "%s", f->a.region.path);

    ag_agent_fork_prepare(&f->a);
    pid_t pid = fork();
    if (pid == 0) {
        ag_agent_fork_child(&f->a);
        ag_agent_thread_forget(&t);
        CHILD_CHECK(ag_agent_region_path(&f->a) == NULL);   /* lazily, on first use */
        struct ag_thread ct = { .ring = -1 };
        CHILD_CHECK(ag_agent_thread_attach(&f->a, &ct) == 0);
        CHILD_CHECK(f->a.region.hdr->pid == (uint32_t)getpid());
        CHILD_CHECK(strcmp(f->a.region.path, parent_path) != 0);
        for (int i = 0; i < 50; i++)
            ag_emit_poll_start(&ct.p, D9_CLOCK_MONOTONIC, http, 0, 1000 + (uint64_t)i, loc);
        uint16_t again;
        CHILD_CHECK(ag_agent_runtime_register(&f->a, "http", &again) == 0 && again == http);
        CHILD_CHECK(ag_agent_loc_register(&f->a, "fork.c", 5, "main") == loc);
        ag_agent_thread_detach(&f->a, &ct);
        ag_agent_stop(&f->a);
        _exit(0);
    }
    ag_agent_fork_parent(&f->a);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);

    /* the parent's ring and region are exactly as the parent left them */
    assert_int_equal(atomic_load(&t.p.hdr->head), parent_head);
    assert_int_equal(atomic_load(&f->a.region.hdr->state), D9_REGION_READY);
    assert_int_equal(atomic_load(&f->a.region.hdr->threads_untraced), 0);
    d9_stats st;
    ag_agent_stats(&f->a, &st);
    assert_int_equal(st.rings_in_use, 1);

    /* the child's region carries the parent's ids in its metadata log */
    char child_name[256], child_path[600];
    uint64_t start_time = 0;
    DIR *d = opendir(f->dir);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d))) {
        uint32_t u, p;
        if (shm_region_parse_name(e->d_name, &u, &p, &start_time) == 0 && p == (uint32_t)pid) {
            snprintf(child_name, sizeof child_name, "%s", e->d_name);
            found = 1;
        }
    }
    closedir(d);
    assert_true(found);
    snprintf(child_path, sizeof child_path, "%s/%s", f->dir, child_name);
    struct shm_region cr;
    struct shm_geometry g;
    assert_int_equal(shm_region_map(child_path, (uint32_t)getuid(), &cr, &g), 0);
    assert_int_equal(atomic_load(&cr.hdr->state), D9_REGION_CLOSED);
    size_t off = 0;
    struct shm_meta_entry me;
    int saw_http = 0, saw_loc = 0;
    while (shm_meta_next(cr.base + g.meta_offset, atomic_load(&cr.hdr->meta_head), &off, &me) == 1) {
        saw_http |= me.kind == D9_META_RUNTIME && me.id == http && !strcmp(me.name, "http");
        saw_loc |= me.kind == D9_META_LOCATION && me.id == loc && !strcmp(me.name, "fork.c");
    }
    assert_true(saw_http);
    assert_true(saw_loc);
    shm_region_close(&cr);
    ag_agent_thread_detach(&f->a, &t);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_start_creates_region_in_configured_dir),
        T(test_region_header_names_comm_and_exe),
        T(test_bad_shm_dir_fails_start_without_crashing),
        T(test_tsc_region_writes_calibration_pair_zero_at_start),
        T(test_tick_refreshes_pair_one_under_seqlock_and_heartbeat),
        T(test_housekeeping_thread_writes_pair_one_by_itself),
        T(test_stop_marks_region_closed_and_is_idempotent),
        T(test_stopped_agent_refuses_claims_and_registrations),
        T(test_default_runtime_is_id_one_and_published),
        T(test_runtime_same_name_same_id_other_name_new_id),
        T(test_runtime_bad_names_are_einval),
        T(test_runtime_table_full_is_enospc),
        T(test_location_dedupes_on_file_line_func),
        T(test_many_locations_keep_their_ids_across_table_growth),
        T(test_location_without_file_is_unknown),
        T(test_full_metadata_log_counts_lost_and_ids_stay_usable),
        T(test_schema_published_once_with_names_and_types),
        T(test_schema_publication_is_thread_safe),
        T(test_invalid_schemas_are_never_published),
        T(test_concurrent_threads_get_distinct_rings),
        T(test_threads_beyond_max_are_untraced_and_counted),
        T(test_claimed_ring_records_tid_and_thread_name),
        T(test_stats_do_not_touch_rings_no_thread_claimed),
        T(test_claimed_rings_are_mapped_before_the_first_record),
        T(test_released_rings_are_reused_once_drained),
        T(test_untraced_thread_retries_only_rarely),
        T(test_failed_retry_does_not_count_the_thread_twice),
        T(test_full_ring_drop_count_is_exact_and_matches_seq_gaps),
        T(test_builtin_records_round_trip_through_the_ring),
        T(test_thread_sched_every_call_reads_schedstat_on_a_cached_fd),
        T(test_thread_sched_reads_at_most_once_per_interval),
        T(test_custom_event_round_trip_with_long_string_cut),
        T(test_custom_null_string_is_empty),
        T(test_custom_string_padding_is_zero_over_old_bytes),
        T(test_custom_mismatch_is_dropped_and_counted),
        T(test_custom_record_over_max_size_is_dropped_and_counted),
        T(test_fork_child_gets_own_region_with_parent_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
