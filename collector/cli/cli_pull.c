/*
 * cli_pull.c — `d9 pull s3://BUCKET/PREFIX DIR`: a host's shipped segments
 * into a local store (see cli_pull.h for the steps and invariants).
 *
 * Called by main.c's command table (cli_pull_cmd) and cli_s3store.c
 * (cli_pull_run, for `d9 --store s3://...`).
 * Calls the S3 client (collector/s3/), the key layout (cli_s3path.c) and
 * the store (seg_reader to verify, reindex_file to index, idx for the
 * origin's meta and the manifest's thread names): no SQL here.
 * Must never: index a file before it is verified whole, or leave a partial
 * download under a segment's name.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "collector/cli/cli_pull.h"
#include "collector/cli/cli_s3path.h"
#include "collector/lazy/lazy.h"
#include "collector/s3/s3_client.h"
#include "collector/s3/s3_cfg.h"
#include "collector/s3/s3_key.h"
#include "collector/store/crc32c.h"
#include "collector/store/reindex.h"
#include "collector/store/store_lock.h"
#include "collector/store/idx.h"
#include "collector/store/idx_read.h"
#include "collector/store/seg.h"
#include "collector/store/seg_reader.h"

#define PULL_PART_PREFIX ".pull."
#define PULL_PART_SUFFIX ".part"
#define PULL_KEY_MAX 1100               /* S3 keys are at most 1024 bytes */
#define PULL_MANIFEST_MAX S3_KEY_MANIFEST_MAX
#define PULL_PREFIXES_MAX (64 * 1024)

/* ---- the listing -------------------------------------------------------------- */

struct ent {
    struct cli_s3path_key k;
    char seg_key[PULL_KEY_MAX];
    char man_key[PULL_KEY_MAX];
    uint64_t seg_size;
    bool has_seg, has_man;
    bool present, want;
    struct s3_key_manifest m;
    struct s3_key_thread *threads;     /* the manifest's, for a wanted segment */
    uint32_t nthreads;
};

struct pull {
    const struct cli_env *env;
    const struct cli_pull_opts *o;
    struct cli_pull_result *r;
    struct s3_client *c;
    char prefix[S3_CFG_PREFIX_MAX];
    struct ent *ents;
    size_t n, cap;
    struct idx *x;
    bool origin_set;
};

static int on_object(const struct s3_xml_obj *obj, void *arg)
{
    struct pull *p = arg;
    const char *rel = cli_s3path_strip(p->prefix, obj->key);
    struct cli_s3path_key k;
    if (!rel || strlen(obj->key) >= PULL_KEY_MAX ||
        cli_s3path_parse(rel, S3_KEY_MANIFEST_SUFFIX, &k) == CLI_S3PATH_OTHER ||
        !cli_s3path_keep_key(&k, p->o->host, p->o->from_ns, p->o->to_ns))
        return 0;
    if (k.pid != 0 && p->o->pid && k.pid != p->o->pid)
        return 0;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        struct ent *e = realloc(p->ents, cap * sizeof *e);
        if (!e)
            return -ENOMEM;
        p->ents = e;
        p->cap = cap;
    }
    struct ent *e = &p->ents[p->n++];
    memset(e, 0, sizeof *e);
    e->k = k;
    if (k.kind == CLI_S3PATH_SEGMENT) {
        snprintf(e->seg_key, sizeof e->seg_key, "%s", obj->key);
        e->seg_size = obj->size;
        e->has_seg = true;
    } else {
        snprintf(e->man_key, sizeof e->man_key, "%s", obj->key);
        e->has_man = true;
    }
    return 0;
}

static int ent_cmp(const void *a, const void *b)
{
    const struct cli_s3path_key *x = &((const struct ent *)a)->k, *y = &((const struct ent *)b)->k;
    int c = strcmp(x->host, y->host);
    if (c)
        return c;
    if (x->segment_id != y->segment_id)
        return x->segment_id < y->segment_id ? -1 : 1;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->start_time != y->start_time)
        return x->start_time < y->start_time ? -1 : 1;
    return (int)x->kind - (int)y->kind;          /* segment before manifest */
}

