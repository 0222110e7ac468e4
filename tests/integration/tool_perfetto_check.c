/*
 * tool_perfetto_check.c — decode a `d9 export --format perfetto` file with
 * protobuf-c (proto/perfetto_trace.proto) and check it as a reader would:
 * every packet on the sequence, interned names and callstacks defined before
 * use, the incremental clock declared, slices balanced per track, flows
 * ending where they start. Prints the counts per kind as "key value" lines
 * for test_export_perfetto.sh to compare with the JSON export and d9 events.
 *
 * Usage: tool_perfetto_check FILE [NAME]   (NAME: also print "named <n>",
 * the slices begun with that name, and their longest duration in ns).
 *        tool_perfetto_check FILE --dump    the facts, one per line, after
 * the counts (for test_consistency.sh):
 *   slice TID NAME START END     a slice of a thread track (ns; outermost)
 *   counter NAME VALUE           a counter point ("sched_wait rt w0" ...)
 *   flow ID start TS TID | flow ID end TS TID
 *   stack TID F1;F2;...          a PerfSample's frames, outermost first
 * Exit 0 when the file is consistent, 1 with the first problem on stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proto/perfetto_trace.pb-c.h"

#define MAXN 1000000

static uint64_t names_max, frames_max, stacks_max;
static char **names;                /* iid -> name */
static uint64_t *depth_of;          /* track uuid -> open slices */
static uint64_t *open_ts;           /* track uuid -> start of the named slice open, +1 */
static unsigned char *is_thread;    /* track uuid -> 1 thread, 2 counter, 3 process */
static int32_t *tid_of;             /* track uuid -> tid of a thread track */
static char **track_name;           /* track uuid -> name */
static char **func_name;            /* function name iid -> name */
static uint64_t *frame_func;        /* frame iid -> function name iid */
static uint64_t **stack_frames;     /* callstack iid -> frame iids, [0] = count */
static uint64_t *slice_start;       /* track uuid -> start of the outermost open slice, +1 */
static const char **slice_name;

