/* test-lring.c -- the shared-memory catalog log ring (common/ring/lring.h).
 *
 * Same-process tests drive producer and reader by hand; the process tests fork a reader
 * (or a producer) and let them run against each other for real.  Children report through
 * their exit code and a MAP_SHARED result page, never through CUnit.  Every ring gets a
 * name with our pid in it and is unlinked at the end of its test.
 *
 * Payloads are a function of their seq (t_payload()), so a reader can check every byte
 * it gets: a torn or misplaced record shows.
 *
 * Exits 77 when POSIX shared memory or futexes are unavailable.
 */
#include "ring/lring.h"

#include <assert.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "ring/lring-layout.h"
#include "t-ring.h"
#include "t.h"
#include "util.h"

/* ---- helpers ------------------------------------------------------------------------- */

/* The payload of seq: len_mod picks the lengths (1..len_mod bytes), the bytes are a
 * function of seq and position. */
static size_t t_len(uint64_t seq, size_t len_mod)
{
        return (size_t)((seq * 2654435761u) % len_mod) + 1;
}

static void t_payload(uint64_t seq, uint8_t *buf, size_t len)
{
        for (size_t i = 0; i < len; i++)
                buf[i] = (uint8_t)(seq * 131 + i * 7 + (seq >> 8));
}

static bool t_payload_ok(const struct lring_entry *e, size_t len_mod)
{
        const uint8_t *p = e->payload;

        if (e->flags != 0 || !p || e->len != t_len(e->seq, len_mod))
                return false;
        for (size_t i = 0; i < e->len; i++)
                if (p[i] != (uint8_t)(e->seq * 131 + i * 7 + (e->seq >> 8)))
                        return false;
        return e->commit_us == e->seq * 10;
}

/* Publishes seq first..last (one call per batch records), payload lengths by len_mod. */
static int t_publish(struct lring *r, uint64_t first, uint64_t last, size_t batch, size_t len_mod)
{
        static uint8_t bufs[16][70000];
        struct lring_entry e[16];

        assert(batch >= 1 && batch <= 16 && len_mod <= sizeof bufs[0]);
        for (uint64_t s = first; s <= last; ) {
                size_t n = 0;
                int k;

                for (; n < batch && s <= last; n++, s++) {
                        size_t len = t_len(s, len_mod);

                        t_payload(s, bufs[n], len);
                        e[n] = (struct lring_entry){ .seq = s, .commit_us = s * 10,
                                                     .payload = bufs[n], .len = len };
                }
                k = lring_publish(r, e, n);
                if (k < 0)
                        return k;
        }
        return 0;
}

static int t_attach_result(const char *name)
{
        struct lring_reader *rd = NULL;
        int k = lring_attach(name, &rd);

        lring_reader_free(rd);
        return k;
}

/* Waits until a reader counted itself in NAME.wait and pid sleeps. */
static bool t_wait_sleeper(const char *name, pid_t pid)
{
        char wname[NAME_MAX + 2];
        struct t_region w;
        uint64_t deadline = now_ms() + 10000;
        bool ok = false;

        snprintf(wname, sizeof wname, "%s%s", name, LRING_WAIT_SUFFIX);
        if (!t_region_map(wname, &w))
                return false;
        while (!ok && now_ms() < deadline) {
                ok = __atomic_load_n(&((struct lring_waitpage *)w.p)->waiters, __ATOMIC_ACQUIRE) >= 1 &&
                     t_proc_sleeping(pid);
                if (!ok)
                        usleep(500);
        }
        munmap(w.p, w.size);
        return ok;
}

/* ---- 1. one reader, same process ------------------------------------------------------ */

