/*
 * test_serve_trig.c — d9 serve's /api/triggers (collector/serve/serve_trig.c)
 * byte for byte on an index with known triggers: the window and pid
 * filters, limit and total, a trigger without a window (null bounds), a
 * reason that needs JSON escaping, a reversed window refused, a typed
 * trigger's fields as the stored JSON object (null without them, or when
 * the stored text is no JSON object).
 */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "collector/query/q_store.h"
#include "collector/serve/serve_api.h"
#include "collector/store/idx.h"
#include "collector/store/idx_trig.h"

struct fx {
    char dir[128];
    struct q_store *s;
};

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st; (void)flag; (void)f;
    return remove(p);
}

static void add_f(struct idx *x, uint32_t pid, uint64_t t, const char *src, const char *reason,
                  const char *verdict, uint64_t w0, uint64_t w1, const char *fields)
{
    struct idx_trigger row = { .pid = pid, .t_ns = t, .source = src, .reason = reason,
                               .verdict = verdict, .win_t0_ns = w0, .win_t1_ns = w1,
                               .fields = fields };
    assert_int_equal(idx_trig_add(x, &row), 0);
}

static void add(struct idx *x, uint32_t pid, uint64_t t, const char *src, const char *reason,
                const char *verdict, uint64_t w0, uint64_t w1)
{
    add_f(x, pid, t, src, reason, verdict, w0, w1, NULL);
}

static int open_store(void **state, struct fx *fx)
{
    char why[256];
    assert_int_equal(q_store_open(&fx->s, fx->dir, why, sizeof why), 0);
    *state = fx;
    return 0;
}

