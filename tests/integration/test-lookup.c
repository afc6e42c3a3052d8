/* test-lookup -- keyed index lookups (controller-server-lookup.c note 23) end to end: the
 * three real daemons, libpq as the client.
 *
 * Cases, in order, on one instance under a fresh COORD_HOME:
 *   a table with an index on (k) and a view indexed on (k, s), beside an unindexed twin
 *   fed the same writes: after each of 25 seeded rounds of INSERTs, DELETEs and UPDATEs
 *   that move rows between keys, reads that fix the key (`k = c`, `c = k AND v > c`,
 *   both key columns of the view) answer exactly the twin's rows and each counts one
 *   keyed read in the controller's status (peeks_keyed); reads that do not fix it
 *   (OR, a range, an expression of the key, a prefix of the view's key, a self-join
 *   fixing two keys) answer the twin's rows and count none.  A lookup that read the
 *   wrong rows, or a whole-arrangement read behind a keyed answer, fails here.
 *
 *   a table with a DEFAULT INDEX (the oldest, keyed on every column) and indexes on (s)
 *   and (k): a SELECT reads through the index whose key its WHERE fixes (the adapter's
 *   choose_indexes()), so `k = c` and `s = c` are one keyed read each, all three
 *   columns fixed read the default index by key, other forms none; after DROP INDEX
 *   of (k), `k = c` is a full read again, with the same rows; and so after the
 *   adapter's kill -9 and restart (the index count comes from the catalog's load).
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

static uint64_t keyed(void)
{
        return stat_of(COORD__ROLE__ROLE_CONTROLLER, "peeks_keyed");
}

/* sql with %1$s the relation: the indexed one and the twin answer the same rows; the
 * controller counted `want` keyed reads for it. */
static bool same(PGconn *c, const char *fmt, const char *rel, const char *twin, uint64_t want)
{
        char *q1 = NULL, *q2 = NULL, *a = NULL, *b = NULL;
        uint64_t before = keyed(), got;
        bool good = false;

        if (asprintf(&q1, fmt, rel) < 0 || asprintf(&q2, fmt, twin) < 0)
                goto out;
        a = rows_of(c, q1);
        got = keyed() - before;
        b = rows_of(c, q2);
        good = a && b && strcmp(a, b) == 0 && got == want;
        if (!good)
                fprintf(stderr, "\n    %s: [%.200s] vs twin [%.200s], keyed reads %" PRIu64
                        " (expected %" PRIu64 ")", q1, a ? a : "(error)", b ? b : "(error)", got, want);
out:
        free(q1);
        free(q2);
        free(a);
        free(b);
        return good;
}

