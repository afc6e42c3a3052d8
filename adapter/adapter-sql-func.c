/* adapter-sql-func.c -- derived forms (IN, BETWEEN, CASE, ...), more functions, arrays,
 * and analyze_expr(), which every expression goes through (adapter-sql-internal.h).
 *
 * NOTES ON THE DESIGN
 *
 * (1) Derived forms.  SQL that the plan's functions express is planned as them, so the
 *     engine and the wire stay small: x IN (a, b) is x = a OR x = b (NOT IN: <> and AND,
 *     the same under three-valued logic), BETWEEN two comparisons, IS [NOT] DISTINCT
 *     FROM and NULLIF a CASE, IS [NOT] TRUE/FALSE a COALESCE, concat() CASTs, COALESCEs
 *     and ||.  An operand planned more than once is copied (expr_copy()); expressions
 *     are deterministic, so each copy yields the same value.  Each piece folds as it is
 *     built (build_call()), so a derived form over constants folds whole.  Types resolve as
 *     PostgreSQL resolves the form: IN's list and CASE's results meet in one type
 *     (common_type()), BETWEEN's comparisons are two operators, each resolved alone.
 */
#include "adapter-sql-internal.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter-pgcatalog.h"
#include "util.h"

/* ---- Derived forms and more functions (note 1). ---- */

/* A call consuming args[0..n), typed, located and folded into ret. */
int build_call(struct analyzer *a, struct typed *ret, int type, Coord__Plan__Func func,
                 Coord__Plan__Expr **args, size_t n, int location)
{
        assert(!ret->e);
        ret->e = expr_call(type, func, args, n);
        if (!ret->e)
                return analyzer_oom(a);
        ret->unknown = false;
        ret->location = location;
        return fold_typed(a, ret);
}

/* build_call() of v[0..n)'s expressions (moved into args); when r < 0, v[0..n) freed
 * and r returned instead. */
int build_call_typed(struct analyzer *a, int r, struct typed *v, Coord__Plan__Expr **args, size_t n,
                     struct typed *ret, int type, Coord__Plan__Func func, int location)
{
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        typed_done(&v[i]);
                return r;
        }
        for (size_t i = 0; i < n; i++)
                args[i] = v[i].e;
        return build_call(a, ret, type, func, args, n, location);
}

/* A second, independent copy of an analyzed operand (an expression planned twice, as
 * IN's left side; expressions are deterministic, so it yields the same value). */
static int typed_copy(struct analyzer *a, const struct typed *t, struct typed *ret)
{
        *ret = *t;
        ret->e = expr_copy(t->e);
        return ret->e ? 0 : analyzer_oom(a);
}

Coord__Plan__Expr *bool_literal(bool v)
{
        struct row_datum d = ROW_DATUM_BOOL(v);

        return expr_literal(ROW_TYPE_BOOL, &d);
}

/* Analyze n nodes into v[0..n); on failure v holds nothing. */
static int analyze_all(struct analyzer *a, PgQuery__Node *const *nodes, size_t n, struct typed *v)
{
        for (size_t i = 0; i < n; i++) {
                int r;

                v[i] = (struct typed){ .location = -1 };
                r = analyze_expr(a, nodes[i], &v[i]);
                if (r < 0) {
                        /* A failed analysis may leave a partial expression too. */
                        typed_done(&v[i]);
                        while (i > 0)
                                typed_done(&v[--i]);
                        return r;
                }
        }
        return 0;
}

static void typed_done_all(struct typed *v, size_t n)
{
        for (size_t i = 0; v && i < n; i++)
                typed_done(&v[i]);
}

/* An untyped NULL (CASE without ELSE). */
int unknown_null(struct analyzer *a, int location, struct typed *ret)
{
        return typed_literal(a, ROW_TYPE_TEXT, &ROW_DATUM_NULL, true, location, ret);
}

/* x IN (v1, ..., vn) as x = v1 OR ... OR x = vn, and NOT IN as x <> v1 AND ..., which
 * three-valued logic makes the same (a NULL anywhere gives NULL, not FALSE).  x and the
 * values meet in one type, as COALESCE's arguments do. */
int analyze_in(struct analyzer *a, const PgQuery__AExpr *x, const char *op,
                      struct typed *ret)
{
        bool not_in = strcmp(op, "<>") == 0;
        const PgQuery__List *list;
        _cleanup_free_ struct typed *v = NULL;
        _cleanup_free_ Coord__Plan__Expr **cmp = NULL;
        size_t n, k = 0;
        int type, r;

        if ((!not_in && strcmp(op, "=") != 0) || !x->lexpr || !x->rexpr ||
            x->rexpr->node_case != PG_QUERY__NODE__NODE_LIST || !x->rexpr->list->n_items)
                return FAIL_AT(a, x->location, "0A000", "this form of IN is not supported");
        list = x->rexpr->list;
        n = list->n_items + 1;
        v = calloc(n, sizeof(*v));
        cmp = calloc(n - 1, sizeof(*cmp));
        if (!v || !cmp)
                return analyzer_oom(a);
        r = analyze_expr(a, x->lexpr, &v[0]);
        if (r >= 0)
                r = analyze_all(a, list->items, list->n_items, v + 1);
        if (r < 0) {
                typed_done(&v[0]);      /* analyze_all() cleans up after itself */
                return r;
        }
        r = common_type(a, v, n, "IN", &type);
        for (; r >= 0 && k < n - 1; k++) {
                Coord__Plan__Expr *pair[2] = { expr_copy(v[0].e), TAKE_PTR(v[k + 1].e) };
                struct typed c = { .location = -1 };

                if (!pair[0]) {
                        expr_free(pair[1]);
                        r = analyzer_oom(a);
                        break;
                }
                r = build_call(a, &c, ROW_TYPE_BOOL,
                          not_in ? COORD__PLAN__FUNC__FUNC_NE : COORD__PLAN__FUNC__FUNC_EQ, pair, 2,
                          x->location);
                cmp[k] = TAKE_PTR(c.e);
        }
        typed_done_all(v, n);
        if (r < 0) {
                for (size_t i = 0; i < k; i++)
                        expr_free(cmp[i]);
                return r;
        }
        if (k == 1) {
                ret->e = TAKE_PTR(cmp[0]);
                ret->unknown = false;
                ret->location = x->location;
                return 0;
        }
        return build_call(a, ret, ROW_TYPE_BOOL,
                     not_in ? COORD__PLAN__FUNC__FUNC_AND : COORD__PLAN__FUNC__FUNC_OR,
                     cmp, k, x->location);
}

/* lo <= x AND x <= hi (negated: x < lo OR x > hi); each comparison resolved as its own
 * operator, as PostgreSQL does.  Consumes x, lo and hi. */
