/* test-fring.c -- the shared-memory frontier ring (common/ring/fring.h).
 *
 * Same-process tests drive producer and reader by hand; the concurrency tests fork
 * readers (or a producer) and let them run against each other for real.  Children
 * report through their exit code and a MAP_SHARED result page, never through CUnit.
 * Every ring gets a name with our pid in it and is unlinked at the end of its test.
 *
 * Exits 77 when POSIX shared memory or futexes are unavailable.
 */
#include "ring/fring.h"

#include <assert.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "ring/fring-layout.h"
#include "t-ring.h"
#include "t.h"
#include "util.h"

/* ---- helpers ------------------------------------------------------------------------- */

/* The values published for update number j of collection id: distinct fields, related
 * so that a record mixing two updates is detectable. */
static struct fring_frontier t_val(uint64_t id, uint64_t j)
{
        return (struct fring_frontier) {
                .id = id, .upper = j + 1, .since = j, .physical_since = j / 2,
        };
}

static bool t_val_ok(const struct fring_frontier *f)
{
        return f->upper == f->since + 1 && f->physical_since == f->since / 2;
}

static bool t_frontier_eq(const struct fring_frontier *a, const struct fring_frontier *b)
{
        return a->id == b->id && a->upper == b->upper && a->since == b->since &&
               a->physical_since == b->physical_since && a->flags == b->flags;
}

/* A reader's picture of the table, built only from fring_read(). */
#define MODEL_MAX 2048
struct model {
        size_t n;
        struct fring_frontier e[MODEL_MAX];
        uint64_t stream_records, snapshot_records, resyncs;
};

static struct fring_frontier *model_find(struct model *m, uint64_t id)
{
        for (size_t i = 0; i < m->n; i++)
                if (m->e[i].id == id)
                        return &m->e[i];
        return NULL;
}

static bool model_apply(struct model *m, const struct fring_frontier *f)
{
        struct fring_frontier *e = model_find(m, f->id);

        if (f->flags & FRING_FRONTIER_FORGOTTEN) {
                if (e)
                        *e = m->e[--m->n];
                return true;
        }
        if (!e) {
                if (m->n == MODEL_MAX)
                        return false;
                e = &m->e[m->n++];
        }
        *e = *f;
        return true;
}

/* Reads (batch at a time) until nothing is left; a snapshot restarts the picture. */
static int model_drain(struct fring_reader *rd, struct model *m, size_t batch)
{
        struct fring_frontier buf[64];

        assert(batch > 0 && batch <= ELEMENTSOF(buf));
        for (unsigned i = 0; i < 1000000; i++) {
                bool was = fring_reader_resyncing(rd), resynced = false;
                int n = fring_read(rd, buf, batch, &resynced);

                if (n < 0)
                        return n;
                if (resynced) {
                        m->n = 0;
                        m->resyncs++;
                }
                for (int k = 0; k < n; k++) {
                        if (!model_apply(m, &buf[k]))
                                return -ENOBUFS;
                        if (resynced || was)
                                m->snapshot_records++;
                        else
                                m->stream_records++;
                }
                if (n == 0 && !fring_reader_resyncing(rd))
                        return 0;
        }
        return -ELOOP;
}

static bool model_equals(struct model *m, const struct fring_frontier *exp, size_t n)
{
        if (m->n != n)
                return false;
        for (size_t i = 0; i < n; i++) {
                const struct fring_frontier *e = model_find(m, exp[i].id);

                if (!e || !t_frontier_eq(e, &exp[i]))
                        return false;
        }
        return true;
}

static const struct fring_waitpage *t_map_waitpage(const char *name)
{
        char wname[NAME_MAX + 2];
        void *p;
        int fd;

        snprintf(wname, sizeof wname, "%s%s", name, FRING_WAIT_SUFFIX);
        fd = shm_open(wname, O_RDONLY | O_CLOEXEC, 0);
        if (fd < 0)
                return NULL;
        p = mmap(NULL, sizeof(struct fring_waitpage), PROT_READ, MAP_SHARED, fd, 0);
        close(fd);
        return p == MAP_FAILED ? NULL : p;
}

/* Waits until `waiters` readers announced themselves in NAME.wait and each pid sleeps:
 * the state in which only a futex wake-up can get them going again. */
static bool t_wait_sleepers(const char *name, const pid_t *pids, size_t n)
{
        const struct fring_waitpage *w = t_map_waitpage(name);
        uint64_t deadline = now_ms() + 10000;
        bool ok = false;

        if (!w)
                return false;
        while (!ok && now_ms() < deadline) {
                ok = __atomic_load_n(&w->waiters, __ATOMIC_ACQUIRE) >= n;
                for (size_t i = 0; ok && i < n; i++)
                        ok = t_proc_sleeping(pids[i]);
                if (!ok)
                        usleep(500);
        }
        munmap((void *)w, sizeof *w);
        return ok;
}

static void t_sync_send(int fd)
{
        char c = 'x';

        C_ASSERT(write(fd, &c, 1) == 1);
}

static bool t_sync_recv(int fd, size_t n)
{
        char c;

        for (size_t i = 0; i < n; i++)
                if (read(fd, &c, 1) != 1)
                        return false;
        return true;
}

/* A child run by t_fork_sleepers(): attach to NAME, write one byte to ready_fd, then
 * sleep in fring_wait(); it reports into arg and _exit()s. */
typedef void (*t_sleeper_fn)(const char *name, int ready_fd, void *arg);

/* Fork n sleepers, child i with arg (char *)args + i * arg_size, and wait until every
 * one announced itself and sleeps in fring_wait() on NAME (t_wait_sleepers()): the
 * state in which only a futex wake-up gets them going.  pids[] gets their pids. */
static bool t_fork_sleepers(const char *name, size_t n, t_sleeper_fn child, void *args,
                            size_t arg_size, pid_t *pids)
{
        int sync[2];
        bool ok;

        if (pipe2(sync, O_CLOEXEC) != 0)
                return false;
        for (size_t i = 0; i < n; i++) {
                pids[i] = t_fork();
                if (pids[i] < 0)
                        return false;
                if (pids[i] == 0) {
                        close(sync[0]);
                        child(name, sync[1], (char *)args + i * arg_size);
                        _exit(T_EXIT_FAIL);     /* a sleeper _exit()s itself */
                }
        }
        close(sync[1]);
        ok = t_sync_recv(sync[0], (unsigned)n);
        close(sync[0]);
        return ok && t_wait_sleepers(name, pids, n);
}

/* Bumps hdr_seq by 2 (stays even): attached readers must revalidate. */
static void t_touch_header(struct fring_header *h)
{
        __atomic_store_n(&h->hdr_seq, h->hdr_seq + 2, __ATOMIC_RELEASE);
}

static int t_attach_result(const char *name)
{
        struct fring_reader *rd = NULL;
        int k = fring_attach(name, &rd);

        fring_reader_free(rd);
        return k;
}

static unsigned t_count_slots(struct t_region *g, uint32_t state)
{
        struct fring_header *h = (struct fring_header *)g->p;
        struct fring_slot *slots = (struct fring_slot *)(g->p + h->slots_offset);
        unsigned n = 0;

        for (uint32_t i = 0; i < h->slot_count; i++)
                n += slots[i].state == state;
        return n;
}

static struct fring_slot *t_find_slot(struct t_region *g, uint64_t id)
{
        struct fring_header *h = (struct fring_header *)g->p;
        struct fring_slot *slots = (struct fring_slot *)(g->p + h->slots_offset);

        for (uint32_t i = 0; i < h->slot_count; i++)
                if (slots[i].state == FRING_SLOT_USED && slots[i].id == id)
                        return &slots[i];
        return NULL;
}

/* ---- 1. one reader, same process ------------------------------------------------------ */

