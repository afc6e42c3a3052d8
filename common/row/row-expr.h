/* row-expr.h -- scalar expressions of proto/plan.proto over datums: type checking and
 * evaluation with SQL semantics.
 *
 * Who calls it: the adapter's planner folds constant expressions with it (INSERT
 * values, AS OF, literals in WHERE), and the controller's engine evaluates every Map and
 * Filter expression with it.  One implementation means the adapter can never fold a
 * constant to something the controller would have computed differently.
 *
 * Semantics (PostgreSQL's):
 *   - NULL in, NULL out for arithmetic, comparisons and casts;
 *   - AND/OR/NOT are three-valued; AND and OR evaluate left to right and stop at the
 *     first FALSE (AND) or TRUE (OR), so `false AND 1/0 = 1` is FALSE;
 *   - int4 and int8 arithmetic fail with 22003 on overflow ("integer out of range" /
 *     "bigint out of range"), division and modulo by zero with 22012;
 *   - casts follow PostgreSQL's cast table for our four types, arrays to and from text
 *     (row_expr_cast_allowed());
 *   - CASE and COALESCE evaluate only what they return, like AND/OR;
 *   - LIKE/ILIKE, ~/~*, ||, lower(), upper(), length() and abs() as plan.proto states them
 *     (characters are UTF-8 code points; case mapping is glibc's under C.UTF-8, as
 *     PostgreSQL's in a UTF-8 database, or ASCII's where that locale is missing).
 *
 * Plans arrive over the wire, so row_expr_eval() trusts nothing: a column index out of
 * range, a wrong argument count or kind, an unknown function or nesting deeper than
 * ROW_EXPR_MAX_DEPTH is an error (XX000, 0A000 or 54001), never a crash.  row_expr_check()
 * additionally verifies the declared types, once per plan.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.pb-c.h"
#include "row.h"

/* Deeper expressions are refused (54001) rather than risking the stack. */
#define ROW_EXPR_MAX_DEPTH 1024

struct row_expr_ctx {
        uint64_t now;              /* mz_now(): the statement's logical timestamp */
        bool has_now;              /* false: mz_now() cannot be evaluated (constant folding) */
        struct row_arena *arena;   /* texts computed during evaluation (casts to text) */
};

/* Is an explicit cast from one type to another defined (identity included)? */
bool row_expr_cast_allowed(enum row_type from, enum row_type to);

/* Check that `e` is well formed and well typed over an input row of the given column
 * types: columns in range and of the declared type, literals of their type, argument
 * counts and types per function.  0 or -EINVAL with err (XX000 "invalid plan: ...",
 * 0A000 for an unknown function, 54001 too deep). */
int row_expr_check(const Coord__Plan__Expr *e, const enum row_type *input, size_t n_input,
                   struct row_error *err);

/* Evaluate `e` over a decoded row.  *ret may point into `row`'s texts, the plan's
 * literals or ctx->arena.  0, -EINVAL with err (a SQL error such as 22003 or 22012, or a
 * malformed plan) or -ENOMEM. */
int row_expr_eval(const Coord__Plan__Expr *e, const struct row_datum *row, size_t n_row,
                  const struct row_expr_ctx *ctx, struct row_datum *ret, struct row_error *err);

/* A Filter predicate: evaluates `e` and sets *ret to true only for TRUE (FALSE and NULL
 * drop the row). */
int row_expr_eval_predicate(const Coord__Plan__Expr *e, const struct row_datum *row,
                            size_t n_row, const struct row_expr_ctx *ctx, bool *ret,
                            struct row_error *err);

/* The datum of a plan literal, checked against its type; texts point into the plan. */
int row_expr_literal(const Coord__Plan__Datum *lit, enum row_type type, struct row_datum *ret,
                     struct row_error *err);

/* Can a column of type t be an index key that a lookup reads by (bool, int4, int8, text:
 * equal encodings are equal values)? */
bool row_key_type(int t);

/* The key that plan fixes for the index read by `Get gid` whose key columns are cols[n]:
 * every Get of gid sits under a chain of Filters whose conjuncts hold `column = literal`
 * for each key column (one type throughout) and all fix the same values.  1 with the
 * encoded key (malloc'ed, row_encode()), 0 when it fixes none, -ENOMEM. */
int row_plan_key(const Coord__Plan__Relation *plan, uint64_t gid, const uint32_t *cols, size_t n,
                 uint8_t **ret_key, size_t *ret_len);
