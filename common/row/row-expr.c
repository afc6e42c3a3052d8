/* row-expr.c -- type checking and evaluation of plan expressions (row-expr.h).
 *
 * Evaluation is a recursive walk with an explicit depth bound.  Each function case reads
 * its own arguments, so AND/OR can stop early and so no case allocates an argument array.
 * Every path that reads a child checks the child's presence, kind and count first: an
 * Expr received from the wire may be anything protobuf-c accepts.
 */
#include "row-expr.h"
#include "row-expr-internal.h"

#include <assert.h>
#include <locale.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>

/* The case labels check_call() and eval_call() share, as ARRAY_FUNCS and NUMERIC_FUNCS
 * (row-expr-internal.h): the binary integer arithmetic (FUNC_NEG is unary and checked
 * apart) and the comparisons (rx_compare_result()). */
#define ARITH2_FUNCS                                                                         \
        case COORD__PLAN__FUNC__FUNC_ADD:                                                   \
        case COORD__PLAN__FUNC__FUNC_SUB:                                                   \
        case COORD__PLAN__FUNC__FUNC_MUL:                                                   \
        case COORD__PLAN__FUNC__FUNC_DIV:                                                   \
        case COORD__PLAN__FUNC__FUNC_MOD
#define COMPARE_FUNCS                                                                        \
        case COORD__PLAN__FUNC__FUNC_EQ:                                                    \
        case COORD__PLAN__FUNC__FUNC_NE:                                                    \
        case COORD__PLAN__FUNC__FUNC_LT:                                                    \
        case COORD__PLAN__FUNC__FUNC_LE:                                                    \
        case COORD__PLAN__FUNC__FUNC_GT:                                                    \
        case COORD__PLAN__FUNC__FUNC_GE

int rx_invalid(struct row_error *err, const char *what)
{
        return row_error_set(err, -EINVAL, "XX000", "invalid plan: %s", what);
}

static int too_deep(struct row_error *err)
{
        return row_error_set(err, -EINVAL, "54001", "expression nesting exceeds %d levels",
                             ROW_EXPR_MAX_DEPTH);
}

bool rx_type_is_int(int t)
{
        return t == ROW_TYPE_INT4 || t == ROW_TYPE_INT8;
}

bool row_expr_cast_allowed(enum row_type from, enum row_type to)
{
        if (!row_type_valid(from) || !row_type_valid(to))
                return false;
        if (from == to || from == ROW_TYPE_TEXT || to == ROW_TYPE_TEXT ||
            from == ROW_TYPE_BPCHAR || to == ROW_TYPE_BPCHAR)
                return true;
        if (rx_type_is_int(from) && rx_type_is_int(to))
                return true;
        /* numeric to and from integers (and text, above). */
        if ((from == ROW_TYPE_NUMERIC && rx_type_is_int(to)) ||
            (rx_type_is_int(from) && to == ROW_TYPE_NUMERIC))
                return true;
        /* PostgreSQL casts boolean to and from integer, not bigint. */
        return (from == ROW_TYPE_BOOL && to == ROW_TYPE_INT4) ||
               (from == ROW_TYPE_INT4 && to == ROW_TYPE_BOOL);
}

int row_expr_literal(const Coord__Plan__Datum *lit, enum row_type type, struct row_datum *ret,
                     struct row_error *err)
{
        struct row_datum d;

        if (!lit)
                return rx_invalid(err, "literal without a value");
        switch (lit->value_case) {
        case COORD__PLAN__DATUM__VALUE_NULL_VALUE:
                *ret = ROW_DATUM_NULL;
                return 0;
        case COORD__PLAN__DATUM__VALUE_BOOL_VALUE:
                d = ROW_DATUM_BOOL(lit->bool_value);
                break;
        case COORD__PLAN__DATUM__VALUE_INT_VALUE:
                d = ROW_DATUM_INT(lit->int_value);
                break;
        case COORD__PLAN__DATUM__VALUE_TEXT_VALUE:
                if (lit->text_value.len > UINT32_MAX)
                        return rx_invalid(err, "text literal too long");
                d = ROW_DATUM_TEXT(lit->text_value.len ? (const char *)lit->text_value.data : "",
                                   (uint32_t)lit->text_value.len);
                break;
        case COORD__PLAN__DATUM__VALUE_NUMERIC_VALUE:
                if (!lit->numeric_value ||
                    row_numeric_parse(lit->numeric_value, strlen(lit->numeric_value), &d, NULL) < 0)
                        return rx_invalid(err, "malformed numeric literal");
                break;
        default:
                return rx_invalid(err, "literal without a value");
        }
        if (!row_datum_fits(&d, type))
                return rx_invalid(err, "literal does not match its type");
        *ret = d;
        return 0;
}

/* ---- Type checking. ---- */

static int check(const Coord__Plan__Expr *e, const enum row_type *input, size_t n_input,
                 unsigned depth, struct row_error *err);

int rx_check_args(const Coord__Plan__Call *c, size_t min, size_t max, int type,
                      const enum row_type *input, size_t n_input, unsigned depth,
                      struct row_error *err)
{
        if (c->n_args < min || c->n_args > max)
                return rx_invalid(err, "wrong number of arguments");
        for (size_t i = 0; i < c->n_args; i++) {
                int r = check(c->args[i], input, n_input, depth + 1, err);

                if (r < 0)
                        return r;
                if (type >= 0 && (int)c->args[i]->type != type)
                        return rx_invalid(err, "argument of the wrong type");
        }
        return 0;
}

/* Whether argument e is a literal of the given type (its value may still be NULL). */
static bool is_literal_of(const Coord__Plan__Expr *e, int type)
{
        return e->kind_case == COORD__PLAN__EXPR__KIND_LITERAL && (int)e->type == type;
}

/* CASE: (condition, result) pairs and the else; the conditions boolean, the results of
 * the result type (int4 and int8 mix, as in COALESCE). */
static int check_case(const Coord__Plan__Call *c, int t, const enum row_type *input,
                      size_t n_input, unsigned depth, struct row_error *err)
{
        int r = rx_check_args(c, 3, SIZE_MAX, -1, input, n_input, depth, err);

        if (r < 0)
                return r;
        if (c->n_args % 2 == 0)
                return rx_invalid(err, "CASE without its else");
        for (size_t i = 0; i < c->n_args; i++) {
                int at = (int)c->args[i]->type;
                bool cond = i % 2 == 0 && i + 1 < c->n_args;

                if (cond ? at != ROW_TYPE_BOOL
                         : at != t && !(rx_type_is_int(t) && rx_type_is_int(at)))
                        return rx_invalid(err, "argument of the wrong type");
        }
        return 0;
}

/* check_constraint(value, condition, constraint name, relation name) when cond, else
 * assert_not_null(value, column name, relation name): the value of the result type, the
 * condition boolean, the two names non-null text literals. */
static int check_named_assert(const Coord__Plan__Call *c, int t, bool cond, const enum row_type *input,
                              size_t n_input, unsigned depth, struct row_error *err)
{
        size_t names = cond ? 2 : 1;
        int r = rx_check_args(c, names + 2, names + 2, -1, input, n_input, depth, err);

        if (r < 0)
                return r;
        if ((int)c->args[0]->type != t || (cond && (int)c->args[1]->type != ROW_TYPE_BOOL))
                return rx_invalid(err, "argument of the wrong type");
        for (size_t i = names; i < names + 2; i++)
                if (!is_literal_of(c->args[i], ROW_TYPE_TEXT) ||
                    c->args[i]->literal->value_case != COORD__PLAN__DATUM__VALUE_TEXT_VALUE)
                        return rx_invalid(err, cond ? "a CHECK constraint without its names"
                                                    : "a NOT NULL check without its names");
        return 0;
}

