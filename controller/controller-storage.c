/* controller-storage.c -- storage collections over RocksDB (contract:
 * controller-storage.h).
 *
 * Who calls what.  coord-controller's loop thread makes every call: appends of the
 * adapter's INSERTs and of the upper ticks of tables go through storage_append_group()
 * (all appends of one loop iteration in one group; with the syncer, controller-storage-write.c NOTE 14, written
 * unsynced and synced by its thread), the lifecycle's AllowCompaction
 * through storage_allow_compaction_group(), peeks through storage_read(), hydration
 * and subscriptions through storage_read_updates(), and storage_compact_pending() runs
 * when the loop has nothing better to do; a big merge runs in a thread of this
 * module (controller-storage-compact.c NOTE 13).  Nothing else opens the database.
 *
 * The module's files:
 *   controller-storage.c            the handle (open, close), the in-memory state
 *                                   (gid map, compaction queue, invariants), loading,
 *                                   errors and helpers
 *   controller-storage-records.c    records and their encoding, iterators and scans
 *   controller-storage-write.c      the write path, group commit, creates and drops,
 *                                   appends, since moves
 *   controller-storage-compact.c    compaction, merges in the background
 *   controller-storage-read.c       reads, reads off the loop, introspection
 *   controller-storage-check.c      storage_check()
 *   controller-storage-internal.h   what they share
 *
 * NOTES ON THE DESIGN
 *
 * The notes are numbered across the module; each stands in the file that
 * enforces it, and "NOTE n" or "(n)" in any file of the module names it:
 *   controller-storage.c            2, 3, 4, 8, 11 (below)
 *   controller-storage-write.c      1, 7, 9, 12, 14, 16
 *   controller-storage-compact.c    5, 6, 13
 *   controller-storage-read.c       10, 15
 *
 * (2) Memory mirrors the disk and never runs ahead of it.  The collection records
 *     are all read at open (s->map); the batch descriptors of a collection are read
 *     on first use (NOTE 8).  A change is applied to memory only after its write
 *     succeeded, and whatever the apply step needs (a slot in s->map, room in
 *     c->batches) is reserved before the write, so the apply step cannot fail and
 *     memory cannot disagree with an acknowledged disk state.
 *
 * (3) Frontiers move forward only (I1).  upper moves only by an append whose
 *     expected_upper equals it and whose new_upper is larger.  since moves only by
 *     storage_allow_compaction(), which ignores values not above it (the lifecycle
 *     re-sends permissions after restarts; ignoring them makes that harmless).
 *     physical_since moves only by compaction, to min(since, min over batches of
 *     batch since) (controller-storage-compact.c NOTE 5), which cannot decrease: both terms only grow, and a new
 *     batch starts at the upper, above the old value.  physical_since <= since
 *     always; since is moved only to bounds the catalog committed, hence I2.
 *
 * (4) Batches.  A collection with batches b_0 .. b_n-1 satisfies
 *       b_i.upper == b_i+1.lower,  b_n-1.upper == upper,
 *       b_i.lower <= b_i.since < b_i.upper,  physical_since <= b_i.since,
 *       b_i.updates == 0  <=>  b_i.parts == 0  <=>  b_i.bytes == 0,
 *     and the updates of b_i, read over its chunks gid|lower|0 .. gid|lower|parts-1,
 *     are sorted by (time, row), with no two of equal (time, row), no zero diff, and
 *     times in [b_i.since, b_i.upper).  Hence the chunk keys of a collection, in key
 *     order, list its updates in time order, and the updates with time <= t all lie
 *     in the batches with lower <= t: a read at t reads those batches' chunks and
 *     nothing else -- batch by batch (read_batches()), not as the one key range
 *     [gid|0, gid|t+1), whose deleted keys of merged-away batches RocksDB keeps as
 *     tombstones for a while, every one stepped over.  storage_collection_invalid()
 *     checks the memory part at every transition (assert) and at load; storage_check()
 *     checks everything against the disk.
 *
 * (8) Batch descriptors are loaded per collection on first use (append, compaction,
 *     range read, read at t, stats), not at open: opening costs one scan of the small
 *     "collections" family, whatever the number of batches.
 *
 * (11) RocksDB options: WriteOptions.sync = 1, use_fsync = 0 (fdatasync of the WAL per
 *     change, (1); sync = 0 for append groups with the syncer, (14)); wal_recovery_mode
 *     = point-in-time (a torn tail is dropped, never half applied); manual_wal_flush = 0;
 *     write_buffer_size 2 MiB and max_total_wal_size 8 MiB bound what an open after
 *     kill -9 must replay (DESIGN section 11); keep_log_file_num 4, max_log_file_size
 *     1 MiB bound the info LOG.  storage_close() of a healthy handle flushes the
 *     memtables, so a normal restart opens table files instead of replaying the WAL.
 *
 * Handle states: OPEN (s->err == 0) -> ERROR (s->err < 0) on a failed write or sync,
 * until storage_close().
 */
