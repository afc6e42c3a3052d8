/* adapter-exec-txn.c -- the statement executor's transaction blocks (10): BEGIN,
 * COMMIT and ROLLBACK, a block's INSERTs kept until COMMIT sends them as one group, the
 * rules of a block that reads or writes, its status for ReadyForQuery, a failed block;
 * and implicit transactions, a simple query's statements as one (13).
 *
 * The numbered notes are in adapter-exec.c (NOTES ON THE DESIGN).  What the executor's
 * files share is adapter-exec-internal.h.  Loop thread only.
 */
#include "adapter-exec-internal.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>

#include "util.h"

/* ---- (10) Transaction blocks ---- */

static void txn_set(struct session *s, int state)
{
        s->txn = state;
        if (state != TXN_OPEN)
                read_hold_release(&s->txn_hold);        /* (14) the snapshot is read no more */
        if (state == TXN_NONE) {
                s->txn_read_only = false;
                s->txn_snapshot = false;
                s->txn_ts = 0;
        }
        pgwire_set_transaction_status(s->c, state == TXN_NONE ? 'I' : state == TXN_OPEN ? 'T' : 'E');
}

static void txn_discard(struct session *s)
{
        for (size_t i = 0; i < s->n_txn_writes; i++)
                write_done(&s->txn_writes[i]);
        s->n_txn_writes = 0;
        s->txn_read = false;
        if (txn_holds_run(s))
                run_abandon(s, -ECANCELED);     /* a block's CREATEs */
}

/* (10) An open block holding CREATEs in the session's run, which its COMMIT commits
 * (run_flush()); a string's run (7) is never open across a block's statements. */
bool txn_holds_run(const struct session *s)
{
        return s->txn == TXN_OPEN && s->n_run > 0;
}

/* Every error sent to a client: inside a block, the block fails (PostgreSQL's aborted
 * transaction) and its writes are dropped; until ROLLBACK or COMMIT nothing else runs. */
void txn_failed(struct pgwire_conn *c)
{
        struct session *s = pgwire_conn_userdata(c);

        if (s && s->txn == TXN_OPEN) {
                txn_discard(s);
                txn_set(s, TXN_FAILED);
        } else if (s && s->txn_implicit)
                txn_discard(s);         /* (13) none of the string's INSERTs */
}

void txn_notice(struct session *s, const char *sqlstate, const char *message)
{
        struct pgcodec_error pe = { .severity = "WARNING", .sqlstate = sqlstate, .message = message };

        (void)pgwire_send_notice(s->c, &pe);
}

/* COMMIT: the block's INSERTs as one group -- one Append, one timestamp, durable
 * together or not at all -- answered when it is applied. */
int txn_commit(struct session *s)
{
        struct exec *ex = s->ex;
        struct group *g;
        size_t n0, k = 0;
        int r = 0;

        txn_set(s, TXN_NONE);           /* a failed COMMIT ends the block too */
        if (!s->n_txn_writes) {
                s->txn_read = false;
                return STMT_DONE;
        }
        /* A table dropped since its INSERT: the block fails here, as a whole.  Sent,
         * the Append would fail at the controller, and with it everything else in its
         * group -- other sessions' writes, a DDL's built-in rows. */
        for (size_t i = 0; i < s->n_txn_writes; i++) {
                if (table_gone(ex, s->txn_writes[i].gid)) {
                        send_table_gone(s->c, s->txn_writes[i].table);
                        txn_discard(s);
                        return -ECANCELED;
                }
        }
        ex->hold_kick = true;
        g = group_open(ex);
        n0 = g ? g->n : 0;
        s->txn_writes[s->n_txn_writes - 1].s = s;
        s->txn_writes[s->n_txn_writes - 1].commit = true;
        s->txn_writes[s->n_txn_writes - 1].n_block = (uint32_t)s->n_txn_writes;
        for (; g && k < s->n_txn_writes; k++) {
                r = group_add(ex, &s->txn_writes[k]);
                if (r < 0)
                        break;
        }
        if (!g || r < 0) {
                /* Nothing of the block may go alone: take back what was added. */
                for (size_t i = n0; g && i < g->n; i++)
                        write_done(&g->writes[i]);
                if (g)
                        g->n = n0;
                for (size_t i = k; i < s->n_txn_writes; i++)
                        write_done(&s->txn_writes[i]);
                s->n_txn_writes = 0;
                ex->hold_kick = false;
                return -ENOMEM;
        }
        assert(g == group_open(ex) && g->n == n0 + s->n_txn_writes);
        s->n_txn_writes = 0;            /* the group owns the rows now */
        s->txn_read = false;
        ex->hold_kick = false;
        s->waiting = true;
        groups_kick(ex);
        return STMT_PARKED;
}