static void test_basic(void)
{
        struct lring_reader *rd = NULL, *late = NULL;
        struct lring *r = NULL, *r2 = NULL;
        struct lring_entry e, bad[2];
        struct lring_stats st;
        uint64_t seq, us;
        char name[64];

        CU_ASSERT_EQUAL(lring_name("inst-1", name, sizeof name), 0);
        CU_ASSERT_STRING_EQUAL(name, "/coord-inst-1-catalog");
        CU_ASSERT_EQUAL(lring_name("bad/inst", name, sizeof name), -EINVAL);
        CU_ASSERT_EQUAL(lring_name("inst", name, 8), -ENAMETOOLONG);

        t_ring_name(name, sizeof name, "basic");
        CU_ASSERT_EQUAL(lring_create(name, 100, 1, 0, &r), -EINVAL);     /* too small */
        CU_ASSERT_EQUAL(lring_create(name, LRING_CAPACITY_MAX + 1, 1, 0, &r), -EINVAL);
        CU_ASSERT_EQUAL_FATAL(lring_create(name, 5000, 7, 41, &r), 0);  /* -> 8192 */
        CU_ASSERT_EQUAL(lring_create(name, 8192, 8, 41, &r2), -EBUSY);
        CU_ASSERT_EQUAL_FATAL(lring_attach(name, &rd), 0);
        CU_ASSERT_EQUAL(lring_reader_generation(rd), 7);

        /* Nothing yet; last seq is what the producer started with, time unknown. */
        CU_ASSERT_EQUAL(lring_read(rd, 0, &e), 0);
        CU_ASSERT_EQUAL(lring_last(rd, &seq, &us), 0);
        CU_ASSERT_EQUAL(seq, 41);
        CU_ASSERT_EQUAL(us, 0);
        CU_ASSERT_EQUAL(lring_wait(rd, 0), -ETIMEDOUT);

        /* Seqs must grow: nothing is written otherwise. */
        CU_ASSERT_EQUAL(t_publish(r, 41, 41, 1, 100), -EINVAL);
        bad[0] = (struct lring_entry){ .seq = 43 };
        bad[1] = (struct lring_entry){ .seq = 43 };
        CU_ASSERT_EQUAL(lring_publish(r, bad, 2), -EINVAL);
        bad[1] = (struct lring_entry){ .seq = 44, .flags = LRING_ENTRY_OMITTED };
        CU_ASSERT_EQUAL(lring_publish(r, bad, 2), -EINVAL);
        bad[1] = (struct lring_entry){ .seq = 44, .len = 3 };         /* no payload */
        CU_ASSERT_EQUAL(lring_publish(r, bad, 2), -EINVAL);
        CU_ASSERT_EQUAL(lring_publish(r, NULL, 0), 0);
        CU_ASSERT_EQUAL(lring_read(rd, 0, &e), 0);

        /* In order, with their payloads, in batches. */
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 42, 51, 3, 300), 0);
        CU_ASSERT(lring_check(r));
        CU_ASSERT_EQUAL(lring_wait(rd, 0), 0);
        CU_ASSERT_EQUAL(lring_last(rd, &seq, &us), 0);
        CU_ASSERT_EQUAL(seq, 51);
        CU_ASSERT_EQUAL(us, 510);
        for (uint64_t s = 42; s <= 51; s++) {
                CU_ASSERT_EQUAL_FATAL(lring_read(rd, 0, &e), 1);
                CU_ASSERT_EQUAL(e.seq, s);
                CU_ASSERT_TRUE(t_payload_ok(&e, 300));
                CU_ASSERT_EQUAL((uintptr_t)e.payload % 8, 0);
        }
        CU_ASSERT_EQUAL(lring_read(rd, 0, &e), 0);
        CU_ASSERT_EQUAL(lring_wait(rd, 0), -ETIMEDOUT);

        /* A reader attached late starts at the oldest record; after_seq skips. */
        CU_ASSERT_EQUAL_FATAL(lring_attach(name, &late), 0);
        CU_ASSERT_EQUAL_FATAL(lring_read(late, 0, &e), 1);
        CU_ASSERT_EQUAL(e.seq, 42);
        CU_ASSERT_EQUAL_FATAL(lring_read(late, 48, &e), 1);
        CU_ASSERT_EQUAL(e.seq, 49);
        CU_ASSERT_TRUE(t_payload_ok(&e, 300));
        CU_ASSERT_EQUAL(lring_read(late, 100, &e), 0);                  /* skips to the end */
        CU_ASSERT_EQUAL(lring_read(late, 0, &e), 0);
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 52, 52, 1, 300), 0);
        CU_ASSERT_EQUAL_FATAL(lring_read(late, 0, &e), 1);
        CU_ASSERT_EQUAL(e.seq, 52);

        /* lring_skip(): to the end without reading. */
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 53, 55, 1, 300), 0);
        CU_ASSERT_EQUAL(lring_wait(late, 0), 0);
        CU_ASSERT_EQUAL(lring_skip(late), 0);
        CU_ASSERT_EQUAL(lring_wait(late, 0), -ETIMEDOUT);
        CU_ASSERT_EQUAL(lring_read(late, 0, &e), 0);

        /* Seqs may jump (the ring does not judge gaps; its reader does). */
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 60, 60, 1, 300), 0);
        for (uint64_t s = 52; s <= 55; s++) {
                CU_ASSERT_EQUAL(lring_read(rd, 0, &e), 1);
                CU_ASSERT_EQUAL(e.seq, s);
        }
        CU_ASSERT_EQUAL(lring_read(rd, 0, &e), 1);
        CU_ASSERT_EQUAL(e.seq, 60);

        lring_get_stats(r, &st);
        CU_ASSERT_EQUAL(st.records, 15);
        CU_ASSERT_EQUAL(st.omitted, 0);
        CU_ASSERT_EQUAL(st.wakes, 0);           /* nobody ever slept */
        CU_ASSERT(lring_check(r));
        CU_ASSERT_EQUAL(lring_read(NULL, 0, &e), -EINVAL);
        CU_ASSERT_EQUAL(lring_read(rd, 0, NULL), -EINVAL);

        lring_reader_free(late);
        lring_reader_free(rd);
        lring_free(r);
        CU_ASSERT_EQUAL(lring_unlink(name), 0);
        CU_ASSERT_EQUAL(lring_unlink(name), -ENOENT);
        CU_ASSERT_EQUAL(t_attach_result(name), -ENOENT);
}

static uint32_t t_waiters(const char *name)
{
        char wname[NAME_MAX + 2];
        struct t_region w;
        uint32_t n;

        snprintf(wname, sizeof wname, "%s%s", name, LRING_WAIT_SUFFIX);
        if (!t_region_map(wname, &w))
                return UINT32_MAX;
        n = __atomic_load_n(&((struct lring_waitpage *)w.p)->waiters, __ATOMIC_ACQUIRE);
        munmap(w.p, w.size);
        return n;
}

/* lring_sleep_begin()/_end(): the sleep of lring_wait() left to the caller (the
 * follower's event loop): counted as a sleeper in between, so a publish changes the
 * word and wakes; not counted when there is something to read. */
