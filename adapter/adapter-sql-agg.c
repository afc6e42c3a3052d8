/* adapter-sql-agg.c -- aggregate calls (count, sum, min, max, avg, array_agg,
 * string_agg) into the placeholder columns of struct agg_ctx (adapter-sql-internal.h),
 * which regroup() (adapter-sql-query.c) rewrites to the Reduce's output columns.
 *
 * avg(x) is not an engine aggregate: it is planned as sum(x) / count(x) over the
 * Reduce's output (as Materialize does), in numeric, so it is maintained incrementally
 * wherever sum and count are, and NULL when there is no non-NULL x (sum is NULL then).
 */
#include "adapter-sql-internal.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *const HINT_FUNCTION =
        "No function matches the given name and argument types. "
        "You might need to add explicit type casts.";

/* array_agg(x [ORDER BY x]) and string_agg(x, 'delimiter' [ORDER BY x]) into *arg,
 * *func, *type and *delim (proto/plan.proto AGG_ARRAY_AGG): 0, or an error (42883 when
 * no such function takes these arguments).  The engine gives the
 * values in ascending order, so an ORDER BY other than the argument ascending (NULLS
 * LAST) is refused rather than ignored; without one PostgreSQL's order is unspecified. */
static int analyze_gather(struct analyzer *a, const PgQuery__FuncCall *f, const char *name,
                          struct typed *arg, Coord__Plan__AggFunc *func, int *type, char **delim)
{
        bool string = strcmp(name, "string_agg") == 0, in_agg = a->in_agg;
        _cleanup_(typed_done) struct typed d = { .location = -1 }, o = { .location = -1 };
        const PgQuery__SortBy *sb;
        int r;

        if (f->n_args != (string ? 2u : 1u))
                return no_function(a, f, name);
        a->in_agg = true;
        r = analyze_expr(a, f->args[0], arg);
        if (r >= 0 && string)
                r = analyze_expr(a, f->args[1], &d);
        if (r >= 0 && f->n_agg_order == 1 && f->agg_order[0]->node_case == PG_QUERY__NODE__NODE_SORT_BY)
                r = analyze_expr(a, f->agg_order[0]->sort_by->node, &o);
        a->in_agg = in_agg;
        if (r >= 0)
                r = coerce_unknown(a, arg, ROW_TYPE_TEXT);
        if (r >= 0 && string)
                r = bpchar_as_text(a, arg);
        if (r >= 0 && typed_is_bpchar(arg))
                r = bpchar_refuse(a, f->location, "array_agg()");
        if (r < 0)
                return r;
        if (string) {
                if ((int)arg->e->type != ROW_TYPE_TEXT ||
                    (!d.unknown && (int)d.e->type != ROW_TYPE_TEXT))
                        return no_function(a, f, name);
                r = coerce_unknown(a, &d, ROW_TYPE_TEXT);
                if (r < 0)
                        return r;
                if (!is_literal(d.e))
                        return FAIL_AT(a, f->location, "0A000", "string_agg() with a delimiter "
                                                                "that is not a constant is not supported");
                /* NULL joins with nothing between, as PostgreSQL. */
                *delim = d.e->literal->value_case == COORD__PLAN__DATUM__VALUE_TEXT_VALUE
                                 ? strndup((const char *)d.e->literal->text_value.data,
                                           d.e->literal->text_value.len)
                                 : strdup("");
                if (!*delim)
                        return analyzer_oom(a);
                if (strlen(*delim) != (d.e->literal->value_case == COORD__PLAN__DATUM__VALUE_TEXT_VALUE
                                               ? d.e->literal->text_value.len : 0))
                        return FAIL_AT(a, f->location, "22021", "invalid byte sequence for encoding \"UTF8\"");
                *func = COORD__PLAN__AGG_FUNC__AGG_STRING_AGG;
                *type = ROW_TYPE_TEXT;
        } else {
                if (row_type_is_array((int)arg->e->type))
                        return FAIL_AT(a, f->location, "0A000",
                                       "array_agg() of arrays (multidimensional arrays) is not supported");
                *func = COORD__PLAN__AGG_FUNC__AGG_ARRAY_AGG;
                *type = (int)row_type_array_of((enum row_type)arg->e->type);
                if (!row_type_valid(*type))
                        return FAIL_AT(a, f->location, "0A000", "arrays of %s are not supported",
                                       typed_name(arg));
        }
        if (!f->n_agg_order)
                return 0;
        sb = f->agg_order[0]->node_case == PG_QUERY__NODE__NODE_SORT_BY ? f->agg_order[0]->sort_by : NULL;
        if (f->n_agg_order != 1 || !sb || !o.e || !expr_equal(o.e, arg->e) ||
            sb->sortby_dir == PG_QUERY__SORT_BY_DIR__SORTBY_DESC ||
            sb->sortby_dir == PG_QUERY__SORT_BY_DIR__SORTBY_USING ||
            sb->sortby_nulls == PG_QUERY__SORT_BY_NULLS__SORTBY_NULLS_FIRST)
                return FAIL_AT(a, f->location, "0A000", "ORDER BY in %s() other than its argument "
                                                        "ascending is not supported", name);
        return 0;
}

