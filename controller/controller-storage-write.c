/* controller-storage-write.c -- the write path of storage collections: one WriteBatch
 * per change and sticky errors, group commit and its syncer thread, creating and
 * dropping (deferred ones too), append groups and since moves.
 *
 * Contract: controller-storage.h; what the module's files share:
 * controller-storage-internal.h.  The notes are numbered across the module
 * (controller-storage.c lists where each stands).
 *
 * NOTES ON THE DESIGN
 *
 * (1) Every change is ONE RocksDB WriteBatch (s->wb) written with sync = true by
 *     storage_write() -- append groups excepted once the syncer runs (NOTE 14) -- so
 *     after a crash a change is wholly there or wholly absent, and a function returns 0
 *     only after that write returned OK (I7).  Compactions and since moves
 *     (storage_allow_compaction_group()) are written WITHOUT a sync: they change no
 *     contents at any readable time, a since move precedes in the WAL the compactions it
 *     permits, its permission lives in the catalog or the controller's own window, and
 *     the next synced write makes both durable (the WAL is synced in order).  Physical
 *     since <= since <= the committed bound in every state the disk can be left in (I2).
 *
 * (7) Appends.  An append with updates writes a new batch [expected_upper, new_upper),
 *     or fills the newest batch if it is empty (same key, new upper); one without
 *     updates extends the newest batch's upper, creating a batch only when there is
 *     none.  So an empty batch exists only as the newest one, as a compaction in which
 *     everything cancelled, or after the newest batch of a run being merged in the
 *     background, which appends neither extend nor fill (13).  Appends sort and
 *     consolidate their updates (equal (row, time) summed, zero diffs dropped).  A group
 *     stages each collection's new frontiers and descriptors in s->stages (new
 *     descriptors in c->batches past c->n_batches), so later appends of the group see
 *     earlier ones, and applies them after the write (2).
 *
 * (9) Errors are sticky (SQLite's pager_error()).  When a write fails, the handle
 *     keeps the error: every later write returns it until the database is reopened,
 *     because the disk may or may not hold the failed change and nothing may be
 *     acknowledged on top of an unknown state.  Memory was not changed (2), and the
 *     failed change cannot alter the answer of any allowed read -- an append's data
 *     lies at or above the upper that memory still has, and a compaction preserves
 *     reads (5) -- so reads go on.  Failures before rocksdb_write() (bad arguments,
 *     -ENOMEM while encoding) clear s->wb and are not sticky.
 *
 * (12) Deferred creates and drops (header) are records in s->def, not in s->wb, so
 *     that every write path keeps starting from an empty s->wb and clearing it on
 *     failure.  storage_write() puts them AFTER the caller's records: the caller never
 *     names a deferred-dropped gid (not in the map; creating it again writes the
 *     deferred changes first), a deferred create is skipped when the group itself
 *     rewrites that collection's record with newer frontiers, and a drop (deferred or
 *     not) forgets a deferred create of its gid.  So the order inside the batch never
 *     matters, and one synced WriteBatch holds the caller's change and every deferred
 *     one: all or nothing.
 *
 * (14) Group commit.  Once storage_syncer_start() ran, storage_append_group() writes with
 *     sync = 0 (visible at once, kept by a kill -9) and asks the syncer thread for
 *     rocksdb_flush_wal(db, 1) = DB::SyncWAL(): everything written before the call is
 *     durable when it returns.  Loop-thread sequence numbers: seq_written (every
 *     successful write), seq_must (the last write that must be durable before anything
 *     depending on it is shown), seq_durable (every write <= it is durable; raised by a
 *     synced write or storage_sync_poll()).  Invariants: seq_durable, seq_must, y->done
 *     <= seq_written; a sync's target (y->want) is read before it starts.  A failed sync
 *     is sticky (9, y->err); deferred creates and drops (12) after seq_durable stay in
 *     s->def_unsynced until covered, for storage_deferred_lost().  Merges
 *     (controller-storage-compact.c NOTE 13) and compactions never raise seq_must.  No
 *     sync after a failed write (y->writer_failed): RocksDB aborts on a failed WAL
 *     writer synced (common/catalog/catalog.c NOTE 8).
 *     A sync already begun when a write failed is not covered (closing that would make
 *     the loop wait for the fdatasync).
 *
 * (16) Drops delete key by key when they can.  RocksDB 7.8 (Debian 12's) re-sorts a
 *     memtable's range tombstones at the first read after each new one, so range deletes
 *     piling up in the memtable cost the loop without bound; point tombstones do not.
 *     So a drop whose collection's keys are few and exactly known deletes them one by
 *     one (the record, each batch's descriptor gid|lower, its chunks gid|lower|0 ..
 *     parts-1).  Known exactly: descriptors loaded (8), no merge in the background (13,
 *     merge_wait_for()), memory equal to the disk by (2) and (4).  Few: at most
 *     STORAGE_DROP_KEY_BATCHES batches and DROP_KEYS_MAX keys.  Otherwise range deletes.
 *     A deferred drop (12) carries the batches' (lower, parts) in its record
 *     (deferred_put()).  storage_check() counts every key, so a key left behind fails it.
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
#include <unistd.h>

#include "probes.h"
#include "util.h"

#define DROP_KEYS_MAX 16                        /* batch + chunk keys a drop deletes one by one */

