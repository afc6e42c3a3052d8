/* test-tables -- tables end to end: the three real daemons started with tools/coord, libpq
 * and psql as clients, real RocksDB, sockets and shared memory.
 *
 * Cases, in order, on one instance under a fresh COORD_HOME:
 *   round trips (create, insert, select, delete, drop) and SELECT ... AS OF at several
 *   past timestamps returning exactly the contents at those times (I8);
 *   errors with their SQLSTATEs;
 *   built-in relations coord_objects and coord_frontiers;
 *   a 13-way chain join written in a scattered FROM order runs as fast as in chain
 *   order and counts right (issue 36: no cross products); a cross join past the
 *   controller's --peek-memory-limit-mb fails with 53200 and the controller serves on;
 *   the controller stopped (SIGSTOP) and then killed: SELECT 1, VALUES, SET, SHOW, SHOW
 *   OBJECTS and a read block are answered, a read of a table fails with 57014 after
 *   statement_timeout (SET, or -c statement_timeout= at startup) or at PQcancel, and
 *   everything works once it is back;
 *   the extended protocol (PQexecParams, PQprepare); after a run-time error (1/0, an
 *   overflow, a bad cast) the next statements are served, and in a pipeline the rest up
 *   to Sync is aborted and the next pipeline runs (issue 36);
 *   100 concurrent clients inserting while the controller and then the adapter are
 *   killed with -9: every acknowledged row is there, no statement is half applied (I7);
 *   concurrent DDL shares catalog syncs, and a query string's CREATEs commit together
 *   (runs), answered in order, each seeing the catalog as one at a time would;
 *   the oracle stays monotone across an adapter restart with the wall clock set back;
 *   streamed results (issue 6, adapter-exec.c note 9; the adapter restarted with small
 *   chunks): exactly the right rows in many chunks, a small result in one; a client that
 *   stops reading a large result holds neither other clients nor DDL, and the stream is
 *   freed when it goes; the controller killed mid-stream gives that client 58000 and
 *   its connection goes on working;
 *   a big read in the controller's peek thread (controller-server-peek.c note 18): writes and
 *   small reads are answered while it waits there, it returns exactly its rows, and one
 *   whose requester goes meanwhile is dropped;
 *   a psql script with ON_ERROR_STOP.
 */
#include <inttypes.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "itest.h"

static void test_up(void)
{
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

/* rows (of rows_of()) with line added, in rows_of()'s order; malloc'ed. */
static char *rows_plus(const char *rows, const char *line)
{
        char *all = NULL, *save = NULL, **v, *out;
        size_t n = 0, len = strlen(line) + 1;

        if (asprintf(&all, "%s", rows ? rows : "") < 0)
                return NULL;
        v = calloc(strlen(all) + 2, sizeof(*v));
        for (char *p = strtok_r(all, ";", &save); v && p; p = strtok_r(NULL, ";", &save)) {
                v[n++] = p;
                len += strlen(p) + 1;
        }
        out = v ? calloc(1, len) : NULL;
        if (out) {
                v[n++] = (char *)line;
                qsort(v, n, sizeof(*v), itest_cmp_str);
                for (size_t i = 0; i < n; i++) {
                        if (i)
                                strcat(out, ";");
                        strcat(out, v[i]);
                }
        }
        free(v);
        free(all);
        return out;
}

static void test_round_trip(void)
{
        PGconn *c = db();
        uint64_t t1, t2, t3;
        char *before, *tables;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        /* SHOW TABLES: those there now (what other cases made) and t */
        before = rows_of(c, "SHOW TABLES");
        tables = rows_plus(before, "t|table");
        free(before);
        CU_ASSERT_PTR_NOT_NULL_FATAL(tables);
        CU_ASSERT(ok(c, "CREATE TABLE t (a bigint NOT NULL, b text, c boolean, d integer)"));
        CU_ASSERT(rows_are(c, "SELECT * FROM t", ""));
        CU_ASSERT(ok(c, "INSERT INTO t VALUES (1, 'one', true, 10), (2, 'two', false, 20), (3, NULL, NULL, NULL)"));
        t1 = scalar_u64(c, "SELECT mz_now()");
        CU_ASSERT(rows_are(c, "SELECT a, b, c, d FROM t", "1|one|t|10;2|two|f|20;3|NULL|NULL|NULL"));
        CU_ASSERT(rows_are(c, "SELECT a * 10 + d, b IS NULL FROM t WHERE a >= 2 AND (c OR c IS NULL)", "NULL|t"));
        CU_ASSERT(ok(c, "DELETE FROM t WHERE a = 2"));
        t2 = scalar_u64(c, "SELECT mz_now()");
        CU_ASSERT(ok(c, "INSERT INTO t (a, b) VALUES (4, 'four'), (4, 'four')"));
        t3 = scalar_u64(c, "SELECT mz_now()");
        CU_ASSERT(t1 < t2 && t2 < t3);
        CU_ASSERT(rows_are(c, "SELECT a, b FROM t", "1|one;3|NULL;4|four;4|four"));
        /* AS OF: exactly the contents at each past time (I8). */
        {
                char q[256];
                snprintf(q, sizeof(q), "SELECT a FROM t AS OF %" PRIu64, t1);
                CU_ASSERT(rows_are(c, q, "1;2;3"));
                snprintf(q, sizeof(q), "SELECT a FROM t AS OF %" PRIu64, t2);
                CU_ASSERT(rows_are(c, q, "1;3"));
                snprintf(q, sizeof(q), "SELECT a FROM t AS OF %" PRIu64, t3);
                CU_ASSERT(rows_are(c, q, "1;3;4;4"));
        }
        /* A DELETE of duplicates retracts all of them; the tag counts rows. */
        {
                PGresult *r = PQexec(c, "DELETE FROM t WHERE a = 4");
                CU_ASSERT_STRING_EQUAL(PQcmdStatus(r), "DELETE 2");
                PQclear(r);
                r = PQexec(c, "INSERT INTO t VALUES (5), (6), (7)");
                CU_ASSERT_STRING_EQUAL(PQcmdStatus(r), "INSERT 0 3");
                PQclear(r);
                r = PQexec(c, "SELECT a FROM t");
                CU_ASSERT_STRING_EQUAL(PQcmdStatus(r), "SELECT 5");
                PQclear(r);
        }
        /* UPDATE: the matching rows change at one timestamp; the old ones stay readable
         * AS OF before it (I8); NOT NULL and types are checked as for INSERT. */
        {
                char q[256];
                uint64_t t4 = scalar_u64(c, "SELECT mz_now()");
                PGresult *r = PQexec(c, "UPDATE t SET b = 'x' || a, d = a * 2 WHERE a >= 5");

                CU_ASSERT_STRING_EQUAL(PQcmdStatus(r), "UPDATE 3");
                PQclear(r);
                CU_ASSERT(rows_are(c, "SELECT a, b, d FROM t WHERE a >= 5", "5|x5|10;6|x6|12;7|x7|14"));
                snprintf(q, sizeof(q), "SELECT a, b, d FROM t WHERE a >= 5 AS OF %" PRIu64, t4);
                CU_ASSERT(rows_are(c, q, "5|NULL|NULL;6|NULL|NULL;7|NULL|NULL"));
                CU_ASSERT(fails_with(c, "UPDATE t SET a = NULL WHERE a = 5", "23502"));
                CU_ASSERT(fails_with(c, "UPDATE t SET d = 'five'", "22P02"));
                CU_ASSERT(fails_with(c, "UPDATE t SET nope = 1", "42703"));
                r = PQexec(c, "UPDATE t SET d = d + 1 WHERE false");
                CU_ASSERT_STRING_EQUAL(PQcmdStatus(r), "UPDATE 0");
                PQclear(r);
                CU_ASSERT(rows_are(c, "SELECT a, d FROM t WHERE a >= 5", "5|10;6|12;7|14"));
        }
        CU_ASSERT(rows_are(c, "SHOW TABLES", tables));
        free(tables);
        /* The session's values are the connection's own (libpq's view of it). */
        {
                char want[256];
                snprintf(want, sizeof(want), "%s|%s|public|%d", PQuser(c), PQdb(c), PQbackendPID(c));
                CU_ASSERT(rows_are(c, "SELECT current_user, current_database(), current_schema, "
                                      "pg_backend_pid()", want));
        }
        CU_ASSERT(ok(c, "DROP TABLE t"));
        CU_ASSERT(fails_with(c, "SELECT * FROM t", "42P01"));
        CU_ASSERT(ok(c, "DROP TABLE IF EXISTS t"));
        /* Several statements in one string, the rest skipped after an error, and the
         * INSERTs before it not applied: one implicit transaction, as in PostgreSQL. */
        CU_ASSERT(ok(c, "CREATE TABLE m (x int); INSERT INTO m VALUES (1); INSERT INTO m VALUES (2)"));
        CU_ASSERT(rows_are(c, "SELECT x FROM m", "1;2"));
        CU_ASSERT(fails_with(c, "INSERT INTO m VALUES (3); SELECT nope FROM m; INSERT INTO m VALUES (4)", "42703"));
        CU_ASSERT(rows_are(c, "SELECT x FROM m", "1;2"));
        PQfinish(c);
}

static void test_errors(void)
{
        PGconn *c = db();
        char q[256];
        uint64_t born;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(ok(c, "CREATE TABLE e (a int NOT NULL, b text)"));
        /* Its since stays at its birth below, however slow this machine: the default
         * policy (1 s) would let it move between reading it and reading AS OF it. */
        CU_ASSERT(ok(c, "ALTER TABLE e SET (RETAIN HISTORY = FOR '1h')"));
        CU_ASSERT(fails_with(c, "SELEC 1", "42601"));
        CU_ASSERT(fails_with(c, "SELECT * FROM nowhere", "42P01"));
        CU_ASSERT(fails_with(c, "CREATE TABLE e (x int)", "42P07"));
        CU_ASSERT(fails_with(c, "INSERT INTO e VALUES ('abc', 'x')", "22P02"));
        CU_ASSERT(fails_with(c, "INSERT INTO e VALUES (true, 'x')", "42804"));
        CU_ASSERT(fails_with(c, "INSERT INTO e VALUES (1, 'x', 3)", "42601"));
        CU_ASSERT(fails_with(c, "INSERT INTO e VALUES (NULL, 'x')", "23502"));
        CU_ASSERT(fails_with(c, "INSERT INTO e VALUES (99999999999, 'x')", "22003"));
        CU_ASSERT(fails_with(c, "SELECT 1 / 0", "22012"));
        /* AS OF below the table's since (its birth): an error naming the since. */
        {
                char *id = rows_of(c, "SELECT id FROM coord_objects WHERE name = 'e'");
                CU_ASSERT_PTR_NOT_NULL_FATAL(id);
                /* Readable from max(physical since, committed bound): the bound committed
                 * with the table (its birth) may be above the since the controller gave
                 * it, never below (I2).  The follower enacts the table after the commit:
                 * its frontiers row shows up at the next append after that. */
                snprintf(q, sizeof(q), "SELECT read_frontier FROM coord_frontiers WHERE object_id = %s", id);
                for (int i = 0; i < 500 && (born = scalar_u64(c, q)) == 0; i++)
                        usleep(10 * 1000);
                snprintf(q, sizeof(q), "SELECT bound FROM coord_bounds WHERE object_id = %s", id);
                {
                        uint64_t bound = scalar_u64(c, q);
                        CU_ASSERT(bound >= born);
                        born = bound > born ? bound : born;
                }
                free(id);
        }
        CU_ASSERT(born > 0);
        snprintf(q, sizeof(q), "SELECT * FROM e AS OF %" PRIu64, born - 1);
        CU_ASSERT(fails_with(c, q, "55000"));
        /* The adapter refuses it itself, from the since in the frontier ring (its
         * message names the table; the controller's would name collection ids). */
        {
                PGresult *r = PQexec(c, q);
                const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
                CU_ASSERT(msg && strstr(msg, "\"e\""));
                PQclear(r);
        }
        snprintf(q, sizeof(q), "SELECT * FROM e AS OF %" PRIu64, born);
        CU_ASSERT(ok(c, q));
        /* The connection still works after all those errors. */
        CU_ASSERT(ok(c, "INSERT INTO e VALUES (1, 'ok')"));
        CU_ASSERT(rows_are(c, "SELECT a, b FROM e", "1|ok"));
        PQfinish(c);
}

static void test_builtins(void)
{
        PGconn *c = db();
        char *id, q[256];

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(ok(c, "CREATE TABLE bt (x bigint)"));
        CU_ASSERT(rows_are(c, "SELECT name, kind, create_sql FROM coord_objects WHERE name = 'bt'",
                           "bt|table|CREATE TABLE bt (x bigint)"));
        id = rows_of(c, "SELECT id FROM coord_objects WHERE name = 'bt'");
        CU_ASSERT_PTR_NOT_NULL_FATAL(id);
        snprintf(q, sizeof(q), "SELECT read_frontier <= write_frontier, write_frontier > 0 "
                               "FROM coord_frontiers WHERE object_id = %s", id);
        /* enacted by the follower after the commit: wait for its row */
        for (int i = 0; i < 500; i++) {
                char *got = rows_of(c, q);
                bool there = got && *got;
                free(got);
                if (there)
                        break;
                usleep(10 * 1000);
        }
        CU_ASSERT(rows_are(c, q, "t|t"));
        CU_ASSERT(ok(c, "DROP TABLE bt"));
        CU_ASSERT(rows_are(c, "SELECT name FROM coord_objects WHERE name = 'bt'", ""));
        /* Users read the built-ins; only Coord writes them. */
        CU_ASSERT(fails_with(c, "INSERT INTO coord_objects VALUES (5, 'x', 'table', 'y')", "42501"));
        CU_ASSERT(fails_with(c, "UPDATE coord_objects SET name = 'x'", "42501"));
        CU_ASSERT(fails_with(c, "DELETE FROM coord_bounds", "42501"));
        CU_ASSERT(fails_with(c, "DELETE FROM coord_requirements WHERE true", "42501"));
        CU_ASSERT(fails_with(c, "DROP TABLE coord_objects", "42809"));
        /* A read served from an index on coord_objects is linearizable too: it sees the
         * row of every DDL answered before it (the fence, adapter-exec.c note 3, goes
         * by logical inputs).  Every one of these read stale before. */
        CU_ASSERT(ok(c, "CREATE DEFAULT INDEX ON coord_objects"));
        for (int i = 0; i < 30; i++) {
                snprintf(q, sizeof(q), "CREATE TABLE bt_%d (x int)", i);
                CU_ASSERT(ok(c, q));
                snprintf(q, sizeof(q), "SELECT count(*) FROM coord_objects WHERE name = 'bt_%d'", i);
                CU_ASSERT(rows_are(c, q, "1"));
        }
        for (int i = 0; i < 30; i++) {
                snprintf(q, sizeof(q), "DROP TABLE bt_%d", i);
                CU_ASSERT(ok(c, q));
        }
        CU_ASSERT(ok(c, "DROP INDEX coord_objects_primary_idx"));
        free(id);
        PQfinish(c);
}

static const char *tag_of(PGconn *c, const char *sql, char *buf, size_t size)
{
        PGresult *r = PQexec(c, sql);

        snprintf(buf, size, "%s", PQresultStatus(r) == PGRES_FATAL_ERROR
                                          ? PQresultErrorField(r, PG_DIAG_SQLSTATE)
                                          : PQcmdStatus(r));
        PQclear(r);
        return buf;
}

/* BEGIN ... COMMIT: the block's INSERTs become visible together at COMMIT, never before,
 * never after ROLLBACK, an error or a client that leaves; a block reads or writes;
 * DELETE, UPDATE and DDL are 25001 in it; ReadyForQuery says where the block is. */
static void test_transactions(void)
{
        PGconn *c = db(), *o = db();
        const char *v[1] = { "4" };
        char tag[64];
        PGresult *r;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_PTR_NOT_NULL_FATAL(o);
        CU_ASSERT(ok(c, "CREATE TABLE txt (a int NOT NULL)"));
        CU_ASSERT_EQUAL(PQtransactionStatus(c), PQTRANS_IDLE);
        CU_ASSERT_STRING_EQUAL(tag_of(c, "BEGIN", tag, sizeof(tag)), "BEGIN");
        CU_ASSERT_EQUAL(PQtransactionStatus(c), PQTRANS_INTRANS);
        CU_ASSERT_STRING_EQUAL(tag_of(c, "INSERT INTO txt VALUES (1)", tag, sizeof(tag)), "INSERT 0 1");
        CU_ASSERT_STRING_EQUAL(tag_of(c, "INSERT INTO txt VALUES (2), (3)", tag, sizeof(tag)), "INSERT 0 2");
        r = PQexecParams(c, "INSERT INTO txt VALUES ($1)", 1, NULL, v, NULL, NULL, 0);
        CU_ASSERT_STRING_EQUAL(PQcmdStatus(r), "INSERT 0 1");
        PQclear(r);
        CU_ASSERT_STRING_EQUAL(tag_of(c, "INSERT INTO txt VALUES (NULL)", tag, sizeof(tag)), "23502");
        CU_ASSERT_EQUAL(PQtransactionStatus(c), PQTRANS_INERROR);
        CU_ASSERT_STRING_EQUAL(tag_of(c, "INSERT INTO txt VALUES (5)", tag, sizeof(tag)), "25P02");
        CU_ASSERT_STRING_EQUAL(tag_of(c, "COMMIT", tag, sizeof(tag)), "ROLLBACK");
        CU_ASSERT_EQUAL(PQtransactionStatus(c), PQTRANS_IDLE);
        CU_ASSERT(rows_are(o, "SELECT count(*) FROM txt", "0"));

        /* COMMIT: all of them, at one timestamp; nothing before it. */
        CU_ASSERT(ok(c, "BEGIN; INSERT INTO txt VALUES (1); INSERT INTO txt VALUES (2), (3)"));
        CU_ASSERT_EQUAL(PQtransactionStatus(c), PQTRANS_INTRANS);
        r = PQexecParams(c, "INSERT INTO txt VALUES ($1)", 1, NULL, v, NULL, NULL, 0);
        CU_ASSERT_STRING_EQUAL(PQcmdStatus(r), "INSERT 0 1");
        PQclear(r);
        CU_ASSERT(rows_are(o, "SELECT count(*) FROM txt", "0"));
        CU_ASSERT_STRING_EQUAL(tag_of(c, "COMMIT", tag, sizeof(tag)), "COMMIT");
        CU_ASSERT_EQUAL(PQtransactionStatus(c), PQTRANS_IDLE);
        CU_ASSERT(rows_are(o, "SELECT count(*), min(a), max(a) FROM txt", "4|1|4"));
        {
                uint64_t t = scalar_u64(o, "SELECT mz_now()");
                char q[160];
                bool together = true;

                /* Going back from now, the count drops from 4 to 0 at once. */
                for (uint64_t k = 0; k < 2000 && together; k++) {
                        char *got;

                        snprintf(q, sizeof(q), "SELECT count(*) FROM txt AS OF %" PRIu64, t - k);
                        got = rows_of(o, q);
                        if (!got || strcmp(got, "4") != 0) {
                                together = got && strcmp(got, "0") == 0;
                                free(got);
                                break;
                        }
                        free(got);
                }
                CU_ASSERT(together);
        }

        /* ROLLBACK drops them; so does leaving. */
        CU_ASSERT(ok(c, "BEGIN; INSERT INTO txt VALUES (10); ROLLBACK"));
        CU_ASSERT_EQUAL(PQtransactionStatus(c), PQTRANS_IDLE);
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT(ok(c, "INSERT INTO txt VALUES (11)"));
        PQfinish(c);
        c = db();
        CU_ASSERT(rows_are(o, "SELECT count(*) FROM txt", "4"));

        /* A table dropped between the INSERT and COMMIT (issue 36 item 5): 42P01 naming
         * it, as PostgreSQL's "relation ... does not exist", not the controller's gid;
         * nothing of the block is written, and nothing else fails with it: the DROP's
         * built-in rows are not lost (no reconciliation reads them back). */
        {
                uint64_t reads = stat_of(COORD__ROLE__ROLE_ADAPTER, "builtin_reads");
                const char *st;

                CU_ASSERT(ok(c, "CREATE TABLE txd (a int)"));
                CU_ASSERT(ok(c, "BEGIN; INSERT INTO txd VALUES (1)"));
                CU_ASSERT(ok(c, "INSERT INTO txt VALUES (5)"));
                CU_ASSERT(ok(o, "DROP TABLE txd"));
                r = PQexec(c, "COMMIT");
                st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
                CU_ASSERT(PQresultStatus(r) == PGRES_FATAL_ERROR && st && strcmp(st, "42P01") == 0);
                CU_ASSERT_PTR_NOT_NULL(strstr(PQresultErrorMessage(r), "relation \"txd\" does not exist"));
                PQclear(r);
                CU_ASSERT_EQUAL(PQtransactionStatus(c), PQTRANS_IDLE);
                CU_ASSERT(rows_are(o, "SELECT count(*) FROM txt", "4"));
                CU_ASSERT(rows_are(o, "SELECT count(*) FROM coord_objects WHERE name = 'txd'", "0"));
                CU_ASSERT_EQUAL(stat_of(COORD__ROLE__ROLE_ADAPTER, "builtin_reads"), reads);
                CU_ASSERT(ok(c, "INSERT INTO txt VALUES (5)"));
                CU_ASSERT(ok(c, "DELETE FROM txt WHERE a = 5"));
        }

        /* A block reads or writes (or creates: test_ddl_blocks); DELETE, UPDATE and other
         * DDL do not run in one. */
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM txt", "4"));
        CU_ASSERT_STRING_EQUAL(tag_of(c, "INSERT INTO txt VALUES (12)", tag, sizeof(tag)), "25000");
        CU_ASSERT(ok(c, "ROLLBACK"));
        CU_ASSERT(ok(c, "BEGIN; INSERT INTO txt VALUES (12)"));
        CU_ASSERT_STRING_EQUAL(tag_of(c, "SELECT * FROM txt", tag, sizeof(tag)), "25000");
        CU_ASSERT(ok(c, "ROLLBACK"));
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT_STRING_EQUAL(tag_of(c, "DELETE FROM txt", tag, sizeof(tag)), "25001");
        CU_ASSERT(ok(c, "ROLLBACK; BEGIN"));
        CU_ASSERT_STRING_EQUAL(tag_of(c, "UPDATE txt SET a = 0", tag, sizeof(tag)), "25001");
        CU_ASSERT(ok(c, "ROLLBACK; BEGIN"));
        CU_ASSERT_STRING_EQUAL(tag_of(c, "DROP TABLE txt", tag, sizeof(tag)), "25001");
        CU_ASSERT(ok(c, "ROLLBACK; BEGIN; CREATE TABLE txt2 (a int)"));
        CU_ASSERT(ok(c, "ROLLBACK"));
        CU_ASSERT(fails_with(c, "SELECT * FROM txt2", "42P01"));
        /* Issue 35 item 6: READ ONLY blocks refuse writes (25006); SET TRANSACTION
         * sets the block's mode (before its first query); AND CHAIN is refused, not
         * taken for a plain COMMIT; `AS OF` without its time is a syntax error. */
        CU_ASSERT(ok(c, "BEGIN READ ONLY"));
        CU_ASSERT_STRING_EQUAL(tag_of(c, "INSERT INTO txt VALUES (13)", tag, sizeof(tag)), "25006");
        CU_ASSERT(ok(c, "ROLLBACK"));
        CU_ASSERT(ok(c, "START TRANSACTION ISOLATION LEVEL SERIALIZABLE; SET TRANSACTION READ ONLY"));
        CU_ASSERT_STRING_EQUAL(tag_of(c, "INSERT INTO txt VALUES (13)", tag, sizeof(tag)), "25006");
        CU_ASSERT(ok(c, "ROLLBACK"));
        CU_ASSERT(ok(c, "BEGIN READ ONLY"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM txt", "4"));
        CU_ASSERT_STRING_EQUAL(tag_of(c, "SET TRANSACTION READ WRITE", tag, sizeof(tag)), "25001");
        CU_ASSERT(ok(c, "ROLLBACK"));
        CU_ASSERT(ok(c, "BEGIN READ WRITE; INSERT INTO txt VALUES (13); ROLLBACK"));
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT_STRING_EQUAL(tag_of(c, "COMMIT AND CHAIN", tag, sizeof(tag)), "0A000");
        CU_ASSERT(ok(c, "ROLLBACK"));
        CU_ASSERT(fails_with(c, "ROLLBACK AND CHAIN", "0A000"));
        CU_ASSERT(fails_with(c, "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", "0A000"));
        CU_ASSERT(fails_with(c, "SELECT * FROM txt AS OF", "42601"));
        CU_ASSERT(fails_with(c, "SELECT * FROM txt AS OF;", "42601"));
        /* Issue 35 item 6: a simple query of several statements is one implicit
         * transaction (adapter-exec.c note 13): its INSERTs commit together at its end,
         * or not at all when a statement of it fails; ROLLBACK drops them, COMMIT
         * commits them, BEGIN takes them into the block; a read sees them. */
        CU_ASSERT(fails_with(c, "INSERT INTO txt VALUES (20); INSERT INTO txt VALUES (NULL)", "23502"));
        CU_ASSERT(fails_with(c, "INSERT INTO txt VALUES (21); INSERT INTO txt VALUES (22); "
                                "INSERT INTO nosuch VALUES (1)", "42P01"));
        CU_ASSERT(fails_with(c, "INSERT INTO txt VALUES (23); SET statement_timeout = 'x'", "22023"));
        CU_ASSERT_EQUAL(PQtransactionStatus(c), PQTRANS_IDLE);
        CU_ASSERT(rows_are(o, "SELECT count(*) FROM txt", "4"));
        CU_ASSERT(ok(c, "INSERT INTO txt VALUES (24); ROLLBACK"));
        CU_ASSERT(rows_are(o, "SELECT count(*) FROM txt", "4"));
        CU_ASSERT(fails_with(c, "INSERT INTO txt VALUES (25); COMMIT; INSERT INTO txt VALUES (NULL)", "23502"));
        CU_ASSERT(rows_are(o, "SELECT count(*) FROM txt WHERE a >= 20", "1"));
        CU_ASSERT(ok(c, "INSERT INTO txt VALUES (26); BEGIN; INSERT INTO txt VALUES (27)"));
        CU_ASSERT_EQUAL(PQtransactionStatus(c), PQTRANS_INTRANS);
        CU_ASSERT(ok(c, "ROLLBACK"));
        CU_ASSERT(rows_are(c, "INSERT INTO txt VALUES (28), (29); SELECT count(*) FROM txt WHERE a >= 20", "3"));
        CU_ASSERT(ok(c, "INSERT INTO txt VALUES (30); INSERT INTO txt VALUES (31)"));
        CU_ASSERT(rows_are(o, "SELECT count(*) FROM txt WHERE a >= 20", "5"));
        CU_ASSERT(ok(c, "DELETE FROM txt WHERE a >= 20"));
        CU_ASSERT(ok(c, "INSERT INTO txt VALUES (14)"));        /* no block: not read only */
        CU_ASSERT(ok(c, "DELETE FROM txt WHERE a = 14"));
        CU_ASSERT(rows_are(o, "SELECT count(*) FROM txt", "4"));
        CU_ASSERT(ok(c, "DROP TABLE txt"));
        PQfinish(c);
        PQfinish(o);
}

/* adapter-exec.c note 14: a REPEATABLE READ or SERIALIZABLE block reads at one
 * timestamp, held for each input it has read; READ COMMITTED (and no level) at each
 * statement's own; once an input's history has moved past the block's timestamp
 * before the block read it, the read fails with 40001. */
static void test_isolation(void)
{
        PGconn *c = db(), *o = db();
        static const char *const levels[] = { "REPEATABLE READ", "SERIALIZABLE", "READ COMMITTED", NULL };
        uint64_t t, since = 0, until;
        char q[256], tag[64];
        int n = 0;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_PTR_NOT_NULL_FATAL(o);
        CU_ASSERT_FATAL(ok(o, "CREATE TABLE iso (a int)"));
        for (size_t i = 0; i < 4; i++) {
                uint64_t n1, n2;

                snprintf(q, sizeof(q), "BEGIN%s%s", levels[i] ? " ISOLATION LEVEL " : "",
                         levels[i] ? levels[i] : "");
                CU_ASSERT(ok(c, q));
                n1 = scalar_u64(c, "SELECT count(*) FROM iso");
                CU_ASSERT(ok(o, "INSERT INTO iso VALUES (1)"));
                n2 = scalar_u64(c, "SELECT count(*) FROM iso");
                CU_ASSERT(ok(c, "COMMIT"));
                CU_ASSERT_EQUAL(n1, (uint64_t)n);
                CU_ASSERT_EQUAL(n2, (uint64_t)(i < 2 ? n : n + 1));
                n++;
        }
        /* SET TRANSACTION inside, SET default_transaction_isolation before. */
        CU_ASSERT(ok(c, "BEGIN; SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"));
        t = scalar_u64(c, "SELECT mz_now()");
        CU_ASSERT(ok(o, "INSERT INTO iso VALUES (1)"));
        CU_ASSERT_EQUAL(scalar_u64(c, "SELECT mz_now()"), t);
        CU_ASSERT_EQUAL(scalar_u64(c, "SELECT count(*) FROM iso"), (uint64_t)n);
        CU_ASSERT_STRING_EQUAL(tag_of(c, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED", tag, sizeof(tag)),
                               "25001");
        CU_ASSERT(ok(c, "ROLLBACK"));
        n++;
        CU_ASSERT(ok(c, "SET default_transaction_isolation = 'repeatable read'"));
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT_EQUAL(scalar_u64(c, "SELECT count(*) FROM iso"), (uint64_t)n);
        CU_ASSERT(ok(o, "INSERT INTO iso VALUES (1)"));
        CU_ASSERT_EQUAL(scalar_u64(c, "SELECT count(*) FROM iso"), (uint64_t)n);
        CU_ASSERT(ok(c, "COMMIT"));
        n++;
        CU_ASSERT(ok(c, "RESET default_transaction_isolation"));
        CU_ASSERT(fails_with(c, "SET default_transaction_isolation = 'snapshot'", "22023"));

        /* The block's snapshot is held (adapter-readhold.c) for what it has read: iso
         * stays readable at t while the history of iso2, which the block has not read,
         * moves past t -- iso2's read then fails with 40001, never reads another time. */
        CU_ASSERT_FATAL(ok(o, "CREATE TABLE iso2 (a int)"));
        CU_ASSERT(ok(c, "BEGIN ISOLATION LEVEL REPEATABLE READ"));
        t = scalar_u64(c, "SELECT mz_now()");
        CU_ASSERT_EQUAL(scalar_u64(c, "SELECT count(*) FROM iso"), (uint64_t)n);
        until = now_ms() + 30000;
        while (since <= t && now_ms() < until) {
                CU_ASSERT(ok(o, "INSERT INTO iso VALUES (1)"));
                CU_ASSERT(ok(o, "INSERT INTO iso2 VALUES (1)"));
                sleep_ms(100);  /* pace the writes: the history window is time */
                since = scalar_u64(o, "SELECT f.read_frontier FROM coord_frontiers f JOIN coord_objects o "
                                      "ON o.id = f.object_id WHERE o.name = 'iso2'");
        }
        CU_ASSERT(since > t);
        CU_ASSERT(scalar_u64(o, "SELECT f.read_frontier FROM coord_frontiers f JOIN coord_objects o "
                                "ON o.id = f.object_id WHERE o.name = 'iso'") <= t);
        CU_ASSERT_EQUAL(scalar_u64(c, "SELECT count(*) FROM iso"), (uint64_t)n);
        CU_ASSERT_STRING_EQUAL(tag_of(c, "SELECT count(*) FROM iso2", tag, sizeof(tag)), "40001");
        CU_ASSERT(ok(c, "ROLLBACK"));
        CU_ASSERT(ok(o, "DROP TABLE iso2"));
        CU_ASSERT(ok(o, "DROP TABLE iso"));
        PQfinish(c);
        PQfinish(o);
}

/* A read waiting for an upper that will not come for an hour is cancelled with
 * PQcancel: 57014 at once, and the connection goes on working. */
/* PQcancel the statement running on c and read its results: whether it ended with
 * 57014. */
static bool cancel_running(PGconn *c)
{
        char errbuf[256] = "";
        PGcancel *cancel = PQgetCancel(c);
        PGresult *r;
        bool cancelled = false;

        if (!cancel || PQcancel(cancel, errbuf, sizeof(errbuf)) != 1)
                fprintf(stderr, "\n    PQcancel failed: %s", errbuf);
        PQfreeCancel(cancel);
        while ((r = PQgetResult(c))) {
                const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);

                if (PQresultStatus(r) == PGRES_FATAL_ERROR && st && strcmp(st, "57014") == 0)
                        cancelled = true;
                PQclear(r);
        }
        return cancelled;
}

static void test_cancel(void)
{
        PGconn *c = db();
        char q[128];
        uint64_t now, t0, parked;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(ok(c, "CREATE TABLE wait_t (x int)"));
        now = scalar_u64(c, "SELECT mz_now()");
        snprintf(q, sizeof(q), "SELECT x FROM wait_t AS OF %" PRIu64, now + 3600 * 1000);
        parked = stat_of(COORD__ROLE__ROLE_CONTROLLER, "peeks_parked");
        CU_ASSERT_FATAL(PQsendQuery(c, q) == 1);
        /* it waits in the controller for its time */
        CU_ASSERT(t_wait_for(stat_of(COORD__ROLE__ROLE_CONTROLLER, "peeks_parked") > parked, 5000));
        t0 = now_ms();
        CU_ASSERT(cancel_running(c));
        printf("\n    cancelled after %llu ms\n", (unsigned long long)(now_ms() - t0));
        CU_ASSERT(now_ms() - t0 < 5000);        /* the read would have waited 10 s */
        CU_ASSERT(rows_are(c, "SELECT x FROM wait_t", ""));
        PQfinish(c);
}

/* Issue 36: thirteen tables joined in a chain, the FROM list in an order where each
 * neighbour pair is apart; the planner joins them along the chain (no cross product:
 * 21 s and 4.2 GB of controller before), so it is as fast as the chain order. */
static void test_join_order(void)
{
        static const char *const from_order[13] = { "j1", "j3", "j5", "j7", "j9", "j11", "j13",
                                                    "j2", "j4", "j6", "j8", "j10", "j12" };
        PGconn *c = db();
        char q[1024], ddl[256];
        size_t len;
        uint64_t t0, ms;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        for (int i = 1; i <= 13; i++) {
                snprintf(ddl, sizeof(ddl), "CREATE TABLE j%d (a int, b int)", i);
                CU_ASSERT_FATAL(ok(c, ddl));
                len = (size_t)snprintf(q, sizeof(q), "INSERT INTO j%d VALUES ", i);
                for (int a = 0; a < 10; a++)
                        len += (size_t)snprintf(q + len, sizeof(q) - len, "%s(%d, %d)", a ? ", " : "",
                                                a, (a * 3 + i) % 10);
                CU_ASSERT_FATAL(ok(c, q));
        }
        len = (size_t)snprintf(q, sizeof(q), "SELECT count(*) FROM ");
        for (int i = 0; i < 13; i++)
                len += (size_t)snprintf(q + len, sizeof(q) - len, "%s%s", i ? ", " : "", from_order[i]);
        len += (size_t)snprintf(q + len, sizeof(q) - len, " WHERE ");
        for (int i = 1; i < 13; i++)
                len += (size_t)snprintf(q + len, sizeof(q) - len, "%sj%d.b = j%d.a",
                                        i > 1 ? " AND " : "", i, i + 1);
        CU_ASSERT_FATAL(len < sizeof(q));
        t0 = now_ms();
        /* Each row of j1 starts one chain: b is a bijection of a. */
        CU_ASSERT(rows_are(c, q, "10"));
        ms = now_ms() - t0;
        printf("\n    13-way join in scattered FROM order: %llu ms\n", (unsigned long long)ms);
        CU_ASSERT(ms < 3000);
        CU_ASSERT(rows_are(c, "SELECT j1.a, j4.b FROM j3, j1, j4, j2 WHERE j1.b = j2.a AND "
                              "j2.b = j3.a AND j3.b = j4.a AND j1.a < 2",
                           "0|8;1|9"));
        PQfinish(c);
}

/* VmHWM (peak resident set) of a process, in kB; 0 when unknown. */
static uint64_t peak_rss_kb(pid_t pid)
{
        char path[64], line[256];
        uint64_t kb = 0;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "r");
        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "VmHWM: %" SCNu64, &kb) == 1)
                        break;
        fclose(f);
        return kb;
}