/* Both tables get the same statement: @T in it names the table. */
static bool both(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool both(PGconn *c, const char *fmt, ...)
{
        char *q = NULL, *at;
        va_list ap;
        bool good = true;

        va_start(ap, fmt);
        if (vasprintf(&q, fmt, ap) < 0)
                q = NULL;
        va_end(ap);
        if (!q || !(at = strstr(q, "@T"))) {
                free(q);
                return false;
        }
        for (int i = 0; i < 2 && good; i++) {
                memcpy(at, i ? "kr" : "kt", 2);
                good = ok(c, q);
        }
        free(q);
        return good;
}

static void test_lookups(void)
{
        PGconn *c = db();
        unsigned seed = 20261206;
        int next = 0;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE kt (k bigint, s text, v int)"));
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE kr (k bigint, s text, v int)"));
        CU_ASSERT_FATAL(ok(c, "CREATE INDEX kt_k ON kt (k)"));
        CU_ASSERT_FATAL(ok(c, "CREATE VIEW kv AS SELECT k, s, count(*) AS n, sum(v) AS t "
                              "FROM kt GROUP BY k, s"));
        CU_ASSERT_FATAL(ok(c, "CREATE VIEW krv AS SELECT k, s, count(*) AS n, sum(v) AS t "
                              "FROM kr GROUP BY k, s"));
        CU_ASSERT_FATAL(ok(c, "CREATE INDEX kv_ks ON kv (k, s)"));
        for (int round = 0; round < 25; round++) {
                int k = (int)(rand_r(&seed) % 12), k2 = (int)(rand_r(&seed) % 12);
                char s[8];

                /* 40 rows over 12 keys and 3 texts, a NULL key now and then. */
                {
                        char vals[2048];
                        size_t len = 0;

                        for (int i = 0; i < 40; i++, next++) {
                                char key[16];

                                if (next % 17 == 0)
                                        strcpy(key, "NULL");
                                else
                                        snprintf(key, sizeof(key), "%d", (next * 7) % 12);
                                len += (size_t)snprintf(vals + len, sizeof(vals) - len, "%s(%s, 's%d', %d)",
                                                        i ? ", " : "", key, next % 3, next);
                        }
                        CU_ASSERT(both(c, "INSERT INTO @T VALUES %s", vals));
                }
                CU_ASSERT(both(c, "DELETE FROM @T WHERE k = %d AND v %% 3 = 0", k));
                CU_ASSERT(both(c, "UPDATE @T SET k = %d WHERE v %% 7 = %d", k2, round % 7));
                snprintf(s, sizeof(s), "s%d", round % 3);
                CU_ASSERT(same(c, "SELECT k, s, v FROM %s WHERE k = 3", "kt", "kr", 1));
                {
                        char q[160];

                        snprintf(q, sizeof(q), "SELECT k, s, v FROM %%s WHERE k = %d", k);
                        CU_ASSERT(same(c, q, "kt", "kr", 1));
                        snprintf(q, sizeof(q), "SELECT v FROM %%s WHERE %d = k AND v > %d", k2, next / 2);
                        CU_ASSERT(same(c, q, "kt", "kr", 1));
                        snprintf(q, sizeof(q), "SELECT n, t FROM %%s WHERE s = '%s' AND k = %d", s, k2);
                        CU_ASSERT(same(c, q, "kv", "krv", 1));
                        snprintf(q, sizeof(q), "SELECT k, s, v FROM %%s WHERE k = %d OR k = %d", k, k2);
                        CU_ASSERT(same(c, q, "kt", "kr", 0));
                        snprintf(q, sizeof(q), "SELECT k, n FROM %%s WHERE k = %d", k);
                        CU_ASSERT(same(c, q, "kv", "krv", 0));
                }
                CU_ASSERT(same(c, "SELECT k, v FROM %s WHERE k > 3 AND k < 6", "kt", "kr", 0));
                CU_ASSERT(same(c, "SELECT v FROM %s WHERE k + 0 = 4", "kt", "kr", 0));
                CU_ASSERT(same(c, "SELECT v FROM %s WHERE k IS NULL", "kt", "kr", 0));
                CU_ASSERT(same(c, "SELECT count(*), sum(a.v - b.v) FROM %1$s a JOIN %1$s b ON a.s = b.s "
                                  "WHERE a.k = 4 AND b.k = 5", "kt", "kr", 0));
        }
        /* Every row was read through some lookup: the table is not empty. */
        CU_ASSERT(q_u64(c, "SELECT count(*) FROM kt") > 500);
        PQfinish(c);
}

static void test_choice(void)
{
        PGconn *c = db();

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE kd (k bigint, s text, v int)"));
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE kdr (k bigint, s text, v int)"));
        CU_ASSERT_FATAL(ok(c, "CREATE DEFAULT INDEX ON kd"));
        CU_ASSERT_FATAL(ok(c, "CREATE INDEX kd_s ON kd (s)"));
        CU_ASSERT_FATAL(ok(c, "CREATE INDEX kd_k ON kd (k)"));
        for (int t = 0; t < 2; t++) {
                char vals[8192];
                size_t len = (size_t)snprintf(vals, sizeof(vals), "INSERT INTO %s VALUES ",
                                              t ? "kdr" : "kd");

                for (int g = 1; g <= 200; g++)
                        len += (size_t)snprintf(vals + len, sizeof(vals) - len, "%s(%d, 's%d', %d)",
                                                g > 1 ? ", " : "", g % 10, g % 4, g);
                CU_ASSERT_FATAL(ok(c, vals));
        }
        CU_ASSERT(same(c, "SELECT s, v FROM %s WHERE k = 3", "kd", "kdr", 1));
        CU_ASSERT(same(c, "SELECT k, v FROM %s WHERE s = 's2'", "kd", "kdr", 1));
        CU_ASSERT(same(c, "SELECT v FROM %s WHERE s = 's1' AND k = 5", "kd", "kdr", 1));
        CU_ASSERT(same(c, "SELECT count(*) FROM %s WHERE k = 4 AND s = 's0' AND v = 24", "kd", "kdr", 1));
        CU_ASSERT(same(c, "SELECT k, s FROM %s WHERE v = 17", "kd", "kdr", 0));
        CU_ASSERT(same(c, "SELECT k, s, v FROM %s WHERE k = 3 OR s = 's1'", "kd", "kdr", 0));
        CU_ASSERT(same(c, "SELECT count(*) FROM %1$s a JOIN %1$s b ON a.v = b.v WHERE a.k = 2 AND b.k = 2",
                       "kd", "kdr", 1));
        CU_ASSERT(ok(c, "DROP INDEX kd_k"));
        CU_ASSERT(same(c, "SELECT s, v FROM %s WHERE k = 3", "kd", "kdr", 0));
        CU_ASSERT(same(c, "SELECT k, v FROM %s WHERE s = 's3'", "kd", "kdr", 1));
        /* The adapter counts an object's indexes again when it loads the catalog. */
        kill9_restart(COORD__ROLE__ROLE_ADAPTER, &c);
        CU_ASSERT(rows_become(c, "SELECT count(*) FROM kd", "200", 10000));
        CU_ASSERT(same(c, "SELECT k, v FROM %s WHERE s = 's0'", "kd", "kdr", 1));
        CU_ASSERT(same(c, "SELECT s, v FROM %s WHERE k = 3", "kd", "kdr", 0));
        PQfinish(c);
}

static void test_down(void)
{
        CU_ASSERT_EQUAL(t_sh("%s down >/dev/null", coord_cmd), 0);
}

static const struct t_case cases[] = {
        { "up", test_up },
        { "reads that fix an index's key read that key only, and answer as a full read",
          test_lookups },
        { "a SELECT reads through the index whose key its WHERE fixes", test_choice },
        { "down", test_down },
        { NULL, NULL },
};

int main(void)
{
        return itest_main("lookup", "l", (const struct t_suite[]){ { "lookup", cases }, { NULL, NULL } });
}
