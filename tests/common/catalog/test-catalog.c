/* test-catalog.c -- the catalog store (common/catalog): round trip and recovery, log
 * cursor, atomicity and durability under kill -9 (I7), secondary catch-up, sticky
 * errors (injected and a real EFBIG), group commit under concurrency, several
 * transactions in one write (catalog_commit_many).
 *
 * Two cases re-execute this binary in a child mode, so the child starts with one
 * thread and no RocksDB state inherited across fork():
 *   test-catalog --writer DIR FD   commit forever from WRITER_THREADS threads and
 *                                  report each acknowledged (seq, id) on FD
 *   test-catalog --efbig DIR       the real write failure case (RLIMIT_FSIZE) on a
 *                                  catalog in DIR; exit 0 pass, 1 fail
 */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "catalog/catalog.h"
#include "t.h"
#include "util.h"

#define KILL_KEYS 8                     /* keys written by every kill-test transaction */
#define KILL_VALUE_LEN 100
#define WRITER_THREADS 4
#define GROUP_THREADS 8
#define GROUP_COMMITS 200               /* per thread */

struct ack {
        uint64_t seq;
        uint64_t id;
};

static struct catalog_op op_put(enum catalog_cf cf, const char *key, const char *value)
{
        return (struct catalog_op){
                .kind = CATALOG_OP_PUT, .cf = cf,
                .key = key, .key_len = strlen(key),
                .value = value, .value_len = strlen(value),
        };
}

static struct catalog_op op_del(const char *key)
{
        return (struct catalog_op){
                .kind = CATALOG_OP_DELETE, .cf = CATALOG_CF_STATE,
                .key = key, .key_len = strlen(key),
        };
}

/* want == NULL: the key must be absent. */
static void check_value(struct catalog *c, enum catalog_cf cf, const char *key, const char *want)
{
        _cleanup_free_ void *v = NULL;
        size_t len = 0;
        int r;

        r = catalog_get(c, cf, key, strlen(key), &v, &len);
        if (!want) {
                CU_ASSERT_EQUAL(r, -ENOENT);
                return;
        }
        CU_ASSERT_EQUAL_FATAL(r, 0);
        CU_ASSERT_EQUAL(len, strlen(want));
        CU_ASSERT_STRING_EQUAL(v, want);
}

static bool bytes_eq(ProtobufCBinaryData b, const char *s)
{
        return b.len == strlen(s) && memcmp(b.data, s, b.len) == 0;
}

static void check_op(const Coord__CatalogOp *op, const struct catalog_op *want)
{
        CU_ASSERT_EQUAL(op->kind, want->kind == CATALOG_OP_PUT ? COORD__CATALOG_OP__KIND__PUT
                                                               : COORD__CATALOG_OP__KIND__DELETE);
        CU_ASSERT_EQUAL(op->cf, want->cf == CATALOG_CF_STATE ? COORD__CATALOG_OP__CF__STATE
                                                             : COORD__CATALOG_OP__CF__META);
        CU_ASSERT(op->key.len == want->key_len && memcmp(op->key.data, want->key, want->key_len) == 0);
        if (want->kind == CATALOG_OP_PUT)
                CU_ASSERT(op->value.len == want->value_len &&
                          memcmp(op->value.data, want->value, want->value_len) == 0);
}

/* ---- 1. Round trip, recovery, log cursor ---------------------------------------- */

static void test_round_trip(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("catalog"), *path = NULL;
        struct catalog *c = NULL, *c2 = NULL;
        struct catalog_log_iter *it = NULL;
        Coord__CatalogTxn *txn = NULL;
        uint8_t inc[8], last[8];
        _cleanup_free_ void *v = NULL;
        size_t len;
        uint64_t seq = 0;

        const struct catalog_op t1[] = {
                op_put(CATALOG_CF_STATE, "a", "1"),
                op_put(CATALOG_CF_STATE, "b", "2"),
        };
        const struct catalog_op t2[] = {
                op_put(CATALOG_CF_STATE, "c", "3"),
                op_del("a"),
        };
        struct catalog_op t3 = {
                .kind = CATALOG_OP_PUT, .cf = CATALOG_CF_META, .key = "incarnation",
                .key_len = strlen("incarnation"), .value = inc, .value_len = sizeof(inc),
        };
        const struct catalog_op t4[] = { op_put(CATALOG_CF_STATE, "d", "4") };
        const struct catalog_op *want[] = { t1, t2, &t3, t4 };
        const size_t want_n[] = { 2, 2, 1, 1 };

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        path = t_path_join(dir, "db");
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        CU_ASSERT_EQUAL(catalog_last_seq(c), 0);
        check_value(c, CATALOG_CF_STATE, "a", NULL);

        /* Sequence numbers are dense from 1; meta writes are transactions too. */
        CU_ASSERT_EQUAL(catalog_commit(c, t1, ELEMENTSOF(t1), &seq), 0);
        CU_ASSERT_EQUAL(seq, 1);
        CU_ASSERT_EQUAL(catalog_commit(c, t2, ELEMENTSOF(t2), &seq), 0);
        CU_ASSERT_EQUAL(seq, 2);
        be64_put(inc, 0x1122334455667788ull);
        CU_ASSERT_EQUAL(catalog_meta_put(c, "incarnation", inc, sizeof(inc), &seq), 0);
        CU_ASSERT_EQUAL(seq, 3);
        CU_ASSERT_EQUAL(catalog_last_seq(c), 3);

        /* A second primary is refused while this one holds the database. */
        CU_ASSERT_EQUAL(catalog_open(path, &c2), -EBUSY);
        CU_ASSERT_PTR_NULL(c2);

        /* Malformed transactions: rejected whole, nothing written, not sticky. */
        {
                struct catalog_op bad = op_put(CATALOG_CF_STATE, "x", "y");
                uint8_t eight[8] = { 0 };
                struct catalog_op own = {
                        .kind = CATALOG_OP_PUT, .cf = CATALOG_CF_META,
                        .key = CATALOG_META_LAST_SEQ, .key_len = strlen(CATALOG_META_LAST_SEQ),
                        .value = eight, .value_len = sizeof(eight),
                };
                const struct catalog_op mixed[] = { op_put(CATALOG_CF_STATE, "x", "y"), own };

                CU_ASSERT_EQUAL(catalog_commit(c, &bad, 0, NULL), -EINVAL);
                CU_ASSERT_EQUAL(catalog_commit(c, mixed, ELEMENTSOF(mixed), NULL), -EINVAL);
                bad.key_len = 0;
                CU_ASSERT_EQUAL(catalog_commit(c, &bad, 1, NULL), -EINVAL);
                bad = op_put(CATALOG_CF_STATE, "x", "y");
                bad.kind = _CATALOG_OP_KIND_MAX;
                CU_ASSERT_EQUAL(catalog_commit(c, &bad, 1, NULL), -EINVAL);
                bad = op_put(CATALOG_CF_STATE, "x", "y");
                bad.cf = _CATALOG_CF_MAX;
                CU_ASSERT_EQUAL(catalog_commit(c, &bad, 1, NULL), -EINVAL);
                CU_ASSERT_EQUAL(catalog_error(c), 0);
                CU_ASSERT_EQUAL(catalog_last_seq(c), 3);
                check_value(c, CATALOG_CF_STATE, "x", NULL);
        }

        check_value(c, CATALOG_CF_STATE, "a", NULL);
        check_value(c, CATALOG_CF_STATE, "b", "2");
        check_value(c, CATALOG_CF_STATE, "c", "3");
        CU_ASSERT_EQUAL(catalog_meta_get(c, "incarnation", &v, &len), 0);
        CU_ASSERT(len == sizeof(inc) && memcmp(v, inc, len) == 0);
        free(v);
        v = NULL;
        CU_ASSERT_EQUAL(catalog_meta_get(c, CATALOG_META_LAST_SEQ, &v, &len), 0);
        be64_put(last, 3);
        CU_ASSERT(len == sizeof(last) && memcmp(v, last, len) == 0);
        free(v);
        v = NULL;
        CU_ASSERT_EQUAL(catalog_get(c, CATALOG_CF_STATE, "b", 1, NULL, NULL), 0);
        c = catalog_close(c);

        /* Reopen recovers last_seq and the state, and numbering continues. */
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        CU_ASSERT_EQUAL(catalog_last_seq(c), 3);
        check_value(c, CATALOG_CF_STATE, "a", NULL);
        check_value(c, CATALOG_CF_STATE, "b", "2");
        check_value(c, CATALOG_CF_STATE, "c", "3");
        CU_ASSERT_EQUAL(catalog_commit(c, t4, ELEMENTSOF(t4), &seq), 0);
        CU_ASSERT_EQUAL(seq, 4);

        /* The cursor returns exactly the later transactions, in order, with their ops. */
        for (uint64_t after = 0; after <= 4; after++) {
                uint64_t expect = after + 1;
                int r;

                CU_ASSERT_EQUAL_FATAL(catalog_log_iter_new(c, after, &it), 0);
                while ((r = catalog_log_next(it, &txn)) == 1) {
                        CU_ASSERT_EQUAL(txn->seq, expect);
                        CU_ASSERT_FATAL(expect >= 1 && expect <= 4);
                        CU_ASSERT_EQUAL_FATAL(txn->n_ops, want_n[expect - 1]);
                        for (size_t i = 0; i < txn->n_ops; i++)
                                check_op(txn->ops[i], &want[expect - 1][i]);
                        CU_ASSERT(txn->commit_ms > 0);
                        coord__catalog_txn__free_unpacked(txn, NULL);
                        expect++;
                }
                CU_ASSERT_EQUAL(r, 0);
                CU_ASSERT_EQUAL(expect, 5);
                it = catalog_log_iter_free(it);
        }
        CU_ASSERT_EQUAL_FATAL(catalog_log_iter_new(c, UINT64_MAX, &it), 0);
        CU_ASSERT_EQUAL(catalog_log_next(it, &txn), 0);
        it = catalog_log_iter_free(it);

        /* An iterator reads the snapshot of its creation. */
        CU_ASSERT_EQUAL_FATAL(catalog_log_iter_new(c, 4, &it), 0);
        CU_ASSERT_EQUAL(catalog_commit(c, t1, ELEMENTSOF(t1), &seq), 0);
        CU_ASSERT_EQUAL(catalog_log_next(it, &txn), 0);
        it = catalog_log_iter_free(it);

        c = catalog_close(c);
        CU_ASSERT_PTR_NULL(catalog_close(NULL));
        CU_ASSERT_PTR_NULL(catalog_log_iter_free(NULL));
        t_rmrf(dir);
}