/* Issue 36: a query's evaluation holds at most --peek-memory-limit-mb in the controller:
 * a cross join of three 400-row tables (64 M rows) fails with 53200 naming the limit,
 * the controller's memory stays near it, and the same controller answers everyone on. */
static void test_peek_memory_limit(void)
{
        PGconn *c, *other;
        PGresult *r;
        char q[16384];
        size_t len;
        pid_t controller;
        uint64_t hwm0, hwm1, t0, ms;

        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
        CU_ASSERT_EQUAL_FATAL(t_sh("COORD_CONTROLLER_ARGS='--peek-memory-limit-mb 16' %s up >/dev/null",
                                   coord_cmd), 0);
        c = db();
        other = db();
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_PTR_NOT_NULL_FATAL(other);
        for (int t = 1; t <= 3; t++) {
                CU_ASSERT_FATAL(okf(c, "CREATE TABLE mx%d (a int, b text)", t));
                len = (size_t)snprintf(q, sizeof(q), "INSERT INTO mx%d VALUES ", t);
                for (int i = 0; i < 400; i++)
                        len += (size_t)snprintf(q + len, sizeof(q) - len, "%s(%d, 'row %d')",
                                                i ? ", " : "", i, i);
                CU_ASSERT_FATAL(len < sizeof(q));
                CU_ASSERT_FATAL(ok(c, q));
        }
        controller = pid_of(COORD__ROLE__ROLE_CONTROLLER);
        hwm0 = peak_rss_kb(controller);
        t0 = now_ms();
        r = PQexec(c, "SELECT count(*) FROM mx1, mx2, mx3");
        ms = now_ms() - t0;
        CU_ASSERT_EQUAL(PQresultStatus(r), PGRES_FATAL_ERROR);
        CU_ASSERT_STRING_EQUAL(PQresultErrorField(r, PG_DIAG_SQLSTATE) ?: "", "53200");
        CU_ASSERT_PTR_NOT_NULL(strstr(PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) ?: "",
                                      "memory limit of 16 MB"));
        PQclear(r);
        hwm1 = peak_rss_kb(controller);
        printf("\n    cross join of 3 x 400 rows under 16 MB: 53200 after %llu ms, controller peak "
               "RSS %llu -> %llu kB\n", (unsigned long long)ms, (unsigned long long)hwm0,
               (unsigned long long)hwm1);
        CU_ASSERT(hwm1 < hwm0 + 128 * 1024);
        /* The same controller serves on, the failed client and the others alike. */
        CU_ASSERT_EQUAL(pid_of(COORD__ROLE__ROLE_CONTROLLER), controller);
        CU_ASSERT(rows_are(other, "SELECT count(*) FROM mx1, mx2 WHERE mx1.a = mx2.a", "400"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM mx1, mx2", "160000"));
        CU_ASSERT(ok(c, "INSERT INTO mx1 VALUES (1000, 'more')"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM mx1", "401"));
        for (int t = 1; t <= 3; t++)
                CU_ASSERT(okf(c, "DROP TABLE mx%d", t));
        PQfinish(other);
        PQfinish(c);
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

/* The SQLSTATE of sql's error on c ("" when it succeeded); *ms how long it took. */
static const char *sqlstate_of(PGconn *c, const char *sql, uint64_t *ms, char *msg, size_t msglen)
{
        static char st[6];
        uint64_t t0 = now_ms();
        PGresult *r = PQexec(c, sql);
        const char *got = PQresultErrorField(r, PG_DIAG_SQLSTATE);

        *ms = now_ms() - t0;
        snprintf(st, sizeof(st), "%s", PQresultStatus(r) == PGRES_FATAL_ERROR && got ? got : "");
        if (msg)
                snprintf(msg, msglen, "%s", PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) ?: "");
        PQclear(r);
        return st;
}

/* A SELECT sent on w waits for the controller; PQcancel ends it with 57014 at once. */
static void cancel_waiting(PGconn *w, const char *sql)
{
        uint64_t t0;

        CU_ASSERT_FATAL(PQsendQuery(w, sql) == 1);
        usleep(300 * 1000);                     /* time it would take to answer */
        CU_ASSERT(PQconsumeInput(w) && PQisBusy(w));    /* no answer yet */
        t0 = now_ms();
        CU_ASSERT(cancel_running(w));
        CU_ASSERT(now_ms() - t0 < 2000);
}

/* While the controller is away -- stopped (SIGSTOP), then killed -- what needs no
 * collection is answered at once (SELECT 1, VALUES, SET, SHOW, SHOW OBJECTS, a read
 * block), a read of a table fails after statement_timeout with 57014 or at PQcancel, and
 * once it is back everything works (issue 36, item 3). */
static void test_controller_away(void)
{
        PGconn *c = db(), *w = db(), *o;
        char msg[256], info[512];
        uint64_t ms;
        pid_t controller;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_PTR_NOT_NULL_FATAL(w);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE away (a int)"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO away VALUES (1)"));
        CU_ASSERT(rows_are(c, "SHOW statement_timeout", "0"));
        CU_ASSERT(ok(c, "SET statement_timeout = '2s'"));
        CU_ASSERT(rows_are(c, "SHOW statement_timeout", "2s"));
        CU_ASSERT(ok(c, "SET statement_timeout TO 250"));
        CU_ASSERT(rows_are(c, "SHOW statement_timeout", "250ms"));
        CU_ASSERT(ok(c, "RESET statement_timeout"));
        CU_ASSERT(rows_are(c, "SHOW statement_timeout", "0"));
        CU_ASSERT(fails_with(c, "SET statement_timeout = 'soon'", "22023"));
        CU_ASSERT(fails_with(c, "SET statement_timeout = -1", "22023"));
        /* The session's default from the startup packet (libpq's PGOPTIONS). */
        snprintf(info, sizeof(info), "%s options='-c statement_timeout=300'", conninfo);
        o = PQconnectdb(info);
        CU_ASSERT_FATAL(PQstatus(o) == CONNECTION_OK);
        CU_ASSERT(rows_are(o, "SHOW statement_timeout", "300ms"));
        CU_ASSERT(ok(o, "SET statement_timeout = 0"));
        CU_ASSERT(ok(o, "RESET statement_timeout"));
        CU_ASSERT(rows_are(o, "SHOW statement_timeout", "300ms"));

        for (int round = 0; round < 2; round++) {
                const char *how = round == 0 ? "stopped" : "killed";

                controller = pid_of(COORD__ROLE__ROLE_CONTROLLER);
                CU_ASSERT_FATAL(controller > 0);
                if (round == 0) {
                        CU_ASSERT_FATAL(kill(controller, SIGSTOP) == 0);
                } else {
                        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
                }
                /* A read waits on w meanwhile: the others are served all the same. */
                CU_ASSERT_FATAL(PQsendQuery(w, "SELECT a FROM away") == 1);
                CU_ASSERT(rows_are(c, "SELECT 1", "1"));
                CU_ASSERT(rows_are(c, "SELECT 1 + 1 AS two, 'x' || 'y', NULL IS NULL", "2|xy|t"));
                CU_ASSERT(rows_are(c, "VALUES (1, 'a'), (2, 'b')", "1|a;2|b"));
                CU_ASSERT(rows_are(c, "SELECT 2 WHERE false", ""));
                CU_ASSERT(rows_are(c, "SHOW server_version_num", "150000"));
                {
                        char *objects = rows_of(c, "SHOW OBJECTS");

                        CU_ASSERT(objects && strstr(objects, "away|table"));
                        free(objects);
                }
                CU_ASSERT(ok(c, "SET application_name = 'x'"));
                CU_ASSERT(ok(c, "BEGIN"));
                CU_ASSERT(rows_are(c, "SELECT 3", "3"));
                CU_ASSERT(ok(c, "COMMIT"));
                CU_ASSERT(fails_with(c, "SELECT 1/0", "22012"));
                /* A read of a table: 57014 after statement_timeout. */
                CU_ASSERT(ok(c, "SET statement_timeout = 500"));
                CU_ASSERT_STRING_EQUAL(sqlstate_of(c, "SELECT a FROM away", &ms, msg, sizeof(msg)), "57014");
                CU_ASSERT_STRING_EQUAL(msg, "canceling statement due to statement timeout");
                printf("\n    controller %s: SELECT 1 answered; a read with statement_timeout = 500 "
                       "failed after %llu ms\n", how, (unsigned long long)ms);
                CU_ASSERT(ms >= 450 && ms < 2000);
                CU_ASSERT(rows_are(c, "SELECT 4", "4"));       /* the session goes on */
                CU_ASSERT(ok(c, "SET statement_timeout = 0"));
                CU_ASSERT_STRING_EQUAL(sqlstate_of(o, "SELECT a FROM away", &ms, NULL, 0), "57014");
                CU_ASSERT(ms >= 250 && ms < 2000);
                /* The one waiting on w since the controller went: PQcancel ends it. */
                CU_ASSERT(cancel_running(w));
                cancel_waiting(w, "SELECT count(*) FROM away");
                /* Back: everything works. */
                if (round == 0) {
                        CU_ASSERT(kill(controller, SIGCONT) == 0);
                } else {
                        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
                }
                CU_ASSERT(rows_are(w, "SELECT a FROM away", "1"));
                CU_ASSERT(ok(w, "INSERT INTO away VALUES (2)"));
                CU_ASSERT(ok(w, "DELETE FROM away WHERE a = 2"));
                CU_ASSERT(rows_are(c, "SELECT count(*) FROM away", "1"));
                CU_ASSERT(rows_are(o, "SELECT a FROM away", "1"));
        }
        CU_ASSERT(ok(c, "DROP TABLE away"));
        PQfinish(o);
        PQfinish(w);
        PQfinish(c);
}

static void test_extended(void)
{
        PGconn *c = db();
        const char *vals[2] = { "7", "seven" };
        PGresult *r;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(ok(c, "CREATE TABLE x (n bigint, s text)"));
        r = PQexecParams(c, "INSERT INTO x VALUES ($1, $2)", 2, NULL, vals, NULL, NULL, 0);
        CU_ASSERT_EQUAL(PQresultStatus(r), PGRES_COMMAND_OK);
        PQclear(r);
        r = PQprepare(c, "q", "SELECT s FROM x WHERE n = $1", 1, NULL);
        CU_ASSERT_EQUAL(PQresultStatus(r), PGRES_COMMAND_OK);
        PQclear(r);
        r = PQexecPrepared(c, "q", 1, vals, NULL, NULL, 0);
        CU_ASSERT_EQUAL_FATAL(PQresultStatus(r), PGRES_TUPLES_OK);
        CU_ASSERT_EQUAL(PQntuples(r), 1);
        if (PQntuples(r) == 1)
                CU_ASSERT_STRING_EQUAL(PQgetvalue(r, 0, 0), "seven");
        PQclear(r);
        r = PQdescribePrepared(c, "q");
        CU_ASSERT_EQUAL(PQnfields(r), 1);
        CU_ASSERT_EQUAL(PQftype(r, 0), 25);
        PQclear(r);
        PQfinish(c);
}

/* One statement through Parse/Bind/Execute/Sync: its SQLSTATE ("" when it succeeded) and
 * its first value into buf. */
static const char *ext_run(PGconn *c, const char *sql, int nparams, const char *const *vals,
                           char *buf, size_t size)
{
        PGresult *r = PQexecParams(c, sql, nparams, NULL, vals, NULL, NULL, 0);
        const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);

        if (PQresultStatus(r) == PGRES_FATAL_ERROR)
                snprintf(buf, size, "%s", st ? st : "?");
        else if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0)
                snprintf(buf, size, "=%s", PQgetvalue(r, 0, 0));
        else
                snprintf(buf, size, "%s", PQcmdStatus(r));
        PQclear(r);
        return buf;
}