/* Pair each segment with its manifest (same host, pid, start, id). */
static void merge(struct pull *p)
{
    qsort(p->ents, p->n, sizeof *p->ents, ent_cmp);
    size_t w = 0;
    for (size_t i = 0; i < p->n; i++) {
        struct ent *e = &p->ents[i];
        if (w > 0) {
            struct ent *prev = &p->ents[w - 1];
            if (strcmp(prev->k.host, e->k.host) == 0 && prev->k.segment_id == e->k.segment_id &&
                prev->k.pid == e->k.pid && prev->k.start_time == e->k.start_time) {
                if (e->has_man && !prev->has_man) {
                    memcpy(prev->man_key, e->man_key, sizeof prev->man_key);
                    prev->has_man = true;
                } else if (e->has_seg && !prev->has_seg) {
                    memcpy(prev->seg_key, e->seg_key, sizeof prev->seg_key);
                    prev->seg_size = e->seg_size;
                    prev->has_seg = true;
                }
                continue;       /* the same key listed twice (overlapping prefixes) */
            }
        }
        if (w != i)
            p->ents[w] = *e;
        w++;
    }
    p->n = w;
}

/* One line for a failed request: the client's own line says method, key,
 * status and S3's message; add what to do for the common cases. */
static void request_failed(struct pull *p, int rc, const char *what)
{
    const char *line = s3_client_error(p->c);
    long st = s3_client_status(p->c);
    const char *hint = "";
    if (rc == -EACCES || st == 403)
        hint = " (access denied: check the credentials and the bucket policy)";
    else if (st == 404 && strstr(line, "NoSuchBucket"))
        hint = " (no such bucket)";
    cli_warn(p->env, "%s: %s%s", what, line && *line ? line : strerror(-rc), hint);
}

static int list_all(struct pull *p)
{
    char *prefixes = malloc(PULL_PREFIXES_MAX);
    if (!prefixes)
        return -ENOMEM;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t now_ns = (int64_t)now.tv_sec * 1000000000ll + now.tv_nsec;
    size_t n;
    int e = cli_s3path_prefixes(p->prefix, p->o->host, p->o->from_ns, p->o->to_ns, now_ns,
                                prefixes, PULL_PREFIXES_MAX, &n);
    const char *pre = prefixes;
    for (size_t i = 0; e == 0 && i < n; i++, pre += strlen(pre) + 1) {
        e = s3_client_list(p->c, pre, on_object, p);
        if (e < 0 && e != -ENOMEM)
            request_failed(p, e, "cannot list the bucket");
    }
    free(prefixes);
    return e;
}

/* ---- the local store ---------------------------------------------------------- */

