/* test-killpoints -- crash at each named kill point once (common/killpoint.h, issue 30
 * item 2) and check recovery, on the three real daemons.
 *
 * One instance for every point, with a table kp written by a client thread all along
 * (INSERTs of distinct values, a CREATE TABLE now and then), a materialized view of its
 * count, a refresh view of its count, a sink of kp into a file and a counter source.
 * For each point: the daemon that owns it is stopped and started again by the test with
 * COORD_KILLPOINT=<point>[:N]; the workload runs until that daemon dies, which must be
 * by SIGKILL with the point's log line; `tools/coord up` restarts it without the
 * variable; then:
 *   - every acknowledged INSERT is in kp exactly once, an unanswered one at most once;
 *   - every acknowledged CREATE TABLE is in coord_objects;
 *   - the view's count equals kp's count (I9), the refresh view reaches it;
 *   - the sink file has each of kp's values once as a +1 line and nothing else (no
 *     duplicate, no gap) once its progress passes the last write;
 *   - the source's counter values are 1..max, each once (no loss, no repeat), and it
 *     goes on after the restart;
 *   - `coordctl check` matches (I10).
 * KILLPOINTS_ONLY=text runs only the points whose names contain text.
 */
#include <pthread.h>

#include "itest-spawn.h"

#define NV 100000

static int ins[NV];             /* 0 not tried, 1 acknowledged, 2 unknown */
static int next_v;              /* the workload's next value */
static char *sink_path;

struct workload {
        volatile bool stop;
        int ddl_acked[256];
        int n_ddl;
        int errors;
};

/* INSERTs of next_v, next_v + 1, ... and every 8th a CREATE TABLE, until stop. */
static void *workload_main(void *arg)
{
        struct workload *w = arg;
        PGconn *c = db();

        for (int i = 0; !w->stop && next_v < NV; i++) {
                PGresult *r;
                char q[128];
                int v;

                if (!c || PQstatus(c) != CONNECTION_OK) {
                        c = reconnect(c);
                        continue;
                }
                if (i % 8 == 7 && w->n_ddl < (int)ELEMENTSOF(w->ddl_acked)) {
                        int d = next_v;

                        snprintf(q, sizeof(q), "CREATE TABLE kp_d%d (a int)", d);
                        r = PQexec(c, q);
                        if (PQresultStatus(r) == PGRES_COMMAND_OK)
                                w->ddl_acked[w->n_ddl++] = d;
                        PQclear(r);
                }
                v = next_v++;
                snprintf(q, sizeof(q), "INSERT INTO kp VALUES (%d)", v);
                r = PQexec(c, q);
                ins[v] = PQresultStatus(r) == PGRES_COMMAND_OK ? 1 : 2;
                if (ins[v] == 2)
                        w->errors++;
                PQclear(r);
                if (ins[v] == 2)
                        sleep_ms(20);           /* back off while it is down */
        }
        PQfinish(c);
        return NULL;
}

static void test_setup(void)
{
        PGconn *c;

        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        c = db();
        sink_path = home_file("kp.out");
        CU_ASSERT_FATAL(c && sink_path);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE kp (a int)"));
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE kp_tick (a int)"));
        CU_ASSERT_FATAL(ok(c, "CREATE MATERIALIZED VIEW kp_n AS SELECT count(*) AS n FROM kp"));
        CU_ASSERT_FATAL(ok(c, "CREATE MATERIALIZED VIEW kp_r WITH (REFRESH EVERY '300ms') AS "
                              "SELECT count(*) AS n FROM kp"));
        CU_ASSERT_FATAL(okf(c, "CREATE SINK kp_k FROM kp INTO FILE '%s'", sink_path));
        CU_ASSERT_FATAL(ok(c, "CREATE SOURCE kp_c FROM LOAD GENERATOR COUNTER (TICK INTERVAL '50ms')"));
        PQfinish(c);
}

