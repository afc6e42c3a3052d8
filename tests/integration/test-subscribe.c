/* test-subscribe -- SUBSCRIBE and clients' durable holds (issue 33 item 3), end to end on
 * the three real daemons: snapshot and changes against the table AS OF each time, COPY
 * through psql, cancel and close release the hold, a hold keeps the bound, kill -9 of
 * the lifecycle and the controller during a subscription, bad input; the holds of a
 * REPEATABLE READ block's snapshot and of a long read (adapter-readhold.c).
 */
#include <sys/stat.h>

#include "itest.h"

/* A running SUBSCRIBE on its own connection, read in single-row mode. */
struct sub {
        PGconn *c;
        uint64_t *ts;
        int64_t *diff;
        char **row;             /* the relation's columns, "a|b" */
        size_t n, cap;
        bool done;              /* the statement ended */
        char sqlstate[6];       /* its error, "" none */
};

static bool sub_start(struct sub *s, const char *sql)
{
        memset(s, 0, sizeof(*s));
        s->c = db();
        if (!s->c || !PQsendQuery(s->c, sql) || !PQsetSingleRowMode(s->c) || PQsetnonblocking(s->c, 1) != 0) {
                fprintf(stderr, "\n    cannot start %s", sql);
                return false;
        }
        return true;
}

static void sub_take(struct sub *s, PGresult *r)
{
        char buf[1024] = "";

        if (s->n == s->cap) {
                s->cap = s->cap ? s->cap * 2 : 256;
                s->ts = realloc(s->ts, s->cap * sizeof(*s->ts));
                s->diff = realloc(s->diff, s->cap * sizeof(*s->diff));
                s->row = realloc(s->row, s->cap * sizeof(*s->row));
        }
        for (int j = 2; j < PQnfields(r); j++) {
                size_t l = strlen(buf);
                snprintf(buf + l, sizeof(buf) - l, "%s%s", j > 2 ? "|" : "",
                         PQgetisnull(r, 0, j) ? "NULL" : PQgetvalue(r, 0, j));
        }
        s->ts[s->n] = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
        s->diff[s->n] = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
        s->row[s->n++] = strdup(buf);
}

/* Read what arrived, for up to ms. */
static void sub_poll(struct sub *s, unsigned ms)
{
        uint64_t deadline = now_ms() + ms;

        while (!s->done) {
                if (!PQconsumeInput(s->c)) {
                        s->done = true;
                        break;
                }
                while (!s->done && !PQisBusy(s->c)) {
                        PGresult *r = PQgetResult(s->c);

                        if (!r) {
                                s->done = true;
                                break;
                        }
                        if (PQresultStatus(r) == PGRES_SINGLE_TUPLE)
                                sub_take(s, r);
                        else if (PQresultErrorField(r, PG_DIAG_SQLSTATE))
                                snprintf(s->sqlstate, sizeof(s->sqlstate), "%s",
                                         PQresultErrorField(r, PG_DIAG_SQLSTATE));
                        PQclear(r);
                }
                if (now_ms() >= deadline)
                        break;
                usleep(5000);
        }
}

/* Cancel it; true when it ended with 57014. */
static bool sub_cancel(struct sub *s)
{
        PGcancel *cc = PQgetCancel(s->c);
        char eb[256];

        PQcancel(cc, eb, sizeof(eb));
        PQfreeCancel(cc);
        for (int w = 0; w < 100 && !s->done; w++)
                sub_poll(s, 50);
        if (strcmp(s->sqlstate, "57014") != 0)
                fprintf(stderr, "\n    cancel ended with [%s], done=%d", s->sqlstate, s->done);
        return s->done && strcmp(s->sqlstate, "57014") == 0;
}

