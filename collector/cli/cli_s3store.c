/*
 * cli_s3store.c — `d9 --store s3://...`: pull into a cache, then run the
 * command there (see cli_s3store.h).
 *
 * Called by main.c. Calls cli_pull_run and cli_s3path_cache_dir.
 * Must never: touch an argument other than --store's value.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "collector/cli/cli_pull.h"
#include "collector/cli/cli_s3path.h"
#include "collector/cli/cli_s3store.h"
#include "collector/store/idx.h"

#define S3STORE_SCHEME "s3://"

/* The value of option name ("--pid") at argv[*i] ("--pid N" or "--pid=N"),
 * advancing *i past a separate value; NULL when argv[*i] is not it. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0)
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] == 0 && *i + 1 < argc) {
        (*i)++;
        return argv[*i];
    }
    return NULL;
}

int cli_s3store_prepare(struct cli_env *env, int argc, char ***argvp)
{
    char **argv = *argvp;
    const char *store = env->store;
    int store_at = -1;                  /* argv index holding the --store value */
    bool store_eq = false, help = false;
    uint32_t pid = 0;
    uint64_t since_ns = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            help = true;
        } else if ((v = opt_value(argc, argv, &i, "--store"))) {
            store = v;
            store_eq = argv[i] != v;
            store_at = i;
        } else if ((v = opt_value(argc, argv, &i, "--pid"))) {
            uint64_t n;
            if (q_text_parse_u64(v, &n) == 0 && n > 0 && n <= UINT32_MAX)
                pid = (uint32_t)n;
        } else if ((v = opt_value(argc, argv, &i, "--since"))) {
            if (cli_parse_duration(v, &since_ns) < 0)
                since_ns = 0;           /* the command reports it */
        }
    }
    if (strncmp(store, S3STORE_SCHEME, strlen(S3STORE_SCHEME)) != 0 || help)
        return CLI_EXIT_OK;
    if (strcmp(env->cmd, "fsck") == 0)
        return cli_usage_error(env, "--store %s: fsck checks a local store (d9 pull DIR, then "
                               "d9 --store DIR fsck)", store);
    if (strcmp(env->cmd, "status") == 0 || strcmp(env->cmd, "flush") == 0 ||
        strcmp(env->cmd, "pull") == 0)
        return CLI_EXIT_OK;             /* they do not read a store */

    /* bucket and prefix, for the cache's name (s3_cfg_init checks them) */
    char url[CLI_PATH_MAX];
    snprintf(url, sizeof url, "%s", store);
    char *bucket = url + strlen(S3STORE_SCHEME);
    char *prefix = strchr(bucket, '/');
    if (prefix)
        *prefix++ = 0;
    static char cache[CLI_PATH_MAX];
    if (env->cache) {
        snprintf(cache, sizeof cache, "%s", env->cache);
    } else if (cli_s3path_cache_dir(getenv("XDG_CACHE_HOME"), getenv("HOME"), env->s3_endpoint,
                                    bucket, prefix ? prefix : "", env->s3_host, cache,
                                    sizeof cache) < 0) {
        return cli_fail(env, "no cache directory for %s: set $XDG_CACHE_HOME or $HOME, or "
                        "give --cache DIR", store);
    }
    struct cli_pull_opts o = { .url = store, .endpoint = env->s3_endpoint,
                               .region = env->s3_region, .host = env->s3_host, .pid = pid,
                               .from_ns = 0, .to_ns = INT64_MAX, .dir = cache, .quiet = true };
    if (since_ns) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        o.from_ns = (int64_t)now.tv_sec * 1000000000ll + now.tv_nsec - (int64_t)since_ns;
    }
    struct cli_pull_result r;
    int rc = cli_pull_run(env, &o, &r);
    if (rc == CLI_EXIT_USAGE)
        return rc;
    if (rc != CLI_EXIT_OK) {
        char ipath[CLI_PATH_MAX + 32];
        struct stat st;
        snprintf(ipath, sizeof ipath, "%s/%s", cache, IDX_FILE_NAME);
        if (r.listed == 0 && r.present == 0 && stat(ipath, &st) != 0)
            return rc;                  /* nothing to run the command on */
        cli_warn(env, "the cache %s may miss segments that could not be pulled: the output "
                 "below is without them", cache);
    }
    if (strlen(cache) >= sizeof env->store)
        return cli_fail(env, "cache path too long");
    strcpy(env->store, cache);
    if (store_at < 0)
        return CLI_EXIT_OK;
    /* the command parses its own --store again: give it the cache */
    static char eq_arg[CLI_PATH_MAX + 16];
    char **copy = calloc((size_t)argc + 1, sizeof *copy);
    if (!copy)
        return cli_fail(env, "out of memory");
    memcpy(copy, argv, (size_t)argc * sizeof *copy);
    if (store_eq) {
        snprintf(eq_arg, sizeof eq_arg, "--store=%s", cache);
        copy[store_at] = eq_arg;
    } else {
        copy[store_at] = cache;
    }
    *argvp = copy;                      /* lives until exit */
    return CLI_EXIT_OK;
}
