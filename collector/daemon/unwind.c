/*
 * unwind.c — DWARF unwinding of perf user-stack samples with libdwfl (see
 * unwind.h). Called by perf.c from the drain thread only: one struct unw per
 * sampled process, no locking.
 *
 * Invariants: libdwfl's thread callbacks read only the sample being unwound
 * (u->cur_*), set for the duration of unw_sample; memory outside the
 * stack copy reads as unavailable, which ends the unwind, never a read of
 * the process. A Dwfl whose attach failed is not used (NULL) until the next
 * re-report.
 *
 * A frame whose pc has no CFI (code generated at run time: LuaJIT's
 * traces) ends the CFI walk and is passed by a scan: the first word of the
 * stack copy above its SP, within UNW_SCAN_BYTES, that points just after a
 * call instruction in a known module is taken as its return address, and
 * the walk resumes there (CFI again), at most UNW_SCAN_MAX times a sample.
 * A frame with CFI is never scanned.
 */
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "collector/daemon/unwind.h"

#define UNW_PATH_MAX 1100

struct unw {
    uint32_t pid;
    Dwfl *dwfl;                 /* NULL: not reported yet, or attach failed */
    uint64_t last_report_ns;
    int reported;               /* a report was tried at least once */
    char *pathp;                /* debuginfo_path: libdwfl's default */
    Dwfl_Callbacks cbs;
    /* the sample being unwound */
    uint32_t cur_tid;
    Dwarf_Word cur_regs[UNW_REGS_N];   /* DWARF numbering, 16 = return address (rip) */
    uint64_t cur_base;                 /* the sampled SP: address of cur_stack[0] */
    const uint8_t *cur_stack;
    size_t cur_len;
    uint64_t *out;
    uint16_t n, max;
    int gap;                    /* the walk ended at a pc without CFI, whose SP is: */
    uint64_t gap_sp;
    uint64_t unwound, failed, ns, scanned;
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* $D9_DEBUG_DIR: a build-id tree as d9's --debug-dir (DIR/xx/rest.debug),
 * read at the first unw_open; "" = none. The drain thread only. */
static char unw_debug_dir[UNW_PATH_MAX];
static int unw_debug_dir_read;

/* The debug file by build-id under $D9_DEBUG_DIR, else libdwfl's standard
 * search (/usr/lib/debug/.build-id, debuglink). */
static int cb_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                             GElf_Addr base, const char *file_name, const char *debuglink_file,
                             GElf_Word debuglink_crc, char **debuginfo_file_name)
{
    const unsigned char *bits;
    GElf_Addr vaddr;
    int n = unw_debug_dir[0] ? dwfl_module_build_id(mod, &bits, &vaddr) : 0;
    if (n > 1 && n <= 64) {
        char path[UNW_PATH_MAX + 140];
        int k = snprintf(path, sizeof path, "%s/%02x/", unw_debug_dir, bits[0]);
        for (int i = 1; i < n && k > 0 && (size_t)k + 3 < sizeof path; i++)
            k += snprintf(path + k, sizeof path - (size_t)k, "%02x", bits[i]);
        if (k > 0 && (size_t)k + 7 < sizeof path) {
            memcpy(path + k, ".debug", 7);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd >= 0) {
                *debuginfo_file_name = strdup(path);
                return fd;
            }
        }
    }
    return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
                                        debuglink_crc, debuginfo_file_name);
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static pid_t cb_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
    (void)dwfl;
    struct unw *u = arg;
    if (*thread_argp)
        return 0;
    *thread_argp = u;
    return (pid_t)u->cur_tid;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
    (void)dwfl;
    struct unw *u = arg;
    if ((uint32_t)tid != u->cur_tid)
        return false;
    *thread_argp = u;
    return true;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    (void)dwfl;
    struct unw *u = arg;
    uint64_t sp = u->cur_base;
    if (u->cur_len < sizeof *result || addr < sp || addr - sp > u->cur_len - sizeof *result)
        return false;
    *result = rd64(u->cur_stack + (addr - sp));
    return true;
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
    struct unw *u = thread_arg;
    return dwfl_thread_state_registers(thread, 0, UNW_REGS_N, u->cur_regs);
}

static const Dwfl_Thread_Callbacks unw_thread_cbs = {
    .next_thread = cb_next_thread,
    .get_thread = cb_get_thread,
    .memory_read = cb_memory_read,
    .set_initial_registers = cb_set_initial_registers,
};

static int has_cfi(Dwfl_Module *mod, uint64_t pc);

/* One frame: its pc out. A pc without CFI (code generated at run time)
 * ends the walk there, with the frame's SP kept for unw_scan: libdwfl would
 * go on with a frame-pointer guess, garbage over such code. */
