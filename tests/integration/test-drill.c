/* test-drill -- the recovery drill (issue 30, tools/coord drill, tools/coord-drill.c)
 * as CI runs it.
 *
 *   short_fresh   `tools/coord drill --fresh --kills 25 --seed 30`: a fresh instance of
 *                 its own, 25 kill -9s over the three daemons under INSERT, DDL,
 *                 materialized-view and index load, a check after every restart; the verdict
 *                 must be PASS (exit 0: nothing acknowledged lost, no violation).
 *   detects_loss  the drill must be able to fail: on this test's instance, with
 *                 --test-expect-loss it deletes one acknowledged row through SQL after
 *                 its first restart, and must report exactly that row lost, the verdict
 *                 FAIL and exit 1; its tables stay for the operator to look at.
 *
 * The drill's output goes to <home>/<case>.out; its last lines are printed.
 */
#include "itest.h"

/* Run `tools/coord drill ARGS` with the output in <home>/<name>.out; its exit status. */
static int drill(const char *name, const char *args)
{
        int r = t_sh("%s drill %s >%s/%s.out 2>&1", coord_cmd, args, home, name);

        printf("\n");
        (void)!t_sh("grep -E '^drill: (VIOLATION|kills|restart to|INSERTs|acknowledged|DDL|checks|sink|verdict)' %s/%s.out "
                    "| sed 's/^/    /'", home, name);
        return r;
}

static bool out_has(const char *name, const char *text)
{
        bool has = t_sh("grep -qF '%s' %s/%s.out", text, home, name) == 0;

        if (!has)
                fprintf(stderr, "\n    %s.out lacks [%s]", name, text);
        return has;
}

static void test_short_fresh(void)
{
        CU_ASSERT_EQUAL(drill("short", "--fresh --kills 25 --seed 30"), 0);
        CU_ASSERT(out_has("short", "drill: kills 25 of 25 in "));
        CU_ASSERT(out_has("short", "acknowledged writes lost 0, duplicates 0, half statements 0"));
        CU_ASSERT(out_has("short", "verdict PASS: lost 0, violations 0"));
        /* the sink and the source workloads ran and were checked at every restart */
        CU_ASSERT(t_sh("grep -qE '^drill: sink checks 2[0-9] \\([1-9][0-9]* lines read\\), violations 0; "
                       "source checks 2[0-9] \\([1-9][0-9]* values\\), violations 0$' %s/short.out", home) == 0);
}

static void test_detects_loss(void)
{
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        CU_ASSERT_EQUAL(drill("loss", "--kills 2 --seed 30 --daemons lifecycle --test-expect-loss"), 1);
        CU_ASSERT(out_has("loss", "drill: test: deleted acknowledged row"));
        CU_ASSERT(out_has("loss", "acknowledged writes lost 1,"));
        CU_ASSERT(out_has("loss", "verdict FAIL"));
        /* A failed drill leaves its tables and views for the operator to look at. */
        {
                PGconn *c = db();
                CU_ASSERT_FATAL(c != NULL);
                CU_ASSERT(scalar_u64(c, "SELECT count(*) FROM coord_objects WHERE name LIKE 'drill_%'") >= 3);
                PQfinish(c);
        }
}

static const struct t_case cases[] = {
        { "short_fresh", test_short_fresh },
        { "detects_loss", test_detects_loss },
        { NULL, NULL },
};

int main(void)
{
        return itest_main("drill", "dr", (const struct t_suite[]){ { "drill", cases }, { NULL, NULL } });
}
