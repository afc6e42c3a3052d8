/* adapter-sql-query.c -- queries: a SELECT's ORDER BY and LIMIT, grouping (regroup()),
 * plan_select() and plan_query(); VALUES and set operations are adapter-sql-setop.c's
 * (adapter-sql-internal.h; adapter-sql.c note 7). */
#include "adapter-sql-internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- Queries. ---- */

/* PostgreSQL's limit on the entries of a target list (MaxTupleAttributeNumber). */
#define MAX_TARGETS 1664u


/* PostgreSQL 15's FigureColnameInternal(): *name for n and its strength -- 2 for a
 * name taken from the expression itself (a column, a function, COALESCE, ...), 1 for a
 * cast's type name or "case", 0 for none -- so that a cast keeps its argument's strong
 * name and nested casts take the outermost type's (`'5'::int::text` is "text"). */
static int colname_strength(const PgQuery__Node *n, const char **name)
{
        const char *s = NULL;
        int k;

        switch (n ? n->node_case : PG_QUERY__NODE__NODE__NOT_SET) {
        case PG_QUERY__NODE__NODE_COLUMN_REF:
                if (n->column_ref->n_fields)
                        s = node_string(n->column_ref->fields[n->column_ref->n_fields - 1]);
                break;
        case PG_QUERY__NODE__NODE_A_INDIRECTION:
                for (size_t i = 0; i < n->a_indirection->n_indirection; i++)
                        if (node_string(n->a_indirection->indirection[i]))
                                s = node_string(n->a_indirection->indirection[i]);
                if (!s)
                        return colname_strength(n->a_indirection->arg, name);
                break;
        case PG_QUERY__NODE__NODE_FUNC_CALL:
                if (n->func_call->n_funcname)
                        s = node_string(n->func_call->funcname[n->func_call->n_funcname - 1]);
                break;
        case PG_QUERY__NODE__NODE_A_EXPR:
                if (n->a_expr->kind == PG_QUERY__A__EXPR__KIND__AEXPR_NULLIF)
                        s = "nullif";
                break;
        case PG_QUERY__NODE__NODE_TYPE_CAST:
                k = colname_strength(n->type_cast->arg, name);
                if (k <= 1 && n->type_cast->type_name && n->type_cast->type_name->n_names) {
                        *name = node_string(n->type_cast->type_name->names
                                                    [n->type_cast->type_name->n_names - 1]);
                        return 1;
                }
                return k;
        case PG_QUERY__NODE__NODE_COLLATE_CLAUSE:
                return colname_strength(n->collate_clause->arg, name);
        case PG_QUERY__NODE__NODE_SUB_LINK:
                switch (n->sub_link->sub_link_type) {
                case PG_QUERY__SUB_LINK_TYPE__EXISTS_SUBLINK:
                        s = "exists";
                        break;
                case PG_QUERY__SUB_LINK_TYPE__ARRAY_SUBLINK:
                        s = "array";
                        break;
                case PG_QUERY__SUB_LINK_TYPE__EXPR_SUBLINK: {
                        /* the subquery's one column's name (its leftmost arm's) */
                        const PgQuery__SelectStmt *sel;

                        sel = n->sub_link->subselect &&
                                              n->sub_link->subselect->node_case == PG_QUERY__NODE__NODE_SELECT_STMT
                                      ? n->sub_link->subselect->select_stmt
                                      : NULL;
                        while (sel && sel->larg)
                                sel = sel->larg;
                        if (sel && sel->n_target_list &&
                            sel->target_list[0]->node_case == PG_QUERY__NODE__NODE_RES_TARGET) {
                                const PgQuery__ResTarget *rt = sel->target_list[0]->res_target;

                                s = rt->name && rt->name[0] ? rt->name
                                    : rt->val               ? figure_colname(rt->val)
                                                            : NULL;
                        }
                        break;
                }
                default:
                        break;
                }
                break;
        case PG_QUERY__NODE__NODE_CASE_EXPR:
                k = colname_strength(n->case_expr->defresult, name);
                if (k <= 1) {
                        *name = "case";
                        return 1;
                }
                return k;
        case PG_QUERY__NODE__NODE_A_ARRAY_EXPR:
                s = "array";
                break;
        case PG_QUERY__NODE__NODE_ROW_EXPR:
                s = "row";
                break;
        case PG_QUERY__NODE__NODE_COALESCE_EXPR:
                s = "coalesce";
                break;
        case PG_QUERY__NODE__NODE_MIN_MAX_EXPR:
                s = n->min_max_expr->op == PG_QUERY__MIN_MAX_OP__IS_GREATEST ? "greatest" : "least";
                break;
        case PG_QUERY__NODE__NODE_SQLVALUE_FUNCTION:
                s = sql_value_function_name(n->sqlvalue_function->op);
                break;
        default:
                break;
        }
        if (!s)
                return 0;
        *name = s;
        return 2;
}

/* The output column name PostgreSQL would pick (FigureColname). */
const char *figure_colname(const PgQuery__Node *n)
{
        const char *name = NULL;

        return colname_strength(n, &name) > 0 && name ? name : "?column?";
}

/* Does the expression hold an aggregate call (outside subqueries)? */
static bool node_has_aggregate(const PgQuery__Node *n)
{
        if (!n)
                return false;
        switch (n->node_case) {
        case PG_QUERY__NODE__NODE_FUNC_CALL: {
                const PgQuery__FuncCall *f = n->func_call;
                const char *name = f->n_funcname ? node_string(f->funcname[f->n_funcname - 1]) : NULL;

                if (f->agg_star || (name && is_aggregate_name(name) && !f->over))
                        return true;
                for (size_t i = 0; i < f->n_args; i++)
                        if (node_has_aggregate(f->args[i]))
                                return true;
                return false;
        }
        case PG_QUERY__NODE__NODE_A_EXPR:
                return node_has_aggregate(n->a_expr->lexpr) || node_has_aggregate(n->a_expr->rexpr);
        case PG_QUERY__NODE__NODE_BOOL_EXPR:
                for (size_t i = 0; i < n->bool_expr->n_args; i++)
                        if (node_has_aggregate(n->bool_expr->args[i]))
                                return true;
                return false;
        case PG_QUERY__NODE__NODE_COALESCE_EXPR:
                for (size_t i = 0; i < n->coalesce_expr->n_args; i++)
                        if (node_has_aggregate(n->coalesce_expr->args[i]))
                                return true;
                return false;
        case PG_QUERY__NODE__NODE_TYPE_CAST:
                return node_has_aggregate(n->type_cast->arg);
        case PG_QUERY__NODE__NODE_NULL_TEST:
                return node_has_aggregate(n->null_test->arg);
        case PG_QUERY__NODE__NODE_RES_TARGET:
                return node_has_aggregate(n->res_target->val);
        case PG_QUERY__NODE__NODE_SORT_BY:
                return node_has_aggregate(n->sort_by->node);
        default:
                return false;
        }
}

