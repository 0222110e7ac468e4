/*
 * test_agent_config.c — d9_init_with(): a program's own d9_config merged
 * with the DIAL9_* environment (agent/d9.h), and its pure half,
 * ag_env_config_value() (agent/env.c).
 *
 * The agent is a process singleton configured once, so each d9_init_with
 * case runs in a forked child with its own environment (regions in a temp
 * dir, a collector socket nobody listens on); the child checks what it can
 * see and exits non-zero on failure, the test checks its stderr and the
 * regions it left.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agent/d9.h"
#include "agent/env.h"
#include "shm/region.h"
#include "tests/unit/listener.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "child %d: %s:%d: %s\n", (int)getpid(), \
        __FILE__, __LINE__, #c); _exit(1); } } while (0)

struct fx {
    char dir[64];               /* DIAL9_SHM_DIR of the environment */
    char cfg_dir[80];           /* a second directory, for d9_config.shm_dir */
    char endpoint[128];
    char err[4096];             /* the child's stderr */
};

static int g_listener = -1;

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/d9-test-config.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->cfg_dir, sizeof f->cfg_dir, "%s/cfg", f->dir);
    if (mkdir(f->cfg_dir, 0700) != 0)
        return -1;
    /* the children's regions stay at exit for the test to read */
    g_listener = listener_open(f->dir, f->endpoint, sizeof f->endpoint);
    if (g_listener < 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    listener_close(&g_listener);
    struct fx *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    int rc = system(cmd);
    free(f);
    return rc == 0 ? 0 : -1;
}

typedef void (*child_fn)(struct fx *f);

/* Run fn in a child whose environment is the test's DIAL9_SHM_DIR and
 * DIAL9_COLLECTOR plus env ("K=V", NULL-terminated); f->err gets its stderr
 * and the child must exit 0. */