static void syncer_want(struct syncer *y, uint64_t seq);
static void deferred_lose(struct storage *s);

/* ---- The write path (NOTES 1, 9) -------------------------------------------------- */

/* Whether a drop of c may delete its keys one by one (NOTE 16); if so, its batches'
 * (lower, parts) in *d.  Loop thread, after merge_wait_for(c). */
static bool drop_by_key(const struct collection *c, struct storage_deferred *d)
{
        size_t keys = 0;

        assert(!c->merging);    /* merge_wait_for() applied it: memory lists its batch */
        if (!c->loaded || c->n_batches > STORAGE_DROP_KEY_BATCHES)
                return false;
        for (size_t i = 0; i < c->n_batches; i++) {
                keys += 1 + (size_t)c->batches[i].parts;
                if (keys > DROP_KEYS_MAX)
                        return false;
                d->batches[i].lower = c->batches[i].lower;
                d->batches[i].parts = c->batches[i].parts;
        }
        d->n_batches = (uint8_t)c->n_batches;
        d->by_key = true;
        return true;
}

/* Into s->wb: the deletes of every key of the dropped gid d->gid -- its record, then
 * key by key (d->by_key) or by range deletes (NOTE 16). */
static void drop_put(struct storage *s, const struct storage_deferred *d)
{
        uint8_t lo[KEY_GID_LEN], hi[KEY_END_LEN];

        assert(d->drop && d->n_batches <= STORAGE_DROP_KEY_BATCHES);
        be64_put(lo, d->gid);
        rocksdb_writebatch_delete_cf(s->wb, s->cf[CF_COLLECTIONS], (const char *)lo, sizeof(lo));
        if (d->by_key) {
                for (size_t i = 0; i < d->n_batches; i++) {
                        uint8_t kb[KEY_BATCH_LEN], kc[KEY_CHUNK_LEN];

                        key_batch(kb, d->gid, d->batches[i].lower);
                        rocksdb_writebatch_delete_cf(s->wb, s->cf[CF_BATCHES], (const char *)kb,
                                                     sizeof(kb));
                        for (uint32_t p = 0; p < d->batches[i].parts; p++) {
                                key_chunk(kc, d->gid, d->batches[i].lower, p);
                                rocksdb_writebatch_delete_cf(s->wb, s->cf[CF_CHUNKS],
                                                             (const char *)kc, sizeof(kc));
                        }
                }
                s->stats.drops_by_key++;
                return;
        }
        key_end(hi, d->gid);
        rocksdb_writebatch_delete_range_cf(s->wb, s->cf[CF_BATCHES], (const char *)lo, sizeof(lo),
                                           (const char *)hi, sizeof(hi));
        rocksdb_writebatch_delete_range_cf(s->wb, s->cf[CF_CHUNKS], (const char *)lo, sizeof(lo),
                                           (const char *)hi, sizeof(hi));
        s->stats.drops_by_range++;
}

/* The deferred creates and drops into s->wb, after the caller's records (NOTE 12).
 * The caller's records never name a deferred-dropped gid (it is not in the map, and a
 * create of it flushes first); a deferred create whose collection the current group
 * changed is put by the group already, with its newer frontiers, so it is skipped. */
static void deferred_put(struct storage *s)
{
        for (size_t i = 0; i < s->n_def; i++) {
                const struct storage_deferred *d = &s->def[i];

                if (!d->drop) {
                        struct collection *c = storage_map_find(&s->map, d->gid);
                        struct collection tmp = { .gid = d->gid, .kind = d->kind };

                        if (c && c->stage_gen == s->gen && c->stage_idx < s->n_stages &&
                            s->stages[c->stage_idx].c == c && s->stages[c->stage_idx].changed)
                                continue;
                        storage_put_collection(s, &tmp, d->since, d->upper, d->physical_since);
                        continue;
                }
                drop_put(s, d);
        }
}

/* Write s->wb (synced unless a compaction's, see (1)) and empty it.  A failure is
 * sticky. */