/* The sink file: each value of kp once as a +1 line, nothing else. */
static int check_sink(PGconn *c)
{
        static int plus[NV];
        uint64_t gid = q_u64(c, "SELECT id FROM coord_objects WHERE name = 'kp_k'");
        uint64_t last = q_u64(c, "SELECT mz_now()");
        char buf[256];
        int bad = 0, w;
        FILE *f;

        for (w = 0; w < 100; w++) {
                (void)ok(c, "INSERT INTO kp_tick VALUES (1)");  /* moves coord_frontiers */
                if (q_u64(c, "SELECT write_frontier FROM coord_frontiers WHERE object_id = %" PRIu64, gid) > last)
                        break;
                sleep_ms(100);
        }
        if (w == 100) {
                fprintf(stderr, "\n    sink progress never passed %" PRIu64, last);
                return 1;
        }
        memset(plus, 0, sizeof(plus));
        f = fopen(sink_path, "r");
        if (!f)
                return 1;
        while (fgets(buf, sizeof(buf), f)) {
                unsigned long long t;
                long long d;
                int a;

                if (sscanf(buf, "%llu\t%lld\t%d", &t, &d, &a) != 3 || d != 1 || a < 0 || a >= NV ||
                    buf[strlen(buf) - 1] != '\n') {
                        fprintf(stderr, "\n    sink: unexpected line [%s]", buf);
                        bad++;
                        continue;
                }
                if (++plus[a] > 1) {
                        fprintf(stderr, "\n    sink: value %d written twice", a);
                        bad++;
                }
        }
        fclose(f);
        {
                PGresult *r = PQexec(c, "SELECT a FROM kp");
                static char in_table[NV];

                memset(in_table, 0, sizeof(in_table));
                for (int i = 0; PQresultStatus(r) == PGRES_TUPLES_OK && i < PQntuples(r); i++) {
                        int a = atoi(PQgetvalue(r, i, 0));
                        if (a >= 0 && a < NV)
                                in_table[a] = 1;
                }
                PQclear(r);
                for (int a = 0; a < NV; a++)
                        if (in_table[a] != (plus[a] > 0)) {
                                fprintf(stderr, "\n    sink: value %d %s", a,
                                        in_table[a] ? "in kp, missing from the file" : "in the file, not in kp");
                                bad++;
                        }
        }
        return bad;
}

/* The counter's values are 1..max, each once; returns max (0 on a violation). */
static int check_source(PGconn *c)
{
        PGresult *r = PQexec(c, "SELECT counter FROM kp_c");
        static int seen[1 << 20];
        int n, max = 0, bad = 0;

        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
                fprintf(stderr, "\n    source: %s", PQresultErrorMessage(r));
                PQclear(r);
                return 0;
        }
        n = PQntuples(r);
        memset(seen, 0, sizeof(seen));
        for (int i = 0; i < n; i++) {
                int v = atoi(PQgetvalue(r, i, 0));
                if (v < 1 || v >= (int)ELEMENTSOF(seen) || seen[v]++) {
                        fprintf(stderr, "\n    source: counter value %d repeated or out of range", v);
                        bad++;
                }
                if (v > max)
                        max = v;
        }
        PQclear(r);
        if (n != max) {
                fprintf(stderr, "\n    source: %d rows for the values 1..%d", n, max);
                bad++;
        }
        return bad ? 0 : max;
}

/* Recovery after a crash, as the file's header says. */
static void check_recovery(const struct workload *w)
{
        PGconn *c = NULL;
        int src;

        c = reconnect(c);
        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_EQUAL(values_once(c, "SELECT a FROM kp", ins, next_v, "kp", "unanswered"), 0);
        for (int i = 0; i < w->n_ddl; i++)
                CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM coord_objects WHERE name = 'kp_d%d'",
                                      w->ddl_acked[i]), 1);
        {
                uint64_t n = q_u64(c, "SELECT count(*) FROM kp"), got = 0;

                CU_ASSERT_EQUAL(q_u64(c, "SELECT n FROM kp_n"), n);
                for (int t = 0; t < 50 && (got = q_u64(c, "SELECT n FROM kp_r")) != n; t++)
                        sleep_ms(100);
                CU_ASSERT_EQUAL(got, n);
                CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM kp_r"), 1);
        }
        CU_ASSERT_EQUAL(check_sink(c), 0);
        src = check_source(c);
        CU_ASSERT(src > 0);
        if (src > 0) {
                int later = 0;
                for (int t = 0; t < 50 && (later = check_source(c)) <= src; t++)
                        sleep_ms(100);
                CU_ASSERT(later > src);         /* resumed */
        }
        CU_ASSERT_EQUAL(t_sh("%s check >%s/check.out 2>&1", coord_cmd, home), 0);
        PQfinish(c);
}

/* Crash the role's daemon at point (COORD_KILLPOINT=spec) under the workload, restart
 * it, check recovery. */
