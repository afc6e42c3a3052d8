/* controller-server-out.c -- the output gate of coord-controller: every reply and every
 * ring record leaves through it, held until the appends it may derive from are durable;
 * and the replies.
 *
 * Contract: controller-server.h; what the server's files share:
 * controller-server-internal.h.  The notes are numbered across the server
 * (controller-server.c lists where each stands).
 *
 * NOTES ON THE DESIGN
 *
 * (16) The output gate (group commit, issue 6).  An append's WriteBatch is visible in
 *     this process at once but durable only after the syncer's next WAL sync, so every
 *     reply and ring publication or forget goes through server_out_send() /
 *     server_ring_set() / server_ring_forget(): sent at once only while nothing is held
 *     and storage_pending_seq() == 0, else held in s->out tagged with the last unsynced
 *     append's seq (never less than the tag before it); server_out_release() sends, in
 *     order, those tagged at or below storage_durable_seq().  So:
 *       G1 nothing computed from an unsynced append (its Ok, an upper, a peek's rows, a
 *          listing, coord_frontiers' rows) is shown before the sync that covers it;
 *       G2 replies and ring records leave in the order they were made ((1) holds);
 *       G3 what is made while nothing is unsynced or held leaves at once (a synced write
 *          makes every append before it durable too, and then releases).
 *     s->rc is what the ring WILL show.  Held replies to a lost peer are dropped.  A
 *     failed sync is a failed write (8): server_storage_recover() answers held replies
 *     58030 and drops held ring records (gids unknown in s->rc, for ring_sync_all()).
 *     Peeks are held like everything else; coordctl status is not gated.
 */
#include "controller-server.h"
#include "controller-server-internal.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller-storage.h"
#include "ring/fring.h"
#include "hist.h"
#include "killpoint.h"
#include "log.h"
#include "loop/loop.h"
#include "node/node.h"
#include "probes.h"
#include "row/row.h"
#include "util.h"

/* ---- The output gate (16) ------------------------------------------------------------ */

/* The tag an entry made now gets: the last unsynced append's sequence number, never
 * below the newest held entry's (G2); 0 when it may leave at once (G3). */
uint64_t server_out_tag(const struct cserver *s)
{
        uint64_t t = s->st ? storage_pending_seq(s->st) : 0;

        if (s->n_out > s->out_head && s->out[s->n_out - 1].seq > t)
                t = s->out[s->n_out - 1].seq;
        return t;
}

bool server_out_holding(const struct cserver *s)
{
        return server_out_tag(s) != 0;
}

void server_out_ent_done(struct out_ent *o)
{
        free(o->buf);
        o->buf = NULL;
}

int server_out_push(struct cserver *s, const struct out_ent *o)
{
        size_t n;
        int r;

        if (s->out_head > 0 && s->out_head == s->n_out)
                s->out_head = s->n_out = 0;
        if (s->n_out == s->cap_out && s->out_head > 0) {
                memmove(s->out, &s->out[s->out_head], (s->n_out - s->out_head) * sizeof(*s->out));
                s->n_out -= s->out_head;
                s->out_head = 0;
        }
        r = GROW_ARRAY(s->out, s->cap_out, s->n_out + 1);
        if (r < 0)
                return r;
        assert(o->seq > 0);
        assert(s->n_out == s->out_head || s->out[s->n_out - 1].seq <= o->seq);
        s->out[s->n_out++] = *o;
        s->out[s->n_out - 1].held_ns = now_ns();
        s->out[s->n_out - 1].append_t0_ns = o->kind == OUT_MSG ? s->append_t0_ns : 0;
        if (o->kind == OUT_MSG)
                s->append_t0_ns = 0;
        n = s->n_out - s->out_head;
        if (n > s->out_max)
                s->out_max = n;
        return 0;
}

/* -ENOTCONN: the peer went away; its next life resyncs.  Anything else (a peer that
 * stopped reading) is worth a line, rate-limited. */
