/* fring.c -- the shared-memory frontier ring: one producer, many readers, no locks.
 *
 * The controller (the producer) publishes the frontiers {upper, since, physical_since}
 * of its collections; the adapter and the lifecycle follower (readers) follow them from
 * their own processes.  The layout is in fring-layout.h, the contract in fring.h.
 *
 * NOTES ON THE DESIGN
 *
 * (1) Two views of the same data.  The slot table holds the current frontiers of every
 *     live collection; the ring holds the sequence of changes.  fring_publish() writes
 *     the slot first, then the change record, then advances write_pos.  So every record
 *     up to write_pos is already reflected in the slot table, which is what makes a
 *     resync (note 5) lossless.
 *
 * (2) The slot table is a fixed-size open-addressing hash table with linear probing,
 *     keyed by GlobalId (fring_slot_home() is part of the layout).  slot_count is twice
 *     slot_capacity rounded up to a power of two, so at most half the slots are USED.
 *     fring_forget() leaves a TOMBSTONE, which inserts reuse; tombstones followed by an
 *     EMPTY slot are turned back into EMPTY at once (table_trim_tombstones()), and
 *     when more than a quarter of the table is tombstones anyway, the producer rebuilds
 *     the table (producer_rebuild()).  Hence at least a quarter of the slots are always
 *     EMPTY and every probe sequence is short and ends.  A dense array scanned linearly
 *     would be simpler, but readers look collections up by id and should not pay
 *     O(collections) for it.
 *
 * (3) A USED slot never moves except in a rebuild, which runs under the header seqlock
 *     (note 4).  Outside rebuilds, a lookup is linearizable: slots between an id's home
 *     and its slot stay non-EMPTY while the id lives (a slot is only made EMPTY when the
 *     one after it is EMPTY), so a reader that meets an EMPTY slot first really saw a
 *     moment when the id was absent.  A forget and re-publish of the same id during one
 *     lookup may therefore report -ENOENT, which is correct for that moment.
 *
 * (4) Three seqlock-like protocols, all "write odd/zero, release, data, release even/n"
 *     against "acquire, data, acquire fence, re-check" (the C11 seqlock of H. Boehm,
 *     "Can seqlocks get along with programming language memory models?", 2012):
 *       - fring_slot.seq guards one slot (slot_write_begin/end, slot_read);
 *       - fring_record.seq is 0 while a record is rewritten and its number when done
 *         (ring_append, ring_read_record): a reader that was lapped while copying a
 *         record sees the number change;
 *       - fring_header.hdr_seq guards the whole region against (re)initialization and
 *         slot-table rebuilds (ring_hdr_write_begin/end).  Every reader operation
 *         reads hdr_seq before and re-checks it after touching the region, and
 *         discards its results if it moved.  Readers therefore never act on a torn
 *         layout.
 *     Readers never write the main object and never block the producer; the producer
 *     never waits for readers.  All data fields are accessed with __atomic builtins
 *     (relaxed unless a comment says otherwise), except the producer's own reads of its
 *     region (nobody else writes it) and the bulk zeroing inside
 *     ring_hdr_write_begin/end.
 *
 * (5) Readers.  Each fring_reader has a private cursor: the number of the last record
 *     it consumed.  It falls back to a *snapshot* when
 *       - it was lapped: write_pos - cursor > ring_records, or a record changed under
 *         it (ring_read_record() -> -ESTALE);
 *       - hdr_seq changed: the producer restarted or rebuilt the table.  The generation
 *         is reported, but the trigger is hdr_seq, so a producer that reuses its
 *         generation by mistake still cannot feed a reader records from a stale cursor;
 *       - it just attached.
 *     A snapshot loads write_pos = W (acquire), scans every slot (each read under its
 *     seqlock) over as many fring_read() calls as needed, then streams from W + 1.
 *     Changes during the scan show up in the scan, in the stream after W, or both; by
 *     note 1 nothing up to W is missed.  A reader that scans slower than the producer
 *     laps the ring resyncs again: a bounded ring cannot do better.
 *
 * (6) Producer restart.  fring_create() opens NAME with O_CREAT but without O_EXCL,
 *     grows it if the new layout is bigger, maps it and reinitializes it under the
 *     header seqlock with the new generation.  It never shrinks the object, because a
 *     reader's mapping past the new end would raise SIGBUS; a reader whose mapping is
 *     too small for the new layout remaps it from its descriptor (ring_shm_cover()).  It
 *     never unlinks: readers keep their mapping and see the restart.  An exclusive
 *     flock() on NAME keeps a second producer out (-EBUSY); it dies with the process.
 *
 * (7) Sleeping.  A reader sleeps with FUTEX_WAIT (shared) on fring_header.notify through
 *     its read-only mapping (FUTEX_WAIT only reads the word), announcing itself in
 *     fring_waitpage.waiters (the object NAME.wait, mapped read-write); the producer bumps
 *     notify and calls FUTEX_WAKE only when waiters is nonzero.  Dekker's handshake: the
 *     reader increments waiters, fences, re-checks write_pos and hdr_seq; the producer
 *     stores write_pos (or hdr_seq), fences, reads waiters; with seq_cst fences on both
 *     sides one sees the other (ring_sleep(), ring_wake() in ring-shm.c, shared with the
 *     catalog log ring).  The producer never resets waiters of a valid NAME.wait
 *     (ring_waitpage_create()): readers asleep across a restart own their increments.
 *
 * (8) Failures.  A producer killed in the middle of a slot write leaves that slot odd
 *     until the next producer reinitializes the region: lookups through it return
 *     -EAGAIN and snapshots stall there (fring_wait() then sleeps its timeout).  A
 *     reader killed inside fring_wait() leaves waiters too high, which only costs the
 *     producer a FUTEX_WAKE per publish.  A damaged region gives readers -EBADMSG or
 *     -EPROTO: every count and index read from shared memory is checked before use
 *     (header_validate(), slot states, record numbers), and every array index a reader
 *     computes is masked with its own validated copy of the table sizes.
 *
 * (10) Growth in steps.  slot_capacity is where the table starts, not a ceiling.  Past
 *     three quarters of its limit, the producer places a table of twice the limit after
 *     the current layout, where the object is zero (fring_create() frees what lies past
 *     its own), and copies the old table into it GROW_STEP slots per later publish or
 *     forget (grow_begin(), grow_copy()); readers see nothing of it.  Invariant
 *     (fring_check()): while growing, the new table holds exactly the ids USED in the
 *     old one below the copy position and those published since, with the old table's
 *     frontiers: publish and forget apply to both tables, and the copy is an upsert.
 *     No rebuild runs meanwhile (it would move slots across the copy position;
 *     producer_tidy() ends the grow instead).  grow_flip() then points the header at
 *     the new table and an empty ring after it under one header seqlock write, O(1):
 *     readers remap (note 6) and take a snapshot, as after a restart.  The retired
 *     layout is punched out PUNCH_STEP bytes per call.  A table full before its copy
 *     ends (only after a failed start) ends it at once (grow_finish()).
 */
