/* fring.h -- the shared-memory frontier ring (DESIGN.md section 7).
 *
 * One producer process (the controller) publishes the frontiers of its collections;
 * any number of reader processes (adapter, lifecycle, coordctl) follow them without
 * ever blocking the producer.  A ring lives in two POSIX shared-memory objects, NAME
 * and NAME.wait (fring-layout.h); NAME comes from the instance id (fring_name()).
 *
 * What a reader sees:
 *   - fring_lookup(): the current frontiers of one collection, consistent per slot.
 *   - fring_read(): a stream of changes, in publish order.  A reader that falls more
 *     than the ring's capacity behind, or that sees the producer restart (or rebuild
 *     its slot table), instead gets a *snapshot*: the current frontiers of every live
 *     collection, then the changes after it.  The snapshot may span several calls.
 *   - fring_wait(): sleep until the stream may have moved (futex).
 *
 * Threads: a struct fring and a struct fring_reader are each used by one thread at a
 * time.  Producer and readers in different processes (or threads) need no locking.
 *
 * Errors: functions return 0 (or a count) on success and -errno on failure; nothing
 * here logs.  Shared memory is never trusted by readers: a damaged region gives
 * -EBADMSG (or -EPROTO for another layout version), never a crash -- except that a
 * region truncated below the size a reader mapped raises SIGBUS, as with any mapping.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fring;           /* opaque: the producer's handle */
struct fring_reader;    /* opaque: one reader's mapping and cursor */

/* Flags of a struct fring_frontier returned by fring_read(). */
enum {
        /* The collection was dropped (fring_forget()); the values are its last ones.
         * Only stream records carry it: a snapshot simply omits dropped collections. */
        FRING_FRONTIER_FORGOTTEN = 1u << 0,
};

struct fring_frontier {
        uint64_t id;                    /* GlobalId of the collection */
        uint64_t upper;
        uint64_t since;
        uint64_t physical_since;
        uint32_t flags;                 /* FRING_FRONTIER_*; must be 0 to fring_publish() */
};

/* Largest slot_capacity and ring_records fring_create() accepts. */
#define FRING_SLOT_CAPACITY_MAX (1u << 20)
#define FRING_RING_RECORDS_MAX  (1u << 22)

/* Names. */

/* Writes "/coord-<instance>-frontiers" into buf.  The instance id is [A-Za-z0-9._-]+.
 * -EINVAL on a bad instance id, -ENAMETOOLONG if the name does not fit buf or NAME_MAX. */
int fring_name(const char *instance, char *buf, size_t size);
/* Producer. */

/* Creates the ring, or takes over an existing one after a producer restart: the same
 * objects are reused (never unlinked under live readers), resized upwards if needed,
 * reinitialized empty, and stamped with `generation`; attached readers notice and
 * resync.  slot_capacity is the live collections the table starts with
 * (1..FRING_SLOT_CAPACITY_MAX; it grows, see fring_publish());
 * ring_records (1..FRING_RING_RECORDS_MAX) is rounded up to a power of two.
 * -EBUSY if another producer holds the ring (a lock that dies with the holding open
 * file: beware fork() without exec() in the producer). */
int fring_create(const char *name, uint32_t slot_capacity, uint32_t ring_records,
                 uint64_t generation, struct fring **ret);

/* Sets the frontiers of f->id (inserting it if new), appends a change record and wakes
 * sleeping readers if there are any.  A new collection in a full table doubles the
 * table first (readers resync once); -ENOSPC only at FRING_SLOT_CAPACITY_MAX live
 * collections, -ENOMEM or -errno if the table cannot grow, -EINVAL if f->flags is
 * not 0. */
int fring_publish(struct fring *r, const struct fring_frontier *f);

/* Hold the wake-ups of sleeping readers (nesting): while held, fring_publish() and
 * fring_forget() write as always but only note that a wake-up is due; the outermost
 * fring_release_wakes() makes one.  For a producer that publishes many records in one
 * go (the controller, per message it handles): one FUTEX_WAKE instead of one per
 * record -- installing 100,000 dataflows woke the readers 100,000 times.  Accept NULL. */
void fring_hold_wakes(struct fring *r);
void fring_release_wakes(struct fring *r);