/* The placeholder column of aggregate func over *arg (taken) into *ret: the same
 * aggregate twice is computed once. */
static int agg_slot(struct analyzer *a, Coord__Plan__AggFunc func, Coord__Plan__Expr **arg,
                    int type, char **delim, Coord__Plan__Expr **ret)
{
        struct agg_ctx *g = a->agg;

        for (size_t k = 0; k < g->n; k++)
                if (g->funcs[k] == func && g->types[k] == type &&
                    ((!g->args[k] && !*arg) ||
                     (g->args[k] && *arg && expr_equal(g->args[k], *arg))) &&
                    strcmp(g->delims[k] ?: "", *delim ?: "") == 0) {
                        *ret = expr_column(g->types[k], AGG_MARK | (uint32_t)k);
                        return *ret ? 0 : analyzer_oom(a);
                }
        if (g->n == g->cap) {
                size_t cap = g->cap ? 2 * g->cap : 4;
                Coord__Plan__AggFunc *fs = realloc(g->funcs, cap * sizeof(*fs));
                Coord__Plan__Expr **as = fs ? realloc(g->args, cap * sizeof(*as)) : NULL;
                int *ts = as ? realloc(g->types, cap * sizeof(*ts)) : NULL;
                char **ds = ts ? realloc(g->delims, cap * sizeof(*ds)) : NULL;

                if (fs)
                        g->funcs = fs;
                if (as)
                        g->args = as;
                if (ts)
                        g->types = ts;
                if (!ds)
                        return analyzer_oom(a);
                g->delims = ds;
                g->cap = cap;
        }
        g->funcs[g->n] = func;
        g->args[g->n] = TAKE_PTR(*arg);
        g->types[g->n] = type;
        g->delims[g->n] = TAKE_PTR(*delim);
        *ret = expr_column(type, AGG_MARK | (uint32_t)g->n);
        g->n++;
        return *ret ? 0 : analyzer_oom(a);
}

/* avg(x) of an integer or numeric x: numeric sum(x) / count(x) (this file's note).
 * arg is analyzed; the two aggregates take it. */
static int plan_avg(struct analyzer *a, struct typed *arg, int location, struct typed *ret)
{
        Coord__Plan__Expr *copy = expr_copy(arg->e), *sum = NULL, *count = NULL;
        char *no_delim = NULL;
        struct typed s = { .location = location }, c = { .location = location };
        int rc;

        if (!copy)
                return analyzer_oom(a);
        /* The sum in numeric also of integers: exact to 38 digits, as PostgreSQL's
         * avg(int8) sums in numeric (sum(int8) itself stays bigint). */
        rc = agg_slot(a, COORD__PLAN__AGG_FUNC__AGG_SUM, &copy, ROW_TYPE_NUMERIC, &no_delim, &sum);
        expr_free(copy);
        if (rc >= 0)
                rc = agg_slot(a, COORD__PLAN__AGG_FUNC__AGG_COUNT, &arg->e, ROW_TYPE_INT8,
                              &no_delim, &count);
        s.e = sum;
        c.e = count;
        if (rc >= 0)
                rc = numeric_promote(a, &c);
        if (rc >= 0)
                rc = binary_op(a, "/", &s, &c, location);
        if (rc < 0) {
                typed_done(&s);
                typed_done(&c);
                return rc;
        }
        *ret = s;
        return 0;
}

