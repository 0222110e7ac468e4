/*
 * q_names.h — the names of a process's ids (runtime, location, schema,
 * thread, comm) when no scan callback is running: the metadata of its
 * newest segment (a superset of the older ones' metadata), opened once per
 * process and cached until q_names_close.
 *
 * Called by the readers that print after a scan (top-polls, sched, d9 sql's
 * tables, d9 flame's fallback to the agent's loaded objects). Must never:
 * write to the store; trust a segment (seg_reader validates every entry).
 */
#ifndef D9_COL_Q_NAMES_H
#define D9_COL_Q_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include "collector/query/q_store.h"
#include "shm/meta.h"

struct q_names;
int q_names_open(struct q_store *s, struct q_names **out);
void q_names_close(struct q_names *n);
/* The loaded objects the agent published for process_id (D9_META_OBJECT
 * entries of its segments' metadata): what symbolizes its stacks when the
 * collector recorded no memory maps. fn returns non-zero to stop. */
int q_names_objects(struct q_names *n, int64_t process_id,
                            int (*fn)(void *arg, const struct shm_meta_entry *e), void *arg);
/* The same for its location entries (D9_META_LOCATION): the shim's
 * trampoline entries (D9_LOC_TRAMP_FILE) among them. */
int q_names_locations(struct q_names *n, int64_t process_id,
                      int (*fn)(void *arg, const struct shm_meta_entry *e), void *arg);
/* Each returns buf, filled with the name or "#<id>" / "?" when unknown. */
const char *q_names_location(struct q_names *n, int64_t process_id, uint32_t loc,
                                     char *buf, size_t cap);
const char *q_names_runtime(struct q_names *n, int64_t process_id, uint16_t rt, char *buf,
                              size_t cap);
const char *q_names_thread(struct q_names *n, int64_t process_id, uint32_t ring,
                             uint32_t generation, char *buf, size_t cap);
const char *q_names_comm(struct q_names *n, int64_t process_id, char *buf, size_t cap);
/* A metadata entry (D9_META_LOCATION or D9_META_SCHEMA) of the process by
 * id, from its newest segment; NULL when unknown. Valid until
 * q_names_close. */
const struct shm_meta_entry *q_names_meta(struct q_names *n, int64_t process_id,
                                                  uint16_t kind, uint32_t id);

#endif /* D9_COL_Q_NAMES_H */
