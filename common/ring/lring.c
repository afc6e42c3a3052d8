/* lring.c -- the catalog log ring: one producer, many readers, no locks.
 *
 * coord-adapter's catalog commit hook (the producer) publishes every committed catalog
 * transaction; coord-lifecycle (a reader) applies them without a RocksDB catch-up.  The
 * layout is in lring-layout.h, the contract in lring.h.
 *
 * NOTES ON THE DESIGN
 *
 * (1) What is published.  The producer's caller (adapter_notify() in adapter/adapter.c)
 *     runs as the catalog's commit hook: after the group's synced write, with the
 *     catalog lock held, once per group, groups in seq order.  So only durable
 *     transactions are published, by one thread at a time, in increasing and (because
 *     the catalog numbers densely and hands every committed seq to the hook) contiguous
 *     seq order.  lring_publish() enforces "increasing" (-EINVAL); readers check it again
 *     (a seq that does not grow is damage) and leave contiguity to their caller, who
 *     compares with what it applied and reads the catalog log on a gap.
 *
 * (2) A byte stream of variable-size records.  head counts the bytes written since the
 *     producer initialized the region; stream position p lives at data byte
 *     p & (capacity - 1).  Records start 8-aligned and are padded to 8, and capacity is
 *     a power of two >= 4096, so every record is a whole number of aligned u64 words
 *     and a word never straddles the end of the area: a record that wraps simply
 *     continues at word 0, and both sides copy it word by word (data_put(),
 *     data_get()) with relaxed atomic accesses -- no torn word, no data race in the
 *     C11 sense.  The price is one loop iteration per 8 bytes, nothing next to the
 *     payload's protobuf decoding.
 *
 * (3) Publishing record [start, end), start = head (producer_append()):
 *       a. tail moves past every record the new bytes will overwrite (release);
 *       b. reserve = end, then a release fence: the overwrite is announced before any
 *          byte of it is stored;
 *       c. the record's words (relaxed);
 *       d. head = end (release): the record is complete.
 *     After a batch: last_seq/last_us under the last_lock seqlock (after the head store
 *     of the record carrying that seq), then the wake-up (7).
 *
 * (4) Reading record [pos, pos + span) (read_next()): load head (acquire, pairs with d:
 *     the bytes below head are complete), copy the record's words (relaxed), acquire
 *     fence, load reserve (pairs with b).  If reserve - pos <= capacity, no byte we
 *     copied had been overwritten by a later lap when we copied it (the C11 seqlock of
 *     H. Boehm, 2012: the fence makes any overwrite we saw imply the reserve that
 *     announced it).  Otherwise the copy is discarded and the reader was lapped (5).
 *     Every field copied is validated before it is used (8).  The whole read is also
 *     under the header seqlock hdr_seq, as in fring.c note 4: a reinitialization during
 *     the read discards it.
 *
 * (5) Lapping.  A reader whose cursor is more than capacity behind head, or whose copy
 *     fails the check of (4), gets -ESTALE once and its cursor moves to tail, the oldest
 *     record still in the ring.  tail is always a record boundary (it only ever moves
 *     from one record's start to the next's), and a tail that itself got overwritten
 *     meanwhile is caught by the same check at the next read.  Records in between are
 *     lost for the ring; the caller reads them from the catalog log.
 *
 * (6) Producer restart.  lring_create() opens NAME with O_CREAT but without O_EXCL,
 *     grows it if needed, maps it and reinitializes it under the header seqlock with the
 *     new generation and the catalog's last seq; positions restart at 0.  It never
 *     shrinks the object (a reader's mapping past the new end would raise SIGBUS) and a
 *     reader whose mapping is too small for the new layout remaps it (ring_shm_cover()).
 *     Readers see the hdr_seq change and get -EPIPE once, their cursor at the new
 *     ring's tail.  An exclusive flock() on NAME keeps a second producer out (-EBUSY).
 *     A restart loses nothing the caller cannot recover: the records of the old ring
 *     are all in the catalog log, and the new ring's last seq tells readers how far it
 *     goes.
 *
 * (7) Sleeping: fring.c note 7, unchanged.  Readers sleep with FUTEX_WAIT on
 *     lring_header.notify through their read-only mapping and count themselves in
 *     NAME.wait; the producer calls FUTEX_WAKE only when waiters is nonzero (Dekker:
 *     seq_cst fences on both sides), so a publish costs no system call when nobody
 *     sleeps.  lring_sleep_begin()/lring_sleep_end() are lring_wait() with the
 *     FUTEX_WAIT left to the caller (ring_sleep_begin(): the same loads, count and
 *     fence, in the same order), so that an io_uring loop can queue the wait itself
 *     (loop_futex_wait()) and be woken by the producer's FUTEX_WAKE directly.
 *
 * (8) Failures.  A damaged region gives readers -EBADMSG or -EPROTO: the header is
 *     validated on a private copy (header_validate()), positions are checked against
 *     each other (tail <= head, head - pos <= capacity, alignment), a record's len
 *     against payload_max and against the bytes up to head, its flags against the known
 *     bits, its seq against the previous record's; every index is masked with the
 *     reader's own validated capacity, and the payload buffer only grows to a size that
 *     fits in the mapped data area.  A producer killed in the middle of a publish leaves
 *     reserve > head: harmless (readers only compare reserve with what they copied);
 *     the next producer reinitializes.  A producer that finds its own records damaged
 *     when it moves tail (someone else wrote the region) drops them all: tail = head.
 */
