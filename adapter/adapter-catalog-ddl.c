/* adapter-catalog-ddl.c -- the DDL transactions of the catalog writer's items: CREATE
 * (of an item, a table, a source and its progress), DROP, ALTER ... SET (RETAIN
 * HISTORY), a publication's protection, each validated and built as catalog ops, then
 * applied to memory when its commit is done (acat_txn_finish()); and acat_export().
 *
 * What the catalog writer's files share is adapter-catalog-internal.h; the other notes
 * are adapter-catalog.c note 2 and adapter-catalog-open.c note 4.
 *
 * NOTES ON THE DESIGN
 * (1) Memory follows the disk: a DDL is validated on a copy of what would change,
 *     committed, and applied to memory only after catalog_commit() returned 0.
 * (3) next_gid is committed with the item that takes it, so a GlobalId is never reused,
 *     even after the item is dropped or the adapter restarts.
 */
#include "adapter-catalog-internal.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "catalog.pb-c.h"
#include "coord.pb-c.h"
#include "probes.h"
#include "refresh.h"
#include "util.h"

/* ---- DDL ---- */

void txn_free(struct acat_txn *t)
{
        if (!t)
                return;
        for (size_t i = 0; i < t->n_ops; i++)
                free(t->bufs[i]);
        free(t->bufs);
        free(t->items);
        free(t->ops);
        free(t->bch);
        free(t->rch);
        item_free(t->sink_def);
        free(t->sink_old);
        free(t);
}

/* Append an op, copying key and value. */
int txn_op(struct acat_txn *t, enum catalog_op_kind kind, enum catalog_cf cf, const void *key,
                  size_t klen, const void *val, size_t vlen)
{
        uint8_t *buf;
        int r;

        r = GROW_ARRAY(t->ops, t->cap_ops, t->n_ops + 1);
        if (r == 0)
                r = GROW_ARRAY(t->bufs, t->cap_bufs, t->n_ops + 1);
        if (r < 0)
                return r;
        buf = malloc(klen + vlen + 1);
        if (!buf)
                return -ENOMEM;
        memcpy(buf, key, klen);
        if (vlen)
                memcpy(buf + klen, val, vlen);
        t->bufs[t->n_ops] = buf;
        t->ops[t->n_ops++] = (struct catalog_op){ kind, cf, buf, klen, vlen || kind == CATALOG_OP_PUT ? buf + klen : NULL, vlen };
        return 0;
}

static int txn_put_bound(struct acat_txn *t, uint64_t gid, uint64_t bound)
{
        Coord__CatalogBound b = COORD__CATALOG_BOUND__INIT;
        uint8_t key[9], val[32];
        size_t len;

        b.gid = gid;
        b.bound = bound;
        len = coord__catalog_bound__pack(&b, val);
        key_put(key, KEY_BOUND, gid);
        return txn_op(t, CATALOG_OP_PUT, CATALOG_CF_STATE, key, 9, val, len);
}

void req_key(uint8_t key[17], uint64_t consumer, uint64_t input)
{
        key[0] = KEY_REQ;
        be64_put(key + 1, consumer);
        be64_put(key + 9, input);
}

int txn_put_req(struct acat_txn *t, uint64_t consumer, uint64_t input, uint64_t frontier)
{
        Coord__CatalogRequirement q = COORD__CATALOG_REQUIREMENT__INIT;
        uint8_t key[17], val[48];
        size_t len;

        q.consumer = consumer;
        q.input = input;
        q.frontier = frontier;
        len = coord__catalog_requirement__pack(&q, val);
        req_key(key, consumer, input);
        return txn_op(t, CATALOG_OP_PUT, CATALOG_CF_STATE, key, 17, val, len);
}

static int txn_bch(struct acat_txn *t, const struct acat_bound_change *c)
{
        int r = GROW_ARRAY(t->bch, t->cap_bch, t->n_bch + 1);

        if (r < 0)
                return r;
        t->bch[t->n_bch++] = *c;
        return 0;
}

