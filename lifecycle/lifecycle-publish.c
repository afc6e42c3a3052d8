/* lifecycle-publish.c -- the follower publishes read protection: the tick's proposal
 * to the adapter as one PublishProtection, AllowCompaction to the controller once the
 * adapter committed it (lifecycle-internal.h; main() in lifecycle.c).
 *
 * The note keeps the number it had in lifecycle.c.
 *
 * NOTES ON THE DESIGN
 *
 * (2) Publication, every --publication-interval-ms.  At most one in flight: tick
 *     (lifecycle-state.h), send ONE PublishProtection to the adapter; on its Ok
 *     (Ok.upper = the commit's seq) the values become committed and AllowCompaction
 *     with the changed bounds goes to the controller -- never before (I2).  On an
 *     Error, a timeout, the adapter's disconnection or the duty lease's loss the
 *     proposal is abandoned (lc_state_abandon(): the proposed values back to the
 *     committed ones).  Only the adapter's refusal (Error) also rebuilds the state from
 *     the catalog: it says the state and the catalog disagree.  After the others the
 *     outcome is unknown, and the log decides it: a publication that did commit comes
 *     back as its log entry, applied with max (lifecycle-state.c note 2), and until
 *     then the follower proposes no less than what it knows committed (I1, I3 checked
 *     by the adapter again).  A controller that (re)connects gets every committed
 *     bound once (it keeps permissions in memory only).  A tick looks at TICK_LIMIT
 *     dirty objects at most (lifecycle-state.c note 9); while it leaves some, the next
 *     tick comes TICK_AGAIN_MS after the Ok (tick_soon()), so a setup's or a reload's
 *     objects go in publications of a bounded size, one after the other.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord.pb-c.h"
#include "hist.h"
#include "killpoint.h"
#include "lifecycle-internal.h"
#include "lifecycle-state.h"
#include "log.h"
#include "loop/loop.h"
#include "node/node.h"
#include "probes.h"
#include "util.h"

/* A publication not answered this long is abandoned (2). */
#define PUBLISH_TIMEOUT_MS 10000u

/* ---- publication (2) ---- */

int lifecycle_send_allow(struct lifecycle *lc, const struct lc_publication *p)
{
        Coord__AllowCompaction m = COORD__ALLOW_COMPACTION__INIT;
        Coord__CatalogBoundRecord *recs, **ptrs;
        size_t cap = p->n_bounds < ALLOW_CHUNK ? p->n_bounds : ALLOW_CHUNK;
        int r = 0;

        if (!p->n_bounds || !lifecycle_duty_active(lc))
                return 0;       /* the holder's (lifecycle-duty.c note 7) */
        recs = calloc(cap, sizeof(*recs));
        ptrs = calloc(cap, sizeof(*ptrs));
        if (!recs || !ptrs) {
                free(recs);
                free(ptrs);
                return -ENOMEM;
        }
        for (size_t off = 0; off < p->n_bounds && r == 0; off += cap) {
                size_t n = p->n_bounds - off < cap ? p->n_bounds - off : cap;

                for (size_t i = 0; i < n; i++) {
                        coord__catalog_bound_record__init(&recs[i]);
                        recs[i].gid = p->bounds[off + i].gid;
                        recs[i].bound = p->bounds[off + i].bound;
                        ptrs[i] = &recs[i];
                }
                m.sinces = ptrs;
                m.n_sinces = n;
                r = node_send(lc->node, COORD__ROLE__ROLE_CONTROLLER,
                              COORD__MSG_TYPE__MSG_ALLOW_COMPACTION, ++lc->next_request_id, &m.base);
                if (r == 0)
                        lc->allow_sent++;
        }
        free(recs);
        free(ptrs);
        return r;
}

void lifecycle_send_allow_all(struct lifecycle *lc)
{
        struct lc_publication all = { 0 };
        uint64_t start = now_ns();
        int r;

        if (!lc->loaded)
                return;
        r = lc_state_all_bounds(lc->state, &all);
        if (r == 0)
                r = lifecycle_send_allow(lc, &all);
        if (r < 0 && r != -ENOTCONN)
                log_warn_errno(r, "allow_compaction_failed", "what=all");
        else
                log_info("allow_compaction_resync", "bounds=%zu took_us=%llu", all.n_bounds,
                         (unsigned long long)((now_ns() - start) / 1000));
        lc_publication_done(&all);
}

void lifecycle_publication_failed(struct lifecycle *lc, const char *why, bool reload)
{
        lc->in_flight = false;
        lc->pub_errors++;
        lc_state_abandon(lc->state);
        log_warn("publication_failed", "why=\"%s\" records=%zu action=%s", why,
                 lc->pub.n_bounds + lc->pub.n_reqs, reload ? "reload" : "abandon");
        if (reload && lc->catalog)
                (void)lifecycle_reload(lc);
}