/* The next result of a pipeline, then the NULL that ends it; its status and SQLSTATE. */
static bool pipe_next(PGconn *c, ExecStatusType want, const char *sqlstate, const char *value)
{
        PGresult *r = PQgetResult(c);
        const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        bool good = r && PQresultStatus(r) == want;

        if (good && sqlstate)
                good = st && strcmp(st, sqlstate) == 0;
        if (good && value)
                good = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), value) == 0;
        if (!good)
                fprintf(stderr, "\n    pipeline: expected %s %s %s, got %s %s %s",
                        PQresStatus(want), sqlstate ? sqlstate : "", value ? value : "",
                        r ? PQresStatus(PQresultStatus(r)) : "(no result)", st ? st : "",
                        r ? PQresultErrorMessage(r) : "");
        PQclear(r);
        if (want != PGRES_PIPELINE_SYNC && (r = PQgetResult(c))) {
                fprintf(stderr, "\n    pipeline: a second result %s", PQresStatus(PQresultStatus(r)));
                PQclear(r);
                good = false;
        }
        return good;
}

/* Issue 36 item 2: an error raised at run time (the controller evaluating the query) in
 * the extended protocol is followed, after Sync, by normal service -- the next Parse/Bind/
 * Execute answers, as PostgreSQL does; in a pipeline the statements after the error up
 * to the Sync are PGRES_PIPELINE_ABORTED, and the next pipeline runs. */
static void test_extended_errors(void)
{
        static const struct { const char *sql, *sqlstate; } bad[] = {
                { "SELECT 1/0", "22012" },
                { "SELECT 2147483647 + 1", "22003" },
                { "SELECT 'x'::int", "22P02" },
                { "SELECT a / 0 FROM xe", "22012" },
                { "SELECT a * 2147483647 * 2 FROM xe", "22003" },
                { "SELECT b::int FROM xe", "22P02" },
        };
        const char *one[1] = { "41" };
        PGconn *c = db();
        char buf[64];
        PGresult *r;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(ok(c, "CREATE TABLE xe (a int, b text)"));
        CU_ASSERT(ok(c, "INSERT INTO xe VALUES (3, 'x')"));
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                CU_ASSERT_STRING_EQUAL(ext_run(c, bad[i].sql, 0, NULL, buf, sizeof(buf)), bad[i].sqlstate);
                /* Every later statement is served, whatever its kind. */
                CU_ASSERT_STRING_EQUAL(ext_run(c, "SELECT 1", 0, NULL, buf, sizeof(buf)), "=1");
                CU_ASSERT_STRING_EQUAL(ext_run(c, "SELECT $1::int + 1", 1, one, buf, sizeof(buf)), "=42");
                CU_ASSERT_STRING_EQUAL(ext_run(c, "SELECT a FROM xe", 0, NULL, buf, sizeof(buf)), "=3");
                CU_ASSERT_STRING_EQUAL(ext_run(c, "INSERT INTO xe VALUES ($1)", 1, one, buf, sizeof(buf)),
                                       "INSERT 0 1");
                CU_ASSERT_STRING_EQUAL(ext_run(c, "DELETE FROM xe WHERE a = $1", 1, one, buf, sizeof(buf)),
                                       "DELETE 1");
                CU_ASSERT_STRING_EQUAL(ext_run(c, "SHOW server_version_num", 0, NULL, buf, sizeof(buf)),
                                       "=150000");
                CU_ASSERT_STRING_EQUAL(ext_run(c, bad[i].sql, 0, NULL, buf, sizeof(buf)), bad[i].sqlstate);
                CU_ASSERT_STRING_EQUAL(ext_run(c, bad[i].sql, 0, NULL, buf, sizeof(buf)), bad[i].sqlstate);
                CU_ASSERT_STRING_EQUAL(ext_run(c, "SELECT count(*) FROM xe", 0, NULL, buf, sizeof(buf)), "=1");
        }
        /* A named prepared statement after an error. */
        CU_ASSERT_STRING_EQUAL(ext_run(c, "SELECT 1/0", 0, NULL, buf, sizeof(buf)), "22012");
        r = PQprepare(c, "xe_q", "SELECT a + $1::int FROM xe", 1, NULL);
        CU_ASSERT_EQUAL(PQresultStatus(r), PGRES_COMMAND_OK);
        PQclear(r);
        r = PQexecPrepared(c, "xe_q", 1, one, NULL, NULL, 0);
        CU_ASSERT_EQUAL(PQresultStatus(r), PGRES_TUPLES_OK);
        CU_ASSERT(PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "44") == 0);
        PQclear(r);

        /* Pipelines: the error, the rest aborted until Sync, then normal service. */
        CU_ASSERT_EQUAL_FATAL(PQenterPipelineMode(c), 1);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                CU_ASSERT_EQUAL(PQsendQueryParams(c, "SELECT 1", 0, NULL, NULL, NULL, NULL, 0), 1);
                CU_ASSERT_EQUAL(PQsendQueryParams(c, bad[i].sql, 0, NULL, NULL, NULL, NULL, 0), 1);
                CU_ASSERT_EQUAL(PQsendQueryParams(c, "SELECT 2", 0, NULL, NULL, NULL, NULL, 0), 1);
                CU_ASSERT_EQUAL(PQsendQueryParams(c, "INSERT INTO xe VALUES (99)", 0, NULL, NULL,
                                                  NULL, NULL, 0), 1);
                CU_ASSERT_EQUAL(PQpipelineSync(c), 1);
                CU_ASSERT_EQUAL(PQsendQueryParams(c, "SELECT $1::int + 1", 1, NULL, one, NULL, NULL, 0), 1);
                CU_ASSERT_EQUAL(PQsendQueryParams(c, "SELECT count(*) FROM xe", 0, NULL, NULL, NULL,
                                                  NULL, 0), 1);
                CU_ASSERT_EQUAL(PQpipelineSync(c), 1);
                CU_ASSERT(pipe_next(c, PGRES_TUPLES_OK, NULL, "1"));
                CU_ASSERT(pipe_next(c, PGRES_FATAL_ERROR, bad[i].sqlstate, NULL));
                CU_ASSERT(pipe_next(c, PGRES_PIPELINE_ABORTED, NULL, NULL));
                CU_ASSERT(pipe_next(c, PGRES_PIPELINE_ABORTED, NULL, NULL));
                CU_ASSERT(pipe_next(c, PGRES_PIPELINE_SYNC, NULL, NULL));
                CU_ASSERT(pipe_next(c, PGRES_TUPLES_OK, NULL, "42"));
                CU_ASSERT(pipe_next(c, PGRES_TUPLES_OK, NULL, "1"));    /* the INSERT did not run */
                CU_ASSERT(pipe_next(c, PGRES_PIPELINE_SYNC, NULL, NULL));
        }
        CU_ASSERT_EQUAL(PQexitPipelineMode(c), 1);
        CU_ASSERT_STRING_EQUAL(ext_run(c, "SELECT a FROM xe", 0, NULL, buf, sizeof(buf)), "=3");
        CU_ASSERT(rows_are(c, "SELECT a FROM xe", "3"));
        CU_ASSERT(ok(c, "DROP TABLE xe"));
        PQfinish(c);
}

/* ---- I7 under kill -9 ---- */

#define CLIENTS 100
#define ROUNDS 1000

struct client {
        int id;
        int acked;                      /* statements acknowledged */
        bool ok[ROUNDS];                /* value id*ROUNDS + k was acknowledged */
        volatile bool *stop;
};

static void *client_run(void *arg)
{
        struct client *cl = arg;
        PGconn *c = NULL;

        for (int k = 0; k < ROUNDS && !*cl->stop; ) {
                char q[160];
                PGresult *r;

                if (!c || PQstatus(c) != CONNECTION_OK) {
                        PQfinish(c);
                        c = PQconnectdb(conninfo);
                        if (PQstatus(c) != CONNECTION_OK) {
                                usleep(20000);
                                continue;
                        }
                }
                /* Two rows per statement: both or neither may appear. */
                snprintf(q, sizeof(q), "INSERT INTO crash VALUES (%d, %d), (%d, %d)",
                         cl->id * ROUNDS + k, cl->id, cl->id * ROUNDS + k, cl->id);
                r = PQexec(c, q);
                /* Not acknowledged: the statement may or may not be there; the client
                 * moves on to the next value either way, so each value is written by
                 * one statement only. */
                if (PQresultStatus(r) == PGRES_COMMAND_OK) {
                        cl->ok[k] = true;
                        cl->acked++;
                }
                k++;
                PQclear(r);
        }
        PQfinish(c);
        return NULL;
}

static void test_kill9_under_load(void)
{
        PGconn *c = db();
        static struct client cl[CLIENTS];
        pthread_t th[CLIENTS];
        volatile bool stop = false;
        PGresult *r;
        long acked_rows = 0;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE crash (v bigint NOT NULL, client int NOT NULL)"));
        PQfinish(c);
        for (int i = 0; i < CLIENTS; i++) {
                cl[i] = (struct client){ .id = i, .stop = &stop };
                pthread_create(&th[i], NULL, client_run, &cl[i]);
        }
        usleep(700 * 1000);                     /* clients run */
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
        usleep(200 * 1000);                     /* clients see it down */
        CU_ASSERT_EQUAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        usleep(700 * 1000);                     /* clients run */
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_ADAPTER));
        usleep(200 * 1000);                     /* clients see it down */
        CU_ASSERT_EQUAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        usleep(700 * 1000);                     /* clients run */
        stop = true;
        for (int i = 0; i < CLIENTS; i++)
                pthread_join(th[i], NULL);

        c = db();
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        r = PQexec(c, "SELECT v, client FROM crash");
        CU_ASSERT_EQUAL_FATAL(PQresultStatus(r), PGRES_TUPLES_OK);
        {
                int n = PQntuples(r);
                static int count[CLIENTS * ROUNDS];
                memset(count, 0, sizeof(count));
                for (int i = 0; i < n; i++) {
                        long v = strtol(PQgetvalue(r, i, 0), NULL, 10);
                        CU_ASSERT(v >= 0 && v < CLIENTS * ROUNDS);
                        if (v >= 0 && v < CLIENTS * ROUNDS)
                                count[v]++;
                }
                for (int i = 0; i < CLIENTS; i++) {
                        for (int k = 0; k < ROUNDS; k++) {
                                int got = count[i * ROUNDS + k];
                                /* Acknowledged: exactly its two rows (I7).  Not: zero or
                                 * two, never one (no half-written statement). */
                                if (cl[i].ok[k]) {
                                        CU_ASSERT(got == 2);
                                } else {
                                        CU_ASSERT(got == 0 || got == 2);
                                }
                        }
                        acked_rows += cl[i].acked;
                }
                printf("\n    %d clients, %ld statements acknowledged, %d rows read back\n",
                       CLIENTS, acked_rows, n);
        }
        PQclear(r);
        PQfinish(c);
}

/* Concurrent DDL shares fsyncs: 32 sessions create tables at once; the catalog needs
 * fewer syncs than commits (the adapter's status counts both). */
#define DDL_CLIENTS 32

static void *ddl_client(void *arg)
{
        long id = (long)arg;
        PGconn *c = db();
        char q[128];

        for (int k = 0; c && k < 10; k++) {
                snprintf(q, sizeof(q), "CREATE TABLE ddl_%ld_%d (x bigint)", id, k);
                if (!ok(c, q))
                        break;
        }
        PQfinish(c);
        return NULL;
}

/* The catalog's commits and syncs; with sync_window, also the longest synced write
 * since the previous status request and since start (microseconds). */
static bool catalog_counts(uint64_t *commits, uint64_t *syncs, uint64_t *sync_window,
                           uint64_t *sync_max)
{
        Coord__StatusReply *s = NULL;

        if (node_query_status(run_dir, COORD__ROLE__ROLE_ADAPTER, 1000, &s) < 0)
                return false;
        *commits = kv_u64(s->detail, "catalog_commits");
        *syncs = kv_u64(s->detail, "catalog_syncs");
        if (sync_window) {
                *sync_window = kv_u64(s->detail, "catalog_sync_window_max_us");
                *sync_max = kv_u64(s->detail, "catalog_sync_max_us");
        }
        coord__status_reply__free_unpacked(s, NULL);
        return *commits != UINT64_MAX && *syncs != UINT64_MAX &&
               (!sync_window || (*sync_window != UINT64_MAX && *sync_max != UINT64_MAX));
}

static void test_ddl_group_commit(void)
{
        pthread_t th[DDL_CLIENTS];
        uint64_t c0 = 0, s0 = 0, c1 = 0, s1 = 0, win = 0, max = 0;
        PGconn *c;

        CU_ASSERT_FATAL(catalog_counts(&c0, &s0, NULL, NULL));
        for (long i = 0; i < DDL_CLIENTS; i++)
                pthread_create(&th[i], NULL, ddl_client, (void *)i);
        for (int i = 0; i < DDL_CLIENTS; i++)
                pthread_join(th[i], NULL);
        CU_ASSERT_FATAL(catalog_counts(&c1, &s1, &win, &max));
        printf("\n    %llu catalog commits in %llu syncs, the longest %llu us\n",
               (unsigned long long)(c1 - c0), (unsigned long long)(s1 - s0),
               (unsigned long long)win);
        CU_ASSERT(c1 - c0 >= DDL_CLIENTS * 10);
        CU_ASSERT(s1 - s0 < c1 - c0);
        /* The window since the previous request saw those syncs; start saw them too. */
        CU_ASSERT(win > 0);
        CU_ASSERT(win <= max);
        c = db();
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        {
                char *all = rows_of(c, "SHOW TABLES");
                size_t n = 0;
                /* ddl_<client>_<k>, not another case's ddl_ts */
                for (const char *p = all; p && (p = strstr(p, "ddl_")); p++)
                        n += p[4] >= '0' && p[4] <= '9';
                CU_ASSERT_EQUAL(n, DDL_CLIENTS * 10);
                free(all);
        }
        PQfinish(c);
}

/* The results of one simple query, as "TAG" or "!SQLSTATE" joined with ','. */
static char *results_of(PGconn *c, const char *sql)
{
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        PGresult *r;
        bool first = true;

        if (!f || !PQsendQuery(c, sql)) {
                if (f)
                        fclose(f);
                free(out);
                return NULL;
        }
        while ((r = PQgetResult(c))) {
                const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);

                if (PQresultStatus(r) == PGRES_FATAL_ERROR)
                        fprintf(f, "%s!%s", first ? "" : ",", state ? state : "?");
                else
                        fprintf(f, "%s%s", first ? "" : ",", PQcmdStatus(r));
                first = false;
                PQclear(r);
        }
        fclose(f);
        return out;
}

/* results_of(c, sql) is expected, said nowhere when it is not (a probe). */
static bool results_are_quiet(PGconn *c, const char *sql, const char *expected)
{
        char *got = results_of(c, sql);
        bool good = got && strcmp(got, expected) == 0;

        free(got);
        return good;
}

static bool results_are(PGconn *c, const char *sql, const char *expected)
{
        char *got = results_of(c, sql);
        bool good = got && strcmp(got, expected) == 0;

        if (!good)
                fprintf(stderr, "\n    %s: expected [%s], got [%s]", sql, expected, got ? got : "(error)");
        free(got);
        return good;
}

/* adapter-exec.c note 7: a query string's consecutive CREATEs go to the catalog
 * together (one sync for several transactions), and every statement still sees the
 * catalog, and is answered, as if they ran one at a time. */
