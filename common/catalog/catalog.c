/* catalog.c -- the durable catalog store over RocksDB's C API (contract: catalog.h).
 *
 * The adapter is the only writer and commits through catalog_commit() from any of its
 * threads; the lifecycle follower reads a RocksDB secondary instance of the same files
 * and replays the log from its cursor.
 *
 * NOTES ON THE DESIGN
 *
 * (1) A commit group (one or more transactions) is written as ONE RocksDB WriteBatch.
 *     For every transaction it holds the state and meta changes and the log entry
 *     under the transaction's sequence number; once per group it holds the meta
 *     record "last_seq" = the group's highest sequence number.  The batch is written
 *     as one record of the sync log (8), to RocksDB without a sync, and the sync log
 *     is fdatasynced; or -- sync log off, or a batch too big for a segment -- it is
 *     written to RocksDB with sync = true (RocksDB appends it to its WAL as one record
 *     and fdatasyncs).
 *     Either record is replayed whole or not at all (a torn or corrupt tail is
 *     dropped: crc checks in both, point-in-time recovery in RocksDB), so a group --
 *     and therefore each of its transactions -- is either wholly present after a
 *     crash or wholly absent.
 *
 * (2) Nothing is acknowledged before it is durable: catalog_commit() returns 0 only
 *     after the sync log's fdatasync of its group (or the synced rocksdb_write()) and
 *     the rocksdb_write() carrying it returned OK (I7).
 *
 * (3) Sequence numbers are dense.  At most one group is being written at a time (its
 *     leader owns the write path, see GROUP COMMIT); the leader numbers the transactions
 *     last_seq + 1, last_seq + 2, ... and c->last_seq moves to the highest one only
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
 *     call returns the same error until the catalog is closed and reopened.  The
 *     reason is that after a failed write or fsync we no longer know what the disk
 *     holds -- the WAL record may or may not have reached it -- so no later commit may
 *     be acknowledged on top of it, and reads of memory could show what the disk does
 *     not have.  Reopening replays the WAL and learns the truth, including whether
 *     the failed group made it (wholly or not at all, by (1)).  Failures that happen
 *     before anything is handed to RocksDB (bad arguments, out of memory while
 *     building the batch) are not sticky: nothing was written.
 *
 * (catalog-read.c has note (6).)
 *
 * (7) RocksDB options, and why:
 *       create_if_missing, create_missing_column_families   primary only
 *       WriteOptions.sync = 0 behind the sync log (8), else 1: fdatasync of the WAL
 *                                     per group (2); use_fsync = 0 because fdatasync
 *                                     is enough for an append-only WAL, and RocksDB
 *                                     fsyncs the directory itself when it creates one
 *       manual_wal_flush = 0          each write reaches the OS inside rocksdb_write();
 *                                     manual flushing only adds a second step
 *       wal_recovery_mode = point-in-time   a torn tail after a crash is dropped,
 *                                     never half applied; absolute consistency would
 *                                     refuse to open after an ordinary crash
 *       write_buffer_size = 4 MiB, max_total_wal_size = 16 MiB
 *                                     bound what an open after kill -9 must replay
 *                                     (about 1.7 s per 1M records, DESIGN section 11)
 *       max_open_files = -1           table files stay open (the catalog is small);
 *                                     required by secondaries
 *       keep_log_file_num = 4, max_log_file_size = 1 MiB   bound RocksDB's info LOG
 *     catalog_close() of a healthy primary flushes the memtables, so a normal restart
 *     opens table files (5-7 ms) instead of replaying the WAL.
 *
 * (8) The sync log (synclog.h).  An fdatasync after an append to RocksDB's WAL also
 *     commits the file system's journal (new blocks, the size): half of what the sync
 *     costs on this project's disks.  So a primary keeps a second log, in zero-filled
 *     segments under <path>/synclog, where a group's durable write is a pwrite over
 *     blocks already on disk and an fdatasync with no metadata to write (4 segments
 *     of 2 MiB; bench-catalog prints both ways side by side).  Its records are the
 *     groups' WriteBatches, exactly the bytes RocksDB would log.  The order per group:
 *     synclog_write() (pwritev, write-back started) -> rocksdb_write(sync = 0), which
 *     runs while the device writes (12-30% off one writer's commit, measured) ->
 *     synclog_sync() (fdatasync) -> hook, members answered.  A group RocksDB has but
 *     the sync log does not (a crash between the two) was never acknowledged; the
 *     sync log holds every acknowledged group RocksDB may not have synced: a segment
 *     is overwritten only after rocksdb_flush_wal(sync) -- run on the sync log's
 *     thread when a segment is left, three segments ahead of its reuse, by which time
 *     every group in it has been through rocksdb_write() -- made everything written
 *     before it durable in RocksDB's own files.  catalog_open() lets RocksDB recover
 *     what it has, reads last_seq, then replays from the sync log every group past it,
 *     in order (synclog_replay_group(): the next group must start at last_seq + 1, or
 *     the open fails with -EBADMSG), syncs RocksDB's WAL and starts with every segment
 *     free.
 *     After kill -9 RocksDB's WAL, in the page cache, has everything and nothing is
 *     replayed; after a power loss the sync log restores what RocksDB's unsynced WAL
 *     lost (test-catalog: catalog-synclog).  A secondary reads RocksDB only, so a
 *     follower sees exactly what it saw before (6).
 *     The sync log's thread and a leader both call into RocksDB's WAL writer, and
 *     once that writer has failed (a write or a sync: EFBIG, ENOSPC, EIO) RocksDB
 *     must not be called on it again -- the Debian build asserts, and aborts the
 *     process, in WritableFileWriter (seen in test-catalog's EFBIG case under I/O
 *     load: the thread's rocksdb_flush_wal() after the leader's failed write).  So
 *     c->wal_lock serializes the two calls and c->wal_failed, set under it by
 *     whichever failed, stops both: the leader's rocksdb_write() takes it for a few
 *     µs, and waits for the thread's WAL sync only when one runs (once per segment).
 *
 * GROUP COMMIT
 *
 * RocksDB groups concurrent sync writers itself, but measured only 3x with 8 writers
 * (DESIGN section 11).  We group before RocksDB, leader/follower style (RocksDB's
 * WriteThread, PostgreSQL's XLogFlush): each caller queues a request on c->queue; a
 * caller that finds the write path free becomes the leader, takes the queued
 * requests (up to GROUP_MAX) as its group, writes them in one synced batch with
 * c->lock released, and completes every member.  Callers that arrive while a group
 * is being written queue up and form the next group.
 *
 * A request moves:
 *
 *      catalog_commit()        group_lead()            group_finish()
 *   NEW ----------------> QUEUED -------------> GROUPED --------------> DONE
 *                     (on c->queue,     (taken by a leader      (result set by the
 *                      under c->lock)    under c->lock; seq      leader, c->lock not
 *                                        assigned unlocked)      held; owner returns)
 *
 * The write path (under c->lock; GATHERING is window_end_ns != 0, BUSY writer_busy):
 *
 *            group_ready(): fewer queued than expected
 *      IDLE ------------------------------------------> GATHERING
 *        |                                                  |
 *        | group_ready(): enough queued                     | group_ready(): enough
 *        | (or a single writer)                             | queued, or the window
 *        v                                                  v closed
 *      BUSY <-----------------------------------------------+
 *        |   group_lead(): the caller that made the group ready leads it
 *        |
 *        +--> IDLE   group_finish(): last_seq advanced (or ERROR entered); then,
 *                    c->lock released, the members DONE and one wake-up for all
 *
 * The commit window (GATHERING).  Closed-loop writers (each commits again as soon as
 * its commit returns) would otherwise split into two alternating groups: the members
 * of group A are woken only when A is durable, by which time group B has started, so
 * they form group C, and so on -- half of the writers per fsync.  So a group is held
 * back until as many requests are queued as there were committers at the end of the
 * previous group (c->expect = its size + the requests queued behind it), for at most
 * the average time of a group's write, capped at GROUP_WINDOW_MAX_NS: waiting longer
 * than a write would cost more than the write it saves.  The caller whose arrival
 * completes the group leads it -- it is running already, while waking a sleeper on
 * another vCPU costs ~25 us.  A single writer has expect = 1 and never waits; when
 * writers go away the window closes once unfilled and expect shrinks to what came.
 *
 * Sleeping.  Callers sleep on one futex word, c->group_end, bumped when a group is
 * complete -- the only event any of them waits for, except that the caller who opened
 * a window also wakes when it closes, and then leads the group if nobody filled it
 * first.  Woken, a caller returns if its request is DONE, else looks under c->lock
 * whether to lead, else sleeps again; a GROUPED caller just sleeps again.  One
 * FUTEX_WAKE per group, and members that do not wake up into c->lock: with 8 writers
 * on 2 vCPUs, per-member condition variables and the lock convoy they cause cost
 * about a third of an fsync per group.  Only the opener sleeps with a timeout: when
 * every QUEUED caller did, all of them woke at the window's end -- by then GROUPED,
 * in the middle of their group's fdatasync -- for nothing, 7 context switches per
 * group of 8 that delayed the leader's own wake-ups between the fdatasync's I/Os
 * (13% more commits/s with 8 writers without them).  A leader whose own request did
 * not fit in its group goes round the loop and leads again.
 *
 * Yielding before sleeping.  A member that sleeps costs its group twice on a virtual
 * machine: the leader's FUTEX_WAKE of seven sleepers took ~50 us after the group's
 * fdatasync (bpftrace, bench-catalog, 8 writers), and a vCPU with nobody to run
 * halts, so the disk's interrupt and the wake-ups that follow each pay a trip through
 * the hypervisor.  So a caller about to sleep until a group ends, without a window to
 * close (the opener sleeps with a timeout: see above), first calls sched_yield() in a
 * loop for about what the group in flight still needs -- twice the average write, at
 * most c->spin_max_ns (CATALOG_WAIT_SPIN_DEFAULT_NS, or catalog_set_wait_spin()) --
 * and looks at group_end after every yield; only then does it sleep.  RocksDB's
 * WriteThread waits the same way (adaptive yield, 100 us).  A yield gives the vCPU to
 * anything else runnable, the leader first, so the yielders do not delay the write;
 * they keep their vCPUs awake and see the group's end without a wake-up.
 * Bounds: at most GROUP_SPINNERS_MAX callers yield at once (the rest sleep); none on a
 * disk slower than spin_max_ns per write (waiting out a slow write by yielding would
 * buy nothing); none while fewer than GROUP_YIELD_MIN committers came to the last
 * group end (a lone waiter has nobody to yield to: it keeps a vCPU busy, which on this
 * VM slows the other one by up to a third, to save one wake-up -- 2 writers were
 * slower yielding in 3 of 4 runs); and a wait yields at most once per group end.  The
 * price is CPU: with 8 writers ~50 us per commit against ~30 (bench-catalog prints both
 * rows, and the counters waits_yielded, waits_slept); one writer never waits.
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

static enum req_state req_state(const struct commit_req *req)
{
        return __atomic_load_n(&req->state, __ATOMIC_ACQUIRE);
}

static void req_set_state(struct commit_req *req, enum req_state state)
{
        __atomic_store_n(&req->state, state, __ATOMIC_RELEASE);
}

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
static int sticky_error_locked(struct catalog *c)
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

#ifndef NDEBUG
/* The invariants of the group commit state, checked at its transitions.  Lock held. */
static bool catalog_check(const struct catalog *c)
{
        size_t n = 0;

        assert(c->err <= 0);
        assert(!c->secondary || (!c->writer_busy && !c->queue_head));
        for (const struct commit_req *q = c->queue_head; q; q = q->next) {
                assert(req_state(q) == REQ_QUEUED);
                assert(q->next || q == c->queue_tail);
                n++;
        }
        assert(n == c->n_queued);
        assert(!!c->queue_head == !!c->queue_tail);
        assert(!c->window_end_ns || (!c->writer_busy && c->queue_head));
        assert(!c->window_end_ns || (c->window_opener && req_state(c->window_opener) == REQ_QUEUED));
        assert(c->stats.commits == 0 || c->stats.groups > 0);
        return true;
}
#endif

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
static void wal_write(struct catalog *c, const rocksdb_writeoptions_t *options, char **err)
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