/* count/sum/min/max/avg, array_agg/string_agg: a placeholder column for the aggregate
 * (struct agg_ctx), or avg's expression over two of them. */
int analyze_aggregate(struct analyzer *a, const PgQuery__FuncCall *f, const char *name,
                      struct typed *ret)
{
        struct agg_ctx *g = a->agg;
        _cleanup_(typed_done) struct typed arg = { .location = -1 };
        Coord__Plan__AggFunc func = COORD__PLAN__AGG_FUNC__AGG_COUNT_STAR;
        int type = ROW_TYPE_INT8, rc;
        bool in_agg = a->in_agg, gather;
        _cleanup_free_ char *delim = NULL;

        if (!g) {
                if (a->no_agg)
                        return FAIL_AT(a, f->location, "42803",
                                       "aggregate functions are not allowed in %s", a->no_agg);
                return FAIL_AT(a, f->location, "42803", "aggregate functions are not allowed here");
        }
        if (a->in_agg)
                return FAIL_AT(a, f->location, "42803", "aggregate function calls cannot be nested");
        gather = strcmp(name, "array_agg") == 0 || strcmp(name, "string_agg") == 0;
        if (f->agg_distinct || (f->n_agg_order && !gather) || f->agg_filter || f->agg_within_group)
                return FAIL_AT(a, f->location, "0A000",
                               "DISTINCT, ORDER BY, FILTER and WITHIN GROUP in aggregates are "
                               "not supported");
        if (gather && !f->agg_star) {
                rc = analyze_gather(a, f, name, &arg, &func, &type, &delim);
                if (rc < 0)
                        return rc;
        } else if (f->agg_star) {
                if (strcmp(name, "count") != 0)
                        return FAIL_AT(a, f->location, "42809",
                                       "%s(*) specified, but %s is not an aggregate function "
                                       "that takes *", name, name);
                func = COORD__PLAN__AGG_FUNC__AGG_COUNT_STAR;
        } else {
                if (f->n_args != 1) {
                        FAIL_AT(a, f->location, "42883", "function %s with %zu arguments does not "
                                "exist", name, f->n_args);
                        row_error_hint(a->err, "%s", HINT_FUNCTION);
                        return -EINVAL;
                }
                a->in_agg = true;
                rc = analyze_expr(a, f->args[0], &arg);
                a->in_agg = in_agg;
                if (rc >= 0)
                        rc = coerce_unknown(a, &arg, ROW_TYPE_TEXT);
                if (rc < 0)
                        return rc;
                if (strcmp(name, "count") == 0) {
                        func = COORD__PLAN__AGG_FUNC__AGG_COUNT;
                } else if (strcmp(name, "sum") == 0) {
                        func = COORD__PLAN__AGG_FUNC__AGG_SUM;
                        if (!type_is_number((int)arg.e->type))
                                goto no_function;
                        /* sum of integers is bigint, of numeric numeric. */
                        if ((int)arg.e->type == ROW_TYPE_NUMERIC)
                                type = ROW_TYPE_NUMERIC;
                } else if (strcmp(name, "avg") == 0) {
                        if (!type_is_number((int)arg.e->type))
                                goto no_function;
                        return plan_avg(a, &arg, f->location, ret);
                } else {
                        func = strcmp(name, "min") == 0 ? COORD__PLAN__AGG_FUNC__AGG_MIN
                                                         : COORD__PLAN__AGG_FUNC__AGG_MAX;
                        if ((int)arg.e->type == ROW_TYPE_BOOL)
                                goto no_function;
                        if (typed_is_bpchar(&arg))
                                return bpchar_refuse(a, f->location, name);
                        type = (int)arg.e->type;
                }
        }
        rc = agg_slot(a, func, &arg.e, type, &delim, &ret->e);
        if (rc < 0)
                return rc;
        ret->unknown = false;
        ret->location = f->location;
        return 0;
no_function:
        FAIL_AT(a, f->location, "42883", "function %s(%s) does not exist", name, typed_name(&arg));
        row_error_hint(a->err, "%s", HINT_FUNCTION);
        return -EINVAL;
}

