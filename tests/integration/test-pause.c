/* test-pause -- paused daemons (issue 30 item 4): SIGSTOP of each daemon for a few
 * seconds under a write load, on the three real daemons started with tools/coord.
 *
 *   controller   while it is stopped: SELECT 1, SHOW and SET are answered at once; a
 *                read of a table fails with 57014 after statement_timeout; an INSERT
 *                waits and is applied once after SIGCONT; INSERTs and a COMMIT queued
 *                behind it end with 57014 after statement_timeout, not applied; the follower's bounds stay
 *                at or below every requirement (I5) and the tables' sinces do not
 *                pass their committed bounds (I2).
 *   lifecycle    while it is stopped: reads and writes of existing tables go on; a
 *                CREATE TABLE commits, and the table is usable once the follower is
 *                back; the bounds do not move meanwhile, and move again after.
 *   adapter      while it is stopped, the controller and the follower answer their
 *                status; after SIGCONT the same client connection goes on.
 *   big writes   (adapter-exec.c note 2a; the adapter runs with --max-frame-bytes
 *                FRAME) an INSERT, and a block, too large for one Append fail with
 *                54000 and write nothing, and the writes after them go on; two writes
 *                that fit one frame each but not together, queued behind a write in
 *                flight while the controller is stopped, are split into two Appends
 *                and both applied -- without the split the group could never be sent
 *                and every write would wait; reads whose requests find the link's
 *                send queue full while the controller is stopped are sent later
 *                (adapter-exec.c note 4) and answered after SIGCONT.
 * After each: every acknowledged row is there exactly once, `coordctl check` matches.
 */
#include <pthread.h>
#include <signal.h>

#include "itest.h"

#define PAUSE_MS 5000
#define FRAME (2u << 20)                /* the adapter's --max-frame-bytes here */

static int next_value;          /* the rows of table pz: 1 .. next_value - 1, once each */

static void test_up(void)
{
        PGconn *c;

        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        c = db();
        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE pz (v int)"));
        CU_ASSERT_FATAL(ok(c, "CREATE MATERIALIZED VIEW pz_n AS SELECT count(*) AS n FROM pz"));
        PQfinish(c);
}

static bool insert_next(PGconn *c)
{
        if (!okf(c, "INSERT INTO pz VALUES (%d)", next_value + 1))
                return false;
        next_value++;
        return true;
}

/* Every value 1 .. next_value once, the view agreeing; I5 on the built-in relations. */
static void check_rows(PGconn *c)
{
        uint64_t want = (uint64_t)next_value;

        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM pz"), want);
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM (SELECT DISTINCT v FROM pz) d"), want);
        CU_ASSERT_EQUAL(q_u64(c, "SELECT max(v) FROM pz"), want);
        for (int w = 0; w < 50 && q_u64(c, "SELECT n FROM pz_n") != want; w++)
                sleep_ms(100);
        CU_ASSERT_EQUAL(q_u64(c, "SELECT n FROM pz_n"), want);
        /* I5: no bound above a requirement on it */
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM coord_requirements r JOIN coord_bounds b "
                                 "ON b.object_id = r.input_id WHERE b.bound > r.frontier"), 0);
        /* I2: no table compacted past its committed bound */
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM coord_frontiers f JOIN coord_bounds b "
                                 "ON b.object_id = f.object_id WHERE f.read_frontier > b.bound"), 0);
        CU_ASSERT_EQUAL(t_sh("%s check >/dev/null", coord_cmd), 0);
}

static uint64_t bound_of(PGconn *c, const char *name)
{
        return q_u64(c, "SELECT b.bound FROM coord_bounds b JOIN coord_objects o ON o.id = b.object_id "
                        "WHERE o.name = '%s'", name);
}

struct writer {
        const char *conninfo;
        int value;              /* the value it inserts */
        bool done, ok;
        uint64_t took_ms;
};

static void *writer_main(void *arg)
{
        struct writer *w = arg;
        PGconn *c = PQconnectdb(w->conninfo);
        uint64_t t0 = now_ms();

        if (PQstatus(c) == CONNECTION_OK)
                w->ok = okf(c, "INSERT INTO pz VALUES (%d)", w->value);
        w->took_ms = now_ms() - t0;
        PQfinish(c);
        __atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
        return NULL;
}

