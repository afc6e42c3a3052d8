/* adapter-exec.c -- the statement executor.  See adapter-exec.h.
 *
 * This file is the core: a session and its statements one after the other (1), the
 * pgwire callbacks, cancel and statement_timeout (12), waiting for objects to be
 * enacted, the errors sent to clients, the executor's making and its accessors, with
 * the notes below for every file of the executor.  The rest, sharing
 * adapter-exec-internal.h (struct session, struct exec and what the files call of each
 * other):
 *   adapter-exec-link.c       requests to the controller and its coming and going (4)
 *   adapter-exec-groups.c     append groups (2), held groups (6), the writer mark (8),
 *                             the read fence (3)
 *   adapter-exec-reconcile.c  reconciliation of the built-in relations (5), publications
 *   adapter-exec-run.c        DDL and its catalog commit (3), runs (7), INSERT, DELETE,
 *                             UPDATE
 *   adapter-exec-read.c       SELECT, streamed (9) or over constants (11), SHOW, SET
 *   adapter-exec-txn.c        transaction blocks (10), implicit transactions (13)
 *   adapter-readhold.c        clients' holds of snapshot blocks (14) and long reads (9)
 *
 * NOTES ON THE DESIGN
 * (1) A session runs the statements of one request (a simple query's string, or one
 *     Execute) one after the other.  A statement either finishes at once (SET, SHOW,
 *     a DDL whose controller work is not awaited) or parks the session on a request to
 *     the controller; the reply resumes it.  pgwire_done() ends the request.
 * (2) Groups: at most one Append is in flight.  Its timestamp comes from the oracle when
 *     it is sent, so Appends reach the controller in timestamp order and every Append's
 *     timestamp is above every table's upper.  A statement's write is acknowledged only
 *     after its group's Ok: the rows are durable in storage and the oracle's read
 *     timestamp includes them (linearizable reads).
 * (2a) Every request to the controller is one frame of at most --max-frame-bytes, less
 *     EXEC_FRAME_SLACK (exec_frame_budget()).  A group whose Append would pass it is
 *     split before it is sent (group_fit(): after the last whole unit that fits -- a
 *     block's or an implicit transaction's writes are one unit, one Append, I7); a
 *     unit that alone passes it fails with 54000, and the groups behind it go on.  A
 *     read whose plan passes it fails with 54000 before it is sent (exec_select()).
 *     Queued, either could never be sent, and every write behind it would wait.
 * (3) DDL commits to the catalog first (the authority) and is answered right after the
 *     commit; the lifecycle follower enacts it on the controller.  Its built-in rows
 *     (coord_objects, coord_bounds, coord_requirements) go through a group the answer
 *     does not wait for.  Linearizable reads: the group is the fence (ex->fence) until
 *     applied; a read of those three relations choosing its own timestamp takes one >=
 *     the fence's ts, or waits until the fence is sent (fence_check()), so a read after
 *     the answer sees the rows; a publication's Ok likewise.  Reads of anything else
 *     neither wait nor move (stmt_reads_builtin_rows()).  Durability (I7): if the append
 *     is lost, reconciliation (5) re-derives the rows from the catalog.
 * (4) Every request to the controller carries a request id and keeps its encoded
 *     payload, so it can be resent after the controller restarts -- or when the link's
 *     send queue was full (the controller stopped or slow: -ENOBUFS), by the next tick
 *     (requests_retry()), in order.  An Append is never
 *     resent blindly: the controller's frontiers say whether it was applied (an Append
 *     moves the built-ins' upper -- the tables' shared frontier -- to ts + 1 atomically
 *     with its rows).
 * (5) Reconciliation.  coord_objects, coord_bounds and coord_requirements are functions
 *     of the committed catalog.  At start (and after a failed group that carried some of
 *     their rows) the adapter holds the groups carrying their rows, reads the three at
 *     the built-ins' upper - 1, and puts in front of every queued group one with the
 *     difference between the catalog and the relations plus the queued groups.  Only our
 *     appends change their contents, so that read is the state the queued groups start
 *     from.  It runs only with no catalog commit in flight, else again at the next tick.
 *     Reads of the three wait for it; reads at "now" are served meanwhile.  At start the
 *     writer mark (8) usually shows nothing was lost, and nothing is read.
 * (6) Held groups.  A group nobody waits for -- built-in rows of answered DDL and of
 *     publications, the idle upper tick -- is held EXEC_HOLD_US before it is sent, and
 *     goes at once when a statement's write joins it or a read waits for the fence; a
 *     read at or past an input's upper also sends it (hold_release(), exec_select()),
 *     since the controller answers that read only after the next append.  Why: every
 *     append is an fsync on the controller, which slows the catalog commit a DDL's
 *     answer waits for, and one timestamp per append would run the timestamps ahead of
 *     the clock (adapter-oracle.c note 4).  A DDL burst costs one append per
 *     EXEC_HOLD_US, whatever its size.
 * (7) Runs.  A simple query's consecutive CREATEs go to the catalog as ONE committer
 *     job and one synced write (catalog_commit_many(): all durable or none), each still
 *     its own transaction.  A statement joins the open run when it is a CREATE without
 *     notices or IF NOT EXISTS whose analysis met no object being created or dropped by
 *     anyone else (session_lookup()); it sees the run's own creations
 *     (acat_create_begin_after()).  Anything else commits the run and is analyzed again
 *     once it is durable: every statement sees exactly the catalog it would see one at a
 *     time.  A statement that fails (at analysis, or a CREATE) while a run is open
 *     rolls the run back with it, the string being one implicit transaction (13):
 *     run_rollback() answers the run's statements, then the error, and nothing of
 *     them is written -- unless its analysis met another session's object in flight
 *     (STMT_RETRY: the run first, the statement again alone).  CommandCompletes go
 *     out in order once durable; a failed commit errors the run's first statement.
 *     A run is built and submitted inside one session_resume() call; EXEC_RUN_MAX
 *     bounds it.
 * (8) Writer mark.  An Append may carry a mark (origin, seq), kept with coord_objects'
 *     upper and durable with the append's rows (Append.writer_mark,
 *     controller-server-append.c note 15).  It claims: the three relations, as this
 *     append leaves them, are f(catalog state at seq).  group_send() marks a group only
 *     when that holds by construction: the last group queued, no commit in flight, no
 *     reconciliation needed or running; other groups carry none (the controller keeps the
 *     last, still true).  An idle upper tick renews it.  origin is log entry 1's
 *     commit_ms (mark_origin_read()), so a mark of another catalog never matches.  At
 *     start (5) reads the log after the mark and, if no transaction there changes state
 *     (a lease record aside: no built-in row derives from it), reads and writes nothing;
 *     otherwise it reads and diffs.
 * (9) Streamed reads (issue 6).  A SELECT asks for its result in chunks of
 *     cfg.peek_chunk_bytes (PeekRequest.chunk_bytes; 0 = one message, as (5)'s reads
 *     keep).  With more = true the request stays pending (request.keep, .streamed), the
 *     session parked (s->stream), and the next chunk comes only on MSG_PEEK_NEXT: one
 *     chunk in flight per stream.  peek_rows() pushes a chunk's DataRows at once (O(chunk)
 *     per loop turn).  The next pull goes out before formatting when the client has at
 *     most EXEC_STREAM_QUEUED_MAX bytes queued, else once it drained to that mark
 *     (pgwire_notify_drained(), pg_drained()).  Ends: the last chunk; a MSG_ERROR; the
 *     client gone or cancelling (stream_abandon()); the controller's connection lost
 *     (streams_lost(): never resent, 58000).  The controller keeps the snapshot's hold
 *     until the stream ends (controller-server-peek.c note 5); a stream still running
 *     after READ_HOLD_STREAM_MS holds its inputs in the catalog too (s->stream_hold,
 *     adapter-readhold.c), released in stream_hold_end().  docs/wire.md, "Streamed
 *     reads".
 * (10) Transaction blocks (BEGIN ... COMMIT / ROLLBACK), as Materialize has them: a block
 *     either writes or reads.  Its INSERTs are checked and answered at once but kept in
 *     the session (s->txn_writes); COMMIT sends them as ONE group -- one Append, one
 *     timestamp, durable together or not at all (I7) -- and is answered when it is
 *     applied; ROLLBACK, a failed statement or the client leaving drops them, and
 *     nothing was written.  A read after a write (it could not see it) and a write
 *     after a read are 25000; DELETE, UPDATE and DDL, which write when they run, are
 *     25001 inside a block -- but CREATEs: a block may hold them instead (simple query
 *     protocol only) in the session's run (7), answered at once, seen by its later
 *     CREATEs, committed by COMMIT as one run (txn_holds_run(), run_flush()),
 *     abandoned by ROLLBACK, an error (txn_discard()) or the client leaving
 *     (session_free()); such a block neither reads nor writes.  Any error fails the
 *     block (txn_failed(), from the one place errors are sent): 25P02 for everything
 *     but COMMIT/ROLLBACK, which end it.
 *     ReadyForQuery carries 'I', 'T' or 'E' (pgwire_set_transaction_status()).
 * (11) Without the controller.  What needs no collection is answered by the adapter
 *     alone, so also while the controller is down or stopped: SET, SHOW, SHOW OBJECTS,
 *     BEGIN/COMMIT/ROLLBACK of a read block, and a SELECT over constants only (SELECT 1,
 *     version(), VALUES: exec_select_constant()).  Everything else waits for the
 *     controller, its requests resent when it returns (4), until it is answered,
 *     cancelled or timed out (12).
 * (12) statement_timeout, as PostgreSQL's (0, the default: none).  A statement that
 *     parks arms the session's timer (stmt_timer_arm()); whatever resumes the session
 *     disarms it (session_resume()).  When it fires, or when a CancelRequest comes, a
 *     statement that only waits -- a read for its reply, any statement for its object
 *     to be enacted or for the fence -- ends with 57014 (session_cancel()): a read's
 *     request is cancelled at the controller (peek_cancel(): a PeekNext with cancel,
 *     which also stops an evaluation in progress in its peek thread) or, the
 *     controller away, dropped.  A write still queued in a group never sent is taken out of it
 *     (write_unqueue()): it ends with 57014 and is not applied.  A write sent to the
 *     controller or a DDL's commit cannot be taken back, as in PostgreSQL a commit in
 *     progress cannot: it finishes (at most one group is in flight, note 2, so with
 *     the controller stopped only that group's statements wait) -- except a write whose
 *     plan the controller is still evaluating, alone in its group: asked to stop
 *     (write_eval_cancel()), it ends with the controller's 57014, nothing written.
 * (13) Implicit transactions.  A simple query of several statements outside a block is
 *     one transaction, as in PostgreSQL (s->txn_implicit, set by pg_query()): its
 *     INSERTs are answered at once and kept as a block's are (10); the end of the
 *     string commits them as one group (session_resume()), an error anywhere in it
 *     drops them (txn_failed()), ROLLBACK drops them, COMMIT commits them, BEGIN takes
 *     them into the block it opens.  A statement that cannot be kept -- a read (it
 *     must see them), DELETE, UPDATE, DDL -- commits them first (STMT_FLUSH,
 *     txn_implicit_stmt()) and runs after: an error it meets while running (not in
 *     its analysis, which comes before) leaves those INSERTs applied, where
 *     PostgreSQL would roll them back (docs/sql.md).
 * (14) One snapshot per block.  A block at REPEATABLE READ or SERIALIZABLE (BEGIN ...,
 *     SET TRANSACTION, SET transaction_isolation, or SET default_transaction_isolation
 *     before BEGIN) reads every SELECT without AS OF at the timestamp its first one
 *     chose (s->txn_ts, exec_select()): one snapshot, as PostgreSQL's REPEATABLE READ
 *     and Materialize's serializable reads.  The block holds that timestamp for each
 *     input it reads, from that read until the block ends (s->txn_hold,
 *     adapter-readhold.c; released in txn_set()); an input whose since or bound had
 *     passed it before the block read it fails the read with 40001 rather than read
 *     another time.  Other blocks read each statement at its own timestamp (READ COMMITTED).
 */
