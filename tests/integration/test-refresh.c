/* test-refresh -- materialized views on a refresh schedule (issue 29 part 3), end to end
 * on the three real daemons started with tools/coord.
 *
 *   bad_input        REFRESH options that are refused, each with its SQLSTATE, and
 *                    nothing committed for them; REFRESH ON COMMIT is a plain view.
 *   between          a view refreshed hourly keeps its contents while its table moves;
 *                    REFRESH AT CREATION alone: populated once, then its upper is empty
 *                    (int8's max in coord_frontiers), its requirement released (the
 *                    table's bound passes the refresh), and it stays readable.
 *   contents         I9 for refresh views: REFRESH EVERY '500ms' over a table written
 *                    all along, with kill -9 of the controller in the middle (the view
 *                    resumes from its durable upper with a correction): at every
 *                    readable time x the view holds exactly the table's rows at the
 *                    last refresh at or before x -- no refresh lost, doubled or torn.
 *   pending_*        I6: a view whose first refresh is pending (its dataflow failed
 *                    before it, so it never happens) keeps R(view, t) at that refresh
 *                    time, and t's bound at or below it, while t is written and each
 *                    daemon in turn is killed with kill -9 and restarted; t AS OF the
 *                    refresh time still reads what it held then.  Without the
 *                    requirement t's 1 s policy moves its bound past it within a tick.
 *   controller_down  the controller is killed before a view's refresh time and started
 *                    after it: the refresh happens at the right time with the table's
 *                    contents at that time (protected meanwhile), not later ones.
 */
#include "itest.h"

#define INT8_MAX_TEXT "9223372036854775807"

static char *q_rows(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *q_rows(PGconn *c, const char *fmt, ...)
{
        char *q = NULL, *r;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&q, fmt, ap) < 0)
                q = NULL;
        va_end(ap);
        r = q ? rows_of(c, q) : NULL;
        free(q);
        return r;
}

static uint64_t bound_of(PGconn *c, uint64_t gid)
{
        return q_u64(c, "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, gid);
}

static uint64_t req_of(PGconn *c, uint64_t consumer, uint64_t input)
{
        return q_u64(c, "SELECT frontier FROM coord_requirements WHERE consumer_id = %" PRIu64
                        " AND input_id = %" PRIu64, consumer, input);
}

static void test_up(void)
{
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

static void test_bad_input(void)
{
        PGconn *c = db();
        uint64_t objects;

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE b (a int)"));
        objects = q_u64(c, "SELECT count(*) FROM coord_objects");
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW x WITH (REFRESH EVERY '0s') AS SELECT a FROM b", "22023"));
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW x WITH (REFRESH EVERY 'soon') AS SELECT a FROM b", "22007"));
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW x WITH (REFRESH AT 5) AS SELECT a FROM b", "22023"));
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW x WITH (REFRESH AT mz_now() - 60000) AS SELECT a FROM b", "22023"));
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW x WITH (REFRESH AT -1) AS SELECT a FROM b", "22023"));
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW x WITH (REFRESH AT 'x') AS SELECT a FROM b", "22P02"));
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW x WITH (REFRESH AT true) AS SELECT a FROM b", "42804"));
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW x WITH (REFRESH AT a) AS SELECT a FROM b", "42703"));
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW x WITH (REFRESH AT mz_now() + 1/0) AS SELECT a FROM b", "22012"));
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW x WITH (REFRESH SOMETIMES) AS SELECT a FROM b", "42601"));
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW x WITH (REFRESH AT) AS SELECT a FROM b", "42601"));
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW x WITH (REFRESH EVERY '1s', REFRESH EVERY '2s') "
                                "AS SELECT a FROM b", "42601"));
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW x WITH (REFRESH ON COMMIT, REFRESH AT CREATION) "
                                "AS SELECT a FROM b", "42601"));
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW x WITH (REFRESH EVERY '1s' ALIGNED TO) "
                                "AS SELECT a FROM b", "42601"));
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW x WITH (REFRESH AT CREATION, fillfactor = 5) "
                                "AS SELECT a FROM b", "0A000"));
        CU_ASSERT(fails_with(c, "CREATE VIEW x WITH (REFRESH AT CREATION) AS SELECT a FROM b", "42601"));
        /* nothing of them was committed */
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM coord_objects"), objects);
        /* ON COMMIT is the continuous default; the options combine with RETAIN HISTORY
         * in any order, an expression may hold commas */
        CU_ASSERT(ok(c, "CREATE MATERIALIZED VIEW oc WITH (REFRESH ON COMMIT) AS SELECT a FROM b"));
        CU_ASSERT(ok(c, "INSERT INTO b VALUES (1)"));
        CU_ASSERT(rows_are(c, "SELECT * FROM oc", "1"));
        CU_ASSERT(ok(c, "CREATE MATERIALIZED VIEW rh WITH (RETAIN HISTORY FOR '1h', REFRESH AT CREATION, "
                        "REFRESH AT coalesce(mz_now(), 0) + 3600000) AS SELECT a FROM b"));
        CU_ASSERT(rows_are(c, "SELECT * FROM rh", "1"));
        /* SHOW OBJECTS spells the kind as Materialize does */
        CU_ASSERT(rows_are(c, "SHOW OBJECTS", "b|table;oc|materialized-view;rh|materialized-view"));
        CU_ASSERT(ok(c, "DROP MATERIALIZED VIEW rh"));
        CU_ASSERT(ok(c, "DROP TABLE b CASCADE"));
        PQfinish(c);
}

