/* test-psql -- psql 15's list commands (\dt \dv \dm \di \d \dn, \dt PATTERN) against the
 * real daemons: they read the pg_catalog relations (adapter/adapter-pgcatalog.c), so
 * each must list exactly the objects of its kind, and an object disappears once it is
 * dropped.  \l lists the one database (its access privileges, a text[], NULL).  \d NAME
 * needs regtype and more: it must fail with 0A000 (psql prints the message), never with
 * a wrong answer.  The pg_catalog relations by SQL
 * too: a user object named like one keeps its name, pg_catalog.X still names the
 * catalog's.  numeric: PostgreSQL 15's text and binary forms, numeric(p, s) columns, \d.
 * Skipped (77) without psql on PATH.
 */
#include <stdio.h>
#include <string.h>

#include "itest.h"

/* psql -X -c CMD's stdout and stderr, or NULL. */
static char *psql(const char *cmd)
{
        char *line = NULL, *out = NULL;
        size_t cap = 0, n = 0;
        FILE *p;

        if (asprintf(&line, "psql -X -h 127.0.0.1 -p %d -U coord -d coord -c '%s' 2>&1",
                     pg_port, cmd) < 0)
                return NULL;
        p = popen(line, "r");
        free(line);
        if (!p)
                return NULL;
        for (;;) {
                char buf[4096];
                size_t k = fread(buf, 1, sizeof(buf), p);
                char *q;

                if (k == 0)
                        break;
                q = realloc(out, cap = n + k + 1);
                if (!q)
                        break;
                out = q;
                memcpy(out + n, buf, k);
                n += k;
                out[n] = '\0';
        }
        pclose(p);
        return out ? out : strdup("");
}

/* Does psql's output for cmd hold every line of `want` (";"-separated), and none of
 * `absent`'s?  Prints the output when not. */
static bool psql_shows(const char *cmd, const char *want, const char *absent)
{
        char *out = psql(cmd), *list, *save = NULL;
        bool good = out != NULL;

        for (int pass = 0; good && pass < 2; pass++) {
                const char *src = pass ? absent : want;

                if (!src)
                        continue;
                list = strdup(src);
                for (char *w = strtok_r(list, ";", &save); good && w; w = strtok_r(NULL, ";", &save))
                        if ((strstr(out, w) != NULL) == (pass == 1)) {
                                fprintf(stderr, "\n    %s: %s \"%s\" in:\n%s", cmd,
                                        pass ? "unexpected" : "no", w, out);
                                good = false;
                        }
                free(list);
        }
        free(out);
        return good;
}