#include "adapter-exec-internal.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter-catalog.h"
#include "adapter-commit.h"
#include "adapter-oracle.h"
#include "adapter-pgwire.h"
#include "adapter-sql.h"
#include "catalog/catalog.h"
#include "ring/fring.h"
#include "log.h"
#include "loop/loop.h"
#include "node/node.h"
#include "row/row.h"
#include "util.h"

/* What prepare() keeps for execute(). */
struct prepared {
        char *sql;
        unsigned nparams;
};

/* ---- errors ---- */

void send_row_error(struct pgwire_conn *c, const struct row_error *e)
{
        struct pgcodec_error pe = {
                .sqlstate = e->sqlstate[0] ? e->sqlstate : "XX000",
                .message = e->message[0] ? e->message : "internal error",
                .detail = e->detail[0] ? e->detail : NULL,
                .hint = e->hint[0] ? e->hint : NULL,
                .position = e->position,
        };
        txn_failed(c);
        (void)pgwire_send_error(c, &pe);
}

void send_error(struct pgwire_conn *c, const char *sqlstate, const char *fmt, ...)
{
        struct row_error e = { .position = 0 };
        va_list ap;

        snprintf(e.sqlstate, sizeof(e.sqlstate), "%s", sqlstate);
        va_start(ap, fmt);
        vsnprintf(e.message, sizeof(e.message), fmt, ap);
        va_end(ap);
        send_row_error(c, &e);
}

