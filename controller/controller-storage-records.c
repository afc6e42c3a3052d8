/* controller-storage-records.c -- the records of storage collections (collection
 * records, batch descriptors, chunks: their encoding into s->wb and their decoding)
 * and the iterators and scans that read them back.
 *
 * Contract: controller-storage.h; what the module's files share:
 * controller-storage-internal.h.  The notes are numbered across the module
 * (controller-storage.c lists where each stands).
 */
#include "controller-storage.h"
#include "controller-storage-internal.h"

#include <assert.h>
#include <rocksdb/c.h>
#include <string.h>

#include "storage.pb-c.h"
#include "util.h"

#define RECORD_MAX 96                           /* encoded collection record or descriptor */

#define CHUNK_MAX_BYTES (256u << 10)            /* of row bytes; one longer row is alone */

/* ---- Records ---------------------------------------------------------------------- */

/* c's record with these frontiers and its mark, or `mark` when it is not NULL. */
void storage_put_collection_mark(struct storage *s, const struct collection *c, uint64_t since,
                                 uint64_t upper, uint64_t physical_since, const uint8_t *mark,
                                 size_t mark_len)
{
        Coord__StorageCollection m = COORD__STORAGE_COLLECTION__INIT;
        uint8_t key[KEY_GID_LEN], val[RECORD_MAX];
        size_t len;

        m.gid = c->gid;
        m.kind = (Coord__StorageKind)c->kind;
        m.since = since;
        m.upper = upper;
        m.physical_since = physical_since;
        m.mark.data = (uint8_t *)(mark ? mark : c->mark);
        m.mark.len = mark ? mark_len : c->mark_len;
        len = coord__storage_collection__get_packed_size(&m);
        assert(len <= sizeof(val));
        coord__storage_collection__pack(&m, val);
        be64_put(key, c->gid);
        rocksdb_writebatch_put_cf(s->wb, s->cf[CF_COLLECTIONS], (const char *)key, sizeof(key),
                                  (const char *)val, len);
}

void storage_put_collection(struct storage *s, const struct collection *c, uint64_t since,
                            uint64_t upper, uint64_t physical_since)
{
        storage_put_collection_mark(s, c, since, upper, physical_since, NULL, 0);
}

void storage_put_batch(struct storage *s, uint64_t gid, const struct batch_desc *b)
{
        Coord__StorageBatch m = COORD__STORAGE_BATCH__INIT;
        uint8_t key[KEY_BATCH_LEN], val[RECORD_MAX];
        size_t len;

        m.lower = b->lower;
        m.upper = b->upper;
        m.since = b->since;
        m.updates = b->updates;
        m.parts = b->parts;
        m.bytes = b->bytes;
        len = coord__storage_batch__get_packed_size(&m);
        assert(len <= sizeof(val));
        coord__storage_batch__pack(&m, val);
        key_batch(key, gid, b->lower);
        rocksdb_writebatch_put_cf(s->wb, s->cf[CF_BATCHES], (const char *)key, sizeof(key),
                                  (const char *)val, len);
}

void storage_delete_batch(struct storage *s, uint64_t gid, uint64_t lower)
{
        uint8_t key[KEY_BATCH_LEN];

        key_batch(key, gid, lower);
        rocksdb_writebatch_delete_cf(s->wb, s->cf[CF_BATCHES], (const char *)key, sizeof(key));
}

void storage_delete_chunks(struct storage *s, uint64_t gid, uint64_t lower, uint32_t from,
                           uint32_t to)
{
        uint8_t key[KEY_CHUNK_LEN];

        for (uint32_t part = from; part < to; part++) {
                key_chunk(key, gid, lower, part);
                rocksdb_writebatch_delete_cf(s->wb, s->cf[CF_CHUNKS], (const char *)key, sizeof(key));
        }
}

/* Write v[0..n) (sorted, consolidated) as the chunks of the batch at lower, parts from
 * 0 on, into s->wb. */