#include "lring.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lring-layout.h"
#include "probes.h"
#include "ring-shm.h"
#include "util.h"

#define load_relaxed(p)         __atomic_load_n((p), __ATOMIC_RELAXED)
#define load_acquire(p)         __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define store_relaxed(p, v)     __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define store_release(p, v)     __atomic_store_n((p), (v), __ATOMIC_RELEASE)

#define READ_ATTEMPTS   8u      /* header changes tolerated by one reader call */
#define LAST_SPINS      1024u   /* spins on an odd last_lock before giving up for now */

#define REC_WORDS       (sizeof(struct lring_record) / sizeof(uint64_t))

_Static_assert(LRING_RECORD_OMITTED == LRING_ENTRY_OMITTED, "flag values");
_Static_assert(LRING_CAPACITY_MIN >= LRING_LAYOUT_CAPACITY_MIN &&
               LRING_CAPACITY_MAX <= LRING_LAYOUT_CAPACITY_MAX, "what we create, readers accept");

struct lring {
        struct ring_shm shm;            /* NAME read-write (holding the producer flock),
                                         * NAME.wait */
        struct lring_header *hdr;       /* == shm.map */
        uint64_t *data;                 /* the data area, inside that mapping */
        uint64_t capacity;
        uint32_t payload_max;
        /* The producer's own copies (== the header's between publishes). */
        uint64_t head, tail, last_seq;
        uint32_t last_lock;
        uint64_t generation;
        struct lring_stats stats;
};

struct lring_reader {
        struct ring_shm shm;            /* NAME read-only, NAME.wait */
        const struct lring_header *hdr; /* == shm.map */

        /* The layout as validated under the header seqlock value view.seq. */
        struct ring_hdr_view view;
        bool restart_pending;           /* hdr_seq changed: lring_read() says -EPIPE */
        uint64_t generation;
        const uint64_t *data;
        uint64_t capacity;
        uint32_t payload_max;

        /* The cursor.  Private; lring_read() works on copies and commits them only if
         * the header did not change meanwhile. */
        uint64_t pos;                   /* stream position of the next record */
        uint64_t prev_seq;              /* seq of the record before pos; 0: unknown */

        uint64_t *buf;                  /* the last payload returned (lring_entry.payload) */
        size_t buf_words;
};

static uint64_t pow2_roundup64(uint64_t x)
{
        assert(x >= 2 && x <= UINT64_C(1) << 62);
        return UINT64_C(1) << (64 - __builtin_clzll(x - 1));
}

static bool is_pow2_64(uint64_t x)
{
        return x && !(x & (x - 1));
}

int lring_name(const char *instance, char *buf, size_t size)
{
        return ring_shm_name_for(instance, "catalog", buf, size);
}

/* ---- the data area ------------------------------------------------------------------- */

/* Stores len bytes at stream position pos (8-aligned) as whole words, the last one
 * zero-padded (note 2).  Producer only. */
