/*
 * sym.c — maps parsing, hand-written ELF64 symbol/build-id reader,
 * kallsyms, map snapshot records and the query-time resolver (see sym.h
 * for where each part runs and why).
 *
 * Invariants:
 *   - ELF parsing only reads buf[off, off + n) after range_ok(off, n, len);
 *     every table's entry size is checked before it is indexed; a string is
 *     used only after memchr found its NUL inside its string table.
 *   - sym_elf symbol arrays are sorted by address with duplicates removed,
 *     names point into an owned pool (the file is unmapped after parsing).
 *   - A resolver trusts a recorded mapping only as far as the file it opens
 *     has the recorded build-id (when one was recorded).
 * Never: abort, read past a buffer, or follow an offset from a file unchecked.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "collector/store/sym.h"
#include "shm/d9_abi.h"
#include "shm/meta.h"

/* ---- small helpers ------------------------------------------------------ */

static int range_ok(uint64_t off, uint64_t n, uint64_t len)
{
    return off <= len && n <= len - off;
}

/* Read a whole (proc) file whose size stat cannot tell; at most max bytes. */
static int read_all(const char *path, size_t max, char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    for (;;) {
        if (n == cap) {
            if (cap >= max)
                break;
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                close(fd);
                return -ENOMEM;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = -errno;
            free(buf);
            close(fd);
            return e;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    *out = buf;
    *len = n;
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int sym_parse_hex(const char **p, const char *end, uint64_t *v)
{
    const char *s = *p;
    uint64_t x = 0;
    int nd = 0;
    while (s < end && hexval(*s) >= 0) {
        if (nd == 16)
            return 0;
        x = (x << 4) | (uint64_t)hexval(*s);
        s++;
        nd++;
    }
    if (!nd)
        return 0;
    *p = s;
    *v = x;
    return 1;
}

static int parse_dec(const char **p, const char *end, uint64_t *v)
{
    const char *s = *p;
    uint64_t x = 0;
    int nd = 0;
    while (s < end && *s >= '0' && *s <= '9') {
        if (nd == 19)
            return 0;
        x = x * 10 + (uint64_t)(*s - '0');
        s++;
        nd++;
    }
    if (!nd)
        return 0;
    *p = s;
    *v = x;
    return 1;
}

static void skip_spaces(const char **p, const char *end)
{
    while (*p < end && (**p == ' ' || **p == '\t'))
        (*p)++;
}

/* ---- maps ----------------------------------------------------------------- */

/* "start-end perms offset major:minor inode [path]" */
static int parse_maps_line(const char *s, const char *end, struct sym_map *m, const char **path,
                           size_t *path_len)
{
    uint64_t v;
    if (!sym_parse_hex(&s, end, &m->start) || s >= end || *s++ != '-' ||
        !sym_parse_hex(&s, end, &m->end) || m->end <= m->start)
        return -1;
    skip_spaces(&s, end);
    if (end - s < 4)
        return -1;
    m->exec = s[2] == 'x';
    s += 4;
    skip_spaces(&s, end);
    if (!sym_parse_hex(&s, end, &m->pgoff))
        return -1;
    skip_spaces(&s, end);
    if (!sym_parse_hex(&s, end, &v) || v > UINT32_MAX || s >= end || *s++ != ':')
        return -1;
    m->dev_major = (uint32_t)v;
    if (!sym_parse_hex(&s, end, &v) || v > UINT32_MAX)
        return -1;
    m->dev_minor = (uint32_t)v;
    skip_spaces(&s, end);
    if (!parse_dec(&s, end, &m->inode))
        return -1;
    if (s < end && *s != ' ' && *s != '\t')
        return -1;
    skip_spaces(&s, end);
    *path = s;
    *path_len = (size_t)(end - s);
    if (*path_len >= SYM_PATH_MAX)
        return -1;
    return 0;
}

int sym_maps_parse(const char *text, size_t len, struct sym_map **out, size_t *n, size_t *bad)
{
    struct sym_map *v = NULL;
    size_t cnt = 0, cap = 0, nbad = 0;
    const char *p = text, *end = text + len;
    *out = NULL;
    *n = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        struct sym_map m;
        const char *path;
        size_t plen;
        memset(&m, 0, sizeof m);
        if (le > p && parse_maps_line(p, le, &m, &path, &plen) == 0) {
            if (cnt == cap) {
                size_t nc = cap ? cap * 2 : 64;
                struct sym_map *nv = realloc(v, nc * sizeof *nv);
                if (!nv)
                    goto oom;
                v = nv;
                cap = nc;
            }
            m.path = malloc(plen + 1);
            if (!m.path)
                goto oom;
            memcpy(m.path, path, plen);
            m.path[plen] = 0;
            v[cnt++] = m;
        } else if (le > p) {
            nbad++;
        }
        p = nl ? nl + 1 : end;
    }
    *out = v;
    *n = cnt;
    if (bad)
        *bad = nbad;
    return 0;
oom:
    sym_maps_free(v, cnt);
    return -ENOMEM;
}

void sym_maps_free(struct sym_map *m, size_t n)
{
    if (!m)
        return;
    for (size_t i = 0; i < n; i++)
        free(m[i].path);
    free(m);
}

#define MAPS_READ_MAX (64u * 1024u * 1024u)

int sym_maps_read(uint32_t pid, struct sym_map **out, size_t *n)
{
    char path[64], *text;
    size_t len;
    snprintf(path, sizeof path, "/proc/%u/maps", pid);
    int rc = read_all(path, MAPS_READ_MAX, &text, &len);
    if (rc < 0)
        return rc == -ENOENT ? -ESRCH : rc;
    rc = sym_maps_parse(text, len, out, n, NULL);
    free(text);
    return rc;
}

/* ---- ELF -------------------------------------------------------------------- */

struct sym_ent {
    uint64_t addr, size;
    uint32_t name;              /* offset into pool */
    uint8_t rank;               /* enum sym_rank: of aliases at one address, the lowest is named */
};
/* A function's aliases (libc's debug file: qsort and __GI_qsort) are named
 * by the global one, else the weak one, else a local one. */
enum sym_rank { SYM_RANK_GLOBAL = 0, SYM_RANK_WEAK = 1, SYM_RANK_LOCAL = 2 };
struct sym_load {
    uint64_t off, vaddr, filesz;
};
struct sym_range {
    uint64_t lo, hi;            /* [lo, hi) link-time addresses */
};
struct sym_elf {
    struct sym_ent *syms;
    size_t nsyms, cap;
    char *pool;
    size_t pool_len, pool_cap;
    uint8_t build_id[SYM_BUILD_ID_MAX];
    size_t build_id_len;
    struct sym_load *loads;
    size_t nloads;
    int has_symtab;             /* a .symtab (not only .dynsym) */
    struct sym_range *tramp;    /* sections named SYM_TRAMP_SECTION */
    size_t ntramp;
};

/* Sections named SYM_TRAMP_SECTION: their address ranges. The section name
 * table is checked like any other: in the file, NUL inside it. */
static int load_tramp(struct sym_elf *e, const uint8_t *buf, size_t len, const Elf64_Shdr *sh,
                      uint16_t shnum, uint16_t shstrndx)
{
    if (shstrndx == SHN_UNDEF || shstrndx >= shnum)
        return 0;
    const Elf64_Shdr *ss = &sh[shstrndx];
    if (ss->sh_type != SHT_STRTAB || !range_ok(ss->sh_offset, ss->sh_size, len))
        return 0;
    const char *strs = (const char *)buf + ss->sh_offset;
    size_t want = sizeof SYM_TRAMP_SECTION;         /* with its NUL */
    for (uint16_t i = 0; i < shnum; i++) {
        if (sh[i].sh_name >= ss->sh_size || ss->sh_size - sh[i].sh_name < want ||
            memcmp(strs + sh[i].sh_name, SYM_TRAMP_SECTION, want) != 0 || !sh[i].sh_size)
            continue;
        struct sym_range *n = realloc(e->tramp, (e->ntramp + 1) * sizeof *n);
        if (!n)
            return -ENOMEM;
        e->tramp = n;
        e->tramp[e->ntramp++] = (struct sym_range){ sh[i].sh_addr, sh[i].sh_addr + sh[i].sh_size };
    }
    return 0;
}

static void parse_notes(struct sym_elf *e, const uint8_t *p, uint64_t sz)
{
    uint64_t i = 0;
    while (!e->build_id_len && sz - i >= 12) {
        uint32_t namesz, descsz, type;
        memcpy(&namesz, p + i, 4);
        memcpy(&descsz, p + i + 4, 4);
        memcpy(&type, p + i + 8, 4);
        i += 12;
        uint64_t na = ((uint64_t)namesz + 3) & ~3ull, da = ((uint64_t)descsz + 3) & ~3ull;
        if (na > sz - i)
            return;
        const uint8_t *name = p + i;
        i += na;
        if (da > sz - i)
            return;
        if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
            descsz > 0 && descsz <= SYM_BUILD_ID_MAX) {
            memcpy(e->build_id, p + i, descsz);
            e->build_id_len = descsz;
        }
        i += da;
    }
}

static int add_sym(struct sym_elf *e, uint64_t addr, uint64_t size, const char *name, size_t nlen,
                   uint8_t rank)
{
    if (e->nsyms == e->cap) {
        size_t nc = e->cap ? e->cap * 2 : 256;
        struct sym_ent *ns = realloc(e->syms, nc * sizeof *ns);
        if (!ns)
            return -ENOMEM;
        e->syms = ns;
        e->cap = nc;
    }
    if (e->pool_len + nlen + 1 > e->pool_cap) {
        size_t nc = e->pool_cap ? e->pool_cap * 2 : 4096;
        while (nc < e->pool_len + nlen + 1)
            nc *= 2;
        if (nc > UINT32_MAX)
            return -EFBIG;
        char *np = realloc(e->pool, nc);
        if (!np)
            return -ENOMEM;
        e->pool = np;
        e->pool_cap = nc;
    }
    memcpy(e->pool + e->pool_len, name, nlen);
    e->pool[e->pool_len + nlen] = 0;
    e->syms[e->nsyms].addr = addr;
    e->syms[e->nsyms].size = size;
    e->syms[e->nsyms].name = (uint32_t)e->pool_len;
    e->syms[e->nsyms].rank = rank;
    e->nsyms++;
    e->pool_len += nlen + 1;
    return 0;
}

static int load_symtab(struct sym_elf *e, const uint8_t *buf, size_t len, const Elf64_Shdr *sh,
                       uint16_t shnum, uint16_t idx)
{
    const Elf64_Shdr *s = &sh[idx];
    if (s->sh_entsize != sizeof(Elf64_Sym) || !range_ok(s->sh_offset, s->sh_size, len) ||
        s->sh_link >= shnum)
        return -EBADMSG;
    const Elf64_Shdr *st = &sh[s->sh_link];
    if (st->sh_type != SHT_STRTAB || !range_ok(st->sh_offset, st->sh_size, len))
        return -EBADMSG;
    const char *strs = (const char *)buf + st->sh_offset;
    uint64_t nstr = st->sh_size;
    uint64_t n = s->sh_size / sizeof(Elf64_Sym);
    for (uint64_t i = 0; i < n; i++) {
        Elf64_Sym sym;
        memcpy(&sym, buf + s->sh_offset + i * sizeof sym, sizeof sym);
        unsigned t = ELF64_ST_TYPE(sym.st_info);
        if ((t != STT_FUNC && t != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
            continue;
        if (sym.st_name >= nstr)
            continue;
        const char *nm = strs + sym.st_name;
        const char *z = memchr(nm, 0, nstr - sym.st_name);
        if (!z || z == nm)
            continue;
        unsigned b = ELF64_ST_BIND(sym.st_info);
        uint8_t rank = b == STB_GLOBAL ? SYM_RANK_GLOBAL : b == STB_WEAK ? SYM_RANK_WEAK
                                                                         : SYM_RANK_LOCAL;
        int rc = add_sym(e, sym.st_value, sym.st_size, nm, (size_t)(z - nm), rank);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int cmp_ent(const void *a, const void *b)
{
    const struct sym_ent *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;      /* sized first */
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

static void finish_syms(struct sym_elf *e)
{
    if (!e->nsyms)
        return;
    qsort(e->syms, e->nsyms, sizeof *e->syms, cmp_ent);
    size_t w = 1;
    for (size_t i = 1; i < e->nsyms; i++)
        if (e->syms[i].addr != e->syms[w - 1].addr)
            e->syms[w++] = e->syms[i];
    e->nsyms = w;
}

/* notes_only: program headers and build-id only (the collector's use). */
static int elf_parse(const uint8_t *buf, size_t len, int notes_only, struct sym_elf **out)
{
    *out = NULL;
    Elf64_Ehdr eh;
    if (len < sizeof eh)
        return -ENOEXEC;
    memcpy(&eh, buf, sizeof eh);
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_ident[EI_DATA] != ELFDATA2LSB)
        return -ENOEXEC;
    struct sym_elf *e = calloc(1, sizeof *e);
    if (!e)
        return -ENOMEM;
    int rc = -EBADMSG;

    if (eh.e_phnum) {
        if (eh.e_phentsize != sizeof(Elf64_Phdr) ||
            !range_ok(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), len))
            goto fail;
        e->loads = calloc(eh.e_phnum, sizeof *e->loads);
        if (!e->loads) {
            rc = -ENOMEM;
            goto fail;
        }
        for (uint16_t i = 0; i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            memcpy(&ph, buf + eh.e_phoff + (uint64_t)i * sizeof ph, sizeof ph);
            if (ph.p_type == PT_LOAD) {
                e->loads[e->nloads].off = ph.p_offset;
                e->loads[e->nloads].vaddr = ph.p_vaddr;
                e->loads[e->nloads].filesz = ph.p_filesz;
                e->nloads++;
            } else if (ph.p_type == PT_NOTE && range_ok(ph.p_offset, ph.p_filesz, len)) {
                parse_notes(e, buf + ph.p_offset, ph.p_filesz);
            }
        }
    }
    if (notes_only && e->build_id_len) {
        *out = e;
        return 0;
    }
    if (eh.e_shnum && eh.e_shoff) {
        if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
            !range_ok(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), len))
            goto fail;
        Elf64_Shdr *sh = malloc((size_t)eh.e_shnum * sizeof *sh);
        if (!sh) {
            rc = -ENOMEM;
            goto fail;
        }
        memcpy(sh, buf + eh.e_shoff, (size_t)eh.e_shnum * sizeof *sh);
        if (!notes_only && load_tramp(e, buf, len, sh, eh.e_shnum, eh.e_shstrndx) < 0) {
            free(sh);
            rc = -ENOMEM;
            goto fail;
        }
        for (uint16_t i = 0; i < eh.e_shnum; i++) {
            e->has_symtab |= sh[i].sh_type == SHT_SYMTAB;
            if (sh[i].sh_type == SHT_NOTE && !e->build_id_len &&
                range_ok(sh[i].sh_offset, sh[i].sh_size, len))
                parse_notes(e, buf + sh[i].sh_offset, sh[i].sh_size);
            if (!notes_only && (sh[i].sh_type == SHT_SYMTAB || sh[i].sh_type == SHT_DYNSYM)) {
                int r = load_symtab(e, buf, len, sh, eh.e_shnum, i);
                if (r == -ENOMEM) {
                    free(sh);
                    rc = r;
                    goto fail;
                }
                /* a broken table is skipped; the other may still be good */
            }
        }
        free(sh);
    }
    finish_syms(e);
    *out = e;
    return 0;
fail:
    sym_elf_close(e);
    return rc;
}

int sym_elf_parse(const uint8_t *buf, size_t len, struct sym_elf **out)
{
    return elf_parse(buf, len, 0, out);
}

static int elf_open(const char *path, int notes_only, struct sym_elf **out)
{
    *out = NULL;
    /* the path comes from a segment (hostile): a FIFO must not block the open */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return -ENOEXEC;
    }
    if ((uint64_t)st.st_size > SYM_ELF_MAX_BYTES) {
        close(fd);
        return -EFBIG;
    }
    if (st.st_size == 0) {
        close(fd);
        return -ENOEXEC;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (m == MAP_FAILED)
        return -e;
    /* a file truncated under us would SIGBUS here; ELF files of running
     * programs are not truncated in place (ETXTBSY), installs replace them */
    int rc = elf_parse(m, (size_t)st.st_size, notes_only, out);
    munmap(m, (size_t)st.st_size);
    return rc;
}

int sym_elf_open(const char *path, struct sym_elf **out)
{
    return elf_open(path, 0, out);
}

void sym_elf_close(struct sym_elf *e)
{
    if (!e)
        return;
    free(e->syms);
    free(e->pool);
    free(e->loads);
    free(e->tramp);
    free(e);
}

size_t sym_elf_nsyms(const struct sym_elf *e)
{
    return e->nsyms;
}

int sym_elf_has_symtab(const struct sym_elf *e)
{
    return e->has_symtab;
}

int sym_elf_in_tramp(const struct sym_elf *e, uint64_t vaddr)
{
    for (size_t i = 0; i < e->ntramp; i++)
        if (vaddr >= e->tramp[i].lo && vaddr < e->tramp[i].hi)
            return 1;
    return 0;
}

const uint8_t *sym_elf_build_id(const struct sym_elf *e, size_t *len)
{
    *len = e->build_id_len;
    return e->build_id_len ? e->build_id : NULL;
}

char *sym_build_id_hex(const uint8_t *id, size_t len, char *buf, size_t cap)
{
    static const char hx[] = "0123456789abcdef";
    size_t i = 0;
    if (!cap)
        return buf;
    for (; i < len && 2 * i + 2 < cap; i++) {
        buf[2 * i] = hx[id[i] >> 4];
        buf[2 * i + 1] = hx[id[i] & 15];
    }
    buf[2 * i] = 0;
    return buf;
}

int sym_elf_offset_to_vaddr(const struct sym_elf *e, uint64_t file_off, uint64_t *vaddr)
{
    for (size_t i = 0; i < e->nloads; i++) {
        const struct sym_load *l = &e->loads[i];
        if (file_off >= l->off && file_off - l->off < l->filesz) {
            *vaddr = file_off - l->off + l->vaddr;
            return 0;
        }
    }
    return -ENOENT;
}

const char *sym_elf_lookup(const struct sym_elf *e, uint64_t vaddr, uint64_t *off)
{
    size_t lo = 0, hi = e->nsyms;
    while (lo < hi) {           /* first symbol with addr > vaddr */
        size_t mid = lo + (hi - lo) / 2;
        if (e->syms[mid].addr <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const struct sym_ent *s = &e->syms[lo - 1];
    if (s->size && vaddr - s->addr >= s->size)
        return NULL;
    if (off)
        *off = vaddr - s->addr;
    return e->pool + s->name;
}

int sym_elf_find(const struct sym_elf *e, const char *name, uint64_t *vaddr)
{
    for (size_t i = 0; i < e->nsyms; i++)
        if (strcmp(e->pool + e->syms[i].name, name) == 0) {
            *vaddr = e->syms[i].addr;
            return 0;
        }
    return -ENOENT;
}

/* ---- kernel ------------------------------------------------------------------ */

struct sym_kernel {
    struct sym_elf t;           /* reuses the sorted table + pool */
    uint64_t text;
};

#define KALLSYMS_MAX (256u * 1024u * 1024u)
#define KSYM_SPAN_MAX (1u << 20) /* an address this far past the last symbol is not its */

int sym_kernel_parse(const char *text, size_t len, struct sym_kernel **out)
{
    *out = NULL;
    struct sym_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return -ENOMEM;
    const char *p = text, *end = text + len;
    int nonzero = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *s = p;
        uint64_t addr;
        p = nl ? nl + 1 : end;
        if (!sym_parse_hex(&s, le, &addr) || s >= le || *s != ' ')
            continue;
        s++;
        if (le - s < 3 || s[1] != ' ')
            continue;
        char type = s[0];
        s += 2;
        const char *ne = s;
        while (ne < le && *ne != ' ' && *ne != '\t')
            ne++;
        if (ne == s)
            continue;
        if (addr)
            nonzero = 1;
        if (!k->text && (size_t)(ne - s) == 5 && memcmp(s, "_text", 5) == 0)
            k->text = addr;
        if (type != 't' && type != 'T' && type != 'w' && type != 'W')
            continue;
        uint8_t rank = type == 'T' ? SYM_RANK_GLOBAL : type == 't' ? SYM_RANK_LOCAL : SYM_RANK_WEAK;
        if (add_sym(&k->t, addr, 0, s, (size_t)(ne - s), rank) < 0) {
            sym_kernel_free(k);
            return -ENOMEM;
        }
    }
    if (!nonzero) {
        sym_kernel_free(k);
        return -EACCES;
    }
    finish_syms(&k->t);
    *out = k;
    return 0;
}

int sym_kernel_load(const char *path, struct sym_kernel **out)
{
    char *text;
    size_t len;
    *out = NULL;
    int rc = read_all(path, KALLSYMS_MAX, &text, &len);
    if (rc < 0)
        return rc;
    rc = sym_kernel_parse(text, len, out);
    free(text);
    return rc;
}

void sym_kernel_free(struct sym_kernel *k)
{
    if (!k)
        return;
    free(k->t.syms);
    free(k->t.pool);
    free(k);
}

uint64_t sym_kernel_text(const struct sym_kernel *k)
{
    return k->text;
}

const char *sym_kernel_lookup(const struct sym_kernel *k, uint64_t addr, uint64_t *off)
{
    uint64_t o;
    const char *n = sym_elf_lookup(&k->t, addr, &o);
    if (!n || o > KSYM_SPAN_MAX)
        return NULL;
    if (off)
        *off = o;
    return n;
}

/* _text from the head of kallsyms without reading all of it (it is several
 * MiB; the first lines hold _text). 0 when hidden or not found. */
#define KTEXT_PROBE_BYTES 65536u
static uint64_t kernel_text_probe(void)
{
    int fd = open(SYM_KALLSYMS, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char *buf = malloc(KTEXT_PROBE_BYTES);
    size_t n = 0;
    if (buf) {
        while (n < KTEXT_PROBE_BYTES) {
            ssize_t r = read(fd, buf + n, KTEXT_PROBE_BYTES - n);
            if (r <= 0)
                break;
            n += (size_t)r;
        }
    }
    close(fd);
    uint64_t text = 0;
    struct sym_kernel *k;
    if (buf && sym_kernel_parse(buf, n, &k) == 0) {
        text = k->text;
        sym_kernel_free(k);
    }
    free(buf);
    return text;
}

/* ---- map snapshot records ------------------------------------------------------- */

void sym_maps_state_reset(struct sym_maps_state *st)
{
    st->hash = 0;
    st->written = 0;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* STR field: u32 length, bytes, zero pad so the field ends 8-aligned. */
static size_t str_field(uint8_t *out, const char *s, size_t n)
{
    uint32_t l = (uint32_t)n;
    memcpy(out, &l, 4);
    memcpy(out + 4, s, n);
    size_t f = (4 + n + 7) & ~(size_t)7;
    memset(out + 4 + n, 0, f - 4 - n);
    return f;
}
static size_t str_field_len(size_t n)
{
    return (4 + n + 7) & ~(size_t)7;
}

static size_t map_record(uint8_t *out, uint64_t ts, uint64_t start, uint64_t end, uint64_t pgoff,
                         const char *bid, const char *path)
{
    size_t bl = strlen(bid), pl = strlen(path);
    if (pl > D9_STR_MAX)
        pl = D9_STR_MAX;
    size_t payload = 24 + str_field_len(bl) + str_field_len(pl);
    size_t len = sizeof(struct d9_rec_custom) + payload;
    if (out) {
        struct d9_rec_custom c;
        memset(&c, 0, sizeof c);
        c.h.len = (uint16_t)len;
        c.h.type = D9_REC_CUSTOM;
        c.h.ts = ts;
        c.schema = SYM_MAP_SCHEMA_ID;
        c.payload_len = (uint32_t)payload;
        memcpy(out, &c, sizeof c);
        uint8_t *p = out + sizeof c;
        memcpy(p, &start, 8);
        memcpy(p + 8, &end, 8);
        memcpy(p + 16, &pgoff, 8);
        p += 24;
        p += str_field(p, bid, bl);
        str_field(p, path, pl);
    }
    return len;
}

static void build_id_of(const char *root, const char *path, char *hex, size_t cap)
{
    char full[SYM_PATH_MAX + 256];
    struct sym_elf *e;
    hex[0] = 0;
    if (path[0] != '/')
        return;
    snprintf(full, sizeof full, "%s%s", root, path);
    if (elf_open(full, 1, &e) != 0)
        return;
    sym_build_id_hex(e->build_id, e->build_id_len, hex, cap);
    sym_elf_close(e);
}

long sym_maps_encode(const struct sym_map *m, size_t n, const char *root, uint64_t kernel_text,
                     uint64_t now_ns, struct sym_maps_state *st, uint8_t *out, size_t cap)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        if (!m[i].exec)
            continue;
        h = fnv(h, &m[i].start, 8);
        h = fnv(h, &m[i].end, 8);
        h = fnv(h, &m[i].pgoff, 8);
        h = fnv(h, &m[i].inode, 8);
        h = fnv(h, m[i].path, strlen(m[i].path));
    }
    h = fnv(h, &kernel_text, 8);
    if (st->written && st->hash == h)
        return 0;
    /* size first, so a too-small buffer writes nothing */
    size_t need = 0;
    char bid[2 * SYM_BUILD_ID_MAX + 1] = "";
    for (size_t i = 0; i < n; i++)
        if (m[i].exec)
            need += map_record(NULL, 0, 0, 0, 0, "", m[i].path) + 2 * SYM_BUILD_ID_MAX;
    if (kernel_text)
        need += map_record(NULL, 0, 0, 0, 0, "", SYM_KERNEL_PATH);
    if (need > cap)
        return -ENOBUFS;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (!m[i].exec)
            continue;
        build_id_of(root, m[i].path, bid, sizeof bid);
        w += map_record(out + w, now_ns, m[i].start, m[i].end, m[i].pgoff, bid, m[i].path);
    }
    if (kernel_text)
        w += map_record(out + w, now_ns, kernel_text, kernel_text + 1, 0, "", SYM_KERNEL_PATH);
    /* seq last: dense per ring, in output order */
    for (size_t o = 0; o < w;) {
        uint16_t len;
        memcpy(&len, out + o, 2);
        uint32_t seq = st->seq++;
        memcpy(out + o + 4, &seq, 4);
        o += len;
    }
    st->hash = h;
    st->written = 1;
    return (long)w;
}

long sym_maps_emit(uint32_t pid, uint64_t now_ns, struct sym_maps_state *st,
                   uint8_t *out, size_t cap)
{
    struct sym_map *m;
    size_t n;
    int rc = sym_maps_read(pid, &m, &n);
    if (rc < 0)
        return rc;
    char root[64];
    snprintf(root, sizeof root, "/proc/%u/root", pid);
    if (!st->ktext_known) {
        /* once per state: reading the head of kallsyms every second was 2 %
         * of the collector's CPU on a traced demo */
        st->kernel_text = kernel_text_probe();
        st->ktext_known = 1;
    }
    long r = sym_maps_encode(m, n, root, st->kernel_text, now_ns, st, out, cap);
    sym_maps_free(m, n);
    return r;
}

long sym_jit_encode(uint64_t start, uint64_t end, const char *name, uint64_t now_ns,
                    struct sym_maps_state *st, uint8_t *out, size_t cap)
{
    char path[SYM_PATH_MAX];
    snprintf(path, sizeof path, "%s%s", SYM_JIT_PREFIX, name);
    size_t need = map_record(NULL, 0, 0, 0, 0, "", path);
    if (need > cap)
        return -ENOBUFS;
    map_record(out, now_ns, start, end, 0, "", path);
    uint32_t seq = st->seq++;
    memcpy(out + 4, &seq, 4);
    return (long)need;
}

int sym_map_schema_payload(uint8_t *out, size_t cap)
{
    static const uint8_t types[] = { D9_FT_U64, D9_FT_U64, D9_FT_U64, D9_FT_STR, D9_FT_STR };
    static const char *const names[] = { "start", "end", "offset", "build_id", "path" };
    return shm_meta_encode_schema(out, cap, SYM_MAP_SCHEMA_NAME, 5, types, names);
}

static int get_str(const uint8_t *p, size_t avail, size_t *used, char *dst, size_t cap)
{
    uint32_t l;
    if (avail < 4)
        return -EBADMSG;
    memcpy(&l, p, 4);
    if (l > D9_STR_MAX || str_field_len(l) > avail)
        return -EBADMSG;
    size_t c = l < cap - 1 ? l : cap - 1;
    memcpy(dst, p + 4, c);
    dst[c] = 0;
    for (size_t i = 0; i < c; i++)
        if (dst[i] == 0 || dst[i] == '\n')
            dst[i] = '?';
    *used = str_field_len(l);
    return 0;
}

int sym_map_decode(const uint8_t *rec, size_t len, struct sym_map_rec *out)
{
    struct d9_rec_custom c;
    if (len < sizeof c)
        return -EBADMSG;
    memcpy(&c, rec, sizeof c);
    if (c.h.type != D9_REC_CUSTOM || c.schema != SYM_MAP_SCHEMA_ID)
        return -EINVAL;
    /* h.len first: below sizeof c, h.len - sizeof c would wrap around */
    if (c.h.len < sizeof c || c.h.len > len || c.payload_len > c.h.len - sizeof c ||
        c.payload_len < 24)
        return -EBADMSG;
    const uint8_t *p = rec + sizeof c;
    size_t avail = c.payload_len, used;
    out->ts = c.h.ts;
    memcpy(&out->start, p, 8);
    memcpy(&out->end, p + 8, 8);
    memcpy(&out->pgoff, p + 16, 8);
    p += 24;
    avail -= 24;
    if (get_str(p, avail, &used, out->build_id, sizeof out->build_id) < 0)
        return -EBADMSG;
    p += used;
    avail -= used;
    if (get_str(p, avail, &used, out->path, sizeof out->path) < 0)
        return -EBADMSG;
    if (out->end <= out->start)
        return -EBADMSG;
    return 0;
}

/* ---- resolver --------------------------------------------------------------------- */

struct rmap {
    struct sym_map_rec m;
    struct sym_elf *elf;        /* symbols (maybe from the debug file) */
    struct sym_elf *loads;      /* PT_LOADs of the mapped file (may == elf) */
    int tried;
};

struct sym_resolver {
    char root[SYM_PATH_MAX];
    char debug_dir[SYM_PATH_MAX];
    struct rmap *maps;
    size_t n, cap;
    uint64_t ktext;             /* recorded _text (0 = none recorded) */
    struct sym_kernel *k;
    int k_tried;
    struct jit *jit;            /* SYM_JIT_PREFIX records, in the order added */
    size_t njit, capjit;
    uint32_t *jhash;            /* open addressing over jit (index + 1), 2 * capjit slots */
};

struct jit {
    uint64_t start, end, h;
    char name[256];
};

static uint64_t jit_hash(const struct sym_map_rec *m)
{
    uint64_t h = fnv(0xcbf29ce484222325ull, &m->start, 8);
    h = fnv(h, &m->end, 8);
    return fnv(h, m->path, strlen(m->path));
}

/* Add a JIT range once (every segment carries them all again). */
static int jit_add(struct sym_resolver *r, const struct sym_map_rec *m)
{
    const char *name = m->path + strlen(SYM_JIT_PREFIX);
    uint64_t h = jit_hash(m);
    if (r->njit + 1 > r->capjit) {
        size_t nc = r->capjit ? r->capjit * 2 : 256;
        struct jit *nj = realloc(r->jit, nc * sizeof *nj);
        if (!nj)
            return -ENOMEM;
        r->jit = nj;
        uint32_t *nh = calloc(2 * nc, sizeof *nh);
        if (!nh)
            return -ENOMEM;
        for (size_t i = 0; i < r->njit; i++) {
            size_t s = r->jit[i].h & (2 * nc - 1);
            while (nh[s])
                s = (s + 1) & (2 * nc - 1);
            nh[s] = (uint32_t)(i + 1);
        }
        free(r->jhash);
        r->jhash = nh;
        r->capjit = nc;
    }
    size_t mask = 2 * r->capjit - 1, s = h & mask;
    for (; r->jhash[s]; s = (s + 1) & mask) {
        const struct jit *o = &r->jit[r->jhash[s] - 1];
        if (o->h == h && o->start == m->start && o->end == m->end && strcmp(o->name, name) == 0)
            return 0;
    }
    struct jit *j = &r->jit[r->njit];
    j->start = m->start;
    j->end = m->end;
    j->h = h;
    snprintf(j->name, sizeof j->name, "%s", name);
    r->jhash[s] = (uint32_t)(++r->njit);
    return 0;
}

/* The newest JIT range containing ip, NULL if none. */
static const char *jit_lookup(const struct sym_resolver *r, uint64_t ip)
{
    for (size_t i = r->njit; i-- > 0;)
        if (ip >= r->jit[i].start && ip < r->jit[i].end)
            return r->jit[i].name;
    return NULL;
}

int sym_resolver_new(struct sym_resolver **out, const char *root)
{
    struct sym_resolver *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    snprintf(r->root, sizeof r->root, "%s", root ? root : "");
    snprintf(r->debug_dir, sizeof r->debug_dir, "%s", SYM_DEBUG_DIR);
    *out = r;
    return 0;
}

void sym_resolver_free(struct sym_resolver *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        if (r->maps[i].loads != r->maps[i].elf)
            sym_elf_close(r->maps[i].loads);
        sym_elf_close(r->maps[i].elf);
    }
    free(r->maps);
    free(r->jit);
    free(r->jhash);
    sym_kernel_free(r->k);
    free(r);
}

void sym_resolver_debug_dir(struct sym_resolver *r, const char *dir)
{
    snprintf(r->debug_dir, sizeof r->debug_dir, "%s", dir && *dir ? dir : SYM_DEBUG_DIR);
}

int sym_resolver_add(struct sym_resolver *r, const struct sym_map_rec *m)
{
    if (strcmp(m->path, SYM_KERNEL_PATH) == 0) {
        r->ktext = m->start;
        return 0;
    }
    if (strncmp(m->path, SYM_JIT_PREFIX, strlen(SYM_JIT_PREFIX)) == 0)
        return m->start < m->end ? jit_add(r, m) : 0;
    for (size_t i = 0; i < r->n; i++) {
        const struct sym_map_rec *o = &r->maps[i].m;
        if (o->start == m->start && o->end == m->end && o->pgoff == m->pgoff &&
            strcmp(o->path, m->path) == 0 && strcmp(o->build_id, m->build_id) == 0)
            return 0;
    }
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 32;
        struct rmap *nm = realloc(r->maps, nc * sizeof *nm);
        if (!nm)
            return -ENOMEM;
        r->maps = nm;
        r->cap = nc;
    }
    memset(&r->maps[r->n], 0, sizeof r->maps[r->n]);
    r->maps[r->n].m = *m;
    r->n++;
    return 0;
}

