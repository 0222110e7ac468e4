/*
 * prog_uvmix.c — a plain libuv program (no d9 in it) for the preload tests:
 * a TCP echo over 127.0.0.1 (listen, connect, write, read, shutdown, close),
 * timers re-armed from their callback, uv_queue_work, an fs request,
 * getaddrinfo, an async sent from another thread, an idle handle, and
 * NLOOPS more loops on their own threads. Prints what happened (the same
 * lines with or without libd9preload) and exits with the sum of uv_run's
 * and uv_loop_close's results (0). With --hold it waits for a line (or EOF)
 * on stdin before exiting, so that a test can let the collector adopt it
 * first (the collector reads a process's mappings while it is alive).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define NLOOPS 3
#define TICKS 10
#define MSG "ping over libuv"

static uv_loop_t *loop;
static uv_tcp_t server, client, accepted;
static uv_connect_t conn;
static uv_write_t wr;
static uv_shutdown_t sh;
static uv_timer_t timer;
static uv_work_t work;
static uv_fs_t fsreq;
static uv_getaddrinfo_t gai;
static uv_async_t async;
static uv_idle_t idle;
static char rbuf[64];
static size_t rlen;
static int ticks, works, afters, fs_ok, gai_ok, asyncs, idles, closes;

static void on_close(uv_handle_t *h) { (void)h; closes++; }
static void on_alloc(uv_handle_t *h, size_t n, uv_buf_t *b)
{
    (void)h;
    (void)n;
    *b = uv_buf_init(rbuf + rlen, (unsigned)(sizeof rbuf - rlen));
}
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    (void)b;
    if (n > 0)
        rlen += (size_t)n;
    else if (n < 0)
        uv_close((uv_handle_t *)s, on_close);
}
static void on_connection(uv_stream_t *srv, int status)
{
    if (status != 0)
        return;
    uv_tcp_init(loop, &accepted);
    if (uv_accept(srv, (uv_stream_t *)&accepted) == 0)
        uv_read_start((uv_stream_t *)&accepted, on_alloc, on_read);
    uv_close((uv_handle_t *)srv, on_close);
}
static void on_shutdown(uv_shutdown_t *r, int status)
{
    (void)status;
    uv_close((uv_handle_t *)r->handle, on_close);
}
static void on_write(uv_write_t *r, int status)
{
    (void)status;
    uv_shutdown(&sh, r->handle, on_shutdown);
}
static void on_connect(uv_connect_t *r, int status)
{
    if (status != 0)
        return;
    uv_buf_t b = uv_buf_init((char *)MSG, (unsigned)strlen(MSG));
    uv_write(&wr, r->handle, &b, 1, on_write);
}
static void on_tick(uv_timer_t *t)
{
    if (++ticks < TICKS)
        uv_timer_start(t, on_tick, 1, 0);       /* re-armed from its own callback */
    else
        uv_close((uv_handle_t *)t, on_close);
}
static void on_work(uv_work_t *r) { (void)r; works++; }
static void on_after_work(uv_work_t *r, int status) { (void)r; afters += status == 0; }
static void on_fs(uv_fs_t *r)
{
    fs_ok = r->result == 0;
    uv_fs_req_cleanup(r);
}
static void on_gai(uv_getaddrinfo_t *r, int status, struct addrinfo *res)
{
    (void)r;
    gai_ok = status == 0 && res != NULL;
    uv_freeaddrinfo(res);
}
static void on_async(uv_async_t *a)
{
    asyncs++;
    uv_close((uv_handle_t *)a, on_close);
}
static void on_idle(uv_idle_t *i)
{
    if (++idles == 5)
        uv_close((uv_handle_t *)i, on_close);
}
static void *sender(void *arg)
{
    (void)arg;
    uv_async_send(&async);
    return NULL;
}

struct side { uv_loop_t loop; uv_timer_t t; int ticks, rc; };
static void side_tick(uv_timer_t *t)
{
    struct side *s = (struct side *)((char *)t - offsetof(struct side, t));
    if (++s->ticks == TICKS)
        uv_close((uv_handle_t *)t, NULL);
}
static void *side_loop(void *arg)
{
    struct side *s = arg;
    uv_loop_init(&s->loop);
    uv_timer_init(&s->loop, &s->t);
    uv_timer_start(&s->t, side_tick, 0, 1);
    s->rc = uv_run(&s->loop, UV_RUN_DEFAULT) + uv_loop_close(&s->loop);
    return NULL;
}

int main(int argc, char **argv)
{
    struct side sides[NLOOPS];
    pthread_t th[NLOOPS + 1];
    memset(sides, 0, sizeof sides);
    for (int i = 0; i < NLOOPS; i++)
        pthread_create(&th[i], NULL, side_loop, &sides[i]);

    loop = uv_default_loop();
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", 0, &addr);
    uv_tcp_init(loop, &server);
    uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0);
    int alen = sizeof addr;
    uv_tcp_getsockname(&server, (struct sockaddr *)&addr, &alen);
    if (uv_listen((uv_stream_t *)&server, 8, on_connection) != 0)
        return 2;
    uv_tcp_init(loop, &client);
    uv_tcp_connect(&conn, &client, (const struct sockaddr *)&addr, on_connect);
    uv_timer_init(loop, &timer);
    uv_timer_start(&timer, on_tick, 1, 0);
    uv_queue_work(loop, &work, on_work, on_after_work);
    uv_fs_stat(loop, &fsreq, "/", on_fs);
    struct addrinfo hints = { .ai_family = AF_INET, .ai_flags = AI_NUMERICHOST };
    uv_getaddrinfo(loop, &gai, on_gai, "127.0.0.1", NULL, &hints);
    uv_async_init(loop, &async, on_async);
    uv_idle_init(loop, &idle);
    uv_idle_start(&idle, on_idle);
    pthread_create(&th[NLOOPS], NULL, sender, NULL);

    int rc = uv_run(loop, UV_RUN_DEFAULT);
    pthread_join(th[NLOOPS], NULL);
    int side_ticks = 0;
    for (int i = 0; i < NLOOPS; i++) {
        pthread_join(th[i], NULL);
        side_ticks += sides[i].ticks;
        rc += sides[i].rc;
    }
    rc += uv_loop_close(loop);
    printf("echo=%.*s\n", (int)rlen, rbuf);
    printf("ticks=%d works=%d afters=%d fs=%d gai=%d asyncs=%d idles=%d closes=%d side_ticks=%d\n",
           ticks, works, afters, fs_ok, gai_ok, asyncs, idles, closes, side_ticks);
    /* the preload passes settings to the agent through the environment: it must be left as it was */
    const char *smp = getenv("DIAL9_SAMPLER");
    printf("DIAL9_SAMPLER=%s\n", smp ? smp : "(unset)");
    printf("rc=%d\n", rc);
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "--hold") == 0)
        (void)getchar();
    return rc;
}
