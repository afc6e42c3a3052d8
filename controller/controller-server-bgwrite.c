/* controller-server-bgwrite.c -- a write's expensive plan evaluated in the peek thread
 * while its Append waits.
 *
 * NOTES ON THE DESIGN
 *
 * (24) Writes off the loop.  An Append evaluates the plan of a DELETE, UPDATE or
 *      INSERT ... SELECT against its tables as the append leaves them (2, 3); a plan
 *      that joins can cost a cross product, and on the loop that held every other
 *      client until it ended (issue 36).  server_bgwrite_try() sends the first such
 *      write of an Append whose inputs cost PEEK_BG_MIN_UPDATES or more (the peeks'
 *      measure, server_plan_cost()) to the peek thread, when what it reads is what
 *      the loop would read: every input a table that no earlier write of the Append
 *      writes, read through a storage_reader at its stored upper - 1 exactly as
 *      acol_base() reads it.  The Append is then PARKED (s->bgwrite): every message
 *      that arrives meanwhile except reads (Peek, PeekNext, ListCollections) is
 *      deferred (17's queue) and replayed in order afterwards, so no table changes
 *      under the evaluation and no later append passes it -- the answer is the one the
 *      loop would have computed.  Reads go on: the adapter reads at the last
 *      acknowledged write's timestamp, below the parked one.  When the job is back,
 *      the Append is handled as any other (server_append_run()) with that write's
 *      result taken instead of evaluated.  The write's statement_timeout (its
 *      deadline) and the memory limit hold in the thread as on the loop; a controller
 *      stopping sets the job's stop flag.  An Append whose connection went meanwhile
 *      is dropped unanswered and unapplied, as if lost in the socket (18b): its
 *      client was never told it committed.  One parked Append at a time.  Status:
 *      writes_thread, write_thread_max_us.
 */
#include "controller-server-internal.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controller-dataflow.h"
#include "controller-storage.h"
#include "log.h"
#include "node/node.h"
#include "util.h"

/* Does any of a->writes[0..i) write gid? */
static bool written_before(const Coord__Append *a, size_t i, uint64_t gid)
{
        for (size_t k = 0; k < i; k++)
                if (a->writes[k]->gid == gid)
                        return true;
        return false;
}

static void bgwrite_free(struct bgwrite *w)
{
        if (!w)
                return;
        dataflow_free(w->df);
        eval_batch_done(&w->out);
        if (w->a)
                coord__append__free_unpacked(w->a, NULL);
        free(w);
}

/* The write's inputs: each a table no earlier write touches, readable at its stored
 * upper - 1 (or empty); their costs in ups, their read times in at.  0, or -errno:
 * stay on the loop (which reports what is wrong). */
