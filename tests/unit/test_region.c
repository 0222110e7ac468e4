/*
 * test_region.c — region files: naming, creation and layout, the
 * collector's ownership and header validation, and the slot protocol
 * (claim, exhaustion, release, reuse only after drain, multi-thread claim).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "shm/region.h"
#include "shm/ring.h"

struct fx { char dir[64]; struct shm_region r; };

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/d9-test-region.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    *state = f;
    return 0;
}
static int teardown(void **state)
{
    struct fx *f = *state;
    if (f->r.base) {
        unlink(f->r.path);
        shm_region_close(&f->r);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}
static void create(struct fx *f, uint32_t rings)
{
    struct shm_region_params p = { .ring_count = rings, .ring_data_size = 4096,
                                   .clock_source = D9_CLOCK_MONOTONIC, .dir = f->dir };
    assert_int_equal(shm_region_create(&p, &f->r), 0);
}

static void test_name_round_trip(void **state)
{
    (void)state;
    char buf[96];
    assert_int_equal(shm_region_name(buf, sizeof buf, 1000, 4242, 987654321ULL), 0);
    assert_string_equal(buf, "d9.1000.4242.987654321");
    uint32_t u, p;
    uint64_t s;
    assert_int_equal(shm_region_parse_name(buf, &u, &p, &s), 0);
    assert_int_equal(u, 1000);
    assert_int_equal(p, 4242);
    assert_int_equal(s, 987654321ULL);
}

static void test_parse_name_rejects_garbage(void **state)
{
    (void)state;
    uint32_t u, p;
    uint64_t s;
    const char *bad[] = { "d9.", "d9.1.2", "d9.1.2.3.4", "d9.a.2.3", "x9.1.2.3", "d9.1.0.3",
                          "d9.99999999999.2.3", "d9.1.2.99999999999999999999999", "d9.1.2.3 " };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(shm_region_parse_name(bad[i], &u, &p, &s), -EINVAL);
}

static void test_proc_start_time_of_self_and_missing_pid(void **state)
{
    (void)state;
    uint64_t st = 0;
    assert_int_equal(shm_proc_start_time((uint32_t)getpid(), &st), 0);
    assert_true(st > 0);
    assert_int_equal(shm_proc_start_time(0x7ffffff0u, &st), -ESRCH);
}

/* shm_proc_stat: the same start time, and the state: running for us, a
 * zombie for a child that exited and was not reaped yet. */
static void test_proc_stat_gives_the_state_and_the_same_start_time(void **state)
{
    (void)state;
    uint64_t st = 0, st2 = 0;
    char c = 0;
    assert_int_equal(shm_proc_stat((uint32_t)getpid(), &c, &st), 0);
    assert_int_equal(c, 'R');
    assert_int_equal(shm_proc_start_time((uint32_t)getpid(), &st2), 0);
    assert_true(st == st2);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0)
        _exit(0);
    for (int i = 0; i < 2000; i++) {        /* until it has exited (2 s at most) */
        assert_int_equal(shm_proc_stat((uint32_t)child, &c, &st), 0);
        if (c == 'Z')
            break;
        usleep(1000);
    }
    assert_int_equal(c, 'Z');
    int ws;
    assert_int_equal(waitpid(child, &ws, 0), child);
    assert_int_equal(shm_proc_stat((uint32_t)child, &c, &st), -ESRCH);
}

