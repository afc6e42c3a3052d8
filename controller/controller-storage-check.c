/* controller-storage-check.c -- storage_check(): every invariant of the storage
 * module's notes, checked against the disk.
 *
 * Contract: controller-storage.h; what the module's files share:
 * controller-storage-internal.h.  The notes are numbered across the module
 * (controller-storage.c lists where each stands).
 */
#include "controller-storage.h"
#include "controller-storage-internal.h"

#include <rocksdb/c.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "storage.pb-c.h"
#include "util.h"

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