#include "fring.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fring-layout.h"
#include "probes.h"
#include "ring-shm.h"
#include "util.h"

_Static_assert(FRING_RECORD_FORGOTTEN == FRING_FRONTIER_FORGOTTEN, "flag values");
_Static_assert(FRING_RECORD_FLAGS_ALL == FRING_FRONTIER_FORGOTTEN, "flag values");

#define load_relaxed(p)         __atomic_load_n((p), __ATOMIC_RELAXED)
#define load_acquire(p)         __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define store_relaxed(p, v)     __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define store_release(p, v)     __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* How long readers retry before giving up for now.  A seqlock writer holds a slot for a
 * handful of stores, so a slot still odd after this many spins is a preempted or dead
 * producer, not contention. */
#define SLOT_READ_SPINS         1024u
#define READ_ATTEMPTS           8u      /* header changes tolerated by one fring_read() */
#define LOOKUP_ATTEMPTS         64u     /* ... by one fring_lookup() */

/* A grow in steps (note 10): how many of the old table's slots each publish or forget
 * copies, and how many bytes of a retired layout it frees.  A grow starts past three
 * quarters of the table's limit and should end before the last quarter fills: copying
 * its 2 * limit slots at GROW_STEP per call takes limit / 8 calls, half the limit / 4
 * inserts left. */
#define GROW_STEP               16u
#define PUNCH_STEP              (UINT64_C(1) << 20)
#define LAYOUT_ALIGN            UINT64_C(4096)  /* where a grown layout starts: a page */

/* One slot table of the producer: the one readers see (fring.cur), or the one a grow
 * builds beside it (fring.next, note 10).  Plain reads: the producer is the only writer
 * of its region. */
struct ftable {
        struct fring_slot *slots;       /* inside the mapping, at offset */
        uint64_t offset;                /* slots_offset of its layout */
        uint32_t mask;                  /* slot_count - 1 */
        uint32_t limit;                 /* slot_capacity: most USED slots (note 2) */
        uint32_t used;                  /* USED slots, == the count in the table */
        uint32_t tombstones;            /* TOMBSTONE slots, == the count in the table */
};

struct fring {
        struct ring_shm shm;            /* NAME read-write (holding the producer flock),
                                         * NAME.wait */
        struct fring_header *hdr;       /* == shm.map */
        struct fring_record *ring;      /* the change ring of cur's layout */
        struct ftable cur;              /* the table the header describes */
        struct ftable next;             /* while growing: the table being filled */
        bool growing;                   /* note 10: cur's slots below scan are in next */
        bool grow_deferred;             /* a grow could not start: retry when full */
        uint32_t scan;
        uint64_t punch_from, punch_to;  /* bytes of a retired layout still to free */
        uint32_t ring_mask;             /* ring_records - 1 */
        uint64_t write_pos;             /* == hdr->write_pos: the producer's own copy */
        uint64_t generation;
        struct fring_frontier *scratch; /* cur.limit entries, for producer_rebuild() */
        struct fring_frontier *next_scratch; /* next.limit entries, scratch after the flip */
        unsigned hold_wakes;            /* fring_hold_wakes() nesting */
        bool wake_due;                  /* a publish while held: wake at the release */
};

/* A reader's position.  Private to the reader; fring_read() works on a copy and
 * commits it only if the header did not change meanwhile. */
struct reader_pos {
        uint64_t cursor;                /* last record consumed; while resyncing, the
                                         * write position the snapshot started at */
        uint32_t scan_next;             /* resyncing: next slot index to report */
        bool resyncing;                 /* a snapshot is being delivered */
        bool announce;                  /* next successful fring_read() sets *ret_resynced */
        bool stalled;                   /* the snapshot is stuck on an odd slot (note 8) */
};

struct fring_reader {
        struct ring_shm shm;            /* NAME read-only, NAME.wait */
        const struct fring_header *hdr; /* == shm.map */

        /* The layout as validated under the header seqlock value view.seq. */
        struct ring_hdr_view view;
        uint64_t generation;
        const struct fring_slot *slots;
        const struct fring_record *ring;
        uint32_t slot_mask;
        uint32_t ring_mask;

        struct reader_pos pos;
};

static bool is_pow2(uint32_t x)
{
        return x && !(x & (x - 1));
}

static uint32_t pow2_roundup(uint32_t x)
{
        assert(x >= 1 && x <= UINT32_C(1) << 31);
        return x == 1 ? 1 : UINT32_C(1) << (32 - __builtin_clz(x - 1));
}

/* ---- names --------------------------------------------------------------------------- */

int fring_name(const char *instance, char *buf, size_t size)
{
        return ring_shm_name_for(instance, "frontiers", buf, size);
}

/* ---- producer: seqlock writers ------------------------------------------------------- */

