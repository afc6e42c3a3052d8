/* controller-server-refresh.c -- refresh leases: a REFRESH view's refresh waits for a
 * follower's release (issue 33 item 2).
 *
 * NOTES
 * (1) A refresh view installed with DataflowSpec.refresh_leased writes its refresh at
 *     r (its durable upper moving from r to the next refresh) only once a lifecycle
 *     follower holding the lease refresh/<gid> released r (MSG_RELEASE_REFRESH): its
 *     upper, written (refresh_stage()) or readable (dfent_round(), both in
 *     controller-server-compute.c), is at most server_refresh_limit() -- its first
 *     refresh before any release, the refresh after the last released one since -- so
 *     the output of a refresh not released waits in e->correction as output not yet
 *     due does.  One refresh per release: r's successor waits for its own.
 *     A release names the lease's epoch; one below the highest seen for the view is
 *     refused (55000) and changes nothing, so a holder that lost its lease cannot
 *     release after its successor (in memory: after a controller restart the pending
 *     refresh waits for a new release, which only the current holder can commit in the
 *     catalog -- lifecycle-refresh.c note 8).  A release at or below what the view's
 *     upper passed already is answered Ok with the upper: releasing is idempotent.
 */
#include <errno.h>
#include <inttypes.h>

#include "controller-server-internal.h"
#include "controller-storage.h"
#include "refresh.h"
#include "log.h"
#include "node/node.h"
#include "util.h"

uint64_t server_refresh_limit(const struct dfent *e, const struct refresh_schedule *rs)
{
        if (!e->spec || !e->spec->refresh_leased)
                return REFRESH_NONE;
        return e->released ? refresh_next(rs, e->released + 1) : refresh_next(rs, e->spec->as_of);
}

void server_handle_release_refresh(struct cserver *s, node_peer_t from, const Coord__Envelope *env)
{
        Coord__ReleaseRefresh *m = coord__release_refresh__unpack(NULL, env->payload.len, env->payload.data);
        struct storage_info info = { 0 };
        struct row_error e;
        struct dfent *d;

        if (!m) {
                server_reply_malformed(s, from, env);
                return;
        }
        d = server_dfent_find(s, m->gid);
        if (!d || d->index || !d->spec || !d->spec->refresh || !d->spec->refresh_leased) {
                row_error_set(&e, -ENOENT, "42P01", "%" PRIu64 " is not a leased refresh view here", m->gid);
                server_reply_error(s, from, env->request_id, &e);
                goto out;
        }
        if (m->epoch < d->refresh_fence) {
                s->refresh_fenced++;
                log_warn("refresh_release_fenced", "gid=%" PRIu64 " at=%" PRIu64 " epoch=%" PRIu64 " current=%" PRIu64,
                         m->gid, m->at, m->epoch, d->refresh_fence);
                row_error_set(&e, -ESTALE, "55000", "fenced: refresh lease epoch %" PRIu64 " of %" PRIu64
                              " is older than %" PRIu64, m->epoch, m->gid, d->refresh_fence);
                server_reply_error(s, from, env->request_id, &e);
                goto out;
        }
        d->refresh_fence = m->epoch;
        if (m->at > d->released) {
                d->released = m->at;
                s->refresh_releases++;
                log_info("refresh_released", "gid=%" PRIu64 " at=%" PRIu64 " epoch=%" PRIu64, m->gid, m->at,
                         m->epoch);
                server_dfent_dirty(s, d);
                server_compute_run(s);
        }
        (void)storage_get_info(s->st, m->gid, &info);
        server_reply_ok(s, from, env->request_id, NULL, 0, info.frontiers.upper);
out:
        coord__release_refresh__free_unpacked(m, NULL);
}
