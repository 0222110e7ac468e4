/*
 * cli_flame.h — the folded stacks of `d9 flame` for other commands (d9
 * serve's flame graph of a window). The command itself is in cli_flame.c.
 *
 * Must never write to the store; memory is per distinct stack and address.
 */
#ifndef D9_COL_CLI_FLAME_H
#define D9_COL_CLI_FLAME_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "collector/cli/cli_store.h"

/* CPU (or off-CPU, weighted by the time off CPU) samples of pid in
 * [from, to], symbolized, as sorted folded lines "root;...;leaf N" on out.
 * *samples (may be NULL) = samples kept. 0 or -errno. */
int cli_flame_folded(struct cli_store *s, uint32_t pid, uint64_t from, uint64_t to, bool off_cpu,
                     FILE *out, uint64_t *samples);

#endif /* D9_COL_CLI_FLAME_H */