static void test_ddl_runs(void)
{
        PGconn *c = db();
        uint64_t c0 = 0, s0 = 0, c1 = 0, s1 = 0;
        char q[64 * 40] = "";
        size_t len = 0;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        for (int i = 0; i < 40; i++)
                len += (size_t)snprintf(q + len, sizeof(q) - len, "CREATE TABLE run_%d (a int);", i);
        CU_ASSERT_FATAL(catalog_counts(&c0, &s0, NULL, NULL));
        CU_ASSERT(ok(c, q));
        CU_ASSERT_FATAL(catalog_counts(&c1, &s1, NULL, NULL));
        printf("\n    40 CREATEs in one string: %llu catalog commits in %llu syncs\n",
               (unsigned long long)(c1 - c0), (unsigned long long)(s1 - s0));
        CU_ASSERT(c1 - c0 >= 40);
        /* One at a time it is 40 syncs; in runs of up to 16 about 3 (a publication or
         * the oracle's high-water mark may add one). */
        CU_ASSERT(s1 - s0 <= 10);
        {
                char *all = rows_of(c, "SHOW TABLES");
                size_t n = 0;
                for (const char *p = all; p && (p = strstr(p, "run_")); p++)
                        n++;
                CU_ASSERT_EQUAL(n, 40);
                free(all);
        }

        /* An error in the middle: the statements before it are answered, then its
         * error, nothing after it runs, and none of them is there: the string is one
         * implicit transaction (adapter-exec-run.c run_rollback()), as in PostgreSQL 15. */
        CU_ASSERT(results_are(c, "CREATE TABLE rx (a int); CREATE TABLE ry (a int); "
                                 "CREATE TABLE rx (b int); CREATE TABLE rz (a int)",
                              "CREATE TABLE,CREATE TABLE,!42P07"));
        CU_ASSERT(fails_with(c, "SELECT * FROM rx", "42P01"));
        CU_ASSERT(fails_with(c, "SELECT * FROM ry", "42P01"));
        CU_ASSERT(fails_with(c, "SELECT * FROM rz", "42P01"));
        /* ... whether the error comes from a CREATE or from any statement's analysis */
        CU_ASSERT(results_are(c, "CREATE TABLE rx (a int); CREATE VIEW rxv AS SELECT a FROM rx; "
                                 "SELECT nope FROM rx; CREATE TABLE rz (a int)",
                              "CREATE TABLE,CREATE VIEW,!42703"));
        CU_ASSERT(fails_with(c, "SELECT * FROM rxv", "42P01"));
        CU_ASSERT(fails_with(c, "SELECT * FROM rx", "42P01"));
        /* ... consumers of the run's own objects included: they join it now */
        CU_ASSERT(results_are(c, "CREATE TABLE rx (a int); CREATE DEFAULT INDEX ON rx; "
                                 "CREATE MATERIALIZED VIEW rxm AS SELECT count(*) FROM rx; CREATE TABLE rx (b int)",
                              "CREATE TABLE,CREATE INDEX,CREATE MATERIALIZED VIEW,!42P07"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM coord_objects WHERE name LIKE 'rx%'", "0"));
        CU_ASSERT(results_are(c, "CREATE TABLE rx (a int); CREATE TABLE ry (a int)",
                              "CREATE TABLE,CREATE TABLE"));     /* the names are free again */
        CU_ASSERT(ok(c, "INSERT INTO rx VALUES (1)"));
        CU_ASSERT(ok(c, "INSERT INTO ry VALUES (1)"));

        /* Statements that name what the ones before them create, drop or skip. */
        CU_ASSERT(results_are(c, "CREATE TABLE rp (a int); CREATE VIEW rpv AS SELECT a FROM rp; "
                                 "CREATE DEFAULT INDEX ON rpv; CREATE TABLE rq (a int); "
                                 "DROP TABLE IF EXISTS rq; CREATE TABLE rq (b text); "
                                 "CREATE TABLE IF NOT EXISTS rp (a int); CREATE TABLE rr (a int); "
                                 "INSERT INTO rp VALUES (7); CREATE VIEW rrv AS SELECT a FROM rr",
                              "CREATE TABLE,CREATE VIEW,CREATE INDEX,CREATE TABLE,DROP TABLE,"
                              "CREATE TABLE,CREATE TABLE,CREATE TABLE,INSERT 0 1,CREATE VIEW"));
        CU_ASSERT(rows_are(c, "SELECT a FROM rpv", "7"));
        CU_ASSERT(ok(c, "INSERT INTO rq VALUES ('x')"));
        CU_ASSERT(rows_are(c, "SELECT b FROM rq", "x"));
        CU_ASSERT(rows_are(c, "SELECT a FROM rrv", ""));

        /* A run sees its own creations: views and their indexes (the setup shape of
         * tools/coord bench publication) commit together. */
        len = 0;
        for (int i = 0; i < 20; i++)
                len += (size_t)snprintf(q + len, sizeof(q) - len,
                                        "CREATE VIEW runv_%d AS SELECT a FROM rp; "
                                        "CREATE DEFAULT INDEX ON runv_%d;", i, i);
        CU_ASSERT_FATAL(catalog_counts(&c0, &s0, NULL, NULL));
        CU_ASSERT(ok(c, q));
        CU_ASSERT_FATAL(catalog_counts(&c1, &s1, NULL, NULL));
        printf("    20 views and their indexes in one string: %llu catalog commits in %llu syncs\n",
               (unsigned long long)(c1 - c0), (unsigned long long)(s1 - s0));
        CU_ASSERT(c1 - c0 >= 40);
        CU_ASSERT(s1 - s0 <= 10);
        CU_ASSERT(rows_are(c, "SELECT a FROM runv_19", "7"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM coord_objects WHERE name = 'runv_7_primary_idx'", "1"));

        /* A view on a view of the run, an index on a table of the run (its input is not
         * committed yet: it waits for the run), a materialized view likewise. */
        CU_ASSERT(results_are(c, "CREATE TABLE rt (a int); CREATE VIEW rtv AS SELECT a FROM rt; "
                                 "CREATE VIEW rtw AS SELECT a FROM rtv; CREATE DEFAULT INDEX ON rtw; "
                                 "CREATE DEFAULT INDEX ON rt; CREATE MATERIALIZED VIEW rtm AS SELECT a FROM rtv; "
                                 "INSERT INTO rt VALUES (3)",
                              "CREATE TABLE,CREATE VIEW,CREATE VIEW,CREATE INDEX,CREATE INDEX,"
                              "CREATE MATERIALIZED VIEW,INSERT 0 1"));
        CU_ASSERT(rows_are(c, "SELECT a FROM rtw", "3"));
        CU_ASSERT(rows_are(c, "SELECT a FROM rt", "3"));
        CU_ASSERT(rows_are(c, "SELECT a FROM rtm", "3"));
        /* A failed statement after the run's view: neither is there, nor the rest. */
        CU_ASSERT(results_are(c, "CREATE VIEW rfv AS SELECT a FROM rt; CREATE VIEW rfw AS SELECT nope FROM rfv; "
                                 "CREATE DEFAULT INDEX ON rfv",
                              "CREATE VIEW,!42703"));
        CU_ASSERT(fails_with(c, "SELECT a FROM rfv", "42P01"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM coord_objects WHERE name LIKE 'rf%'", "0"));
        PQfinish(c);
}

/* adapter-exec.c note 10: a block of CREATEs (the simple query protocol) is one
 * catalog transaction at COMMIT: answered one by one, seen by the block's own later
 * CREATEs, by no one else before COMMIT, all there after it in one sync, none after
 * ROLLBACK, an error, the client leaving or the adapter's kill -9. */
static void test_ddl_blocks(void)
{
        PGconn *c = db(), *o = db();
        uint64_t c0 = 0, s0 = 0, c1 = 0, s1 = 0;
        char q[32 * 260] = "BEGIN;";
        size_t len = strlen(q);
        PGresult *r;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_PTR_NOT_NULL_FATAL(o);
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT(tag_is(c, "CREATE TABLE bk (a int)", "CREATE TABLE"));
        CU_ASSERT(tag_is(c, "CREATE VIEW bkv AS SELECT a * 2 AS b FROM bk", "CREATE VIEW"));
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW bkm AS SELECT count(*) AS n FROM bk_base",
                             "42P01"));  /* the block fails */
        CU_ASSERT(fails_with(c, "CREATE TABLE bk2 (a int)", "25P02"));
        CU_ASSERT(tag_is(c, "COMMIT", "ROLLBACK"));
        CU_ASSERT(fails_with(o, "SELECT * FROM bk", "42P01"));
        CU_ASSERT(fails_with(o, "SELECT * FROM bkv", "42P01"));

        CU_ASSERT(ok(c, "CREATE TABLE bk_base (a int)"));
        CU_ASSERT(ok(c, "INSERT INTO bk_base VALUES (1), (2)"));
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT(ok(c, "CREATE TABLE bk (a int)"));
        CU_ASSERT(ok(c, "CREATE VIEW bkv AS SELECT a * 2 AS b FROM bk"));
        CU_ASSERT(ok(c, "CREATE MATERIALIZED VIEW bkm AS SELECT count(*) AS n FROM bk_base"));
        CU_ASSERT(ok(c, "CREATE DEFAULT INDEX ON bk_base"));
        /* consumers of the block's own objects, enacted after them */
        CU_ASSERT(ok(c, "CREATE INDEX bk_i ON bk (a)"));
        CU_ASSERT(ok(c, "CREATE MATERIALIZED VIEW bkvm AS SELECT sum(b) AS s FROM bkv"));
        CU_ASSERT(ok(c, "CREATE DEFAULT INDEX ON bkvm"));
        CU_ASSERT(fails_with(o, "SELECT * FROM bk", "42P01"));  /* not before COMMIT */
        CU_ASSERT(fails_with(o, "SELECT * FROM bkm", "42P01"));
        CU_ASSERT_FATAL(catalog_counts(&c0, &s0, NULL, NULL));
        CU_ASSERT(tag_is(c, "COMMIT", "COMMIT"));
        CU_ASSERT_FATAL(catalog_counts(&c1, &s1, NULL, NULL));
        printf("\n    a block of 7 CREATEs: %llu catalog commits in %llu syncs\n",
               (unsigned long long)(c1 - c0), (unsigned long long)(s1 - s0));
        CU_ASSERT(c1 - c0 >= 7);
        CU_ASSERT(s1 - s0 <= 3);        /* one, and maybe a publication's or the oracle's */
        CU_ASSERT(ok(o, "INSERT INTO bk VALUES (5), (6)"));
        CU_ASSERT(rows_are(o, "SELECT b FROM bkv", "10;12"));
        CU_ASSERT(rows_are(o, "SELECT n FROM bkm", "2"));
        CU_ASSERT(rows_are(o, "SELECT a FROM bk WHERE a = 6", "6"));    /* through bk_i */
        CU_ASSERT(rows_are(o, "SELECT s FROM bkvm", "22"));

        /* ROLLBACK, an error, the client leaving, kill -9: nothing, and the names free */
        CU_ASSERT(ok(c, "BEGIN; CREATE TABLE bx1 (a int); CREATE VIEW bxv AS SELECT a FROM bx1; "
                        "CREATE DEFAULT INDEX ON bx1; CREATE MATERIALIZED VIEW bxm AS SELECT count(*) FROM bxv"));
        CU_ASSERT(tag_is(c, "ROLLBACK", "ROLLBACK"));
        CU_ASSERT(ok(c, "BEGIN; CREATE TABLE bx1 (a int)"));
        CU_ASSERT(fails_with(c, "CREATE TABLE bx1 (a int)", "42P07"));
        CU_ASSERT(tag_is(c, "COMMIT", "ROLLBACK"));
        CU_ASSERT(ok(c, "BEGIN; CREATE TABLE bx1 (a int)"));
        CU_ASSERT(fails_with(c, "SELECT nope FROM bx1", "42703"));
        CU_ASSERT(tag_is(c, "COMMIT", "ROLLBACK"));
        CU_ASSERT(ok(c, "BEGIN; CREATE TABLE bx1 (a int); CREATE TABLE bx2 (a int)"));
        PQfinish(c);
        c = db();
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(ok(c, "BEGIN; CREATE TABLE bx3 (a int)"));
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_ADAPTER));
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        PQfinish(c);
        PQfinish(o);
        c = db();
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM coord_objects WHERE name LIKE 'bx%'", "0"));
        CU_ASSERT(ok(c, "CREATE TABLE bx1 (a int); CREATE TABLE bx2 (a int); CREATE TABLE bx3 (a int)"));

        /* what a block of CREATEs refuses; each fails the block */
        CU_ASSERT(ok(c, "BEGIN; CREATE TABLE by1 (a int)"));
        CU_ASSERT(fails_with(c, "SELECT * FROM bk", "25000"));
        CU_ASSERT(ok(c, "ROLLBACK; BEGIN; CREATE TABLE by1 (a int)"));
        CU_ASSERT(fails_with(c, "INSERT INTO bk VALUES (1)", "25000"));
        CU_ASSERT(ok(c, "ROLLBACK; BEGIN; CREATE TABLE by1 (a int)"));
        CU_ASSERT(fails_with(c, "DROP TABLE bx1", "25000"));
        CU_ASSERT(ok(c, "ROLLBACK; BEGIN; INSERT INTO bk VALUES (1)"));
        CU_ASSERT(fails_with(c, "CREATE TABLE by1 (a int)", "25000"));
        CU_ASSERT(ok(c, "ROLLBACK; BEGIN READ ONLY"));
        CU_ASSERT(fails_with(c, "CREATE TABLE by1 (a int)", "25006"));
        CU_ASSERT(ok(c, "ROLLBACK; BEGIN"));
        r = PQexecParams(c, "CREATE TABLE by1 (a int)", 0, NULL, NULL, NULL, NULL, 0);
        CU_ASSERT(r && PQresultStatus(r) == PGRES_FATAL_ERROR &&
                  strcmp(PQresultErrorField(r, PG_DIAG_SQLSTATE), "25001") == 0);
        PQclear(r);
        CU_ASSERT(ok(c, "ROLLBACK"));
        for (int i = 0; i < 257; i++)
                len += (size_t)snprintf(q + len, sizeof(q) - len, "CREATE TABLE bz_%d (a int);", i);
        CU_ASSERT(fails_with(c, q, "54000"));
        CU_ASSERT(ok(c, "ROLLBACK"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM coord_objects WHERE name LIKE 'bz%' OR "
                              "name LIKE 'by%'", "0"));
        PQfinish(c);
}

/* kill -9 the adapter and start it again with these extra arguments (NULL: none);
 * a new connection to it. */
static PGconn *adapter_restart(const char *args)
{
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_ADAPTER));
        CU_ASSERT_EQUAL_FATAL(t_sh("COORD_ADAPTER_ARGS='%s' %s up >/dev/null", args ? args : "",
                                   coord_cmd), 0);
        return db();
}

/* The oracle never goes back: restart the adapter with its wall clock an hour behind;
 * new writes still get later timestamps than every earlier one. */
static void test_oracle_monotone(void)
{
        PGconn *c = db();
        uint64_t before, after, w_before, w_after;
        char q[256], *id;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(ok(c, "CREATE TABLE clock (x int)"));
        CU_ASSERT(ok(c, "INSERT INTO clock VALUES (1)"));
        id = rows_of(c, "SELECT id FROM coord_objects WHERE name = 'clock'");
        CU_ASSERT_PTR_NOT_NULL_FATAL(id);
        snprintf(q, sizeof(q), "SELECT write_frontier FROM coord_frontiers WHERE object_id = %s", id);
        before = scalar_u64(c, "SELECT mz_now()");
        w_before = scalar_u64(c, q);
        PQfinish(c);
        c = adapter_restart("--test-clock-offset-ms=-3600000");
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(ok(c, "INSERT INTO clock VALUES (2)"));
        after = scalar_u64(c, "SELECT mz_now()");
        w_after = scalar_u64(c, q);
        printf("\n    read ts %" PRIu64 " -> %" PRIu64 ", write frontier %" PRIu64 " -> %" PRIu64
               " (clock set back 1 h)\n", before, after, w_before, w_after);
        CU_ASSERT(after > before);
        CU_ASSERT(w_after > w_before);
        CU_ASSERT(rows_are(c, "SELECT x FROM clock", "1;2"));
        free(id);
        PQfinish(c);
        /* Back to the real clock for what follows. */
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_ADAPTER));
        CU_ASSERT_EQUAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

/* A burst of DDL does not run the timestamps away from the clock (adapter-oracle.c
 * notes 3 and 4): births share the last timestamp while the clock is not past it, and
 * the appends of their built-in rows, which nobody waits for, go at most one per
 * millisecond of real time.  With the clock an hour behind, every new timestamp is the
 * previous one + 1, so the read timestamp counts them: at most one per millisecond the
 * batch took, plus a few idle upper ticks.  At 1 or 2 ms per DDL, a burst of more than
 * 500-1,000 DDL/s ran the timestamps ahead of the clock (10,000 views and indexes:
 * 15 s), and no bound could move until the clock caught up: the lifecycle follower
 * published nothing for that long. */
static void test_ddl_timestamps(void)
{
        enum { N_DDL = 100 };
        PGconn *c;
        char *batch = NULL;
        size_t len = 0;
        FILE *f;
        uint64_t before, after, t0, took;

        c = adapter_restart("--test-clock-offset-ms=-3600000");
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(ok(c, "CREATE TABLE ddl_ts (a int)"));
        f = open_memstream(&batch, &len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        for (int i = 0; i < N_DDL; i++)
                fprintf(f, "CREATE VIEW ddl_ts_v%d AS SELECT a + %d AS b FROM ddl_ts; ", i, i);
        fclose(f);
        before = scalar_u64(c, "SELECT mz_now()");
        t0 = now_ms();
        CU_ASSERT(ok(c, batch));
        /* The answers do not wait for the rows' appends; a read of coord_objects does
         * (the fence, adapter-exec.c note 3), so after it the read timestamp is past
         * them: without it, mz_now() could still be `before` while the first append
         * waited for its sync (seen under load with the controller's syncer thread). */
        CU_ASSERT_EQUAL(scalar_u64(c, "SELECT count(*) FROM coord_objects WHERE name = 'ddl_ts_v99'"), 1);
        took = now_ms() - t0;
        after = scalar_u64(c, "SELECT mz_now()");
        printf("\n    %d DDL statements took %" PRIu64 " ms of timestamps in %" PRIu64 " ms "
               "(clock set back 1 h)\n", N_DDL, after - before, took);
        /* Never back.  Equal is right: births share the last timestamp while the clock
         * is behind, and when the batch's rows ride the group still held with the
         * CREATE TABLE's (adapter-exec.c note 6), that group's timestamp is the one
         * `before` already read (a read of the built-ins at it waits for the fence). */
        CU_ASSERT(after >= before);
        /* At most one append per ms of the batch, plus a few idle upper ticks. */
        CU_ASSERT(after - before <= took + 1 + 5);
        free(batch);
        PQfinish(c);
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_ADAPTER));
        CU_ASSERT_EQUAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

/* adapter-pgwire.c note 7: a DDL statement that ends a simple query is answered by
 * its committer thread, before the loop has applied it.  Whatever a client does after
 * that answer, on any connection, must see the DDL (linearizability).  With
 * --test-direct-reply-wake-delay-ms the committer tells the loop only 1 s after its
 * answer, so the next statement can see the DDL in time only because the loop runs the
 * finished commits' callbacks before any statement (committer_poll()): without that,
 * the INSERT after the CREATE fails with 42P01 and the one after the DROP finds the
 * table.  Each answer must have been a direct one (ddl_direct_replies). */
static uint64_t direct_replies(void)
{
        Coord__StatusReply *s = NULL;
        uint64_t n;

        if (node_query_status(run_dir, COORD__ROLE__ROLE_ADAPTER, 1000, &s) < 0)
                return UINT64_MAX;
        n = kv_u64(s->detail, "ddl_direct_replies");
        coord__status_reply__free_unpacked(s, NULL);
        return n;
}

static void test_direct_reply(void)
{
        enum { N = 4 };
        PGconn *a, *b;
        uint64_t d0, d1;
        char q[128];

        a = adapter_restart("--test-direct-reply-wake-delay-ms=1000");
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        b = db();
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        d0 = direct_replies();
        CU_ASSERT_NOT_EQUAL_FATAL(d0, UINT64_MAX);
        for (int i = 0; i < N; i++) {
                snprintf(q, sizeof(q), "CREATE TABLE direct_%d (x int)", i);
                CU_ASSERT(ok(a, q));
                snprintf(q, sizeof(q), "INSERT INTO direct_%d VALUES (%d)", i, i);
                CU_ASSERT(results_are(b, q, "INSERT 0 1"));
                snprintf(q, sizeof(q), "DROP TABLE direct_%d", i);
                CU_ASSERT(ok(a, q));
                snprintf(q, sizeof(q), "INSERT INTO direct_%d VALUES (%d)", i, i);
                CU_ASSERT(results_are(b, q, "!42P01"));
        }
        /* Not the last statement of its string: answered by the loop, in order. */
        CU_ASSERT(results_are(a, "CREATE TABLE direct_m (x int); SELECT 1", "CREATE TABLE,SELECT 1"));
        CU_ASSERT(results_are(b, "INSERT INTO direct_m VALUES (1)", "INSERT 0 1"));
        d1 = direct_replies();
        printf("\n    %llu of %d DDL answered by their committer\n",
               (unsigned long long)(d1 - d0), 2 * N + 1);
        CU_ASSERT_EQUAL(d1 - d0, 2 * N);
        PQfinish(a);
        PQfinish(b);
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_ADAPTER));
        CU_ASSERT_EQUAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

/* A real write failure under a running adapter: its file size limit lowered to 1 byte
 * (prlimit), so the catalog's next write fails with EFBIG.  The daemon ignores SIGXFSZ
 * and keeps serving: that DDL is answered 58030 and not applied, later DDL get 58030 as
 * well (the store's error is sticky, catalog.c NOTE 5), reads go on, and INSERTs
 * until the oracle's durable mark is used up (then 58030).
 * After a restart with the limit back, the catalog is whole: the table from before is
 * there, the failed ones are not, and DDL works again. */
static void test_catalog_write_failure(void)
{
        Coord__StatusReply *st = NULL;
        struct rlimit old, one;
        PGconn *c = db();
        pid_t pid;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(ok(c, "CREATE TABLE wf_ok (x int)"));
        CU_ASSERT(ok(c, "CREATE TABLE wf_probe (x int)"));
        CU_ASSERT(ok(c, "INSERT INTO wf_ok VALUES (1)"));
        CU_ASSERT_EQUAL_FATAL(node_query_status(run_dir, COORD__ROLE__ROLE_ADAPTER, 1000, &st), 0);
        pid = st->pid;
        coord__status_reply__free_unpacked(st, NULL);
        CU_ASSERT_EQUAL_FATAL(prlimit(pid, RLIMIT_FSIZE, NULL, &old), 0);
        one = (struct rlimit){ .rlim_cur = 1, .rlim_max = old.rlim_max };
        CU_ASSERT_EQUAL_FATAL(prlimit(pid, RLIMIT_FSIZE, &one, NULL), 0);

        {
                /* The file system's reason reaches the client. */
                PGresult *r = PQexec(c, "CREATE TABLE wf_bad (x int)");
                const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
                const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);

                CU_ASSERT(state && strcmp(state, "58030") == 0);
                CU_ASSERT(msg && strstr(msg, "File too large"));
                if (msg)
                        printf("\n    %s\n", msg);
                PQclear(r);
        }
        CU_ASSERT(results_are(c, "CREATE TABLE wf_bad2 (x int)", "!58030"));
        CU_ASSERT(results_are(c, "DROP TABLE wf_ok", "!58030"));
        CU_ASSERT(results_are(c, "INSERT INTO wf_ok VALUES (2)", "INSERT 0 1"));
        CU_ASSERT(rows_are(c, "SELECT x FROM wf_ok ORDER BY x", "1;2"));
        /* Write timestamps must stay below a mark durable in the catalog (the oracle,
         * about a second ahead): once it is used up, INSERTs get 58030 too. */
        {
                bool used_up = false;

                for (int w = 0; w < 100 && !used_up; w++) {
                        used_up = results_are_quiet(c, "INSERT INTO wf_probe VALUES (1)", "!58030");
                        if (!used_up)
                                usleep(100 * 1000);
                }
                CU_ASSERT(used_up);
        }
        CU_ASSERT(results_are(c, "INSERT INTO wf_ok VALUES (3)", "!58030"));
        CU_ASSERT(rows_are(c, "SELECT x FROM wf_ok ORDER BY x", "1;2"));
        CU_ASSERT(kill(pid, 0) == 0);           /* SIGXFSZ did not kill it */
        PQfinish(c);

        CU_ASSERT_EQUAL(prlimit(pid, RLIMIT_FSIZE, &old, NULL), 0);
        c = adapter_restart(NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(rows_are(c, "SELECT x FROM wf_ok ORDER BY x", "1;2"));
        CU_ASSERT(results_are(c, "SELECT x FROM wf_bad", "!42P01"));
        CU_ASSERT(results_are(c, "SELECT x FROM wf_bad2", "!42P01"));
        CU_ASSERT(ok(c, "CREATE TABLE wf_bad (x int)"));
        CU_ASSERT(ok(c, "DROP TABLE wf_bad"));
        CU_ASSERT(ok(c, "DROP TABLE wf_ok"));
        PQfinish(c);
}