int storage_write_opts(struct storage *s, bool sync)
{
        char *err = NULL;
        int r;

        assert(s->err == 0);
        assert(s->seq_durable <= s->seq_written && s->seq_must <= s->seq_written);
        /* Room to keep the deferred changes this write carries until a sync covers
         * them (NOTE 14): a failure here is before rocksdb_write(), not sticky. */
        if (!sync && s->n_def > 0 &&
            GROW_ARRAY(s->def_unsynced, s->cap_def_unsynced, s->n_def_unsynced + s->n_def) < 0) {
                rocksdb_writebatch_clear(s->wb);
                set_thread_error("storage: out of memory");
                return -ENOMEM;
        }
        deferred_put(s);
        if (s->fail_next_write) {
                s->fail_next_write = false;
                set_thread_error("storage: write failure injected by storage_debug_fail_next_write()");
                r = -EIO;
        } else {
                uint64_t t0 = now_ns(), took;

                rocksdb_write(s->db, sync ? s->write_options : s->write_nosync, s->wb, &err);
                took = now_ns() - t0;
                if (sync && took > s->stats.sync_write_max_ns)
                        s->stats.sync_write_max_ns = took;
                if (sync && took > s->sync_write_window_max_ns)
                        s->sync_write_window_max_ns = took;
                if (!sync && took > s->stats.unsynced_write_max_ns)
                        s->stats.unsynced_write_max_ns = took;
                if (!err) {
                        rocksdb_writebatch_clear(s->wb);
                        s->seq_written++;
                        if (sync) {
                                /* The WAL is synced in order: this covers every
                                 * write before it (NOTE 14). */
                                s->seq_durable = s->seq_written;
                                s->n_def_unsynced = 0;
                                s->stats.writes++;
                        } else {
                                for (size_t i = 0; i < s->n_def; i++)
                                        s->def_unsynced[s->n_def_unsynced++] =
                                                (struct def_tagged){ .seq = s->seq_written,
                                                                     .d = s->def[i] };
                                s->stats.unsynced_writes++;
                        }
                        s->n_def = 0;
                        return 0;
                }
                r = storage_rocks_error(err);
                if (r != -ENOSPC)
                        r = -EIO;
                /* NOTE 14: RocksDB's WAL writer may have failed; the syncer must not
                 * call it again. */
                if (s->syncer) {
                        pthread_mutex_lock(&s->syncer->lock);
                        s->syncer->writer_failed = true;
                        pthread_mutex_unlock(&s->syncer->lock);
                }
        }
        rocksdb_writebatch_clear(s->wb);
        /* s->def stays: lost with the failed write, for storage_deferred_lost() (no
         * write follows a sticky error, so it is never put again), after those of
         * the writes no sync covered (NOTE 14). */
        s->err = r;
        snprintf(s->err_msg, sizeof(s->err_msg), "%s", storage_thread_error);
        deferred_lose(s);
        return r;
}

static int storage_write(struct storage *s)
{
        return storage_write_opts(s, true);
}

/* ---- Group commit (NOTE 14) ------------------------------------------------------- */

/* Sticky now: the deferred changes of the writes after the last good sync go before
 * those of s->def (in order), for storage_deferred_lost().  Without memory they are
 * lost; the follower's next resync (Ensure complete) makes them again. */
static void deferred_lose(struct storage *s)
{
        size_t n = 0;

        for (size_t i = 0; i < s->n_def_unsynced; i++)
                n += s->def_unsynced[i].seq > s->seq_durable;
        if (n > 0 && GROW_ARRAY(s->def, s->cap_def, s->n_def + n) == 0) {
                size_t k = 0;

                memmove(&s->def[n], s->def, s->n_def * sizeof(*s->def));
                for (size_t i = 0; i < s->n_def_unsynced; i++)
                        if (s->def_unsynced[i].seq > s->seq_durable)
                                s->def[k++] = s->def_unsynced[i].d;
                assert(k == n);
                s->n_def += n;
        }
        s->n_def_unsynced = 0;
}

/* The test hook: wait while the hold file exists (or until the handle closes). */
static void syncer_hold(struct syncer *y)
{
        if (!y->hold_path)
                return;
        while (!atomic_load_explicit(&y->stopping, memory_order_relaxed) &&
               access(y->hold_path, F_OK) == 0)
                usleep(1000);
}