static void test_basic(void)
{
        enum { N = 200, IDS = 10 };
        struct fring_frontier buf[7], f, last[IDS];
        struct fring_reader *rd = NULL;
        struct fring *r = NULL, *other = NULL;
        char name[64], shm[NAME_MAX + 2];
        bool resynced;
        int n, total = 0, added = 0;

        t_ring_name(name, sizeof name, "basic");
        CU_ASSERT_EQUAL_FATAL(fring_create(name, 16, 256, 1, &r), 0);
        CU_ASSERT_EQUAL_FATAL(fring_attach(name, &rd), 0);
        CU_ASSERT_EQUAL(fring_reader_generation(rd), 1);

        /* Attaching starts with a snapshot, of an empty table here. */
        CU_ASSERT_TRUE(fring_reader_resyncing(rd));
        CU_ASSERT_EQUAL(fring_wait(rd, 0), 0);
        resynced = false;
        CU_ASSERT_EQUAL(fring_read(rd, buf, ELEMENTSOF(buf), &resynced), 0);
        CU_ASSERT_TRUE(resynced);
        CU_ASSERT_FALSE(fring_reader_resyncing(rd));
        CU_ASSERT_EQUAL(fring_read(rd, buf, ELEMENTSOF(buf), &resynced), 0);
        CU_ASSERT_FALSE(resynced);
        CU_ASSERT_EQUAL(fring_wait(rd, 0), -ETIMEDOUT);
        CU_ASSERT_EQUAL(fring_lookup(rd, 100, &f), -ENOENT);

        for (uint64_t j = 0; j < N; j++) {
                f = t_val(100 + j % IDS, j);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &f), 0);
                last[j % IDS] = f;
        }
        CU_ASSERT(fring_check(r));
        CU_ASSERT_EQUAL(fring_wait(rd, 0), 0);

        /* Every change, in order, 7 at a time. */
        while ((n = fring_read(rd, buf, ELEMENTSOF(buf), &resynced)) > 0) {
                CU_ASSERT_FALSE(resynced);
                for (int k = 0; k < n; k++, total++) {
                        struct fring_frontier exp = t_val(100 + (uint64_t)total % IDS,
                                                          (uint64_t)total);

                        CU_ASSERT_TRUE(t_frontier_eq(&buf[k], &exp));
                }
        }
        CU_ASSERT_EQUAL(n, 0);
        CU_ASSERT_EQUAL(total, N);
        CU_ASSERT_EQUAL(fring_wait(rd, 0), -ETIMEDOUT);

        /* Lookups see the latest values. */
        for (unsigned i = 0; i < IDS; i++) {
                CU_ASSERT_EQUAL(fring_lookup(rd, last[i].id, &f), 0);
                CU_ASSERT_TRUE(t_frontier_eq(&f, &last[i]));
        }
        CU_ASSERT_EQUAL(fring_lookup(rd, 99, &f), -ENOENT);

        /* Forgetting: a FORGOTTEN record with the last values, then gone. */
        CU_ASSERT_EQUAL(fring_forget(r, 105), 0);
        CU_ASSERT_EQUAL(fring_forget(r, 105), -ENOENT);
        CU_ASSERT_EQUAL(fring_read(rd, buf, ELEMENTSOF(buf), &resynced), 1);
        f = last[5];
        f.flags = FRING_FRONTIER_FORGOTTEN;
        CU_ASSERT_TRUE(t_frontier_eq(&buf[0], &f));
        CU_ASSERT_EQUAL(fring_lookup(rd, 105, &f), -ENOENT);
        CU_ASSERT(fring_check(r));

        /* Bad arguments. */
        f = t_val(1, 1);
        f.flags = FRING_FRONTIER_FORGOTTEN;
        CU_ASSERT_EQUAL(fring_publish(r, &f), -EINVAL);
        CU_ASSERT_EQUAL(fring_publish(r, NULL), -EINVAL);
        CU_ASSERT_EQUAL(fring_read(rd, NULL, 1, NULL), -EINVAL);

        /* 9 live of 16, then 100 more: the table doubles as it fills (fring.c NOTE 10), the
         * reader resyncs and its snapshot holds every live collection exactly once;
         * lookups find old and new ones; updates of live ones still work. */
        for (uint64_t id = 1000; id < 1100; id++) {
                f = t_val(id, id);
                if (fring_publish(r, &f) < 0)
                        break;
                added++;
        }
        CU_ASSERT_EQUAL(added, 100);
        CU_ASSERT(fring_check(r));
        {
                bool seen[1100] = { false };
                size_t live = 0, got;

                resynced = false;
                while ((got = (size_t)fring_read(rd, buf, ELEMENTSOF(buf), &resynced)) > 0 &&
                       got <= ELEMENTSOF(buf)) {
                        for (size_t k = 0; k < got; k++)
                                if (buf[k].id < ELEMENTSOF(seen) && !(buf[k].flags & FRING_FRONTIER_FORGOTTEN)) {
                                        if (!seen[buf[k].id])
                                                live++;
                                        seen[buf[k].id] = true;
                                }
                }
                CU_ASSERT_EQUAL(live, 109);
                for (uint64_t id = 1000; id < 1100; id++)
                        CU_ASSERT_TRUE(seen[id]);
        }
        CU_ASSERT_EQUAL(fring_lookup(rd, 1099, &buf[0]), 0);
        CU_ASSERT_EQUAL(buf[0].upper, 1100);    /* t_val(1099, 1099) */
        f = t_val(100, 7777);
        CU_ASSERT_EQUAL(fring_publish(r, &f), 0);
        CU_ASSERT(fring_check(r));
        CU_ASSERT_EQUAL(fring_lookup(rd, 100, &buf[0]), 0);
        CU_ASSERT_TRUE(t_frontier_eq(&buf[0], &f));

        /* Names. */
        CU_ASSERT_EQUAL(fring_name("abc-1", shm, sizeof shm), 0);
        CU_ASSERT_STRING_EQUAL(shm, "/coord-abc-1-frontiers");
        CU_ASSERT_EQUAL(fring_name("a/b", shm, sizeof shm), -EINVAL);
        CU_ASSERT_EQUAL(fring_name("", shm, sizeof shm), -EINVAL);
        CU_ASSERT_EQUAL(fring_name("abc", shm, 8), -ENAMETOOLONG);
        CU_ASSERT_EQUAL(fring_create("no-slash", 4, 4, 1, &other), -EINVAL);
        CU_ASSERT_EQUAL(fring_create(name, 0, 4, 1, &other), -EINVAL);
        CU_ASSERT_PTR_NULL(other);

        rd = fring_reader_free(rd);
        r = fring_free(r);
        CU_ASSERT_PTR_NULL(rd);
        CU_ASSERT_PTR_NULL(r);
        CU_ASSERT_PTR_NULL(fring_free(NULL));
        CU_ASSERT_PTR_NULL(fring_reader_free(NULL));
        CU_ASSERT_EQUAL(fring_unlink(name), 0);
        CU_ASSERT_EQUAL(fring_unlink(name), -ENOENT);
}

/* Forget and re-publish many ids through a small table: tombstones, their trimming and
 * table rebuilds (which make the reader resync), checked against a model. */
