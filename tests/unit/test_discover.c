/*
 * test_discover.c — region discovery and the ownership rule
 * (collector/daemon/discover.c) as a specification.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "collector/daemon/discover.h"
#include "collector/store/col_log.h"
#include "shm/region.h"

#define OTHER_UID 65534

struct fx {
    char dir[64];
    struct discover d;
    int offered;
    int adopt_rc;               /* what the fake adoption returns */
    char last[128];
};

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st; (void)flag; (void)f;
    return remove(p);
}

static int setup(void **state)
{
    struct fx *fx = calloc(1, sizeof *fx);
    strcpy(fx->dir, "/tmp/d9disctest.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    col_log_init("test_discover", COL_LOG_ERROR);
    discover_init(&fx->d, fx->dir);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fx *fx = *state;
    discover_free(&fx->d);
    nftw(fx->dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
    free(fx);
    return 0;
}

static int never_known(void *arg, uint32_t pid, uint64_t st)
{
    (void)arg; (void)pid; (void)st;
    return 0;
}

static int fake_adopt(void *arg, const struct discover_candidate *c)
{
    struct fx *fx = arg;
    fx->offered++;
    snprintf(fx->last, sizeof fx->last, "%s", c->name);
    return fx->adopt_rc;
}

/* Creates DIR/d9.<uid>.<pid>.<start> (empty file) owned by owner; returns its name. */
static const char *region_file(struct fx *fx, uint32_t uid, uint32_t pid, uint64_t start,
                               uid_t owner)
{
    static char name[128];
    char path[256];
    assert_int_equal(shm_region_name(name, sizeof name, uid, pid, start), 0);
    snprintf(path, sizeof path, "%s/%s", fx->dir, name);
    int fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
    assert_true(fd >= 0);
    close(fd);
    if (owner != getuid())
        assert_int_equal(chown(path, owner, (gid_t)-1), 0);
    return name;
}

static uint64_t my_start(void)
{
    uint64_t st;
    assert_int_equal(shm_proc_start_time((uint32_t)getpid(), &st), 0);
    return st;
}

static uint32_t dead_pid(void)
{
    pid_t c = fork();
    if (c == 0)
        _exit(0);
    waitpid(c, NULL, 0);
    return (uint32_t)c;
}

static void a_live_process_s_region_must_be_owned_by_the_process_owner(void **s)
{
    (void)s;
    struct discover_candidate c = { .uid = 12345, .pid = (uint32_t)getpid(), .start_time = my_start() };
    discover_classify(&c);
    assert_true(c.alive);
    assert_int_equal(c.expected_uid, getuid());
}

static void a_gone_process_s_region_must_be_owned_by_the_uid_in_its_name(void **s)
{
    (void)s;
    struct discover_candidate c = { .uid = 12345, .pid = dead_pid(), .start_time = 1 };
    discover_classify(&c);
    assert_false(c.alive);
    assert_int_equal(c.expected_uid, 12345);
}

static void a_reused_pid_counts_as_gone(void **s)
{
    (void)s;
    struct discover_candidate c = { .uid = 12345, .pid = (uint32_t)getpid(),
                               .start_time = my_start() + 1 };
    discover_classify(&c);
    assert_false(c.alive);
    assert_true(c.pid_taken);
    assert_int_equal(c.expected_uid, 12345);
}

static void a_scan_offers_well_named_regions_only(void **state)
{
    struct fx *fx = *state;
    region_file(fx, getuid(), (uint32_t)getpid(), my_start(), getuid());
    char junk[256];
    snprintf(junk, sizeof junk, "%s/d9.not-a-region", fx->dir);
    fclose(fopen(junk, "w"));
    snprintf(junk, sizeof junk, "%s/other-file", fx->dir);
    fclose(fopen(junk, "w"));
    assert_int_equal(discover_scan(&fx->d, never_known, fake_adopt, fx), 1);
    assert_int_equal(fx->offered, 1);
}

static void a_mis_owned_region_is_rejected_without_being_offered(void **state)
{
    struct fx *fx = *state;
    if (getuid() != 0)
        skip();
    region_file(fx, 0, (uint32_t)getpid(), my_start(), OTHER_UID);
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_int_equal(fx->offered, 0);
    assert_int_equal(fx->d.rejected_count, 1);
}

static void a_rejected_region_is_never_looked_at_again(void **state)
{
    struct fx *fx = *state;
    region_file(fx, getuid(), (uint32_t)getpid(), my_start(), getuid());
    fx->adopt_rc = -EBADMSG;            /* bad header */
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_int_equal(fx->offered, 1);
    assert_int_equal(fx->d.rejected_count, 1);
}

static void a_region_not_ready_yet_is_offered_again(void **state)
{
    struct fx *fx = *state;
    region_file(fx, getuid(), (uint32_t)getpid(), my_start(), getuid());
    fx->adopt_rc = -EAGAIN;
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_int_equal(fx->offered, 2);
    assert_int_equal(fx->d.rejected_count, 0);
}

static void a_new_file_with_a_rejected_name_is_considered_again(void **state)
{
    struct fx *fx = *state;
    const char *name = region_file(fx, getuid(), (uint32_t)getpid(), my_start(), getuid());
    char path[256];
    snprintf(path, sizeof path, "%s/%s", fx->dir, name);
    fx->adopt_rc = -EBADMSG;
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    unlink(path);
    discover_scan(&fx->d, never_known, fake_adopt, fx);   /* forgets the gone file */
    region_file(fx, getuid(), (uint32_t)getpid(), my_start(), getuid());
    fx->adopt_rc = 0;
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_int_equal(fx->offered, 2);
}

static void a_symlink_is_rejected(void **state)
{
    struct fx *fx = *state;
    char name[128], path[256];
    shm_region_name(name, sizeof name, getuid(), (uint32_t)getpid(), my_start());
    snprintf(path, sizeof path, "%s/%s", fx->dir, name);
    assert_int_equal(symlink("/etc/passwd", path), 0);
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_int_equal(fx->offered, 0);
    assert_int_equal(fx->d.rejected_count, 1);
}

static void a_hello_can_only_name_a_file_in_the_shm_dir(void **state)
{
    struct fx *fx = *state;
    assert_int_equal(discover_one(&fx->d, "../d9.0.1.1", never_known, fake_adopt, fx),
                     -EINVAL);
    assert_int_equal(discover_one(&fx->d, "passwd", never_known, fake_adopt, fx), -EINVAL);
    assert_int_equal(fx->offered, 0);
}

static int always_known(void *arg, uint32_t pid, uint64_t st)
{
    (void)arg; (void)pid; (void)st;
    return 1;
}

static void an_adopted_region_is_not_offered_again(void **state)
{
    struct fx *fx = *state;
    region_file(fx, getuid(), (uint32_t)getpid(), my_start(), getuid());
    discover_scan(&fx->d, always_known, fake_adopt, fx);
    assert_int_equal(fx->offered, 0);
}

static int exists(struct fx *fx, const char *name)
{
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", fx->dir, name);
    return lstat(path, &st) == 0;
}

/* A file naming a live pid with another start time (a forged region for a
 * root process, or a reused pid) is not offered while that pid runs, and
 * offered once it is gone. */
static void a_region_naming_a_live_pid_of_another_start_time_waits_until_it_is_gone(void **state)
{
    struct fx *fx = *state;
    region_file(fx, getuid(), (uint32_t)getpid(), my_start() - 1, getuid());
    assert_int_equal(discover_scan(&fx->d, never_known, fake_adopt, fx), 0);
    region_file(fx, getuid(), 1, 1, getuid());     /* init: alive, another start time */
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_int_equal(fx->offered, 0);
    assert_int_equal(fx->d.rejected_count, 0);
    region_file(fx, getuid(), dead_pid(), 1, getuid());
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_int_equal(fx->offered, 1);
}

static void a_rejected_region_is_removed_once_its_process_is_gone(void **state)
{
    struct fx *fx = *state;
    const char *n = region_file(fx, getuid(), dead_pid(), 1, getuid());
    char name[128];
    snprintf(name, sizeof name, "%s", n);
    fx->adopt_rc = -EBADMSG;
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_int_equal(fx->d.rejected_count, 1);
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_false(exists(fx, name));
    assert_int_equal(fx->d.rejected_removed, 1);
    assert_int_equal(fx->offered, 1);
}

static void a_rejected_region_of_a_live_process_stays(void **state)
{
    struct fx *fx = *state;
    const char *n = region_file(fx, getuid(), (uint32_t)getpid(), my_start(), getuid());
    char name[128];
    snprintf(name, sizeof name, "%s", n);
    fx->adopt_rc = -EBADMSG;
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_true(exists(fx, name));
    assert_int_equal(fx->d.rejected_removed, 0);
}

/* The index refused the file as a late region of a finished process of the
 * same user (-EALREADY): rejected, and removed once the process is gone,
 * like any rejected region. */
static void a_region_of_an_ended_process_is_rejected_and_removed(void **state)
{
    struct fx *fx = *state;
    const char *n = region_file(fx, getuid(), dead_pid(), 1, getuid());
    char name[128];
    snprintf(name, sizeof name, "%s", n);
    fx->adopt_rc = -EALREADY;
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_int_equal(fx->d.rejected_count, 1);
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_false(exists(fx, name));
    assert_int_equal(fx->offered, 1);
}

/* The index holds the (pid, start) as another user's (-EEXIST): rejected
 * and never opened again, but not removed: once the process is gone nothing
 * tells which claimant is genuine. */
static void a_region_of_another_user_s_indexed_process_is_rejected_and_kept(void **state)
{
    struct fx *fx = *state;
    const char *n = region_file(fx, getuid(), dead_pid(), 1, getuid());
    char name[128];
    snprintf(name, sizeof name, "%s", n);
    fx->adopt_rc = -EEXIST;
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_int_equal(fx->d.rejected_count, 1);
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_true(exists(fx, name));
    assert_int_equal(fx->d.rejected_removed, 0);
    assert_int_equal(fx->offered, 1);
}

static void a_rejected_symlink_is_never_removed(void **state)
{
    struct fx *fx = *state;
    char name[128], path[256];
    shm_region_name(name, sizeof name, getuid(), dead_pid(), 1);
    snprintf(path, sizeof path, "%s/%s", fx->dir, name);
    assert_int_equal(symlink("/etc/passwd", path), 0);
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_true(exists(fx, name));
    assert_int_equal(fx->d.rejected_count, 1);
}

#define AGE_S 60u

static void age_file(struct fx *fx, const char *name, time_t secs_ago)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", fx->dir, name);
    struct timespec ts[2] = { { .tv_sec = time(NULL) - secs_ago }, { .tv_sec = time(NULL) - secs_ago } };
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* --reclaim-age: a region naming a pid that now runs another process is
 * never offered; once its file is older than the age it is removed. */
static void an_old_region_of_a_reused_pid_is_removed_by_age(void **state)
{
    struct fx *fx = *state;
    fx->d.reclaim_age_s = AGE_S;
    char old[128], young[128];
    snprintf(old, sizeof old, "%s", region_file(fx, getuid(), (uint32_t)getpid(), my_start() - 1, getuid()));
    snprintf(young, sizeof young, "%s", region_file(fx, getuid(), (uint32_t)getpid(), my_start() - 2, getuid()));
    age_file(fx, old, (time_t)AGE_S + 5);
    age_file(fx, young, (time_t)AGE_S - 5);
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_false(exists(fx, old));
    assert_true(exists(fx, young));
    assert_int_equal(fx->d.aged_removed, 1);
    assert_int_equal(fx->offered, 0);
}

/* A kept rejected region (another user's indexed process) goes once old. */
static void a_kept_rejected_region_is_removed_by_age(void **state)
{
    struct fx *fx = *state;
    fx->d.reclaim_age_s = AGE_S;
    char name[128];
    snprintf(name, sizeof name, "%s", region_file(fx, getuid(), dead_pid(), 1, getuid()));
    fx->adopt_rc = -EEXIST;
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_true(exists(fx, name));
    age_file(fx, name, (time_t)AGE_S + 5);
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_false(exists(fx, name));
    assert_int_equal(fx->d.aged_removed, 1);
}

/* Without an age (0) nothing is removed by age; a live process's region
 * never is, however old. */
static void no_age_or_a_live_process_keeps_the_file(void **state)
{
    struct fx *fx = *state;
    char reused[128], live[128];
    snprintf(reused, sizeof reused, "%s", region_file(fx, getuid(), (uint32_t)getpid(), my_start() - 1, getuid()));
    snprintf(live, sizeof live, "%s", region_file(fx, getuid(), (uint32_t)getpid(), my_start(), getuid()));
    age_file(fx, reused, (time_t)AGE_S * 100);
    age_file(fx, live, (time_t)AGE_S * 100);
    fx->adopt_rc = -EBADMSG;
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_true(exists(fx, reused));
    fx->d.reclaim_age_s = AGE_S;
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    discover_scan(&fx->d, never_known, fake_adopt, fx);
    assert_true(exists(fx, live));
    assert_false(exists(fx, reused));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_live_process_s_region_must_be_owned_by_the_process_owner),
        cmocka_unit_test(a_gone_process_s_region_must_be_owned_by_the_uid_in_its_name),
        cmocka_unit_test(a_reused_pid_counts_as_gone),
        cmocka_unit_test_setup_teardown(a_scan_offers_well_named_regions_only, setup, teardown),
        cmocka_unit_test_setup_teardown(a_mis_owned_region_is_rejected_without_being_offered, setup, teardown),
        cmocka_unit_test_setup_teardown(a_rejected_region_is_never_looked_at_again, setup, teardown),
        cmocka_unit_test_setup_teardown(a_region_not_ready_yet_is_offered_again, setup, teardown),
        cmocka_unit_test_setup_teardown(a_new_file_with_a_rejected_name_is_considered_again, setup, teardown),
        cmocka_unit_test_setup_teardown(a_symlink_is_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(a_hello_can_only_name_a_file_in_the_shm_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(an_adopted_region_is_not_offered_again, setup, teardown),
        cmocka_unit_test_setup_teardown(a_region_naming_a_live_pid_of_another_start_time_waits_until_it_is_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(a_rejected_region_is_removed_once_its_process_is_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(a_rejected_region_of_a_live_process_stays, setup, teardown),
        cmocka_unit_test_setup_teardown(a_rejected_symlink_is_never_removed, setup, teardown),
        cmocka_unit_test_setup_teardown(a_region_of_an_ended_process_is_rejected_and_removed, setup, teardown),
        cmocka_unit_test_setup_teardown(a_region_of_another_user_s_indexed_process_is_rejected_and_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(an_old_region_of_a_reused_pid_is_removed_by_age, setup, teardown),
        cmocka_unit_test_setup_teardown(a_kept_rejected_region_is_removed_by_age, setup, teardown),
        cmocka_unit_test_setup_teardown(no_age_or_a_live_process_keeps_the_file, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