static void test_controller(void)
{
        pid_t pid = pid_of(COORD__ROLE__ROLE_CONTROLLER);
        struct writer w = { .conninfo = conninfo };
        PGconn *c = db();
        pthread_t th;
        uint64_t t0, took;

        CU_ASSERT_FATAL(c && pid > 0);
        for (int i = 0; i < 20; i++)
                CU_ASSERT(insert_next(c));
        CU_ASSERT_FATAL(kill(pid, SIGSTOP) == 0);
        t0 = now_ms();
        CU_ASSERT(rows_are(c, "SELECT 1", "1"));
        CU_ASSERT(ok(c, "SET statement_timeout = '1s'"));
        CU_ASSERT(rows_are(c, "SHOW statement_timeout", "1s"));
        took = now_ms() - t0;
        printf("\n    controller stopped: SELECT 1, SET, SHOW answered in %llu ms", (unsigned long long)took);
        CU_ASSERT(took < 1000);
        t0 = now_ms();
        CU_ASSERT(fails_with(c, "SELECT count(*) FROM pz", "57014"));
        took = now_ms() - t0;
        printf("; a read failed with 57014 after %llu ms", (unsigned long long)took);
        CU_ASSERT(took >= 900 && took < 3000);
        CU_ASSERT(ok(c, "SET statement_timeout = 0"));
        /* An INSERT meanwhile waits for the controller, then is applied once. */
        w.value = next_value + 1;
        CU_ASSERT_FATAL(pthread_create(&th, NULL, writer_main, &w) == 0);
        /* Its INSERT reached the adapter's append groups (sent or queued). */
        CU_ASSERT_FATAL(t_wait_for(stat_of(COORD__ROLE__ROLE_ADAPTER, "client_writes_pending") >= 1, 5000));
        /* Writes queued behind it (their group not sent) end with 57014 after
         * statement_timeout and are not applied: an INSERT, and a block's COMMIT whole. */
        CU_ASSERT(ok(c, "SET statement_timeout = '1s'"));
        t0 = now_ms();
        CU_ASSERT(fails_with(c, "INSERT INTO pz VALUES (-1)", "57014"));
        took = now_ms() - t0;
        printf("; an INSERT queued meanwhile failed with 57014 after %llu ms", (unsigned long long)took);
        CU_ASSERT(took >= 900 && took < 3000);
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT(ok(c, "INSERT INTO pz VALUES (-2)"));
        CU_ASSERT(ok(c, "INSERT INTO pz VALUES (-3)"));
        CU_ASSERT(fails_with(c, "COMMIT", "57014"));
        CU_ASSERT(ok(c, "SET statement_timeout = 0"));
        sleep_ms(PAUSE_MS - 4000);              /* the pause lasts */
        CU_ASSERT(!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE));
        CU_ASSERT(kill(pid, SIGCONT) == 0);
        pthread_join(th, NULL);
        printf("; the INSERT sent meanwhile answered after %llu ms", (unsigned long long)w.took_ms);
        CU_ASSERT(w.ok);
        if (w.ok)
                next_value++;
        for (int i = 0; i < 10; i++)
                CU_ASSERT(insert_next(c));
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM pz WHERE v < 0"), 0);
        check_rows(c);
        PQfinish(c);
}

static void test_lifecycle(void)
{
        pid_t pid = pid_of(COORD__ROLE__ROLE_LIFECYCLE);
        PGconn *c = db();
        uint64_t b0, b1;

        CU_ASSERT_FATAL(c && pid > 0);
        for (int i = 0; i < 10; i++)
                CU_ASSERT(insert_next(c));
        CU_ASSERT(publications_pass(1, 5000));  /* one that saw the rows */
        CU_ASSERT_FATAL(kill(pid, SIGSTOP) == 0);
        b0 = bound_of(c, "pz");
        /* Reads and writes of what exists go on; DDL commits. */
        for (int i = 0; i < 20; i++) {
                CU_ASSERT(insert_next(c));
                sleep_ms(100);                  /* pace */
        }
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM pz"), (uint64_t)next_value);
        CU_ASSERT(ok(c, "CREATE TABLE pz_new (a int)"));
        sleep_ms(PAUSE_MS - 2000);              /* the pause lasts */
        b1 = bound_of(c, "pz");
        printf("\n    lifecycle stopped: bound(pz) %" PRIu64 " -> %" PRIu64 " while %d rows went in", b0, b1, 20);
        CU_ASSERT_EQUAL(b0, b1);        /* nobody publishes */
        CU_ASSERT(kill(pid, SIGCONT) == 0);
        /* The new table is enacted; the bounds move again. */
        CU_ASSERT(ok(c, "INSERT INTO pz_new VALUES (1)"));
        CU_ASSERT(rows_are(c, "SELECT a FROM pz_new", "1"));
        for (int w = 0; w < 50 && bound_of(c, "pz") == b1; w++) {
                CU_ASSERT(insert_next(c));
                sleep_ms(100);
        }
        CU_ASSERT(bound_of(c, "pz") > b1);
        CU_ASSERT(ok(c, "DROP TABLE pz_new"));
        check_rows(c);
        PQfinish(c);
}