static int cb_frame(Dwfl_Frame *f, void *arg)
{
    struct unw *u = arg;
    Dwarf_Addr pc;
    bool activation;
    if (!dwfl_frame_pc(f, &pc, &activation) || pc == 0)
        return DWARF_CB_ABORT;
    u->out[u->n++] = pc;
    if (u->n >= u->max)
        return DWARF_CB_ABORT;
    Dwarf_Addr at = activation ? pc : pc - 1;       /* a return address: its call */
    Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, at);
    if (!mod || !has_cfi(mod, at)) {
        Dwarf_Word sp;
        if (dwfl_frame_reg(f, 7, &sp) == 0) {
            u->gap = 1;
            u->gap_sp = sp;
        }
        return DWARF_CB_ABORT;
    }
    return DWARF_CB_OK;
}

/* (Re)build the module list from /proc/<pid>/maps and attach. */
static void unw_report(struct unw *u, uint64_t now_ns)
{
    u->reported = 1;
    u->last_report_ns = now_ns;
    if (u->dwfl)
        dwfl_end(u->dwfl);
    u->dwfl = dwfl_begin(&u->cbs);
    if (!u->dwfl)
        return;
    if (dwfl_linux_proc_report(u->dwfl, (pid_t)u->pid) != 0 ||
        dwfl_report_end(u->dwfl, NULL, NULL) != 0 ||
        !dwfl_attach_state(u->dwfl, NULL, (pid_t)u->pid, &unw_thread_cbs, u)) {
        dwfl_end(u->dwfl);
        u->dwfl = NULL;
    }
}

void unw_set_debug_dir(const char *dir)
{
    if (!dir || !*dir)
        return;
    unw_debug_dir_read = 1;
    if (*dir == '/' && strlen(dir) < sizeof unw_debug_dir)
        snprintf(unw_debug_dir, sizeof unw_debug_dir, "%s", dir);
}

struct unw *unw_open(uint32_t pid)
{
    struct unw *u = calloc(1, sizeof *u);
    if (!u)
        return NULL;
    u->pid = pid;
    if (!unw_debug_dir_read) {
        unw_debug_dir_read = 1;
        const char *dir = getenv("D9_DEBUG_DIR");
        if (dir && *dir == '/' && strlen(dir) < sizeof unw_debug_dir)
            snprintf(unw_debug_dir, sizeof unw_debug_dir, "%s", dir);
    }
    u->pathp = NULL;
    u->cbs.find_elf = dwfl_linux_proc_find_elf;
    u->cbs.find_debuginfo = cb_find_debuginfo;
    u->cbs.debuginfo_path = &u->pathp;
    return u;
}

void unw_close(struct unw *u)
{
    if (!u)
        return;
    if (u->dwfl)
        dwfl_end(u->dwfl);
    free(u);
}

static uint16_t unw_walk(struct unw *u, uint32_t tid, const uint8_t *regs, const uint8_t *stack,
                         size_t stack_len, uint64_t *out, uint16_t max, uint64_t now_ns);
static int unw_scan(struct unw *u, uint32_t tid, size_t from);

uint16_t unw_sample(struct unw *u, uint32_t tid, const uint8_t *regs, const uint8_t *stack,
                    size_t stack_len, uint64_t *out, uint16_t max, uint64_t now_ns)
{
    if (!u || !regs || !max)
        return 0;
    uint64_t t0 = mono_ns();
    uint16_t n = unw_walk(u, tid, regs, stack, stack_len, out, max, now_ns);
    u->ns += mono_ns() - t0;
    return n;
}

static uint16_t unw_walk(struct unw *u, uint32_t tid, const uint8_t *regs, const uint8_t *stack,
                         size_t stack_len, uint64_t *out, uint16_t max, uint64_t now_ns)
{
    uint64_t s[UNW_REGS_N];
    for (unsigned i = 0; i < UNW_REGS_N; i++)
        s[i] = rd64(regs + (size_t)i * 8);
    /* perf order AX BX CX DX SI DI BP SP IP R8..R15 -> DWARF x86-64 */
    static const unsigned from_perf[UNW_REGS_N] = { 0, 3, 2, 1, 4, 5, 6, 7,
                                                    9, 10, 11, 12, 13, 14, 15, 16, 8 };
    for (unsigned i = 0; i < UNW_REGS_N; i++)
        u->cur_regs[i] = s[from_perf[i]];
    uint64_t pc = u->cur_regs[16];
    if (!u->reported ||
        ((!u->dwfl || !dwfl_addrmodule(u->dwfl, pc)) &&
         now_ns - u->last_report_ns >= UNW_REPORT_NS))
        unw_report(u, now_ns);
    if (!u->dwfl)
        return u->failed++, 0;
    u->cur_tid = tid;
    u->cur_base = u->cur_regs[7];
    u->cur_stack = stack;
    u->cur_len = stack ? stack_len : 0;
    u->out = out;
    u->n = 0;
    u->max = max;
    int in_mod = dwfl_addrmodule(u->dwfl, pc) != NULL;
    u->gap = 0;
    if (in_mod) {
        (void)dwfl_getthread_frames(u->dwfl, (pid_t)tid, cb_frame, u);
    } else {
        out[0] = pc;        /* generated code libdwfl knows nothing of */
        u->n = 1;
        u->gap = 1;
        u->gap_sp = u->cur_base;
    }
    /* code without CFI (the walk's end): its caller by a scan, then CFI again */
    for (unsigned k = 0; u->gap && u->n < max && k < UNW_SCAN_MAX; k++) {
        uint64_t sp = u->gap_sp;
        u->gap = 0;
        if (sp < u->cur_base || sp - u->cur_base >= u->cur_len ||
            !unw_scan(u, tid, (size_t)(sp - u->cur_base)))
            break;
        u->scanned++;
    }
    u->cur_stack = NULL;
    if (!in_mod && u->n <= 1) {
        u->cur_len = 0;
        return u->failed++, 0;
    }
    u->cur_len = 0;
    u->unwound++;
    return u->n;
}

