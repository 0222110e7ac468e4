/*
 * s3_sign.h — AWS Signature Version 4 for S3 requests, as pure functions.
 *
 * Purpose: build the canonical request, the string to sign, the signing key
 * and the Authorization header of one request, with the time passed in, so
 * tests check every step against the published AWS vectors. SHA-256, HMAC and
 * MD5 come from OpenSSL's libcrypto.
 *
 * Called by: s3_client.c (every request it sends), tests/unit/test_s3_sign.c.
 *
 * Invariants:
 *   - The caller gives the path already URI-encoded (s3_sign_uri_encode with
 *     keep_slash) and the query as "k=v&k2=v2" with keys and values already
 *     encoded; the canonical query sorts the pairs (key, then value) and gives
 *     a bare key "k" as "k=".
 *   - Headers: names are lower-cased, values trimmed and runs of spaces folded
 *     to one; all headers given are signed, sorted by name. The caller passes
 *     host and x-amz-date among them (and x-amz-content-sha256 for S3).
 *   - Every output is NUL-terminated; a too-small buffer gives -ENAMETOOLONG
 *     and never a truncated signature.
 *
 * Must never: read the clock, the environment or any file; log secrets.
 */
#ifndef D9_S3_SIGN_H
#define D9_S3_SIGN_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define S3_SIGN_HEX_LEN 64            /* a SHA-256 in hex, without the NUL */
#define S3_SIGN_DATE_LEN 16           /* "YYYYMMDDTHHMMSSZ" */
#define S3_SIGN_MAX_HDRS 16           /* headers one request may sign */
#define S3_SIGN_CANON_MAX 8192        /* bound of a canonical request */

struct s3_sign_hdr {
    const char *name;
    const char *value;
};

struct s3_sign_req {
    const char *method;               /* "GET", "PUT", ... */
    const char *path;                 /* URI-encoded, starts with '/' */
    const char *query;                /* "" or "a=1&b=2" (encoded) */
    const struct s3_sign_hdr *hdrs;   /* includes host and x-amz-date */
    size_t n_hdrs;
    const char *payload_hex;          /* hex SHA-256 of the body, or "UNSIGNED-PAYLOAD" */
    const char *amz_date;             /* "YYYYMMDDTHHMMSSZ" (UTC) */
    const char *region;               /* "us-east-1" */
    const char *service;              /* "s3" */
    const char *access_key;
    const char *secret_key;
};

/* "YYYYMMDDTHHMMSSZ" of t in UTC; out holds S3_SIGN_DATE_LEN + 1 bytes. */
int s3_sign_amz_date(time_t t, char *out);

/* Lower-case hex SHA-256 of buf; out holds S3_SIGN_HEX_LEN + 1 bytes. */
void s3_sign_sha256_hex(const void *buf, size_t len, char *out);

/* Raw digests, for checksum headers. */
void s3_sign_sha256(const void *buf, size_t len, uint8_t out[32]);
void s3_sign_md5(const void *buf, size_t len, uint8_t out[16]);

/* Standard base64 of n bytes into out (cap bytes with the NUL). */
int s3_sign_base64(const uint8_t *in, size_t n, char *out, size_t cap);

/* AWS URI encoding: unreserved A-Z a-z 0-9 - . _ ~ stay, every other byte
 * becomes %XX (upper hex); '/' stays when keep_slash. */
int s3_sign_uri_encode(const char *s, int keep_slash, char *out, size_t cap);

/* Step 1: the canonical request. */
int s3_sign_canonical(const struct s3_sign_req *r, char *out, size_t cap);

/* Step 2: the string to sign (algorithm, date, scope, hash of step 1). */
int s3_sign_string_to_sign(const struct s3_sign_req *r, char *out, size_t cap);

/* Step 3: hex HMAC of the string to sign with the derived signing key;
 * out holds S3_SIGN_HEX_LEN + 1 bytes. */
int s3_sign_signature(const struct s3_sign_req *r, char *out);

/* Step 4: the whole Authorization header value
 * "AWS4-HMAC-SHA256 Credential=AK/DATE/REGION/SERVICE/aws4_request,
 *  SignedHeaders=a;b, Signature=HEX". */
int s3_sign_authorization(const struct s3_sign_req *r, char *out, size_t cap);

#endif /* D9_S3_SIGN_H */
