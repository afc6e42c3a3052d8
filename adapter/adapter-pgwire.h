/* adapter-pgwire.h -- the PostgreSQL v3 wire protocol server of the adapter, on the
 * io_uring loop.
 *
 * The server listens on TCP (default 127.0.0.1:6875) and/or a Unix socket (a path such
 * as <run-dir>/.s.PGSQL.6875, so `psql -h <run-dir> -p 6875` finds it), runs the
 * startup handshake itself (SSL and GSS encryption refused with 'N', no password,
 * CancelRequest), and hands SQL to its owner -- the adapter's executor -- through the
 * callbacks below.  The owner answers, possibly much later, with the response functions.
 *
 * THE OWNER'S SIDE: one executor for both query protocols
 *
 *   Simple query ('Q'):   query(c, sql) -- the owner parses sql, which may hold several
 *       statements, and runs them one after the other.  For each statement it sends
 *       [row description, data rows...], then a command complete tag (or an empty
 *       query response, or an error).  After an error it skips the rest of the string.
 *       When the whole string is done it calls pgwire_done(c): the server sends
 *       ReadyForQuery.
 *
 *   Extended query:  Parse -> prepare(c, sql, types): the owner parses and describes
 *       one statement and calls pgwire_describe_statement(c, &desc) (parameter types,
 *       result columns, and its own prepared-statement pointer), or sends an error; then
 *       pgwire_done(c).  Bind, Describe and Close are handled by the server alone.
 *       Execute -> execute(c, stmt, params): the owner runs its statement with the
 *       bound parameters (always text, NUL-terminated; binary ones are converted) and
 *       answers exactly as for one statement of a simple query -- the same code: the
 *       server drops the row description there (Describe sent it), applies the
 *       portal's result formats and row limit, and turns an error into skip-until-Sync.
 *
 *   So an executor is "run(c, stmt, params) -> row description, rows, tag | error",
 *   called once per statement from query() and once from execute().
 *
 * Exactly one request (query, prepare or execute) is in flight per connection: until
 * the owner calls pgwire_done(), the server queues the client's further messages
 * (pipelining) and only receives while its buffer has room (backpressure).  Requests of
 * different connections are independent and may complete in any order.
 *
 * LIFETIME.  A struct pgwire_conn is valid from the connect() callback until
 * disconnect() returns -- and, if a request is in flight then, until the owner's
 * pgwire_done() for it.  After disconnect() the response functions do nothing and return
 * -ECONNRESET, so an owner finishing a request for a vanished client needs no special
 * case; pgwire_conn_is_closed() lets it stop early.
 *
 * RE-ENTRANCY.  No pgwire_* function calls a callback (pgwire_server_free() excepted,
 * see there): callbacks run only from the loop (I/O completions and the server's
 * waker).  The owner may call pgwire_done() from inside its callback or from anywhere
 * later in the loop's thread.
 *
 * Everything runs in the loop's thread; nothing here is thread-safe.  Nothing here
 * logs: failures are return values and the `reason` of disconnect().
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "adapter-pgcodec.h"

struct loop;
struct pgwire_server;   /* opaque */
struct pgwire_conn;     /* opaque: one client connection */

#define PGWIRE_PORT_DEFAULT             6875
#define PGWIRE_MAX_MESSAGE_DEFAULT      (64u << 20)
#define PGWIRE_MAX_OUTPUT_DEFAULT       (64u << 20)
#define PGWIRE_MAX_CONNECTIONS_DEFAULT  1024u
#define PGWIRE_CLOSE_TIMEOUT_MS_DEFAULT 5000u
#define PGWIRE_SERVER_VERSION_DEFAULT   "15.0 (Coord)"

struct hist;

