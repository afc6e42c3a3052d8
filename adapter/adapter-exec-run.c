/* adapter-exec-run.c -- the statement executor's statements that change the catalog or
 * a table: a DDL's catalog commit (3) and what follows it, runs of CREATEs committed
 * together (7), CREATE TABLE/VIEW/MATERIALIZED VIEW/INDEX/SOURCE/SINK, ALTER, DROP;
 * and INSERT, DELETE, UPDATE into a group (2).
 *
 * The numbered notes are in adapter-exec.c (NOTES ON THE DESIGN).  What the executor's
 * files share is adapter-exec-internal.h.  Loop thread only.
 */
#include "adapter-exec-internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapter-commit.h"
#include "adapter-oracle.h"
#include "catalog/catalog.h"
#include "ring/fring.h"
#include "log.h"
#include "node/node.h"
#include "row/row-expr.h"
#include "util.h"

/* ---- statements ---- */

/* A DDL statement waiting for its catalog commit. */
struct ddl {
        struct session *s;
        struct acat_txn *txn;
        bool create;
        bool direct;            /* its committer answers the client (direct_sent) */
        ssize_t direct_sent;
        struct pgwire_direct reply;
        char tag[64];           /* in a run: its CommandComplete */
};

static void ddl_failed(struct session *s, int r)
{
        if (!s->gone)
                send_error(s->c, io_sqlstate(r), catalog_error_written(s->ex->store)
                           ? "the catalog could not commit: %s; the statement is not acknowledged, "
                             "and after a restart it is either wholly there or absent"
                           : "the catalog could not commit: %s; the statement was not applied",
                           catalog_reason(s->ex, r));
        s->stmt = sql_stmt_free(s->stmt);
        s->next = SIZE_MAX;
}

/* After a failed catalog write the store refuses every write until the adapter is
 * restarted (common/catalog/catalog.c NOTE 5): say so with 58030, as the failing
 * statement was answered (ddl_failed()), not as an internal error. */
static int catalog_not_writable(struct session *s)
{
        send_error(s->c, io_sqlstate(catalog_error(s->ex->store)),
                   "the catalog is not writable since a write failed (%s); "
                   "restart coord-adapter to recover", catalog_reason(s->ex, s->ex->fatal));
        return -ECANCELED;
}

/* A catalog write's begin failed with r: a statement the catalog refused (-EINVAL) is
 * answered with its error and -ECANCELED; any other r is returned as it is. */
static int begin_failed(struct session *s, int r, const struct row_error *err)
{
        if (r != -EINVAL)
                return r;
        send_row_error(s->c, err);
        return -ECANCELED;
}

/* The birth timestamp of a new object, once the catalog is known to be writable. */
static int ddl_birth_ts(struct session *s, uint64_t *ret)
{
        if (s->ex->fatal)
                return catalog_not_writable(s);
        return oracle_birth_ts(s->ex->oracle, ret);
}

/* A statement failed with r and nothing was sent for it: 58030 when the catalog has
 * failed (a DDL, or a write whose timestamp needs the oracle's mark in the catalog,
 * adapter-oracle.c), else an internal error. */
void send_stmt_failed(struct session *s, int r)
{
        if (catalog_error(s->ex->store) < 0)
                (void)catalog_not_writable(s);
        else
                send_error(s->c, "XX000", "internal error: %s", strerror(-r));
}

/* A CREATE's commit is done: apply it to memory and queue its built-in rows (3), with
 * ex->hold_kick set by the caller.  <0: they could not be queued. */
static int ddl_created(struct exec *ex, struct acat_txn *txn, uint64_t seq)
{
        size_t n = acat_txn_n_items(txn);
        /* On the heap: a statement may create any number of objects. */
        _cleanup_free_ uint64_t *gids = malloc((n ? n : 1) * sizeof(*gids));
        int r = 0;

        assert(ex->hold_kick);
        for (size_t i = 0; gids && i < n; i++)
                gids[i] = acat_txn_item(txn, i)->gid;
        protection_queue(ex, txn);
        acat_txn_finish(ex->cat, txn, 0);
        if (!gids)
                return -ENOMEM;
        for (size_t i = 0; i < n && r >= 0; i++) {
                const struct acat_item *it = acat_by_gid(ex->cat, gids[i]);

                log_debug("object_created", "gid=%llu kind=\"%s\" seq=%llu", (unsigned long long)gids[i],
                          it ? acat_kind_name(it->kind) : "?", (unsigned long long)seq);
                r = objects_write(ex, NULL, it, +1);
        }
        ex->fence = ex->groups_tail == &ex->groups ? NULL : group_last(ex);
        return r;
}

