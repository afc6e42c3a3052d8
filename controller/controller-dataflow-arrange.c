/* controller-dataflow-arrange.c -- arrangements (controller-dataflow.h): the updates
 * of a collection kept in memory to serve index reads.  The updates at times <= since
 * are folded into a base (row -> count) -- at compaction, and at insert for those at
 * since itself (a fresh index's hydration, which no later compaction may move past
 * while its inputs are idle); the later ones are a log sorted by time,
 * whose rows live in one arena per insert, freed once compaction has folded all of
 * its entries into the base.  A read at t sums the base and the log up to t.
 *
 * Keyed (arrangement_set_keys(), an index on key columns): the base's rows are also
 * linked per value of the key columns (struct abase, a->keys), and each log entry
 * carries its key's hash, so arrangement_read_key() reads one key's rows in
 * O(its base rows + the log) instead of O(base + log).  Invariant: every live base
 * entry is on exactly its key's list, and a key entry exists iff its list is non-empty
 * (key_link(), key_unlink(); checked by the unit tests' arrangement_check_keys()).
 *
 * Contract: controller-dataflow.h; what the engine's files share (the hash map):
 * controller-dataflow-internal.h.  The notes are numbered across the engine
 * (controller-dataflow.c lists where each stands); none stands here.
 */
#include "controller-dataflow-internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* ---- Arrangements. ---- */

struct aseg {
        struct aseg *prev, *next;
        size_t live;                    /* log entries whose rows are here */
        size_t bytes;
        struct row_arena arena;
};

struct alog {
        const uint8_t *row;
        size_t len;
        uint64_t time;
        int64_t diff;
        struct aseg *seg;
        uint64_t khash;                 /* keyed: hash of the row's key */
};

/* A keyed base entry's value; the count comes first, so that an unkeyed base (whose
 * value is the int64 count alone) reads the same. */
struct abase {
        int64_t count;
        uint32_t key;                   /* in a->keys */
        uint32_t prev, next;            /* the key's rows, NIL-terminated */
};

struct akey {
        uint32_t head;                  /* a base entry, or NIL */
        uint32_t n;
};

/* Scratch for computing a row's key. */
struct kscratch {
        struct row_datum *datums;       /* arity */
        struct row_datum *kd;           /* n_keys */
        uint8_t *buf;
        size_t cap;
};

struct arrangement {
        uint64_t since, upper;
        struct bmap base;               /* row -> count (or struct abase): times <= since */
        struct alog *log;               /* log[head..n): times > since, sorted by time */
        size_t head, n, cap;
        struct aseg *segs;
        size_t seg_bytes;
        uint32_t *key_cols;             /* keyed: the key columns, NULL otherwise */
        size_t n_keys, arity;
        struct bmap keys;               /* keyed: key bytes -> struct akey */
        struct kscratch ks;
};

int arrangement_new(uint64_t since, struct arrangement **ret)
{
        struct arrangement *a = calloc(1, sizeof(*a));

        if (!a)
                return -ENOMEM;
        a->since = a->upper = since;
        bmap_init(&a->base, sizeof(int64_t));
        *ret = a;
        return 0;
}

static void seg_free(struct arrangement *a, struct aseg *s)
{
        if (s->prev)
                s->prev->next = s->next;
        else
                a->segs = s->next;
        if (s->next)
                s->next->prev = s->prev;
        a->seg_bytes -= s->bytes;
        row_arena_done(&s->arena);
        free(s);
}

struct arrangement *arrangement_free(struct arrangement *a)
{
        if (!a)
                return NULL;
        while (a->segs)
                seg_free(a, a->segs);
        bmap_done(&a->base);
        bmap_done(&a->keys);
        free(a->key_cols);
        free(a->ks.datums);
        free(a->ks.buf);
        free(a->log);
        free(a);
        return NULL;
}

