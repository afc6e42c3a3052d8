/* test-follow -- the lifecycle follows the catalog through the catalog log ring
 * (common/ring/lring.h, lifecycle/lifecycle-follow.c note 1), with the three real daemons
 * started with tools/coord.
 *
 *   ring_path      DDL and INSERTs: the follower applies the transactions from the ring
 *                  (status ring_applied grows by at least one per DDL), its state reaches
 *                  the catalog's last seq, and what it enacts works (an INSERT right
 *                  after a CREATE TABLE waits for the follower's EnsureCollections).
 *   kill9_adapter  kill -9 of the adapter while a client runs DDL, then up: the ring
 *                  restarts with a new generation and may miss the transactions
 *                  committed just before the kill; the follower falls back to the log
 *                  (ring_fallbacks grows), converges on the catalog's last seq, and goes
 *                  on following through the ring; new DDL is enacted.
 *   kill9_lifecycle  kill -9 of the follower, then up: the new one reloads, attaches
 *                  to the ring, skips what it loaded and applies the rest from the ring.
 *   publication_unanswered  the adapter dies with a publication durable, unanswered: the
 *                  follower abandons it without a reload and learns it from the log.
 *   wait_modes     how the follower sleeps on the ring (lifecycle-follow.c note 4): in its
 *                  event loop (catalog_wait=loop, woken through io_uring) where the
 *                  kernel has IORING_OP_FUTEX_WAIT; restarted with --catalog-wait-thread,
 *                  the fallback for kernels without it, in a watcher thread, and it
 *                  follows through the ring all the same.
 *   frontier_wait_modes  how the adapter and the follower sleep on the controller's
 *                  frontier ring (common/node/node-ring.c note 5): in their event loops
 *                  (frontier_wait=loop, woken through io_uring: the adapter's
 *                  frontier_loop_wakes grows by one at least with every CREATE TABLE +
 *                  INSERT round, each of which publishes) where the kernel has
 *                  IORING_OP_FUTEX_WAIT; restarted with --frontier-wait-thread, in a
 *                  watcher thread that wakes the loop.  Either way the ring is read once
 *                  per round at least (frontier_reads), not only by the 1 s
 *                  safety-net tick that is all a lost wake-up path would leave.
 *   catchup_thread the periodic catch-up of the secondary runs on a thread (lifecycle-follow.c
 *                  note 6): restarted with --test-catchup-delay-ms 1500, every such
 *                  catch-up takes 1.5 s, yet the follower's loop never stalls for
 *                  anything near that (status max_stall_us), its status answers, the
 *                  ring path keeps applying DDL meanwhile, and the slow catch-ups are
 *                  counted (catalog_catchups, catalog_catchup_last_us).  With the
 *                  catch-up on the loop, the stall is the delay: the case fails.
 *   log_path_thread  the log path's catch-up runs on that thread too (lifecycle-follow.c note
 *                  6): with the same 1.5 s delay, a CREATE VIEW whose catalog entry is
 *                  over the ring's payload_max (the ring omits it) makes the follower
 *                  fall back to the log; it converges, the transaction is applied from
 *                  the log and enacted (the view can be read), and the loop's longest
 *                  stall stays far below the delay.  With the log path's catch-up on
 *                  the loop, the stall is the delay: the case fails.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "itest.h"
#include "loop/loop.h"

/* Whether the status detail of role contains s. */
static bool detail_has(Coord__Role role, const char *s)
{
        Coord__StatusReply *st = NULL;
        bool r;

        if (node_query_status(run_dir, role, 2000, &st) < 0)
                return false;
        r = st->detail && strstr(st->detail, s);
        coord__status_reply__free_unpacked(st, NULL);
        return r;
}

static bool lc_detail_has(const char *s)
{
        return detail_has(COORD__ROLE__ROLE_LIFECYCLE, s);
}


/* The follower's state reaches the adapter's last seq (as of the call) within 10 s. */
static bool converged(void)
{
        uint64_t want = seq_of(COORD__ROLE__ROLE_ADAPTER), got = 0;

        for (int i = 0; want > 0 && i < 1000; i++) {
                got = seq_of(COORD__ROLE__ROLE_LIFECYCLE);
                if (got >= want)
                        return true;
                usleep(10 * 1000);
        }
        fprintf(stderr, "\n    the follower is at seq %" PRIu64 ", the catalog at %" PRIu64, got, want);
        return false;
}

