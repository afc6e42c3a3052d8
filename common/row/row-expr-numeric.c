/* row-expr-numeric.c -- the evaluator's numeric functions (proto/plan.proto FUNC_ROUND
 * .. FUNC_NUMERIC_TYPMOD, and NEG .. MOD and ABS of a numeric result) and casts to and
 * from numeric.  The arithmetic itself is row-numeric.c's; here are the plan's shapes:
 * argument types are checked once by rx_check_numeric_call() and trusted nowhere. */
#include "row-expr-internal.h"

#include <string.h>

static bool is_int_literal(const Coord__Plan__Expr *e)
{
        return e->kind_case == COORD__PLAN__EXPR__KIND_LITERAL && (int)e->type == ROW_TYPE_INT4 &&
               e->literal && e->literal->value_case == COORD__PLAN__DATUM__VALUE_INT_VALUE;
}

/* How many arguments numeric function func takes: 1 for NEG, ABS, CEIL and FLOOR, 3 for
 * NUMERIC_TYPMOD, 2 for the others (rx_check_numeric_call() rejects what is not one). */
static size_t numeric_arity(int func)
{
        switch (func) {
        case COORD__PLAN__FUNC__FUNC_NEG:
        case COORD__PLAN__FUNC__FUNC_ABS:
        case COORD__PLAN__FUNC__FUNC_CEIL:
        case COORD__PLAN__FUNC__FUNC_FLOOR:
                return 1;
        case COORD__PLAN__FUNC__FUNC_NUMERIC_TYPMOD:
                return 3;
        default:
                return 2;
        }
}

int rx_check_numeric_call(const Coord__Plan__Expr *e, const enum row_type *input,
                          size_t n_input, unsigned depth, struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        size_t n;
        int r;

        if ((int)e->type != ROW_TYPE_NUMERIC)
                return rx_invalid(err, "numeric function not of type numeric");
        switch (c->func) {
        case COORD__PLAN__FUNC__FUNC_NEG:
        case COORD__PLAN__FUNC__FUNC_ABS:
        case COORD__PLAN__FUNC__FUNC_CEIL:
        case COORD__PLAN__FUNC__FUNC_FLOOR:
        case COORD__PLAN__FUNC__FUNC_ADD:
        case COORD__PLAN__FUNC__FUNC_SUB:
        case COORD__PLAN__FUNC__FUNC_MUL:
        case COORD__PLAN__FUNC__FUNC_DIV:
        case COORD__PLAN__FUNC__FUNC_MOD:
                n = numeric_arity((int)c->func);
                return rx_check_args(c, n, n, ROW_TYPE_NUMERIC, input, n_input, depth, err);
        case COORD__PLAN__FUNC__FUNC_ROUND:
        case COORD__PLAN__FUNC__FUNC_TRUNC:
                r = rx_check_args(c, 2, 2, -1, input, n_input, depth, err);
                if (r < 0)
                        return r;
                if ((int)c->args[0]->type != ROW_TYPE_NUMERIC ||
                    (int)c->args[1]->type != ROW_TYPE_INT4)
                        return rx_invalid(err, "argument of the wrong type");
                return 0;
        case COORD__PLAN__FUNC__FUNC_NUMERIC_TYPMOD:
                r = rx_check_args(c, 3, 3, -1, input, n_input, depth, err);
                if (r < 0)
                        return r;
                if ((int)c->args[0]->type != ROW_TYPE_NUMERIC || !is_int_literal(c->args[1]) ||
                    !is_int_literal(c->args[2]) || c->args[1]->literal->int_value < 1 ||
                    c->args[1]->literal->int_value > ROW_NUMERIC_MAX_PRECISION ||
                    c->args[2]->literal->int_value < 0 ||
                    c->args[2]->literal->int_value > c->args[1]->literal->int_value)
                        return rx_invalid(err, "numeric(p, s) without its precision and scale");
                return 0;
        default:
                return rx_invalid(err, "not a numeric function");
        }
}

/* Arguments 0..n-1 of c; 1 with *ret NULL when one of them is NULL (strict). */
static int eval_args(const Coord__Plan__Call *c, size_t n, const struct row_datum *row,
                     size_t n_row, const struct row_expr_ctx *ctx, unsigned depth,
                     struct row_datum *args, struct row_datum *ret, struct row_error *err)
{
        bool null = false;

