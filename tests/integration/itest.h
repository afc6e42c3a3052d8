/* itest.h -- what the integration tests share: one instance of the three real daemons
 * under a fresh COORD_HOME, started and stopped with tools/coord, and libpq helpers.
 *
 * A test includes this once, defines its cases and calls itest_main().  The helpers
 * print what went wrong to stderr and return false (or NULL), so a case asserts on them.
 * Define ITEST_OWN_ROWS before including to bring your own rows_of()/rows_are()/
 * scalar_u64().
 */
#pragma once

#include <inttypes.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "node/node.h"
#include "t.h"
#include "util.h"

static char *home, *run_dir, *coord_cmd, *build_dir, *top_dir, *conninfo;
static int pg_port;

static PGconn *db(void)
{
        PGconn *c = PQconnectdb(conninfo);

        if (PQstatus(c) != CONNECTION_OK) {
                fprintf(stderr, "connect: %s", PQerrorMessage(c));
                PQfinish(c);
                return NULL;
        }
        return c;
}

/* Run sql; true when it succeeded. */
static bool ok(PGconn *c, const char *sql)
{
        PGresult *r = PQexec(c, sql);
        ExecStatusType st = PQresultStatus(r);
        bool good = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;

        if (!good)
                fprintf(stderr, "\n    %s -> %s", sql, PQresultErrorMessage(r));
        PQclear(r);
        return good;
}

static bool okf(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static bool okf(PGconn *c, const char *fmt, ...)
{
        char *q = NULL;
        va_list ap;
        bool r;

        va_start(ap, fmt);
        if (vasprintf(&q, fmt, ap) < 0)
                q = NULL;
        va_end(ap);
        r = q && ok(c, q);
        free(q);
        return r;
}

/* Run sql expecting an error with this SQLSTATE; when detail_has is not NULL the
 * error's detail must contain it. */
static bool fails_detail(PGconn *c, const char *sql, const char *sqlstate, const char *detail_has)
{
        PGresult *r = PQexec(c, sql);
        const char *got = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        const char *detail = PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL);
        bool good = PQresultStatus(r) == PGRES_FATAL_ERROR && got && strcmp(got, sqlstate) == 0;

        if (!good)
                fprintf(stderr, "\n    %s: expected %s, got %s (%s)", sql, sqlstate,
                        got ? got : "success", PQresultErrorMessage(r));
        if (good && detail_has && !(detail && strstr(detail, detail_has))) {
                fprintf(stderr, "\n    %s: %s as expected, but the detail [%s] does not name %s",
                        sql, sqlstate, detail ? detail : "(none)", detail_has);
                good = false;
        }
        PQclear(r);
        return good;
}

/* sql succeeds with the command tag tag ("INSERT 0 3"). */
static __attribute__((unused)) bool tag_is(PGconn *c, const char *sql, const char *tag)
{
        PGresult *r = PQexec(c, sql);
        bool good = PQresultStatus(r) == PGRES_COMMAND_OK && strcmp(PQcmdStatus(r), tag) == 0;

        if (!good)
                fprintf(stderr, "\n    %s: expected %s, got %s %s", sql, tag, PQcmdStatus(r),
                        PQresultErrorMessage(r));
        PQclear(r);
        return good;
}

static __attribute__((unused)) bool fails_with(PGconn *c, const char *sql, const char *sqlstate)
{
        return fails_detail(c, sql, sqlstate, NULL);
}

#ifndef ITEST_OWN_ROWS
static int itest_cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The result rows as "a|b" lines (NULL as NULL), sorted, joined with ';'.  NULL on error. */
static char *rows_of(PGconn *c, const char *sql)
{
        PGresult *r = PQexec(c, sql);
        char **lines, *out;
        size_t n, len = 1;

        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
                fprintf(stderr, "\n    %s -> %s", sql, PQresultErrorMessage(r));
                PQclear(r);
                return NULL;
        }
        n = (size_t)PQntuples(r);
        lines = calloc(n + 1, sizeof(*lines));
        for (size_t i = 0; i < n; i++) {
                char buf[1024] = "";
                for (int j = 0; j < PQnfields(r); j++) {
                        size_t l = strlen(buf);
                        snprintf(buf + l, sizeof(buf) - l, "%s%s", j ? "|" : "",
                                 PQgetisnull(r, (int)i, j) ? "NULL" : PQgetvalue(r, (int)i, j));
                }
                lines[i] = strdup(buf);
                len += strlen(buf) + 1;
        }
        if (n)
                qsort(lines, n, sizeof(*lines), itest_cmp_str);
        out = calloc(1, len);
        for (size_t i = 0; i < n; i++) {
                if (i)
                        strcat(out, ";");
                strcat(out, lines[i]);
                free(lines[i]);
        }
        free(lines);
        PQclear(r);
        return out;
}

static __attribute__((unused)) bool rows_are(PGconn *c, const char *sql, const char *expected)
{
        char *got = rows_of(c, sql);
        bool good = got && strcmp(got, expected) == 0;

        if (!good)
                fprintf(stderr, "\n    %s: expected [%s], got [%s]", sql, expected, got ? got : "(error)");
        free(got);
        return good;
}