static bool is_null_const(const PgQuery__Node *n)
{
        return n && n->node_case == PG_QUERY__NODE__NODE_A_CONST && n->a_const->isnull;
}

bool has_limit(const PgQuery__SelectStmt *s)
{
        return (s->limit_count && !is_null_const(s->limit_count)) || s->limit_offset;
}

/* An integer constant node (ORDER BY 2, GROUP BY 1): its value, or -1. */
static long node_position(const PgQuery__Node *n)
{
        if (n && n->node_case == PG_QUERY__NODE__NODE_A_CONST &&
            n->a_const->val_case == PG_QUERY__A__CONST__VAL_IVAL)
                return n->a_const->ival->ival;
        return -1;
}

/* An unqualified column name node: the name, or NULL. */
static const char *node_plain_name(const PgQuery__Node *n)
{
        if (n && n->node_case == PG_QUERY__NODE__NODE_COLUMN_REF && n->column_ref->n_fields == 1)
                return node_string(n->column_ref->fields[0]);
        return NULL;
}

/* LIMIT or OFFSET: a constant, non-negative bigint; NULL (and LIMIT ALL) is none. */
static int analyze_limit(struct analyzer *a, const PgQuery__Node *n, const char *what,
                         const char *sqlstate, bool *has, uint64_t *ret)
{
        _cleanup_(typed_done) struct typed t = { .location = -1 };
        const struct scope *scope = a->scope;
        bool strict = a->strict_fold;
        int r;

        *has = false;
        if (!n)
                return 0;
        a->scope = NULL;
        a->strict_fold = true;
        a->no_mz_now = what;
        r = analyze_expr(a, n, &t);
        if (r >= 0)
                r = coerce_unknown(a, &t, ROW_TYPE_INT8);
        a->scope = scope;
        a->strict_fold = strict;
        a->no_mz_now = NULL;
        if (r < 0)
                return r;
        if (!type_is_int((int)t.e->type))
                return FAIL_AT(a, t.location, "42804", "argument of %s must be type bigint, not "
                               "type %s", what, row_type_name((enum row_type)t.e->type));
        if (!is_literal(t.e))
                return FAIL_AT(a, t.location, "0A000", "%s must be a constant", what);
        if (t.e->literal->value_case == COORD__PLAN__DATUM__VALUE_NULL_VALUE)
                return 0;
        if (t.e->literal->int_value < 0)
                return FAIL_AT(a, t.location, sqlstate, "%s must not be negative", what);
        *has = true;
        *ret = (uint64_t)t.e->literal->int_value;
        return 0;
}

/* Append the sort key of ORDER BY item sb, on `column` of `type`, to keys[*n].  Arrays
 * are refused: sorts compare datums by row_datum_compare(), and an array's bytes do not
 * order as the array does (common/row/row.h, "Arrays"). */
static int sort_key_add(struct analyzer *a, Coord__Plan__SortKey ***keys, size_t *n, uint32_t column,
                        int type, const PgQuery__SortBy *sb)
{
        Coord__Plan__SortKey **v;
        Coord__Plan__SortKey *k;

        if (row_type_is_array(type))
                return FAIL_AT(a, sb->location, "0A000", "ORDER BY of an array is not supported");
        if (type == ROW_TYPE_BPCHAR)    /* adapter-sql-bpchar.c invariant 3 */
                return bpchar_refuse(a, sb->location, "ORDER BY");
        v = realloc(*keys, (*n + 1) * sizeof(*v));
        if (!v)
                return analyzer_oom(a);
        *keys = v;
        if (sb->sortby_dir == PG_QUERY__SORT_BY_DIR__SORTBY_USING || sb->n_use_op)
                return FAIL_AT(a, sb->location, "0A000", "ORDER BY ... USING is not supported");
        k = malloc(sizeof(*k));
        if (!k)
                return analyzer_oom(a);
        coord__plan__sort_key__init(k);
        k->column = column;
        k->descending = sb->sortby_dir == PG_QUERY__SORT_BY_DIR__SORTBY_DESC;
        k->nulls_first = sb->sortby_nulls == PG_QUERY__SORT_BY_NULLS__SORTBY_NULLS_FIRST ||
                         (sb->sortby_nulls != PG_QUERY__SORT_BY_NULLS__SORTBY_NULLS_LAST &&
                          k->descending);
        (*keys)[(*n)++] = k;
        return 0;
}

static int peek_sort_key(struct analyzer *a, Coord__Plan__Peek *peek, uint32_t column, int type,
                         const PgQuery__SortBy *sb)
{
        return sort_key_add(a, &peek->order_by, &peek->n_order_by, column, type, sb);
}

/* An ORDER BY item naming an output column by position or name: 1 with *ret, 0 when it
 * is an expression, or an error. */
static int sort_output(struct analyzer *a, const PgQuery__SortBy *sb, const struct scope *out,
                       size_t n_visible, uint32_t *ret)
{
        long pos = node_position(sb->node);
        const char *name = node_plain_name(sb->node);
        size_t found = SIZE_MAX;

        if (pos >= 0 || (sb->node && sb->node->node_case == PG_QUERY__NODE__NODE_A_CONST &&
                         !sb->node->a_const->isnull &&
                         sb->node->a_const->val_case == PG_QUERY__A__CONST__VAL_IVAL)) {
                if (pos < 1 || (size_t)pos > n_visible)
                        return FAIL_AT(a, sb->node->a_const->location, "42P10",
                                       "ORDER BY position %ld is not in select list", pos);
                *ret = (uint32_t)(pos - 1);
                return 1;
        }
        if (!name)
                return 0;
        for (size_t i = 0; i < n_visible; i++) {
                if (strcmp(out->cols[i].name, name) != 0)
                        continue;
                if (found != SIZE_MAX)
                        return FAIL_AT(a, sb->node->column_ref->location, "42702",
                                       "ORDER BY \"%s\" is ambiguous", name);
                found = i;
        }
        if (found == SIZE_MAX)
                return 0;
        *ret = (uint32_t)found;
        return 1;
}

/* ORDER BY and LIMIT of a top-level UNION or VALUES: output columns only. */
static int peek_order_limit(struct analyzer *a, const PgQuery__SelectStmt *s, const struct scope *out,
                            Coord__Plan__Peek *peek);