int txn_rch(struct acat_txn *t, const struct acat_req_change *c)
{
        int r = GROW_ARRAY(t->rch, t->cap_rch, t->n_rch + 1);

        if (r < 0)
                return r;
        t->rch[t->n_rch++] = *c;
        return 0;
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

bool acat_txn_after_publication(const struct acat_txn *t)
{
        return t->after_publication;
}

size_t acat_txn_bound_changes(const struct acat_txn *t, const struct acat_bound_change **ret)
{
        *ret = t->bch;
        return t->n_bch;
}

size_t acat_txn_req_changes(const struct acat_txn *t, const struct acat_req_change **ret)
{
        *ret = t->rch;
        return t->n_rch;
}

uint64_t acat_next_gid(const struct adapter_catalog *ac)
{
        return ac->next_gid;
}

static uint64_t effective_bound(const struct acat_item *it)
{
        uint64_t b = it->has_bound ? it->bound : 0;

        return it->pending_bound > b ? it->pending_bound : b;
}

uint64_t acat_max_bound(const struct adapter_catalog *ac, const uint64_t *gids, size_t n)
{
        uint64_t m = 0;

        for (size_t i = 0; i < n; i++) {
                const struct acat_item *it = acat_by_gid(ac, gids[i]);
                if (it && effective_bound(it) > m)
                        m = effective_bound(it);
        }
        return m;
}

static bool kind_has_bound(enum sql_object_kind k)
{
        /* Storage collections get a birth bound; a view has no data, and an index's bound
         * appears at its first publication (issue 5). */
        return k == SQL_OBJECT_TABLE || k == SQL_OBJECT_MATERIALIZED_VIEW || k == SQL_OBJECT_SOURCE;
}

/* A pending creation of t (NULL if none). */
static struct acat_item *txn_created(const struct acat_txn *t, uint64_t gid)
{
        for (size_t i = 0; t && t->kind == TXN_CREATE && i < t->n_items; i++)
                if (t->items[i]->gid == gid)
                        return t->items[i];
        return NULL;
}

/* Whether one of `before` creates gid. */
static bool created_before(uint64_t gid, struct acat_txn *const *before, size_t n_before)
{
        for (size_t i = 0; i < n_before; i++)
                if (txn_created(before[i], gid))
                        return true;
        return false;
}

struct acat_item *item_or_before(const struct adapter_catalog *ac, uint64_t gid,
                                        struct acat_txn *const *before, size_t n_before)
{
        struct acat_item *it = (struct acat_item *)acat_by_gid(ac, gid);

        for (size_t i = 0; !it && i < n_before; i++)
                it = txn_created(before[i], gid);
        return it;
}

static int create_into(struct adapter_catalog *ac, const struct acat_new_item *ni, uint64_t ts,
                       struct acat_txn *const *before, size_t n_before, struct acat_txn *t,
                       struct row_error *err);

int acat_create_begin(struct adapter_catalog *ac, const struct acat_new_item *ni, uint64_t ts,
                      struct acat_txn **ret, struct row_error *err)
{
        return acat_create_begin_after(ac, ni, ts, NULL, 0, ret, err);
}

static struct acat_txn *create_txn_new(void)
{
        struct acat_txn *t = calloc(1, sizeof(*t));

        if (t) {
                t->kind = TXN_CREATE;
                t->create = true;
        }
        return t;
}

int acat_create_begin_after(struct adapter_catalog *ac, const struct acat_new_item *ni, uint64_t ts,
                            struct acat_txn *const *before, size_t n_before,
                            struct acat_txn **ret, struct row_error *err)
{
        struct acat_txn *t = create_txn_new();
        int r;

        if (!t)
                return -ENOMEM;
        r = create_into(ac, ni, ts, before, n_before, t, err);
        if (r < 0) {
                txn_free(t);
                return r;
        }
        *ret = t;
        return 0;
}

int acat_create_source_begin(struct adapter_catalog *ac, const struct acat_new_item *source,
                             const struct acat_new_item *progress, uint64_t ts,
                             struct acat_txn *const *before, size_t n_before,
                             struct acat_txn **ret, struct row_error *err)
{
        _cleanup_free_ struct acat_txn **all = calloc(n_before + 1, sizeof(*all));
        struct acat_txn *t = create_txn_new();
        struct acat_new_item ni = *source, np = *progress;
        uint64_t pgid;
        int r;

        if (!t || !all) {
                txn_free(t);
                return -ENOMEM;
        }
        assert(source->kind == SQL_OBJECT_SOURCE);
        /* The progress first: the source requires it (I4) in the same transaction, and
         * takes the next GlobalId (create_into() takes them in order). */
        np.progress_of = ac->next_gid + 1;
        r = create_into(ac, &np, ts, before, n_before, t, err);
        if (r < 0) {
                txn_free(t);
                return r;
        }
        pgid = t->items[0]->gid;
        ni.logical_inputs = &pgid;
        ni.n_logical = 1;
        for (size_t i = 0; i < n_before; i++)
                all[i] = before[i];
        all[n_before] = t;
        r = create_into(ac, &ni, ts, all, n_before + 1, t, err);
        if (r < 0) {
                acat_txn_finish(ac, t, r);      /* gives the progress's name back */
                return r;
        }
        assert(t->items[1]->gid == t->items[0]->progress_of);
        *ret = t;
        return 0;
}

/* Validate the creation of ni on the final state (pending creations hold their names
 * too) and say when it requires its inputs: at its as-of, or a refresh view's first
 * refresh. */
static int create_check(struct adapter_catalog *ac, const struct acat_new_item *ni,
                        struct acat_txn *const *before, size_t n_before, uint64_t *ret_req_at,
                        struct row_error *err)
{
        uint64_t req_at = ni->as_of;

        /* A refresh view reads its inputs first at its first refresh (DESIGN section 2):
         * that is its requirement on each, and where its own history starts. */
        if (ni->refresh) {
                struct refresh_schedule rs = { .at = ni->refresh_at, .n_at = ni->n_refresh_at,
                                               .every_ms = ni->refresh_every_ms,
                                               .aligned_to = ni->refresh_aligned_to };

                assert(ni->kind == SQL_OBJECT_MATERIALIZED_VIEW);
                req_at = refresh_next(&rs, ni->as_of);
                if (req_at == REFRESH_NONE)
                        return row_error_set(err, -EINVAL, "22023",
                                             "materialized view \"%s\" would never be refreshed: "
                                             "no refresh time at or after its as-of %llu",
                                             ni->name, (unsigned long long)ni->as_of);
        }
        if (acat_by_name(ac, ni->name))
                return row_error_set(err, -EINVAL, "42P07", "%s \"%s\" already exists",
                                     ni->kind == SQL_OBJECT_INDEX ? "relation" : "relation", ni->name);
        for (size_t i = 0; i < ni->n_refs; i++) {
                /* pending only when it is one of `before`: committed first, in the
                 * same write */
                const struct acat_item *ref = item_or_before(ac, ni->refs[i], before, n_before);
                if (!ref)
                        return row_error_set(err, -EINVAL, "42P01", "object %llu does not exist",
                                             (unsigned long long)ni->refs[i]);
                if (ref->dropping)
                        return row_error_set(err, -EINVAL, "55006",
                                             "\"%s\" is being dropped by another session", ref->name);
        }
        *ret_req_at = req_at;
        return 0;
}

/* I4, admission: a consumer (materialized view, index) reads every logical input from
 * its as-of, so each one's committed bound -- and any bound a publication in flight is
 * committing -- must be at or below it.  By committed permission, not by physical
 * compaction, which may lag. */
static int create_admit(struct adapter_catalog *ac, const struct acat_new_item *ni,
                        struct acat_txn *const *before, size_t n_before, struct row_error *err)
{
        for (size_t i = 0; i < ni->n_logical; i++) {
                /* An input created by `before` (a source's progress in the same
                 * transaction; a run's or a block's earlier CREATE, adapter-exec.c notes 7
                 * and 10) commits first, in the same write: its bound is its birth, and
                 * the follower enacts it before this (in catalog order). */
                const struct acat_item *in = item_or_before(ac, ni->logical_inputs[i], before, n_before);
                uint64_t b;

                if (!in || (in->pending && !created_before(ni->logical_inputs[i], before, n_before)))
                        return row_error_set(err, -EINVAL, "42P01", "input %llu does not exist",
                                             (unsigned long long)ni->logical_inputs[i]);
                b = effective_bound(in);
                if (ni->as_of < b) {
                        COORD_ADMISSION_REFUSE(ni->as_of, b);
                        row_error_set(err, -EINVAL, "55000",
                                      "cannot create %s \"%s\" as of %llu: input \"%s\" has bound %llu",
                                      acat_kind_name(ni->kind), ni->name,
                                      (unsigned long long)ni->as_of, in->name,
                                      (unsigned long long)b);
                        row_error_detail(err, "The history of \"%s\" before %llu may be compacted "
                                         "already; the as-of requested was %llu.", in->name,
                                         (unsigned long long)b, (unsigned long long)ni->as_of);
                        row_error_hint(err, "Create it as of %llu or later.", (unsigned long long)b);
                        return -EINVAL;
                }
        }
        return 0;
}

/* Copy ni's columns into it (which owns them, also on failure). */
static int item_copy_columns(struct acat_item *it, const struct acat_new_item *ni)
{
        it->columns = calloc(ni->n_columns ? ni->n_columns : 1, sizeof(*it->columns));
        if (!it->columns)
                return -ENOMEM;
        for (size_t i = 0; i < ni->n_columns; i++) {
                it->columns[i] = ni->columns[i];
                it->columns[i].name = strdup(ni->columns[i].name);
                it->columns[i].default_row = NULL;
                if (ni->columns[i].default_row &&
                    (it->columns[i].default_row = malloc(ni->columns[i].default_len)))
                        memcpy(it->columns[i].default_row, ni->columns[i].default_row, ni->columns[i].default_len);
                it->n_columns++;
                if (!it->columns[i].name || (ni->columns[i].default_row && !it->columns[i].default_row))
                        return -ENOMEM;
        }
        return 0;
}

/* The item ni describes, as GlobalId gid, created at ts. */
static int item_from_new(const struct acat_new_item *ni, uint64_t gid, uint64_t ts,
                         struct acat_item **ret)
{
        struct acat_item *it = calloc(1, sizeof(*it));
        int r;

        if (!it)
                return -ENOMEM;
        it->gid = gid;
        it->kind = ni->kind;
        it->created_at = ts;
        it->pending = true;
        it->name = strdup(ni->name);
        it->create_sql = strdup(ni->create_sql ? ni->create_sql : "");
        if (!it->name || !it->create_sql) {
                r = -ENOMEM;
                goto fail;
        }
        r = item_copy_columns(it, ni);
        if (r < 0)
                goto fail;
        r = item_set_plan(it, ni->plan, ni->logical_inputs, ni->n_logical, ni->physical_inputs,
                          ni->n_physical, ni->refs, ni->n_refs, ni->keys, ni->n_keys);
        if (r < 0)
                goto fail;
        it->on_id = ni->on_id;
        it->as_of = ni->as_of;
        it->retain_history_ms = ni->retain_history_ms;
        it->nondeterministic = ni->nondeterministic;
        if (checks_dup(ni->checks, ni->n_checks, &it->checks) < 0) {
                r = -ENOMEM;
                goto fail;
        }
        it->n_checks = ni->n_checks;
        if (uniques_dup(ni->uniques, ni->n_uniques, &it->uniques) < 0) {
                r = -ENOMEM;
                goto fail;
        }
        it->n_uniques = ni->n_uniques;
        if (fkeys_dup(ni->fkeys, ni->n_fkeys, &it->fkeys) < 0) {
                r = -ENOMEM;
                goto fail;
        }
        it->n_fkeys = ni->n_fkeys;
        it->refresh = ni->refresh;
        it->refresh_every_ms = ni->refresh_every_ms;
        it->refresh_aligned_to = ni->refresh_aligned_to;
        it->sink_snapshot = ni->sink_snapshot;
        it->progress_of = ni->progress_of;
        it->source_type = ni->source_type;
        it->source_format = ni->source_format;
        it->source_tick_ms = ni->source_tick_ms;
        it->source_up_to = ni->source_up_to;
        if ((ni->source_path && !(it->source_path = strdup(ni->source_path))) ||
            (ni->sink_path && !(it->sink_path = strdup(ni->sink_path)))) {
                r = -ENOMEM;
                goto fail;
        }
        if (ni->n_refresh_at) {
                it->refresh_at = u64_dup(ni->refresh_at, ni->n_refresh_at);
                if (!it->refresh_at) {
                        r = -ENOMEM;
                        goto fail;
                }
                it->n_refresh_at = ni->n_refresh_at;
        }
        *ret = it;
        return 0;
fail:
        item_free(it);
        return r;
}

/* The ops that create it: the item, its birth bound (readable from its creation on, a
 * materialized view from req_at, where its history starts), its requirements on the
 * inputs, and next_gid past it. */
static int create_ops(struct acat_txn *t, struct acat_item *it, const uint64_t *req_inputs,
                      size_t n_req_inputs, uint64_t req_at, uint64_t ts)
{
        _cleanup_free_ uint8_t *ival = NULL;
        size_t ilen = 0;
        uint8_t ikey[9], next[8];
        uint64_t bound = it->kind == SQL_OBJECT_MATERIALIZED_VIEW ? req_at : ts;
        int r;

        r = item_encode(it, &ival, &ilen);
        if (r < 0)
                return r;
        key_put(ikey, KEY_ITEM, it->gid);
        be64_put(next, it->gid + 1);
        r = txn_op(t, CATALOG_OP_PUT, CATALOG_CF_STATE, ikey, 9, ival, ilen);
        if (r >= 0 && kind_has_bound(it->kind)) {
                r = txn_put_bound(t, it->gid, bound);
                if (r >= 0)
                        r = txn_bch(t, &(struct acat_bound_change){ .gid = it->gid,
                                    .has_new = true, .new_ = bound });
                it->has_bound = true;
                it->bound = bound;
        }
        /* I4: the consumer's requirements, one per logical input, at its as-of (a refresh
         * view's first refresh), in the same transaction as the item and its birth bound. */
        for (size_t i = 0; r >= 0 && i < n_req_inputs; i++) {
                r = req_put(it, req_inputs[i], req_at);
                if (r >= 0)
                        r = txn_put_req(t, it->gid, req_inputs[i], req_at);
                if (r >= 0)
                        r = txn_rch(t, &(struct acat_req_change){ .consumer = it->gid,
                                    .input = req_inputs[i], .has_new = true, .new_ = req_at });
        }
        if (r >= 0)
                r = txn_op(t, CATALOG_OP_PUT, CATALOG_CF_META, META_NEXT_GID,
                           strlen(META_NEXT_GID), next, 8);
        return r;
}

/* Add the creation of ni to t: its item (pending), birth bound, requirements.  On
 * failure t is as it was but for ops it may hold (the caller frees it). */
static int create_into(struct adapter_catalog *ac, const struct acat_new_item *ni, uint64_t ts,
                       struct acat_txn *const *before, size_t n_before, struct acat_txn *t,
                       struct row_error *err)
{
        struct acat_item *it = NULL;
        bool linked = false;
        bool consumer = ni->kind == SQL_OBJECT_MATERIALIZED_VIEW || ni->kind == SQL_OBJECT_INDEX ||
                        ni->kind == SQL_OBJECT_SINK || (ni->kind == SQL_OBJECT_SOURCE && ni->n_logical);
        uint64_t req_at = ni->as_of;
        int r;

        r = create_check(ac, ni, before, n_before, &req_at, err);
        if (r >= 0 && consumer)
                r = create_admit(ac, ni, before, n_before, err);
        if (r < 0)
                return r;
        r = item_from_new(ni, ac->next_gid, ts, &it);
        if (r < 0)
                return r;
        if (GROW_ARRAY(t->items, t->cap_items, t->n_items + 1) < 0) {
                r = -ENOMEM;
                goto fail;
        }
        r = create_ops(t, it, consumer ? ni->logical_inputs : NULL, consumer ? ni->n_logical : 0,
                       req_at, ts);
        if (r < 0)
                goto fail;
        r = deps_link(ac, it, NULL, before, n_before);
        linked = true;
        for (size_t i = 0; r >= 0 && i < it->n_reqs; i++)
                r = req_consumer_add(item_or_before(ac, it->reqs[i].input, before, n_before), it);
        if (r < 0)
                goto fail;
        r = names_add(ac, it);
        if (r < 0)
                goto fail;
        /* (3) the GlobalId is taken now, whatever happens to the commit. */
        ac->next_gid = it->gid + 1;
        t->items[t->n_items++] = it;
        return 0;
fail:
        if (linked)
                deps_unlink(ac, it);
        item_free(it);
        return r;
}

int acat_create_table_begin(struct adapter_catalog *ac, const struct sql_create_table *ct,
                            const char *create_sql, uint64_t ts, struct acat_txn **ret,
                            struct row_error *err)
{
        struct acat_new_item ni = {
                .name = ct->name, .kind = SQL_OBJECT_TABLE, .create_sql = create_sql,
                .columns = ct->columns, .n_columns = ct->n_columns,
                .checks = ct->checks, .n_checks = ct->n_checks,
                .uniques = ct->uniques, .n_uniques = ct->n_uniques,
                .fkeys = ct->fkeys, .n_fkeys = ct->n_fkeys,
        };
        _cleanup_free_ uint64_t *refs = NULL;

        /* The tables its foreign keys reference are its refs: create_check() finds them
         * there and not being dropped, and DROP of one then needs this table gone
         * first (walk_visit()). */
        if (ct->n_fkeys) {
                refs = calloc(ct->n_fkeys, sizeof(*refs));
                if (!refs)
                        return -ENOMEM;
                for (size_t i = 0; i < ct->n_fkeys; i++)
                        if (!u64_has(refs, ni.n_refs, ct->fkeys[i].ref_id))
                                refs[ni.n_refs++] = ct->fkeys[i].ref_id;
                ni.refs = refs;
        }
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
        if (it->dropping || it->altering)
                return row_error_set(w->err, -EINVAL, "55006",
                                     "%s \"%s\" is being %s by another session",
                                     acat_kind_name(it->kind), it->name,
                                     it->dropping ? "dropped" : "altered");
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
                /* A table depends on the tables its foreign keys reference: PostgreSQL's
                 * CASCADE drops the constraint, not the table, which Coord cannot do
                 * (no ALTER TABLE); the table itself is dropped only when named. */
                if (d->kind == SQL_OBJECT_TABLE && !walk_is_root(w, d->gid)) {
                        const char *con = "?";

                        for (size_t k = 0; k < d->n_fkeys; k++)
                                if (d->fkeys[k].ref_id == it->gid) {
                                        con = d->fkeys[k].name;
                                        break;
                                }
                        if (w->cascade) {
                                row_error_set(w->err, -EINVAL, "0A000", "DROP ... CASCADE of %s %s "
                                              "would drop constraint %s on table %s, and dropping a "
                                              "constraint is not supported", acat_kind_name(it->kind),
                                              it->name, con, d->name);
                                snprintf(w->err->hint, sizeof(w->err->hint),
                                         "Drop table %s first, or drop both together.", d->name);
                                return -EINVAL;
                        }
                        row_error_set(w->err, -EINVAL, "2BP01",
                                      "cannot drop %s %s because other objects depend on it",
                                      acat_kind_name(it->kind), it->name);
                        snprintf(w->err->detail, sizeof(w->err->detail),
                                 "constraint %s on table %s depends on %s %s", con, d->name,
                                 acat_kind_name(it->kind), it->name);
                        snprintf(w->err->hint, sizeof(w->err->hint),
                                 "Use DROP ... CASCADE to drop the dependent objects too.");
                        return -EINVAL;
                }
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
        /* A source's progress is its own: it goes with it, never alone. */
        if (it->progress_of && !walk_has(w, it->progress_of) && !walk_is_root(w, it->progress_of)) {
                const struct acat_item *src = acat_by_gid(w->ac, it->progress_of);

                row_error_set(w->err, -EINVAL, "2BP01", "cannot drop %s %s: it is the progress of source %s",
                              acat_kind_name(it->kind), it->name, src ? src->name : "?");
                snprintf(w->err->hint, sizeof(w->err->hint), "Drop the source instead.");
                return -EINVAL;
        }
        if (GROW_ARRAY(w->out, w->cap, w->n + 1) < 0)
                return -ENOMEM;
        w->out[w->n++] = it;
        if (it->kind == SQL_OBJECT_SOURCE && it->n_logical == 1) {
                struct acat_item *p = (struct acat_item *)acat_by_gid(w->ac, it->logical_inputs[0]);

                if (p && p->progress_of == it->gid && !walk_has(w, p->gid))
                        return walk_visit(w, p, depth + 1);
        }
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
        t->kind = TXN_DROP;
        t->items = w.out;
        w.out = NULL;
        t->n_items = n;
        for (size_t i = 0; i < n; i++) {
                struct acat_item *it = t->items[i];
                uint8_t ikey[9], bkey[9], rkey[17];

                key_put(ikey, KEY_ITEM, it->gid);
                r = txn_op(t, CATALOG_OP_DELETE, CATALOG_CF_STATE, ikey, 9, NULL, 0);
                /* A publication in flight (its values pending) commits first: the
                 * transaction is ordered after it (acat_txn_after_publication()), so
                 * what it retracts is what that publication will have written. */
                if (it->pending_bound)
                        t->after_publication = true;
                if (r >= 0 && (it->has_bound || it->pending_bound)) {
                        key_put(bkey, KEY_BOUND, it->gid);
                        r = txn_op(t, CATALOG_OP_DELETE, CATALOG_CF_STATE, bkey, 9, NULL, 0);
                        if (r >= 0)
                                r = txn_bch(t, &(struct acat_bound_change){ .gid = it->gid,
                                            .had_old = true, .old = effective_bound(it) });
                }
                /* Retirement: its requirements go in the same transaction. */
                for (size_t k = 0; r >= 0 && k < it->n_reqs; k++) {
                        const struct acat_req *q = &it->reqs[k];

                        if (q->pending)
                                t->after_publication = true;
                        req_key(rkey, it->gid, q->input);
                        r = txn_op(t, CATALOG_OP_DELETE, CATALOG_CF_STATE, rkey, 17, NULL, 0);
                        if (r >= 0)
                                r = txn_rch(t, &(struct acat_req_change){ .consumer = it->gid,
                                            .input = q->input, .had_old = true,
                                            .old = q->pending ? q->pending : q->frontier });
                }
                if (r < 0) {
                        txn_free(t);
                        return r;
                }
        }
        /* (3) Concurrent CREATEs commit in either order within a group, so the stored
         * next_gid may lag the largest GlobalId handed out; a restart makes up for that
         * with the largest item -- unless that item is dropped.  So a DROP records the
         * next GlobalId too: a dropped GlobalId is never handed out again. */
        {
                uint8_t next[8];

                be64_put(next, ac->next_gid);
                r = txn_op(t, CATALOG_OP_PUT, CATALOG_CF_META, META_NEXT_GID, strlen(META_NEXT_GID),
                           next, 8);
                if (r < 0) {
                        txn_free(t);
                        return r;
                }
        }
        for (size_t i = 0; i < n; i++)
                t->items[i]->dropping = true;
        *ret = t;
        return 0;
fail_walk:
        free(w.out);
        return r;
}

int acat_alter_retain_begin(struct adapter_catalog *ac, uint64_t gid, uint64_t retain_ms,
                            struct acat_txn **ret, struct row_error *err)
{
        struct acat_item *it = (struct acat_item *)acat_by_gid(ac, gid);
        struct acat_txn *t;
        uint64_t old;
        uint8_t key[9], *val = NULL;
        size_t len = 0;
        int r;

        if (!it || it->builtin)
                return row_error_set(err, -EINVAL, "42P01", "object %llu does not exist",
                                     (unsigned long long)gid);
        if (it->dropping)
                return row_error_set(err, -EINVAL, "55006", "%s \"%s\" is being dropped by another session",
                                     acat_kind_name(it->kind), it->name);
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->kind = TXN_ALTER;
        t->alter_gid = gid;
        t->alter_retain_ms = retain_ms;
        /* The item as it will be: encode with the new value, then put the old back. */
        old = it->retain_history_ms;
        it->retain_history_ms = retain_ms;
        r = item_encode(it, &val, &len);
        it->retain_history_ms = old;
        key_put(key, KEY_ITEM, gid);
        if (r >= 0)
                r = txn_op(t, CATALOG_OP_PUT, CATALOG_CF_STATE, key, 9, val, len);
        free(val);
        if (r < 0) {
                txn_free(t);
                return r;
        }
        *ret = t;
        return 0;
}

static int publish_error(struct adapter_catalog *ac, struct acat_txn *t, struct row_error *err)
{
        /* undo the pending marks */
        for (size_t i = 0; i < t->n_bch; i++) {
                struct acat_item *it = (struct acat_item *)acat_by_gid(ac, t->bch[i].gid);
                if (it)
                        it->pending_bound = 0;
        }
        for (size_t i = 0; i < t->n_rch; i++) {
                struct acat_item *c = (struct acat_item *)acat_by_gid(ac, t->rch[i].consumer);
                struct acat_req *q = c ? req_find(c, t->rch[i].input) : NULL;
                if (q)
                        q->pending = 0;
        }
        txn_free(t);
        return -EINVAL;
}

int acat_publish_begin(struct adapter_catalog *ac, const struct Coord__PublishProtection *p,
                       struct acat_txn **ret, size_t *ret_n_records, struct row_error *err)
{
        struct acat_txn *t;
        int r = 0;

        if (ac->publishing)
                return row_error_set(err, -EINVAL, "55006", "a publication is already being committed");
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->kind = TXN_PUBLISH;
        /* Mark the new values (pending), checking that none goes back (I1, I3). */
        for (size_t i = 0; i < p->n_bounds; i++) {
                const Coord__CatalogBoundRecord *b = p->bounds[i];
                struct acat_item *it = (struct acat_item *)acat_by_gid(ac, b->gid);

                if (!it || it->dropping || it->kind == SQL_OBJECT_VIEW)
                        continue;       /* gone, going, or nothing to protect: skip */
                if (it->has_bound && b->bound <= it->bound) {
                        if (b->bound == it->bound)
                                continue;
                        row_error_set(err, -EINVAL, "55000", "publication rejected: the bound of %s \"%s\" "
                                      "would go back from %llu to %llu", acat_kind_name(it->kind), it->name,
                                      (unsigned long long)it->bound, (unsigned long long)b->bound);
                        return publish_error(ac, t, err);
                }
                if (it->pending_bound) {
                        row_error_set(err, -EINVAL, "XX000", "publication names %s \"%s\" twice",
                                      acat_kind_name(it->kind), it->name);
                        return publish_error(ac, t, err);
                }
                it->pending_bound = b->bound;
                r = txn_bch(t, &(struct acat_bound_change){ .gid = it->gid, .had_old = it->has_bound,
                            .old = it->bound, .has_new = true, .new_ = b->bound });
                if (r < 0)
                        goto oom;
        }
        for (size_t i = 0; i < p->n_requirements; i++) {
                const Coord__Requirement *q = p->requirements[i];
                struct acat_item *c = (struct acat_item *)acat_by_gid(ac, q->consumer);
                struct acat_req *rq = c && !c->dropping ? req_find(c, q->input) : NULL;

                if (!rq || rq->leaving || q->frontier == rq->frontier)
                        continue;
                if (q->frontier < rq->frontier) {
                        row_error_set(err, -EINVAL, "55000", "publication rejected: the requirement of "
                                      "%s \"%s\" on %llu would go back from %llu to %llu",
                                      acat_kind_name(c->kind), c->name, (unsigned long long)q->input,
                                      (unsigned long long)rq->frontier, (unsigned long long)q->frontier);
                        return publish_error(ac, t, err);
                }
                if (rq->pending) {
                        row_error_set(err, -EINVAL, "XX000", "publication names a requirement twice");
                        return publish_error(ac, t, err);
                }
                rq->pending = q->frontier;
                r = txn_rch(t, &(struct acat_req_change){ .consumer = c->gid, .input = q->input,
                            .had_old = true, .old = rq->frontier, .has_new = true, .new_ = q->frontier });
                if (r < 0)
                        goto oom;
        }
        /* I5 on the final state: every requirement on an input whose bound moves, and
         * every requirement that moves, stays at or above its input's bound.  Creations
         * in flight count (their requirements are linked from the inputs already). */
        for (size_t i = 0; i < t->n_bch; i++) {
                const struct acat_item *x = acat_by_gid(ac, t->bch[i].gid);
                uint64_t nb = t->bch[i].new_;

                for (size_t k = 0; x && k < x->n_req_consumers; k++) {
                        const struct acat_item *c = x->req_consumers[k];
                        const struct acat_req *q = req_find(c, x->gid);
                        uint64_t f;

                        if (!q)
                                continue;
                        f = q->pending ? q->pending : q->frontier;
                        if (f < nb) {
                                row_error_set(err, -EINVAL, "55000", "publication rejected: the bound %llu "
                                              "of %s \"%s\" would pass the requirement %llu of %s \"%s\"",
                                              (unsigned long long)nb, acat_kind_name(x->kind), x->name,
                                              (unsigned long long)f, acat_kind_name(c->kind), c->name);
                                return publish_error(ac, t, err);
                        }
                }
        }
        /* A client's hold counts as a requirement (adapter-hold.c note 1). */
        for (size_t i = 0; i < t->n_bch; i++) {
                const struct acat_item *x = acat_by_gid(ac, t->bch[i].gid);
                uint64_t h = acat_hold_min(ac, t->bch[i].gid);

                if (x && t->bch[i].new_ > h) {
                        row_error_set(err, -EINVAL, "55000", "publication rejected: the bound %llu of %s "
                                      "\"%s\" would pass a client's hold at %llu",
                                      (unsigned long long)t->bch[i].new_, acat_kind_name(x->kind), x->name,
                                      (unsigned long long)h);
                        return publish_error(ac, t, err);
                }
        }
        for (size_t i = 0; i < t->n_rch; i++) {
                const struct acat_item *x = acat_by_gid(ac, t->rch[i].input);
                uint64_t b;

                if (!x)
                        continue;
                b = effective_bound(x);
                if (t->rch[i].new_ < b) {
                        row_error_set(err, -EINVAL, "55000", "publication rejected: a requirement %llu on "
                                      "%s \"%s\" is below its bound %llu", (unsigned long long)t->rch[i].new_,
                                      acat_kind_name(x->kind), x->name, (unsigned long long)b);
                        return publish_error(ac, t, err);
                }
        }
        for (size_t i = 0; i < t->n_bch && r >= 0; i++)
                r = txn_put_bound(t, t->bch[i].gid, t->bch[i].new_);
        for (size_t i = 0; i < t->n_rch && r >= 0; i++)
                r = txn_put_req(t, t->rch[i].consumer, t->rch[i].input, t->rch[i].new_);
        if (r < 0)
                goto oom;
        ac->publishing = true;
        *ret_n_records = t->n_bch + t->n_rch;
        *ret = t;
        return 0;
oom:
        publish_error(ac, t, err);
        return -ENOMEM;
}

static void publish_finish(struct adapter_catalog *ac, struct acat_txn *t, int commit_result)
{
        for (size_t i = 0; i < t->n_bch; i++) {
                struct acat_item *it = (struct acat_item *)acat_by_gid(ac, t->bch[i].gid);
                if (!it)
                        continue;
                if (commit_result == 0) {
                        it->has_bound = true;
                        it->bound = t->bch[i].new_;
                }
                it->pending_bound = 0;
        }
        for (size_t i = 0; i < t->n_rch; i++) {
                struct acat_item *c = (struct acat_item *)acat_by_gid(ac, t->rch[i].consumer);
                struct acat_req *q = c ? req_find(c, t->rch[i].input) : NULL;
                if (!q)
                        continue;
                if (commit_result == 0)
                        q->frontier = t->rch[i].new_;
                q->pending = 0;
        }
        ac->publishing = false;
}

int acat_export(const struct adapter_catalog *ac, acat_record_fn fn, void *userdata)
{
        for (size_t i = 0; i < ac->n_items; i++) {
                const struct acat_item *it = ac->items[i];
                uint8_t key[17], *val = NULL, bval[32], rval[48];
                size_t len = 0;
                int r;

                /* A built-in is no catalog item, but has a committed bound (I2). */
                if (!it->builtin) {
                        key_put(key, KEY_ITEM, it->gid);
                        r = item_encode(it, &val, &len);
                        if (r < 0)
                                return r;
                        r = fn(key, 9, val, len, userdata);
                        free(val);
                        if (r < 0)
                                return r;
                }
                if (it->has_bound) {
                        Coord__CatalogBound b = COORD__CATALOG_BOUND__INIT;
                        b.gid = it->gid;
                        b.bound = it->bound;
                        len = coord__catalog_bound__pack(&b, bval);
                        key_put(key, KEY_BOUND, it->gid);
                        r = fn(key, 9, bval, len, userdata);
                        if (r < 0)
                                return r;
                }
                for (size_t k = 0; k < it->n_reqs; k++) {
                        Coord__CatalogRequirement q = COORD__CATALOG_REQUIREMENT__INIT;
                        q.consumer = it->gid;
                        q.input = it->reqs[k].input;
                        q.frontier = it->reqs[k].frontier;
                        len = coord__catalog_requirement__pack(&q, rval);
                        req_key(key, it->gid, it->reqs[k].input);
                        r = fn(key, 17, rval, len, userdata);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

void acat_txn_finish(struct adapter_catalog *ac, struct acat_txn *t, int commit_result)
{
        if (t->kind == TXN_PUBLISH) {
                publish_finish(ac, t, commit_result);
        } else if (t->kind == TXN_ALTER_SINK) {
                alter_sink_finish(ac, t, commit_result);
        } else if (t->kind == TXN_ALTER) {
                struct acat_item *it = (struct acat_item *)acat_by_gid(ac, t->alter_gid);
                if (commit_result == 0 && it)
                        it->retain_history_ms = t->alter_retain_ms;
        } else if (t->create) {
                for (size_t i = t->n_items; i-- > 0;) {
                        struct acat_item *it = t->items[i];

                        assert(it->pending);
                        if (commit_result == 0 && items_array_add(ac, it) == 0) {
                                it->pending = false;
                                if (it->kind == SQL_OBJECT_INDEX) {
                                        struct acat_item *on = (struct acat_item *)acat_by_gid(ac, it->on_id);
                                        if (on)
                                                index_refresh(ac, on);
                                }
                        } else {
                                /* Not committed (or no memory to show it: the caller
                                 * stops writing on any error here).  Give the name
                                 * back. */
                                deps_unlink(ac, it);
                                for (size_t k = 0; k < it->n_reqs; k++) {
                                        /* NULL: an input of an earlier transaction of the
                                         * same write, finished (freed) after this one */
                                        struct acat_item *in = item_or_before(ac, it->reqs[k].input, &t, 1);
                                        if (in)
                                                req_consumer_remove(in, it);
                                }
                                names_remove(ac, it);
                                item_free(it);
                        }
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
