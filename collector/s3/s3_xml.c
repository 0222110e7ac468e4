/*
 * s3_xml.c — bounded extraction of S3's ListObjectsV2 and error XML
 * (see s3_xml.h). Each element is found by searching its open and close tags
 * inside the range of its parent, so a page is scanned a few times over but
 * never outside the buffer.
 */
#include "s3_xml.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Text of the first <tag>...</tag> in [*pos, end): sets *tb and *te to the text
 * and *pos past the close tag. 1 found, 0 absent, -EBADMSG unclosed. */
static int s3_xml_find(const char **pos, const char *end, const char *tag,
                       const char **tb, const char **te)
{
    char open[64], close[64];
    size_t tn = strlen(tag);
    if (tn + 4 > sizeof open)
        return -EINVAL;
    open[0] = '<';
    memcpy(open + 1, tag, tn);
    open[tn + 1] = '>';
    close[0] = '<';
    close[1] = '/';
    memcpy(close + 2, tag, tn);
    close[tn + 2] = '>';
    const char *o = memmem(*pos, (size_t)(end - *pos), open, tn + 2);
    if (!o)
        return 0;
    const char *b = o + tn + 2;
    const char *c = memmem(b, (size_t)(end - b), close, tn + 3);
    if (!c)
        return -EBADMSG;
    *tb = b;
    *te = c;
    *pos = c + tn + 3;
    return 1;
}

