/*
 * ctl_client.h — the request client of d9collectd's control channel, used by
 * the d9 CLI (`d9 status`, `d9 flush`) and tests.
 *
 * ctl_client_request() connects a ZMQ_DEALER to the endpoint, sends one d9.Request
 * as [empty][Request] and waits up to timeout_ms for [empty][Reply] (the
 * server's side is collector/ctl/ctl_server.h). Must never: wait longer
 * than timeout_ms per step, or leave a socket or context behind.
 */
#ifndef D9_CLI_CTL_CLIENT_H
#define D9_CLI_CTL_CLIENT_H

#include "proto/d9.pb-c.h"

#define CTL_CLIENT_TIMEOUT_MS_DEFAULT 5000

/*
 * Client helper: send req to the collector at endpoint and wait for the
 * reply. On success *reply is set (free with ctl_client_reply_free) and 0 returned
 * (check (*reply)->error for the collector's verdict). Errors: -ENOENT the
 * ipc socket does not exist (collector not running), -ETIMEDOUT no reply in
 * timeout_ms, -EBADMSG undecodable reply, -errno from libzmq.
 */
int ctl_client_request(const char *endpoint, const D9__Request *req, D9__Reply **reply,
                int timeout_ms);
void ctl_client_reply_free(D9__Reply *reply);


#endif /* D9_CLI_CTL_CLIENT_H */
