/* catalog-read.c -- reading the catalog store: point reads, scans (one range, several
 * ranges on threads at once, the state's items split at a GlobalId), the meta records,
 * the handle's state and counters; and following the primary from a secondary
 * (catalog_catch_up(), the log iterator).
 *
 * What the store's files share is catalog-internal.h; the other notes are catalog.c
 * notes 1 to 5, 7 and 8.
 *
 * NOTES ON THE DESIGN
 * (6) A secondary never writes.  catalog_catch_up() replays the primary's new WAL
 *     records and MANIFEST edits; whole WriteBatches become visible at once, so a
 *     follower sees the states between groups, never inside one.  It may see a group
 *     that is not durable yet (RocksDB gets a group while the sync log's write-back of
 *     it runs; without the sync log, RocksDB write()s the record, then syncs it): such
 *     a group survives a kill -9 of the primary (it is in the page cache) and is lost
 *     only with the machine, which takes a follower on it down too.  Opened with
 *     max_file_opening_threads = 1: catching up then costs ~22 us instead of ~450 us
 *     (DESIGN section 11).
 */
#include "catalog-internal.h"

#include <assert.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "probes.h"
#include "rocks.h"
#include "synclog.h"
#include "util.h"

/* ---- Reading ------------------------------------------------------------------- */

int catalog_get(struct catalog *c, enum catalog_cf cf, const void *key, size_t key_len,
                void **ret_value, size_t *ret_len)
{
        rocksdb_pinnableslice_t *ps;
        const char *v;
        char *err = NULL, *p = NULL;
        size_t len;
        int r;

        if (!c || cf < 0 || cf >= _CATALOG_CF_MAX || !key || key_len == 0)
                return -EINVAL;
        r = sticky_error(c);
        if (r < 0)
                return r;

        ps = rocksdb_get_pinned_cf(c->db, c->read_options, c->cf[cf_index(cf)], key, key_len,
                                   &err);
        if (err)
                return rocks_error(err);
        if (!ps)
                return -ENOENT;
        v = rocksdb_pinnableslice_value(ps, &len);
        if (ret_value) {
                p = malloc(len + 1);
                if (!p) {
                        rocksdb_pinnableslice_destroy(ps);
                        return -ENOMEM;
                }
                memcpy(p, v, len);
                p[len] = 0;
                *ret_value = p;
        }
        rocksdb_pinnableslice_destroy(ps);
        if (ret_len)
                *ret_len = len;
        return 0;
}

/* catalog_scan()'s read-ahead. */
#define SCAN_READAHEAD (2u << 20)

/* Does key lie past hi (or outside prefix)? */
static bool scan_done(const char *k, size_t klen, const void *prefix, size_t prefix_len,
                      const void *hi, size_t hi_len)
{
        if (prefix_len)
                return klen < prefix_len || memcmp(k, prefix, prefix_len) != 0;
        if (hi_len) {
                int c = memcmp(k, hi, klen < hi_len ? klen : hi_len);

                return c > 0 || (c == 0 && klen >= hi_len);
        }
        return false;
}

static int scan(struct catalog *c, enum catalog_cf cf, const void *seek, size_t seek_len,
                const void *prefix, size_t prefix_len, const void *hi, size_t hi_len,
                int (*fn)(const void *key, size_t key_len, const void *value, size_t value_len,
                          void *userdata),
                void *userdata);

int catalog_scan(struct catalog *c, enum catalog_cf cf, const void *prefix, size_t prefix_len,
                 int (*fn)(const void *key, size_t key_len, const void *value,
                           size_t value_len, void *userdata),
                 void *userdata)
{
        if (prefix_len && !prefix)
                return -EINVAL;
        return scan(c, cf, prefix, prefix_len, prefix, prefix_len, NULL, 0, fn, userdata);
}

int catalog_scan_range(struct catalog *c, enum catalog_cf cf, const void *lo, size_t lo_len,
                       const void *hi, size_t hi_len,
                       int (*fn)(const void *key, size_t key_len, const void *value,
                                 size_t value_len, void *userdata),
                       void *userdata)
{
        if ((lo_len && !lo) || (hi_len && !hi))
                return -EINVAL;
        return scan(c, cf, lo, lo_len, NULL, 0, hi, hi_len, fn, userdata);
}