/* The SQLSTATE of a failed durable write: 53100 (disk full) for ENOSPC and EDQUOT,
 * 58030 (I/O error) for anything else the file system said. */
const char *io_sqlstate(int r)
{
        return r == -ENOSPC || r == -EDQUOT ? "53100" : "58030";
}

/* Why the catalog failed, for a client: the store's message (the file system's
 * error, "catalog: sync log write failed: File too large"), else r's. */
const char *catalog_reason(struct exec *ex, int r)
{
        const char *msg = catalog_error(ex->store) < 0 ? catalog_last_error() : "";

        return msg[0] ? msg : strerror(-r);
}

/* ---- waiting for objects to be enacted ---- */

/* An object a statement writes or reads is on the controller once the frontier ring
 * shows it (a collection's or an index's slot).  Views hold no data; built-ins are
 * there from the start. */
static bool enacted(struct exec *ex, uint64_t gid)
{
        const struct acat_item *it = acat_by_gid(ex->cat, gid);
        struct fring_reader *rd = node_ring(ex->node);
        struct fring_frontier f;

        if (!it || it->builtin || it->kind == SQL_OBJECT_VIEW)
                return true;    /* unknown: let the controller answer */
        return rd && fring_lookup(rd, gid, &f) == 0;
}

/* The first object st needs that the controller does not have yet, or 0. */
static uint64_t stmt_unenacted(struct exec *ex, const struct sql_stmt *st)
{
        switch (st->kind) {
        case SQL_STMT_INSERT:
                if (!enacted(ex, st->insert.id))
                        return st->insert.id;
                for (size_t i = 0; i < st->n_physical_inputs; i++)
                        if (!enacted(ex, st->physical_inputs[i]))
                                return st->physical_inputs[i];
                return 0;
        case SQL_STMT_DELETE:
                return enacted(ex, st->delete_.id) ? 0 : st->delete_.id;
        case SQL_STMT_UPDATE:
                return enacted(ex, st->update.id) ? 0 : st->update.id;
        case SQL_STMT_SUBSCRIBE:
                return enacted(ex, st->subscribe.id) ? 0 : st->subscribe.id;
        case SQL_STMT_SELECT:
                for (size_t i = 0; i < st->n_physical_inputs; i++)
                        if (!enacted(ex, st->physical_inputs[i]))
                                return st->physical_inputs[i];
                return 0;
        default:
                return 0;
        }
}

static int exec_stmt(struct session *s, struct sql_stmt *st);

/* The statement failed with r: answers it unless that was done (-ECANCELED), frees it. */
static void stmt_failed(struct session *s, int r)
{
        if (r != -ECANCELED)
                send_stmt_failed(s, r);
        s->stmt = sql_stmt_free(s->stmt);
}

/* Run a statement that waited for its objects again, and the session on from there. */
void enact_retry(struct session *s)
{
        int r;

        s->waiting = false;
        if (s->gone) {
                s->stmt = sql_stmt_free(s->stmt);
                session_resume(s);      /* frees it */
                return;
        }
        r = exec_stmt(s, s->stmt);
        if (r == STMT_PARKED)
                return;
        if (r < 0) {
                stmt_failed(s, r);
                s->next = SIZE_MAX;
        }
        session_resume(s);
}

/* Frontier records arrived (or a tick): resume the statements whose objects are there,
 * fail the ones that waited too long. */
void exec_on_frontiers(struct exec *ex)
{
        struct session *ready = NULL, **pp = &ex->enact_waiters;
        uint64_t now = now_ms();

        while (*pp) {
                struct session *s = *pp;
                bool there = s->gone || enacted(ex, s->enact_gid), late = now >= s->enact_deadline_ms;

                if (!there && !late) {
                        pp = &s->enact_next;
                        continue;
                }
                *pp = s->enact_next;
                if (!there) {
                        const struct acat_item *it = acat_by_gid(ex->cat, s->enact_gid);
                        struct row_error e = { .position = 0 };

                        row_error_set(&e, -ETIMEDOUT, "57014", "timed out after %llu ms waiting for %s "
                                      "\"%s\" to be installed on the controller",
                                      (unsigned long long)ex->cfg.peek_timeout_ms,
                                      it ? acat_kind_name(it->kind) : "object", it ? it->name : "?");
                        send_row_error(s->c, &e);
                        s->stmt = sql_stmt_free(s->stmt);
                        s->next = SIZE_MAX;
                        s->waiting = false;
                        session_resume(s);
                        continue;
                }
                s->enact_next = ready;          /* resumed below, in arrival order */
                ready = s;
        }
        while (ready) {
                struct session *s = ready, *prev = NULL;

                /* oldest first: the list is reversed */
                for (struct session *q = ready; q->enact_next; q = q->enact_next)
                        prev = q, s = q->enact_next;
                if (prev)
                        prev->enact_next = NULL;
                else
                        ready = NULL;
                s->enact_next = NULL;
                enact_retry(s);
        }
}

