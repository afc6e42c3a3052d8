/* test-oracle -- the timestamp oracle (adapter/adapter-oracle.c) on a real catalog
 * store, with the asynchronous extension of its high-water mark (adapter-oracle.c NOTE 5) driven by a
 * persister the test controls: it holds the submitted commit back and lands it when the
 * test says, as the committer's worker thread would.
 *
 * The invariant checked after every timestamp: it is below the mark the catalog holds
 * durably at that moment, so a crash at any point restarts the oracle above it (DESIGN
 * section 2).  Each case fails when its part of adapter-oracle.c NOTE 5 is removed:
 *   - the mark moves only when its commit is durable (ts < durable, deferred commits);
 *   - a window that runs out first drains the commit in flight before committing on the
 *     loop (without the drain, the smaller in-flight mark lands last);
 *   - with a persister that keeps up, the loop never commits a mark itself.
 */
#include <inttypes.h>

#include "adapter-oracle.h"
#include "catalog/catalog.h"
#include "t.h"
#include "util.h"

static char *dir;
static struct catalog *store;

/* The persister: one commit may be in flight (the oracle never submits a second). */
static struct {
        struct oracle *o;
        uint64_t pending;               /* submitted, not landed */
        uint64_t landed;                /* landed by drain(), callback not yet delivered */
        unsigned submits, drains;
} fake;

static void land(uint64_t value)
{
        uint8_t v[8];

        be64_put(v, value);
        CU_ASSERT_EQUAL_FATAL(catalog_meta_put(store, ORACLE_META_HWM, v, sizeof(v), NULL), 0);
}

static int fake_submit(void *ctx, uint64_t value)
{
        (void)ctx;
        CU_ASSERT_EQUAL(fake.pending, 0);
        CU_ASSERT_EQUAL(fake.landed, 0);
        fake.pending = value;
        fake.submits++;
        return 0;
}

/* As committer_drain(): the commit in flight is durable when it returns; its callback
 * comes later, from the loop. */
static void fake_drain(void *ctx)
{
        (void)ctx;
        fake.drains++;
        if (fake.pending) {
                land(fake.pending);
                fake.landed = fake.pending;
                fake.pending = 0;
        }
}

/* The worker's commit finishes and the loop runs its callback. */
static void fake_complete(void)
{
        if (fake.pending) {
                land(fake.pending);
                oracle_hwm_committed(fake.o, fake.pending, 0);
                fake.pending = 0;
        } else if (fake.landed) {
                oracle_hwm_committed(fake.o, fake.landed, 0);
                fake.landed = 0;
        }
}

static uint64_t durable_hwm(void)
{
        void *v = NULL;
        size_t len = 0;
        uint64_t hwm = 0;

        if (catalog_meta_get(store, ORACLE_META_HWM, &v, &len) == 0 && len == 8)
                hwm = be64_get(v);
        free(v);
        return hwm;
}

static void setup(void)
{
        static const struct oracle_persister p = { fake_submit, fake_drain, NULL };

        dir = t_mkdtemp("oracle");
        CU_ASSERT_FATAL(dir != NULL);
        CU_ASSERT_EQUAL_FATAL(catalog_open(dir, &store), 0);
        memset(&fake, 0, sizeof(fake));
        CU_ASSERT_EQUAL_FATAL(oracle_open(store, &fake.o), 0);
        oracle_set_persister(fake.o, &p);
}

static void teardown(void)
{
        fake.o = oracle_free(fake.o);
        store = catalog_close(store);
        t_rmrf(dir);
        free(dir);
}

/* One timestamp at clock offset `ms`; checks it against everything before. */
static uint64_t step(int64_t ms, uint64_t *last)
{
        uint64_t ts = 0;

        oracle_set_clock_offset(fake.o, ms);
        CU_ASSERT_EQUAL_FATAL(oracle_write_ts(fake.o, &ts), 0);
        CU_ASSERT(ts > *last);
        CU_ASSERT(ts < durable_hwm());          /* the invariant */
        *last = ts;
        return ts;
}

/* Extensions that land 100 ms (of clock) after they are submitted: the loop never
 * commits, every timestamp stays below the durable mark. */
static void test_prompt_persister(void)
{
        uint64_t last = 0, submitted_at = 0;

        setup();
        step(0, &last);                         /* first mark: synchronous (no window yet) */
        CU_ASSERT_EQUAL(oracle_sync_persists(fake.o), 1);
        for (int64_t ms = 1; ms <= 5000; ms++) {
                step(ms, &last);
                if (fake.pending && !submitted_at)
                        submitted_at = (uint64_t)ms;
                if (fake.pending && (uint64_t)ms - submitted_at >= 100) {
                        fake_complete();
                        submitted_at = 0;
                }
        }
        CU_ASSERT_EQUAL(oracle_sync_persists(fake.o), 1);
        CU_ASSERT(oracle_async_persists(fake.o) >= 8);  /* ~one per 500 ms */
        CU_ASSERT_EQUAL(fake.drains, 0);
        teardown();
}

