/* controller-dataflow-arrange.c -- arrangements (controller-dataflow.h): the updates
 * of a collection kept in memory to serve index reads.  The updates at times < since
 * are folded into a base (row -> count); the later ones are a log sorted by time,
 * whose rows live in one arena per insert, freed once compaction has folded all of
 * its entries into the base.  A read at t sums the base and the log up to t.
 *
 * Contract: controller-dataflow.h; what the engine's files share (the hash map):
 * controller-dataflow-internal.h.  The notes are numbered across the engine
 * (controller-dataflow.c lists where each stands); none stands here.
 */
#include "controller-dataflow-internal.h"

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
};

struct arrangement {
        uint64_t since, upper;
        struct bmap base;               /* row -> int64 count: updates at times < since */
        struct alog *log;               /* log[head..n): times >= since, sorted by time */
        size_t head, n, cap;
        struct aseg *segs;
        size_t seg_bytes;
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
        free(a->log);
        free(a);
        return NULL;
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
        return sizeof(*a) + bmap_bytes(&a->base) + a->cap * sizeof(struct alog) + a->seg_bytes;
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
                a->log[a->n++] = (struct alog){ p, u->len, u->time, u->diff, s };
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
        return 0;
}

int arrangement_compact(struct arrangement *a, uint64_t since)
{
        if (since <= a->since)
                return 0;
        if (since > a->upper)
                return -EINVAL;
        while (a->head < a->n && a->log[a->head].time < since) {
                const struct alog *l = &a->log[a->head];
                uint64_t h = hash_bytes(l->row, l->len);
                uint32_t id = bmap_find(&a->base, h, l->row, l->len);
                int64_t *c;
                int r;

                if (id == NIL) {
                        r = bmap_insert(&a->base, h, l->row, l->len, &id);
                        if (r < 0)
                                return r;       /* the prefix folded so far stays folded */
                }
                c = bmap_val(&a->base, id);
                if (__builtin_add_overflow(*c, l->diff, c))
                        return -EOVERFLOW;
                if (*c == 0)
                        bmap_remove(&a->base, id);
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
        a->since = since;
        return 0;
}

struct adj {
        int64_t count;
        bool in_base;
};

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
        for (size_t i = a->head; i < end; i++) {
                const struct alog *l = &a->log[i];
                uint64_t h = hash_bytes(l->row, l->len);
                uint32_t id = bmap_find(&adj, h, l->row, l->len);
                struct adj *x;

                if (id == NIL) {
                        r = bmap_insert(&adj, h, l->row, l->len, &id);
                        if (r < 0)
                                goto out;
                }
                x = bmap_val(&adj, id);
                if (__builtin_add_overflow(x->count, l->diff, &x->count)) {
                        r = -EUCLEAN;
                        goto out;
                }
        }
        for (uint32_t id = 0; id < a->base.top; id++) {
                const uint8_t *row;
                int64_t c;
                uint32_t x;

                if (!a->base.ents[id].key)
                        continue;
                row = bmap_key(&a->base, id, &len);
                c = *(int64_t *)bmap_val(&a->base, id);
                x = adj.n ? bmap_find(&adj, a->base.ents[id].hash, row, len) : NIL;
                if (x != NIL) {
                        struct adj *ax = bmap_val(&adj, x);

                        ax->in_base = true;
                        if (__builtin_add_overflow(c, ax->count, &c)) {
                                r = -EUCLEAN;
                                goto out;
                        }
                }
                if (c < 0) {
                        r = -EUCLEAN;
                        goto out;
                }
                if (c > 0) {
                        r = emit(ud, row, len, c);
                        if (r < 0)
                                goto out;
                }
        }
        for (uint32_t id = 0; id < adj.top; id++) {
                const struct adj *ax = bmap_val(&adj, id);
                const uint8_t *row;

                if (!adj.ents[id].key || ax->in_base)
                        continue;
                if (ax->count < 0) {
                        r = -EUCLEAN;
                        goto out;
                }
                if (ax->count > 0) {
                        row = bmap_key(&adj, id, &len);
                        r = emit(ud, row, len, ax->count);
                        if (r < 0)
                                goto out;
                }
        }
        r = 0;
out:
        bmap_done(&adj);
        return r;
}