static void send_failed(struct cserver *s, int r, node_peer_t to, int type, uint64_t rid)
{
        if (r < 0 && r != -ENOTCONN && server_ratelimit_ok(&s->rl_input, now_ms()))
                log_warn_errno(r, "reply_failed", "role=%s type=%d request_id=%llu",
                               node_role_name(node_peer_role(to)), type, (unsigned long long)rid);
}

/* An error reply straight to the peer: only from the gate itself, which keeps the
 * order (the entry it replaces is the head). */
static void send_error_now(struct cserver *s, node_peer_t to, uint64_t rid, const char *sqlstate,
                           const char *message)
{
        Coord__Error m = COORD__ERROR__INIT;

        m.sqlstate = (char *)sqlstate;
        m.message = (char *)message;
        s->errors_sent++;
        send_failed(s, node_send(s->node, to, COORD__MSG_TYPE__MSG_ERROR, rid, &m.base), to,
                    COORD__MSG_TYPE__MSG_ERROR, rid);
}

static void out_emit(struct cserver *s, struct out_ent *o)
{
        char msg[160];
        int r;

        switch (o->kind) {
        case OUT_MSG:
                r = node_send_raw(s->node, o->to, o->type, o->rid, o->buf, o->len);
                if (r == -EMSGSIZE && o->type == COORD__MSG_TYPE__MSG_PEEK_RESULT) {
                        snprintf(msg, sizeof(msg), "the result of the read (%zu bytes) is larger "
                                 "than a frame", o->len);
                        send_error_now(s, o->to, o->rid, "54000", msg);
                } else {
                        send_failed(s, r, o->to, o->type, o->rid);
                }
                break;
        case OUT_RING_SET:
                r = s->ring ? fring_publish(s->ring, &o->rec) : 0;
                if (r < 0) {
                        struct gent *e = gmap_find(&s->rc, o->rec.id);

                        /* Not shown, so the next change of it tries again. */
                        if (e && e->a == o->rec.upper && e->b == o->rec.since &&
                            e->c == o->rec.physical_since)
                                gmap_remove(&s->rc, o->rec.id);
                        if (server_ratelimit_ok(&s->rl_storage, now_ms()))
                                log_warn_errno(r, "ring_publish_failed", "gid=%llu",
                                               (unsigned long long)o->rec.id);
                }
                break;
        case OUT_RING_FORGET:
                r = s->ring ? fring_forget(s->ring, o->rec.id) : 0;
                if (r < 0 && r != -ENOENT)
                        log_warn_errno(r, "ring_forget_failed", "gid=%llu",
                                       (unsigned long long)o->rec.id);
                break;
        }
        server_out_ent_done(o);
}

/* Send, in order, every held entry that storage_durable_seq() covers (G1, G2). */
void server_out_release(struct cserver *s)
{
        uint64_t durable = s->st ? storage_durable_seq(s->st) : 0, now = 0;
        unsigned msgs = 0, ring = 0;

        fring_hold_wakes(s->ring);      /* one wake-up for what this release publishes */
        while (s->out_head < s->n_out && s->out[s->out_head].seq <= durable) {
                struct out_ent *o = &s->out[s->out_head++];

                if (!now)
                        now = now_ns();
                if (now - o->held_ns > s->out_max_held_ns)
                        s->out_max_held_ns = now - o->held_ns;
                if (o->kind == OUT_MSG)
                        msgs++;
                else
                        ring++;
                if (o->append_t0_ns)
                        hist_record(&s->append_hist, (now - o->append_t0_ns) / 1000);
                out_emit(s, o);
        }
        fring_release_wakes(s->ring);
        if (s->out_head == s->n_out)
                s->out_head = s->n_out = 0;
        /* G1: what is left waits for a sync not done yet; G2: tags ascend (both ends). */
        assert(s->out_head == s->n_out || s->out[s->out_head].seq > durable);
        assert(s->out_head == s->n_out || s->out[s->out_head].seq <= s->out[s->n_out - 1].seq);
        if (msgs || ring)
                COORD_CONTROLLER_RELEASE(durable, msgs, ring);
}

