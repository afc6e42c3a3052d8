/* adapter-sql-subquery.c -- subqueries in expressions attached to the rows of their
 * query, and a WHERE's plan (adapter-sql-internal.h). */
#include "adapter-sql-internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- Subqueries ----
 *
 * A subquery in an expression (EXISTS, IN, = ANY, <> ALL, a scalar subquery) becomes
 * columns attached to the rows of the query it is in, planned from joins and reductions
 * and so maintained incrementally like any plan.  For each one:
 *
 *   T = the subquery's rows reduced to what the expression needs, keyed by the
 *       correlation keys (and, for IN, by its column): EXISTS a flag per key; a scalar
 *       subquery count(*) and max(value) per key; IN a flag per (keys, value), and
 *       count(*), count(value) per key
 *   A = every key of the outer rows with T's payload, NULL where T has none:
 *       Reduce(the keys with NULL payloads + the keys JOIN T, max of each payload column)
 *   the outer rows JOIN A on the keys, NULL-safe (coalesce and IS NULL as two keys),
 *   then a Map computing the expression's value from the payload, three-valued.
 *
 * A has one row per distinct key of the outer rows, so each outer row joins exactly one
 * row of A: no row is lost or repeated, and the plan holds the outer rows once more per
 * attachment (for its keys), never the copies of copies of a chain of left joins.
 * Without keys A is a Reduce without keys: one row, always.
 *
 * The keys of a correlated subquery are its equalities `inner = outer` that are
 * conjuncts of its WHERE (the equality path).  Where it refers to the query it is in
 * otherwise (`s.v > t.x`, an OR, its list), plan_correlated() plans it again over its
 * domain (adapter-sql-correlate.c): D's columns are then the keys, matched NULL to NULL
 * in T (attachment n_safe).  A reference two levels out, from a subquery in its FROM, or
 * where the rows give no domain is refused (0A000), never planned wrong.  An aggregate
 * without GROUP BY (`SELECT count(*) ... WHERE s.k = t.k`) has a row also for outer
 * rows with no inner rows: the subquery planned over no rows gives that value (attached
 * without keys); HAVING in such a subquery is refused, as that row would be wrong for
 * groups HAVING removes.  More than one row of a scalar subquery for an outer row is
 * error 21000 when evaluated (FUNC_SUBQUERY_TOO_MANY_ROWS in a CASE branch).  Subqueries
 * go where a->attach is set: a SELECT's WHERE, and the list of a SELECT without GROUP BY
 * or aggregates. */

static int analyze_sublink(struct analyzer *a, const PgQuery__SubLink *sl, struct typed *ret);

void subq_done(struct subq *q)
{
        for (size_t i = 0; i < q->n; i++) {
                expr_free(q->inner[i]);
                expr_free(q->outer[i]);
        }
        free(q->inner);
        free(q->outer);
        expr_free(q->dflt);
        *q = (struct subq){ 0 };
}

void attach_done(struct attach *ac)
{
        for (size_t i = 0; i < ac->n; i++) {
                struct attachment *x = &ac->v[i];

                rel_free(x->t);
                for (size_t k = 0; k < x->nk; k++)
                        expr_free(x->keys[k]);
                free(x->keys);
                free(x->ptypes);
                expr_free(x->value);
        }
        free(ac->v);
        free(ac->truth);
        ac->v = NULL;
        ac->truth = NULL;
        ac->n = ac->n_truth = 0;
}

/* Does e read a column of the enclosing query (OUTER_MARK)?  *inner: one of its own. */
static bool expr_outer(const Coord__Plan__Expr *e, bool *inner)
{
        bool any = false;

        if (e->kind_case == COORD__PLAN__EXPR__KIND_COLUMN) {
                if (e->column & OUTER_MARK)
                        return true;
                *inner = true;
                return false;
        }
        if (e->kind_case == COORD__PLAN__EXPR__KIND_CALL)
                for (size_t i = 0; i < e->call->n_args; i++)
                        any = expr_outer(e->call->args[i], inner) || any;
        return any;
}

static void expr_unmark(Coord__Plan__Expr *e)
{
        if (e->kind_case == COORD__PLAN__EXPR__KIND_COLUMN)
                e->column &= ~OUTER_MARK;
        else if (e->kind_case == COORD__PLAN__EXPR__KIND_CALL)
                for (size_t i = 0; i < e->call->n_args; i++)
                        expr_unmark(e->call->args[i]);
}

/* LATE_MARK | i -> base + i, in a grouped SELECT's attachment values. */
void late_unmark(Coord__Plan__Expr *e, uint32_t base)
{
        if (e->kind_case == COORD__PLAN__EXPR__KIND_COLUMN && (e->column & LATE_MARK))
                e->column = base + (e->column & ~LATE_MARK);
        else if (e->kind_case == COORD__PLAN__EXPR__KIND_CALL)
                for (size_t i = 0; i < e->call->n_args; i++)
                        late_unmark(e->call->args[i], base);
}

/* e's conjuncts (e consumed) appended to *v. */
static int conjuncts(struct analyzer *a, Coord__Plan__Expr *e, Coord__Plan__Expr ***v, size_t *n)
{
        int r = 0;

        if (e->kind_case != COORD__PLAN__EXPR__KIND_CALL || e->call->func != COORD__PLAN__FUNC__FUNC_AND)
                return conj_add(a, v, n, e);
        for (size_t i = 0; i < e->call->n_args && r >= 0; i++)
                r = conjuncts(a, TAKE_PTR(e->call->args[i]), v, n);
        for (size_t i = 0; i < e->call->n_args; i++)
                expr_free(e->call->args[i]);
        e->call->n_args = 0;
        expr_free(e);
        return r;
}

/* The SubLinks that are conjuncts of a WHERE, not under NOT or OR: their NULL is FALSE. */
int truth_sublinks(struct analyzer *a, const PgQuery__Node *n, struct attach *ac)
{
        const PgQuery__SubLink **v;

        if (!n)
                return 0;
        if (n->node_case == PG_QUERY__NODE__NODE_BOOL_EXPR &&
            n->bool_expr->boolop == PG_QUERY__BOOL_EXPR_TYPE__AND_EXPR) {
                for (size_t i = 0; i < n->bool_expr->n_args; i++) {
                        int r = truth_sublinks(a, n->bool_expr->args[i], ac);

                        if (r < 0)
                                return r;
                }
                return 0;
        }
        if (n->node_case != PG_QUERY__NODE__NODE_SUB_LINK)
                return 0;
        v = realloc(ac->truth, (ac->n_truth + 1) * sizeof(*v));
        if (!v)
                return analyzer_oom(a);
        ac->truth = v;
        ac->truth[ac->n_truth++] = n->sub_link;
        return 0;
}

static Coord__Plan__Relation *rel_join_keys(Coord__Plan__Relation *left, Coord__Plan__Relation *right,
                                            const uint32_t *lk, const uint32_t *rk, size_t n)
{
        Coord__Plan__Relation *j = rel_join(left, right);
        uint32_t *l = malloc((n ? n : 1) * sizeof(*l)), *r = malloc((n ? n : 1) * sizeof(*r));

        if (!j || !l || !r) {
                rel_free(j);
                free(l);
                free(r);
                return NULL;
        }
        memcpy(l, lk, n * sizeof(*l));
        memcpy(r, rk, n * sizeof(*r));
        j->join->left_keys = l;
        j->join->right_keys = r;
        j->join->n_left_keys = j->join->n_right_keys = n;
        return j;
}

/* Reduce(input, group keys [0, nk), aggregates func[i] of column col[i]); consumes input. */
Coord__Plan__Relation *rel_reduce(Coord__Plan__Relation *input, size_t nk,
                                  const Coord__Plan__AggFunc *func, const uint32_t *col,
                                  const Coord__Plan__Type *type, size_t na)
{
        Coord__Plan__Relation *r = input ? rel_of(COORD__PLAN__RELATION__KIND_REDUCE) : NULL;
        Coord__Plan__Reduce *rd;

        if (!r) {
                rel_free(input);
                return NULL;
        }
        rd = r->reduce;
        rd->input = input;
        rd->group_keys = malloc((nk ? nk : 1) * sizeof(*rd->group_keys));
        rd->aggregates = calloc(na ? na : 1, sizeof(*rd->aggregates));
        if (!rd->group_keys || !rd->aggregates) {
                rel_free(r);
                return NULL;
        }
        for (size_t i = 0; i < nk; i++)
                rd->group_keys[rd->n_group_keys++] = (uint32_t)i;
        for (size_t i = 0; i < na; i++) {
                Coord__Plan__Aggregate *ag = malloc(sizeof(*ag));

                if (!ag) {
                        rel_free(r);
                        return NULL;
                }
                coord__plan__aggregate__init(ag);
                ag->func = func[i];
                ag->column = col[i];
                ag->type = type[i];
                rd->aggregates[rd->n_aggregates++] = ag;
        }
        return r;
}