int storage_put_chunks(struct storage *s, uint64_t gid, uint64_t lower, const struct upd *v,
                       size_t n, uint32_t *ret_parts, uint64_t *ret_bytes)
{
        Coord__StorageChunk ch = COORD__STORAGE_CHUNK__INIT;
        uint8_t key[KEY_CHUNK_LEN];
        uint64_t bytes = 0;
        uint32_t part = 0;
        int r;

        for (size_t i = 0, k; i < n; i += k) {
                size_t row_bytes = 0, len;
                uint8_t *p;

                for (k = 0; i + k < n && k < CHUNK_MAX_UPDATES; k++) {
                        if (k > 0 && row_bytes + v[i + k].len > CHUNK_MAX_BYTES)
                                break;
                        row_bytes += v[i + k].len;
                }
                if (part == UINT32_MAX)
                        return -EFBIG;
                r = GROW_ARRAY(s->rows_buf, s->cap_rows, row_bytes);
                if (r < 0)
                        return r;
                p = s->rows_buf;
                for (size_t x = 0; x < k; x++) {
                        const struct upd *u = &v[i + x];

                        if (u->len) {
                                memcpy(p, u->row, u->len);
                                p += u->len;
                        }
                        s->chunk_lens[x] = u->len;
                        s->chunk_times[x] = u->time;
                        s->chunk_diffs[x] = u->diff;
                }
                ch.rows.data = s->rows_buf;
                ch.rows.len = row_bytes;
                ch.n_row_lens = ch.n_times = ch.n_diffs = k;
                ch.row_lens = s->chunk_lens;
                ch.times = s->chunk_times;
                ch.diffs = s->chunk_diffs;
                len = coord__storage_chunk__get_packed_size(&ch);
                r = GROW_ARRAY(s->pack_buf, s->cap_pack, len);
                if (r < 0)
                        return r;
                coord__storage_chunk__pack(&ch, s->pack_buf);
                key_chunk(key, gid, lower, part++);
                rocksdb_writebatch_put_cf(s->wb, s->cf[CF_CHUNKS], (const char *)key, sizeof(key),
                                          (const char *)s->pack_buf, len);
                bytes += len;
        }
        *ret_parts = part;
        *ret_bytes = bytes;
        return 0;
}

int storage_chunk_decode(uint64_t gid, const char *val, size_t len, Coord__StorageChunk **ret)
{
        Coord__StorageChunk *ch = coord__storage_chunk__unpack(NULL, len, (const uint8_t *)val);
        uint64_t total = 0;

        if (!ch)
                return storage_corrupt(gid, "chunk does not decode");
        if (ch->n_row_lens == 0 || ch->n_times != ch->n_row_lens || ch->n_diffs != ch->n_row_lens)
                goto bad;
        for (size_t i = 0; i < ch->n_row_lens; i++)
                total += ch->row_lens[i];
        if (total != ch->rows.len)
                goto bad;
        *ret = ch;
        return 0;
bad:
        coord__storage_chunk__free_unpacked(ch, NULL);
        return storage_corrupt(gid, "chunk columns disagree");
}

int storage_batch_decode(uint64_t gid, const char *key, size_t klen, const char *val,
                         size_t vlen, struct batch_desc *ret)
{
        Coord__StorageBatch *m;

        if (klen != KEY_BATCH_LEN || be64_get((const uint8_t *)key) != gid)
                return storage_corrupt(gid, "malformed batch key");
        m = coord__storage_batch__unpack(NULL, vlen, (const uint8_t *)val);
        if (!m)
                return storage_corrupt(gid, "batch descriptor does not decode");
        *ret = (struct batch_desc){
                .lower = m->lower, .upper = m->upper, .since = m->since,
                .updates = m->updates, .parts = m->parts, .bytes = m->bytes,
        };
        coord__storage_batch__free_unpacked(m, NULL);
        if (ret->lower != be64_get((const uint8_t *)key + 8))
                return storage_corrupt(gid, "batch key and lower differ");
        return 0;
}

/* ---- Iteration -------------------------------------------------------------------- */

/* An iterator over [lo, hi) of one column family; the keys must outlive it. */
rocksdb_iterator_t *storage_iter_new(struct storage *s, int cf, const uint8_t *lo, size_t lo_len,
                                     const uint8_t *hi, size_t hi_len, rocksdb_readoptions_t **ret_ro)
{
        rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
        rocksdb_iterator_t *it;

        rocksdb_readoptions_set_iterate_lower_bound(ro, (const char *)lo, lo_len);
        rocksdb_readoptions_set_iterate_upper_bound(ro, (const char *)hi, hi_len);
        if (s->snap)
                rocksdb_readoptions_set_snapshot(ro, s->snap);
        it = rocksdb_create_iterator_cf(s->db, ro, s->cf[cf]);
        rocksdb_iter_seek(it, (const char *)lo, lo_len);
        *ret_ro = ro;
        return it;
}

