/* controller-storage.c -- storage collections over RocksDB (contract:
 * controller-storage.h).
 *
 * Who calls what.  coord-controller's loop thread makes every call: appends of the
 * adapter's INSERTs and of the upper ticks of tables go through storage_append_group()
 * (all appends of one loop iteration in one group; with the syncer, NOTE 14, written
 * unsynced and synced by its thread), the lifecycle's AllowCompaction
 * through storage_allow_compaction_group(), peeks through storage_read(), hydration
 * and subscriptions through storage_read_updates(), and storage_compact_pending() runs
 * when the loop has nothing better to do; a big merge runs in a thread of this
 * module (NOTE 13).  Nothing else opens the database.
 *
 * The module's files:
 *   controller-storage.c            the handle (open, close), the in-memory state
 *                                   (gid map, compaction queue, invariants), loading,
 *                                   errors and helpers
 *   controller-storage-records.c    records and their encoding, iterators and scans
 *   controller-storage-write.c      the write path, group commit, creates and drops,
 *                                   appends, since moves
 *   controller-storage-compact.c    compaction, merges in the background
 *   controller-storage-internal.h   what they share
 *
 * NOTES ON THE DESIGN
 *
 * The notes are numbered across the module; each stands in the file that
 * enforces it, and "NOTE n" or "(n)" in any file of the module names it:
 *   controller-storage.c            2, 3, 4, 8, 10, 11, 15 (below)
 *   controller-storage-write.c      1, 7, 9, 12, 14, 16
 *   controller-storage-compact.c    5, 6, 13
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
 *     batch since) (NOTE 5), which cannot decrease: both terms only grow, and a new
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
 * (10) Reads at t consolidate in memory: every update with time <= t, summed per row
 *     in 128 bits, rows in byte order.  A negative or overflowing sum is -EUCLEAN and
 *     no row is emitted.  The long runs already in row order (batches that compaction
 *     or one append wrote) are merged as they are; the updates outside them are
 *     summed in a hash table first, so the many that cancel -- a frontier row
 *     retracted by the next tick -- are never sorted (upds_sum_by_row()).  A range
 *     read streams chunk by chunk in key order, which is time order (4), reporting
 *     times below since at since.
 *     The chunks of a read at t are fetched by key, not scanned: every batch descriptor
 *     knows its parts, so read_batches() asks RocksDB for exactly those keys,
 *     READ_GET_KEYS at a time (rocksdb_batched_multi_get_cf(), keys sorted).  An
 *     iterator per batch cost a third of a polled SELECT * FROM coord_frontiers at
 *     1,000 objects (making it, seeking it), and one iterator over the whole range
 *     steps over the tombstones that merges leave between batches.
 *
 * (11) RocksDB options, and why:
 *       WriteOptions.sync = 1, use_fsync = 0   fdatasync of the WAL per change (1);
 *                                              sync = 0 for append groups with the
 *                                              syncer, which calls FlushWAL(sync) (14)
 *       wal_recovery_mode = point-in-time      a torn tail is dropped, never half applied
 *       manual_wal_flush = 0                   the WAL reaches the OS inside the write
 *       write_buffer_size 2 MiB, max_total_wal_size 8 MiB    bound what an open after
 *                                              kill -9 must replay (DESIGN section 11):
 *                                              with 8 MiB / 32 MiB a minute of the
 *                                              publication bench's writes left a 10 MB
 *                                              WAL that took 635 ms to replay, most of
 *                                              the controller's restart (issue 6); at
 *                                              ~150 kB/s a memtable now fills in ~14 s
 *       keep_log_file_num 4, max_log_file_size 1 MiB         bound the info LOG
 *     storage_close() of a healthy handle flushes the memtables, so a normal restart
 *     opens table files instead of replaying the WAL.
 *
 * (15) Reads off the loop (storage_reader_new()).  A read at t of a big collection
 *     (coord_frontiers at 100,000 objects: a row per collection, 35 ms) held the loop
 *     for all of it.  storage_reader_new() takes, on the loop thread, everything the
 *     read needs: a copy of the collection's descriptors with lower <= t (and of the
 *     merge run's bounds, NOTE 13) and a RocksDB snapshot.  storage_reader_run() then
 *     reads in any thread through a handle of its own (storage_shadow_new(): its own
 *     scratch; its iterators read the snapshot), exactly what storage_read() would
 *     have read at the moment the reader was made: later appends lie above t, and the
 *     snapshot keeps every chunk key the copied descriptors name though a compaction or
 *     a merge deletes it meanwhile -- a compaction changes no read at t >= since (5), and
 *     the caller's execution hold keeps since <= t.  The handle counts its readers;
 *     storage_close() waits until the last is freed, since each reads s's database.
 *
 * Handle states: OPEN (s->err == 0) -> ERROR (s->err < 0) on a failed write or sync,
 * until storage_close().
 */
#include "controller-storage.h"
#include "controller-storage-internal.h"

#include <assert.h>
#include <limits.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage.pb-c.h"
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

/* The updates outside the long runs, summed per row (upds_sum_by_row()). */
struct upd_sum {
        const uint8_t *row;
        uint32_t len;
        __int128 sum;
};

static int sum_cmp_row(const void *x, const void *y)
{
        const struct upd_sum *a = x, *b = y;

        return row_cmp(&(struct upd){ .row = a->row, .len = a->len },
                       &(struct upd){ .row = b->row, .len = b->len });
}