static void test_churn(void)
{
        enum { LIVE = 8, ROUNDS = 3000 };
        struct fring_frontier live[LIVE], f;
        struct fring_reader *rd = NULL;
        struct fring *r = NULL;
        struct model *m = calloc(1, sizeof *m);
        uint64_t next_id = 1, seed = 42, resyncs;
        struct t_region g;
        char name[64];

        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        t_ring_name(name, sizeof name, "churn");
        CU_ASSERT_EQUAL_FATAL(fring_create(name, LIVE, 64, 1, &r), 0);
        CU_ASSERT_EQUAL_FATAL(fring_attach(name, &rd), 0);
        for (unsigned i = 0; i < LIVE; i++) {
                live[i] = t_val(next_id++, i);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &live[i]), 0);
        }
        for (uint64_t round = 0; round < ROUNDS; round++) {
                unsigned victim;

                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                victim = (unsigned)(seed >> 33) % LIVE;
                CU_ASSERT_EQUAL_FATAL(fring_forget(r, live[victim].id), 0);
                CU_ASSERT_EQUAL(fring_lookup(rd, live[victim].id, &f), -ENOENT);
                live[victim] = t_val(next_id++, round);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &live[victim]), 0);
                CU_ASSERT_FATAL(fring_check(r));
                for (unsigned i = 0; i < LIVE; i++) {
                        CU_ASSERT_EQUAL(fring_lookup(rd, live[i].id, &f), 0);
                        CU_ASSERT_TRUE(t_frontier_eq(&f, &live[i]));
                }
                if (round % 5 == 0)
                        CU_ASSERT_EQUAL(model_drain(rd, m, 3), 0);
        }
        CU_ASSERT_EQUAL(model_drain(rd, m, 5), 0);
        CU_ASSERT_TRUE(model_equals(m, live, LIVE));
        /* Rebuilds happened (each one is a resync on top of the attach snapshot). */
        CU_ASSERT(m->resyncs > 1);

        /* A snapshot taken while there are tombstones must not resurrect them. */
        CU_ASSERT_TRUE_FATAL(t_region_map(name, &g));
        CU_ASSERT(t_count_slots(&g, FRING_SLOT_TOMBSTONE) > 0);
        munmap(g.p, g.size);
        for (unsigned i = 0; i < 65; i++) {
                live[i % LIVE] = t_val(live[i % LIVE].id, 100000 + i);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &live[i % LIVE]), 0);
        }
        resyncs = m->resyncs;
        CU_ASSERT_EQUAL(model_drain(rd, m, 5), 0);
        CU_ASSERT_EQUAL(m->resyncs, resyncs + 1);
        CU_ASSERT_TRUE(model_equals(m, live, LIVE));
        printf("\n    churn: %llu resyncs, %llu stream records ",
               (unsigned long long)m->resyncs, (unsigned long long)m->stream_records);

        fring_reader_free(rd);
        fring_free(r);
        CU_ASSERT_EQUAL(fring_unlink(name), 0);
        free(m);
}

/* ---- 2. two reader processes ----------------------------------------------------------- */

enum { FOLLOW_IDS = 16, FOLLOW_PACED = 10000, FOLLOW_BURST = 20000,
       FOLLOW_N = FOLLOW_PACED + FOLLOW_BURST, FOLLOW_DONE_ID = 1000 };

struct follow_result {
        uint64_t stream_records, snapshot_records, resyncs, wakes, timeouts;
};

/* Id and values of update j of the follow test; j == FOLLOW_N is the "done" marker. */
static struct fring_frontier follow_val(uint64_t j)
{
        return t_val(j == FOLLOW_N ? FOLLOW_DONE_ID : 1 + j % FOLLOW_IDS, j);
}

static _Noreturn void follow_child(const char *name, int ready_fd, struct follow_result *res)
{
        struct fring_frontier exp[FOLLOW_IDS + 1], buf[64];
        struct fring_reader *rd = NULL;
        struct model *m = calloc(1, sizeof *m);
        uint64_t deadline = now_ms() + 30000, last_upper = 0;
        bool segment = false;

        C_ASSERT(m);
        /* The final value of every id. */
        for (uint64_t j = 0; j <= FOLLOW_N; j++) {
                struct fring_frontier f = follow_val(j);

                exp[f.id == FOLLOW_DONE_ID ? FOLLOW_IDS : f.id - 1] = f;
        }
        C_ASSERT(fring_attach(name, &rd) == 0);
        C_ASSERT(model_drain(rd, m, 64) == 0);
        t_sync_send(ready_fd);

        while (!model_equals(m, exp, FOLLOW_IDS + 1)) {
                bool was = fring_reader_resyncing(rd), resynced = false;
                int n;

                C_ASSERT(now_ms() < deadline);
                n = fring_read(rd, buf, ELEMENTSOF(buf), &resynced);
                C_ASSERT(n >= 0);
                if (resynced) {
                        m->n = 0;
                        res->resyncs++;
                        segment = false;
                }
                for (int k = 0; k < n; k++) {
                        const struct fring_frontier *f = &buf[k];
                        struct fring_frontier want = follow_val(f->since);

                        /* Intact and from the schedule... */
                        C_ASSERT(t_val_ok(f) && f->since <= FOLLOW_N);
                        C_ASSERT(t_frontier_eq(f, &want));
                        C_ASSERT(model_apply(m, f));
                        if (resynced || was) {
                                res->snapshot_records++;
                                continue;
                        }
                        /* ...and the stream has no gaps and no repeats between resyncs. */
                        C_ASSERT(!segment || f->upper == last_upper + 1);
                        last_upper = f->upper;
                        segment = true;
                        res->stream_records++;
                }
                if (n == 0) {
                        int q = fring_wait(rd, 100);

                        C_ASSERT(q == 0 || q == -ETIMEDOUT);
                        if (q == 0)
                                res->wakes++;
                        else
                                res->timeouts++;
                }
        }
        /* Without a resync after the attach snapshot, we saw every single record. */
        C_ASSERT(res->resyncs > 0 || res->stream_records == FOLLOW_N + 1);
        fring_reader_free(rd);
        _exit(T_EXIT_PASS);
}

static void test_two_readers(void)
{
        struct follow_result *res = t_shared_page(2 * sizeof *res);
        struct fring *r = NULL;
        pid_t pids[2];
        int sync[2];
        char name[64];

        CU_ASSERT_PTR_NOT_NULL_FATAL(res);
        CU_ASSERT_EQUAL_FATAL(pipe2(sync, O_CLOEXEC), 0);
        t_ring_name(name, sizeof name, "follow");
        CU_ASSERT_EQUAL_FATAL(fring_create(name, 64, 1024, 3, &r), 0);
        for (unsigned i = 0; i < 2; i++) {
                pids[i] = t_fork();
                CU_ASSERT_FATAL(pids[i] >= 0);
                if (pids[i] == 0) {
                        close(sync[0]);
                        follow_child(name, sync[1], &res[i]);
                }
        }
        close(sync[1]);
        CU_ASSERT_TRUE_FATAL(t_sync_recv(sync[0], 2));
        close(sync[0]);

        /* Paced, so that readers can keep up and sleep in between, then a burst that
         * laps them now and then. */
        for (uint64_t j = 0; j < FOLLOW_N; j++) {
                struct fring_frontier f = follow_val(j);

                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &f), 0);
                if (j < FOLLOW_PACED && j % 128 == 127)
                        usleep(200);
        }
        {
                struct fring_frontier f = follow_val(FOLLOW_N);

                CU_ASSERT_EQUAL(fring_publish(r, &f), 0);
        }
        for (unsigned i = 0; i < 2; i++) {
                CU_ASSERT_EQUAL(t_wait_child(pids[i]), 0);
                printf("\n    reader %u: %llu stream + %llu snapshot records, %llu resyncs, "
                       "%llu wake-ups, %llu timeouts", i,
                       (unsigned long long)res[i].stream_records,
                       (unsigned long long)res[i].snapshot_records,
                       (unsigned long long)res[i].resyncs, (unsigned long long)res[i].wakes,
                       (unsigned long long)res[i].timeouts);
        }
        printf("\n    ");
        CU_ASSERT(fring_check(r));
        fring_free(r);
        CU_ASSERT_EQUAL(fring_unlink(name), 0);
        munmap(res, 2 * sizeof *res);
}

struct wake_result {
        int wait_ret;
        int read_ret;
        bool record_ok;
        uint64_t woke_ns;       /* CLOCK_MONOTONIC when fring_wait() returned */
        uint64_t publish_ns;    /* written by the parent just before publishing */
};

static _Noreturn void wake_child(const char *name, int ready_fd, void *arg)
{
        struct wake_result *res = arg;
        struct fring_reader *rd = NULL;
        struct fring_frontier buf[4], want = t_val(77, 1234);
        struct model m0 = {};

        C_ASSERT(fring_attach(name, &rd) == 0);
        C_ASSERT(model_drain(rd, &m0, 4) == 0);
        t_sync_send(ready_fd);
        res->wait_ret = fring_wait(rd, 10000);
        res->woke_ns = now_ns();
        res->read_ret = fring_read(rd, buf, ELEMENTSOF(buf), NULL);
        res->record_ok = res->read_ret == 1 && t_frontier_eq(&buf[0], &want);
        fring_reader_free(rd);
        _exit(T_EXIT_PASS);
}

