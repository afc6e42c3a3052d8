/* test-lifecycle-state -- the bound rules (lifecycle-bounds.h) and the follower's
 * maintained state and publication tick (lifecycle-state.h), without daemons. */
#include <stdlib.h>
#include <string.h>

#include "lifecycle-bounds.h"
#include "lifecycle-state.h"
#include "t.h"
#include "util.h"

static void key9(uint8_t *k, char kind, uint64_t gid)
{
        k[0] = (uint8_t)kind;
        be64_put(k + 1, gid);
}

static void put_item(struct lc_state *s, uint64_t gid, Coord__ItemKind kind,
                     const uint64_t *inputs, size_t n, uint64_t retain_ms, uint64_t as_of)
{
        Coord__CatalogItem it = COORD__CATALOG_ITEM__INIT;
        uint8_t k[9], v[256];
        size_t len;

        it.gid = gid;
        it.kind = kind;
        it.logical_inputs = (uint64_t *)inputs;
        it.n_logical_inputs = n;
        it.retain_history_ms = retain_ms;
        it.as_of = as_of;
        key9(k, 'i', gid);
        len = coord__catalog_item__pack(&it, v);
        CU_ASSERT_EQUAL(lc_state_load_record(s, k, 9, v, len), 0);
}

static void put_bound(struct lc_state *s, uint64_t gid, uint64_t bound)
{
        Coord__CatalogBound b = COORD__CATALOG_BOUND__INIT;
        uint8_t k[9], v[64];

        b.gid = gid;
        b.bound = bound;
        key9(k, 'b', gid);
        CU_ASSERT_EQUAL(lc_state_load_record(s, k, 9, v, coord__catalog_bound__pack(&b, v)), 0);
}

static void req_key(uint8_t *k, uint64_t c, uint64_t x)
{
        k[0] = 'r';
        be64_put(k + 1, c);
        be64_put(k + 9, x);
}

static void put_req(struct lc_state *s, uint64_t c, uint64_t x, uint64_t f)
{
        Coord__CatalogRequirement q = COORD__CATALOG_REQUIREMENT__INIT;
        uint8_t k[17], v[64];

        q.consumer = c;
        q.input = x;
        q.frontier = f;
        req_key(k, c, x);
        CU_ASSERT_EQUAL(lc_state_load_record(s, k, 17, v, coord__catalog_requirement__pack(&q, v)), 0);
}

static const struct lc_bound_rec *find_bound(const struct lc_publication *p, uint64_t gid)
{
        for (size_t i = 0; i < p->n_bounds; i++)
                if (p->bounds[i].gid == gid)
                        return &p->bounds[i];
        return NULL;
}

static const struct lc_req_rec *find_req(const struct lc_publication *p, uint64_t c, uint64_t x)
{
        for (size_t i = 0; i < p->n_reqs; i++)
                if (p->reqs[i].consumer == c && p->reqs[i].input == x)
                        return &p->reqs[i];
        return NULL;
}

/* ---- pure rules ---- */

