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
        for (size_t i = 0; i < ac->n_items; i++)
                item_free(ac->items[i]);
        /* Creations whose commit never finished live only in the name index. */
        for (size_t i = 0; i < ac->n_names_cap; i++)
                if (ac->names[i] && ac->names[i] != TOMBSTONE && ac->names[i]->pending)
                        item_free(ac->names[i]);
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

int acat_create_table_begin(struct adapter_catalog *ac, const struct sql_create_table *ct,
                            const char *create_sql, uint64_t ts, struct acat_txn **ret,
                            struct row_error *err)
{
        struct acat_txn *t = NULL;
        struct acat_item *it = NULL;
        uint8_t *ival = NULL, bval[32];
        Coord__CatalogBound bound = COORD__CATALOG_BOUND__INIT;
        size_t ilen = 0, blen;
        int r;

        /* Validate on the final state: pending creations hold their names too. */
        if (acat_by_name(ac, ct->name))
                return row_error_set(err, -EINVAL, "42P07", "relation \"%s\" already exists", ct->name);
        it = calloc(1, sizeof(*it));
        t = calloc(1, sizeof(*t));
        if (!it || !t) {
                r = -ENOMEM;
                goto fail;
        }
        it->gid = ac->next_gid;
        it->kind = SQL_OBJECT_TABLE;
        it->created_at = ts;
        it->pending = true;
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
                memcpy(bv, bval, blen);
                t->ops[0] = (struct catalog_op){ CATALOG_OP_PUT, CATALOG_CF_STATE, ikey, 9, iv, ilen };
                t->ops[1] = (struct catalog_op){ CATALOG_OP_PUT, CATALOG_CF_STATE, bkey, 9, bv, blen };
                t->ops[2] = (struct catalog_op){ CATALOG_OP_PUT, CATALOG_CF_META, META_NEXT_GID,
                                                 strlen(META_NEXT_GID), next, 8 };
                t->n_ops = 3;
        }
        free(ival);
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
        item_free(it);
        txn_free(t);
        return r;
}

int acat_drop_begin(struct adapter_catalog *ac, const uint64_t *gids, size_t n,
                    struct acat_txn **ret, struct row_error *err)
{
        struct acat_txn *t;

        for (size_t i = 0; i < n; i++) {
                const struct acat_item *it = acat_by_gid(ac, gids[i]);
                if (!it)
                        return row_error_set(err, -EINVAL, "42P01", "object %llu does not exist",
                                             (unsigned long long)gids[i]);
                if (it->builtin)
                        return row_error_set(err, -EINVAL, "42809",
                                             "cannot drop built-in relation \"%s\"", it->name);
                if (it->dropping)
                        return row_error_set(err, -EINVAL, "55006",
                                             "relation \"%s\" is being dropped by another session",
                                             it->name);
                for (size_t j = 0; j < i; j++)
                        if (gids[j] == gids[i])
                                return row_error_set(err, -EINVAL, "42P01",
                                                     "object %llu named twice", (unsigned long long)gids[i]);
        }
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->items = calloc(n ? n : 1, sizeof(*t->items));
        t->ops = calloc(2 * n + 1, sizeof(*t->ops));
        t->buf = malloc(18 * n + 1);
        if (!t->items || !t->ops || !t->buf) {
                txn_free(t);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                uint8_t *ikey = t->buf + 18 * i, *bkey = ikey + 9;
                struct acat_item *it = (struct acat_item *)acat_by_gid(ac, gids[i]);

                key_put(ikey, KEY_ITEM, gids[i]);
                key_put(bkey, KEY_BOUND, gids[i]);
                t->ops[t->n_ops++] = (struct catalog_op){ CATALOG_OP_DELETE, CATALOG_CF_STATE, ikey, 9, NULL, 0 };
                t->ops[t->n_ops++] = (struct catalog_op){ CATALOG_OP_DELETE, CATALOG_CF_STATE, bkey, 9, NULL, 0 };
                it->dropping = true;
                t->items[t->n_items++] = it;
        }
        *ret = t;
        return 0;
}

void acat_txn_finish(struct adapter_catalog *ac, struct acat_txn *t, int commit_result)
{
        if (t->create) {
                struct acat_item *it = t->items[0];

                assert(it->pending);
                if (commit_result == 0 && items_array_add(ac, it) == 0) {
                        it->pending = false;
                } else {
                        /* Not committed (or no memory to show it: the caller stops
                         * writing on any error here).  Give the name back. */
                        name_release(ac, it);
                        item_free(it);
                }
        } else {
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
