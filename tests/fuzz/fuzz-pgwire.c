/* fuzz-pgwire -- the adapter's PostgreSQL wire server (adapter/adapter-pgwire.c, with
 * adapter-pgcodec.c under it) on an untrusted byte stream, as a client sends it.
 *
 * Set-up, once: a loop and a server on a Unix socket in a temporary directory, with a
 * small synchronous fake executor standing in for the adapter's (the one of
 * tests/pgwire/test-pgwire.c, cut down):
 *   SELECT n      n rows (n <= 100) of one int4 column
 *   SELECT $1...  in an execute(): one row echoing the parameters, typed as bound
 *   TYPES         one row of int2, int4, int8, bool, float8, text, bytea, NULL
 *   ERR / FATAL / NOTICE    an error / a FATAL error / a notice, then "NOTICE"
 *   BEGIN, COMMIT, FAIL     transaction status T, I, E
 *   DIRECT n      the answer of "another thread" (pgwire_direct_begin(), n bytes of it
 *                 sent by send(2), pgwire_direct_end()), as the adapter's committers do
 *   else          a command tag
 *
 * One input is one connection.  Byte 0: bit 0 set, the harness sends a valid startup
 * packet (user "fuzz") first, so that the fuzzer starts in the message phase; the rest
 * of the input is written to the socket as it is, then the client shuts its side down
 * and reads everything until the server closes the connection.
 *
 * What must hold: no crash, leak, UB or hang; the callbacks' contract (one request at a
 * time, pgwire_done() once per request, bound parameters NUL-terminated at their
 * length, every statement released by stmt_free(), disconnect() once per accepted
 * connection); and after each input no connection is left.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "adapter-pgwire.h"
#include "fuzz.h"
#include "loop/loop.h"
#include "pgwire-fake.h"
#include "util.h"

#define MAX_INPUT       (128u << 10)    /* what a socket buffer takes without a reader */

static struct loop *L;
static struct pgwire_server *S;
static char *dir, *sock_path;

/* Per input. */
static struct {
        int connects, disconnects, live_stmts;
        bool in_request;
        bool client_eof;
        int fd;                         /* the client's end */
        struct loop_io io;
        uint8_t buf[16384];
} T;

static const struct pgcodec_column col_int4 = { .name = "n", .type = PGCODEC_OID_INT4, .typmod = -1 };

static void maybe_stop(void)
{
        if (T.client_eof && T.connects == T.disconnects)
                loop_stop(L);
}

/* The highest $n in sql (0..99; more is an error). */
static unsigned count_params(const char *sql)
{
        unsigned max = 0;

        for (const char *p = strchr(sql, '$'); p; p = strchr(p + 1, '$')) {
                unsigned n = 0;

                for (int i = 0; i < 3 && isdigit((unsigned char)p[1 + i]); i++)
                        n = n * 10 + (unsigned)(p[1 + i] - '0');
                if (n > max)
                        max = n;
        }
        return max;
}

/* One statement: 0 done, -1 failed (the rest of the string is skipped). */
static int run_statement(struct pgwire_conn *c, const char *stmt, unsigned nparams,
                         const struct pgwire_param *params)
{
        char tag[64];
        size_t i;

        if (word_is(stmt, "SELECT") && stmt[6] && isdigit((unsigned char)stmt[7])) {
                long n = strtol(stmt + 7, NULL, 10) % 101;

                return fake_send_count(c, &col_int4, n);
        }
        if (word_is(stmt, "SELECT") && params) {
                struct pgcodec_column cols[16];
                const char *v[16];
                size_t len[16];
                unsigned k = nparams < 16 ? nparams : 16;

                for (unsigned j = 0; j < k; j++) {
                        cols[j] = (struct pgcodec_column){
                                .name = "p", .type = params[j].type ? params[j].type : PGCODEC_OID_TEXT,
                                .typmod = -1 };
                        v[j] = params[j].value;
                        len[j] = params[j].len;
                }
                (void)pgwire_send_row_description(c, k, cols);
                if (pgwire_send_data_row(c, k, v, len) < 0)
                        return -1;
                return pgwire_send_command_complete(c, "SELECT 1") < 0 ? -1 : 0;
        }
        if (word_is(stmt, "TYPES"))
                return fake_send_types(c);
        if (word_is(stmt, "ERR") || word_is(stmt, "FATAL")) {
                (void)pgwire_send_error(c, &(struct pgcodec_error){
                        .severity = word_is(stmt, "FATAL") ? "FATAL" : NULL,
                        .sqlstate = PGCODEC_SQLSTATE_SYNTAX_ERROR, .message = stmt, .position = 1 });
                return -1;
        }
        if (word_is(stmt, "NOTICE"))
                (void)pgwire_send_notice(c, &(struct pgcodec_error){ .message = stmt, .hint = "h" });
        if (word_is(stmt, "BEGIN"))
                pgwire_set_transaction_status(c, 'T');
        if (word_is(stmt, "COMMIT"))
                pgwire_set_transaction_status(c, 'I');
        if (word_is(stmt, "FAIL"))
                pgwire_set_transaction_status(c, 'E');
        for (i = 0; stmt[i] && !isspace((unsigned char)stmt[i]) && i < sizeof(tag) - 1; i++)
                tag[i] = (char)toupper((unsigned char)stmt[i]);
        tag[i] = '\0';
        return pgwire_send_command_complete(c, tag) < 0 ? -1 : 0;
}