/* Two readers asleep in FUTEX_WAIT on their read-only mapping; one publish wakes both. */
static void test_wake(void)
{
        struct wake_result *res = t_shared_page(2 * sizeof *res);
        struct fring_frontier f = t_val(77, 1234);
        struct fring *r = NULL;
        pid_t pids[2];
        char name[64];

        CU_ASSERT_PTR_NOT_NULL_FATAL(res);
        t_ring_name(name, sizeof name, "wake");
        CU_ASSERT_EQUAL_FATAL(fring_create(name, 8, 64, 1, &r), 0);
        CU_ASSERT_TRUE_FATAL(t_fork_sleepers(name, 2, wake_child, res, sizeof *res, pids));
        res[0].publish_ns = res[1].publish_ns = now_ns();
        CU_ASSERT_EQUAL(fring_publish(r, &f), 0);
        for (unsigned i = 0; i < 2; i++) {
                CU_ASSERT_EQUAL(t_wait_child(pids[i]), 0);
                CU_ASSERT_EQUAL(res[i].wait_ret, 0);
                CU_ASSERT_EQUAL(res[i].read_ret, 1);
                CU_ASSERT_TRUE(res[i].record_ok);
                /* Promptness is reported, not asserted: machines differ. */
                printf("\n    sleeper %u woke %.1f us after the publish", i,
                       (double)(res[i].woke_ns - res[i].publish_ns) / 1e3);
        }
        printf("\n    ");
        fring_free(r);
        CU_ASSERT_EQUAL(fring_unlink(name), 0);
        munmap(res, 2 * sizeof *res);
}

static _Noreturn void held_child(const char *name, int ready_fd, void *arg)
{
        struct wake_result *res = arg;
        struct fring_reader *rd = NULL;
        struct fring_frontier buf[8];
        struct model m0 = {};

        C_ASSERT(fring_attach(name, &rd) == 0);
        C_ASSERT(model_drain(rd, &m0, 4) == 0);
        t_sync_send(ready_fd);
        res->wait_ret = fring_wait(rd, 10000);
        res->woke_ns = now_ns();
        res->read_ret = fring_read(rd, buf, ELEMENTSOF(buf), NULL);
        res->record_ok = res->read_ret == 3 && buf[0].id == 81 && buf[2].id == 83;
        fring_reader_free(rd);
        _exit(T_EXIT_PASS);
}

/* fring_hold_wakes(): publishes while held wake nobody; the release wakes the sleeper
 * once, and it reads every record published meanwhile. */
static void test_wake_held(void)
{
        struct wake_result *res = t_shared_page(sizeof *res);
        struct fring *r = NULL;
        struct timespec pause = { 0, 200 * 1000 * 1000 };
        int status;
        pid_t pid;
        char name[64];

        CU_ASSERT_PTR_NOT_NULL_FATAL(res);
        t_ring_name(name, sizeof name, "held");
        CU_ASSERT_EQUAL_FATAL(fring_create(name, 8, 64, 1, &r), 0);
        CU_ASSERT_TRUE_FATAL(t_fork_sleepers(name, 1, held_child, res, sizeof *res, &pid));
        fring_hold_wakes(r);
        fring_hold_wakes(r);            /* nested */
        for (uint64_t id = 81; id <= 83; id++) {
                struct fring_frontier f = t_val(id, 1000 + id);

                CU_ASSERT_EQUAL(fring_publish(r, &f), 0);
        }
        fring_release_wakes(r);         /* inner: still held */
        nanosleep(&pause, NULL);                /* time for a wrong wake to show */
        CU_ASSERT_EQUAL(waitpid(pid, &status, WNOHANG), 0);     /* still asleep */
        CU_ASSERT_EQUAL(res->woke_ns, 0);
        res->publish_ns = now_ns();
        fring_release_wakes(r);
        CU_ASSERT_EQUAL(t_wait_child(pid), 0);
        CU_ASSERT_EQUAL(res->wait_ret, 0);
        CU_ASSERT_EQUAL(res->read_ret, 3);
        CU_ASSERT_TRUE(res->record_ok);
        printf("\n    woke %.1f us after the release\n    ", (double)(res->woke_ns - res->publish_ns) / 1e3);
        fring_free(r);
        CU_ASSERT_EQUAL(fring_unlink(name), 0);
        munmap(res, sizeof *res);
}

/* ---- 3. lapped reader ------------------------------------------------------------------ */

static void test_lapped(void)
{
        enum { IDS = 20, N = 1000 };
        struct fring_frontier exp[IDS], buf[3], f;
        struct fring_reader *rd = NULL;
        struct fring *r = NULL;
        struct model *m = calloc(1, sizeof *m);
        char name[64];
        bool resynced = false;
        unsigned calls = 0, resync_calls = 0;

        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        t_ring_name(name, sizeof name, "lapped");
        CU_ASSERT_EQUAL_FATAL(fring_create(name, 32, 64, 1, &r), 0);
        CU_ASSERT_EQUAL_FATAL(fring_attach(name, &rd), 0);
        CU_ASSERT_EQUAL(model_drain(rd, m, 3), 0);
        CU_ASSERT_EQUAL(m->resyncs, 1);

        for (uint64_t j = 0; j < N; j++) {
                f = t_val(1 + j % IDS, j);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &f), 0);
                exp[j % IDS] = f;
        }
        /* 1000 records through a 64-record ring: the reader was lapped.  It gets one
         * snapshot, 3 records per call, then nothing. */
        m->n = 0;
        do {
                bool rs = false;
                int n = fring_read(rd, buf, ELEMENTSOF(buf), &rs);

                CU_ASSERT_FATAL(n >= 0 && n <= 3);
                calls++;
                resync_calls += rs;
                if (calls == 1)
                        resynced = rs;
                for (int k = 0; k < n; k++) {
                        CU_ASSERT_PTR_NULL(model_find(m, buf[k].id));  /* once each */
                        model_apply(m, &buf[k]);
                }
        } while (fring_reader_resyncing(rd) && calls < 100);
        CU_ASSERT_TRUE(resynced);
        CU_ASSERT_EQUAL(resync_calls, 1);
        CU_ASSERT_EQUAL(calls, 7);      /* 20 ids, 3 per call */
        CU_ASSERT_TRUE(model_equals(m, exp, IDS));
        CU_ASSERT_EQUAL(fring_read(rd, buf, ELEMENTSOF(buf), &resynced), 0);
        CU_ASSERT_FALSE(resynced);

        /* Back to streaming. */
        for (uint64_t j = N; j < N + 10; j++) {
                f = t_val(1 + j % IDS, j);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &f), 0);
                exp[j % IDS] = f;
        }
        m->stream_records = 0;
        CU_ASSERT_EQUAL(model_drain(rd, m, 3), 0);
        CU_ASSERT_EQUAL(m->stream_records, 10);
        CU_ASSERT_TRUE(model_equals(m, exp, IDS));

        /* Lapped in the middle of a batch: read a little, publish a ring's worth. */
        for (uint64_t j = N + 10; j < N + 20; j++) {
                f = t_val(1 + j % IDS, j);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &f), 0);
                exp[j % IDS] = f;
        }
        CU_ASSERT_EQUAL(fring_read(rd, buf, 2, &resynced), 2);
        CU_ASSERT_FALSE(resynced);
        model_apply(m, &buf[0]);
        model_apply(m, &buf[1]);
        for (uint64_t j = N + 20; j < N + 20 + 64; j++) {
                f = t_val(1 + j % IDS, j);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &f), 0);
                exp[j % IDS] = f;
        }
        m->resyncs = 0;
        CU_ASSERT_EQUAL(model_drain(rd, m, 3), 0);
        CU_ASSERT_EQUAL(m->resyncs, 1);
        CU_ASSERT_TRUE(model_equals(m, exp, IDS));

        fring_reader_free(rd);
        fring_free(r);
        CU_ASSERT_EQUAL(fring_unlink(name), 0);
        free(m);
}

/* ---- 4. producer restart ----------------------------------------------------------------- */