#include "controller-storage.h"
#include "controller-storage-internal.h"

#include <assert.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage.pb-c.h"
#include "oamap.h"
#include "rocks.h"
#include "util.h"

static const char *const cf_names[_CF_MAX] = {
        [CF_DEFAULT] = "default",
        [CF_COLLECTIONS] = "collections",
        [CF_BATCHES] = "batches",
        [CF_CHUNKS] = "chunks",
};

#define MAP_MIN_SLOTS 64u

#define WRITE_BUFFER_SIZE (2u << 20)
#define MAX_TOTAL_WAL_SIZE (8u << 20)
#define INFO_LOG_FILES 4
#define INFO_LOG_SIZE (1u << 20)

_Static_assert((int)STORAGE_KIND_TABLE == COORD__STORAGE_KIND__STORAGE_KIND_TABLE &&
               (int)STORAGE_KIND_SOURCE == COORD__STORAGE_KIND__STORAGE_KIND_SOURCE &&
               (int)STORAGE_KIND_REMAP == COORD__STORAGE_KIND__STORAGE_KIND_REMAP &&
               (int)STORAGE_KIND_MV == COORD__STORAGE_KIND__STORAGE_KIND_MV &&
               (int)STORAGE_KIND_BUILTIN == COORD__STORAGE_KIND__STORAGE_KIND_BUILTIN &&
               (int)STORAGE_KIND_SINK == COORD__STORAGE_KIND__STORAGE_KIND_SINK,
               "storage_kind mirrors coord.StorageKind");
_Static_assert(STORAGE_ROW_MAX <= UINT32_MAX, "row lengths are u32 in a chunk");

/* ---- Errors ----------------------------------------------------------------------- */

_Thread_local char storage_thread_error[ROCKS_ERROR_MAX];

const char *storage_last_error(void)
{
        return storage_thread_error;
}

int storage_rocks_error(char *err)
{
        return rocks_error_take(storage_thread_error, "storage: ", err);
}

int storage_sticky_error(const struct storage *s)
{
        if (s->err < 0)
                set_thread_error("%s", s->err_msg);
        return s->err;
}

int storage_corrupt(uint64_t gid, const char *what)
{
        set_thread_error("storage: collection %llu: %s", (unsigned long long)gid, what);
        return -EBADMSG;
}

/* ---- Small helpers ---------------------------------------------------------------- */


int storage_upd_cmp_time_row(const void *x, const void *y)
{
        const struct upd *a = x, *b = y;

        if (a->time != b->time)
                return a->time < b->time ? -1 : 1;
        return row_cmp(a, b);
}

/* Sort v[] by (time, row), sum equal (time, row), drop zero sums.  -EOVERFLOW if a
 * sum does not fit a diff. */
