/* lifecycle-enact.c -- see lifecycle-enact.h.
 *
 * NOTES
 * (1) Items are kept as what a message to the controller takes of them (struct
 *     lc_enact_item: gid, kind, birth, as-of, the index's object and keys, the column
 *     types, the plan's bytes, a refresh schedule, a sink's file, in one allocation) in an array sorted by GlobalId:
 *     new items come with increasing GlobalIds, so an insert is an append; a delete
 *     is a memmove.  Only tables, materialized views, indexes and sinks are kept (views
 *     have nothing to enact).  The unpacked CatalogItem (name, SQL text, inputs, refs, ten
 *     or so allocations) is freed at once: at 100,000 indexes it was ~60 MB, and its
 *     page faults were a tenth of the follower's restart.
 * (2) The queue holds GlobalIds in log order: a put to create, a delete to drop.  A flush
 *     sends at most three messages: one EnsureCollections (the tables), one
 *     CreateDataflows (the views and indexes, in GlobalId order so inputs come first),
 *     one DropCollections (in the order the log deleted them: dependents first).  A gid
 *     created and dropped in the same flush is created then dropped; the controller's
 *     answers are idempotent, so this is only a little wasted work.
 * (3) The gids of the items with a refresh schedule are kept apart, sorted
 *     (refresh_note()/refresh_forget() wherever an item is kept, replaced or deleted),
 *     so lc_enact_next_refresh(), called for every refresh view at each 100 ms tick of
 *     every follower, is a binary search and not a scan of all items.
 * (4) Of the refresh leases (`'l' + "refresh/<gid>"`, adapter-lease.c) the set keeps
 *     each view's last commit id, the refresh time committed last
 *     (lc_enact_refresh_committed(); from a load and from the log, as the items), so a
 *     follower can tell a refresh written but never committed without claiming its
 *     lease (lifecycle-refresh.c note 8).  Kept only for a kept refresh view, and
 *     dropped with its item.
 * (5) A resync sends the complete set in parts (CreateDataflows.part/more,
 *     controller-server-install.c note 17a), one part per loop turn: a million
 *     dataflows are more than a frame, and building them all in one turn blocked the
 *     loop past the duty lease's deadline, so the follower lost the duty at every
 *     takeover and resynced again.  Its first turn sends every table (Ensure, complete,
 *     in parts of its own: controller-server-collection.c note 12a), before the
 *     queue check, so that the tables' total must stay under the send queue's limit
 *     (32 MB: about 1,800,000 tables).
 *     Parts go by GlobalId (e->resync_next: items added or deleted between turns move
 *     no index), sinks in parts after all the others (a sink may read a later
 *     GlobalId); each part is checked against the gate, and a lost gate or controller
 *     abandons the resync (the next one starts over).  A part waits while more than
 *     RESYNC_QUEUED_MAX is queued to the controller (the connection refuses a frame
 *     past its send queue's limit, -ENOBUFS).  Flushes wait for its end
 *     (lc_enact_flush()), then the resync's done callback runs (the permissions, which
 *     name these dataflows).
 */
#include "lifecycle-enact.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.pb-c.h"
#include "catalog/catalog.h"
#include "log.h"
#include "loop/loop.h"
#include "node/node.h"
#include "plan.pb-c.h"
#include "refresh.h"
#include "util.h"

#define KEY_ITEM 'i'

struct lc_enact_item {
        uint64_t gid, created_at, as_of, on_id;
        Coord__ItemKind kind;
        bool refresh;                   /* a refresh schedule (materialized view) */
        bool sink_snapshot;             /* a sink: SNAPSHOT */
        char *sink_path;                /* a sink's or a source's file (in data[]), else NULL */
        uint64_t progress_id;           /* a source: its progress (remap) collection */
        uint32_t source_type, source_format;
        uint64_t source_tick_ms, source_up_to;
        uint64_t refresh_every_ms, refresh_aligned_to;
        size_t n_refresh_at, n_types, n_keys, plan_len;
        uint64_t *refresh_at;           /* these four point into data[] */
        Coord__Plan__Type *types;
        uint32_t *keys;
        uint8_t *plan;
        uint64_t data[];                /* refresh times, types, keys, plan, sink path: one
                                         * allocation (1) */
};

