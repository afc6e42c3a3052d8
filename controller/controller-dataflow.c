/* controller-dataflow.c -- incremental dataflows and arrangements (controller-dataflow.h):
 * the engine's core.
 *
 * The engine's files:
 *   controller-dataflow.c            the hash maps' growth, the batch helpers, the
 *                                    handle (memory bound, freeing, accessors),
 *                                    pushing, and running the nodes time by time
 *   controller-dataflow-build.c      building: the plan validated and flattened
 *   controller-dataflow-ops.c        the operators' runs at one time
 *   controller-dataflow-arrange.c    arrangements
 *   controller-dataflow-internal.h   what they share
 *
 * NOTES ON THE DESIGN
 *
 * The notes are numbered across the engine; each stands in the file that enforces
 * it, and "(n)" in any file of the engine names it:
 *   controller-dataflow.c            1, 2, 3, 5, 6 (below)
 *   controller-dataflow-ops.c        4, 7, 8
 *
 * (1) A dataflow is its plan tree flattened into `nodes` in post-order: every node's
 *     children come before it and the root is last, so running the nodes in array order
 *     is a topological order.  A node's output delta at the current time is the view
 *     (d, nd); it stays valid until the end of that time, so a parent may reference a
 *     child's rows without copying them (Union, Negate, Join's probes).
 *
 * (2) Times are processed one at a time, increasing.  For time t every node, in order,
 *     reads its children's deltas at t, folds them into its own state and produces its
 *     delta at t.  A stateful node records the state it had before t the first time an
 *     update touches a key at t (the key becomes "dirty"), and settles the dirty keys
 *     once all the updates at t are in: deltas need not be consolidated, and a count
 *     that is negative only halfway through t is no error.
 *
 * (3) State is kept in struct bmap, a chained hash map from byte strings (rows, keys) to
 *     fixed-size values with STABLE entry ids (uint32), so that entries can be linked
 *     into intrusive lists: the rows of one join key, the values of one min/max
 *     aggregate of one group.  Keys are malloc'ed once per distinct key; an update of an
 *     existing key allocates nothing.
 *
 * (5) Errors poison: the state may be halfway through a time, so the first error is
 *     kept in df->error and every later call returns it.
 *
 * (6) Memory bound (a peek's, issue 36: a cross product of 13 small tables took 4.2 GB
 *     and stalled the controller).  With a limit set, df->mem_* count approximately what
 *     the dataflow holds: buffered input (row bytes + an update each), the operators'
 *     state (bmap_bytes(), its change over each node's run) and the deltas of the time
 *     being processed (each node's output, freed only at the next time).  The count is
 *     checked after every node, and inside a Join at every emitted row, where one node
 *     can grow without bound; passing the limit is error 53200 and poisons the
 *     dataflow.  Without a limit (maintained dataflows) nothing is counted.  The same
 *     checks stop a peek cancelled from the loop while the peek thread steps it
 *     (dataflow_set_cancel(): 57014, poisoned), so a cancelled cross product gives
 *     the thread back within one emitted row, and a write's evaluation past its
 *     deadline (dataflow_set_deadline(): one check in 256 reads the clock).
 */
#include "controller-dataflow-internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "row/row-expr.h"
#include "util.h"

/* ---- Byte-string hash maps with stable ids. ---- */

void bmap_init(struct bmap *m, size_t val_size)
{
        *m = (struct bmap){ .val_size = val_size, .free = NIL };
}

void bmap_done(struct bmap *m)
{
        for (uint32_t i = 0; i < m->top; i++)
                free(m->ents[i].key);
        free(m->heads);
        free(m->ents);
        free(m->vals);
        bmap_init(m, m->val_size);
}

static int bmap_grow(struct bmap *m)
{
        size_t nb = m->heads ? 2 * (m->mask + 1) : 16;
        uint32_t *h;

        h = malloc(nb * sizeof(*h));
        if (!h)
                return -ENOMEM;
        memset(h, 0xff, nb * sizeof(*h));
        free(m->heads);
        m->heads = h;
        m->mask = nb - 1;
        for (uint32_t i = 0; i < m->top; i++)
                if (m->ents[i].key) {
                        uint32_t *head = &h[m->ents[i].hash & m->mask];

                        m->ents[i].next = *head;
                        *head = i;
                }
        return 0;
}

