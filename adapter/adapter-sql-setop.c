/* adapter-sql-setop.c -- VALUES lists and set operations (UNION, INTERSECT, EXCEPT, with
 * or without ALL), the query expressions plan_query() (adapter-sql-query.c) hands over
 * (adapter-sql-internal.h; adapter-sql.c note 7). */
#include "adapter-sql-internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* VALUES (...), (...): a Constant when every value is a literal, else a Union of one
 * Map per row. */
int plan_values(struct analyzer *a, const PgQuery__SelectStmt *s,
                Coord__Plan__Relation **ret_plan, struct scope *ret_cols)
{
        size_t n_rows = s->n_values_lists, n_cols = 0, done = 0;
        _cleanup_free_ struct typed *v = NULL;          /* column-major: v[c * n_rows + r] */
        struct attach *rat = NULL;
        struct scope *rs = NULL;
        _cleanup_free_ Coord__Plan__Type *types = NULL;
        bool all_literal = true;
        int r = 0;

        for (size_t i = 0; i < n_rows; i++) {
                const PgQuery__Node *row = s->values_lists[i];

                if (row->node_case != PG_QUERY__NODE__NODE_LIST)
                        return FAIL(a, "XX000", "malformed VALUES list");
                if (i == 0)
                        n_cols = row->list->n_items;
                else if (row->list->n_items != n_cols)
                        return FAIL_AT(a, row->list->n_items ? node_location(row->list->items[0]) : -1,
                                       "42601", "VALUES lists must all be the same length");
        }
        if (n_cols > ROW_MAX_COLUMNS)
                return FAIL(a, "54011", "VALUES can have at most %u columns", ROW_MAX_COLUMNS);
        v = calloc(n_rows * n_cols + 1, sizeof(*v));
        types = calloc(n_cols + 1, sizeof(*types));
        if (!v || !types)
                return analyzer_oom(a);
        /* A row's subqueries attach to its one row (as a SELECT list's to its rows):
         * each row has its attachments and their hidden columns (rs[i]). */
        if (has_sublink(&s->base)) {
                rat = calloc(n_rows, sizeof(*rat));
                rs = calloc(n_rows, sizeof(*rs));
                if (!rat || !rs) {
                        free(rat);
                        free(rs);
                        return analyzer_oom(a);
                }
                for (size_t i = 0; i < n_rows; i++)
                        rat[i] = (struct attach){ .scope = &rs[i], .base_n = 0 };
        }
        a->scope = NULL;
        a->no_agg = "VALUES";
        for (size_t c = 0; c < n_cols && r >= 0; c++) {
                for (size_t i = 0; i < n_rows && r >= 0; i++, done++) {
                        struct typed *t = &v[c * n_rows + i];

                        t->location = -1;
                        a->attach = rat ? &rat[i] : NULL;
                        r = analyze_expr(a, s->values_lists[i]->list->items[c], t);
                        a->attach = NULL;
                }
                if (r >= 0) {
                        int type;

                        r = common_type(a, &v[c * n_rows], n_rows, "VALUES", &type);
                        types[c] = (Coord__Plan__Type)type;
                }
        }
        a->no_agg = NULL;
        for (size_t c = 0; r >= 0 && c < n_cols; c++) {
                const char *name;
                bool nullable = false;

                for (size_t i = 0; i < n_rows; i++) {
                        const Coord__Plan__Expr *e = v[c * n_rows + i].e;

                        all_literal = all_literal && is_literal(e);
                        nullable = nullable || !is_literal(e) ||
                                   e->literal->value_case == COORD__PLAN__DATUM__VALUE_NULL_VALUE;
                }
                r = keep_stringf(a, &name, "column%zu", c + 1);
                if (r >= 0)
                        r = scope_add_col(a, ret_cols, NULL, name, (int)types[c], nullable, true);
        }
        if (r >= 0 && all_literal) {
                _cleanup_free_ struct row_datum *row = calloc(n_cols + 1, sizeof(*row));
                Coord__Plan__Update **rows = calloc(n_rows + 1, sizeof(*rows));
                size_t k = 0;

                if (!row || !rows) {
                        free(rows);
                        r = analyzer_oom(a);
                        goto out;
                }
                for (; k < n_rows && r >= 0; k++) {
                        for (size_t c = 0; c < n_cols && r >= 0; c++)
                                r = row_expr_literal(v[c * n_rows + k].e->literal, (int)types[c],
                                                     &row[c], a->err);
                        if (r >= 0 && !(rows[k] = update_new(row, n_cols)))
                                r = analyzer_oom(a);
                }
                if (r < 0) {
                        for (size_t i = 0; i < k; i++)
                                if (rows[i])
                                        coord__plan__update__free_unpacked(rows[i], NULL);
                        free(rows);
                        goto out;
                }
                *ret_plan = rel_constant(TAKE_PTR(types), n_cols, rows, n_rows);
                if (!*ret_plan)
                        r = analyzer_oom(a);
        } else if (r >= 0) {
                Coord__Plan__Relation **inputs = calloc(n_rows + 1, sizeof(*inputs));

                if (!inputs) {
                        r = analyzer_oom(a);
                        goto out;
                }
                for (size_t i = 0; i < n_rows; i++) {
                        Coord__Plan__Expr **exprs = calloc(n_cols + 1, sizeof(*exprs));
                        Coord__Plan__Relation *unit = rel_unit();
                        size_t hidden = rat ? rs[i].n : 0;

                        if (unit && rat && rat[i].n && attach_apply(a, &rat[i], &unit) < 0)
                                unit = NULL;
                        for (size_t c = 0; exprs && c < n_cols; c++)
                                exprs[c] = TAKE_PTR(v[c * n_rows + i].e);
                        inputs[i] = exprs ? rel_map(unit, exprs, n_cols) : NULL;
                        if (!exprs)
                                rel_free(unit);
                        if (inputs[i] && hidden)
                                inputs[i] = rel_project_range(inputs[i], (uint32_t)hidden, n_cols);
                        if (!inputs[i]) {
                                for (size_t k = 0; k < i; k++)
                                        rel_free(inputs[k]);
                                free(inputs);
                                r = analyzer_oom(a);
                                goto out;
                        }
                }
                *ret_plan = n_rows == 1 ? inputs[0] : rel_union(inputs, n_rows);
                if (n_rows == 1)
                        free(inputs);
                if (!*ret_plan)
                        r = analyzer_oom(a);
        }
out:
        for (size_t i = 0; i < done; i++)
                typed_done(&v[i]);
        for (size_t i = 0; rat && i < n_rows; i++) {
                attach_done(&rat[i]);
                scope_done(&rs[i]);
        }
        free(rat);
        free(rs);
        return r;
}

