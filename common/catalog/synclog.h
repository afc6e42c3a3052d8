/* synclog.h -- a redo log in preallocated segments, so that a durable commit is one
 * overwrite and one fdatasync that changes no file metadata.
 *
 * Why.  An fdatasync after an append must also journal what the append changed in the
 * file system -- a new block, an extent converted from unwritten, the size -- and on
 * this project's disks that journal commit is about half of the sync: an overwrite of
 * already written blocks plus fdatasync measured 110-160 us where an append plus
 * fdatasync measured 190-270 us (docs/benchmarks.md, the tenth session).  RocksDB only
 * appends to its WAL (its recycling of WAL files, which would overwrite, is switched
 * off under point-in-time recovery), so the store that owns this log writes RocksDB
 * without sync and makes each group durable here first.
 *
 * Layout.  n_segments files seg-0 .. seg-N-1 of segment_size bytes each in dir, zero
 * filled (written, not fallocated: unwritten extents would need the same journal
 * commit) and synced once when created.  Segments are used in turn, each from offset 0;
 * a record never straddles two.  A record is a 32-byte header and its payload:
 *
 *     u32 magic "CSLG"  u32 crc32 (zlib) of the rest of the header and the payload
 *     u64 segno         the segment's use: 1, 2, 3 ... over the life of the log
 *     u64 first_seq     the first transaction in the payload (the owner's numbering)
 *     u32 n             transactions in the payload
 *     u32 len           payload bytes
 *
 * Reading a segment walks its records from offset 0 and stops at the first that is
 * zero, torn (bad crc or length) or left from an earlier use of the file (segno not
 * the first record's): what remains of older uses is never read as new.
 *
 * Reuse.  A segment is overwritten only when everything it held is durable in the
 * store without it: leaving a segment asks a background thread to run the owner's
 * store_sync() (RocksDB: fsync its WAL files), and the append that would reuse a
 * segment whose previous contents that sync has not covered yet waits for it.  With
 * the catalog's 4 segments of 2 MiB, the sync has 6 MiB of commits to finish in.
 *
 * Recovery.  synclog_replay() hands every record still on disk to the owner, oldest
 * segment first, in order; the owner skips what its store already holds and applies
 * the rest (catalog.c NOTE 8).  It then runs store_sync() once, so the log starts
 * empty: every segment may be reused.  The next use is numbered above every whole
 * record anywhere on disk, so no leftover of an older use can continue a new one.
 *
 * Not thread-safe: one caller at a time (the catalog's leader) appends.  Errors are
 * -errno; after a failed write, sync or store_sync() every append fails with the same
 * error (the owner's state is unknown: it must reopen).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct synclog;

#define SYNCLOG_HEADER_SIZE 32u

/* Make everything the owner has handed to its store so far durable there. */
typedef int (*synclog_store_sync_fn)(void *userdata);
/* One record being replayed; returns 0 to go on, or a negative errno to stop. */
typedef int (*synclog_replay_fn)(uint64_t first_seq, uint32_t n, const void *payload,
                                 size_t len, void *userdata);

struct synclog_stats {
        uint64_t appends;       /* records written */
        uint64_t bytes;         /* header and payload bytes written by appends */
        uint64_t switches;      /* segments left for the next */
        uint64_t store_syncs;   /* store_sync() calls that made a segment reusable */
        uint64_t waits;         /* appends that waited for one */
};

/* Open (creating dir, mode 0700, and the segments if missing) the log in dir.
 * segment_size must be a multiple of 4096 and at least 64 KiB; n_segments >= 2.
 * Appends fail with -EAGAIN until synclog_replay() has run. */
int synclog_open(const char *dir, size_t segment_size, unsigned n_segments,
                 synclog_store_sync_fn store_sync, void *userdata, struct synclog **ret);

/* Every record on disk, oldest first, to fn; then store_sync(); then the log is
 * ready for appends.  Called once, after synclog_open().  A record numbered past
 * SYNCLOG_SEGNO_MAX (synclog.c) reads as no record; where the numbering leaves no next
 * use, the replay succeeds and every append fails with -EBADMSG (damage only). */
int synclog_replay(struct synclog *l, synclog_replay_fn fn, void *userdata);

/* Write one record and fdatasync it; 0 once it is durable.  -E2BIG when it could never
 * fit a segment (the caller makes it durable another way; nothing was written). */
int synclog_append(struct synclog *l, uint64_t first_seq, uint32_t n, const void *payload,
                   size_t len);
/* The same in two steps, for a caller with work to overlap with the I/O: write the
 * record and start its write-back (errors as above), then synclog_sync() -- before
 * the next write -- makes it durable. */
int synclog_write(struct synclog *l, uint64_t first_seq, uint32_t n, const void *payload,
                  size_t len);
int synclog_sync(struct synclog *l);

/* The largest payload synclog_append() takes. */
size_t synclog_max_payload(const struct synclog *l);

void synclog_get_stats(struct synclog *l, struct synclog_stats *ret);

/* Stops the background thread; returns NULL. */
struct synclog *synclog_close(struct synclog *l);