static int fail(const char *what, uint64_t v)
{
    fprintf(stderr, "tool_perfetto_check: %s (%" PRIu64 ")\n", what, v);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return fail("usage: tool_perfetto_check FILE [NAME]", 0);
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        return fail("cannot open the file", 0);
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(sz > 0 ? (size_t)sz : 1);
    if (!buf || fread(buf, 1, (size_t)sz, f) != (size_t)sz)
        return fail("cannot read the file", 0);
    fclose(f);
    Perfetto__Protos__Trace *t = perfetto__protos__trace__unpack(NULL, (size_t)sz, buf);
    if (!t)
        return fail("not a Trace message", (uint64_t)sz);
    names = calloc(MAXN, sizeof *names);
    depth_of = calloc(MAXN, sizeof *depth_of);
    open_ts = calloc(MAXN, sizeof *open_ts);
    is_thread = calloc(MAXN, 1);
    unsigned char *flow_open = calloc(MAXN, 1);
    if (!names || !depth_of || !open_ts || !is_thread || !flow_open)
        return fail("out of memory", 0);
    int dump = argc > 2 && strcmp(argv[2], "--dump") == 0;
    const char *want = argc > 2 && !dump ? argv[2] : NULL;
    tid_of = calloc(MAXN, sizeof *tid_of);
    track_name = calloc(MAXN, sizeof *track_name);
    func_name = calloc(MAXN, sizeof *func_name);
    frame_func = calloc(MAXN, sizeof *frame_func);
    stack_frames = calloc(MAXN, sizeof *stack_frames);
    slice_start = calloc(MAXN, sizeof *slice_start);
    slice_name = calloc(MAXN, sizeof *slice_name);
    if (!tid_of || !track_name || !func_name || !frame_func || !stack_frames || !slice_start ||
        !slice_name)
        return fail("out of memory", 0);
    FILE *dout = NULL;
    char *dbuf = NULL;
    size_t dlen = 0;
    if (dump && !(dout = open_memstream(&dbuf, &dlen)))
        return fail("out of memory", 0);
    uint64_t polls = 0, parks = 0, instants = 0, off_cpu = 0, counters = 0, samples = 0;
    uint64_t flows = 0, terminated = 0, ends = 0, named = 0, named_max = 0, tracks = 0;
    uint64_t clock = 0, threads = 0;
    int have_clock = 0;
    for (size_t i = 0; i < t->n_packet; i++) {
        Perfetto__Protos__TracePacket *p = t->packet[i];
        if (!p->has_trusted_packet_sequence_id || p->trusted_packet_sequence_id != 1)
            return fail("packet without sequence id 1", i);
        if (i == 0) {
            if (p->data_case != PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT ||
                !p->has_sequence_flags || !(p->sequence_flags & 1) || !p->trace_packet_defaults ||
                p->trace_packet_defaults->timestamp_clock_id != 64)
                return fail("first packet is not the clock snapshot with defaults", i);
            Perfetto__Protos__ClockSnapshot *cs = p->clock_snapshot;
            for (size_t c = 0; c < cs->n_clocks; c++)
                if (cs->clocks[c]->clock_id == 64 && cs->clocks[c]->is_incremental) {
                    clock = cs->clocks[c]->timestamp;
                    have_clock = 1;
                }
            if (!have_clock || cs->primary_trace_clock != 3)
                return fail("no incremental clock 64 over MONOTONIC", i);
            continue;
        }
        Perfetto__Protos__InternedData *id = p->interned_data;
        if (id) {
            for (size_t k = 0; k < id->n_event_names; k++) {
                uint64_t iid = id->event_names[k]->iid;
                if (iid == 0 || iid >= MAXN || names[iid])
                    return fail("event name iid reused or out of range", iid);
                names[iid] = id->event_names[k]->name;
                if (iid > names_max)
                    names_max = iid;
            }
            for (size_t k = 0; k < id->n_function_names; k++) {
                Perfetto__Protos__InternedString *s = id->function_names[k];
                if (s->iid == 0 || s->iid >= MAXN || func_name[s->iid])
                    return fail("function name iid reused or out of range", s->iid);
                func_name[s->iid] = strndup((const char *)s->str.data, s->str.len);
            }
            for (size_t k = 0; k < id->n_frames; k++) {
                uint64_t iid = id->frames[k]->iid;
                if (iid != frames_max + 1 || iid >= MAXN)
                    return fail("frame iids not consecutive", iid);
                uint64_t fn = id->frames[k]->function_name_id;
                if (fn >= MAXN || !func_name[fn])
                    return fail("frame names an undefined function", iid);
                frame_func[iid] = fn;
                frames_max = iid;
            }
            for (size_t k = 0; k < id->n_callstacks; k++) {
                Perfetto__Protos__Callstack *c = id->callstacks[k];
                if (c->iid != stacks_max + 1)
                    return fail("callstack iids not consecutive", c->iid);
                for (size_t q = 0; q < c->n_frame_ids; q++)
                    if (c->frame_ids[q] == 0 || c->frame_ids[q] > frames_max)
                        return fail("callstack uses an undefined frame", c->frame_ids[q]);
                if (c->iid >= MAXN)
                    return fail("callstack iid out of range", c->iid);
                stack_frames[c->iid] = malloc((c->n_frame_ids + 1) * sizeof(uint64_t));
                if (!stack_frames[c->iid])
                    return fail("out of memory", 0);
                stack_frames[c->iid][0] = c->n_frame_ids;
                memcpy(stack_frames[c->iid] + 1, c->frame_ids, c->n_frame_ids * sizeof(uint64_t));
                stacks_max = c->iid;
            }
        }
        uint64_t ts = 0;
        if (p->has_timestamp) {
            if (p->has_timestamp_clock_id && p->timestamp_clock_id == 3) {
                ts = p->timestamp;
            } else {
                clock += p->timestamp;
                ts = clock;
            }
        }
        switch (p->data_case) {
        case PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR: {
            Perfetto__Protos__TrackDescriptor *td = p->track_descriptor;
            if (!td->has_uuid || td->uuid == 0 || td->uuid >= MAXN || is_thread[td->uuid])
                return fail("track uuid reused or out of range", td->uuid);
            if (td->has_parent_uuid && is_thread[td->parent_uuid] != 3)
                return fail("parent track is not a process declared before", td->parent_uuid);
            is_thread[td->uuid] = td->thread ? 1 : td->counter ? 2 : td->process ? 3 : 0;
            if (!is_thread[td->uuid])
                return fail("track of no kind", td->uuid);
            threads += td->thread != NULL;
            if (td->thread)
                tid_of[td->uuid] = td->thread->tid;
            track_name[td->uuid] = td->name;
            tracks++;
            break;
        }
        case PERFETTO__PROTOS__TRACE_PACKET__DATA_PERF_SAMPLE:
            if (p->perf_sample->callstack_iid == 0 || p->perf_sample->callstack_iid > stacks_max)
                return fail("sample with an undefined callstack", i);
            samples++;
            if (dout) {
                const uint64_t *fr = stack_frames[p->perf_sample->callstack_iid];
                fprintf(dout, "stack %" PRId32 " ", p->perf_sample->tid);
                for (uint64_t q = 0; q < fr[0]; q++)
                    fprintf(dout, "%s%s", q ? ";" : "", func_name[frame_func[fr[q + 1]]]);
                fputc('\n', dout);
            }
            break;
        case PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT: {
            Perfetto__Protos__TrackEvent *te = p->track_event;
            uint64_t tr = te->track_uuid;
            if (!te->has_track_uuid || tr >= MAXN || !is_thread[tr])
                return fail("event on an undeclared track", tr);
            const char *name = NULL;
            if (te->name_field_case == PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID) {
                if (te->name_iid > names_max || !names[te->name_iid])
                    return fail("event name iid not interned", te->name_iid);
                name = names[te->name_iid];
            }
            for (size_t k = 0; k < te->n_flow_ids; k++) {
                if (te->flow_ids[k] >= MAXN)
                    return fail("flow id out of range", te->flow_ids[k]);
                flow_open[te->flow_ids[k]] = 1;
                flows++;
                if (dout)
                    fprintf(dout, "flow %" PRIu64 " start %" PRIu64 " %" PRId32 "\n",
                            te->flow_ids[k], ts, tid_of[tr]);
            }
            for (size_t k = 0; k < te->n_terminating_flow_ids; k++) {
                uint64_t fl = te->terminating_flow_ids[k];
                if (fl >= MAXN || !flow_open[fl])
                    return fail("flow ends where none started", fl);
                flow_open[fl] = 0;
                terminated++;
                if (dout)
                    fprintf(dout, "flow %" PRIu64 " end %" PRIu64 " %" PRId32 "\n", fl, ts,
                            tid_of[tr]);
            }
            switch (te->type) {
            case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN:
                if (!name || is_thread[tr] != 1)
                    return fail("slice without a name or off a thread track", i);
                if (strcmp(name, "parked") == 0)
                    parks++;
                else
                    polls++;
                if (want && strcmp(name, want) == 0) {
                    named++;
                    open_ts[tr] = ts + 1;
                }
                depth_of[tr]++;
                if (depth_of[tr] == 1) {
                    slice_start[tr] = ts + 1;
                    slice_name[tr] = name;
                }
                break;
            case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END:
                if (depth_of[tr] == 0)
                    return fail("slice end without a begin", i);
                depth_of[tr]--;
                if (depth_of[tr] == 0 && dout && slice_start[tr])
                    fprintf(dout, "slice %" PRId32 " %s %" PRIu64 " %" PRIu64 "\n", tid_of[tr],
                            slice_name[tr], slice_start[tr] - 1, ts);
                if (open_ts[tr] && ts + 1 - open_ts[tr] > named_max)
                    named_max = ts + 1 - open_ts[tr];
                open_ts[tr] = 0;
                ends++;
                break;
            case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT:
                if (!name)
                    return fail("instant without a name", i);
                if (strcmp(name, "off_cpu") == 0)
                    off_cpu++;
                else
                    instants++;
                break;
            case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER:
                if (is_thread[tr] != 2 ||
                    te->counter_value_field_case !=
                        PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_COUNTER_VALUE)
                    return fail("counter value off a counter track", i);
                counters++;
                if (dout)
                    fprintf(dout, "counter %s %" PRId64 "\n",
                            track_name[tr] ? track_name[tr] : "?", te->counter_value);
                break;
            default:
                return fail("event of no type", i);
            }
            break;
        }
        default:
            return fail("packet of an unexpected kind", i);
        }
    }
    for (uint64_t u = 0; u < MAXN; u++)
        if (depth_of[u])
            return fail("slices left open on track", u);
    printf("packets %zu\ntracks %" PRIu64 "\nthreads %" PRIu64 "\npolls %" PRIu64
           "\nparks %" PRIu64 "\nends %" PRIu64 "\ninstants %" PRIu64 "\noff_cpu %" PRIu64
           "\ncounters %" PRIu64 "\nsamples %" PRIu64 "\nflows %" PRIu64 "\nterminated %" PRIu64
           "\n", t->n_packet, tracks, threads, polls, parks, ends, instants, off_cpu, counters,
           samples, flows, terminated);
    if (want)
        printf("named %" PRIu64 "\nnamed_max_ns %" PRIu64 "\n", named, named_max);
    if (dout) {
        fclose(dout);
        fwrite(dbuf, 1, dlen, stdout);
        free(dbuf);
    }
    perfetto__protos__trace__free_unpacked(t, NULL);
    free(buf);
    return 0;
}
