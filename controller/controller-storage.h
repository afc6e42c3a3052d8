/* controller-storage.h -- storage collections of coord-controller: durable, time-varying
 * multisets of rows in the controller's own RocksDB database (DESIGN sections 1, 2).
 *
 * A collection, named by a GlobalId, is a sequence of updates (row, time, diff).  Rows
 * are opaque byte strings: equal rows have equal bytes.  Every collection has
 *   upper            all updates at times < upper are final and durable;
 *   since            the collection is readable at t with since <= t < upper (the
 *                    window may be empty; since may even exceed upper);
 *   physical_since   how far compaction actually advanced stored times; always
 *                    <= since (I2: the caller moves since only to committed bounds).
 * Its contents at time t are, for every row, the sum of the diffs of the updates with
 * time <= t; rows whose sum is 0 are absent, a negative sum is corruption.
 *
 * Layout (values are the messages of proto/storage.proto; keys big-endian):
 *   CF "collections"  gid                 -> StorageCollection {kind, since, upper,
 *                                                                 physical_since}
 *   CF "batches"      gid | lower         -> StorageBatch {lower, upper, since,
 *                                                           updates, parts, bytes}
 *   CF "chunks"       gid | lower | part  -> StorageChunk {rows, row_lens, times, diffs}
 * A collection is a sequence of batches with contiguous bounds (batch i's upper is
 * batch i + 1's lower, the last batch's upper is the collection's upper).  A batch's
 * updates are consolidated and sorted by (time, row) over its chunks, and their times
 * lie in [batch since, batch upper).  Reads at t touch only the keys gid | lower with
 * lower <= t: never another collection's data.
 *
 * Guarantees:
 *   - Every function that changes state returns 0 only after ONE synced RocksDB
 *     WriteBatch holding the whole change returned OK: it survives kill -9 and power
 *     loss, and a crash leaves the old state or the new one, never a part (I7).
 *     Exception: once storage_syncer_start() ran, storage_append_group() writes its
 *     WriteBatch WITHOUT a sync and returns at once (group commit, controller-storage-write.c NOTE 14): the group
 *     is visible to reads and to later appends, it survives kill -9 (the WAL is in
 *     the page cache), but it is DURABLE only once storage_durable_seq() reaches the
 *     sequence number it got (storage_pending_seq() right after the call).  Nothing
 *     that depends on it may be shown outside the process before that.
 *     Compactions and since moves change no contents at any allowed time: their one
 *     WriteBatch is not synced (it survives kill -9; a power loss may lose it, and
 *     then everything written after it too, never it alone; the next synced write
 *     makes it durable).
 *   - Frontiers only move forward (I1): upper by appends, since by
 *     storage_allow_compaction() (a lower value is ignored), physical_since by
 *     compaction.
 *   - A read at t with since <= t < upper returns exactly the contents at t, before and
 *     after any compaction (I8).
 *   - After a failed write the handle is in a sticky error state: every later write
 *     returns that error until the database is closed and reopened, because the disk
 *     may hold the failed change or not.  Reads keep working: they show the last
 *     acknowledged state, which the failed write cannot have changed at any readable
 *     time.  Failures before anything reached RocksDB (bad arguments, -ENOMEM while
 *     encoding) are not sticky.
 *
 * Concurrency: not thread-safe.  One thread (the controller's loop) makes every call,
 * compaction included; read callbacks must not call back into this module.  A merge
 * of 4,096 updates or more runs in a thread of the module's own, started and applied
 * by storage_compact_pending_fn() (controller-storage-compact.c NOTE 13); callers see
 * only that the call returns before it is done and counts it as work left.  So does
 * the syncer (storage_syncer_start(), controller-storage-write.c NOTE 14): its only
 * call into the caller is the notify function, from its own thread.
 *
 * Errors are -errno: -EINVAL bad argument, -ENOENT no such collection, -EEXIST
 * collection exists, -ESTALE append at the wrong expected upper, -ERANGE update time
 * outside the append's window, -EMSGSIZE row too long, -EDOM read below since, -EAGAIN
 * read at or beyond upper (not yet readable: wait for the upper), -EUCLEAN negative
 * multiplicity or overflowing count (corrupt contents), -EBADMSG undecodable record,
 * -EOVERFLOW diffs of one (row, time) overflow, -ENOMEM, -ENOSPC, -EBUSY database
 * locked by another process, -EIO other RocksDB failures.  The text of the last error
 * seen by the calling thread is kept for the caller to log (storage_last_error()).
 * Nothing here logs.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rocks.h"

struct storage;                 /* opaque */