/* 1 when the bytes before ra in mod's text end in a call instruction
 * (call rel32; call through a register or memory, FF /2, with the usual
 * ModRM forms). The text is read from the module's ELF file, bounds-checked. */
static int after_call(Dwfl_Module *mod, uint64_t ra)
{
    GElf_Addr bias = 0;
    Elf *elf = dwfl_module_getelf(mod, &bias);
    if (!elf || ra < bias)
        return 0;
    uint64_t a = ra - bias;
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn)) != NULL) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
            !(sh.sh_flags & SHF_EXECINSTR) || a < sh.sh_addr + 7 || a > sh.sh_addr + sh.sh_size)
            continue;
        Elf_Data *d = elf_getdata(scn, NULL);
        uint64_t off = a - sh.sh_addr;
        if (!d || !d->d_buf || d->d_size < off || off < 7)
            return 0;
        const uint8_t *b = (const uint8_t *)d->d_buf + off;    /* b[-1]: the byte before ra */
        if (b[-5] == 0xe8)                                      /* call rel32 */
            return 1;
        if (b[-2] == 0xff && (b[-1] & 0xf8) == 0xd0)            /* call *%reg */
            return 1;
        if (b[-3] == 0xff && (b[-2] & 0x38) == 0x10 && (b[-2] >> 6) == 1)   /* disp8 */
            return 1;
        if (b[-6] == 0xff && (b[-5] & 0x38) == 0x10 &&
            ((b[-5] >> 6) == 2 || (b[-5] & 0xc7) == 0x05))      /* disp32, rip-relative */
            return 1;
        if (b[-2] == 0xff && (b[-1] & 0x38) == 0x10 && (b[-1] >> 6) == 0)  /* call *(%reg) */
            return 1;
        return 0;
    }
    return 0;
}

/* 1 when mod has CFI for pc (.eh_frame, else .debug_frame). */
static int has_cfi(Dwfl_Module *mod, uint64_t pc)
{
    Dwarf_Addr bias = 0;
    Dwarf_Frame *fr = NULL;
    Dwarf_CFI *c = dwfl_module_eh_cfi(mod, &bias);
    if (c && pc >= bias && dwarf_cfi_addrframe(c, pc - bias, &fr) == 0) {
        free(fr);
        return 1;
    }
    c = dwfl_module_dwarf_cfi(mod, &bias);
    if (c && pc >= bias && dwarf_cfi_addrframe(c, pc - bias, &fr) == 0) {
        free(fr);
        return 1;
    }
    return 0;
}

/* From offset from of the stack copy (a frame without CFI: its SP), the
 * first word, within UNW_SCAN_BYTES, that is a return address in a
 * module's code: the walk resumes there, its frames appended to out. 1 when
 * it added some. */
static int unw_scan(struct unw *u, uint32_t tid, size_t from)
{
    from = (from + 7) & ~(size_t)7;
    if (from >= u->cur_len)
        return 0;
    size_t lim = u->cur_len - from < UNW_SCAN_BYTES ? u->cur_len : from + UNW_SCAN_BYTES;
    for (size_t off = from; off + 8 <= lim; off += 8) {
        uint64_t ra = rd64(u->cur_stack + off);
        Dwfl_Module *mod = ra ? dwfl_addrmodule(u->dwfl, ra) : NULL;
        if (!mod || !after_call(mod, ra))
            continue;
        uint16_t n0 = u->n;
        u->cur_regs[16] = ra;
        u->cur_regs[7] = u->cur_base + off + 8;
        (void)dwfl_getthread_frames(u->dwfl, (pid_t)tid, cb_frame, u);
        return u->n > n0;
    }
    return 0;
}

void unw_counts(const struct unw *u, uint64_t *unwound, uint64_t *failed, uint64_t *ns)
{
    *unwound = u ? u->unwound : 0;
    *failed = u ? u->failed : 0;
    *ns = u ? u->ns : 0;
}
