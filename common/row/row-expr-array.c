/* row-expr-array.c -- the array functions of the expression evaluator: type checking and
 * evaluation of proto/plan.proto's FUNC_ARRAY .. FUNC_CARDINALITY over the canonical
 * array texts of row-array.c.  Same rules as row-expr.c: plans arrive over the wire, so a
 * malformed call is an error (XX000), never a crash.
 */
#include <assert.h>
#include <string.h>

#include "row-expr-internal.h"

/* An element of an array of type `array`: its element type, or an integer where the
 * elements are integers (int4 and int8 mix, the range checked at evaluation). */
static bool element_fits(int array, int type)
{
        int elem = (int)row_type_element((enum row_type)array);

        return type == elem || (rx_type_is_int(elem) && rx_type_is_int(type));
}

int rx_check_array_call(const Coord__Plan__Expr *e, const enum row_type *input,
                            size_t n_input, unsigned depth, struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        int t = (int)e->type, r;
        const Coord__Plan__Expr *op;

        switch (c->func) {
        case COORD__PLAN__FUNC__FUNC_ARRAY:
                if (!row_type_is_array(t))
                        return rx_invalid(err, "ARRAY not of an array type");
                r = rx_check_args(c, 0, SIZE_MAX, -1, input, n_input, depth, err);
                for (size_t i = 0; r >= 0 && i < c->n_args; i++)
                        if (!element_fits(t, (int)c->args[i]->type))
                                return rx_invalid(err, "argument of the wrong type");
                return r;
        case COORD__PLAN__FUNC__FUNC_ANY:
        case COORD__PLAN__FUNC__FUNC_ALL:
                r = rx_check_args(c, 3, 3, -1, input, n_input, depth, err);
                if (r < 0)
                        return r;
                op = c->args[2];
                if (t != ROW_TYPE_BOOL || !row_type_is_array((int)c->args[1]->type) ||
                    !element_fits((int)c->args[1]->type, (int)c->args[0]->type) ||
                    op->kind_case != COORD__PLAN__EXPR__KIND_LITERAL ||
                    (int)op->type != ROW_TYPE_INT4 ||
                    op->literal->value_case != COORD__PLAN__DATUM__VALUE_INT_VALUE ||
                    op->literal->int_value < COORD__PLAN__FUNC__FUNC_EQ ||
                    op->literal->int_value > COORD__PLAN__FUNC__FUNC_GE)
                        return rx_invalid(err, "ANY/ALL without an array and a comparison");
                return 0;
        case COORD__PLAN__FUNC__FUNC_SUBSCRIPT:
                r = rx_check_args(c, 2, 2, -1, input, n_input, depth, err);
                if (r >= 0 && (!row_type_is_array((int)c->args[0]->type) ||
                               t != (int)row_type_element((enum row_type)c->args[0]->type) ||
                               !rx_type_is_int((int)c->args[1]->type)))
                        return rx_invalid(err, "subscript of a non-array");
                return r;
        case COORD__PLAN__FUNC__FUNC_ARRAY_TO_STRING:
                r = rx_check_args(c, 2, 3, -1, input, n_input, depth, err);
                if (r < 0)
                        return r;
                if (t != ROW_TYPE_TEXT || !row_type_is_array((int)c->args[0]->type))
                        return rx_invalid(err, "array_to_string() of a non-array");
                for (size_t i = 1; i < c->n_args; i++)
                        if ((int)c->args[i]->type != ROW_TYPE_TEXT)
                                return rx_invalid(err, "argument of the wrong type");
                return 0;
        case COORD__PLAN__FUNC__FUNC_CARDINALITY:
        default:
                r = rx_check_args(c, c->func == COORD__PLAN__FUNC__FUNC_CARDINALITY ? 1 : 2,
                               c->func == COORD__PLAN__FUNC__FUNC_CARDINALITY ? 1 : 2, -1, input,
                               n_input, depth, err);
                if (r >= 0 && (t != ROW_TYPE_INT4 || !row_type_is_array((int)c->args[0]->type) ||
                               (c->n_args == 2 && (int)c->args[1]->type != ROW_TYPE_INT4)))
                        return rx_invalid(err, "array function of a non-array");
                return r;
        }
}