int storage_upds_consolidate(struct upd *v, size_t n, size_t *ret_n)
{
        size_t out = 0;

        if (n > 1)
                qsort(v, n, sizeof(*v), storage_upd_cmp_time_row);
        for (size_t i = 0, j; i < n; i = j) {
                __int128 sum = v[i].diff;

                for (j = i + 1; j < n && storage_upd_cmp_time_row(&v[j], &v[i]) == 0; j++)
                        sum += v[j].diff;
                if (sum < INT64_MIN || sum > INT64_MAX)
                        return -EOVERFLOW;
                if (sum != 0) {
                        v[out] = v[i];
                        v[out++].diff = (int64_t)sum;
                }
        }
        *ret_n = out;
        return 0;
}

void storage_chunks_release(struct storage *s)
{
        for (size_t i = 0; i < s->n_chunks; i++)
                coord__storage_chunk__free_unpacked(s->chunks[i], NULL);
        s->n_chunks = 0;
        s->n_upd = 0;
}

/* The scratch of calls (s's, or a merge worker's handle's, controller-storage-compact.c NOTE 13). */
static void scratch_free(struct storage *s)
{
        storage_chunks_release(s);
        free(s->chunks);
        free(s->upd);
        free(s->upd_tmp);
        free(s->sums);
        free(s->slots);
        free(s->rows_buf);
        free(s->pack_buf);
}

/* ---- Invariants (NOTE 4) ---------------------------------------------------------- */

/* The first broken invariant of c's memory state, or NULL. */
const char *storage_collection_invalid(const struct collection *c)
{
        if (c->physical_since > c->since)
                return "physical since above since";
        if (c->physical_since > c->upper)
                return "physical since above upper";
        if (!c->loaded)
                return NULL;
        for (size_t i = 0; i < c->n_batches; i++) {
                const struct batch_desc *b = &c->batches[i];

                if (!(b->lower <= b->since && b->since < b->upper))
                        return "batch since outside [lower, upper)";
                if (b->since < c->physical_since)
                        return "batch since below physical since";
                if ((b->updates == 0) != (b->parts == 0) || (b->parts == 0) != (b->bytes == 0))
                        return "batch counts disagree";
                if (b->parts > b->updates)
                        return "batch has more chunks than updates";
                if (i + 1 < c->n_batches && b->upper != c->batches[i + 1].lower)
                        return "batches not contiguous";
        }
        if (c->n_batches > 0 && c->batches[c->n_batches - 1].upper != c->upper)
                return "newest batch upper differs from the upper";
        return NULL;
}

/* ---- gid map ---------------------------------------------------------------------- */

struct collection *storage_map_find(const struct gid_map *m, uint64_t gid)
{
        if (!m->slots)
                return NULL;
        for (size_t i = oa_hash_id(gid) & m->mask; m->slots[i]; i = (i + 1) & m->mask)
                if (m->slots[i]->gid == gid)
                        return m->slots[i];
        return NULL;
}

static void map_put(struct gid_map *m, struct collection *c)
{
        size_t i = oa_hash_id(c->gid) & m->mask;

        while (m->slots[i])
                i = (i + 1) & m->mask;
        m->slots[i] = c;
}

/* Room for one more entry, so that storage_map_insert() cannot fail (NOTE 2). */
static bool map_used(const void *e)
{
        return *(struct collection *const *)e != NULL;
}

static uint64_t map_hash(const void *e)
{
        return oa_hash_id((*(struct collection *const *)e)->gid);
}

int storage_map_reserve(struct gid_map *m)
{
        static const struct oa_kind kind = {
                .entry_size = sizeof(struct collection *), .min_slots = MAP_MIN_SLOTS,
                .used = map_used, .hash = map_hash,
        };
        void *slots = m->slots;
        int r = oa_reserve(&kind, &slots, &m->mask, m->n + 1);

        m->slots = slots;
        return r < 0 ? r : 0;
}

void storage_map_insert(struct gid_map *m, struct collection *c)
{
        assert(m->slots && (m->n + 1) * 2 <= m->mask + 1);
        assert(!storage_map_find(m, c->gid));
        map_put(m, c);
        m->n++;
}

