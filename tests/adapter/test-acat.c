/* test-acat -- the catalog writer's items, dependencies, bounds and requirements
 * (adapter/adapter-catalog.c) on a real catalog store (RocksDB in a temp directory).
 *
 * The invariants checked here, each by a case that fails when its check is removed:
 *   I1/I3  a publication that would move a bound or a requirement back is refused whole;
 *   I4     a consumer is admitted only at an as-of >= the committed bound of every
 *          LOGICAL input (an input the optimizer removed included), and its item,
 *          requirements and birth bound commit together;
 *   I5     a publication whose bound would pass a live requirement is refused -- also
 *          the requirement of a creation still in flight;
 *   retirement: DROP removes the consumer's requirements in the same transaction;
 *   reload: what memory shows equals what a fresh open reads back (acat_export());
 *   runs: a creation may name the items of creations committed before it in the same
 *          write (acat_create_begin_after()), and only those;
 *   load: acat_open() links what it used to, and unpacks a view's plan only on use;
 *          a loaded item reads back every field, and its ALTER frees nothing of its block;
 *   names: the name index finds, drops and refuses names while it grows in steps.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "adapter-catalog.h"
#include "adapter-catalog-internal.h"
#include "catalog/catalog.h"
#include "coord.pb-c.h"
#include "t.h"
#include "util.h"

static char *dir;
static struct catalog *store;
static struct adapter_catalog *cat;

static void open_all(void)
{
        CU_ASSERT_EQUAL_FATAL(catalog_open(dir, &store), 0);
        CU_ASSERT_EQUAL_FATAL(acat_open(store, &cat), 0);
}

static void close_all(void)
{
        cat = acat_free(cat);
        store = catalog_close(store);
}

/* Commit a begun transaction and finish it; the commit's result. */
static int commit(struct acat_txn *t)
{
        const struct catalog_op *ops;
        size_t n;
        uint64_t seq = 0;
        int r;

        ops = acat_txn_ops(t, &n);
        r = catalog_commit(store, ops, n, &seq);
        acat_txn_finish(cat, t, r);
        return r;
}

static const struct sql_column cols[] = { { (char *)"a", ROW_TYPE_INT4, true } };

static uint64_t create(const char *name, enum sql_object_kind kind, const uint64_t *inputs, size_t n,
                       const uint64_t *refs, size_t n_refs, uint64_t as_of, uint64_t ts,
                       const char *want_sqlstate)
{
        struct acat_new_item ni = {
                .name = name, .kind = kind, .create_sql = "-", .columns = cols, .n_columns = 1,
                .logical_inputs = inputs, .n_logical = n, .refs = refs, .n_refs = n_refs,
                .as_of = as_of,
        };
        struct row_error err = { .position = 0 };
        struct acat_txn *t = NULL;
        int r = acat_create_begin(cat, &ni, ts, &t, &err);

        if (want_sqlstate) {
                CU_ASSERT_EQUAL(r, -EINVAL);
                CU_ASSERT_STRING_EQUAL(err.sqlstate, want_sqlstate);
                return 0;
        }
        if (r < 0)
                fprintf(stderr, "\n  create %s: %d %s %s\n", name, r, err.sqlstate, err.message);
        CU_ASSERT_EQUAL_FATAL(r, 0);
        {
                uint64_t gid = acat_txn_item(t, 0)->gid;
                CU_ASSERT_EQUAL(commit(t), 0);
                return gid;
        }
}

static const struct acat_req *req_of(uint64_t consumer, uint64_t input)
{
        const struct acat_item *c = acat_by_gid(cat, consumer);

        for (size_t i = 0; c && i < c->n_reqs; i++)
                if (c->reqs[i].input == input)
                        return &c->reqs[i];
        return NULL;
}

/* A publication of one bound and/or one requirement; its begin result (and err). */
static int publish(uint64_t bgid, uint64_t bound, uint64_t consumer, uint64_t input, uint64_t frontier,
                   struct row_error *err, bool do_commit)
{
        Coord__PublishProtection p = COORD__PUBLISH_PROTECTION__INIT;
        Coord__CatalogBoundRecord b = COORD__CATALOG_BOUND_RECORD__INIT, *bp = &b;
        Coord__Requirement q = COORD__REQUIREMENT__INIT, *qp = &q;
        struct acat_txn *t = NULL;
        size_t n = 0;
        int r;

        if (bgid) {
                b.gid = bgid;
                b.bound = bound;
                p.bounds = &bp;
                p.n_bounds = 1;
        }
        if (consumer) {
                q.consumer = consumer;
                q.input = input;
                q.frontier = frontier;
                p.requirements = &qp;
                p.n_requirements = 1;
        }
        r = acat_publish_begin(cat, &p, &t, &n, err);
        if (r < 0)
                return r;
        if (do_commit) {
                CU_ASSERT_EQUAL(commit(t), 0);
        } else {
                acat_txn_finish(cat, t, -EIO);  /* as if the commit failed */
        }
        return 0;
}

struct rec {
        uint8_t key[17];
        size_t klen;
        uint8_t val[512];
        size_t vlen;
};

struct recs {
        struct rec v[64];
        size_t n;
};

static int collect(const void *key, size_t klen, const void *val, size_t vlen, void *ud)
{
        struct recs *rs = ud;

        if (rs->n == 64 || klen > 17 || vlen > 512)
                return -E2BIG;
        memcpy(rs->v[rs->n].key, key, klen);
        rs->v[rs->n].klen = klen;
        memcpy(rs->v[rs->n].val, val, vlen);
        rs->v[rs->n].vlen = vlen;
        rs->n++;
        return 0;
}

static int rec_cmp(const void *x, const void *y)
{
        const struct rec *a = x, *b = y;
        int c = memcmp(a->key, b->key, a->klen < b->klen ? a->klen : b->klen);

        return c ? c : (int)a->klen - (int)b->klen;
}