/* ---- Writing ------------------------------------------------------------------- */

static bool is_last_seq_key(const struct catalog_op *op)
{
        return op->cf == CATALOG_CF_META && op->key_len == strlen(CATALOG_META_LAST_SEQ) &&
               memcmp(op->key, CATALOG_META_LAST_SEQ, op->key_len) == 0;
}

static int ops_validate(const struct catalog_op *ops, size_t n_ops)
{
        if (!ops || n_ops == 0)
                return -EINVAL;
        for (size_t i = 0; i < n_ops; i++) {
                const struct catalog_op *op = &ops[i];

                if (op->kind < 0 || op->kind >= _CATALOG_OP_KIND_MAX)
                        return -EINVAL;
                if (op->cf < 0 || op->cf >= _CATALOG_CF_MAX)
                        return -EINVAL;
                if (!op->key || op->key_len == 0)
                        return -EINVAL;
                if (op->kind == CATALOG_OP_PUT && !op->value && op->value_len > 0)
                        return -EINVAL;
                if (is_last_seq_key(op))
                        return -EINVAL;
        }
        return 0;
}

/* Build the request and its log entry in the caller's thread, so that the leader only
 * numbers and packs.  Protobuf-c reads key and value and never writes them; the casts
 * drop const only to fit ProtobufCBinaryData. */
