/*
 * fuzz_sym.c — libFuzzer target for the symbolizer's parsers
 * (collector/store/sym.c): ELF64 files (headers, PT_LOAD/PT_NOTE, section
 * tables, .symtab/.dynsym, string tables, build-id notes), /proc/<pid>/maps
 * text, /proc/kallsyms text and "d9.map" records read back from segments.
 * All of them are hostile input; none may crash or read out of bounds.
 * Built and run by tests/fuzz/run.sh.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "collector/store/sym.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1);     /* exact size for ASan */
    if (!buf)
        return 0;
    memcpy(buf, data, size);

    struct sym_elf *e;
    if (sym_elf_parse(buf, size, &e) == 0) {
        size_t idl;
        sym_elf_build_id(e, &idl);
        if (idl > SYM_BUILD_ID_MAX)
            abort();
        for (size_t i = 0; i + 8 <= size && i < 4096; i += 8) {
            uint64_t a, va, off;
            memcpy(&a, data + i, 8);
            const char *n = sym_elf_lookup(e, a, &off);
            if (n && strlen(n) > size)
                abort();
            sym_elf_offset_to_vaddr(e, a, &va);
        }
        sym_elf_close(e);
    }

    struct sym_map *m;
    size_t n, bad;
    if (sym_maps_parse((const char *)buf, size, &m, &n, &bad) == 0)
        sym_maps_free(m, n);

    struct sym_kernel *k;
    if (sym_kernel_parse((const char *)buf, size, &k) == 0) {
        if (size >= 8) {
            uint64_t a;
            memcpy(&a, data, 8);
            sym_kernel_lookup(k, a, NULL);
        }
        sym_kernel_free(k);
    }

    struct sym_map_rec r;
    if (sym_map_decode(buf, size, &r) == 0 &&
        (strlen(r.path) >= sizeof r.path || strlen(r.build_id) >= sizeof r.build_id))
        abort();
    free(buf);
    return 0;
}