/* The extension never lands by itself: the window runs out, the oracle drains it and
 * commits a mark of its own after it.  Then the late callback arrives, the clock runs
 * on past the drained mark, and the invariant must still hold. */
static void test_window_runs_out(void)
{
        uint64_t last = 0, first_ext;
        int64_t ms;

        setup();
        step(0, &last);
        for (ms = 1; !fake.pending; ms++)
                step(ms, &last);
        first_ext = fake.pending;
        /* Run to the end of the window without landing it. */
        for (; last < first_ext - ORACLE_HWM_AHEAD_MS / 2 + 10; ms++)
                step(ms, &last);
        CU_ASSERT_EQUAL(fake.drains, 1);
        CU_ASSERT_EQUAL(oracle_sync_persists(fake.o), 2);
        CU_ASSERT(durable_hwm() >= first_ext);
        /* Whatever is still in flight lands now, last (without the drain it would be
         * the smaller first_ext, landing after the loop's own larger mark). */
        fake_complete();
        fake_complete();
        for (int64_t end = ms + 2 * ORACLE_HWM_AHEAD_MS; ms < end; ms++) {
                step(ms, &last);
                if (fake.pending)
                        fake_complete();
        }
        teardown();
}

/* A clock that jumps further than a window: the mark follows, never behind. */
static void test_clock_jump(void)
{
        uint64_t last = 0;

        setup();
        step(0, &last);
        step(1, &last);
        step(600, &last);                       /* submits an extension */
        CU_ASSERT(fake.pending != 0);
        step(10 * 1000, &last);                 /* far beyond it: drained, then committed */
        CU_ASSERT_EQUAL(fake.drains, 1);
        fake_complete();
        step(10 * 1000 + 1, &last);
        teardown();
}

/* A restarted oracle hands out only timestamps above everything before, also with an
 * extension in flight at the crash. */
static void test_restart_above(void)
{
        uint64_t last = 0, ts = 0;
        int64_t ms;

        setup();
        for (ms = 0; !fake.pending; ms++)
                step(ms, &last);
        step(ms, &last);
        /* crash: the pending extension never lands */
        fake.o = oracle_free(fake.o);
        fake.pending = 0;
        CU_ASSERT_EQUAL_FATAL(oracle_open(store, &fake.o), 0);
        oracle_set_clock_offset(fake.o, ms);
        CU_ASSERT_EQUAL(oracle_write_ts(fake.o, &ts), 0);
        CU_ASSERT(ts > last);
        teardown();
}

/* A restarted oracle's reads are never older than its first write (adapter-oracle.c NOTE 6): before
 * that write is acknowledged applied is the last life's mark, hours ago after a long
 * downtime, below what the controller keeps of the built-ins. */
static void test_read_not_older_than_life(void)
{
        uint64_t last = 0, ts = 0, before;

        setup();
        step(0, &last);
        fake.o = oracle_free(fake.o);
        fake.pending = 0;
        CU_ASSERT_EQUAL_FATAL(oracle_open(store, &fake.o), 0);
        /* Down for an hour. */
        oracle_set_clock_offset(fake.o, 3600 * 1000);
        before = oracle_read_ts(fake.o);
        CU_ASSERT(before <= oracle_hwm(fake.o));
        CU_ASSERT_EQUAL(oracle_append_ts(fake.o, &ts), 0);
        CU_ASSERT(ts > before + 3000 * 1000);
        /* Not acknowledged yet: a read still takes that time, not the old mark. */
        CU_ASSERT_EQUAL(oracle_read_ts(fake.o), ts);
        oracle_write_applied(fake.o, ts);
        CU_ASSERT_EQUAL(oracle_read_ts(fake.o), ts);
        teardown();
}

int main(void)
{
        static const struct t_case cases[] = {
                { "the mark moves only when its commit is durable", test_prompt_persister },
                { "a window that runs out drains the extension in flight", test_window_runs_out },
                { "a clock jump beyond the window", test_clock_jump },
                { "a restarted oracle starts above the last life", test_restart_above },
                { "a restarted oracle reads no older than its first write", test_read_not_older_than_life },
                { NULL, NULL },
        };
        static const struct t_suite suites[] = { { "oracle", cases }, { NULL, NULL } };

        return t_run(suites);
}