/* The longest row; longer ones are refused with -EMSGSIZE. */
#define STORAGE_ROW_MAX (16u << 20)

enum storage_kind {
        STORAGE_KIND_TABLE,
        STORAGE_KIND_SOURCE,    /* a source's data collection */
        STORAGE_KIND_REMAP,     /* a source's remap collection */
        STORAGE_KIND_MV,        /* a materialized view's output */
        STORAGE_KIND_BUILTIN,   /* a built-in relation */
        STORAGE_KIND_SINK,      /* a sink's progress: no updates, upper and mark only */
        _STORAGE_KIND_MAX,
        _STORAGE_KIND_INVALID = -EINVAL,
};

struct storage_frontiers {
        uint64_t since;
        uint64_t upper;
        uint64_t physical_since;
};

struct storage_info {
        uint64_t gid;
        enum storage_kind kind;
        struct storage_frontiers frontiers;
};

/* One update; row is borrowed for the duration of the call. */
struct storage_update {
        const void *row;        /* may be NULL when len == 0 */
        size_t len;
        uint64_t time;
        int64_t diff;
};

/* The longest mark (storage_append.mark). */
#define STORAGE_MARK_MAX 32u

/* One append of a group (storage_append_group()).  The caller fills the inputs;
 * the outputs are written by the call. */
struct storage_append {
        uint64_t gid;
        uint64_t expected_upper;        /* must equal the collection's upper */
        uint64_t new_upper;             /* > expected_upper */
        const struct storage_update *updates;   /* times in [expected_upper, new_upper) */
        size_t n_updates;               /* 0: only advance the upper */
        /* The writer's opaque mark, stored with the new upper in the same write and
         * kept until an append replaces it (storage_get_mark()); NULL keeps the one
         * stored.  At most STORAGE_MARK_MAX bytes (-EINVAL otherwise). */
        const void *mark;
        size_t mark_len;
        int result;                     /* out: 0 or -errno */
        uint64_t actual_upper;          /* out: the upper after the call (also on -ESTALE) */
};

/* One compaction permission of a group (storage_allow_compaction_group()). */
struct storage_since {
        uint64_t gid;
        uint64_t since;
        int result;                     /* out: 1 advanced, 0 not (not above), or -errno */
};

enum storage_compact_flags {
        /* Merge every batch into one, however large the oldest one is, so that no
         * time below since is left.  Without it, compaction merges recent batches,
         * and an older batch only once what follows it is about half its size
         * (controller-storage-compact.c NOTE 6), so that each update is rewritten O(log n) times. */
        STORAGE_COMPACT_FULL = 1 << 0,
};

/* What one compaction did. */
struct storage_compact_result {
        uint64_t batches_merged;        /* batches read; 0 when nothing was worth doing */
        uint64_t updates_read;
        uint64_t updates_written;       /* after consolidation */
        bool background;                /* a big merge went to a thread (controller-storage-compact.c NOTE 13): its
                                         * figures come when it is applied */
};

/* Per collection, for tests, benchmarks and status. */
struct storage_collection_stats {
        uint64_t batches;
        uint64_t updates;               /* stored, not consolidated across batches */
        uint64_t chunks;
        uint64_t bytes;                 /* encoded chunk bytes */
};

/* Counters since open. */
struct storage_stats {
        uint64_t collections;
        uint64_t writes;                /* synced WriteBatches */
        uint64_t unsynced_writes;       /* compactions and since moves (controller-storage-write.c NOTE 1) */
        uint64_t appends;               /* appends acknowledged */
        uint64_t compactions;           /* compactions that wrote */
        uint64_t updates_rewritten;     /* written by compactions */
        uint64_t pending;               /* collections queued for compaction */
        uint64_t background_merges;     /* merges run off the caller's thread (controller-storage-compact.c NOTE 13) */
        uint64_t background_merge_ns;   /* their time in that thread */
        uint64_t unsynced_appends;      /* groups written without a sync (controller-storage-write.c NOTE 14) */
        uint64_t syncs;                 /* WAL syncs of the syncer that succeeded */
        uint64_t sync_ns, sync_max_ns;  /* their total and longest time in the syncer */
        uint64_t sync_write_max_ns;     /* longest synced write in the caller's thread */
        uint64_t unsynced_write_max_ns; /* longest unsynced one (appends with the syncer) */
        uint64_t drops_by_key;          /* drops written key by key (controller-storage-write.c NOTE 16) */
        uint64_t drops_by_range;        /* ... and by range deletes */
};

/* Rows of a read at t, in ascending byte order; count > 0.  row is valid during the
 * call only.  Return 0 to go on; a negative value stops the read, which returns it. */
