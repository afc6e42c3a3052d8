/* adapter-oracle.h -- the timestamp oracle (DESIGN section 2).
 *
 * Timestamps are u64 milliseconds since the Unix epoch.  Write timestamps strictly
 * increase, also across restarts and when the wall clock steps back: the oracle
 * persists a high-water mark in the catalog ("oracle_hwm" in meta) ahead of every
 * timestamp it hands out, and a restarted oracle starts above it.  The mark is moved
 * ORACLE_HWM_AHEAD_MS ahead at a time, so persisting costs one catalog commit per that
 * many milliseconds of timestamps, not one per write.  With a persister
 * (oracle_set_persister()) the next mark is committed off the loop thread once half of
 * the window is used, so the loop does not wait for an fsync; only a window used up
 * before its successor is durable (a stalled disk, a clock jump) commits on the loop.
 *
 * Reads are linearizable: oracle_read_ts() is at least every write timestamp whose
 * write was acknowledged (oracle_write_applied()), so a read sees every write that was
 * acknowledged before the read started; and at least the first timestamp handed out
 * in this life (adapter-oracle.c note 6).
 *
 * Single-threaded: the adapter's loop thread.
 */
#pragma once

#include <stdbool.h>

#include <stdint.h>

struct catalog;
struct oracle;

#define ORACLE_HWM_AHEAD_MS 1000u
#define ORACLE_META_HWM "oracle_hwm"      /* its key in the catalog's meta column family */

/* The wall clock the oracle uses; tests shift it with oracle_set_clock_offset(). */
int oracle_open(struct catalog *c, struct oracle **ret);
struct oracle *oracle_free(struct oracle *o);

/* A new write timestamp, > every one handed out before (in this life or any earlier
 * one).  May commit a new high-water mark to the catalog first: -EIO etc. from it. */
int oracle_write_ts(struct oracle *o, uint64_t *ret);
/* The timestamp of an append (a group of table writes): > every append timestamp
 * before it and >= every write timestamp handed out before it.  It is the last one
 * handed out when no append has used that one yet and the clock is not past it (a
 * DDL's birth timestamp, so a DDL costs 1 ms of timestamps, not 2), else a new one
 * as oracle_write_ts() gives it. */
int oracle_append_ts(struct oracle *o, uint64_t *ret);
/* A DDL's birth timestamp: >= every write timestamp handed out before it; the last one
 * handed out in this life while the clock is not past it, else a new one as
 * oracle_write_ts() gives it (adapter-oracle.c note 4). */
int oracle_birth_ts(struct oracle *o, uint64_t *ret);
/* The write at ts is durable and acknowledged: later reads must see it. */
void oracle_write_applied(struct oracle *o, uint64_t ts);
/* The timestamp a linearizable read at "now" must include. */
uint64_t oracle_read_ts(const struct oracle *o);
/* The last write timestamp handed out (0 before the first). */
uint64_t oracle_last_write_ts(const struct oracle *o);
uint64_t oracle_hwm(const struct oracle *o);

/* Asynchronous extension of the high-water mark (adapter-oracle.c note 5).  submit
 * starts a commit of "oracle_hwm" = value off the loop thread and returns 0 (or -errno:
 * then the window is extended synchronously when it runs out); the caller reports the
 * outcome with oracle_hwm_committed() on the loop thread.  drain blocks until every
 * commit submitted so far is durable (or failed); its callbacks may still be pending. */
struct oracle_persister {
        int (*submit)(void *ctx, uint64_t value);
        void (*drain)(void *ctx);
        void *ctx;
};
void oracle_set_persister(struct oracle *o, const struct oracle_persister *p);
/* The commit started by persister->submit(value) ended with r (0: durable). */
void oracle_hwm_committed(struct oracle *o, uint64_t value, int r);
/* Marks committed on the calling thread because a window ran out (for status). */
uint64_t oracle_sync_persists(const struct oracle *o);
/* Marks committed through the persister. */
uint64_t oracle_async_persists(const struct oracle *o);

/* Test hook: add offset_ms (may be negative) to the wall clock. */
void oracle_set_clock_offset(struct oracle *o, int64_t offset_ms);