static void export_sorted(struct recs *rs)
{
        rs->n = 0;
        CU_ASSERT_EQUAL(acat_export(cat, collect, rs), 0);
        qsort(rs->v, rs->n, sizeof(rs->v[0]), rec_cmp);
}

static void recs_same(const struct recs *before, const struct recs *after)
{
        CU_ASSERT_EQUAL(before->n, after->n);
        for (size_t i = 0; i < before->n && i < after->n; i++) {
                CU_ASSERT_EQUAL(before->v[i].klen, after->v[i].klen);
                CU_ASSERT(memcmp(before->v[i].key, after->v[i].key, before->v[i].klen) == 0);
                CU_ASSERT(before->v[i].vlen == after->v[i].vlen &&
                          memcmp(before->v[i].val, after->v[i].val, before->v[i].vlen) == 0);
        }
}

static void test_protection(void)
{
        struct row_error err = { .position = 0 };
        uint64_t t1, t2, v, mv, mv2, gids[2];
        struct recs before, after;
        const struct acat_req *q;

        dir = t_mkdtemp("acat");
        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        open_all();

        t1 = create("t1", SQL_OBJECT_TABLE, NULL, 0, NULL, 0, 0, 100, NULL);
        t2 = create("t2", SQL_OBJECT_TABLE, NULL, 0, NULL, 0, 0, 110, NULL);
        CU_ASSERT(acat_by_gid(cat, t1)->has_bound && acat_by_gid(cat, t1)->bound == 100);

        /* A view over t1 and t2 whose plan lost t2 (WHERE false on it): t2 stays a
         * logical input, and a reference. */
        gids[0] = t1;
        gids[1] = t2;
        v = create("v", SQL_OBJECT_VIEW, gids, 2, gids, 2, 0, 120, NULL);
        CU_ASSERT_FALSE(acat_by_gid(cat, v)->has_bound);

        /* I4: admission by the committed bound of every logical input. */
        CU_ASSERT_EQUAL(publish(t2, 200, 0, 0, 0, &err, true), 0);
        CU_ASSERT_EQUAL(acat_by_gid(cat, t2)->bound, 200);
        create("m_low", SQL_OBJECT_MATERIALIZED_VIEW, gids, 2, &v, 1, 150, 130, "55000");
        CU_ASSERT_PTR_NULL(acat_by_name(cat, "m_low"));
        mv = create("m", SQL_OBJECT_MATERIALIZED_VIEW, gids, 2, &v, 1, 250, 140, NULL);
        CU_ASSERT(acat_by_gid(cat, mv)->has_bound && acat_by_gid(cat, mv)->bound == 250);
        q = req_of(mv, t1);
        CU_ASSERT(q && q->frontier == 250);
        q = req_of(mv, t2);
        CU_ASSERT(q && q->frontier == 250);

        /* I1/I3: nothing goes back. */
        CU_ASSERT_EQUAL(publish(t2, 190, 0, 0, 0, &err, true), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "55000");
        CU_ASSERT_EQUAL(acat_by_gid(cat, t2)->bound, 200);
        CU_ASSERT_EQUAL(publish(0, 0, mv, t1, 240, &err, true), -EINVAL);
        CU_ASSERT_EQUAL(req_of(mv, t1)->frontier, 250);

        /* I5: the bound of the optimized-away input never passes the requirement. */
        CU_ASSERT_EQUAL(publish(t2, 260, 0, 0, 0, &err, true), -EINVAL);
        CU_ASSERT_EQUAL(acat_by_gid(cat, t2)->bound, 200);
        /* ... until the requirement moves in the same publication (or before). */
        CU_ASSERT_EQUAL(publish(t2, 260, mv, t2, 300, &err, true), 0);
        CU_ASSERT_EQUAL(acat_by_gid(cat, t2)->bound, 260);
        CU_ASSERT_EQUAL(req_of(mv, t2)->frontier, 300);
        /* A requirement below its input's bound is refused. */
        CU_ASSERT_EQUAL(publish(t1, 270, 0, 0, 0, &err, true), -EINVAL);   /* R(m,t1)=250 */
        /* A failed commit changes nothing. */
        CU_ASSERT_EQUAL(publish(0, 0, mv, t1, 400, &err, false), 0);
        CU_ASSERT_EQUAL(req_of(mv, t1)->frontier, 250);

        /* I5 with a creation in flight: its requirement counts before it commits. */
        {
                struct acat_new_item ni = {
                        .name = "m2", .kind = SQL_OBJECT_MATERIALIZED_VIEW, .create_sql = "-",
                        .columns = cols, .n_columns = 1, .logical_inputs = &t1, .n_logical = 1,
                        .refs = &t1, .n_refs = 1, .as_of = 210,
                };
                struct acat_txn *pending = NULL;

                CU_ASSERT_EQUAL_FATAL(acat_create_begin(cat, &ni, 150, &pending, &err), 0);
                CU_ASSERT_EQUAL(publish(t1, 220, 0, 0, 0, &err, true), -EINVAL);
                CU_ASSERT_EQUAL(acat_by_gid(cat, t1)->bound, 100);
                mv2 = acat_txn_item(pending, 0)->gid;
                CU_ASSERT_EQUAL(commit(pending), 0);
                CU_ASSERT_EQUAL(publish(t1, 205, 0, 0, 0, &err, true), 0);
        }

        /* Reload: memory equals a fresh read of the catalog. */
        export_sorted(&before);
        close_all();
        open_all();
        export_sorted(&after);
        recs_same(&before, &after);
        CU_ASSERT_EQUAL(req_of(mv, t2)->frontier, 300);
        CU_ASSERT_EQUAL(acat_by_gid(cat, t1)->n_req_consumers, 2);

        /* Retirement: DROP without CASCADE of a referenced table is 2BP01; with
         * CASCADE everything goes, requirements included, in one transaction. */
        {
                struct acat_txn *t = NULL;
                const struct acat_req_change *rc;

                CU_ASSERT_EQUAL(acat_drop_begin(cat, &t2, 1, false, &t, &err), -EINVAL);
                CU_ASSERT_STRING_EQUAL(err.sqlstate, "2BP01");
                CU_ASSERT_EQUAL_FATAL(acat_drop_begin(cat, &t2, 1, true, &t, &err), 0);
                CU_ASSERT_EQUAL(acat_txn_n_items(t), 3);        /* m, v, t2 */
                CU_ASSERT_EQUAL(acat_txn_req_changes(t, &rc), 2);
                CU_ASSERT_EQUAL(commit(t), 0);
                CU_ASSERT_PTR_NULL(acat_by_gid(cat, mv));
                CU_ASSERT_EQUAL(acat_by_gid(cat, t1)->n_req_consumers, 1);      /* m2 */
                CU_ASSERT_PTR_NOT_NULL(req_of(mv2, t1));
        }
        /* A dropped GlobalId is never handed out again, even when it was the largest
         * (the stored next_gid of a create can lag: concurrent creates commit in any
         * order within a group). */
        {
                struct acat_new_item a = { .name = "t8", .kind = SQL_OBJECT_TABLE, .create_sql = "-",
                                           .columns = cols, .n_columns = 1 };
                struct acat_new_item b = a;
                struct acat_txn *ta = NULL, *tb = NULL, *t = NULL;
                uint64_t newest;

                b.name = "t9";
                CU_ASSERT_EQUAL_FATAL(acat_create_begin(cat, &a, 500, &ta, &err), 0);
                CU_ASSERT_EQUAL_FATAL(acat_create_begin(cat, &b, 501, &tb, &err), 0);
                newest = acat_txn_item(tb, 0)->gid;
                CU_ASSERT(newest > acat_txn_item(ta, 0)->gid);
                CU_ASSERT_EQUAL(commit(tb), 0);         /* the later one first */
                CU_ASSERT_EQUAL(commit(ta), 0);
                CU_ASSERT_EQUAL_FATAL(acat_drop_begin(cat, &newest, 1, false, &t, &err), 0);
                CU_ASSERT_EQUAL(commit(t), 0);
                close_all();
                open_all();
                CU_ASSERT(acat_next_gid(cat) > newest);
        }
        close_all();
        open_all();
        CU_ASSERT_PTR_NULL(acat_by_gid(cat, v));
        CU_ASSERT_EQUAL(acat_by_gid(cat, t1)->n_req_consumers, 1);
        close_all();
        t_rmrf(dir);
        free(dir);
}