/* (3) the commit is done: now the controller, then coord_objects through a group. */
static void ddl_committed(void *ctx, int r, uint64_t seq)
{
        struct ddl *d = ctx;
        struct session *s = d->s;
        struct exec *ex = s->ex;
        size_t n = acat_txn_n_items(d->txn);

        if (d->direct) {
                pgwire_direct_end(s->c, &d->reply, d->direct_sent);
                if (d->direct_sent > 0)
                        ex->ddl_direct_replies++;
        }
        if (r < 0) {
                log_error_errno(r, "catalog_commit_failed", "what=%s", d->create ? "create" : "drop");
                ex->fatal = r;          /* the store is in its sticky error state */
                acat_txn_finish(ex->cat, d->txn, r);
                ddl_failed(s, r);
                goto resume;
        }
        if (d->create) {
                ex->hold_kick = true;   /* the rows of one DDL: one group, one append */
                r = ddl_created(ex, d->txn, seq);
                if (r < 0)
                        rows_not_queued(ex, r, "objects");
                ex->hold_kick = false;
                groups_kick(ex);
        } else {
                uint64_t first = n ? acat_txn_item(d->txn, 0)->gid : 0;

                ex->hold_kick = true;
                protection_queue(ex, d->txn);
                /* The coord_objects retractions need the items: before finish. */
                for (size_t i = 0; i < n; i++) {
                        r = objects_write(ex, NULL, acat_txn_item(d->txn, i), -1);
                        if (r < 0)
                                break;
                }
                ex->fence = ex->groups_tail == &ex->groups ? NULL : group_last(ex);
                acat_txn_finish(ex->cat, d->txn, 0);
                if (r < 0)
                        rows_not_queued(ex, r, "objects");
                ex->hold_kick = false;
                groups_kick(ex);
                log_debug("objects_dropped", "count=%zu first_gid=%llu seq=%llu", n,
                         (unsigned long long)first, (unsigned long long)seq);
        }
        /* (3) answered now; the rows follow in their group. */
resume:
        free(d);
        s->waiting = false;
        session_resume(s);
}

/* Commit a DDL's transaction off the loop thread (shared fsyncs); `done` runs on the
 * loop with the result and owns the struct ddl.  direct: done is ddl_committed(), which
 * answers with s->tag -- when the statement is the last of a simple query, the
 * committer sends that answer itself (adapter-pgwire.c note (7)); ddl_committed() ends
 * it. */
static int ddl_submit_fn(struct session *s, struct acat_txn *txn, bool create, bool direct,
                         void (*done)(void *ctx, int r, uint64_t seq))
{
        struct exec *ex = s->ex;
        struct ddl *d = calloc(1, sizeof(*d));
        struct commit_opts o = { 0 };
        const struct catalog_op *ops;
        size_t n;
        int r;

        if (!d) {
                acat_txn_finish(ex->cat, txn, -ENOMEM);
                return -ENOMEM;
        }
        *d = (struct ddl){ .s = s, .txn = txn, .create = create };
        ops = acat_txn_ops(txn, &n);
        o.after_earlier = acat_txn_after_publication(txn);
        if (direct && !ex->cfg.no_direct_reply && !s->extended && s->n_run == 0 && s->batch &&
            s->next >= sql_batch_size(s->batch) && pgwire_direct_begin(s->c, s->tag, &d->reply) == 0) {
                d->direct = true;
                o.reply_fd = d->reply.fd;
                o.reply = d->reply.bytes;
                o.reply_len = d->reply.len;
                o.reply_sent = &d->direct_sent;
                o.test_reply_wake_delay_ms = ex->cfg.test_reply_wake_delay_ms;
        }
        r = committer_submit_opts(ex->committer, &(struct catalog_txn_ops){ .ops = ops, .n_ops = n }, 1,
                                  &o, done, d);
        if (r == 0 && o.after_earlier)
                ex->ddl_after_publication++;
        if (r < 0) {
                if (d->direct)
                        pgwire_direct_end(s->c, &d->reply, -1);
                acat_txn_finish(ex->cat, txn, r);
                free(d);
                return r;
        }
        s->waiting = true;
        return STMT_PARKED;
}

static int ddl_submit(struct session *s, struct acat_txn *txn, bool create)
{
        return ddl_submit_fn(s, txn, create, true, ddl_committed);
}

/* ---- (7) runs ---- */

/* The analyzer's catalog while a run is open: notes whether a name it looks up is
 * reserved by a creation in flight or being dropped. */
static int session_lookup(void *userdata, const char *name, struct sql_relation *ret)
{
        struct session *s = userdata;
        const struct acat_item *it = acat_by_name(s->ex->cat, name);

        /* The run's own creations are seen as they will be once it is durable: they
         * commit before this statement, in the same write (acat_create_begin_after()). */
        for (size_t i = 0; it && it->pending && i < s->n_run; i++)
                if (acat_txn_item(s->run[i]->txn, 0) == it) {
                        acat_relation(it, ret);
                        return 0;
                }
        if (it && (it->pending || it->dropping))
                s->run_touched = true;
        return acat_sql_ops.lookup(s->ex->cat, name, ret);
}

/* The pg_catalog relations list the committed objects (and those being dropped), as a
 * lookup outside a run finds them; a run's own creations in flight are not listed. */
static int session_each(void *userdata, sql_object_fn fn, void *arg)
{
        struct session *s = userdata;

        return acat_sql_ops.each(s->ex->cat, fn, arg);
}

static int session_indexes(void *userdata, uint64_t gid, sql_object_fn fn, void *arg)
{
        struct session *s = userdata;

        return acat_sql_ops.indexes(s->ex->cat, gid, fn, arg);
}

