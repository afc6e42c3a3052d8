/* test-synclog.c -- the sync log (common/catalog/synclog.h) alone, with a stand-in for
 * the store: records come back whole and in order; a torn record and everything after
 * it are dropped; stale records of a reused segment are never read as new; a segment
 * is reused only after the store's sync returned (and an append waits for it); a failed
 * store sync is sticky; a record too big for a segment is refused.  The catalog's use
 * of it, against real RocksDB, is in test-catalog (catalog-synclog).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "catalog/synclog.h"
#include "t.h"
#include "util.h"

#define SEG (64u << 10)

/* The stand-in store: counts syncs, can be slow or fail. */
struct store {
        unsigned syncs;
        unsigned delay_ms;
        unsigned first_delay_ms;        /* the first sync's instead */
        int fail;               /* returned by the next sync when < 0 */
        pthread_mutex_t lock;
};

static int store_sync(void *userdata)
{
        struct store *s = userdata;
        unsigned delay;
        int r;

        pthread_mutex_lock(&s->lock);
        delay = s->syncs == 0 && s->first_delay_ms ? s->first_delay_ms : s->delay_ms;
        pthread_mutex_unlock(&s->lock);
        if (delay)
                usleep(delay * 1000u);          /* a slow store */
        pthread_mutex_lock(&s->lock);
        s->syncs++;
        r = s->fail;
        pthread_mutex_unlock(&s->lock);
        return r;
}

/* What a replay saw. */
struct seen {
        uint64_t first[4096];
        uint32_t n[4096];
        size_t count;
        bool bad_payload;
};

static void payload_of(uint64_t seq, size_t len, uint8_t *buf)
{
        for (size_t i = 0; i < len; i++)
                buf[i] = (uint8_t)(seq * 31 + i);
}

static int on_record(uint64_t first_seq, uint32_t n, const void *payload, size_t len,
                     void *userdata)
{
        struct seen *s = userdata;
        uint8_t want[2048];

        if (len > sizeof(want) || s->count >= ELEMENTSOF(s->first))
                return -E2BIG;
        payload_of(first_seq, len, want);
        if (memcmp(want, payload, len) != 0)
                s->bad_payload = true;
        s->first[s->count] = first_seq;
        s->n[s->count] = n;
        s->count++;
        return 0;
}

static struct synclog *open_replayed(const char *dir, unsigned n_seg, struct store *st,
                                     struct seen *seen)
{
        struct synclog *l = NULL;

        CU_ASSERT_EQUAL_FATAL(synclog_open(dir, SEG, n_seg, store_sync, st, &l), 0);
        CU_ASSERT_EQUAL(synclog_append(l, 1, 1, "x", 1), -EAGAIN);     /* not replayed yet */
        memset(seen, 0, sizeof(*seen));
        CU_ASSERT_EQUAL_FATAL(synclog_replay(l, on_record, seen), 0);
        CU_ASSERT_FALSE(seen->bad_payload);
        return l;
}

/* Append records for seqs from..to (each a group of one, len bytes). */
static void append_range(struct synclog *l, uint64_t from, uint64_t to, size_t len)
{
        uint8_t buf[2048];

        for (uint64_t seq = from; seq <= to; seq++) {
                payload_of(seq, len, buf);
                CU_ASSERT_EQUAL_FATAL(synclog_append(l, seq, 1, buf, len), 0);
        }
}

static void test_round_trip(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("synclog-rt");
        struct store st = { .lock = PTHREAD_MUTEX_INITIALIZER };
        struct seen *seen = calloc(1, sizeof(*seen));
        struct synclog *l;

        CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
        l = open_replayed(dir, 4, &st, seen);
        CU_ASSERT_EQUAL(seen->count, 0);
        CU_ASSERT_EQUAL(st.syncs, 1);           /* the replay's own sync */
        append_range(l, 1, 10, 100);
        {
                uint8_t buf[3];

                payload_of(11, sizeof(buf), buf);       /* a group of 3 */
                CU_ASSERT_EQUAL(synclog_append(l, 11, 3, buf, sizeof(buf)), 0);
        }
        l = synclog_close(l);

        l = open_replayed(dir, 4, &st, seen);
        CU_ASSERT_EQUAL_FATAL(seen->count, 11);
        for (size_t i = 0; i < 10; i++)
                CU_ASSERT(seen->first[i] == i + 1 && seen->n[i] == 1);
        CU_ASSERT(seen->first[10] == 11 && seen->n[10] == 3);
        l = synclog_close(l);
        free(seen);
        t_rmrf(dir);
}