/* varchar(value, n, explicit), bpchar(value, n, explicit): n a positive int4 literal,
 * explicit a boolean literal. */
static int check_varchar(const Coord__Plan__Call *c, int t, const enum row_type *input,
                         size_t n_input, unsigned depth, struct row_error *err)
{
        bool bp = c->func == COORD__PLAN__FUNC__FUNC_BPCHAR;
        int r = rx_check_args(c, 3, 3, -1, input, n_input, depth, err), arg;

        if (r < 0)
                return r;
        arg = (int)c->args[0]->type;
        if (t != (bp ? ROW_TYPE_BPCHAR : ROW_TYPE_TEXT) ||
            !(arg == ROW_TYPE_TEXT || (bp && arg == ROW_TYPE_BPCHAR)) ||
            !is_literal_of(c->args[1], ROW_TYPE_INT4) ||
            c->args[1]->literal->value_case != COORD__PLAN__DATUM__VALUE_INT_VALUE ||
            c->args[1]->literal->int_value < 1 ||
            !is_literal_of(c->args[2], ROW_TYPE_BOOL) ||
            c->args[2]->literal->value_case != COORD__PLAN__DATUM__VALUE_BOOL_VALUE)
                return rx_invalid(err, "varchar(n) without its length");
        return 0;
}

/* Whether call e (e->call set) is arithmetic on numeric values, which row-expr-numeric.c
 * checks and evaluates. */
static bool is_numeric_call(const Coord__Plan__Expr *e)
{
        const int f = (int)e->call->func;

        return (int)e->type == ROW_TYPE_NUMERIC &&
               (f == COORD__PLAN__FUNC__FUNC_NEG || f == COORD__PLAN__FUNC__FUNC_ADD ||
                f == COORD__PLAN__FUNC__FUNC_SUB || f == COORD__PLAN__FUNC__FUNC_MUL ||
                f == COORD__PLAN__FUNC__FUNC_DIV || f == COORD__PLAN__FUNC__FUNC_MOD ||
                f == COORD__PLAN__FUNC__FUNC_ABS);
}

/* What check() and eval() require of every node before they look at its kind: a depth
 * within ROW_EXPR_MAX_DEPTH (54001), a node, a valid type, and of a column node an index
 * below n_columns (the input's or the row's). */
static int node_valid(const Coord__Plan__Expr *e, size_t n_columns, unsigned depth,
                      struct row_error *err)
{
        if (depth >= ROW_EXPR_MAX_DEPTH)
                return too_deep(err);
        if (!e)
                return rx_invalid(err, "missing expression");
        if (!row_type_valid((int)e->type))
                return rx_invalid(err, "expression without a type");
        if (e->kind_case == COORD__PLAN__EXPR__KIND_COLUMN && e->column >= n_columns)
                return rx_invalid(err, "column index out of range");
        return 0;
}

static int check_call(const Coord__Plan__Expr *e, const enum row_type *input, size_t n_input,
                      unsigned depth, struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        int t = (int)e->type, r;

        if (!c)
                return rx_invalid(err, "call without a function");
        if (is_numeric_call(e))
                return rx_check_numeric_call(e, input, n_input, depth, err);
        switch (c->func) {
        case COORD__PLAN__FUNC__FUNC_NEG:
                if (!rx_type_is_int(t))
                        return rx_invalid(err, "arithmetic on a non-integer type");
                return rx_check_args(c, 1, 1, t, input, n_input, depth, err);
        ARITH2_FUNCS:
                if (!rx_type_is_int(t))
                        return rx_invalid(err, "arithmetic on a non-integer type");
                return rx_check_args(c, 2, 2, t, input, n_input, depth, err);
        COMPARE_FUNCS:
                if (t != ROW_TYPE_BOOL)
                        return rx_invalid(err, "comparison not of type boolean");
                r = rx_check_args(c, 2, 2, -1, input, n_input, depth, err);
                if (r < 0)
                        return r;
                if (c->args[0]->type != c->args[1]->type)
                        return rx_invalid(err, "comparison of different types");
                return 0;
        case COORD__PLAN__FUNC__FUNC_AND:
        case COORD__PLAN__FUNC__FUNC_OR:
                if (t != ROW_TYPE_BOOL)
                        return rx_invalid(err, "AND/OR not of type boolean");
                return rx_check_args(c, 1, SIZE_MAX, ROW_TYPE_BOOL, input, n_input, depth, err);
        case COORD__PLAN__FUNC__FUNC_NOT:
                if (t != ROW_TYPE_BOOL)
                        return rx_invalid(err, "NOT not of type boolean");
                return rx_check_args(c, 1, 1, ROW_TYPE_BOOL, input, n_input, depth, err);
        case COORD__PLAN__FUNC__FUNC_IS_NULL:
        case COORD__PLAN__FUNC__FUNC_IS_NOT_NULL:
                if (t != ROW_TYPE_BOOL)
                        return rx_invalid(err, "IS NULL not of type boolean");
                return rx_check_args(c, 1, 1, -1, input, n_input, depth, err);
        case COORD__PLAN__FUNC__FUNC_MZ_NOW:
                if (t != ROW_TYPE_INT8)
                        return rx_invalid(err, "mz_now() not of type bigint");
                return rx_check_args(c, 0, 0, -1, input, n_input, depth, err);
        case COORD__PLAN__FUNC__FUNC_CAST:
                r = rx_check_args(c, 1, 1, -1, input, n_input, depth, err);
                if (r < 0)
                        return r;
                if (!row_expr_cast_allowed((enum row_type)c->args[0]->type, (enum row_type)t))
                        return rx_invalid(err, "undefined cast");
                return 0;
        case COORD__PLAN__FUNC__FUNC_COALESCE:
        case COORD__PLAN__FUNC__FUNC_GREATEST:
        case COORD__PLAN__FUNC__FUNC_LEAST:
                /* Arguments of the result type; int4 and int8 mix (both are integers
                 * in a row, and the result type's range is checked). */
                r = rx_check_args(c, 1, SIZE_MAX, -1, input, n_input, depth, err);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < c->n_args; i++)
                        if ((int)c->args[i]->type != t &&
                            !(rx_type_is_int(t) && rx_type_is_int((int)c->args[i]->type)))
                                return rx_invalid(err, "argument of the wrong type");
                return 0;
        case COORD__PLAN__FUNC__FUNC_CASE:
                return check_case(c, t, input, n_input, depth, err);
        case COORD__PLAN__FUNC__FUNC_CONCAT:
        case COORD__PLAN__FUNC__FUNC_LOWER:
        case COORD__PLAN__FUNC__FUNC_UPPER:
                if (t != ROW_TYPE_TEXT)
                        return rx_invalid(err, "text function not of type text");
                return rx_check_args(c, c->func == COORD__PLAN__FUNC__FUNC_CONCAT ? 2 : 1,
                                  c->func == COORD__PLAN__FUNC__FUNC_CONCAT ? 2 : 1,
                                  ROW_TYPE_TEXT, input, n_input, depth, err);
        case COORD__PLAN__FUNC__FUNC_LIKE:
        case COORD__PLAN__FUNC__FUNC_ILIKE:
        case COORD__PLAN__FUNC__FUNC_REGEX_MATCH:
        case COORD__PLAN__FUNC__FUNC_REGEX_IMATCH:
                if (t != ROW_TYPE_BOOL)
                        return rx_invalid(err, "LIKE not of type boolean");
                /* A bpchar value matches with its padding, as PostgreSQL's bpcharlike(). */
                r = rx_check_args(c, 2, 2, -1, input, n_input, depth, err);
                if (r >= 0 && (((int)c->args[0]->type != ROW_TYPE_TEXT &&
                                (int)c->args[0]->type != ROW_TYPE_BPCHAR) ||
                               (int)c->args[1]->type != ROW_TYPE_TEXT))
                        r = rx_invalid(err, "argument of the wrong type");
                return r;
        case COORD__PLAN__FUNC__FUNC_ABS:
                if (!rx_type_is_int(t))
                        return rx_invalid(err, "abs() of a non-integer type");
                return rx_check_args(c, 1, 1, t, input, n_input, depth, err);
        case COORD__PLAN__FUNC__FUNC_LENGTH:
                if (t != ROW_TYPE_INT4)
                        return rx_invalid(err, "length() not of type integer");
                return rx_check_args(c, 1, 1, ROW_TYPE_TEXT, input, n_input, depth, err);
        case COORD__PLAN__FUNC__FUNC_SUBQUERY_TOO_MANY_ROWS:
                return rx_check_args(c, 0, 0, -1, input, n_input, depth, err);
        case COORD__PLAN__FUNC__FUNC_CHECK_CONSTRAINT:
                return check_named_assert(c, t, true, input, n_input, depth, err);
        case COORD__PLAN__FUNC__FUNC_VARCHAR:
                return check_varchar(c, t, input, n_input, depth, err);
        case COORD__PLAN__FUNC__FUNC_BPCHAR:
                return check_varchar(c, t, input, n_input, depth, err);
        case COORD__PLAN__FUNC__FUNC_ASSERT_NOT_NULL:
                return check_named_assert(c, t, false, input, n_input, depth, err);
        ARRAY_FUNCS:
                return rx_check_array_call(e, input, n_input, depth, err);
        NUMERIC_FUNCS:
                return rx_check_numeric_call(e, input, n_input, depth, err);
        default:
                return row_error_set(err, -EINVAL, "0A000", "plan function %d is not supported",
                                     (int)c->func);
        }
}

