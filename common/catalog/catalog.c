/* catalog.c -- the durable catalog store over RocksDB's C API (contract: catalog.h).
 *
 * The adapter is the only writer and commits through catalog_commit() from any of its
 * threads; the lifecycle follower reads a RocksDB secondary instance of the same files
 * and replays the log from its cursor.
 *
 * NOTES ON THE DESIGN
 *
 * (1) A commit group (one or more transactions) is written as ONE RocksDB WriteBatch:
 *     every transaction's state and meta changes and its log entry under its sequence
 *     number, and once per group the meta record "last_seq" = the group's highest
 *     sequence number.  The batch is one record of the sync log (8), written to RocksDB
 *     without a sync; or (sync log off, or a batch too big for a segment) written to
 *     RocksDB with sync = true.  Either record is replayed whole or not at all (crc
 *     checks, point-in-time recovery), so after a crash a group -- and each of its
 *     transactions -- is wholly present or wholly absent.
 *
 * (2) Nothing is acknowledged before it is durable: catalog_commit() returns 0 only
 *     after the sync log's fdatasync of its group (or the synced rocksdb_write()) and
 *     the rocksdb_write() carrying it returned OK (I7).
 *
 * (3) Sequence numbers are dense.  At most one group is being written at a time (its
 *     leader owns the write path, see catalog-write.c, GROUP COMMIT); the leader
 *     numbers the transactions last_seq + 1, last_seq + 2, ... and c->last_seq moves
 *     to the highest one only
 *     after the write succeeded.  Hence the log keys are 1..last_seq without gaps, and
 *     the "last_seq" meta record always equals the highest log key: both are in every
 *     batch (1).  catalog_open() reads both and refuses (-EBADMSG) if they disagree.
 *
 * (4) State and log never disagree: they change in the same batch (1).  Replaying the
 *     log from 1 rebuilds "state" and "meta" exactly (I10), because meta writes are
 *     logged like state writes.
 *
 * (5) Errors are sticky (SQLite's pager_error()).  When a group's write fails, its
 *     transactions get the error and the handle enters the ERROR state: every later
 *     call returns the same error until the catalog is closed and reopened, since after
 *     a failed write or fsync nothing acknowledged may rest on what the disk may or may
 *     not hold.  Reopening replays the WAL and learns whether the group made it (1).
 *     Failures before anything is handed to RocksDB (bad arguments, out of memory while
 *     building the batch) are not sticky.  docs/catalog.md, section 7.
 *
 * (The other: catalog-read.c note 6.)
 *
 * (7) RocksDB options (options_new()): create_if_missing on the primary only;
 *     WriteOptions.sync = 0 behind the sync log (8), else 1 (2); wal_recovery_mode =
 *     point-in-time (a torn tail is dropped, never half applied); write_buffer_size and
 *     max_total_wal_size bound what an open after kill -9 replays; max_open_files = -1
 *     (secondaries require it).  catalog_close() of a healthy primary flushes the
 *     memtables, so a normal restart opens table files instead of replaying the WAL.
 *     Each option and why: docs/catalog.md, section 6.
 *
 * (8) The sync log (synclog.h).  A primary keeps a second log of zero-filled segments
 *     under <path>/synclog whose records are the groups' WriteBatches, so a group's
 *     durable write overwrites blocks already on disk.  Per group: synclog_write() ->
 *     rocksdb_write(sync = 0) -> synclog_sync() -> hook, members answered; so a group
 *     RocksDB has but the sync log does not was never acknowledged.  A segment is
 *     overwritten only after a rocksdb_flush_wal(sync) made everything in it durable in
 *     RocksDB's own files.  catalog_open() replays every group past last_seq, in order
 *     (synclog_replay_group(): -EBADMSG on a gap).  c->wal_lock serializes the two
 *     callers of RocksDB's WAL writer and c->wal_failed stops both once either failed
 *     (RocksDB aborts on a failed writer reused).  docs/catalog.md, section 3a.
 *
 * GROUP COMMIT is described in catalog-write.c, which does it.
 *
 * Handle states: OPEN (c->err == 0) -> ERROR (c->err < 0) on a failed write, until
 * catalog_close().  A secondary is always OPEN; its failures are not sticky since it
 * holds nothing that could disagree with the disk.
 */
