/*
 * s3_cfg.h — where and as whom the S3 client talks: bucket and prefix from
 * an s3://BUCKET/PREFIX URL, the endpoint, the region, the credentials.
 *
 * Called by: d9collectd (--ship), d9 (pull, --store s3://), s3_client.c.
 *
 * Addressing: with an endpoint URL (--s3-endpoint http://127.0.0.1:9000)
 * requests are path-style (ENDPOINT/BUCKET/KEY), as S3-compatible servers
 * expect; without one they go to AWS, virtual-hosted
 * (https://BUCKET.s3.REGION.amazonaws.com/KEY; path-style for a bucket name
 * with dots, which TLS certificates do not cover).
 *
 * Credentials (never from the command line): AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN when the first two are set;
 * otherwise the profile AWS_PROFILE (default "default") of the shared
 * credentials file AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials).
 * Region: the argument, else AWS_REGION, else AWS_DEFAULT_REGION, else
 * us-east-1.
 *
 * Must never: print or log a secret; accept a bucket name S3 would refuse.
 */
#ifndef D9_S3_CFG_H
#define D9_S3_CFG_H

#include <stddef.h>

#define S3_CFG_PREFIX_MAX 512

struct s3_cfg {
    char bucket[64];                  /* 3..63 of a-z 0-9 . - */
    char prefix[S3_CFG_PREFIX_MAX];   /* no leading or trailing '/', may be "" */
    char region[64];
    char base_url[400];               /* scheme://host[:port][/BUCKET] */
    char host[256];                   /* the Host header (signed) */
    char path_base[72];               /* "/BUCKET" path-style, "" virtual-hosted */
    char access_key[128];
    char secret_key[128];
    char session_token[2048];         /* "" when none */
    long connect_timeout_ms;          /* defaults: S3_CFG_CONNECT_MS ... */
    long timeout_ms;                  /* whole request */
};

#define S3_CFG_CONNECT_MS 5000
#define S3_CFG_TIMEOUT_MS 120000

/* Everything but credentials: url "s3://BUCKET[/PREFIX]", endpoint may be
 * NULL or "" (AWS), region NULL or "" (environment, then us-east-1). On
 * failure err gets one line and -EINVAL is returned. */
int s3_cfg_init(struct s3_cfg *c, const char *url, const char *endpoint, const char *region,
                char *err, size_t err_cap);

/* Credentials from the environment or the credentials file (see above).
 * -ENOKEY with a line in err when none are found. */
int s3_cfg_credentials(struct s3_cfg *c, char *err, size_t err_cap);

/* Forget the secrets (zeroes them). */
void s3_cfg_wipe(struct s3_cfg *c);

#endif /* D9_S3_CFG_H */