static int build_id_matches(const struct sym_elf *e, const char *hex)
{
    char got[2 * SYM_BUILD_ID_MAX + 1];
    if (!hex[0])
        return 1;               /* nothing recorded: take the file as is */
    sym_build_id_hex(e->build_id, e->build_id_len, got, sizeof got);
    return strcmp(got, hex) == 0;
}

static void rmap_load(struct sym_resolver *r, struct rmap *rm)
{
    char path[SYM_PATH_MAX + 512];
    rm->tried = 1;
    if (rm->m.path[0] == '/') {
        snprintf(path, sizeof path, "%s%s", r->root, rm->m.path);
        struct sym_elf *e;
        if (sym_elf_open(path, &e) == 0) {
            if (build_id_matches(e, rm->m.build_id)) {
                rm->loads = e;
                rm->elf = e;
            } else {
                sym_elf_close(e);
            }
        }
    }
    /* the debug file names what .dynsym alone cannot (static functions):
     * taken whenever the mapped file has no .symtab and the ids match; the
     * chosen directory first, then the default one */
    if ((!rm->elf || !sym_elf_has_symtab(rm->elf)) && strlen(rm->m.build_id) > 2) {
        const char *dirs[2] = { r->debug_dir, SYM_DEBUG_DIR };
        int ndirs = strcmp(r->debug_dir, SYM_DEBUG_DIR) == 0 ? 1 : 2;
        for (int i = 0; i < ndirs; i++) {
            snprintf(path, sizeof path, "%s/%.2s/%s.debug", dirs[i], rm->m.build_id,
                     rm->m.build_id + 2);
            struct sym_elf *d;
            if (sym_elf_open(path, &d) != 0)
                continue;
            if (build_id_matches(d, rm->m.build_id) && sym_elf_nsyms(d) > 0) {
                /* the mapped file (if any) keeps providing PT_LOADs */
                if (!rm->loads)
                    rm->loads = d;
                rm->elf = d;
                break;
            }
            sym_elf_close(d);
        }
    }
}