static int session_leases(void *userdata, sql_lease_fn fn, void *arg)
{
        struct session *s = userdata;

        return acat_sql_ops.leases(s->ex->cat, fn, arg);
}

const struct sql_catalog_ops session_sql_ops = { .lookup = session_lookup,
                                                 .each = session_each,
                                                 .indexes = session_indexes,
                                                 .leases = session_leases };

/* May st join the open run (its analysis met nothing in flight)? */
bool stmt_joins_run(const struct session *s, const struct sql_stmt *st)
{
        if (s->run_touched || st->n_notices || s->n_run >= EXEC_RUN_MAX || s->ex->fatal)
                return false;
        switch (st->kind) {
        case SQL_STMT_CREATE_TABLE:
                return !st->create_table.exists;
        case SQL_STMT_CREATE_VIEW:
        case SQL_STMT_CREATE_MATERIALIZED_VIEW:
                return !st->create_view.exists;
        case SQL_STMT_CREATE_INDEX:
                return !st->create_index.exists;
        case SQL_STMT_CREATE_SINK:
                return !st->create_sink.exists;
        case SQL_STMT_CREATE_SOURCE:
                return !st->create_source.exists;
        default:
                return false;
        }
}

/* A CREATE's transaction is ready: into the session's run when it has one or more
 * statements follow in this simple query, else committed at once. */
static int ddl_create(struct session *s, struct acat_txn *txn)
{
        struct ddl *d;

        assert(s->n_run < EXEC_BLOCK_CREATES);  /* stmt_joins_run(), txn_stmt() */
        if (s->txn != TXN_OPEN &&
            (s->extended || !s->batch || (s->n_run == 0 && s->next >= sql_batch_size(s->batch))))
                return ddl_submit(s, txn, true);
        d = calloc(1, sizeof(*d));
        if (!d) {
                acat_txn_finish(s->ex->cat, txn, -ENOMEM);
                return -ENOMEM;
        }
        *d = (struct ddl){ .s = s, .txn = txn, .create = true };
        s->run[s->n_run++] = d;
        if (txn_holds_run(s))
                return STMT_DONE;       /* (10) answered now, committed by COMMIT */
        snprintf(d->tag, sizeof(d->tag), "%s", s->tag);
        return STMT_RUN;
}

/* Roll the run's reservations back, last first. */
void run_abandon(struct session *s, int r)
{
        while (s->n_run) {
                struct ddl *d = s->run[--s->n_run];

                acat_txn_finish(s->ex->cat, d->txn, r);
                free(d);
        }
}

/* (7) A statement of the string failed while its run is open: the string is one
 * implicit transaction (13), so the run rolls back with it.  Its statements are answered
 * first, as PostgreSQL answers the statements before an error in a string; the caller
 * sends the error.  Not when the failure may come from another session's object in
 * flight (s->run_touched): then STMT_RETRY, the run first and the statement alone. */
int run_rollback(struct session *s)
{
        if (txn_holds_run(s)) {
                run_abandon(s, -ECANCELED);     /* (10) the block fails with it */
                return -ECANCELED;
        }
        if (s->run_touched)
                return STMT_RETRY;
        for (size_t i = 0; !s->gone && i < s->n_run; i++)
                (void)pgwire_send_command_complete(s->c, s->run[i]->tag);
        run_abandon(s, -ECANCELED);
        return -ECANCELED;
}

static void run_committed(void *ctx, int r, uint64_t first_seq)
{
        struct session *s = ctx;
        struct exec *ex = s->ex;
        size_t n = s->n_run;

        assert(n > 0 && s->waiting);
        if (r < 0) {
                /* Not one of them is durable (catalog_commit_many()). */
                log_error_errno(r, "catalog_commit_failed", "what=create statements=%zu", n);
                ex->fatal = r;          /* the store is in its sticky error state */
                run_abandon(s, r);
                ddl_failed(s, r);
        } else {
                ex->hold_kick = true;   /* the run's rows: one group */
                for (size_t i = 0; i < n; i++) {
                        struct ddl *d = s->run[i];

                        r = ddl_created(ex, d->txn, first_seq + i);
                        if (r < 0)
                                rows_not_queued(ex, r, "objects");
                        if (!s->gone && d->tag[0])  /* a block's were answered */
                                (void)pgwire_send_command_complete(s->c, d->tag);
                        free(d);
                }
                s->n_run = 0;
                ex->hold_kick = false;
                groups_kick(ex);
        }
        s->waiting = false;
        session_resume(s);
}

/* Commit the open run: STMT_PARKED until run_committed(), or <0 with the error sent
 * and the run rolled back. */
int run_flush(struct session *s)
{
        struct catalog_txn_ops txns[EXEC_BLOCK_CREATES];
        int r;

        assert(s->n_run > 0 && s->n_run <= EXEC_BLOCK_CREATES);
        struct commit_opts o = { .after_earlier = false };

        for (size_t i = 0; i < s->n_run; i++) {
                txns[i].ops = acat_txn_ops(s->run[i]->txn, &txns[i].n_ops);
                o.after_earlier |= acat_txn_after_publication(s->run[i]->txn);
        }
        r = committer_submit_opts(s->ex->committer, txns, s->n_run, &o, run_committed, s);
        if (r == 0 && o.after_earlier)
                s->ex->ddl_after_publication++;
        if (r < 0) {
                run_abandon(s, r);
                ddl_failed(s, r);
                return r;
        }
        s->waiting = true;
        return STMT_PARKED;
}

