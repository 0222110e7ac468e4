/*
 * fuzz_trig_cfg.c — the trigger configuration keys (trig.c): any key and
 * value either are refused with a message, or leave a configuration that
 * trig_cfg_check accepts; triggers fired at fuzzed times keep the windows
 * sorted and disjoint.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "collector/daemon/trig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = 0;
    /* "key=value" */
    char *eq = strchr(s, '=');
    const char *key = s, *value = "";
    if (eq) {
        *eq = 0;
        value = eq + 1;
    }
    struct trig_cfg c;
    char err[256];
    trig_cfg_default(&c);
    err[0] = 0;
    if (trig_cfg_set(&c, key, value, err, sizeof err) != 0) {
        if (!err[0])
            abort();
    } else if (trig_cfg_check(&c, err, sizeof err) != 0) {
        abort();
    }
    static struct trig_state st;
    trig_init(&st, &c);
    for (size_t i = 0; i + 8 <= size && i < 8 * 64; i += 8) {
        uint64_t t;
        memcpy(&t, data + i, 8);
        trig_fire(&st, (uint32_t)(t & 7), t);
    }
    for (unsigned i = 1; i < st.nwin; i++)
        if (st.win[i - 1].t1_ns >= st.win[i].t0_ns || st.win[i].t0_ns > st.win[i].t1_ns)
            abort();
    free(s);
    return 0;
}
