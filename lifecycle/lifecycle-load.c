/* lifecycle-load.c -- see lifecycle-load.h.
 *
 * NOTES ON THE DESIGN
 *
 * (1) The load is on the path of every restart of the follower (at 100,000 objects:
 *     200,000 items, 100,000 bounds, 100,000 requirements).  As the adapter's acat_open()
 *     does (adapter-catalog-open.c note 4):
 *       - four scans at once (load_scan(), catalog_scan_state()): the items below and
 *         above the middle GlobalId, the bounds, the requirements, each decoding into
 *         arrays of its own; an item is decoded once, for the state and for the
 *         enactment set (4; lifecycle-enact.c note 1);
 *       - then, on this thread, one lc_state_load_batch() (lifecycle-state.c note 1)
 *         and the kept items into the set in GlobalId order.
 *     The middle GlobalId ("next_gid" meta record) only balances the two item scans,
 *     which cover every item key whatever it says.
 * (2) The scans do not see each other, nor the catalog move: the secondary changes
 *     only in catalog_catch_up(), which only the loop thread calls, and the loop
 *     thread waits here until the scans are joined.  So the four scans read one
 *     catalog, the same that one scan of the column family would.
 * (3) The records are the ones lc_state_load_record() and lc_enact_load_record()
 *     take, decoded the same way (an item's key names its gid for the state, its value
 *     for the set; a bound's and a requirement's value name their objects), and keys of
 *     another length are skipped as they are there: the result is the same state
 *     (tests/lifecycle compares the two).
 * (4) Decoding without protobuf-c where only scalars are needed: a bound and a
 *     requirement are three varints, and of an item the state needs the kind, as-of
 *     and RETAIN HISTORY; pb_varints() reads them off the wire without allocating
 *     (protobuf-c's unpack and the malloc()/free() of every message were a quarter of
 *     the scans).  Only the items the enactment set keeps (tables, materialized views,
 *     indexes) are unpacked whole, into the scan's arena (no malloc() per field), and
 *     copied into one allocation (lc_enact_item_new()); a view is not, so a view
 *     record whose nested fields were damaged loads where lc_state_load_record() would
 *     refuse it -- nothing of them is used here, and the adapter, which reads them,
 *     refuses to open.
 */
#include "lifecycle-load.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "builtins.h"
#include "catalog/catalog.h"
#include "lifecycle-enact.h"
#include "lifecycle-state.h"
#include "row/row.h"
#include "util.h"

#define KEY_ITEM  CATALOG_STATE_ITEM
#define KEY_BOUND CATALOG_STATE_BOUND
#define KEY_REQ   CATALOG_STATE_REQ
#define META_NEXT_GID "next_gid"        /* the adapter's (adapter-catalog-ddl.c note 3) */

/* What the scans (1) decode into: items of one range, or the bounds and the
 * requirements (two scans writing different arrays). */
struct load_part {
        struct row_arena arena;         /* an item scan's records unpacked here (4) */
        ProtobufCAllocator pa;          /* over arena */
        struct lc_item_rec *items;
        struct lc_enact_item **keep;    /* items[i]'s for the enactment set, or NULL */
        size_t n_items, cap_items, cap_keep;
        struct lc_bound_rec *bounds;
        size_t n_bounds, cap_bounds;
        struct lc_req_rec *reqs;
        size_t n_reqs, cap_reqs;
};

/* Field numbers in catalog.proto. */
enum {
        ITEM_KIND = 3, ITEM_AS_OF = 13, ITEM_RETAIN = 14, ITEM_REFRESH = 16,
        BOUND_GID = 1, BOUND_BOUND = 2,
        REQ_CONSUMER = 1, REQ_INPUT = 2, REQ_FRONTIER = 3,
};

/* An item: its kind, as-of and RETAIN HISTORY read off the wire (pb_varints()); only
 * an item the enactment set keeps is unpacked (4). */
