/* test-pgwire.c -- the PostgreSQL wire protocol server (adapter/adapter-pgwire.h)
 * against the real libpq and psql.
 *
 * The server runs on an io_uring loop in a thread of its own, on 127.0.0.1 with a port
 * the kernel picks and on a Unix socket in a temporary directory.  A small fake
 * executor stands in for the adapter's (it is also the reference for how an executor
 * uses the API, see "Fake executor" below):
 *   SELECT n        n rows 1..n of one int4 column
 *   SELECT $1, ...  one row echoing the parameters
 *   TYPES           one row of int2, int4, int8, bool, float8, text, bytea, NULL
 *   ERR             error 42601;  FATAL  a FATAL error;  NOTICE  a notice, then "DO"
 *   SLEEP ms        completes after ms (asynchronously, on a loop timer); cancellable
 *   BIG n           n rows of 1000 bytes, produced asynchronously with flow control
 *   BIGSYNC n       the same, produced at once (to overrun max_output)
 *   SHOW x          one row;  BEGIN / COMMIT  set the transaction status
 *   DIRECT n|ALL|FAIL  answered "by another thread" (pgwire_direct_begin()): after 1
 *                   ms the first n bytes of the reply (ALL: all of it; FAIL: nothing,
 *                   as after a failed commit) go out by send(2) on the conn's fd, then
 *                   pgwire_direct_end() and the ordinary CommandComplete "DIRECT";
 *                   "DIRECT REFUSED" when the server refuses (not the last statement,
 *                   output queued, a transaction block)
 *   anything else   a command tag ("INSERT 0 1", "CREATE TABLE", ...)
 *
 * Clients: libpq (TCP, Unix socket, sslmode=prefer/require, simple and multi-statement
 * queries, PQexecParams with text and binary parameters and results, PQprepare /
 * PQexecPrepared / PQdescribePrepared, pipeline mode, PQcancel, 200 concurrent
 * connections), psql (-c and -f with ON_ERROR_STOP), and raw sockets for what libpq
 * never sends (garbage, oversized and truncated messages, portal suspension, protocol
 * negotiation, a client that does not read).
 *
 * Exits 77 when io_uring is unavailable.  An alarm turns a hang into a failure.
 */
#include "adapter-pgwire.h"

#include <ctype.h>
#include <errno.h>
#include <libpq-fe.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loop/loop.h"
#include "pgwire-fake.h"
#include "t.h"
#include "util.h"

#define UNIX_PORT       6875            /* the Unix socket is <dir>/.s.PGSQL.6875 */
#define MAX_MESSAGE     (1u << 20)
#define MAX_OUTPUT      (1u << 20)
#define BIG_ROW         1000u
#define BIG_WATERMARK   (256u << 10)    /* the fake stops producing above this */
#define RAW_TIMEOUT_MS  10000
#define NCONCURRENT     200

/* --- The server thread and its controls -------------------------------------------- */

static struct loop *L;
static struct pgwire_server *S;
static pthread_t loop_thread;
static bool loop_running;
static struct loop_waker *ctl;
static char *tmpdir;
static uint16_t port;
static bool have_psql;

enum ctl_cmd {
        CTL_NONE, CTL_STATS, CTL_SHUTDOWN, CTL_SECOND_START, CTL_SECOND_STOP, CTL_SECOND_FREE,
};

/* Everything the loop thread counts, copied out under ctl_mu on request. */
struct fake_stats {
        struct pgwire_stats srv;
        int live_conns, max_live_conns, live_stmts;
        int connects, disconnects, cancels_seen;
        int disconnect_proto;           /* disconnects for a protocol violation */
        int sleeps_started;             /* SLEEP statements begun */
        uint16_t second_port;
        bool shut_down;
};

static pthread_mutex_t ctl_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ctl_cv = PTHREAD_COND_INITIALIZER;
static enum ctl_cmd ctl_pending;
static bool ctl_answered;
static struct fake_stats fs;            /* loop thread only */
static struct fake_stats fs_copy;       /* under ctl_mu */
static struct pgwire_server *second;    /* loop thread only */

/* --- Fake executor (the loop thread) ------------------------------------------------
 *
 * One struct fconn per connection (pgwire_conn_set_userdata).  A request -- a query
 * string, or one execute -- is run statement by statement by fake_continue(); a
 * statement answers at once or goes asynchronous on a loop timer (SLEEP, BIG), and its
 * timer continues the string.  Every path ends in fake_finish() -> pgwire_done(). */

struct fconn {
        struct pgwire_conn *c;
        char *sql;                      /* the request's text (a copy) */
        const char *next;               /* the next statement in sql */
        bool extended;                  /* an execute(): params below, one statement */
        unsigned nparams;
        const struct pgwire_param *params;
        bool ran;                       /* a statement produced a result */
        struct loop_timer *timer;       /* SLEEP, BIG or DIRECT in progress */
        unsigned big_left, big_total;
        struct pgwire_direct direct;    /* DIRECT */
        long direct_n;
};

static const struct pgcodec_column col_int4 = { .name = "?column?", .type = PGCODEC_OID_INT4, .typmod = -1 };
static const struct pgcodec_column col_big = { .name = "x", .type = PGCODEC_OID_TEXT, .typmod = -1 };

/* "SELECT <digits>": the number, else -1. */
static long select_count(const char *stmt)
{
        const char *p = stmt + 6;
        char *end;
        long n;

        if (!word_is(stmt, "SELECT"))
                return -1;
        while (isspace((unsigned char)*p))
                p++;
        if (!isdigit((unsigned char)*p))
                return -1;
        n = strtol(p, &end, 10);
        return *end == '\0' ? n : -1;
}

/* The highest $n in stmt. */
static unsigned count_params(const char *stmt)
{
        unsigned max = 0;

        for (const char *p = strchr(stmt, '$'); p; p = strchr(p + 1, '$')) {
                unsigned n = (unsigned)strtoul(p + 1, NULL, 10);
                if (n > max)
                        max = n;
        }
        return max;
}

/* Cut the next statement out of *next into buf (trimmed); false when none is left. */
static bool next_statement(const char **next, char *buf, size_t size, bool *ret_any)
{
        const char *p = *next, *end;
        size_t n;

        for (;;) {
                if (!*p)
                        return false;
                end = strchr(p, ';');
                if (!end)
                        end = p + strlen(p);
                *next = *end ? end + 1 : end;
                while (p < end && isspace((unsigned char)*p))
                        p++;
                n = (size_t)(end - p);
                while (n > 0 && isspace((unsigned char)p[n - 1]))
                        n--;
                if (n > 0)
                        break;
                *ret_any = true;        /* an empty statement */
                p = *next;
        }
        if (n >= size)
                n = size - 1;
        memcpy(buf, p, n);
        buf[n] = '\0';
        return true;
}

static void fake_finish(struct fconn *f)
{
        free(f->sql);
        f->sql = NULL;
        f->next = NULL;
        f->params = NULL;
        f->nparams = 0;
        pgwire_done(f->c);
}

static void fake_continue(struct fconn *f);

static void fake_error(struct fconn *f, const char *sqlstate, const char *msg, unsigned pos)
{
        (void)pgwire_send_error(f->c, &(struct pgcodec_error){
                .sqlstate = sqlstate, .message = msg, .position = pos,
                .detail = "from the fake executor" });
}

static void fake_sleep_fire(struct loop *l, void *userdata)
{
        struct fconn *f = userdata;

        f->timer = NULL;
        (void)pgwire_send_command_complete(f->c, "SLEEP");
        fake_continue(f);
}

/* BIG: produce rows until the output backs up, then yield to the loop for 1 ms.  This
 * is the flow control an owner streaming a large result should use. */
static void fake_big_fire(struct loop *l, void *userdata)
{
        static char row[BIG_ROW + 1];
        struct fconn *f = userdata;
        const char *v[1] = { row };
        char tag[32];

        f->timer = NULL;
        if (!row[0])
                memset(row, 'x', BIG_ROW);
        while (f->big_left > 0 && pgwire_conn_output_queued(f->c) < BIG_WATERMARK) {
                if (pgwire_send_data_row(f->c, 1, v, NULL) < 0) {
                        fake_finish(f);
                        return;
                }
                f->big_left--;
        }
        if (f->big_left > 0) {
                CU_ASSERT_EQUAL(loop_timer_add(L, 1000 * 1000, fake_big_fire, f, &f->timer), 0);
                return;
        }
        snprintf(tag, sizeof(tag), "SELECT %u", f->big_total);
        (void)pgwire_send_command_complete(f->c, tag);
        fake_continue(f);
}

/* DIRECT: what the adapter's committer thread does (adapter-commit.c), then what its
 * loop does when told (ddl_committed()). */
static void fake_direct_fire(struct loop *l, void *userdata)
{
        struct fconn *f = userdata;
        ssize_t sent = -1;

        f->timer = NULL;
        if (f->direct_n >= 0) {
                size_t n = (unsigned long)f->direct_n < f->direct.len ? (size_t)f->direct_n
                                                                     : f->direct.len;

                sent = n ? send(f->direct.fd, f->direct.bytes, n, MSG_DONTWAIT | MSG_NOSIGNAL) : 0;
                CU_ASSERT_EQUAL(sent, (ssize_t)n);
        }
        pgwire_direct_end(f->c, &f->direct, sent);
        (void)pgwire_send_command_complete(f->c, "DIRECT");
        fake_continue(f);
}

/* Run one statement: 0 done, 1 gone asynchronous, -1 failed (skip the rest). */
static int fake_statement(struct fconn *f, const char *stmt)
{
        struct pgwire_conn *c = f->c;
        char tag[64];
        long n;

        f->ran = true;
        if ((n = select_count(stmt)) >= 0) {
                return fake_send_count(c, &col_int4, n);
        }
        if (word_is(stmt, "SELECT") && strchr(stmt, '$')) {
                unsigned k = count_params(stmt);
                struct pgcodec_column cols[16];
                const char *v[16];
                size_t len[16];
                char names[16][16];

                if (!f->extended || k > 16 || k != f->nparams) {
                        fake_error(f, "42P02", "there is no parameter $1", 8);
                        return -1;
                }
                for (unsigned i = 0; i < k; i++) {
                        snprintf(names[i], sizeof(names[i]), "p%u", i + 1);
                        cols[i] = (struct pgcodec_column){
                                .name = names[i], .type = f->params[i].type ? f->params[i].type
                                                                            : PGCODEC_OID_TEXT,
                                .typmod = -1 };
                        v[i] = f->params[i].value;
                        len[i] = f->params[i].len;
                }
                (void)pgwire_send_row_description(c, k, cols);
                if (pgwire_send_data_row(c, k, v, len) < 0)
                        return -1;
                return pgwire_send_command_complete(c, "SELECT 1") < 0 ? -1 : 0;
        }
        if (word_is(stmt, "TYPES"))
                return fake_send_types(c);
        if (word_is(stmt, "ERR")) {
                fake_error(f, PGCODEC_SQLSTATE_SYNTAX_ERROR, "syntax error at or near \"ERR\"", 1);
                return -1;
        }
        if (word_is(stmt, "FATAL")) {
                (void)pgwire_send_error(c, &(struct pgcodec_error){
                        .severity = "FATAL", .sqlstate = "57P01", .message = "fatal on request" });
                return -1;
        }
        if (word_is(stmt, "NOTICE")) {
                (void)pgwire_send_notice(c, &(struct pgcodec_error){ .message = "hello notice" });
                return pgwire_send_command_complete(c, "DO") < 0 ? -1 : 0;
        }
        if (word_is(stmt, "SLEEP")) {
                unsigned ms = (unsigned)strtoul(stmt + 5, NULL, 10);

                fs.sleeps_started++;
                CU_ASSERT_EQUAL(loop_timer_add(L, (uint64_t)ms * 1000 * 1000, fake_sleep_fire, f,
                                               &f->timer), 0);
                return 1;
        }
        if (word_is(stmt, "BIG") || word_is(stmt, "BIGSYNC")) {
                bool sync = word_is(stmt, "BIGSYNC");

                f->big_total = f->big_left = (unsigned)strtoul(stmt + (sync ? 7 : 3), NULL, 10);
                (void)pgwire_send_row_description(c, 1, &col_big);
                if (sync) {
                        static char row[BIG_ROW + 1];
                        const char *v[1] = { row };

                        memset(row, 'y', BIG_ROW);
                        for (; f->big_left > 0; f->big_left--)
                                if (pgwire_send_data_row(c, 1, v, NULL) < 0)
                                        return -1;
                        return pgwire_send_command_complete(c, "SELECT") < 0 ? -1 : 0;
                }
                fake_big_fire(L, f);
                return 1;
        }
        if (word_is(stmt, "SHOW")) {
                struct pgcodec_column col = { .name = stmt + 5, .type = PGCODEC_OID_TEXT, .typmod = -1 };
                const char *v[1] = { "on" };

                (void)pgwire_send_row_description(c, 1, &col);
                (void)pgwire_send_data_row(c, 1, v, NULL);
                return pgwire_send_command_complete(c, "SHOW") < 0 ? -1 : 0;
        }
        if (word_is(stmt, "DIRECT")) {
                const char *arg = stmt + 6;

                while (isspace((unsigned char)*arg))
                        arg++;
                f->direct_n = strcasecmp(arg, "ALL") == 0 ? LONG_MAX
                              : strcasecmp(arg, "FAIL") == 0 ? -1 : strtol(arg, NULL, 10);
                if (f->extended || *f->next || pgwire_direct_begin(c, "DIRECT", &f->direct) < 0)
                        return pgwire_send_command_complete(c, "DIRECT REFUSED") < 0 ? -1 : 0;
                CU_ASSERT_EQUAL(loop_timer_add(L, 1000 * 1000, fake_direct_fire, f, &f->timer), 0);
                return 1;
        }
        if (word_is(stmt, "BEGIN"))
                pgwire_set_transaction_status(c, 'T');
        if (word_is(stmt, "COMMIT"))
                pgwire_set_transaction_status(c, 'I');

        if (word_is(stmt, "INSERT"))
                snprintf(tag, sizeof(tag), "INSERT 0 1");
        else if (word_is(stmt, "DELETE"))
                snprintf(tag, sizeof(tag), "DELETE 1");
        else if (word_is(stmt, "CREATE") || word_is(stmt, "DROP")) {
                /* Two words: CREATE TABLE, DROP TABLE. */
                size_t i = 0;
                int words = 0;

                for (; stmt[i] && i < sizeof(tag) - 1; i++) {
                        if (isspace((unsigned char)stmt[i]) && ++words == 2)
                                break;
                        tag[i] = (char)toupper((unsigned char)stmt[i]);
                }
                tag[i] = '\0';
        } else {
                size_t i = 0;

                for (; stmt[i] && !isspace((unsigned char)stmt[i]) && i < sizeof(tag) - 1; i++)
                        tag[i] = (char)toupper((unsigned char)stmt[i]);
                tag[i] = '\0';
        }
        return pgwire_send_command_complete(c, tag) < 0 ? -1 : 0;
}