struct restart_result {
        int ok;
        uint64_t generation;
};

static _Noreturn void restart_child(const char *name, int ready_fd, void *arg)
{
        struct restart_result *res = arg;
        struct fring_frontier want = t_val(42, 5);
        struct fring_reader *rd = NULL;
        struct model m = {};
        uint64_t deadline = now_ms() + 10000;

        C_ASSERT(fring_attach(name, &rd) == 0);
        C_ASSERT(model_drain(rd, &m, 8) == 0);
        t_sync_send(ready_fd);
        /* Sleep until the new producer takes over, then follow it until we see its
         * value -- and nothing of the old producer's. */
        while (!(fring_reader_generation(rd) == 5 && model_equals(&m, &want, 1))) {
                int q;

                C_ASSERT(now_ms() < deadline);
                q = fring_wait(rd, 10000);
                C_ASSERT(q == 0);
                C_ASSERT(model_drain(rd, &m, 8) == 0);
        }
        res->generation = fring_reader_generation(rd);
        res->ok = 1;
        fring_reader_free(rd);
        _exit(T_EXIT_PASS);
}

static void test_restart(void)
{
        struct fring_frontier exp[600], f;
        struct fring_reader *rd = NULL;
        struct fring *r = NULL, *r2 = NULL;
        struct restart_result *res = t_shared_page(sizeof *res);
        struct model *m = calloc(1, sizeof *m);
        char name[64];
        size_t n;
        pid_t pid;

        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        CU_ASSERT_PTR_NOT_NULL_FATAL(res);
        t_ring_name(name, sizeof name, "restart");
        CU_ASSERT_EQUAL_FATAL(fring_create(name, 16, 64, 1, &r), 0);
        for (uint64_t id = 1; id <= 10; id++) {
                f = t_val(id, id);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &f), 0);
        }
        CU_ASSERT_EQUAL_FATAL(fring_attach(name, &rd), 0);
        CU_ASSERT_EQUAL(model_drain(rd, m, 4), 0);
        CU_ASSERT_EQUAL(m->n, 10);

        /* A second producer is refused while the first lives. */
        CU_ASSERT_EQUAL(fring_create(name, 16, 64, 9, &r2), -EBUSY);

        /* Same sizes, new generation, other collections and values. */
        r = fring_free(r);
        CU_ASSERT_EQUAL(fring_wait(rd, 0), -ETIMEDOUT);  /* a dead producer is silent */
        CU_ASSERT_EQUAL_FATAL(fring_create(name, 16, 64, 2, &r), 0);
        n = 0;
        for (uint64_t id = 5; id <= 15; id++) {
                exp[n] = t_val(id, 1000 + id);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &exp[n]), 0);
                n++;
        }
        CU_ASSERT_EQUAL(fring_wait(rd, 0), 0);
        m->resyncs = 0;
        CU_ASSERT_EQUAL(model_drain(rd, m, 4), 0);
        CU_ASSERT_EQUAL(m->resyncs, 1);
        CU_ASSERT_EQUAL(fring_reader_generation(rd), 2);
        CU_ASSERT_TRUE(model_equals(m, exp, n));
        CU_ASSERT_EQUAL(fring_lookup(rd, 1, &f), -ENOENT);
        CU_ASSERT_EQUAL(fring_lookup(rd, 5, &f), 0);
        CU_ASSERT_TRUE(t_frontier_eq(&f, &exp[0]));

        /* Bigger: the object grows and the reader remaps. */
        r = fring_free(r);
        CU_ASSERT_EQUAL_FATAL(fring_create(name, 1000, 4096, 3, &r), 0);
        n = 0;
        for (uint64_t id = 1; id <= 600; id++) {
                exp[n] = t_val(id * 7919, id);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &exp[n]), 0);
                n++;
        }
        CU_ASSERT_EQUAL(fring_lookup(rd, 600 * 7919, &f), 0);  /* lookups remap too */
        CU_ASSERT_TRUE(t_frontier_eq(&f, &exp[599]));
        m->resyncs = 0;
        CU_ASSERT_EQUAL(model_drain(rd, m, 64), 0);
        CU_ASSERT_EQUAL(m->resyncs, 1);
        CU_ASSERT_EQUAL(fring_reader_generation(rd), 3);
        CU_ASSERT_TRUE(model_equals(m, exp, n));

        /* Smaller: the object keeps its size (the reader's mapping stays valid). */
        r = fring_free(r);
        CU_ASSERT_EQUAL_FATAL(fring_create(name, 4, 8, 4, &r), 0);
        n = 0;
        for (uint64_t id = 1; id <= 3; id++) {
                exp[n] = t_val(id, 50 + id);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &exp[n]), 0);
                n++;
        }
        CU_ASSERT_EQUAL(model_drain(rd, m, 2), 0);
        CU_ASSERT_EQUAL(fring_reader_generation(rd), 4);
        CU_ASSERT_TRUE(model_equals(m, exp, n));
        CU_ASSERT(fring_check(r));

        /* A reader of another process, asleep in fring_wait(), is woken by the restart.
         * Fork with no producer alive: a child must not inherit the producer lock. */
        r = fring_free(r);
        CU_ASSERT_TRUE_FATAL(t_fork_sleepers(name, 1, restart_child, res, sizeof *res, &pid));
        CU_ASSERT_EQUAL_FATAL(fring_create(name, 4, 8, 5, &r), 0);
        f = t_val(42, 5);
        CU_ASSERT_EQUAL(fring_publish(r, &f), 0);
        CU_ASSERT_EQUAL(t_wait_child(pid), 0);
        CU_ASSERT_EQUAL(res->ok, 1);
        CU_ASSERT_EQUAL(res->generation, 5);

        fring_reader_free(rd);
        fring_free(r);
        CU_ASSERT_EQUAL(fring_unlink(name), 0);
        munmap(res, sizeof *res);
        free(m);
}

/* ---- 5. bad contents --------------------------------------------------------------------- */

/* Makes the derived header fields agree with the counts, so that only the intended
 * damage remains. */
static void t_header_derive(struct fring_header *h)
{
        h->ring_offset = h->slots_offset + (uint64_t)h->slot_count * sizeof(struct fring_slot);
        h->total_size = fring_layout_end(h->slots_offset, h->slot_count, h->ring_records);
}

static void test_bad_attach(void)
{
        struct fring_header *h, saved;
        struct fring_frontier f;
        struct fring *r = NULL;
        struct t_region g;
        char name[64];

        t_ring_name(name, sizeof name, "bad");
        CU_ASSERT_EQUAL(t_attach_result(name), -ENOENT);
        CU_ASSERT_EQUAL(t_attach_result("no-slash"), -EINVAL);
        CU_ASSERT_EQUAL(fring_attach(name, NULL), -EINVAL);

        CU_ASSERT_EQUAL_FATAL(fring_create(name, 16, 64, 1, &r), 0);
        for (uint64_t id = 1; id <= 10; id++) {
                f = t_val(id, id);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &f), 0);
        }
        r = fring_free(r);
        CU_ASSERT_TRUE_FATAL(t_region_map(name, &g));
        h = (struct fring_header *)g.p;
        saved = *h;
        CU_ASSERT_EQUAL(t_attach_result(name), 0);