/* Does st read a relation whose rows DDL and publications write through groups
 * (coord_objects, coord_bounds, coord_requirements)?  Only such a read waits for the
 * fence (3) and for reconciliation (5); every other read's timestamp already covers the
 * writes it must see (oracle_read_ts()).  By logical inputs, not physical: a read served
 * from an index on coord_objects (or on a view over it) Gets the index, and must wait
 * for the fence all the same. */
bool stmt_reads_builtin_rows(const struct sql_stmt *st)
{
        if (st->kind != SQL_STMT_SELECT)
                return false;
        for (size_t i = 0; i < st->n_inputs; i++)
                for (size_t k = 0; k < ELEMENTSOF(reconcile_gids); k++)
                        if (st->inputs[i] == reconcile_gids[k])
                                return true;
        return false;
}

/* ---- a session: its statements, one after the other ---- */

/* The session itself, with a transaction block's unsent writes (ROLLBACK by leaving). */
static void session_free(struct session *s)
{
        if (s->stmt_timer)      /* (12) */
                loop_timer_cancel(node_loop(s->ex->node), s->stmt_timer);
        loop_timer_cancel(node_loop(s->ex->node), s->stream_hold_timer);
        read_hold_release(&s->stream_hold);
        read_hold_release(&s->txn_hold);
        run_abandon(s, -ECANCELED);     /* (10) a block's CREATEs */
        for (size_t i = 0; i < s->n_txn_writes; i++)
                write_done(&s->txn_writes[i]);
        free(s->txn_writes);
        free(s);
}

/* Run one analyzed statement: STMT_DONE (tag in s->tag), STMT_PARKED, -ECANCELED (an
 * error was sent), or another -errno (reported as an internal error). */
/* The statements' executors, by kind (adapter-exec-run.c, -read.c, -txn.c). */
static int (*const exec_fns[_SQL_STMT_KIND_MAX])(struct session *s, struct sql_stmt *st) = {
        [SQL_STMT_CREATE_TABLE] = exec_create_table,
        [SQL_STMT_DROP] = exec_drop,
        [SQL_STMT_INSERT] = exec_insert,
        [SQL_STMT_DELETE] = exec_delete,
        [SQL_STMT_UPDATE] = exec_delete,
        [SQL_STMT_SELECT] = exec_select,
        [SQL_STMT_CREATE_VIEW] = exec_create_view,
        [SQL_STMT_CREATE_MATERIALIZED_VIEW] = exec_create_view,
        [SQL_STMT_CREATE_INDEX] = exec_create_index,
        [SQL_STMT_CREATE_SINK] = exec_create_sink,
        [SQL_STMT_CREATE_SOURCE] = exec_create_source,
        [SQL_STMT_ALTER_RETAIN_HISTORY] = exec_alter_retain,
        [SQL_STMT_ALTER_SINK] = exec_alter_sink,
        [SQL_STMT_SUBSCRIBE] = exec_subscribe,
        [SQL_STMT_SHOW_OBJECTS] = exec_show_objects,
        [SQL_STMT_SHOW_VARIABLE] = exec_show_variable,
        [SQL_STMT_SET_VARIABLE] = exec_set_variable,
        [SQL_STMT_TRANSACTION] = exec_transaction,
};

static int exec_stmt(struct session *s, struct sql_stmt *st)
{
        struct exec *ex = s->ex;
        uint64_t missing = stmt_unenacted(ex, st);
        int r;

        if (st->kind == SQL_STMT_SELECT && !st->select.has_as_of && stmt_reads_builtin_rows(st) &&
            ((ex->fence && !ex->fence->rq) || ex->reconcile_needed || ex->reconciling)) {
                /* (3) an acknowledged DDL's rows are queued, their ts not known yet, or
                 * (5) the rows lost by a previous incarnation are being re-derived:
                 * wait until they are sent (fence_check()). */
                s->enact_next = ex->fence_waiters;
                ex->fence_waiters = s;
                s->waiting = true;
                /* A held group goes now (6); if it is sent at once, fence_check()
                 * runs this statement again in there, so nothing may touch s after. */
                groups_kick(ex);
                return STMT_PARKED;
        }
        if (missing) {
                /* The catalog has the object, the controller not yet: wait for it to
                 * show in the frontier ring, no round trip (exec_on_frontiers()). */
                s->enact_gid = missing;
                s->enact_deadline_ms = now_ms() + s->ex->cfg.peek_timeout_ms;
                s->enact_next = s->ex->enact_waiters;
                s->ex->enact_waiters = s;
                s->waiting = true;
                return STMT_PARKED;
        }
        for (size_t i = 0; i < st->n_notices; i++) {
                struct pgcodec_error pe = {
                        .severity = "NOTICE", .sqlstate = st->notices[i].sqlstate,
                        .message = st->notices[i].message,
                };
                (void)pgwire_send_notice(s->c, &pe);
        }
        snprintf(s->tag, sizeof(s->tag), "%s", sql_stmt_tag(st));
        r = txn_stmt(s, st);
        if (r != 1)
                return r;
        if ((unsigned)st->kind >= ELEMENTSOF(exec_fns) || !exec_fns[st->kind]) {
                send_error(s->c, "0A000", "statement not supported");
                return -ECANCELED;
        }
        return exec_fns[st->kind](s, st);
}

static bool session_cancel(struct session *s, const char *why);

static void on_stmt_timeout(struct loop *l, void *userdata)
{
        struct session *s = userdata;

        (void)l;
        s->stmt_timer = NULL;   /* fired: nothing to cancel */
        (void)session_cancel(s, "statement timeout");
}

/* (12) The statement parked: it may wait statement_timeout, from now. */
static void stmt_timer_arm(struct session *s)
{
        int r;

        if (!s->statement_timeout_ms || s->stmt_timer)
                return;
        r = loop_timer_add(node_loop(s->ex->node), (uint64_t)s->statement_timeout_ms * 1000000u,
                           on_stmt_timeout, s, &s->stmt_timer);
        if (r < 0) {
                s->stmt_timer = NULL;
                log_warn_errno(r, "statement_timeout_failed", "peer=%s", pgwire_conn_peer(s->c));
        }
}

static void stmt_timer_disarm(struct session *s)
{
        if (s->stmt_timer) {
                loop_timer_cancel(node_loop(s->ex->node), s->stmt_timer);
                s->stmt_timer = NULL;
        }
}

