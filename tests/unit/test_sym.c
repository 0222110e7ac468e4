/*
 * test_sym.c — collector/store/sym.c: /proc/<pid>/maps parsing, the ELF64
 * reader on this test binary and on libc (symbols, build-id, PT_LOAD
 * translation of PIE addresses), hostile ELF buffers, kallsyms parsing, the
 * "d9.map" snapshot records and the query-time resolver end to end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collector/store/sym.h"
#include "shm/record.h"

/* A function of this binary whose name the tests look up. */
__attribute__((noinline)) int d9test_symbol_marker(int x);
__attribute__((noinline)) int d9test_symbol_marker(int x)
{
    __asm__ volatile("" : "+r"(x));
    return x * 3 + 1;
}

static uint8_t *read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    uint8_t *b = malloc((size_t)st.st_size);
    assert_non_null(b);
    size_t n = 0;
    while (n < (size_t)st.st_size) {
        ssize_t r = read(fd, b + n, (size_t)st.st_size - n);
        assert_true(r > 0);
        n += (size_t)r;
    }
    close(fd);
    *len = n;
    return b;
}

/* ---- maps ------------------------------------------------------------------- */

static const char MAPS[] =
    "55d0c0a00000-55d0c0a01000 r--p 00000000 fd:01 1234   /usr/bin/my prog\n"
    "55d0c0a01000-55d0c0a05000 r-xp 00001000 fd:01 1234   /usr/bin/my prog\n"
    "7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
    "7ffd1000000-7ffd1021000 rw-p 00000000 00:00 0                  [stack]\n"
    "garbage line\n"
    "7f0000100000-7f0000000000 r-xp 00000000 00:00 0 /backwards\n"
    "7f1000000000-7f1000001000 r-xp 00002000 08:02 99 /lib/x.so (deleted)";

static void test_maps_parse_reads_every_field(void **state)
{
    (void)state;
    struct sym_map *m;
    size_t n, bad;
    assert_int_equal(sym_maps_parse(MAPS, strlen(MAPS), &m, &n, &bad), 0);
    assert_int_equal(n, 5);
    assert_int_equal(m[1].start, 0x55d0c0a01000ull);
    assert_int_equal(m[1].end, 0x55d0c0a05000ull);
    assert_int_equal(m[1].pgoff, 0x1000);
    assert_int_equal(m[1].dev_major, 0xfd);
    assert_int_equal(m[1].dev_minor, 1);
    assert_int_equal(m[1].inode, 1234);
    assert_true(m[1].exec);
    assert_false(m[0].exec);
    assert_string_equal(m[1].path, "/usr/bin/my prog");     /* spaces kept */
    assert_string_equal(m[2].path, "");                     /* anonymous */
    assert_string_equal(m[3].path, "[stack]");
    assert_string_equal(m[4].path, "/lib/x.so (deleted)");   /* last line, no newline */
    sym_maps_free(m, n);
}

static void test_maps_parse_skips_and_counts_malformed_lines(void **state)
{
    (void)state;
    struct sym_map *m;
    size_t n, bad;
    assert_int_equal(sym_maps_parse(MAPS, strlen(MAPS), &m, &n, &bad), 0);
    assert_int_equal(bad, 2);   /* "garbage line" and the backwards range */
    sym_maps_free(m, n);
}

static void test_maps_read_of_self_has_an_executable_mapping_of_this_binary(void **state)
{
    (void)state;
    struct sym_map *m;
    size_t n;
    assert_int_equal(sym_maps_read((uint32_t)getpid(), &m, &n), 0);
    uintptr_t fn = (uintptr_t)&d9test_symbol_marker;
    int found = 0;
    for (size_t i = 0; i < n; i++)
        if (m[i].exec && fn >= m[i].start && fn < m[i].end && strstr(m[i].path, "test_sym"))
            found = 1;
    assert_true(found);
    sym_maps_free(m, n);
}

/* ---- ELF ---------------------------------------------------------------------- */