static void test_create_lays_out_header_and_mode_0600(void **state)
{
    struct fx *f = *state;
    create(f, 8);
    struct stat st;
    assert_int_equal(stat(f->r.path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal((uint64_t)st.st_size, D9_REGION_HDR_SIZE + D9_META_SIZE_DEFAULT + 8 * (256 + 4096));
    assert_int_equal(f->r.hdr->pid, (uint32_t)getpid());
    assert_int_equal(atomic_load(&f->r.hdr->state), D9_REGION_READY);
    /* a second create for the same process collides instead of clobbering */
    struct shm_region r2;
    struct shm_region_params p = { .ring_count = 8, .ring_data_size = 4096, .dir = f->dir };
    assert_int_equal(shm_region_create(&p, &r2), -EEXIST);
}

static void test_create_rejects_bad_geometry(void **state)
{
    struct fx *f = *state;
    struct shm_region r;
    struct shm_region_params p = { .ring_count = 4, .ring_data_size = 5000, .dir = f->dir };
    assert_int_equal(shm_region_create(&p, &r), -EINVAL);
    p.ring_data_size = 1024;
    assert_int_equal(shm_region_create(&p, &r), -EINVAL);
    p.ring_data_size = 4096;
    p.ring_count = D9_RINGS_MAX + 1;
    assert_int_equal(shm_region_create(&p, &r), -EINVAL);
}

static void test_map_validates_and_copies_geometry(void **state)
{
    struct fx *f = *state;
    create(f, 4);
    struct shm_region m;
    struct shm_geometry g;
    assert_int_equal(shm_region_map(f->r.path, getuid(), &m, &g), 0);
    assert_int_equal(g.ring_count, 4);
    assert_int_equal(g.ring_data_size, 4096);
    assert_int_equal(g.pid, (uint32_t)getpid());
    /* the mapping is shared: a claim by the agent is visible to the collector */
    int idx = shm_slot_claim(&f->r, 77, "worker-1");
    assert_true(idx >= 0);
    struct shm_ring_snapshot s;
    shm_ring_snapshot(shm_ring_hdr(&m, &g, (uint32_t)idx), &s);
    assert_int_equal(s.state, D9_RING_OWNED);
    assert_int_equal(s.tid, 77);
    assert_string_equal(s.thread_name, "worker-1");
    shm_region_close(&m);
}

static void test_map_refuses_wrong_owner(void **state)
{
    struct fx *f = *state;
    create(f, 2);
    struct shm_region m;
    struct shm_geometry g;
    assert_int_equal(shm_region_map(f->r.path, getuid() + 1, &m, &g), -EPERM);
}

static void test_map_refuses_name_header_mismatch(void **state)
{
    struct fx *f = *state;
    create(f, 2);
    char other[300];
    snprintf(other, sizeof other, "%s/d9.%u.%u.1", f->dir, (unsigned)getuid(), (unsigned)getpid());
    assert_int_equal(link(f->r.path, other), 0);
    struct shm_region m;
    struct shm_geometry g;
    assert_int_equal(shm_region_map(other, getuid(), &m, &g), -EBADMSG);
    unlink(other);
}

static void test_validate_rejects_each_corrupt_field(void **state)
{
    struct fx *f = *state;
    create(f, 4);
    struct shm_geometry g;
    struct d9_region_hdr good;
    memcpy(&good, f->r.hdr, sizeof good);
    assert_int_equal(shm_region_validate(&good, f->r.size, &g), 0);
    for (int field = 0; field < 10; field++) {
        struct d9_region_hdr h = good;
        switch (field) {
        case 0: h.magic ^= 1; break;
        case 1: h.abi_version = 99; break;
        case 2: h.region_size += 4096; break;
        case 3: h.meta_size = 12; break;
        case 4: h.rings_offset += 8; break;
        case 5: h.ring_data_size = 6000; h.ring_stride = 6256; break;
        case 6: h.ring_stride += 64; break;
        case 7: h.ring_count = 5; break;
        case 8: h.ring_count = 0; break;
        case 9: h.clock_source = 7; break;
        }
        assert_int_equal(shm_region_validate(&h, f->r.size, &g), -EBADMSG);
    }
    assert_int_equal(shm_region_validate(&good, 100, &g), -EBADMSG);
}

static void test_validate_sanitizes_strings(void **state)
{
    struct fx *f = *state;
    create(f, 1);
    struct d9_region_hdr h;
    memcpy(&h, f->r.hdr, sizeof h);
    memset(h.comm, 'A', sizeof h.comm);     /* unterminated */
    h.comm[3] = '\n';
    struct shm_geometry g;
    assert_int_equal(shm_region_validate(&h, f->r.size, &g), 0);
    assert_int_equal(strlen(g.comm), 16);
    assert_int_equal(g.comm[3], '?');
}

static void test_claim_exhaustion_counts_untraced(void **state)
{
    struct fx *f = *state;
    create(f, 3);
    for (int i = 0; i < 3; i++)
        assert_true(shm_slot_claim(&f->r, 100 + (uint32_t)i, "t") >= 0);
    assert_int_equal(shm_slot_claim(&f->r, 200, "t"), -ENOSPC);
    assert_int_equal(shm_slot_claim(&f->r, 201, "t"), -ENOSPC);
    assert_int_equal(atomic_load(&f->r.hdr->threads_untraced), 2);
}

static void test_released_ring_reused_only_after_drain(void **state)
{
    struct fx *f = *state;
    create(f, 1);
    struct d9_region_hdr *h = f->r.hdr;
    struct d9_ring_hdr *ring = (void *)(f->r.base + h->rings_offset);
    uint8_t *data = (uint8_t *)ring + D9_RING_HDR_SIZE;
    int idx = shm_slot_claim(&f->r, 1, "a");
    assert_int_equal(idx, 0);
    uint32_t gen = ring->generation;
    struct shm_producer p;
    shm_producer_attach(&p, ring, data, h->ring_data_size);
    void *rec = shm_ring_reserve(&p, 32);
    shm_ring_commit(&p, rec, 32, D9_REC_TASK_TERMINATE, 1);
    shm_slot_release(&f->r, 0);
    /* undrained: the next thread may not take it */
    assert_int_equal(shm_slot_claim(&f->r, 2, "b"), -ENOSPC);
    assert_int_equal(shm_slot_recycle(ring), 0);
    /* the collector drains: now it is reusable, with a new generation */
    shm_ring_consume(ring, atomic_load(&ring->head));
    assert_int_equal(shm_slot_claim(&f->r, 2, "b"), 0);
    assert_int_equal(ring->generation, gen + 1);
    assert_int_equal(ring->tid, 2);
    shm_slot_release(&f->r, 0);
    assert_int_equal(shm_slot_recycle(ring), 1);
    assert_int_equal(atomic_load(&ring->state), D9_RING_FREE);
}

#define CLAIM_THREADS 16
static struct shm_region *claim_region;
static int claim_result[CLAIM_THREADS];
static void *claimer(void *arg)
{
    long i = (long)arg;
    claim_result[i] = shm_slot_claim(claim_region, 1000 + (uint32_t)i, "c");
    return NULL;
}

static void test_concurrent_claims_get_distinct_rings(void **state)
{
    struct fx *f = *state;
    create(f, 10);
    claim_region = &f->r;
    pthread_t th[CLAIM_THREADS];
    for (long i = 0; i < CLAIM_THREADS; i++)
        pthread_create(&th[i], NULL, claimer, (void *)i);
    for (int i = 0; i < CLAIM_THREADS; i++)
        pthread_join(th[i], NULL);
    int seen[10] = { 0 }, ok = 0, nospc = 0;
    for (int i = 0; i < CLAIM_THREADS; i++) {
        if (claim_result[i] >= 0) {
            assert_true(claim_result[i] < 10);
            assert_int_equal(seen[claim_result[i]]++, 0);
            ok++;
        } else {
            assert_int_equal(claim_result[i], -ENOSPC);
            nospc++;
        }
    }
    assert_int_equal(ok, 10);
    assert_int_equal(nospc, CLAIM_THREADS - 10);
    assert_int_equal(atomic_load(&f->r.hdr->threads_untraced), CLAIM_THREADS - 10);
}

/* Clean exit with no collector: the agent removes its own region. */
static void test_abandon_removes_an_unadopted_region(void **state)
{
    struct fx *f = *state;
    create(f, 2);
    assert_int_equal(shm_region_abandon(&f->r), 1);
    assert_int_equal(access(f->r.path, F_OK), -1);
    assert_int_equal(atomic_load(&f->r.hdr->adopted), D9_ADOPT_ABANDONED);
}

/* Once a collector adopted it the file stays for that collector (or the
 * next one) to drain the tail; a collector adopting an abandoned region
 * still takes it (its mapping outlives the name). */
static void test_abandon_leaves_an_adopted_region(void **state)
{
    struct fx *f = *state;
    create(f, 2);
    assert_int_equal(shm_region_mark_adopted(f->r.hdr), D9_ADOPT_NONE);
    assert_int_equal(shm_region_abandon(&f->r), 0);
    assert_int_equal(access(f->r.path, F_OK), 0);
    assert_int_equal(shm_region_mark_adopted(f->r.hdr), D9_ADOPT_COLLECTOR);
}

/* Another file put in the region's place is never removed. */
static void test_abandon_leaves_a_replaced_file(void **state)
{
    struct fx *f = *state;
    create(f, 2);
    assert_int_equal(unlink(f->r.path), 0);
    int fd = open(f->r.path, O_CREAT | O_WRONLY | O_EXCL, 0600);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(shm_region_abandon(&f->r), -ESTALE);
    assert_int_equal(access(f->r.path, F_OK), 0);
}

/* The cap's measure: allocated bytes of this user's regions that no
 * collector drains; an adopted region of a live process does not count,
 * other users' names and other files do not either. */
static void test_unadopted_bytes_counts_what_nobody_drains(void **state)
{
    struct fx *f = *state;
    uint64_t bytes;
    uint32_t files;
    assert_int_equal(shm_region_unadopted_bytes(f->dir, (uint32_t)getuid(), &bytes, &files), 0);
    assert_int_equal(files, 0);
    assert_int_equal(bytes, 0);
    create(f, 2);
    memset(f->r.base + f->r.hdr->rings_offset, 1, 8192);   /* allocate some pages */
    char other[256];
    snprintf(other, sizeof other, "%s/d9.%u.1.1", f->dir, (unsigned)getuid() + 1);
    int fd = open(other, O_CREAT | O_WRONLY | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "x", 1), 1);
    close(fd);
    assert_int_equal(shm_region_unadopted_bytes(f->dir, (uint32_t)getuid(), &bytes, &files), 0);
    assert_int_equal(files, 1);
    assert_true(bytes >= 8192);
    shm_region_mark_adopted(f->r.hdr);
    assert_int_equal(shm_region_unadopted_bytes(f->dir, (uint32_t)getuid(), &bytes, &files), 0);
    assert_int_equal(files, 0);
    assert_int_equal(bytes, 0);
    assert_int_equal(shm_region_unadopted_bytes("/nonexistent-d9", 0, &bytes, &files), -ENOENT);
    unlink(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_round_trip),
        cmocka_unit_test(test_parse_name_rejects_garbage),
        cmocka_unit_test(test_proc_start_time_of_self_and_missing_pid),
        cmocka_unit_test(test_proc_stat_gives_the_state_and_the_same_start_time),
        cmocka_unit_test_setup_teardown(test_create_lays_out_header_and_mode_0600, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abandon_removes_an_unadopted_region, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abandon_leaves_an_adopted_region, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abandon_leaves_a_replaced_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unadopted_bytes_counts_what_nobody_drains, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_rejects_bad_geometry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_validates_and_copies_geometry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_refuses_wrong_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_refuses_name_header_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_validate_rejects_each_corrupt_field, setup, teardown),
        cmocka_unit_test_setup_teardown(test_validate_sanitizes_strings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claim_exhaustion_counts_untraced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_released_ring_reused_only_after_drain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_claims_get_distinct_rings, setup, teardown),
    };
    return cmocka_run_group_tests_name("region", tests, NULL, NULL);
}