static void test_sleep_halves(void)
{
        struct lring_reader *rd = NULL;
        struct lring *r = NULL;
        struct lring_stats st;
        const uint32_t *word = NULL;
        uint32_t val = 0;
        char name[64];

        t_ring_name(name, sizeof name, "halves");
        CU_ASSERT_EQUAL_FATAL(lring_create(name, 8192, 1, 0, &r), 0);
        CU_ASSERT_EQUAL_FATAL(lring_attach(name, &rd), 0);
        CU_ASSERT_EQUAL(lring_sleep_begin(NULL, &word, &val), -EINVAL);

        /* Nothing to read: counted, and told what to wait on. */
        CU_ASSERT_EQUAL_FATAL(lring_sleep_begin(rd, &word, &val), 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(word);
        CU_ASSERT_EQUAL(__atomic_load_n(word, __ATOMIC_ACQUIRE), val);
        CU_ASSERT_EQUAL(t_waiters(name), 1);
        /* A publish moves the word (a FUTEX_WAIT on val would not sleep) and wakes. */
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 1, 1, 1, 100), 0);
        CU_ASSERT_NOT_EQUAL(__atomic_load_n(word, __ATOMIC_ACQUIRE), val);
        lring_get_stats(r, &st);
        CU_ASSERT_EQUAL(st.wakes, 1);
        lring_sleep_end(rd);
        CU_ASSERT_EQUAL(t_waiters(name), 0);

        /* Something to read: 1, not counted; no wake-up for the next publish. */
        CU_ASSERT_EQUAL(lring_sleep_begin(rd, &word, &val), 1);
        CU_ASSERT_EQUAL(t_waiters(name), 0);
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 2, 2, 1, 100), 0);
        lring_get_stats(r, &st);
        CU_ASSERT_EQUAL(st.wakes, 1);
        /* Skipped to the end: a sleeper again. */
        CU_ASSERT_EQUAL(lring_skip(rd), 0);
        CU_ASSERT_EQUAL(lring_sleep_begin(rd, &word, &val), 0);
        CU_ASSERT_EQUAL(t_waiters(name), 1);
        lring_sleep_end(rd);
        CU_ASSERT_EQUAL(t_waiters(name), 0);

        lring_reader_free(rd);
        lring_free(r);
        CU_ASSERT_EQUAL(lring_unlink(name), 0);
}

/* Records of every length, many laps of a small ring, read as they come: every record
 * wraps around the end at some point, and comes back whole. */
static void test_wrap(void)
{
        struct lring_reader *rd = NULL;
        struct lring *r = NULL;
        struct lring_entry e;
        uint64_t wrapped = 0, s;
        char name[64];
        struct t_region g;
        struct lring_header *h;

        t_ring_name(name, sizeof name, "wrap");
        CU_ASSERT_EQUAL_FATAL(lring_create(name, 4096, 1, 0, &r), 0);
        CU_ASSERT_EQUAL_FATAL(lring_attach(name, &rd), 0);
        CU_ASSERT_TRUE_FATAL(t_region_map(name, &g));
        h = (struct lring_header *)g.p;
        for (s = 1; s <= 3000; s++) {
                uint64_t before = h->head;

                CU_ASSERT_EQUAL_FATAL(t_publish(r, s, s, 1, 1024), 0);  /* <= capacity / 4 */
                wrapped += (before & ~(uint64_t)4095) != ((h->head - 1) & ~(uint64_t)4095);
                CU_ASSERT_EQUAL_FATAL(lring_read(rd, 0, &e), 1);
                CU_ASSERT_EQUAL(e.seq, s);
                CU_ASSERT_TRUE(t_payload_ok(&e, 1024));
                if (s % 97 == 0)
                        CU_ASSERT(lring_check(r));
        }
        CU_ASSERT_EQUAL(lring_read(rd, 0, &e), 0);
        CU_ASSERT(wrapped > 100);
        CU_ASSERT(h->head - h->tail <= 4096 && h->tail % 8 == 0);
        printf("\n    %llu records, %llu bytes, %llu wrapped around the end    ",
               (unsigned long long)(s - 1), (unsigned long long)h->head,
               (unsigned long long)wrapped);

        /* Batches of several records per publish, reader two batches behind. */
        for (uint64_t b = 0; b < 200; b++) {
                CU_ASSERT_EQUAL_FATAL(t_publish(r, s, s + 2, 3, 300), 0);
                s += 3;
                if (b >= 1)
                        for (int i = 0; i < 3; i++) {
                                CU_ASSERT_EQUAL_FATAL(lring_read(rd, 0, &e), 1);
                                CU_ASSERT_EQUAL(e.seq, s - 6 + (uint64_t)i);
                                CU_ASSERT_TRUE(t_payload_ok(&e, 300));
                        }
        }
        CU_ASSERT(lring_check(r));
        munmap(g.p, g.size);
        lring_reader_free(rd);
        lring_free(r);
        CU_ASSERT_EQUAL(lring_unlink(name), 0);
}

/* A reader that falls more than the capacity behind gets -ESTALE once, then the records
 * still in the ring; one that keeps up again reads on. */
