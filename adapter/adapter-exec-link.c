/* adapter-exec-link.c -- the statement executor's link to the controller: requests
 * (each with its id and its encoded payload, resent after the controller restarts,
 * (4)), their replies, the built-in relations' collections, and the controller coming
 * and going (the group in flight found applied or resent (4), streams lost (9)).
 *
 * The numbered notes are in adapter-exec.c (NOTES ON THE DESIGN).  What the executor's
 * files share is adapter-exec-internal.h.  Loop thread only.
 */
#include "adapter-exec-internal.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "adapter-oracle.h"
#include "builtins.h"
#include "catalog/catalog.h"
#include "log.h"
#include "node/node.h"

static void streams_lost(struct exec *ex);

/* ---- requests to the controller ---- */

static int request_send(struct exec *ex, struct request *rq)
{
        int r;

        if (!ex->controller_up)
                return -ENOTCONN;
        r = node_send_raw(ex->node, COORD__ROLE__ROLE_CONTROLLER, rq->type, rq->id,
                          rq->payload, rq->len);
        /* (4) A full send queue (the controller stopped or slow): not lost, the tick
         * sends it again.  Not connected: exec_controller_up() resends everything. */
        if (r == -ENOBUFS && !rq->unsent) {
                rq->unsent = true;
                ex->n_unsent++;
                ex->requests_deferred++;
        } else if (r == 0 && rq->unsent) {
                rq->unsent = false;
                ex->n_unsent -= ex->n_unsent > 0;
        }
        return r;
}

void requests_retry(struct exec *ex)
{
        size_t left = 0;

        for (struct request *rq = ex->pending.next; rq != &ex->pending; rq = rq->next)
                if (rq->unsent && (left || request_send(ex, rq) < 0))
                        left++;
        ex->n_unsent = left;
}

struct request *request_new(struct exec *ex, Coord__MsgType type,
                            const ProtobufCMessage *msg, request_fn done, void *ctx)
{
        return request_new_sized(ex, type, msg, protobuf_c_message_get_packed_size(msg), done,
                                 ctx);
}

struct request *request_new_sized(struct exec *ex, Coord__MsgType type,
                                  const ProtobufCMessage *msg, size_t len, request_fn done,
                                  void *ctx)
{
        struct request *rq = calloc(1, sizeof(*rq));

        if (!rq)
                return NULL;
        rq->len = len;
        if (rq->len + 64 > (size_t)node_max_frame(ex->node)) {      /* 64: the envelope */
                /* (2a) Never sendable: kept, it would wait forever.  Its callers check
                 * the size first; this is the last guard. */
                log_error("request_too_large", "type=%d bytes=%zu", (int)type, rq->len);
                free(rq);
                return NULL;
        }
        rq->payload = malloc(rq->len ? rq->len : 1);
        if (!rq->payload) {
                free(rq);
                return NULL;
        }
        protobuf_c_message_pack(msg, rq->payload);
        rq->id = ++ex->next_request_id;
        rq->type = type;
        rq->done = done;
        rq->ctx = ctx;
        rq->next = &ex->pending;
        rq->prev = ex->pending.prev;
        ex->pending.prev->next = rq;
        ex->pending.prev = rq;
        /* Not connected: it goes out at the next exec_controller_up(). */
        (void)request_send(ex, rq);
        return rq;
}

void request_free(struct request *rq)
{
        rq->prev->next = rq->next;
        rq->next->prev = rq->prev;
        free(rq->payload);
        free(rq);
}

/* Fire-and-forget requests (EnsureCollections, DropCollections): only logged. */
static void request_logged(struct exec *ex, struct request *rq, const Coord__Envelope *reply)
{
        if (reply->type == COORD__MSG_TYPE__MSG_ERROR) {
                Coord__Error *e = coord__error__unpack(NULL, reply->payload.len, reply->payload.data);
                log_error("controller_request_failed", "type=%d sqlstate=%s message=\"%s\"",
                          (int)rq->type, e ? e->sqlstate : "?", e ? e->message : "?");
                if (e)
                        coord__error__free_unpacked(e, NULL);
        }
}

/* Tell the controller about the built-in relations, which the adapter writes.  User
 * objects are the lifecycle follower's to enact (lifecycle/lifecycle-enact.h): the
 * adapter only commits them to the catalog, and its statements wait until the frontier
 * ring shows an object before writing or reading it (exec_on_frontiers()). */
static int ensure_builtins(struct exec *ex)
{
        const struct acat_item *const *items;
        size_t n = acat_items(ex->cat, &items), k = 0;
        Coord__EnsureCollections msg = COORD__ENSURE_COLLECTIONS__INIT;
        Coord__CollectionSpec *specs, **specp;
        struct request *rq;

        specs = calloc(n, sizeof(*specs));
        specp = calloc(n, sizeof(*specp));
        if (!specs || !specp) {
                free(specs);
                free(specp);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                const struct acat_item *it = items[i];
                if (!it->builtin || coord_gid_is_live(it->gid))
                        continue;       /* a live status relation has no collection */
                coord__collection_spec__init(&specs[k]);
                specs[k].gid = it->gid;
                specs[k].kind = COORD__COLLECTION_KIND__COLLECTION_BUILTIN;
                /* A built-in is born at the first timestamp the oracle can hand out. */
                specs[k].since = oracle_last_write_ts(ex->oracle);
                specp[k] = &specs[k];
                k++;
        }
        msg.n_collections = k;
        msg.collections = specp;
        rq = request_new(ex, COORD__MSG_TYPE__MSG_ENSURE_COLLECTIONS, &msg.base, request_logged, NULL);
        free(specs);
        free(specp);
        return rq ? 0 : -ENOMEM;
}


