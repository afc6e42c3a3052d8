/* lifecycle-state.c -- the follower's maintained state and the publication tick
 * (contract: lifecycle-state.h).
 *
 * NOTES ON THE DESIGN
 *
 * (1) Objects.  One struct lc_obj per GlobalId that the catalog or the ring mentions, in
 *     a hash map by gid (open addressing, linear probing, at most half full,
 *     backward-shift deletion; each slot keeps the gid beside the object's pointer).  A
 *     bulk load (lc_state_load_batch()) sizes the map once and finds the objects of
 *     bounds and requirements from where the previous record's was (gid order).  An
 *     object holds its item (if any), its committed bound, its requirements as a
 *     consumer (R(this, input)), and as an input the consumers that have a requirement
 *     on it: the index BY INPUT, so an input's bound is min over o->consumers in
 *     O(its consumers).  An object that nothing mentions any more is freed.
 *
 * (2) Committed and proposed values.  bound and req.frontier are what the catalog
 *     committed (from the scan, the log, or lc_state_committed() when the adapter
 *     answered Ok: the Ok means the same values are in the catalog, and the log entry
 *     that follows carries them again, applied with max, so either order is fine).
 *     next_bound and req.next are the tick's proposal; a tick computes the bounds of
 *     inputs from the proposed requirements of the same tick, so one publication
 *     holds a consistent final state (I5: every R(C, X) >= bound(X)).
 *
 * (3) Dirty objects.  An object becomes dirty when its upper moves in the ring, when a
 *     requirement on it changes (as an input), or when its item or bound changes; when
 *     the tables' shared frontier T (the upper of gid 1) moves, the tables not at rest
 *     (8) are looked at too, because each table's upper is max(its stored upper, T).  A
 *     tick visits the dirty objects only, those tables, and the inputs their new
 *     requirements touch.
 *
 * (4) Quiet objects (lifecycle-bounds.h).  content_last() is the last time an
 *     object's contents can have changed: a table's (or source's, or built-in's)
 *     stored upper - 1; a materialized view's or index's as-of, or the latest of its
 *     inputs'.  Memoized per tick.  Rules stop there, so objects whose inputs were not
 *     written publish nothing although their uppers follow T.  When a collection's
 *     stored upper moves, its consumers become dirty too (their inputs' contents
 *     moved).
 *
 * (6) Built-ins (builtins.h) compact by committed bounds too: they are objects with
 *     an item of kind table from the start (builtins_add()), not counted among the
 *     catalog's items, kept through reloads; their bounds follow a table's rule.
 *
 * (7) Clients' holds (catalog.proto CatalogHold, adapter-hold.c): a hold on X at f is a
 *     requirement without a consumer item: tick_input() takes min(its consumers'
 *     requirements, every hold on X) as the bound rule's requirement, so a proposal
 *     never passes a hold the follower has seen (the adapter refuses one that passes
 *     a hold it has not seen yet, and the next tick proposes again).  They are few (one
 *     per running SUBSCRIBE, per input of an open snapshot block or a long read,
 *     adapter-readhold.c): a flat array, scanned per touched input (hold_min()).  A
 *     hold's put or delete makes its input dirty.  They come from the log and from the
 *     load (lifecycle-load.c), like every record.
 *
 * (5) Forward only (I1).  Every value is combined with max: a log entry or an Ok
 *     never lowers what is known, and lifecycle-bounds.h never proposes less than the
 *     old value.
 *
 * (8) Tables at rest.  A move of T moves only a table's policy term: its last (stored
 *     upper - 1), its requirements and its holds do not depend on T.  A table whose
 *     COMMITTED bound is >= min(requirements and holds, last) is at rest: lc_bound() gives
 *     that bound back whatever T is, so it proposes nothing until one of those moves.
 *     s->tables lists the tables not known to be at rest ("moving", o->moving, each once),
 *     and a tick where T moved walks those only: O(tables written within their window),
 *     not O(tables).  tick_input() judges every table it computes (o->rest) and puts one
 *     not at rest back in the list; the next walk drops those at rest.  Skipping one is
 *     safe because whatever can take it out of rest reaches tick_input() or the list:
 *     its stored upper moves (lc_state_frontier() dirties it), a requirement on it moves
 *     (tick_consumer() touches it; a record's put or delete dirties it), a hold is put or
 *     deleted, its item is put, a bound is loaded (dirty), its bound is deleted or an Ok
 *     raises a requirement past the tick's proposal (back in the list), an abandon or a
 *     reload (every object dirty).  Rest is judged on the committed bound, not the
 *     proposal: a table that a proposal brings to rest stays listed until a tick after
 *     the Ok finds it there, so the judgement holds whether the proposal is committed,
 *     abandoned or left unanswered.  A table with no upper proposes nothing and counts as
 *     at rest (its first upper dirties it); one whose upper does not dirty it (a gid below
 *     COORD_FIRST_USER_GID, not a built-in) never does.  Built-ins are never listed: they
 *     are dirty when their own uppers move (6), as they always were.  An entry outlives an
 *     object freed meanwhile: the walk drops one whose gid finds no object, or an object
 *     not flagged (a gid re-used while its old entry is listed, which the catalog never
 *     does, may be listed twice until it rests).
 *
 * (9) A tick looks at most s->tick_limit dirty objects (the oldest first, the views a
 *     dirty view dirties included); the rest stay dirty, and out->left tells the caller
 *     to tick again soon.  A setup or a reload makes every object dirty at once, and a
 *     tick over all of them held the follower's loop (and the adapter's, committing the
 *     publication, and the controller's, applying its permissions) in proportion.  An
 *     object left dirty keeps its committed bound and requirements until its turn:
 *     lower, so it protects more (I1 holds, and I5 because an input's bound is computed
 *     from its consumers' requirements as they are).
 */
#include "lifecycle-state.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "builtins.h"
#include "lifecycle-bounds.h"
#include "oamap.h"
#include "util.h"

#define GID_SHARED_FRONTIER 1u  /* coord_objects: its upper is the tables' T */

struct lc_req {
        uint64_t input;
        uint64_t frontier;      /* committed */
        uint64_t next;          /* proposed (2); == frontier outside a tick */
};

