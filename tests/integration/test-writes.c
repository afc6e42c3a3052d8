/* test-writes -- a write's expensive plan is evaluated in the controller's peek thread
 * (controller-server-bgwrite.c note 24): the three real daemons, libpq clients.
 *
 * Cases on one instance under a fresh COORD_HOME, each on tables it makes afresh
 * (writes_tables(): it runs alone too, tools/test-alone):
 *   writes whose plans cost a cross product (INSERT ... SELECT, DELETE and UPDATE with
 *   subqueries over three 60-row tables) go to the thread (writes_thread counts them)
 *   and write exactly what the same statements write when evaluated on the loop (their
 *   twins, below the thread's threshold, checked against values computed here);
 *   while a 60^5-row INSERT ... SELECT runs there (statement_timeout 3 s), another
 *   client's reads of other tables are answered, a third client's INSERT waits and is
 *   applied after it, a fourth's DROP of a table it reads commits while the controller
 *   defers dropping the collection until it ends (status deferred), and the big write
 *   ends with 57014 having written nothing;
 *   a cancel (PQcancel) of such a write ends it with 57014, written nothing, and the
 *   next writes apply.
 */
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "itest.h"

static void test_up(void)
{
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

static uint64_t in_thread(void)
{
        return stat_of(COORD__ROLE__ROLE_CONTROLLER, "writes_thread");
}

/* Wait up to ms for writes_thread to reach want. */
static bool in_thread_becomes(uint64_t want, unsigned ms)
{
        for (unsigned i = 0; i < ms / 10; i++) {
                if (in_thread() >= want)
                        return true;
                usleep(10 * 1000);
        }
        fprintf(stderr, "\n    writes_thread=%" PRIu64 ", expected %" PRIu64, in_thread(), want);
        return false;
}

/* Table wx<t> of the values 0..59. */
static bool make_wx(PGconn *c, int t)
{
        char q[1024];
        size_t len;

        if (!okf(c, "CREATE TABLE wx%d (a int)", t))
                return false;
        len = (size_t)snprintf(q, sizeof(q), "INSERT INTO wx%d VALUES ", t);
        for (int i = 0; i < 60; i++)
                len += (size_t)snprintf(q + len, sizeof(q) - len, "%s(%d)", i ? ", " : "", i);
        return ok(c, q);
}

/* The tables every case reads and writes, afresh (whatever another case left): a case
 * runs alone or in any order. */
static void writes_tables(PGconn *c)
{
        CU_ASSERT_FATAL(ok(c, "DROP TABLE IF EXISTS wx1, wx2, wx3, wx4, wx5, wsum, side"));
        for (int t = 1; t <= 5; t++)
                CU_ASSERT_FATAL(make_wx(c, t));
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE wsum (n bigint)"));
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE side (a int)"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO side VALUES (1), (2), (3), (70)"));
}

static void test_setup(void)
{
        PGconn *c = db();

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        writes_tables(c);
        PQfinish(c);
}

/* The plans cost 60^3 (thread) and 60^2 (loop, below PEEK_BG_MIN_UPDATES); the rows
 * they write are computed here. */
static void test_same_answer(void)
{
        PGconn *c = db();
        uint64_t before;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        writes_tables(c);
        before = in_thread();
        CU_ASSERT(ok(c, "INSERT INTO wsum SELECT count(*) FROM wx1, wx2, wx3"));
        CU_ASSERT_EQUAL(in_thread(), before + 1);
        CU_ASSERT(ok(c, "INSERT INTO wsum SELECT count(*) FROM wx1, wx2"));
        CU_ASSERT_EQUAL(in_thread(), before + 1);
        CU_ASSERT(rows_are(c, "SELECT n FROM wsum", "216000;3600"));
        /* Rows of side whose value is some a of wx1 = wx2 = wx3: 1, 2, 3 (not 70). */
        CU_ASSERT(ok(c, "UPDATE side SET a = a + 100 WHERE a IN (SELECT wx1.a FROM wx1, wx2, wx3 "
                        "WHERE wx1.a + 0 = wx2.a + 0 AND wx2.a + 0 = wx3.a + 0)"));
        CU_ASSERT_EQUAL(in_thread(), before + 2);
        CU_ASSERT(rows_are(c, "SELECT a FROM side", "101;102;103;70"));
        CU_ASSERT(ok(c, "DELETE FROM wsum WHERE n IN (SELECT count(*) FROM wx1, wx2, wx3)"));
        CU_ASSERT_EQUAL(in_thread(), before + 3);
        CU_ASSERT(rows_are(c, "SELECT n FROM wsum", "3600"));
        CU_ASSERT(ok(c, "DELETE FROM wsum WHERE n IN (SELECT count(*) * 60 FROM wx1)"));
        CU_ASSERT_EQUAL(in_thread(), before + 3);
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM wsum", "0"));
        CU_ASSERT(ok(c, "UPDATE side SET a = a - 100 WHERE a > 100"));
        PQfinish(c);
}

