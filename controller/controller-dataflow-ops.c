/* controller-dataflow-ops.c -- the operators' runs at one time, which run_node()
 * calls: Union and Negate pass their inputs' deltas on; Distinct, Threshold, TopK,
 * Reduce and Join fold them into their state, settle it (4) and emit what changed.
 *
 * Contract: controller-dataflow.h; what the engine's files share:
 * controller-dataflow-internal.h.  The notes are numbered across the engine
 * (controller-dataflow.c lists where each stands).
 *
 * NOTES ON THE DESIGN
 *
 * (4) Invariant between times: no dirty entry exists; every Distinct count and Reduce
 *     group count is > 0 (a global Reduce's one group may be 0); every min/max value
 *     count is > 0 and the group's cached extreme (`ext`) is the extreme of its list.
 *     Join rows and Threshold rows have count != 0 (negative is allowed there: a Join
 *     is linear in each input, so Join(Negate(a), b) is well defined; a Threshold's
 *     input is a difference, (8)).  The operators' settling at the end of each time
 *     keeps it: fold_settle() (Distinct, Threshold, TopK), run_reduce() (its two settle
 *     loops) and join_settle() clear the dirty marks and remove the entries that
 *     reached 0, and a count negative where none may be fails the time (corrupt(),
 *     XX000).  No function asserts it as a whole (a TopK's part: topk_check(), (7)).
 *
 * (7) TopK (ORDER BY ... LIMIT/OFFSET in a view, proto/plan.proto) keeps its input
 *     multiset (`map`, row -> count, like Distinct) and the window it emitted last
 *     (`values`, row -> count).  At a time where some input count changed it recomputes
 *     the window from scratch -- a bounded selection over all input rows, O(n log k) for
 *     n distinct input rows and k = offset + limit places (O(n log n) without a LIMIT) --
 *     and emits the difference from the window emitted before; at a time where nothing
 *     changed it costs nothing.  So a maintained top-k costs O(its input) per changed
 *     time, not O(the change): a view over a large table that changes at every append
 *     pays for the whole table at every append (an incremental structure -- an ordered
 *     index over the input -- would make it O(log n + the change); not built yet).
 *     Between times every input count is > 0 (a negative one is XX000) and `values` is
 *     exactly the window of `map` (topk_check() asserts its size in debug builds).  The
 *     selection's scratch is counted against a peek's limit (6) before it is allocated.
 *
 * (8) Threshold (EXCEPT ALL, INTERSECT ALL; proto/plan.proto) keeps each input row's
 *     count in `map` (struct dis_ent, as Distinct), of either sign: its input is a
 *     difference, so a negative count is its purpose, not an error.  Between times
 *     every entry's count is != 0 (a row that reaches 0 is removed) and the output
 *     emitted so far sums, per row, to max(count, 0).  run_distinct() keeps it: at a
 *     time where a row's count moved from old to count it emits max(count, 0) -
 *     max(old, 0), which is 0 (nothing emitted) while the count stays <= 0, so the
 *     output never holds a negative count and downstream operators need no check.
 */
#include "controller-dataflow-internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static int corrupt(struct row_error *err, const char *what)
{
        return row_error_set(err, -EINVAL, "XX000", "negative multiplicity in %s", what);
}

/* -- Union, Negate, Distinct, Threshold -- */

int run_union(struct dataflow *df, struct node *n, bool negate, struct row_error *err)
{
        size_t k = negate ? 1 : n->n_children;

        for (size_t c = 0; c < k; c++) {
                const struct node *ch = &df->nodes[negate ? n->child[0] : n->children[c]];

                for (size_t i = 0; i < ch->nd; i++) {
                        int64_t d = ch->d[i].diff;

                        if (negate && d == INT64_MIN)
                                return row_error_set(err, -EINVAL, "22003",
                                                     "row count out of range");
                        if (batch_ref(&n->out, ch->d[i].row, ch->d[i].len, ch->d[i].time,
                                      negate ? -d : d) < 0)
                                return row_error_oom(err);
                }
        }
        return 0;
}

/* Adds the changes at this time of n's child to the counts of whole rows in n->map;
 * each row whose count moved is in n->dirty once, with its count before in e->old and
 * e->dirty set, which fold_settle() clears as it visits it (DISTINCT, TopK). */
static int fold_counts(const struct dataflow *df, struct node *n, struct row_error *err)
{
        const struct node *ch = &df->nodes[n->child[0]];

        n->dirty.n = 0;
        for (size_t i = 0; i < ch->nd; i++) {
                const struct eval_update *u = &ch->d[i];
                uint64_t h = hash_bytes(u->row, u->len);
                uint32_t id = bmap_find(&n->map, h, u->row, u->len);
                struct dis_ent *e;

                if (id == NIL && bmap_insert(&n->map, h, u->row, u->len, &id) < 0)
                        return row_error_oom(err);
                e = bmap_val(&n->map, id);
                if (!e->dirty) {
                        e->dirty = true;
                        e->old = e->count;
                        if (idvec_push(&n->dirty, id) < 0)
                                return row_error_oom(err);
                }
                if (__builtin_add_overflow(e->count, u->diff, &e->count))
                        return row_error_set(err, -EINVAL, "22003", "row count out of range");
        }
        return 0;
}

/* What a Distinct or a TopK does with one row whose count moved at this time (e, its
 * dirty mark cleared): 0, or an error that fails the time. */
typedef int (*settle_fn)(struct node *n, const struct dis_ent *e, uint32_t id, void *ctx,
                         struct row_error *err);

/* The time of a Distinct or a TopK, up to its own output: fold_counts(), then for each
 * row whose count moved, its dirty mark cleared, visit(); a row whose count reached 0 is
 * removed after it (4).  Stops at the first error, of either. */
