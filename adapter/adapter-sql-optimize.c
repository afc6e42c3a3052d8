/* adapter-sql-optimize.c -- the optimizer, run on every plan, join order, and a plan's
 * finish: its physical inputs, its AS OF (adapter-sql-internal.h).
 *
 * NOTES ON THE DESIGN
 *
 * (1) The optimizer (optimize()) runs on every plan: see its section.
 */
#include "adapter-sql-internal.h"

#include <stdlib.h>
#include <string.h>

#include "row/row-expr.h"
#include "util.h"

/* ---- The optimizer (run on every plan).
 *
 * Bottom up: Filter predicates are split at AND and simplified (TRUE goes, FALSE or
 * NULL empties the Filter), Filters merge, a Filter over a Join pushes each predicate to
 * the side it reads and turns equalities across the sides into join keys (after
 * join_order() put the items of a cross Join in an order that has keys); empty
 * constants propagate through every operator (a Reduce without keys of nothing is its one
 * default row); Union drops empty inputs; identity Projects go, a Project of a Project is
 * one.  Constant expressions
 * were folded during analysis. ---- */

static bool literal_bool(const Coord__Plan__Expr *e, bool *value, bool *null)
{
        if (!is_literal(e))
                return false;
        *null = e->literal->value_case == COORD__PLAN__DATUM__VALUE_NULL_VALUE;
        *value = e->literal->value_case == COORD__PLAN__DATUM__VALUE_BOOL_VALUE &&
                 e->literal->bool_value;
        return *null || e->literal->value_case == COORD__PLAN__DATUM__VALUE_BOOL_VALUE;
}

/* AND/OR with constant arguments: x AND FALSE is FALSE, x AND TRUE is x (OR alike). */
static int simplify_bool(struct analyzer *a, Coord__Plan__Expr **pe)
{
        Coord__Plan__Expr *e = *pe;
        Coord__Plan__Call *c;
        bool is_and, v, null;
        size_t k = 0;

        if (e->kind_case != COORD__PLAN__EXPR__KIND_CALL)
                return 0;
        c = e->call;
        if (c->func != COORD__PLAN__FUNC__FUNC_AND && c->func != COORD__PLAN__FUNC__FUNC_OR)
                return 0;
        is_and = c->func == COORD__PLAN__FUNC__FUNC_AND;
        for (size_t i = 0; i < c->n_args; i++) {
                int r = simplify_bool(a, &c->args[i]);

                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < c->n_args; i++)
                if (literal_bool(c->args[i], &v, &null) && !null && v != is_and) {
                        /* The deciding constant (FALSE in AND, TRUE in OR) is the value. */
                        Coord__Plan__Expr *lit = c->args[i];

                        c->args[i] = c->args[--c->n_args];
                        expr_free(e);
                        *pe = lit;
                        return 0;
                }
        for (size_t i = 0; i < c->n_args; i++) {
                if (literal_bool(c->args[i], &v, &null) && !null) {
                        expr_free(c->args[i]);  /* the neutral constant */
                        continue;
                }
                c->args[k++] = c->args[i];
        }
        c->n_args = k;
        if (k == 1) {
                *pe = c->args[0];
                c->n_args = 0;
                expr_free(e);
        } else if (k == 0) {
                struct row_datum d = ROW_DATUM_BOOL(is_and);

                *pe = expr_literal(ROW_TYPE_BOOL, &d);
                expr_free(e);
                if (!*pe)
                        return analyzer_oom(a);
        }
        return 0;
}

/* The range of columns an expression reads; false when it reads none. */
bool expr_columns(const Coord__Plan__Expr *e, uint32_t *lo, uint32_t *hi)
{
        bool any = false;

        if (e->kind_case == COORD__PLAN__EXPR__KIND_COLUMN) {
                *lo = *lo < e->column ? *lo : e->column;
                *hi = *hi > e->column ? *hi : e->column;
                return true;
        }
        if (e->kind_case == COORD__PLAN__EXPR__KIND_CALL)
                for (size_t i = 0; i < e->call->n_args; i++)
                        any = expr_columns(e->call->args[i], lo, hi) || any;
        return any;
}

