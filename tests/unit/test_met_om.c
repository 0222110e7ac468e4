/*
 * test_met_om.c — the OpenMetrics exposition of --metrics
 * (collector/daemon/met_om.c): the Accept header's choice, the rewrite of
 * the 0.0.4 text, and a parser-level check of a full render (every family
 * of both formats well formed: one TYPE per family, samples named for
 * their family's type; OpenMetrics: unique family names, counters named
 * NAME_total in family NAME, UNIT matching the name, "# EOF" last).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "collector/daemon/met.h"
#include "collector/daemon/met_om.h"
#include "shm/d9_abi.h"

/* ---- Accept ------------------------------------------------------------------------- */

static void accept_picks_openmetrics_only_when_preferred(void **state)
{
    (void)state;
    /* Prometheus 2.x's default scrape header */
    assert_true(met_om_wanted("application/openmetrics-text;version=1.0.0,application/"
                              "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;"
                              "q=0.5,*/*;q=0.1"));
    assert_true(met_om_wanted("application/openmetrics-text; version=1.0.0"));
    assert_true(met_om_wanted("Application/OpenMetrics-Text"));
    assert_true(met_om_wanted("text/plain;q=0.2, application/openmetrics-text;q=0.3"));
    assert_true(met_om_wanted("application/openmetrics-text;version=0.0.1"));
    assert_false(met_om_wanted(NULL));
    assert_false(met_om_wanted(""));
    assert_false(met_om_wanted("*/*"));
    assert_false(met_om_wanted("text/plain;version=0.0.4"));
    assert_false(met_om_wanted("application/openmetrics-text;version=2.0.0"));
    assert_false(met_om_wanted("application/openmetrics-text;q=0"));
    assert_false(met_om_wanted("application/openmetrics-text;q=0.4,*/*;q=0.5"));
    assert_false(met_om_wanted("application/openmetrics-text;q=abc"));
    assert_false(met_om_wanted("application/openmetrics-text;q=1.5"));
    assert_false(met_om_wanted(";;;,,,=;q=;version"));
    /* equal preference: OpenMetrics */
    assert_true(met_om_wanted("text/plain, application/openmetrics-text"));
    /* a header past the bound is not read */
    char big[MET_OM_ACCEPT_MAX + 64];
    memset(big, ' ', sizeof big);
    memcpy(big + sizeof big - 40, "application/openmetrics-text", 28);
    big[sizeof big - 1] = 0;
    assert_false(met_om_wanted(big));
}

/* ---- the rewrite -------------------------------------------------------------------- */

static void families_are_renamed_with_units_and_eof(void **state)
{
    (void)state;
    struct met_text in, out;
    met_text_init(&in);
    met_text_init(&out);
    met_text_family(&in, "d9_x_seconds_total", "counter", "Time \"in\" x.");
    met_text_ns(&in, "d9_x_seconds_total", NULL, 0, 1500000000ull);
    met_text_family(&in, "d9_y_bytes", "gauge", "Y.");
    struct met_text_label l[1] = { { "comm", "a\"b" } };
    met_text_u64(&in, "d9_y_bytes", l, 1, 7);
    met_text_family(&in, "d9_z", "summary", "Z.");
    met_text_summary_ns(&in, "d9_z", NULL, 0, 2, 3);
    assert_int_equal(met_om_from_text(in.buf, in.len, &out), 0);
    assert_string_equal(out.buf,
                        "# TYPE d9_x_seconds counter\n"
                        "# UNIT d9_x_seconds seconds\n"
                        "# HELP d9_x_seconds Time \\\"in\\\" x.\n"
                        "d9_x_seconds_total 1.5\n"
                        "# TYPE d9_y_bytes gauge\n"
                        "# UNIT d9_y_bytes bytes\n"
                        "# HELP d9_y_bytes Y.\n"
                        "d9_y_bytes{comm=\"a\\\"b\"} 7\n"
                        "# TYPE d9_z summary\n"
                        "# HELP d9_z Z.\n"
                        "d9_z_sum 0.000000003\n"
                        "d9_z_count 2\n"
                        "# EOF\n");
    met_text_free(&in);
    met_text_free(&out);
}

static void empty_text_is_just_eof(void **state)
{
    (void)state;
    struct met_text out;
    met_text_init(&out);
    assert_int_equal(met_om_from_text("", 0, &out), 0);
    assert_string_equal(out.buf, "# EOF\n");
    met_text_free(&out);
}

/* ---- a parser for both formats ------------------------------------------------------ */

#define FAM_MAX 128

struct fam {
    char name[96], type[96];
};

