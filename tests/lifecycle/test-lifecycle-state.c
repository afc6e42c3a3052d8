/* test-lifecycle-state -- the bound rules (lifecycle-bounds.h), the follower's
 * maintained state and publication tick (lifecycle-state.h), and its load in bulk
 * from a catalog (lifecycle-load.h), without daemons. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "lifecycle-bounds.h"
#include "lifecycle-enact.h"
#include "lifecycle-load.h"
#include "lifecycle-state.h"
#include "refresh.h"
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
        /* a refresh view: its upper is its next refresh, required as it is */
        CU_ASSERT_EQUAL(lc_refresh_requirement(10, 0, UINT64_MAX), 10);
        CU_ASSERT_EQUAL(lc_refresh_requirement(10, 20, UINT64_MAX), 20);
        CU_ASSERT_EQUAL(lc_refresh_requirement(30, 20, UINT64_MAX), 30);
        CU_ASSERT_EQUAL(lc_refresh_requirement(10, 20, 15), 15);
        /* past its last refresh (empty upper): it follows the input, holding nothing */
        CU_ASSERT_EQUAL(lc_refresh_requirement(10, UINT64_MAX, 500), 500);
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

/* Built-ins under the catalog's protection (lifecycle-state.c NOTE 6): their bounds follow a table's rule
 * and an MV's requirement holds them; they survive a reload. */