void expr_shift(Coord__Plan__Expr *e, uint32_t by)
{
        if (e->kind_case == COORD__PLAN__EXPR__KIND_COLUMN)
                e->column -= by;
        else if (e->kind_case == COORD__PLAN__EXPR__KIND_CALL)
                for (size_t i = 0; i < e->call->n_args; i++)
                        expr_shift(e->call->args[i], by);
}

/* A join key operand: a column, or an int4 column cast to int8. */
bool key_column(const Coord__Plan__Expr *e, uint32_t *ret)
{
        if (e->kind_case == COORD__PLAN__EXPR__KIND_CALL &&
            e->call->func == COORD__PLAN__FUNC__FUNC_CAST && e->call->n_args == 1 &&
            type_is_int((int)e->type) && type_is_int((int)e->call->args[0]->type))
                e = e->call->args[0];
        if (e->kind_case != COORD__PLAN__EXPR__KIND_COLUMN)
                return false;
        *ret = e->column;
        return true;
}

/* left.x = right.y: the pair of key columns. */
bool join_key(const Coord__Plan__Expr *e, uint32_t nl, uint32_t *lk, uint32_t *rk)
{
        uint32_t x, y;

        if (e->kind_case != COORD__PLAN__EXPR__KIND_CALL ||
            e->call->func != COORD__PLAN__FUNC__FUNC_EQ || e->call->n_args != 2 ||
            !key_column(e->call->args[0], &x) || !key_column(e->call->args[1], &y))
                return false;
        if (x < nl && y >= nl) {
                *lk = x;
                *rk = y - nl;
                return true;
        }
        if (y < nl && x >= nl) {
                *lk = y;
                *rk = x - nl;
                return true;
        }
        return false;
}

static int optimize(struct analyzer *a, Coord__Plan__Relation **pr);

static int push_u32(struct analyzer *a, uint32_t **arr, size_t *n, uint32_t v)
{
        uint32_t *p = realloc(*arr, (*n + 1) * sizeof(*p));

        if (!p)
                return analyzer_oom(a);
        p[(*n)++] = v;
        *arr = p;
        return 0;
}

static int opt_filter(struct analyzer *a, Coord__Plan__Relation **pr);

/* Wrap a join side in a Filter of preds (consumed) and optimize it. */
static int filter_side(struct analyzer *a, Coord__Plan__Relation **side, Coord__Plan__Expr **preds,
                       size_t n)
{
        if (!n) {
                free(preds);
                return 0;
        }
        *side = rel_filter_n(*side, preds, n);
        if (!*side)
                return analyzer_oom(a);
        return opt_filter(a, side);
}

/* Filter(Join): push predicates down, equalities into keys.  Takes the predicates. */
static int push_into_join(struct analyzer *a, Coord__Plan__Relation **pr, Coord__Plan__Expr **preds,
                          size_t n)
{
        Coord__Plan__Join *j = (*pr)->join;
        Coord__Plan__Type *lt = NULL;
        size_t nl = 0, n_left = 0, n_right = 0, n_rest = 0;
        Coord__Plan__Expr **left = calloc(n + 1, sizeof(*left));
        Coord__Plan__Expr **right = calloc(n + 1, sizeof(*right));
        Coord__Plan__Expr **rest = calloc(n + 1, sizeof(*rest));
        int r = rel_types(j->left, &lt, &nl);

        free(lt);
        if (r < 0 || !left || !right || !rest) {
                for (size_t i = 0; i < n; i++)
                        expr_free(preds[i]);
                free(preds);
                free(left);
                free(right);
                free(rest);
                return r == -EINVAL ? FAIL(a, "XX000", "cannot type a plan") : analyzer_oom(a);
        }
        for (size_t i = 0; i < n; i++) {
                Coord__Plan__Expr *p = preds[i];
                uint32_t lo = UINT32_MAX, hi = 0, lk, rk;

                if (!expr_columns(p, &lo, &hi)) {
                        rest[n_rest++] = p;
                } else if (hi < nl) {
                        left[n_left++] = p;
                } else if (lo >= nl) {
                        expr_shift(p, (uint32_t)nl);
                        right[n_right++] = p;
                } else if (join_key(p, (uint32_t)nl, &lk, &rk)) {
                        size_t nk = j->n_left_keys;

                        r = push_u32(a, &j->left_keys, &j->n_left_keys, lk);
                        if (r >= 0)
                                r = push_u32(a, &j->right_keys, &nk, rk);
                        j->n_right_keys = nk;
                        expr_free(p);
                        if (r < 0)
                                break;
                } else {
                        rest[n_rest++] = p;
                }
                preds[i] = NULL;
        }
        for (size_t i = 0; i < n; i++)
                expr_free(preds[i]);
        free(preds);
        if (r >= 0)
                r = filter_side(a, &j->left, TAKE_PTR(left), n_left);
        if (r >= 0)
                r = filter_side(a, &j->right, TAKE_PTR(right), n_right);
        if (r >= 0 && (rel_is_empty(j->left) || rel_is_empty(j->right)))
                r = rel_make_empty(a, pr);
        if (r < 0) {
                for (size_t i = 0; i < n_rest; i++)
                        expr_free(rest[i]);
                free(rest);
                free(left);
                free(right);
                return r;
        }
        free(left);
        free(right);
        if (!n_rest || rel_is_empty(*pr)) {
                for (size_t i = 0; i < n_rest; i++)
                        expr_free(rest[i]);
                free(rest);
                return 0;
        }
        *pr = rel_filter_n(*pr, rest, n_rest);
        return *pr ? 0 : analyzer_oom(a);
}