/* Backward-shift deletion: no tombstones. */
void storage_map_remove(struct gid_map *m, const struct collection *c)
{
        size_t i = oa_hash_id(c->gid) & m->mask, j;

        while (m->slots[i] != c) {
                assert(m->slots[i]);
                i = (i + 1) & m->mask;
        }
        m->slots[i] = NULL;
        for (j = (i + 1) & m->mask; m->slots[j]; j = (j + 1) & m->mask) {
                size_t home = oa_hash_id(m->slots[j]->gid) & m->mask;

                /* Move the entry at j into the hole at i unless its home lies
                 * cyclically in (i, j]: then a lookup would never probe past the hole. */
                if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
                        m->slots[i] = m->slots[j];
                        m->slots[j] = NULL;
                        i = j;
                }
        }
        m->n--;
}

/* ---- Collections and the compaction queue ----------------------------------------- */

void storage_pending_add(struct storage *s, struct collection *c)
{
        if (c->pending)
                return;
        c->pending = true;
        c->pending_next = NULL;
        c->pending_prev = s->pending_tail;
        if (s->pending_tail)
                s->pending_tail->pending_next = c;
        else
                s->pending_head = c;
        s->pending_tail = c;
        s->n_pending++;
}

void storage_pending_remove(struct storage *s, struct collection *c)
{
        if (!c->pending)
                return;
        if (c->pending_prev)
                c->pending_prev->pending_next = c->pending_next;
        else
                s->pending_head = c->pending_next;
        if (c->pending_next)
                c->pending_next->pending_prev = c->pending_prev;
        else
                s->pending_tail = c->pending_prev;
        c->pending = false;
        c->pending_prev = c->pending_next = NULL;
        s->n_pending--;
}

struct collection *storage_collection_free(struct collection *c)
{
        if (c) {
                free(c->batches);
                free(c);
        }
        return NULL;
}

/* ---- Opening and closing ---------------------------------------------------------- */

static int collection_decode(const char *key, size_t klen, const char *val, size_t vlen,
                             struct collection **ret)
{
        Coord__StorageCollection *m;
        struct collection *c;
        uint64_t gid;

        if (klen != KEY_GID_LEN) {
                set_thread_error("storage: malformed collection key");
                return -EBADMSG;
        }
        gid = be64_get((const uint8_t *)key);
        m = coord__storage_collection__unpack(NULL, vlen, (const uint8_t *)val);
        if (!m)
                return storage_corrupt(gid, "collection record does not decode");
        c = calloc(1, sizeof(*c));
        if (!c) {
                coord__storage_collection__free_unpacked(m, NULL);
                return -ENOMEM;
        }
        *c = (struct collection){
                .gid = gid, .kind = (enum storage_kind)m->kind,
                .since = m->since, .upper = m->upper, .physical_since = m->physical_since,
        };
        if (m->mark.len <= STORAGE_MARK_MAX) {
                if (m->mark.len)
                        memcpy(c->mark, m->mark.data, m->mark.len);
                c->mark_len = (uint8_t)m->mark.len;
        }
        if (m->gid != gid || (unsigned)m->kind >= _STORAGE_KIND_MAX ||
            storage_collection_invalid(c) || m->mark.len > STORAGE_MARK_MAX) {
                coord__storage_collection__free_unpacked(m, NULL);
                storage_collection_free(c);
                return storage_corrupt(gid, "invalid collection record");
        }
        coord__storage_collection__free_unpacked(m, NULL);
        *ret = c;
        return 0;
}

