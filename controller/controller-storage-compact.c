/* controller-storage-compact.c -- compaction of storage collections: the tiered policy,
 * merges on the loop thread and in a thread of their own.
 *
 * Contract: controller-storage.h; what the module's files share:
 * controller-storage-internal.h.  The notes are numbered across the module
 * (controller-storage.c lists where each stands).
 *
 * NOTES ON THE DESIGN
 *
 * (5) Compaction to a target p <= since replaces every time t < p by p and sums equal
 *     (row, time).  A read at t' >= p sums the updates with time <= t', and for those
 *     the rewrite changes nothing: t < p <= t' both before and after.  So reads at
 *     every t' >= since, the only allowed ones, keep their answer (I8).  A merge of
 *     the batches b_j .. b_n-1 (always up to the newest, NOTE 6) advances times to
 *         merged.since = max(b_j.lower, p),  p = min(since, upper - 1)
 *     which keeps every advanced time inside the merged batch (< upper), so (4)
 *     holds; since may exceed upper (a refresh MV waiting for its first refresh), and
 *     then the times stop at upper - 1 for now.  The old descriptors and chunks are
 *     deleted and the merged ones written in the same WriteBatch (1), so a kill -9
 *     mid-compaction leaves the old batches or the merged one.
 *
 * (6) Compaction policy.  Always a run b_j .. b_n-1 that ends at the newest batch.
 *     Default (tiered): walking from the newest batch back, an older batch joins while
 *     its weight (updates + 1) is at most TIER_RATIO times the run's weight so far.
 *     Recent small batches (one per INSERT) therefore merge together at once, and a
 *     large old batch is rewritten only when what comes after it has grown to about
 *     half its size: every update is rewritten O(log n) times, and a collection keeps
 *     O(log n) batches, so reads stay cheap.  The price is that old batches keep
 *     their older batch since until they are merged, so physical_since lags since.
 *     STORAGE_COMPACT_FULL merges everything into one batch at the target.
 *     storage_compact_pending() runs the tiered policy on the collections whose since
 *     moved or that gained PENDING_NEW_BATCHES batches, in request order.
 *
 * (13) Big merges run in a thread of their own.  A tiered merge reading MERGE_BG_UPDATES
 *     updates or more is started by storage_compact_pending_fn() in a worker (merge_start(),
 *     one at a time) and applied to memory later (storage_merge_finish()).  The worker
 *     writes compact_run()'s records but the collection record, through its own handle
 *     (storage_shadow_new()), unsynced (1) in ONE WriteBatch: a reader sees the run or the
 *     merged batch.  While it runs: an append never extends or fills the run's newest
 *     batch (7); a read starting inside the run starts at its first batch and reads the
 *     run as one key range (read_batches(), (4)); the collection is not compacted again
 *     (merge_repend); a drop, storage_compact(), storage_check() and storage_close() wait
 *     for the worker.  Applying writes the collection record with the new physical since
 *     (the old, lower one on disk until then is allowed by (3)); a crash leaves the run or
 *     the merged batch (5).  A worker's failed write is sticky (9) when applied.
 */
#include "controller-storage.h"
#include "controller-storage-internal.h"

#include <assert.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "killpoint.h"
#include "probes.h"
#include "util.h"

#define TIER_RATIO 2u                           /* NOTE 6 */
#define MERGE_BG_UPDATES 4096u                  /* NOTE 13: merges reading as many run off the loop */

/* ---- Compaction (NOTES 5, 6) ------------------------------------------------------ */

static uint64_t batch_weight(const struct batch_desc *b)
{
        return b->updates + 1;
}

/* NOTE 5: target < upper, so the merged batch keeps its times below its upper. */
static uint64_t merged_since(const struct batch_desc *first, uint64_t target)
{
        return max_u64(first->lower, target);
}

/* The run b_j .. b_n-1 to merge, or false. */
static bool choose_run(const struct collection *c, unsigned flags, uint64_t target, size_t *ret_j)
{
        size_t m, j;

        if (c->n_batches == 0)
                return false;
        m = c->n_batches - 1;
        if (flags & STORAGE_COMPACT_FULL) {
                j = 0;
                if (j == m && c->batches[0].since >= merged_since(&c->batches[0], target))
                        return false;
        } else {
                uint64_t acc = batch_weight(&c->batches[m]);

                for (j = m; j > 0 && batch_weight(&c->batches[j - 1]) / TIER_RATIO <= acc; j--)
                        acc += batch_weight(&c->batches[j - 1]);
                if (j == m)
                        return false;
        }
        *ret_j = j;
        return true;
}

/* The physical since c would have if batch j were `merged` and batches j+1 .. were
 * gone (controller-storage.c NOTE 3): no stored time lies below it, and it is at most since. */