/* ---- Join order.  A FROM list is planned as a left-deep cross Join of its items in
 * the order written (plan_from()), and push_into_join() turns the equalities between the
 * sides of each Join into keys.  Written as j1, j3, j2 WHERE j1.b = j2.a AND j2.b = j3.a,
 * the lower Join (j1, j3) had no key: a cross product, 10^7 rows for 13 tables of 10
 * (issue 36).  So before the predicates go down, the items of a tree of keyless Joins
 * are put in an order where each joins the ones before it through an equality whenever
 * any remaining one can: greedily, the first item first, then always the first of the
 * remaining items that an equality connects to those taken, and the first remaining
 * one only when none is connected (a cross product nothing avoids).  An order that
 * already has this property is kept as it is, so plans written in a good order do not
 * change, and running this again on a part of the new tree (filter_side()) changes
 * nothing.  A Project over the new tree gives the columns back in the written order. */

/* Join order: the items of a tree of keyless Joins, in the written order. */
struct join_items {
        Coord__Plan__Relation **rel;
        uint32_t *first;        /* the item's first column in the written order */
        uint32_t *arity;
        size_t n;
};

static void join_items_done(struct join_items *ji)
{
        free(ji->rel);
        free(ji->first);
        free(ji->arity);
}

/* Count the items under r (a keyless Join tree; anything else is one item). */
static size_t join_count(const Coord__Plan__Relation *r)
{
        if (r->kind_case != COORD__PLAN__RELATION__KIND_JOIN || r->join->n_left_keys)
                return 1;
        return join_count(r->join->left) + join_count(r->join->right);
}

/* Fill ji with the items under r, borrowed (r still owns them). */
static int join_collect(const Coord__Plan__Relation *r, struct join_items *ji, uint32_t *col)
{
        Coord__Plan__Type *types = NULL;
        size_t n = 0;
        int rc;

        if (r->kind_case == COORD__PLAN__RELATION__KIND_JOIN && !r->join->n_left_keys) {
                rc = join_collect(r->join->left, ji, col);
                return rc < 0 ? rc : join_collect(r->join->right, ji, col);
        }
        rc = rel_types(r, &types, &n);
        free(types);
        if (rc < 0)
                return rc;
        ji->rel[ji->n] = (Coord__Plan__Relation *)r;
        ji->first[ji->n] = *col;
        ji->arity[ji->n++] = (uint32_t)n;
        *col += (uint32_t)n;
        return 0;
}

/* Free a keyless Join tree's nodes, not its items (join_collect()'s). */
static void join_free_shell(Coord__Plan__Relation *r)
{
        if (r->kind_case != COORD__PLAN__RELATION__KIND_JOIN || r->join->n_left_keys)
                return;
        join_free_shell(r->join->left);
        join_free_shell(r->join->right);
        r->join->left = r->join->right = NULL;
        rel_free(r);
}

