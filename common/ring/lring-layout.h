/* lring-layout.h -- the shared-memory layout of the catalog log ring, version 1.
 *
 * The wire format between the producer (coord-adapter's catalog commit hook) and the
 * readers (coord-lifecycle): both sides are compiled from it, and a reader refuses a
 * region whose magic, version or sizes disagree with it.  Only common/ring/lring.c and
 * tests that damage a region on purpose include it; everybody else uses lring.h.
 *
 * Two POSIX shared-memory objects:
 *
 *   NAME        (/coord-<instance>-catalog), 0600.  The producer maps it read-write;
 *               readers map it PROT_READ from an O_RDONLY descriptor.
 *
 *       offset 0              struct lring_header
 *       data_offset           the data area: capacity bytes, a byte stream of records
 *       total_size            end of the layout; the object may be larger (a restarted
 *                             producer never shrinks it, see lring.c note 6)
 *
 *   NAME.wait   struct lring_waitpage, 0600, mapped read-write by everybody: the one
 *               word readers write (the count of sleeping readers).
 *
 * The data area.  Records are laid end to end in a stream of bytes; stream position p
 * (bytes written since the producer initialized the region) lives at data byte
 * p & (capacity - 1).  A record is a struct lring_record followed by len payload bytes,
 * padded with zeros to a multiple of LRING_ALIGN, so every record starts 8-aligned and
 * is read and written in whole aligned u64 words; a record may wrap around the end of
 * the area (its words continue at data byte 0).  Positions in the header:
 *
 *     tail <= head <= reserve,  head - tail <= capacity,  reserve - head <= one record
 *
 *   tail     start of the oldest record still wholly in the data area
 *   head     end of the newest complete record (release-stored after its bytes)
 *   reserve  end of the record being written; == head between publishes.  Stored
 *            before any byte of that record: a reader that copied bytes at position p
 *            knows they were not overwritten while reserve - p <= capacity.
 *
 * Who writes what (PostgreSQL shm_mq.c style):
 *   - Everything in NAME is written by the producer only.  The static header fields and
 *     the whole region are (re)written only while hdr_seq is odd.  last_seq/last_us
 *     are written only while last_lock is odd.
 *   - lring_waitpage.waiters is written by readers only (+1 before sleeping, -1 after);
 *     the producer only reads it.  magic and version are written by the producer when it
 *     creates the object.
 *
 * All multi-byte fields are native-endian: producer and readers share one machine.
 * Concurrently accessed fields (and the data words) are read and written with __atomic
 * builtins; the barrier pairing of each access is described at the access, in lring.c.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define LRING_MAGIC             UINT64_C(0x31474e49524c4443)    /* "CDLRING1" */
#define LRING_WAIT_MAGIC        UINT64_C(0x31544941574c4443)    /* "CDLWAIT1" */
#define LRING_LAYOUT_VERSION    1u
#define LRING_WAIT_SUFFIX       ".wait"         /* == RING_SHM_WAIT_SUFFIX (ring-shm.h) */
#define LRING_CACHELINE         64
#define LRING_ALIGN             8u              /* records start at multiples of this */

/* Limits a reader enforces on a header before trusting it: capacity is a power of two
 * in [LRING_LAYOUT_CAPACITY_MIN, LRING_LAYOUT_CAPACITY_MAX], payload_max in
 * [1, capacity / 4]. */
#define LRING_LAYOUT_CAPACITY_MIN       (UINT64_C(1) << 12)
#define LRING_LAYOUT_CAPACITY_MAX       (UINT64_C(1) << 30)

