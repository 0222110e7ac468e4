/*
 * fuzz_met_addr.c — the --metrics address (met_addr.c): any bytes either are
 * refused or give an IPv4 socket address whose text form parses back to the
 * same address and port.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collector/daemon/met_addr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = 0;
    struct sockaddr_in a, b;
    if (met_addr_parse(s, &a) == 0) {
        char text[64], host[INET_ADDRSTRLEN];
        if (a.sin_family != AF_INET || !inet_ntop(AF_INET, &a.sin_addr, host, sizeof host))
            abort();
        snprintf(text, sizeof text, "%s:%u", host, (unsigned)ntohs(a.sin_port));
        if (met_addr_parse(text, &b) != 0 || b.sin_addr.s_addr != a.sin_addr.s_addr ||
            b.sin_port != a.sin_port)
            abort();
        (void)met_addr_loopback(&a);
    }
    free(s);
    return 0;
}
