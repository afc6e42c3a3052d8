/* controller-server-fence.c -- the duty fence: which lifecycle follower may enact.
 *
 * NOTES
 * (1) A fleet of lifecycle followers shares one controller; only the holder of the duty
 *     lease (lifecycle.md, "A fleet of followers") enacts objects and allows compaction,
 *     and every message it sends carries the lease's epoch (Envelope.fence).  The
 *     controller keeps the highest epoch seen in <data-dir>/controller/duty_fence,
 *     written durably BEFORE it acts on a message of a higher epoch, and refuses
 *     (55000) EnsureCollections, CreateDataflows, DropCollections and AllowCompaction
 *     from a follower with a lower epoch: a follower that was paused past its lease and
 *     resumes cannot drop or re-create what the current holder enacted since, across
 *     restarts of the controller too.  server_fence_refuses(), called by
 *     server_on_message() for every message (deferred ones included).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller-server-internal.h"
#include "log.h"
#include "node/node.h"
#include "probes.h"
#include "util.h"

#define FENCE_FILE "duty_fence"

int server_fence_load(struct cserver *s)
{
        int r = read_u64_file(node_dir(s->node), FENCE_FILE, UINT64_MAX, &s->duty_fence);

        if (r == -EBADMSG)
                return log_error_errno(r, "duty_fence_corrupt", "dir=%s file=%s", node_dir(s->node), FENCE_FILE);
        return r == -ENOENT ? 0 : r;
}

static bool fenced_type(Coord__MsgType t)
{
        return t == COORD__MSG_TYPE__MSG_ENSURE_COLLECTIONS ||
               t == COORD__MSG_TYPE__MSG_CREATE_DATAFLOWS ||
               t == COORD__MSG_TYPE__MSG_DROP_COLLECTIONS ||
               t == COORD__MSG_TYPE__MSG_ALLOW_COMPACTION;
}

/* Note 1: true when the message was refused (and answered). */
bool server_fence_refuses(struct cserver *s, node_peer_t from, const Coord__Envelope *env)
{
        struct row_error e;
        char buf[32];
        int r;

        if (node_peer_role(from) != COORD__ROLE__ROLE_LIFECYCLE || !fenced_type(env->type))
                return false;
        if (env->fence > s->duty_fence) {
                snprintf(buf, sizeof(buf), "%" PRIu64 "\n", env->fence);
                r = write_file_durable(node_dir(s->node), FENCE_FILE, buf);
                if (r < 0) {
                        log_error_errno(r, "duty_fence_write_failed", "fence=%" PRIu64, env->fence);
                        row_error_set(&e, r, "58030", "the controller could not record duty epoch %" PRIu64,
                                      env->fence);
                        server_reply_error(s, from, env->request_id, &e);
                        return true;
                }
                log_info("duty_fence_raised", "from=%" PRIu64 " to=%" PRIu64 " id=%u", s->duty_fence,
                         env->fence, node_peer_id(from));
                s->duty_fence = env->fence;
                return false;
        }
        if (env->fence == s->duty_fence)
                return false;
        s->duty_fenced++;
        if (s->duty_fenced_logged++ == 0 || env->fence != s->duty_fenced_last)
                log_warn("duty_fenced", "id=%u fence=%" PRIu64 " current=%" PRIu64 " type=%d",
                         node_peer_id(from), env->fence, s->duty_fence, (int)env->type);
        s->duty_fenced_last = env->fence;
        row_error_set(&e, -ESTALE, "55000",
                      "fenced: duty epoch %" PRIu64 " is older than the controller's %" PRIu64,
                      env->fence, s->duty_fence);
        server_reply_error(s, from, env->request_id, &e);
        return true;
}
