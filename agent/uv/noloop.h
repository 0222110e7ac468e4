/*
 * noloop.h — the preload shim's "no supported loop found" record: a
 * minimal region (one ring, never claimed, D9_REGION_F_NOLOOP, CLOSED) that
 * a running collector adopts, so `d9 ps` lists the process as "preloaded,
 * no supported loop found".
 *
 * Called by preload.c's destructor only, when DIAL9_LOG asked for the note
 * and no loop of a traced kind ever ran (the agent never started). Never
 * fails visibly, never blocks, never changes errno: every error leaves
 * nothing behind and says nothing.
 */
#ifndef D9_AGENT_UV_NOLOOP_H
#define D9_AGENT_UV_NOLOOP_H

/* Leave the record when a collector listens at the endpoint the agent
 * would report to (DIAL9_COLLECTOR, or the default). 1 made, 0 not. */
int noloop_record(void);

#endif /* D9_AGENT_UV_NOLOOP_H */
