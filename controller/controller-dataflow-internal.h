/* controller-dataflow-internal.h -- shared by the files of the incremental dataflow
 * engine (controller-dataflow*.c); not part of the controller-dataflow.h contract.
 *
 * The byte-string hash map (struct bmap) with the helpers that run per key or per row
 * (inline), the operators' state (struct node), the inputs and the handle (struct
 * dataflow), and the functions that one file of the engine calls in another, grouped
 * by the file that defines them.  "(n)" is the engine's note of that number:
 * controller-dataflow.c lists where each stands.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "controller-dataflow.h"
#include "row/row-expr.h"
#include "util.h"

#define NIL UINT32_MAX

/* ---- Byte-string hash maps with stable ids (3). ---- */

static inline uint64_t mix64(uint64_t h)
{
        h ^= h >> 32;
        h *= 0xd6e8feb86659fd93ull;
        h ^= h >> 32;
        h *= 0xd6e8feb86659fd93ull;
        h ^= h >> 32;
        return h;
}

static inline uint64_t hash_bytes(const void *p, size_t len)
{
        const uint8_t *b = p;
        uint64_t h = 0x9e3779b97f4a7c15ull ^ (len * 0xff51afd7ed558ccdull), v;

        while (len >= 8) {
                memcpy(&v, b, 8);
                h = (h ^ v) * 0xbf58476d1ce4e5b9ull;
                h ^= h >> 29;
                b += 8;
                len -= 8;
        }
        v = 0;
        if (len)
                memcpy(&v, b, len);
        return mix64(h ^ v);
}

struct bent {
        uint64_t hash;
        uint8_t *key;           /* owned; NULL: a free entry */
        uint32_t len;
        uint32_t next;          /* next in the bucket's chain, or in the free list */
};

struct bmap {
        uint32_t *heads;        /* mask + 1 buckets, NULL while empty */
        size_t mask;
        struct bent *ents;      /* ents[0..top) ever used, stable ids */
        uint8_t *vals;          /* val_size bytes per entry, parallel to ents */
        size_t val_size;
        uint32_t top, cap, free;
        size_t n;               /* live entries */
        size_t key_bytes;
};

static inline void *bmap_val(const struct bmap *m, uint32_t id)
{
        return m->vals + (size_t)id * m->val_size;
}

static inline const uint8_t *bmap_key(const struct bmap *m, uint32_t id, size_t *ret_len)
{
        *ret_len = m->ents[id].len;
        return m->ents[id].key;
}

static inline uint32_t bmap_find(const struct bmap *m, uint64_t hash, const void *key,
                                 size_t len)
{
        if (!m->heads)
                return NIL;
        for (uint32_t i = m->heads[hash & m->mask]; i != NIL; i = m->ents[i].next) {
                const struct bent *e = &m->ents[i];

                if (e->hash == hash && e->len == len && memcmp(e->key, key, len) == 0)
                        return i;
        }
        return NIL;
}

/* A growable array of entry ids (dirty lists). */
struct idvec {
        uint32_t *v;
        size_t n, cap;
};