/* ---- controller link ---- */

static void resync_done(struct exec *ex, struct request *rq, const Coord__Envelope *reply)
{
        Coord__CollectionList *list = NULL;
        struct group *g = ex->groups;

        ex->resyncing = false;
        if (reply->type == COORD__MSG_TYPE__MSG_COLLECTION_LIST)
                list = coord__collection_list__unpack(NULL, reply->payload.len, reply->payload.data);
        if (g && g->ts && !g->rq) {
                /* (4) the group was in flight when the controller went away. */
                bool applied = false;
                for (size_t i = 0; list && i < list->n_collections; i++)
                        if (list->collections[i]->kind == COORD__COLLECTION_KIND__COLLECTION_BUILTIN &&
                            list->collections[i]->upper > g->ts)
                                applied = true;
                if (applied) {
                        log_info("append_recovered", "ts=%llu outcome=applied", (unsigned long long)g->ts);
                        group_complete(ex, g, NULL, NULL);
                } else {
                        /* Not applied: send it again.  It takes a new timestamp, which is
                         * as good -- nothing was acknowledged at the old one. */
                        log_info("append_recovered", "ts=%llu outcome=resend", (unsigned long long)g->ts);
                        if (group_send(ex, g) < 0)
                                log_error("group_resend_failed", "ts=%llu", (unsigned long long)g->ts);
                }
        }
        if (list)
                coord__collection_list__free_unpacked(list, NULL);
        reconcile_maybe(ex);
        groups_kick(ex);
        fence_check(ex);
}

void exec_controller_up(struct exec *ex)
{
        Coord__ListCollections lc = COORD__LIST_COLLECTIONS__INIT;
        struct request *rq, *next;
        struct group *g = ex->groups;

        struct request *last_old;
        bool more;

        ex->controller_up = true;
        streams_lost(ex);       /* a replaced connection may come without a down */
        /* The Append in flight lost its reply with the old connection: find out. */
        if (g && g->rq) {
                request_free(g->rq);
                g->rq = NULL;
                ex->resyncing = true;
        }
        /* Requests still waiting get resent below, after the resync: every collection,
         * then every dataflow (which reads them), go first (they are sent now). */
        last_old = ex->pending.prev;    /* &ex->pending when none waits */
        (void)ensure_builtins(ex);
        /* Resend every request that was waiting (reads are idempotent; Ensure, Drop and
         * CreateDataflows too).  The ones just made went out already, at the tail. */
        more = last_old != &ex->pending;
        for (rq = ex->pending.next; more && rq != &ex->pending; rq = next) {
                next = rq->next;
                more = rq != last_old;
                (void)request_send(ex, rq);
        }
        if (ex->resyncing) {
                if (!request_new(ex, COORD__MSG_TYPE__MSG_LIST_COLLECTIONS, &lc.base, resync_done, NULL))
                        ex->resyncing = false;
        }
        reconcile_maybe(ex);
        groups_kick(ex);
}

/* (9) The controller's connection went (or was replaced): a stream cannot be resent --
 * rows of it reached the client already -- so its statement fails with 58000 and the
 * session goes on.  A read not answered at all is resent at the reconnection. */
static void streams_lost(struct exec *ex)
{
        struct request *rq, *next;

        for (rq = ex->pending.next; rq != &ex->pending; rq = next) {
                struct session *s = rq->ctx;

                next = rq->next;
                if (!rq->streamed)
                        continue;
                request_free(rq);
                if (!s)
                        continue;       /* cancelled already */
                assert(s->stream == rq);
                s->stream = NULL;
                s->pull_out = false;
                s->waiting = false;
                log_info("read_stream_lost", "peer=%s rows_sent=%llu", pgwire_conn_peer(s->c),
                         (unsigned long long)s->rows_out);
                if (!s->gone)
                        send_error(s->c, "58000", "the connection to the controller was lost "
                                   "while the result was being sent (%" PRIu64 " rows sent)",
                                   s->rows_out);
                s->next = SIZE_MAX;
                s->stmt = sql_stmt_free(s->stmt);
                session_resume(s);
        }
}

void exec_controller_down(struct exec *ex)
{
        ex->controller_up = false;
        streams_lost(ex);
}

void exec_on_message(struct exec *ex, const Coord__Envelope *env)
{
        struct request *rq;

        for (rq = ex->pending.next; rq != &ex->pending; rq = rq->next)
                if (rq->id == env->request_id)
                        break;
        if (rq == &ex->pending) {
                log_debug("reply_unmatched", "type=%d request_id=%llu", (int)env->type,
                          (unsigned long long)env->request_id);
                return;
        }
        rq->keep = false;
        rq->done(ex, rq, env);
        if (!rq->keep)
                request_free(rq);
}

void exec_status(struct exec *ex, Coord__StatusReply *reply)
{
        reply->catalog_seq = catalog_last_seq(ex->store);
}