static void test_up(void)
{
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

/* n tables created, written and read (the INSERT waits until the follower enacted the
 * CREATE), every other one dropped again: 2.5 n DDL-ish statements, 2n commits at least. */
static bool ddl_round(PGconn *c, const char *prefix, int n)
{
        for (int i = 0; i < n; i++) {
                if (!okf(c, "CREATE TABLE %s%d (a int)", prefix, i) ||
                    !okf(c, "INSERT INTO %s%d VALUES (%d)", prefix, i, i))
                        return false;
                if (i % 2 && !okf(c, "DROP TABLE %s%d", prefix, i - 1))
                        return false;
        }
        return true;
}

static void test_ring_path(void)
{
        PGconn *c = db();
        uint64_t applied0, fallbacks0, log0, applied1, fallbacks1, log1, lag99;

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(converged());
        CU_ASSERT(lc_detail_has(" catalog_ring=attached "));
        applied0 = lc_stat("ring_applied");
        fallbacks0 = lc_stat("ring_fallbacks");
        log0 = lc_stat("log_applied");
        CU_ASSERT_FATAL(ddl_round(c, "r", 20));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM r19", "1"));
        CU_ASSERT(converged());
        applied1 = lc_stat("ring_applied");
        fallbacks1 = lc_stat("ring_fallbacks");
        log1 = lc_stat("log_applied");
        lag99 = lc_stat("lag_p99_us");
        printf("\n    ring_applied %" PRIu64 " -> %" PRIu64 ", ring_fallbacks %" PRIu64 " -> %" PRIu64
               ", log_applied %" PRIu64 ", catalog_catchups %" PRIu64 ", lag p50/p99 %" PRIu64 "/%"
               PRIu64 " us", applied0, applied1, fallbacks0, fallbacks1, log1,
               lc_stat("catalog_catchups"), lc_stat("lag_p50_us"), lag99);
        /* 20 CREATEs and 10 DROPs at least, each its own commit, applied once each; all
         * from the ring but for a rare one the once-a-second catch-up may have found in
         * the log a moment before the ring delivered it. */
        CU_ASSERT(applied1 - applied0 + log1 - log0 >= 30);
        CU_ASSERT(applied1 - applied0 >= 28);
        /* A healthy ring needs no fallback while the adapter lives (one is tolerated: a
         * producer preempted inside its last-seq update makes lring_last() give up). */
        CU_ASSERT(fallbacks1 - fallbacks0 <= 1);
        CU_ASSERT(lc_stat("lag_samples") > 0);
        CU_ASSERT(stat_of(COORD__ROLE__ROLE_ADAPTER, "catalog_ring_records") >= 30);
        CU_ASSERT_EQUAL(stat_of(COORD__ROLE__ROLE_ADAPTER, "catalog_ring_omitted"), 0);
        PQfinish(c);
}

struct ddl_arg {
        atomic_int done;
        int failed_at;
};

/* DDL until the adapter dies under it. */
static void *ddl_thread(void *p)
{
        struct ddl_arg *a = p;
        PGconn *c = db();
        int i;

        for (i = 0; c && i < 100000; i++) {
                PGresult *r;
                char q[64];

                snprintf(q, sizeof(q), i % 2 ? "DROP TABLE k%d" : "CREATE TABLE k%d (a int)",
                         i % 2 ? i - 1 : i);
                r = PQexec(c, q);
                if (PQresultStatus(r) != PGRES_COMMAND_OK) {
                        PQclear(r);
                        break;
                }
                PQclear(r);
                a->done++;
        }
        a->failed_at = i;
        PQfinish(c);
        return NULL;
}

static void test_kill9_adapter(void)
{
        struct ddl_arg a = { 0 };
        pthread_t t;
        uint64_t gen0, fallbacks0, applied0, applied1;
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE before_kill (a int)"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO before_kill VALUES (1)"));
        PQfinish(c);
        CU_ASSERT_FATAL(converged());
        gen0 = lc_stat("catalog_generation");
        fallbacks0 = lc_stat("ring_fallbacks");
        CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, ddl_thread, &a), 0);
        /* the kill lands among acknowledged DDL */
        for (int w = 0; w < 500 && atomic_load(&a.done) < 5; w++)
                usleep(10 * 1000);
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_ADAPTER));
        pthread_join(t, NULL);
        printf("\n    %d DDL statements acknowledged before the kill", a.done);
        CU_ASSERT(a.done > 0);
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        for (int w = 0; w < 100 && !(c = db()); w++)
                usleep(100 * 1000);
        CU_ASSERT_FATAL(c != NULL);

        /* The follower converges on the restarted adapter's catalog... */
        CU_ASSERT(converged());
        CU_ASSERT(lc_stat("catalog_generation") > gen0);
        CU_ASSERT(lc_stat("ring_fallbacks") > fallbacks0);
        /* ... and follows through the ring again; what it enacts works. */
        applied0 = lc_stat("ring_applied");
        CU_ASSERT(okf(c, "CREATE TABLE post_kill (a int)"));
        CU_ASSERT(okf(c, "INSERT INTO post_kill VALUES (7)"));
        CU_ASSERT(rows_are(c, "SELECT a FROM post_kill", "7"));
        CU_ASSERT(ddl_round(c, "pk", 4));
        CU_ASSERT(converged());
        applied1 = lc_stat("ring_applied");
        printf("\n    after the restart: ring_fallbacks %" PRIu64 ", ring_applied %" PRIu64
               " -> %" PRIu64 ", log_applied %" PRIu64, lc_stat("ring_fallbacks"), applied0,
               applied1, lc_stat("log_applied"));
        CU_ASSERT(applied1 >= applied0 + 1 + 6 - 2);
        /* I7 across the kill: acknowledged DDL survived.  The statement in flight at the
         * kill may or may not have committed (the client got no answer), so check the
         * last pair that was acknowledged whole: its table is gone.  And the table made
         * before the kill is still there. */
        if (a.done >= 2) {
                int dropped = a.done % 2 == 0 ? a.done - 2 : a.done - 3;
                char q[64];

                snprintf(q, sizeof(q), "INSERT INTO k%d VALUES (1)", dropped);
                CU_ASSERT(fails_with(c, q, "42P01"));
        }
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM before_kill", "1"));
        PQfinish(c);
}