static void crash_at(Coord__Role role, const char *spec)
{
        struct workload w = { 0 };
        char env[160], line[200];
        const char *envs[] = { env, NULL };
        pthread_t th;
        int status = 0, serving;
        bool died;
        pid_t pid;

        printf("\n    %s at %s", role_str(role), spec);
        fflush(stdout);
        snprintf(env, sizeof(env), "COORD_KILLPOINT=%s", spec);
        CU_ASSERT_FATAL(stop_role(role));
        pid = spawn_role(role, envs);
        CU_ASSERT_FATAL(pid > 0);
        serving = spawn_wait_serving(role, pid, 20000, &status);
        CU_ASSERT_FATAL(serving != 0);
        /* The others find it again before the workload starts.  Not by `tools/coord
         * up`: under load the daemon may cross its point while `up` waits for it
         * (seen in CI at compaction.*:3, crossed at start), and `up`, having found it
         * alive, then waits 30 s for a daemon that is gone. */
        for (int t = 0; serving > 0; t++) {
                if (t_sh("%s status --rate-ms 0 >/dev/null 2>&1", coord_cmd) == 0)
                        break;
                if (waitpid(pid, &status, WNOHANG) == pid) {
                        serving = -1;   /* crossed it already: the checks below */
                        break;
                }
                CU_ASSERT_FATAL(t < 300);
                sleep_ms(100);
        }
        CU_ASSERT_FATAL(pthread_create(&th, NULL, workload_main, &w) == 0);
        died = serving < 0 || spawn_wait_exit(pid, 30000, &status);
        if (!died) {
                fprintf(stderr, "\n    %s never crossed %s", role_str(role), spec);
                kill(pid, SIGKILL);
                (void)spawn_wait_exit(pid, 10000, &status);
        }
        CU_ASSERT(died);
        CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        snprintf(line, sizeof(line), "event=killpoint name=%.*s", (int)strcspn(spec, ":"), spec);
        CU_ASSERT(log_has(role, line));
        CU_ASSERT_EQUAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        sleep_ms(300);          /* some writes after the restart too */
        w.stop = true;
        pthread_join(th, NULL);
        printf(" (values %d, unanswered %d, ddl %d)", next_v, w.errors, w.n_ddl);
        check_recovery(&w);
}

#define A COORD__ROLE__ROLE_ADAPTER
#define L COORD__ROLE__ROLE_LIFECYCLE
#define C COORD__ROLE__ROLE_CONTROLLER

static void test_commit_before(void) { crash_at(A, "catalog.commit.before_write:3"); }
static void test_commit_after(void) { crash_at(A, "catalog.commit.after_write:3"); }
static void test_pub_unanswered(void) { crash_at(A, "publication.committed.before_reply:2"); }
static void test_pub_before(void) { crash_at(L, "publication.before_send:2"); }
static void test_pub_after(void) { crash_at(L, "publication.after_commit:2"); }
static void test_compact_before(void) { crash_at(C, "compaction.before_write:3"); }
static void test_compact_after(void) { crash_at(C, "compaction.after_write:3"); }
static void test_append_before(void) { crash_at(C, "append.before_write:20"); }
static void test_append_after(void) { crash_at(C, "append.after_write:20"); }
static void test_append_reply(void) { crash_at(C, "append.before_reply:20"); }
static void test_sink_data(void) { crash_at(C, "sink.after_data:2"); }
static void test_sink_progress(void) { crash_at(C, "sink.after_progress:2"); }
static void test_refresh(void) { crash_at(C, "refresh.after_write:2"); }
static void test_source_before(void) { crash_at(C, "source.before_write:5"); }
static void test_source_after(void) { crash_at(C, "source.after_write:5"); }

static const struct t_case cases[] = {
        { "setup", test_setup },
        { "catalog.commit.before_write", test_commit_before },
        { "catalog.commit.after_write", test_commit_after },
        { "publication.committed.before_reply", test_pub_unanswered },
        { "publication.before_send", test_pub_before },
        { "publication.after_commit", test_pub_after },
        { "compaction.before_write", test_compact_before },
        { "compaction.after_write", test_compact_after },
        { "append.before_write", test_append_before },
        { "append.after_write", test_append_after },
        { "append.before_reply", test_append_reply },
        { "sink.after_data", test_sink_data },
        { "sink.after_progress", test_sink_progress },
        { "refresh.after_write", test_refresh },
        { "source.before_write", test_source_before },
        { "source.after_write", test_source_after },
        { NULL, NULL },
};

/* KILLPOINTS_ONLY=text runs the setup and the points whose names contain text. */
int main(void)
{
        spawn_set_prefix("kp");
        return itest_main_only("killpoints", "kp", cases, "KILLPOINTS_ONLY");
}