static void test_between(void)
{
        PGconn *c = db();
        uint64_t hr, once, t, r1;
        char *s;

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE tb (a int)"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO tb VALUES (1), (2)"));
        CU_ASSERT_FATAL(ok(c, "CREATE MATERIALIZED VIEW hourly WITH (REFRESH EVERY '1 hour') AS "
                              "SELECT count(*) AS n, sum(a) AS s FROM tb"));
        CU_ASSERT_FATAL(ok(c, "CREATE MATERIALIZED VIEW once WITH (REFRESH AT CREATION) AS SELECT a FROM tb"));
        hr = gid_of(c, "hourly");
        once = gid_of(c, "once");
        t = gid_of(c, "tb");
        r1 = bound_of(c, hr);           /* its birth bound: the first refresh, at creation */
        CU_ASSERT(r1 > 0);
        CU_ASSERT(rows_are(c, "SELECT * FROM hourly", "2|3"));
        CU_ASSERT(ok(c, "INSERT INTO tb VALUES (3)"));
        CU_ASSERT(ok(c, "DELETE FROM tb WHERE a = 1"));
        CU_ASSERT(rows_are(c, "SELECT a FROM tb", "2;3"));
        CU_ASSERT(rows_are(c, "SELECT * FROM hourly", "2|3"));  /* the last refresh's */
        CU_ASSERT(rows_are(c, "SELECT * FROM once", "1;2"));
        /* Its requirement on tb follows tb's writes up to its next refresh (the
         * quiet-objects rule: tb's contents at the refresh are its latest ones so far). */
        CU_ASSERT(req_of(c, hr, t) >= r1 && req_of(c, hr, t) <= r1 + 3600000);
        (void)publications_pass(2, 5000);
        CU_ASSERT(ok(c, "INSERT INTO tb VALUES (4)"));  /* coord_frontiers rows move */
        CU_ASSERT_EQUAL(q_u64(c, "SELECT write_frontier FROM coord_frontiers WHERE object_id = %" PRIu64, hr),
                        r1 + 3600000);
        s = q_rows(c, "SELECT write_frontier FROM coord_frontiers WHERE object_id = %" PRIu64, once);
        CU_ASSERT(s && strcmp(s, INT8_MAX_TEXT) == 0);
        free(s);
        /* released: nothing holds tb's bound at the single refresh any more */
        CU_ASSERT(bound_of(c, t) > bound_of(c, once) || bound_of(c, t) > r1);
        CU_ASSERT(req_of(c, hr, t) <= r1 + 3600000);
        CU_ASSERT(bound_of(c, t) <= req_of(c, hr, t));
        CU_ASSERT(rows_are(c, "SELECT * FROM once", "1;2"));
        /* coord_refreshes: the last refresh done and the next one */
        s = q_rows(c, "SELECT last_refresh, coalesce(next_refresh, -1) FROM coord_refreshes "
                      "WHERE object_id = %" PRIu64, hr);
        CU_ASSERT(s && (uint64_t)atoll(s) == r1 && strtoull(strchr(s, '|') + 1, NULL, 10) == r1 + 3600000);
        free(s);
        s = q_rows(c, "SELECT last_refresh, coalesce(next_refresh, -1) FROM coord_refreshes "
                      "WHERE object_id = %" PRIu64, once);
        /* its one refresh: at its creation, just after hourly's first; past it, its
         * bound may move on (its contents no longer change) */
        CU_ASSERT(s && (uint64_t)atoll(s) >= r1 && (uint64_t)atoll(s) <= bound_of(c, once) &&
                  strcmp(strchr(s, '|'), "|-1") == 0);
        free(s);
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM coord_refreshes WHERE object_id = %" PRIu64, t), 0);
        /* a retired view (once) still counts as installed until it is dropped */
        CU_ASSERT_EQUAL(stat_of(COORD__ROLE__ROLE_CONTROLLER, "mvs"), 2);
        CU_ASSERT(ok(c, "DROP MATERIALIZED VIEW once"));
        for (int w = 0; w < 30 && stat_of(COORD__ROLE__ROLE_CONTROLLER, "mvs") != 1; w++)
                sleep_ms(100);          /* the follower enacts the drop */
        CU_ASSERT_EQUAL(stat_of(COORD__ROLE__ROLE_CONTROLLER, "mvs"), 1);
        CU_ASSERT(ok(c, "CREATE MATERIALIZED VIEW once WITH (REFRESH AT CREATION) AS SELECT a FROM tb "
                        "WHERE a < 3"));
        /* a completed view comes back complete after a controller restart */
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        CU_ASSERT(rows_are(c, "SELECT * FROM once", "2"));
        CU_ASSERT(rows_are(c, "SELECT * FROM hourly", "2|3"));
        CU_ASSERT_EQUAL(q_u64(c, "SELECT next_refresh FROM coord_refreshes WHERE object_id = %" PRIu64, hr),
                        r1 + 3600000);
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM coord_refreshes r JOIN coord_objects o ON "
                                 "o.id = r.object_id WHERE o.name = 'once' AND r.next_refresh IS NULL "
                                 "AND r.last_refresh IS NOT NULL"), 1);
        CU_ASSERT(ok(c, "DROP TABLE tb CASCADE"));
        PQfinish(c);
}

