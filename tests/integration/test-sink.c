/* test-sink -- sinks into files (issue 29 part 2), end to end on the three real daemons
 * started with tools/coord.
 *
 *   bad_input        refused CREATE SINK and DROP statements, each with its SQLSTATE,
 *                    nothing committed for them.
 *   exactly_once     a table written all along (unique values inserted, some deleted)
 *                    and a sink of it; kill -9 of each daemon in turn meanwhile.  The
 *                    file read back: every acknowledged insert is one +1 line, every
 *                    acknowledged delete one -1 line after it, nothing else, no line
 *                    twice; a write whose answer was lost with the adapter is in the
 *                    file exactly when it is in the table; the lines summed are the
 *                    table's contents.
 *   snapshot_false   SNAPSHOT = false starts at the input's committed bound: nothing at
 *                    or before it is written, every later change is.
 *   view             a sink of an aggregate view writes the view's changes.
 *   numeric          numeric columns are written as PostgreSQL prints them.
 *   alter            ALTER SINK k SET FROM: refused forms with their SQLSTATEs; the file
 *                    holds the old relation's updates acknowledged before the ALTER and
 *                    the new one's after it (no snapshot), each once, through a switch to
 *                    a newer materialized view and kill -9 of each daemon; I4: the
 *                    requirements move in the ALTER's transaction (the new input's right
 *                    after it returns, none on the old one), the old input can be
 *                    dropped, the new one not.
 *   pending          I6: a sink whose output is pending (its dataflow failed) keeps
 *                    R(sink, t) and t's bound at its progress - 1 while t is written and
 *                    each daemon is killed and restarted; t stays readable there.
 */
#include <sys/stat.h>

#include "itest.h"

/* One line of a sink file. */
struct line {
        uint64_t time;
        int64_t diff;
        char row[128];
};

/* The file's lines (at most max); -1 when it cannot be read or a line is malformed. */
static int read_lines(const char *path, struct line *v, int max)
{
        FILE *f = fopen(path, "r");
        char buf[512];
        int n = 0;

        if (!f)
                return -1;
        while (fgets(buf, sizeof(buf), f) && n < max) {
                char *p = buf, *e;
                size_t len = strlen(buf);

                if (!len || buf[len - 1] != '\n') {
                        fprintf(stderr, "\n    %s: a torn line [%s]", path, buf);
                        fclose(f);
                        return -1;
                }
                buf[len - 1] = '\0';
                v[n].time = strtoull(p, &e, 10);
                if (*e != '\t')
                        goto bad;
                v[n].diff = strtoll(e + 1, &e, 10);
                if (*e != '\t')
                        goto bad;
                snprintf(v[n].row, sizeof(v[n].row), "%s", e + 1);
                n++;
                continue;
bad:
                fprintf(stderr, "\n    %s: a malformed line [%s]", path, buf);
                fclose(f);
                return -1;
        }
        fclose(f);
        return n;
}

/* The sink's progress (coord_frontiers moves at appends: tick one). */
static uint64_t progress_of(PGconn *c, uint64_t gid)
{
        (void)ok(c, "INSERT INTO tick VALUES (1)");
        return q_u64(c, "SELECT write_frontier FROM coord_frontiers WHERE object_id = %" PRIu64, gid);
}

/* Wait until the sink's progress passes `t`. */
static bool progress_past(PGconn *c, uint64_t gid, uint64_t t)
{
        for (int w = 0; w < 100; w++) {
                if (progress_of(c, gid) > t)
                        return true;
                sleep_ms(100);
        }
        fprintf(stderr, "\n    sink %" PRIu64 " never passed %" PRIu64, gid, t);
        return false;
}

static void test_up(void)
{
        PGconn *c;

        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        c = db();
        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT(ok(c, "CREATE TABLE tick (a int)"));
        PQfinish(c);
}