static void data_put(struct lring *r, uint64_t pos, const void *src, size_t len)
{
        const uint64_t wmask = r->capacity / LRING_ALIGN - 1;
        const uint8_t *s = src;
        uint64_t w = pos / LRING_ALIGN;

        assert(pos % LRING_ALIGN == 0);
        for (size_t i = 0; i < len; i += LRING_ALIGN, w++) {
                uint64_t v = 0;

                memcpy(&v, s + i, len - i < LRING_ALIGN ? len - i : LRING_ALIGN);
                store_relaxed(&r->data[w & wmask], v);
        }
}

/* Copies n words from stream position pos (8-aligned) of a data area of capacity
 * bytes.  Relaxed loads: the producer may be overwriting them (note 4). */
static void data_get(const uint64_t *data, uint64_t capacity, uint64_t pos, uint64_t *dst,
                     size_t n)
{
        const uint64_t wmask = capacity / LRING_ALIGN - 1;
        uint64_t w = pos / LRING_ALIGN;

        for (size_t i = 0; i < n; i++, w++)
                dst[i] = load_relaxed(&data[w & wmask]);
}

static void record_get(const uint64_t *data, uint64_t capacity, uint64_t pos,
                       struct lring_record *ret)
{
        uint64_t w[REC_WORDS];

        data_get(data, capacity, pos, w, REC_WORDS);
        memcpy(ret, w, sizeof(*ret));
}

/* Whether a record header read at some position is one the producer writes, given the
 * seq of the record before it (0: unknown).  Its span is then
 * lring_record_span(rec->len). */
static bool record_valid(const struct lring_record *rec, uint32_t payload_max, uint64_t prev_seq)
{
        if (rec->seq == 0 || (prev_seq && rec->seq <= prev_seq))
                return false;
        if (rec->flags & ~LRING_RECORD_FLAGS_ALL)
                return false;
        if ((rec->flags & LRING_RECORD_OMITTED) && rec->len != 0)
                return false;
        return rec->len <= payload_max;
}

/* ---- producer ------------------------------------------------------------------------ */

ring_waitpage_check_layout(struct lring_waitpage);

/* Wakes sleeping readers after a publish (if any sleep) or an initialization (always). */
static void producer_wake(struct lring *r, bool always)
{
        /* note 7: after our stores of head/last_lock (or hdr_seq) */
        int n = ring_wake(&r->hdr->notify, r->shm.wait, always);

        if (n < 0)
                return;         /* nobody sleeps */
        r->stats.wakes += !always;
        COORD_LRING_WAKE((unsigned)n);
}

/* Moves tail past every record that bytes up to stream position end would overwrite
 * (note 3a).  Plain reads: nobody else writes the region -- unless somebody damaged it,
 * in which case the records cannot be walked and all of them are dropped (note 8). */
static void producer_make_room(struct lring *r, uint64_t end)
{
        uint64_t t = r->tail;

        assert(end - r->head <= r->capacity);
        while (end - t > r->capacity) {
                struct lring_record rec;
                uint64_t span;

                record_get(r->data, r->capacity, t, &rec);
                span = lring_record_span(rec.len);
                if (t == r->head || !record_valid(&rec, r->payload_max, 0) ||
                    span > r->head - t) {
                        t = r->head;
                        break;
                }
                t += span;
        }
        if (t == r->tail)
                return;
        r->tail = t;
        /* Orders the records written so far (and their head) before the new tail: a
         * reader that loads this tail and then head sees tail <= head.  Pairs with the
         * acquire load of tail in reader_seek_tail(). */
        store_release(&r->hdr->tail, t);
}

static void producer_append(struct lring *r, const struct lring_entry *e)
{
        const bool omit = e->len > r->payload_max;
        const struct lring_record rec = {
                .seq = e->seq, .commit_us = e->commit_us,
                .len = omit ? 0 : (uint32_t)e->len,
                .flags = omit ? LRING_RECORD_OMITTED : 0,
        };
        const uint64_t start = r->head, end = start + lring_record_span(rec.len);

        producer_make_room(r, end);
        /* Announce the overwrite before making it (note 3b): a reader that sees any word
         * stored below sees this reserve (or a later one) when it re-checks.  Pairs with
         * the acquire fence in copy_intact(). */
        store_relaxed(&r->hdr->reserve, end);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        data_put(r, start, &rec, sizeof(rec));
        if (rec.len)
                data_put(r, start + sizeof(rec), e->payload, rec.len);
        /* The record is complete: a reader that loads this head sees all its words.
         * Pairs with the acquire load of head in read_next() and reader_seek_tail(). */
        store_release(&r->hdr->head, end);
        r->head = end;
        r->stats.records++;
        r->stats.omitted += omit;
        r->stats.bytes += rec.len;
        COORD_LRING_PUBLISH(rec.seq, (unsigned)e->len, rec.flags);
}

