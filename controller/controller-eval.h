/* controller-eval.h -- the controller's query engine: validate a proto/plan.proto plan
 * once, then run it over rows, either as a one-shot read (a peek) or update by update.
 *
 * Issue 3 plans are a linear chain: Project / Map / Filter nodes over one leaf, a Get (a
 * collection at the peek's timestamp) or a Constant.  A chain compiles into one
 * map-filter-project step list (Materialize's MFP) that decodes an input row once,
 * evaluates the steps over datums and encodes the output once.  Because every step maps
 * one input row to at most one output row, the chain is linear over multisets:
 *
 *     apply(sum of (row, time, diff)) = sum of (apply(row), time, diff)
 *
 * so eval_plan_apply() over a batch of updates is exactly what a dataflow needs for
 * Filter/Map/Project (issue 4 puts it in front of joins, reduces and arrangements), and
 * eval_peek() is the same function fed with a snapshot and consolidated.
 *
 * Trust.  Plans and stored rows arrive from other processes, so nothing is assumed:
 * eval_plan_new() checks every column index, type and function (row_expr_check()), and
 * rows are checked against the leaf's types as they are read.  A bad plan or row is an
 * error (XX000 / 0A000), never a crash.  An evaluation error in any row (22003, 22012)
 * fails the whole peek, as it fails a PostgreSQL query.  Issue 4's dataflows will route
 * such errors to an error collection instead.
 *
 * Threading: a struct eval_plan is immutable after eval_plan_new() and may be run by
 * several threads at once; batches are not shared.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.pb-c.h"
#include "row/row.h"

/* ---- Batches of updates. ---- */

struct eval_update {
        const uint8_t *row;     /* row encoding; owned by the batch that holds it */
        size_t len;
        uint64_t time;
        int64_t diff;
};

struct eval_batch {
        struct eval_update *updates;
        size_t n, cap;
        struct row_arena bytes;         /* the rows' bytes */
};

#define EVAL_BATCH_INIT ((struct eval_batch){ .bytes = ROW_ARENA_INIT })

void eval_batch_done(struct eval_batch *b);
/* Forget the updates, keep the memory. */
void eval_batch_clear(struct eval_batch *b);
/* Room for one more update (the array grows by doubling).  0 or -ENOMEM. */
int eval_batch_reserve(struct eval_batch *b);
/* Append a copy of (row, time, diff).  -ENOMEM. */
int eval_batch_push(struct eval_batch *b, const void *row, size_t len, uint64_t time,
                    int64_t diff);
/* Sort by (row bytes, time), sum the diffs of equal (row, time), drop zero sums.
 * -EOVERFLOW if a sum does not fit in 64 bits (the batch is then unchanged). */
int eval_batch_consolidate(struct eval_batch *b);

/* ---- Plans. ---- */

struct eval_plan;       /* opaque, immutable once built */

/* Validate and compile a plan.  The plan must outlive the eval_plan (expressions and
 * constant rows are borrowed).  0, or -EINVAL with err (XX000 for a malformed plan,
 * 0A000 for an operator or function this engine does not run yet), -ENOMEM. */
int eval_plan_new(const Coord__Plan__Relation *rel, struct eval_plan **ret,
                  struct row_error *err);
/* Compile only the Filter/Map/Project chain at the top of `rel` (at least one node), over
 * the output of the first node below it that is none of these -- any operator, which the
 * caller runs itself -- whose columns are input_types[0..n_input).  The rows later given
 * to eval_plan_apply() are the caller's own (already checked against their types), so
 * they are decoded but not checked again.  eval_plan_input() is 0.  Errors as
 * eval_plan_new(). */
int eval_chain_new(const Coord__Plan__Relation *rel, const enum row_type *input_types,
                   size_t n_input, struct eval_plan **ret, struct row_error *err);
struct eval_plan *eval_plan_free(struct eval_plan *p);

/* Output columns. */
size_t eval_plan_arity(const struct eval_plan *p);
const enum row_type *eval_plan_types(const struct eval_plan *p);
/* The collection the plan reads, or 0 for a plan over a Constant. */
uint64_t eval_plan_input(const struct eval_plan *p);

/* ---- Running. ---- */

/* Called by a snapshot for each (row, diff) it holds; returns 0 or a negative errno,
 * which the snapshot must stop at and return. */
typedef int (*eval_emit_fn)(void *emit_userdata, const void *row, size_t len, int64_t diff);

struct eval_source_ops {
        /* Emit the contents of collection `id` as of `ts`: every row with the sum of its
         * diffs at times <= ts (consolidated or not).  Returns 0, an emit error as is, or
         * its own -errno (e.g. -ENOENT for an unknown collection). */
        int (*snapshot)(void *userdata, uint64_t id, uint64_t ts, eval_emit_fn emit,
                        void *emit_userdata);
};

/* A one-shot read: run the plan over its input at `ts` (which is also mz_now()) and
 * append the consolidated result, (row, ts, diff) with diff > 0, to `out`.  0, or
 * -EINVAL with err (SQL errors from evaluation; XX000 for a malformed stored row or a
 * negative count in the result), -ENOMEM, or the snapshot's -errno (err: XX000). */
int eval_peek(const struct eval_plan *p, uint64_t ts, const struct eval_source_ops *src,
              void *userdata, struct eval_batch *out, struct row_error *err);

/* The incremental form: map updates of the plan's input through its Filter/Map/Project
 * steps, appending (row', time, diff) for every row that passes, unconsolidated.  `now`
 * is the value of mz_now().  Errors as eval_peek(). */
int eval_plan_apply(const struct eval_plan *p, const struct eval_update *in, size_t n,
                    uint64_t now, struct eval_batch *out, struct row_error *err);