static void test_lapped(void)
{
        struct lring_reader *rd = NULL;
        struct lring *r = NULL;
        struct lring_entry e;
        uint64_t first, s;
        char name[64];
        int k;

        t_ring_name(name, sizeof name, "lapped");
        CU_ASSERT_EQUAL_FATAL(lring_create(name, 4096, 1, 0, &r), 0);
        CU_ASSERT_EQUAL_FATAL(lring_attach(name, &rd), 0);
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 1, 5, 1, 200), 0);
        CU_ASSERT_EQUAL_FATAL(lring_read(rd, 0, &e), 1);
        CU_ASSERT_EQUAL(e.seq, 1);

        /* ~100 records of <= 200 bytes: several laps. */
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 6, 100, 4, 200), 0);
        CU_ASSERT_EQUAL(lring_read(rd, 0, &e), -ESTALE);
        k = lring_read(rd, 0, &e);
        CU_ASSERT_EQUAL_FATAL(k, 1);
        first = e.seq;
        CU_ASSERT(first > 2 && first < 100);
        CU_ASSERT_TRUE(t_payload_ok(&e, 200));
        for (s = first + 1; s <= 100; s++) {
                CU_ASSERT_EQUAL_FATAL(lring_read(rd, 0, &e), 1);
                CU_ASSERT_EQUAL(e.seq, s);
                CU_ASSERT_TRUE(t_payload_ok(&e, 200));
        }
        CU_ASSERT_EQUAL(lring_read(rd, 0, &e), 0);
        printf("\n    after the lap the ring held %llu..100    ", (unsigned long long)first);

        /* Resynced: follows again. */
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 101, 110, 2, 200), 0);
        for (s = 101; s <= 110; s++) {
                CU_ASSERT_EQUAL_FATAL(lring_read(rd, 0, &e), 1);
                CU_ASSERT_EQUAL(e.seq, s);
        }

        /* Lapped while skipping with after_seq: the same answer. */
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 111, 400, 16, 200), 0);
        CU_ASSERT_EQUAL(lring_read(rd, 390, &e), -ESTALE);
        CU_ASSERT_EQUAL_FATAL(lring_read(rd, 390, &e), 1);
        CU_ASSERT_EQUAL(e.seq, 391);
        CU_ASSERT(lring_check(r));

        lring_reader_free(rd);
        lring_free(r);
        CU_ASSERT_EQUAL(lring_unlink(name), 0);
}

/* A payload longer than capacity / 4 is published without its bytes. */
static void test_omitted(void)
{
        static uint8_t big[20000];
        struct lring_reader *rd = NULL;
        struct lring *r = NULL;
        struct lring_entry e, in[3];
        struct lring_stats st;
        char name[64];

        t_ring_name(name, sizeof name, "omit");
        CU_ASSERT_EQUAL_FATAL(lring_create(name, 16384, 1, 0, &r), 0);
        CU_ASSERT_EQUAL_FATAL(lring_attach(name, &rd), 0);
        memset(big, 0x5a, sizeof big);
        in[0] = (struct lring_entry){ .seq = 1, .commit_us = 10, .payload = big, .len = 4096 };
        in[1] = (struct lring_entry){ .seq = 2, .commit_us = 20, .payload = big, .len = 4097 };
        in[2] = (struct lring_entry){ .seq = 3, .commit_us = 30, .payload = big, .len = sizeof big };
        CU_ASSERT_EQUAL_FATAL(lring_publish(r, in, 3), 0);
        CU_ASSERT_EQUAL_FATAL(lring_read(rd, 0, &e), 1);
        CU_ASSERT_EQUAL(e.seq, 1);
        CU_ASSERT_EQUAL(e.flags, 0);
        CU_ASSERT_EQUAL(e.len, 4096);           /* exactly the limit: kept */
        CU_ASSERT(e.payload && memcmp(e.payload, big, 4096) == 0);
        for (uint64_t s = 2; s <= 3; s++) {
                CU_ASSERT_EQUAL_FATAL(lring_read(rd, 0, &e), 1);
                CU_ASSERT_EQUAL(e.seq, s);
                CU_ASSERT_EQUAL(e.flags, LRING_ENTRY_OMITTED);
                CU_ASSERT_EQUAL(e.len, 0);
                CU_ASSERT_PTR_NULL(e.payload);
                CU_ASSERT_EQUAL(e.commit_us, s * 10);
        }
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 4, 4, 1, 100), 0);
        CU_ASSERT_EQUAL_FATAL(lring_read(rd, 0, &e), 1);
        CU_ASSERT_TRUE(t_payload_ok(&e, 100));
        lring_get_stats(r, &st);
        CU_ASSERT_EQUAL(st.records, 4);
        CU_ASSERT_EQUAL(st.omitted, 2);
        CU_ASSERT(lring_check(r));

        lring_reader_free(rd);
        lring_free(r);
        CU_ASSERT_EQUAL(lring_unlink(name), 0);
}

/* ---- 2. producer restart ----------------------------------------------------------------- */

