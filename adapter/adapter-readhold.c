/* adapter-readhold.c -- a reading client's holds (issue 33 item 3): the snapshot of a
 * REPEATABLE READ or SERIALIZABLE block, and a SELECT still streaming its result after
 * READ_HOLD_STREAM_MS, keep their inputs readable at their timestamp through clients'
 * holds in the catalog (adapter-hold.c, catalog.proto CatalogHold), released when the
 * block or the read ends.  docs/protection.md, "Clients' holds".  Loop thread only.
 *
 * NOTES
 * (1) What is held: each input of the statement (its storage collections and the
 *     indexes its plan reads) at the read's timestamp t, taken on the loop right after
 *     the read chose t.  acat_hold_add() admits t only at or above the input's committed
 *     and in-flight bound, and from the add on no publication passes it (adapter-hold.c
 *     note 1), so the bound, hence the controller's since (I2), stays at or below t.  An
 *     input whose bound is past t already is not held: an index read there falls back to
 *     what it indexes, and a block's read of such a collection fails with 40001
 *     (exec_select()).  Built-in relations without a frontier are not held.
 * (2) The read does not wait for the record: the in-memory hold protects t from the add
 *     on; the record tells the follower (whose proposals then stay at or below it, so
 *     none is refused) and outlives a follower's restart.  One put commit in flight per
 *     read_hold; inputs added meanwhile go in the next.  A failed put is logged and the
 *     hold stays in memory, where it still protects.
 * (3) Release (read_hold_release()): the holds leave the in-memory table at once; the
 *     records that were put are deleted by one commit submitted once no put is in
 *     flight, so a put never lands after its delete (as adapter-subscribe.c note 4);
 *     then the read_hold is freed.  A hold never released in a live adapter is a leak
 *     that blocks compaction: every owner releases at its end (adapter-exec-txn.c
 *     txn_set(), session_free(), the stream's end in adapter-exec-read.c).
 * (4) Holds die with their adapter (adapter-hold.c note 2): exec_free() frees what is
 *     left, and the next start deletes the records.
 */
#include "adapter-exec-internal.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "adapter-commit.h"
#include "catalog/catalog.h"
#include "log.h"
#include "node/node.h"
#include "util.h"

/* RH_UNPUT: released before its put was sent, so it has no record to delete. */
enum rh_state { RH_NEW, RH_PUTTING, RH_DURABLE, RH_UNPUT };

struct rh_entry {
        uint64_t id;            /* the hold's id in ex->cat */
        uint64_t input;
        enum rh_state state;
};

struct read_hold {
        struct exec *ex;
        uint64_t ts;
        struct rh_entry *v;
        size_t n, cap;
        bool commit_out;        /* (2) a put or the delete is in flight */
        bool released;          /* (3) the owner is done with it */
        bool deleting;          /* (3) the delete is in flight */
        bool put_failed;        /* logged once */
        struct acat_hold_rec *recs;     /* the commit in flight's records */
        struct catalog_op *ops;
        size_t n_ops;
        struct read_hold *prev, *next;  /* (4) on ex->read_holds */
};

static void ops_done(struct read_hold *rh)
{
        for (size_t i = 0; i < rh->n_ops; i++)
                acat_hold_rec_done(&rh->recs[i]);
        free(rh->recs);
        free(rh->ops);
        rh->recs = NULL;
        rh->ops = NULL;
        rh->n_ops = 0;
}

static void rh_free(struct read_hold *rh)
{
        struct exec *ex = rh->ex;

        if (rh->prev)
                rh->prev->next = rh->next;
        else
                ex->read_holds = rh->next;
        if (rh->next)
                rh->next->prev = rh->prev;
        ops_done(rh);
        free(rh->v);
        free(rh);
}

static void rh_committed(void *ctx, int r, uint64_t seq);

/* Submit one commit: the puts of every RH_NEW entry, or (del) the deletes of every
 * RH_DURABLE one.  0 when something was submitted, 1 when there was nothing to do. */
static int rh_submit(struct read_hold *rh, bool del)
{
        size_t n = 0;
        int r;

        assert(!rh->commit_out && !rh->n_ops);
        for (size_t i = 0; i < rh->n; i++)
                n += rh->v[i].state == (del ? RH_DURABLE : RH_NEW);
        if (!n)
                return 1;
        rh->recs = calloc(n, sizeof(*rh->recs));
        rh->ops = calloc(n, sizeof(*rh->ops));
        if (!rh->recs || !rh->ops) {
                r = -ENOMEM;
                goto fail;
        }
        for (size_t i = 0; i < rh->n; i++) {
                struct rh_entry *e = &rh->v[i];
                struct acat_hold_rec *rec = &rh->recs[rh->n_ops];

                if (e->state != (del ? RH_DURABLE : RH_NEW))
                        continue;
                if (del) {
                        rec->key[0] = 'h';
                        be64_put(rec->key + 1, e->id);
                } else {
                        r = acat_hold_record(rh->ex->cat, e->id, rh->ts, rec);
                        if (r < 0)
                                goto fail;
                        e->state = RH_PUTTING;
                }
                rh->ops[rh->n_ops++] = (struct catalog_op){
                        .kind = del ? CATALOG_OP_DELETE : CATALOG_OP_PUT, .cf = CATALOG_CF_STATE,
                        .key = rec->key, .key_len = sizeof(rec->key),
                        .value = rec->value, .value_len = rec->value_len };
        }
        r = committer_submit(rh->ex->committer, rh->ops, rh->n_ops, rh_committed, rh);
        if (r < 0)
                goto fail;
        rh->commit_out = true;
        rh->deleting = del;
        return 0;
fail:
        for (size_t i = 0; i < rh->n; i++)
                if (rh->v[i].state == RH_PUTTING)
                        rh->v[i].state = RH_NEW;
        ops_done(rh);
        return r;
}

