/* controller-server-source.c -- sources (polled into storage every tick) and sinks
 * (their files, progress and switches).
 *
 * Contract: controller-server.h; what the server's files share:
 * controller-server-internal.h.  The notes are numbered across the server
 * (controller-server.c lists where each stands).
 *
 * NOTES ON THE DESIGN
 *
 * (19) Sinks (DataflowSpec kind SINK, controller-sink.h).  A sink is a dataflow whose
 *     output goes to a file.  Its progress (upper: the file is complete up to it; mark:
 *     the file's length then, 8 bytes big endian) is a storage collection of kind SINK,
 *     so it is durable, in the ring (R(sink, I) = progress - 1) and in coord_frontiers.
 *     server_sink_flush() appends kept output (e->sink_out) to the file and fdatasyncs
 *     it, then writes the progress: a crash in between leaves only lines past the
 *     recorded length, which server_sink_open() cuts back before resuming at progress - 1
 *     (each update once).  Lines leave only once their appends are durable (16, G1:
 *     e->sink_seq).  A new sink starts at its as-of with its snapshot, or (SNAPSHOT =
 *     false) at progress = as-of + 1.  A failed write or fdatasync fails the sink (58030);
 *     its progress stays until it is dropped or a restart resumes it.  docs/compute.md.
 *
 * (20) Sources (DataflowSpec kind SOURCE, controller-source.h).  A source has two storage
 *     collections: its data (kind SOURCE, gid) and its remap (kind REMAP, progress_id:
 *     the offset ingested up to each time).  server_source_tick() polls every source at
 *     ts = max(now, its upper) and writes, for all in ONE storage write, the new rows, the
 *     remap's new offset and both uppers to ts + 1, even with nothing new.  Rows and offset
 *     are durable together, so after kill -9 nothing is read twice or skipped.  Its
 *     readers then step (server_compute_push(), server_compute_run()).  A source that
 *     cannot go on keeps its offset, logs source_error, and its uppers go on moving.
 *     Frontiers and rows show through the output gate (16).  docs/compute.md, "Sources".
 */
#include "controller-server.h"
#include "controller-server-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller-dataflow.h"
#include "controller-eval.h"
#include "controller-sink.h"
#include "controller-source.h"
#include "controller-storage.h"
#include "ring/fring.h"
#include "killpoint.h"
#include "log.h"
#include "row/row.h"
#include "util.h"

/* ---- Sources (20) ------------------------------------------------------------------- */

struct srcent *server_srcent_find(const struct cserver *s, uint64_t gid)
{
        for (size_t i = 0; i < s->n_srcs; i++)
                if (s->srcs[i]->gid == gid)
                        return s->srcs[i];
        return NULL;
}

static void srcent_free(struct srcent *e)
{
        if (!e)
                return;
        src_reader_free(e->reader);
        eval_batch_done(&e->rows);
        eval_batch_done(&e->remap);
        if (e->spec)
                coord__dataflow_spec__free_unpacked(e->spec, NULL);
        free(e);
}

/* Free every source entry and the array (the server's end). */
void server_srcents_free(struct cserver *s)
{
        for (size_t i = 0; i < s->n_srcs; i++)
                srcent_free(s->srcs[i]);
        free(s->srcs);
        s->srcs = NULL;
        s->n_srcs = s->cap_srcs = 0;
}

/* Forget source gid (its collections are the caller's to drop). */
void server_srcent_remove(struct cserver *s, uint64_t gid)
{
        for (size_t i = 0; i < s->n_srcs; i++)
                if (s->srcs[i]->gid == gid) {
                        log_info("source_removed", "gid=%llu", (unsigned long long)gid);
                        srcent_free(s->srcs[i]);
                        s->srcs[i] = s->srcs[--s->n_srcs];
                        return;
                }
}

static void source_error(struct srcent *e, const char *why)
{
        if (strcmp(e->err, why) == 0)
                return;
        snprintf(e->err, sizeof(e->err), "%s", why);
        if (why[0])
                log_warn("source_error", "gid=%llu error=\"%s\" offset=%llu", (unsigned long long)e->gid,
                         why, (unsigned long long)e->offset);
        else
                log_info("source_resumed", "gid=%llu offset=%llu", (unsigned long long)e->gid,
                         (unsigned long long)e->offset);
}

