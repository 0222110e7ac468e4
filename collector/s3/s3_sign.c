/*
 * s3_sign.c — AWS Signature Version 4 (see s3_sign.h for the contract).
 *
 * The four steps of the AWS documentation, each a function so the unit test
 * compares each step with the published vectors:
 *   canonical request  = METHOD \n PATH \n QUERY \n HEADERS \n SIGNED \n PAYLOAD
 *   string to sign     = AWS4-HMAC-SHA256 \n DATE \n SCOPE \n hex(sha256(canonical))
 *   signing key        = HMAC chain "AWS4"+secret -> day -> region -> service -> aws4_request
 *   signature          = hex(HMAC(signing key, string to sign))
 * Buffers are bounded (S3_SIGN_CANON_MAX); nothing is allocated.
 */
#include "s3_sign.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#define S3_SIGN_ALGO "AWS4-HMAC-SHA256"

int s3_sign_amz_date(time_t t, char *out)
{
    struct tm tm;
    if (!gmtime_r(&t, &tm))
        return -EINVAL;
    if (strftime(out, S3_SIGN_DATE_LEN + 1, "%Y%m%dT%H%M%SZ", &tm) != S3_SIGN_DATE_LEN)
        return -EINVAL;
    return 0;
}

static void s3_sign_hex(const uint8_t *d, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[2 * n] = '\0';
}

void s3_sign_sha256(const void *buf, size_t len, uint8_t out[32])
{
    unsigned int n = 32;
    EVP_Digest(buf, len, out, &n, EVP_sha256(), NULL);
}

void s3_sign_md5(const void *buf, size_t len, uint8_t out[16])
{
    unsigned int n = 16;
    EVP_Digest(buf, len, out, &n, EVP_md5(), NULL);
}

void s3_sign_sha256_hex(const void *buf, size_t len, char *out)
{
    uint8_t d[32];
    s3_sign_sha256(buf, len, d);
    s3_sign_hex(d, sizeof d, out);
}

int s3_sign_base64(const uint8_t *in, size_t n, char *out, size_t cap)
{
    if (cap < 4 * ((n + 2) / 3) + 1)
        return -ENAMETOOLONG;
    EVP_EncodeBlock((unsigned char *)out, in, (int)n);
    return 0;
}

int s3_sign_uri_encode(const char *s, int keep_slash, char *out, size_t cap)
{
    static const char digits[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int plain = (*p < 0x80 && isalnum(*p)) || *p == '-' || *p == '.' || *p == '_' || *p == '~' ||
                    (keep_slash && *p == '/');
        if (o + (plain ? 1 : 3) >= cap)
            return -ENAMETOOLONG;
        if (plain) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = digits[*p >> 4];
            out[o++] = digits[*p & 15];
        }
    }
    if (o >= cap)
        return -ENAMETOOLONG;
    out[o] = '\0';
    return 0;
}

/* A bounded appender: once full it stays full and s3_sign_buf_end fails. */
struct s3_sign_buf {
    char *p;
    size_t cap, len;
    int over;
};

static void s3_sign_put(struct s3_sign_buf *b, const char *s, size_t n)
{
    if (b->over || b->len + n >= b->cap) {
        b->over = 1;
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void s3_sign_puts(struct s3_sign_buf *b, const char *s)
{
    s3_sign_put(b, s, strlen(s));
}

struct s3_sign_pair {
    const char *k, *v;
    size_t kn, vn;
};

static int s3_sign_pair_cmp(const void *a, const void *b)
{
    const struct s3_sign_pair *x = a, *y = b;
    size_t n = x->kn < y->kn ? x->kn : y->kn;
    int c = memcmp(x->k, y->k, n);
    if (c || x->kn != y->kn)
        return c ? c : (x->kn < y->kn ? -1 : 1);
    n = x->vn < y->vn ? x->vn : y->vn;
    c = memcmp(x->v, y->v, n);
    return c ? c : (x->vn < y->vn ? -1 : x->vn > y->vn);
}

static int s3_sign_query(struct s3_sign_buf *b, const char *q)
{
    struct s3_sign_pair pairs[32];
    size_t n = 0;
    const char *p = q ? q : "";
    while (*p) {
        const char *end = strchr(p, '&');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len) {
            if (n == sizeof pairs / sizeof pairs[0])
                return -E2BIG;
            const char *eq = memchr(p, '=', len);
            pairs[n].k = p;
            pairs[n].kn = eq ? (size_t)(eq - p) : len;
            pairs[n].v = eq ? eq + 1 : p + len;
            pairs[n].vn = eq ? len - pairs[n].kn - 1 : 0;
            n++;
        }
        p += len + (end ? 1 : 0);
    }
    qsort(pairs, n, sizeof pairs[0], s3_sign_pair_cmp);
    for (size_t i = 0; i < n; i++) {
        if (i)
            s3_sign_puts(b, "&");
        s3_sign_put(b, pairs[i].k, pairs[i].kn);
        s3_sign_puts(b, "=");
        s3_sign_put(b, pairs[i].v, pairs[i].vn);
    }
    return 0;
}

static int s3_sign_hdr_cmp(const void *a, const void *b)
{
    const struct s3_sign_hdr *x = a, *y = b;
    return strcasecmp(x->name, y->name);
}

/* Sorted copy of the headers (names compared without case). */
static int s3_sign_sorted(const struct s3_sign_req *r, struct s3_sign_hdr *h)
{
    if (r->n_hdrs > S3_SIGN_MAX_HDRS)
        return -E2BIG;
    memcpy(h, r->hdrs, r->n_hdrs * sizeof *h);
    qsort(h, r->n_hdrs, sizeof *h, s3_sign_hdr_cmp);
    return 0;
}

static void s3_sign_lower(struct s3_sign_buf *b, const char *s)
{
    for (; *s; s++) {
        char c = (char)tolower((unsigned char)*s);
        s3_sign_put(b, &c, 1);
    }
}

/* "host;x-amz-date": the signed header list. */
static void s3_sign_names(struct s3_sign_buf *b, const struct s3_sign_hdr *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i)
            s3_sign_puts(b, ";");
        s3_sign_lower(b, h[i].name);
    }
}

