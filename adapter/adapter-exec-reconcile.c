/* adapter-exec-reconcile.c -- the statement executor's reconciliation of the built-in
 * relations (coord_objects, coord_bounds, coord_requirements) with the catalog (5), by
 * the writer mark when it shows nothing was lost (8); and the publications of the
 * lifecycle follower, committed to the catalog with their coord_bounds and
 * coord_requirements rows (issue 5).
 *
 * The numbered notes are in adapter-exec.c (NOTES ON THE DESIGN).  What the executor's
 * files share is adapter-exec-internal.h.  Loop thread only.
 */
#include "adapter-exec-internal.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "adapter-commit.h"
#include "catalog/catalog.h"
#include "killpoint.h"
#include "log.h"
#include "node/node.h"
#include "util.h"

/* ---- (5) reconciliation of the built-in relations with the catalog ---- */

/* A row and its count: desired +1, what the relation and the queue hold negated. */
struct rc_row {
        uint8_t *own;           /* owned when encoded here */
        const uint8_t *row;
        size_t len;
        int64_t n;
};

struct rc_set {
        struct rc_row *v;
        size_t n, cap;
};

static int rc_add(struct rc_set *set, uint8_t *own, const uint8_t *row, size_t len, int64_t n)
{
        if (set->n == set->cap) {
                size_t cap = set->cap ? 2 * set->cap : 64;
                struct rc_row *v = realloc(set->v, cap * sizeof(*v));

                if (!v) {
                        free(own);
                        return -ENOMEM;
                }
                set->v = v;
                set->cap = cap;
        }
        set->v[set->n++] = (struct rc_row){ .own = own, .row = own ? own : row, .len = len, .n = n };
        return 0;
}

static int rc_add_ints(struct rc_set *set, const int64_t *vals, size_t arity)
{
        struct row_datum d[3];
        uint8_t *row;
        size_t len;
        int r;

        assert(arity <= ELEMENTSOF(d));
        for (size_t c = 0; c < arity; c++)
                d[c] = ROW_DATUM_INT(vals[c]);
        r = row_encode(d, arity, &row, &len);
        return r < 0 ? r : rc_add(set, row, NULL, 0 + len, +1);
}

static int rc_cmp(const void *a, const void *b)
{
        const struct rc_row *x = a, *y = b;
        size_t m = x->len < y->len ? x->len : y->len;
        int c = m ? memcmp(x->row, y->row, m) : 0;

        if (c)
                return c;
        return x->len < y->len ? -1 : x->len > y->len;
}

static void rc_done(struct rc_set *set)
{
        for (size_t i = 0; i < set->n; i++)
                free(set->v[i].own);
        free(set->v);
        *set = (struct rc_set){ 0 };
}

/* The rows the catalog says relation `gid` holds (committed items only). */
static int reconcile_desired(struct exec *ex, uint64_t gid, struct rc_set *set)
{
        const struct acat_item *const *items;
        size_t n = acat_items(ex->cat, &items);
        int r = 0;

        for (size_t i = 0; r >= 0 && i < n; i++) {
                const struct acat_item *it = items[i];

                if (it->pending)
                        continue;
                if (gid == ACAT_GID_OBJECTS && !it->builtin) {
                        struct row_datum d[4] = {
                                ROW_DATUM_INT((int64_t)it->gid),
                                ROW_DATUM_TEXT(it->name, (uint32_t)strlen(it->name)),
                                ROW_DATUM_TEXT(acat_kind_name(it->kind),
                                               (uint32_t)strlen(acat_kind_name(it->kind))),
                                ROW_DATUM_TEXT(it->create_sql, (uint32_t)strlen(it->create_sql)),
                        };
                        uint8_t *row;
                        size_t len;

                        r = row_encode(d, ELEMENTSOF(d), &row, &len);
                        if (r >= 0)
                                r = rc_add(set, row, NULL, len, +1);
                } else if (gid == ACAT_GID_BOUNDS && it->has_bound) {
                        int64_t v[2] = { (int64_t)it->gid, (int64_t)it->bound };

                        r = rc_add_ints(set, v, 2);
                } else if (gid == ACAT_GID_REQUIREMENTS) {
                        for (size_t k = 0; r >= 0 && k < it->n_reqs; k++) {
                                int64_t v[3] = { (int64_t)it->gid, (int64_t)it->reqs[k].input,
                                                 (int64_t)it->reqs[k].frontier };

                                r = rc_add_ints(set, v, 3);
                        }
                }
        }
        return r < 0 ? r : 0;
}

/* The difference for relation `slot`: desired - (read at reconcile_ts + queued), as
 * one write with diffs in *ret (n_rows 0: nothing to do). */
