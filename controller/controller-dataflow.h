/* controller-dataflow.h -- the controller's incremental compute engine (issue 4): a plan
 * of proto/plan.proto maintained under updates of its inputs, and the in-memory
 * arrangement that serves index reads.
 *
 * Timestamps are u64 and totally ordered, which makes this much simpler than
 * differential dataflow: a dataflow processes its input updates time by time, in
 * increasing order, and every stateful operator keeps only its current accumulated state
 * (no history).  For each time t the deltas at t flow through the operators bottom-up
 * (the plan is a tree, so post-order is a topological order), then the operators fold
 * them into their state.  The output at t is the change of the plan's result between
 * "everything before t" and "everything up to t", consolidated per row.  So the
 * accumulated output at every processed time equals the plan evaluated over the
 * accumulated inputs at that time (DESIGN I9); tests/compute/test-dataflow.c checks
 * exactly this against a naive evaluator.
 *
 * Operators:
 *   Get, Constant     leaves; a Constant's rows appear at as_of;
 *   Filter/Map/Project  linear, compiled into one MFP by eval_chain_new();
 *   Union, Negate     linear;
 *   Distinct          count per row; emits when a count crosses 0;
 *   Reduce            per group: count, per aggregate non-NULL count, 128-bit sum and
 *                     a value multiset (min/max, exact under retractions);
 *   Join              both sides arranged by key: out = dA |x| B_old + A_new |x| dB;
 *   TopK              count per input row and the window emitted last; at a time where
 *                     the input changed, the window is selected again from all input
 *                     rows (O(input)) and the difference emitted
 *                     (controller-dataflow-ops.c note 7).
 *
 * mz_now() evaluates to the time being processed, for the updates at that time only: a
 * linear operator is applied to deltas, so a predicate over mz_now() is not re-evaluated
 * for older rows as time passes (temporal filters are not maintained).
 *
 * Errors.  A malformed plan fails dataflow_new() (XX000, 0A000).  An evaluation error
 * (22003, 22012, ...) or a negative count inside Distinct, Reduce or TopK (XX000, data
 * corruption) fails dataflow_step() and poisons the dataflow: every later call returns
 * the same error, as SQLite's pager does after an I/O error.
 *
 * Threading: none inside; a dataflow or arrangement is used by one thread at a time.
 */
#pragma once

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "controller-eval.h"
#include "plan.pb-c.h"
#include "row/row.h"

/* ---- Dataflows. ---- */

struct dataflow;        /* opaque */

/* Validate and build a dataflow from a plan (the plan must outlive it; borrowed).  as_of:
 * the first time it computes; updates at times < as_of are treated as at as_of.
 * 0 or -EINVAL with err (XX000 malformed plan, 0A000 unknown operator/function), -ENOMEM. */
int dataflow_new(const Coord__Plan__Relation *plan, uint64_t as_of, struct dataflow **ret,
                 struct row_error *err);
struct dataflow *dataflow_free(struct dataflow *df);   /* NULL ok, returns NULL */

size_t dataflow_arity(const struct dataflow *df);
const enum row_type *dataflow_types(const struct dataflow *df);
/* The distinct collection ids the plan Gets, ascending; input i = dataflow_input_id(df, i). */
size_t dataflow_n_inputs(const struct dataflow *df);
uint64_t dataflow_input_id(const struct dataflow *df, size_t i);
uint64_t dataflow_as_of(const struct dataflow *df);
/* Every time < frontier has been processed; starts at as_of. */
uint64_t dataflow_frontier(const struct dataflow *df);

/* Buffer updates of input i.  Times < as_of become as_of.  A time < dataflow_frontier()
 * (already processed) is a caller bug: -EINVAL (err XX000).  Rows are checked against
 * the Get's column_types (XX000 on mismatch).  Copies what it keeps.  On an error nothing
 * of the call is kept. */
int dataflow_push(struct dataflow *df, size_t input, const struct eval_update *u, size_t n,
                  struct row_error *err);

/* Process every buffered update with time < frontier in increasing time order and append
 * the output changes (row, time, diff) to out: consolidated per (row, time), in time
 * order.  frontier <= dataflow_frontier() is a no-op.  mz_now() evaluates to the time
 * being processed.  On an evaluation error (22003, 22012, ...) returns -EINVAL with err
 * and appends nothing; the dataflow is then poisoned: every later call returns the same
 * error.  -ENOMEM (53200) poisons it too. */
