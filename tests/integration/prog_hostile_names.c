/*
 * prog_hostile_names.c — a traced program with hostile names, for the tests
 * that d9 never prints a terminal escape from a store. It defines one custom
 * event whose name, first field name and string value come from the
 * command line (tests pass ESC, CSI, U+009B and newlines) and emits it
 * EVENTS times. The agent refuses control bytes in names, so the program
 * publishes the schema with each control byte as '#' and then writes the
 * real names over those bytes in its own region's metadata log, as any
 * process may: the collector reads the hostile names.
 * Usage: prog_hostile_names EVENT FIELD VALUE. Prints its pid, then "ready"
 * once the region holds the hostile names, and exits when standard input
 * ends (so a test can start the collector before it exits).
 */
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agent/d9.h"

#define EVENTS      3
#define PLACEHOLDER '#'

static char *tame(const char *s)
{
    char *t = strdup(s);
    for (char *p = t; p && *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = PLACEHOLDER;
    return t;
}

/* Overwrite every NUL-terminated copy of tamed in map[0, n) with raw. */
static int patch(unsigned char *map, size_t n, const char *tamed, const char *raw)
{
    size_t len = strlen(tamed) + 1;
    int hits = 0;
    for (unsigned char *p = map; (p = memmem(p, n - (size_t)(p - map), tamed, len)); p += len) {
        memcpy(p, raw, len);
        hits++;
    }
    return hits;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: prog_hostile_names EVENT FIELD VALUE\n");
        return 2;
    }
    printf("%d\n", (int)getpid());
    fflush(stdout);
    if (d9_init() != 0) {
        fprintf(stderr, "prog_hostile_names: tracing did not start\n");
        return 1;
    }
    char *ev_name = tame(argv[1]), *field = tame(argv[2]);
    const d9_field fields[] = { D9_FIELD_STR(field), D9_FIELD_U64("n") };
    d9_schema ev = { ev_name, fields, 2, 0 };
    for (unsigned i = 0; i < EVENTS; i++)
        d9_emit(&ev, D9_STR(argv[3]), D9_U64(i));

    const char *dir = getenv("DIAL9_SHM_DIR") ? getenv("DIAL9_SHM_DIR") : "/dev/shm";
    char pat[4096];
    snprintf(pat, sizeof pat, "%s/d9.*.%d.*", dir, (int)getpid());
    glob_t g;
    if (glob(pat, 0, NULL, &g) != 0 || g.gl_pathc != 1) {
        fprintf(stderr, "prog_hostile_names: no region %s\n", pat);
        return 1;
    }
    int fd = open(g.gl_pathv[0], O_RDWR);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        perror(g.gl_pathv[0]);
        return 1;
    }
    unsigned char *map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    int a = patch(map, (size_t)st.st_size, ev_name, argv[1]);
    int b = patch(map, (size_t)st.st_size, field, argv[2]);
    if (a != 1 || b != 1) {
        fprintf(stderr, "prog_hostile_names: names found %d and %d times in the region\n", a, b);
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    while (getchar() != EOF)
        ;
    munmap(map, (size_t)st.st_size);
    close(fd);
    globfree(&g);
    free(ev_name);
    free(field);
    return 0;
}
