/* controller-eval.c -- plan validation, MFP compilation and evaluation
 * (controller-eval.h).
 *
 * A compiled plan is its leaf plus a list of steps, innermost first.  Running a row:
 *
 *     slots[0..leaf arity)  <- row_decode(input row), checked against the leaf's types
 *     for each step:
 *       FILTER   every predicate TRUE, or the row is dropped
 *       MAP      slots[width++] <- expr(slots[0..width))   (in order)
 *       PROJECT  slots <- slots[outputs]                    (via the scratch copy)
 *     output    <- row_encode(slots[0..width))
 *
 * eval_plan_new() computes every step's input width and types, so at run time every
 * column index is known to be in range and `slots` (max_width datums) never overflows.
 * Texts computed by casts live in a per-run arena that is reset after each row is
 * encoded; the row bytes themselves are copied into the output batch's arena.
 */
#include "controller-eval.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "row/row-expr.h"
#include "util.h"

/* ---- Batches. ---- */

void eval_batch_done(struct eval_batch *b)
{
        free(b->updates);
        row_arena_done(&b->bytes);
        *b = EVAL_BATCH_INIT;
}

void eval_batch_clear(struct eval_batch *b)
{
        b->n = 0;
        row_arena_reset(&b->bytes);
}

int eval_batch_reserve(struct eval_batch *b)
{
        struct eval_update *u;
        size_t cap;

        if (b->n < b->cap)
                return 0;
        cap = b->cap ? 2 * b->cap : 64;
        u = realloc(b->updates, cap * sizeof(*u));
        if (!u)
                return -ENOMEM;
        b->updates = u;
        b->cap = cap;
        return 0;
}

int eval_batch_push(struct eval_batch *b, const void *row, size_t len, uint64_t time,
                    int64_t diff)
{
        uint8_t *copy;

        if (eval_batch_reserve(b) < 0)
                return -ENOMEM;
        copy = row_arena_alloc(&b->bytes, len ? len : 1);
        if (!copy)
                return -ENOMEM;
        if (len)
                memcpy(copy, row, len);
        b->updates[b->n++] = (struct eval_update){ copy, len, time, diff };
        return 0;
}

static int update_compare(const void *x, const void *y)
{
        const struct eval_update *a = x, *b = y;
        int c = memcmp(a->row, b->row, a->len < b->len ? a->len : b->len);

        if (c)
                return c;
        if (a->len != b->len)
                return a->len < b->len ? -1 : 1;
        return (a->time > b->time) - (a->time < b->time);
}

int eval_batch_consolidate(struct eval_batch *b)
{
        size_t out = 0;

        if (b->n == 0)
                return 0;
        /* Already consolidated -- strictly ascending, no zero diff -- is common: a
         * peek's Get hands on storage_read()'s output, which is sorted by row.  One
         * pass of compares instead of a merge sort (half of the dataflow's time in a
         * 100,000-row peek, page faults of qsort's scratch included). */
        for (size_t i = 0;; i++) {
                if (b->updates[i].diff == 0)
                        break;
                if (i + 1 == b->n)
                        return 0;
                if (update_compare(&b->updates[i], &b->updates[i + 1]) >= 0)
                        break;
        }
        qsort(b->updates, b->n, sizeof(*b->updates), update_compare);
        /* Check the sums first, so that an overflow leaves the batch as it was (sorted). */
        for (size_t i = 0; i < b->n;) {
                int64_t sum = b->updates[i].diff;
                size_t j = i + 1;

                for (; j < b->n && update_compare(&b->updates[i], &b->updates[j]) == 0; j++)
                        if (__builtin_add_overflow(sum, b->updates[j].diff, &sum))
                                return -EOVERFLOW;
                i = j;
        }
        for (size_t i = 0; i < b->n;) {
                struct eval_update u = b->updates[i];
                size_t j = i + 1;

                for (; j < b->n && update_compare(&u, &b->updates[j]) == 0; j++)
                        u.diff += b->updates[j].diff;
                if (u.diff != 0)
                        b->updates[out++] = u;
                i = j;
        }
        b->n = out;
        return 0;
}

/* ---- Compiling plans. ---- */