/* LIMIT and OFFSET of s: constants (analyze_limit()). */
int limit_offset(struct analyzer *a, const PgQuery__SelectStmt *s, bool *has_count,
                        uint64_t *count, bool *has_offset, uint64_t *offset)
{
        int r;

        if (s->limit_option == PG_QUERY__LIMIT_OPTION__LIMIT_OPTION_WITH_TIES)
                return FAIL(a, "0A000", "FETCH ... WITH TIES is not supported");
        r = analyze_limit(a, s->limit_count, "LIMIT", "2201W", has_count, count);
        if (r >= 0)
                r = analyze_limit(a, s->limit_offset, "OFFSET", "2201X", has_offset, offset);
        return r;
}

/* LIMIT/OFFSET of a SELECT below the outermost one (plan_query()): the window of its
 * TopK, if it cuts one.  Refused where the rows kept would be arbitrary (no ORDER BY)
 * and in a subquery in an expression ("Subqueries": not decorrelated with a window). */
static int topk_limit(struct analyzer *a, const PgQuery__SelectStmt *s, struct topk_spec *ret)
{
        bool has_offset;
        int r;

        *ret = (struct topk_spec){ 0 };
        if (!has_limit(s))
                return 0;
        if (a->no_limit)
                return FAIL(a, "0A000", "LIMIT and OFFSET are not supported in a subquery in an "
                            "expression");
        r = limit_offset(a, s, &ret->has_limit, &ret->limit, &has_offset, &ret->offset);
        if (r < 0)
                return r;
        ret->on = ret->has_limit || ret->offset > 0;
        if (ret->on && !s->n_sort_clause)
                return FAIL(a, "0A000", "LIMIT without ORDER BY in a %s is not deterministic",
                            a->peek ? "subquery" : "view");
        return 0;
}

/* One ORDER BY item of a UNION or VALUES: an output column only (a TopK's or a peek's). */
static int union_sort_col(struct analyzer *a, const PgQuery__Node *n, const struct scope *out,
                          const PgQuery__SortBy **sbp, uint32_t *col)
{
        const PgQuery__SortBy *sb = n->node_case == PG_QUERY__NODE__NODE_SORT_BY ? n->sort_by : NULL;
        int r;

        if (!sb)
                return FAIL(a, "XX000", "malformed ORDER BY");
        *sbp = sb;
        r = sort_output(a, sb, out, out->n, col);
        if (r == 0)
                r = FAIL_AT(a, sb->location, "0A000",
                            "ORDER BY of a UNION or VALUES must name an output column");
        return r;
}