/* Finish the running statement (its tag is ready) and run the next ones until one parks
 * or the request is done. */
void session_resume(struct session *s)
{
        struct exec *ex = s->ex;
        struct row_error err;
        int r;

        stmt_timer_disarm(s);   /* (12) what was parked is over */
        if (s->stmt) {
                if (!s->gone)
                        (void)pgwire_send_command_complete(s->c, s->tag);
                s->stmt = sql_stmt_free(s->stmt);
        }
        while (!s->gone && !s->extended && s->batch && s->next < sql_batch_size(s->batch)) {
                memset(&err, 0, sizeof(err));
                s->run_touched = false;
                r = sql_analyze(s->batch, s->next++, s->n_run ? &session_sql_ops : &acat_sql_ops,
                                s->n_run ? (void *)s : (void *)ex->cat,
                                &(struct sql_params){ .session = &s->sql }, &s->stmt, &err);
                if (r >= 0 && s->n_run && (txn_holds_run(s) || stmt_joins_run(s, s->stmt)))
                        r = exec_stmt(s, s->stmt);
                else if (r >= 0 && s->n_run)
                        r = STMT_RETRY;
                else if (r < 0 && s->n_run && run_rollback(s) == STMT_RETRY)
                        ;                       /* another's object in flight: after the run */
                else if (r < 0) {
                        send_row_error(s->c, &err);
                        break;
                } else
                        r = exec_stmt(s, s->stmt);
                if (r == STMT_RUN) {
                        s->stmt = sql_stmt_free(s->stmt);
                        continue;
                }
                if ((r == STMT_RETRY || (r < 0 && s->n_run)) && !txn_holds_run(s)) {
                        /* (7) the run first; this statement again once it is durable.
                         * Nothing was sent for it: its errors are quiet while a run is
                         * open (STMT_RETRY), so -ECANCELED cannot come with a run. */
                        assert(s->n_run > 0 && r != -ECANCELED);
                        s->stmt = sql_stmt_free(s->stmt);
                        s->next--;
                        if (run_flush(s) == STMT_PARKED)
                                return;
                        break;
                }
                assert(s->n_run == 0 || txn_holds_run(s) || r == STMT_PARKED);  /* (10) COMMIT */
                if (r == STMT_FLUSH) {
                        /* (13) the string's INSERTs first; this statement again after. */
                        s->stmt = sql_stmt_free(s->stmt);
                        s->next--;
                        r = txn_commit(s);
                        if (r == STMT_PARKED)
                                return;
                        if (r != -ECANCELED)
                                send_stmt_failed(s, r);
                        break;
                }
                if (r == STMT_PARKED) {
                        stmt_timer_arm(s);
                        return;
                }
                if (r < 0) {
                        stmt_failed(s, r);
                        break;
                }
                (void)pgwire_send_command_complete(s->c, s->tag);
                s->stmt = sql_stmt_free(s->stmt);
        }
        if (s->n_run && !txn_holds_run(s) && run_flush(s) == STMT_PARKED)
                return;         /* the last statements were a run: done when durable */
        if (!s->gone && s->txn == TXN_NONE && s->n_txn_writes) {
                /* (13) the end of the string commits its INSERTs */
                assert(s->txn_implicit);
                r = txn_commit(s);
                if (r == STMT_PARKED)
                        return;
                if (r != -ECANCELED)
                        send_stmt_failed(s, r);
        }
        s->txn_implicit = false;
        s->batch = sql_batch_free(s->batch);
        s->extended = false;
        pgwire_done(s->c);
        if (s->gone)
                session_free(s);
}

/* ---- pgwire callbacks ---- */

static int pg_connect(struct pgwire_conn *c, void *userdata)
{
        struct session *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        s->ex = userdata;
        s->c = c;
        s->sql = (struct sql_session){ .user = pgwire_conn_param(c, "user"),
                                       .database = pgwire_conn_param(c, "database"),
                                       .backend_pid = pgwire_conn_pid(c) };
        session_startup_options(s);
        pgwire_conn_set_userdata(c, s);
        return 0;
}

static void pg_disconnect(struct pgwire_conn *c, int reason, void *userdata)
{
        struct session *s = pgwire_conn_userdata(c);

        if (!s)
                return;
        if (reason < 0)
                log_info("sql_client_dropped", "peer=%s reason=%d", pgwire_conn_peer(c), reason);
        if (s->sub) {
                subscribe_gone(s);      /* frees s (adapter-subscribe.c note 4) */
                return;
        }
        if (s->stream && !s->pull_out) {
                /* (9) Waiting for this client to read: no chunk is coming to end the
                 * request, so it ends here -- pgwire_done() (the conn waits for it,
                 * LIFETIME in adapter-pgwire.h), then the session is freed. */
                struct request *rq = s->stream;

                if (!stream_abandon(userdata, s, rq))
                        request_free(rq);
                s->waiting = false;
                s->gone = true;
                s->next = SIZE_MAX;
                session_resume(s);
                return;
        }
        if (s->waiting) {
                s->gone = true;         /* freed when its request completes */
                return;
        }
        sql_batch_free(s->batch);
        sql_stmt_free(s->stmt);
        session_free(s);
}

static void pg_query(struct pgwire_conn *c, const char *sql, void *userdata)
{
        struct session *s = pgwire_conn_userdata(c);
        struct row_error err = { .position = 0 };
        int r;

        committer_poll(s->ex->committer);       /* adapter-commit.h: before any statement */
        r = sql_parse(sql, &s->batch, &err);
        if (r < 0) {
                send_row_error(c, &err);
                pgwire_done(c);
                return;
        }
        if (sql_batch_size(s->batch) == 0) {
                (void)pgwire_send_empty_query(c);
                s->batch = sql_batch_free(s->batch);
                pgwire_done(c);
                return;
        }
        s->next = 0;
        s->txn_implicit = s->txn == TXN_NONE && sql_batch_size(s->batch) > 1;  /* (13) */
        session_resume(s);
}

/* Parse: syntax-check, count the parameters ($n) and describe the result columns by
 * analyzing with NULL parameters. */
