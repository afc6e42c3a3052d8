/* lifecycle-refresh.c -- refresh leases: every follower of a fleet may do a REFRESH
 * view's refresh, each under a lease of its own (issue 33 item 2).
 *
 * NOTES
 * (8) A refresh view is installed with refresh_leased (lifecycle-enact.c): the
 *     controller writes its pending refresh U (its durable upper) only when a follower
 *     releases it (controller-server-refresh.c note 1).  Any follower, holder of the
 *     duty or not, works LC_REFRESH_JOBS refreshes at once (one job per view, each job
 *     its own lease and requests), at every REFRESH_TICK_MS:
 *     - a view whose upper U is due (U <= the wall clock) is claimed: lease
 *       refresh/<gid>, holder "lifecycle-<id>", the duty's ttl, with supersede (a
 *       restarted follower's own lease; lease.c note 4).  BUSY: another follower has
 *       it; this one skips the view until that lease could lapse.
 *     - The claim answers the lease's epoch e, its version v (the refreshes committed)
 *       and its last commit id c (the refresh time committed last).  If the refresh
 *       before U, P = refresh_prev(U) (one the view has had: P >= its first refresh),
 *       is above c, P was written and never committed (its holder died in between):
 *       commit P first (reconcile), claim again at the next tick.  Else release U at the
 *       controller with e, wait until the frontier ring shows the upper past U (the
 *       refresh is durable), and commit id U at version v: one catalog transaction,
 *       version v + 1, the lease released (P4).
 *     - Fencing: a commit of a lapsed or superseded epoch is FENCED (P3) and the
 *       controller refuses a release of an epoch below one it saw (55000); this
 *       follower drops the job.  A commit whose answer is lost is sent again with the
 *       same id (P5).
 *     - A view with nothing due whose refresh P (the last its upper passed) is above
 *       the lease's last commit id as the catalog shows it (lifecycle-enact.c note 4),
 *       2 ttl after P's time, is claimed too, to commit P: so the last refresh of a
 *       schedule is reconciled as well (unreconciled()).
 *     So each refresh time is committed once, in schedule order, the lease's version
 *     counting them.  A tick looks at PICK_BUDGET views at most, round robin, so a
 *     refresh starts up to (views / PICK_BUDGET) ticks after its time.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lease/lease.h"
#include "lifecycle-enact.h"
#include "lifecycle-internal.h"
#include "killpoint.h"
#include "log.h"
#include "node/node.h"
#include "refresh.h"
#include "util.h"

#define REFRESH_REQUEST_BASE (1ull << 60)       /* below the duty's (1 << 61) */
#define REFRESH_TICK_MS      100u
#define PICK_BUDGET          4096u      /* views looked at per tick (note 8) */

enum { JOB_NONE, JOB_CLAIM, JOB_HOLD, JOB_RELEASE, JOB_WAIT, JOB_COMMIT, JOB_GIVE_BACK };

static const char *const phase_names[] = { "none", "claim", "hold", "release", "wait", "commit", "give_back" };

/* "claim:2,wait:1" -- the phases of the jobs in flight, counted; "none" when idle. */
void lifecycle_refresh_jobs(const struct lifecycle *lc, char *buf, size_t size)
{
        size_t off = 0, n[ELEMENTSOF(phase_names)] = { 0 };

        for (size_t i = 0; i < LC_REFRESH_JOBS; i++)
                n[lc->rjobs[i].phase]++;
        buf[0] = '\0';
        for (size_t p = JOB_CLAIM; p < ELEMENTSOF(phase_names) && off < size; p++)
                if (n[p])
                        off += (size_t)snprintf(buf + off, size - off, "%s%s:%zu", off ? "," : "", phase_names[p],
                                                n[p]);
        if (!buf[0])
                snprintf(buf, size, "none");
}

/* The job in flight for gid, or NULL. */
static struct lc_refresh_job *job_of(struct lifecycle *lc, uint64_t gid)
{
        for (size_t i = 0; i < LC_REFRESH_JOBS; i++)
                if (lc->rjobs[i].phase != JOB_NONE && lc->rjobs[i].gid == gid)
                        return &lc->rjobs[i];
        return NULL;
}

static uint64_t ttl_ns(const struct lifecycle *lc)
{
        return lc->duty_ttl_ms * NS_PER_MS;
}

static void key_of(uint64_t gid, char *buf, size_t size)
{
        snprintf(buf, size, "refresh/%" PRIu64, gid);
}