static int fold_settle(const struct dataflow *df, struct node *n, settle_fn visit, void *ctx,
                       struct row_error *err)
{
        int r = fold_counts(df, n, err);

        if (r < 0)
                return r;
        for (size_t i = 0; i < n->dirty.n; i++) {
                uint32_t id = n->dirty.v[i];
                struct dis_ent *e = bmap_val(&n->map, id);

                e->dirty = false;
                r = visit(n, e, id, ctx, err);
                if (r < 0)
                        return r;
                if (e->count == 0)
                        bmap_remove(&n->map, id);
        }
        n->dirty.n = 0;
        return 0;
}

struct distinct_ctx {
        uint64_t t;
        bool threshold;
};

/* A Distinct's or a Threshold's row (fold_settle()): emits at time t how much its count
 * in the output moved. */
static int distinct_row(struct node *n, const struct dis_ent *e, uint32_t id, void *ctx,
                        struct row_error *err)
{
        const struct distinct_ctx *x = ctx;
        int64_t d;

        if (x->threshold)
                d = (e->count > 0 ? e->count : 0) - (e->old > 0 ? e->old : 0);
        else if (e->count < 0)
                return corrupt(err, "the input of a DISTINCT");
        else
                d = (e->count > 0) - (e->old > 0);
        if (d != 0) {
                size_t len;
                const uint8_t *row = bmap_key(&n->map, id, &len);
                uint8_t *p = batch_alloc(&n->out, len, x->t, d);

                if (!p)
                        return row_error_oom(err);
                memcpy(p, row, len);
        }
        return 0;
}

/* Distinct: each row whose count is positive, once; a negative count is corrupt (4).
 * Threshold (8): each row's positive count, of a count of either sign. */
int run_distinct(struct dataflow *df, struct node *n, uint64_t t, bool threshold,
                 struct row_error *err)
{
        struct distinct_ctx x = { .t = t, .threshold = threshold };

        return fold_settle(df, n, distinct_row, &x, err);
}

/* -- TopK (7) -- */

/* One input row in a recomputation: its entry, count and sort key datums. */
struct top_item {
        uint32_t id;
        int64_t count;
        const uint8_t *row;
        size_t len;
        const struct row_datum *keys;   /* n_order datums, into the scratch */
};

/* The TopK's order: the sort keys as PostgreSQL orders them, then the whole row. */
static int top_cmp(const Coord__Plan__TopK *tk, const struct top_item *a,
                   const struct top_item *b)
{
        for (size_t k = 0; k < tk->n_order; k++) {
                const Coord__Plan__SortKey *sk = tk->order[k];
                const struct row_datum *x = &a->keys[k], *y = &b->keys[k];
                bool xn = x->kind == ROW_KIND_NULL, yn = y->kind == ROW_KIND_NULL;
                int c;

                if (xn || yn) {
                        if (xn && yn)
                                continue;
                        /* nulls_first says where NULL goes, whatever the direction. */
                        return (xn ? 1 : -1) * (sk->nulls_first ? -1 : 1);
                }
                c = row_datum_compare(x, y);
                if (c)
                        return sk->descending ? -c : c;
        }
        return row_compare(a->row, a->len, b->row, b->len);
}

/* Max-heap of items by top_cmp (the last place on top): sift item i down among n. */
static void top_sift(const Coord__Plan__TopK *tk, struct top_item *h, size_t n, size_t i)
{
        for (;;) {
                size_t l = 2 * i + 1, m = i;
                struct top_item x;

                if (l < n && top_cmp(tk, &h[l], &h[m]) > 0)
                        m = l;
                if (l + 1 < n && top_cmp(tk, &h[l + 1], &h[m]) > 0)
                        m = l + 1;
                if (m == i)
                        return;
                x = h[i];
                h[i] = h[m];
                h[m] = x;
                i = m;
        }
}

static void top_sift_up(const Coord__Plan__TopK *tk, struct top_item *h, size_t i)
{
        while (i > 0 && top_cmp(tk, &h[(i - 1) / 2], &h[i]) < 0) {
                struct top_item x = h[i];

                h[i] = h[(i - 1) / 2];
                h[(i - 1) / 2] = x;
                i = (i - 1) / 2;
        }
}

#ifndef NDEBUG
/* (7) Between times: the input counts are > 0 and the window holds exactly
 * min(limit, max(0, input places - offset)) places, each row > 0 of them. */
static void topk_check(const struct node *n)
{
        const Coord__Plan__TopK *tk = n->rel->top_k;
        unsigned __int128 in = 0, out = 0, want;

        for (uint32_t id = 0; id < n->map.top; id++)
                if (n->map.ents[id].key) {
                        const struct dis_ent *e = bmap_val(&n->map, id);

                        assert(e->count > 0 && !e->dirty);
                        in += (uint64_t)e->count;
                }
        for (uint32_t id = 0; id < n->values.top; id++)
                if (n->values.ents[id].key) {
                        const struct top_ent *e = bmap_val(&n->values, id);

                        assert(e->count > 0);
                        out += (uint64_t)e->count;
                }
        want = in > tk->offset ? in - tk->offset : 0;
        if (tk->has_limit && want > tk->limit)
                want = tk->limit;
        assert(out == want);
}
#else
static void topk_check(const struct node *n)
{
        (void)n;
}
#endif

/* Emit the change of the window's count of `row` to `count` (0: out of it). */
static int topk_set(struct node *n, const uint8_t *row, size_t len, int64_t count, uint64_t t,
                    struct row_error *err)
{
        uint64_t h = hash_bytes(row, len);
        uint32_t id = bmap_find(&n->values, h, row, len);
        struct top_ent *e;
        int64_t old = 0;
        uint8_t *p;