/* The remap's one row at t: the offset; 0 when there is none. */
static int remap_row(const void *row, size_t len, int64_t count, void *userdata)
{
        struct row_datum d;

        if (count == 1 && row_decode(row, len, &d, 1) == 1 && d.kind == ROW_KIND_INT && d.i >= 0)
                *(uint64_t *)userdata = (uint64_t)d.i;
        return 0;
}

/* Open e's collections (made at its birth if missing) and its reader at the offset its
 * remap holds where both uppers meet (20).  -errno with err; an unreadable source
 * stays installed, without a reader, and says why. */
static int source_open(struct cserver *s, struct srcent *e, struct row_error *err)
{
        const Coord__DataflowSpec *sp = e->spec;
        const uint64_t gids[2] = { e->gid, e->progress_id };
        const enum storage_kind kinds[2] = { STORAGE_KIND_SOURCE, STORAGE_KIND_REMAP };
        struct storage_info info[2];
        uint64_t offset = 0;
        int r;

        for (int i = 0; i < 2; i++) {
                r = storage_get_info(s->st, gids[i], &info[i]);
                if (r == -ENOENT) {
                        r = storage_create(s->st, gids[i], kinds[i], sp->as_of, sp->as_of);
                        if (r == 0)
                                r = storage_get_info(s->st, gids[i], &info[i]);
                        if (r == 0)
                                (void)server_created(s, &info[i], err);
                }
                if (r < 0)
                        return server_storage_failure(s, err, r, "opening source collection %llu",
                                               (unsigned long long)gids[i]);
                if (info[i].kind != kinds[i])
                        return row_error_set(err, -EEXIST, "XX000", "collection %llu exists as another kind",
                                             (unsigned long long)gids[i]);
        }
        /* Written in one WriteBatch, always: uppers that differ mean damage. */
        if (info[0].frontiers.upper != info[1].frontiers.upper)
                return row_error_set(err, -EBADMSG, "XX000", "source %llu: data upper %llu, remap upper %llu",
                                     (unsigned long long)e->gid, (unsigned long long)info[0].frontiers.upper,
                                     (unsigned long long)info[1].frontiers.upper);
        if (info[1].frontiers.upper > info[1].frontiers.since) {
                r = storage_read(s->st, e->progress_id, info[1].frontiers.upper - 1, remap_row, &offset, NULL);
                if (r < 0)
                        return server_storage_failure(s, err, r, "reading the remap of source %llu",
                                               (unsigned long long)e->gid);
        }
        e->offset = offset;
        e->reader = src_reader_free(e->reader);
        r = src_reader_new(sp, offset, &e->reader);
        if (r < 0)
                return row_error_set(err, r, "XX000", "source %llu: cannot read it: %s",
                                     (unsigned long long)e->gid, strerror(-r));
        log_info("source_installed", "gid=%llu progress=%llu offset=%llu upper=%llu",
                 (unsigned long long)e->gid, (unsigned long long)e->progress_id, (unsigned long long)offset,
                 (unsigned long long)info[0].frontiers.upper);
        return 0;
}

/* A source spec: 1 installed, 0 there already, -errno (e set). */
int server_source_install(struct cserver *s, const Coord__DataflowSpec *sp, struct row_error *err)
{
        struct srcent *e;
        int r;

        if (server_srcent_find(s, sp->gid))
                return 0;
        if (!sp->progress_id || sp->progress_id == sp->gid)
                return row_error_set(err, -EINVAL, "XX000", "source %llu without a remap collection",
                                     (unsigned long long)sp->gid);
        e = calloc(1, sizeof(*e));
        if (!e || server_spec_copy(sp, &e->spec) < 0 || GROW_ARRAY(s->srcs, s->cap_srcs, s->n_srcs + 1) < 0) {
                srcent_free(e);
                return row_error_oom(err);
        }
        e->gid = sp->gid;
        e->progress_id = sp->progress_id;
        e->rows = EVAL_BATCH_INIT;
        e->remap = EVAL_BATCH_INIT;
        s->srcs[s->n_srcs++] = e;
        r = source_open(s, e, err);
        if (r < 0)
                source_error(e, err->message);
        return 1;
}

/* (20) One ingestion of every source: its new rows and its remap at ts, both uppers to
 * ts + 1, one write; then their readers step. */
