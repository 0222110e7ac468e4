/*
 * s3_client.c — S3 requests over one libcurl easy handle (see s3_client.h).
 *
 * Every request goes through s3_client_do: build the path and query, sign
 * (host, x-amz-date, x-amz-content-sha256, content-md5 on a PUT,
 * x-amz-security-token with a session), send, and sort the answer: a 2xx
 * body goes to the caller's sink (bounded), any other body to a bounded
 * error buffer whose <Code>/<Message> become the error line.
 */
#include "s3_client.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include "collector/lazy/lazy.h"

#include "s3_sign.h"

#define S3_CLIENT_LIST_PAGE_MAX (8u * 1024 * 1024)  /* one ListObjectsV2 page */
#define S3_CLIENT_LOW_SPEED_BPS 1024                 /* slower than this ...  */
#define S3_CLIENT_LOW_SPEED_S 30                     /* ... this long: timeout */

struct s3_client {
    CURL *h;
    struct s3_cfg cfg;
    long status;
    const int *stop;
    char err[S3_CLIENT_ERR_MAX];
};

/* Where a response body goes. */
struct s3_client_sink {
    struct s3_client *c;
    char *buf;                        /* buffer sink (or NULL) */
    size_t cap, len;
    FILE *f;                          /* file sink (or NULL) */
    uint64_t max, flen;
    int too_big;
    char errbody[S3_CLIENT_ERRBODY_MAX];
    size_t errlen;
    char etag[S3_XML_ETAG_MAX + 1];
};

/* A request body: bytes in memory, or a file read with pread (fd >= 0). */
struct s3_client_src {
    const char *p;
    int fd;
    uint64_t off, left;
    int read_err;                     /* errno of a failed pread */
    const char *p0;                   /* the body's start (buffer or file offset 0) */
    uint64_t len;                     /* and its length: a seek (curl's rewind) stays in it */
};

static pthread_once_t s3_client_once = PTHREAD_ONCE_INIT;
static void s3_client_global(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

int s3_client_open(struct s3_client **out, const struct s3_cfg *cfg)
{
    if (lazy_need(LAZY_CURL) < 0 || lazy_need(LAZY_CRYPTO) < 0)
        return -ELIBACC;            /* `d9` opens them here (lazy.h) */
    pthread_once(&s3_client_once, s3_client_global);
    struct s3_client *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->h = curl_easy_init();
    if (!c->h) {
        free(c);
        return -ENOMEM;
    }
    c->cfg = *cfg;
    *out = c;
    return 0;
}

void s3_client_close(struct s3_client *c)
{
    if (!c)
        return;
    curl_easy_cleanup(c->h);
    s3_cfg_wipe(&c->cfg);
    free(c);
}

void s3_client_set_stop(struct s3_client *c, const int *stop) { c->stop = stop; }

static int s3_client_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t d, curl_off_t e)
{
    (void)a, (void)b, (void)d, (void)e;
    const int *stop = arg;
    return __atomic_load_n(stop, __ATOMIC_RELAXED) != 0;
}

const char *s3_client_error(const struct s3_client *c) { return c->err; }
long s3_client_status(const struct s3_client *c) { return c->status; }
int s3_client_retryable(int rc) { return rc == -EAGAIN; }