static uint64_t physical_since_after(const struct collection *c, size_t j,
                                     const struct batch_desc *merged)
{
        uint64_t p = c->n_batches ? UINT64_MAX : c->upper;

        for (size_t i = 0; i < c->n_batches && i < j; i++)
                p = min_u64(p, c->batches[i].since);
        if (merged)
                p = min_u64(p, merged->since);
        return min_u64(c->since, p);
}

/* The records of merging run[0 .. n_run) into *merged (lower, upper and since set;
 * updates, parts and bytes out) into w->wb: the merged chunks, the deletes of the
 * run's other descriptors and of its chunks the merged ones do not overwrite, the
 * merged descriptor.  Not the collection record.  Uses w's scratch (the caller
 * releases it) and nothing else of w but db and cf, so a merge's worker can run it on
 * its own handle (NOTE 13). */
static int merge_build(struct storage *w, uint64_t gid, const struct batch_desc *run, size_t n_run,
                       struct batch_desc *merged, uint64_t *ret_read)
{
        struct collect a = { .max = UINT64_MAX, .advance_to = merged->since };
        uint64_t want = 0;
        size_t n;
        int r;

        for (size_t i = 0; i < n_run; i++)
                want += run[i].updates;
        assert(w->n_upd == 0 && w->n_chunks == 0);
        for (size_t i = 0; i < n_run; i++) {
                r = storage_scan_batch(w, gid, &run[i], storage_collect_chunk, &a);
                if (r < 0)
                        return r;
        }
        if (w->n_upd != want)
                return storage_corrupt(gid, "batch descriptors and chunks disagree");
        r = storage_upds_consolidate(w->upd, w->n_upd, &n);
        if (r < 0)
                return r;
        r = storage_put_chunks(w, gid, merged->lower, w->upd, n, &merged->parts, &merged->bytes);
        if (r < 0)
                return r;
        merged->updates = n;
        for (size_t i = 0; i < n_run; i++) {
                if (i > 0)
                        storage_delete_batch(w, gid, run[i].lower);
                /* Chunk keys of run[0] below merged->parts were overwritten above. */
                storage_delete_chunks(w, gid, run[i].lower,
                                      i == 0 ? (uint32_t)min_u64(merged->parts, run[0].parts) : 0,
                                      run[i].parts);
        }
        storage_put_batch(w, gid, merged);
        *ret_read = want;
        return 0;
}

/* A compaction's write: c's record with physical since phys, with what the batch holds
 * already, between the two kill points of test-killpoints. */
static int compaction_write(struct storage *s, struct collection *c, uint64_t phys)
{
        int r;

        storage_put_collection(s, c, c->since, c->upper, phys);
        KILLPOINT("compaction.before_write");
        r = storage_write_opts(s, false);       /* (1): a compaction needs no sync */
        if (r < 0)
                return r;
        KILLPOINT("compaction.after_write");
        return 0;
}

static int compact_run(struct storage *s, struct collection *c, size_t j, uint64_t target,
                       struct storage_compact_result *res)
{
        const size_t m = c->n_batches - 1;
        struct batch_desc merged = {
                .lower = c->batches[j].lower,
                .upper = c->batches[m].upper,
        };
        uint64_t phys;
        int r;

        assert(target < merged.upper);
        merged.since = merged_since(&c->batches[j], target);
        r = merge_build(s, c->gid, &c->batches[j], m - j + 1, &merged, &res->updates_read);
        if (r < 0)
                goto out;
        res->batches_merged = m - j + 1;
        phys = physical_since_after(c, j, &merged);
        assert(phys >= c->physical_since);
        r = compaction_write(s, c, phys);
        if (r < 0)
                goto out;

        c->batches[j] = merged;
        c->n_batches = j + 1;
        c->batches_at_compaction = c->n_batches;
        c->physical_since = phys;
        assert(!storage_collection_invalid(c));
        res->updates_written = merged.updates;
        s->stats.compactions++;
        s->stats.updates_rewritten += merged.updates;
out:
        storage_chunks_release(s);
        rocksdb_writebatch_clear(s->wb);
        return r;
}

/* ---- Merges in the background (NOTE 13) ------------------------------------------- */

struct merge *storage_merge_free(struct merge *mg)
{
        if (mg) {
                storage_shadow_free(mg->w);
                free(mg->run);
                free(mg);
        }
        return NULL;
}

/* The worker: the same records as compact_run() (without the collection record), in
 * one unsynced WriteBatch of its own (1).  A reader sees the run or the merged batch,
 * never a part: RocksDB makes a WriteBatch visible at once. */