static void *syncer_main(void *arg)
{
        struct syncer *y = arg;

        pthread_mutex_lock(&y->lock);
        for (;;) {
                uint64_t target, t0, took;
                char *err = NULL;
                bool fail, writer_failed;
                int r = 0;

                while (!y->stop && (y->err || y->want <= y->done))
                        pthread_cond_wait(&y->cond, &y->lock);
                if (y->stop)
                        break;
                if (y->hold_path) {
                        pthread_mutex_unlock(&y->lock);
                        syncer_hold(y);
                        pthread_mutex_lock(&y->lock);
                }
                /* Every write up to want had returned when the loop published it:
                 * SyncWAL() below covers them (NOTE 14). */
                target = y->started = y->want;
                /* Test hooks: a file next to the hold file fails this sync, once. */
                fail = y->fail_next || (y->fail_path && unlink(y->fail_path) == 0);
                y->fail_next = false;
                writer_failed = y->writer_failed;
                pthread_mutex_unlock(&y->lock);

                COORD_STORAGE_SYNC_START(target);
                t0 = now_ns();
                if (fail) {
                        set_thread_error("storage: sync failure injected by storage_debug_fail_next_sync()");
                        r = -EIO;
                } else if (writer_failed) {
                        set_thread_error("storage: not synced: a write to the WAL failed before");
                        r = -EIO;
                } else {
                        rocksdb_flush_wal(y->db, 1, &err);
                        if (err) {
                                r = storage_rocks_error(err);
                                if (r != -ENOSPC)
                                        r = -EIO;
                        }
                }
                took = now_ns() - t0;
                COORD_STORAGE_SYNC_DONE(target, r, took);

                pthread_mutex_lock(&y->lock);
                if (r < 0) {
                        y->err = r;
                        snprintf(y->msg, sizeof(y->msg), "%s", storage_thread_error);
                } else {
                        assert(target >= y->done);
                        y->done = target;
                        y->syncs++;
                        y->sync_ns += took;
                        if (took > y->sync_max_ns)
                                y->sync_max_ns = took;
                        if (took > y->sync_window_max_ns)
                                y->sync_window_max_ns = took;
                }
                pthread_mutex_unlock(&y->lock);
                y->notify(y->userdata);
                pthread_mutex_lock(&y->lock);
        }
        pthread_mutex_unlock(&y->lock);
        return NULL;
}

static void syncer_want(struct syncer *y, uint64_t seq)
{
        pthread_mutex_lock(&y->lock);
        if (seq > y->want) {
                y->want = seq;
                pthread_cond_signal(&y->cond);
        }
        pthread_mutex_unlock(&y->lock);
}

/* A syncer whose thread is not running (never started, or joined). */
static struct syncer *syncer_free(struct syncer *y)
{
        pthread_cond_destroy(&y->cond);
        pthread_mutex_destroy(&y->lock);
        free(y->hold_path);
        free(y->fail_path);
        free(y);
        return NULL;
}

/* Stop and join: a sync in flight completes (and notifies) first.  Accepts NULL. */
struct syncer *storage_syncer_stop(struct syncer *y)
{
        if (!y)
                return NULL;
        atomic_store_explicit(&y->stopping, true, memory_order_relaxed);
        pthread_mutex_lock(&y->lock);
        y->stop = true;
        pthread_cond_signal(&y->cond);
        pthread_mutex_unlock(&y->lock);
        pthread_join(y->thread, NULL);
        return syncer_free(y);
}

int storage_syncer_start(struct storage *s, storage_sync_notify_fn notify, void *userdata)
{
        struct syncer *y;
        int r;

        if (!s || !notify || s->shadow)
                return -EINVAL;
        if (s->syncer)
                return -EALREADY;
        if (s->err)
                return storage_sticky_error(s);
        y = calloc(1, sizeof(*y));
        if (!y)
                return -ENOMEM;
        pthread_mutex_init(&y->lock, NULL);
        pthread_cond_init(&y->cond, NULL);
        atomic_init(&y->stopping, false);
        y->db = s->db;
        y->notify = notify;
        y->userdata = userdata;
        if (s->sync_hold_path) {
                y->hold_path = strdup(s->sync_hold_path);
                if (!y->hold_path || asprintf(&y->fail_path, "%s-fail", s->sync_hold_path) < 0) {
                        y->fail_path = NULL;
                        syncer_free(y);
                        return -ENOMEM;
                }
        }
        /* Every append before the syncer was synced; the other writes need no sync
         * (NOTE 1). */
        assert(s->seq_must == 0);
        y->want = y->done = s->seq_written;
        s->seq_durable = s->seq_written;
        s->n_def_unsynced = 0;
        r = thread_start(&y->thread, "syncer", syncer_main, y);
        if (r < 0) {
                syncer_free(y);
                return r;
        }
        s->syncer = y;
        return 0;
}

bool storage_syncer_running(const struct storage *s)
{
        return s && s->syncer;
}

uint64_t storage_pending_seq(const struct storage *s)
{
        if (!s)
                return 0;
        assert(s->seq_must <= s->seq_written && s->seq_durable <= s->seq_written);
        return s->seq_must > s->seq_durable ? s->seq_must : 0;
}

uint64_t storage_durable_seq(const struct storage *s)
{
        return s ? s->seq_durable : 0;
}

int storage_debug_syncer_error(struct storage *s)
{
        int err;

        if (!s || !s->syncer)
                return -ENODEV;
        pthread_mutex_lock(&s->syncer->lock);
        err = s->syncer->err;
        pthread_mutex_unlock(&s->syncer->lock);
        return err;
}