static void test_restart(void)
{
        struct lring_reader *rd = NULL;
        struct lring *r = NULL;
        struct lring_entry e;
        uint64_t seq, us;
        char name[64];

        t_ring_name(name, sizeof name, "restart");
        CU_ASSERT_EQUAL_FATAL(lring_create(name, 4096, 1, 0, &r), 0);
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 1, 10, 2, 100), 0);
        CU_ASSERT_EQUAL_FATAL(lring_attach(name, &rd), 0);
        CU_ASSERT_EQUAL_FATAL(lring_read(rd, 5, &e), 1);
        CU_ASSERT_EQUAL(e.seq, 6);

        /* The producer dies; a new one (generation 2) takes over at seq 12 (11 was
         * committed but never published: the reader must notice the gap itself). */
        r = lring_free(r);
        CU_ASSERT_EQUAL(lring_wait(rd, 0), 0);   /* records 7..10 are still there */
        CU_ASSERT_EQUAL_FATAL(lring_create(name, 4096, 2, 11, &r), 0);
        CU_ASSERT_EQUAL(lring_wait(rd, 0), 0);
        CU_ASSERT_EQUAL(lring_last(rd, &seq, &us), 0);
        CU_ASSERT_EQUAL(seq, 11);
        CU_ASSERT_EQUAL(us, 0);
        CU_ASSERT_EQUAL(lring_read(rd, 0, &e), -EPIPE);
        CU_ASSERT_EQUAL(lring_reader_generation(rd), 2);
        CU_ASSERT_EQUAL(lring_read(rd, 0, &e), 0);      /* the new ring is empty */
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 12, 14, 3, 100), 0);
        for (uint64_t s = 12; s <= 14; s++) {
                CU_ASSERT_EQUAL_FATAL(lring_read(rd, 0, &e), 1);
                CU_ASSERT_EQUAL(e.seq, s);
                CU_ASSERT_TRUE(t_payload_ok(&e, 100));
        }
        CU_ASSERT_EQUAL(t_publish(r, 14, 14, 1, 100), -EINVAL);

        /* Bigger: the object grows, the reader remaps. */
        r = lring_free(r);
        CU_ASSERT_EQUAL_FATAL(lring_create(name, 65536, 3, 14, &r), 0);
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 15, 80, 8, 1000), 0);        /* < 64 KiB */
        CU_ASSERT_EQUAL(lring_read(rd, 0, &e), -EPIPE);
        CU_ASSERT_EQUAL(lring_reader_generation(rd), 3);
        for (uint64_t s = 15; s <= 80; s++) {
                CU_ASSERT_EQUAL_FATAL(lring_read(rd, 0, &e), 1);
                CU_ASSERT_EQUAL(e.seq, s);
                CU_ASSERT_TRUE(t_payload_ok(&e, 1000));
        }

        /* Smaller: the object keeps its size (the reader's mapping stays valid). */
        r = lring_free(r);
        CU_ASSERT_EQUAL_FATAL(lring_create(name, 4096, 4, 80, &r), 0);
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 81, 83, 1, 100), 0);
        CU_ASSERT_EQUAL(lring_read(rd, 0, &e), -EPIPE);
        CU_ASSERT_EQUAL_FATAL(lring_read(rd, 0, &e), 1);
        CU_ASSERT_EQUAL(e.seq, 81);
        CU_ASSERT_EQUAL(lring_reader_generation(rd), 4);
        CU_ASSERT(lring_check(r));

        /* A restart is silent for lring_skip(). */
        r = lring_free(r);
        CU_ASSERT_EQUAL_FATAL(lring_create(name, 4096, 5, 83, &r), 0);
        CU_ASSERT_EQUAL(lring_wait(rd, 0), 0);
        CU_ASSERT_EQUAL(lring_skip(rd), 0);
        CU_ASSERT_EQUAL(lring_wait(rd, 0), -ETIMEDOUT);
        CU_ASSERT_EQUAL(lring_read(rd, 0, &e), 0);

        lring_reader_free(rd);
        lring_free(r);
        CU_ASSERT_EQUAL(lring_unlink(name), 0);
}

/* ---- 3. processes ------------------------------------------------------------------------ */

struct fork_result {
        uint64_t records, lapped, last_seq;
        int ok;
};

/* A reader in a child process: sleeps in lring_wait() until the parent publishes, reads
 * every record and checks it, until seq `last`. */
static void reader_child(const char *name, uint64_t last, size_t len_mod, int sync_fd,
                         struct fork_result *res)
{
        struct lring_reader *rd = NULL;
        struct lring_entry e;
        uint64_t next = 1;
        char c = 'x';

        C_ASSERT(lring_attach(name, &rd) == 0);
        C_ASSERT(write(sync_fd, &c, 1) == 1);
        close(sync_fd);
        while (next <= last) {
                int k = lring_wait(rd, 10000);

                C_ASSERT(k == 0);
                while ((k = lring_read(rd, 0, &e)) == 1) {
                        C_ASSERT(e.seq == next);
                        C_ASSERT(t_payload_ok(&e, len_mod));
                        next++;
                        __atomic_store_n(&res->records, res->records + 1, __ATOMIC_RELEASE);
                }
                C_ASSERT(k == 0);
        }
        res->last_seq = next - 1;
        res->ok = 1;
        lring_reader_free(rd);
        _exit(T_EXIT_PASS);
}

static void test_fork_reader(void)
{
        struct fork_result *res = t_shared_page(sizeof(*res));
        struct lring *r = NULL;
        struct lring_stats st;
        char name[64], c;
        int sync[2];
        pid_t pid;

        CU_ASSERT_PTR_NOT_NULL_FATAL(res);
        t_ring_name(name, sizeof name, "fork");
        CU_ASSERT_EQUAL_FATAL(lring_create(name, 1 << 16, 1, 0, &r), 0);
        CU_ASSERT_EQUAL_FATAL(pipe2(sync, O_CLOEXEC), 0);
        /* The child shares the producer's open file (and its flock); it never publishes
         * and exits before the parent lets the ring go. */
        pid = t_fork();
        CU_ASSERT_FATAL(pid >= 0);
        if (pid == 0) {
                close(sync[0]);
                reader_child(name, 500, 1000, sync[1], res);
        }
        close(sync[1]);
        CU_ASSERT_EQUAL_FATAL(read(sync[0], &c, 1), 1);
        close(sync[0]);
        /* It sleeps; a publish must wake it (a FUTEX_WAKE, since it counted itself). */
        CU_ASSERT_TRUE(t_wait_sleeper(name, pid));
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 1, 1, 1, 1000), 0);
        lring_get_stats(r, &st);
        CU_ASSERT_EQUAL(st.wakes, 1);
        /* The rest in bursts of at most 50 KiB (the ring holds 64 KiB), each once the
         * child has read the previous one -- on a loaded machine it may be descheduled
         * for long, and a lap is not what this case is about -- with pauses that let
         * it fall asleep again. */
        for (uint64_t s = 2, deadline; s <= 500; s += 50) {
                uint64_t end = s + 49 > 500 ? 500 : s + 49;

                deadline = now_ms() + 10000;
                while (__atomic_load_n(&res->records, __ATOMIC_ACQUIRE) < s - 1 && now_ms() < deadline)
                        usleep(200);
                CU_ASSERT_EQUAL_FATAL(t_publish(r, s, end, 4, 1000), 0);
                usleep(2000);
        }
        CU_ASSERT_EQUAL(t_wait_child(pid), 0);
        CU_ASSERT_EQUAL(res->ok, 1);
        CU_ASSERT_EQUAL(res->records, 500);
        CU_ASSERT_EQUAL(res->last_seq, 500);
        lring_get_stats(r, &st);
        printf("\n    child read %llu records; %llu wake-ups for %llu records    ",
               (unsigned long long)res->records, (unsigned long long)st.wakes,
               (unsigned long long)st.records);
        lring_free(r);
        CU_ASSERT_EQUAL(lring_unlink(name), 0);
        munmap(res, sizeof(*res));
}

