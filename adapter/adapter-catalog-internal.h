/* adapter-catalog-internal.h -- what the files of the catalog writer's items share; not
 * part of the adapter-catalog.h contract.
 *
 * The catalog writer is adapter-catalog.c (the built-ins, the name index, the items and
 * their dependencies and requirements in memory, the analyzer's view) and the
 * adapter-catalog-*.c files beside it.  Here: the handle, a DDL transaction, and the
 * functions one of those files calls in another, grouped by the file that defines them.
 * A bare "note N" in a file is that file's note; the notes of another are named with
 * its file.  Single-threaded (the adapter's loop thread), except acat_open()'s loaders.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter-catalog.h"
#include "oamap.h"
#include "catalog/catalog.h"
#include "catalog.pb-c.h"

#define META_NEXT_GID "next_gid"
#define KEY_ITEM  CATALOG_STATE_ITEM
#define KEY_BOUND CATALOG_STATE_BOUND
#define KEY_REQ   CATALOG_STATE_REQ

/* A slot of the name index (adapter-catalog.c note 2): it NULL empty; hash is name_hash()
 * of its name, so that a probe compares names only on a full hash match (at 100,000
 * names every other comparison would be a cache miss on an item). */
struct name_ent {
        struct acat_item *it;
        uint64_t hash;
};

static inline bool name_ent_used(const void *e)
{
        return ((const struct name_ent *)e)->it != NULL;
}

static inline uint64_t name_ent_hash(const void *e)
{
        return ((const struct name_ent *)e)->hash;
}

static const struct oa_kind names_kind = {
        .entry_size = sizeof(struct name_ent), .min_slots = 128,
        .used = name_ent_used, .hash = name_ent_hash,
};

struct adapter_catalog {
        struct catalog *store;
        struct acat_load_times load;    /* acat_open()'s */
        struct acat_item **items;       /* sorted by gid */
        size_t n_items, cap_items;
        size_t n_builtin;
        struct name_ent *names;         /* hash by name (adapter-catalog.c note 2) */
        size_t names_mask, n_names;     /* n_names: entries in names and names_old */
        struct oa_old names_old;        /* a grow under way (oamap.c note 1) */
        uint64_t next_gid;
        bool publishing;                /* a publication's commit is in flight */
        struct acat_hold *holds;        /* clients' holds (adapter-hold.c) */
        size_t n_holds, cap_holds;
        uint64_t next_hold;
        int (*leases_each)(void *src, sql_lease_fn fn, void *arg);     /* acat_set_leases() */
        void *leases_src;
};

enum txn_kind { TXN_CREATE, TXN_DROP, TXN_PUBLISH, TXN_ALTER, TXN_ALTER_SINK };

struct acat_txn {
        enum txn_kind kind;
        bool create;                    /* kind == TXN_CREATE */
        struct acat_item **items;       /* create: the new items (a source: its progress,
                                         * then it); drop: the dropped ones */
        size_t n_items, cap_items;
        struct catalog_op *ops;
        size_t n_ops, cap_ops;
        void **bufs;                    /* one allocation per op: key and value */
        size_t cap_bufs;
        struct acat_bound_change *bch;
        size_t n_bch, cap_bch;
        struct acat_req_change *rch;
        size_t n_rch, cap_rch;
        uint64_t alter_gid, alter_retain_ms;    /* TXN_ALTER */
        struct acat_item *sink_def;     /* TXN_ALTER_SINK: the new definition (a scratch
                                         * item: plan, inputs, refs, on_id, as_of) */
        struct acat_req *sink_old;      /* TXN_ALTER_SINK: the reqs as they were */
        size_t n_sink_old;
        /* A drop of something a publication in flight moves: committed after it (its
         * rows and ops assume the publication's values, acat_txn_after_publication()). */
        bool after_publication;
};

/* adapter-catalog.c */
extern struct acat_item acat_builtins[6];    /* the built-in relations, by gid */
uint64_t name_hash(const char *s);
/* The name index: it's name, free in neither array, is added (-ENOMEM: not added);
 * it, present, is removed; a name's slot, or NULL. */