static int req_init(struct commit_req *req, const struct catalog_op *ops, size_t n_ops)
{
        Coord__CatalogOp *pb;
        Coord__CatalogOp **ptrs;

        if (n_ops > SIZE_MAX / (sizeof(*pb) + sizeof(*ptrs)))
                return -ENOMEM;
        /* One allocation: the op messages, then the pointer array protobuf-c wants. */
        pb = malloc(n_ops * (sizeof(*pb) + sizeof(*ptrs)));
        if (!pb)
                return -ENOMEM;
        ptrs = (Coord__CatalogOp **)(pb + n_ops);

        *req = (struct commit_req){ .ops = ops, .n_ops = n_ops, .pb_ops = pb,
                                    .pb_op_ptrs = ptrs, .state = REQ_QUEUED };
        coord__catalog_txn__init(&req->txn);
        for (size_t i = 0; i < n_ops; i++) {
                coord__catalog_op__init(&pb[i]);
                pb[i].kind = ops[i].kind == CATALOG_OP_PUT ? COORD__CATALOG_OP__KIND__PUT
                                                           : COORD__CATALOG_OP__KIND__DELETE;
                pb[i].cf = ops[i].cf == CATALOG_CF_STATE ? COORD__CATALOG_OP__CF__STATE
                                                         : COORD__CATALOG_OP__CF__META;
                pb[i].key.data = (uint8_t *)ops[i].key;
                pb[i].key.len = ops[i].key_len;
                if (ops[i].kind == CATALOG_OP_PUT) {
                        pb[i].value.data = (uint8_t *)ops[i].value;
                        pb[i].value.len = ops[i].value_len;
                }
                ptrs[i] = &pb[i];
        }
        req->txn.n_ops = n_ops;
        req->txn.ops = ptrs;
        return 0;
}