int s3_client_key(const struct s3_client *c, const char *name, char *out, size_t cap)
{
    int n = c->cfg.prefix[0] ? snprintf(out, cap, "%s/%s", c->cfg.prefix, name)
                             : snprintf(out, cap, "%s", name);
    return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

static size_t s3_client_write(char *data, size_t size, size_t n, void *arg)
{
    struct s3_client_sink *s = arg;
    size_t len = size * n;
    long status = 0;
    curl_easy_getinfo(s->c->h, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status >= 300) {
        size_t keep = sizeof s->errbody - 1 - s->errlen;
        keep = len < keep ? len : keep;
        memcpy(s->errbody + s->errlen, data, keep);
        s->errlen += keep;
        s->errbody[s->errlen] = '\0';
        return len;
    }
    if (s->buf) {
        if (len > s->cap - s->len) {
            s->too_big = 1;
            return 0;
        }
        memcpy(s->buf + s->len, data, len);
        s->len += len;
    } else if (s->f) {
        if (len > s->max - s->flen) {
            s->too_big = 1;
            return 0;
        }
        if (fwrite(data, 1, len, s->f) != len)
            return 0;
        s->flen += len;
    }
    return len;
}

static size_t s3_client_header(char *data, size_t size, size_t n, void *arg)
{
    struct s3_client_sink *s = arg;
    size_t len = size * n;
    if (len > 5 && strncasecmp(data, "etag:", 5) == 0) {
        const char *v = data + 5;
        size_t vn = len - 5;
        while (vn && (*v == ' ' || *v == '\t'))
            v++, vn--;
        while (vn && (v[vn - 1] == '\r' || v[vn - 1] == '\n' || v[vn - 1] == ' '))
            vn--;
        if (vn < sizeof s->etag) {
            memcpy(s->etag, v, vn);
            s->etag[vn] = '\0';
        }
    }
    return len;
}

/* curl rewinds the body to send it again (a redirect, a connection closed
 * mid-request): without this the retry is an error ("rewinding of the data
 * stream failed") that the upload takes as final. */
static int s3_client_seek(void *arg, curl_off_t offset, int origin)
{
    struct s3_client_src *src = arg;
    if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > src->len)
        return CURL_SEEKFUNC_CANTSEEK;
    if (src->fd >= 0)
        src->off = (uint64_t)offset;
    else
        src->p = src->p0 + offset;
    src->left = src->len - (uint64_t)offset;
    return CURL_SEEKFUNC_OK;
}

static size_t s3_client_read(char *out, size_t size, size_t n, void *arg)
{
    struct s3_client_src *src = arg;
    size_t len = size * n;
    len = len < src->left ? len : (size_t)src->left;
    if (src->fd >= 0) {
        ssize_t got;
        do
            got = pread(src->fd, out, len, (off_t)src->off);
        while (got < 0 && errno == EINTR);
        if (got <= 0 && len) {        /* shorter than it was: the upload must fail */
            src->read_err = got < 0 ? errno : EIO;
            return CURL_READFUNC_ABORT;
        }
        len = (size_t)got;
        src->off += len;
    } else {
        memcpy(out, src->p, len);
        src->p += len;
    }
    src->left -= len;
    return len;
}

static int s3_client_curl_rc(CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
        return -EAGAIN;
    case CURLE_OUT_OF_MEMORY:
        return -ENOMEM;
    default:
        return -EIO;
    }
}

static int s3_client_http_rc(long status, const char *code)
{
    if (status == 404 || strcmp(code, "NoSuchKey") == 0)
        return -ENOENT;
    if (status == 403)
        return -EACCES;
    if (status >= 500 || status == 429 || status == 408)
        return -EAGAIN;
    return -EIO;
}

/* One request. key: full object key or NULL (the bucket); query: encoded
 * "k=v&..." or "". */