/* ---- 2. Atomicity and durability under kill -9 ------------------------------------ */

/* Every kill-test transaction writes the same KILL_KEYS keys, all with a value naming
 * the transaction (id), so a partly applied transaction shows as keys that differ. */
static void kill_value(char *buf, uint64_t id)
{
        int n = snprintf(buf, KILL_VALUE_LEN + 1, "%016" PRIx64 "-", id);

        memset(buf + n, 'v', KILL_VALUE_LEN - (size_t)n);
        buf[KILL_VALUE_LEN] = 0;
}

struct writer_arg {
        struct catalog *c;
        int fd;
        unsigned thread;
};

static void *writer_thread(void *p)
{
        struct writer_arg *a = p;
        char keys[KILL_KEYS][8], value[KILL_VALUE_LEN + 1];
        struct catalog_op ops[KILL_KEYS];

        for (unsigned k = 0; k < KILL_KEYS; k++)
                snprintf(keys[k], sizeof(keys[k]), "k%u", k);
        for (uint64_t n = 1; n < 1000000; n++) {
                struct ack ack = { .id = (uint64_t)a->thread << 40 | n };
                int r;

                kill_value(value, ack.id);
                for (unsigned k = 0; k < KILL_KEYS; k++)
                        ops[k] = op_put(CATALOG_CF_STATE, keys[k], value);
                r = catalog_commit(a->c, ops, KILL_KEYS, &ack.seq);
                if (r < 0) {
                        fprintf(stderr, "writer: commit: %s\n", strerror(-r));
                        _exit(2);
                }
                /* 16 bytes < PIPE_BUF: one atomic write per acknowledgement. */
                if (write(a->fd, &ack, sizeof(ack)) != (ssize_t)sizeof(ack))
                        _exit(3);
        }
        return NULL;
}

static int writer_main(const char *dir, const char *fd_arg)
{
        struct writer_arg args[WRITER_THREADS];
        pthread_t threads[WRITER_THREADS];
        struct catalog *c = NULL;
        uint64_t fd;
        int r;

        if (parse_u64(fd_arg, INT32_MAX, &fd) < 0)
                return 99;
        r = catalog_open(dir, &c);
        if (r < 0) {
                fprintf(stderr, "writer: open %s: %s %s\n", dir, strerror(-r), catalog_last_error());
                return 99;
        }
        for (unsigned t = 0; t < WRITER_THREADS; t++) {
                args[t] = (struct writer_arg){ .c = c, .fd = (int)fd, .thread = t + 1 };
                if (pthread_create(&threads[t], NULL, writer_thread, &args[t]) != 0)
                        return 99;
        }
        for (unsigned t = 0; t < WRITER_THREADS; t++)
                pthread_join(threads[t], NULL);
        catalog_close(c);
        return 0;
}

/* Read whole ack records from fd: one (waiting at most 10 s), all until the
 * deadline, or all until EOF. */
enum read_mode {
        READ_ONE,
        READ_UNTIL,
        READ_EOF,
};

static void read_acks(int fd, enum read_mode mode, uint64_t deadline_ns,
                      struct ack **acks, size_t *n, size_t *cap)
{
        for (;;) {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                int timeout = mode == READ_ONE ? 10000 : -1;
                ssize_t k;

                if (mode == READ_UNTIL) {
                        uint64_t now = now_ns();

                        if (now >= deadline_ns)
                                return;
                        timeout = (int)((deadline_ns - now + 999999) / 1000000);
                }
                k = poll(&pfd, 1, timeout);
                if (k == 0 && mode == READ_ONE)
                        return;
                if (k <= 0)
                        continue;
                if (*n == *cap) {
                        *cap = *cap ? *cap * 2 : 1024;
                        *acks = realloc(*acks, *cap * sizeof(**acks));
                        CU_ASSERT_PTR_NOT_NULL_FATAL(*acks);
                }
                k = read(fd, &(*acks)[*n], sizeof(struct ack));
                if (k == 0)
                        return;
                CU_ASSERT_EQUAL_FATAL(k, (ssize_t)sizeof(struct ack));
                (*n)++;
                if (mode == READ_ONE)
                        return;
        }
}

/* The recovered database must be a prefix of the commit stream: the log dense from 1
 * to last_seq, every transaction whole, the state equal to the last one, every
 * acknowledged transaction present with its own id. */
static void kill_verify(const char *path, const struct ack *acks, size_t n_acks)
{
        struct catalog *c = NULL;
        struct catalog_log_iter *it = NULL;
        Coord__CatalogTxn *txn;
        _cleanup_free_ char *last_value = NULL;
        _cleanup_free_ uint64_t *ids = NULL;
        uint64_t last_seq, seq = 0, max_ack = 0;
        int r;

        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        last_seq = catalog_last_seq(c);
        ids = calloc(last_seq + 1, sizeof(*ids));
        CU_ASSERT_PTR_NOT_NULL_FATAL(ids);

        CU_ASSERT_EQUAL_FATAL(catalog_log_iter_new(c, 0, &it), 0);
        while ((r = catalog_log_next(it, &txn)) == 1) {
                seq = txn->seq;
                CU_ASSERT_FATAL(seq <= last_seq);
                CU_ASSERT_EQUAL_FATAL(txn->n_ops, KILL_KEYS);
                for (size_t i = 1; i < txn->n_ops; i++)
                        CU_ASSERT(txn->ops[i]->value.len == txn->ops[0]->value.len &&
                                  memcmp(txn->ops[i]->value.data, txn->ops[0]->value.data,
                                         txn->ops[0]->value.len) == 0);
                ids[seq] = strtoull((const char *)txn->ops[0]->value.data, NULL, 16);
                if (seq == last_seq) {
                        free(last_value);
                        last_value = strndup((const char *)txn->ops[0]->value.data,
                                             txn->ops[0]->value.len);
                }
                coord__catalog_txn__free_unpacked(txn, NULL);
        }
        CU_ASSERT_EQUAL(r, 0);
        it = catalog_log_iter_free(it);
        /* log and state agree: the last log key is last_seq */
        CU_ASSERT_EQUAL(seq, last_seq);

        /* All or nothing: every key holds the value of the last transaction. */
        if (last_seq > 0) {
                CU_ASSERT_PTR_NOT_NULL_FATAL(last_value);
                for (unsigned k = 0; k < KILL_KEYS; k++) {
                        char key[8];

                        snprintf(key, sizeof(key), "k%u", k);
                        check_value(c, CATALOG_CF_STATE, key, last_value);
                }
        }

        /* I7: everything acknowledged survived, as itself. */
        for (size_t i = 0; i < n_acks; i++) {
                CU_ASSERT_FATAL(acks[i].seq >= 1 && acks[i].seq <= last_seq);
                CU_ASSERT_EQUAL(ids[acks[i].seq], acks[i].id);
                if (acks[i].seq > max_ack)
                        max_ack = acks[i].seq;
        }
        CU_ASSERT(last_seq >= max_ack);
        c = catalog_close(c);
}

static void test_kill9(void)
{
        static const unsigned delays_ms[] = { 0, 3, 17, 41, 89, 150 };
        _cleanup_free_ char *dir = t_mkdtemp("catalog-kill"), *path = NULL;
        _cleanup_free_ struct ack *acks = NULL;
        size_t cap = 0;
        unsigned seed = (unsigned)now_ns();

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        path = t_path_join(dir, "db");
        srand(seed);
        for (size_t round = 0; round < ELEMENTSOF(delays_ms); round++) {
                unsigned delay_us = delays_ms[round] * 1000 + (unsigned)rand() % 2000;
                size_t n = 0, first;
                int fd = -1;
                pid_t pid = t_spawn_writer("test-catalog", "--writer", path, &fd);

                CU_ASSERT_FATAL(pid > 0);

                /* Kill mid-stream: after the first acknowledgement, plus the delay. */
                read_acks(fd, READ_ONE, 0, &acks, &n, &cap);
                if (n != 1) {
                        kill(pid, SIGKILL);
                        waitpid(pid, NULL, 0);
                        close(fd);
                        CU_FAIL_FATAL("the writer acknowledged nothing within 10 s");
                }
                first = n;
                if (round == 0) {
                        /* the writer process holds the database */
                        struct catalog *c = NULL;

                        CU_ASSERT_EQUAL(catalog_open(path, &c), -EBUSY);
                        CU_ASSERT_PTR_NULL(c);
                }
                read_acks(fd, READ_UNTIL, now_ns() + (uint64_t)delay_us * 1000, &acks, &n, &cap);
                t_kill9_reap(pid);
                read_acks(fd, READ_EOF, 0, &acks, &n, &cap);
                close(fd);
                printf("\n    round %zu: seed %u kill after %u us, %zu acknowledged (%zu before the delay)",
                       round, seed, delay_us, n, first);

                kill_verify(path, acks, n);
        }
        printf("\n    ");
        t_rmrf(dir);
}

/* ---- 3. Secondary ---------------------------------------------------------------- */