/* Wait until sql's rows are `expected`, up to ms (what a view or a source catching up
 * needs); then as rows_are(), which says what it got. */
static __attribute__((unused)) bool rows_become(PGconn *c, const char *sql, const char *expected,
                                                unsigned ms)
{
        uint64_t deadline = now_ms() + ms;

        for (;;) {
                char *got = rows_of(c, sql);
                bool good = got && strcmp(got, expected) == 0;

                free(got);
                if (good || now_ms() >= deadline)
                        break;
                usleep(20 * 1000);
        }
        return rows_are(c, sql, expected);
}

static __attribute__((unused)) uint64_t scalar_u64(PGconn *c, const char *sql)
{
        char *s = rows_of(c, sql);
        uint64_t v = s ? strtoull(s, NULL, 10) : 0;

        free(s);
        return v;
}

/* scalar_u64() of a formatted query. */
static uint64_t q_u64(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static uint64_t q_u64(PGconn *c, const char *fmt, ...)
{
        char *q = NULL;
        va_list ap;
        uint64_t v;

        va_start(ap, fmt);
        if (vasprintf(&q, fmt, ap) < 0)
                q = NULL;
        va_end(ap);
        v = q ? scalar_u64(c, q) : 0;
        free(q);
        return v;
}

/* The GlobalId of the object called name, or 0. */
static __attribute__((unused)) uint64_t gid_of(PGconn *c, const char *name)
{
        return q_u64(c, "SELECT id FROM coord_objects WHERE name = '%s'", name);
}
#endif

/* The one int column of sql against a workload's INSERTs of the values 0..n-1, ins[v]
 * each one's answer (1 acknowledged, else not): every acknowledged value is there
 * once, no other value twice, none that was not tried.  The number of those that are
 * not, each said on stderr after tag; unacked names a value not acknowledged. */
static __attribute__((unused)) int values_once(PGconn *c, const char *sql, const int *ins, int n,
                                               const char *tag, const char *unacked)
{
        int *count = calloc((size_t)n + 1, sizeof(*count));
        PGresult *r;
        int bad = 0;

        CU_ASSERT_FATAL(count != NULL);
        r = PQexec(c, sql);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
                fprintf(stderr, "\n    %s -> %s", sql, PQresultErrorMessage(r));
                free(count);
                PQclear(r);
                CU_FAIL_FATAL("the query failed");
        }
        for (int i = 0; i < PQntuples(r); i++) {
                int a = atoi(PQgetvalue(r, i, 0));

                if (a < 0 || a >= n || ins[a] == 0) {
                        fprintf(stderr, "\n    %s: phantom value %d", tag, a);
                        bad++;
                } else {
                        count[a]++;
                }
        }
        PQclear(r);
        for (int a = 0; a < n; a++)
                if (count[a] > 1 || (ins[a] == 1 && count[a] != 1)) {
                        fprintf(stderr, "\n    %s: value %d (%s) present %d times", tag, a,
                                ins[a] == 1 ? "acknowledged" : unacked, count[a]);
                        bad++;
                }
        free(count);
        return bad;
}

/* A path in the test's own COORD_HOME (malloc'ed; NULL without memory): the files of
 * sinks and sources. */
static __attribute__((unused)) char *home_file(const char *name)
{
        char *p = NULL;

        if (asprintf(&p, "%s/%s", home, name) < 0)
                return NULL;
        return p;
}

static __attribute__((unused)) void sleep_ms(unsigned ms)
{
        usleep(ms * 1000u);
}

/* A new connection for c's, after the adapter's restart (up to 10 s); NULL if none. */
static __attribute__((unused)) PGconn *reconnect(PGconn *c)
{
        PGconn *n = NULL;

        PQfinish(c);
        for (int w = 0; w < 100 && !(n = db()); w++)
                sleep_ms(100);
        return n;
}

/* A key=value of the status detail of the daemon listening on sock_path; 0 if absent or
 * the daemon does not answer. */
static __attribute__((unused)) uint64_t stat_at(const char *sock_path, const char *key)
{
        Coord__StatusReply *s = NULL;
        uint64_t v = 0;
        char pat[64];
        const char *p;

        if (node_query_status_path(sock_path, 2000, &s) < 0)
                return 0;
        snprintf(pat, sizeof(pat), " %s=", key);
        p = s->detail ? strstr(s->detail, pat) : NULL;
        if (p)
                v = strtoull(p + strlen(pat), NULL, 10);
        coord__status_reply__free_unpacked(s, NULL);
        return v;
}

/* The same of a daemon's (of a fleet, instance 0). */
static __attribute__((unused)) uint64_t stat_of(Coord__Role role, const char *key)
{
        char *path = node_socket_path(run_dir, role);
        uint64_t v = path ? stat_at(path, key) : 0;

        free(path);
        return v;
}