static int reconcile_diff(struct exec *ex, unsigned slot, struct write *ret)
{
        const Coord__PeekResult *res = ex->reconcile_res[slot];
        uint64_t gid = reconcile_gids[slot];
        struct rc_set set = { 0 };
        struct write w = { .kind = WRITE_OBJECTS, .gid = gid };
        size_t out = 0;
        int r;

        r = reconcile_desired(ex, gid, &set);
        for (size_t i = 0; r >= 0 && res && i < res->n_rows; i++)
                r = rc_add(&set, NULL, res->rows[i].data, res->rows[i].len, -(int64_t)res->counts[i]);
        for (struct group *g = ex->groups; r >= 0 && g; g = g->next)
                for (size_t i = 0; r >= 0 && i < g->n; i++) {
                        const struct write *q = &g->writes[i];

                        if (q->gid != gid)
                                continue;
                        for (size_t j = 0; r >= 0 && j < q->n_rows; j++)
                                r = rc_add(&set, NULL, q->rows[j], q->row_lens[j],
                                           -(q->diffs ? q->diffs[j] : 1));
                }
        if (r < 0)
                goto out;
        if (set.n)
                qsort(set.v, set.n, sizeof(*set.v), rc_cmp);
        /* Merge equal rows; count the ones whose sum is not zero. */
        for (size_t i = 0, j; i < set.n; i = j) {
                int64_t sum = 0;

                for (j = i; j < set.n && rc_cmp(&set.v[i], &set.v[j]) == 0; j++)
                        sum += set.v[j].n;
                set.v[i].n = sum;
                if (sum)
                        set.v[out++] = set.v[i];
                else
                        free(set.v[i].own);
                for (size_t k = i + 1; k < j; k++)
                        free(set.v[k].own);
        }
        set.n = out;
        *ret = w;
        if (!out)
                goto out;
        w.rows = calloc(out, sizeof(*w.rows));
        w.row_lens = calloc(out, sizeof(*w.row_lens));
        w.diffs = calloc(out, sizeof(*w.diffs));
        if (!w.rows || !w.row_lens || !w.diffs) {
                write_done(&w);
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < out; i++) {
                w.rows[i] = set.v[i].own ? TAKE_PTR(set.v[i].own) : malloc(set.v[i].len ? set.v[i].len : 1);
                if (!w.rows[i]) {
                        write_done(&w);
                        r = -ENOMEM;
                        goto out;
                }
                if (w.rows[i] != set.v[i].row)
                        memcpy(w.rows[i], set.v[i].row, set.v[i].len);
                w.row_lens[i] = set.v[i].len;
                w.diffs[i] = set.v[i].n;
                w.n_rows++;
        }
        *ret = w;
out:
        rc_done(&set);
        return r;
}

static void reconcile_end(struct exec *ex, int r, const char *why)
{
        for (unsigned i = 0; i < ELEMENTSOF(ex->reconcile_res); i++)
                if (ex->reconcile_res[i])
                        ex->reconcile_res[i] = (coord__peek_result__free_unpacked(ex->reconcile_res[i], NULL), NULL);
        ex->reconcile_waiting = 0;
        ex->reconciling = false;
        if (r < 0)
                log_warn_errno(r, "builtin_reconcile_failed", "why=\"%s\" action=retry", why);
        groups_kick(ex);
        fence_check(ex);
}

/* Every read is in: put the difference in front of the queue. */
static void reconcile_apply(struct exec *ex)
{
        struct group *g;
        size_t changed[3] = { 0 };
        int r = 0;

        if (committer_in_flight(ex->committer)) {
                /* (5) a commit's rows are not queued yet: try again at the next tick. */
                reconcile_end(ex, 0, NULL);
                return;
        }
        /* In flight now: at most a group without built-in rows (groups_kick()). */
        assert(!ex->groups || !ex->groups->rq || !group_writes_builtin_rows(ex->groups));
        g = calloc(1, sizeof(*g));
        if (!g) {
                reconcile_end(ex, -ENOMEM, "out of memory");
                return;
        }
        g->closed = true;
        for (unsigned i = 0; r >= 0 && i < ELEMENTSOF(reconcile_gids); i++) {
                struct write w;

                r = reconcile_diff(ex, i, &w);
                if (r < 0 || !w.n_rows)
                        continue;
                changed[i] = w.n_rows;
                if (g->n == g->cap) {
                        struct write *nw = realloc(g->writes, 4 * sizeof(*nw));

                        if (!nw) {
                                write_done(&w);
                                r = -ENOMEM;
                                break;
                        }
                        g->writes = nw;
                        g->cap = 4;
                }
                g->writes[g->n++] = w;
        }
        if (r < 0 || !g->n) {
                group_free(g);
                if (r >= 0) {
                        ex->reconcile_needed = false;
                        log_info("builtin_reconciled", "ts=%llu changed=0 from=read",
                                 (unsigned long long)ex->reconcile_ts);
                }
                reconcile_end(ex, r, "diff");
                return;
        }
        log_warn("builtin_reconciled", "ts=%llu from=read objects=%zu bounds=%zu requirements=%zu",
                 (unsigned long long)ex->reconcile_ts, changed[0], changed[1], changed[2]);
        {
                /* In front of every group not yet sent. */
                struct group **at = ex->groups && ex->groups->rq ? &ex->groups->next : &ex->groups;

                g->next = *at;
                *at = g;
                if (!g->next)
                        ex->groups_tail = &g->next;
        }
        if (!ex->fence)
                ex->fence = g;  /* (3): reads after it see the re-derived rows */
        ex->reconcile_needed = false;
        reconcile_end(ex, 0, NULL);
}

