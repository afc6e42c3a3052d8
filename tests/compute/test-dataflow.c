/* test-dataflow -- controller/controller-dataflow.c: every operator on hand-written cases
 * (retractions, NULL keys, the empty global aggregate, min/max retraction, sum overflow,
 * poisoning), a seeded property test against a naive evaluator written here (DESIGN I9:
 * the accumulated output at every time equals the plan recomputed from scratch over the
 * accumulated inputs at that time), with two step granularities, and the arrangement
 * against a naive accumulation, before and after compaction.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <unistd.h>

#include "controller-dataflow.h"
#include "plan-build.h"
#include "row/row-expr.h"
#include "row/row.h"
#include "t.h"
#include "util.h"

/* ---- Building plans by hand (and plan-build.h). ---- */

static Coord__Plan__Expr *lit_int(int type, int64_t v)
{
        Coord__Plan__Expr *e = mk(type);
        Coord__Plan__Datum *d = xmalloc(sizeof(*d));

        coord__plan__datum__init(d);
        d->value_case = COORD__PLAN__DATUM__VALUE_INT_VALUE;
        d->int_value = v;
        e->kind_case = COORD__PLAN__EXPR__KIND_LITERAL;
        e->literal = d;
        return e;
}

#define I4 ROW_TYPE_INT4
#define I8 ROW_TYPE_INT8
#define TX ROW_TYPE_TEXT
#define BO ROW_TYPE_BOOL

static Coord__Plan__Relation *project(Coord__Plan__Relation *in, size_t n, ...)
{
        Coord__Plan__Relation *r = rel();
        va_list ap;

        r->kind_case = COORD__PLAN__RELATION__KIND_PROJECT;
        r->project = xmalloc(sizeof(*r->project));
        coord__plan__project__init(r->project);
        r->project->input = in;
        r->project->n_outputs = n;
        r->project->outputs = xmalloc(n * sizeof(uint32_t));
        va_start(ap, n);
        for (size_t i = 0; i < n; i++)
                r->project->outputs[i] = (uint32_t)va_arg(ap, int);
        va_end(ap);
        return r;
}

/* join(l, r, n, lkey0, rkey0, lkey1, rkey1, ...) */
static Coord__Plan__Relation *join(Coord__Plan__Relation *l, Coord__Plan__Relation *rr,
                                   size_t n, ...)
{
        Coord__Plan__Relation *r = rel();
        va_list ap;

        r->kind_case = COORD__PLAN__RELATION__KIND_JOIN;
        r->join = xmalloc(sizeof(*r->join));
        coord__plan__join__init(r->join);
        r->join->left = l;
        r->join->right = rr;
        r->join->n_left_keys = r->join->n_right_keys = n;
        r->join->left_keys = xmalloc(n * sizeof(uint32_t));
        r->join->right_keys = xmalloc(n * sizeof(uint32_t));
        va_start(ap, n);
        for (size_t i = 0; i < n; i++) {
                r->join->left_keys[i] = (uint32_t)va_arg(ap, int);
                r->join->right_keys[i] = (uint32_t)va_arg(ap, int);
        }
        va_end(ap);
        return r;
}

#define AGG(f) COORD__PLAN__AGG_FUNC__AGG_##f

/* reduce(in, nkeys, key..., naggs, (func, column, type)...) */
static Coord__Plan__Relation *reduce(Coord__Plan__Relation *in, size_t nk, ...)
{
        Coord__Plan__Relation *r = rel();
        Coord__Plan__Reduce *rd = xmalloc(sizeof(*rd));
        va_list ap;
        size_t na;

        coord__plan__reduce__init(rd);
        r->kind_case = COORD__PLAN__RELATION__KIND_REDUCE;
        r->reduce = rd;
        rd->input = in;
        rd->n_group_keys = nk;
        rd->group_keys = xmalloc(nk * sizeof(uint32_t));
        va_start(ap, nk);
        for (size_t i = 0; i < nk; i++)
                rd->group_keys[i] = (uint32_t)va_arg(ap, int);
        na = (size_t)va_arg(ap, int);
        rd->n_aggregates = na;
        rd->aggregates = xmalloc(na * sizeof(*rd->aggregates));
        for (size_t i = 0; i < na; i++) {
                Coord__Plan__Aggregate *a = xmalloc(sizeof(*a));

                coord__plan__aggregate__init(a);
                a->func = (Coord__Plan__AggFunc)va_arg(ap, int);
                a->column = (uint32_t)va_arg(ap, int);
                a->type = (Coord__Plan__Type)va_arg(ap, int);
                rd->aggregates[i] = a;
        }
        va_end(ap);
        return r;
}

static Coord__Plan__Relation *union_of(size_t n, ...)
{
        Coord__Plan__Relation *r = rel();
        va_list ap;

        r->kind_case = COORD__PLAN__RELATION__KIND_UNION;
        r->union_ = xmalloc(sizeof(*r->union_));
        coord__plan__union__init(r->union_);
        r->union_->n_inputs = n;
        r->union_->inputs = xmalloc(n * sizeof(*r->union_->inputs));
        va_start(ap, n);
        for (size_t i = 0; i < n; i++)
                r->union_->inputs[i] = va_arg(ap, Coord__Plan__Relation *);
        va_end(ap);
        return r;
}

static Coord__Plan__Relation *distinct(Coord__Plan__Relation *in)
{
        Coord__Plan__Relation *r = rel();

        r->kind_case = COORD__PLAN__RELATION__KIND_DISTINCT;
        r->distinct = xmalloc(sizeof(*r->distinct));
        coord__plan__distinct__init(r->distinct);
        r->distinct->input = in;
        return r;
}

static Coord__Plan__Relation *negate(Coord__Plan__Relation *in)
{
        Coord__Plan__Relation *r = rel();

        r->kind_case = COORD__PLAN__RELATION__KIND_NEGATE;
        r->negate = xmalloc(sizeof(*r->negate));
        coord__plan__negate__init(r->negate);
        r->negate->input = in;
        return r;
}

static Coord__Plan__Relation *threshold(Coord__Plan__Relation *in)
{
        Coord__Plan__Relation *r = rel();

        r->kind_case = COORD__PLAN__RELATION__KIND_THRESHOLD;
        r->threshold = xmalloc(sizeof(*r->threshold));
        coord__plan__threshold__init(r->threshold);
        r->threshold->input = in;
        return r;
}

/* topk(in, has_limit, limit, offset, nkeys, (column, descending, nulls_first)...) */
static Coord__Plan__Relation *topk(Coord__Plan__Relation *in, bool has_limit, uint64_t limit,
                                   uint64_t offset, size_t nk, ...)
{
        Coord__Plan__Relation *r = rel();
        Coord__Plan__TopK *tk = xmalloc(sizeof(*tk));
        va_list ap;

        coord__plan__top_k__init(tk);
        r->kind_case = COORD__PLAN__RELATION__KIND_TOP_K;
        r->top_k = tk;
        tk->input = in;
        tk->has_limit = has_limit;
        tk->limit = limit;
        tk->offset = offset;
        tk->n_order = nk;
        tk->order = xmalloc(nk * sizeof(*tk->order));
        va_start(ap, nk);
        for (size_t i = 0; i < nk; i++) {
                Coord__Plan__SortKey *k = xmalloc(sizeof(*k));

                coord__plan__sort_key__init(k);
                k->column = (uint32_t)va_arg(ap, int);
                k->descending = va_arg(ap, int);
                k->nulls_first = va_arg(ap, int);
                tk->order[i] = k;
        }
        va_end(ap);
        return r;
}

/* ---- Rows. ---- */

#define NUL ((int64_t)INT64_MIN)        /* an int column value meaning NULL in mkrow() */

/* A row of n datums given as "i" (int64, NUL for NULL), "t" (const char *, NULL for
 * NULL) or "b" (int) per character of fmt. */
static uint8_t *mkrow(size_t *len, const char *fmt, ...)
{
        struct row_datum d[16];
        size_t n = strlen(fmt);
        uint8_t *row;
        va_list ap;

        va_start(ap, fmt);
        for (size_t i = 0; i < n; i++) {
                if (fmt[i] == 'i') {
                        int64_t v = va_arg(ap, int64_t);

                        d[i] = v == NUL ? ROW_DATUM_NULL : ROW_DATUM_INT(v);
                } else if (fmt[i] == 't') {
                        const char *s = va_arg(ap, const char *);

                        d[i] = s ? ROW_DATUM_TEXT(s, (uint32_t)strlen(s)) : ROW_DATUM_NULL;
                } else
                        d[i] = ROW_DATUM_BOOL(va_arg(ap, int));
        }
        va_end(ap);
        if (row_encode(d, n, &row, len) < 0)
                abort();
        return row;
}

static void push1(struct dataflow *df, size_t input, uint64_t time, int64_t diff,
                  uint8_t *row, size_t len)
{
        struct eval_update u = { row, len, time, diff };
        struct row_error err = { 0 };
        int r = dataflow_push(df, input, &u, 1, &err);

        if (r < 0)
                fprintf(stderr, "\n  push: %s %s\n", err.sqlstate, err.message);
        CU_ASSERT_EQUAL(r, 0);
        free(row);
}

#define PUSH(df, in, t, d, ...) do {                                   \
                size_t len_;                                            \
                uint8_t *row_ = mkrow(&len_, __VA_ARGS__);              \
                push1(df, in, t, d, row_, len_);                        \
        } while (0)

static int cmp_out(const void *x, const void *y)
{
        const struct eval_update *a = x, *b = y;
        int c;

        if (a->time != b->time)
                return a->time < b->time ? -1 : 1;
        c = row_compare(a->row, a->len, b->row, b->len);
        return c;
}

/* "t:(row)xdiff t:(row)xdiff ..." sorted by time, then row. */
static void render(struct eval_batch *b, char *out, size_t size)
{
        size_t off = 0;

        if (b->n)
                qsort(b->updates, b->n, sizeof(*b->updates), cmp_out);
        out[0] = 0;
        for (size_t i = 0; i < b->n && off < size; i++) {
                char *s = NULL;

                if (row_to_string(b->updates[i].row, b->updates[i].len, &s) < 0)
                        abort();
                off += (size_t)snprintf(out + off, size - off, "%s%" PRIu64 ":%s%+" PRId64,
                                        i ? " " : "", b->updates[i].time, s,
                                        b->updates[i].diff);
                free(s);
        }
}

/* Step to frontier and compare the rendered output. */
static void expect_step(struct dataflow *df, uint64_t frontier, const char *want)
{
        struct eval_batch out = EVAL_BATCH_INIT;
        struct row_error err = { 0 };
        char got[4096];
        int r = dataflow_step(df, frontier, &out, &err);

        if (r < 0)
                fprintf(stderr, "\n  step: %s %s\n", err.sqlstate, err.message);
        CU_ASSERT_EQUAL_FATAL(r, 0);
        CU_ASSERT_EQUAL(dataflow_frontier(df), frontier);
        render(&out, got, sizeof(got));
        if (strcmp(got, want) != 0)
                fprintf(stderr, "\n  got  %s\n  want %s\n", got, want);
        CU_ASSERT_STRING_EQUAL(got, want);
        eval_batch_done(&out);
}

