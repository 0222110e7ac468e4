/*
 * s3_cfg.c — S3 URL, endpoint, region and credentials (see s3_cfg.h).
 */
#include "s3_cfg.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S3_CFG_ERR(...) (snprintf(err, err_cap, __VA_ARGS__), -EINVAL)

static int s3_cfg_bucket_ok(const char *b, size_t n)
{
    if (n < 3 || n > 63 || !isalnum((unsigned char)b[0]) || !isalnum((unsigned char)b[n - 1]))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)b[i]) || isdigit((unsigned char)b[i]) || b[i] == '.' ||
              b[i] == '-'))
            return 0;
    return 1;
}

static int s3_cfg_copy(char *dst, size_t cap, const char *src, size_t n)
{
    if (n >= cap)
        return -ENAMETOOLONG;
    memcpy(dst, src, n);
    dst[n] = '\0';
    return 0;
}

int s3_cfg_init(struct s3_cfg *c, const char *url, const char *endpoint, const char *region,
                char *err, size_t err_cap)
{
    memset(c, 0, sizeof *c);
    c->connect_timeout_ms = S3_CFG_CONNECT_MS;
    c->timeout_ms = S3_CFG_TIMEOUT_MS;
    if (!url || strncmp(url, "s3://", 5) != 0)
        return S3_CFG_ERR("%s: not an s3://BUCKET/PREFIX URL", url ? url : "(null)");
    const char *b = url + 5, *slash = strchr(b, '/');
    size_t bn = slash ? (size_t)(slash - b) : strlen(b);
    if (!s3_cfg_bucket_ok(b, bn) || s3_cfg_copy(c->bucket, sizeof c->bucket, b, bn))
        return S3_CFG_ERR("%s: bad bucket name (3-63 of a-z 0-9 . -)", url);
    const char *p = slash ? slash : "";
    while (*p == '/')
        p++;
    size_t pn = strlen(p);
    while (pn && p[pn - 1] == '/')
        pn--;
    if (s3_cfg_copy(c->prefix, sizeof c->prefix, p, pn))
        return S3_CFG_ERR("%s: prefix longer than %d bytes", url, S3_CFG_PREFIX_MAX - 1);
    if (strstr(c->prefix, "//"))
        return S3_CFG_ERR("%s: empty path element in the prefix", url);

    if (region && *region)
        snprintf(c->region, sizeof c->region, "%s", region);
    else if (getenv("AWS_REGION") && *getenv("AWS_REGION"))
        snprintf(c->region, sizeof c->region, "%s", getenv("AWS_REGION"));
    else if (getenv("AWS_DEFAULT_REGION") && *getenv("AWS_DEFAULT_REGION"))
        snprintf(c->region, sizeof c->region, "%s", getenv("AWS_DEFAULT_REGION"));
    else
        snprintf(c->region, sizeof c->region, "us-east-1");
    for (const char *r = c->region; *r; r++)
        if (!(isalnum((unsigned char)*r) || *r == '-'))
            return S3_CFG_ERR("%s: bad region", c->region);

    if (endpoint && *endpoint) {
        const char *h;
        if (strncmp(endpoint, "http://", 7) == 0)
            h = endpoint + 7;
        else if (strncmp(endpoint, "https://", 8) == 0)
            h = endpoint + 8;
        else
            return S3_CFG_ERR("%s: the endpoint must be an http:// or https:// URL", endpoint);
        size_t hn = strcspn(h, "/?#");
        if (hn == 0 || h[hn] == '?' || h[hn] == '#' || (h[hn] == '/' && h[hn + 1]))
            return S3_CFG_ERR("%s: the endpoint is scheme://host[:port], no path", endpoint);
        if (s3_cfg_copy(c->host, sizeof c->host, h, hn))
            return S3_CFG_ERR("%s: host too long", endpoint);
        int n = snprintf(c->base_url, sizeof c->base_url, "%.*s/%s", (int)(h - endpoint + hn),
                         endpoint, c->bucket);
        if (n < 0 || (size_t)n >= sizeof c->base_url)
            return S3_CFG_ERR("%s: endpoint too long", endpoint);
        snprintf(c->path_base, sizeof c->path_base, "/%s", c->bucket);
    } else if (strchr(c->bucket, '.')) {
        if (snprintf(c->host, sizeof c->host, "s3.%s.amazonaws.com", c->region) < 0 ||
            snprintf(c->base_url, sizeof c->base_url, "https://%s/%s", c->host, c->bucket) < 0)
            return -EINVAL;
        snprintf(c->path_base, sizeof c->path_base, "/%s", c->bucket);
    } else {
        if (snprintf(c->host, sizeof c->host, "%s.s3.%s.amazonaws.com", c->bucket, c->region) < 0 ||
            snprintf(c->base_url, sizeof c->base_url, "https://%s", c->host) < 0)
            return -EINVAL;
    }
    return 0;
}