#define BAD_HEADER(stmt, derive, want)                                                  \
        do {                                                                            \
                *h = saved;                                                             \
                stmt;                                                                   \
                if (derive)                                                             \
                        t_header_derive(h);                                             \
                CU_ASSERT_EQUAL(t_attach_result(name), want);                           \
        } while (0)
        /* One defect at a time (derived fields recomputed where the defect is a count). */
        BAD_HEADER(h->magic ^= 1, false, -EBADMSG);
        BAD_HEADER(h->version = 99, false, -EPROTO);
        BAD_HEADER(h->header_size = 0, false, -EBADMSG);
        BAD_HEADER(h->slot_size = 32, false, -EBADMSG);
        BAD_HEADER(h->record_size = 40, false, -EBADMSG);
        BAD_HEADER((h->slot_count = 3, h->slot_limit = 1), true, -EBADMSG);
        BAD_HEADER((h->slot_count = 1u << 22, h->slot_limit = 1), true, -EBADMSG);
        BAD_HEADER(h->slot_limit = h->slot_count / 2 + 1, false, -EBADMSG);
        BAD_HEADER(h->slot_limit = 0, false, -EBADMSG);
        BAD_HEADER(h->ring_records = 48, true, -EBADMSG);
        BAD_HEADER(h->ring_records = 1, true, -EBADMSG);
        BAD_HEADER(h->ring_records = 0, true, -EBADMSG);
        BAD_HEADER(h->ring_records = 1u << 23, true, -EBADMSG);
        BAD_HEADER(h->ring_offset += 64, false, -EBADMSG);
        BAD_HEADER(h->slots_offset = 0, false, -EBADMSG);
        BAD_HEADER(h->slots_offset = 64, true, -EBADMSG);       /* over the header */
        BAD_HEADER(h->slots_offset += 100, true, -EBADMSG);     /* not a slot's alignment */
        BAD_HEADER(h->slots_offset = FRING_LAYOUT_OFFSET_MAX + 64, true, -EBADMSG);
        BAD_HEADER(h->slots_offset += 1u << 20, true, -EBADMSG);        /* past the object */
        BAD_HEADER(h->total_size += 4096, false, -EBADMSG);
        BAD_HEADER(h->total_size = UINT64_MAX, false, -EBADMSG);
        /* Consistent, but bigger than the object: the reader must not map past its end. */
        BAD_HEADER((h->slot_count = 1u << 20, h->slot_limit = 1u << 19), true, -EBADMSG);
        BAD_HEADER(h->hdr_seq |= 1, false, -EAGAIN);    /* producer initializing */
        BAD_HEADER(h->hdr_seq = 0, false, -EAGAIN);     /* never initialized */
        /* The helper itself leaves a good header good. */
        BAD_HEADER((void)0, true, 0);
#undef BAD_HEADER
        *h = saved;
        CU_ASSERT_EQUAL(t_attach_result(name), 0);

        t_bad_wait_and_small(name, FRING_WAIT_SUFFIX, t_attach_result);

        munmap(g.p, g.size);
        CU_ASSERT_EQUAL(fring_unlink(name), 0);
}

/* An attached reader whose region goes bad under it: errors, then recovery. */
static void test_bad_read(void)
{
        struct fring_header *h, saved;
        struct fring_frontier f, buf[16];
        struct fring_record *ring, *rec;
        struct fring_reader *rd = NULL;
        struct fring_slot *s;
        struct fring *r = NULL;
        struct model m = {};
        struct t_region g;
        uint64_t w, seq;
        uint32_t state;
        char name[64];
        bool resynced;

        t_ring_name(name, sizeof name, "badread");
        CU_ASSERT_EQUAL_FATAL(fring_create(name, 16, 64, 1, &r), 0);
        for (uint64_t id = 1; id <= 10; id++) {
                f = t_val(id, id);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &f), 0);
        }
        CU_ASSERT_EQUAL_FATAL(fring_attach(name, &rd), 0);
        CU_ASSERT_EQUAL(model_drain(rd, &m, 16), 0);
        CU_ASSERT_TRUE_FATAL(t_region_map(name, &g));
        h = (struct fring_header *)g.p;
        ring = (struct fring_record *)(g.p + h->ring_offset);

        /* write_pos going backwards. */
        w = h->write_pos;
        h->write_pos = w - 1;
        CU_ASSERT_EQUAL(fring_read(rd, buf, 16, NULL), -EBADMSG);
        h->write_pos = w;
        CU_ASSERT_EQUAL(fring_read(rd, buf, 16, NULL), 0);

        /* A record with a number the producer never writes there, then bad flags. */
        f = t_val(3, 33);
        CU_ASSERT_EQUAL(fring_publish(r, &f), 0);
        rec = &ring[h->write_pos & (h->ring_records - 1)];
        seq = rec->seq;
        rec->seq = seq + 5;
        CU_ASSERT_EQUAL(fring_read(rd, buf, 16, NULL), -EBADMSG);
        rec->seq = seq - 1;
        CU_ASSERT_EQUAL(fring_read(rd, buf, 16, NULL), -EBADMSG);
        rec->seq = seq;
        rec->flags = 0x80;
        CU_ASSERT_EQUAL(fring_read(rd, buf, 16, NULL), -EBADMSG);
        rec->flags = 0;
        CU_ASSERT_EQUAL(fring_read(rd, buf, 16, NULL), 1);
        CU_ASSERT_TRUE(t_frontier_eq(&buf[0], &f));

        /* A slot in a state the producer never writes: lookups and snapshots fail. */
        s = t_find_slot(&g, 3);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        state = s->state;
        s->state = 7;
        CU_ASSERT_EQUAL(fring_lookup(rd, 3, &f), -EBADMSG);
        t_touch_header(h);
        CU_ASSERT_EQUAL(fring_read(rd, buf, 16, &resynced), -EBADMSG);
        s->state = state;
        CU_ASSERT_EQUAL(fring_lookup(rd, 3, &f), 0);
        m.resyncs = 0;
        CU_ASSERT_EQUAL(model_drain(rd, &m, 16), 0);
        CU_ASSERT_EQUAL(m.resyncs, 1);

        /* The whole header garbage: errors until the producer comes back. */
        saved = *h;
        memset(h, 0xa5, sizeof *h);
        h->hdr_seq = saved.hdr_seq + 2;
        CU_ASSERT_EQUAL(fring_wait(rd, 0), 0);
        CU_ASSERT_EQUAL(fring_read(rd, buf, 16, NULL), -EBADMSG);
        CU_ASSERT_EQUAL(fring_lookup(rd, 3, &f), -EBADMSG);
        CU_ASSERT_EQUAL(fring_read(rd, buf, 16, NULL), -EBADMSG);
        CU_ASSERT_EQUAL(fring_wait(rd, 0), -ETIMEDOUT);  /* known damage is not news */
        r = fring_free(r);
        CU_ASSERT_EQUAL_FATAL(fring_create(name, 16, 64, 2, &r), 0);
        f = t_val(8, 88);
        CU_ASSERT_EQUAL(fring_publish(r, &f), 0);
        m.resyncs = 0;
        CU_ASSERT_EQUAL(model_drain(rd, &m, 16), 0);
        CU_ASSERT_EQUAL(m.resyncs, 1);
        CU_ASSERT_TRUE(model_equals(&m, &f, 1));
        CU_ASSERT_EQUAL(fring_reader_generation(rd), 2);

        munmap(g.p, g.size);
        fring_reader_free(rd);
        fring_free(r);
        CU_ASSERT_EQUAL(fring_unlink(name), 0);
}

/* Random damage anywhere, to readers attached before and after it: any outcome but a
 * crash, an out-of-bounds access (run under valgrind or ASan) or an unexpected error. */