static int between(struct analyzer *a, struct typed *x, struct typed *lo, struct typed *hi,
                   bool negate, int location, struct typed *ret)
{
        _cleanup_(typed_done) struct typed x2 = { .location = -1 };
        Coord__Plan__Expr *both[2];
        int r;

        r = typed_copy(a, x, &x2);
        if (r >= 0)
                r = binary_op(a, negate ? "<" : ">=", x, lo, location);
        if (r >= 0)
                r = binary_op(a, negate ? ">" : "<=", &x2, hi, location);
        if (r < 0)
                return r;
        both[0] = TAKE_PTR(x->e);
        both[1] = TAKE_PTR(x2.e);
        return build_call(a, ret, ROW_TYPE_BOOL,
                     negate ? COORD__PLAN__FUNC__FUNC_OR : COORD__PLAN__FUNC__FUNC_AND, both, 2,
                     location);
}

/* [NOT] BETWEEN [SYMMETRIC]: SYMMETRIC is the same test with the bounds either way
 * round, OR-ed (NOT: AND-ed). */
int analyze_between(struct analyzer *a, const PgQuery__AExpr *x, struct typed *ret)
{
        bool negate = x->kind == PG_QUERY__A__EXPR__KIND__AEXPR_NOT_BETWEEN ||
                      x->kind == PG_QUERY__A__EXPR__KIND__AEXPR_NOT_BETWEEN_SYM;
        bool sym = x->kind == PG_QUERY__A__EXPR__KIND__AEXPR_BETWEEN_SYM ||
                   x->kind == PG_QUERY__A__EXPR__KIND__AEXPR_NOT_BETWEEN_SYM;
        struct typed v[3] = { { .location = -1 } },
                     w[3] = { { .location = -1 }, { .location = -1 }, { .location = -1 } };
        struct typed one = { .location = -1 }, other = { .location = -1 };
        Coord__Plan__Expr *both[2];
        int r;

        if (!x->lexpr || !x->rexpr || x->rexpr->node_case != PG_QUERY__NODE__NODE_LIST ||
            x->rexpr->list->n_items != 2)
                return FAIL_AT(a, x->location, "42601", "malformed BETWEEN");
        r = analyze_all(a, (PgQuery__Node *const[]){ x->lexpr, x->rexpr->list->items[0],
                                                     x->rexpr->list->items[1] },
                        3, v);
        if (r < 0)
                return r;
        if (!sym) {
                r = between(a, &v[0], &v[1], &v[2], negate, x->location, ret);
                typed_done_all(v, 3);
                return r;
        }
        for (int i = 0; i < 3 && r >= 0; i++)
                r = typed_copy(a, &v[i], &w[i]);
        if (r >= 0)
                r = between(a, &v[0], &v[1], &v[2], negate, x->location, &one);
        if (r >= 0)
                r = between(a, &w[0], &w[2], &w[1], negate, x->location, &other);
        typed_done_all(v, 3);
        typed_done_all(w, 3);
        if (r < 0) {
                typed_done(&one);
                typed_done(&other);
                return r;
        }
        both[0] = TAKE_PTR(one.e);
        both[1] = TAKE_PTR(other.e);
        return build_call(a, ret, ROW_TYPE_BOOL,
                     negate ? COORD__PLAN__FUNC__FUNC_AND : COORD__PLAN__FUNC__FUNC_OR, both, 2,
                     x->location);
}

/* Two operands that must meet in one type for `op` (=): untyped ones take the other's
 * type, integers meet as int8; otherwise no operator. */
static int meet(struct analyzer *a, const char *op, struct typed *l, struct typed *r,
                int location)
{
        struct typed v[2];
        int type, rc;

        if (!l->unknown && !r->unknown && l->e->type != r->e->type &&
            !(type_is_int((int)l->e->type) && type_is_int((int)r->e->type)))
                return no_operator(a, op, l, r, location);
        v[0] = *l;
        v[1] = *r;
        rc = common_type(a, v, 2, op, &type);
        *l = v[0];
        *r = v[1];
        return rc;
}

/* a IS [NOT] DISTINCT FROM b: equality where NULL equals NULL, never NULL itself:
 *   CASE WHEN a IS NULL THEN b IS [NOT] NULL WHEN b IS NULL THEN <distinct>
 *        ELSE a <>|= b END */
int analyze_distinct(struct analyzer *a, const PgQuery__AExpr *x, struct typed *ret)
{
        bool distinct = x->kind == PG_QUERY__A__EXPR__KIND__AEXPR_DISTINCT;
        struct typed v[2] = { { .location = -1 } };
        Coord__Plan__Expr *args[5] = { NULL }, *one[2];
        int r;

        if (!x->lexpr || !x->rexpr)
                return FAIL_AT(a, x->location, "42601", "malformed IS DISTINCT FROM");
        r = analyze_all(a, (PgQuery__Node *const[]){ x->lexpr, x->rexpr }, 2, v);
        if (r < 0)
                return r;
        static const Coord__Plan__Func tests[2][3] = {
                { COORD__PLAN__FUNC__FUNC_IS_NULL, COORD__PLAN__FUNC__FUNC_IS_NULL,
                  COORD__PLAN__FUNC__FUNC_EQ },
                { COORD__PLAN__FUNC__FUNC_IS_NOT_NULL, COORD__PLAN__FUNC__FUNC_IS_NULL,
                  COORD__PLAN__FUNC__FUNC_NE },
        };
        /* args[1], args[2], args[4]: b IS [NOT] NULL, b IS NULL, a <>|= b. */
        static const size_t at[3] = { 1, 2, 4 };

        r = meet(a, "=", &v[0], &v[1], x->location);
        for (size_t i = 0; r >= 0 && i < 3; i++) {
                struct typed t = { .location = -1 };

                one[0] = expr_copy(v[i == 2 ? 0 : 1].e);
                one[1] = i == 2 ? expr_copy(v[1].e) : NULL;
                if (!one[0] || (i == 2 && !one[1])) {
                        expr_free(one[0]);
                        expr_free(one[1]);
                        r = analyzer_oom(a);
                        break;
                }
                r = build_call(a, &t, ROW_TYPE_BOOL, tests[distinct][i], one, i == 2 ? 2 : 1,
                          x->location);
                args[at[i]] = TAKE_PTR(t.e);
        }
        if (r >= 0) {
                struct typed t = { .location = -1 };

                one[0] = TAKE_PTR(v[0].e);
                r = build_call(a, &t, ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_IS_NULL, one, 1,
                          x->location);
                args[0] = TAKE_PTR(t.e);
                args[3] = bool_literal(distinct);
                if (r >= 0 && !args[3])
                        r = analyzer_oom(a);
        }
        typed_done_all(v, 2);
        if (r < 0) {
                for (size_t i = 0; i < ELEMENTSOF(args); i++)
                        expr_free(args[i]);
                return r;
        }
        return build_call(a, ret, ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_CASE, args, 5, x->location);
}