/* ORDER BY of a top-level UNION or VALUES into keys[0..*n): output columns only. */
static int union_order(struct analyzer *a, const PgQuery__SelectStmt *s, const struct scope *out,
                       Coord__Plan__SortKey ***keys, size_t *n)
{
        for (size_t i = 0; i < s->n_sort_clause; i++) {
                const PgQuery__SortBy *sb = NULL;
                uint32_t col = 0;
                int r;

                r = union_sort_col(a, s->sort_clause[i], out, &sb, &col);
                if (r >= 0)
                        r = sort_key_add(a, keys, n, col, out->cols[col].type, sb);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int peek_limit(struct analyzer *a, const PgQuery__SelectStmt *s, Coord__Plan__Peek *peek)
{
        bool has_count, has_offset;
        uint64_t count = 0, offset = 0;
        int r;

        r = limit_offset(a, s, &has_count, &count, &has_offset, &offset);
        if (r < 0)
                return r;
        if (!has_count && !has_offset)
                return 0;
        peek->limit = malloc(sizeof(*peek->limit));
        if (!peek->limit)
                return analyzer_oom(a);
        coord__plan__limit__init(peek->limit);
        /* OFFSET alone: every row after the offset. */
        peek->limit->count = has_count ? count : UINT64_MAX;
        peek->limit->offset = offset;
        return 0;
}

static int peek_order_limit(struct analyzer *a, const PgQuery__SelectStmt *s, const struct scope *out,
                            Coord__Plan__Peek *peek)
{
        int r = union_order(a, s, out, &peek->order_by, &peek->n_order_by);

        return r < 0 ? r : peek_limit(a, s, peek);
}

/* Rewrite an expression of a grouped SELECT over the Reduce's output: group keys become
 * key columns, aggregate placeholders the aggregate columns; any other column is 42803. */
static int regroup(struct analyzer *a, Coord__Plan__Expr **pe, Coord__Plan__Expr **keys, size_t nk,
                   const struct scope *from)
{
        Coord__Plan__Expr *e = *pe;

        for (size_t k = 0; k < nk; k++)
                if (expr_equal(e, keys[k])) {
                        Coord__Plan__Expr *c = expr_column((int)e->type, (uint32_t)k);

                        if (!c)
                                return analyzer_oom(a);
                        expr_free(e);
                        *pe = c;
                        return 0;
                }
        switch (e->kind_case) {
        case COORD__PLAN__EXPR__KIND_COLUMN: {
                const struct scope_col *col;

                if (e->column & AGG_MARK) {
                        e->column = (uint32_t)nk + (e->column & ~AGG_MARK);
                        return 0;
                }
                if (e->column & LATE_MARK) {
                        e->column = a->late_base + (e->column & ~LATE_MARK);
                        return 0;
                }
                col = &from->cols[e->column];
                if (col->qual)
                        return FAIL(a, "42803", "column \"%s.%s\" must appear in the GROUP BY "
                                    "clause or be used in an aggregate function", col->qual,
                                    col->name);
                return FAIL(a, "42803", "column \"%s\" must appear in the GROUP BY clause or be "
                            "used in an aggregate function", col->name);
        }
        case COORD__PLAN__EXPR__KIND_CALL:
                for (size_t i = 0; i < e->call->n_args; i++) {
                        int r = regroup(a, &e->call->args[i], keys, nk, from);

                        if (r < 0)
                                return r;
                }
                return 0;
        default:
                return 0;
        }
}

static void agg_done(struct agg_ctx *g)
{
        for (size_t i = 0; i < g->n; i++) {
                expr_free(g->args[i]);
                free(g->delims[i]);
        }
        free(g->delims);
        free(g->args);
        free(g->funcs);
        free(g->types);
}

/* The SELECT list (and hidden ORDER BY columns) under construction. */
struct outputs {
        Coord__Plan__Expr **e;          /* over the source row: FROM's, or the Reduce's */
        const char **names;
        size_t n, cap;
        /* The outputs that are a reg* value's text (analyze_reg_cast()): sorted by their
         * text, where PostgreSQL sorts by the oid, so ORDER BY may not name them. */
        size_t *reg;
        size_t n_reg;
        bool *unknown;                  /* per output: an untyped literal made text */
};

static void outputs_done(struct outputs *o)
{
        for (size_t i = 0; i < o->n; i++)
                expr_free(o->e[i]);
        free(o->e);
        free(o->names);
        free(o->reg);
        free(o->unknown);
}

static int outputs_add(struct analyzer *a, struct outputs *o, Coord__Plan__Expr *e, const char *name)
{
        if (!e)
                return analyzer_oom(a);
        if (o->n == o->cap) {
                size_t cap = o->cap ? 2 * o->cap : 8;
                Coord__Plan__Expr **ne = realloc(o->e, cap * sizeof(*ne));
                const char **nn = ne ? realloc(o->names, cap * sizeof(*nn)) : NULL;
                bool *nu = nn ? realloc(o->unknown, cap * sizeof(*nu)) : NULL;

                if (ne)
                        o->e = ne;
                if (nn)
                        o->names = nn;
                if (!nu) {
                        expr_free(e);
                        return analyzer_oom(a);
                }
                o->unknown = nu;
                o->cap = cap;
        }
        o->e[o->n] = e;
        o->unknown[o->n] = false;
        o->names[o->n++] = name;
        if (o->n > MAX_TARGETS)
                return FAIL(a, "54011", "target lists can have at most %u entries", MAX_TARGETS);
        return 0;
}

/* One entry of the SELECT list: `*`, `t.*` or an expression; top: of the statement's
 * own SELECT (not a subquery's, a UNION's or a view's), whose reg* outputs are sent. */
static int select_target(struct analyzer *a, struct outputs *o, const PgQuery__ResTarget *rt,
                         bool top)
{
        const struct scope *sc = a->scope;
        _cleanup_(typed_done) struct typed t = { .location = -1 };
        const PgQuery__ColumnRef *cr;
        const char *name;
        bool unknown;
        int r;

        if (!rt->val)
                return FAIL(a, "XX000", "malformed target list");
        cr = rt->val->node_case == PG_QUERY__NODE__NODE_COLUMN_REF ? rt->val->column_ref : NULL;
        if (cr && cr->n_fields &&
            cr->fields[cr->n_fields - 1]->node_case == PG_QUERY__NODE__NODE_A_STAR) {
                const char *qualifier = cr->n_fields == 2 ? node_string(cr->fields[0]) : NULL;

                if (cr->n_fields > 2 || (cr->n_fields == 2 && !qualifier))
                        return FAIL_AT(a, cr->location, "0A000", "this * is not supported");
                if (!qualifier && (!sc || (!sc->n_quals && !sc->n)))
                        return FAIL_AT(a, cr->location, "42601",
                                       "SELECT * with no tables specified is not valid");
                if (qualifier && !scope_has_qual(sc, qualifier))
                        return FAIL_AT(a, cr->location, "42P01",
                                       "missing FROM-clause entry for table \"%s\"", qualifier);
                if (!qualifier) {
                        for (size_t i = 0; i < sc->n_star; i++) {
                                const struct scope_col *c = &sc->cols[sc->star[i]];

                                r = outputs_add(a, o, expr_column(c->type, sc->star[i]), c->name);
                                if (r < 0)
                                        return r;
                        }
                        return 0;
                }
                for (size_t i = 0; i < sc->n; i++) {
                        const struct scope_col *c = &sc->cols[i];

                        if (!c->qual || strcmp(c->qual, qualifier) != 0)
                                continue;
                        r = outputs_add(a, o, expr_column(c->type, (uint32_t)i), c->name);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        a->reg_ok = top && is_reg_cast(rt->val);  /* sent as its text */
        if (a->reg_ok) {
                size_t *v = realloc(o->reg, (o->n_reg + 1) * sizeof(*v));

                if (!v)
                        return analyzer_oom(a);
                o->reg = v;
                o->reg[o->n_reg++] = o->n;
        }
        r = analyze_expr(a, rt->val, &t);
        unknown = r >= 0 && t.unknown;
        if (r >= 0)
                r = coerce_unknown(a, &t, ROW_TYPE_TEXT);   /* PostgreSQL outputs unknown as text */
        if (r < 0)
                return r;
        if (rt->name && rt->name[0])
                name = rt->name;
        else if (t.e->kind_case == COORD__PLAN__EXPR__KIND_COLUMN && (t.e->column & LATE_MARK) &&
                 a->attach && a->attach->late)
                name = a->attach->scope->cols[t.e->column & ~LATE_MARK].name;
        else if (t.e->kind_case == COORD__PLAN__EXPR__KIND_COLUMN && !(t.e->column & AGG_MARK))
                name = sc->cols[t.e->column].name;
        else
                name = figure_colname(rt->val);
        r = outputs_add(a, o, TAKE_PTR(t.e), name);
        if (r >= 0)
                o->unknown[o->n - 1] = unknown;
        return r;
}

/* Is a source column or expression possibly NULL? */
static bool expr_nullable(const Coord__Plan__Expr *e, const struct scope *src)
{
        if (e->kind_case == COORD__PLAN__EXPR__KIND_COLUMN)
                return src->cols[e->column].nullable;
        if (e->kind_case == COORD__PLAN__EXPR__KIND_LITERAL)
                return e->literal->value_case == COORD__PLAN__DATUM__VALUE_NULL_VALUE;
        return true;
}

/* What the steps of plan_select() share. */
struct select_plan {
        struct scope from, reduced;
        struct agg_ctx agg;
        struct outputs o;
        Coord__Plan__Relation *plan;
        Coord__Plan__Expr *having;
        Coord__Plan__Expr **keys;
        size_t nk;
        long *sort_cols;                /* output column, or -1: sort_exprs */
        Coord__Plan__Expr **sort_exprs;
        const struct scope *src;
        size_t n_visible, n_sort;
        bool grouped, distinct;
        struct subq *sq;                /* this SELECT is a subquery: its keys */
        struct attach wat, lat, gat;
        struct scope late;              /* gat's columns */
};

/* Free what plan_select()'s locals held, in the order their cleanups ran; p->keys is
 * plan_select()'s own to free. */
static void select_plan_done(struct select_plan *p)
{
        scope_done(&p->late);
        attach_done(&p->gat);
        attach_done(&p->lat);
        attach_done(&p->wat);
        free(p->sort_exprs);
        free(p->sort_cols);
        expr_freep(&p->having);
        rel_freep(&p->plan);
        outputs_done(&p->o);
        agg_done(&p->agg);
        scope_done(&p->reduced);
        scope_done(&p->from);
}

/* plan_select()'s FROM and WHERE: p->from and p->plan; the WHERE's subqueries attached
 * through p->wat, a correlated subquery's keys collected. */
static int select_from_where(struct analyzer *a, const PgQuery__SelectStmt *s, struct select_plan *p)
{
        _cleanup_(expr_freep) Coord__Plan__Expr *pred = NULL;
        size_t n_from;
        int r;

        r = plan_from(a, s, &p->from, &p->plan);
        if (r < 0)
                return r;
        if (p->sq && a->outer->dom && a->outer->dom->on) {
                r = domain_join(a, a->outer, p->sq, &p->from, &p->plan);
                if (r < 0)
                        return r;
        }
        a->scope = &p->from;
        a->no_agg = "WHERE";
        n_from = p->from.n;
        p->wat = (struct attach){ .scope = &p->from, .base_n = p->from.n, .rows = p->plan,
                                  .empty = rel_known_empty(p->plan) };
        r = truth_sublinks(a, s->where_clause, &p->wat);
        a->attach = &p->wat;
        if (p->sq)
                a->outer->collect = true;
        if (r >= 0)
                r = analyze_where(a, s->where_clause, &pred);
        if (p->sq)
                a->outer->collect = false;
        a->attach = NULL;
        if (r >= 0)
                r = plan_where(a, &p->plan, TAKE_PTR(pred), &p->wat, p->sq, n_from);
        if (r < 0)
                return r;
        if (p->from.n > n_from) {
                /* The WHERE's subqueries' columns go: the rest counts FROM's columns. */
                p->plan = rel_project_range(TAKE_PTR(p->plan), 0, n_from);
                p->from.n = n_from;
                if (!p->plan)
                        return analyzer_oom(a);
        }
        return 0;
}

/* plan_select()'s GROUP BY keys, over the FROM columns, into p->keys (p->nk of them). */
static int select_group_keys(struct analyzer *a, const PgQuery__SelectStmt *s, struct select_plan *p)
{
        int r;

        a->no_agg = "GROUP BY";
        for (size_t i = 0; i < s->n_group_clause; i++) {
                _cleanup_(typed_done) struct typed t = { .location = -1 };
                const PgQuery__Node *g = s->group_clause[i];
                long pos = node_position(g);
                const char *name = node_plain_name(g);
                bool dup = false;

                if (pos >= 0) {
                        if (pos < 1 || (size_t)pos > s->n_target_list ||
                            s->target_list[pos - 1]->node_case != PG_QUERY__NODE__NODE_RES_TARGET) {
                                r = FAIL_AT(a, node_location(g), "42P10",
                                            "GROUP BY position %ld is not in select list", pos);
                                return r;
                        }
                        g = s->target_list[pos - 1]->res_target->val;
                } else if (name) {
                        /* An output name that is not a FROM column (PostgreSQL's rule). */
                        bool is_column = false;

                        for (size_t k = 0; k < p->from.n; k++)
                                is_column = is_column || (!p->from.cols[k].hidden &&
                                                          strcmp(p->from.cols[k].name, name) == 0);
                        const PgQuery__Node *found = NULL;

                        for (size_t k = 0; !is_column && k < s->n_target_list; k++) {
                                const PgQuery__ResTarget *rt = s->target_list[k]->res_target;

                                if (!rt->name || strcmp(rt->name, name) != 0)
                                        continue;
                                if (found) {
                                        r = FAIL_AT(a, node_location(s->group_clause[i]), "42702",
                                                    "GROUP BY \"%s\" is ambiguous", name);
                                        return r;
                                }
                                found = rt->val;
                        }
                        if (found)
                                g = found;
                }
                if (g->node_case == PG_QUERY__NODE__NODE_GROUPING_SET) {
                        r = FAIL(a, "0A000", "GROUPING SETS, ROLLUP and CUBE are not supported");
                        return r;
                }
                r = analyze_expr(a, g, &t);
                if (r >= 0)
                        r = coerce_unknown(a, &t, ROW_TYPE_TEXT);
                if (r < 0)
                        return r;
                for (size_t k = 0; k < p->nk; k++)
                        dup = dup || expr_equal(p->keys[k], t.e);
                if (!dup)
                        p->keys[p->nk++] = TAKE_PTR(t.e);
        }
        /* A correlated subquery's keys group it too. */
        for (size_t i = 0; p->grouped && p->sq && i < p->sq->n; i++)
                if (!(p->keys[p->nk++] = expr_copy(p->sq->inner[i]))) {
                        r = analyzer_oom(a);
                        return r;
                }
        return 0;
}

/* plan_select()'s list, HAVING and ORDER BY, analyzed over the FROM columns (aggregates
 * as placeholders when grouped): p->o, p->having, p->sort_cols and p->sort_exprs. */
static int select_list(struct analyzer *a, const PgQuery__SelectStmt *s, Coord__Plan__Peek *peek,
                       struct select_plan *p)
{
        int r;

        /* The list, HAVING and ORDER BY see aggregates when grouped. */
        a->agg = p->grouped ? &p->agg : NULL;
        a->no_agg = p->grouped ? NULL : "this context";
        p->lat = (struct attach){ .scope = &p->from, .base_n = p->from.n, .rows = p->plan,
                                  .empty = rel_known_empty(p->plan) };
        p->gat = (struct attach){ .scope = &p->late, .late = true, .outer = &p->from };
        a->attach = p->grouped ? &p->gat : &p->lat;
        for (size_t i = 0; i < s->n_target_list; i++) {
                if (s->target_list[i]->node_case != PG_QUERY__NODE__NODE_RES_TARGET) {
                        r = FAIL(a, "XX000", "malformed target list");
                        return r;
                }
                r = select_target(a, &p->o, s->target_list[i]->res_target, peek != NULL);
                if (r < 0)
                        return r;
        }
        a->attach = NULL;
        if (p->lat.n) {
                r = attach_apply(a, &p->lat, &p->plan);
                if (r < 0)
                        return r;
        }
        p->n_visible = p->o.n;
        /* A correlated subquery's keys follow its own columns. */
        for (size_t i = 0; p->sq && i < p->sq->n; i++) {
                r = outputs_add(a, &p->o, expr_copy(p->sq->inner[i]), "?column?");
                if (r < 0)
                        return r;
        }
        if (p->sq)
                p->sq->n_visible = p->n_visible;
        if (s->having_clause) {
                _cleanup_(typed_done) struct typed t = { .location = -1 };

                a->attach = &p->gat;
                r = analyze_expr(a, s->having_clause, &t);
                a->attach = NULL;
                if (r >= 0)
                        r = require_bool(a, &t, "HAVING");
                if (r < 0)
                        return r;
                p->having = TAKE_PTR(t.e);
        }
        for (size_t i = 0; i < p->n_sort; i++) {
                _cleanup_(typed_done) struct typed t = { .location = -1 };
                const PgQuery__SortBy *sb = s->sort_clause[i]->node_case == PG_QUERY__NODE__NODE_SORT_BY
                                                    ? s->sort_clause[i]->sort_by
                                                    : NULL;
                struct scope shown = { .cols = NULL };
                _cleanup_free_ struct scope_col *cols = calloc(p->n_visible ? p->n_visible : 1,
                                                               sizeof(*cols));
                uint32_t col;

                if (!sb || !cols) {
                        r = sb ? analyzer_oom(a) : FAIL(a, "XX000", "malformed ORDER BY");
                        return r;
                }
                for (size_t k = 0; k < p->n_visible; k++)
                        cols[k].name = p->o.names[k];
                shown.cols = cols;
                shown.n = p->n_visible;
                r = sort_output(a, sb, &shown, p->n_visible, &col);
                for (size_t k = 0; r > 0 && k < p->o.n_reg; k++)
                        if (p->o.reg[k] == col)
                                r = FAIL(a, "0A000", "ORDER BY a regclass, regtype or "
                                         "regnamespace output is not supported");
                if (r < 0)
                        return r;
                p->sort_cols[i] = r ? (long)col : -1;
                if (r)
                        continue;
                r = analyze_expr(a, sb->node, &t);
                if (r >= 0)
                        r = coerce_unknown(a, &t, ROW_TYPE_TEXT);
                if (r < 0)
                        return r;
                p->sort_exprs[i] = TAKE_PTR(t.e);
        }
        a->agg = NULL;
        a->no_agg = NULL;
        return 0;
}

/* plan_select()'s subqueries of the list and HAVING when grouped: attached after the
 * groups, over p->reduced. */
static int select_late_subqueries(struct analyzer *a, struct select_plan *p)
{
        int r = 0;

        /* The list's and HAVING's subqueries, after the groups. */
        assert(p->reduced.n == a->late_base);
        for (size_t i = 0; i < p->gat.n; i++) {
                p->gat.v[i].first = a->late_base + (p->gat.v[i].first & ~LATE_MARK);
                if (p->gat.v[i].value)
                        late_unmark(p->gat.v[i].value, a->late_base);
        }
        for (size_t i = 0; r >= 0 && i < p->late.n; i++) {
                r = scope_add_col(a, &p->reduced, NULL, p->late.cols[i].name, p->late.cols[i].type,
                                  true, false);
                if (r >= 0)
                        p->reduced.cols[p->reduced.n - 1].hidden = true;
        }
        p->gat.scope = &p->reduced;
        p->gat.base_n = a->late_base;
        if (r >= 0)
                r = attach_apply(a, &p->gat, &p->plan);
        return r;
}

/* plan_select()'s grouping: Map (computed keys and arguments) -> Reduce -> Filter
 * (HAVING); the list, HAVING and ORDER BY rewritten over the Reduce's output (regroup()). */
static int select_reduce(struct analyzer *a, struct select_plan *p)
{
        _cleanup_free_ Coord__Plan__Expr **pre = calloc(p->nk + p->agg.n + 1, sizeof(*pre));
        _cleanup_free_ uint32_t *key_cols = calloc(p->nk + 1, sizeof(*key_cols));
        Coord__Plan__Relation *red;
        Coord__Plan__Reduce *rd;
        size_t n_pre = 0;
        int r;

        if (!pre || !key_cols) {
                r = analyzer_oom(a);
                return r;
        }
        a->late_base = (uint32_t)(p->nk + p->agg.n);
        for (size_t i = 0; i < p->o.n; i++) {
                r = regroup(a, &p->o.e[i], p->keys, p->nk, &p->from);
                if (r < 0)
                        return r;
        }
        /* Over its domain, a global subquery's value over no rows (adapter-sql-correlate.c
         * note 4). */
        if (p->sq && p->sq->global && p->sq->dom && p->sq->dom->on && p->o.n) {
                r = domain_default(p->o.e[0], p->nk, &p->agg, p->sq->outer, &p->sq->dflt);
                if (r < 0)
                        return analyzer_oom(a);
        }
        for (size_t i = 0; i < p->n_sort; i++) {
                r = p->sort_exprs[i] ? regroup(a, &p->sort_exprs[i], p->keys, p->nk, &p->from) : 0;
                if (r < 0)
                        return r;
        }
        if (p->having) {
                r = regroup(a, &p->having, p->keys, p->nk, &p->from);
                if (r < 0)
                        return r;
        }
        for (size_t k = 0; k < p->nk; k++) {
                bool nullable = true;

                if (p->keys[k]->kind_case == COORD__PLAN__EXPR__KIND_COLUMN) {
                        key_cols[k] = p->keys[k]->column;
                        nullable = p->from.cols[p->keys[k]->column].nullable;
                } else {
                        key_cols[k] = (uint32_t)(p->from.n + n_pre);
                        pre[n_pre++] = TAKE_PTR(p->keys[k]);
                }
                r = scope_add_col(a, &p->reduced, NULL, "?column?",
                                  p->keys[k] ? (int)p->keys[k]->type : (int)pre[n_pre - 1]->type,
                                  nullable, true);
                if (r < 0)
                        return r;
        }
        red = rel_of(COORD__PLAN__RELATION__KIND_REDUCE);
        if (!red)
                return analyzer_oom(a);
        rd = red->reduce;
        rd->aggregates = calloc(p->agg.n + 1, sizeof(*rd->aggregates));
        if (!rd->aggregates) {
                rel_free(red);
                r = analyzer_oom(a);
                return r;
        }
        for (size_t k = 0; k < p->agg.n; k++) {
                Coord__Plan__Aggregate *ag = malloc(sizeof(*ag));

                if (!ag) {
                        rel_free(red);
                        r = analyzer_oom(a);
                        return r;
                }
                coord__plan__aggregate__init(ag);
                ag->func = p->agg.funcs[k];
                ag->type = (Coord__Plan__Type)p->agg.types[k];
                if (p->agg.delims[k])
                        ag->delimiter = TAKE_PTR(p->agg.delims[k]);
                if (!p->agg.args[k])
                        ag->column = 0;
                else if (p->agg.args[k]->kind_case == COORD__PLAN__EXPR__KIND_COLUMN)
                        ag->column = p->agg.args[k]->column;
                else {
                        ag->column = (uint32_t)(p->from.n + n_pre);
                        pre[n_pre++] = TAKE_PTR(p->agg.args[k]);
                }
                rd->aggregates[rd->n_aggregates++] = ag;
                r = scope_add_col(a, &p->reduced, NULL, "?column?", p->agg.types[k],
                                  p->agg.funcs[k] != COORD__PLAN__AGG_FUNC__AGG_COUNT &&
                                          p->agg.funcs[k] != COORD__PLAN__AGG_FUNC__AGG_COUNT_STAR,
                                  true);
                if (r < 0) {
                        rel_free(red);
                        return r;
                }
        }
        if (n_pre) {
                p->plan = rel_map(TAKE_PTR(p->plan), TAKE_PTR(pre), n_pre);
                if (!p->plan) {
                        rel_free(red);
                        r = analyzer_oom(a);
                        return r;
                }
        }
        rd->input = TAKE_PTR(p->plan);
        rd->group_keys = TAKE_PTR(key_cols);
        rd->n_group_keys = p->nk;
        p->plan = red;
        if (p->gat.n) {
                r = select_late_subqueries(a, p);
                if (r < 0)
                        return r;
        }
        if (p->having) {
                p->plan = rel_filter(TAKE_PTR(p->plan), TAKE_PTR(p->having));
                if (!p->plan) {
                        r = analyzer_oom(a);
                        return r;
                }
        }
        p->src = &p->reduced;
        return 0;
}

/* plan_select()'s ORDER BY expressions: a shown column when equal to one, else a hidden one.
 * A bpchar key sorts by its text, which drops trailing spaces (adapter-sql-bpchar.c
 * invariant 3): a function of the shown value, so DISTINCT still holds. */
static int select_sort_columns(struct analyzer *a, struct select_plan *p)
{
        int r;

        for (size_t i = 0; i < p->n_sort; i++) {
                bool derived = false;

                if (!p->sort_exprs[i] && p->sort_cols[i] >= 0 &&
                    (int)p->o.e[p->sort_cols[i]]->type == ROW_TYPE_BPCHAR) {
                        p->sort_exprs[i] = expr_copy(p->o.e[p->sort_cols[i]]);
                        if (!p->sort_exprs[i])
                                return analyzer_oom(a);
                        p->sort_cols[i] = -1;
                }
                if (!p->sort_exprs[i])
                        continue;
                if ((int)p->sort_exprs[i]->type == ROW_TYPE_BPCHAR) {
                        Coord__Plan__Expr *e = TAKE_PTR(p->sort_exprs[i]);

                        for (size_t k = 0; k < p->n_visible && !derived; k++)
                                derived = expr_equal(e, p->o.e[k]);
                        p->sort_exprs[i] = expr_call(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CAST, &e, 1);
                        if (!p->sort_exprs[i])
                                return analyzer_oom(a);
                }
                for (size_t k = 0; k < p->n_visible && p->sort_cols[i] < 0; k++)
                        if (expr_equal(p->sort_exprs[i], p->o.e[k]))
                                p->sort_cols[i] = (long)k;
                if (p->sort_cols[i] >= 0)
                        continue;
                if (p->distinct && !derived) {
                        r = FAIL(a, "42P10", "for SELECT DISTINCT, ORDER BY expressions must "
                                 "appear in select list");
                        return r;
                }
                p->sort_cols[i] = (long)p->o.n;
                r = outputs_add(a, &p->o, TAKE_PTR(p->sort_exprs[i]), "?column?");
                if (r < 0)
                        return r;
        }
        return 0;
}

/* plan_select()'s outputs: Map the computed ones, then Project them into order (DISTINCT
 * after); their columns into ret_cols. */
static int select_outputs(struct analyzer *a, struct topk_spec *tk, struct scope *ret_cols,
                          struct select_plan *p)
{
        Coord__Plan__Type *types = NULL;
        size_t n_types = 0, n_map = 0;
        _cleanup_free_ Coord__Plan__Expr **map = calloc(p->o.n + 1, sizeof(*map));
        _cleanup_free_ uint32_t *outputs = calloc(p->o.n + 1, sizeof(*outputs));
        bool identity;
        size_t width;
        int r;

        if (!map || !outputs) {
                r = analyzer_oom(a);
                return r;
        }
        r = rel_types(p->plan, &types, &n_types);
        if (r < 0) {
                r = r == -ENOMEM ? analyzer_oom(a) : FAIL(a, "XX000", "cannot type a plan");
                return r;
        }
        free(types);
        width = n_types;
        identity = p->o.n == width;
        for (size_t i = 0; i < p->o.n; i++) {
                bool nullable = expr_nullable(p->o.e[i], p->src);

                /* A TopK's hidden sort columns go after it: not output. */
                r = tk && i >= p->n_visible ? 0
                                         : scope_add_col(a, ret_cols, NULL, p->o.names[i],
                                                         (int)p->o.e[i]->type, nullable, true);
                if (r < 0)
                        return r;
                if (!(tk && i >= p->n_visible))
                        ret_cols->cols[ret_cols->n - 1].unknown = p->o.unknown[i];
                if (p->o.e[i]->kind_case == COORD__PLAN__EXPR__KIND_COLUMN) {
                        outputs[i] = p->o.e[i]->column;
                } else {
                        outputs[i] = (uint32_t)(width + n_map);
                        map[n_map++] = expr_copy(p->o.e[i]);
                        if (!map[n_map - 1]) {
                                for (size_t k = 0; k < n_map - 1; k++)
                                        expr_free(map[k]);
                                r = analyzer_oom(a);
                                return r;
                        }
                }
                identity = identity && outputs[i] == i;
        }
        if (n_map) {
                p->plan = rel_map(TAKE_PTR(p->plan), TAKE_PTR(map), n_map);
                identity = false;
        }
        if (p->plan && !identity)
                p->plan = rel_project(TAKE_PTR(p->plan), TAKE_PTR(outputs), p->o.n);
        if (p->plan && p->distinct)
                p->plan = rel_distinct(TAKE_PTR(p->plan));
        if (!p->plan) {
                r = analyzer_oom(a);
                return r;
        }
        return 0;
}

/* plan_select()'s ORDER BY and LIMIT: a TopK for tk, the peek's order and limit. */
static int select_order_limit(struct analyzer *a, const PgQuery__SelectStmt *s,
                              Coord__Plan__Peek *peek, struct topk_spec *tk,
                              struct select_plan *p)
{
        int r;

        if (tk) {
                assert(!p->sq);    /* topk_limit() refuses LIMIT in subqueries in expressions */
                for (size_t i = 0; i < p->n_sort; i++) {
                        r = sort_key_add(a, &tk->order, &tk->n_order, (uint32_t)p->sort_cols[i],
                                         (int)p->o.e[p->sort_cols[i]]->type, s->sort_clause[i]->sort_by);
                        if (r < 0)
                                return r;
                }
                p->plan = rel_topk(TAKE_PTR(p->plan), tk);
                if (p->plan && p->o.n > p->n_visible)
                        p->plan = rel_project_range(TAKE_PTR(p->plan), 0, p->n_visible);
                if (!p->plan) {
                        r = analyzer_oom(a);
                        return r;
                }
        }
        if (peek) {
                for (size_t i = 0; i < p->n_sort; i++) {
                        r = peek_sort_key(a, peek, (uint32_t)p->sort_cols[i], (int)p->o.e[p->sort_cols[i]]->type,
                                          s->sort_clause[i]->sort_by);
                        if (r < 0)
                                return r;
                }
                if (p->o.n > p->n_visible)
                        peek->output_arity = (uint32_t)p->n_visible;
                r = peek_limit(a, s, peek);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A plain SELECT: FROM, WHERE, GROUP BY, HAVING, the list, DISTINCT; with a peek also
 * ORDER BY and LIMIT, with tk (LIMIT below the outermost SELECT) a TopK over the list and
 * the ORDER BY expressions that are not in it, which a Project then drops. */
static int plan_select(struct analyzer *a, const PgQuery__SelectStmt *s, Coord__Plan__Peek *peek,
                       struct topk_spec *tk, Coord__Plan__Relation **ret_plan, struct scope *ret_cols)
{
        _cleanup_(select_plan_done) struct select_plan p = {
                .n_sort = peek || tk ? s->n_sort_clause : 0,
                .distinct = s->n_distinct_clause > 0,
                .sq = a->sub,
        };
        int r;

        p.src = &p.from;
        a->sub = NULL;
        a->attach = NULL;
        if (s->n_window_clause)
                return FAIL(a, "0A000", "window functions are not supported");
        for (size_t i = 0; i < s->n_distinct_clause; i++)
                if (s->distinct_clause[i] && s->distinct_clause[i]->node_case != 0)
                        return FAIL(a, "0A000", "DISTINCT ON is not supported");

        r = select_from_where(a, s, &p);
        if (r < 0)
                return r;

        p.grouped = s->n_group_clause || s->having_clause || node_has_aggregate(s->having_clause);
        for (size_t i = 0; !p.grouped && i < s->n_target_list; i++)
                p.grouped = node_has_aggregate(s->target_list[i]);
        for (size_t i = 0; !p.grouped && i < p.n_sort; i++)
                p.grouped = node_has_aggregate(s->sort_clause[i]);
        if (p.sq && !p.sq->empty) {
                p.sq->global = p.grouped && !s->n_group_clause;
                p.sq->having = s->having_clause != NULL;
        }

        p.sort_cols = calloc(p.n_sort ? p.n_sort : 1, sizeof(*p.sort_cols));
        p.sort_exprs = calloc(p.n_sort ? p.n_sort : 1, sizeof(*p.sort_exprs));
        p.keys = calloc(s->n_group_clause + (p.sq ? p.sq->n : 0) + 1, sizeof(*p.keys));
        if (!p.sort_cols || !p.sort_exprs || !p.keys) {
                free(p.keys);
                return analyzer_oom(a);
        }

        r = select_group_keys(a, s, &p);
        if (r >= 0)
                r = select_list(a, s, peek, &p);
        if (r >= 0 && p.grouped)
                r = select_reduce(a, &p);
        if (r >= 0)
                r = select_sort_columns(a, &p);
        if (r >= 0)
                r = select_outputs(a, tk, ret_cols, &p);
        if (r >= 0)
                r = select_order_limit(a, s, peek, tk, &p);
        if (r >= 0) {
                *ret_plan = TAKE_PTR(p.plan);
                r = 0;
        }
        for (size_t i = 0; i < p.nk; i++)
                expr_free(p.keys[i]);
        free(p.keys);
        for (size_t i = 0; i < p.n_sort; i++)
                expr_free(p.sort_exprs[i]);
        a->agg = NULL;
        a->no_agg = NULL;
        a->attach = NULL;
        return r;
}

/* Any query expression: its plan and output columns (appended to ret_cols).  With a
 * peek (a SELECT's outermost query) also ORDER BY and LIMIT, which the peek applies.
 * Elsewhere (a view's query, a subquery in FROM, a UNION's arm) LIMIT/OFFSET with ORDER
 * BY is a TopK at the top of the query's plan (LIMIT without ORDER BY and LIMIT in a
 * subquery in an expression are refused: topk_limit()), and ORDER BY without them,
 * which cannot change a collection, is ignored. */
int plan_query(struct analyzer *a, const PgQuery__Node *n, Coord__Plan__Peek *peek,
                      Coord__Plan__Relation **ret_plan, struct scope *ret_cols)
{
        const PgQuery__SelectStmt *s;
        const struct scope *scope = a->scope;
        struct attach *attach = a->attach;
        struct agg_ctx *agg = a->agg;
        const char *no_agg = a->no_agg;
        bool in_agg = a->in_agg;
        _cleanup_(topk_spec_done) struct topk_spec tk = { 0 };
        const struct cte_level *ctes = a->ctes;
        struct cte_level level;
        int r;

        if (!n || n->node_case != PG_QUERY__NODE__NODE_SELECT_STMT)
                return FAIL(a, "0A000", "this query is not supported");
        s = n->select_stmt;
        if (a->depth >= ANALYZE_MAX_DEPTH)
                return FAIL(a, "54001", "query nesting exceeds %d levels", ANALYZE_MAX_DEPTH);
        if (s->into_clause)
                return FAIL(a, "0A000", "SELECT INTO is not supported");
        if (s->n_locking_clause)
                return FAIL(a, "0A000", "FOR UPDATE and FOR SHARE are not supported");
        if (!peek) {
                r = topk_limit(a, s, &tk);
                if (r < 0)
                        return r;
        }
        if (s->with_clause) {
                r = with_push(a, s->with_clause, &level);
                if (r < 0) {
                        a->ctes = ctes;
                        return r;
                }
        }
        a->depth++;
        a->agg = NULL;
        a->in_agg = false;
        a->no_agg = NULL;
        if (s->op != PG_QUERY__SET_OPERATION__SETOP_NONE || s->n_values_lists) {
                r = s->n_values_lists ? plan_values(a, s, ret_plan, ret_cols)
                                      : plan_setop(a, s, ret_plan, ret_cols);
                if (r >= 0 && peek)
                        r = peek_order_limit(a, s, ret_cols, peek);
                if (r >= 0 && tk.on)
                        r = union_order(a, s, ret_cols, &tk.order, &tk.n_order);
                if (r >= 0 && tk.on && !(*ret_plan = rel_topk(*ret_plan, &tk)))
                        r = analyzer_oom(a);
        } else {
                r = plan_select(a, s, peek, tk.on ? &tk : NULL, ret_plan, ret_cols);
        }
        a->depth--;
        a->ctes = ctes;
        a->scope = scope;
        a->attach = attach;
        a->sub = NULL;
        a->agg = agg;
        a->no_agg = no_agg;
        a->in_agg = in_agg;
        return r;
}