static void test_up(void)
{
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

/* The relations the listings show, afresh (whatever the case before left): orders,
 * big_orders, order_count, and scratch and orders_by_item unless test_drop() dropped
 * them.  So that each case runs alone and in any order. */
static void psql_objects(bool dropped)
{
        PGconn *c = db();

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_FATAL(ok(c, "DROP TABLE IF EXISTS orders, scratch CASCADE"));
        CU_ASSERT(ok(c, "CREATE TABLE orders (id bigint NOT NULL, item text)"));
        if (!dropped)
                CU_ASSERT(ok(c, "CREATE TABLE scratch (x int)"));
        CU_ASSERT(ok(c, "CREATE VIEW big_orders AS SELECT id FROM orders WHERE id > 10"));
        CU_ASSERT(ok(c, "CREATE MATERIALIZED VIEW order_count AS SELECT count(*) AS n FROM orders"));
        if (!dropped)
                CU_ASSERT(ok(c, "CREATE INDEX orders_by_item ON orders (item)"));
        PQfinish(c);
}

static void test_objects(void)
{
        psql_objects(false);
}

/* psql's header line, a row, another row: "| name | type |" cells as psql aligns them. */
static void test_list_commands(void)
{
        psql_objects(false);
        CU_ASSERT(psql_shows("\\dt", "List of relations; public | orders  | table | coord;"
                                     " public | scratch | table | coord;(2 rows)",
                             "big_orders;order_count;orders_by_item;coord_objects"));
        CU_ASSERT(psql_shows("\\dv", " public | big_orders | view | coord;(1 row)",
                             "| orders ;order_count"));
        CU_ASSERT(psql_shows("\\dm", " public | order_count | materialized view | coord;(1 row)",
                             "big_orders"));
        CU_ASSERT(psql_shows("\\di", " public | orders_by_item | index | coord | orders;(1 row)",
                             "scratch"));
        CU_ASSERT(psql_shows("\\d", " public | big_orders  | view              | coord;"
                                    " public | order_count | materialized view | coord;"
                                    " public | orders      | table             | coord;"
                                    " public | scratch     | table             | coord;(4 rows)",
                             "orders_by_item"));
        CU_ASSERT(psql_shows("\\dn", "List of schemas; public | coord;(1 row)",
                             "pg_catalog;information_schema"));
        /* A pattern: OPERATOR(pg_catalog.~) '^(ord.*)$' COLLATE pg_catalog.default. */
        CU_ASSERT(psql_shows("\\dt ord*", " public | orders | table | coord;(1 row)", "scratch"));
        CU_ASSERT(psql_shows("\\dt nomatch*", "Did not find any relation named \"nomatch*\".",
                             NULL));
        CU_ASSERT(psql_shows("\\l", "List of databases; coord | coord | UTF8     | C       | C     |"
                                     "            | libc            | ;(1 row)", "ERROR"));
}

/* \d NAME, as PostgreSQL 15's psql prints it for the same DDL (docs/sql.md, pg_catalog);
 * the PRIMARY KEY has no index in Coord, so no "described_pkey" line. */
static void test_describe(void)
{
        PGconn *c;

        psql_objects(false);
        c = db();
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(ok(c, "CREATE TABLE described (a int PRIMARY KEY, b text NOT NULL DEFAULT 'x', "
                        "c bigint DEFAULT -5, d boolean DEFAULT true, e varchar(5) DEFAULT 'hi', "
                        "f char(4) DEFAULT 'ab', g character)"));
        CU_ASSERT(ok(c, "CREATE INDEX described_c ON described (c)"));
        CU_ASSERT(psql_shows("\\d described",
                             "                            Table \"public.described\";"
                             " Column |         Type         | Collation | Nullable |         Default         ;"
                             "--------+----------------------+-----------+----------+-------------------------;"
                             " a      | integer              |           | not null | ;"
                             " b      | text                 |           | not null | 'x'::text;"
                             " c      | bigint               |           |          | '-5'::integer;"
                             " d      | boolean              |           |          | true;"
                             " e      | character varying(5) |           |          | 'hi'::character varying;"
                             " f      | character(4)         |           |          | 'ab'::bpchar;"
                             " g      | character(1)         |           |          | ;"
                             "Indexes:;"
                             "    \"described_c\" btree (c)",
                             "ERROR;described_pkey"));
        CU_ASSERT(psql_shows("\\d orders",
                             "              Table \"public.orders\";"
                             " id     | bigint |           | not null | ;"
                             " item   | text   |           |          | ;"
                             "Indexes:;    \"orders_by_item\" btree (item)",
                             "ERROR"));
        CU_ASSERT(psql_shows("\\d big_orders",
                             "             View \"public.big_orders\";"
                             " Column |  Type  | Collation | Nullable | Default ;"
                             " id     | bigint |           |          | ",
                             "ERROR;Indexes"));
        CU_ASSERT(psql_shows("\\d order_count",
                             "      Materialized view \"public.order_count\";"
                             " Column |  Type  | Collation | Nullable | Default ;"
                             " n      | bigint |           |          | ",
                             "ERROR;Indexes"));
        CU_ASSERT(psql_shows("\\d orders_by_item",
                             "   Index \"public.orders_by_item\";"
                             " Column | Type | Key? | Definition ;"
                             " item   | text | yes  | item;"
                             "btree, for table \"public.orders\"",
                             "ERROR"));
        CU_ASSERT(psql_shows("\\d nosuch", "Did not find any relation named \"nosuch\".", NULL));
        CU_ASSERT(ok(c, "DROP INDEX described_c"));
        CU_ASSERT(ok(c, "DROP TABLE described"));
        PQfinish(c);
}

static void test_drop(void)
{
        PGconn *c;

        psql_objects(false);
        c = db();
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(ok(c, "DROP TABLE scratch"));
        CU_ASSERT(ok(c, "DROP INDEX orders_by_item"));
        CU_ASSERT(psql_shows("\\dt", " public | orders | table | coord;(1 row)", "scratch"));
        CU_ASSERT(psql_shows("\\di", "Did not find any relations.", "orders_by_item"));
        CU_ASSERT(psql_shows("\\d", "(3 rows)", "scratch"));
        PQfinish(c);
}

/* The same relations through SQL, as drivers read them. */
static void test_sql(void)
{
        PGconn *c;

        psql_objects(true);
        c = db();
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(rows_are(c, "SELECT c.relname, c.relkind, n.nspname FROM pg_catalog.pg_class c "
                              "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
                              "WHERE n.nspname = 'public'",
                           "big_orders|v|public;order_count|m|public;orders|r|public"));
        CU_ASSERT(rows_are(c, "SELECT a.attname, t.typname, a.attnum, a.attnotnull "
                              "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                              "JOIN pg_type t ON t.oid = a.atttypid WHERE c.relname = 'orders'",
                           "id|int8|1|t;item|text|2|f"));
        CU_ASSERT(rows_are(c, "SELECT format_type(1042, -1), format_type(1042, NULL), format_type(1042, 8)",
                           "bpchar|character|character(4)"));
        CU_ASSERT(rows_are(c, "SELECT table_name, table_type FROM information_schema.tables "
                              "WHERE table_schema = 'public'",
                           "big_orders|VIEW;orders|BASE TABLE"));
        CU_ASSERT(rows_are(c, "SELECT column_name, data_type, is_nullable FROM "
                              "information_schema.columns WHERE table_name = 'orders'",
                           "id|bigint|NO;item|text|YES"));
        CU_ASSERT(rows_are(c, "SELECT datname, pg_encoding_to_char(encoding) FROM pg_database",
                           "coord|UTF8"));
        CU_ASSERT(rows_are(c, "SELECT relname FROM pg_class WHERE relname ~ '^ord' AND "
                              "relname !~* 'COUNT'",
                           "orders"));
        /* A user object keeps a pg_catalog relation's name; pg_catalog.X is the catalog's. */
        CU_ASSERT(ok(c, "CREATE TABLE pg_user (x int)"));
        CU_ASSERT(ok(c, "INSERT INTO pg_user VALUES (7)"));
        CU_ASSERT(rows_are(c, "SELECT x FROM pg_user", "7"));
        CU_ASSERT(rows_are(c, "SELECT usename FROM pg_catalog.pg_user", "coord"));
        CU_ASSERT(ok(c, "DROP TABLE pg_user"));
        CU_ASSERT(fails_with(c, "CREATE VIEW pv AS SELECT relname FROM pg_class", "0A000"));
        /* Correlated conjuncts other than keys (as PostgreSQL 15 answers). */
        CU_ASSERT(ok(c, "CREATE TABLE cp (k int, flag boolean)"));
        CU_ASSERT(ok(c, "CREATE TABLE cq (k int, v int)"));
        CU_ASSERT(ok(c, "INSERT INTO cp VALUES (1, true), (1, false), (2, true), (3, NULL)"));
        CU_ASSERT(ok(c, "INSERT INTO cq VALUES (1, 10), (2, 3), (2, 7)"));
        CU_ASSERT(rows_are(c, "SELECT k, (SELECT count(*) FROM cq WHERE cq.k = cp.k AND cp.flag), "
                              "EXISTS (SELECT 1 FROM cq WHERE cq.k = cp.k AND cp.k <> cq.v), "
                              "coalesce((SELECT max(v) FROM cq WHERE cq.k = cp.k AND cq.v > cp.k), 0) "
                              "FROM cp ORDER BY k, flag",
                           "1|0|t|10;1|1|t|10;2|2|t|7;3|0|f|0"));
        /* An OR over both: planned over the subquery's domain (adapter-sql-correlate.c). */
        CU_ASSERT(rows_are(c, "SELECT k, (SELECT max(v) FROM cq WHERE cq.k = cp.k AND "
                              "(cq.v > 5 OR cp.flag)) FROM cp ORDER BY k, flag",
                           "1|10;1|10;2|7;3|NULL"));
        CU_ASSERT(ok(c, "DROP TABLE cp"));
        CU_ASSERT(ok(c, "DROP TABLE cq"));
        CU_ASSERT(fails_with(c, "SELECT 'a' ~ '\\d'", "0A000"));
        CU_ASSERT(fails_with(c, "SELECT 'a' ~ '('", "2201B"));
        PQfinish(c);
}

/* One value of `sql` in the binary format, as hex ("0002..."), or NULL. */
static char *binary_hex(PGconn *c, const char *sql, int nparams, const Oid *types,
                        const char *const *vals, const int *lens, const int *formats)
{
        PGresult *r = PQexecParams(c, sql, nparams, types, vals, lens, formats, 1);
        char *hex = NULL;

        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)) {
                int n = PQgetlength(r, 0, 0);
                const unsigned char *v = (const unsigned char *)PQgetvalue(r, 0, 0);

                hex = calloc(1, 2 * (size_t)n + 1);
                for (int i = 0; hex && i < n; i++)
                        sprintf(hex + 2 * i, "%02x", v[i]);
        } else
                fprintf(stderr, "\n    %s -> %s", sql, PQresultErrorMessage(r));
        PQclear(r);
        return hex;
}