struct hammer_ctl {
        uint64_t published;
        int stop;
};

/* A producer in a child hammers a small ring; the parent reads as fast as it can and
 * checks every record it gets: laps must be reported (-ESTALE), never a torn record. */
static void test_hammer(void)
{
        struct hammer_ctl *ctl = t_shared_page(sizeof(*ctl));
        struct lring_reader *rd = NULL;
        struct lring *r = NULL;
        struct lring_entry e;
        uint64_t records = 0, lapped = 0, bad = 0, prev = 0, gaps = 0, t_end;
        char name[64];
        pid_t pid;

        CU_ASSERT_PTR_NOT_NULL_FATAL(ctl);
        t_ring_name(name, sizeof name, "hammer");
        /* Created here, published from the child: the parent gives up the lock first. */
        CU_ASSERT_EQUAL_FATAL(lring_create(name, 8192, 1, 0, &r), 0);
        CU_ASSERT_EQUAL_FATAL(lring_attach(name, &rd), 0);
        r = lring_free(r);
        pid = t_fork();
        CU_ASSERT_FATAL(pid >= 0);
        if (pid == 0) {
                struct lring *p = NULL;
                uint64_t s = 1;

                C_ASSERT(lring_create(name, 8192, 2, 0, &p) == 0);
                while (!__atomic_load_n(&ctl->stop, __ATOMIC_RELAXED)) {
                        C_ASSERT(t_publish(p, s, s + 3, 4, 1500) == 0);
                        s += 4;
                        __atomic_store_n(&ctl->published, s - 1, __ATOMIC_RELAXED);
                }
                lring_free(p);
                _exit(T_EXIT_PASS);
        }
        /* One second, longer while fewer than 1,001 records were read (a loaded machine
         * may give the reader little of that second), but never more than ten. */
        t_end = now_ms() + 1000;
        for (uint64_t hard_end = t_end + 9000, now; (now = now_ms()) < hard_end &&
                                                    (now < t_end || records <= 1000);) {
                int k = lring_read(rd, 0, &e);

                if (k == 1) {
                        records++;
                        bad += !t_payload_ok(&e, 1500);
                        gaps += prev && e.seq != prev + 1;
                        prev = e.seq;
                } else if (k == -ESTALE) {
                        lapped++;
                        prev = 0;
                } else if (k == -EPIPE) {
                        prev = 0;
                } else if (k != 0) {
                        bad++;
                        fprintf(stderr, "\n    lring_read: %d", k);
                        break;
                }
        }
        __atomic_store_n(&ctl->stop, 1, __ATOMIC_RELAXED);
        CU_ASSERT_EQUAL(t_wait_child(pid), 0);
        printf("\n    %llu records read whole, %llu laps, %llu published, %llu bad    ",
               (unsigned long long)records, (unsigned long long)lapped,
               (unsigned long long)ctl->published, (unsigned long long)bad);
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT_EQUAL(gaps, 0);               /* a gap is always announced by -ESTALE */
        CU_ASSERT(records > 1000);
        lring_reader_free(rd);
        CU_ASSERT_EQUAL(lring_unlink(name), 0);
        munmap(ctl, sizeof(*ctl));
}

/* ---- 4. bad contents --------------------------------------------------------------------- */

static void test_bad_attach(void)
{
        struct lring_header *h, saved;
        struct lring *r = NULL;
        struct t_region g;
        char name[64];

        t_ring_name(name, sizeof name, "bad");
        CU_ASSERT_EQUAL(t_attach_result(name), -ENOENT);
        CU_ASSERT_EQUAL(t_attach_result("no-slash"), -EINVAL);
        CU_ASSERT_EQUAL(lring_attach(name, NULL), -EINVAL);
        CU_ASSERT_EQUAL_FATAL(lring_create(name, 4096, 1, 0, &r), 0);
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 1, 10, 1, 100), 0);
        r = lring_free(r);
        CU_ASSERT_TRUE_FATAL(t_region_map(name, &g));
        h = (struct lring_header *)g.p;
        saved = *h;
        CU_ASSERT_EQUAL(t_attach_result(name), 0);