static size_t join_item_of(const struct join_items *ji, uint32_t col)
{
        size_t i = 0;

        while (i + 1 < ji->n && col >= ji->first[i + 1])
                i++;
        return i;
}

/* Does pred equate a column of item x with one of an item in taken[]? */
static bool join_connects(const struct join_items *ji, const Coord__Plan__Expr *p, size_t x,
                          const bool *taken)
{
        uint32_t c0, c1;
        size_t i0, i1;

        if (p->kind_case != COORD__PLAN__EXPR__KIND_CALL ||
            p->call->func != COORD__PLAN__FUNC__FUNC_EQ || p->call->n_args != 2 ||
            !key_column(p->call->args[0], &c0) || !key_column(p->call->args[1], &c1))
                return false;
        i0 = join_item_of(ji, c0);
        i1 = join_item_of(ji, c1);
        return (i0 == x && taken[i1] && i1 != x) || (i1 == x && taken[i0] && i0 != x);
}

static void expr_remap(Coord__Plan__Expr *e, const uint32_t *to)
{
        if (e->kind_case == COORD__PLAN__EXPR__KIND_COLUMN)
                e->column = to[e->column];
        else if (e->kind_case == COORD__PLAN__EXPR__KIND_CALL)
                for (size_t i = 0; i < e->call->n_args; i++)
                        expr_remap(e->call->args[i], to);
}

/* *pr is a Join and preds (n, not consumed) the predicates over it.  Reorder its items
 * (above); then *pr is Project(new Join) and *ret_join points at the new Join, the
 * predicates rewritten for its columns.  Otherwise nothing changes and *ret_join = pr. */
static int join_order(struct analyzer *a, Coord__Plan__Relation **pr, Coord__Plan__Expr **preds,
                      size_t n, Coord__Plan__Relation ***ret_join)
{
        _cleanup_(join_items_done) struct join_items ji = { 0 };
        _cleanup_free_ size_t *order = NULL;
        _cleanup_free_ bool *taken = NULL;
        _cleanup_free_ uint32_t *to = NULL;
        uint32_t *outputs, cols = 0, at = 0;
        Coord__Plan__Relation *tree = NULL;
        size_t items = join_count(*pr);
        bool same = true;
        int rc;

        *ret_join = pr;
        if (items < 3)
                return 0;       /* two items: the keys find either side */
        ji.rel = calloc(items, sizeof(*ji.rel));
        ji.first = calloc(items, sizeof(*ji.first));
        ji.arity = calloc(items, sizeof(*ji.arity));
        order = calloc(items, sizeof(*order));
        taken = calloc(items, sizeof(*taken));
        if (!ji.rel || !ji.first || !ji.arity || !order || !taken)
                return analyzer_oom(a);
        rc = join_collect(*pr, &ji, &cols);
        if (rc < 0)
                return rc == -ENOMEM ? analyzer_oom(a) : FAIL(a, "XX000", "cannot type a plan");
        for (size_t k = 0; k < items; k++) {
                size_t pick = SIZE_MAX, first = SIZE_MAX;

                for (size_t x = 0; x < items && pick == SIZE_MAX; x++) {
                        if (taken[x])
                                continue;
                        if (first == SIZE_MAX)
                                first = x;
                        for (size_t i = 0; i < n && k > 0 && pick == SIZE_MAX; i++)
                                if (join_connects(&ji, preds[i], x, taken))
                                        pick = x;
                }
                order[k] = pick == SIZE_MAX ? first : pick;
                taken[order[k]] = true;
                same = same && order[k] == k;
        }
        if (same)
                return 0;
        to = malloc((cols ? cols : 1) * sizeof(*to));
        outputs = malloc((cols ? cols : 1) * sizeof(*outputs));
        if (!to || !outputs) {
                free(outputs);
                return analyzer_oom(a);
        }
        for (size_t k = 0; k < items; k++) {
                size_t x = order[k];

                for (uint32_t c = 0; c < ji.arity[x]; c++)
                        outputs[ji.first[x] + c] = to[ji.first[x] + c] = at++;
        }
        join_free_shell(*pr);
        for (size_t k = 0; k < items; k++) {
                Coord__Plan__Relation *item = TAKE_PTR(ji.rel[order[k]]);

                tree = tree ? rel_join(tree, item) : item;
                if (!tree) {
                        for (size_t x = 0; x < items; x++)
                                rel_free(ji.rel[x]);
                        free(outputs);
                        *pr = NULL;
                        return analyzer_oom(a);
                }
        }
        for (size_t i = 0; i < n; i++)
                expr_remap(preds[i], to);
        *pr = rel_project(tree, outputs, cols);
        if (!*pr)
                return analyzer_oom(a);
        *ret_join = &(*pr)->project->input;
        return 0;
}