static void fake_continue(struct fconn *f)
{
        char stmt[512];
        bool empty = false;

        while (next_statement(&f->next, stmt, sizeof(stmt), &empty)) {
                int r = fake_statement(f, stmt);

                if (r > 0)
                        return;         /* its timer continues */
                if (r < 0) {
                        fake_finish(f);
                        return;
                }
        }
        /* A string of nothing (or only ';'): one EmptyQueryResponse, as PostgreSQL. */
        if (!f->ran)
                (void)pgwire_send_empty_query(f->c);
        fake_finish(f);
}

static void fake_start(struct fconn *f, const char *sql, unsigned nparams,
                       const struct pgwire_param *params, bool extended)
{
        CU_ASSERT_PTR_NULL(f->sql);
        f->sql = strdup(sql);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f->sql);
        f->next = f->sql;
        f->extended = extended;
        f->nparams = nparams;
        f->params = params;
        f->ran = false;
        fake_continue(f);
}

static int fake_connect(struct pgwire_conn *c, void *userdata)
{
        struct fconn *f;

        if (strcmp(pgwire_conn_param(c, "user"), "reject") == 0) {
                (void)pgwire_send_error(c, &(struct pgcodec_error){
                        .severity = "FATAL", .sqlstate = PGCODEC_SQLSTATE_INVALID_AUTHORIZATION,
                        .message = "role \"reject\" is not permitted to log in" });
                return -EPERM;
        }
        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        f->c = c;
        pgwire_conn_set_userdata(c, f);
        (void)pgwire_send_parameter_status(c, "coord_test", "yes");
        fs.connects++;
        fs.live_conns++;
        if (fs.live_conns > fs.max_live_conns)
                fs.max_live_conns = fs.live_conns;
        return 0;
}

static void fake_disconnect(struct pgwire_conn *c, int reason, void *userdata)
{
        struct fconn *f = pgwire_conn_userdata(c);

        /* A request still running: stop it, it must still be finished. */
        if (f->timer) {
                loop_timer_cancel(L, f->timer);
                f->timer = NULL;
        }
        if (f->sql)
                fake_finish(f);
        fs.disconnects++;
        fs.live_conns--;
        if (reason == -EBADMSG || reason == -EPROTO || reason == -EMSGSIZE)
                fs.disconnect_proto++;
        free(f);
}

static void fake_query(struct pgwire_conn *c, const char *sql, void *userdata)
{
        fake_start(pgwire_conn_userdata(c), sql, 0, NULL, false);
}

static void fake_prepare(struct pgwire_conn *c, const char *sql, unsigned ntypes,
                         const uint32_t *types, void *userdata)
{
        struct pgwire_statement_desc d = { 0 };
        struct pgcodec_column cols[16];
        uint32_t ptypes[16];
        char names[16][16];
        const char *semi = strchr(sql, ';');
        char *copy;

        if (semi && strspn(semi + 1, " \t\n;") != strlen(semi + 1)) {
                (void)pgwire_send_error(c, &(struct pgcodec_error){
                        .sqlstate = PGCODEC_SQLSTATE_SYNTAX_ERROR,
                        .message = "cannot insert multiple commands into a prepared statement" });
                pgwire_done(c);
                return;
        }
        if (word_is(sql, "ERR")) {
                (void)pgwire_send_error(c, &(struct pgcodec_error){
                        .sqlstate = PGCODEC_SQLSTATE_SYNTAX_ERROR, .message = "syntax error at or near \"ERR\"" });
                pgwire_done(c);
                return;
        }
        d.nparams = count_params(sql);
        CU_ASSERT_FATAL(d.nparams <= 16);
        for (unsigned i = 0; i < d.nparams; i++)
                ptypes[i] = i < ntypes && types[i] ? types[i] : PGCODEC_OID_TEXT;
        d.param_types = ptypes;
        if (select_count(sql) >= 0) {
                d.returns_rows = true;
                d.ncolumns = 1;
                d.columns = &col_int4;
        } else if (word_is(sql, "SELECT")) {
                for (unsigned i = 0; i < d.nparams; i++) {
                        snprintf(names[i], sizeof(names[i]), "p%u", i + 1);
                        cols[i] = (struct pgcodec_column){ .name = names[i], .type = ptypes[i], .typmod = -1 };
                }
                d.returns_rows = true;
                d.ncolumns = d.nparams;
                d.columns = cols;
        } else if (word_is(sql, "TYPES")) {
                d.returns_rows = true;
                d.ncolumns = ELEMENTSOF(cols_types);
                d.columns = cols_types;
        } else if (word_is(sql, "BIG") || word_is(sql, "BIGSYNC")) {
                d.returns_rows = true;
                d.ncolumns = 1;
                d.columns = &col_big;
        }
        copy = strdup(sql);
        CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
        d.stmt = copy;
        fs.live_stmts++;
        CU_ASSERT_EQUAL(pgwire_describe_statement(c, &d), 0);
        pgwire_done(c);
}

static void fake_execute(struct pgwire_conn *c, void *stmt, unsigned nparams,
                         const struct pgwire_param *params, void *userdata)
{
        for (unsigned i = 0; i < nparams; i++)
                CU_ASSERT(!params[i].value || params[i].value[params[i].len] == '\0');
        fake_start(pgwire_conn_userdata(c), stmt, nparams, params, true);
}

static void fake_stmt_free(void *stmt, void *userdata)
{
        fs.live_stmts--;
        free(stmt);
}

static void fake_cancel(struct pgwire_conn *target, void *userdata)
{
        struct fconn *f = pgwire_conn_userdata(target);

        fs.cancels_seen++;
        if (!f->timer)
                return;         /* nothing running that could be stopped */
        loop_timer_cancel(L, f->timer);
        f->timer = NULL;
        (void)pgwire_send_error(target, &(struct pgcodec_error){
                .sqlstate = PGCODEC_SQLSTATE_QUERY_CANCELED,
                .message = "canceling statement due to user request" });
        fake_finish(f);
}

static const struct pgwire_callbacks fake_callbacks = {
        .connect = fake_connect,
        .disconnect = fake_disconnect,
        .query = fake_query,
        .prepare = fake_prepare,
        .execute = fake_execute,
        .stmt_free = fake_stmt_free,
        .cancel = fake_cancel,
};

/* --- Control from the test thread ---------------------------------------------------- */

static void ctl_answer(void)
{
        pthread_mutex_lock(&ctl_mu);
        fs.srv = (struct pgwire_stats){ 0 };
        if (S)
                pgwire_server_stats(S, &fs.srv);
        fs_copy = fs;
        ctl_answered = true;
        pthread_cond_broadcast(&ctl_cv);
        pthread_mutex_unlock(&ctl_mu);
}

static void shutdown_done(struct pgwire_server *s, void *userdata)
{
        pgwire_server_stats(s, &fs.srv);
        fs.shut_down = true;
        fs_copy = fs;
        /* From done(), freeing is immediate (the header allows it). */
        S = pgwire_server_free(s);
        pthread_mutex_lock(&ctl_mu);
        fs_copy = fs;
        ctl_answered = true;
        pthread_cond_broadcast(&ctl_cv);
        pthread_mutex_unlock(&ctl_mu);
        loop_stop(L);
}

static void second_done(struct pgwire_server *s, void *userdata)
{
        second = pgwire_server_free(s);
        ctl_answer();
}

static void ctl_fire(struct loop *l, uint64_t count, void *userdata)
{
        enum ctl_cmd cmd;

        pthread_mutex_lock(&ctl_mu);
        cmd = ctl_pending;
        ctl_pending = CTL_NONE;
        pthread_mutex_unlock(&ctl_mu);

        switch (cmd) {
        case CTL_STATS:
                ctl_answer();
                break;
        case CTL_SHUTDOWN:
                pgwire_server_shutdown(S, shutdown_done, NULL);
                break;
        case CTL_SECOND_START: {
                struct pgwire_config cfg;

                pgwire_config_init(&cfg);
                cfg.port = 0;
                cfg.max_connections = 2;
                CU_ASSERT_EQUAL(pgwire_server_new(L, &cfg, &fake_callbacks, NULL, &second), 0);
                fs.second_port = second ? pgwire_server_port(second) : 0;
                ctl_answer();
                break;
        }
        case CTL_SECOND_STOP:
                pgwire_server_shutdown(second, second_done, NULL);
                break;
        case CTL_SECOND_FREE:
                /* Abruptly, with clients connected and a request in flight. */
                second = pgwire_server_free(second);
                ctl_answer();
                break;
        case CTL_NONE:
                break;
        }
}

/* Run cmd in the loop thread and wait for its answer (a copy of the counters). */
static struct fake_stats ctl_call(enum ctl_cmd cmd)
{
        struct fake_stats r;

        pthread_mutex_lock(&ctl_mu);
        ctl_pending = cmd;
        ctl_answered = false;
        pthread_mutex_unlock(&ctl_mu);
        loop_waker_wake(ctl);
        pthread_mutex_lock(&ctl_mu);
        while (!ctl_answered)
                pthread_cond_wait(&ctl_cv, &ctl_mu);
        r = fs_copy;
        pthread_mutex_unlock(&ctl_mu);
        return r;
}

/* Wait (bounded) until pred holds on the counters. */
static struct fake_stats ctl_wait(bool (*pred)(const struct fake_stats *))
{
        struct fake_stats st;

        for (int i = 0; i < 1000; i++) {
                st = ctl_call(CTL_STATS);
                if (pred(&st))
                        return st;
                usleep(10 * 1000);
        }
        CU_FAIL("condition not reached in 10 s");
        return st;
}

/* Wait (bounded) until the fake executor has begun a SLEEP more than `before`
 * (ctl_call(CTL_STATS).sleeps_started before sending it): the query runs. */
static bool sleep_running(int before)
{
        return t_wait_for(ctl_call(CTL_STATS).sleeps_started > before, 10000);
}

static void *loop_main(void *arg)
{
        intptr_t r = loop_run(L);
        return (void *)r;
}

/* --- libpq helpers ---------------------------------------------------------------- */

