/* adapter-catalog.c -- the catalog writer's items.  See adapter-catalog.h.
 *
 * NOTES ON THE DESIGN
 * (The others: adapter-catalog-ddl.c notes 1 and 3, adapter-catalog-open.c note 4.)
 * (2) items[] holds every item, sorted by GlobalId (built-ins first, user GlobalIds are
 *     handed out increasing); lookups by id are a binary search.  The name index is an
 *     open-addressing hash table of item pointers with their names' hashes (linear
 *     probing, backward-shift deletion by oa_delete_at(); a probe reads an item only on
 *     a full hash match).  It grows in steps (oamap.c note 1): names_add() moves a few
 *     clusters of the old array per name added and lookups look in both, so no CREATE
 *     holds the loop for a rehash of every name.  Both are O(1)/O(log n) so statements
 *     cost the same with 100,000 objects as with 10.
 */
#include "adapter-catalog-internal.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "builtins.h"
#include "catalog/catalog.h"
#include "catalog.pb-c.h"
#include "coord.pb-c.h"
#include "util.h"

/* ---- built-ins ---- */

static struct sql_column objects_cols[] = {
        { (char *)"id", ROW_TYPE_INT8, false },
        { (char *)"name", ROW_TYPE_TEXT, false },
        { (char *)"kind", ROW_TYPE_TEXT, false },
        { (char *)"create_sql", ROW_TYPE_TEXT, true },
};
static struct sql_column frontiers_cols[] = {
        { (char *)"object_id", ROW_TYPE_INT8, false },
        { (char *)"read_frontier", ROW_TYPE_INT8, false },
        { (char *)"write_frontier", ROW_TYPE_INT8, false },
};
static struct sql_column bounds_cols[] = {
        { (char *)"object_id", ROW_TYPE_INT8, false },
        { (char *)"bound", ROW_TYPE_INT8, false },
};
static struct sql_column requirements_cols[] = {
        { (char *)"consumer_id", ROW_TYPE_INT8, false },
        { (char *)"input_id", ROW_TYPE_INT8, false },
        { (char *)"frontier", ROW_TYPE_INT8, false },
};
_Static_assert(ACAT_GID_OBJECTS == COORD_GID_OBJECTS && ACAT_GID_FRONTIERS == COORD_GID_FRONTIERS &&
               ACAT_GID_BOUNDS == COORD_GID_BOUNDS && ACAT_GID_REQUIREMENTS == COORD_GID_REQUIREMENTS &&
               ACAT_FIRST_USER_GID == COORD_FIRST_USER_GID, "builtins.h");

/* Live status relations (builtins.h): the controller's state when it reads them. */
static struct sql_column sources_cols[] = {
        { (char *)"source_id", ROW_TYPE_INT8, false },
        { (char *)"progress_id", ROW_TYPE_INT8, false },
        { (char *)"offset", ROW_TYPE_INT8, false },
        { (char *)"upper", ROW_TYPE_INT8, false },
        { (char *)"status", ROW_TYPE_TEXT, false },
        { (char *)"error", ROW_TYPE_TEXT, true },
};
static struct sql_column refreshes_cols[] = {
        { (char *)"object_id", ROW_TYPE_INT8, false },
        { (char *)"last_refresh", ROW_TYPE_INT8, true },
        { (char *)"next_refresh", ROW_TYPE_INT8, true },
};

#define BUILTIN(id, nm, cols)                                                           \
        { .gid = (id), .name = (char *)(nm), .kind = SQL_OBJECT_TABLE, .columns = (cols),     \
          .n_columns = ELEMENTSOF(cols), .builtin = true }

struct acat_item acat_builtins[] = {
        BUILTIN(ACAT_GID_OBJECTS, "coord_objects", objects_cols),
        BUILTIN(ACAT_GID_FRONTIERS, "coord_frontiers", frontiers_cols),
        BUILTIN(ACAT_GID_BOUNDS, "coord_bounds", bounds_cols),
        BUILTIN(ACAT_GID_REQUIREMENTS, "coord_requirements", requirements_cols),
        BUILTIN(COORD_GID_SOURCES, "coord_sources", sources_cols),
        BUILTIN(COORD_GID_REFRESHES, "coord_refreshes", refreshes_cols),
};

const char *acat_kind_name(enum sql_object_kind kind)
{
        return sql_object_kind_name(kind);
}

/* ---- the name index ---- */