typedef int (*storage_row_fn)(const void *row, size_t len, int64_t count, void *userdata);

/* Updates of a range read, in time order.  row is valid during the call only.  Return
 * 0 to go on; a negative value stops the read, which returns it. */
typedef int (*storage_update_fn)(const void *row, size_t len, uint64_t time, int64_t diff,
                                 void *userdata);

typedef int (*storage_list_fn)(const struct storage_info *info, void *userdata);

/* Opening and closing. */

/* Open (or create) the database in the directory path.  -EBUSY if another process has
 * it open; -EBADMSG if a record does not decode or the frontiers disagree. */
int storage_open(const char *path, struct storage **ret);

/* Flush (when healthy) and close.  Accepts NULL; returns NULL. */
struct storage *storage_close(struct storage *s);

/* The sticky error (0 while healthy). */
int storage_error(const struct storage *s);

/* The text of the last error seen by the calling thread ("" if none). */
const char *storage_last_error(void);

/* Creating and dropping collections. */

/* A new, empty collection: frontiers (since, upper, min(since, upper)).  A table is
 * created with since == upper == its creation time; a refresh MV may have since >
 * upper.  -EEXIST if gid exists. */
int storage_create(struct storage *s, uint64_t gid, enum storage_kind kind, uint64_t since,
                   uint64_t upper);

/* Remove the collection and all of its data.  -ENOENT if gid does not exist. */
int storage_drop(struct storage *s, uint64_t gid);

/* Deferred creates and drops, for a caller whose client considers the change done only
 * after a later write (the controller: Ensure and Drop before the adapter's Append).
 * They change memory at once -- listings, lookups and reads see them -- and reach the
 * disk with the NEXT synced write of any kind (appended to its WriteBatch, after its
 * own records, in the order they were made), so they become durable atomically with
 * it: a crash, or a failure of that write, loses all of them and nothing else (after
 * a failed write the handle is sticky and must be reopened anyway).  Until then they
 * are NOT durable: this is the one exception to the guarantee above.  A create of a
 * gid whose drop is deferred first writes the deferred changes (one synced write).
 * Errors as storage_create() and storage_drop(). */
int storage_create_deferred(struct storage *s, uint64_t gid, enum storage_kind kind,
                            uint64_t since, uint64_t upper);
int storage_drop_deferred(struct storage *s, uint64_t gid);

/* Write the deferred changes now, in one synced WriteBatch (0 if there are none).
 * storage_check() and storage_close() (when healthy) do it first. */
int storage_flush_deferred(struct storage *s);
bool storage_has_deferred(const struct storage *s);

/* A drop deletes the keys of at most this many batches one by one
 * (controller-storage-write.c NOTE 16); a collection with more, or with keys it does not
 * know, by range deletes. */
#define STORAGE_DROP_KEY_BATCHES 4

/* One deferred change: a create (drop == false) with its frontiers, or a drop. */
struct storage_deferred {
        uint64_t gid;
        bool drop;
        enum storage_kind kind;
        uint64_t since, upper, physical_since;
        /* A drop: by_key, the (lower, parts) of its n_batches batches, whose keys are
         * deleted one by one; else (as zeroed) every key of gid by range deletes. */
        bool by_key;
        uint8_t n_batches;
        struct {
                uint64_t lower;
                uint32_t parts;
        } batches[STORAGE_DROP_KEY_BATCHES];
};

/* In the sticky error state: the deferred changes the failed write carried, in order,
 * so that the caller can make them again on the reopened handle (a create that is
 * there, or a drop that is not, reached the disk after all).  Valid until
 * storage_close(); 0 (and *ret NULL) while healthy. */
size_t storage_deferred_lost(const struct storage *s, const struct storage_deferred **ret);

/* Writing. */

/* Append updates at times [expected_upper, new_upper) and move the upper to new_upper.
 * Updates of equal (row, time) are summed and zero sums dropped.  With no updates the
 * call only advances the upper.  On -ESTALE, *ret_upper (if not NULL) is the actual
 * upper, for the caller to retry; on success it is new_upper. */
int storage_append(struct storage *s, uint64_t gid, uint64_t expected_upper, uint64_t new_upper,
                   const struct storage_update *updates, size_t n_updates, uint64_t *ret_upper);

/* Group commit: apply the valid appends of v[] in ONE synced WriteBatch.  Each is
 * checked against the collection's upper as left by the appends before it in v[], so
 * several appends to one collection may share a group.  Returns the number of appends
 * acknowledged (v[i].result == 0); the others carry their error in v[i].result.  If
 * the shared write fails, returns its error and every append that was valid carries
 * it too (then sticky, unless -ENOMEM). */