static uint64_t show_objects_count(PGconn *c)
{
        PGresult *r = PQexec(c, "SHOW OBJECTS");
        uint64_t n = PQresultStatus(r) == PGRES_TUPLES_OK ? (uint64_t)PQntuples(r) : UINT64_MAX;

        PQclear(r);
        return n;
}

/* I7 for a DDL answered after its catalog commit alone (adapter-exec.c notes 3, 5 and
 * 6): its built-in rows follow in a held group, so a kill -9 right after the answers
 * may lose them; the restarted adapter re-derives them from the catalog.  Whether or
 * not this run hit the window, coord_objects must list exactly the catalog's objects,
 * and a DROP must find the rows it retracts. */
static void test_ddl_rows_survive_kill9(void)
{
        enum { N = 40 };
        PGconn *c = db();
        char *batch = NULL;
        size_t len = 0;
        FILE *f;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        f = open_memstream(&batch, &len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        for (int i = 0; i < N; i++)
                fprintf(f, "CREATE TABLE kr_%d (a int); ", i);
        fclose(f);
        CU_ASSERT(ok(c, batch));
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_ADAPTER));      /* at once: rows held */
        free(batch);
        PQfinish(c);
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        c = db();
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_EQUAL(scalar_u64(c, "SELECT count(*) FROM coord_objects"), show_objects_count(c));
        CU_ASSERT(ok(c, "DROP TABLE kr_0"));
        CU_ASSERT(ok(c, "DROP TABLE kr_1"));
        CU_ASSERT_EQUAL(scalar_u64(c, "SELECT count(*) FROM coord_objects"), show_objects_count(c));
        printf("\n    %s\n", t_sh("grep -q 'event=builtin_reconciled.*objects=' %s/log/adapter.log", home) == 0
                                       ? "rows were lost and re-derived" : "no rows were lost this time");
        PQfinish(c);
}

/* Whether the adapter log's last builtin_reconciled line has `what`. */
static bool last_reconcile_has(const char *what)
{
        return t_sh("grep 'event=builtin_reconciled' %s/log/adapter.log | tail -n 1 | grep -q -- '%s'",
                    home, what) == 0;
}

/* Kill -9 the adapter once the writer mark covers every commit (the idle upper tick
 * renews it), and start it again.  False when the premise of "nothing was lost" does
 * not hold: a catalog commit came after the check.  The lifecycle publishes every
 * --publication-interval-ms (1 s) while it is connected, on its own clock; a
 * publication that commits just before the kill has its built-in rows (coord_bounds,
 * coord_requirements) in a held group (adapter-exec.c note 6) that dies with the
 * adapter -- lost as adapter-exec.c note 3 allows, so the restart rightly does not trust the mark and
 * re-derives them (seen once in four runs: "from=read objects=0 bounds=40
 * requirements=8", exactly the rows of a publication committed 20 ms before the kill,
 * after the check).  A publication committed by the new adapter before its start-up
 * reconciliation changes state after the mark just the same; *pubs_before is the
 * lifecycle's count of publications before the check, for the caller to compare. */
static bool restart_when_marked(PGconn **c, uint64_t *pubs_before)
{
        uint64_t deadline, seq = 0;
        bool covered = false;

        *pubs_before = lc_stat("publications");
        for (deadline = now_ms() + 10000; !covered && now_ms() < deadline; usleep(10000)) {
                seq = seq_of(COORD__ROLE__ROLE_ADAPTER);
                covered = seq && stat_of(COORD__ROLE__ROLE_ADAPTER, "builtin_mark") >= seq;
        }
        CU_ASSERT_FATAL(covered);
        PQfinish(*c);
        *c = adapter_restart(NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(*c);
        /* The new adapter opened the catalog where the check saw it: nothing committed
         * between the check and the kill. */
        return t_sh("grep 'event=catalog_opened' %s/log/adapter.log | tail -n 1 | grep -q ' last_seq=%llu$'",
                    home, (unsigned long long)seq) == 0;
}

/* adapter-exec.c note 8.  A restart after nothing was lost reads none of the built-in
 * relations: the writer mark the controller keeps covers every commit.  A restart
 * after rows were lost (--test-hold-builtin-rows never sends them) must not trust the
 * mark: it reads the relations and re-derives the rows. */
static void test_restart_mark(void)
{
        enum { ATTEMPTS = 6 };
        PGconn *c = db();
        int attempt;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(ok(c, "CREATE TABLE km_t (a int); CREATE VIEW km_v AS SELECT a FROM km_t; "
                        "CREATE DEFAULT INDEX ON km_v"));
        for (attempt = 1; attempt <= ATTEMPTS; attempt++) {
                uint64_t pubs;
                bool quiet = restart_when_marked(&c, &pubs);

                /* A read of coord_objects waits for reconciliation. */
                CU_ASSERT_EQUAL(scalar_u64(c, "SELECT count(*) FROM coord_objects"), show_objects_count(c));
                /* Trusted anyway (the publication's rows had landed, with a mark), or
                 * nothing came after the check: then it must be trusted. */
                if (last_reconcile_has("from=mark") || (quiet && lc_stat("publications") == pubs)) {
                        CU_ASSERT(last_reconcile_has("from=mark"));
                        CU_ASSERT_EQUAL(stat_of(COORD__ROLE__ROLE_ADAPTER, "builtin_reads"), 0);
                        break;
                }
                printf("\n    attempt %d: %s: not the case, again\n", attempt,
                       quiet ? "the lifecycle published meanwhile (before the reconciliation?)"
                             : "a commit came between the check and the kill");
                fflush(stdout);
                (void)t_sh("grep 'event=builtin_reconciled' %s/log/adapter.log | tail -n 1 | sed 's/.*event=/    /'",
                           home);
                /* Off the lifecycle's 1 s phase: the restarts come at a steady pace. */
                usleep(137000u * (unsigned)attempt);
        }
        CU_ASSERT(attempt <= ATTEMPTS);
        PQfinish(c);

        /* Rows lost: the mark stays behind the commit that made them. */
        c = adapter_restart("--test-hold-builtin-rows");
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(ok(c, "CREATE TABLE km_lost (a int); DROP TABLE km_t CASCADE"));
        PQfinish(c);
        c = adapter_restart(NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_EQUAL(scalar_u64(c, "SELECT count(*) FROM coord_objects"), show_objects_count(c));
        CU_ASSERT_EQUAL(scalar_u64(c, "SELECT count(*) FROM coord_objects WHERE name = 'km_lost'"), 1);
        CU_ASSERT_EQUAL(scalar_u64(c, "SELECT count(*) FROM coord_objects WHERE name = 'km_v'"), 0);
        CU_ASSERT(last_reconcile_has("from=read objects="));
        CU_ASSERT_EQUAL(stat_of(COORD__ROLE__ROLE_ADAPTER, "builtin_reads"), 1);
        PQfinish(c);
}

static void test_psql_script(void)
{
        char *script = NULL;
        FILE *f;

        CU_ASSERT_FATAL(asprintf(&script, "%s/script.sql", home) > 0);
        f = fopen(script, "w");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        fputs("CREATE TABLE ps (id bigint NOT NULL, name text);\n"
              "INSERT INTO ps VALUES (1, 'a'), (2, 'b');\n"
              "SELECT id, name FROM ps WHERE id > 1;\n"
              "DELETE FROM ps WHERE id = 1;\n"
              "SHOW TABLES;\n"
              "DROP TABLE ps;\n", f);
        fclose(f);
        CU_ASSERT_EQUAL(t_sh("psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p %d -U coord -d coord -f %s >/dev/null",
                           pg_port, script), 0);
        /* And over the Unix socket in the run directory, with an error: exit 3. */
        f = fopen(script, "w");
        fputs("SELECT 1;\nSELECT * FROM missing_table;\nSELECT 2;\n", f);
        fclose(f);
        CU_ASSERT_EQUAL(t_sh("psql -X -q -v ON_ERROR_STOP=1 -h %s -p %d -U coord -d coord -f %s >/dev/null 2>&1",
                           run_dir, pg_port, script), 3);
        free(script);
}


/* ---- Streamed results (issue 6) ---------------------------------------------------- */

#define STREAM_CHUNK "512"
#define JK_ROWS 700                     /* the self-join returns 490,000 rows, ~10 MB */

static uint64_t ctl_stat(const char *key)
{
        return stat_of(COORD__ROLE__ROLE_CONTROLLER, key);
}

/* Wait up to ms for the controller's status key to be `want`. */
static bool ctl_stat_becomes(const char *key, uint64_t want, unsigned ms)
{
        for (unsigned i = 0; i < ms / 20; i++) {
                if (ctl_stat(key) == want)
                        return true;
                usleep(20 * 1000);
        }
        fprintf(stderr, "\n    controller %s=%llu, expected %llu", key,
                (unsigned long long)ctl_stat(key), (unsigned long long)want);
        return false;
}

/* Many chunks make exactly the rows of the one-message answer, in ORDER BY order; a
 * result that fits one chunk is one PeekResult, no stream. */
static void test_stream_rows(void)
{
        PGconn *c = adapter_restart("--peek-chunk-bytes " STREAM_CHUNK);
        uint64_t chunks, streams;
        PGresult *r;
        static bool seen[3000];
        char *q = NULL;
        size_t len = 0;
        FILE *f;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE big (a bigint NOT NULL, b text)"));
        for (int k = 0; k < 3; k++) {
                f = open_memstream(&q, &len);
                fprintf(f, "INSERT INTO big VALUES ");
                for (int i = k * 1000; i < (k + 1) * 1000; i++)
                        fprintf(f, "%s(%d, 'v%d')", i > k * 1000 ? ", " : "", i, i);
                fclose(f);
                CU_ASSERT(ok(c, q));
                free(q);
                q = NULL;
        }
        chunks = ctl_stat("peek_chunks");
        streams = ctl_stat("peek_streams");
        r = PQexec(c, "SELECT a, b FROM big");
        CU_ASSERT_EQUAL_FATAL(PQresultStatus(r), PGRES_TUPLES_OK);
        CU_ASSERT_EQUAL(PQntuples(r), 3000);
        memset(seen, 0, sizeof(seen));
        for (int i = 0; i < PQntuples(r); i++) {
                long a = strtol(PQgetvalue(r, i, 0), NULL, 10);
                char want[32];

                CU_ASSERT_FATAL(a >= 0 && a < 3000);
                CU_ASSERT(!seen[a]);
                seen[a] = true;
                snprintf(want, sizeof(want), "v%ld", a);
                CU_ASSERT_STRING_EQUAL(PQgetvalue(r, i, 1), want);
        }
        PQclear(r);
        /* ~16 bytes a row: 3,000 rows are ~90 chunks of 512 bytes, one stream. */
        printf("\n    3000 rows in %llu chunks\n", (unsigned long long)(ctl_stat("peek_chunks") - chunks));
        CU_ASSERT(ctl_stat("peek_chunks") - chunks >= 20);
        CU_ASSERT_EQUAL(ctl_stat("peek_streams") - streams, 1);

        /* ORDER BY, OFFSET and LIMIT across chunks. */
        r = PQexec(c, "SELECT a FROM big ORDER BY a DESC LIMIT 2000 OFFSET 500");
        CU_ASSERT_EQUAL_FATAL(PQresultStatus(r), PGRES_TUPLES_OK);
        CU_ASSERT_EQUAL(PQntuples(r), 2000);
        for (int i = 0; i < PQntuples(r); i++)
                CU_ASSERT_EQUAL(strtol(PQgetvalue(r, i, 0), NULL, 10), 2499 - i);
        PQclear(r);
        CU_ASSERT_STRING_EQUAL(PQcmdStatus(r = PQexec(c, "SELECT a FROM big WHERE a >= 1000")),
                               "SELECT 2000");
        PQclear(r);
        /* The extended protocol, with a row limit per Execute (psql's FETCH_COUNT). */
        r = PQexecParams(c, "SELECT a FROM big WHERE a < $1", 1, NULL,
                         (const char *[]){ "2500" }, NULL, NULL, 0);
        CU_ASSERT_EQUAL(PQresultStatus(r), PGRES_TUPLES_OK);
        CU_ASSERT_EQUAL(PQntuples(r), 2500);
        PQclear(r);

        /* Small: one message, no stream. */
        streams = ctl_stat("peek_streams");
        chunks = ctl_stat("peek_chunks");
        CU_ASSERT(rows_are(c, "SELECT a, b FROM big WHERE a = 7", "7|v7"));
        CU_ASSERT_EQUAL(ctl_stat("peek_chunks") - chunks, 1);
        CU_ASSERT_EQUAL(ctl_stat("peek_streams"), streams);
        PQfinish(c);
}

/* A raw PostgreSQL-protocol client that can stop reading (libpq always reads). */
static int raw_connect(void)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)pg_port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        struct timeval tv = { .tv_sec = 30 };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), small = 4096;
        uint8_t m[64];
        size_t n = 8;

        if (fd < 0)
                return -1;
        /* A small receive window, so the adapter's output backs up soon. */
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
                close(fd);
                return -1;
        }
        memcpy(m + 4, "\0\3\0\0", 4);
        memcpy(m + n, "user\0coord\0database\0coord\0", 26);
        n += 26;
        m[n++] = 0;
        m[0] = 0, m[1] = 0, m[2] = 0, m[3] = (uint8_t)n;
        if (write(fd, m, n) != (ssize_t)n) {
                close(fd);
                return -1;
        }
        return fd;
}

static bool raw_full(int fd, void *buf, size_t n)
{
        for (size_t got = 0; got < n;) {
                ssize_t k = read(fd, (char *)buf + got, n - got);
                if (k <= 0)
                        return false;
                got += (size_t)k;
        }
        return true;
}

/* The next message: its type, or 0 on EOF/timeout.  Its body (up to cap) in buf. */
static char raw_msg(int fd, char *buf, size_t cap, size_t *ret_len)
{
        uint8_t h[5];
        uint32_t len;
        char skip[4096];

        if (!raw_full(fd, h, 5))
                return 0;
        len = ((uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4]) - 4;
        *ret_len = len;
        for (uint32_t got = 0; got < len;) {
                uint32_t k = len - got;
                char *to = got < cap ? buf + got : skip;

                if (got < cap && k > cap - got)
                        k = (uint32_t)(cap - got);
                if (got >= cap && k > sizeof(skip))
                        k = sizeof(skip);
                if (!raw_full(fd, to, k))
                        return 0;
                got += k;
        }
        return (char)h[0];
}

/* Read until ReadyForQuery; false on EOF or an error before it. */
static bool raw_ready(int fd)
{
        char buf[512], t;
        size_t len;

        while ((t = raw_msg(fd, buf, sizeof(buf), &len)) && t != 'Z')
                if (t == 'E')
                        return false;
        return t == 'Z';
}

static bool raw_query(int fd, const char *sql)
{
        size_t n = strlen(sql) + 1;
        uint8_t h[5] = { 'Q', (uint8_t)((n + 4) >> 24), (uint8_t)((n + 4) >> 16),
                         (uint8_t)((n + 4) >> 8), (uint8_t)(n + 4) };

        return write(fd, h, 5) == 5 && write(fd, sql, n) == (ssize_t)n;
}

/* The self-join of table jk (made by make_jk()): ~10 MB. */
static const char *jk_query(const char *jk)
{
        static char q[128];

        snprintf(q, sizeof(q), "SELECT x.v, y.v FROM %s x JOIN %s y ON x.k = y.k", jk, jk);
        return q;
}