static void reconcile_peeked(struct exec *ex, struct request *rq, const Coord__Envelope *reply)
{
        unsigned slot = (unsigned)(uintptr_t)rq->ctx;

        assert(slot < ELEMENTSOF(ex->reconcile_res) && ex->reconcile_waiting > 0);
        if (reply->type == COORD__MSG_TYPE__MSG_PEEK_RESULT) {
                ex->reconcile_res[slot] = coord__peek_result__unpack(NULL, reply->payload.len,
                                                                     reply->payload.data);
                if (ex->reconcile_res[slot] && ex->reconcile_res[slot]->n_counts !=
                                                       ex->reconcile_res[slot]->n_rows)
                        ex->reconcile_res[slot] =
                                (coord__peek_result__free_unpacked(ex->reconcile_res[slot], NULL), NULL);
        }
        if (!ex->reconcile_res[slot])
                ex->reconcile_waiting |= 0x100;         /* failed */
        if ((--ex->reconcile_waiting & 0xff) != 0)
                return;
        if (ex->reconcile_waiting & 0x100)
                reconcile_end(ex, -EIO, "a read of a built-in relation failed");
        else
                reconcile_apply(ex);
}

static int reconcile_peek(struct exec *ex, unsigned slot)
{
        const struct acat_item *it = acat_by_gid(ex->cat, reconcile_gids[slot]);
        Coord__Plan__Relation rel = COORD__PLAN__RELATION__INIT;
        Coord__Plan__Get get = COORD__PLAN__GET__INIT;
        Coord__Plan__Peek peek = COORD__PLAN__PEEK__INIT;
        Coord__PeekRequest msg = COORD__PEEK_REQUEST__INIT;
        Coord__Plan__Type types[4];
        Coord__Plan__Column cols[4], *colp[4];

        if (!it || it->n_columns > ELEMENTSOF(types))
                return -EINVAL;
        for (size_t i = 0; i < it->n_columns; i++) {
                types[i] = (Coord__Plan__Type)it->columns[i].type;
                coord__plan__column__init(&cols[i]);
                cols[i].name = it->columns[i].name;
                cols[i].type = types[i];
                cols[i].nullable = it->columns[i].nullable;
                colp[i] = &cols[i];
        }
        get.id = it->gid;
        get.n_column_types = it->n_columns;
        get.column_types = types;
        rel.kind_case = COORD__PLAN__RELATION__KIND_GET;
        rel.get = &get;
        peek.plan = &rel;
        peek.timestamp = ex->reconcile_ts;
        peek.n_columns = it->n_columns;
        peek.columns = colp;
        msg.peek = &peek;
        msg.timeout_ms = ex->cfg.peek_timeout_ms;
        return request_new(ex, COORD__MSG_TYPE__MSG_PEEK, &msg.base, reconcile_peeked,
                           (void *)(uintptr_t)slot) ? 0 : -ENOMEM;
}

/* (8) Do the relations already hold f(catalog)?  True when the mark is ours and no
 * transaction after it changes state (and none of this life's rows wait in the
 * queue); *ret_entries: log entries read. */