static int mkdirs(const char *dir)
{
    char tmp[CLI_PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp)
        return -ENAMETOOLONG;
    for (char *s = tmp + 1;; s++) {
        if (*s != '/' && *s != 0)
            continue;
        char c = *s;
        *s = 0;
        if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
            return -errno;
        *s = c;
        if (!c)
            break;
    }
    struct stat st;
    if (stat(dir, &st) < 0)
        return -errno;
    return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* Downloads an interrupted pull left (we hold the lock: nobody else's). */
static void remove_parts(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    size_t pl = strlen(PULL_PART_PREFIX), sl = strlen(PULL_PART_SUFFIX);
    for (struct dirent *de; (de = readdir(d));) {
        size_t n = strlen(de->d_name);
        if (n > pl + sl && strncmp(de->d_name, PULL_PART_PREFIX, pl) == 0 &&
            strcmp(de->d_name + n - sl, PULL_PART_SUFFIX) == 0)
            unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
}

/* CRC-32C of the whole file. */
static int file_crc(const char *path, uint32_t *crc)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    static unsigned char buf[1 << 16];
    uint32_t c = 0;
    ssize_t k;
    while ((k = read(fd, buf, sizeof buf)) > 0)
        c = crc32c_update(c, buf, (size_t)k);
    int e = k < 0 ? -errno : 0;
    close(fd);
    *crc = c;
    return e;
}

/* Verify a downloaded file: size and CRC as the manifest says, a whole valid
 * segment (every block read), the header naming the key's process and id. */
static int verify(const char *path, const struct ent *e, struct seg_file_hdr *hdr, char *why,
                  size_t cap)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        snprintf(why, cap, "%s", strerror(errno));
        return -errno;
    }
    if ((uint64_t)st.st_size != e->m.bytes) {
        snprintf(why, cap, "%" PRIu64 " bytes, the manifest says %" PRIu64,
                 (uint64_t)st.st_size, e->m.bytes);
        return -EBADMSG;
    }
    uint32_t crc = 0;
    if (file_crc(path, &crc) < 0 || crc != e->m.crc32c) {
        snprintf(why, cap, "CRC-32C %08" PRIx32 ", the manifest says %08" PRIx32, crc,
                 (uint32_t)e->m.crc32c);
        return -EBADMSG;
    }
    struct seg_reader *r;
    int rc = seg_reader_open_ex(&r, path, 0, why, cap);
    if (rc < 0)
        return rc;
    *hdr = *seg_reader_header(r);
    struct seg_block b;
    while ((rc = seg_reader_next(r, &b)) == 1)
        ;
    if (rc < 0)
        snprintf(why, cap, "%s", seg_reader_error(r) ? seg_reader_error(r) : strerror(-rc));
    seg_reader_close(r);
    if (rc < 0)
        return rc;
    if (hdr->pid != e->k.pid || hdr->start_time != e->k.start_time ||
        hdr->segment_id != e->k.segment_id) {
        snprintf(why, cap, "the file is segment %" PRIu64 " of pid %" PRIu32
                 ", not what its key says", hdr->segment_id, hdr->pid);
        return -EBADMSG;
    }
    return 0;
}

static int set_origin(struct pull *p, const struct ent *e, const struct seg_file_hdr *hdr)
{
    if (p->origin_set)
        return 0;
    int64_t boot_rt = e->m.boot_realtime_ns
                          ? (int64_t)e->m.boot_realtime_ns
                          : (int64_t)(hdr->created_realtime_ns - hdr->created_ns);
    int rc = idx_set_origin(p->x, e->m.host[0] ? e->m.host : e->k.host, e->m.boot_id, boot_rt);
    if (rc == 0)
        p->origin_set = true;
    return rc;
}

static int index_one(struct pull *p, const char *path)
{
    int rc = reindex_file(p->x, p->o->dir, path);
    if (rc < 0) {
        const char *m = idx_errmsg(p->x);
        cli_warn(p->env, "%s: cannot index: %s", path,
                 rc == -EEXIST ? "its segment id is already in the store (another host's?)"
                               : m && *m ? m : strerror(-rc));
    }
    return rc;
}

/* The manifest's thread names onto the threads rows the re-index made
 * (segment files hold no names); a manifest without any leaves them empty. */
static void name_threads(struct pull *p, const struct ent *e, const struct seg_file_hdr *hdr)
{
    if (!e->nthreads)
        return;
    struct idx_thread_name *t = calloc(e->nthreads, sizeof *t);
    int rc = -ENOMEM;
    if (t) {
        for (uint32_t i = 0; i < e->nthreads; i++)
            t[i] = (struct idx_thread_name){ e->threads[i].tid, e->threads[i].ring,
                                             e->threads[i].generation, e->threads[i].name };
        rc = idx_thread_names_set(p->x, hdr->pid, hdr->start_time, t, e->nthreads);
        free(t);
    }
    if (rc < 0) {
        const char *m = idx_errmsg(p->x);
        cli_warn(p->env, "%s: thread names not recorded: %s", e->man_key,
                 rc != -ENOMEM && m && *m ? m : strerror(-rc));
    }
}