struct pgwire_config {
        struct hist *statement_hist;    /* each request's latency (common/hist.h); NULL: none */
        const char *host;               /* TCP address or name, "*" all; NULL or "": no TCP */
        uint16_t port;                  /* 0: any free port (pgwire_server_port()) */
        const char *unix_path;          /* Unix socket path; NULL: none */
        const char *server_version;     /* reported as server_version */
        size_t max_message;             /* longest frontend message, <= 1 GiB */
        size_t max_output;              /* output queued per connection before it is cut */
        unsigned max_connections;       /* more are refused with 53300 */
        unsigned close_timeout_ms;      /* a closing connection is cut after this */
        int backlog;                    /* listen(2) backlog */
};

/* Defaults: 127.0.0.1:6875, no Unix socket, the limits above. */
void pgwire_config_init(struct pgwire_config *cfg);

/* A bound parameter: text, NUL-terminated (value[len] == '\0'); value NULL is SQL NULL. */
struct pgwire_param {
        const char *value;
        size_t len;
        uint32_t type;                  /* the statement's parameter type OID (0: unknown) */
};

/* What prepare() learned about a statement.  Everything is copied. */
struct pgwire_statement_desc {
        unsigned nparams;
        const uint32_t *param_types;    /* nparams OIDs; 0 = unknown (text is assumed) */
        bool returns_rows;              /* false: Describe answers NoData */
        unsigned ncolumns;
        const struct pgcodec_column *columns;
        void *stmt;                     /* the owner's statement, passed to execute() and
                                         * released with stmt_free() */
};

struct pgwire_callbacks {
        /* Startup done (user and database known, AuthenticationOk and the standard
         * ParameterStatus already queued).  The owner may set userdata, send more
         * ParameterStatus or a notice.  Return 0 to accept; < 0 to refuse, after
         * sending a FATAL error with pgwire_send_error() (else a generic 28000 goes). */
        int (*connect)(struct pgwire_conn *c, void *userdata);
        /* The client is gone (reason: 0 orderly Terminate/EOF, -EBADMSG / -EMSGSIZE /
         * -EPROTO a protocol violation, -ENOBUFS output over max_output, -ECONNABORTED
         * the owner sent a FATAL error, -ESHUTDOWN server shutdown or free, else -errno
         * from the socket).  Runs once, for connections that connect() accepted, from
         * the loop.  See LIFETIME above. */
        void (*disconnect)(struct pgwire_conn *c, int reason, void *userdata);
        /* Simple query.  sql is valid until pgwire_done(c). */
        void (*query)(struct pgwire_conn *c, const char *sql, void *userdata);
        /* Parse.  sql and the client's parameter types (ntypes, possibly fewer than the
         * statement has, 0 = unspecified) are valid until pgwire_done(c).  Answer with
         * pgwire_describe_statement() or an error, then pgwire_done(). */
        void (*prepare)(struct pgwire_conn *c, const char *sql, unsigned ntypes,
                        const uint32_t *types, void *userdata);
        /* Execute a bound portal of stmt.  params are valid until pgwire_done(c). */
        void (*execute)(struct pgwire_conn *c, void *stmt, unsigned nparams,
                        const struct pgwire_param *params, void *userdata);
        /* A statement is no longer used by any prepared statement or portal. */
        void (*stmt_free)(void *stmt, void *userdata);
        /* A CancelRequest with a matching key for target (whatever it is doing).  The
         * owner may abort its request with 57014 and pgwire_done().  NULL: cancel
         * requests are accepted and ignored, as PostgreSQL does for a stale key. */
        void (*cancel)(struct pgwire_conn *target, void *userdata);
        /* The output queued for c came down to the mark of pgwire_notify_drained(), which
         * armed this one call.  Runs from a send completion; not after a close. */
        void (*drained)(struct pgwire_conn *c, void *userdata);
};

/* --- Server ------------------------------------------------------------------- */

struct pgwire_stats {
        uint64_t accepted;              /* connections accepted */
        uint64_t refused;               /* refused at max_connections */
        uint64_t protocol_errors;       /* closed for a protocol violation */
        uint64_t overflows;             /* cut at max_output */
        uint64_t cancels;               /* CancelRequests that matched a connection */
        unsigned active;                /* connections now */
};