static int load_collections(struct storage *s)
{
        uint8_t lo[1] = { 0 }, hi[KEY_END_LEN];
        rocksdb_readoptions_t *ro;
        rocksdb_iterator_t *it;
        int r = 0;

        memset(hi, 0xff, sizeof(hi));
        for (it = storage_iter_new(s, CF_COLLECTIONS, lo, 0, hi, sizeof(hi), &ro);
             rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
                struct collection *c = NULL;
                size_t klen, vlen;
                const char *k = rocksdb_iter_key(it, &klen), *v = rocksdb_iter_value(it, &vlen);

                r = collection_decode(k, klen, v, vlen, &c);
                if (r < 0)
                        break;
                r = storage_map_reserve(&s->map);
                if (r < 0) {
                        storage_collection_free(c);
                        break;
                }
                storage_map_insert(&s->map, c);
                if (c->physical_since < c->since)
                        storage_pending_add(s, c);
        }
        return storage_iter_free(it, ro, r);
}

/* Read c's batch descriptors (NOTE 8). */
int storage_collection_load(struct storage *s, struct collection *c)
{
        uint8_t lo[KEY_GID_LEN], hi[KEY_END_LEN];
        rocksdb_readoptions_t *ro;
        rocksdb_iterator_t *it;
        const char *why;
        int r = 0;

        if (c->loaded)
                return 0;
        assert(c->n_batches == 0);
        be64_put(lo, c->gid);
        key_end(hi, c->gid);
        for (it = storage_iter_new(s, CF_BATCHES, lo, sizeof(lo), hi, sizeof(hi), &ro);
             rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
                size_t klen, vlen;
                const char *k = rocksdb_iter_key(it, &klen), *v = rocksdb_iter_value(it, &vlen);

                r = GROW_ARRAY(c->batches, c->cap_batches, c->n_batches + 1);
                if (r < 0)
                        break;
                r = storage_batch_decode(c->gid, k, klen, v, vlen, &c->batches[c->n_batches]);
                if (r < 0)
                        break;
                c->n_batches++;
        }
        r = storage_iter_free(it, ro, r);
        if (r >= 0) {
                c->loaded = true;
                why = storage_collection_invalid(c);
                if (why)
                        r = storage_corrupt(c->gid, why);
        }
        if (r < 0) {
                c->loaded = false;
                c->n_batches = 0;
                return r;
        }
        c->batches_at_compaction = c->n_batches;
        return 0;
}

static rocksdb_options_t *options_new(void)
{
        rocksdb_options_t *o = rocksdb_options_create();

        rocksdb_options_set_create_if_missing(o, 1);
        rocksdb_options_set_create_missing_column_families(o, 1);
        rocksdb_options_set_write_buffer_size(o, WRITE_BUFFER_SIZE);
        rocksdb_options_set_max_total_wal_size(o, MAX_TOTAL_WAL_SIZE);
        rocksdb_options_set_wal_recovery_mode(o, rocksdb_point_in_time_recovery);
        rocksdb_options_set_manual_wal_flush(o, 0);
        rocksdb_options_set_use_fsync(o, 0);
        rocksdb_options_set_keep_log_file_num(o, INFO_LOG_FILES);
        rocksdb_options_set_max_log_file_size(o, INFO_LOG_SIZE);
        rocksdb_options_set_info_log_level(o, ROCKS_INFO_LOG_LEVEL);
        rocksdb_options_enable_statistics(o);   /* storage_get_io_stats() */
        return o;
}

int storage_open(const char *path, struct storage **ret)
{
        const rocksdb_options_t *cf_options[_CF_MAX];
        struct storage *s;
        char *err = NULL;
        int r;

        if (!path || !ret)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        /* RocksDB's constructors abort rather than return NULL. */
        s->options = options_new();
        s->write_options = rocksdb_writeoptions_create();
        rocksdb_writeoptions_set_sync(s->write_options, 1);
        s->write_nosync = rocksdb_writeoptions_create();
        rocksdb_writeoptions_set_sync(s->write_nosync, 0);
        s->read_options = rocksdb_readoptions_create();
        s->flush_options = rocksdb_flushoptions_create();
        rocksdb_flushoptions_set_wait(s->flush_options, 1);
        s->wb = rocksdb_writebatch_create();
        for (size_t i = 0; i < _CF_MAX; i++)
                cf_options[i] = s->options;
        s->db = rocksdb_open_column_families(s->options, path, _CF_MAX, cf_names, cf_options,
                                             s->cf, &err);
        if (err) {
                r = storage_rocks_error(err);
                goto fail;
        }
        r = load_collections(s);
        if (r < 0)
                goto fail;
        *ret = s;
        return 0;
fail:
        s->err = r;             /* no flush on the way out */
        storage_close(s);
        return r;
}