static bool skipped(struct lifecycle *lc, uint64_t gid, uint64_t now)
{
        for (size_t i = 0; i < ELEMENTSOF(lc->rskip); i++)
                if (lc->rskip[i].gid == gid && lc->rskip[i].until_ms > now)
                        return true;
        return false;
}

static void skip(struct lifecycle *lc, uint64_t gid, uint64_t until_ms)
{
        size_t at = 0;

        for (size_t i = 0; i < ELEMENTSOF(lc->rskip); i++) {
                if (lc->rskip[i].gid == gid) {
                        at = i;
                        break;
                }
                if (lc->rskip[i].until_ms < lc->rskip[at].until_ms)
                        at = i;
        }
        lc->rskip[at].gid = gid;
        lc->rskip[at].until_ms = until_ms;
}

static int send_lease(struct lifecycle *lc, struct lc_refresh_job *j, Coord__MsgType type)
{
        Coord__LeaseClaim c = COORD__LEASE_CLAIM__INIT;
        Coord__LeaseCommit cm = COORD__LEASE_COMMIT__INIT;
        Coord__LeaseRelease rl = COORD__LEASE_RELEASE__INIT;
        const ProtobufCMessage *m;
        char key[64];
        int r;

        key_of(j->gid, key, sizeof(key));
        if (type == COORD__MSG_TYPE__MSG_LEASE_CLAIM) {
                c.key = key;
                c.holder = lc->duty_holder;
                c.ttl_ms = (uint32_t)lc->duty_ttl_ms;
                c.supersede = true;
                m = &c.base;
        } else if (type == COORD__MSG_TYPE__MSG_LEASE_COMMIT) {
                cm.key = key;
                cm.holder = lc->duty_holder;
                cm.epoch = j->epoch;
                cm.commit_id = j->commit_id;
                cm.version = j->version;
                m = &cm.base;
        } else {
                rl.key = key;
                rl.holder = lc->duty_holder;
                rl.epoch = j->epoch;
                m = &rl.base;
        }
        j->request_id = REFRESH_REQUEST_BASE + ++lc->rrequests;
        r = node_send(lc->node, COORD__ROLE__ROLE_ADAPTER, type, j->request_id, m);
        j->sent_ns = now_ns();
        return r;
}

static int send_release(struct lifecycle *lc, struct lc_refresh_job *j)
{
        Coord__ReleaseRefresh m = COORD__RELEASE_REFRESH__INIT;

        m.gid = j->gid;
        m.at = j->at;
        m.epoch = j->epoch;
        j->request_id = REFRESH_REQUEST_BASE + ++lc->rrequests;
        j->sent_ns = now_ns();
        j->phase = JOB_RELEASE;
        return node_send(lc->node, COORD__ROLE__ROLE_CONTROLLER, COORD__MSG_TYPE__MSG_RELEASE_REFRESH,
                         j->request_id, &m.base);
}

static void job_done(struct lc_refresh_job *j)
{
        *j = (struct lc_refresh_job){ .phase = JOB_NONE };
}

static void commit(struct lifecycle *lc, struct lc_refresh_job *j, uint64_t at)
{
        j->at = at;
        snprintf(j->commit_id, sizeof(j->commit_id), "%" PRIu64, at);
        j->phase = JOB_COMMIT;
        if (send_lease(lc, j, COORD__MSG_TYPE__MSG_LEASE_COMMIT) < 0)
                job_done(j);
}

/* Note 8: nothing due, but the refresh P the view's upper passed last was written and
 * never committed (its holder died between the two), 2 ttl after P's time: by then its
 * holder committed P or its lease lapsed. */
static bool unreconciled(struct lifecycle *lc, uint64_t gid, uint64_t as_of, const struct refresh_schedule *rs,
                         uint64_t upper, uint64_t now, uint64_t *ret_prev)
{
        uint64_t last, first = refresh_next(rs, as_of), prev = refresh_prev(rs, upper);

        if (prev == REFRESH_NONE || first == REFRESH_NONE || prev < first ||
            lc_enact_refresh_committed(lc->enact, gid, &last) < 0 || prev <= last ||
            now < prev + 2 * lc->duty_ttl_ms)
                return false;
        *ret_prev = prev;
        return true;
}

static struct lc_refresh_job *free_slot(struct lifecycle *lc)
{
        for (size_t i = 0; i < LC_REFRESH_JOBS; i++)
                if (lc->rjobs[i].phase == JOB_NONE)
                        return &lc->rjobs[i];
        return NULL;
}