int storage_append_group(struct storage *s, struct storage_append *v, size_t n);

/* Group commit (controller-storage-write.c NOTE 14).
 *
 * storage_syncer_start() starts the syncer thread: from then on storage_append_group()
 * writes without a sync, gives its write the next sequence number and asks the syncer
 * to sync the WAL (rocksdb_flush_wal(sync)), which makes every write completed before
 * it durable.  While one sync runs, later groups are written and wait for the next:
 * one fdatasync covers them all.  When a sync ends the syncer calls notify(userdata)
 * from its thread; the caller then calls storage_sync_poll() in its own thread, which
 * moves storage_durable_seq().  A synced write (create, drop, storage_flush_deferred())
 * also makes everything before it durable.  A failed sync is a failed write: sticky
 * (storage_error()), and storage_deferred_lost() lists the deferred changes of every
 * write after the last good sync.  Without the syncer (the default), every append is
 * synced and storage_pending_seq() is always 0. */
typedef void (*storage_sync_notify_fn)(void *userdata);
int storage_syncer_start(struct storage *s, storage_sync_notify_fn notify, void *userdata);
bool storage_syncer_running(const struct storage *s);

/* 0 when every write whose durability matters (an unsynced group) is durable; else the
 * sequence number of the last such write: what a caller that read or wrote through
 * this handle must see in storage_durable_seq() before it shows the result. */
uint64_t storage_pending_seq(const struct storage *s);
uint64_t storage_durable_seq(const struct storage *s);

/* Take the syncer's results: 0, or the error of a failed sync (now sticky; returned
 * once, then storage_error() tells).  Cheap: one mutex. */
int storage_sync_poll(struct storage *s);

/* Allow compaction up to since: since only moves forward, a value not above the
 * current since is ignored.  Returns 1 if since moved, 0 if not.  The move is written
 * without a sync (controller-storage-write.c NOTE 1): durable with the next synced write.
 * The data is compacted later, by storage_compact() or storage_compact_pending(). */
int storage_allow_compaction(struct storage *s, uint64_t gid, uint64_t since);

/* The same for many collections in ONE (unsynced) WriteBatch.  Returns the number of
 * sinces that moved, or the write's error (then in every v[i].result that moved). */
int storage_allow_compaction_group(struct storage *s, struct storage_since *v, size_t n);

/* Compact one collection (controller-storage-compact.c, NOTES 5 and 6): merge a run of
 * batches that ends at the newest one into one batch, with every time below since
 * (but at most upper - 1) advanced to it and equal (row, time) summed, in one atomic
 * WriteBatch.  Reads at t >= since return the same before and after.  ret (may be
 * NULL) says what was done.  Cheap when there is nothing to do. */
int storage_compact(struct storage *s, uint64_t gid, unsigned flags,
                    struct storage_compact_result *ret);

/* Compact, with the tiered policy, the collections queued because their since moved
 * or they gained several batches since their last compaction, oldest request first,
 * until the compactions done have read and written about max_updates updates (at
 * least one collection is compacted when any is queued).  A merge that reads 4,096
 * updates or more is started in a thread and applied by a later call (controller-storage-compact.c NOTE 13).
 * Returns the number of collections still queued, plus one while such a merge is not
 * applied yet: call again soon.  The controller calls it when its loop is idle. */
int storage_compact_pending(struct storage *s, uint64_t max_updates);

/* The same, calling fn with the collection's new frontiers after each compaction that
 * wrote (batches merged or physical_since moved), so that the caller can publish what
 * changed without listing every collection.  fn must not call into this module. */
typedef void (*storage_compacted_fn)(const struct storage_info *info, void *userdata);
int storage_compact_pending_fn(struct storage *s, uint64_t max_updates, storage_compacted_fn fn,
                               void *userdata);

/* The same, also stopping once max_us microseconds went by (checked between
 * collections: at least one is compacted, and one small merge always whole). */
int storage_compact_pending_timed(struct storage *s, uint64_t max_updates, uint64_t max_us,
                                  storage_compacted_fn fn, void *userdata);

/* Reading. */

/* The contents at t, one call of fn per row with a positive count, rows in ascending
 * byte order.  since <= t < upper, else -EDOM (t below since) or -EAGAIN (t >= upper).
 * ret_frontiers (may be NULL) is filled on success and on -EDOM/-EAGAIN, so that the
 * caller can name the since or wait for the upper.  -EUCLEAN if a row's count is
 * negative; fn is not called then. */