static void req_done(struct commit_req *req)
{
        free(req->pb_ops);
}

static size_t group_want(const struct catalog *c)
{
        return c->expect < GROUP_MAX ? c->expect : GROUP_MAX;
}

/* NEW -> QUEUED.  Lock held. */
static void queue_push(struct catalog *c, struct commit_req *req)
{
        assert(req_state(req) == REQ_QUEUED && !req->next);
        if (c->queue_tail)
                c->queue_tail->next = req;
        else
                c->queue_head = req;
        c->queue_tail = req;
        c->n_queued++;
}

/* QUEUED -> GROUPED for up to GROUP_MAX requests from the queue head, more only to
 * end a chain (catalog_commit_many(): a chain is never split); returns the group as a
 * NULL-terminated list and its size.  Lock held. */
static size_t queue_take(struct catalog *c, struct commit_req **ret_group)
{
        struct commit_req *head = c->queue_head, *last = NULL, *q;
        size_t n = 0;

        assert(head);
        for (q = head; q && (n < GROUP_MAX || last->chained); q = q->next) {
                req_set_state(q, REQ_GROUPED);
                last = q;
                n++;
        }
        c->queue_head = q;
        if (!q)
                c->queue_tail = NULL;
        last->next = NULL;
        c->n_queued -= n;
        *ret_group = head;
        return n;
}

/* Should the caller, whose request `mine` is QUEUED and who found the write path not
 * BUSY, lead now?  Yes once the group is as large as expected or the window has closed
 * (or the handle failed: then there is nothing to wait for).  Otherwise IDLE ->
 * GATHERING if not yet; the caller that opens the window gets its end in
 * *ret_deadline -- again every time it looks while the window is open -- and closes it
 * if nobody fills the group before; the others sleep until the group they join ends
 * (see Sleeping).  The opener must get its deadline back when it looks again: a group
 * that ends after the window opened (its leader unlocks before it wakes anyone, and a
 * newcomer may open the window in between) wakes the opener with the window still
 * open, and an opener that then slept without a timeout left nobody to close it --
 * every committer asleep for good (seen once in ten setups of 100,000 objects).  The
 * window is open only while no group is being written (catalog_check()), and
 * group_lead() closes it, so the opener is QUEUED for as long as it is open.  Lock
 * held. */
static bool group_ready(struct catalog *c, const struct commit_req *mine, uint64_t *ret_deadline)
{
        uint64_t now, window;

        assert(!c->writer_busy && c->queue_head);
        assert(req_state(mine) == REQ_QUEUED);
        if (c->err < 0 || c->n_queued >= group_want(c))
                return true;
        now = now_ns();
        if (c->window_end_ns == 0) {
                window = c->sync_avg_ns < GROUP_WINDOW_MAX_NS ? c->sync_avg_ns
                                                              : GROUP_WINDOW_MAX_NS;
                if (c->debug_window_ns)
                        window = c->debug_window_ns;
                if (window == 0)
                        return true;
                c->window_start_ns = now;
                c->window_end_ns = now + window;
                c->window_opener = mine;
        } else if (now >= c->window_end_ns)
                return true;
        if (c->window_opener == mine)
                *ret_deadline = c->window_end_ns;
        return false;
}

/* Room for size bytes in pack_buf; grows geometrically, so a group packs in O(bytes). */
static int pack_buf_reserve(struct catalog *c, size_t size)
{
        size_t want = c->pack_size ? c->pack_size : 4096;
        uint8_t *p;

        if (size <= c->pack_size)
                return 0;
        while (want < size)
                want = want <= SIZE_MAX / 2 ? want * 2 : size;
        p = realloc(c->pack_buf, want);
        if (!p)
                return -ENOMEM;
        c->pack_buf = p;
        c->pack_size = want;
        return 0;
}