static PGconn *t_connect(const char *extra)
{
        char conninfo[512];
        PGconn *conn;

        snprintf(conninfo, sizeof(conninfo),
                 "host=127.0.0.1 port=%u user=tester dbname=db connect_timeout=10 %s",
                 port, extra ? extra : "sslmode=disable");
        conn = PQconnectdb(conninfo);
        if (PQstatus(conn) != CONNECTION_OK)
                fprintf(stderr, "connect (%s): %s", conninfo, PQerrorMessage(conn));
        return conn;
}

static PGconn *t_connect_unix(void)
{
        char conninfo[512];

        snprintf(conninfo, sizeof(conninfo),
                 "host=%s port=%u user=tester dbname=db connect_timeout=10", tmpdir, UNIX_PORT);
        return PQconnectdb(conninfo);
}

static const char *sqlstate_of(const PGresult *res)
{
        const char *s = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        return s ? s : "";
}

/* PQexec and check the status (and ntuples when >= 0); returns the result. */
static PGresult *t_exec(PGconn *conn, const char *sql, ExecStatusType want, int ntuples)
{
        PGresult *res = PQexec(conn, sql);

        CU_ASSERT_EQUAL(PQresultStatus(res), want);
        if (PQresultStatus(res) != want)
                fprintf(stderr, "%s: %s %s", sql, PQresStatus(PQresultStatus(res)),
                        PQerrorMessage(conn));
        if (ntuples >= 0)
                CU_ASSERT_EQUAL(PQntuples(res), ntuples);
        return res;
}

static void t_exec_ok(PGconn *conn, const char *sql, ExecStatusType want, int ntuples)
{
        PQclear(t_exec(conn, sql, want, ntuples));
}

/* The connection every garbage case runs next to. */
static PGconn *bystander;

static void bystander_check(void)
{
        t_exec_ok(bystander, "SELECT 2", PGRES_TUPLES_OK, 2);
}

/* --- Raw socket helpers ------------------------------------------------------------ */

struct raw {
        int fd;
        uint8_t buf[1 << 16];
        size_t len, off;
};

struct raw_msg {
        uint8_t type;
        uint8_t *body;
        size_t len;
};

static struct raw *raw_open(int rcvbuf)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        struct raw *r = calloc(1, sizeof(*r));

        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        r->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CU_ASSERT_FATAL(r->fd >= 0);
        if (rcvbuf)
                CU_ASSERT_EQUAL(setsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
        CU_ASSERT_EQUAL_FATAL(connect(r->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        return r;
}

static void raw_close(struct raw *r)
{
        if (!r)
                return;
        closep(&r->fd);
        free(r);
}

static void raw_send(struct raw *r, const void *p, size_t n)
{
        const uint8_t *b = p;

        while (n > 0) {
                ssize_t k = send(r->fd, b, n, MSG_NOSIGNAL);

                if (k < 0 && errno == EINTR)
                        continue;
                CU_ASSERT_FATAL(k > 0);
                b += k;
                n -= (size_t)k;
        }
}

static void raw_send_buf(struct raw *r, struct pgcodec_buf *b)
{
        CU_ASSERT_EQUAL_FATAL(pgcodec_buf_error(b), 0);
        raw_send(r, b->data, b->len);
        pgcodec_buf_reset(b);
}

/* At least n buffered bytes: 1, 0 on EOF, -errno (-ETIMEDOUT). */
static int raw_fill(struct raw *r, size_t n)
{
        if (r->off > 0 && r->len - r->off < n) {
                memmove(r->buf, r->buf + r->off, r->len - r->off);
                r->len -= r->off;
                r->off = 0;
        }
        while (r->len - r->off < n) {
                struct pollfd p = { .fd = r->fd, .events = POLLIN };
                ssize_t k;

                if (poll(&p, 1, RAW_TIMEOUT_MS) == 0)
                        return -ETIMEDOUT;
                k = recv(r->fd, r->buf + r->len, sizeof(r->buf) - r->len, 0);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return 0;
                r->len += (size_t)k;
        }
        return 1;
}

/* The next backend message: its type, 0 on EOF, -errno on error or timeout.  The body
 * is valid until the next call. */
static int raw_read(struct raw *r, struct raw_msg *m)
{
        uint32_t n;
        int k = raw_fill(r, 5);

        if (k <= 0)
                return k;
        n = (uint32_t)r->buf[r->off + 1] << 24 | (uint32_t)r->buf[r->off + 2] << 16 |
            (uint32_t)r->buf[r->off + 3] << 8 | r->buf[r->off + 4];
        CU_ASSERT_FATAL(n >= 4 && n <= sizeof(r->buf) - 1);
        k = raw_fill(r, 1 + n);
        if (k <= 0)
                return k;
        m->type = r->buf[r->off];
        m->body = r->buf + r->off + 5;
        m->len = n - 4;
        r->off += 1 + n;
        return m->type;
}

/* A field of an ErrorResponse / NoticeResponse, "" if absent. */
static const char *raw_field(const struct raw_msg *m, char code)
{
        size_t i = 0;

        while (i < m->len && m->body[i]) {
                const char *v = (const char *)m->body + i + 1;

                if (m->body[i] == (uint8_t)code)
                        return v;
                i += 1 + strlen(v) + 1;
        }
        return "";
}

/* The next message must be of type want (returned for inspection). */
static struct raw_msg raw_expect(struct raw *r, uint8_t want)
{
        struct raw_msg m = { 0 };
        int k = raw_read(r, &m);

        if (k != want)
                fprintf(stderr, "raw: wanted '%c', got %d ('%c') %s\n", want, k,
                        k > 0 ? k : '?', k == 'E' ? raw_field(&m, 'M') : "");
        CU_ASSERT_EQUAL_FATAL(k, want);
        return m;
}

/* An 08P01 ErrorResponse, then EOF (or a reset). */
static void raw_expect_violation(struct raw *r)
{
        struct raw_msg m = raw_expect(r, 'E');
        int k;

        CU_ASSERT_STRING_EQUAL(raw_field(&m, 'C'), PGCODEC_SQLSTATE_PROTOCOL_VIOLATION);
        CU_ASSERT_STRING_EQUAL(raw_field(&m, 'S'), "FATAL");
        k = raw_read(r, &m);
        CU_ASSERT(k == 0 || k == -ECONNRESET);
}

static void raw_startup_msg(struct pgcodec_buf *b, uint32_t version, const char *user)
{
        size_t m = pgcodec_msg_begin(b, 0);

        pgcodec_put_i32(b, (int32_t)version);
        if (user) {
                pgcodec_put_str(b, "user");
                pgcodec_put_str(b, user);
        }
        pgcodec_put_u8(b, 0);
        pgcodec_msg_end(b, m);
}

/* Open, start up and read through the first ReadyForQuery. */
static struct raw *raw_ready(int rcvbuf, int32_t *ret_pid, uint32_t *ret_secret)
{
        struct raw *r = raw_open(rcvbuf);
        struct pgcodec_buf b;
        struct raw_msg m;
        int k;

        pgcodec_buf_init(&b, 0);
        raw_startup_msg(&b, PGCODEC_PROTOCOL(3, 0), "raw");
        raw_send_buf(r, &b);
        pgcodec_buf_done(&b);
        m = raw_expect(r, 'R');
        CU_ASSERT_EQUAL(m.len, 4);
        while ((k = raw_read(r, &m)) == 'S')
                ;
        CU_ASSERT_EQUAL_FATAL(k, 'K');
        if (ret_pid)
                *ret_pid = (int32_t)((uint32_t)m.body[0] << 24 | (uint32_t)m.body[1] << 16 |
                                     (uint32_t)m.body[2] << 8 | m.body[3]);
        if (ret_secret)
                *ret_secret = (uint32_t)m.body[4] << 24 | (uint32_t)m.body[5] << 16 |
                              (uint32_t)m.body[6] << 8 | m.body[7];
        m = raw_expect(r, 'Z');
        CU_ASSERT_EQUAL(m.body[0], 'I');
        return r;
}

static void put_query(struct pgcodec_buf *b, const char *sql)
{
        size_t m = pgcodec_msg_begin(b, 'Q');

        pgcodec_put_str(b, sql);
        pgcodec_msg_end(b, m);
}

/* --- Tests: connecting --------------------------------------------------------------- */

static void test_connect_tcp(void)
{
        PGconn *conn = t_connect("sslmode=disable application_name=unit");

        CU_ASSERT_EQUAL_FATAL(PQstatus(conn), CONNECTION_OK);
        CU_ASSERT_STRING_EQUAL(PQparameterStatus(conn, "server_version"), "15.0 (Coord)");
        CU_ASSERT_EQUAL(PQserverVersion(conn), 150000);
        CU_ASSERT_EQUAL(PQprotocolVersion(conn), 3);
        CU_ASSERT_STRING_EQUAL(PQparameterStatus(conn, "application_name"), "unit");
        CU_ASSERT_STRING_EQUAL(PQparameterStatus(conn, "server_encoding"), "UTF8");
        CU_ASSERT_STRING_EQUAL(PQparameterStatus(conn, "client_encoding"), "UTF8");
        CU_ASSERT_STRING_EQUAL(PQparameterStatus(conn, "DateStyle"), "ISO, MDY");
        CU_ASSERT_STRING_EQUAL(PQparameterStatus(conn, "integer_datetimes"), "on");
        CU_ASSERT_STRING_EQUAL(PQparameterStatus(conn, "standard_conforming_strings"), "on");
        CU_ASSERT_STRING_EQUAL(PQparameterStatus(conn, "TimeZone"), "UTC");
        CU_ASSERT_STRING_EQUAL(PQparameterStatus(conn, "coord_test"), "yes");   /* owner's */
        CU_ASSERT(PQbackendPID(conn) > 0);
        CU_ASSERT_EQUAL(PQtransactionStatus(conn), PQTRANS_IDLE);
        t_exec_ok(conn, "SELECT 1", PGRES_TUPLES_OK, 1);
        PQfinish(conn);
}

static void test_connect_unix(void)
{
        PGconn *conn = t_connect_unix();

        if (PQstatus(conn) != CONNECTION_OK)
                fprintf(stderr, "unix: %s", PQerrorMessage(conn));
        CU_ASSERT_EQUAL_FATAL(PQstatus(conn), CONNECTION_OK);
        t_exec_ok(conn, "SELECT 4", PGRES_TUPLES_OK, 4);
        PQfinish(conn);
}

static void test_connect_ssl(void)
{
        PGconn *conn;

        /* prefer: SSLRequest, 'N', then the startup in the clear. */
        conn = t_connect("sslmode=prefer");
        CU_ASSERT_EQUAL(PQstatus(conn), CONNECTION_OK);
        CU_ASSERT_PTR_NULL(PQgetssl(conn));
        t_exec_ok(conn, "SELECT 1", PGRES_TUPLES_OK, 1);
        PQfinish(conn);

        /* require: refused cleanly by the client. */
        {
                char ci[128];

                snprintf(ci, sizeof(ci), "host=127.0.0.1 port=%u user=t sslmode=require", port);
                conn = PQconnectdb(ci);
                CU_ASSERT_EQUAL(PQstatus(conn), CONNECTION_BAD);
                CU_ASSERT_PTR_NOT_NULL(strstr(PQerrorMessage(conn), "SSL"));
                PQfinish(conn);
        }
        bystander_check();
}

static void test_connect_raw_negotiation(void)
{
        struct pgcodec_buf b;
        struct raw *r;
        struct raw_msg m;
        uint8_t one;
        size_t at;

        pgcodec_buf_init(&b, 0);

        /* GSSENCRequest, then SSLRequest, each answered with one byte 'N'. */
        r = raw_open(0);
        at = pgcodec_msg_begin(&b, 0);
        pgcodec_put_i32(&b, (int32_t)PGCODEC_GSSENC_REQUEST_CODE);
        pgcodec_msg_end(&b, at);
        raw_send_buf(r, &b);
        CU_ASSERT_EQUAL(raw_fill(r, 1), 1);
        one = r->buf[r->off++];
        CU_ASSERT_EQUAL(one, 'N');
        at = pgcodec_msg_begin(&b, 0);
        pgcodec_put_i32(&b, (int32_t)PGCODEC_SSL_REQUEST_CODE);
        pgcodec_msg_end(&b, at);
        raw_send_buf(r, &b);
        CU_ASSERT_EQUAL(raw_fill(r, 1), 1);
        one = r->buf[r->off++];
        CU_ASSERT_EQUAL(one, 'N');
        raw_startup_msg(&b, PGCODEC_PROTOCOL(3, 0), "raw");
        raw_send_buf(r, &b);
        raw_expect(r, 'R');
        raw_close(r);

        /* Protocol 3.7 and a "_pq_." option: NegotiateProtocolVersion, then as usual. */
        r = raw_open(0);
        at = pgcodec_msg_begin(&b, 0);
        pgcodec_put_i32(&b, (int32_t)PGCODEC_PROTOCOL(3, 7));
        pgcodec_put_str(&b, "user");
        pgcodec_put_str(&b, "raw");
        pgcodec_put_str(&b, "_pq_.future");
        pgcodec_put_str(&b, "1");
        pgcodec_put_u8(&b, 0);
        pgcodec_msg_end(&b, at);
        raw_send_buf(r, &b);
        m = raw_expect(r, 'v');
        CU_ASSERT_EQUAL(m.len, 4 + 4 + sizeof("_pq_.future"));
        CU_ASSERT_EQUAL(m.body[1], 3);          /* 3.0 */
        CU_ASSERT_EQUAL(m.body[3], 0);
        CU_ASSERT_EQUAL(m.body[7], 1);
        CU_ASSERT_STRING_EQUAL((const char *)m.body + 8, "_pq_.future");
        raw_expect(r, 'R');
        raw_close(r);

        /* Protocol 2.0: 0A000 and close. */
        r = raw_open(0);
        raw_startup_msg(&b, PGCODEC_PROTOCOL(2, 0), "raw");
        raw_send_buf(r, &b);
        m = raw_expect(r, 'E');
        CU_ASSERT_STRING_EQUAL(raw_field(&m, 'C'), PGCODEC_SQLSTATE_FEATURE_NOT_SUPPORTED);
        CU_ASSERT_EQUAL(raw_read(r, &m), 0);
        raw_close(r);

        /* No user: 28000. */
        r = raw_open(0);
        raw_startup_msg(&b, PGCODEC_PROTOCOL(3, 0), NULL);
        raw_send_buf(r, &b);
        m = raw_expect(r, 'E');
        CU_ASSERT_STRING_EQUAL(raw_field(&m, 'C'), PGCODEC_SQLSTATE_INVALID_AUTHORIZATION);
        raw_close(r);
        pgcodec_buf_done(&b);
        bystander_check();
}

static void test_connect_rejected(void)
{
        char ci[128];
        PGconn *conn;

        snprintf(ci, sizeof(ci), "host=127.0.0.1 port=%u user=reject sslmode=disable", port);
        conn = PQconnectdb(ci);
        CU_ASSERT_EQUAL(PQstatus(conn), CONNECTION_BAD);
        CU_ASSERT_PTR_NOT_NULL(strstr(PQerrorMessage(conn), "not permitted to log in"));
        PQfinish(conn);
        bystander_check();
}

static void test_max_connections(void)
{
        struct fake_stats st = ctl_call(CTL_SECOND_START);
        PGconn *c[3];
        char ci[160];

        CU_ASSERT_FATAL(st.second_port > 0);
        snprintf(ci, sizeof(ci), "host=127.0.0.1 port=%u user=tester sslmode=disable",
                 st.second_port);
        for (int i = 0; i < 3; i++)
                c[i] = PQconnectdb(ci);
        CU_ASSERT_EQUAL(PQstatus(c[0]), CONNECTION_OK);
        CU_ASSERT_EQUAL(PQstatus(c[1]), CONNECTION_OK);
        CU_ASSERT_EQUAL(PQstatus(c[2]), CONNECTION_BAD);
        CU_ASSERT_PTR_NOT_NULL(strstr(PQerrorMessage(c[2]), "too many clients"));
        t_exec_ok(c[1], "SELECT 1", PGRES_TUPLES_OK, 1);
        for (int i = 0; i < 3; i++)
                PQfinish(c[i]);
        /* A graceful stop of that server, with clients gone. */
        ctl_call(CTL_SECOND_STOP);
        bystander_check();
}

static void test_abrupt_free(void)
{
        struct fake_stats before = ctl_call(CTL_STATS), st;
        PGconn *idle, *busy;
        PGresult *res;
        char ci[160];

        st = ctl_call(CTL_SECOND_START);
        CU_ASSERT_FATAL(st.second_port > 0);
        snprintf(ci, sizeof(ci), "host=127.0.0.1 port=%u user=tester sslmode=disable",
                 st.second_port);
        idle = PQconnectdb(ci);
        busy = PQconnectdb(ci);
        CU_ASSERT_EQUAL_FATAL(PQstatus(idle), CONNECTION_OK);
        CU_ASSERT_EQUAL_FATAL(PQstatus(busy), CONNECTION_OK);
        res = PQprepare(idle, "s", "SELECT $1", 0, NULL);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_COMMAND_OK);
        PQclear(res);
        CU_ASSERT_EQUAL_FATAL(PQsendQuery(busy, "SLEEP 300"), 1);
        CU_ASSERT_FATAL(sleep_running(before.sleeps_started));

        /* disconnect() and stmt_free() have run by the time free returns. */
        st = ctl_call(CTL_SECOND_FREE);
        CU_ASSERT_EQUAL(st.live_conns, before.live_conns);
        CU_ASSERT_EQUAL(st.live_stmts, before.live_stmts);
        CU_ASSERT_EQUAL(st.disconnects, before.disconnects + 2);

        res = PQgetResult(busy);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_FATAL_ERROR);
        PQclear(res);
        while ((res = PQgetResult(busy)))
                PQclear(res);
        res = PQexec(idle, "SELECT 1");
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_FATAL_ERROR);
        PQclear(res);
        PQfinish(idle);
        PQfinish(busy);
        bystander_check();
}