static uint64_t row_hash_seed;

static void row_hash_seed_init(void)
{
        uint64_t seed = now_ns() ^ ((uint64_t)getpid() << 32);

        /* Rows are users' data: a random seed keeps their collisions from being chosen. */
        if (getentropy(&seed, sizeof(seed)) < 0)
                seed ^= (uint64_t)(uintptr_t)&seed;
        row_hash_seed = seed | 1;
}

/* A word at a time, each mixed by a multiply and a shift; not cryptographic. */
static uint64_t row_hash(const uint8_t *p, uint32_t len)
{
        uint64_t h = row_hash_seed ^ ((uint64_t)len * 0x9e3779b97f4a7c15ull), w;

        for (; len >= 8; p += 8, len -= 8) {
                memcpy(&w, p, 8);
                h = (h ^ w) * 0xff51afd7ed558ccdull;
                h ^= h >> 32;
        }
        w = 0;
        if (len)
                memcpy(&w, p, len);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
        return h ^ (h >> 29);
}

/* A run of s->upd[] in row order, merged as it is (upds_sum_by_row()). */
struct read_run {
        size_t start, end, pos;
};

#define READ_RUNS_MAX 8         /* the longest runs merged as they are ... */
#define READ_RUN_MIN 64         /* ... if this long: the rest is summed in a hash table */

/* The updates of s->upd[] outside the runs (sorted by start), summed per row into
 * s->sums[0 .. *ret_k), zero sums dropped, sorted by row.  0 or -ENOMEM. */
static int rest_sum_by_row(struct storage *s, const struct read_run *runs, size_t nr, size_t m,
                           size_t *ret_k)
{
        static pthread_once_t seeded = PTHREAD_ONCE_INIT;
        const struct upd *v = s->upd;
        size_t n = s->n_upd, nslots = 16, k = 0, out = 0, ri = 0;
        int r;

        assert(m >= 1 && m <= n && m < UINT32_MAX);
        (void)pthread_once(&seeded, row_hash_seed_init);
        while (nslots < 2 * m)
                nslots *= 2;
        r = GROW_ARRAY(s->sums, s->cap_sums, m);
        if (r < 0)
                return r;
        r = GROW_ARRAY(s->slots, s->cap_slots, nslots);
        if (r < 0)
                return r;
        memset(s->slots, 0xff, nslots * sizeof(*s->slots));
        for (size_t i = 0; i < n; i++) {
                size_t h;

                if (ri < nr && i == runs[ri].start) {
                        i = runs[ri++].end - 1;
                        continue;
                }
                for (h = row_hash(v[i].row, v[i].len) & (nslots - 1); s->slots[h] != UINT32_MAX;
                     h = (h + 1) & (nslots - 1)) {
                        struct upd_sum *e = &s->sums[s->slots[h]];

                        if (e->len == v[i].len &&
                            (!e->len || memcmp(e->row, v[i].row, e->len) == 0)) {
                                e->sum += v[i].diff;
                                break;
                        }
                }
                if (s->slots[h] == UINT32_MAX) {
                        s->slots[h] = (uint32_t)k;
                        s->sums[k++] = (struct upd_sum){ .row = v[i].row, .len = v[i].len,
                                                         .sum = v[i].diff };
                }
        }
        assert(k <= m);
        for (size_t i = 0; i < k; i++)
                if (s->sums[i].sum != 0)
                        s->sums[out++] = s->sums[i];
        if (out > 1)
                qsort(s->sums, out, sizeof(*s->sums), sum_cmp_row);
        *ret_k = out;
        return 0;
}

/* Keep runs[] the (at most READ_RUNS_MAX) longest runs seen, given [start, end). */
static void runs_offer(struct read_run *runs, size_t *nr, size_t start, size_t end)
{
        size_t shortest = 0;

        if (*nr < READ_RUNS_MAX) {
                runs[(*nr)++] = (struct read_run){ .start = start, .end = end, .pos = start };
                return;
        }
        for (size_t i = 1; i < *nr; i++)
                if (runs[i].end - runs[i].start < runs[shortest].end - runs[shortest].start)
                        shortest = i;
        if (end - start > runs[shortest].end - runs[shortest].start)
                runs[shortest] = (struct read_run){ .start = start, .end = end, .pos = start };
}

static int run_cmp_start(const void *x, const void *y)
{
        const struct read_run *a = x, *b = y;

        return (a->start > b->start) - (a->start < b->start);
}

/* Sum s->upd[0 .. n_upd) per row: s->upd[0 .. *ret_n) then holds each row whose total
 * is positive once, with that total, sorted by row (NOTE 10).  A read at t meets a few
 * long runs in row order -- the batches compaction wrote, each sorted (coord_frontiers
 * at 100,000 objects: two of ~50,000 rows) -- and many short ones from the appends
 * after them, which mostly cancel: each retracts a row that an earlier one inserted.
 * So the (at most READ_RUNS_MAX) longest runs are merged as they are, and the updates
 * outside them are summed per row in a hash table first, the few rows left sorted and
 * merged as one more run: O(n * runs + k log k) for k rows left, where sorting them all
 * was a quarter of the controller's time under a polling client.  -EUCLEAN (the
 * thread's error set) for a negative or overflowing total, -ENOMEM. */