/* NULLIF(a, b): CASE WHEN a = b THEN NULL ELSE a END, of a's type. */
int analyze_nullif(struct analyzer *a, const PgQuery__AExpr *x, struct typed *ret)
{
        _cleanup_(typed_done) struct typed val = { .location = -1 };
        struct typed v[2] = { { .location = -1 } };
        struct row_datum null = ROW_DATUM_NULL;
        Coord__Plan__Expr *args[3];
        int r;

        if (!x->lexpr || !x->rexpr)
                return FAIL_AT(a, x->location, "42601", "malformed NULLIF");
        r = analyze_all(a, (PgQuery__Node *const[]){ x->lexpr, x->rexpr }, 2, v);
        if (r < 0)
                return r;
        /* The value keeps a's own type; only an untyped a takes b's. */
        if (v[0].unknown && !v[1].unknown)
                r = coerce_unknown(a, &v[0], (int)v[1].e->type);
        else
                r = coerce_unknown(a, &v[0], ROW_TYPE_TEXT);
        if (r >= 0)
                r = typed_copy(a, &v[0], &val);
        if (r >= 0)
                r = binary_op(a, "=", &v[0], &v[1], x->location);
        if (r < 0) {
                typed_done_all(v, 2);
                return r;
        }
        args[0] = TAKE_PTR(v[0].e);
        args[1] = expr_literal((int)val.e->type, &null);
        args[2] = TAKE_PTR(val.e);
        typed_done_all(v, 2);
        if (!args[1]) {
                expr_free(args[0]);
                expr_free(args[2]);
                return analyzer_oom(a);
        }
        return build_call(a, ret, (int)args[2]->type, COORD__PLAN__FUNC__FUNC_CASE, args, 3,
                     x->location);
}

/* text LIKE / ILIKE pattern, and the operators ~~ !~~ ~~* !~~* they stand for. */
int analyze_like(struct analyzer *a, const PgQuery__AExpr *x, const char *op,
                        struct typed *ret)
{
        bool negate = op[0] == '!', fold_case = op[strlen(op) - 1] == '*';
        bool regex = is_regex_op(op);
        _cleanup_(typed_done) struct typed l = { .location = -1 }, r = { .location = -1 };
        Coord__Plan__Expr *args[2];
        Coord__Plan__Func func;
        int rc;

        if (!x->lexpr || !x->rexpr)
                return FAIL_AT(a, x->location, "42601", "malformed LIKE");
        /* The grammar turns `LIKE p ESCAPE e` into `LIKE like_escape(p, e)`. */
        if (x->rexpr->node_case == PG_QUERY__NODE__NODE_FUNC_CALL &&
            x->rexpr->func_call->n_funcname &&
            strcmp(node_string(x->rexpr->func_call->funcname[x->rexpr->func_call->n_funcname - 1])
                           ?: "", "like_escape") == 0)
                return FAIL_AT(a, x->location, "0A000", "LIKE ... ESCAPE is not supported");
        rc = analyze_expr(a, x->lexpr, &l);
        if (rc >= 0)
                rc = analyze_expr(a, x->rexpr, &r);
        if (rc >= 0)
                rc = coerce_unknown(a, &l, ROW_TYPE_TEXT);
        if (rc >= 0)
                rc = coerce_unknown(a, &r, ROW_TYPE_TEXT);
        /* A bpchar value matches with its padding (PostgreSQL's bpcharlike()); a bpchar
         * pattern is text. */
        if (rc >= 0)
                rc = bpchar_as_text(a, &r);
        if (rc < 0)
                return rc;
        if (((int)l.e->type != ROW_TYPE_TEXT && !typed_is_bpchar(&l)) ||
            (int)r.e->type != ROW_TYPE_TEXT)
                return no_operator(a, op, &l, &r, x->location);
        args[0] = TAKE_PTR(l.e);
        args[1] = TAKE_PTR(r.e);
        if (regex)
                func = fold_case ? COORD__PLAN__FUNC__FUNC_REGEX_IMATCH
                                 : COORD__PLAN__FUNC__FUNC_REGEX_MATCH;
        else
                func = fold_case ? COORD__PLAN__FUNC__FUNC_ILIKE : COORD__PLAN__FUNC__FUNC_LIKE;
        rc = build_call(a, ret, ROW_TYPE_BOOL, func, args, 2, x->location);
        if (rc < 0 || !negate)
                return rc;
        return wrap_call(a, ret, COORD__PLAN__FUNC__FUNC_NOT, ROW_TYPE_BOOL);
}

/* a || b: text concatenation; one operand that is not text is cast to text (PostgreSQL's
 * anytextcat: boolean gives 'true'/'false'), two are no operator. */
int concat_op(struct analyzer *a, struct typed *l, struct typed *r, int location)
{
        Coord__Plan__Expr *args[2];
        bool ltext = l->unknown || (int)l->e->type == ROW_TYPE_TEXT || typed_is_bpchar(l);
        bool rtext = r->unknown || (int)r->e->type == ROW_TYPE_TEXT || typed_is_bpchar(r);
        int rc;

        if (!ltext && !rtext)
                return no_operator(a, "||", l, r, location);
        rc = cast_to(a, l, ROW_TYPE_TEXT, location);
        if (rc >= 0)
                rc = cast_to(a, r, ROW_TYPE_TEXT, location);
        if (rc < 0)
                return rc;
        args[0] = TAKE_PTR(l->e);
        args[1] = TAKE_PTR(r->e);
        return build_call(a, l, ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CONCAT, args, 2, location);
}

/* One WHEN's condition: analyzed, `arg = x` for a simple CASE, boolean. */
static int analyze_when(struct analyzer *a, const PgQuery__CaseWhen *w, const struct typed *arg,
                        struct typed *ret)
{
        _cleanup_(typed_done) struct typed x = { .location = -1 };
        int r;

        *ret = (struct typed){ .location = -1 };
        if (!arg) {
                r = analyze_expr(a, w->expr, ret);
        } else {
                r = analyze_expr(a, w->expr, &x);
                if (r >= 0)
                        r = typed_copy(a, arg, ret);
                if (r >= 0)
                        r = binary_op(a, "=", ret, &x, w->location);
        }
        if (r >= 0)
                r = require_bool(a, ret, "CASE/WHEN");
        if (r < 0)
                typed_done(ret);
        return r;
}

/* CASE [arg] WHEN ... THEN ... [ELSE ...] END.  A simple CASE's WHEN x is arg = x.  The
 * results (and the else, NULL when absent) meet in one type, as COALESCE's arguments. */
static int analyze_case(struct analyzer *a, const PgQuery__CaseExpr *c, struct typed *ret)
{
        size_t k = c->n_args, n = 2 * k + 1, nc;
        _cleanup_free_ struct typed *conds = calloc(k ? k : 1, sizeof(*conds));
        _cleanup_free_ struct typed *vals = calloc(k + 1, sizeof(*vals));
        _cleanup_free_ Coord__Plan__Expr **args = calloc(n, sizeof(*args));
        _cleanup_(typed_done) struct typed arg = { .location = -1 };
        int type, r = 0;

        if (!conds || !vals || !args)
                return analyzer_oom(a);
        if (k == 0)
                return FAIL_AT(a, c->location, "42601", "CASE without WHEN");
        if (c->arg) {
                r = analyze_expr(a, c->arg, &arg);
                if (r < 0)
                        return r;
        }
        /* On failure conds[0..nc) and vals[0..nc) hold what was analyzed. */
        for (nc = 0; nc < k; nc++) {
                const PgQuery__Node *w = c->args[nc];

                if (!w || w->node_case != PG_QUERY__NODE__NODE_CASE_WHEN) {
                        r = FAIL_AT(a, c->location, "XX000", "malformed CASE");
                        break;
                }
                r = analyze_when(a, w->case_when, c->arg ? &arg : NULL, &conds[nc]);
                if (r < 0)
                        break;
                vals[nc] = (struct typed){ .location = -1 };
                r = analyze_expr(a, w->case_when->result, &vals[nc]);
                if (r < 0) {
                        typed_done(&vals[nc]);
                        typed_done(&conds[nc]);
                        break;
                }
        }
        if (r >= 0) {
                vals[k] = (struct typed){ .location = -1 };
                r = c->defresult ? analyze_expr(a, c->defresult, &vals[k])
                                 : unknown_null(a, c->location, &vals[k]);
                if (r >= 0)
                        r = common_type(a, vals, k + 1, "CASE", &type);
                if (r < 0)
                        typed_done(&vals[k]);
        }
        if (r < 0) {
                typed_done_all(conds, nc);
                typed_done_all(vals, nc);
                return r;
        }
        for (size_t i = 0; i < k; i++) {
                args[2 * i] = TAKE_PTR(conds[i].e);
                args[2 * i + 1] = TAKE_PTR(vals[i].e);
        }
        args[n - 1] = TAKE_PTR(vals[k].e);
        return build_call(a, ret, type, COORD__PLAN__FUNC__FUNC_CASE, args, n, c->location);
}