/* A literal standing for NULL in a NULL-safe join key: any value of the type (an
 * array's: the empty array's canonical text). */
static Coord__Plan__Expr *zero_of(int type)
{
        struct row_datum d = type == ROW_TYPE_TEXT    ? ROW_DATUM_TEXT("", 0)
                             : row_type_is_array(type) ? ROW_DATUM_TEXT("{}", 2)
                             : type == ROW_TYPE_BOOL  ? ROW_DATUM_BOOL(false)
                             : type == ROW_TYPE_NUMERIC ? row_numeric_make(0, 0)
                                                      : ROW_DATUM_INT(0);

        return expr_literal(type, &d);
}

/* Map(input, copies of keys[0..nk)) projected to those columns (width w before). */
static Coord__Plan__Relation *rel_keys(Coord__Plan__Relation *input, size_t w,
                                       Coord__Plan__Expr *const *keys, size_t nk)
{
        _cleanup_free_ uint32_t *out = malloc((nk ? nk : 1) * sizeof(*out));
        Coord__Plan__Expr **map = calloc(nk ? nk : 1, sizeof(*map));
        size_t n_map = 0;

        if (!out || !map) {
                free(map);
                rel_free(input);
                return NULL;
        }
        for (size_t i = 0; i < nk; i++) {
                if (key_column(keys[i], &out[i]))
                        continue;       /* a column, or an integer column cast (joins mix them) */
                out[i] = (uint32_t)(w + n_map);
                if (!(map[n_map++] = expr_copy(keys[i]))) {
                        for (size_t k = 0; k < n_map; k++)
                                expr_free(map[k]);
                        free(map);
                        rel_free(input);
                        return NULL;
                }
        }
        if (n_map)
                input = rel_map(input, map, n_map);
        else
                free(map);
        return input ? rel_project(input, TAKE_PTR(out), nk) : NULL;
}

/* rel with coalesce(c, zero) and c IS NULL for its columns [0, ns) of the types
 * of keys appended: equal in two rows iff the columns are equal or both NULL. */
static Coord__Plan__Relation *null_safe_cols(Coord__Plan__Relation *rel,
                                             Coord__Plan__Expr *const *keys, size_t ns)
{
        Coord__Plan__Expr **m = calloc(2 * ns, sizeof(*m));

        for (size_t i = 0; m && i < ns; i++) {
                int type = (int)keys[i]->type;
                Coord__Plan__Expr *c = expr_column(type, (uint32_t)i);

                m[2 * i] = expr_call2(type, COORD__PLAN__FUNC__FUNC_COALESCE,
                                      expr_column(type, (uint32_t)i), zero_of(type));
                m[2 * i + 1] = c ? expr_call(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_IS_NULL, &c, 1)
                                 : NULL;
                if (!m[2 * i] || !m[2 * i + 1]) {
                        for (size_t k = 0; k <= 2 * i + 1; k++)
                                expr_free(m[k]);
                        free(TAKE_PTR(m));
                }
        }
        if (!m) {
                rel_free(rel);
                return NULL;
        }
        return rel_map(rel, m, 2 * ns);
}

/* A: for every key of dom (width dw), T's payload or NULLs; T matches the first ns keys
 * NULL-safely (null_safe_cols()).  Consumes dom and t. */
static Coord__Plan__Relation *attach_total(Coord__Plan__Relation *dom, size_t dw,
                                           Coord__Plan__Expr *const *keys, size_t nk, size_t ns,
                                           Coord__Plan__Relation *t, const Coord__Plan__Type *pt,
                                           size_t np)
{
        _cleanup_free_ uint32_t *lk = malloc((nk + 2 * ns + 1) * sizeof(*lk));
        _cleanup_free_ uint32_t *rk = malloc((nk + 2 * ns + 1) * sizeof(*rk));
        size_t m = 0;
        _cleanup_free_ uint32_t *seq = malloc((nk ? nk : 1) * sizeof(*seq));
        _cleanup_free_ uint32_t *out = malloc((nk + np) * sizeof(*out));
        _cleanup_free_ uint32_t *cols = malloc((np ? np : 1) * sizeof(*cols));
        _cleanup_free_ Coord__Plan__AggFunc *funcs = malloc((np ? np : 1) * sizeof(*funcs));
        Coord__Plan__Relation *K = rel_keys(dom, dw, keys, nk), *M = NULL, *N = NULL, **parts = NULL;
        Coord__Plan__Expr **nulls = calloc(np ? np : 1, sizeof(*nulls));

        if (!seq || !out || !cols || !funcs || !K || !nulls || !lk || !rk)
                goto fail;
        for (size_t i = 0; i < nk; i++) {
                seq[i] = out[i] = (uint32_t)i;
                if (i >= ns) {
                        lk[m] = rk[m] = (uint32_t)i;
                        m++;
                        continue;
                }
                lk[m] = (uint32_t)(nk + 2 * i);
                rk[m++] = (uint32_t)(nk + np + 2 * i);
                lk[m] = (uint32_t)(nk + 2 * i + 1);
                rk[m++] = (uint32_t)(nk + np + 2 * i + 1);
        }
        for (size_t j = 0; j < np; j++) {
                out[nk + j] = (uint32_t)(2 * nk + 2 * ns + j);
                cols[j] = (uint32_t)(nk + j);
                funcs[j] = COORD__PLAN__AGG_FUNC__AGG_MAX;
                if (!(nulls[j] = expr_literal(pt[j], &ROW_DATUM_NULL)))
                        goto fail;
        }
        if (ns)
                M = rel_join_keys(null_safe_cols(rel_copy(K), keys, ns),
                                  null_safe_cols(TAKE_PTR(t), keys, ns), lk, rk, m);
        else
                M = rel_join_keys(rel_copy(K), TAKE_PTR(t), seq, seq, nk);
        M = M ? rel_project(M, TAKE_PTR(out), nk + np) : NULL;
        N = rel_map(TAKE_PTR(K), TAKE_PTR(nulls), np);
        parts = calloc(2, sizeof(*parts));
        if (!M || !N || !parts)
                goto fail;
        parts[0] = TAKE_PTR(N);
        parts[1] = TAKE_PTR(M);
        return rel_reduce(rel_union(TAKE_PTR(parts), 2), nk, funcs, cols, pt, np);
fail:
        for (size_t j = 0; nulls && j < np; j++)
                expr_free(nulls[j]);
        free(nulls);
        free(parts);
        rel_free(K);
        rel_free(M);
        rel_free(N);
        rel_free(t);
        return NULL;
}

/* plan (width w) JOIN A (nk keys, np payload) on keys NULL-safely, projected to plan's
 * columns then the payload.  Consumes plan and A. */