static void test_rules(void)
{
        CU_ASSERT_EQUAL(lc_window(0), LC_DEFAULT_WINDOW_MS);
        CU_ASSERT_EQUAL(lc_window(5000), 5000);
        CU_ASSERT_EQUAL(lc_policy(500, 1000), 0);
        CU_ASSERT_EQUAL(lc_policy(5000, 1000), 4000);
        /* min(policy, requirement), never below the old bound (I1) */
        CU_ASSERT_EQUAL(lc_bound(0, 5000, 1000, UINT64_MAX, UINT64_MAX), 4000);
        CU_ASSERT_EQUAL(lc_bound(0, 5000, 1000, 3000, UINT64_MAX), 3000);
        CU_ASSERT_EQUAL(lc_bound(4500, 5000, 1000, 3000, UINT64_MAX), 4500);
        CU_ASSERT_EQUAL(lc_bound(100, 500, 1000, UINT64_MAX, UINT64_MAX), 100);
        /* stopped at the last change of a quiet collection */
        CU_ASSERT_EQUAL(lc_bound(0, 5000, 1000, UINT64_MAX, 2999), 2999);
        CU_ASSERT_EQUAL(lc_bound(3500, 5000, 1000, UINT64_MAX, 2999), 3500);
        CU_ASSERT_EQUAL(lc_mv_requirement(10, 0, UINT64_MAX), 10);
        CU_ASSERT_EQUAL(lc_mv_requirement(10, 20, UINT64_MAX), 19);
        CU_ASSERT_EQUAL(lc_mv_requirement(30, 20, UINT64_MAX), 30);
        CU_ASSERT_EQUAL(lc_mv_requirement(10, 20, 15), 15);
        CU_ASSERT_EQUAL(lc_index_bound(0, 9000, 1000, UINT64_MAX), 8000);
        CU_ASSERT_EQUAL(lc_index_bound(8500, 9000, 1000, UINT64_MAX), 8500);
        CU_ASSERT_EQUAL(lc_index_bound(0, 9000, 1000, 5000), 5000);
        CU_ASSERT_EQUAL(lc_table_upper(10, 20), 20);
        CU_ASSERT_EQUAL(lc_table_upper(30, 20), 30);
}

/* ---- a table, a materialized view on it, an index on the view ---- */

enum { T1 = 1000, MV = 1001, IX = 1002, T2 = 1003 };

static struct lc_state *chain(void)
{
        struct lc_state *s;
        static const uint64_t mv_in[] = { T1 }, ix_in[] = { MV };

        CU_ASSERT_FATAL(lc_state_new(&s) == 0);
        put_item(s, T1, COORD__ITEM_KIND__ITEM_TABLE, NULL, 0, 0, 0);
        put_item(s, T2, COORD__ITEM_KIND__ITEM_TABLE, NULL, 0, 0, 0);
        put_item(s, MV, COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW, mv_in, 1, 0, 5000);
        put_item(s, IX, COORD__ITEM_KIND__ITEM_INDEX, ix_in, 1, 0, 6000);
        put_bound(s, T1, 100);
        put_bound(s, MV, 5000);
        put_req(s, MV, T1, 5000);
        put_req(s, IX, MV, 6000);
        lc_state_set_seq(s, 7);
        return s;
}