/* x IS [NOT] TRUE / FALSE / UNKNOWN: never NULL.
 *   IS TRUE: COALESCE(x, false)      IS NOT TRUE: NOT COALESCE(x, false)
 *   IS FALSE: COALESCE(NOT x, false) IS NOT FALSE: COALESCE(x, true)
 *   IS [NOT] UNKNOWN: IS [NOT] NULL */
static int analyze_boolean_test(struct analyzer *a, const PgQuery__BooleanTest *b,
                                struct typed *ret)
{
        static const char *const names[] = {
                [PG_QUERY__BOOL_TEST_TYPE__IS_TRUE] = "IS TRUE",
                [PG_QUERY__BOOL_TEST_TYPE__IS_NOT_TRUE] = "IS NOT TRUE",
                [PG_QUERY__BOOL_TEST_TYPE__IS_FALSE] = "IS FALSE",
                [PG_QUERY__BOOL_TEST_TYPE__IS_NOT_FALSE] = "IS NOT FALSE",
                [PG_QUERY__BOOL_TEST_TYPE__IS_UNKNOWN] = "IS UNKNOWN",
                [PG_QUERY__BOOL_TEST_TYPE__IS_NOT_UNKNOWN] = "IS NOT UNKNOWN",
        };
        PgQuery__BoolTestType k = b->booltesttype;
        Coord__Plan__Expr *args[2];
        int r;

        if ((unsigned)k >= ELEMENTSOF(names) || !names[k])
                return FAIL_AT(a, b->location, "XX000", "malformed boolean test");
        r = analyze_expr(a, b->arg, ret);
        if (r >= 0)
                r = require_bool(a, ret, names[k]);
        if (r < 0)
                return r;
        ret->location = b->location;
        if (k == PG_QUERY__BOOL_TEST_TYPE__IS_UNKNOWN || k == PG_QUERY__BOOL_TEST_TYPE__IS_NOT_UNKNOWN)
                return wrap_call(a, ret,
                            k == PG_QUERY__BOOL_TEST_TYPE__IS_UNKNOWN ? COORD__PLAN__FUNC__FUNC_IS_NULL
                                                                      : COORD__PLAN__FUNC__FUNC_IS_NOT_NULL,
                            ROW_TYPE_BOOL);
        if (k == PG_QUERY__BOOL_TEST_TYPE__IS_FALSE) {
                r = wrap_call(a, ret, COORD__PLAN__FUNC__FUNC_NOT, ROW_TYPE_BOOL);
                if (r < 0)
                        return r;
        }
        args[0] = TAKE_PTR(ret->e);
        args[1] = bool_literal(k == PG_QUERY__BOOL_TEST_TYPE__IS_NOT_FALSE);
        if (!args[1]) {
                expr_free(args[0]);
                return analyzer_oom(a);
        }
        r = build_call(a, ret, ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_COALESCE, args, 2, b->location);
        if (r < 0 || k != PG_QUERY__BOOL_TEST_TYPE__IS_NOT_TRUE)
                return r;
        return wrap_call(a, ret, COORD__PLAN__FUNC__FUNC_NOT, ROW_TYPE_BOOL);
}

/* concat(a, ...): every argument as text, NULLs as '', never NULL.  A boolean argument
 * is written as its output, 't'/'f' (concat() uses output functions, unlike ||). */
static int analyze_concat(struct analyzer *a, const PgQuery__FuncCall *f, struct typed *ret)
{
        int r = 0;

        for (size_t i = 0; i < f->n_args && r >= 0; i++) {
                _cleanup_(typed_done) struct typed t = { .location = -1 };
                struct row_datum empty = ROW_DATUM_TEXT("", 0);
                Coord__Plan__Expr *args[5] = { NULL };
                size_t n;

                r = analyze_expr(a, f->args[i], &t);
                if (r >= 0)
                        r = coerce_unknown(a, &t, ROW_TYPE_TEXT);
                /* PostgreSQL's concat() writes a bpchar with its padding. */
                if (r >= 0 && typed_is_bpchar(&t))
                        r = bpchar_refuse(a, t.location, "concat()");
                if (r < 0)
                        break;
                if ((int)t.e->type == ROW_TYPE_BOOL) {
                        struct row_datum tv = ROW_DATUM_TEXT("t", 1), fv = ROW_DATUM_TEXT("f", 1);
                        struct typed nx = { .location = -1 };

                        r = typed_copy(a, &t, &nx);
                        if (r >= 0)
                                r = wrap_call(a, &nx, COORD__PLAN__FUNC__FUNC_NOT, ROW_TYPE_BOOL);
                        if (r < 0) {
                                typed_done(&nx);
                                break;
                        }
                        args[0] = TAKE_PTR(t.e);
                        args[1] = expr_literal(ROW_TYPE_TEXT, &tv);
                        args[2] = TAKE_PTR(nx.e);
                        args[3] = expr_literal(ROW_TYPE_TEXT, &fv);
                        n = 5;
                } else {
                        r = cast_to(a, &t, ROW_TYPE_TEXT, t.location);
                        if (r < 0)
                                break;
                        args[0] = TAKE_PTR(t.e);
                        n = 2;
                }
                args[n - 1] = expr_literal(ROW_TYPE_TEXT, &empty);
                for (size_t j = 0; j < n; j++)
                        if (!args[j]) {
                                for (size_t m = 0; m < n; m++)
                                        expr_free(args[m]);
                                return analyzer_oom(a);
                        }
                r = build_call(a, &t, ROW_TYPE_TEXT,
                          n == 5 ? COORD__PLAN__FUNC__FUNC_CASE : COORD__PLAN__FUNC__FUNC_COALESCE,
                          args, n, f->location);
                if (r >= 0 && ret->e) {
                        args[0] = TAKE_PTR(ret->e);
                        args[1] = TAKE_PTR(t.e);
                        r = build_call(a, ret, ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CONCAT, args, 2,
                                  f->location);
                } else if (r >= 0) {
                        *ret = t;
                        t.e = NULL;
                }
        }
        return r;
}