static int check(const Coord__Plan__Expr *e, const enum row_type *input, size_t n_input,
                 unsigned depth, struct row_error *err)
{
        struct row_datum d;
        int r;

        r = node_valid(e, n_input, depth, err);
        if (r < 0)
                return r;
        switch (e->kind_case) {
        case COORD__PLAN__EXPR__KIND_COLUMN:
                if ((int)input[e->column] != (int)e->type)
                        return rx_invalid(err, "column of the wrong type");
                return 0;
        case COORD__PLAN__EXPR__KIND_LITERAL:
                return row_expr_literal(e->literal, (enum row_type)e->type, &d, err);
        case COORD__PLAN__EXPR__KIND_CALL:
                return check_call(e, input, n_input, depth, err);
        default:
                return rx_invalid(err, "expression without a kind");
        }
}

int row_expr_check(const Coord__Plan__Expr *e, const enum row_type *input, size_t n_input,
                   struct row_error *err)
{
        return check(e, input, n_input, 0, err);
}

/* ---- Evaluation. ---- */

static int eval(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
                struct row_error *err);

static int out_of_range(struct row_error *err, int type)
{
        return row_error_set(err, -EINVAL, "22003", "%s out of range",
                             type == ROW_TYPE_INT4 ? "integer" : "bigint");
}

/* An integer result of the expression's type, or 22003. */
int rx_int_result(int64_t v, bool overflow, int type, struct row_datum *ret,
                      struct row_error *err)
{
        if (overflow || (type == ROW_TYPE_INT4 && (v < INT32_MIN || v > INT32_MAX)))
                return out_of_range(err, type);
        *ret = ROW_DATUM_INT(v);
        return 0;
}

/* Evaluate argument i of a call, checking that it exists. */
int rx_eval_arg(const Coord__Plan__Call *c, size_t i, const struct row_datum *row,
                    size_t n_row, const struct row_expr_ctx *ctx, unsigned depth,
                    struct row_datum *ret, struct row_error *err)
{
        if (i >= c->n_args)
                return rx_invalid(err, "wrong number of arguments");
        return eval(c->args[i], row, n_row, ctx, depth + 1, ret, err);
}

/* The first n (1 or 2) arguments of a function that is NULL when one of them is, the
 * caller having checked n_args: 1 with *ret NULL when one is, 0 with them in *x and *y
 * (*y untouched when n is 1), or an error. */
static int eval_args_strict(const Coord__Plan__Call *c, size_t n, const struct row_datum *row,
                            size_t n_row, const struct row_expr_ctx *ctx, unsigned depth,
                            struct row_datum *x, struct row_datum *y, struct row_datum *ret,
                            struct row_error *err)
{
        int r;

        assert(n == 1 || n == 2);
        r = rx_eval_arg(c, 0, row, n_row, ctx, depth, x, err);
        if (r >= 0 && n == 2)
                r = rx_eval_arg(c, 1, row, n_row, ctx, depth, y, err);
        if (r < 0)
                return r;
        if (x->kind == ROW_KIND_NULL || (n == 2 && y->kind == ROW_KIND_NULL)) {
                *ret = ROW_DATUM_NULL;
                return 1;
        }
        return 0;
}

/* The two arguments of a function that is NULL when either is: eval_args_strict() after
 * checking that there are two. */
static int eval_strict2(const Coord__Plan__Call *c, const struct row_datum *row, size_t n_row,
                        const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *x,
                        struct row_datum *y, struct row_datum *ret, struct row_error *err)
{
        if (c->n_args != 2)
                return rx_invalid(err, "wrong number of arguments");
        return eval_args_strict(c, 2, row, n_row, ctx, depth, x, y, ret, err);
}

static int eval_arith(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                      const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
                      struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        bool unary = c->func == COORD__PLAN__FUNC__FUNC_NEG;
        struct row_datum a, b = ROW_DATUM_INT(0);
        int64_t v = 0;
        bool of = false;
        int r;

        if (c->n_args != (unary ? 1u : 2u))
                return rx_invalid(err, "wrong number of arguments");
        if (!rx_type_is_int((int)e->type))
                return rx_invalid(err, "arithmetic on a non-integer type");
        r = eval_args_strict(c, c->n_args, row, n_row, ctx, depth, &a, &b, ret, err);
        if (r != 0)
                return r < 0 ? r : 0;
        if (a.kind != ROW_KIND_INT || b.kind != ROW_KIND_INT)
                return rx_invalid(err, "arithmetic on a non-integer value");
        switch (c->func) {
        case COORD__PLAN__FUNC__FUNC_NEG:
                of = __builtin_sub_overflow((int64_t)0, a.i, &v);
                break;
        case COORD__PLAN__FUNC__FUNC_ADD:
                of = __builtin_add_overflow(a.i, b.i, &v);
                break;
        case COORD__PLAN__FUNC__FUNC_SUB:
                of = __builtin_sub_overflow(a.i, b.i, &v);
                break;
        case COORD__PLAN__FUNC__FUNC_MUL:
                of = __builtin_mul_overflow(a.i, b.i, &v);
                break;
        case COORD__PLAN__FUNC__FUNC_DIV:
                if (b.i == 0)
                        return row_error_set(err, -EINVAL, "22012", "division by zero");
                /* INT64_MIN / -1 is the one quotient that does not fit. */
                of = b.i == -1 && a.i == INT64_MIN;
                v = of ? 0 : a.i / b.i;
                break;
        case COORD__PLAN__FUNC__FUNC_MOD:
                if (b.i == 0)
                        return row_error_set(err, -EINVAL, "22012", "division by zero");
                /* x % -1 is 0; computing INT64_MIN % -1 traps on x86. */
                v = b.i == -1 ? 0 : a.i % b.i;
                break;
        default:
                assert(!"not an arithmetic function");
                return rx_invalid(err, "not an arithmetic function");
        }
        return rx_int_result(v, of, (int)e->type, ret, err);
}