static void test_bad_input(void)
{
        PGconn *c = db();
        char *p = home_file("b.out"), *full = home_file("full.out");
        uint64_t objects;
        FILE *f;

        CU_ASSERT_FATAL(c && p && full);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE tb (a int)"));
        CU_ASSERT_FATAL(ok(c, "CREATE INDEX tb_i ON tb (a)"));
        f = fopen(full, "w");
        CU_ASSERT_FATAL(f != NULL);
        fputs("someone's data\n", f);
        fclose(f);
        objects = q_u64(c, "SELECT count(*) FROM coord_objects");
        CU_ASSERT(fails_with(c, "CREATE SINK k FROM tb INTO FILE 'relative.out'", "22023"));
        CU_ASSERT(okf(c, "SELECT 1") && fails_with(c, "CREATE SINK k FROM tb INTO FILE '/nonexistent-dir/x.out'", "58030"));
        CU_ASSERT(fails_with(c, "CREATE SINK k FROM tb INTO FILE '/tmp'", "58030"));
        {
                char q[512];
                snprintf(q, sizeof(q), "CREATE SINK k FROM tb INTO FILE '%s'", full);
                CU_ASSERT(fails_with(c, q, "58030"));
                snprintf(q, sizeof(q), "CREATE SINK k FROM tb_i INTO FILE '%s'", p);
                CU_ASSERT(fails_with(c, q, "42809"));
                snprintf(q, sizeof(q), "CREATE SINK k FROM nope INTO FILE '%s'", p);
                CU_ASSERT(fails_with(c, q, "42P01"));
                snprintf(q, sizeof(q), "CREATE SINK k FROM tb INTO '%s'", p);
                CU_ASSERT(fails_with(c, q, "42601"));
                snprintf(q, sizeof(q), "CREATE SINK k FROM tb INTO FILE '%s' WITH (SNAPSHOT = maybe)", p);
                CU_ASSERT(fails_with(c, q, "42601"));
                snprintf(q, sizeof(q), "CREATE SINK k FROM tb INTO FILE '%s' WITH (PARTITIONS = 2)", p);
                CU_ASSERT(fails_with(c, q, "42601"));
                /* a block may hold it (adapter-exec.c note 10); ROLLBACK leaves nothing */
                CU_ASSERT(ok(c, "BEGIN"));
                snprintf(q, sizeof(q), "CREATE SINK k FROM tb INTO FILE '%s'", p);
                CU_ASSERT(ok(c, q));
                CU_ASSERT(ok(c, "ROLLBACK"));
                CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM coord_objects"), objects);
                /* one that works, then what depends on it */
                CU_ASSERT(okf(c, "CREATE SINK k FROM tb INTO FILE '%s'", p));
                CU_ASSERT(okf(c, "CREATE SINK IF NOT EXISTS k FROM tb INTO FILE '%s'", p));
                snprintf(q, sizeof(q), "CREATE SINK k2 FROM tb INTO FILE '%s'", p);
                CU_ASSERT(fails_with(c, q, "42710"));
        }
        CU_ASSERT(fails_with(c, "SELECT * FROM k", "42809"));
        /* a built-in compacts by committed bounds like any input: a sink of it is fine */
        {
                char *o = home_file("objects.out");
                CU_ASSERT(okf(c, "CREATE SINK ko FROM coord_objects INTO FILE '%s'", o));
                CU_ASSERT(ok(c, "DROP SINK ko"));
                free(o);
        }
        CU_ASSERT(fails_with(c, "DROP TABLE tb", "2BP01"));
        CU_ASSERT(fails_with(c, "DROP SINK nope", "42P01"));
        CU_ASSERT(fails_with(c, "DROP SINK tb", "42809"));
        CU_ASSERT(fails_with(c, "DROP TABLE k", "42809"));
        CU_ASSERT(ok(c, "DROP SINK IF EXISTS nope"));
        CU_ASSERT(ok(c, "DROP SINK k"));
        CU_ASSERT(ok(c, "DROP TABLE tb"));
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM coord_objects"), objects - 2);
        free(p);
        free(full);
        PQfinish(c);
}

#define NV 600