uint64_t name_hash(const char *s)
{
        uint64_t h = 1469598103934665603ull;    /* FNV-1a */

        for (; *s; s++)
                h = (h ^ (uint8_t)*s) * 1099511628211ull;
        /* The table takes the low bits, and FNV's low bits hardly depend on the high
         * bits of the characters: names like v_1 .. v_99999 clustered into long probe
         * runs.  Fold the high bits down (the finalizer of MurmurHash3). */
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
        return h;
}

/* The slot of name (hash h) in one array, or NULL. */
static struct name_ent *names_probe(struct name_ent *tab, size_t mask, const char *name,
                                    uint64_t h)
{
        for (size_t i = h & mask; tab[i].it; i = (i + 1) & mask)
                if (tab[i].hash == h && strcmp(tab[i].it->name, name) == 0)
                        return &tab[i];
        return NULL;
}

/* In the new array, then in old while the index grows (oamap.c note 1). */
static struct name_ent *names_find(const struct adapter_catalog *ac, const char *name,
                                   uint64_t h)
{
        struct name_ent *e = ac->names ? names_probe(ac->names, ac->names_mask, name, h) : NULL;

        if (!e && ac->names_old.slots)
                e = names_probe(ac->names_old.slots, ac->names_old.mask, name, h);
        return e;
}

int names_add(struct adapter_catalog *ac, struct acat_item *it)
{
        uint64_t h = name_hash(it->name);
        size_t i;
        int r;

        r = oa_reserve_stepped(&names_kind, (void **)&ac->names, &ac->names_mask,
                               &ac->names_old, ac->n_names, 1);
        if (r < 0)
                return r;
        assert(!names_find(ac, it->name, h));
        for (i = h & ac->names_mask; ac->names[i].it; i = (i + 1) & ac->names_mask)
                ;
        ac->names[i] = (struct name_ent){ it, h };
        ac->n_names++;
        return 0;
}

void names_remove(struct adapter_catalog *ac, const struct acat_item *it)
{
        uint64_t h = name_hash(it->name);
        struct name_ent *e;

        if (ac->names && (e = names_probe(ac->names, ac->names_mask, it->name, h))) {
                assert(e->it == it);
                oa_delete_at(&names_kind, ac->names, ac->names_mask, (size_t)(e - ac->names));
        } else {
                struct name_ent *o = ac->names_old.slots;

                e = o ? names_probe(o, ac->names_old.mask, it->name, h) : NULL;
                assert(e && e->it == it);
                if (!e)
                        return;
                oa_delete_at(&names_kind, o, ac->names_old.mask, (size_t)(e - o));
                ac->names_old.n--;
        }
        ac->n_names--;
}

struct name_ent *names_slot(const struct adapter_catalog *ac, const char *name)
{
        return names_find(ac, name, name_hash(name));
}

/* ---- items ---- */

/* A table's CHECK constraints and keys are each a name and an owned array: *name and
 * *bytes, copies of name and of len bytes at p.  -ENOMEM leaves what was made there. */
static int name_bytes_dup(const char *name, const void *p, size_t len, char **rn, void **rp)
{
        *rn = strdup(name);
        *rp = malloc(len ? len : 1);
        if (!*rn || !*rp)
                return -ENOMEM;
        memcpy(*rp, p, len);
        return 0;
}

static void checks_free(struct sql_check *v, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(v[i].name);
                free(v[i].expr);
        }
        free(v);
}

static void uniques_free(struct sql_unique *v, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(v[i].name);
                free(v[i].columns);
        }
        free(v);
}

static void fkeys_free(struct sql_foreign_key *v, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(v[i].name);
                free(v[i].columns);
                free(v[i].ref_columns);
        }
        free(v);
}

/* Deep copies of n checks, n keys into *ret (NULL when n is 0); -ENOMEM. */
int checks_dup(const struct sql_check *v, size_t n, struct sql_check **ret)
{
        struct sql_check *d = n ? calloc(n, sizeof(*d)) : NULL;

        *ret = NULL;
        if (n && !d)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                d[i].expr_len = v[i].expr_len;
                if (name_bytes_dup(v[i].name, v[i].expr, v[i].expr_len, &d[i].name, (void **)&d[i].expr) < 0) {
                        checks_free(d, i + 1);
                        return -ENOMEM;
                }
        }
        *ret = d;
        return 0;
}