static void expect_step_error(struct dataflow *df, uint64_t frontier, const char *sqlstate)
{
        struct eval_batch out = EVAL_BATCH_INIT;
        struct row_error err = { 0 };
        int r = dataflow_step(df, frontier, &out, &err);

        CU_ASSERT_EQUAL(r, -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, sqlstate);
        CU_ASSERT_EQUAL(out.n, 0);
        eval_batch_done(&out);
}

static struct dataflow *mkdf(Coord__Plan__Relation *plan, uint64_t as_of)
{
        struct dataflow *df = NULL;
        struct row_error err = { 0 };
        int r = dataflow_new(plan, as_of, &df, &err);

        if (r < 0)
                fprintf(stderr, "\n  dataflow_new: %s %s\n", err.sqlstate, err.message);
        CU_ASSERT_EQUAL_FATAL(r, 0);
        return df;
}

static const int T3[] = { I4, I8, TX };         /* (a int4, b int8, c text) */

/* ---- Hand-written cases. ---- */

static void test_linear(void)
{
        /* SELECT a, b + 1 FROM t WHERE a < 3, with mz_now() as a column. */
        Coord__Plan__Relation *p =
                project(map1(map1(filter(get(7, 3, T3),
                                         call(BO, F(LT), 2, col(I4, 0), lit_int(I4, 3))),
                                  call(I8, F(ADD), 2, col(I8, 1), lit_int(I8, 1))),
                             call(I8, F(MZ_NOW), 0)),
                        3, 0, 3, 4);
        struct dataflow *df = mkdf(p, 10);

        CU_ASSERT_EQUAL(dataflow_arity(df), 3);
        CU_ASSERT_EQUAL(dataflow_types(df)[1], I8);
        CU_ASSERT_EQUAL(dataflow_n_inputs(df), 1);
        CU_ASSERT_EQUAL(dataflow_input_id(df, 0), 7);
        CU_ASSERT_EQUAL(dataflow_as_of(df), 10);
        CU_ASSERT_EQUAL(dataflow_frontier(df), 10);
        PUSH(df, 0, 3, 1, "iit", (int64_t)1, (int64_t)5, "x");     /* before as_of */
        PUSH(df, 0, 10, 2, "iit", (int64_t)2, (int64_t)6, "y");
        PUSH(df, 0, 10, 1, "iit", (int64_t)5, (int64_t)6, "y");    /* filtered */
        PUSH(df, 0, 12, 1, "iit", (int64_t)0, (int64_t)1, "z");
        PUSH(df, 0, 11, 1, "iit", NUL, (int64_t)5, "x");           /* NULL < 3: dropped */
        expect_step(df, 10, "");                                    /* no-op */
        expect_step(df, 11, "10:(1,6,10)+1 10:(2,7,10)+2");
        expect_step(df, 13, "12:(0,2,12)+1");
        expect_step(df, 20, "");
        CU_ASSERT_EQUAL(dataflow_frontier(df), 20);
        /* Behind the frontier: a caller bug. */
        {
                size_t len;
                uint8_t *row = mkrow(&len, "iit", (int64_t)1, (int64_t)1, "z");
                struct eval_update u = { row, len, 19, 1 };
                struct row_error err = { 0 };

                CU_ASSERT_EQUAL(dataflow_push(df, 0, &u, 1, &err), -EINVAL);
                CU_ASSERT_STRING_EQUAL(err.sqlstate, "XX000");
                u.time = 20;
                CU_ASSERT_EQUAL(dataflow_push(df, 1, &u, 1, &err), -EINVAL);
                free(row);
                /* A row of the wrong shape. */
                row = mkrow(&len, "it", (int64_t)1, "z");
                u = (struct eval_update){ row, len, 25, 1 };
                CU_ASSERT_EQUAL(dataflow_push(df, 0, &u, 1, &err), -EINVAL);
                CU_ASSERT_STRING_EQUAL(err.sqlstate, "XX000");
                free(row);
        }
        dataflow_free(df);
        coord__plan__relation__free_unpacked(p, NULL);
}

static void test_union_negate_distinct(void)
{
        /* DISTINCT (t UNION ALL u UNION ALL -(t WHERE a = 1)) over column a. */
        Coord__Plan__Relation *p =
                distinct(project(union_of(3, get(1, 3, T3), get(2, 3, T3),
                                          negate(filter(get(1, 3, T3),
                                                        call(BO, F(EQ), 2, col(I4, 0),
                                                             lit_int(I4, 1))))),
                                 1, 0));
        struct dataflow *df = mkdf(p, 0);

        CU_ASSERT_EQUAL(dataflow_n_inputs(df), 2);
        PUSH(df, 0, 1, 1, "iit", (int64_t)1, (int64_t)0, "a");     /* cancelled by negate */
        PUSH(df, 0, 1, 2, "iit", (int64_t)2, (int64_t)0, "a");
        PUSH(df, 1, 1, 1, "iit", (int64_t)2, (int64_t)9, "b");
        PUSH(df, 1, 1, 1, "iit", NUL, (int64_t)9, "b");
        /* A frontier of 1 processes only time 0, which has no updates. */
        expect_step(df, 1, "");
        expect_step(df, 2, "1:(2)+1 1:(NULL)+1");
        PUSH(df, 0, 2, -2, "iit", (int64_t)2, (int64_t)0, "a");    /* 2 still in u */
        PUSH(df, 1, 2, 1, "iit", (int64_t)1, (int64_t)9, "b");     /* 1 appears */
        expect_step(df, 3, "2:(1)+1");
        PUSH(df, 1, 3, -1, "iit", (int64_t)2, (int64_t)9, "b");
        PUSH(df, 1, 3, -1, "iit", NUL, (int64_t)9, "b");
        expect_step(df, 4, "3:(2)-1 3:(NULL)-1");
        dataflow_free(df);
        coord__plan__relation__free_unpacked(p, NULL);
}

static void test_distinct_negative(void)
{
        Coord__Plan__Relation *p = distinct(get(1, 3, T3));
        struct dataflow *df = mkdf(p, 5);

        PUSH(df, 0, 5, 1, "iit", (int64_t)1, (int64_t)0, "a");
        expect_step(df, 6, "5:(1,0,'a')+1");
        PUSH(df, 0, 6, -2, "iit", (int64_t)1, (int64_t)0, "a");
        expect_step_error(df, 7, "XX000");
        /* Poisoned: the same error, every call. */
        expect_step_error(df, 8, "XX000");
        {
                size_t len;
                uint8_t *row = mkrow(&len, "iit", (int64_t)1, (int64_t)1, "z");
                struct eval_update u = { row, len, 9, 1 };
                struct row_error err = { 0 };

                CU_ASSERT_EQUAL(dataflow_push(df, 0, &u, 1, &err), -EINVAL);
                CU_ASSERT_STRING_EQUAL(err.sqlstate, "XX000");
                free(row);
        }
        dataflow_free(df);
        coord__plan__relation__free_unpacked(p, NULL);
}

/* Threshold (EXCEPT ALL over column a): a row's positive count, while the input's count
 * goes negative, back up, and to zero. */
static void test_threshold(void)
{
        Coord__Plan__Relation *p =
                threshold(union_of(2, project(get(1, 3, T3), 1, 0),
                                   negate(project(get(2, 3, T3), 1, 0))));
        struct dataflow *df = mkdf(p, 1);

        PUSH(df, 0, 1, 3, "iit", (int64_t)1, (int64_t)0, "a");
        PUSH(df, 1, 1, 1, "iit", (int64_t)1, (int64_t)9, "b");
        PUSH(df, 1, 1, 2, "iit", (int64_t)2, (int64_t)9, "b");
        PUSH(df, 1, 1, 1, "iit", NUL, (int64_t)9, "b");
        PUSH(df, 0, 1, 1, "iit", NUL, (int64_t)0, "a");         /* NULLs equal: cancels */
        expect_step(df, 2, "1:(1)+2");
        PUSH(df, 0, 2, 3, "iit", (int64_t)2, (int64_t)0, "a");  /* 2: -2 -> 1 */
        PUSH(df, 1, 2, 4, "iit", (int64_t)1, (int64_t)9, "b");  /* 1: 2 -> -2 */
        expect_step(df, 3, "2:(1)-2 2:(2)+1");
        PUSH(df, 1, 3, -2, "iit", (int64_t)2, (int64_t)9, "b"); /* 2: 1 -> 3 */
        PUSH(df, 0, 3, -3, "iit", (int64_t)1, (int64_t)0, "a"); /* 1: -2 -> -5 */
        expect_step(df, 4, "3:(2)+2");
        PUSH(df, 1, 4, -5, "iit", (int64_t)1, (int64_t)9, "b"); /* 1: -5 -> 0 */
        PUSH(df, 0, 4, 1, "iit", NUL, (int64_t)0, "a");         /* NULL: 0 -> 1 */
        expect_step(df, 5, "4:(NULL)+1");
        PUSH(df, 0, 5, -3, "iit", (int64_t)2, (int64_t)0, "a"); /* 2: 3 -> 0 */
        expect_step(df, 6, "5:(2)-3");
        dataflow_free(df);
        coord__plan__relation__free_unpacked(p, NULL);
}

static void test_reduce_keys(void)
{
        /* SELECT a, count(*), count(b), sum(b), min(c), max(b) FROM t GROUP BY a */
        Coord__Plan__Relation *p =
                reduce(get(1, 3, T3), 1, 0, 5, AGG(COUNT_STAR), 0, I8, AGG(COUNT), 1, I8,
                       AGG(SUM), 1, I8, AGG(MIN), 2, TX, AGG(MAX), 1, I8);
        struct dataflow *df = mkdf(p, 0);

        PUSH(df, 0, 0, 1, "iit", (int64_t)1, (int64_t)5, "m");
        PUSH(df, 0, 0, 1, "iit", (int64_t)1, (int64_t)7, "k");
        PUSH(df, 0, 0, 1, "iit", (int64_t)1, NUL, NULL);
        PUSH(df, 0, 0, 2, "iit", NUL, (int64_t)3, "z");            /* NULL key groups */
        PUSH(df, 0, 0, 1, "iit", NUL, NUL, "a");
        expect_step(df, 1, "0:(1,3,2,12,'k',7)+1 0:(NULL,3,2,6,'a',3)+1");
        /* Retract the current min of c and max of b in group 1. */
        PUSH(df, 0, 1, -1, "iit", (int64_t)1, (int64_t)7, "k");
        expect_step(df, 2, "1:(1,2,1,5,'m',5)+1 1:(1,3,2,12,'k',7)-1");
        /* Only NULLs left for sum/min/max. */
        PUSH(df, 0, 2, -1, "iit", (int64_t)1, (int64_t)5, "m");
        expect_step(df, 3, "2:(1,1,0,NULL,NULL,NULL)+1 2:(1,2,1,5,'m',5)-1");
        /* The group disappears; an insert and delete within one time changes nothing. */
        PUSH(df, 0, 3, -1, "iit", (int64_t)1, NUL, NULL);
        PUSH(df, 0, 3, 1, "iit", (int64_t)4, (int64_t)1, "q");
        PUSH(df, 0, 3, -1, "iit", (int64_t)4, (int64_t)1, "q");
        expect_step(df, 4, "3:(1,1,0,NULL,NULL,NULL)-1");
        /* Equal min values twice, retract one: the min stays. */
        PUSH(df, 0, 4, 2, "iit", (int64_t)2, (int64_t)1, "b");
        PUSH(df, 0, 4, 1, "iit", (int64_t)2, (int64_t)9, "c");
        expect_step(df, 5, "4:(2,3,3,11,'b',9)+1");
        PUSH(df, 0, 5, -1, "iit", (int64_t)2, (int64_t)1, "b");
        expect_step(df, 6, "5:(2,2,2,10,'b',9)+1 5:(2,3,3,11,'b',9)-1");
        PUSH(df, 0, 6, -1, "iit", (int64_t)2, (int64_t)1, "b");
        expect_step(df, 7, "6:(2,1,1,9,'c',9)+1 6:(2,2,2,10,'b',9)-1");
        dataflow_free(df);
        coord__plan__relation__free_unpacked(p, NULL);
}