static void test_adapter(void)
{
        pid_t pid = pid_of(COORD__ROLE__ROLE_ADAPTER);
        PGconn *c = db();
        pid_t cp, lp;

        CU_ASSERT_FATAL(c && pid > 0);
        CU_ASSERT(insert_next(c));
        CU_ASSERT_FATAL(kill(pid, SIGSTOP) == 0);
        sleep_ms(PAUSE_MS / 2);                 /* the pause lasts */
        cp = pid_of(COORD__ROLE__ROLE_CONTROLLER);
        lp = pid_of(COORD__ROLE__ROLE_LIFECYCLE);
        printf("\n    adapter stopped: controller pid %d, lifecycle pid %d answer their status", (int)cp,
               (int)lp);
        CU_ASSERT(cp > 0 && lp > 0);
        sleep_ms(PAUSE_MS / 2);                 /* the pause lasts */
        CU_ASSERT(kill(pid, SIGCONT) == 0);
        /* The same connection goes on. */
        for (int i = 0; i < 10; i++)
                CU_ASSERT(insert_next(c));
        CU_ASSERT_EQUAL(PQstatus(c), CONNECTION_OK);
        check_rows(c);
        PQfinish(c);
}

/* head, then rows (first, '1,000 c's) .. (first + n - 1, ...), then tail: about n KB. */
static char *rows_sql(const char *head, int first, int n, char c, const char *tail)
{
        size_t cap = (size_t)n * 1024 + strlen(head) + strlen(tail) + 1, len;
        char *sql = malloc(cap);

        if (!sql)
                return NULL;
        len = (size_t)snprintf(sql, cap, "%s", head);
        for (int i = 0; i < n; i++) {
                len += (size_t)snprintf(sql + len, cap - len, "%s(%d, '", i ? "," : "", first + i);
                memset(sql + len, c, 1000);
                len += 1000;
                len += (size_t)snprintf(sql + len, cap - len, "')");
        }
        snprintf(sql + len, cap - len, "%s", tail);
        return sql;
}

static char *big_insert(int first, int n)
{
        return rows_sql("INSERT INTO pb VALUES ", first, n, 'x', "");
}

struct big_writer {
        char *sql;
        bool done, ok;
};

static void *big_writer_main(void *arg)
{
        struct big_writer *w = arg;
        PGconn *c = PQconnectdb(conninfo);

        if (PQstatus(c) == CONNECTION_OK) {
                PGresult *r = PQexec(c, w->sql);        /* its SQL is too long to print */

                w->ok = PQresultStatus(r) == PGRES_COMMAND_OK ||
                        PQresultStatus(r) == PGRES_TUPLES_OK;
                if (!w->ok)
                        fprintf(stderr, "\n    %.60s... -> %s", w->sql, PQresultErrorMessage(r));
                PQclear(r);
        }
        PQfinish(c);
        __atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
        return NULL;
}