/* acat_create_begin_after() (adapter-exec.c note 7, runs): a creation may name the
 * items of creations begun before it, which the caller commits first in the same write
 * (catalog_commit_many()); finished in order they are both there, rolled back in
 * reverse both are gone; a consumer's logical inputs must still be committed. */
static void test_create_after(void)
{
        struct row_error err = { .position = 0 };
        struct acat_txn *tv = NULL, *ti = NULL, *tt = NULL, *tx = NULL;
        struct catalog_txn_ops txns[2];
        const struct acat_item *it;
        uint64_t t1, v, idx, t2, seq = 0;

        dir = t_mkdtemp("acat-after");
        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        open_all();
        t1 = create("t1", SQL_OBJECT_TABLE, NULL, 0, NULL, 0, 0, 100, NULL);
        {
                struct acat_new_item nv = { .name = "v", .kind = SQL_OBJECT_VIEW, .create_sql = "-",
                                            .columns = cols, .n_columns = 1, .logical_inputs = &t1,
                                            .n_logical = 1, .refs = &t1, .n_refs = 1 };
                CU_ASSERT_EQUAL_FATAL(acat_create_begin(cat, &nv, 200, &tv, &err), 0);
        }
        v = acat_txn_item(tv, 0)->gid;
        {
                struct acat_new_item ni = { .name = "v_primary_idx", .kind = SQL_OBJECT_INDEX,
                                            .create_sql = "-", .columns = cols, .n_columns = 1,
                                            .logical_inputs = &t1, .n_logical = 1, .refs = &v,
                                            .n_refs = 1, .on_id = v, .as_of = 200 };
                /* alone, the view does not exist yet */
                CU_ASSERT_EQUAL(acat_create_begin(cat, &ni, 201, &ti, &err), -EINVAL);
                CU_ASSERT_STRING_EQUAL(err.sqlstate, "42P01");
                CU_ASSERT_EQUAL_FATAL(acat_create_begin_after(cat, &ni, 201, &tv, 1, &ti, &err), 0);
        }
        idx = acat_txn_item(ti, 0)->gid;
        CU_ASSERT(idx > v);
        CU_ASSERT_PTR_NULL(acat_by_gid(cat, v));        /* nothing shows before the commit */
        {
                /* a consumer reading an uncommitted table: refused, but after it in the
                 * same write (a run's or a block's); both fail together */
                struct acat_new_item nt = { .name = "t2", .kind = SQL_OBJECT_TABLE, .create_sql = "-",
                                            .columns = cols, .n_columns = 1 };
                struct acat_new_item nx;

                CU_ASSERT_EQUAL_FATAL(acat_create_begin(cat, &nt, 202, &tt, &err), 0);
                t2 = acat_txn_item(tt, 0)->gid;
                nx = (struct acat_new_item){ .name = "t2_idx", .kind = SQL_OBJECT_INDEX, .create_sql = "-",
                                             .columns = cols, .n_columns = 1, .logical_inputs = &t2,
                                             .n_logical = 1, .refs = &t2, .n_refs = 1, .on_id = t2,
                                             .as_of = 202 };
                CU_ASSERT_EQUAL(acat_create_begin(cat, &nx, 203, &tx, &err), -EINVAL);
                CU_ASSERT_STRING_EQUAL(err.sqlstate, "42P01");
                CU_ASSERT_EQUAL_FATAL(acat_create_begin_after(cat, &nx, 203, &tt, 1, &tx, &err), 0);
                CU_ASSERT_PTR_NOT_NULL(acat_by_name(cat, "t2_idx"));    /* reserved */
                acat_txn_finish(cat, tx, -EIO);         /* as if their commit failed */
                acat_txn_finish(cat, tt, -EIO);
                CU_ASSERT_PTR_NULL(acat_by_name(cat, "t2"));
                CU_ASSERT_PTR_NULL(acat_by_name(cat, "t2_idx"));
        }
        /* One write, in order; finished in order. */
        txns[0].ops = acat_txn_ops(tv, &txns[0].n_ops);
        txns[1].ops = acat_txn_ops(ti, &txns[1].n_ops);
        CU_ASSERT_EQUAL_FATAL(catalog_commit_many(store, txns, 2, &seq), 0);
        acat_txn_finish(cat, tv, 0);
        acat_txn_finish(cat, ti, 0);
        it = acat_by_gid(cat, v);
        CU_ASSERT_PTR_NOT_NULL_FATAL(it);
        CU_ASSERT_EQUAL(it->index_id, idx);
        CU_ASSERT(it->n_dependents == 1 && it->dependents[0] == idx);
        CU_ASSERT_PTR_NOT_NULL(acat_by_gid(cat, idx));
        CU_ASSERT_PTR_NOT_NULL(req_of(idx, t1));

        /* Rolled back, the later one first: both names are free again. */
        {
                struct acat_new_item nw = { .name = "w", .kind = SQL_OBJECT_VIEW, .create_sql = "-",
                                            .columns = cols, .n_columns = 1, .logical_inputs = &t1,
                                            .n_logical = 1, .refs = &t1, .n_refs = 1 };
                struct acat_new_item nwi;
                uint64_t w;

                CU_ASSERT_EQUAL_FATAL(acat_create_begin(cat, &nw, 300, &tv, &err), 0);
                w = acat_txn_item(tv, 0)->gid;
                nwi = (struct acat_new_item){ .name = "w_primary_idx", .kind = SQL_OBJECT_INDEX,
                                              .create_sql = "-", .columns = cols, .n_columns = 1,
                                              .logical_inputs = &t1, .n_logical = 1, .refs = &w,
                                              .n_refs = 1, .on_id = w, .as_of = 300 };
                CU_ASSERT_EQUAL_FATAL(acat_create_begin_after(cat, &nwi, 301, &tv, 1, &ti, &err), 0);
                acat_txn_finish(cat, ti, -EIO);
                acat_txn_finish(cat, tv, -EIO);
                CU_ASSERT_PTR_NULL(acat_by_name(cat, "w"));
                CU_ASSERT_PTR_NULL(acat_by_name(cat, "w_primary_idx"));
                CU_ASSERT_EQUAL(acat_by_gid(cat, t1)->n_req_consumers, 1);      /* v's index */
                create("w", SQL_OBJECT_VIEW, &t1, 1, &t1, 1, 0, 302, NULL);
        }
        /* What memory shows is what a fresh open reads back. */
        close_all();
        open_all();
        it = acat_by_gid(cat, v);
        CU_ASSERT_PTR_NOT_NULL_FATAL(it);
        CU_ASSERT_EQUAL(it->index_id, idx);
        CU_ASSERT_PTR_NOT_NULL(acat_by_name(cat, "w"));
        close_all();
        t_rmrf(dir);
        free(dir);
}