struct storage *storage_close(struct storage *s)
{
        char *err = NULL;

        if (!s)
                return NULL;
        /* Readers in other threads read our database (controller-storage-read.c NOTE 15); none waits for us. */
        while (atomic_load_explicit(&s->readers, memory_order_acquire) > 0)
                usleep(200);
        /* A sync in flight finishes first (controller-storage-write.c NOTE 14); a healthy close then flushes the
         * memtables, which makes every write durable anyway. */
        s->syncer = storage_syncer_stop(s->syncer);
        if (s->merge) {
                /* Its write, if it made it, left the disk valid (controller-storage-compact.c NOTE 13). */
                pthread_join(s->merge->thread, NULL);
                s->merge = storage_merge_free(s->merge);
        }
        if (s->db && s->err == 0 && s->n_def > 0)
                (void)storage_flush_deferred(s);        /* best effort: see the header */
        if (s->db) {
                /* NOTE 11: a restart should open table files, not replay the WAL.  A
                 * failed flush loses nothing: the synced WAL holds the data. */
                if (s->err == 0)
                        for (size_t i = 0; i < _CF_MAX; i++) {
                                rocksdb_flush_cf(s->db, s->flush_options, s->cf[i], &err);
                                if (err) {
                                        rocksdb_free(err);
                                        err = NULL;
                                }
                        }
                for (size_t i = 0; i < _CF_MAX; i++)
                        if (s->cf[i])
                                rocksdb_column_family_handle_destroy(s->cf[i]);
                rocksdb_close(s->db);
        }
        for (size_t i = 0; s->map.slots && i <= s->map.mask; i++)
                storage_collection_free(s->map.slots[i]);
        free(s->map.slots);
        scratch_free(s);
        free(s->stages);
        free(s->def);
        free(s->def_unsynced);
        free(s->sync_hold_path);
        if (s->wb)
                rocksdb_writebatch_destroy(s->wb);
        if (s->flush_options)
                rocksdb_flushoptions_destroy(s->flush_options);
        if (s->read_options)
                rocksdb_readoptions_destroy(s->read_options);
        if (s->write_options)
                rocksdb_writeoptions_destroy(s->write_options);
        if (s->write_nosync)
                rocksdb_writeoptions_destroy(s->write_nosync);
        if (s->options)
                rocksdb_options_destroy(s->options);
        free(s);
        return NULL;
}

/* A handle for a merge's worker: s's database and column families (RocksDB allows
 * reads and writes from several threads), scratch and a WriteBatch of its own. */
struct storage *storage_shadow_new(const struct storage *s)
{
        struct storage *w = calloc(1, sizeof(*w));

        if (!w)
                return NULL;
        w->db = s->db;
        memcpy(w->cf, s->cf, sizeof(w->cf));
        w->write_nosync = s->write_nosync;      /* read only once made: shared */
        w->wb = rocksdb_writebatch_create();
        w->shadow = true;
        return w;
}

void storage_shadow_free(struct storage *w)
{
        if (!w)
                return;
        assert(w->shadow);
        scratch_free(w);
        rocksdb_writebatch_destroy(w->wb);
        free(w);
}

int storage_error(const struct storage *s)
{
        return s ? s->err : -EINVAL;
}

void storage_debug_fail_next_write(struct storage *s)
{
        if (s)
                s->fail_next_write = true;
}

bool storage_debug_merge_settle(struct storage *s)
{
        if (!s || !s->merge)
                return false;
        while (!atomic_load_explicit(&s->merge->done, memory_order_acquire))
                sched_yield();
        return true;
}