        if (id != NIL)
                old = ((struct top_ent *)bmap_val(&n->values, id))->count;
        else if (count) {
                if (bmap_insert(&n->values, h, row, len, &id) < 0)
                        return row_error_oom(err);
        }
        if (count != old) {
                p = batch_alloc(&n->out, len, t, count - old);
                if (!p)
                        return row_error_oom(err);
                memcpy(p, row, len);
        }
        if (id == NIL)
                return 0;
        e = bmap_val(&n->values, id);
        e->count = count;
        e->gen = n->gen;
        return 0;
}

/* Recompute the window from the input (7) and emit what changed. */
static int topk_window(struct dataflow *df, struct node *n, uint64_t t, struct row_error *err)
{
        const Coord__Plan__TopK *tk = n->rel->top_k;
        size_t nk = tk->n_order, m = 0, nh = 0;
        unsigned __int128 k, total = 0, pos = 0;
        unsigned __int128 lo = tk->offset, hi;
        struct top_item *items;
        struct row_datum *keys;
        size_t scratch = n->map.n * (sizeof(*items) + nk * sizeof(*keys));
        int r = 0;

        hi = tk->has_limit ? lo + tk->limit : (unsigned __int128)-1;
        k = hi;         /* places that matter: [0, offset + limit) */
        if (df->mem_limit && (r = mem_check(df, scratch, err)) < 0)
                return r;
        items = malloc(n->map.n ? n->map.n * sizeof(*items) : 1);
        keys = malloc(n->map.n && nk ? n->map.n * nk * sizeof(*keys) : 1);
        if (!items || !keys) {
                r = row_error_oom(err);
                goto out;
        }
        if (++n->gen == 0)
                n->gen = 1;
        /* The bounded selection: a max-heap holding the fewest rows that cover the first
         * k places -- its top, the last of them, goes as soon as the others cover k. */
        for (uint32_t id = 0; k > 0 && id < n->map.top; id++) {
                struct top_item *it;
                const struct dis_ent *e;

                if (!n->map.ents[id].key)
                        continue;
                e = bmap_val(&n->map, id);
                it = &items[nh];
                *it = (struct top_item){ .id = id, .count = e->count,
                                         .keys = keys + m * nk };
                it->row = bmap_key(&n->map, id, &it->len);
                if (row_decode(it->row, it->len, n->datums, n->in_arity) != (int)n->in_arity) {
                        r = row_error_set(err, -EINVAL, "XX000", "malformed row in a TopK");
                        goto out;
                }
                for (size_t j = 0; j < nk; j++)
                        keys[m * nk + j] = n->datums[tk->order[j]->column];
                m++;
                top_sift_up(tk, items, nh++);
                total += (uint64_t)e->count;
                while (nh > 1 && total - (uint64_t)items[0].count >= k) {
                        total -= (uint64_t)items[0].count;
                        items[0] = items[--nh];
                        top_sift(tk, items, nh, 0);
                }
        }
        /* Heap sort: the window's rows in order, first place first. */
        for (size_t i = nh; i > 1; i--) {
                struct top_item x = items[0];

                items[0] = items[i - 1];
                items[i - 1] = x;
                top_sift(tk, items, i - 1, 0);
        }
        for (size_t i = 0; i < nh; i++) {
                unsigned __int128 a = pos, b = pos + (uint64_t)items[i].count, in;

                pos = b;
                if (a < lo)
                        a = lo;
                if (b > hi)
                        b = hi;
                in = b > a ? b - a : 0;
                if (!in)
                        continue;
                r = topk_set(n, items[i].row, items[i].len, (int64_t)in, t, err);
                if (r < 0)
                        goto out;
        }
        /* Rows of the last window that are not in this one leave it. */
        for (uint32_t id = 0; id < n->values.top; id++) {
                struct top_ent *e;
                const uint8_t *row;
                size_t len;
                uint8_t *p;

                if (!n->values.ents[id].key)
                        continue;
                e = bmap_val(&n->values, id);
                if (e->gen == n->gen)
                        continue;
                row = bmap_key(&n->values, id, &len);
                p = batch_alloc(&n->out, len, t, -e->count);
                if (!p) {
                        r = row_error_oom(err);
                        goto out;
                }
                memcpy(p, row, len);
                bmap_remove(&n->values, id);
        }
out:
        free(items);
        free(keys);
        return r;
}

/* A TopK's input row (fold_settle()): *ctx, a bool, becomes true if its count changed. */
static int topk_row(struct node *n, const struct dis_ent *e, uint32_t id, void *ctx,
                    struct row_error *err)
{
        bool *changed = ctx;

        if (e->count < 0)
                return corrupt(err, "the input of a TopK");
        *changed = *changed || e->count != e->old;
        return 0;
}

int run_topk(struct dataflow *df, struct node *n, uint64_t t, struct row_error *err)
{
        bool changed = false;
        int r;

        r = fold_settle(df, n, topk_row, &changed, err);
        if (r < 0)
                return r;
        if (!changed)
                return 0;
        r = topk_window(df, n, t, err);
        if (r < 0)
                return r;
        topk_check(n);
        return 0;
}

/* -- Reduce -- */

static struct group *group_at(const struct node *n, uint32_t id)
{
        return bmap_val(&n->map, id);
}

static int value_datum(const struct node *n, uint32_t vid, struct row_datum *ret)
{
        size_t len;
        const uint8_t *k = bmap_key(&n->values, vid, &len);

        assert(len > VKEY_PREFIX);
        return row_decode(k + VKEY_PREFIX, len - VKEY_PREFIX, ret, 1) == 1 ? 0 : -EBADMSG;
}

/* Does the group key have a numeric column (struct group, raw_head)?  The node's first
 * types are the key's. */
static bool has_numeric_key(const struct node *n)
{
        for (size_t k = 0; k < n->reduce->n_group_keys; k++)
                if (n->types[k] == ROW_TYPE_NUMERIC)
                        return true;
        return false;
}