static int s3_client_do(struct s3_client *c, const char *method, const char *key,
                        const char *query, struct s3_client_src *body, const char *body_sha,
                        const char *body_md5, struct s3_client_sink *sink)
{
    char path[3 * S3_XML_KEY_MAX + 128], enc[3 * S3_XML_KEY_MAX + 1];
    char url[sizeof c->cfg.base_url + sizeof enc + 4096];
    char date[S3_SIGN_DATE_LEN + 1], sha[S3_SIGN_HEX_LEN + 1], md5b64[32];
    char auth[1024], line[sizeof c->cfg.session_token + 64];
    struct curl_slist *hl = NULL;
    struct s3_sign_hdr hdrs[6];
    size_t nh = 0;
    int rc;

    c->status = 0;
    c->err[0] = '\0';
    if (key && s3_sign_uri_encode(key, 1, enc, sizeof enc))
        return snprintf(c->err, sizeof c->err, "%s: key too long", method), -ENAMETOOLONG;
    if (key)
        snprintf(path, sizeof path, "%s/%s", c->cfg.path_base, enc);
    else
        snprintf(path, sizeof path, "%s", c->cfg.path_base[0] ? c->cfg.path_base : "/");
    if ((size_t)snprintf(url, sizeof url, "%s%s%s%s%s", c->cfg.base_url, key ? "/" : "",
                         key ? enc : (c->cfg.path_base[0] ? "" : "/"), *query ? "?" : "",
                         query) >= sizeof url)
        return snprintf(c->err, sizeof c->err, "%s: URL too long", method), -ENAMETOOLONG;

    s3_sign_amz_date(time(NULL), date);
    if (body_sha)
        snprintf(sha, sizeof sha, "%s", body_sha);
    else
        s3_sign_sha256_hex("", 0, sha);
    hdrs[nh++] = (struct s3_sign_hdr){ "host", c->cfg.host };
    hdrs[nh++] = (struct s3_sign_hdr){ "x-amz-content-sha256", sha };
    hdrs[nh++] = (struct s3_sign_hdr){ "x-amz-date", date };
    if (body_md5) {
        snprintf(md5b64, sizeof md5b64, "%s", body_md5);
        hdrs[nh++] = (struct s3_sign_hdr){ "content-md5", md5b64 };
    }
    if (c->cfg.session_token[0])
        hdrs[nh++] = (struct s3_sign_hdr){ "x-amz-security-token", c->cfg.session_token };
    struct s3_sign_req sr = {
        .method = method, .path = path, .query = query, .hdrs = hdrs, .n_hdrs = nh,
        .payload_hex = sha, .amz_date = date, .region = c->cfg.region, .service = "s3",
        .access_key = c->cfg.access_key, .secret_key = c->cfg.secret_key,
    };
    rc = s3_sign_authorization(&sr, auth, sizeof auth);
    if (rc)
        return snprintf(c->err, sizeof c->err, "%s: cannot sign: %s", method, strerror(-rc)), rc;
    for (size_t i = 0; i < nh; i++) {
        snprintf(line, sizeof line, "%s: %s", hdrs[i].name, hdrs[i].value);
        hl = curl_slist_append(hl, line);
    }
    snprintf(line, sizeof line, "Authorization: %s", auth);
    hl = curl_slist_append(hl, line);
    hl = curl_slist_append(hl, "Expect:");
    explicit_bzero(line, sizeof line);
    if (!hl)
        return -ENOMEM;

    CURL *h = c->h;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->cfg.connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->cfg.timeout_ms);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, (long)S3_CLIENT_LOW_SPEED_BPS);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)S3_CLIENT_LOW_SPEED_S);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, s3_client_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, sink);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, s3_client_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, sink);
    if (c->stop) {
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, s3_client_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, (void *)c->stop);
    }
    if (strcmp(method, "PUT") == 0) {
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, s3_client_read);
        curl_easy_setopt(h, CURLOPT_READDATA, body);
        curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, s3_client_seek);
        curl_easy_setopt(h, CURLOPT_SEEKDATA, body);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)body->left);
    } else if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    }
    CURLcode cc = curl_easy_perform(h);
    curl_slist_free_all(hl);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->status);

    const char *what = key ? key : "";
    if (cc != CURLE_OK) {
        if (body && body->read_err) {
            snprintf(c->err, sizeof c->err, "%s s3://%s/%s: reading the body: %s", method,
                     c->cfg.bucket, what, strerror(body->read_err));
            return -body->read_err;
        }
        if (sink->too_big) {
            snprintf(c->err, sizeof c->err, "%s s3://%s/%s: larger than the bound", method,
                     c->cfg.bucket, what);
            return -EFBIG;
        }
        snprintf(c->err, sizeof c->err, "%s s3://%s/%s: %s (%s)", method, c->cfg.bucket, what,
                 curl_easy_strerror(cc), c->cfg.base_url);
        return cc == CURLE_ABORTED_BY_CALLBACK ? -ECANCELED : s3_client_curl_rc(cc);
    }
    if (c->status >= 200 && c->status < 300)
        return 0;
    char code[64], msg[256];
    if (s3_xml_error_parse(sink->errbody, sink->errlen, code, sizeof code, msg, sizeof msg))
        code[0] = msg[0] = '\0';
    snprintf(c->err, sizeof c->err, "%s s3://%s/%s: HTTP %ld%s%s%s%s", method, c->cfg.bucket,
             what, c->status, code[0] ? " " : "", code, msg[0] ? ": " : "", msg);
    return s3_client_http_rc(c->status, code);
}

static int s3_client_put_src(struct s3_client *c, const char *key, struct s3_client_src *src,
                             const char *sha_hex, const uint8_t md5[16])
{
    char md5b64[32];
    struct s3_client_sink *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->c = c;
    s3_sign_base64(md5, 16, md5b64, sizeof md5b64);
    int rc = s3_client_do(c, "PUT", key, "", src, sha_hex, md5b64, s);
    free(s);
    return rc;
}