int dataflow_step(struct dataflow *df, uint64_t frontier, struct eval_batch *out,
                  struct row_error *err);

/* Bound what the dataflow may hold (a peek's; controller-dataflow.c note 6): its
 * buffered input, its operators' state and the deltas of the time being processed,
 * counted approximately.  Passing it fails dataflow_push() (nothing of the call kept)
 * or dataflow_step() (poisoned) with -E2BIG and err 53200 naming the limit in MB.
 * 0: no bound and nothing counted (the default). */
void dataflow_set_memory_limit(struct dataflow *df, size_t bytes);

/* Stop a bounded dataflow from another thread (a peek in the peek thread whose reader
 * went; controller-dataflow.c note 6): once *flag is true, dataflow_step() fails where
 * it checks the memory limit -- after every node, and in a Join at every emitted row --
 * with -ECANCELED and err 57014, poisoned.  Only with a memory limit set; the flag
 * must outlive the dataflow's steps.  NULL: never stopped (the default). */
void dataflow_set_cancel(struct dataflow *df, const atomic_bool *flag);
/* Stop the same way (57014, "statement timeout") once now_ns() passes deadline_ns,
 * read at one check in 256; a write's evaluation on the controller's loop, which no
 * other thread can cancel (TableWrite.eval_timeout_ms).  Only with a memory limit set. */
int dataflow_set_deadline(struct dataflow *df, uint64_t deadline_ns);     /* 0 or -ENOMEM */

/* Memory accounting for status lines: bytes of state held (arrangements, groups,
 * buffered input). */
size_t dataflow_state_bytes(const struct dataflow *df);

/* ---- Arrangements: the in-memory, time-varying multiset behind an index. ----
 *
 * The base is a hash map row -> count holding the sum of every update at a time <= since;
 * the log holds the updates at times > since, sorted by time.  The contents at t are
 * base + the log prefix at times <= t, so a read costs O(base + log), and compaction
 * folds a log prefix into the base, costing what it folds. */

struct arrangement;

int arrangement_new(uint64_t since, struct arrangement **ret);
struct arrangement *arrangement_free(struct arrangement *a);
/* Add updates (any time >= since; times < since -> -EINVAL and nothing is added); those
 * at since go to the base at once. */
int arrangement_insert(struct arrangement *a, const struct eval_batch *updates);
void arrangement_set_upper(struct arrangement *a, uint64_t upper);      /* only forward */
uint64_t arrangement_since(const struct arrangement *a);
uint64_t arrangement_upper(const struct arrangement *a);
/* Advance since (only forward -- an earlier since is a no-op -- and at most upper, else
 * -EINVAL): fold every update at time <= since into the base and consolidate.
 * Amortized: cost proportional to what is folded, not to the whole base. */
int arrangement_compact(struct arrangement *a, uint64_t since);
/* Contents at t (since <= t < upper, else -EDOM below since / -EAGAIN at or above upper):
 * emit(row, len, count) for each row with positive count; negative -> -EUCLEAN.  Rows
 * come in no particular order.  An emit error stops the read and is returned. */
int arrangement_read(const struct arrangement *a, uint64_t t, eval_emit_fn emit, void *ud);
/* Keyed (before any insert): the base also links its rows per value of the columns
 * cols of rows of `arity` columns, for arrangement_read_key().  -EINVAL when not empty
 * or already keyed. */
int arrangement_set_keys(struct arrangement *a, const uint32_t *cols, size_t n, size_t arity);
bool arrangement_keyed(const struct arrangement *a, const uint32_t **ret_cols, size_t *ret_n);
/* As arrangement_read(), only the rows whose key columns encode (row_encode()) to
 * key: O(those rows in the base + the log).  -EINVAL when not keyed. */
int arrangement_read_key(const struct arrangement *a, uint64_t t, const void *key, size_t klen,
                         eval_emit_fn emit, void *ud);
/* Every live base row on exactly its key's list: 0, else -EUCLEAN (tests). */
int arrangement_check_keys(const struct arrangement *a);
size_t arrangement_rows(const struct arrangement *a);   /* rows in the base */
size_t arrangement_updates(const struct arrangement *a); /* base rows + logged updates */
size_t arrangement_bytes(const struct arrangement *a);
