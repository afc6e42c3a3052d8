/* lifecycle-duty.c -- the duty lease: which follower of a fleet enacts and publishes.
 *
 * NOTES
 * (7) A fleet of followers (--instance-id) follows one catalog; the holder of the
 *     lease LEASE_KEY_LIFECYCLE_DUTY enacts objects on the controller, publishes read
 *     protection and allows compaction; the others follow, keep their state, and claim
 *     the lease when it lapses (lifecycle.md, "A fleet of followers", promises F1-F5).
 *     - Claim with supersede, holder "lifecycle-<id>": this process holds its
 *       instance's lock, so an earlier life of the same id is dead and a restart takes
 *       the lease back at once (lease.c note 4) instead of waiting out its ttl.
 *     - Act only once the state has applied the claim's own catalog commit (reply.seq):
 *       everything a previous holder enacted was built from a state older than that
 *       commit (next point), so the complete set sent at activation covers it.
 *     - Count the lease lost ttl * 3/4 after the request that last confirmed it was
 *       SENT (the adapter's expiry starts later, when it handles it; one clock, one
 *       machine).  lifecycle_duty_active() checks this before every send of enactment,
 *       publication or AllowCompaction, so whatever this follower sends was built
 *       before the adapter could see the lease lapse, hence before any later claim.
 *     - Every message carries the epoch (node_set_fence()): the controller refuses
 *       lower epochs once it saw a higher one (controller-server-fence.c note 1), the
 *       adapter refuses a publication not of the live epoch (adapter.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lease/lease.h"
#include "lifecycle-enact.h"
#include "lifecycle-internal.h"
#include "log.h"
#include "node/node.h"
#include "util.h"

#define DUTY_REQUEST_BASE (1ull << 61)  /* apart from publication's and enactment's ids */
#define DUTY_PENDING_MS   20u           /* re-check while a claim waits to be sent or acted on */

static uint64_t ttl_ns(const struct lifecycle *lc)
{
        return lc->duty_ttl_ms * NS_PER_MS;
}

static bool duty_gate(void *arg)
{
        return lifecycle_duty_active(arg);
}

void lifecycle_duty_init(struct lifecycle *lc, uint32_t instance_id, uint64_t ttl_ms)
{
        snprintf(lc->duty_holder, sizeof(lc->duty_holder), "lifecycle-%u", instance_id);
        lc->duty_ttl_ms = ttl_ms;
        lc_enact_set_gate(lc->enact, duty_gate, lc);
}

void lifecycle_duty_lose(struct lifecycle *lc, const char *why)
{
        if (!lc->duty_epoch)
                return;
        log_warn("duty_lost", "holder=%s epoch=%" PRIu64 " why=%s active=%d", lc->duty_holder,
                 lc->duty_epoch, why, lc->duty_active);
        lc->duty_epoch = 0;
        lc->duty_active = false;
        lc->duty_lost++;
        node_set_fence(lc->node, 0);
        if (lc->in_flight)
                lifecycle_publication_failed(lc, "the duty lease was lost", false);
}

bool lifecycle_duty_active(struct lifecycle *lc)
{
        if (lc->duty_active && now_ns() >= lc->duty_deadline_ns)
                lifecycle_duty_lose(lc, "expired");
        return lc->duty_active;
}

/* Note 7: the claim's commit is in the state: send the controller everything. */
static void duty_activate(struct lifecycle *lc)
{
        lc->duty_active = true;
        lc->duty_takeovers++;
        node_set_fence(lc->node, lc->duty_epoch);
        log_info("duty_taken", "holder=%s epoch=%" PRIu64 " claim_seq=%" PRIu64 " state_seq=%" PRIu64,
                 lc->duty_holder, lc->duty_epoch, lc->duty_claim_seq, lc_state_seq(lc->state));
        lc_enact_resync(lc->enact);     /* in parts; the permissions after the last */
}

static void duty_send(struct lifecycle *lc, Coord__MsgType type)
{
        Coord__LeaseClaim c = COORD__LEASE_CLAIM__INIT;
        Coord__LeaseRenew rn = COORD__LEASE_RENEW__INIT;
        const ProtobufCMessage *m;
        uint64_t id = DUTY_REQUEST_BASE + ++lc->duty_requests;

        if (type == COORD__MSG_TYPE__MSG_LEASE_CLAIM) {
                c.key = (char *)LEASE_KEY_LIFECYCLE_DUTY;
                c.holder = lc->duty_holder;
                c.ttl_ms = (uint32_t)lc->duty_ttl_ms;
                c.supersede = true;
                m = &c.base;
        } else {
                rn.key = (char *)LEASE_KEY_LIFECYCLE_DUTY;
                rn.holder = lc->duty_holder;
                rn.epoch = lc->duty_epoch;
                m = &rn.base;
        }
        if (node_send(lc->node, COORD__ROLE__ROLE_ADAPTER, type, id, m) < 0)
                return;
        lc->duty_request_id = id;
        lc->duty_request_type = type;
        lc->duty_sent_ns = now_ns();
}

