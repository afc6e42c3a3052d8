/* test-keys -- FOREIGN KEY constraints end to end: the three real daemons started with
 * tools/coord, libpq and psql as clients (controller-server-unique.c note 25).
 *
 * Cases on one instance under a fresh COORD_HOME, each on tables of its own making
 * (keys_tables(): it runs alone too, tools/test-alone):
 *   CREATE TABLE's acceptance and refusals, each error's SQLSTATE, message and detail as
 *   PostgreSQL 15 prints them (0A000 for what Coord cannot enforce exactly);
 *   the child side (23503 "insert or update ... is not present"), NULL key columns
 *   passing (MATCH SIMPLE), a multi-column key, an UPDATE of the child;
 *   the parent side (23503 "update or delete ... is still referenced"), an UPDATE that
 *   keeps a referenced key, deleting children then the parent;
 *   transaction blocks, checked at COMMIT: parent then child passes, a missing parent
 *   fails the whole block;
 *   two clients racing, one deleting a parent and one inserting its child: exactly
 *   one of them succeeds, every round;
 *   kill -9 of the adapter, then of the controller: still enforced on both sides;
 *   DROP TABLE of a referenced table: 2BP01 with PostgreSQL's detail and hint, CASCADE
 *   refused (0A000); dropping the child first, or both together, works;
 *   psql's \d of both tables works; coordctl check matches.
 */
#include <libpq-fe.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "itest.h"

static void test_up(void)
{
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

/* sql fails with exactly this SQLSTATE, message and detail (NULL: none expected). */
static bool fails_exactly(PGconn *c, const char *sql, const char *sqlstate, const char *message,
                          const char *detail)
{
        PGresult *r = PQexec(c, sql);
        const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
        const char *det = PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL);
        bool good = PQresultStatus(r) == PGRES_FATAL_ERROR && st && strcmp(st, sqlstate) == 0 &&
                    msg && strcmp(msg, message) == 0 &&
                    (detail ? det && strcmp(det, detail) == 0 : !det);

        if (!good)
                fprintf(stderr, "\n    %s:\n      expected %s \"%s\" [%s]\n      got      %s \"%s\" [%s]",
                        sql, sqlstate, message, detail ? detail : "(none)", st ? st : "success",
                        msg ? msg : "", det ? det : "(none)");
        PQclear(r);
        return good;
}

/* sql fails with 23503 for a row of `table` whose key is missing from the referenced
 * table: PostgreSQL's message for constraint con, and this detail. */
static bool fails_child(PGconn *c, const char *sql, const char *table, const char *con,
                        const char *detail)
{
        char msg[256];

        snprintf(msg, sizeof(msg), "insert or update on table \"%s\" violates foreign key "
                 "constraint \"%s\"", table, con);
        return fails_exactly(c, sql, "23503", msg, detail);
}

/* sql fails with 23503 for a key of `table` still referenced from `child`. */
static bool fails_parent(PGconn *c, const char *sql, const char *table, const char *con,
                         const char *child, const char *detail)
{
        char msg[256];

        snprintf(msg, sizeof(msg), "update or delete on table \"%s\" violates foreign key "
                 "constraint \"%s\" on table \"%s\"", table, con, child);
        return fails_exactly(c, sql, "23503", msg, detail);
}

/* Drop p, c and c2 if there (what another case left). */
static bool keys_dropped(PGconn *c)
{
        return ok(c, "DROP TABLE IF EXISTS c, c2, p");
}

/* test_create()'s tables afresh, so that a case does not depend on the ones before it;
 * with rows, test_child()'s: p's keys 1 and 2, referenced from c and c2. */
static void keys_tables(PGconn *c, bool rows)
{
        CU_ASSERT_FATAL(keys_dropped(c));
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE p (id int PRIMARY KEY, u int UNIQUE, t text, b bigint UNIQUE)"));
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE c (a int REFERENCES p, b int)"));
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE c2 (a int, b int, FOREIGN KEY (a) REFERENCES p (u), "
                              "CONSTRAINT named FOREIGN KEY (b) REFERENCES p ON DELETE RESTRICT)"));
        if (!rows)
                return;
        CU_ASSERT_FATAL(ok(c, "INSERT INTO p VALUES (1, 10, 'one', 100), (2, 20, 'two', 200)"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO c VALUES (1, 1), (NULL, 2), (2, 4)"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO c2 VALUES (10, 1), (20, NULL), (NULL, NULL)"));
}