#include "catalog-internal.h"

#include <assert.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probes.h"
#include "rocks.h"
#include "synclog.h"
#include "util.h"

static const char *const cf_names[_CF_MAX] = {
        [CF_DEFAULT] = "default",
        [CF_STATE] = "state",
        [CF_LOG] = "log",
        [CF_META] = "meta",
};

_Thread_local char catalog_thread_error[ROCKS_ERROR_MAX];

const char *catalog_last_error(void)
{
        return catalog_thread_error;
}

/* Convert and free a RocksDB error string; keep its text for catalog_last_error(). */
int rocks_error(char *err)
{
        return rocks_error_take(catalog_thread_error, "", err);
}

/* The sticky error, and its message for the calling thread.  Lock held. */
int sticky_error_locked(struct catalog *c)
{
        if (c->err < 0)
                set_thread_error("%s", c->err_msg);
        return c->err;
}

int sticky_error(struct catalog *c)
{
        int r;

        pthread_mutex_lock(&c->lock);
        r = sticky_error_locked(c);
        pthread_mutex_unlock(&c->lock);
        return r;
}

size_t cf_index(enum catalog_cf cf)
{
        switch (cf) {
        case CATALOG_CF_STATE:
                return CF_STATE;
        case CATALOG_CF_META:
                return CF_META;
        default:
                assert(!"unreachable: validated cf");
                return CF_DEFAULT;
        }
}

/* The meta "last_seq" record; 0 when absent (an empty catalog). */
int read_meta_last_seq(struct catalog *c, uint64_t *ret)
{
        rocksdb_pinnableslice_t *ps;
        const char *v;
        char *err = NULL;
        uint64_t seq = 0;
        size_t len;

        ps = rocksdb_get_pinned_cf(c->db, c->read_options, c->cf[CF_META],
                                   CATALOG_META_LAST_SEQ, strlen(CATALOG_META_LAST_SEQ), &err);
        if (err)
                return rocks_error(err);
        if (!ps) {
                *ret = 0;
                return 0;
        }
        v = rocksdb_pinnableslice_value(ps, &len);
        if (len == SEQ_KEY_LEN)
                seq = be64_get((const uint8_t *)v);
        rocksdb_pinnableslice_destroy(ps);
        if (seq == 0) {
                set_thread_error("catalog: bad meta %s record (%zu bytes)",
                                 CATALOG_META_LAST_SEQ, len);
                return -EBADMSG;
        }
        *ret = seq;
        return 0;
}

/* The highest log key; 0 when the log is empty. */
static int read_last_log_seq(struct catalog *c, uint64_t *ret)
{
        rocksdb_iterator_t *it;
        char *err = NULL;
        uint64_t seq = 0;
        size_t len = 0;
        int r = 0;

        it = rocksdb_create_iterator_cf(c->db, c->read_options, c->cf[CF_LOG]);
        rocksdb_iter_seek_to_last(it);
        if (rocksdb_iter_valid(it)) {
                const char *k = rocksdb_iter_key(it, &len);

                if (len == SEQ_KEY_LEN)
                        seq = be64_get((const uint8_t *)k);
                if (seq == 0) {
                        set_thread_error("catalog: bad log key (%zu bytes)", len);
                        r = -EBADMSG;
                }
        } else {
                rocksdb_iter_get_error(it, &err);
                if (err)
                        r = rocks_error(err);
        }
        rocksdb_iter_destroy(it);
        if (r < 0)
                return r;
        *ret = seq;
        return 0;
}

/* At open: "last_seq" and the last log key must agree (NOTE 3). */
static int load_last_seq(struct catalog *c, uint64_t *ret)
{
        uint64_t meta_seq, log_seq;
        int r;

        r = read_meta_last_seq(c, &meta_seq);
        if (r < 0)
                return r;
        r = read_last_log_seq(c, &log_seq);
        if (r < 0)
                return r;
        if (meta_seq != log_seq) {
                set_thread_error("catalog: meta %s %llu disagrees with the last log key %llu",
                                 CATALOG_META_LAST_SEQ, (unsigned long long)meta_seq,
                                 (unsigned long long)log_seq);
                return -EBADMSG;
        }
        *ret = meta_seq;
        return 0;
}