/* round(numeric [, int]), trunc(numeric [, int]), ceil/ceiling/floor(numeric)
 * (proto/plan.proto FUNC_ROUND ..): 1 when planned into ret, 0 when `name` is none of
 * them, or an error.  An integer argument is cast to numeric where PostgreSQL picks the
 * numeric function (round(5, 1)); with one integer argument PostgreSQL picks the double
 * precision function, which Coord does not have (0A000). */
static int analyze_numeric_func(struct analyzer *a, const PgQuery__FuncCall *f, const char *name,
                                struct typed *ret)
{
        static const struct {
                const char *name;
                Coord__Plan__Func func;
                bool places;            /* takes an optional second argument */
        } funcs[] = {
                { "round", COORD__PLAN__FUNC__FUNC_ROUND, true },
                { "trunc", COORD__PLAN__FUNC__FUNC_TRUNC, true },
                { "ceil", COORD__PLAN__FUNC__FUNC_CEIL, false },
                { "ceiling", COORD__PLAN__FUNC__FUNC_CEIL, false },
                { "floor", COORD__PLAN__FUNC__FUNC_FLOOR, false },
        };
        _cleanup_(typed_done) struct typed x = { .location = -1 }, n = { .location = -1 };
        Coord__Plan__Expr *args[2];
        size_t i, nargs;
        int r;

        for (i = 0; i < ELEMENTSOF(funcs); i++)
                if (strcmp(name, funcs[i].name) == 0)
                        break;
        if (i == ELEMENTSOF(funcs) || f->n_args < 1 || f->n_args > (funcs[i].places ? 2u : 1u))
                return 0;
        nargs = f->n_args;
        r = analyze_expr(a, f->args[0], &x);
        if (r >= 0 && nargs == 2)
                r = analyze_expr(a, f->args[1], &n);
        if (r >= 0)
                r = coerce_unknown(a, &x, ROW_TYPE_NUMERIC);
        if (r >= 0 && nargs == 2)
                r = coerce_unknown(a, &n, ROW_TYPE_INT4);
        if (r < 0)
                return r;
        if (!type_is_number((int)x.e->type) || (nargs == 2 && (int)n.e->type != ROW_TYPE_INT4))
                return 0;
        if (nargs == 1 && (int)x.e->type != ROW_TYPE_NUMERIC)
                return FAIL_AT(a, f->location, "0A000", "%s(%s) is of type double precision, "
                               "which is not supported; cast its argument to numeric", name,
                               typed_name(&x));
        r = numeric_promote(a, &x);
        if (r < 0)
                return r;
        args[0] = TAKE_PTR(x.e);
        if (nargs == 2)
                args[1] = TAKE_PTR(n.e);
        else if (funcs[i].places)
                args[1] = expr_literal(ROW_TYPE_INT4, &ROW_DATUM_INT(0));
        r = build_call(a, ret, ROW_TYPE_NUMERIC, funcs[i].func, args, funcs[i].places ? 2 : 1,
                       f->location);
        return r < 0 ? r : 1;
}

/* Scalar functions that are one plan function each.  arg: the argument's type, or -1 for
 * either integer type or numeric (the result then has the argument's type). */
static const struct {
        const char *name;
        Coord__Plan__Func func;
        int arg, result;
} scalar_functions[] = {
        { "abs", COORD__PLAN__FUNC__FUNC_ABS, -1, -1 },
        { "length", COORD__PLAN__FUNC__FUNC_LENGTH, ROW_TYPE_TEXT, ROW_TYPE_INT4 },
        { "char_length", COORD__PLAN__FUNC__FUNC_LENGTH, ROW_TYPE_TEXT, ROW_TYPE_INT4 },
        { "character_length", COORD__PLAN__FUNC__FUNC_LENGTH, ROW_TYPE_TEXT, ROW_TYPE_INT4 },
        { "lower", COORD__PLAN__FUNC__FUNC_LOWER, ROW_TYPE_TEXT, ROW_TYPE_TEXT },
        { "upper", COORD__PLAN__FUNC__FUNC_UPPER, ROW_TYPE_TEXT, ROW_TYPE_TEXT },
};

/* The functions above, concat() and version(): 1 when planned into ret, 0 when `name`
 * with these arguments is none of them (the caller reports it), or an error. */
int analyze_scalar_func(struct analyzer *a, const PgQuery__FuncCall *f, const char *name,
                               struct typed *ret)
{
        _cleanup_(typed_done) struct typed t = { .location = -1 };
        Coord__Plan__Expr *arg;
        size_t i;
        int r;

        r = analyze_numeric_func(a, f, name, ret);
        if (r != 0)
                return r;
        for (i = 0; i < ELEMENTSOF(scalar_functions); i++)
                if (strcmp(name, scalar_functions[i].name) == 0)
                        break;
        if (i == ELEMENTSOF(scalar_functions) && strcmp(name, "concat") != 0 &&
            strcmp(name, "version") != 0)
                return 0;
        if (f->agg_distinct || f->n_agg_order || f->agg_filter)
                return FAIL_AT(a, f->location, "42809",
                               "DISTINCT, ORDER BY or FILTER specified, but %s is not an "
                               "aggregate function", name);
        if (strcmp(name, "version") == 0) {
                if (f->n_args)
                        return 0;
                static const struct row_datum version = ROW_DATUM_TEXT(
                        "PostgreSQL " SQL_SERVER_VERSION, sizeof("PostgreSQL " SQL_SERVER_VERSION) - 1);

                r = typed_literal(a, ROW_TYPE_TEXT, &version, false, f->location, ret);
                return r < 0 ? r : 1;
        }
        if (strcmp(name, "concat") == 0) {
                if (!f->n_args)
                        return 0;
                r = analyze_concat(a, f, ret);
                return r < 0 ? r : 1;
        }
        if (f->n_args != 1)
                return 0;
        r = analyze_expr(a, f->args[0], &t);
        if (r >= 0 && scalar_functions[i].arg == ROW_TYPE_TEXT)
                r = coerce_unknown(a, &t, ROW_TYPE_TEXT);
        if (r >= 0 && scalar_functions[i].arg == ROW_TYPE_TEXT)
                r = bpchar_as_text(a, &t);      /* length() then counts no trailing spaces */
        if (r < 0)
                return r;
        if (t.unknown || (scalar_functions[i].arg < 0 ? !type_is_number((int)t.e->type)
                                                      : (int)t.e->type != scalar_functions[i].arg))
                return 0;
        arg = TAKE_PTR(t.e);
        r = build_call(a, ret, scalar_functions[i].result < 0 ? (int)arg->type : scalar_functions[i].result,
                  scalar_functions[i].func, &arg, 1, f->location);
        return r < 0 ? r : 1;
}

/* expr COLLATE "default" (psql writes COLLATE pg_catalog.default): text compares
 * bytewise here, which is what the default collation means in this database
 * (pg_database.datcollate 'C'), so "default", "C" and "POSIX" change nothing; any other
 * collation is refused. */
