/* adapter-sql-bpchar.c -- character(n): its type name, padding, and the conversions that
 * give it PostgreSQL's blank-insensitive comparisons.
 *
 * A bpchar value is the padded text (common/row/row.h, "bpchar").  The analyzer keeps
 * these invariants, which make byte comparison right wherever rows are keyed:
 *   1. Every bpchar value comes from a character(n) column or a cast to character(n)
 *      (FUNC_BPCHAR), so the values of one plan column are all padded to one n.  What
 *      would mix values of different n in one column (bpchar without a length, CASE,
 *      COALESCE, VALUES rows, UNION, JOIN USING, arrays) is refused (bpchar_refuse()).
 *   2. Comparisons cast each bpchar operand to text, which drops trailing spaces
 *      (binary_op(), common_type()), so the evaluator only ever compares text: joins,
 *      IN and correlated subqueries key on the trimmed text.
 *   3. Bytes order ' ' after control characters, PostgreSQL orders the trimmed values:
 *      ORDER BY sorts by the text (a hidden column, select_sort_columns()); a sort key
 *      that is an output column of a UNION or VALUES, min() and max() are refused.
 */
#include "adapter-sql-internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* PostgreSQL's largest character(n). */
#define BPCHAR_MAX_LENGTH 10485760u

/* bpchar (n): char(n), character(n), and char/character (the grammar writes 1). */
int resolve_bpchar(struct analyzer *a, const PgQuery__TypeName *tn, bool array,
                   uint32_t *max_chars)
{
        const PgQuery__Node *m = tn->n_typmods == 1 ? tn->typmods[0] : NULL;
        int64_t n;

        *max_chars = 0;
        if (array)
                return FAIL_AT(a, tn->location, "0A000", "arrays of character(n) are not supported");
        if (!tn->n_typmods)
                return FAIL_AT(a, tn->location, "0A000",
                               "type bpchar without a length is not supported");
        if (!m || m->node_case != PG_QUERY__NODE__NODE_A_CONST ||
            m->a_const->val_case != PG_QUERY__A__CONST__VAL_IVAL)
                return FAIL_AT(a, tn->location, "42601", "invalid type modifier");
        n = m->a_const->ival->ival;
        if (n < 1)
                return FAIL_AT(a, tn->location, "22023", "length for type char must be at least 1");
        if (n > BPCHAR_MAX_LENGTH)
                return FAIL_AT(a, tn->location, "22023", "length for type char cannot exceed %u",
                               BPCHAR_MAX_LENGTH);
        *max_chars = (uint32_t)n;
        return 0;
}

/* FUNC_BPCHAR(t, n, explicit) (proto/plan.proto), folded: a cast to character(n)
 * (explicit: cut) or an assignment to a character(n) column (22001 when too long). */
int bpchar_of(struct analyzer *a, struct typed *t, uint32_t n, bool explicit_)
{
        const struct row_datum dn = ROW_DATUM_INT((int64_t)n), dx = ROW_DATUM_BOOL(explicit_);
        Coord__Plan__Expr *args[3];
        int r = 0;

        if ((int)t->e->type != ROW_TYPE_TEXT && (int)t->e->type != ROW_TYPE_BPCHAR)
                r = wrap_call(a, t, COORD__PLAN__FUNC__FUNC_CAST, ROW_TYPE_BPCHAR);
        if (r < 0)
                return r;
        args[0] = TAKE_PTR(t->e);
        args[1] = expr_literal(ROW_TYPE_INT4, &dn);
        args[2] = expr_literal(ROW_TYPE_BOOL, &dx);
        if (!args[1] || !args[2]) {
                for (size_t i = 0; i < 3; i++)
                        expr_free(args[i]);
                return analyzer_oom(a);
        }
        t->e = expr_call(ROW_TYPE_BPCHAR, COORD__PLAN__FUNC__FUNC_BPCHAR, args, 3);
        return t->e ? fold_typed(a, t) : analyzer_oom(a);
}

bool typed_is_bpchar(const struct typed *t)
{
        return !t->unknown && t->e && (int)t->e->type == ROW_TYPE_BPCHAR;
}

/* bpchar to text: trailing spaces dropped (PostgreSQL's implicit cast); others as they are. */
int bpchar_as_text(struct analyzer *a, struct typed *t)
{
        if (!typed_is_bpchar(t))
                return 0;
        return wrap_call(a, t, COORD__PLAN__FUNC__FUNC_CAST, ROW_TYPE_TEXT);
}

/* Invariant 1 or 3 above would break: 0A000 naming the form. */
int bpchar_refuse(struct analyzer *a, int location, const char *what)
{
        int r = FAIL_AT(a, location, "0A000", "character(n) values in %s are not supported", what);

        row_error_hint(a->err, "Cast the values to text.");
        return r;
}

/* A comparison (binary_op(), common_type()) with a bpchar operand: both must be text or
 * bpchar (an untyped one has become bpchar); the bpchar ones become text.  1 when done,
 * 0 when no operand is bpchar, 2 when the other is of another type (no operator). */
int bpchar_compare_operands(struct analyzer *a, struct typed *l, struct typed *r)
{
        int rc;

        if (!typed_is_bpchar(l) && !typed_is_bpchar(r))
                return 0;
        if (l->unknown || r->unknown ||
            ((int)l->e->type != ROW_TYPE_TEXT && (int)l->e->type != ROW_TYPE_BPCHAR) ||
            ((int)r->e->type != ROW_TYPE_TEXT && (int)r->e->type != ROW_TYPE_BPCHAR))
                return 2;
        rc = bpchar_as_text(a, l);
        if (rc >= 0)
                rc = bpchar_as_text(a, r);
        return rc < 0 ? rc : 1;
}

/* x IN (subquery) where x or the subquery's column 0 (*vtype) is bpchar and the other is
 * text or bpchar: both compared as text (invariant 2), the column cast in *rel. */
int bpchar_in_sublink(struct analyzer *a, struct typed *x, Coord__Plan__Relation **rel,
                      int *vtype)
{
        _cleanup_free_ Coord__Plan__Type *types = NULL;
        _cleanup_free_ int *from = NULL, *to = NULL;
        size_t n = 0;
        int r;

        if ((!typed_is_bpchar(x) && *vtype != ROW_TYPE_BPCHAR) ||
            ((int)x->e->type != ROW_TYPE_TEXT && !typed_is_bpchar(x)) ||
            (*vtype != ROW_TYPE_TEXT && *vtype != ROW_TYPE_BPCHAR))
                return 0;
        r = bpchar_as_text(a, x);
        if (r < 0 || *vtype == ROW_TYPE_TEXT)
                return r;
        r = rel_types(*rel, &types, &n);
        if (r < 0)
                return r == -ENOMEM ? analyzer_oom(a) : FAIL(a, "XX000", "cannot type a plan");
        from = calloc(n ? n : 1, sizeof(*from));
        to = calloc(n ? n : 1, sizeof(*to));
        if (!from || !to)
                return analyzer_oom(a);
        for (size_t i = 0; i < n; i++)
                from[i] = to[i] = (int)types[i];
        to[0] = ROW_TYPE_TEXT;
        r = rel_cast_columns(a, rel, from, to, n);
        if (r >= 0)
                *vtype = ROW_TYPE_TEXT;
        return r;
}