static void test_exactly_once(void)
{
        static const Coord__Role roles[] = { COORD__ROLE__ROLE_LIFECYCLE, COORD__ROLE__ROLE_CONTROLLER,
                                             COORD__ROLE__ROLE_ADAPTER };
        /* per value: 0 not written, 1 inserted (acknowledged), 2 insert unknown (the
         * adapter died under it); deleted likewise */
        static int ins[NV], del[NV];
        static struct line lines[4 * NV];
        char *p = home_file("ex.out");
        PGconn *c = db();
        uint64_t k, last;
        int n, bad = 0, v = 0, r_i = 0;

        CU_ASSERT_FATAL(c && p);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE te (a int)"));
        for (; v < 20; v++)
                ins[v] = okf(c, "INSERT INTO te VALUES (%d)", v) ? 1 : 2;
        CU_ASSERT_FATAL(okf(c, "CREATE SINK ke FROM te INTO FILE '%s'", p));
        k = gid_of(c, "ke");
        for (int round = 0; v < NV; v++, round++) {
                PGresult *res;
                char q[128];

                snprintf(q, sizeof(q), "INSERT INTO te VALUES (%d)", v);
                res = PQexec(c, q);
                ins[v] = PQresultStatus(res) == PGRES_COMMAND_OK ? 1 : 2;
                PQclear(res);
                if (v % 5 == 0 && ins[v - 3] == 1) {
                        snprintf(q, sizeof(q), "DELETE FROM te WHERE a = %d", v - 3);
                        res = PQexec(c, q);
                        del[v - 3] = PQresultStatus(res) == PGRES_COMMAND_OK ? 1 : 2;
                        PQclear(res);
                }
                if (PQstatus(c) != CONNECTION_OK)
                        CU_ASSERT_FATAL((c = reconnect(c)) != NULL);
                if (round % 150 == 75 && r_i < (int)ELEMENTSOF(roles)) {
                        kill9_restart(roles[r_i], &c);
                        r_i++;
                }
                if (v % 50 == 0)
                        sleep_ms(20);           /* pace */
        }
        CU_ASSERT_EQUAL(r_i, 3);
        last = q_u64(c, "SELECT mz_now()");
        CU_ASSERT_FATAL(progress_past(c, k, last));
        n = read_lines(p, lines, (int)ELEMENTSOF(lines));
        CU_ASSERT_FATAL(n > 0);
        {
                static int plus[NV], minus[NV];
                static uint64_t tplus[NV];
                char *table = rows_of(c, "SELECT a FROM te");
                int present = 0;

                memset(plus, 0, sizeof(plus));
                memset(minus, 0, sizeof(minus));
                for (int i = 0; i < n; i++) {
                        int a = atoi(lines[i].row);

                        if (i && lines[i].time < lines[i - 1].time) {
                                fprintf(stderr, "\n    line %d goes back in time", i);
                                bad++;
                        }
                        for (int j = i - 1; j >= 0 && lines[j].time == lines[i].time; j--)
                                if (strcmp(lines[j].row, lines[i].row) == 0) {
                                        fprintf(stderr, "\n    line %d repeats (%" PRIu64 ", %s)", i,
                                                lines[i].time, lines[i].row);
                                        bad++;
                                }
                        if (a < 0 || a >= NV || (lines[i].diff != 1 && lines[i].diff != -1)) {
                                fprintf(stderr, "\n    unexpected line (%" PRIu64 ", %" PRId64 ", %s)",
                                        lines[i].time, lines[i].diff, lines[i].row);
                                bad++;
                                continue;
                        }
                        if (lines[i].diff == 1) {
                                plus[a]++;
                                tplus[a] = lines[i].time;
                        } else {
                                minus[a]++;
                                if (!plus[a] || lines[i].time <= tplus[a]) {
                                        fprintf(stderr, "\n    %d retracted before it was inserted", a);
                                        bad++;
                                }
                        }
                }
                for (int a = 0; a < NV; a++) {
                        char key[16];
                        bool in_table;

                        snprintf(key, sizeof(key), "%d", a);
                        in_table = false;
                        for (char *t = table; t && *t;) {
                                size_t l = strcspn(t, ";");
                                if (l == strlen(key) && strncmp(t, key, l) == 0)
                                        in_table = true;
                                t += l + (t[l] == ';');
                        }
                        present += in_table;
                        if ((ins[a] == 1 && plus[a] != 1) || (ins[a] == 2 && plus[a] > 1) ||
                            (ins[a] == 0 && plus[a]) || (del[a] == 1 && minus[a] != 1) ||
                            (del[a] == 0 && minus[a]) || (del[a] == 2 && minus[a] > 1) ||
                            in_table != (plus[a] - minus[a] == 1)) {
                                if (bad < 10)
                                        fprintf(stderr, "\n    value %d: insert %d delete %d, in the file +%d "
                                                "-%d, in the table %d", a, ins[a], del[a], plus[a], minus[a],
                                                in_table);
                                bad++;
                        }
                }
                printf("\n    %d lines, %d rows in the table, %d kills", n, present, r_i);
                free(table);
        }
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT(ok(c, "DROP SINK ke"));
        CU_ASSERT(ok(c, "DROP TABLE te"));
        free(p);
        PQfinish(c);
}