struct scan_thread {
        struct catalog *c;
        struct catalog_scan_job *job;
};

static void *scan_job_run(void *userdata)
{
        struct scan_thread *t = userdata;
        struct catalog_scan_job *j = t->job;

        j->r = catalog_scan_range(t->c, j->cf, j->lo, j->lo_len, j->hi, j->hi_len, j->fn, j->userdata);
        return NULL;
}

int catalog_scan_ranges(struct catalog *c, struct catalog_scan_job *jobs, size_t n)
{
        struct scan_thread t[CATALOG_SCAN_JOBS_MAX];
        pthread_t th[CATALOG_SCAN_JOBS_MAX];
        bool started[CATALOG_SCAN_JOBS_MAX] = { false };

        if (!c || (n && !jobs) || n > CATALOG_SCAN_JOBS_MAX)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                t[i] = (struct scan_thread){ c, &jobs[i] };
        for (size_t i = 1; i < n; i++)
                started[i] = thread_start(&th[i], "catalog-scan", scan_job_run, &t[i]) == 0;
        if (n)
                scan_job_run(&t[0]);
        for (size_t i = 1; i < n; i++) {
                if (started[i])
                        pthread_join(th[i], NULL);
                else
                        scan_job_run(&t[i]);    /* no thread: here, after the others */
        }
        for (size_t i = 0; i < n; i++)
                if (jobs[i].r < 0)
                        return jobs[i].r;
        return 0;
}

int catalog_scan_state(struct catalog *c, uint64_t mid_gid, const struct catalog_state_scan *sc)
{
        static const uint8_t lo[1] = { CATALOG_STATE_ITEM }, hi[1] = { CATALOG_STATE_ITEM + 1 };
        static const uint8_t b[2] = { CATALOG_STATE_BOUND, CATALOG_STATE_BOUND + 1 };
        static const uint8_t q[2] = { CATALOG_STATE_REQ, CATALOG_STATE_REQ + 1 };
        uint8_t mid[1 + SEQ_KEY_LEN];

        if (!sc || !sc->item || !sc->bound || !sc->req)
                return -EINVAL;
        mid[0] = CATALOG_STATE_ITEM;
        be64_put(mid + 1, mid_gid);
        {
                struct catalog_scan_job jobs[4] = {
                        { CATALOG_CF_STATE, lo, mid, 1, sizeof(mid), sc->item, sc->items_lo, 0 },
                        { CATALOG_CF_STATE, mid, hi, sizeof(mid), 1, sc->item, sc->items_hi, 0 },
                        { CATALOG_CF_STATE, &b[0], &b[1], 1, 1, sc->bound, sc->bounds, 0 },
                        { CATALOG_CF_STATE, &q[0], &q[1], 1, 1, sc->req, sc->reqs, 0 },
                };

                return catalog_scan_ranges(c, jobs, ELEMENTSOF(jobs));
        }
}

static int scan(struct catalog *c, enum catalog_cf cf, const void *seek, size_t seek_len,
                const void *prefix, size_t prefix_len, const void *hi, size_t hi_len,
                int (*fn)(const void *key, size_t key_len, const void *value, size_t value_len,
                          void *userdata),
                void *userdata)
{
        rocksdb_readoptions_t *ro;
        rocksdb_iterator_t *it;
        char *err = NULL;
        int r;

        if (!c || cf < 0 || cf >= _CATALOG_CF_MAX || !fn)
                return -EINVAL;
        r = sticky_error(c);
        if (r < 0)
                return r;
        /* The iterator pins an implicit snapshot: commits during the scan are not seen.
         * A scan reads a range once, front to back (the adapter loads 400,000 records
         * at start): read ahead in large reads, and keep its blocks out of the block
         * cache, where they would only displace what point reads use. */
        ro = rocksdb_readoptions_create();
        if (!ro)
                return -ENOMEM;
        rocksdb_readoptions_set_readahead_size(ro, SCAN_READAHEAD);
        rocksdb_readoptions_set_fill_cache(ro, 0);
        it = rocksdb_create_iterator_cf(c->db, ro, c->cf[cf_index(cf)]);
        if (seek_len)
                rocksdb_iter_seek(it, seek, seek_len);
        else
                rocksdb_iter_seek_to_first(it);
        for (; rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
                size_t klen, vlen;
                const char *k = rocksdb_iter_key(it, &klen);
                const char *v = rocksdb_iter_value(it, &vlen);

                if (scan_done(k, klen, prefix, prefix_len, hi, hi_len))
                        break;
                r = fn(k, klen, v, vlen, userdata);
                if (r < 0)
                        goto out;
        }
        rocksdb_iter_get_error(it, &err);
        if (err)
                r = rocks_error(err);
out:
        rocksdb_iter_destroy(it);
        rocksdb_readoptions_destroy(ro);
        return r;
}

