/* adapter-pgwire-internal.h -- what the files of the PostgreSQL wire protocol server
 * share; not part of the adapter-pgwire.h contract.
 *
 * The server is adapter-pgwire.c (its core: the run queue, a conn's lifetime, dispatch,
 * the server API, the accessors, and the NOTES ON THE DESIGN OF A CONNECTION, numbered
 * (1) to (7)) and the adapter-pgwire-*.c files beside it, which refer to them as
 * "adapter-pgwire.c note N".  Everything here runs in the loop's thread.
 */
#pragma once

#include <assert.h>
#include <limits.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "adapter-pgwire.h"
#include "loop/loop.h"
#include "util.h"

#define PGWIRE_IN_INIT          (8u << 10)      /* input buffer of an idle conn */
#define PGWIRE_BUF_SHRINK       (256u << 10)    /* larger buffers are released when empty */
#define PGWIRE_FLUSH_AT         (64u << 10)     /* queued output sent without a flush point */
#define PGWIRE_PAUSE_AT         (256u << 10)    /* no new message while this much is queued */
#define PGWIRE_LINGER_MAX       (1u << 20)      /* bytes read and dropped while closing */
#define PGWIRE_LISTENERS_MAX    8u
#define PGWIRE_REFUSE_SLACK     64u             /* refused conns saying goodbye, at most */
#define PGWIRE_ACCEPT_RETRY_NS  (100ull * 1000 * 1000)
#define PGWIRE_BACKLOG_DEFAULT  511
#define PGWIRE_MAX_MESSAGE_MIN  (1u << 10)
#define PGWIRE_MAX_OUTPUT_MIN   (64u << 10)
#define PGWIRE_NCOLS_NONE       UINT_MAX

enum conn_state {
        CONN_STARTUP,
        CONN_READY,
        CONN_SKIP,
        CONN_CLOSING,
        CONN_CLOSED,
};

enum conn_req {
        REQ_NONE,
        REQ_CONNECT,
        REQ_QUERY,
        REQ_PREPARE,
        REQ_EXECUTE,
};

/* A prepared statement (adapter-pgwire.c note 5). */
struct stmt {
        struct stmt *next;              /* c->stmts while named/open, else c->dead */
        unsigned refs;                  /* the c->stmts entry + each portal */
        char *name;
        void *owner;                    /* the owner's statement, for execute()/stmt_free() */
        unsigned nparams;
        uint32_t *param_types;
        bool returns_rows;
        unsigned ncolumns;
        struct pgcodec_column *columns; /* names copied into the same allocation */
};

enum portal_state {
        PORTAL_READY,                   /* bound, not executed */
        PORTAL_SUSPENDED,               /* rows left in spill */
        PORTAL_DONE,
};

struct portal {
        struct portal *next;
        char *name;
        struct stmt *stmt;              /* a reference */
        unsigned nparams;
        struct pgwire_param *params;
        char *values;                   /* the params' text, NUL-terminated each */
        int16_t *formats;               /* result format per column; NULL: all text */
        enum portal_state state;
        char *tag;                      /* the command tag, once known */
        bool empty;                     /* the result was an EmptyQueryResponse */
        struct pgcodec_buf spill;       /* DataRows beyond the row limit */
        size_t spill_off;               /* next row to send */
};

struct listener {
        struct pgwire_server *srv;
        struct loop_io io;
        int fd;                         /* adapter-pgwire.c note 6 */
        bool armed;
};

struct pgwire_conn {
        struct pgwire_server *srv;
        struct pgwire_conn *prev, *next;        /* srv->conns */
        struct pgwire_conn *run_next;           /* srv->runq, while queued */
        bool queued;

        /* Closed in conn_free() only: adapter-pgwire.c note 6. */
        int fd;
        bool is_tcp;
        char peer[INET6_ADDRSTRLEN + 16];
        int32_t pid;
        uint32_t secret;

        enum conn_state state;
        int reason;                     /* for disconnect(): set on leaving the open states */
        bool eof;                       /* the client shut its side */
        bool wr_shut;                   /* CLOSING: our FIN is out */
        /* conn_run() is on the stack: adapter-pgwire.c note 3. */
        bool dispatching;
        bool accepted;                  /* connect() accepted: disconnect() is owed */
        bool disconnected;              /* disconnect() ran */
        bool released;                  /* pgwire_server_free() has dealt with it */
        char txn_status;
        void *userdata;

        /* Startup parameters: nparams name/value pairs pointing into param_block. */
        unsigned nparams;
        const char **param_names, **param_values;
        char *param_block;

        /* Input: in[in_start, in_end) not yet processed; adapter-pgwire.c note 2. */
        struct loop_io recv_io;
        bool recv_armed;
        uint8_t *in;
        size_t in_start, in_end, in_cap;
        size_t in_need;                 /* size of the partial message at in_start, if known */
        size_t lingered;                /* CLOSING: bytes dropped */