/* Insert a key known to be absent, with a zeroed value.  -ENOMEM, -E2BIG. */
int bmap_insert(struct bmap *m, uint64_t hash, const void *key, size_t len,
                uint32_t *ret)
{
        uint32_t id;
        uint8_t *k;
        int r;

        if (len > UINT32_MAX)
                return -E2BIG;
        if (!m->heads || 2 * (m->n + 1) > m->mask + 1) {   /* load <= 1/2 */
                r = bmap_grow(m);
                if (r < 0)
                        return r;
        }
        if (m->free == NIL && m->top == m->cap) {
                size_t cap = m->cap ? 2 * (size_t)m->cap : 16;
                struct bent *e;
                uint8_t *v;

                if (cap >= NIL)
                        cap = NIL - 1;
                if (cap <= m->cap)
                        return -E2BIG;
                e = realloc(m->ents, cap * sizeof(*e));
                if (!e)
                        return -ENOMEM;
                m->ents = e;
                v = realloc(m->vals, cap * m->val_size);
                if (!v)
                        return -ENOMEM;
                m->vals = v;
                m->cap = (uint32_t)cap;
        }
        k = malloc(len ? len : 1);
        if (!k)
                return -ENOMEM;
        if (len)
                memcpy(k, key, len);
        if (m->free != NIL) {
                id = m->free;
                m->free = m->ents[id].next;
        } else
                id = m->top++;
        m->ents[id] = (struct bent){ hash, k, (uint32_t)len, m->heads[hash & m->mask] };
        m->heads[hash & m->mask] = id;
        memset(bmap_val(m, id), 0, m->val_size);
        m->n++;
        m->key_bytes += len;
        *ret = id;
        return 0;
}

void bmap_remove(struct bmap *m, uint32_t id)
{
        struct bent *e = &m->ents[id];
        uint32_t *p = &m->heads[e->hash & m->mask];

        assert(e->key);
        while (*p != id) {
                assert(*p != NIL);
                p = &m->ents[*p].next;
        }
        *p = e->next;
        free(e->key);
        m->key_bytes -= e->len;
        e->key = NULL;
        e->next = m->free;
        m->free = id;
        m->n--;
}

size_t bmap_bytes(const struct bmap *m)
{
        return (m->heads ? (m->mask + 1) * sizeof(uint32_t) : 0) +
               (size_t)m->cap * (sizeof(struct bent) + m->val_size) + m->key_bytes;
}

/* ---- Batch helpers. ---- */

/* Append an update with room for `len` row bytes in the batch's arena. */
uint8_t *batch_alloc(struct eval_batch *b, size_t len, uint64_t time, int64_t diff)
{
        uint8_t *p;

        if (eval_batch_reserve(b) < 0)
                return NULL;
        p = row_arena_alloc(&b->bytes, len ? len : 1);
        if (!p)
                return NULL;
        b->updates[b->n++] = (struct eval_update){ p, len, time, diff };
        return p;
}

int buf_reserve(struct buf *b, size_t n)
{
        uint8_t *p;
        size_t cap;

        if (n <= b->cap)
                return 0;
        cap = b->cap ? b->cap : 64;
        while (cap < n)
                cap *= 2;
        p = realloc(b->p, cap);
        if (!p)
                return -ENOMEM;
        b->p = p;
        b->cap = cap;
        return 0;
}

/* Encode datums into the buffer; returns the length or a negative errno. */
int64_t buf_encode(struct buf *b, const struct row_datum *d, size_t n)
{
        int64_t size = row_encoded_size(d, n);

        if (size < 0)
                return size;
        if (buf_reserve(b, (size_t)size) < 0)
                return -ENOMEM;
        return (int64_t)row_encode_into(d, n, b->p);
}

/* ---- The handle: memory (6), freeing, accessors. ---- */

/* (6) Is the dataflow, holding `extra` bytes more than counted, over its limit,
 * cancelled, or past its deadline? */
int mem_check(const struct dataflow *df, size_t extra, struct row_error *err)
{
        ptrdiff_t state = df->mem_state > 0 ? df->mem_state : 0;

        if (df->cancel && atomic_load_explicit(df->cancel, memory_order_relaxed))
                return row_error_set(err, -ECANCELED, "57014", "canceling statement due to "
                                     "user request");
        if (df->deadline && (++df->deadline->checks & 255) == 0 && now_ns() > df->deadline->at_ns)
                return row_error_set(err, -ECANCELED, "57014", "canceling statement due to "
                                     "statement timeout");
        if (!df->mem_limit || df->mem_inputs + (size_t)state + df->mem_deltas + extra <= df->mem_limit)
                return 0;
        row_error_set(err, -E2BIG, "53200", "out of memory: the query needs more than its "
                      "memory limit of %zu MB", df->mem_limit >> 20);
        row_error_detail(err, "A query's evaluation in the controller may hold at most %zu MB "
                         "(coord-controller --peek-memory-limit-mb).", df->mem_limit >> 20);
        row_error_hint(err, "Join the tables on equalities, or filter them first: a join "
                       "without one holds the product of its inputs.");
        return -E2BIG;
}