/* Views to claim -- due, or unreconciled -- into the free job slots, the first after
 * the last one looked at, round robin, at most PICK_BUDGET views a tick. */
static void pick(struct lifecycle *lc)
{
        uint64_t now = wall_ms(), gid = 0, as_of, upper, due, after = lc->rlast;
        struct lc_refresh_job *free_job = free_slot(lc);
        struct refresh_schedule rs;
        size_t seen = 0;

        for (int pass = 0; pass < 2 && free_job && seen < PICK_BUDGET; pass++, after = 0) {
                while (free_job && seen < PICK_BUDGET &&
                       lc_enact_next_refresh(lc->enact, after, &gid, &as_of, &rs) == 0) {
                        seen++;
                        after = lc->rlast = gid;
                        if (lc_state_upper(lc->state, gid, &upper) < 0)
                                continue;
                        due = upper == REFRESH_NONE ? REFRESH_NONE : refresh_next(&rs, upper);  /* pending */
                        if ((due == REFRESH_NONE || due > now) &&
                            !unreconciled(lc, gid, as_of, &rs, upper, now, &due))
                                continue;
                        if (skipped(lc, gid, now) || job_of(lc, gid))
                                continue;
                        *free_job = (struct lc_refresh_job){ .phase = JOB_CLAIM, .gid = gid, .at = due };
                        lc->rclaims++;
                        if (send_lease(lc, free_job, COORD__MSG_TYPE__MSG_LEASE_CLAIM) < 0)
                                job_done(free_job);
                        free_job = free_slot(lc);
                }
        }
}

/* One job's timers: its hold, its wait for the ring, an answer that does not come. */
static void job_tick(struct lifecycle *lc, struct lc_refresh_job *j, uint64_t now)
{
        uint64_t upper;

        if (j->phase == JOB_HOLD && now >= j->hold_until_ns) {
                if (send_release(lc, j) < 0)
                        job_done(j);
        } else if (j->phase == JOB_WAIT) {
                if (lc_state_upper(lc->state, j->gid, &upper) == 0 && upper > j->at) {
                        KILLPOINT("refresh.before_commit");     /* written, not committed */
                        commit(lc, j, j->at);
                } else if (now - j->sent_ns > ttl_ns(lc) - ttl_ns(lc) / 4) {
                        job_done(j);    /* our lease may lapse: the next claim goes on */
                }
        } else if (j->phase != JOB_NONE && j->phase != JOB_HOLD && now - j->sent_ns > ttl_ns(lc)) {
                /* No answer: a commit is sent again with its id (P5), the rest dropped. */
                if (j->phase == JOB_COMMIT && send_lease(lc, j, COORD__MSG_TYPE__MSG_LEASE_COMMIT) == 0)
                        lc->rretries++;
                else
                        job_done(j);
        }
}

static void refresh_tick(struct loop *l, void *userdata)
{
        struct lifecycle *lc = userdata;
        uint64_t now = now_ns();

        lc->refresh_timer = NULL;
        for (size_t i = 0; i < LC_REFRESH_JOBS; i++)
                job_tick(lc, &lc->rjobs[i], now);
        if (lc->loaded && node_peer_connected(lc->node, COORD__ROLE__ROLE_ADAPTER) &&
            node_peer_connected(lc->node, COORD__ROLE__ROLE_CONTROLLER))
                pick(lc);
        lifecycle_refresh_arm(lc);
}

void lifecycle_refresh_arm(struct lifecycle *lc)
{
        lifecycle_timer_arm(lc, &lc->refresh_timer, REFRESH_TICK_MS, refresh_tick, "refresh");
}