static void pg_prepare(struct pgwire_conn *c, const char *sql, unsigned ntypes,
                       const uint32_t *types, void *userdata)
{
        struct session *s = pgwire_conn_userdata(c);
        struct row_error err = { .position = 0 };
        struct sql_stmt *st = NULL;
        struct sql_params params = { 0 };
        const char *nulls[64] = { NULL };
        uint32_t ptypes[64] = { 0 };
        struct pgwire_statement_desc desc = { 0 };
        struct pgcodec_column *cols = NULL;
        struct prepared *p;
        unsigned nparams = ntypes;
        int r;

        committer_poll(s->ex->committer);       /* adapter-commit.h: before any statement */
        for (unsigned i = 0; i < ntypes && i < ELEMENTSOF(ptypes); i++)
                ptypes[i] = types[i];
        for (;;) {
                params = (struct sql_params){ .n = nparams, .values = nulls, .types = ptypes,
                                              .session = &s->sql, .describe = true };
                memset(&err, 0, sizeof(err));
                st = sql_stmt_free(st);
                r = sql_analyze_one(sql, &acat_sql_ops, s->ex->cat, &params, &st, &err);
                if (r < 0 && strcmp(err.sqlstate, "42P02") == 0) {
                        unsigned m;
                        if (sscanf(err.message, "there is no parameter $%u", &m) == 1 &&
                            m > nparams && m <= ELEMENTSOF(nulls)) {
                                nparams = m;
                                continue;
                        }
                }
                break;
        }
        if (r < 0 && (strcmp(err.sqlstate, "42601") == 0 || strcmp(err.sqlstate, "42P01") == 0 ||
                      strcmp(err.sqlstate, "42703") == 0 || strcmp(err.sqlstate, "42P02") == 0)) {
                send_row_error(c, &err);
                sql_stmt_free(st);
                pgwire_done(c);
                return;
        }
        p = calloc(1, sizeof(*p));
        if (!p || !(p->sql = strdup(sql))) {
                free(p);
                sql_stmt_free(st);
                send_error(c, "53200", "out of memory");
                pgwire_done(c);
                return;
        }
        p->nparams = nparams;
        desc.nparams = nparams;
        desc.param_types = ptypes;
        desc.stmt = p;
        const Coord__Plan__Peek *rpeek = r != 0 || !st               ? NULL
                                         : st->kind == SQL_STMT_INSERT ? st->insert.returning
                                         : st->kind == SQL_STMT_DELETE ? st->delete_.returning
                                         : st->kind == SQL_STMT_UPDATE ? st->update.returning
                                                                       : NULL;

        if (r == 0 && (st->kind == SQL_STMT_SELECT || st->kind == SQL_STMT_SHOW_OBJECTS ||
                       st->kind == SQL_STMT_SHOW_VARIABLE || rpeek)) {
                desc.returns_rows = true;
                if (st->kind == SQL_STMT_SELECT || rpeek) {
                        const Coord__Plan__Peek *peek = st->kind == SQL_STMT_SELECT
                                                                ? st->select.peek : rpeek;
                        size_t nc = peek->output_arity && peek->output_arity < peek->n_columns
                                            ? peek->output_arity : peek->n_columns;
                        cols = calloc(nc ? nc : 1, sizeof(*cols));
                        for (size_t i = 0; cols && i < nc; i++) {
                                cols[i].name = peek->columns[i]->name;
                                cols[i].type = (uint32_t)peek->columns[i]->type;
                                cols[i].typmod = -1;
                        }
                        desc.ncolumns = cols ? (unsigned)nc : 0;
                } else if (st->kind == SQL_STMT_SHOW_OBJECTS) {
                        static const struct pgcodec_column so[2] = {
                                { .name = "name", .type = ROW_TYPE_TEXT, .typmod = -1 },
                                { .name = "type", .type = ROW_TYPE_TEXT, .typmod = -1 },
                        };
                        desc.ncolumns = 2;
                        desc.columns = so;
                } else {
                        cols = calloc(1, sizeof(*cols));
                        if (cols) {
                                cols[0] = (struct pgcodec_column){ .name = st->show_variable.name,
                                                                   .type = ROW_TYPE_TEXT, .typmod = -1 };
                                desc.ncolumns = 1;
                        }
                }
                if (cols)
                        desc.columns = cols;
        }
        (void)pgwire_describe_statement(c, &desc);
        free(cols);
        sql_stmt_free(st);
        pgwire_done(c);
}

static void pg_execute(struct pgwire_conn *c, void *stmt, unsigned nparams,
                       const struct pgwire_param *params, void *userdata)
{
        struct session *s = pgwire_conn_userdata(c);
        struct prepared *p = stmt;
        struct row_error err = { .position = 0 };
        const char **vals = calloc(nparams ? nparams : 1, sizeof(*vals));
        uint32_t *types = calloc(nparams ? nparams : 1, sizeof(*types));
        struct sql_params sp;
        int r;

        committer_poll(s->ex->committer);       /* adapter-commit.h: before any statement */
        if (!vals || !types) {
                free(vals);
                free(types);
                send_error(c, "53200", "out of memory");
                pgwire_done(c);
                return;
        }
        for (unsigned i = 0; i < nparams; i++) {
                vals[i] = params[i].value;
                types[i] = params[i].type;
        }
        sp = (struct sql_params){ .n = nparams, .values = vals, .types = types,
                                  .session = &s->sql };
        r = sql_analyze_one(p->sql, &acat_sql_ops, s->ex->cat, &sp, &s->stmt, &err);
        free(vals);
        free(types);
        if (r < 0) {
                send_row_error(c, &err);
                pgwire_done(c);
                return;
        }
        s->extended = true;
        r = exec_stmt(s, s->stmt);
        if (r == STMT_PARKED) {
                stmt_timer_arm(s);
                return;
        }
        if (r < 0)
                stmt_failed(s, r);
        session_resume(s);
}

/* Take s off a list of waiting sessions (enact_next links); whether it was there. */
static bool waiters_unlink(struct session **head, struct session *s)
{
        for (struct session **pp = head; *pp; pp = &(*pp)->enact_next)
                if (*pp == s) {
                        *pp = s->enact_next;
                        s->enact_next = NULL;
                        return true;
                }
        return false;
}