/* Number the group first_seq.. and fill c->batch: per transaction its changes and its
 * log entry, then "last_seq" once (NOTE 1, 3).  The entries stay packed one after the
 * other in c->pack_buf (each member's entry_off/entry_len) for the commit hook, which
 * gets exactly the bytes the log column family stores.  Leader only, lock not held: the
 * members are GROUPED and wait, nobody else touches them or the batch. */
static int group_build(struct catalog *c, struct commit_req *group, uint64_t first_seq)
{
        uint8_t key[SEQ_KEY_LEN];
        uint64_t seq = first_seq, ms = wall_ms();
        size_t off = 0;

        rocksdb_writebatch_clear(c->batch);
        for (struct commit_req *q = group; q; q = q->next, seq++) {
                _unused_ size_t packed;
                size_t size;
                int r;

                assert(req_state(q) == REQ_GROUPED);
                for (size_t i = 0; i < q->n_ops; i++) {
                        const struct catalog_op *op = &q->ops[i];
                        rocksdb_column_family_handle_t *cf = c->cf[cf_index(op->cf)];

                        if (op->kind == CATALOG_OP_PUT)
                                rocksdb_writebatch_put_cf(c->batch, cf, op->key, op->key_len,
                                                          op->value ? op->value : "",
                                                          op->value_len);
                        else
                                rocksdb_writebatch_delete_cf(c->batch, cf, op->key, op->key_len);
                }

                q->seq = seq;
                q->txn.seq = seq;
                q->txn.commit_ms = ms;
                size = coord__catalog_txn__get_packed_size(&q->txn);
                if (size > SIZE_MAX - off)
                        return -ENOMEM;
                r = pack_buf_reserve(c, off + size);
                if (r < 0)
                        return r;
                packed = coord__catalog_txn__pack(&q->txn, c->pack_buf + off);
                assert(packed == size);
                q->entry_off = off;
                q->entry_len = size;
                /* RocksDB copies the value into the batch: pack_buf may move later. */
                be64_put(key, seq);
                rocksdb_writebatch_put_cf(c->batch, c->cf[CF_LOG], (const char *)key, sizeof(key),
                                          (const char *)c->pack_buf + off, size);
                off += size;
                COORD_CATALOG_COMMIT_START(seq, (unsigned)q->n_ops);
        }
        be64_put(key, seq - 1);
        rocksdb_writebatch_put_cf(c->batch, c->cf[CF_META], CATALOG_META_LAST_SEQ,
                                  strlen(CATALOG_META_LAST_SEQ), (const char *)key, sizeof(key));
        return 0;
}

/* The one synced write of a group (NOTE 1, 2, 8): the batch into the sync log, then
 * into RocksDB without a sync while the sync log's write-back runs, then the sync
 * log's fdatasync; or, with the sync log off or for a group too big for it, into
 * RocksDB with a sync.  A failure is -ENOSPC or -EIO. */
static int group_write(struct catalog *c, bool fail, uint64_t first_seq, size_t n)
{
        const rocksdb_writeoptions_t *options = c->write_options;
        char *err = NULL;
        int r;

        c->group_written = false;
        if (fail) {
                set_thread_error("catalog: sync failure injected by catalog_debug_fail_next_sync()");
                return -EIO;
        }
        if (c->synclog) {
                size_t len;
                const char *rep = rocksdb_writebatch_data(c->batch, &len);

                assert(n >= 1 && n <= GROUP_MAX_CHAINED);
                r = synclog_write(c->synclog, first_seq, (uint32_t)n, rep, len);
                if (r == 0) {
                        /* In the sync log now: replay applies it whatever follows. */
                        c->group_written = true;
                        options = c->nosync_options;
                        wal_write(c, options, &err);
                        if (err) {
                                r = rocks_error(err);
                                return r == -ENOSPC ? r : -EIO;
                        }
                        r = synclog_sync(c->synclog);
                        if (r == 0)
                                return 0;
                }
                if (r != -E2BIG) {
                        set_thread_error(c->group_written ? "catalog: sync log sync failed: %s"
                                                          : "catalog: sync log write failed: %s",
                                         strerror(-r));
                        return r == -ENOSPC ? r : -EIO;
                }
        }
        c->group_written = true;        /* RocksDB may have some or all of it */
        wal_write(c, options, &err);
        if (!err)
                return 0;
        r = rocks_error(err);
        return r == -ENOSPC ? r : -EIO;
}

/* Wake every caller sleeping in catalog_commit(): the end of a group is the only
 * event any of them waits for (its own request DONE, or the write path IDLE). */