enum step_kind {
        STEP_FILTER,
        STEP_MAP,
        STEP_PROJECT,
};

struct step {
        enum step_kind kind;
        size_t n;                               /* predicates, exprs or outputs */
        Coord__Plan__Expr *const *exprs;        /* FILTER, MAP: borrowed from the plan */
        const uint32_t *outputs;                /* PROJECT: borrowed from the plan */
};

struct eval_plan {
        const Coord__Plan__Relation *leaf;      /* Get or Constant */
        uint64_t input;                         /* the Get's collection, 0 for Constant */
        size_t leaf_arity;
        enum row_type *leaf_types;
        struct step *steps;                     /* innermost first */
        size_t n_steps;
        size_t max_width;                       /* datums a row needs at its widest */
        size_t arity;
        enum row_type *types;                   /* output */
        bool trusted;                           /* eval_chain_new(): input rows are the
                                                 * engine's own, decoded but not checked */
};

struct eval_plan *eval_plan_free(struct eval_plan *p)
{
        if (!p)
                return NULL;
        free(p->leaf_types);
        free(p->steps);
        free(p->types);
        free(p);
        return NULL;
}

static void eval_plan_freep(struct eval_plan **p)
{
        *p = eval_plan_free(*p);
}

size_t eval_plan_arity(const struct eval_plan *p)
{
        return p->arity;
}

const enum row_type *eval_plan_types(const struct eval_plan *p)
{
        return p->types;
}

uint64_t eval_plan_input(const struct eval_plan *p)
{
        return p->input;
}

static int invalid(struct row_error *err, const char *what)
{
        return row_error_set(err, -EINVAL, "XX000", "invalid plan: %s", what);
}

/* The leaf's column types, checked. */
static int compile_leaf(struct eval_plan *p, const Coord__Plan__Relation *leaf,
                        struct row_error *err)
{
        const Coord__Plan__Type *types;
        size_t n;

        if (leaf->kind_case == COORD__PLAN__RELATION__KIND_GET) {
                if (!leaf->get || leaf->get->id == 0)
                        return invalid(err, "Get without a collection");
                p->input = leaf->get->id;
                types = leaf->get->column_types;
                n = leaf->get->n_column_types;
        } else {
                assert(leaf->kind_case == COORD__PLAN__RELATION__KIND_CONSTANT);
                if (!leaf->constant)
                        return invalid(err, "empty Constant");
                types = leaf->constant->column_types;
                n = leaf->constant->n_column_types;
        }
        if (n > ROW_MAX_COLUMNS)
                return invalid(err, "too many columns");
        p->leaf = leaf;
        p->leaf_arity = n;
        p->leaf_types = malloc((n ? n : 1) * sizeof(*p->leaf_types));
        if (!p->leaf_types)
                return row_error_oom(err);
        for (size_t i = 0; i < n; i++) {
                if (!row_type_valid((int)types[i]))
                        return invalid(err, "column of an unknown type");
                p->leaf_types[i] = (enum row_type)types[i];
        }
        if (leaf->kind_case == COORD__PLAN__RELATION__KIND_CONSTANT)
                for (size_t i = 0; i < leaf->constant->n_rows; i++) {
                        const Coord__Plan__Update *u = leaf->constant->rows[i];

                        if (!u || row_check(u->row.data, u->row.len, p->leaf_types, n) < 0)
                                return invalid(err, "constant row does not match its types");
                }
        return 0;
}

/* Check one step over `types[0..*width)` and advance the width and types. */
static int compile_step(struct step *s, enum row_type **types, size_t *width, size_t *max_width,
                        struct row_error *err)
{
        enum row_type *t = *types, *nt;
        size_t w = *width;
        int r;