static Coord__Plan__Relation *attach_join(const struct scope *sc, Coord__Plan__Relation *plan,
                                          size_t w, Coord__Plan__Expr *const *keys, size_t nk,
                                          Coord__Plan__Relation *A, size_t np)
{
        _cleanup_free_ Coord__Plan__Expr **pm = calloc(2 * nk + 1, sizeof(*pm));
        _cleanup_free_ Coord__Plan__Expr **am = calloc(2 * nk + 1, sizeof(*am));
        _cleanup_free_ uint32_t *lk = malloc((2 * nk + 1) * sizeof(*lk));
        _cleanup_free_ uint32_t *rk = malloc((2 * nk + 1) * sizeof(*rk));
        _cleanup_free_ uint32_t *out = malloc((w + np + 1) * sizeof(*out));
        size_t m = 0, n_pm = 0, n_am = 0, pw = 0;

        if (!pm || !am || !lk || !rk || !out)
                goto fail;
        for (size_t i = 0; i < nk; i++) {
                const Coord__Plan__Expr *k = keys[i];
                int type = (int)k->type;
                Coord__Plan__Expr *x[2];
                uint32_t c;

                if (key_column(k, &c) && c < sc->n && !sc->cols[c].nullable) {
                        lk[m] = c;
                        rk[m++] = (uint32_t)i;
                        continue;
                }
                /* coalesce(k, zero) and k IS NULL: equal on both sides iff k is. */
                x[0] = expr_copy(k);
                x[1] = zero_of(type);
                lk[m] = (uint32_t)(w + n_pm);
                rk[m++] = (uint32_t)(nk + np + n_am);
                if (!x[0] || !x[1] ||
                    !(pm[n_pm++] = expr_call(type, COORD__PLAN__FUNC__FUNC_COALESCE, x, 2)))
                        goto fail;
                x[0] = expr_column(type, (uint32_t)i);
                x[1] = zero_of(type);
                if (!x[0] || !x[1] ||
                    !(am[n_am++] = expr_call(type, COORD__PLAN__FUNC__FUNC_COALESCE, x, 2)))
                        goto fail;
                lk[m] = (uint32_t)(w + n_pm);
                rk[m++] = (uint32_t)(nk + np + n_am);
                x[0] = expr_copy(k);
                if (!x[0] || !(pm[n_pm++] = expr_call(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_IS_NULL, x, 1)))
                        goto fail;
                x[0] = expr_column(type, (uint32_t)i);
                if (!x[0] || !(am[n_am++] = expr_call(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_IS_NULL, x, 1)))
                        goto fail;
        }
        if (n_pm) {
                Coord__Plan__Expr **p = malloc(n_pm * sizeof(*p)), **q = malloc(n_am * sizeof(*q));

                if (!p || !q) {
                        free(p);
                        free(q);
                        goto fail;
                }
                pw = n_pm;
                memcpy(p, pm, n_pm * sizeof(*p));
                memcpy(q, am, n_am * sizeof(*q));
                plan = rel_map(plan, p, n_pm);
                A = rel_map(A, q, n_am);
                n_pm = n_am = 0;
                if (!plan || !A)
                        goto fail;
        }
        for (size_t i = 0; i < w; i++)
                out[i] = (uint32_t)i;
        for (size_t j = 0; j < np; j++)
                out[w + j] = (uint32_t)(w + pw + nk + j);
        plan = rel_join_keys(TAKE_PTR(plan), TAKE_PTR(A), lk, rk, m);
        return plan ? rel_project(plan, TAKE_PTR(out), w + np) : NULL;
fail:
        for (size_t i = 0; pm && i < n_pm; i++)
                expr_free(pm[i]);
        for (size_t i = 0; am && i < n_am; i++)
                expr_free(am[i]);
        rel_free(plan);
        rel_free(A);
        return NULL;
}

/* Join the attachments to *pr (the scope's rows), in the order they were made. */
int attach_apply(struct analyzer *a, struct attach *ac, Coord__Plan__Relation **pr)
{
        /* The rows before any attachment: where keys come from when they can. */
        _cleanup_(rel_freep) Coord__Plan__Relation *base = rel_copy(*pr);

        if (!base)
                return analyzer_oom(a);
        for (size_t i = 0; i < ac->n; i++) {
                struct attachment *x = &ac->v[i];
                uint32_t lo = UINT32_MAX, hi = 0;
                bool from_base = true;

                if (x->nk == 0) {
                        *pr = rel_join(*pr, TAKE_PTR(x->t));
                } else {
                        Coord__Plan__Relation *dom, *A;
                        size_t dw;

                        for (size_t k = 0; k < x->nk; k++)
                                if (expr_columns(x->keys[k], &lo, &hi) && hi >= ac->base_n)
                                        from_base = false;
                        dom = rel_copy(from_base ? base : *pr);
                        dw = from_base ? ac->base_n : x->first;
                        A = attach_total(dom, dw, x->keys, x->nk, x->n_safe, TAKE_PTR(x->t),
                                         x->ptypes, x->np);
                        *pr = A ? attach_join(ac->scope, *pr, x->first, x->keys, x->nk, A, x->np) : NULL;
                        if (!A) {
                                rel_freep(pr);
                                return analyzer_oom(a);
                        }
                }
                if (*pr && x->value) {
                        Coord__Plan__Expr **v = malloc(sizeof(*v));

                        if (!v)
                                return analyzer_oom(a);
                        v[0] = TAKE_PTR(x->value);
                        *pr = rel_map(*pr, v, 1);
                }
                if (!*pr)
                        return analyzer_oom(a);
        }
        return 0;
}

/* Record an attachment: t (nk keys, then np payload of types pt), joined on keys (over
 * the scope, consumed).  Its payload becomes hidden columns; *first the first. */
static int attach_add(struct analyzer *a, struct attach *ac, Coord__Plan__Relation *t,
                      Coord__Plan__Expr **keys, size_t nk, const Coord__Plan__Type *pt, size_t np,
                      uint32_t *first)
{
        struct attachment *v = realloc(ac->v, (ac->n + 1) * sizeof(*v)), *x;
        int r = 0;

        if (v)
                ac->v = v;
        if (!v || !t) {
                rel_free(t);
                for (size_t k = 0; k < nk; k++)
                        expr_free(keys[k]);
                free(keys);
                return analyzer_oom(a);
        }
        x = &ac->v[ac->n++];
        assert(!ac->late || nk == 0);
        *x = (struct attachment){ .t = t, .keys = keys, .nk = nk, .np = np,
                                  .first = (uint32_t)ac->scope->n | (ac->late ? LATE_MARK : 0) };
        x->ptypes = malloc((np ? np : 1) * sizeof(*x->ptypes));
        if (!x->ptypes)
                return analyzer_oom(a);
        memcpy(x->ptypes, pt, np * sizeof(*pt));
        for (size_t j = 0; j < np && r >= 0; j++) {
                r = scope_add_col(a, ac->scope, NULL, "?column?", (int)pt[j], true, false);
                if (r >= 0)
                        ac->scope->cols[ac->scope->n - 1].hidden = true;
        }
        *first = x->first;
        return r;
}

/* The last attachment's value column: e (consumed) of type `type`, named name. */
static int attach_value(struct analyzer *a, struct attach *ac, Coord__Plan__Expr *e, const char *name,
                        struct typed *ret)
{
        struct attachment *x = &ac->v[ac->n - 1];
        int r;

        if (!e)
                return analyzer_oom(a);
        assert(!x->value);
        x->value = e;
        r = scope_add_col(a, ac->scope, NULL, name, (int)e->type, true, false);
        if (r < 0)
                return r;
        ac->scope->cols[ac->scope->n - 1].hidden = true;
        ret->e = expr_column((int)e->type, (uint32_t)(ac->scope->n - 1) | (ac->late ? LATE_MARK : 0));
        ret->unknown = false;
        return ret->e ? 0 : analyzer_oom(a);
}

/* Plan a subquery in the scope of ac (correlation: q, when plain; over its domain when
 * q->dom->on, adapter-sql-correlate.c). */
int plan_subquery(struct analyzer *a, const PgQuery__Node *sub, bool plain, struct subq *q,
                  Coord__Plan__Relation **ret, struct scope *out)
{
        struct outer o = { .scope = a->attach->late ? a->attach->outer : a->attach->scope,
                           .rows = a->attach->late ? NULL : a->attach->rows,
                           .rows_n = a->attach->base_n, .dom = plain ? q->dom : NULL,
                           .up = a->outer, .refuse = a->attach->late };
        struct outer *outer = a->outer;
        struct attach *attach = a->attach;
        struct subq *sq = a->sub;
        int r;

        bool no_limit = a->no_limit;

        a->outer = &o;
        a->attach = NULL;
        a->sub = plain ? q : NULL;
        a->no_limit = true;
        r = plan_query(a, sub, NULL, ret, out);
        a->no_limit = no_limit;
        a->outer = outer;
        a->attach = attach;
        a->sub = sq;
        if (r >= 0 && !plain)
                q->n_visible = out->n;
        return r;
}

static Coord__Plan__Expr *col_of(int type, uint32_t c)
{
        return expr_column(type, c);
}

static Coord__Plan__Expr *cmp_int8(Coord__Plan__Func f, uint32_t c, int64_t v)
{
        struct row_datum d = ROW_DATUM_INT(v);

        return expr_call2(ROW_TYPE_BOOL, f, col_of(ROW_TYPE_INT8, c), expr_literal(ROW_TYPE_INT8, &d));
}

static Coord__Plan__Expr *is_null_of(Coord__Plan__Func f, Coord__Plan__Expr *x)
{
        return x ? expr_call(ROW_TYPE_BOOL, f, &x, 1) : NULL;
}

