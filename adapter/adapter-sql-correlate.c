/* adapter-sql-correlate.c -- a correlated subquery planned over its domain, where the
 * equality path of adapter-sql-subquery.c ("Subqueries") refuses its correlation. */
#include "adapter-sql-internal.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- The domain path ----
 *
 * A subquery whose references to the query it is in are not all equalities `inner =
 * outer` conjuncts of its WHERE (`s.v > t.x`, an OR, a reference in its list) is planned
 * over its domain D = Distinct(the rows it is attached to, projected onto the columns it
 * reads): its FROM becomes FROM x D, each reference reads D's column (domain_ref()), its
 * whole WHERE is a plain filter over that product (the optimizer makes an equi-join of
 * its equalities), and D's columns are its correlation keys `D.c = t.c` for the
 * equality path's machinery (T keyed by them, A total over the outer rows' keys).  So:
 *
 * (1) a row of the subquery for the domain value d is exactly a row of the subquery
 *     with the outer references bound to d, SQL's three values included: `s.v > NULL`
 *     is unknown, no row;
 * (2) T matches A's keys NULL to NULL on D's columns (attachment n_safe, attach_total()),
 *     as a NULL in D is a value the subquery was evaluated with, not a missing key;
 * (3) the equality path is tried first and the domain path only where it refused a
 *     reference (domain.wanted): the equality path has no product;
 * (4) an aggregate without GROUP BY still gets its value over no rows for outer rows
 *     without inner rows (expr_sublink()): its list with each aggregate replaced by its
 *     value over no rows and each D column by the outer column it stands for
 *     (domain_default(), from select_reduce()); a list reading anything else there (a
 *     subquery's column) is refused (0A000), not planned wrong.
 *
 * plan_correlated() plans again while references to columns outside D are met (at most
 * once per column of the enclosing scope).  Only the columns the rows hold before their
 * attachments may be read (a WHERE's or a list's rows: attach.rows); a reference from a
 * subquery in the subquery's FROM (LATERAL in effect) stays refused (domain_ref()). */

void domain_done(struct domain *d)
{
        free(d->cols);
        *d = (struct domain){ 0 };
}

/* A reference to column col of the enclosing scope of o (level 1), recorded in its
 * domain.  Over D: its column there, returning 1; otherwise 0 (the equality path goes on). */
int domain_ref(struct analyzer *a, const struct outer *o, size_t col, const char *name,
               int location, struct typed *ret)
{
        struct domain *d = o->dom;
        size_t k = 0;

        while (k < d->n && d->cols[k] != col)
                k++;
        if (k == d->n) {
                uint32_t *v = realloc(d->cols, (d->n + 1) * sizeof(*v));

                if (!v)
                        return analyzer_oom(a);
                d->cols = v;
                d->cols[d->n++] = (uint32_t)col;
                d->grew = d->on;
        }
        if (!d->on) {
                d->wanted = d->wanted || !o->collect;
                return 0;
        }
        if (!d->scope || a->scope != d->scope)
                return FAIL_AT(a, location, "0A000", "a subquery in the FROM of a subquery may "
                               "not refer to column \"%s\" of an enclosing query (LATERAL): not "
                               "supported", name);
        if (d->grew)
                return FAIL_AT(a, location, "0A000", "column \"%s\" of the enclosing query is "
                               "not in the subquery's domain", name);
        ret->e = expr_column(o->scope->cols[col].type, d->base + (uint32_t)k);
        if (!ret->e)
                return analyzer_oom(a);
        ret->unknown = false;
        ret->location = location;
        return 1;
}

/* The subquery's FROM (*plan, columns from) joined with its domain D, whose columns
 * follow as hidden ones; unless sq is planned over no rows, they are sq's keys. */
int domain_join(struct analyzer *a, const struct outer *o, struct subq *sq, struct scope *from,
                Coord__Plan__Relation **plan)
{
        struct domain *d = o->dom;
        uint32_t *cols = malloc((d->n ? d->n : 1) * sizeof(*cols));
        Coord__Plan__Relation *D;
        int r = 0;

        if (!cols)
                return analyzer_oom(a);
        for (size_t k = 0; k < d->n; k++) {
                if (!o->rows || d->cols[k] >= o->rows_n) {
                        free(cols);
                        return FAIL(a, "0A000", "a subquery may refer to column \"%s\" of the "
                                    "query it is in only in equalities (inner = outer) joined by "
                                    "AND in its WHERE", o->scope->cols[d->cols[k]].name);
                }
                cols[k] = d->cols[k];
        }
        D = rel_distinct(rel_project(rel_copy(o->rows), cols, d->n));
        *plan = D ? rel_join(*plan, D) : NULL;
        if (!*plan)
                return analyzer_oom(a);
        d->base = (uint32_t)from->n;
        d->scope = from;
        for (size_t k = 0; k < d->n && r >= 0; k++) {
                const struct scope_col *c = &o->scope->cols[d->cols[k]];

                r = scope_add_col(a, from, NULL, "?column?", c->type, c->nullable, false);
                if (r >= 0)
                        from->cols[from->n - 1].hidden = true;
        }
        if (r < 0 || sq->empty)
                return r;
        sq->inner = calloc(d->n, sizeof(*sq->inner));
        sq->outer = calloc(d->n, sizeof(*sq->outer));
        if (!sq->inner || !sq->outer)
                return analyzer_oom(a);
        for (; sq->n < d->n; sq->n++) {
                int type = o->scope->cols[d->cols[sq->n]].type;

                sq->inner[sq->n] = expr_column(type, d->base + (uint32_t)sq->n);
                sq->outer[sq->n] = expr_column(type, d->cols[sq->n]);
                if (!sq->inner[sq->n] || !sq->outer[sq->n]) {
                        sq->n++;
                        return analyzer_oom(a);
                }
        }
        return 0;
}

/* Replace, in *pe, key column i (< nk) by a copy of outer[i] and aggregate column nk + k
 * by agg k's value over no rows (count: 0, the others NULL).  -ENOENT: another column. */
static int default_subst(Coord__Plan__Expr **pe, size_t nk, const struct agg_ctx *agg,
                         Coord__Plan__Expr *const *outer)
{
        Coord__Plan__Expr *e = *pe, *n;
        size_t c;

        if (e->kind_case == COORD__PLAN__EXPR__KIND_CALL) {
                for (size_t i = 0; i < e->call->n_args; i++) {
                        int r = default_subst(&e->call->args[i], nk, agg, outer);

                        if (r < 0)
                                return r;
                }
                return 0;
        }
        if (e->kind_case != COORD__PLAN__EXPR__KIND_COLUMN)
                return 0;
        c = e->column;
        if (c < nk) {
                n = expr_copy(outer[c]);
        } else if (c - nk < agg->n) {
                Coord__Plan__AggFunc f = agg->funcs[c - nk];
                bool count = f == COORD__PLAN__AGG_FUNC__AGG_COUNT ||
                             f == COORD__PLAN__AGG_FUNC__AGG_COUNT_STAR;

                n = expr_literal(agg->types[c - nk], count ? &ROW_DATUM_INT(0) : &ROW_DATUM_NULL);
        } else {
                return -ENOENT;
        }
        if (!n)
                return -ENOMEM;
        expr_free(e);
        *pe = n;
        return 0;
}

/* The value over no rows of e, an output of a global Reduce (nk keys, D's, then agg's
 * aggregates), for the outer row whose D values are outer[0..nk): note 4.  *ret NULL:
 * e reads another column. */
int domain_default(const Coord__Plan__Expr *e, size_t nk, const struct agg_ctx *agg,
                   Coord__Plan__Expr *const *outer, Coord__Plan__Expr **ret)
{
        Coord__Plan__Expr *d = expr_copy(e);
        int r = d ? default_subst(&d, nk, agg, outer) : -ENOMEM;

        if (r < 0) {
                expr_free(d);
                d = NULL;
        }
        *ret = d;
        return r == -ENOENT ? 0 : r;
}

/* Plan a subquery in the scope of a->attach: by the equality path, else (when that
 * refused a reference and the rows allow it) over its domain q->dom.  Note 3. */
int plan_correlated(struct analyzer *a, const PgQuery__Node *sub, bool plain, struct subq *q,
                    Coord__Plan__Relation **ret, struct scope *out)
{
        struct domain *d = q->dom;
        int r;

        for (;;) {
                bool again;

                r = plan_subquery(a, sub, plain, q, ret, out);
                if (r >= 0 || !plain || !d)
                        return r;
                again = d->on ? d->grew
                              : d->wanted && a->attach->rows && !a->attach->late;
                if (!again || strcmp(a->err->sqlstate, "0A000") != 0)
                        return r;
                subq_done(q);
                q->dom = d;
                scope_done(out);
                *out = (struct scope){ 0 };
                rel_freep(ret);
                memset(a->err, 0, sizeof(*a->err));
                d->on = true;
                d->grew = false;
        }
}