int storage_sync_poll(struct storage *s)
{
        struct syncer *y;
        uint64_t done;
        size_t k = 0;
        int err;

        if (!s || !s->syncer)
                return 0;
        y = s->syncer;
        pthread_mutex_lock(&y->lock);
        done = y->done;
        err = y->err;
        s->stats.syncs = y->syncs;
        s->stats.sync_ns = y->sync_ns;
        s->stats.sync_max_ns = y->sync_max_ns;
        if (err && s->err == 0)
                snprintf(s->err_msg, sizeof(s->err_msg), "%s", y->msg);
        pthread_mutex_unlock(&y->lock);

        assert(done <= s->seq_written);
        if (done > s->seq_durable) {
                s->seq_durable = done;
                /* Tags ascend: drop the prefix the sync covered. */
                while (k < s->n_def_unsynced && s->def_unsynced[k].seq <= done)
                        k++;
                if (k > 0) {
                        memmove(s->def_unsynced, &s->def_unsynced[k],
                                (s->n_def_unsynced - k) * sizeof(*s->def_unsynced));
                        s->n_def_unsynced -= k;
                }
        }
        if (err && s->err == 0) {
                s->err = err;
                set_thread_error("%s", s->err_msg);
                deferred_lose(s);
                return err;
        }
        return 0;
}

int storage_debug_sync_hold_file(struct storage *s, const char *path)
{
        char *p = NULL;

        if (!s || s->syncer)
                return -EINVAL;
        if (path && !(p = strdup(path)))
                return -ENOMEM;
        free(s->sync_hold_path);
        s->sync_hold_path = p;
        return 0;
}

void storage_debug_fail_next_sync(struct storage *s)
{
        if (!s || !s->syncer)
                return;
        pthread_mutex_lock(&s->syncer->lock);
        s->syncer->fail_next = true;
        pthread_mutex_unlock(&s->syncer->lock);
}

/* ---- Creating and dropping -------------------------------------------------------- */

/* A drop waits for a merge of its collection (its worker's write would bring keys
 * back after the drop's deletes).  Rare: big merges are the built-ins'.  A merge that
 * failed without a write error (memory kept the run) does not stop the drop. */
static int merge_wait_for(struct storage *s, struct collection *c)
{
        if (!c->merging)
                return 0;
        (void)storage_merge_finish(s, true, NULL, NULL);
        return s->err ? storage_sticky_error(s) : 0;
}

static bool deferred_drop_of(const struct storage *s, uint64_t gid)
{
        for (size_t i = 0; i < s->n_def; i++)
                if (s->def[i].drop && s->def[i].gid == gid)
                        return true;
        return false;
}

/* Forget a deferred create of gid (its collection is being dropped). */
static void deferred_forget_create(struct storage *s, uint64_t gid)
{
        for (size_t i = 0; i < s->n_def; i++)
                if (!s->def[i].drop && s->def[i].gid == gid) {
                        memmove(&s->def[i], &s->def[i + 1], (s->n_def - i - 1) * sizeof(*s->def));
                        s->n_def--;
                        return;
                }
}

int storage_flush_deferred(struct storage *s)
{
        if (!s)
                return -EINVAL;
        if (s->err)
                return storage_sticky_error(s);
        if (s->n_def == 0)
                return 0;
        assert(rocksdb_writebatch_count(s->wb) == 0);
        s->gen++;
        s->n_stages = 0;
        return storage_write(s);
}

bool storage_has_deferred(const struct storage *s)
{
        return s && s->err == 0 && s->n_def > 0;
}

size_t storage_deferred_lost(const struct storage *s, const struct storage_deferred **ret)
{
        if (!s || s->err == 0) {
                *ret = NULL;
                return 0;
        }
        *ret = s->def;
        return s->n_def;
}

static int create(struct storage *s, uint64_t gid, enum storage_kind kind, uint64_t since,
                  uint64_t upper, bool defer)
{
        struct collection *c;
        int r;

        if (!s || kind < 0 || kind >= _STORAGE_KIND_MAX)
                return -EINVAL;
        if (s->err)
                return storage_sticky_error(s);
        if (storage_map_find(&s->map, gid))
                return -EEXIST;
        /* The old keys of gid must be gone before new ones (or reads) may come. */
        if (deferred_drop_of(s, gid)) {
                r = storage_flush_deferred(s);
                if (r < 0)
                        return r;
        }
        if (defer) {
                r = GROW_ARRAY(s->def, s->cap_def, s->n_def + 1);
                if (r < 0)
                        return r;
        }
        r = storage_map_reserve(&s->map);
        if (r < 0)
                return r;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (struct collection){
                .gid = gid, .kind = kind, .since = since, .upper = upper,
                .physical_since = min_u64(since, upper),
                .loaded = true,         /* no batches; drop left no keys behind */
        };
        if (defer) {
                s->def[s->n_def++] = (struct storage_deferred){
                        .gid = gid, .kind = kind, .since = c->since, .upper = c->upper,
                        .physical_since = c->physical_since,
                };
        } else {
                storage_put_collection(s, c, c->since, c->upper, c->physical_since);
                r = storage_write(s);
                if (r < 0) {
                        storage_collection_free(c);
                        return r;
                }
        }
        storage_map_insert(&s->map, c);
        assert(!storage_collection_invalid(c));
        return 0;
}

int storage_create(struct storage *s, uint64_t gid, enum storage_kind kind, uint64_t since,
                   uint64_t upper)
{
        return create(s, gid, kind, since, upper, false);
}