int exec_transaction(struct session *s, struct sql_stmt *st)
{
        switch (st->transaction) {
        case SQL_TXN_BEGIN:
                if (s->txn != TXN_NONE) {
                        txn_notice(s, "25001", "there is already a transaction in progress");
                } else {
                        txn_set(s, TXN_OPEN);
                        s->txn_read_only = st->txn_read_only == 1;
                        s->txn_snapshot = st->txn_snapshot >= 0 ? st->txn_snapshot == 1
                                                                : s->default_snapshot;
                        s->txn_ts = 0;
                }
                return STMT_DONE;
        case SQL_TXN_COMMIT:
                if (s->txn == TXN_NONE) {
                        txn_notice(s, "25P01", "there is no transaction in progress");
                        return STMT_DONE;
                }
                if (s->txn == TXN_FAILED) {
                        txn_set(s, TXN_NONE);
                        snprintf(s->tag, sizeof(s->tag), "ROLLBACK");
                        return STMT_DONE;
                }
                if (txn_holds_run(s)) {
                        /* its CREATEs in one write, answered when durable */
                        txn_set(s, TXN_NONE);
                        return run_flush(s) == STMT_PARKED ? STMT_PARKED : -ECANCELED;
                }
                return txn_commit(s);
        default:
                if (s->txn == TXN_NONE)
                        txn_notice(s, "25P01", "there is no transaction in progress");
                txn_discard(s);
                txn_set(s, TXN_NONE);
                return STMT_DONE;
        }
}

/* An INSERT of a block or of an implicit transaction (13): checked, answered now,
 * kept until COMMIT. */
static int txn_keep_insert(struct session *s, struct sql_insert *in)
{
        if (in->returning && exec_returning(s, in->returning, false) < 0)
                return -ECANCELED;
        if (s->n_txn_writes == s->cap_txn_writes &&
            GROW_ARRAY(s->txn_writes, s->cap_txn_writes, s->n_txn_writes + 1) < 0)
                return -ENOMEM;
        if (insert_write(in, NULL, &s->txn_writes[s->n_txn_writes]) < 0)
                return -ENOMEM;
        s->n_txn_writes++;
        if (in->returning && exec_returning(s, in->returning, true) < 0) {
                write_done(&s->txn_writes[--s->n_txn_writes]);
                return -ECANCELED;
        }
        snprintf(s->tag, sizeof(s->tag), "INSERT 0 %zu", in->n_rows);
        return STMT_DONE;
}

/* (13) A statement of a simple query of several statements, outside a block: 1 to run
 * it as usual, STMT_FLUSH to commit the INSERTs kept so far first and run it again
 * after, or its result. */
static int txn_implicit_stmt(struct session *s, struct sql_stmt *st)
{
        switch (st->kind) {
        case SQL_STMT_INSERT:
                if (st->insert.plan || st->insert.on_conflict_skip)
                        return s->n_txn_writes ? STMT_FLUSH : 1;        /* as a DELETE */
                return txn_keep_insert(s, &st->insert);
        case SQL_STMT_SET_VARIABLE:
        case SQL_STMT_SHOW_VARIABLE:
        case SQL_STMT_SHOW_OBJECTS:
                return 1;
        case SQL_STMT_TRANSACTION:
                if (st->transaction == SQL_TXN_BEGIN) {
                        /* PostgreSQL: the implicit block becomes the explicit one, with
                         * what it wrote so far. */
                        s->txn_implicit = false;
                        return 1;
                }
                if (st->transaction == SQL_TXN_COMMIT && s->n_txn_writes)
                        return STMT_FLUSH;      /* then "no transaction in progress" */
                return 1;                       /* ROLLBACK drops them (txn_discard()) */
        default:
                return s->n_txn_writes ? STMT_FLUSH : 1;
        }
}

/* (10) A CREATE that a block may hold (in the simple query protocol: an Execute's DDL
 * is answered from its committer). */