struct lc_enact {
        struct node *node;
        struct lc_enact_item **items;   /* sorted by gid (1) */
        size_t n, cap;
        uint64_t *refresh;              /* gids of the items with a schedule, sorted (3) */
        size_t n_refresh, cap_refresh;
        struct rcommit { uint64_t gid, last; } *rcommits;       /* sorted by gid (4) */
        size_t n_rcommits, cap_rcommits;
        uint64_t *creates, *drops;      /* queued gids (2) */
        size_t n_creates, cap_creates, n_drops, cap_drops;
        uint64_t next_request_id, sent, errors;
        bool (*gate)(void *arg);        /* lc_enact_set_gate() */
        void *gate_arg;
        /* (5) a resync in parts */
        bool resync;
        bool resync_sinks;              /* past the others: the sinks' parts */
        bool resync_tables_sent;        /* the Ensure's parts went (the first turn) */
        uint64_t resync_next;           /* the next part starts at this gid */
        uint32_t resync_part;
        uint64_t resync_start_ns;
        size_t resync_sent;
        struct loop_timer *resync_timer;
        size_t part_items;              /* (5) at most this many dataflows a part */
        void (*resync_done)(void *arg);
        void *resync_done_arg;
};

int lc_enact_new(struct node *n, struct lc_enact **ret)
{
        struct lc_enact *e = calloc(1, sizeof(*e));

        if (!e)
                return -ENOMEM;
        e->node = n;
        e->next_request_id = 1ull << 62;        /* apart from the publication's ids */
        e->part_items = LC_ENACT_PART_ITEMS;
        *ret = e;
        return 0;
}

struct lc_enact_item *lc_enact_item_free(struct lc_enact_item *it)
{
        free(it);
        return NULL;
}

bool lc_enact_wants(Coord__ItemKind kind)
{
        return kind == COORD__ITEM_KIND__ITEM_TABLE || kind == COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW ||
               kind == COORD__ITEM_KIND__ITEM_INDEX || kind == COORD__ITEM_KIND__ITEM_SINK ||
               kind == COORD__ITEM_KIND__ITEM_SOURCE;
}

int lc_enact_item_new(const Coord__CatalogItem *p, struct lc_enact_item **ret)
{
        size_t types = p->n_columns * sizeof(Coord__Plan__Type), keys = p->n_keys * sizeof(uint32_t);
        size_t at = p->n_refresh_at * sizeof(uint64_t);
        bool sink = p->kind == COORD__ITEM_KIND__ITEM_SINK, source = p->kind == COORD__ITEM_KIND__ITEM_SOURCE;
        const char *file = sink ? p->sink_path : source ? p->source_path : NULL;
        size_t path = file ? strlen(file) + 1 : 0;
        struct lc_enact_item *it;

        /* A source's progress: the controller makes it with its source. */
        if (!lc_enact_wants(p->kind) || (source && (!p->source_type || p->n_logical_inputs != 1))) {
                *ret = NULL;
                return 0;
        }
        it = malloc(sizeof(*it) + at + types + keys + p->plan.len + path);
        if (!it)
                return -ENOMEM;
        *it = (struct lc_enact_item){
                .gid = p->gid, .created_at = p->created_at, .as_of = p->as_of, .on_id = p->on_id,
                .kind = p->kind, .refresh = p->refresh, .refresh_every_ms = p->refresh_every_ms,
                .refresh_aligned_to = p->refresh_aligned_to, .n_refresh_at = p->n_refresh_at,
                .n_types = p->n_columns, .n_keys = p->n_keys, .plan_len = p->plan.len,
        };
        /* data[] is 8-aligned: 8-byte refresh times, 4-byte types, 4-byte keys, bytes. */
        it->refresh_at = it->data;
        if (at)
                memcpy(it->refresh_at, p->refresh_at, at);
        it->types = (Coord__Plan__Type *)((uint8_t *)it->data + at);
        it->keys = (uint32_t *)((uint8_t *)it->data + at + types);
        it->plan = (uint8_t *)it->data + at + types + keys;
        for (size_t c = 0; c < p->n_columns; c++)
                it->types[c] = (Coord__Plan__Type)p->columns[c]->type;
        if (keys)
                memcpy(it->keys, p->keys, keys);
        if (p->plan.len)
                memcpy(it->plan, p->plan.data, p->plan.len);
        it->sink_snapshot = p->sink_snapshot;
        it->sink_path = path ? memcpy(it->plan + p->plan.len, file, path) : NULL;
        if (source) {
                it->progress_id = p->logical_inputs[0];
                it->source_type = p->source_type;
                it->source_format = p->source_format;
                it->source_tick_ms = p->source_tick_ms;
                it->source_up_to = p->source_up_to;
        }
        *ret = it;
        return 1;
}