int storage_read(struct storage *s, uint64_t gid, uint64_t t, storage_row_fn fn, void *userdata,
                 struct storage_frontiers *ret_frontiers);

/* How many stored updates storage_read(s, gid, t) would read (before consolidating),
 * with its checks (-ENOENT, -EDOM, -EAGAIN): whether a read is worth a thread. */
int storage_read_cost(struct storage *s, uint64_t gid, uint64_t t, uint64_t *ret_updates);

/* A read at t that runs in another thread (controller-storage-read.c NOTE 15).  Made on
 * the loop thread, with storage_read()'s checks.  storage_reader_run() -- once, in any
 * thread -- gives what storage_read(s, gid, t) gave when the reader was made, whatever
 * s does meanwhile; the caller keeps since <= t (an execution hold) until then.
 * storage_reader_free() in any thread; storage_close() waits for every reader to be
 * freed. */
struct storage_reader;
int storage_reader_new(struct storage *s, uint64_t gid, uint64_t t, struct storage_reader **ret);
int storage_reader_run(struct storage_reader *rd, storage_row_fn fn, void *userdata);
struct storage_reader *storage_reader_free(struct storage_reader *rd);   /* NULL ok, returns NULL */

/* The updates with times in [lo, hi), in time order, as stored: not consolidated across
 * batches, so one (row, time) may come more than once (sum them).  A time below since
 * is reported as since: the history before since is not kept, and reporting it at since
 * makes the answer independent of how far compaction went.  hi <= upper, else -EAGAIN;
 * lo > hi is -EINVAL. */
int storage_read_updates(struct storage *s, uint64_t gid, uint64_t lo, uint64_t hi,
                         storage_update_fn fn, void *userdata);

/* Frontiers and kind of one collection; -ENOENT if it does not exist. */
int storage_get_info(struct storage *s, uint64_t gid, struct storage_info *ret);

/* The mark of the last append to gid that carried one (storage_append.mark), copied
 * into buf (STORAGE_MARK_MAX bytes); its length, 0 if there is none, or -ENOENT. */
int storage_get_mark(struct storage *s, uint64_t gid, void *buf);

/* Every collection in ascending gid order.  fn returns 0 to go on, negative to stop
 * (returned).  fn may not create or drop collections. */
int storage_list(struct storage *s, storage_list_fn fn, void *userdata);

int storage_collection_stats(struct storage *s, uint64_t gid, struct storage_collection_stats *ret);
void storage_get_stats(const struct storage *s, struct storage_stats *ret);
/* RocksDB's figures: bytes written since open (WAL, flushes, compactions) and what all
 * column families hold now.  For status output and benchmarks (tens of microseconds). */
struct storage_io_stats {
        uint64_t wal_bytes, flush_bytes, compact_bytes;
        struct rocks_cf_size all;
};
void storage_get_io_stats(struct storage *s, struct storage_io_stats *ret);
/* The longest durable write since the previous call (since open for the first): a
 * synced write on the caller's thread or a WAL sync of the syncer.  A status request
 * takes it, so each window between requests gets its own maximum.  Loop thread. */
uint64_t storage_take_sync_window_max_ns(struct storage *s);

/* Testing and debugging. */

/* Check every invariant of NOTES against the disk: contiguous batches, descriptors
 * that match their chunks, sorted and consolidated updates within batch bounds,
 * frontiers that agree with memory, no stray keys.  0, or -EUCLEAN with a message in
 * storage_last_error().  Reads the whole database. */
int storage_check(struct storage *s);

/* Make the next synced write fail with -EIO without writing, as a failed fsync would. */
void storage_debug_fail_next_write(struct storage *s);

/* TEST ONLY: the syncer waits, before each sync, while a file exists at path (polled
 * every millisecond), so that a test can hold a sync and look at what is shown
 * meanwhile; and a sync that finds a file at path + "-fail" removes it and fails with
 * -EIO instead of syncing.  Set before storage_syncer_start(); path is copied. */
int storage_debug_sync_hold_file(struct storage *s, const char *path);
/* TEST ONLY: the syncer's next sync fails with -EIO without syncing. */
void storage_debug_fail_next_sync(struct storage *s);
/* TEST ONLY: the syncer's own error (0 while its syncs succeed), also when the handle
 * was sticky before and storage_sync_poll() does not report it; -ENODEV without one. */
int storage_debug_syncer_error(struct storage *s);

/* Wait until the merge in the background (controller-storage-compact.c NOTE 13), if
 * any, has written its result, without applying it to memory: the window that reads
 * and appends must get right.  True if there was one. */
bool storage_debug_merge_settle(struct storage *s);