/* NOTE 7 explains each choice. */
static rocksdb_options_t *options_new(bool secondary)
{
        rocksdb_options_t *o = rocksdb_options_create();

        rocksdb_options_set_create_if_missing(o, !secondary);
        rocksdb_options_set_create_missing_column_families(o, !secondary);
        rocksdb_options_set_write_buffer_size(o, WRITE_BUFFER_SIZE);
        rocksdb_options_set_max_total_wal_size(o, MAX_TOTAL_WAL_SIZE);
        rocksdb_options_set_wal_recovery_mode(o, rocksdb_point_in_time_recovery);
        rocksdb_options_set_manual_wal_flush(o, 0);
        rocksdb_options_set_use_fsync(o, 0);
        rocksdb_options_set_max_open_files(o, -1);
        rocksdb_options_set_keep_log_file_num(o, INFO_LOG_FILES);
        rocksdb_options_set_max_log_file_size(o, INFO_LOG_SIZE);
        rocksdb_options_set_info_log_level(o, ROCKS_INFO_LOG_LEVEL);
        if (secondary)
                rocksdb_options_set_max_file_opening_threads(o, 1);
        else
                rocksdb_options_enable_statistics(o);   /* catalog_get_io_stats() */
        return o;
}

static int catalog_alloc(bool secondary, struct catalog **ret)
{
        struct catalog *c;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->secondary = secondary;
        c->expect = 1;
        c->spin_max_ns = CATALOG_WAIT_SPIN_DEFAULT_NS;
        pthread_mutex_init(&c->lock, NULL);
        pthread_mutex_init(&c->wal_lock, NULL);

        /* RocksDB's constructors abort rather than return NULL. */
        c->options = options_new(secondary);
        c->write_options = rocksdb_writeoptions_create();
        rocksdb_writeoptions_set_sync(c->write_options, 1);
        c->nosync_options = rocksdb_writeoptions_create();
        rocksdb_writeoptions_set_sync(c->nosync_options, 0);
        c->read_options = rocksdb_readoptions_create();
        c->flush_options = rocksdb_flushoptions_create();
        rocksdb_flushoptions_set_wait(c->flush_options, 1);
        c->batch = rocksdb_writebatch_create();
        *ret = c;
        return 0;
}

/* ---- The sync log (NOTE 8) ------------------------------------------------------- */

static size_t synclog_segment_size = SYNCLOG_SEGMENT_SIZE;

void catalog_debug_synclog_segment_size(size_t size)
{
        synclog_segment_size = size;
}

/* Everything written to RocksDB so far durable in its WAL files: a segment of the sync
 * log may be reused.  RocksDB syncs every live WAL file, not only the newest. */
static int synclog_store_sync(void *userdata)
{
        struct catalog *c = userdata;
        char *err = NULL;
        int r = -EIO;

        pthread_mutex_lock(&c->wal_lock);
        if (!c->wal_failed) {
                rocksdb_flush_wal(c->db, 1, &err);
                r = err ? (rocks_error(err) == -ENOSPC ? -ENOSPC : -EIO) : 0;
                c->wal_failed = r < 0;
        }
        pthread_mutex_unlock(&c->wal_lock);
        return r;
}

/* rocksdb_write() unless RocksDB's WAL writer has failed (NOTE 8); err as RocksDB's. */
void wal_write(struct catalog *c, const rocksdb_writeoptions_t *options, char **err)
{
        pthread_mutex_lock(&c->wal_lock);
        if (c->wal_failed)
                *err = strdup("IO error: the WAL failed before (catalog: not written)");
        else {
                rocksdb_write(c->db, options, c->batch, err);
                c->wal_failed = *err != NULL;
        }
        pthread_mutex_unlock(&c->wal_lock);
}

int catalog_debug_store_sync(struct catalog *c)
{
        return c && c->synclog ? synclog_store_sync(c) : -EINVAL;
}

/* RocksDB's WriteBatch encoding (write_batch.cc): a 12-byte header (u64 sequence, u32
 * count), then count records, each a type byte and its fields.  Only the types that
 * group_build() writes are accepted. */
enum {
        WB_DELETION = 0x0,              /* key */
        WB_VALUE = 0x1,                 /* key, value */
        WB_CF_DELETION = 0x4,           /* varint32 cf, key */
        WB_CF_VALUE = 0x5,              /* varint32 cf, key, value */
        WB_HEADER = 12,
};

