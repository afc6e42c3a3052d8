/* lring.h -- the catalog log ring: committed catalog transactions in shared memory
 * (DESIGN section 7, "catalog notification ring").
 *
 * One producer process (coord-adapter, from the catalog's commit hook) publishes every
 * committed catalog transaction -- its sequence number, the monotonic time of the
 * publication and the encoded coord.CatalogTxn exactly as the log column family stores
 * it -- in seq order; reader processes (coord-lifecycle) follow them without reading
 * RocksDB.  The ring is bounded and never blocks the producer: a reader that falls more
 * than its capacity behind loses records and must read them from the catalog log.  A
 * ring lives in two POSIX shared-memory objects, NAME and NAME.wait (lring-layout.h);
 * NAME comes from the instance id (lring_name()).
 *
 * Guarantees readers may rely on (the producer's contract, lring.c note 1):
 *   - only durable transactions are published: the hook runs after the group's synced
 *     write (catalog.h);
 *   - records are published in increasing seq order; the catalog numbers densely and
 *     hands every seq to the hook, so consecutive records have consecutive seqs.
 *     Readers still check: a seq that does not grow is damage (-EBADMSG), a jump is the
 *     caller's to notice (it compares with what it applied);
 *   - the header's last seq (lring_last()) is stored after the record that carries it,
 *     so a reader that loads it and then reads to the end has seen that record (if the
 *     ring has one: at a producer start last seq is the catalog's, with no record).
 *
 * What a reader sees: lring_read() returns the records after its cursor one at a time,
 * skipping those at or below a seq the caller names; lring_wait() sleeps until there
 * may be more (futex).  A reader attaches at the oldest record still in the ring.
 *
 * Threads: a struct lring and a struct lring_reader are each used by one thread at a
 * time.  Producer and readers in different processes (or threads) need no locking.
 *
 * Errors: functions return 0 (or a count) on success and -errno on failure; nothing here
 * logs.  Shared memory is never trusted by readers: a damaged region gives -EBADMSG (or
 * -EPROTO for another layout version), never a crash -- except that a region truncated
 * below the size a reader mapped raises SIGBUS, as with any mapping.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lring;           /* opaque: the producer's handle */
struct lring_reader;    /* opaque: one reader's mapping and cursor */

/* Flags of a struct lring_entry returned by lring_read(). */
enum {
        /* The payload was longer than the ring's limit (capacity / 4) and is not in the
         * ring: payload is NULL, len 0.  Read that transaction from the catalog log. */
        LRING_ENTRY_OMITTED = 1u << 0,
};

struct lring_entry {
        uint64_t seq;                   /* catalog sequence number */
        uint64_t commit_us;             /* CLOCK_MONOTONIC us of the publication */
        /* lring_publish(): borrowed for the call.  lring_read(): borrowed from the
         * reader, valid until its next lring_read() or lring_reader_free(); NULL when
         * OMITTED.  8-aligned. */
        const void *payload;
        size_t len;                     /* payload bytes */
        uint32_t flags;                 /* LRING_ENTRY_*; must be 0 to lring_publish() */
};

#define LRING_CAPACITY_DEFAULT  (UINT64_C(1) << 20)
#define LRING_CAPACITY_MIN      (UINT64_C(1) << 12)
#define LRING_CAPACITY_MAX      (UINT64_C(1) << 30)

/* Counters of a producer since lring_create(). */
struct lring_stats {
        uint64_t records;               /* published, OMITTED ones included */
        uint64_t omitted;               /* published without their payload */
        uint64_t bytes;                 /* payload bytes copied into the ring */
        uint64_t wakes;                 /* FUTEX_WAKE calls after a publish (a reader
                                         * was asleep) */
};

/* Names. */

/* Writes "/coord-<instance>-catalog" into buf.  The instance id is [A-Za-z0-9._-]+.
 * -EINVAL on a bad instance id, -ENAMETOOLONG if the name does not fit buf or NAME_MAX. */
int lring_name(const char *instance, char *buf, size_t size);

/* Producer. */

/* Creates the ring, or takes over an existing one after a producer restart: the same
 * objects are reused (never unlinked under live readers), grown if needed,
 * reinitialized empty, stamped with `generation` and with last_seq (the catalog's last
 * committed seq: the next record must carry a larger one); attached readers notice and
 * resync (lring_read() -> -EPIPE once).  capacity (LRING_CAPACITY_MIN..MAX) is rounded
 * up to a power of two.  -EBUSY if another producer holds the ring (a lock that dies
 * with the holding open file: beware fork() without exec() in the producer). */
int lring_create(const char *name, uint64_t capacity, uint64_t generation, uint64_t last_seq,
                 struct lring **ret);

