/* fring-layout.h -- the shared-memory layout of the frontier ring, version 2.
 *
 * This header is the wire format between the producer (the controller) and the readers
 * (adapter, lifecycle, coordctl): both sides are compiled from it, and a reader refuses a
 * region whose magic, version or sizes disagree with it.  Only common/ring/fring.c and
 * tests that corrupt a region on purpose include it; everybody else uses fring.h.
 *
 * Two POSIX shared-memory objects per ring:
 *
 *   NAME        (e.g. /coord-<instance>-frontiers), 0600.  The producer maps it
 *               read-write; readers map it PROT_READ from an O_RDONLY descriptor.
 *
 *       offset 0              struct fring_header
 *       slots_offset          struct fring_slot[slot_count]       (the slot table)
 *       ring_offset           struct fring_record[ring_records]   (the change ring)
 *       total_size            end of the layout; the object may be larger (it never
 *                             shrinks, see fring.c note 6)
 *   A table grown in steps is built past total_size and becomes the layout at once
 *   (fring.c note 10): between the header and slots_offset lie retired layouts, freed.
 *
 *   NAME.wait   struct fring_waitpage, 0600, mapped read-write by everybody: the one
 *               word readers write (the count of sleeping readers).
 *
 * Who writes what (PostgreSQL shm_mq.c style):
 *   - Everything in NAME is written by the producer only.  The static header fields and
 *     the whole region are (re)written only while hdr_seq is odd.
 *   - fring_waitpage.waiters is written by readers only (+1 before sleeping, -1 after);
 *     the producer only reads it.  magic and version are written by the producer once,
 *     when it creates the object.
 *
 * All multi-byte fields are native-endian: producer and readers share one machine.
 * Concurrently accessed fields are read and written with __atomic builtins; the barrier
 * pairing of each access is described at the access, in fring.c.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define FRING_MAGIC             UINT64_C(0x31474e4952464443)    /* "CDFRING1" */
#define FRING_WAIT_MAGIC        UINT64_C(0x3154494157464443)    /* "CDFWAIT1" */
#define FRING_LAYOUT_VERSION    2u     /* 2: the table may sit past the header */
#define FRING_WAIT_SUFFIX       ".wait"         /* == RING_SHM_WAIT_SUFFIX (ring-shm.h) */
#define FRING_CACHELINE         64

/* Limits a reader enforces on a header before trusting it.  slot_count is a power of two
 * in [2, FRING_LAYOUT_SLOTS_MAX]; ring_records a power of two in
 * [FRING_LAYOUT_RECORDS_MIN, FRING_LAYOUT_RECORDS_MAX].  Both bounds keep every offset
 * computation far from overflow. */
#define FRING_LAYOUT_SLOTS_MAX          (UINT32_C(1) << 21)
#define FRING_LAYOUT_RECORDS_MIN        UINT32_C(2)
#define FRING_LAYOUT_RECORDS_MAX        (UINT32_C(1) << 22)
#define FRING_LAYOUT_OFFSET_MAX         (UINT64_C(1) << 34)     /* most slots_offset */

struct fring_header {
        /* --- cache lines 0-1: static while hdr_seq is even ----------------------------
         * Written by the producer only, and only between ring_hdr_write_begin() and
         * ring_hdr_write_end() (ring-shm.c): at fring_create(), when it rebuilds the slot
         * table and when a grown table takes over.  Readers copy these fields and trust
         * the copy only if hdr_seq was the same even, nonzero value before and after the
         * copy. */
        uint64_t magic;                 /* FRING_MAGIC */
        uint32_t version;               /* FRING_LAYOUT_VERSION */
        uint32_t hdr_seq;               /* header seqlock: 0 never initialized, odd while
                                         * the producer (re)initializes; every change
                                         * makes readers resync */
        uint64_t generation;            /* producer incarnation (informational: readers
                                         * resync on any hdr_seq change anyway) */
        uint64_t total_size;            /* end of the layout, == fring_layout_end() */
        uint32_t header_size;           /* sizeof(struct fring_header) */
        uint32_t slot_size;             /* sizeof(struct fring_slot) */
        uint32_t record_size;           /* sizeof(struct fring_record) */
        uint32_t slot_count;            /* table entries, power of two */
        uint32_t slot_limit;            /* most USED slots, <= slot_count / 2 */
        uint32_t ring_records;          /* ring entries, power of two */
        uint64_t slots_offset;          /* >= header_size, a multiple of 64: the
                                         * header's size, or further in for a table
                                         * grown in steps (fring.c note 10) */
        uint64_t ring_offset;           /* == slots_offset + slot_count * slot_size */
        uint8_t _reserved0[2 * FRING_CACHELINE - 72];

