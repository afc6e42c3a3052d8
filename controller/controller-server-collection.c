/* controller-server-collection.c -- collections: Ensure, Drop and ListCollections,
 * deferred creates and drops.
 *
 * Contract: controller-server.h; what the server's files share:
 * controller-server-internal.h.  The notes are numbered across the server
 * (controller-server.c lists where each stands).
 *
 * NOTES ON THE DESIGN
 *
 * (12) Deferred DDL.  A table created by a partial Ensure, or dropped by Drop, is not
 *     written at once: storage_create_deferred() / storage_drop_deferred() change
 *     storage's memory (everything sees it as after a synced write) and put the change
 *     into the NEXT synced WriteBatch, durable atomically with it; the Ok is sent at once.
 *     Safe because the lifecycle follower sends the complete set of tables after every
 *     (re)connection (re-creating a lost create, re-dropping a lost drop: so only tables
 *     are deferred), and an append to a table is durable with its deferred create.  After
 *     a failed write, (8) reopens and makes the lost deferred changes again.  A refused
 *     append and the compaction timer write leftovers alone.  Built-ins and a complete
 *     Ensure keep synced creates and drops.
 * (12a) A complete Ensure in parts (EnsureCollections.more/part, as CreateDataflows':
 *     controller-server-install.c note 17a): s->ensure_listed gathers the tables of
 *     parts 0, 1, ...; the last part drops the tables none listed, and none when a part
 *     number was skipped (log resync_incomplete; the follower's next resync converges).
 */
#include "controller-server.h"
#include "controller-server-internal.h"

#include <stdlib.h>
#include <string.h>

#include "controller-storage.h"
#include "ring/fring.h"
#include "log.h"
#include "row/row.h"
#include "util.h"

/* ---- Collections -------------------------------------------------------------------- */

static void builtins_remove(struct cserver *s, uint64_t gid)
{
        for (size_t i = 0; i < s->n_builtins; i++)
                if (s->builtins[i] == gid) {
                        memmove(&s->builtins[i], &s->builtins[i + 1],
                                (s->n_builtins - i - 1) * sizeof(*s->builtins));
                        s->n_builtins--;
                        return;
                }
}

static int drop_refused(uint64_t gid, struct row_error *e)
{
        if (gid != CSERVER_GID_OBJECTS)
                return 0;
        return row_error_set(e, -EPERM, "XX000", "collection %u (coord_objects) cannot be "
                             "dropped: its upper is the tables' shared frontier",
                             CSERVER_GID_OBJECTS);
}

int server_drop_one(struct cserver *s, uint64_t gid, bool defer, struct row_error *e)
{
        struct storage_info info;
        int r;

        r = drop_refused(gid, e);
        if (r < 0)
                return r;
        if (server_dfent_find(s, gid))
                server_dfent_remove(s, gid);   /* (13): an index ends here, a view's collection below */
        if (server_srcent_find(s, gid)) {
                /* (20): its remap goes with it */
                uint64_t remap = server_srcent_find(s, gid)->progress_id;

                server_srcent_remove(s, gid);
                r = server_drop_one(s, remap, false, e);
                if (r < 0)
                        return r;
        }
        r = storage_get_info(s->st, gid, &info);
        if (r == -ENOENT)
                return 0;
        /* (12): a table's drop may wait for the next append's write. */
        if (r >= 0)
                r = defer && info.kind == STORAGE_KIND_TABLE ? storage_drop_deferred(s->st, gid)
                                                             : storage_drop(s->st, gid);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return server_storage_failure(s, e, r, "dropping collection %llu", (unsigned long long)gid);
        server_ring_forget(s, gid);
        server_allowed_forget(s, gid);
        server_km_drop(s, gid);         /* (22) */
        if (info.kind == STORAGE_KIND_BUILTIN) {
                builtins_remove(s, gid);
                server_cm_drop(s, gid);
        }
        /* (4): its row goes at the next append.  A dropped coord_frontiers is gone with
         * its rows; a new one is filled with every table's row at the next append. */
        if (gid == CSERVER_GID_FRONTIERS)
                server_frontiers_clear(s);
        else
                server_frontiers_dirty(s, gid);
        log_debug("collection_dropped", "gid=%llu kind=%s", (unsigned long long)gid,
                 server_kind_name(info.kind));
        return 0;
}