static Coord__Plan__Expr *case3(int type, Coord__Plan__Expr **v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!v[i]) {
                        for (size_t k = 0; k < n; k++)
                                expr_free(v[k]);
                        return NULL;
                }
        return expr_call(type, COORD__PLAN__FUNC__FUNC_CASE, v, n);
}

/* Keys for an attachment: copies of the subquery's outer keys, then extra (consumed). */
static Coord__Plan__Expr **outer_keys(const struct subq *q, Coord__Plan__Expr *extra)
{
        Coord__Plan__Expr **k = calloc(q->n + 2, sizeof(*k));

        for (size_t i = 0; k && i < q->n; i++)
                if (!(k[i] = expr_copy(q->outer[i]))) {
                        for (size_t j = 0; j < i; j++)
                                expr_free(k[j]);
                        free(TAKE_PTR(k));
                }
        if (k && extra)
                k[q->n] = extra;
        else
                expr_free(extra);
        return k;
}

/* S's rows projected to [the keys (after nv columns), extra columns...], then a flag 1. */
static Coord__Plan__Relation *flagged_keys(Coord__Plan__Relation *S, const struct subq *q,
                                           const uint32_t *extra, size_t n_extra)
{
        static const struct row_datum one = ROW_DATUM_INT(1);
        Coord__Plan__Expr **m = malloc(sizeof(*m));
        uint32_t *out = malloc((q->n + n_extra + 1) * sizeof(*out));
        size_t w = q->n_visible + q->n;

        if (!m || !out || !(m[0] = expr_literal(ROW_TYPE_INT4, &one))) {
                free(m);
                free(out);
                rel_free(S);
                return NULL;
        }
        for (size_t i = 0; i < q->n; i++)
                out[i] = (uint32_t)(q->n_visible + i);
        for (size_t i = 0; i < n_extra; i++)
                out[q->n + i] = extra[i];
        out[q->n + n_extra] = (uint32_t)w;
        return rel_distinct(rel_project(rel_map(S, m, 1), out, q->n + n_extra + 1));
}

/* S grouped by its keys: count(*) and max or count of column 0. */
static Coord__Plan__Relation *keyed_counts(Coord__Plan__Relation *S, const struct subq *q,
                                           Coord__Plan__AggFunc second, int vtype)
{
        uint32_t *out = malloc((q->n + 1) * sizeof(*out));
        const Coord__Plan__AggFunc f[2] = { COORD__PLAN__AGG_FUNC__AGG_COUNT_STAR, second };
        const uint32_t c[2] = { 0, (uint32_t)q->n };
        const Coord__Plan__Type t[2] = {
                (Coord__Plan__Type)ROW_TYPE_INT8,
                (Coord__Plan__Type)(second == COORD__PLAN__AGG_FUNC__AGG_COUNT ? ROW_TYPE_INT8 : vtype)
        };

        if (!out) {
                rel_free(S);
                return NULL;
        }
        /* [keys..., column 0] then Reduce by the keys. */
        for (size_t i = 0; i < q->n; i++)
                out[i] = (uint32_t)(q->n_visible + i);
        out[q->n] = 0;
        return rel_reduce(rel_project(S, out, q->n + 1), q->n, f, c, t, 2);
}

/* ARRAY(subquery): S's rows grouped by the subquery's outer keys (q), array_agg of its
 * one column, attached; an outer row without inner rows gets '{}' (PostgreSQL's empty
 * array, not NULL).  The engine orders an array's elements ascending (proto/plan.proto
 * AGG_ARRAY_AGG), so the subquery may order by its column ascending and nothing else.
 * Consumes S. */
static int array_sublink(struct analyzer *a, const PgQuery__SubLink *sl, const struct subq *q,
                         Coord__Plan__Relation *S, const struct scope *out, int vtype,
                         struct typed *ret)
{
        const PgQuery__SelectStmt *ss = sl->subselect->node_case == PG_QUERY__NODE__NODE_SELECT_STMT
                                                ? sl->subselect->select_stmt : NULL;
        const Coord__Plan__AggFunc f = COORD__PLAN__AGG_FUNC__AGG_ARRAY_AGG;
        const Coord__Plan__Type atype = (Coord__Plan__Type)row_type_array_of((enum row_type)vtype);
        const struct row_datum empty = ROW_DATUM_TEXT("{}", 2);
        uint32_t *cols = malloc((q->n + 1) * sizeof(*cols)), first, c = (uint32_t)q->n;
        Coord__Plan__Relation *R;
        int r;

        if (!cols) {
                rel_free(S);
                return analyzer_oom(a);
        }
        for (size_t i = 0; i < q->n; i++)
                cols[i] = (uint32_t)(q->n_visible + i);
        cols[q->n] = 0;
        R = rel_reduce(rel_project(S, cols, q->n + 1), q->n, &f, &c, &atype, 1);
        if (!R)
                return analyzer_oom(a);
        if (!row_type_valid((int)atype))
                r = FAIL_AT(a, sl->location, "0A000", "ARRAY(subquery) of arrays (multidimensional "
                                                      "arrays) is not supported");
        else if (q->n && q->global)
                r = FAIL_AT(a, sl->location, "0A000", "a correlated ARRAY(subquery) with aggregates "
                                                      "is not supported");
        else if (ss && ss->n_sort_clause) {
                const PgQuery__SortBy *sb = ss->n_sort_clause == 1 &&
                                                            ss->sort_clause[0]->node_case == PG_QUERY__NODE__NODE_SORT_BY
                                                    ? ss->sort_clause[0]->sort_by : NULL;
                const PgQuery__Node *k = sb ? sb->node : NULL;
                bool first_col = k && k->node_case == PG_QUERY__NODE__NODE_A_CONST &&
                                 k->a_const->val_case == PG_QUERY__A__CONST__VAL_IVAL &&
                                 k->a_const->ival->ival == 1;
                bool named = k && k->node_case == PG_QUERY__NODE__NODE_COLUMN_REF &&
                             k->column_ref->n_fields &&
                             strcmp(node_string(k->column_ref->fields[k->column_ref->n_fields - 1]) ?: "",
                                    out->cols[0].name) == 0;

                r = 0;
                if (!sb || !(first_col || named) ||
                    sb->sortby_dir == PG_QUERY__SORT_BY_DIR__SORTBY_DESC ||
                    sb->sortby_dir == PG_QUERY__SORT_BY_DIR__SORTBY_USING ||
                    sb->sortby_nulls == PG_QUERY__SORT_BY_NULLS__SORTBY_NULLS_FIRST)
                        r = FAIL_AT(a, sl->location, "0A000", "ARRAY(subquery) ordered other than "
                                                              "by its column ascending is not supported");
        } else
                r = 0;
        if (r < 0) {
                rel_free(R);
                return r;
        }
        r = attach_add(a, a->attach, R, outer_keys(q, NULL), q->n, &atype, 1, &first);
        if (r < 0)
                return r;
        return attach_value(a, a->attach,
                            expr_call2((int)atype, COORD__PLAN__FUNC__FUNC_COALESCE, col_of((int)atype, first),
                                  expr_literal((int)atype, &empty)),
                            "array", ret);
}

/* Does rel have no rows whatever the data?  (A Constant without rows, and what is made
 * of one without adding rows.) */
bool rel_known_empty(const Coord__Plan__Relation *rel)
{
        switch (rel ? rel->kind_case : COORD__PLAN__RELATION__KIND__NOT_SET) {
        case COORD__PLAN__RELATION__KIND_CONSTANT:
                return rel->constant->n_rows == 0;
        case COORD__PLAN__RELATION__KIND_FILTER:
                return rel_known_empty(rel->filter->input);
        case COORD__PLAN__RELATION__KIND_MAP:
                return rel_known_empty(rel->map->input);
        case COORD__PLAN__RELATION__KIND_PROJECT:
                return rel_known_empty(rel->project->input);
        case COORD__PLAN__RELATION__KIND_JOIN:
                return rel_known_empty(rel->join->left) || rel_known_empty(rel->join->right);
        case COORD__PLAN__RELATION__KIND_UNION:
                for (size_t i = 0; i < rel->union_->n_inputs; i++)
                        if (!rel_known_empty(rel->union_->inputs[i]))
                                return false;
                return true;
        default:
                return false;
        }
}

/* A subquery attached to rows that are known to be none (struct attach, empty) is never
 * evaluated: when Coord cannot plan it (0A000: a correlation other than its keys, a
 * function in its FROM), it stands as NULL -- the statement's result, no rows, is the
 * same.  PostgreSQL's errors in it (42xxx & co.) are still reported. */
