/* test-demo -- the restart demonstration (tools/demo, docs/demo.md) as a test: a fresh
 * instance with a pending refresh, a view over a built-in, an eliminated input, a
 * counter source, two sinks; kill -9 of each daemon in turn; the script's checks after
 * each restart (protection, resume through the remap, each sink row once, the cutoff,
 * the refresh at its time, coordctl check).  It exits non-zero when one fails. */
#include "itest.h"

static void test_demo(void)
{
        CU_ASSERT_EQUAL(t_sh("DEMO_HOME=%s/demo COORD_BUILD=%s COORD_PG_PORT=%d %s/tools/demo", home, build_dir,
                             pg_port, top_dir), 0);
}

int main(void)
{
        static const struct t_case cases[] = {
                { "demo", test_demo },
                { NULL, NULL },
        };

        return itest_main("demo", "d", (const struct t_suite[]){ { "demo", cases }, { NULL, NULL } });
}