/* A reply: at once, or held behind the unsynced appends (16).  -EMSGSIZE (a payload
 * larger than a frame) only when sent at once; a held one that is too large is
 * answered with 54000 when released. */
/* The epoch of role's connection: counts its changes (18b). */
uint64_t server_peer_epoch(const struct cserver *s, node_peer_t peer)
{
        return peer < ELEMENTSOF(s->peer_epochs) ? s->peer_epochs[peer] : 0;
}

int server_out_send(struct cserver *s, node_peer_t to, Coord__MsgType type, uint64_t rid,
                    const ProtobufCMessage *payload)
{
        struct out_ent o = { .kind = OUT_MSG, .to = to, .type = type, .rid = rid };
        int r;

        if (s->msg_stale && to == s->msg_from) {
                /* A reply to a message of a connection that is gone (18b). */
                s->stale_replies++;
                return 0;
        }
        o.seq = server_out_tag(s);
        if (o.seq == 0) {
                /* G2, G3: nothing is held, nothing unsynced is shown by this. */
                assert(s->out_head == s->n_out);
                return node_send(s->node, to, type, rid, payload);
        }
        o.len = protobuf_c_message_get_packed_size(payload);
        o.buf = malloc(o.len ? o.len : 1);
        if (!o.buf)
                return -ENOMEM;
        protobuf_c_message_pack(payload, o.buf);
        r = server_out_push(s, &o);
        if (r < 0) {
                server_out_ent_done(&o);
                return r;
        }
        s->out_held_msgs++;
        server_out_release(s);
        return 0;
}

/* The gate after a failed sync or write (8), before the reopen: every held reply is
 * answered with 58030 (nothing of what it answered may have reached the disk), every
 * held ring record dropped, its gid marked unknown in s->rc for ring_sync_all(). */
void server_out_fail(struct cserver *s, int err)
{
        size_t n_msgs = 0, n_ring = 0;

        for (size_t i = s->out_head; i < s->n_out; i++) {
                struct out_ent *o = &s->out[i];

                if (o->kind == OUT_MSG) {
                        send_error_now(s, o->to, o->rid,
                                       err == -ENOSPC || err == -EDQUOT ? "53100" : "58030",
                                       "the controller's storage "
                                       "failed before this answer was durable; what it "
                                       "answered may or may not have been written");
                        n_msgs++;
                } else {
                        struct gent *e = gmap_reserve(&s->rc, 1) == 0 ? gmap_put(&s->rc, o->rec.id)
                                                                    : gmap_find(&s->rc, o->rec.id);

                        if (e)
                                e->a = e->b = e->c = UINT64_MAX;        /* unknown */
                        n_ring++;
                }
                server_out_ent_done(o);
        }
        s->out_head = s->n_out = 0;
        s->out_failed += n_msgs;
        if (n_msgs || n_ring)
                log_error("held_output_failed", "replies=%zu ring_records=%zu", n_msgs, n_ring);
}

/* The connection to peer is gone: its held replies go with it (16). */
void server_out_drop_role(struct cserver *s, node_peer_t peer)
{
        size_t k = s->out_head;

        for (size_t i = s->out_head; i < s->n_out; i++) {
                if (s->out[i].kind == OUT_MSG && s->out[i].to == peer) {
                        server_out_ent_done(&s->out[i]);
                        continue;
                }
                s->out[k++] = s->out[i];
        }
        s->n_out = k;
        if (s->out_head == s->n_out)
                s->out_head = s->n_out = 0;
}