/* Appends e[0..n) in order, makes them visible, sets the header's last seq to
 * e[n-1].seq (and its time to e[n-1].commit_us), then wakes sleeping readers if there
 * are any (one FUTEX_WAKE for the batch, no system call when nobody sleeps).  A payload
 * longer than capacity / 4 is published OMITTED.  Overwrites the oldest records as
 * needed; never blocks, never fails for lack of room.  -EINVAL (nothing published) if a
 * seq is not larger than the one before it (or than last seq), or a flags is not 0. */
int lring_publish(struct lring *r, const struct lring_entry *e, size_t n);

void lring_get_stats(const struct lring *r, struct lring_stats *ret);

/* Debug: asserts every invariant of the producer's region (walks every record in the
 * ring); returns true so that it can be written assert(lring_check(r)). */
bool lring_check(const struct lring *r);

/* Unmaps and closes (releasing the producer lock); does not unlink: readers keep the
 * records until a new producer takes over.  Accepts NULL. */
struct lring *lring_free(struct lring *r);
static inline void lring_freep(struct lring **r) { *r = lring_free(*r); }

/* Removes NAME and NAME.wait, for clean teardown only.  -ENOENT if NAME did not exist. */
int lring_unlink(const char *name);

/* Reader. */

/* Maps NAME read-only and NAME.wait read-write; the cursor starts at the oldest record
 * still in the ring.  -ENOENT if the producer never created the ring, -EAGAIN while it
 * is initializing it, -EBADMSG on a damaged region, -EPROTO on another layout version. */
int lring_attach(const char *name, struct lring_reader **ret);

/* The next record after the cursor whose seq is larger than after_seq (records at or
 * below it are passed over without copying their payloads):
 *    1   *ret is that record; the cursor moved past it
 *    0   nothing more (also while the producer is initializing)
 *   -ESTALE  lapped: the producer overwrote records the reader had not read.  The cursor
 *            now is at the oldest record still in the ring; records were lost
 *   -EPIPE   the producer restarted (reinitialized the ring, normally with a new
 *            generation).  The cursor now is at the start of the new ring; records
 *            published between the old producer's last one and the new one's first may
 *            never appear (and a crash may have left out the old one's last records)
 *   -EBADMSG the region is damaged (the cursor is kept: a producer restart cures it).
 *            lring_wait() may then return at once: back off before reading again
 *   -EPROTO  another layout version
 * The three first errors mean: what the caller learns from the ring alone is no longer
 * complete; read the catalog log up to lring_last() and go on with the ring. */
int lring_read(struct lring_reader *rd, uint64_t after_seq, struct lring_entry *ret);

/* The header's last seq and its publication time (CLOCK_MONOTONIC us, 0 if unknown),
 * read consistently.  Load it before draining the ring with lring_read(): every record up
 * to it is then visible.  -EAGAIN while the producer initializes, -EBADMSG, -EPROTO. */
int lring_last(struct lring_reader *rd, uint64_t *ret_seq, uint64_t *ret_us);

/* Moves the cursor to the end of the ring without reading (a reader used only to sleep
 * in lring_wait() until the producer publishes again).  Adopts a restarted producer's
 * ring silently.  0, -EBADMSG, -EPROTO. */
int lring_skip(struct lring_reader *rd);

/* Sleeps until lring_read() may have something (a publish after the cursor, a producer
 * restart) or timeout_ms passes (< 0: no timeout; 0: just check).  0 when there may be
 * something (spurious returns are possible, e.g. on a signal), -ETIMEDOUT otherwise.  A
 * header lring_read() found damaged is not news until the producer rewrites it.  Keep a
 * finite timeout as a safety net. */
int lring_wait(struct lring_reader *rd, int timeout_ms);

/* lring_wait() for a caller that sleeps by other means (an event loop's io_uring futex
 * wait, loop_futex_wait()): 1 when lring_read() may have something now (nothing to
 * sleep for); else 0, the reader counted as a sleeper, *ret_word the futex word and
 * *ret_val the value to FUTEX_WAIT on (a shared futex: the producer wakes it from its
 * process).  The word lies in the reader's read-only mapping of NAME, valid until
 * lring_reader_free() (or a remap of a grown ring by a later call on this reader; the
 * kernel keys a shared futex by the object, so a wait queued on the old address is
 * still woken).  After every 0, call lring_sleep_end() exactly once when the sleep is
 * over, whatever its result -- a reader left counted costs the producer a FUTEX_WAKE
 * per publish.  -EINVAL without a reader or either out-pointer. */
int lring_sleep_begin(struct lring_reader *rd, const uint32_t **ret_word, uint32_t *ret_val);
void lring_sleep_end(struct lring_reader *rd);

/* The generation (producer incarnation) of the layout the reader last validated. */
uint64_t lring_reader_generation(const struct lring_reader *rd);

/* Unmaps and closes.  Accepts NULL. */
struct lring_reader *lring_reader_free(struct lring_reader *rd);
static inline void lring_reader_freep(struct lring_reader **rd) { *rd = lring_reader_free(*rd); }