int moot_sublink(struct analyzer *a, const PgQuery__SubLink *sl, struct typed *ret)
{
        struct analyzer saved = *a;
        bool moot = a->attach && a->attach->empty;
        bool truth = sl->sub_link_type != PG_QUERY__SUB_LINK_TYPE__EXPR_SUBLINK &&
                     sl->sub_link_type != PG_QUERY__SUB_LINK_TYPE__ARRAY_SUBLINK;
        int r = analyze_sublink(a, sl, ret);

        if (r >= 0 || !moot || !a->err || strcmp(a->err->sqlstate, "0A000") != 0)
                return r;
        a->scope = saved.scope;
        a->attach = saved.attach;
        a->outer = saved.outer;
        a->sub = saved.sub;
        a->agg = saved.agg;
        a->no_agg = saved.no_agg;
        a->in_agg = saved.in_agg;
        a->no_limit = saved.no_limit;
        a->depth = saved.depth;
        a->late_base = saved.late_base;
        memset(a->err, 0, sizeof(*a->err));
        typed_done(ret);
        /* Its type is unknown (text when it is an output: the result has no rows). */
        if (sl->sub_link_type == PG_QUERY__SUB_LINK_TYPE__ARRAY_SUBLINK)
                return typed_literal(a, ROW_TYPE_TEXT_ARRAY, &ROW_DATUM_NULL, false, sl->location,
                                     ret);
        return typed_literal(a, truth ? ROW_TYPE_BOOL : ROW_TYPE_TEXT, &ROW_DATUM_NULL, !truth,
                             sl->location, ret);
}

/* The operators x op ANY/ALL (subquery) is planned for by the subquery's extremes
 * (any_all_sublink()); = ANY and <> ALL are IN and NOT IN. */
static bool extreme_op(const char *op)
{
        static const char *const ops[] = { "<", "<=", ">", ">=", "=", "<>" };

        for (size_t i = 0; i < ELEMENTSOF(ops); i++)
                if (strcmp(op, ops[i]) == 0)
                        return true;
        return false;
}

/* x op y for the typed x (copied) and the column y of type vtype, into *ret. */
static int compare_col(struct analyzer *a, const char *op, const struct typed *x, int vtype,
                       uint32_t col, int location, Coord__Plan__Expr **ret)
{
        struct typed l = { .e = expr_copy(x->e), .location = x->location },
                     rt = { .e = col_of(vtype, col), .location = -1 };
        int r = l.e && rt.e ? binary_op(a, op, &l, &rt, location) : analyzer_oom(a);

        typed_done(&rt);
        if (r < 0) {
                typed_done(&l);
                return r;
        }
        *ret = l.e;
        return 0;
}

/* x op ANY (S) and x op ALL (S) for op <, <=, >, >= (and = ALL, <> ANY), per outer row
 * of a correlated subquery: S's count(*), count(c), min(c) and max(c) by the subquery's
 * keys (an outer row with no inner rows finds them NULL: count 0), attached, then, with
 * PostgreSQL's three-valued answer (any S row's comparison true / all of them true):
 *   ALL: CASE WHEN coalesce(cnt, 0) = 0 THEN TRUE WHEN NOT P THEN FALSE
 *             WHEN cnt > cnn THEN NULL ELSE P END
 *   ANY: CASE WHEN coalesce(cnt, 0) = 0 THEN FALSE WHEN P THEN TRUE
 *             WHEN cnt > cnn THEN NULL ELSE P END
 * where P compares x with the extreme that decides: ALL x > S is x > max, ANY x > S is
 * x > min (and so on); = ALL is x = min AND x = max; <> ANY is x <> min OR x <> max.  P
 * is NULL when x is, so is the answer then (unless S is empty), as in PostgreSQL.
 * Consumes S. */
static int any_all_sublink(struct analyzer *a, const PgQuery__SubLink *sl, const char *op,
                           struct typed *x, const struct subq *q, Coord__Plan__Relation *S,
                           int vtype, struct typed *ret)
{
        const Coord__Plan__AggFunc f[4] = { COORD__PLAN__AGG_FUNC__AGG_COUNT_STAR,
                                            COORD__PLAN__AGG_FUNC__AGG_COUNT,
                                            COORD__PLAN__AGG_FUNC__AGG_MIN,
                                            COORD__PLAN__AGG_FUNC__AGG_MAX };
        const Coord__Plan__Type pt[4] = { (Coord__Plan__Type)ROW_TYPE_INT8,
                                          (Coord__Plan__Type)ROW_TYPE_INT8,
                                          (Coord__Plan__Type)vtype, (Coord__Plan__Type)vtype };
        const uint32_t c[4] = { (uint32_t)q->n, (uint32_t)q->n, (uint32_t)q->n, (uint32_t)q->n };
        const struct row_datum zero8 = ROW_DATUM_INT(0);
        bool all = sl->sub_link_type == PG_QUERY__SUB_LINK_TYPE__ALL_SUBLINK;
        bool lower = op[0] == '<' && op[1] != '>';         /* < or <= */
        uint32_t *out = malloc((q->n + 1) * sizeof(*out)), first;
        struct row_datum if_empty = ROW_DATUM_BOOL(all), decided = ROW_DATUM_BOOL(!all);
        Coord__Plan__Expr *P = NULL, *v[7];
        int r;

        if (!out) {
                rel_free(S);
                return analyzer_oom(a);
        }
        if (x->unknown) {
                r = coerce_unknown(a, x, vtype);
                if (r < 0) {
                        free(out);
                        rel_free(S);
                        return r;
                }
        }
        /* [keys..., column 0] reduced by the keys (as keyed_counts()). */
        for (size_t i = 0; i < q->n; i++)
                out[i] = (uint32_t)(q->n_visible + i);
        out[q->n] = 0;
        r = attach_add(a, a->attach, rel_reduce(rel_project(S, out, q->n + 1), q->n, f, c, pt, 4),
                       outer_keys(q, NULL), q->n, pt, 4, &first);
        if (r < 0)
                return r;
        if (strcmp(op, "=") == 0 || strcmp(op, "<>") == 0) {
                Coord__Plan__Expr *lo = NULL, *hi = NULL;

                r = compare_col(a, op, x, vtype, first + 2, sl->location, &lo);
                if (r >= 0)
                        r = compare_col(a, op, x, vtype, first + 3, sl->location, &hi);
                if (r < 0) {
                        expr_free(lo);
                        return r;
                }
                P = expr_call2(ROW_TYPE_BOOL, op[0] == '=' ? COORD__PLAN__FUNC__FUNC_AND
                                                           : COORD__PLAN__FUNC__FUNC_OR, lo, hi);
        } else {
                /* ALL x < S: x < min; ANY x < S: x < max; and the mirror for >. */
                r = compare_col(a, op, x, vtype, first + (lower == all ? 2 : 3), sl->location, &P);
                if (r < 0)
                        return r;
        }
        if (!P)
                return analyzer_oom(a);
        v[0] = expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_EQ,
                          expr_call2(ROW_TYPE_INT8, COORD__PLAN__FUNC__FUNC_COALESCE,
                                     col_of(ROW_TYPE_INT8, first), expr_literal(ROW_TYPE_INT8, &zero8)),
                          expr_literal(ROW_TYPE_INT8, &zero8));
        v[1] = expr_literal(ROW_TYPE_BOOL, &if_empty);
        v[2] = all ? is_null_of(COORD__PLAN__FUNC__FUNC_NOT, expr_copy(P)) : expr_copy(P);
        v[3] = expr_literal(ROW_TYPE_BOOL, &decided);
        v[4] = expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_GT, col_of(ROW_TYPE_INT8, first),
                          col_of(ROW_TYPE_INT8, first + 1));
        v[5] = expr_literal(ROW_TYPE_BOOL, &ROW_DATUM_NULL);
        v[6] = P;
        return attach_value(a, a->attach, case3(ROW_TYPE_BOOL, v, 7), "?column?", ret);
}

/* EXISTS (subquery): uncorrelated, count(*) > 0; correlated, a flag per key of S
 * (flagged_keys()), attached, and IS NOT NULL.  Consumes rel. */