/* The messages below are PostgreSQL 15's for the same statements (checked against a
 * PostgreSQL 15 server), but for the 0A000 refusals, which are Coord's. */
static void test_create(void)
{
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(keys_dropped(c));
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE p (id int PRIMARY KEY, u int UNIQUE, t text, b bigint UNIQUE)"));
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE c (a int REFERENCES p, b int)"));
        CU_ASSERT(ok(c, "CREATE TABLE c2 (a int, b int, FOREIGN KEY (a) REFERENCES p (u), "
                        "CONSTRAINT named FOREIGN KEY (b) REFERENCES p ON DELETE RESTRICT)"));
        CU_ASSERT(ok(c, "CREATE VIEW pv AS SELECT id FROM p"));
        CU_ASSERT(fails_exactly(c, "CREATE TABLE x (a int REFERENCES nosuch)", "42P01",
                                "relation \"nosuch\" does not exist", NULL));
        CU_ASSERT(fails_exactly(c, "CREATE TABLE x (a int REFERENCES p (nosuch))", "42703",
                                "column \"nosuch\" referenced in foreign key constraint does not exist", NULL));
        CU_ASSERT(fails_exactly(c, "CREATE TABLE x (a int, FOREIGN KEY (nosuch) REFERENCES p)", "42703",
                                "column \"nosuch\" referenced in foreign key constraint does not exist", NULL));
        CU_ASSERT(fails_exactly(c, "CREATE TABLE x (a int REFERENCES p (t))", "42830",
                                "there is no unique constraint matching given keys for referenced "
                                "table \"p\"", NULL));
        CU_ASSERT(fails_exactly(c, "CREATE TABLE x (a int, b int, FOREIGN KEY (a, b) REFERENCES p (id, u))",
                                "42830", "there is no unique constraint matching given keys for "
                                "referenced table \"p\"", NULL));
        CU_ASSERT(fails_exactly(c, "CREATE TABLE x (a int, b int, FOREIGN KEY (a, b) REFERENCES p)",
                                "42830", "number of referencing and referenced columns for foreign "
                                "key disagree", NULL));
        CU_ASSERT(fails_exactly(c, "CREATE TABLE x (a text REFERENCES p)", "42804",
                                "foreign key constraint \"x_a_fkey\" cannot be implemented",
                                "Key columns \"a\" and \"id\" are of incompatible types: text and integer."));
        CU_ASSERT(fails_exactly(c, "CREATE TABLE x (a int REFERENCES pv)", "42809",
                                "referenced relation \"pv\" is not a table", NULL));
        CU_ASSERT(fails_exactly(c, "CREATE TABLE x (a int REFERENCES c)", "42704",
                                "there is no primary key for referenced table \"c\"", NULL));
        CU_ASSERT(fails_exactly(c, "CREATE TABLE x (a int CONSTRAINT k UNIQUE, b int CONSTRAINT k REFERENCES p)",
                                "42710", "constraint \"k\" for relation \"x\" already exists", NULL));
        /* What PostgreSQL accepts and Coord cannot enforce exactly. */
        CU_ASSERT(fails_with(c, "CREATE TABLE x (a bigint REFERENCES p)", "0A000"));
        CU_ASSERT(fails_with(c, "CREATE TABLE x (a int REFERENCES p ON DELETE CASCADE)", "0A000"));
        CU_ASSERT(fails_with(c, "CREATE TABLE x (a int REFERENCES p ON UPDATE SET NULL)", "0A000"));
        CU_ASSERT(fails_with(c, "CREATE TABLE x (a int REFERENCES p ON DELETE SET DEFAULT)", "0A000"));
        CU_ASSERT(fails_with(c, "CREATE TABLE x (a int REFERENCES p MATCH FULL)", "0A000"));
        CU_ASSERT(fails_with(c, "CREATE TABLE x (a int REFERENCES p DEFERRABLE)", "0A000"));
        CU_ASSERT(fails_with(c, "CREATE TABLE x (a int, FOREIGN KEY (a) REFERENCES p INITIALLY DEFERRED)",
                             "0A000"));
        CU_ASSERT(fails_with(c, "CREATE TABLE x (a int, FOREIGN KEY (a) REFERENCES p NOT VALID)", "0A000"));
        CU_ASSERT(fails_with(c, "CREATE TABLE x (a int PRIMARY KEY, b int REFERENCES x)", "0A000"));
        CU_ASSERT(fails_with(c, "ALTER TABLE c ADD FOREIGN KEY (b) REFERENCES p", "0A000"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM coord_objects WHERE name = 'x'", "0"));
        CU_ASSERT(ok(c, "DROP VIEW pv"));
        PQfinish(c);
}

static void test_child(void)
{
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        keys_tables(c, false);
        CU_ASSERT(fails_child(c, "INSERT INTO c VALUES (5, 1)", "c", "c_a_fkey",
                              "Key (a)=(5) is not present in table \"p\"."));
        CU_ASSERT(ok(c, "INSERT INTO p VALUES (1, 10, 'one', 100), (2, 20, 'two', 200)"));
        /* the statement fails whole: the good row does not go in either */
        CU_ASSERT(fails_with(c, "INSERT INTO c VALUES (1, 1), (5, 5)", "23503"));
        CU_ASSERT(tag_is(c, "INSERT INTO c VALUES (1, 1), (NULL, 2), (1, 3)", "INSERT 0 3"));
        CU_ASSERT(rows_are(c, "SELECT a, b FROM c", "1|1;1|3;NULL|2"));
        CU_ASSERT(fails_child(c, "UPDATE c SET a = 3 WHERE b = 1", "c", "c_a_fkey",
                              "Key (a)=(3) is not present in table \"p\"."));
        CU_ASSERT(ok(c, "UPDATE c SET a = 2 WHERE b = 3"));
        CU_ASSERT(ok(c, "UPDATE c SET b = 4 WHERE b = 3"));     /* its key stays */
        /* c2: a references p (u), named: b references p (id) */
        CU_ASSERT(fails_child(c, "INSERT INTO c2 VALUES (10, 9)", "c2", "named",
                              "Key (b)=(9) is not present in table \"p\"."));
        CU_ASSERT(fails_child(c, "INSERT INTO c2 VALUES (1, 1)", "c2", "c2_a_fkey",
                              "Key (a)=(1) is not present in table \"p\"."));
        CU_ASSERT(ok(c, "INSERT INTO c2 VALUES (10, 1), (20, NULL), (NULL, NULL)"));
        /* Two columns, MATCH SIMPLE: a row with one NULL is not checked. */
        CU_ASSERT(ok(c, "CREATE TABLE mp (x int, y text, PRIMARY KEY (x, y))"));
        CU_ASSERT(ok(c, "CREATE TABLE mc (q text, r int, FOREIGN KEY (r, q) REFERENCES mp (x, y))"));
        CU_ASSERT(ok(c, "INSERT INTO mp VALUES (1, 'a')"));
        CU_ASSERT(ok(c, "INSERT INTO mc VALUES ('a', 1), (NULL, 7), ('zz', NULL)"));
        CU_ASSERT(fails_child(c, "INSERT INTO mc VALUES ('b', 1)", "mc", "mc_r_q_fkey",
                              "Key (r, q)=(1, b) is not present in table \"mp\"."));
        CU_ASSERT(fails_parent(c, "DELETE FROM mp", "mp", "mc_r_q_fkey", "mc",
                              "Key (x, y)=(1, a) is still referenced from table \"mc\"."));
        CU_ASSERT(ok(c, "DROP TABLE mc, mp"));
        PQfinish(c);
}

static void test_parent(void)
{
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        keys_tables(c, true);
        CU_ASSERT(fails_parent(c, "DELETE FROM p WHERE id = 1", "p", "c_a_fkey", "c",
                              "Key (id)=(1) is still referenced from table \"c\"."));
        CU_ASSERT(fails_parent(c, "UPDATE p SET id = 3 WHERE id = 1", "p", "c_a_fkey", "c",
                              "Key (id)=(1) is still referenced from table \"c\"."));
        CU_ASSERT(fails_parent(c, "UPDATE p SET u = 11 WHERE id = 1", "p", "c2_a_fkey", "c2",
                              "Key (u)=(10) is still referenced from table \"c2\"."));
        CU_ASSERT(ok(c, "UPDATE p SET t = 'uno' WHERE id = 1"));        /* keys stay */
        CU_ASSERT(rows_are(c, "SELECT id, u, t FROM p", "1|10|uno;2|20|two"));
        CU_ASSERT(ok(c, "INSERT INTO p VALUES (3, 30, 'three', 300)"));
        CU_ASSERT(ok(c, "DELETE FROM p WHERE id = 3"));                  /* unreferenced */
        /* children first, then the parent */
        CU_ASSERT(ok(c, "DELETE FROM c WHERE a = 2"));
        CU_ASSERT(ok(c, "DELETE FROM c2 WHERE a = 20"));
        CU_ASSERT(ok(c, "DELETE FROM p WHERE id = 2"));
        CU_ASSERT(rows_are(c, "SELECT id FROM p", "1"));
        PQfinish(c);
}

static void test_blocks(void)
{
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        keys_tables(c, true);
        /* parent then child in one block: the block is checked at COMMIT, as a whole */
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT(ok(c, "INSERT INTO p VALUES (7, 70, 'seven', 700)"));
        CU_ASSERT(ok(c, "INSERT INTO c VALUES (7, 70)"));
        CU_ASSERT(ok(c, "COMMIT"));
        CU_ASSERT(rows_are(c, "SELECT b FROM c WHERE a = 7", "70"));
        /* a missing parent fails the block: none of it is written */
        CU_ASSERT(ok(c, "BEGIN"));
        CU_ASSERT(ok(c, "INSERT INTO p VALUES (8, 80, 'eight', 800)"));
        CU_ASSERT(ok(c, "INSERT INTO c VALUES (9, 90)"));
        CU_ASSERT(fails_child(c, "COMMIT", "c", "c_a_fkey",
                              "Key (a)=(9) is not present in table \"p\"."));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM p WHERE id = 8", "0"));
        CU_ASSERT(ok(c, "DELETE FROM c WHERE a = 7"));
        CU_ASSERT(ok(c, "DELETE FROM p WHERE id = 7"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM p WHERE id = 7", "0"));
        PQfinish(c);
}

/* One client deletes parent k while another inserts a child of k, both sent at once;
 * the controller applies them one after the other, so exactly one succeeds. */
static void test_race(void)
{
        enum { ROUNDS = 20 };
        PGconn *c = db(), *del = db(), *ins = db();
        int both = 0, none = 0, dels = 0;
        char qd[128], qi[128];

        CU_ASSERT_FATAL(c && del && ins);
        keys_tables(c, true);
        for (int k = 100; k < 100 + ROUNDS; k++) {
                PGresult *r;
                bool del_ok = false, ins_ok = false;

                CU_ASSERT(okf(c, "INSERT INTO p VALUES (%d, %d, 'r', %d)", k, k, k * 1000));
                snprintf(qd, sizeof(qd), "DELETE FROM p WHERE id = %d", k);
                snprintf(qi, sizeof(qi), "INSERT INTO c VALUES (%d, %d)", k, k);
                /* sent in either order: which one the adapter groups first varies */
                CU_ASSERT(PQsendQuery(k % 2 ? ins : del, k % 2 ? qi : qd) == 1);
                CU_ASSERT(PQsendQuery(k % 2 ? del : ins, k % 2 ? qd : qi) == 1);
                while ((r = PQgetResult(del))) {
                        del_ok |= PQresultStatus(r) == PGRES_COMMAND_OK &&
                                  strcmp(PQcmdTuples(r), "1") == 0;
                        PQclear(r);
                }
                while ((r = PQgetResult(ins))) {
                        ins_ok |= PQresultStatus(r) == PGRES_COMMAND_OK;
                        PQclear(r);
                }
                both += del_ok && ins_ok;
                none += !del_ok && !ins_ok;
                dels += del_ok;
        }
        CU_ASSERT_EQUAL(both, 0);
        CU_ASSERT_EQUAL(none, 0);
        printf("\n    %d of %d rounds: the delete first", dels, ROUNDS);
        /* every child has its parent */
        CU_ASSERT_EQUAL(q_u64(c, "SELECT count(*) FROM c WHERE a >= 100"),
                        q_u64(c, "SELECT count(*) FROM c, p WHERE c.a = p.id AND c.a >= 100"));
        CU_ASSERT(ok(c, "DELETE FROM c WHERE a >= 100"));
        CU_ASSERT(ok(c, "DELETE FROM p WHERE id >= 100"));
        PQfinish(c);
        PQfinish(del);
        PQfinish(ins);
}

static void still_enforced(const char *when)
{
        PGconn *c = NULL;

        for (int w = 0; w < 100 && !(c = db()); w++)
                sleep_ms(100);
        CU_ASSERT_FATAL(c != NULL);
        printf("\n    %s", when);
        CU_ASSERT(fails_child(c, "INSERT INTO c VALUES (42, 0)", "c", "c_a_fkey",
                              "Key (a)=(42) is not present in table \"p\"."));
        CU_ASSERT(fails_parent(c, "DELETE FROM p WHERE id = 1", "p", "c_a_fkey", "c",
                              "Key (id)=(1) is still referenced from table \"c\"."));
        CU_ASSERT(ok(c, "INSERT INTO c VALUES (NULL, 0)"));
        CU_ASSERT(ok(c, "DELETE FROM c WHERE b = 0"));
        PQfinish(c);
}

static void test_restarts(void)
{
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        keys_tables(c, true);
        PQfinish(c);
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_ADAPTER));
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        still_enforced("adapter killed and restarted");
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_CONTROLLER));
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        still_enforced("controller killed and restarted");
        CU_ASSERT_EQUAL(t_sh("%s check >/dev/null", coord_cmd), 0);
}

