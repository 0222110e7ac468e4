/*
 * met_addr.h — the address of --metrics: "PORT" (loopback, 127.0.0.1) or
 * "IPV4ADDR:PORT" ("localhost:PORT" is 127.0.0.1), port 0..65535
 * (0: the kernel picks a free one and the collector's log says which).
 *
 * Called by config.c (every value of the option or config key is checked
 * when it is set, so a bad one is refused before start-up) and d9collectd.c
 * (the socket address). Pure: no I/O, no name lookups (only "localhost"
 * is a name). The text is hostile (command line, config file): every byte
 * is checked, lengths bounded. Fuzzed by tests/fuzz/fuzz_met_addr.c.
 */
#ifndef D9_DAEMON_MET_ADDR_H
#define D9_DAEMON_MET_ADDR_H

#include <netinet/in.h>
#include <stdbool.h>

/* What a bad value is told (one line, after the value). */
#define MET_ADDR_EXPECT "expected PORT or IPV4ADDR:PORT with a port in 0..65535 " \
                        "(e.g. 9464 or 127.0.0.1:9464)"

/* Parse s into *sin. 0 or -EINVAL. */
int met_addr_parse(const char *s, struct sockaddr_in *sin);

/* true when sin is in 127.0.0.0/8. */
bool met_addr_loopback(const struct sockaddr_in *sin);

#endif /* D9_DAEMON_MET_ADDR_H */