/* --- Tests: simple query ------------------------------------------------------------- */

static void test_simple_select(void)
{
        PGresult *res = t_exec(bystander, "SELECT 3", PGRES_TUPLES_OK, 3);

        CU_ASSERT_EQUAL(PQnfields(res), 1);
        CU_ASSERT_STRING_EQUAL(PQfname(res, 0), "?column?");
        CU_ASSERT_EQUAL(PQftype(res, 0), PGCODEC_OID_INT4);
        CU_ASSERT_EQUAL(PQfsize(res, 0), 4);
        CU_ASSERT_EQUAL(PQfformat(res, 0), 0);
        CU_ASSERT_STRING_EQUAL(PQgetvalue(res, 0, 0), "1");
        CU_ASSERT_STRING_EQUAL(PQgetvalue(res, 2, 0), "3");
        CU_ASSERT_STRING_EQUAL(PQcmdStatus(res), "SELECT 3");
        CU_ASSERT_STRING_EQUAL(PQcmdTuples(res), "3");
        PQclear(res);

        res = t_exec(bystander, "SELECT 0", PGRES_TUPLES_OK, 0);
        CU_ASSERT_EQUAL(PQnfields(res), 1);
        PQclear(res);

        res = t_exec(bystander, "TYPES", PGRES_TUPLES_OK, 1);
        CU_ASSERT_EQUAL(PQnfields(res), 8);
        CU_ASSERT_STRING_EQUAL(PQgetvalue(res, 0, 5), "h\xc3\xa9llo");
        CU_ASSERT(PQgetisnull(res, 0, 7));
        CU_ASSERT_EQUAL(PQftype(res, 2), PGCODEC_OID_INT8);
        PQclear(res);
}

static void test_simple_commands(void)
{
        static const struct { const char *sql, *tag, *tuples; } cases[] = {
                { "CREATE TABLE t (a int)", "CREATE TABLE", "" },
                { "INSERT INTO t VALUES (1)", "INSERT 0 1", "1" },
                { "DELETE FROM t WHERE a = 1", "DELETE 1", "1" },
                { "DROP TABLE t", "DROP TABLE", "" },
                { "SET search_path = x", "SET", "" },
        };
        PGresult *res;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                res = t_exec(bystander, cases[i].sql, PGRES_COMMAND_OK, 0);
                CU_ASSERT_STRING_EQUAL(PQcmdStatus(res), cases[i].tag);
                CU_ASSERT_STRING_EQUAL(PQcmdTuples(res), cases[i].tuples);
                PQclear(res);
        }
        res = t_exec(bystander, "SHOW transaction_isolation", PGRES_TUPLES_OK, 1);
        CU_ASSERT_STRING_EQUAL(PQfname(res, 0), "transaction_isolation");
        PQclear(res);
        t_exec_ok(bystander, "", PGRES_EMPTY_QUERY, 0);
        t_exec_ok(bystander, " ; ;", PGRES_EMPTY_QUERY, 0);

        /* The owner's transaction status reaches ReadyForQuery. */
        t_exec_ok(bystander, "BEGIN", PGRES_COMMAND_OK, 0);
        CU_ASSERT_EQUAL(PQtransactionStatus(bystander), PQTRANS_INTRANS);
        t_exec_ok(bystander, "COMMIT", PGRES_COMMAND_OK, 0);
        CU_ASSERT_EQUAL(PQtransactionStatus(bystander), PQTRANS_IDLE);
}

static void test_simple_multi_statement(void)
{
        PGresult *res;

        CU_ASSERT_EQUAL_FATAL(PQsendQuery(bystander, "SELECT 1; SELECT 2;; CREATE TABLE u (a int)"), 1);
        res = PQgetResult(bystander);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_TUPLES_OK);
        CU_ASSERT_EQUAL(PQntuples(res), 1);
        PQclear(res);
        res = PQgetResult(bystander);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_TUPLES_OK);
        CU_ASSERT_EQUAL(PQntuples(res), 2);
        PQclear(res);
        res = PQgetResult(bystander);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_COMMAND_OK);
        CU_ASSERT_STRING_EQUAL(PQcmdStatus(res), "CREATE TABLE");
        PQclear(res);
        CU_ASSERT_PTR_NULL(PQgetResult(bystander));

        /* After an error, the rest of the string is skipped. */
        CU_ASSERT_EQUAL_FATAL(PQsendQuery(bystander, "SELECT 1; ERR; SELECT 2"), 1);
        res = PQgetResult(bystander);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_TUPLES_OK);
        PQclear(res);
        res = PQgetResult(bystander);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_FATAL_ERROR);
        CU_ASSERT_STRING_EQUAL(sqlstate_of(res), "42601");
        PQclear(res);
        CU_ASSERT_PTR_NULL(PQgetResult(bystander));

        /* Asynchronous statements in the middle of a string. */
        res = t_exec(bystander, "SLEEP 20; SELECT 5; SLEEP 1; SELECT 2", PGRES_TUPLES_OK, 2);
        PQclear(res);
}

static void notice_cb(void *arg, const PGresult *res)
{
        snprintf(arg, 64, "%s", PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY));
}

static void test_simple_errors(void)
{
        char notice[64] = "";
        PGresult *res;

        res = t_exec(bystander, "ERR", PGRES_FATAL_ERROR, 0);
        CU_ASSERT_STRING_EQUAL(sqlstate_of(res), "42601");
        CU_ASSERT_STRING_EQUAL(PQresultErrorField(res, PG_DIAG_SEVERITY), "ERROR");
        CU_ASSERT_STRING_EQUAL(PQresultErrorField(res, PG_DIAG_STATEMENT_POSITION), "1");
        CU_ASSERT_STRING_EQUAL(PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL), "from the fake executor");
        CU_ASSERT_STRING_EQUAL(PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY),
                               "syntax error at or near \"ERR\"");
        PQclear(res);
        CU_ASSERT_EQUAL(PQstatus(bystander), CONNECTION_OK);
        bystander_check();

        PQsetNoticeReceiver(bystander, notice_cb, notice);
        t_exec_ok(bystander, "NOTICE", PGRES_COMMAND_OK, 0);
        CU_ASSERT_STRING_EQUAL(notice, "hello notice");
        PQsetNoticeReceiver(bystander, NULL, NULL);
}

static void test_simple_fatal(void)
{
        PGconn *conn = t_connect(NULL);
        PGresult *res;

        CU_ASSERT_EQUAL_FATAL(PQstatus(conn), CONNECTION_OK);
        res = PQexec(conn, "FATAL");
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_FATAL_ERROR);
        /* libpq rebuilds the result from its error text when the close follows a
         * FATAL (as after pg_terminate_backend()), so the SQLSTATE is not kept; the
         * message is. */
        CU_ASSERT_PTR_NOT_NULL(strstr(PQerrorMessage(conn), "FATAL:  fatal on request"));
        PQclear(res);
        CU_ASSERT_EQUAL(PQstatus(conn), CONNECTION_BAD);
        PQfinish(conn);
        bystander_check();
}

/* --- Tests: extended query ------------------------------------------------------------- */

