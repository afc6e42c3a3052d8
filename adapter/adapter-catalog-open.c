/* adapter-catalog-open.c -- the catalog writer's items loaded from the store
 * (acat_open()), and the handle freed (acat_free()).
 *
 * What the catalog writer's files share is adapter-catalog-internal.h; the other notes
 * are adapter-catalog-ddl.c notes 1 and 3 and adapter-catalog.c note 2.
 *
 * NOTES ON THE DESIGN
 * (4) Loading (acat_open()) is on the path of an adapter restart, so it does each thing
 *     once, on both vCPUs: four scans at once (load_scan(), catalog_scan_state() over
 *     catalog_scan_ranges(): items below and above the middle GlobalId, bounds,
 *     requirements), each decoding into arrays of its own, touching nothing shared but
 *     the store (catalog_scan() is thread-safe), joined before acat_open() returns.  Then
 *     items are appended in GlobalId order, bounds and requirements find their items from
 *     the previous record's, and a view's plan stays packed until first read
 *     (acat_relation(); a plan that does not decode fails that read, XX000).  Each scan
 *     unpacks its records into an arena of its own (reset per record), and an item is
 *     one allocation (item_from_proto(); item_free() frees only what lies outside it,
 *     item_disown() clears what an ALTER SINK swaps out).  The name
 *     index is built on a thread of its own (load_names(): reads names, writes only the
 *     index) while this one links dependencies and protection.  catalog_loaded logs
 *     scan_us and link_us.
 * (4a) Load chunks.  An item scan carves its items' blocks in order out of chunks of
 *     ITEM_CHUNK bytes, mapped aligned to their size and advised into huge pages: no
 *     malloc() per item, and one page fault per 2 MB instead of one per 4 KB.  A chunk's
 *     header counts its live blocks plus one while a scan fills it; item_free() of
 *     the last block unmaps it (item_chunk_put(), which finds the chunk by masking
 *     the block's address), so memory of dropped items comes back by whole chunks
 *     and never exceeds what the load mapped.
 */
#include "adapter-catalog-internal.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "catalog/catalog.h"
#include "catalog.pb-c.h"
#include "coord.pb-c.h"
#include "probes.h"
#include "row/row.h"
#include "util.h"

/* ---- load chunks (note 4a) ---- */

#define ITEM_CHUNK ((size_t)2 << 20)

struct item_chunk {
        size_t used;            /* bytes carved, this header included */
        size_t live;            /* blocks not freed, + 1 while a scan fills it */
        _Alignas(16) char data[];
};

static void chunk_unref(struct item_chunk *c)
{
        assert(c->live > 0);
        if (--c->live == 0)
                munmap(c, ITEM_CHUNK);
}