static bool wb_varint32(const uint8_t *p, size_t len, size_t *at, uint32_t *ret)
{
        uint32_t v = 0;

        for (unsigned shift = 0; shift <= 28 && *at < len; shift += 7) {
                uint8_t b = p[(*at)++];

                v |= (uint32_t)(b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        *ret = v;
                        return true;
                }
        }
        return false;
}

static bool wb_slice(const uint8_t *p, size_t len, size_t *at)
{
        uint32_t n;

        if (!wb_varint32(p, len, at, &n) || n > len - *at)
                return false;
        *at += n;
        return true;
}

int catalog_batch_check(const void *payload, size_t len)
{
        const uint8_t *p = payload;
        size_t at = WB_HEADER;
        uint32_t count, cf;

        if (!p || len < WB_HEADER)
                return -EBADMSG;
        count = (uint32_t)p[8] | (uint32_t)p[9] << 8 | (uint32_t)p[10] << 16 |
                (uint32_t)p[11] << 24;
        for (uint32_t i = 0; i < count; i++) {
                if (at == len)
                        return -EBADMSG;
                switch (p[at++]) {
                case WB_CF_VALUE:
                        if (!wb_varint32(p, len, &at, &cf) || cf >= _CF_MAX ||
                            !wb_slice(p, len, &at) || !wb_slice(p, len, &at))
                                return -EBADMSG;
                        break;
                case WB_CF_DELETION:
                        if (!wb_varint32(p, len, &at, &cf) || cf >= _CF_MAX ||
                            !wb_slice(p, len, &at))
                                return -EBADMSG;
                        break;
                case WB_VALUE:
                        if (!wb_slice(p, len, &at) || !wb_slice(p, len, &at))
                                return -EBADMSG;
                        break;
                case WB_DELETION:
                        if (!wb_slice(p, len, &at))
                                return -EBADMSG;
                        break;
                default:
                        return -EBADMSG;
                }
        }
        return at == len ? 0 : -EBADMSG;
}

/* A group found in the sync log at open: skipped if RocksDB has it (its last_seq is
 * past the group), else applied -- it must be the next group, or the log has lost one
 * RocksDB also lacks.  Its payload is checked first: a record with a valid crc over
 * damaged bytes is a corrupt catalog (-EBADMSG), not an I/O error, and RocksDB never
 * parses it (its WriteBatch::Iterate asserts on some malformed batches). */
static int synclog_replay_group(uint64_t first_seq, uint32_t n, const void *payload, size_t len,
                                void *userdata)
{
        struct catalog *c = userdata;
        uint64_t last = first_seq + n - 1, seq;
        rocksdb_writebatch_t *batch;
        char *err = NULL;
        int r;

        if (last <= c->last_seq)
                return 0;
        if (first_seq != c->last_seq + 1) {
                set_thread_error("catalog: sync log holds seq %llu..%llu, the store ends at %llu",
                                 (unsigned long long)first_seq, (unsigned long long)last,
                                 (unsigned long long)c->last_seq);
                return -EBADMSG;
        }
        if (catalog_batch_check(payload, len) < 0) {
                set_thread_error("catalog: sync log group %llu..%llu is no WriteBatch",
                                 (unsigned long long)first_seq, (unsigned long long)last);
                return -EBADMSG;
        }
        batch = rocksdb_writebatch_create_from(payload, len);
        rocksdb_write(c->db, c->nosync_options, batch, &err);
        rocksdb_writebatch_destroy(batch);
        if (err)
                return rocks_error(err) == -ENOSPC ? -ENOSPC : -EIO;
        r = load_last_seq(c, &seq);
        if (r < 0)
                return r;
        if (seq != last) {
                set_thread_error("catalog: sync log group %llu..%llu left last_seq at %llu",
                                 (unsigned long long)first_seq, (unsigned long long)last,
                                 (unsigned long long)seq);
                return -EBADMSG;
        }
        c->last_seq = last;
        c->stats.replayed += n;
        return 0;
}