static int s3_xml_utf8(unsigned long cp, char *out, size_t *o, size_t cap)
{
    unsigned char u[4];
    size_t n;
    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return -EBADMSG;
    if (cp < 0x80) {
        u[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (unsigned char)(0xC0 | (cp >> 6));
        u[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (unsigned char)(0xE0 | (cp >> 12));
        u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (unsigned char)(0xF0 | (cp >> 18));
        u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    if (*o + n >= cap)
        return -EBADMSG;
    memcpy(out + *o, u, n);
    *o += n;
    return 0;
}

/* Decode the text [b, e) into out (cap bytes with the NUL). */
static int s3_xml_text(const char *b, const char *e, char *out, size_t cap)
{
    static const struct { const char *name; char c; } ents[] = {
        { "amp;", '&' }, { "lt;", '<' }, { "gt;", '>' }, { "quot;", '"' }, { "apos;", '\'' },
    };
    size_t o = 0;
    if (cap == 0)
        return -EBADMSG;
    while (b < e) {
        if (*b == '<')
            return -EBADMSG;          /* markup inside a text element */
        if (*b != '&') {
            if (o + 1 >= cap)
                return -EBADMSG;
            out[o++] = *b++;
            continue;
        }
        b++;
        int done = 0;
        for (size_t i = 0; i < sizeof ents / sizeof ents[0] && !done; i++) {
            size_t n = strlen(ents[i].name);
            if ((size_t)(e - b) >= n && memcmp(b, ents[i].name, n) == 0) {
                if (o + 1 >= cap)
                    return -EBADMSG;
                out[o++] = ents[i].c;
                b += n;
                done = 1;
            }
        }
        if (done)
            continue;
        if (b >= e || *b != '#')
            return -EBADMSG;
        b++;
        int base = 10;
        if (b < e && (*b == 'x' || *b == 'X')) {
            base = 16;
            b++;
        }
        unsigned long cp = 0;
        int digits = 0;
        for (; b < e && *b != ';'; b++, digits++) {
            int d;
            if (*b >= '0' && *b <= '9')
                d = *b - '0';
            else if (base == 16 && *b >= 'a' && *b <= 'f')
                d = *b - 'a' + 10;
            else if (base == 16 && *b >= 'A' && *b <= 'F')
                d = *b - 'A' + 10;
            else
                return -EBADMSG;
            if (digits >= 8)
                return -EBADMSG;
            cp = cp * (unsigned long)base + (unsigned long)d;
        }
        if (b >= e || digits == 0)
            return -EBADMSG;
        b++;                          /* the ';' */
        int rc = s3_xml_utf8(cp, out, &o, cap);
        if (rc)
            return rc;
    }
    out[o] = '\0';
    return 0;
}

static int s3_xml_u64(const char *b, const char *e, uint64_t *v)
{
    uint64_t x = 0;
    if (b == e)
        return -EBADMSG;
    for (; b < e; b++) {
        if (*b < '0' || *b > '9' || x > (UINT64_MAX - 9) / 10)
            return -EBADMSG;
        x = x * 10 + (uint64_t)(*b - '0');
    }
    *v = x;
    return 0;
}

/* One <Contents> block [b, e). */
static int s3_xml_contents(const char *b, const char *e, s3_xml_obj_fn fn, void *ctx,
                           struct s3_xml_list *out)
{
    char key[S3_XML_KEY_MAX + 1], etag[S3_XML_ETAG_MAX + 1] = "";
    const char *tb, *te, *p = b;
    struct s3_xml_obj obj = { key, 0, etag };
    int rc = s3_xml_find(&p, e, "Key", &tb, &te);
    if (rc <= 0)
        return -EBADMSG;
    if ((rc = s3_xml_text(tb, te, key, sizeof key)) != 0)
        return rc;
    p = b;
    if ((rc = s3_xml_find(&p, e, "Size", &tb, &te)) < 0)
        return rc;
    if (rc == 1 && (rc = s3_xml_u64(tb, te, &obj.size)) != 0)
        return rc;
    p = b;
    if ((rc = s3_xml_find(&p, e, "ETag", &tb, &te)) < 0)
        return rc;
    if (rc == 1 && (rc = s3_xml_text(tb, te, etag, sizeof etag)) != 0)
        return rc;
    out->n_keys++;
    return fn ? fn(&obj, ctx) : 0;
}

int s3_xml_list_parse(const char *buf, size_t len, s3_xml_obj_fn fn, void *ctx,
                      struct s3_xml_list *out)
{
    const char *end = buf + len, *p = buf, *tb, *te;
    char flag[8];
    int rc;
    memset(out, 0, sizeof *out);
    if (!memmem(buf, len, "<ListBucketResult", 17))
        return -EBADMSG;
    while ((rc = s3_xml_find(&p, end, "Contents", &tb, &te)) == 1) {
        rc = s3_xml_contents(tb, te, fn, ctx, out);
        if (rc)
            return rc;
    }
    if (rc < 0)
        return rc;
    p = buf;
    rc = s3_xml_find(&p, end, "IsTruncated", &tb, &te);
    if (rc < 0)
        return rc;
    if (rc == 1) {
        if (s3_xml_text(tb, te, flag, sizeof flag))
            return -EBADMSG;
        out->truncated = strcmp(flag, "true") == 0;
    }
    p = buf;
    rc = s3_xml_find(&p, end, "NextContinuationToken", &tb, &te);
    if (rc < 0)
        return rc;
    if (rc == 1 && s3_xml_text(tb, te, out->next_token, sizeof out->next_token))
        return -EBADMSG;
    if (out->truncated && !out->next_token[0])
        return -EBADMSG;              /* a next page we could not ask for */
    return 0;
}

int s3_xml_error_parse(const char *buf, size_t len, char *code, size_t code_cap,
                       char *msg, size_t msg_cap)
{
    const char *end = buf + len, *p = buf, *tb, *te;
    if (code_cap)
        code[0] = '\0';
    if (msg_cap)
        msg[0] = '\0';
    int rc = s3_xml_find(&p, end, "Code", &tb, &te);
    if (rc <= 0)
        return rc ? rc : -ENOENT;
    if (s3_xml_text(tb, te, code, code_cap))
        return -EBADMSG;
    p = buf;
    rc = s3_xml_find(&p, end, "Message", &tb, &te);
    if (rc < 0)
        return rc;
    if (rc == 1 && s3_xml_text(tb, te, msg, msg_cap))
        return -EBADMSG;
    return 0;
}