/* Does aggregate `agg` keep an extreme (min/max) of its value list? */
static bool is_extreme(const struct node *n, size_t agg)
{
        Coord__Plan__AggFunc f = n->reduce->aggregates[agg]->func;

        return f == COORD__PLAN__AGG_FUNC__AGG_MIN || f == COORD__PLAN__AGG_FUNC__AGG_MAX;
}

/* Is value a better extreme than value b for aggregate `agg`? */
static bool value_better(const struct node *n, size_t agg, uint32_t a, uint32_t b)
{
        struct row_datum da, db;
        int c;

        if (b == NIL)
                return true;
        if (value_datum(n, a, &da) < 0 || value_datum(n, b, &db) < 0)
                return false;
        if (row_type_is_array(n->reduce->aggregates[agg]->type)) {
                /* Arrays order element-wise, not by their text (row.h "Arrays"). */
                struct row_arena arena = { 0 };
                int r = row_array_compare((enum row_type)n->reduce->aggregates[agg]->type, &da, &db,
                                          &arena, &c, NULL);

                row_arena_done(&arena);
                if (r < 0)
                        return false;
        } else
                c = row_datum_compare(&da, &db);
        return n->reduce->aggregates[agg]->func == COORD__PLAN__AGG_FUNC__AGG_MIN ? c < 0 : c > 0;
}

/* A distinct value of a group's list and its count (gather_output()). */
struct counted {
        struct row_datum d;
        int64_t count;
};

static int counted_cmp(const void *x, const void *y)
{
        return row_datum_compare(&((const struct counted *)x)->d, &((const struct counted *)y)->d);
}

/* The most elements array_agg/string_agg put in one value. */
#define GATHER_MAX (1u << 26)

/* array_agg's or string_agg's value of aggregate `agg` of group g (proto/plan.proto
 * AGG_ARRAY_AGG): the group's values (its value list, as min/max keep it) in ascending
 * order, each as often as its count; array_agg's NULLs (the group's rows less the
 * non-NULL ones) last.  Built in `arena` at every output of the group: O(k log k) for k
 * distinct values. */
static int gather_output(struct node *n, const struct group *g, size_t agg,
                         struct row_arena *arena, struct row_datum *ret, struct row_error *err)
{
        const Coord__Plan__Aggregate *ag = n->reduce->aggregates[agg];
        const struct agg_state *a = &g->aggs[agg];
        bool array = ag->func == COORD__PLAN__AGG_FUNC__AGG_ARRAY_AGG;
        uint64_t total = array ? (uint64_t)g->count : (uint64_t)a->nonnull;
        size_t k = 0, at = 0, len = 0, dlen = strlen(ag->delimiter ? ag->delimiter : "");
        struct counted *vals;
        struct row_datum *all;
        char *p;

        if (total == 0) {
                *ret = ROW_DATUM_NULL;
                return 0;
        }
        if (total > GATHER_MAX)
                return row_error_set(err, -EINVAL, "54000", "%s of more than %u values",
                                     array ? "array_agg" : "string_agg", GATHER_MAX);
        for (uint32_t v = a->head; v != NIL; v = ((struct vent *)bmap_val(&n->values, v))->next)
                k++;
        vals = row_arena_alloc(arena, (k ? k : 1) * sizeof(*vals));
        all = row_arena_alloc(arena, (size_t)total * sizeof(*all));
        if (!vals || !all)
                return row_error_oom(err);
        k = 0;
        for (uint32_t v = a->head; v != NIL; v = ((struct vent *)bmap_val(&n->values, v))->next) {
                if (value_datum(n, v, &vals[k].d) < 0)
                        return row_error_set(err, -EINVAL, "XX000", "array_agg state lost its values");
                vals[k++].count = ((struct vent *)bmap_val(&n->values, v))->count;
        }
        qsort(vals, k, sizeof(*vals), counted_cmp);
        for (size_t i = 0; i < k; i++)
                for (int64_t c = 0; c < vals[i].count && at < total; c++)
                        all[at++] = vals[i].d;
        if (at != (size_t)a->nonnull)
                return corrupt(err, "the input of an aggregate");
        if (array) {
                while (at < total)
                        all[at++] = ROW_DATUM_NULL;
                return row_array_build((enum row_type)ag->type, all, at, arena, ret, err);
        }
        for (size_t i = 0; i < at; i++)
                len += (i ? dlen : 0) + all[i].text.len;
        if (len > UINT32_MAX)
                return row_error_set(err, -EINVAL, "54000", "string_agg result too long");
        p = row_arena_alloc(arena, len ? len : 1);
        if (!p)
                return row_error_oom(err);
        len = 0;
        for (size_t i = 0; i < at; i++) {
                if (i && dlen) {
                        memcpy(p + len, ag->delimiter, dlen);
                        len += dlen;
                }
                if (all[i].text.len)
                        memcpy(p + len, all[i].text.ptr, all[i].text.len);
                len += all[i].text.len;
        }
        *ret = ROW_DATUM_TEXT(p, (uint32_t)len);
        return 0;
}

/* A numeric sum of a group: of a numeric column, its value list (kept as min/max keep
 * theirs, value -> count) summed exactly, so a retraction leaves the sum and its scale
 * (the largest of the values still present, PostgreSQL's) as if the value had never
 * been there, O(distinct values) per output; of an integer column, its exact a->sum
 * (the list is empty then).  NULL for no value. */
static int numeric_sum(struct node *n, const struct agg_state *a, struct row_datum *ret,
                       struct row_error *err)
{
        const __int128 lim = (__int128)10000000000000000000ull * 10000000000000000000ull;
        struct row_datum sum;