static int ends(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* The sample's metric name belongs to family f of its type. */
static int sample_fits(const struct fam *f, const char *metric, int om)
{
    char want[128];
    const char *type = f->type;
    if (strcmp(type, "counter") == 0) {
        snprintf(want, sizeof want, om ? "%s_total" : "%s", f->name);
        return strcmp(metric, want) == 0 && (om || ends(f->name, "_total"));
    }
    if (strcmp(type, "gauge") == 0)
        return strcmp(metric, f->name) == 0;
    static const char *const hs[] = { "_bucket", "_sum", "_count" };
    int hist = strcmp(type, "histogram") == 0;
    if (!hist && strcmp(type, "summary") != 0)
        return 0;
    for (unsigned i = hist ? 0 : 1; i < 3; i++) {
        snprintf(want, sizeof want, "%s%s", f->name, hs[i]);
        if (strcmp(metric, want) == 0)
            return 1;
    }
    return 0;
}

/* Checks the whole exposition; fails the test at the first problem.
 * Returns the number of families. */
static int check_exposition(const char *text, int om)
{
    static struct fam fams[FAM_MAX];
    int nf = 0, cur = -1, saw_eof = 0, line_no = 0;
    const char *s = text;
    char pending_help[96] = "";
    while (*s) {
        const char *nl = strchr(s, '\n');
        assert_non_null(nl);                    /* whole lines only */
        char line[1024];
        size_t n = (size_t)(nl - s);
        assert_true(n > 0 && n < sizeof line);  /* no blank lines */
        memcpy(line, s, n);
        line[n] = 0;
        s = nl + 1;
        line_no++;
        assert_false(saw_eof);                  /* nothing after # EOF */
        char a[96], b[96];
        if (om && strcmp(line, "# EOF") == 0) {
            saw_eof = 1;
            continue;
        }
        if (sscanf(line, "# TYPE %95s %95s", a, b) == 2) {
            for (int i = 0; i < nf; i++)
                assert_string_not_equal(fams[i].name, a);      /* unique families */
            if (!om)
                assert_string_equal(pending_help, a);          /* 0.0.4: HELP then TYPE */
            assert_true(nf < FAM_MAX);
            snprintf(fams[nf].name, sizeof fams[nf].name, "%s", a);
            snprintf(fams[nf].type, sizeof fams[nf].type, "%s", b);
            cur = nf++;
            continue;
        }
        if (sscanf(line, "# HELP %95s", a) == 1) {
            if (om) {
                assert_true(cur >= 0);
                assert_string_equal(fams[cur].name, a);
            } else {
                snprintf(pending_help, sizeof pending_help, "%s", a);
            }
            continue;
        }
        if (sscanf(line, "# UNIT %95s %95s", a, b) == 2) {
            assert_true(om);
            assert_true(cur >= 0);
            assert_string_equal(fams[cur].name, a);
            char suf[100];
            snprintf(suf, sizeof suf, "_%s", b);
            assert_true(ends(a, suf));
            continue;
        }
        assert_true(line[0] != '#');
        /* a sample: NAME[{labels}] VALUE */
        size_t k = strcspn(line, "{ ");
        assert_true(k > 0 && k < sizeof a);
        memcpy(a, line, k);
        a[k] = 0;
        assert_true(cur >= 0);
        if (!sample_fits(&fams[cur], a, om)) {
            print_error("line %d: sample %s outside family %s (%s)\n", line_no, a,
                        fams[cur].name, fams[cur].type);
            fail();
        }
        const char *v = strrchr(line, ' ');
        assert_non_null(v);
        char *end;
        double d = strtod(v + 1, &end);
        assert_true(*end == 0 && d >= 0);
    }
    assert_int_equal(saw_eof, om);
    return nf;
}

static void poll_pair(uint8_t *buf, size_t *n, uint64_t ts, uint16_t wk)
{
    struct d9_rec_poll_start st = { .h = { .len = sizeof st, .type = D9_REC_POLL_START,
                                           .ts = ts }, .task = 1, .runtime = 3, .worker = wk };
    struct d9_rec_poll_end en = { .h = { .len = sizeof en, .type = D9_REC_POLL_END,
                                         .ts = ts + 5000 }, .task = 1, .runtime = 3, .worker = wk };
    memcpy(buf + *n, &st, sizeof st);
    *n += sizeof st;
    memcpy(buf + *n, &en, sizeof en);
    *n += sizeof en;
}

static void full_render_is_well_formed_in_both_formats(void **state)
{
    (void)state;
    struct met m;
    met_init(&m);
    static uint8_t buf[(MET_WORKERS_MAX + 4) * 2 * 64];
    size_t n = 0;
    for (uint16_t w = 0; w < MET_WORKERS_MAX + 2; w++)     /* "other" worker too */
        poll_pair(buf, &n, 1000000 + w * 10000ull, w);
    for (uint32_t pid = 1; pid <= MET_PROCS_MAX + 2; pid++) { /* "other" process too */
        struct met_proc *p = met_proc_new(&m, pid, "a\"pp");
        assert_non_null(p);
        met_runtime_name(p, 3, "rt");
        met_feed(p, buf, n);
        p->records = 9;
        p->lost_full = 2;
    }
    struct met_health h = { .uptime_ns = 1500000000ull, .processes = 1, .shipping = 1,
                            .flight = 1, .triggers = { [0] = { 1, 2 } } };
    assert_int_equal(met_render(&m, &h), 0);
    int nf = check_exposition(m.text.buf, 0);
    struct met_text om;
    met_text_init(&om);
    assert_int_equal(met_om_from_text(m.text.buf, m.text.len, &om), 0);
    assert_int_equal(check_exposition(om.buf, 1), nf);      /* every family kept */
    assert_non_null(strstr(om.buf, "# TYPE d9_worker_busy_seconds counter\n"
                                   "# UNIT d9_worker_busy_seconds seconds\n"));
    assert_non_null(strstr(om.buf, "\nd9_worker_busy_seconds_total{"));
    assert_non_null(strstr(om.buf, "# TYPE d9_worker_poll_duration_seconds histogram\n"));
    assert_non_null(strstr(om.buf, "le=\"+Inf\"} "));
    assert_true(om.len >= 6 && strcmp(om.buf + om.len - 6, "# EOF\n") == 0);
    met_text_free(&om);
    met_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accept_picks_openmetrics_only_when_preferred),
        cmocka_unit_test(families_are_renamed_with_units_and_eof),
        cmocka_unit_test(empty_text_is_just_eof),
        cmocka_unit_test(full_render_is_well_formed_in_both_formats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