void server_source_tick(struct cserver *s)
{
        _cleanup_free_ struct storage_append *v = NULL;
        _cleanup_free_ struct storage_update *u = NULL;
        _cleanup_free_ uint64_t *offsets = NULL;
        size_t k = 0, n_u = 0, at = 0;
        uint64_t now = now_ms(), wall = wall_ms();     /* pacing; timestamps */
        int r;

        if (!s->st || !s->n_srcs)
                return;
        v = calloc(2 * s->n_srcs, sizeof(*v));
        offsets = calloc(s->n_srcs, sizeof(*offsets));
        if (!v || !offsets)
                return;         /* the next tick */
        for (size_t i = 0; i < s->n_srcs; i++) {
                struct srcent *e = s->srcs[i];
                struct storage_info di, ri;
                char why[256] = "";
                uint64_t ts;

                eval_batch_clear(&e->rows);
                eval_batch_clear(&e->remap);
                offsets[i] = e->offset;
                if (storage_get_info(s->st, e->gid, &di) < 0 || storage_get_info(s->st, e->progress_id, &ri) < 0 ||
                    di.frontiers.upper != ri.frontiers.upper)
                        continue;
                ts = wall > di.frontiers.upper ? wall : di.frontiers.upper;
                if (e->reader) {
                        r = src_reader_poll(e->reader, now, ts, 1u << 20, &e->rows, why, sizeof(why));
                        if (r < 0 && !why[0])
                                snprintf(why, sizeof(why), "%s", strerror(-r));
                        source_error(e, why);
                        if (r < 0)
                                s->source_errors++;
                        offsets[i] = src_reader_offset(e->reader);
                }
                if (offsets[i] != e->offset) {
                        struct row_datum d = ROW_DATUM_INT((int64_t)e->offset);
                        uint8_t row[16];
                        size_t len = row_encode_into(&d, 1, row);

                        if (e->offset && eval_batch_push(&e->remap, row, len, ts, -1) < 0)
                                return;
                        d = ROW_DATUM_INT((int64_t)offsets[i]);
                        len = row_encode_into(&d, 1, row);
                        if (eval_batch_push(&e->remap, row, len, ts, 1) < 0)
                                return;
                }
                v[k++] = (struct storage_append){ .gid = e->gid, .expected_upper = di.frontiers.upper,
                                                  .new_upper = ts + 1, .n_updates = e->rows.n };
                v[k++] = (struct storage_append){ .gid = e->progress_id, .expected_upper = ri.frontiers.upper,
                                                  .new_upper = ts + 1, .n_updates = e->remap.n };
                n_u += e->rows.n + e->remap.n;
        }
        if (!k)
                return;
        u = calloc(n_u ? n_u : 1, sizeof(*u));
        if (!u)
                return;
        for (size_t i = 0, j = 0; i < s->n_srcs && j < k; i++) {
                struct srcent *e = s->srcs[i];
                const struct eval_batch *bs[2] = { &e->rows, &e->remap };

                if (v[j].gid != e->gid)
                        continue;       /* skipped above */
                for (int h = 0; h < 2; h++, j++) {
                        v[j].updates = &u[at];
                        for (size_t q = 0; q < bs[h]->n; q++)
                                u[at++] = (struct storage_update){ .row = bs[h]->updates[q].row,
                                        .len = bs[h]->updates[q].len, .time = bs[h]->updates[q].time,
                                        .diff = bs[h]->updates[q].diff };
                }
        }
        if (n_u)
                KILLPOINT("source.before_write");       /* rows and remap read, none written */
        r = storage_append_group(s->st, v, k);
        if (r < 0 || (size_t)r != k) {
                log_error_errno(r < 0 ? r : -EIO, "source_write_failed", "appends=%zu why=\"%s\"", k,
                                storage_last_error());
                server_storage_recover(s);
                /* The readers read ahead of what is durable: back to the remaps. */
                for (size_t i = 0; i < s->n_srcs; i++) {
                        struct row_error err;
                        if (source_open(s, s->srcs[i], &err) < 0)
                                source_error(s->srcs[i], err.message);
                }
                return;
        }
        if (n_u)
                KILLPOINT("source.after_write");        /* rows and remap written, not synced */
        s->source_ticks++;
        for (size_t i = 0, j = 0; i < s->n_srcs && j < k; i++) {
                struct srcent *e = s->srcs[i];
                struct storage_info info;

                if (v[j].gid != e->gid)
                        continue;
                j += 2;
                e->offset = offsets[i];
                s->source_rows += e->rows.n;
                for (int h = 0; h < 2; h++) {
                        uint64_t gid = h ? e->progress_id : e->gid;

                        if (storage_get_info(s->st, gid, &info) == 0)
                                server_ring_set(s, gid, &info.frontiers);
                        server_frontiers_dirty(s, gid);
                }
                server_compute_push(s, e->gid, &e->rows);
                server_compute_push(s, e->progress_id, &e->remap);
        }
        server_compute_run(s);         /* the readers step; peeks wake */
}

