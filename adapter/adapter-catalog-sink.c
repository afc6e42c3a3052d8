/* adapter-catalog-sink.c -- ALTER SINK ... SET FROM in the catalog writer's items: the
 * new definition validated and committed beside the old one, then swapped in (or the old
 * one kept) when the commit is done.
 *
 * What the catalog writer's files share is adapter-catalog-internal.h; the notes are in
 * adapter-catalog.c.
 */
#include "adapter-catalog-internal.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "catalog.pb-c.h"
#include "coord.pb-c.h"
#include "util.h"

/* ---- ALTER SINK ... SET FROM ---- */

#define SWAP(a, b) do { __typeof__(a) tmp_ = (a); (a) = (b); (b) = tmp_; } while (0)

/* Undo what acat_alter_sink_begin() linked: the new refs' dependents, the new
 * requirements, the marks. */
static void alter_sink_unlink(struct adapter_catalog *ac, struct acat_item *it, struct acat_txn *t)
{
        const struct acat_item *def = t->sink_def;

        for (size_t i = 0; i < def->n_refs; i++) {
                struct acat_item *ref = (struct acat_item *)acat_by_gid(ac, def->refs[i]);
                if (ref)
                        dependent_remove(ref, it->gid);
        }
        for (size_t i = 0; i < it->n_reqs; i++) {
                struct acat_item *in = (struct acat_item *)acat_by_gid(ac, it->reqs[i].input);
                if (in)
                        req_consumer_remove(in, it);
        }
        free(it->reqs);
        it->reqs = TAKE_PTR(t->sink_old);
        it->n_reqs = t->n_sink_old;
        for (size_t i = 0; i < it->n_reqs; i++) {
                struct acat_item *in = (struct acat_item *)acat_by_gid(ac, it->reqs[i].input);
                it->reqs[i].leaving = false;
                if (in)
                        (void)req_consumer_add(in, it);   /* removed above: room for it */
        }
        it->altering = false;
}

int acat_alter_sink_begin(struct adapter_catalog *ac, uint64_t gid, const struct acat_new_item *ni,
                          uint64_t cutover, struct acat_txn **ret, struct row_error *err)
{
        struct acat_item *it = (struct acat_item *)acat_by_gid(ac, gid), *def = NULL;
        uint64_t at = cutover - 1;
        struct acat_txn *t = NULL;
        uint8_t key[9], *val = NULL;
        size_t len = 0;
        bool linked = false;
        int r;

        assert(cutover > 0);
        if (!it || it->builtin || it->kind != SQL_OBJECT_SINK)
                return row_error_set(err, -EINVAL, "42P01", "sink %llu does not exist", (unsigned long long)gid);
        if (it->dropping || it->altering)
                return row_error_set(err, -EINVAL, "55006", "sink \"%s\" is being %s by another session",
                                     it->name, it->dropping ? "dropped" : "altered");
        for (size_t i = 0; i < ni->n_refs; i++) {
                const struct acat_item *ref = acat_by_gid(ac, ni->refs[i]);
                if (!ref || ref->pending)
                        return row_error_set(err, -EINVAL, "42P01", "object %llu does not exist",
                                             (unsigned long long)ni->refs[i]);
                if (ref->dropping)
                        return row_error_set(err, -EINVAL, "55006",
                                             "\"%s\" is being dropped by another session", ref->name);
        }
        if (acat_max_bound(ac, ni->logical_inputs, ni->n_logical) > at)
                return -EAGAIN;         /* not readable at cutover - 1 yet: wait */
        t = calloc(1, sizeof(*t));
        def = calloc(1, sizeof(*def));
        if (!t || !def) {
                free(def);
                r = -ENOMEM;
                goto fail;
        }
        t->kind = TXN_ALTER_SINK;
        t->alter_gid = gid;
        t->sink_def = def;
        def->kind = SQL_OBJECT_SINK;
        def->on_id = ni->on_id;
        def->as_of = at;
        r = item_set_plan(def, ni->plan, ni->logical_inputs, ni->n_logical, ni->physical_inputs,
                          ni->n_physical, ni->refs, ni->n_refs, NULL, 0);
        if (r < 0)
                goto fail;
        /* The item as it will be: encoded with the new definition, the old put back. */
        {
                struct acat_item tmp = *it;

                tmp.plan = NULL;
                tmp.plan_bytes = def->plan_bytes, tmp.plan_len = def->plan_len;
                tmp.logical_inputs = def->logical_inputs, tmp.n_logical = def->n_logical;
                tmp.physical_inputs = def->physical_inputs, tmp.n_physical = def->n_physical;
                tmp.refs = def->refs, tmp.n_refs = def->n_refs;
                tmp.on_id = def->on_id;
                tmp.as_of = at;
                tmp.sink_snapshot = false;
                r = item_encode(&tmp, &val, &len);
        }
        key_put(key, KEY_ITEM, gid);
        if (r >= 0)
                r = txn_op(t, CATALOG_OP_PUT, CATALOG_CF_STATE, key, 9, val, len);
        free(val);
        if (r < 0)
                goto fail;
        /* The requirements: the old ones kept aside (restored on failure), the leaving
         * ones deleted, the new ones at cutover - 1 -- or higher where a kept one, or a
         * publication in flight, has it higher (never back: I3). */
        t->sink_old = malloc((it->n_reqs ? it->n_reqs : 1) * sizeof(*t->sink_old));
        if (!t->sink_old) {
                r = -ENOMEM;
                goto fail;
        }
        memcpy(t->sink_old, it->reqs, it->n_reqs * sizeof(*it->reqs));
        t->n_sink_old = it->n_reqs;
        for (size_t i = 0; i < it->n_reqs && r >= 0; i++) {
                struct acat_req *q = &it->reqs[i];
                uint64_t cur = q->pending ? q->pending : q->frontier;
                uint8_t rkey[17];

                if (q->pending || ac->publishing)
                        t->after_publication = true;    /* its rows and ops assume it */
                if (u64_has(ni->logical_inputs, ni->n_logical, q->input))
                        continue;
                q->leaving = true;
                req_key(rkey, gid, q->input);
                r = txn_op(t, CATALOG_OP_DELETE, CATALOG_CF_STATE, rkey, 17, NULL, 0);
                if (r >= 0)
                        r = txn_rch(t, &(struct acat_req_change){ .consumer = gid, .input = q->input,
                                    .had_old = true, .old = cur });
        }
        it->altering = true;
        linked = true;
        for (size_t i = 0; i < ni->n_refs && r >= 0; i++)
                r = dependent_add((struct acat_item *)acat_by_gid(ac, ni->refs[i]), gid);
        for (size_t i = 0; i < ni->n_logical && r >= 0; i++) {
                uint64_t x = ni->logical_inputs[i];
                struct acat_req *q = req_find(it, x);
                uint64_t cur = q ? (q->pending ? q->pending : q->frontier) : 0;
                uint64_t f = q && cur > at ? cur : at;

                if (q && f == cur)
                        continue;       /* kept as it is */
                if (!q)
                        r = req_consumer_add((struct acat_item *)acat_by_gid(ac, x), it);
                if (r >= 0)
                        r = req_put(it, x, f);
                if (r >= 0)
                        r = txn_put_req(t, gid, x, f);
                if (r >= 0)
                        r = txn_rch(t, &(struct acat_req_change){ .consumer = gid, .input = x,
                                    .had_old = q != NULL, .old = cur, .has_new = true, .new_ = f });
        }
        if (r < 0)
                goto fail;
        *ret = t;
        return 0;
fail:
        if (linked)
                alter_sink_unlink(ac, it, t);
        txn_free(t);
        return r;
}