static int eval_compare(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                        const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
                        struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        struct row_datum a, b;
        int r, cmp;

        r = eval_strict2(c, row, n_row, ctx, depth, &a, &b, ret, err);
        if (r != 0)
                return r < 0 ? r : 0;
        if (a.kind != b.kind)
                return rx_invalid(err, "comparison of different kinds");
        if (row_type_is_array((int)c->args[0]->type)) {
                /* Not by bytes: {10} > {9} (row.h, "Arrays"). */
                if (!ctx || !ctx->arena)
                        return rx_invalid(err, "no arena for an array");
                r = row_array_compare((enum row_type)c->args[0]->type, &a, &b, ctx->arena, &cmp,
                                      err);
                if (r < 0)
                        return r;
        } else if (a.kind == ROW_KIND_NUMERIC)
                cmp = row_numeric_cmp(&a, &b);  /* by value: 1.5 = 1.50 */
        else
                cmp = row_datum_compare(&a, &b);
        return rx_compare_result(c->func, cmp, ret, err);
}

/* *ret = (cmp op 0) for a comparison function op. */
int rx_compare_result(int func, int cmp, struct row_datum *ret, struct row_error *err)
{
        bool v;

        switch (func) {
        case COORD__PLAN__FUNC__FUNC_EQ:
                v = cmp == 0;
                break;
        case COORD__PLAN__FUNC__FUNC_NE:
                v = cmp != 0;
                break;
        case COORD__PLAN__FUNC__FUNC_LT:
                v = cmp < 0;
                break;
        case COORD__PLAN__FUNC__FUNC_LE:
                v = cmp <= 0;
                break;
        case COORD__PLAN__FUNC__FUNC_GT:
                v = cmp > 0;
                break;
        case COORD__PLAN__FUNC__FUNC_GE:
                v = cmp >= 0;
                break;
        default:
                assert(!"not a comparison");
                return rx_invalid(err, "not a comparison");
        }
        *ret = ROW_DATUM_BOOL(v);
        return 0;
}

/* AND stops at FALSE, OR at TRUE; otherwise NULL wins over the neutral value. */
static int eval_andor(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                      const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
                      struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        bool stop = c->func == COORD__PLAN__FUNC__FUNC_OR;     /* the deciding value */
        bool saw_null = false;

        if (c->n_args < 1)
                return rx_invalid(err, "wrong number of arguments");
        for (size_t i = 0; i < c->n_args; i++) {
                struct row_datum a;
                int r = rx_eval_arg(c, i, row, n_row, ctx, depth, &a, err);

                if (r < 0)
                        return r;
                if (a.kind == ROW_KIND_NULL) {
                        saw_null = true;
                        continue;
                }
                if (a.kind != ROW_KIND_BOOL)
                        return rx_invalid(err, "AND/OR of a non-boolean value");
                if (a.b == stop) {
                        *ret = ROW_DATUM_BOOL(stop);
                        return 0;
                }
        }
        *ret = saw_null ? ROW_DATUM_NULL : ROW_DATUM_BOOL(!stop);
        return 0;
}

static int text_result(const struct row_expr_ctx *ctx, const char *s, size_t len,
                       struct row_datum *ret, struct row_error *err)
{
        char *p;

        if (!ctx || !ctx->arena)
                return rx_invalid(err, "no arena for a computed text");
        p = row_arena_alloc(ctx->arena, len ? len : 1);
        if (!p)
                return row_error_oom(err);
        memcpy(p, s, len);
        *ret = ROW_DATUM_TEXT(p, (uint32_t)len);
        return 0;
}

static int eval_cast(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                     const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
                     struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        int to = (int)e->type, r;
        struct row_datum a;
        char buf[ROW_TEXT_SCRATCH];

        if (c->n_args != 1)
                return rx_invalid(err, "wrong number of arguments");
        r = rx_eval_arg(c, 0, row, n_row, ctx, depth, &a, err);
        if (r < 0)
                return r;
        if (a.kind == ROW_KIND_NULL) {
                *ret = a;
                return 0;
        }
        if (a.kind == ROW_KIND_TEXT && row_type_is_array(to) &&
            !row_type_is_array((int)c->args[0]->type)) {
                if (!ctx || !ctx->arena)
                        return rx_invalid(err, "no arena for an array");
                return row_array_parse((enum row_type)to, a.text.ptr, a.text.len, ctx->arena, ret,
                                       err);
        }
        if (to == ROW_TYPE_NUMERIC || (int)c->args[0]->type == ROW_TYPE_NUMERIC)
                return rx_cast_numeric(&a, (int)c->args[0]->type, to, ctx, ret, err);
        if ((int)c->args[0]->type == ROW_TYPE_BPCHAR && to == ROW_TYPE_TEXT) {
                /* bpchar to text drops trailing spaces (PostgreSQL's rtrim1()). */
                while (a.text.len && a.text.ptr[a.text.len - 1] == ' ')
                        a.text.len--;
                *ret = a;
                return 0;
        }
        if (a.kind == ROW_KIND_TEXT && to != ROW_TYPE_TEXT && to != ROW_TYPE_BPCHAR &&
            !row_type_is_array(to))
                return row_datum_parse((enum row_type)to, a.text.ptr, a.text.len, ret, err);
        if (row_type_is_array(to)) {
                /* Identity: an array cast to its own type (row_expr_cast_allowed()). */
                *ret = a;
                return 0;
        }
        switch (to) {
        case ROW_TYPE_TEXT:
        case ROW_TYPE_BPCHAR:   /* unbounded bpchar: the text, unpadded */
                if (a.kind == ROW_KIND_TEXT) {
                        *ret = a;
                        return 0;
                }
                if (a.kind == ROW_KIND_BOOL)
                        /* boolean::text is 'true'/'false', unlike the output 't'/'f'. */
                        return text_result(ctx, a.b ? "true" : "false", a.b ? 4 : 5, ret, err);
                assert(a.kind == ROW_KIND_INT);
                r = snprintf(buf, sizeof(buf), "%lld", (long long)a.i);
                return text_result(ctx, buf, (size_t)r, ret, err);
        case ROW_TYPE_BOOL:
                if (a.kind == ROW_KIND_BOOL)
                        *ret = a;
                else
                        *ret = ROW_DATUM_BOOL(a.i != 0);
                return 0;
        case ROW_TYPE_INT4:
        case ROW_TYPE_INT8:
                if (a.kind == ROW_KIND_BOOL)
                        return rx_int_result(a.b, false, to, ret, err);
                return rx_int_result(a.i, false, to, ret, err);
        default:
                return rx_invalid(err, "cast to an unknown type");
        }
}

/* The length in bytes of the UTF-8 character starting at s (at most n); a stray byte
 * counts as one character, so a walk always moves forward. */
static size_t utf8_len(const char *s, size_t n)
{
        unsigned char c = (unsigned char)s[0];
        size_t l = c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF8 ? 4 : 1;

        return l < n ? l : n;
}

/* ---- Case mapping: lower(), upper(), ILIKE. ----
 * As PostgreSQL's in a UTF-8 database (its default): character by character through the
 * C library's towlower()/towupper() -- here under the "C.UTF-8" locale, the same on
 * every machine with this glibc, whatever the daemon's environment says.  Where that
 * locale is missing, ASCII letters only (PostgreSQL's "C" locale); one process, one
 * answer, and the adapter (folding) and the controller (evaluating) run on one machine. */

static locale_t utf8_locale;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;