static void test_exec_params_text(void)
{
        const char *vals[2] = { "hello", NULL };
        PGresult *res;

        res = PQexecParams(bystander, "SELECT $1, $2", 2, NULL, vals, NULL, NULL, 0);
        CU_ASSERT_EQUAL_FATAL(PQresultStatus(res), PGRES_TUPLES_OK);
        CU_ASSERT_EQUAL(PQntuples(res), 1);
        CU_ASSERT_EQUAL(PQnfields(res), 2);
        CU_ASSERT_STRING_EQUAL(PQfname(res, 0), "p1");
        CU_ASSERT_STRING_EQUAL(PQgetvalue(res, 0, 0), "hello");
        CU_ASSERT(PQgetisnull(res, 0, 1));
        PQclear(res);

        /* No parameters through the extended protocol; statements with no rows. */
        res = PQexecParams(bystander, "SELECT 3", 0, NULL, NULL, NULL, NULL, 0);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_TUPLES_OK);
        CU_ASSERT_EQUAL(PQntuples(res), 3);
        PQclear(res);
        res = PQexecParams(bystander, "INSERT INTO t VALUES ($1)", 1, NULL, vals, NULL, NULL, 0);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_COMMAND_OK);
        CU_ASSERT_STRING_EQUAL(PQcmdStatus(res), "INSERT 0 1");
        PQclear(res);
        res = PQexecParams(bystander, "", 0, NULL, NULL, NULL, NULL, 0);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_EMPTY_QUERY);
        PQclear(res);

        /* Errors from prepare() and from the statement, each recovered by Sync. */
        res = PQexecParams(bystander, "ERR", 0, NULL, NULL, NULL, NULL, 0);
        CU_ASSERT_STRING_EQUAL(sqlstate_of(res), "42601");
        PQclear(res);
        res = PQexecParams(bystander, "SELECT 1; SELECT 2", 0, NULL, NULL, NULL, NULL, 0);
        CU_ASSERT_STRING_EQUAL(sqlstate_of(res), "42601");
        PQclear(res);
        res = PQexecParams(bystander, "SELECT $1", 2, NULL, vals, NULL, NULL, 0);
        CU_ASSERT_STRING_EQUAL(sqlstate_of(res), "08P01");     /* 2 supplied, 1 required */
        PQclear(res);
        bystander_check();
}

static void test_exec_params_binary(void)
{
        const Oid types[3] = { PGCODEC_OID_INT4, PGCODEC_OID_TEXT, PGCODEC_OID_INT8 };
        const uint8_t i4[4] = { 0, 0, 0, 42 };
        const uint8_t i8[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe };
        const char *vals[3] = { (const char *)i4, "bin", (const char *)i8 };
        const int lens[3] = { 4, 3, 8 };
        const int fmts[3] = { 1, 1, 1 };
        const uint8_t *v;
        PGresult *res;

        /* Binary parameters reach the executor as text, with their types. */
        res = PQexecParams(bystander, "SELECT $1, $2, $3", 3, types, vals, lens, fmts, 0);
        CU_ASSERT_EQUAL_FATAL(PQresultStatus(res), PGRES_TUPLES_OK);
        CU_ASSERT_STRING_EQUAL(PQgetvalue(res, 0, 0), "42");
        CU_ASSERT_STRING_EQUAL(PQgetvalue(res, 0, 1), "bin");
        CU_ASSERT_STRING_EQUAL(PQgetvalue(res, 0, 2), "-2");
        CU_ASSERT_EQUAL(PQftype(res, 0), PGCODEC_OID_INT4);
        PQclear(res);

        /* ... and come back binary when asked. */
        res = PQexecParams(bystander, "SELECT $1, $2, $3", 3, types, vals, lens, fmts, 1);
        CU_ASSERT_EQUAL_FATAL(PQresultStatus(res), PGRES_TUPLES_OK);
        CU_ASSERT_EQUAL(PQfformat(res, 0), 1);
        CU_ASSERT_EQUAL(PQgetlength(res, 0, 0), 4);
        CU_ASSERT_EQUAL(memcmp(PQgetvalue(res, 0, 0), i4, 4), 0);
        CU_ASSERT_EQUAL(PQgetlength(res, 0, 2), 8);
        CU_ASSERT_EQUAL(memcmp(PQgetvalue(res, 0, 2), i8, 8), 0);
        PQclear(res);

        /* Every supported type in binary. */
        res = PQexecParams(bystander, "TYPES", 0, NULL, NULL, NULL, NULL, 1);
        CU_ASSERT_EQUAL_FATAL(PQresultStatus(res), PGRES_TUPLES_OK);
        v = (const uint8_t *)PQgetvalue(res, 0, 0);
        CU_ASSERT(PQgetlength(res, 0, 0) == 2 && v[0] == 0xff && v[1] == 0xf9);    /* -7 */
        v = (const uint8_t *)PQgetvalue(res, 0, 1);
        CU_ASSERT(PQgetlength(res, 0, 1) == 4 && v[1] == 0x01 && v[2] == 0xe2 && v[3] == 0x40);
        CU_ASSERT_EQUAL(PQgetlength(res, 0, 2), 8);
        v = (const uint8_t *)PQgetvalue(res, 0, 3);
        CU_ASSERT(PQgetlength(res, 0, 3) == 1 && v[0] == 1);
        v = (const uint8_t *)PQgetvalue(res, 0, 4);
        CU_ASSERT(PQgetlength(res, 0, 4) == 8 && v[0] == 0x40 && v[1] == 0x04);      /* 2.5 */
        CU_ASSERT(PQgetlength(res, 0, 5) == 6 && memcmp(PQgetvalue(res, 0, 5), "h\xc3\xa9llo", 6) == 0);
        v = (const uint8_t *)PQgetvalue(res, 0, 6);
        CU_ASSERT(PQgetlength(res, 0, 6) == 2 && v[0] == 1 && v[1] == 2);
        CU_ASSERT(PQgetisnull(res, 0, 7));
        PQclear(res);

        /* A malformed binary parameter: 22P03 from Bind. */
        {
                const int bad_lens[3] = { 3, 3, 8 };

                res = PQexecParams(bystander, "SELECT $1, $2, $3", 3, types, vals, bad_lens, fmts, 0);
                CU_ASSERT_STRING_EQUAL(sqlstate_of(res), "22P03");
                PQclear(res);
        }
        bystander_check();
}

static void test_prepared(void)
{
        const char *x[1] = { "x" }, *y[1] = { "y" };
        PGresult *res;

        res = PQprepare(bystander, "s1", "SELECT $1", 0, NULL);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_COMMAND_OK);
        PQclear(res);

        res = PQdescribePrepared(bystander, "s1");
        CU_ASSERT_EQUAL_FATAL(PQresultStatus(res), PGRES_COMMAND_OK);
        CU_ASSERT_EQUAL(PQnparams(res), 1);
        CU_ASSERT_EQUAL(PQparamtype(res, 0), PGCODEC_OID_TEXT);
        CU_ASSERT_EQUAL(PQnfields(res), 1);
        CU_ASSERT_STRING_EQUAL(PQfname(res, 0), "p1");
        PQclear(res);

        for (int i = 0; i < 3; i++) {
                res = PQexecPrepared(bystander, "s1", 1, i & 1 ? y : x, NULL, NULL, 0);
                CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_TUPLES_OK);
                CU_ASSERT_STRING_EQUAL(PQgetvalue(res, 0, 0), i & 1 ? "y" : "x");
                PQclear(res);
        }

        /* The duplicate, the unknown, the failing. */
        res = PQprepare(bystander, "s1", "SELECT 1", 0, NULL);
        CU_ASSERT_STRING_EQUAL(sqlstate_of(res), "42P05");
        PQclear(res);
        res = PQexecPrepared(bystander, "nope", 0, NULL, NULL, NULL, 0);
        CU_ASSERT_STRING_EQUAL(sqlstate_of(res), "26000");
        PQclear(res);
        res = PQdescribePrepared(bystander, "nope");
        CU_ASSERT_STRING_EQUAL(sqlstate_of(res), "26000");
        PQclear(res);
        res = PQprepare(bystander, "bad", "ERR", 0, NULL);
        CU_ASSERT_STRING_EQUAL(sqlstate_of(res), "42601");
        PQclear(res);
        res = PQexecPrepared(bystander, "bad", 0, NULL, NULL, NULL, 0);
        CU_ASSERT_STRING_EQUAL(sqlstate_of(res), "26000");
        PQclear(res);

        /* A statement without rows: NoData, then a command tag. */
        res = PQprepare(bystander, "ins", "INSERT INTO t VALUES ($1)", 1, (Oid[]){ PGCODEC_OID_INT4 });
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_COMMAND_OK);
        PQclear(res);
        res = PQdescribePrepared(bystander, "ins");
        CU_ASSERT_EQUAL(PQnfields(res), 0);
        CU_ASSERT_EQUAL(PQnparams(res), 1);
        CU_ASSERT_EQUAL(PQparamtype(res, 0), PGCODEC_OID_INT4);
        PQclear(res);
        res = PQexecPrepared(bystander, "ins", 1, (const char *[]){ "5" }, NULL, NULL, 0);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_COMMAND_OK);
        CU_ASSERT_STRING_EQUAL(PQcmdTuples(res), "1");
        PQclear(res);

        /* An asynchronous prepared statement. */
        res = PQprepare(bystander, "sl", "SLEEP 5", 0, NULL);
        PQclear(res);
        res = PQexecPrepared(bystander, "sl", 0, NULL, NULL, NULL, 0);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_COMMAND_OK);
        CU_ASSERT_STRING_EQUAL(PQcmdStatus(res), "SLEEP");
        PQclear(res);

        /* Prepared statements survive simple queries; the unnamed one does not. */
        bystander_check();
        res = PQexecPrepared(bystander, "s1", 1, x, NULL, NULL, 0);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_TUPLES_OK);
        PQclear(res);
}

static void test_pipeline(void)
{
        PGresult *res;
        char v[16];

        CU_ASSERT_EQUAL_FATAL(PQenterPipelineMode(bystander), 1);
        for (int i = 0; i < 100; i++) {
                const char *vals[1] = { v };

                snprintf(v, sizeof(v), "%d", i);
                int sent = i % 10 == 5 ?
                        PQsendQueryParams(bystander, "SLEEP 1", 0, NULL, NULL, NULL, NULL, 0) :
                        PQsendQueryParams(bystander, "SELECT $1", 1, NULL, vals, NULL, NULL, 0);

                CU_ASSERT_EQUAL(sent, 1);
        }
        CU_ASSERT_EQUAL(PQpipelineSync(bystander), 1);
        for (int i = 0; i < 100; i++) {
                res = PQgetResult(bystander);
                if (i % 10 == 5) {
                        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_COMMAND_OK);
                } else {
                        snprintf(v, sizeof(v), "%d", i);
                        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_TUPLES_OK);
                        CU_ASSERT_STRING_EQUAL(PQgetvalue(res, 0, 0), v);
                }
                PQclear(res);
                CU_ASSERT_PTR_NULL(PQgetResult(bystander));
        }
        res = PQgetResult(bystander);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_PIPELINE_SYNC);
        PQclear(res);

        /* An error aborts the rest of the pipeline until Sync. */
        CU_ASSERT_EQUAL(PQsendQueryParams(bystander, "SELECT 1", 0, NULL, NULL, NULL, NULL, 0), 1);
        CU_ASSERT_EQUAL(PQsendQueryParams(bystander, "ERR", 0, NULL, NULL, NULL, NULL, 0), 1);
        CU_ASSERT_EQUAL(PQsendQueryParams(bystander, "SELECT 2", 0, NULL, NULL, NULL, NULL, 0), 1);
        CU_ASSERT_EQUAL(PQpipelineSync(bystander), 1);
        CU_ASSERT_EQUAL(PQsendQueryParams(bystander, "SELECT 3", 0, NULL, NULL, NULL, NULL, 0), 1);
        CU_ASSERT_EQUAL(PQpipelineSync(bystander), 1);
        res = PQgetResult(bystander);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_TUPLES_OK);
        PQclear(res);
        CU_ASSERT_PTR_NULL(PQgetResult(bystander));
        res = PQgetResult(bystander);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_FATAL_ERROR);
        CU_ASSERT_STRING_EQUAL(sqlstate_of(res), "42601");
        PQclear(res);
        CU_ASSERT_PTR_NULL(PQgetResult(bystander));
        res = PQgetResult(bystander);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_PIPELINE_ABORTED);
        PQclear(res);
        CU_ASSERT_PTR_NULL(PQgetResult(bystander));
        res = PQgetResult(bystander);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_PIPELINE_SYNC);
        PQclear(res);
        res = PQgetResult(bystander);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_TUPLES_OK);
        CU_ASSERT_EQUAL(PQntuples(res), 3);
        PQclear(res);
        CU_ASSERT_PTR_NULL(PQgetResult(bystander));
        res = PQgetResult(bystander);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_PIPELINE_SYNC);
        PQclear(res);
        CU_ASSERT_EQUAL(PQexitPipelineMode(bystander), 1);
        bystander_check();
}