static void run_child(struct fx *f, const char *const *env, child_fn fn)
{
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        dup2(pfd[1], 2);
        close(pfd[1]);
        setvbuf(stderr, NULL, _IONBF, 0);
        const char *vars[] = { "DIAL9_ENABLED", "DIAL9_RING_KB", "DIAL9_MAX_THREADS",
                               "DIAL9_COLLECTOR", "DIAL9_RUNTIME_NAME", "DIAL9_SHM_DIR",
                               "DIAL9_SAMPLER", "DIAL9_SAMPLER_HZ", "DIAL9_SAMPLER_WAIT_MS",
                               "DIAL9_CLOCK", "DIAL9_SCHED_SAMPLE_US" };
        for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
            unsetenv(vars[i]);
        setenv("DIAL9_SHM_DIR", f->dir, 1);
        setenv("DIAL9_COLLECTOR", f->endpoint, 1);
        setenv("DIAL9_SAMPLER", "off", 1);
        for (; env && *env; env++)
            putenv((char *)*env);
        fn(f);
        _exit(0);
    }
    close(pfd[1]);
    size_t n = 0;
    ssize_t r;
    while (n < sizeof f->err - 1 && (r = read(pfd[0], f->err + n, sizeof f->err - 1 - n)) > 0)
        n += (size_t)r;
    f->err[n] = 0;
    close(pfd[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("child failed (status %#x); its stderr:\n%s", status, f->err);
}

static int count_regions(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    uint32_t u, p;
    uint64_t s;
    while ((e = readdir(d)))
        n += shm_region_parse_name(e->d_name, &u, &p, &s) == 0;
    closedir(d);
    return n;
}

/* ---- ag_env_config_value: the pure mapping ---------------------------------------- */

static void test_an_unset_config_gives_no_value_for_any_variable(void **s)
{
    (void)s;
    d9_config c = D9_CONFIG_INIT;
    char buf[32];
    const char *field = "x";
    const char *vars[] = { "DIAL9_ENABLED", "DIAL9_RING_KB", "DIAL9_MAX_THREADS",
                           "DIAL9_COLLECTOR", "DIAL9_RUNTIME_NAME", "DIAL9_SHM_DIR",
                           "DIAL9_CLOCK", "DIAL9_SCHED_SAMPLE_US", "DIAL9_SAMPLER",
                           "DIAL9_SAMPLER_HZ", "DIAL9_SAMPLER_WAIT_MS" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        assert_null(ag_env_config_value(&c, vars[i], buf, sizeof buf, &field));
        assert_non_null(field);             /* a known setting still has its field name */
    }
    assert_null(ag_env_config_value(&c, "XDG_RUNTIME_DIR", buf, sizeof buf, &field));
    assert_null(field);
}

static void test_set_fields_read_as_their_variables_text(void **s)
{
    (void)s;
    d9_config c = D9_CONFIG_INIT;
    c.enabled = 1;
    c.ring_kb = 4096;
    c.sched_sample_us = 0;                  /* 0 is a value, not "unset" */
    c.collector = "none";
    char buf[32];
    const char *field;
    assert_string_equal(ag_env_config_value(&c, "DIAL9_ENABLED", buf, sizeof buf, &field), "1");
    assert_string_equal(field, "enabled");
    assert_string_equal(ag_env_config_value(&c, "DIAL9_RING_KB", buf, sizeof buf, &field), "4096");
    assert_string_equal(field, "ring_kb");
    assert_string_equal(ag_env_config_value(&c, "DIAL9_SCHED_SAMPLE_US", buf, sizeof buf, NULL),
                        "0");
    assert_string_equal(ag_env_config_value(&c, "DIAL9_COLLECTOR", buf, sizeof buf, &field), "none");
    assert_string_equal(field, "collector");
}

static const char *cfg_get(const char *name, void *ctx)
{
    static char buf[32];
    return ag_env_config_value(ctx, name, buf, sizeof buf, NULL);
}

static void test_config_values_are_checked_by_the_variables_rules(void **s)
{
    (void)s;
    struct ag_config c;
    char err[AG_ERR_MAX];
    d9_config pc = D9_CONFIG_INIT;
    pc.max_threads = 5000;                  /* above D9_RINGS_MAX */
    ag_env_defaults(&c, 1000, "/run/user/1000", "p");
    assert_int_equal(ag_env_parse(&c, cfg_get, &pc, err, sizeof err), -EINVAL);
    assert_string_equal(err, "d9: DIAL9_MAX_THREADS=5000 is out of range for a number of "
                        "threads (1..4096); tracing disabled");
    pc = (d9_config)D9_CONFIG_INIT;
    pc.ring_kb = -7;                        /* negative: not D9_UNSET, not a size */
    ag_env_defaults(&c, 1000, "/run/user/1000", "p");
    assert_int_equal(ag_env_parse(&c, cfg_get, &pc, err, sizeof err), -EINVAL);
    pc = (d9_config)D9_CONFIG_INIT;
    pc.enabled = 2;                         /* a boolean is 1 or 0 */
    ag_env_defaults(&c, 1000, "/run/user/1000", "p");
    assert_int_equal(ag_env_parse(&c, cfg_get, &pc, err, sizeof err), -EINVAL);
    pc = (d9_config)D9_CONFIG_INIT;
    pc.ring_kb = 3000;
    pc.runtime_name = "svc";
    ag_env_defaults(&c, 1000, "/run/user/1000", "p");
    assert_int_equal(ag_env_parse(&c, cfg_get, &pc, err, sizeof err), 0);
    assert_int_equal(c.ring_data_size, 4096u * 1024u);     /* rounded up as DIAL9_RING_KB */
    assert_string_equal(c.runtime_name, "svc");
}

/* ---- d9_init_with: precedence --------------------------------------------------- */

static void child_program_dir_wins(struct fx *f)
{
    d9_config c = D9_CONFIG_INIT;
    c.shm_dir = f->cfg_dir;
    CHECK(d9_init_with(&c) == 0);
    CHECK(d9_enabled());
    CHECK(strncmp(d9_region_path(), f->cfg_dir, strlen(f->cfg_dir)) == 0);
    d9_shutdown();
}

static void test_a_field_the_program_sets_wins_over_its_variable(void **state)
{
    struct fx *f = *state;
    run_child(f, NULL, child_program_dir_wins);
    assert_string_equal(f->err, "");
    assert_int_equal(count_regions(f->cfg_dir), 1);
    assert_int_equal(count_regions(f->dir), 0);
}

static void child_unset_fields_from_env(struct fx *f)
{
    d9_config c = D9_CONFIG_INIT;
    c.runtime_name = "svc";
    CHECK(d9_init_with(&c) == 0);
    CHECK(strncmp(d9_region_path(), f->dir, strlen(f->dir)) == 0);
    CHECK(d9_runtime_default().id != 0);
    d9_shutdown();
}

static void test_fields_left_unset_come_from_the_environment(void **state)
{
    struct fx *f = *state;
    run_child(f, NULL, child_unset_fields_from_env);
    assert_string_equal(f->err, "");
    assert_int_equal(count_regions(f->dir), 1);
}

static void child_env_bad_but_overridden(struct fx *f)
{
    (void)f;
    d9_config c = D9_CONFIG_INIT;
    c.ring_kb = 64;
    CHECK(d9_init_with(&c) == 0);
    d9_shutdown();
}

static void test_a_bad_variable_is_not_read_when_the_program_sets_its_field(void **state)
{
    struct fx *f = *state;
    const char *env[] = { "DIAL9_RING_KB=abc", NULL };
    run_child(f, env, child_env_bad_but_overridden);
    assert_string_equal(f->err, "");
}

static void child_no_env(struct fx *f)
{
    d9_config c = D9_CONFIG_INIT;
    c.flags = D9_CONFIG_NO_ENV;
    c.shm_dir = f->cfg_dir;
    c.collector = "none";
    CHECK(d9_init_with(&c) == 0);
    CHECK(d9_enabled());
    d9_shutdown();
}

static void test_no_env_ignores_every_variable(void **state)
{
    struct fx *f = *state;
    /* bad and disabling values that would stop d9_init */
    const char *env[] = { "DIAL9_RING_KB=abc", "DIAL9_ENABLED=0", "DIAL9_CLOCK=bogus", NULL };
    run_child(f, env, child_no_env);
    assert_string_equal(f->err, "");
    assert_int_equal(count_regions(f->cfg_dir), 1);
}

static void child_opt_out(struct fx *f)
{
    (void)f;
    d9_config c = D9_CONFIG_INIT;
    c.enabled = 0;
    CHECK(d9_init_with(&c) == 1);
    CHECK(!d9_enabled());
    CHECK(d9_region_path() == NULL);
    d9_runtime rt;
    CHECK(d9_runtime_register("x", &rt) == D9_OFF && rt.id == 0);
    d9_poll_start((d9_runtime){ 1 }, 0, 1, 0);
    d9_poll_end((d9_runtime){ 1 }, 0, 1);
    CHECK(d9_init() == 1);                   /* a later d9_init cannot turn it on */
}

static void test_enabled_0_keeps_the_program_untraced_whatever_the_environment(void **state)
{
    struct fx *f = *state;
    const char *env[] = { "DIAL9_ENABLED=1", "DIAL9_RING_KB=abc", NULL };
    run_child(f, env, child_opt_out);
    assert_string_equal(f->err, "");        /* the environment was not even checked */
    assert_int_equal(count_regions(f->dir), 0);
}

static void child_forced_on(struct fx *f)
{
    (void)f;
    d9_config c = D9_CONFIG_INIT;
    c.enabled = 1;
    CHECK(d9_init_with(&c) == 0);
    CHECK(d9_enabled());
    d9_shutdown();
}

static void test_enabled_1_traces_under_dial9_enabled_0(void **state)
{
    struct fx *f = *state;
    const char *env[] = { "DIAL9_ENABLED=0", NULL };
    run_child(f, env, child_forced_on);
    assert_string_equal(f->err, "");
    assert_int_equal(count_regions(f->dir), 1);
}

/* ---- d9_init_with: failures never fail the program ---------------------------- */

static void child_bad_field(struct fx *f)
{
    (void)f;
    d9_config c = D9_CONFIG_INIT;
    c.ring_kb = 3;
    CHECK(d9_init_with(&c) == -EINVAL);
    CHECK(d9_init_with(&c) == -EINVAL);     /* idempotent, and said only once */
    CHECK(!d9_enabled());
    d9_poll_start((d9_runtime){ 1 }, 0, 1, 0);
}

static void test_a_bad_field_is_one_line_naming_variable_and_field(void **state)
{
    struct fx *f = *state;
    run_child(f, NULL, child_bad_field);
    assert_string_equal(f->err, "d9: DIAL9_RING_KB=3 is out of range for a ring size in KiB "
                        "(4..65536); tracing disabled (d9_config.ring_kb)\n");
    assert_int_equal(count_regions(f->dir), 0);
}

static void child_bad_env_under_config(struct fx *f)
{
    (void)f;
    d9_config c = D9_CONFIG_INIT;
    c.runtime_name = "svc";
    CHECK(d9_init_with(&c) == -EINVAL);
}

static void test_a_bad_variable_for_an_unset_field_is_reported_as_the_variable(void **state)
{
    struct fx *f = *state;
    const char *env[] = { "DIAL9_CLOCK=bogus", NULL };
    run_child(f, env, child_bad_env_under_config);
    assert_string_equal(f->err, "d9: DIAL9_CLOCK=bogus is not auto or monotonic; "
                        "tracing disabled\n");
}

static void child_bad_size(struct fx *f)
{
    (void)f;
    d9_config c = D9_CONFIG_INIT;
    c.size = 8;
    CHECK(d9_init_with(&c) == -EINVAL);
    CHECK(!d9_enabled());
}

static void test_a_config_of_another_size_is_refused_with_one_line(void **state)
{
    struct fx *f = *state;
    run_child(f, NULL, child_bad_size);
    char want[256];
    snprintf(want, sizeof want, "d9: d9_config.size is 8, this libd9agent expects %zu (start "
             "from D9_CONFIG_INIT and build against its d9.h); tracing disabled\n",
             sizeof(d9_config));
    assert_string_equal(f->err, want);
}

static void child_null_is_d9_init(struct fx *f)
{
    CHECK(d9_init_with(NULL) == 0);
    CHECK(strncmp(d9_region_path(), f->dir, strlen(f->dir)) == 0);
    d9_shutdown();
}

static void test_null_config_is_d9_init(void **state)
{
    struct fx *f = *state;
    run_child(f, NULL, child_null_is_d9_init);
    assert_string_equal(f->err, "");
    assert_int_equal(count_regions(f->dir), 1);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_unset_config_gives_no_value_for_any_variable),
        cmocka_unit_test(test_set_fields_read_as_their_variables_text),
        cmocka_unit_test(test_config_values_are_checked_by_the_variables_rules),
        T(test_a_field_the_program_sets_wins_over_its_variable),
        T(test_fields_left_unset_come_from_the_environment),
        T(test_a_bad_variable_is_not_read_when_the_program_sets_its_field),
        T(test_no_env_ignores_every_variable),
        T(test_enabled_0_keeps_the_program_untraced_whatever_the_environment),
        T(test_enabled_1_traces_under_dial9_enabled_0),
        T(test_a_bad_field_is_one_line_naming_variable_and_field),
        T(test_a_bad_variable_for_an_unset_field_is_reported_as_the_variable),
        T(test_a_config_of_another_size_is_refused_with_one_line),
        T(test_null_config_is_d9_init),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