static void test_kill9_lifecycle(void)
{
        PGconn *c = db();
        uint64_t applied;

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_LIFECYCLE));
        /* Commits while it is down reach it by its reload. */
        CU_ASSERT(okf(c, "CREATE TABLE while_down (a int)"));
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        CU_ASSERT(converged());
        CU_ASSERT(okf(c, "INSERT INTO while_down VALUES (1)"));
        CU_ASSERT(ddl_round(c, "ld", 6));
        CU_ASSERT(converged());
        applied = lc_stat("ring_applied");
        printf("\n    restarted follower: ring_applied %" PRIu64 ", ring_fallbacks %" PRIu64
               ", reloads %" PRIu64, applied, lc_stat("ring_fallbacks"), lc_stat("reloads"));
        CU_ASSERT(applied >= 6 + 3);
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM ld5", "1"));
        PQfinish(c);
}

/* An adapter killed with a publication durable but unanswered (kill point
 * publication.committed.before_reply): the follower abandons it (publication_errors
 * grows) without reloading its state (reloads stays: lifecycle-publish.c note 2), takes
 * the publication's outcome from the log (it converges on the catalog), publishes again,
 * and the catalog still replays to what the adapter holds (I10).  With the reload back
 * in place for that case, reloads grows and the case fails. */
static void test_publication_unanswered(void)
{
        uint64_t reloads0, errors0;
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE pu (a int)"));
        CU_ASSERT_FATAL(ok(c, "INSERT INTO pu VALUES (1)"));
        PQfinish(c);
        CU_ASSERT_FATAL(converged());
        CU_ASSERT_FATAL(publications_pass(1, 10000));
        reloads0 = lc_stat("reloads");
        errors0 = lc_stat("publication_errors");
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_ADAPTER));
        /* It dies at its first publication's commit: up may see it serve or not. */
        (void)t_sh("COORD_KILLPOINT=publication.committed.before_reply:1 %s up >/dev/null 2>&1", coord_cmd);
        CU_ASSERT_FATAL(t_wait_for(lc_stat("publication_errors") > errors0, 20000));
        CU_ASSERT_FATAL(t_wait_for(pid_of(COORD__ROLE__ROLE_ADAPTER) <= 0, 10000));
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        c = db();
        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT(ok(c, "INSERT INTO pu VALUES (2)"));
        CU_ASSERT(converged());
        CU_ASSERT(publications_pass(2, 10000));
        printf("\n    publication_errors %" PRIu64 " -> %" PRIu64 ", reloads %" PRIu64 " -> %" PRIu64,
               errors0, lc_stat("publication_errors"), reloads0, lc_stat("reloads"));
        CU_ASSERT_EQUAL(lc_stat("reloads"), reloads0);
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM pu", "2"));
        PQfinish(c);
        itest_check();
}