static const char *BIG = "INSERT INTO wsum SELECT count(*) FROM wx1, wx2, wx3, wx4, wx5";

/* c's statement has not ended (its result is not in). */
static bool busy(PGconn *c)
{
        return PQconsumeInput(c) && PQisBusy(c);
}

static const char *result_state(PGconn *c)
{
        static char st[6];
        PGresult *r;

        st[0] = '\0';
        while ((r = PQgetResult(c))) {
                const char *s = PQresultErrorField(r, PG_DIAG_SQLSTATE);

                if (PQresultStatus(r) == PGRES_FATAL_ERROR)
                        snprintf(st, sizeof(st), "%s", s ? s : "?");
                else if (!st[0])
                        snprintf(st, sizeof(st), "ok");
                PQclear(r);
        }
        return st;
}

static void test_others_served(void)
{
        PGconn *w = db(), *rd = db(), *ins = db(), *ddl = db();
        uint64_t before;
        int answered = 0;

        CU_ASSERT_PTR_NOT_NULL_FATAL(w);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rd);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ins);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ddl);
        writes_tables(rd);
        before = in_thread();
        CU_ASSERT(ok(w, "SET statement_timeout = 3000"));
        CU_ASSERT_FATAL(PQsendQuery(w, BIG));
        CU_ASSERT_FATAL(in_thread_becomes(before + 1, 2000));
        /* Reads of other tables, and of the tables it reads, are answered meanwhile. */
        for (int i = 0; i < 20; i++)
                answered += rows_are(rd, "SELECT count(*) FROM side", "4") &&
                            rows_are(rd, "SELECT count(*) FROM wx5", "60");
        CU_ASSERT(busy(w));
        CU_ASSERT_EQUAL(answered, 20);
        /* A write waits behind it and is applied after it.  Dropping a table it reads
         * commits in the catalog, and the controller defers dropping the collection
         * (as everything but reads) until the write is done. */
        CU_ASSERT_FATAL(PQsendQuery(ins, "INSERT INTO side VALUES (4)"));
        CU_ASSERT(ok(ddl, "DROP TABLE wx5"));
        for (int i = 0; i < 200 && !stat_of(COORD__ROLE__ROLE_CONTROLLER, "deferred"); i++)
                usleep(10 * 1000);
        CU_ASSERT(stat_of(COORD__ROLE__ROLE_CONTROLLER, "deferred") >= 1);
        CU_ASSERT(busy(w));
        CU_ASSERT(busy(ins));
        CU_ASSERT_STRING_EQUAL(result_state(w), "57014");
        CU_ASSERT_STRING_EQUAL(result_state(ins), "ok");
        CU_ASSERT_EQUAL(stat_of(COORD__ROLE__ROLE_CONTROLLER, "deferred"), 0);
        CU_ASSERT(make_wx(rd, 5));
        CU_ASSERT(rows_are(rd, "SELECT count(*) FROM side", "5"));
        CU_ASSERT(rows_are(rd, "SELECT count(*) FROM wsum", "0"));
        CU_ASSERT(ok(rd, "DELETE FROM side WHERE a = 4"));
        PQfinish(w);
        PQfinish(rd);
        PQfinish(ins);
        PQfinish(ddl);
}

static void test_cancel(void)
{
        PGconn *w = db(), *c = db();
        uint64_t before;
        char err[256];
        PGcancel *cn;

        CU_ASSERT_PTR_NOT_NULL_FATAL(w);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        writes_tables(c);
        before = in_thread();
        CU_ASSERT_FATAL(PQsendQuery(w, BIG));
        CU_ASSERT_FATAL(in_thread_becomes(before + 1, 2000));
        usleep(200 * 1000);                     /* still running after a while */
        CU_ASSERT(busy(w));
        cn = PQgetCancel(w);
        CU_ASSERT_FATAL(cn != NULL);
        CU_ASSERT(PQcancel(cn, err, sizeof(err)));
        PQfreeCancel(cn);
        CU_ASSERT_STRING_EQUAL(result_state(w), "57014");
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM wsum", "0"));
        CU_ASSERT(ok(w, "INSERT INTO wsum VALUES (7)"));
        CU_ASSERT(rows_are(c, "SELECT n FROM wsum", "7"));
        PQfinish(w);
        PQfinish(c);
}

static void test_down(void)
{
        CU_ASSERT_EQUAL(t_sh("%s down >/dev/null", coord_cmd), 0);
}

static const struct t_case cases[] = {
        { "up", test_up },
        { "tables", test_setup },
        { "writes evaluated in the thread write what the loop would", test_same_answer },
        { "while one runs there, reads are answered and writes wait for it", test_others_served },
        { "a cancel ends a write evaluating in the thread", test_cancel },
        { "down", test_down },
        { NULL, NULL },
};

int main(void)
{
        return itest_main("writes", "w", (const struct t_suite[]){ { "writes", cases }, { NULL, NULL } });
}