/* Execute with a row limit, which libpq never sends: PortalSuspended and resume. */
static void test_raw_portal_suspend(void)
{
        struct raw *r = raw_ready(0, NULL, NULL);
        struct pgcodec_buf b;
        struct raw_msg m;
        size_t at;

        pgcodec_buf_init(&b, 0);
        at = pgcodec_msg_begin(&b, 'P');
        pgcodec_put_str(&b, "");
        pgcodec_put_str(&b, "SELECT 5");
        pgcodec_put_i16(&b, 0);
        pgcodec_msg_end(&b, at);
        at = pgcodec_msg_begin(&b, 'B');
        pgcodec_put_str(&b, "cur");
        pgcodec_put_str(&b, "");
        pgcodec_put_i16(&b, 0);
        pgcodec_put_i16(&b, 0);
        pgcodec_put_i16(&b, 0);
        pgcodec_msg_end(&b, at);
        at = pgcodec_msg_begin(&b, 'D');
        pgcodec_put_u8(&b, 'P');
        pgcodec_put_str(&b, "cur");
        pgcodec_msg_end(&b, at);
        for (int i = 0; i < 3; i++) {
                at = pgcodec_msg_begin(&b, 'E');
                pgcodec_put_str(&b, "cur");
                pgcodec_put_i32(&b, i < 2 ? 2 : 0);
                pgcodec_msg_end(&b, at);
        }
        /* A Close of the statement (it lives on in the portal), and Sync. */
        at = pgcodec_msg_begin(&b, 'C');
        pgcodec_put_u8(&b, 'S');
        pgcodec_put_str(&b, "");
        pgcodec_msg_end(&b, at);
        pgcodec_msg_end(&b, pgcodec_msg_begin(&b, 'S'));
        raw_send_buf(r, &b);

        raw_expect(r, '1');
        raw_expect(r, '2');
        raw_expect(r, 'T');
        raw_expect(r, 'D');
        raw_expect(r, 'D');
        raw_expect(r, 's');
        raw_expect(r, 'D');
        raw_expect(r, 'D');
        raw_expect(r, 's');
        m = raw_expect(r, 'D');
        CU_ASSERT_EQUAL(m.body[6], '5');
        m = raw_expect(r, 'C');
        CU_ASSERT_STRING_EQUAL((const char *)m.body, "SELECT 5");
        raw_expect(r, '3');
        raw_expect(r, 'Z');

        /* After Sync at 'I' the portal is gone: 34000, then skip until Sync. */
        at = pgcodec_msg_begin(&b, 'E');
        pgcodec_put_str(&b, "cur");
        pgcodec_put_i32(&b, 0);
        pgcodec_msg_end(&b, at);
        put_query(&b, "SELECT 1");              /* skipped */
        pgcodec_msg_end(&b, pgcodec_msg_begin(&b, 'S'));
        raw_send_buf(r, &b);
        m = raw_expect(r, 'E');
        CU_ASSERT_STRING_EQUAL(raw_field(&m, 'C'), "34000");
        raw_expect(r, 'Z');

        /* Flush pushes output without a Sync. */
        at = pgcodec_msg_begin(&b, 'P');
        pgcodec_put_str(&b, "n");
        pgcodec_put_str(&b, "SELECT 1");
        pgcodec_put_i16(&b, 0);
        pgcodec_msg_end(&b, at);
        pgcodec_msg_end(&b, pgcodec_msg_begin(&b, 'H'));
        raw_send_buf(r, &b);
        raw_expect(r, '1');
        pgcodec_buf_done(&b);
        raw_close(r);
}

static void put_parse(struct pgcodec_buf *b, const char *name, const char *sql, uint32_t type)
{
        size_t m = pgcodec_msg_begin(b, 'P');

        pgcodec_put_str(b, name);
        pgcodec_put_str(b, sql);
        pgcodec_put_i16(b, type ? 1 : 0);
        if (type)
                pgcodec_put_i32(b, (int32_t)type);
        pgcodec_msg_end(b, m);
}

/* Bind with text parameters and one result format code (-1: none). */
static void put_bind(struct pgcodec_buf *b, const char *portal, const char *stmt, unsigned n,
                     const char *const *vals, int rfmt)
{
        size_t m = pgcodec_msg_begin(b, 'B');

        pgcodec_put_str(b, portal);
        pgcodec_put_str(b, stmt);
        pgcodec_put_i16(b, 0);
        pgcodec_put_i16(b, (int16_t)n);
        for (unsigned i = 0; i < n; i++) {
                pgcodec_put_i32(b, (int32_t)strlen(vals[i]));
                pgcodec_put_bytes(b, vals[i], strlen(vals[i]));
        }
        pgcodec_put_i16(b, rfmt >= 0 ? 1 : 0);
        if (rfmt >= 0)
                pgcodec_put_i16(b, (int16_t)rfmt);
        pgcodec_msg_end(b, m);
}

static void put_target(struct pgcodec_buf *b, uint8_t type, char kind, const char *name)
{
        size_t m = pgcodec_msg_begin(b, type);

        pgcodec_put_u8(b, (uint8_t)kind);
        pgcodec_put_str(b, name);
        pgcodec_msg_end(b, m);
}

static void put_sync(struct pgcodec_buf *b)
{
        pgcodec_msg_end(b, pgcodec_msg_begin(b, 'S'));
}

static void raw_expect_error(struct raw *r, const char *sqlstate)
{
        struct raw_msg m = raw_expect(r, 'E');

        CU_ASSERT_STRING_EQUAL(raw_field(&m, 'C'), sqlstate);
        if (strcmp(raw_field(&m, 'C'), sqlstate) != 0)
                fprintf(stderr, "wanted %s: %s\n", sqlstate, raw_field(&m, 'M'));
}

/* The errors the server answers itself, each followed by skip-until-Sync. */
static void test_raw_extended_errors(void)
{
        static const char *const one[] = { "1.5" };
        struct raw *r = raw_ready(0, NULL, NULL);
        struct pgcodec_buf b;
        size_t at;

        pgcodec_buf_init(&b, 0);

        /* A second Bind to a named portal. */
        put_parse(&b, "a", "SELECT 2", 0);
        put_bind(&b, "p", "a", 0, NULL, -1);
        put_bind(&b, "p", "a", 0, NULL, -1);
        put_sync(&b);
        raw_send_buf(r, &b);
        raw_expect(r, '1');
        raw_expect(r, '2');
        raw_expect_error(r, "42P03");
        raw_expect(r, 'Z');

        /* An unknown result format code; binary for a type without one. */
        put_bind(&b, "", "a", 0, NULL, 7);
        put_sync(&b);
        put_parse(&b, "", "SELECT $1", PGCODEC_OID_DATE);
        put_bind(&b, "", "", 1, one, 1);
        put_sync(&b);
        raw_send_buf(r, &b);
        raw_expect_error(r, "22023");
        raw_expect(r, 'Z');
        raw_expect(r, '1');
        raw_expect_error(r, "42883");
        raw_expect(r, 'Z');

        /* Close of a portal; Describe of what does not exist. */
        put_bind(&b, "q", "a", 0, NULL, -1);
        put_target(&b, 'C', 'P', "q");
        put_target(&b, 'C', 'P', "never-was");
        at = pgcodec_msg_begin(&b, 'E');
        pgcodec_put_str(&b, "q");
        pgcodec_put_i32(&b, 0);
        pgcodec_msg_end(&b, at);
        put_sync(&b);
        put_target(&b, 'D', 'P', "q");
        put_sync(&b);
        put_target(&b, 'D', 'S', "zz");
        put_sync(&b);
        raw_send_buf(r, &b);
        raw_expect(r, '2');
        raw_expect(r, '3');
        raw_expect(r, '3');
        raw_expect_error(r, "34000");
        raw_expect(r, 'Z');
        raw_expect_error(r, "34000");
        raw_expect(r, 'Z');
        raw_expect_error(r, "26000");
        raw_expect(r, 'Z');

        /* The named statement survives all that; a simple query drops the unnamed. */
        put_bind(&b, "", "a", 0, NULL, -1);
        at = pgcodec_msg_begin(&b, 'E');
        pgcodec_put_str(&b, "");
        pgcodec_put_i32(&b, 0);
        pgcodec_msg_end(&b, at);
        put_sync(&b);
        put_parse(&b, "", "SELECT 1", 0);
        put_sync(&b);
        put_query(&b, "SELECT 1");
        put_target(&b, 'D', 'S', "");
        put_sync(&b);
        raw_send_buf(r, &b);
        raw_expect(r, '2');
        raw_expect(r, 'D');
        raw_expect(r, 'D');
        raw_expect(r, 'C');
        raw_expect(r, 'Z');
        raw_expect(r, '1');
        raw_expect(r, 'Z');
        raw_expect(r, 'T');
        raw_expect(r, 'D');
        raw_expect(r, 'C');
        raw_expect(r, 'Z');
        raw_expect_error(r, "26000");
        raw_expect(r, 'Z');

        /* FunctionCall is refused; stray CopyData is ignored. */
        at = pgcodec_msg_begin(&b, 'F');
        pgcodec_put_i32(&b, 1234);
        pgcodec_msg_end(&b, at);
        at = pgcodec_msg_begin(&b, 'd');
        pgcodec_put_bytes(&b, "junk", 4);
        pgcodec_msg_end(&b, at);
        put_query(&b, "SELECT 1");
        raw_send_buf(r, &b);
        raw_expect_error(r, PGCODEC_SQLSTATE_FEATURE_NOT_SUPPORTED);
        raw_expect(r, 'Z');
        raw_expect(r, 'T');
        raw_expect(r, 'D');
        raw_expect(r, 'C');
        raw_expect(r, 'Z');

        /* A password message nobody asked for is a protocol violation. */
        at = pgcodec_msg_begin(&b, 'p');
        pgcodec_put_str(&b, "secret");
        pgcodec_msg_end(&b, at);
        raw_send_buf(r, &b);
        raw_expect_violation(r);
        pgcodec_buf_done(&b);
        raw_close(r);
        bystander_check();
}

/* Several simple queries in one write: answered in order. */
static void test_raw_pipelined_simple(void)
{
        struct raw *r = raw_ready(0, NULL, NULL);
        struct pgcodec_buf b;
        struct raw_msg m;

        pgcodec_buf_init(&b, 0);
        put_query(&b, "SLEEP 20");
        put_query(&b, "SELECT 1");
        put_query(&b, "ERR");
        put_query(&b, "SELECT 2");
        pgcodec_msg_end(&b, pgcodec_msg_begin(&b, 'X'));
        raw_send_buf(r, &b);
        raw_expect(r, 'C');
        raw_expect(r, 'Z');
        raw_expect(r, 'T');
        raw_expect(r, 'D');
        raw_expect(r, 'C');
        raw_expect(r, 'Z');
        m = raw_expect(r, 'E');
        CU_ASSERT_STRING_EQUAL(raw_field(&m, 'C'), "42601");
        raw_expect(r, 'Z');
        raw_expect(r, 'T');
        raw_expect(r, 'D');
        raw_expect(r, 'D');
        raw_expect(r, 'C');
        raw_expect(r, 'Z');
        CU_ASSERT_EQUAL(raw_read(r, &m), 0);    /* Terminate: closed */
        pgcodec_buf_done(&b);
        raw_close(r);
}

/* The reply sent by another thread (adapter-pgwire.c note 7): whether all of it, part
 * of it or nothing went out that way, the client gets exactly one CommandComplete and
 * one ReadyForQuery, in order with what is pipelined behind; a refused begin answers
 * the ordinary way. */
static void expect_tag(struct raw *r, const char *tag)
{
        struct raw_msg m = raw_expect(r, 'C');

        CU_ASSERT(m.len > 0 && memchr(m.body, '\0', m.len) && strcmp((const char *)m.body, tag) == 0);
}