        if (a->nonnull == 0) {
                *ret = ROW_DATUM_NULL;
                return 0;
        }
        if (a->sum >= lim || a->sum <= -lim)
                return row_error_set(err, -EINVAL, "22003", "value overflows numeric format");
        sum = row_numeric_make(a->sum, 0);
        for (uint32_t v = a->head; v != NIL; v = ((struct vent *)bmap_val(&n->values, v))->next) {
                struct row_datum d, cnt, term;
                int r;

                if (value_datum(n, v, &d) < 0 || d.kind != ROW_KIND_NUMERIC)
                        return row_error_set(err, -EINVAL, "XX000", "sum state lost its values");
                cnt = row_numeric_from_int(((struct vent *)bmap_val(&n->values, v))->count);
                r = row_numeric_mul(&d, &cnt, &term, err);
                if (r >= 0)
                        r = row_numeric_add(&sum, &term, &sum, err);
                if (r < 0)
                        return r;
        }
        *ret = sum;
        return 0;
}

/* The output row of a group (with the datums in n->datums), into the arena or the
 * output batch.  *ret_len = 0 and *ret = NULL when the group has no output row. */
static int group_output(struct node *n, uint32_t gid, bool global, struct row_arena *arena,
                        const uint8_t **ret, size_t *ret_len, struct row_error *err)
{
        const Coord__Plan__Reduce *rd = n->reduce;
        const struct group *g = group_at(n, gid);
        struct row_datum *d = n->datums + n->in_arity;  /* past the input row's datums */
        size_t nk = rd->n_group_keys, klen;
        const uint8_t *key = bmap_key(&n->map, gid, &klen);
        int64_t size;
        uint8_t *p;

        *ret = NULL;
        *ret_len = 0;
        if (g->count == 0 && !global)
                return 0;
        if (g->raw_head != NIL) {
                /* The greatest spelling of the key among the group's rows. */
                size_t best_len = 0;
                const uint8_t *best = NULL;

                for (uint32_t v = g->raw_head; v != NIL;
                     v = ((struct vent *)bmap_val(&n->values, v))->next) {
                        size_t len;
                        const uint8_t *k = bmap_key(&n->values, v, &len);

                        if (!best || row_compare(k + VKEY_PREFIX, len - VKEY_PREFIX, best,
                                                 best_len) > 0) {
                                best = k + VKEY_PREFIX;
                                best_len = len - VKEY_PREFIX;
                        }
                }
                key = best;
                klen = best_len;
        }
        if (row_decode(key, klen, d, nk) != (int)nk)
                return row_error_set(err, -EINVAL, "XX000", "malformed group key");
        for (size_t i = 0; i < rd->n_aggregates; i++) {
                const struct agg_state *a = &g->aggs[i];
                struct row_datum *o = &d[nk + i];

                switch (rd->aggregates[i]->func) {
                case COORD__PLAN__AGG_FUNC__AGG_COUNT_STAR:
                        *o = ROW_DATUM_INT(g->count);
                        break;
                case COORD__PLAN__AGG_FUNC__AGG_COUNT:
                        *o = ROW_DATUM_INT(a->nonnull);
                        break;
                case COORD__PLAN__AGG_FUNC__AGG_SUM:
                        if (rd->aggregates[i]->type == COORD__PLAN__TYPE__TYPE_NUMERIC) {
                                int r = numeric_sum(n, a, o, err);

                                if (r < 0)
                                        return r;
                        } else if (a->nonnull == 0)
                                *o = ROW_DATUM_NULL;
                        else if (a->sum > INT64_MAX || a->sum < INT64_MIN)
                                return row_error_set(err, -EINVAL, "22003",
                                                     "bigint out of range");
                        else
                                *o = ROW_DATUM_INT((int64_t)a->sum);
                        break;
                case COORD__PLAN__AGG_FUNC__AGG_ARRAY_AGG:
                case COORD__PLAN__AGG_FUNC__AGG_STRING_AGG: {
                        int r = gather_output(n, g, i, arena, o, err);

                        if (r < 0)
                                return r;
                        break;
                }
                default:
                        if (a->nonnull == 0)
                                *o = ROW_DATUM_NULL;
                        else if (a->ext == NIL || value_datum(n, a->ext, o) < 0)
                                return row_error_set(err, -EINVAL, "XX000",
                                                     "min/max state lost its values");
                        break;
                }
        }
        size = row_encoded_size(d, nk + rd->n_aggregates);
        if (size < 0)
                return row_error_set(err, -EINVAL, "54000", "result row is too big");
        p = row_arena_alloc(arena, (size_t)size ? (size_t)size : 1);
        if (!p)
                return row_error_oom(err);
        row_encode_into(d, nk + rd->n_aggregates, p);
        *ret = p;
        *ret_len = (size_t)size;
        return 0;
}

/* Make a group dirty at this time, remembering its output before the time. */
static int group_touch(struct node *n, uint32_t gid, bool existed, bool global,
                       struct row_error *err)
{
        struct group *g = group_at(n, gid);
        struct reduce_dirty *rd;
        int r;

        if (g->dirty)
                return 0;
        if (n->n_rdirty == n->cap_rdirty) {
                size_t cap = n->cap_rdirty ? 2 * n->cap_rdirty : 64;
                struct reduce_dirty *v = realloc(n->rdirty, cap * sizeof(*v));

                if (!v)
                        return row_error_oom(err);
                n->rdirty = v;
                n->cap_rdirty = cap;
        }
        rd = &n->rdirty[n->n_rdirty];
        *rd = (struct reduce_dirty){ .group = gid };
        if (existed) {
                r = group_output(n, gid, global, &n->arena, &rd->old, &rd->old_len, err);
                if (r < 0)
                        return r;
                rd->had_output = rd->old != NULL;
        }
        g->dirty = (uint32_t)++n->n_rdirty;
        return 0;
}