int exec_create_table(struct session *s, struct sql_stmt *st)
{
        struct exec *ex = s->ex;
        const struct sql_create_table *ct = &st->create_table;
        struct row_error err = { .position = 0 };
        struct acat_txn *txn;
        uint64_t ts;
        int r;

        if (ct->exists) {
                snprintf(s->tag, sizeof(s->tag), "CREATE TABLE");
                return STMT_DONE;       /* the notice went out with the statement's notices */
        }
        r = ddl_birth_ts(s, &ts);
        if (r < 0)
                return r;
        r = acat_create_table_begin(ex->cat, ct, st->sql, ts, &txn, &err);
        if (r == -EINVAL && s->n_run && run_rollback(s) == STMT_RETRY)
                return STMT_RETRY;      /* (7) after the run, alone */
        if (r < 0)
                return begin_failed(s, r, &err);
        snprintf(s->tag, sizeof(s->tag), "CREATE TABLE");
        return ddl_create(s, txn);
}

/* The as-of of a new materialized view or index (DESIGN section 4): the largest since of
 * its logical inputs, as the frontier ring shows them (issue 5 uses committed bounds),
 * and never before an input's birth.  The controller raises it if an input moved on. */
static uint64_t choose_as_of(struct exec *ex, const uint64_t *inputs, size_t n, uint64_t ts)
{
        struct fring_reader *rd = node_ring(ex->node);
        uint64_t as_of = acat_max_bound(ex->cat, inputs, n);

        /* Built-in relations are not catalog items: their sinces are the controller's. */
        for (size_t i = 0; rd && i < n; i++) {
                const struct acat_item *it = acat_by_gid(ex->cat, inputs[i]);
                struct fring_frontier f;

                if (it && it->builtin && fring_lookup(rd, inputs[i], &f) == 0 && f.since > as_of)
                        as_of = f.since;
        }
        /* Birth floor (DESIGN section 2): not readable before its creation. */
        return as_of > ts ? as_of : ts;
}

/* The fields of a new item that a CREATE or ALTER SINK takes from its analyzed statement. */
#define STMT_INPUTS(st)                                                                        \
        .logical_inputs = (st)->inputs, .n_logical = (st)->n_inputs,                          \
        .physical_inputs = (st)->physical_inputs, .n_physical = (st)->n_physical_inputs,      \
        .refs = (st)->references, .n_refs = (st)->n_references

/* The creation of ni (with `progress`, a source's progress item: both) begun and handed
 * to ddl_create(), or its error sent: what ddl_create() returns, STMT_RETRY, -ECANCELED,
 * -errno. */
static int create_item(struct session *s, const struct acat_new_item *ni,
                       const struct acat_new_item *progress, uint64_t ts)
{
        struct row_error err = { .position = 0 };
        struct acat_txn *before[EXEC_BLOCK_CREATES];
        struct acat_txn *txn;
        int r;

        /* (7) refs may name the run's creations: they commit first, in the same write */
        for (size_t i = 0; i < s->n_run; i++)
                before[i] = s->run[i]->txn;
        if (progress)
                r = acat_create_source_begin(s->ex->cat, ni, progress, ts, before, s->n_run, &txn, &err);
        else
                r = acat_create_begin_after(s->ex->cat, ni, ts, before, s->n_run, &txn, &err);

        if (r == -EINVAL && s->n_run && run_rollback(s) == STMT_RETRY)
                return STMT_RETRY;      /* (7) after the run, alone */
        if (r != 0)
                return begin_failed(s, r, &err);
        return ddl_create(s, txn);
}

/* One REFRESH time of a new view: its expression with mz_now() = ts (the creation's
 * timestamp).  0, or -ECANCELED after sending the error. */
static int refresh_time(struct session *s, const Coord__Plan__Expr *e, uint64_t ts, uint64_t *ret)
{
        struct row_expr_ctx ctx = { .now = ts, .has_now = true };
        struct row_error err = { .position = 0 };
        struct row_datum d;

        if (row_expr_eval(e, NULL, 0, &ctx, &d, &err) < 0) {
                send_row_error(s->c, &err);
                return -ECANCELED;
        }
        if (d.kind == ROW_KIND_NULL || d.i < 0) {
                row_error_set(&err, -EINVAL, "22023", "REFRESH time must be a non-negative timestamp");
                send_row_error(s->c, &err);
                return -ECANCELED;
        }
        *ret = (uint64_t)d.i;
        return 0;
}