/* Every readable time x of the view in [from, to) (step ms): its rows at x are the
 * table's at the last refresh at or before x (refreshes at aligned + k * every). */
static int check_contents(PGconn *c, const char *view, const char *table, uint64_t from,
                          uint64_t to, uint64_t aligned, uint64_t every, uint64_t step)
{
        int bad = 0, n = 0;

        for (uint64_t x = from; x < to; x += step, n++) {
                uint64_t r = aligned + (x - aligned) / every * every;
                char *got = q_rows(c, "SELECT a FROM %s AS OF %" PRIu64, view, x);
                char *want = q_rows(c, "SELECT a FROM %s AS OF %" PRIu64, table, r);

                if (!got || !want || strcmp(got, want) != 0) {
                        if (bad < 3)
                                fprintf(stderr, "\n    I9: %s AS OF %" PRIu64 " = [%.80s], %s AS OF %" PRIu64
                                        " = [%.80s]", view, x, got ? got : "(error)", table, r,
                                        want ? want : "(error)");
                        bad++;
                }
                free(got);
                free(want);
        }
        printf("\n    %d times compared, %d differ", n, bad);
        return bad;
}

static void test_contents(void)
{
        PGconn *c = db();
        uint64_t now, aligned, first, last_insert, upper, v;
        const uint64_t every = 500;

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE tc (a int)"));
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE tick (a int)"));
        CU_ASSERT_FATAL(ok(c, "ALTER TABLE tc SET (RETAIN HISTORY = FOR '1h')"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO tc VALUES (0)"));
        now = q_u64(c, "SELECT mz_now()");
        aligned = now / 1000 * 1000 + 137;      /* not a multiple of the interval */
        CU_ASSERT_FATAL(okf(c, "CREATE MATERIALIZED VIEW mc WITH (REFRESH EVERY '%" PRIu64 "ms' ALIGNED TO %"
                               PRIu64 ", RETAIN HISTORY FOR '1h') AS SELECT a FROM tc", every, aligned));
        v = gid_of(c, "mc");
        first = bound_of(c, v);
        CU_ASSERT_FATAL(first > 0);
        CU_ASSERT_EQUAL((first - aligned) % every, 0);
        for (int k = 1; k <= 60; k++) {
                CU_ASSERT(okf(c, "INSERT INTO tc VALUES (%d)", k));
                if (k % 7 == 0)
                        CU_ASSERT(okf(c, "DELETE FROM tc WHERE a = %d", k - 3));
                if (k == 30) {
                        /* the controller dies with a refresh's output pending */
                        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
                        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
                }
                sleep_ms(40);                   /* pace */
        }
        last_insert = q_u64(c, "SELECT mz_now()");
        /* until a refresh after the last write is durable */
        for (int w = 0; w < 100; w++) {
                CU_ASSERT(ok(c, "INSERT INTO tick VALUES (1)"));    /* coord_frontiers rows move */
                upper = q_u64(c, "SELECT write_frontier FROM coord_frontiers WHERE object_id = %" PRIu64, v);
                if (upper > last_insert + every)
                        break;
                sleep_ms(100);
        }
        CU_ASSERT_FATAL(upper > last_insert + every);
        CU_ASSERT_EQUAL((upper - aligned) % every, 0);  /* an upper is a refresh time */
        CU_ASSERT_EQUAL(check_contents(c, "mc", "tc", first, upper, aligned, every, 97), 0);
        CU_ASSERT(ok(c, "DROP TABLE tc CASCADE"));
        CU_ASSERT(ok(c, "DROP TABLE tick"));
        PQfinish(c);
}

/* I6 under kill -9 of each daemon in turn. */
static void test_pending(void)
{
        static const Coord__Role roles[] = { COORD__ROLE__ROLE_LIFECYCLE, COORD__ROLE__ROLE_CONTROLLER,
                                             COORD__ROLE__ROLE_ADAPTER };
        PGconn *c = db();
        uint64_t t, v, r1, n1;
        int k = 0;

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE tp (a int)"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO tp VALUES (1), (2)"));
        CU_ASSERT_FATAL(ok(c, "CREATE MATERIALIZED VIEW mp WITH (REFRESH AT mz_now() + 1500) AS "
                              "SELECT 100 / a AS q FROM tp"));
        /* Its dataflow fails before its refresh: the refresh stays pending for good. */
        CU_ASSERT_FATAL(ok(c, "INSERT INTO tp VALUES (0)"));
        t = gid_of(c, "tp");
        v = gid_of(c, "mp");
        r1 = req_of(c, v, t);
        CU_ASSERT_FATAL(r1 > 0);
        CU_ASSERT_EQUAL(bound_of(c, v), r1);
        for (int i = 0; i < 20; i++, k++) {
                CU_ASSERT(okf(c, "INSERT INTO tp VALUES (%d)", 10 + k));
                sleep_ms(100);                  /* pace: time passes */
        }
        n1 = q_u64(c, "SELECT count(*) FROM tp AS OF %" PRIu64, r1);
        CU_ASSERT_FATAL(n1 >= 3);
        for (size_t i = 0; i < ELEMENTSOF(roles); i++) {
                kill9_restart(roles[i], &c);
                for (int j = 0; j < 25; j++, k++) {
                        CU_ASSERT(okf(c, "INSERT INTO tp VALUES (%d)", 10 + k));
                        sleep_ms(100);          /* pace: time passes */
                }
                printf("\n    after kill -9 of the %s: R(mp, tp) %" PRIu64 " (refresh %" PRIu64 "), bound(tp) %"
                       PRIu64 ", now %" PRIu64, node_role_name(roles[i]), req_of(c, v, t), r1, bound_of(c, t),
                       q_u64(c, "SELECT mz_now()"));
                CU_ASSERT_EQUAL(req_of(c, v, t), r1);
                CU_ASSERT(bound_of(c, t) <= r1);
                CU_ASSERT(q_u64(c, "SELECT min(read_frontier) FROM coord_frontiers WHERE object_id = %" PRIu64, t) <= r1);
                CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM tp AS OF %" PRIu64, r1), n1);
                /* pending: no refresh done yet, the next is r1 */
                CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM coord_refreshes WHERE object_id = %" PRIu64
                                         " AND last_refresh IS NULL AND next_refresh = %" PRIu64, v, r1), 1);
        }
        CU_ASSERT(fails_with(c, "SELECT * FROM mp", "22012"));
        /* Dropping the view releases the table. */
        CU_ASSERT(ok(c, "DROP MATERIALIZED VIEW mp"));
        for (int j = 0; j < 30 && bound_of(c, t) <= r1; j++, k++) {
                CU_ASSERT(okf(c, "INSERT INTO tp VALUES (%d)", 10 + k));
                sleep_ms(100);
        }
        CU_ASSERT(bound_of(c, t) > r1);
        CU_ASSERT(ok(c, "DROP TABLE tp"));
        PQfinish(c);
}