/* The Filter's input is optimized already. */
static int opt_filter(struct analyzer *a, Coord__Plan__Relation **pr)
{
        Coord__Plan__Relation *r = *pr, *input;
        Coord__Plan__Filter *f = r->filter;
        Coord__Plan__Expr **preds = NULL;
        size_t n = 0;
        bool empty = false;
        int rc = 0;

        /* Merge Filter(Filter(x)): the inner predicates first. */
        while (f->input->kind_case == COORD__PLAN__RELATION__KIND_FILTER) {
                Coord__Plan__Relation *inner = f->input;
                Coord__Plan__Filter *g = inner->filter;
                Coord__Plan__Expr **all = realloc(g->predicates,
                                                  (g->n_predicates + f->n_predicates + 1) * sizeof(*all));

                if (!all)
                        return analyzer_oom(a);
                memcpy(all + g->n_predicates, f->predicates, f->n_predicates * sizeof(*all));
                g->predicates = all;
                g->n_predicates += f->n_predicates;
                free(f->predicates);
                f->predicates = NULL;
                f->n_predicates = 0;
                f->input = NULL;
                rel_free(r);
                *pr = r = inner;
                f = g;
        }
        /* Split conjunctions, drop TRUE, stop at FALSE/NULL. */
        for (size_t i = 0; i < f->n_predicates && rc >= 0; i++) {
                Coord__Plan__Expr *p = TAKE_PTR(f->predicates[i]);
                bool v, null;

                rc = simplify_bool(a, &p);
                if (rc < 0) {
                        expr_free(p);
                        break;
                }
                if (literal_bool(p, &v, &null)) {
                        empty = empty || null || !v;
                        expr_free(p);
                        continue;
                }
                /* Conjuncts go their own ways only over a join; elsewhere AND keeps
                 * its left-to-right evaluation. */
                if (p->kind_case == COORD__PLAN__EXPR__KIND_CALL &&
                    p->call->func == COORD__PLAN__FUNC__FUNC_AND &&
                    f->input->kind_case == COORD__PLAN__RELATION__KIND_JOIN) {
                        for (size_t k = 0; k < p->call->n_args && rc >= 0; k++)
                                rc = conj_add(a, &preds, &n, TAKE_PTR(p->call->args[k]));
                        expr_free(p);
                        continue;
                }
                rc = conj_add(a, &preds, &n, p);
        }
        free(f->predicates);
        f->predicates = NULL;
        f->n_predicates = 0;
        if (rc < 0 || empty || rel_is_empty(f->input) || !n) {
                for (size_t i = 0; i < n; i++)
                        expr_free(preds[i]);
                free(preds);
                if (rc < 0)
                        return rc;
                if (empty || rel_is_empty(f->input))
                        return rel_make_empty(a, pr);
                input = TAKE_PTR(f->input);
                rel_free(r);
                *pr = input;
                return 0;
        }
        if (f->input->kind_case == COORD__PLAN__RELATION__KIND_JOIN) {
                Coord__Plan__Relation **join;

                input = TAKE_PTR(f->input);
                rel_free(r);
                *pr = input;
                rc = join_order(a, pr, preds, n, &join);
                if (rc < 0) {
                        for (size_t i = 0; i < n; i++)
                                expr_free(preds[i]);
                        free(preds);
                        return rc;
                }
                rc = push_into_join(a, join, preds, n);
                /* Reordered: Project(nothing) is nothing, for the operators above. */
                if (rc >= 0 && join != pr && rel_is_empty(*join))
                        rc = rel_make_empty(a, pr);
                return rc;
        }
        f->predicates = preds;
        f->n_predicates = n;
        return 0;
}