/* ---- Sinks (19) --------------------------------------------------------------------- */

/* (19) A sink's progress collection and file at install: the collection made at its
 * as-of if missing, the file cut back to the length its progress records, and *as_of
 * (its inputs' sinces folded in already) set to where the dataflow resumes: progress
 * - 1, whose snapshot is not written again (emit_from = progress).  Inputs compacted
 * past that would skip history: the sink fails rather than write a gap. */
int server_sink_open(struct cserver *s, struct dfent *e, uint64_t *as_of, struct row_error *err)
{
        const Coord__DataflowSpec *sp = e->spec;
        uint8_t mark[STORAGE_MARK_MAX];
        struct storage_info info;
        uint64_t length = 0, want;
        int r;

        e->file = sink_file_close(e->file);
        eval_batch_clear(&e->sink_out);
        r = storage_get_info(s->st, e->gid, &info);
        if (r == -ENOENT) {
                r = storage_create(s->st, e->gid, STORAGE_KIND_SINK, sp->as_of,
                                   sp->sink_snapshot ? sp->as_of : sp->as_of + 1);
                if (r == 0)
                        r = storage_get_info(s->st, e->gid, &info);
        }
        if (r < 0)
                return server_storage_failure(s, err, r, "opening the progress of sink %llu",
                                       (unsigned long long)e->gid);
        if (info.kind != STORAGE_KIND_SINK)
                return row_error_set(err, -EEXIST, "XX000", "collection %llu exists as another kind",
                                     (unsigned long long)e->gid);
        r = storage_get_mark(s->st, e->gid, mark);
        if (r == 8)
                length = be64_get(mark);
        else if (r > 0)
                return row_error_set(err, -EBADMSG, "XX000", "sink %llu: its progress mark is damaged",
                                     (unsigned long long)e->gid);
        /* Its snapshot at as-of when nothing was written yet, else from progress - 1. */
        want = info.frontiers.upper > sp->as_of ? info.frontiers.upper - 1 : sp->as_of;
        if (*as_of > want)
                return row_error_set(err, -ERANGE, "XX000",
                                     "sink %llu cannot resume at %llu: an input was compacted to %llu",
                                     (unsigned long long)e->gid, (unsigned long long)want,
                                     (unsigned long long)*as_of);
        *as_of = want;
        e->emit_from = info.frontiers.upper;
        e->sink_frontier = info.frontiers.upper;
        e->sink_seq = 0;
        r = sink_file_open(sp->sink_path, length, &e->file);
        if (r < 0)
                return row_error_set(err, r, "58030", "sink %llu: cannot open \"%s\": %s",
                                     (unsigned long long)e->gid, sp->sink_path, strerror(-r));
        return 0;
}

/* (19) What a step of sink e stepped to `frontier` produced (e->out): kept for the file,
 * from its progress on.  -ENOMEM. */
int server_sink_keep(struct cserver *s, struct dfent *e, uint64_t frontier)
{
        for (size_t j = 0; j < e->out.n; j++) {
                const struct eval_update *u = &e->out.updates[j];

                if (u->time >= e->emit_from &&
                    eval_batch_push(&e->sink_out, u->row, u->len, u->time, u->diff) < 0)
                        return -ENOMEM;
        }
        e->sink_frontier = frontier;
        e->sink_seq = server_out_tag(s);
        return 0;
}

/* (19) ALTER SINK ... SET FROM: sink e's spec comes again with another plan.  It goes
 * on from its durable progress P with the new one: what was stepped but is not in the
 * file yet (old input, at or after P) is dropped, and the new dataflow resumes at P - 1
 * without writing that snapshot (server_sink_open()).  So the file holds the old input's
 * updates below P and the new input's from P on, each once -- across a restart too,
 * which installs the new plan at the same P.  The adapter committed R(sink, new
 * inputs) <= P - 1 (it waited for the progress to pass their bounds). */
int server_sink_switch(struct cserver *s, struct dfent *e, const Coord__DataflowSpec *sp,
                       struct row_error *err)
{
        Coord__DataflowSpec *copy;