int storage_create_deferred(struct storage *s, uint64_t gid, enum storage_kind kind,
                            uint64_t since, uint64_t upper)
{
        return create(s, gid, kind, since, upper, true);
}

/* The collection gid to drop, its background merge finished: 0, -ENOENT, or the
 * sticky error. */
static int drop_find(struct storage *s, uint64_t gid, struct collection **ret)
{
        if (!s)
                return -EINVAL;
        if (s->err)
                return storage_sticky_error(s);
        *ret = storage_map_find(&s->map, gid);
        if (!*ret)
                return -ENOENT;
        return merge_wait_for(s, *ret);
}

/* Forget dropped collection c in memory (its records' deletes are written or queued). */
static void drop_forget(struct storage *s, struct collection *c)
{
        storage_pending_remove(s, c);
        storage_map_remove(&s->map, c);
        storage_collection_free(c);
}

int storage_drop_deferred(struct storage *s, uint64_t gid)
{
        struct collection *c;
        int r;

        r = drop_find(s, gid, &c);
        if (r < 0)
                return r;
        r = GROW_ARRAY(s->def, s->cap_def, s->n_def + 1);
        if (r < 0)
                return r;
        deferred_forget_create(s, gid);
        s->def[s->n_def] = (struct storage_deferred){ .gid = gid, .drop = true };
        (void)drop_by_key(c, &s->def[s->n_def]);
        s->n_def++;
        drop_forget(s, c);
        return 0;
}

int storage_drop(struct storage *s, uint64_t gid)
{
        struct storage_deferred d = { .gid = gid, .drop = true };
        struct collection *c;
        int r;

        r = drop_find(s, gid, &c);
        if (r < 0)
                return r;
        /* A deferred create put after these deletes would bring the record back. */
        deferred_forget_create(s, gid);
        /* Key by key when few and known, else range deletes: O(1) to write whatever the
         * size, and they also cover keys the descriptors do not know of, which need not
         * be loaded (NOTE 16). */
        (void)drop_by_key(c, &d);
        drop_put(s, &d);
        r = storage_write(s);
        if (r < 0)
                return r;
        drop_forget(s, c);
        return 0;
}

/* ---- Groups (NOTE 7) -------------------------------------------------------------- */

static void group_begin(struct storage *s)
{
        assert(rocksdb_writebatch_count(s->wb) == 0);
        s->gen++;
        s->n_stages = 0;
}

/* c's stage in the current group, made on first use. */
static int stage_get(struct storage *s, struct collection *c, struct stage **ret)
{
        struct stage *st;
        int r;

        if (c->stage_gen != s->gen) {
                r = GROW_ARRAY(s->stages, s->cap_stages, s->n_stages + 1);
                if (r < 0)
                        return r;
                c->stage_gen = s->gen;
                c->stage_idx = s->n_stages++;
                st = &s->stages[c->stage_idx];
                *st = (struct stage){
                        .c = c, .since = c->since, .upper = c->upper, .n_batches = c->n_batches,
                };
                if (c->loaded && c->n_batches > 0)
                        st->tail = c->batches[c->n_batches - 1];
        }
        *ret = &s->stages[c->stage_idx];
        return 0;
}

/* The staged newest batch, or NULL if there is none.  The pointer is valid until
 * c->batches grows. */
static const struct batch_desc *stage_tail_peek(const struct stage *st)
{
        const struct collection *c = st->c;

        if (st->n_batches == 0)
                return NULL;
        if (st->n_batches > c->n_batches)
                return &c->batches[st->n_batches - 1];
        return &st->tail;
}

/* The same, to be changed: a committed tail is rewritten by the group. */
static struct batch_desc *stage_tail(struct stage *st)
{
        struct collection *c = st->c;

        assert(st->n_batches > 0);
        if (st->n_batches > c->n_batches)
                return &c->batches[st->n_batches - 1];
        st->tail_changed = true;
        return &st->tail;
}

/* The records of every stage into s->wb, once per collection. */
static void group_put_stages(struct storage *s)
{
        for (size_t i = 0; i < s->n_stages; i++) {
                const struct stage *st = &s->stages[i];
                const struct collection *c = st->c;

                if (!st->changed)
                        continue;
                if (st->tail_changed)
                        storage_put_batch(s, c->gid, &st->tail);
                for (size_t b = c->n_batches; b < st->n_batches; b++)
                        storage_put_batch(s, c->gid, &c->batches[b]);
                storage_put_collection_mark(s, c, st->since, st->upper, c->physical_since,
                                            st->mark, st->mark_len);
        }
}