/* last_seq/last_us under their seqlock, after the head store of the record that
 * carries seq (note 3). */
static void producer_set_last(struct lring *r, uint64_t seq, uint64_t us)
{
        struct lring_header *h = r->hdr;
        uint32_t l = r->last_lock;

        assert(!(l & 1));
        store_relaxed(&h->last_lock, l + 1);
        /* Order the odd lock before the two stores: a reader that saw either sees the lock
         * changed when it re-checks.  Pairs with the acquire fence in last_read(). */
        __atomic_thread_fence(__ATOMIC_RELEASE);
        store_relaxed(&h->last_seq, seq);
        store_relaxed(&h->last_us, us);
        /* Publish the pair, and with it the head stored before: a reader that loads this
         * even value and then head sees the record of seq.  Pairs with the acquire load
         * of last_lock in last_read(). */
        store_release(&h->last_lock, l + 2);
        r->last_lock = l + 2;
        r->last_seq = seq;
}

/* (Re)initializes the mapped region empty, under the header seqlock (note 6). */
static void producer_init(struct lring *r, uint64_t last_seq)
{
        struct lring_header *h = r->hdr;
        uint32_t seq;

        seq = ring_hdr_write_begin(&h->hdr_seq);
        /* Plain stores from here: readers ignore the region while hdr_seq is odd and
         * discard whatever they read across the change.  notify is kept: its values must
         * not repeat (lring-layout.h). */
        memset(h->_reserved0, 0, sizeof(h->_reserved0));
        memset(h->_reserved1, 0, sizeof(h->_reserved1));
        memset(r->data, 0, r->capacity);
        store_relaxed(&h->magic, LRING_MAGIC);
        store_relaxed(&h->version, LRING_LAYOUT_VERSION);
        store_relaxed(&h->generation, r->generation);
        store_relaxed(&h->total_size, (uint64_t)sizeof(struct lring_header) + r->capacity);
        store_relaxed(&h->header_size, (uint32_t)sizeof(struct lring_header));
        store_relaxed(&h->record_size, (uint32_t)sizeof(struct lring_record));
        store_relaxed(&h->capacity, r->capacity);
        store_relaxed(&h->data_offset, (uint64_t)sizeof(struct lring_header));
        store_relaxed(&h->payload_max, r->payload_max);
        store_relaxed(&h->_reserved0a, 0);
        store_relaxed(&h->head, 0);
        store_relaxed(&h->reserve, 0);
        store_relaxed(&h->tail, 0);
        store_relaxed(&h->last_seq, last_seq);
        store_relaxed(&h->last_us, 0);
        /* Even again if a producer died inside producer_set_last(). */
        r->last_lock = (h->last_lock + 1) & ~UINT32_C(1);
        store_relaxed(&h->last_lock, r->last_lock);
        ring_hdr_write_end(&h->hdr_seq, seq);

        r->head = r->tail = 0;
        r->last_seq = last_seq;
        /* Readers asleep through the restart must look at the new header. */
        producer_wake(r, true);
}

int lring_create(const char *name, uint64_t capacity, uint64_t generation, uint64_t last_seq,
                 struct lring **ret)
{
        _cleanup_(lring_freep) struct lring *r = NULL;
        uint64_t size;
        int k;

        if (!ret)
                return -EINVAL;
        k = ring_shm_name_check(name);
        if (k < 0)
                return k;
        if (capacity < LRING_CAPACITY_MIN || capacity > LRING_CAPACITY_MAX)
                return -EINVAL;
        capacity = pow2_roundup64(capacity);
        size = (uint64_t)sizeof(struct lring_header) + capacity;

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        ring_shm_init(&r->shm);
        r->capacity = capacity;
        r->payload_max = (uint32_t)(capacity / 4);
        r->generation = generation;