static void test_controller_down(void)
{
        PGconn *c = db();
        uint64_t t, v, r1, upper = 0;

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE td (a int)"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO td VALUES (1)"));
        CU_ASSERT_FATAL(ok(c, "CREATE MATERIALIZED VIEW md WITH (REFRESH AT mz_now() + 1000) AS SELECT a FROM td"));
        t = gid_of(c, "td");
        v = gid_of(c, "md");
        r1 = req_of(c, v, t);
        CU_ASSERT(ok(c, "INSERT INTO td VALUES (2)"));
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
        sleep_ms(1500);                 /* past the refresh time */
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        for (int k = 0; k < 10; k++) {
                CU_ASSERT(okf(c, "INSERT INTO td VALUES (%d)", 3 + k));
                sleep_ms(100);                  /* pace: time passes */
        }
        for (int w = 0; w < 50; w++) {
                upper = q_u64(c, "SELECT write_frontier FROM coord_frontiers WHERE object_id = %" PRIu64, v);
                if (upper > r1)
                        break;
                CU_ASSERT(okf(c, "INSERT INTO td VALUES (%d)", 100 + w));
                sleep_ms(100);
        }
        CU_ASSERT_EQUAL(upper, (uint64_t)INT64_MAX);
        /* td held 1 and 2 at the refresh time (the controller was down until after it,
         * and the later rows came after its restart) */
        CU_ASSERT(rows_are(c, "SELECT a FROM md", "1;2"));
        CU_ASSERT(ok(c, "DROP TABLE td CASCADE"));
        PQfinish(c);
}

int main(void)
{
        static const struct t_case cases[] = {
                { "up", test_up },
                { "bad_input", test_bad_input },
                { "between", test_between },
                { "contents", test_contents },
                { "pending_kill9_each", test_pending },
                { "controller_down", test_controller_down },
                { "check", itest_check },       /* refresh items included (I10) */
                { NULL, NULL },
        };

        return itest_main("refresh", "r", (const struct t_suite[]){ { "refresh", cases }, { NULL, NULL } });
}