static int analyze_collate(struct analyzer *a, const PgQuery__CollateClause *c, struct typed *ret)
{
        const char *name = c->n_collname ? node_string(c->collname[c->n_collname - 1]) : NULL;
        const char *schema = c->n_collname == 2 ? node_string(c->collname[0]) : NULL;
        int r;

        if (!name || c->n_collname > 2 || (c->n_collname == 2 && strcmp(schema ?: "", "pg_catalog")) ||
            (strcmp(name, "default") && strcmp(name, "C") && strcmp(name, "POSIX")))
                return FAIL_AT(a, c->location, "0A000", "collation \"%s\" is not supported",
                               name ? name : "?");
        r = analyze_expr(a, c->arg, ret);
        if (r >= 0)
                r = coerce_unknown(a, ret, ROW_TYPE_TEXT);
        if (r >= 0 && (int)ret->e->type != ROW_TYPE_TEXT)
                r = FAIL_AT(a, c->location, "42804", "collations are not supported by type %s",
                            row_type_name((enum row_type)ret->e->type));
        return r;
}

/* A call of two arguments, consuming both; NULL when either is NULL (out of memory). */
Coord__Plan__Expr *expr_call2(int type, Coord__Plan__Func func, Coord__Plan__Expr *x,
                                Coord__Plan__Expr *y)
{
        if (!x || !y) {
                expr_free(x);
                expr_free(y);
                return NULL;
        }
        return expr_call(type, func, (Coord__Plan__Expr *[]){ x, y }, 2);
}

/* CASE(x = v_1, r_1, ..., x = v_k, r_k, else) over copies of x (the value as a literal
 * of x's type); consumes x and else_. */
Coord__Plan__Expr *case_of(Coord__Plan__Expr *x, const int64_t *v, const char *const *res,
                                  size_t k, int type, Coord__Plan__Expr *else_)
{
        Coord__Plan__Expr **args = calloc(2 * k + 1, sizeof(*args));
        bool ok = args && else_;

        for (size_t i = 0; ok && i < k; i++) {
                struct row_datum dv = ROW_DATUM_INT(v[i]);
                struct row_datum dr = ROW_DATUM_TEXT(res[i], (uint32_t)strlen(res[i]));

                args[2 * i] = expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_EQ, expr_copy(x),
                                    expr_literal((int)x->type, &dv));
                args[2 * i + 1] = expr_literal(type, &dr);
                ok = args[2 * i] && args[2 * i + 1];
        }
        expr_free(x);
        if (!ok) {
                for (size_t i = 0; args && i < 2 * k; i++)
                        expr_free(args[i]);
                free(args);
                expr_free(else_);
                return NULL;
        }
        args[2 * k] = else_;
        x = expr_call(type, COORD__PLAN__FUNC__FUNC_CASE, args, 2 * k + 1);
        free(args);
        return x;
}

/* pg_catalog's functions over oids that psql's list commands call, planned as CASE over
 * the facts of adapter-pgcatalog.h (1 when planned into ret, 0 when `name` with these
 * arguments is none of them, or an error):
 *   pg_table_is_visible(oid)   true; NULL for NULL (every object is in pg_catalog or
 *                              public, both on the search path; PostgreSQL gives NULL for
 *                              an oid no relation has, this gives true)
 *   pg_get_userbyid(oid)       the one role's name, "unknown (OID=n)" for another oid
 *   pg_encoding_to_char(int)   PostgreSQL's encoding name, '' for no encoding */
int analyze_catalog_func(struct analyzer *a, const PgQuery__FuncCall *f, const char *name,
                                struct typed *ret)
{
        _cleanup_(typed_done) struct typed t = { .location = -1 };
        bool visible = strcmp(name, "pg_table_is_visible") == 0;
        bool user = strcmp(name, "pg_get_userbyid") == 0;
        bool encoding = strcmp(name, "pg_encoding_to_char") == 0;
        int r;

        if ((!visible && !user && !encoding) || f->n_args != 1 || f->agg_distinct ||
            f->n_agg_order || f->agg_filter)
                return 0;
        r = analyze_expr(a, f->args[0], &t);
        if (r >= 0)
                r = coerce_unknown(a, &t, encoding ? ROW_TYPE_INT4 : ROW_TYPE_INT8);
        if (r < 0)
                return r;
        if (encoding ? (int)t.e->type != ROW_TYPE_INT4 : !type_is_int((int)t.e->type))
                return 0;
        if (!encoding) {
                r = promote_to(a, &t, ROW_TYPE_INT8);
                if (r < 0)
                        return r;
        }
        if (is_literal(t.e)) {
                /* A constant argument: the value now (fold_typed() stops at the CASE's calls). */
                bool null = t.e->literal->value_case == COORD__PLAN__DATUM__VALUE_NULL_VALUE;
                int64_t v = null ? 0 : t.e->literal->int_value;
                char unknown[48];
                const char *text = unknown;
                struct row_datum d;

                snprintf(unknown, sizeof(unknown), "unknown (OID=%lld)", (long long)v);
                if (encoding)
                        text = pgcat_encoding_name(v);
                else if (v == PGCAT_ROLE_OID)
                        text = PGCAT_ROLE_NAME;
                d = visible ? ROW_DATUM_BOOL(true) : ROW_DATUM_TEXT(text, (uint32_t)strlen(text));
                r = typed_literal(a, visible ? ROW_TYPE_BOOL : ROW_TYPE_TEXT,
                                  null ? &ROW_DATUM_NULL : &d, false, f->location, ret);
                return r < 0 ? r : 1;
        }
        if (visible) {
                Coord__Plan__Expr *args[3] = { expr_call(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_IS_NULL,
                                                         (Coord__Plan__Expr *[]){ TAKE_PTR(t.e) }, 1),
                                               expr_literal(ROW_TYPE_BOOL, &ROW_DATUM_NULL),
                                               bool_literal(true) };

                if (!args[0] || !args[1] || !args[2]) {
                        for (size_t i = 0; i < 3; i++)
                                expr_free(args[i]);
                        return analyzer_oom(a);
                }
                r = build_call(a, ret, ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_CASE, args, 3, f->location);
                return r < 0 ? r : 1;
        }
        if (user) {
                /* 'unknown (OID=' || x::text || ')' */
                static const struct row_datum pre = ROW_DATUM_TEXT("unknown (OID=", 13),
                                              post = ROW_DATUM_TEXT(")", 1);
                static const int64_t role = PGCAT_ROLE_OID;
                static const char *const role_name = PGCAT_ROLE_NAME;
                Coord__Plan__Expr *x = expr_copy(t.e), *cast, *e;

                cast = x ? expr_call(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CAST, &x, 1) : NULL;
                e = expr_call2(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CONCAT,
                          expr_call2(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CONCAT,
                                expr_literal(ROW_TYPE_TEXT, &pre), cast),
                          expr_literal(ROW_TYPE_TEXT, &post));
                ret->e = case_of(TAKE_PTR(t.e), &role, &role_name, 1, ROW_TYPE_TEXT, e);
        } else {
                int64_t v[64];
                const char *names[64];
                size_t k = 0;
                Coord__Plan__Expr *is_null, *null_text, *x = expr_copy(t.e), *body;

                for (int64_t i = 0; i < 64 && pgcat_encoding_name(i)[0]; i++) {
                        v[k] = i;
                        names[k++] = pgcat_encoding_name(i);
                }
                /* CASE WHEN x IS NULL THEN NULL ELSE CASE x WHEN 0 THEN 'SQL_ASCII' ... ELSE '' */
                body = case_of(TAKE_PTR(t.e), v, names, k, ROW_TYPE_TEXT,
                               expr_literal(ROW_TYPE_TEXT, &ROW_DATUM_TEXT("", 0)));
                is_null = x ? expr_call(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_IS_NULL, &x, 1) : NULL;
                null_text = expr_literal(ROW_TYPE_TEXT, &ROW_DATUM_NULL);
                if (!body || !is_null || !null_text) {
                        expr_free(body);
                        expr_free(is_null);
                        expr_free(null_text);
                        return analyzer_oom(a);
                }
                ret->e = expr_call(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CASE,
                                   (Coord__Plan__Expr *[]){ is_null, null_text, body }, 3);
        }
        if (!ret->e)
                return analyzer_oom(a);
        ret->unknown = false;
        ret->location = f->location;
        r = fold_typed(a, ret);
        return r < 0 ? r : 1;
}

