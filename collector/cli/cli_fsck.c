/*
 * cli_fsck.c — `d9 fsck [--repair] [--store DIR] [--quiet]`: check that a
 * store's SQLite index and its segment files agree, and optionally repair
 * them. The checking and repairing is fsck_run_ex() (collector/store/fsck.c);
 * this file parses the arguments, prints one line per finding or action and
 * a summary, and maps the outcome to the exit status.
 *
 * Called by main.c through the D9_COMMANDS table.
 *
 * The one d9 subcommand that may write to a store, and only with --repair:
 * fsck_run refuses a repair (-EBUSY) while a running collector holds the
 * index, so it never races the writer. Without --repair nothing is changed.
 * Must never: report "clean" when a problem was found, or exit 0 after a
 * repair that failed.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "collector/cli/cli.h"
#include "collector/store/fsck.h"
#include "collector/store/idx.h"

enum { FSCK_OPT_REPAIR = CLI_OPT_FIRST_PRIVATE, FSCK_OPT_QUIET };

struct fsck_opts {
    int repair;
    int quiet;
};

static const char usage[] =
"NAME\n"
"    d9 fsck - check that a store's index and segment files agree; repair them\n"
"\n"
"SYNOPSIS\n"
"    d9 [--store DIR] fsck [--repair] [--quiet]\n"
"\n"
"DESCRIPTION\n"
"    Verifies every segment row of STORE/index.sqlite against its file (the\n"
"    file exists, is a whole segment with valid checksums, and its header,\n"
"    footer and blocks agree with the row), looks for sealed segment files\n"
"    that have no row, and for temporary files (.tmp.*) left by a collector\n"
"    that crashed. Temporary files a running collector is still writing are\n"
"    listed as in use and are not problems. A segment whose only damage is\n"
"    data blocks that fail their checksum (their headers intact) is listed\n"
"    as having unreadable blocks and kept: every reader leaves out those\n"
"    blocks and only those. Its stored rollups, made when it was sealed,\n"
"    still count them: reported as bad rollups. Prints one line per finding\n"
"    (path: what is wrong) and a summary line. Without --repair the store is\n"
"    not modified.\n"
"\n"
"    With --repair, fixes what it found: rows whose file is missing or\n"
"    corrupt are deleted, rows that disagree with a good file are rebuilt,\n"
"    sealed files without a row are indexed from their contents, temporary\n"
"    files are salvaged (every whole block kept) and indexed, or removed\n"
"    when nothing in them is recoverable, rollups are rebuilt from the\n"
"    readable blocks. Corrupt segment files are renamed\n"
"    to NAME.corrupt, never deleted. A repair is refused while a collector\n"
"    is running on the store (stop it first; it recovers the same temporary\n"
"    files itself at start-up). Run d9 fsck again afterwards: it should\n"
"    report the store clean.\n"
"\n"
"OPTIONS\n"
"    --repair        repair the problems found (writes to the store).\n"
"    --quiet         print only the summary line.\n"
"    --store DIR     store directory (default: $D9_STORE, else /var/lib/dial9\n"
"                    as root, else ./d9-store).\n"
"    -h, --help      this help.\n"
"\n"
"EXAMPLES\n"
"    d9 fsck                          # is the store consistent?\n"
"    systemctl stop d9collectd && d9 fsck --repair && d9 fsck\n"
"    d9 --store /mnt/copied-store fsck\n"
"\n"
"EXIT STATUS\n"
"    0   the store is clean (without --repair), or every problem found was\n"
"        repaired (with --repair)\n"
"    1   problems found (without --repair), a repair failed, or the check\n"
"        could not run (no store, unreadable index, collector running)\n"
"    2   bad usage\n";

static int priv(struct cli_env *env, void *arg, int opt, const char *val)
{
    struct fsck_opts *o = arg;
    (void)val;
    switch (opt) {
    case FSCK_OPT_REPAIR:
        o->repair = 1;
        return 0;
    case FSCK_OPT_QUIET:
        o->quiet = 1;
        return 0;
    default:
        cli_usage_error(env, "unexpected option");
        return -1;
    }
}

static void finding(void *arg, const char *path, const char *what)
{
    const struct fsck_opts *o = arg;
    if (!o->quiet)
        printf("%s: %s\n", path ? path : "(store)", what ? what : "");
}

static void summary(const struct fsck_report *r, int repair, uint64_t problems)
{
    printf("%s: %" PRIu64 " rows, %" PRIu64 " files, %" PRIu64 " ok; %" PRIu64 " missing, %"
           PRIu64 " mismatched, %" PRIu64 " corrupt, %" PRIu64 " with unreadable blocks, %"
           PRIu64 " unindexed, %" PRIu64
           " temp files (%" PRIu64 " in use), %" PRIu64 " impossible time ranges, %" PRIu64
           " bad rollups",
           problems ? (repair ? "repaired" : "problems") : "clean", r->rows, r->files, r->ok,
           r->missing, r->mismatched, r->corrupt, r->damaged, r->orphans, r->temps,
           r->temps_in_use, r->bad_times, r->bad_rollups);
    if (repair)
        printf("; %" PRIu64 " rows deleted, %" PRIu64 " files indexed, %" PRIu64
               " salvaged, %" PRIu64 " temp files removed, %" PRIu64 " renamed .corrupt, %"
               PRIu64 " rollups rebuilt, %" PRIu64 " repairs failed",
               r->rows_deleted, r->reindexed, r->salvaged, r->temps_removed, r->quarantined,
               r->rollups_rebuilt, r->errors);
    printf("\n");
}

CLI_DECLARE_CMD(fsck)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP,
        CLI_OPTE_STORE,
        { "repair", 0, NULL, FSCK_OPT_REPAIR },
        { "quiet", 0, NULL, FSCK_OPT_QUIET },
        CLI_OPTE_END,
    };
    struct cli_args a;
    struct fsck_opts o = { 0, 0 };
    cli_args_init(&a);
    int rc = cli_getopt(env, &a, argc, argv, opts, usage, priv, &o);
    if (rc != 0)
        return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;

    struct fsck_report r;
    memset(&r, 0, sizeof r);
    rc = fsck_run_ex(env->store, o.repair, &r, finding, &o);
    if (rc == -ENOENT) {
        char why[256] = "";
        if (idx_probe(env->store, why, sizeof why) == -ENOENT || !why[0])
            snprintf(why, sizeof why, "no %s", IDX_FILE_NAME);
        return cli_fail(env, "%s: not a d9 store (%s); nothing was checked or changed (see --store)",
                        env->store, why);
    }
    if (rc == -EBUSY)
        return cli_fail(env, "%s: a running collector holds the store; stop it before "
                        "--repair (it recovers crashed segments itself at start-up)",
                        env->store);
    if (rc < 0)
        return cli_fail(env, "%s: cannot check the store: %s", env->store, strerror(-rc));
    uint64_t problems = fsck_problems(&r);
    fflush(stdout);
    summary(&r, o.repair, problems);
    if (o.repair)
        return r.errors ? cli_fail(env, "%" PRIu64 " repairs failed (see above)", r.errors)
                        : CLI_EXIT_OK;
    return problems ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