static void test_raw_direct_reply(void)
{
        struct raw *r = raw_ready(0, NULL, NULL);
        struct pgcodec_buf b;
        struct raw_msg m;

        pgcodec_buf_init(&b, 0);
        put_query(&b, "DIRECT ALL");
        put_query(&b, "SELECT 1");
        put_query(&b, "DIRECT 3");              /* inside the CommandComplete */
        put_query(&b, "DIRECT 14");             /* inside the ReadyForQuery (12 + 6 bytes) */
        put_query(&b, "DIRECT 0");
        put_query(&b, "DIRECT FAIL");
        put_query(&b, "NOTICE; DIRECT ALL");    /* output queued before it */
        put_query(&b, "DIRECT ALL; SELECT 1");  /* not the last statement */
        put_query(&b, "BEGIN");
        put_query(&b, "DIRECT ALL");            /* in a transaction block */
        put_query(&b, "COMMIT");
        put_query(&b, "DIRECT ALL");
        pgcodec_msg_end(&b, pgcodec_msg_begin(&b, 'X'));
        raw_send_buf(r, &b);
        expect_tag(r, "DIRECT");
        raw_expect(r, 'Z');
        raw_expect(r, 'T');
        raw_expect(r, 'D');
        expect_tag(r, "SELECT 1");
        raw_expect(r, 'Z');
        for (int i = 0; i < 4; i++) {
                expect_tag(r, "DIRECT");
                raw_expect(r, 'Z');
        }
        raw_expect(r, 'N');
        expect_tag(r, "DO");
        expect_tag(r, "DIRECT REFUSED");
        raw_expect(r, 'Z');
        expect_tag(r, "DIRECT REFUSED");
        raw_expect(r, 'T');
        raw_expect(r, 'D');
        expect_tag(r, "SELECT 1");
        raw_expect(r, 'Z');
        expect_tag(r, "BEGIN");
        m = raw_expect(r, 'Z');
        CU_ASSERT(m.len == 1 && m.body[0] == 'T');
        expect_tag(r, "DIRECT REFUSED");
        raw_expect(r, 'Z');
        expect_tag(r, "COMMIT");
        raw_expect(r, 'Z');
        expect_tag(r, "DIRECT");
        m = raw_expect(r, 'Z');
        CU_ASSERT(m.len == 1 && m.body[0] == 'I');
        CU_ASSERT_EQUAL(raw_read(r, &m), 0);    /* Terminate: closed, nothing more */
        pgcodec_buf_done(&b);
        raw_close(r);
        bystander_check();
}

/* --- Tests: garbage ----------------------------------------------------------------- */

static void test_garbage_startup(void)
{
        static const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        uint8_t junk[20000];
        struct raw *r;
        struct fake_stats before = ctl_call(CTL_STATS), after;

        /* HTTP: "GET " is a 1.2 GB startup packet. */
        r = raw_open(0);
        raw_send(r, http, sizeof(http) - 1);
        raw_expect_violation(r);
        raw_close(r);
        bystander_check();

        /* Random bytes, more than the server reads before it decides. */
        for (size_t i = 0; i < sizeof(junk); i++)
                junk[i] = (uint8_t)(i * 2654435761u >> 13);
        r = raw_open(0);
        raw_send(r, junk, sizeof(junk));
        raw_expect_violation(r);
        raw_close(r);
        bystander_check();

        /* A startup length below the minimum. */
        r = raw_open(0);
        raw_send(r, "\0\0\0\x04", 4);
        raw_expect_violation(r);
        raw_close(r);

        after = ctl_call(CTL_STATS);
        CU_ASSERT(after.srv.protocol_errors >= before.srv.protocol_errors + 3);
        bystander_check();
}

static void test_garbage_messages(void)
{
        static const uint8_t unknown[] = { 'z', 0, 0, 0, 4 };
        static const uint8_t huge[] = { 'Q', 0x7f, 0xff, 0xff, 0xff };
        static const uint8_t short_len[] = { 'Q', 0, 0, 0, 2 };
        static const uint8_t no_nul[] = { 'Q', 0, 0, 0, 6, 'A', 'B' };
        static const uint8_t bad_bind[] = { 'B', 0, 0, 0, 12, 0, 0, 0, 0, 0, 1, 0xff, 0xff };
        static const uint8_t sync_body[] = { 'S', 0, 0, 0, 5, 'x' };
        static const uint8_t big_sync[] = { 'S', 0, 0, 0x40, 0 };
        static const struct { const uint8_t *p; size_t n; } cases[] = {
                { unknown, sizeof(unknown) }, { huge, sizeof(huge) },
                { short_len, sizeof(short_len) }, { no_nul, sizeof(no_nul) },
                { bad_bind, sizeof(bad_bind) }, { sync_body, sizeof(sync_body) },
                { big_sync, sizeof(big_sync) },
        };
        struct fake_stats before = ctl_call(CTL_STATS), after;
        uint8_t over[5] = { 'Q' };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct raw *r = raw_ready(0, NULL, NULL);

                raw_send(r, cases[i].p, cases[i].n);
                raw_expect_violation(r);
                raw_close(r);
                bystander_check();
        }

        /* Over the configured max_message (1 MiB here), refused from the header. */
        {
                struct raw *r = raw_ready(0, NULL, NULL);
                uint32_t n = MAX_MESSAGE + 1;

                over[1] = (uint8_t)(n >> 24);
                over[2] = (uint8_t)(n >> 16);
                over[3] = (uint8_t)(n >> 8);
                over[4] = (uint8_t)n;
                raw_send(r, over, sizeof(over));
                raw_expect_violation(r);
                raw_close(r);
        }

        /* Truncated: half a message, then the client vanishes. */
        {
                struct raw *r = raw_ready(0, NULL, NULL);

                raw_send(r, "Q\0\0\0\x20SELE", 9);
                raw_close(r);
        }

        /* A whole message within the limit, but big: fine. */
        {
                struct raw *r = raw_ready(0, NULL, NULL);
                struct pgcodec_buf b;
                char *sql = malloc(MAX_MESSAGE - 64);

                CU_ASSERT_PTR_NOT_NULL_FATAL(sql);
                memset(sql, ' ', MAX_MESSAGE - 65);
                memcpy(sql, "SELECT 1", 8);
                sql[MAX_MESSAGE - 65] = '\0';
                pgcodec_buf_init(&b, 0);
                put_query(&b, sql);
                raw_send_buf(r, &b);
                raw_expect(r, 'T');
                raw_expect(r, 'D');
                raw_expect(r, 'C');
                raw_expect(r, 'Z');
                pgcodec_buf_done(&b);
                free(sql);
                raw_close(r);
        }

        after = ctl_call(CTL_STATS);
        CU_ASSERT(after.srv.protocol_errors >= before.srv.protocol_errors + ELEMENTSOF(cases) + 1);
        bystander_check();
}

/* --- Tests: cancel ------------------------------------------------------------------ */

static void test_cancel(void)
{
        PGconn *conn = t_connect(NULL);
        char err[256];
        PGcancel *cancel;
        PGresult *res;
        uint64_t t0;
        int sleeps;

        CU_ASSERT_EQUAL_FATAL(PQstatus(conn), CONNECTION_OK);
        sleeps = ctl_call(CTL_STATS).sleeps_started;
        CU_ASSERT_EQUAL_FATAL(PQsendQuery(conn, "SLEEP 30000"), 1);
        CU_ASSERT_FATAL(sleep_running(sleeps));
        t0 = now_ms();
        cancel = PQgetCancel(conn);
        CU_ASSERT_EQUAL(PQcancel(cancel, err, sizeof(err)), 1);
        PQfreeCancel(cancel);
        res = PQgetResult(conn);
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_FATAL_ERROR);
        CU_ASSERT_STRING_EQUAL(sqlstate_of(res), "57014");
        PQclear(res);
        CU_ASSERT_PTR_NULL(PQgetResult(conn));
        CU_ASSERT(now_ms() - t0 < 5000);
        t_exec_ok(conn, "SELECT 1", PGRES_TUPLES_OK, 1);

        /* A cancel with the right pid and a wrong key changes nothing. */
        {
                struct pgcodec_buf b;
                struct raw *r = raw_open(0);
                struct raw_msg m;
                size_t at;

                CU_ASSERT_EQUAL_FATAL(PQsendQuery(conn, "SLEEP 200"), 1);
                pgcodec_buf_init(&b, 0);
                at = pgcodec_msg_begin(&b, 0);
                pgcodec_put_i32(&b, (int32_t)PGCODEC_CANCEL_REQUEST_CODE);
                pgcodec_put_i32(&b, PQbackendPID(conn));
                pgcodec_put_i32(&b, 12345);
                pgcodec_msg_end(&b, at);
                raw_send_buf(r, &b);
                CU_ASSERT_EQUAL(raw_read(r, &m), 0);    /* just closed */
                raw_close(r);
                pgcodec_buf_done(&b);
                res = PQgetResult(conn);
                CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_COMMAND_OK);
                CU_ASSERT_STRING_EQUAL(PQcmdStatus(res), "SLEEP");
                PQclear(res);
                CU_ASSERT_PTR_NULL(PQgetResult(conn));
        }

        /* Cancelling an idle connection is harmless. */
        cancel = PQgetCancel(conn);
        CU_ASSERT_EQUAL(PQcancel(cancel, err, sizeof(err)), 1);
        PQfreeCancel(cancel);
        t_exec_ok(conn, "SELECT 2", PGRES_TUPLES_OK, 2);

        /* A client that goes away in the middle of a query: the query runs to its end
         * (as in PostgreSQL), then the connection is closed. */
        sleeps = ctl_call(CTL_STATS).sleeps_started;
        CU_ASSERT_EQUAL_FATAL(PQsendQuery(conn, "SLEEP 300"), 1);
        CU_ASSERT(sleep_running(sleeps));
        PQfinish(conn);
        bystander_check();
}

/* --- Tests: backpressure ------------------------------------------------------------- */

static bool no_big_conns(const struct fake_stats *st)
{
        return st->live_conns <= 1;     /* the bystander */
}

static void test_backpressure(void)
{
        struct fake_stats before = ctl_call(CTL_STATS), after;
        PGresult *res;

        /* 20 MB to a reading client, through an owner that watches its queue. */
        res = t_exec(bystander, "BIG 20000", PGRES_TUPLES_OK, 20000);
        CU_ASSERT_EQUAL(PQgetlength(res, 19999, 0), (int)BIG_ROW);
        PQclear(res);

        /* 5 MB produced at once for a client that does not read: cut at max_output. */
        {
                struct raw *r = raw_ready(4096, NULL, NULL);
                struct pgcodec_buf b;
                struct raw_msg m;
                int k;

                pgcodec_buf_init(&b, 0);
                put_query(&b, "BIGSYNC 5000");
                raw_send_buf(r, &b);
                pgcodec_buf_done(&b);
                /* Unread, it is cut at max_output. */
                CU_ASSERT(t_wait_for(ctl_call(CTL_STATS).srv.overflows > before.srv.overflows, 10000));
                /* Reading now: some rows, then the end without ReadyForQuery. */
                while ((k = raw_read(r, &m)) > 0)
                        CU_ASSERT(k == 'T' || k == 'D');
                CU_ASSERT(k == 0 || k == -ECONNRESET);
                raw_close(r);
        }
        after = ctl_call(CTL_STATS);
        CU_ASSERT_EQUAL(after.srv.overflows, before.srv.overflows + 1);

        /* 2000 pipelined queries from a client that reads late: paused, not cut. */
        {
                struct raw *r = raw_ready(4096, NULL, NULL);
                struct pgcodec_buf b;
                struct raw_msg m;
                int ready = 0, k;

                pgcodec_buf_init(&b, 0);
                for (int i = 0; i < 2000; i++)
                        put_query(&b, "SELECT 100");
                raw_send_buf(r, &b);
                pgcodec_buf_done(&b);
                usleep(200 * 1000);             /* unread: its output backs up */
                bystander_check();              /* the others are served meanwhile */
                while (ready < 2000 && (k = raw_read(r, &m)) > 0)
                        ready += k == 'Z';
                CU_ASSERT_EQUAL(ready, 2000);
                raw_close(r);
        }
        after = ctl_call(CTL_STATS);
        CU_ASSERT_EQUAL(after.srv.overflows, before.srv.overflows + 1);
        ctl_wait(no_big_conns);
        bystander_check();
}

/* --- Tests: concurrency ---------------------------------------------------------------- */

static pthread_barrier_t conc_barrier;
static atomic_int conc_ok, conc_fail;

static void *conc_client(void *arg)
{
        int id = (int)(intptr_t)arg;
        PGconn *conn = id & 1 ? t_connect_unix() : t_connect(NULL);
        bool ok = PQstatus(conn) == CONNECTION_OK;
        char v[16];

        /* Everyone connected at once before anyone queries. */
        pthread_barrier_wait(&conc_barrier);
        for (int i = 0; ok && i < 20; i++) {
                PGresult *res;
                int n = 1 + (id + i) % 5;
                char sql[32];

                snprintf(sql, sizeof(sql), i % 5 == 4 ? "SLEEP 1; SELECT %d" : "SELECT %d", n);
                res = PQexec(conn, sql);
                ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == n;
                PQclear(res);
                if (!ok)
                        break;
                snprintf(v, sizeof(v), "%d-%d", id, i);
                res = PQexecParams(conn, "SELECT $1", 1, NULL, (const char *[]){ v }, NULL, NULL, 0);
                ok = PQresultStatus(res) == PGRES_TUPLES_OK && strcmp(PQgetvalue(res, 0, 0), v) == 0;
                PQclear(res);
        }
        if (!ok)
                fprintf(stderr, "client %d: %s", id, PQerrorMessage(conn));
        atomic_fetch_add(ok ? &conc_ok : &conc_fail, 1);
        PQfinish(conn);
        return NULL;
}