        if (server_spec_copy(sp, &copy) < 0)
                return row_error_oom(err);
        server_dfent_untrack(s, e);
        server_work_forget(s, e);
        e->df = dataflow_free(e->df);
        coord__dataflow_spec__free_unpacked(e->spec, NULL);
        e->spec = copy;
        log_info("sink_switched", "gid=%llu stepped_to=%llu dropped_lines=%zu", (unsigned long long)e->gid,
                 (unsigned long long)e->sink_frontier, e->sink_out.n);
        (void)server_dfent_hydrate(s, e);      /* a failure stays on the entry */
        return 1;
}

/* (19) Each sink's kept output to its file (fdatasync'ed), then the progress of all of
 * them in one storage write.  A clean sink is brought to its inputs' meet first (as a
 * read brings an index, server_dfent_catch_up()), so its progress follows them when nothing
 * changes.  Output derived from an append not yet durable waits (16, G1). */
void server_sink_flush(struct cserver *s)
{
        _cleanup_free_ struct storage_append *v = NULL;
        _cleanup_free_ struct dfent **ve = NULL;
        _cleanup_free_ uint8_t (*marks)[8] = NULL;
        uint64_t now = now_ms();
        size_t k = 0;
        int r;

        if (!s->st || !s->n_sinks)
                return;
        v = calloc(s->n_sinks, sizeof(*v));
        ve = calloc(s->n_sinks, sizeof(*ve));
        marks = calloc(s->n_sinks, sizeof(*marks));
        if (!v || !ve || !marks)
                return;         /* the next tick */
        for (size_t i = 0; i < s->n_dfs && k < s->n_sinks; i++) {
                struct dfent *e = s->dfs[i];
                struct storage_info info;
                struct row_error err;
                uint64_t frontier, length, before;

                if (!e->sink || e->failed || !e->df || !e->file)
                        continue;
                if (!e->dirty && (frontier = server_dfent_target(s, e, 0)) > dataflow_frontier(e->df)) {
                        eval_batch_clear(&e->out);
                        if (server_dfent_step(s, e, frontier) < 0 || (!e->failed && server_sink_keep(s, e, frontier) < 0)) {
                                row_error_oom(&err);
                                server_dfent_fail(s, e, &err);
                        }
                        eval_batch_clear(&e->out);
                        if (e->failed)
                                continue;
                }
                if (storage_get_info(s->st, e->gid, &info) < 0 || e->sink_frontier <= info.frontiers.upper)
                        continue;
                if (e->sink_seq > storage_durable_seq(s->st))
                        continue;       /* G1: after the sync that covers its inputs */
                /* Progress alone (no lines) about once a second, as server_mv_flush() moves a
                 * clean view's upper: a write per idle sink per tick was O(sinks). */
                if (!e->sink_out.n && now - e->sink_written_ms < CSERVER_MV_FLUSH_MS)
                        continue;
                e->sink_written_ms = now;
                before = sink_file_length(e->file);
                r = eval_batch_consolidate(&e->sink_out);
                if (r >= 0)
                        r = sink_file_append(e->file, &e->sink_out, &length);
                if (r >= 0 && length != before)
                        KILLPOINT("sink.after_data");   /* lines synced, progress not */
                if (r < 0) {
                        row_error_set(&err, r, "58030", "sink %llu: cannot write \"%s\": %s",
                                      (unsigned long long)e->gid, e->spec->sink_path, strerror(-r));
                        server_dfent_fail(s, e, &err);
                        s->sink_errors++;
                        continue;
                }
                s->sink_bytes += length - before;
                be64_put(marks[k], length);
                v[k] = (struct storage_append){ .gid = e->gid, .expected_upper = info.frontiers.upper,
                                                .new_upper = e->sink_frontier, .mark = marks[k],
                                                .mark_len = 8 };
                ve[k++] = e;
                eval_batch_clear(&e->sink_out);
        }
        if (!k)
                return;
        r = storage_append_group(s->st, v, k);
        if (r < 0 || (size_t)r != k) {
                /* The files hold lines past their recorded lengths: a reinstall cuts
                 * them back and writes them again. */
                log_error_errno(r < 0 ? r : -EIO, "sink_flush_failed", "sinks=%zu why=\"%s\"", k,
                                storage_last_error());
                server_storage_recover(s);
                return;
        }
        KILLPOINT("sink.after_progress");
        for (size_t i = 0; i < k; i++)
                server_dfent_publish(s, ve[i]);
        s->sink_flushes++;
}