static struct idx *new_store(struct fx **out)
{
    struct fx *fx = calloc(1, sizeof *fx);
    strcpy(fx->dir, "/tmp/d9servetrig.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    struct idx *x;
    assert_int_equal(idx_open(&x, fx->dir), 0);
    *out = fx;
    return x;
}

static int setup(void **state)
{
    struct fx *fx;
    struct idx *x = new_store(&fx);
    add(x, 10, 1000, "marker", "first", "kept", 500, 1500);
    add(x, 10, 2000, "shell", "say \"hi\"\n", "debounced", 0, 0);
    add(x, 11, 3000, "crash", "crashed (signal 6)", "merged", 500, 3500);
    idx_close(x);
    return open_store(state, fx);
}

/* Typed markers: fields as trigd.c writes them (strings escaped inside),
 * one without fields, and text that is no JSON object (a damaged or
 * hand-edited index). */
#define FIELDS_TYPED "{\"latency_ms\":250,\"path\":\"/k/\\\"250\\\"\",\"ok\":true," \
                     "\"ratio\":0.25,\"nan\":null}"
static int setup_fields(void **state)
{
    struct fx *fx;
    struct idx *x = new_store(&fx);
    add_f(x, 20, 1000, "marker", "slow", "kept", 500, 1500, FIELDS_TYPED);
    add_f(x, 20, 2000, "marker", "plain", "debounced", 0, 0, NULL);
    add_f(x, 20, 3000, "marker", "cut", "debounced", 0, 0, "{\"a\":1,");
    add_f(x, 20, 4000, "marker", "array", "debounced", 0, 0, "[1,2]");
    add_f(x, 20, 5000, "marker", "trail", "debounced", 0, 0, "{} x");
    idx_close(x);
    return open_store(state, fx);
}

static int teardown(void **state)
{
    struct fx *fx = *state;
    q_store_close(fx->s);
    nftw(fx->dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
    free(fx);
    return 0;
}

/* GET /api/triggers with the query args (key, value pairs, NULL-ended) */
static int get(struct fx *fx, char **body, ...)
{
    struct serve_params p;
    serve_api_params_init(&p);
    va_list ap;
    va_start(ap, body);
    const char *k;
    char why[128];
    while ((k = va_arg(ap, const char *)) != NULL)
        assert_int_equal(serve_api_param(&p, k, va_arg(ap, const char *), why, sizeof why), 0);
    va_end(ap);
    size_t len;
    FILE *f = open_memstream(body, &len);
    int st = serve_api(fx->s, "/api/triggers", &p, f);
    fclose(f);
    return st;
}

static void test_all_of_a_pid(void **state)
{
    char *b;
    assert_int_equal(get(*state, &b, "pid", "10", (char *)NULL), 200);
    assert_string_equal(b,
        "{\"pid\":10,\"from\":0,\"to\":18446744073709551615,\"total\":2,\"triggers\":[\n"
        "{\"id\":1,\"pid\":10,\"t\":1000,\"source\":\"marker\",\"reason\":\"first\","
        "\"verdict\":\"kept\",\"win_t0\":500,\"win_t1\":3500,\"fields\":null},\n"
        "{\"id\":2,\"pid\":10,\"t\":2000,\"source\":\"shell\",\"reason\":\"say \\\"hi\\\"\\n\","
        "\"verdict\":\"debounced\",\"win_t0\":null,\"win_t1\":null,\"fields\":null}\n]}\n");
    free(b);
}

static void test_window_limit_total(void **state)
{
    char *b;
    assert_int_equal(get(*state, &b, "from", "1500", "to", "3000", "limit", "1", (char *)NULL),
                     200);
    /* 2000 and 3000 by time, 1000 by its window (500..3500) reaching in */
    assert_non_null(strstr(b, "\"total\":3,"));
    assert_non_null(strstr(b, "\"t\":1000,"));
    assert_null(strstr(b, "\"t\":2000,"));
    free(b);
}

/* A view with no trigger inside: the kept windows reaching into it from
 * triggers before it are listed (d9 serve shades them); a view past every
 * window lists none. */
static void test_windows_reaching_in_from_outside(void **state)
{
    char *b;
    assert_int_equal(get(*state, &b, "from", "3200", "to", "4000", (char *)NULL), 200);
    assert_non_null(strstr(b, "\"total\":2,"));
    assert_non_null(strstr(b, "\"t\":1000,"));
    assert_non_null(strstr(b, "\"t\":3000,"));
    assert_null(strstr(b, "\"t\":2000,"));       /* debounced: no window */
    free(b);
    assert_int_equal(get(*state, &b, "from", "3501", "to", "9000", (char *)NULL), 200);
    assert_non_null(strstr(b, "\"total\":0,"));
    free(b);
    assert_int_equal(get(*state, &b, "pid", "11", "from", "100", "to", "499", (char *)NULL), 200);
    assert_non_null(strstr(b, "\"total\":0,"));
    free(b);
}

/* A typed trigger's fields come as the object stored, byte for byte; a
 * trigger without them, or whose stored text is no JSON object, has null. */
static void test_fields_as_stored(void **state)
{
    char *b;
    assert_int_equal(get(*state, &b, "pid", "20", (char *)NULL), 200);
    assert_string_equal(b,
        "{\"pid\":20,\"from\":0,\"to\":18446744073709551615,\"total\":5,\"triggers\":[\n"
        "{\"id\":1,\"pid\":20,\"t\":1000,\"source\":\"marker\",\"reason\":\"slow\","
        "\"verdict\":\"kept\",\"win_t0\":500,\"win_t1\":1500,\"fields\":" FIELDS_TYPED "},\n"
        "{\"id\":2,\"pid\":20,\"t\":2000,\"source\":\"marker\",\"reason\":\"plain\","
        "\"verdict\":\"debounced\",\"win_t0\":null,\"win_t1\":null,\"fields\":null},\n"
        "{\"id\":3,\"pid\":20,\"t\":3000,\"source\":\"marker\",\"reason\":\"cut\","
        "\"verdict\":\"debounced\",\"win_t0\":null,\"win_t1\":null,\"fields\":null},\n"
        "{\"id\":4,\"pid\":20,\"t\":4000,\"source\":\"marker\",\"reason\":\"array\","
        "\"verdict\":\"debounced\",\"win_t0\":null,\"win_t1\":null,\"fields\":null},\n"
        "{\"id\":5,\"pid\":20,\"t\":5000,\"source\":\"marker\",\"reason\":\"trail\","
        "\"verdict\":\"debounced\",\"win_t0\":null,\"win_t1\":null,\"fields\":null}\n]}\n");
    free(b);
}

static void test_reversed_window(void **state)
{
    char *b;
    assert_int_equal(get(*state, &b, "from", "5", "to", "4", (char *)NULL), 400);
    assert_non_null(strstr(b, "reversed window"));
    free(b);
}

int main(void)
{
    const struct CMUnitTest t[] = {
        cmocka_unit_test_setup_teardown(test_all_of_a_pid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_window_limit_total, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reversed_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_windows_reaching_in_from_outside, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fields_as_stored, setup_fields, teardown),
    };
    return cmocka_run_group_tests(t, NULL, NULL);
}