/* acat_open() (adapter-catalog-open.c note 4) at some size: every name found (and a
 * reserved one free of clashes), dependents and each object's OLDEST index linked,
 * requirements indexed by input, and a view's plan unpacked only when it is first
 * read -- then the same plan that was created. */
static void test_load(void)
{
        enum { N = 1000 };
        Coord__Plan__Get get = COORD__PLAN__GET__INIT;
        Coord__Plan__Relation plan = COORD__PLAN__RELATION__INIT;
        Coord__Plan__Type ty = COORD__PLAN__TYPE__TYPE_INT4;
        struct row_error err = { .position = 0 };
        struct sql_relation rel;
        const struct acat_item *it;
        uint64_t t, sv, first_idx = 0, last = 0;
        char name[32];

        dir = t_mkdtemp("acat-load");
        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        open_all();
        t = create("support", SQL_OBJECT_TABLE, NULL, 0, NULL, 0, 0, 100, NULL);
        get.id = t;
        get.column_types = &ty;
        get.n_column_types = 1;
        plan.kind_case = COORD__PLAN__RELATION__KIND_GET;
        plan.get = &get;
        {
                struct acat_new_item nv = { .name = "sv", .kind = SQL_OBJECT_VIEW, .create_sql = "-",
                                            .columns = cols, .n_columns = 1, .plan = &plan,
                                            .logical_inputs = &t, .n_logical = 1, .refs = &t, .n_refs = 1 };
                struct acat_txn *tx = NULL;

                CU_ASSERT_EQUAL_FATAL(acat_create_begin(cat, &nv, 101, &tx, &err), 0);
                sv = acat_txn_item(tx, 0)->gid;
                CU_ASSERT_EQUAL_FATAL(commit(tx), 0);
        }
        for (int i = 0; i < N; i++) {
                struct acat_new_item ni = { .name = name, .kind = SQL_OBJECT_INDEX, .create_sql = "-",
                                            .columns = cols, .n_columns = 1, .logical_inputs = &t,
                                            .n_logical = 1, .refs = &sv, .n_refs = 1, .on_id = sv,
                                            .as_of = 200 };
                struct acat_txn *tx = NULL;

                snprintf(name, sizeof(name), "sv_idx_%d", i);
                CU_ASSERT_EQUAL_FATAL(acat_create_begin(cat, &ni, 200 + (uint64_t)i, &tx, &err), 0);
                last = acat_txn_item(tx, 0)->gid;
                CU_ASSERT_EQUAL_FATAL(commit(tx), 0);
                if (!first_idx)
                        first_idx = last;
        }
        close_all();
        open_all();
        CU_ASSERT_EQUAL(acat_count_user(cat), N + 2);
        for (int i = 0; i < N; i++) {
                snprintf(name, sizeof(name), "sv_idx_%d", i);
                it = acat_by_name(cat, name);
                CU_ASSERT_FATAL(it && it->gid == first_idx + (uint64_t)i);
        }
        CU_ASSERT_PTR_NULL(acat_by_name(cat, "sv_idx_"));
        CU_ASSERT_PTR_NOT_NULL(acat_by_name(cat, "coord_objects"));
        it = acat_by_gid(cat, sv);
        CU_ASSERT_PTR_NOT_NULL_FATAL(it);
        CU_ASSERT_EQUAL(it->n_dependents, N);
        CU_ASSERT_EQUAL(it->index_id, first_idx);
        CU_ASSERT_EQUAL(acat_by_gid(cat, t)->n_req_consumers, N);
        CU_ASSERT_EQUAL(acat_by_gid(cat, t)->n_dependents, 1);
        CU_ASSERT_PTR_NOT_NULL(req_of(last, t));
        CU_ASSERT_PTR_NULL(it->plan);                   /* not read yet */
        acat_relation(it, &rel);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rel.plan);
        CU_ASSERT_PTR_EQUAL(it->plan, rel.plan);
        CU_ASSERT_EQUAL(rel.plan->kind_case, COORD__PLAN__RELATION__KIND_GET);
        CU_ASSERT_EQUAL(rel.plan->get->id, t);
        /* The oldest index goes: the next oldest takes its place. */
        {
                struct acat_txn *tx = NULL;

                CU_ASSERT_EQUAL_FATAL(acat_drop_begin(cat, &first_idx, 1, false, &tx, &err), 0);
                CU_ASSERT_EQUAL(commit(tx), 0);
                CU_ASSERT_EQUAL(acat_by_gid(cat, sv)->index_id, first_idx + 1);
        }
        /* A catalog that names two items alike contradicts itself: the last index's
         * record rewritten with the name of one far before it (another slot of the
         * name index), and the open refuses it. */
        {
                uint8_t key[9] = { CATALOG_STATE_ITEM };
                Coord__CatalogItem *p;
                void *v = NULL;
                size_t len = 0, plen;
                uint8_t *buf;
                uint64_t seq = 0;

                be64_put(key + 1, last);
                CU_ASSERT_EQUAL_FATAL(catalog_get(store, CATALOG_CF_STATE, key, sizeof(key), &v, &len), 0);
                p = coord__catalog_item__unpack(NULL, len, v);
                CU_ASSERT_PTR_NOT_NULL_FATAL(p);
                free(p->name);
                p->name = strdup("sv_idx_3");
                plen = coord__catalog_item__get_packed_size(p);
                buf = malloc(plen);
                coord__catalog_item__pack(p, buf);
                {
                        const struct catalog_op op = { CATALOG_OP_PUT, CATALOG_CF_STATE, key, sizeof(key),
                                                       buf, plen };

                        CU_ASSERT_EQUAL(catalog_commit(store, &op, 1, &seq), 0);
                }
                coord__catalog_item__free_unpacked(p, NULL);
                free(buf);
                free(v);
                cat = acat_free(cat);
                CU_ASSERT_EQUAL(acat_open(store, &cat), -EBADMSG);
                CU_ASSERT_PTR_NULL(cat);
        }
        close_all();
        t_rmrf(dir);
        free(dir);
}