static int s3_cfg_set(char *dst, size_t cap, const char *v)
{
    size_t n = strlen(v);
    while (n && isspace((unsigned char)v[n - 1]))
        n--;
    return s3_cfg_copy(dst, cap, v, n);
}

/* The [profile] section of an AWS credentials file (INI). */
static int s3_cfg_file(struct s3_cfg *c, const char *path, const char *profile)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    int in = 0, rc = 0;
    if (!f)
        return -errno;
    while (fgets(line, sizeof line, f)) {
        char *s = line;
        while (isspace((unsigned char)*s))
            s++;
        if (*s == '#' || *s == ';' || !*s)
            continue;
        if (*s == '[') {
            char *e = strchr(s, ']');
            if (!e)
                continue;
            *e = '\0';
            s++;
            while (isspace((unsigned char)*s))
                s++;
            if (strncmp(s, "profile ", 8) == 0)
                s += 8;
            in = strcmp(s, profile) == 0;
            continue;
        }
        char *eq = strchr(s, '=');
        if (!in || !eq)
            continue;
        char *k = s, *ke = eq, *v = eq + 1;
        while (ke > k && isspace((unsigned char)ke[-1]))
            ke--;
        *ke = '\0';
        while (isspace((unsigned char)*v))
            v++;
        if (strcmp(k, "aws_access_key_id") == 0)
            rc = rc ? rc : s3_cfg_set(c->access_key, sizeof c->access_key, v);
        else if (strcmp(k, "aws_secret_access_key") == 0)
            rc = rc ? rc : s3_cfg_set(c->secret_key, sizeof c->secret_key, v);
        else if (strcmp(k, "aws_session_token") == 0)
            rc = rc ? rc : s3_cfg_set(c->session_token, sizeof c->session_token, v);
    }
    explicit_bzero(line, sizeof line);
    fclose(f);
    return rc;
}

int s3_cfg_credentials(struct s3_cfg *c, char *err, size_t err_cap)
{
    const char *ak = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY");
    char path[4096];
    c->access_key[0] = c->secret_key[0] = c->session_token[0] = '\0';
    if (ak && *ak && sk && *sk) {
        const char *tok = getenv("AWS_SESSION_TOKEN");
        if (s3_cfg_copy(c->access_key, sizeof c->access_key, ak, strlen(ak)) ||
            s3_cfg_copy(c->secret_key, sizeof c->secret_key, sk, strlen(sk)) ||
            (tok && s3_cfg_copy(c->session_token, sizeof c->session_token, tok, strlen(tok)))) {
            snprintf(err, err_cap, "AWS credentials from the environment are too long");
            return -ENOKEY;
        }
        return 0;
    }
    const char *file = getenv("AWS_SHARED_CREDENTIALS_FILE"), *home = getenv("HOME");
    const char *profile = getenv("AWS_PROFILE");
    if (!profile || !*profile)
        profile = "default";
    if (file && *file)
        snprintf(path, sizeof path, "%s", file);
    else if (home && *home)
        snprintf(path, sizeof path, "%s/.aws/credentials", home);
    else
        path[0] = '\0';
    int rc = path[0] ? s3_cfg_file(c, path, profile) : -ENOENT;
    if (rc == 0 && c->access_key[0] && c->secret_key[0])
        return 0;
    s3_cfg_wipe(c);
    snprintf(err, err_cap,
             "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or profile "
             "'%s' in %s (%s)", profile, path[0] ? path : "~/.aws/credentials",
             rc ? strerror(-rc) : "no aws_access_key_id/aws_secret_access_key there");
    return -ENOKEY;
}

void s3_cfg_wipe(struct s3_cfg *c)
{
    explicit_bzero(c->access_key, sizeof c->access_key);
    explicit_bzero(c->secret_key, sizeof c->secret_key);
    explicit_bzero(c->session_token, sizeof c->session_token);
}