int s3_client_put(struct s3_client *c, const char *key, const void *buf, size_t len)
{
    char sha[S3_SIGN_HEX_LEN + 1];
    uint8_t md5[16];
    struct s3_client_src src = { buf ? buf : "", -1, 0, len, 0, buf ? buf : "", len };
    s3_sign_sha256_hex(src.p, len, sha);
    s3_sign_md5(src.p, len, md5);
    return s3_client_put_src(c, key, &src, sha, md5);
}

int s3_client_put_fd(struct s3_client *c, const char *key, int fd, uint64_t len,
                     const char *sha_hex, const uint8_t md5[16])
{
    struct s3_client_src src = { NULL, fd, 0, len, 0, NULL, len };
    return s3_client_put_src(c, key, &src, sha_hex, md5);
}

int s3_client_get(struct s3_client *c, const char *key, void *buf, size_t cap, size_t *len)
{
    struct s3_client_sink *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->c = c;
    s->buf = buf;
    s->cap = cap;
    int rc = s3_client_do(c, "GET", key, "", NULL, NULL, NULL, s);
    *len = s->len;
    free(s);
    return rc;
}

int s3_client_get_file(struct s3_client *c, const char *key, FILE *f, uint64_t max,
                       uint64_t *len)
{
    struct s3_client_sink *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->c = c;
    s->f = f;
    s->max = max;
    int rc = s3_client_do(c, "GET", key, "", NULL, NULL, NULL, s);
    *len = s->flen;
    if (rc == 0 && fflush(f) != 0)
        rc = -errno;
    free(s);
    return rc;
}

int s3_client_head(struct s3_client *c, const char *key, uint64_t *size, char *etag,
                   size_t etag_cap)
{
    struct s3_client_sink *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->c = c;
    int rc = s3_client_do(c, "HEAD", key, "", NULL, NULL, NULL, s);
    if (rc == 0) {
        curl_off_t cl = -1;
        curl_easy_getinfo(c->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
        if (size)
            *size = cl < 0 ? 0 : (uint64_t)cl;
        if (etag && etag_cap)
            snprintf(etag, etag_cap, "%s", s->etag);
    }
    free(s);
    return rc;
}

int s3_client_delete(struct s3_client *c, const char *key)
{
    struct s3_client_sink *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->c = c;
    int rc = s3_client_do(c, "DELETE", key, "", NULL, NULL, NULL, s);
    free(s);
    return rc == -ENOENT ? 0 : rc;
}

int s3_client_list(struct s3_client *c, const char *prefix, s3_xml_obj_fn fn, void *ctx)
{
    char penc[3 * S3_XML_KEY_MAX + 1], tenc[3 * S3_XML_TOKEN_MAX + 1];
    char query[sizeof penc + sizeof tenc + 64];
    struct s3_xml_list *page = malloc(sizeof *page);
    struct s3_client_sink *s = malloc(sizeof *s);
    char *buf = malloc(S3_CLIENT_LIST_PAGE_MAX);
    int rc = 0;
    if (!page || !s || !buf) {
        rc = -ENOMEM;
        goto out;
    }
    if (s3_sign_uri_encode(prefix ? prefix : "", 0, penc, sizeof penc)) {
        rc = -ENAMETOOLONG;
        goto out;
    }
    tenc[0] = '\0';
    for (;;) {
        if (tenc[0])
            snprintf(query, sizeof query, "continuation-token=%s&list-type=2&prefix=%s", tenc,
                     penc);
        else
            snprintf(query, sizeof query, "list-type=2&prefix=%s", penc);
        memset(s, 0, sizeof *s);
        s->c = c;
        s->buf = buf;
        s->cap = S3_CLIENT_LIST_PAGE_MAX;
        rc = s3_client_do(c, "GET", NULL, query, NULL, NULL, NULL, s);
        if (rc)
            break;
        rc = s3_xml_list_parse(buf, s->len, fn, ctx, page);
        if (rc == -EBADMSG)
            snprintf(c->err, sizeof c->err, "LIST s3://%s/%s: malformed ListObjectsV2 answer",
                     c->cfg.bucket, prefix ? prefix : "");
        if (rc || !page->truncated)
            break;
        if (s3_sign_uri_encode(page->next_token, 0, tenc, sizeof tenc)) {
            rc = -ENAMETOOLONG;
            break;
        }
    }
out:
    free(buf);
    free(s);
    free(page);
    return rc;
}