/* (12) Take s's write (a COMMIT's: its block's) out of a group never sent: no
 * timestamp was taken for it (g->ts == 0), so nothing of it can have been applied,
 * and the statement ends as if it had never run.  Whether it was there.  A group
 * sent once (ts set, in flight or waiting to be resent after the controller's
 * return, note 4) keeps its writes: they may be applied. */
static bool write_unqueue(struct exec *ex, struct session *s)
{
        for (struct group *g = ex->groups; g; g = g->next) {
                if (g->ts || g->rq)
                        continue;
                for (size_t i = 0; i < g->n; i++) {
                        size_t n, first;

                        if (g->writes[i].s != s)
                                continue;
                        n = g->writes[i].n_block ? g->writes[i].n_block : 1;
                        assert(n <= i + 1);
                        first = i + 1 - n;
                        for (size_t k = first; k <= i; k++)
                                write_done(&g->writes[k]);
                        memmove(&g->writes[first], &g->writes[i + 1], (g->n - i - 1) * sizeof(*g->writes));
                        g->n -= n;
                        return true;
                }
        }
        return false;
}

/* (12) End s's statement with 57014 "canceling statement due to <why>" if it only
 * waits: a read for its reply (dropped when it comes; a request never sent is
 * dropped now), any statement for its object or the fence.  A write in a group or a
 * commit finishes.  Whether it ended. */
static bool session_cancel(struct session *s, const char *why)
{
        struct exec *ex = s->ex;
        struct request *rq;

        if (s->sub)
                return subscribe_cancel(s, why);
        if (!s->waiting || !s->stmt)
                return false;
        if (!waiters_unlink(&ex->enact_waiters, s) && !waiters_unlink(&ex->fence_waiters, s) &&
            !write_unqueue(ex, s)) {
                if (s->stmt->kind != SQL_STMT_SELECT) {
                        /* Sent: only a plan being evaluated can still stop. */
                        struct group *g = ex->groups;

                        if (g && g->rq && g->n == 1 && g->writes[0].s == s &&
                            g->writes[0].delete_filter && ex->controller_up) {
                                write_eval_cancel(ex, g->rq);
                                log_info("write_cancel_sent", "peer=%s reason=\"%s\"",
                                         pgwire_conn_peer(s->c), why);
                        }
                        return false;
                }
                for (rq = ex->pending.next; rq != &ex->pending; rq = rq->next)
                        if (rq->type == COORD__MSG_TYPE__MSG_PEEK && rq->ctx == s)
                                break;
                if (rq == &ex->pending)
                        return false;
                if (s->stream && !stream_abandon(ex, s, rq))
                        request_free(rq);       /* (9) no chunk is coming for it */
                else if (!s->stream && !ex->controller_up)
                        request_free(rq);       /* (4) it would be resent for nobody */
                else if (!s->stream)
                        peek_cancel(ex, rq);    /* the controller stops evaluating it */
                else
                        rq->ctx = NULL;
        }
        log_info("query_cancelled", "peer=%s reason=\"%s\"", pgwire_conn_peer(s->c), why);
        if (!s->gone)
                send_error(s->c, "57014", "canceling statement due to %s", why);
        s->waiting = false;
        s->next = SIZE_MAX;
        s->stmt = sql_stmt_free(s->stmt);
        session_resume(s);
        return true;
}

/* CancelRequest: (12). */
static void pg_cancel(struct pgwire_conn *c, void *userdata)
{
        struct session *s = pgwire_conn_userdata(c);

        (void)userdata;
        if (s)
                (void)session_cancel(s, "user request");
}

static void pg_stmt_free(void *stmt, void *userdata)
{
        struct prepared *p = stmt;

        if (!p)
                return;
        free(p->sql);
        free(p);
}

static const struct pgwire_callbacks pg_callbacks = {
        .connect = pg_connect,
        .disconnect = pg_disconnect,
        .query = pg_query,
        .prepare = pg_prepare,
        .execute = pg_execute,
        .stmt_free = pg_stmt_free,
        .cancel = pg_cancel,
        .drained = pg_drained,
};

/* ---- the executor: its making, its end, its accessors ---- */

/* (9) PeekResults are unpacked into an arena (row_arena_allocator()): protobuf-c
 * allocates every row's bytes on its own, and a third of the adapter's CPU at 1,000
 * polls/s of 1,000 rows went to malloc and free (glibc's malloc_consolidate() the
 * most).  The arena is reset after each message, keeping one 64 KiB chunk. */
#define UNPACK_ARENA_CHUNK (64u << 10)

/* Threads calling catalog_commit(): concurrent DDL statements share one fsync. */
#define EXEC_COMMIT_THREADS 4

/* The oracle's high-water mark, committed off the loop (adapter-oracle.c note 5). */
struct hwm_commit {
        struct exec *ex;
        uint64_t value;
};

static void hwm_committed(void *ctx, int r, uint64_t seq)
{
        struct hwm_commit *h = ctx;

        if (r < 0) {
                log_error_errno(r, "oracle_hwm_commit_failed", "hwm=%llu", (unsigned long long)h->value);
                h->ex->fatal = r;       /* the store is in its sticky error state */
        }
        oracle_hwm_committed(h->ex->oracle, h->value, r);
        free(h);
}

static int hwm_submit(void *ctx, uint64_t value)
{
        struct exec *ex = ctx;
        struct hwm_commit *h = malloc(sizeof(*h));
        uint8_t v[8];
        struct catalog_op op = {
                .kind = CATALOG_OP_PUT, .cf = CATALOG_CF_META,
                .key = ORACLE_META_HWM, .key_len = strlen(ORACLE_META_HWM),
                .value = v, .value_len = sizeof(v),
        };
        int r;

        if (!h)
                return -ENOMEM;
        *h = (struct hwm_commit){ .ex = ex, .value = value };
        be64_put(v, value);
        r = committer_submit(ex->committer, &op, 1, hwm_committed, h);
        if (r < 0)
                free(h);
        return r;
}

static void hwm_drain(void *ctx)
{
        struct exec *ex = ctx;

        committer_drain(ex->committer);
}

/* (8) The catalog's origin: the commit_ms of its log entry 1 (the writer epoch of its
 * first start); 0 when it cannot be read (then no marks). */