/* The same of the lifecycle follower. */
static __attribute__((unused)) uint64_t lc_stat(const char *key)
{
        return stat_of(COORD__ROLE__ROLE_LIFECYCLE, key);
}

/* Wait until the follower has had n more publications committed (up to timeout_ms): what
 * publications derive (bounds, requirements, compaction) then reflects the statements
 * before the call.  false if they did not come. */
static __attribute__((unused)) bool publications_pass(uint64_t n, unsigned timeout_ms)
{
        uint64_t want = lc_stat("publications") + n;

        for (unsigned w = 0; w < timeout_ms / 10; w++) {
                if (lc_stat("publications") >= want)
                        return true;
                sleep_ms(10);
        }
        return false;
}

/* The status catalog_seq: the adapter's last committed seq, the lifecycle's state seq;
 * 0 if the daemon does not answer. */
static __attribute__((unused)) uint64_t seq_of(Coord__Role role)
{
        Coord__StatusReply *s = NULL;
        uint64_t v = 0;

        if (node_query_status(run_dir, role, 2000, &s) == 0) {
                v = s->catalog_seq;
                coord__status_reply__free_unpacked(s, NULL);
        }
        return v;
}

static pid_t pid_of(Coord__Role role)
{
        Coord__StatusReply *s = NULL;
        pid_t pid = -1;

        if (node_query_status(run_dir, role, 1000, &s) == 0) {
                pid = s->pid;
                coord__status_reply__free_unpacked(s, NULL);
        }
        return pid;
}

/* kill -9 the daemon and wait until it is gone (up to 10 s); false if it was not
 * running, or is still there. */
static __attribute__((unused)) bool kill9(Coord__Role role)
{
        pid_t pid = pid_of(role);

        if (pid <= 0)
                return false;
        kill(pid, SIGKILL);
        return t_wait_for_every(kill(pid, 0) != 0, 10000, 1);
}

/* kill -9 the daemon and bring it up again (tools/coord up); after the adapter's, *c is
 * a new connection.  Any of it failing ends the case. */
static __attribute__((unused)) void kill9_restart(Coord__Role role, PGconn **c)
{
        CU_ASSERT_FATAL(kill9(role));
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        if (role == COORD__ROLE__ROLE_ADAPTER)
                CU_ASSERT_FATAL((*c = reconnect(*c)) != NULL);
}

/* A test's last case: the catalog in memory equals its log's replay (tools/coord
 * check). */
static __attribute__((unused)) void itest_check(void)
{
        CU_ASSERT_EQUAL(t_sh("%s check >/dev/null", coord_cmd), 0);
}

/* Set up an instance named <prefix><pid> under a fresh COORD_HOME (tag names the
 * directory), run the suite, stop the daemons; the logs stay when something failed. */
static int itest_main(const char *tag, const char *prefix, const struct t_suite *suites)
{
        int r;

        top_dir = getenv("COORD_TOP");
        build_dir = getenv("COORD_BUILD");
        if (!top_dir || !build_dir) {
                fprintf(stderr, "COORD_TOP and COORD_BUILD must be set (meson test does)\n");
                return T_EXIT_ERROR;
        }
        pg_port = t_free_port();
        home = t_mkdtemp(tag);
        if (!home || pg_port <= 0 || asprintf(&run_dir, "%s/run", home) < 0 ||
            asprintf(&coord_cmd, "COORD_HOME=%s COORD_SKIP_SETUP=1 COORD_INSTANCE=%s%d COORD_PG_PORT=%d %s/tools/coord",
                     home, prefix, (int)getpid(), pg_port, top_dir) < 0 ||
            asprintf(&conninfo, "host=127.0.0.1 port=%d user=coord dbname=coord connect_timeout=5", pg_port) < 0)
                return T_EXIT_ERROR;
        r = t_run_opts(suites, T_RUN_FIXTURES);
        (void)!t_sh("%s down >/dev/null 2>&1", coord_cmd);
        if (r == T_EXIT_PASS)
                t_rmrf(home);
        else
                fprintf(stderr, "daemon logs kept in %s/log\n", home);
        free(run_dir);
        free(coord_cmd);
        free(conninfo);
        free(home);
        return r;
}

/* itest_main() of one suite: the cases whose names contain the value of the
 * environment variable env (all when it is not set), and case 0, the setup, always. */
static __attribute__((unused)) int itest_main_only(const char *tag, const char *prefix,
                                                   const struct t_case *cases, const char *env)
{
        const char *only = getenv(env);
        size_t n = 0, k = 0;
        struct t_case *run;
        int r;

        while (cases[n].name)
                n++;
        run = calloc(n + 1, sizeof(*run));
        if (!run)
                return T_EXIT_ERROR;
        for (size_t i = 0; i < n; i++)
                if (i == 0 || !only || strstr(cases[i].name, only))
                        run[k++] = cases[i];
        r = itest_main(tag, prefix, (const struct t_suite[]){ { tag, run }, { NULL, NULL } });
        free(run);
        return r;
}