/* (6) Bytes of a node's operator state. */
static size_t node_state_bytes(const struct node *n)
{
        return bmap_bytes(&n->map) + bmap_bytes(&n->values) + bmap_bytes(&n->side[0].keys) +
               bmap_bytes(&n->side[0].rows) + bmap_bytes(&n->side[1].keys) +
               bmap_bytes(&n->side[1].rows);
}

/* (6) Bytes of a batch's updates and rows. */
static size_t batch_bytes(const struct eval_batch *b)
{
        size_t bytes = b->cap * sizeof(*b->updates);

        for (size_t i = 0; i < b->n; i++)
                bytes += b->updates[i].len;
        return bytes;
}

void dataflow_set_cancel(struct dataflow *df, const atomic_bool *flag)
{
        df->cancel = flag;
}

int dataflow_set_deadline(struct dataflow *df, uint64_t deadline_ns)
{
        if (!df->deadline && !(df->deadline = calloc(1, sizeof(*df->deadline))))
                return -ENOMEM;
        df->deadline->at_ns = deadline_ns;
        return 0;
}

void dataflow_set_memory_limit(struct dataflow *df, size_t bytes)
{
        df->mem_limit = bytes;
        df->mem_inputs = 0;
        for (size_t i = 0; bytes && i < df->n_inputs; i++)
                df->mem_inputs += batch_bytes(&df->inputs[i].pending);
        df->mem_state = 0;
        for (size_t i = 0; bytes && i < df->n_nodes; i++)
                df->mem_state += (ptrdiff_t)node_state_bytes(&df->nodes[i]);
        df->mem_deltas = 0;
}

static void node_done(struct node *n)
{
        free(n->types);
        free(n->children);
        eval_batch_done(&n->out);
        eval_plan_free(n->plan);
        free(n->datums);
        free(n->key.p);
        bmap_done(&n->map);
        free(n->dirty.v);
        bmap_done(&n->values);
        free(n->vdirty.v);
        free(n->rdirty);
        row_arena_done(&n->arena);
        for (int s = 0; s < 2; s++) {
                bmap_done(&n->side[s].keys);
                bmap_done(&n->side[s].rows);
                free(n->side[s].dirty.v);
        }
}

struct dataflow *dataflow_free(struct dataflow *df)
{
        if (!df)
                return NULL;
        for (size_t i = 0; i < df->n_nodes; i++)
                node_done(&df->nodes[i]);
        free(df->nodes);
        for (size_t i = 0; i < df->n_inputs; i++) {
                free(df->inputs[i].rtypes);
                eval_batch_done(&df->inputs[i].pending);
        }
        free(df->inputs);
        free(df->deadline);
        eval_batch_done(&df->result);
        free(df->error_info);
        free(df);
        return NULL;
}

size_t dataflow_arity(const struct dataflow *df)
{
        return df->nodes[df->n_nodes - 1].arity;
}

const enum row_type *dataflow_types(const struct dataflow *df)
{
        return df->nodes[df->n_nodes - 1].types;
}

size_t dataflow_n_inputs(const struct dataflow *df)
{
        return df->n_inputs;
}

uint64_t dataflow_input_id(const struct dataflow *df, size_t i)
{
        assert(i < df->n_inputs);
        return df->inputs[i].id;
}

uint64_t dataflow_as_of(const struct dataflow *df)
{
        return df->as_of;
}

uint64_t dataflow_frontier(const struct dataflow *df)
{
        return df->frontier;
}

/* ---- Pushing. ---- */

static int poisoned(const struct dataflow *df, struct row_error *err)
{
        if (err) {
                if (df->error_info)
                        *err = *df->error_info;
                else
                        row_error_set(err, df->error, "XX000", "dataflow failed");
        }
        return df->error;
}

int dataflow_push(struct dataflow *df, size_t input, const struct eval_update *u, size_t n,
                  struct row_error *err)
{
        struct input *in;
        size_t first;