static bool mapped(const void *p)
{
        return msync((void *)((uintptr_t)p & ~(uintptr_t)4095), 4096, MS_ASYNC) == 0;
}

/* Load chunks (adapter-catalog-open.c note 4a): blocks carved in order, zeroed and
 * 16-aligned; a chunk stays mapped while a block in it lives or its filler holds it,
 * and is unmapped when the last goes; a block larger than a chunk is its own. */
static void test_load_chunks(void)
{
        enum { N = 8192 };
        static void *b[N];
        struct item_chunk *cur = NULL;
        const char *first;
        size_t k = 0, in_first = 0;
        bool chunked = false;
        void *big;

        for (; k < N; k++) {
                b[k] = item_chunk_alloc(&cur, 500, &chunked);
                CU_ASSERT_FATAL(b[k] && chunked && ((uintptr_t)b[k] & 15) == 0);
                CU_ASSERT(((const char *)b[k])[0] == 0 && ((const char *)b[k])[499] == 0);
                memset(b[k], 0xab, 500);
                if (k && (uintptr_t)b[k] - (uintptr_t)b[0] > ((size_t)2 << 20))
                        break;          /* past the first chunk */
        }
        CU_ASSERT_FATAL(k < N);
        first = b[0];
        for (size_t i = 0; i < k; i++)
                if (((uintptr_t)b[i] ^ (uintptr_t)first) < ((uintptr_t)2 << 20))
                        in_first++;
        CU_ASSERT(in_first > 1000);     /* ~2 MB of 512-byte blocks */
        /* The first chunk, left by its filler, goes with its last block. */
        for (size_t i = 0; i + 1 < in_first; i++)
                item_chunk_put(b[i]);
        CU_ASSERT(mapped(first));
        item_chunk_put(b[in_first - 1]);
        CU_ASSERT(!mapped(first));
        /* The current one stays while its filler holds it. */
        for (size_t i = in_first; i <= k; i++)
                item_chunk_put(b[i]);
        CU_ASSERT(mapped(b[k]));
        item_chunk_release(&cur);
        CU_ASSERT_PTR_NULL(cur);
        CU_ASSERT(!mapped(b[k]));
        big = item_chunk_alloc(&cur, (size_t)3 << 20, &chunked);
        CU_ASSERT_FATAL(big != NULL);
        CU_ASSERT(!chunked && cur == NULL);
        free(big);
}

/* An item with every kind of field a record holds, created through ni; its gid. */
static uint64_t create_ni(const struct acat_new_item *ni, uint64_t ts)
{
        struct row_error err = { .position = 0 };
        struct acat_txn *t = NULL;
        uint64_t gid;
        int r = acat_create_begin(cat, ni, ts, &t, &err);

        if (r < 0)
                fprintf(stderr, "\n  create %s: %d %s %s\n", ni->name, r, err.sqlstate, err.message);
        CU_ASSERT_EQUAL_FATAL(r, 0);
        gid = acat_txn_item(t, 0)->gid;
        CU_ASSERT_EQUAL(commit(t), 0);
        return gid;
}