        /* --- cache line 2: written by the producer on every publish -------------------- */
        _Alignas(FRING_CACHELINE)
        uint64_t write_pos;             /* sequence number of the newest complete record
                                         * (0: none yet); reset to 0 by initialization */
        uint32_t notify;                /* futex word readers sleep on; the producer
                                         * bumps it before FUTEX_WAKE.  Never reset, so
                                         * its value never repeats across restarts */
        uint32_t _reserved1;
        uint8_t _reserved2[FRING_CACHELINE - 16];
};

/* Slot states.  A slot never moves while USED (see fring.c note 3). */
enum {
        FRING_SLOT_EMPTY = 0,           /* ends every probe sequence */
        FRING_SLOT_USED = 1,
        FRING_SLOT_TOMBSTONE = 2,       /* forgotten; probe sequences continue past it */
};

/* One collection's frontiers.  seq, state and the values are written by the producer
 * only, inside a seqlock write (slot_write_begin()/slot_write_end() in fring.c).  One
 * cache line per slot so a consistent read touches one line. */
struct fring_slot {
        uint32_t seq;                   /* seqlock: odd while the producer writes */
        uint32_t state;                 /* FRING_SLOT_* */
        uint64_t id;                    /* GlobalId; meaningful when USED */
        uint64_t upper;
        uint64_t since;
        uint64_t physical_since;
        uint8_t _reserved[FRING_CACHELINE - 40];
} __attribute__((aligned(FRING_CACHELINE)));

/* Record flags (the same bits as FRING_FRONTIER_* in fring.h). */
#define FRING_RECORD_FORGOTTEN  UINT32_C(0x1)
#define FRING_RECORD_FLAGS_ALL  FRING_RECORD_FORGOTTEN

/* One change.  Record number s (s >= 1) lives at index s & (ring_records - 1).  Written
 * by the producer only: seq = 0 (busy), payload, seq = s (ring_append() in fring.c). */
struct fring_record {
        uint64_t seq;                   /* 0 while being written, else its number */
        uint64_t id;
        uint64_t upper;
        uint64_t since;
        uint64_t physical_since;
        uint32_t flags;                 /* FRING_RECORD_* */
        uint32_t _reserved;
};

/* The separate, reader-writable object NAME.wait. */
struct fring_waitpage {
        uint64_t magic;                 /* FRING_WAIT_MAGIC, written by the producer */
        uint32_t version;               /* FRING_LAYOUT_VERSION, written by the producer */
        uint32_t waiters;               /* readers inside fring_wait(); written by readers
                                         * only (atomic add/sub), read by the producer */
};

_Static_assert(sizeof(struct fring_header) == 3 * FRING_CACHELINE, "header layout");
_Static_assert(offsetof(struct fring_header, hdr_seq) == 12, "header layout");
_Static_assert(offsetof(struct fring_header, ring_offset) == 64, "header layout");
_Static_assert(offsetof(struct fring_header, write_pos) == 2 * FRING_CACHELINE, "header layout");
_Static_assert(offsetof(struct fring_header, notify) % 4 == 0, "futex word alignment");
_Static_assert(sizeof(struct fring_slot) == FRING_CACHELINE, "slot layout");
_Static_assert(sizeof(struct fring_record) == 48, "record layout");
_Static_assert(sizeof(struct fring_waitpage) == 16, "waitpage layout");

/* Bytes of a layout with these (already validated) counts. */
static inline uint64_t fring_layout_end(uint64_t slots_offset, uint32_t slot_count,
                                        uint32_t ring_records)
{
        return slots_offset + (uint64_t)slot_count * sizeof(struct fring_slot) +
               (uint64_t)ring_records * sizeof(struct fring_record);
}

/* The size of a layout whose table follows the header, as fring_create() makes it. */
static inline uint64_t fring_layout_size(uint32_t slot_count, uint32_t ring_records)
{
        return fring_layout_end(sizeof(struct fring_header), slot_count, ring_records);
}

/* Home slot of an id: the first index its probe sequence visits (linear probing).  Part
 * of the layout contract: producer and readers must agree on it.  The splitmix64
 * finalizer spreads sequential GlobalIds over the table. */
static inline uint32_t fring_slot_home(uint64_t id, uint32_t slot_count)
{
        id ^= id >> 30;
        id *= UINT64_C(0xbf58476d1ce4e5b9);
        id ^= id >> 27;
        id *= UINT64_C(0x94d049bb133111eb);
        id ^= id >> 31;
        return (uint32_t)id & (slot_count - 1);
}