void lc_enact_reset(struct lc_enact *e)
{
        for (size_t i = 0; i < e->n; i++)
                lc_enact_item_free(e->items[i]);
        e->n = 0;
        e->n_refresh = e->n_rcommits = e->n_creates = e->n_drops = 0;
}

/* After node_free(): its loop freed resync_timer. */
struct lc_enact *lc_enact_free(struct lc_enact *e)
{
        if (!e)
                return NULL;
        lc_enact_reset(e);
        free(e->items);
        free(e->refresh);
        free(e->rcommits);
        free(e->creates);
        free(e->drops);
        free(e);
        return NULL;
}

size_t lc_enact_n_items(const struct lc_enact *e)
{
        return e->n;
}

uint64_t lc_enact_item_gid(const struct lc_enact *e, size_t i)
{
        return i < e->n ? e->items[i]->gid : 0;
}

uint64_t lc_enact_sent(const struct lc_enact *e)
{
        return e->sent;
}

static size_t lower_bound(const struct lc_enact *e, uint64_t gid)
{
        return LOWER_BOUND(e->n, m, e->items[m]->gid, gid);
}

static struct lc_enact_item *item_find(const struct lc_enact *e, uint64_t gid)
{
        size_t i = lower_bound(e, gid);

        return i < e->n && e->items[i]->gid == gid ? e->items[i] : NULL;
}

static size_t refresh_lower_bound(const struct lc_enact *e, uint64_t gid)
{
        return LOWER_BOUND(e->n_refresh, m, e->refresh[m], gid);
}

/* Note 3: e->refresh holds exactly the gids of the items with it->refresh, so the
 * refresh worker's tick costs O(refresh views), not O(items). */
static void refresh_forget(struct lc_enact *e, uint64_t gid)
{
        size_t pos = refresh_lower_bound(e, gid);

        if (pos < e->n_refresh && e->refresh[pos] == gid) {
                memmove(&e->refresh[pos], &e->refresh[pos + 1], (e->n_refresh - pos - 1) * sizeof(*e->refresh));
                e->n_refresh--;
        }
}

static int refresh_note(struct lc_enact *e, uint64_t gid)
{
        size_t pos = refresh_lower_bound(e, gid);
        int r;

        if (pos < e->n_refresh && e->refresh[pos] == gid)
                return 0;
        r = GROW_ARRAY(e->refresh, e->cap_refresh, e->n_refresh + 1);
        if (r < 0)
                return r;
        memmove(&e->refresh[pos + 1], &e->refresh[pos], (e->n_refresh - pos) * sizeof(*e->refresh));
        e->refresh[pos] = gid;
        e->n_refresh++;
        return 0;
}

static size_t rcommit_lower_bound(const struct lc_enact *e, uint64_t gid)
{
        return LOWER_BOUND(e->n_rcommits, m, e->rcommits[m].gid, gid);
}

static void rcommit_forget(struct lc_enact *e, uint64_t gid)
{
        size_t pos = rcommit_lower_bound(e, gid);

        if (pos < e->n_rcommits && e->rcommits[pos].gid == gid) {
                memmove(&e->rcommits[pos], &e->rcommits[pos + 1],
                        (e->n_rcommits - pos - 1) * sizeof(*e->rcommits));
                e->n_rcommits--;
        }
}