/* A loaded item is one allocation (item_from_proto(), adapter-catalog-open.c note 4):
 * every field of every kind reads back as it was written -- columns with defaults and
 * lengths, constraints, a refresh schedule, a sink's path -- and a loaded sink's ALTER
 * (its old definition swapped out and freed, item_disown()) leaves a catalog that reads
 * back alike too.  Run under ASan, a field freed out of the block fails it. */
static void test_reload_fields(void)
{
        static const uint8_t dflt[] = { 1, 2, 3, 4, 5 }, expr[] = { 9, 8, 7 };
        static const uint32_t col0[] = { 0 }, keys[] = { 1, 0 };
        static const uint64_t at[] = { 500, 600 };
        const struct sql_column tcols[] = {
                { .name = (char *)"a", .type = ROW_TYPE_INT4, .nullable = false,
                  .default_row = (uint8_t *)dflt, .default_len = sizeof(dflt) },
                { .name = (char *)"b", .type = ROW_TYPE_TEXT, .nullable = true, .max_chars = 10 },
        };
        const struct sql_check ck = { (char *)"ck", (uint8_t *)expr, sizeof(expr) };
        const struct sql_unique uq = { .name = (char *)"pk", .columns = (uint32_t *)col0, .n_columns = 1,
                                       .primary = true };
        Coord__Plan__Get get = COORD__PLAN__GET__INIT;
        Coord__Plan__Relation plan = COORD__PLAN__RELATION__INIT;
        Coord__Plan__Type ty[2] = { COORD__PLAN__TYPE__TYPE_INT4, COORD__PLAN__TYPE__TYPE_TEXT };
        struct row_error err = { .position = 0 };
        struct recs before, after;
        struct acat_txn *t = NULL;
        const struct acat_item *it;
        uint64_t ft, ch, sk;

        dir = t_mkdtemp("acat-fields");
        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        open_all();
        ft = create_ni(&(struct acat_new_item){ .name = "ft", .kind = SQL_OBJECT_TABLE, .create_sql = "CREATE ft",
                                                .columns = tcols, .n_columns = 2, .checks = &ck, .n_checks = 1,
                                                .uniques = &uq, .n_uniques = 1 }, 100);
        {
                const struct sql_foreign_key fk = { .name = (char *)"fk", .columns = (uint32_t *)col0,
                                                    .ref_columns = (uint32_t *)col0, .n_columns = 1,
                                                    .ref_id = ft };

                ch = create_ni(&(struct acat_new_item){ .name = "ch", .kind = SQL_OBJECT_TABLE,
                                                        .create_sql = "CREATE ch", .columns = tcols,
                                                        .n_columns = 1, .refs = &ft, .n_refs = 1,
                                                        .fkeys = &fk, .n_fkeys = 1 }, 110);
        }
        get.id = ft;
        get.column_types = ty;
        get.n_column_types = 2;
        plan.kind_case = COORD__PLAN__RELATION__KIND_GET;
        plan.get = &get;
        create_ni(&(struct acat_new_item){ .name = "rm", .kind = SQL_OBJECT_MATERIALIZED_VIEW,
                                           .create_sql = "CREATE rm", .columns = tcols, .n_columns = 2,
                                           .plan = &plan, .logical_inputs = &ft, .n_logical = 1,
                                           .physical_inputs = &ft, .n_physical = 1, .refs = &ft, .n_refs = 1,
                                           .keys = keys, .n_keys = 2, .as_of = 500, .retain_history_ms = 7000,
                                           .refresh = true, .refresh_at = at, .n_refresh_at = 2,
                                           .refresh_every_ms = 100, .refresh_aligned_to = 7 }, 120);
        sk = create_ni(&(struct acat_new_item){ .name = "sk", .kind = SQL_OBJECT_SINK, .create_sql = "CREATE sk",
                                                .columns = tcols, .n_columns = 2, .plan = &plan,
                                                .logical_inputs = &ft, .n_logical = 1, .refs = &ft, .n_refs = 1,
                                                .on_id = ft, .as_of = 500, .sink_path = "/nowhere/sk.out",
                                                .sink_snapshot = true }, 130);
        export_sorted(&before);
        close_all();
        open_all();
        export_sorted(&after);
        recs_same(&before, &after);
        it = acat_by_name(cat, "ft");
        CU_ASSERT_FATAL(it && it->n_columns == 2 && it->n_checks == 1 && it->n_uniques == 1);
        CU_ASSERT(it->columns[0].default_len == sizeof(dflt) &&
                  memcmp(it->columns[0].default_row, dflt, sizeof(dflt)) == 0);
        CU_ASSERT(it->columns[1].max_chars == 10 && it->columns[1].nullable && !it->columns[1].default_row);
        CU_ASSERT_STRING_EQUAL(it->columns[1].name, "b");
        CU_ASSERT(it->checks[0].expr_len == sizeof(expr) && memcmp(it->checks[0].expr, expr, sizeof(expr)) == 0);
        CU_ASSERT(it->uniques[0].primary && it->uniques[0].columns[0] == 0);
        it = acat_by_gid(cat, ch);
        CU_ASSERT_FATAL(it && it->n_fkeys == 1 && it->fkeys[0].ref_id == ft);
        it = acat_by_name(cat, "rm");
        CU_ASSERT_FATAL(it && it->refresh && it->n_refresh_at == 2 && it->refresh_at[1] == 600);
        CU_ASSERT(it->n_keys == 2 && it->keys[0] == 1 && it->retain_history_ms == 7000);
        it = acat_by_gid(cat, sk);
        CU_ASSERT_FATAL(it && it->sink_snapshot && it->plan_len > 0);
        CU_ASSERT_STRING_EQUAL(it->sink_path, "/nowhere/sk.out");
        /* The loaded sink now reads ch: its old plan, inputs and refs leave its block. */
        get.id = ch;
        get.n_column_types = 1;
        CU_ASSERT_EQUAL_FATAL(acat_alter_sink_begin(cat, sk, &(struct acat_new_item){
                                      .name = "sk", .kind = SQL_OBJECT_SINK, .plan = &plan,
                                      .logical_inputs = &ch, .n_logical = 1, .refs = &ch, .n_refs = 1,
                                      .on_id = ch }, 1000, &t, &err), 0);
        CU_ASSERT_EQUAL_FATAL(commit(t), 0);
        it = acat_by_gid(cat, sk);
        CU_ASSERT(it->n_refs == 1 && it->refs[0] == ch && it->logical_inputs[0] == ch);
        export_sorted(&before);
        close_all();
        open_all();
        export_sorted(&after);
        recs_same(&before, &after);
        CU_ASSERT(acat_by_gid(cat, sk)->refs[0] == ch);
        close_all();
        t_rmrf(dir);
        free(dir);
}