int uniques_dup(const struct sql_unique *v, size_t n, struct sql_unique **ret)
{
        struct sql_unique *d = n ? calloc(n, sizeof(*d)) : NULL;

        *ret = NULL;
        if (n && !d)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                d[i] = (struct sql_unique){ .n_columns = v[i].n_columns, .primary = v[i].primary };
                if (name_bytes_dup(v[i].name, v[i].columns, v[i].n_columns * sizeof(uint32_t), &d[i].name,
                                   (void **)&d[i].columns) < 0) {
                        uniques_free(d, i + 1);
                        return -ENOMEM;
                }
        }
        *ret = d;
        return 0;
}

int fkeys_dup(const struct sql_foreign_key *v, size_t n, struct sql_foreign_key **ret)
{
        struct sql_foreign_key *d = n ? calloc(n, sizeof(*d)) : NULL;

        *ret = NULL;
        if (n && !d)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                size_t size = v[i].n_columns * sizeof(uint32_t);

                d[i] = (struct sql_foreign_key){ .n_columns = v[i].n_columns, .ref_id = v[i].ref_id,
                                                 .ref_columns = malloc(size ? size : 1) };
                if (!d[i].ref_columns ||
                    name_bytes_dup(v[i].name, v[i].columns, size, &d[i].name, (void **)&d[i].columns) < 0) {
                        fkeys_free(d, i + 1);
                        return -ENOMEM;
                }
                memcpy(d[i].ref_columns, v[i].ref_columns, size);
        }
        *ret = d;
        return 0;
}

/* Whether p lies in it's own allocation (a loaded item's block), not one of its own. */
static bool item_in_block(const struct acat_item *it, const void *p)
{
        return (const char *)p >= (const char *)it && (const char *)p < (const char *)it + it->block_len;
}

static void item_field_free(const struct acat_item *it, void *p)
{
        if (!item_in_block(it, p))
                free(p);
}

void item_free(struct acat_item *it)
{
        if (!it || it->builtin)
                return;
        for (size_t i = 0; i < it->n_columns; i++) {
                item_field_free(it, it->columns[i].name);
                item_field_free(it, it->columns[i].default_row);
        }
        item_field_free(it, it->columns);
        checks_free(it->checks, it->n_checks);
        uniques_free(it->uniques, it->n_uniques);
        fkeys_free(it->fkeys, it->n_fkeys);
        item_field_free(it, it->name);
        item_field_free(it, it->create_sql);
        if (it->plan)
                coord__plan__relation__free_unpacked(it->plan, NULL);
        item_field_free(it, it->plan_bytes);
        item_field_free(it, it->logical_inputs);
        item_field_free(it, it->physical_inputs);
        item_field_free(it, it->refs);
        item_field_free(it, it->keys);
        item_field_free(it, it->refresh_at);
        item_field_free(it, it->sink_path);
        item_field_free(it, it->source_path);
        free(it->dependents);
        free(it->reqs);
        free(it->req_consumers);
        if (it->chunked)
                item_chunk_put(it);
        else
                free(it);
}

void item_disown(const struct acat_item *owner, struct acat_item *other)
{
        if (item_in_block(owner, other->plan_bytes))
                other->plan_bytes = NULL;
        if (item_in_block(owner, other->logical_inputs))
                other->logical_inputs = NULL;
        if (item_in_block(owner, other->physical_inputs))
                other->physical_inputs = NULL;
        if (item_in_block(owner, other->refs))
                other->refs = NULL;
}

bool u64_has(const uint64_t *v, size_t n, uint64_t x)
{
        for (size_t i = 0; i < n; i++)
                if (v[i] == x)
                        return true;
        return false;
}

uint64_t *u64_dup(const uint64_t *v, size_t n)
{
        uint64_t *d = malloc((n ? n : 1) * sizeof(*d));

        if (d && n)
                memcpy(d, v, n * sizeof(*d));
        return d;
}

/* The definition fields shared by item_from_proto() and acat_create_begin(). */
int item_set_definition(struct acat_item *it, const uint8_t *plan, size_t plan_len,
                               const uint64_t *li, size_t nli, const uint64_t *pi, size_t npi,
                               const uint64_t *refs, size_t nrefs, const uint32_t *keys, size_t nkeys)
{
        if (plan_len) {
                /* Unpacked on first use (acat_relation(), adapter-catalog-open.c note 4). */
                it->plan_bytes = malloc(plan_len);
                if (!it->plan_bytes)
                        return -ENOMEM;
                memcpy(it->plan_bytes, plan, plan_len);
                it->plan_len = plan_len;
        }
        it->logical_inputs = u64_dup(li, nli);
        it->physical_inputs = u64_dup(pi, npi);
        it->refs = u64_dup(refs, nrefs);
        it->keys = malloc((nkeys ? nkeys : 1) * sizeof(*it->keys));
        if (!it->logical_inputs || !it->physical_inputs || !it->refs || !it->keys)
                return -ENOMEM;
        if (nkeys)
                memcpy(it->keys, keys, nkeys * sizeof(*keys));
        it->n_logical = nli;
        it->n_physical = npi;
        it->n_refs = nrefs;
        it->n_keys = nkeys;
        return 0;
}