        /* One producer at a time (note 6), NAME.wait, then NAME mapped. */
        k = ring_shm_create(&r->shm, name, size, LRING_WAIT_MAGIC, LRING_LAYOUT_VERSION);
        if (k < 0)
                return k;
        r->hdr = r->shm.map;
        r->data = (uint64_t *)((uint8_t *)r->shm.map + sizeof(struct lring_header));

        producer_init(r, last_seq);
        assert(lring_check(r));
        *ret = TAKE_PTR(r);
        return 0;
}

int lring_publish(struct lring *r, const struct lring_entry *e, size_t n)
{
        uint64_t prev;

        if (!r || (!e && n))
                return -EINVAL;
        /* Note 1: increasing seqs, checked before anything is written. */
        prev = r->last_seq;
        for (size_t i = 0; i < n; i++) {
                if (e[i].seq <= prev || e[i].flags != 0 || (e[i].len && !e[i].payload))
                        return -EINVAL;
                prev = e[i].seq;
        }
        if (n == 0)
                return 0;
        for (size_t i = 0; i < n; i++)
                producer_append(r, &e[i]);
        producer_set_last(r, e[n - 1].seq, e[n - 1].commit_us);
        producer_wake(r, false);
        return 0;
}

void lring_get_stats(const struct lring *r, struct lring_stats *ret)
{
        assert(ret);
        *ret = r ? r->stats : (struct lring_stats){ 0 };
}

bool lring_check(const struct lring *r)
{
#ifdef NDEBUG
        (void)r;
        return true;
#else
        const struct lring_header *h;
        uint64_t pos, prev = 0;

        assert(r);
        h = r->hdr;
        assert(h->magic == LRING_MAGIC && h->version == LRING_LAYOUT_VERSION);
        assert(h->hdr_seq != 0 && !(h->hdr_seq & 1));
        assert(h->generation == r->generation);
        assert(h->capacity == r->capacity && is_pow2_64(r->capacity));
        assert(r->capacity >= LRING_LAYOUT_CAPACITY_MIN && r->capacity <= LRING_LAYOUT_CAPACITY_MAX);
        assert(h->payload_max == r->payload_max && r->payload_max <= r->capacity / 4);
        assert(h->header_size == sizeof(*h) && h->data_offset == sizeof(*h));
        assert(h->record_size == sizeof(struct lring_record));
        assert(h->total_size == sizeof(*h) + r->capacity && h->total_size <= r->shm.map_size);
        assert(h->head == r->head && h->reserve == r->head && h->tail == r->tail);
        assert(r->tail <= r->head && r->head - r->tail <= r->capacity);
        assert(r->head % LRING_ALIGN == 0 && r->tail % LRING_ALIGN == 0);
        assert(h->last_lock == r->last_lock && h->last_seq == r->last_seq);
        assert(r->shm.wait->magic == LRING_WAIT_MAGIC &&
               r->shm.wait->version == LRING_LAYOUT_VERSION);

        /* Every record from tail to head: valid, increasing seqs, ending exactly at head;
         * the newest one carries last_seq (note 1). */
        for (pos = r->tail; pos < r->head; ) {
                struct lring_record rec;

                record_get(r->data, r->capacity, pos, &rec);
                assert(record_valid(&rec, r->payload_max, prev));
                assert(rec.seq <= r->last_seq);
                prev = rec.seq;
                pos += lring_record_span(rec.len);
        }
        assert(pos == r->head);
        assert(r->head == r->tail || prev == r->last_seq);
        return true;
#endif
}

int lring_unlink(const char *name)
{
        return ring_shm_unlink(name);
}

struct lring *lring_free(struct lring *r)
{
        /* ring_shm_done() releases the producer flock */
        return r ? ring_handle_free(&r->shm, NULL, r) : NULL;
}

/* ---- reader: validation -------------------------------------------------------------- */