static void test_bad_fuzz(void)
{
        enum { ROUNDS = 400 };
        struct fring_frontier f, buf[8];
        struct fring_reader *old = NULL, *readers[2];
        struct fring *r = NULL;
        struct t_region g;
        uint8_t *pristine;
        uint64_t seed = 7;
        uint32_t hseq;
        char name[64];
        unsigned errors = 0;

#define RAND() (seed = seed * 6364136223846793005ull + 1442695040888963407ull, seed >> 33)
#define ALLOWED(k) ((k) >= 0 || (k) == -EBADMSG || (k) == -EPROTO || (k) == -EAGAIN || \
                    (k) == -ENOENT || (k) == -ETIMEDOUT)
        t_ring_name(name, sizeof name, "fuzz");
        CU_ASSERT_EQUAL_FATAL(fring_create(name, 8, 16, 1, &r), 0);
        for (uint64_t j = 0; j < 40; j++) {
                f = t_val(1 + j % 6, j);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &f), 0);
        }
        r = fring_free(r);
        CU_ASSERT_TRUE_FATAL(t_region_map(name, &g));
        pristine = malloc(g.size);
        CU_ASSERT_PTR_NOT_NULL_FATAL(pristine);
        memcpy(pristine, g.p, g.size);
        hseq = ((struct fring_header *)g.p)->hdr_seq;
        CU_ASSERT_EQUAL_FATAL(fring_attach(name, &old), 0);

        for (unsigned round = 0; round < ROUNDS; round++) {
                struct fring_reader *rd = NULL;
                struct fring_header *h = (struct fring_header *)g.p;
                unsigned hits = 1 + RAND() % 8;
                int k;

                memcpy(g.p, pristine, g.size);
                for (unsigned i = 0; i < hits; i++) {
                        size_t at = RAND() % 4 ? RAND() % sizeof *h : RAND() % g.size;

                        g.p[at] = (uint8_t)RAND();
                }
                /* A new, even hdr_seq most of the time, so that readers look. */
                hseq += 2;
                if (RAND() % 8)
                        h->hdr_seq = hseq;

                k = fring_attach(name, &rd);
                CU_ASSERT(ALLOWED(k));
                readers[0] = old;
                readers[1] = rd;
                for (unsigned x = 0; x < ELEMENTSOF(readers) && readers[x]; x++) {
                        for (unsigned i = 0; i < 4; i++) {
                                k = fring_read(readers[x], buf, ELEMENTSOF(buf), NULL);
                                CU_ASSERT(ALLOWED(k));
                                errors += k < 0;
                        }
                        k = fring_lookup(readers[x], 1 + RAND() % 8, &f);
                        CU_ASSERT(ALLOWED(k));
                        k = fring_wait(readers[x], 0);
                        CU_ASSERT(ALLOWED(k));
                }
                fring_reader_free(rd);
        }
        CU_ASSERT(errors > 0);
#undef ALLOWED
#undef RAND
        fring_reader_free(old);
        munmap(g.p, g.size);
        free(pristine);
        CU_ASSERT_EQUAL(fring_unlink(name), 0);
}

/* ---- 6. torn reads ------------------------------------------------------------------------- */

struct hammer_ctl {
        int stop;
        uint64_t published;
};

static _Noreturn void hammer_child(const char *name, int ready_fd, struct hammer_ctl *ctl)
{
        struct fring *r = NULL;
        uint64_t x = 0;

        C_ASSERT(fring_create(name, 4, 64, 1, &r) == 0);
        do {
                struct fring_frontier f = { .id = 1, .upper = x, .since = x, .physical_since = x };

                C_ASSERT(fring_publish(r, &f) == 0);
                if (x == 0)
                        t_sync_send(ready_fd);
                x++;
        } while (!__atomic_load_n(&ctl->stop, __ATOMIC_RELAXED));
        ctl->published = x;
        fring_free(r);
        _exit(T_EXIT_PASS);
}

static bool t_untorn(const struct fring_frontier *f)
{
        return f->id == 1 && f->upper == f->since && f->since == f->physical_since;
}

/* A producer process rewrites one slot (x, x, x) as fast as it can; every lookup and
 * every record a reader gets must have three equal fields. */
static void test_torn(void)
{
        struct hammer_ctl *ctl = t_shared_page(sizeof *ctl);
        struct fring_reader *rd = NULL;
        struct fring_frontier f, buf[16];
        uint64_t lookups = 0, records = 0, torn = 0, busy = 0, changes = 0, prev = 0;
        uint64_t deadline;
        char name[64];
        pid_t pid;
        int sync[2], k;

        CU_ASSERT_PTR_NOT_NULL_FATAL(ctl);
        CU_ASSERT_EQUAL_FATAL(pipe2(sync, O_CLOEXEC), 0);
        t_ring_name(name, sizeof name, "torn");
        pid = t_fork();
        CU_ASSERT_FATAL(pid >= 0);
        if (pid == 0) {
                close(sync[0]);
                hammer_child(name, sync[1], ctl);
        }
        close(sync[1]);
        CU_ASSERT_TRUE_FATAL(t_sync_recv(sync[0], 1));
        close(sync[0]);
        CU_ASSERT_EQUAL_FATAL(fring_attach(name, &rd), 0);

        deadline = now_ms() + 500;
        while (now_ms() < deadline) {
                for (unsigned i = 0; i < 256; i++) {
                        k = fring_lookup(rd, 1, &f);
                        if (k == -EAGAIN) {
                                busy++;
                                continue;
                        }
                        CU_ASSERT_EQUAL_FATAL(k, 0);
                        lookups++;
                        torn += !t_untorn(&f);
                        changes += f.upper != prev;
                        prev = f.upper;
                }
                k = fring_read(rd, buf, ELEMENTSOF(buf), NULL);
                CU_ASSERT_FATAL(k >= 0);
                for (int i = 0; i < k; i++) {
                        records++;
                        torn += !t_untorn(&buf[i]);
                }
        }
        __atomic_store_n(&ctl->stop, 1, __ATOMIC_RELAXED);
        CU_ASSERT_EQUAL(t_wait_child(pid), 0);
        printf("\n    %llu lookups (%llu saw a new value, %llu busy), %llu records, "
               "%llu published, %llu torn\n    ",
               (unsigned long long)lookups, (unsigned long long)changes,
               (unsigned long long)busy, (unsigned long long)records,
               (unsigned long long)ctl->published, (unsigned long long)torn);
        CU_ASSERT_EQUAL(torn, 0);
        CU_ASSERT(lookups > 1000);
        CU_ASSERT(changes > 1);         /* the two processes really ran together */

        fring_reader_free(rd);
        CU_ASSERT_EQUAL(fring_unlink(name), 0);
        munmap(ctl, sizeof *ctl);
}

/* ---- 6. growth in steps (fring.c note 10) -------------------------------------------- */

/* The object's size and the bytes it holds (punched holes hold none). */
static bool t_object_usage(const char *name, uint64_t *ret_size, uint64_t *ret_held)
{
        struct stat st;
        int fd = shm_open(name, O_RDONLY | O_CLOEXEC, 0);

        if (fd < 0)
                return false;
        if (fstat(fd, &st) < 0) {
                close(fd);
                return false;
        }
        close(fd);
        *ret_size = (uint64_t)st.st_size;
        *ret_held = (uint64_t)st.st_blocks * 512;
        return true;
}

/* Publishes, updates and forgets through many doublings of a small table, checked at
 * every step against a model: fring_check() (the copy's invariant), lookups of the
 * last id and of a random live one, and a reader draining as it goes.  The header moves
 * once per doubling; the retired layouts are freed; a restart frees what grown layouts
 * left past its own. */
