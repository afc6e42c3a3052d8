/* catalog.h -- the durable catalog store: RocksDB column families, a dense transaction
 * log and group commit (DESIGN section 5).
 *
 * One writer process (coord-adapter) opens the catalog as the RocksDB primary; any
 * number of followers (coord-lifecycle) open it as RocksDB secondaries and catch up.
 *
 * Column families:
 *   "state"    current state, written by transactions
 *   "log"      key = u64 big-endian sequence number, value = coord.CatalogTxn
 *   "meta"     small records ("incarnation", "oracle_hwm", ...), written by
 *              transactions; "last_seq" is the store's own and read-only to callers
 *   "default"  unused (RocksDB requires it)
 *
 * Guarantees:
 *   - A transaction's state changes, its log entry and "last_seq" become durable in
 *     one fsynced WriteBatch before catalog_commit() returns 0: all or nothing, also
 *     across kill -9 and power loss.
 *   - Sequence numbers are dense, start at 1 and never repeat within a database.
 *   - catalog_commit() is thread-safe; concurrent commits share one fsync (group
 *     commit).  Every other function may be called from any thread, concurrently
 *     with commits, but not concurrently with catalog_close().
 *   - After a failed write the handle is in a sticky error state: every later call
 *     (commits and reads) returns that error until the catalog is closed and
 *     reopened.  The failed transaction's outcome is unknown until the reopen: it is
 *     either wholly present or wholly absent, never partly.
 *
 * Errors are -errno: -EINVAL bad arguments, -ENOMEM, -EROFS write on a secondary,
 * -ENOENT no such key / no such database, -EBUSY database locked by another primary,
 * -ENOSPC, -EBADMSG corrupt record, -EIO other RocksDB failures.  The message of the
 * last RocksDB error seen by the calling thread is kept for the caller to log
 * (catalog_last_error()).  Nothing here logs.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog.pb-c.h"
#include "rocks.h"

struct catalog;                 /* opaque */
struct catalog_log_iter;        /* opaque */

/* Column families a transaction may write.  The log is written by the store only. */
enum catalog_cf {
        CATALOG_CF_STATE,
        CATALOG_CF_META,
        _CATALOG_CF_MAX,
        _CATALOG_CF_INVALID = -EINVAL,
};

enum catalog_op_kind {
        CATALOG_OP_PUT,
        CATALOG_OP_DELETE,
        _CATALOG_OP_KIND_MAX,
        _CATALOG_OP_KIND_INVALID = -EINVAL,
};

/* One change of a transaction.  key and value are borrowed for the duration of the
 * catalog_commit() call only.  key_len must be > 0; value is ignored for DELETE. */
struct catalog_op {
        enum catalog_op_kind kind;
        enum catalog_cf cf;
        const void *key;
        size_t key_len;
        const void *value;
        size_t value_len;
};

/* The meta key the store maintains itself (u64 big-endian, equals catalog_last_seq()). */
#define CATALOG_META_LAST_SEQ "last_seq"

/* Counters since open, for benchmarks and status output. */
struct catalog_stats {
        uint64_t commits;       /* transactions acknowledged */
        uint64_t groups;        /* synced WriteBatches that acknowledged them */
        uint64_t max_group;     /* most transactions in one WriteBatch */
        uint64_t failed;        /* transactions answered with an error by a leader */
        uint64_t sync_ns;       /* time spent in synced writes */
        uint64_t sync_max_ns;   /* the longest synced write (a group's, catalog.c NOTE 8) */
        uint64_t window_ns;     /* time leaders waited for their group to fill */
        uint64_t replayed;      /* transactions applied from the sync log at open */
        /* Waits for a group's end (catalog-write.c, GROUP COMMIT): ended while the caller
         * yielded its vCPU, or by sleeping on the futex. */
        uint64_t waits_yielded;
        uint64_t waits_slept;
};

/* Opening and closing. */

/* Open (creating it and any missing column family) the primary at path. */
int catalog_open(const char *path, struct catalog **ret);
/* Open the database at primary_path read-only as a RocksDB secondary whose own files
 * (info log) live in secondary_path (created if missing).  -ENOENT while the primary
 * has not created the database yet. */