        switch (s->kind) {
        case STEP_FILTER:
                for (size_t i = 0; i < s->n; i++) {
                        r = row_expr_check(s->exprs[i], t, w, err);
                        if (r < 0)
                                return r;
                        if ((int)s->exprs[i]->type != ROW_TYPE_BOOL)
                                return invalid(err, "predicate not of type boolean");
                }
                return 0;
        case STEP_MAP:
                if (w + s->n > ROW_MAX_COLUMNS * 4u)
                        return invalid(err, "too many columns");
                nt = realloc(t, (w + s->n ? w + s->n : 1) * sizeof(*t));
                if (!nt)
                        return row_error_oom(err);
                *types = t = nt;
                for (size_t i = 0; i < s->n; i++) {
                        /* Expression i sees the input and the columns mapped before it. */
                        r = row_expr_check(s->exprs[i], t, w, err);
                        if (r < 0)
                                return r;
                        t[w++] = (enum row_type)s->exprs[i]->type;
                }
                break;
        case STEP_PROJECT:
                if (s->n > ROW_MAX_COLUMNS * 4u)
                        return invalid(err, "too many columns");
                nt = malloc((s->n ? s->n : 1) * sizeof(*nt));
                if (!nt)
                        return row_error_oom(err);
                for (size_t i = 0; i < s->n; i++) {
                        if (s->outputs[i] >= w) {
                                free(nt);
                                return invalid(err, "projected column out of range");
                        }
                        nt[i] = t[s->outputs[i]];
                }
                free(t);
                *types = nt;
                w = s->n;
                break;
        }
        *width = w;
        if (w > *max_width)
                *max_width = w;
        return 0;
}

/* eval_plan_new() and eval_chain_new(): with chain_types == NULL the chain must end in a
 * Get or Constant (the leaf); otherwise its input is whatever node ends it, with the
 * columns chain_types[0..n_chain). */
static int plan_build(const Coord__Plan__Relation *rel, const enum row_type *chain_types,
                      size_t n_chain, struct eval_plan **ret, struct row_error *err)
{
        _cleanup_(eval_plan_freep) struct eval_plan *p = NULL;
        const Coord__Plan__Relation *r;
        size_t n = 0, width;
        int rc;

        p = calloc(1, sizeof(*p));
        if (!p)
                return row_error_oom(err);
        /* Walk down to the leaf, counting the steps. */
        for (r = rel;; n++) {
                if (!r)
                        return invalid(err, "missing input");
                if (r->kind_case == COORD__PLAN__RELATION__KIND_FILTER && r->filter)
                        r = r->filter->input;
                else if (r->kind_case == COORD__PLAN__RELATION__KIND_MAP && r->map)
                        r = r->map->input;
                else if (r->kind_case == COORD__PLAN__RELATION__KIND_PROJECT && r->project)
                        r = r->project->input;
                else
                        break;
        }
        if (chain_types) {
                if (n == 0)
                        return invalid(err, "not a Filter/Map/Project chain");
                if (n_chain > ROW_MAX_COLUMNS)
                        return invalid(err, "too many columns");
                p->leaf = r;
                p->leaf_arity = n_chain;
                p->trusted = true;
                p->leaf_types = malloc((n_chain ? n_chain : 1) * sizeof(*p->leaf_types));
                if (!p->leaf_types)
                        return row_error_oom(err);
                if (n_chain)
                        memcpy(p->leaf_types, chain_types, n_chain * sizeof(*p->leaf_types));
        } else {
                if (r->kind_case != COORD__PLAN__RELATION__KIND_GET &&
                    r->kind_case != COORD__PLAN__RELATION__KIND_CONSTANT) {
                        if (r->kind_case == COORD__PLAN__RELATION__KIND__NOT_SET)
                                return invalid(err, "relation without an operator");
                        return row_error_set(err, -EINVAL, "0A000",
                                             "plan operator %d is not supported",
                                             (int)r->kind_case);
                }
                rc = compile_leaf(p, r, err);
                if (rc < 0)
                        return rc;
        }

        /* Fill the steps innermost first: the k-th node from the top is step n-1-k. */
        p->steps = calloc(n ? n : 1, sizeof(*p->steps));
        if (!p->steps)
                return row_error_oom(err);
        p->n_steps = n;
        r = rel;
        for (size_t k = 0; k < n; k++) {
                struct step *s = &p->steps[n - 1 - k];

                switch (r->kind_case) {
                case COORD__PLAN__RELATION__KIND_FILTER:
                        *s = (struct step){ STEP_FILTER, r->filter->n_predicates,
                                            r->filter->predicates, NULL };
                        r = r->filter->input;
                        break;
                case COORD__PLAN__RELATION__KIND_MAP:
                        *s = (struct step){ STEP_MAP, r->map->n_exprs, r->map->exprs, NULL };
                        r = r->map->input;
                        break;
                default:
                        assert(r->kind_case == COORD__PLAN__RELATION__KIND_PROJECT);
                        *s = (struct step){ STEP_PROJECT, r->project->n_outputs, NULL,
                                            r->project->outputs };
                        r = r->project->input;
                        break;
                }
        }

        /* Types through the steps, from the leaf's. */
        width = p->leaf_arity;
        p->max_width = width;
        p->types = malloc((width ? width : 1) * sizeof(*p->types));
        if (!p->types)
                return row_error_oom(err);
        if (width)
                memcpy(p->types, p->leaf_types, width * sizeof(*p->types));
        for (size_t i = 0; i < n; i++) {
                rc = compile_step(&p->steps[i], &p->types, &width, &p->max_width, err);
                if (rc < 0)
                        return rc;
        }
        p->arity = width;
        *ret = TAKE_PTR(p);
        return 0;
}