/* A chunk mapped aligned to its size: twice its size mapped, the ends cut off. */
static struct item_chunk *chunk_new(void)
{
        char *m = mmap(NULL, 2 * ITEM_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        uintptr_t a;
        struct item_chunk *c;

        if (m == MAP_FAILED)
                return NULL;
        a = ((uintptr_t)m + ITEM_CHUNK - 1) & ~(ITEM_CHUNK - 1);
        if (a > (uintptr_t)m)
                munmap(m, a - (uintptr_t)m);
        munmap((char *)a + ITEM_CHUNK, (uintptr_t)m + 2 * ITEM_CHUNK - (a + ITEM_CHUNK));
        c = (struct item_chunk *)a;
        (void)madvise(c, ITEM_CHUNK, MADV_HUGEPAGE);    /* a hint: 4 KB pages still work */
        c->used = offsetof(struct item_chunk, data);
        c->live = 1;
        return c;
}

void *item_chunk_alloc(struct item_chunk **cur, size_t size, bool *ret_chunked)
{
        struct item_chunk *c = *cur;
        void *p;

        size = (size + 15) & ~(size_t)15;
        if (size > ITEM_CHUNK - offsetof(struct item_chunk, data)) {
                *ret_chunked = false;
                return calloc(1, size);
        }
        if (!c || c->used + size > ITEM_CHUNK) {
                c = chunk_new();
                if (!c)
                        return NULL;
                if (*cur)
                        chunk_unref(*cur);      /* the filler's reference */
                *cur = c;
        }
        p = (char *)c + c->used;
        c->used += size;
        c->live++;
        *ret_chunked = true;
        return p;
}

void item_chunk_put(const void *block)
{
        chunk_unref((struct item_chunk *)((uintptr_t)block & ~(ITEM_CHUNK - 1)));
}

void item_chunk_release(struct item_chunk **cur)
{
        if (*cur)
                chunk_unref(TAKE_PTR(*cur));
}

/* ---- open (note 4) ---- */

/* What a scan of acat_open() decodes into, possibly on a thread of its own (items of
 * one range, or the bounds and the requirements: two scans writing different arrays);
 * the main thread links the results into the catalog. */
struct load_part {
        struct row_arena arena;         /* records unpacked here, reset per record */
        ProtobufCAllocator pa;          /* over arena */
        struct acat_item **items;       /* in gid order */
        size_t n_items, cap_items;
        struct item_chunk *chunk;       /* the one its items are carved from (4a) */
        struct load_bound *bounds;
        size_t n_bounds, cap_bounds;
        struct load_req *reqs;
        size_t n_reqs, cap_reqs;
};

struct load_bound {
        uint64_t gid, bound;
};

struct load_req {
        uint64_t consumer, input, frontier;
};

/* Items arrive in gid order. */
static int load_item(const void *key, size_t key_len, const void *value, size_t value_len,
                     void *userdata)
{
        struct load_part *lp = userdata;
        Coord__CatalogItem *p;
        struct acat_item *item;

        if (key_len != 9)
                return -EBADMSG;
        p = coord__catalog_item__unpack(&lp->pa, value_len, value);
        if (!p)
                return -EBADMSG;
        item = item_from_proto(p, &lp->chunk);
        row_arena_reset(&lp->arena);
        if (!item)
                return -ENOMEM;
        if (item->gid != be64_get((const uint8_t *)key + 1) || item->gid < ACAT_FIRST_USER_GID ||
            (lp->n_items && item->gid <= lp->items[lp->n_items - 1]->gid)) {
                item_free(item);
                return -EBADMSG;        /* the catalog contradicts itself */
        }
        if (GROW_ARRAY(lp->items, lp->cap_items, lp->n_items + 1) < 0) {
                item_free(item);
                return -ENOMEM;
        }
        lp->items[lp->n_items++] = item;
        return 0;
}

static int load_bound(const void *key, size_t key_len, const void *value, size_t value_len,
                      void *userdata)
{
        struct load_part *lp = userdata;
        Coord__CatalogBound *b;
        int r = 0;

        if (key_len != 9)
                return -EBADMSG;
        b = coord__catalog_bound__unpack(&lp->pa, value_len, value);
        if (!b)
                return -EBADMSG;
        if (b->gid != be64_get((const uint8_t *)key + 1))
                r = -EBADMSG;
        else
                r = GROW_ARRAY(lp->bounds, lp->cap_bounds, lp->n_bounds + 1);
        if (r >= 0)
                lp->bounds[lp->n_bounds++] = (struct load_bound){ b->gid, b->bound };
        row_arena_reset(&lp->arena);
        return r;
}

static int load_req(const void *key, size_t key_len, const void *value, size_t value_len,
                    void *userdata)
{
        struct load_part *lp = userdata;
        Coord__CatalogRequirement *q;
        int r = 0;

        if (key_len != 17)
                return -EBADMSG;
        q = coord__catalog_requirement__unpack(&lp->pa, value_len, value);
        if (!q)
                return -EBADMSG;
        if (q->consumer != be64_get((const uint8_t *)key + 1) ||
            q->input != be64_get((const uint8_t *)key + 9))
                r = -EBADMSG;
        else
                r = GROW_ARRAY(lp->reqs, lp->cap_reqs, lp->n_reqs + 1);
        if (r >= 0)
                lp->reqs[lp->n_reqs++] = (struct load_req){ q->consumer, q->input, q->frontier };
        row_arena_reset(&lp->arena);
        return r;
}

static void load_part_done(struct load_part *lp)
{
        item_chunk_release(&lp->chunk);
        for (size_t i = 0; i < lp->n_items; i++)
                item_free(lp->items[i]);
        free(lp->items);
        free(lp->bounds);
        free(lp->reqs);
        row_arena_done(&lp->arena);
}

/* The scans at once (note 4, catalog_scan_ranges()): items below the middle GlobalId
 * here, items above it, the bounds and the requirements on threads of their own.  Then
 * the items in gid order into ac->items. */
static int load_scan(struct adapter_catalog *ac, struct load_part parts[4])
{
        const struct catalog_state_scan sc = {
                .item = load_item, .bound = load_bound, .req = load_req,
                .items_lo = &parts[0], .items_hi = &parts[1], .bounds = &parts[2], .reqs = &parts[3],
        };
        size_t n;
        int r;

        for (int i = 0; i < 4; i++) {
                parts[i] = (struct load_part){ .arena = ROW_ARENA_INIT };
                parts[i].pa = row_arena_allocator(&parts[i].arena);
        }
        r = catalog_scan_state(ac->store, ACAT_FIRST_USER_GID + (ac->next_gid - ACAT_FIRST_USER_GID) / 2, &sc);
        for (int i = 0; i < 2; i++)
                item_chunk_release(&parts[i].chunk);    /* the scans are joined (4a) */
        if (r < 0)
                return r;
        n = ac->n_items + parts[0].n_items + parts[1].n_items;
        if (n > ac->cap_items) {
                struct acat_item **v = realloc(ac->items, n * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                ac->items = v;
                ac->cap_items = n;
        }
        for (int i = 0; i < 2; i++) {
                if (parts[i].n_items)   /* an empty part has no array */
                        memcpy(ac->items + ac->n_items, parts[i].items,
                               parts[i].n_items * sizeof(*ac->items));
                ac->n_items += parts[i].n_items;
                parts[i].n_items = 0;   /* ac's now */
        }
        return r;
}

/* The name index, sized once for every loaded item (no grow under way: it holds the
 * built-ins only); a name twice is -EBADMSG.  One walk per name finds either its twin
 * or its slot, and the slot of the name NAMES_AHEAD on is prefetched: at 100,000
 * objects the table is 8 MB, and each probe was a cache and TLB miss. */
#define NAMES_AHEAD 8
static int load_names(struct adapter_catalog *ac)
{
        uint64_t ahead[NAMES_AHEAD];
        size_t mask, first = ac->n_builtin;
        int r;

        assert(!ac->names_old.slots && ac->n_names == first);
        r = oa_reserve(&names_kind, (void **)&ac->names, &ac->names_mask, ac->n_items + 1);
        if (r < 0)
                return r;
        mask = ac->names_mask;
        for (size_t i = first; i < ac->n_items && i < first + NAMES_AHEAD; i++)
                ahead[i % NAMES_AHEAD] = name_hash(ac->items[i]->name);
        for (size_t i = first; i < ac->n_items; i++) {
                const char *name = ac->items[i]->name;
                uint64_t h = ahead[i % NAMES_AHEAD];
                size_t k = h & mask;

                if (i + NAMES_AHEAD < ac->n_items) {
                        uint64_t next = name_hash(ac->items[i + NAMES_AHEAD]->name);

                        ahead[i % NAMES_AHEAD] = next;
                        __builtin_prefetch(&ac->names[next & mask], 1);
                }
                for (; ac->names[k].it; k = (k + 1) & mask) {
                        if (ac->names[k].hash == h && strcmp(ac->names[k].it->name, name) == 0)
                                return -EBADMSG;
                }
                ac->names[k] = (struct name_ent){ ac->items[i], h };
                ac->n_names++;
        }
        return 0;
}

static void *load_names_main(void *arg)
{
        struct adapter_catalog *ac = arg;

        return (void *)(intptr_t)load_names(ac);
}

/* The item gid, looked up from *pos on (a few steps: records come in gid order, so
 * it is usually at or just after the previous one's), else by binary search. */
static struct acat_item *load_seek(const struct adapter_catalog *ac, size_t *pos, uint64_t gid)
{
        size_t i = *pos;

        for (unsigned k = 0; k < 8 && i < ac->n_items && ac->items[i]->gid < gid; k++)
                i++;
        if (!(i < ac->n_items && ac->items[i]->gid >= gid && (i == 0 || ac->items[i - 1]->gid < gid)))
                i = items_lower_bound(ac, gid);
        *pos = i;
        return i < ac->n_items && ac->items[i]->gid == gid ? ac->items[i] : NULL;
}

/* Bounds and requirements onto their items: a record of nothing is -EBADMSG. */
static int load_protection(struct adapter_catalog *ac, const struct load_part *lb,
                           const struct load_part *lp)
{
        struct acat_item *in = NULL;
        size_t pos = 0;
        int r;

        for (size_t i = 0; i < lb->n_bounds; i++) {
                struct acat_item *it = load_seek(ac, &pos, lb->bounds[i].gid);

                if (!it)
                        return -EBADMSG;        /* a bound of nothing: the catalog contradicts itself */
                it->has_bound = true;
                it->bound = lb->bounds[i].bound;
        }
        pos = 0;
        for (size_t i = 0; i < lp->n_reqs; i++) {
                const struct load_req *q = &lp->reqs[i];
                struct acat_item *c = load_seek(ac, &pos, q->consumer);

                if (!in || in->gid != q->input)         /* inputs repeat (one support view) */
                        in = (struct acat_item *)acat_by_gid(ac, q->input);
                if (!c || !in)
                        return -EBADMSG;
                r = req_put(c, q->input, q->frontier);
                if (r >= 0)
                        r = req_consumer_add(in, c);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Dependencies are kept in memory only: link every item to its refs, and each object
 * to its oldest index and its count.  Items are in GlobalId order, so the first index
 * met on an object is its oldest (what index_refresh() finds). */
static int load_deps(struct adapter_catalog *ac)
{
        for (size_t i = ac->n_builtin; i < ac->n_items; i++) {
                struct acat_item *it = ac->items[i], *prev = ac->items[i - 1], *on;
                /* A ref is most often the item just before (a view's default index). */
                int r = deps_link(ac, it, prev, NULL, 0);

                if (r < 0)
                        return r;
                if (it->kind != SQL_OBJECT_INDEX || !u64_has(it->refs, it->n_refs, it->on_id))
                        continue;
                /* one of its refs, so deps_link() found it */
                on = prev->gid == it->on_id ? prev : (struct acat_item *)acat_by_gid(ac, it->on_id);
                if (!on->index_id)
                        on->index_id = it->gid;
                on->n_indexes++;
        }
        return 0;
}

void acat_load_times(const struct adapter_catalog *ac, struct acat_load_times *ret)
{
        *ret = ac->load;
}

int acat_open(struct catalog *store, struct adapter_catalog **ret)
{
        struct load_part parts[4];
        struct adapter_catalog *ac;
        uint64_t start_ns;
        void *v = NULL;
        size_t len = 0;
        int r;

        ac = calloc(1, sizeof(*ac));
        if (!ac)
                return -ENOMEM;
        ac->store = store;
        ac->next_gid = ACAT_FIRST_USER_GID;
        for (size_t i = 0; i < ELEMENTSOF(acat_builtins); i++) {
                r = items_add(ac, &acat_builtins[i]);
                if (r < 0)
                        goto fail;
        }
        ac->n_builtin = ELEMENTSOF(acat_builtins);
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
        start_ns = now_ns();
        r = load_scan(ac, parts);
        ac->load.scan_us = (now_ns() - start_ns) / 1000;
        start_ns = now_ns();
        if (r >= 0) {
                /* The name index on a thread while this one links dependencies and
                 * protection: they share only the items, which both only read here
                 * (names) or write fields the other does not read (note 4). */
                pthread_t t;
                void *names_r = NULL;
                bool threaded = thread_start(&t, "catalog-names", load_names_main, ac) == 0;

                if (!threaded)
                        names_r = (void *)(intptr_t)load_names(ac);
                r = load_deps(ac);
                if (r >= 0)
                        r = load_protection(ac, &parts[2], &parts[3]);
                if (threaded)
                        pthread_join(t, &names_r);
                if (r >= 0)
                        r = (int)(intptr_t)names_r;
        }
        ac->load.link_us = (now_ns() - start_ns) / 1000;
        for (int i = 0; i < 4; i++)
                load_part_done(&parts[i]);
        if (r < 0)
                goto fail;
        /* Concurrent DDL commits in any order within a group, so the meta record may
         * lag the largest GlobalId taken: never hand one out twice (adapter-catalog-ddl.c note 3). */
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
        free(ac->holds);
        /* Creations whose commit never finished live only in the name index: free them
         * before the items, whose memory the other entries of the index point to. */
        struct name_ent *e;

        for (size_t i = 0;
             (e = oa_each(&names_kind, ac->names, ac->names_mask, &ac->names_old, &i)); )
                if (e->it->pending)
                        item_free(e->it);
        for (size_t i = 0; i < ac->n_items; i++) {
                if (ac->items[i]->builtin) {
                        /* static storage: only the dependents array is ours */
                        free(ac->items[i]->dependents);
                        ac->items[i]->dependents = NULL;
                        free(ac->items[i]->req_consumers);
                        ac->items[i]->req_consumers = NULL;
                        ac->items[i]->n_req_consumers = ac->items[i]->cap_req_consumers = 0;
                        ac->items[i]->n_dependents = ac->items[i]->cap_dependents = 0;
                        ac->items[i]->index_id = 0;
                        ac->items[i]->n_indexes = 0;
                        ac->items[i]->has_bound = false;
                        ac->items[i]->bound = ac->items[i]->pending_bound = 0;
                }
                item_free(ac->items[i]);
        }
        free(ac->items);
        free(ac->names);
        oa_old_free(&ac->names_old);
        free(ac);
        return NULL;
}