/* INTERSECT and EXCEPT (without ALL): each side's distinct rows tagged 1 (left) or 2
 * (right), grouped by every column -- NULLs equal, as set operations compare rows --
 * and kept by their tags' min and max: INTERSECT a row both sides have (1 and 2), EXCEPT
 * one only the left has (max 1).  Distinct, Map, Union, Reduce and Filter: maintained
 * like any plan.  Consumes lp and rp (n columns each, of the same types). */
static int setop_tagged(struct analyzer *a, bool intersect, Coord__Plan__Relation *lp,
                        Coord__Plan__Relation *rp, size_t n, Coord__Plan__Relation **ret)
{
        static const Coord__Plan__AggFunc f[2] = { COORD__PLAN__AGG_FUNC__AGG_MIN,
                                                   COORD__PLAN__AGG_FUNC__AGG_MAX };
        static const Coord__Plan__Type t[2] = { (Coord__Plan__Type)ROW_TYPE_INT8,
                                                (Coord__Plan__Type)ROW_TYPE_INT8 };
        const uint32_t c[2] = { (uint32_t)n, (uint32_t)n };
        const struct row_datum one = ROW_DATUM_INT(1), two = ROW_DATUM_INT(2);
        Coord__Plan__Expr **tag1 = calloc(1, sizeof(*tag1)), **tag2 = calloc(1, sizeof(*tag2));
        Coord__Plan__Expr **preds = calloc(2, sizeof(*preds));
        Coord__Plan__Relation **inputs = calloc(2, sizeof(*inputs)), *g;

        if (!tag1 || !tag2 || !preds || !inputs ||
            !(tag1[0] = expr_literal(ROW_TYPE_INT8, &one)) ||
            !(tag2[0] = expr_literal(ROW_TYPE_INT8, &two))) {
                if (tag1)
                        expr_free(tag1[0]);
                free(tag1);
                free(tag2);
                free(preds);
                free(inputs);
                rel_free(lp);
                rel_free(rp);
                return analyzer_oom(a);
        }
        inputs[0] = rel_map(rel_distinct(lp), tag1, 1);
        inputs[1] = rel_map(rel_distinct(rp), tag2, 1);
        g = rel_reduce(rel_union(inputs, 2), n, f, c, t, 2);
        /* Columns: the n of the row, then min(tag), max(tag). */
        preds[0] = expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_EQ,
                              expr_column(ROW_TYPE_INT8, (uint32_t)n + 1),
                              expr_literal(ROW_TYPE_INT8, intersect ? &two : &one));
        if (intersect)
                preds[1] = expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_EQ,
                                      expr_column(ROW_TYPE_INT8, (uint32_t)n),
                                      expr_literal(ROW_TYPE_INT8, &one));
        if (!g || !preds[0] || (intersect && !preds[1])) {
                rel_free(g);
                expr_free(preds[0]);
                expr_free(preds[1]);
                free(preds);
                return analyzer_oom(a);
        }
        *ret = rel_project_range(rel_filter_n(g, preds, intersect ? 2 : 1), 0, n);
        return *ret ? 0 : analyzer_oom(a);
}