static void test_elf_open_self_finds_test_function(void **state)
{
    (void)state;
    struct sym_elf *e;
    assert_int_equal(sym_elf_open("/proc/self/exe", &e), 0);
    assert_true(sym_elf_nsyms(e) > 0);
    uint64_t va, off;
    assert_int_equal(sym_elf_find(e, "d9test_symbol_marker", &va), 0);
    assert_string_equal(sym_elf_lookup(e, va, &off), "d9test_symbol_marker");
    assert_int_equal(off, 0);
    assert_string_equal(sym_elf_lookup(e, va + 1, &off), "d9test_symbol_marker");
    assert_int_equal(off, 1);
    sym_elf_close(e);
}

static void test_elf_reads_gnu_build_id_of_self(void **state)
{
    (void)state;
    struct sym_elf *e;
    assert_int_equal(sym_elf_open("/proc/self/exe", &e), 0);
    size_t len;
    const uint8_t *id = sym_elf_build_id(e, &len);
    assert_non_null(id);
    assert_int_equal(len, 20);  /* sha1 build-ids: Debian's default */
    char hex[2 * SYM_BUILD_ID_MAX + 1];
    assert_int_equal(strlen(sym_build_id_hex(id, len, hex, sizeof hex)), 40);
    sym_elf_close(e);
}

static void test_elf_translates_runtime_address_through_pt_load(void **state)
{
    (void)state;
    /* runtime address -> file offset via the mapping -> vaddr via PT_LOAD */
    struct sym_map *m;
    size_t n;
    assert_int_equal(sym_maps_read((uint32_t)getpid(), &m, &n), 0);
    uintptr_t fn = (uintptr_t)&d9test_symbol_marker;
    struct sym_elf *e;
    assert_int_equal(sym_elf_open("/proc/self/exe", &e), 0);
    uint64_t want, va = 0;
    assert_int_equal(sym_elf_find(e, "d9test_symbol_marker", &want), 0);
    int done = 0;
    for (size_t i = 0; i < n && !done; i++) {
        if (!m[i].exec || fn < m[i].start || fn >= m[i].end)
            continue;
        assert_int_equal(sym_elf_offset_to_vaddr(e, fn - m[i].start + m[i].pgoff, &va), 0);
        done = 1;
    }
    assert_true(done);
    assert_int_equal(va, want);
    sym_elf_close(e);
    sym_maps_free(m, n);
}

static const char *libc_path(char *buf, size_t cap)
{
    struct sym_map *m;
    size_t n;
    buf[0] = 0;
    assert_int_equal(sym_maps_read((uint32_t)getpid(), &m, &n), 0);
    for (size_t i = 0; i < n; i++)
        if (m[i].exec && strstr(m[i].path, "/libc.so"))
            snprintf(buf, cap, "%s", m[i].path);
    sym_maps_free(m, n);
    return buf;
}

static void test_elf_finds_known_libc_symbol_in_dynsym(void **state)
{
    (void)state;
    char path[512];
    assert_true(libc_path(path, sizeof path)[0] != 0);
    struct sym_elf *e;
    assert_int_equal(sym_elf_open(path, &e), 0);
    uint64_t va;
    /* aliases share an address and only one name is kept */
    assert_true(sym_elf_find(e, "getpid", &va) == 0 || sym_elf_find(e, "__getpid", &va) == 0);
    const char *name = sym_elf_lookup(e, va, NULL);
    assert_non_null(name);
    assert_non_null(strstr(name, "getpid"));    /* or an alias like __getpid */
    sym_elf_close(e);
}

static void test_elf_rejects_non_elf_input(void **state)
{
    (void)state;
    struct sym_elf *e = (void *)1;
    uint8_t junk[128];
    memset(junk, 'x', sizeof junk);
    assert_int_equal(sym_elf_parse(junk, sizeof junk, &e), -ENOEXEC);
    assert_null(e);
    assert_int_equal(sym_elf_parse(junk, 4, &e), -ENOEXEC);
    assert_int_equal(sym_elf_open("/proc/self/status", &e), -ENOEXEC);  /* not regular */
    assert_int_equal(sym_elf_open("/nonexistent/file", &e), -ENOENT);
}

/* A segment names the ELF files d9 flame reads: a FIFO there is refused at
 * once (an open without O_NONBLOCK would wait for a writer forever). */
