/* lifecycle-state.h -- the follower's maintained state and the publication tick
 * (DESIGN section 4 "Publication", issue 5).
 *
 * The state mirrors the catalog's state column family as far as protection needs it:
 * items (kind, logical inputs, as-of, RETAIN HISTORY), committed bounds and committed
 * requirements, plus an index of requirements BY INPUT (input -> consumers), so that a
 * bound is recomputed only for the inputs a tick touched.  It is built from a scan of
 * the state column family (lc_state_load_record()) and kept by applying the log in
 * order (lc_state_apply_txn()).  Frontiers come from the frontier ring
 * (lc_state_frontier()); each one that moves marks its object dirty.
 *
 * A tick (lc_state_tick()) looks only at dirty objects and the inputs their changes
 * touch, and proposes the records that change: requirements of materialized views
 * whose upper moved, bounds of indexes (at their first tick after installation, then
 * as they move), bounds of the inputs touched.  Nothing of it is applied until the
 * caller says the adapter committed it (lc_state_committed()); lc_state_abandon()
 * forgets a proposal that failed (the caller then rebuilds from the catalog).
 *
 * Not thread-safe: the lifecycle's loop thread only.  Returns -errno; never logs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog.pb-c.h"

struct lc_state;        /* opaque */

struct lc_bound_rec {
        uint64_t gid, bound;
};

struct lc_req_rec {
        uint64_t consumer, input, frontier;
};

/* One proposal: only the records that change. */
struct lc_publication {
        struct lc_bound_rec *bounds;
        size_t n_bounds, cap_bounds;
        struct lc_req_rec *reqs;
        size_t n_reqs, cap_reqs;
        size_t touched;         /* objects examined by the tick (work done) */
        size_t left;            /* dirty objects left for the next tick (the limit) */
};

void lc_publication_clear(struct lc_publication *p);
void lc_publication_done(struct lc_publication *p);

/* Life. */
int lc_state_new(struct lc_state **ret);
struct lc_state *lc_state_free(struct lc_state *s);
/* Protect the built-in relations (builtins.h) like every collection: publish their
 * bounds by a table's rule from now on, through reloads (the daemon does; the unit
 * tests of the rules leave them out).  -ENOMEM. */
int lc_state_protect_builtins(struct lc_state *s);
/* Forget everything derived from the catalog (items, bounds, requirements, applied
 * seq) but keep the frontiers seen; every object becomes dirty.  Before a reload. */
void lc_state_reset_catalog(struct lc_state *s);

/* Catalog. */

/* One record of the state column family (key 'i'/'b'/'r' + ...; others ignored).
 * -EBADMSG if it does not decode. */
int lc_state_load_record(struct lc_state *s, const void *key, size_t key_len,
                         const void *value, size_t value_len);
/* The same records decoded already, for a load in bulk (lifecycle-load.h): the
 * resulting state is the same as after lc_state_load_record() of each one's encoding
 * (in any order: the state does not depend on it).  Fastest with each array in gid
 * order (consumer order for the requirements), as a scan of the catalog gives them:
 * the map is sized once for all, and a bound or requirement finds its item from where
 * the previous one's was.  -ENOMEM (then part of it may be applied). */
struct lc_item_rec {
        uint64_t gid;
        Coord__ItemKind kind;
        uint64_t retain_ms, as_of;
        bool refresh;           /* a materialized view on a refresh schedule */
};

struct lc_load_batch {
        const struct lc_item_rec *items;
        size_t n_items;
        const struct lc_bound_rec *bounds;
        size_t n_bounds;
        const struct lc_req_rec *reqs;
        size_t n_reqs;
};

int lc_state_load_batch(struct lc_state *s, const struct lc_load_batch *b);
/* Apply one log entry; its seq must be lc_state_seq() + 1 (-ESTALE otherwise, with
 * nothing applied; an older seq is skipped with 0). */
int lc_state_apply_txn(struct lc_state *s, const Coord__CatalogTxn *txn);
uint64_t lc_state_seq(const struct lc_state *s);
void lc_state_set_seq(struct lc_state *s, uint64_t seq);

/* Frontiers. */

/* The ring says gid's stored upper is `upper` and its since `since` (or the collection
 * is gone).  An index's since is where its arrangement starts: its bound is never
 * published below it (the controller may install it later than its as-of). */
int lc_state_frontier(struct lc_state *s, uint64_t gid, uint64_t upper, uint64_t since,
                      bool forgotten);
/* A ring resync: every frontier known is stale until the snapshot re-delivers it. */
void lc_state_frontiers_reset(struct lc_state *s);

/* Publication. */

/* Propose the changed records into *out (cleared first).  0, or -ENOMEM (then the
 * dirty marks are kept).  The proposal's values become the basis of the next tick
 * only after lc_state_committed(). */
int lc_state_tick(struct lc_state *s, struct lc_publication *out);
/* At most n dirty objects per tick (lifecycle-state.c note 9); 0: every one (the
 * default).  The rest stay dirty for the next tick, out->left says how many. */
void lc_state_set_tick_limit(struct lc_state *s, size_t n);
/* How many times a tick walked an input's consumers for their minimum requirement. */
uint64_t lc_state_min_walks(const struct lc_state *s);
/* The adapter committed p (lc_state_tick()'s last proposal). */
void lc_state_committed(struct lc_state *s, const struct lc_publication *p);
/* The proposal was not committed: forget it and mark every object dirty. */
void lc_state_abandon(struct lc_state *s);

/* Every object's committed bound (those that have one), for a full AllowCompaction
 * after a controller (re)connects (lifecycle_send_allow_all()).  Appends to *out's
 * bounds. */
int lc_state_all_bounds(const struct lc_state *s, struct lc_publication *out);

/* Introspection (status, tests). */
size_t lc_state_n_items(const struct lc_state *s);
size_t lc_state_n_requirements(const struct lc_state *s);
/* Clients' holds the state follows (lifecycle-state.c note 7). */
size_t lc_state_n_holds(const struct lc_state *s);
/* Objects in the map, the map's slots, how often it was sized (the first time
 * included), and whether it is consistent (every slot's gid is its object's and
 * findable, the count right, at most half full). */
size_t lc_state_n_objects(const struct lc_state *s);
size_t lc_state_map_slots(const struct lc_state *s);
size_t lc_state_map_rehashes(const struct lc_state *s);
/* Objects a grow in steps has not moved yet (oamap.c note 1); 0 when none is under way. */
size_t lc_state_map_unmoved(const struct lc_state *s);
bool lc_state_map_ok(const struct lc_state *s);
/* gid's stored upper as the frontier ring last said; -ENOENT when not known. */
int lc_state_upper(const struct lc_state *s, uint64_t gid, uint64_t *ret);
/* -ENOENT when absent. */
int lc_state_bound(const struct lc_state *s, uint64_t gid, uint64_t *ret);
int lc_state_requirement(const struct lc_state *s, uint64_t consumer, uint64_t input,
                         uint64_t *ret);