static int synclog_setup(struct catalog *c, const char *path)
{
        _cleanup_free_ char *dir = NULL;
        int r;

        if (asprintf(&dir, "%s/synclog", path) < 0)
                return -ENOMEM;
        r = synclog_open(dir, synclog_segment_size, SYNCLOG_SEGMENTS, synclog_store_sync, c,
                         &c->synclog);
        if (r < 0) {
                set_thread_error("catalog: cannot open the sync log in %s: %s", dir, strerror(-r));
                return r == -ENOSPC ? r : -EIO;
        }
        r = synclog_replay(c->synclog, synclog_replay_group, c);
        if (r < 0 && r != -EBADMSG && r != -ENOSPC) {
                set_thread_error("catalog: cannot replay the sync log in %s: %s", dir, strerror(-r));
                r = -EIO;
        }
        return r;
}

static int catalog_open_common(const char *path, const char *secondary_path,
                               struct catalog **ret)
{
        const rocksdb_options_t *cf_options[_CF_MAX];
        struct catalog *c = NULL;
        char *err = NULL;
        int r;

        r = catalog_alloc(!!secondary_path, &c);
        if (r < 0)
                return r;
        for (size_t i = 0; i < _CF_MAX; i++)
                cf_options[i] = c->options;
        if (secondary_path)
                c->db = rocksdb_open_as_secondary_column_families(
                        c->options, path, secondary_path, _CF_MAX, cf_names, cf_options,
                        c->cf, &err);
        else
                c->db = rocksdb_open_column_families(c->options, path, _CF_MAX, cf_names,
                                                     cf_options, c->cf, &err);
        if (err) {
                assert(!c->db);
                r = rocks_error(err);
                goto fail;
        }
        r = load_last_seq(c, &c->last_seq);
        if (r < 0)
                goto fail;
        if (!secondary_path && synclog_segment_size > 0) {
                r = synclog_setup(c, path);
                if (r < 0)
                        goto fail;
        }
        *ret = c;
        return 0;
fail:
        c->err = r;             /* no flush on the way out */
        catalog_close(c);
        return r;
}

int catalog_open(const char *path, struct catalog **ret)
{
        if (!path || !ret)
                return -EINVAL;
        return catalog_open_common(path, NULL, ret);
}

int catalog_open_secondary(const char *primary_path, const char *secondary_path,
                           struct catalog **ret)
{
        if (!primary_path || !secondary_path || !ret)
                return -EINVAL;
        /* The secondary's info LOG lives there; one level is created, like RocksDB
         * does for a primary. */
        if (mkdir(secondary_path, 0755) < 0 && errno != EEXIST)
                return -errno;
        return catalog_open_common(primary_path, secondary_path, ret);
}

struct catalog *catalog_close(struct catalog *c)
{
        char *err = NULL;

        if (!c)
                return NULL;
        pthread_mutex_lock(&c->lock);
        assert(catalog_check(c));
        assert(!c->writer_busy && !c->queue_head);
        assert(c->n_iters == 0);
        pthread_mutex_unlock(&c->lock);

        /* Its thread may be in rocksdb_flush_wal(): before RocksDB goes. */
        c->synclog = synclog_close(c->synclog);
        if (c->db) {
                /* NOTE 7: a restart should open table files, not replay the WAL.  A
                 * failed flush loses nothing -- the synced WAL still holds the data. */
                if (!c->secondary && c->err == 0)
                        for (size_t i = 0; i < _CF_MAX; i++) {
                                rocksdb_flush_cf(c->db, c->flush_options, c->cf[i], &err);
                                if (err) {
                                        rocksdb_free(err);
                                        err = NULL;
                                }
                        }
                for (size_t i = 0; i < _CF_MAX; i++)
                        if (c->cf[i])
                                rocksdb_column_family_handle_destroy(c->cf[i]);
                rocksdb_close(c->db);
        }
        if (c->batch)
                rocksdb_writebatch_destroy(c->batch);
        if (c->flush_options)
                rocksdb_flushoptions_destroy(c->flush_options);
        if (c->read_options)
                rocksdb_readoptions_destroy(c->read_options);
        if (c->write_options)
                rocksdb_writeoptions_destroy(c->write_options);
        if (c->nosync_options)
                rocksdb_writeoptions_destroy(c->nosync_options);
        if (c->options)
                rocksdb_options_destroy(c->options);
        free(c->pack_buf);
        pthread_mutex_destroy(&c->wal_lock);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
}