int eval_plan_new(const Coord__Plan__Relation *rel, struct eval_plan **ret,
                  struct row_error *err)
{
        return plan_build(rel, NULL, 0, ret, err);
}

int eval_chain_new(const Coord__Plan__Relation *rel, const enum row_type *input_types,
                   size_t n_input, struct eval_plan **ret, struct row_error *err)
{
        static const enum row_type none[1];

        return plan_build(rel, input_types ? input_types : none, n_input, ret, err);
}

/* ---- Running. ---- */

/* What one run needs; built by eval_peek() and eval_plan_apply(). */
struct run {
        const struct eval_plan *p;
        struct row_datum *slots;        /* max_width */
        struct row_datum *scratch;      /* max_width, for PROJECT */
        struct row_arena arena;         /* computed texts of the current row */
        struct row_expr_ctx ctx;
        struct eval_batch *out;
        uint64_t time;                  /* of the updates being emitted (peek) */
        struct row_error *err;
        bool failed;                    /* err was filled by run_row() */
};

static int run_init(struct run *run, const struct eval_plan *p, uint64_t now,
                    struct eval_batch *out, struct row_error *err)
{
        size_t w = p->max_width ? p->max_width : 1;

        *run = (struct run){ .p = p, .arena = ROW_ARENA_INIT, .out = out, .err = err };
        run->slots = malloc(w * sizeof(*run->slots));
        run->scratch = malloc(w * sizeof(*run->scratch));
        if (!run->slots || !run->scratch) {
                free(run->slots);
                free(run->scratch);
                return row_error_oom(err);
        }
        run->ctx = (struct row_expr_ctx){ .now = now, .has_now = true, .arena = &run->arena };
        return 0;
}

static void run_done(struct run *run)
{
        free(run->slots);
        free(run->scratch);
        row_arena_done(&run->arena);
}

/* Map one input row through the steps and append the result, if it passes. */
static int run_row(struct run *run, const void *row, size_t len, uint64_t time, int64_t diff)
{
        const struct eval_plan *p = run->p;
        struct row_datum *slots = run->slots;
        size_t width = p->leaf_arity;
        int64_t size;
        uint8_t *bytes;
        int r;

        if ((!p->trusted && row_check(row, len, p->leaf_types, p->leaf_arity) < 0) ||
            row_decode(row, len, slots, p->max_width) != (int)p->leaf_arity) {
                r = row_error_set(run->err, -EINVAL, "XX000",
                                  "collection %llu holds a row that does not match its columns",
                                  (unsigned long long)p->input);
                goto out;
        }
        for (size_t i = 0; i < p->n_steps; i++) {
                const struct step *s = &p->steps[i];

                switch (s->kind) {
                case STEP_FILTER:
                        for (size_t k = 0; k < s->n; k++) {
                                bool keep;

                                r = row_expr_eval_predicate(s->exprs[k], slots, width, &run->ctx,
                                                            &keep, run->err);
                                if (r < 0)
                                        goto out;
                                if (!keep)
                                        goto out;
                        }
                        break;
                case STEP_MAP:
                        for (size_t k = 0; k < s->n; k++) {
                                assert(width < p->max_width);
                                r = row_expr_eval(s->exprs[k], slots, width, &run->ctx,
                                                  &slots[width], run->err);
                                if (r < 0)
                                        goto out;
                                width++;
                        }
                        break;
                case STEP_PROJECT:
                        for (size_t k = 0; k < s->n; k++) {
                                assert(s->outputs[k] < width);
                                run->scratch[k] = slots[s->outputs[k]];
                        }
                        memcpy(slots, run->scratch, s->n * sizeof(*slots));
                        width = s->n;
                        break;
                }
        }
        assert(width == p->arity);
        size = row_encoded_size(slots, width);
        if (size < 0) {
                r = row_error_set(run->err, -EINVAL, "54000", "result row is too big");
                goto out;
        }
        r = eval_batch_reserve(run->out);
        bytes = r < 0 ? NULL : row_arena_alloc(&run->out->bytes, (size_t)size);
        if (!bytes) {
                r = row_error_oom(run->err);
                goto out;
        }
        row_encode_into(slots, width, bytes);
        run->out->updates[run->out->n++] = (struct eval_update){ bytes, (size_t)size, time, diff };
        r = 0;
out:
        row_arena_reset(&run->arena);
        if (r < 0)
                run->failed = true;
        return r;
}