static void duty_tick(struct loop *l, void *userdata)
{
        struct lifecycle *lc = userdata;
        uint64_t next_ms = lc->duty_ttl_ms / 4 ? lc->duty_ttl_ms / 4 : 1;

        lc->duty_timer = NULL;
        (void)lifecycle_duty_active(lc);                /* expiry by our clock */
        if (lc->duty_request_id && now_ns() - lc->duty_sent_ns > ttl_ns(lc))
                lc->duty_request_id = 0;                /* its answer is lost */
        if (lc->duty_epoch && !lc->duty_request_id && now_ns() - lc->duty_sent_ns >= ttl_ns(lc) / 4)
                duty_send(lc, COORD__MSG_TYPE__MSG_LEASE_RENEW);        /* no-op when not connected */
        else if (!lc->duty_epoch && !lc->duty_request_id) {
                if (lc->loaded && node_peer_connected(lc->node, COORD__ROLE__ROLE_ADAPTER))
                        duty_send(lc, COORD__MSG_TYPE__MSG_LEASE_CLAIM);
                else
                        next_ms = DUTY_PENDING_MS;      /* claim as soon as loaded and connected */
        }
        if (lc->duty_epoch && !lc->duty_active) {
                if (lc_state_seq(lc->state) >= lc->duty_claim_seq && now_ns() < lc->duty_deadline_ns)
                        duty_activate(lc);
                else
                        next_ms = DUTY_PENDING_MS;
        }
        lifecycle_duty_arm(lc, next_ms);
}

void lifecycle_timer_arm(struct lifecycle *lc, struct loop_timer **t, uint64_t ms, loop_timer_fn fn,
                         const char *what)
{
        int r;

        if (*t)
                return;
        r = loop_timer_add(node_loop(lc->node), ms * NS_PER_MS, fn, lc, t);
        if (r < 0) {
                *t = NULL;
                log_error_errno(r, "timer_failed", "what=%s", what);
        }
}

void lifecycle_timer_stop(struct lifecycle *lc, struct loop_timer **t)
{
        loop_timer_cancel(node_loop(lc->node), *t);
        *t = NULL;
}

void lifecycle_duty_arm(struct lifecycle *lc, uint64_t ms)
{
        lifecycle_timer_arm(lc, &lc->duty_timer, ms, duty_tick, "duty");
}

bool lifecycle_duty_reply(struct lifecycle *lc, const Coord__Envelope *env)
{
        Coord__LeaseReply *r;
        int type = lc->duty_request_type;

        if (!lc->duty_request_id || env->request_id != lc->duty_request_id)
                return env->request_id >= DUTY_REQUEST_BASE && env->request_id < (1ull << 62);
        lc->duty_request_id = 0;
        if (env->type != COORD__MSG_TYPE__MSG_LEASE_REPLY) {
                log_warn("duty_request_failed", "op=%s type=%d",
                         type == COORD__MSG_TYPE__MSG_LEASE_CLAIM ? "claim" : "renew", (int)env->type);
                if (type == COORD__MSG_TYPE__MSG_LEASE_RENEW)
                        lifecycle_duty_lose(lc, "renew_failed");
                return true;
        }
        r = coord__lease_reply__unpack(NULL, env->payload.len, env->payload.data);
        if (!r)
                return true;
        if (type == COORD__MSG_TYPE__MSG_LEASE_CLAIM) {
                if (r->status == COORD__LEASE_REPLY__STATUS__OK) {
                        lc->duty_epoch = r->epoch;
                        lc->duty_claim_seq = r->seq;
                        lc->duty_active = false;
                        lc->duty_claims++;
                        lc->duty_deadline_ns = lc->duty_sent_ns + ttl_ns(lc) - ttl_ns(lc) / 4;
                        log_info("duty_claimed", "holder=%s epoch=%" PRIu64 " seq=%" PRIu64,
                                 lc->duty_holder, r->epoch, r->seq);
                        lifecycle_timer_stop(lc, &lc->duty_timer);
                        lifecycle_duty_arm(lc, 0);      /* activate as soon as the state can */
                } else {
                        lc->duty_busy++;
                        snprintf(lc->duty_seen_holder, sizeof(lc->duty_seen_holder), "%s",
                                 r->holder ? r->holder : "");
                }
        } else if (r->epoch == lc->duty_epoch && r->status == COORD__LEASE_REPLY__STATUS__OK) {
                lc->duty_deadline_ns = lc->duty_sent_ns + ttl_ns(lc) - ttl_ns(lc) / 4;
        } else if (r->status != COORD__LEASE_REPLY__STATUS__OK) {
                lifecycle_duty_lose(lc, "fenced");
                lc->duty_fenced++;
        }
        coord__lease_reply__free_unpacked(r, NULL);
        return true;
}