static int header_validate(const struct lring_header *c)
{
        int k = ring_header_check_ident(c->magic, LRING_MAGIC, c->version, LRING_LAYOUT_VERSION);

        if (k < 0)
                return k;
        if (c->header_size != sizeof(struct lring_header) ||
            c->record_size != sizeof(struct lring_record))
                return -EBADMSG;
        if (!is_pow2_64(c->capacity) || c->capacity < LRING_LAYOUT_CAPACITY_MIN ||
            c->capacity > LRING_LAYOUT_CAPACITY_MAX)
                return -EBADMSG;
        /* capacity is bounded above, so none of this overflows. */
        if (c->data_offset != c->header_size || c->total_size != c->data_offset + c->capacity)
                return -EBADMSG;
        if (c->payload_max == 0 || c->payload_max > c->capacity / 4)
                return -EBADMSG;
        return 0;
}

/* The cursor to the oldest record still in the ring (note 5).  -EBADMSG if the
 * positions contradict each other.  The caller re-checks hdr_seq afterwards. */
/* Tries of reader_seek_tail() against a producer that keeps moving tail meanwhile. */
#define SEEK_TAIL_ATTEMPTS      64u

static int reader_seek_tail(struct lring_reader *rd, uint64_t *ret_pos)
{
        for (unsigned attempt = 0; attempt < SEEK_TAIL_ATTEMPTS; attempt++) {
                /* Pairs with the release store of tail in producer_make_room(): the head
                 * loaded next is at least the one of the records before this tail. */
                uint64_t t = load_acquire(&rd->hdr->tail);
                /* Pairs with the release store of head in producer_append(). */
                uint64_t h = load_acquire(&rd->hdr->head);

                if (t > h || t % LRING_ALIGN || h % LRING_ALIGN)
                        return -EBADMSG;
                if (h - t <= rd->capacity) {
                        *ret_pos = t;
                        return 0;
                }
                /* More than a ring apart: the producer wrote more than a ring between
                 * our two loads (we were preempted), and then moved tail too -- or the
                 * region is damaged, and tail stands still. */
                if (load_acquire(&rd->hdr->tail) == t)
                        return -EBADMSG;
        }
        return -EAGAIN;         /* a producer lapping us as fast as we look: later */
}

/* Validates the header as of seqlock value h (read by the caller, even and nonzero) and
 * adopts it: remaps if needed and moves the cursor to the new ring's tail.  -EAGAIN if
 * the producer touched the header meanwhile, -EBADMSG/-EPROTO if it is damaged. */
static int reader_revalidate(void *reader, uint32_t h)
{
        struct lring_reader *rd = reader;
        const struct lring_header *hdr = rd->hdr;
        struct lring_header c = {
                .record_size = load_relaxed(&hdr->record_size),
                .capacity = load_relaxed(&hdr->capacity),
                .data_offset = load_relaxed(&hdr->data_offset),
                .payload_max = load_relaxed(&hdr->payload_max),
        };
        uint64_t pos;
        int k;

        RING_HDR_COPY_IDENT(c, hdr);
        /* A producer restarted with a bigger capacity is mapped anew (note 6). */
        k = ring_reader_adopt(&rd->shm, &hdr->hdr_seq, h, header_validate(&c), c.total_size);
        if (k < 0)
                return k;
        rd->hdr = rd->shm.map;
        rd->data = (const uint64_t *)((const uint8_t *)rd->hdr + c.data_offset);
        rd->capacity = c.capacity;
        rd->payload_max = c.payload_max;
        k = reader_seek_tail(rd, &pos);
        if (k < 0)
                return k;
        rd->generation = c.generation;
        rd->restart_pending = rd->view.seq != 0;
        rd->view.seq = h;
        rd->pos = pos;
        rd->prev_seq = 0;
        if (rd->restart_pending)
                COORD_LRING_RESYNC(rd->generation, -EPIPE);
        return 0;
}

/* ---- reader: records ----------------------------------------------------------------- */

/* After copying bytes from stream position pos on: were they all still the ones written
 * there, i.e. had no later lap overwritten any of them (note 4)?  Pairs with the release
 * fence in producer_append(). */
static bool copy_intact(const struct lring_reader *rd, uint64_t pos)
{
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        return load_relaxed(&rd->hdr->reserve) - pos <= rd->capacity;
}

static int buf_reserve(struct lring_reader *rd, size_t words)
{
        uint64_t *p;

        if (words <= rd->buf_words)
                return 0;
        p = realloc(rd->buf, words * sizeof(*p));
        if (!p)
                return -ENOMEM;
        rd->buf = p;
        rd->buf_words = words;
        return 0;
}