static bool conns_drained(const struct fake_stats *st)
{
        return st->live_conns <= 1;
}

static void test_concurrent_200(void)
{
        pthread_t th[NCONCURRENT];
        pthread_attr_t attr;
        struct fake_stats st;

        atomic_store(&conc_ok, 0);
        atomic_store(&conc_fail, 0);
        CU_ASSERT_EQUAL_FATAL(pthread_barrier_init(&conc_barrier, NULL, NCONCURRENT), 0);
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 512 << 10);
        for (int i = 0; i < NCONCURRENT; i++)
                CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], &attr, conc_client, (void *)(intptr_t)i), 0);
        /* Meanwhile, garbage on another connection disturbs nobody. */
        {
                struct raw *r = raw_ready(0, NULL, NULL);

                raw_send(r, "\xff\xff\xff\xff\xff", 5);
                raw_expect_violation(r);
                raw_close(r);
        }
        for (int i = 0; i < NCONCURRENT; i++)
                pthread_join(th[i], NULL);
        pthread_attr_destroy(&attr);
        pthread_barrier_destroy(&conc_barrier);
        CU_ASSERT_EQUAL(atomic_load(&conc_ok), NCONCURRENT);
        CU_ASSERT_EQUAL(atomic_load(&conc_fail), 0);
        st = ctl_wait(conns_drained);
        CU_ASSERT(st.max_live_conns >= NCONCURRENT + 1);
        bystander_check();
}

/* --- Tests: psql ------------------------------------------------------------------- */

/* Run a shell command; its exit status, and its output (stdout and stderr) in out. */
static int run(const char *cmd, char *out, size_t size)
{
        FILE *p = popen(cmd, "re");
        size_t n = 0;
        int st;

        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        while (n + 1 < size) {
                size_t k = fread(out + n, 1, size - 1 - n, p);
                if (k == 0)
                        break;
                n += k;
        }
        out[n] = '\0';
        st = pclose(p);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void write_file(const char *path, const char *text)
{
        FILE *f = fopen(path, "we");

        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        fputs(text, f);
        fclose(f);
}

static void test_psql(void)
{
        char cmd[1024], out[16384], path[512];
        int st;

        if (!have_psql) {
                fprintf(stderr, "psql not found: skipped\n");
                return;
        }
        /* Default sslmode (prefer): SSLRequest, 'N', then in the clear. */
        snprintf(cmd, sizeof(cmd),
                 "PGCONNECT_TIMEOUT=10 timeout 60 psql -X -h 127.0.0.1 -p %u -U tester -d db -c 'SELECT 1' 2>&1",
                 port);
        st = run(cmd, out, sizeof(out));
        CU_ASSERT_EQUAL(st, 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "(1 row)"));
        if (st != 0)
                fprintf(stderr, "%s\n", out);

        /* Over the Unix socket, and a multi-statement -c. */
        snprintf(cmd, sizeof(cmd),
                 "PGCONNECT_TIMEOUT=10 timeout 60 psql -X -h %s -p %u -U tester -d db -c 'SELECT 2; SELECT 3' 2>&1",
                 tmpdir, UNIX_PORT);
        st = run(cmd, out, sizeof(out));
        CU_ASSERT_EQUAL(st, 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "(3 rows)"));

        /* A script, ON_ERROR_STOP: everything runs. */
        snprintf(path, sizeof(path), "%s/ok.sql", tmpdir);
        write_file(path,
                   "CREATE TABLE t (a bigint NOT NULL, b text);\n"
                   "INSERT INTO t VALUES (1, 'x'), (2, NULL);\n"
                   "SELECT 3;\n"
                   "SET application_name = 'psql-test';\n"
                   "SHOW server_encoding;\n"
                   "SELECT 1; SELECT 2;\n"
                   "-- a comment\n"
                   "DELETE FROM t WHERE a = 1;\n"
                   "DROP TABLE t;\n");
        snprintf(cmd, sizeof(cmd),
                 "PGCONNECT_TIMEOUT=10 timeout 60 psql -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p %u -U tester -d db -f %s 2>&1",
                 port, path);
        st = run(cmd, out, sizeof(out));
        CU_ASSERT_EQUAL(st, 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "CREATE TABLE"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "INSERT 0 1"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "(3 rows)"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "server_encoding"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "DELETE 1"));
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "DROP TABLE"));
        if (st != 0)
                fprintf(stderr, "%s\n", out);

        /* A script that fails half way stops there, with exit status 3. */
        snprintf(path, sizeof(path), "%s/err.sql", tmpdir);
        write_file(path, "SELECT 1;\nERR;\nSHOW never_reached;\n");
        snprintf(cmd, sizeof(cmd),
                 "PGCONNECT_TIMEOUT=10 timeout 60 psql -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p %u -U tester -d db -f %s 2>&1",
                 port, path);
        st = run(cmd, out, sizeof(out));
        CU_ASSERT_EQUAL(st, 3);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "syntax error"));
        CU_ASSERT_PTR_NULL(strstr(out, "never_reached"));
        bystander_check();
}

/* --- Tests: shutdown (last) ------------------------------------------------------------ */

static void test_shutdown(void)
{
        PGconn *idle = t_connect(NULL), *busy = t_connect(NULL);
        struct fake_stats st = ctl_call(CTL_STATS);
        PGresult *res;
        void *rv;

        CU_ASSERT_EQUAL_FATAL(PQstatus(idle), CONNECTION_OK);
        CU_ASSERT_EQUAL_FATAL(PQstatus(busy), CONNECTION_OK);
        CU_ASSERT_EQUAL_FATAL(PQsendQuery(busy, "SLEEP 100"), 1);
        CU_ASSERT(sleep_running(st.sleeps_started));

        st = ctl_call(CTL_SHUTDOWN);
        CU_ASSERT(st.shut_down);
        CU_ASSERT_EQUAL(pthread_join(loop_thread, &rv), 0);
        loop_running = false;
        CU_ASSERT_PTR_NULL(rv);

        /* The busy one was told to go: its query was finished by disconnect(). */
        res = PQgetResult(busy);
        CU_ASSERT_NOT_EQUAL(PQresultStatus(res), PGRES_TUPLES_OK);
        PQclear(res);
        while ((res = PQgetResult(busy)))
                PQclear(res);
        res = PQexec(idle, "SELECT 1");
        CU_ASSERT_EQUAL(PQresultStatus(res), PGRES_FATAL_ERROR);
        CU_ASSERT_PTR_NOT_NULL(strstr(PQerrorMessage(idle), "administrator command"));
        PQclear(res);
        PQfinish(idle);
        PQfinish(busy);
        PQfinish(bystander);
        bystander = NULL;

        /* Every connection ended with disconnect(), every statement was released. */
        CU_ASSERT_EQUAL(st.srv.active, 0);
        CU_ASSERT_EQUAL(st.live_conns, 0);
        CU_ASSERT_EQUAL(st.live_stmts, 0);
        CU_ASSERT_EQUAL(st.connects, st.disconnects);
        CU_ASSERT(st.cancels_seen >= 2);
        CU_ASSERT(st.disconnect_proto >= 10);
        fprintf(stderr, "stats: accepted %llu refused %llu protocol_errors %llu overflows %llu "
                "cancels %llu connects %d max_live %d\n",
                (unsigned long long)st.srv.accepted, (unsigned long long)st.srv.refused,
                (unsigned long long)st.srv.protocol_errors, (unsigned long long)st.srv.overflows,
                (unsigned long long)st.srv.cancels, st.connects, st.max_live_conns);
}

/* --- Main -------------------------------------------------------------------------- */

static int setup(void)
{
        struct pgwire_config cfg;
        char path[512];
        int r;

        r = loop_new(1024, &L);
        if (r == -ENOSYS || r == -EPERM || r == -ENOTSUP)
                return T_EXIT_SKIP;
        if (r < 0)
                return T_EXIT_ERROR;
        tmpdir = t_mkdtemp("pgwire");
        if (!tmpdir)
                return T_EXIT_ERROR;
        snprintf(path, sizeof(path), "%s/.s.PGSQL.%u", tmpdir, UNIX_PORT);

        pgwire_config_init(&cfg);
        cfg.port = 0;
        cfg.unix_path = path;
        cfg.max_message = MAX_MESSAGE;
        cfg.max_output = MAX_OUTPUT;
        cfg.close_timeout_ms = 1000;    /* idle clients told to go at shutdown never close */
        r = pgwire_server_new(L, &cfg, &fake_callbacks, NULL, &S);
        if (r < 0) {
                fprintf(stderr, "pgwire_server_new: %s\n", strerror(-r));
                return T_EXIT_ERROR;
        }
        port = pgwire_server_port(S);
        if (loop_waker_new(L, ctl_fire, NULL, &ctl) < 0)
                return T_EXIT_ERROR;
        if (pthread_create(&loop_thread, NULL, loop_main, NULL) != 0)
                return T_EXIT_ERROR;
        loop_running = true;

        bystander = t_connect(NULL);
        if (PQstatus(bystander) != CONNECTION_OK)
                return T_EXIT_ERROR;
        have_psql = system("psql --version >/dev/null 2>&1") == 0;
        return 0;
}

static void teardown(void)
{
        if (loop_running) {
                /* A fatal assertion left the server up: stop it the same way. */
                if (S)
                        ctl_call(CTL_SHUTDOWN);
                pthread_join(loop_thread, NULL);
                loop_running = false;
        }
        PQfinish(bystander);
        S = pgwire_server_free(S);
        if (L && ctl)
                ctl = loop_waker_free(L, ctl);
        L = loop_free(L);
        t_rmrf(tmpdir);
        free(tmpdir);
}

int main(void)
{
        static const struct t_case connect_cases[] = {
                { "tcp", test_connect_tcp },
                { "unix", test_connect_unix },
                { "ssl", test_connect_ssl },
                { "raw_negotiation", test_connect_raw_negotiation },
                { "rejected", test_connect_rejected },
                { "max_connections", test_max_connections },
                { "abrupt_free", test_abrupt_free },
                { NULL, NULL },
        };
        static const struct t_case simple_cases[] = {
                { "select", test_simple_select },
                { "commands", test_simple_commands },
                { "multi_statement", test_simple_multi_statement },
                { "errors", test_simple_errors },
                { "fatal", test_simple_fatal },
                { "raw_pipelined", test_raw_pipelined_simple },
                { "raw_direct_reply", test_raw_direct_reply },
                { NULL, NULL },
        };
        static const struct t_case extended_cases[] = {
                { "exec_params_text", test_exec_params_text },
                { "exec_params_binary", test_exec_params_binary },
                { "prepared", test_prepared },
                { "pipeline", test_pipeline },
                { "raw_portal_suspend", test_raw_portal_suspend },
                { "raw_errors", test_raw_extended_errors },
                { NULL, NULL },
        };
        static const struct t_case robust_cases[] = {
                { "garbage_startup", test_garbage_startup },
                { "garbage_messages", test_garbage_messages },
                { "cancel", test_cancel },
                { "backpressure", test_backpressure },
                { "concurrent_200", test_concurrent_200 },
                { NULL, NULL },
        };
        static const struct t_case psql_cases[] = {
                { "psql", test_psql },
                { NULL, NULL },
        };
        static const struct t_case shutdown_cases[] = {
                { "shutdown", test_shutdown },
                { NULL, NULL },
        };
        static const struct t_suite suites[] = {
                { "pgwire_connect", connect_cases },
                { "pgwire_simple", simple_cases },
                { "pgwire_extended", extended_cases },
                { "pgwire_robust", robust_cases },
                { "pgwire_psql", psql_cases },
                { "pgwire_shutdown", shutdown_cases },
                { NULL, NULL },
        };
        int r;

        signal(SIGPIPE, SIG_IGN);
        alarm(170);     /* a hang fails the test instead of waiting for meson's timeout */
        r = setup();
        if (r != 0) {
                if (r == T_EXIT_SKIP)
                        fprintf(stderr, "io_uring unavailable: skipped\n");
                teardown();
                return r;
        }
        r = t_run(suites);
        teardown();
        return r;
}