static int load_item(const void *key, size_t key_len, const void *value, size_t value_len,
                     void *userdata)
{
        struct load_part *lp = userdata;
        uint64_t f[ITEM_REFRESH + 1] = { 0 };
        struct lc_enact_item *it = NULL;

        if (key_len != 9)
                return 0;       /* not an item record (3) */
        if (pb_varints(value, value_len,
                       1u << ITEM_KIND | 1u << ITEM_AS_OF | 1u << ITEM_RETAIN | 1u << ITEM_REFRESH, f) < 0)
                return -EBADMSG;
        if (lc_enact_wants((Coord__ItemKind)f[ITEM_KIND])) {
                /* Unpacked into the scan's arena, copied into what the set keeps
                 * (one allocation), the arena reset. */
                Coord__CatalogItem *p = coord__catalog_item__unpack(&lp->pa, value_len, value);
                int r;

                if (!p)
                        return -EBADMSG;
                r = lc_enact_item_new(p, &it);
                row_arena_reset(&lp->arena);
                if (r < 0)
                        return r;
        }
        if (GROW_ARRAY(lp->items, lp->cap_items, lp->n_items + 1) < 0 ||
            GROW_ARRAY(lp->keep, lp->cap_keep, lp->n_items + 1) < 0) {
                lc_enact_item_free(it);
                return -ENOMEM;
        }
        lp->items[lp->n_items] = (struct lc_item_rec){
                .gid = be64_get((const uint8_t *)key + 1), .kind = (Coord__ItemKind)f[ITEM_KIND],
                .retain_ms = f[ITEM_RETAIN], .as_of = f[ITEM_AS_OF], .refresh = f[ITEM_REFRESH] != 0,
        };
        lp->keep[lp->n_items++] = it;
        return 0;
}

static int load_bound(const void *key, size_t key_len, const void *value, size_t value_len,
                      void *userdata)
{
        struct load_part *lp = userdata;
        uint64_t f[BOUND_BOUND + 1] = { 0 };

        if (key_len != 9)
                return 0;
        if (pb_varints(value, value_len, 1u << BOUND_GID | 1u << BOUND_BOUND, f) < 0)
                return -EBADMSG;
        if (GROW_ARRAY(lp->bounds, lp->cap_bounds, lp->n_bounds + 1) < 0)
                return -ENOMEM;
        lp->bounds[lp->n_bounds++] = (struct lc_bound_rec){ f[BOUND_GID], f[BOUND_BOUND] };
        return 0;
}

static int load_req(const void *key, size_t key_len, const void *value, size_t value_len,
                    void *userdata)
{
        struct load_part *lp = userdata;
        uint64_t f[REQ_FRONTIER + 1] = { 0 };

        if (key_len != 17)
                return 0;
        if (pb_varints(value, value_len, 1u << REQ_CONSUMER | 1u << REQ_INPUT | 1u << REQ_FRONTIER, f) < 0)
                return -EBADMSG;
        if (GROW_ARRAY(lp->reqs, lp->cap_reqs, lp->n_reqs + 1) < 0)
                return -ENOMEM;
        lp->reqs[lp->n_reqs++] = (struct lc_req_rec){ f[REQ_CONSUMER], f[REQ_INPUT], f[REQ_FRONTIER] };
        return 0;
}

static void load_part_done(struct load_part *lp)
{
        for (size_t i = 0; i < lp->n_items; i++)
                lc_enact_item_free(lp->keep[i]);
        free(lp->items);
        free(lp->keep);
        free(lp->bounds);
        free(lp->reqs);
        row_arena_done(&lp->arena);
}

/* The middle GlobalId (1): between the first user gid and the adapter's next one. */
static uint64_t middle_gid(struct catalog *c)
{
        void *v = NULL;
        size_t len = 0;
        uint64_t next = 0;

        if (catalog_meta_get(c, META_NEXT_GID, &v, &len) == 0 && len == 8)
                next = be64_get(v);
        free(v);
        if (next <= COORD_FIRST_USER_GID)
                return COORD_FIRST_USER_GID;
        return COORD_FIRST_USER_GID + (next - COORD_FIRST_USER_GID) / 2;
}