/* After the group's write succeeded: memory follows (controller-storage.c NOTE 2). */
static void group_apply(struct storage *s)
{
        for (size_t i = 0; i < s->n_stages; i++) {
                const struct stage *st = &s->stages[i];
                struct collection *c = st->c;

                if (!st->changed)
                        continue;
                if (st->tail_changed)
                        c->batches[c->n_batches - 1] = st->tail;
                c->n_batches = st->n_batches;
                c->upper = st->upper;
                if (st->mark) {
                        memcpy(c->mark, st->mark, st->mark_len);
                        c->mark_len = (uint8_t)st->mark_len;
                }
                if (st->since > c->since)
                        storage_pending_add(s, c);
                c->since = st->since;
                if (c->n_batches >= c->batches_at_compaction + PENDING_NEW_BATCHES)
                        storage_pending_add(s, c);
                assert(!storage_collection_invalid(c));
        }
        s->n_stages = 0;
}

/* A group that failed: nothing of it was written or applied (the caller marks which of
 * its entries get the error). */
static void group_abort(struct storage *s)
{
        rocksdb_writebatch_clear(s->wb);
        s->n_stages = 0;
}

/* The entries v[0..n) of a group call (storage_append_group(): struct storage_append,
 * storage_allow_compaction_group(): struct storage_since), as their int result fields:
 * entry k's lies at (char *)first + k * stride. */
struct group_results {
        int *first;
        size_t stride;
        size_t n;
};
#define GROUP_RESULTS(v, n)                                                                  \
        ((struct group_results){ .first = (n) && (v) ? &(v)->result : NULL,                 \
                                 .stride = sizeof(*(v)), .n = (n) })

/* Sets to r the results from entry `from` on and the staged ones (result 1) before it:
 * all of them with from 0. */
static void group_results_set(struct group_results g, size_t from, int r)
{
        for (size_t k = 0; k < g.n; k++) {
                int *res = (int *)(void *)((char *)g.first + k * g.stride);

                if (k >= from || *res == 1)
                        *res = r;
        }
}

/* The start of a group call: -EINVAL without a storage or without the entries; with a
 * sticky error, every entry's result and the return value are it
 * (storage_sticky_error()); else 0 and a new group (group_begin()). */
static int group_start(struct storage *s, struct group_results g)
{
        if (!s || (g.n > 0 && !g.first))
                return -EINVAL;
        if (s->err) {
                group_results_set(g, 0, s->err);
                return storage_sticky_error(s);
        }
        group_begin(s);
        return 0;
}

/* The end of a group call that broke off at entry i with r (i == n after a failed
 * write): the entries from i on were not looked at, the staged ones before it shared the
 * group; all of them fail with r, which is returned. */
static int group_fail(struct storage *s, struct group_results g, size_t i, int r)
{
        group_abort(s);
        group_results_set(g, i, r);
        return r;
}

/* ---- Appends ---------------------------------------------------------------------- */

static int append_validate(const struct storage_append *a, uint64_t upper)
{
        if (a->new_upper <= a->expected_upper || (a->n_updates > 0 && !a->updates) ||
            (a->mark && a->mark_len > STORAGE_MARK_MAX))
                return -EINVAL;
        if (a->expected_upper != upper)
                return -ESTALE;
        for (size_t i = 0; i < a->n_updates; i++) {
                const struct storage_update *u = &a->updates[i];

                if (u->time < a->expected_upper || u->time >= a->new_upper)
                        return -ERANGE;
                if (u->len > STORAGE_ROW_MAX)
                        return -EMSGSIZE;
                if (u->len > 0 && !u->row)
                        return -EINVAL;
        }
        return 0;
}

/* Stage one valid append (NOTE 7).  A negative return other than -EOVERFLOW may have
 * left records in s->wb: the group fails. */
static int append_stage(struct storage *s, struct stage *st, const struct storage_append *a)
{
        struct collection *c = st->c;
        const struct batch_desc *peek;
        struct batch_desc *tail;
        size_t n;
        int r;

        r = GROW_ARRAY(s->upd, s->cap_upd, a->n_updates);
        if (r < 0)
                return r;
        for (size_t i = 0; i < a->n_updates; i++)
                s->upd[i] = (struct upd){
                        .row = a->updates[i].row, .len = (uint32_t)a->updates[i].len,
                        .time = a->updates[i].time, .diff = a->updates[i].diff,
                };
        r = storage_upds_consolidate(s->upd, a->n_updates, &n);
        if (r < 0)
                return r;

        /* Room for a new descriptor before any pointer into c->batches is taken. */
        r = GROW_ARRAY(c->batches, c->cap_batches, st->n_batches + 1);
        if (r < 0)
                return r;
        peek = stage_tail_peek(st);
        /* controller-storage-compact.c NOTE 13: the newest batch of a run being merged is not extended or filled:
         * the merge writes its descriptor; a new batch follows it instead. */
        if (peek && (n == 0 || peek->updates == 0) &&
            !(c->merging && st->n_batches == c->merge_end)) {
                /* Extend the newest batch, or fill it if it is empty. */
                tail = stage_tail(st);
                if (n > 0) {
                        assert(tail->updates == 0);
                        r = storage_put_chunks(s, c->gid, tail->lower, s->upd, n, &tail->parts,
                                               &tail->bytes);
                        if (r < 0)
                                return r;
                        tail->updates = n;
                }
                tail->upper = a->new_upper;
        } else {
                struct batch_desc *b = &c->batches[st->n_batches];

                *b = (struct batch_desc){
                        .lower = a->expected_upper, .upper = a->new_upper,
                        .since = a->expected_upper, .updates = n,
                };
                r = storage_put_chunks(s, c->gid, b->lower, s->upd, n, &b->parts, &b->bytes);
                if (r < 0)
                        return r;
                st->n_batches++;
        }
        st->upper = a->new_upper;
        if (a->mark) {
                st->mark = a->mark;
                st->mark_len = a->mark_len;
        }
        st->changed = true;
        return 0;
}