static void put_name(char *buf, size_t cap, const char *name, const char *suffix)
{
    snprintf(buf, cap, "%s%s", name, suffix);
    for (char *c = buf; *c; c++)
        if (*c == ';' || *c == '\n' || *c == ' ')
            *c = '_';
}

int sym_resolve(struct sym_resolver *r, uint64_t ip, int kernel_hint, char *buf, size_t cap)
{
    if (kernel_hint || ip >= SYM_KERNEL_SPACE_MIN) {
        if (!r->k_tried) {
            r->k_tried = 1;
            if (r->ktext && sym_kernel_load(SYM_KALLSYMS, &r->k) == 0 &&
                sym_kernel_text(r->k) != r->ktext) {
                sym_kernel_free(r->k);  /* another boot (KASLR): names would lie */
                r->k = NULL;
            }
        }
        const char *n = r->k ? sym_kernel_lookup(r->k, ip, NULL) : NULL;
        if (n)
            put_name(buf, cap, n, "_[k]");
        else
            snprintf(buf, cap, "[kernel]");
        return 0;
    }
    for (size_t i = r->n; i-- > 0;) {
        struct rmap *rm = &r->maps[i];
        if (ip < rm->m.start || ip >= rm->m.end)
            continue;
        if (rm->m.path[0] != '/') {
            /* anonymous memory: JIT code if the perf map names it */
            const char *jn = jit_lookup(r, ip);
            if (jn) {
                put_name(buf, cap, jn, "");
                return 0;
            }
            if (rm->m.path[0] == 0) {
                snprintf(buf, cap, "[anon]+0x%llx", (unsigned long long)ip);
                return 0;
            }
        }
        uint64_t fo = ip - rm->m.start + rm->m.pgoff, va;
        if (!rm->tried)
            rmap_load(r, rm);
        if (rm->loads && sym_elf_offset_to_vaddr(rm->loads, fo, &va) == 0) {
            const char *n = rm->elf ? sym_elf_lookup(rm->elf, va, NULL) : NULL;
            if (n)
                put_name(buf, cap, n, "");
            if (sym_elf_in_tramp(rm->loads, va) || (rm->elf && sym_elf_in_tramp(rm->elf, va))) {
                if (!n)
                    put_name(buf, cap, SYM_TRAMP_SECTION, "");
                return 1;
            }
            if (n)
                return 0;
        }
        const char *base = strrchr(rm->m.path, '/');
        base = base ? base + 1 : rm->m.path;
        char tmp[300];
        snprintf(tmp, sizeof tmp, "%s+0x%llx", base, (unsigned long long)fo);
        put_name(buf, cap, tmp, "");
        return 0;
    }
    const char *jn = jit_lookup(r, ip);
    if (jn) {
        put_name(buf, cap, jn, "");
        return 0;
    }
    snprintf(buf, cap, "[unknown]");
    return 0;
}