/* A value trimmed at both ends with inner runs of spaces folded to one. */
static void s3_sign_value(struct s3_sign_buf *b, const char *v)
{
    while (*v == ' ' || *v == '\t')
        v++;
    int space = 0;
    for (; *v; v++) {
        if (*v == ' ' || *v == '\t') {
            space = 1;
            continue;
        }
        if (space)
            s3_sign_puts(b, " ");
        space = 0;
        s3_sign_put(b, v, 1);
    }
}

int s3_sign_canonical(const struct s3_sign_req *r, char *out, size_t cap)
{
    struct s3_sign_hdr h[S3_SIGN_MAX_HDRS];
    struct s3_sign_buf b = { out, cap, 0, cap == 0 };
    int rc = s3_sign_sorted(r, h);
    if (rc)
        return rc;
    if (cap)
        out[0] = '\0';
    s3_sign_puts(&b, r->method);
    s3_sign_puts(&b, "\n");
    s3_sign_puts(&b, r->path);
    s3_sign_puts(&b, "\n");
    rc = s3_sign_query(&b, r->query);
    if (rc)
        return rc;
    s3_sign_puts(&b, "\n");
    for (size_t i = 0; i < r->n_hdrs; i++) {
        s3_sign_lower(&b, h[i].name);
        s3_sign_puts(&b, ":");
        s3_sign_value(&b, h[i].value);
        s3_sign_puts(&b, "\n");
    }
    s3_sign_puts(&b, "\n");
    s3_sign_names(&b, h, r->n_hdrs);
    s3_sign_puts(&b, "\n");
    s3_sign_puts(&b, r->payload_hex);
    return b.over ? -ENAMETOOLONG : 0;
}

static void s3_sign_scope(struct s3_sign_buf *b, const struct s3_sign_req *r)
{
    s3_sign_put(b, r->amz_date, 8);
    s3_sign_puts(b, "/");
    s3_sign_puts(b, r->region);
    s3_sign_puts(b, "/");
    s3_sign_puts(b, r->service);
    s3_sign_puts(b, "/aws4_request");
}

int s3_sign_string_to_sign(const struct s3_sign_req *r, char *out, size_t cap)
{
    char canon[S3_SIGN_CANON_MAX], hex[S3_SIGN_HEX_LEN + 1];
    if (!r->amz_date || strlen(r->amz_date) != S3_SIGN_DATE_LEN)
        return -EINVAL;
    int rc = s3_sign_canonical(r, canon, sizeof canon);
    if (rc)
        return rc;
    s3_sign_sha256_hex(canon, strlen(canon), hex);
    struct s3_sign_buf b = { out, cap, 0, cap == 0 };
    s3_sign_puts(&b, S3_SIGN_ALGO "\n");
    s3_sign_puts(&b, r->amz_date);
    s3_sign_puts(&b, "\n");
    s3_sign_scope(&b, r);
    s3_sign_puts(&b, "\n");
    s3_sign_puts(&b, hex);
    return b.over ? -ENAMETOOLONG : 0;
}

static void s3_sign_hmac(const uint8_t *key, size_t kn, const char *msg, size_t mn, uint8_t out[32])
{
    unsigned int n = 32;
    HMAC(EVP_sha256(), key, (int)kn, (const unsigned char *)msg, mn, out, &n);
}

int s3_sign_signature(const struct s3_sign_req *r, char *out)
{
    char sts[1024], k0[256];
    uint8_t k[32], mac[32];
    int rc = s3_sign_string_to_sign(r, sts, sizeof sts);
    if (rc)
        return rc;
    int n = snprintf(k0, sizeof k0, "AWS4%s", r->secret_key);
    if (n < 0 || (size_t)n >= sizeof k0)
        return -ENAMETOOLONG;
    s3_sign_hmac((const uint8_t *)k0, (size_t)n, r->amz_date, 8, k);
    s3_sign_hmac(k, sizeof k, r->region, strlen(r->region), k);
    s3_sign_hmac(k, sizeof k, r->service, strlen(r->service), k);
    s3_sign_hmac(k, sizeof k, "aws4_request", 12, k);
    s3_sign_hmac(k, sizeof k, sts, strlen(sts), mac);
    s3_sign_hex(mac, sizeof mac, out);
    explicit_bzero(k0, sizeof k0);
    explicit_bzero(k, sizeof k);
    return 0;
}

int s3_sign_authorization(const struct s3_sign_req *r, char *out, size_t cap)
{
    struct s3_sign_hdr h[S3_SIGN_MAX_HDRS];
    char sig[S3_SIGN_HEX_LEN + 1];
    int rc = s3_sign_signature(r, sig);
    if (rc)
        return rc;
    rc = s3_sign_sorted(r, h);
    if (rc)
        return rc;
    struct s3_sign_buf b = { out, cap, 0, cap == 0 };
    s3_sign_puts(&b, S3_SIGN_ALGO " Credential=");
    s3_sign_puts(&b, r->access_key);
    s3_sign_puts(&b, "/");
    s3_sign_scope(&b, r);
    s3_sign_puts(&b, ", SignedHeaders=");
    s3_sign_names(&b, h, r->n_hdrs);
    s3_sign_puts(&b, ", Signature=");
    s3_sign_puts(&b, sig);
    return b.over ? -ENAMETOOLONG : 0;
}