struct lc_obj {
        uint64_t gid;
        Coord__ItemKind kind;
        /* The flags together (the state holds 200,000 of these at 100,000 objects). */
        bool has_item, has_bound, dirty, mark, next_has, has_upper, min_valid;
        /* (8) moving: a table in s->tables.  rest: the last tick_input() found its
         * committed bound where no move of T takes it.  Stale only while the table is
         * dirty or touched (tick_input() judges it again in the same tick); moving_add()
         * clears it. */
        bool moving, rest;
        bool refresh;           /* a materialized view on a refresh schedule */
        bool builtin;           /* a built-in relation: no catalog item, a bound (6) */
        uint64_t retain_ms, as_of;
        uint64_t last_stamp, last;      /* content_last() memo (4) */
        uint64_t bound, next_bound;
        uint64_t upper;         /* stored upper, from the ring */
        uint64_t since;         /* since, from the ring (an index: its arrangement's) */
        struct lc_req *reqs;    /* as a consumer */
        size_t n_reqs, cap_reqs;
        uint64_t *consumers;    /* as an input: consumers with R(c, this) (1) */
        size_t n_consumers, cap_consumers;
        /* As an input: min over its consumers' proposed requirements on it, valid while
         * min_valid, and how many of them are at it.  A requirement that moves, comes or
         * goes updates both (min_moved(), min_gone()); only the last one to leave the
         * minimum, or a move down (abandon, reload), clears min_valid.  So tick_input()
         * need not walk the million consumers of one support table at every tick where
         * one of them moved. */
        uint64_t min_req;
        size_t min_cnt;
};

/* A slot of the object map (1): o NULL empty; gid is o->gid, kept beside the pointer
 * so that a probe reads no object but the one it finds. */
struct lc_slot {
        uint64_t gid;
        struct lc_obj *o;
};

struct lc_hold {
        uint64_t id, input, frontier;
};

struct lc_state {
        struct lc_hold *holds;  /* (7) */
        size_t n_holds, cap_holds;
        struct lc_slot *slots;  /* open addressing, at most half full */
        size_t mask, n;         /* n: objects in slots and old */
        struct oa_old old;      /* a grow under way (oamap.c note 1): obj_each() */
        size_t rehashes;        /* the map's sizes so far (tests) */
        uint64_t seq;
        size_t n_items, n_reqs;
        uint64_t *dirty;
        size_t n_dirty, cap_dirty;
        size_t tick_limit;      /* (9) dirty objects per tick, 0: all */
        uint64_t min_walks;     /* tick_input()'s walks of an input's consumers */
        uint64_t *tables;       /* (8) tables not at rest; checked at use */
        size_t n_tables, cap_tables;
        bool tables_moved;
        uint64_t stamp;         /* of the current tick, for content_last() */
        uint64_t *touched;      /* scratch of a tick */
        size_t n_touched, cap_touched;
};

/* ---- helpers ---- */


static size_t hash64(uint64_t x)
{
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 33;
        return (size_t)x;
}

static uint64_t get_be64(const uint8_t *p)
{
        uint64_t v = 0;

        for (int i = 0; i < 8; i++)
                v = v << 8 | p[i];
        return v;
}

/* ---- the object map (1) ---- */

/* A requirement on x (proposed, q->next) moves from old up to new, or (fresh) comes at
 * new.  Keeps min_req and min_cnt, or makes tick_input() walk the consumers again when
 * the minimum's last holder left it. */
static void min_moved(struct lc_obj *x, bool fresh, uint64_t old, uint64_t new)
{
        if (!x || !x->min_valid || (!fresh && old == new))
                return;
        assert(fresh || (new > old && old >= x->min_req));
        if (!fresh && old == x->min_req) {
                assert(x->min_cnt > 0);
                if (--x->min_cnt == 0) {
                        x->min_valid = false;
                        return;
                }
        }
        if (new < x->min_req) {
                x->min_req = new;
                x->min_cnt = 1;
        } else if (new == x->min_req)
                x->min_cnt++;
}

/* A requirement on x at value v is gone. */
static void min_gone(struct lc_obj *x, uint64_t v)
{
        if (!x || !x->min_valid || v != x->min_req)
                return;
        assert(x->min_cnt > 0);
        if (--x->min_cnt == 0)
                x->min_valid = false;
}

/* The slot of gid in one array, or NULL. */
static struct lc_slot *slot_probe(struct lc_slot *slots, size_t mask, uint64_t gid)
{
        for (size_t i = hash64(gid) & mask;; i = (i + 1) & mask) {
                struct lc_slot *e = &slots[i];
                if (!e->o)
                        return NULL;
                if (e->gid == gid)
                        return e;
        }
}

/* In the new array, then in old while the map grows (oamap.c note 1). */
static struct lc_obj *obj_find(const struct lc_state *s, uint64_t gid)
{
        const struct lc_slot *e;

        if (!s->slots)
                return NULL;
        e = slot_probe(s->slots, s->mask, gid);
        if (!e && s->old.slots)
                e = slot_probe(s->old.slots, s->old.mask, gid);
        return e ? e->o : NULL;
}

static bool slot_used(const void *e)
{
        return ((const struct lc_slot *)e)->o != NULL;
}

static uint64_t slot_hash(const void *e)
{
        return hash64(((const struct lc_slot *)e)->gid);
}

static const struct oa_kind map_kind = {
        .entry_size = sizeof(struct lc_slot), .min_slots = 64,
        .used = slot_used, .hash = slot_hash,
};

/* Every object once, in no order: for (size_t i = 0; (o = obj_each(s, &i)); ).  No
 * object added or freed meanwhile. */
static struct lc_obj *obj_each(const struct lc_state *s, size_t *i)
{
        const struct lc_slot *e = oa_each(&map_kind, s->slots, s->mask, &s->old, i);

        return e ? e->o : NULL;
}

/* Room for n objects in all without a rehash: slots for at least 2n (half full), 64 at
 * least, grown in steps (oamap.h); and a step of a grow under way. */
