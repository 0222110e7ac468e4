/*
 * test_bell.c — the collector's doorbell listener (collector/daemon/bell.h)
 * against real futex words in shared mappings: a ring wakes the loop once;
 * a word left rung (a dead producer) never wakes it; a region that rings
 * without data is muted, and unmuted later; a scribbled or truncated
 * region neither crashes nor spins the loop; many regions ringing at once
 * are all reported; regions past futex_waitv's limit are counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>
#include "collector/daemon/bell.h"
#include "collector/daemon/guard.h"
#include "shm/bell.h"

#define REGION_SIZE (2u * D9_REGION_HDR_SIZE)
/* How long a test waits for a wake-up it expects (generous: a loaded
 * machine), and how long it watches for one it must not see. Neither is a
 * performance threshold: a missing wake-up is a bug at any speed. */
#define EXPECT_MS 10000
#define QUIET_MS  200

struct region {
    int fd;
    uint8_t *base;
};

static void region_new(struct region *r)
{
    r->fd = memfd_create("d9bell", MFD_CLOEXEC);
    assert_true(r->fd >= 0);
    assert_int_equal(ftruncate(r->fd, REGION_SIZE), 0);
    r->base = mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    assert_true(r->base != MAP_FAILED);
}

static void region_free(struct region *r)
{
    munmap(r->base, REGION_SIZE);
    close(r->fd);
}

static int readable(struct bell *b, int ms)
{
    struct pollfd pfd = { .fd = bell_fd(b), .events = POLLIN };
    return poll(&pfd, 1, ms) == 1;
}

static struct bell *open_or_skip(void)
{
    struct bell *b = NULL;
    int rc = bell_open(&b);
    if (rc == -ENOSYS)
        skip();                 /* kernel without futex_waitv: the collector runs on its timer */
    assert_int_equal(rc, 0);
    assert_int_equal(guard_install(), 0);   /* cmocka installs its own SIGBUS handler per test */
    return b;
}

static void test_watch_sets_listener_so_producers_make_the_call(void **state)
{
    (void)state;
    struct bell *b = open_or_skip();
    struct region r;
    region_new(&r);
    struct d9_bell *bl = shm_bell_of(r.base);
    assert_int_equal(shm_bell_ring(bl), 0);         /* nobody listens: the add only */
    assert_int_equal(bell_watch(b, &r, 1, r.base, REGION_SIZE), 0);
    assert_int_equal(atomic_load(&bl->listener), D9_BELL_LISTENING);
    bell_forget(b, &r, 1);
    assert_int_equal(atomic_load(&bl->listener), 0);
    bell_close(b);
    region_free(&r);
}

static void test_ring_wakes_the_loop_once_and_names_the_region(void **state)
{
    (void)state;
    struct bell *b = open_or_skip();
    struct region r;
    region_new(&r);
    assert_int_equal(bell_watch(b, &r, 1, r.base, REGION_SIZE), 0);
    assert_false(readable(b, QUIET_MS));
    assert_int_equal(shm_bell_ring(shm_bell_of(r.base)), 1);
    assert_true(readable(b, EXPECT_MS));
    void *rung[4];
    assert_int_equal(bell_collect(b, 1, rung, 4), 1);
    assert_ptr_equal(rung[0], &r);
    /* acknowledged: no wake-up until it rings again */
    assert_false(readable(b, QUIET_MS));
    shm_bell_ring(shm_bell_of(r.base));
    assert_true(readable(b, EXPECT_MS));
    assert_int_equal(bell_collect(b, 2, rung, 4), 1);
    struct bell_stats st;
    bell_get_stats(b, &st);
    assert_int_equal(st.rings, 2);
    assert_int_equal(st.watched, 1);
    bell_close(b);
    region_free(&r);
}

