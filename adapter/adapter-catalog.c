/* adapter-catalog.c -- the catalog writer's items.  See adapter-catalog.h.
 *
 * NOTES ON THE DESIGN
 * (1) Memory follows the disk: a DDL is validated on a copy of what would change,
 *     committed, and applied to memory only after catalog_commit() returned 0.
 * (2) items[] holds every item, sorted by GlobalId (built-ins first, user GlobalIds are
 *     handed out increasing); lookups by id are a binary search.  The name index is an
 *     open-addressing hash table of item pointers (linear probing, tombstones, rebuilt
 *     when a quarter of it is tombstones).  Both are O(1)/O(log n) so statements cost
 *     the same with 100,000 objects as with 10.
 * (3) next_gid is committed with the item that takes it, so a GlobalId is never reused,
 *     even after the item is dropped or the adapter restarts.
 */
#include "adapter-catalog.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "catalog.pb-c.h"
#include "util.h"

#define META_NEXT_GID "next_gid"
#define KEY_ITEM  'i'
#define KEY_BOUND 'b'

#define TOMBSTONE ((struct acat_item *)(uintptr_t)1)

struct adapter_catalog {
        struct catalog *store;
        struct acat_item **items;       /* sorted by gid */
        size_t n_items, cap_items;
        size_t n_builtin;
        struct acat_item **names;       /* hash by name: NULL empty, TOMBSTONE removed */
        size_t n_names_cap, n_names_used, n_tombstones;
        uint64_t next_gid;
};

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
static struct acat_item builtins[] = {
        { ACAT_GID_OBJECTS, (char *)"coord_objects", SQL_OBJECT_TABLE, NULL,
          objects_cols, ELEMENTSOF(objects_cols), 0, true },
        { ACAT_GID_FRONTIERS, (char *)"coord_frontiers", SQL_OBJECT_TABLE, NULL,
          frontiers_cols, ELEMENTSOF(frontiers_cols), 0, true },
};

const char *acat_kind_name(enum sql_object_kind kind)
{
        return sql_object_kind_name(kind);
}

/* ---- the name index ---- */

static uint64_t name_hash(const char *s)
{
        uint64_t h = 1469598103934665603ull;    /* FNV-1a */

        for (; *s; s++)
                h = (h ^ (uint8_t)*s) * 1099511628211ull;
        return h;
}

static int names_insert_raw(struct acat_item **tab, size_t cap, struct acat_item *it)
{
        size_t mask = cap - 1, i = name_hash(it->name) & mask;

        while (tab[i] && tab[i] != TOMBSTONE)
                i = (i + 1) & mask;
        tab[i] = it;
        return 0;
}

/* Rehash the live entries (items and pending creations) into a table of cap slots. */
static int names_rebuild(struct adapter_catalog *ac, size_t cap)
{
        struct acat_item **tab = calloc(cap, sizeof(*tab));
        size_t used = 0;

        if (!tab)
                return -ENOMEM;
        for (size_t i = 0; i < ac->n_names_cap; i++)
                if (ac->names[i] && ac->names[i] != TOMBSTONE) {
                        names_insert_raw(tab, cap, ac->names[i]);
                        used++;
                }
        free(ac->names);
        ac->names = tab;
        ac->n_names_cap = cap;
        ac->n_names_used = used;
        ac->n_tombstones = 0;
        return 0;
}

static struct acat_item **names_slot(const struct adapter_catalog *ac, const char *name)
{
        size_t mask = ac->n_names_cap - 1, i = name_hash(name) & mask;

        for (size_t probes = 0; probes < ac->n_names_cap; probes++, i = (i + 1) & mask) {
                struct acat_item *it = ac->names[i];
                if (!it)
                        return NULL;
                if (it != TOMBSTONE && strcmp(it->name, name) == 0)
                        return &ac->names[i];
        }
        return NULL;
}

/* ---- items ---- */

static void item_free(struct acat_item *it)
{
        if (!it || it->builtin)
                return;
        for (size_t i = 0; i < it->n_columns; i++)
                free(it->columns[i].name);
        free(it->columns);
        free(it->name);
        free(it->create_sql);
        if (it->plan)
                coord__plan__relation__free_unpacked(it->plan, NULL);
        free(it->plan_bytes);
        free(it->logical_inputs);
        free(it->physical_inputs);
        free(it->refs);
        free(it->keys);
        free(it->dependents);
        free(it);
}

