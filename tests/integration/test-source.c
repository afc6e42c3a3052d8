/* test-source -- sources (issue 29 part 1), end to end on the three real daemons started
 * with tools/coord.
 *
 *   bad_input       refused CREATE SOURCE / DROP SOURCE statements, each with its
 *                   SQLSTATE, nothing committed for them.
 *   counter         LOAD GENERATOR COUNTER (TICK INTERVAL, UP TO): 1..n exactly, its
 *                   progress says n, a materialized view over it follows.
 *   file_kill9      a file written by a thread all along (lines of different lengths,
 *                   some written in two pieces), kill -9 of the controller twice and of
 *                   the follower and the adapter once meanwhile: the source's rows are
 *                   exactly the file's lines (none lost, none twice), its progress is
 *                   the file's length, and at every check the remap (its progress) is
 *                   kept readable where ingestion resumes: R(source, progress) below
 *                   both uppers, the progress's bound at or below it (DESIGN section 2).
 *   csv             quoting, NULL for an empty field; a line with the wrong field count
 *                   stops the source there, what came before stays, the rest waits.
 *   shrink          a file cut below what was read: the source stops with an error and
 *                   keeps its rows; it stays readable (its upper moves on).
 *   drop            DROP SOURCE takes its progress with it; the progress alone cannot
 *                   be dropped; a view over it needs CASCADE.
 */
#include <pthread.h>
#include <sys/stat.h>

#include "itest.h"

