/* test-resync -- the follower's resync in parts (lifecycle-enact.c note 5,
 * controller-server-install.c note 17a), end to end on the three real daemons with
 * --resync-part-items 3: after a controller kill -9 every view and index is back and
 * maintained, the resync went in several parts, and a materialized view or a table
 * dropped while the controller was down loses its collection at the last part.
 */
#include "itest.h"

#define VIEWS 7

static void test_up(void)
{
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

/* Wait until the controller's status key is n (up to 20 s). */
static bool ctl_stat_becomes(const char *key, uint64_t n)
{
        uint64_t got = 0;

        for (int w = 0; w < 400; w++) {
                got = stat_of(COORD__ROLE__ROLE_CONTROLLER, key);
                if (got == n)
                        return true;
                sleep_ms(50);
        }
        fprintf(stderr, "\n    controller %s=%" PRIu64 ", not %" PRIu64, key, got, n);
        return false;
}

/* The most parts of an ended resync in the follower's log. */
static unsigned long max_parts_logged(void)
{
        char *path = home_file("log/lifecycle.log"), line[1024];
        unsigned long best = 0;
        FILE *f = path ? fopen(path, "r") : NULL;

        while (f && fgets(line, sizeof(line), f)) {
                const char *p = strstr(line, "event=enact_resync ");

                p = p ? strstr(p, " parts=") : NULL;
                if (p && strtoul(p + 7, NULL, 10) > best)
                        best = strtoul(p + 7, NULL, 10);
        }
        if (f)
                fclose(f);
        free(path);
        return best;
}

static void test_parts(void)
{
        PGconn *c = db();
        char *sink = home_file("rs.sink");
        uint64_t dfs, cols;

        CU_ASSERT_FATAL(c != NULL && sink != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE rs (a int)"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO rs VALUES (1), (2), (3), (4), (5), (6), (7), (8)"));
        for (int i = 0; i < VIEWS; i++) {
                CU_ASSERT_FATAL(okf(c, "CREATE MATERIALIZED VIEW rs_mv%d AS SELECT count(*) AS n FROM rs "
                                       "WHERE a > %d", i, i));
                CU_ASSERT_FATAL(okf(c, "CREATE INDEX rs_ix%d ON rs_mv%d (n)", i, i));
        }
        CU_ASSERT_FATAL(okf(c, "CREATE SINK rs_k FROM rs_mv0 INTO FILE '%s'", sink));
        for (int i = 0; i < VIEWS; i++)
                CU_ASSERT_EQUAL(q_u64(c, "SELECT n FROM rs_mv%d", i), (uint64_t)(8 - i));
        dfs = stat_of(COORD__ROLE__ROLE_CONTROLLER, "dataflows");
        cols = stat_of(COORD__ROLE__ROLE_CONTROLLER, "collections");
        CU_ASSERT(dfs >= 2 * VIEWS + 1);

        /* kill -9: the follower's resync brings everything back, in parts. */
        kill9_restart(COORD__ROLE__ROLE_CONTROLLER, &c);
        CU_ASSERT(ctl_stat_becomes("dataflows", dfs));
        CU_ASSERT(max_parts_logged() >= (2 * VIEWS + 1) / 3);
        CU_ASSERT(ok(c, "INSERT INTO rs VALUES (9)"));
        for (int i = 0; i < VIEWS; i++)
                CU_ASSERT_EQUAL(q_u64(c, "SELECT n FROM rs_mv%d", i), (uint64_t)(9 - i));

        /* A view dropped while the controller is down: its collection goes at the
         * resync's last part (no part names it), its index with it. */
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
        CU_ASSERT(ok(c, "DROP MATERIALIZED VIEW rs_mv6 CASCADE"));
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        CU_ASSERT(ctl_stat_becomes("dataflows", dfs - 2));
        CU_ASSERT(ctl_stat_becomes("collections", cols - 1));
        CU_ASSERT_EQUAL(q_u64(c, "SELECT n FROM rs_mv5"), 4);

        /* Tables go in parts too (6 a part here): one dropped while the controller is
         * down goes at the last part, the others stay. */
        for (int i = 0; i < 40; i++)
                CU_ASSERT_FATAL(okf(c, "CREATE TABLE rs_t%d (a int)", i));
        CU_ASSERT(ctl_stat_becomes("collections", cols - 1 + 40));
        /* An append makes the tables' creates durable (controller-server-collection.c
         * note 12): without it the restart would simply not have rs_t3. */
        CU_ASSERT(ok(c, "INSERT INTO rs_t3 VALUES (1)"));
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
        CU_ASSERT(ok(c, "DROP TABLE rs_t3"));
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        CU_ASSERT(ctl_stat_becomes("collections", cols - 1 + 39));
        CU_ASSERT(ok(c, "INSERT INTO rs_t39 VALUES (1)"));
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM rs_t39"), 1);
        free(sink);
        PQfinish(c);
}

int main(void)
{
        static const struct t_case cases[] = {
                { "up", test_up },
                { "parts", test_parts },
                { "check", itest_check },
                { NULL, NULL },
        };

        /* Parts of three dataflows: a handful of views make several. */
        setenv("COORD_LIFECYCLE_ARGS", "--resync-part-items 3", 1);
        return itest_main("resync", "rs", (const struct t_suite[]){ { "resync", cases }, { NULL, NULL } });
}