int catalog_open_secondary(const char *primary_path, const char *secondary_path,
                           struct catalog **ret);
/* Flushes memtables of a healthy primary (so the next open does not replay the WAL),
 * then closes.  No commit may be in progress and no log iterator alive.  NULL-safe;
 * returns NULL. */
struct catalog *catalog_close(struct catalog *c);

/* Writing (primary only: -EROFS on a secondary). */

/* Commit ops[0..n_ops) as one transaction; returns 0 once it is durable, its sequence
 * number in *ret_seq (may be NULL; untouched on failure).  Thread-safe; blocks for
 * about one fsync, shared with concurrent callers (group commit).
 *   -EINVAL   empty or malformed, or writes CATALOG_META_LAST_SEQ: nothing written,
 *             the handle stays healthy
 *   -EIO, -ENOSPC   the write failed: the handle is now in the sticky error state,
 *             and whether this transaction is durable is known only after a reopen
 *   -EROFS    a secondary */
int catalog_commit(struct catalog *c, const struct catalog_op *ops, size_t n_ops,
                   uint64_t *ret_seq);
/* Commit txns[0..n) in this order, each its own transaction with its own sequence
 * number (first_seq, first_seq + 1, ...), in ONE write: all of them are durable, or
 * none (the same result for all).  1 <= n <= 256, else -EINVAL.  Errors as
 * catalog_commit().  For a client's consecutive statements: one fsync, and no
 * statement is durable without the ones before it. */
struct catalog_txn_ops {
        const struct catalog_op *ops;
        size_t n_ops;
};
int catalog_commit_many(struct catalog *c, const struct catalog_txn_ops *txns, size_t n,
                        uint64_t *ret_first_seq);
/* A one-op transaction putting a meta record. */
int catalog_meta_put(struct catalog *c, const char *key, const void *value, size_t value_len,
                     uint64_t *ret_seq);

/* Commit notification (DESIGN section 7: the catalog log ring).  One transaction of a
 * commit group as the hook sees it: its seq and its log entry -- the encoded
 * coord.CatalogTxn, byte for byte the value the log column family holds under seq
 * (decode it with coord__catalog_txn__unpack()).  entry is borrowed for the hook call. */
struct catalog_committed {
        uint64_t seq;
        const void *entry;
        size_t len;
};

/* fn is called once per successful commit group with the group's transactions in seq
 * order, after the group is durable and catalog_last_seq() moved to txns[n - 1].seq,
 * and before any of its committers returns.  Every commit goes through it (a group
 * has 1 <= n <= 2 * 256 - 1 transactions: a catalog_commit_many() chain is never split),
 * and calls follow each other without a gap:
 *     txns[i].seq == txns[0].seq + i,  txns[0].seq == the previous call's last seq + 1
 * (the first call after catalog_set_commit_hook() starts at catalog_last_seq() + 1 as of
 * that call).  It runs on the committing (leader) thread with the catalog's internal
 * lock held, so calls never overlap: fn must be short, must not block and must not call
 * back into the catalog.  NULL removes the hook.  The store does not depend on how the
 * hook notifies (coord-adapter publishes to the catalog log ring, lring.h). */
typedef void (*catalog_commit_hook_fn)(const struct catalog_committed *txns, size_t n,
                                       void *userdata);
void catalog_set_commit_hook(struct catalog *c, catalog_commit_hook_fn fn, void *userdata);

/* Reading. */

/* The value of key in cf, in a malloc()ed buffer with a NUL byte after *ret_len bytes
 * (not counted).  ret_value may be NULL to test existence.  -ENOENT if absent. */
int catalog_get(struct catalog *c, enum catalog_cf cf, const void *key, size_t key_len,
                void **ret_value, size_t *ret_len);
int catalog_meta_get(struct catalog *c, const char *key, void **ret_value, size_t *ret_len);
/* The last acknowledged sequence number (primary) or the last one caught up
 * (secondary); 0 for an empty catalog. */
uint64_t catalog_last_seq(struct catalog *c);
/* The sticky error (a negative errno), or 0 while the handle is healthy; when failed,
 * its message is the calling thread's catalog_last_error() afterwards. */