struct lring_header {
        /* --- cache lines 0-1: static while hdr_seq is even ----------------------------
         * Written by the producer only, between ring_hdr_write_begin() and ring_hdr_write_end()
         * (ring-shm.c), i.e. at lring_create().  Readers copy these fields and trust the
         * copy only if hdr_seq was the same even, nonzero value before and after. */
        uint64_t magic;                 /* LRING_MAGIC */
        uint32_t version;               /* LRING_LAYOUT_VERSION */
        uint32_t hdr_seq;               /* header seqlock: 0 never initialized, odd while
                                         * the producer (re)initializes; every change
                                         * is a producer restart for readers */
        uint64_t generation;            /* producer incarnation (the adapter's) */
        uint64_t total_size;            /* data_offset + capacity */
        uint32_t header_size;           /* sizeof(struct lring_header) */
        uint32_t record_size;           /* sizeof(struct lring_record) */
        uint64_t capacity;              /* bytes of the data area, a power of two */
        uint64_t data_offset;           /* == header_size */
        uint32_t payload_max;           /* longer payloads are published OMITTED */
        uint32_t _reserved0a;
        uint8_t _reserved0[2 * LRING_CACHELINE - 64];

        /* --- cache line 2: written by the producer on every publish -------------------- */
        _Alignas(LRING_CACHELINE)
        uint64_t head;                  /* see the top of this file; 0 after init */
        uint64_t reserve;
        uint64_t tail;
        uint64_t last_seq;              /* the last committed catalog seq the producer
                                         * knows of: the newest record's, or at init the
                                         * catalog's last seq (no record) */
        uint64_t last_us;               /* CLOCK_MONOTONIC us when last_seq was
                                         * published; 0: unknown (init) */
        uint32_t last_lock;             /* seqlock of last_seq/last_us: odd while written */
        uint32_t notify;                /* futex word readers sleep on; the producer
                                         * bumps it before FUTEX_WAKE.  Never reset, so
                                         * its value never repeats across restarts */
        uint8_t _reserved1[LRING_CACHELINE - 48];
};

/* Record flags. */
#define LRING_RECORD_OMITTED    UINT32_C(0x1)   /* payload longer than payload_max: not
                                                 * copied (len is 0); read the log */
#define LRING_RECORD_FLAGS_ALL  LRING_RECORD_OMITTED

/* One committed catalog transaction.  Written by the producer only, once per stream
 * position; its words may be overwritten a lap later (readers detect that through
 * reserve).  payload: the encoded coord.CatalogTxn exactly as the log column family
 * stores it under key seq. */
struct lring_record {
        uint64_t seq;                   /* catalog sequence number, > the previous
                                         * record's (contiguous in practice) */
        uint64_t commit_us;             /* CLOCK_MONOTONIC us of the publication */
        uint32_t len;                   /* payload bytes that follow (0 if OMITTED) */
        uint32_t flags;                 /* LRING_RECORD_* */
};

/* The separate, reader-writable object NAME.wait. */
struct lring_waitpage {
        uint64_t magic;                 /* LRING_WAIT_MAGIC, written by the producer */
        uint32_t version;               /* LRING_LAYOUT_VERSION, written by the producer */
        uint32_t waiters;               /* readers inside lring_wait(); written by readers
                                         * only (atomic add/sub), read by the producer */
};

_Static_assert(sizeof(struct lring_header) == 3 * LRING_CACHELINE, "header layout");
_Static_assert(offsetof(struct lring_header, hdr_seq) == 12, "header layout");
_Static_assert(offsetof(struct lring_header, payload_max) == 56, "header layout");
_Static_assert(offsetof(struct lring_header, head) == 2 * LRING_CACHELINE, "header layout");
_Static_assert(offsetof(struct lring_header, last_lock) == 2 * LRING_CACHELINE + 40, "header layout");
_Static_assert(offsetof(struct lring_header, notify) % 4 == 0, "futex word alignment");
_Static_assert(sizeof(struct lring_record) == 24, "record layout");
_Static_assert(sizeof(struct lring_record) % LRING_ALIGN == 0, "record alignment");
_Static_assert(sizeof(struct lring_waitpage) == 16, "waitpage layout");

/* Bytes a record with a payload of len bytes takes in the stream. */
static inline uint64_t lring_record_span(uint64_t len)
{
        return sizeof(struct lring_record) + ((len + LRING_ALIGN - 1) & ~(uint64_t)(LRING_ALIGN - 1));
}