/* INTERSECT ALL and EXCEPT ALL, with PostgreSQL's multiplicities: a row a times on the
 * left and b times on the right is max(0, a - b) times in EXCEPT ALL, the Threshold of
 * a - b, and min(a, b) = a - max(0, a - b) times in INTERSECT ALL (so the left's plan
 * twice).  Threshold, Negate and Union: maintained like any plan
 * (controller-dataflow-ops.c note 8).  Threshold compares rows by bytes, so a numeric
 * column (1.5 = 1.50) is refused, never answered by spelling.  Consumes lp and rp (n
 * columns each, of the types to). */
static int setop_all(struct analyzer *a, bool intersect, Coord__Plan__Relation *lp,
                     Coord__Plan__Relation *rp, const int *to, size_t n,
                     Coord__Plan__Relation **ret)
{
        Coord__Plan__Relation **in = NULL, *l2 = NULL, *th = NULL;

        for (size_t i = 0; i < n; i++)
                if (to[i] == ROW_TYPE_NUMERIC) {
                        rel_free(lp);
                        rel_free(rp);
                        return FAIL(a, "0A000", "%s ALL over a numeric column is not supported",
                                    intersect ? "INTERSECT" : "EXCEPT");
                }
        if (intersect && !(l2 = rel_copy(lp)))
                goto oom;
        rp = rel_negate(rp);
        in = calloc(2, sizeof(*in));
        if (!rp || !in)
                goto oom;
        in[0] = TAKE_PTR(lp);
        in[1] = TAKE_PTR(rp);
        th = rel_threshold(rel_union(TAKE_PTR(in), 2));
        if (!th || !intersect) {
                *ret = th;
                return th ? 0 : analyzer_oom(a);
        }
        th = rel_negate(th);
        in = calloc(2, sizeof(*in));
        if (!th || !in)
                goto oom;
        in[0] = TAKE_PTR(l2);
        in[1] = TAKE_PTR(th);
        *ret = rel_union(in, 2);
        return *ret ? 0 : analyzer_oom(a);
oom:
        free(in);
        rel_free(th);
        rel_free(l2);
        rel_free(lp);
        rel_free(rp);
        return analyzer_oom(a);
}

/* UNION [ALL], INTERSECT [ALL], EXCEPT [ALL]: both arms planned (plan_query()), their
 * columns matched to common types as PostgreSQL does, then a Union (Distinct without ALL),
 * setop_tagged() or setop_all(). */
