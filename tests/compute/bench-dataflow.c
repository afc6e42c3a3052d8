/* bench-dataflow -- throughput of controller/controller-dataflow.c (not a test):
 *   1. filter+reduce: 1e6 updates (a sliding window: each insert later retracted) in
 *      steps of 1000 updates per time through
 *      SELECT a, count(*), sum(b), min(b), max(b) FROM t WHERE b >= 0 GROUP BY a;
 *   2. 2-way join: 1e6 updates (half per side, random keys over 250k) in steps of 1000;
 *   3. hydration: 1e6 rows at as_of through the filter+reduce, one step;
 *   4. arrangement: insert 1e6 updates over 1000 times, compact, read.
 * Usage: bench-dataflow [n]   (default 1000000)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "controller-dataflow.h"
#include "row/row.h"
#include "util.h"

static Coord__Plan__Relation *get2(uint64_t id)
{
        Coord__Plan__Relation *r = calloc(1, sizeof(*r));

        coord__plan__relation__init(r);
        r->kind_case = COORD__PLAN__RELATION__KIND_GET;
        r->get = malloc(sizeof(*r->get));
        coord__plan__get__init(r->get);
        r->get->id = id;
        r->get->n_column_types = 2;
        r->get->column_types = malloc(2 * sizeof(*r->get->column_types));
        r->get->column_types[0] = COORD__PLAN__TYPE__TYPE_INT8;
        r->get->column_types[1] = COORD__PLAN__TYPE__TYPE_INT8;
        return r;
}

static Coord__Plan__Expr *expr(int type)
{
        Coord__Plan__Expr *e = malloc(sizeof(*e));

        coord__plan__expr__init(e);
        e->type = (Coord__Plan__Type)type;
        return e;
}

/* Reduce(Filter(Get(1), b >= 0), [a], count(*), sum(b), min(b), max(b)) */
static Coord__Plan__Relation *filter_reduce(void)
{
        Coord__Plan__Relation *f = calloc(1, sizeof(*f)), *r = calloc(1, sizeof(*r));
        Coord__Plan__Expr *ge = expr(ROW_TYPE_BOOL), *c = expr(ROW_TYPE_INT8),
                          *z = expr(ROW_TYPE_INT8);
        const int funcs[] = { COORD__PLAN__AGG_FUNC__AGG_COUNT_STAR,
                              COORD__PLAN__AGG_FUNC__AGG_SUM, COORD__PLAN__AGG_FUNC__AGG_MIN,
                              COORD__PLAN__AGG_FUNC__AGG_MAX };

        c->kind_case = COORD__PLAN__EXPR__KIND_COLUMN;
        c->column = 1;
        z->kind_case = COORD__PLAN__EXPR__KIND_LITERAL;
        z->literal = malloc(sizeof(*z->literal));
        coord__plan__datum__init(z->literal);
        z->literal->value_case = COORD__PLAN__DATUM__VALUE_INT_VALUE;
        z->literal->int_value = 0;
        ge->kind_case = COORD__PLAN__EXPR__KIND_CALL;
        ge->call = malloc(sizeof(*ge->call));
        coord__plan__call__init(ge->call);
        ge->call->func = COORD__PLAN__FUNC__FUNC_GE;
        ge->call->n_args = 2;
        ge->call->args = malloc(2 * sizeof(*ge->call->args));
        ge->call->args[0] = c;
        ge->call->args[1] = z;
        coord__plan__relation__init(f);
        f->kind_case = COORD__PLAN__RELATION__KIND_FILTER;
        f->filter = malloc(sizeof(*f->filter));
        coord__plan__filter__init(f->filter);
        f->filter->input = get2(1);
        f->filter->n_predicates = 1;
        f->filter->predicates = malloc(sizeof(*f->filter->predicates));
        f->filter->predicates[0] = ge;
        coord__plan__relation__init(r);
        r->kind_case = COORD__PLAN__RELATION__KIND_REDUCE;
        r->reduce = malloc(sizeof(*r->reduce));
        coord__plan__reduce__init(r->reduce);
        r->reduce->input = f;
        r->reduce->n_group_keys = 1;
        r->reduce->group_keys = malloc(sizeof(uint32_t));
        r->reduce->group_keys[0] = 0;
        r->reduce->n_aggregates = 4;
        r->reduce->aggregates = malloc(4 * sizeof(*r->reduce->aggregates));
        for (int i = 0; i < 4; i++) {
                Coord__Plan__Aggregate *a = malloc(sizeof(*a));

                coord__plan__aggregate__init(a);
                a->func = (Coord__Plan__AggFunc)funcs[i];
                a->column = 1;
                a->type = COORD__PLAN__TYPE__TYPE_INT8;
                r->reduce->aggregates[i] = a;
        }
        return r;
}