/* After gid was created (10), (4). */
int server_created(struct cserver *s, const struct storage_info *info, struct row_error *e)
{
        uint64_t T;
        int r;

        server_ring_set(s, info->gid, &info->frontiers);
        if (info->kind == STORAGE_KIND_BUILTIN) {
                /* Rare (start-up): the built-ins and born_above from a listing. */
                r = server_list_all(s);
                if (r >= 0)
                        r = server_builtins_from_cols(s);
                if (r < 0)
                        return server_storage_failure(s, e, r, "listing collections");
                if (info->gid == CSERVER_GID_FRONTIERS) {
                        server_frontiers_reset(s);
                } else {
                        /* (11): a new built-in is empty, so its mirror costs nothing
                         * now and every append keeps it; built on first use instead,
                         * it read the whole relation on the loop at the first DROP
                         * (200,000 coord_objects rows at 100,000 objects: 200-430 ms). */
                        struct cmirror *cm;

                        (void)server_cm_get(s, info, &cm);     /* without memory: on first use */
                }
                return 0;
        }
        T = server_tables_frontier(s);
        if (info->frontiers.upper > T && info->frontiers.upper > s->born_above) {
                s->born_above = info->frontiers.upper;
                s->born_above_gid = info->gid;
        }
        server_frontiers_dirty(s, info->gid);
        return 0;
}

static int ensure(struct cserver *s, const Coord__EnsureCollections *m, struct row_error *e)
{
        _cleanup_free_ uint64_t *listed = NULL;
        struct storage_info info;
        size_t n_dropped = 0, n_listed;
        int r;

        /* Validate everything before changing anything. */
        for (size_t i = 0; i < m->n_collections; i++) {
                const Coord__CollectionSpec *c = m->collections[i];
                enum storage_kind kind = (enum storage_kind)c->kind;

                if (c->gid == 0 || !server_kind_appendable(kind))
                        return row_error_set(e, -EINVAL, "XX000", "cannot ensure collection %llu "
                                             "of kind %d", (unsigned long long)c->gid, (int)c->kind);
                r = storage_get_info(s->st, c->gid, &info);
                if (r == 0 && info.kind != kind)
                        return row_error_set(e, -EEXIST, "XX000", "collection %llu exists as a %s, "
                                             "not a %s", (unsigned long long)c->gid,
                                             server_kind_name(info.kind), server_kind_name(kind));
                if (r < 0 && r != -ENOENT)
                        return server_storage_failure(s, e, r, "looking up collection %llu",
                                               (unsigned long long)c->gid);
        }
        for (size_t i = 0; i < m->n_collections; i++) {
                const Coord__CollectionSpec *c = m->collections[i];

                if (storage_get_info(s->st, c->gid, &info) == 0)
                        continue;       /* existing ones are untouched */
                uint64_t since = c->since, T = server_tables_frontier(s);

                /* (10) A table is born at or below T: the follower's Ensure travels
                 * on another connection than the adapter's appends, so an append at a
                 * ts below the table's creation may still come, and must not find the
                 * new table above it.  Nothing can be written to the table below its
                 * creation (the adapter writes it only after its DDL), so it is
                 * empty there; the birth floor for reads is the catalog's bound, which
                 * the adapter checks. */
                if ((enum storage_kind)c->kind == STORAGE_KIND_TABLE && T && since > T)
                        since = T;
                /* (12): a table that a partial Ensure creates is durable with the
                 * next append; a complete Ensure (a resync) writes at once. */
                if (!m->complete && (enum storage_kind)c->kind == STORAGE_KIND_TABLE)
                        r = storage_create_deferred(s->st, c->gid, STORAGE_KIND_TABLE, since, since);
                else
                        r = storage_create(s->st, c->gid, (enum storage_kind)c->kind, since, since);
                if (r < 0)
                        return server_storage_failure(s, e, r, "creating collection %llu",
                                               (unsigned long long)c->gid);
                r = storage_get_info(s->st, c->gid, &info);
                if (r == 0)
                        r = server_created(s, &info, e);
                if (r < 0)
                        return r;
                log_debug("collection_created", "gid=%llu kind=%s since=%llu",
                         (unsigned long long)c->gid, server_kind_name((enum storage_kind)c->kind),
                         (unsigned long long)c->since);
        }
        if (!m->complete)
                return 0;
        /* (12a) */
        if (parts_next(&s->ensure_parts, m->part))
                s->n_ensure_listed = 0;
        if (GROW_ARRAY(s->ensure_listed, s->cap_ensure_listed, s->n_ensure_listed + m->n_collections) < 0)
                return row_error_oom(e);
        for (size_t i = 0; i < m->n_collections; i++)
                s->ensure_listed[s->n_ensure_listed++] = m->collections[i]->gid;
        if (m->more)
                return 0;
        n_listed = s->n_ensure_listed;
        listed = TAKE_PTR(s->ensure_listed);
        s->n_ensure_listed = s->cap_ensure_listed = 0;
        if (s->ensure_parts.broken) {
                log_warn("resync_incomplete", "what=tables parts=%u action=keep", m->part + 1);
                return 0;
        }
        if (n_listed)           /* none: listed is NULL, which qsort() and bsearch() refuse */
                qsort(listed, n_listed, sizeof(*listed), u64_cmp);
        r = server_list_all(s);
        if (r < 0)
                return server_storage_failure(s, e, r, "listing collections");
        /* server_drop_one() lists nothing, so s->cols stays valid through the loop. */
        for (size_t i = 0; i < s->n_cols; i++) {
                uint64_t gid = s->cols[i].gid;

                if (s->cols[i].kind != STORAGE_KIND_TABLE ||
                    (n_listed && bsearch(&gid, listed, n_listed, sizeof(*listed), u64_cmp)))
                        continue;
                r = server_drop_one(s, gid, false, e);
                if (r < 0)
                        return r;
                n_dropped++;
        }
        if (n_dropped)
                log_info("collections_reconciled", "listed=%zu dropped=%zu", n_listed, n_dropped);
        return 0;
}