#define BAD_HEADER(stmt, want)                                                          \
        do {                                                                            \
                *h = saved;                                                             \
                stmt;                                                                   \
                CU_ASSERT_EQUAL(t_attach_result(name), want);                           \
        } while (0)
        BAD_HEADER(h->magic ^= 1, -EBADMSG);
        BAD_HEADER(h->version = 99, -EPROTO);
        BAD_HEADER(h->header_size = 0, -EBADMSG);
        BAD_HEADER(h->record_size = 32, -EBADMSG);
        BAD_HEADER((h->capacity = 3000, h->total_size = h->data_offset + 3000), -EBADMSG);
        BAD_HEADER((h->capacity = 2048, h->total_size = h->data_offset + 2048), -EBADMSG);
        BAD_HEADER((h->capacity = UINT64_C(1) << 31, h->total_size = h->data_offset + h->capacity), -EBADMSG);
        /* Consistent, but bigger than the object: the reader must not map past its end. */
        BAD_HEADER((h->capacity = 1 << 20, h->total_size = h->data_offset + h->capacity), -EBADMSG);
        BAD_HEADER(h->total_size += 8, -EBADMSG);
        BAD_HEADER(h->data_offset = 0, -EBADMSG);
        BAD_HEADER(h->payload_max = 0, -EBADMSG);
        BAD_HEADER(h->payload_max = 1025, -EBADMSG);
        BAD_HEADER(h->tail = h->head + 8, -EBADMSG);
        BAD_HEADER(h->tail = 4, -EBADMSG);
        BAD_HEADER((h->tail = 0, h->head = 8192), -EBADMSG);
        BAD_HEADER(h->hdr_seq |= 1, -EAGAIN);   /* producer initializing */
        BAD_HEADER(h->hdr_seq = 0, -EAGAIN);    /* never initialized */
        BAD_HEADER((void)0, 0);
#undef BAD_HEADER
        *h = saved;

        t_bad_wait_and_small(name, LRING_WAIT_SUFFIX, t_attach_result);

        munmap(g.p, g.size);
        CU_ASSERT_EQUAL(lring_unlink(name), 0);
}

/* Stream position pos of the data area, as a record. */
static struct lring_record *t_record_at(struct t_region *g, uint64_t pos)
{
        struct lring_header *h = (struct lring_header *)g->p;

        return (struct lring_record *)(g->p + h->data_offset + (pos & (h->capacity - 1)));
}

/* An attached reader whose region goes bad under it: errors, then recovery when the
 * producer restarts. */
static void test_bad_read(void)
{
        struct lring_reader *rd = NULL;
        struct lring_record *rec, saved_rec;
        struct lring_header *h, saved;
        struct lring *r = NULL;
        struct lring_entry e;
        struct t_region g;
        uint64_t seq, us, pos;
        char name[64];

        t_ring_name(name, sizeof name, "badread");
        CU_ASSERT_EQUAL_FATAL(lring_create(name, 4096, 1, 0, &r), 0);
        CU_ASSERT_EQUAL_FATAL(lring_attach(name, &rd), 0);
        CU_ASSERT_TRUE_FATAL(t_region_map(name, &g));
        h = (struct lring_header *)g.p;
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 1, 3, 1, 100), 0);
        CU_ASSERT_EQUAL_FATAL(lring_read(rd, 0, &e), 1);
        pos = lring_record_span(t_len(1, 100));         /* record 2 starts here */
        rec = t_record_at(&g, pos);
        CU_ASSERT_EQUAL_FATAL(rec->seq, 2);
        saved_rec = *rec;

#define BAD_RECORD(stmt)                                                                \
        do {                                                                            \
                *rec = saved_rec;                                                       \
                stmt;                                                                   \
                CU_ASSERT_EQUAL(lring_read(rd, 0, &e), -EBADMSG);                       \
        } while (0)
        BAD_RECORD(rec->seq = 0);
        BAD_RECORD(rec->seq = 1);               /* does not grow */
        BAD_RECORD(rec->flags = 0x80);
        BAD_RECORD(rec->flags = LRING_RECORD_OMITTED);  /* omitted, but with a length */
        BAD_RECORD(rec->len = 1025);            /* above payload_max */
        BAD_RECORD(rec->len = 1000);            /* runs past head */
#undef BAD_RECORD
        *rec = saved_rec;
        CU_ASSERT_EQUAL_FATAL(lring_read(rd, 0, &e), 1);
        CU_ASSERT_EQUAL(e.seq, 2);
        CU_ASSERT_TRUE(t_payload_ok(&e, 100));

        /* Positions: head backwards, head misaligned, a garbage lap and tail. */
        saved = *h;
        h->head = 8;
        CU_ASSERT_EQUAL(lring_read(rd, 0, &e), -EBADMSG);
        h->head = saved.head + 3;
        CU_ASSERT_EQUAL(lring_read(rd, 0, &e), -EBADMSG);
        h->head = saved.head + 100000;
        h->tail = 3;
        CU_ASSERT_EQUAL(lring_read(rd, 0, &e), -EBADMSG);
        h->head = saved.head;
        h->tail = saved.tail;
        CU_ASSERT_EQUAL_FATAL(lring_read(rd, 0, &e), 1);
        CU_ASSERT_EQUAL(e.seq, 3);

        /* last_lock left odd (a producer died in the middle): -EAGAIN, not a hang. */
        h->last_lock |= 1;
        CU_ASSERT_EQUAL(lring_last(rd, &seq, &us), -EAGAIN);
        h->last_lock = saved.last_lock;
        CU_ASSERT_EQUAL(lring_last(rd, &seq, &us), 0);
        CU_ASSERT_EQUAL(seq, 3);

        /* The whole header garbage: errors until the producer comes back. */
        memset(h, 0xa5, sizeof(*h));
        h->hdr_seq = saved.hdr_seq + 2;
        CU_ASSERT_EQUAL(lring_wait(rd, 0), 0);
        CU_ASSERT_EQUAL(lring_read(rd, 0, &e), -EBADMSG);
        CU_ASSERT_EQUAL(lring_last(rd, &seq, &us), -EBADMSG);
        CU_ASSERT_EQUAL(lring_wait(rd, 0), -ETIMEDOUT); /* known damage is not news */
        /* The data area garbage too: the restarted producer does not care. */
        memset(g.p + sizeof(*h), 0x5a, 4096);
        r = lring_free(r);
        CU_ASSERT_EQUAL_FATAL(lring_create(name, 4096, 2, 3, &r), 0);
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 4, 60, 3, 300), 0);
        CU_ASSERT_EQUAL(lring_read(rd, 0, &e), -EPIPE);
        CU_ASSERT_EQUAL_FATAL(lring_read(rd, 50, &e), 1);
        CU_ASSERT_EQUAL(e.seq, 51);
        CU_ASSERT_TRUE(t_payload_ok(&e, 300));

        /* The producer's own records damaged under it: it drops them, readers see the
         * damage or a lap, never a crash; new records are fine again. */
        memset(g.p + sizeof(*h), 0x33, 4096);
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 61, 200, 3, 300), 0);
        {
                int k, n = 0;

                while ((k = lring_read(rd, 0, &e)) != 0 && n++ < 1000)
                        CU_ASSERT(k == 1 || k == -ESTALE || k == -EBADMSG);
                CU_ASSERT(n < 1000);
        }

        munmap(g.p, g.size);
        lring_reader_free(rd);
        lring_free(r);
        CU_ASSERT_EQUAL(lring_unlink(name), 0);
}