static Coord__Plan__Relation *join2(void)
{
        Coord__Plan__Relation *r = calloc(1, sizeof(*r));

        coord__plan__relation__init(r);
        r->kind_case = COORD__PLAN__RELATION__KIND_JOIN;
        r->join = malloc(sizeof(*r->join));
        coord__plan__join__init(r->join);
        r->join->left = get2(1);
        r->join->right = get2(2);
        r->join->n_left_keys = r->join->n_right_keys = 1;
        r->join->left_keys = calloc(1, sizeof(uint32_t));
        r->join->right_keys = calloc(1, sizeof(uint32_t));
        return r;
}

static uint64_t rs = 88172645463325252ull;

static uint64_t rnd(void)
{
        rs ^= rs << 13;
        rs ^= rs >> 7;
        rs ^= rs << 17;
        return rs;
}

static size_t encode2(uint8_t *buf, int64_t a, int64_t b)
{
        struct row_datum d[2] = { ROW_DATUM_INT(a), ROW_DATUM_INT(b) };

        return row_encode_into(d, 2, buf);
}

static void die(const char *what, int r, const struct row_error *err)
{
        fprintf(stderr, "%s: %d %s %s\n", what, r, err->sqlstate, err->message);
        exit(1);
}

/* Stream n updates, `per` per time; window > 0: each insert is retracted `window`
 * updates later (so about half the updates are retractions). */
static double stream(Coord__Plan__Relation *plan, size_t n, size_t per, size_t n_inputs,
                     int64_t key_space, size_t *ret_out, size_t *ret_bytes)
{
        struct dataflow *df = NULL;
        struct row_error err = { 0 };
        struct eval_batch out = EVAL_BATCH_INIT;
        struct eval_update *batch = malloc(per * sizeof(*batch));
        uint8_t *bytes = malloc(per * 32);
        int64_t (*hist)[3] = malloc(n * sizeof(*hist));
        size_t done = 0, n_ins = 0, outs = 0;
        uint64_t t = 1, t0;
        int r;

        r = dataflow_new(plan, 1, &df, &err);
        if (r < 0)
                die("dataflow_new", r, &err);
        t0 = now_ns();
        while (done < n) {
                for (size_t in = 0; in < n_inputs; in++) {
                        size_t k = 0, off = 0;

                        for (; k < per / n_inputs && done < n; k++, done++) {
                                int64_t a, b, diff = 0;
                                size_t j = n_ins > 1000 ? n_ins - 1000 + (rnd() % 100) : 0;

                                /* Every other update retracts a live insert from about
                                 * 1000 inserts ago, once there are that many. */
                                if ((done & 1) && n_ins > 1000 && hist[j][2]) {
                                        a = hist[j][0];
                                        b = hist[j][1];
                                        diff = -1;
                                        hist[j][2] = 0;
                                } else {
                                        a = (int64_t)(rnd() % (uint64_t)key_space);
                                        b = (int64_t)(rnd() % 1000) - 100;
                                        diff = 1;
                                        hist[n_ins][0] = a;
                                        hist[n_ins][1] = b;
                                        hist[n_ins++][2] = 1;
                                }
                                batch[k] = (struct eval_update){ bytes + off, encode2(bytes + off, a, b),
                                                                 t, diff };
                                off += batch[k].len;
                        }
                        r = dataflow_push(df, in, batch, k, &err);
                        if (r < 0)
                                die("push", r, &err);
                }
                r = dataflow_step(df, ++t, &out, &err);
                if (r < 0)
                        die("step", r, &err);
                outs += out.n;
                eval_batch_clear(&out);
        }
        t0 = now_ns() - t0;
        *ret_out = outs;
        *ret_bytes = dataflow_state_bytes(df);
        dataflow_free(df);
        eval_batch_done(&out);
        free(batch);
        free(bytes);
        free(hist);
        return (double)t0 / 1e9;
}