static void test_secondary(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("catalog-sec"), *ppath = NULL, *spath = NULL;
        struct catalog *p = NULL, *s = NULL;
        struct catalog_log_iter *it = NULL;
        Coord__CatalogTxn *txn = NULL;
        uint64_t seq;
        char key[32], value[1024];

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        ppath = t_path_join(dir, "primary");
        spath = t_path_join(dir, "secondary");

        /* Before the primary exists the follower is told so (it retries). */
        CU_ASSERT_EQUAL(catalog_open_secondary(ppath, spath, &s), -ENOENT);
        CU_ASSERT_PTR_NULL(s);

        CU_ASSERT_EQUAL_FATAL(catalog_open(ppath, &p), 0);
        {
                const struct catalog_op t[] = {
                        op_put(CATALOG_CF_STATE, "item/1", "one"),
                        op_put(CATALOG_CF_STATE, "item/2", "two"),
                };
                CU_ASSERT_EQUAL(catalog_commit(p, t, 2, &seq), 0);
                CU_ASSERT_EQUAL(catalog_meta_put(p, "oracle_hwm", "17", 2, &seq), 0);
                CU_ASSERT_EQUAL(seq, 2);
        }

        CU_ASSERT_EQUAL_FATAL(catalog_open_secondary(ppath, spath, &s), 0);
        CU_ASSERT_EQUAL(catalog_last_seq(s), 2);
        check_value(s, CATALOG_CF_STATE, "item/1", "one");
        check_value(s, CATALOG_CF_META, "oracle_hwm", "17");

        /* New commits are invisible until the follower catches up... */
        {
                const struct catalog_op t3[] = {
                        op_put(CATALOG_CF_STATE, "item/3", "three"),
                        op_del("item/1"),
                };
                const struct catalog_op t4[] = { op_put(CATALOG_CF_STATE, "item/2", "deux") };

                CU_ASSERT_EQUAL(catalog_commit(p, t3, 2, &seq), 0);
                CU_ASSERT_EQUAL(catalog_commit(p, t4, 1, &seq), 0);
                CU_ASSERT_EQUAL(seq, 4);
                check_value(s, CATALOG_CF_STATE, "item/3", NULL);
                CU_ASSERT_EQUAL(catalog_last_seq(s), 2);

                /* ... then new state and new log entries are. */
                CU_ASSERT_EQUAL_FATAL(catalog_catch_up(s), 0);
                CU_ASSERT_EQUAL(catalog_last_seq(s), 4);
                check_value(s, CATALOG_CF_STATE, "item/1", NULL);
                check_value(s, CATALOG_CF_STATE, "item/2", "deux");
                check_value(s, CATALOG_CF_STATE, "item/3", "three");

                CU_ASSERT_EQUAL_FATAL(catalog_log_iter_new(s, 2, &it), 0);
                CU_ASSERT_EQUAL_FATAL(catalog_log_next(it, &txn), 1);
                CU_ASSERT_EQUAL(txn->seq, 3);
                CU_ASSERT_EQUAL_FATAL(txn->n_ops, 2);
                check_op(txn->ops[0], &t3[0]);
                check_op(txn->ops[1], &t3[1]);
                coord__catalog_txn__free_unpacked(txn, NULL);
                CU_ASSERT_EQUAL_FATAL(catalog_log_next(it, &txn), 1);
                CU_ASSERT_EQUAL(txn->seq, 4);
                check_op(txn->ops[0], &t4[0]);
                coord__catalog_txn__free_unpacked(txn, NULL);
                CU_ASSERT_EQUAL(catalog_log_next(it, &txn), 0);
                it = catalog_log_iter_free(it);
        }

        /* A secondary never writes; catching up is for secondaries. */
        {
                struct catalog_op w = op_put(CATALOG_CF_STATE, "item/9", "nine");

                CU_ASSERT_EQUAL(catalog_commit(s, &w, 1, NULL), -EROFS);
                CU_ASSERT_EQUAL(catalog_meta_put(s, "oracle_hwm", "18", 2, NULL), -EROFS);
                CU_ASSERT_EQUAL(catalog_catch_up(p), -EINVAL);
                CU_ASSERT_EQUAL(catalog_error(s), 0);
        }

        /* Across memtable flushes, WAL switches and a primary restart. */
        memset(value, 'x', sizeof(value) - 1);
        value[sizeof(value) - 1] = 0;
        for (unsigned i = 0; i < 100; i++) {
                struct catalog_op ops[64];
                char keys[64][32];

                for (unsigned k = 0; k < ELEMENTSOF(ops); k++) {
                        snprintf(keys[k], sizeof(keys[k]), "bulk/%u/%u", i, k);
                        ops[k] = op_put(CATALOG_CF_STATE, keys[k], value);
                }
                CU_ASSERT_EQUAL_FATAL(catalog_commit(p, ops, ELEMENTSOF(ops), &seq), 0);
                if (i == 50)
                        CU_ASSERT_EQUAL(catalog_catch_up(s), 0);
        }
        p = catalog_close(p);
        CU_ASSERT_EQUAL_FATAL(catalog_open(ppath, &p), 0);
        {
                const struct catalog_op t[] = { op_put(CATALOG_CF_STATE, "item/4", "four") };

                CU_ASSERT_EQUAL(catalog_commit(p, t, 1, &seq), 0);
                CU_ASSERT_EQUAL(seq, 105);
        }
        CU_ASSERT_EQUAL_FATAL(catalog_catch_up(s), 0);
        CU_ASSERT_EQUAL(catalog_last_seq(s), 105);
        check_value(s, CATALOG_CF_STATE, "item/4", "four");
        check_value(s, CATALOG_CF_STATE, "item/2", "deux");
        snprintf(key, sizeof(key), "bulk/%u/%u", 99, 63);
        check_value(s, CATALOG_CF_STATE, key, value);
        snprintf(key, sizeof(key), "bulk/%u/%u", 0, 0);
        check_value(s, CATALOG_CF_STATE, key, value);
        {
                uint64_t n = 0;
                int r;

                CU_ASSERT_EQUAL_FATAL(catalog_log_iter_new(s, 0, &it), 0);
                while ((r = catalog_log_next(it, &txn)) == 1) {
                        n++;
                        CU_ASSERT_EQUAL(txn->seq, n);
                        coord__catalog_txn__free_unpacked(txn, NULL);
                }
                CU_ASSERT_EQUAL(r, 0);
                CU_ASSERT_EQUAL(n, 105);
                it = catalog_log_iter_free(it);
        }

        s = catalog_close(s);
        p = catalog_close(p);
        t_rmrf(dir);
}

/* ---- 4. Sticky errors ------------------------------------------------------------ */

static void test_sticky_injected(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("catalog-sticky"), *path = NULL;
        struct catalog *c = NULL;
        struct catalog_log_iter *it = NULL;
        const struct catalog_op ok[] = { op_put(CATALOG_CF_STATE, "ok", "1") };
        const struct catalog_op lost[] = {
                op_put(CATALOG_CF_STATE, "lost", "1"),
                op_put(CATALOG_CF_STATE, "ok", "2"),
        };
        const struct catalog_op later[] = { op_put(CATALOG_CF_STATE, "later", "1") };
        uint64_t seq = 0;

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        path = t_path_join(dir, "db");
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        CU_ASSERT_EQUAL(catalog_commit(c, ok, 1, &seq), 0);
        CU_ASSERT_EQUAL(seq, 1);

        catalog_debug_fail_next_sync(c);
        seq = 77;
        CU_ASSERT_EQUAL(catalog_commit(c, lost, 2, &seq), -EIO);
        CU_ASSERT_EQUAL(seq, 77);               /* not clobbered on failure */
        CU_ASSERT_PTR_NOT_NULL(strstr(catalog_last_error(), "injected"));
        CU_ASSERT_EQUAL(catalog_error(c), -EIO);

        /* Sticky: nothing more is acknowledged, nothing is read, until reopened. */
        CU_ASSERT_EQUAL(catalog_commit(c, later, 1, NULL), -EIO);
        CU_ASSERT_EQUAL(catalog_meta_put(c, "oracle_hwm", "1", 1, NULL), -EIO);
        CU_ASSERT_EQUAL(catalog_get(c, CATALOG_CF_STATE, "ok", 2, NULL, NULL), -EIO);
        CU_ASSERT_EQUAL(catalog_log_iter_new(c, 0, &it), -EIO);
        it = catalog_log_iter_free(it);         /* NULL unless the check failed */
        CU_ASSERT_EQUAL(catalog_last_seq(c), 1);
        c = catalog_close(c);

        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        CU_ASSERT_EQUAL(catalog_error(c), 0);
        CU_ASSERT_EQUAL(catalog_last_seq(c), 1);
        check_value(c, CATALOG_CF_STATE, "ok", "1");
        check_value(c, CATALOG_CF_STATE, "lost", NULL);
        check_value(c, CATALOG_CF_STATE, "later", NULL);
        CU_ASSERT_EQUAL(catalog_commit(c, later, 1, &seq), 0);
        CU_ASSERT_EQUAL(seq, 2);
        c = catalog_close(c);
        t_rmrf(dir);
}

/* Concurrent committers when a group fails: no commit that starts after any caller
 * has seen the failure succeeds, and after a reopen the acknowledged commits are
 * exactly 1..N. */
struct sticky_arg {
        struct catalog *c;
        unsigned thread;
        bool *failure_seen;
        uint64_t seqs[4096];
        size_t n;
        int last_r;
        unsigned late_successes;
};

static void *sticky_thread(void *p)
{
        struct sticky_arg *a = p;
        char key[32];

        for (unsigned i = 0; a->n < ELEMENTSOF(a->seqs); i++) {
                struct catalog_op op;
                uint64_t seq;
                bool seen;
                int r;

                snprintf(key, sizeof(key), "s/%u/%u", a->thread, i);
                op = op_put(CATALOG_CF_STATE, key, key);
                seen = __atomic_load_n(a->failure_seen, __ATOMIC_ACQUIRE);
                r = catalog_commit(a->c, &op, 1, &seq);
                a->last_r = r;
                if (r < 0) {
                        __atomic_store_n(a->failure_seen, true, __ATOMIC_RELEASE);
                        break;
                }
                if (seen)
                        a->late_successes++;
                a->seqs[a->n++] = seq;
        }
        return NULL;
}

static void test_sticky_concurrent(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("catalog-sticky"), *path = NULL;
        static struct sticky_arg args[4];
        pthread_t threads[ELEMENTSOF(args)];
        _cleanup_free_ uint64_t *all = NULL;
        struct catalog *c = NULL;
        bool failure_seen = false;
        size_t total = 0;

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        path = t_path_join(dir, "db");
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        for (unsigned t = 0; t < ELEMENTSOF(args); t++) {
                args[t] = (struct sticky_arg){ .c = c, .thread = t, .failure_seen = &failure_seen };
                CU_ASSERT_EQUAL_FATAL(pthread_create(&threads[t], NULL, sticky_thread, &args[t]), 0);
        }
        while (catalog_last_seq(c) < 40)
                sched_yield();
        catalog_debug_fail_next_sync(c);
        for (unsigned t = 0; t < ELEMENTSOF(args); t++)
                pthread_join(threads[t], NULL);

        for (unsigned t = 0; t < ELEMENTSOF(args); t++) {
                CU_ASSERT_EQUAL(args[t].last_r, -EIO);
                CU_ASSERT_EQUAL(args[t].late_successes, 0);
                total += args[t].n;
        }
        CU_ASSERT_EQUAL(catalog_last_seq(c), total);
        c = catalog_close(c);

        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        CU_ASSERT_EQUAL(catalog_last_seq(c), total);
        all = calloc(total + 1, sizeof(*all));
        CU_ASSERT_PTR_NOT_NULL_FATAL(all);
        total = 0;
        for (unsigned t = 0; t < ELEMENTSOF(args); t++)
                for (size_t i = 0; i < args[t].n; i++) {
                        char key[32];

                        snprintf(key, sizeof(key), "s/%u/%zu", t, i);
                        check_value(c, CATALOG_CF_STATE, key, key);
                        all[total++] = args[t].seqs[i];
                }
        qsort(all, total, sizeof(*all), t_cmp_u64);
        for (size_t i = 0; i < total; i++)
                CU_ASSERT_EQUAL(all[i], i + 1);
        c = catalog_close(c);
        t_rmrf(dir);
}