/* Listen (SO_REUSEADDR; a stale Unix socket file is replaced, a live one is -EADDRINUSE)
 * and start accepting on l.  cfg's strings are copied; cb is copied. */
int pgwire_server_new(struct loop *l, const struct pgwire_config *cfg,
                      const struct pgwire_callbacks *cb, void *userdata,
                      struct pgwire_server **ret);
/* The TCP port listened on (the chosen one when cfg->port was 0); 0 without TCP. */
uint16_t pgwire_server_port(const struct pgwire_server *s);
void pgwire_server_stats(const struct pgwire_server *s, struct pgwire_stats *ret);

/* Graceful stop: no more connections (the Unix socket is removed), each connection gets
 * FATAL 57P01 once its request in flight is done, and is closed.  done runs from the
 * loop when no connection and no operation is left (each closing connection takes at
 * most close_timeout_ms once its request is done); pgwire_server_free() is then
 * immediate (done may call it).  Call at most once. */
void pgwire_server_shutdown(struct pgwire_server *s,
                            void (*done)(struct pgwire_server *s, void *userdata),
                            void *userdata);
/* Free (accepts NULL, returns NULL).  Call from the loop's thread while the loop exists,
 * not from inside a callback (shutdown's done excepted).  After a completed shutdown
 * this frees everything at once.  Otherwise every connection is cut without a goodbye:
 * disconnect(c, -ESHUTDOWN) and stmt_free() run for them before this returns, and no
 * callback runs afterwards -- except stmt_free() for the statement of an execute()
 * still in flight, at its pgwire_done() (such a conn lives until then).  The memory is
 * released as the loop reaps the cancelled operations (keep it running a moment). */
struct pgwire_server *pgwire_server_free(struct pgwire_server *s);

/* --- Responses (only from the loop's thread) ------------------------------------------
 *
 * All return 0, or:
 *   -ECONNRESET  the connection is closing or gone (the response is dropped);
 *   -ECANCELED   the request already failed (an error was sent): stop, call pgwire_done();
 *   -ENOBUFS     the output exceeded max_output: the connection is being cut;
 *   -ENOMEM;
 *   -EINVAL      the value does not fit the request (column count, a value that the
 *                client asked in binary but is not valid text of its type): the server
 *                has sent an error for the request instead.
 * Rows, tags and empty-query responses belong to query() and execute() requests; the
 * rest may be sent any time. */

/* Columns of the rows that follow (text format).  In execute() it is not sent: Describe
 * already did. */
int pgwire_send_row_description(struct pgwire_conn *c, unsigned n,
                                const struct pgcodec_column *cols);
/* One row: values[i] NULL is SQL NULL; lengths NULL means strlen() of each value. */
int pgwire_send_data_row(struct pgwire_conn *c, unsigned n, const char *const *values,
                         const size_t *lengths);
/* COPY ... TO STDOUT in a simple query: CopyOutResponse (n text columns), then CopyData
 * messages (each one row's text line); an error or a CopyDone plus the tag ends it. */
int pgwire_send_copy_out(struct pgwire_conn *c, unsigned n);
int pgwire_send_copy_data(struct pgwire_conn *c, const void *data, size_t len);
/* The statement's tag: "SELECT 2", "INSERT 0 3", "CREATE TABLE", "DELETE 1", "SET"... */
int pgwire_send_command_complete(struct pgwire_conn *c, const char *tag);
/* The statement was empty (an empty string, or only ';'). */
int pgwire_send_empty_query(struct pgwire_conn *c);
/* ErrorResponse (severity defaults to ERROR; "FATAL" closes the connection after it is
 * sent).  In query() the rest of the string must be skipped: later results are
 * refused with -ECANCELED. */