/* Reads from *io_pos (record boundary, seq of the record before it *io_prev) to the first
 * record with seq > after_seq: 1 and *ret, or 0 at head; the position after what was
 * consumed in *io_pos and *io_prev.  -ESTALE lapped, -EBADMSG damaged, -ENOMEM. */
static int read_next(struct lring_reader *rd, uint64_t *io_pos, uint64_t *io_prev,
                     uint64_t after_seq, struct lring_entry *ret)
{
        uint64_t pos = *io_pos, prev = *io_prev, head;
        int k = 0;

        /* The records below head are complete.  Pairs with the release store of head in
         * producer_append(). */
        head = load_acquire(&rd->hdr->head);
        if (head < pos || head % LRING_ALIGN)
                return -EBADMSG;        /* went backwards without a header change */
        if (head - pos > rd->capacity)
                return -ESTALE;
        while (pos < head) {
                struct lring_record rec;
                uint64_t span;
                size_t words;

                if (head - pos < sizeof(rec))
                        return copy_intact(rd, pos) ? -EBADMSG : -ESTALE;
                record_get(rd->data, rd->capacity, pos, &rec);
                span = lring_record_span(rec.len);
                if (!record_valid(&rec, rd->payload_max, prev) || span > head - pos)
                        /* Damage -- or a lap that overwrote what we just copied. */
                        return copy_intact(rd, pos) ? -EBADMSG : -ESTALE;
                if (rec.seq <= after_seq) {
                        if (!copy_intact(rd, pos))
                                return -ESTALE;
                        pos += span;
                        prev = rec.seq;
                        continue;
                }
                /* len <= payload_max <= capacity / 4, validated: the buffer stays small
                 * next to the mapping. */
                words = (span - sizeof(rec)) / sizeof(uint64_t);
                if (buf_reserve(rd, words ? words : 1) < 0)
                        return -ENOMEM;
                data_get(rd->data, rd->capacity, pos + sizeof(rec), rd->buf, words);
                if (!copy_intact(rd, pos))
                        return -ESTALE;
                *ret = (struct lring_entry){
                        .seq = rec.seq, .commit_us = rec.commit_us,
                        .payload = (rec.flags & LRING_RECORD_OMITTED) ? NULL : rd->buf,
                        .len = rec.len, .flags = rec.flags,
                };
                pos += span;
                prev = rec.seq;
                k = 1;
                break;
        }
        *io_pos = pos;
        *io_prev = prev;
        return k;
}

/* ---- reader: public ------------------------------------------------------------------ */

/* lring_attach(), lring_wait(), lring_sleep_begin(), lring_sleep_end() and
 * lring_reader_generation(), with the helpers of the calls below, reader_sync() and
 * reader_header_moved(), as ring-shm.h spells them. */
RING_READER_DEFINE(lring, struct lring_reader, struct lring_header, LRING_WAIT_MAGIC,
                   LRING_LAYOUT_VERSION, reader_revalidate, attach_sync, reader_has_data)

/* ring_reader_attach()'s sync: the header just mapped (or remapped), brought up to date;
 * a layout that changed while it was adopted is adopted again. */
static int attach_sync(void *reader)
{
        struct lring_reader *rd = reader;
        uint32_t h;
        int k;

        rd->hdr = rd->shm.map;
        k = reader_sync(rd, &h);
        if (k == 0 && reader_header_moved(rd, h)) {
                rd->view.seq = 0;       /* adopted a layout that changed: again */
                k = -EAGAIN;
        }
        return k;
}