static void sub_done(struct sub *s)
{
        if (s->c)
                PQfinish(s->c);
        for (size_t i = 0; i < s->n; i++)
                free(s->row[i]);
        free(s->ts);
        free(s->diff);
        free(s->row);
        memset(s, 0, sizeof(*s));
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The contents the updates s[0, upto) add up to, as rows_of() writes them. */
static char *sub_state(const struct sub *s, size_t upto)
{
        char **lines = calloc(1, sizeof(*lines));
        size_t n = 0, len = 1;
        char *out;

        for (size_t i = 0; i < upto; i++) {
                int64_t d = s->diff[i];

                for (; d > 0; d--) {
                        lines = realloc(lines, (n + 1) * sizeof(*lines));
                        lines[n++] = s->row[i];
                }
                for (; d < 0; d++) {
                        size_t k = 0;

                        while (k < n && strcmp(lines[k], s->row[i]) != 0)
                                k++;
                        if (k == n) {
                                free(lines);
                                return strdup("(retraction of a row not there)");
                        }
                        lines[k] = lines[--n];
                }
        }
        if (n)
                qsort(lines, n, sizeof(*lines), cmp_str);
        for (size_t i = 0; i < n; i++)
                len += strlen(lines[i]) + 1;
        out = calloc(1, len);
        for (size_t i = 0; i < n; i++) {
                if (i)
                        strcat(out, ";");
                strcat(out, lines[i]);
        }
        free(lines);
        return out;
}

/* Every time the subscription reports: non-decreasing, diffs non-zero, and the state
 * after that time's updates equals `select` AS OF that time.  The number of times. */
static size_t sub_matches_model(PGconn *c, const struct sub *s, const char *select)
{
        size_t times = 0;

        for (size_t i = 0; i < s->n; i++) {
                char q[256], *want, *got;

                CU_ASSERT(s->diff[i] != 0);
                if (i && s->ts[i] < s->ts[i - 1]) {
                        fprintf(stderr, "\n    time goes back at row %zu", i);
                        CU_FAIL("time goes back");
                }
                if (i + 1 < s->n && s->ts[i + 1] == s->ts[i])
                        continue;
                snprintf(q, sizeof(q), "%s AS OF %" PRIu64, select, s->ts[i]);
                want = rows_of(c, q);
                got = sub_state(s, i + 1);
                if (!want || strcmp(want, got) != 0) {
                        fprintf(stderr, "\n    at %" PRIu64 ": table [%s], subscription [%s]", s->ts[i],
                                want ? want : "(error)", got);
                        CU_FAIL("subscription differs from the table");
                }
                free(want);
                free(got);
                times++;
        }
        return times;
}

/* Wait until the adapter has `n` holds and the lifecycle follows `n` in the catalog
 * (up to 5 s). */
static bool holds_become(uint64_t n)
{
        uint64_t got = 0, adapter = 0;

        for (int w = 0; w < 100; w++) {
                got = lc_stat("holds");
                adapter = stat_of(COORD__ROLE__ROLE_ADAPTER, "holds");
                if (got == n && adapter == n)
                        return true;
                sleep_ms(50);
        }
        fprintf(stderr, "\n    holds: lifecycle %" PRIu64 ", adapter %" PRIu64 ", not %" PRIu64, got,
                adapter, n);
        return false;
}

static void test_up(void)
{
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

static void test_bad_input(void)
{
        PGconn *c = db();
        PGresult *r;

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE bi (a int)"));
        CU_ASSERT_FATAL(ok(c, "CREATE VIEW biv AS SELECT a FROM bi"));
        CU_ASSERT(fails_with(c, "SUBSCRIBE nosuch", "42P01"));
        CU_ASSERT(fails_with(c, "COPY (SUBSCRIBE nosuch) TO STDOUT", "42P01"));
        CU_ASSERT(fails_with(c, "SUBSCRIBE bi WITH (SNAPSHOT = false)", "0A000"));
        CU_ASSERT(fails_with(c, "SUBSCRIBE bi ENVELOPE UPSERT (KEY (a))", "0A000"));
        CU_ASSERT(fails_with(c, "SUBSCRIBE (SELECT a FROM bi)", "0A000"));
        CU_ASSERT(fails_with(c, "COPY (SUBSCRIBE bi) TO STDOUT WITH (FORMAT binary)", "0A000"));
        CU_ASSERT(fails_with(c, "COPY (SUBSCRIBE bi) TO '/tmp/x'", "0A000"));
        CU_ASSERT(fails_with(c, "SUBSCRIBE biv", "0A000"));
        CU_ASSERT(fails_with(c, "SUBSCRIBE coord_objects", "0A000"));
        CU_ASSERT(fails_with(c, "SUBSCRIBE bi AS OF 5", "55000"));
        CU_ASSERT(fails_with(c, "SUBSCRIBE bi AS OF 'x'", "22P02"));
        CU_ASSERT(fails_with(c, "SUBSCRIBE", "42601"));
        /* Inside a block: refused; the extended protocol: refused. */
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT(fails_with(c, "SUBSCRIBE bi", "25001"));
        CU_ASSERT(ok(c, "ROLLBACK"));
        r = PQexecParams(c, "SUBSCRIBE bi", 0, NULL, NULL, NULL, NULL, 0);
        CU_ASSERT_STRING_EQUAL(PQresultErrorField(r, PG_DIAG_SQLSTATE) ?: "", "0A000");
        PQclear(r);
        CU_ASSERT(holds_become(0));
        PQfinish(c);
}

/* Inserts, deletes and updates over a few seconds: the snapshot and every later time
 * equal the table AS OF that time; cancel ends it with 57014 and releases the hold. */
static void test_model(void)
{
        PGconn *c = db();
        struct sub s;
        char *final = NULL;
        size_t times;

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE m (k int, v text)"));
        CU_ASSERT_FATAL(ok(c, "ALTER TABLE m SET (RETAIN HISTORY = FOR '10m')"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO m VALUES (1, 'a'), (2, 'b'), (2, 'b')"));
        CU_ASSERT_FATAL(sub_start(&s, "SUBSCRIBE m"));
        sub_poll(&s, 300);
        CU_ASSERT_EQUAL(s.n, 2);        /* (1, a) +1 and (2, b) +2, at the as-of */
        CU_ASSERT(holds_become(1));
        for (int i = 0; i < 30; i++) {
                switch (i % 4) {
                case 0: CU_ASSERT(okf(c, "INSERT INTO m VALUES (%d, 'n%d'), (%d, 'n%d')", i, i, i + 1, i)); break;
                case 1: CU_ASSERT(okf(c, "DELETE FROM m WHERE k = %d", i - 1)); break;
                case 2: CU_ASSERT(okf(c, "UPDATE m SET v = 'u%d' WHERE k %% 3 = 0", i)); break;
                default: CU_ASSERT(ok(c, "INSERT INTO m VALUES (100, 'x'); DELETE FROM m WHERE k = 100")); break;
                }
                sub_poll(&s, 100);
        }
        final = rows_of(c, "SELECT k, v FROM m");
        for (int w = 0; w < 100; w++) {
                char *got = s.n ? sub_state(&s, s.n) : strdup("");
                bool same = final && strcmp(got, final) == 0;

                free(got);
                if (same)
                        break;
                sub_poll(&s, 50);
        }
        times = sub_matches_model(c, &s, "SELECT k, v FROM m");
        CU_ASSERT(times >= 20);
        CU_ASSERT(!s.done);
        /* Idle, it follows the frontier ring, and asks the controller only when the
         * ring shows something new: far fewer reads than its 10 ms polls. */
        {
                uint64_t reads = stat_of(COORD__ROLE__ROLE_CONTROLLER, "subscribe_reads");

                sub_poll(&s, 1000);
                reads = stat_of(COORD__ROLE__ROLE_CONTROLLER, "subscribe_reads") - reads;
                CU_ASSERT(reads < 30);
                if (reads >= 30)
                        fprintf(stderr, "\n    %" PRIu64 " reads in an idle second", reads);
        }
        CU_ASSERT(sub_cancel(&s));
        CU_ASSERT(holds_become(0));
        CU_ASSERT(ok(s.c, "SELECT 1"));         /* the connection goes on */
        free(final);
        sub_done(&s);
        PQfinish(c);
}

/* Whether the file at path holds text (it may be growing). */
static bool file_has(const char *path, const char *text)
{
        FILE *f = fopen(path, "r");
        char *txt = NULL;
        size_t len = 0;
        bool has;

        if (!f)
                return false;
        has = getdelim(&txt, &len, '\0', f) > 0 && strstr(txt, text);
        free(txt);
        fclose(f);
        return has;
}

/* psql's way: COPY (SUBSCRIBE ...) TO STDOUT prints the rows as they come; SIGINT
 * cancels it. */
static void test_copy_psql(void)
{
        PGconn *c = db();
        char *out = home_file("copy.out"), *pid_path = home_file("copy.pid");
        char *txt = NULL;
        size_t len = 0;
        FILE *f;
        int pid = 0;

        CU_ASSERT_FATAL(c != NULL && out != NULL && pid_path != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE cp (a int, b text)"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO cp VALUES (1, 'tab\there'), (2, NULL)"));
        /* timeout passes our SIGINT on to psql; its own (60 s) only if the case fails
         * before sending it.  stdbuf: psql writes each row to the file as it comes (a
         * file's stdout is fully buffered), so the test can wait for it. */
        CU_ASSERT_FATAL(t_sh("timeout -s INT 60 stdbuf -oL psql -X -q -h 127.0.0.1 -p %d -U coord coord "
                             "-c 'COPY (SUBSCRIBE TO cp) TO STDOUT' >%s 2>&1 & echo $! >%s",
                             pg_port, out, pid_path) == 0);
        f = fopen(pid_path, "r");
        CU_ASSERT_FATAL(f != NULL);
        CU_ASSERT(fscanf(f, "%d", &pid) == 1 && pid > 0);
        fclose(f);
        /* The snapshot printed (its as-of chosen) before the DELETE, then the DELETE's
         * retraction, then the cancel. */
        CU_ASSERT(t_wait_for(file_has(out, "\t1\t1\ttab\\there\n") && file_has(out, "\t1\t2\t\\N\n"),
                             10000));
        CU_ASSERT(ok(c, "DELETE FROM cp WHERE a = 1"));
        CU_ASSERT(t_wait_for(file_has(out, "\t-1\t1\ttab\\there\n"), 10000));
        if (pid > 0)
                CU_ASSERT(kill(pid, SIGINT) == 0);
        CU_ASSERT(t_wait_for(file_has(out, "canceling statement due to user request"), 10000));
        f = fopen(out, "r");
        CU_ASSERT_FATAL(f != NULL);
        CU_ASSERT(getdelim(&txt, &len, '\0', f) > 0);
        fclose(f);
        /* Snapshot (COPY text: tab escaped, NULL as \N), the delete, then the cancel. */
        CU_ASSERT(txt && strstr(txt, "\t1\t1\ttab\\there\n"));
        CU_ASSERT(txt && strstr(txt, "\t1\t2\t\\N\n"));
        CU_ASSERT(txt && strstr(txt, "\t-1\t1\ttab\\there\n"));
        CU_ASSERT(txt && strstr(txt, "canceling statement due to user request"));
        if (txt && !strstr(txt, "\t-1\t1"))
                fprintf(stderr, "\n    psql printed [%s]", txt);
        CU_ASSERT(holds_become(0));
        free(txt);
        free(pid_path);
        free(out);
        PQfinish(c);
}

/* A materialized view and a source are subscribed to like a table. */
static void test_mv_and_source(void)
{
        PGconn *c = db();
        struct sub s;

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE mb (k int)"));
        CU_ASSERT_FATAL(ok(c, "CREATE MATERIALIZED VIEW mvs AS SELECT k * 10 AS k10 FROM mb WHERE k > 1"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO mb VALUES (1), (2)"));
        CU_ASSERT(rows_become(c, "SELECT k10 FROM mvs", "20", 5000));
        CU_ASSERT_FATAL(sub_start(&s, "SUBSCRIBE TO mvs"));
        sub_poll(&s, 300);
        CU_ASSERT(ok(c, "INSERT INTO mb VALUES (3)"));
        CU_ASSERT(ok(c, "DELETE FROM mb WHERE k = 2"));
        for (int w = 0; w < 100 && s.n < 3; w++)
                sub_poll(&s, 50);
        CU_ASSERT_EQUAL_FATAL(s.n, 3);
        CU_ASSERT(strcmp(s.row[0], "20") == 0 && s.diff[0] == 1);
        CU_ASSERT(strcmp(s.row[1], "30") == 0 && s.diff[1] == 1);
        CU_ASSERT(strcmp(s.row[2], "20") == 0 && s.diff[2] == -1);
        CU_ASSERT(s.ts[2] > s.ts[1] && s.ts[1] > s.ts[0]);
        CU_ASSERT(sub_cancel(&s));
        sub_done(&s);

        CU_ASSERT_FATAL(ok(c, "CREATE SOURCE cnt FROM LOAD GENERATOR COUNTER (TICK INTERVAL '100ms', UP TO 3)"));
        CU_ASSERT_FATAL(sub_start(&s, "SUBSCRIBE cnt"));
        for (int w = 0; w < 100; w++) {
                char *st;
                bool three;

                sub_poll(&s, 50);
                st = sub_state(&s, s.n);
                three = strcmp(st, "1;2;3") == 0;
                free(st);
                if (three)
                        break;
        }
        {
                char *st = sub_state(&s, s.n);
                CU_ASSERT_STRING_EQUAL(st, "1;2;3");
                free(st);
        }
        CU_ASSERT(sub_cancel(&s));
        CU_ASSERT(holds_become(0));
        sub_done(&s);
        PQfinish(c);
}

/* The client closes its connection: the hold goes; the relation is dropped: 42P01. */
static void test_close_and_drop(void)
{
        PGconn *c = db();
        struct sub s;

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE cl (a int)"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO cl VALUES (1)"));
        CU_ASSERT_FATAL(sub_start(&s, "SUBSCRIBE cl"));
        sub_poll(&s, 300);
        CU_ASSERT_EQUAL(s.n, 1);
        CU_ASSERT(holds_become(1));
        PQfinish(s.c);
        s.c = NULL;
        CU_ASSERT(holds_become(0));
        sub_done(&s);

        CU_ASSERT_FATAL(sub_start(&s, "SUBSCRIBE cl"));
        sub_poll(&s, 300);
        CU_ASSERT(holds_become(1));
        CU_ASSERT(ok(c, "DROP TABLE cl"));
        for (int w = 0; w < 100 && !s.done; w++)
                sub_poll(&s, 50);
        CU_ASSERT(s.done);
        CU_ASSERT_STRING_EQUAL(s.sqlstate, "42P01");
        CU_ASSERT(holds_become(0));
        sub_done(&s);
        PQfinish(c);
}

/* A client that stops reading: the adapter stops at the 256 KiB mark (backpressure) and
 * its hold stays at the subscription's as-of.  The table is written meanwhile, and the
 * lifecycle and the controller are killed -9 and restarted: its default 1 s window
 * would move the bound past the as-of; the hold keeps it there, through the follower's
 * own proposals (no publication refused, also after its restart: it loads the hold from
 * the catalog), a new SUBSCRIBE AS OF the as-of works, and once the client reads again
 * everything comes, whole. */
/* 16,000 rows (k, 500 bytes of pad) into table: about 8 MB, more than the socket
 * buffers and the adapter's output mark together, so a client that reads nothing stalls
 * the statement. */
static bool fill_8mb(PGconn *c, const char *table)
{
        char pad[501] = "";
        char *q = NULL;
        size_t ql = 0;
        bool good = true;
        FILE *f;

        memset(pad, 'p', sizeof(pad) - 1);
        for (int b = 0; b < 32 && good; b++) {
                f = open_memstream(&q, &ql);
                if (!f)
                        return false;
                fprintf(f, "INSERT INTO %s VALUES ", table);
                for (int i = 0; i < 500; i++)
                        fprintf(f, "%s(%d, '%s')", i ? ", " : "", b * 500 + i, pad);
                fclose(f);
                good = ok(c, q);
                free(q);
                q = NULL;
        }
        return good;
}

static void test_hold_keeps_bound(void)
{
        PGconn *c = db();
        uint64_t gid, waits, bound, as_of;
        struct sub s, s2;
        char *q = NULL;
        size_t ql = 0;
        FILE *f;
        int64_t total = 0;
        int writes = 0;

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE hk (k int, pad text)"));
        gid = gid_of(c, "hk");
        CU_ASSERT_FATAL(fill_8mb(c, "hk"));
        waits = stat_of(COORD__ROLE__ROLE_ADAPTER, "stream_waits");
        CU_ASSERT_FATAL(sub_start(&s, "SUBSCRIBE hk"));
        for (int w = 0; w < 100 && s.n == 0; w++)
                sub_poll(&s, 20);
        CU_ASSERT_FATAL(s.n > 0 && s.n < 16000);
        as_of = s.ts[0];
        CU_ASSERT(holds_become(1));
        for (int phase = 0; phase < 3; phase++) {
                for (int i = 0; i < 12; i++, writes++) {
                        CU_ASSERT(okf(c, "INSERT INTO hk VALUES (%d, 'late')", 100000 + writes));
                        sleep_ms(100);
                }
                if (phase == 0)
                        kill9_restart(COORD__ROLE__ROLE_LIFECYCLE, &c);
                if (phase == 1)
                        kill9_restart(COORD__ROLE__ROLE_CONTROLLER, &c);
                CU_ASSERT_EQUAL(lc_stat("publication_errors"), 0);
        }
        sleep_ms(1500);         /* a publication or two after the last write */
        bound = q_u64(c, "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, gid);
        CU_ASSERT(stat_of(COORD__ROLE__ROLE_ADAPTER, "stream_waits") > waits);
        CU_ASSERT_EQUAL(lc_stat("publication_errors"), 0);
        CU_ASSERT(bound <= as_of);
        if (bound > as_of)
                fprintf(stderr, "\n    bound %" PRIu64 " passed the hold at %" PRIu64, bound, as_of);
        /* The as-of is still readable: another subscription from there. */
        f = open_memstream(&q, &ql);
        fprintf(f, "SUBSCRIBE hk AS OF %" PRIu64, as_of);
        fclose(f);
        CU_ASSERT_FATAL(sub_start(&s2, q));
        free(q);
        q = NULL;
        for (int w = 0; w < 20 && s2.n == 0 && !s2.done; w++)
                sub_poll(&s2, 50);
        CU_ASSERT_STRING_EQUAL(s2.sqlstate, "");
        CU_ASSERT(s2.n > 0 && s2.ts[0] == as_of);
        CU_ASSERT(sub_cancel(&s2));
        sub_done(&s2);
        /* Now read it all. */
        for (int w = 0; w < 400 && s.n < (size_t)(16000 + writes); w++)
                sub_poll(&s, 50);
        CU_ASSERT_EQUAL_FATAL(s.n, (size_t)(16000 + writes));
        for (size_t i = 0; i < s.n; i++)
                total += s.diff[i];
        CU_ASSERT_EQUAL(total, 16000 + writes);
        CU_ASSERT(s.ts[s.n - 1] > as_of);
        CU_ASSERT(sub_cancel(&s));
        CU_ASSERT(holds_become(0));
        sub_done(&s);
        PQfinish(c);
}

/* The bound of gid, once publications have moved the unheld ctrl's past t (writes to
 * both every 100 ms, up to 30 s): what it would be without a hold is past t then. */
static uint64_t bound_when_passed(PGconn *c, uint64_t gid, uint64_t ctrl, const char *tab,
                                  const char *ctrl_tab, uint64_t t)
{
        uint64_t b = 0, until = now_ms() + 30000;

        while (b <= t && now_ms() < until) {
                CU_ASSERT(okf(c, "INSERT INTO %s VALUES (1)", tab));
                CU_ASSERT(okf(c, "INSERT INTO %s VALUES (1)", ctrl_tab));
                sleep_ms(100);  /* pace the writes: bounds follow time */
                b = q_u64(c, "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, ctrl);
        }
        CU_ASSERT(b > t);
        return q_u64(c, "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, gid);
}

/* adapter-readhold.c: a SERIALIZABLE block's snapshot is a client's hold on each input
 * it has read: the committed bound stays at or below the block's timestamp while an
 * unread table's passes it, across a lifecycle kill -9, with no publication refused;
 * it goes at COMMIT, and when the client of another block leaves. */
static void test_block_holds(void)
{
        PGconn *c = db(), *o = db();
        uint64_t t, gid, gid2, b;

        CU_ASSERT_FATAL(c != NULL && o != NULL);
        CU_ASSERT_FATAL(ok(o, "CREATE TABLE bh (a int)"));
        CU_ASSERT_FATAL(ok(o, "CREATE TABLE bh2 (a int)"));
        CU_ASSERT_FATAL(ok(o, "INSERT INTO bh VALUES (1)"));
        gid = gid_of(o, "bh");
        gid2 = gid_of(o, "bh2");
        CU_ASSERT(holds_become(0));
        CU_ASSERT(ok(c, "BEGIN ISOLATION LEVEL SERIALIZABLE"));
        t = scalar_u64(c, "SELECT mz_now()");
        CU_ASSERT_EQUAL(scalar_u64(c, "SELECT count(*) FROM bh"), 1);
        CU_ASSERT(holds_become(1));
        kill9_restart(COORD__ROLE__ROLE_LIFECYCLE, &o);
        b = bound_when_passed(o, gid, gid2, "bh", "bh2", t);
        CU_ASSERT(b <= t);
        if (b > t)
                fprintf(stderr, "\n    bound %" PRIu64 " passed the block's snapshot at %" PRIu64, b, t);
        CU_ASSERT_EQUAL(lc_stat("publication_errors"), 0);
        CU_ASSERT_EQUAL(scalar_u64(c, "SELECT count(*) FROM bh"), 1);
        CU_ASSERT(ok(c, "COMMIT"));
        CU_ASSERT(holds_become(0));
        b = bound_when_passed(o, gid2, gid, "bh2", "bh", t);    /* bh's bound moves on */

        /* Two inputs held; the client leaves without COMMIT. */
        CU_ASSERT(ok(c, "BEGIN ISOLATION LEVEL REPEATABLE READ"));
        CU_ASSERT(scalar_u64(c, "SELECT count(*) FROM bh, bh2") > 0);
        CU_ASSERT(holds_become(2));
        PQfinish(c);
        CU_ASSERT(holds_become(0));
        CU_ASSERT(stat_of(COORD__ROLE__ROLE_ADAPTER, "read_holds") >= 3);
        CU_ASSERT(ok(o, "DROP TABLE bh"));
        CU_ASSERT(ok(o, "DROP TABLE bh2"));
        PQfinish(o);
}

/* adapter-readhold.c: a SELECT whose client stops reading its streamed result holds its
 * input in the catalog after 100 ms: the bound stays at or below the read's time
 * while an unheld table's passes it; every row arrives; the hold goes at the end. */
static void test_long_read_holds(void)
{
        PGconn *c = db(), *o = db();
        uint64_t t, gid, gid2, b, rows = 0;
        PGresult *r;

        CU_ASSERT_FATAL(c != NULL && o != NULL);
        CU_ASSERT_FATAL(ok(o, "CREATE TABLE lr (k int, pad text)"));
        CU_ASSERT_FATAL(ok(o, "CREATE TABLE lr2 (a int)"));
        gid = gid_of(o, "lr");
        gid2 = gid_of(o, "lr2");
        CU_ASSERT_FATAL(fill_8mb(o, "lr"));
        CU_ASSERT(holds_become(0));
        CU_ASSERT_FATAL(PQsendQuery(c, "SELECT k, pad FROM lr"));
        CU_ASSERT(holds_become(1));     /* the client reads nothing meanwhile */
        t = scalar_u64(o, "SELECT mz_now()");   /* at or after the read's time */
        b = bound_when_passed(o, gid, gid2, "lr", "lr2", t);
        CU_ASSERT(b <= t);
        if (b > t)
                fprintf(stderr, "\n    bound %" PRIu64 " passed the long read at or before %" PRIu64, b, t);
        while ((r = PQgetResult(c))) {
                if (PQresultStatus(r) == PGRES_TUPLES_OK)
                        rows += (uint64_t)PQntuples(r);
                else
                        fprintf(stderr, "\n    long read: %s", PQresultErrorMessage(r));
                PQclear(r);
        }
        CU_ASSERT_EQUAL(rows, 16000);
        CU_ASSERT(holds_become(0));
        CU_ASSERT(ok(o, "DROP TABLE lr"));
        CU_ASSERT(ok(o, "DROP TABLE lr2"));
        PQfinish(c);
        PQfinish(o);
}

/* kill -9 of the lifecycle, then of the controller, while a subscription runs: it goes
 * on (the controller's return resends its read), and a new SUBSCRIBE AS OF the last
 * time it sent works and starts from the same contents. */
static void test_kill9(void)
{
        PGconn *c = db();
        struct sub s, s2;
        uint64_t last;
        char q[128], *at_last;

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE kk (a int)"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO kk VALUES (0)"));
        CU_ASSERT_FATAL(sub_start(&s, "SUBSCRIBE kk"));
        sub_poll(&s, 300);
        CU_ASSERT(holds_become(1));
        for (int i = 1; i <= 3; i++) {
                CU_ASSERT(okf(c, "INSERT INTO kk VALUES (%d)", i));
                sub_poll(&s, 200);
        }
        kill9_restart(COORD__ROLE__ROLE_LIFECYCLE, &c);
        CU_ASSERT(holds_become(1));     /* loaded from the catalog */
        CU_ASSERT(okf(c, "INSERT INTO kk VALUES (4)"));
        sub_poll(&s, 500);
        kill9_restart(COORD__ROLE__ROLE_CONTROLLER, &c);
        for (int i = 5; i <= 8; i++) {
                CU_ASSERT(okf(c, "INSERT INTO kk VALUES (%d)", i));
                sub_poll(&s, 300);
        }
        for (int w = 0; w < 100 && s.n < 9; w++)
                sub_poll(&s, 50);
        CU_ASSERT_FATAL(s.n == 9);
        CU_ASSERT(!s.done);
        sleep_ms(2500);         /* past the 1 s window, a publication or two */
        last = s.ts[s.n - 1];
        snprintf(q, sizeof(q), "SUBSCRIBE kk AS OF %" PRIu64, last);
        CU_ASSERT_FATAL(sub_start(&s2, q));
        for (int w = 0; w < 40 && s2.n < 9; w++)
                sub_poll(&s2, 50);
        CU_ASSERT_STRING_EQUAL(s2.sqlstate, "");
        CU_ASSERT_EQUAL(s2.n, 9);
        CU_ASSERT(s2.n && s2.ts[0] == last);
        at_last = sub_state(&s, s.n);
        {
                char *got = sub_state(&s2, s2.n);
                CU_ASSERT_STRING_EQUAL(got, at_last);
                free(got);
        }
        free(at_last);
        CU_ASSERT(holds_become(2));
        CU_ASSERT(sub_cancel(&s));
        CU_ASSERT(sub_cancel(&s2));
        CU_ASSERT(holds_become(0));
        sub_done(&s);
        sub_done(&s2);
        PQfinish(c);
}

/* Holds of a dead adapter are dropped at its next start. */
static void test_adapter_restart(void)
{
        PGconn *c = db();
        struct sub s;

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE ar (a int)"));
        CU_ASSERT_FATAL(sub_start(&s, "SUBSCRIBE ar"));
        sub_poll(&s, 300);
        CU_ASSERT(holds_become(1));
        kill9_restart(COORD__ROLE__ROLE_ADAPTER, &c);
        CU_ASSERT(holds_become(0));
        sub_done(&s);
        PQfinish(c);
}

/* controller-server-subscribe.c note 26: a snapshot over --subscribe-snapshot-max-mb
 * fails with 54000 (each batch would read it whole on the controller's loop), and the
 * hold goes with it; a smaller one is served. */
static void test_snapshot_max(void)
{
        PGconn *c;
        char pad[1001] = "", *q = NULL;
        size_t ql = 0;
        FILE *f;

        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
        CU_ASSERT_EQUAL_FATAL(t_sh("COORD_CONTROLLER_ARGS='--subscribe-snapshot-max-mb 1' %s up >/dev/null",
                                   coord_cmd), 0);
        c = db();
        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE sm (k int, pad text)"));
        memset(pad, 'p', sizeof(pad) - 1);
        CU_ASSERT_FATAL(ok(c, "INSERT INTO sm VALUES (0, 'small')"));
        {
                struct sub small;

                CU_ASSERT_FATAL(sub_start(&small, "SUBSCRIBE sm"));
                for (int w = 0; w < 100 && small.n == 0; w++)
                        sub_poll(&small, 20);
                CU_ASSERT_EQUAL(small.n, 1);    /* served under the limit */
                sub_done(&small);
        }
        for (int b = 0; b < 3; b++) {
                f = open_memstream(&q, &ql);
                fprintf(f, "INSERT INTO sm VALUES ");
                for (int i = 0; i < 500; i++)
                        fprintf(f, "%s(%d, '%s')", i ? ", " : "", 1 + b * 500 + i, pad);
                fclose(f);
                CU_ASSERT_FATAL(ok(c, q));
                free(q);
                q = NULL;
        }
        CU_ASSERT(ok(c, "SET statement_timeout = '5s'"));      /* without the limit: 57014 */
        CU_ASSERT(fails_with(c, "SUBSCRIBE sm", "54000"));
        CU_ASSERT(holds_become(0));
        CU_ASSERT(ok(c, "DROP TABLE sm"));
        PQfinish(c);
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
        CU_ASSERT_EQUAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

int main(void)
{
        static const struct t_case cases[] = {
                { "up", test_up },
                { "bad_input", test_bad_input },
                { "model", test_model },
                { "copy_psql", test_copy_psql },
                { "mv_and_source", test_mv_and_source },
                { "close_and_drop", test_close_and_drop },
                { "hold_keeps_bound", test_hold_keeps_bound },
                { "block_holds", test_block_holds },
                { "long_read_holds", test_long_read_holds },
                { "kill9", test_kill9 },
                { "adapter_restart", test_adapter_restart },
                { "snapshot_max", test_snapshot_max },
                { "check", itest_check },
                { NULL, NULL },
        };
        return itest_main_only("subscribe", "u", cases, "SUBSCRIBE_ONLY");
}