        if (df->error)
                return poisoned(df, err);
        if (input >= df->n_inputs)
                return row_error_set(err, -EINVAL, "XX000", "no input %zu", input);
        in = &df->inputs[input];
        for (size_t i = 0; i < n; i++) {
                uint64_t t = u[i].time < df->as_of ? df->as_of : u[i].time;

                if (t < df->frontier)
                        return row_error_set(err, -EINVAL, "XX000",
                                             "update of collection %llu at time %llu, which "
                                             "the dataflow has processed (frontier %llu)",
                                             (unsigned long long)in->id,
                                             (unsigned long long)t,
                                             (unsigned long long)df->frontier);
                if (row_check(u[i].row, u[i].len, in->rtypes, in->n_types) < 0)
                        return row_error_set(err, -EINVAL, "XX000",
                                             "collection %llu holds a row that does not match "
                                             "its columns",
                                             (unsigned long long)in->id);
        }
        if (df->mem_limit) {
                size_t add = 0;

                for (size_t i = 0; i < n; i++)
                        add += u[i].len + sizeof(*u);
                int r = mem_check(df, add, err);

                if (r < 0)
                        return r;
                df->mem_inputs += add;
        }
        first = in->pending.n;
        for (size_t i = 0; i < n; i++) {
                uint64_t t = u[i].time < df->as_of ? df->as_of : u[i].time;

                if (u[i].diff == 0)
                        continue;
                if (in->pending.n > in->cursor && in->pending.updates[in->pending.n - 1].time > t)
                        in->sorted = false;
                if (eval_batch_push(&in->pending, u[i].row, u[i].len, t, u[i].diff) < 0) {
                        in->pending.n = first;
                        return row_error_oom(err);
                }
        }
        return 0;
}

/* ---- Running one time. ---- */

static int run_node(struct dataflow *df, struct node *n, uint64_t t, struct row_error *err)
{
        int r = 0;

        eval_batch_clear(&n->out);
        switch (n->kind) {
        case NODE_GET: {
                const struct input *in = &df->inputs[n->input];

                n->d = in->pending.updates + in->cursor;
                n->nd = in->end - in->cursor;
                return 0;
        }
        case NODE_CONSTANT:
                if (!df->started) {
                        const Coord__Plan__Constant *k = n->rel->constant;

                        for (size_t i = 0; i < k->n_rows && r >= 0; i++)
                                if (k->rows[i]->diff != 0)
                                        r = batch_ref(&n->out, k->rows[i]->row.data,
                                                      k->rows[i]->row.len, t, k->rows[i]->diff);
                        if (r < 0)
                                return row_error_oom(err);
                }
                break;
        case NODE_LINEAR: {
                const struct node *ch = &df->nodes[n->child[0]];

                r = eval_plan_apply(n->plan, ch->d, ch->nd, t, &n->out, err);
                break;
        }
        case NODE_UNION:
                r = run_union(df, n, false, err);
                break;
        case NODE_NEGATE:
                r = run_union(df, n, true, err);
                break;
        case NODE_DISTINCT:
                r = run_distinct(df, n, t, false, err);
                break;
        case NODE_THRESHOLD:
                r = run_distinct(df, n, t, true, err);
                break;
        case NODE_REDUCE:
                r = run_reduce(df, n, t, err);
                break;
        case NODE_JOIN:
                r = run_join(df, n, t, err);
                break;
        case NODE_TOPK:
                r = run_topk(df, n, t, err);
                break;
        }
        n->d = n->out.updates;
        n->nd = n->out.n;
        return r;
}

static int run_time(struct dataflow *df, uint64_t t, struct eval_batch *out,
                    struct row_error *err)
{
        const struct node *root;
        int r;

        for (size_t i = 0; i < df->n_inputs; i++) {
                struct input *in = &df->inputs[i];
                size_t e = in->cursor;

                while (e < in->pending.n && in->pending.updates[e].time == t)
                        e++;
                in->end = e;
        }
        df->mem_deltas = 0;
        for (size_t i = 0; i < df->n_nodes; i++) {
                struct node *n = &df->nodes[i];
                size_t state = df->mem_limit ? node_state_bytes(n) : 0;

                r = run_node(df, n, t, err);
                if (r < 0)
                        return r;
                if (df->mem_limit) {
                        /* (6) A Get's delta is its input's buffer, counted there. */
                        df->mem_state += (ptrdiff_t)node_state_bytes(n) - (ptrdiff_t)state;
                        if (n->kind != NODE_GET)
                                df->mem_deltas += batch_bytes(&n->out);
                        r = mem_check(df, 0, err);
                        if (r < 0)
                                return r;
                }
        }
        for (size_t i = 0; i < df->n_inputs; i++)
                df->inputs[i].cursor = df->inputs[i].end;
        /* The root's delta, consolidated, copied out. */
        root = &df->nodes[df->n_nodes - 1];
        df->result.n = 0;
        for (size_t i = 0; i < root->nd; i++)
                if (batch_ref(&df->result, root->d[i].row, root->d[i].len, t,
                              root->d[i].diff) < 0)
                        return row_error_oom(err);
        if (eval_batch_consolidate(&df->result) < 0)
                return row_error_set(err, -EINVAL, "22003", "row count out of range");
        for (size_t i = 0; i < df->result.n; i++) {
                const struct eval_update *u = &df->result.updates[i];

                if (eval_batch_push(out, u->row, u->len, t, u->diff) < 0)
                        return row_error_oom(err);
        }
        return 0;
}