void server_handle_ensure(struct cserver *s, node_peer_t from, const Coord__Envelope *env)
{
        Coord__EnsureCollections *m;
        struct row_error e;
        int r;

        m = coord__ensure_collections__unpack(NULL, env->payload.len, env->payload.data);
        if (!m) {
                server_reply_malformed(s, from, env);
                return;
        }
        r = s->st ? ensure(s, m, &e) : server_storage_unavailable(&e);
        server_reply_result(s, from, env->request_id, r, &e);
        coord__ensure_collections__free_unpacked(m, NULL);
        /* A collection dropped by `complete` fails the peeks parked on it. */
        server_peeks_wake(s);
}

void server_handle_drop(struct cserver *s, node_peer_t from, const Coord__Envelope *env)
{
        Coord__DropCollections *m;
        struct row_error e;
        int r = 0;

        m = coord__drop_collections__unpack(NULL, env->payload.len, env->payload.data);
        if (!m) {
                server_reply_malformed(s, from, env);
                return;
        }
        if (!s->st)
                r = server_storage_unavailable(&e);
        for (size_t i = 0; i < m->n_gids && r >= 0; i++)
                r = drop_refused(m->gids[i], &e);       /* before dropping any */
        for (size_t i = 0; i < m->n_gids && r >= 0; i++)
                r = server_drop_one(s, m->gids[i], true, &e);
        server_reply_result(s, from, env->request_id, r, &e);
        coord__drop_collections__free_unpacked(m, NULL);
        server_peeks_wake(s);
}

void server_handle_list(struct cserver *s, node_peer_t from, const Coord__Envelope *env)
{
        Coord__CollectionList m = COORD__COLLECTION_LIST__INIT;
        Coord__CollectionFrontiers *items = NULL, **ptrs = NULL;
        Coord__ListCollections *req;
        struct row_error e;
        uint8_t mark[STORAGE_MARK_MAX];
        uint64_t T;
        int r;

        req = coord__list_collections__unpack(NULL, env->payload.len, env->payload.data);
        if (!req) {
                server_reply_malformed(s, from, env);
                return;
        }
        r = !s->st ? server_storage_unavailable(&e) : req->n_gids ? server_list_some(s, req->gids, req->n_gids)
                                                           : server_list_all(s);
        coord__list_collections__free_unpacked(req, NULL);
        if (r < 0) {
                if (s->st)
                        server_storage_failure(s, &e, r, "listing collections");
                goto fail;
        }
        T = server_tables_frontier(s);
        items = calloc(s->n_cols ? s->n_cols : 1, sizeof(*items));
        ptrs = calloc(s->n_cols ? s->n_cols : 1, sizeof(*ptrs));
        if (!items || !ptrs) {
                row_error_oom(&e);
                goto fail;
        }
        for (size_t i = 0; i < s->n_cols; i++) {
                /* (10): a table's upper is max(stored upper, T). */
                server_effective(&s->cols[i].frontiers, s->cols[i].kind, T);
                coord__collection_frontiers__init(&items[i]);
                items[i].gid = s->cols[i].gid;
                /* CollectionKind has StorageKind's numbers, but the sink's (5 is the
                 * index's there). */
                items[i].kind = s->cols[i].kind == STORAGE_KIND_SINK
                                        ? COORD__COLLECTION_KIND__COLLECTION_SINK
                                        : (Coord__CollectionKind)s->cols[i].kind;
                items[i].since = s->cols[i].frontiers.since;
                items[i].upper = s->cols[i].frontiers.upper;
                items[i].physical_since = s->cols[i].frontiers.physical_since;
                if (s->cols[i].gid == CSERVER_GID_OBJECTS) {
                        r = storage_get_mark(s->st, CSERVER_GID_OBJECTS, mark);
                        items[i].writer_mark.data = mark;
                        items[i].writer_mark.len = r > 0 ? (size_t)r : 0;
                }
                ptrs[i] = &items[i];
        }
        m.collections = ptrs;
        m.n_collections = s->n_cols;
        server_send_logged(s, from, COORD__MSG_TYPE__MSG_COLLECTION_LIST, env->request_id, &m.base);
        goto out;
fail:
        server_reply_error(s, from, env->request_id, &e);
out:
        free(items);
        free(ptrs);
}