int catalog_meta_get(struct catalog *c, const char *key, void **ret_value, size_t *ret_len)
{
        return catalog_get(c, CATALOG_CF_META, key, key ? strlen(key) : 0, ret_value, ret_len);
}

/* *v, a field of c guarded by c->lock, read under it; with take, left 0. */
static uint64_t locked_u64(struct catalog *c, uint64_t *v, bool take)
{
        uint64_t x;

        pthread_mutex_lock(&c->lock);
        x = *v;
        if (take)
                *v = 0;
        pthread_mutex_unlock(&c->lock);
        return x;
}

uint64_t catalog_last_seq(struct catalog *c)
{
        return c ? locked_u64(c, &c->last_seq, false) : 0;
}

int catalog_error(struct catalog *c)
{
        if (!c)
                return -EINVAL;
        return sticky_error(c);
}

bool catalog_error_written(struct catalog *c)
{
        bool w;

        if (!c)
                return false;
        pthread_mutex_lock(&c->lock);
        w = c->err < 0 && c->err_written;
        pthread_mutex_unlock(&c->lock);
        return w;
}

void catalog_set_commit_hook(struct catalog *c, catalog_commit_hook_fn fn, void *userdata)
{
        assert(c);
        pthread_mutex_lock(&c->lock);
        c->hook = fn;
        c->hook_userdata = userdata;
        pthread_mutex_unlock(&c->lock);
}

void catalog_get_stats(struct catalog *c, struct catalog_stats *ret)
{
        assert(ret);
        if (!c) {
                *ret = (struct catalog_stats){ 0 };
                return;
        }
        pthread_mutex_lock(&c->lock);
        *ret = c->stats;
        pthread_mutex_unlock(&c->lock);
        ret->waits_yielded = __atomic_load_n(&c->waits_yielded, __ATOMIC_RELAXED);
        ret->waits_slept = __atomic_load_n(&c->waits_slept, __ATOMIC_RELAXED);
}

void catalog_set_wait_spin(struct catalog *c, uint64_t max_ns)
{
        if (!c)
                return;
        pthread_mutex_lock(&c->lock);
        c->spin_max_ns = max_ns;
        pthread_mutex_unlock(&c->lock);
}

uint64_t catalog_take_sync_window_max_ns(struct catalog *c)
{
        return c ? locked_u64(c, &c->sync_window_max_ns, true) : 0;
}

void catalog_get_io_stats(struct catalog *c, struct catalog_io_stats *ret)
{
        struct rocks_io_stats io;

        assert(ret);
        *ret = (struct catalog_io_stats){ 0 };
        if (!c || !c->db)
                return;
        /* RocksDB's statistics and properties are thread-safe: no c->lock. */
        rocks_get_io_stats(c->options, &io);
        ret->wal_bytes = io.wal_bytes;
        if (c->synclog) {
                struct synclog_stats ss;

                synclog_get_stats(c->synclog, &ss);
                ret->synclog_bytes = ss.bytes;
                ret->synclog_store_syncs = ss.store_syncs;
                ret->synclog_waits = ss.waits;
        }
        ret->flush_bytes = io.flush_bytes;
        ret->compact_bytes = io.compact_bytes;
        rocks_add_cf_size(c->db, c->cf[CF_STATE], &ret->state);
        rocks_add_cf_size(c->db, c->cf[CF_META], &ret->state);
        rocks_add_cf_size(c->db, c->cf[CF_LOG], &ret->log);
}

/* ---- Following ----------------------------------------------------------------- */