/* storage's syncer thread finished a sync (in the loop, through s->sync_waker). */
void server_on_synced(struct loop *l, uint64_t count, void *userdata)
{
        struct cserver *s = userdata;
        int r;

        if (!s->st)
                return;
        r = storage_sync_poll(s->st);
        if (r < 0) {
                log_error_errno(r, "storage_sync_failed", "why=\"%s\"", storage_last_error());
                server_storage_recover(s);
                return;
        }
        if (s->out_head < s->n_out)
                KILLPOINT("append.before_reply");       /* synced, held replies not sent */
        server_out_release(s);
}

/* From the syncer thread. */
static void sync_notify(void *userdata)
{
        struct cserver *s = userdata;

        loop_waker_wake(s->sync_waker);
}

/* After every storage_open(): the syncer of (2), unless --append-sync=loop. */
int server_storage_attach(struct cserver *s)
{
        int r;

        if (s->cfg.append_sync != CSERVER_APPEND_SYNC_THREAD)
                return 0;
        if (s->cfg.test_sync_hold_file) {
                r = storage_debug_sync_hold_file(s->st, s->cfg.test_sync_hold_file);
                if (r < 0)
                        return r;
        }
        return storage_syncer_start(s->st, sync_notify, s);
}

/* ---- Replies ------------------------------------------------------------------------ */

void server_send_logged(struct cserver *s, node_peer_t to, Coord__MsgType type, uint64_t rid,
                        const ProtobufCMessage *payload)
{
        send_failed(s, server_out_send(s, to, type, rid, payload), to, type, rid);
}

void server_reply_error(struct cserver *s, node_peer_t to, uint64_t rid, const struct row_error *e)
{
        Coord__Error m = COORD__ERROR__INIT;

        m.sqlstate = (char *)(e->sqlstate[0] ? e->sqlstate : "XX000");
        m.message = (char *)e->message;
        m.detail = (char *)e->detail;
        m.hint = (char *)e->hint;
        s->errors_sent++;
        log_debug("request_failed", "role=%s request_id=%llu sqlstate=%s message=\"%s\"",
                  node_role_name(node_peer_role(to)), (unsigned long long)rid, m.sqlstate, m.message);
        server_send_logged(s, to, COORD__MSG_TYPE__MSG_ERROR, rid, &m.base);
}

void server_reply_result(struct cserver *s, node_peer_t to, uint64_t rid, int r,
                         const struct row_error *e)
{
        if (r < 0)
                server_reply_error(s, to, rid, e);
        else
                server_reply_ok(s, to, rid, NULL, 0, 0);
}

void server_reply_ok(struct cserver *s, node_peer_t to, uint64_t rid, uint64_t *counts, size_t n,
                     uint64_t upper)
{
        server_reply_ok_failed(s, to, rid, counts, n, upper, NULL, 0, NULL, 0);
}

void server_reply_ok_failed(struct cserver *s, node_peer_t to, uint64_t rid, uint64_t *counts,
                            size_t n, uint64_t upper, Coord__WriteFailure **failures,
                            size_t n_failures, Coord__WriteRows **returned, size_t n_returned)
{
        Coord__Ok m = COORD__OK__INIT;

        m.returned = returned;
        m.n_returned = n_returned;
        m.counts = counts;
        m.n_counts = n;
        m.upper = upper;
        m.failures = failures;
        m.n_failures = n_failures;
        server_send_logged(s, to, COORD__MSG_TYPE__MSG_OK, rid, &m.base);
}

void server_reply_malformed(struct cserver *s, node_peer_t to, const Coord__Envelope *env)
{
        struct row_error e;

        if (server_ratelimit_ok(&s->rl_input, now_ms()))
                log_warn("malformed_payload", "role=%s type=%d request_id=%llu bytes=%zu suppressed=%u",
                         node_role_name(node_peer_role(to)), (int)env->type, (unsigned long long)env->request_id,
                         env->payload.len, s->rl_input.suppressed);
        row_error_set(&e, -EBADMSG, "XX000", "malformed %s payload (%zu bytes)",
                      server_msg_name(env->type), env->payload.len);
        server_reply_error(s, to, env->request_id, &e);
}