static void utf8_locale_open(void)
{
        utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* Decode the character at s (n > 0 bytes): its code point and length, or -1 with length
 * 1 for a byte that starts no valid character (copied as it is). */
static int32_t utf8_decode(const unsigned char *s, size_t n, size_t *len)
{
        size_t l = utf8_len((const char *)s, n);
        int32_t c;

        *len = 1;
        if (l == 1)
                return s[0] < 0x80 ? s[0] : -1;
        if (l < (s[0] < 0xE0 ? 2u : s[0] < 0xF0 ? 3u : 4u))
                return -1;              /* cut short */
        c = s[0] & (l == 2 ? 0x1F : l == 3 ? 0x0F : 0x07);
        for (size_t i = 1; i < l; i++) {
                if ((s[i] & 0xC0) != 0x80)
                        return -1;
                c = (c << 6) | (s[i] & 0x3F);
        }
        if ((l == 2 && c < 0x80) || (l == 3 && c < 0x800) || (l == 4 && c < 0x10000) ||
            c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
                return -1;              /* overlong, out of range, a surrogate */
        *len = l;
        return c;
}

static size_t utf8_encode(int32_t c, unsigned char *out)
{
        if (c < 0x80) {
                out[0] = (unsigned char)c;
                return 1;
        }
        if (c < 0x800) {
                out[0] = (unsigned char)(0xC0 | (c >> 6));
                out[1] = (unsigned char)(0x80 | (c & 0x3F));
                return 2;
        }
        if (c < 0x10000) {
                out[0] = (unsigned char)(0xE0 | (c >> 12));
                out[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
                out[2] = (unsigned char)(0x80 | (c & 0x3F));
                return 3;
        }
        out[0] = (unsigned char)(0xF0 | (c >> 18));
        out[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
        out[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        out[3] = (unsigned char)(0x80 | (c & 0x3F));
        return 4;
}

static int32_t map_case(int32_t c, bool upper)
{
        wint_t m;

        if (c < 0x80 || !utf8_locale) {
                if (upper)
                        return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c;
                return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
        }
        m = upper ? towupper_l((wint_t)c, utf8_locale) : towlower_l((wint_t)c, utf8_locale);
        /* A mapping to a surrogate or beyond Unicode would not encode: keep c. */
        if (m > 0x10FFFF || (m >= 0xD800 && m <= 0xDFFF))
                return c;
        return (int32_t)m;
}

/* s[0..n) case-mapped into the arena. */
static int case_map(const struct row_expr_ctx *ctx, const char *s, size_t n, bool upper,
                    struct row_datum *ret, struct row_error *err)
{
        const unsigned char *u = (const unsigned char *)s;
        unsigned char tmp[4], *p;
        size_t out = 0, l;

        pthread_once(&utf8_once, utf8_locale_open);
        /* Two passes: a character's mapping may be longer or shorter than it (U+0131 ı
         * is two bytes, its upper case I one). */
        for (size_t i = 0; i < n; i += l) {
                int32_t c = utf8_decode(u + i, n - i, &l);

                out += c < 0 ? 1 : utf8_encode(map_case(c, upper), tmp);
        }
        if (out > UINT32_MAX)
                return row_error_set(err, -EINVAL, "54000", "string is too long");
        if (!ctx || !ctx->arena)
                return rx_invalid(err, "no arena for a computed text");
        p = row_arena_alloc(ctx->arena, out ? out : 1);
        if (!p)
                return row_error_oom(err);
        out = 0;
        for (size_t i = 0; i < n; i += l) {
                int32_t c = utf8_decode(u + i, n - i, &l);

                if (c < 0)
                        p[out++] = u[i];
                else
                        out += utf8_encode(map_case(c, upper), p + out);
        }
        *ret = ROW_DATUM_TEXT((const char *)p, (uint32_t)out);
        return 0;
}

/* LIKE, with PostgreSQL's rules (plan.proto, FUNC_LIKE).  The classic wildcard walk:
 * remember the last %, and when a literal or _ fails, let that % take one more
 * character and retry from just after it.  A later % supersedes an earlier one, since
 * whatever the earlier one could still absorb the later one can too, so the walk is
 * O(len(s) * len(p)) at worst and needs no stack. */
static bool like_match(const char *s, size_t n, const char *p, size_t m)
{
        size_t i = 0, j = 0, star_j = SIZE_MAX, star_i = 0;

        while (i < n) {
                if (j < m && p[j] == '%') {
                        while (j < m && p[j] == '%')
                                j++;
                        star_j = j;
                        star_i = i;
                        continue;
                }
                if (j < m && p[j] == '_') {
                        i += utf8_len(s + i, n - i);
                        j++;
                        continue;
                }
                if (j < m) {
                        /* A literal character, maybe escaped: compare its bytes. */
                        size_t k = j + (p[j] == '\\'), l;

                        assert(k < m);          /* checked: no trailing escape */
                        l = utf8_len(p + k, m - k);
                        if (l <= n - i) {
                                size_t b = 0;

                                while (b < l && s[i + b] == p[k + b])
                                        b++;
                                if (b == l) {
                                        i += l;
                                        j = k + l;
                                        continue;
                                }
                        }
                }
                if (star_j == SIZE_MAX)
                        return false;
                star_i += utf8_len(s + star_i, n - star_i);
                i = star_i;
                j = star_j;
        }
        while (j < m && p[j] == '%')
                j++;
        return j == m;
}

static int eval_like(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                     const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
                     struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        struct row_datum a, b;
        int r;

        r = eval_strict2(c, row, n_row, ctx, depth, &a, &b, ret, err);
        if (r != 0)
                return r < 0 ? r : 0;
        if (a.kind != ROW_KIND_TEXT || b.kind != ROW_KIND_TEXT)
                return rx_invalid(err, "LIKE of a non-text value");
        for (size_t j = 0; j < b.text.len; j++)
                if (b.text.ptr[j] == '\\' && ++j == b.text.len)
                        return row_error_set(err, -EINVAL, "22025",
                                             "LIKE pattern must not end with escape character");
        /* ILIKE is LIKE over both lowered, as PostgreSQL does for multibyte encodings
         * (lowering keeps %, _ and \\ as they are). */
        if (c->func == COORD__PLAN__FUNC__FUNC_ILIKE) {
                r = case_map(ctx, a.text.ptr, a.text.len, false, &a, err);
                if (r >= 0)
                        r = case_map(ctx, b.text.ptr, b.text.len, false, &b, err);
                if (r < 0)
                        return r;
        }
        *ret = ROW_DATUM_BOOL(like_match(a.text.ptr, a.text.len, b.text.ptr, b.text.len));
        return 0;
}

/* ---- Regular expressions: ~ and ~* (plan.proto, FUNC_REGEX_MATCH). ----
 * PostgreSQL's advanced regular expressions (AREs) are a superset of POSIX extended ones
 * (EREs); the C library compiles EREs.  A pattern is accepted only where both read it
 * the same way, so a pattern never silently means something else here:
 *   - a backslash followed by a letter is an ARE escape (\d \w \s \m \y \x41 ...) that
 *     an ERE reads differently or not at all;
 *   - inside a bracket expression an ARE takes a backslash as an escape, an ERE as
 *     itself;
 *   - (? starts an ARE lookaround, non-capturing group or embedded option; *? +? ??
 *     and {m,n}? are ARE non-greedy quantifiers; *** starts an ARE director;
 *     [[:<:]] and [[:>:]] are ARE word boundaries.
 * Those are 0A000.  Characters are UTF-8 code points (the "C.UTF-8" locale, as for
 * lower()); where that locale is missing, a non-ASCII pattern or text is 0A000 rather
 * than matched byte by byte.  A pattern is compiled at each evaluation: the plan is
 * const and shared, so there is no per-expression place for a cache (regcomp of a short
 * pattern costs microseconds). */

static int regex_refuse(struct row_error *err, const char *what)
{
        return row_error_set(err, -EINVAL, "0A000",
                             "regular expression %s is not supported", what);
}

/* 0 when pattern p[0..m) means the same as an ERE and as a PostgreSQL ARE. */
static int regex_check(const char *p, size_t m, struct row_error *err)
{
        if (m >= 3 && memcmp(p, "***", 3) == 0)
                return regex_refuse(err, "director ***");
        for (size_t i = 0; i < m; i++) {
                char c = p[i];

                if (c == '\\') {
                        if (i + 1 < m && ((p[i + 1] >= 'a' && p[i + 1] <= 'z') ||
                                          (p[i + 1] >= 'A' && p[i + 1] <= 'Z')))
                                return regex_refuse(err, "escape \\<letter>");
                        i++;            /* the escaped character is literal in both */
                        continue;
                }
                if (c == '(' && i + 1 < m && p[i + 1] == '?')
                        return regex_refuse(err, "syntax (?");
                if ((c == '*' || c == '+' || c == '?' || c == '}') && i + 1 < m &&
                    p[i + 1] == '?')
                        return regex_refuse(err, "non-greedy quantifier");
                if (c != '[')
                        continue;
                if (m - i >= 7 && (memcmp(p + i, "[[:<:]]", 7) == 0 ||
                                   memcmp(p + i, "[[:>:]]", 7) == 0))
                        return regex_refuse(err, "word boundary [[:<:]] / [[:>:]]");
                /* A bracket expression: a leading ^ and a leading ] are part of it;
                 * [: :], [. .] and [= =] are elements that may hold a ]. */
                i++;
                if (i < m && p[i] == '^')
                        i++;
                if (i < m && p[i] == ']')
                        i++;
                while (i < m && p[i] != ']') {
                        if (p[i] == '\\')
                                return regex_refuse(err, "backslash in a bracket expression");
                        if (p[i] == '[' && i + 1 < m &&
                            (p[i + 1] == ':' || p[i + 1] == '.' || p[i + 1] == '=')) {
                                char end = p[i + 1];

                                for (i += 2; i + 1 < m && !(p[i] == end && p[i + 1] == ']'); i++)
                                        ;
                                i++;            /* at the closing ] of the element */
                        }
                        i++;
                }
        }
        return 0;
}

static bool has_non_ascii(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)s[i] >= 0x80)
                        return true;
        return false;
}

static int eval_regex(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                      const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
                      struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        struct row_datum a, b;
        char *text = NULL, *pattern = NULL;
        locale_t old = (locale_t)0;
        bool compiled = false;
        regex_t re;
        int r, rc;

        r = eval_strict2(c, row, n_row, ctx, depth, &a, &b, ret, err);
        if (r != 0)
                return r < 0 ? r : 0;
        if (a.kind != ROW_KIND_TEXT || b.kind != ROW_KIND_TEXT)
                return rx_invalid(err, "regular expression match of a non-text value");
        r = regex_check(b.text.ptr, b.text.len, err);
        if (r < 0)
                return r;
        pthread_once(&utf8_once, utf8_locale_open);
        if (!utf8_locale && (has_non_ascii(a.text.ptr, a.text.len) ||
                             has_non_ascii(b.text.ptr, b.text.len)))
                return regex_refuse(err, "over non-ASCII text without the C.UTF-8 locale");
        text = strndup(a.text.ptr, a.text.len);
        pattern = strndup(b.text.ptr, b.text.len);
        if (!text || !pattern) {
                r = row_error_oom(err);
                goto out;
        }
        /* The calling thread's locale for these two calls only (uselocale is per thread). */
        if (utf8_locale)
                old = uselocale(utf8_locale);
        rc = regcomp(&re, pattern,
                     REG_EXTENDED | REG_NOSUB |
                             (c->func == COORD__PLAN__FUNC__FUNC_REGEX_IMATCH ? REG_ICASE : 0));
        if (rc == 0) {
                compiled = true;
                rc = regexec(&re, text, 0, NULL, 0);
        }
        if (utf8_locale)
                uselocale(old);
        if (!compiled) {
                char msg[128];

                regerror(rc, NULL, msg, sizeof(msg));
                r = rc == REG_ESPACE ? row_error_oom(err)
                                     : row_error_set(err, -EINVAL, "2201B",
                                                     "invalid regular expression: %s", msg);
                goto out;
        }
        regfree(&re);
        if (rc != 0 && rc != REG_NOMATCH) {
                r = row_error_set(err, -EINVAL, "2201B", "regular expression failed");
                goto out;
        }
        *ret = ROW_DATUM_BOOL(rc == 0);
        r = 0;
out:
        free(text);
        free(pattern);
        return r;
}

/* Text functions of one or two text arguments: ||, lower(), upper(), length(). */
static int eval_text(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                     const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
                     struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        bool concat = c->func == COORD__PLAN__FUNC__FUNC_CONCAT;
        struct row_datum a, b = ROW_DATUM_TEXT("", 0);
        size_t n = 0;
        char *p;
        int r;

        if (c->n_args != (concat ? 2u : 1u))
                return rx_invalid(err, "wrong number of arguments");
        r = eval_args_strict(c, c->n_args, row, n_row, ctx, depth, &a, &b, ret, err);
        if (r != 0)
                return r < 0 ? r : 0;
        if (a.kind != ROW_KIND_TEXT || b.kind != ROW_KIND_TEXT)
                return rx_invalid(err, "text function of a non-text value");
        if (c->func == COORD__PLAN__FUNC__FUNC_LENGTH) {
                for (size_t i = 0; i < a.text.len; i += utf8_len(a.text.ptr + i, a.text.len - i))
                        n++;
                /* Texts are shorter than 2^31 characters: a row is at most 1 GiB. */
                return rx_int_result((int64_t)n, false, ROW_TYPE_INT4, ret, err);
        }
        if (!concat)
                return case_map(ctx, a.text.ptr, a.text.len,
                                c->func == COORD__PLAN__FUNC__FUNC_UPPER, ret, err);
        if ((uint64_t)a.text.len + b.text.len > UINT32_MAX)
                return row_error_set(err, -EINVAL, "54000", "string is too long");
        if (!ctx || !ctx->arena)
                return rx_invalid(err, "no arena for a computed text");
        n = (size_t)a.text.len + b.text.len;
        p = row_arena_alloc(ctx->arena, n ? n : 1);
        if (!p)
                return row_error_oom(err);
        if (a.text.len)
                memcpy(p, a.text.ptr, a.text.len);
        if (b.text.len)
                memcpy(p + a.text.len, b.text.ptr, b.text.len);
        *ret = ROW_DATUM_TEXT(p, (uint32_t)n);
        return 0;
}

/* The common part of FUNC_VARCHAR and FUNC_BPCHAR (proto/plan.proto): evaluates (value,
 * n, explicit) and finds the prefix of at most n characters; characters past it must be
 * spaces unless the cast is explicit (22001 naming type).  Returns 1 when the value is
 * NULL (*ret set), else 0 with *a the value, *n_chars n, *off the prefix's bytes and *k
 * its characters. */
static int eval_fit_length(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                           const struct row_expr_ctx *ctx, unsigned depth, const char *type,
                           struct row_datum *a, int64_t *n_chars, size_t *off, int64_t *k,
                           struct row_datum *ret, struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        struct row_datum n, x;
        int r;

        *off = 0;
        *k = 0;
        if (c->n_args != 3)
                return rx_invalid(err, "wrong number of arguments");
        r = rx_eval_arg(c, 0, row, n_row, ctx, depth, a, err);
        if (r >= 0)
                r = rx_eval_arg(c, 1, row, n_row, ctx, depth, &n, err);
        if (r >= 0)
                r = rx_eval_arg(c, 2, row, n_row, ctx, depth, &x, err);
        if (r < 0)
                return r;
        if (a->kind == ROW_KIND_NULL) {
                *ret = ROW_DATUM_NULL;
                return 1;
        }
        if (a->kind != ROW_KIND_TEXT || n.kind != ROW_KIND_INT || n.i < 1 || x.kind != ROW_KIND_BOOL)
                return rx_invalid(err, "a length-limited text type without its length");
        while (*off < a->text.len && *k < n.i) {
                *off += utf8_len(a->text.ptr + *off, a->text.len - *off);
                (*k)++;
        }
        for (size_t i = *off; !x.b && i < a->text.len; i++)
                if (a->text.ptr[i] != ' ')
                        return row_error_set(err, -EINVAL, "22001", "value too long for type %s(%lld)",
                                             type, (long long)n.i);
        *n_chars = n.i;
        return 0;
}

/* FUNC_VARCHAR and FUNC_BPCHAR (proto/plan.proto): a prefix of the value, or 22001; a
 * bpchar (pad) is also padded with spaces to n characters. */
static int eval_fit_text(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                         const struct row_expr_ctx *ctx, unsigned depth, bool pad_to_n,
                         struct row_datum *ret, struct row_error *err)
{
        struct row_datum a;
        int64_t n = 0, k = 0;
        size_t off, pad;
        char *p;
        int r;

        r = eval_fit_length(e, row, n_row, ctx, depth, pad_to_n ? "character" : "character varying",
                            &a, &n, &off, &k, ret, err);
        if (r != 0)
                return r < 0 ? r : 0;
        if (!pad_to_n || k == n) {
                *ret = ROW_DATUM_TEXT(a.text.ptr, (uint32_t)off);
                return 0;
        }
        pad = (size_t)(n - k);
        if ((uint64_t)off + pad > UINT32_MAX)
                return row_error_set(err, -EINVAL, "54000", "string too long");
        if (!ctx || !ctx->arena)
                return rx_invalid(err, "no arena for a computed text");
        p = row_arena_alloc(ctx->arena, off + pad);
        if (!p)
                return row_error_oom(err);
        if (off)
                memcpy(p, a.text.ptr, off);
        memset(p + off, ' ', pad);
        *ret = ROW_DATUM_TEXT(p, (uint32_t)(off + pad));
        return 0;
}

/* CASE: the value after the first TRUE condition, or the else; nothing else is
 * evaluated (as COALESCE and AND/OR, so `CASE WHEN x = 0 THEN 0 ELSE 1 / x END` is safe). */
static int eval_case(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                     const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
                     struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        size_t pick;
        int r;

        if (c->n_args < 3 || c->n_args % 2 == 0)
                return rx_invalid(err, "wrong number of arguments");
        for (pick = 0; pick + 1 < c->n_args; pick += 2) {
                struct row_datum cond;

                r = rx_eval_arg(c, pick, row, n_row, ctx, depth, &cond, err);
                if (r < 0)
                        return r;
                if (cond.kind != ROW_KIND_NULL && cond.kind != ROW_KIND_BOOL)
                        return rx_invalid(err, "CASE condition of a non-boolean value");
                if (cond.kind == ROW_KIND_BOOL && cond.b) {
                        pick++;
                        break;
                }
        }
        r = rx_eval_arg(c, pick, row, n_row, ctx, depth, ret, err);
        if (r < 0)
                return r;
        /* An int4 value under an int8 CASE is fine; the reverse is range checked. */
        if (ret->kind == ROW_KIND_INT)
                return rx_int_result(ret->i, false, (int)e->type, ret, err);
        return 0;
}

/* check_constraint(value, condition, constraint name, relation name): the value, unless
 * the condition is false. */
static int eval_check_constraint(const Coord__Plan__Call *c, const struct row_datum *row,
                                 size_t n_row, const struct row_expr_ctx *ctx, unsigned depth,
                                 struct row_datum *ret, struct row_error *err)
{
        struct row_datum cond, name, rel;
        int r;

        if (c->n_args != 4)
                return rx_invalid(err, "wrong number of arguments");
        r = rx_eval_arg(c, 1, row, n_row, ctx, depth, &cond, err);
        if (r < 0)
                return r;
        if (cond.kind != ROW_KIND_BOOL && cond.kind != ROW_KIND_NULL)
                return rx_invalid(err, "a CHECK constraint that is not boolean");
        if (cond.kind == ROW_KIND_NULL || cond.b)
                return rx_eval_arg(c, 0, row, n_row, ctx, depth, ret, err);
        r = rx_eval_arg(c, 2, row, n_row, ctx, depth, &name, err);
        if (r >= 0)
                r = rx_eval_arg(c, 3, row, n_row, ctx, depth, &rel, err);
        if (r < 0)
                return r;
        if (name.kind != ROW_KIND_TEXT || rel.kind != ROW_KIND_TEXT)
                return rx_invalid(err, "a CHECK constraint without its names");
        return row_error_set(err, -EINVAL, "23514", "new row for relation \"%.*s\" violates "
                             "check constraint \"%.*s\"", (int)rel.text.len, rel.text.ptr,
                             (int)name.text.len, name.text.ptr);
}

/* assert_not_null(value, column name, relation name): the value, unless it is NULL. */
static int eval_assert_not_null(const Coord__Plan__Call *c, const struct row_datum *row,
                                size_t n_row, const struct row_expr_ctx *ctx, unsigned depth,
                                struct row_datum *ret, struct row_error *err)
{
        struct row_datum col, rel;
        int r;

        if (c->n_args != 3)
                return rx_invalid(err, "wrong number of arguments");
        r = rx_eval_arg(c, 0, row, n_row, ctx, depth, ret, err);
        if (r < 0 || ret->kind != ROW_KIND_NULL)
                return r;
        r = rx_eval_arg(c, 1, row, n_row, ctx, depth, &col, err);
        if (r >= 0)
                r = rx_eval_arg(c, 2, row, n_row, ctx, depth, &rel, err);
        if (r < 0)
                return r;
        if (col.kind != ROW_KIND_TEXT || rel.kind != ROW_KIND_TEXT)
                return rx_invalid(err, "a NOT NULL check without its names");
        return row_error_set(err, -EINVAL, "23502",
                             "null value in column \"%.*s\" of relation \"%.*s\" "
                             "violates not-null constraint",
                             (int)col.text.len, col.text.ptr, (int)rel.text.len,
                             rel.text.ptr);
}

/* COALESCE: the first argument that is not NULL; the rest are not evaluated. */
static int eval_coalesce(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                         const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
                         struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        struct row_datum a;
        int r;

        for (size_t i = 0; i < c->n_args; i++) {
                r = rx_eval_arg(c, i, row, n_row, ctx, depth, &a, err);
                if (r < 0)
                        return r;
                if (a.kind != ROW_KIND_NULL) {
                        if (a.kind == ROW_KIND_INT)
                                return rx_int_result(a.i, false, (int)e->type, ret, err);
                        *ret = a;
                        return 0;
                }
        }
        *ret = ROW_DATUM_NULL;
        return 0;
}

/* FUNC_GREATEST, FUNC_LEAST (proto/plan.proto): every argument evaluated, NULLs
 * skipped, the others compared as eval_compare() compares. */
static int eval_minmax(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                       const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
                       struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        bool greatest = c->func == COORD__PLAN__FUNC__FUNC_GREATEST;
        struct row_datum best = ROW_DATUM_NULL, a;
        int r, cmp;

        for (size_t i = 0; i < c->n_args; i++) {
                r = rx_eval_arg(c, i, row, n_row, ctx, depth, &a, err);
                if (r < 0)
                        return r;
                if (a.kind == ROW_KIND_NULL)
                        continue;
                if (best.kind == ROW_KIND_NULL) {
                        best = a;
                        continue;
                }
                if (a.kind != best.kind)
                        return rx_invalid(err, "GREATEST/LEAST of different kinds");
                if (row_type_is_array((int)e->type)) {
                        if (!ctx || !ctx->arena)
                                return rx_invalid(err, "no arena for an array");
                        r = row_array_compare((enum row_type)e->type, &a, &best, ctx->arena, &cmp, err);
                        if (r < 0)
                                return r;
                } else if (a.kind == ROW_KIND_NUMERIC) {
                        cmp = row_numeric_cmp(&a, &best);
                } else {
                        cmp = row_datum_compare(&a, &best);
                }
                if (greatest ? cmp > 0 : cmp < 0)
                        best = a;
        }
        if (best.kind == ROW_KIND_INT)
                return rx_int_result(best.i, false, (int)e->type, ret, err);
        *ret = best;
        return 0;
}

static int eval_call(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                     const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
                     struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        struct row_datum a;
        int r;

        if (!c)
                return rx_invalid(err, "call without a function");
        if (is_numeric_call(e))
                return rx_eval_numeric(e, row, n_row, ctx, depth, ret, err);
        switch (c->func) {
        case COORD__PLAN__FUNC__FUNC_NEG:
        ARITH2_FUNCS:
                return eval_arith(e, row, n_row, ctx, depth, ret, err);
        COMPARE_FUNCS:
                return eval_compare(e, row, n_row, ctx, depth, ret, err);
        case COORD__PLAN__FUNC__FUNC_AND:
        case COORD__PLAN__FUNC__FUNC_OR:
                return eval_andor(e, row, n_row, ctx, depth, ret, err);
        case COORD__PLAN__FUNC__FUNC_NOT:
                if (c->n_args != 1)
                        return rx_invalid(err, "wrong number of arguments");
                r = rx_eval_arg(c, 0, row, n_row, ctx, depth, &a, err);
                if (r < 0)
                        return r;
                if (a.kind != ROW_KIND_NULL && a.kind != ROW_KIND_BOOL)
                        return rx_invalid(err, "NOT of a non-boolean value");
                *ret = a.kind == ROW_KIND_NULL ? a : ROW_DATUM_BOOL(!a.b);
                return 0;
        case COORD__PLAN__FUNC__FUNC_IS_NULL:
        case COORD__PLAN__FUNC__FUNC_IS_NOT_NULL:
                if (c->n_args != 1)
                        return rx_invalid(err, "wrong number of arguments");
                r = rx_eval_arg(c, 0, row, n_row, ctx, depth, &a, err);
                if (r < 0)
                        return r;
                *ret = ROW_DATUM_BOOL((a.kind == ROW_KIND_NULL) ==
                                      (c->func == COORD__PLAN__FUNC__FUNC_IS_NULL));
                return 0;
        case COORD__PLAN__FUNC__FUNC_VARCHAR:
                return eval_fit_text(e, row, n_row, ctx, depth, false, ret, err);
        case COORD__PLAN__FUNC__FUNC_BPCHAR:
                return eval_fit_text(e, row, n_row, ctx, depth, true, ret, err);
        case COORD__PLAN__FUNC__FUNC_CHECK_CONSTRAINT:
                return eval_check_constraint(c, row, n_row, ctx, depth, ret, err);
        case COORD__PLAN__FUNC__FUNC_SUBQUERY_TOO_MANY_ROWS:
                if (c->n_args != 0)
                        return rx_invalid(err, "wrong number of arguments");
                return row_error_set(err, -EINVAL, "21000", "more than one row returned by a "
                                     "subquery used as an expression");
        case COORD__PLAN__FUNC__FUNC_MZ_NOW:
                if (c->n_args != 0)
                        return rx_invalid(err, "wrong number of arguments");
                if (!ctx || !ctx->has_now)
                        return row_error_set(err, -EINVAL, "XX000",
                                             "mz_now() evaluated without a timestamp");
                return rx_int_result((int64_t)ctx->now, ctx->now > INT64_MAX, ROW_TYPE_INT8, ret,
                                  err);
        case COORD__PLAN__FUNC__FUNC_CAST:
                return eval_cast(e, row, n_row, ctx, depth, ret, err);
        case COORD__PLAN__FUNC__FUNC_COALESCE:
                return eval_coalesce(e, row, n_row, ctx, depth, ret, err);
        case COORD__PLAN__FUNC__FUNC_GREATEST:
        case COORD__PLAN__FUNC__FUNC_LEAST:
                return eval_minmax(e, row, n_row, ctx, depth, ret, err);
        case COORD__PLAN__FUNC__FUNC_CASE:
                return eval_case(e, row, n_row, ctx, depth, ret, err);
        case COORD__PLAN__FUNC__FUNC_CONCAT:
        case COORD__PLAN__FUNC__FUNC_LOWER:
        case COORD__PLAN__FUNC__FUNC_UPPER:
        case COORD__PLAN__FUNC__FUNC_LENGTH:
                return eval_text(e, row, n_row, ctx, depth, ret, err);
        case COORD__PLAN__FUNC__FUNC_LIKE:
        case COORD__PLAN__FUNC__FUNC_ILIKE:
                return eval_like(e, row, n_row, ctx, depth, ret, err);
        case COORD__PLAN__FUNC__FUNC_REGEX_MATCH:
        case COORD__PLAN__FUNC__FUNC_REGEX_IMATCH:
                return eval_regex(e, row, n_row, ctx, depth, ret, err);
        case COORD__PLAN__FUNC__FUNC_ASSERT_NOT_NULL:
                return eval_assert_not_null(c, row, n_row, ctx, depth, ret, err);
        ARRAY_FUNCS:
                return rx_eval_array(e, row, n_row, ctx, depth, ret, err);
        NUMERIC_FUNCS:
                return rx_eval_numeric(e, row, n_row, ctx, depth, ret, err);
        case COORD__PLAN__FUNC__FUNC_ABS:
                if (c->n_args != 1)
                        return rx_invalid(err, "wrong number of arguments");
                r = rx_eval_arg(c, 0, row, n_row, ctx, depth, &a, err);
                if (r < 0 || a.kind == ROW_KIND_NULL) {
                        if (r >= 0)
                                *ret = a;
                        return r;
                }
                if (a.kind != ROW_KIND_INT)
                        return rx_invalid(err, "abs() of a non-integer value");
                if (a.i == INT64_MIN)           /* -a.i would overflow */
                        return out_of_range(err, (int)e->type);
                return rx_int_result(a.i < 0 ? -a.i : a.i, false, (int)e->type, ret, err);
        default:
                return row_error_set(err, -EINVAL, "0A000", "plan function %d is not supported",
                                     (int)c->func);
        }
}

static int eval(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
                struct row_error *err)
{
        int r;

        r = node_valid(e, n_row, depth, err);
        if (r < 0)
                return r;
        switch (e->kind_case) {
        case COORD__PLAN__EXPR__KIND_COLUMN:
                *ret = row[e->column];
                return 0;
        case COORD__PLAN__EXPR__KIND_LITERAL:
                return row_expr_literal(e->literal, (enum row_type)e->type, ret, err);
        case COORD__PLAN__EXPR__KIND_CALL:
                return eval_call(e, row, n_row, ctx, depth, ret, err);
        default:
                return rx_invalid(err, "expression without a kind");
        }
}

int row_expr_eval(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                  const struct row_expr_ctx *ctx, struct row_datum *ret, struct row_error *err)
{
        return eval(e, row, n_row, ctx, 0, ret, err);
}

int row_expr_eval_predicate(const Coord__Plan__Expr *e, const struct row_datum *row,
                            size_t n_row, const struct row_expr_ctx *ctx, bool *ret,
                            struct row_error *err)
{
        struct row_datum d;
        int r = eval(e, row, n_row, ctx, 0, &d, err);

        if (r < 0)
                return r;
        if (d.kind != ROW_KIND_NULL && d.kind != ROW_KIND_BOOL)
                return rx_invalid(err, "predicate of a non-boolean value");
        *ret = d.kind == ROW_KIND_BOOL && d.b;
        return 0;
}