/* The commit of an ALTER SINK is done: the new definition in, the leaving requirements
 * out; or (failed) everything as it was. */
void alter_sink_finish(struct adapter_catalog *ac, struct acat_txn *t, int commit_result)
{
        struct acat_item *it = (struct acat_item *)acat_by_gid(ac, t->alter_gid), *def = t->sink_def;
        size_t k = 0;

        if (!it)
                return;
        assert(it->altering);
        if (commit_result < 0) {
                alter_sink_unlink(ac, it, t);
                return;
        }
        for (size_t i = 0; i < it->n_refs; i++) {
                struct acat_item *ref = (struct acat_item *)acat_by_gid(ac, it->refs[i]);
                if (ref)
                        dependent_remove(ref, it->gid); /* the new refs' entries stay */
        }
        for (size_t i = 0; i < it->n_reqs; i++) {
                struct acat_item *in = (struct acat_item *)acat_by_gid(ac, it->reqs[i].input);

                if (it->reqs[i].leaving) {
                        if (in)
                                req_consumer_remove(in, it);
                        continue;
                }
                it->reqs[k++] = it->reqs[i];
        }
        it->n_reqs = k;
        /* A publication that committed meanwhile may have set a kept one lower than
         * this transaction, which committed after it (after_publication). */
        for (size_t i = 0; i < t->n_rch; i++) {
                struct acat_req *q = t->rch[i].has_new ? req_find(it, t->rch[i].input) : NULL;
                if (q && q->frontier < t->rch[i].new_)
                        q->frontier = t->rch[i].new_;
        }
        if (it->plan)
                it->plan = (coord__plan__relation__free_unpacked(it->plan, NULL), NULL);
        SWAP(it->plan_bytes, def->plan_bytes);
        SWAP(it->plan_len, def->plan_len);
        SWAP(it->logical_inputs, def->logical_inputs);
        SWAP(it->n_logical, def->n_logical);
        SWAP(it->physical_inputs, def->physical_inputs);
        SWAP(it->n_physical, def->n_physical);
        SWAP(it->refs, def->refs);
        SWAP(it->n_refs, def->n_refs);
        item_disown(it, def);   /* a loaded item's old definition goes with its block */
        it->on_id = def->on_id;
        it->as_of = def->as_of;
        it->sink_snapshot = false;
        it->altering = false;
}