static int upds_sum_by_row(struct storage *s, uint64_t gid, uint64_t t, size_t *ret_n)
{
        const struct upd *v = s->upd;
        struct read_run runs[READ_RUNS_MAX];
        size_t n = s->n_upd, nr = 0, m = n, k = 0, b = 0, i, j, out = 0;
        struct upd *o;
        int r;

        *ret_n = 0;
        if (n == 0)
                return 0;
        for (i = 0; i < n; i = j) {
                for (j = i + 1; j < n && row_cmp(&v[j - 1], &v[j]) <= 0; j++)
                        ;
                if (j - i >= READ_RUN_MIN || j - i == n)
                        runs_offer(runs, &nr, i, j);
        }
        qsort(runs, nr, sizeof(*runs), run_cmp_start);
        for (i = 0; i < nr; i++)
                m -= runs[i].end - runs[i].start;
        if (m > 0) {
                r = rest_sum_by_row(s, runs, nr, m, &k);
                if (r < 0)
                        return r;
        }
        r = GROW_ARRAY(s->upd_tmp, s->cap_upd_tmp, n - m + k);
        if (r < 0)
                return r;
        o = s->upd_tmp;
        /* Merge the runs (equal rows adjacent in each) and the sums (one per row):
         * each step takes the least row at the heads and sums it wherever it is. */
        for (;;) {
                bool at[READ_RUNS_MAX] = { false }, in_sums = false;
                struct upd row = { 0 };
                const struct upd *min = NULL;
                __int128 sum = 0;

                for (i = 0; i < nr; i++) {
                        int c;

                        if (runs[i].pos == runs[i].end)
                                continue;
                        c = min ? row_cmp(&v[runs[i].pos], min) : -1;
                        if (c < 0) {
                                for (size_t x = 0; x < i; x++)
                                        at[x] = false;
                                min = &v[runs[i].pos];
                        }
                        at[i] = c <= 0;
                }
                if (b < k) {
                        struct upd e = { .row = s->sums[b].row, .len = s->sums[b].len };
                        int c = min ? row_cmp(&e, min) : -1;

                        in_sums = c <= 0;
                        if (c < 0) {
                                for (size_t x = 0; x < nr; x++)
                                        at[x] = false;
                                row = e;
                        } else
                                row = *min;
                } else if (!min)
                        break;
                else
                        row = *min;
                row.diff = 0;
                for (i = 0; i < nr; i++) {
                        if (!at[i])
                                continue;
                        sum += v[runs[i].pos++].diff;
                        while (runs[i].pos < runs[i].end && row_cmp(&v[runs[i].pos], &row) == 0)
                                sum += v[runs[i].pos++].diff;
                }
                if (in_sums)
                        sum += s->sums[b++].sum;
                if (sum < 0 || sum > INT64_MAX) {
                        __int128 mag = sum < 0 ? -sum : sum;

                        set_thread_error("storage: collection %llu at %llu: a row of %u bytes has "
                                         "count %s%llu%s", (unsigned long long)gid,
                                         (unsigned long long)t, row.len, sum < 0 ? "-" : "",
                                         mag > ULLONG_MAX ? ULLONG_MAX : (unsigned long long)mag,
                                         mag > ULLONG_MAX ? " or more" : "");
                        return -EUCLEAN;
                }
                if (sum > 0) {
                        row.diff = (int64_t)sum;
                        o[out++] = row;
                }
        }
        assert(out <= n - m + k);
        /* The result becomes s->upd; the old array is the next call's scratch. */
        s->upd_tmp = s->upd;
        s->upd = o;
        {
                size_t cap = s->cap_upd;

                s->cap_upd = s->cap_upd_tmp;
                s->cap_upd_tmp = cap;
        }
        s->n_upd = out;
        *ret_n = out;
        return 0;
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

/* The scratch of calls (s's, or a merge worker's handle's, NOTE 13). */
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

static size_t gid_hash(uint64_t x)
{
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 33;
        x *= 0xc4ceb9fe1a85ec53ull;
        x ^= x >> 33;
        return (size_t)x;
}

struct collection *storage_map_find(const struct gid_map *m, uint64_t gid)
{
        if (!m->slots)
                return NULL;
        for (size_t i = gid_hash(gid) & m->mask; m->slots[i]; i = (i + 1) & m->mask)
                if (m->slots[i]->gid == gid)
                        return m->slots[i];
        return NULL;
}

static void map_put(struct gid_map *m, struct collection *c)
{
        size_t i = gid_hash(c->gid) & m->mask;

        while (m->slots[i])
                i = (i + 1) & m->mask;
        m->slots[i] = c;
}

/* Room for one more entry, so that storage_map_insert() cannot fail (NOTE 2). */
int storage_map_reserve(struct gid_map *m)
{
        size_t cap = m->slots ? m->mask + 1 : 0, ncap;
        struct collection **old = m->slots;

        if ((m->n + 1) * 2 <= cap)
                return 0;
        ncap = cap ? cap * 2 : MAP_MIN_SLOTS;
        m->slots = calloc(ncap, sizeof(*m->slots));
        if (!m->slots) {
                m->slots = old;
                return -ENOMEM;
        }
        m->mask = ncap - 1;
        for (size_t i = 0; i < cap; i++)
                if (old[i])
                        map_put(m, old[i]);
        free(old);
        return 0;
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
        size_t i = gid_hash(c->gid) & m->mask, j;

        while (m->slots[i] != c) {
                assert(m->slots[i]);
                i = (i + 1) & m->mask;
        }
        m->slots[i] = NULL;
        for (j = (i + 1) & m->mask; m->slots[j]; j = (j + 1) & m->mask) {
                size_t home = gid_hash(m->slots[j]->gid) & m->mask;

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
        /* Readers in other threads read our database (NOTE 15); none waits for us. */
        while (atomic_load_explicit(&s->readers, memory_order_acquire) > 0)
                usleep(200);
        /* A sync in flight finishes first (NOTE 14); a healthy close then flushes the
         * memtables, which makes every write durable anyway. */
        s->syncer = storage_syncer_stop(s->syncer);
        if (s->merge) {
                /* Its write, if it made it, left the disk valid (NOTE 13). */
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

/* ---- Reading (NOTE 10) ------------------------------------------------------------ */

static void frontiers_of(const struct collection *c, struct storage_frontiers *ret)
{
        *ret = (struct storage_frontiers){
                .since = c->since, .upper = c->upper, .physical_since = c->physical_since,
        };
}

/* Collect the chunks of every batch of c with lower <= t, batch by batch (as a merge
 * reads its run, storage_scan_batch()): one scan of the whole key range from lower 0 stepped
 * over the tombstones of every batch that merges took into another -- at 1,000
 * objects, half the controller's time in a polled SELECT * FROM coord_frontiers went to
 * RocksDB skipping them in the memtable.  A run being merged in the background is read
 * as one key range: the disk holds the run or the merged batch (NOTE 13). */
/* The chunks of batches [from, to) of c, fetched by key (NOTE 10), into storage_collect_chunk()
 * in key order.  A key the descriptors name that the database lacks is corruption. */
#define READ_GET_KEYS 256u

static int get_batches(struct storage *s, const struct collection *c, size_t from, size_t to,
                       struct collect *a)
{
        uint8_t keys[READ_GET_KEYS][KEY_CHUNK_LEN];
        const char *key_ptrs[READ_GET_KEYS];
        size_t key_lens[READ_GET_KEYS];
        rocksdb_pinnableslice_t *vals[READ_GET_KEYS];
        char *errs[READ_GET_KEYS];
        uint64_t lowers[READ_GET_KEYS];
        uint32_t parts[READ_GET_KEYS];
        rocksdb_readoptions_t *ro;
        size_t i = from;
        uint32_t part = 0;
        int r = 0;

        if (from >= to)
                return 0;
        ro = rocksdb_readoptions_create();
        if (s->snap)
                rocksdb_readoptions_set_snapshot(ro, s->snap);
        while (r >= 0 && i < to) {
                size_t n = 0;

                while (n < READ_GET_KEYS && i < to) {
                        const struct batch_desc *b = &c->batches[i];

                        if (part >= b->parts) {
                                i++;
                                part = 0;
                                continue;
                        }
                        key_chunk(keys[n], c->gid, b->lower, part);
                        key_ptrs[n] = (const char *)keys[n];
                        key_lens[n] = KEY_CHUNK_LEN;
                        lowers[n] = b->lower;
                        parts[n++] = part++;
                }
                if (n == 0)
                        break;
                rocksdb_batched_multi_get_cf(s->db, ro, s->cf[CF_CHUNKS], n, key_ptrs, key_lens,
                                             vals, errs, true);
                for (size_t k = 0; k < n; k++) {
                        Coord__StorageChunk *ch = NULL;
                        const char *v;
                        size_t vlen;

                        if (errs[k]) {
                                if (r >= 0)
                                        r = storage_rocks_error(errs[k]);
                                else
                                        rocksdb_free(errs[k]);
                        } else if (r >= 0 && !vals[k]) {
                                r = storage_corrupt(c->gid, "a chunk of a batch is missing");
                        } else if (r >= 0) {
                                v = rocksdb_pinnableslice_value(vals[k], &vlen);
                                r = storage_chunk_decode(c->gid, v, vlen, &ch);
                                if (r >= 0)
                                        r = storage_collect_chunk(s, lowers[k], parts[k], vlen,
                                                                  &ch, a);
                                if (ch)
                                        coord__storage_chunk__free_unpacked(ch, NULL);
                        }
                        if (vals[k])
                                rocksdb_pinnableslice_destroy(vals[k]);
                }
        }
        rocksdb_readoptions_destroy(ro);
        return r;
}

/* Collect the chunks of every batch of c with lower <= t, fetched by key (NOTE 10).  A
 * run being merged in the background is read as one key range: the disk holds the run
 * or the merged batch (NOTE 13), so its parts are not known. */
static int read_batches(struct storage *s, struct collection *c, uint64_t t, struct collect *a)
{
        int r = storage_collection_load(s, c);
        size_t i = 0, first = 0;

        for (; r >= 0 && i < c->n_batches && c->batches[i].lower <= t; i++) {
                if (c->merging && i == c->merge_j) {
                        uint64_t to = t + 1;

                        r = get_batches(s, c, first, i, a);
                        if (r < 0)
                                break;
                        if (c->merge_end < c->n_batches && c->batches[c->merge_end].lower < to)
                                to = c->batches[c->merge_end].lower;
                        r = storage_scan_chunks(s, c->gid, c->batches[i].lower, to,
                                                storage_collect_chunk, a);
                        i = c->merge_end - 1;
                        first = c->merge_end;
                }
        }
        if (r >= 0)
                r = get_batches(s, c, first, i, a);
        return r;
}

/* storage_read() past its checks, with s's scratch (a reader's own, NOTE 15). */
static int read_at(struct storage *s, struct collection *c, uint64_t t, storage_row_fn fn,
                   void *userdata)
{
        struct collect a = { .max = t, .advance_to = 0 };
        size_t out = 0;
        int r;

        assert(s->n_upd == 0 && s->n_chunks == 0);
        r = read_batches(s, c, t, &a);
        if (r < 0)
                goto out;
        r = upds_sum_by_row(s, c->gid, t, &out);
        if (r < 0)
                goto out;
        for (size_t i = 0; i < out; i++) {
                r = fn(s->upd[i].row, s->upd[i].len, s->upd[i].diff, userdata);
                if (r < 0)
                        goto out;
        }
        r = 0;
out:
        storage_chunks_release(s);
        return r;
}

int storage_read(struct storage *s, uint64_t gid, uint64_t t, storage_row_fn fn, void *userdata,
                 struct storage_frontiers *ret_frontiers)
{
        struct collection *c;

        if (!s || !fn)
                return -EINVAL;
        c = storage_map_find(&s->map, gid);
        if (!c)
                return -ENOENT;
        if (ret_frontiers)
                frontiers_of(c, ret_frontiers);
        if (t < c->since)
                return -EDOM;
        if (t >= c->upper)
                return -EAGAIN;
        return read_at(s, c, t, fn, userdata);
}

/* ---- Reads off the loop (NOTE 15) ----------------------------------------------------- */

struct storage_reader {
        struct storage *owner;          /* counts us */
        struct storage *w;              /* shadow: own scratch, reads w->snap */
        struct collection c;            /* a copy; c.batches owned, only those read at t */
        uint64_t t;
};

/* The collection a read at t reads, loaded, and how many of its batches it reads. */
static int read_target(struct storage *s, uint64_t gid, uint64_t t, struct collection **ret_c,
                       size_t *ret_n, uint64_t *ret_updates)
{
        struct collection *c;
        uint64_t updates = 0;
        size_t n = 0;
        int r;

        if (!s || s->shadow)
                return -EINVAL;
        c = storage_map_find(&s->map, gid);
        if (!c)
                return -ENOENT;
        if (t < c->since)
                return -EDOM;
        if (t >= c->upper)
                return -EAGAIN;
        r = storage_collection_load(s, c);
        if (r < 0)
                return r;
        while (n < c->n_batches && c->batches[n].lower <= t)
                updates += c->batches[n++].updates;
        *ret_c = c;
        *ret_n = n;
        if (ret_updates)
                *ret_updates = updates;
        return 0;
}

int storage_read_cost(struct storage *s, uint64_t gid, uint64_t t, uint64_t *ret_updates)
{
        struct collection *c;
        size_t n;

        return read_target(s, gid, t, &c, &n, ret_updates);
}

int storage_reader_new(struct storage *s, uint64_t gid, uint64_t t, struct storage_reader **ret)
{
        struct storage_reader *rd = NULL;
        struct collection *c;
        size_t n;
        int r;

        if (!ret)
                return -EINVAL;
        r = read_target(s, gid, t, &c, &n, NULL);
        if (r < 0)
                return r;
        rd = calloc(1, sizeof(*rd));
        if (!rd)
                return -ENOMEM;
        rd->c = (struct collection){ .gid = c->gid, .kind = c->kind, .since = c->since,
                                     .upper = c->upper, .physical_since = c->physical_since,
                                     .loaded = true, .n_batches = n, .cap_batches = n,
                                     .merging = c->merging && c->merge_j < n,
                                     .merge_j = c->merge_j, .merge_end = c->merge_end };
        /* read_batches() clips the merge run at n_batches: keep its end in our copy. */
        if (rd->c.merging && rd->c.merge_end > n)
                rd->c.merge_end = n;
        rd->c.batches = malloc((n ? n : 1) * sizeof(*rd->c.batches));
        rd->w = storage_shadow_new(s);
        if (!rd->c.batches || !rd->w) {
                r = -ENOMEM;
                goto fail;
        }
        memcpy(rd->c.batches, c->batches, n * sizeof(*rd->c.batches));
        rd->w->snap = rocksdb_create_snapshot(s->db);
        rd->owner = s;
        rd->t = t;
        atomic_fetch_add_explicit(&s->readers, 1, memory_order_relaxed);
        *ret = rd;
        return 0;
fail:
        storage_shadow_free(rd->w);
        free(rd->c.batches);
        free(rd);
        return r;
}

int storage_reader_run(struct storage_reader *rd, storage_row_fn fn, void *userdata)
{
        if (!rd || !fn)
                return -EINVAL;
        return read_at(rd->w, &rd->c, rd->t, fn, userdata);
}

struct storage_reader *storage_reader_free(struct storage_reader *rd)
{
        struct storage *s;

        if (!rd)
                return NULL;
        s = rd->owner;
        rocksdb_release_snapshot(s->db, rd->w->snap);
        storage_shadow_free(rd->w);
        free(rd->c.batches);
        free(rd);
        atomic_fetch_sub_explicit(&s->readers, 1, memory_order_release);
        return NULL;
}

struct range {
        uint64_t since, lo, hi;
        storage_update_fn fn;
        void *userdata;
};

static int range_chunk(struct storage *s, uint64_t lower, uint32_t part, size_t bytes,
                       Coord__StorageChunk **chunk, void *userdata)
{
        const struct range *a = userdata;
        const Coord__StorageChunk *ch = *chunk;
        size_t off = 0;
        int r;

        for (size_t i = 0; i < ch->n_times; i++) {
                struct upd u = chunk_upd(ch, i, &off);
                uint64_t t = max_u64(u.time, a->since);

                if (t < a->lo || t >= a->hi)
                        continue;
                r = a->fn(u.row, u.len, t, u.diff, a->userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}

int storage_read_updates(struct storage *s, uint64_t gid, uint64_t lo, uint64_t hi,
                         storage_update_fn fn, void *userdata)
{
        struct range a = { .lo = lo, .hi = hi, .fn = fn, .userdata = userdata };
        struct collection *c;
        uint64_t from = 0;
        int r;

        if (!s || !fn || lo > hi)
                return -EINVAL;
        c = storage_map_find(&s->map, gid);
        if (!c)
                return -ENOENT;
        if (hi > c->upper)
                return -EAGAIN;
        if (lo == hi)
                return 0;
        a.since = c->since;
        if (lo > c->since) {
                /* Times below lo in batches before the one holding lo are all below lo,
                 * also once raised to since < lo: start at that batch (NOTE 4). */
                size_t b_lo = 0, b_hi;

                r = storage_collection_load(s, c);
                if (r < 0)
                        return r;
                b_hi = c->n_batches;
                while (b_lo < b_hi) {
                        size_t mid = b_lo + (b_hi - b_lo) / 2;

                        if (c->batches[mid].upper <= lo)
                                b_lo = mid + 1;
                        else
                                b_hi = mid;
                }
                /* NOTE 13: the disk may hold the run being merged as one batch at
                 * its first lower already. */
                if (c->merging && b_lo > c->merge_j && b_lo < c->merge_end)
                        b_lo = c->merge_j;
                if (b_lo < c->n_batches)
                        from = c->batches[b_lo].lower;
        }
        return storage_scan_chunks(s, gid, from, hi, range_chunk, &a);
}

/* ---- Introspection ---------------------------------------------------------------- */

void storage_info_of(const struct collection *c, struct storage_info *ret)
{
        ret->gid = c->gid;
        ret->kind = c->kind;
        frontiers_of(c, &ret->frontiers);
}

int storage_get_mark(struct storage *s, uint64_t gid, void *buf)
{
        struct collection *c;

        if (!s || !buf)
                return -EINVAL;
        c = storage_map_find(&s->map, gid);
        if (!c)
                return -ENOENT;
        memcpy(buf, c->mark, c->mark_len);
        return c->mark_len;
}

int storage_get_info(struct storage *s, uint64_t gid, struct storage_info *ret)
{
        struct collection *c;

        if (!s || !ret)
                return -EINVAL;
        c = storage_map_find(&s->map, gid);
        if (!c)
                return -ENOENT;
        storage_info_of(c, ret);
        return 0;
}

static int collection_cmp_gid(const void *x, const void *y)
{
        const struct collection *a = *(struct collection *const *)x;
        const struct collection *b = *(struct collection *const *)y;

        return (a->gid > b->gid) - (a->gid < b->gid);
}

/* Every collection, in ascending gid order; the caller frees the array. */
int storage_collections_sorted(const struct storage *s, struct collection ***ret)
{
        struct collection **v;
        size_t n = 0;

        v = malloc((s->map.n ? s->map.n : 1) * sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; s->map.slots && i <= s->map.mask; i++)
                if (s->map.slots[i])
                        v[n++] = s->map.slots[i];
        assert(n == s->map.n);
        if (n > 1)
                qsort(v, n, sizeof(*v), collection_cmp_gid);
        *ret = v;
        return 0;
}

int storage_list(struct storage *s, storage_list_fn fn, void *userdata)
{
        _cleanup_free_ struct collection **v = NULL;
        size_t n;
        int r;

        if (!s || !fn)
                return -EINVAL;
        r = storage_collections_sorted(s, &v);
        if (r < 0)
                return r;
        n = s->map.n;
        for (size_t i = 0; i < n; i++) {
                struct storage_info info;

                storage_info_of(v[i], &info);
                r = fn(&info, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}

int storage_collection_stats(struct storage *s, uint64_t gid, struct storage_collection_stats *ret)
{
        struct collection *c;
        int r;

        if (!s || !ret)
                return -EINVAL;
        c = storage_map_find(&s->map, gid);
        if (!c)
                return -ENOENT;
        r = storage_collection_load(s, c);
        if (r < 0)
                return r;
        *ret = (struct storage_collection_stats){ .batches = c->n_batches };
        for (size_t i = 0; i < c->n_batches; i++) {
                ret->updates += c->batches[i].updates;
                ret->chunks += c->batches[i].parts;
                ret->bytes += c->batches[i].bytes;
        }
        return 0;
}

void storage_get_stats(const struct storage *s, struct storage_stats *ret)
{
        if (!s || !ret)
                return;
        *ret = s->stats;
        ret->collections = s->map.n;
        ret->pending = s->n_pending;
}

uint64_t storage_take_sync_window_max_ns(struct storage *s)
{
        uint64_t ns;

        if (!s)
                return 0;
        ns = s->sync_write_window_max_ns;
        s->sync_write_window_max_ns = 0;
        if (s->syncer) {
                struct syncer *y = s->syncer;

                pthread_mutex_lock(&y->lock);
                if (y->sync_window_max_ns > ns)
                        ns = y->sync_window_max_ns;
                y->sync_window_max_ns = 0;
                pthread_mutex_unlock(&y->lock);
        }
        return ns;
}

void storage_get_io_stats(struct storage *s, struct storage_io_stats *ret)
{
        struct rocks_io_stats io;

        if (!ret)
                return;
        *ret = (struct storage_io_stats){ 0 };
        if (!s || !s->db)
                return;
        rocks_get_io_stats(s->options, &io);
        ret->wal_bytes = io.wal_bytes;
        ret->flush_bytes = io.flush_bytes;
        ret->compact_bytes = io.compact_bytes;
        for (size_t i = 0; i < _CF_MAX; i++)
                rocks_add_cf_size(s->db, s->cf[i], &ret->all);
}

/* ---- storage_check() -------------------------------------------------------------- */

static int check_fail(uint64_t gid, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int check_fail(uint64_t gid, const char *fmt, ...)
{
        char what[200];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        set_thread_error("storage_check: collection %llu: %s", (unsigned long long)gid, what);
        return -EUCLEAN;
}

/* Walks the chunks of one collection in key order against its descriptors. */
struct check {
        const struct collection *c;
        size_t b;                       /* batch of the previous chunk */
        uint32_t next_part;             /* the part the next chunk of batch b must have */
        uint64_t updates, bytes;        /* of batch b so far */
        bool have_prev;
        struct upd prev;                /* previous update of batch b */
        Coord__StorageChunk *prev_chunk;        /* holds prev.row */
        size_t n_chunks;
};

static int check_batch_done(struct check *k)
{
        const struct batch_desc *d = &k->c->batches[k->b];

        if (k->next_part != d->parts || k->updates != d->updates || k->bytes != d->bytes)
                return check_fail(k->c->gid, "batch [%llu, %llu): descriptor says %u chunks, "
                                  "%llu updates, %llu bytes; found %u, %llu, %llu",
                                  (unsigned long long)d->lower, (unsigned long long)d->upper,
                                  d->parts, (unsigned long long)d->updates,
                                  (unsigned long long)d->bytes, k->next_part,
                                  (unsigned long long)k->updates, (unsigned long long)k->bytes);
        return 0;
}

static int check_chunk(struct storage *s, uint64_t lower, uint32_t part, size_t bytes,
                       Coord__StorageChunk **chunk, void *userdata)
{
        struct check *k = userdata;
        const struct collection *c = k->c;
        const struct batch_desc *d;
        Coord__StorageChunk *ch = *chunk;
        size_t off = 0;
        int r;

        /* Find the batch: the chunks come in key order, so it is b or a later one. */
        while (k->b < c->n_batches && c->batches[k->b].lower != lower) {
                if (c->batches[k->b].lower > lower)
                        return check_fail(c->gid, "chunk of no batch at lower %llu",
                                          (unsigned long long)lower);
                r = check_batch_done(k);
                if (r < 0)
                        return r;
                k->b++;
                k->next_part = 0;
                k->updates = k->bytes = 0;
                k->have_prev = false;
        }
        if (k->b == c->n_batches)
                return check_fail(c->gid, "chunk of no batch at lower %llu", (unsigned long long)lower);
        d = &c->batches[k->b];
        if (part != k->next_part)
                return check_fail(c->gid, "batch at %llu: chunk %u where %u was due",
                                  (unsigned long long)lower, part, k->next_part);
        for (size_t i = 0; i < ch->n_times; i++) {
                struct upd u = chunk_upd(ch, i, &off);

                if (u.time < d->since || u.time >= d->upper)
                        return check_fail(c->gid, "batch [%llu, %llu) since %llu holds time %llu",
                                          (unsigned long long)d->lower, (unsigned long long)d->upper,
                                          (unsigned long long)d->since, (unsigned long long)u.time);
                if (u.diff == 0)
                        return check_fail(c->gid, "zero diff at time %llu", (unsigned long long)u.time);
                if (k->have_prev && storage_upd_cmp_time_row(&k->prev, &u) >= 0)
                        return check_fail(c->gid, "updates not sorted and consolidated at time %llu",
                                          (unsigned long long)u.time);
                k->prev = u;
                k->have_prev = true;
        }
        /* Keep the chunk that prev points into. */
        if (k->prev_chunk)
                coord__storage_chunk__free_unpacked(k->prev_chunk, NULL);
        k->prev_chunk = TAKE_PTR(*chunk);
        k->next_part++;
        k->updates += ch->n_times;
        k->bytes += bytes;
        k->n_chunks++;
        return 0;
}

static int check_record(struct storage *s, const struct collection *c)
{
        Coord__StorageCollection *m;
        uint8_t key[KEY_GID_LEN];
        char *err = NULL, *v;
        size_t len;
        bool same;

        be64_put(key, c->gid);
        v = rocksdb_get_cf(s->db, s->read_options, s->cf[CF_COLLECTIONS], (const char *)key,
                           sizeof(key), &len, &err);
        if (err)
                return storage_rocks_error(err);
        if (!v)
                return check_fail(c->gid, "no collection record");
        m = coord__storage_collection__unpack(NULL, len, (const uint8_t *)v);
        rocksdb_free(v);
        if (!m)
                return check_fail(c->gid, "collection record does not decode");
        same = m->gid == c->gid && (int)m->kind == (int)c->kind && m->since == c->since &&
               m->upper == c->upper && m->physical_since == c->physical_since;
        coord__storage_collection__free_unpacked(m, NULL);
        return same ? 0 : check_fail(c->gid, "collection record differs from memory");
}

static bool batch_equal(const struct batch_desc *a, const struct batch_desc *b)
{
        return a->lower == b->lower && a->upper == b->upper && a->since == b->since &&
               a->updates == b->updates && a->parts == b->parts && a->bytes == b->bytes;
}

/* The descriptors on disk equal the ones in memory. */
static int check_batches(struct storage *s, const struct collection *c)
{
        uint8_t lo[KEY_GID_LEN], hi[KEY_END_LEN];
        rocksdb_readoptions_t *ro;
        rocksdb_iterator_t *it;
        size_t i = 0;
        int r = 0;

        be64_put(lo, c->gid);
        key_end(hi, c->gid);
        for (it = storage_iter_new(s, CF_BATCHES, lo, sizeof(lo), hi, sizeof(hi), &ro);
             rocksdb_iter_valid(it); rocksdb_iter_next(it), i++) {
                struct batch_desc d;
                size_t klen, vlen;
                const char *k = rocksdb_iter_key(it, &klen), *v = rocksdb_iter_value(it, &vlen);

                r = storage_batch_decode(c->gid, k, klen, v, vlen, &d);
                if (r < 0)
                        break;
                if (i >= c->n_batches || !batch_equal(&d, &c->batches[i])) {
                        r = check_fail(c->gid, "batch descriptor %zu differs from memory", i);
                        break;
                }
        }
        r = storage_iter_free(it, ro, r);
        if (r == 0 && i != c->n_batches)
                r = check_fail(c->gid, "%zu batch descriptors on disk, %zu in memory", i, c->n_batches);
        return r;
}

static int check_collection(struct storage *s, struct collection *c, uint64_t *n_chunks)
{
        struct check k = { .c = c };
        const char *why;
        int r;

        r = storage_collection_load(s, c);
        if (r < 0)
                return r;
        why = storage_collection_invalid(c);
        if (why)
                return check_fail(c->gid, "%s", why);
        r = check_record(s, c);
        if (r < 0)
                return r;
        r = check_batches(s, c);
        if (r < 0)
                return r;
        r = storage_scan_chunks(s, c->gid, 0, UINT64_MAX, check_chunk, &k);
        if (r == 0 && c->n_batches > 0)
                for (; k.b < c->n_batches; k.b++) {
                        r = check_batch_done(&k);
                        if (r < 0)
                                break;
                        k.next_part = 0;
                        k.updates = k.bytes = 0;
                }
        if (k.prev_chunk)
                coord__storage_chunk__free_unpacked(k.prev_chunk, NULL);
        *n_chunks += k.n_chunks;
        return r;
}

static int count_keys(struct storage *s, int cf, uint64_t *ret)
{
        uint8_t lo[1] = { 0 }, hi[KEY_END_LEN];
        rocksdb_readoptions_t *ro;
        rocksdb_iterator_t *it;
        uint64_t n = 0;
        int r;

        memset(hi, 0xff, sizeof(hi));
        for (it = storage_iter_new(s, cf, lo, 0, hi, sizeof(hi), &ro); rocksdb_iter_valid(it);
             rocksdb_iter_next(it))
                n++;
        r = storage_iter_free(it, ro, 0);
        *ret = n;
        return r;
}

int storage_check(struct storage *s)
{
        _cleanup_free_ struct collection **v = NULL;
        uint64_t batches = 0, chunks = 0, n_keys[_CF_MAX] = { 0 };
        int r;

        if (!s)
                return -EINVAL;
        r = storage_merge_finish(s, true, NULL, NULL);
        if (r < 0)
                return r;
        /* The disk is compared with memory, which shows the deferred changes. */
        if (s->err == 0 && s->n_def > 0) {
                r = storage_flush_deferred(s);
                if (r < 0)
                        return r;
        }
        r = storage_collections_sorted(s, &v);
        if (r < 0)
                return r;
        for (size_t i = 0; i < s->map.n; i++) {
                r = check_collection(s, v[i], &chunks);
                if (r < 0)
                        return r;
                batches += v[i]->n_batches;
        }
        /* Every key belongs to a collection: with the exact per-collection checks
         * above, equal counts leave no room for strays. */
        for (int cf = CF_COLLECTIONS; cf < _CF_MAX; cf++) {
                r = count_keys(s, cf, &n_keys[cf]);
                if (r < 0)
                        return r;
        }
        if (n_keys[CF_COLLECTIONS] != s->map.n || n_keys[CF_BATCHES] != batches ||
            n_keys[CF_CHUNKS] != chunks) {
                set_thread_error("storage_check: %llu/%llu/%llu keys, expected %zu/%llu/%llu",
                                 (unsigned long long)n_keys[CF_COLLECTIONS],
                                 (unsigned long long)n_keys[CF_BATCHES],
                                 (unsigned long long)n_keys[CF_CHUNKS], s->map.n,
                                 (unsigned long long)batches, (unsigned long long)chunks);
                return -EUCLEAN;
        }
        return 0;
}