        if (c->n_args != n)
                return rx_invalid(err, "wrong number of arguments");
        for (size_t i = 0; i < n; i++) {
                int r = rx_eval_arg(c, i, row, n_row, ctx, depth, &args[i], err);

                if (r < 0)
                        return r;
                null |= args[i].kind == ROW_KIND_NULL;
        }
        if (null) {
                *ret = ROW_DATUM_NULL;
                return 1;
        }
        if (args[0].kind != ROW_KIND_NUMERIC)
                return rx_invalid(err, "numeric function of a non-numeric value");
        for (size_t i = 1; i < n; i++)
                if (args[i].kind != (c->func == COORD__PLAN__FUNC__FUNC_ROUND ||
                                     c->func == COORD__PLAN__FUNC__FUNC_TRUNC ||
                                     c->func == COORD__PLAN__FUNC__FUNC_NUMERIC_TYPMOD
                                             ? ROW_KIND_INT : ROW_KIND_NUMERIC))
                        return rx_invalid(err, "numeric function of a value of the wrong kind");
        return 0;
}

int rx_eval_numeric(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                    const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
                    struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        struct row_datum a[3];
        int r;

        if ((int)e->type != ROW_TYPE_NUMERIC)
                return rx_invalid(err, "numeric function not of type numeric");
        r = eval_args(c, numeric_arity((int)c->func), row, n_row, ctx, depth, a, ret, err);
        if (r != 0)
                return r < 0 ? r : 0;
        switch (c->func) {
        case COORD__PLAN__FUNC__FUNC_NEG:
                *ret = row_numeric_make(-row_numeric_coef(&a[0]), a[0].num.scale);
                return 0;
        case COORD__PLAN__FUNC__FUNC_ABS: {
                __int128 v = row_numeric_coef(&a[0]);

                *ret = row_numeric_make(v < 0 ? -v : v, a[0].num.scale);
                return 0;
        }
        case COORD__PLAN__FUNC__FUNC_CEIL:
        case COORD__PLAN__FUNC__FUNC_FLOOR:
                return row_numeric_ceil_floor(&a[0], c->func == COORD__PLAN__FUNC__FUNC_CEIL,
                                              ret, err);
        case COORD__PLAN__FUNC__FUNC_ADD:
                return row_numeric_add(&a[0], &a[1], ret, err);
        case COORD__PLAN__FUNC__FUNC_SUB:
                return row_numeric_sub(&a[0], &a[1], ret, err);
        case COORD__PLAN__FUNC__FUNC_MUL:
                return row_numeric_mul(&a[0], &a[1], ret, err);
        case COORD__PLAN__FUNC__FUNC_DIV:
                return row_numeric_div(&a[0], &a[1], ret, err);
        case COORD__PLAN__FUNC__FUNC_MOD:
                return row_numeric_mod(&a[0], &a[1], ret, err);
        case COORD__PLAN__FUNC__FUNC_ROUND:
        case COORD__PLAN__FUNC__FUNC_TRUNC:
                return row_numeric_round(&a[0], a[1].i, c->func == COORD__PLAN__FUNC__FUNC_TRUNC,
                                         ret, err);
        case COORD__PLAN__FUNC__FUNC_NUMERIC_TYPMOD:
                if (a[1].i < 1 || a[1].i > ROW_NUMERIC_MAX_PRECISION || a[2].i < 0 ||
                    a[2].i > a[1].i)
                        return rx_invalid(err, "numeric(p, s) without its precision and scale");
                return row_numeric_typmod(&a[0], (unsigned)a[1].i, (unsigned)a[2].i, ret, err);
        default:
                return rx_invalid(err, "not a numeric function");
        }
}

int rx_cast_numeric(const struct row_datum *a, int from, int to, const struct row_expr_ctx *ctx,
                    struct row_datum *ret, struct row_error *err)
{
        char buf[ROW_TEXT_SCRATCH];
        size_t len;
        char *p;

        if (from == ROW_TYPE_NUMERIC && a->kind != ROW_KIND_NUMERIC)
                return rx_invalid(err, "numeric cast of a non-numeric value");
        if (to == ROW_TYPE_NUMERIC) {
                if (a->kind == ROW_KIND_NUMERIC) {
                        *ret = *a;
                        return 0;
                }
                if (a->kind == ROW_KIND_INT) {
                        *ret = row_numeric_from_int(a->i);
                        return 0;
                }
                if (a->kind == ROW_KIND_TEXT)
                        return row_numeric_parse(a->text.ptr, a->text.len, ret, err);
                return rx_invalid(err, "cast to numeric of a value of the wrong kind");
        }
        if (rx_type_is_int(to))
                return row_numeric_to_int(a, (enum row_type)to, ret, err);
        if (to != ROW_TYPE_TEXT)
                return rx_invalid(err, "undefined cast");
        len = row_numeric_format(a, buf);
        if (!ctx || !ctx->arena)
                return rx_invalid(err, "no arena for a computed text");
        p = row_arena_alloc(ctx->arena, len);
        if (!p)
                return row_error_oom(err);
        memcpy(p, buf, len);
        *ret = ROW_DATUM_TEXT(p, (uint32_t)len);
        return 0;
}