int catalog_error(struct catalog *c);
/* Whether the write that failed had reached the file system (its sync, or a later
 * step, failed): then a reopen may find the failed group, wholly (catalog.c NOTE 1).  False
 * when nothing of it was written, or while the handle is healthy. */
bool catalog_error_written(struct catalog *c);
/* The RocksDB message of the last RocksDB error returned to the calling thread by any
 * catalog function (thread-local, like dlerror()); "" if none.  Valid until the next
 * failing catalog call on this thread. */
const char *catalog_last_error(void);
void catalog_get_stats(struct catalog *c, struct catalog_stats *ret);
/* The longest synced write since the previous call (since open for the first): a
 * status request takes it, so each window between requests gets its own maximum --
 * a slow disk shows here as it does in a commit's latency.  0 without a write. */
uint64_t catalog_take_sync_window_max_ns(struct catalog *c);

/* A committer waiting for its group to be written yields its vCPU (sched_yield) for up
 * to max_ns before it sleeps (catalog-write.c, GROUP COMMIT: "Yielding before sleeping");
 * 0: it sleeps at once.  Default CATALOG_WAIT_SPIN_DEFAULT_NS. */
#define CATALOG_WAIT_SPIN_DEFAULT_NS (500u * 1000u)
void catalog_set_wait_spin(struct catalog *c, uint64_t max_ns);

/* RocksDB's figures for the catalog (primary: statistics are on; a secondary reports
 * zero bytes written): bytes written since open, and what the state column families
 * (state + meta) and the log hold now.  For status output and benchmarks. */
struct catalog_io_stats {
        uint64_t wal_bytes, flush_bytes, compact_bytes;
        /* The sync log (catalog.c NOTE 8): bytes written, RocksDB WAL syncs that freed a
         * segment, commits that waited for one. */
        uint64_t synclog_bytes, synclog_store_syncs, synclog_waits;
        struct rocks_cf_size state, log;
};
void catalog_get_io_stats(struct catalog *c, struct catalog_io_stats *ret);

/* Every record of cf whose key starts with prefix (prefix_len 0: all), in key order,
 * from one consistent snapshot: fn(key, key_len, value, value_len, userdata) for each;
 * the pointers are valid during the call only.  fn returns 0 to go on, a negative
 * errno to stop (returned as it is). */
int catalog_scan(struct catalog *c, enum catalog_cf cf, const void *prefix, size_t prefix_len,
                 int (*fn)(const void *key, size_t key_len, const void *value,
                           size_t value_len, void *userdata),
                 void *userdata);
/* The same for the records with lo <= key < hi (bytewise; hi_len 0: to the end). */
int catalog_scan_range(struct catalog *c, enum catalog_cf cf, const void *lo, size_t lo_len,
                       const void *hi, size_t hi_len,
                       int (*fn)(const void *key, size_t key_len, const void *value,
                                 size_t value_len, void *userdata),
                       void *userdata);

/* Several range scans at once, for loads on the path of a restart (the adapter's
 * items, the follower's state): jobs[0] on the calling thread, each other one on a
 * thread of its own (where one cannot be made, on the calling thread after the
 * others), all joined before it returns.  A job is catalog_scan_range() of its range,
 * its fn called on its own thread only, its result in its r; the return is 0 or the
 * first failed job's r, in job order.  Each iterator reads its own snapshot: the jobs
 * see one catalog if nothing commits (primary) or catches up (secondary) meanwhile,
 * which is the caller's to ensure.  n <= CATALOG_SCAN_JOBS_MAX, else -EINVAL. */
#define CATALOG_SCAN_JOBS_MAX 8
struct catalog_scan_job {
        enum catalog_cf cf;
        const void *lo, *hi;            /* lo <= key < hi, as catalog_scan_range() */
        size_t lo_len, hi_len;
        int (*fn)(const void *key, size_t key_len, const void *value, size_t value_len,
                  void *userdata);
        void *userdata;
        int r;                          /* set by catalog_scan_ranges() */
};
int catalog_scan_ranges(struct catalog *c, struct catalog_scan_job *jobs, size_t n);

/* The layout of the state column family that its writer (the adapter,
 * adapter-catalog-ddl.c note 3) and its bulk readers (the adapter's and the follower's
 * loads) share: a prefix byte, then the big-endian GlobalId (a requirement: the
 * consumer's, then the input's). */