int storage_iter_free(rocksdb_iterator_t *it, rocksdb_readoptions_t *ro, int r)
{
        char *err = NULL;

        if (r >= 0) {
                rocksdb_iter_get_error(it, &err);
                if (err)
                        r = storage_rocks_error(err);
        }
        rocksdb_iter_destroy(it);
        rocksdb_readoptions_destroy(ro);
        return r;
}

/* Decode gid's chunks with keys in [lo, hi), in key order. */
static int scan_keys(struct storage *s, uint64_t gid, const uint8_t *lo, size_t lo_len,
                     const uint8_t *hi, size_t hi_len, chunk_fn fn, void *userdata)
{
        rocksdb_readoptions_t *ro;
        rocksdb_iterator_t *it;
        int r = 0;

        for (it = storage_iter_new(s, CF_CHUNKS, lo, lo_len, hi, hi_len, &ro);
             rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
                Coord__StorageChunk *ch = NULL;
                size_t klen, vlen;
                const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &klen);
                const char *v = rocksdb_iter_value(it, &vlen);

                if (klen != KEY_CHUNK_LEN) {
                        r = storage_corrupt(gid, "malformed chunk key");
                        break;
                }
                r = storage_chunk_decode(gid, v, vlen, &ch);
                if (r < 0)
                        break;
                r = fn(s, be64_get(k + 8), be32_get(k + 16), vlen, &ch, userdata);
                if (ch)
                        coord__storage_chunk__free_unpacked(ch, NULL);
                if (r < 0)
                        break;
        }
        return storage_iter_free(it, ro, r);
}

/* The chunks of the batches with lower in [from, to), in key order (controller-storage.c NOTE 4). */
int storage_scan_chunks(struct storage *s, uint64_t gid, uint64_t from, uint64_t to, chunk_fn fn,
                        void *userdata)
{
        uint8_t lo[KEY_BATCH_LEN], hi[KEY_BATCH_LEN];

        if (from >= to)
                return 0;
        key_batch(lo, gid, from);
        key_batch(hi, gid, to);
        return scan_keys(s, gid, lo, sizeof(lo), hi, sizeof(hi), fn, userdata);
}

/* The chunks of one batch, and no other key: a merge reads its run batch by batch, so
 * that it never steps over the deleted chunk keys between them -- those of the
 * batches that earlier merges took into the run's first batch, whose tombstones
 * RocksDB keeps until its own compaction drops them (issue 6: a coord_frontiers merge
 * of a few hundred updates walked thousands of them in the memtable). */
int storage_scan_batch(struct storage *s, uint64_t gid, const struct batch_desc *b, chunk_fn fn,
                       void *userdata)
{
        uint8_t lo[KEY_CHUNK_LEN], hi[KEY_CHUNK_LEN];

        if (b->parts == 0)
                return 0;
        key_chunk(lo, gid, b->lower, 0);
        key_chunk(hi, gid, b->lower, b->parts);
        return scan_keys(s, gid, lo, sizeof(lo), hi, sizeof(hi), fn, userdata);
}

int storage_collect_chunk(struct storage *s, uint64_t lower, uint32_t part, size_t bytes,
                          Coord__StorageChunk **chunk, void *userdata)
{
        const struct collect *a = userdata;
        Coord__StorageChunk *ch = *chunk;
        size_t off = 0;
        int r;

        r = GROW_ARRAY(s->chunks, s->cap_chunks, s->n_chunks + 1);
        if (r < 0)
                return r;
        r = GROW_ARRAY(s->upd, s->cap_upd, s->n_upd + ch->n_times);
        if (r < 0)
                return r;
        s->chunks[s->n_chunks++] = TAKE_PTR(*chunk);
        for (size_t i = 0; i < ch->n_times; i++) {
                struct upd u = chunk_upd(ch, i, &off);

                if (u.time > a->max)
                        continue;
                u.time = max_u64(u.time, a->advance_to);
                s->upd[s->n_upd++] = u;
        }
        return 0;
}