static void test_psql_describe(void)
{
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        keys_tables(c, false);
        PQfinish(c);
        CU_ASSERT_EQUAL(t_sh("psql -X -h 127.0.0.1 -p %d -U coord -d coord -c '\\d c' 2>&1 | "
                             "grep -q 'Table \"public.c\"'", pg_port), 0);
        CU_ASSERT_EQUAL(t_sh("psql -X -h 127.0.0.1 -p %d -U coord -d coord -c '\\d p' 2>&1 | "
                             "grep -q 'Table \"public.p\"'", pg_port), 0);
}

static void test_drop(void)
{
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        keys_tables(c, true);
        CU_ASSERT(fails_exactly(c, "DROP TABLE p", "2BP01",
                                "cannot drop table p because other objects depend on it",
                                "constraint c_a_fkey on table c depends on table p"));
        CU_ASSERT(fails_with(c, "DROP TABLE p CASCADE", "0A000"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM coord_objects WHERE name IN ('p', 'c', 'c2')", "3"));
        CU_ASSERT(ok(c, "DROP TABLE c"));
        CU_ASSERT(fails_exactly(c, "DROP TABLE p", "2BP01",
                                "cannot drop table p because other objects depend on it",
                                "constraint c2_a_fkey on table c2 depends on table p"));
        CU_ASSERT(ok(c, "DROP TABLE p, c2"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM coord_objects WHERE name IN ('p', 'c', 'c2')", "0"));
        CU_ASSERT_EQUAL(t_sh("%s check >/dev/null", coord_cmd), 0);
        PQfinish(c);
}

static void test_down(void)
{
        CU_ASSERT_EQUAL(t_sh("%s down >/dev/null", coord_cmd), 0);
}

static const struct t_case cases[] = {
        { "up", test_up },
        { "foreign keys: CREATE TABLE, PostgreSQL's errors, 0A000 refusals", test_create },
        { "foreign keys: the child side, NULLs, two columns", test_child },
        { "foreign keys: the parent side", test_parent },
        { "foreign keys: transaction blocks, checked at COMMIT", test_blocks },
        { "foreign keys: delete of a parent racing an insert of its child", test_race },
        { "foreign keys: kill -9 of the adapter, then of the controller", test_restarts },
        { "foreign keys: psql's \\d", test_psql_describe },
        { "foreign keys: DROP", test_drop },
        { "down", test_down },
        { NULL, NULL },
};

int main(void)
{
        return itest_main("keys", "k", (const struct t_suite[]){ { "sql", cases }, { NULL, NULL } });
}