static void test_snapshot_false(void)
{
        static struct line lines[256];
        char *p = home_file("sf.out");
        PGconn *c = db();
        uint64_t t, k, cutoff, b0;
        int n, after = 0, bad = 0;

        CU_ASSERT_FATAL(c && p);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE tf (a int)"));
        t = gid_of(c, "tf");
        CU_ASSERT(ok(c, "INSERT INTO tf VALUES (1), (2)"));
        b0 = q_u64(c, "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, t);
        /* until the table's bound passes those rows (1 s policy, publication ticks) */
        for (int w = 0; w < 60 && q_u64(c, "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, t) <= b0 + 200; w++) {
                CU_ASSERT(ok(c, "INSERT INTO tf VALUES (3)"));
                sleep_ms(100);
        }
        CU_ASSERT_FATAL(okf(c, "CREATE SINK kf FROM tf INTO FILE '%s' WITH (SNAPSHOT = false)", p));
        k = gid_of(c, "kf");
        cutoff = q_u64(c, "SELECT frontier FROM coord_requirements WHERE consumer_id = %" PRIu64, k);
        CU_ASSERT(cutoff > b0);
        CU_ASSERT(cutoff == q_u64(c, "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, t) ||
                  cutoff < q_u64(c, "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, t));
        CU_ASSERT(ok(c, "INSERT INTO tf VALUES (40), (41)"));
        CU_ASSERT(ok(c, "DELETE FROM tf WHERE a = 1"));
        CU_ASSERT_FATAL(progress_past(c, k, q_u64(c, "SELECT mz_now()")));
        n = read_lines(p, lines, (int)ELEMENTSOF(lines));
        CU_ASSERT(n >= 3);
        for (int i = 0; i < n; i++) {
                if (lines[i].time <= cutoff) {
                        fprintf(stderr, "\n    a line at %" PRIu64 " <= cutoff %" PRIu64, lines[i].time, cutoff);
                        bad++;
                }
                after += (strcmp(lines[i].row, "40") == 0 || strcmp(lines[i].row, "41") == 0) && lines[i].diff == 1;
                after += strcmp(lines[i].row, "1") == 0 && lines[i].diff == -1;
        }
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT_EQUAL(after, 3);
        CU_ASSERT(ok(c, "DROP TABLE tf CASCADE"));
        free(p);
        PQfinish(c);
}

static void test_view(void)
{
        static struct line lines[64];
        char *p = home_file("v.out");
        PGconn *c = db();
        uint64_t k;
        int n;

        CU_ASSERT_FATAL(c && p);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE tv (a int)"));
        CU_ASSERT_FATAL(ok(c, "CREATE VIEW vv AS SELECT count(*) AS n, sum(a) AS s FROM tv"));
        CU_ASSERT_FATAL(okf(c, "CREATE SINK kv FROM vv INTO FILE '%s'", p));
        k = gid_of(c, "kv");
        CU_ASSERT(ok(c, "INSERT INTO tv VALUES (5)"));
        CU_ASSERT(ok(c, "INSERT INTO tv VALUES (7)"));
        CU_ASSERT_FATAL(progress_past(c, k, q_u64(c, "SELECT mz_now()")));
        n = read_lines(p, lines, (int)ELEMENTSOF(lines));
        /* (0, NULL) at creation, then (1, 5), then (2, 12), each retracting the last */
        CU_ASSERT_EQUAL_FATAL(n, 5);
        CU_ASSERT(lines[0].diff == 1 && strcmp(lines[0].row, "0\t\\N") == 0);
        CU_ASSERT(strcmp(lines[n - 1].row, "2\t12") == 0 || strcmp(lines[n - 2].row, "2\t12") == 0);
        CU_ASSERT(fails_with(c, "DROP VIEW vv", "2BP01"));
        CU_ASSERT(ok(c, "DROP VIEW vv CASCADE"));
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM coord_objects WHERE name = 'kv'"), 0);
        CU_ASSERT(ok(c, "DROP TABLE tv"));
        free(p);
        PQfinish(c);
}

/* How many lines of v carry `row` with `diff`. */
static int count_rows(const struct line *v, int n, const char *row, int64_t diff)
{
        int k = 0;

        for (int i = 0; i < n; i++)
                k += strcmp(v[i].row, row) == 0 && v[i].diff == diff;
        return k;
}

/* A numeric column is written as PostgreSQL prints it (its scale kept). */
static void test_numeric(void)
{
        static struct line lines[16];
        char *p = home_file("n.out");
        PGconn *c = db();
        uint64_t k;
        int n;

        CU_ASSERT_FATAL(c && p);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE tn (x numeric(10,2), y numeric)"));
        CU_ASSERT_FATAL(okf(c, "CREATE SINK kn FROM tn INTO FILE '%s'", p));
        k = gid_of(c, "kn");
        CU_ASSERT(ok(c, "INSERT INTO tn VALUES (1.5, -0.001), (NULL, 1e3)"));
        CU_ASSERT_FATAL(progress_past(c, k, q_u64(c, "SELECT mz_now()")));
        n = read_lines(p, lines, (int)ELEMENTSOF(lines));
        CU_ASSERT_EQUAL_FATAL(n, 2);
        CU_ASSERT(count_rows(lines, n, "1.50\t-0.001", 1) == 1);
        CU_ASSERT(count_rows(lines, n, "\\N\t1000", 1) == 1);
        CU_ASSERT(ok(c, "DROP TABLE tn CASCADE"));
        free(p);
        PQfinish(c);
}

static void test_alter(void)
{
        static const Coord__Role roles[] = { COORD__ROLE__ROLE_CONTROLLER, COORD__ROLE__ROLE_LIFECYCLE,
                                             COORD__ROLE__ROLE_ADAPTER };
        static struct line lines[512];
        char *p = home_file("alt.out");
        PGconn *c = db();
        uint64_t k, ta, tb, mv, r_new;
        int n, bad = 0;

        CU_ASSERT_FATAL(c && p);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE ta (a int, b text)"));
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE tb (a int, b text)"));
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE tn (a int)"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO ta VALUES (1, 'a-before')"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO tb VALUES (1, 'b-before')"));
        CU_ASSERT_FATAL(okf(c, "CREATE SINK ka FROM ta INTO FILE '%s'", p));
        k = gid_of(c, "ka");
        ta = gid_of(c, "ta");
        tb = gid_of(c, "tb");
        /* refused, nothing changed */
        CU_ASSERT(fails_with(c, "ALTER SINK nope SET FROM tb", "42P01"));
        CU_ASSERT(fails_with(c, "ALTER SINK ta SET FROM tb", "42809"));
        CU_ASSERT(fails_with(c, "ALTER SINK ka SET FROM nope", "42P01"));
        CU_ASSERT(fails_with(c, "ALTER SINK ka SET FROM tn", "42804"));
        CU_ASSERT(fails_with(c, "ALTER SINK ka SET FROM ka", "42809"));
        CU_ASSERT(fails_with(c, "ALTER SINK ka SET FROM coord_sources", "0A000"));
        CU_ASSERT(fails_with(c, "ALTER SINK ka SET tb", "42601"));
        CU_ASSERT(fails_with(c, "ALTER SINK ka SET FROM tb tb", "42601"));
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT(fails_with(c, "ALTER SINK ka SET FROM tb", "25001"));
        CU_ASSERT(ok(c, "ROLLBACK"));
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM coord_requirements WHERE consumer_id = %" PRIu64
                                 " AND input_id = %" PRIu64, k, ta), 1);
        CU_ASSERT(ok(c, "ALTER SINK ka SET FROM ta"));          /* the same: nothing to do */

        CU_ASSERT(ok(c, "INSERT INTO ta VALUES (2, 'a-acked')"));
        CU_ASSERT_FATAL(ok(c, "ALTER SINK ka SET FROM tb"));
        /* I4: moved in the same transaction, visible as soon as it returned */
        r_new = q_u64(c, "SELECT frontier FROM coord_requirements WHERE consumer_id = %" PRIu64
                         " AND input_id = %" PRIu64, k, tb);
        CU_ASSERT(r_new > 0);
        CU_ASSERT(r_new >= q_u64(c, "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, tb));
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM coord_requirements WHERE consumer_id = %" PRIu64
                                 " AND input_id = %" PRIu64, k, ta), 0);
        CU_ASSERT(ok(c, "INSERT INTO ta VALUES (3, 'a-after')"));
        CU_ASSERT(ok(c, "INSERT INTO tb VALUES (2, 'b-after')"));
        CU_ASSERT(fails_with(c, "DROP TABLE tb", "2BP01"));
        CU_ASSERT(ok(c, "DROP TABLE ta"));
        /* a newer materialized view: a larger GlobalId than the sink */
        CU_ASSERT_FATAL(ok(c, "CREATE MATERIALIZED VIEW mb AS SELECT a + 100 AS a, b FROM tb"));
        mv = gid_of(c, "mb");
        CU_ASSERT(mv > k);
        CU_ASSERT_FATAL(ok(c, "ALTER SINK ka SET FROM mb"));
        CU_ASSERT(ok(c, "INSERT INTO tb VALUES (3, 'mb-1')"));
        for (size_t i = 0; i < ELEMENTSOF(roles); i++) {
                CU_ASSERT(okf(c, "INSERT INTO tb VALUES (%zu, 'mb-kill-before')", 10 + i));
                kill9_restart(roles[i], &c);
                CU_ASSERT(okf(c, "INSERT INTO tb VALUES (%zu, 'mb-kill-after')", 20 + i));
        }
        CU_ASSERT_FATAL(progress_past(c, k, q_u64(c, "SELECT mz_now()")));
        n = read_lines(p, lines, (int)ELEMENTSOF(lines));
        CU_ASSERT_FATAL(n > 0);
        /* the old relation up to the ALTER, the new ones after, each once */
        bad += count_rows(lines, n, "1\ta-before", 1) != 1;
        bad += count_rows(lines, n, "2\ta-acked", 1) != 1;
        bad += count_rows(lines, n, "3\ta-after", 1) != 0;
        bad += count_rows(lines, n, "1\tb-before", 1) != 0;     /* no snapshot of tb */
        bad += count_rows(lines, n, "2\tb-after", 1) != 1;
        bad += count_rows(lines, n, "102\tb-after", 1) != 0;    /* no snapshot of mb */
        bad += count_rows(lines, n, "103\tmb-1", 1) != 1;
        for (int i = 0; i < 3; i++) {
                char row[64];

                snprintf(row, sizeof(row), "%d\tmb-kill-before", 110 + i);
                bad += count_rows(lines, n, row, 1) != 1;
                snprintf(row, sizeof(row), "%d\tmb-kill-after", 120 + i);
                bad += count_rows(lines, n, row, 1) != 1;
        }
        for (int i = 1; i < n; i++)
                bad += lines[i].time < lines[i - 1].time;
        if (bad)
                for (int i = 0; i < n; i++)
                        fprintf(stderr, "\n    %" PRIu64 " %+lld %s", lines[i].time, (long long)lines[i].diff,
                                lines[i].row);
        CU_ASSERT_EQUAL(bad, 0);
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM coord_requirements WHERE consumer_id = %" PRIu64, k), 1);
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM coord_requirements WHERE consumer_id = %" PRIu64
                                 " AND input_id = %" PRIu64, k, mv), 1);
        CU_ASSERT_EQUAL(t_sh("%s check >/dev/null", coord_cmd), 0);
        CU_ASSERT(ok(c, "DROP TABLE tb CASCADE"));
        CU_ASSERT(ok(c, "DROP TABLE tn"));
        free(p);
        PQfinish(c);
}

static void test_pending(void)
{
        static const Coord__Role roles[] = { COORD__ROLE__ROLE_LIFECYCLE, COORD__ROLE__ROLE_CONTROLLER,
                                             COORD__ROLE__ROLE_ADAPTER };
        char *p = home_file("p.out");
        PGconn *c = db();
        uint64_t t, k, r0, n0;
        int j = 0;

        CU_ASSERT_FATAL(c && p);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE tp (a int)"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO tp VALUES (1), (2)"));
        CU_ASSERT_FATAL(ok(c, "CREATE VIEW vp AS SELECT 100 / a AS q FROM tp"));
        CU_ASSERT_FATAL(okf(c, "CREATE SINK kp FROM vp INTO FILE '%s'", p));
        t = gid_of(c, "tp");
        k = gid_of(c, "kp");
        CU_ASSERT_FATAL(progress_past(c, k, q_u64(c, "SELECT mz_now()")));
        /* its dataflow fails: its output is pending from here on */
        CU_ASSERT_FATAL(ok(c, "INSERT INTO tp VALUES (0)"));
        for (int i = 0; i < 25; i++, j++) {
                CU_ASSERT(okf(c, "INSERT INTO tp VALUES (%d)", 10 + j));
                sleep_ms(100);                  /* pace: time passes */
        }
        r0 = q_u64(c, "SELECT frontier FROM coord_requirements WHERE consumer_id = %" PRIu64, k);
        n0 = q_u64(c, "SELECT count(*) FROM tp AS OF %" PRIu64, r0);
        CU_ASSERT_FATAL(r0 > 0 && n0 >= 2);
        for (size_t i = 0; i < ELEMENTSOF(roles); i++) {
                kill9_restart(roles[i], &c);
                for (int w = 0; w < 25; w++, j++) {
                        CU_ASSERT(okf(c, "INSERT INTO tp VALUES (%d)", 10 + j));
                        sleep_ms(100);          /* pace: time passes */
                }
                printf("\n    after kill -9 of the %s: R(kp, tp) %" PRIu64 " (%" PRIu64 " before), bound(tp) %" PRIu64,
                       node_role_name(roles[i]),
                       q_u64(c, "SELECT frontier FROM coord_requirements WHERE consumer_id = %" PRIu64, k), r0,
                       q_u64(c, "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, t));
                CU_ASSERT_EQUAL(q_u64(c, "SELECT frontier FROM coord_requirements WHERE consumer_id = %" PRIu64, k), r0);
                CU_ASSERT(q_u64(c, "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, t) <= r0);
                CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM tp AS OF %" PRIu64, r0), n0);
        }
        CU_ASSERT(ok(c, "DROP SINK kp"));
        for (int w = 0; w < 30 && q_u64(c, "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, t) <= r0; w++, j++) {
                CU_ASSERT(okf(c, "INSERT INTO tp VALUES (%d)", 10 + j));
                sleep_ms(100);
        }
        CU_ASSERT(q_u64(c, "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, t) > r0);
        CU_ASSERT(ok(c, "DROP TABLE tp CASCADE"));
        free(p);
        PQfinish(c);
}

int main(void)
{
        static const struct t_case cases[] = {
                { "up", test_up },
                { "bad_input", test_bad_input },
                { "exactly_once_kill9_each", test_exactly_once },
                { "snapshot_false", test_snapshot_false },
                { "view", test_view },
                { "numeric", test_numeric },
                { "alter_kill9_each", test_alter },
                { "pending_kill9_each", test_pending },
                { "check", itest_check },
                { NULL, NULL },
        };
        return itest_main("sink", "s", (const struct t_suite[]){ { "sink", cases }, { NULL, NULL } });
}