static int map_reserve(struct lc_state *s, size_t n)
{
        void *slots = s->slots;
        int r = oa_reserve_stepped(&map_kind, &slots, &s->mask, &s->old, s->n,
                                   n > s->n ? n - s->n : !s->slots);

        s->slots = slots;
        if (r > 0)
                s->rehashes++;
        return r < 0 ? r : 0;
}

static int dirty_add(struct lc_state *s, struct lc_obj *o)
{
        if (o->dirty)
                return 0;
        if (GROW_ARRAY(s->dirty, s->cap_dirty, s->n_dirty + 1) < 0)
                return -ENOMEM;
        s->dirty[s->n_dirty++] = o->gid;
        o->dirty = true;
        return 0;
}

/* Whether lc_state_frontier() dirties o when its upper moves: a catalog item's gid or a
 * built-in (8: only then may a table rest). */
static bool upper_dirties(const struct lc_obj *o)
{
        return o->gid >= COORD_FIRST_USER_GID || o->builtin;
}

/* (8) o is not known to be at rest: a table (not a built-in) goes in s->tables, once. */
static int moving_add(struct lc_state *s, struct lc_obj *o)
{
        o->rest = false;
        if (o->moving || o->builtin || !o->has_item || o->kind != COORD__ITEM_KIND__ITEM_TABLE)
                return 0;
        if (GROW_ARRAY(s->tables, s->cap_tables, s->n_tables + 1) < 0)
                return -ENOMEM;
        s->tables[s->n_tables++] = o->gid;
        o->moving = true;
        return 0;
}

static struct lc_obj *obj_get(struct lc_state *s, uint64_t gid)
{
        struct lc_obj *o = obj_find(s, gid);
        size_t i;

        if (o)
                return o;
        if (map_reserve(s, s->n + 1) < 0)
                return NULL;
        o = calloc(1, sizeof(*o));
        if (!o)
                return NULL;
        o->gid = gid;
        for (i = hash64(gid) & s->mask; s->slots[i].o; i = (i + 1) & s->mask)
                ;
        s->slots[i] = (struct lc_slot){ gid, o };
        s->n++;
        return o;
}

static void obj_free(struct lc_obj *o)
{
        if (!o)
                return;
        free(o->reqs);
        free(o->consumers);
        free(o);
}

/* Free o if nothing mentions it any more (backward-shift deletion, no tombstones).
 * A dirty object stays: the dirty list names it. */
static void obj_maybe_free(struct lc_state *s, struct lc_obj *o)
{
        if (o->has_item || o->has_bound || o->n_reqs || o->n_consumers || o->has_upper || o->dirty)
                return;
        struct lc_slot *slots = s->slots, *e;
        size_t mask = s->mask;

        if (!(e = slot_probe(slots, mask, o->gid))) {
                /* Not moved yet (oamap.c note 1): deleted from old, within its cluster. */
                slots = s->old.slots;
                mask = s->old.mask;
                e = slot_probe(slots, mask, o->gid);
                assert(e && e->o == o);
                s->old.n--;
        }
        oa_delete_at(&map_kind, slots, mask, (size_t)(e - slots));
        s->n--;
        obj_free(o);
}

static struct lc_req *req_find(const struct lc_obj *c, uint64_t input)
{
        for (size_t i = 0; i < c->n_reqs; i++)
                if (c->reqs[i].input == input)
                        return &c->reqs[i];
        return NULL;
}

/* ---- public: life ---- */

void lc_publication_clear(struct lc_publication *p)
{
        p->n_bounds = p->n_reqs = p->touched = 0;
}

void lc_publication_done(struct lc_publication *p)
{
        free(p->bounds);
        free(p->reqs);
        *p = (struct lc_publication){ 0 };
}

static int pub_bound(struct lc_publication *p, uint64_t gid, uint64_t bound)
{
        if (GROW_ARRAY(p->bounds, p->cap_bounds, p->n_bounds + 1) < 0)
                return -ENOMEM;
        p->bounds[p->n_bounds++] = (struct lc_bound_rec){ gid, bound };
        return 0;
}

static int pub_req(struct lc_publication *p, uint64_t c, uint64_t x, uint64_t f)
{
        if (GROW_ARRAY(p->reqs, p->cap_reqs, p->n_reqs + 1) < 0)
                return -ENOMEM;
        p->reqs[p->n_reqs++] = (struct lc_req_rec){ c, x, f };
        return 0;
}

/* (6) The built-in relations are collections with committed bounds like any other, but
 * no catalog items: they are here from the start, as tables (their stored upper is the
 * tables' shared frontier T), and stay through reloads. */