/* GET, verify, rename, index one segment. */
static int fetch(struct pull *p, struct ent *e, size_t i, size_t n)
{
    char name[128], part[CLI_PATH_MAX], final[CLI_PATH_MAX], why[512];
    cli_s3path_local_name(&e->k, name, sizeof name);
    if (snprintf(part, sizeof part, "%s/%s%s%s", p->o->dir, PULL_PART_PREFIX, name,
                 PULL_PART_SUFFIX) >= (int)sizeof part ||
        snprintf(final, sizeof final, "%s/%s", p->o->dir, name) >= (int)sizeof final) {
        cli_warn(p->env, "%s: local path too long", e->seg_key);
        p->r->failed++;
        return -ENAMETOOLONG;
    }
    char sz[32];
    if (!p->o->quiet)
        fprintf(stderr, "%s %s: [%zu/%zu] %s (%s)\n", p->env->prog, p->env->cmd, i + 1, n,
                e->seg_key, cli_fmt_bytes(e->m.bytes, sz, sizeof sz));
    FILE *f = fopen(part, "wbx");
    if (!f) {
        cli_warn(p->env, "%s: %s", part, strerror(errno));
        p->r->failed++;
        return -errno;
    }
    uint64_t got = 0;
    int rc = s3_client_get_file(p->c, e->seg_key, f, e->m.bytes, &got);
    if (rc == 0 && (fflush(f) != 0 || fsync(fileno(f)) != 0))
        rc = -errno;
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    if (rc == -EFBIG) {
        cli_warn(p->env, "%s: corrupt: larger than the manifest's %" PRIu64 " bytes (skipped)",
                 e->seg_key, e->m.bytes);
        p->r->corrupt++;
        unlink(part);
        return rc;
    }
    if (rc < 0) {
        request_failed(p, rc, "download failed");
        p->r->failed++;
        unlink(part);
        return rc;
    }
    struct seg_file_hdr hdr;
    memset(&hdr, 0, sizeof hdr);
    if ((rc = verify(part, e, &hdr, why, sizeof why)) < 0) {
        cli_warn(p->env, "%s: corrupt: %s (skipped)", e->seg_key, why);
        p->r->corrupt++;
        unlink(part);
        return rc;
    }
    if (rename(part, final) < 0) {
        rc = -errno;
        cli_warn(p->env, "%s: %s", final, strerror(-rc));
        p->r->failed++;
        unlink(part);
        return rc;
    }
    int dfd = open(p->o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        seg_fsync_dir(dfd);
        close(dfd);
    }
    if ((rc = set_origin(p, e, &hdr)) < 0 || (rc = index_one(p, final)) < 0) {
        p->r->failed++;
        return rc;
    }
    name_threads(p, e, &hdr);
    p->r->fetched++;
    p->r->bytes += e->m.bytes;
    return 0;
}

/* A host name as the key layout writes it (s3_key.h): bytes outside
 * [A-Za-z0-9._-] become '_'. */
static void key_host(char *h)
{
    for (char *c = h; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '.' || *c == '_' || *c == '-'))
            *c = '_';
}

/* Decide, per listed segment: already here, wanted, filtered out or
 * incomplete. Reads the manifest of each segment not already here. */