static void test_reduce_global(void)
{
        Coord__Plan__Relation *p =
                reduce(get(1, 3, T3), 0, 5, AGG(COUNT_STAR), 0, I8, AGG(COUNT), 1, I8,
                       AGG(SUM), 0, I8, AGG(MIN), 0, I4, AGG(MAX), 2, TX);
        struct dataflow *df = mkdf(p, 100);

        /* No input at all: the first step past as_of emits the default row. */
        expect_step(df, 100, "");
        expect_step(df, 101, "100:(0,0,NULL,NULL,NULL)+1");
        expect_step(df, 150, "");
        PUSH(df, 0, 150, 1, "iit", (int64_t)4, NUL, "x");
        PUSH(df, 0, 150, 1, "iit", (int64_t)-2, (int64_t)1, "y");
        expect_step(df, 151, "150:(0,0,NULL,NULL,NULL)-1 150:(2,1,2,-2,'y')+1");
        PUSH(df, 0, 160, -1, "iit", (int64_t)4, NUL, "x");
        PUSH(df, 0, 160, -1, "iit", (int64_t)-2, (int64_t)1, "y");
        expect_step(df, 200, "160:(0,0,NULL,NULL,NULL)+1 160:(2,1,2,-2,'y')-1");
        dataflow_free(df);
        coord__plan__relation__free_unpacked(p, NULL);

        /* A global aggregate over a Constant, and over nothing before as_of. */
        p = reduce(get(1, 3, T3), 0, 1, AGG(COUNT_STAR), 0, I8);
        df = mkdf(p, 5);
        PUSH(df, 0, 1, 3, "iit", (int64_t)4, NUL, "x");
        expect_step(df, 6, "5:(3)+1");
        dataflow_free(df);
        coord__plan__relation__free_unpacked(p, NULL);
}

static void test_sum_overflow(void)
{
        Coord__Plan__Relation *p = reduce(get(1, 3, T3), 1, 0, 1, AGG(SUM), 1, I8);
        struct dataflow *df = mkdf(p, 0);

        /* Within range at the end of a time although the running sum is not. */
        PUSH(df, 0, 0, 1, "iit", (int64_t)1, INT64_MAX, "a");
        PUSH(df, 0, 0, 1, "iit", (int64_t)1, INT64_MAX, "b");
        PUSH(df, 0, 0, 1, "iit", (int64_t)1, INT64_MIN + 1, "c");
        expect_step(df, 1, "0:(1,9223372036854775807)+1");
        PUSH(df, 0, 1, 1, "iit", (int64_t)1, (int64_t)2, "d");
        expect_step_error(df, 2, "22003");
        expect_step_error(df, 3, "22003");
        dataflow_free(df);
        coord__plan__relation__free_unpacked(p, NULL);
}

static void test_eval_error_poisons(void)
{
        Coord__Plan__Relation *p =
                map1(get(1, 3, T3), call(I8, F(DIV), 2, lit_int(I8, 1), col(I8, 1)));
        struct dataflow *df = mkdf(p, 0);

        PUSH(df, 0, 0, 1, "iit", (int64_t)1, (int64_t)1, "a");
        PUSH(df, 0, 1, 1, "iit", (int64_t)1, (int64_t)0, "a");
        PUSH(df, 0, 2, 1, "iit", (int64_t)1, (int64_t)1, "b");
        /* Times 0..2 in one step: the error at 1 discards the output of 0 too. */
        expect_step_error(df, 3, "22012");
        CU_ASSERT_EQUAL(dataflow_frontier(df), 0);
        expect_step_error(df, 4, "22012");
        dataflow_free(df);
        coord__plan__relation__free_unpacked(p, NULL);
}

static void test_join(void)
{
        /* t JOIN u ON t.a = u.b (int4 = int8) AND t.c = u.c */
        Coord__Plan__Relation *p = join(get(1, 3, T3), get(2, 3, T3), 2, 0, 1, 2, 2);
        struct dataflow *df = mkdf(p, 0);

        CU_ASSERT_EQUAL(dataflow_arity(df), 6);
        PUSH(df, 0, 0, 1, "iit", (int64_t)1, (int64_t)0, "x");
        PUSH(df, 0, 0, 1, "iit", NUL, (int64_t)0, "x");            /* NULL never matches */
        PUSH(df, 1, 0, 2, "iit", (int64_t)7, (int64_t)1, "x");
        PUSH(df, 1, 0, 1, "iit", (int64_t)7, NUL, "x");
        PUSH(df, 1, 0, 1, "iit", (int64_t)7, (int64_t)1, "y");
        expect_step(df, 1, "0:(1,0,'x',7,1,'x')+2");
        PUSH(df, 0, 1, 3, "iit", (int64_t)1, (int64_t)5, "x");
        PUSH(df, 1, 1, -1, "iit", (int64_t)7, (int64_t)1, "x");
        PUSH(df, 1, 1, 1, "iit", (int64_t)8, (int64_t)1, "x");
        expect_step(df, 2, "1:(1,0,'x',7,1,'x')-1 1:(1,0,'x',8,1,'x')+1 "
                           "1:(1,5,'x',7,1,'x')+3 1:(1,5,'x',8,1,'x')+3");
        PUSH(df, 0, 2, -1, "iit", (int64_t)1, (int64_t)0, "x");
        PUSH(df, 0, 2, -3, "iit", (int64_t)1, (int64_t)5, "x");
        expect_step(df, 3, "2:(1,0,'x',7,1,'x')-1 2:(1,0,'x',8,1,'x')-1 "
                           "2:(1,5,'x',7,1,'x')-3 2:(1,5,'x',8,1,'x')-3");
        dataflow_free(df);
        coord__plan__relation__free_unpacked(p, NULL);

        /* No keys: the cross product, with a Constant. */
        {
                Coord__Plan__Relation *k = rel();
                Coord__Plan__Constant *c = xmalloc(sizeof(*c));
                size_t len;

                coord__plan__constant__init(c);
                c->n_column_types = 1;
                c->column_types = xmalloc(sizeof(*c->column_types));
                c->column_types[0] = (Coord__Plan__Type)BO;
                c->n_rows = 2;
                c->rows = xmalloc(2 * sizeof(*c->rows));
                for (int i = 0; i < 2; i++) {
                        c->rows[i] = xmalloc(sizeof(*c->rows[i]));
                        coord__plan__update__init(c->rows[i]);
                        c->rows[i]->row.data = mkrow(&len, "b", i);
                        c->rows[i]->row.len = len;
                        c->rows[i]->diff = 1 + i;
                }
                k->kind_case = COORD__PLAN__RELATION__KIND_CONSTANT;
                k->constant = c;
                p = join(k, project(get(2, 3, T3), 1, 2), 0);
                df = mkdf(p, 3);
                expect_step(df, 4, "");
                PUSH(df, 0, 4, 1, "iit", (int64_t)7, (int64_t)1, "x");
                expect_step(df, 5, "4:(f,'x')+1 4:(t,'x')+2");
                dataflow_free(df);
                coord__plan__relation__free_unpacked(p, NULL);
        }
}

static void test_topk(void)
{
        /* ORDER BY b DESC (NULLS FIRST) LIMIT 2 OFFSET 1; ties by the whole row. */
        Coord__Plan__Relation *p = topk(get(1, 3, T3), true, 2, 1, 1, 1, 1, 1);
        struct dataflow *df = mkdf(p, 0);

        CU_ASSERT_EQUAL(dataflow_arity(df), 3);
        PUSH(df, 0, 0, 1, "iit", (int64_t)1, (int64_t)5, "x");
        PUSH(df, 0, 0, 2, "iit", (int64_t)2, (int64_t)3, "y");
        PUSH(df, 0, 0, 1, "iit", (int64_t)3, NUL, "z");
        PUSH(df, 0, 0, 1, "iit", (int64_t)4, (int64_t)5, "a");
        /* Places: (3,NULL) (1,5) (4,5) (2,3) (2,3); the window is places 1 and 2. */
        expect_step(df, 1, "0:(1,5,'x')+1 0:(4,5,'a')+1");
        PUSH(df, 0, 1, -1, "iit", (int64_t)3, NUL, "z");
        expect_step(df, 2, "1:(1,5,'x')-1 1:(2,3,'y')+1");
        /* A row after the window, and a change that nets to nothing: no output. */
        PUSH(df, 0, 2, 1, "iit", (int64_t)2, (int64_t)3, "y");
        PUSH(df, 0, 2, 1, "iit", (int64_t)9, (int64_t)0, "q");
        PUSH(df, 0, 2, -1, "iit", (int64_t)9, (int64_t)0, "q");
        expect_step(df, 3, "");
        /* A row with count 3 takes 3 places: the window is two of them. */
        PUSH(df, 0, 3, -1, "iit", (int64_t)1, (int64_t)5, "x");
        PUSH(df, 0, 3, -1, "iit", (int64_t)4, (int64_t)5, "a");
        expect_step(df, 4, "3:(2,3,'y')+1 3:(4,5,'a')-1");
        /* A tie on b: the smaller whole row goes first. */
        PUSH(df, 0, 4, 1, "iit", (int64_t)0, (int64_t)3, "y");
        expect_step(df, 5, "");
        PUSH(df, 0, 5, 1, "iit", (int64_t)0, (int64_t)4, "y");
        expect_step(df, 6, "5:(0,3,'y')+1 5:(2,3,'y')-1");
        /* Everything out. */
        PUSH(df, 0, 6, -3, "iit", (int64_t)2, (int64_t)3, "y");
        PUSH(df, 0, 6, -1, "iit", (int64_t)0, (int64_t)3, "y");
        PUSH(df, 0, 6, -1, "iit", (int64_t)0, (int64_t)4, "y");
        expect_step(df, 7, "6:(0,3,'y')-1 6:(2,3,'y')-1");
        /* A negative count is corruption. */
        PUSH(df, 0, 7, -1, "iit", (int64_t)0, (int64_t)4, "y");
        expect_step_error(df, 8, "XX000");
        dataflow_free(df);
        coord__plan__relation__free_unpacked(p, NULL);

        /* OFFSET without LIMIT, ascending NULLS FIRST on a text, then a descending int. */
        p = topk(get(1, 3, T3), false, 0, 2, 2, 2, 0, 1, 0, 1, 0);
        df = mkdf(p, 0);
        PUSH(df, 0, 0, 1, "iit", (int64_t)1, (int64_t)1, "b");
        PUSH(df, 0, 0, 1, "iit", (int64_t)2, (int64_t)1, "a");
        PUSH(df, 0, 0, 1, "iit", (int64_t)3, (int64_t)1, NULL);
        PUSH(df, 0, 0, 1, "iit", (int64_t)4, (int64_t)1, "a");
        /* Order: (3,NULL) (4,a) (2,a) (1,b); from place 2 on. */
        expect_step(df, 1, "0:(1,1,'b')+1 0:(2,1,'a')+1");
        PUSH(df, 0, 1, -1, "iit", (int64_t)3, (int64_t)1, NULL);
        expect_step(df, 2, "1:(2,1,'a')-1");
        dataflow_free(df);
        coord__plan__relation__free_unpacked(p, NULL);
}