static void vlist_unlink(struct node *n, uint32_t *head, uint32_t vid)
{
        struct vent *v = bmap_val(&n->values, vid);

        if (v->prev != NIL)
                ((struct vent *)bmap_val(&n->values, v->prev))->next = v->next;
        else
                *head = v->next;
        if (v->next != NIL)
                ((struct vent *)bmap_val(&n->values, v->next))->prev = v->prev;
}

/* The head of group gid's value list for aggregate agg (RAW_KEYS: its raw keys). */
static uint32_t *vlist_head(struct node *n, uint32_t gid, size_t agg)
{
        struct group *g = group_at(n, gid);

        return agg == RAW_KEYS ? &g->raw_head : &g->aggs[agg].head;
}

/* Count diff more of the nd-datum value d in group gid's list for aggregate agg. */
static int reduce_value(struct node *n, uint32_t gid, size_t agg, const struct row_datum *d,
                        size_t nd, int64_t diff, struct row_error *err)
{
        int64_t len;
        uint64_t h;
        uint32_t vid, *head;
        struct vent *v;
        int r;

        len = row_encoded_size(d, nd);
        if (len < 0 || buf_reserve(&n->key, (size_t)len + VKEY_PREFIX) < 0)
                return row_error_oom(err);
        memcpy(n->key.p, &gid, 4);
        n->key.p[4] = (uint8_t)agg;
        n->key.p[5] = (uint8_t)(agg >> 8);
        row_encode_into(d, nd, n->key.p + VKEY_PREFIX);
        len += VKEY_PREFIX;
        h = hash_bytes(n->key.p, (size_t)len);
        vid = bmap_find(&n->values, h, n->key.p, (size_t)len);
        if (vid == NIL) {
                r = bmap_insert(&n->values, h, n->key.p, (size_t)len, &vid);
                if (r < 0)
                        return row_error_oom(err);
                head = vlist_head(n, gid, agg);
                v = bmap_val(&n->values, vid);
                *v = (struct vent){ .prev = NIL, .next = *head, .group = gid,
                                    .agg = (uint16_t)agg };
                if (*head != NIL)
                        ((struct vent *)bmap_val(&n->values, *head))->prev = vid;
                *head = vid;
        }
        v = bmap_val(&n->values, vid);
        if (!v->dirty) {
                v->dirty = true;
                if (idvec_push(&n->vdirty, vid) < 0)
                        return row_error_oom(err);
        }
        if (__builtin_add_overflow(v->count, diff, &v->count))
                return row_error_set(err, -EINVAL, "22003", "row count out of range");
        return 0;
}

/* The group of the decoded input row in n->datums (created when new), touched at this
 * time.  The key row is the group key columns, numerics normalized (1.5 = 1.50),
 * encoded (NULL = NULL bytewise), assembled in the scratch past the input's datums. */
static int reduce_group(struct node *n, bool global, uint32_t *ret_gid, struct row_error *err)
{
        const Coord__Plan__Reduce *rd = n->reduce;
        struct row_datum *d = n->datums, *kd = n->datums + n->in_arity;
        bool existed = true;
        int64_t klen;
        uint64_t h;
        uint32_t gid;
        int r;

        for (size_t k = 0; k < rd->n_group_keys; k++) {
                kd[k] = d[rd->group_keys[k]];
                if (kd[k].kind == ROW_KIND_NUMERIC)
                        kd[k] = row_numeric_normalize(&kd[k]);
        }
        klen = buf_encode(&n->key, kd, rd->n_group_keys);
        if (klen < 0)
                return row_error_oom(err);
        h = hash_bytes(n->key.p, (size_t)klen);
        gid = bmap_find(&n->map, h, n->key.p, (size_t)klen);
        if (gid == NIL) {
                r = bmap_insert(&n->map, h, n->key.p, (size_t)klen, &gid);
                if (r < 0)
                        return row_error_oom(err);
                group_at(n, gid)->raw_head = NIL;
                for (size_t a = 0; a < rd->n_aggregates; a++)
                        group_at(n, gid)->aggs[a].head = group_at(n, gid)->aggs[a].ext = NIL;
                existed = false;
        }
        *ret_gid = gid;
        return group_touch(n, gid, existed, global, err);
}