        /* Output: adapter-pgwire.c note 4. */
        struct loop_io send_io;
        bool send_armed;
        struct pgcodec_buf out;
        struct pgcodec_buf tx;
        size_t tx_off;
        bool drain_armed;               /* drained() once queued <= drain_below */
        size_t drain_below;
        /* A reply sent by another thread: adapter-pgwire.c note 7. */
        bool direct;                    /* another thread may be sending */
        bool direct_sent;               /* the request's reply is out or queued */

        struct loop_timer *close_timer; /* armed in CLOSING */

        /* The request in flight: adapter-pgwire.c note 2. */
        enum conn_req req;
        uint64_t req_start_ns;          /* for pgwire__request__done, when probed */
        bool req_failed;                /* an ErrorResponse was sent for it */
        bool req_result;                /* execute: a tag, empty query or error was sent */
        unsigned req_ncols;             /* query: columns of the current row description */
        const char *req_name;           /* prepare: the statement's name (in `in`) */
        struct stmt *req_stmt;          /* prepare: what the owner described */
        struct portal *req_portal;      /* execute */
        uint32_t req_max_rows;          /* execute: 0 = all */
        uint64_t req_rows;              /* execute: rows so far */
        uint32_t *types;                /* prepare: the client's parameter types */
        unsigned types_cap;

        struct stmt *stmts;             /* prepared statements */
        /* Unreferenced, stmt_free() pending: adapter-pgwire.c note 3. */
        struct stmt *dead;
        struct portal *portals;
};

struct pgwire_server {
        struct loop *loop;
        struct pgwire_callbacks cb;
        void *userdata;
        struct pgwire_config cfg;       /* strings point at the copies below */
        char *host, *unix_path, *server_version;

        struct listener listeners[PGWIRE_LISTENERS_MAX];
        unsigned nlisteners;
        uint16_t port;
        bool unix_bound;                /* unix_path is ours to unlink */
        dev_t unix_dev;
        ino_t unix_ino;
        struct loop_timer *retry;       /* accept re-arm after a persistent error */

        struct loop_waker *waker;       /* runs the run queue: adapter-pgwire.c note 3 */
        struct loop_defer run_defer;    /* runs it too, from the loop thread (3) */
        struct pgwire_conn *runq, *runq_tail;
        bool running_queue;             /* server_run_queue() on the stack */

        struct pgwire_conn *conns;
        int32_t next_pid;
        unsigned in_callback;           /* owner callbacks on the stack */
        struct pgwire_stats stats;

        bool shutting_down;
        bool shutdown_reported;
        void (*shutdown_done)(struct pgwire_server *s, void *userdata);
        void *shutdown_userdata;
        bool freeing;                   /* pgwire_server_free() ran */
        unsigned holds;                 /* pgwire_server_free() on the stack */
};

/* --- Helpers ---------------------------------------------------------------------- */

static inline void pgw_set_be32(uint8_t *p, uint32_t v)
{
        p[0] = (uint8_t)(v >> 24);
        p[1] = (uint8_t)(v >> 16);
        p[2] = (uint8_t)(v >> 8);
        p[3] = (uint8_t)v;
}