/* (3) Once nothing is in flight: delete what was put, then free. */
static void rh_settle(struct read_hold *rh)
{
        int r;

        if (!rh->released || rh->commit_out)
                return;
        r = rh_submit(rh, true);
        if (r == 0)
                return;         /* rh_committed() frees */
        if (r < 0)
                log_warn_errno(r, "read_hold_delete_failed", "ts=%" PRIu64 " holds=%zu", rh->ts, rh->n);
        rh_free(rh);
}

static void rh_committed(void *ctx, int r, uint64_t seq)
{
        struct read_hold *rh = ctx;
        bool del = rh->deleting;

        (void)seq;
        rh->commit_out = false;
        rh->deleting = false;
        ops_done(rh);
        if (del) {
                /* Deleted (or, on failure, left to the next start: note 4). */
                if (r < 0)
                        log_warn_errno(r, "read_hold_delete_failed", "ts=%" PRIu64 " holds=%zu",
                                       rh->ts, rh->n);
                rh_free(rh);
                return;
        }
        for (size_t i = 0; i < rh->n; i++)
                if (rh->v[i].state == RH_PUTTING)
                        rh->v[i].state = r < 0 ? RH_NEW : RH_DURABLE;
        if (r < 0 && !rh->put_failed) {
                rh->put_failed = true;
                log_warn_errno(r, "read_hold_put_failed", "ts=%" PRIu64 " holds=%zu", rh->ts, rh->n);
        }
        if (rh->released) {
                rh_settle(rh);
                return;
        }
        if (r == 0 && rh_submit(rh, false) < 0)
                log_warn("read_hold_put_failed", "ts=%" PRIu64, rh->ts);
}

static bool rh_holds(const struct read_hold *rh, uint64_t gid)
{
        for (size_t i = 0; i < rh->n; i++)
                if (rh->v[i].input == gid)
                        return true;
        return false;
}

/* (1) Hold one input at rh->ts, unless held already or not holdable there. */
static int rh_add(struct read_hold *rh, uint64_t gid)
{
        struct exec *ex = rh->ex;
        struct acat_hold_rec rec = { .value = NULL };
        struct row_error err = { .position = 0 };
        uint64_t id;
        int r;

        if (coord_gid_is_live(gid) || rh_holds(rh, gid))
                return 0;
        if (GROW_ARRAY(rh->v, rh->cap, rh->n + 1) < 0)
                return -ENOMEM;
        r = acat_hold_add(ex->cat, gid, rh->ts, node_incarnation(ex->node), &id, &rec, &err);
        acat_hold_rec_done(&rec);       /* rh_submit() encodes the record it sends */
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0;       /* dropped, or its bound is past ts: not held */
        rh->v[rh->n++] = (struct rh_entry){ .id = id, .input = gid, .state = RH_NEW };
        return 0;
}

int read_hold_take(struct exec *ex, struct read_hold **rhp, uint64_t ts, const struct sql_stmt *st)
{
        struct read_hold *rh = *rhp;
        size_t before;
        int r = 0;

        if (!rh) {
                rh = calloc(1, sizeof(*rh));
                if (!rh)
                        return -ENOMEM;
                rh->ex = ex;
                rh->ts = ts;
                rh->next = ex->read_holds;
                if (rh->next)
                        rh->next->prev = rh;
                ex->read_holds = rh;
                *rhp = rh;
        }
        assert(rh->ts == ts && !rh->released);
        before = rh->n;
        for (size_t i = 0; i < st->n_inputs && r == 0; i++)
                r = rh_add(rh, st->inputs[i]);
        for (size_t i = 0; i < st->n_physical_inputs && r == 0; i++)
                r = rh_add(rh, st->physical_inputs[i]);
        if (rh->n > before) {
                ex->read_holds_taken += rh->n - before;
                if (!rh->commit_out) {
                        int s = rh_submit(rh, false);

                        if (s < 0 && !rh->put_failed) {
                                rh->put_failed = true;
                                log_warn_errno(s, "read_hold_put_failed", "ts=%" PRIu64, ts);
                        }
                }
        }
        return r;
}

void read_hold_release(struct read_hold **rhp)
{
        struct read_hold *rh = *rhp;

        if (!rh)
                return;
        *rhp = NULL;
        assert(!rh->released);
        rh->released = true;
        for (size_t i = 0; i < rh->n; i++)
                acat_hold_remove(rh->ex->cat, rh->v[i].id);
        for (size_t i = 0; i < rh->n; i++)
                if (rh->v[i].state == RH_NEW)
                        rh->v[i].state = RH_UNPUT;
        rh_settle(rh);
}

/* (4) The committer is gone (its callbacks will not run): free what is left. */
void read_holds_free_all(struct exec *ex)
{
        while (ex->read_holds)
                rh_free(ex->read_holds);
}

uint64_t exec_read_holds_taken(const struct exec *ex)
{
        return ex->read_holds_taken;
}