/* Note 8: the claim's answer. */
static void claimed(struct lifecycle *lc, struct lc_refresh_job *j, const Coord__LeaseReply *r)
{
        struct refresh_schedule rs;
        uint64_t gid, as_of, first, prev, last = 0, upper, due;

        if (r->status == COORD__LEASE_REPLY__STATUS__BUSY) {
                lc->rbusy++;
                skip(lc, j->gid, wall_ms() + r->expires_in_ms);
                job_done(j);
                return;
        }
        if (r->status != COORD__LEASE_REPLY__STATUS__OK ||
            lc_enact_next_refresh(lc->enact, j->gid - 1, &gid, &as_of, &rs) < 0 || gid != j->gid ||
            lc_state_upper(lc->state, j->gid, &upper) < 0) {
                job_done(j);
                return;
        }
        j->epoch = r->epoch;
        j->version = r->version;
        if (r->last_commit_id && r->last_commit_id[0])
                (void)parse_u64(r->last_commit_id, UINT64_MAX, &last);
        first = refresh_next(&rs, as_of);
        prev = refresh_prev(&rs, upper);
        if (prev != REFRESH_NONE && prev >= first && prev > last) {
                lc->rreconciled++;
                log_info("refresh_reconcile", "gid=%" PRIu64 " at=%" PRIu64 " last_commit=%" PRIu64 " epoch=%" PRIu64,
                         j->gid, prev, last, j->epoch);
                commit(lc, j, prev);
                return;
        }
        due = upper == REFRESH_NONE ? REFRESH_NONE : refresh_next(&rs, upper);
        if (due == REFRESH_NONE || due > wall_ms() || due <= last) {
                j->phase = JOB_GIVE_BACK;               /* nothing due: give it back */
                if (send_lease(lc, j, COORD__MSG_TYPE__MSG_LEASE_RELEASE) < 0)
                        job_done(j);
                return;
        }
        j->at = due;
        if (lc->test_refresh_hold_ms) {
                j->phase = JOB_HOLD;
                j->hold_until_ns = now_ns() + lc->test_refresh_hold_ms * NS_PER_MS;
                return;
        }
        if (send_release(lc, j) < 0)
                job_done(j);
}

bool lifecycle_refresh_reply(struct lifecycle *lc, const Coord__Envelope *env)
{
        struct lc_refresh_job *j = NULL;
        Coord__LeaseReply *r = NULL;

        if (env->request_id < REFRESH_REQUEST_BASE || env->request_id >= (1ull << 61))
                return false;
        for (size_t i = 0; i < LC_REFRESH_JOBS && !j; i++)
                if (lc->rjobs[i].phase != JOB_NONE && lc->rjobs[i].request_id == env->request_id)
                        j = &lc->rjobs[i];
        if (!j)
                return true;            /* a late answer to a job given up */
        if (j->phase == JOB_RELEASE) {
                if (env->type == COORD__MSG_TYPE__MSG_OK) {
                        lc->rreleases++;
                        j->phase = JOB_WAIT;
                        j->sent_ns = now_ns();
                } else {
                        Coord__Error *e = coord__error__unpack(NULL, env->payload.len, env->payload.data);
                        bool fenced = e && e->sqlstate && strcmp(e->sqlstate, "55000") == 0;

                        /* Fenced: a later epoch has it.  Else (the view not installed or
                         * failed): not before its lease could lapse, not at every tick. */
                        if (fenced)
                                lc->rfenced++;
                        else
                                lc->rerrors++;
                        log_info(fenced ? "refresh_fenced" : "refresh_release_failed",
                                 "gid=%" PRIu64 " at=%" PRIu64 " epoch=%" PRIu64 " sqlstate=%s", j->gid, j->at,
                                 j->epoch, e && e->sqlstate ? e->sqlstate : "?");
                        if (e)
                                coord__error__free_unpacked(e, NULL);
                        skip(lc, j->gid, wall_ms() + lc->duty_ttl_ms);
                        job_done(j);
                }
                return true;
        }
        if (env->type == COORD__MSG_TYPE__MSG_LEASE_REPLY)
                r = coord__lease_reply__unpack(NULL, env->payload.len, env->payload.data);
        if (!r) {
                job_done(j);
                return true;
        }
        if (j->phase == JOB_CLAIM) {
                claimed(lc, j, r);
        } else if (j->phase == JOB_COMMIT) {
                if (r->status == COORD__LEASE_REPLY__STATUS__OK) {
                        lc->rcommitted++;
                        log_info("refresh_committed", "gid=%" PRIu64 " at=%" PRIu64 " epoch=%" PRIu64
                                 " version=%" PRIu64 " retried=%d", j->gid, j->at, j->epoch, r->version,
                                 r->retried);
                } else {
                        lc->rfenced++;
                        log_info("refresh_fenced", "gid=%" PRIu64 " at=%" PRIu64 " epoch=%" PRIu64 " what=commit",
                                 j->gid, j->at, j->epoch);
                }
                job_done(j);
        } else {
                job_done(j);
        }
        coord__lease_reply__free_unpacked(r, NULL);
        return true;
}