/* ---- Arrays (common/row/row.h, "Arrays"). ---- */

/* ARRAY[x, ...]: elements of their common type (int4 and int8 mix; untyped literals
 * take it), or of cast_to's element type when the array is the operand of a cast to an
 * array type (ARRAY[]::int[]); cast_type is ROW_TYPE_TEXT otherwise. */
static int analyze_array_expr(struct analyzer *a, const PgQuery__AArrayExpr *x, int cast_type,
                              struct typed *ret)
{
        size_t n = x->n_elements;
        _cleanup_free_ struct typed *v = calloc(n ? n : 1, sizeof(*v));
        _cleanup_free_ Coord__Plan__Expr **args = calloc(n ? n : 1, sizeof(*args));
        int elem = row_type_is_array(cast_type) ? (int)row_type_element((enum row_type)cast_type) : -1;
        int r = 0, type;
        size_t k = 0;

        if (!v || !args)
                return analyzer_oom(a);
        if (n == 0 && elem < 0) {
                r = FAIL_AT(a, x->location, "42P18", "cannot determine type of empty array");
                row_error_hint(a->err, "Explicitly cast to the desired type, for example "
                                       "ARRAY[]::integer[].");
                return r;
        }
        for (; k < n && r >= 0; k++) {
                v[k].location = -1;
                if (x->elements[k] && x->elements[k]->node_case == PG_QUERY__NODE__NODE_A_ARRAY_EXPR)
                        r = FAIL_AT(a, x->location, "0A000",
                                    "multidimensional arrays are not supported");
                else
                        r = analyze_expr(a, x->elements[k], &v[k]);
        }
        if (r >= 0 && elem >= 0) {
                /* Each element cast to the element type. */
                for (size_t i = 0; r >= 0 && i < k; i++)
                        r = cast_to(a, &v[i], elem, v[i].location >= 0 ? v[i].location : x->location);
                type = elem;
        } else if (r >= 0) {
                r = common_type(a, v, k, "ARRAY", &type);
                if (r >= 0 && type == ROW_TYPE_BPCHAR)
                        r = bpchar_refuse(a, x->location, "ARRAY[]");
                else if (r >= 0 && !row_type_valid(row_type_array_of((enum row_type)type)))
                        r = FAIL_AT(a, x->location, "0A000", row_type_is_array(type)
                                    ? "multidimensional arrays are not supported"
                                    : "arrays of %s are not supported",
                                    row_type_name((enum row_type)type));
        }
        return build_call_typed(a, r, v, args, k, ret, r < 0 ? 0 : row_type_array_of((enum row_type)type),
                                COORD__PLAN__FUNC__FUNC_ARRAY, x->location);
}

/* array[i]: one subscript of one dimension; slices and field selection are refused. */
static int analyze_subscript(struct analyzer *a, const PgQuery__AIndirection *x, struct typed *ret)
{
        _cleanup_(typed_done) struct typed arr = { .location = -1 }, i = { .location = -1 };
        const PgQuery__Node *ind = x->n_indirection == 1 ? x->indirection[0] : NULL;
        int r, elem;

        if (!ind || ind->node_case != PG_QUERY__NODE__NODE_A_INDICES || ind->a_indices->is_slice ||
            !ind->a_indices->uidx)
                return FAIL(a, "0A000", "%s", !ind || ind->node_case != PG_QUERY__NODE__NODE_A_INDICES
                                              ? "this indirection is not supported"
                                              : "array slices and multidimensional subscripts "
                                                "are not supported");
        r = analyze_expr(a, x->arg, &arr);
        if (r < 0)
                return r;
        if (arr.unknown || !row_type_is_array((int)arr.e->type))
                return FAIL_AT(a, arr.location, "42804",
                               "cannot subscript type %s because it does not support subscripting",
                               typed_name(&arr));
        r = analyze_expr(a, ind->a_indices->uidx, &i);
        if (r >= 0)
                r = coerce_unknown(a, &i, ROW_TYPE_INT4);
        if (r < 0)
                return r;
        if (!type_is_int((int)i.e->type))
                return FAIL_AT(a, i.location, "42804", "array subscript must have type integer");
        elem = (int)row_type_element((enum row_type)arr.e->type);
        return build_call(a, ret, elem, COORD__PLAN__FUNC__FUNC_SUBSCRIPT,
                     (Coord__Plan__Expr *[]){ TAKE_PTR(arr.e), TAKE_PTR(i.e) }, 2, arr.location);
}

/* array_to_string, array_length/lower/upper, cardinality: 1 when planned into ret, 0
 * when `name` with these arguments is none of them, or an error. */
int analyze_array_func(struct analyzer *a, const PgQuery__FuncCall *f, const char *name,
                              struct typed *ret)
{
        static const struct {
                const char *name;
                Coord__Plan__Func func;
                size_t min, max;
        } funcs[] = {
                { "array_to_string", COORD__PLAN__FUNC__FUNC_ARRAY_TO_STRING, 2, 3 },
                { "array_length", COORD__PLAN__FUNC__FUNC_ARRAY_LENGTH, 2, 2 },
                { "array_lower", COORD__PLAN__FUNC__FUNC_ARRAY_LOWER, 2, 2 },
                { "array_upper", COORD__PLAN__FUNC__FUNC_ARRAY_UPPER, 2, 2 },
                { "cardinality", COORD__PLAN__FUNC__FUNC_CARDINALITY, 1, 1 },
        };
        struct typed v[3] = { { .location = -1 }, { .location = -1 }, { .location = -1 } };
        Coord__Plan__Expr *args[3];
        size_t i, k = 0;
        int r = 0;