/* The bound change of gid in t (NULL: none). */
static const struct acat_bound_change *bch_of(const struct acat_txn *t, uint64_t gid)
{
        const struct acat_bound_change *bc;
        size_t n = acat_txn_bound_changes(t, &bc);

        for (size_t i = 0; i < n; i++)
                if (bc[i].gid == gid)
                        return &bc[i];
        return NULL;
}

/* A DROP begun while a publication that moves the dropped table is being committed:
 * ordered after it, and what it retracts (built-in rows) is the publication's bound,
 * not the committed one.  Committed in that order, the catalog holds no bound of the
 * table and the state replays to what memory holds. */
static void test_drop_during_publication(void)
{
        Coord__PublishProtection p = COORD__PUBLISH_PROTECTION__INIT;
        Coord__CatalogBoundRecord b = COORD__CATALOG_BOUND_RECORD__INIT, *bp = &b;
        struct row_error err = { .position = 0 };
        struct acat_txn *tp = NULL, *td = NULL;
        const struct acat_bound_change *bc;
        uint64_t t1, t2;
        void *val = NULL;
        size_t n = 0, vlen = 0;
        uint8_t bkey[9];

        dir = t_mkdtemp("acat");
        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        open_all();
        t1 = create("t1", SQL_OBJECT_TABLE, NULL, 0, NULL, 0, 0, 100, NULL);
        t2 = create("t2", SQL_OBJECT_TABLE, NULL, 0, NULL, 0, 0, 100, NULL);

        /* No publication in flight: the committed bound, no ordering. */
        CU_ASSERT_EQUAL_FATAL(acat_drop_begin(cat, &t2, 1, false, &td, &err), 0);
        CU_ASSERT_FALSE(acat_txn_after_publication(td));
        bc = bch_of(td, t2);
        CU_ASSERT(bc && bc->had_old && bc->old == 100 && !bc->has_new);
        CU_ASSERT_EQUAL(commit(td), 0);

        /* t1's bound 100 -> 300 in flight, then DROP TABLE t1. */
        b.gid = t1;
        b.bound = 300;
        p.bounds = &bp;
        p.n_bounds = 1;
        CU_ASSERT_EQUAL_FATAL(acat_publish_begin(cat, &p, &tp, &n, &err), 0);
        CU_ASSERT_EQUAL_FATAL(acat_drop_begin(cat, &t1, 1, false, &td, &err), 0);
        CU_ASSERT_TRUE(acat_txn_after_publication(td));
        bc = bch_of(td, t1);
        CU_ASSERT(bc && bc->had_old && bc->old == 300 && !bc->has_new);
        bc = bch_of(tp, t1);
        CU_ASSERT(bc && bc->had_old && bc->old == 100 && bc->has_new && bc->new_ == 300);
        /* The order the committer keeps for it: the publication, then the drop. */
        CU_ASSERT_EQUAL(commit(tp), 0);
        CU_ASSERT_EQUAL(commit(td), 0);
        CU_ASSERT_PTR_NULL(acat_by_gid(cat, t1));
        bkey[0] = 'b';                  /* KEY_BOUND, adapter-catalog-internal.h */
        be64_put(bkey + 1, t1);
        CU_ASSERT_EQUAL(catalog_get(store, CATALOG_CF_STATE, bkey, sizeof(bkey), &val, &vlen), -ENOENT);
        free(val);

        close_all();
        t_rmrf(dir);
        free(dir);
}

/* The name index grows in steps (adapter-catalog.c note 2, oamap.c note 1): while a
 * grow is under way every name is found, in whichever array holds it; a name dropped
 * from the old array is gone and free again; a name taken is refused from either. */
static bool name_in_old(const char *name)
{
        const struct name_ent *e = names_slot(cat, name), *o = cat->names_old.slots;

        return e && o && e >= o && e <= o + cat->names_old.mask;
}

static void drop_name(const char *name)
{
        struct row_error err = { .position = 0 };
        const struct acat_item *it = acat_by_name(cat, name);
        struct acat_txn *tx = NULL;
        uint64_t gid;

        CU_ASSERT_PTR_NOT_NULL_FATAL(it);
        gid = it->gid;
        CU_ASSERT_EQUAL_FATAL(acat_drop_begin(cat, &gid, 1, false, &tx, &err), 0);
        CU_ASSERT_EQUAL(commit(tx), 0);
}