static void group_end_wake(struct catalog *c)
{
        __atomic_add_fetch(&c->group_end, 1, __ATOMIC_RELEASE);
        (void)syscall(SYS_futex, &c->group_end, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* How long a caller that waits for a group's end yields before it sleeps (GROUP
 * COMMIT, "Yielding before sleeping"); 0: it sleeps at once.  Lock held. */
static uint64_t wait_spin_ns(const struct catalog *c)
{
        uint64_t ns = 2 * c->sync_avg_ns;

        if (c->spin_max_ns == 0 || c->sync_avg_ns == 0 || c->sync_avg_ns > c->spin_max_ns ||
            c->expect < GROUP_YIELD_MIN)
                return 0;
        return ns < c->spin_max_ns ? ns : c->spin_max_ns;
}

/* Yield the vCPU until group_end moves from gen, for at most spin_ns: true if it
 * moved.  False at once when GROUP_SPINNERS_MAX callers are yielding already. */
static bool group_end_yield(struct catalog *c, uint32_t gen, uint64_t spin_ns)
{
        bool ended = false;

        if (__atomic_add_fetch(&c->spinners, 1, __ATOMIC_RELAXED) <= GROUP_SPINNERS_MAX) {
                uint64_t until = now_ns() + spin_ns;

                do {
                        sched_yield();
                        if (__atomic_load_n(&c->group_end, __ATOMIC_ACQUIRE) != gen) {
                                ended = true;
                                break;
                        }
                } while (now_ns() < until);
        }
        __atomic_sub_fetch(&c->spinners, 1, __ATOMIC_RELAXED);
        return ended;
}

/* Sleep until req is DONE, or, while it is QUEUED, until a group has ended since gen
 * was read (the write path may be IDLE then: the caller looks under c->lock) or the
 * deadline (if not 0) has passed.  Without a deadline, yield for up to spin_ns first,
 * once per group end (GROUP COMMIT, "Yielding before sleeping").  A GROUPED request
 * can only become DONE, which needs no lock to see: its members do not crowd c->lock
 * at every group end.  No
 * wake-up is missed: a leader stores DONE before it bumps group_end, so whoever
 * reads the bumped group_end (acquire) then sees DONE. */
static void group_end_wait(struct catalog *c, struct commit_req *req, uint32_t gen,
                           uint64_t deadline, uint64_t spin_ns)
{
        bool yielded = false;

        for (;;) {
                enum req_state state = req_state(req);
                struct timespec ts, *timeout = NULL;
                uint32_t now;

                if (state == REQ_DONE)
                        return;
                now = __atomic_load_n(&c->group_end, __ATOMIC_ACQUIRE);
                if (now != gen) {
                        if (state == REQ_QUEUED)
                                return;
                        gen = now;
                        yielded = false;
                        continue;
                }
                if (spin_ns && !deadline && !yielded) {
                        yielded = true;
                        if (group_end_yield(c, gen, spin_ns)) {
                                __atomic_add_fetch(&c->waits_yielded, 1, __ATOMIC_RELAXED);
                                continue;
                        }
                }
                if (!deadline)
                        __atomic_add_fetch(&c->waits_slept, 1, __ATOMIC_RELAXED);
                if (deadline && state == REQ_QUEUED) {
                        uint64_t t = now_ns();

                        if (t >= deadline)
                                return;
                        t = deadline - t;
                        ts = (struct timespec){ .tv_sec = (time_t)(t / 1000000000u),
                                                .tv_nsec = (long)(t % 1000000000u) };
                        timeout = &ts;
                }
                (void)syscall(SYS_futex, &c->group_end, FUTEX_WAIT_PRIVATE, gen, timeout,
                              NULL, 0);
        }
}

/* Hand the group's transactions to the commit hook: seqs first_seq.. in order, without
 * a gap to the previous call (catalog.h).  Leader only, lock held, write path BUSY (it
 * owns pack_buf and committed[]). */
static void group_hook(struct catalog *c, struct commit_req *group, size_t n, uint64_t first_seq)
{
        size_t i = 0;

        /* Only durable transactions: the group's synced write succeeded (NOTE 2). */
        assert(c->writer_busy && c->err == 0 && n >= 1 && n <= GROUP_MAX_CHAINED);
        assert(c->last_seq == first_seq + n - 1);
        for (const struct commit_req *q = group; q; q = q->next, i++) {
                assert(i < n && q->seq == first_seq + i);
                assert(q->entry_off + q->entry_len <= c->pack_size);
                c->committed[i] = (struct catalog_committed){
                        .seq = q->seq, .entry = c->pack_buf + q->entry_off,
                        .len = q->entry_len,
                };
        }
        assert(i == n);
        c->hook(c->committed, n, c->hook_userdata);
}

/* BUSY -> IDLE for the write path, then GROUPED -> DONE for every member.  A sticky
 * failure moves the handle to ERROR first (NOTE 5).  Leader only; lock held on entry,
 * released on return. */
static void group_finish(struct catalog *c, struct commit_req *group, size_t n,
                         uint64_t first_seq, int r, bool sticky)
{
        uint64_t seq = first_seq;

        assert(c->writer_busy);
        assert(r <= 0 && (!sticky || r < 0));
        if (sticky) {
                assert(c->err == 0);
                c->err = r;
                c->err_written = c->group_written;
                snprintf(c->err_msg, sizeof(c->err_msg), "%s", catalog_thread_error);
                COORD_CATALOG_SYNC_FAIL(r);
        }
        if (r == 0) {
                assert(c->last_seq + 1 == first_seq);
                c->last_seq = first_seq + n - 1;
                c->stats.commits += n;
                c->stats.groups++;
                if (n > c->stats.max_group)
                        c->stats.max_group = n;
                /* After the write is durable and last_seq moved, before the members
                 * are answered: a follower woken now finds the group in the log, and
                 * whatever the hook publishes is durable.  The members are GROUPED:
                 * their entries are read before any of them is DONE. */
                if (c->hook)
                        group_hook(c, group, n, first_seq);
        } else
                c->stats.failed += n;
        /* One huge group must not pin its memory for the life of the handle. */
        if (c->pack_size > PACK_BUF_KEEP) {
                free(c->pack_buf);
                c->pack_buf = NULL;
                c->pack_size = 0;
        }
        c->expect = n + c->n_queued;
        c->writer_busy = false;
        assert(catalog_check(c));
        pthread_mutex_unlock(&c->lock);
        if (c->debug_group_end)
                c->debug_group_end(c->debug_group_end_arg);

        /* The members are GROUPED: nobody but us touches them until they are DONE.
         * Read next first: an owner that sees DONE returns and its request vanishes. */
        for (struct commit_req *q = group, *next; q; q = next, seq++) {
                next = q->next;
                assert(req_state(q) == REQ_GROUPED);
                q->result = r;
                COORD_CATALOG_COMMIT_DONE(seq, r);
                req_set_state(q, REQ_DONE);
        }
        /* One wake-up for the whole group, and for the callers queued meanwhile: one
         * of them leads (or starts gathering) the next group, unless a newcomer
         * finds the write path IDLE first. */
        group_end_wake(c);
}

/* Lead one group: take it, write it with the lock released, finish it.  Lock held on
 * entry, released on return; the write path is IDLE on entry and on return. */
static void group_lead(struct catalog *c)
{
        struct commit_req *group;
        uint64_t first_seq;
        bool fail, sticky = false;
        uint64_t t0 = 0;
        size_t n;
        int r;

        assert(catalog_check(c));
        assert(!c->writer_busy && c->queue_head);
        if (c->window_end_ns) {
                c->stats.window_ns += now_ns() - c->window_start_ns;
                c->window_end_ns = 0;
                c->window_opener = NULL;
        }
        c->writer_busy = true;
        n = queue_take(c, &group);
        first_seq = c->last_seq + 1;
        fail = c->fail_next_sync;
        c->fail_next_sync = false;
        r = c->err;
        if (r == 0) {
                /* Released while writing: this is when the next group queues up. */
                pthread_mutex_unlock(&c->lock);
                r = group_build(c, group, first_seq);
                if (r == 0) {
                        t0 = now_ns();
                        r = group_write(c, fail, first_seq, n);
                        t0 = now_ns() - t0;
                        sticky = r < 0;
                }
                if (c->debug_group_write)
                        c->debug_group_write(c->debug_group_write_arg);
                pthread_mutex_lock(&c->lock);
                c->stats.sync_ns += t0;
                if (t0 > c->stats.sync_max_ns)
                        c->stats.sync_max_ns = t0;
                if (t0 > c->sync_window_max_ns)
                        c->sync_window_max_ns = t0;
                /* An average over the last ~8 groups: the disk's speed now. */
                if (r == 0)
                        c->sync_avg_ns = c->sync_avg_ns ? c->sync_avg_ns - c->sync_avg_ns / 8 + t0 / 8
                                                        : t0;
        }
        group_finish(c, group, n, first_seq, r, sticky);
}

int catalog_commit(struct catalog *c, const struct catalog_op *ops, size_t n_ops,
                   uint64_t *ret_seq)
{
        struct commit_req req;
        int r;

        if (!c)
                return -EINVAL;
        if (c->secondary)
                return -EROFS;
        r = ops_validate(ops, n_ops);
        if (r < 0)
                return r;
        r = req_init(&req, ops, n_ops);
        if (r < 0)
                return r;

        pthread_mutex_lock(&c->lock);
        r = sticky_error_locked(c);
        if (r < 0) {
                pthread_mutex_unlock(&c->lock);
                goto out;
        }
        queue_push(c, &req);
        for (;;) {
                /* c->lock held here */
                uint64_t deadline = 0;

                if (req_state(&req) == REQ_QUEUED && !c->writer_busy &&
                    group_ready(c, &req, &deadline))
                        group_lead(c);
                else {
                        /* Read under the lock: the group end that changes what we
                         * saw comes after it, so it cannot be missed. */
                        uint32_t gen = __atomic_load_n(&c->group_end, __ATOMIC_ACQUIRE);
                        uint64_t spin = wait_spin_ns(c);

                        pthread_mutex_unlock(&c->lock);
                        group_end_wait(c, &req, gen, deadline, spin);
                }
                if (req_state(&req) == REQ_DONE)
                        break;
                pthread_mutex_lock(&c->lock);
        }
        /* c->lock not held; the request is DONE */
        r = req.result;
        if (r < 0)
                sticky_error(c);        /* the group's message, if it was sticky */
out:
        if (r == 0 && ret_seq)
                *ret_seq = req.seq;
        req_done(&req);
        return r;
}

int catalog_commit_many(struct catalog *c, const struct catalog_txn_ops *txns, size_t n,
                        uint64_t *ret_first_seq)
{
        struct commit_req *reqs, *last;
        size_t inited = 0;
        int r;

        if (!c || !txns || n == 0 || n > GROUP_MAX)
                return -EINVAL;
        if (c->secondary)
                return -EROFS;
        for (size_t i = 0; i < n; i++) {
                r = ops_validate(txns[i].ops, txns[i].n_ops);
                if (r < 0)
                        return r;
        }
        reqs = calloc(n, sizeof(*reqs));
        if (!reqs)
                return -ENOMEM;
        for (; inited < n; inited++) {
                r = req_init(&reqs[inited], txns[inited].ops, txns[inited].n_ops);
                if (r < 0)
                        goto out;
                reqs[inited].chained = inited + 1 < n;
        }
        last = &reqs[n - 1];

        pthread_mutex_lock(&c->lock);
        r = sticky_error_locked(c);
        if (r < 0) {
                pthread_mutex_unlock(&c->lock);
                goto out;
        }
        /* Queued back to back under one lock hold, and queue_take() never splits a
         * chain: the n requests are one group's, or part of one group -- one
         * WriteBatch, so all or none are durable (NOTE 1), numbered in order (3). */
        for (size_t i = 0; i < n; i++)
                queue_push(c, &reqs[i]);
        for (;;) {
                /* c->lock held here; as in catalog_commit(), with the chain's last
                 * request as ours: it is DONE only when the whole chain is. */
                uint64_t deadline = 0;

                if (req_state(last) == REQ_QUEUED && !c->writer_busy && group_ready(c, last, &deadline))
                        group_lead(c);
                else {
                        uint32_t gen = __atomic_load_n(&c->group_end, __ATOMIC_ACQUIRE);
                        uint64_t spin = wait_spin_ns(c);

                        pthread_mutex_unlock(&c->lock);
                        group_end_wait(c, last, gen, deadline, spin);
                }
                if (req_state(last) == REQ_DONE)
                        break;
                pthread_mutex_lock(&c->lock);
        }
        /* c->lock not held; every request is DONE, with the group's one result */
        r = last->result;
        for (size_t i = 0; i < n; i++)
                assert(req_state(&reqs[i]) == REQ_DONE && reqs[i].result == r &&
                       (r < 0 || reqs[i].seq == reqs[0].seq + i));
        if (r < 0)
                sticky_error(c);
out:
        if (r == 0 && ret_first_seq)
                *ret_first_seq = reqs[0].seq;
        for (size_t i = 0; i < inited; i++)
                req_done(&reqs[i]);
        free(reqs);
        return r;
}

int catalog_meta_put(struct catalog *c, const char *key, const void *value, size_t value_len,
                     uint64_t *ret_seq)
{
        struct catalog_op op = {
                .kind = CATALOG_OP_PUT, .cf = CATALOG_CF_META,
                .key = key, .key_len = key ? strlen(key) : 0,
                .value = value, .value_len = value_len,
        };

        return catalog_commit(c, &op, 1, ret_seq);
}

void catalog_debug_fail_next_sync(struct catalog *c)
{
        if (!c)
                return;
        pthread_mutex_lock(&c->lock);
        c->fail_next_sync = !c->secondary;
        pthread_mutex_unlock(&c->lock);
}

void catalog_debug_group_end(struct catalog *c, uint64_t window_ns, void (*fn)(void *), void *arg)
{
        if (!c)
                return;
        pthread_mutex_lock(&c->lock);
        c->debug_window_ns = window_ns;
        c->debug_group_end = fn;
        c->debug_group_end_arg = arg;
        pthread_mutex_unlock(&c->lock);
}

void catalog_debug_group_write(struct catalog *c, void (*fn)(void *), void *arg)
{
        if (!c)
                return;
        pthread_mutex_lock(&c->lock);
        c->debug_group_write = fn;
        c->debug_group_write_arg = arg;
        pthread_mutex_unlock(&c->lock);
}

int catalog_debug_gathering(struct catalog *c)
{
        int r;

        pthread_mutex_lock(&c->lock);
        r = c->window_end_ns != 0;
        pthread_mutex_unlock(&c->lock);
        return r;
}
