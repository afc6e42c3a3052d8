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
 * After each: every acknowledged row is there exactly once, `coordctl check` matches.
 */
#include <pthread.h>
#include <signal.h>

#include "itest.h"

#define PAUSE_MS 5000

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

int main(void)
{
        static const struct t_case cases[] = {
                { "up", test_up },
                { "controller_stopped", test_controller },
                { "lifecycle_stopped", test_lifecycle },
                { "adapter_stopped", test_adapter },
                { NULL, NULL },
        };
        signal(SIGPIPE, SIG_IGN);
        return itest_main("pause", "pz", (const struct t_suite[]){ { "pause", cases }, { NULL, NULL } });
}