int lring_read(struct lring_reader *rd, uint64_t after_seq, struct lring_entry *ret)
{
        if (!rd || !ret)
                return -EINVAL;

        for (unsigned attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
                uint64_t pos, prev;
                struct lring_entry e;
                uint32_t h;
                int k;

                k = reader_sync(rd, &h);
                if (k == -RING_E_INITIALIZING)
                        return 0;       /* lring_wait() sleeps until it is done */
                if (k == -EAGAIN)
                        continue;
                if (k < 0)
                        return k;
                if (rd->restart_pending) {
                        /* Note 6: the cursor already is at the new ring's tail. */
                        rd->restart_pending = false;
                        return -EPIPE;
                }
                pos = rd->pos;
                prev = rd->prev_seq;
                k = read_next(rd, &pos, &prev, after_seq, &e);
                /* All of the above was read under hdr_seq h, or is discarded (even an
                 * error: a reinitialization in progress looks like damage). */
                if (reader_header_moved(rd, h))
                        continue;
                if (k == -ESTALE) {
                        /* Note 5.  A tail that contradicts head is damage; a header change
                         * meanwhile is seen (and handled) by the next call. */
                        k = reader_seek_tail(rd, &pos);
                        if (k == -EAGAIN)
                                continue;
                        if (k < 0)
                                return k;
                        COORD_LRING_RESYNC(rd->generation, -ESTALE);
                        rd->pos = pos;
                        rd->prev_seq = 0;
                        return -ESTALE;
                }
                if (k < 0)
                        return k;
                rd->pos = pos;
                rd->prev_seq = prev;
                if (k > 0)
                        *ret = e;
                return k;
        }
        /* The producer keeps reinitializing: nothing to read yet. */
        return 0;
}

/* last_seq/last_us under last_lock.  -EAGAIN if the lock stays odd (a producer preempted
 * or killed inside producer_set_last()). */
static int last_read(const struct lring_reader *rd, uint64_t *ret_seq, uint64_t *ret_us)
{
        const struct lring_header *h = rd->hdr;

        for (unsigned spin = 0; spin < LAST_SPINS; spin++) {
                /* Pairs with the release store in producer_set_last(): the pair, and the
                 * head stored before it, are visible if we see this even value. */
                uint32_t l = load_acquire(&h->last_lock);
                uint64_t seq, us;

                if (l & 1) {
                        ring_cpu_relax();
                        continue;
                }
                seq = load_relaxed(&h->last_seq);
                us = load_relaxed(&h->last_us);
                /* If we read either store of a later update, we see its odd lock below.
                 * Pairs with the release fence in producer_set_last(). */
                __atomic_thread_fence(__ATOMIC_ACQUIRE);
                if (load_relaxed(&h->last_lock) != l) {
                        ring_cpu_relax();
                        continue;
                }
                *ret_seq = seq;
                *ret_us = us;
                return 0;
        }
        return -EAGAIN;
}

int lring_last(struct lring_reader *rd, uint64_t *ret_seq, uint64_t *ret_us)
{
        if (!rd || !ret_seq || !ret_us)
                return -EINVAL;

        for (unsigned attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
                uint64_t seq, us;
                uint32_t h;
                int k;

                k = reader_sync(rd, &h);
                if (k == -RING_E_INITIALIZING)
                        return -EAGAIN;
                if (k == -EAGAIN)
                        continue;
                if (k < 0)
                        return k;
                k = last_read(rd, &seq, &us);
                if (reader_header_moved(rd, h))
                        continue;
                if (k < 0)
                        return k;
                *ret_seq = seq;
                *ret_us = us;
                return 0;
        }
        return -EAGAIN;
}

int lring_skip(struct lring_reader *rd)
{
        if (!rd)
                return -EINVAL;

        for (unsigned attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
                uint64_t head;
                uint32_t h;
                int k;

                k = reader_sync(rd, &h);
                if (k == -RING_E_INITIALIZING)
                        return 0;
                if (k == -EAGAIN)
                        continue;
                if (k < 0)
                        return k;
                head = load_acquire(&rd->hdr->head);
                if (reader_header_moved(rd, h))
                        continue;
                rd->restart_pending = false;
                rd->pos = head;
                rd->prev_seq = 0;
                return 0;
        }
        return 0;
}

/* Whether lring_read() may return something now.  A header being (re)initialized, or
 * one we found damaged, is not "something": we sleep until the producer finishes (and
 * wakes us), instead of spinning a caller through lring_read() errors. */
static bool reader_has_data(const void *reader)
{
        const struct lring_reader *rd = reader;
        int news = ring_hdr_news(&rd->hdr->hdr_seq, &rd->view);

        if (news != 0)
                return news > 0;
        if (rd->restart_pending)
                return true;
        return load_acquire(&rd->hdr->head) != rd->pos;
}

struct lring_reader *lring_reader_free(struct lring_reader *rd)
{
        return rd ? ring_handle_free(&rd->shm, rd->buf, rd) : NULL;
}