static int plan_inputs(struct cserver *s, const Coord__Append *a, size_t i, struct dataflow *df,
                       uint64_t *ups, uint64_t *at, bool *empty)
{
        for (size_t k = 0; k < dataflow_n_inputs(df); k++) {
                uint64_t gid = dataflow_input_id(df, k);
                struct storage_info info;
                int r;

                if (written_before(a, i, gid))
                        return -EAGAIN;
                r = storage_get_info(s->st, gid, &info);
                if (r < 0)
                        return r;
                if (info.kind != STORAGE_KIND_TABLE || info.frontiers.upper > a->ts)
                        return -EINVAL;
                empty[k] = info.frontiers.upper <= info.frontiers.since;
                at[k] = empty[k] ? 0 : info.frontiers.upper - 1;
                ups[k] = 0;
                if (!empty[k]) {
                        r = storage_read_cost(s->st, gid, at[k], &ups[k]);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int server_bgwrite_try(struct cserver *s, node_peer_t from, uint64_t request_id, Coord__Append *a)
{
        _cleanup_free_ uint64_t *ups = NULL, *at = NULL;
        _cleanup_free_ bool *empty = NULL;
        struct bgwrite *w = NULL;
        struct bgpeek *j = NULL;
        struct row_error e;
        size_t i, n;

        if (!s->st || s->bgwrite || a->ts == UINT64_MAX)
                return 0;
        for (i = 0; i < a->n_writes; i++)
                if (a->writes[i]->delete_filter && !server_plan_is_chain(a->writes[i]->delete_filter))
                        break;
        if (i == a->n_writes)
                return 0;
        w = calloc(1, sizeof(*w));
        if (!w || dataflow_new(a->writes[i]->delete_filter, a->ts, &w->df, &e) < 0)
                goto stay;
        n = dataflow_n_inputs(w->df);
        ups = calloc(n ? n : 1, sizeof(*ups));
        at = calloc(n ? n : 1, sizeof(*at));
        empty = calloc(n ? n : 1, sizeof(*empty));
        if (!ups || !at || !empty || plan_inputs(s, a, i, w->df, ups, at, empty) < 0 ||
            server_plan_cost(a->writes[i]->delete_filter, w->df, ups, 0) < server_peek_bg_min(s) ||
            (!s->pw && server_peek_worker_start(s) < 0))
                goto stay;
        j = calloc(1, sizeof(*j) + n * sizeof(j->rd[0]));
        if (!j)
                goto stay;
        j->n = n;
        atomic_init(&j->stop, false);
        for (size_t k = 0; k < n; k++)
                if (!empty[k] &&
                    storage_reader_new(s->st, dataflow_input_id(w->df, k), at[k], &j->rd[k]) < 0)
                        goto stay;
        dataflow_set_memory_limit(w->df, server_peek_memory_limit(s));
        if (a->writes[i]->eval_timeout_ms &&
            dataflow_set_deadline(w->df, now_ns() + (uint64_t)a->writes[i]->eval_timeout_ms * 1000000u) < 0)
                goto stay;
        dataflow_set_cancel(w->df, &j->stop);
        w->a = a;
        w->from = from;
        w->request_id = request_id;
        w->epoch = s->msg_epoch;
        w->write = i;
        w->job = j;
        w->out = (struct eval_batch)EVAL_BATCH_INIT;
        j->w = w;
        s->bgwrite = w;
        s->writes_bg++;
        server_peek_worker_queue(s, j);
        return 1;
stay:
        if (j) {
                for (size_t k = 0; k < j->n; k++)
                        storage_reader_free(j->rd[k]);
                free(j);
        }
        if (w)
                dataflow_free(w->df);
        free(w);
        return 0;
}

void server_bgwrite_eval(struct bgpeek *j)
{
        struct bgwrite *w = j->w;
        uint64_t start_ns = now_ns(), ts = w->a->ts;
        int r = 0;

        for (size_t k = 0; r >= 0 && k < j->n; k++) {
                struct feed fd = { .df = w->df, .input = k, .err = &w->e, .time = ts };

                if (!j->rd[k])
                        continue;
                if (atomic_load_explicit(&j->stop, memory_order_relaxed)) {
                        r = row_error_set(&w->e, -ECANCELED, "57014", "canceling statement due "
                                          "to user request");
                        break;
                }
                r = storage_reader_run(j->rd[k], server_feed_row, &fd);
                if (r >= 0)
                        r = server_feed_flush(&fd);
                else
                        row_error_set(&w->e, r, "58030", "reading collection %llu: %s",
                                      (unsigned long long)dataflow_input_id(w->df, k), strerrordesc_np(-r));
                row_arena_done(&fd.bytes);
                j->rd[k] = storage_reader_free(j->rd[k]);
        }
        if (r >= 0)
                r = dataflow_step(w->df, ts + 1, &w->out, &w->e);
        if (r == -ENOMEM)
                row_error_oom(&w->e);
        /* As write_dataflow() (controller-server-append.c) checks on the loop. */
        for (size_t k = 0; r >= 0 && k < w->out.n; k++)
                if (w->out.updates[k].diff < 0)
                        r = row_error_set(&w->e, -EUCLEAN, "XX000", "a row of the plan of the "
                                          "write to collection %llu has a negative count",
                                          (unsigned long long)w->a->writes[w->write]->gid);
        for (size_t k = 0; k < j->n; k++)
                j->rd[k] = storage_reader_free(j->rd[k]);
        w->r = r < 0 ? r : 0;
        w->eval_us = (now_ns() - start_ns) / 1000;
}

void server_bgwrite_finish(struct cserver *s, struct bgpeek *j, bool stopping)
{
        struct bgwrite *w = j->w;
        bool gone = w->epoch != server_peer_epoch(s, w->from);

        assert(s->bgwrite == w);
        s->bgwrite = NULL;
        free(j);
        w->job = NULL;
        if (w->eval_us > s->write_bg_max_us)
                s->write_bg_max_us = w->eval_us;
        if (stopping || gone) {
                log_info("write_dropped", "role=%s request_id=%llu reason=%s",
                         node_role_name(node_peer_role(w->from)), (unsigned long long)w->request_id,
                         stopping ? "stopping" : "connection_gone");
        } else {
                s->msg_epoch = w->epoch;
                s->msg_from = w->from;
                server_append_run(s, w->from, w->request_id, w->a, w);
        }
        bgwrite_free(w);
        if (!stopping)
                server_deferred_run(s);
}