static int select_ents(struct pull *p)
{
    char *buf = malloc(PULL_MANIFEST_MAX);
    struct s3_key_threads *threads = malloc(sizeof *threads);
    if (!buf || !threads) {
        free(buf);
        free(threads);
        return -ENOMEM;
    }
    int fatal = 0;
    for (size_t i = 0; i < p->n && !fatal; i++) {
        struct ent *e = &p->ents[i];
        if (!e->has_seg || !e->has_man) {
            p->r->incomplete++;
            continue;
        }
        p->r->listed++;
        char name[128], path[CLI_PATH_MAX];
        struct stat st;
        cli_s3path_local_name(&e->k, name, sizeof name);
        if (snprintf(path, sizeof path, "%s/%s", p->o->dir, name) < (int)sizeof path &&
            lstat(path, &st) == 0) {
            if (S_ISREG(st.st_mode) && (uint64_t)st.st_size == e->seg_size) {
                e->present = true;
                p->r->present++;
                continue;
            }
            cli_warn(p->env, "%s exists and is not the bucket's %s (%" PRIu64 " bytes): "
                     "left alone", path, e->seg_key, e->seg_size);
            p->r->failed++;
            continue;
        }
        size_t len = 0;
        int rc = s3_client_get(p->c, e->man_key, buf, PULL_MANIFEST_MAX, &len);
        if (rc < 0) {
            request_failed(p, rc, "cannot read a manifest");
            p->r->failed++;
            if (rc == -EACCES)
                fatal = rc;             /* every other request would fail the same way */
            continue;
        }
        const char *why = NULL;
        char mhost[sizeof e->m.host];
        if (s3_key_manifest_parse(buf, len, &e->m, threads) < 0) {
            why = "malformed";
        } else {
            snprintf(mhost, sizeof mhost, "%s", e->m.host);
            key_host(mhost);
            if (e->m.pid != e->k.pid || e->m.start_time != e->k.start_time ||
                e->m.segment_id != e->k.segment_id || strcmp(mhost, e->k.host) != 0)
                why = "it names another segment than its key";
            else if (e->m.bytes != e->seg_size)
                why = "its size differs from the object's";
        }
        if (why) {
            cli_warn(p->env, "%s: corrupt manifest: %s (segment skipped)", e->man_key, why);
            p->r->corrupt++;
            continue;
        }
        if (e->m.boot_realtime_ns && e->m.t_max_ns) {
            /* the manifest's monotonic range on the origin's wall clock */
            int64_t lo = (int64_t)(e->m.t_min_ns + e->m.boot_realtime_ns);
            int64_t hi = (int64_t)(e->m.t_max_ns + e->m.boot_realtime_ns);
            if (!cli_s3path_keep_range(p->o->pid, p->o->from_ns, p->o->to_ns, e->k.pid, lo, hi))
                continue;
        }
        if (p->o->pid && p->o->pid != e->k.pid)
            continue;
        if (threads->n) {
            e->threads = malloc(threads->n * sizeof *e->threads);
            if (!e->threads) {
                cli_warn(p->env, "out of memory reading manifests");
                fatal = -ENOMEM;
                break;
            }
            memcpy(e->threads, threads->t, threads->n * sizeof *e->threads);
            e->nthreads = threads->n;
        }
        e->want = true;
        p->r->selected++;
    }
    free(buf);
    free(threads);
    return fatal;
}

/* A store is one host's: refuse a selection that mixes hosts (the entries
 * are sorted by host, so each host is one run). */
static int one_host(struct pull *p)
{
    const char *host = NULL;
    char names[512] = "";
    size_t o = 0, nhosts = 0;
    for (size_t i = 0; i < p->n; i++) {
        const struct ent *e = &p->ents[i];
        if ((!e->want && !e->present) || (host && strcmp(host, e->k.host) == 0))
            continue;
        host = e->k.host;
        nhosts++;
        if (o < sizeof names)
            o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", o ? ", " : "", host);
    }
    if (nhosts > 1) {
        cli_warn(p->env, "the selection holds segments of %zu hosts (%s): a store holds one "
                 "host's; choose one with --host", nhosts, names);
        return -EINVAL;
    }
    if (host)
        snprintf(p->r->host, sizeof p->r->host, "%s", host);
    return 0;
}