static int exists_sublink(struct analyzer *a, const struct subq *q, Coord__Plan__Relation *rel,
                          struct typed *ret)
{
        static const Coord__Plan__Type I8 = (Coord__Plan__Type)ROW_TYPE_INT8;
        static const Coord__Plan__Type I4 = (Coord__Plan__Type)ROW_TYPE_INT4;
        _cleanup_(rel_freep) Coord__Plan__Relation *S = rel;
        struct attach *ac = a->attach;
        const Coord__Plan__AggFunc f = COORD__PLAN__AGG_FUNC__AGG_COUNT_STAR;
        const uint32_t c = 0;
        uint32_t first;
        int r;

        if (!q->n) {    /* count(*) > 0 */
                r = attach_add(a, ac, rel_reduce(TAKE_PTR(S), 0, &f, &c, &I8, 1), NULL, 0,
                               &I8, 1, &first);
                return r < 0 ? r : attach_value(a, ac, cmp_int8(COORD__PLAN__FUNC__FUNC_GT, first, 0),
                                                "exists", ret);
        }
        r = attach_add(a, ac, flagged_keys(TAKE_PTR(S), q, NULL, 0), outer_keys(q, NULL),
                       q->n, &I4, 1, &first);
        return r < 0 ? r : attach_value(a, ac, is_null_of(COORD__PLAN__FUNC__FUNC_IS_NOT_NULL,
                                                         col_of(ROW_TYPE_INT4, first)),
                                        "exists", ret);
}

/* A scalar subquery: S's count(*) and max(value) per key (keyed_counts()), attached;
 * more than one row is error 21000 when evaluated, and a correlated subquery with
 * aggregates and no GROUP BY gets the value of the subquery planned over no rows for
 * outer rows without inner rows.  out: the subquery's columns.  Consumes rel. */
static int expr_sublink(struct analyzer *a, const PgQuery__SubLink *sl, const struct subq *q,
                        Coord__Plan__Relation *rel, const struct scope *out, int vtype,
                        struct typed *ret)
{
        static const Coord__Plan__Type I8 = (Coord__Plan__Type)ROW_TYPE_INT8;
        _cleanup_(rel_freep) Coord__Plan__Relation *S = rel;
        struct attach *ac = a->attach;
        const PgQuery__Node *sub = sl->subselect;
        const Coord__Plan__Type pt[2] = { I8, (Coord__Plan__Type)vtype };
        Coord__Plan__Expr *v[5];
        uint32_t first, d_col = 0;
        size_t n = 0;
        int r;

        if (q->n && q->global && q->having)
                return FAIL_AT(a, sl->location, "0A000", "HAVING in a correlated "
                               "scalar subquery without GROUP BY is not supported");
        if (q->n && q->global && q->dom && q->dom->on) {
                /* Over the domain: the value over no rows, per outer row (domain_default()). */
                if (!q->dflt)
                        return FAIL_AT(a, sl->location, "0A000", "a correlated subquery with "
                                       "aggregates and without GROUP BY whose list reads a "
                                       "subquery's column is not supported");
        } else if (q->n && q->global) {
                /* The value for outer rows with no inner rows. */
                _cleanup_(scope_done) struct scope out0 = { 0 };
                _cleanup_(subq_done) struct subq q0 = { .empty = true, .dom = q->dom };
                Coord__Plan__Relation *S0 = NULL;
                const Coord__Plan__AggFunc f = COORD__PLAN__AGG_FUNC__AGG_MAX;
                const uint32_t c = 0;

                r = plan_subquery(a, sub, true, &q0, &S0, &out0);
                if (r >= 0)
                        r = attach_add(a, ac, rel_reduce(S0, 0, &f, &c, &pt[1], 1), NULL, 0,
                                       &pt[1], 1, &d_col);
                if (r < 0)
                        return r;
        }
        r = attach_add(a, ac, keyed_counts(TAKE_PTR(S), q, COORD__PLAN__AGG_FUNC__AGG_MAX, vtype),
                       outer_keys(q, NULL), q->n, pt, 2, &first);
        if (r < 0)
                return r;
        /* CASE [WHEN cnt IS NULL THEN default] WHEN cnt > 1 THEN 21000 ELSE max END */
        if (q->n && q->global) {
                v[n++] = is_null_of(COORD__PLAN__FUNC__FUNC_IS_NULL, col_of(ROW_TYPE_INT8, first));
                v[n++] = q->dom && q->dom->on ? expr_copy(q->dflt) : col_of(vtype, d_col);
        }
        v[n++] = cmp_int8(COORD__PLAN__FUNC__FUNC_GT, first, 1);
        v[n++] = expr_call(vtype, COORD__PLAN__FUNC__FUNC_SUBQUERY_TOO_MANY_ROWS, NULL, 0);
        v[n++] = col_of(vtype, first + 1);
        return attach_value(a, ac, case3(vtype, v, n), q->n_visible ? out->cols[0].name : "?column?",
                            ret);
}

/* x IN (subquery), x = ANY, NOT over x <> ALL: a flag per (keys, x) of S (flagged_keys()),
 * attached; where the answer is used as a truth (truth: a WHERE conjunct, not negated)
 * the flag is the answer, otherwise S's count(*) and count(value) per key too, for
 * PostgreSQL's three-valued answer.  Consumes rel. */
static int in_sublink(struct analyzer *a, const PgQuery__SubLink *sl, struct typed *x,
                      const struct subq *q, Coord__Plan__Relation *rel, int vtype, bool truth,
                      bool negate, struct typed *ret)
{
        static const Coord__Plan__Type I8 = (Coord__Plan__Type)ROW_TYPE_INT8;
        static const Coord__Plan__Type I4 = (Coord__Plan__Type)ROW_TYPE_INT4;
        _cleanup_(rel_freep) Coord__Plan__Relation *S = rel;
        struct attach *ac = a->attach;
        const Coord__Plan__Type pt[2] = { I8, I8 };
        const uint32_t zero = 0;
        Coord__Plan__Expr *v[7], *value;
        uint32_t flag, counts = 0;
        struct row_datum f = ROW_DATUM_BOOL(false), t = ROW_DATUM_BOOL(true);
        int r;

        if (x->unknown) {
                r = coerce_unknown(a, x, vtype);
                if (r < 0)
                        return r;
        }
        r = bpchar_in_sublink(a, x, &S, &vtype);
        if (r < 0)
                return r;
        if ((int)x->e->type != vtype && !(type_is_int((int)x->e->type) && type_is_int(vtype))) {
                struct typed y = { .e = col_of(vtype, 0), .location = -1 };

                r = y.e ? no_operator(a, "=", x, &y, sl->location) : analyzer_oom(a);
                typed_done(&y);
                return r;
        }
        if (!truth) {
                if (!q->n) {
                        const Coord__Plan__AggFunc fs[2] = { COORD__PLAN__AGG_FUNC__AGG_COUNT_STAR,
                                                             COORD__PLAN__AGG_FUNC__AGG_COUNT };
                        const uint32_t cs[2] = { 0, 0 };

                        r = attach_add(a, ac, rel_reduce(rel_copy(S), 0, fs, cs, pt, 2), NULL, 0, pt,
                                       2, &counts);
                } else {
                        r = attach_add(a, ac, keyed_counts(rel_copy(S), q, COORD__PLAN__AGG_FUNC__AGG_COUNT,
                                                           vtype),
                                       outer_keys(q, NULL), q->n, pt, 2, &counts);
                }
                if (r < 0)
                        return r;
        }
        r = attach_add(a, ac, flagged_keys(TAKE_PTR(S), q, &zero, 1), outer_keys(q, expr_copy(x->e)),
                       q->n + 1, &I4, 1, &flag);
        if (r < 0)
                return r;
        if (truth) {
                value = is_null_of(COORD__PLAN__FUNC__FUNC_IS_NOT_NULL, col_of(ROW_TYPE_INT4, flag));
        } else {
                /* CASE WHEN matched THEN TRUE WHEN coalesce(cnt, 0) = 0 THEN FALSE
                 *      WHEN x IS NULL OR cnt > cnn THEN NULL ELSE FALSE END */
                const struct row_datum zero8 = ROW_DATUM_INT(0);
                Coord__Plan__Expr *co = expr_call2(ROW_TYPE_INT8, COORD__PLAN__FUNC__FUNC_COALESCE,
                                                   col_of(ROW_TYPE_INT8, counts),
                                                   expr_literal(ROW_TYPE_INT8, &zero8));

                v[0] = is_null_of(COORD__PLAN__FUNC__FUNC_IS_NOT_NULL, col_of(ROW_TYPE_INT4, flag));
                v[1] = expr_literal(ROW_TYPE_BOOL, &t);
                v[2] = expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_EQ, co,
                                  expr_literal(ROW_TYPE_INT8, &zero8));
                v[3] = expr_literal(ROW_TYPE_BOOL, &f);
                v[4] = expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_OR,
                                  is_null_of(COORD__PLAN__FUNC__FUNC_IS_NULL, expr_copy(x->e)),
                                  expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_GT,
                                             col_of(ROW_TYPE_INT8, counts), col_of(ROW_TYPE_INT8, counts + 1)));
                v[5] = expr_literal(ROW_TYPE_BOOL, &ROW_DATUM_NULL);
                v[6] = expr_literal(ROW_TYPE_BOOL, &f);
                value = case3(ROW_TYPE_BOOL, v, 7);
        }
        if (negate && value)
                value = is_null_of(COORD__PLAN__FUNC__FUNC_NOT, value);
        return attach_value(a, ac, value, "?column?", ret);
}