#define CATALOG_STATE_ITEM  'i'
#define CATALOG_STATE_BOUND 'b'
#define CATALOG_STATE_REQ   'r'
#define CATALOG_STATE_LEASE 'l'     /* + the lease key's bytes (adapter-lease.c, issue 33) */

/* A whole load of the state in four scans at once (catalog_scan_ranges()): the items
 * with GlobalId < mid_gid to item(items_lo) on the calling thread, the other items to
 * item(items_hi), the bounds to bound(bounds), the requirements to req(reqs), each of
 * those three on a thread of its own (bounds and reqs may be one object whose fields
 * the two touch apart).  0 or the first failed scan's error. */
struct catalog_state_scan {
        int (*item)(const void *key, size_t key_len, const void *value, size_t value_len,
                    void *userdata);
        int (*bound)(const void *key, size_t key_len, const void *value, size_t value_len,
                     void *userdata);
        int (*req)(const void *key, size_t key_len, const void *value, size_t value_len,
                   void *userdata);
        void *items_lo, *items_hi, *bounds, *reqs;
};
int catalog_scan_state(struct catalog *c, uint64_t mid_gid, const struct catalog_state_scan *sc);

/* Following (secondary only: -EINVAL on a primary). */

/* Replay what the primary has written since the last catch-up; afterwards reads and
 * new log iterators see it. */
int catalog_catch_up(struct catalog *c);

/* The log cursor.  An iterator reads a consistent snapshot taken at its creation: the
 * transactions with seq > after_seq, in order, without gaps. */
int catalog_log_iter_new(struct catalog *c, uint64_t after_seq, struct catalog_log_iter **ret);
/* 1 and the next transaction in *ret_txn (free it with
 * coord__catalog_txn__free_unpacked(txn, NULL)); 0 at the end of the snapshot;
 * -EBADMSG for a corrupt entry or a gap. */
int catalog_log_next(struct catalog_log_iter *it, Coord__CatalogTxn **ret_txn);
struct catalog_log_iter *catalog_log_iter_free(struct catalog_log_iter *it);

/* Whether payload (a commit group as the sync log holds it) is a well-formed RocksDB
 * WriteBatch of the records the catalog writes: puts and deletes in its column
 * families.  0 or -EBADMSG.  Checked before a group is replayed into RocksDB. */
int catalog_batch_check(const void *payload, size_t len);

/* Testing only. */

/* Make the next commit group fail as if its fsync had failed, with nothing reaching
 * the disk: its transactions get -EIO and the handle enters the sticky error state.
 * For tests of the error paths; never called by the daemons. */
void catalog_debug_fail_next_sync(struct catalog *c);

/* What the sync log's thread runs when a segment is left (catalog.c NOTE 8): RocksDB's
 * WAL synced, or -EIO without calling RocksDB once its WAL writer has failed.  For a
 * test of that order; never called by the daemons. */
int catalog_debug_store_sync(struct catalog *c);

/* The sync log's segment size for primaries opened from now on, process-wide (catalog.c
 * catalog.c NOTE 8; default 2 MiB): small ones make tests reuse segments; 0 turns the sync log
 * off (every group is a synced RocksDB write), for benchmarks that compare the two.
 * Never called by the daemons. */
void catalog_debug_synclog_segment_size(size_t size);

/* Open every commit window for window_ns (0: as the disk's speed says), and call
 * fn(arg) in the leader after each group is finished and unlocked, before its members
 * are woken -- so a test can put a newcomer into that gap.  Never called by the
 * daemons. */
void catalog_debug_group_end(struct catalog *c, uint64_t window_ns, void (*fn)(void *), void *arg);

/* Call fn(arg) in the leader after each group's write, with the write path still BUSY
 * and the lock released -- a slow disk, outside the write's timing (sync_avg_ns) --
 * so a test can hold every committer that comes meanwhile in its wait.  Set while no
 * commit runs.  Never called by the daemons. */
void catalog_debug_group_write(struct catalog *c, void (*fn)(void *), void *arg);

/* Testing only: 1 while a commit window is open (GATHERING), else 0. */
int catalog_debug_gathering(struct catalog *c);