static inline int idvec_push(struct idvec *iv, uint32_t id)
{
        if (iv->n == iv->cap) {
                size_t cap = iv->cap ? 2 * iv->cap : 64;
                uint32_t *v = realloc(iv->v, cap * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                iv->v = v;
                iv->cap = cap;
        }
        iv->v[iv->n++] = id;
        return 0;
}

/* ---- Batch helpers. ---- */

/* Append an update whose row bytes live elsewhere (valid for the current time). */
static inline int batch_ref(struct eval_batch *b, const uint8_t *row, size_t len,
                            uint64_t time, int64_t diff)
{
        if (eval_batch_reserve(b) < 0)
                return -ENOMEM;
        b->updates[b->n++] = (struct eval_update){ row, len, time, diff };
        return 0;
}

/* A growable byte buffer for encoding keys. */
struct buf {
        uint8_t *p;
        size_t cap;
};

/* ---- Operators. ---- */

enum node_kind {
        NODE_GET,
        NODE_CONSTANT,
        NODE_LINEAR,
        NODE_UNION,
        NODE_NEGATE,
        NODE_DISTINCT,
        NODE_REDUCE,
        NODE_JOIN,
        NODE_TOPK,
        NODE_THRESHOLD,
};

/* Distinct, Threshold (8): row -> count. */
struct dis_ent {
        int64_t count;
        int64_t old;            /* count before the current time, while dirty */
        bool dirty;
};

/* TopK (7): an emitted row's count in `values`. */
struct top_ent {
        int64_t count;
        uint32_t gen;           /* the recomputation that kept it in the window */
};

/* Reduce. */
struct agg_state {
        __int128 sum;           /* SUM: exact, range-checked at output */
        int64_t nonnull;        /* COUNT, SUM, MIN, MAX: rows with a non-NULL value */
        uint32_t head;          /* MIN, MAX: the value list */
        uint32_t ext;           /* MIN, MAX: the current extreme, NIL when none */
        bool stale;             /* ext was removed at this time; rescan */
};

struct group {
        int64_t count;
        uint32_t dirty;         /* index in the dirty list + 1, 0 when clean */
        /* A key with numerics: the group is its value (numerics normalized) and this
         * lists the keys its rows spelled (1.5, 1.50), value list entries with agg
         * RAW_KEYS; the output spells the greatest (row_compare()). NIL otherwise. */
        uint32_t raw_head;
        struct agg_state aggs[];
};

#define RAW_KEYS 0xffffu        /* struct vent.agg of a group's raw key */

/* A min/max value: key = u32 group id, u16 aggregate index, 1-column row. */
struct vent {
        int64_t count;
        uint32_t prev, next;
        uint32_t group;
        uint16_t agg;
        bool dirty;
};

#define VKEY_PREFIX 6

struct reduce_dirty {
        uint32_t group;
        bool had_output;        /* the group had an output row before this time */
        const uint8_t *old;     /* that row, in the node's time arena */
        size_t old_len;
};

/* Join side: key -> list of rows; row -> count. */
struct kgrp {
        uint32_t head;
        uint32_t n;
};

struct jrow {
        int64_t count;
        uint32_t key;
        uint32_t prev, next;
        bool dirty;
};

struct side {
        struct bmap keys;       /* val: struct kgrp */
        struct bmap rows;       /* val: struct jrow */
        struct idvec dirty;
        const uint32_t *key_cols;
        size_t n_keys;
};

struct node {
        enum node_kind kind;
        uint32_t gen;                   /* TOPK (7): recomputations (fills kind's padding) */
        const Coord__Plan__Relation *rel;
        size_t arity;
        enum row_type *types;
        size_t child[2];        /* Linear, Negate, Distinct, Threshold, Reduce: [0];
                                 * Join: both */
        size_t *children;       /* Union */
        size_t n_children;

        /* The output delta at the current time (1). */
        const struct eval_update *d;
        size_t nd;
        struct eval_batch out;

        size_t input;                   /* GET: input index */
        struct eval_plan *plan;         /* LINEAR */
        struct row_datum *datums;       /* decode scratch (input arity + extra) */
        struct buf key;                 /* key scratch */
        size_t emitted;                 /* (6) JOIN: bytes of output at this time */
        struct bmap map;                /* DISTINCT, THRESHOLD rows; REDUCE groups */
        struct idvec dirty;             /* DISTINCT, THRESHOLD, REDUCE */
        /* REDUCE */
        const Coord__Plan__Reduce *reduce;
        size_t in_arity;
        struct bmap values;             /* val: struct vent */
        struct idvec vdirty;
        struct reduce_dirty *rdirty;
        size_t n_rdirty, cap_rdirty;
        struct row_arena arena;         /* old output rows of this time */
        /* JOIN */
        struct side side[2];
        /* TOPK (7): map is the input (struct dis_ent), values the window (struct
         * top_ent), in_arity the input's arity; gen is beside kind. */
};

struct input {
        uint64_t id;
        const Coord__Plan__Type *types;         /* borrowed from the first Get */
        size_t n_types;
        enum row_type *rtypes;
        struct eval_batch pending;              /* buffered updates */
        bool sorted;                            /* pending is in time order */
        size_t cursor;                          /* processed prefix of pending */
        size_t end;                             /* end of the current time's slice */
};

struct dataflow {
        const Coord__Plan__Relation *plan;
        uint64_t as_of, frontier;
        bool started;                   /* as_of has been processed */
        struct node *nodes;             /* post-order, root last */
        size_t n_nodes, cap_nodes;
        struct input *inputs;           /* ascending ids */
        size_t n_inputs;
        struct eval_batch result;       /* the root's delta, consolidated */
        size_t mem_limit;               /* (6) bytes; 0: none, nothing counted */
        const atomic_bool *cancel;      /* (6) set by another thread: stop at a check */
        struct df_deadline *deadline;   /* (6) owned; NULL: none */
        size_t mem_inputs;              /* (6) buffered input */
        ptrdiff_t mem_state;            /* (6) operators' state (changes summed) */
        size_t mem_deltas;              /* (6) outputs of the time being processed */
        int error;                      /* poisoned: the first error, with error_info */
        struct row_error *error_info;   /* allocated when poisoned: 1.3 KB each, and a
                                         * bulk install holds 100,000 healthy dataflows */
};

/* ---- Called across files. ---- */

/* controller-dataflow.c */
void bmap_init(struct bmap *m, size_t val_size);
void bmap_done(struct bmap *m);
int bmap_insert(struct bmap *m, uint64_t hash, const void *key, size_t len,
                uint32_t *ret);
void bmap_remove(struct bmap *m, uint32_t id);
size_t bmap_bytes(const struct bmap *m);
uint8_t *batch_alloc(struct eval_batch *b, size_t len, uint64_t time, int64_t diff);
int buf_reserve(struct buf *b, size_t n);
int64_t buf_encode(struct buf *b, const struct row_datum *d, size_t n);
/* (6) A deadline and the checks made since the clock was last read: mutable through
 * the const dataflow the operators see. */
struct df_deadline {
        uint64_t at_ns;
        unsigned checks;
};
int mem_check(const struct dataflow *df, size_t extra, struct row_error *err);

/* controller-dataflow-ops.c: one node's run at time t (run_node()) */
int run_union(struct dataflow *df, struct node *n, bool negate, struct row_error *err);
int run_distinct(struct dataflow *df, struct node *n, uint64_t t, bool threshold,
                 struct row_error *err);
int run_topk(struct dataflow *df, struct node *n, uint64_t t, struct row_error *err);
int run_reduce(struct dataflow *df, struct node *n, uint64_t t, struct row_error *err);
int run_join(struct dataflow *df, struct node *n, uint64_t t, struct row_error *err);
