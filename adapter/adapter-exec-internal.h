/* adapter-exec-internal.h -- what the files of the statement executor share; not part
 * of the adapter-exec.h contract.
 *
 * The executor is adapter-exec.c (its core: a session's statements and the pgwire
 * callbacks, errors, waiting for objects to be enacted, the executor's making, and the
 * NOTES ON THE DESIGN, numbered (1) to (14)) and the adapter-exec-*.c files beside it.
 * "(N)" in any of them means adapter-exec.c note (N).  Everything here runs in the
 * loop's thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter-catalog.h"
#include "adapter-exec.h"
#include "adapter-pgwire.h"
#include "adapter-sql.h"
#include "loop/loop.h"
#include "row/row.h"

struct exec;
struct session;
struct request;
struct ddl;

/* (7) Statements in one string's run at most; (10) CREATEs in one block at most, the
 * size of the session's run[] array. */
#define EXEC_RUN_MAX 16
#define EXEC_BLOCK_CREATES 256     /* catalog_commit_many()'s most */
/* (9) A stream fetches its next chunk only while a client has at most this much output
 * queued (the pgwire conn's PGWIRE_PAUSE_AT). */
#define EXEC_STREAM_QUEUED_MAX (256u << 10)
#define MARK_LEN 16     /* (8) be64 origin, be64 seq */
/* (2a) What an Append or a read's request may hold: the link's frame limit less this. */
#define EXEC_FRAME_SLACK (64u << 10)

/* STMT_RUN: the statement joined the session's run (7); STMT_RETRY: it could not
 * while the run is open -- nothing was sent, run it again after the run. */
enum { STMT_DONE = 0, STMT_PARKED = 1, STMT_RUN = 2, STMT_RETRY = 3, STMT_FLUSH = 4 };

typedef void (*request_fn)(struct exec *ex, struct request *rq, const Coord__Envelope *reply);

struct request {
        uint64_t id;
        Coord__MsgType type;
        uint8_t *payload;
        size_t len;
        request_fn done;
        void *ctx;
        bool keep;              /* set by done(): more replies follow (a stream, adapter-exec.c note 9) */
        bool streamed;          /* a PeekResult with more = true came: never resent */
        bool unsent;            /* (4) the link's send queue was full: on_tick() retries */
        struct request *prev, *next;
};

/* One statement's share of a group. */
enum write_kind {
        WRITE_INSERT,
        WRITE_DELETE,
        WRITE_OBJECTS,          /* a coord_objects row of a DDL */
};

struct write {
        enum write_kind kind;
        struct session *s;      /* NULL when nobody waits for it */
        uint64_t gid;
        char *table;            /* owned: a statement's table, named in its errors
                                 * (it may be dropped meanwhile); NULL for built-ins */
        uint8_t **rows;         /* owned */
        size_t *row_lens;
        int64_t *diffs;         /* NULL: +1 each */
        size_t n_rows;
        Coord__Plan__Relation *delete_filter;   /* borrowed from the session's stmt */
        bool update;                            /* an UPDATE: TableWrite.update */
        bool insert_select;                     /* TableWrite.insert_select */
        uint32_t returning;                     /* TableWrite.returning */
        bool on_conflict_skip;                  /* TableWrite.on_conflict_skip */
        char *conflict_key;                     /* owned; TableWrite.conflict_key */
        uint32_t eval_timeout_ms;               /* TableWrite.eval_timeout_ms */
        bool commit;                            /* (10) the last write of a COMMIT */
        uint32_t n_block;                       /* (10) a COMMIT's: the block's writes,
                                                 * this one last (0: just this one) */
        bool add_prev_count;                    /* ON CONFLICT DO UPDATE's INSERT: its
                                                 * count adds the UPDATE's before it */
        uint64_t result;
};

struct group {
        struct write *writes;
        size_t n, cap;
        bool closed;            /* no more writes (a DELETE's group, or sent) */
        uint64_t ts;            /* 0 until sent; the last send's when resent */
        uint64_t mark;          /* (8) the seq of the mark it carries, 0 none */
        struct request *rq;
        size_t oversize;        /* (2a) its one unit's encoding, when over the budget */
        struct group *next;
};