/* The one row of a Reduce without keys over nothing: count 0, the rest NULL. */
static int reduce_default_row(struct analyzer *a, Coord__Plan__Relation **pr)
{
        const Coord__Plan__Reduce *rd = (*pr)->reduce;
        _cleanup_free_ struct row_datum *row = calloc(rd->n_aggregates + 1, sizeof(*row));
        Coord__Plan__Type *types = NULL;
        Coord__Plan__Update **rows = calloc(1, sizeof(*rows));
        Coord__Plan__Relation *c;
        size_t n = 0;
        int r = rel_types(*pr, &types, &n);

        if (r < 0 || !row || !rows) {
                free(types);
                free(rows);
                return analyzer_oom(a);
        }
        for (size_t i = 0; i < rd->n_aggregates; i++)
                row[i] = rd->aggregates[i]->func == COORD__PLAN__AGG_FUNC__AGG_COUNT ||
                                         rd->aggregates[i]->func == COORD__PLAN__AGG_FUNC__AGG_COUNT_STAR
                                 ? ROW_DATUM_INT(0)
                                 : ROW_DATUM_NULL;
        rows[0] = update_new(row, rd->n_aggregates);
        if (!rows[0]) {
                free(types);
                free(rows);
                return analyzer_oom(a);
        }
        c = rel_constant(types, n, rows, 1);
        if (!c)
                return analyzer_oom(a);
        rel_free(*pr);
        *pr = c;
        return 0;
}

static int optimize(struct analyzer *a, Coord__Plan__Relation **pr)
{
        Coord__Plan__Relation *r = *pr;
        int rc = 0;

        switch (r->kind_case) {
        case COORD__PLAN__RELATION__KIND_FILTER:
                rc = optimize(a, &r->filter->input);
                return rc < 0 ? rc : opt_filter(a, pr);
        case COORD__PLAN__RELATION__KIND_MAP:
                rc = optimize(a, &r->map->input);
                return rc < 0 || !rel_is_empty(r->map->input) ? rc : rel_make_empty(a, pr);
        case COORD__PLAN__RELATION__KIND_PROJECT: {
                Coord__Plan__Type *types = NULL;
                size_t n = 0;
                bool identity;

                rc = optimize(a, &r->project->input);
                if (rc < 0)
                        return rc;
                if (rel_is_empty(r->project->input))
                        return rel_make_empty(a, pr);
                /* Project(Project(x)) is one Project of x (join_order() adds one). */
                if (r->project->input->kind_case == COORD__PLAN__RELATION__KIND_PROJECT) {
                        Coord__Plan__Relation *inner = r->project->input;
                        Coord__Plan__Project *in = inner->project;

                        for (size_t i = 0; i < r->project->n_outputs; i++)
                                if (r->project->outputs[i] < in->n_outputs)
                                        r->project->outputs[i] = in->outputs[r->project->outputs[i]];
                        r->project->input = TAKE_PTR(in->input);
                        rel_free(inner);
                }
                rc = rel_types(r->project->input, &types, &n);
                free(types);
                if (rc < 0)
                        return analyzer_oom(a);
                identity = n == r->project->n_outputs;
                for (size_t i = 0; identity && i < n; i++)
                        identity = r->project->outputs[i] == i;
                if (identity) {
                        *pr = TAKE_PTR(r->project->input);
                        rel_free(r);
                }
                return 0;
        }
        case COORD__PLAN__RELATION__KIND_JOIN:
                rc = optimize(a, &r->join->left);
                if (rc >= 0)
                        rc = optimize(a, &r->join->right);
                if (rc >= 0 && (rel_is_empty(r->join->left) || rel_is_empty(r->join->right)))
                        rc = rel_make_empty(a, pr);
                return rc;
        case COORD__PLAN__RELATION__KIND_REDUCE:
                rc = optimize(a, &r->reduce->input);
                if (rc < 0 || !rel_is_empty(r->reduce->input))
                        return rc;
                return r->reduce->n_group_keys ? rel_make_empty(a, pr) : reduce_default_row(a, pr);
        case COORD__PLAN__RELATION__KIND_UNION: {
                Coord__Plan__Union *u = r->union_;
                size_t k = 0;

                for (size_t i = 0; i < u->n_inputs && rc >= 0; i++)
                        rc = optimize(a, &u->inputs[i]);
                if (rc < 0)
                        return rc;
                for (size_t i = 0; i < u->n_inputs; i++)
                        if (!rel_is_empty(u->inputs[i]) || (k == 0 && i + 1 == u->n_inputs))
                                u->inputs[k++] = u->inputs[i];
                        else
                                rel_free(u->inputs[i]);
                /* All empty: the last one stands for them. */
                u->n_inputs = k;
                if (k == 1) {
                        *pr = TAKE_PTR(u->inputs[0]);
                        u->n_inputs = 0;
                        rel_free(r);
                }
                return 0;
        }
        case COORD__PLAN__RELATION__KIND_DISTINCT:
                rc = optimize(a, &r->distinct->input);
                return rc < 0 || !rel_is_empty(r->distinct->input) ? rc : rel_make_empty(a, pr);
        case COORD__PLAN__RELATION__KIND_NEGATE:
                rc = optimize(a, &r->negate->input);
                return rc < 0 || !rel_is_empty(r->negate->input) ? rc : rel_make_empty(a, pr);
        case COORD__PLAN__RELATION__KIND_THRESHOLD:
                rc = optimize(a, &r->threshold->input);
                return rc < 0 || !rel_is_empty(r->threshold->input) ? rc : rel_make_empty(a, pr);
        case COORD__PLAN__RELATION__KIND_TOP_K:
                rc = optimize(a, &r->top_k->input);
                return rc < 0 || !rel_is_empty(r->top_k->input) ? rc : rel_make_empty(a, pr);
        default:
                return 0;
        }
}