int arrangement_set_keys(struct arrangement *a, const uint32_t *cols, size_t n, size_t arity)
{
        if (a->base.n || a->n || a->key_cols || n == 0 || arity == 0 || arity > UINT16_MAX)
                return -EINVAL;
        for (size_t k = 0; k < n; k++)
                if (cols[k] >= arity)
                        return -EINVAL;
        a->key_cols = malloc(n * sizeof(*a->key_cols));
        a->ks.datums = malloc((arity + n) * sizeof(*a->ks.datums));
        if (!a->key_cols || !a->ks.datums) {
                free(a->key_cols);
                free(a->ks.datums);
                a->key_cols = NULL;
                a->ks.datums = NULL;
                return -ENOMEM;
        }
        memcpy(a->key_cols, cols, n * sizeof(*cols));
        a->ks.kd = a->ks.datums + arity;
        a->n_keys = n;
        a->arity = arity;
        bmap_done(&a->base);
        bmap_init(&a->base, sizeof(struct abase));
        bmap_init(&a->keys, sizeof(struct akey));
        return 0;
}

bool arrangement_keyed(const struct arrangement *a, const uint32_t **ret_cols, size_t *ret_n)
{
        if (ret_cols)
                *ret_cols = a->key_cols;
        if (ret_n)
                *ret_n = a->n_keys;
        return a->key_cols != NULL;
}

/* The encoded key of row in ks->buf: 0 with *ret_len, or -errno (-EBADMSG: not a row
 * of the arrangement's arity). */
static int row_key(const struct arrangement *a, struct kscratch *ks, const uint8_t *row,
                   size_t len, size_t *ret_len)
{
        int64_t size;
        int r = row_decode(row, len, ks->datums, a->arity);

        if (r < 0)
                return r;
        if ((size_t)r != a->arity)
                return -EBADMSG;
        for (size_t k = 0; k < a->n_keys; k++)
                ks->kd[k] = ks->datums[a->key_cols[k]];
        size = row_encoded_size(ks->kd, a->n_keys);
        if (size < 0)
                return (int)size;
        if ((size_t)size > ks->cap) {
                uint8_t *p = realloc(ks->buf, (size_t)size);

                if (!p)
                        return -ENOMEM;
                ks->buf = p;
                ks->cap = (size_t)size;
        }
        *ret_len = row_encode_into(ks->kd, a->n_keys, ks->buf);
        return 0;
}

/* Put base entry id (a new row) on its key's list. */
static int key_link(struct arrangement *a, uint32_t id)
{
        size_t len, klen;
        const uint8_t *row = bmap_key(&a->base, id, &len);
        struct abase *b;
        struct akey *g;
        uint32_t kid;
        uint64_t h;
        int r = row_key(a, &a->ks, row, len, &klen);

        if (r < 0)
                return r;
        h = hash_bytes(a->ks.buf, klen);
        kid = bmap_find(&a->keys, h, a->ks.buf, klen);
        if (kid == NIL) {
                r = bmap_insert(&a->keys, h, a->ks.buf, klen, &kid);
                if (r < 0)
                        return r;
                ((struct akey *)bmap_val(&a->keys, kid))->head = NIL;
        }
        g = bmap_val(&a->keys, kid);
        b = bmap_val(&a->base, id);
        b->key = kid;
        b->prev = NIL;
        b->next = g->head;
        if (g->head != NIL)
                ((struct abase *)bmap_val(&a->base, g->head))->prev = id;
        g->head = id;
        g->n++;
        return 0;
}

/* Take base entry id off its key's list (before it is removed). */
static void key_unlink(struct arrangement *a, uint32_t id)
{
        struct abase *b = bmap_val(&a->base, id);
        struct akey *g = bmap_val(&a->keys, b->key);

        if (b->prev != NIL)
                ((struct abase *)bmap_val(&a->base, b->prev))->next = b->next;
        else
                g->head = b->next;
        if (b->next != NIL)
                ((struct abase *)bmap_val(&a->base, b->next))->prev = b->prev;
        assert(g->n > 0);
        if (--g->n == 0) {
                assert(g->head == NIL);
                bmap_remove(&a->keys, b->key);
        }
}