int pgwire_send_error(struct pgwire_conn *c, const struct pgcodec_error *e);
int pgwire_send_notice(struct pgwire_conn *c, const struct pgcodec_error *e);
int pgwire_send_parameter_status(struct pgwire_conn *c, const char *name, const char *value);
/* In prepare(): the statement's description (copied; desc->stmt is owned by the server
 * from now on, even if this fails). */
int pgwire_describe_statement(struct pgwire_conn *c, const struct pgwire_statement_desc *desc);
/* The request in flight is finished: the server sends what the protocol wants next
 * (ReadyForQuery, ParseComplete, PortalSuspended...) and moves on to queued messages.
 * Exactly once per query(), prepare() and execute() call. */
void pgwire_done(struct pgwire_conn *c);
/* Push queued output now (responses outside a request are flushed anyway). */
int pgwire_flush(struct pgwire_conn *c);
/* Pacing a large result (adapter-pgwire.c note 4): 1 when at most `below` bytes
 * are queued (go on producing); else 0 -- the output is pushed and callbacks.drained
 * runs once when the queue is down to `below` (one arming at a time: a later call
 * moves the mark).  -ECONNRESET when the conn is closing: disconnect() comes instead. */
int pgwire_notify_drained(struct pgwire_conn *c, size_t below);
/* The transaction status of the next ReadyForQuery: 'I' idle (default), 'T' in a
 * transaction block, 'E' failed transaction block.  At 'I' Sync drops the portals. */
void pgwire_set_transaction_status(struct pgwire_conn *c, char status);

/* --- A reply sent by another thread (adapter-pgwire.c note 7) -------------------- */

struct pgwire_direct {
        int fd;                         /* the conn's socket, open until pgwire_done() */
        size_t len;
        uint8_t bytes[80];              /* CommandComplete(tag) + ReadyForQuery('I') */
};
/* In a query() whose last statement is still running: may another thread send its
 * CommandComplete(tag) and the ReadyForQuery itself?  0: yes, *ret holds the fd and the
 * bytes, and the conn writes nothing to the socket until pgwire_direct_end(); -EAGAIN:
 * not now (output queued, a transaction block, an error sent, a tag too long...). */
int pgwire_direct_begin(struct pgwire_conn *c, const char *tag, struct pgwire_direct *ret);
/* Back in the loop, before anything else is sent for the request: sent is what
 * send(2) returned for d's bytes (< 0, 0: nothing went out; the request ends as usual).
 * After a positive sent, the request's CommandComplete and ReadyForQuery are not
 * queued again; the bytes not sent are queued first. */
void pgwire_direct_end(struct pgwire_conn *c, const struct pgwire_direct *d, ssize_t sent);

/* --- Connection accessors ------------------------------------------------------- */

/* A startup parameter ("user", "database", "application_name", "options",
 * "client_encoding"...); NULL when the client did not send it.  "database" defaults to
 * the user name. */
const char *pgwire_conn_param(const struct pgwire_conn *c, const char *name);
/* The BackendKeyData process id, unique among this server's connections. */
int32_t pgwire_conn_pid(const struct pgwire_conn *c);
/* "127.0.0.1:53412", "[::1]:53412" or "[local]", for logs. */
const char *pgwire_conn_peer(const struct pgwire_conn *c);
/* The connection is closing or gone, or the client has shut down its side (EOF): an
 * owner may abandon a long request then.  (A request still runs to its end otherwise,
 * as in PostgreSQL: the server does not cut a query because its client left.) */
bool pgwire_conn_is_closed(const struct pgwire_conn *c);
/* Output bytes queued and not yet written to the socket (an owner streaming a large
 * result should yield to the loop while this is high). */
size_t pgwire_conn_output_queued(const struct pgwire_conn *c);
void pgwire_conn_set_userdata(struct pgwire_conn *c, void *userdata);
void *pgwire_conn_userdata(const struct pgwire_conn *c);