/* The collection was dropped: frees its slot and appends a FRING_FRONTIER_FORGOTTEN
 * record.  -ENOENT if it is not live.  Occasionally rebuilds the slot table, which
 * makes every reader resync once. */
int fring_forget(struct fring *r, uint64_t id);

/* Debug: asserts every invariant of the producer's region; returns true so that it can
 * be written assert(fring_check(r)).  O(slot_count + ring_records). */
bool fring_check(const struct fring *r);

/* Unmaps and closes (releasing the producer lock); does not unlink: readers keep the
 * last published frontiers until a new producer takes over.  Accepts NULL. */
struct fring *fring_free(struct fring *r);
static inline void fring_freep(struct fring **r) { *r = fring_free(*r); }

/* Removes NAME and NAME.wait, for clean teardown only: readers still attached keep a
 * ring that no producer will ever write again.  -ENOENT if NAME did not exist. */
int fring_unlink(const char *name);

/* Reader. */

/* Maps NAME read-only and NAME.wait read-write.  The first fring_read() delivers a
 * snapshot.  -ENOENT if the producer never created the ring, -EAGAIN while it is
 * initializing it, -EBADMSG on a damaged region, -EPROTO on another layout version. */
int fring_attach(const char *name, struct fring_reader **ret);

/* Copies up to n changes after the reader's cursor into out and returns how many
 * (0: nothing new, including while the producer is initializing).  One call returns
 * either snapshot records or stream records, never both.
 *
 * *ret_resynced (if not NULL) is set true when this call *starts* a snapshot: the
 * caller must treat what it knew as stale.  This call's records and those of the
 * following calls, while fring_reader_resyncing() is true, are the current frontiers
 * of every live collection; a collection the snapshot does not mention is gone.  A
 * snapshot can restart (true again) before it completes.
 *
 * -EBADMSG: the region is damaged (the cursor is kept: a producer restart recovers). */
int fring_read(struct fring_reader *rd, struct fring_frontier *out, size_t n,
               bool *ret_resynced);

/* True while a snapshot is being delivered (more snapshot records are to come). */
bool fring_reader_resyncing(const struct fring_reader *rd);

/* The current frontiers of one collection, read consistently (slot seqlock).
 * -ENOENT if not live, -EAGAIN if the producer is busy initializing (or died in the
 * middle of writing that slot), -EBADMSG on a damaged region.  Does not move the
 * cursor (but starts a snapshot if it finds that the producer restarted). */
int fring_lookup(struct fring_reader *rd, uint64_t id, struct fring_frontier *ret);

/* Sleeps until the stream may have moved (a publish, a producer restart, pending
 * snapshot records) or timeout_ms passes (< 0: no timeout; 0: just check).  0 when
 * fring_read() may have something (spurious returns are possible, e.g. on a signal),
 * -ETIMEDOUT otherwise.  A region fring_read() found damaged is not news until the
 * producer rewrites it.  Readers should keep a finite timeout as a safety net. */
int fring_wait(struct fring_reader *rd, int timeout_ms);

/* fring_wait() for a caller that sleeps by other means (an event loop's io_uring futex
 * wait, loop_futex_wait()), as lring_sleep_begin(): 1 when fring_read() may have
 * something now; else 0, the reader counted as a sleeper, *ret_word the futex word
 * (shared: the producer wakes it from its process) and *ret_val the value to wait on.
 * The word lies in the reader's mapping, valid until fring_reader_free() (a remap by a
 * later fring_read() leaves a queued wait valid: the kernel keys a shared futex by the
 * object).  After every 0, call fring_sleep_end() exactly once when the sleep is over,
 * whatever its result.  -EINVAL without a reader. */
int fring_sleep_begin(struct fring_reader *rd, const uint32_t **ret_word, uint32_t *ret_val);
void fring_sleep_end(struct fring_reader *rd);

/* The generation (producer incarnation) of the layout the reader last validated. */
uint64_t fring_reader_generation(const struct fring_reader *rd);

/* Unmaps and closes.  Accepts NULL. */
struct fring_reader *fring_reader_free(struct fring_reader *rd);
static inline void fring_reader_freep(struct fring_reader **rd) { *rd = fring_reader_free(*rd); }