static bool reconcile_by_mark(struct exec *ex, const ProtobufCBinaryData *mark, size_t *ret_entries)
{
        struct catalog_log_iter *it = NULL;
        Coord__CatalogTxn *txn;
        uint64_t seq;
        bool changed = false;
        int r;

        *ret_entries = 0;
        if (!ex->mark_origin || mark->len != MARK_LEN || be64_get(mark->data) != ex->mark_origin)
                return false;
        seq = be64_get(mark->data + 8);
        if (seq == 0 || seq > catalog_last_seq(ex->store))
                return false;
        for (struct group *g = ex->groups; g; g = g->next)
                if (group_writes_builtin_rows(g))
                        return false;
        r = catalog_log_iter_new(ex->store, seq, &it);
        while (r >= 0 && !changed && (r = catalog_log_next(it, &txn)) == 1) {
                /* A lease record derives no built-in row (coord_leases is the lease
                 * table's memory), as the check (I10) leaves it out too: a follower's
                 * duty claim after our restart changes nothing here. */
                for (size_t i = 0; i < txn->n_ops; i++)
                        if (txn->ops[i]->cf == COORD__CATALOG_OP__CF__STATE &&
                            !(txn->ops[i]->key.len && txn->ops[i]->key.data[0] == CATALOG_STATE_LEASE))
                                changed = true;
                coord__catalog_txn__free_unpacked(txn, NULL);
                (*ret_entries)++;
        }
        catalog_log_iter_free(it);
        return r >= 0 && !changed;
}

static void reconcile_listed(struct exec *ex, struct request *rq, const Coord__Envelope *reply)
{
        Coord__CollectionList *list = NULL;
        bool found = false, marked = false;
        uint64_t since = 0, upper = 0;
        size_t entries = 0;
        int r = 0;

        if (reply->type == COORD__MSG_TYPE__MSG_COLLECTION_LIST)
                list = coord__collection_list__unpack(NULL, reply->payload.len, reply->payload.data);
        for (size_t i = 0; list && i < list->n_collections; i++)
                if (list->collections[i]->gid == ACAT_GID_OBJECTS) {
                        found = true;
                        since = list->collections[i]->since;
                        upper = list->collections[i]->upper;
                        marked = reconcile_by_mark(ex, &list->collections[i]->writer_mark, &entries);
                }
        if (list)
                coord__collection_list__free_unpacked(list, NULL);
        if (!found) {
                reconcile_end(ex, -ENOENT, "no coord_objects on the controller");
                return;
        }
        if (marked) {
                ex->reconcile_needed = false;
                log_info("builtin_reconciled", "ts=%llu changed=0 from=mark log_entries=%zu",
                         (unsigned long long)(upper ? upper - 1 : 0), entries);
                reconcile_end(ex, 0, NULL);
                return;
        }
        if (upper <= since) {
                /* Never written: every relation is empty. */
                ex->reconcile_ts = since;
                reconcile_apply(ex);
                return;
        }
        /* (5) the built-ins share their upper; only our appends move it. */
        ex->reconcile_ts = upper - 1;
        ex->builtin_reads++;
        for (unsigned i = 0; r >= 0 && i < ELEMENTSOF(reconcile_gids); i++) {
                r = reconcile_peek(ex, i);
                if (r >= 0)
                        ex->reconcile_waiting++;
        }
        if (r < 0) {
                /* The peeks sent still answer; they end it, failed. */
                ex->reconcile_waiting |= 0x100;
                if ((ex->reconcile_waiting & 0xff) == 0)
                        reconcile_end(ex, r, "cannot read the built-in relations");
        }
}

/* Start (5) when it is needed and nothing is in flight. */
void reconcile_maybe(struct exec *ex)
{
        Coord__ListCollections lc = COORD__LIST_COLLECTIONS__INIT;
        uint64_t gid = ACAT_GID_OBJECTS;        /* its frontiers and the mark (8) */

        if (!ex->reconcile_needed || ex->reconciling || !ex->controller_up || ex->resyncing)
                return;
        /* Its group could not be sent (groups_kick()): the restart reconciles (5). */
        if (catalog_error(ex->store) < 0)
                return;
        if ((ex->groups && ex->groups->rq) || committer_in_flight(ex->committer))
                return;         /* after that group, or at the next tick */
        ex->reconciling = true;
        lc.gids = &gid;
        lc.n_gids = 1;
        if (!request_new(ex, COORD__MSG_TYPE__MSG_LIST_COLLECTIONS, &lc.base, reconcile_listed, NULL))
                reconcile_end(ex, -ENOMEM, "out of memory");
}

/* ---- publications of the lifecycle follower (issue 5) ---- */

struct publication {
        struct exec *ex;
        node_peer_t from;
        uint64_t request_id;
        struct acat_txn *txn;
        size_t records;
};

static void publication_reply_error(struct exec *ex, node_peer_t from, uint64_t rid,
                                    const struct row_error *e)
{
        Coord__Error m = COORD__ERROR__INIT;

        m.sqlstate = (char *)e->sqlstate;
        m.message = (char *)e->message;
        m.detail = (char *)e->detail;
        m.hint = (char *)e->hint;
        (void)node_send(ex->node, from, COORD__MSG_TYPE__MSG_ERROR, rid, &m.base);
}