static int u64_cmp(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

/* A refresh view's schedule into ni (DESIGN section 4, "Refresh MVs"): AT CREATION is
 * its as-of, ALIGNED TO defaults to it; a REFRESH AT before the creation's timestamp is
 * refused (22023), as Materialize does.  *times (ascending, unique) is the caller's to
 * free.  0, or -ECANCELED after sending the error, or -ENOMEM. */
static int refresh_schedule(struct session *s, const struct sql_refresh *rf, uint64_t ts,
                            struct acat_new_item *ni, uint64_t **times)
{
        size_t n = 0;
        int r;

        *times = calloc(rf->n_at + 1, sizeof(**times));
        if (!*times)
                return -ENOMEM;
        if (rf->at_creation)
                (*times)[n++] = ni->as_of;
        for (size_t i = 0; i < rf->n_at; i++) {
                uint64_t t;

                r = refresh_time(s, rf->at[i], ts, &t);
                if (r < 0)
                        return r;
                if (t < ts) {
                        struct row_error err = { .position = 0 };
                        row_error_set(&err, -EINVAL, "22023", "REFRESH AT %llu is in the past",
                                      (unsigned long long)t);
                        row_error_detail(&err, "The materialized view is created at %llu.",
                                         (unsigned long long)ts);
                        row_error_hint(&err, "Use REFRESH AT mz_now() + <milliseconds>.");
                        send_row_error(s->c, &err);
                        return -ECANCELED;
                }
                (*times)[n++] = t;
        }
        qsort(*times, n, sizeof(**times), u64_cmp);
        ni->n_refresh_at = 0;
        for (size_t i = 0; i < n; i++)
                if (i == 0 || (*times)[i] != (*times)[i - 1])
                        (*times)[ni->n_refresh_at++] = (*times)[i];
        ni->refresh = true;
        ni->refresh_at = *times;
        ni->refresh_every_ms = rf->every_ms;
        ni->refresh_aligned_to = ni->as_of;
        if (rf->every_ms && rf->aligned_to)
                return refresh_time(s, rf->aligned_to, ts, &ni->refresh_aligned_to);
        return 0;
}

/* CREATE VIEW and CREATE MATERIALIZED VIEW: one catalog transaction {item, birth bound};
 * the client is answered after the commit; the controller installs the dataflow. */
int exec_create_view(struct session *s, struct sql_stmt *st)
{
        struct exec *ex = s->ex;
        const struct sql_create_view *cv = &st->create_view;
        bool mv = st->kind == SQL_STMT_CREATE_MATERIALIZED_VIEW;
        struct acat_new_item ni = {
                .name = cv->name, .kind = mv ? SQL_OBJECT_MATERIALIZED_VIEW : SQL_OBJECT_VIEW,
                .create_sql = st->sql, .columns = cv->columns, .n_columns = cv->n_columns,
                .plan = cv->plan, STMT_INPUTS(st),
                .retain_history_ms = cv->retain_history_ms, .nondeterministic = !cv->deterministic,
        };
        _cleanup_free_ uint64_t *times = NULL;
        uint64_t ts;
        int r;

        if (cv->exists)
                return STMT_DONE;       /* IF NOT EXISTS: the notice went out */
        r = ddl_birth_ts(s, &ts);
        if (r < 0)
                return r;
        if (mv)
                ni.as_of = cv->has_as_of ? cv->as_of : choose_as_of(ex, st->inputs, st->n_inputs, ts);
        if (mv && cv->refresh.on) {
                r = refresh_schedule(s, &cv->refresh, ts, &ni, &times);
                if (r < 0)
                        return r;
        }
        return create_item(s, &ni, NULL, ts);
}

int exec_create_index(struct session *s, struct sql_stmt *st)
{
        struct exec *ex = s->ex;
        const struct sql_create_index *ci = &st->create_index;
        struct acat_new_item ni = {
                .name = ci->name, .kind = SQL_OBJECT_INDEX, .create_sql = st->sql,
                .columns = ci->columns, .n_columns = ci->n_columns, .plan = ci->plan,
                STMT_INPUTS(st),
                .on_id = ci->on_id, .keys = ci->keys, .n_keys = ci->n_keys,
        };
        uint64_t ts;
        int r;

        if (ci->exists)
                return STMT_DONE;
        r = ddl_birth_ts(s, &ts);
        if (r < 0)
                return r;
        ni.as_of = choose_as_of(ex, st->inputs, st->n_inputs, ts);
        return create_item(s, &ni, NULL, ts);
}

/* A sink's file, before its CREATE commits: an absolute path, creatable by this user
 * (the controller writes it: same machine, same user), not another sink's, and empty --
 * a sink appends from offset 0 and truncates to its durable progress after a restart,
 * so what a file held before would be lost.  The file is created here, empty.  0, or
 * -ECANCELED after sending the error (22023, 42710, 42501, 58030). */
static int sink_file_check(struct session *s, const char *path)
{
        const struct acat_item *const *items;
        size_t n = acat_items(s->ex->cat, &items);
        struct stat st;
        int fd;

        if (path[0] != '/') {
                send_error(s->c, "22023", "the file of a sink must be an absolute path, not \"%s\"", path);
                return -ECANCELED;
        }
        for (size_t i = 0; i < n; i++)
                if (items[i]->kind == SQL_OBJECT_SINK && items[i]->sink_path &&
                    strcmp(items[i]->sink_path, path) == 0) {
                        send_error(s->c, "42710", "sink \"%s\" writes the file \"%s\" already",
                                   items[i]->name, path);
                        return -ECANCELED;
                }
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0) {
                int e = errno;
                send_error(s->c, e == EACCES || e == EPERM ? "42501" : "58030",
                           "could not create sink file \"%s\": %s", path, strerror(e));
                return -ECANCELED;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > 0) {
                bool reg = S_ISREG(st.st_mode);
                close(fd);
                send_error(s->c, "58030", reg ? "sink file \"%s\" exists and is not empty"
                                              : "sink file \"%s\" is not a regular file", path);
                return -ECANCELED;
        }
        close(fd);
        return 0;
}

