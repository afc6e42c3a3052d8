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

static int names_rebuild(struct adapter_catalog *ac, size_t cap)
{
        struct acat_item **tab = calloc(cap, sizeof(*tab));

        if (!tab)
                return -ENOMEM;
        for (size_t i = 0; i < ac->n_items; i++)
                names_insert_raw(tab, cap, ac->items[i]);
        free(ac->names);
        ac->names = tab;
        ac->n_names_cap = cap;
        ac->n_names_used = ac->n_items;
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
        free(it);
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
        if ((ac->n_names_used + 1) * 2 > ac->n_names_cap) {
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

static void items_remove(struct adapter_catalog *ac, uint64_t gid)
{
        size_t pos = items_lower_bound(ac, gid);
        struct acat_item *it, **slot;

        if (pos >= ac->n_items || ac->items[pos]->gid != gid)
                return;
        it = ac->items[pos];
        assert(!it->builtin);
        slot = names_slot(ac, it->name);
        assert(slot && *slot == it);
        *slot = TOMBSTONE;
        ac->n_tombstones++;
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
        for (size_t i = 0; i < ac->n_items; i++)
                item_free(ac->items[i]);
        free(ac->items);
        free(ac->names);
        free(ac);
        return NULL;
}

/* ---- the analyzer's view ---- */

static int acat_lookup(void *userdata, const char *name, struct sql_relation *ret)
{
        const struct acat_item *it = acat_by_name(userdata, name);

        if (!it)
                return -ENOENT;
        ret->id = it->gid;
        ret->kind = it->kind;
        ret->columns = it->columns;
        ret->n_columns = it->n_columns;
        return 0;
}

const struct sql_catalog_ops acat_sql_ops = {
        .lookup = acat_lookup,
};

/* ---- DDL ---- */

int acat_create_table(struct adapter_catalog *ac, const struct sql_create_table *ct,
                      const char *create_sql, uint64_t ts, uint64_t *ret_gid,
                      struct row_error *err)
{
        struct acat_item *it = NULL;
        uint8_t ikey[9], bkey[9], next[8], *ival = NULL, bval[32];
        Coord__CatalogBound bound = COORD__CATALOG_BOUND__INIT;
        struct catalog_op ops[3];
        size_t ilen = 0, blen;
        int r;

        /* Validate on the final state. */
        if (acat_by_name(ac, ct->name))
                return row_error_set(err, -EINVAL, "42P07", "relation \"%s\" already exists", ct->name);
        it = calloc(1, sizeof(*it));
        if (!it)
                return -ENOMEM;
        it->gid = ac->next_gid;
        it->kind = SQL_OBJECT_TABLE;
        it->created_at = ts;
        it->name = strdup(ct->name);
        it->create_sql = strdup(create_sql ? create_sql : "");
        it->columns = calloc(ct->n_columns ? ct->n_columns : 1, sizeof(*it->columns));
        if (!it->name || !it->create_sql || !it->columns) {
                r = -ENOMEM;
                goto fail;
        }
        for (size_t i = 0; i < ct->n_columns; i++) {
                it->columns[i] = ct->columns[i];
                it->columns[i].name = strdup(ct->columns[i].name);
                it->n_columns++;
                if (!it->columns[i].name) {
                        r = -ENOMEM;
                        goto fail;
                }
        }
        r = item_encode(it, &ival, &ilen);
        if (r < 0)
                goto fail;
        bound.gid = it->gid;
        bound.bound = ts;       /* birth: readable from its creation on */
        blen = coord__catalog_bound__pack(&bound, bval);
        key_put(ikey, KEY_ITEM, it->gid);
        key_put(bkey, KEY_BOUND, it->gid);
        be64_put(next, it->gid + 1);
        ops[0] = (struct catalog_op){ CATALOG_OP_PUT, CATALOG_CF_STATE, ikey, sizeof(ikey), ival, ilen };
        ops[1] = (struct catalog_op){ CATALOG_OP_PUT, CATALOG_CF_STATE, bkey, sizeof(bkey), bval, blen };
        ops[2] = (struct catalog_op){ CATALOG_OP_PUT, CATALOG_CF_META, META_NEXT_GID,
                                      strlen(META_NEXT_GID), next, sizeof(next) };
        r = catalog_commit(ac->store, ops, ELEMENTSOF(ops), NULL);
        free(ival);
        if (r < 0)
                goto fail;
        /* (1) committed: now memory. */
        ac->next_gid = it->gid + 1;
        r = items_add(ac, it);
        if (r < 0)
                goto fail;      /* memory disagrees with disk: the caller must stop */
        *ret_gid = it->gid;
        return 0;
fail:
        item_free(it);
        return r;
}

int acat_drop(struct adapter_catalog *ac, const uint64_t *gids, size_t n, struct row_error *err)
{
        struct catalog_op *ops;
        uint8_t (*keys)[9];
        size_t k = 0;
        int r;

        if (n == 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                const struct acat_item *it = acat_by_gid(ac, gids[i]);
                if (!it)
                        return row_error_set(err, -EINVAL, "42P01", "object %llu does not exist",
                                             (unsigned long long)gids[i]);
                if (it->builtin)
                        return row_error_set(err, -EINVAL, "42809",
                                             "cannot drop built-in relation \"%s\"", it->name);
        }
        ops = calloc(2 * n, sizeof(*ops));
        keys = calloc(2 * n, sizeof(*keys));
        if (!ops || !keys) {
                free(ops);
                free(keys);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                key_put(keys[k], KEY_ITEM, gids[i]);
                ops[k] = (struct catalog_op){ CATALOG_OP_DELETE, CATALOG_CF_STATE, keys[k], 9, NULL, 0 };
                k++;
                key_put(keys[k], KEY_BOUND, gids[i]);
                ops[k] = (struct catalog_op){ CATALOG_OP_DELETE, CATALOG_CF_STATE, keys[k], 9, NULL, 0 };
                k++;
        }
        r = catalog_commit(ac->store, ops, k, NULL);
        free(ops);
        free(keys);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                items_remove(ac, gids[i]);
        return 0;
}