/* Note 4: a lease record; 0 (not a refresh lease, or kept), -EBADMSG, -ENOMEM. */
static int rcommit_put(struct lc_enact *e, const uint8_t *key, size_t key_len, const void *value,
                       size_t value_len)
{
        static const char prefix[] = "refresh/";
        const struct lc_enact_item *it;
        Coord__CatalogLease *m;
        uint64_t gid, last = 0;
        char buf[32];
        size_t pos, n = key_len - 1 - (sizeof(prefix) - 1);
        int r;

        if (key_len < 1 + sizeof(prefix) || key_len - 1 - (sizeof(prefix) - 1) >= sizeof(buf) ||
            key[0] != CATALOG_STATE_LEASE || memcmp(key + 1, prefix, sizeof(prefix) - 1) != 0)
                return 0;
        memcpy(buf, key + sizeof(prefix), n);
        buf[n] = '\0';
        if (parse_u64(buf, UINT64_MAX, &gid) < 0)
                return 0;
        it = item_find(e, gid);
        if (!it || !it->refresh)
                return 0;       /* a dropped view's lease stays in the catalog */
        m = coord__catalog_lease__unpack(NULL, value_len, value);
        if (!m)
                return -EBADMSG;
        if (m->last_commit_id && m->last_commit_id[0])
                (void)parse_u64(m->last_commit_id, UINT64_MAX, &last);
        coord__catalog_lease__free_unpacked(m, NULL);
        pos = rcommit_lower_bound(e, gid);
        if (pos < e->n_rcommits && e->rcommits[pos].gid == gid) {
                e->rcommits[pos].last = last;
                return 0;
        }
        r = GROW_ARRAY(e->rcommits, e->cap_rcommits, e->n_rcommits + 1);
        if (r < 0)
                return r;
        memmove(&e->rcommits[pos + 1], &e->rcommits[pos], (e->n_rcommits - pos) * sizeof(*e->rcommits));
        e->rcommits[pos] = (struct rcommit){ gid, last };
        e->n_rcommits++;
        return 0;
}

int lc_enact_refresh_committed(const struct lc_enact *e, uint64_t gid, uint64_t *ret_last)
{
        size_t pos = rcommit_lower_bound(e, gid);

        if (pos >= e->n_rcommits || e->rcommits[pos].gid != gid)
                return -ENOENT;
        *ret_last = e->rcommits[pos].last;
        return 0;
}

/* Keep it, which is ours now (replacing one with the same gid). */
static int item_keep(struct lc_enact *e, struct lc_enact_item *it)
{
        size_t pos;
        int r;

        r = it->refresh ? refresh_note(e, it->gid) : 0;
        if (r < 0) {
                lc_enact_item_free(it);
                return r;
        }
        /* Items come in gid order at a load, and new ones with new gids: an append. */
        pos = e->n && e->items[e->n - 1]->gid < it->gid ? e->n : lower_bound(e, it->gid);
        if (pos < e->n && e->items[pos]->gid == it->gid) {
                if (!it->refresh) {
                        refresh_forget(e, it->gid);
                        rcommit_forget(e, it->gid);
                }
                lc_enact_item_free(e->items[pos]);
                e->items[pos] = it;
                return 0;
        }
        r = GROW_ARRAY(e->items, e->cap, e->n + 1);
        if (r < 0) {
                if (it->refresh)
                        refresh_forget(e, it->gid);
                lc_enact_item_free(it);
                return r;
        }
        memmove(&e->items[pos + 1], &e->items[pos], (e->n - pos) * sizeof(*e->items));
        e->items[pos] = it;
        e->n++;
        return 0;
}

/* An encoded item: 1 if kept, 0 if not enactable, -EBADMSG, -ENOMEM. */
static int item_put(struct lc_enact *e, const void *value, size_t len)
{
        Coord__CatalogItem *p = coord__catalog_item__unpack(NULL, len, value);
        struct lc_enact_item *it = NULL;
        int r;

        if (!p)
                return -EBADMSG;
        r = lc_enact_item_new(p, &it);
        coord__catalog_item__free_unpacked(p, NULL);
        if (r <= 0)
                return r;
        r = item_keep(e, it);
        return r < 0 ? r : 1;
}

/* Forget an item; 1 if it was kept. */
static int item_delete(struct lc_enact *e, uint64_t gid)
{
        size_t pos = lower_bound(e, gid);

        if (pos >= e->n || e->items[pos]->gid != gid)
                return 0;
        if (e->items[pos]->refresh) {
                refresh_forget(e, gid);
                rcommit_forget(e, gid);
        }
        lc_enact_item_free(e->items[pos]);
        memmove(&e->items[pos], &e->items[pos + 1], (e->n - pos - 1) * sizeof(*e->items));
        e->n--;
        return 1;
}

int lc_enact_load_record(struct lc_enact *e, const void *key, size_t key_len, const void *value,
                         size_t value_len)
{
        if (key_len && ((const uint8_t *)key)[0] == CATALOG_STATE_LEASE)
                return rcommit_put(e, key, key_len, value, value_len);
        if (key_len != 9 || ((const uint8_t *)key)[0] != KEY_ITEM)
                return 0;
        return item_put(e, value, value_len) < 0 ? -EBADMSG : 0;
}

