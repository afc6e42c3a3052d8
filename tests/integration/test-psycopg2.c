/* test-psycopg2 -- psycopg2 (python3-psycopg2), the common Python driver, in its default
 * mode: not autocommit, so every statement runs inside the BEGIN it sends first, and
 * commit() sends COMMIT.  A SELECT, an INSERT in the same transaction's kind, and a
 * metadata read of pg_catalog as drivers do.  Skipped (77) where psycopg2 is missing.
 */
#include "itest.h"

/* The Python that has psycopg2: python3 on PATH, or the system's (python3-psycopg2
 * installs for /usr/bin/python3; PATH may lead to another one). */
static const char *python;

static void test_up(void)
{
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

static void test_default_mode(void)
{
        PGconn *c = db();

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(ok(c, "CREATE TABLE pyt (a int, b text)"));
        CU_ASSERT(ok(c, "INSERT INTO pyt VALUES (1, 'one'), (2, 'two')"));
        PQfinish(c);
        CU_ASSERT_EQUAL(t_sh("%s - <<'EOF'\n"
                             "import psycopg2, sys\n"
                             "c = psycopg2.connect(host='127.0.0.1', port=%d, user='coord', dbname='coord')\n"
                             "assert not c.autocommit\n"
                             "cur = c.cursor()\n"
                             "cur.execute('SELECT a, b FROM pyt ORDER BY a')\n"
                             "rows = cur.fetchall()\n"
                             "assert rows == [(1, 'one'), (2, 'two')], rows\n"
                             "cur.execute('SELECT %%s::int + 1', (41,))\n"
                             "assert cur.fetchone() == (42,)\n"
                             "c.commit()\n"
                             "cur.execute(\"SELECT c.relname FROM pg_catalog.pg_class c \"\n"
                             "            \"JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \"\n"
                             "            \"WHERE n.nspname = 'public' AND c.relkind = 'r'\")\n"
                             "assert cur.fetchall() == [('pyt',)]\n"
                             "c.rollback()\n"
                             "c.close()\n"
                             "EOF", python, pg_port), 0);
}

int main(void)
{
        static const struct t_case cases[] = {
                { "up", test_up },
                { "default mode", test_default_mode },
                { NULL, NULL },
        };

        static const char *const pythons[] = { "python3", "/usr/bin/python3" };

        for (size_t i = 0; !python && i < ELEMENTSOF(pythons); i++)
                if (t_sh("%s -c 'import psycopg2' >/dev/null 2>&1", pythons[i]) == 0)
                        python = pythons[i];
        if (!python) {
                fprintf(stderr, "no psycopg2 (apt-get install python3-psycopg2): skipped\n");
                return T_EXIT_SKIP;
        }
        return itest_main("psycopg2", "y", (const struct t_suite[]){ { "psycopg2", cases }, { NULL, NULL } });
}