/* An existing store must be the same host's. */
static int same_host(struct pull *p)
{
    char h[256];
    uint64_t nseg = 0;
    if (!p->r->host[0] || idx_read_segment_count(p->x, &nseg) < 0 || nseg == 0 ||
        idx_read_meta_get(p->x, "host", h, sizeof h) < 0)
        return 0;
    key_host(h);
    if (strcmp(h, p->r->host) == 0) {
        p->origin_set = true;           /* a store this pull (or the host itself) made */
        return 0;
    }
    cli_warn(p->env, "%s holds host %s's segments, the selection is host %s's: pull into "
             "another directory", p->o->dir, h, p->r->host);
    return -EINVAL;
}

int cli_pull_run(const struct cli_env *env, const struct cli_pull_opts *o,
                 struct cli_pull_result *r)
{
    memset(r, 0, sizeof *r);
    struct s3_cfg cfg;
    char err[512];
    if (s3_cfg_init(&cfg, o->url, o->endpoint, o->region, err, sizeof err) < 0)
        return cli_usage_error(env, "%s", err);
    if (s3_cfg_credentials(&cfg, err, sizeof err) < 0) {
        s3_cfg_wipe(&cfg);
        return cli_fail(env, "no credentials: %s", err);
    }
    struct pull p = { .env = env, .o = o, .r = r };
    snprintf(p.prefix, sizeof p.prefix, "%s", cfg.prefix);
    int rc = s3_client_open(&p.c, &cfg);
    s3_cfg_wipe(&cfg);
    if (rc < 0)
        return cli_fail(env, "cannot start the S3 client: %s",
                        rc == -ELIBACC ? (*lazy_error(LAZY_CURL) ? lazy_error(LAZY_CURL)
                                                                 : lazy_error(LAZY_CRYPTO))
                                       : strerror(-rc));
    int lock = -1;
    int ret = CLI_EXIT_FAIL;
    if ((rc = list_all(&p)) < 0) {
        if (rc == -ENOMEM)
            cli_warn(env, "out of memory listing the bucket");
        goto out;
    }
    merge(&p);
    if ((rc = mkdirs(o->dir)) < 0) {
        cli_warn(env, "%s: %s", o->dir, strerror(-rc));
        goto out;
    }
    if ((lock = store_lock(o->dir)) < 0) {
        cli_warn(env, "%s: %s", o->dir,
                 lock == -EBUSY ? "in use (a collector or another pull holds its lock)"
                                : strerror(-lock));
        goto out;
    }
    remove_parts(o->dir);
    if (select_ents(&p) < 0 || one_host(&p) < 0)
        goto out;
    char why[512];
    if ((rc = idx_open_ex(&p.x, o->dir, IDX_OPEN_FOREIGN, why, sizeof why)) < 0) {
        cli_warn(env, "%s: index: %s", o->dir, why);
        goto out;
    }
    if (same_host(&p) < 0)
        goto out;
    /* files a pull renamed but did not index (interrupted in between) */
    for (size_t i = 0; i < p.n; i++) {
        struct ent *e = &p.ents[i];
        char name[128], path[CLI_PATH_MAX];
        if (!e->present)
            continue;
        cli_s3path_local_name(&e->k, name, sizeof name);
        if (idx_read_segment_has_path(p.x, name) == 1)
            continue;
        snprintf(path, sizeof path, "%s/%s", o->dir, name);
        if (index_one(&p, path) < 0)
            r->failed++;
    }
    size_t nwant = 0, k = 0;
    for (size_t i = 0; i < p.n; i++)
        nwant += p.ents[i].want;
    for (size_t i = 0; i < p.n; i++)
        if (p.ents[i].want)
            fetch(&p, &p.ents[i], k++, nwant);
    char b[32];
    fprintf(stderr, "%s %s: %" PRIu64 " segment%s fetched (%s), %" PRIu64
            " already present%s%s into %s\n", env->prog, env->cmd, r->fetched,
            r->fetched == 1 ? "" : "s", cli_fmt_bytes(r->bytes, b, sizeof b), r->present,
            r->host[0] ? ", host " : "", r->host, o->dir);
    if (r->incomplete)
        cli_warn(env, "%" PRIu64 " object%s without a segment or a manifest (an upload in "
                 "progress?): skipped", r->incomplete, r->incomplete == 1 ? "" : "s");
    if (r->corrupt || r->failed)
        cli_warn(env, "%" PRIu64 " corrupt segment%s skipped, %" PRIu64 " failed",
                 r->corrupt, r->corrupt == 1 ? "" : "s", r->failed);
    if (r->selected == 0 && r->present == 0 && !r->corrupt && !r->failed)
        fprintf(stderr, "%s %s: no segment matches under %s\n", env->prog, env->cmd, o->url);
    ret = r->corrupt || r->failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
out:
    idx_close(p.x);
    if (lock >= 0)
        close(lock);
    s3_client_close(p.c);
    for (size_t i = 0; i < p.n; i++)
        free(p.ents[i].threads);
    free(p.ents);
    return ret;
}