static uint64_t mark_origin_read(struct catalog *store)
{
        struct catalog_log_iter *it = NULL;
        Coord__CatalogTxn *txn = NULL;
        uint64_t origin = 0;

        if (catalog_log_iter_new(store, 0, &it) >= 0 && catalog_log_next(it, &txn) == 1) {
                if (txn->seq == 1)
                        origin = txn->commit_ms;
                coord__catalog_txn__free_unpacked(txn, NULL);
        }
        catalog_log_iter_free(it);
        return origin;
}

int exec_new(struct node *n, struct catalog *store, const struct exec_config *cfg,
             struct exec **ret)
{
        struct pgwire_config pc;
        _cleanup_free_ char *unix_path = NULL;
        struct exec *ex;
        int r;

        ex = calloc(1, sizeof(*ex));
        if (!ex)
                return -ENOMEM;
        ex->node = n;
        ex->store = store;
        ex->cfg = *cfg;
        ex->pending.next = ex->pending.prev = &ex->pending;
        ex->groups_tail = &ex->groups;
        ex->reconcile_needed = true;    /* (5) an earlier life may have lost rows */
        ex->arena = (struct row_arena){ .chunk = UNPACK_ARENA_CHUNK };
        ex->arena_pa = row_arena_allocator(&ex->arena);
        r = acat_open(store, &ex->cat);
        if (r < 0) {
                log_error_errno(r, "catalog_load_failed", "");
                goto fail;
        }
        r = acat_holds_drop_stale(ex->cat);     /* adapter-hold.c note 2 */
        if (r < 0) {
                log_error_errno(r, "catalog_holds_drop_failed", "");
                goto fail;
        }
        if (r > 0)
                log_info("catalog_holds_dropped", "holds=%d reason=earlier_incarnation", r);
        r = oracle_open(store, &ex->oracle);
        if (r < 0) {
                log_error_errno(r, "oracle_open_failed", "");
                goto fail;
        }
        oracle_set_clock_offset(ex->oracle, cfg->test_clock_offset_ms);
        ex->mark_origin = mark_origin_read(store);
        r = committer_new(node_loop(n), store, EXEC_COMMIT_THREADS, &ex->committer);
        if (r >= 0)
                committer_set_hist(ex->committer, cfg->commit_hist);
        if (r < 0) {
                log_error_errno(r, "committer_failed", "");
                goto fail;
        }
        oracle_set_persister(ex->oracle, &(struct oracle_persister){
                                     .submit = hwm_submit, .drain = hwm_drain, .ctx = ex });
        {
                struct acat_load_times lt;

                acat_load_times(ex->cat, &lt);
                log_info("catalog_loaded", "objects=%zu oracle_hwm=%llu scan_us=%llu link_us=%llu",
                         acat_count_user(ex->cat), (unsigned long long)oracle_hwm(ex->oracle),
                         (unsigned long long)lt.scan_us, (unsigned long long)lt.link_us);
        }
        pgwire_config_init(&pc);
        pc.host = cfg->pg_host;
        pc.statement_hist = cfg->statement_hist;
        pc.port = cfg->pg_port;
        if (cfg->pg_unix_dir && asprintf(&unix_path, "%s/.s.PGSQL.%u", cfg->pg_unix_dir,
                                         (unsigned)cfg->pg_port) < 0) {
                r = -ENOMEM;
                goto fail;
        }
        pc.unix_path = unix_path;
        r = pgwire_server_new(node_loop(n), &pc, &pg_callbacks, ex, &ex->pg);
        if (r < 0) {
                log_error_errno(r, "sql_listen_failed", "host=%s port=%u", cfg->pg_host,
                                (unsigned)cfg->pg_port);
                goto fail;
        }
        log_info("sql_listening", "host=%s port=%u unix=%s", cfg->pg_host,
                 (unsigned)pgwire_server_port(ex->pg), unix_path ? unix_path : "-");
        r = loop_timer_add(node_loop(n), (uint64_t)cfg->tick_ms * 1000000ull, on_tick, ex, &ex->tick);
        if (r < 0)
                goto fail;
        *ret = ex;
        return 0;
fail:
        exec_free(ex);
        return r;
}

struct exec *exec_free(struct exec *ex)
{
        if (!ex)
                return NULL;
        if (ex->tick)
                loop_timer_cancel(node_loop(ex->node), ex->tick);
        if (ex->hold)
                loop_timer_cancel(node_loop(ex->node), ex->hold);
        ex->pg = pgwire_server_free(ex->pg);
        ex->committer = committer_free(ex->committer);
        read_holds_free_all(ex);
        while (ex->pending.next != &ex->pending)
                request_free(ex->pending.next);
        while (ex->groups) {
                struct group *g = ex->groups;
                ex->groups = g->next;
                group_free(g);
        }
        for (unsigned i = 0; i < ELEMENTSOF(ex->reconcile_res); i++)
                if (ex->reconcile_res[i])
                        coord__peek_result__free_unpacked(ex->reconcile_res[i], NULL);
        ex->oracle = oracle_free(ex->oracle);
        ex->cat = acat_free(ex->cat);
        row_arena_done(&ex->arena);
        free(ex);
        return NULL;
}

struct adapter_catalog *exec_catalog(struct exec *ex)
{
        return ex->cat;
}

unsigned exec_commits_in_flight(const struct exec *ex)
{
        return committer_in_flight(ex->committer);
}

int exec_catalog_error(const struct exec *ex)
{
        return ex->fatal;
}

uint64_t exec_builtin_mark(const struct exec *ex)
{
        return ex->mark_acked;
}

uint64_t exec_builtin_reads(const struct exec *ex)
{
        return ex->builtin_reads;
}

uint64_t exec_ddl_direct_replies(const struct exec *ex)
{
        return ex->ddl_direct_replies;
}

uint64_t exec_ddl_after_publication(const struct exec *ex)
{
        return ex->ddl_after_publication;
}

void exec_stream_stats(const struct exec *ex, uint64_t *ret_chunks, uint64_t *ret_waits)
{
        *ret_chunks = ex->stream_chunks;
        *ret_waits = ex->stream_waits;
}

void exec_oracle_persists(const struct exec *ex, uint64_t *ret_sync, uint64_t *ret_async)
{
        *ret_sync = oracle_sync_persists(ex->oracle);
        *ret_async = oracle_async_persists(ex->oracle);
}