static void test_plan_errors(void)
{
        struct dataflow *df = NULL;
        struct row_error err = { 0 };
        Coord__Plan__Relation *p;

        /* Join key out of range. */
        p = join(get(1, 3, T3), get(2, 3, T3), 1, 5, 0);
        CU_ASSERT_EQUAL(dataflow_new(p, 0, &df, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "XX000");
        CU_ASSERT(df == NULL);
        coord__plan__relation__free_unpacked(p, NULL);
        /* Join keys of different types. */
        p = join(get(1, 3, T3), get(2, 3, T3), 1, 0, 2);
        CU_ASSERT_EQUAL(dataflow_new(p, 0, &df, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "XX000");
        coord__plan__relation__free_unpacked(p, NULL);
        /* Sum over text; wrong aggregate result type; unknown aggregate. */
        p = reduce(get(1, 3, T3), 0, 1, AGG(SUM), 2, I8);
        CU_ASSERT_EQUAL(dataflow_new(p, 0, &df, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "XX000");
        coord__plan__relation__free_unpacked(p, NULL);
        p = reduce(get(1, 3, T3), 0, 1, AGG(MIN), 0, I8);
        CU_ASSERT_EQUAL(dataflow_new(p, 0, &df, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "XX000");
        coord__plan__relation__free_unpacked(p, NULL);
        p = reduce(get(1, 3, T3), 0, 1, 99, 0, I8);
        CU_ASSERT_EQUAL(dataflow_new(p, 0, &df, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "0A000");
        coord__plan__relation__free_unpacked(p, NULL);
        /* Union of different columns. */
        p = union_of(2, get(1, 3, T3), project(get(2, 3, T3), 1, 0));
        CU_ASSERT_EQUAL(dataflow_new(p, 0, &df, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "XX000");
        coord__plan__relation__free_unpacked(p, NULL);
        /* Two Gets of one collection that disagree on its columns. */
        p = union_of(2, project(get(1, 3, T3), 1, 0), project(get(1, 2, T3), 1, 0));
        CU_ASSERT_EQUAL(dataflow_new(p, 0, &df, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "XX000");
        coord__plan__relation__free_unpacked(p, NULL);
        /* An empty relation; an unknown function inside a Filter over a Join. */
        p = distinct(rel());
        CU_ASSERT_EQUAL(dataflow_new(p, 0, &df, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "XX000");
        coord__plan__relation__free_unpacked(p, NULL);
        p = filter(join(get(1, 3, T3), get(2, 3, T3), 0), call(BO, 999, 0));
        CU_ASSERT_EQUAL(dataflow_new(p, 0, &df, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "0A000");
        coord__plan__relation__free_unpacked(p, NULL);
        /* TopK: a sort key out of range, a limit without has_limit, a missing key. */
        p = topk(get(1, 3, T3), true, 1, 0, 1, 3, 0, 0);
        CU_ASSERT_EQUAL(dataflow_new(p, 0, &df, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "XX000");
        CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "invalid plan"));
        coord__plan__relation__free_unpacked(p, NULL);
        p = topk(get(1, 3, T3), false, 1, 0, 1, 0, 0, 0);
        CU_ASSERT_EQUAL(dataflow_new(p, 0, &df, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "XX000");
        coord__plan__relation__free_unpacked(p, NULL);
        p = topk(get(1, 3, T3), true, 1, 0, 1, 0, 0, 0);
        coord__plan__sort_key__free_unpacked(p->top_k->order[0], NULL);
        p->top_k->order[0] = NULL;
        CU_ASSERT_EQUAL(dataflow_new(p, 0, &df, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "XX000");
        p->top_k->n_order = 0;
        coord__plan__relation__free_unpacked(p, NULL);
        p = topk(NULL, true, 1, 0, 0);
        CU_ASSERT_EQUAL(dataflow_new(p, 0, &df, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "XX000");
        coord__plan__relation__free_unpacked(p, NULL);
        /* Inputs sorted by id, deduplicated. */
        p = union_of(3, get(9, 3, T3), get(3, 3, T3), get(9, 3, T3));
        df = mkdf(p, 0);
        CU_ASSERT_EQUAL(dataflow_n_inputs(df), 2);
        CU_ASSERT_EQUAL(dataflow_input_id(df, 0), 3);
        CU_ASSERT_EQUAL(dataflow_input_id(df, 1), 9);
        PUSH(df, 1, 0, 1, "iit", (int64_t)1, (int64_t)1, "nine");
        expect_step(df, 1, "0:(1,1,'nine')+2");
        CU_ASSERT(dataflow_state_bytes(df) > 0);
        dataflow_free(df);
        coord__plan__relation__free_unpacked(p, NULL);
        CU_ASSERT(dataflow_free(NULL) == NULL);
}

/* ---- The naive evaluator. ---- */

struct nrow {
        uint8_t *row;
        size_t len;
        int64_t c;
};

struct nrel {
        struct nrow *v;
        size_t n, cap;
};

static void nrel_add(struct nrel *r, const void *row, size_t len, int64_t c)
{
        if (r->n == r->cap) {
                r->cap = r->cap ? 2 * r->cap : 16;
                r->v = realloc(r->v, r->cap * sizeof(*r->v));
                if (!r->v)
                        abort();
        }
        r->v[r->n].row = xmalloc(len);
        memcpy(r->v[r->n].row, row, len);
        r->v[r->n].len = len;
        r->v[r->n++].c = c;
}

static void nrel_add_datums(struct nrel *r, const struct row_datum *d, size_t n, int64_t c)
{
        uint8_t *row;
        size_t len;

        if (row_encode(d, n, &row, &len) < 0)
                abort();
        nrel_add(r, row, len, c);
        free(row);
}

static void nrel_done(struct nrel *r)
{
        for (size_t i = 0; i < r->n; i++)
                free(r->v[i].row);
        free(r->v);
        *r = (struct nrel){ 0 };
}

static int cmp_nrow(const void *x, const void *y)
{
        const struct nrow *a = x, *b = y;
        int c = memcmp(a->row, b->row, a->len < b->len ? a->len : b->len);

        return c ? c : (a->len > b->len) - (a->len < b->len);
}

static void nrel_consolidate(struct nrel *r)
{
        size_t o = 0;

        if (r->n)
                qsort(r->v, r->n, sizeof(*r->v), cmp_nrow);
        for (size_t i = 0; i < r->n;) {
                struct nrow x = r->v[i];
                size_t j = i + 1;

                for (; j < r->n && cmp_nrow(&x, &r->v[j]) == 0; j++) {
                        x.c += r->v[j].c;
                        free(r->v[j].row);
                }
                if (x.c)
                        r->v[o++] = x;
                else
                        free(x.row);
                i = j;
        }
        r->n = o;
}

/* The accumulated inputs: all updates, filtered by time when evaluating. */
struct nupd {
        uint64_t id;
        uint8_t *row;
        size_t len;
        uint64_t time;
        int64_t diff;
};

static struct nupd *nlog;
static size_t n_nlog, cap_nlog;

static void naive(const Coord__Plan__Relation *p, uint64_t t, struct nrel *out);

#define MAXC 32

static void naive_linear(const Coord__Plan__Relation *p, uint64_t t, struct nrel *out)
{
        struct nrel in = { 0 };
        const Coord__Plan__Relation *child =
                p->kind_case == COORD__PLAN__RELATION__KIND_FILTER ? p->filter->input :
                p->kind_case == COORD__PLAN__RELATION__KIND_MAP ? p->map->input :
                p->project->input;

        naive(child, t, &in);
        for (size_t i = 0; i < in.n; i++) {
                struct row_datum d[MAXC], e[MAXC];
                struct row_arena arena = ROW_ARENA_INIT;
                struct row_expr_ctx ctx = { .now = t, .has_now = true, .arena = &arena };
                struct row_error err;
                int n = row_decode(in.v[i].row, in.v[i].len, d, MAXC);
                bool keep = true;

                CU_ASSERT_FATAL(n >= 0);
                if (p->kind_case == COORD__PLAN__RELATION__KIND_FILTER) {
                        for (size_t k = 0; k < p->filter->n_predicates && keep; k++)
                                CU_ASSERT_FATAL(row_expr_eval_predicate(p->filter->predicates[k],
                                                                        d, (size_t)n, &ctx,
                                                                        &keep, &err) == 0);
                } else if (p->kind_case == COORD__PLAN__RELATION__KIND_MAP) {
                        for (size_t k = 0; k < p->map->n_exprs; k++, n++)
                                CU_ASSERT_FATAL(row_expr_eval(p->map->exprs[k], d, (size_t)n,
                                                              &ctx, &d[n], &err) == 0);
                } else {
                        for (size_t k = 0; k < p->project->n_outputs; k++)
                                e[k] = d[p->project->outputs[k]];
                        n = (int)p->project->n_outputs;
                        memcpy(d, e, (size_t)n * sizeof(*d));
                }
                if (keep)
                        nrel_add_datums(out, d, (size_t)n, in.v[i].c);
                row_arena_done(&arena);
        }
        nrel_done(&in);
}

static void naive_join(const Coord__Plan__Join *j, uint64_t t, struct nrel *out)
{
        struct nrel l = { 0 }, r = { 0 };

        naive(j->left, t, &l);
        naive(j->right, t, &r);
        nrel_consolidate(&l);
        nrel_consolidate(&r);
        for (size_t a = 0; a < l.n; a++)
                for (size_t b = 0; b < r.n; b++) {
                        struct row_datum d[2 * MAXC];
                        int nl = row_decode(l.v[a].row, l.v[a].len, d, MAXC);
                        int nr = row_decode(r.v[b].row, r.v[b].len, d + nl, MAXC);
                        bool match = true;

                        for (size_t k = 0; k < j->n_left_keys && match; k++) {
                                const struct row_datum *x = &d[j->left_keys[k]],
                                                       *y = &d[nl + (int)j->right_keys[k]];

                                match = x->kind != ROW_KIND_NULL && y->kind != ROW_KIND_NULL &&
                                        row_datum_compare(x, y) == 0;
                        }
                        if (match)
                                nrel_add_datums(out, d, (size_t)(nl + nr),
                                                l.v[a].c * r.v[b].c);
                }
        nrel_done(&l);
        nrel_done(&r);
}

/* Order of min/max: arrays element-wise (PostgreSQL's), everything else as datums. */
static int naive_cmp(int type, const struct row_datum *x, const struct row_datum *y)
{
        struct row_arena arena = ROW_ARENA_INIT;
        int c = 0;

        if (!row_type_is_array(type))
                return row_datum_compare(x, y);
        CU_ASSERT_FATAL(row_array_compare((enum row_type)type, x, y, &arena, &c, NULL) == 0);
        row_arena_done(&arena);
        return c;
}

static int datum_qcmp(const void *x, const void *y)
{
        return row_datum_compare(x, y);
}

/* array_agg / string_agg of vals[0..n) (non-NULL, with repeats) and `nulls` NULLs:
 * sorted ascending, NULLs last (proto/plan.proto AGG_ARRAY_AGG), in `arena`. */
static struct row_datum naive_gather(const Coord__Plan__Aggregate *ag, struct row_datum *vals,
                                     size_t n, size_t nulls, struct row_arena *arena)
{
        struct row_datum r = ROW_DATUM_NULL;
        size_t len = 0, dl = strlen(ag->delimiter);
        char *p;

        qsort(vals, n, sizeof(*vals), datum_qcmp);
        if (ag->func == AGG(ARRAY_AGG)) {
                if (n + nulls == 0)
                        return r;
                for (size_t i = 0; i < nulls; i++)
                        vals[n + i] = ROW_DATUM_NULL;
                CU_ASSERT_FATAL(row_array_build((enum row_type)ag->type, vals, n + nulls, arena,
                                                &r, NULL) == 0);
                return r;
        }
        if (n == 0)
                return r;
        p = row_arena_alloc(arena, 64 * (n + 1) * (dl + 1));
        for (size_t i = 0; i < n; i++) {
                len += (size_t)sprintf(p + len, "%s%.*s", i ? ag->delimiter : "",
                                       (int)vals[i].text.len, vals[i].text.ptr);
        }
        return (struct row_datum)ROW_DATUM_TEXT(p, (uint32_t)len);
}

static void naive_reduce(const Coord__Plan__Reduce *rd, uint64_t t, struct nrel *out)
{
        struct row_arena arena = ROW_ARENA_INIT;
        struct nrel in = { 0 };
        bool *done;

        naive(rd->input, t, &in);
        nrel_consolidate(&in);
        done = calloc(in.n + 1, 1);
        for (size_t i = 0; i <= in.n; i++) {
                struct row_datum g[MAXC], res[MAXC];
                size_t nk = rd->n_group_keys, nres;
                int64_t count = 0;

                if (i == in.n) {
                        /* The global aggregate over an empty input. */
                        if (nk != 0 || in.n != 0)
                                break;
                } else {
                        if (done[i])
                                continue;
                        CU_ASSERT_FATAL(row_decode(in.v[i].row, in.v[i].len, g, MAXC) >= 0);
                }
                for (size_t k = 0; k < nk; k++)
                        res[k] = g[rd->group_keys[k]];
                nres = nk;
                for (size_t a = 0; a < rd->n_aggregates; a++) {
                        const Coord__Plan__Aggregate *ag = rd->aggregates[a];
                        __int128 sum = 0;
                        int64_t nonnull = 0;
                        struct row_datum best = ROW_DATUM_NULL;
                        struct row_datum *vals = NULL;
                        size_t n_vals = 0;

                        count = 0;
                        for (size_t m = 0; m < in.n; m++) {
                                struct row_datum d[MAXC];
                                bool same = true;

                                CU_ASSERT_FATAL(row_decode(in.v[m].row, in.v[m].len, d, MAXC) >= 0);
                                for (size_t k = 0; k < nk && same; k++)
                                        same = row_datum_compare(&d[rd->group_keys[k]],
                                                                 &res[k]) == 0;
                                if (!same)
                                        continue;
                                done[m] = true;
                                count += in.v[m].c;
                                if (ag->func == AGG(COUNT_STAR) ||
                                    d[ag->column].kind == ROW_KIND_NULL)
                                        continue;
                                nonnull += in.v[m].c;
                                sum += (__int128)d[ag->column].i * in.v[m].c;
                                if ((ag->func == AGG(MIN) || ag->func == AGG(MAX)) &&
                                    (best.kind == ROW_KIND_NULL ||
                                    (ag->func == AGG(MIN) ?
                                     naive_cmp(ag->type, &d[ag->column], &best) < 0 :
                                     naive_cmp(ag->type, &d[ag->column], &best) > 0)))
                                        best = d[ag->column];
                                vals = realloc(vals, (n_vals + (size_t)in.v[m].c) * sizeof(*vals));
                                for (int64_t c = 0; c < in.v[m].c; c++)
                                        vals[n_vals++] = d[ag->column];
                        }
                        if (ag->func == AGG(ARRAY_AGG) || ag->func == AGG(STRING_AGG)) {
                                vals = realloc(vals, (n_vals + (size_t)(count - nonnull) + 1) *
                                                     sizeof(*vals));
                                best = naive_gather(ag, vals, n_vals, (size_t)(count - nonnull),
                                                    &arena);
                        }
                        free(vals);
                        switch (ag->func) {
                        case AGG(COUNT_STAR):
                                res[nres++] = ROW_DATUM_INT(count);
                                break;
                        case AGG(COUNT):
                                res[nres++] = ROW_DATUM_INT(nonnull);
                                break;
                        case AGG(SUM):
                                res[nres++] = nonnull ? ROW_DATUM_INT((int64_t)sum) : ROW_DATUM_NULL;
                                break;
                        default:
                                res[nres++] = best;
                                break;
                        }
                }
                if (rd->n_aggregates == 0)
                        for (size_t m = 0; m < in.n; m++) {
                                struct row_datum d[MAXC];
                                bool same = true;

                                CU_ASSERT_FATAL(row_decode(in.v[m].row, in.v[m].len, d, MAXC) >= 0);
                                for (size_t k = 0; k < nk && same; k++)
                                        same = row_datum_compare(&d[rd->group_keys[k]],
                                                                 &res[k]) == 0;
                                if (same)
                                        done[m] = true;
                        }
                nrel_add_datums(out, res, nres, 1);
        }
        free(done);
        nrel_done(&in);
        row_arena_done(&arena);
}

/* TopK, written independently of the engine: sort the consolidated input by the keys as
 * PostgreSQL orders them, then by the whole row, and cut places [offset, offset+limit). */
static const Coord__Plan__TopK *naive_tk;

static int cmp_topk(const void *x, const void *y)
{
        const struct nrow *a = x, *b = y;
        struct row_datum da[MAXC], db[MAXC];

        CU_ASSERT_FATAL(row_decode(a->row, a->len, da, MAXC) >= 0);
        CU_ASSERT_FATAL(row_decode(b->row, b->len, db, MAXC) >= 0);
        for (size_t k = 0; k < naive_tk->n_order; k++) {
                const Coord__Plan__SortKey *sk = naive_tk->order[k];
                const struct row_datum *p = &da[sk->column], *q = &db[sk->column];
                int c;

                if (p->kind == ROW_KIND_NULL && q->kind == ROW_KIND_NULL)
                        continue;
                if (p->kind == ROW_KIND_NULL)
                        return sk->nulls_first ? -1 : 1;
                if (q->kind == ROW_KIND_NULL)
                        return sk->nulls_first ? 1 : -1;
                c = row_datum_compare(p, q);
                if (c)
                        return sk->descending ? -c : c;
        }
        return row_compare(a->row, a->len, b->row, b->len);
}

static void naive_topk(const Coord__Plan__TopK *tk, uint64_t t, struct nrel *out)
{
        struct nrel in = { 0 };
        uint64_t place = 0;

        naive(tk->input, t, &in);
        nrel_consolidate(&in);
        naive_tk = tk;
        if (in.n)
                qsort(in.v, in.n, sizeof(*in.v), cmp_topk);
        for (size_t i = 0; i < in.n; i++)
                for (int64_t c = 0; c < in.v[i].c; c++, place++) {
                        CU_ASSERT(in.v[i].c > 0);
                        if (place >= tk->offset && (!tk->has_limit || place - tk->offset < tk->limit))
                                nrel_add(out, in.v[i].row, in.v[i].len, 1);
                }
        nrel_done(&in);
}

static void naive(const Coord__Plan__Relation *p, uint64_t t, struct nrel *out)
{
        switch (p->kind_case) {
        case COORD__PLAN__RELATION__KIND_GET:
                for (size_t i = 0; i < n_nlog; i++)
                        if (nlog[i].id == p->get->id && nlog[i].time <= t)
                                nrel_add(out, nlog[i].row, nlog[i].len, nlog[i].diff);
                break;
        case COORD__PLAN__RELATION__KIND_CONSTANT:
                for (size_t i = 0; i < p->constant->n_rows; i++)
                        nrel_add(out, p->constant->rows[i]->row.data, p->constant->rows[i]->row.len,
                                 p->constant->rows[i]->diff);
                break;
        case COORD__PLAN__RELATION__KIND_FILTER:
        case COORD__PLAN__RELATION__KIND_MAP:
        case COORD__PLAN__RELATION__KIND_PROJECT:
                naive_linear(p, t, out);
                break;
        case COORD__PLAN__RELATION__KIND_JOIN:
                naive_join(p->join, t, out);
                break;
        case COORD__PLAN__RELATION__KIND_REDUCE:
                naive_reduce(p->reduce, t, out);
                break;
        case COORD__PLAN__RELATION__KIND_UNION:
                for (size_t i = 0; i < p->union_->n_inputs; i++)
                        naive(p->union_->inputs[i], t, out);
                break;
        case COORD__PLAN__RELATION__KIND_NEGATE: {
                size_t first = out->n;

                naive(p->negate->input, t, out);
                for (size_t i = first; i < out->n; i++)
                        out->v[i].c = -out->v[i].c;
                break;
        }
        case COORD__PLAN__RELATION__KIND_TOP_K:
                naive_topk(p->top_k, t, out);
                break;
        case COORD__PLAN__RELATION__KIND_THRESHOLD: {
                struct nrel in = { 0 };

                naive(p->threshold->input, t, &in);
                nrel_consolidate(&in);
                for (size_t i = 0; i < in.n; i++)
                        if (in.v[i].c > 0)
                                nrel_add(out, in.v[i].row, in.v[i].len, in.v[i].c);
                nrel_done(&in);
                break;
        }
        case COORD__PLAN__RELATION__KIND_DISTINCT: {
                struct nrel in = { 0 };

                naive(p->distinct->input, t, &in);
                nrel_consolidate(&in);
                for (size_t i = 0; i < in.n; i++) {
                        CU_ASSERT(in.v[i].c > 0);
                        if (in.v[i].c > 0)
                                nrel_add(out, in.v[i].row, in.v[i].len, 1);
                }
                nrel_done(&in);
                break;
        }
        default:
                abort();
        }
}

/* ---- The property test. ---- */

static uint64_t rnd_state;

static uint64_t rnd(void)
{
        uint64_t x = rnd_state;

        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return rnd_state = x;
}

static unsigned rn(unsigned n)
{
        return (unsigned)(rnd() % n);
}

static const char *const texts[] = { "x", "y", "zz", NULL };

/* Random updates of inputs 1..3 over times [0, T): inserts of small values (so that
 * joins match and groups collide) and deletes of rows present at that time. */
static void gen_log(uint64_t T)
{
        struct nrel cur[4] = { { 0 } };

        n_nlog = 0;
        for (uint64_t t = 0; t < T; t++)
                for (uint64_t id = 1; id <= 3; id++) {
                        unsigned k = rn(4);

                        for (unsigned i = 0; i < k; i++) {
                                uint8_t *row;
                                size_t len;
                                int64_t diff;

                                nrel_consolidate(&cur[id]);
                                if (cur[id].n && rn(3) == 0) {
                                        struct nrow *x = &cur[id].v[rn((unsigned)cur[id].n)];

                                        diff = -(int64_t)(1 + rn((unsigned)x->c));
                                        row = xmalloc(x->len);
                                        memcpy(row, x->row, x->len);
                                        len = x->len;
                                } else {
                                        int64_t a = rn(6) == 0 ? NUL : (int64_t)rn(4);
                                        int64_t b = rn(6) == 0 ? NUL : (int64_t)rn(5) - 2;

                                        diff = 1 + rn(2);
                                        row = mkrow(&len, "iit", a, b, texts[rn(4)]);
                                }
                                nrel_add(&cur[id], row, len, diff);
                                if (n_nlog == cap_nlog) {
                                        cap_nlog = cap_nlog ? 2 * cap_nlog : 256;
                                        nlog = realloc(nlog, cap_nlog * sizeof(*nlog));
                                }
                                nlog[n_nlog++] = (struct nupd){ id, row, len, t, diff };
                        }
                }
        for (int i = 0; i < 4; i++)
                nrel_done(&cur[i]);
}

static void free_log(void)
{
        for (size_t i = 0; i < n_nlog; i++)
                free(nlog[i].row);
        n_nlog = 0;
}

static size_t input_of(struct dataflow *df, uint64_t id)
{
        for (size_t i = 0; i < dataflow_n_inputs(df); i++)
                if (dataflow_input_id(df, i) == id)
                        return i;
        return SIZE_MAX;
}

/* Run the plan over the log, stepping to each frontier in `frontiers`, pushing the
 * updates for [previous frontier, frontier) (shuffled) before each step. */
static void run_plan(const Coord__Plan__Relation *p, uint64_t as_of, const uint64_t *frontiers,
                     size_t n_frontiers, struct eval_batch *out)
{
        struct dataflow *df = mkdf((Coord__Plan__Relation *)p, as_of);
        uint64_t prev = 0;
        size_t *idx = xmalloc(n_nlog * sizeof(*idx));

        for (size_t f = 0; f < n_frontiers; f++) {
                struct row_error err = { 0 };
                size_t m = 0, before = out->n;
                int r;

                for (size_t i = 0; i < n_nlog; i++)
                        if (nlog[i].time < frontiers[f] && (f == 0 || nlog[i].time >= prev))
                                idx[m++] = i;
                for (size_t i = m; i > 1; i--) {
                        size_t j = rn((unsigned)i), x = idx[i - 1];

                        idx[i - 1] = idx[j];
                        idx[j] = x;
                }
                for (size_t i = 0; i < m; i++) {
                        const struct nupd *u = &nlog[idx[i]];
                        struct eval_update e = { u->row, u->len, u->time, u->diff };
                        size_t in = input_of(df, u->id);

                        if (in == SIZE_MAX)
                                continue;
                        r = dataflow_push(df, in, &e, 1, &err);
                        CU_ASSERT_EQUAL_FATAL(r, 0);
                }
                r = dataflow_step(df, frontiers[f], out, &err);
                if (r < 0)
                        fprintf(stderr, "\n  step: %s %s\n", err.sqlstate, err.message);
                CU_ASSERT_EQUAL_FATAL(r, 0);
                /* The output: times in [prev frontier, frontier), in time order,
                 * consolidated per (row, time), no zero diffs. */
                for (size_t i = before; i < out->n; i++) {
                        const struct eval_update *u = &out->updates[i];

                        CU_ASSERT(u->diff != 0);
                        CU_ASSERT(u->time >= as_of && u->time < frontiers[f]);
                        CU_ASSERT(f == 0 || u->time >= prev);
                        if (i > before) {
                                const struct eval_update *v = &out->updates[i - 1];

                                CU_ASSERT(v->time <= u->time);
                                CU_ASSERT(v->time < u->time || v->len != u->len ||
                                          memcmp(v->row, u->row, u->len) != 0);
                        }
                }
                prev = frontiers[f];
        }
        CU_ASSERT(dataflow_state_bytes(df) > 0);
        free(idx);
        dataflow_free(df);
}

/* Compare the accumulated output at each time in [as_of, T) with the naive answer. */
static void check_against_naive(const Coord__Plan__Relation *p, const char *name,
                                uint64_t as_of, uint64_t T, struct eval_batch *out)
{
        for (uint64_t t = as_of; t < T; t++) {
                struct nrel want = { 0 }, got = { 0 };
                bool same;

                naive(p, t, &want);
                nrel_consolidate(&want);
                for (size_t i = 0; i < out->n; i++)
                        if (out->updates[i].time <= t)
                                nrel_add(&got, out->updates[i].row, out->updates[i].len,
                                         out->updates[i].diff);
                nrel_consolidate(&got);
                same = got.n == want.n;
                for (size_t i = 0; same && i < got.n; i++)
                        same = got.v[i].c == want.v[i].c && cmp_nrow(&got.v[i], &want.v[i]) == 0;
                if (!same) {
                        fprintf(stderr, "\n  plan %s differs at t=%" PRIu64 ": got %zu rows, "
                                        "want %zu\n", name, t, got.n, want.n);
                        for (size_t i = 0; i < got.n; i++) {
                                char *s = NULL;

                                row_to_string(got.v[i].row, got.v[i].len, &s);
                                fprintf(stderr, "    got  %s x%" PRId64 "\n", s, got.v[i].c);
                                free(s);
                        }
                        for (size_t i = 0; i < want.n; i++) {
                                char *s = NULL;

                                row_to_string(want.v[i].row, want.v[i].len, &s);
                                fprintf(stderr, "    want %s x%" PRId64 "\n", s, want.v[i].c);
                                free(s);
                        }
                }
                CU_ASSERT(same);
                nrel_done(&want);
                nrel_done(&got);
                if (!same)
                        return;
        }
}

static Coord__Plan__Relation *G(uint64_t id)
{
        return get(id, 3, T3);
}

#define N_PLANS 28

#define I8A ROW_TYPE_INT8_ARRAY
#define TXA ROW_TYPE_TEXT_ARRAY

/* A Reduce's aggregate i given string_agg's delimiter. */
static Coord__Plan__Relation *delimit(Coord__Plan__Relation *r, size_t i, const char *delim)
{
        r->reduce->aggregates[i]->delimiter = strdup(delim);
        return r;
}

static Coord__Plan__Relation *make_plan(int i, const char **name)
{
        switch (i) {
        case 0:
                *name = "filter+map";
                return project(filter(map1(G(1), call(I8, F(ADD), 2, col(I8, 1), lit_int(I8, 10))),
                                      call(BO, F(LT), 2, col(I4, 0), lit_int(I4, 3))),
                               3, 3, 2, 0);
        case 1:
                *name = "join2";
                return join(G(1), G(2), 1, 0, 0);
        case 2:
                *name = "join3";
                return join(join(G(1), G(2), 1, 0, 1), G(3), 2, 2, 2, 4, 1);
        case 3:
                *name = "reduce keys";
                return reduce(G(1), 1, 0, 5, AGG(COUNT_STAR), 0, I8, AGG(COUNT), 1, I8,
                              AGG(SUM), 1, I8, AGG(MIN), 1, I8, AGG(MAX), 2, TX);
        case 4:
                *name = "reduce global";
                return reduce(G(2), 0, 6, AGG(COUNT_STAR), 0, I8, AGG(COUNT), 2, I8,
                              AGG(SUM), 0, I8, AGG(MIN), 2, TX, AGG(MAX), 1, I8,
                              AGG(MIN), 0, I4);
        case 5:
                *name = "distinct";
                return distinct(project(G(1), 2, 0, 2));
        case 6:
                *name = "union";
                return union_of(3, G(1), G(2), G(1));
        case 7:
                *name = "except all";
                return union_of(2, G(3), negate(filter(G(3), call(BO, F(GE), 2, col(I8, 1),
                                                                   lit_int(I8, 0)))));
        case 8:
                *name = "reduce over join";
                return reduce(join(G(1), G(2), 1, 2, 2), 2, 2, 3, 3, AGG(COUNT_STAR), 0, I8,
                              AGG(SUM), 4, I8, AGG(MAX), 0, I4);
        case 9:
                *name = "filter over reduce";
                return filter(reduce(G(1), 2, 0, 2, 1, AGG(COUNT_STAR), 0, I8),
                              call(BO, F(GT), 2, col(I8, 2), lit_int(I8, 1)));
        case 10:
                *name = "distinct union except";
                return distinct(union_of(2, project(G(1), 1, 0),
                                         project(union_of(2, G(2),
                                                          negate(filter(G(2),
                                                                        call(BO, F(IS_NULL), 1,
                                                                             col(I4, 0))))),
                                                 1, 0)));
        case 11:
                *name = "cross join";
                return join(project(G(1), 1, 2), distinct(project(G(3), 1, 0)), 0);
        case 12:
                *name = "join with negate";
                return join(negate(G(1)), union_of(2, G(2), G(3)), 1, 1, 1);
        case 13:
                *name = "join of reduces";
                return join(reduce(G(1), 1, 0, 1, AGG(COUNT_STAR), 0, I8),
                            reduce(G(2), 1, 0, 1, AGG(MIN), 1, I8), 1, 0, 0);
        case 14:
                *name = "global reduce over empty filter";
                return reduce(filter(G(3), call(BO, F(LT), 2, col(I4, 0), lit_int(I4, 0))), 0, 2,
                              AGG(COUNT_STAR), 0, I8, AGG(SUM), 1, I8);
        case 16:
                *name = "topk: b desc, a, limit 3";
                return topk(G(1), true, 3, 0, 2, 1, 1, 1, 0, 0, 0);
        case 17:
                *name = "topk: c nulls first, limit 2 offset 2, over a union";
                return topk(union_of(2, G(1), G(2)), true, 2, 2, 1, 2, 0, 1);
        case 18:
                *name = "topk: offset 3 only, over a join";
                return topk(project(join(G(1), G(2), 1, 0, 0), 3, 1, 4, 5), false, 0, 3, 2, 0, 1, 0,
                            2, 0, 0);
        case 19:
                *name = "topk over a reduce: count desc, limit 2";
                return topk(reduce(G(3), 1, 0, 1, AGG(COUNT_STAR), 0, I8), true, 2, 0, 2, 1, 1, 0,
                            0, 0, 0);
        case 20:
                *name = "topk of a topk, whole-row order, and a join over a topk";
                return join(topk(topk(G(2), true, 5, 1, 0), true, 2, 1, 1, 2, 1, 1),
                            G(3), 1, 0, 0);
        case 21:
                *name = "topk limit 0";
                return union_of(2, topk(G(1), true, 0, 0, 1, 0, 0, 0), topk(G(1), true, 1, 0, 0));
        case 22:
                *name = "array_agg, string_agg by key and global";
                return join(delimit(reduce(G(1), 1, 0, 3, AGG(ARRAY_AGG), 1, I8A,
                                           AGG(STRING_AGG), 2, TX, AGG(ARRAY_AGG), 2, TXA), 1, "-"),
                            delimit(reduce(G(2), 0, 2, AGG(STRING_AGG), 2, TX,
                                           AGG(ARRAY_AGG), 0, ROW_TYPE_INT4_ARRAY), 0, ""), 0);
        case 23:
                *name = "min/max of arrays (element order) over array_agg";
                return reduce(reduce(G(3), 1, 0, 1, AGG(ARRAY_AGG), 1, I8A), 0, 2,
                              AGG(MIN), 1, I8A, AGG(MAX), 1, I8A);
        case 24:
                *name = "threshold: except all over two columns";
                return threshold(union_of(2, project(G(1), 2, 0, 2),
                                          negate(project(G(2), 2, 0, 2))));
        case 25:
                *name = "threshold: intersect all (a - threshold(a - b))";
                return union_of(2, project(G(1), 1, 1),
                                negate(threshold(union_of(2, project(G(1), 1, 1),
                                                          negate(project(G(3), 1, 1))))));
        case 26:
                *name = "reduce and join over a threshold of whole rows";
                return join(reduce(threshold(union_of(2, G(2), negate(G(3)))), 1, 0, 2,
                                   AGG(COUNT_STAR), 0, I8, AGG(SUM), 1, I8),
                            threshold(negate(union_of(2, project(G(1), 1, 0),
                                                      negate(project(G(2), 1, 0))))),
                            1, 0, 0);
        case 27:
                *name = "distinct and topk over a threshold";
                return union_of(2, distinct(threshold(union_of(2, project(G(3), 1, 2),
                                                              negate(project(G(1), 1, 2))))),
                                topk(threshold(union_of(2, project(G(2), 1, 2),
                                                        negate(project(G(3), 1, 2)))),
                                     true, 3, 1, 1, 0, 0, 0));
        default:
                *name = "self join + distinct reduce";
                return distinct(project(reduce(join(G(2), G(2), 1, 0, 0), 1, 2, 1,
                                               AGG(COUNT), 4, I8), 1, 1));
        }
}

static void test_random(void)
{
        const uint64_t T = 200, as_of = 10;
        uint64_t frontiers_a[256], frontiers_b[64];
        size_t na = 0, nb = 0;

        for (unsigned seed = 1; seed <= 3; seed++) {
                rnd_state = 0x9e3779b97f4a7c15ull * seed;
                gen_log(T);
                na = nb = 0;
                /* One step per time, and random jumps (the first beyond as_of). */
                for (uint64_t t = as_of + 1; t <= T; t++)
                        frontiers_a[na++] = t;
                for (uint64_t f = as_of + 1 + rn(20); f < T; f += 1 + rn(40))
                        frontiers_b[nb++] = f;
                frontiers_b[nb++] = T;
                for (int i = 0; i < N_PLANS; i++) {
                        const char *name;
                        Coord__Plan__Relation *p = make_plan(i, &name);
                        struct eval_batch a = EVAL_BATCH_INIT, b = EVAL_BATCH_INIT;
                        char *ra, *rb;

                        run_plan(p, as_of, frontiers_a, na, &a);
                        check_against_naive(p, name, as_of, T, &a);
                        run_plan(p, as_of, frontiers_b, nb, &b);
                        /* The same updates, whatever the step granularity. */
                        ra = malloc(1 << 20);
                        rb = malloc(1 << 20);
                        render(&a, ra, 1 << 20);
                        render(&b, rb, 1 << 20);
                        if (strcmp(ra, rb) != 0)
                                fprintf(stderr, "\n  plan %s: granularity changes output\n", name);
                        CU_ASSERT_STRING_EQUAL(ra, rb);
                        free(ra);
                        free(rb);
                        eval_batch_done(&a);
                        eval_batch_done(&b);
                        coord__plan__relation__free_unpacked(p, NULL);
                }
                free_log();
        }
        free(nlog);
        nlog = NULL;
        cap_nlog = 0;
}

/* ---- Arrangements. ---- */

struct collect {
        struct nrel rel;
        int fail_after;         /* emit error after this many rows, -1 never */
};

static int collect_emit(void *ud, const void *row, size_t len, int64_t diff)
{
        struct collect *c = ud;

        if (c->fail_after == 0)
                return -ECANCELED;
        if (c->fail_after > 0)
                c->fail_after--;
        nrel_add(&c->rel, row, len, diff);
        return 0;
}

static void test_arrangement_basic(void)
{
        struct arrangement *a = NULL;
        struct eval_batch b = EVAL_BATCH_INIT;
        struct collect c = { .fail_after = -1 };
        size_t len;
        uint8_t *row = mkrow(&len, "i", (int64_t)1);

        CU_ASSERT_EQUAL(arrangement_new(5, &a), 0);
        CU_ASSERT_EQUAL(arrangement_since(a), 5);
        CU_ASSERT_EQUAL(arrangement_upper(a), 5);
        CU_ASSERT_EQUAL(arrangement_read(a, 5, collect_emit, &c), -EAGAIN);
        CU_ASSERT_EQUAL(arrangement_read(a, 4, collect_emit, &c), -EDOM);
        eval_batch_push(&b, row, len, 4, 1);
        CU_ASSERT_EQUAL(arrangement_insert(a, &b), -EINVAL);
        eval_batch_clear(&b);
        eval_batch_push(&b, row, len, 5, 2);
        eval_batch_push(&b, row, len, 7, -3);
        CU_ASSERT_EQUAL(arrangement_insert(a, &b), 0);
        arrangement_set_upper(a, 8);
        arrangement_set_upper(a, 6);            /* backwards: ignored */
        CU_ASSERT_EQUAL(arrangement_upper(a), 8);
        CU_ASSERT_EQUAL(arrangement_read(a, 6, collect_emit, &c), 0);
        CU_ASSERT_EQUAL(c.rel.n, 1);
        CU_ASSERT_EQUAL(c.rel.v[0].c, 2);
        nrel_done(&c.rel);
        CU_ASSERT_EQUAL(arrangement_read(a, 7, collect_emit, &c), -EUCLEAN);
        nrel_done(&c.rel);
        c.fail_after = 0;
        CU_ASSERT_EQUAL(arrangement_read(a, 5, collect_emit, &c), -ECANCELED);
        CU_ASSERT_EQUAL(arrangement_compact(a, 9), -EINVAL);
        CU_ASSERT_EQUAL(arrangement_compact(a, 7), 0);
        CU_ASSERT_EQUAL(arrangement_rows(a), 1);
        CU_ASSERT_EQUAL(arrangement_compact(a, 6), 0);          /* backwards: no-op */
        CU_ASSERT_EQUAL(arrangement_since(a), 7);
        CU_ASSERT(arrangement_bytes(a) > 0);
        arrangement_free(a);
        eval_batch_done(&b);
        free(row);
        CU_ASSERT(arrangement_free(NULL) == NULL);
}

/* Does row's column col encode (as a one-column row) to key? */
static bool row_has_key(const uint8_t *row, size_t len, uint32_t col, const uint8_t *key, size_t klen)
{
        struct row_datum d[2];
        uint8_t *k;
        size_t kl;
        bool same;

        CU_ASSERT_FATAL(row_decode(row, len, d, 2) == 2);
        CU_ASSERT_FATAL(row_encode(&d[col], 1, &k, &kl) == 0);
        same = kl == klen && memcmp(k, key, klen) == 0;
        free(k);
        return same;
}

/* arrangement_read_key() at t for every key value the rows use, against the log. */
static void check_read_keys(struct arrangement *a, uint32_t col, const struct nupd *log, size_t n,
                            uint64_t t)
{
        for (unsigned v = 0; v < 30; v++) {
                struct collect c = { .fail_after = -1 };
                struct nrel want = { 0 };
                uint8_t *key;
                size_t klen;
                bool same;

                if (col == 1 && v >= 4)
                        break;
                key = col == 0 ? mkrow(&klen, "i", (int64_t)v) : mkrow(&klen, "t", texts[v]);
                CU_ASSERT_EQUAL_FATAL(arrangement_read_key(a, t, key, klen, collect_emit, &c), 0);
                for (size_t i = 0; i < n; i++)
                        if (log[i].time <= t && row_has_key(log[i].row, log[i].len, col, key, klen))
                                nrel_add(&want, log[i].row, log[i].len, log[i].diff);
                nrel_consolidate(&want);
                nrel_consolidate(&c.rel);
                same = want.n == c.rel.n;
                for (size_t i = 0; same && i < want.n; i++)
                        same = want.v[i].c == c.rel.v[i].c && cmp_nrow(&want.v[i], &c.rel.v[i]) == 0;
                CU_ASSERT(same);
                nrel_done(&want);
                nrel_done(&c.rel);
                free(key);
        }
}

/* Seeds 1-5 unkeyed; 6-10 keyed on the int column or the text column, each read by
 * key too (arrangement_read_key()), the key lists checked after every compaction. */
static void test_arrangement_random(void)
{
        for (unsigned seed = 1; seed <= 10; seed++) {
                struct arrangement *a = NULL;
                struct nupd *log = NULL;
                size_t n = 0, cap = 0;
                struct nrel cur = { 0 };
                uint64_t since = 3 + seed;
                bool keyed = seed > 5;
                uint32_t kcol = seed % 2;

                rnd_state = 0x51ed270b27e5ull * seed;
                CU_ASSERT_EQUAL_FATAL(arrangement_new(since, &a), 0);
                if (keyed) {
                        CU_ASSERT_EQUAL_FATAL(arrangement_set_keys(a, &kcol, 1, 2), 0);
                        CU_ASSERT_EQUAL(arrangement_set_keys(a, &kcol, 1, 2), -EINVAL);
                } else {
                        CU_ASSERT_EQUAL(arrangement_read_key(a, since, "", 0, collect_emit, NULL), -EINVAL);
                }
                const uint64_t end = since + 300;

                for (uint64_t upper = since; upper < end;) {
                        struct eval_batch b = EVAL_BATCH_INIT;
                        unsigned k = rn(6);

                        /* A batch at times >= upper - 1 (and >= since), unsorted. */
                        for (unsigned i = 0; i < k; i++) {
                                uint64_t t = upper + rn(3);
                                uint8_t *row;
                                size_t len;
                                int64_t diff;

                                if (t > since && rn(2))
                                        t--;
                                nrel_consolidate(&cur);
                                if (cur.n && rn(3) == 0) {
                                        struct nrow *x = &cur.v[rn((unsigned)cur.n)];

                                        /* Deletes at the latest time any insert
                                         * so far may have, so no count is ever
                                         * negative. */
                                        t = upper + 2;
                                        diff = -(int64_t)(1 + rn((unsigned)x->c));
                                        len = x->len;
                                        row = xmalloc(len);
                                        memcpy(row, x->row, len);
                                } else {
                                        diff = 1 + rn(3);
                                        row = mkrow(&len, "it", (int64_t)rn(30), texts[rn(4)]);
                                }
                                nrel_add(&cur, row, len, diff);
                                eval_batch_push(&b, row, len, t, diff);
                                if (n == cap) {
                                        cap = cap ? 2 * cap : 64;
                                        log = realloc(log, cap * sizeof(*log));
                                }
                                log[n++] = (struct nupd){ 0, row, len, t, diff };
                        }
                        CU_ASSERT_EQUAL_FATAL(arrangement_insert(a, &b), 0);
                        eval_batch_done(&b);
                        upper += rn(4);
                        arrangement_set_upper(a, upper);
                        /* Sometimes compact to a random time in [since, upper]. */
                        if (rn(4) == 0 && upper > since) {
                                uint64_t s = since + rn((unsigned)(upper - since + 1));

                                CU_ASSERT_EQUAL_FATAL(arrangement_compact(a, s), 0);
                                CU_ASSERT_EQUAL(arrangement_check_keys(a), 0);
                                since = s;
                        }
                        CU_ASSERT_EQUAL(arrangement_since(a), since);
                        /* Reads at a few times in [since, upper) against the log. */
                        for (uint64_t t = since; t < upper; t++) {
                                struct collect c = { .fail_after = -1 };
                                struct nrel want = { 0 };
                                bool same;

                                if (upper - since > 8 && rn(4) != 0)
                                        continue;
                                CU_ASSERT_EQUAL_FATAL(arrangement_read(a, t, collect_emit, &c), 0);
                                for (size_t i = 0; i < n; i++)
                                        if (log[i].time <= t)
                                                nrel_add(&want, log[i].row, log[i].len,
                                                         log[i].diff);
                                nrel_consolidate(&want);
                                nrel_consolidate(&c.rel);
                                same = want.n == c.rel.n;
                                for (size_t i = 0; same && i < want.n; i++)
                                        same = want.v[i].c == c.rel.v[i].c &&
                                               cmp_nrow(&want.v[i], &c.rel.v[i]) == 0;
                                CU_ASSERT(same);
                                nrel_done(&want);
                                nrel_done(&c.rel);
                                if (keyed)
                                        check_read_keys(a, kcol, log, n, t);
                        }
                }
                /* Fold everything: the base alone holds the contents. */
                {
                        uint64_t u = arrangement_upper(a);
                        struct nrel want = { 0 };

                        CU_ASSERT_EQUAL(arrangement_compact(a, u), 0);
                        for (size_t i = 0; i < n; i++)
                                if (log[i].time < u)
                                        nrel_add(&want, log[i].row, log[i].len, log[i].diff);
                        nrel_consolidate(&want);
                        CU_ASSERT_EQUAL(arrangement_rows(a), want.n);
                        CU_ASSERT_EQUAL(arrangement_check_keys(a), 0);
                        if (keyed && u > arrangement_since(a) - 1 && u < arrangement_upper(a))
                                check_read_keys(a, kcol, log, n, u);
                        nrel_done(&want);
                }
                for (size_t i = 0; i < n; i++)
                        free(log[i].row);
                free(log);
                nrel_done(&cur);
                arrangement_free(a);
        }
}

/* A memory limit (a peek's, controller-dataflow.c note 6): a cross product that would
 * hold 3 x 1000 x 1000 rows fails with 53200 naming the limit, poisons the dataflow, and
 * holds no more than about the limit meanwhile; the same join with keys, under the same
 * limit, and the cross product without one, run. */
static void test_memory_limit(void)
{
        Coord__Plan__Relation *cross = join(join(get(1, 3, T3), get(2, 3, T3), 0), get(3, 3, T3), 0);
        Coord__Plan__Relation *keyed = join(join(get(1, 3, T3), get(2, 3, T3), 1, 0, 0), get(3, 3, T3),
                                            1, 0, 0);
        struct eval_batch out = EVAL_BATCH_INIT;
        struct row_error err = { 0 };
        struct dataflow *df;
        int r;

        for (int k = 0; k < 3; k++) {
                df = mkdf(k == 1 ? keyed : cross, 0);
                if (k < 2)
                        dataflow_set_memory_limit(df, 1u << 20);
                for (size_t in = 0; in < 3; in++)
                        for (int64_t i = 0; i < (k < 2 ? 1000 : 40); i++)
                                PUSH(df, in, 0, 1, "iit", i, i, "row");
                r = dataflow_step(df, 1, &out, &err);
                if (k == 0) {
                        CU_ASSERT_EQUAL(r, -E2BIG);
                        CU_ASSERT_STRING_EQUAL(err.sqlstate, "53200");
                        CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "memory limit of 1 MB"));
                        CU_ASSERT(dataflow_state_bytes(df) < 2u << 20);
                        memset(&err, 0, sizeof(err));
                        CU_ASSERT_EQUAL(dataflow_step(df, 2, &out, &err), -E2BIG);      /* poisoned */
                        CU_ASSERT_STRING_EQUAL(err.sqlstate, "53200");
                } else {
                        CU_ASSERT_EQUAL(r, 0);
                        CU_ASSERT_EQUAL(out.n, k == 1 ? 1000 : 40 * 40 * 40);
                }
                eval_batch_done(&out);
                out = EVAL_BATCH_INIT;
                dataflow_free(df);
        }
        /* Input alone past the limit: the push fails, nothing of it kept. */
        df = mkdf(keyed, 0);
        dataflow_set_memory_limit(df, 4096);
        {
                struct eval_update u[100];
                size_t len;
                uint8_t *row = mkrow(&len, "iit", (int64_t)1, (int64_t)1, "row");

                for (size_t i = 0; i < 100; i++)
                        u[i] = (struct eval_update){ row, len, 0, 1 };
                CU_ASSERT_EQUAL(dataflow_push(df, 0, u, 100, &err), -E2BIG);
                CU_ASSERT_STRING_EQUAL(err.sqlstate, "53200");
                CU_ASSERT_EQUAL(dataflow_push(df, 0, u, 10, &err), 0);
                free(row);
        }
        dataflow_free(df);
        coord__plan__relation__free_unpacked(cross, NULL);
        coord__plan__relation__free_unpacked(keyed, NULL);
}

static void *cancel_later(void *arg)
{
        usleep(50 * 1000);                      /* cancelled while the step runs */
        atomic_store((atomic_bool *)arg, true);
        return NULL;
}

/* dataflow_set_cancel() (controller-dataflow.c note 6): a flag set before the step
 * (pushes then fail too) fails it with 57014 and poisons it; one set by another thread while a Join emits a
 * cross product of 10^9 rows stops it there (57014: neither the result nor 53200 of
 * its 1 GB limit). */
static void test_cancel(void)
{
        Coord__Plan__Relation *cross = join(join(get(1, 3, T3), get(2, 3, T3), 0), get(3, 3, T3), 0);
        struct eval_batch out = EVAL_BATCH_INIT;
        struct row_error err = { 0 };
        atomic_bool stop;
        struct dataflow *df;
        pthread_t th;

        for (int k = 0; k < 2; k++) {
                atomic_init(&stop, false);
                df = mkdf(cross, 0);
                dataflow_set_memory_limit(df, 1u << 30);
                dataflow_set_cancel(df, &stop);
                for (size_t in = 0; in < 3; in++)
                        for (int64_t i = 0; i < 1000; i++)
                                PUSH(df, in, 0, 1, "iit", i, i, "row");
                if (k == 0)
                        atomic_store(&stop, true);
                else
                        CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, cancel_later, &stop), 0);
                memset(&err, 0, sizeof(err));
                CU_ASSERT_EQUAL(dataflow_step(df, 1, &out, &err), -ECANCELED);
                CU_ASSERT_STRING_EQUAL(err.sqlstate, "57014");
                if (k == 1)
                        pthread_join(th, NULL);
                memset(&err, 0, sizeof(err));
                CU_ASSERT_EQUAL(dataflow_step(df, 2, &out, &err), -ECANCELED);  /* poisoned */
                CU_ASSERT_EQUAL(out.n, 0);
                eval_batch_done(&out);
                out = EVAL_BATCH_INIT;
                dataflow_free(df);
        }
        coord__plan__relation__free_unpacked(cross, NULL);
}

static const struct t_case operator_cases[] = {
        { "filter/map/project", test_linear },
        { "union, negate, distinct", test_union_negate_distinct },
        { "distinct of a negative count", test_distinct_negative },
        { "threshold: positive counts of a difference", test_threshold },
        { "reduce with keys", test_reduce_keys },
        { "global reduce", test_reduce_global },
        { "sum overflow", test_sum_overflow },
        { "evaluation errors poison", test_eval_error_poisons },
        { "join", test_join },
        { "topk: window, ties, multiplicities, retractions", test_topk },
        { "plan errors", test_plan_errors },
        { "a memory limit fails a cross product with 53200", test_memory_limit },
        { "a cancelled dataflow stops with 57014, also inside a Join", test_cancel },
        { NULL, NULL },
};

static const struct t_case property_cases[] = {
        { "random plans vs naive", test_random },
        { NULL, NULL },
};

static const struct t_case arrangement_cases[] = {
        { "arrangement basics", test_arrangement_basic },
        { "arrangement vs naive, also read by key", test_arrangement_random },
        { NULL, NULL },
};

int main(void)
{
        const struct t_suite suites[] = {
                { "dataflow operators", operator_cases },
                { "dataflow properties", property_cases },
                { "arrangements", arrangement_cases },
                { NULL, NULL },
        };

        return t_run(suites);
}