int run_reduce(struct dataflow *df, struct node *n, uint64_t t, struct row_error *err)
{
        const Coord__Plan__Reduce *rd = n->reduce;
        const struct node *ch = &df->nodes[n->child[0]];
        size_t nk = rd->n_group_keys;
        bool global = nk == 0, raw = has_numeric_key(n);
        struct row_datum *d = n->datums;
        int r;

        row_arena_reset(&n->arena);
        n->n_rdirty = 0;
        n->vdirty.n = 0;
        if (global && !df->started) {
                /* The one output row exists from as_of on, also without input (proto). */
                uint32_t gid;

                assert(n->map.n == 0);
                r = bmap_insert(&n->map, hash_bytes("\0\0", 2), "\0\0", 2, &gid);
                if (r < 0)
                        return row_error_oom(err);
                group_at(n, gid)->raw_head = NIL;
                for (size_t i = 0; i < rd->n_aggregates; i++)
                        group_at(n, gid)->aggs[i].head = group_at(n, gid)->aggs[i].ext = NIL;
                r = group_touch(n, gid, false, true, err);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < ch->nd; i++) {
                const struct eval_update *u = &ch->d[i];
                uint32_t gid = NIL;
                struct group *g;

                if (row_decode(u->row, u->len, d, n->in_arity) != (int)n->in_arity)
                        return row_error_set(err, -EINVAL, "XX000", "malformed row in a reduce");
                r = reduce_group(n, global, &gid, err);
                if (r < 0)
                        return r;
                if (raw) {
                        /* The key as this row spells it (struct group, raw_head). */
                        for (size_t k = 0; k < nk; k++)
                                d[n->in_arity + k] = d[rd->group_keys[k]];
                        r = reduce_value(n, gid, RAW_KEYS, d + n->in_arity, nk, u->diff, err);
                        if (r < 0)
                                return r;
                }
                g = group_at(n, gid);
                if (__builtin_add_overflow(g->count, u->diff, &g->count))
                        return row_error_set(err, -EINVAL, "22003", "row count out of range");
                for (size_t a = 0; a < rd->n_aggregates; a++) {
                        const Coord__Plan__Aggregate *ag = rd->aggregates[a];
                        const struct row_datum *v;
                        struct agg_state *as = &g->aggs[a];

                        if (ag->func == COORD__PLAN__AGG_FUNC__AGG_COUNT_STAR)
                                continue;
                        v = &d[ag->column];
                        if (v->kind == ROW_KIND_NULL)
                                continue;
                        if (__builtin_add_overflow(as->nonnull, u->diff, &as->nonnull))
                                return row_error_set(err, -EINVAL, "22003",
                                                     "row count out of range");
                        if (ag->func == COORD__PLAN__AGG_FUNC__AGG_SUM && v->kind == ROW_KIND_INT) {
                                if (__builtin_add_overflow(as->sum, (__int128)v->i * u->diff,
                                                           &as->sum))
                                        return row_error_set(err, -EINVAL, "22003",
                                                             "bigint out of range");
                        } else if (ag->func != COORD__PLAN__AGG_FUNC__AGG_COUNT) {
                                r = reduce_value(n, gid, a, v, 1, u->diff, err);
                                if (r < 0)
                                        return r;
                                g = group_at(n, gid);   /* no map of groups grew, but be safe */
                        }
                }
        }
        /* Settle the min/max values (4): drop the ones that reached 0, keep ext current. */
        for (size_t i = 0; i < n->vdirty.n; i++) {
                uint32_t vid = n->vdirty.v[i];
                struct vent *v = bmap_val(&n->values, vid);
                struct agg_state *a;

                v->dirty = false;
                if (v->count < 0)
                        return corrupt(err, "the input of min/max");
                if (v->agg == RAW_KEYS) {
                        if (v->count == 0) {
                                vlist_unlink(n, &group_at(n, v->group)->raw_head, vid);
                                bmap_remove(&n->values, vid);
                        }
                        continue;
                }
                a = &group_at(n, v->group)->aggs[v->agg];
                if (v->count == 0) {
                        if (a->ext == vid) {
                                a->ext = NIL;
                                a->stale = true;
                        }
                        vlist_unlink(n, &a->head, vid);
                        bmap_remove(&n->values, vid);
                } else if (!a->stale && a->ext != vid && is_extreme(n, v->agg) &&
                           value_better(n, v->agg, vid, a->ext))
                        a->ext = vid;
        }
        n->vdirty.n = 0;
        /* Settle the groups: emit old -> new. */
        for (size_t i = 0; i < n->n_rdirty; i++) {
                struct reduce_dirty *dr = &n->rdirty[i];
                struct group *g = group_at(n, dr->group);
                const uint8_t *row;
                size_t len;

                g->dirty = 0;
                if (g->count < 0)
                        return corrupt(err, "the input of a reduce");
                for (size_t a = 0; a < rd->n_aggregates; a++) {
                        struct agg_state *as = &g->aggs[a];

                        if (as->nonnull < 0 || (g->count == 0 && as->nonnull != 0))
                                return corrupt(err, "the input of an aggregate");
                        if (as->stale) {
                                as->stale = false;
                                as->ext = NIL;
                                for (uint32_t v = as->head; v != NIL;
                                     v = ((struct vent *)bmap_val(&n->values, v))->next)
                                        if (value_better(n, a, v, as->ext))
                                                as->ext = v;
                        }
                }
                r = group_output(n, dr->group, global, &n->arena, &row, &len, err);
                if (r < 0)
                        return r;
                if (dr->had_output && row && dr->old_len == len &&
                    memcmp(dr->old, row, len) == 0)
                        continue;
                if (dr->had_output && batch_ref(&n->out, dr->old, dr->old_len, t, -1) < 0)
                        return row_error_oom(err);
                if (row && batch_ref(&n->out, row, len, t, 1) < 0)
                        return row_error_oom(err);
                if (g->count == 0 && !global) {
                        for (size_t a = 0; a < rd->n_aggregates; a++)
                                if (g->aggs[a].head != NIL)
                                        return corrupt(err, "the input of min/max");
                        if (g->raw_head != NIL)
                                return corrupt(err, "the keys of a reduce");
                        bmap_remove(&n->map, dr->group);
                }
        }
        n->n_rdirty = 0;
        return 0;
}

/* -- Join -- */

static uint16_t row_ncols(const uint8_t *row)
{
        return (uint16_t)(row[0] | row[1] << 8);
}

/* The encoded key of a decoded row; 1 when a key column is NULL (never matches). */
static int join_key(struct node *n, const struct side *s, const struct row_datum *d,
                    size_t *ret_len, struct row_error *err)
{
        struct row_datum *kd = n->datums + n->in_arity;        /* past the row's */
        int64_t len;

        for (size_t k = 0; k < s->n_keys; k++) {
                kd[k] = d[s->key_cols[k]];
                if (kd[k].kind == ROW_KIND_NULL)
                        return 1;
                /* Numerics match by value: 1.5 = 1.50 (row.h "Numeric"). */
                if (kd[k].kind == ROW_KIND_NUMERIC)
                        kd[k] = row_numeric_normalize(&kd[k]);
        }
        len = buf_encode(&n->key, kd, s->n_keys);
        if (len < 0)
                return row_error_oom(err);
        *ret_len = (size_t)len;
        return 0;
}

