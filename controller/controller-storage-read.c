/* controller-storage-read.c -- reading storage collections: reads at t (summed per
 * row), reads off the loop in another thread, range reads, and introspection.
 *
 * Contract: controller-storage.h; what the module's files share:
 * controller-storage-internal.h.  The notes are numbered across the module
 * (controller-storage.c lists where each stands).
 *
 * NOTES ON THE DESIGN
 *
 * (10) Reads at t consolidate in memory: every update with time <= t, summed per row in
 *     128 bits, rows in byte order; a negative or overflowing sum is -EUCLEAN and no row
 *     is emitted.  Runs already in row order are merged as they are; the updates outside
 *     them are summed in a hash table first, so those that cancel are never sorted
 *     (upds_sum_by_row()).  A range read streams chunk by chunk in key order, which is
 *     time order (4), reporting times below since at since.  The chunks of a read at t
 *     are fetched by key (read_batches(): READ_GET_KEYS at a time,
 *     rocksdb_batched_multi_get_cf(), keys sorted), never by an iterator stepping over
 *     the tombstones merges leave between batches.
 *
 * (15) Reads off the loop (storage_reader_new()).  storage_reader_new() takes, on the
 *     loop thread, everything a read at t needs: a copy of the collection's descriptors
 *     with lower <= t (and of the merge run's bounds,
 *     controller-storage-compact.c NOTE 13) and a RocksDB snapshot.
 *     storage_reader_run() then reads in any thread through a handle of its own
 *     (storage_shadow_new()) exactly what storage_read() would have
 *     read when the reader was made: later appends lie above t, and the snapshot keeps
 *     every chunk key the copied descriptors name though a compaction or merge deletes it
 *     (a compaction changes no read at t >= since (5); the caller's execution hold keeps
 *     since <= t).  storage_close() waits until the handle's last reader is freed.
 */
#include "controller-storage.h"
#include "controller-storage-internal.h"

#include <assert.h>
#include <limits.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage.pb-c.h"
#include "rocks.h"
#include "util.h"

/* ---- Reading (NOTE 10) ------------------------------------------------------------ */

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
 * as one key range: the disk holds the run or the merged batch (controller-storage-compact.c NOTE 13). */
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
 * or the merged batch (controller-storage-compact.c NOTE 13), so its parts are not known. */
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
                 * also once raised to since < lo: start at that batch (controller-storage.c NOTE 4). */
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
                /* controller-storage-compact.c NOTE 13: the disk may hold the run being merged as one batch at
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