static bool binary_is(PGconn *c, const char *sql, const char *want)
{
        char *got = binary_hex(c, sql, 0, NULL, NULL, NULL, NULL);
        bool good = got && strcmp(got, want) == 0;

        if (!good)
                fprintf(stderr, "\n    %s: expected %s, got %s", sql, want, got ? got : "(error)");
        free(got);
        return good;
}

/* numeric (row.h "Numeric"): PostgreSQL 15's text and binary forms (numeric_send() bytes
 * taken from PostgreSQL 15), numeric(p, s) columns, arithmetic scales, aggregates, \d. */
static void test_numeric(void)
{
        PGconn *c = db();

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(rows_are(c, "SELECT 1.0/3, 10/4.0, 1.5e-3, .5, -0.00, 99999999999999999999",
                           "0.33333333333333333333|2.5000000000000000|0.0015|0.5|0.00|"
                           "99999999999999999999"));
        CU_ASSERT(rows_are(c, "SELECT avg(x), sum(x) FROM (VALUES (1), (2)) v(x)",
                           "1.5000000000000000|3"));
        CU_ASSERT(rows_are(c, "SELECT avg(x) FROM (VALUES (9223372036854775807::bigint), "
                              "(9223372036854775807)) v(x)", "9223372036854775807"));
        CU_ASSERT(rows_are(c, "SELECT round(2.5), round(-2.5), round(1234.5678, -2), trunc(-2.99, 1), "
                              "ceil(-0.5), floor(-0.5), 2.5::int, (-2.5)::bigint, 7 % 2.5, abs(-1.50)",
                           "3|-3|1200|-2.9|0|-1|3|-3|2.0|1.50"));
        CU_ASSERT(fails_with(c, "SELECT 1/0.0", "22012"));
        CU_ASSERT(fails_with(c, "SELECT 99999999999999999999999999999999999999 + 1", "22003"));
        CU_ASSERT(fails_with(c, "SELECT 'x'::numeric", "22P02"));
        CU_ASSERT(fails_with(c, "SELECT 'NaN'::numeric", "0A000"));
        CU_ASSERT(fails_with(c, "SELECT 2147483647.5::int", "22003"));
        CU_ASSERT(ok(c, "CREATE TABLE money (id int, price numeric(10,2) NOT NULL, qty numeric)"));
        CU_ASSERT(ok(c, "INSERT INTO money VALUES (1, 9.999, 2), (2, 0.004, 3.5), (3, -1.5, 1.50)"));
        CU_ASSERT(fails_detail(c, "INSERT INTO money VALUES (4, 123456789, 1)", "22003",
                               "A field with precision 10, scale 2 must round to an absolute "
                               "value less than 10^8."));
        CU_ASSERT(ok(c, "UPDATE money SET qty = qty * 2 WHERE id = 3"));
        CU_ASSERT(rows_are(c, "SELECT id, price, qty, price * qty, price + qty, price::text FROM money",
                           "1|10.00|2|20.00|12.00|10.00;2|0.00|3.5|0.000|3.50|0.00;"
                           "3|-1.50|3.00|-4.5000|1.50|-1.50"));
        CU_ASSERT(rows_are(c, "SELECT sum(price), avg(price), min(qty), max(qty), count(qty) FROM money",
                           "8.50|2.8333333333333333|2|3.5|3"));
        CU_ASSERT(rows_are(c, "SELECT id FROM money WHERE qty > 2.5 AND price >= 0", "2"));
        CU_ASSERT(rows_are(c, "SELECT column_name, data_type, numeric_precision, "
                              "numeric_precision_radix, numeric_scale FROM information_schema.columns "
                              "WHERE table_name = 'money' AND column_name <> 'id'",
                           "price|numeric|10|10|2;qty|numeric|NULL|10|NULL"));
        CU_ASSERT(rows_are(c, "SELECT format_type(1700, 655366), format_type(1700, -1), "
                              "format_type(1231, -1)",
                           "numeric(10,2)|numeric|numeric[]"));
        CU_ASSERT(psql_shows("\\d money",
                             " id     | integer       |           |          | ;"
                             " price  | numeric(10,2) |           | not null | ;"
                             " qty    | numeric       |           |          | ",
                             "ERROR"));
        /* The binary format: numeric_send()'s bytes, and numeric_recv() of them. */
        CU_ASSERT(binary_is(c, "SELECT 13.50", "0002000000000002000d1388"));
        CU_ASSERT(binary_is(c, "SELECT -0.0015", "0001ffff40000004000f"));
        CU_ASSERT(binary_is(c, "SELECT 123456789.01", "0004000200000002000109291a850064"));
        CU_ASSERT(binary_is(c, "SELECT 0.000", "0000000000000003"));
        CU_ASSERT(binary_is(c, "SELECT 10000::numeric", "00010001000000000001"));
        CU_ASSERT(binary_is(c, "SELECT 0.5", "0001ffff000000011388"));
        {
                static const char v[] = { 0, 2, 0, 0, 0, 0, 0, 2, 0, 0x0d, 0x13, (char)0x88 };
                const char *vals[] = { v };
                const int lens[] = { sizeof(v) }, formats[] = { 1 };
                const Oid types[] = { 1700 };
                PGresult *r = PQexecParams(c, "SELECT $1::numeric + 1", 1, types, vals, lens,
                                           formats, 0);

                CU_ASSERT(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
                          strcmp(PQgetvalue(r, 0, 0), "14.50") == 0);
                PQclear(r);
        }
        CU_ASSERT(ok(c, "DROP TABLE money"));
        PQfinish(c);
}

int main(void)
{
        static const struct t_case cases[] = {
                { "up", test_up },
                { "objects", test_objects },
                { "list commands", test_list_commands },
                { "describe", test_describe },
                { "drop", test_drop },
                { "sql", test_sql },
                { "numeric", test_numeric },
                { NULL, NULL },
        };

        if (t_sh("psql --version >/dev/null 2>&1") != 0) {
                fprintf(stderr, "no psql on PATH: skipped\n");
                return T_EXIT_SKIP;
        }
        return itest_main("psql", "q", (const struct t_suite[]){ { "psql", cases }, { NULL, NULL } });
}