/* Table jk of JK_ROWS rows of one key. */
static void make_jk(PGconn *c, const char *jk)
{
        char *q = NULL;
        size_t len = 0;
        FILE *f;

        CU_ASSERT_FATAL(okf(c, "CREATE TABLE %s (k int NOT NULL, v bigint NOT NULL)", jk));
        f = open_memstream(&q, &len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        fprintf(f, "INSERT INTO %s VALUES ", jk);
        for (int i = 0; i < JK_ROWS; i++)
                fprintf(f, "%s(1, %d)", i ? ", " : "", i);
        fclose(f);
        CU_ASSERT_FATAL(ok(c, q));
        free(q);
}

/* A client that sent a ~10 MB query (jk's self-join) and reads nothing: once the
 * kernel's buffers and the adapter's queue are full, the adapter stops pulling
 * (stream_waits), the stream waits on the controller. */
static int stalled_client(const char *jk)
{
        uint64_t waits = stat_of(COORD__ROLE__ROLE_ADAPTER, "stream_waits");
        int fd = raw_connect(), i;

        CU_ASSERT_FATAL(fd >= 0);
        CU_ASSERT_FATAL(raw_ready(fd));
        CU_ASSERT_FATAL(raw_query(fd, jk_query(jk)));
        for (i = 0; i < 1000 && stat_of(COORD__ROLE__ROLE_ADAPTER, "stream_waits") == waits; i++)
                usleep(20 * 1000);
        CU_ASSERT_FATAL(i < 1000);
        CU_ASSERT(ctl_stat_becomes("peeks_streaming", 1, 5000));
        return fd;
}

static void test_stream_slow_client(void)
{
        /* Chunks of the default size (64 KiB): ~10 MB fill the buffers quickly. */
        PGconn *c = adapter_restart(NULL);
        uint64_t t0, chunks;
        int fd;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        make_jk(c, "jk");
        fd = stalled_client("jk");
        /* It stays stalled: a few chunks more at most, while everyone else is served. */
        usleep(300 * 1000);
        chunks = ctl_stat("peek_chunks");
        t0 = now_ms();
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM jk", "700"));
        CU_ASSERT(ok(c, "CREATE TABLE while_stalled (x int)"));
        CU_ASSERT(ok(c, "INSERT INTO while_stalled VALUES (1)"));
        CU_ASSERT(ok(c, "DROP TABLE while_stalled"));
        printf("\n    served in %llu ms beside a stalled stream\n", (unsigned long long)(now_ms() - t0));
        CU_ASSERT(now_ms() - t0 < 5000);
        CU_ASSERT(ctl_stat("peek_chunks") - chunks <= 1);
        CU_ASSERT_EQUAL(ctl_stat("peeks_streaming"), 1);
        /* It goes: the stream ends, the controller frees the result and the hold. */
        close(fd);
        CU_ASSERT(ctl_stat_becomes("peeks_streaming", 0, 10000));

        /* A client that reads slowly gets all of it. */
        fd = raw_connect();
        CU_ASSERT_FATAL(fd >= 0);
        CU_ASSERT_FATAL(raw_ready(fd));
        CU_ASSERT_FATAL(raw_query(fd, jk_query("jk")));
        {
                char buf[256], t;
                size_t n, rows = 0;

                while ((t = raw_msg(fd, buf, sizeof(buf), &n)) && t != 'Z') {
                        if (t == 'D' && ++rows % 50000 == 0)
                                usleep(100 * 1000); /* slow reader */
                        if (t == 'C')
                                CU_ASSERT_STRING_EQUAL(buf, "SELECT 490000");
                        CU_ASSERT(t != 'E');
                }
                CU_ASSERT_EQUAL(t, 'Z');
                CU_ASSERT_EQUAL(rows, (size_t)JK_ROWS * JK_ROWS);
        }
        close(fd);
        CU_ASSERT_EQUAL(ctl_stat("peeks_streaming"), 0);
        PQfinish(c);
}

/* The controller killed while a stream waits for its client: the client gets the rows
 * sent so far, then 58000, then ReadyForQuery, and its connection goes on working. */
static void test_stream_controller_killed(void)
{
        /* Chunks of the default size, as test_stream_slow_client(); a table of its own. */
        PGconn *c = adapter_restart(NULL);
        char buf[256], t;
        size_t n, rows = 0;
        bool error = false;
        int fd;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        make_jk(c, "jk_killed");
        PQfinish(c);
        fd = stalled_client("jk_killed");

        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        while ((t = raw_msg(fd, buf, sizeof(buf), &n)) && t != 'Z') {
                if (t == 'D')
                        rows++;
                if (t == 'E') {
                        /* Fields: 'S' severity, 'V', 'C' code, ... */
                        for (size_t i = 0; i + 1 < n && i < sizeof(buf); i += strnlen(buf + i, sizeof(buf) - i) + 1)
                                if (buf[i] == 'C')
                                        error = strcmp(buf + i + 1, "58000") == 0;
                }
                CU_ASSERT(t != 'C');    /* no CommandComplete: the statement failed */
        }
        CU_ASSERT_EQUAL(t, 'Z');
        CU_ASSERT(error);
        CU_ASSERT(rows < (size_t)JK_ROWS * JK_ROWS);
        printf("\n    %zu rows, then 58000\n", rows);
        CU_ASSERT_FATAL(raw_query(fd, "SELECT count(*) FROM jk_killed"));
        {
                bool got = false;

                while ((t = raw_msg(fd, buf, sizeof(buf), &n)) && t != 'Z') {
                        CU_ASSERT(t != 'E');
                        if (t == 'D')
                                got = n >= 9 && memcmp(buf + 6, "700", 3) == 0;
                }
                CU_ASSERT_EQUAL(t, 'Z');
                CU_ASSERT(got);
        }
        close(fd);
}

/* ---- Big reads in the controller's peek thread (controller-server-peek.c note 18) --- */

/* The controller restarted with a low threshold and a slow peek thread: a big read
 * waits there while the loop answers writes and small reads; it then returns exactly
 * the table's rows at its timestamp; a read whose requester goes while it is in the
 * thread is dropped, and the controller goes on. */
static void test_peek_thread(void)
{
        PGconn *c, *big;
        PGresult *r;
        uint64_t before;
        pid_t controller;
        static bool seen[3000];

        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
        CU_ASSERT_EQUAL_FATAL(t_sh("COORD_CONTROLLER_ARGS='--test-peek-bg-min-updates 2000 "
                                   "--test-peek-bg-delay-ms 1500' %s up >/dev/null", coord_cmd), 0);
        c = db();
        big = db();
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_PTR_NOT_NULL_FATAL(big);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE pt (a bigint NOT NULL)"));
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE ps (a bigint NOT NULL)"));
        for (int k = 0; k < 3; k++) {
                char *q = NULL;
                size_t len = 0;
                FILE *f = open_memstream(&q, &len);

                fprintf(f, "INSERT INTO pt VALUES ");
                for (int i = k * 1000; i < (k + 1) * 1000; i++)
                        fprintf(f, "%s(%d)", i > k * 1000 ? ", " : "", i);
                fclose(f);
                CU_ASSERT(ok(c, q));
                free(q);
        }
        /* Small: evaluated on the loop, at once. */
        CU_ASSERT(ok(c, "INSERT INTO ps VALUES (1)"));
        before = ctl_stat("peeks_thread");
        CU_ASSERT(rows_are(c, "SELECT a FROM ps", "1"));
        CU_ASSERT_EQUAL(ctl_stat("peeks_thread"), before);

        /* Big: in the thread for 1.5 s; meanwhile the loop serves writes and reads, a
         * write to pt among them, which the big read (earlier) must not show. */
        CU_ASSERT_FATAL(PQsendQuery(big, "SELECT a FROM pt"));
        CU_ASSERT_FATAL(ctl_stat_becomes("peeks_in_thread", 1, 1000));
        CU_ASSERT(ok(c, "INSERT INTO ps VALUES (2)"));
        CU_ASSERT(ok(c, "INSERT INTO pt VALUES (5000)"));
        CU_ASSERT(rows_are(c, "SELECT a FROM ps", "1;2"));
        CU_ASSERT_EQUAL(ctl_stat("peeks_in_thread"), 1);   /* answered while it waits */
        r = PQgetResult(big);
        CU_ASSERT_EQUAL_FATAL(PQresultStatus(r), PGRES_TUPLES_OK);
        CU_ASSERT_EQUAL(PQntuples(r), 3000);
        memset(seen, 0, sizeof(seen));
        for (int i = 0; i < PQntuples(r); i++) {
                long a = strtol(PQgetvalue(r, i, 0), NULL, 10);

                CU_ASSERT_FATAL(a >= 0 && a < 3000);
                CU_ASSERT(!seen[a]);
                seen[a] = true;
        }
        PQclear(r);
        while ((r = PQgetResult(big)))
                PQclear(r);
        CU_ASSERT_EQUAL(ctl_stat("peeks_thread") - before, 1);
        CU_ASSERT_EQUAL(scalar_u64(c, "SELECT count(*) FROM pt"), 3001);

        /* Its requester (the adapter) goes while it is in the thread: dropped, and the
         * same controller serves the new adapter. */
        controller = pid_of(COORD__ROLE__ROLE_CONTROLLER);
        CU_ASSERT_FATAL(PQsendQuery(big, "SELECT a FROM pt"));
        CU_ASSERT_FATAL(ctl_stat_becomes("peeks_in_thread", 1, 1000));
        PQfinish(big);
        PQfinish(c);
        c = adapter_restart(NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(ctl_stat_becomes("peeks_in_thread", 0, 3000));
        CU_ASSERT_EQUAL(pid_of(COORD__ROLE__ROLE_CONTROLLER), controller);
        CU_ASSERT_EQUAL(scalar_u64(c, "SELECT count(*) FROM pt"), 3001);
        CU_ASSERT(ok(c, "DROP TABLE pt"));
        CU_ASSERT(ok(c, "DROP TABLE ps"));
        PQfinish(c);

        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

/* Issue 36, "no query blocks others": a plan that joins is costed by the product of its
 * inputs, so a cross product of small tables goes to the peek thread (held there 1 s
 * by the test hook) while the loop answers everyone; PQcancel ends it with 57014 and
 * the controller stops its evaluation (a PeekNext with cancel; the thread is freed).
 * A join of tiny tables still runs on the loop. */
static void test_cross_product_thread(void)
{
        PGconn *c, *big;
        PGresult *r;
        uint64_t before, t0, t_before;
        char q[4096];
        size_t len;
        pid_t controller;

        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
        CU_ASSERT_EQUAL_FATAL(t_sh("COORD_CONTROLLER_ARGS='--test-peek-bg-delay-ms 1000 "
                                   "--peek-memory-limit-mb 64' %s up >/dev/null", coord_cmd), 0);
        c = db();
        big = db();
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_PTR_NOT_NULL_FATAL(big);
        for (int t = 1; t <= 5; t++) {
                CU_ASSERT_FATAL(okf(c, "CREATE TABLE cx%d (a int)", t));
                len = (size_t)snprintf(q, sizeof(q), "INSERT INTO cx%d VALUES ", t);
                for (int i = 0; i < 60; i++)
                        len += (size_t)snprintf(q + len, sizeof(q) - len, "%s(%d)", i ? ", " : "", i);
                CU_ASSERT_FATAL(len < sizeof(q));
                CU_ASSERT_FATAL(ok(c, q));
        }
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE cy (a int)"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO cy VALUES (1), (2)"));
        controller = pid_of(COORD__ROLE__ROLE_CONTROLLER);

        /* Tiny: 2 x 2 rows, on the loop. */
        before = ctl_stat("peeks_thread");
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM cy AS x, cy AS y", "4"));
        CU_ASSERT_EQUAL(ctl_stat("peeks_thread"), before);

        /* 60^5 rows: in the thread; the loop answers reads and writes meanwhile. */
        CU_ASSERT_FATAL(PQsendQuery(big, "SELECT count(*) FROM cx1, cx2, cx3, cx4, cx5"));
        CU_ASSERT_FATAL(ctl_stat_becomes("peeks_in_thread", 1, 2000));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM cx1", "60"));
        CU_ASSERT(ok(c, "INSERT INTO cy VALUES (3)"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM cy", "3"));
        CU_ASSERT_EQUAL(ctl_stat("peeks_in_thread"), 1);
        CU_ASSERT(PQconsumeInput(big) && PQisBusy(big));

        /* Cancelled: 57014 at once, and the controller drops the evaluation. */
        t0 = now_ms();
        CU_ASSERT(cancel_running(big));
        CU_ASSERT(ctl_stat_becomes("peeks_in_thread", 0, 5000));
        printf("\n    cross product cancelled in the peek thread: thread free %llu ms after "
               "PQcancel\n", (unsigned long long)(now_ms() - t0));
        CU_ASSERT_EQUAL(t_sh("grep -q 'peek_cancelled.*state=evaluating' %s/log/controller.log",
                             home), 0);
        CU_ASSERT_EQUAL(pid_of(COORD__ROLE__ROLE_CONTROLLER), controller);
        CU_ASSERT(rows_are(big, "SELECT count(*) FROM cx1, cx2 WHERE cx1.a = cx2.a", "60"));

        /* statement_timeout ends one too. */
        CU_ASSERT(ok(big, "SET statement_timeout = 300"));
        r = PQexec(big, "SELECT count(*) FROM cx1, cx2, cx3, cx4, cx5");
        CU_ASSERT_STRING_EQUAL(PQresultErrorField(r, PG_DIAG_SQLSTATE) ?: "", "57014");
        PQclear(r);
        CU_ASSERT(ctl_stat_becomes("peeks_in_thread", 0, 5000));

        /* A self-join of an indexed view: the loop copies the arrangement, the thread
         * evaluates (and answers right when not cancelled). */
        CU_ASSERT_FATAL(ok(c, "CREATE VIEW cxv AS SELECT a FROM cx1"));
        CU_ASSERT(ok(big, "SET statement_timeout = 0"));
        t_before = scalar_u64(c, "SELECT mz_now()");
        CU_ASSERT_FATAL(ok(c, "CREATE DEFAULT INDEX ON cxv"));
        /* Read at a time before the index's arrangement began: what it arranges, its
         * plan over cx1, is evaluated in the thread too, while the loop serves others. */
        before = ctl_stat("peeks_thread_index_storage");
        snprintf(q, sizeof(q), "SELECT count(*) FROM cxv AS x, cxv AS y, cxv AS z "
                 "WHERE x.a <> y.a AS OF %llu", (unsigned long long)t_before);
        CU_ASSERT_FATAL(PQsendQuery(big, q));
        CU_ASSERT_FATAL(ctl_stat_becomes("peeks_in_thread", 1, 5000));
        CU_ASSERT(ok(c, "INSERT INTO cy VALUES (5)"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM cx1", "60"));
        r = PQgetResult(big);
        if (PQresultStatus(r) != PGRES_TUPLES_OK)
                fprintf(stderr, "\n    %s: %s", q, PQresultErrorMessage(r));
        CU_ASSERT_EQUAL(PQresultStatus(r), PGRES_TUPLES_OK);
        CU_ASSERT_STRING_EQUAL(PQresultStatus(r) == PGRES_TUPLES_OK ? PQgetvalue(r, 0, 0) : "",
                               "212400");
        PQclear(r);
        while ((r = PQgetResult(big)))
                PQclear(r);
        CU_ASSERT_EQUAL(ctl_stat("peeks_thread_index_storage") - before, 1);
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM cxv", "60"));
        before = ctl_stat("peeks_thread");
        CU_ASSERT_FATAL(PQsendQuery(big, "SELECT count(*) FROM cxv AS x, cxv AS y, cxv AS z "
                                         "WHERE x.a <> y.a"));
        CU_ASSERT_FATAL(ctl_stat_becomes("peeks_in_thread", 1, 5000));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM cxv", "60"));
        CU_ASSERT(ok(c, "INSERT INTO cy VALUES (4)"));
        r = PQgetResult(big);
        CU_ASSERT_EQUAL(PQresultStatus(r), PGRES_TUPLES_OK);
        CU_ASSERT_STRING_EQUAL(PQresultStatus(r) == PGRES_TUPLES_OK ? PQgetvalue(r, 0, 0) : "",
                               "212400");
        PQclear(r);
        while ((r = PQgetResult(big)))
                PQclear(r);
        CU_ASSERT_EQUAL(ctl_stat("peeks_thread") - before, 1);
        CU_ASSERT(ok(c, "DROP VIEW cxv"));
        for (int t = 1; t <= 5; t++)
                CU_ASSERT(okf(c, "DROP TABLE cx%d", t));
        CU_ASSERT(ok(c, "DROP TABLE cy"));
        PQfinish(big);
        PQfinish(c);
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

/* A write evaluated by a dataflow (INSERT ... SELECT of a join) runs on the
 * controller's loop, where nothing can cancel it: its statement_timeout travels with
 * it (TableWrite.eval_timeout_ms) and ends it with 57014, nothing written, well before
 * its memory limit would (a 60^5-row cross product). */
static void test_write_timeout(void)
{
        PGconn *c = db();
        PGresult *r;
        uint64_t t0, took;
        char q[4096];
        size_t len;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        for (int t = 1; t <= 5; t++) {
                CU_ASSERT_FATAL(okf(c, "CREATE TABLE wx%d (a int)", t));
                len = (size_t)snprintf(q, sizeof(q), "INSERT INTO wx%d VALUES ", t);
                for (int i = 0; i < 60; i++)
                        len += (size_t)snprintf(q + len, sizeof(q) - len, "%s(%d)", i ? ", " : "", i);
                CU_ASSERT_FATAL(len < sizeof(q));
                CU_ASSERT_FATAL(ok(c, q));
        }
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE wsum (n bigint)"));
        CU_ASSERT(ok(c, "SET statement_timeout = 300"));
        t0 = now_ms();
        r = PQexec(c, "INSERT INTO wsum SELECT count(*) FROM wx1, wx2, wx3, wx4, wx5");
        took = now_ms() - t0;
        CU_ASSERT_STRING_EQUAL(PQresultErrorField(r, PG_DIAG_SQLSTATE) ?: "", "57014");
        if (PQresultStatus(r) != PGRES_FATAL_ERROR)
                fprintf(stderr, "\n    INSERT ... SELECT of a cross product: %s", PQresStatus(PQresultStatus(r)));
        else
                printf("\n    INSERT ... SELECT of a cross product ended after %llu ms: %s",
                       (unsigned long long)took, PQresultErrorMessage(r));
        PQclear(r);
        CU_ASSERT(took < 5000);
        CU_ASSERT(ok(c, "SET statement_timeout = 0"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM wsum", "0"));
        CU_ASSERT(ok(c, "INSERT INTO wsum SELECT count(*) FROM wx1, wx2 WHERE wx1.a = wx2.a"));
        CU_ASSERT(rows_are(c, "SELECT n FROM wsum", "60"));
        CU_ASSERT(ok(c, "DROP TABLE wsum"));
        for (int t = 1; t <= 5; t++)
                CU_ASSERT(okf(c, "DROP TABLE wx%d", t));
        PQfinish(c);
}

/* INSERT ... VALUES ... RETURNING: the list over the inserted rows, sent once the write
 * is acknowledged; an error in it (1/0) fails the INSERT with nothing written; in a
 * block at once; through the extended protocol, described at Parse. */
static void test_returning(void)
{
        PGconn *c = db();
        PGresult *r;
        const char *v[2] = { "41", "ext" };

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE ret (a int NOT NULL, b text DEFAULT 'dflt', c bigint)"));
        CU_ASSERT(rows_are(c, "INSERT INTO ret VALUES (1, 'x', 10) RETURNING *", "1|x|10"));
        CU_ASSERT(rows_are(c, "INSERT INTO ret (a) VALUES (2), (3) RETURNING a, b, a * 10 AS ten",
                           "2|dflt|20;3|dflt|30"));
        CU_ASSERT(rows_are(c, "INSERT INTO ret AS r VALUES (4, 'y', 4) RETURNING r.a + r.c, upper(b)",
                           "8|Y"));
        CU_ASSERT(fails_with(c, "INSERT INTO ret VALUES (5, 'z', 0) RETURNING a / c", "22012"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM ret WHERE a = 5", "0"));
        CU_ASSERT(fails_with(c, "INSERT INTO ret VALUES (6) RETURNING count(*)", "42803"));
        CU_ASSERT(fails_with(c, "INSERT INTO ret VALUES (6) RETURNING (SELECT 1)", "0A000"));
        /* INSERT ... SELECT ... RETURNING: evaluated by the controller with the write
         * (TableWrite.returning); answers as PostgreSQL 15's for the same statements. */
        CU_ASSERT(ok(c, "CREATE TABLE ret_src (a int, b text)"));
        CU_ASSERT(ok(c, "INSERT INTO ret_src VALUES (101, 'one'), (102, 'two'), (103, NULL)"));
        CU_ASSERT(rows_are(c, "INSERT INTO ret (a, b) SELECT a, b FROM ret_src WHERE a < 103 RETURNING *",
                           "101|one|NULL;102|two|NULL"));
        CU_ASSERT(rows_are(c, "INSERT INTO ret AS r (a) SELECT a * 10 FROM ret_src "
                              "RETURNING r.a + 1 AS nx, b, c", "1011|dflt|NULL;1021|dflt|NULL;1031|dflt|NULL"));
        CU_ASSERT(rows_are(c, "INSERT INTO ret SELECT a, b, a FROM ret_src WHERE a = 103 "
                              "RETURNING a, ret.*, length(b)", "103|103|NULL|103|NULL"));
        CU_ASSERT(rows_are(c, "INSERT INTO ret SELECT a, b, a FROM ret_src WHERE false RETURNING a", ""));
        CU_ASSERT(rows_are(c, "INSERT INTO ret VALUES ((SELECT max(a) FROM ret_src), 'sub', 0) "
                              "RETURNING a, b", "103|sub"));
        CU_ASSERT(fails_with(c, "INSERT INTO ret SELECT a, b, a FROM ret_src RETURNING 10 / (a - 102)",
                             "22012"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM ret WHERE a > 100", "7"));
        CU_ASSERT(fails_with(c, "INSERT INTO ret SELECT a, b, a FROM ret_src RETURNING count(*)", "42803"));
        CU_ASSERT(tag_is(c, "DELETE FROM ret WHERE a > 100", "DELETE 7"));
        CU_ASSERT(ok(c, "DROP TABLE ret_src"));
        CU_ASSERT(fails_with(c, "INSERT INTO ret VALUES (6) RETURNING nosuch", "42703"));
        CU_ASSERT(fails_with(c, "INSERT INTO ret VALUES (6) RETURNING mz_now()", "0A000"));
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT(rows_are(c, "INSERT INTO ret VALUES (8, 'blk', 8) RETURNING a, b", "8|blk"));
        CU_ASSERT(ok(c, "ROLLBACK"));
        r = PQexecParams(c, "INSERT INTO ret (a, b) VALUES ($1, $2) RETURNING a + 1 AS next, b", 2,
                         NULL, v, NULL, NULL, 0);
        CU_ASSERT_EQUAL(PQresultStatus(r), PGRES_TUPLES_OK);
        CU_ASSERT(PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "42") == 0 &&
                  strcmp(PQgetvalue(r, 0, 1), "ext") == 0);
        CU_ASSERT_STRING_EQUAL(PQcmdStatus(r), "INSERT 0 1");
        PQclear(r);
        r = PQprepare(c, "ret1", "INSERT INTO ret (a) VALUES ($1) RETURNING a * 2 AS dbl", 1, NULL);
        CU_ASSERT_EQUAL(PQresultStatus(r), PGRES_COMMAND_OK);
        PQclear(r);
        r = PQdescribePrepared(c, "ret1");
        CU_ASSERT(PQnfields(r) == 1 && strcmp(PQfname(r, 0), "dbl") == 0 && PQftype(r, 0) == 23);
        PQclear(r);
        CU_ASSERT(rows_are(c, "SELECT a, b, c FROM ret ORDER BY a",
                           "1|x|10;2|dflt|NULL;3|dflt|NULL;41|ext|NULL;4|y|4"));
        CU_ASSERT(ok(c, "DROP TABLE ret"));
        PQfinish(c);
}

/* DELETE / UPDATE ... RETURNING: the list over the deleted rows (old) or the updated
 * ones (new), evaluated by the controller with the write, so an error in it (1/0) fails
 * the statement with nothing written; duplicates each returned; through the extended
 * protocol, described at Parse.  The answers are PostgreSQL 15's. */
static void test_write_returning(void)
{
        PGconn *c = db();
        PGresult *r;
        const char *v[2] = { "100", "x" };

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE wr (a int, b text, c char(3))"));
        CU_ASSERT(ok(c, "INSERT INTO wr VALUES (1, 'x', 'p'), (2, 'y', 'q'), (3, 'z', 'r'), "
                        "(3, 'z', 'r'), (0, 'w', 's')"));
        CU_ASSERT(rows_are(c, "DELETE FROM wr WHERE a = 2 RETURNING *", "2|y|q  "));
        r = PQexec(c, "DELETE FROM wr WHERE a = 3 RETURNING a + 1 AS next, b || '!', c");
        CU_ASSERT(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 2 && PQnfields(r) == 3 &&
                  strcmp(PQfname(r, 0), "next") == 0 && strcmp(PQgetvalue(r, 1, 0), "4") == 0 &&
                  strcmp(PQgetvalue(r, 1, 1), "z!") == 0 && strcmp(PQgetvalue(r, 1, 2), "r  ") == 0);
        CU_ASSERT_STRING_EQUAL(PQcmdStatus(r), "DELETE 2");
        PQclear(r);
        r = PQexec(c, "DELETE FROM wr WHERE a = 42 RETURNING a");
        CU_ASSERT(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 0 && PQnfields(r) == 1);
        CU_ASSERT_STRING_EQUAL(PQcmdStatus(r), "DELETE 0");
        PQclear(r);
        CU_ASSERT(rows_are(c, "UPDATE wr SET a = a * 10, b = upper(b) WHERE a = 1 "
                              "RETURNING a, b, c, length(c)", "10|X|p  |1"));
        CU_ASSERT(fails_with(c, "UPDATE wr SET a = 5 WHERE a = 0 RETURNING 10 / (a - 5)", "22012"));
        CU_ASSERT(fails_with(c, "DELETE FROM wr WHERE a = 0 RETURNING 1 / a", "22012"));
        CU_ASSERT(rows_are(c, "SELECT * FROM wr", "0|w|s  ;10|X|p  "));
        CU_ASSERT(fails_with(c, "DELETE FROM wr RETURNING count(*)", "42803"));
        CU_ASSERT(fails_with(c, "UPDATE wr SET a = 1 RETURNING (SELECT 1)", "0A000"));
        CU_ASSERT(fails_with(c, "DELETE FROM wr RETURNING nosuch", "42703"));
        CU_ASSERT(ok(c, "INSERT INTO wr VALUES (7, 'd', 'd'), (7, 'd', 'd')"));
        CU_ASSERT(rows_are(c, "UPDATE wr AS t SET b = 'e' WHERE t.a = 7 RETURNING t.b, t.a", "e|7;e|7"));
        r = PQexecParams(c, "UPDATE wr SET a = a + $1 WHERE b = upper($2) RETURNING a, c", 2, NULL, v,
                         NULL, NULL, 0);
        CU_ASSERT_EQUAL(PQresultStatus(r), PGRES_TUPLES_OK);
        CU_ASSERT(PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "110") == 0 &&
                  strcmp(PQgetvalue(r, 0, 1), "p  ") == 0);
        CU_ASSERT_STRING_EQUAL(PQcmdStatus(r), "UPDATE 1");
        PQclear(r);
        r = PQprepare(c, "wr1", "DELETE FROM wr WHERE a = $1 RETURNING a * 2 AS dbl, c", 1, NULL);
        CU_ASSERT_EQUAL(PQresultStatus(r), PGRES_COMMAND_OK);
        PQclear(r);
        r = PQdescribePrepared(c, "wr1");
        CU_ASSERT(PQnfields(r) == 2 && strcmp(PQfname(r, 0), "dbl") == 0 && PQftype(r, 0) == 23 &&
                  PQftype(r, 1) == 1042);
        PQclear(r);
        r = PQexecPrepared(c, "wr1", 1, (const char *[]){ "7" }, NULL, NULL, 0);
        CU_ASSERT(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 2 &&
                  strcmp(PQgetvalue(r, 1, 0), "14") == 0);
        CU_ASSERT_STRING_EQUAL(PQcmdStatus(r), "DELETE 2");
        PQclear(r);
        CU_ASSERT(rows_are(c, "SELECT * FROM wr", "0|w|s  ;110|X|p  "));
        CU_ASSERT(ok(c, "DROP TABLE wr"));
        PQfinish(c);
}

/* DELETE ... USING and UPDATE ... FROM: each row of the target once however many rows
 * of the list match it (an EXISTS, not a join); RETURNING the target's row; an UPDATE
 * value read from the list where two of its rows match a row is 21000, nothing
 * written (adapter-sql-using.c note 3); what cannot be planned exactly is 0A000. */
static void test_write_from(void)
{
        PGconn *c = db();
        PGresult *r;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE wf (a int, b text)"));
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE wk (k int, v text)"));
        CU_ASSERT(ok(c, "INSERT INTO wf VALUES (1, 'x'), (1, 'x'), (2, 'y'), (3, 'z'), (5, 'f'), "
                        "(NULL, 'n')"));
        CU_ASSERT(ok(c, "INSERT INTO wk VALUES (1, 'one'), (1, 'uno'), (2, 'two'), (NULL, 'null'), "
                        "(4, 'four'), (5, 'five')"));
        r = PQexec(c, "DELETE FROM wf USING wk WHERE wf.a = wk.k AND wk.v NOT IN ('two', 'five') "
                      "RETURNING wf.a, b");
        CU_ASSERT(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 2 &&
                  strcmp(PQgetvalue(r, 1, 1), "x") == 0);
        CU_ASSERT_STRING_EQUAL(PQcmdStatus(r), "DELETE 2");
        PQclear(r);
        CU_ASSERT(rows_are(c, "SELECT * FROM wf", "2|y;3|z;5|f;NULL|n"));
        CU_ASSERT(tag_is(c, "DELETE FROM wf AS t USING wk WHERE t.a = wk.k AND t.b = 'f'", "DELETE 1"));
        CU_ASSERT(rows_are(c, "UPDATE wf SET b = wk.v || '!' FROM wk WHERE wf.a = wk.k RETURNING a, b",
                           "2|two!"));
        CU_ASSERT(ok(c, "INSERT INTO wk VALUES (3, 'three'), (3, 'drei')"));
        CU_ASSERT(fails_with(c, "UPDATE wf SET b = wk.v FROM wk WHERE wf.a = wk.k", "21000"));
        CU_ASSERT(rows_are(c, "SELECT * FROM wf", "2|two!;3|z;NULL|n"));
        CU_ASSERT(tag_is(c, "UPDATE wf SET b = upper(b) FROM wk WHERE wf.a = wk.k", "UPDATE 2"));
        CU_ASSERT(rows_are(c, "SELECT * FROM wf", "2|TWO!;3|Z;NULL|n"));
        CU_ASSERT(fails_with(c, "UPDATE wf SET b = 'q' FROM wk WHERE wf.a = wk.k OR wk.k = 4", "0A000"));
        CU_ASSERT(fails_with(c, "DELETE FROM wf USING wk WHERE wf.a = wk.k RETURNING *", "0A000"));
        CU_ASSERT(fails_with(c, "DELETE FROM wf USING wk WHERE wf.a = wk.k RETURNING v", "0A000"));
        CU_ASSERT(fails_with(c, "DELETE FROM wf USING wf WHERE true", "42712"));
        CU_ASSERT(fails_with(c, "DELETE FROM wf USING wf AS w2 WHERE a = 1", "42702"));
        r = PQexecParams(c, "DELETE FROM wf USING wk WHERE wf.a = wk.k AND wk.v = $1 RETURNING wf.b", 1,
                         NULL, (const char *[]){ "drei" }, NULL, NULL, 0);
        CU_ASSERT(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
                  strcmp(PQgetvalue(r, 0, 0), "Z") == 0);
        CU_ASSERT_STRING_EQUAL(PQcmdStatus(r), "DELETE 1");
        PQclear(r);
        CU_ASSERT(tag_is(c, "DELETE FROM wf USING wk", "DELETE 2"));
        CU_ASSERT(rows_are(c, "SELECT * FROM wf", ""));
        CU_ASSERT(ok(c, "DROP TABLE wf"));
        CU_ASSERT(ok(c, "DROP TABLE wk"));
        PQfinish(c);
}

/* qc on c and qd on d sent at once, both succeeding (with tag, when not NULL). */
static void at_once(PGconn *c, const char *qc, PGconn *d, const char *qd, const char *tag)
{
        CU_ASSERT_FATAL(PQsendQuery(c, qc));
        CU_ASSERT_FATAL(PQsendQuery(d, qd));
        for (PGconn *x = c; x; x = x == c ? d : NULL) {
                PGresult *r;

                while ((r = PQgetResult(x))) {
                        CU_ASSERT_EQUAL(PQresultStatus(r), PGRES_COMMAND_OK);
                        if (tag)
                                CU_ASSERT_STRING_EQUAL(PQcmdStatus(r), tag);
                        PQclear(r);
                }
        }
}

/* INSERT ... ON CONFLICT DO NOTHING: rows whose key is taken (in the table, earlier in
 * the statement, or by a concurrent client's write in the same group) are skipped and
 * not counted; a conflict target names a key (42P10 when none matches) and other keys
 * still fail with 23505; refused in a block (25001). */
static void test_on_conflict(void)
{
        PGconn *c = db(), *d = db();

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_PTR_NOT_NULL_FATAL(d);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE oc (a int PRIMARY KEY, b text UNIQUE, c int)"));
        CU_ASSERT(ok(c, "INSERT INTO oc VALUES (1, 'x', 1), (2, 'y', 2)"));
        CU_ASSERT(tag_is(c, "INSERT INTO oc VALUES (1, 'z', 3), (3, 'w', 3) ON CONFLICT DO NOTHING",
                         "INSERT 0 1"));
        CU_ASSERT(tag_is(c, "INSERT INTO oc VALUES (4, 'v', 4), (4, 'u', 4), (5, 'x', 5) "
                            "ON CONFLICT DO NOTHING", "INSERT 0 1"));
        CU_ASSERT(fails_with(c, "INSERT INTO oc VALUES (6, 'x', 6) ON CONFLICT (a) DO NOTHING", "23505"));
        CU_ASSERT(tag_is(c, "INSERT INTO oc VALUES (2, 'q', 6) ON CONFLICT (a) DO NOTHING", "INSERT 0 0"));
        CU_ASSERT(tag_is(c, "INSERT INTO oc VALUES (7, 'q', 7) ON CONFLICT ON CONSTRAINT oc_b_key "
                            "DO NOTHING", "INSERT 0 1"));
        CU_ASSERT(fails_with(c, "INSERT INTO oc VALUES (8, 'q', 8) ON CONFLICT (c) DO NOTHING", "42P10"));
        CU_ASSERT(fails_with(c, "INSERT INTO oc VALUES (8, 'q', 8) ON CONFLICT (a) DO UPDATE SET c = 0",
                             "23505"));
        CU_ASSERT(tag_is(c, "INSERT INTO oc VALUES (9, NULL, 9), (10, NULL, 10) ON CONFLICT (b) "
                            "DO NOTHING", "INSERT 0 2"));
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT(fails_with(c, "INSERT INTO oc VALUES (11, 'n', 11) ON CONFLICT DO NOTHING", "25001"));
        CU_ASSERT(ok(c, "ROLLBACK"));
        /* Two clients insert the same key at once: one row, whichever comes first. */
        at_once(c, "INSERT INTO oc VALUES (20, 'c20', 1) ON CONFLICT DO NOTHING",
                d, "INSERT INTO oc VALUES (20, 'd20', 2) ON CONFLICT DO NOTHING", NULL);
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM oc WHERE a = 20", "1"));
        {
                /* Either client's row 20, whichever came first. */
                char *got = rows_of(c, "SELECT a, b, c FROM oc");

                CU_ASSERT(got && (strcmp(got, "10|NULL|10;1|x|1;20|c20|1;2|y|2;3|w|3;4|v|4;7|q|7;9|NULL|9") == 0 ||
                                  strcmp(got, "10|NULL|10;1|x|1;20|d20|2;2|y|2;3|w|3;4|v|4;7|q|7;9|NULL|9") == 0));
                if (!got || (strstr(got, "20|c20|1") == NULL && strstr(got, "20|d20|2") == NULL))
                        fprintf(stderr, "\n    oc: got [%s]", got ? got : "(error)");
                free(got);
        }
        CU_ASSERT(ok(c, "DROP TABLE oc"));
        PQfinish(d);
        PQfinish(c);
}

/* INSERT ... ON CONFLICT (key) DO UPDATE (adapter-sql-upsert.c): each statement's
 * tag, error and the table after it are PostgreSQL 15's for the same statements (the
 * expected strings were taken from psql on PostgreSQL 15).  The UPDATE and the INSERT
 * are one unit: when the UPDATE breaks another key (23505), the proposed row that did
 * not conflict is not inserted either. */
static void test_upsert(void)
{
        PGconn *c = db();

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE up (k int PRIMARY KEY, v text UNIQUE, n int DEFAULT 7 "
                              "CHECK (n >= 0))"));
        CU_ASSERT(ok(c, "INSERT INTO up VALUES (1, 'a', 1), (2, 'b', 2)"));
        CU_ASSERT(tag_is(c, "INSERT INTO up VALUES (2, 'B', 20), (3, 'c', 3) ON CONFLICT (k) "
                            "DO UPDATE SET v = excluded.v, n = up.n + excluded.n", "INSERT 0 2"));
        CU_ASSERT(rows_are(c, "SELECT k, v, n FROM up", "1|a|1;2|B|22;3|c|3"));
        CU_ASSERT(tag_is(c, "INSERT INTO up AS x VALUES (1, 'z') ON CONFLICT (k) DO UPDATE "
                            "SET v = x.v || excluded.v || excluded.n::text WHERE x.n < 5", "INSERT 0 1"));
        CU_ASSERT(tag_is(c, "INSERT INTO up VALUES (3, 'q') ON CONFLICT (k) DO UPDATE SET v = 'never' "
                            "WHERE up.n > 100", "INSERT 0 0"));
        CU_ASSERT(rows_are(c, "SELECT k, v, n FROM up", "1|az7|1;2|B|22;3|c|3"));
        CU_ASSERT(fails_with(c, "INSERT INTO up VALUES (4, 'd'), (4, 'e') ON CONFLICT (k) "
                                "DO UPDATE SET v = excluded.v", "21000"));
        CU_ASSERT(fails_with(c, "INSERT INTO up VALUES (5, 'd') ON CONFLICT DO UPDATE SET v = excluded.v",
                             "42601"));
        CU_ASSERT(fails_with(c, "INSERT INTO up VALUES (2, 'x') ON CONFLICT (k) DO UPDATE SET n = n",
                             "42702"));
        CU_ASSERT(fails_with(c, "INSERT INTO up VALUES (7, 'x') ON CONFLICT (k) DO UPDATE SET n = 1 / 0",
                             "22012"));
        CU_ASSERT(tag_is(c, "INSERT INTO up VALUES (1, 'one'), (6, 'six') ON CONFLICT ON CONSTRAINT "
                            "up_pkey DO UPDATE SET v = excluded.v, n = DEFAULT", "INSERT 0 2"));
        CU_ASSERT(rows_are(c, "SELECT k, v, n FROM up", "1|one|7;2|B|22;3|c|3;6|six|7"));
        /* One unit: the UPDATE's 23505 (v 'c' is row 3's) keeps row 8 out too, and the
         * CHECK fails the whole statement. */
        CU_ASSERT(fails_with(c, "INSERT INTO up VALUES (1, 'p'), (8, 'h') ON CONFLICT (k) "
                                "DO UPDATE SET v = 'c'", "23505"));
        CU_ASSERT(fails_with(c, "INSERT INTO up VALUES (1, 'p'), (8, 'h') ON CONFLICT (k) "
                                "DO UPDATE SET n = -1", "23514"));
        CU_ASSERT(rows_are(c, "SELECT k, v, n FROM up", "1|one|7;2|B|22;3|c|3;6|six|7"));
        CU_ASSERT(fails_with(c, "INSERT INTO up VALUES (2, 'y') ON CONFLICT (k) DO UPDATE SET k = 9",
                             "0A000"));
        CU_ASSERT(fails_with(c, "INSERT INTO up VALUES (2, 'y') ON CONFLICT (k) DO UPDATE SET v = 'w' "
                                "RETURNING *", "0A000"));
        CU_ASSERT(ok(c, "CREATE TABLE up2 (a int, b text, c int, UNIQUE (a, b))"));
        CU_ASSERT(ok(c, "INSERT INTO up2 VALUES (1, 'x', 1), (1, NULL, 2), (2, 'y', 3)"));
        CU_ASSERT(tag_is(c, "INSERT INTO up2 VALUES (1, 'x', 10), (1, NULL, 20), (3, 'z', 30) "
                            "ON CONFLICT (b, a) DO UPDATE SET c = up2.c + excluded.c", "INSERT 0 3"));
        CU_ASSERT(tag_is(c, "INSERT INTO up2 (a, b) VALUES (2, 'y') ON CONFLICT (a, b) "
                            "DO UPDATE SET c = excluded.c", "INSERT 0 1"));
        CU_ASSERT(rows_are(c, "SELECT a, b, c FROM up2", "1|NULL|2;1|NULL|20;1|x|11;2|y|NULL;3|z|30"));
        CU_ASSERT(tag_is(c, "INSERT INTO up2 VALUES (2, 'y', 5) ON CONFLICT (a, b) DO UPDATE "
                            "SET c = excluded.c WHERE up2.c IS NULL", "INSERT 0 1"));
        CU_ASSERT(rows_are(c, "SELECT a, b, c FROM up2", "1|NULL|2;1|NULL|20;1|x|11;2|y|5;3|z|30"));
        CU_ASSERT(fails_with(c, "INSERT INTO up2 VALUES (2, 'y', 6) ON CONFLICT (a) DO UPDATE SET c = 1",
                             "42P10"));
        CU_ASSERT(ok(c, "DROP TABLE up2"));
        /* Two clients upsert the same new key at once: one inserts it, the other then
         * updates it (each statement reads what the other wrote, as in PostgreSQL). */
        {
                PGconn *d = db();

                CU_ASSERT_PTR_NOT_NULL_FATAL(d);
                at_once(c, "INSERT INTO up VALUES (50, 'c50', 1) ON CONFLICT (k) "
                           "DO UPDATE SET n = up.n + excluded.n",
                        d, "INSERT INTO up VALUES (50, 'd50', 2) ON CONFLICT (k) "
                           "DO UPDATE SET n = up.n + excluded.n", "INSERT 0 1");
                CU_ASSERT(rows_are(c, "SELECT n FROM up WHERE k = 50", "3"));
                CU_ASSERT(rows_are(c, "SELECT count(*) FROM up WHERE v IN ('c50', 'd50')", "1"));
                PQfinish(d);
        }
        CU_ASSERT(ok(c, "DROP TABLE up"));
        PQfinish(c);
}

static void test_down(void)
{
        CU_ASSERT_EQUAL(t_sh("%s down >/dev/null", coord_cmd), 0);
}

/* Column defaults (issue 35 item 1): constants, kept by the catalog across an adapter
 * restart; INSERT of fewer columns, DEFAULT, DEFAULT VALUES and UPDATE SET c = DEFAULT
 * take them; what would be evaluated at CREATE instead of at INSERT is refused. */
static void test_defaults(void)
{
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE df (a int DEFAULT 7, b text DEFAULT 'x' || 'y', "
                              "c bigint NOT NULL DEFAULT 1 + 2, e int)"));
        CU_ASSERT(ok(c, "INSERT INTO df (e) VALUES (1)"));
        CU_ASSERT(ok(c, "INSERT INTO df VALUES (DEFAULT, 'z', DEFAULT, 2)"));
        CU_ASSERT(ok(c, "INSERT INTO df DEFAULT VALUES"));
        CU_ASSERT(ok(c, "INSERT INTO df (a, e) VALUES (NULL, 4)"));
        CU_ASSERT(rows_are(c, "SELECT coalesce(a, -1), b, c, coalesce(e, -1) FROM df",
                           "-1|xy|3|4;7|xy|3|-1;7|xy|3|1;7|z|3|2"));
        CU_ASSERT(ok(c, "UPDATE df SET a = DEFAULT WHERE e = 4"));
        CU_ASSERT(rows_are(c, "SELECT a FROM df WHERE e = 4", "7"));
        PQfinish(c);
        c = adapter_restart(NULL);              /* the defaults come back from the catalog */
        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT(ok(c, "INSERT INTO df (e) VALUES (5)"));
        CU_ASSERT(rows_are(c, "SELECT a, b, c FROM df WHERE e = 5", "7|xy|3"));
        CU_ASSERT(fails_with(c, "CREATE TABLE dx (a bigint DEFAULT mz_now())", "0A000"));
        CU_ASSERT(fails_with(c, "CREATE TABLE dx (a text DEFAULT current_user)", "0A000"));
        CU_ASSERT(fails_with(c, "CREATE TABLE dx (a int DEFAULT 'x')", "22P02"));
        CU_ASSERT(fails_with(c, "CREATE TABLE dx (a int DEFAULT 1 DEFAULT 2)", "42601"));
        CU_ASSERT(fails_with(c, "CREATE TABLE dx (a int NOT NULL DEFAULT NULL); INSERT INTO dx DEFAULT VALUES",
                             "23502"));
        CU_ASSERT(ok(c, "DROP TABLE IF EXISTS dx"));
        /* CHECK: every inserted row, NULL passes, named as PostgreSQL names them, kept
         * across a restart; an UPDATE checks them on the new rows;
         * REFERENCES a column with no key is PostgreSQL's 42830 (foreign keys:
         * test-keys). */
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE ck (a int CHECK (a > 0), b text, c int DEFAULT 5, "
                              "CHECK (c < 10 AND a <> c), CONSTRAINT short_b CHECK (length(b) < 4))"));
        CU_ASSERT(ok(c, "INSERT INTO ck VALUES (1, 'x'), (NULL, NULL)"));
        CU_ASSERT(fails_detail(c, "INSERT INTO ck VALUES (0, 'x')", "23514", "Failing row contains (0, x, 5)"));
        CU_ASSERT(fails_with(c, "INSERT INTO ck VALUES (2, 'x'), (1, 'xxxxx')", "23514"));
        CU_ASSERT(fails_with(c, "INSERT INTO ck (a, c) VALUES (2, 11)", "23514"));
        /* UPDATE: each CHECK over the new row, in the controller; NULL passes. */
        CU_ASSERT(ok(c, "UPDATE ck SET a = 3"));
        CU_ASSERT(rows_are(c, "SELECT a, c FROM ck", "3|5;3|5"));
        CU_ASSERT(ok(c, "UPDATE ck SET a = NULL WHERE b IS NULL"));
        CU_ASSERT(fails_with(c, "UPDATE ck SET a = 5 WHERE a = 3", "23514"));
        CU_ASSERT(fails_with(c, "UPDATE ck SET a = a - 10", "23514"));
        {
                PGresult *r = PQexec(c, "UPDATE ck SET b = 'long' WHERE a = 3");
                const char *m = PQresultErrorMessage(r);
                CU_ASSERT(m && strstr(m, "new row for relation \"ck\" violates check constraint \"short_b\""));
                PQclear(r);
        }
        CU_ASSERT(rows_are(c, "SELECT coalesce(a, -1), coalesce(b, '-'), c FROM ck", "-1|-|5;3|x|5"));
        {
                /* A CHECK's default name takes the one column its expression reads, else
                 * none, wherever it was written (PostgreSQL 15's names for this table). */
                static const char *const rows[][2] = {
                        { "1, 0, 1", "nm_b_check" }, { "1, 2, 0", "nm_c_check" },
                        { "100, 200, 1", "nm_a_check" }, { "5, 2, 1", "nm_check" },
                        { "1, 1000, 1", "nm_b_check1" },
                };

                CU_ASSERT_FATAL(ok(c, "CREATE TABLE nm (a int CHECK (b > 0), b int, c int CHECK (c > 0), "
                                      "CHECK (a < 100), CHECK (a < b), CHECK (true), "
                                      "CHECK (b > 1 AND b < 1000))"));
                for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                        char q[64], want[96];
                        PGresult *r;
                        const char *m;

                        snprintf(q, sizeof(q), "INSERT INTO nm VALUES (%s)", rows[i][0]);
                        snprintf(want, sizeof(want), "violates check constraint \"%s\"", rows[i][1]);
                        r = PQexec(c, q);
                        m = PQresultErrorMessage(r);
                        if (!m || !strstr(m, want))
                                fprintf(stderr, "\n    %s: want %s, got %s", q, want, m ? m : "-");
                        CU_ASSERT(m && strstr(m, want));
                        PQclear(r);
                }
                CU_ASSERT(ok(c, "DROP TABLE nm"));
        }
        CU_ASSERT(fails_with(c, "CREATE TABLE dx (a int REFERENCES ck (a))", "42830"));
        CU_ASSERT(fails_with(c, "CREATE TABLE dx (a int CHECK (a))", "42804"));
        CU_ASSERT(fails_with(c, "CREATE TABLE dx (a bigint CHECK (a > mz_now()))", "0A000"));
        /* varchar(n): INSERT and UPDATE past n characters are 22001 (trailing spaces are
         * cut), a cast cuts; the length is kept across a restart. */
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE vc (a varchar(3), b varchar, c character varying(2) DEFAULT 'x')"));
        CU_ASSERT(ok(c, "INSERT INTO vc VALUES ('abc', 'any length at all', 'ab'), ('d  ', NULL, 'e  ')"));
        CU_ASSERT(ok(c, "INSERT INTO vc (a) VALUES ('\xc3\xa9\xe2\x82\xac\xc3\xbc')"));    /* 3 characters */
        CU_ASSERT(fails_with(c, "INSERT INTO vc (a) VALUES ('abcd')", "22001"));
        CU_ASSERT(fails_with(c, "UPDATE vc SET a = a || 'x' WHERE a = 'abc'", "22001"));
        CU_ASSERT(ok(c, "UPDATE vc SET c = 'fg  ' WHERE a = 'abc'"));
        CU_ASSERT(rows_are(c, "SELECT a, length(a), c FROM vc", "abc|3|fg;d  |3|e ;\xc3\xa9\xe2\x82\xac\xc3\xbc|3|x"));
        CU_ASSERT(rows_are(c, "SELECT 'abcdef'::varchar(2), CAST(a AS varchar(1)) FROM vc WHERE a = 'abc'", "ab|a"));
        CU_ASSERT(fails_with(c, "CREATE TABLE dx (a varchar(0))", "22023"));
        CU_ASSERT(fails_with(c, "CREATE TABLE dx (a varchar(2) DEFAULT 'abc')", "22001"));
        /* character(n): padded to n on INSERT, UPDATE and DEFAULT (22001 past n unless
         * spaces), compared, grouped and sorted without its trailing spaces (the
         * answers are PostgreSQL 15's). */
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE bp (a char(4), b character(2) DEFAULT 'x', n int)"));
        CU_ASSERT(ok(c, "INSERT INTO bp VALUES ('ab', 'c', 1), ('abcd', NULL, 2), ('ab  ', 'de', 3), "
                        "(12, 'f ', 4)"));
        CU_ASSERT(ok(c, "INSERT INTO bp (a, n) VALUES ('\xc3\xa9', 5)"));
        CU_ASSERT(fails_with(c, "INSERT INTO bp (a) VALUES ('abcde')", "22001"));
        CU_ASSERT(ok(c, "INSERT INTO bp (a) VALUES ('abcd   ')"));
        CU_ASSERT(fails_with(c, "UPDATE bp SET b = 'xyz' WHERE n = 1", "22001"));
        CU_ASSERT(ok(c, "UPDATE bp SET b = 'g   ' WHERE n = 1"));
        CU_ASSERT(rows_are(c, "SELECT '[' || a || ']', a, b, length(a), n FROM bp",
                           "[12]|12  |f |2|4;[ab]|ab  |de|2|3;[ab]|ab  |g |2|1;[abcd]|abcd|NULL|4|2;"
                           "[abcd]|abcd|x |4|NULL;[\xc3\xa9]|\xc3\xa9   |x |1|5"));
        CU_ASSERT(rows_are(c, "SELECT a, count(*) FROM bp GROUP BY a", "12  |1;ab  |2;abcd|2;\xc3\xa9   |1"));
        CU_ASSERT(rows_are(c, "SELECT n FROM bp WHERE a = 'ab' OR b = 'de'::char(5) OR a LIKE '\xc3\xa9'",
                           "1;3"));
        CU_ASSERT(rows_are(c, "SELECT n FROM bp WHERE a LIKE '\xc3\xa9%' OR a IN ('12', 'zz')", "4;5"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM bp x JOIN bp y ON x.a = y.a::char(2)", "10"));
        {
                PGresult *r = PQexec(c, "SELECT a, n FROM bp WHERE n IS NOT NULL ORDER BY a DESC, n");
                bool good = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 5 &&
                            strcmp(PQgetvalue(r, 0, 1), "5") == 0 && strcmp(PQgetvalue(r, 1, 1), "2") == 0 &&
                            strcmp(PQgetvalue(r, 2, 1), "1") == 0 && strcmp(PQgetvalue(r, 4, 1), "4") == 0 &&
                            PQftype(r, 0) == 1042;
                CU_ASSERT(good);
                PQclear(r);
        }
        CU_ASSERT(fails_with(c, "CREATE TABLE dx (a char(0))", "22023"));
        CU_ASSERT(fails_with(c, "CREATE TABLE dx (a bpchar)", "0A000"));
        CU_ASSERT(fails_with(c, "SELECT max(a) FROM bp", "0A000"));
        CU_ASSERT(fails_with(c, "SELECT a FROM bp UNION SELECT b FROM bp", "0A000"));
        PQfinish(c);
        c = adapter_restart(NULL);
        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT(fails_with(c, "INSERT INTO bp (a) VALUES ('abcde')", "22001"));
        CU_ASSERT(ok(c, "INSERT INTO bp (a, n) VALUES ('z', 6)"));
        CU_ASSERT(rows_are(c, "SELECT a, b FROM bp WHERE n = 6", "z   |x "));
        CU_ASSERT(rows_are(c, "SELECT column_name, character_maximum_length FROM information_schema.columns "
                              "WHERE table_name = 'bp' AND data_type = 'character'", "a|4;b|2"));
        CU_ASSERT(rows_are(c, "SELECT attname, atttypid, atttypmod, format_type(atttypid, atttypmod) "
                              "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                              "WHERE c.relname = 'bp' AND atttypid = 1042",
                           "a|1042|8|character(4);b|1042|6|character(2)"));
        CU_ASSERT(ok(c, "DROP TABLE bp"));
        CU_ASSERT(fails_with(c, "INSERT INTO vc (a) VALUES ('abcd')", "22001"));
        CU_ASSERT(fails_with(c, "INSERT INTO vc (c) VALUES ('abc')", "22001"));
        CU_ASSERT(rows_are(c, "SELECT character_maximum_length FROM information_schema.columns "
                              "WHERE table_name = 'vc' AND data_type = 'character varying'", "2;3"));
        CU_ASSERT(ok(c, "DROP TABLE vc"));
        PQfinish(c);
        c = adapter_restart(NULL);
        CU_ASSERT_FATAL(c != NULL);
        {
                PGresult *r = PQexec(c, "INSERT INTO ck VALUES (1, 'long')");
                const char *m = PQresultErrorMessage(r);
                CU_ASSERT(m && strstr(m, "violates check constraint \"short_b\""));
                PQclear(r);
        }
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM ck", "2"));
        CU_ASSERT_EQUAL(t_sh("%s check >/dev/null", coord_cmd), 0);
        CU_ASSERT(ok(c, "DROP TABLE ck"));
        CU_ASSERT(ok(c, "DROP TABLE df"));
        PQfinish(c);
}

/* PRIMARY KEY and UNIQUE (controller-server-unique.c note 22): 23505 with PostgreSQL's
 * message and detail for a duplicate in one INSERT, across INSERTs, by an UPDATE, in a
 * block (which fails whole at COMMIT); NULLs distinct; concurrent writers in one group:
 * exactly one of the same key wins, the others' distinct keys all go in; the keys hold
 * after kill -9 of the controller (mirrors rebuilt from storage) and a restart of the
 * adapter (keys from the catalog). */
/* Send sqls[i] on a connection of its own, all at once; wrote[i]: it succeeded.
 * Returns how many failed with 23505. */
static int race(int n, const char *const *sqls, bool *wrote)
{
        PGconn *cs[16];
        int dup = 0;

        CU_ASSERT_FATAL(n <= 16);
        for (int i = 0; i < n; i++)
                CU_ASSERT_FATAL((cs[i] = db()) != NULL);
        for (int i = 0; i < n; i++)
                CU_ASSERT(PQsendQuery(cs[i], sqls[i]) == 1);
        for (int i = 0; i < n; i++) {
                PGresult *r;

                wrote[i] = false;
                while ((r = PQgetResult(cs[i]))) {
                        const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);

                        if (PQresultStatus(r) == PGRES_COMMAND_OK)
                                wrote[i] = true;
                        else if (st && strcmp(st, "23505") == 0)
                                dup++;
                        PQclear(r);
                }
                PQfinish(cs[i]);
        }
        return dup;
}

static void test_keys(void)
{
        enum { N = 8 };
        PGconn *c = db();
        char sqls[N][96];
        const char *sqlp[N];
        bool wrote[N];
        int won = 0, dup, other = 0;

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE kt (a int PRIMARY KEY, b text UNIQUE, c int, d int, "
                              "CONSTRAINT cd UNIQUE (c, d))"));
        CU_ASSERT(ok(c, "INSERT INTO kt VALUES (1, 'x', 1, 1), (2, NULL, 1, NULL), (3, NULL, 1, NULL)"));
        CU_ASSERT(fails_detail(c, "INSERT INTO kt VALUES (1, 'y', 0, 0)", "23505", "Key (a)=(1) already exists."));
        {
                PGresult *r = PQexec(c, "INSERT INTO kt VALUES (4, 'x', 0, 0)");
                const char *m = PQresultErrorMessage(r);
                CU_ASSERT(m && strstr(m, "duplicate key value violates unique constraint \"kt_b_key\""));
                PQclear(r);
        }
        CU_ASSERT(fails_detail(c, "INSERT INTO kt VALUES (5, 'p', 1, 1)", "23505", "Key (c, d)=(1, 1) already exists."));
        CU_ASSERT(fails_with(c, "INSERT INTO kt VALUES (6, 'q', 6, 6), (6, 'r', 7, 7)", "23505"));
        CU_ASSERT(fails_with(c, "INSERT INTO kt (b) VALUES ('s')", "23502"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM kt", "3"));
        /* UPDATE: the statement's result is checked (a shift of every key passes). */
        CU_ASSERT(fails_detail(c, "UPDATE kt SET a = 1 WHERE a = 2", "23505", "Key (a)=(1) already exists."));
        CU_ASSERT(ok(c, "UPDATE kt SET a = a + 1"));
        CU_ASSERT(rows_are(c, "SELECT a FROM kt", "2;3;4"));
        CU_ASSERT(ok(c, "DELETE FROM kt WHERE a = 4"));
        CU_ASSERT(ok(c, "INSERT INTO kt VALUES (4, 'z', 4, 4)"));
        /* A block fails whole; so does a query string's implicit transaction. */
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT(ok(c, "INSERT INTO kt VALUES (10, 'b1', 10, 10)"));
        CU_ASSERT(ok(c, "INSERT INTO kt VALUES (2, 'b2', 11, 11)"));
        CU_ASSERT(fails_with(c, "COMMIT", "23505"));
        CU_ASSERT(fails_with(c, "INSERT INTO kt VALUES (11, 'i1', 12, 12); INSERT INTO kt VALUES (11, 'i2', 13, 13)",
                             "23505"));
        CU_ASSERT(rows_are(c, "SELECT a FROM kt", "2;3;4"));
        /* Concurrent writers: one group, units failing alone. */
        for (int i = 0; i < N; i++) {
                snprintf(sqls[i], sizeof(sqls[i]), "INSERT INTO kt VALUES (%d, 'c%d', 100, %d)",
                         i % 2 ? 100 : 200 + i, i, i);
                sqlp[i] = sqls[i];
        }
        dup = race(N, sqlp, wrote);
        for (int i = 0; i < N; i++)
                if (wrote[i])
                        i % 2 ? won++ : other++;
        CU_ASSERT_EQUAL(won, 1);
        CU_ASSERT_EQUAL(dup, N / 2 - 1);
        CU_ASSERT_EQUAL(other, N / 2);
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM kt WHERE a = 100 OR a >= 200", "5"));
        /* The keys hold after kill -9 of the controller and a restart of the adapter. */
        PQfinish(c);
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
        CU_ASSERT_EQUAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        c = adapter_restart(NULL);
        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT(fails_detail(c, "INSERT INTO kt VALUES (3, 'n', 50, 50)", "23505", "Key (a)=(3) already exists."));
        CU_ASSERT(fails_detail(c, "INSERT INTO kt VALUES (50, 'z', 50, 50)", "23505", "Key (b)=(z) already exists."));
        CU_ASSERT(ok(c, "INSERT INTO kt VALUES (50, 'n', 50, 50)"));
        CU_ASSERT(fails_with(c, "INSERT INTO kt VALUES (50, 'm', 51, 51)", "23505"));
        /* Refused: what cannot be enforced, and PostgreSQL's own errors. */
        CU_ASSERT(fails_with(c, "CREATE TABLE kx (a int PRIMARY KEY, b int PRIMARY KEY)", "42P16"));
        CU_ASSERT(fails_with(c, "CREATE TABLE kx (a int, UNIQUE (a, a))", "42701"));
        CU_ASSERT(fails_with(c, "CREATE TABLE kx (a int, UNIQUE (z))", "42703"));
        CU_ASSERT(fails_with(c, "CREATE TABLE kx (a int, UNIQUE (a) DEFERRABLE)", "0A000"));
        CU_ASSERT(fails_with(c, "CREATE TABLE kx (a int, UNIQUE NULLS NOT DISTINCT (a))", "0A000"));
        CU_ASSERT(fails_with(c, "CREATE TABLE kx (a int CONSTRAINT n CHECK (a > 0), b int CONSTRAINT n UNIQUE)",
                             "42710"));
        CU_ASSERT_EQUAL(t_sh("%s check >/dev/null", coord_cmd), 0);
        CU_ASSERT(ok(c, "DROP TABLE kt"));
        PQfinish(c);
}

/* INSERT ... SELECT: evaluated by the controller at the write timestamp over one table
 * (or constants), coerced, defaulted and checked as VALUES are; refused with 0A000 where
 * it would need a join or an aggregate, or read what is not a table. */
static void test_insert_select(void)
{
        enum { N = 6 };
        PGconn *c = db();
        const char *sqlp[N];
        bool wrote[N];
        int won = 0, dup;

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE iss (a int, b text NOT NULL)"));
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE isd (a int PRIMARY KEY, b varchar(3) NOT NULL DEFAULT 'dd', "
                              "c bigint CHECK (c > 0))"));
        CU_ASSERT(ok(c, "INSERT INTO iss VALUES (1, 'x'), (2, 'y'), (3, 'zzzz')"));
        CU_ASSERT(tag_is(c, "INSERT INTO isd SELECT a, b, a * 10 FROM iss WHERE a < 3", "INSERT 0 2"));
        CU_ASSERT(rows_are(c, "SELECT a, b, c FROM isd", "1|x|10;2|y|20"));
        /* Omitted columns take their defaults; an untyped literal its column's type. */
        CU_ASSERT(tag_is(c, "INSERT INTO isd (a) SELECT a + 10 FROM iss WHERE a = 1", "INSERT 0 1"));
        CU_ASSERT(ok(c, "INSERT INTO isd SELECT '20', 'lit'"));
        CU_ASSERT(rows_are(c, "SELECT a, b, c FROM isd WHERE a >= 11", "11|dd|NULL;20|lit|NULL"));
        /* The table's own rows, read as of the write: doubles exactly. */
        CU_ASSERT(tag_is(c, "INSERT INTO iss SELECT a + 100, b FROM iss", "INSERT 0 3"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM iss", "6"));
        CU_ASSERT(tag_is(c, "INSERT INTO iss SELECT a, b FROM iss WHERE false", "INSERT 0 0"));
        /* Each check of VALUES applies to every row; a failure writes nothing. */
        CU_ASSERT(fails_detail(c, "INSERT INTO isd SELECT a, 'k' FROM iss", "23505", "Key (a)=(1) already exists."));
        CU_ASSERT(fails_with(c, "INSERT INTO isd SELECT a + 1000, b FROM iss", "22001"));
        CU_ASSERT(fails_with(c, "INSERT INTO isd SELECT a + 1000, NULL FROM iss", "23502"));
        CU_ASSERT(fails_with(c, "INSERT INTO isd SELECT a + 1000, 'v', -a FROM iss", "23514"));
        CU_ASSERT(fails_with(c, "INSERT INTO isd SELECT 'zz', 'v'", "22P02"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM isd", "4"));
        /* PostgreSQL's errors, and what is refused. */
        CU_ASSERT(fails_with(c, "INSERT INTO isd (a) SELECT a, b FROM iss", "42601"));
        CU_ASSERT(fails_with(c, "INSERT INTO isd (a, b) SELECT a FROM iss", "42601"));
        CU_ASSERT(fails_with(c, "INSERT INTO isd SELECT b FROM iss", "42804"));
        CU_ASSERT(fails_with(c, "INSERT INTO isd SELECT a FROM iss LIMIT 1", "0A000"));
        /* Joins, aggregates, top-k, subqueries: a dataflow in the controller, over the
         * tables as of the write. */
        CU_ASSERT(tag_is(c, "INSERT INTO isd (a, c) SELECT a % 100 + 2000, count(*) FROM iss GROUP BY a % 100",
                         "INSERT 0 3"));
        CU_ASSERT(rows_are(c, "SELECT a, c FROM isd WHERE a >= 2000", "2001|2;2002|2;2003|2"));
        CU_ASSERT(tag_is(c, "INSERT INTO isd (a) SELECT x.a + 3000 FROM iss x JOIN isd y ON x.a = y.a - 2000",
                         "INSERT 0 3"));
        CU_ASSERT(tag_is(c, "INSERT INTO isd (a) SELECT a + 4000 FROM iss ORDER BY a DESC LIMIT 2", "INSERT 0 2"));
        CU_ASSERT(tag_is(c, "INSERT INTO isd (a) SELECT a + 5000 FROM iss WHERE a IN (SELECT a - 3000 FROM isd)",
                         "INSERT 0 3"));
        CU_ASSERT(rows_are(c, "SELECT a FROM isd WHERE a >= 3000", "3001;3002;3003;4102;4103;5001;5002;5003"));
        CU_ASSERT(fails_detail(c, "INSERT INTO isd (a) SELECT x.a FROM iss x, iss y", "23505", "already exists"));
        CU_ASSERT(tag_is(c, "DELETE FROM isd WHERE a >= 2000", "DELETE 11"));
        CU_ASSERT(ok(c, "CREATE MATERIALIZED VIEW ismv AS SELECT a FROM iss"));
        CU_ASSERT(fails_with(c, "INSERT INTO isd SELECT a + 500 FROM ismv", "0A000"));
        CU_ASSERT(ok(c, "CREATE VIEW isv AS SELECT a + 500 AS a FROM iss WHERE a < 100"));
        CU_ASSERT(tag_is(c, "INSERT INTO isd (a) SELECT a FROM isv", "INSERT 0 3"));
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT(fails_with(c, "INSERT INTO isd SELECT 99", "25001"));
        CU_ASSERT(ok(c, "ROLLBACK"));
        /* Concurrent writers of the same key: one wins, the others see its row. */
        for (int i = 0; i < N; i++)
                sqlp[i] = "INSERT INTO isd (a) SELECT a + 900 FROM iss WHERE a = 1";
        dup = race(N, sqlp, wrote);
        for (int i = 0; i < N; i++)
                won += wrote[i];
        CU_ASSERT_EQUAL(won, 1);
        CU_ASSERT_EQUAL(dup, N - 1);
        CU_ASSERT(rows_are(c, "SELECT a FROM isd WHERE a > 500", "501;502;503;901"));
        CU_ASSERT(ok(c, "DROP VIEW isv"));
        CU_ASSERT(ok(c, "DROP MATERIALIZED VIEW ismv"));
        CU_ASSERT(ok(c, "DROP TABLE iss"));
        CU_ASSERT(ok(c, "DROP TABLE isd"));
        PQfinish(c);
}

static const struct t_case cases[] = {
        { "up", test_up },
        { "column defaults and CHECK constraints", test_defaults },
        { "PRIMARY KEY and UNIQUE: 23505, blocks, concurrent writers, restarts", test_keys },
        { "INSERT ... SELECT: one table or constants, checked, atomic; refusals", test_insert_select },
        { "create, insert, select, delete, drop, AS OF", test_round_trip },
        { "errors carry SQLSTATEs", test_errors },
        { "built-in relations", test_builtins },
        { "extended protocol", test_extended },
        { "extended protocol: a run-time error, Sync, then normal service; pipelines", test_extended_errors },
        { "cancel a waiting read", test_cancel },
        { "a 13-way join in any FROM order is joined along its predicates", test_join_order },
        { "a query past --peek-memory-limit-mb fails with 53200, the controller serves on",
          test_peek_memory_limit },
        { "controller stopped or killed: SELECT 1, SET, SHOW answered; statement_timeout, cancel",
          test_controller_away },
        { "transaction blocks: INSERTs at COMMIT, together; ROLLBACK, errors, leaving", test_transactions },
        { "REPEATABLE READ and SERIALIZABLE blocks read one snapshot, held; 40001 past it", test_isolation },
        { "100 clients, kill -9 controller then adapter: acknowledged rows survive", test_kill9_under_load },
        { "concurrent DDL shares catalog syncs", test_ddl_group_commit },
        { "a query string's CREATEs commit together, answered in order", test_ddl_runs },
        { "a block of CREATEs commits at COMMIT, whole or not at all", test_ddl_blocks },
        { "oracle monotone with the clock set back", test_oracle_monotone },
        { "a DDL costs one timestamp", test_ddl_timestamps },
        { "a DDL answered by its committer is seen by every next statement", test_direct_reply },
        { "a failed catalog write (EFBIG): 58030, reads go on, a restart recovers", test_catalog_write_failure },
        { "built-in rows of answered DDL survive kill -9 of the adapter", test_ddl_rows_survive_kill9 },
        { "restart: the writer mark spares the reads, and is not trusted after a loss", test_restart_mark },
        { "a result in many chunks: exactly its rows; a small one in one", test_stream_rows },
        { "a client that stops reading holds nobody else, and is freed when it goes", test_stream_slow_client },
        { "controller killed mid-stream: 58000, the connection goes on", test_stream_controller_killed },
        { "a big read in the controller's peek thread; the loop serves meanwhile", test_peek_thread },
        { "INSERT ... RETURNING", test_returning },
        { "DELETE and UPDATE ... RETURNING", test_write_returning },
        { "DELETE ... USING, UPDATE ... FROM: each row once; 21000 for two matches", test_write_from },
        { "INSERT ... ON CONFLICT DO NOTHING", test_on_conflict },
        { "INSERT ... ON CONFLICT DO UPDATE", test_upsert },
        { "a cross product goes to the peek thread; cancel and statement_timeout stop it",
          test_cross_product_thread },
        { "a write's evaluation ends at its statement_timeout", test_write_timeout },
        { "psql script", test_psql_script },
        { "down", test_down },
        { NULL, NULL },
};

int main(void)
{
        if (system("command -v psql >/dev/null") != 0) {
                fprintf(stderr, "psql not found\n");
                return T_EXIT_SKIP;
        }
        return itest_main("tables", "s", (const struct t_suite[]){ { "sql", cases }, { NULL, NULL } });
}