/* ---- d9 pull ------------------------------------------------------------------ */

static const char pull_usage[] =
"NAME\n"
"    d9 pull - fetch a host's shipped segments from a bucket into a local store\n"
"\n"
"SYNOPSIS\n"
"    d9 pull s3://BUCKET[/PREFIX] [--host H] [--pid P]\n"
"            [--since DUR | --from TIME] [--until TIME]\n"
"            [--s3-endpoint URL] [--s3-region R] [--quiet] DIR\n"
"\n"
"DESCRIPTION\n"
"    Lists the segments d9collectd --ship uploaded under PREFIX (keys\n"
"    PREFIX/HOST/YYYY-MM-DD/PID-START/ID.d9seg, each with its manifest),\n"
"    keeps those of the host, process and time window asked for, downloads\n"
"    the ones DIR does not have yet and indexes them: DIR is then a store\n"
"    like any other (d9 --store DIR ps, events, top-polls, sql, serve...),\n"
"    readable after the host is gone. A second pull fetches nothing new.\n"
"    Each download goes to a temporary name in DIR, is checked against its\n"
"    manifest (size, CRC-32C) and verified block by block before it gets\n"
"    its segment name; a corrupt object is reported and skipped.\n"
"    A store holds one host: when the selection spans several hosts, choose\n"
"    one with --host. DIR is created if needed; it must not be a store a\n"
"    collector is writing (the store lock is taken).\n"
"\n"
"OPTIONS\n"
"    --host H        the host's segments only (its name as shipped). Lists\n"
"                    only PREFIX/H/... (and with a window only its days).\n"
"    --pid P         one process.\n"
"    --since DUR     segments with records in the last DUR (wall clock, from\n"
"                    now): 30s, 5m, 2h, 1d.\n"
"    --from TIME     segments with records at or after TIME, UTC:\n"
"                    YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS] or @UNIXSECONDS.\n"
"    --until TIME    segments with records at or before TIME (same forms; a\n"
"                    day or minute means its end).\n"
"    --s3-endpoint URL  an S3-compatible server (http://127.0.0.1:9000),\n"
"                    path-style requests. Default: AWS.\n"
"    --s3-region R   region to sign for (default $AWS_REGION, else\n"
"                    $AWS_DEFAULT_REGION, else us-east-1).\n"
"    --quiet         no line per downloaded segment.\n"
"    -h, --help      print this help and exit.\n"
"\n"
"CREDENTIALS\n"
"    AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN),\n"
"    else the profile $AWS_PROFILE (default \"default\") of\n"
"    $AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials). Never on the\n"
"    command line. The pull needs s3:ListBucket and s3:GetObject.\n"
"\n"
"EXAMPLES\n"
"    d9 pull s3://traces/fleet --host web-1 --since 1h ./web-1\n"
"    d9 --store ./web-1 top-polls\n"
"\n"
"EXIT STATUS\n"
"    0   every selected segment is in DIR and indexed (nothing matching is\n"
"        a success too: it is reported on stderr)\n"
"    1   runtime error: no credentials, access denied, no such bucket,\n"
"        a corrupt segment (skipped) or a failed download\n"
"    2   bad usage: unknown option, bad value, bad URL\n";