static int cmp_time(const void *x, const void *y)
{
        const struct eval_update *a = x, *b = y;

        return (a->time > b->time) - (a->time < b->time);
}

/* Drop the processed prefix of an input's buffer once it is at least half of it, so
 * that many small steps over a large buffer copy each update O(1) times amortized. */
static int input_trim(struct input *in)
{
        struct eval_batch rest = EVAL_BATCH_INIT;

        if (in->cursor == 0 || (in->cursor < in->pending.n && 2 * in->cursor < in->pending.n))
                return 0;
        if (in->cursor == in->pending.n) {
                eval_batch_clear(&in->pending);
                in->cursor = in->end = 0;
                return 0;
        }
        for (size_t i = in->cursor; i < in->pending.n; i++) {
                const struct eval_update *u = &in->pending.updates[i];

                if (eval_batch_push(&rest, u->row, u->len, u->time, u->diff) < 0) {
                        eval_batch_done(&rest);
                        return -ENOMEM;
                }
        }
        eval_batch_done(&in->pending);
        in->pending = rest;
        in->cursor = in->end = 0;
        return 0;
}

int dataflow_step(struct dataflow *df, uint64_t frontier, struct eval_batch *out,
                  struct row_error *err)
{
        size_t first = out->n;
        int r;

        if (df->error)
                return poisoned(df, err);
        if (frontier <= df->frontier)
                return 0;
        for (size_t i = 0; i < df->n_inputs; i++) {
                struct input *in = &df->inputs[i];

                if (!in->sorted) {
                        qsort(in->pending.updates + in->cursor, in->pending.n - in->cursor,
                              sizeof(*in->pending.updates), cmp_time);
                        in->sorted = true;
                }
        }
        for (;;) {
                uint64_t t = UINT64_MAX;
                bool any = false;

                if (!df->started) {
                        t = df->as_of;
                        any = true;
                } else
                        for (size_t i = 0; i < df->n_inputs; i++) {
                                const struct input *in = &df->inputs[i];

                                if (in->cursor < in->pending.n &&
                                    in->pending.updates[in->cursor].time <= t) {
                                        t = in->pending.updates[in->cursor].time;
                                        any = true;
                                }
                        }
                if (!any || t >= frontier)
                        break;
                r = run_time(df, t, out, err);
                if (r < 0)
                        goto fail;
                df->started = true;
        }
        df->frontier = frontier;
        for (size_t i = 0; i < df->n_inputs; i++) {
                r = input_trim(&df->inputs[i]);
                if (r < 0) {
                        r = row_error_oom(err);
                        goto fail;
                }
        }
        if (df->mem_limit) {
                df->mem_inputs = 0;     /* (6) what the trims left */
                for (size_t i = 0; i < df->n_inputs; i++)
                        df->mem_inputs += batch_bytes(&df->inputs[i].pending);
        }
        return 0;
fail:
        out->n = first;
        df->error = r;
        if (!df->error_info)    /* NULL: poisoned() says less */
                df->error_info = malloc(sizeof(*df->error_info));
        if (df->error_info) {
                if (err)
                        *df->error_info = *err;
                else
                        row_error_set(df->error_info, r, "XX000", "dataflow failed");
        }
        return r;
}

size_t dataflow_state_bytes(const struct dataflow *df)
{
        size_t b = sizeof(*df) + df->cap_nodes * sizeof(struct node);

        for (size_t i = 0; i < df->n_nodes; i++) {
                const struct node *n = &df->nodes[i];

                b += bmap_bytes(&n->map) + bmap_bytes(&n->values);
                for (int s = 0; s < 2; s++)
                        b += bmap_bytes(&n->side[s].keys) + bmap_bytes(&n->side[s].rows);
        }
        for (size_t i = 0; i < df->n_inputs; i++) {
                const struct input *in = &df->inputs[i];

                b += in->pending.cap * sizeof(struct eval_update);
                for (size_t k = 0; k < in->pending.n; k++)
                        b += in->pending.updates[k].len;
        }
        return b;
}
