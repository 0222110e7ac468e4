/*
 * s3_xml.h — the two XML answers the S3 client reads: a ListObjectsV2 page
 * and an error body (<Error><Code>..</Code><Message>..</Message></Error>).
 *
 * Purpose: pull the few elements d9 needs out of a response body, nothing
 * more; it is not a general XML parser (no attributes, no CDATA, no nesting
 * beyond what S3 sends).
 *
 * Called by: s3_client.c; tests/fuzz/fuzz_s3_xml.c.
 *
 * Invariants: the body is untrusted. Every read stays inside [buf, buf+len)
 * (no NUL needed); text is copied with the five XML entities and numeric
 * character references decoded into bounded buffers (S3_XML_KEY_MAX); a
 * value too long, a bad entity, a bad number or an unclosed element gives
 * -EBADMSG and the callback is not called for that element.
 *
 * Must never: allocate, recurse, or read past len.
 */
#ifndef D9_S3_XML_H
#define D9_S3_XML_H

#include <stddef.h>
#include <stdint.h>

#define S3_XML_KEY_MAX 1024           /* S3's limit of a key, in bytes */
#define S3_XML_TOKEN_MAX 1024         /* a continuation token */
#define S3_XML_ETAG_MAX 128

struct s3_xml_obj {
    const char *key;                  /* decoded, NUL-terminated */
    uint64_t size;
    const char *etag;                 /* as sent, quotes included, "" if none */
};

/* Called once per <Contents>; a non-zero return stops the parse and is returned. */
typedef int (*s3_xml_obj_fn)(const struct s3_xml_obj *obj, void *ctx);

struct s3_xml_list {
    int truncated;                    /* <IsTruncated>true</IsTruncated> */
    char next_token[S3_XML_TOKEN_MAX + 1]; /* <NextContinuationToken>, "" if none */
    unsigned n_keys;                  /* callbacks made */
};

/* Parse a ListObjectsV2 page. Returns 0, -EBADMSG, or the callback's value. */
int s3_xml_list_parse(const char *buf, size_t len, s3_xml_obj_fn fn, void *ctx,
                      struct s3_xml_list *out);

/* Parse an error body into code and msg (each "" when absent). Returns 0 if
 * <Code> was found, -ENOENT if not, -EBADMSG if malformed. */
int s3_xml_error_parse(const char *buf, size_t len, char *code, size_t code_cap,
                       char *msg, size_t msg_cap);

#endif /* D9_S3_XML_H */