static int builtins_add(struct lc_state *s)
{
        for (uint64_t gid = 1; gid <= COORD_N_BUILTINS; gid++) {
                struct lc_obj *o = obj_get(s, gid);

                if (!o)
                        return -ENOMEM;
                o->has_item = o->builtin = true;
                o->kind = COORD__ITEM_KIND__ITEM_TABLE;
                if (dirty_add(s, o) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int lc_state_new(struct lc_state **ret)
{
        struct lc_state *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int lc_state_protect_builtins(struct lc_state *s)
{
        return builtins_add(s);
}

struct lc_state *lc_state_free(struct lc_state *s)
{
        if (!s)
                return NULL;
        struct lc_obj *o;

        for (size_t i = 0; (o = obj_each(s, &i)); )
                obj_free(o);
        free(s->slots);
        oa_old_free(&s->old);
        free(s->dirty);
        free(s->tables);
        free(s->touched);
        free(s->holds);
        free(s);
        return NULL;
}

void lc_state_reset_catalog(struct lc_state *s)
{
        struct lc_obj *o;

        /* A grow under way ends here: the walk below frees objects as it goes. */
        if (s->old.slots)
                oa_step(&map_kind, s->slots, s->mask, &s->old, SIZE_MAX);
        for (size_t i = 0; (o = obj_each(s, &i)); ) {
                o->has_item = o->builtin;       /* (6) */
                o->has_bound = o->next_has = false;
                o->bound = o->next_bound = 0;
                o->n_reqs = o->n_consumers = 0;
                o->min_valid = false;
                o->moving = o->rest = false;    /* (8) the list is emptied below */
        }
        s->n_items = s->n_reqs = 0;
        s->n_holds = 0;         /* (7) the reload brings them again */
        s->seq = 0;
        s->n_tables = 0;
        /* Objects with an upper stay (and are made dirty by the reload); the rest go. */
        for (size_t i = 0; s->slots && i <= s->mask;) {
                o = s->slots[i].o;
                if (o && !o->has_upper && !o->dirty) {
                        obj_maybe_free(s, o);
                        continue;       /* slot i may hold a shifted object now */
                }
                i++;
        }
        for (size_t i = 0; (o = obj_each(s, &i)); )
                (void)dirty_add(s, o);
}

/* ---- public: catalog ---- */

/* o has the item (kind, RETAIN HISTORY, as-of, refresh schedule or not). */
static int item_set_obj(struct lc_state *s, struct lc_obj *o, const struct lc_item_rec *it)
{
        bool had = o->has_item;
        int r;

        if (!had)
                s->n_items++;
        o->has_item = true;
        o->kind = it->kind;
        o->retain_ms = it->retain_ms;   /* ALTER ... SET (RETAIN HISTORY) puts it again */
        o->as_of = it->as_of;
        o->refresh = it->refresh;
        if (!had && (r = moving_add(s, o)) < 0)     /* (8) a table starts moving */
                return r;
        return dirty_add(s, o);
}

static int item_put(struct lc_state *s, uint64_t gid, const void *value, size_t len)
{
        Coord__CatalogItem *it = coord__catalog_item__unpack(NULL, len, value);
        struct lc_obj *o = obj_get(s, gid);
        int r = -ENOMEM;

        if (!it)
                return -EBADMSG;
        if (o)
                r = item_set_obj(s, o, &(struct lc_item_rec){ .gid = gid, .kind = it->kind,
                                 .retain_ms = it->retain_history_ms, .as_of = it->as_of,
                                 .refresh = it->refresh });
        coord__catalog_item__free_unpacked(it, NULL);
        return r;
}

static void item_delete(struct lc_state *s, uint64_t gid)
{
        struct lc_obj *o = obj_find(s, gid);

        if (!o || !o->has_item)
                return;
        o->has_item = false;
        s->n_items--;
        obj_maybe_free(s, o);
}

static int bound_set_obj(struct lc_state *s, struct lc_obj *o, uint64_t bound)
{
        o->bound = o->has_bound ? lc_max(o->bound, bound) : bound;
        o->has_bound = true;
        if (!o->next_has || o->next_bound < o->bound)
                o->next_bound = o->bound;
        return dirty_add(s, o);
}

static int bound_set(struct lc_state *s, uint64_t gid, uint64_t bound)
{
        struct lc_obj *o = obj_get(s, gid);

        return o ? bound_set_obj(s, o, bound) : -ENOMEM;
}

static int bound_put(struct lc_state *s, const void *value, size_t len)
{
        Coord__CatalogBound *b = coord__catalog_bound__unpack(NULL, len, value);
        int r;

        if (!b)
                return -EBADMSG;
        r = bound_set(s, b->gid, b->bound);
        coord__catalog_bound__free_unpacked(b, NULL);
        return r;
}

static int bound_delete(struct lc_state *s, uint64_t gid)
{
        struct lc_obj *o = obj_find(s, gid);
        int r;

        if (!o)
                return 0;
        o->has_bound = o->next_has = false;
        o->bound = o->next_bound = 0;
        /* (8) Its bound is 0 now: no longer at rest.  Listed, not dirty: the next move of
         * T looks at it, as before. */
        r = moving_add(s, o);
        obj_maybe_free(s, o);
        return r;
}

/* R(c, x) = frontier (combined with max if known); x is what c requires. */
static int req_set_objs(struct lc_state *s, struct lc_obj *c, struct lc_obj *x, uint64_t frontier)
{
        struct lc_req *q = req_find(c, x->gid);

        if (!q) {
                if (GROW_ARRAY(c->reqs, c->cap_reqs, c->n_reqs + 1) < 0 ||
                    GROW_ARRAY(x->consumers, x->cap_consumers, x->n_consumers + 1) < 0)
                        return -ENOMEM;
                x->consumers[x->n_consumers++] = c->gid;
                q = &c->reqs[c->n_reqs++];
                *q = (struct lc_req){ .input = x->gid, .frontier = frontier, .next = frontier };
                s->n_reqs++;
                min_moved(x, true, 0, frontier);
        } else {
                uint64_t old = q->next;

                q->frontier = lc_max(q->frontier, frontier);
                q->next = lc_max(q->next, q->frontier);
                min_moved(x, false, old, q->next);
        }
        return dirty_add(s, x);
}

static int req_set(struct lc_state *s, uint64_t consumer, uint64_t input, uint64_t frontier)
{
        /* Objects stay where they are when the map grows: c survives obj_get(input). */
        struct lc_obj *c = obj_get(s, consumer), *x = c ? obj_get(s, input) : NULL;

        return x ? req_set_objs(s, c, x, frontier) : -ENOMEM;
}

static void req_delete(struct lc_state *s, uint64_t consumer, uint64_t input)
{
        struct lc_obj *c = obj_find(s, consumer), *x = obj_find(s, input);
        struct lc_req *q = c ? req_find(c, input) : NULL;

        if (!q)
                return;
        min_gone(x, q->next);
        *q = c->reqs[--c->n_reqs];
        s->n_reqs--;
        if (x) {
                for (size_t i = 0; i < x->n_consumers; i++)
                        if (x->consumers[i] == consumer) {
                                x->consumers[i] = x->consumers[--x->n_consumers];
                                break;
                        }
                /* Its bound may advance now (DROP, issue 5 item 6). */
                (void)dirty_add(s, x);
        }
        obj_maybe_free(s, c);
}

/* (7) */
static uint64_t hold_min(const struct lc_state *s, uint64_t gid)
{
        uint64_t m = UINT64_MAX;

        for (size_t i = 0; i < s->n_holds; i++)
                if (s->holds[i].input == gid && s->holds[i].frontier < m)
                        m = s->holds[i].frontier;
        return m;
}

/* (7) A hold put (its frontier combined with max, (5)) or deleted; its input dirty. */
static int hold_apply(struct lc_state *s, bool put, uint64_t id, const void *value, size_t vlen)
{
        struct lc_hold *h = NULL;
        uint64_t input;

        for (size_t i = 0; i < s->n_holds && !h; i++)
                if (s->holds[i].id == id)
                        h = &s->holds[i];
        if (!put) {
                if (!h)
                        return 0;
                input = h->input;
                *h = s->holds[--s->n_holds];
        } else {
                Coord__CatalogHold *m = coord__catalog_hold__unpack(NULL, vlen, value);

                if (!m)
                        return -EBADMSG;
                if (!h) {
                        if (s->n_holds == s->cap_holds) {
                                size_t cap = s->cap_holds ? s->cap_holds * 2 : 8;
                                struct lc_hold *v = realloc(s->holds, cap * sizeof(*v));

                                if (!v) {
                                        coord__catalog_hold__free_unpacked(m, NULL);
                                        return -ENOMEM;
                                }
                                s->holds = v;
                                s->cap_holds = cap;
                        }
                        h = &s->holds[s->n_holds++];
                        *h = (struct lc_hold){ .id = id, .input = m->input, .frontier = m->frontier };
                } else if (m->frontier > h->frontier) {
                        h->frontier = m->frontier;
                }
                input = h->input;
                coord__catalog_hold__free_unpacked(m, NULL);
        }
        {
                struct lc_obj *x = obj_find(s, input);

                if (x)
                        (void)dirty_add(s, x);
        }
        return 0;
}

static int op_apply(struct lc_state *s, bool put, const uint8_t *k, size_t klen,
                    const void *value, size_t vlen)
{
        if (klen == 9 && k[0] == 'i') {
                if (put)
                        return item_put(s, get_be64(k + 1), value, vlen);
                item_delete(s, get_be64(k + 1));
                return 0;
        }
        if (klen == 9 && k[0] == 'b') {
                if (put)
                        return bound_put(s, value, vlen);
                return bound_delete(s, get_be64(k + 1));
        }
        if (klen == 9 && k[0] == 'h')
                return hold_apply(s, put, get_be64(k + 1), value, vlen);
        if (klen == 17 && k[0] == 'r') {
                if (put) {
                        Coord__CatalogRequirement *q =
                                coord__catalog_requirement__unpack(NULL, vlen, value);
                        int r;
                        if (!q)
                                return -EBADMSG;
                        r = req_set(s, q->consumer, q->input, q->frontier);
                        coord__catalog_requirement__free_unpacked(q, NULL);
                        return r;
                }
                req_delete(s, get_be64(k + 1), get_be64(k + 9));
                return 0;
        }
        return 0;
}

int lc_state_load_record(struct lc_state *s, const void *key, size_t key_len,
                         const void *value, size_t value_len)
{
        return op_apply(s, true, key, key_len, value, value_len);
}

/* The item record of gid in seen[0..n) (sorted by gid), looked up from *pos on: a few
 * steps forward (records of a load come in gid order, so it is usually at or just
 * after the previous one's), else by binary search.  NULL when absent. */
static struct lc_obj *load_seek(const struct lc_slot *seen, size_t n, size_t *pos, uint64_t gid)
{
        size_t i = *pos;

        for (unsigned k = 0; k < 8 && i < n && seen[i].gid < gid; k++)
                i++;
        if (!(i < n && seen[i].gid >= gid && (i == 0 || seen[i - 1].gid < gid)))
                i = LOWER_BOUND(n, m, seen[m].gid, gid);
        *pos = i;
        return i < n && seen[i].gid == gid ? seen[i].o : NULL;
}

static int slot_cmp(const void *a, const void *b)
{
        const struct lc_slot *x = a, *y = b;

        return x->gid < y->gid ? -1 : x->gid > y->gid;
}

/* Room for exactly n requirements of c (at least). */
static int reqs_reserve(struct lc_obj *c, size_t n)
{
        struct lc_req *v;

        if (n <= c->cap_reqs)
                return 0;
        v = realloc(c->reqs, n * sizeof(*v));
        if (!v)
                return -ENOMEM;
        c->reqs = v;
        c->cap_reqs = n;
        return 0;
}

/* How far ahead of the item being added its successors' slots are fetched (the map is
 * larger than the caches, and a hash spreads consecutive gids over all of it). */
#define LOAD_PREFETCH 8

int lc_state_load_batch(struct lc_state *s, const struct lc_load_batch *b)
{
        size_t n = b->n_items, pos = 0;
        struct lc_slot *seen = NULL;
        struct lc_obj *x = NULL;
        bool sorted = true;
        int r;

        /* Bounds and requirements are of items, and the objects a reload kept (those
         * with an upper) mostly are too: objects beyond the most of these are the
         * exception, and the map grows for them as usual. */
        r = map_reserve(s, lc_max(s->n, lc_max(n, b->n_bounds)));
        if (r >= 0)
                r = GROW_ARRAY(s->dirty, s->cap_dirty, s->n_dirty + n + b->n_bounds);
        if (r < 0)
                return r;
        seen = malloc((n ? n : 1) * sizeof(*seen));
        if (!seen)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const struct lc_item_rec *it = &b->items[i];
                struct lc_obj *o;

                /* No rehash below: map_reserve() made room for every item. */
                if (i + LOAD_PREFETCH < n)
                        __builtin_prefetch(&s->slots[hash64(b->items[i + LOAD_PREFETCH].gid) & s->mask]);
                o = obj_get(s, it->gid);
                if (!o) {
                        r = -ENOMEM;
                        goto out;
                }
                r = item_set_obj(s, o, it);
                if (r < 0)
                        goto out;
                seen[i] = (struct lc_slot){ it->gid, o };
                sorted = sorted && (i == 0 || seen[i - 1].gid < it->gid);
        }
        if (!sorted)
                qsort(seen, n, sizeof(*seen), slot_cmp);        /* not from a scan */
        for (size_t i = 0; i < b->n_bounds; i++) {
                struct lc_obj *o = load_seek(seen, n, &pos, b->bounds[i].gid);

                if (!o && !(o = obj_get(s, b->bounds[i].gid))) {
                        r = -ENOMEM;
                        goto out;
                }
                r = bound_set_obj(s, o, b->bounds[i].bound);
                if (r < 0)
                        goto out;
        }
        pos = 0;
        for (size_t i = 0, run = 0; i < b->n_reqs; i++) {
                const struct lc_req_rec *q = &b->reqs[i];
                struct lc_obj *c = load_seek(seen, n, &pos, q->consumer);

                if (!c && !(c = obj_get(s, q->consumer))) {
                        r = -ENOMEM;
                        goto out;
                }
                /* A consumer's requirements come together: room for exactly those (most
                 * have one; GROW_ARRAY() would give each consumer 8). */
                if (i >= run) {
                        for (run = i + 1; run < b->n_reqs && b->reqs[run].consumer == q->consumer; run++)
                                ;
                        r = reqs_reserve(c, c->n_reqs + (run - i));
                        if (r < 0)
                                goto out;
                }
                /* Inputs repeat (a support view read by every filler object). */
                if ((!x || x->gid != q->input) && !(x = obj_get(s, q->input))) {
                        r = -ENOMEM;
                        goto out;
                }
                r = req_set_objs(s, c, x, q->frontier);
                if (r < 0)
                        goto out;
        }
        r = 0;
out:
        free(seen);
        return r;
}

int lc_state_apply_txn(struct lc_state *s, const Coord__CatalogTxn *txn)
{
        if (txn->seq <= s->seq)
                return 0;
        if (txn->seq != s->seq + 1)
                return -ESTALE;
        for (size_t i = 0; i < txn->n_ops; i++) {
                const Coord__CatalogOp *op = txn->ops[i];
                int r;

                if (op->cf != COORD__CATALOG_OP__CF__STATE)
                        continue;
                r = op_apply(s, op->kind == COORD__CATALOG_OP__KIND__PUT, op->key.data,
                             op->key.len, op->value.data, op->value.len);
                if (r < 0)
                        return r;
        }
        s->seq = txn->seq;
        return 0;
}

uint64_t lc_state_seq(const struct lc_state *s)
{
        return s->seq;
}

void lc_state_set_seq(struct lc_state *s, uint64_t seq)
{
        s->seq = seq;
}

/* ---- public: frontiers ---- */

int lc_state_frontier(struct lc_state *s, uint64_t gid, uint64_t upper, uint64_t since,
                      bool forgotten)
{
        struct lc_obj *o;

        if (forgotten) {
                o = obj_find(s, gid);
                if (o) {
                        o->has_upper = false;
                        o->upper = 0;
                        obj_maybe_free(s, o);
                }
                return 0;
        }
        o = obj_get(s, gid);
        if (!o)
                return -ENOMEM;
        o->since = lc_max(o->since, since);
        if (o->has_upper && o->upper == upper)
                return 0;
        /* The ring never moves an upper back within a generation; a resync may show a
         * restarted controller's (equal or later) one.  Keep the largest (I1). */
        o->upper = o->has_upper ? lc_max(o->upper, upper) : upper;
        o->has_upper = true;
        if (gid == GID_SHARED_FRONTIER)
                s->tables_moved = true;
        if (!upper_dirties(o))
                return 0;
        /* (4): what reads it may have new contents to protect. */
        for (size_t i = 0; i < o->n_consumers; i++) {
                struct lc_obj *c = obj_find(s, o->consumers[i]);
                if (c && dirty_add(s, c) < 0)
                        return -ENOMEM;
        }
        return dirty_add(s, o);
}

void lc_state_frontiers_reset(struct lc_state *s)
{
        /* Uppers only grow (lc_state_frontier()), so nothing known is wrong: the
         * snapshot's records re-mark what moved.  Objects forgotten during the gap are
         * caught by a later drop in the catalog. */
        (void)s;
}

/* ---- public: publication ---- */

static int touch(struct lc_state *s, struct lc_obj *x)
{
        if (x->mark)
                return 0;
        if (GROW_ARRAY(s->touched, s->cap_touched, s->n_touched + 1) < 0)
                return -ENOMEM;
        s->touched[s->n_touched++] = x->gid;
        x->mark = true;
        return 0;
}

static bool is_collection(const struct lc_obj *o)
{
        return o->has_item && (o->kind == COORD__ITEM_KIND__ITEM_TABLE ||
                               o->kind == COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW ||
                               o->kind == COORD__ITEM_KIND__ITEM_SOURCE);
}

/* The last time o's contents can have changed (4); UINT64_MAX when unknown. */
static uint64_t content_last(struct lc_state *s, struct lc_obj *o)
{
        uint64_t v;

        if (o->last_stamp == s->stamp)
                return o->last;
        if (o->has_item && (o->kind == COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW ||
                            o->kind == COORD__ITEM_KIND__ITEM_INDEX)) {
                v = o->as_of;
                for (size_t i = 0; i < o->n_reqs && v != UINT64_MAX; i++) {
                        struct lc_obj *x = obj_find(s, o->reqs[i].input);
                        v = lc_max(v, x ? content_last(s, x) : UINT64_MAX);
                }
        } else if (o->has_upper)
                v = o->upper ? o->upper - 1 : 0;
        else
                v = UINT64_MAX;
        o->last_stamp = s->stamp;
        o->last = v;
        return v;
}

/* Phase 1: a consumer whose progress moved advances its requirements. */
static int tick_consumer(struct lc_state *s, struct lc_obj *c, struct lc_publication *out)
{
        uint64_t floor_ = 0;
        int r;

        if (!c->has_item || !c->has_upper)
                return 0;
        if (c->kind == COORD__ITEM_KIND__ITEM_INDEX) {
                uint64_t old = c->has_bound ? c->bound : 0;
                /* Never below where its arrangement starts: the controller installs it
                 * at max(as-of, its inputs' sinces), and the catalog must not promise
                 * more history than exists (I2). */
                /* The controller publishes an index's slot only when its since moves;
                 * a healthy index is readable up to T after each append (stepped when
                 * fed, caught up when read otherwise), so its upper is max(its slot's
                 * upper, T), as a table's is. */
                const struct lc_obj *shared = obj_find(s, GID_SHARED_FRONTIER);
                uint64_t upper = shared && shared->has_upper ? lc_max(c->upper, shared->upper)
                                                             : c->upper;
                uint64_t nb = lc_max(lc_index_bound(old, upper, lc_window(c->retain_ms),
                                                    content_last(s, c)), c->since);

                /* First tick after installation: publish it even if equal (issue 5 3). */
                if (nb == 0 || (c->has_bound && nb == c->bound))
                        goto reqs;
                c->next_bound = nb;
                c->next_has = true;
                r = pub_bound(out, c->gid, nb);
                if (r < 0)
                        return r;
        reqs:
                floor_ = c->next_has ? c->next_bound : (c->has_bound ? c->bound : 0);
        } else if (c->kind != COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW &&
                   c->kind != COORD__ITEM_KIND__ITEM_SINK && c->kind != COORD__ITEM_KIND__ITEM_SOURCE)
                return 0;       /* a sink: its upper is its durable progress, R as an MV's */
        for (size_t i = 0; i < c->n_reqs; i++) {
                struct lc_req *q = &c->reqs[i];
                struct lc_obj *x = obj_find(s, q->input);
                uint64_t last = x ? content_last(s, x) : UINT64_MAX;
                /* A source resumes from its remap (its progress) at the meet of the two
                 * uppers - 1 (DESIGN section 2). */
                uint64_t upper = c->kind == COORD__ITEM_KIND__ITEM_SOURCE
                                         ? (x && x->has_upper ? lc_min(c->upper, x->upper) : 0)
                                         : c->upper;
                uint64_t nr = c->kind == COORD__ITEM_KIND__ITEM_INDEX ? lc_max(q->next, floor_)
                              : c->refresh ? lc_refresh_requirement(q->next, upper, last)
                                           : lc_mv_requirement(q->next, upper, last);

                if (nr == q->next)
                        continue;
                min_moved(x, false, q->next, nr);
                q->next = nr;
                r = pub_req(out, c->gid, q->input, nr);
                if (r < 0)
                        return r;
                if (x && (r = touch(s, x)) < 0)
                        return r;
        }
        return 0;
}

/* (8) Judge table x at rest or not (rest: its committed bound is where no move of T
 * takes it, or it has no upper) and list it if not.  Only a table's judgement is kept:
 * the list holds tables only. */
static int table_judge(struct lc_state *s, struct lc_obj *x, bool rest)
{
        int r;

        if (x->kind != COORD__ITEM_KIND__ITEM_TABLE)
                return 0;
        if (rest && upper_dirties(x)) {
                x->rest = true;
                return 0;
        }
        r = moving_add(s, x);
        assert(r < 0 || x->moving || x->builtin);       /* not at rest: listed */
        return r;
}

/* Phase 2: an input touched gets the bound rule over its consumers' requirements. */
static int tick_input(struct lc_state *s, struct lc_obj *x, struct lc_publication *out)
{
        const struct lc_obj *shared = obj_find(s, GID_SHARED_FRONTIER);
        uint64_t upper, min_req = UINT64_MAX, old, last, nb;
        bool rest;
        int r;

        if (!is_collection(x))
                return 0;
        if (!x->has_upper)
                return table_judge(s, x, true);     /* nothing to propose (8) */
        upper = x->upper;
        if (x->kind == COORD__ITEM_KIND__ITEM_TABLE && shared && shared->has_upper)
                upper = lc_table_upper(upper, shared->upper);
        if (x->min_valid)
                min_req = x->min_req;
        else {
                size_t cnt = 0;

                s->min_walks++;
                for (size_t i = 0; i < x->n_consumers; i++) {
                        const struct lc_obj *c = obj_find(s, x->consumers[i]);
                        const struct lc_req *q = c ? req_find(c, x->gid) : NULL;

                        if (!q || q->next > min_req)
                                continue;
                        cnt = q->next == min_req ? cnt + 1 : 1;
                        min_req = q->next;
                }
                x->min_req = min_req;
                x->min_cnt = cnt;
                x->min_valid = true;
        }
        if (s->n_holds)
                min_req = lc_min(min_req, hold_min(s, x->gid));    /* (7) */
        old = x->has_bound ? x->bound : 0;
        last = content_last(s, x);
        nb = lc_bound(old, upper, lc_window(x->retain_ms), min_req, last);
        /* (8) At rest: lc_bound() returns old for every upper.  Judged on old, the
         * committed bound, never on nb: a proposal is not the bound until its Ok. */
        rest = old >= lc_min(min_req, last);
        assert(!rest || nb == old);
        r = table_judge(s, x, rest);
        if (r < 0 || nb == old)
                return r;
        x->next_bound = nb;
        x->next_has = true;
        return pub_bound(out, x->gid, nb);
}

int lc_state_tick(struct lc_state *s, struct lc_publication *out)
{
        size_t n_dirty;
        int r = 0;

        lc_publication_clear(out);
        s->n_touched = 0;
        s->stamp++;
        /* The list may grow while we walk it: a dirty materialized view makes what
         * reads it dirty (its contents may have moved, (4)), down a chain of views.  At
         * most tick_limit of it (9). */
        for (n_dirty = 0; n_dirty < s->n_dirty && r == 0 &&
                          (!s->tick_limit || n_dirty < s->tick_limit); n_dirty++) {
                size_t i = n_dirty;
                struct lc_obj *o = obj_find(s, s->dirty[i]);
                if (!o)
                        continue;
                r = tick_consumer(s, o, out);
                if (r == 0 && is_collection(o))
                        r = touch(s, o);
                if (o->has_item && o->kind == COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW)
                        for (size_t j = 0; j < o->n_consumers && r == 0; j++) {
                                struct lc_obj *c = obj_find(s, o->consumers[j]);
                                if (c)
                                        r = dirty_add(s, c);
                        }
        }
        /* (8) T moved: the tables not at rest.  The list is compacted to the end even
         * after an error (then nothing more is touched, and everything becomes dirty). */
        if (r == 0 && s->tables_moved) {
                size_t keep = 0;
                for (size_t i = 0; i < s->n_tables; i++) {
                        struct lc_obj *o = obj_find(s, s->tables[i]);
                        if (!o || !o->moving)
                                continue;       /* its object was freed meanwhile */
                        if (!o->has_item || o->kind != COORD__ITEM_KIND__ITEM_TABLE || o->rest) {
                                o->moving = false;      /* dropped, or at rest: leaves */
                                continue;
                        }
                        s->tables[keep++] = s->tables[i];
                        if (o->dirty)
                                continue;       /* (9) touched above, or left for later */
                        if (r == 0)
                                r = touch(s, o);
                }
                s->n_tables = keep;
        }
        for (size_t i = 0; i < s->n_touched && r == 0; i++) {
                struct lc_obj *x = obj_find(s, s->touched[i]);
                if (x)
                        r = tick_input(s, x, out);
        }
        for (size_t i = 0; i < s->n_touched; i++) {
                struct lc_obj *x = obj_find(s, s->touched[i]);
                if (x)
                        x->mark = false;
        }
        out->touched = s->n_touched + n_dirty;
        if (r < 0) {
                lc_state_abandon(s);
                return r;
        }
        /* The dirty marks are consumed: what the tick saw is in the proposal. */
        for (size_t i = 0; i < n_dirty; i++) {
                struct lc_obj *o = obj_find(s, s->dirty[i]);
                if (o) {
                        o->dirty = false;
                        obj_maybe_free(s, o);
                }
        }
        if (s->n_dirty > n_dirty)
                memmove(s->dirty, s->dirty + n_dirty, (s->n_dirty - n_dirty) * sizeof(*s->dirty));
        s->n_dirty -= n_dirty;
        out->left = s->n_dirty;
        s->tables_moved = false;
        return 0;
}

void lc_state_set_tick_limit(struct lc_state *s, size_t n)
{
        s->tick_limit = n;
}

uint64_t lc_state_min_walks(const struct lc_state *s)
{
        return s->min_walks;
}

void lc_state_committed(struct lc_state *s, const struct lc_publication *p)
{
        for (size_t i = 0; i < p->n_bounds; i++) {
                struct lc_obj *o = obj_find(s, p->bounds[i].gid);
                if (!o)
                        continue;
                o->bound = o->has_bound ? lc_max(o->bound, p->bounds[i].bound) : p->bounds[i].bound;
                o->has_bound = true;
                o->next_bound = lc_max(o->next_bound, o->bound);
                o->next_has = false;
        }
        for (size_t i = 0; i < p->n_reqs; i++) {
                struct lc_obj *c = obj_find(s, p->reqs[i].consumer);
                struct lc_req *q = c ? req_find(c, p->reqs[i].input) : NULL;
                if (!q)
                        continue;
                struct lc_obj *x = obj_find(s, p->reqs[i].input);

                q->frontier = lc_max(q->frontier, p->reqs[i].frontier);
                /* (8) An Ok raising a requirement above its q->next (p is not the last
                 * proposal, or the requirement was reset since: abandoned, reloaded, put
                 * again): its input may leave rest without a tick seeing it. */
                if (q->next < q->frontier && x)
                        (void)moving_add(s, x);
                min_moved(x, false, q->next, lc_max(q->next, q->frontier));
                q->next = lc_max(q->next, q->frontier);
        }
}

void lc_state_abandon(struct lc_state *s)
{
        struct lc_obj *o;

        for (size_t i = 0; (o = obj_each(s, &i)); ) {
                o->next_bound = o->bound;
                o->next_has = false;
                o->min_valid = false;   /* every requirement below moves */
                for (size_t j = 0; j < o->n_reqs; j++)
                        o->reqs[j].next = o->reqs[j].frontier;
                (void)dirty_add(s, o);
        }
        s->tables_moved = true;
}

int lc_state_all_bounds(const struct lc_state *s, struct lc_publication *out)
{
        const struct lc_obj *o;

        for (size_t i = 0; (o = obj_each(s, &i)); )
                if (o->has_bound && pub_bound(out, o->gid, o->bound) < 0)
                        return -ENOMEM;
        return 0;
}

size_t lc_state_n_items(const struct lc_state *s)
{
        return s->n_items;
}

size_t lc_state_n_requirements(const struct lc_state *s)
{
        return s->n_reqs;
}

size_t lc_state_n_holds(const struct lc_state *s)
{
        return s->n_holds;
}

size_t lc_state_n_objects(const struct lc_state *s)
{
        return s->n;
}

size_t lc_state_map_slots(const struct lc_state *s)
{
        return s->slots ? s->mask + 1 : 0;
}

size_t lc_state_map_rehashes(const struct lc_state *s)
{
        return s->rehashes;
}

size_t lc_state_map_unmoved(const struct lc_state *s)
{
        return s->old.n;
}

bool lc_state_map_ok(const struct lc_state *s)
{
        size_t used = 0;

        size_t cap = s->slots ? s->mask + 1 : 0, ocap = s->old.slots ? s->old.mask + 1 : 0;

        for (size_t i = 0; i < cap + ocap; i++) {
                const struct lc_slot *e = i < cap ? &s->slots[i]
                                                  : &((struct lc_slot *)s->old.slots)[i - cap];
                if (!e->o)
                        continue;
                used++;
                /* The gid beside the pointer is the object's, and a probe from its
                 * home finds it (no empty slot in between), in either array. */
                if (e->gid != e->o->gid || obj_find(s, e->gid) != e->o)
                        return false;
        }
        return used == s->n && (!s->slots || 2 * s->n <= s->mask + 1) &&
               (!s->old.slots || s->old.n <= s->n);
}

int lc_state_upper(const struct lc_state *s, uint64_t gid, uint64_t *ret)
{
        const struct lc_obj *o = obj_find(s, gid);

        if (!o || !o->has_upper)
                return -ENOENT;
        *ret = o->upper;
        return 0;
}

int lc_state_bound(const struct lc_state *s, uint64_t gid, uint64_t *ret)
{
        const struct lc_obj *o = obj_find(s, gid);

        if (!o || !o->has_bound)
                return -ENOENT;
        *ret = o->bound;
        return 0;
}

int lc_state_requirement(const struct lc_state *s, uint64_t consumer, uint64_t input,
                         uint64_t *ret)
{
        const struct lc_obj *c = obj_find(s, consumer);
        const struct lc_req *q = c ? req_find(c, input) : NULL;

        if (!q)
                return -ENOENT;
        *ret = q->frontier;
        return 0;
}