int lifecycle_publish(struct lifecycle *lc)
{
        Coord__PublishProtection m = COORD__PUBLISH_PROTECTION__INIT;
        Coord__CatalogBoundRecord *b = NULL, **bp = NULL;
        Coord__Requirement *q = NULL, **qp = NULL;
        struct lc_publication *p = &lc->pub;
        int r;

        if (!lifecycle_duty_active(lc))
                return 0;       /* the holder's (lifecycle-duty.c note 7) */
        r = lc_state_tick(lc->state, p);
        if (r < 0)
                return r;
        lc->tick_left = p->left;
        if (!p->n_bounds && !p->n_reqs)
                return 0;
        b = calloc(p->n_bounds + 1, sizeof(*b));
        bp = calloc(p->n_bounds + 1, sizeof(*bp));
        q = calloc(p->n_reqs + 1, sizeof(*q));
        qp = calloc(p->n_reqs + 1, sizeof(*qp));
        if (!b || !bp || !q || !qp) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < p->n_bounds; i++) {
                coord__catalog_bound_record__init(&b[i]);
                b[i].gid = p->bounds[i].gid;
                b[i].bound = p->bounds[i].bound;
                bp[i] = &b[i];
        }
        for (size_t i = 0; i < p->n_reqs; i++) {
                coord__requirement__init(&q[i]);
                q[i].consumer = p->reqs[i].consumer;
                q[i].input = p->reqs[i].input;
                q[i].frontier = p->reqs[i].frontier;
                qp[i] = &q[i];
        }
        m.based_on_seq = lc_state_seq(lc->state);
        m.bounds = bp;
        m.n_bounds = p->n_bounds;
        m.requirements = qp;
        m.n_requirements = p->n_reqs;
        lc->pub_bytes = coord__publish_protection__get_packed_size(&m);
        lc->pub_request_id = ++lc->next_request_id;
        KILLPOINT("publication.before_send");
        r = node_send(lc->node, COORD__ROLE__ROLE_ADAPTER, COORD__MSG_TYPE__MSG_PUBLISH_PROTECTION,
                      lc->pub_request_id, &m.base);
        if (r < 0)
                goto out;
        lc->in_flight = true;
        lc->pub_sent_ms = now_ms();
        lc->pub_sent_ns = now_ns();
        lc->last_bounds = p->n_bounds;
        lc->last_reqs = p->n_reqs;
        lc->last_records = p->n_bounds + p->n_reqs;
        lc->last_bytes = lc->pub_bytes;
        lc->last_touched = p->touched;
        COORD_LIFECYCLE_PUBLISH(m.based_on_seq, (unsigned)p->n_bounds, (unsigned)p->n_reqs,
                                (unsigned)lc->pub_bytes);
out:
        free(b);
        free(bp);
        free(q);
        free(qp);
        if (r < 0)
                lc_state_abandon(lc->state);
        return r;
}

static void tick(struct loop *l, void *userdata);

/* (2) The last tick left dirty objects (TICK_LIMIT): the next one now, not an interval
 * later.  Only while nothing is in flight: the Ok brings it otherwise. */
static void tick_soon(struct lifecycle *lc)
{
        if (!lc->tick_left || lc->in_flight)
                return;
        loop_timer_cancel(node_loop(lc->node), lc->tick_timer);
        lc->tick_timer = NULL;
        if (loop_timer_add(node_loop(lc->node), TICK_AGAIN_MS * NS_PER_MS, tick, lc,
                           &lc->tick_timer) < 0) {
                lc->tick_timer = NULL;
                lifecycle_tick_arm(lc);
                return;
        }
        lc->ticks_soon++;
}

static void tick(struct loop *l, void *userdata)
{
        struct lifecycle *lc = userdata;
        int r;

        lc->tick_timer = NULL;
        lc->tick_left = 0;      /* set again by a tick that runs now */
        if (lc->in_flight && now_ms() - lc->pub_sent_ms > PUBLISH_TIMEOUT_MS)
                lifecycle_publication_failed(lc, "no answer from the adapter", false);
        if (!lc->in_flight && lc->loaded && node_peer_connected(lc->node, COORD__ROLE__ROLE_ADAPTER)) {
                lifecycle_follow(lc);   /* cheap when nothing is new; a safety net */
                r = lifecycle_publish(lc);
                if (r < 0 && r != -ENOTCONN)
                        log_warn_errno(r, "publication_failed", "what=send");
        }
        lifecycle_tick_arm(lc);
        tick_soon(lc);          /* nothing in flight, yet dirty objects left */
}

void lifecycle_tick_arm(struct lifecycle *lc)
{
        int r = loop_timer_add(node_loop(lc->node), lc->interval_ms * NS_PER_MS, tick, lc,
                               &lc->tick_timer);
        if (r < 0) {
                lc->tick_timer = NULL;
                log_error_errno(r, "timer_failed", "what=publication");
        }
}

void lifecycle_publish_reply(struct lifecycle *lc, const Coord__Envelope *env)
{
        if (env->type == COORD__MSG_TYPE__MSG_OK) {
                Coord__Ok *ok = coord__ok__unpack(NULL, env->payload.len, env->payload.data);

                lc->last_commit_seq = ok ? ok->upper : 0;
                if (ok)
                        coord__ok__free_unpacked(ok, NULL);
                lc->in_flight = false;
                lc->publications++;
                hist_record(&lc->pub_hist, (now_ns() - lc->pub_sent_ns) / 1000);
                lc->records_total += lc->pub.n_bounds + lc->pub.n_reqs;
                lc->bytes_total += lc->pub_bytes;
                lc_state_committed(lc->state, &lc->pub);
                log_debug("publication_committed", "seq=%llu bounds=%zu requirements=%zu bytes=%zu",
                          (unsigned long long)lc->last_commit_seq, lc->pub.n_bounds, lc->pub.n_reqs,
                          lc->pub_bytes);
                KILLPOINT("publication.after_commit");  /* committed, not enacted */
                /* Only now may the controller compact (I2). */
                if (lifecycle_send_allow(lc, &lc->pub) < 0)
                        log_debug("allow_compaction_deferred", "reason=controller_down");
                tick_soon(lc);
                return;
        }
        if (env->type == COORD__MSG_TYPE__MSG_ERROR) {
                Coord__Error *e = coord__error__unpack(NULL, env->payload.len, env->payload.data);
                char why[256];

                snprintf(why, sizeof(why), "%s: %s", e && e->sqlstate ? e->sqlstate : "?",
                         e && e->message ? e->message : "undecodable error");
                if (e)
                        coord__error__free_unpacked(e, NULL);
                lifecycle_publication_failed(lc, why, true);
        }
}