static uint64_t file_size(const char *path)
{
        struct stat st;

        return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Wait until source `name`'s progress reaches `offset` (up to 20 s). */
static bool progress_reaches(PGconn *c, const char *name, uint64_t offset)
{
        uint64_t got = 0;

        for (int w = 0; w < 200; w++) {
                got = q_u64(c, "SELECT coalesce(max(\"offset\"), 0) FROM %s_progress", name);
                if (got >= offset)
                        return got == offset;
                sleep_ms(100);
        }
        fprintf(stderr, "\n    %s_progress stays at %" PRIu64 ", not %" PRIu64, name, got, offset);
        return false;
}

static void test_up(void)
{
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

static void test_bad_input(void)
{
        PGconn *c = db();
        char *p = home_file("b.txt");
        uint64_t objects;
        char q[512];
        FILE *f;

        CU_ASSERT_FATAL(c && p);
        f = fopen(p, "w");
        CU_ASSERT_FATAL(f != NULL);
        fclose(f);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE taken_progress (a int)"));
        objects = q_u64(c, "SELECT count(*) FROM coord_objects");
        CU_ASSERT(fails_with(c, "CREATE SOURCE s FROM LOAD GENERATOR FOO", "42601"));
        CU_ASSERT(fails_with(c, "CREATE SOURCE s FROM LOAD GENERATOR COUNTER (TICK INTERVAL '0s')", "22023"));
        CU_ASSERT(fails_with(c, "CREATE SOURCE s FROM LOAD GENERATOR COUNTER (TICK INTERVAL 'soon')", "22007"));
        CU_ASSERT(fails_with(c, "CREATE SOURCE s FROM LOAD GENERATOR COUNTER (UP TO 0)", "42601"));
        CU_ASSERT(fails_with(c, "CREATE SOURCE s FROM LOAD GENERATOR COUNTER (COLOR 'red')", "42601"));
        CU_ASSERT(fails_with(c, "CREATE SOURCE s FROM FILE 'relative.txt' (FORMAT TEXT)", "22023"));
        CU_ASSERT(fails_with(c, "CREATE SOURCE s FROM FILE '/nonexistent-dir/x.txt' (FORMAT TEXT)", "58030"));
        CU_ASSERT(fails_with(c, "CREATE SOURCE s FROM FILE '/tmp' (FORMAT TEXT)", "58030"));
        snprintf(q, sizeof(q), "CREATE SOURCE s FROM FILE '%s' (FORMAT XML)", p);
        CU_ASSERT(fails_with(c, q, "42601"));
        snprintf(q, sizeof(q), "CREATE SOURCE s FROM FILE '%s' (FORMAT CSV)", p);
        CU_ASSERT(fails_with(c, q, "42601"));
        snprintf(q, sizeof(q), "CREATE SOURCE s FROM FILE '%s' (FORMAT CSV WITH 0 COLUMNS)", p);
        CU_ASSERT(fails_with(c, q, "22023"));
        snprintf(q, sizeof(q), "CREATE SOURCE taken_progress FROM FILE '%s' (FORMAT TEXT)", p);
        CU_ASSERT(fails_with(c, q, "42P07"));
        snprintf(q, sizeof(q), "CREATE SOURCE taken FROM FILE '%s' (FORMAT TEXT)", p);
        CU_ASSERT(fails_with(c, q, "42P07"));
        /* a block may hold it (adapter-exec.c note 10); ROLLBACK leaves nothing */
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT(ok(c, "CREATE SOURCE s FROM LOAD GENERATOR COUNTER"));
        CU_ASSERT(ok(c, "ROLLBACK"));
        CU_ASSERT(fails_with(c, "DROP SOURCE nope", "42P01"));
        CU_ASSERT(ok(c, "DROP SOURCE IF EXISTS nope"));
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM coord_objects"), objects);
        /* a source is not written by INSERT */
        CU_ASSERT(ok(c, "CREATE SOURCE s FROM LOAD GENERATOR COUNTER (UP TO 1)"));
        CU_ASSERT(fails_with(c, "INSERT INTO s VALUES (5)", "42809"));
        CU_ASSERT(fails_with(c, "DROP TABLE s", "42809"));
        CU_ASSERT(ok(c, "DROP SOURCE s"));
        CU_ASSERT(ok(c, "DROP TABLE taken_progress"));
        free(p);
        PQfinish(c);
}

static void test_counter(void)
{
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE SOURCE cnt FROM LOAD GENERATOR COUNTER (TICK INTERVAL '50ms', UP TO 7)"));
        CU_ASSERT_FATAL(ok(c, "CREATE MATERIALIZED VIEW cnt_sum AS SELECT count(*) AS n, sum(counter) AS s FROM cnt"));
        CU_ASSERT(progress_reaches(c, "cnt", 7));
        CU_ASSERT(rows_are(c, "SELECT counter FROM cnt", "1;2;3;4;5;6;7"));
        CU_ASSERT(rows_become(c, "SELECT * FROM cnt_sum", "7|28", 10000));
        CU_ASSERT(rows_are(c, "SELECT * FROM cnt_progress", "7"));
        /* coord_sources: live, and refused where history is needed */
        CU_ASSERT(rows_are(c, "SELECT s.\"offset\", s.status, s.error IS NULL, s.upper > 0 FROM coord_sources s "
                              "JOIN coord_objects o ON o.id = s.source_id WHERE o.name = 'cnt'",
                           "7|finished|t|t"));
        CU_ASSERT(q_u64(c, "SELECT count(*) FROM coord_sources s JOIN coord_objects o ON o.id = s.progress_id "
                           "WHERE o.name = 'cnt_progress'") == 1);
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW cs_mv AS SELECT * FROM coord_sources", "0A000"));
        CU_ASSERT(fails_with(c, "CREATE INDEX cs_i ON coord_sources (source_id)", "0A000"));
        CU_ASSERT(fails_with(c, "SELECT * FROM coord_sources AS OF 1", "0A000"));
        CU_ASSERT(ok(c, "CREATE VIEW cs_v AS SELECT source_id FROM coord_sources"));
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW cs_mv AS SELECT * FROM cs_v", "0A000"));
        CU_ASSERT(fails_with(c, "INSERT INTO coord_sources VALUES (1, 2, 3, 4, 'x', NULL)", "42501"));
        CU_ASSERT(fails_with(c, "DROP TABLE coord_sources", "42809"));
        CU_ASSERT(ok(c, "DROP VIEW cs_v"));
        CU_ASSERT(ok(c, "DROP SOURCE cnt CASCADE"));
        /* The controller forgets it when the follower enacts the drop. */
        CU_ASSERT(rows_become(c, "SELECT count(*) FROM coord_sources", "0", 10000));
        PQfinish(c);
}

struct writer {
        const char *path;
        volatile bool stop;
        int lines;
};

/* Lines "w<N>-<padding>", some written in two pieces with a pause between. */
static void *writer_main(void *arg)
{
        struct writer *w = arg;
        FILE *f = fopen(w->path, "a");

        if (!f)
                return NULL;
        setvbuf(f, NULL, _IONBF, 0);
        while (!w->stop) {
                int n = w->lines++;

                if (n % 7 == 3) {
                        fprintf(f, "w%d-", n);
                        usleep(3000);           /* a torn line for a while */
                        fprintf(f, "%.*s\n", n % 40, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
                } else {
                        fprintf(f, "w%d-%.*s\n", n, n % 40, "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy");
                }
                usleep(2000);                   /* pace */
        }
        fclose(f);
        return NULL;
}

/* R(source, progress) below both uppers and the progress's bound at or below it. */
static int check_remap_protected(PGconn *c, uint64_t src, uint64_t prog)
{
        uint64_t r = q_u64(c, "SELECT frontier FROM coord_requirements WHERE consumer_id = %" PRIu64
                              " AND input_id = %" PRIu64, src, prog);
        uint64_t b = q_u64(c, "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, prog);
        uint64_t since = q_u64(c, "SELECT read_frontier FROM coord_frontiers WHERE object_id = %" PRIu64, prog);

        if (!r || b > r || since > b) {
                fprintf(stderr, "\n    remap %" PRIu64 ": R %" PRIu64 ", bound %" PRIu64 ", since %" PRIu64,
                        prog, r, b, since);
                return 1;
        }
        return 0;
}

static void test_file_kill9(void)
{
        static const Coord__Role kills[] = { COORD__ROLE__ROLE_CONTROLLER, COORD__ROLE__ROLE_LIFECYCLE,
                                             COORD__ROLE__ROLE_CONTROLLER, COORD__ROLE__ROLE_ADAPTER };
        struct writer w = { 0 };
        char *p = home_file("f.txt");
        PGconn *c = db();
        pthread_t th;
        uint64_t src, prog, size;
        char *got, *want;
        int bad = 0;
        FILE *f;

        CU_ASSERT_FATAL(c && p);
        f = fopen(p, "w");
        CU_ASSERT_FATAL(f != NULL);
        fputs("first\nsecond\n", f);
        fclose(f);
        CU_ASSERT_FATAL(okf(c, "CREATE SOURCE fs FROM FILE '%s' (FORMAT TEXT)", p));
        CU_ASSERT_FATAL(ok(c, "CREATE MATERIALIZED VIEW fs_n AS SELECT count(*) FROM fs"));
        src = q_u64(c, "SELECT id FROM coord_objects WHERE name = 'fs'");
        prog = q_u64(c, "SELECT id FROM coord_objects WHERE name = 'fs_progress'");
        CU_ASSERT_FATAL(src && prog);
        w.path = p;
        CU_ASSERT_FATAL(pthread_create(&th, NULL, writer_main, &w) == 0);
        for (size_t i = 0; i < ELEMENTSOF(kills); i++) {
                sleep_ms(700);                  /* the writer runs */
                kill9_restart(kills[i], &c);
                (void)publications_pass(2, 5000);
                bad += check_remap_protected(c, src, prog);
        }
        sleep_ms(500);                          /* writes after the last restart */
        w.stop = true;
        pthread_join(th, NULL);
        size = file_size(p);
        CU_ASSERT_FATAL(progress_reaches(c, "fs", size));
        /* the rows are the file's lines, each once */
        {
                char *q = NULL;
                FILE *in = fopen(p, "r");
                char line[128], *all = calloc(1, (size_t)size * 2 + 16);
                size_t n = 0, len = 0;
                char **v = calloc((size_t)w.lines + 8, sizeof(*v));

                CU_ASSERT_FATAL(in && all && v);
                while (fgets(line, sizeof(line), in)) {
                        line[strcspn(line, "\n")] = '\0';
                        v[n++] = strdup(line);
                }
                fclose(in);
                qsort(v, n, sizeof(*v), itest_cmp_str);
                for (size_t i = 0; i < n; i++) {
                        len += (size_t)sprintf(all + len, "%s%s", i ? ";" : "", v[i]);
                        free(v[i]);
                }
                free(v);
                want = all;
                got = rows_of(c, "SELECT text FROM fs");
                CU_ASSERT_FATAL(got != NULL);
                if (strcmp(got, want) != 0) {
                        fprintf(stderr, "\n    fs holds %zu bytes of rows, the file's lines %zu", strlen(got),
                                strlen(want));
                        bad++;
                }
                printf("\n    %zu lines (%" PRIu64 " bytes) through %zu kills", n, size, ELEMENTSOF(kills));
                CU_ASSERT(asprintf(&q, "%zu", n) > 0);
                CU_ASSERT(rows_become(c, "SELECT * FROM fs_n", q, 10000));
                free(q);
                free(got);
                free(want);
        }
        bad += check_remap_protected(c, src, prog);
        CU_ASSERT_EQUAL(bad, 0);
        /* after the restarts, coord_sources shows the offset its remap holds */
        CU_ASSERT_EQUAL(q_u64(c, "SELECT \"offset\" FROM coord_sources WHERE source_id = %" PRIu64, src), size);
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM coord_sources WHERE source_id = %" PRIu64
                                 " AND status = 'running'", src), 1);
        CU_ASSERT(ok(c, "DROP SOURCE fs CASCADE"));
        free(p);
        PQfinish(c);
}

static void test_csv(void)
{
        char *p = home_file("c.csv");
        PGconn *c = db();
        FILE *f;

        CU_ASSERT_FATAL(c && p);
        f = fopen(p, "w");
        CU_ASSERT_FATAL(f != NULL);
        fputs("1,a,\"x, y\"\n2,,\"say \"\"hi\"\"\"\n3,\"\",z\r\n", f);
        fclose(f);
        CU_ASSERT_FATAL(okf(c, "CREATE SOURCE cs FROM FILE '%s' (FORMAT CSV WITH 3 COLUMNS)", p));
        CU_ASSERT(progress_reaches(c, "cs", file_size(p)));
        CU_ASSERT(rows_are(c, "SELECT column1, coalesce(column2, 'NULL'), column3 FROM cs",
                           "1|a|x, y;2|NULL|say \"hi\";3||z"));
        /* a line with two fields: the source stops before it */
        f = fopen(p, "a");
        CU_ASSERT_FATAL(f != NULL);
        fputs("4,b,c\n5,only-two\n6,d,e\n", f);
        fclose(f);
        for (int w = 0; w < 500 && stat_of(COORD__ROLE__ROLE_CONTROLLER, "source_errors") == 0; w++)
                sleep_ms(10);
        /* the error is counted in the poll that read line 4, before that line's append */
        CU_ASSERT(rows_become(c, "SELECT column1 FROM cs", "1;2;3;4", 10000));
        CU_ASSERT(stat_of(COORD__ROLE__ROLE_CONTROLLER, "source_errors") > 0);
        CU_ASSERT(ok(c, "DROP SOURCE cs"));
        free(p);
        PQfinish(c);
}

static void test_shrink(void)
{
        char *p = home_file("s.txt");
        PGconn *c = db();
        uint64_t errors;
        FILE *f;

        CU_ASSERT_FATAL(c && p);
        f = fopen(p, "w");
        CU_ASSERT_FATAL(f != NULL);
        fputs("one\ntwo\nthree\n", f);
        fclose(f);
        CU_ASSERT_FATAL(okf(c, "CREATE SOURCE ss FROM FILE '%s' (FORMAT TEXT)", p));
        CU_ASSERT(progress_reaches(c, "ss", file_size(p)));
        errors = stat_of(COORD__ROLE__ROLE_CONTROLLER, "source_errors");
        CU_ASSERT_FATAL(truncate(p, 4) == 0);
        for (int w = 0; w < 500 && stat_of(COORD__ROLE__ROLE_CONTROLLER, "source_errors") <= errors; w++)
                sleep_ms(20);
        CU_ASSERT(stat_of(COORD__ROLE__ROLE_CONTROLLER, "source_errors") > errors);
        CU_ASSERT(rows_become(c, "SELECT s.\"offset\", s.status, s.error LIKE '%shrank%' FROM coord_sources s "
                                 "JOIN coord_objects o ON o.id = s.source_id WHERE o.name = 'ss'",
                              "14|error|t", 10000));
        CU_ASSERT(rows_are(c, "SELECT text FROM ss", "one;three;two"));
        CU_ASSERT(rows_are(c, "SELECT * FROM ss_progress", "14"));
        CU_ASSERT(unlink(p) == 0);
        sleep_ms(300);                          /* time for a wrong read to show */
        CU_ASSERT(rows_are(c, "SELECT text FROM ss", "one;three;two"));
        CU_ASSERT(ok(c, "DROP SOURCE ss"));
        free(p);
        PQfinish(c);
}

static void test_drop(void)
{
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE SOURCE ds FROM LOAD GENERATOR COUNTER (UP TO 3)"));
        CU_ASSERT_FATAL(ok(c, "CREATE VIEW dv AS SELECT counter FROM ds"));
        CU_ASSERT(fails_with(c, "DROP SOURCE ds_progress", "2BP01"));
        CU_ASSERT(fails_with(c, "DROP SOURCE ds", "2BP01"));
        CU_ASSERT(ok(c, "DROP SOURCE ds CASCADE"));
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM coord_objects WHERE name LIKE 'd%%'"), 0);
        CU_ASSERT(publications_pass(1, 5000));  /* one after the drop */
        CU_ASSERT_EQUAL(t_sh("%s check >/dev/null", coord_cmd), 0);
        PQfinish(c);
}

int main(void)
{
        static const struct t_case cases[] = {
                { "up", test_up },
                { "bad_input", test_bad_input },
                { "counter", test_counter },
                { "file_kill9", test_file_kill9 },
                { "csv", test_csv },
                { "shrink", test_shrink },
                { "drop", test_drop },
                { NULL, NULL },
        };
        return itest_main("source", "o", (const struct t_suite[]){ { "source", cases }, { NULL, NULL } });
}