/* item_set_definition() from a plan (may be NULL), packed here. */
int item_set_plan(struct acat_item *it, const Coord__Plan__Relation *plan,
                  const uint64_t *logical, size_t n_logical, const uint64_t *physical,
                  size_t n_physical, const uint64_t *refs, size_t n_refs,
                  const uint32_t *keys, size_t n_keys)
{
        _cleanup_free_ uint8_t *planbuf = NULL;
        size_t plen = 0;

        if (plan) {
                plen = coord__plan__relation__get_packed_size(plan);
                planbuf = malloc(plen ? plen : 1);
                if (!planbuf)
                        return -ENOMEM;
                coord__plan__relation__pack(plan, planbuf);
        }
        return item_set_definition(it, planbuf, plen, logical, n_logical, physical, n_physical,
                                   refs, n_refs, keys, n_keys);
}

/* ---- dependencies (in memory) ---- */

int dependent_add(struct acat_item *it, uint64_t gid)
{
        if (it->n_dependents == it->cap_dependents) {
                size_t cap = it->cap_dependents ? it->cap_dependents * 2 : 4;
                uint64_t *n = realloc(it->dependents, cap * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                it->dependents = n;
                it->cap_dependents = cap;
        }
        it->dependents[it->n_dependents++] = gid;
        return 0;
}

void dependent_remove(struct acat_item *it, uint64_t gid)
{
        for (size_t i = 0; i < it->n_dependents; i++)
                if (it->dependents[i] == gid) {
                        it->dependents[i] = it->dependents[--it->n_dependents];
                        return;
                }
}

/* ---- requirements (in memory) ---- */

int req_consumer_add(struct acat_item *input, struct acat_item *consumer)
{
        if (input->n_req_consumers == input->cap_req_consumers) {
                size_t cap = input->cap_req_consumers ? input->cap_req_consumers * 2 : 4;
                struct acat_item **n = realloc(input->req_consumers, cap * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                input->req_consumers = n;
                input->cap_req_consumers = cap;
        }
        input->req_consumers[input->n_req_consumers++] = consumer;
        return 0;
}

void req_consumer_remove(struct acat_item *input, const struct acat_item *consumer)
{
        for (size_t i = 0; i < input->n_req_consumers; i++)
                if (input->req_consumers[i] == consumer) {
                        input->req_consumers[i] = input->req_consumers[--input->n_req_consumers];
                        return;
                }
}

struct acat_req *req_find(const struct acat_item *consumer, uint64_t input)
{
        for (size_t i = 0; i < consumer->n_reqs; i++)
                if (consumer->reqs[i].input == input)
                        return &consumer->reqs[i];
        return NULL;
}

/* Add R(consumer, input) to the consumer (sorted by input). */
int req_put(struct acat_item *consumer, uint64_t input, uint64_t frontier)
{
        struct acat_req *n, *hit = req_find(consumer, input);
        size_t pos = 0;

        if (hit) {
                hit->frontier = frontier;
                return 0;
        }
        n = realloc(consumer->reqs, (consumer->n_reqs + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        consumer->reqs = n;
        while (pos < consumer->n_reqs && n[pos].input < input)
                pos++;
        memmove(&n[pos + 1], &n[pos], (consumer->n_reqs - pos) * sizeof(*n));
        n[pos] = (struct acat_req){ input, frontier, 0 };
        consumer->n_reqs++;
        return 0;
}

size_t items_lower_bound(const struct adapter_catalog *ac, uint64_t gid)
{
        return LOWER_BOUND(ac->n_items, m, ac->items[m]->gid, gid);
}

const struct acat_item *acat_by_gid(const struct adapter_catalog *ac, uint64_t gid)
{
        size_t i = items_lower_bound(ac, gid);
        return i < ac->n_items && ac->items[i]->gid == gid ? ac->items[i] : NULL;
}

const struct acat_item *acat_by_name(const struct adapter_catalog *ac, const char *name)
{
        struct name_ent *slot = names_slot(ac, name);
        return slot ? slot->it : NULL;
}

size_t acat_items(struct adapter_catalog *ac, const struct acat_item *const **ret_items)
{
        *ret_items = (const struct acat_item *const *)ac->items;
        return ac->n_items;
}

size_t acat_count_user(const struct adapter_catalog *ac)
{
        return ac->n_items - ac->n_builtin;
}

/* Insert into the item array (by gid) only, not the name index: for pending items at
 * finish, whose names are reserved already.  The gid is new. */
int items_array_add(struct adapter_catalog *ac, struct acat_item *it)
{
        size_t pos;

        if (ac->n_items == ac->cap_items) {
                size_t cap = ac->cap_items ? ac->cap_items * 2 : 64;
                struct acat_item **n = realloc(ac->items, cap * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                ac->items = n;
                ac->cap_items = cap;
        }
        pos = items_lower_bound(ac, it->gid);
        assert(pos == ac->n_items || ac->items[pos]->gid != it->gid);
        memmove(ac->items + pos + 1, ac->items + pos, (ac->n_items - pos) * sizeof(*ac->items));
        ac->items[pos] = it;
        ac->n_items++;
        return 0;
}

/* Insert into memory (after the commit, or at load).  The gid is new and the name free. */
int items_add(struct adapter_catalog *ac, struct acat_item *it)
{
        int r;

        r = names_add(ac, it);
        if (r < 0)
                return r;
        r = items_array_add(ac, it);
        if (r < 0)
                names_remove(ac, it);
        return r;
}

/* The oldest live index on `target`, or 0. */
/* target's index_id (its oldest committed index) and n_indexes, from its dependents:
 * at a CREATE INDEX's commit and a DROP (load_deps() counts them at load). */
void index_refresh(const struct adapter_catalog *ac, struct acat_item *target)
{
        uint64_t best = 0;
        uint32_t n = 0;

        for (size_t i = 0; i < target->n_dependents; i++) {
                const struct acat_item *d = acat_by_gid(ac, target->dependents[i]);
                if (d && !d->pending && d->kind == SQL_OBJECT_INDEX && d->on_id == target->gid) {
                        n++;
                        if (!best || d->gid < best)
                                best = d->gid;
                }
        }
        target->index_id = best;
        target->n_indexes = n;
}

/* Make `it` a dependent of each of its refs (at load, or when its create begins).  near,
 * if not NULL, is a guess at a ref that saves looking it up (at load, the item before). */
int deps_link(struct adapter_catalog *ac, struct acat_item *it, struct acat_item *near,
              struct acat_txn *const *before, size_t n_before)
{
        for (size_t i = 0; i < it->n_refs; i++) {
                struct acat_item *ref = near && near->gid == it->refs[i]
                                                ? near
                                                : item_or_before(ac, it->refs[i], before, n_before);
                int r;

                if (!ref)
                        return -EBADMSG;
                r = dependent_add(ref, it->gid);
                if (r < 0)
                        return r;
        }
        return 0;
}

void deps_unlink(struct adapter_catalog *ac, struct acat_item *it)
{
        for (size_t i = 0; i < it->n_reqs; i++) {
                struct acat_item *in = (struct acat_item *)acat_by_gid(ac, it->reqs[i].input);
                if (in)
                        req_consumer_remove(in, it);
        }
        for (size_t i = 0; i < it->n_refs; i++) {
                struct acat_item *ref = (struct acat_item *)acat_by_gid(ac, it->refs[i]);
                if (!ref)
                        continue;
                dependent_remove(ref, it->gid);
                if (it->kind == SQL_OBJECT_INDEX && ref->gid == it->on_id)
                        index_refresh(ac, ref);
        }
}

void items_remove(struct adapter_catalog *ac, uint64_t gid)
{
        size_t pos = items_lower_bound(ac, gid);
        struct acat_item *it;

        if (pos >= ac->n_items || ac->items[pos]->gid != gid)
                return;
        it = ac->items[pos];
        assert(!it->builtin);
        deps_unlink(ac, it);
        names_remove(ac, it);
        memmove(ac->items + pos, ac->items + pos + 1, (ac->n_items - pos - 1) * sizeof(*ac->items));
        ac->n_items--;
        item_free(it);
}

/* ---- the analyzer's view ---- */

static int acat_lookup(void *userdata, const char *name, struct sql_relation *ret)
{
        const struct acat_item *it = acat_by_name(userdata, name);

        if (!it || it->pending)
                return -ENOENT;
        acat_relation(it, ret);
        return 0;
}

/* A view's plan, unpacked from plan_bytes at its first use (adapter-catalog-open.c
 * note 4); NULL if it does not decode (the analyzer then refuses to read the view,
 * XX000). */
static Coord__Plan__Relation *item_plan(const struct acat_item *it)
{
        struct acat_item *m = (struct acat_item *)it;   /* a cache, not the item's state */

        if (!m->plan && m->plan_len)
                m->plan = coord__plan__relation__unpack(NULL, m->plan_len, m->plan_bytes);
        return m->plan;
}

void acat_relation(const struct acat_item *it, struct sql_relation *ret)
{
        ret->id = it->gid;
        ret->kind = it->kind;
        ret->columns = it->columns;
        ret->n_columns = it->n_columns;
        ret->checks = it->checks;
        ret->n_checks = it->n_checks;
        ret->uniques = it->uniques;
        ret->n_uniques = it->n_uniques;
        ret->fkeys = it->fkeys;
        ret->n_fkeys = it->n_fkeys;
        ret->plan = it->kind == SQL_OBJECT_VIEW ? item_plan(it) : NULL;
        ret->inputs = it->logical_inputs;
        ret->n_inputs = it->n_logical;
        ret->deterministic = !it->nondeterministic;
        ret->index_id = it->index_id;
        ret->n_indexes = it->n_indexes;
        ret->builtin = it->builtin;
}

static int acat_each(void *userdata, sql_object_fn fn, void *arg)
{
        struct adapter_catalog *ac = userdata;

        for (size_t i = 0; i < ac->n_items; i++) {
                const struct acat_item *it = ac->items[i];
                struct sql_object o = {
                        .id = it->gid, .name = it->name, .kind = it->kind,
                        .columns = it->columns, .n_columns = it->n_columns,
                        .n_checks = it->n_checks, .index_id = it->index_id,
                        .on_id = it->on_id, .keys = it->keys, .n_keys = it->n_keys,
                        .builtin = it->builtin,
                };
                int r;

                if (it->pending)
                        continue;
                r = fn(arg, &o);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int gid_cmp(const void *x, const void *y)
{
        uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

        return a < b ? -1 : a > b;
}

/* The committed indexes on object gid, oldest first (as index_refresh() counts them). */
static int acat_indexes(void *userdata, uint64_t gid, sql_object_fn fn, void *arg)
{
        struct adapter_catalog *ac = userdata;
        const struct acat_item *target = acat_by_gid(ac, gid);
        _cleanup_free_ uint64_t *ids = NULL;
        size_t n = 0;

        if (!target || !target->n_dependents)
                return target ? 0 : -ENOENT;
        ids = malloc(target->n_dependents * sizeof(*ids));
        if (!ids)
                return -ENOMEM;
        for (size_t i = 0; i < target->n_dependents; i++) {
                const struct acat_item *d = acat_by_gid(ac, target->dependents[i]);

                if (d && !d->pending && d->kind == SQL_OBJECT_INDEX && d->on_id == gid)
                        ids[n++] = d->gid;
        }
        qsort(ids, n, sizeof(*ids), gid_cmp);
        for (size_t i = 0; i < n; i++) {
                const struct acat_item *it = acat_by_gid(ac, ids[i]);
                struct sql_object o = {
                        .id = it->gid, .name = it->name, .kind = it->kind,
                        .columns = it->columns, .n_columns = it->n_columns,
                        .on_id = it->on_id, .keys = it->keys, .n_keys = it->n_keys,
                };
                int r = fn(arg, &o);

                if (r < 0)
                        return r;
        }
        return 0;
}

void acat_set_leases(struct adapter_catalog *ac, int (*each)(void *src, sql_lease_fn fn, void *arg),
                     void *src)
{
        ac->leases_each = each;
        ac->leases_src = src;
}

static int acat_leases(void *userdata, sql_lease_fn fn, void *arg)
{
        struct adapter_catalog *ac = userdata;

        return ac->leases_each ? ac->leases_each(ac->leases_src, fn, arg) : 0;
}

const struct sql_catalog_ops acat_sql_ops = {
        .lookup = acat_lookup,
        .each = acat_each,
        .indexes = acat_indexes,
        .leases = acat_leases,
};