int lc_enact_load_item(struct lc_enact *e, struct lc_enact_item *it)
{
        return it ? item_keep(e, it) : 0;
}

int lc_enact_apply_txn(struct lc_enact *e, const Coord__CatalogTxn *txn)
{
        for (size_t i = 0; i < txn->n_ops; i++) {
                const Coord__CatalogOp *op = txn->ops[i];
                uint64_t gid;
                int r;

                if (op->cf == COORD__CATALOG_OP__CF__STATE && op->key.len &&
                    op->key.data[0] == CATALOG_STATE_LEASE && op->kind == COORD__CATALOG_OP__KIND__PUT) {
                        r = rcommit_put(e, op->key.data, op->key.len, op->value.data, op->value.len);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (op->cf != COORD__CATALOG_OP__CF__STATE || op->key.len != 9 ||
                    op->key.data[0] != KEY_ITEM)
                        continue;
                gid = be64_get(op->key.data + 1);
                if (op->kind == COORD__CATALOG_OP__KIND__PUT) {
                        r = item_put(e, op->value.data, op->value.len);
                        if (r < 0)
                                return r;
                        if (r == 0)
                                continue;
                        r = GROW_ARRAY(e->creates, e->cap_creates, e->n_creates + 1);
                        if (r < 0)
                                return r;
                        e->creates[e->n_creates++] = gid;
                } else {
                        /* a view's delete drops nothing; the controller answers an
                         * unknown gid with Ok anyway */
                        if (item_delete(e, gid) == 0)
                                continue;
                        r = GROW_ARRAY(e->drops, e->cap_drops, e->n_drops + 1);
                        if (r < 0)
                                return r;
                        e->drops[e->n_drops++] = gid;
                }
        }
        return 0;
}

static bool controller_up(const struct lc_enact *e)
{
        return node_peer_connected(e->node, COORD__ROLE__ROLE_CONTROLLER) &&
               (!e->gate || e->gate(e->gate_arg));
}

int lc_enact_next_refresh(const struct lc_enact *e, uint64_t after, uint64_t *ret_gid,
                          uint64_t *ret_as_of, struct refresh_schedule *ret_rs)
{
        size_t i = after == UINT64_MAX ? e->n_refresh : refresh_lower_bound(e, after + 1);

        if (i < e->n_refresh) {
                const struct lc_enact_item *it = item_find(e, e->refresh[i]);

                assert(it && it->refresh);      /* note 3 */
                *ret_gid = it->gid;
                *ret_as_of = it->as_of;
                *ret_rs = (struct refresh_schedule){ .at = it->refresh_at, .n_at = it->n_refresh_at,
                                                     .every_ms = it->refresh_every_ms,
                                                     .aligned_to = it->refresh_aligned_to };
                return 0;
        }
        return -ENOENT;
}

void lc_enact_set_gate(struct lc_enact *e, bool (*gate)(void *arg), void *arg)
{
        e->gate = gate;
        e->gate_arg = arg;
}

static void send(struct lc_enact *e, Coord__MsgType type, const ProtobufCMessage *m, size_t n)
{
        int r = node_send(e->node, COORD__ROLE__ROLE_CONTROLLER, type, e->next_request_id++, m);

        if (r < 0)
                log_warn_errno(r, "enact_send_failed", "type=%d objects=%zu", (int)type, n);
        else
                e->sent++;
}

/* What send_creates() sends: the tables, the dataflows, or both; complete: these
 * are all (of the part's kind), in parts (part, more) for the dataflows (5). */
struct send_what {
        bool tables, dataflows, complete, more;
        uint32_t part;
};

/* Send tables (EnsureCollections) and views/indexes (CreateDataflows) for the given
 * items. */
static void send_creates(struct lc_enact *e, struct lc_enact_item **v, size_t n, struct send_what w)
{
        Coord__EnsureCollections ens = COORD__ENSURE_COLLECTIONS__INIT;
        Coord__CreateDataflows cdf = COORD__CREATE_DATAFLOWS__INIT;
        Coord__CollectionSpec *cs = calloc(n ? n : 1, sizeof(*cs));
        Coord__CollectionSpec **csp = calloc(n ? n : 1, sizeof(*csp));
        Coord__DataflowSpec *ds = calloc(n ? n : 1, sizeof(*ds));
        Coord__DataflowSpec **dsp = calloc(n ? n : 1, sizeof(*dsp));
        Coord__Plan__Relation **plans = calloc(n ? n : 1, sizeof(*plans));
        Coord__DataflowSpec **sinks = calloc(n ? n : 1, sizeof(*sinks));

        if (!cs || !csp || !ds || !dsp || !plans || !sinks) {
                log_error("out_of_memory", "what=enact");
                goto out;
        }
        for (size_t i = 0; i < n; i++) {
                const struct lc_enact_item *it = v[i];

                if ((it->kind == COORD__ITEM_KIND__ITEM_TABLE) ? !w.tables : !w.dataflows)
                        continue;
                if (it->kind == COORD__ITEM_KIND__ITEM_TABLE) {
                        Coord__CollectionSpec *c = &cs[ens.n_collections];
                        coord__collection_spec__init(c);
                        c->gid = it->gid;
                        c->kind = COORD__COLLECTION_KIND__COLLECTION_TABLE;
                        c->since = it->created_at;      /* birth */
                        csp[ens.n_collections++] = c;
                        continue;
                }
                if (it->kind == COORD__ITEM_KIND__ITEM_SOURCE) {
                        Coord__DataflowSpec *d = &ds[cdf.n_dataflows];
                        coord__dataflow_spec__init(d);
                        d->gid = it->gid;
                        d->kind = COORD__DATAFLOW_KIND__DATAFLOW_SOURCE;
                        d->column_types = it->types;
                        d->n_column_types = it->n_types;
                        d->as_of = it->created_at;
                        d->progress_id = it->progress_id;
                        d->source_type = it->source_type;
                        d->source_format = it->source_format;
                        if (it->sink_path)
                                d->source_path = it->sink_path;
                        d->source_tick_ms = it->source_tick_ms;
                        d->source_up_to = it->source_up_to;
                        dsp[cdf.n_dataflows++] = d;
                        continue;
                }
                plans[i] = coord__plan__relation__unpack(NULL, it->plan_len, it->plan);
                if (!plans[i]) {
                        log_error("item_plan_undecodable", "gid=%llu", (unsigned long long)it->gid);
                        continue;
                }
                {
                        Coord__DataflowSpec *d = &ds[cdf.n_dataflows];
                        coord__dataflow_spec__init(d);
                        d->gid = it->gid;
                        d->kind = it->kind == COORD__ITEM_KIND__ITEM_INDEX
                                          ? COORD__DATAFLOW_KIND__DATAFLOW_INDEX
                                  : it->kind == COORD__ITEM_KIND__ITEM_SINK
                                          ? COORD__DATAFLOW_KIND__DATAFLOW_SINK
                                          : COORD__DATAFLOW_KIND__DATAFLOW_MATERIALIZED_VIEW;
                        d->plan = plans[i];
                        d->column_types = it->types;
                        d->n_column_types = it->n_types;
                        d->as_of = it->as_of;
                        d->on_id = it->on_id;
                        d->keys = it->keys;
                        d->n_keys = it->n_keys;
                        d->refresh = it->refresh;
                        d->refresh_leased = it->refresh;        /* lifecycle-refresh.c note 8 */
                        d->refresh_at = it->refresh_at;
                        d->n_refresh_at = it->n_refresh_at;
                        d->refresh_every_ms = it->refresh_every_ms;
                        d->refresh_aligned_to = it->refresh_aligned_to;
                        if (it->sink_path)
                                d->sink_path = it->sink_path;
                        d->sink_snapshot = it->sink_snapshot;
                        dsp[cdf.n_dataflows++] = d;
                }
        }
        /* Collections first: dataflows read them. */
        if (w.tables && (ens.n_collections || w.complete)) {
                ens.collections = csp;
                ens.complete = w.complete;
                ens.more = w.more;
                ens.part = w.part;
                send(e, COORD__MSG_TYPE__MSG_ENSURE_COLLECTIONS, &ens.base, ens.n_collections);
        }
        /* Sinks last, in order: an altered sink (ALTER SINK ... SET FROM) may read a
         * dataflow with a larger GlobalId, installed first so; nothing reads a sink. */
        {
                size_t k = 0, m = 0;

                for (size_t q = 0; q < cdf.n_dataflows; q++) {
                        if (dsp[q]->kind == COORD__DATAFLOW_KIND__DATAFLOW_SINK)
                                sinks[m++] = dsp[q];
                        else
                                dsp[k++] = dsp[q];
                }
                memcpy(&dsp[k], sinks, m * sizeof(*sinks));
        }
        if (w.dataflows && (cdf.n_dataflows || w.complete)) {
                cdf.dataflows = dsp;
                cdf.complete = w.complete;
                cdf.more = w.more;
                cdf.part = w.part;
                send(e, COORD__MSG_TYPE__MSG_CREATE_DATAFLOWS, &cdf.base, cdf.n_dataflows);
        }
out:
        for (size_t i = 0; plans && i < n; i++)
                if (plans[i])
                        coord__plan__relation__free_unpacked(plans[i], NULL);
        free(cs);
        free(csp);
        free(ds);
        free(dsp);
        free(plans);
        free(sinks);
}

void lc_enact_flush(struct lc_enact *e)
{
        if (e->resync)
                return;         /* (5) after its last part */
        if (!controller_up(e)) {
                /* The resync at (re)connection or when the gate opens sends everything. */
                e->n_creates = e->n_drops = 0;
                return;
        }
        if (e->n_creates) {
                struct lc_enact_item **v = calloc(e->n_creates, sizeof(*v));
                size_t k = 0;

                if (!v) {
                        log_error("out_of_memory", "what=enact");
                        return;
                }
                for (size_t i = 0; i < e->n_creates; i++) {
                        struct lc_enact_item *it = item_find(e, e->creates[i]);
                        if (it)
                                v[k++] = it;    /* dropped again since: nothing to create */
                }
                send_creates(e, v, k, (struct send_what){ .tables = true, .dataflows = true });
                free(v);
                e->n_creates = 0;
        }
        if (e->n_drops) {
                Coord__DropCollections m = COORD__DROP_COLLECTIONS__INIT;

                m.gids = e->drops;
                m.n_gids = e->n_drops;
                send(e, COORD__MSG_TYPE__MSG_DROP_COLLECTIONS, &m.base, e->n_drops);
                log_debug("enacted_drops", "count=%zu", e->n_drops);
                e->n_drops = 0;
        }
}

#define RESYNC_PART_BYTES (12u << 20)   /* (5) about this much of specs a part (a frame: 16 MB) */
#define RESYNC_QUEUED_MAX (8u << 20)    /* (5) the next part waits while more is queued */
#define RESYNC_TABLES_PER_ITEM 2u        /* (5) tables a part of the Ensure: 2 x part_items
                                         * (200,000 by default, ~18 bytes each) */
#define RESYNC_WAIT_NS    (2u * 1000000u)

/* (5) What an item's spec takes in a message, about. */
static size_t spec_bytes(const struct lc_enact_item *it)
{
        return 64 + it->plan_len + 4 * (it->n_types + it->n_keys) + 8 * it->n_refresh_at +
               (it->sink_path ? strlen(it->sink_path) : 0);
}

static void resync_end(struct lc_enact *e, bool done)
{
        e->resync = false;
        if (!done) {
                log_info("enact_resync_abandoned", "parts=%u objects=%zu", e->resync_part, e->resync_sent);
                e->n_creates = e->n_drops = 0;  /* the next resync sends them */
                return;
        }
        log_info("enact_resync", "objects=%zu parts=%u took_us=%llu", e->resync_sent, e->resync_part,
                 (unsigned long long)((now_ns() - e->resync_start_ns) / 1000));
        lc_enact_flush(e);      /* what came meanwhile */
        if (e->resync_done)
                e->resync_done(e->resync_done_arg);
}

static void resync_step(struct lc_enact *e);

static void on_resync_timer(struct loop *l, void *userdata)
{
        struct lc_enact *e = userdata;

        (void)l;
        e->resync_timer = NULL;
        resync_step(e);
}

/* (5) Every table, in parts of RESYNC_TABLES_PER_ITEM x part_items (Ensure, complete),
 * in the resync's first turn. */
static int resync_tables(struct lc_enact *e)
{
        size_t nt = 0, per = RESYNC_TABLES_PER_ITEM * e->part_items;
        struct lc_enact_item **t;

        for (size_t i = 0; i < e->n; i++)
                nt += e->items[i]->kind == COORD__ITEM_KIND__ITEM_TABLE;
        t = calloc(nt ? nt : 1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        nt = 0;
        for (size_t i = 0; i < e->n; i++)
                if (e->items[i]->kind == COORD__ITEM_KIND__ITEM_TABLE)
                        t[nt++] = e->items[i];
        for (size_t j = 0, p = 0; j == 0 || j < nt; j += per, p++) {
                size_t m = nt - j < per ? nt - j : per;

                send_creates(e, t + j, m, (struct send_what){ .tables = true, .complete = true,
                                                              .part = (uint32_t)p, .more = j + m < nt });
        }
        free(t);
        return 0;
}

/* (5) Send the next part; arm the turn after it, or end. */
static void resync_step(struct lc_enact *e)
{
        struct lc_enact_item **v;
        size_t i, k = 0, bytes = 0;
        uint64_t wait_ns = 1000;
        bool more = true;

        if (!controller_up(e)) {
                resync_end(e, false);
                return;
        }
        if (!e->resync_tables_sent) {
                if (resync_tables(e) < 0) {
                        log_error("out_of_memory", "what=enact_resync");
                        resync_end(e, false);
                        return;
                }
                e->resync_tables_sent = true;
        }
        if (node_peer_pending(e->node, COORD__ROLE__ROLE_CONTROLLER) > RESYNC_QUEUED_MAX) {
                wait_ns = RESYNC_WAIT_NS;       /* the controller reads what is queued first */
                goto next;
        }
        v = calloc(e->part_items, sizeof(*v));
        if (!v) {
                log_error("out_of_memory", "what=enact_resync");
                resync_end(e, false);
                return;
        }
        i = lower_bound(e, e->resync_next);
        while (k < e->part_items && bytes < RESYNC_PART_BYTES) {
                struct lc_enact_item *it;

                if (i >= e->n) {
                        if (e->resync_sinks) {
                                more = false;
                                break;
                        }
                        e->resync_sinks = true;
                        e->resync_next = 0;
                        i = 0;
                        continue;
                }
                it = e->items[i++];
                e->resync_next = it->gid + 1;
                if (it->kind == COORD__ITEM_KIND__ITEM_TABLE ||
                    (it->kind == COORD__ITEM_KIND__ITEM_SINK) != e->resync_sinks)
                        continue;
                v[k++] = it;
                bytes += spec_bytes(it);
        }
        if (more && e->resync_sinks && i >= e->n)
                more = false;
        send_creates(e, v, k, (struct send_what){ .dataflows = true, .complete = true, .more = more,
                                                  .part = e->resync_part });
        free(v);
        e->resync_part++;
        e->resync_sent += k;
        if (!more) {
                resync_end(e, true);
                return;
        }
next:
        if (loop_timer_add(node_loop(e->node), wait_ns, on_resync_timer, e, &e->resync_timer) < 0) {
                e->resync_timer = NULL;
                resync_end(e, false);
        }
}

void lc_enact_resync(struct lc_enact *e)
{
        if (!controller_up(e))
                return;
        if (e->resync_timer) {
                loop_timer_cancel(node_loop(e->node), e->resync_timer);
                e->resync_timer = NULL;
        }
        e->n_creates = e->n_drops = 0;
        e->resync = true;
        e->resync_sinks = false;
        e->resync_next = 0;
        e->resync_part = 0;
        e->resync_tables_sent = false;
        e->resync_sent = 0;
        e->resync_start_ns = now_ns();
        resync_step(e);
}

void lc_enact_set_resync_done(struct lc_enact *e, void (*done)(void *arg), void *arg)
{
        e->resync_done = done;
        e->resync_done_arg = arg;
}

void lc_enact_set_part_items(struct lc_enact *e, size_t n)
{
        e->part_items = n ? n : 1;
}

bool lc_enact_reply(struct lc_enact *e, const Coord__Envelope *env)
{
        if (env->request_id < (1ull << 62))
                return false;
        if (env->type == COORD__MSG_TYPE__MSG_ERROR) {
                Coord__Error *err = coord__error__unpack(NULL, env->payload.len, env->payload.data);
                e->errors++;
                log_error("enact_failed", "request_id=%llu sqlstate=%s message=\"%s\"",
                          (unsigned long long)env->request_id, err ? err->sqlstate : "?",
                          err ? err->message : "?");
                if (err)
                        coord__error__free_unpacked(err, NULL);
        }
        return true;
}
