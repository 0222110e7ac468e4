/*
 * test_store_file.c — collector/store/store_file.c as a specification: a
 * store file is opened only when it is a regular file; a FIFO, a socket, a
 * directory or a symbolic link is refused at once (never blocking), with a
 * line that says what is there.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "collector/store/store_file.h"

struct fx {
    char dir[64];
    char path[128];
};

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st; (void)flag; (void)f;
    return remove(p);
}

static int setup(void **state)
{
    struct fx *fx = calloc(1, sizeof *fx);
    strcpy(fx->dir, "/tmp/d9sfile.XXXXXX");
    assert_non_null(mkdtemp(fx->dir));
    snprintf(fx->path, sizeof fx->path, "%s/f", fx->dir);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fx *fx = *state;
    nftw(fx->dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
    free(fx);
    return 0;
}

static void a_regular_file_is_opened_for_reading(void **state)
{
    struct fx *fx = *state;
    FILE *f = fopen(fx->path, "w");
    fputs("data", f);
    fclose(f);
    char why[128] = "x";
    int fd = store_file_open(fx->path, why, sizeof why);
    assert_true(fd >= 0);
    assert_string_equal(why, "");
    char buf[8];
    assert_int_equal(read(fd, buf, sizeof buf), 4);
    assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);
    int exists = 0;
    assert_int_equal(store_file_check(fx->path, &exists, why, sizeof why), 0);
    assert_int_equal(exists, 1);
}

/* without O_NONBLOCK this open would wait for a writer forever */
static void a_fifo_is_refused_without_blocking(void **state)
{
    struct fx *fx = *state;
    assert_int_equal(mkfifo(fx->path, 0600), 0);
    char why[128];
    assert_int_equal(store_file_open(fx->path, why, sizeof why), -EINVAL);
    assert_string_equal(why, "a FIFO, not a regular file");
    assert_int_equal(store_file_check(fx->path, NULL, why, sizeof why), -EINVAL);
}

static void a_symbolic_link_is_never_followed(void **state)
{
    struct fx *fx = *state;
    char target[160];
    snprintf(target, sizeof target, "%s/target", fx->dir);
    FILE *f = fopen(target, "w");
    fclose(f);
    assert_int_equal(symlink(target, fx->path), 0);
    char why[128];
    assert_int_equal(store_file_open(fx->path, why, sizeof why), -ELOOP);
    assert_non_null(strstr(why, "symbolic link"));
    assert_int_equal(store_file_check(fx->path, NULL, why, sizeof why), -ELOOP);
}

static void a_socket_and_a_directory_are_named_for_what_they_are(void **state)
{
    struct fx *fx = *state;
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    assert_true(strlen(fx->path) < sizeof a.sun_path);
    memcpy(a.sun_path, fx->path, strlen(fx->path) + 1);
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    char why[128];
    assert_int_equal(store_file_open(fx->path, why, sizeof why), -EINVAL);
    assert_string_equal(why, "a socket, not a regular file");
    close(s);
    assert_int_equal(store_file_open(fx->dir, why, sizeof why), -EINVAL);
    assert_string_equal(why, "a directory, not a regular file");
}

static void a_missing_file_is_an_error_to_open_and_absent_to_check(void **state)
{
    struct fx *fx = *state;
    char why[128];
    assert_int_equal(store_file_open(fx->path, why, sizeof why), -ENOENT);
    int exists = 1;
    assert_int_equal(store_file_check(fx->path, &exists, why, sizeof why), 0);
    assert_int_equal(exists, 0);
    assert_int_equal(store_file_open(NULL, NULL, 0), -EINVAL);
}

/* Whether another process sees a lock on byte 0 of path (F_GETLK). */
static int locked_for_others(const char *path)
{
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(path, O_RDWR);
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
        _exit(fd >= 0 && fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK ? 0 : 1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* SQLite keeps its locks on the index's -shm as fcntl locks, which closing
 * any descriptor of the file would drop (another process could then
 * truncate the mapped file under the collector): the check never opens */
static void checking_a_file_keeps_this_process_locks_on_it(void **state)
{
    struct fx *fx = *state;
    int fd = open(fx->path, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
    assert_int_equal(fcntl(fd, F_SETLK, &fl), 0);
    assert_true(locked_for_others(fx->path));
    char why[128];
    int exists = 0;
    assert_int_equal(store_file_check(fx->path, &exists, why, sizeof why), 0);
    assert_true(exists);
    assert_true(locked_for_others(fx->path));
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_regular_file_is_opened_for_reading, setup, teardown),
        cmocka_unit_test_setup_teardown(checking_a_file_keeps_this_process_locks_on_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_fifo_is_refused_without_blocking, setup, teardown),
        cmocka_unit_test_setup_teardown(a_symbolic_link_is_never_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(a_socket_and_a_directory_are_named_for_what_they_are,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_missing_file_is_an_error_to_open_and_absent_to_check,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