static void publication_reply_ok(struct exec *ex, node_peer_t from, uint64_t rid, uint64_t seq,
                                 uint64_t records)
{
        Coord__Ok m = COORD__OK__INIT;

        m.upper = seq;
        m.counts = &records;
        m.n_counts = 1;
        (void)node_send(ex->node, from, COORD__MSG_TYPE__MSG_OK, rid, &m.base);
}

static void publication_committed(void *ctx, int r, uint64_t seq)
{
        struct publication *pb = ctx;
        struct exec *ex = pb->ex;
        struct row_error e = { .position = 0 };

        if (r < 0) {
                log_error_errno(r, "catalog_commit_failed", "what=publication");
                ex->fatal = r;
                acat_txn_finish(ex->cat, pb->txn, r);
                row_error_set(&e, r, "58030", "the catalog could not commit the publication: %s",
                              strerror(-r));
                publication_reply_error(ex, pb->from, pb->request_id, &e);
                free(pb);
                return;
        }
        ex->hold_kick = true;
        protection_queue(ex, pb->txn);
        /* (3) The follower lets the controller compact on our Ok: a read of
         * coord_bounds after that must see the bounds that allowed it. */
        ex->fence = ex->groups_tail == &ex->groups ? NULL : group_last(ex);
        ex->hold_kick = false;
        groups_kick(ex);
        acat_txn_finish(ex->cat, pb->txn, 0);
        ex->publications++;
        ex->publication_records += pb->records;
        log_debug("publication_committed", "seq=%llu records=%zu", (unsigned long long)seq,
                  pb->records);
        KILLPOINT("publication.committed.before_reply");        /* durable, not answered */
        publication_reply_ok(ex, pb->from, pb->request_id, seq, pb->records);
        free(pb);
}

void exec_on_publication(struct exec *ex, node_peer_t from, const Coord__Envelope *env)
{
        Coord__PublishProtection *p;
        struct publication *pb = NULL;
        struct row_error e = { .position = 0 };
        const struct catalog_op *ops;
        struct acat_txn *txn = NULL;
        size_t n_ops, records = 0;
        int r;

        p = coord__publish_protection__unpack(NULL, env->payload.len, env->payload.data);
        if (!p) {
                row_error_set(&e, -EBADMSG, "XX000", "malformed PublishProtection");
                publication_reply_error(ex, from, env->request_id, &e);
                return;
        }
        if (ex->fatal) {
                row_error_set(&e, ex->fatal, "58030", "the catalog is not writable");
                goto fail;
        }
        r = acat_publish_begin(ex->cat, p, &txn, &records, &e);
        if (r == -ENOMEM)
                row_error_oom(&e);
        if (r < 0) {
                log_warn("publication_rejected", "sqlstate=%s message=\"%s\"", e.sqlstate, e.message);
                goto fail;
        }
        if (records == 0) {
                /* Nothing changed: no commit, the answer is where the catalog is. */
                acat_txn_finish(ex->cat, txn, 0);
                publication_reply_ok(ex, from, env->request_id, catalog_last_seq(ex->store), 0);
                coord__publish_protection__free_unpacked(p, NULL);
                return;
        }
        pb = calloc(1, sizeof(*pb));
        if (!pb) {
                acat_txn_finish(ex->cat, txn, -ENOMEM);
                row_error_oom(&e);
                goto fail;
        }
        *pb = (struct publication){ .ex = ex, .from = from, .request_id = env->request_id,
                                    .txn = txn, .records = records };
        ops = acat_txn_ops(txn, &n_ops);
        /* Committed through the same committers as DDL: concurrent DDL shares the sync.
         * A DROP of something it moves, begun before it is done, commits after it
         * (acat_txn_after_publication()). */
        r = committer_submit_opts(ex->committer, &(struct catalog_txn_ops){ .ops = ops, .n_ops = n_ops },
                                  1, &(struct commit_opts){ .test_delay_ms = ex->cfg.test_publication_delay_ms },
                                  publication_committed, pb);
        if (r < 0) {
                acat_txn_finish(ex->cat, txn, r);
                free(pb);
                row_error_set(&e, r, "58030", "cannot commit the publication: %s", strerror(-r));
                goto fail;
        }
        coord__publish_protection__free_unpacked(p, NULL);
        return;
fail:
        publication_reply_error(ex, from, env->request_id, &e);
        coord__publish_protection__free_unpacked(p, NULL);
}