int storage_append_group(struct storage *s, struct storage_append *v, size_t n)
{
        size_t staged = 0, i;
        int r;

        r = group_start(s, GROUP_RESULTS(v, n));
        if (r != 0)
                return r;
        for (i = 0; i < n; i++) {
                struct storage_append *a = &v[i];
                struct collection *c = storage_map_find(&s->map, a->gid);
                struct stage *st;

                a->actual_upper = c ? c->upper : 0;
                if (!c) {
                        a->result = -ENOENT;
                        continue;
                }
                a->result = storage_collection_load(s, c);
                if (a->result < 0)
                        continue;
                r = stage_get(s, c, &st);
                if (r < 0)
                        goto fail;
                a->actual_upper = st->upper;
                a->result = append_validate(a, st->upper);
                if (a->result < 0)
                        continue;
                r = append_stage(s, st, a);
                if (r == -EOVERFLOW) {
                        a->result = r;
                        continue;
                }
                if (r < 0)
                        goto fail;
                a->actual_upper = a->new_upper;
                a->result = 1;          /* staged; 0 once durable */
                staged++;
        }
        if (staged == 0) {
                /* Nothing valid, so nothing was put into s->wb (an -EOVERFLOW is
                 * found before the append's chunks are encoded). */
                assert(rocksdb_writebatch_count(s->wb) == 0);
                s->n_stages = 0;
                return 0;
        }
        group_put_stages(s);
        r = storage_write_opts(s, !s->syncer);  /* NOTE 14: the syncer syncs it */
        if (r < 0)
                goto fail;
        if (s->syncer) {
                s->seq_must = s->seq_written;
                s->stats.unsynced_appends++;
                syncer_want(s->syncer, s->seq_written);
        }
        group_apply(s);
        for (i = 0; i < n; i++)
                if (v[i].result == 1)
                        v[i].result = 0;
        s->stats.appends += staged;
        return (int)min_u64(staged, INT32_MAX);
fail:
        return group_fail(s, GROUP_RESULTS(v, n), i, r);
}

int storage_append(struct storage *s, uint64_t gid, uint64_t expected_upper, uint64_t new_upper,
                   const struct storage_update *updates, size_t n_updates, uint64_t *ret_upper)
{
        struct storage_append a = {
                .gid = gid, .expected_upper = expected_upper, .new_upper = new_upper,
                .updates = updates, .n_updates = n_updates,
        };
        int r;

        r = storage_append_group(s, &a, 1);
        if (r < 0)
                return r;
        if (ret_upper && (a.result == 0 || a.result == -ESTALE))
                *ret_upper = a.actual_upper;
        return a.result;
}

/* ---- Compaction permission -------------------------------------------------------- */

int storage_allow_compaction_group(struct storage *s, struct storage_since *v, size_t n)
{
        size_t moved = 0, i;
        int r;

        r = group_start(s, GROUP_RESULTS(v, n));
        if (r != 0)
                return r;
        for (i = 0; i < n; i++) {
                struct collection *c = storage_map_find(&s->map, v[i].gid);
                struct stage *st;

                if (!c) {
                        v[i].result = -ENOENT;
                        continue;
                }
                r = stage_get(s, c, &st);
                if (r < 0)
                        goto fail;
                /* controller-storage.c NOTE 3: not above since is ignored. */
                v[i].result = v[i].since > st->since;
                if (v[i].result) {
                        st->since = v[i].since;
                        st->changed = true;
                        moved++;
                }
        }
        if (moved == 0) {
                s->n_stages = 0;
                return 0;
        }
        group_put_stages(s);
        r = storage_write_opts(s, false);       /* (1): a since move needs no sync */
        if (r < 0)
                goto fail;
        group_apply(s);
        return (int)min_u64(moved, INT32_MAX);
fail:
        return group_fail(s, GROUP_RESULTS(v, n), i, r);
}

int storage_allow_compaction(struct storage *s, uint64_t gid, uint64_t since)
{
        struct storage_since v = { .gid = gid, .since = since };
        int r;

        r = storage_allow_compaction_group(s, &v, 1);
        return r < 0 ? r : v.result;
}