static void test_dead_producer_with_rung_doorbell_never_wakes(void **state)
{
    (void)state;
    struct bell *b = open_or_skip();
    struct region r;
    region_new(&r);
    /* rang, then died: the word is left changed and nobody wakes it */
    atomic_store(&shm_bell_of(r.base)->word, 12345u);
    assert_int_equal(bell_watch(b, &r, 1, r.base, REGION_SIZE), 0);
    assert_false(readable(b, QUIET_MS));
    struct bell_stats st;
    bell_get_stats(b, &st);
    assert_int_equal(st.wakes, 0);
    bell_close(b);
    region_free(&r);
}

struct ringer {
    struct d9_bell *bl;
    _Atomic int stop;
    uint64_t n;
};

static void *ring_forever(void *arg)
{
    struct ringer *g = arg;
    while (!atomic_load(&g->stop)) {
        shm_bell_ring(g->bl);
        g->n++;
    }
    return NULL;
}

static void test_ringing_without_data_is_muted_then_unmuted(void **state)
{
    (void)state;
    struct bell *b = open_or_skip();
    struct region r;
    region_new(&r);
    assert_int_equal(bell_watch(b, &r, 1, r.base, REGION_SIZE), 0);
    struct ringer g = { .bl = shm_bell_of(r.base) };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, ring_forever, &g), 0);
    uint64_t now = 1000;
    unsigned loops = 0;
    struct bell_stats st;
    void *rung[4];
    /* the loop: wait, collect, "drain" (no records ever), judge */
    do {
        assert_true(readable(b, EXPECT_MS));
        size_t n = bell_collect(b, now, rung, 4);
        for (size_t i = 0; i < n; i++)
            bell_judge(b, rung[i], 0, 1u << 20, now);
        bell_get_stats(b, &st);
        loops++;
    } while (st.mutes == 0 && loops < 10 * BELL_SPURIOUS_MAX);
    assert_int_equal(st.mutes, 1);
    assert_true(loops <= BELL_SPURIOUS_MAX + 2);    /* a ring may be collected late, once */
    assert_int_equal(st.watched, 0);
    /* muted: it rings on (thousands of times) and nobody wakes */
    if (readable(b, 0))
        (void)bell_collect(b, now, rung, 4);        /* at most one wake from before the mute */
    assert_false(readable(b, QUIET_MS));
    assert_true(g.n > 0);
    /* the mute runs out: watched again */
    bell_pass(b, now + BELL_MUTE_NS);
    bell_get_stats(b, &st);
    assert_int_equal(st.watched, 1);
    assert_true(readable(b, EXPECT_MS));
    atomic_store(&g.stop, 1);
    pthread_join(t, NULL);
    bell_close(b);
    region_free(&r);
}

static void test_rings_paid_for_by_data_are_never_muted(void **state)
{
    (void)state;
    struct bell *b = open_or_skip();
    struct region r;
    region_new(&r);
    assert_int_equal(bell_watch(b, &r, 1, r.base, REGION_SIZE), 0);
    uint64_t records = 0, ring = 1u << 20;
    void *rung[4];
    for (unsigned i = 0; i < 4 * BELL_SPURIOUS_MAX; i++) {
        shm_bell_ring(shm_bell_of(r.base));
        assert_true(readable(b, EXPECT_MS));
        assert_int_equal(bell_collect(b, i, rung, 4), 1);
        records += ring / 2 / 32;                   /* half a ring of 32-byte records */
        bell_judge(b, rung[0], records, ring, i);
    }
    struct bell_stats st;
    bell_get_stats(b, &st);
    assert_int_equal(st.spurious, 0);
    assert_int_equal(st.mutes, 0);
    bell_close(b);
    region_free(&r);
}