int plan_setop(struct analyzer *a, const PgQuery__SelectStmt *s,
               Coord__Plan__Relation **ret_plan, struct scope *ret_cols)
{
        _cleanup_(scope_done) struct scope lc = { 0 }, rc = { 0 };
        _cleanup_(rel_freep) Coord__Plan__Relation *lp = NULL, *rp = NULL;
        _cleanup_free_ int *lt = NULL, *rt = NULL, *to = NULL;
        Coord__Plan__Relation **inputs;
        const char *op = s->op == PG_QUERY__SET_OPERATION__SETOP_INTERSECT ? "INTERSECT"
                         : s->op == PG_QUERY__SET_OPERATION__SETOP_EXCEPT  ? "EXCEPT"
                                                                            : "UNION";
        int r;

        if (!s->larg || !s->rarg)
                return FAIL(a, "XX000", "malformed %s", op);
        {
                PgQuery__Node l = PG_QUERY__NODE__INIT, rn = PG_QUERY__NODE__INIT;

                l.node_case = rn.node_case = PG_QUERY__NODE__NODE_SELECT_STMT;
                l.select_stmt = s->larg;
                rn.select_stmt = s->rarg;
                r = plan_query(a, &l, NULL, &lp, &lc);
                if (r >= 0)
                        r = plan_query(a, &rn, NULL, &rp, &rc);
                if (r < 0)
                        return r;
        }
        if (lc.n != rc.n)
                return FAIL(a, "42601", "each %s query must have the same number of columns", op);
        lt = calloc(lc.n + 1, sizeof(*lt));
        rt = calloc(lc.n + 1, sizeof(*rt));
        to = calloc(lc.n + 1, sizeof(*to));
        if (!lt || !rt || !to)
                return analyzer_oom(a);
        for (size_t i = 0; i < lc.n; i++) {
                lt[i] = lc.cols[i].type;
                rt[i] = rc.cols[i].type;
                /* text then bpchar meet as text (the first, common_type()); bpchar
                 * with anything else could mix paddings (adapter-sql-bpchar.c
                 * invariant 1). */
                if (rt[i] == ROW_TYPE_BPCHAR && lt[i] == ROW_TYPE_TEXT && !lc.cols[i].unknown)
                        to[i] = ROW_TYPE_TEXT;
                else if (lt[i] == ROW_TYPE_BPCHAR || rt[i] == ROW_TYPE_BPCHAR)
                        return bpchar_refuse(a, -1, op);
                else if (lt[i] == rt[i])
                        to[i] = lt[i];
                else if (lc.cols[i].unknown && !rc.cols[i].unknown)
                        to[i] = rt[i];          /* SELECT 3 UNION SELECT NULL: int4 */
                else if (rc.cols[i].unknown && !lc.cols[i].unknown)
                        to[i] = lt[i];
                else if (type_is_int(lt[i]) && type_is_int(rt[i]))
                        to[i] = ROW_TYPE_INT8;
                else if (type_is_number(lt[i]) && type_is_number(rt[i]))
                        to[i] = ROW_TYPE_NUMERIC;       /* an integer and numeric */
                else
                        return FAIL(a, "42804", "%s types %s and %s cannot be matched", op,
                                    row_type_name((enum row_type)lt[i]),
                                    row_type_name((enum row_type)rt[i]));
                r = scope_add_col(a, ret_cols, NULL, lc.cols[i].name, to[i],
                                  lc.cols[i].nullable || rc.cols[i].nullable, true);
                if (r < 0)
                        return r;
        }
        r = rel_cast_columns(a, &lp, lt, to, lc.n);
        if (r >= 0)
                r = rel_cast_columns(a, &rp, rt, to, lc.n);
        if (r < 0)
                return r;
        if (s->op != PG_QUERY__SET_OPERATION__SETOP_UNION && s->all)
                return setop_all(a, s->op == PG_QUERY__SET_OPERATION__SETOP_INTERSECT,
                                 TAKE_PTR(lp), TAKE_PTR(rp), to, lc.n, ret_plan);
        if (s->op != PG_QUERY__SET_OPERATION__SETOP_UNION)
                return setop_tagged(a, s->op == PG_QUERY__SET_OPERATION__SETOP_INTERSECT,
                                    TAKE_PTR(lp), TAKE_PTR(rp), lc.n, ret_plan);
        inputs = calloc(2, sizeof(*inputs));
        if (!inputs)
                return analyzer_oom(a);
        inputs[0] = TAKE_PTR(lp);
        inputs[1] = TAKE_PTR(rp);
        *ret_plan = rel_union(inputs, 2);
        if (*ret_plan && !s->all)
                *ret_plan = rel_distinct(*ret_plan);
        return *ret_plan ? 0 : analyzer_oom(a);
}