/* Flip one byte of the payload of the record at index k of segment 0 (records of
 * 100-byte payloads from offset 0). */
static void corrupt_record(const char *dir, unsigned k)
{
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        off_t at = (off_t)k * (SYNCLOG_HEADER_SIZE + 100) + SYNCLOG_HEADER_SIZE + 50;
        uint8_t b;

        CU_ASSERT_FATAL(asprintf(&path, "%s/seg-0", dir) > 0);
        fd = open(path, O_RDWR | O_CLOEXEC);
        CU_ASSERT_FATAL(fd >= 0);
        CU_ASSERT_EQUAL_FATAL(pread(fd, &b, 1, at), 1);
        b ^= 0x40;
        CU_ASSERT_EQUAL_FATAL(pwrite(fd, &b, 1, at), 1);
}

static void test_torn(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("synclog-torn");
        struct store st = { .lock = PTHREAD_MUTEX_INITIALIZER };
        struct seen *seen = calloc(1, sizeof(*seen));
        struct synclog *l;

        CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
        l = open_replayed(dir, 4, &st, seen);
        append_range(l, 1, 10, 100);
        l = synclog_close(l);
        corrupt_record(dir, 7);
        l = open_replayed(dir, 4, &st, seen);
        /* Records 1..7 whole; the torn 8th and what follows it are not records. */
        CU_ASSERT_EQUAL(seen->count, 7);
        CU_ASSERT_EQUAL(seen->first[seen->count - 1], 7);
        l = synclog_close(l);
        free(seen);
        t_rmrf(dir);
}

/* Many laps over 2 segments with a slow store: the appends that reach a segment whose
 * previous use the store has not synced wait; a replay after that hands over records
 * strictly in order, every segment's newest use only, ending with the last append. */
static void test_reuse(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("synclog-reuse");
        /* The first sync takes 2 s: the appends fill both segments long before it
         * returns, however slow this machine's fdatasync is, so one must wait. */
        struct store st = { .lock = PTHREAD_MUTEX_INITIALIZER, .delay_ms = 20, .first_delay_ms = 2000 };
        struct seen *seen = calloc(1, sizeof(*seen));
        struct synclog_stats ss;
        const uint64_t last = 3000;     /* ~1 KiB each: ~47 segments' worth */
        struct synclog *l;

        CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
        l = open_replayed(dir, 2, &st, seen);
        append_range(l, 1, last, 1000);
        synclog_get_stats(l, &ss);
        CU_ASSERT_EQUAL(ss.appends, last);
        CU_ASSERT(ss.switches >= 40);
        CU_ASSERT(ss.waits >= 1);               /* the 2 s sync cannot keep up */
        CU_ASSERT(ss.store_syncs >= 1 && ss.store_syncs <= ss.switches);
        l = synclog_close(l);

        st.delay_ms = 0;
        l = open_replayed(dir, 2, &st, seen);
        CU_ASSERT_FATAL(seen->count >= 1);
        CU_ASSERT_EQUAL(seen->first[seen->count - 1], last);
        for (size_t i = 1; i < seen->count; i++)
                CU_ASSERT_EQUAL(seen->first[i], seen->first[i - 1] + 1);
        /* Two segments of 64 KiB hold at most ~128 records of ~1 KiB. */
        CU_ASSERT(seen->count <= 2 * SEG / 1000);
        l = synclog_close(l);
        free(seen);
        t_rmrf(dir);
}