/* Call fn for every Get of plan r, left to right; stop at fn's first negative result. */
static int each_get(Coord__Plan__Relation *r, int (*fn)(void *arg, Coord__Plan__Get *g), void *arg)
{
        int rc = 0;

        switch (r->kind_case) {
        case COORD__PLAN__RELATION__KIND_GET:
                return fn(arg, r->get);
        case COORD__PLAN__RELATION__KIND_FILTER:
                return each_get(r->filter->input, fn, arg);
        case COORD__PLAN__RELATION__KIND_MAP:
                return each_get(r->map->input, fn, arg);
        case COORD__PLAN__RELATION__KIND_PROJECT:
                return each_get(r->project->input, fn, arg);
        case COORD__PLAN__RELATION__KIND_JOIN:
                rc = each_get(r->join->left, fn, arg);
                return rc < 0 ? rc : each_get(r->join->right, fn, arg);
        case COORD__PLAN__RELATION__KIND_REDUCE:
                return each_get(r->reduce->input, fn, arg);
        case COORD__PLAN__RELATION__KIND_UNION:
                for (size_t i = 0; i < r->union_->n_inputs && rc >= 0; i++)
                        rc = each_get(r->union_->inputs[i], fn, arg);
                return rc;
        case COORD__PLAN__RELATION__KIND_DISTINCT:
                return each_get(r->distinct->input, fn, arg);
        case COORD__PLAN__RELATION__KIND_NEGATE:
                return each_get(r->negate->input, fn, arg);
        case COORD__PLAN__RELATION__KIND_THRESHOLD:
                return each_get(r->threshold->input, fn, arg);
        case COORD__PLAN__RELATION__KIND_TOP_K:
                return each_get(r->top_k->input, fn, arg);
        default:
                return 0;
        }
}

static int collect_get(void *arg, Coord__Plan__Get *g)
{
        struct analyzer *a = arg;

        return add_sorted(a, &a->stmt->physical_inputs, &a->stmt->n_physical_inputs, g->id);
}

/* ---- Which index a SELECT reads ----
 *
 * FROM reads an object that has indexes from its oldest one (a->peek); every index of an
 * object holds all its rows in the object's columns, so any of them gives the same
 * answer.  Once the plan is final, choose_indexes() moves each such read of an object
 * with more than one index (sql_relation.n_indexes, kept by the catalog) to the index
 * whose key the plan fixes (row_plan_key(): what the controller reads by key,
 * controller-server-lookup.c NOTE 23), the oldest one still when it does or none does. */