static const struct sql_column progress_columns[] = {
        { (char *)"offset", ROW_TYPE_INT8, false },
};

/* CREATE SOURCE: one catalog transaction {its progress (the remap collection), the
 * source, their birth bounds, R(source, progress)} (acat_create_source_begin()); the
 * follower has the controller start ingesting.  A file must exist and be a regular,
 * readable file now (58030): a source tails it from offset 0. */
int exec_create_source(struct session *s, struct sql_stmt *st)
{
        struct exec *ex = s->ex;
        const struct sql_create_source *cs = &st->create_source;
        struct acat_new_item src = {
                .name = cs->name, .kind = SQL_OBJECT_SOURCE, .create_sql = st->sql,
                .columns = cs->columns, .n_columns = cs->n_columns,
                .source_type = (uint32_t)cs->type, .source_format = (uint32_t)cs->format,
                .source_path = cs->path, .source_tick_ms = cs->tick_ms, .source_up_to = cs->up_to,
        };
        struct acat_new_item progress = {
                .name = cs->progress_name, .kind = SQL_OBJECT_SOURCE, .create_sql = "",
                .columns = progress_columns, .n_columns = ELEMENTSOF(progress_columns),
        };
        uint64_t ts;
        int r;

        if (cs->exists)
                return STMT_DONE;
        if (ex->fatal)
                return catalog_not_writable(s);
        if (cs->type == SQL_SOURCE_FILE) {
                struct stat sb;

                if (cs->path[0] != '/') {
                        send_error(s->c, "22023", "the file of a source must be an absolute path, not \"%s\"",
                                   cs->path);
                        return -ECANCELED;
                }
                if (access(cs->path, R_OK) < 0 || stat(cs->path, &sb) < 0) {
                        int e = errno;
                        send_error(s->c, e == EACCES || e == EPERM ? "42501" : "58030",
                                   "could not open source file \"%s\": %s", cs->path, strerror(e));
                        return -ECANCELED;
                }
                if (!S_ISREG(sb.st_mode)) {
                        send_error(s->c, "58030", "source file \"%s\" is not a regular file", cs->path);
                        return -ECANCELED;
                }
        }
        r = oracle_birth_ts(ex->oracle, &ts);
        if (r < 0)
                return r;
        src.as_of = ts;
        return create_item(s, &src, &progress, ts);
}

/* CREATE SINK: one catalog transaction {item, requirements at its as-of} (I4); the
 * follower has the controller install it.  SNAPSHOT = false: the as-of is the inputs'
 * committed bound, chosen here, in the creating transaction: the sink writes what
 * changes after it (DESIGN section 4). */
int exec_create_sink(struct session *s, struct sql_stmt *st)
{
        struct exec *ex = s->ex;
        const struct sql_create_sink *cs = &st->create_sink;
        struct acat_new_item ni = {
                .name = cs->name, .kind = SQL_OBJECT_SINK, .create_sql = st->sql,
                .columns = cs->columns, .n_columns = cs->n_columns, .plan = cs->plan,
                STMT_INPUTS(st), .on_id = cs->from_id,
                .sink_path = cs->path, .sink_snapshot = cs->snapshot,
        };
        uint64_t ts;
        int r;

        if (cs->exists)
                return STMT_DONE;
        if (ex->fatal)
                return catalog_not_writable(s);
        r = sink_file_check(s, cs->path);
        if (r < 0)
                return r;
        r = oracle_birth_ts(ex->oracle, &ts);
        if (r < 0)
                return r;
        ni.as_of = cs->snapshot ? choose_as_of(ex, st->inputs, st->n_inputs, ts)
                                : acat_max_bound(ex->cat, st->inputs, st->n_inputs);
        return create_item(s, &ni, NULL, ts);
}

static void alter_committed(void *ctx, int r, uint64_t seq)
{
        struct ddl *d = ctx;
        struct session *s = d->s;
        struct exec *ex = s->ex;

        acat_txn_finish(ex->cat, d->txn, r);
        free(d);
        if (r < 0) {
                log_error_errno(r, "catalog_commit_failed", "what=alter");
                ex->fatal = r;
                ddl_failed(s, r);
        } else {
                log_info("object_altered", "gid=%llu retain_history_ms=%llu seq=%llu",
                         (unsigned long long)s->stmt->alter_retain.id,
                         (unsigned long long)s->stmt->alter_retain.retain_history_ms,
                         (unsigned long long)seq);
        }
        s->waiting = false;
        session_resume(s);
}

/* ALTER ... SET/RESET (RETAIN HISTORY): one catalog transaction; the follower applies
 * the new read policy at its next tick. */