static void test_errors(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("synclog-err");
        struct store st = { .lock = PTHREAD_MUTEX_INITIALIZER };
        struct seen *seen = calloc(1, sizeof(*seen));
        uint8_t *big = calloc(1, SEG);
        struct synclog *l = NULL;
        uint64_t seq = 1;
        int r = 0;

        CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
        CU_ASSERT_PTR_NOT_NULL_FATAL(big);
        CU_ASSERT_EQUAL(synclog_open(dir, SEG + 1, 4, store_sync, &st, &l), -EINVAL);
        CU_ASSERT_EQUAL(synclog_open(dir, SEG, 1, store_sync, &st, &l), -EINVAL);
        l = open_replayed(dir, 2, &st, seen);
        CU_ASSERT_EQUAL(synclog_max_payload(l), SEG - SYNCLOG_HEADER_SIZE);
        CU_ASSERT_EQUAL(synclog_append(l, 1, 1, big, SEG), -E2BIG);
        CU_ASSERT_EQUAL(synclog_append(l, 1, 0, big, 1), -EINVAL);
        /* A failing store: the append that must reuse the first segment fails, and so
         * does every append after it. */
        pthread_mutex_lock(&st.lock);
        st.fail = -EIO;
        pthread_mutex_unlock(&st.lock);
        for (; seq < 1000 && r == 0; seq++)
                r = synclog_append(l, seq, 1, big, 1000);
        CU_ASSERT_EQUAL(r, -EIO);
        CU_ASSERT_EQUAL(synclog_append(l, seq, 1, big, 10), -EIO);
        l = synclog_close(l);
        free(big);
        free(seen);
        t_rmrf(dir);
}

/* Random damage anywhere in the segments (a byte flipped, a run zeroed): a replay never
 * hands over a record whose payload is not what was written, keeps the order, and never
 * fails -- it stops at the damage. */
static void test_damage(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("synclog-dmg");
        struct store st = { .lock = PTHREAD_MUTEX_INITIALIZER };
        struct seen *seen = calloc(1, sizeof(*seen));
        unsigned seed = (unsigned)now_ns();
        struct synclog *l;

        CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
        srand(seed);
        l = open_replayed(dir, 3, &st, seen);
        append_range(l, 1, 150, 700);   /* ~1.6 segments of 64 KiB */
        l = synclog_close(l);
        for (unsigned round = 0; round < 40; round++) {
                _cleanup_free_ char *path = NULL;
                _cleanup_close_ int fd = -EBADF;
                off_t at = (off_t)((unsigned)rand() % (SEG - 64));
                uint8_t junk[64];
                size_t len = round % 2 ? 1 : 1 + (unsigned)rand() % sizeof(junk);

                CU_ASSERT_FATAL(asprintf(&path, "%s/seg-%u", dir, (unsigned)rand() % 3) > 0);
                fd = open(path, O_RDWR | O_CLOEXEC);
                CU_ASSERT_FATAL(fd >= 0);
                CU_ASSERT_EQUAL_FATAL(pread(fd, junk, len, at), (ssize_t)len);
                for (size_t i = 0; i < len; i++)
                        junk[i] = (uint8_t)(round % 2 ? junk[i] ^ (1u << (rand() % 8)) : 0);
                CU_ASSERT_EQUAL_FATAL(pwrite(fd, junk, len, at), (ssize_t)len);
                l = open_replayed(dir, 3, &st, seen);   /* checks every payload */
                for (size_t i = 1; i < seen->count; i++)
                        CU_ASSERT(seen->first[i] > seen->first[i - 1]);
                l = synclog_close(l);
        }
        if (CU_get_number_of_failures() > 0)
                printf("\n    seed %u ", seed);
        free(seen);
        t_rmrf(dir);
}

static const struct t_case cases[] = {
        { "random damage: no bad record handed over, never a failure", test_damage },
        { "records come back whole and in order", test_round_trip },
        { "a torn record ends the replay", test_torn },
        { "reuse waits for the store, no stale record replayed", test_reuse },
        { "bad arguments, too big, a failed store sync is sticky", test_errors },
        { NULL, NULL },
};

static const struct t_suite suites[] = {
        { "synclog", cases },
        { NULL, NULL },
};

int main(void)
{
        return t_run(suites);
}