static void test_tick_chain(void)
{
        struct lc_state *s = chain();
        struct lc_publication p = { 0 };
        const struct lc_bound_rec *b;
        const struct lc_req_rec *q;
        uint64_t v;

        /* Nothing is known of frontiers: nothing to publish; installing writes nothing. */
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_EQUAL(p.n_bounds + p.n_reqs, 0);

        CU_ASSERT_EQUAL(lc_state_frontier(s, 1, 10000, 0, false), 0);     /* T */
        CU_ASSERT_EQUAL(lc_state_frontier(s, T1, 8000, 0, false), 0);     /* last write 7999 */
        CU_ASSERT_EQUAL(lc_state_frontier(s, T2, 3000, 0, false), 0);     /* last write 2999 */
        CU_ASSERT_EQUAL(lc_state_frontier(s, MV, 9000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_frontier(s, IX, 9000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        /* R(MV, T1) = upper - 1, stopped at T1's last write */
        q = find_req(&p, MV, T1);
        CU_ASSERT_FATAL(q != NULL);
        CU_ASSERT_EQUAL(q->frontier, 7999);
        /* the index's first bound: min(upper - 1 s, its contents' last change); R(IX, MV)
         * follows it */
        b = find_bound(&p, IX);
        CU_ASSERT_FATAL(b != NULL);
        CU_ASSERT_EQUAL(b->bound, 7999);
        q = find_req(&p, IX, MV);
        CU_ASSERT_FATAL(q != NULL);
        CU_ASSERT_EQUAL(q->frontier, 7999);
        /* T1: min(max(8000, T) - 1 s, R(MV, T1), 7999) */
        b = find_bound(&p, T1);
        CU_ASSERT_FATAL(b != NULL);
        CU_ASSERT_EQUAL(b->bound, 7999);
        /* MV: min(9000 - 1 s, R(IX, MV)) */
        b = find_bound(&p, MV);
        CU_ASSERT_FATAL(b != NULL);
        CU_ASSERT_EQUAL(b->bound, 7999);
        /* T2, unconsumed, quiet since 2999 */
        b = find_bound(&p, T2);
        CU_ASSERT_FATAL(b != NULL);
        CU_ASSERT_EQUAL(b->bound, 2999);
        CU_ASSERT_EQUAL(p.n_bounds, 4);
        CU_ASSERT_EQUAL(p.n_reqs, 2);

        /* Not committed yet: the committed state is unchanged. */
        CU_ASSERT_EQUAL(lc_state_bound(s, T1, &v), 0);
        CU_ASSERT_EQUAL(v, 100);
        lc_state_committed(s, &p);
        CU_ASSERT_EQUAL(lc_state_bound(s, T1, &v), 0);
        CU_ASSERT_EQUAL(v, 7999);
        CU_ASSERT_EQUAL(lc_state_requirement(s, IX, MV, &v), 0);
        CU_ASSERT_EQUAL(v, 7999);

        /* Nothing moved: an empty publication. */
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_EQUAL(p.n_bounds + p.n_reqs, 0);

        /* Uppers follow T without writes: nothing to publish (quiet). */
        CU_ASSERT_EQUAL(lc_state_frontier(s, 1, 12000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_frontier(s, MV, 12000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_frontier(s, IX, 12000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_EQUAL(p.n_bounds + p.n_reqs, 0);

        /* T1 is written (its stored upper moves): the MV's requirement, T1's bound,
         * the index's bound and requirement and the MV's bound follow. */
        CU_ASSERT_EQUAL(lc_state_frontier(s, T1, 11500, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_req(&p, MV, T1));
        CU_ASSERT_EQUAL(find_req(&p, MV, T1)->frontier, 11499);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_bound(&p, T1));
        CU_ASSERT_EQUAL(find_bound(&p, T1)->bound, 11000);      /* now the policy wins */
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_bound(&p, IX));
        CU_ASSERT_EQUAL(find_bound(&p, IX)->bound, 11000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_bound(&p, MV));
        CU_ASSERT_EQUAL(find_bound(&p, MV)->bound, 11000);
        CU_ASSERT_PTR_NULL(find_bound(&p, T2));
        /* Abandoned (the adapter said Error): the next tick proposes it again. */
        lc_state_abandon(s);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_req(&p, MV, T1));
        CU_ASSERT_EQUAL(find_req(&p, MV, T1)->frontier, 11499);
        lc_state_committed(s, &p);

        /* Bounds never regress (I1): an older ring value is ignored. */
        CU_ASSERT_EQUAL(lc_state_frontier(s, IX, 100, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_EQUAL(p.n_bounds + p.n_reqs, 0);

        lc_publication_done(&p);
        lc_state_free(s);
}

static void txn_apply_delete_req(struct lc_state *s, uint64_t seq, uint64_t c, uint64_t x)
{
        Coord__CatalogTxn txn = COORD__CATALOG_TXN__INIT;
        Coord__CatalogOp op = COORD__CATALOG_OP__INIT, *ops[2] = { &op, NULL };
        Coord__CatalogOp op2 = COORD__CATALOG_OP__INIT;
        uint8_t k[17], k2[9];

        req_key(k, c, x);
        op.kind = COORD__CATALOG_OP__KIND__DELETE;
        op.key.data = k;
        op.key.len = 17;
        key9(k2, 'i', c);
        op2.kind = COORD__CATALOG_OP__KIND__DELETE;
        op2.key.data = k2;
        op2.key.len = 9;
        ops[1] = &op2;
        txn.seq = seq;
        txn.ops = ops;
        txn.n_ops = 2;
        CU_ASSERT_EQUAL(lc_state_apply_txn(s, &txn), 0);
}

/* DROP of a consumer: its requirement goes, its input's bound advances (issue 5 6). */
static void test_drop_advances(void)
{
        struct lc_state *s = chain();
        struct lc_publication p = { 0 };
        Coord__CatalogTxn gap = COORD__CATALOG_TXN__INIT;

        CU_ASSERT_EQUAL(lc_state_frontier(s, 1, 10000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_frontier(s, T1, 10000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_frontier(s, MV, 6000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_EQUAL(find_bound(&p, T1)->bound, 5999);      /* held by R(MV, T1) */
        lc_state_committed(s, &p);
        /* A gap in the log is refused. */
        gap.seq = 9;
        CU_ASSERT_EQUAL(lc_state_apply_txn(s, &gap), -ESTALE);
        txn_apply_delete_req(s, 8, MV, T1);
        CU_ASSERT_EQUAL(lc_state_seq(s), 8);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_PTR_NOT_NULL(find_bound(&p, T1));
        CU_ASSERT_EQUAL(find_bound(&p, T1)->bound, 9000);
        lc_publication_done(&p);
        lc_state_free(s);
}

/* 10 advancing tables among 1,000 unchanged indexes: after the indexes' first
 * publication, a tick carries only the tables' records. */
static void test_sparse(void)
{
        struct lc_state *s;
        struct lc_publication p = { 0 };

        CU_ASSERT_FATAL(lc_state_new(&s) == 0);
        for (uint64_t g = 2000; g < 3000; g++) {
                put_item(s, g, COORD__ITEM_KIND__ITEM_INDEX, NULL, 0, 0, 3000);
                CU_ASSERT_EQUAL(lc_state_frontier(s, g, 5000, 0, false), 0);
        }
        for (uint64_t g = 1000; g < 1010; g++)
                put_item(s, g, COORD__ITEM_KIND__ITEM_TABLE, NULL, 0, 0, 0);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_EQUAL(p.n_bounds, 1000);      /* first publication of every index */
        lc_state_committed(s, &p);
        for (uint64_t t = 10000; t < 10005; t++) {
                CU_ASSERT_EQUAL(lc_state_frontier(s, 1, t, 0, false), 0);
                for (uint64_t g = 1000; g < 1010; g++)
                        CU_ASSERT_EQUAL(lc_state_frontier(s, g, t, 0, false), 0);
                /* the indexes' uppers follow T too, without new contents */
                for (uint64_t g = 2000; g < 3000; g++)
                        CU_ASSERT_EQUAL(lc_state_frontier(s, g, t, 0, false), 0);
                CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
                CU_ASSERT_EQUAL(p.n_bounds, 10);
                CU_ASSERT_EQUAL(p.n_reqs, 0);
                lc_state_committed(s, &p);
        }
        lc_publication_done(&p);
        lc_state_free(s);
}

/* One table read by 50 materialized views (tick_input() keeps the minimum requirement
 * over an input's consumers instead of walking them at every tick): the table's bound
 * follows that minimum when the holding consumer is dropped, when a consumer's
 * requirement moves in a tick, and after an abandoned publication. */
static void test_many_consumers(void)
{
        enum { TB = 1000, MV0 = 3000, N = 50 };
        struct lc_state *s;
        struct lc_publication p = { 0 };
        const uint64_t in[1] = { TB };
        uint64_t seq = 2;

        CU_ASSERT_FATAL(lc_state_new(&s) == 0);
        put_item(s, TB, COORD__ITEM_KIND__ITEM_TABLE, NULL, 0, 0, 0);
        put_bound(s, TB, 100);
        for (uint64_t i = 0; i < N; i++) {
                put_item(s, MV0 + i, COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW, in, 1, 0, 100);
                put_bound(s, MV0 + i, 100);
                put_req(s, MV0 + i, TB, 100);
        }
        lc_state_set_seq(s, 1);
        CU_ASSERT_EQUAL(lc_state_frontier(s, 1, 20000, 0, false), 0);    /* T */
        CU_ASSERT_EQUAL(lc_state_frontier(s, TB, 20000, 0, false), 0);   /* written at 19999 */
        /* MV i has caught up to 6000 + 10 i: R(MV i, TB) = its upper - 1. */
        for (uint64_t i = 0; i < N; i++)
                CU_ASSERT_EQUAL(lc_state_frontier(s, MV0 + i, 6000 + 10 * i, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_bound(&p, TB));
        CU_ASSERT_EQUAL(find_bound(&p, TB)->bound, 5999);
        lc_state_committed(s, &p);

        /* Quiet: the same minimum, nothing to publish for TB. */
        CU_ASSERT_EQUAL(lc_state_frontier(s, 1, 20100, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_PTR_NULL(find_bound(&p, TB));
        lc_state_committed(s, &p);

        /* The view holding the minimum is dropped: the next one holds TB. */
        txn_apply_delete_req(s, seq++, MV0, TB);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_bound(&p, TB));
        CU_ASSERT_EQUAL(find_bound(&p, TB)->bound, 6009);
        lc_state_committed(s, &p);

        /* That one catches up in the same tick as TB is looked at again. */
        CU_ASSERT_EQUAL(lc_state_frontier(s, MV0 + 1, 9000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_req(&p, MV0 + 1, TB));
        CU_ASSERT_EQUAL(find_req(&p, MV0 + 1, TB)->frontier, 8999);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_bound(&p, TB));
        CU_ASSERT_EQUAL(find_bound(&p, TB)->bound, 6019);       /* MV 2 now */
        /* Refused by the adapter: proposed again, from the committed state. */
        lc_state_abandon(s);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_bound(&p, TB));
        CU_ASSERT_EQUAL(find_bound(&p, TB)->bound, 6019);
        lc_state_committed(s, &p);

        /* Every view caught up past TB's last write: the policy holds TB, not them. */
        for (uint64_t i = 1; i < N; i++)
                CU_ASSERT_EQUAL(lc_state_frontier(s, MV0 + i, 20100, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_bound(&p, TB));
        CU_ASSERT_EQUAL(find_bound(&p, TB)->bound, 19100);      /* T - 1 s */
        lc_publication_done(&p);
        lc_state_free(s);
}

/* An index installed later than the policy would say (its arrangement starts at its
 * since): its first bound is that since, never below (I2). */
static void test_index_since_floor(void)
{
        struct lc_state *s;
        struct lc_publication p = { 0 };

        CU_ASSERT_FATAL(lc_state_new(&s) == 0);
        put_item(s, 1000, COORD__ITEM_KIND__ITEM_TABLE, NULL, 0, 0, 0);
        put_item(s, 1001, COORD__ITEM_KIND__ITEM_INDEX, (const uint64_t[]){ 1000 }, 1, 0, 9500);
        put_req(s, 1001, 1000, 9500);
        CU_ASSERT_EQUAL(lc_state_frontier(s, 1, 10000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_frontier(s, 1000, 10000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_frontier(s, 1001, 10000, 9600, false), 0);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_bound(&p, 1001));
        CU_ASSERT_EQUAL(find_bound(&p, 1001)->bound, 9600);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_req(&p, 1001, 1000));
        CU_ASSERT_EQUAL(find_req(&p, 1001, 1000)->frontier, 9600);
        /* the table: min(T - 1 s, R = 9600, last write 9999) */
        CU_ASSERT_EQUAL(find_bound(&p, 1000)->bound, 9000);
        lc_publication_done(&p);
        lc_state_free(s);
}

int main(void)
{
        static const struct t_case rules[] = {
                { "rules", test_rules },
                { NULL, NULL },
        };
        static const struct t_case state[] = {
                { "tick_chain", test_tick_chain },
                { "drop_advances", test_drop_advances },
                { "sparse", test_sparse },
                { "many_consumers", test_many_consumers },
                { "index_since_floor", test_index_since_floor },
                { NULL, NULL },
        };
        static const struct t_suite suites[] = {
                { "lifecycle-bounds", rules },
                { "lifecycle-state", state },
                { NULL, NULL },
        };

        return t_run(suites);
}