/* Emit concat(l, r) with diff. */
static int join_emit(const struct dataflow *df, struct node *n, const uint8_t *l, size_t ll,
                     const uint8_t *r, size_t rl, uint64_t t, int64_t diff, struct row_error *err)
{
        uint8_t *p;
        unsigned cols = row_ncols(l) + row_ncols(r);

        assert(ll >= 2 && rl >= 2);
        if (df->mem_limit) {
                /* (6) One Join's output can outgrow everything else. */
                int rc;

                n->emitted += ll + rl + sizeof(struct eval_update);
                rc = mem_check(df, n->emitted, err);
                if (rc < 0)
                        return rc;
        }
        p = batch_alloc(&n->out, ll + rl - 2, t, diff);
        if (!p)
                return row_error_oom(err);
        p[0] = (uint8_t)cols;
        p[1] = (uint8_t)(cols >> 8);
        memcpy(p + 2, l + 2, ll - 2);
        memcpy(p + ll, r + 2, rl - 2);
        return 0;
}

/* Probe the other side with this side's delta, then add the delta to this side. */
static int join_side(const struct dataflow *df, struct node *n, int me, const struct node *ch,
                     uint64_t t, struct row_error *err)
{
        struct side *s = &n->side[me], *o = &n->side[1 - me];
        int r;

        for (size_t i = 0; i < ch->nd; i++) {
                const struct eval_update *u = &ch->d[i];
                size_t klen = 0;
                uint64_t kh, rh;
                uint32_t kid, rid;
                struct jrow *jr;

                if (row_decode(u->row, u->len, n->datums, ch->arity) != (int)ch->arity)
                        return row_error_set(err, -EINVAL, "XX000", "malformed row in a join");
                r = join_key(n, s, n->datums, &klen, err);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                kh = hash_bytes(n->key.p, klen);
                kid = bmap_find(&o->keys, kh, n->key.p, klen);
                if (kid != NIL)
                        for (uint32_t v = ((struct kgrp *)bmap_val(&o->keys, kid))->head; v != NIL;
                             v = ((struct jrow *)bmap_val(&o->rows, v))->next) {
                                const struct jrow *x = bmap_val(&o->rows, v);
                                const uint8_t *orow;
                                size_t olen;
                                int64_t diff;

                                if (x->count == 0)
                                        continue;
                                if (__builtin_mul_overflow(u->diff, x->count, &diff))
                                        return row_error_set(err, -EINVAL, "22003",
                                                             "row count out of range");
                                orow = bmap_key(&o->rows, v, &olen);
                                r = me == 0 ? join_emit(df, n, u->row, u->len, orow, olen, t, diff, err)
                                            : join_emit(df, n, orow, olen, u->row, u->len, t, diff, err);
                                if (r < 0)
                                        return r;
                        }
                /* Add to this side. */
                kid = bmap_find(&s->keys, kh, n->key.p, klen);
                if (kid == NIL) {
                        r = bmap_insert(&s->keys, kh, n->key.p, klen, &kid);
                        if (r < 0)
                                return row_error_oom(err);
                        ((struct kgrp *)bmap_val(&s->keys, kid))->head = NIL;
                }
                rh = hash_bytes(u->row, u->len);
                rid = bmap_find(&s->rows, rh, u->row, u->len);
                if (rid == NIL) {
                        struct kgrp *kg;

                        r = bmap_insert(&s->rows, rh, u->row, u->len, &rid);
                        if (r < 0)
                                return row_error_oom(err);
                        kg = bmap_val(&s->keys, kid);
                        jr = bmap_val(&s->rows, rid);
                        *jr = (struct jrow){ .key = kid, .prev = NIL, .next = kg->head };
                        if (kg->head != NIL)
                                ((struct jrow *)bmap_val(&s->rows, kg->head))->prev = rid;
                        kg->head = rid;
                        kg->n++;
                }
                jr = bmap_val(&s->rows, rid);
                if (!jr->dirty) {
                        jr->dirty = true;
                        if (idvec_push(&s->dirty, rid) < 0)
                                return row_error_oom(err);
                }
                if (__builtin_add_overflow(jr->count, u->diff, &jr->count))
                        return row_error_set(err, -EINVAL, "22003", "row count out of range");
        }
        return 0;
}

static void join_settle(struct side *s)
{
        for (size_t i = 0; i < s->dirty.n; i++) {
                uint32_t rid = s->dirty.v[i];
                struct jrow *jr = bmap_val(&s->rows, rid);
                struct kgrp *kg;

                jr->dirty = false;
                if (jr->count != 0)
                        continue;
                kg = bmap_val(&s->keys, jr->key);
                if (jr->prev != NIL)
                        ((struct jrow *)bmap_val(&s->rows, jr->prev))->next = jr->next;
                else
                        kg->head = jr->next;
                if (jr->next != NIL)
                        ((struct jrow *)bmap_val(&s->rows, jr->next))->prev = jr->prev;
                if (--kg->n == 0)
                        bmap_remove(&s->keys, jr->key);
                bmap_remove(&s->rows, rid);
        }
        s->dirty.n = 0;
}

int run_join(struct dataflow *df, struct node *n, uint64_t t, struct row_error *err)
{
        int r;

        /* dA |x| B_old, then A_new |x| dB: together dA B + A dB + dA dB. */
        n->emitted = 0;
        r = join_side(df, n, 0, &df->nodes[n->child[0]], t, err);
        if (r < 0)
                return r;
        r = join_side(df, n, 1, &df->nodes[n->child[1]], t, err);
        if (r < 0)
                return r;
        join_settle(&n->side[0]);
        join_settle(&n->side[1]);
        return 0;
}