int exec_alter_retain(struct session *s, struct sql_stmt *st)
{
        struct exec *ex = s->ex;
        struct row_error err = { .position = 0 };
        struct acat_txn *txn;
        int r;

        if (ex->fatal)
                return catalog_not_writable(s);
        r = acat_alter_retain_begin(ex->cat, st->alter_retain.id, st->alter_retain.retain_history_ms,
                                    &txn, &err);
        if (r < 0)
                return begin_failed(s, r, &err);
        return ddl_submit_fn(s, txn, false, false, alter_committed);
}

static void alter_sink_committed(void *ctx, int r, uint64_t seq)
{
        struct ddl *d = ctx;
        struct session *s = d->s;
        struct exec *ex = s->ex;
        const struct sql_alter_sink *as = &s->stmt->alter_sink;

        if (r < 0) {
                acat_txn_finish(ex->cat, d->txn, r);
                log_error_errno(r, "catalog_commit_failed", "what=alter_sink");
                ex->fatal = r;
                ddl_failed(s, r);
        } else {
                ex->hold_kick = true;   /* its coord_requirements rows: one group */
                protection_queue(ex, d->txn);
                ex->fence = ex->groups_tail == &ex->groups ? NULL : group_last(ex);
                acat_txn_finish(ex->cat, d->txn, 0);
                ex->hold_kick = false;
                groups_kick(ex);
                log_info("sink_altered", "gid=%llu from=%llu seq=%llu", (unsigned long long)as->id,
                         (unsigned long long)as->from_id, (unsigned long long)seq);
        }
        free(d);
        s->waiting = false;
        session_resume(s);
}

/* ALTER SINK k SET FROM rel (I4: the requirements move in the item's transaction).  The
 * cutover is the sink's durable progress P as the ring shows it, once P is past every
 * write acknowledged before the statement (its read timestamp) and the new relation is
 * readable at P - 1: until then the statement waits for the progress (57014 after the
 * peek timeout).  So the old relation's updates up to the ALTER are in the file, and
 * the controller switches at its durable progress then, >= P
 * (controller-server-source.c NOTE 19). */
int exec_alter_sink(struct session *s, struct sql_stmt *st)
{
        struct exec *ex = s->ex;
        struct sql_alter_sink *as = &st->alter_sink;
        const struct acat_item *it = acat_by_gid(ex->cat, as->id);
        struct fring_reader *rd = node_ring(ex->node);
        struct acat_new_item ni = {
                .kind = SQL_OBJECT_SINK, .plan = as->plan,
                STMT_INPUTS(st), .on_id = as->from_id,
        };
        struct row_error err = { .position = 0 };
        struct fring_frontier f;
        struct acat_txn *txn;
        int r;

        if (ex->fatal)
                return catalog_not_writable(s);
        if (!it || it->kind != SQL_OBJECT_SINK) {
                send_error(s->c, "42P01", "sink \"%s\" does not exist", as->name);
                return -ECANCELED;
        }
        if (it->on_id == as->from_id)
                return STMT_DONE;       /* it writes that relation already */
        if (!as->wait_deadline_ms) {
                as->wait_deadline_ms = now_ms() + ex->cfg.peek_timeout_ms;
                as->cutover_min = oracle_read_ts(ex->oracle) + 1;
        }
        if (rd && fring_lookup(rd, as->id, &f) == 0 && f.upper >= as->cutover_min && f.upper != UINT64_MAX) {
                r = acat_alter_sink_begin(ex->cat, as->id, &ni, f.upper, &txn, &err);
                if (r == 0)
                        return ddl_submit_fn(s, txn, false, false, alter_sink_committed);
                if (r != -EAGAIN)
                        return begin_failed(s, r, &err);
        }
        if (now_ms() >= as->wait_deadline_ms) {
                send_error(s->c, "57014", "timed out after %llu ms waiting for sink \"%s\" to reach the "
                           "history of \"%s\"", (unsigned long long)ex->cfg.peek_timeout_ms, as->name,
                           as->from_name);
                return -ECANCELED;
        }
        /* Again at the next frontier record (exec_on_frontiers()). */
        s->enact_gid = as->id;
        s->enact_deadline_ms = as->wait_deadline_ms;
        s->enact_next = ex->enact_waiters;
        ex->enact_waiters = s;
        s->waiting = true;
        return STMT_PARKED;
}

int exec_drop(struct session *s, struct sql_stmt *st)
{
        struct exec *ex = s->ex;
        const struct sql_drop *d = &st->drop;
        struct row_error err = { .position = 0 };
        struct acat_txn *txn;
        uint64_t *gids;
        size_t n = 0;
        int r;

        snprintf(s->tag, sizeof(s->tag), "%s", sql_stmt_tag(st));
        if (ex->fatal)
                return catalog_not_writable(s);
        gids = calloc(d->n_objects ? d->n_objects : 1, sizeof(*gids));
        if (!gids)
                return -ENOMEM;
        for (size_t i = 0; i < d->n_objects; i++) {
                bool dup = false;
                if (!d->ids[i])
                        continue;       /* IF EXISTS and missing: the notice said so */
                for (size_t j = 0; j < n; j++)
                        dup |= gids[j] == d->ids[i];
                if (!dup)
                        gids[n++] = d->ids[i];
        }
        if (n == 0) {
                free(gids);
                return STMT_DONE;
        }
        r = acat_drop_begin(ex->cat, gids, n, d->cascade, &txn, &err);
        free(gids);
        if (r < 0)
                return begin_failed(s, r, &err);
        return ddl_submit(s, txn, false);
}