int catalog_catch_up(struct catalog *c)
{
        uint64_t seq = 0;
        char *err = NULL;
        int r;

        if (!c || !c->secondary)
                return -EINVAL;
        /* Serialized, so that last_seq is read from the state just caught up (NOTE 6);
         * a failure leaves the previous view in place and is not sticky. */
        pthread_mutex_lock(&c->lock);
        rocksdb_try_catch_up_with_primary(c->db, &err);
        if (err)
                r = rocks_error(err);
        else
                r = read_meta_last_seq(c, &seq);  /* agrees with the log: catalog.c NOTE 3 */
        if (r == 0 && seq < c->last_seq) {
                set_thread_error("catalog: primary went back from seq %llu to %llu",
                                 (unsigned long long)c->last_seq, (unsigned long long)seq);
                r = -EBADMSG;
        }
        if (r == 0)
                c->last_seq = seq;
        pthread_mutex_unlock(&c->lock);
        if (r == 0)
                COORD_CATALOG_CATCHUP(seq);
        return r;
}

int catalog_log_iter_new(struct catalog *c, uint64_t after_seq, struct catalog_log_iter **ret)
{
        struct catalog_log_iter *it;
        uint8_t key[SEQ_KEY_LEN];
        int r;

        if (!c || !ret)
                return -EINVAL;
        r = sticky_error(c);
        if (r < 0)
                return r;
        it = calloc(1, sizeof(*it));
        if (!it)
                return -ENOMEM;
        it->c = c;
        it->next_seq = after_seq + 1;
        /* The iterator pins an implicit snapshot: later commits are not seen. */
        it->it = rocksdb_create_iterator_cf(c->db, c->read_options, c->cf[CF_LOG]);
        /* Nothing follows UINT64_MAX: an iterator never positioned is at its end. */
        if (after_seq < UINT64_MAX) {
                be64_put(key, it->next_seq);
                rocksdb_iter_seek(it->it, (const char *)key, sizeof(key));
        }
        pthread_mutex_lock(&c->lock);
        c->n_iters++;
        pthread_mutex_unlock(&c->lock);
        *ret = it;
        return 0;
}

int catalog_log_next(struct catalog_log_iter *it, Coord__CatalogTxn **ret_txn)
{
        Coord__CatalogTxn *txn;
        const char *k, *v;
        char *err = NULL;
        size_t klen, vlen;
        uint64_t seq;
        int r;

        if (!it || !ret_txn)
                return -EINVAL;
        r = sticky_error(it->c);
        if (r < 0)
                return r;
        if (!rocksdb_iter_valid(it->it)) {
                rocksdb_iter_get_error(it->it, &err);
                return err ? rocks_error(err) : 0;
        }

        k = rocksdb_iter_key(it->it, &klen);
        if (klen != SEQ_KEY_LEN) {
                set_thread_error("catalog: bad log key (%zu bytes)", klen);
                return -EBADMSG;
        }
        seq = be64_get((const uint8_t *)k);
        if (seq != it->next_seq) {
                set_thread_error("catalog: log has seq %llu where %llu was expected",
                                 (unsigned long long)seq, (unsigned long long)it->next_seq);
                return -EBADMSG;
        }
        v = rocksdb_iter_value(it->it, &vlen);
        txn = coord__catalog_txn__unpack(NULL, vlen, (const uint8_t *)v);
        if (!txn) {
                set_thread_error("catalog: log entry %llu does not decode",
                                 (unsigned long long)seq);
                return -EBADMSG;
        }
        if (txn->seq != seq) {
                set_thread_error("catalog: log entry %llu carries seq %llu",
                                 (unsigned long long)seq, (unsigned long long)txn->seq);
                coord__catalog_txn__free_unpacked(txn, NULL);
                return -EBADMSG;
        }
        rocksdb_iter_next(it->it);
        it->next_seq++;
        *ret_txn = txn;
        return 1;
}

struct catalog_log_iter *catalog_log_iter_free(struct catalog_log_iter *it)
{
        if (!it)
                return NULL;
        if (it->it)
                rocksdb_iter_destroy(it->it);
        pthread_mutex_lock(&it->c->lock);
        assert(it->c->n_iters > 0);
        it->c->n_iters--;
        pthread_mutex_unlock(&it->c->lock);
        free(it);
        return NULL;
}