static void test_grow_steps(void)
{
        enum { CAP = 32, N = 1800 };
        static struct model m;
        static struct fring_frontier live[N + 1];       /* by id; id 0 unused */
        static bool is_live[N + 1];
        struct fring_frontier f, exp[N];
        struct fring_reader *rd = NULL;
        struct fring *r = NULL;
        struct t_region g;
        uint64_t size, held, seed = 7, resyncs_before;
        size_t n_live = 0, n_exp = 0;
        char name[64];

        memset(&m, 0, sizeof m);
        t_ring_name(name, sizeof name, "grow");
        CU_ASSERT_EQUAL_FATAL(fring_create(name, CAP, 256, 1, &r), 0);
        CU_ASSERT_EQUAL_FATAL(fring_attach(name, &rd), 0);
        CU_ASSERT_EQUAL(model_drain(rd, &m, 64), 0);
        resyncs_before = m.resyncs;

        for (uint64_t j = 1; j <= N; j++) {
                uint64_t id = j, other;

                f = t_val(id, j);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &f), 0);
                live[id] = f;
                is_live[id] = true;
                n_live++;
                /* Churn: forget one id in three, update another (tombstones, both
                 * tables written while a grow copies). */
                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                other = 1 + (seed >> 33) % j;
                if (j % 3 == 0 && is_live[other]) {
                        CU_ASSERT_EQUAL_FATAL(fring_forget(r, other), 0);
                        is_live[other] = false;
                        n_live--;
                } else if (is_live[other]) {
                        f = t_val(other, j + N);
                        CU_ASSERT_EQUAL_FATAL(fring_publish(r, &f), 0);
                        live[other] = f;
                }
                CU_ASSERT_FATAL(fring_check(r));
                if (is_live[id]) {
                        CU_ASSERT_EQUAL_FATAL(fring_lookup(rd, id, &f), 0);
                        CU_ASSERT_TRUE(t_frontier_eq(&f, &live[id]));
                }
                if (is_live[other]) {
                        CU_ASSERT_EQUAL_FATAL(fring_lookup(rd, other, &f), 0);
                        CU_ASSERT_TRUE(t_frontier_eq(&f, &live[other]));
                } else
                        CU_ASSERT_EQUAL(fring_lookup(rd, other, &f), -ENOENT);
                if (j % 16 == 0)
                        CU_ASSERT_EQUAL_FATAL(model_drain(rd, &m, 64), 0);
        }
        CU_ASSERT_EQUAL_FATAL(model_drain(rd, &m, 64), 0);
        for (uint64_t id = 1; id <= N; id++)
                if (is_live[id])
                        exp[n_exp++] = live[id];
        CU_ASSERT_EQUAL(n_exp, n_live);
        CU_ASSERT_TRUE(model_equals(&m, exp, n_exp));
        /* From 32 to 2,048 live at most: the header moved for each of the doublings
         * (and for rebuilds, if any), not for every publish. */
        printf("\n    %zu live, %llu resyncs", n_live,
               (unsigned long long)(m.resyncs - resyncs_before));
        CU_ASSERT(m.resyncs - resyncs_before >= 5);
        CU_ASSERT(m.resyncs - resyncs_before <= 40);

        /* The layout moved away from the header; what it left behind holds nothing. */
        CU_ASSERT_TRUE_FATAL(t_region_map(name, &g));
        {
                const struct fring_header *h = (const struct fring_header *)g.p;

                CU_ASSERT(h->slots_offset > sizeof *h);
                CU_ASSERT_TRUE_FATAL(t_object_usage(name, &size, &held));
                printf(", object %llu bytes, %llu held, layout %llu..%llu\n    ",
                       (unsigned long long)size, (unsigned long long)held,
                       (unsigned long long)h->slots_offset, (unsigned long long)h->total_size);
                CU_ASSERT(size >= h->total_size);
                CU_ASSERT(held <= h->total_size - h->slots_offset + 2 * 4096);
        }
        munmap(g.p, g.size);

        /* A restart starts over at the header and frees the rest. */
        r = fring_free(r);
        CU_ASSERT_EQUAL_FATAL(fring_create(name, CAP, 256, 2, &r), 0);
        CU_ASSERT_TRUE_FATAL(t_object_usage(name, &size, &held));
        CU_ASSERT(held <= fring_layout_size(2 * CAP, 256) + 4096);
        CU_ASSERT_EQUAL(model_drain(rd, &m, 64), 0);
        CU_ASSERT_EQUAL(m.n, 0);
        CU_ASSERT_EQUAL(fring_lookup(rd, N, &f), -ENOENT);
        CU_ASSERT(fring_check(r));

        fring_reader_free(rd);
        fring_free(r);
        CU_ASSERT_EQUAL(fring_unlink(name), 0);
}

/* A reader process looks up ids published before it started, over and over, while the
 * producer grows the table from 128 to 262,144 live collections: every lookup finds
 * its id (a grow never hides a live collection), with values that never go back. */
#define GROW_K 100
struct grow_ctl {
        uint32_t stop;
        uint64_t lookups, busy, missing, bad, went_back;
};

static _Noreturn void grow_reader(const char *name, int ready_fd, struct grow_ctl *ctl)
{
        struct fring_reader *rd = NULL;
        uint64_t last[GROW_K + 1] = { 0 };

        C_ASSERT(fring_attach(name, &rd) == 0);
        t_sync_send(ready_fd);
        while (!__atomic_load_n(&ctl->stop, __ATOMIC_RELAXED))
                for (uint64_t id = 1; id <= GROW_K; id++) {
                        struct fring_frontier f;
                        int k = fring_lookup(rd, id, &f);

                        if (k == -EAGAIN) {
                                ctl->busy++;
                                continue;
                        }
                        ctl->lookups++;
                        if (k == -ENOENT)
                                ctl->missing++;
                        else if (k != 0 || f.id != id || !t_val_ok(&f))
                                ctl->bad++;
                        else if (f.since < last[id])
                                ctl->went_back++;
                        else
                                last[id] = f.since;
                }
        fring_reader_free(rd);
        _exit(T_EXIT_PASS);
}

static void test_grow_concurrent(void)
{
        enum { ADD = 200000 };
        struct grow_ctl *ctl = t_shared_page(sizeof *ctl);
        struct fring *r = NULL;
        struct fring_frontier f;
        char name[64];
        int sync[2];
        pid_t pid;

        CU_ASSERT_PTR_NOT_NULL_FATAL(ctl);
        CU_ASSERT_EQUAL_FATAL(pipe2(sync, O_CLOEXEC), 0);
        t_ring_name(name, sizeof name, "growc");
        CU_ASSERT_EQUAL_FATAL(fring_create(name, 128, 1024, 1, &r), 0);
        for (uint64_t id = 1; id <= GROW_K; id++) {
                f = t_val(id, 1);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &f), 0);
        }
        pid = t_fork();
        CU_ASSERT_FATAL(pid >= 0);
        if (pid == 0) {
                close(sync[0]);
                grow_reader(name, sync[1], ctl);
        }
        close(sync[1]);
        CU_ASSERT_TRUE_FATAL(t_sync_recv(sync[0], 1));
        close(sync[0]);
        for (uint64_t j = 0; j < ADD; j++) {
                f = t_val(1000 + j, j);
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &f), 0);
                f = t_val(1 + j % GROW_K, 2 + j);       /* the reader's ids move on */
                CU_ASSERT_EQUAL_FATAL(fring_publish(r, &f), 0);
        }
        CU_ASSERT(fring_check(r));
        __atomic_store_n(&ctl->stop, 1, __ATOMIC_RELAXED);
        CU_ASSERT_EQUAL(t_wait_child(pid), 0);
        printf("\n    %llu lookups (%llu busy), %llu missing, %llu bad, %llu went back\n    ",
               (unsigned long long)ctl->lookups, (unsigned long long)ctl->busy,
               (unsigned long long)ctl->missing, (unsigned long long)ctl->bad,
               (unsigned long long)ctl->went_back);
        CU_ASSERT(ctl->lookups > 1000);
        CU_ASSERT_EQUAL(ctl->missing, 0);
        CU_ASSERT_EQUAL(ctl->bad, 0);
        CU_ASSERT_EQUAL(ctl->went_back, 0);

        fring_free(r);
        CU_ASSERT_EQUAL(fring_unlink(name), 0);
        munmap(ctl, sizeof *ctl);
}

/* ---- main ------------------------------------------------------------------------------------ */

int main(void)
{
        static const struct t_case same_process[] = {
                { "publish, read in order, lookup, forget, full", test_basic },
                { "tombstones and rebuilds against a model", test_churn },
                { "the table grows in steps, freeing what it leaves", test_grow_steps },
                { "lapped reader resyncs to the latest values", test_lapped },
                { NULL, NULL },
        };
        static const struct t_case processes[] = {
                { "two reader processes follow every change", test_two_readers },
                { "sleeping readers are woken by a publish", test_wake },
                { "held wake-ups: one, at the release", test_wake_held },
                { "producer restart: generation, remap, wake-up", test_restart },
                { "no torn slot or record under a hammering producer", test_torn },
                { "a grow never hides a live collection from a reader", test_grow_concurrent },
                { NULL, NULL },
        };
        static const struct t_case damage[] = {
                { "attach refuses missing or damaged regions", test_bad_attach },
                { "reads of a region damaged under the reader", test_bad_read },
                { "random damage never crashes", test_bad_fuzz },
                { NULL, NULL },
        };
        static const struct t_suite suites[] = {
                { "fring same process", same_process },
                { "fring processes", processes },
                { "fring damage", damage },
                { NULL, NULL },
        };
        return t_ring_main(suites, fring_unlink);
}