static void test_elf_open_refuses_a_fifo_without_blocking(void **state)
{
    (void)state;
    char dir[] = "/tmp/d9symfifo.XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/lib.so", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    struct sym_elf *e = (void *)1;
    alarm(10);          /* a regression hangs: end it as a failure */
    assert_int_equal(sym_elf_open(path, &e), -ENOEXEC);
    alarm(0);
    unlink(path);
    rmdir(dir);
}

static void test_elf_rejects_program_headers_past_end_of_file(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = read_file("/proc/self/exe", &len);
    Elf64_Ehdr eh;
    memcpy(&eh, b, sizeof eh);
    eh.e_phoff = len - 8;
    memcpy(b, &eh, sizeof eh);
    struct sym_elf *e;
    assert_int_equal(sym_elf_parse(b, len, &e), -EBADMSG);
    free(b);
}

static void test_elf_survives_hostile_section_table(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = read_file("/proc/self/exe", &len);
    Elf64_Ehdr eh;
    memcpy(&eh, b, sizeof eh);
    /* every section offset/size/link/entsize pointed somewhere bad */
    for (uint16_t i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        memcpy(&sh, b + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
        switch (i % 4) {
        case 0: sh.sh_offset = UINT64_MAX - 4; break;
        case 1: sh.sh_size = UINT64_MAX; break;
        case 2: sh.sh_link = 0xffff; break;
        default: sh.sh_entsize = 7; break;
        }
        memcpy(b + eh.e_shoff + (size_t)i * sizeof sh, &sh, sizeof sh);
    }
    struct sym_elf *e;
    int rc = sym_elf_parse(b, len, &e);
    assert_true(rc == 0 || rc == -EBADMSG);
    if (rc == 0)
        sym_elf_close(e);
    free(b);
}

static void test_elf_survives_every_truncation(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = read_file("/proc/self/exe", &len);
    for (size_t cut = 0; cut < len; cut += len / 97 + 1) {
        uint8_t *copy = malloc(cut ? cut : 1);      /* exact size: ASan sees overreads */
        memcpy(copy, b, cut);
        struct sym_elf *e;
        if (sym_elf_parse(copy, cut, &e) == 0)
            sym_elf_close(e);
        free(copy);
    }
    free(b);
}

static void test_elf_string_table_without_terminator_is_not_read_past(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = read_file("/proc/self/exe", &len);
    Elf64_Ehdr eh;
    memcpy(&eh, b, sizeof eh);
    for (uint16_t i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        memcpy(&sh, b + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
        if (sh.sh_type == SHT_STRTAB && sh.sh_offset + sh.sh_size <= len)
            memset(b + sh.sh_offset, 'A', sh.sh_size);
    }
    struct sym_elf *e;
    assert_int_equal(sym_elf_parse(b, len, &e), 0);
    assert_int_equal(sym_elf_nsyms(e), 0);  /* no name is terminated: none kept */
    sym_elf_close(e);
    free(b);
}

/* ---- kernel ------------------------------------------------------------------------ */

static const char KALLSYMS[] =
    "ffffffff81000000 T _text\n"
    "ffffffff81000100 T do_one\n"
    "ffffffff81000200 t helper_two\n"
    "ffffffff81000300 D some_data\n"
    "ffffffffc0000000 t mod_fn\t[somemod]\n"
    "bogus\n";

static void test_kallsyms_parse_names_text_symbols(void **state)
{
    (void)state;
    struct sym_kernel *k;
    assert_int_equal(sym_kernel_parse(KALLSYMS, strlen(KALLSYMS), &k), 0);
    assert_true(sym_kernel_text(k) == 0xffffffff81000000ull);
    uint64_t off;
    assert_string_equal(sym_kernel_lookup(k, 0xffffffff81000150ull, &off), "do_one");
    assert_int_equal(off, 0x50);
    assert_string_equal(sym_kernel_lookup(k, 0xffffffff81000350ull, NULL), "helper_two");
    assert_string_equal(sym_kernel_lookup(k, 0xffffffffc0000008ull, NULL), "mod_fn");
    assert_null(sym_kernel_lookup(k, 0xffffffff80000000ull, NULL));
    sym_kernel_free(k);
}

static void test_kallsyms_with_hidden_addresses_is_eacces(void **state)
{
    (void)state;
    static const char hidden[] = "0000000000000000 T _text\n0000000000000000 T do_one\n";
    struct sym_kernel *k;
    assert_int_equal(sym_kernel_parse(hidden, strlen(hidden), &k), -EACCES);
}

/* ---- map records ----------------------------------------------------------------------- */

static void test_map_records_round_trip(void **state)
{
    (void)state;
    struct sym_map m[2];
    memset(m, 0, sizeof m);
    m[0].start = 0x1000; m[0].end = 0x2000; m[0].pgoff = 0x3000; m[0].exec = 1;
    m[0].path = "/nonexistent/prog";
    m[1].start = 0x5000; m[1].end = 0x6000; m[1].exec = 0; m[1].path = "/data";
    struct sym_maps_state st;
    memset(&st, 0, sizeof st);
    uint8_t buf[4096];
    long n = sym_maps_encode(m, 2, "", 0xffffffff81000000ull, 77, &st, buf, sizeof buf);
    assert_true(n > 0);
    /* one record for the executable mapping, one for the kernel */
    int len = shm_record_check(buf, (size_t)n);
    assert_true(len > 0);
    struct sym_map_rec r;
    assert_int_equal(sym_map_decode(buf, (size_t)len, &r), 0);
    assert_int_equal(r.start, 0x1000);
    assert_int_equal(r.end, 0x2000);
    assert_int_equal(r.pgoff, 0x3000);
    assert_int_equal(r.ts, 77);
    assert_string_equal(r.path, "/nonexistent/prog");
    assert_string_equal(r.build_id, "");
    int len2 = shm_record_check(buf + len, (size_t)n - (size_t)len);
    assert_int_equal(len + len2, n);
    assert_int_equal(sym_map_decode(buf + len, (size_t)len2, &r), 0);
    assert_string_equal(r.path, SYM_KERNEL_PATH);
    struct d9_rec_hdr h0, h1;
    memcpy(&h0, buf, sizeof h0);
    memcpy(&h1, buf + len, sizeof h1);
    assert_int_equal(h1.seq, h0.seq + 1);
}

static void test_map_records_are_written_again_only_when_maps_change_or_after_reset(void **state)
{
    (void)state;
    struct sym_map m;
    memset(&m, 0, sizeof m);
    m.start = 0x1000; m.end = 0x2000; m.exec = 1; m.path = "/x";
    struct sym_maps_state st;
    memset(&st, 0, sizeof st);
    uint8_t buf[4096];
    assert_true(sym_maps_encode(&m, 1, "", 0, 1, &st, buf, sizeof buf) > 0);
    assert_int_equal(sym_maps_encode(&m, 1, "", 0, 2, &st, buf, sizeof buf), 0);
    m.end = 0x3000;
    assert_true(sym_maps_encode(&m, 1, "", 0, 3, &st, buf, sizeof buf) > 0);
    sym_maps_state_reset(&st);
    assert_true(sym_maps_encode(&m, 1, "", 0, 4, &st, buf, sizeof buf) > 0);
    /* too small a buffer writes nothing and keeps the change pending */
    sym_maps_state_reset(&st);
    assert_int_equal(sym_maps_encode(&m, 1, "", 0, 5, &st, buf, 16), -ENOBUFS);
    assert_true(sym_maps_encode(&m, 1, "", 0, 6, &st, buf, sizeof buf) > 0);
}

static void test_map_decode_rejects_hostile_lengths(void **state)
{
    (void)state;
    struct sym_map m;
    memset(&m, 0, sizeof m);
    m.start = 0x1000; m.end = 0x2000; m.exec = 1; m.path = "/x";
    struct sym_maps_state st;
    memset(&st, 0, sizeof st);
    uint8_t buf[4096];
    long n = sym_maps_encode(&m, 1, "", 0, 1, &st, buf, sizeof buf);
    assert_true(n > 0);
    struct sym_map_rec r;
    uint8_t bad[4096];
    /* payload_len beyond the record */
    memcpy(bad, buf, (size_t)n);
    uint32_t pl = 4000;
    memcpy(bad + offsetof(struct d9_rec_custom, payload_len), &pl, 4);
    assert_int_equal(sym_map_decode(bad, (size_t)n, &r), -EBADMSG);
    /* string length beyond the payload */
    memcpy(bad, buf, (size_t)n);
    uint32_t sl = 0xffffff;
    memcpy(bad + sizeof(struct d9_rec_custom) + 24, &sl, 4);
    assert_int_equal(sym_map_decode(bad, (size_t)n, &r), -EBADMSG);
    /* a different schema is not a map record */
    memcpy(bad, buf, (size_t)n);
    uint32_t schema = 5;
    memcpy(bad + offsetof(struct d9_rec_custom, schema), &schema, 4);
    assert_int_equal(sym_map_decode(bad, (size_t)n, &r), -EINVAL);
    /* every truncation */
    for (long cut = 0; cut < n; cut++)
        assert_int_not_equal(sym_map_decode(buf, (size_t)cut, &r), 0);
    /* a record length below the record header (found by fuzz_sym:
     * h.len - sizeof header wrapped around and the payload was read past
     * the buffer, which is exactly header-sized here for ASan to see it) */
    uint8_t *tiny = malloc(sizeof(struct d9_rec_custom));
    assert_non_null(tiny);
    memcpy(tiny, buf, sizeof(struct d9_rec_custom));
    uint16_t hl = 8;
    memcpy(tiny + offsetof(struct d9_rec_hdr, len), &hl, 2);
    pl = 24;
    memcpy(tiny + offsetof(struct d9_rec_custom, payload_len), &pl, 4);
    assert_int_equal(sym_map_decode(tiny, sizeof(struct d9_rec_custom), &r), -EBADMSG);
    free(tiny);
}

static void test_map_schema_payload_is_a_valid_schema(void **state)
{
    (void)state;
    uint8_t p[512];
    int n = sym_map_schema_payload(p, sizeof p);
    assert_true(n > 0);
}

/* ---- resolver ------------------------------------------------------------------------------ */

static struct sym_resolver *resolver_for_self(void)
{
    struct sym_map *m;
    size_t n;
    assert_int_equal(sym_maps_read((uint32_t)getpid(), &m, &n), 0);
    static uint8_t buf[1 << 18];
    struct sym_maps_state st;
    memset(&st, 0, sizeof st);
    long len = sym_maps_encode(m, n, "", 0, 1, &st, buf, sizeof buf);
    sym_maps_free(m, n);
    assert_true(len > 0);
    struct sym_resolver *r;
    assert_int_equal(sym_resolver_new(&r, ""), 0);
    for (long o = 0; o < len;) {
        int l = shm_record_check(buf + o, (size_t)(len - o));
        assert_true(l > 0);
        struct sym_map_rec mr;
        assert_int_equal(sym_map_decode(buf + o, (size_t)l, &mr), 0);
        assert_int_equal(sym_resolver_add(r, &mr), 0);
        o += l;
    }
    return r;
}

static void test_resolver_names_function_of_this_pie_binary(void **state)
{
    (void)state;
    struct sym_resolver *r = resolver_for_self();
    char name[256];
    sym_resolve(r, (uint64_t)(uintptr_t)&d9test_symbol_marker + 2, 0, name, sizeof name);
    assert_string_equal(name, "d9test_symbol_marker");
    sym_resolver_free(r);
}

static void test_resolver_names_libc_function(void **state)
{
    (void)state;
    struct sym_resolver *r = resolver_for_self();
    char name[256];
    sym_resolve(r, (uint64_t)(uintptr_t)&getpid, 0, name, sizeof name);
    assert_non_null(strstr(name, "getpid"));
    sym_resolver_free(r);
}

static void test_resolver_falls_back_to_file_offset_when_file_is_missing(void **state)
{
    (void)state;
    struct sym_resolver *r;
    assert_int_equal(sym_resolver_new(&r, ""), 0);
    struct sym_map_rec m;
    memset(&m, 0, sizeof m);
    m.start = 0x400000; m.end = 0x500000; m.pgoff = 0x1000;
    snprintf(m.path, sizeof m.path, "/nonexistent/dir/app");
    assert_int_equal(sym_resolver_add(r, &m), 0);
    char name[256];
    sym_resolve(r, 0x400123, 0, name, sizeof name);
    assert_string_equal(name, "app+0x1123");
    sym_resolve(r, 0x900000, 0, name, sizeof name);
    assert_string_equal(name, "[unknown]");
    sym_resolver_free(r);
}

static void test_resolver_refuses_file_whose_build_id_differs(void **state)
{
    (void)state;
    struct sym_resolver *r = resolver_for_self();
    /* same mapping, but claim another build-id: the file must not be used */
    struct sym_resolver *r2;
    assert_int_equal(sym_resolver_new(&r2, ""), 0);
    struct sym_map *m;
    size_t n;
    assert_int_equal(sym_maps_read((uint32_t)getpid(), &m, &n), 0);
    uintptr_t fn = (uintptr_t)&d9test_symbol_marker;
    for (size_t i = 0; i < n; i++) {
        if (!m[i].exec || fn < m[i].start || fn >= m[i].end)
            continue;
        struct sym_map_rec mr;
        memset(&mr, 0, sizeof mr);
        mr.start = m[i].start; mr.end = m[i].end; mr.pgoff = m[i].pgoff;
        snprintf(mr.path, sizeof mr.path, "%s", m[i].path);
        snprintf(mr.build_id, sizeof mr.build_id, "00112233445566778899aabbccddeeff00112233");
        assert_int_equal(sym_resolver_add(r2, &mr), 0);
    }
    sym_maps_free(m, n);
    char name[256];
    sym_resolve(r2, (uint64_t)fn, 0, name, sizeof name);
    assert_null(strstr(name, "d9test_symbol_marker"));
    assert_non_null(strstr(name, "+0x"));
    sym_resolver_free(r2);
    sym_resolver_free(r);
}

static void test_resolver_kernel_frame_without_recorded_text_is_generic(void **state)
{
    (void)state;
    struct sym_resolver *r;
    assert_int_equal(sym_resolver_new(&r, ""), 0);
    char name[64];
    sym_resolve(r, 0xffffffff81000100ull, 1, name, sizeof name);
    assert_string_equal(name, "[kernel]");
    sym_resolver_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maps_parse_reads_every_field),
        cmocka_unit_test(test_maps_parse_skips_and_counts_malformed_lines),
        cmocka_unit_test(test_maps_read_of_self_has_an_executable_mapping_of_this_binary),
        cmocka_unit_test(test_elf_open_self_finds_test_function),
        cmocka_unit_test(test_elf_reads_gnu_build_id_of_self),
        cmocka_unit_test(test_elf_translates_runtime_address_through_pt_load),
        cmocka_unit_test(test_elf_finds_known_libc_symbol_in_dynsym),
        cmocka_unit_test(test_elf_rejects_non_elf_input),
        cmocka_unit_test(test_elf_open_refuses_a_fifo_without_blocking),
        cmocka_unit_test(test_elf_rejects_program_headers_past_end_of_file),
        cmocka_unit_test(test_elf_survives_hostile_section_table),
        cmocka_unit_test(test_elf_survives_every_truncation),
        cmocka_unit_test(test_elf_string_table_without_terminator_is_not_read_past),
        cmocka_unit_test(test_kallsyms_parse_names_text_symbols),
        cmocka_unit_test(test_kallsyms_with_hidden_addresses_is_eacces),
        cmocka_unit_test(test_map_records_round_trip),
        cmocka_unit_test(test_map_records_are_written_again_only_when_maps_change_or_after_reset),
        cmocka_unit_test(test_map_decode_rejects_hostile_lengths),
        cmocka_unit_test(test_map_schema_payload_is_a_valid_schema),
        cmocka_unit_test(test_resolver_names_function_of_this_pie_binary),
        cmocka_unit_test(test_resolver_names_libc_function),
        cmocka_unit_test(test_resolver_falls_back_to_file_offset_when_file_is_missing),
        cmocka_unit_test(test_resolver_refuses_file_whose_build_id_differs),
        cmocka_unit_test(test_resolver_kernel_frame_without_recorded_text_is_generic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
