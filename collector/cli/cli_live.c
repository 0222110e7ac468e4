/*
 * cli_live.c — the reading commands' refresh of live data (see cli_live.h).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include "collector/cli/cli_live.h"
#include "collector/ctl/ctl_client.h"

int cli_live_refresh(const struct cli_env *env)
{
    char store[PATH_MAX];
    if (!env->endpoint[0] || !realpath(env->store, store))
        return 0;                   /* no store here: nothing a collector could refresh */
    D9__Flush fl = D9__FLUSH__INIT;
    fl.min_age_ns = CLI_LIVE_MIN_AGE_NS;
    fl.store = store;
    D9__Request req = D9__REQUEST__INIT;
    req.body_case = D9__REQUEST__BODY_FLUSH;
    req.flush = &fl;
    D9__Reply *rep = NULL;
    if (ctl_client_request(env->endpoint, &req, &rep, CLI_LIVE_WAIT_MS) < 0)
        return 0;
    int done = rep->error == 0;
    ctl_client_reply_free(rep);
    return done;
}

/* ---- the refresher of d9 serve ----------------------------------------------
 * One thread. poked: set by any thread (relaxed is enough: the flag only
 * says "someone asked", the refresh itself orders nothing), taken by the
 * thread with an exchange. stop: under mu, with cv to wake the thread. */
struct cli_live {
    const struct cli_env *env;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    atomic_bool poked;
};

static void *live_main(void *arg)
{
    struct cli_live *l = arg;
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += CLI_LIVE_PERIOD_MS / 1000;
        until.tv_nsec += (long)(CLI_LIVE_PERIOD_MS % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!l->stop && pthread_cond_timedwait(&l->cv, &l->mu, &until) != ETIMEDOUT)
            ;
        if (l->stop)
            break;
        if (!atomic_exchange_explicit(&l->poked, false, memory_order_relaxed))
            continue;
        pthread_mutex_unlock(&l->mu);
        cli_live_refresh(l->env);
        pthread_mutex_lock(&l->mu);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

struct cli_live *cli_live_start(const struct cli_env *env)
{
    struct cli_live *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->env = env;
    atomic_init(&l->poked, false);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0) {
        free(l);
        return NULL;
    }
    pthread_mutex_init(&l->mu, NULL);
    if (pthread_create(&l->thread, NULL, live_main, l) != 0) {
        pthread_cond_destroy(&l->cv);
        pthread_mutex_destroy(&l->mu);
        free(l);
        return NULL;
    }
    return l;
}

void cli_live_poke(struct cli_live *l)
{
    if (l)
        atomic_store_explicit(&l->poked, true, memory_order_relaxed);
}

void cli_live_stop(struct cli_live *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}