static void slot_write_begin(struct fring_slot *s)
{
        uint32_t seq = s->seq;

        assert(!(seq & 1));
        /* seq | 1 rather than seq + 1: odd even if someone else scribbled on the slot. */
        store_relaxed(&s->seq, seq | 1);
        /* Order the odd seq before the field stores that follow: a reader that sees any
         * of them sees this odd seq (or a newer one) when it re-reads seq.  Pairs with
         * the acquire fence in slot_read(). */
        __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void slot_write_end(struct fring_slot *s)
{
        assert(s->seq & 1);
        /* Publish the field stores: a reader that loads this even seq sees them all.
         * Pairs with the acquire load of seq in slot_read(). */
        store_release(&s->seq, s->seq + 1);
}

static void slot_store(struct fring_slot *s, uint32_t state, uint64_t id, uint64_t upper,
                       uint64_t since, uint64_t physical_since)
{
        slot_write_begin(s);
        store_relaxed(&s->state, state);
        store_relaxed(&s->id, id);
        store_relaxed(&s->upper, upper);
        store_relaxed(&s->since, since);
        store_relaxed(&s->physical_since, physical_since);
        slot_write_end(s);
}

/* Appends record number write_pos + 1 and makes it visible. */
static void ring_append(struct fring *r, uint64_t id, uint64_t upper, uint64_t since,
                        uint64_t physical_since, uint32_t flags)
{
        uint64_t seq = r->write_pos + 1;
        struct fring_record *rec = &r->ring[seq & r->ring_mask];

        /* Mark the record busy before overwriting record seq - ring_records, so that a
         * lapped reader still copying it notices. */
        store_relaxed(&rec->seq, 0);
        /* Order the busy mark before the payload stores: a reader that sees any new
         * payload sees seq != its number on its re-check.  Pairs with the acquire fence
         * in ring_read_record(). */
        __atomic_thread_fence(__ATOMIC_RELEASE);
        store_relaxed(&rec->id, id);
        store_relaxed(&rec->upper, upper);
        store_relaxed(&rec->since, since);
        store_relaxed(&rec->physical_since, physical_since);
        store_relaxed(&rec->flags, flags);
        /* The record is complete: a reader that loads this seq sees the payload.  Pairs
         * with the acquire load of seq in ring_read_record(). */
        store_release(&rec->seq, seq);
        /* Advance the write position: a reader that loads it sees this record and, by
         * program order, the slot update that preceded it (note 1).  Pairs with the
         * acquire loads of write_pos in read_stream() and reader_begin_resync(). */
        store_release(&r->hdr->write_pos, seq);
        r->write_pos = seq;
}

/* Wakes sleeping readers after a publish (if any sleep) or a (re)initialization
 * (always). */
ring_waitpage_check_layout(struct fring_waitpage);

static void producer_wake(struct fring *r, bool always)
{
        int n;

        if (r->hold_wakes && !always) {
                r->wake_due = true;     /* fring_release_wakes() makes it */
                return;
        }
        /* note 7: after our store of write_pos or hdr_seq */
        n = ring_wake(&r->hdr->notify, r->shm.wait, always);

        if (n >= 0)
                COORD_RING_WAKE((unsigned)n);
}

/* ---- producer: slot tables ----------------------------------------------------------- */

/* Where id lives in t, or where it would go: sets *ret_found and returns the index of
 * its USED slot, else the first TOMBSTONE of its probe sequence, else the EMPTY slot
 * that ends it. */
static uint32_t table_probe(const struct ftable *t, uint64_t id, bool *ret_found)
{
        uint32_t i = fring_slot_home(id, t->mask + 1), reuse = UINT32_MAX;

        for (uint32_t n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
                const struct fring_slot *s = &t->slots[i];

                if (s->state == FRING_SLOT_EMPTY) {
                        *ret_found = false;
                        return reuse != UINT32_MAX ? reuse : i;
                }
                if (s->state == FRING_SLOT_TOMBSTONE) {
                        if (reuse == UINT32_MAX)
                                reuse = i;
                } else if (s->id == id) {
                        *ret_found = true;
                        return i;
                }
        }
        /* Note 2 keeps a quarter of the table EMPTY, so we never get here. */
        assert(!"slot table without an EMPTY slot");
        *ret_found = false;
        return reuse;
}

/* Sets id's frontiers in slot i of t, as table_probe() found it; a new id needs room
 * (used < limit). */
static void table_store_at(struct ftable *t, uint32_t i, bool found, uint64_t id,
                           uint64_t upper, uint64_t since, uint64_t physical_since)
{
        if (!found) {
                assert(t->used < t->limit);
                if (t->slots[i].state == FRING_SLOT_TOMBSTONE)
                        t->tombstones--;
                t->used++;
        }
        slot_store(&t->slots[i], FRING_SLOT_USED, id, upper, since, physical_since);
}

static void table_put(struct ftable *t, uint64_t id, uint64_t upper, uint64_t since,
                      uint64_t physical_since)
{
        bool found;
        uint32_t i = table_probe(t, id, &found);

        table_store_at(t, i, found, id, upper, since, physical_since);
}

/* Tombstone i was just made.  If the slot after it is EMPTY, no probe sequence goes on
 * past i, so i and the tombstones right before it serve nobody: make them EMPTY.  Safe
 * under concurrent lookups because no USED slot moves (note 3). */
static void table_trim_tombstones(struct ftable *t, uint32_t i)
{
        const uint32_t mask = t->mask;

        if (t->slots[(i + 1) & mask].state != FRING_SLOT_EMPTY)
                return;
        for (uint32_t n = 0; n <= mask && t->slots[i].state == FRING_SLOT_TOMBSTONE;
             n++, i = (i - 1) & mask) {
                slot_store(&t->slots[i], FRING_SLOT_EMPTY, 0, 0, 0, 0);
                assert(t->tombstones > 0);
                t->tombstones--;
        }
}

/* Forgets id in t (a TOMBSTONE, note 2).  False if it is not there; else its last
 * frontiers in *ret (if not NULL). */
static bool table_forget(struct ftable *t, uint64_t id, struct fring_frontier *ret)
{
        struct fring_slot *s;
        bool found;
        uint32_t i = table_probe(t, id, &found);

        if (!found)
                return false;
        s = &t->slots[i];
        if (ret)
                *ret = (struct fring_frontier){ .id = id, .upper = s->upper, .since = s->since,
                                                .physical_since = s->physical_since };
        slot_store(s, FRING_SLOT_TOMBSTONE, id, s->upper, s->since, s->physical_since);
        t->used--;
        t->tombstones++;
        table_trim_tombstones(t, i);
        return true;
}

/* Rehashes cur's live slots without tombstones.  USED slots move, so this runs under the
 * header seqlock and makes every reader resync once (note 5).  Never while growing:
 * the copy's position in cur would no longer mean anything (grow_tidy()). */
static void producer_rebuild(struct fring *r)
{
        struct ftable *t = &r->cur;
        uint32_t n = 0, seq;

        assert(!r->growing);
        seq = ring_hdr_write_begin(&r->hdr->hdr_seq);
        for (uint32_t i = 0; i <= t->mask; i++) {
                struct fring_slot *s = &t->slots[i];

                if (s->state == FRING_SLOT_USED) {
                        assert(n < t->limit);
                        r->scratch[n++] = (struct fring_frontier) {
                                .id = s->id, .upper = s->upper, .since = s->since,
                                .physical_since = s->physical_since,
                        };
                }
                if (s->state != FRING_SLOT_EMPTY)
                        slot_store(s, FRING_SLOT_EMPTY, 0, 0, 0, 0);
        }
        assert(n == t->used);
        t->used = t->tombstones = 0;
        for (uint32_t k = 0; k < n; k++) {
                const struct fring_frontier *f = &r->scratch[k];

                table_put(t, f->id, f->upper, f->since, f->physical_since);
        }
        ring_hdr_write_end(&r->hdr->hdr_seq, seq);
}

/* ---- producer: layouts --------------------------------------------------------------- */

static uint64_t align_up(uint64_t x, uint64_t a)
{
        return (x + a - 1) & ~(a - 1);
}

static uint64_t table_end(const struct fring *r, const struct ftable *t)
{
        return fring_layout_end(t->offset, t->mask + 1, r->ring_mask + 1);
}

/* Points hdr, the tables and the ring into the current mapping. */
static void producer_map(struct fring *r)
{
        uint8_t *base = r->shm.map;

        r->hdr = r->shm.map;
        r->cur.slots = (struct fring_slot *)(base + r->cur.offset);
        r->ring = (struct fring_record *)(base + r->cur.offset +
                                          (uint64_t)(r->cur.mask + 1) * sizeof(struct fring_slot));
        if (r->growing)
                r->next.slots = (struct fring_slot *)(base + r->next.offset);
}

/* The header's description of cur's layout, and an empty ring.  Inside a header seqlock
 * write only. */
static void header_store_layout(struct fring *r)
{
        struct fring_header *h = r->hdr;
        const uint32_t slot_count = r->cur.mask + 1;

        store_relaxed(&h->total_size, table_end(r, &r->cur));
        store_relaxed(&h->slot_count, slot_count);
        store_relaxed(&h->slot_limit, r->cur.limit);
        store_relaxed(&h->ring_records, r->ring_mask + 1);
        store_relaxed(&h->slots_offset, r->cur.offset);
        store_relaxed(&h->ring_offset,
                      r->cur.offset + (uint64_t)slot_count * sizeof(struct fring_slot));
        store_relaxed(&h->write_pos, 0);
        r->write_pos = 0;
}

/* Frees up to `bytes` more of a retired layout (note 10).  Nobody reads it but a reader
 * that will discard what it read (the header moved since), and it reads zeros; a failure
 * costs memory only. */
static void punch_step(struct fring *r, uint64_t bytes)
{
        uint64_t n;

        if (r->punch_from >= r->punch_to)
                return;
        n = r->punch_to - r->punch_from < bytes ? r->punch_to - r->punch_from : bytes;
        (void)fallocate(r->shm.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                        (off_t)r->punch_from, (off_t)n);
        r->punch_from += n;
}

/* (Re)initializes the mapped region, empty, under the header seqlock (note 6). */
static void producer_init(struct fring *r)
{
        struct fring_header *h = r->hdr;
        uint32_t seq;

        seq = ring_hdr_write_begin(&h->hdr_seq);
        /* Plain stores from here: readers ignore the region while hdr_seq is odd and
         * discard whatever they read across the change (note 4).  notify is kept: its
         * values must not repeat (fring-layout.h). */
        memset(h->_reserved0, 0, sizeof h->_reserved0);
        memset(h->_reserved2, 0, sizeof h->_reserved2);
        memset(r->cur.slots, 0, (size_t)(r->cur.mask + 1) * sizeof(struct fring_slot));
        memset(r->ring, 0, (size_t)(r->ring_mask + 1) * sizeof *r->ring);
        store_relaxed(&h->magic, FRING_MAGIC);
        store_relaxed(&h->version, FRING_LAYOUT_VERSION);
        store_relaxed(&h->generation, r->generation);
        store_relaxed(&h->header_size, (uint32_t)sizeof(struct fring_header));
        store_relaxed(&h->slot_size, (uint32_t)sizeof(struct fring_slot));
        store_relaxed(&h->record_size, (uint32_t)sizeof(struct fring_record));
        store_relaxed(&h->_reserved1, 0);
        header_store_layout(r);
        r->cur.used = r->cur.tombstones = 0;
        ring_hdr_write_end(&h->hdr_seq, seq);

        /* Readers asleep through the restart must look at the new header. */
        producer_wake(r, true);
}

/* ---- producer: growing in steps (note 10) -------------------------------------------- */

/* Places a table of twice cur's limit past the end of cur's layout, where the object is
 * zero, and starts copying cur into it.  Nothing changes for readers yet. */
static int grow_begin(struct fring *r)
{
        uint32_t cap, slot_count;
        uint64_t offset;
        struct fring_frontier *scratch;
        int k;

        assert(!r->growing);
        if (r->cur.limit >= FRING_SLOT_CAPACITY_MAX)
                return -ENOSPC;
        cap = r->cur.limit > FRING_SLOT_CAPACITY_MAX / 2 ? FRING_SLOT_CAPACITY_MAX
                                                          : r->cur.limit * 2;
        slot_count = pow2_roundup(2 * cap);     /* note 2 */
        offset = align_up(table_end(r, &r->cur), LAYOUT_ALIGN);
        /* The rebuild buffer of the grown table, taken now so that the flip cannot fail. */
        scratch = calloc(cap, sizeof(*scratch));
        if (!scratch)
                return -ENOMEM;
        k = ring_shm_map_rw(&r->shm, fring_layout_end(offset, slot_count, r->ring_mask + 1));
        if (k < 0) {
                free(scratch);
                return k;
        }
        r->next = (struct ftable){ .offset = offset, .mask = slot_count - 1, .limit = cap };
        r->next_scratch = scratch;
        r->growing = true;
        r->scan = 0;
        producer_map(r);
        COORD_RING_GROW(r->cur.mask + 1, slot_count, 0);
        return 0;
}

/* Copies up to n more of cur's slots into next. */
static void grow_copy(struct fring *r, uint32_t n)
{
        assert(r->growing);
        for (; n > 0 && r->scan <= r->cur.mask; n--, r->scan++) {
                const struct fring_slot *s = &r->cur.slots[r->scan];

                if (s->state == FRING_SLOT_USED)
                        table_put(&r->next, s->id, s->upper, s->since, s->physical_since);
        }
}

/* Every live frontier is in next: make it the table of the header, with an empty ring
 * after it, under one header seqlock write.  Readers see a new layout and resync, as
 * after a restart (note 6), but nothing is rewritten here: the flip is O(1), and the
 * retired layout is freed a step at a time. */
static void grow_flip(struct fring *r)
{
        struct ftable old = r->cur;
        uint32_t seq;

        assert(r->growing && r->scan > r->cur.mask && r->next.used == r->cur.used);
        punch_step(r, UINT64_MAX);      /* an earlier retired layout, if any is left */
        seq = ring_hdr_write_begin(&r->hdr->hdr_seq);
        r->cur = r->next;
        r->growing = false;
        r->next = (struct ftable){ 0 };
        producer_map(r);
        header_store_layout(r);
        ring_hdr_write_end(&r->hdr->hdr_seq, seq);

        free(r->scratch);
        r->scratch = TAKE_PTR(r->next_scratch);
        r->grow_deferred = false;
        r->punch_from = align_up(old.offset, LAYOUT_ALIGN);
        r->punch_to = table_end(r, &old) & ~(LAYOUT_ALIGN - 1);
        COORD_RING_GROW(old.mask + 1, r->cur.mask + 1, 1);
        producer_wake(r, true);
        /* next took cur's forgets as tombstones too; rarely, enough of them to rebuild. */
        if (r->cur.tombstones > (r->cur.mask + 1) / 4)
                producer_rebuild(r);
}

/* The table is full: end the grow now (its steps did not keep up, or it could not start
 * earlier). */
static int grow_finish(struct fring *r)
{
        int k;

        if (!r->growing) {
                k = grow_begin(r);
                if (k < 0)
                        return k;
        }
        grow_copy(r, r->cur.mask + 1 - r->scan);
        grow_flip(r);
        return 0;
}

/* After each publish or forget: a step of a grow (starting one past three quarters of
 * the limit), or of freeing a retired layout. */
static void producer_step(struct fring *r)
{
        if (!r->growing && !r->grow_deferred && r->cur.used > r->cur.limit - r->cur.limit / 4 &&
            r->cur.limit < FRING_SLOT_CAPACITY_MAX && grow_begin(r) < 0)
                r->grow_deferred = true;        /* grow_finish() tries again, and fails */
        if (r->growing) {
                grow_copy(r, GROW_STEP);
                if (r->scan > r->cur.mask)
                        grow_flip(r);
        } else
                punch_step(r, PUNCH_STEP);
}

/* cur has too many tombstones: rebuild it, or, while growing, end the grow (next is
 * then the table, with fewer tombstones for its size). */
static void producer_tidy(struct fring *r)
{
        if (r->cur.tombstones <= (r->cur.mask + 1) / 4)
                return;
        if (r->growing) {
                grow_copy(r, r->cur.mask + 1 - r->scan);
                grow_flip(r);
        } else
                producer_rebuild(r);
}

/* ---- producer: public ---------------------------------------------------------------- */

int fring_create(const char *name, uint32_t slot_capacity, uint32_t ring_records,
                 uint64_t generation, struct fring **ret)
{
        _cleanup_(fring_freep) struct fring *r = NULL;
        uint32_t slot_count, records;
        uint64_t size;
        struct stat st;
        int k;

        if (!ret)
                return -EINVAL;
        k = ring_shm_name_check(name);
        if (k < 0)
                return k;
        if (slot_capacity == 0 || slot_capacity > FRING_SLOT_CAPACITY_MAX ||
            ring_records == 0 || ring_records > FRING_RING_RECORDS_MAX)
                return -EINVAL;
        /* What we create, readers accept. */
        _Static_assert(2 * FRING_SLOT_CAPACITY_MAX <= FRING_LAYOUT_SLOTS_MAX, "limits");
        _Static_assert(FRING_RING_RECORDS_MAX <= FRING_LAYOUT_RECORDS_MAX, "limits");
        slot_count = pow2_roundup(2 * slot_capacity);   /* note 2: half the table at most */
        records = pow2_roundup(ring_records < FRING_LAYOUT_RECORDS_MIN ?
                               FRING_LAYOUT_RECORDS_MIN : ring_records);
        size = fring_layout_size(slot_count, records);

        r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;
        ring_shm_init(&r->shm);
        r->cur = (struct ftable){ .offset = sizeof(struct fring_header),
                                  .mask = slot_count - 1, .limit = slot_capacity };
        r->ring_mask = records - 1;
        r->generation = generation;
        r->scratch = calloc(slot_capacity, sizeof *r->scratch);
        if (!r->scratch)
                return -ENOMEM;

        /* One producer at a time (note 6), NAME.wait, then NAME mapped. */
        k = ring_shm_create(&r->shm, name, size, FRING_WAIT_MAGIC, FRING_LAYOUT_VERSION);
        if (k < 0)
                return k;
        producer_map(r);
        producer_init(r);
        /* Past our layout the object is zero (note 10): free what an earlier producer's
         * grown layouts left there. */
        if (fstat(r->shm.fd, &st) == 0 && (uint64_t)st.st_size > align_up(size, LAYOUT_ALIGN)) {
                r->punch_from = align_up(size, LAYOUT_ALIGN);
                r->punch_to = (uint64_t)st.st_size;
                punch_step(r, UINT64_MAX);
        }
        assert(fring_check(r));
        *ret = TAKE_PTR(r);
        return 0;
}

int fring_publish(struct fring *r, const struct fring_frontier *f)
{
        uint32_t i;
        bool found;
        int k;

        if (!r || !f || f->flags != 0)
                return -EINVAL;
        i = table_probe(&r->cur, f->id, &found);
        if (!found && r->cur.used >= r->cur.limit) {
                k = grow_finish(r);
                if (k < 0)
                        return k == -ENOMEM ? k : -ENOSPC;
                i = table_probe(&r->cur, f->id, &found);
        }
        /* Slot first, record second (note 1); the table being grown too (note 10). */
        table_store_at(&r->cur, i, found, f->id, f->upper, f->since, f->physical_since);
        if (r->growing)
                table_put(&r->next, f->id, f->upper, f->since, f->physical_since);
        ring_append(r, f->id, f->upper, f->since, f->physical_since, 0);
        COORD_RING_PUSH(f->id, f->upper, f->since);
        producer_step(r);
        producer_wake(r, false);
        return 0;
}

void fring_hold_wakes(struct fring *r)
{
        if (r)
                r->hold_wakes++;
}

void fring_release_wakes(struct fring *r)
{
        if (!r)
                return;
        assert(r->hold_wakes > 0);
        if (--r->hold_wakes == 0 && r->wake_due) {
                r->wake_due = false;
                producer_wake(r, false);
        }
}

int fring_forget(struct fring *r, uint64_t id)
{
        struct fring_frontier f;

        if (!r)
                return -EINVAL;
        if (!table_forget(&r->cur, id, &f))
                return -ENOENT;
        if (r->growing)
                (void)table_forget(&r->next, id, NULL);   /* not there if not copied yet */
        ring_append(r, id, f.upper, f.since, f.physical_since, FRING_RECORD_FORGOTTEN);
        producer_tidy(r);
        producer_step(r);
        producer_wake(r, false);
        return 0;
}

#ifndef NDEBUG
static void table_check(const struct ftable *t)
{
        uint32_t used = 0, tombstones = 0, empty = 0;

        for (uint32_t i = 0; i <= t->mask; i++) {
                const struct fring_slot *s = &t->slots[i];
                bool found;

                assert(!(s->seq & 1));
                switch (s->state) {
                case FRING_SLOT_EMPTY:
                        empty++;
                        break;
                case FRING_SLOT_TOMBSTONE:
                        tombstones++;
                        break;
                case FRING_SLOT_USED:
                        used++;
                        /* Reachable from its home without crossing an EMPTY slot, and the
                         * only slot of its id. */
                        assert(table_probe(t, s->id, &found) == i && found);
                        break;
                default:
                        assert(!"bad slot state");
                }
        }
        assert(used == t->used && used <= t->limit && 2 * t->limit <= t->mask + 1);
        assert(tombstones == t->tombstones);
        assert(empty >= (t->mask + 1) / 4);
}
#endif

bool fring_check(const struct fring *r)
{
#ifdef NDEBUG
        return true;
#else
        const struct fring_header *h;
        uint32_t slot_count, ring_records;
        uint64_t first;

        assert(r);
        h = r->hdr;
        slot_count = r->cur.mask + 1;
        ring_records = r->ring_mask + 1;
        assert(h->magic == FRING_MAGIC && h->version == FRING_LAYOUT_VERSION);
        assert(h->hdr_seq != 0 && !(h->hdr_seq & 1));
        assert(h->generation == r->generation);
        assert(h->slot_count == slot_count && is_pow2(slot_count));
        assert(h->ring_records == ring_records && is_pow2(ring_records));
        assert(h->slot_limit == r->cur.limit);
        assert(h->header_size == sizeof *h && h->slots_offset == r->cur.offset);
        assert(h->slots_offset >= sizeof *h && h->slots_offset % FRING_CACHELINE == 0);
        assert(h->ring_offset == h->slots_offset + (uint64_t)slot_count * sizeof(struct fring_slot));
        assert(h->total_size == table_end(r, &r->cur));
        assert(h->total_size <= r->shm.map_size);
        assert(h->write_pos == r->write_pos);
        assert(r->shm.wait->magic == FRING_WAIT_MAGIC &&
               r->shm.wait->version == FRING_LAYOUT_VERSION);
        table_check(&r->cur);
        assert(r->cur.tombstones <= slot_count / 4);

        /* Note 10: while growing, next holds exactly cur's live ids below scan and those
         * published or forgotten since the grow began, with cur's frontiers. */
        if (r->growing) {
                table_check(&r->next);
                assert(r->next.offset >= table_end(r, &r->cur));
                assert(table_end(r, &r->next) <= r->shm.map_size);
                for (uint32_t i = 0; i <= r->next.mask; i++) {
                        const struct fring_slot *s = &r->next.slots[i];
                        bool found;
                        uint32_t j;

                        if (s->state != FRING_SLOT_USED)
                                continue;
                        j = table_probe(&r->cur, s->id, &found);
                        assert(found);
                        assert(r->cur.slots[j].upper == s->upper &&
                               r->cur.slots[j].since == s->since &&
                               r->cur.slots[j].physical_since == s->physical_since);
                }
                for (uint32_t i = 0; i < r->scan && i <= r->cur.mask; i++) {
                        const struct fring_slot *s = &r->cur.slots[i];
                        bool found;

                        if (s->state != FRING_SLOT_USED)
                                continue;
                        (void)table_probe(&r->next, s->id, &found);
                        assert(found);
                }
        }

        /* The last ring_records records are complete and in place; the rest never
         * written. */
        first = r->write_pos > ring_records ? r->write_pos - ring_records + 1 : 1;
        for (uint64_t s = first; s <= r->write_pos; s++) {
                const struct fring_record *rec = &r->ring[s & r->ring_mask];

                assert(rec->seq == s);
                assert(!(rec->flags & ~FRING_RECORD_FLAGS_ALL));
        }
        if (r->write_pos < ring_records)
                for (uint64_t s = r->write_pos + 1; s <= ring_records; s++)
                        assert(r->ring[s & r->ring_mask].seq == 0);
        return true;
#endif
}

int fring_unlink(const char *name)
{
        return ring_shm_unlink(name);
}

struct fring *fring_free(struct fring *r)
{
        if (!r)
                return NULL;
        free(r->next_scratch);
        /* ring_shm_done() releases the producer flock */
        return ring_handle_free(&r->shm, r->scratch, r);
}

/* ---- reader: validation -------------------------------------------------------------- */

static int header_validate(const struct fring_header *c)
{
        int k = ring_header_check_ident(c->magic, FRING_MAGIC, c->version, FRING_LAYOUT_VERSION);

        if (k < 0)
                return k;
        if (c->header_size != sizeof(struct fring_header) ||
            c->slot_size != sizeof(struct fring_slot) ||
            c->record_size != sizeof(struct fring_record))
                return -EBADMSG;
        if (!is_pow2(c->slot_count) || c->slot_count < 2 ||
            c->slot_count > FRING_LAYOUT_SLOTS_MAX)
                return -EBADMSG;
        if (c->slot_limit == 0 || c->slot_limit > c->slot_count / 2)
                return -EBADMSG;
        if (!is_pow2(c->ring_records) || c->ring_records < FRING_LAYOUT_RECORDS_MIN ||
            c->ring_records > FRING_LAYOUT_RECORDS_MAX)
                return -EBADMSG;
        /* The counts and the offset are bounded above, so none of this overflows.  A
         * grown table sits further in (note 10), but never over the header. */
        if (c->slots_offset < c->header_size || c->slots_offset % FRING_CACHELINE != 0 ||
            c->slots_offset > FRING_LAYOUT_OFFSET_MAX ||
            c->ring_offset != c->slots_offset + (uint64_t)c->slot_count * c->slot_size ||
            c->total_size != fring_layout_end(c->slots_offset, c->slot_count, c->ring_records))
                return -EBADMSG;
        return 0;
}

/* Starts a snapshot at the current write position (note 5). */
static void reader_begin_resync(struct fring_reader *rd, struct reader_pos *p, bool lapped)
{
        uint64_t old = p->cursor;

        /* Pairs with the release store of write_pos in ring_append(): every slot update
         * of the records up to the loaded position is visible to the slot reads of the
         * scan, so the snapshot plus the stream after it miss nothing (note 1). */
        p->cursor = load_acquire(&rd->hdr->write_pos);
        p->scan_next = 0;
        p->resyncing = true;
        p->announce = true;
        p->stalled = false;
        COORD_RING_RESYNC(rd->generation,
                          lapped && p->cursor - old > rd->ring_mask + 1 ?
                          p->cursor - old - (rd->ring_mask + 1) : 0);
}

/* Validates the header as of seqlock value h (read by the caller, even and nonzero) and
 * adopts it: remaps if needed and starts a snapshot.  -EAGAIN if the producer touched
 * the header meanwhile, -EBADMSG/-EPROTO if it is damaged. */
static int reader_revalidate(void *reader, uint32_t h)
{
        struct fring_reader *rd = reader;
        const struct fring_header *hdr = rd->hdr;
        struct fring_header c = {
                .slot_size = load_relaxed(&hdr->slot_size),
                .record_size = load_relaxed(&hdr->record_size),
                .slot_count = load_relaxed(&hdr->slot_count),
                .slot_limit = load_relaxed(&hdr->slot_limit),
                .ring_records = load_relaxed(&hdr->ring_records),
                .slots_offset = load_relaxed(&hdr->slots_offset),
                .ring_offset = load_relaxed(&hdr->ring_offset),
        };
        int k;

        RING_HDR_COPY_IDENT(c, hdr);
        /* A producer restarted with bigger sizes is mapped anew (note 6). */
        k = ring_reader_adopt(&rd->shm, &hdr->hdr_seq, h, header_validate(&c), c.total_size);
        if (k < 0)
                return k;
        rd->hdr = rd->shm.map;
        rd->generation = c.generation;
        rd->slots = (const struct fring_slot *)((const uint8_t *)rd->hdr + c.slots_offset);
        rd->ring = (const struct fring_record *)((const uint8_t *)rd->hdr + c.ring_offset);
        rd->slot_mask = c.slot_count - 1;
        rd->ring_mask = c.ring_records - 1;
        rd->view.seq = h;
        reader_begin_resync(rd, &rd->pos, false);
        return 0;
}

/* ---- reader: slots and records ------------------------------------------------------- */

struct slot_copy {
        uint32_t state;
        struct fring_frontier f;
};

/* Reads one slot consistently.  -EAGAIN if it stays odd (note 8), -EBADMSG on a state
 * that is not FRING_SLOT_*. */
static int slot_read(const struct fring_slot *s, struct slot_copy *ret)
{
        for (unsigned spin = 0; spin < SLOT_READ_SPINS; spin++) {
                /* Pairs with the release store in slot_write_end(). */
                uint32_t seq = load_acquire(&s->seq);
                struct slot_copy c;

                if (seq & 1) {
                        ring_cpu_relax();
                        continue;
                }
                c.state = load_relaxed(&s->state);
                c.f = (struct fring_frontier) {
                        .id = load_relaxed(&s->id),
                        .upper = load_relaxed(&s->upper),
                        .since = load_relaxed(&s->since),
                        .physical_since = load_relaxed(&s->physical_since),
                };
                /* If we read any store of a later write, we see its odd seq below.  Pairs
                 * with the release fence in slot_write_begin(). */
                __atomic_thread_fence(__ATOMIC_ACQUIRE);
                if (load_relaxed(&s->seq) != seq) {
                        ring_cpu_relax();
                        continue;
                }
                if (c.state != FRING_SLOT_EMPTY && c.state != FRING_SLOT_USED &&
                    c.state != FRING_SLOT_TOMBSTONE)
                        return -EBADMSG;
                *ret = c;
                return 0;
        }
        return -EAGAIN;
}

/* Copies record number seq (published: seq <= write_pos).  -ESTALE if it has been or is
 * being overwritten (we were lapped), -EBADMSG if the ring is damaged. */
static int ring_read_record(const struct fring_reader *rd, uint64_t seq,
                            struct fring_frontier *ret)
{
        const struct fring_record *rec = &rd->ring[seq & rd->ring_mask];
        struct fring_frontier f;
        uint64_t s;

        /* Pairs with the release store of seq in ring_append(). */
        s = load_acquire(&rec->seq);
        if (s != seq) {
                /* 0 is the busy mark; a later number at this index means the producer
                 * went round.  Anything else is not something the producer writes. */
                if (s == 0 || (s > seq && ((s - seq) & rd->ring_mask) == 0))
                        return -ESTALE;
                return -EBADMSG;
        }
        f = (struct fring_frontier) {
                .id = load_relaxed(&rec->id),
                .upper = load_relaxed(&rec->upper),
                .since = load_relaxed(&rec->since),
                .physical_since = load_relaxed(&rec->physical_since),
                .flags = load_relaxed(&rec->flags),
        };
        /* If we read any payload of a newer record, we see its busy mark (or number)
         * below.  Pairs with the release fence in ring_append(). */
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (load_relaxed(&rec->seq) != seq)
                return -ESTALE;
        if (f.flags & ~FRING_RECORD_FLAGS_ALL)
                return -EBADMSG;
        *ret = f;
        return 0;
}

static int read_snapshot(const struct fring_reader *rd, struct reader_pos *p,
                         struct fring_frontier *out, size_t n)
{
        size_t k = 0;

        assert(p->resyncing);
        while (k < n && p->scan_next <= rd->slot_mask) {
                struct slot_copy c;
                int q = slot_read(&rd->slots[p->scan_next], &c);

                if (q == -EAGAIN) {
                        p->stalled = true;
                        break;
                }
                if (q < 0)
                        return q;
                p->stalled = false;
                if (c.state == FRING_SLOT_USED)
                        out[k++] = c.f;
                p->scan_next++;
        }
        if (p->scan_next > rd->slot_mask)
                p->resyncing = p->stalled = false;
        return (int)k;
}

static int read_stream(struct fring_reader *rd, struct reader_pos *p,
                       struct fring_frontier *out, size_t n)
{
        const uint64_t ring_records = (uint64_t)rd->ring_mask + 1;
        uint64_t w;
        size_t k = 0;

        assert(!p->resyncing);
        /* Records up to w are complete, with their slot updates.  Pairs with the release
         * store of write_pos in ring_append(). */
        w = load_acquire(&rd->hdr->write_pos);
        if (w < p->cursor)
                return -EBADMSG;        /* went backwards without a header change */
        if (w - p->cursor > ring_records) {
                reader_begin_resync(rd, p, true);
                return read_snapshot(rd, p, out, n);
        }
        while (k < n && p->cursor < w) {
                int q = ring_read_record(rd, p->cursor + 1, &out[k]);

                if (q == -ESTALE) {
                        /* Lapped while copying: drop this batch, the snapshot covers it. */
                        reader_begin_resync(rd, p, true);
                        return read_snapshot(rd, p, out, n);
                }
                if (q < 0)
                        return q;
                p->cursor++;
                k++;
        }
        return (int)k;
}

/* ---- reader: public ------------------------------------------------------------------ */

/* fring_attach(), fring_wait(), fring_sleep_begin(), fring_sleep_end() and
 * fring_reader_generation(), with the helpers of the calls below, reader_sync() and
 * reader_header_moved(), as ring-shm.h spells them. */
RING_READER_DEFINE(fring, struct fring_reader, struct fring_header, FRING_WAIT_MAGIC,
                   FRING_LAYOUT_VERSION, reader_revalidate, attach_sync, reader_has_data)

/* ring_reader_attach()'s sync: the header just mapped (or remapped), brought up to date. */
static int attach_sync(void *reader)
{
        struct fring_reader *rd = reader;
        uint32_t h;

        rd->hdr = rd->shm.map;
        return reader_sync(rd, &h);
}

int fring_read(struct fring_reader *rd, struct fring_frontier *out, size_t n,
               bool *ret_resynced)
{
        if (!rd || (!out && n > 0))
                return -EINVAL;
        if (n > INT_MAX)
                n = INT_MAX;

        for (unsigned attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
                struct reader_pos p;
                uint32_t h;
                int k;

                k = reader_sync(rd, &h);
                if (k == -RING_E_INITIALIZING)
                        break;
                if (k == -EAGAIN)
                        continue;
                if (k < 0)
                        return k;

                p = rd->pos;
                k = p.resyncing ? read_snapshot(rd, &p, out, n) : read_stream(rd, &p, out, n);
                /* All of the above was read under hdr_seq h, or is discarded (even an
                 * error: a reinitialization in progress looks like damage). */
                if (reader_header_moved(rd, h))
                        continue;
                if (k < 0)
                        return k;
                if (ret_resynced)
                        *ret_resynced = p.announce;
                p.announce = false;
                rd->pos = p;
                return k;
        }
        /* The producer is (re)initializing: nothing to read yet.  fring_wait() sleeps
         * until it is done. */
        if (ret_resynced)
                *ret_resynced = false;
        return 0;
}

bool fring_reader_resyncing(const struct fring_reader *rd)
{
        return rd && rd->pos.resyncing;
}

/* Probes for id (note 3).  0, -ENOENT, -EAGAIN (odd slot), -EBADMSG. */
static int reader_probe(const struct fring_reader *rd, uint64_t id, struct fring_frontier *ret)
{
        uint32_t i = fring_slot_home(id, rd->slot_mask + 1);

        /* Bounded by the table size even if a damaged table has no EMPTY slot. */
        for (uint32_t n = 0; n <= rd->slot_mask; n++, i = (i + 1) & rd->slot_mask) {
                struct slot_copy c;
                int k = slot_read(&rd->slots[i], &c);

                if (k < 0)
                        return k;
                if (c.state == FRING_SLOT_EMPTY)
                        return -ENOENT;
                if (c.state == FRING_SLOT_USED && c.f.id == id) {
                        *ret = c.f;
                        return 0;
                }
        }
        return -ENOENT;
}

int fring_lookup(struct fring_reader *rd, uint64_t id, struct fring_frontier *ret)
{
        if (!rd)
                return -EINVAL;

        for (unsigned attempt = 0; attempt < LOOKUP_ATTEMPTS; attempt++) {
                struct fring_frontier f;
                uint32_t h;
                int k;

                k = reader_sync(rd, &h);
                if (k == -RING_E_INITIALIZING || k == -EAGAIN) {
                        ring_cpu_relax();
                        continue;
                }
                if (k < 0)
                        return k;
                k = reader_probe(rd, id, &f);
                if (reader_header_moved(rd, h) || k == -EAGAIN)
                        continue;
                if (k < 0)
                        return k;
                if (ret)
                        *ret = f;
                return 0;
        }
        return -EAGAIN;
}

/* Whether fring_read() may return something now.  A header being (re)initialized, or
 * one we found damaged, is not "something": we sleep until the producer finishes (and
 * wakes us), instead of spinning a caller through fring_read() errors. */
static bool reader_has_data(const void *reader)
{
        const struct fring_reader *rd = reader;
        int news = ring_hdr_news(&rd->hdr->hdr_seq, &rd->view);
        uint64_t w;

        if (news != 0)
                return news > 0;
        if (rd->pos.resyncing && !rd->pos.stalled)
                return true;
        w = load_acquire(&rd->hdr->write_pos);
        return w != rd->pos.cursor;
}

struct fring_reader *fring_reader_free(struct fring_reader *rd)
{
        return rd ? ring_handle_free(&rd->shm, NULL, rd) : NULL;
}