static double hydrate(Coord__Plan__Relation *plan, size_t n, size_t *ret_out)
{
        struct dataflow *df = NULL;
        struct row_error err = { 0 };
        struct eval_batch out = EVAL_BATCH_INIT;
        const size_t chunk = 65536;
        struct eval_update *batch = malloc(chunk * sizeof(*batch));
        uint8_t *bytes = malloc(chunk * 32);
        uint64_t t0;
        int r;

        r = dataflow_new(plan, 100, &df, &err);
        if (r < 0)
                die("dataflow_new", r, &err);
        t0 = now_ns();
        for (size_t done = 0; done < n;) {
                size_t k = 0, off = 0;

                for (; k < chunk && done < n; k++, done++) {
                        batch[k] = (struct eval_update){ bytes + off,
                                                         encode2(bytes + off,
                                                                 (int64_t)(rnd() % 1000),
                                                                 (int64_t)(rnd() % 1000000) - 1000),
                                                         rnd() % 100, 1 };
                        off += batch[k].len;
                }
                r = dataflow_push(df, 0, batch, k, &err);
                if (r < 0)
                        die("push", r, &err);
        }
        r = dataflow_step(df, 101, &out, &err);
        if (r < 0)
                die("step", r, &err);
        t0 = now_ns() - t0;
        *ret_out = out.n;
        dataflow_free(df);
        eval_batch_done(&out);
        free(batch);
        free(bytes);
        return (double)t0 / 1e9;
}

static int count_emit(void *ud, const void *row, size_t len, int64_t diff)
{
        (*(size_t *)ud)++;
        return 0;
}

static void bench_arrangement(size_t n)
{
        struct arrangement *a = NULL;
        struct eval_batch b = EVAL_BATCH_INIT;
        uint8_t buf[32];
        uint64_t t0, t1, t2;
        size_t rows = 0;

        arrangement_new(0, &a);
        t0 = now_ns();
        for (uint64_t t = 0; t < 1000; t++) {
                eval_batch_clear(&b);
                for (size_t i = 0; i < n / 1000; i++)
                        eval_batch_push(&b, buf, encode2(buf, (int64_t)(rnd() % 100000), 1), t, 1);
                arrangement_insert(a, &b);
                arrangement_set_upper(a, t + 1);
        }
        t1 = now_ns();
        arrangement_read(a, 999, count_emit, &rows);
        t2 = now_ns();
        printf("arrangement: insert %zu updates %.0f updates/s; read at upper-1 over the "
               "whole log %.3f s (%zu rows)\n", n, (double)n / ((double)(t1 - t0) / 1e9),
               (double)(t2 - t1) / 1e9, rows);
        t0 = now_ns();
        arrangement_compact(a, 999);
        t1 = now_ns();
        rows = 0;
        arrangement_read(a, 999, count_emit, &rows);
        t2 = now_ns();
        printf("arrangement: compact %.3f s, read after compaction %.3f s, %zu base rows, "
               "%.1f MB\n", (double)(t1 - t0) / 1e9, (double)(t2 - t1) / 1e9,
               arrangement_rows(a), (double)arrangement_bytes(a) / 1e6);
        arrangement_free(a);
        eval_batch_done(&b);
}

int main(int argc, char **argv)
{
        size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000, outs, bytes;
        Coord__Plan__Relation *fr = filter_reduce(), *j = join2();
        double s;

        s = stream(fr, n, 1000, 1, 1000, &outs, &bytes);
        printf("filter+reduce: %zu updates in %.3f s: %.0f updates/s (%zu output updates, "
               "%.1f MB state)\n", n, s, (double)n / s, outs, (double)bytes / 1e6);
        s = stream(j, n, 1000, 2, 250000, &outs, &bytes);
        printf("join:          %zu updates in %.3f s: %.0f updates/s (%zu output updates, "
               "%.1f MB state)\n", n, s, (double)n / s, outs, (double)bytes / 1e6);
        s = hydrate(fr, n, &outs);
        printf("hydration:     %zu rows through filter+reduce in %.3f s: %.0f rows/s "
               "(%zu output rows)\n", n, s, (double)n / s, outs);
        bench_arrangement(n);
        coord__plan__relation__free_unpacked(fr, NULL);
        coord__plan__relation__free_unpacked(j, NULL);
        return 0;
}
