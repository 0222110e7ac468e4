/*
 * cli_s3store.h — `d9 --store s3://BUCKET/PREFIX <command>`: a pull into a
 * local cache directory, then the command on the cache.
 *
 * Called by main.c, once the command is known and before it runs.
 *
 * What it does: finds the store the command will use (the global --store,
 * or a --store after the command, the last one winning as getopt would);
 * when it is an s3:// URL, pulls (cli_pull_run) into the cache directory
 * (--cache DIR, else cli_s3path_cache_dir under $XDG_CACHE_HOME or
 * ~/.cache) with the command's own --pid and --since as filters, and the
 * global --host, --s3-endpoint and --s3-region; then points env->store and
 * the command's --store argument at the cache. When the pull fails (the
 * server unreachable, access denied) but the cache already holds a store,
 * the command runs on it after a warning.
 *
 * Must never: run a pull for --help, or for a command that writes a store
 * (fsck); change any argument other than a --store value.
 */
#ifndef D9_CLI_S3STORE_H
#define D9_CLI_S3STORE_H

#include "collector/cli/cli.h"

/* argv[0] is the command. CLI_EXIT_OK to go on (with *argv possibly
 * replaced by a copy whose --store value is the cache), or the exit status
 * to return (the pull failed, bad usage). */
int cli_s3store_prepare(struct cli_env *env, int argc, char ***argv);

#endif /* D9_CLI_S3STORE_H */
