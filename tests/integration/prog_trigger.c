/*
 * prog_trigger.c — a traced program for test_triggers.sh: emits
 * d9_trigger("first"), d9_trigger(NULL) and a trigger whose reason is 300
 * bytes (cut to 255), then exits. Prints its pid on stdout first.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "agent/d9.h"

int main(void)
{
    if (d9_init() != 0)
        return 2;
    printf("pid=%d\n", (int)getpid());
    fflush(stdout);
    char longr[301];
    memset(longr, 'r', 300);
    longr[300] = 0;
    d9_trigger("first");
    d9_trigger(NULL);
    d9_trigger(longr);
    d9_shutdown();
    return 0;
}