static void test_names_stepped(void)
{
        enum { N = 3000 };
        char name[32];
        int n = 0, grown_at = -1, dropped = 0;

        dir = t_mkdtemp("acat-names");
        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        open_all();
        /* Past OA_STEP_MIN_SLOTS / 2 names: the index grows in steps. */
        for (; n < N && grown_at < 0; n++) {
                snprintf(name, sizeof(name), "n_%d", n);
                create(name, SQL_OBJECT_TABLE, NULL, 0, NULL, 0, 0, 100, NULL);
                if (cat->names_old.slots)
                        grown_at = n;
        }
        CU_ASSERT_FATAL(grown_at > 0 && cat->names_old.n > 0);
        /* Every name so far is found; some still in old are dropped, then refused. */
        for (int i = 0; i < n; i++) {
                snprintf(name, sizeof(name), "n_%d", i);
                CU_ASSERT_PTR_NOT_NULL_FATAL(acat_by_name(cat, name));
                if (dropped < 20 && i % 7 == 0 && name_in_old(name)) {
                        create(name, SQL_OBJECT_TABLE, NULL, 0, NULL, 0, 0, 100, "42P07");
                        drop_name(name);
                        CU_ASSERT_PTR_NULL(acat_by_name(cat, name));
                        dropped++;
                }
        }
        CU_ASSERT_EQUAL(dropped, 20);
        CU_ASSERT_PTR_NOT_NULL(cat->names_old.slots);   /* the drops came during the grow */
        /* The rest, until the grow is done; the dropped names are taken again. */
        for (; n < N; n++) {
                snprintf(name, sizeof(name), "n_%d", n);
                create(name, SQL_OBJECT_TABLE, NULL, 0, NULL, 0, 0, 100, NULL);
        }
        CU_ASSERT_PTR_NULL(cat->names_old.slots);
        for (int i = 0, k = 0; i < N; i++) {
                snprintf(name, sizeof(name), "n_%d", i);
                if (acat_by_name(cat, name))
                        continue;
                CU_ASSERT(i <= grown_at && i % 7 == 0);
                create(name, SQL_OBJECT_TABLE, NULL, 0, NULL, 0, 0, 100, NULL);
                k++;
                if (i == N - 1)
                        CU_ASSERT_EQUAL(k, 20);
        }
        CU_ASSERT_EQUAL(acat_count_user(cat), N);
        CU_ASSERT_EQUAL(cat->n_names, N + cat->n_builtin);
        close_all();
        t_rmrf(dir);
        free(dir);
}

/* Clients' holds (adapter-hold.c note 1): admitted at or above the bound, a publication
 * passing one is refused, the bound may move up to it and, once it is gone, past it;
 * acat_holds_drop_stale() deletes the records at start (adapter-hold.c note 2). */
static void test_holds(void)
{
        struct row_error err = { .position = 0 };
        struct acat_hold_rec rec = { .value = NULL };
        struct catalog_op op;
        uint64_t t, id = 0, id2 = 0;

        dir = t_mkdtemp("acat");
        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        open_all();
        t = create("t", SQL_OBJECT_TABLE, NULL, 0, NULL, 0, 0, 100, NULL);
        CU_ASSERT_EQUAL(publish(t, 200, 0, 0, 0, &err, true), 0);
        CU_ASSERT_EQUAL(acat_hold_add(cat, t, 150, 1, &id, &rec, &err), -EDOM);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "55000");
        CU_ASSERT_EQUAL(acat_n_holds(cat), 0);
        CU_ASSERT_EQUAL_FATAL(acat_hold_add(cat, t, 300, 1, &id, &rec, &err), 0);
        op = (struct catalog_op){ .kind = CATALOG_OP_PUT, .cf = CATALOG_CF_STATE, .key = rec.key,
                                  .key_len = 9, .value = rec.value, .value_len = rec.value_len };
        CU_ASSERT_EQUAL(catalog_commit(store, &op, 1, NULL), 0);
        acat_hold_rec_done(&rec);
        CU_ASSERT_EQUAL(acat_hold_min(cat, t), 300);
        CU_ASSERT_EQUAL(publish(t, 301, 0, 0, 0, &err, true), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "55000");
        CU_ASSERT_EQUAL(acat_by_gid(cat, t)->bound, 200);
        CU_ASSERT_EQUAL(publish(t, 300, 0, 0, 0, &err, true), 0);
        /* Moved (once committed): the bound may follow. */
        CU_ASSERT_EQUAL(acat_hold_set(cat, id, 400), 0);
        CU_ASSERT_EQUAL(acat_hold_set(cat, id, 350), 0);        /* forward only */
        CU_ASSERT_EQUAL(acat_hold_min(cat, t), 400);
        CU_ASSERT_EQUAL(publish(t, 450, 0, 0, 0, &err, true), -EINVAL);
        /* A second hold lower: the lowest counts; both gone: the bound is free. */
        CU_ASSERT_EQUAL_FATAL(acat_hold_add(cat, t, 300, 1, &id2, &rec, &err), 0);
        acat_hold_rec_done(&rec);
        CU_ASSERT(id2 != id);
        CU_ASSERT_EQUAL(acat_hold_min(cat, t), 300);
        acat_hold_remove(cat, id2);
        acat_hold_remove(cat, id);
        CU_ASSERT_EQUAL(acat_n_holds(cat), 0);
        CU_ASSERT_EQUAL(publish(t, 450, 0, 0, 0, &err, true), 0);
        /* The next start deletes the record left in the catalog. */
        close_all();
        open_all();
        CU_ASSERT_EQUAL(acat_holds_drop_stale(cat), 1);
        CU_ASSERT_EQUAL(acat_holds_drop_stale(cat), 0);
        close_all();
        t_rmrf(dir);
        free(dir);
}

int main(void)
{
        static const struct t_case cases[] = {
                { "bounds, requirements, admission, publication, retirement", test_protection },
                { "a creation after others of the same write (runs)", test_create_after },
                { "load: names, dependents, oldest index, plans on first use", test_load },
                { "reload: every field of a loaded item; a loaded sink altered", test_reload_fields },
                { "load chunks: carved, kept while used, unmapped with the last block", test_load_chunks },
                { "a DROP during a publication's commit follows it", test_drop_during_publication },
                { "clients' holds", test_holds },
                { "the name index grows in steps: lookups, drops and creates meanwhile", test_names_stepped },
                { NULL, NULL },
        };
        static const struct t_suite suites[] = { { "catalog writer", cases }, { NULL, NULL } };

        return t_run(suites);
}