/* ---- Arrays (row.h, "Arrays"; plan.proto FUNC_ARRAY ..). ---- */

/* ARRAY[...]: the elements in the arena, then their canonical text. */
static int eval_array_ctor(const Coord__Plan__Expr *e, const struct row_datum *row,
                           size_t n_row, const struct row_expr_ctx *ctx, unsigned depth,
                           struct row_datum *ret, struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        int elem = (int)row_type_element((enum row_type)e->type);
        struct row_datum *v = row_arena_alloc(ctx->arena, (c->n_args ? c->n_args : 1) * sizeof(*v));

        if (!v)
                return row_error_oom(err);
        for (size_t i = 0; i < c->n_args; i++) {
                int r = rx_eval_arg(c, i, row, n_row, ctx, depth, &v[i], err);

                if (r >= 0 && v[i].kind == ROW_KIND_INT)
                        r = rx_int_result(v[i].i, false, elem, &v[i], err);
                if (r < 0)
                        return r;
        }
        return row_array_build((enum row_type)e->type, v, c->n_args, ctx->arena, ret, err);
}

/* x op ANY/ALL (array), three-valued (plan.proto FUNC_ANY). */
static int eval_any_all(const Coord__Plan__Call *c, const struct row_datum *row, size_t n_row,
                        const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
                        struct row_error *err)
{
        bool any = c->func == COORD__PLAN__FUNC__FUNC_ANY, saw_null = false;
        struct row_datum x, arr, *el, holds;
        size_t n;
        int r;

        if (c->n_args != 3 || !c->args[2] ||
            c->args[2]->kind_case != COORD__PLAN__EXPR__KIND_LITERAL || !c->args[2]->literal ||
            c->args[2]->literal->value_case != COORD__PLAN__DATUM__VALUE_INT_VALUE ||
            c->args[2]->literal->int_value < COORD__PLAN__FUNC__FUNC_EQ ||
            c->args[2]->literal->int_value > COORD__PLAN__FUNC__FUNC_GE || !c->args[1])
                return rx_invalid(err, "ANY/ALL without its comparison");
        r = rx_eval_arg(c, 0, row, n_row, ctx, depth, &x, err);
        if (r >= 0)
                r = rx_eval_arg(c, 1, row, n_row, ctx, depth, &arr, err);
        if (r < 0)
                return r;
        if (arr.kind == ROW_KIND_NULL) {
                *ret = ROW_DATUM_NULL;
                return 0;
        }
        r = row_array_elements((enum row_type)c->args[1]->type, &arr, ctx->arena, &el, &n, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                if (x.kind == ROW_KIND_NULL || el[i].kind == ROW_KIND_NULL) {
                        saw_null = true;
                        continue;
                }
                if (x.kind != el[i].kind)
                        return rx_invalid(err, "comparison of different kinds");
                r = rx_compare_result((int)c->args[2]->literal->int_value,
                                   row_datum_compare(&x, &el[i]), &holds, err);
                if (r < 0)
                        return r;
                if (holds.b == any) {
                        *ret = ROW_DATUM_BOOL(any);
                        return 0;
                }
        }
        *ret = saw_null ? ROW_DATUM_NULL : ROW_DATUM_BOOL(!any);
        return 0;
}

static int eval_array_to_string(const Coord__Plan__Call *c, const struct row_datum *row,
                                size_t n_row, const struct row_expr_ctx *ctx, unsigned depth,
                                struct row_datum *ret, struct row_error *err)
{
        struct row_datum arr, delim, nul = ROW_DATUM_NULL, *el;
        size_t n, size = 0, at = 0;
        char *p = NULL;
        int r;