int note_index_read(struct analyzer *a, uint64_t object, uint64_t index)
{
        for (size_t i = 0; i < a->n_indexed; i++)
                if (a->indexed[2 * i] == object)
                        return 0;
        if (!(a->n_indexed & (a->n_indexed - 1))) {     /* 0, 1, 2, 4 ...: grow */
                uint64_t *v = realloc(a->indexed, 2 * sizeof(*v) * (a->n_indexed ? 2 * a->n_indexed : 1));

                if (!v)
                        return analyzer_oom(a);
                a->indexed = v;
        }
        a->indexed[2 * a->n_indexed] = object;
        a->indexed[2 * a->n_indexed + 1] = index;
        a->n_indexed++;
        return 0;
}

static int set_get_id(void *arg, Coord__Plan__Get *g)
{
        const uint64_t *from_to = arg;

        if (g->id == from_to[0])
                g->id = from_to[1];
        return 0;
}

struct index_choice {
        const Coord__Plan__Relation *plan;
        uint64_t read;                  /* the index the plan's Gets read now */
        uint64_t chosen;                /* 0 until one's key is fixed */
};

static int index_fixed(void *arg, const struct sql_object *o)
{
        struct index_choice *c = arg;
        _cleanup_free_ uint8_t *key = NULL;
        size_t len;
        int r;

        if (c->chosen || !o->n_keys)
                return 0;
        /* Gets of c->read, matched against o's key columns: the columns are the object's
         * whichever index is read. */
        r = row_plan_key(c->plan, c->read, o->keys, o->n_keys, &key, &len);
        if (r > 0)
                c->chosen = o->id;
        return r < 0 ? r : 0;
}

static int choose_indexes(struct analyzer *a, Coord__Plan__Relation *plan)
{
        for (size_t i = 0; i < a->n_indexed; i++) {
                struct index_choice c = { .plan = plan, .read = a->indexed[2 * i + 1] };
                int r = a->ops->indexes(a->userdata, a->indexed[2 * i], index_fixed, &c);

                if (r == -ENOMEM)
                        return analyzer_oom(a);
                if (r >= 0 && c.chosen && c.chosen != c.read)
                        (void)each_get(plan, set_get_id, (uint64_t[2]){ c.read, c.chosen });
        }
        return 0;
}

/* Optimize a statement's plan, choose the indexes a SELECT reads, and record its
 * physical inputs. */
int finish_plan(struct analyzer *a, Coord__Plan__Relation **plan)
{
        int r = optimize(a, plan);

        if (r >= 0 && a->peek && a->n_indexed && a->ops->indexes)
                r = choose_indexes(a, *plan);
        return r < 0 ? r : each_get(*plan, collect_get, a);
}

int analyze_as_of(struct analyzer *a, const struct as_of_clause *c, uint64_t *ret)
{
        const PgQuery__Node *val =
                c->tree->stmts[0]->stmt->select_stmt->target_list[0]->res_target->val;
        _cleanup_(typed_done) struct typed t = { .location = -1 };
        const struct scope *scope = a->scope;
        long base = a->loc_base;
        const Coord__Plan__Datum *lit;
        int r;

        /* The expression was parsed as AS_OF_PREFIX + expression (adapter-sql.c note 2); it sees no
         * columns and cannot use mz_now(), whose value it would define. */
        a->loc_base = (long)c->expr_begin - (long)strlen(AS_OF_PREFIX);
        a->scope = NULL;
        a->no_mz_now = "AS OF";
        a->strict_fold = true;
        r = analyze_expr(a, val, &t);
        if (r >= 0)
                r = coerce_unknown(a, &t, ROW_TYPE_INT8);
        if (r >= 0 && !type_is_int((int)t.e->type))
                r = FAIL_AT(a, t.location, "42804", "AS OF must be of type bigint, not type %s",
                            row_type_name((enum row_type)t.e->type));
        if (r >= 0 && !is_literal(t.e))
                r = FAIL_AT(a, t.location, "0A000", "AS OF must be a constant expression");
        if (r >= 0) {
                lit = t.e->literal;
                if (lit->value_case != COORD__PLAN__DATUM__VALUE_INT_VALUE || lit->int_value < 0)
                        r = FAIL_AT(a, t.location, "22023",
                                    "AS OF must be a non-negative timestamp");
                else
                        *ret = (uint64_t)lit->int_value;
        }
        a->loc_base = base;
        a->scope = scope;
        a->no_mz_now = NULL;
        a->strict_fold = false;
        return r;
}