static inline uint32_t pgw_get_be32(const uint8_t *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline bool conn_open(const struct pgwire_conn *c)
{
        return c->state == CONN_STARTUP || c->state == CONN_READY || c->state == CONN_SKIP;
}

/* adapter-pgwire.c note 1: the invariants of every state (only called inside assert()). */
static inline bool conn_check(const struct pgwire_conn *c)
{
        assert(c->in_start <= c->in_end && c->in_end <= c->in_cap);
        assert(c->tx_off <= c->tx.len);
        assert(!c->send_armed || c->tx_off < c->tx.len);
        assert(c->req == REQ_NONE || c->state != CONN_STARTUP || c->req == REQ_CONNECT);
        assert(c->req != REQ_EXECUTE || c->req_portal);
        assert(c->state != CONN_CLOSED || !c->close_timer);
        assert(c->state == CONN_CLOSING || !c->wr_shut || c->state == CONN_CLOSED);
        assert(c->txn_status == 'I' || c->txn_status == 'T' || c->txn_status == 'E');
        /* adapter-pgwire.c note 7: only a query's reply goes out elsewhere, and never
         * while tx holds bytes of ours (begin required it empty; conn_flush() waits). */
        assert(!c->direct || (c->req == REQ_QUERY && !c->direct_sent));
        assert(!c->direct || !c->send_armed);
        return true;
}

/* Output waiting to leave: `out` and the unsent part of tx (adapter-pgwire.c note 4). */
static inline size_t conn_queued(const struct pgwire_conn *c)
{
        return c->out.len + (c->tx.len - c->tx_off);
}

/* --- adapter-pgwire.c: the run queue and the entry point (adapter-pgwire.c note 3) -- */

/* Make sure conn_run(c) happens soon, from the loop. */
void conn_schedule(struct pgwire_conn *c);
/* The one entry point from the loop: process input, keep I/O going, settle. */
void conn_run(struct pgwire_conn *c);
/* The completions of a conn's recv and send (struct loop_io.complete). */
void conn_recv_done(struct loop *l, struct loop_io *io, int res);
void conn_send_done(struct loop *l, struct loop_io *io, int res);

/* --- adapter-pgwire-conn.c: output, closing, input (adapter-pgwire.c notes 4, 1, 2) - */

int conn_send_arm(struct pgwire_conn *c);
void conn_tx_done(struct pgwire_conn *c);
/* Start sending what is queued, unless a send is in flight. */
void conn_flush(struct pgwire_conn *c);
/* After appending to `out`: a buffer failure or too much output cuts the connection. */
int conn_out_check(struct pgwire_conn *c);
/* An ErrorResponse into `out` (severity NULL: ERROR); the caller checks and flushes. */
void conn_put_error(struct pgwire_conn *c, const char *severity, const char *sqlstate,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void conn_put_errorv(struct pgwire_conn *c, const char *severity, const char *sqlstate,
                     const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));
/* To CLOSED: cancel what is in flight; conn_settle() frees the conn later. */
void conn_abort(struct pgwire_conn *c, int reason);
/* To CLOSING: finish sending, then FIN and wait for the client's EOF. */
void conn_close(struct pgwire_conn *c, int reason);
/* A FATAL error, then close. */
void conn_fatal(struct pgwire_conn *c, const char *sqlstate, int reason, const char *message);
void conn_protocol_violation(struct pgwire_conn *c, int reason, const char *message);
/* Make room for the rest of the message at in_start (adapter-pgwire.c note 2). */
int conn_in_prepare(struct pgwire_conn *c);
void conn_recv_arm(struct pgwire_conn *c);

/* --- adapter-pgwire-startup.c: the startup phase (adapter-pgwire.c note 1: STARTUP) - */

/* A message of the STARTUP state: StartupMessage, SSLRequest, GSSENCRequest,
 * CancelRequest. */
void conn_handle_startup(struct pgwire_conn *c, const struct pgcodec_frame *f);

/* --- adapter-pgwire-extended.c: statements, portals, the extended protocol
 * (adapter-pgwire.c note 5) ----------------------------------------------------------- */

struct stmt *pgw_stmt_find(struct pgwire_conn *c, const char *name);
/* Drop a reference; the last one moves st to c->dead, released by conn_settle(). */
void pgw_stmt_unref(struct pgwire_conn *c, struct stmt *st);
void pgw_stmt_unlink(struct pgwire_conn *c, struct stmt *st);
/* Release the owner's statements of c->dead (runs stmt_free()). */
void conn_bury(struct pgwire_conn *c);
void pgw_portals_drop_all(struct pgwire_conn *c);
/* Drop every statement and every portal but the one an execute() still uses. */
void conn_drop_statements(struct pgwire_conn *c);
/* A statement from the owner's description; names and arrays are copied. */
int pgw_stmt_new(const char *name, const struct pgwire_statement_desc *d, struct stmt **ret);

/* An error in an extended-protocol message: ErrorResponse, then skip until Sync. */
void conn_ext_error(struct pgwire_conn *c, const char *sqlstate, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* pgwire__request__start, and the clock for its __done. */
void pgw_req_probe_start(struct pgwire_conn *c, int kind, const char *text);
void conn_handle_parse(struct pgwire_conn *c, const struct pgcodec_frame *f);
void conn_handle_bind(struct pgwire_conn *c, const struct pgcodec_frame *f);
void conn_handle_describe(struct pgwire_conn *c, const struct pgcodec_frame *f);
void conn_handle_close(struct pgwire_conn *c, const struct pgcodec_frame *f);
void conn_handle_execute(struct pgwire_conn *c, const struct pgcodec_frame *f);

/* --- adapter-pgwire-listen.c: listening, accepting, the server's end
 * (adapter-pgwire.c note 6) ----------------------------------------------------------- */

uint32_t pgw_random_u32(void);
int pgw_listener_arm(struct listener *ln);
int pgw_listen_tcp(struct pgwire_server *s);
int pgw_listen_unix(struct pgwire_server *s);
/* Stop accepting: cancel the accepts in flight (their completion closes the fd). */
void pgw_server_stop_listening(struct pgwire_server *s);
void pgw_server_destroy(struct pgwire_server *s);
/* Shutdown complete?  Runs done() from the loop (last: done() may free s). */
void pgw_server_maybe_done(struct pgwire_server *s);
/* pgwire_server_free() ran: destroy s once nothing holds it. */
void pgw_server_maybe_free(struct pgwire_server *s);