/* EXISTS, IN, x op ANY/ALL over a correlated aggregate without GROUP BY (q->global),
 * which has one row for every outer row, its value over no rows where nothing correlates:
 * EXISTS is true, and x op ANY/ALL (IN: =) is x op that value, the scalar subquery
 * (expr_sublink()).  With HAVING it may have none: refused.  Consumes S. */
static int one_row_sublink(struct analyzer *a, const PgQuery__SubLink *sl, const char *op,
                           struct typed *x, const struct subq *q, Coord__Plan__Relation *S,
                           const struct scope *out, int vtype, struct typed *ret)
{
        _cleanup_(typed_done) struct typed v = { .location = -1 };
        int r;

        if (q->having || sl->sub_link_type == PG_QUERY__SUB_LINK_TYPE__EXISTS_SUBLINK) {
                rel_free(S);
                if (q->having)
                        return FAIL_AT(a, sl->location, "0A000", "HAVING in a correlated subquery "
                                       "with aggregates and without GROUP BY is not supported");
                return typed_literal(a, ROW_TYPE_BOOL, &ROW_DATUM_BOOL(true), false, sl->location,
                                     ret);
        }
        r = expr_sublink(a, sl, q, S, out, vtype, &v);
        if (r >= 0 && x->unknown)
                r = coerce_unknown(a, x, vtype);
        if (r < 0)
                return r;
        *ret = *x;
        *x = (struct typed){ .location = -1 };
        r = binary_op(a, op, ret, &v, sl->location);
        if (r < 0)
                typed_done(ret);
        return r;
}

static int sublink_planned(struct analyzer *a, const PgQuery__SubLink *sl, struct domain *dom,
                           struct typed *ret)
{
        struct attach *ac = a->attach;
        _cleanup_(typed_done) struct typed x = { .location = -1 };
        _cleanup_(scope_done) struct scope out = { 0 };
        _cleanup_(subq_done) struct subq q = { .dom = dom };
        _cleanup_(rel_freep) Coord__Plan__Relation *S = NULL;
        const PgQuery__Node *sub = sl->subselect;
        const char *op = sl->n_oper_name ? node_string(sl->oper_name[sl->n_oper_name - 1]) : "=";
        bool plain, truth = false, negate = false;
        int vtype, r;

        switch (sl->sub_link_type) {
        case PG_QUERY__SUB_LINK_TYPE__EXISTS_SUBLINK:
        case PG_QUERY__SUB_LINK_TYPE__EXPR_SUBLINK:
                break;
        case PG_QUERY__SUB_LINK_TYPE__ANY_SUBLINK:
                if (!op || (strcmp(op, "=") != 0 && !extreme_op(op)))
                        return FAIL_AT(a, sl->location, "0A000", "%s ANY (subquery) is not supported: "
                                       "only =, <>, <, <=, > and >=", op ? op : "this operator");
                break;
        case PG_QUERY__SUB_LINK_TYPE__ALL_SUBLINK:
                if (!op || (strcmp(op, "<>") != 0 && !extreme_op(op)))
                        return FAIL_AT(a, sl->location, "0A000", "%s ALL (subquery) is not supported: "
                                       "only =, <>, <, <=, > and >=", op ? op : "this operator");
                negate = strcmp(op, "<>") == 0;
                break;
        case PG_QUERY__SUB_LINK_TYPE__ARRAY_SUBLINK:
                break;
        default:
                return FAIL_AT(a, sl->location, "0A000", "this kind of subquery is not supported");
        }
        if (!ac)
                return FAIL_AT(a, sl->location, "0A000", "subqueries are supported only in a "
                               "SELECT's WHERE and in the list of a SELECT without GROUP BY or "
                               "aggregates");
        if (!sub)
                return FAIL(a, "XX000", "malformed subquery");
        for (size_t i = 0; i < ac->n_truth; i++)
                truth = truth || (ac->truth[i] == sl && !negate);
        if (sl->testexpr && ac->late)
                return FAIL_AT(a, sl->location, "0A000", "IN (subquery) in HAVING or in the list of "
                               "a grouped SELECT is not supported yet");
        if (sl->testexpr) {
                if (sl->testexpr->node_case == PG_QUERY__NODE__NODE_ROW_EXPR)
                        return FAIL_AT(a, sl->location, "0A000", "row comparisons with a subquery "
                                       "are not supported");
                r = analyze_expr(a, sl->testexpr, &x);
                if (r < 0)
                        return r;
                if (expr_outer(x.e, &(bool){ false }))
                        return FAIL_AT(a, sl->location, "0A000", "an IN subquery's left side may "
                                       "not refer to an enclosing query");
        }
        plain = sub->node_case == PG_QUERY__NODE__NODE_SELECT_STMT &&
                sub->select_stmt->op == PG_QUERY__SET_OPERATION__SETOP_NONE &&
                !sub->select_stmt->n_values_lists;
        r = plan_correlated(a, sub, plain, &q, &S, &out);
        if (r < 0)
                return r;
        vtype = q.n_visible ? out.cols[0].type : ROW_TYPE_BOOL;
        /* An array of bpchar has no type; x op ALL/ANY other than IN keeps bpchar. */
        if ((vtype == ROW_TYPE_BPCHAR || (x.e && typed_is_bpchar(&x))) &&
            (sl->sub_link_type == PG_QUERY__SUB_LINK_TYPE__ARRAY_SUBLINK ||
             ((sl->sub_link_type == PG_QUERY__SUB_LINK_TYPE__ANY_SUBLINK ||
               sl->sub_link_type == PG_QUERY__SUB_LINK_TYPE__ALL_SUBLINK) &&
              strcmp(op, sl->sub_link_type == PG_QUERY__SUB_LINK_TYPE__ANY_SUBLINK ? "=" : "<>"))))
                return bpchar_refuse(a, sl->location, "this subquery comparison");
        if (sl->sub_link_type != PG_QUERY__SUB_LINK_TYPE__EXISTS_SUBLINK && q.n_visible != 1)
                return FAIL_AT(a, sl->location, "42601", sl->testexpr ? "subquery has too many columns"
                               : "subquery must return only one column");

        if (sl->sub_link_type == PG_QUERY__SUB_LINK_TYPE__ARRAY_SUBLINK)
                return array_sublink(a, sl, &q, TAKE_PTR(S), &out, vtype, ret);
        if (q.n && q.global && sl->sub_link_type != PG_QUERY__SUB_LINK_TYPE__EXPR_SUBLINK)
                return one_row_sublink(a, sl, op, &x, &q, TAKE_PTR(S), &out, vtype, ret);

        if (sl->sub_link_type == PG_QUERY__SUB_LINK_TYPE__EXISTS_SUBLINK)
                return exists_sublink(a, &q, TAKE_PTR(S), ret);
        if (sl->sub_link_type == PG_QUERY__SUB_LINK_TYPE__EXPR_SUBLINK)
                return expr_sublink(a, sl, &q, TAKE_PTR(S), &out, vtype, ret);

        if ((sl->sub_link_type == PG_QUERY__SUB_LINK_TYPE__ANY_SUBLINK && strcmp(op, "=") != 0) ||
            (sl->sub_link_type == PG_QUERY__SUB_LINK_TYPE__ALL_SUBLINK && strcmp(op, "<>") != 0))
                return any_all_sublink(a, sl, op, &x, &q, TAKE_PTR(S), vtype, ret);