static void *merge_main(void *arg)
{
        struct merge *mg = arg;
        struct storage *w = mg->w;
        uint64_t start = now_ns(), read;
        int r;

        r = merge_build(w, mg->gid, mg->run, mg->end - mg->j, &mg->merged, &read);
        if (r >= 0)
                r = storage_write_opts(w, false);
        if (r < 0)
                snprintf(mg->msg, sizeof(mg->msg), "%s", storage_thread_error);
        storage_chunks_release(w);
        rocksdb_writebatch_clear(w->wb);
        mg->r = r;
        mg->took_ns = now_ns() - start;
        /* Everything above is the loop thread's to read once it sees done. */
        atomic_store_explicit(&mg->done, true, memory_order_release);
        return NULL;
}

/* Start merging b_j .. b_n-1 of c in the background; -errno (then merge here). */
static int merge_start(struct storage *s, struct collection *c, size_t j, uint64_t target)
{
        const size_t m = c->n_batches - 1;
        struct merge *mg;
        int r;

        assert(!s->merge && !c->merging && j < m);
        mg = calloc(1, sizeof(*mg));
        if (!mg)
                return -ENOMEM;
        mg->run = malloc((m - j + 1) * sizeof(*mg->run));
        mg->w = storage_shadow_new(s);
        if (!mg->run || !mg->w) {
                storage_merge_free(mg);
                return -ENOMEM;
        }
        memcpy(mg->run, &c->batches[j], (m - j + 1) * sizeof(*mg->run));
        mg->gid = c->gid;
        mg->j = j;
        mg->end = m + 1;
        mg->merged = (struct batch_desc){ .lower = c->batches[j].lower, .upper = c->batches[m].upper };
        assert(target < mg->merged.upper);
        mg->merged.since = merged_since(&c->batches[j], target);
        atomic_init(&mg->done, false);
        r = thread_start(&mg->thread, "merge", merge_main, mg);
        if (r < 0) {
                storage_merge_free(mg);
                return r;
        }
        c->merging = true;
        c->merge_repend = false;
        c->merge_j = j;
        c->merge_end = m + 1;
        s->merge = mg;
        return 0;
}

/* Apply the background merge to memory once it is done (wait: join it first).  1 when
 * one was applied (fn told), 0 when none is done, -errno: the merge failed (memory
 * keeps the run: the disk holds it or the merged batch, which read the same (5)); a
 * failed write is sticky (9). */
int storage_merge_finish(struct storage *s, bool wait, storage_compacted_fn fn, void *userdata)
{
        struct merge *mg = s->merge;
        struct collection *c;
        uint64_t phys;
        int r;

        if (!mg || (!wait && !atomic_load_explicit(&mg->done, memory_order_acquire)))
                return 0;
        pthread_join(mg->thread, NULL);
        s->merge = NULL;
        c = storage_map_find(&s->map, mg->gid);
        assert(c && c->merging);        /* a drop waits for the merge */
        c->merging = false;
        if (c->merge_repend)
                storage_pending_add(s, c);
        r = mg->r;
        if (r < 0) {
                if (mg->w->err && s->err == 0) {
                        s->err = mg->w->err;
                        snprintf(s->err_msg, sizeof(s->err_msg), "%s", mg->msg);
                }
                set_thread_error("%s", mg->msg);
                storage_merge_free(mg);
                return r;
        }
        /* Appends since the start added batches after the run, never into it (7). */
        assert(c->n_batches >= mg->end && c->batches[mg->end - 1].upper == mg->merged.upper);
        c->batches[mg->j] = mg->merged;
        memmove(&c->batches[mg->j + 1], &c->batches[mg->end],
                (c->n_batches - mg->end) * sizeof(*c->batches));
        c->n_batches -= mg->end - mg->j - 1;
        c->batches_at_compaction = mg->j + 1;   /* the newer batches still count (6) */
        if (c->n_batches >= c->batches_at_compaction + PENDING_NEW_BATCHES)
                storage_pending_add(s, c);
        s->stats.compactions++;
        s->stats.unsynced_writes++;
        s->stats.updates_rewritten += mg->merged.updates;
        s->stats.background_merges++;
        s->stats.background_merge_ns += mg->took_ns;
        storage_merge_free(mg);
        /* The physical since follows in a write of the collection record alone: until
         * then the disk's is lower than it could be, which is allowed (3). */
        r = 0;
        phys = physical_since_after(c, c->n_batches, NULL);
        if (phys > c->physical_since && s->err == 0) {
                assert(rocksdb_writebatch_count(s->wb) == 0);
                storage_put_collection(s, c, c->since, c->upper, phys);
                r = storage_write_opts(s, false);       /* (1) */
                if (r >= 0)
                        c->physical_since = phys;
        }
        assert(!storage_collection_invalid(c));
        if (fn) {
                struct storage_info info;

                storage_info_of(c, &info);
                fn(&info, userdata);
        }
        return r < 0 ? r : 1;
}