static void test_scribbled_then_truncated_region_faults_once(void **state)
{
    (void)state;
    struct bell *b = open_or_skip();
    struct region r;
    region_new(&r);
    assert_int_equal(bell_watch(b, &r, 1, r.base, REGION_SIZE), 0);
    /* the owner scribbles over the whole line, the listener included */
    memset(shm_bell_of(r.base), 0xa5, sizeof(struct d9_bell));
    syscall(SYS_futex, (uint32_t *)&shm_bell_of(r.base)->word, 1 /* FUTEX_WAKE */, 1, NULL, NULL, 0);
    assert_true(readable(b, EXPECT_MS));
    void *rung[4];
    assert_int_equal(bell_collect(b, 1, rung, 4), 1);
    /* then truncates the file. Truncation wakes no futex waiter: if the
     * thread already sleeps on the word it sleeps on. The next time it
     * builds its list (here: another region is watched) the kernel's read
     * of the word fails, and the loop is woken to look. */
    assert_int_equal(ftruncate(r.fd, 0), 0);
    struct region healthy;
    region_new(&healthy);
    assert_int_equal(bell_watch(b, &healthy, 2, healthy.base, REGION_SIZE), 0);
    assert_true(readable(b, EXPECT_MS));
    assert_int_equal(bell_collect(b, 2, rung, 4), 0);   /* the look faults, under the guard */
    struct bell_stats st;
    bell_get_stats(b, &st);
    assert_int_equal(st.faults, 1);
    assert_int_equal(st.watched, 1);                /* the healthy one only */
    assert_false(readable(b, QUIET_MS));           /* the faulted one is not looked at again */
    shm_bell_ring(shm_bell_of(healthy.base));      /* and the healthy one still works */
    assert_true(readable(b, EXPECT_MS));
    assert_int_equal(bell_collect(b, 3, rung, 4), 1);
    assert_ptr_equal(rung[0], &healthy);
    bell_get_stats(b, &st);
    assert_int_equal(st.faults, 1);
    bell_forget(b, &r, 1);                          /* faulted: its shm is left alone */
    bell_forget(b, &healthy, 1);
    bell_close(b);
    region_free(&healthy);
    region_free(&r);
}

static void test_many_regions_ringing_at_once_are_all_reported(void **state)
{
    (void)state;
    enum { N = BELL_WATCH_MAX + 3 };
    struct bell *b = open_or_skip();
    struct region *r = calloc(N, sizeof *r);
    assert_non_null(r);
    for (unsigned i = 0; i < N; i++) {
        region_new(&r[i]);
        assert_int_equal(bell_watch(b, &r[i], i + 1, r[i].base, REGION_SIZE), 0);
    }
    struct bell_stats st;
    bell_get_stats(b, &st);
    assert_int_equal(st.watched, BELL_WATCH_MAX);
    assert_int_equal(st.unwatched, N - BELL_WATCH_MAX);
    for (unsigned i = 0; i < BELL_WATCH_MAX; i++)
        shm_bell_ring(shm_bell_of(r[i].base));
    assert_true(readable(b, EXPECT_MS));
    void *rung[N];
    size_t n = bell_collect(b, 1, rung, N);
    assert_int_equal(n, BELL_WATCH_MAX);            /* every one that rang, in one collect */
    int *seen = calloc(N, sizeof *seen);
    for (size_t i = 0; i < n; i++)
        seen[(struct region *)rung[i] - r]++;
    for (unsigned i = 0; i < BELL_WATCH_MAX; i++)
        assert_int_equal(seen[i], 1);
    /* a small cap: the rest are still acknowledged, not reported twice */
    for (unsigned i = 0; i < 8; i++)
        shm_bell_ring(shm_bell_of(r[i].base));
    assert_true(readable(b, EXPECT_MS));
    assert_int_equal(bell_collect(b, 2, rung, 3), 3);
    assert_false(readable(b, QUIET_MS));
    for (unsigned i = 0; i < N; i++) {
        bell_forget(b, &r[i], 1);
        region_free(&r[i]);
    }
    free(seen);
    free(r);
    bell_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_watch_sets_listener_so_producers_make_the_call),
        cmocka_unit_test(test_ring_wakes_the_loop_once_and_names_the_region),
        cmocka_unit_test(test_dead_producer_with_rung_doorbell_never_wakes),
        cmocka_unit_test(test_ringing_without_data_is_muted_then_unmuted),
        cmocka_unit_test(test_rings_paid_for_by_data_are_never_muted),
        cmocka_unit_test(test_scribbled_then_truncated_region_faults_once),
        cmocka_unit_test(test_many_regions_ringing_at_once_are_all_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