/* The follower killed and started again with args in COORD_LIFECYCLE_ARGS ("" for
 * none); its state then reaches the catalog's. */
static void lc_restart(const char *args)
{
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_LIFECYCLE));
        CU_ASSERT_EQUAL_FATAL(t_sh("COORD_LIFECYCLE_ARGS='%s' %s up >/dev/null", args, coord_cmd), 0);
        CU_ASSERT(converged());
}

static void test_wait_modes(void)
{
        struct loop *l = NULL;
        uint64_t applied0, fallbacks0;
        PGconn *c = db();
        bool futex;

        CU_ASSERT_FATAL(c != NULL);
        futex = loop_new(8, &l) == 0 && loop_futex_supported(l);
        l = loop_free(l);
        CU_ASSERT(ddl_round(c, "wl", 4));
        CU_ASSERT(converged());
        CU_ASSERT(lc_detail_has(futex ? "catalog_wait=loop" : "catalog_wait=thread"));
        printf("\n    kernel futex wait %s, loop wakes %" PRIu64, futex ? "yes" : "no",
               lc_stat("catalog_loop_wakes"));
        if (futex)
                CU_ASSERT(lc_stat("catalog_loop_wakes") >= 4);

        /* The fallback, forced. */
        lc_restart("--catalog-wait-thread");
        CU_ASSERT(lc_detail_has("catalog_wait=thread"));
        applied0 = lc_stat("ring_applied");
        fallbacks0 = lc_stat("ring_fallbacks");
        CU_ASSERT(ddl_round(c, "wt", 6));
        CU_ASSERT(converged());
        printf(", thread: ring_applied %" PRIu64 " -> %" PRIu64 ", ring_fallbacks %" PRIu64
               " -> %" PRIu64, applied0, lc_stat("ring_applied"), fallbacks0,
               lc_stat("ring_fallbacks"));
        CU_ASSERT(lc_stat("ring_applied") >= applied0 + 6 + 3);
        CU_ASSERT_EQUAL(lc_stat("catalog_loop_wakes"), 0);
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM wt5", "1"));

        /* Back to the default for whatever runs next. */
        lc_restart("");
        PQfinish(c);
}

/* Adapter and follower killed and started again with args for both. */
static void frontier_restart(const char *args)
{
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_ADAPTER));
        CU_ASSERT_FATAL(kill9(COORD__ROLE__ROLE_LIFECYCLE));
        CU_ASSERT_EQUAL_FATAL(t_sh("COORD_ADAPTER_ARGS='%s' COORD_LIFECYCLE_ARGS='%s' %s up >/dev/null",
                                   args, args, coord_cmd), 0);
        CU_ASSERT(converged());
}

/* FRONTIER_ROUNDS rounds of ddl_round() (CREATE TABLE + INSERT: the controller
 * publishes the new table's frontiers, then the INSERT's); the frontier ring's reads
 * that delivered records meanwhile, in the adapter.  The rounds take milliseconds, so
 * the 1 s tick adds at most one. */
#define FRONTIER_ROUNDS 10
static uint64_t frontier_rounds_reads(PGconn *c, const char *prefix)
{
        uint64_t r0 = stat_of(COORD__ROLE__ROLE_ADAPTER, "frontier_reads");

        CU_ASSERT(ddl_round(c, prefix, FRONTIER_ROUNDS));
        return stat_of(COORD__ROLE__ROLE_ADAPTER, "frontier_reads") - r0;
}