static uint64_t run_updates(const struct collection *c, size_t j)
{
        uint64_t n = 0;

        for (size_t i = j; i < c->n_batches; i++)
                n += c->batches[i].updates;
        return n;
}

/* background: a big merge may go to a thread (NOTE 13); then *ret_later when it
 * must wait for the one running (c stays queued). */
static int collection_compact(struct storage *s, struct collection *c, unsigned flags,
                              bool background, struct storage_compact_result *res,
                              bool *ret_later)
{
        uint64_t target, phys;
        size_t j;
        int r;

        *res = (struct storage_compact_result){ 0 };
        *ret_later = false;
        if (c->merging) {
                /* Its run is being merged: again once that is applied. */
                c->merge_repend = true;
                storage_pending_remove(s, c);
                return 0;
        }
        r = storage_collection_load(s, c);
        if (r < 0)
                return r;
        assert(rocksdb_writebatch_count(s->wb) == 0);
        if (c->n_batches > 0) {
                target = min_u64(c->since, c->upper - 1);
                if (choose_run(c, flags, target, &j)) {
                        if (background && run_updates(c, j) >= MERGE_BG_UPDATES) {
                                if (s->merge) {
                                        *ret_later = true;
                                        return 0;
                                }
                                storage_pending_remove(s, c);
                                if (merge_start(s, c, j, target) == 0) {
                                        res->background = true;
                                        return 0;
                                }
                                /* No thread: merge here, as always before. */
                        }
                        storage_pending_remove(s, c);
                        return compact_run(s, c, j, target, res);
                }
        }
        storage_pending_remove(s, c);
        /* Nothing to merge; the physical since may still move (controller-storage.c NOTE 3). */
        c->batches_at_compaction = c->n_batches;
        phys = physical_since_after(c, c->n_batches, NULL);
        if (phys <= c->physical_since)
                return 0;
        r = compaction_write(s, c, phys);
        if (r < 0)
                return r;
        c->physical_since = phys;
        assert(!storage_collection_invalid(c));
        return 0;
}

int storage_compact(struct storage *s, uint64_t gid, unsigned flags,
                    struct storage_compact_result *ret)
{
        struct storage_compact_result res;
        struct collection *c;
        bool later;
        int r;

        if (!s || (flags & ~(unsigned)STORAGE_COMPACT_FULL))
                return -EINVAL;
        if (s->err)
                return storage_sticky_error(s);
        c = storage_map_find(&s->map, gid);
        if (!c)
                return -ENOENT;
        r = storage_merge_finish(s, true, NULL, NULL);
        if (r < 0)
                return r;
        r = collection_compact(s, c, flags, false, &res, &later);
        if (r >= 0 && ret)
                *ret = res;
        return r;
}

int storage_compact_pending_timed(struct storage *s, uint64_t max_updates, uint64_t max_us,
                                  storage_compacted_fn fn, void *userdata)
{
        uint64_t work = 0, start = now_ns();
        struct collection *next;
        int r;

        if (!s)
                return -EINVAL;
        if (s->err)
                return storage_sticky_error(s);
        r = storage_merge_finish(s, false, fn, userdata);
        if (r < 0)
                return r;
        for (struct collection *c = s->pending_head; c; c = next) {
                struct storage_compact_result res;
                uint64_t phys = c->physical_since, batches = c->n_batches;
                bool later;

                if (work > 0 && (work >= max_updates || (now_ns() - start) / 1000 >= max_us))
                        break;
                next = c->pending_next;         /* compaction removes only c */
                r = collection_compact(s, c, 0, true, &res, &later);
                if (r < 0)
                        return r;
                if (later)
                        continue;
                work += res.updates_read + res.updates_written + 1;
                COORD_STORAGE_COMPACT(c->gid, res.updates_read, res.updates_written);
                /* c is still there: compaction never frees a collection. */
                if (fn && (res.batches_merged > 0 || c->physical_since != phys ||
                           c->n_batches != batches)) {
                        struct storage_info info;

                        storage_info_of(c, &info);
                        fn(&info, userdata);
                }
        }
        /* A merge in the background counts as work left: come back for it. */
        return (int)min_u64(s->n_pending + (s->merge != NULL), INT32_MAX);
}

int storage_compact_pending_fn(struct storage *s, uint64_t max_updates, storage_compacted_fn fn,
                               void *userdata)
{
        return storage_compact_pending_timed(s, max_updates, UINT64_MAX, fn, userdata);
}

int storage_compact_pending(struct storage *s, uint64_t max_updates)
{
        return storage_compact_pending_fn(s, max_updates, NULL, NULL);
}