static void test_builtins(void)
{
        static const uint64_t in[] = { 2 };     /* coord_frontiers */
        struct lc_publication p = { 0 };
        const struct lc_bound_rec *b;
        struct lc_state *s;

        CU_ASSERT_FATAL(lc_state_new(&s) == 0);
        CU_ASSERT_FATAL(lc_state_protect_builtins(s) == 0);
        put_item(s, MV, COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW, in, 1, 0, 5000);
        put_req(s, MV, 2, 5000);
        for (uint64_t gid = 1; gid <= 4; gid++)
                CU_ASSERT_EQUAL(lc_state_frontier(s, gid, 10000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_frontier(s, MV, 6000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        /* coord_objects: upper - 1 s; coord_frontiers: held by R(MV, 2) = 5999 */
        b = find_bound(&p, 1);
        CU_ASSERT(b && b->bound == 9000);
        b = find_bound(&p, 2);
        CU_ASSERT(b && b->bound == 5999);
        CU_ASSERT(find_bound(&p, 3) && find_bound(&p, 4));
        CU_ASSERT_EQUAL(lc_state_n_items(s), 1);         /* built-ins are not catalog items */
        lc_state_committed(s, &p);
        /* a reload keeps them: the next tick publishes them again from the catalog's */
        lc_state_reset_catalog(s);
        put_item(s, MV, COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW, in, 1, 0, 5000);
        put_req(s, MV, 2, 5999);
        put_bound(s, 2, 5999);
        CU_ASSERT_EQUAL(lc_state_frontier(s, 2, 12000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        b = find_bound(&p, 1);
        CU_ASSERT(b && b->bound == 9000);
        CU_ASSERT(find_bound(&p, 2) == NULL);   /* still held at 5999 */
        lc_publication_done(&p);
        lc_state_free(s);
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

/* A hold's record (catalog.proto CatalogHold) through a log entry: put or delete. */
static void txn_hold(struct lc_state *s, uint64_t seq, uint64_t id, uint64_t input, uint64_t f, bool put)
{
        Coord__CatalogTxn txn = COORD__CATALOG_TXN__INIT;
        Coord__CatalogOp op = COORD__CATALOG_OP__INIT, *ops[1] = { &op };
        Coord__CatalogHold h = COORD__CATALOG_HOLD__INIT;
        uint8_t k[9], v[64];

        h.hold_id = id;
        h.input = input;
        h.frontier = f;
        key9(k, 'h', id);
        op.kind = put ? COORD__CATALOG_OP__KIND__PUT : COORD__CATALOG_OP__KIND__DELETE;
        op.key.data = k;
        op.key.len = 9;
        if (put) {
                op.value.data = v;
                op.value.len = coord__catalog_hold__pack(&h, v);
        }
        txn.seq = seq;
        txn.ops = ops;
        txn.n_ops = 1;
        CU_ASSERT_EQUAL(lc_state_apply_txn(s, &txn), 0);
}

/* A client's hold is a requirement without an item (lifecycle-state.c note 7): the bound
 * stops at it, follows it forward only, and is free again once it is deleted. */
static void test_holds(void)
{
        struct lc_state *s = chain();
        struct lc_publication p = { 0 };

        CU_ASSERT_EQUAL(lc_state_frontier(s, 1, 10000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_frontier(s, T2, 10000, 0, false), 0);
        txn_hold(s, 8, 77, T2, 3000, true);
        CU_ASSERT_EQUAL(lc_state_n_holds(s), 1);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_bound(&p, T2));
        CU_ASSERT_EQUAL(find_bound(&p, T2)->bound, 3000);       /* not 9000 */
        lc_state_committed(s, &p);
        txn_hold(s, 9, 77, T2, 5000, true);
        txn_hold(s, 10, 77, T2, 4000, true);    /* a replayed older put: kept at 5000 */
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_bound(&p, T2));
        CU_ASSERT_EQUAL(find_bound(&p, T2)->bound, 5000);
        lc_state_committed(s, &p);
        txn_hold(s, 11, 77, T2, 0, false);
        CU_ASSERT_EQUAL(lc_state_n_holds(s), 0);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_bound(&p, T2));
        CU_ASSERT_EQUAL(find_bound(&p, T2)->bound, 9000);
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

/* A state with table tb, bound 100, and n materialized views mv0.. reading it, each with
 * its bound and its requirement on tb at 100; seq 1. */
static struct lc_state *views_on_table(uint64_t tb, uint64_t mv0, uint64_t n)
{
        const uint64_t in[1] = { tb };
        struct lc_state *s;

        CU_ASSERT_FATAL(lc_state_new(&s) == 0);
        put_item(s, tb, COORD__ITEM_KIND__ITEM_TABLE, NULL, 0, 0, 0);
        put_bound(s, tb, 100);
        for (uint64_t i = 0; i < n; i++) {
                put_item(s, mv0 + i, COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW, in, 1, 0, 100);
                put_bound(s, mv0 + i, 100);
                put_req(s, mv0 + i, tb, 100);
        }
        lc_state_set_seq(s, 1);
        return s;
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
        uint64_t seq = 2;

        s = views_on_table(TB, MV0, N);
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


/* ---- the object map and the load in bulk ---- */

static uint64_t rnd_state = 88172645463325252ull;

static uint64_t rnd(void)
{
        rnd_state ^= rnd_state << 13;
        rnd_state ^= rnd_state >> 7;
        rnd_state ^= rnd_state << 17;
        return rnd_state;
}

/* A generated catalog: items, bounds and requirements in key (= gid) order, as a scan
 * of the state column family gives them. */
struct gen {
        struct lc_item_rec *items;
        size_t n_items;
        struct lc_bound_rec *bounds;
        size_t n_bounds;
        struct lc_req_rec *reqs;
        size_t n_reqs;
        uint64_t max_gid;
};

static void gen_free(struct gen *g)
{
        free(g->items);
        free(g->bounds);
        free(g->reqs);
}

/* n objects from gid 1000 (with holes, as drops leave), a quarter each of tables,
 * views, materialized views and indexes; bounds on most (and on a few gids without an
 * item); 1-3 inputs per consumer, one of them a support table most read. */
static void gen_make(struct gen *g, size_t n)
{
        uint64_t gid = 1000;

        *g = (struct gen){ 0 };
        g->items = calloc(n, sizeof(*g->items));
        g->bounds = calloc(2 * n + n / 50 + 1, sizeof(*g->bounds));
        g->reqs = calloc(3 * n, sizeof(*g->reqs));
        CU_ASSERT_FATAL(g->items && g->bounds && g->reqs);
        for (size_t i = 0; i < n; i++, gid++) {
                static const Coord__ItemKind kinds[] = {
                        COORD__ITEM_KIND__ITEM_TABLE, COORD__ITEM_KIND__ITEM_VIEW,
                        COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW, COORD__ITEM_KIND__ITEM_INDEX,
                };
                Coord__ItemKind k = i == 0 ? COORD__ITEM_KIND__ITEM_TABLE : kinds[rnd() % 4];

                g->items[i] = (struct lc_item_rec){ gid, k, rnd() % 3 * 1000, 500 + rnd() % 1000 };
                if (rnd() % 4)
                        g->bounds[g->n_bounds++] = (struct lc_bound_rec){ gid, rnd() % 400 };
                if (i && (k == COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW ||
                          k == COORD__ITEM_KIND__ITEM_INDEX)) {
                        size_t m = 1 + rnd() % 3;
                        uint64_t in[3] = { 1000 };
                        for (size_t j = 1; j < m; j++)
                                in[j] = g->items[rnd() % i].gid;
                        /* a consumer's requirements in input order, each input once */
                        for (size_t j = 0; j < m; j++) {
                                bool dup = false;
                                for (size_t l = 0; l < j; l++)
                                        dup |= in[l] == in[j];
                                if (!dup)
                                        g->reqs[g->n_reqs++] = (struct lc_req_rec){ gid, in[j], 400 + rnd() % 100 };
                        }
                }
                if (rnd() % 8 == 0) {
                        /* A hole (a dropped object), sometimes with a bound of no item. */
                        gid++;
                        if (rnd() % 2)
                                g->bounds[g->n_bounds++] = (struct lc_bound_rec){ gid, rnd() % 400 };
                }
        }
        g->n_items = n;
        /* Bounds of no item (past the last one, in key order still). */
        for (size_t i = 0; i < n / 50; i++)
                g->bounds[g->n_bounds++] = (struct lc_bound_rec){ gid + 1 + i, rnd() % 400 };
        g->max_gid = gid + n / 50;
}

/* The reference: every record encoded and given to lc_state_load_record() in key
 * order ('b' < 'i' < 'r'), as the follower loaded before the load in bulk. */
static struct lc_state *gen_load_records(const struct gen *g)
{
        struct lc_state *s;

        CU_ASSERT_FATAL(lc_state_new(&s) == 0);
        for (size_t i = 0; i < g->n_bounds; i++)
                put_bound(s, g->bounds[i].gid, g->bounds[i].bound);
        for (size_t i = 0; i < g->n_items; i++)
                put_item(s, g->items[i].gid, g->items[i].kind, NULL, 0, g->items[i].retain_ms,
                         g->items[i].as_of);
        for (size_t i = 0; i < g->n_reqs; i++)
                put_req(s, g->reqs[i].consumer, g->reqs[i].input, g->reqs[i].frontier);
        return s;
}

static int bound_rec_cmp(const void *a, const void *b)
{
        const struct lc_bound_rec *x = a, *y = b;

        return x->gid < y->gid ? -1 : x->gid > y->gid;
}

static int req_rec_cmp(const void *a, const void *b)
{
        const struct lc_req_rec *x = a, *y = b;

        if (x->consumer != y->consumer)
                return x->consumer < y->consumer ? -1 : 1;
        return x->input < y->input ? -1 : x->input > y->input;
}

/* a and b hold the same catalog state and, given the same frontiers, propose the same
 * publication. */
static void assert_same_state(struct lc_state *a, struct lc_state *b, const struct gen *g)
{
        struct lc_publication pa = { 0 }, pb = { 0 };

        CU_ASSERT_TRUE(lc_state_map_ok(a));
        CU_ASSERT_TRUE(lc_state_map_ok(b));
        CU_ASSERT_EQUAL(lc_state_n_items(a), lc_state_n_items(b));
        CU_ASSERT_EQUAL(lc_state_n_requirements(a), lc_state_n_requirements(b));
        CU_ASSERT_EQUAL(lc_state_n_objects(a), lc_state_n_objects(b));
        for (uint64_t gid = 1000; gid <= g->max_gid; gid++) {
                uint64_t va = 0, vb = 0;
                int ra = lc_state_bound(a, gid, &va), rb = lc_state_bound(b, gid, &vb);
                CU_ASSERT_EQUAL(ra, rb);
                CU_ASSERT_EQUAL(va, vb);
        }
        for (size_t i = 0; i < g->n_reqs; i++) {
                uint64_t va = 0, vb = 0;
                CU_ASSERT_EQUAL(lc_state_requirement(a, g->reqs[i].consumer, g->reqs[i].input, &va), 0);
                CU_ASSERT_EQUAL(lc_state_requirement(b, g->reqs[i].consumer, g->reqs[i].input, &vb), 0);
                CU_ASSERT_EQUAL(va, vb);
        }
        /* The same frontiers, then one tick each: the same records. */
        CU_ASSERT_EQUAL(lc_state_frontier(a, 1, 9000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_frontier(b, 1, 9000, 0, false), 0);
        for (size_t i = 0; i < g->n_items; i++) {
                uint64_t up = 600 + (g->items[i].gid * 7919) % 5000;
                CU_ASSERT_EQUAL(lc_state_frontier(a, g->items[i].gid, up, 0, false), 0);
                CU_ASSERT_EQUAL(lc_state_frontier(b, g->items[i].gid, up, 0, false), 0);
        }
        CU_ASSERT_EQUAL_FATAL(lc_state_tick(a, &pa), 0);
        CU_ASSERT_EQUAL_FATAL(lc_state_tick(b, &pb), 0);
        CU_ASSERT(pa.n_bounds + pa.n_reqs > 0);
        CU_ASSERT_EQUAL_FATAL(pa.n_bounds, pb.n_bounds);
        CU_ASSERT_EQUAL_FATAL(pa.n_reqs, pb.n_reqs);
        qsort(pa.bounds, pa.n_bounds, sizeof(*pa.bounds), bound_rec_cmp);
        qsort(pb.bounds, pb.n_bounds, sizeof(*pb.bounds), bound_rec_cmp);
        qsort(pa.reqs, pa.n_reqs, sizeof(*pa.reqs), req_rec_cmp);
        qsort(pb.reqs, pb.n_reqs, sizeof(*pb.reqs), req_rec_cmp);
        CU_ASSERT_EQUAL(memcmp(pa.bounds, pb.bounds, pa.n_bounds * sizeof(*pa.bounds)), 0);
        CU_ASSERT_EQUAL(memcmp(pa.reqs, pb.reqs, pa.n_reqs * sizeof(*pa.reqs)), 0);
        lc_publication_done(&pa);
        lc_publication_done(&pb);
}

/* The load in bulk at a size that rehashed the map 10 times before: the same state as
 * the records one by one, the map sized once (and no larger than needed), nothing
 * lost; records out of order (not from a scan) too. */
static void test_load_batch(void)
{
        struct gen g;
        struct lc_state *ref, *s, *u;
        struct lc_load_batch b;
        size_t want = 64;

        gen_make(&g, 40000);
        ref = gen_load_records(&g);
        CU_ASSERT_FATAL(lc_state_new(&s) == 0);
        b = (struct lc_load_batch){ g.items, g.n_items, g.bounds, g.n_bounds, g.reqs, g.n_reqs };
        CU_ASSERT_EQUAL_FATAL(lc_state_load_batch(s, &b), 0);
        /* Pre-sized: the smallest power of two >= 2 x the items (the bound-only
         * objects fit in the slack). */
        while (want < 2 * g.n_items)
                want *= 2;
        CU_ASSERT_EQUAL(lc_state_map_slots(s), want);
        CU_ASSERT_EQUAL(lc_state_map_rehashes(s), 1);          /* sized once */
        CU_ASSERT(lc_state_map_rehashes(ref) > 5);             /* one by one: grew */
        CU_ASSERT_EQUAL(lc_state_n_items(s), g.n_items);
        CU_ASSERT_EQUAL(lc_state_n_requirements(s), g.n_reqs);

        /* Shuffled: the lookups cannot follow the previous record's position. */
        for (size_t i = g.n_items; i > 1; i--) {
                size_t j = rnd() % i;
                struct lc_item_rec t = g.items[i - 1];
                g.items[i - 1] = g.items[j];
                g.items[j] = t;
        }
        for (size_t i = g.n_reqs; i > 1; i--) {
                size_t j = rnd() % i;
                struct lc_req_rec t = g.reqs[i - 1];
                g.reqs[i - 1] = g.reqs[j];
                g.reqs[j] = t;
        }
        CU_ASSERT_FATAL(lc_state_new(&u) == 0);
        CU_ASSERT_EQUAL_FATAL(lc_state_load_batch(u, &b), 0);

        assert_same_state(ref, s, &g);
        lc_state_free(ref);
        ref = gen_load_records(&g);
        assert_same_state(ref, u, &g);
        lc_state_free(ref);
        lc_state_free(s);
        lc_state_free(u);
        gen_free(&g);
}

/* A reload onto a state that kept objects (frontiers seen) gives the same state as a
 * load into a fresh one: the map makes room for the kept ones as well. */
static void test_load_batch_reload(void)
{
        struct gen g;
        struct lc_state *ref, *s;
        struct lc_load_batch b;

        gen_make(&g, 5000);
        b = (struct lc_load_batch){ g.items, g.n_items, g.bounds, g.n_bounds, g.reqs, g.n_reqs };
        ref = gen_load_records(&g);
        CU_ASSERT_FATAL(lc_state_new(&s) == 0);
        /* Frontiers of objects of the catalog and of some it does not know. */
        for (uint64_t gid = 1000; gid < g.max_gid + 3000; gid += 3)
                CU_ASSERT_EQUAL(lc_state_frontier(s, gid, 100, 0, false), 0);
        CU_ASSERT_EQUAL_FATAL(lc_state_load_batch(s, &b), 0);
        lc_state_reset_catalog(s);
        CU_ASSERT_TRUE(lc_state_map_ok(s));
        CU_ASSERT_EQUAL(lc_state_n_items(s), 0);
        CU_ASSERT_EQUAL_FATAL(lc_state_load_batch(s, &b), 0);
        CU_ASSERT_TRUE(lc_state_map_ok(s));
        CU_ASSERT_EQUAL(lc_state_n_items(s), lc_state_n_items(ref));
        CU_ASSERT_EQUAL(lc_state_n_requirements(s), lc_state_n_requirements(ref));
        for (size_t i = 0; i < g.n_bounds; i++) {
                uint64_t va = 0, vb = 0;
                CU_ASSERT_EQUAL(lc_state_bound(ref, g.bounds[i].gid, &va), 0);
                CU_ASSERT_EQUAL(lc_state_bound(s, g.bounds[i].gid, &vb), 0);
                CU_ASSERT_EQUAL(va, vb);
        }
        lc_state_free(ref);
        lc_state_free(s);
        gen_free(&g);
}

/* One log entry deleting the items (and bounds) of gids[0..n). */
static void delete_items(struct lc_state *s, const uint64_t *gids, size_t n)
{
        Coord__CatalogTxn txn = COORD__CATALOG_TXN__INIT;
        Coord__CatalogOp *ops = calloc(2 * n, sizeof(*ops)), **opp = calloc(2 * n, sizeof(*opp));
        uint8_t (*keys)[9] = calloc(2 * n, sizeof(*keys));

        CU_ASSERT_FATAL(ops && opp && keys);
        for (size_t i = 0; i < 2 * n; i++) {
                coord__catalog_op__init(&ops[i]);
                key9(keys[i], i % 2 ? 'b' : 'i', gids[i / 2]);
                ops[i].cf = COORD__CATALOG_OP__CF__STATE;
                ops[i].kind = COORD__CATALOG_OP__KIND__DELETE;
                ops[i].key.data = keys[i];
                ops[i].key.len = 9;
                opp[i] = &ops[i];
        }
        txn.seq = lc_state_seq(s) + 1;
        txn.ops = opp;
        txn.n_ops = 2 * n;
        CU_ASSERT_EQUAL(lc_state_apply_txn(s, &txn), 0);
        free(ops);
        free(opp);
        free(keys);
}

/* The map through growth and removals (backward-shift deletion moves entries of long
 * probe runs): consistent after each step, and every object left still found. */
static void test_map_removals(void)
{
        struct lc_state *s;
        struct lc_publication p = { 0 };
        enum { N = 20000 };
        uint64_t *gone = calloc(N, sizeof(*gone));
        bool *alive = calloc(N, sizeof(*alive));
        size_t n_gone = 0;

        CU_ASSERT_FATAL(gone && alive);
        CU_ASSERT_FATAL(lc_state_new(&s) == 0);
        /* Scattered gids (as after much churn) collide more than dense ones. */
        for (size_t i = 0; i < N; i++) {
                put_item(s, 1000 + i * 4099, COORD__ITEM_KIND__ITEM_VIEW, NULL, 0, 0, 0);
                put_bound(s, 1000 + i * 4099, i);
                alive[i] = true;
        }
        CU_ASSERT_TRUE(lc_state_map_ok(s));
        CU_ASSERT_EQUAL(lc_state_n_objects(s), N);
        /* Once ticked, nothing is dirty: removals really free objects. */
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        for (int round = 0; round < 4; round++) {
                n_gone = 0;
                for (size_t i = 0; i < N; i++)
                        if (alive[i] && rnd() % 3 == 0) {
                                gone[n_gone++] = 1000 + i * 4099;
                                alive[i] = false;
                        }
                delete_items(s, gone, n_gone);
                CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
                CU_ASSERT_TRUE(lc_state_map_ok(s));
        }
        n_gone = 0;
        for (size_t i = 0; i < N; i++) {
                uint64_t v = UINT64_MAX;
                int r = lc_state_bound(s, 1000 + i * 4099, &v);
                if (alive[i]) {
                        CU_ASSERT_EQUAL(r, 0);
                        CU_ASSERT_EQUAL(v, i);
                        n_gone++;       /* counts the living here */
                } else
                        CU_ASSERT_EQUAL(r, -ENOENT);
        }
        CU_ASSERT_EQUAL(lc_state_n_objects(s), n_gone);
        CU_ASSERT_EQUAL(lc_state_n_items(s), n_gone);
        lc_publication_done(&p);
        lc_state_free(s);
        free(gone);
        free(alive);
}


/* Removals while the map grows in steps (oamap.c note 1): objects not moved yet are
 * deleted from the old array, the rest from the new; every living one is still found,
 * before and after the grow finishes. */
static void test_map_stepped(void)
{
        struct lc_state *s;
        struct lc_publication p = { 0 };
        enum { N = 2100 };      /* past 2048: a 4096-slot map grows in steps */
        static uint64_t gone[N];
        static bool alive[2 * N];
        size_t n_gone = 0, live = 0, unmoved;

        CU_ASSERT_FATAL(lc_state_new(&s) == 0);
        for (size_t i = 0; i < N; i++, live++) {
                put_item(s, 1000 + i * 4099, COORD__ITEM_KIND__ITEM_VIEW, NULL, 0, 0, 0);
                put_bound(s, 1000 + i * 4099, i);
                alive[i] = true;
        }
        unmoved = lc_state_map_unmoved(s);
        CU_ASSERT_FATAL(unmoved > 1000);                /* the grow is under way */
        CU_ASSERT_TRUE(lc_state_map_ok(s));
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);       /* nothing dirty: removals free */
        for (size_t i = 0; i < N; i += 2, live--) {
                gone[n_gone++] = 1000 + i * 4099;
                alive[i] = false;
        }
        delete_items(s, gone, n_gone);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT(lc_state_map_unmoved(s) > 0);
        CU_ASSERT(lc_state_map_unmoved(s) < unmoved / 2 + 100);  /* half went from old */
        CU_ASSERT_TRUE(lc_state_map_ok(s));
        for (int round = 0; round < 2; round++) {
                size_t n = round == 0 ? N : 2 * N;

                for (size_t i = 0; i < n; i++) {
                        uint64_t v = UINT64_MAX;
                        int r = lc_state_bound(s, 1000 + i * 4099, &v);

                        CU_ASSERT_EQUAL(r == 0, alive[i]);
                        CU_ASSERT(!alive[i] || v == i);
                }
                CU_ASSERT_EQUAL(lc_state_n_objects(s), live);
                if (round == 1)
                        break;
                /* More objects: their steps move the rest of old. */
                for (size_t i = N; i < 2 * N; i++, live++) {
                        put_item(s, 1000 + i * 4099, COORD__ITEM_KIND__ITEM_VIEW, NULL, 0, 0, 0);
                        put_bound(s, 1000 + i * 4099, i);
                        alive[i] = true;
                }
                CU_ASSERT_EQUAL(lc_state_map_unmoved(s), 0);
                CU_ASSERT_TRUE(lc_state_map_ok(s));
        }
        lc_publication_done(&p);
        lc_state_free(s);
}

/* ---- tables at rest (lifecycle-state.c note 8) ---- */

/* One tick, its proposal committed (when there is one); the tick's work. */
static size_t tick_ok(struct lc_state *s, struct lc_publication *p)
{
        CU_ASSERT_EQUAL_FATAL(lc_state_tick(s, p), 0);
        if (p->n_bounds || p->n_reqs)
                lc_state_committed(s, p);
        return p->touched;
}

/* gid's bound in p, UINT64_MAX when p has none. */
static uint64_t bound_in(const struct lc_publication *p, uint64_t gid)
{
        const struct lc_bound_rec *b = find_bound(p, gid);

        return b ? b->bound : UINT64_MAX;
}

/* 10,000 tables, a few written at each tick, T moving at every tick: once the first
 * proposals are committed, a tick looks at the tables written within the last window
 * (and those about to rest), not at all 10,000.  The walk of every table looked at
 * 10,000 at every tick. */
static void test_rest_work(void)
{
        enum { N = 10000, W = 5, TICKS = 60, STEP = 100 };
        /* written within a window: they are moving; and those just come to rest */
        const size_t limit = 2 * W * (LC_DEFAULT_WINDOW_MS / STEP + 2);
        struct lc_state *s;
        struct lc_publication p = { 0 };
        uint64_t t = 10000;
        size_t first, most = 0;

        CU_ASSERT_FATAL(lc_state_new(&s) == 0);
        for (uint64_t g = 1000; g < 1000 + N; g++) {
                put_item(s, g, COORD__ITEM_KIND__ITEM_TABLE, NULL, 0, 0, 0);
                CU_ASSERT_EQUAL(lc_state_frontier(s, g, 5000 + g % 3000, 0, false), 0);
        }
        CU_ASSERT_EQUAL(lc_state_frontier(s, 1, t, 0, false), 0);
        first = tick_ok(s, &p);                 /* every table: all are dirty */
        CU_ASSERT(first >= N);
        CU_ASSERT_EQUAL(p.n_bounds, N);
        for (unsigned k = 0; k < TICKS; k++) {
                size_t touched;

                t += STEP;
                CU_ASSERT_EQUAL(lc_state_frontier(s, 1, t, 0, false), 0);
                for (unsigned w = 0; w < W; w++)
                        CU_ASSERT_EQUAL(lc_state_frontier(s, 1000 + (k * W + w) * 7 % N, t, 0,
                                                          false), 0);
                touched = tick_ok(s, &p);
                /* Written tables publish while the policy holds them, idle ones never. */
                CU_ASSERT(p.n_bounds > 0 && p.n_bounds <= W * (LC_DEFAULT_WINDOW_MS / STEP + 1));
                if (k == 0) {
                        /* Their first proposals were committed: this tick finds them at
                         * rest.  From the next one on they are not looked at. */
                        CU_ASSERT(touched >= N);
                        continue;
                }
                most = lc_max(most, touched);
        }
        CU_ASSERT(most <= limit);
        lc_publication_done(&p);
        lc_state_free(s);
}

/* The minimum of 2,000 views' requirements on one table, kept as they move (min_moved()
 * in lifecycle-state.c): at every tick the table's bound is the minimum a walk of every
 * view finds, but the walk runs only when the minimum's last holder leaves it (moved up
 * or dropped), not at every tick where one of them moved. */
static void test_min_incremental(void)
{
        enum { TB = 1000, MV0 = 3000, N = 2000, ROUNDS = 300 };
        static uint64_t req[N];
        static bool gone[N];
        struct lc_state *s;
        struct lc_publication p = { 0 };
        uint64_t seq = 2, rnd = 99, bound = 0, walks0, holder_left = 0;

        s = views_on_table(TB, MV0, N);
        CU_ASSERT_EQUAL(lc_state_frontier(s, 1, 90000, 0, false), 0);    /* T */
        CU_ASSERT_EQUAL(lc_state_frontier(s, TB, 90000, 0, false), 0);
        /* Views 0-4 share the minimum; the others above it, distinct. */
        for (uint64_t i = 0; i < N; i++) {
                req[i] = i < 5 ? 6000 : 6000 + 10 * i;
                CU_ASSERT_EQUAL(lc_state_frontier(s, MV0 + i, req[i] + 1, 0, false), 0);
        }
        (void)tick_ok(s, &p);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_bound(&p, TB));
        bound = find_bound(&p, TB)->bound;
        CU_ASSERT_EQUAL(bound, 6000);
        walks0 = lc_state_min_walks(s);
        for (unsigned k = 0; k < ROUNDS; k++) {
                uint64_t i, min = UINT64_MAX, holder = 0;
                const struct lc_bound_rec *b;

                for (uint64_t j = 0; j < N; j++)
                        if (!gone[j] && req[j] < min)
                                min = req[j], holder = j;
                rnd = rnd * 6364136223846793005ULL + 1442695040888963407ULL;
                /* Mostly a view away from the minimum; every 25th round its holder. */
                i = k % 25 == 24 ? holder : (rnd >> 33) % N;
                if (gone[i])
                        continue;
                if (req[i] == min)
                        holder_left++;
                if (k % 50 == 49) {
                        txn_apply_delete_req(s, seq++, MV0 + i, TB);
                        gone[i] = true;
                } else {
                        req[i] += 1 + (rnd >> 40) % 500;
                        CU_ASSERT_EQUAL(lc_state_frontier(s, MV0 + i, req[i] + 1, 0, false), 0);
                }
                (void)tick_ok(s, &p);
                min = UINT64_MAX;
                for (uint64_t j = 0; j < N; j++)
                        if (!gone[j] && req[j] < min)
                                min = req[j];
                if ((b = find_bound(&p, TB)))
                        bound = b->bound;
                CU_ASSERT_EQUAL(bound, min);    /* what a walk of every view finds */
        }
        printf("\n    %llu walks of 2,000 consumers in %u rounds, the minimum's holders left "
               "it %llu times\n    ", (unsigned long long)(lc_state_min_walks(s) - walks0),
               ROUNDS, (unsigned long long)holder_left);
        CU_ASSERT(lc_state_min_walks(s) - walks0 <= holder_left);
        CU_ASSERT(lc_state_min_walks(s) - walks0 < ROUNDS / 4);
        lc_publication_done(&p);
        lc_state_free(s);
}

/* lifecycle-state.c note 9: 3,000 new tables, a tick limit of 256: each tick looks at
 * a few hundred objects, out->left counts down, and ticked (and committed) until none
 * is left, the state has the bounds one tick without a limit proposes. */
static void test_tick_limit(void)
{
        enum { N = 3000, LIMIT = 256 };
        struct lc_state *a, *b;
        struct lc_publication p = { 0 }, all_a = { 0 }, all_b = { 0 };
        size_t ticks = 0, bounds = 0, most = 0, left = N;

        CU_ASSERT_FATAL(lc_state_new(&a) == 0 && lc_state_new(&b) == 0);
        lc_state_set_tick_limit(a, LIMIT);
        for (int k = 0; k < 2; k++) {
                struct lc_state *s = k ? b : a;

                for (uint64_t g = 1000; g < 1000 + N; g++) {
                        put_item(s, g, COORD__ITEM_KIND__ITEM_TABLE, NULL, 0, 0, 0);
                        CU_ASSERT_EQUAL(lc_state_frontier(s, g, 5000 + g % 3000, 0, false), 0);
                }
                CU_ASSERT_EQUAL(lc_state_frontier(s, 1, 10000, 0, false), 0);
        }
        (void)tick_ok(b, &p);
        CU_ASSERT_EQUAL(p.n_bounds, N);
        CU_ASSERT_EQUAL(p.left, 0);
        while (left > 0 && ticks < 100) {
                size_t touched = tick_ok(a, &p);

                ticks++;
                bounds += p.n_bounds;
                most = lc_max(most, touched);
                CU_ASSERT(p.left < left);       /* it goes down */
                left = p.left;
        }
        CU_ASSERT_EQUAL(left, 0);
        CU_ASSERT(ticks >= N / LIMIT);
        CU_ASSERT(most <= 3 * LIMIT);
        CU_ASSERT_EQUAL(bounds, N);
        CU_ASSERT_EQUAL(lc_state_all_bounds(a, &all_a), 0);
        CU_ASSERT_EQUAL(lc_state_all_bounds(b, &all_b), 0);
        CU_ASSERT_EQUAL(all_a.n_bounds, all_b.n_bounds);
        for (size_t i = 0; i < all_b.n_bounds; i++) {
                bool same = false;

                for (size_t j = 0; j < all_a.n_bounds && !same; j++)
                        same = all_a.bounds[j].gid == all_b.bounds[i].gid &&
                               all_a.bounds[j].bound == all_b.bounds[i].bound;
                CU_ASSERT(same);
        }
        lc_publication_done(&p);
        lc_publication_done(&all_a);
        lc_publication_done(&all_b);
        lc_state_free(a);
        lc_state_free(b);
}

/* One log entry deleting gid's bound ('b'). */
static void txn_delete_bound(struct lc_state *s, uint64_t gid)
{
        Coord__CatalogTxn txn = COORD__CATALOG_TXN__INIT;
        Coord__CatalogOp op = COORD__CATALOG_OP__INIT, *ops[1] = { &op };
        uint8_t k[9];

        key9(k, 'b', gid);
        op.kind = COORD__CATALOG_OP__KIND__DELETE;
        op.key = (ProtobufCBinaryData){ 9, k };
        txn.seq = lc_state_seq(s) + 1;
        txn.ops = ops;
        txn.n_ops = 1;
        CU_ASSERT_EQUAL(lc_state_apply_txn(s, &txn), 0);
}

/* T moves to t; one tick, committed; its work. */
static size_t tick_at(struct lc_state *s, struct lc_publication *p, uint64_t t)
{
        CU_ASSERT_EQUAL(lc_state_frontier(s, 1, t, 0, false), 0);
        return tick_ok(s, p);
}

/* A table written, then idle: T moves its bound up to its last write, then it publishes
 * nothing and is not looked at.  A hold deleted, a requirement moved, RETAIN HISTORY
 * put again, its bound deleted: it moves again with T.  A proposal that brings a table
 * to rest and is left unanswered is proposed again, as the walk of every table did. */
static void test_rest_wake(void)
{
        enum { A = 1000, B = 1001, C = 1002, D = 1003, E = 1004, MVC = 2000 };
        static const uint64_t mv_in[] = { C };
        struct lc_state *s;
        struct lc_publication p = { 0 };
        uint64_t t = 20000;

        CU_ASSERT_FATAL(lc_state_new(&s) == 0);
        for (uint64_t g = A; g <= E; g++)
                put_item(s, g, COORD__ITEM_KIND__ITEM_TABLE, NULL, 0, g == D ? 5000 : 0, 0);
        put_item(s, MVC, COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW, mv_in, 1, 0, 5000);
        put_req(s, MVC, C, 5000);
        put_bound(s, MVC, 5000);
        lc_state_set_seq(s, 1);
        for (uint64_t g = A; g <= E; g++)
                CU_ASSERT_EQUAL(lc_state_frontier(s, g, 100, 0, false), 0);
        tick_at(s, &p, t);
        CU_ASSERT_EQUAL(p.n_bounds, 5);         /* all at their last write, 99 */
        t += 100;
        CU_ASSERT_EQUAL(tick_at(s, &p, t), 5);  /* committed: found at rest */

        /* A written at t: its bound follows T up to its last write, then rests. */
        CU_ASSERT_EQUAL(lc_state_frontier(s, A, t, 0, false), 0);
        CU_ASSERT_EQUAL(tick_ok(s, &p), 2);     /* dirty, and touched */
        CU_ASSERT_EQUAL(bound_in(&p, A), t - 1000);
        for (uint64_t k = 1; k <= 5; k++) {
                CU_ASSERT_EQUAL(tick_at(s, &p, t + 200 * k), 1);
                CU_ASSERT_EQUAL(bound_in(&p, A), lc_min(t - 1000 + 200 * k, t - 1));
        }
        t += 1000;
        for (int k = 0; k < 4; k++) {
                t += 100;
                /* The first tick finds it at rest (its last proposal committed); then
                 * nothing is looked at. */
                CU_ASSERT_EQUAL(tick_at(s, &p, t), k == 0 ? 1 : 0);
                CU_ASSERT_EQUAL(p.n_bounds, 0);
        }

        /* B written, held by a client at 3000: at rest there. */
        txn_hold(s, lc_state_seq(s) + 1, 77, B, 3000, true);
        CU_ASSERT_EQUAL(lc_state_frontier(s, B, t, 0, false), 0);
        tick_ok(s, &p);
        CU_ASSERT_EQUAL(bound_in(&p, B), 3000);
        for (uint64_t k = 1; k <= 3; k++) {
                CU_ASSERT_EQUAL(tick_at(s, &p, t + 100 * k), k == 1 ? 1 : 0);
                CU_ASSERT_EQUAL(p.n_bounds, 0);
        }
        /* The hold goes: B follows T again up to its last write. */
        txn_hold(s, lc_state_seq(s) + 1, 77, B, 0, false);
        tick_at(s, &p, t + 400);
        CU_ASSERT_EQUAL(bound_in(&p, B), t - 600);
        for (uint64_t k = 5; k <= 10; k++) {
                CU_ASSERT_EQUAL(tick_at(s, &p, t + 100 * k), 1);
                CU_ASSERT_EQUAL(bound_in(&p, B), lc_min(t + 100 * k - 1000, t - 1));
        }
        CU_ASSERT_EQUAL(tick_at(s, &p, t + 1100), 1);
        CU_ASSERT_EQUAL(p.n_bounds, 0);
        CU_ASSERT_EQUAL(tick_at(s, &p, t + 1200), 0);
        t += 1300;

        /* C written, required by MVC at 5000: at rest there.  MVC catches up: R(MVC, C)
         * moves to C's last write, and C follows T up to it. */
        CU_ASSERT_EQUAL(lc_state_frontier(s, C, t, 0, false), 0);
        tick_at(s, &p, t);
        CU_ASSERT_EQUAL(bound_in(&p, C), 5000);
        for (uint64_t k = 1; k <= 2; k++) {
                CU_ASSERT_EQUAL(tick_at(s, &p, t + 100 * k), k == 1 ? 1 : 0);
                CU_ASSERT_EQUAL(p.n_bounds, 0);
        }
        CU_ASSERT_EQUAL(lc_state_frontier(s, MVC, t + 50000, 0, false), 0);
        tick_at(s, &p, t + 300);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_req(&p, MVC, C));
        CU_ASSERT_EQUAL(find_req(&p, MVC, C)->frontier, t - 1);
        CU_ASSERT_EQUAL(bound_in(&p, C), t - 700);
        for (uint64_t k = 4; k <= 10; k++) {
                CU_ASSERT_EQUAL(tick_at(s, &p, t + 100 * k), 1);
                CU_ASSERT_EQUAL(bound_in(&p, C), lc_min(t + 100 * k - 1000, t - 1));
        }
        t += 1100;

        /* RETAIN HISTORY put again on A, at rest at its last write: nothing can move it
         * (no window takes a bound past the last write), but its next write follows the
         * new window. */
        put_item(s, A, COORD__ITEM_KIND__ITEM_TABLE, NULL, 0, 3000, 0);
        tick_at(s, &p, t);
        CU_ASSERT_EQUAL(p.n_bounds, 0);
        CU_ASSERT_EQUAL(lc_state_frontier(s, A, t, 0, false), 0);
        tick_ok(s, &p);
        CU_ASSERT_EQUAL(bound_in(&p, A), t - 3000);
        for (uint64_t k = 1; k <= 6; k++) {
                CU_ASSERT_EQUAL(tick_at(s, &p, t + 500 * k), 1);
                CU_ASSERT_EQUAL(bound_in(&p, A), lc_min(t - 3000 + 500 * k, t - 1));
        }
        t += 3500;

        /* D, RETAIN HISTORY 5 s, written: the policy holds it 5 s behind T; the window
         * back to the default moves it at the next tick. */
        CU_ASSERT_EQUAL(lc_state_frontier(s, D, t, 0, false), 0);
        tick_at(s, &p, t);
        CU_ASSERT_EQUAL(bound_in(&p, D), t - 5000);
        tick_at(s, &p, t + 1000);
        CU_ASSERT_EQUAL(bound_in(&p, D), t - 4000);
        put_item(s, D, COORD__ITEM_KIND__ITEM_TABLE, NULL, 0, 0, 0);
        tick_ok(s, &p);
        CU_ASSERT_EQUAL(bound_in(&p, D), t - 1);
        t += 1000;

        /* E's bound deleted (no catalog path does so for a live table; the walk of every
         * table proposed it again at the next move of T): it is looked at again. */
        CU_ASSERT_EQUAL(lc_state_bound(s, E, &(uint64_t){ 0 }), 0);
        txn_delete_bound(s, E);
        tick_at(s, &p, t + 100);
        CU_ASSERT_EQUAL(bound_in(&p, E), 99);

        /* E written; the proposal that brings it to its last write is not answered: the
         * next tick where T moves proposes it again (it is not the bound until the Ok),
         * as does the one after an abandon.  Committed, it rests. */
        CU_ASSERT_EQUAL(lc_state_frontier(s, E, t + 100, 0, false), 0);
        tick_ok(s, &p);
        CU_ASSERT_EQUAL(bound_in(&p, E), t - 900);
        CU_ASSERT_EQUAL(lc_state_frontier(s, 1, t + 2000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_EQUAL(bound_in(&p, E), t + 99);
        CU_ASSERT_EQUAL(lc_state_frontier(s, 1, t + 2100, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p), 0);
        CU_ASSERT_EQUAL(bound_in(&p, E), t + 99);
        lc_state_abandon(s);
        tick_ok(s, &p);
        CU_ASSERT_EQUAL(bound_in(&p, E), t + 99);
        CU_ASSERT_EQUAL(p.n_bounds, 1);
        CU_ASSERT_EQUAL(tick_at(s, &p, t + 2200), 1);
        CU_ASSERT_EQUAL(p.n_bounds, 0);
        CU_ASSERT_EQUAL(tick_at(s, &p, t + 2300), 0);
        lc_publication_done(&p);
        lc_state_free(s);
}

/* An Ok of an older proposal (two ticks without an answer in between, which the
 * follower never does) raises a requirement past what the last tick judged a table at
 * rest on: it is looked at again when T moves, as the walk of every table did. */
static void test_rest_stale_ok(void)
{
        enum { X = 1000, MVX = 2000 };
        static const uint64_t in[] = { X };
        struct lc_publication p1 = { 0 }, p2 = { 0 };
        Coord__CatalogTxn txn = COORD__CATALOG_TXN__INIT;
        Coord__CatalogOp op = COORD__CATALOG_OP__INIT, *ops[1] = { &op };
        struct lc_state *s;
        uint8_t k[17];

        CU_ASSERT_FATAL(lc_state_new(&s) == 0);
        put_item(s, X, COORD__ITEM_KIND__ITEM_TABLE, NULL, 0, 0, 0);
        put_item(s, MVX, COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW, in, 1, 0, 5000);
        put_req(s, MVX, X, 5000);
        put_bound(s, X, 5000);
        put_bound(s, MVX, 5000);
        lc_state_set_seq(s, 1);
        CU_ASSERT_EQUAL(lc_state_frontier(s, X, 20000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_frontier(s, 1, 20000, 0, false), 0);
        tick_ok(s, &p1);
        CU_ASSERT_EQUAL(p1.n_bounds, 0);        /* held by R(MVX, X) = 5000 */
        /* MVX catches up: R(MVX, X) = 19500, X held by the policy at 19000.  No answer. */
        CU_ASSERT_EQUAL(lc_state_frontier(s, MVX, 19501, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p1), 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(find_req(&p1, MVX, X));
        CU_ASSERT_EQUAL(find_req(&p1, MVX, X)->frontier, 19500);
        CU_ASSERT_EQUAL(bound_in(&p1, X), 19000);
        /* The requirement deleted and put again at 5000: X is at rest at 5000. */
        req_key(k, MVX, X);
        op.kind = COORD__CATALOG_OP__KIND__DELETE;
        op.key = (ProtobufCBinaryData){ 17, k };
        txn.seq = lc_state_seq(s) + 1;
        txn.ops = ops;
        txn.n_ops = 1;
        CU_ASSERT_EQUAL(lc_state_apply_txn(s, &txn), 0);
        put_req(s, MVX, X, 5000);
        CU_ASSERT_EQUAL(lc_state_tick(s, &p2), 0);
        CU_ASSERT_EQUAL(p2.n_bounds + p2.n_reqs, 0);
        /* The Ok of the first: R(MVX, X) = 19500, X's bound 19000, below it. */
        lc_state_committed(s, &p1);
        tick_at(s, &p2, 20300);
        CU_ASSERT_EQUAL(bound_in(&p2, X), 19300);
        lc_publication_done(&p1);
        lc_publication_done(&p2);
        lc_state_free(s);
}

/* ---- tables at rest against a model of the rules (lifecycle-state.c note 8) ---- */

/* A model of what a publication must hold, recomputed at every tick from the committed
 * state and every frontier, for every object: the requirements R(mv, x) of lifecycle-
 * bounds.h and the bound rule over them and the holds.  The state recomputes only what
 * a change can have moved (dirty objects, tables not at rest): as long as each non-empty
 * proposal is answered (committed or abandoned) before the next tick, as the follower
 * does, the two must agree record for record -- whatever is not recomputed must have
 * nothing to publish. */
enum { RM_NB = 4, RM_NT = 24, RM_NPLAIN = 8, RM_NM = 6, RM_NH = 12 };

struct rm_obj {
        uint64_t gid;
        bool mv, item, has_bound, has_upper;
        uint64_t retain, as_of, bound, upper;
        size_t n_in;                    /* an MV: its inputs, committed requirements */
        uint64_t in[2], req[2];
};

struct rm_hold {
        uint64_t id, input, frontier;
        bool live;
};

struct rm {
        struct lc_state *s;
        struct rm_obj o[RM_NB + RM_NT + RM_NM];
        struct rm_hold h[RM_NH];
        uint64_t t, next_hold;
        size_t ticks, records;
};

#define RM_N (RM_NB + RM_NT + RM_NM)
#define RM_TABLE(i) (&m->o[RM_NB + (i)])
#define RM_MV(j) (&m->o[RM_NB + RM_NT + (j)])

static struct rm_obj *rm_find(struct rm *m, uint64_t gid)
{
        for (size_t i = 0; i < RM_N; i++)
                if (m->o[i].gid == gid)
                        return &m->o[i];
        return NULL;
}

/* content_last() of the state (lifecycle-state.c note 4). */
static uint64_t rm_last(struct rm *m, const struct rm_obj *o)
{
        uint64_t v;

        if (!(o->mv && o->item))
                return o->has_upper ? (o->upper ? o->upper - 1 : 0) : UINT64_MAX;
        v = o->as_of;
        for (size_t i = 0; i < o->n_in && v != UINT64_MAX; i++)
                v = lc_max(v, rm_last(m, rm_find(m, o->in[i])));
        return v;
}

/* The records a tick must propose. */
static void rm_expect(struct rm *m, struct lc_publication *e)
{
        uint64_t next[RM_NM][2];

        e->n_bounds = e->n_reqs = 0;
        for (size_t j = 0; j < RM_NM; j++) {
                struct rm_obj *c = RM_MV(j);

                for (size_t i = 0; i < c->n_in; i++) {
                        next[j][i] = c->req[i];
                        if (c->item && c->has_upper)
                                next[j][i] = lc_mv_requirement(c->req[i], c->upper,
                                                               rm_last(m, rm_find(m, c->in[i])));
                        if (next[j][i] == c->req[i])
                                continue;
                        CU_ASSERT_FATAL(GROW_ARRAY(e->reqs, e->cap_reqs, e->n_reqs + 1) == 0);
                        e->reqs[e->n_reqs++] = (struct lc_req_rec){ c->gid, c->in[i], next[j][i] };
                }
        }
        for (size_t k = 0; k < RM_N; k++) {
                struct rm_obj *x = &m->o[k];
                uint64_t upper, min_req = UINT64_MAX, old, nb;

                if (!x->item || !x->has_upper)
                        continue;
                upper = x->mv ? x->upper : lc_table_upper(x->upper, m->t);
                for (size_t j = 0; j < RM_NM; j++)
                        for (size_t i = 0; i < RM_MV(j)->n_in; i++)
                                if (RM_MV(j)->in[i] == x->gid)
                                        min_req = lc_min(min_req, next[j][i]);
                for (size_t i = 0; i < RM_NH; i++)
                        if (m->h[i].live && m->h[i].input == x->gid)
                                min_req = lc_min(min_req, m->h[i].frontier);
                old = x->has_bound ? x->bound : 0;
                nb = lc_bound(old, upper, lc_window(x->retain), min_req, rm_last(m, x));
                if (nb == old)
                        continue;
                CU_ASSERT_FATAL(GROW_ARRAY(e->bounds, e->cap_bounds, e->n_bounds + 1) == 0);
                e->bounds[e->n_bounds++] = (struct lc_bound_rec){ x->gid, nb };
        }
}

/* The Ok of p, in the model (lc_state_committed()). */
static void rm_commit(struct rm *m, const struct lc_publication *p)
{
        for (size_t i = 0; i < p->n_bounds; i++) {
                struct rm_obj *o = rm_find(m, p->bounds[i].gid);

                o->bound = o->has_bound ? lc_max(o->bound, p->bounds[i].bound)
                                        : p->bounds[i].bound;
                o->has_bound = true;
        }
        for (size_t i = 0; i < p->n_reqs; i++) {
                struct rm_obj *c = rm_find(m, p->reqs[i].consumer);

                for (size_t j = 0; j < c->n_in; j++)
                        if (c->in[j] == p->reqs[i].input)
                                c->req[j] = lc_max(c->req[j], p->reqs[i].frontier);
        }
}

/* p holds exactly e's records (in any order); else say where they differ. */
static bool rm_same(struct lc_publication *p, struct lc_publication *e, unsigned step)
{
        bool same = p->n_bounds == e->n_bounds && p->n_reqs == e->n_reqs;

        qsort(p->bounds, p->n_bounds, sizeof(*p->bounds), bound_rec_cmp);
        qsort(e->bounds, e->n_bounds, sizeof(*e->bounds), bound_rec_cmp);
        qsort(p->reqs, p->n_reqs, sizeof(*p->reqs), req_rec_cmp);
        qsort(e->reqs, e->n_reqs, sizeof(*e->reqs), req_rec_cmp);
        same = same && (!p->n_bounds ||
                        !memcmp(p->bounds, e->bounds, p->n_bounds * sizeof(*p->bounds)));
        same = same && (!p->n_reqs || !memcmp(p->reqs, e->reqs, p->n_reqs * sizeof(*p->reqs)));
        if (same)
                return true;
        printf("\n  step %u: state proposes", step);
        for (size_t i = 0; i < p->n_bounds; i++)
                printf(" b%" PRIu64 "=%" PRIu64, p->bounds[i].gid, p->bounds[i].bound);
        for (size_t i = 0; i < p->n_reqs; i++)
                printf(" r%" PRIu64 ",%" PRIu64 "=%" PRIu64, p->reqs[i].consumer, p->reqs[i].input,
                       p->reqs[i].frontier);
        printf("\n  the model");
        for (size_t i = 0; i < e->n_bounds; i++)
                printf(" b%" PRIu64 "=%" PRIu64, e->bounds[i].gid, e->bounds[i].bound);
        for (size_t i = 0; i < e->n_reqs; i++)
                printf(" r%" PRIu64 ",%" PRIu64 "=%" PRIu64, e->reqs[i].consumer, e->reqs[i].input,
                       e->reqs[i].frontier);
        printf("\n");
        return false;
}

static void rm_put_item(struct rm *m, struct rm_obj *o)
{
        put_item(m->s, o->gid, o->mv ? COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW
                                     : COORD__ITEM_KIND__ITEM_TABLE,
                 o->in, o->n_in, o->retain, o->as_of);
        o->item = true;
}

/* An MV created: its item, its requirements and its birth bound at as-of. */
static void rm_mv_create(struct rm *m, struct rm_obj *c)
{
        c->n_in = 1 + rnd() % 2;
        c->as_of = 0;
        for (size_t i = 0; i < c->n_in; i++) {
                struct rm_obj *x;

                do
                        c->in[i] = RM_TABLE(RM_NPLAIN + rnd() % (RM_NT - RM_NPLAIN))->gid;
                while (i && c->in[i] == c->in[0]);
                x = rm_find(m, c->in[i]);
                c->as_of = lc_max(c->as_of, x->has_bound ? x->bound : 0);      /* I4 */
        }
        rm_put_item(m, c);
        for (size_t i = 0; i < c->n_in; i++) {
                c->req[i] = c->as_of;
                put_req(m->s, c->gid, c->in[i], c->as_of);
        }
        c->bound = c->has_bound ? lc_max(c->bound, c->as_of) : c->as_of;
        c->has_bound = true;
        put_bound(m->s, c->gid, c->as_of);
}

/* A frontier of o from the ring (the state keeps the largest). */
static void rm_frontier(struct rm *m, struct rm_obj *o, uint64_t upper)
{
        CU_ASSERT_EQUAL(lc_state_frontier(m->s, o->gid, upper, 0, false), 0);
        o->upper = o->has_upper ? lc_max(o->upper, upper) : upper;
        o->has_upper = true;
}

/* A tick compared with the model, then committed or abandoned. */
static bool rm_tick(struct rm *m, struct lc_publication *p, struct lc_publication *e,
                    unsigned step)
{
        bool same;

        rm_expect(m, e);
        CU_ASSERT_EQUAL_FATAL(lc_state_tick(m->s, p), 0);
        same = rm_same(p, e, step);
        CU_ASSERT(same);
        m->ticks++;
        m->records += p->n_bounds + p->n_reqs;
        if (!p->n_bounds && !p->n_reqs)
                return same;
        if (rnd() % 5) {
                lc_state_committed(m->s, p);
                rm_commit(m, p);
        } else {
                lc_state_abandon(m->s);
        }
        /* The committed state is the model's. */
        for (size_t i = 0; i < RM_N; i++) {
                uint64_t v = 0;
                int r = lc_state_bound(m->s, m->o[i].gid, &v);

                CU_ASSERT_EQUAL(r == 0, m->o[i].has_bound);
                CU_ASSERT(r != 0 || v == m->o[i].bound);
        }
        return same;
}

/* Everything the catalog holds loaded again (lifecycle_reload()). */
static void rm_reload(struct rm *m)
{
        uint64_t seq = lc_state_seq(m->s);

        lc_state_reset_catalog(m->s);
        for (size_t i = RM_NB; i < RM_N; i++) {
                struct rm_obj *o = &m->o[i];

                if (o->item)
                        rm_put_item(m, o);
                if (o->has_bound)
                        put_bound(m->s, o->gid, o->bound);
                for (size_t j = 0; j < o->n_in; j++)
                        put_req(m->s, o->gid, o->in[j], o->req[j]);
        }
        for (size_t i = 0; i < RM_NB; i++)
                if (m->o[i].has_bound)
                        put_bound(m->s, m->o[i].gid, m->o[i].bound);
        for (size_t i = 0; i < RM_NH; i++)
                if (m->h[i].live)
                        txn_hold(m->s, lc_state_seq(m->s) + 1, m->h[i].id, m->h[i].input,
                                 m->h[i].frontier, true);
        lc_state_set_seq(m->s, seq);
}

static struct rm_obj *rm_any_table(struct rm *m)
{
        return RM_TABLE(rnd() % RM_NT);
}

static struct rm_obj *rm_any_collection(struct rm *m)
{
        return &m->o[rnd() % RM_N];
}

/* One random event (a change in the catalog or the ring, or a tick); false when a tick
 * disagreed with the model. */
static bool rm_step(struct rm *m, struct lc_publication *p, struct lc_publication *e,
                    unsigned step)
{
        static const uint64_t retains[] = { 0, 200, 1500, 4000 };
        unsigned what = (unsigned)(rnd() % 100);
        struct rm_obj *o;
        struct rm_hold *h;

        if (what < 20) {                        /* T moves: an append somewhere */
                m->t += 1 + rnd() % 400;
                for (size_t i = 0; i < RM_NB; i++)
                        rm_frontier(m, &m->o[i], m->t);
                if (rnd() % 10 == 0)            /* an old ring value: kept at the largest */
                        CU_ASSERT_EQUAL(lc_state_frontier(m->s, 1, m->t - 50, 0, false), 0);
        } else if (what < 38) {                 /* a table written (or an old value) */
                o = rm_any_table(m);
                rm_frontier(m, o, rnd() % 8 == 0 && m->t > 500 ? m->t - rnd() % 500
                                  : m->t + (rnd() % 4 == 0 ? rnd() % 300 : 0));
        } else if (what < 46) {                 /* an MV's output progresses */
                o = RM_MV(rnd() % RM_NM);
                rm_frontier(m, o, (o->has_upper ? o->upper : o->as_of) + 1 + rnd() % 700);
        } else if (what < 56) {
                return rm_tick(m, p, e, step);
        } else if (what < 61) {                 /* a client's hold */
                o = rm_any_collection(m);
                for (h = m->h; h < m->h + RM_NH && h->live; h++)
                        ;
                if (h == m->h + RM_NH)
                        return true;
                *h = (struct rm_hold){ ++m->next_hold, o->gid,
                                       (o->has_bound ? o->bound : 0) + rnd() % 1500, true };
                txn_hold(m->s, lc_state_seq(m->s) + 1, h->id, h->input, h->frontier, true);
        } else if (what < 65) {                 /* a hold moves on (a put is combined with max) */
                h = &m->h[rnd() % RM_NH];
                if (!h->live)
                        return true;
                h->frontier += rnd() % 800;
                txn_hold(m->s, lc_state_seq(m->s) + 1, h->id, h->input, h->frontier, true);
        } else if (what < 70) {                 /* a hold released */
                h = &m->h[rnd() % RM_NH];
                if (!h->live)
                        return true;
                h->live = false;
                txn_hold(m->s, lc_state_seq(m->s) + 1, h->id, 0, 0, false);
        } else if (what < 74) {                 /* a requirement's record put */
                o = RM_MV(rnd() % RM_NM);
                if (!o->n_in)
                        return true;
                size_t i = rnd() % o->n_in;
                o->req[i] += rnd() % 500;
                put_req(m->s, o->gid, o->in[i], o->req[i]);
        } else if (what < 79) {                 /* ALTER ... SET (RETAIN HISTORY) */
                o = rnd() % (RM_NT + RM_NM) < RM_NT ? rm_any_table(m) : RM_MV(rnd() % RM_NM);
                if (!o->item)
                        return true;
                o->retain = retains[rnd() % ELEMENTSOF(retains)];
                rm_put_item(m, o);
        } else if (what < 82) {                 /* a bound's record put */
                o = rm_any_collection(m);
                o->bound = (o->has_bound ? o->bound : 0) + rnd() % 300;
                o->has_bound = true;
                put_bound(m->s, o->gid, o->bound);
        } else if (what < 85) {                 /* DROP TABLE of one nothing reads, or CREATE */
                o = RM_TABLE(rnd() % RM_NPLAIN);
                if (o->item) {
                        delete_items(m->s, &o->gid, 1);
                        o->item = o->has_bound = false;
                        o->bound = 0;
                } else {
                        o->retain = retains[rnd() % ELEMENTSOF(retains)];
                        rm_put_item(m, o);
                }
        } else if (what < 87) {                 /* the ring forgets a dropped table */
                o = RM_TABLE(rnd() % RM_NPLAIN);
                if (o->item || !o->has_upper)
                        return true;
                CU_ASSERT_EQUAL(lc_state_frontier(m->s, o->gid, 0, 0, true), 0);
                o->has_upper = false;
                o->upper = 0;
        } else if (what < 89) {
                /* A table's bound deleted (no catalog path does so for a live table).  It
                 * does not make the table dirty: the next move of T looks at it (as the walk
                 * of every table did), so T moves here, for the model's sake. */
                o = rm_any_table(m);
                if (!o->has_bound)
                        return true;
                txn_delete_bound(m->s, o->gid);
                o->has_bound = false;
                o->bound = 0;
                m->t += 1 + rnd() % 100;
                for (size_t i = 0; i < RM_NB; i++)
                        rm_frontier(m, &m->o[i], m->t);
        } else if (what < 92) {                 /* DROP MATERIALIZED VIEW, or CREATE */
                o = RM_MV(rnd() % RM_NM);
                if (!o->item) {
                        rm_mv_create(m, o);
                        return true;
                }
                for (size_t i = 0; i < o->n_in; i++)
                        txn_apply_delete_req(m->s, lc_state_seq(m->s) + 1, o->gid, o->in[i]);
                o->item = false;
                o->n_in = 0;
        } else if (what < 93) {
                rm_reload(m);
        } else if (what < 96) {                 /* the ring says again what it said */
                o = rm_any_collection(m);
                if (o->has_upper)
                        CU_ASSERT_EQUAL(lc_state_frontier(m->s, o->gid, o->upper, 0, false), 0);
        } else {                                /* ticks in a row, T moving or not */
                if (rnd() % 2) {
                        m->t += 1 + rnd() % 100;
                        for (size_t i = 0; i < RM_NB; i++)
                                rm_frontier(m, &m->o[i], m->t);
                }
                return rm_tick(m, p, e, step) && rm_tick(m, p, e, step);
        }
        return true;
}

/* Random sequences of every event the state follows, each publication compared with the
 * model's: tables at rest are left out of the ticks' work, never out of a publication. */
static void test_rest_model(void)
{
        struct lc_publication p = { 0 }, e = { 0 };
        uint64_t saved = rnd_state;     /* the cases after this one draw as before */

        for (unsigned seed = 0; seed < 10; seed++) {
                struct rm *m = calloc(1, sizeof(*m));
                bool ok = true;

                CU_ASSERT_FATAL(m != NULL);
                rnd_state = 0x9e3779b97f4a7c15ull * (seed + 1);
                CU_ASSERT_FATAL(lc_state_new(&m->s) == 0);
                CU_ASSERT_FATAL(lc_state_protect_builtins(m->s) == 0);
                lc_state_set_seq(m->s, 1);
                m->t = 10000;
                for (size_t i = 0; i < RM_NB; i++) {
                        m->o[i] = (struct rm_obj){ .gid = 1 + i, .item = true };
                        rm_frontier(m, &m->o[i], m->t);
                }
                for (size_t i = 0; i < RM_NT; i++) {
                        struct rm_obj *o = RM_TABLE(i);

                        *o = (struct rm_obj){ .gid = 1000 + i };
                        o->retain = rnd() % 4 ? 0 : 4000;
                        rm_put_item(m, o);
                        rm_frontier(m, o, 2000 + rnd() % 8000);
                }
                for (size_t j = 0; j < RM_NM; j++) {
                        RM_MV(j)->gid = 2000 + j;
                        RM_MV(j)->mv = true;
                        rm_mv_create(m, RM_MV(j));
                }
                for (unsigned step = 0; step < 20000 && ok; step++)
                        ok = rm_step(m, &p, &e, step);
                CU_ASSERT(m->ticks > 2000 && m->records > m->ticks);
                lc_state_free(m->s);
                free(m);
        }
        rnd_state = saved;
        lc_publication_done(&p);
        lc_publication_done(&e);
}

/* ---- the load in bulk from a catalog (lifecycle-load.h) ---- */

/* g committed to a new catalog at dir/catalog, in transactions of a few hundred
 * records, with the adapter's next_gid meta record (next_gid 0: none). */
static void gen_commit(const struct gen *g, const char *dir, uint64_t next_gid)
{
        struct catalog *c = NULL;
        char *path = NULL;
        enum { BATCH = 400 };
        struct catalog_op ops[BATCH];
        uint8_t keys[BATCH][17], vals[BATCH][128];
        size_t n = 0;

        CU_ASSERT_FATAL(asprintf(&path, "%s/catalog", dir) > 0);
        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &c), 0);
#define FLUSH_OPS() do {                                                        \
                if (n) CU_ASSERT_EQUAL_FATAL(catalog_commit(c, ops, n, NULL), 0); \
                n = 0;                                                          \
        } while (0)
        for (size_t i = 0; i < g->n_items; i++) {
                Coord__CatalogItem it = COORD__CATALOG_ITEM__INIT;
                Coord__CatalogColumn col = COORD__CATALOG_COLUMN__INIT, *cols[1] = { &col };
                char name[32];
                uint8_t plan[] = { 0x0a, 0x02, 0x08, (uint8_t)i };

                snprintf(name, sizeof(name), "o_%zu", i);
                it.gid = g->items[i].gid;
                it.name = name;
                it.kind = g->items[i].kind;
                it.retain_history_ms = g->items[i].retain_ms;
                it.as_of = g->items[i].as_of;
                col.name = (char *)"a";
                it.columns = cols;
                it.n_columns = 1;
                if (it.kind != COORD__ITEM_KIND__ITEM_TABLE) {
                        it.plan.data = plan;
                        it.plan.len = sizeof(plan);
                }
                key9(keys[n], 'i', it.gid);
                CU_ASSERT_FATAL(coord__catalog_item__get_packed_size(&it) <= sizeof(vals[n]));
                ops[n] = (struct catalog_op){ CATALOG_OP_PUT, CATALOG_CF_STATE, keys[n], 9, vals[n],
                                              coord__catalog_item__pack(&it, vals[n]) };
                if (++n == BATCH)
                        FLUSH_OPS();
        }
        for (size_t i = 0; i < g->n_bounds; i++) {
                Coord__CatalogBound b = COORD__CATALOG_BOUND__INIT;

                b.gid = g->bounds[i].gid;
                b.bound = g->bounds[i].bound;
                key9(keys[n], 'b', b.gid);
                ops[n] = (struct catalog_op){ CATALOG_OP_PUT, CATALOG_CF_STATE, keys[n], 9, vals[n],
                                              coord__catalog_bound__pack(&b, vals[n]) };
                if (++n == BATCH)
                        FLUSH_OPS();
        }
        for (size_t i = 0; i < g->n_reqs; i++) {
                Coord__CatalogRequirement q = COORD__CATALOG_REQUIREMENT__INIT;

                q.consumer = g->reqs[i].consumer;
                q.input = g->reqs[i].input;
                q.frontier = g->reqs[i].frontier;
                req_key(keys[n], q.consumer, q.input);
                ops[n] = (struct catalog_op){ CATALOG_OP_PUT, CATALOG_CF_STATE, keys[n], 17, vals[n],
                                              coord__catalog_requirement__pack(&q, vals[n]) };
                if (++n == BATCH)
                        FLUSH_OPS();
        }
        FLUSH_OPS();
#undef FLUSH_OPS
        if (next_gid) {
                uint8_t v[8];
                be64_put(v, next_gid);
                CU_ASSERT_EQUAL(catalog_meta_put(c, "next_gid", v, 8, NULL), 0);
        }
        catalog_close(c);
        free(path);
}

struct ref_load {
        struct lc_state *s;
        struct lc_enact *e;
};

static int ref_load_one(const void *key, size_t key_len, const void *value, size_t value_len,
                        void *userdata)
{
        struct ref_load *rl = userdata;
        int r = lc_state_load_record(rl->s, key, key_len, value, value_len);

        return r < 0 ? r : lc_enact_load_record(rl->e, key, key_len, value, value_len);
}

static struct catalog *open_secondary(const char *dir, const char *name)
{
        struct catalog *c = NULL;
        char *primary = NULL, *secondary = NULL;

        CU_ASSERT_FATAL(asprintf(&primary, "%s/catalog", dir) > 0);
        CU_ASSERT_FATAL(asprintf(&secondary, "%s/%s", dir, name) > 0);
        CU_ASSERT_EQUAL_FATAL(catalog_open_secondary(primary, secondary, &c), 0);
        free(primary);
        free(secondary);
        return c;
}

static void assert_same_enact(const struct lc_enact *a, const struct lc_enact *b)
{
        CU_ASSERT_EQUAL_FATAL(lc_enact_n_items(a), lc_enact_n_items(b));
        for (size_t i = 0; i < lc_enact_n_items(a); i++)
                CU_ASSERT_EQUAL(lc_enact_item_gid(a, i), lc_enact_item_gid(b, i));
}

/* lc_load() builds from a catalog exactly what one scan handing every record to
 * lc_state_load_record() and lc_enact_load_record() built (the follower before the
 * load in bulk), whatever the next_gid hint says; a restart (a new secondary, a fresh
 * state) loads the same again. */
static void test_load_catalog(void)
{
        static const struct {
                uint64_t next_gid;      /* 0: none; else relative to the last gid */
                int64_t off;
        } hints[] = { { 0, 0 }, { 1, 1 }, { 5, 0 }, { 1, -3000 }, { 1, 1 << 20 } };
        struct gen g;
        char *dir = t_mkdtemp("lcload");

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        gen_make(&g, 12000);
        gen_commit(&g, dir, 0);
        for (size_t h = 0; h < ELEMENTSOF(hints); h++) {
                struct ref_load ref = { 0 };
                struct lc_state *s, *again;
                struct lc_enact *e, *e_again;
                struct lc_load_stats st;
                struct catalog *c;
                uint64_t next = hints[h].next_gid == 1 ? (uint64_t)((int64_t)g.max_gid + hints[h].off)
                                                       : hints[h].next_gid;
                uint8_t v[8];

                if (hints[h].next_gid) {
                        char *path = NULL;
                        struct catalog *p = NULL;
                        CU_ASSERT_FATAL(asprintf(&path, "%s/catalog", dir) > 0);
                        CU_ASSERT_EQUAL_FATAL(catalog_open(path, &p), 0);
                        be64_put(v, next);
                        CU_ASSERT_EQUAL(catalog_meta_put(p, "next_gid", v, 8, NULL), 0);
                        catalog_close(p);
                        free(path);
                }
                c = open_secondary(dir, "secondary");
                CU_ASSERT_FATAL(lc_state_new(&ref.s) == 0 && lc_enact_new(NULL, &ref.e) == 0);
                CU_ASSERT_EQUAL_FATAL(catalog_scan(c, CATALOG_CF_STATE, NULL, 0, ref_load_one, &ref), 0);
                CU_ASSERT_FATAL(lc_state_new(&s) == 0 && lc_enact_new(NULL, &e) == 0);
                CU_ASSERT_EQUAL_FATAL(lc_load(c, s, e, &st), 0);
                CU_ASSERT_EQUAL(st.items, g.n_items);
                CU_ASSERT_EQUAL(st.bounds, g.n_bounds);
                CU_ASSERT_EQUAL(st.requirements, g.n_reqs);
                CU_ASSERT(lc_enact_n_items(e) > 0);
                assert_same_enact(ref.e, e);
                catalog_close(c);

                /* The restart: another secondary, a fresh state. */
                c = open_secondary(dir, "secondary-2");
                CU_ASSERT_FATAL(lc_state_new(&again) == 0 && lc_enact_new(NULL, &e_again) == 0);
                CU_ASSERT_EQUAL_FATAL(lc_load(c, again, e_again, NULL), 0);
                assert_same_enact(e, e_again);
                catalog_close(c);
                assert_same_state(ref.s, s, &g);
                lc_state_free(ref.s);
                ref.s = gen_load_records(&g);
                assert_same_state(ref.s, again, &g);

                lc_state_free(ref.s);
                lc_state_free(s);
                lc_state_free(again);
                lc_enact_free(ref.e);
                lc_enact_free(e);
                lc_enact_free(e_again);
        }
        gen_free(&g);
        t_rmrf(dir);
        free(dir);
}

/* One CatalogTxn op on an item: a put of a materialized view (with a refresh
 * schedule or without) or a delete. */
static void enact_op(struct lc_enact *e, uint64_t gid, int what)
{
        Coord__CatalogItem it = COORD__CATALOG_ITEM__INIT;
        Coord__CatalogOp op = COORD__CATALOG_OP__INIT, *ops[1] = { &op };
        Coord__CatalogTxn txn = COORD__CATALOG_TXN__INIT;
        uint8_t k[9], v[256];

        it.gid = gid;
        it.kind = COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW;
        it.refresh = what == 1;
        it.refresh_every_ms = what == 1 ? 1000 + gid : 0;
        key9(k, 'i', gid);
        op.cf = COORD__CATALOG_OP__CF__STATE;
        op.kind = what < 0 ? COORD__CATALOG_OP__KIND__DELETE : COORD__CATALOG_OP__KIND__PUT;
        op.key = (ProtobufCBinaryData){ 9, k };
        if (what >= 0)
                op.value = (ProtobufCBinaryData){ coord__catalog_item__pack(&it, v), v };
        txn.ops = ops;
        txn.n_ops = 1;
        CU_ASSERT_EQUAL(lc_enact_apply_txn(e, &txn), 0);
}

/* A put of the lease refresh/<gid> with last commit id `last`. */
static void enact_lease(struct lc_enact *e, uint64_t gid, uint64_t last)
{
        Coord__CatalogLease l = COORD__CATALOG_LEASE__INIT;
        Coord__CatalogOp op = COORD__CATALOG_OP__INIT, *ops[1] = { &op };
        Coord__CatalogTxn txn = COORD__CATALOG_TXN__INIT;
        char key[64], id[32];
        uint8_t v[256];
        int n = snprintf(key, sizeof(key), "lrefresh/%" PRIu64, gid);

        snprintf(id, sizeof(id), "%" PRIu64, last);
        l.key = key + 1;
        l.holder = (char *)"lifecycle-1";
        l.epoch = 3;
        l.version = 2;
        l.last_commit_id = id;
        op.cf = COORD__CATALOG_OP__CF__STATE;
        op.kind = COORD__CATALOG_OP__KIND__PUT;
        op.key = (ProtobufCBinaryData){ (size_t)n, (uint8_t *)key };
        op.value = (ProtobufCBinaryData){ coord__catalog_lease__pack(&l, v), v };
        txn.ops = ops;
        txn.n_ops = 1;
        CU_ASSERT_EQUAL(lc_enact_apply_txn(e, &txn), 0);
}

/* lc_enact_next_refresh() (lifecycle-enact.c note 3) walks exactly the items with a
 * refresh schedule, in gid order, from any point, through puts, replacements that
 * add or remove the schedule, and deletes: checked against a model after every op.
 * Then lc_enact_refresh_committed() (lifecycle-enact.c note 4) against the same model. */
static void test_next_refresh(void)
{
        enum { N = 400 };
        int model[N + 1] = { 0 };       /* 0 none, 1 refresh, 2 plain */
        struct lc_enact *e = NULL;
        uint64_t seed = 7;

        CU_ASSERT_EQUAL_FATAL(lc_enact_new(NULL, &e), 0);
        for (int step = 0; step < 3000; step++) {
                uint64_t gid, as_of, after, want;
                struct refresh_schedule rs;
                int what;

                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                gid = 1 + (seed >> 33) % N;
                what = (int)((seed >> 20) % 3) - 1;     /* -1 delete, 0 plain, 1 refresh */
                enact_op(e, gid, what);
                model[gid] = what < 0 ? 0 : what == 1 ? 1 : 2;
                after = (seed >> 40) % (N + 2);
                for (want = after + 1; want <= N && model[want] != 1; want++)
                        ;
                if (want > N) {
                        CU_ASSERT_EQUAL(lc_enact_next_refresh(e, after, &gid, &as_of, &rs), -ENOENT);
                } else {
                        CU_ASSERT_EQUAL_FATAL(lc_enact_next_refresh(e, after, &gid, &as_of, &rs), 0);
                        CU_ASSERT_EQUAL(gid, want);
                        CU_ASSERT_EQUAL(rs.every_ms, 1000 + want);
                }
        }
        CU_ASSERT_EQUAL(lc_enact_next_refresh(e, UINT64_MAX, &(uint64_t){ 0 }, &(uint64_t){ 0 },
                                              &(struct refresh_schedule){ 0 }), -ENOENT);
        /* lifecycle-enact.c note 4: the refresh leases' last commits, of kept refresh views only. */
        for (uint64_t gid = 1; gid <= N; gid++) {
                uint64_t last = 7;

                enact_lease(e, gid, gid * 10);
                CU_ASSERT_EQUAL(lc_enact_refresh_committed(e, gid, &last), model[gid] == 1 ? 0 : -ENOENT);
                CU_ASSERT_EQUAL(last, model[gid] == 1 ? gid * 10 : 7);
                if (model[gid] == 1) {
                        enact_op(e, gid, 0);            /* the schedule gone: so is its lease */
                        CU_ASSERT_EQUAL(lc_enact_refresh_committed(e, gid, &last), -ENOENT);
                        enact_op(e, gid, 1);
                        enact_lease(e, gid, gid * 20);
                        CU_ASSERT_EQUAL(lc_enact_refresh_committed(e, gid, &last), 0);
                        CU_ASSERT_EQUAL(last, gid * 20);
                        enact_op(e, gid, -1);           /* dropped */
                        CU_ASSERT_EQUAL(lc_enact_refresh_committed(e, gid, &last), -ENOENT);
                }
        }
        lc_enact_reset(e);
        CU_ASSERT_EQUAL(lc_enact_next_refresh(e, 0, &(uint64_t){ 0 }, &(uint64_t){ 0 },
                                              &(struct refresh_schedule){ 0 }), -ENOENT);
        lc_enact_free(e);
}

int main(void)
{
        static const struct t_case rules[] = {
                { "rules", test_rules },
                { NULL, NULL },
        };
        static const struct t_case state[] = {
                { "tick_chain", test_tick_chain },
                { "builtins", test_builtins },
                { "drop_advances", test_drop_advances },
                { "holds", test_holds },
                { "sparse", test_sparse },
                { "many_consumers", test_many_consumers },
                { "index_since_floor", test_index_since_floor },
                { "load_batch", test_load_batch },
                { "load_batch_reload", test_load_batch_reload },
                { "map_removals", test_map_removals },
                { "map_stepped", test_map_stepped },
                { "rest_work", test_rest_work },
                { "tick_limit", test_tick_limit },
                { "min_incremental", test_min_incremental },
                { "rest_wake", test_rest_wake },
                { "rest_stale_ok", test_rest_stale_ok },
                { "rest_model", test_rest_model },
                { NULL, NULL },
        };
        static const struct t_case load[] = {
                { "load_catalog", test_load_catalog },
                { "next_refresh", test_next_refresh },
                { NULL, NULL },
        };
        static const struct t_suite suites[] = {
                { "lifecycle-bounds", rules },
                { "lifecycle-state", state },
                { "lifecycle-load", load },
                { NULL, NULL },
        };

        return t_run(suites);
}