struct session {
        struct exec *ex;
        struct pgwire_conn *c;
        struct sql_batch *batch;        /* simple query */
        size_t next;                    /* next statement of the batch; SIZE_MAX: skip
                                         * the rest.  Set by pg_query() only: stale
                                         * while Executes run */
        struct sql_stmt *stmt;          /* running */
        bool extended;                  /* running an Execute: one statement */
        bool waiting;                   /* parked on the controller */
        bool gone;                      /* the client disconnected while parked */
        struct ddl *run[EXEC_BLOCK_CREATES]; /* (7, 10) CREATEs committed together, in order */
        size_t n_run;
        bool run_touched;               /* (7) the analysis met a reserved or dropped name */
        uint64_t enact_gid;             /* parked until this object is on the controller */
        uint64_t enact_deadline_ms;
        struct session *enact_next;     /* on ex->enact_waiters or ex->fence_waiters */
        /* (9) A read whose result streams in: its request, while more chunks follow. */
        struct request *stream;
        bool pull_out;                  /* a PeekNext is out: a chunk will come */
        uint64_t rows_out;              /* DataRows sent for the statement so far */
        char tag[64];
        /* current_user & co. (its strings are the connection's startup parameters) */
        struct sql_session sql;
        /* (10) An explicit transaction block, and the INSERTs it sends at COMMIT. */
        enum { TXN_NONE, TXN_OPEN, TXN_FAILED } txn;
        bool txn_read;                  /* it has read: no write may follow */
        bool txn_read_only;             /* BEGIN READ ONLY, SET TRANSACTION READ ONLY */
        bool txn_snapshot;              /* (14) REPEATABLE READ, SERIALIZABLE: one timestamp */
        uint64_t txn_ts;                /* (14) its timestamp, once its first read chose it */
        bool default_snapshot;          /* (14) SET default_transaction_isolation */
        bool txn_implicit;              /* (13) a simple query of several statements */
        struct write *txn_writes;       /* .s NULL until COMMIT (or the flush of 13) */
        size_t n_txn_writes, cap_txn_writes;
        /* (12) SET statement_timeout, ms (0: none), and its timer while a statement is
         * parked; the startup's `-c statement_timeout=` sets the session's default. */
        uint32_t statement_timeout_ms, statement_timeout_default_ms;
        struct loop_timer *stmt_timer;
        struct subscription *sub;       /* a running SUBSCRIBE (adapter-subscribe.c) */
        /* Clients' holds of a read (adapter-readhold.c): the block's snapshot at txn_ts
         * (14), and a long streamed read's (9) with its timer. */
        struct read_hold *txn_hold;
        struct read_hold *stream_hold;
        struct loop_timer *stream_hold_timer;
};

struct exec {
        struct node *node;
        struct catalog *store;
        struct adapter_catalog *cat;
        struct committer *committer;
        struct oracle *oracle;
        struct pgwire_server *pg;
        struct exec_config cfg;
        bool controller_up;
        bool resyncing;                 /* waiting for the frontiers after a reconnect */
        uint64_t next_request_id;
        struct request pending;         /* list head of requests awaiting replies */
        struct group *groups, **groups_tail;    /* FIFO; the head may be in flight */
        struct loop_timer *tick;
        struct loop_timer *hold;        /* a held group's retry (groups_kick()) */
        bool hold_done;                 /* held for its millisecond: send it */
        uint64_t last_group_ms;
        uint64_t groups_sent, writes_acked;
        uint64_t appends_split;         /* (2a) */
        size_t n_unsent;                /* (4) requests left unsent, at most */
        uint64_t requests_deferred;     /* (4) sends the full queue refused, in all */
        uint64_t publications, publication_records;
        struct session *enact_waiters;  /* statements waiting for their objects (13) */
        bool hold_kick;                 /* adding the several writes of one statement:
                                         * they go in one group, sent after the last */
        int fatal;                      /* catalog failed: no more DDL */
        /* (3) The last group holding built-in rows of an acknowledged DDL, until it is
         * applied: a read takes a timestamp >= its ts, so it sees them. */
        struct group *fence;
        struct session *fence_waiters;  /* reads waiting for the fence to be sent */
        /* (5) Reconciliation of the adapter's built-in relations with the catalog. */
        bool reconcile_needed;
        bool reconciling;               /* groups are held (groups_kick) meanwhile */
        unsigned reconcile_waiting;     /* peeks not answered yet */
        uint64_t reconcile_ts;
        Coord__PeekResult *reconcile_res[3];
        uint64_t mark_origin;           /* (8) log entry 1's commit_ms; 0: no marks */
        uint64_t mark_acked;            /* (8) the last mark an Ok answered */
        uint64_t builtin_reads;         /* (5) reconciliations that read the relations */
        uint64_t ddl_after_publication; /* DDL commits ordered after a publication's */
        uint64_t ddl_direct_replies;    /* DDL answered by their committer thread */
        bool group_send_failing;        /* the last group_send() failed (logged once) */
        uint64_t stream_chunks;         /* (9) PeekResults that came as chunks of a stream */
        struct row_arena arena;         /* (9) what a read's PeekResult is unpacked into */
        ProtobufCAllocator arena_pa;    /* over arena */
        uint64_t stream_waits;          /* (9) pulls deferred until a client's output drained */
        struct read_hold *read_holds;   /* every live one (adapter-readhold.c note 4) */
        uint64_t read_holds_taken;      /* inputs held by reads, in all */
};


/* adapter-readhold.c: hold st's inputs at ts in *rhp (made when NULL; ts is its
 * timestamp); release them all (*rhp becomes NULL); free every read_hold left at exit. */
