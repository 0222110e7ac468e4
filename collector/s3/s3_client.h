/*
 * s3_client.h — a small S3 client over libcurl: PUT, GET, HEAD, DELETE of
 * one object and ListObjectsV2, every request signed by s3_sign.c (our own
 * Signature V4 in the headers, not CURLOPT_AWS_SIGV4, so the signature is
 * the tested one).
 *
 * Called by: the collector's uploader (collector/daemon/ship.c), d9 pull and
 * d9 --store s3:// (collector/cli), tests.
 *
 * Ownership and threads: one struct s3_client per thread (it holds one curl
 * handle and a copy of the config); nothing is shared between clients.
 *
 * Checksums: a PUT sends x-amz-content-sha256 (the signed hash of the body)
 * and Content-MD5, so the server refuses a body that changed on the way
 * (BadDigest / XAmzContentSHA256Mismatch).
 *
 * Errors: 0 or -errno, and a readable line in the client's err buffer
 * (s3_client_error): "PUT s3://BUCKET/KEY: HTTP 403 SignatureDoesNotMatch:
 * <S3's message>" or "GET ...: connection refused (curl: ...)". Mapping:
 *   404 / NoSuchKey           -ENOENT       403                  -EACCES
 *   other 4xx                 -EIO          (not worth a retry)
 *   5xx, 429, timeout, no connection, reset  -EAGAIN (retry with backoff)
 *   body larger than the caller's bound      -EFBIG
 *
 * Must never: follow redirects to another host, log credentials, hold a
 * response body without a bound.
 */
#ifndef D9_S3_CLIENT_H
#define D9_S3_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "s3_cfg.h"
#include "s3_xml.h"

#define S3_CLIENT_ERR_MAX 512
#define S3_CLIENT_ERRBODY_MAX (64 * 1024) /* error bodies kept for <Code>/<Message> */

struct s3_client;

/* A client for cfg (copied; the caller may wipe its own copy). */
int s3_client_open(struct s3_client **out, const struct s3_cfg *cfg);
void s3_client_close(struct s3_client *c);

/* Abort a transfer in progress (-ECANCELED) once *stop becomes non-zero
 * (read atomically; another thread sets it to shut down). NULL: never. */
void s3_client_set_stop(struct s3_client *c, const int *stop);

/* The last error line ("" after a success). */
const char *s3_client_error(const struct s3_client *c);
/* HTTP status of the last request (0 when none was received). */
long s3_client_status(const struct s3_client *c);
/* 1 when rc (from a call below) is worth retrying later. */
int s3_client_retryable(int rc);

/* The full key of name under the configured prefix ("PREFIX/name"). */
int s3_client_key(const struct s3_client *c, const char *name, char *out, size_t cap);

/* PUT the bytes as object key (a full key, see s3_client_key). */
int s3_client_put(struct s3_client *c, const char *key, const void *buf, size_t len);

/* GET object key into buf (at most cap bytes; -EFBIG beyond); *len = size. */
int s3_client_get(struct s3_client *c, const char *key, void *buf, size_t cap, size_t *len);
/* GET object key into f (at most max bytes; -EFBIG beyond); *len = size. */
int s3_client_get_file(struct s3_client *c, const char *key, FILE *f, uint64_t max,
                       uint64_t *len);

/* HEAD: size and ETag (etag may be NULL). -ENOENT when absent. */
int s3_client_head(struct s3_client *c, const char *key, uint64_t *size, char *etag,
                   size_t etag_cap);

/* DELETE object key (absent is not an error, as in S3). */
int s3_client_delete(struct s3_client *c, const char *key);

/* Every object whose key starts with prefix (a full key prefix), page by
 * page (continuation tokens); fn per key with its size and ETag. A non-zero
 * return of fn stops the listing and is returned. */
int s3_client_list(struct s3_client *c, const char *prefix, s3_xml_obj_fn fn, void *ctx);

#endif /* D9_S3_CLIENT_H */