static void test_big_writes(void)
{
        pid_t pid = pid_of(COORD__ROLE__ROLE_CONTROLLER);
        char *big = big_insert(1, 2200), *half1 = big_insert(10001, 1100);
        char *half2 = big_insert(20001, 1100);
        struct big_writer w[3] = { { .sql = (char *)"INSERT INTO pb VALUES (1000, 'in flight')" },
                                   { .sql = half1 }, { .sql = half2 } };
        uint64_t split0;
        pthread_t th[3];
        PGconn *c = db();

        CU_ASSERT_FATAL(c && pid > 0 && big && half1 && half2);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE pb (v int, t text)"));
        /* One INSERT over the frame: 54000, nothing written, the next write goes. */
        CU_ASSERT(fails_with(c, big, "54000"));
        CU_ASSERT(ok(c, "INSERT INTO pb VALUES (1, 'small')"));
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM pb"), 1);
        /* A block is one Append: two INSERTs that fit alone fail its COMMIT together. */
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT(ok(c, half1));
        CU_ASSERT(ok(c, half2));
        CU_ASSERT(fails_with(c, "COMMIT", "54000"));
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM pb"), 1);
        /* Two that fit alone, queued in one group behind a write in flight: split. */
        split0 = stat_of(COORD__ROLE__ROLE_ADAPTER, "appends_split");
        CU_ASSERT_FATAL(kill(pid, SIGSTOP) == 0);
        CU_ASSERT_FATAL(pthread_create(&th[0], NULL, big_writer_main, &w[0]) == 0);
        CU_ASSERT(t_wait_for(stat_of(COORD__ROLE__ROLE_ADAPTER, "client_writes_pending") >= 1,
                             5000));
        for (int i = 1; i < 3; i++)
                CU_ASSERT_FATAL(pthread_create(&th[i], NULL, big_writer_main, &w[i]) == 0);
        CU_ASSERT(t_wait_for(stat_of(COORD__ROLE__ROLE_ADAPTER, "client_writes_pending") >= 3,
                             10000));
        CU_ASSERT(kill(pid, SIGCONT) == 0);
        /* Never sent, they would wait for ever. */
        CU_ASSERT_FATAL(t_wait_for(__atomic_load_n(&w[1].done, __ATOMIC_ACQUIRE) &&
                                   __atomic_load_n(&w[2].done, __ATOMIC_ACQUIRE), 20000));
        for (int i = 0; i < 3; i++) {
                pthread_join(th[i], NULL);
                CU_ASSERT(w[i].ok);
        }
        CU_ASSERT(stat_of(COORD__ROLE__ROLE_ADAPTER, "appends_split") > split0);
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM pb"), 2 + 2 * 1100);
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM pb WHERE v > 10000"), 2 * 1100);
        CU_ASSERT_EQUAL(t_sh("%s check >/dev/null", coord_cmd), 0);
        printf("\n    a %zu-byte INSERT and a block of two refused (54000); two of %zu bytes "
               "split into two Appends (--max-frame-bytes %u)", strlen(big), strlen(half1), FRAME);
        free(big);
        free(half1);
        free(half2);
        PQfinish(c);
}

/* A read of pb whose plan carries n KB of constants. */
static char *big_read(int n)
{
        return rows_sql("SELECT count(*) FROM (VALUES ", 0, n, 'r', ") v(a, b) JOIN pb ON pb.v = v.a");
}

enum { READERS = 10 };

static void test_full_send_queue(void)
{
        pid_t pid = pid_of(COORD__ROLE__ROLE_CONTROLLER);
        char *read = big_read(1000);    /* about 1 MB a request: the queue holds ~4 */
        struct big_writer w[READERS];
        pthread_t th[READERS];
        uint64_t deferred0 = stat_of(COORD__ROLE__ROLE_ADAPTER, "requests_deferred");
        bool all = false;

        CU_ASSERT_FATAL(read && pid > 0);
        CU_ASSERT_FATAL(kill(pid, SIGSTOP) == 0);
        for (int i = 0; i < READERS; i++) {
                w[i] = (struct big_writer){ .sql = read };
                CU_ASSERT_FATAL(pthread_create(&th[i], NULL, big_writer_main, &w[i]) == 0);
        }
        CU_ASSERT(t_wait_for(stat_of(COORD__ROLE__ROLE_ADAPTER, "requests_deferred") > deferred0,
                             10000));
        CU_ASSERT(kill(pid, SIGCONT) == 0);
        /* Unsent and never retried, they would wait for ever (no statement_timeout). */
        for (int k = 0; k < 300 && !all; k++) {
                all = true;
                for (int i = 0; i < READERS; i++)
                        all &= __atomic_load_n(&w[i].done, __ATOMIC_ACQUIRE);
                if (!all)
                        sleep_ms(100);
        }
        CU_ASSERT_FATAL(all);
        for (int i = 0; i < READERS; i++) {
                pthread_join(th[i], NULL);
                CU_ASSERT(w[i].ok);
        }
        printf("\n    %d reads of %zu bytes with the controller stopped: %llu sends deferred, "
               "all answered", READERS, strlen(read),
               (unsigned long long)(stat_of(COORD__ROLE__ROLE_ADAPTER, "requests_deferred") -
                                    deferred0));
        free(read);
}

int main(void)
{
        static const struct t_case cases[] = {
                { "up", test_up },
                { "controller_stopped", test_controller },
                { "lifecycle_stopped", test_lifecycle },
                { "adapter_stopped", test_adapter },
                { "big_writes", test_big_writes },
                { "full_send_queue", test_full_send_queue },
                { NULL, NULL },
        };
        char frame[64];

        snprintf(frame, sizeof(frame), "--max-frame-bytes %u", FRAME);
        setenv("COORD_ADAPTER_ARGS", frame, 1);
        signal(SIGPIPE, SIG_IGN);
        return itest_main("pause", "pz", (const struct t_suite[]){ { "pause", cases }, { NULL, NULL } });
}