static int emit_row(void *userdata, const void *row, size_t len, int64_t diff)
{
        struct run *run = userdata;

        return run_row(run, row, len, run->time, diff);
}

/* Consolidate out->updates[first..n), leaving the updates before it alone. */
static int consolidate_from(struct eval_batch *out, size_t first)
{
        struct eval_batch tail = { .updates = out->updates + first, .n = out->n - first,
                                   .cap = out->n - first };
        int r = eval_batch_consolidate(&tail);

        if (r < 0)
                return r;
        out->n = first + tail.n;
        return 0;
}

int eval_peek(const struct eval_plan *p, uint64_t ts, const struct eval_source_ops *src,
              void *userdata, struct eval_batch *out, struct row_error *err)
{
        struct run run;
        size_t first = out->n;
        int r;

        r = run_init(&run, p, ts, out, err);
        if (r < 0)
                return r;
        run.time = ts;
        if (p->leaf->kind_case == COORD__PLAN__RELATION__KIND_CONSTANT) {
                const Coord__Plan__Constant *c = p->leaf->constant;

                for (size_t i = 0; i < c->n_rows && r >= 0; i++)
                        r = run_row(&run, c->rows[i]->row.data, c->rows[i]->row.len, ts,
                                    c->rows[i]->diff);
        } else if (!src || !src->snapshot) {
                r = row_error_set(err, -EINVAL, "XX000", "no source for collection %llu",
                                  (unsigned long long)p->input);
        } else {
                r = src->snapshot(userdata, p->input, ts, emit_row, &run);
                /* An error of the snapshot's own has no message yet. */
                if (r < 0 && !run.failed)
                        row_error_set(err, r, "XX000", "reading collection %llu failed: %s",
                                      (unsigned long long)p->input,
                                      strerrordesc_np(-r) ? strerrordesc_np(-r) : "?");
        }
        run_done(&run);
        if (r < 0)
                goto fail;
        r = consolidate_from(out, first);
        if (r < 0) {
                r = row_error_set(err, -EINVAL, "22003", "row count out of range");
                goto fail;
        }
        for (size_t i = first; i < out->n; i++)
                if (out->updates[i].diff < 0) {
                        r = row_error_set(err, -EINVAL, "XX000",
                                          "negative multiplicity in the result of a read of "
                                          "collection %llu",
                                          (unsigned long long)p->input);
                        goto fail;
                }
        return 0;
fail:
        out->n = first;
        return r;
}

int eval_plan_apply(const struct eval_plan *p, const struct eval_update *in, size_t n,
                    uint64_t now, struct eval_batch *out, struct row_error *err)
{
        struct run run;
        size_t first = out->n;
        int r = run_init(&run, p, now, out, err);

        for (size_t i = 0; i < n && r >= 0; i++)
                r = run_row(&run, in[i].row, in[i].len, in[i].time, in[i].diff);
        run_done(&run);
        if (r < 0)
                out->n = first;
        return r;
}