static int load_hold(const void *key, size_t key_len, const void *value, size_t value_len,
                     void *userdata)
{
        return lc_state_load_record(userdata, key, key_len, value, value_len);
}

static int load_lease(const void *key, size_t key_len, const void *value, size_t value_len,
                      void *userdata)
{
        return lc_enact_load_record(userdata, key, key_len, value, value_len);
}

/* The scans at once (1): items below the middle GlobalId (on this thread), items above
 * it, bounds, requirements (each on a thread of its own). */
static int load_scan(struct catalog *c, struct load_part parts[3])
{
        const struct catalog_state_scan sc = {
                .item = load_item, .bound = load_bound, .req = load_req,
                .items_lo = &parts[0], .items_hi = &parts[1], .bounds = &parts[2], .reqs = &parts[2],
        };

        for (int i = 0; i < 3; i++) {
                parts[i] = (struct load_part){ .arena = ROW_ARENA_INIT };
                parts[i].pa = row_arena_allocator(&parts[i].arena);
        }
        return catalog_scan_state(c, middle_gid(c), &sc);
}

/* The decoded records into the state and the set (1). */
static int load_link(struct lc_state *s, struct lc_enact *e, struct load_part parts[3])
{
        size_t n0 = parts[0].n_items, n1 = parts[1].n_items;
        struct lc_item_rec *items = parts[0].items;
        int r;

        /* The two item scans end to end, still in gid order. */
        if (n1 && n0) {
                items = malloc((n0 + n1) * sizeof(*items));
                if (!items)
                        return -ENOMEM;
                memcpy(items, parts[0].items, n0 * sizeof(*items));
                memcpy(items + n0, parts[1].items, n1 * sizeof(*items));
        } else if (n1)
                items = parts[1].items;
        r = lc_state_load_batch(s, &(struct lc_load_batch){
                .items = items, .n_items = n0 + n1,
                .bounds = parts[2].bounds, .n_bounds = parts[2].n_bounds,
                .reqs = parts[2].reqs, .n_reqs = parts[2].n_reqs,
        });
        if (items != parts[0].items && items != parts[1].items)
                free(items);
        for (int k = 0; k < 2 && r >= 0; k++)
                for (size_t i = 0; i < parts[k].n_items && r >= 0; i++)
                        if (parts[k].keep[i])
                                r = lc_enact_load_item(e, TAKE_PTR(parts[k].keep[i]));
        return r;
}

int lc_load(struct catalog *c, struct lc_state *s, struct lc_enact *e, struct lc_load_stats *ret_stats)
{
        struct load_part parts[3];
        struct lc_load_stats st = { 0 };
        uint64_t t0 = now_ns(), t1;
        int r;

        r = load_scan(c, parts);
        t1 = now_ns();
        if (r >= 0)
                r = load_link(s, e, parts);
        /* Clients' holds (lifecycle-state.c note 7): few, read after the scans; the log
         * after the load's cursor puts and deletes them again, put with max. */
        if (r >= 0)
                r = catalog_scan(c, CATALOG_CF_STATE, "h", 1, load_hold, s);
        /* The refresh leases' last commits (lifecycle-enact.c note 4): one per refresh
         * view at most, after the items (a lease of a dropped view is not kept). */
        if (r >= 0)
                r = catalog_scan(c, CATALOG_CF_STATE, "lrefresh/", 9, load_lease, e);
        st.items = parts[0].n_items + parts[1].n_items;
        st.bounds = parts[2].n_bounds;
        st.requirements = parts[2].n_reqs;
        st.scan_us = (t1 - t0) / 1000;
        st.link_us = (now_ns() - t1) / 1000;
        for (int i = 0; i < 3; i++)
                load_part_done(&parts[i]);
        if (ret_stats)
                *ret_stats = st;
        return r;
}