static uint64_t *u64_dup(const uint64_t *v, size_t n)
{
        uint64_t *d = malloc((n ? n : 1) * sizeof(*d));

        if (d && n)
                memcpy(d, v, n * sizeof(*d));
        return d;
}

/* The definition fields shared by item_from_proto() and acat_create_begin(). */
static int item_set_definition(struct acat_item *it, const uint8_t *plan, size_t plan_len,
                               const uint64_t *li, size_t nli, const uint64_t *pi, size_t npi,
                               const uint64_t *refs, size_t nrefs, const uint32_t *keys, size_t nkeys)
{
        if (plan_len) {
                it->plan_bytes = malloc(plan_len);
                if (!it->plan_bytes)
                        return -ENOMEM;
                memcpy(it->plan_bytes, plan, plan_len);
                it->plan_len = plan_len;
                it->plan = coord__plan__relation__unpack(NULL, plan_len, plan);
                if (!it->plan)
                        return -EBADMSG;
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

/* ---- dependencies (in memory) ---- */

static int dependent_add(struct acat_item *it, uint64_t gid)
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

static void dependent_remove(struct acat_item *it, uint64_t gid)
{
        for (size_t i = 0; i < it->n_dependents; i++)
                if (it->dependents[i] == gid) {
                        it->dependents[i] = it->dependents[--it->n_dependents];
                        return;
                }
}

static size_t items_lower_bound(const struct adapter_catalog *ac, uint64_t gid)
{
        size_t lo = 0, hi = ac->n_items;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (ac->items[mid]->gid < gid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

const struct acat_item *acat_by_gid(const struct adapter_catalog *ac, uint64_t gid)
{
        size_t i = items_lower_bound(ac, gid);
        return i < ac->n_items && ac->items[i]->gid == gid ? ac->items[i] : NULL;
}

const struct acat_item *acat_by_name(const struct adapter_catalog *ac, const char *name)
{
        struct acat_item **slot = names_slot(ac, name);
        return slot ? *slot : NULL;
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

/* Insert into memory (after the commit, or at load).  The gid is new and the name free. */
static int items_add(struct adapter_catalog *ac, struct acat_item *it)
{
        size_t pos;
        int r;

        if (ac->n_items == ac->cap_items) {
                size_t cap = ac->cap_items ? ac->cap_items * 2 : 64;
                struct acat_item **n = realloc(ac->items, cap * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                ac->items = n;
                ac->cap_items = cap;
        }
        if ((ac->n_names_used + ac->n_tombstones + 1) * 2 > ac->n_names_cap) {
                r = names_rebuild(ac, ac->n_names_cap ? ac->n_names_cap * 2 : 128);
                if (r < 0)
                        return r;
        }
        pos = items_lower_bound(ac, it->gid);
        assert(pos == ac->n_items || ac->items[pos]->gid != it->gid);
        memmove(ac->items + pos + 1, ac->items + pos, (ac->n_items - pos) * sizeof(*ac->items));
        ac->items[pos] = it;
        ac->n_items++;
        names_insert_raw(ac->names, ac->n_names_cap, it);
        ac->n_names_used++;
        return 0;
}

/* The oldest live index on `target`, or 0. */
static uint64_t oldest_index(const struct adapter_catalog *ac, const struct acat_item *target)
{
        uint64_t best = 0;

        for (size_t i = 0; i < target->n_dependents; i++) {
                const struct acat_item *d = acat_by_gid(ac, target->dependents[i]);
                if (d && !d->pending && d->kind == SQL_OBJECT_INDEX && d->on_id == target->gid &&
                    (!best || d->gid < best))
                        best = d->gid;
        }
        return best;
}

/* Make `it` a dependent of each of its refs (at load, or when its create begins). */
static int deps_link(struct adapter_catalog *ac, struct acat_item *it)
{
        for (size_t i = 0; i < it->n_refs; i++) {
                struct acat_item *ref = (struct acat_item *)acat_by_gid(ac, it->refs[i]);
                int r;
                if (!ref)
                        return -EBADMSG;
                r = dependent_add(ref, it->gid);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void deps_unlink(struct adapter_catalog *ac, struct acat_item *it)
{
        for (size_t i = 0; i < it->n_refs; i++) {
                struct acat_item *ref = (struct acat_item *)acat_by_gid(ac, it->refs[i]);
                if (!ref)
                        continue;
                dependent_remove(ref, it->gid);
                if (it->kind == SQL_OBJECT_INDEX && ref->gid == it->on_id)
                        ref->index_id = oldest_index(ac, ref);
        }
}

static void items_remove(struct adapter_catalog *ac, uint64_t gid)
{
        size_t pos = items_lower_bound(ac, gid);
        struct acat_item *it, **slot;

        if (pos >= ac->n_items || ac->items[pos]->gid != gid)
                return;
        it = ac->items[pos];
        assert(!it->builtin);
        deps_unlink(ac, it);
        slot = names_slot(ac, it->name);
        assert(slot && *slot == it);
        *slot = TOMBSTONE;
        ac->n_tombstones++;
        ac->n_names_used--;
        memmove(ac->items + pos, ac->items + pos + 1, (ac->n_items - pos - 1) * sizeof(*ac->items));
        ac->n_items--;
        item_free(it);
        if (ac->n_tombstones * 4 > ac->n_names_cap)
                (void)names_rebuild(ac, ac->n_names_cap);       /* best effort: same size */
}

/* ---- encoding ---- */

static enum sql_object_kind kind_from_item(Coord__ItemKind k)
{
        switch (k) {
        case COORD__ITEM_KIND__ITEM_VIEW: return SQL_OBJECT_VIEW;
        case COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW: return SQL_OBJECT_MATERIALIZED_VIEW;
        case COORD__ITEM_KIND__ITEM_INDEX: return SQL_OBJECT_INDEX;
        case COORD__ITEM_KIND__ITEM_SOURCE: return SQL_OBJECT_SOURCE;
        case COORD__ITEM_KIND__ITEM_SINK: return SQL_OBJECT_SINK;
        default: return SQL_OBJECT_TABLE;
        }
}

static Coord__ItemKind kind_to_item(enum sql_object_kind k)
{
        switch (k) {
        case SQL_OBJECT_VIEW: return COORD__ITEM_KIND__ITEM_VIEW;
        case SQL_OBJECT_MATERIALIZED_VIEW: return COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW;
        case SQL_OBJECT_INDEX: return COORD__ITEM_KIND__ITEM_INDEX;
        case SQL_OBJECT_SOURCE: return COORD__ITEM_KIND__ITEM_SOURCE;
        case SQL_OBJECT_SINK: return COORD__ITEM_KIND__ITEM_SINK;
        default: return COORD__ITEM_KIND__ITEM_TABLE;
        }
}

static struct acat_item *item_from_proto(const Coord__CatalogItem *p)
{
        struct acat_item *it = calloc(1, sizeof(*it));

        if (!it)
                return NULL;
        it->gid = p->gid;
        it->kind = kind_from_item(p->kind);
        it->created_at = p->created_at;
        it->name = strdup(p->name);
        it->create_sql = strdup(p->create_sql);
        it->columns = calloc(p->n_columns ? p->n_columns : 1, sizeof(*it->columns));
        if (!it->name || !it->create_sql || !it->columns)
                goto fail;
        for (size_t i = 0; i < p->n_columns; i++) {
                it->columns[i].name = strdup(p->columns[i]->name);
                it->columns[i].type = (enum row_type)p->columns[i]->type;
                it->columns[i].nullable = p->columns[i]->nullable;
                it->n_columns++;
                if (!it->columns[i].name)
                        goto fail;
        }
        if (item_set_definition(it, p->plan.data, p->plan.len, p->logical_inputs, p->n_logical_inputs,
                                p->physical_inputs, p->n_physical_inputs, p->refs, p->n_refs,
                                p->keys, p->n_keys) < 0)
                goto fail;
        it->on_id = p->on_id;
        it->as_of = p->as_of;
        it->retain_history_ms = p->retain_history_ms;
        it->nondeterministic = p->nondeterministic;
        return it;
fail:
        item_free(it);
        return NULL;
}

static int item_encode(const struct acat_item *it, uint8_t **ret, size_t *ret_len)
{
        Coord__CatalogItem p = COORD__CATALOG_ITEM__INIT;
        Coord__CatalogColumn *cols = NULL, **colp = NULL;
        uint8_t *buf;
        size_t len;

        if (it->n_columns) {
                cols = calloc(it->n_columns, sizeof(*cols));
                colp = calloc(it->n_columns, sizeof(*colp));
                if (!cols || !colp) {
                        free(cols);
                        free(colp);
                        return -ENOMEM;
                }
        }
        for (size_t i = 0; i < it->n_columns; i++) {
                coord__catalog_column__init(&cols[i]);
                cols[i].name = it->columns[i].name;
                cols[i].type = (uint32_t)it->columns[i].type;
                cols[i].nullable = it->columns[i].nullable;
                colp[i] = &cols[i];
        }
        p.gid = it->gid;
        p.name = it->name;
        p.kind = kind_to_item(it->kind);
        p.create_sql = it->create_sql;
        p.created_at = it->created_at;
        p.n_columns = it->n_columns;
        p.columns = colp;
        p.plan.data = it->plan_bytes;
        p.plan.len = it->plan_len;
        p.logical_inputs = it->logical_inputs;
        p.n_logical_inputs = it->n_logical;
        p.physical_inputs = it->physical_inputs;
        p.n_physical_inputs = it->n_physical;
        p.refs = it->refs;
        p.n_refs = it->n_refs;
        p.on_id = it->on_id;
        p.keys = it->keys;
        p.n_keys = it->n_keys;
        p.as_of = it->as_of;
        p.retain_history_ms = it->retain_history_ms;
        p.nondeterministic = it->nondeterministic;
        len = coord__catalog_item__get_packed_size(&p);
        buf = malloc(len ? len : 1);
        if (buf)
                coord__catalog_item__pack(&p, buf);
        free(cols);
        free(colp);
        if (!buf)
                return -ENOMEM;
        *ret = buf;
        *ret_len = len;
        return 0;
}

static void key_put(uint8_t key[9], char kind, uint64_t gid)
{
        key[0] = (uint8_t)kind;
        be64_put(key + 1, gid);
}

/* ---- open ---- */

static int load_item(const void *key, size_t key_len, const void *value, size_t value_len,
                     void *userdata)
{
        struct adapter_catalog *ac = userdata;
        Coord__CatalogItem *p;
        struct acat_item *item;
        int r;

        if (key_len != 9)
                return -EBADMSG;
        p = coord__catalog_item__unpack(NULL, value_len, value);
        if (!p)
                return -EBADMSG;
        item = item_from_proto(p);
        coord__catalog_item__free_unpacked(p, NULL);
        if (!item)
                return -ENOMEM;
        if (item->gid != be64_get((const uint8_t *)key + 1) || item->gid < ACAT_FIRST_USER_GID ||
            acat_by_name(ac, item->name) || acat_by_gid(ac, item->gid)) {
                item_free(item);
                return -EBADMSG;        /* the catalog contradicts itself */
        }
        r = items_add(ac, item);
        if (r < 0)
                item_free(item);
        return r;
}

/* The state column family is the truth: one scan of the item records. */
static int load_items(struct adapter_catalog *ac)
{
        const uint8_t prefix = KEY_ITEM;

        return catalog_scan(ac->store, CATALOG_CF_STATE, &prefix, 1, load_item, ac);
}

int acat_open(struct catalog *store, struct adapter_catalog **ret)
{
        struct adapter_catalog *ac;
        void *v = NULL;
        size_t len = 0;
        int r;

        ac = calloc(1, sizeof(*ac));
        if (!ac)
                return -ENOMEM;
        ac->store = store;
        ac->next_gid = ACAT_FIRST_USER_GID;
        r = names_rebuild(ac, 128);
        if (r < 0)
                goto fail;
        for (size_t i = 0; i < ELEMENTSOF(builtins); i++) {
                r = items_add(ac, &builtins[i]);
                if (r < 0)
                        goto fail;
        }
        ac->n_builtin = ELEMENTSOF(builtins);
        r = catalog_meta_get(store, META_NEXT_GID, &v, &len);
        if (r == 0) {
                if (len != 8) {
                        free(v);
                        r = -EBADMSG;
                        goto fail;
                }
                ac->next_gid = be64_get(v);
                free(v);
        } else if (r != -ENOENT)
                goto fail;
        r = load_items(ac);
        if (r < 0)
                goto fail;
        /* Dependencies are kept in memory only: link every item to its refs (items
         * load in GlobalId order, and refs are always older than their dependents). */
        for (size_t i = ac->n_builtin; i < ac->n_items; i++) {
                r = deps_link(ac, ac->items[i]);
                if (r < 0)
                        goto fail;
        }
        for (size_t i = 0; i < ac->n_items; i++)
                ac->items[i]->index_id = oldest_index(ac, ac->items[i]);
        /* Concurrent DDL commits in any order within a group, so the meta record may
         * lag the largest GlobalId taken: never hand one out twice (note 3). */
        if (ac->n_items > ac->n_builtin && ac->items[ac->n_items - 1]->gid >= ac->next_gid)
                ac->next_gid = ac->items[ac->n_items - 1]->gid + 1;
        *ret = ac;
        return 0;
fail:
        acat_free(ac);
        return r;
}

struct adapter_catalog *acat_free(struct adapter_catalog *ac)
{
        if (!ac)
                return NULL;
        /* Creations whose commit never finished live only in the name index: free them
         * before the items, whose memory the other entries of the index point to. */
        for (size_t i = 0; i < ac->n_names_cap; i++)
                if (ac->names[i] && ac->names[i] != TOMBSTONE && ac->names[i]->pending)
                        item_free(ac->names[i]);
        for (size_t i = 0; i < ac->n_items; i++) {
                if (ac->items[i]->builtin) {
                        /* static storage: only the dependents array is ours */
                        free(ac->items[i]->dependents);
                        ac->items[i]->dependents = NULL;
                        ac->items[i]->n_dependents = ac->items[i]->cap_dependents = 0;
                        ac->items[i]->index_id = 0;
                }
                item_free(ac->items[i]);
        }
        free(ac->items);
        free(ac->names);
        free(ac);
        return NULL;
}

/* ---- the analyzer's view ---- */

static int acat_lookup(void *userdata, const char *name, struct sql_relation *ret)
{
        const struct acat_item *it = acat_by_name(userdata, name);

        if (!it || it->pending)
                return -ENOENT;
        ret->id = it->gid;
        ret->kind = it->kind;
        ret->columns = it->columns;
        ret->n_columns = it->n_columns;
        ret->plan = it->kind == SQL_OBJECT_VIEW ? it->plan : NULL;
        ret->inputs = it->logical_inputs;
        ret->n_inputs = it->n_logical;
        ret->deterministic = !it->nondeterministic;
        ret->index_id = it->index_id;
        return 0;
}

const struct sql_catalog_ops acat_sql_ops = {
        .lookup = acat_lookup,
};

/* ---- DDL ---- */

struct acat_txn {
        bool create;
        struct acat_item **items;       /* create: the new item; drop: the dropped ones */
        size_t n_items;
        struct catalog_op *ops;
        size_t n_ops;
        uint8_t *buf;                   /* keys and values the ops point into */
};

static void txn_free(struct acat_txn *t)
{
        if (!t)
                return;
        free(t->items);
        free(t->ops);
        free(t->buf);
        free(t);
}

const struct catalog_op *acat_txn_ops(const struct acat_txn *t, size_t *ret_n)
{
        *ret_n = t->n_ops;
        return t->ops;
}

const struct acat_item *acat_txn_item(const struct acat_txn *t, size_t i)
{
        return i < t->n_items ? t->items[i] : NULL;
}

size_t acat_txn_n_items(const struct acat_txn *t)
{
        return t->n_items;
}

/* The item array (by gid) without the name index: for pending items at finish. */
static int items_array_add(struct adapter_catalog *ac, struct acat_item *it)
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
        memmove(ac->items + pos + 1, ac->items + pos, (ac->n_items - pos) * sizeof(*ac->items));
        ac->items[pos] = it;
        ac->n_items++;
        return 0;
}

static int name_reserve(struct adapter_catalog *ac, struct acat_item *it)
{
        int r;

        if ((ac->n_names_used + ac->n_tombstones + 1) * 2 > ac->n_names_cap) {
                r = names_rebuild(ac, ac->n_names_cap * 2);
                if (r < 0)
                        return r;
        }
        names_insert_raw(ac->names, ac->n_names_cap, it);
        ac->n_names_used++;
        return 0;
}

static void name_release(struct adapter_catalog *ac, struct acat_item *it)
{
        struct acat_item **slot = names_slot(ac, it->name);

        assert(slot && *slot == it);
        *slot = TOMBSTONE;
        ac->n_tombstones++;
        ac->n_names_used--;
}

static bool kind_has_bound(enum sql_object_kind k)
{
        /* Storage collections get a birth bound; a view has no data, and an index's bound
         * appears at its first publication (issue 5). */
        return k == SQL_OBJECT_TABLE || k == SQL_OBJECT_MATERIALIZED_VIEW || k == SQL_OBJECT_SOURCE;
}

int acat_create_begin(struct adapter_catalog *ac, const struct acat_new_item *ni, uint64_t ts,
                      struct acat_txn **ret, struct row_error *err)
{
        struct acat_txn *t = NULL;
        struct acat_item *it = NULL;
        uint8_t *ival = NULL, bval[32];
        Coord__CatalogBound bound = COORD__CATALOG_BOUND__INIT;
        uint8_t *planbuf = NULL;
        size_t ilen = 0, blen = 0, plen = 0;
        bool has_bound = kind_has_bound(ni->kind), linked = false;
        int r;

        /* Validate on the final state: pending creations hold their names too. */
        if (acat_by_name(ac, ni->name))
                return row_error_set(err, -EINVAL, "42P07", "%s \"%s\" already exists",
                                     ni->kind == SQL_OBJECT_INDEX ? "relation" : "relation", ni->name);
        for (size_t i = 0; i < ni->n_refs; i++) {
                const struct acat_item *ref = acat_by_gid(ac, ni->refs[i]);
                if (!ref || ref->pending)
                        return row_error_set(err, -EINVAL, "42P01", "object %llu does not exist",
                                             (unsigned long long)ni->refs[i]);
                if (ref->dropping)
                        return row_error_set(err, -EINVAL, "55006",
                                             "\"%s\" is being dropped by another session", ref->name);
        }
        it = calloc(1, sizeof(*it));
        t = calloc(1, sizeof(*t));
        if (!it || !t) {
                r = -ENOMEM;
                goto fail;
        }
        it->gid = ac->next_gid;
        it->kind = ni->kind;
        it->created_at = ts;
        it->pending = true;
        it->name = strdup(ni->name);
        it->create_sql = strdup(ni->create_sql ? ni->create_sql : "");
        it->columns = calloc(ni->n_columns ? ni->n_columns : 1, sizeof(*it->columns));
        if (!it->name || !it->create_sql || !it->columns) {
                r = -ENOMEM;
                goto fail;
        }
        for (size_t i = 0; i < ni->n_columns; i++) {
                it->columns[i] = ni->columns[i];
                it->columns[i].name = strdup(ni->columns[i].name);
                it->n_columns++;
                if (!it->columns[i].name) {
                        r = -ENOMEM;
                        goto fail;
                }
        }
        if (ni->plan) {
                plen = coord__plan__relation__get_packed_size(ni->plan);
                planbuf = malloc(plen ? plen : 1);
                if (!planbuf) {
                        r = -ENOMEM;
                        goto fail;
                }
                coord__plan__relation__pack(ni->plan, planbuf);
        }
        r = item_set_definition(it, planbuf, plen, ni->logical_inputs, ni->n_logical,
                                ni->physical_inputs, ni->n_physical, ni->refs, ni->n_refs,
                                ni->keys, ni->n_keys);
        free(planbuf);
        if (r < 0)
                goto fail;
        it->on_id = ni->on_id;
        it->as_of = ni->as_of;
        it->retain_history_ms = ni->retain_history_ms;
        it->nondeterministic = ni->nondeterministic;
        r = item_encode(it, &ival, &ilen);
        if (r < 0)
                goto fail;
        if (has_bound) {
                bound.gid = it->gid;
                /* birth: readable from its creation on (a materialized view from its
                 * as-of, where its history starts) */
                bound.bound = it->kind == SQL_OBJECT_MATERIALIZED_VIEW ? ni->as_of : ts;
                blen = coord__catalog_bound__pack(&bound, bval);
        }
        t->create = true;
        t->items = calloc(1, sizeof(*t->items));
        t->ops = calloc(3, sizeof(*t->ops));
        t->buf = malloc(9 + 9 + 8 + ilen + blen);
        if (!t->items || !t->ops || !t->buf) {
                free(ival);
                r = -ENOMEM;
                goto fail;
        }
        {
                uint8_t *ikey = t->buf, *bkey = t->buf + 9, *next = t->buf + 18;
                uint8_t *iv = t->buf + 26, *bv = iv + ilen;

                key_put(ikey, KEY_ITEM, it->gid);
                key_put(bkey, KEY_BOUND, it->gid);
                be64_put(next, it->gid + 1);
                memcpy(iv, ival, ilen);
                t->ops[t->n_ops++] = (struct catalog_op){ CATALOG_OP_PUT, CATALOG_CF_STATE, ikey, 9, iv, ilen };
                if (has_bound) {
                        memcpy(bv, bval, blen);
                        t->ops[t->n_ops++] = (struct catalog_op){ CATALOG_OP_PUT, CATALOG_CF_STATE, bkey, 9, bv, blen };
                }
                t->ops[t->n_ops++] = (struct catalog_op){ CATALOG_OP_PUT, CATALOG_CF_META, META_NEXT_GID,
                                                          strlen(META_NEXT_GID), next, 8 };
        }
        free(ival);
        r = deps_link(ac, it);
        linked = true;
        if (r < 0)
                goto fail;
        r = name_reserve(ac, it);
        if (r < 0)
                goto fail;
        /* (3) the GlobalId is taken now, whatever happens to the commit. */
        ac->next_gid = it->gid + 1;
        t->items[0] = it;
        t->n_items = 1;
        *ret = t;
        return 0;
fail:
        if (linked)
                deps_unlink(ac, it);
        item_free(it);
        txn_free(t);
        return r;
}

int acat_create_table_begin(struct adapter_catalog *ac, const struct sql_create_table *ct,
                            const char *create_sql, uint64_t ts, struct acat_txn **ret,
                            struct row_error *err)
{
        struct acat_new_item ni = {
                .name = ct->name, .kind = SQL_OBJECT_TABLE, .create_sql = create_sql,
                .columns = ct->columns, .n_columns = ct->n_columns,
        };

        return acat_create_begin(ac, &ni, ts, ret, err);
}

/* Drop closure, dependents first (DFS post-order). */
struct drop_walk {
        struct adapter_catalog *ac;
        const uint64_t *roots;
        size_t n_roots;
        bool cascade;
        struct acat_item **out;
        size_t n, cap;
        struct row_error *err;
};

static bool walk_has(const struct drop_walk *w, uint64_t gid)
{
        for (size_t i = 0; i < w->n; i++)
                if (w->out[i]->gid == gid)
                        return true;
        return false;
}

static bool walk_is_root(const struct drop_walk *w, uint64_t gid)
{
        for (size_t i = 0; i < w->n_roots; i++)
                if (w->roots[i] == gid)
                        return true;
        return false;
}

static int walk_visit(struct drop_walk *w, struct acat_item *it, unsigned depth)
{
        if (walk_has(w, it->gid))
                return 0;
        if (depth > 10000)
                return row_error_set(w->err, -EINVAL, "54001", "dependency chain too deep");
        if (it->builtin)
                return row_error_set(w->err, -EINVAL, "42809", "cannot drop built-in relation \"%s\"",
                                     it->name);
        if (it->dropping)
                return row_error_set(w->err, -EINVAL, "55006",
                                     "%s \"%s\" is being dropped by another session",
                                     acat_kind_name(it->kind), it->name);
        for (size_t i = 0; i < it->n_dependents; i++) {
                struct acat_item *d = (struct acat_item *)acat_by_gid(w->ac, it->dependents[i]);
                int r;

                if (!d) {
                        /* a pending creation: only in the name index */
                        return row_error_set(w->err, -EINVAL, "55006",
                                             "an object that depends on %s \"%s\" is being created by "
                                             "another session", acat_kind_name(it->kind), it->name);
                }
                if (walk_has(w, d->gid))
                        continue;
                if (!w->cascade && !walk_is_root(w, d->gid) &&
                    !(d->kind == SQL_OBJECT_INDEX && d->on_id == it->gid)) {
                        row_error_set(w->err, -EINVAL, "2BP01",
                                      "cannot drop %s %s because other objects depend on it",
                                      acat_kind_name(it->kind), it->name);
                        snprintf(w->err->detail, sizeof(w->err->detail), "%s %s depends on %s %s",
                                 acat_kind_name(d->kind), d->name, acat_kind_name(it->kind), it->name);
                        snprintf(w->err->hint, sizeof(w->err->hint),
                                 "Use DROP ... CASCADE to drop the dependent objects too.");
                        return -EINVAL;
                }
                r = walk_visit(w, d, depth + 1);
                if (r < 0)
                        return r;
        }
        if (w->n == w->cap) {
                size_t cap = w->cap ? w->cap * 2 : 8;
                struct acat_item **n = realloc(w->out, cap * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                w->out = n;
                w->cap = cap;
        }
        w->out[w->n++] = it;
        return 0;
}

int acat_drop_begin(struct adapter_catalog *ac, const uint64_t *gids, size_t n, bool cascade,
                    struct acat_txn **ret, struct row_error *err)
{
        struct drop_walk w = { .ac = ac, .roots = gids, .n_roots = n, .cascade = cascade, .err = err };
        struct acat_txn *t;
        int r;

        for (size_t i = 0; i < n; i++) {
                struct acat_item *it = (struct acat_item *)acat_by_gid(ac, gids[i]);
                if (!it) {
                        r = row_error_set(err, -EINVAL, "42P01", "object %llu does not exist",
                                          (unsigned long long)gids[i]);
                        goto fail_walk;
                }
                r = walk_visit(&w, it, 0);
                if (r < 0)
                        goto fail_walk;
        }
        n = w.n;
        t = calloc(1, sizeof(*t));
        if (!t) {
                r = -ENOMEM;
                goto fail_walk;
        }
        t->items = w.out;
        w.out = NULL;
        t->ops = calloc(2 * n + 1, sizeof(*t->ops));
        t->buf = malloc(18 * n + 1);
        if (!t->ops || !t->buf) {
                txn_free(t);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                uint8_t *ikey = t->buf + 18 * i, *bkey = ikey + 9;
                struct acat_item *it = t->items[i];

                key_put(ikey, KEY_ITEM, it->gid);
                key_put(bkey, KEY_BOUND, it->gid);
                t->ops[t->n_ops++] = (struct catalog_op){ CATALOG_OP_DELETE, CATALOG_CF_STATE, ikey, 9, NULL, 0 };
                t->ops[t->n_ops++] = (struct catalog_op){ CATALOG_OP_DELETE, CATALOG_CF_STATE, bkey, 9, NULL, 0 };
                it->dropping = true;
        }
        t->n_items = n;
        *ret = t;
        return 0;
fail_walk:
        free(w.out);
        return r;
}

void acat_txn_finish(struct adapter_catalog *ac, struct acat_txn *t, int commit_result)
{
        if (t->create) {
                struct acat_item *it = t->items[0];

                assert(it->pending);
                if (commit_result == 0 && items_array_add(ac, it) == 0) {
                        it->pending = false;
                        if (it->kind == SQL_OBJECT_INDEX) {
                                struct acat_item *on = (struct acat_item *)acat_by_gid(ac, it->on_id);
                                if (on)
                                        on->index_id = oldest_index(ac, on);
                        }
                } else {
                        /* Not committed (or no memory to show it: the caller stops
                         * writing on any error here).  Give the name back. */
                        deps_unlink(ac, it);
                        name_release(ac, it);
                        item_free(it);
                }
        } else {
                /* dependents first: each removal unlinks the item from its refs */
                for (size_t i = 0; i < t->n_items; i++) {
                        assert(t->items[i]->dropping);
                        if (commit_result == 0)
                                items_remove(ac, t->items[i]->gid);
                        else
                                t->items[i]->dropping = false;
                }
        }
        txn_free(t);
}