/* DIRECT n as the last statement of a simple query: answered as a committer thread
 * answers (adapter-commit.c), here inline.  1 when it took the request's end over. */
static int run_direct(struct pgwire_conn *c, const char *stmt)
{
        struct pgwire_direct d;
        long n = strtol(stmt + 6, NULL, 10);
        ssize_t sent = 0;

        if (pgwire_direct_begin(c, "DIRECT", &d) < 0)
                return 0;
        FUZZ_CHECK(d.fd >= 0 && d.len <= sizeof(d.bytes));
        if (n > 0) {
                size_t k = (unsigned long)n < d.len ? (size_t)n : d.len;

                sent = send(d.fd, d.bytes, k, MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        pgwire_direct_end(c, &d, sent);
        (void)pgwire_send_command_complete(c, "DIRECT");
        return 1;
}

static void request_begin(void)
{
        FUZZ_CHECK(!T.in_request);      /* one request at a time */
        T.in_request = true;
}

static void request_done(struct pgwire_conn *c)
{
        FUZZ_CHECK(T.in_request);
        T.in_request = false;
        pgwire_done(c);
}

static void on_query(struct pgwire_conn *c, const char *sql, void *userdata)
{
        char *copy = strdup(sql), *save = NULL;
        bool ran = false;

        FUZZ_CHECK(copy);
        request_begin();
        for (char *stmt = strtok_r(copy, ";", &save); stmt; stmt = strtok_r(NULL, ";", &save)) {
                while (isspace((unsigned char)*stmt))
                        stmt++;
                if (!*stmt)
                        continue;
                ran = true;
                if (word_is(stmt, "DIRECT") && !strtok_r(NULL, ";", &save)) {
                        if (run_direct(c, stmt) || pgwire_send_command_complete(c, "DIRECT REFUSED") == 0)
                                break;
                        break;
                }
                if (run_statement(c, stmt, 0, NULL) < 0)
                        break;
        }
        if (!ran)
                (void)pgwire_send_empty_query(c);
        free(copy);
        request_done(c);
}

static void on_prepare(struct pgwire_conn *c, const char *sql, unsigned ntypes,
                       const uint32_t *types, void *userdata)
{
        struct pgwire_statement_desc d = { 0 };
        struct pgcodec_column cols[16];
        uint32_t ptypes[100];
        char *copy;

        request_begin();
        d.nparams = count_params(sql);
        if (word_is(sql, "ERR") || d.nparams > 99) {
                (void)pgwire_send_error(c, &(struct pgcodec_error){
                        .sqlstate = PGCODEC_SQLSTATE_SYNTAX_ERROR, .message = "no" });
                request_done(c);
                return;
        }
        for (unsigned i = 0; i < d.nparams; i++)
                ptypes[i] = i < ntypes ? types[i] : 0;
        d.param_types = ptypes;
        if (word_is(sql, "SELECT") && sql[6] && isdigit((unsigned char)sql[7])) {
                d.returns_rows = true;
                d.ncolumns = 1;
                d.columns = &col_int4;
        } else if (word_is(sql, "SELECT")) {
                d.returns_rows = true;
                d.ncolumns = d.nparams < 16 ? d.nparams : 16;
                for (unsigned i = 0; i < d.ncolumns; i++)
                        cols[i] = (struct pgcodec_column){
                                .name = "p", .type = ptypes[i] ? ptypes[i] : PGCODEC_OID_TEXT,
                                .typmod = -1 };
                d.columns = cols;
        } else if (word_is(sql, "TYPES")) {
                d.returns_rows = true;
                d.ncolumns = ELEMENTSOF(cols_types);
                d.columns = cols_types;
        }
        copy = strdup(sql);
        FUZZ_CHECK(copy);
        d.stmt = copy;
        T.live_stmts++;
        (void)pgwire_describe_statement(c, &d);
        request_done(c);
}

static void on_execute(struct pgwire_conn *c, void *stmt, unsigned nparams,
                       const struct pgwire_param *params, void *userdata)
{
        request_begin();
        for (unsigned i = 0; i < nparams; i++)
                FUZZ_CHECK(!params[i].value || params[i].value[params[i].len] == '\0');
        (void)run_statement(c, stmt, nparams, params);
        request_done(c);
}

static void on_stmt_free(void *stmt, void *userdata)
{
        FUZZ_CHECK(T.live_stmts > 0);
        T.live_stmts--;
        free(stmt);
}

static int on_connect(struct pgwire_conn *c, void *userdata)
{
        const char *user = pgwire_conn_param(c, "user");

        FUZZ_CHECK(user);
        if (strcmp(user, "reject") == 0) {
                (void)pgwire_send_error(c, &(struct pgcodec_error){
                        .severity = "FATAL", .sqlstate = PGCODEC_SQLSTATE_INVALID_AUTHORIZATION,
                        .message = "no" });
                return -EPERM;
        }
        T.connects++;
        return 0;
}

static void on_disconnect(struct pgwire_conn *c, int reason, void *userdata)
{
        T.disconnects++;
        FUZZ_CHECK(T.disconnects <= T.connects);
        /* A request of this synchronous executor never outlives its callback. */
        FUZZ_CHECK(!T.in_request);
        maybe_stop();
}

static const struct pgwire_callbacks callbacks = {
        .connect = on_connect, .disconnect = on_disconnect, .query = on_query,
        .prepare = on_prepare, .execute = on_execute, .stmt_free = on_stmt_free,
};

static void client_recv_done(struct loop *l, struct loop_io *io, int res)
{
        if (res > 0) {
                FUZZ_CHECK(loop_recv(L, &T.io, T.fd, T.buf, sizeof(T.buf)) == 0);
                return;
        }
        T.client_eof = true;            /* the server closed the connection */
        maybe_stop();
}

static void cleanup(void)
{
        if (L) {
                S = pgwire_server_free(S);
                loop_run_for(L, 200 * 1000 * 1000);
                L = loop_free(L);
        }
        if (sock_path)
                unlink(sock_path);
        if (dir)
                rmdir(dir);
        free(sock_path);
        free(dir);
}

static bool setup(void)
{
        static bool done, ok;
        char tmpl[] = "/tmp/coord-fuzz-pgwire.XXXXXX";
        struct pgwire_config cfg;

        if (done)
                return ok;
        done = true;
        if (loop_new(256, &L) < 0)
                return false;   /* no io_uring here: nothing to test */
        FUZZ_CHECK(mkdtemp(tmpl));
        dir = strdup(tmpl);
        FUZZ_CHECK(dir && asprintf(&sock_path, "%s/.s.PGSQL.1", dir) > 0);
        pgwire_config_init(&cfg);
        cfg.host = NULL;
        cfg.unix_path = sock_path;
        cfg.max_message = 1u << 20;
        cfg.max_output = 1u << 20;
        cfg.close_timeout_ms = 1000;
        FUZZ_CHECK(pgwire_server_new(L, &cfg, &callbacks, NULL, &S) == 0);
        atexit(cleanup);
        ok = true;
        return ok;
}

static void put_startup(int fd)
{
        static const char params[] = "user\0fuzz\0database\0fuzz\0application_name\0fuzz\0";
        uint8_t pkt[8 + sizeof(params)];
        uint32_t len = sizeof(pkt), proto = 3u << 16;

        pkt[0] = (uint8_t)(len >> 24); pkt[1] = (uint8_t)(len >> 16);
        pkt[2] = (uint8_t)(len >> 8);  pkt[3] = (uint8_t)len;
        pkt[4] = (uint8_t)(proto >> 24); pkt[5] = (uint8_t)(proto >> 16);
        pkt[6] = (uint8_t)(proto >> 8);  pkt[7] = (uint8_t)proto;
        memcpy(pkt + 8, params, sizeof(params));
        FUZZ_CHECK(send(fd, pkt, sizeof(pkt), MSG_NOSIGNAL) == (ssize_t)sizeof(pkt));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct pgwire_stats st;

        if (size == 0 || size > MAX_INPUT || !setup())
                return 0;
        T.connects = T.disconnects = 0;
        T.client_eof = false;
        T.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        FUZZ_CHECK(T.fd >= 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
        FUZZ_CHECK(connect(T.fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
        if (data[0] & 1)
                put_startup(T.fd);
        for (size_t off = 1; off < size;) {
                ssize_t n = send(T.fd, data + off, size - off, MSG_NOSIGNAL);

                if (n < 0)
                        break;          /* the server already closed on a bad message */
                off += (size_t)n;
        }
        (void)shutdown(T.fd, SHUT_WR);
        T.io.complete = client_recv_done;
        FUZZ_CHECK(loop_recv(L, &T.io, T.fd, T.buf, sizeof(T.buf)) == 0);
        FUZZ_CHECK(loop_run_for(L, 20ull * 1000 * 1000 * 1000) == 0);
        /* Not stopped by the timeout: the server closed the connection... */
        FUZZ_CHECK(T.client_eof && T.connects == T.disconnects);
        FUZZ_CHECK(T.live_stmts == 0);
        /* ...and forgets it once its operations in flight are reaped. */
        for (int i = 0; i < 1000; i++) {
                pgwire_server_stats(S, &st);
                if (st.active == 0)
                        break;
                FUZZ_CHECK(loop_run_for(L, 1000 * 1000) == 0);
        }
        FUZZ_CHECK(st.active == 0);
        close(T.fd);
        return 0;
}