static void test_frontier_wait_modes(void)
{
        struct loop *l = NULL;
        uint64_t ad0, lc0, reads;
        const char *mode;
        PGconn *c = db();
        bool futex;

        CU_ASSERT_FATAL(c != NULL);
        futex = loop_new(8, &l) == 0 && loop_futex_supported(l);
        l = loop_free(l);
        mode = futex ? "frontier_wait=loop" : "frontier_wait=thread";
        CU_ASSERT(detail_has(COORD__ROLE__ROLE_ADAPTER, mode));
        CU_ASSERT(lc_detail_has(mode));
        ad0 = stat_of(COORD__ROLE__ROLE_ADAPTER, "frontier_loop_wakes");
        lc0 = lc_stat("frontier_loop_wakes");
        reads = frontier_rounds_reads(c, "fl");
        printf("\n    kernel futex wait %s: %" PRIu64 " reads, adapter loop wakes %" PRIu64
               " -> %" PRIu64 ", follower %" PRIu64 " -> %" PRIu64, futex ? "yes" : "no", reads,
               ad0, stat_of(COORD__ROLE__ROLE_ADAPTER, "frontier_loop_wakes"), lc0,
               lc_stat("frontier_loop_wakes"));
        CU_ASSERT(reads >= FRONTIER_ROUNDS);
        if (futex) {
                CU_ASSERT(stat_of(COORD__ROLE__ROLE_ADAPTER, "frontier_loop_wakes") >=
                          ad0 + FRONTIER_ROUNDS);
                CU_ASSERT(lc_stat("frontier_loop_wakes") > lc0);
        }

        /* The fallback, forced. */
        PQfinish(c);
        frontier_restart("--frontier-wait-thread");
        c = db();
        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT(detail_has(COORD__ROLE__ROLE_ADAPTER, "frontier_wait=thread"));
        CU_ASSERT(lc_detail_has("frontier_wait=thread"));
        reads = frontier_rounds_reads(c, "ft");
        printf(", thread: %" PRIu64 " reads", reads);
        CU_ASSERT(reads >= FRONTIER_ROUNDS);
        CU_ASSERT_EQUAL(stat_of(COORD__ROLE__ROLE_ADAPTER, "frontier_loop_wakes"), 0);
        CU_ASSERT_EQUAL(lc_stat("frontier_loop_wakes"), 0);
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM ft9", "1"));

        /* Back to the default for whatever runs next. */
        PQfinish(c);
        frontier_restart("");
}

/* node-ring.c note 5a: with a budget of 4 records a turn, the snapshot each reader takes
 * at its attach (every live collection, more than 4 here) comes in several turns, the
 * rest of the loop served between them; what follows the snapshot is read as usual. */
static void test_frontier_parts(void)
{
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT(ddl_round(c, "fp", 12));              /* 6 tables left, and the built-ins */
        PQfinish(c);
        frontier_restart("--frontier-read-budget 4");
        c = db();
        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT(t_wait_for(stat_of(COORD__ROLE__ROLE_ADAPTER, "frontier_read_yields") > 0 &&
                             lc_stat("frontier_read_yields") > 0, 5000));
        printf("\n    yields: adapter %" PRIu64 ", follower %" PRIu64,
               stat_of(COORD__ROLE__ROLE_ADAPTER, "frontier_read_yields"),
               lc_stat("frontier_read_yields"));
        CU_ASSERT(ddl_round(c, "fq", 6));               /* each INSERT waits for its table */
        CU_ASSERT(converged());
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM fp11", "1"));
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM fq5", "1"));
        PQfinish(c);
        frontier_restart("");
        itest_check();
}

/* The loop's longest callback batch since the daemon started, microseconds. */
static uint64_t lc_max_stall_us(void)
{
        Coord__StatusReply *st = NULL;
        uint64_t v = UINT64_MAX;

        if (node_query_status(run_dir, COORD__ROLE__ROLE_LIFECYCLE, 2000, &st) == 0) {
                v = st->max_stall_us;
                coord__status_reply__free_unpacked(st, NULL);
        }
        return v;
}

