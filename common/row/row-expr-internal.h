/* row-expr-internal.h -- what row-expr.c shares with row-expr-array.c, the array
 * functions (row.h, "Arrays"; proto/plan.proto FUNC_ARRAY ..).  Not for other modules. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.pb-c.h"
#include "row-expr.h"
#include "row.h"

/* The array functions' case labels (rx_check_array_call(), rx_eval_array()). */
#define ARRAY_FUNCS                                                                          \
        case COORD__PLAN__FUNC__FUNC_ARRAY:                                                 \
        case COORD__PLAN__FUNC__FUNC_ANY:                                                   \
        case COORD__PLAN__FUNC__FUNC_ALL:                                                   \
        case COORD__PLAN__FUNC__FUNC_SUBSCRIPT:                                             \
        case COORD__PLAN__FUNC__FUNC_ARRAY_TO_STRING:                                       \
        case COORD__PLAN__FUNC__FUNC_ARRAY_LENGTH:                                          \
        case COORD__PLAN__FUNC__FUNC_ARRAY_LOWER:                                           \
        case COORD__PLAN__FUNC__FUNC_ARRAY_UPPER:                                           \
        case COORD__PLAN__FUNC__FUNC_CARDINALITY

/* XX000 "invalid plan: what". */
int rx_invalid(struct row_error *err, const char *what);
bool rx_type_is_int(int t);
/* Check c's argument count (min..max) and each argument (of `type` unless it is < 0). */
int rx_check_args(const Coord__Plan__Call *c, size_t min, size_t max, int type,
               const enum row_type *input, size_t n_input, unsigned depth, struct row_error *err);
/* An integer of `type`, or 22003 when overflow or out of int4's range. */
int rx_int_result(int64_t v, bool overflow, int type, struct row_datum *ret, struct row_error *err);
/* Evaluate argument i of c (an error when there is none). */
int rx_eval_arg(const Coord__Plan__Call *c, size_t i, const struct row_datum *row, size_t n_row,
             const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
             struct row_error *err);
/* *ret = (cmp op 0) for a comparison function op (FUNC_EQ .. FUNC_GE). */
int rx_compare_result(int func, int cmp, struct row_datum *ret, struct row_error *err);

int rx_check_array_call(const Coord__Plan__Expr *e, const enum row_type *input, size_t n_input,
                     unsigned depth, struct row_error *err);
int rx_eval_array(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
               const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
               struct row_error *err);

/* Numeric (row-expr-numeric.c): the calls of a numeric result (arithmetic, abs, round,
 * trunc, ceil, floor, numeric(p, s)), and casts to and from numeric. */
#define NUMERIC_FUNCS                                                                        \
        case COORD__PLAN__FUNC__FUNC_ROUND:                                                 \
        case COORD__PLAN__FUNC__FUNC_TRUNC:                                                 \
        case COORD__PLAN__FUNC__FUNC_CEIL:                                                  \
        case COORD__PLAN__FUNC__FUNC_FLOOR:                                                 \
        case COORD__PLAN__FUNC__FUNC_NUMERIC_TYPMOD

int rx_check_numeric_call(const Coord__Plan__Expr *e, const enum row_type *input,
                          size_t n_input, unsigned depth, struct row_error *err);
int rx_eval_numeric(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                    const struct row_expr_ctx *ctx, unsigned depth, struct row_datum *ret,
                    struct row_error *err);
/* The cast of a non-NULL datum a of type `from` to `to` where either is numeric. */
int rx_cast_numeric(const struct row_datum *a, int from, int to, const struct row_expr_ctx *ctx,
                    struct row_datum *ret, struct row_error *err);