        r = rx_eval_arg(c, 0, row, n_row, ctx, depth, &arr, err);
        if (r >= 0)
                r = rx_eval_arg(c, 1, row, n_row, ctx, depth, &delim, err);
        if (r >= 0 && c->n_args == 3)
                r = rx_eval_arg(c, 2, row, n_row, ctx, depth, &nul, err);
        if (r < 0)
                return r;
        if (arr.kind == ROW_KIND_NULL || delim.kind == ROW_KIND_NULL) {
                *ret = ROW_DATUM_NULL;
                return 0;
        }
        r = row_array_elements((enum row_type)c->args[0]->type, &arr, ctx->arena, &el, &n, err);
        if (r < 0)
                return r;
        for (size_t pass = 0; pass < 2; pass++) {
                bool first = true;

                for (size_t i = 0; i < n; i++) {
                        char scratch[ROW_TEXT_SCRATCH];
                        const char *s;
                        size_t len;

                        if (row_datum_format(&el[i], scratch, &s, &len) == 1) {
                                if (nul.kind == ROW_KIND_NULL)
                                        continue;
                                s = nul.text.ptr;
                                len = nul.text.len;
                        }
                        if (!first && pass)
                                memcpy(p + at, delim.text.ptr, delim.text.len);
                        if (!first)
                                at += delim.text.len;
                        if (pass && len)
                                memcpy(p + at, s, len);
                        at += len;
                        first = false;
                }
                if (pass == 0) {
                        size = at;
                        at = 0;
                        p = row_arena_alloc(ctx->arena, size ? size : 1);
                        if (!p)
                                return row_error_oom(err);
                }
        }
        assert(at == size);
        if (size > UINT32_MAX)
                return row_error_set(err, -EINVAL, "54000", "string too long");
        *ret = ROW_DATUM_TEXT(p, (uint32_t)size);
        return 0;
}

int rx_eval_array(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                      const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
                      struct row_error *err)
{
        const Coord__Plan__Call *c = e->call;
        struct row_datum arr, i = ROW_DATUM_INT(1), *el;
        size_t n;
        int r;

        if (!ctx || !ctx->arena)
                return rx_invalid(err, "no arena for an array");
        switch (c->func) {
        case COORD__PLAN__FUNC__FUNC_ARRAY:
                return eval_array_ctor(e, row, n_row, ctx, depth, ret, err);
        case COORD__PLAN__FUNC__FUNC_ANY:
        case COORD__PLAN__FUNC__FUNC_ALL:
                return eval_any_all(c, row, n_row, ctx, depth, ret, err);
        case COORD__PLAN__FUNC__FUNC_ARRAY_TO_STRING:
                if (c->n_args < 2 || c->n_args > 3)
                        return rx_invalid(err, "wrong number of arguments");
                return eval_array_to_string(c, row, n_row, ctx, depth, ret, err);
        default:
                break;
        }
        /* (array [, int]) -> an element or an int4. */
        if (c->n_args < 1 || c->n_args > 2)
                return rx_invalid(err, "wrong number of arguments");
        r = rx_eval_arg(c, 0, row, n_row, ctx, depth, &arr, err);
        if (r >= 0 && c->n_args == 2)
                r = rx_eval_arg(c, 1, row, n_row, ctx, depth, &i, err);
        if (r < 0)
                return r;
        *ret = ROW_DATUM_NULL;
        if (arr.kind == ROW_KIND_NULL || i.kind == ROW_KIND_NULL)
                return 0;
        if (i.kind != ROW_KIND_INT)
                return rx_invalid(err, "array index that is not an integer");
        r = row_array_elements((enum row_type)c->args[0]->type, &arr, ctx->arena, &el, &n, err);
        if (r < 0)
                return r;
        switch (c->func) {
        case COORD__PLAN__FUNC__FUNC_SUBSCRIPT:
                if (i.i >= 1 && (uint64_t)i.i <= n)
                        *ret = el[i.i - 1];
                return 0;
        case COORD__PLAN__FUNC__FUNC_CARDINALITY:
                return rx_int_result((int64_t)n, false, ROW_TYPE_INT4, ret, err);
        case COORD__PLAN__FUNC__FUNC_ARRAY_LENGTH:
        case COORD__PLAN__FUNC__FUNC_ARRAY_UPPER:
        case COORD__PLAN__FUNC__FUNC_ARRAY_LOWER:
                if (n == 0 || i.i != 1)
                        return 0;
                return rx_int_result(c->func == COORD__PLAN__FUNC__FUNC_ARRAY_LOWER ? 1 : (int64_t)n,
                                  false, ROW_TYPE_INT4, ret, err);
        default:
                return rx_invalid(err, "not an array function");
        }
}