/* Hands w to a write group (group_add()): STMT_PARKED until the group answers the
 * session, or r < 0 with w released.  The end of exec_insert() and exec_delete(). */
static int write_park(struct session *s, struct write *w)
{
        int r = group_add(s->ex, w);

        if (r < 0) {
                write_done(w);
                return r;
        }
        s->waiting = true;
        return STMT_PARKED;
}

/* An INSERT's write, taking the rows from the statement (the write owns them now). */
int insert_write(struct sql_insert *in, struct session *s, struct write *w)
{
        *w = (struct write){ .kind = WRITE_INSERT, .s = s, .gid = in->id, .n_rows = in->n_rows,
                             .on_conflict_skip = in->on_conflict_skip };
        w->table = strdup(in->table);
        w->rows = calloc(in->n_rows ? in->n_rows : 1, sizeof(*w->rows));
        w->row_lens = calloc(in->n_rows ? in->n_rows : 1, sizeof(*w->row_lens));
        if (in->conflict_key && !(w->conflict_key = strdup(in->conflict_key)))
                w->table = (free(w->table), NULL);
        if (!w->table || !w->rows || !w->row_lens) {
                write_done(w);
                return -ENOMEM;
        }
        for (size_t i = 0; i < in->n_rows; i++) {
                w->rows[i] = TAKE_PTR(in->rows[i].data);
                w->row_lens[i] = in->rows[i].len;
        }
        return 0;
}

/* INSERT ... ON CONFLICT DO UPDATE: its UPDATE, then the INSERT that skips the rows
 * whose key is taken, as one unit (adapter-sql-upsert.c note 1); the count is both's. */
static int exec_upsert(struct session *s, struct sql_stmt *st)
{
        struct write w[2] = {
                { .kind = WRITE_DELETE, .gid = st->insert.id, .delete_filter = st->insert.upsert,
                  .update = true, .eval_timeout_ms = s->statement_timeout_ms },
        };
        int r;

        w[0].table = strdup(st->insert.table);
        if (!w[0].table)
                return -ENOMEM;
        r = insert_write(&st->insert, s, &w[1]);
        if (r < 0) {
                write_done(&w[0]);
                return r;
        }
        w[1].n_block = 2;
        w[1].add_prev_count = true;
        r = group_add_unit(s->ex, w, 2);
        if (r < 0)
                return r;
        s->waiting = true;
        return STMT_PARKED;
}

int exec_insert(struct session *s, struct sql_stmt *st)
{
        struct write w;
        int r;

        if (st->insert.plan)
                return exec_delete(s, st);      /* INSERT ... SELECT */
        /* An UPDATE the optimizer proved empty (WHERE false): the INSERT alone. */
        if (st->insert.upsert && !(st->insert.upsert->kind_case == COORD__PLAN__RELATION__KIND_CONSTANT &&
                                   st->insert.upsert->constant->n_rows == 0))
                return exec_upsert(s, st);
        if (st->insert.returning) {
                r = exec_returning(s, st->insert.returning, false);     /* its errors first */
                if (r < 0)
                        return r;
        }
        r = insert_write(&st->insert, s, &w);

        if (r < 0)
                return r;
        return write_park(s, &w);
}

/* DELETE, UPDATE and INSERT ... SELECT: the controller reads and writes in one step. */
int exec_delete(struct session *s, struct sql_stmt *st)
{
        bool update = st->kind == SQL_STMT_UPDATE, insert = st->kind == SQL_STMT_INSERT;
        const struct sql_delete *d = update ? &st->update : &st->delete_;
        Coord__Plan__Relation *plan = insert ? st->insert.plan : d->plan;
        struct write w = { .kind = WRITE_DELETE, .s = s, .gid = insert ? st->insert.id : d->id,
                           .delete_filter = plan, .update = update, .insert_select = insert,
                           .eval_timeout_ms = s->statement_timeout_ms };
        const Coord__Plan__Peek *ret = insert ? st->insert.select_returning : d->returning;

        /* The optimizer proved that no row matches (WHERE false): nothing to write, and
         * a plan that reads no table is not one the controller takes. */
        if (plan->kind_case == COORD__PLAN__RELATION__KIND_CONSTANT && plan->constant->n_rows == 0) {
                snprintf(s->tag, sizeof(s->tag), "%s", insert ? "INSERT 0 0" : update ? "UPDATE 0"
                                                                                     : "DELETE 0");
                return ret ? exec_write_returned(s, ret, NULL, 0) : 0;
        }
        w.returning = ret ? (uint32_t)ret->n_columns : 0;

        w.table = strdup(insert ? st->insert.table : d->table);
        if (!w.table)
                return -ENOMEM;
        return write_park(s, &w);
}