static void test_catchup_thread(void)
{
        const uint64_t delay_us = 1500 * 1000;
        uint64_t applied0, catchups0, stall = 0, last = 0;
        PGconn *c = db();
        bool slow_seen = false;

        CU_ASSERT_FATAL(c != NULL);
        lc_restart("--test-catchup-delay-ms 1500");
        applied0 = lc_stat("ring_applied");
        catchups0 = lc_stat("catalog_catchups");
        /* DDL for ~4 s: the ring applies it (ring_dirty), so a catch-up is posted every
         * second it is not already in flight, and each takes the delay. */
        for (int round = 0; round < 40 && !(slow_seen && round >= 20); round++) {
                char prefix[16];

                snprintf(prefix, sizeof(prefix), "ct%d_", round);
                CU_ASSERT_FATAL(ddl_round(c, prefix, 2));
                last = lc_stat("catalog_catchup_last_us");
                slow_seen |= last >= delay_us;
                usleep(100 * 1000);             /* pace */
        }
        CU_ASSERT(converged());
        stall = lc_max_stall_us();
        printf("\n    catch-ups %" PRIu64 " -> %" PRIu64 ", last %" PRIu64 " us, max %" PRIu64
               " us; ring_applied %" PRIu64 " -> %" PRIu64 "; loop's longest stall %" PRIu64 " us",
               catchups0, lc_stat("catalog_catchups"), last, lc_stat("catalog_catchup_max_us"),
               applied0, lc_stat("ring_applied"), stall);
        CU_ASSERT(lc_detail_has("catalog_catchup=thread"));
        CU_ASSERT(slow_seen);
        CU_ASSERT(lc_stat("catalog_catchups") > catchups0);
        CU_ASSERT(lc_stat("ring_applied") >= applied0 + 40);
        CU_ASSERT(stall < delay_us / 2);

        /* Back to the default for whatever runs next. */
        lc_restart("");
        PQfinish(c);
}

static void test_log_path_thread(void)
{
        const uint64_t delay_us = 1500 * 1000;
        enum { LIT = 300 * 1024 };      /* over payload_max: the default ring's 1 MiB / 4 */
        static char sql[LIT + 128];
        uint64_t fallbacks0, log0, stall;
        PGconn *c = db();
        size_t n;

        CU_ASSERT_FATAL(c != NULL);
        lc_restart("--test-catchup-delay-ms 1500");
        fallbacks0 = lc_stat("ring_fallbacks");
        log0 = lc_stat("log_applied");
        n = (size_t)sprintf(sql, "CREATE VIEW lp_big AS SELECT 7 AS x WHERE '");
        memset(sql + n, 'x', LIT);
        strcpy(sql + n + LIT, "' <> ''");
        CU_ASSERT_FATAL(ok(c, sql));
        CU_ASSERT(stat_of(COORD__ROLE__ROLE_ADAPTER, "catalog_ring_omitted") >= 1);
        /* Small DDL behind it: the ring holds these, the follower needs the log first. */
        CU_ASSERT_FATAL(ddl_round(c, "lp", 2));
        CU_ASSERT(converged());
        CU_ASSERT(rows_are(c, "SELECT x FROM lp_big", "7"));
        stall = lc_max_stall_us();
        printf("\n    ring_fallbacks %" PRIu64 " -> %" PRIu64 ", log_applied %" PRIu64 " -> %" PRIu64
               ", catch-up last %" PRIu64 " us; loop's longest stall %" PRIu64 " us",
               fallbacks0, lc_stat("ring_fallbacks"), log0, lc_stat("log_applied"),
               lc_stat("catalog_catchup_last_us"), stall);
        CU_ASSERT(lc_stat("ring_fallbacks") > fallbacks0);
        CU_ASSERT(lc_stat("log_applied") > log0);
        CU_ASSERT(stall < delay_us / 2);

        lc_restart("");
        PQfinish(c);
}

static const struct t_case cases[] = {
        { "up", test_up },
        { "ring_path", test_ring_path },
        { "kill9_adapter", test_kill9_adapter },
        { "kill9_lifecycle", test_kill9_lifecycle },
        { "publication_unanswered", test_publication_unanswered },
        { "wait_modes", test_wait_modes },
        { "frontier_wait_modes", test_frontier_wait_modes },
        { "frontier_parts", test_frontier_parts },
        { "catchup_thread", test_catchup_thread },
        { "log_path_thread", test_log_path_thread },
        { NULL, NULL },
};

int main(void)
{
        return itest_main("follow", "f", (const struct t_suite[]){ { "follow", cases }, { NULL, NULL } });
}