/* A real write failure, in a child process: with RLIMIT_FSIZE lowered, the WAL's
 * write(2) fails with EFBIG once the file reaches the limit, typically after a short
 * write, leaving a torn record at the tail.  Plain checks, reported by exit code. */
#define FSIZE_LIMIT (2u << 20)

#define CHILD_CHECK(x)                                                                  \
        do {                                                                            \
                if (!(x)) {                                                             \
                        fprintf(stderr, "efbig: %s:%d: check failed: %s (%s)\n",       \
                                __FILE__, __LINE__, #x, catalog_last_error());          \
                        return T_EXIT_FAIL;                                             \
                }                                                                       \
        } while (0)

static int big_commit(struct catalog *c, uint64_t i, char *big, size_t big_len,
                      uint64_t *ret_seq)
{
        struct catalog_op op = {
                .kind = CATALOG_OP_PUT, .cf = CATALOG_CF_STATE, .key = "big", .key_len = 3,
                .value = big, .value_len = big_len,
        };

        be64_put((uint8_t *)big, i);
        return catalog_commit(c, &op, 1, ret_seq);
}

static int efbig_main(const char *dir)
{
        _cleanup_free_ char *path = t_path_join(dir, "db");
        static char big[32 * 1024];
        struct rlimit lim;
        struct catalog *c = NULL;
        struct catalog_log_iter *it = NULL;
        Coord__CatalogTxn *txn;
        _cleanup_free_ void *v = NULL;
        uint64_t seq = 0, acked = 0, i, last, n;
        size_t len;
        int r, fail, store;

        if (!path || getrlimit(RLIMIT_FSIZE, &lim) < 0)
                return T_EXIT_ERROR;
        /* Random bytes: compression must not keep the files small. */
        for (size_t k = 0; k < sizeof(big); k++)
                big[k] = (char)rand();

        CHILD_CHECK(catalog_open(path, &c) == 0);
        for (i = 0; i < 5; i++) {
                CHILD_CHECK(big_commit(c, i, big, 100, &seq) == 0);
                acked = seq;
        }

        /* Lower the limit, then commit 32 KiB transactions until one fails. */
        signal(SIGXFSZ, SIG_IGN);
        CHILD_CHECK(setrlimit(RLIMIT_FSIZE, &(struct rlimit){ FSIZE_LIMIT, lim.rlim_max }) == 0);
        for (r = 0; r == 0 && i < 4 * FSIZE_LIMIT / sizeof(big); i++) {
                r = big_commit(c, i, big, sizeof(big), &seq);
                if (r == 0)
                        acked = seq;
        }
        fail = r;
        CHILD_CHECK(fail == -EIO);
        CHILD_CHECK(strstr(catalog_last_error(), "File too large"));
        CHILD_CHECK(catalog_error(c) == fail);
        CHILD_CHECK(catalog_last_seq(c) == acked);
        /* What the sync log's thread does when a segment is left may come after the
         * failure: it must not call into RocksDB's failed WAL writer (catalog.c NOTE 8;
         * RocksDB asserts).  0 when the sync log's write failed first, -EIO when the
         * WAL's did. */
        store = catalog_debug_store_sync(c);
        CHILD_CHECK(store == 0 || store == -EIO);

        /* Still failed once writes could succeed again: only a reopen clears it. */
        CHILD_CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
        CHILD_CHECK(big_commit(c, i, big, 100, NULL) == fail);
        CHILD_CHECK(catalog_get(c, CATALOG_CF_STATE, "big", 3, NULL, NULL) == fail);
        c = catalog_close(c);

        /* The failed transaction is wholly there or wholly not; the rest is there. */
        CHILD_CHECK(catalog_open(path, &c) == 0);
        last = catalog_last_seq(c);
        CHILD_CHECK(last == acked || last == acked + 1);
        CHILD_CHECK(catalog_log_iter_new(c, 0, &it) == 0);
        for (n = 0; (r = catalog_log_next(it, &txn)) == 1; n++) {
                CHILD_CHECK(txn->seq == n + 1 && txn->n_ops == 1);
                CHILD_CHECK(be64_get(txn->ops[0]->value.data) == n);
                coord__catalog_txn__free_unpacked(txn, NULL);
        }
        CHILD_CHECK(r == 0 && n == last);
        it = catalog_log_iter_free(it);
        CHILD_CHECK(catalog_get(c, CATALOG_CF_STATE, "big", 3, &v, &len) == 0);
        CHILD_CHECK(len >= 8 && be64_get(v) == last - 1);
        CHILD_CHECK(big_commit(c, last, big, 100, &seq) == 0 && seq == last + 1);
        c = catalog_close(c);
        printf("(the write failed as meant: %s after %" PRIu64 " acknowledged, the WAL sync "
               "then %s; reopened at %" PRIu64 ") ", strerror(-fail), acked,
               store == 0 ? "ran" : "refused", last);
        return T_EXIT_PASS;
}

static void test_sticky_efbig(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("catalog-efbig");
        int status;
        pid_t pid;

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        fflush(stdout);
        pid = t_spawn_self((char *[]){ "test-catalog", "--efbig", dir, NULL }, -1);
        CU_ASSERT_FATAL(pid > 0);
        CU_ASSERT_EQUAL_FATAL(waitpid(pid, &status, 0), pid);
        CU_ASSERT_FATAL(WIFEXITED(status));
        CU_ASSERT_EQUAL(WEXITSTATUS(status), T_EXIT_PASS);
        t_rmrf(dir);
}

/* ---- 5. Group commit ------------------------------------------------------------- */

struct group_arg {
        struct catalog *c;
        unsigned thread;
        uint64_t seqs[GROUP_COMMITS];
        int r;
};

static void group_kv(char *key, char *value, size_t size, unsigned t, unsigned i)
{
        snprintf(key, size, "g/%u/%u", t, i);
        snprintf(value, size, "value %u.%u", t, i);
}

static void *group_thread(void *p)
{
        struct group_arg *a = p;

        for (unsigned i = 0; i < GROUP_COMMITS; i++) {
                char key[32], value[32];
                struct catalog_op ops[2];

                group_kv(key, value, sizeof(key), a->thread, i);
                ops[0] = op_put(CATALOG_CF_STATE, key, value);
                ops[1] = op_put(CATALOG_CF_STATE, "last", value);
                a->r = catalog_commit(a->c, ops, 2, &a->seqs[i]);
                if (a->r < 0)
                        break;
        }
        return NULL;
}

static void test_group_commit(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("catalog-group"), *path = NULL;
        static struct group_arg args[GROUP_THREADS];
        pthread_t threads[GROUP_THREADS];
        static uint64_t all[GROUP_THREADS * GROUP_COMMITS];
        const size_t total = ELEMENTSOF(all);
        struct catalog_stats st;
        struct catalog *c = NULL;
        struct catalog_log_iter *it = NULL;
        Coord__CatalogTxn *txn = NULL;
        size_t n = 0;
        char key[32], value[32];
        unsigned owner_t = 0, owner_i = 0;

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        path = t_path_join(dir, "db");
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        for (unsigned t = 0; t < GROUP_THREADS; t++) {
                args[t] = (struct group_arg){ .c = c, .thread = t };
                CU_ASSERT_EQUAL_FATAL(pthread_create(&threads[t], NULL, group_thread, &args[t]), 0);
        }
        for (unsigned t = 0; t < GROUP_THREADS; t++)
                pthread_join(threads[t], NULL);

        for (unsigned t = 0; t < GROUP_THREADS; t++) {
                CU_ASSERT_EQUAL_FATAL(args[t].r, 0);
                for (unsigned i = 0; i < GROUP_COMMITS; i++) {
                        /* a thread's later commit has a later seq */
                        if (i > 0)
                                CU_ASSERT(args[t].seqs[i] > args[t].seqs[i - 1]);
                        if (args[t].seqs[i] == total) {
                                owner_t = t;
                                owner_i = i;
                        }
                        all[n++] = args[t].seqs[i];
                }
        }
        /* distinct and dense: exactly 1..total */
        qsort(all, total, sizeof(all[0]), t_cmp_u64);
        for (size_t i = 0; i < total; i++)
                CU_ASSERT_EQUAL(all[i], i + 1);
        CU_ASSERT_EQUAL(catalog_last_seq(c), total);

        /* The commits were grouped: fewer synced writes than transactions. */
        catalog_get_stats(c, &st);
        printf("%" PRIu64 " commits in %" PRIu64 " groups (largest %" PRIu64 ") ",
               st.commits, st.groups, st.max_group);
        CU_ASSERT_EQUAL(st.commits, total);
        CU_ASSERT(st.groups < st.commits);
        CU_ASSERT(st.max_group > 1 && st.max_group <= GROUP_THREADS);

        /* The writers are gone but the store expects 8: a lone commit must not wait
         * for them longer than the commit window. */
        for (unsigned i = 0; i < 3; i++) {
                struct catalog_op op = op_put(CATALOG_CF_STATE, "alone", "1");
                uint64_t seq = 0, t0 = now_ns();

                CU_ASSERT_EQUAL(catalog_commit(c, &op, 1, &seq), 0);
                CU_ASSERT_EQUAL(seq, total + 1 + i);
                CU_ASSERT(now_ns() - t0 < 2000000000ull);
        }
        c = catalog_close(c);

        /* Everything is there after a reopen, and the log says who wrote which seq. */
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        CU_ASSERT_EQUAL(catalog_last_seq(c), total + 3);
        for (unsigned t = 0; t < GROUP_THREADS; t++)
                for (unsigned i = 0; i < GROUP_COMMITS; i++) {
                        group_kv(key, value, sizeof(key), t, i);
                        check_value(c, CATALOG_CF_STATE, key, value);
                }
        group_kv(key, value, sizeof(key), owner_t, owner_i);
        check_value(c, CATALOG_CF_STATE, "last", value);
        for (unsigned t = 0; t < GROUP_THREADS; t++) {
                unsigned i = (t * 37) % GROUP_COMMITS;

                group_kv(key, value, sizeof(key), t, i);
                CU_ASSERT_EQUAL_FATAL(catalog_log_iter_new(c, args[t].seqs[i] - 1, &it), 0);
                CU_ASSERT_EQUAL_FATAL(catalog_log_next(it, &txn), 1);
                CU_ASSERT_EQUAL(txn->seq, args[t].seqs[i]);
                CU_ASSERT_FATAL(txn->n_ops == 2);
                CU_ASSERT(bytes_eq(txn->ops[0]->key, key));
                CU_ASSERT(bytes_eq(txn->ops[0]->value, value));
                coord__catalog_txn__free_unpacked(txn, NULL);
                it = catalog_log_iter_free(it);
        }
        c = catalog_close(c);
        t_rmrf(dir);
}

/* Run n group_thread()s on c (GROUP_COMMITS commits each) and check every one of them
 * was answered with success. */
static void group_threads_run(struct catalog *c, unsigned n)
{
        static struct group_arg args[GROUP_THREADS];
        pthread_t threads[GROUP_THREADS];

        CU_ASSERT_FATAL(n <= GROUP_THREADS);
        for (unsigned t = 0; t < n; t++) {
                args[t] = (struct group_arg){ .c = c, .thread = t };
                CU_ASSERT_EQUAL_FATAL(pthread_create(&threads[t], NULL, group_thread, &args[t]), 0);
        }
        for (unsigned t = 0; t < n; t++) {
                pthread_join(threads[t], NULL);
                CU_ASSERT_EQUAL(args[t].r, 0);
        }
}

struct hold_arg {
        struct catalog *c;
        unsigned calls;
        uint64_t slept;         /* waits_slept when the hold ended */
};

/* catalog_debug_group_write() hook: the first group's write takes 300 ms more; note
 * how many waits had gone to sleep by its end. */
static void hold_first_group_write(void *p)
{
        struct hold_arg *h = p;
        struct catalog_stats st;

        if (h->calls++ != 0)
                return;
        usleep(300 * 1000);
        catalog_get_stats(h->c, &st);
        h->slept = st.waits_slept;
}

/* A committer waiting for a group's end yields its vCPU first, for a bounded time,
 * then sleeps (catalog-write.c, GROUP COMMIT, "Yielding before sleeping"); with the spin
 * off it sleeps at once.  Every commit is answered either way.  Fails when waiters
 * never yield, yield without bound (then nobody sleeps through a held group write), or
 * yield with the spin off. */
static void test_wait_yield(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("catalog-yield"), *path = NULL;
        const struct catalog_op op = op_put(CATALOG_CF_STATE, "k", "v");
        struct catalog_stats st0, st1, st2, st3;
        const struct catalog_op k1[] = { op_put(CATALOG_CF_STATE, "k1", "1") };
        const struct catalog_op k2[] = { op_put(CATALOG_CF_STATE, "k2", "1") };
        const struct catalog_op k3[] = { op_put(CATALOG_CF_STATE, "k3", "1") };
        const struct catalog_txn_ops three[] = { { k1, 1 }, { k2, 1 }, { k3, 1 } };
        struct hold_arg hold = { 0 };
        struct catalog *c = NULL;

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        path = t_path_join(dir, "db");
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        /* Up to 2 x the average write, at most 50 ms: any disk yields, none for long. */
        catalog_set_wait_spin(c, 50ull * 1000 * 1000);
        CU_ASSERT_EQUAL_FATAL(catalog_commit(c, &op, 1, NULL), 0);     /* an average */
        catalog_get_stats(c, &st0);
        CU_ASSERT_EQUAL(st0.waits_yielded + st0.waits_slept, 0);

        group_threads_run(c, 4);
        catalog_get_stats(c, &st1);
        printf("yielded %" PRIu64 ", slept %" PRIu64 "; ", st1.waits_yielded, st1.waits_slept);
        CU_ASSERT(st1.waits_yielded > 0);

        /* A group of three leaves expect = 3, so the next group's waiters yield
         * first.  That group's write is held 300 ms with the write path BUSY: no group
         * ends before the hold does, so of the 4 threads the 2 or more that are
         * neither its leader nor a window's opener (who waits with a deadline) yield
         * <= 50 ms and sleep -- before the hold's end; yielding without bound, nobody
         * would.  (Held at the group's end instead, the path IDLE, the others could
         * lead groups of their own all through it, each end starting a new bounded
         * yield, and nobody need sleep: CI saw that once, under ASan.) */
        CU_ASSERT_EQUAL_FATAL(catalog_commit_many(c, three, 3, NULL), 0);
        catalog_get_stats(c, &st1);
        hold.c = c;
        catalog_debug_group_write(c, hold_first_group_write, &hold);
        group_threads_run(c, 4);
        catalog_debug_group_write(c, NULL, NULL);
        catalog_get_stats(c, &st2);
        printf("held: slept %" PRIu64 "; ", hold.slept - st1.waits_slept);
        CU_ASSERT(hold.calls > 0);
        CU_ASSERT(hold.slept > st1.waits_slept);
        CU_ASSERT(st2.waits_slept > st1.waits_slept);

        catalog_set_wait_spin(c, 0);
        group_threads_run(c, 4);
        catalog_get_stats(c, &st3);
        CU_ASSERT_EQUAL(st3.waits_yielded, st2.waits_yielded);
        CU_ASSERT(st3.waits_slept > st2.waits_slept);

        CU_ASSERT_EQUAL(st3.commits, 1 + 3 + 3 * 4 * GROUP_COMMITS);
        CU_ASSERT_EQUAL(catalog_last_seq(c), 1 + 3 + 3 * 4 * GROUP_COMMITS);
        c = catalog_close(c);
        t_rmrf(dir);
}

/* ---- 6. Several transactions in one write (catalog_commit_many) ------------------- */

#define MANY_THREADS 4
#define MANY_CHAIN 200                  /* per call: with 4 callers, more than GROUP_MAX */

struct many_arg {
        struct catalog *c;
        unsigned thread;
        uint64_t first_seq;
        int r;
};

static void *many_thread(void *p)
{
        struct many_arg *a = p;
        static char keys[MANY_THREADS][MANY_CHAIN][32];
        struct catalog_op ops[MANY_CHAIN];
        struct catalog_txn_ops txns[MANY_CHAIN];

        for (unsigned i = 0; i < MANY_CHAIN; i++) {
                snprintf(keys[a->thread][i], sizeof(keys[0][0]), "m/%u/%u", a->thread, i);
                ops[i] = op_put(CATALOG_CF_STATE, keys[a->thread][i], keys[a->thread][i]);
                txns[i] = (struct catalog_txn_ops){ .ops = &ops[i], .n_ops = 1 };
        }
        a->r = catalog_commit_many(a->c, txns, MANY_CHAIN, &a->first_seq);
        return NULL;
}

/* The longest synced write is kept twice: since open (stats) and since the last take
 * (what a status request reports per window).  A take returns the window's maximum
 * and starts a new window. */
static void test_sync_window(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("catalog-syncwin"), *path = NULL;
        const struct catalog_op op = op_put(CATALOG_CF_STATE, "k", "v");
        struct catalog_stats st;
        struct catalog *c = NULL;
        uint64_t first, second;

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        path = t_path_join(dir, "db");
        CU_ASSERT_EQUAL(catalog_take_sync_window_max_ns(NULL), 0);
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        (void)catalog_take_sync_window_max_ns(c);       /* whatever the open wrote */
        CU_ASSERT_EQUAL(catalog_take_sync_window_max_ns(c), 0);

        CU_ASSERT_EQUAL(catalog_commit(c, &op, 1, NULL), 0);
        first = catalog_take_sync_window_max_ns(c);
        CU_ASSERT(first > 0);
        CU_ASSERT_EQUAL(catalog_take_sync_window_max_ns(c), 0);        /* a new window */
        for (int i = 0; i < 3; i++)
                CU_ASSERT_EQUAL(catalog_commit(c, &op, 1, NULL), 0);
        second = catalog_take_sync_window_max_ns(c);
        CU_ASSERT(second > 0);
        catalog_get_stats(c, &st);
        CU_ASSERT_EQUAL(st.groups, 4);
        CU_ASSERT_EQUAL(st.sync_max_ns, first > second ? first : second);
        CU_ASSERT(st.sync_ns >= first + second);
        c = catalog_close(c);
        t_rmrf(dir);
}

static void test_commit_many(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("catalog-many"), *path = NULL;
        struct catalog *c = NULL;
        struct catalog_log_iter *it = NULL;
        Coord__CatalogTxn *txn = NULL;
        struct catalog_stats st0, st1;
        const struct catalog_op one[] = { op_put(CATALOG_CF_STATE, "one", "1") };
        const struct catalog_op a[] = { op_put(CATALOG_CF_STATE, "a", "1") };
        const struct catalog_op b[] = { op_put(CATALOG_CF_STATE, "b", "2"), op_del("one") };
        const struct catalog_op cc[] = { op_put(CATALOG_CF_META, "c", "3") };
        const struct catalog_op bad[] = { { .kind = CATALOG_OP_PUT, .cf = CATALOG_CF_STATE } };
        const struct catalog_txn_ops txns[] = { { a, 1 }, { b, 2 }, { cc, 1 } };
        const struct catalog_txn_ops with_bad[] = { { a, 1 }, { bad, 1 } };
        static struct catalog_txn_ops too_many[257];
        static struct many_arg args[MANY_THREADS];
        pthread_t threads[MANY_THREADS];
        uint64_t seq = 0;
        int r;

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        path = t_path_join(dir, "db");
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        CU_ASSERT_EQUAL(catalog_commit(c, one, 1, &seq), 0);
        CU_ASSERT_EQUAL(seq, 1);

        /* Three transactions, one synced write, consecutive seqs, one log entry each. */
        catalog_get_stats(c, &st0);
        CU_ASSERT_EQUAL(catalog_commit_many(c, txns, 3, &seq), 0);
        catalog_get_stats(c, &st1);
        CU_ASSERT_EQUAL(seq, 2);
        CU_ASSERT_EQUAL(catalog_last_seq(c), 4);
        CU_ASSERT_EQUAL(st1.commits - st0.commits, 3);
        CU_ASSERT_EQUAL(st1.groups - st0.groups, 1);
        check_value(c, CATALOG_CF_STATE, "a", "1");
        check_value(c, CATALOG_CF_STATE, "b", "2");
        check_value(c, CATALOG_CF_STATE, "one", NULL);
        check_value(c, CATALOG_CF_META, "c", "3");
        CU_ASSERT_EQUAL_FATAL(catalog_log_iter_new(c, 1, &it), 0);
        for (unsigned i = 0; i < 3; i++) {
                CU_ASSERT_EQUAL_FATAL(catalog_log_next(it, &txn), 1);
                CU_ASSERT_EQUAL(txn->seq, 2 + i);
                CU_ASSERT_EQUAL_FATAL(txn->n_ops, txns[i].n_ops);
                for (size_t k = 0; k < txn->n_ops; k++)
                        check_op(txn->ops[k], &txns[i].ops[k]);
                coord__catalog_txn__free_unpacked(txn, NULL);
        }
        CU_ASSERT_EQUAL(catalog_log_next(it, &txn), 0);
        it = catalog_log_iter_free(it);

        /* Refused whole: nothing written, the handle healthy. */
        seq = 77;
        CU_ASSERT_EQUAL(catalog_commit_many(c, with_bad, 2, &seq), -EINVAL);
        CU_ASSERT_EQUAL(catalog_commit_many(c, txns, 0, &seq), -EINVAL);
        for (size_t i = 0; i < ELEMENTSOF(too_many); i++)
                too_many[i] = txns[0];
        CU_ASSERT_EQUAL(catalog_commit_many(c, too_many, ELEMENTSOF(too_many), &seq), -EINVAL);
        CU_ASSERT_EQUAL(seq, 77);
        CU_ASSERT_EQUAL(catalog_last_seq(c), 4);
        CU_ASSERT_EQUAL(catalog_error(c), 0);

        /* Concurrent chains, together longer than a group: never interleaved --
         * each caller's seqs are consecutive. */
        for (unsigned t = 0; t < MANY_THREADS; t++) {
                args[t] = (struct many_arg){ .c = c, .thread = t };
                CU_ASSERT_EQUAL_FATAL(pthread_create(&threads[t], NULL, many_thread, &args[t]), 0);
        }
        for (unsigned t = 0; t < MANY_THREADS; t++)
                pthread_join(threads[t], NULL);
        CU_ASSERT_EQUAL(catalog_last_seq(c), 4 + MANY_THREADS * MANY_CHAIN);
        for (unsigned t = 0; t < MANY_THREADS; t++) {
                CU_ASSERT_EQUAL_FATAL(args[t].r, 0);
                CU_ASSERT((args[t].first_seq - 5) % MANY_CHAIN == 0);
                CU_ASSERT_EQUAL_FATAL(catalog_log_iter_new(c, args[t].first_seq - 1, &it), 0);
                for (unsigned i = 0; i < MANY_CHAIN; i++) {
                        char key[32];

                        snprintf(key, sizeof(key), "m/%u/%u", t, i);
                        CU_ASSERT_EQUAL_FATAL(catalog_log_next(it, &txn), 1);
                        CU_ASSERT_EQUAL(txn->seq, args[t].first_seq + i);
                        CU_ASSERT(txn->n_ops == 1 && bytes_eq(txn->ops[0]->key, key));
                        coord__catalog_txn__free_unpacked(txn, NULL);
                }
                it = catalog_log_iter_free(it);
        }

        /* A failed write fails every transaction of the call, and none survives. */
        catalog_debug_fail_next_sync(c);
        seq = 77;
        const struct catalog_op x[] = { op_put(CATALOG_CF_STATE, "x", "1") };
        const struct catalog_op y[] = { op_put(CATALOG_CF_STATE, "y", "1") };
        const struct catalog_txn_ops lost[] = { { x, 1 }, { y, 1 } };
        r = catalog_commit_many(c, lost, 2, &seq);
        CU_ASSERT_EQUAL(r, -EIO);
        CU_ASSERT_EQUAL(seq, 77);
        c = catalog_close(c);
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        CU_ASSERT_EQUAL(catalog_last_seq(c), 4 + MANY_THREADS * MANY_CHAIN);
        check_value(c, CATALOG_CF_STATE, "x", NULL);
        check_value(c, CATALOG_CF_STATE, "y", NULL);
        c = catalog_close(c);
        t_rmrf(dir);
}

/* The caller that opened a commit window is woken by a group end while its window is
 * still open -- the group's leader unlocks before it wakes anyone, and the newcomer
 * opened the window in that gap.  It must keep its deadline and close the window;
 * when it slept on without one, nobody ever closed it and every committer slept for
 * good (the adapter hung in one setup of 100,000 objects). */
struct gap_arg {
        struct catalog *c;
        pthread_t thread;
        bool started, gathering;
        int r;
        uint64_t seq;
        int done;
};

static void *gap_newcomer(void *userdata)
{
        struct gap_arg *a = userdata;
        const struct catalog_op op[] = { op_put(CATALOG_CF_STATE, "late", "1") };

        a->r = catalog_commit(a->c, op, 1, &a->seq);
        __atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
        return NULL;
}

/* In the leader, between its unlock and its wake-up: a newcomer opens the window. */
static void gap_hook(void *userdata)
{
        struct gap_arg *a = userdata;

        if (a->started)
                return;
        a->started = true;
        if (pthread_create(&a->thread, NULL, gap_newcomer, a) != 0)
                return;
        for (int i = 0; i < 10000 && !a->gathering; i++) {
                a->gathering = catalog_debug_gathering(a->c);
                if (!a->gathering)
                        sched_yield();
        }
}

static void test_window_opener_woken(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("catalog-gap"), *path = NULL;
        struct catalog *c = NULL;
        const struct catalog_op a1[] = { op_put(CATALOG_CF_STATE, "a", "1") };
        const struct catalog_op b1[] = { op_put(CATALOG_CF_STATE, "b", "1") };
        const struct catalog_op z1[] = { op_put(CATALOG_CF_STATE, "z", "1") };
        const struct catalog_txn_ops two[] = { { a1, 1 }, { b1, 1 } };
        struct gap_arg g = { 0 };
        uint64_t seq, t0;
        bool done = false;

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        path = t_path_join(dir, "db");
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        g.c = c;
        /* A group of two leaves expect = 2, so the lone newcomer opens a window (of
         * 300 ms, long enough to be open still when the wake-up reaches it). */
        catalog_debug_group_end(c, 300ull * 1000 * 1000, gap_hook, &g);
        CU_ASSERT_EQUAL_FATAL(catalog_commit_many(c, two, 2, &seq), 0);
        CU_ASSERT_FATAL(g.started);
        CU_ASSERT(g.gathering);
        t0 = now_ns();
        while (!(done = __atomic_load_n(&g.done, __ATOMIC_ACQUIRE)) && now_ns() - t0 < 5000000000ull)
                usleep(5000);
        CU_ASSERT(done);                /* the window closed: its opener led */
        if (!done) {
                /* Unstick it for the join: a newcomer past the window's end leads. */
                catalog_debug_group_end(c, 0, NULL, NULL);
                CU_ASSERT_EQUAL(catalog_commit(c, z1, 1, NULL), 0);
        }
        pthread_join(g.thread, NULL);
        CU_ASSERT_EQUAL(g.r, 0);
        CU_ASSERT_EQUAL(g.seq, 3);
        catalog_debug_group_end(c, 0, NULL, NULL);
        c = catalog_close(c);
        t_rmrf(dir);
}

/* ---- 7. The commit hook --------------------------------------------------------- */

#define HOOK_MAX (GROUP_THREADS * 50 + MANY_THREADS * MANY_CHAIN + 16)

struct hook_log {
        size_t n, calls, max_n;
        int inside, overlaps;
        uint64_t seq[HOOK_MAX];
        uint8_t *entry[HOOK_MAX];
        size_t len[HOOK_MAX];
};

static void hook_record(const struct catalog_committed *txns, size_t n, void *userdata)
{
        struct hook_log *h = userdata;

        if (__atomic_exchange_n(&h->inside, 1, __ATOMIC_ACQUIRE))
                h->overlaps++;
        h->calls++;
        if (n > h->max_n)
                h->max_n = n;
        for (size_t i = 0; i < n && h->n < HOOK_MAX; i++, h->n++) {
                h->seq[h->n] = txns[i].seq;
                h->len[h->n] = txns[i].len;
                h->entry[h->n] = malloc(txns[i].len ? txns[i].len : 1);
                if (h->entry[h->n])
                        memcpy(h->entry[h->n], txns[i].entry, txns[i].len);
        }
        __atomic_store_n(&h->inside, 0, __ATOMIC_RELEASE);
}

struct hook_arg {
        struct catalog *c;
        unsigned thread;
        int r;
};

static void *hook_thread(void *p)
{
        struct hook_arg *a = p;

        for (unsigned i = 0; i < 50 && a->r == 0; i++) {
                char key[32], value[64];
                struct catalog_op op;

                snprintf(key, sizeof(key), "h/%u/%u", a->thread, i);
                snprintf(value, sizeof(value), "%*u", (int)(i % 40) + 1, i);
                op = op_put(CATALOG_CF_STATE, key, value);
                a->r = catalog_commit(a->c, &op, 1, NULL);
        }
        return NULL;
}

/* The hook sees every committed transaction once, in seq order without a gap, with
 * the exact bytes of its log entry, and never two calls at once. */
static void test_commit_hook(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("catalog-hook"), *path = NULL;
        static struct hook_log h;
        struct hook_arg args[GROUP_THREADS];
        static struct many_arg margs[MANY_THREADS];
        pthread_t threads[GROUP_THREADS > MANY_THREADS ? GROUP_THREADS : MANY_THREADS];
        struct catalog *c = NULL;
        struct catalog_log_iter *it = NULL;
        Coord__CatalogTxn *txn = NULL;
        struct catalog_op op = op_put(CATALOG_CF_STATE, "before", "hook");
        uint64_t base, seq = 0;
        size_t k = 0;
        int r;

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        path = t_path_join(dir, "db");
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        CU_ASSERT_EQUAL_FATAL(catalog_commit(c, &op, 1, NULL), 0);
        CU_ASSERT_EQUAL_FATAL(catalog_commit(c, &op, 1, NULL), 0);
        base = catalog_last_seq(c);
        catalog_set_commit_hook(c, hook_record, &h);
        for (unsigned t = 0; t < GROUP_THREADS; t++) {
                args[t] = (struct hook_arg){ .c = c, .thread = t };
                CU_ASSERT_EQUAL_FATAL(pthread_create(&threads[t], NULL, hook_thread, &args[t]), 0);
        }
        for (unsigned t = 0; t < GROUP_THREADS; t++) {
                pthread_join(threads[t], NULL);
                CU_ASSERT_EQUAL(args[t].r, 0);
        }
        /* Chains (catalog_commit_many()) from several threads: a group may then hold
         * more than GROUP_MAX transactions, all handed to the hook in one call. */
        for (unsigned t = 0; t < MANY_THREADS; t++) {
                margs[t] = (struct many_arg){ .c = c, .thread = t };
                CU_ASSERT_EQUAL_FATAL(pthread_create(&threads[t], NULL, many_thread, &margs[t]), 0);
        }
        for (unsigned t = 0; t < MANY_THREADS; t++) {
                pthread_join(threads[t], NULL);
                CU_ASSERT_EQUAL(margs[t].r, 0);
        }
        /* A meta put takes the same path. */
        CU_ASSERT_EQUAL(catalog_meta_put(c, "oracle", "x", 1, &seq), 0);
        CU_ASSERT_EQUAL(seq, catalog_last_seq(c));
        catalog_set_commit_hook(c, NULL, NULL);
        CU_ASSERT_EQUAL_FATAL(catalog_commit(c, &op, 1, NULL), 0);      /* not seen */

        printf("%zu transactions in %zu hook calls (largest %zu) ", h.n, h.calls, h.max_n);
        CU_ASSERT_EQUAL(h.overlaps, 0);
        CU_ASSERT_EQUAL_FATAL(h.n, (size_t)GROUP_THREADS * 50 + MANY_THREADS * MANY_CHAIN + 1);
        CU_ASSERT(h.calls < h.n);       /* grouped: several transactions per call */
        for (size_t i = 0; i < h.n; i++)
                CU_ASSERT_EQUAL(h.seq[i], base + 1 + i);
        CU_ASSERT_EQUAL(h.seq[h.n - 1], seq);

        /* Byte for byte what the log holds: pack what the log decodes to again
         * (protobuf-c's encoding is deterministic). */
        CU_ASSERT_EQUAL_FATAL(catalog_log_iter_new(c, base, &it), 0);
        while (k < h.n && (r = catalog_log_next(it, &txn)) == 1) {
                size_t len = coord__catalog_txn__get_packed_size(txn);
                uint8_t *buf = malloc(len);

                CU_ASSERT_FATAL(buf != NULL);
                coord__catalog_txn__pack(txn, buf);
                CU_ASSERT_EQUAL(txn->seq, h.seq[k]);
                CU_ASSERT(len == h.len[k] && memcmp(buf, h.entry[k], len) == 0);
                free(buf);
                coord__catalog_txn__free_unpacked(txn, NULL);
                k++;
        }
        CU_ASSERT_EQUAL(k, h.n);
        it = catalog_log_iter_free(it);
        for (size_t i = 0; i < h.n; i++)
                free(h.entry[i]);
        c = catalog_close(c);
        t_rmrf(dir);
}

/* ---- Several range scans at once ------------------------------------------------ */

struct scan_count {
        size_t n;
        char first, last;
        int fail_at;            /* > 0: return -EIO at this record */
};

static int scan_count_one(const void *key, size_t key_len, const void *value, size_t value_len,
                          void *userdata)
{
        struct scan_count *sc = userdata;

        if (!sc->n)
                sc->first = *(const char *)key;
        sc->last = *(const char *)key;
        if (++sc->n == (size_t)sc->fail_at)
                return -EIO;
        return 0;
}

/* catalog_scan_ranges(): each job sees exactly its range, as one catalog_scan_range()
 * would; the first failed job's error (in job order) is returned, the others still run. */
static void test_scan_ranges(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("catalog-ranges"), *path = NULL;
        struct catalog *c = NULL;
        struct catalog_op ops[300];
        char keys[300][8];
        struct scan_count sc[4] = { { 0 } };
        struct catalog_scan_job jobs[4] = {
                { CATALOG_CF_STATE, "a", "b", 1, 1, scan_count_one, &sc[0], 0 },
                { CATALOG_CF_STATE, "b", "c", 1, 1, scan_count_one, &sc[1], 0 },
                { CATALOG_CF_STATE, "c", NULL, 1, 0, scan_count_one, &sc[2], 0 },
                { CATALOG_CF_STATE, NULL, "b", 0, 1, scan_count_one, &sc[3], 0 },
        };

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        path = t_path_join(dir, "db");
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        for (int i = 0; i < 300; i++) {
                snprintf(keys[i], sizeof(keys[i]), "%c%05d", "abc"[i % 3], i);
                ops[i] = op_put(CATALOG_CF_STATE, keys[i], "v");
        }
        CU_ASSERT_EQUAL_FATAL(catalog_commit(c, ops, 300, NULL), 0);
        CU_ASSERT_EQUAL(catalog_scan_ranges(c, jobs, 4), 0);
        for (int i = 0; i < 3; i++) {
                CU_ASSERT_EQUAL(jobs[i].r, 0);
                CU_ASSERT_EQUAL(sc[i].n, 100);
                CU_ASSERT_EQUAL(sc[i].first, "abc"[i]);
                CU_ASSERT_EQUAL(sc[i].last, "abc"[i]);
        }
        CU_ASSERT_EQUAL(sc[3].n, 100);  /* from the start to "b" */

        memset(sc, 0, sizeof(sc));
        sc[1].fail_at = 7;
        sc[2].fail_at = 1;
        CU_ASSERT_EQUAL(catalog_scan_ranges(c, jobs, 4), -EIO);
        CU_ASSERT_EQUAL(jobs[1].r, -EIO);
        CU_ASSERT_EQUAL(jobs[2].r, -EIO);
        CU_ASSERT_EQUAL(sc[0].n, 100);
        CU_ASSERT_EQUAL(sc[1].n, 7);
        CU_ASSERT_EQUAL(sc[3].n, 100);
        CU_ASSERT_EQUAL(catalog_scan_ranges(c, jobs, CATALOG_SCAN_JOBS_MAX + 1), -EINVAL);
        CU_ASSERT_EQUAL(catalog_scan_ranges(c, jobs, 0), 0);
        catalog_close(c);
        t_rmrf(dir);
}

/* ---- 8. The sync log (catalog.c NOTE 8) ------------------------------------------- */

#define LOST_THREADS 4
#define LOST_PER_THREAD 75              /* transactions per thread */
#define LOST_TXNS (LOST_THREADS * LOST_PER_THREAD)

struct lost_arg {
        struct catalog *c;
        unsigned thread;
        int r;
};

static void lost_key(char *buf, size_t size, unsigned thread, unsigned i)
{
        snprintf(buf, size, "lost/%u/%u", thread, i);
}

static void *lost_thread(void *p)
{
        struct lost_arg *a = p;

        for (unsigned i = 0; i < LOST_PER_THREAD && a->r == 0; i++) {
                char key[32], value[300];
                struct catalog_op op;

                lost_key(key, sizeof(key), a->thread, i);
                snprintf(value, sizeof(value), "%s %0250u", key, i);
                op = op_put(CATALOG_CF_STATE, key, value);
                a->r = catalog_commit(a->c, &op, 1, NULL);
        }
        return NULL;
}

/* Child: with the sync log's segments of SEG bytes (0: off), commit LOST_TXNS
 * transactions from LOST_THREADS threads, then exit without closing -- as a kill -9
 * right after the last acknowledgement would.  Exit 0 once all were acknowledged. */
static int lost_main(const char *dir, const char *seg_arg)
{
        struct lost_arg args[LOST_THREADS];
        pthread_t threads[LOST_THREADS];
        struct catalog *c = NULL;
        uint64_t seg;

        if (parse_u64(seg_arg, 1u << 30, &seg) < 0)
                return 99;
        catalog_debug_synclog_segment_size((size_t)seg);
        if (catalog_open(dir, &c) < 0)
                return 99;
        for (unsigned t = 0; t < LOST_THREADS; t++) {
                args[t] = (struct lost_arg){ .c = c, .thread = t };
                if (pthread_create(&threads[t], NULL, lost_thread, &args[t]) != 0)
                        return 99;
        }
        for (unsigned t = 0; t < LOST_THREADS; t++) {
                pthread_join(threads[t], NULL);
                if (args[t].r < 0)
                        return 1;
        }
        _exit(0);
}

static void lost_run(const char *path, size_t seg)
{
        char seg_arg[32];
        int status;
        pid_t pid;

        snprintf(seg_arg, sizeof(seg_arg), "%zu", seg);
        pid = t_spawn_self((char *[]){ "test-catalog", "--lost", (char *)path, seg_arg, NULL }, -1);
        CU_ASSERT_FATAL(pid > 0);
        CU_ASSERT_EQUAL_FATAL(waitpid(pid, &status, 0), pid);
        CU_ASSERT_FATAL(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* What a power loss may do to data RocksDB wrote but never synced: lose all of it.
 * Truncates every WAL file of the database at path; returns the bytes dropped. */
static uint64_t lose_unsynced_wal(const char *path)
{
        _cleanup_free_ char *cmd = NULL;
        uint64_t before = 0;
        FILE *f;

        CU_ASSERT_FATAL(asprintf(&cmd, "cat %s/*.log 2>/dev/null | wc -c", path) > 0);
        f = popen(cmd, "r");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        CU_ASSERT(fscanf(f, "%" SCNu64, &before) == 1);
        pclose(f);
        CU_ASSERT_EQUAL(t_sh("for f in %s/*.log; do truncate -s 0 \"$f\"; done", path), 0);
        return before;
}

static void check_lost(struct catalog *c)
{
        for (unsigned t = 0; t < LOST_THREADS; t++)
                for (unsigned i = 0; i < LOST_PER_THREAD; i++) {
                        char key[32], value[300];

                        lost_key(key, sizeof(key), t, i);
                        snprintf(value, sizeof(value), "%s %0250u", key, i);
                        check_value(c, CATALOG_CF_STATE, key, value);
                }
}

/* I7 across a power loss: every acknowledged commit lives in the sync log until
 * RocksDB has synced it, so losing everything RocksDB never synced loses nothing
 * acknowledged -- and without the sync log the same loss does lose commits (the test
 * can fail). */
static void test_synclog_power_loss(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("catalog-lost"), *path = NULL, *off = NULL;
        struct catalog_stats st;
        struct catalog *c = NULL;

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        path = t_path_join(dir, "db");
        off = t_path_join(dir, "off");
        lost_run(path, 2u << 20);
        CU_ASSERT(lose_unsynced_wal(path) > LOST_TXNS * 250);
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        CU_ASSERT_EQUAL(catalog_last_seq(c), LOST_TXNS);
        catalog_get_stats(c, &st);
        CU_ASSERT_EQUAL(st.replayed, LOST_TXNS);        /* all of it from the sync log */
        check_lost(c);
        c = catalog_close(c);
        /* Reopened after a clean close, RocksDB has it all: nothing to replay. */
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        catalog_get_stats(c, &st);
        CU_ASSERT_EQUAL(st.replayed, 0);
        CU_ASSERT_EQUAL(catalog_last_seq(c), LOST_TXNS);
        check_lost(c);
        c = catalog_close(c);

        /* The control: a synced RocksDB write per group survives the same loss ... */
        catalog_debug_synclog_segment_size(0);
        lost_run(off, 0);
        lose_unsynced_wal(off);
        CU_ASSERT_EQUAL_FATAL(catalog_open(off, &c), 0);
        /* ... only because it synced: the truncation does take what was in its WAL. */
        CU_ASSERT(catalog_last_seq(c) < LOST_TXNS);
        c = catalog_close(c);
        catalog_debug_synclog_segment_size(2u << 20);
        t_rmrf(dir);
}

/* Segments reused many times over (64 KiB each): RocksDB synced before each reuse,
 * a kill -9 then recovers everything, the stale records of earlier uses are never
 * replayed (a gap would fail the open with -EBADMSG), and a reopen after a clean close
 * replays nothing. */
/* What the replay hands to RocksDB is checked first (RocksDB asserts on a malformed
 * WriteBatch): the batches RocksDB itself encodes pass, damaged ones do not. */
static void test_batch_check(void)
{
        rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
        uint8_t buf[256];
        const char *rep;
        size_t len;

        rocksdb_writebatch_put(wb, "key", 3, "value", 5);
        rocksdb_writebatch_delete(wb, "gone", 4);
        rep = rocksdb_writebatch_data(wb, &len);
        CU_ASSERT_FATAL(len + 1 <= sizeof(buf));
        memcpy(buf, rep, len);
        CU_ASSERT_EQUAL(catalog_batch_check(buf, len), 0);
        CU_ASSERT_EQUAL(catalog_batch_check(buf, len - 1), -EBADMSG);   /* torn */
        CU_ASSERT_EQUAL(catalog_batch_check(buf, 11), -EBADMSG);        /* no header */
        buf[len] = 0;
        CU_ASSERT_EQUAL(catalog_batch_check(buf, len + 1), -EBADMSG);   /* trailing bytes */
        buf[8]++;
        CU_ASSERT_EQUAL(catalog_batch_check(buf, len), -EBADMSG);       /* count too high */
        buf[8]--;
        buf[12] = 0x0a;
        CU_ASSERT_EQUAL(catalog_batch_check(buf, len), -EBADMSG);       /* unknown type */
        rocksdb_writebatch_destroy(wb);

        /* By hand: one put in column family 3 (meta), then in 9 (none). */
        {
                uint8_t cf[] = { 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0x05, 3, 1, 'k', 1, 'v' };

                CU_ASSERT_EQUAL(catalog_batch_check(cf, sizeof(cf)), 0);
                cf[13] = 9;
                CU_ASSERT_EQUAL(catalog_batch_check(cf, sizeof(cf)), -EBADMSG);
        }
}

static void test_synclog_reuse(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("catalog-reuse"), *path = NULL;
        struct catalog_io_stats io;
        struct catalog *c = NULL;

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        path = t_path_join(dir, "db");
        for (unsigned round = 0; round < 3; round++) {
                struct lost_arg args[LOST_THREADS];
                pthread_t threads[LOST_THREADS];
                struct catalog_stats st;

                catalog_debug_synclog_segment_size(64u << 10);
                if (round == 1) {
                        /* A crash with the segments in every state of reuse. */
                        lost_run(path, 64u << 10);
                        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
                        CU_ASSERT_EQUAL(catalog_last_seq(c), 2 * LOST_TXNS);
                        check_lost(c);
                        c = catalog_close(c);
                        continue;
                }
                CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
                catalog_get_stats(c, &st);
                CU_ASSERT_EQUAL(st.replayed, 0);
                for (unsigned t = 0; t < LOST_THREADS; t++) {
                        args[t] = (struct lost_arg){ .c = c, .thread = t };
                        CU_ASSERT_EQUAL_FATAL(pthread_create(&threads[t], NULL, lost_thread, &args[t]), 0);
                }
                for (unsigned t = 0; t < LOST_THREADS; t++) {
                        pthread_join(threads[t], NULL);
                        CU_ASSERT_EQUAL(args[t].r, 0);
                }
                catalog_get_io_stats(c, &io);
                /* ~100 KiB of records through 64 KiB segments: at least one switch
                 * and the sync that frees a segment. */
                CU_ASSERT(io.synclog_bytes > LOST_TXNS * 300);
                CU_ASSERT(io.synclog_store_syncs >= 1);
                check_lost(c);
                c = catalog_close(c);
        }
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        CU_ASSERT_EQUAL(catalog_last_seq(c), 3 * LOST_TXNS);
        c = catalog_close(c);
        catalog_debug_synclog_segment_size(2u << 20);
        t_rmrf(dir);
}

/* A group bigger than a segment goes to RocksDB with a sync of its own (catalog.c NOTE 8); the
 * groups around it keep using the sync log, and a reopen has them all, in order. */
static void test_synclog_too_big(void)
{
        _cleanup_free_ char *dir = t_mkdtemp("catalog-big"), *path = NULL;
        _cleanup_free_ char *big = malloc(100u << 10);
        struct catalog_io_stats io0, io1;
        struct catalog *c = NULL;
        struct catalog_op op;

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        CU_ASSERT_PTR_NOT_NULL_FATAL(big);
        path = t_path_join(dir, "db");
        memset(big, 'b', (100u << 10) - 1);
        big[(100u << 10) - 1] = 0;
        catalog_debug_synclog_segment_size(64u << 10);
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        op = op_put(CATALOG_CF_STATE, "before", "1");
        CU_ASSERT_EQUAL(catalog_commit(c, &op, 1, NULL), 0);
        catalog_get_io_stats(c, &io0);
        op = op_put(CATALOG_CF_STATE, "big", big);
        CU_ASSERT_EQUAL(catalog_commit(c, &op, 1, NULL), 0);
        catalog_get_io_stats(c, &io1);
        CU_ASSERT_EQUAL(io1.synclog_bytes, io0.synclog_bytes);  /* not in the sync log */
        op = op_put(CATALOG_CF_STATE, "after", "3");
        CU_ASSERT_EQUAL(catalog_commit(c, &op, 1, NULL), 0);
        catalog_get_io_stats(c, &io0);
        CU_ASSERT(io0.synclog_bytes > io1.synclog_bytes);        /* back in it */
        CU_ASSERT_EQUAL(catalog_last_seq(c), 3);
        c = catalog_close(c);
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
        CU_ASSERT_EQUAL(catalog_last_seq(c), 3);
        check_value(c, CATALOG_CF_STATE, "before", "1");
        check_value(c, CATALOG_CF_STATE, "big", big);
        check_value(c, CATALOG_CF_STATE, "after", "3");
        c = catalog_close(c);
        catalog_debug_synclog_segment_size(2u << 20);
        t_rmrf(dir);
}

static const struct t_case synclog_cases[] = {
        { "a group too big for a segment: synced in RocksDB, order kept", test_synclog_too_big },
        { "power loss of RocksDB's unsynced WAL: nothing acknowledged lost", test_synclog_power_loss },
        { "segments reused: synced first, kill -9 recovers, no stale replay", test_synclog_reuse },
        { "a replayed group is a well-formed WriteBatch", test_batch_check },
        { NULL, NULL },
};

static const struct t_case hook_cases[] = {
        { "commit hook: every txn once, in order, exact log bytes", test_commit_hook },
        { NULL, NULL },
};

static const struct t_case basic_cases[] = {
        { "commit, get, delete, reopen, log cursor", test_round_trip },
        { "range scans at once: each its range, first error", test_scan_ranges },
        { NULL, NULL },
};

static const struct t_case crash_cases[] = {
        { "kill -9 mid-stream: acknowledged durable, no partial txn", test_kill9 },
        { NULL, NULL },
};

static const struct t_case secondary_cases[] = {
        { "secondary catches up, reads log, refuses writes", test_secondary },
        { NULL, NULL },
};

static const struct t_case error_cases[] = {
        { "injected sync failure is sticky until reopen", test_sticky_injected },
        { "sticky failure under concurrent committers", test_sticky_concurrent },
        { "real write failure (EFBIG) is sticky, reopen is consistent", test_sticky_efbig },
        { NULL, NULL },
};

static const struct t_case group_cases[] = {
        { "8 threads: dense distinct seqs, all durable, grouped", test_group_commit },
        { "the longest synced write: since open, and per window", test_sync_window },
        { "commit_many: one write, consecutive seqs, never interleaved, all or none", test_commit_many },
        { "a window's opener woken with the window open still closes it", test_window_opener_woken },
        { "waiters yield for a bounded time, then sleep; off: sleep at once", test_wait_yield },
        { NULL, NULL },
};

static const struct t_suite suites[] = {
        { "catalog-basic", basic_cases },
        { "catalog-crash", crash_cases },
        { "catalog-secondary", secondary_cases },
        { "catalog-errors", error_cases },
        { "catalog-group", group_cases },
        { "catalog-hook", hook_cases },
        { "catalog-synclog", synclog_cases },
        { NULL, NULL },
};

int main(int argc, char **argv)
{
        if (argc == 4 && strcmp(argv[1], "--writer") == 0)
                return writer_main(argv[2], argv[3]);
        if (argc == 3 && strcmp(argv[1], "--efbig") == 0)
                return efbig_main(argv[2]);
        if (argc == 4 && strcmp(argv[1], "--lost") == 0)
                return lost_main(argv[2], argv[3]);
        return t_run(suites);
}