uint64_t arrangement_since(const struct arrangement *a)
{
        return a->since;
}

uint64_t arrangement_upper(const struct arrangement *a)
{
        return a->upper;
}

void arrangement_set_upper(struct arrangement *a, uint64_t upper)
{
        if (upper > a->upper)
                a->upper = upper;
}

size_t arrangement_rows(const struct arrangement *a)
{
        return a->base.n;
}

size_t arrangement_updates(const struct arrangement *a)
{
        return a->base.n + (a->n - a->head);
}

size_t arrangement_bytes(const struct arrangement *a)
{
        return sizeof(*a) + bmap_bytes(&a->base) + bmap_bytes(&a->keys) + a->cap * sizeof(struct alog) +
               a->seg_bytes;
}

static int cmp_alog(const void *x, const void *y)
{
        const struct alog *a = x, *b = y;

        return (a->time > b->time) - (a->time < b->time);
}

/* First log index in [head, n) with time > t. */
static size_t log_upper_bound(const struct arrangement *a, uint64_t t)
{
        size_t lo = a->head, hi = a->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (a->log[mid].time <= t)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static int fold(struct arrangement *a, uint64_t since);

int arrangement_insert(struct arrangement *a, const struct eval_batch *updates)
{
        struct aseg *s;
        uint64_t tmin = UINT64_MAX;
        size_t old_n = a->n, from;
        bool sorted = true;

        if (updates->n == 0)
                return 0;
        for (size_t i = 0; i < updates->n; i++) {
                if (updates->updates[i].time < a->since)
                        return -EINVAL;
                if (updates->updates[i].time < tmin)
                        tmin = updates->updates[i].time;
                if (i && updates->updates[i].time < updates->updates[i - 1].time)
                        sorted = false;
        }
        /* Room in the log: compact the folded prefix away first. */
        if (a->n + updates->n > a->cap) {
                if (a->head > 0) {
                        memmove(a->log, a->log + a->head, (a->n - a->head) * sizeof(*a->log));
                        a->n -= a->head;
                        old_n = a->n;
                        a->head = 0;
                }
                if (a->n + updates->n > a->cap) {
                        size_t cap = a->cap ? a->cap : 64;
                        struct alog *l;

                        while (cap < a->n + updates->n)
                                cap *= 2;
                        l = realloc(a->log, cap * sizeof(*l));
                        if (!l)
                                return -ENOMEM;
                        a->log = l;
                        a->cap = cap;
                }
        }
        /* Where the new entries must be merged in: after every old entry at <= tmin. */
        from = log_upper_bound(a, tmin);
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->arena = ROW_ARENA_INIT;
        for (size_t i = 0; i < updates->n; i++) {
                const struct eval_update *u = &updates->updates[i];
                uint8_t *p;

                if (u->diff == 0)
                        continue;
                p = row_arena_alloc(&s->arena, u->len ? u->len : 1);
                if (!p) {
                        a->n = old_n;
                        row_arena_done(&s->arena);
                        free(s);
                        return -ENOMEM;
                }
                if (u->len)
                        memcpy(p, u->row, u->len);
                s->bytes += u->len;
                a->log[a->n] = (struct alog){ p, u->len, u->time, u->diff, s, 0 };
                if (a->key_cols) {
                        size_t klen;
                        int r = row_key(a, &a->ks, p, u->len, &klen);

                        if (r < 0) {
                                a->n = old_n;
                                row_arena_done(&s->arena);
                                free(s);
                                return r;
                        }
                        a->log[a->n].khash = hash_bytes(a->ks.buf, klen);
                }
                a->n++;
                s->live++;
        }
        if (s->live == 0) {
                row_arena_done(&s->arena);
                free(s);
                return 0;
        }
        s->next = a->segs;
        if (a->segs)
                a->segs->prev = s;
        a->segs = s;
        a->seg_bytes += s->bytes;
        /* Keep the log sorted: re-sort from the first entry later than the new minimum. */
        if (!sorted || from < old_n)
                qsort(a->log + from, a->n - from, sizeof(*a->log), cmp_alog);
        /* Updates at since go to the base now.  A failure leaves them in the log, which
         * reads sum as well: still right, only slower. */
        (void)fold(a, a->since);
        return 0;
}

/* Fold the log's entries at times <= since into the base.  On an error the prefix
 * folded so far stays folded, the rest stays in the log: both are read. */
static int fold(struct arrangement *a, uint64_t since)
{
        while (a->head < a->n && a->log[a->head].time <= since) {
                const struct alog *l = &a->log[a->head];
                uint64_t h = hash_bytes(l->row, l->len);
                uint32_t id = bmap_find(&a->base, h, l->row, l->len);
                int64_t *c;
                int r;

                if (id == NIL) {
                        r = bmap_insert(&a->base, h, l->row, l->len, &id);
                        if (r < 0)
                                return r;       /* the prefix folded so far stays folded */
                        r = a->key_cols ? key_link(a, id) : 0;
                        if (r < 0) {
                                bmap_remove(&a->base, id);
                                return r;
                        }
                }
                c = bmap_val(&a->base, id);
                if (__builtin_add_overflow(*c, l->diff, c))
                        return -EOVERFLOW;
                if (*c == 0) {
                        if (a->key_cols)
                                key_unlink(a, id);
                        bmap_remove(&a->base, id);
                }
                if (--l->seg->live == 0)
                        seg_free(a, l->seg);
                a->head++;
        }
        if (a->head == a->n)
                a->head = a->n = 0;
        else if (a->head > 1024 && a->head > a->n / 2) {
                memmove(a->log, a->log + a->head, (a->n - a->head) * sizeof(*a->log));
                a->n -= a->head;
                a->head = 0;
        }
        return 0;
}

int arrangement_compact(struct arrangement *a, uint64_t since)
{
        int r;

        if (since <= a->since)
                return 0;
        if (since > a->upper)
                return -EINVAL;
        r = fold(a, since);
        if (r < 0)
                return r;
        a->since = since;
        return 0;
}

struct adj {
        int64_t count;
        bool in_base;
};

/* A read's log part: add l's diff to its row in adj. */
static int adj_add(struct bmap *adj, const struct alog *l)
{
        uint64_t h = hash_bytes(l->row, l->len);
        uint32_t id = bmap_find(adj, h, l->row, l->len);
        struct adj *x;
        int r;

        if (id == NIL) {
                r = bmap_insert(adj, h, l->row, l->len, &id);
                if (r < 0)
                        return r;
        }
        x = bmap_val(adj, id);
        return __builtin_add_overflow(x->count, l->diff, &x->count) ? -EUCLEAN : 0;
}

/* A base row with count c at since, plus what adj holds for it: emit it when positive. */
static int emit_base(struct bmap *adj, const uint8_t *row, size_t len, uint64_t hash, int64_t c,
                     eval_emit_fn emit, void *ud)
{
        uint32_t x = adj->n ? bmap_find(adj, hash, row, len) : NIL;

        if (x != NIL) {
                struct adj *ax = bmap_val(adj, x);

                ax->in_base = true;
                if (__builtin_add_overflow(c, ax->count, &c))
                        return -EUCLEAN;
        }
        if (c < 0)
                return -EUCLEAN;
        return c > 0 ? emit(ud, row, len, c) : 0;
}

/* The rows only the log holds: emit the positive ones. */
static int emit_log_only(const struct bmap *adj, eval_emit_fn emit, void *ud)
{
        for (uint32_t id = 0; id < adj->top; id++) {
                const struct adj *ax = bmap_val(adj, id);
                const uint8_t *row;
                size_t len;
                int r;

                if (!adj->ents[id].key || ax->in_base)
                        continue;
                if (ax->count < 0)
                        return -EUCLEAN;
                if (ax->count > 0) {
                        row = bmap_key(adj, id, &len);
                        r = emit(ud, row, len, ax->count);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int arrangement_read(const struct arrangement *a, uint64_t t, eval_emit_fn emit, void *ud)
{
        struct bmap adj;
        size_t end, len;
        int r = 0;

        if (t < a->since)
                return -EDOM;
        if (t >= a->upper)
                return -EAGAIN;
        end = log_upper_bound(a, t);
        bmap_init(&adj, sizeof(struct adj));
        for (size_t i = a->head; i < end && r >= 0; i++)
                r = adj_add(&adj, &a->log[i]);
        for (uint32_t id = 0; r >= 0 && id < a->base.top; id++) {
                const uint8_t *row;

                if (!a->base.ents[id].key)
                        continue;
                row = bmap_key(&a->base, id, &len);
                r = emit_base(&adj, row, len, a->base.ents[id].hash,
                              *(int64_t *)bmap_val(&a->base, id), emit, ud);
        }
        if (r >= 0)
                r = emit_log_only(&adj, emit, ud);
        bmap_done(&adj);
        return r < 0 ? r : 0;
}

int arrangement_read_key(const struct arrangement *a, uint64_t t, const void *key, size_t klen,
                         eval_emit_fn emit, void *ud)
{
        struct kscratch ks = { 0 };
        struct bmap adj;
        uint64_t kh = hash_bytes(key, klen);
        uint32_t kid, id;
        size_t end, len, kl;
        int r = 0;

        if (!a->key_cols)
                return -EINVAL;
        if (t < a->since)
                return -EDOM;
        if (t >= a->upper)
                return -EAGAIN;
        ks.datums = malloc((a->arity + a->n_keys) * sizeof(*ks.datums));
        if (!ks.datums)
                return -ENOMEM;
        ks.kd = ks.datums + a->arity;
        end = log_upper_bound(a, t);
        bmap_init(&adj, sizeof(struct adj));
        for (size_t i = a->head; i < end && r >= 0; i++) {
                const struct alog *l = &a->log[i];

                if (l->khash != kh)
                        continue;
                r = row_key(a, &ks, l->row, l->len, &kl);
                if (r >= 0 && kl == klen && memcmp(ks.buf, key, klen) == 0)
                        r = adj_add(&adj, l);
        }
        kid = bmap_find(&a->keys, kh, key, klen);
        id = kid == NIL ? NIL : ((const struct akey *)bmap_val(&a->keys, kid))->head;
        while (r >= 0 && id != NIL) {
                const struct abase *b = bmap_val(&a->base, id);
                const uint8_t *row = bmap_key(&a->base, id, &len);

                r = emit_base(&adj, row, len, a->base.ents[id].hash, b->count, emit, ud);
                id = b->next;
        }
        if (r >= 0)
                r = emit_log_only(&adj, emit, ud);
        bmap_done(&adj);
        free(ks.datums);
        free(ks.buf);
        return r < 0 ? r : 0;
}

int arrangement_check_keys(const struct arrangement *a)
{
        size_t on_lists = 0;

        if (!a->key_cols)
                return 0;
        for (uint32_t kid = 0; kid < a->keys.top; kid++) {
                const struct akey *g = bmap_val(&a->keys, kid);
                uint32_t prev = NIL, n = 0;

                if (!a->keys.ents[kid].key)
                        continue;
                if (g->n == 0)
                        return -EUCLEAN;
                for (uint32_t id = g->head; id != NIL; id = ((const struct abase *)bmap_val(&a->base, id))->next) {
                        const struct abase *b = bmap_val(&a->base, id);

                        if (!a->base.ents[id].key || b->key != kid || b->prev != prev || ++n > g->n)
                                return -EUCLEAN;
                        prev = id;
                }
                if (n != g->n)
                        return -EUCLEAN;
                on_lists += n;
        }
        return on_lists == a->base.n ? 0 : -EUCLEAN;
}