        for (i = 0; i < ELEMENTSOF(funcs); i++)
                if (strcmp(name, funcs[i].name) == 0)
                        break;
        if (i == ELEMENTSOF(funcs) || f->n_args < funcs[i].min || f->n_args > funcs[i].max ||
            f->agg_distinct || f->n_agg_order || f->agg_filter)
                return 0;
        for (; k < f->n_args && r >= 0; k++)
                r = analyze_expr(a, f->args[k], &v[k]);
        /* The array is typed (an untyped '{..}' would not say its element type); the rest
         * are text (array_to_string) or int4. */
        if (r >= 0 && (v[0].unknown || !row_type_is_array((int)v[0].e->type)))
                r = 0;
        else if (r >= 0) {
                int want = funcs[i].func == COORD__PLAN__FUNC__FUNC_ARRAY_TO_STRING ? ROW_TYPE_TEXT
                                                                                    : ROW_TYPE_INT4;

                r = 1;
                for (size_t j = 1; r > 0 && j < k; j++) {
                        int rc = coerce_unknown(a, &v[j], want);

                        if (rc < 0)
                                r = rc;
                        else if ((int)v[j].e->type != want)
                                r = 0;
                }
        }
        if (r > 0) {
                for (size_t j = 0; j < k; j++)
                        args[j] = TAKE_PTR(v[j].e);
                r = build_call(a, ret, funcs[i].func == COORD__PLAN__FUNC__FUNC_ARRAY_TO_STRING
                                          ? ROW_TYPE_TEXT : ROW_TYPE_INT4,
                          funcs[i].func, args, k, f->location);
                r = r < 0 ? r : 1;
        }
        for (size_t j = 0; j < k; j++)
                typed_done(&v[j]);
        return r;
}

int analyze_expr(struct analyzer *a, const PgQuery__Node *n, struct typed *ret)
{
        struct typed t = { .location = -1 };
        enum row_type type;
        uint32_t max_chars;
        int r;

        assert(!ret->e);
        if (!n)
                return FAIL(a, "XX000", "missing expression");
        if (a->depth >= ANALYZE_MAX_DEPTH)
                return FAIL(a, "54001", "expression nesting exceeds %d levels",
                            ANALYZE_MAX_DEPTH);
        a->depth++;
        switch (n->node_case) {
        case PG_QUERY__NODE__NODE_A_CONST:
                r = analyze_const(a, n->a_const, ret);
                break;
        case PG_QUERY__NODE__NODE_COLUMN_REF:
                r = analyze_column_ref(a, n->column_ref, ret);
                break;
        case PG_QUERY__NODE__NODE_PARAM_REF:
                r = analyze_param(a, n->param_ref, ret);
                break;
        case PG_QUERY__NODE__NODE_A_EXPR:
                r = analyze_a_expr(a, n->a_expr, ret);
                break;
        case PG_QUERY__NODE__NODE_BOOL_EXPR:
                r = analyze_bool_expr(a, n->bool_expr, ret);
                break;
        case PG_QUERY__NODE__NODE_NULL_TEST:
                r = analyze_expr(a, n->null_test->arg, &t);
                if (r >= 0)
                        r = coerce_unknown(a, &t, ROW_TYPE_TEXT);
                if (r >= 0)
                        r = wrap_call(a, &t,
                                 n->null_test->nulltesttype == PG_QUERY__NULL_TEST_TYPE__IS_NULL
                                         ? COORD__PLAN__FUNC__FUNC_IS_NULL
                                         : COORD__PLAN__FUNC__FUNC_IS_NOT_NULL,
                                 ROW_TYPE_BOOL);
                if (r >= 0) {
                        t.location = n->null_test->location;
                        *ret = t;
                        t.e = NULL;
                }
                break;
        case PG_QUERY__NODE__NODE_FUNC_CALL:
                r = analyze_func_call(a, n->func_call, ret);
                break;
        case PG_QUERY__NODE__NODE_TYPE_CAST:
                if (is_reg_cast(n)) {
                        r = analyze_reg_cast(a, n->type_cast, ret);
                        break;
                }
                a->reg_ok = false;
                r = resolve_type(a, n->type_cast->type_name, &type, &max_chars);
                if (r < 0)
                        break;
                /* x::regclass::text: the reg* value's text. */
                a->reg_ok = type == ROW_TYPE_TEXT && !max_chars && is_reg_cast(n->type_cast->arg);
                /* ARRAY[]::int[] and ARRAY['1']::int[]: the cast gives the elements'
                 * type, as in PostgreSQL. */
                if (n->type_cast->arg &&
                    n->type_cast->arg->node_case == PG_QUERY__NODE__NODE_A_ARRAY_EXPR &&
                    row_type_is_array((int)type))
                        r = analyze_array_expr(a, n->type_cast->arg->a_array_expr, (int)type, &t);
                else
                        r = analyze_expr(a, n->type_cast->arg, &t);
                /* character(n): bpchar_of() casts what is not text itself. */
                if (r >= 0 && type == ROW_TYPE_BPCHAR)
                        r = coerce_unknown(a, &t, ROW_TYPE_TEXT);
                if (r >= 0 && type == ROW_TYPE_BPCHAR)
                        r = bpchar_of(a, &t, max_chars, true);
                else if (r >= 0)
                        r = cast_to(a, &t, type, n->type_cast->location);
                if (r >= 0 && max_chars && type != ROW_TYPE_BPCHAR)
                        r = varchar_of(a, &t, max_chars, true);
                if (r >= 0) {
                        *ret = t;
                        t.e = NULL;
                }
                break;
        case PG_QUERY__NODE__NODE_SET_TO_DEFAULT:
                r = FAIL(a, "42601", "DEFAULT is not allowed in this context");
                break;
        case PG_QUERY__NODE__NODE_SUB_LINK:
                r = moot_sublink(a, n->sub_link, ret);
                break;
        case PG_QUERY__NODE__NODE_CASE_EXPR:
                r = analyze_case(a, n->case_expr, ret);
                break;
        case PG_QUERY__NODE__NODE_COALESCE_EXPR:
                r = analyze_coalesce(a, n->coalesce_expr, ret);
                break;
        case PG_QUERY__NODE__NODE_MIN_MAX_EXPR:
                r = analyze_minmax(a, n->min_max_expr, ret);
                break;
        case PG_QUERY__NODE__NODE_SQLVALUE_FUNCTION:
                r = analyze_sql_value_function(a, n->sqlvalue_function, ret);
                break;
        case PG_QUERY__NODE__NODE_BOOLEAN_TEST:
                r = analyze_boolean_test(a, n->boolean_test, ret);
                break;
        case PG_QUERY__NODE__NODE_COLLATE_CLAUSE:
                r = analyze_collate(a, n->collate_clause, ret);
                break;
        case PG_QUERY__NODE__NODE_A_ARRAY_EXPR:
                r = analyze_array_expr(a, n->a_array_expr, ROW_TYPE_TEXT, ret);
                break;
        case PG_QUERY__NODE__NODE_A_INDIRECTION:
                r = analyze_subscript(a, n->a_indirection, ret);
                break;
        default:
                r = FAIL(a, "0A000", "this kind of expression is not supported");
                break;
        }
        a->depth--;
        typed_done(&t);
        /* A failed analysis leaves nothing in ret: the analyses above may fail after
         * making part of it (a parameter whose text is no value of its bound type), and
         * not every caller frees a failed operand. */
        if (r < 0)
                typed_done(ret);
        assert(r < 0 || ret->e);
        return r;
}