enum {
    OPT_HOST = CLI_OPT_FIRST_PRIVATE,
    OPT_FROM,
    OPT_UNTIL,
    OPT_ENDPOINT,
    OPT_REGION,
    OPT_QUIET,
};

CLI_DECLARE_CMD(pull)
{
    static const struct option opts[] = {
        CLI_OPTE_HELP, CLI_OPTE_PID, CLI_OPTE_SINCE,
        { "host", 1, NULL, OPT_HOST },
        { "from", 1, NULL, OPT_FROM },
        { "until", 1, NULL, OPT_UNTIL },
        { "s3-endpoint", 1, NULL, OPT_ENDPOINT },
        { "s3-region", 1, NULL, OPT_REGION },
        { "quiet", 0, NULL, OPT_QUIET },
        CLI_OPTE_END,
    };
    struct cli_args a;
    cli_args_init(&a);
    struct cli_pull_opts o = { .endpoint = env->s3_endpoint, .region = env->s3_region,
                               .host = env->s3_host, .from_ns = 0, .to_ns = INT64_MAX };
    bool from_set = false;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_HOST:
            if (!*optarg || strchr(optarg, '/') || strlen(optarg) >= CLI_S3PATH_HOST_MAX)
                return cli_usage_error(env, "--host: expected a host name, got '%s'", optarg);
            o.host = optarg;
            break;
        case OPT_FROM:
        case OPT_UNTIL:
            if (cli_s3path_parse_time(optarg, c == OPT_UNTIL,
                                      c == OPT_FROM ? &o.from_ns : &o.to_ns) < 0)
                return cli_usage_error(env, "%s: expected YYYY-MM-DD[THH:MM[:SS]] (UTC) or "
                                       "@UNIXSECONDS, got '%s'",
                                       c == OPT_FROM ? "--from" : "--until", optarg);
            from_set |= c == OPT_FROM;
            break;
        case OPT_ENDPOINT:
            o.endpoint = optarg;
            break;
        case OPT_REGION:
            o.region = optarg;
            break;
        case OPT_QUIET:
            o.quiet = true;
            break;
        default:
            if (cli_common_opt(env, &a, c, argv) != 0)
                return CLI_EXIT_USAGE;
        }
    }
    if (a.help) {
        fputs(pull_usage, stdout);
        return CLI_EXIT_OK;
    }
    if (a.win.kind == Q_WIN_SINCE) {
        if (from_set)
            return cli_usage_error(env, "--since cannot be combined with --from");
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        o.from_ns = (int64_t)now.tv_sec * 1000000000ll + now.tv_nsec - (int64_t)a.win.since_ns;
    }
    if (o.from_ns > o.to_ns)
        return cli_usage_error(env, "--from is after --until");
    o.pid = a.pid;
    if (argc - optind < 2)
        return cli_usage_error(env, "expected s3://BUCKET[/PREFIX] and DIR");
    if (argc - optind > 2)
        return cli_usage_error(env, "unexpected argument '%s'", argv[optind + 2]);
    o.url = argv[optind];
    o.dir = argv[optind + 1];
    if (strncmp(o.url, "s3://", 5) != 0)
        return cli_usage_error(env, "expected an s3://BUCKET[/PREFIX] URL, got '%s'", o.url);
    struct cli_pull_result r;
    return cli_pull_run(env, &o, &r);
}