static bool txn_block_create(const struct session *s, const struct sql_stmt *st)
{
        switch (st->kind) {
        case SQL_STMT_CREATE_TABLE:
        case SQL_STMT_CREATE_VIEW:
        case SQL_STMT_CREATE_MATERIALIZED_VIEW:
        case SQL_STMT_CREATE_INDEX:
        case SQL_STMT_CREATE_SINK:
        case SQL_STMT_CREATE_SOURCE:
                return !s->extended;
        default:
                return false;
        }
}

/* 1 when the block may hold one more CREATE, or the error sent. */
static int txn_block_create_check(struct session *s)
{
        if (s->txn_read_only) {
                send_error(s->c, "25006", "cannot execute %s in a read-only transaction", s->tag);
                return -ECANCELED;
        }
        if (s->txn_read || s->n_txn_writes) {
                send_error(s->c, "25000", "a transaction block that has %s cannot create objects",
                           s->txn_read ? "read" : "written");
                return -ECANCELED;
        }
        if (s->n_run >= EXEC_BLOCK_CREATES) {
                send_error(s->c, "54000", "a transaction block creates at most %d objects",
                           EXEC_BLOCK_CREATES);
                return -ECANCELED;
        }
        return 1;
}

/* A statement inside a block: 1 to run it as usual, or its result.  A block either
 * reads or writes (Materialize's rule): its INSERTs wait for COMMIT, so a read after one
 * would not see it, and writes after a read would not commit at the read's time. */
int txn_stmt(struct session *s, struct sql_stmt *st)
{
        struct sql_insert *in = &st->insert;

        if (s->txn == TXN_NONE && s->txn_implicit)
                return txn_implicit_stmt(s, st);
        if (s->txn == TXN_NONE || st->kind == SQL_STMT_TRANSACTION)
                return 1;
        if (s->txn == TXN_FAILED) {
                send_error(s->c, "25P02", "current transaction is aborted, commands ignored "
                                          "until end of transaction block");
                return -ECANCELED;
        }
        switch (st->kind) {
        case SQL_STMT_SET_VARIABLE:
        case SQL_STMT_SHOW_VARIABLE:    /* the session's settings, not data */
        case SQL_STMT_SHOW_OBJECTS:     /* the catalog in memory, no timestamp */
                return 1;
        case SQL_STMT_SELECT:
                if (s->n_run) {
                        send_error(s->c, "25000", "a transaction block that creates objects "
                                                  "cannot read: its objects exist at COMMIT");
                        return -ECANCELED;
                }
                if (s->n_txn_writes) {
                        send_error(s->c, "25000", "a transaction that has written cannot read: "
                                                  "its writes become visible at COMMIT");
                        return -ECANCELED;
                }
                s->txn_read = true;
                return 1;
        case SQL_STMT_INSERT:
                if (s->txn_read_only) {
                        send_error(s->c, "25006", "cannot execute INSERT in a read-only transaction");
                        return -ECANCELED;
                }
                if (in->plan) {
                        /* The controller computes its rows as it writes them, as a DELETE's. */
                        send_error(s->c, "25001", "INSERT ... SELECT cannot run inside a "
                                                  "transaction block");
                        return -ECANCELED;
                }
                if (in->on_conflict_skip) {
                        /* Which rows it inserts is known when it is written, at COMMIT;
                         * its count is answered now. */
                        send_error(s->c, "25001", "INSERT ... ON CONFLICT cannot run inside "
                                                  "a transaction block");
                        return -ECANCELED;
                }
                if (s->txn_read || s->n_run) {
                        send_error(s->c, "25000", s->n_run
                                   ? "a transaction block that creates objects cannot write: "
                                     "its objects exist at COMMIT"
                                   : "a transaction that has read cannot write: "
                                     "a transaction either reads or writes");
                        return -ECANCELED;
                }
                return txn_keep_insert(s, in);
        default:
                if (txn_block_create(s, st))
                        return txn_block_create_check(s);
                if (s->n_run) {
                        send_error(s->c, "25000", "a transaction block that creates objects can "
                                                  "only create more of them: %s after COMMIT",
                                   sql_stmt_tag(st));
                        return -ECANCELED;
                }
                send_error(s->c, "25001", "%s cannot run inside a transaction block",
                           sql_stmt_tag(st));
                return -ECANCELED;
        }
}