int names_add(struct adapter_catalog *ac, struct acat_item *it);
void names_remove(struct adapter_catalog *ac, const struct acat_item *it);
struct name_ent *names_slot(const struct adapter_catalog *ac, const char *name);
int checks_dup(const struct sql_check *v, size_t n, struct sql_check **ret);
int uniques_dup(const struct sql_unique *v, size_t n, struct sql_unique **ret);
int fkeys_dup(const struct sql_foreign_key *v, size_t n, struct sql_foreign_key **ret);
void item_free(struct acat_item *it);
/* Clear the pointers of `other` into owner's block (item_from_proto()): they go with owner. */
void item_disown(const struct acat_item *owner, struct acat_item *other);
bool u64_has(const uint64_t *v, size_t n, uint64_t x);
uint64_t *u64_dup(const uint64_t *v, size_t n);
int item_set_definition(struct acat_item *it, const uint8_t *plan, size_t plan_len,
                        const uint64_t *li, size_t nli, const uint64_t *pi, size_t npi,
                        const uint64_t *refs, size_t nrefs, const uint32_t *keys, size_t nkeys);
int item_set_plan(struct acat_item *it, const Coord__Plan__Relation *plan,
                  const uint64_t *logical, size_t n_logical, const uint64_t *physical,
                  size_t n_physical, const uint64_t *refs, size_t n_refs,
                  const uint32_t *keys, size_t n_keys);
int dependent_add(struct acat_item *it, uint64_t gid);
void dependent_remove(struct acat_item *it, uint64_t gid);
int req_consumer_add(struct acat_item *input, struct acat_item *consumer);
void req_consumer_remove(struct acat_item *input, const struct acat_item *consumer);
struct acat_req *req_find(const struct acat_item *consumer, uint64_t input);
int req_put(struct acat_item *consumer, uint64_t input, uint64_t frontier);
size_t items_lower_bound(const struct adapter_catalog *ac, uint64_t gid);
int items_array_add(struct adapter_catalog *ac, struct acat_item *it);
int items_add(struct adapter_catalog *ac, struct acat_item *it);
void index_refresh(const struct adapter_catalog *ac, struct acat_item *target);
int deps_link(struct adapter_catalog *ac, struct acat_item *it, struct acat_item *near,
              struct acat_txn *const *before, size_t n_before);
void deps_unlink(struct adapter_catalog *ac, struct acat_item *it);
void items_remove(struct adapter_catalog *ac, uint64_t gid);

/* adapter-catalog-codec.c */
struct item_chunk;
/* An item from its record, in one block from *chunk (item_chunk_alloc()); p is not
 * kept.  NULL when out of memory. */
struct acat_item *item_from_proto(const Coord__CatalogItem *p, struct item_chunk **chunk);
/* Load chunks (adapter-catalog-open.c note 4a): size zeroed bytes, 16-aligned, from
 * *cur, or a new chunk that becomes *cur; a block larger than a chunk is calloc()ed
 * (*ret_chunked false).  item_chunk_put() drops a block's (or a filler's) reference;
 * the last one unmaps the chunk.  Not thread-safe: a chunk is filled by one thread
 * and put only after that thread let it go. */
void *item_chunk_alloc(struct item_chunk **cur, size_t size, bool *ret_chunked);
void item_chunk_put(const void *block);
/* The filler's reference on *cur, once it carves no more; *cur = NULL. */
void item_chunk_release(struct item_chunk **cur);
int item_encode(const struct acat_item *it, uint8_t **ret, size_t *ret_len);
void key_put(uint8_t key[9], char kind, uint64_t gid);

/* adapter-catalog-ddl.c */
void txn_free(struct acat_txn *t);
int txn_op(struct acat_txn *t, enum catalog_op_kind kind, enum catalog_cf cf, const void *key,
           size_t klen, const void *val, size_t vlen);
void req_key(uint8_t key[17], uint64_t consumer, uint64_t input);
int txn_put_req(struct acat_txn *t, uint64_t consumer, uint64_t input, uint64_t frontier);
int txn_rch(struct acat_txn *t, const struct acat_req_change *c);
/* An item by gid, or one of the creations `before` (pending, committed in the same
 * write before the one being built: acat_create_begin_after()). */
struct acat_item *item_or_before(const struct adapter_catalog *ac, uint64_t gid,
                                 struct acat_txn *const *before, size_t n_before);

/* adapter-catalog-sink.c */
void alter_sink_finish(struct adapter_catalog *ac, struct acat_txn *t, int commit_result);