/* Random damage anywhere, read by readers attached before and after: any outcome but a
 * crash, an out-of-bounds access (run under ASan) or an unexpected error. */
static void test_bad_fuzz(void)
{
        enum { ROUNDS = 400 };
        struct lring_reader *rd = NULL;
        struct lring *r = NULL;
        struct t_region g;
        uint64_t seq = 0, rng = 0x9e3779b97f4a7c15u;
        unsigned outcomes[8] = { 0 };
        char name[64];

        t_ring_name(name, sizeof name, "fuzz");
        CU_ASSERT_EQUAL_FATAL(lring_create(name, 4096, 1, 0, &r), 0);
        CU_ASSERT_EQUAL_FATAL(t_publish(r, 1, 30, 2, 300), 0);
        seq = 30;
        CU_ASSERT_EQUAL_FATAL(lring_attach(name, &rd), 0);
        CU_ASSERT_TRUE_FATAL(t_region_map(name, &g));
        for (unsigned round = 0; round < ROUNDS; round++) {
                struct lring_reader *late = NULL;
                struct lring_entry e;
                uint64_t s, u;
                unsigned hits = 1 + (unsigned)(rng % 4);

                for (unsigned i = 0; i < hits; i++) {
                        size_t off;

                        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                        /* Mostly the header's hot line and the data; sometimes anything. */
                        off = (rng >> 8) % 3 == 0 ? 128 + (rng >> 16) % 64
                                                  : (rng >> 16) % (sizeof(struct lring_header) + 4096);
                        g.p[off] = (uint8_t)(rng >> 40);
                }
                for (unsigned i = 0; i < 50; i++) {
                        int k = lring_read(rd, 0, &e);

                        if (k == 0)
                                break;
                        CU_ASSERT(k == 1 || k == -ESTALE || k == -EBADMSG || k == -EPROTO ||
                                  k == -EPIPE);
                        outcomes[k == 1 ? 0 : k == -ESTALE ? 1 : k == -EBADMSG ? 2 : 3]++;
                        if (k == -EBADMSG || k == -EPROTO)
                                break;
                }
                (void)lring_last(rd, &s, &u);
                (void)lring_wait(rd, 0);
                if (lring_attach(name, &late) == 0) {
                        (void)lring_read(late, 0, &e);
                        (void)lring_skip(late);
                        late = lring_reader_free(late);
                }
                /* Every tenth round the producer restarts and publishes again. */
                if (round % 10 == 9) {
                        r = lring_free(r);
                        CU_ASSERT_EQUAL_FATAL(lring_create(name, 4096, round, seq, &r), 0);
                        CU_ASSERT_EQUAL_FATAL(t_publish(r, seq + 1, seq + 20, 3, 300), 0);
                        seq += 20;
                }
        }
        printf("\n    %u records, %u laps, %u damaged, %u other    ", outcomes[0],
               outcomes[1], outcomes[2], outcomes[3]);
        munmap(g.p, g.size);
        lring_reader_free(rd);
        lring_free(r);
        CU_ASSERT_EQUAL(lring_unlink(name), 0);
}

/* ---- main ------------------------------------------------------------------------------------ */

int main(void)
{
        static const struct t_case same_process[] = {
                { "publish, read in order, skip, last seq, bad arguments", test_basic },
                { "records wrap around the end of the area", test_wrap },
                { "a lapped reader gets -ESTALE and resyncs", test_lapped },
                { "a payload above capacity / 4 is omitted", test_omitted },
                { "producer restart: -EPIPE, generation, remap", test_restart },
                { "sleep in two halves: counted, woken, not when readable", test_sleep_halves },
                { NULL, NULL },
        };
        static const struct t_case processes[] = {
                { "a reader in a forked child, woken by publishes", test_fork_reader },
                { "no torn record under a hammering producer", test_hammer },
                { NULL, NULL },
        };
        static const struct t_case damage[] = {
                { "attach refuses missing or damaged regions", test_bad_attach },
                { "reads of a region damaged under the reader", test_bad_read },
                { "random damage never crashes", test_bad_fuzz },
                { NULL, NULL },
        };
        static const struct t_suite suites[] = {
                { "lring same process", same_process },
                { "lring processes", processes },
                { "lring damage", damage },
                { NULL, NULL },
        };
        return t_ring_main(suites, lring_unlink);
}