struct read_hold;
int read_hold_take(struct exec *ex, struct read_hold **rhp, uint64_t ts, const struct sql_stmt *st);
void read_hold_release(struct read_hold **rhp);
void read_holds_free_all(struct exec *ex);

/* adapter-exec.c */
void send_row_error(struct pgwire_conn *c, const struct row_error *e);
void send_error(struct pgwire_conn *c, const char *sqlstate, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
const char *io_sqlstate(int r);
const char *catalog_reason(struct exec *ex, int r);
void session_resume(struct session *s);
void enact_retry(struct session *s);
bool stmt_reads_builtin_rows(const struct sql_stmt *st);

/* adapter-exec-link.c */
struct request *request_new(struct exec *ex, Coord__MsgType type,
                            const ProtobufCMessage *msg, request_fn done, void *ctx);
/* request_new() of a msg whose packed size the caller has: len. */
struct request *request_new_sized(struct exec *ex, Coord__MsgType type,
                                  const ProtobufCMessage *msg, size_t len, request_fn done,
                                  void *ctx);
void request_free(struct request *rq);

/* adapter-exec-groups.c */
extern const uint64_t reconcile_gids[3];
struct group *group_open(struct exec *ex);
struct group *group_last(struct exec *ex);
int group_add(struct exec *ex, struct write *w);
int group_add_unit(struct exec *ex, struct write *w, size_t n);
void write_done(struct write *w);
void group_free(struct group *g);
int group_send(struct exec *ex, struct group *g);
/* (4) Sends the requests the link's full send queue refused, in order, until it refuses
 * again. */
void requests_retry(struct exec *ex);
/* (2a) What one request to the controller may hold, in bytes. */
size_t exec_frame_budget(const struct exec *ex);
void group_complete(struct exec *ex, struct group *g, const Coord__Ok *ok,
                    const Coord__Error *err);
void groups_kick(struct exec *ex);
void hold_release(struct exec *ex);
bool group_writes_builtin_rows(const struct group *g);
void on_tick(struct loop *l, void *userdata);
bool table_gone(const struct exec *ex, uint64_t gid);
void send_table_gone(struct pgwire_conn *c, const char *table);
int objects_write(struct exec *ex, struct session *s, const struct acat_item *it, int64_t diff);
void rows_not_queued(struct exec *ex, int r, const char *what);
void protection_queue(struct exec *ex, const struct acat_txn *txn);
void fence_check(struct exec *ex);

/* adapter-exec-reconcile.c */
void reconcile_maybe(struct exec *ex);

/* adapter-exec-run.c */
extern const struct sql_catalog_ops session_sql_ops;
void send_stmt_failed(struct session *s, int r);
bool stmt_joins_run(const struct session *s, const struct sql_stmt *st);
int run_flush(struct session *s);
int run_rollback(struct session *s);
void run_abandon(struct session *s, int r);
bool txn_holds_run(const struct session *s);
int exec_create_table(struct session *s, struct sql_stmt *st);
int exec_create_view(struct session *s, struct sql_stmt *st);
int exec_create_index(struct session *s, struct sql_stmt *st);
int exec_create_source(struct session *s, struct sql_stmt *st);
int exec_create_sink(struct session *s, struct sql_stmt *st);
int exec_alter_retain(struct session *s, struct sql_stmt *st);
int exec_alter_sink(struct session *s, struct sql_stmt *st);
int exec_drop(struct session *s, struct sql_stmt *st);
int insert_write(struct sql_insert *in, struct session *s, struct write *w);
int exec_insert(struct session *s, struct sql_stmt *st);
int exec_delete(struct session *s, struct sql_stmt *st);

/* adapter-exec-read.c */
bool stream_abandon(struct exec *ex, struct session *s, struct request *rq);
void peek_cancel(struct exec *ex, struct request *rq);
void write_eval_cancel(struct exec *ex, struct request *rq);
int exec_returning(struct session *s, const Coord__Plan__Peek *peek, bool send);
int exec_write_returned(struct session *s, const Coord__Plan__Peek *peek, const Coord__Ok *ok,
                        size_t write);
void pg_drained(struct pgwire_conn *c, void *userdata);
int exec_select(struct session *s, struct sql_stmt *st);
int exec_show_objects(struct session *s, struct sql_stmt *st);
int exec_set_variable(struct session *s, struct sql_stmt *st);
void session_startup_options(struct session *s);
int exec_show_variable(struct session *s, struct sql_stmt *st);

/* adapter-subscribe.c */
int exec_subscribe(struct session *s, struct sql_stmt *st);
bool subscribe_cancel(struct session *s, const char *why);
void subscribe_gone(struct session *s);
void subscribe_drained(struct session *s);

/* adapter-exec-txn.c */
void txn_failed(struct pgwire_conn *c);
void txn_notice(struct session *s, const char *sqlstate, const char *message);
int txn_commit(struct session *s);
int exec_transaction(struct session *s, struct sql_stmt *st);
int txn_stmt(struct session *s, struct sql_stmt *st);