        /* x IN (subquery), x = ANY, NOT over x <> ALL. */
        return in_sublink(a, sl, &x, &q, TAKE_PTR(S), vtype, truth, negate, ret);
}

static int analyze_sublink(struct analyzer *a, const PgQuery__SubLink *sl, struct typed *ret)
{
        _cleanup_(domain_done) struct domain dom = { 0 };
        size_t n0 = a->attach ? a->attach->n : 0;
        int r = sublink_planned(a, sl, &dom, ret);

        /* Over the domain a NULL in D is a key like any other (adapter-sql-correlate.c
         * note 2); an IN's own value after D's columns is not. */
        for (size_t i = n0; r >= 0 && dom.on && i < a->attach->n; i++)
                a->attach->v[i].n_safe = a->attach->v[i].nk ? dom.n : 0;
        return r;
}

/* Is c an equality `inner = outer` (one side reads only the enclosing query, the other
 * only the subquery's FROM)?  *side: the outer side's argument. */
static bool key_equality(const Coord__Plan__Expr *c, size_t n_from, size_t *side)
{
        const Coord__Plan__Call *k = c->kind_case == COORD__PLAN__EXPR__KIND_CALL ? c->call : NULL;
        bool i0 = false, i1 = false, o0, o1;
        uint32_t lo = UINT32_MAX, hi = 0;

        if (!k || k->func != COORD__PLAN__FUNC__FUNC_EQ || k->n_args != 2)
                return false;
        o0 = expr_outer(k->args[0], &i0);
        o1 = expr_outer(k->args[1], &i1);
        if (o0 && !i0 && !o1)
                *side = 0;
        else if (o1 && !i1 && !o0)
                *side = 1;
        else
                return false;
        return !(expr_columns(k->args[1 - *side], &lo, &hi) && hi >= n_from);
}

/* A WHERE conjunct reading the enclosing query: a key `inner = outer` of sq (consumed). */
static int correlation(struct analyzer *a, Coord__Plan__Expr *c, struct subq *sq, size_t n_from)
{
        Coord__Plan__Call *k = c->call;
        Coord__Plan__Expr **in, **out;
        size_t side;

        if (!key_equality(c, n_from, &side))
                goto refuse;
        in = realloc(sq->inner, (sq->n + 1) * sizeof(*in));
        if (in)
                sq->inner = in;
        out = in ? realloc(sq->outer, (sq->n + 1) * sizeof(*out)) : NULL;
        if (out)
                sq->outer = out;
        if (!in || !out) {
                expr_free(c);
                return analyzer_oom(a);
        }
        sq->inner[sq->n] = TAKE_PTR(k->args[1 - side]);
        sq->outer[sq->n] = TAKE_PTR(k->args[side]);
        expr_unmark(sq->outer[sq->n++]);
        k->n_args = 0;
        expr_free(c);
        return 0;
refuse:
        expr_free(c);
        if (a->outer && a->outer->dom)
                a->outer->dom->wanted = true;   /* the domain path may take it */
        return FAIL(a, "0A000", "a subquery may refer to the query it is in only in equalities "
                    "(inner = outer) joined by AND in its WHERE");
}

/* e with each part equal to a key's outer side replaced by the key's inner side. */
static int subst_keys(Coord__Plan__Expr **e, const struct subq *sq)
{
        bool inner = false;
        Coord__Plan__Expr *c;

        if (!expr_outer(*e, &inner))
                return 0;
        c = expr_copy(*e);
        if (!c)
                return -ENOMEM;
        expr_unmark(c);
        for (size_t k = 0; k < sq->n; k++)
                if (expr_equal(c, sq->outer[k])) {
                        expr_free(c);
                        c = expr_copy(sq->inner[k]);
                        if (!c)
                                return -ENOMEM;
                        expr_free(*e);
                        *e = c;
                        return 0;
                }
        expr_free(c);
        if ((*e)->kind_case == COORD__PLAN__EXPR__KIND_CALL)
                for (size_t i = 0; i < (*e)->call->n_args; i++) {
                        int r = subst_keys(&(*e)->call->args[i], sq);

                        if (r < 0)
                                return r;
                }
        return 0;
}

/* A conjunct of a correlated subquery's WHERE reading the enclosing query that is not a
 * key.  Where the keys hold (a row of the subquery is for this outer row only if they
 * do), a key's outer side equals its inner side, so it may stand in for it: if that
 * leaves the conjunct reading only the subquery's rows, *c stays for the WHERE
 * (`c.oid = a.attcollation AND a.attcollation <> t.typcollation`).  One reading only the
 * enclosing query (`a.atthasdef`) becomes the key `true = it`: the outer rows where it is
 * not true see no rows.  Anything else is refused by correlation(). */
static int outer_conjunct(struct analyzer *a, Coord__Plan__Expr **c, struct subq *sq,
                          size_t n_from)
{
        bool inner = false;
        Coord__Plan__Expr *k;
        int r;

        (void)expr_outer(*c, &inner);
        if (!inner) {
                k = expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_EQ, bool_literal(true), TAKE_PTR(*c));
                return k ? correlation(a, k, sq, n_from) : analyzer_oom(a);
        }
        r = subst_keys(c, sq);
        if (r < 0)
                return analyzer_oom(a);
        inner = false;
        if (expr_outer(*c, &inner))
                return correlation(a, TAKE_PTR(*c), sq, n_from);
        return 0;
}

/* Filter *pr (n_from columns) by pred (consumed) with the WHERE's subqueries ac: the
 * conjuncts over the FROM first (the optimizer pushes them into its joins), then the
 * attachments, then the conjuncts reading them.  In a correlated subquery (sq) the
 * conjuncts reading the enclosing query become sq's keys. */
int plan_where(struct analyzer *a, Coord__Plan__Relation **pr, Coord__Plan__Expr *pred,
                      struct attach *ac, struct subq *sq, size_t n_from)
{
        Coord__Plan__Expr **v = NULL, **pre = NULL, **post = NULL;
        size_t n = 0, n_pre = 0, n_post = 0;
        int r = 0;

        if (!ac->n && !sq) {
                if (pred && !(*pr = rel_filter(*pr, pred)))
                        return analyzer_oom(a);
                return 0;
        }
        if (sq && sq->empty) {
                /* The subquery over no rows. */
                expr_free(pred);
                *pr = rel_filter(*pr, bool_literal(false));
                return *pr ? 0 : analyzer_oom(a);
        }
        if (pred)
                r = conjuncts(a, pred, &v, &n);
        pre = calloc(n + 1, sizeof(*pre));
        post = calloc(n + 1, sizeof(*post));
        if (r >= 0 && (!pre || !post))
                r = analyzer_oom(a);
        /* Keys first: the other conjuncts reading the enclosing query may use them. */
        for (size_t i = 0; r >= 0 && i < n; i++) {
                bool inner = false;
                size_t side;

                if (expr_outer(v[i], &inner) && key_equality(v[i], n_from, &side))
                        r = correlation(a, TAKE_PTR(v[i]), sq, n_from);
        }
        for (size_t i = 0; r >= 0 && i < n; i++) {
                bool inner = false;

                if (v[i] && expr_outer(v[i], &inner))
                        r = outer_conjunct(a, &v[i], sq, n_from);
        }
        for (size_t i = 0; i < n; i++) {
                Coord__Plan__Expr *c = TAKE_PTR(v[i]);
                uint32_t lo = UINT32_MAX, hi = 0;
                bool inner = false;

                if (r < 0 || !c) {
                        expr_free(c);
                } else if (expr_outer(c, &inner)) {
                        assert(sq);
                        r = correlation(a, c, sq, n_from);
                } else if (!expr_columns(c, &lo, &hi) || hi < n_from) {
                        pre[n_pre++] = c;
                } else {
                        post[n_post++] = c;
                }
        }
        free(v);
        if (r >= 0 && n_pre) {
                *pr = rel_filter_n(*pr, TAKE_PTR(pre), n_pre);
                n_pre = 0;
                r = *pr ? 0 : analyzer_oom(a);
        }
        if (r >= 0)
                r = attach_apply(a, ac, pr);
        if (r >= 0 && n_post) {
                *pr = rel_filter_n(*pr, TAKE_PTR(post), n_post);
                n_post = 0;
                r = *pr ? 0 : analyzer_oom(a);
        }
        for (size_t i = 0; i < n_pre; i++)
                expr_free(pre[i]);
        for (size_t i = 0; i < n_post; i++)
                expr_free(post[i]);
        free(pre);
        free(post);
        return r;
}
