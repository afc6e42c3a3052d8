/* test-controller -- a REAL coord-controller process (fork/exec of the built binary, own
 * data and run directories, own instance) driven through its socket as the adapter
 * would: ensure, append, peek, drop and list, with the exact contents checked at
 * several timestamps.
 *
 * The cases run on one controller (restarted by the kill -9 cases), so they share one
 * logical clock: g_ts only moves forward, because every append advances the tables'
 * shared frontier (the upper of coord_objects, gid 1), and with it the upper of every
 * table.  Each case makes the tables it uses, gids no other case uses (table_with()),
 * and leaves coord_objects empty, so it passes alone (T_CASES) and in any order
 * (T_REVERSE): issue 32.  start and stop are fixtures (T_RUN_FIXTURES).
 *
 *   round trip        inserts at several timestamps; AS OF each returns exactly the
 *                     contents at that time; Ok counts and upper;
 *   delete            a delete_filter retracts exactly the matching rows, the count
 *                     is returned, earlier timestamps still show them;
 *   below since       55000 naming both numbers; built-ins compacted only as permitted;
 *   waiting peeks     a peek at ts >= upper is parked, later requests on the same
 *                     connection are served, and the next append answers it; with no
 *                     append it times out with 57014;
 *   peek holds        a streamed peek waiting for its next chunk keeps its input's since
 *                     at its ts against a permission past it; its end releases it
 *   frontiers         coord_frontiers (gid 2) holds each table's stored (since, upper)
 *                     and the row (0, 0, T) of the shared frontier; a table's upper is
 *                     max of the two, as ListCollections reports it;
 *   shared frontier   an append writes only the built-ins and the tables it names (the
 *                     status counts them); an unwritten table's upper follows T, its
 *                     contents between its stored upper and T are those at the last
 *                     write; peeks parked on it wake when T passes; a table born above
 *                     T holds appends back; coord_objects cannot be dropped;
 *   bad requests      unknown collection (42P01), ts below an upper, malformed row,
 *                     garbage payload, bad plan, division by zero: an error reply,
 *                     nothing written, and the connection keeps working;
 *   kill -9           every acknowledged append survives (I7), uppers do not regress
 *                     (I1) -- T comes back, and unwritten tables' uppers with it --,
 *                     coord_frontiers continues without duplicate rows;
 *   ring              a fring reader sees the uppers the appends acknowledged: stored
 *                     uppers, a table's being max(its own, gid 1's);
 *   drop / complete   dropped tables are gone, `complete` drops unlisted tables only.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "ring/fring.h"
#include "ipc/ipc.h"
#include "node/node.h"
#include "row/row.h"
#include "t.h"
#include "util.h"

#define T0 UINT64_C(1700000000000)
#define TIMEOUT_MS 10000     /* replies; longer than any parked peek's timeout */
#define GID_OBJECTS 1u
#define GID_FRONTIERS 2u

static char *build_dir, *home, *data_dir, *run_dir, *log_path, *sock_path, *hold_path, *fail_path;
static const char *g_append_sync = "thread";    /* --append-sync of the next start */
static char instance[64], ring_name[128];
static pid_t ctl_pid = -1;
static uint64_t g_inc = 1, g_rid = 1, g_ts = T0;
static int g_fd = -1;

/* ---- The process ---------------------------------------------------------------- */

static bool controller_ready(void)
{
        Coord__StatusReply *s = NULL;
        bool ok = node_query_status(run_dir, COORD__ROLE__ROLE_CONTROLLER, 500, &s) == 0 && s->ready;

        if (s)
                coord__status_reply__free_unpacked(s, NULL);
        return ok;
}

static int controller_start(void)
{
        char *bin = NULL;
        uint64_t start = now_ms();
        int status;

        if (asprintf(&bin, "%s/controller/coord-controller", build_dir) < 0)
                return -ENOMEM;
        ctl_pid = fork();
        if (ctl_pid < 0) {
                free(bin);
                return -errno;
        }
        if (ctl_pid == 0) {
                int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

                /* Never outlive a test that crashed or was killed. */
                (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() == 1)
                        _exit(127);

                if (fd >= 0)
                        dup2(fd, STDERR_FILENO);
                execl(bin, bin, "--data-dir", data_dir, "--run-dir", run_dir, "--instance", instance,
                      "--log-level", "debug", "--append-sync", g_append_sync,
                      "--test-sync-hold-file", hold_path, "--test-allow-slice", "2",
                      "--test-frontier-rows", "256", (char *)NULL);
                _exit(127);
        }
        free(bin);
        while (now_ms() - start < 10000) {
                if (waitpid(ctl_pid, &status, WNOHANG) == ctl_pid) {
                        ctl_pid = -1;
                        return -ECHILD;
                }
                if (controller_ready())
                        return 0;
                usleep(5000);
        }
        return -ETIMEDOUT;
}

/* After a kill -9 the dead controller's listening socket can accept connections for a
 * moment after waitpid() (its io_uring is torn down asynchronously, and a pending
 * accept keeps the socket alive); a new controller started then finds the socket
 * "live" and exits with listen_failed EADDRINUSE.  Wait until it refuses. */
static void socket_wait_dead(void)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        uint64_t start = now_ms();

        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
        while (now_ms() - start < 5000) {
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                bool dead = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
                            (errno == ECONNREFUSED || errno == ENOENT);

                if (fd >= 0)
                        close(fd);
                if (dead)
                        return;
                usleep(5000);
        }
}

/* Stop with sig; the exit status (or 128 + signal). */
static int controller_stop(int sig)
{
        int status = 0;

        if (ctl_pid <= 0)
                return -1;
        kill(ctl_pid, sig);
        waitpid(ctl_pid, &status, 0);
        ctl_pid = -1;
        if (sig == SIGKILL)
                socket_wait_dead();
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- The connection, as the adapter ----------------------------------------------- */

static int conn_open(void)
{
        Coord__Hello hello = COORD__HELLO__INIT;
        Coord__Envelope env = COORD__ENVELOPE__INIT, *reply = NULL;
        uint8_t buf[128];
        int fd, r;

        fd = ipc_sync_connect(sock_path);
        if (fd < 0)
                return fd;
        /* A new incarnation per connection: the node fences older ones. */
        g_inc++;
        hello.role = COORD__ROLE__ROLE_ADAPTER;
        hello.incarnation = g_inc;
        hello.pid = getpid();
        hello.instance = instance;
        env.type = COORD__MSG_TYPE__MSG_HELLO;
        env.sender = COORD__ROLE__ROLE_ADAPTER;
        env.incarnation = g_inc;
        env.payload.len = coord__hello__pack(&hello, buf);
        env.payload.data = buf;
        r = ipc_sync_send(fd, &env, IPC_MAX_FRAME_DEFAULT);
        if (r >= 0)
                r = ipc_sync_recv(fd, IPC_MAX_FRAME_DEFAULT, TIMEOUT_MS, &reply);
        if (r >= 0 && reply->type != COORD__MSG_TYPE__MSG_HELLO)
                r = -EPROTO;
        if (reply)
                coord__envelope__free_unpacked(reply, NULL);
        if (r < 0) {
                close(fd);
                return r;
        }
        return fd;
}

static uint64_t send_raw(int fd, Coord__MsgType type, const void *payload, size_t len)
{
        Coord__Envelope env = COORD__ENVELOPE__INIT;

        env.type = type;
        env.sender = COORD__ROLE__ROLE_ADAPTER;
        env.incarnation = g_inc;
        env.request_id = ++g_rid;
        env.payload.data = (uint8_t *)payload;
        env.payload.len = len;
        CU_ASSERT_EQUAL_FATAL(ipc_sync_send(fd, &env, IPC_MAX_FRAME_DEFAULT), 0);
        return env.request_id;
}

static uint64_t send_msg(int fd, Coord__MsgType type, const ProtobufCMessage *m)
{
        size_t len = protobuf_c_message_get_packed_size(m);
        uint8_t *buf = malloc(len ? len : 1);
        uint64_t rid;

        CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
        protobuf_c_message_pack(m, buf);
        rid = send_raw(fd, type, buf, len);
        free(buf);
        return rid;
}

/* Replies that arrived for another request than the one waited for. */
static Coord__Envelope *stash[16];

static Coord__Envelope *recv_for(int fd, uint64_t rid, int timeout_ms)
{
        Coord__Envelope *env = NULL;

        for (size_t i = 0; i < ELEMENTSOF(stash); i++)
                if (stash[i] && stash[i]->request_id == rid)
                        return TAKE_PTR(stash[i]);
        for (;;) {
                size_t i;

                if (ipc_sync_recv(fd, IPC_MAX_FRAME_DEFAULT, timeout_ms, &env) < 0)
                        return NULL;
                if (env->request_id == rid)
                        return env;
                for (i = 0; i < ELEMENTSOF(stash) && stash[i]; i++)
                        ;
                CU_ASSERT_FATAL(i < ELEMENTSOF(stash));
                stash[i] = env;
        }
}

static Coord__Envelope *request(int fd, Coord__MsgType type, const ProtobufCMessage *m)
{
        Coord__Envelope *env = recv_for(fd, send_msg(fd, type, m), TIMEOUT_MS);

        CU_ASSERT_PTR_NOT_NULL_FATAL(env);
        return env;
}

/* The SQLSTATE of an Error reply, "" for anything else; message into msg. */
static const char *error_of(const Coord__Envelope *env, char *msg, size_t size)
{
        static char state[8];
        Coord__Error *e;

        state[0] = 0;
        if (msg)
                msg[0] = 0;
        if (env->type != COORD__MSG_TYPE__MSG_ERROR)
                return state;
        e = coord__error__unpack(NULL, env->payload.len, env->payload.data);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        snprintf(state, sizeof(state), "%s", e->sqlstate);
        if (msg)
                snprintf(msg, size, "%s | %s", e->message, e->detail);
        coord__error__free_unpacked(e, NULL);
        return state;
}

static void expect_ok(Coord__Envelope *env)
{
        char msg[1200];

        if (!env) {
                CU_FAIL("no reply");
                return;
        }

        if (env->type != COORD__MSG_TYPE__MSG_OK) {
                const char *st = error_of(env, msg, sizeof(msg));
                fprintf(stderr, "\n  expected Ok, got type %d %s %s\n", (int)env->type, st, msg);
        }
        CU_ASSERT_EQUAL(env->type, COORD__MSG_TYPE__MSG_OK);
        coord__envelope__free_unpacked(env, NULL);
}

/* Expect an Error with this SQLSTATE whose message contains `needle` (if given). */
static void expect_error(Coord__Envelope *env, const char *sqlstate, const char *needle)
{
        char msg[1200];
        const char *st;

        if (!env) {
                CU_FAIL("no reply");
                return;
        }
        st = error_of(env, msg, sizeof(msg));

        if (strcmp(st, sqlstate) != 0 || (needle && !strstr(msg, needle)))
                fprintf(stderr, "\n  expected %s \"%s\", got type %d %s \"%s\"\n", sqlstate,
                        needle ? needle : "", (int)env->type, st, msg);
        CU_ASSERT_STRING_EQUAL(st, sqlstate);
        if (needle)
                CU_ASSERT_PTR_NOT_NULL(strstr(msg, needle));
        coord__envelope__free_unpacked(env, NULL);
}

/* ---- Requests --------------------------------------------------------------------- */

static void ensure(int fd, const uint64_t *gids, const int *kinds, size_t n, uint64_t since,
                   bool complete)
{
        Coord__EnsureCollections m = COORD__ENSURE_COLLECTIONS__INIT;
        Coord__CollectionSpec specs[16], *ptrs[16];

        CU_ASSERT_FATAL(n <= 16);
        for (size_t i = 0; i < n; i++) {
                coord__collection_spec__init(&specs[i]);
                specs[i].gid = gids[i];
                specs[i].kind = (Coord__CollectionKind)kinds[i];
                specs[i].since = since;
                ptrs[i] = &specs[i];
        }
        m.collections = ptrs;
        m.n_collections = n;
        m.complete = complete;
        expect_ok(request(fd, COORD__MSG_TYPE__MSG_ENSURE_COLLECTIONS, &m.base));
}

static void ensure_tables(int fd, uint64_t since, size_t n, ...)
{
        uint64_t gids[16];
        int kinds[16];
        va_list ap;

        va_start(ap, n);
        for (size_t i = 0; i < n; i++) {
                gids[i] = va_arg(ap, uint64_t);
                kinds[i] = COORD__COLLECTION_KIND__COLLECTION_TABLE;
        }
        va_end(ap);
        ensure(fd, gids, kinds, n, since, false);
}

/* A (id int8, name text) row, malloc'ed. */
static ProtobufCBinaryData row2(int64_t id, const char *name)
{
        struct row_datum d[2] = { ROW_DATUM_INT(id), ROW_DATUM_TEXT(name, (uint32_t)strlen(name)) };
        ProtobufCBinaryData b = { 0, NULL };

        CU_ASSERT_EQUAL_FATAL(row_encode(d, 2, &b.data, &b.len), 0);
        return b;
}

/* Send an Append of rows "id:name" to gid at ts without waiting; its request id. */
static uint64_t append_send(int fd, uint64_t ts, uint64_t gid, const char *rows)
{
        Coord__Append m = COORD__APPEND__INIT;
        Coord__TableWrite w = COORD__TABLE_WRITE__INIT, *wp = &w;
        ProtobufCBinaryData data[32];
        char *copy = strdup(rows), *save = NULL;
        uint64_t rid;

        CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *colon = strchr(tok, ':');

                CU_ASSERT_FATAL(colon && w.n_rows < ELEMENTSOF(data));
                *colon = 0;
                data[w.n_rows++] = row2(strtoll(tok, NULL, 10), colon + 1);
        }
        w.gid = gid;
        w.rows = data;
        m.ts = ts;
        if (gid) {
                m.writes = &wp;
                m.n_writes = 1;
        }
        rid = send_msg(fd, COORD__MSG_TYPE__MSG_APPEND, &m.base);
        for (size_t i = 0; i < w.n_rows; i++)
                free(data[i].data);
        free(copy);
        return rid;
}

/* Append rows "id:name" (comma separated; "" = none) to gid at ts; Ok or the reply. */
static Coord__Envelope *append_rows(int fd, uint64_t ts, uint64_t gid, const char *rows)
{
        Coord__Envelope *env = recv_for(fd, append_send(fd, ts, gid, rows), TIMEOUT_MS);

        CU_ASSERT_PTR_NOT_NULL_FATAL(env);
        return env;
}

/* Append and expect Ok with counts[0] == count (if a write) and upper == ts + 1. */
static void append_ok(int fd, uint64_t ts, uint64_t gid, const char *rows, uint64_t count)
{
        Coord__Envelope *env = append_rows(fd, ts, gid, rows);
        Coord__Ok *ok;

        if (env->type != COORD__MSG_TYPE__MSG_OK) {
                expect_ok(env);
                CU_FAIL_FATAL("append failed");
        }
        ok = coord__ok__unpack(NULL, env->payload.len, env->payload.data);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ok);
        CU_ASSERT_EQUAL(ok->upper, ts + 1);
        if (gid) {
                CU_ASSERT_EQUAL_FATAL(ok->n_counts, 1);
                CU_ASSERT_EQUAL(ok->counts[0], count);
        } else {
                CU_ASSERT_EQUAL(ok->n_counts, 0);
        }
        coord__ok__free_unpacked(ok, NULL);
        coord__envelope__free_unpacked(env, NULL);
}

static uint64_t tick(uint64_t step)
{
        g_ts += step;
        return g_ts;
}

/* A case's own table gid, born at g_ts, with rows "id:name" (comma separated; "" =
 * none) appended at the next tick: what the case reads does not depend on a case
 * before it.  The ts of the append (g_ts if none). */
static uint64_t table_with(uint64_t gid, const char *rows)
{
        uint64_t n = 1;

        ensure_tables(g_fd, g_ts, 1, gid);
        if (!*rows)
                return g_ts;
        for (const char *c = rows; *c; c++)
                n += *c == ',';
        append_ok(g_fd, tick(10), gid, rows, n);
        return g_ts;
}

/* ---- Plans -------------------------------------------------------------------------- */

/* Get(gid) with columns `types`, under an optional Filter `col0 <func> v`; or, with
 * div0, the filter `col0 / 0 = 1`. */
struct plan {
        Coord__Plan__Relation get_rel, filter_rel;
        Coord__Plan__Get get;
        Coord__Plan__Filter filter;
        Coord__Plan__Expr pred, col0, lit, div, zero, *preds[1], *args[2], *div_args[2];
        Coord__Plan__Call call, div_call;
        Coord__Plan__Datum lit_v, zero_v;
        Coord__Plan__Type types[4];
};

static Coord__Plan__Relation *plan_build(struct plan *p, uint64_t gid, size_t ncols,
                                         Coord__Plan__Func func, int64_t v, bool div0)
{
        static const Coord__Plan__Type table[] = {
                COORD__PLAN__TYPE__TYPE_INT8, COORD__PLAN__TYPE__TYPE_TEXT,
        };
        Coord__Plan__Expr *lhs = &p->col0;

        coord__plan__relation__init(&p->get_rel);
        coord__plan__get__init(&p->get);
        p->get.id = gid;
        for (size_t i = 0; i < ncols; i++)
                /* 2 columns: a table (int8, text); 3: coord_frontiers (int8 x 3). */
                p->types[i] = ncols == 2 ? table[i] : COORD__PLAN__TYPE__TYPE_INT8;
        p->get.column_types = p->types;
        p->get.n_column_types = ncols;
        p->get_rel.kind_case = COORD__PLAN__RELATION__KIND_GET;
        p->get_rel.get = &p->get;
        if (!func)
                return &p->get_rel;

        coord__plan__expr__init(&p->col0);
        p->col0.type = COORD__PLAN__TYPE__TYPE_INT8;
        p->col0.kind_case = COORD__PLAN__EXPR__KIND_COLUMN;
        p->col0.column = 0;
        coord__plan__datum__init(&p->lit_v);
        p->lit_v.value_case = COORD__PLAN__DATUM__VALUE_INT_VALUE;
        p->lit_v.int_value = v;
        coord__plan__expr__init(&p->lit);
        p->lit.type = COORD__PLAN__TYPE__TYPE_INT8;
        p->lit.kind_case = COORD__PLAN__EXPR__KIND_LITERAL;
        p->lit.literal = &p->lit_v;
        if (div0) {
                coord__plan__datum__init(&p->zero_v);
                p->zero_v.value_case = COORD__PLAN__DATUM__VALUE_INT_VALUE;
                p->zero_v.int_value = 0;
                coord__plan__expr__init(&p->zero);
                p->zero.type = COORD__PLAN__TYPE__TYPE_INT8;
                p->zero.kind_case = COORD__PLAN__EXPR__KIND_LITERAL;
                p->zero.literal = &p->zero_v;
                coord__plan__call__init(&p->div_call);
                p->div_call.func = COORD__PLAN__FUNC__FUNC_DIV;
                p->div_args[0] = &p->col0;
                p->div_args[1] = &p->zero;
                p->div_call.args = p->div_args;
                p->div_call.n_args = 2;
                coord__plan__expr__init(&p->div);
                p->div.type = COORD__PLAN__TYPE__TYPE_INT8;
                p->div.kind_case = COORD__PLAN__EXPR__KIND_CALL;
                p->div.call = &p->div_call;
                lhs = &p->div;
        }
        coord__plan__call__init(&p->call);
        p->call.func = func;
        p->args[0] = lhs;
        p->args[1] = &p->lit;
        p->call.args = p->args;
        p->call.n_args = 2;
        coord__plan__expr__init(&p->pred);
        p->pred.type = COORD__PLAN__TYPE__TYPE_BOOL;
        p->pred.kind_case = COORD__PLAN__EXPR__KIND_CALL;
        p->pred.call = &p->call;
        p->preds[0] = &p->pred;
        coord__plan__filter__init(&p->filter);
        p->filter.input = &p->get_rel;
        p->filter.predicates = p->preds;
        p->filter.n_predicates = 1;
        coord__plan__relation__init(&p->filter_rel);
        p->filter_rel.kind_case = COORD__PLAN__RELATION__KIND_FILTER;
        p->filter_rel.filter = &p->filter;
        return &p->filter_rel;
}

static uint64_t peek_send(int fd, Coord__Plan__Relation *rel, uint64_t ts, uint32_t timeout_ms)
{
        Coord__PeekRequest m = COORD__PEEK_REQUEST__INIT;
        Coord__Plan__Peek pk = COORD__PLAN__PEEK__INIT;

        pk.plan = rel;
        pk.timestamp = ts;
        m.peek = &pk;
        m.timeout_ms = timeout_ms;
        return send_msg(fd, COORD__MSG_TYPE__MSG_PEEK, &m.base);
}

static int str_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A PeekResult as "row;row*2;..." with rows sorted as strings; NULL if not a result. */
static char *result_string(Coord__Envelope *env)
{
        Coord__PeekResult *res;
        char **items, *out = NULL;
        size_t len = 1;

        if (!env) {
                fprintf(stderr, "\n  expected a result, got no reply\n");
                return NULL;
        }
        if (env->type != COORD__MSG_TYPE__MSG_PEEK_RESULT) {
                char msg[1200];
                const char *st = error_of(env, msg, sizeof(msg));
                fprintf(stderr, "\n  expected a result, got type %d %s %s\n", (int)env->type, st, msg);
                coord__envelope__free_unpacked(env, NULL);
                return NULL;
        }
        res = coord__peek_result__unpack(NULL, env->payload.len, env->payload.data);
        CU_ASSERT_PTR_NOT_NULL_FATAL(res);
        CU_ASSERT_EQUAL_FATAL(res->n_rows, res->n_counts);
        items = calloc(res->n_rows + 1, sizeof(*items));
        CU_ASSERT_PTR_NOT_NULL_FATAL(items);
        for (size_t i = 0; i < res->n_rows; i++) {
                char *s = NULL;

                CU_ASSERT_EQUAL_FATAL(row_to_string(res->rows[i].data, res->rows[i].len, &s), 0);
                if (res->counts[i] != 1) {
                        char *t = NULL;
                        CU_ASSERT_FATAL(asprintf(&t, "%s*%" PRIu64, s, res->counts[i]) > 0);
                        free(s);
                        s = t;
                }
                items[i] = s;
                len += strlen(s) + 1;
        }
        qsort(items, res->n_rows, sizeof(*items), str_cmp);
        out = calloc(1, len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(out);
        for (size_t i = 0; i < res->n_rows; i++) {
                if (i)
                        strcat(out, ";");
                strcat(out, items[i]);
                free(items[i]);
        }
        free(items);
        coord__peek_result__free_unpacked(res, NULL);
        coord__envelope__free_unpacked(env, NULL);
        return out;
}

static void expect_result(Coord__Envelope *env, const char *want)
{
        char *got = result_string(env);

        if (!got || strcmp(got, want) != 0)
                fprintf(stderr, "\n  want \"%s\"\n  got  \"%s\"\n", want, got ? got : "(error)");
        CU_ASSERT_PTR_NOT_NULL(got);
        if (got)
                CU_ASSERT_STRING_EQUAL(got, want);
        free(got);
}

/* The contents of a (int8, text) table at ts, as result_string(). */
static void expect_table(int fd, uint64_t gid, uint64_t ts, const char *want)
{
        struct plan p;

        expect_result(recv_for(fd, peek_send(fd, plan_build(&p, gid, 2, 0, 0, false), ts, 1000),
                               TIMEOUT_MS), want);
}

static Coord__Envelope *peek_table(int fd, uint64_t gid, uint64_t ts, uint32_t timeout_ms)
{
        struct plan p;
        Coord__Envelope *env =
                recv_for(fd, peek_send(fd, plan_build(&p, gid, 2, 0, 0, false), ts, timeout_ms),
                         TIMEOUT_MS + (int)timeout_ms);

        CU_ASSERT_PTR_NOT_NULL_FATAL(env);
        return env;
}

/* Every collection's frontiers; returns false if gid is missing. */
static bool frontiers_of(int fd, uint64_t gid, uint64_t *since, uint64_t *upper)
{
        Coord__ListCollections m = COORD__LIST_COLLECTIONS__INIT;
        Coord__Envelope *env = request(fd, COORD__MSG_TYPE__MSG_LIST_COLLECTIONS, &m.base);
        Coord__CollectionList *l;
        bool found = false;

        CU_ASSERT_EQUAL_FATAL(env->type, COORD__MSG_TYPE__MSG_COLLECTION_LIST);
        l = coord__collection_list__unpack(NULL, env->payload.len, env->payload.data);
        CU_ASSERT_PTR_NOT_NULL_FATAL(l);
        for (size_t i = 0; i < l->n_collections; i++)
                if (l->collections[i]->gid == gid) {
                        found = true;
                        if (since)
                                *since = l->collections[i]->since;
                        if (upper)
                                *upper = l->collections[i]->upper;
                        CU_ASSERT(l->collections[i]->physical_since <= l->collections[i]->since);
                }
        coord__collection_list__free_unpacked(l, NULL);
        coord__envelope__free_unpacked(env, NULL);
        return found;
}

/* A number in the controller's status detail ("... key=N ..."), or UINT64_MAX. */
static uint64_t status_value(const char *key)
{
        Coord__StatusReply *st = NULL;
        uint64_t v;

        CU_ASSERT_EQUAL_FATAL(node_query_status(run_dir, COORD__ROLE__ROLE_CONTROLLER, 1000, &st), 0);
        v = kv_u64(st->detail, key);
        coord__status_reply__free_unpacked(st, NULL);
        return v;
}

struct lcol {
        uint64_t gid, since, upper;
        int kind;
};

/* Every collection as ListCollections reports it; the count. */
static size_t list_cols(int fd, struct lcol *out, size_t max)
{
        Coord__ListCollections m = COORD__LIST_COLLECTIONS__INIT;
        Coord__Envelope *env = request(fd, COORD__MSG_TYPE__MSG_LIST_COLLECTIONS, &m.base);
        Coord__CollectionList *l;
        size_t n;

        CU_ASSERT_EQUAL_FATAL(env->type, COORD__MSG_TYPE__MSG_COLLECTION_LIST);
        l = coord__collection_list__unpack(NULL, env->payload.len, env->payload.data);
        CU_ASSERT_PTR_NOT_NULL_FATAL(l);
        CU_ASSERT_FATAL(l->n_collections <= max);
        n = l->n_collections;
        for (size_t i = 0; i < n; i++)
                out[i] = (struct lcol){ .gid = l->collections[i]->gid, .since = l->collections[i]->since,
                                        .upper = l->collections[i]->upper,
                                        .kind = (int)l->collections[i]->kind };
        coord__collection_list__free_unpacked(l, NULL);
        coord__envelope__free_unpacked(env, NULL);
        return n;
}

/* The number of tables ListCollections lists (built-ins not counted). */
static size_t tables_listed(int fd)
{
        static struct lcol cols[512];
        size_t n = list_cols(fd, cols, ELEMENTSOF(cols)), tables = 0;

        for (size_t i = 0; i < n; i++)
                tables += cols[i].kind == COORD__COLLECTION_KIND__COLLECTION_TABLE;
        return tables;
}

/* Right after an append at ts: coord_frontiers at ts and ListCollections agree.  Row 0
 * is (0, 0, T) with T the upper of coord_objects; every table has exactly one row
 * (gid, since, stored upper) with max(stored upper, T) = its listed upper; no row names
 * anything else.  Returns the number of tables checked. */
static size_t check_frontiers_agree(int fd, uint64_t ts)
{
        static struct lcol cols[512];
        size_t n = list_cols(fd, cols, ELEMENTSOF(cols)), checked = 0, zero = 0;
        Coord__PeekResult *res;
        Coord__Envelope *env;
        uint64_t wf0 = 0, T = 0;
        struct plan p;

        env = recv_for(fd, peek_send(fd, plan_build(&p, GID_FRONTIERS, 3, 0, 0, false), ts, 1000),
                       TIMEOUT_MS);
        CU_ASSERT_PTR_NOT_NULL_FATAL(env);
        CU_ASSERT_EQUAL_FATAL(env->type, COORD__MSG_TYPE__MSG_PEEK_RESULT);
        res = coord__peek_result__unpack(NULL, env->payload.len, env->payload.data);
        CU_ASSERT_PTR_NOT_NULL_FATAL(res);
        for (size_t i = 0; i < n; i++)
                if (cols[i].gid == GID_OBJECTS)
                        T = cols[i].upper;
        CU_ASSERT_EQUAL(T, ts + 1);
        for (size_t r = 0; r < res->n_rows; r++) {
                struct row_datum d[3];
                bool listed = false;

                CU_ASSERT_EQUAL_FATAL(row_decode(res->rows[r].data, res->rows[r].len, d, 3), 3);
                CU_ASSERT_EQUAL(res->counts[r], 1);
                if (d[0].i == 0) {
                        CU_ASSERT_EQUAL(d[1].i, 0);
                        wf0 = (uint64_t)d[2].i;
                        zero++;
                        continue;
                }
                for (size_t i = 0; i < n; i++)
                        if (cols[i].gid == (uint64_t)d[0].i &&
                            cols[i].kind == COORD__COLLECTION_KIND__COLLECTION_TABLE)
                                listed = true;
                CU_ASSERT(listed);
        }
        CU_ASSERT_EQUAL(zero, 1);
        CU_ASSERT_EQUAL(wf0, T);
        for (size_t i = 0; i < n; i++) {
                size_t found = 0;

                if (cols[i].kind != COORD__COLLECTION_KIND__COLLECTION_TABLE)
                        continue;
                for (size_t r = 0; r < res->n_rows; r++) {
                        struct row_datum d[3];
                        uint64_t wf;

                        (void)row_decode(res->rows[r].data, res->rows[r].len, d, 3);
                        if ((uint64_t)d[0].i != cols[i].gid)
                                continue;
                        found++;
                        wf = (uint64_t)d[2].i;
                        CU_ASSERT_EQUAL((uint64_t)d[1].i, cols[i].since);
                        CU_ASSERT(wf <= cols[i].upper);
                        CU_ASSERT_EQUAL(wf > wf0 ? wf : wf0, cols[i].upper);
                }
                CU_ASSERT_EQUAL(found, 1);
                checked++;
        }
        coord__peek_result__free_unpacked(res, NULL);
        coord__envelope__free_unpacked(env, NULL);
        return checked;
}

/* An Append of empty writes to gids at ts: moves their stored uppers, writes no row. */
static void append_touch(int fd, uint64_t ts, const uint64_t *gids, size_t n)
{
        Coord__Append m = COORD__APPEND__INIT;
        Coord__TableWrite *w = calloc(n, sizeof(*w)), **wp = calloc(n, sizeof(*wp));

        CU_ASSERT_FATAL(w && wp);
        for (size_t i = 0; i < n; i++) {
                coord__table_write__init(&w[i]);
                w[i].gid = gids[i];
                wp[i] = &w[i];
        }
        m.ts = ts;
        m.writes = wp;
        m.n_writes = n;
        expect_ok(request(fd, COORD__MSG_TYPE__MSG_APPEND, &m.base));
        free(wp);
        free(w);
}

static Coord__Envelope *drop_gids(int fd, uint64_t *gids, size_t n)
{
        Coord__DropCollections m = COORD__DROP_COLLECTIONS__INIT;

        m.gids = gids;
        m.n_gids = n;
        return request(fd, COORD__MSG_TYPE__MSG_DROP_COLLECTIONS, &m.base);
}

/* An Append of one write to gid: rows "id:name" (comma separated) with diffs. */
static Coord__Envelope *append_diffs(int fd, uint64_t ts, uint64_t gid, const char *rows,
                                     const int64_t *diffs)
{
        Coord__Append m = COORD__APPEND__INIT;
        Coord__TableWrite w = COORD__TABLE_WRITE__INIT, *wp = &w;
        ProtobufCBinaryData data[8];
        char *copy = strdup(rows), *save = NULL;
        Coord__Envelope *env;

        CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *colon = strchr(tok, ':');

                CU_ASSERT_FATAL(colon && w.n_rows < ELEMENTSOF(data));
                *colon = 0;
                data[w.n_rows++] = row2(strtoll(tok, NULL, 10), colon + 1);
        }
        w.gid = gid;
        w.rows = data;
        w.diffs = (int64_t *)diffs;
        w.n_diffs = w.n_rows;
        m.ts = ts;
        m.writes = &wp;
        m.n_writes = 1;
        env = request(fd, COORD__MSG_TYPE__MSG_APPEND, &m.base);
        for (size_t i = 0; i < w.n_rows; i++)
                free(data[i].data);
        free(copy);
        return env;
}

/* ---- Cases -------------------------------------------------------------------------- */

static void test_start(void)
{
        const uint64_t gids[] = { GID_OBJECTS, GID_FRONTIERS };
        const int kinds[] = { COORD__COLLECTION_KIND__COLLECTION_BUILTIN,
                              COORD__COLLECTION_KIND__COLLECTION_BUILTIN };

        CU_ASSERT_EQUAL_FATAL(controller_start(), 0);
        g_fd = conn_open();
        CU_ASSERT_FATAL(g_fd >= 0);
        ensure(g_fd, gids, kinds, 2, T0, false);
        /* Idempotent: a second ensure changes nothing. */
        ensure(g_fd, gids, kinds, 2, T0 + 5, false);
        CU_ASSERT(frontiers_of(g_fd, GID_FRONTIERS, NULL, NULL));
}

static void test_round_trip(void)
{
        uint64_t t1, t2, t3, t4, since, upper;

        /* Born at T (the shared frontier, whatever cases ran before): g_ts = T. */
        append_ok(g_fd, tick(10) - 1, 0, "", 0);
        ensure_tables(g_fd, g_ts, 1, (uint64_t)1001);
        /* A new table is empty and not readable at its birth until the first append. */
        CU_ASSERT(frontiers_of(g_fd, 1001, &since, &upper));
        CU_ASSERT_EQUAL(since, g_ts);
        CU_ASSERT_EQUAL(upper, g_ts);
        t1 = tick(10);
        append_ok(g_fd, t1, 1001, "1:a,2:b", 2);
        t2 = tick(10);
        append_ok(g_fd, t2, 1001, "3:c,1:a", 2);
        t3 = tick(10);
        append_ok(g_fd, t3, 0, "", 0);          /* an upper tick, no writes */
        t4 = tick(10);
        append_ok(g_fd, t4, 1001, "4:d", 1);

        expect_table(g_fd, 1001, t1 - 10, "");                  /* the birth: empty */
        expect_table(g_fd, 1001, t1, "(1,'a');(2,'b')");
        expect_table(g_fd, 1001, t1 + 5, "(1,'a');(2,'b')");
        expect_table(g_fd, 1001, t2, "(1,'a')*2;(2,'b');(3,'c')");
        expect_table(g_fd, 1001, t3, "(1,'a')*2;(2,'b');(3,'c')");
        expect_table(g_fd, 1001, t4, "(1,'a')*2;(2,'b');(3,'c');(4,'d')");
        CU_ASSERT(frontiers_of(g_fd, 1001, &since, &upper));
        CU_ASSERT_EQUAL(upper, t4 + 1);
        CU_ASSERT_EQUAL(since, t1 - 10);

        /* A filter over the table. */
        {
                struct plan p;
                expect_result(recv_for(g_fd, peek_send(g_fd, plan_build(&p, 1001, 2,
                                       COORD__PLAN__FUNC__FUNC_GE, 2, false), t4, 0), TIMEOUT_MS),
                              "(2,'b');(3,'c');(4,'d')");
        }
}

static void append_delete(int fd, uint64_t ts, uint64_t gid, Coord__Plan__Func func, int64_t v,
                          uint64_t want_count)
{
        Coord__Append m = COORD__APPEND__INIT;
        Coord__TableWrite w = COORD__TABLE_WRITE__INIT, *wp = &w;
        Coord__Envelope *env;
        Coord__Ok *ok;
        struct plan p;

        w.gid = gid;
        w.delete_filter = plan_build(&p, gid, 2, func, v, false);
        m.ts = ts;
        m.writes = &wp;
        m.n_writes = 1;
        env = request(fd, COORD__MSG_TYPE__MSG_APPEND, &m.base);
        CU_ASSERT_EQUAL_FATAL(env->type, COORD__MSG_TYPE__MSG_OK);
        ok = coord__ok__unpack(NULL, env->payload.len, env->payload.data);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ok);
        CU_ASSERT_EQUAL_FATAL(ok->n_counts, 1);
        CU_ASSERT_EQUAL(ok->counts[0], want_count);
        CU_ASSERT_EQUAL(ok->upper, ts + 1);
        coord__ok__free_unpacked(ok, NULL);
        coord__envelope__free_unpacked(env, NULL);
}

static void test_delete(void)
{
        uint64_t t0, t1, t2, t3, t4;

        t0 = table_with(1012, "1:a,2:b,3:c");  /* a table the deletes must not touch */
        ensure_tables(g_fd, g_ts, 1, (uint64_t)1002);
        t1 = tick(10);
        append_ok(g_fd, t1, 1002, "1:a,2:b,2:b,3:c,4:d", 5);
        t2 = tick(10);
        append_delete(g_fd, t2, 1002, COORD__PLAN__FUNC__FUNC_GE, 2, 4);  /* 2,2,3,4 */
        t3 = tick(10);
        append_delete(g_fd, t3, 1002, COORD__PLAN__FUNC__FUNC_GE, 2, 0);  /* nothing left */
        t4 = tick(10);
        append_ok(g_fd, t4, 1002, "5:e", 1);

        expect_table(g_fd, 1002, t1, "(1,'a');(2,'b')*2;(3,'c');(4,'d')");
        expect_table(g_fd, 1002, t2, "(1,'a')");
        expect_table(g_fd, 1002, t3, "(1,'a')");
        expect_table(g_fd, 1002, t4, "(1,'a');(5,'e')");
        /* Other tables untouched by the delete. */
        expect_table(g_fd, 1012, t0, "(1,'a');(2,'b');(3,'c')");
        expect_table(g_fd, 1012, t4, "(1,'a');(2,'b');(3,'c')");
}

/* Send an Append of one write; its count (the test fails on anything but Ok). */
static uint64_t append_count(Coord__Append *m)
{
        Coord__Envelope *env = request(g_fd, COORD__MSG_TYPE__MSG_APPEND, &m->base);
        Coord__Ok *ok;
        uint64_t count;

        CU_ASSERT_EQUAL_FATAL(env->type, COORD__MSG_TYPE__MSG_OK);
        ok = coord__ok__unpack(NULL, env->payload.len, env->payload.data);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ok);
        CU_ASSERT_EQUAL_FATAL(ok->n_counts, 1);
        count = ok->counts[0];
        coord__ok__free_unpacked(ok, NULL);
        coord__envelope__free_unpacked(env, NULL);
        return count;
}

/* An update (TableWrite.update): the plan returns each matching row, then its new
 * values; the old rows go, the new come, at one timestamp; a plan of the wrong arity or
 * an update without a plan fails with nothing written. */
static void test_update(void)
{
        Coord__Append m = COORD__APPEND__INIT;
        Coord__TableWrite w = COORD__TABLE_WRITE__INIT, *wp = &w;
        Coord__Plan__Relation map_rel = COORD__PLAN__RELATION__INIT;
        Coord__Plan__Map map = COORD__PLAN__MAP__INIT;
        Coord__Plan__Expr add = COORD__PLAN__EXPR__INIT, c0 = COORD__PLAN__EXPR__INIT,
                          c1 = COORD__PLAN__EXPR__INIT, ten = COORD__PLAN__EXPR__INIT;
        Coord__Plan__Expr *add_args[2] = { &c0, &ten }, *exprs[2] = { &add, &c1 };
        Coord__Plan__Call call = COORD__PLAN__CALL__INIT;
        Coord__Plan__Datum ten_v = COORD__PLAN__DATUM__INIT;
        uint64_t t1, t2, t3, upper, after;
        struct plan p;

        /* test_delete's end state, in a table of its own. */
        (void)table_with(1022, "1:a,5:e");
        t1 = tick(10);
        append_ok(g_fd, t1, 1022, "2:b,3:c", 2);
        /* Map[#0 + 10, #1](Filter[#0 >= 2](Get 1022)): (2,b) -> (12,b), (3,c) -> (13,c),
         * (5,e) -> (15,e). */
        c0.type = c1.type = ten.type = add.type = COORD__PLAN__TYPE__TYPE_INT8;
        c1.type = COORD__PLAN__TYPE__TYPE_TEXT;
        c0.kind_case = c1.kind_case = COORD__PLAN__EXPR__KIND_COLUMN;
        c0.column = 0;
        c1.column = 1;
        ten_v.value_case = COORD__PLAN__DATUM__VALUE_INT_VALUE;
        ten_v.int_value = 10;
        ten.kind_case = COORD__PLAN__EXPR__KIND_LITERAL;
        ten.literal = &ten_v;
        call.func = COORD__PLAN__FUNC__FUNC_ADD;
        call.args = add_args;
        call.n_args = 2;
        add.kind_case = COORD__PLAN__EXPR__KIND_CALL;
        add.call = &call;
        map.input = plan_build(&p, 1022, 2, COORD__PLAN__FUNC__FUNC_GE, 2, false);
        map.exprs = exprs;
        map.n_exprs = 2;
        map_rel.kind_case = COORD__PLAN__RELATION__KIND_MAP;
        map_rel.map = &map;
        w.gid = 1022;
        w.delete_filter = &map_rel;
        w.update = true;
        t2 = tick(10);
        m.ts = t2;
        m.writes = &wp;
        m.n_writes = 1;
        CU_ASSERT_EQUAL(append_count(&m), 3);
        expect_table(g_fd, 1022, t1, "(1,'a');(2,'b');(3,'c');(5,'e')");
        expect_table(g_fd, 1022, t2, "(1,'a');(12,'b');(13,'c');(15,'e')");

        /* The same rows as a plain filter: half the columns an update needs. */
        CU_ASSERT(frontiers_of(g_fd, 1022, NULL, &upper));
        t3 = tick(10);
        m.ts = t3;
        w.delete_filter = map.input;
        expect_error(request(g_fd, COORD__MSG_TYPE__MSG_APPEND, &m.base), "XX000",
                     "must return its rows unchanged");
        w.delete_filter = NULL;
        expect_error(request(g_fd, COORD__MSG_TYPE__MSG_APPEND, &m.base), "XX000", "has no plan");
        CU_ASSERT(frontiers_of(g_fd, 1022, NULL, &after));
        CU_ASSERT_EQUAL(after, upper);
        append_ok(g_fd, t3, 0, "", 0);
        expect_table(g_fd, 1022, t3, "(1,'a');(12,'b');(13,'c');(15,'e')");

        /* RETURNING (TableWrite.returning): a third value after the old and new rows (the
         * same: the table stays as it is) is returned in Ok.returned, not written. */
        {
                Coord__Plan__Expr *rexprs[3] = { &c0, &c1, &add };
                Coord__Envelope *env;
                Coord__Ok *ok;
                int64_t sum = 0;

                map.exprs = rexprs;
                map.n_exprs = 3;
                w.delete_filter = &map_rel;
                w.returning = 1;
                m.ts = tick(10);
                env = request(g_fd, COORD__MSG_TYPE__MSG_APPEND, &m.base);
                CU_ASSERT_EQUAL_FATAL(env->type, COORD__MSG_TYPE__MSG_OK);
                ok = coord__ok__unpack(NULL, env->payload.len, env->payload.data);
                CU_ASSERT_PTR_NOT_NULL_FATAL(ok);
                CU_ASSERT_EQUAL(ok->counts[0], 3);
                CU_ASSERT_EQUAL_FATAL(ok->n_returned, 1);
                CU_ASSERT_EQUAL(ok->returned[0]->write, 0);
                CU_ASSERT_EQUAL_FATAL(ok->returned[0]->n_rows, 3);
                for (size_t i = 0; i < 3; i++) {
                        struct row_datum d;

                        CU_ASSERT_EQUAL(row_decode(ok->returned[0]->rows[i].data,
                                                   ok->returned[0]->rows[i].len, &d, 1), 1);
                        CU_ASSERT_EQUAL(ok->returned[0]->counts[i], 1);
                        sum += d.i;
                }
                CU_ASSERT_EQUAL(sum, 22 + 23 + 25);
                expect_table(g_fd, 1022, m.ts, "(1,'a');(12,'b');(13,'c');(15,'e')");
                coord__ok__free_unpacked(ok, NULL);
                coord__envelope__free_unpacked(env, NULL);
                /* RETURNING of a write without a plan: nothing written. */
                w.delete_filter = NULL;
                w.update = false;
                m.ts = tick(10);
                expect_error(request(g_fd, COORD__MSG_TYPE__MSG_APPEND, &m.base), "XX000",
                             "RETURNING of a write without a plan");
                w.returning = 0;
                append_ok(g_fd, m.ts, 0, "", 0);
        }
}

/* An insert-select (TableWrite.insert_select): the plan reads another table, or the
 * written one, as of the append, and what it returns is inserted; no plan, or one that is
 * also an update, fails with nothing written. */
static void test_insert_select(void)
{
        Coord__Append m = COORD__APPEND__INIT;
        Coord__TableWrite w = COORD__TABLE_WRITE__INIT, *wp = &w;
        uint64_t t1, t2, t3, upper, after;
        struct plan p, q;

        /* test_update's end state, and test_round_trip's to read from. */
        (void)table_with(1023, "1:a,12:b,13:c,15:e");
        (void)table_with(1024, "1:a,2:b,1:a,3:c,4:d");
        t1 = tick(10);
        append_ok(g_fd, t1, 0, "", 0);
        w.gid = 1023;
        w.insert_select = true;
        w.delete_filter = plan_build(&p, 1024, 2, COORD__PLAN__FUNC__FUNC_GE, 3, false);
        t2 = tick(10);
        m.ts = t2;
        m.writes = &wp;
        m.n_writes = 1;
        CU_ASSERT_EQUAL(append_count(&m), 2);
        expect_table(g_fd, 1023, t1, "(1,'a');(12,'b');(13,'c');(15,'e')");
        expect_table(g_fd, 1023, t2, "(1,'a');(12,'b');(13,'c');(15,'e');(3,'c');(4,'d')");
        expect_table(g_fd, 1024, t2, "(1,'a')*2;(2,'b');(3,'c');(4,'d')");

        /* Its own rows: each row >= 12 once more. */
        w.delete_filter = plan_build(&q, 1023, 2, COORD__PLAN__FUNC__FUNC_GE, 12, false);
        t3 = tick(10);
        m.ts = t3;
        CU_ASSERT_EQUAL(append_count(&m), 3);
        expect_table(g_fd, 1023, t3, "(1,'a');(12,'b')*2;(13,'c')*2;(15,'e')*2;(3,'c');(4,'d')");

        CU_ASSERT(frontiers_of(g_fd, 1023, NULL, &upper));
        m.ts = tick(10);
        w.update = true;
        expect_error(request(g_fd, COORD__MSG_TYPE__MSG_APPEND, &m.base), "XX000",
                     "both an update and an insert-select");
        w.update = false;
        w.delete_filter = NULL;
        expect_error(request(g_fd, COORD__MSG_TYPE__MSG_APPEND, &m.base), "XX000", "has no plan");
        CU_ASSERT(frontiers_of(g_fd, 1023, NULL, &after));
        CU_ASSERT_EQUAL(after, upper);
        /* A delete counts each copy of a row. */
        append_delete(g_fd, m.ts, 1023, COORD__PLAN__FUNC__FUNC_GE, 2, 8);
        expect_table(g_fd, 1023, m.ts, "(1,'a')");
}

/* One Append with several writes: counts per write, a delete sees the group's earlier
 * writes, explicit diffs retract, and a retraction of a row that is not there fails the
 * whole Append with nothing written. */
static void test_mixed_group(void)
{
        Coord__Append m = COORD__APPEND__INIT;
        Coord__TableWrite w[3], *wp[3];
        ProtobufCBinaryData rows[3];
        int64_t diffs[3];
        Coord__Envelope *env;
        Coord__Ok *ok;
        uint64_t t1, t2, t3, upper;
        struct plan p;

        ensure_tables(g_fd, g_ts, 2, (uint64_t)1006, (uint64_t)1007);
        t1 = tick(10);
        for (int i = 0; i < 3; i++) {
                coord__table_write__init(&w[i]);
                wp[i] = &w[i];
        }
        /* 1006 += {1:a, 2:b}; 1007 += {7:q}; 1006 -= rows with id >= 2 (sees 2:b). */
        rows[0] = row2(1, "a");
        rows[1] = row2(2, "b");
        rows[2] = row2(7, "q");
        w[0].gid = 1006;
        w[0].rows = rows;
        w[0].n_rows = 2;
        w[1].gid = 1007;
        w[1].rows = &rows[2];
        w[1].n_rows = 1;
        w[2].gid = 1006;
        w[2].delete_filter = plan_build(&p, 1006, 2, COORD__PLAN__FUNC__FUNC_GE, 2, false);
        m.ts = t1;
        m.writes = wp;
        m.n_writes = 3;
        env = request(g_fd, COORD__MSG_TYPE__MSG_APPEND, &m.base);
        CU_ASSERT_EQUAL_FATAL(env->type, COORD__MSG_TYPE__MSG_OK);
        ok = coord__ok__unpack(NULL, env->payload.len, env->payload.data);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ok);
        CU_ASSERT_EQUAL_FATAL(ok->n_counts, 3);
        CU_ASSERT_EQUAL(ok->counts[0], 2);
        CU_ASSERT_EQUAL(ok->counts[1], 1);
        CU_ASSERT_EQUAL(ok->counts[2], 1);
        coord__ok__free_unpacked(ok, NULL);
        coord__envelope__free_unpacked(env, NULL);
        expect_table(g_fd, 1006, t1, "(1,'a')");
        expect_table(g_fd, 1007, t1, "(7,'q')");

        /* Explicit diffs: 1007 gets (7,q) -1 and (8,r) +3. */
        t2 = tick(10);
        free(rows[1].data);
        rows[1] = row2(8, "r");
        diffs[0] = -1;
        diffs[1] = 3;
        w[0].gid = 1007;
        w[0].rows = &rows[1];
        w[0].n_rows = 1;
        w[0].diffs = &diffs[1];
        w[0].n_diffs = 1;
        w[1].gid = 1007;
        w[1].rows = &rows[2];
        w[1].n_rows = 1;
        w[1].diffs = diffs;
        w[1].n_diffs = 1;
        m.ts = t2;
        m.n_writes = 2;
        env = request(g_fd, COORD__MSG_TYPE__MSG_APPEND, &m.base);
        CU_ASSERT_EQUAL_FATAL(env->type, COORD__MSG_TYPE__MSG_OK);
        ok = coord__ok__unpack(NULL, env->payload.len, env->payload.data);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ok);
        CU_ASSERT_EQUAL_FATAL(ok->n_counts, 2);
        CU_ASSERT_EQUAL(ok->counts[0], 3);
        CU_ASSERT_EQUAL(ok->counts[1], 1);
        coord__ok__free_unpacked(ok, NULL);
        coord__envelope__free_unpacked(env, NULL);
        expect_table(g_fd, 1007, t2, "(8,'r')*3");
        expect_table(g_fd, 1007, t1, "(7,'q')");

        /* Retracting (7,q) again: it is not there.  Nothing is written, not even the
         * insert of the same Append or the upper tick. */
        CU_ASSERT(frontiers_of(g_fd, 1007, NULL, &upper));
        t3 = tick(10);
        m.ts = t3;
        m.n_writes = 2;
        expect_error(request(g_fd, COORD__MSG_TYPE__MSG_APPEND, &m.base), "XX000",
                     "would retract row (7,'q') of collection 1007 1 times, but it is there 0 times");
        CU_ASSERT(frontiers_of(g_fd, 1007, NULL, &t1));
        CU_ASSERT_EQUAL(t1, upper);
        /* A diff count of 0 rows is an error too: rows and diffs must pair up. */
        w[0].n_diffs = 0;
        w[0].diffs = NULL;
        w[1].n_rows = 0;
        m.n_writes = 2;
        expect_error(request(g_fd, COORD__MSG_TYPE__MSG_APPEND, &m.base), "XX000", "0 rows but 1 diffs");
        for (int i = 0; i < 3; i++)
                free(rows[i].data);
        append_ok(g_fd, t3, 0, "", 0);
}

static void test_below_since(void)
{
        char needle[160];
        uint64_t since = 0, upper = 0, t, start;

        ensure_tables(g_fd, g_ts, 1, (uint64_t)1003);
        t = tick(10);
        append_ok(g_fd, t, 1003, "7:x", 1);
        /* Below a table's since (its birth). */
        snprintf(needle, sizeof(needle), "AS OF %" PRIu64 " is below the since %" PRIu64
                 " of collection 1003", t - 11, t - 10);
        expect_error(peek_table(g_fd, 1003, t - 11, 0), "55000", needle);

        /* Built-ins compact only as far as a permission allows (issue 29 item 4): none
         * yet, so nothing moves; then one for coord_frontiers at upper - 1 s. */
        t = tick(5000);
        append_ok(g_fd, t, 0, "", 0);
        usleep(300 * 1000);     /* three compaction runs */
        CU_ASSERT_FATAL(frontiers_of(g_fd, GID_FRONTIERS, &since, &upper));
        CU_ASSERT(since < t + 1 - 1000);
        {
                Coord__AllowCompaction m = COORD__ALLOW_COMPACTION__INIT;
                Coord__CatalogBoundRecord b = COORD__CATALOG_BOUND_RECORD__INIT, *bp = &b;

                b.gid = GID_FRONTIERS;
                b.bound = t + 1 - 1000;
                m.sinces = &bp;
                m.n_sinces = 1;
                expect_ok(request(g_fd, COORD__MSG_TYPE__MSG_ALLOW_COMPACTION, &m.base));
        }
        start = now_ms();
        while (now_ms() - start < 3000) {
                CU_ASSERT_FATAL(frontiers_of(g_fd, GID_FRONTIERS, &since, &upper));
                if (since == upper - 1000)
                        break;
                usleep(20000);
        }
        CU_ASSERT_EQUAL(upper, t + 1);
        CU_ASSERT_EQUAL(since, t + 1 - 1000);
        {
                struct plan p;
                snprintf(needle, sizeof(needle), "AS OF %" PRIu64 " is below the since %" PRIu64
                         " of collection 2", T0, since);
                expect_error(recv_for(g_fd, peek_send(g_fd, plan_build(&p, GID_FRONTIERS, 3, 0, 0,
                                                                       false), T0, 0), TIMEOUT_MS),
                             "55000", needle);
        }
        /* Tables keep their since (no compaction in this milestone). */
        CU_ASSERT(frontiers_of(g_fd, 1003, &since, NULL));
        CU_ASSERT_EQUAL(since, t - 5010);
}

/* Issue 30 item 5: a streamed peek is an execution hold (controller-server-peek.c note 5).
 * While it waits for its next chunk, a permission past its ts moves the table's since
 * only to ts; when the stream ends, the rest follows. */
static void test_peek_holds(void)
{
        Coord__PeekRequest m = COORD__PEEK_REQUEST__INIT;
        Coord__Plan__Peek pk = COORD__PLAN__PEEK__INIT;
        Coord__PeekResult *res;
        Coord__Envelope *env;
        struct plan p;
        uint64_t t0, t1, since = 0, rid, start;
        char rows[32 * 16] = "";
        size_t len = 0;
        unsigned chunks = 1;

        ensure_tables(g_fd, g_ts, 1, (uint64_t)1011);
        for (int i = 0; i < 32; i++)
                len += (size_t)snprintf(rows + len, sizeof(rows) - len, "%s%d:row-%d", i ? "," : "", i, i);
        t0 = tick(10);
        append_ok(g_fd, t0, 1011, rows, 32);
        pk.plan = plan_build(&p, 1011, 2, 0, 0, false);
        pk.timestamp = t0;
        m.peek = &pk;
        m.timeout_ms = 1000;
        m.chunk_bytes = 64;
        rid = send_msg(g_fd, COORD__MSG_TYPE__MSG_PEEK, &m.base);
        env = recv_for(g_fd, rid, TIMEOUT_MS);
        CU_ASSERT_FATAL(env && env->type == COORD__MSG_TYPE__MSG_PEEK_RESULT);
        res = coord__peek_result__unpack(NULL, env->payload.len, env->payload.data);
        CU_ASSERT_FATAL(res && res->more);
        coord__peek_result__free_unpacked(res, NULL);
        coord__envelope__free_unpacked(env, NULL);

        /* Written on, and permitted far past t0: the since stops at t0. */
        t1 = tick(1000);
        append_ok(g_fd, t1, 1011, "100:later", 1);
        {
                Coord__AllowCompaction a = COORD__ALLOW_COMPACTION__INIT;
                Coord__CatalogBoundRecord b = COORD__CATALOG_BOUND_RECORD__INIT, *bp = &b;

                b.gid = 1011;
                b.bound = t1;
                a.sinces = &bp;
                a.n_sinces = 1;
                expect_ok(request(g_fd, COORD__MSG_TYPE__MSG_ALLOW_COMPACTION, &a.base));
        }
        usleep(300 * 1000);     /* three compaction runs */
        CU_ASSERT_FATAL(frontiers_of(g_fd, 1011, &since, NULL));
        CU_ASSERT_EQUAL(since, t0);

        /* The stream, chunk by chunk, to its end: then the since moves on to t1. */
        for (bool more = true; more && chunks < 100; chunks++) {
                Coord__PeekNext nx = COORD__PEEK_NEXT__INIT;
                Coord__Envelope out = COORD__ENVELOPE__INIT;
                size_t n = coord__peek_next__get_packed_size(&nx);
                uint8_t buf[16];

                coord__peek_next__pack(&nx, buf);
                out.type = COORD__MSG_TYPE__MSG_PEEK_NEXT;
                out.sender = COORD__ROLE__ROLE_ADAPTER;
                out.incarnation = g_inc;
                out.request_id = rid;
                out.payload.data = buf;
                out.payload.len = n;
                CU_ASSERT_EQUAL_FATAL(ipc_sync_send(g_fd, &out, IPC_MAX_FRAME_DEFAULT), 0);
                env = recv_for(g_fd, rid, TIMEOUT_MS);
                CU_ASSERT_FATAL(env && env->type == COORD__MSG_TYPE__MSG_PEEK_RESULT);
                res = coord__peek_result__unpack(NULL, env->payload.len, env->payload.data);
                CU_ASSERT_FATAL(res != NULL);
                more = res->more;
                coord__peek_result__free_unpacked(res, NULL);
                coord__envelope__free_unpacked(env, NULL);
        }
        CU_ASSERT(chunks > 3);
        start = now_ms();
        while (now_ms() - start < 3000 && frontiers_of(g_fd, 1011, &since, NULL) && since < t1)
                usleep(20 * 1000);
        CU_ASSERT_EQUAL(since, t1);
}

static void test_peek_waits(void)
{
        Coord__Envelope *env;
        uint64_t t, rid, rid2, start, elapsed;

        ensure_tables(g_fd, g_ts, 1, (uint64_t)1004);
        /* A peek without a plan is an error, not a wait. */
        env = recv_for(g_fd, peek_send(g_fd, NULL, 0, 0), TIMEOUT_MS);
        CU_ASSERT_PTR_NOT_NULL_FATAL(env);
        expect_error(env, "XX000", "without a plan");
        t = tick(10);
        /* Not readable yet at t: parked... */
        {
                struct plan p;
                rid = peek_send(g_fd, plan_build(&p, 1004, 2, 0, 0, false), t, 5000);
        }
        /* ...while later requests on the same connection are served... */
        CU_ASSERT(frontiers_of(g_fd, 1004, NULL, NULL));
        /* ...and the append at t answers it, after the append's own Ok. */
        append_ok(g_fd, t, 1004, "1:w", 1);
        expect_result(recv_for(g_fd, rid, TIMEOUT_MS), "(1,'w')");

        /* Two parked peeks, the later one answered by a later append only. */
        {
                struct plan p1, p2;
                uint64_t ta = tick(10), tb = ta + 10;

                rid = peek_send(g_fd, plan_build(&p1, 1004, 2, 0, 0, false), tb, 5000);
                rid2 = peek_send(g_fd, plan_build(&p2, 1004, 2, 0, 0, false), ta, 5000);
                append_ok(g_fd, ta, 1004, "2:x", 1);
                expect_result(recv_for(g_fd, rid2, TIMEOUT_MS), "(1,'w');(2,'x')");
                g_ts = tb;
                append_ok(g_fd, tb, 1004, "3:y", 1);
                expect_result(recv_for(g_fd, rid, TIMEOUT_MS), "(1,'w');(2,'x');(3,'y')");
        }

        /* No append: 57014 after the timeout, naming the collection, ts and upper. */
        t = g_ts + 1000;
        start = now_ms();
        {
                struct plan p;
                char needle[200];

                rid = peek_send(g_fd, plan_build(&p, 1004, 2, 0, 0, false), t, 300);
                /* An append below t meanwhile does not satisfy it. */
                append_ok(g_fd, tick(10), 0, "", 0);
                env = recv_for(g_fd, rid, TIMEOUT_MS);
                elapsed = now_ms() - start;
                CU_ASSERT_PTR_NOT_NULL_FATAL(env);
                snprintf(needle, sizeof(needle), "timed out after 300 ms waiting for collection 1004 "
                         "to become readable at %" PRIu64 " (its upper is %" PRIu64 ")", t, g_ts + 1);
                expect_error(env, "57014", needle);
        }
        CU_ASSERT(elapsed >= 290 && elapsed < 3000);
}

static void test_frontiers_relation(void)
{
        static struct lcol cols[512];
        static uint64_t tables[512], since[512];
        static char want[512 * 64], *items[512];
        size_t n, ntables = 0, len = 0;
        uint64_t t0, t1, t2, upper;
        struct plan p;

        /* Its own two tables, 1081 written and 1084 not; every other table there is
         * (what cases before this one left) shows in coord_frontiers too. */
        (void)table_with(1081, "1:a");
        (void)table_with(1084, "");
        n = list_cols(g_fd, cols, ELEMENTSOF(cols));
        for (size_t i = 0; i < n; i++)
                if (cols[i].kind == COORD__COLLECTION_KIND__COLLECTION_TABLE) {
                        tables[ntables] = cols[i].gid;
                        since[ntables++] = cols[i].since;
                }
        /* Every table written (with no rows) at t0, then 1081 alone at t1, then nothing. */
        t0 = tick(10);
        append_touch(g_fd, t0, tables, ntables);
        t1 = tick(10);
        append_ok(g_fd, t1, 1081, "9:z", 1);
        t2 = tick(10);
        append_ok(g_fd, t2, 0, "", 0);
        /* At t1: 1081 shows its new stored upper t1 + 1, the others t0 + 1, and row 0 the
         * shared frontier t1 + 1.  Built-ins have no row of their own.  (Sorted as
         * strings, as result_string() does.) */
        for (size_t i = 0; i < ntables; i++)
                CU_ASSERT_FATAL(asprintf(&items[i], "(%" PRIu64 ",%" PRIu64 ",%" PRIu64 ")", tables[i],
                                         since[i], tables[i] == 1081 ? t1 + 1 : t0 + 1) > 0);
        qsort(items, ntables, sizeof(*items), str_cmp);
        len = (size_t)snprintf(want, sizeof(want), "(0,0,%" PRIu64 ")", t1 + 1);
        for (size_t i = 0; i < ntables; i++) {
                len += (size_t)snprintf(want + len, sizeof(want) - len, ";%s", items[i]);
                free(items[i]);
        }
        CU_ASSERT_FATAL(len < sizeof(want));
        expect_result(recv_for(g_fd, peek_send(g_fd, plan_build(&p, GID_FRONTIERS, 3, 0, 0, false),
                                               t1, 0), TIMEOUT_MS), want);
        /* At t2 only row 0 moved; 1084's upper is max(t0 + 1, t2 + 1). */
        CU_ASSERT(frontiers_of(g_fd, 1084, &since[0], NULL));
        snprintf(want, sizeof(want), "(1084,%" PRIu64 ",%" PRIu64 ")", since[0], t0 + 1);
        expect_result(recv_for(g_fd, peek_send(g_fd, plan_build(&p, GID_FRONTIERS, 3,
                                                                COORD__PLAN__FUNC__FUNC_EQ, 1084, false),
                                               t2, 0), TIMEOUT_MS), want);
        snprintf(want, sizeof(want), "(0,0,%" PRIu64 ")", t2 + 1);
        expect_result(recv_for(g_fd, peek_send(g_fd, plan_build(&p, GID_FRONTIERS, 3,
                                                                COORD__PLAN__FUNC__FUNC_EQ, 0, false),
                                               t2, 0), TIMEOUT_MS), want);
        CU_ASSERT(frontiers_of(g_fd, 1084, NULL, &upper));
        CU_ASSERT_EQUAL(upper, t2 + 1);
        CU_ASSERT_EQUAL(check_frontiers_agree(g_fd, t2), ntables);
}

/* Appends are O(collections written): the built-ins and the tables named, whatever the
 * number of tables; the others follow the shared frontier T. */
static void test_shared_frontier(void)
{
        uint64_t gids[200], T, t, t1, since, upper, rid;
        size_t tables_before;
        int kinds[16];
        struct plan p;

        /* 200 tables, born at g_ts < T = g_ts + 1: readable (empty) at once. */
        append_ok(g_fd, tick(10), 0, "", 0);
        tables_before = tables_listed(g_fd);
        for (size_t i = 0; i < 200; i++)
                gids[i] = 1100 + i;
        for (size_t i = 0; i < 16; i++)
                kinds[i] = COORD__COLLECTION_KIND__COLLECTION_TABLE;
        for (size_t b = 0; b < 200; b += 16)
                ensure(g_fd, &gids[b], kinds, b + 16 <= 200 ? 16 : 200 - b, g_ts, false);
        CU_ASSERT(frontiers_of(g_fd, 1150, &since, &upper));
        CU_ASSERT_EQUAL(since, g_ts);
        CU_ASSERT_EQUAL(upper, g_ts + 1);
        expect_table(g_fd, 1150, g_ts, "");
        /* The next append inserts their 200 rows; the one after touches nothing but
         * the two built-ins and row 0. */
        append_ok(g_fd, tick(10), 0, "", 0);
        CU_ASSERT_EQUAL(status_value("last_append_collections"), 2);
        CU_ASSERT_EQUAL(status_value("last_append_frontier_rows"), 200 + 2);
        append_ok(g_fd, tick(10), 0, "", 0);
        CU_ASSERT_EQUAL(status_value("last_append_collections"), 2);
        CU_ASSERT_EQUAL(status_value("last_append_frontier_rows"), 2);
        /* A write: the built-ins and that table; its row and row 0 change. */
        t1 = tick(10);
        append_ok(g_fd, t1, 1150, "1:a", 1);
        CU_ASSERT_EQUAL(status_value("last_append_collections"), 3);
        CU_ASSERT_EQUAL(status_value("last_append_frontier_rows"), 4);
        CU_ASSERT_EQUAL(status_value("tables_frontier"), t1 + 1);

        /* Empty appends move T; the table's upper follows without a write. */
        for (int i = 0; i < 3; i++)
                append_ok(g_fd, tick(10), 0, "", 0);
        CU_ASSERT(frontiers_of(g_fd, GID_OBJECTS, NULL, &T));
        CU_ASSERT_EQUAL(T, g_ts + 1);
        CU_ASSERT(frontiers_of(g_fd, 1150, NULL, &upper));
        CU_ASSERT_EQUAL(upper, T);
        /* Between its stored upper (t1 + 1) and T: the contents at its last write. */
        expect_table(g_fd, 1150, t1 - 1, "");
        expect_table(g_fd, 1150, t1, "(1,'a')");
        expect_table(g_fd, 1150, t1 + 1, "(1,'a')");
        expect_table(g_fd, 1150, g_ts, "(1,'a')");
        expect_result(recv_for(g_fd, peek_send(g_fd, plan_build(&p, 1150, 2, COORD__PLAN__FUNC__FUNC_EQ,
                                                                1, false), g_ts, 0), TIMEOUT_MS),
                      "(1,'a')");
        /* Never written: empty everywhere from its birth to T. */
        expect_table(g_fd, 1151, since, "");
        expect_table(g_fd, 1151, g_ts, "");
        /* A DELETE after the gap reads the contents as of the last write. */
        t = tick(10);
        append_delete(g_fd, t, 1150, COORD__PLAN__FUNC__FUNC_GE, 1, 1);
        expect_table(g_fd, 1150, t, "");
        expect_table(g_fd, 1150, t - 1, "(1,'a')");
        /* A peek parked on an unwritten table is answered when T passes its ts. */
        rid = peek_send(g_fd, plan_build(&p, 1151, 2, 0, 0, false), g_ts + 5, 5000);
        CU_ASSERT(frontiers_of(g_fd, 1151, NULL, NULL));        /* parked meanwhile */
        CU_ASSERT_EQUAL(status_value("peeks_parked"), 1);
        append_ok(g_fd, tick(10), 0, "", 0);
        expect_result(recv_for(g_fd, rid, TIMEOUT_MS), "");
        CU_ASSERT(check_frontiers_agree(g_fd, g_ts) >= 200);

        /* A table the follower creates above T is born at T (10): the adapter's
         * appends travel on another connection and may still come below its creation
         * time; they must not find the new table above them. */
        CU_ASSERT(frontiers_of(g_fd, GID_OBJECTS, NULL, &T));
        ensure_tables(g_fd, g_ts + 100, 1, (uint64_t)1300);
        CU_ASSERT(frontiers_of(g_fd, 1300, &since, &upper));
        CU_ASSERT_EQUAL(since, T);
        CU_ASSERT_EQUAL(upper, T);
        append_ok(g_fd, g_ts + 50, 0, "", 0);           /* below its creation: fine */
        g_ts += 100;
        append_ok(g_fd, g_ts, 0, "", 0);
        CU_ASSERT(frontiers_of(g_fd, 1300, NULL, &upper));
        CU_ASSERT_EQUAL(upper, g_ts + 1);
        expect_table(g_fd, 1300, g_ts, "");

        /* coord_objects carries T: dropping it is refused, with nothing dropped. */
        {
                uint64_t two[] = { 1300, GID_OBJECTS };

                expect_error(drop_gids(g_fd, two, 2), "XX000", "cannot be dropped");
                CU_ASSERT(frontiers_of(g_fd, GID_OBJECTS, NULL, NULL));
                CU_ASSERT(frontiers_of(g_fd, 1300, NULL, NULL));
        }
        /* Dropping the 200: their rows go at the next append, the others stay. */
        expect_ok(drop_gids(g_fd, gids, 200));
        append_ok(g_fd, tick(10), 0, "", 0);
        CU_ASSERT_EQUAL(status_value("last_append_frontier_rows"), 200 + 2);
        CU_ASSERT_EQUAL(check_frontiers_agree(g_fd, g_ts), tables_before + 1);     /* and 1300 */
}

/* Retractions from a built-in (the adapter's coord_objects rows at DROP) are checked
 * against row counts kept by the server since the built-in was created, not a read of
 * the whole relation. */
static void test_builtin_retractions(void)
{
        static const int64_t plus[] = { 1, 2 }, minus1[] = { -1 }, minus3[] = { -3 },
                             minus2[] = { -2 };
        uint64_t t1, upper, reads;

        (void)table_with(1016, "");
        reads = status_value("mirror_reads");
        t1 = tick(10);
        expect_ok(append_diffs(g_fd, t1, GID_OBJECTS, "1:obj,2:two", plus));
        expect_table(g_fd, GID_OBJECTS, t1, "(1,'obj');(2,'two')*2");
        expect_ok(append_diffs(g_fd, tick(10), GID_OBJECTS, "1:obj", minus1));
        /* Not there any more: refused whole, T does not move. */
        CU_ASSERT(frontiers_of(g_fd, GID_OBJECTS, NULL, &upper));
        expect_error(append_diffs(g_fd, tick(10), GID_OBJECTS, "1:obj", minus1), "XX000",
                     "would retract row (1,'obj') of collection 1 1 times, but it is there 0 times");
        expect_error(append_diffs(g_fd, g_ts, GID_OBJECTS, "2:two", minus3), "XX000",
                     "would retract row (2,'two') of collection 1 3 times, but it is there 2 times");
        CU_ASSERT(frontiers_of(g_fd, GID_OBJECTS, NULL, &t1));
        CU_ASSERT_EQUAL(t1, upper);
        /* Appends that do not write it keep the counts right. */
        append_ok(g_fd, g_ts, 0, "", 0);
        append_ok(g_fd, tick(10), 1016, "12:x", 1);
        expect_ok(append_diffs(g_fd, tick(10), GID_OBJECTS, "2:two", minus2));
        expect_table(g_fd, GID_OBJECTS, g_ts, "");
        /* The counts were kept from the built-in's creation on (empty then): not one
         * read of the relation on the loop (a DROP at 100,000 objects read 200,000
         * rows). */
        CU_ASSERT_EQUAL(status_value("mirror_reads"), reads);
}

static void test_bad_requests(void)
{
        static const uint8_t garbage[] = { 0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01 };
        Coord__Append m = COORD__APPEND__INIT;
        Coord__TableWrite w = COORD__TABLE_WRITE__INIT, *wp = &w;
        ProtobufCBinaryData bad = { 3, (uint8_t *)"\x01\x00\x07" };
        uint64_t upper_before, upper_after, t;
        struct plan p;
        char needle[200];

        (void)table_with(1025, "1:a,2:b");
        CU_ASSERT(frontiers_of(g_fd, 1025, NULL, &upper_before));
        t = tick(10);
        /* An unknown collection: 42P01, nothing written (not even the upper tick). */
        expect_error(append_rows(g_fd, t, 4242, "1:q"), "42P01", "collection 4242 does not exist");
        /* Below an upper: XX000 naming a collection and its upper (every table and
         * built-in has the same upper here; the first one is named). */
        snprintf(needle, sizeof(needle), "cannot append at %" PRIu64 ": collection 1 has upper %"
                 PRIu64, upper_before - 2, upper_before);
        expect_error(append_rows(g_fd, upper_before - 2, 1025, "1:q"), "XX000", needle);
        /* A malformed row. */
        w.gid = 1025;
        w.rows = &bad;
        w.n_rows = 1;
        m.ts = t;
        m.writes = &wp;
        m.n_writes = 1;
        expect_error(request(g_fd, COORD__MSG_TYPE__MSG_APPEND, &m.base), "22P02", "not a well-formed row");
        /* coord_frontiers is the controller's. */
        expect_error(append_rows(g_fd, t, GID_FRONTIERS, "1:q"), "XX000", "controller only");
        CU_ASSERT(frontiers_of(g_fd, 1025, NULL, &upper_after));
        CU_ASSERT_EQUAL(upper_after, upper_before);

        /* Garbage payloads: an error reply, the connection keeps working. */
        expect_error(recv_for(g_fd, send_raw(g_fd, COORD__MSG_TYPE__MSG_APPEND, garbage,
                                             sizeof(garbage)), TIMEOUT_MS), "XX000", "malformed Append");
        expect_error(recv_for(g_fd, send_raw(g_fd, COORD__MSG_TYPE__MSG_PEEK, garbage,
                                             sizeof(garbage)), TIMEOUT_MS), "XX000", "malformed");
        expect_error(recv_for(g_fd, send_raw(g_fd, COORD__MSG_TYPE__MSG_ENSURE_COLLECTIONS, garbage,
                                             sizeof(garbage)), TIMEOUT_MS), "XX000", "malformed");
        expect_error(recv_for(g_fd, send_raw(g_fd, (Coord__MsgType)99, NULL, 0), TIMEOUT_MS),
                     "XX000", "not served");
        /* A plan that reads a column that does not exist. */
        {
                Coord__Plan__Relation *rel = plan_build(&p, 1025, 2, COORD__PLAN__FUNC__FUNC_EQ, 1, false);
                p.col0.column = 7;
                expect_error(recv_for(g_fd, peek_send(g_fd, rel, upper_before - 1, 0), TIMEOUT_MS),
                             "XX000", NULL);
        }
        /* Evaluation errors carry their SQLSTATE. */
        expect_error(recv_for(g_fd, peek_send(g_fd, plan_build(&p, 1025, 2, COORD__PLAN__FUNC__FUNC_EQ,
                                                               1, true), upper_before - 1, 0),
                              TIMEOUT_MS), "22012", NULL);
        /* Unknown collection in a peek. */
        expect_error(peek_table(g_fd, 4242, upper_before - 1, 0), "42P01", "4242");
        /* Still serving; nothing of the above was written. */
        append_ok(g_fd, t, 1025, "10:ok", 1);
        expect_table(g_fd, 1025, t, "(1,'a');(10,'ok');(2,'b')");
}

/* A new connection of the adapter replaces the old one: the old one's parked peeks are
 * dropped (their request ids mean nothing to the new connection), nothing else changes. */
static void test_reconnect(void)
{
        Coord__StatusReply *st = NULL;
        struct plan p;
        int old = g_fd;

        (void)table_with(1026, "");
        (void)peek_send(old, plan_build(&p, 1026, 2, 0, 0, false), g_ts + 100, 5000);
        (void)peek_send(old, plan_build(&p, 1026, 2, 0, 0, false), g_ts + 200, 5000);
        CU_ASSERT(frontiers_of(old, 1026, NULL, NULL));        /* both are parked now */
        CU_ASSERT_EQUAL_FATAL(node_query_status(run_dir, COORD__ROLE__ROLE_CONTROLLER, 1000, &st), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(st->detail, "peeks_parked=2"));
        coord__status_reply__free_unpacked(st, NULL);

        g_fd = conn_open();
        CU_ASSERT_FATAL(g_fd >= 0);
        CU_ASSERT(frontiers_of(g_fd, 1026, NULL, NULL));
        CU_ASSERT_EQUAL_FATAL(node_query_status(run_dir, COORD__ROLE__ROLE_CONTROLLER, 1000, &st), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(st->detail, "peeks_parked=0"));
        coord__status_reply__free_unpacked(st, NULL);
        close(old);
        append_ok(g_fd, tick(10), 0, "", 0);
}

/* Every acknowledged append is there after kill -9; uppers did not regress. */
/* ListCollections of some gids: their writer marks (gid 1's, controller-server-append.c
 * (15)), as a string in mark (empty if none); the number of collections listed. */
static size_t list_marks(int fd, const uint64_t *gids, size_t n, char *mark, size_t size)
{
        Coord__ListCollections m = COORD__LIST_COLLECTIONS__INIT;
        Coord__Envelope *env;
        Coord__CollectionList *l;
        size_t listed;

        m.gids = (uint64_t *)gids;
        m.n_gids = n;
        env = request(fd, COORD__MSG_TYPE__MSG_LIST_COLLECTIONS, &m.base);
        CU_ASSERT_EQUAL_FATAL(env->type, COORD__MSG_TYPE__MSG_COLLECTION_LIST);
        l = coord__collection_list__unpack(NULL, env->payload.len, env->payload.data);
        CU_ASSERT_PTR_NOT_NULL_FATAL(l);
        listed = l->n_collections;
        mark[0] = 0;
        for (size_t i = 0; i < l->n_collections; i++) {
                const ProtobufCBinaryData *wm = &l->collections[i]->writer_mark;

                CU_ASSERT(i == 0 || l->collections[i - 1]->gid < l->collections[i]->gid);
                CU_ASSERT(wm->len == 0 || l->collections[i]->gid == GID_OBJECTS);
                if (wm->len && wm->len < size)
                        snprintf(mark, size, "%.*s", (int)wm->len, (const char *)wm->data);
        }
        coord__collection_list__free_unpacked(l, NULL);
        coord__envelope__free_unpacked(env, NULL);
        return listed;
}

static void append_marked(int fd, uint64_t ts, const char *mark)
{
        Coord__Append m = COORD__APPEND__INIT;

        m.ts = ts;
        m.writer_mark.data = (uint8_t *)mark;
        m.writer_mark.len = strlen(mark);
        expect_ok(request(fd, COORD__MSG_TYPE__MSG_APPEND, &m.base));
}

/* An Append's writer_mark is kept with coord_objects, durably (kill -9), until another
 * Append carries one; ListCollections lists only the gids asked for. */
static void test_writer_mark(void)
{
        const uint64_t gids[] = { 424242, GID_OBJECTS, GID_OBJECTS, GID_FRONTIERS };
        char mark[64], big[40];
        Coord__Append m = COORD__APPEND__INIT;

        g_ts = tick(1);
        append_marked(g_fd, g_ts, "first");
        CU_ASSERT_EQUAL(list_marks(g_fd, gids, ELEMENTSOF(gids), mark, sizeof(mark)), 2);
        CU_ASSERT_STRING_EQUAL(mark, "first");
        g_ts = tick(1);
        append_marked(g_fd, g_ts, "");          /* none: kept */
        CU_ASSERT_EQUAL(list_marks(g_fd, gids, 2, mark, sizeof(mark)), 1);
        CU_ASSERT_STRING_EQUAL(mark, "first");
        g_ts = tick(1);
        append_marked(g_fd, g_ts, "second");
        memset(big, 'x', sizeof(big));
        m.ts = g_ts = tick(1);
        m.writer_mark.data = (uint8_t *)big;
        m.writer_mark.len = sizeof(big);
        expect_error(request(g_fd, COORD__MSG_TYPE__MSG_APPEND, &m.base), "22023", "writer_mark");
        CU_ASSERT_EQUAL(controller_stop(SIGKILL), 128 + SIGKILL);
        close(g_fd);
        CU_ASSERT_EQUAL_FATAL(controller_start(), 0);
        g_fd = conn_open();
        CU_ASSERT_FATAL(g_fd >= 0);
        CU_ASSERT_EQUAL(list_marks(g_fd, gids + 1, 1, mark, sizeof(mark)), 1);
        CU_ASSERT_STRING_EQUAL(mark, "second");
}

static void test_kill9(void)
{
        static const int64_t one[] = { 1 };
        uint64_t ts[20], upper_before, upper_after, since, gone = 1028;
        char want[1024] = "";
        struct plan p;
        char *frontiers_before;
        size_t tables_before;

        /* A table written long before (its upper must follow T back), one to drop, and a
         * row of coord_objects whose count must come back. */
        (void)table_with(1027, "1:w,2:x");
        append_ok(g_fd, tick(10), 1027, "3:y", 1);
        (void)table_with(1028, "1:gone");
        expect_ok(append_diffs(g_fd, tick(10), GID_OBJECTS, "3:kept", one));
        ensure_tables(g_fd, g_ts, 1, (uint64_t)1005);
        for (int i = 0; i < 20; i++) {
                char row[32];

                snprintf(row, sizeof(row), "%d:r%d", i, i);
                ts[i] = tick(1);
                append_ok(g_fd, ts[i], 1005, row, 1);
        }
        CU_ASSERT(frontiers_of(g_fd, 1005, NULL, &upper_before));
        frontiers_before = result_string(recv_for(g_fd, peek_send(g_fd, plan_build(&p, GID_FRONTIERS,
                                                                                    3, 0, 0, false),
                                                                  g_ts, 0), TIMEOUT_MS));
        CU_ASSERT_PTR_NOT_NULL_FATAL(frontiers_before);
        tables_before = tables_listed(g_fd);
        /* A create and a drop acknowledged, not yet followed by an append: they are
         * durable only with the next write (controller-server-collection.c, (12)), so kill -9 may
         * lose them; the adapter's resync after reconnecting repeats them (below), and
         * their rows are reconciled after the restart. */
        ensure_tables(g_fd, g_ts, 1, (uint64_t)1008);
        expect_ok(drop_gids(g_fd, &gone, 1));

        CU_ASSERT_EQUAL(controller_stop(SIGKILL), 128 + SIGKILL);
        close(g_fd);
        CU_ASSERT_EQUAL_FATAL(controller_start(), 0);
        g_fd = conn_open();
        CU_ASSERT_FATAL(g_fd >= 0);
        /* The adapter's resync (here by parts): what the catalog has is ensured again,
         * what it dropped is dropped again. */
        ensure_tables(g_fd, g_ts, 1, (uint64_t)1008);
        expect_ok(drop_gids(g_fd, &gone, 1));
        CU_ASSERT(frontiers_of(g_fd, 1008, NULL, NULL));
        CU_ASSERT(!frontiers_of(g_fd, gone, NULL, NULL));

        CU_ASSERT(frontiers_of(g_fd, 1005, &since, &upper_after));
        CU_ASSERT(upper_after >= upper_before);
        CU_ASSERT_EQUAL(upper_after, ts[19] + 1);
        /* The built-in's row counts are rebuilt from storage. */
        {
                static const int64_t minus2[] = { -2 };

                g_ts = tick(10);
                expect_error(append_diffs(g_fd, g_ts, GID_OBJECTS, "3:kept", minus2), "XX000",
                             "would retract row (3,'kept') of collection 1 2 times, but it is "
                             "there 1 times");
        }
        /* T came back, and the uppers of tables not written since long follow it. */
        CU_ASSERT(frontiers_of(g_fd, 1027, NULL, &upper_after));
        CU_ASSERT_EQUAL(upper_after, ts[19] + 1);
        CU_ASSERT_EQUAL(status_value("tables_frontier"), ts[19] + 1);
        expect_table(g_fd, 1027, ts[19], "(1,'w');(2,'x');(3,'y')");
        {
                /* result_string() sorts rows as strings: (0,..);(1,..);(10,..);... */
                char *items[20], *sorted = calloc(1, 1024);
                for (int i = 0; i < 20; i++)
                        CU_ASSERT_FATAL(asprintf(&items[i], "(%d,'r%d')", i, i) > 0);
                qsort(items, 20, sizeof(*items), str_cmp);
                for (int i = 0; i < 20; i++) {
                        if (i)
                                strcat(sorted, ";");
                        strcat(sorted, items[i]);
                        free(items[i]);
                }
                expect_table(g_fd, 1005, ts[19], sorted);
                free(sorted);
        }
        expect_table(g_fd, 1005, ts[0], "(0,'r0')");
        expect_table(g_fd, 1005, ts[1], "(0,'r0');(1,'r1')");
        /* coord_frontiers came back as it was... */
        {
                char *after = result_string(recv_for(g_fd, peek_send(g_fd, plan_build(&p, GID_FRONTIERS,
                                                                                       3, 0, 0, false),
                                                                     ts[19], 0), TIMEOUT_MS));
                CU_ASSERT_PTR_NOT_NULL(after);
                if (after)
                        CU_ASSERT_STRING_EQUAL(after, frontiers_before);
                free(after);
        }
        free(frontiers_before);
        /* ...and continues with exactly one row per table: 1005's stays at its last
         * write, row 0 moves. */
        g_ts = tick(10);
        append_ok(g_fd, g_ts, 0, "", 0);
        snprintf(want, sizeof(want), "(1005,%" PRIu64 ",%" PRIu64 ")", since, ts[19] + 1);
        expect_result(recv_for(g_fd, peek_send(g_fd, plan_build(&p, GID_FRONTIERS, 3,
                                                                COORD__PLAN__FUNC__FUNC_EQ, 1005, false),
                                               g_ts, 0), TIMEOUT_MS), want);
        snprintf(want, sizeof(want), "(0,0,%" PRIu64 ")", g_ts + 1);
        expect_result(recv_for(g_fd, peek_send(g_fd, plan_build(&p, GID_FRONTIERS, 3,
                                                                COORD__PLAN__FUNC__FUNC_EQ, 0, false),
                                               g_ts, 0), TIMEOUT_MS), want);
        CU_ASSERT_EQUAL(check_frontiers_agree(g_fd, g_ts), tables_before);     /* 1008 in, 1028 out */
        /* coord_objects as the cases after expect it: empty. */
        {
                static const int64_t minus1[] = { -1 };

                expect_ok(append_diffs(g_fd, tick(10), GID_OBJECTS, "3:kept", minus1));
                expect_table(g_fd, GID_OBJECTS, g_ts, "");
        }
}

static void test_ring(void)
{
        struct fring_reader *rd = NULL;
        struct fring_frontier f, g1, recs[256];
        uint64_t t, start;
        bool seen = false;
        int r;

        /* 1031 written below, 1032 not. */
        (void)table_with(1032, "");
        (void)table_with(1031, "1:a");
        CU_ASSERT_EQUAL_FATAL(fring_attach(ring_name, &rd), 0);
        /* The snapshot holds every collection. */
        CU_ASSERT_EQUAL(fring_lookup(rd, 1031, &f), 0);
        t = tick(10);
        append_ok(g_fd, t, 1031, "11:ring", 1);
        CU_ASSERT_EQUAL(fring_lookup(rd, 1031, &f), 0);
        CU_ASSERT_EQUAL(f.upper, t + 1);
        /* 1032 was not written: the ring shows its stored upper, and its upper is
         * max(that, gid 1's upper) = t + 1. */
        CU_ASSERT_EQUAL(fring_lookup(rd, 1032, &f), 0);
        CU_ASSERT(f.upper < t + 1);
        CU_ASSERT(f.physical_since <= f.since);
        CU_ASSERT_EQUAL(fring_lookup(rd, GID_OBJECTS, &g1), 0);
        CU_ASSERT_EQUAL(g1.upper, t + 1);
        CU_ASSERT_EQUAL(f.upper > g1.upper ? f.upper : g1.upper, t + 1);
        /* The stream carries the change. */
        start = now_ms();
        while (!seen && now_ms() - start < 3000) {
                r = fring_read(rd, recs, ELEMENTSOF(recs), NULL);
                CU_ASSERT_FATAL(r >= 0);
                for (int i = 0; i < r; i++)
                        if (recs[i].id == 1031 && recs[i].upper == t + 1)
                                seen = true;
                if (r == 0)
                        (void)fring_wait(rd, 100);
        }
        CU_ASSERT(seen);
        /* A drop forgets the slot. */
        {
                Coord__DropCollections m = COORD__DROP_COLLECTIONS__INIT;
                uint64_t gids[] = { 1032, 9999 };       /* a missing one is fine */

                m.gids = gids;
                m.n_gids = 2;
                expect_ok(request(g_fd, COORD__MSG_TYPE__MSG_DROP_COLLECTIONS, &m.base));
        }
        CU_ASSERT_EQUAL(fring_lookup(rd, 1032, &f), -ENOENT);
        fring_reader_free(rd);
}

static void test_drop(void)
{
        const uint64_t gids[] = { GID_OBJECTS, GID_FRONTIERS, 1043, 1044 };
        const int kinds[] = { COORD__COLLECTION_KIND__COLLECTION_BUILTIN,
                              COORD__COLLECTION_KIND__COLLECTION_BUILTIN,
                              COORD__COLLECTION_KIND__COLLECTION_TABLE,
                              COORD__COLLECTION_KIND__COLLECTION_TABLE };
        uint64_t t, s1043, s1044, gone = 1041;
        char want[256];
        struct plan p;

        /* Its own tables: 1041 dropped here, 1042 and 1043 there for complete. */
        (void)table_with(1041, "1:a");
        (void)table_with(1042, "1:a");
        (void)table_with(1043, "1:old");
        expect_ok(drop_gids(g_fd, &gone, 1));
        expect_error(peek_table(g_fd, 1041, g_ts, 0), "42P01", "collection 1041 does not exist");
        /* complete: every table not listed (1042, 1043, any other case's) goes;
         * built-ins stay. */
        ensure(g_fd, gids, kinds, 2, g_ts, true);       /* builtins only listed... */
        CU_ASSERT(!frontiers_of(g_fd, 1043, NULL, NULL));
        CU_ASSERT_EQUAL(tables_listed(g_fd), 0);
        CU_ASSERT(frontiers_of(g_fd, GID_OBJECTS, NULL, NULL));
        CU_ASSERT(frontiers_of(g_fd, GID_FRONTIERS, NULL, NULL));
        ensure(g_fd, gids, kinds, 4, g_ts, true);       /* ...then recreated */
        CU_ASSERT(frontiers_of(g_fd, 1043, &s1043, NULL));
        CU_ASSERT(frontiers_of(g_fd, 1044, &s1044, NULL));
        CU_ASSERT(!frontiers_of(g_fd, 1042, NULL, NULL));
        CU_ASSERT_EQUAL(tables_listed(g_fd), 2);
        t = tick(10);
        append_ok(g_fd, t, 1043, "1:new", 1);
        expect_table(g_fd, 1043, t, "(1,'new')");
        /* coord_frontiers dropped the rows of the dropped tables; the recreated 1044 was
         * not written: stored upper = since, its upper is row 0's. */
        snprintf(want, sizeof(want), "(0,0,%" PRIu64 ");(1043,%" PRIu64 ",%" PRIu64 ");(1044,%" PRIu64
                 ",%" PRIu64 ")", t + 1, s1043, t + 1, s1044, s1044);
        expect_result(recv_for(g_fd, peek_send(g_fd, plan_build(&p, GID_FRONTIERS, 3, 0, 0, false),
                                               t, 0), TIMEOUT_MS), want);
        /* Peeks parked on a collection fail when it is dropped. */
        {
                Coord__DropCollections m = COORD__DROP_COLLECTIONS__INIT;
                uint64_t gid = 1044, rid;

                rid = peek_send(g_fd, plan_build(&p, 1044, 2, 0, 0, false), t + 100, 5000);
                m.gids = &gid;
                m.n_gids = 1;
                expect_ok(request(g_fd, COORD__MSG_TYPE__MSG_DROP_COLLECTIONS, &m.base));
                expect_error(recv_for(g_fd, rid, TIMEOUT_MS), "42P01", "1044");
        }
}

/* ---- Group commit and the output gate (controller-server-out.c NOTE 16) --------- */

static void touch(const char *path)
{
        int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);

        CU_ASSERT_FATAL(fd >= 0);
        close(fd);
}

/* Nothing arrives on fd for ms milliseconds (and nothing is stashed). */
static bool quiet_for(int fd, int ms)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };

        for (size_t i = 0; i < ELEMENTSOF(stash); i++)
                if (stash[i])
                        return false;
        return poll(&p, 1, ms) == 0;
}

static uint64_t ring_upper(struct fring_reader *rd, uint64_t gid)
{
        struct fring_frontier f;

        CU_ASSERT_EQUAL_FATAL(fring_lookup(rd, gid, &f), 0);
        return f.upper;
}

/* While the syncer is held, an append is written (later requests see it) but its Ok,
 * its ring uppers and every reply after it -- a peek of old data included -- wait;
 * once the sync is let go they all arrive, in request order, and one sync covered
 * every append written meanwhile.  Fails if anything is sent before its sync. */
static void test_sync_held(void)
{
        struct fring_reader *rd = NULL;
        uint64_t t0, t1, t2, t3, rids[4], syncs0, appends0, syncs1, appends1;
        Coord__Envelope *env;
        struct plan p;

        ensure_tables(g_fd, g_ts, 1, (uint64_t)1010);
        t0 = tick(10);
        append_ok(g_fd, t0, 1010, "1:a", 1);
        CU_ASSERT_EQUAL_FATAL(fring_attach(ring_name, &rd), 0);
        CU_ASSERT_EQUAL(ring_upper(rd, 1010), t0 + 1);
        CU_ASSERT_EQUAL(ring_upper(rd, GID_OBJECTS), t0 + 1);
        syncs0 = status_value("syncs");
        appends0 = status_value("unsynced_appends");
        CU_ASSERT(syncs0 != UINT64_MAX && appends0 != UINT64_MAX);

        touch(hold_path);
        t1 = tick(10);
        rids[0] = append_send(g_fd, t1, 1010, "2:b");
        rids[1] = peek_send(g_fd, plan_build(&p, 1010, 2, 0, 0, false), t0, 1000);
        t2 = tick(10);
        rids[2] = append_send(g_fd, t2, 1010, "3:c");
        t3 = tick(10);
        rids[3] = append_send(g_fd, t3, 0, "");
        /* No Ok, no peek answer, no ring advance while the sync is held. */
        CU_ASSERT(quiet_for(g_fd, 300));
        CU_ASSERT_EQUAL(ring_upper(rd, 1010), t0 + 1);
        CU_ASSERT_EQUAL(ring_upper(rd, GID_OBJECTS), t0 + 1);
        CU_ASSERT_EQUAL(status_value("syncs"), syncs0);
        CU_ASSERT_EQUAL(status_value("unsynced_appends"), appends0 + 3);
        CU_ASSERT(status_value("held") >= 4);

        unlink(hold_path);
        /* Everything, in request order (controller-server.c NOTE 1): Ok, the peek, Ok, Ok. */
        for (size_t i = 0; i < ELEMENTSOF(rids); i++) {
                env = NULL;
                CU_ASSERT_EQUAL_FATAL(ipc_sync_recv(g_fd, IPC_MAX_FRAME_DEFAULT, TIMEOUT_MS, &env), 0);
                CU_ASSERT_EQUAL(env->request_id, rids[i]);
                if (i == 1)
                        expect_result(env, "(1,'a')");
                else
                        expect_ok(env);
        }
        /* The ring records were released before the Oks made after them. */
        CU_ASSERT_EQUAL(ring_upper(rd, 1010), t2 + 1);
        CU_ASSERT_EQUAL(ring_upper(rd, GID_OBJECTS), t3 + 1);
        syncs1 = status_value("syncs");
        appends1 = status_value("unsynced_appends");
        /* Group commit: the three appends took fewer syncs than appends. */
        CU_ASSERT_EQUAL(appends1 - appends0, 3);
        CU_ASSERT(syncs1 - syncs0 >= 1 && syncs1 - syncs0 < 3);
        CU_ASSERT_EQUAL(status_value("held"), 0);
        expect_table(g_fd, 1010, t3, "(1,'a');(2,'b');(3,'c')");
        fring_reader_free(rd);
}

/* kill -9 while a sync is held: the append was never acknowledged and its upper never
 * shown; after the restart every acknowledged append is there, nothing shown regressed,
 * and the unacknowledged one is there or not (the page cache kept its WAL record). */
static void test_sync_kill9(void)
{
        struct fring_reader *rd = NULL;
        uint64_t t, shown, upper;
        bool kept;

        (void)table_with(1018, "1:a,2:b,3:c");
        CU_ASSERT_EQUAL_FATAL(fring_attach(ring_name, &rd), 0);
        shown = ring_upper(rd, GID_OBJECTS);
        touch(hold_path);
        t = tick(10);
        (void)append_send(g_fd, t, 1018, "4:unacked");
        CU_ASSERT(quiet_for(g_fd, 200));
        CU_ASSERT_EQUAL(ring_upper(rd, GID_OBJECTS), shown);
        fring_reader_free(rd);

        CU_ASSERT_EQUAL(controller_stop(SIGKILL), 128 + SIGKILL);
        close(g_fd);
        unlink(hold_path);
        CU_ASSERT_EQUAL_FATAL(controller_start(), 0);
        g_fd = conn_open();
        CU_ASSERT_FATAL(g_fd >= 0);
        CU_ASSERT(frontiers_of(g_fd, GID_OBJECTS, NULL, &upper));
        CU_ASSERT(upper >= shown);
        CU_ASSERT(upper == shown || upper == t + 1);
        expect_table(g_fd, 1018, shown - 1, "(1,'a');(2,'b');(3,'c')");
        kept = upper == t + 1;
        if (kept)
                expect_table(g_fd, 1018, t, "(1,'a');(2,'b');(3,'c');(4,'unacked')");
        g_ts = tick(10);
        append_ok(g_fd, g_ts, 1018, "5:after", 1);
        expect_table(g_fd, 1018, g_ts, kept ? "(1,'a');(2,'b');(3,'c');(4,'unacked');(5,'after')" :
                                              "(1,'a');(2,'b');(3,'c');(5,'after')");
}

/* A failed sync (injected): the held Ok becomes 58030, the controller reopens its
 * storage, and it serves on from what recovery shows. */
static void test_sync_failure(void)
{
        uint64_t t, rid, upper, before, held_failed;

        (void)table_with(1019, "1:a");
        CU_ASSERT(frontiers_of(g_fd, GID_OBJECTS, NULL, &before));
        held_failed = status_value("held_failed");
        touch(hold_path);
        touch(fail_path);
        t = tick(10);
        rid = append_send(g_fd, t, 1019, "6:failed");
        CU_ASSERT(quiet_for(g_fd, 200));
        unlink(hold_path);
        expect_error(recv_for(g_fd, rid, TIMEOUT_MS), "58030", "durable");
        CU_ASSERT(access(fail_path, F_OK) != 0);
        /* Reopened and serving; nothing acknowledged went back. */
        CU_ASSERT(frontiers_of(g_fd, GID_OBJECTS, NULL, &upper));
        CU_ASSERT(upper == before || upper == t + 1);
        g_ts = tick(10);
        append_ok(g_fd, g_ts, 1019, "7:later", 1);
        expect_table(g_fd, 1019, g_ts, upper == t + 1 ? "(1,'a');(6,'failed');(7,'later')" :
                                                        "(1,'a');(7,'later')");
        CU_ASSERT_EQUAL(status_value("held_failed"), held_failed + 1);
        {
                Coord__StatusReply *st = NULL;

                CU_ASSERT_EQUAL_FATAL(node_query_status(run_dir, COORD__ROLE__ROLE_CONTROLLER, 1000, &st), 0);
                CU_ASSERT_PTR_NOT_NULL(strstr(st->detail, "storage=ok"));
                coord__status_reply__free_unpacked(st, NULL);
        }
}

/* A clean restart with --append-sync=mode, and a new connection. */
static void restart_with(const char *mode)
{
        close(g_fd);
        CU_ASSERT_EQUAL(controller_stop(SIGTERM), 0);
        g_append_sync = mode;
        CU_ASSERT_EQUAL_FATAL(controller_start(), 0);
        g_fd = conn_open();
        CU_ASSERT_FATAL(g_fd >= 0);
}

/* --append-sync=loop, the path before group commit: every append synced on the loop,
 * nothing held, no syncer. */
static void test_sync_loop_mode(void)
{
        Coord__StatusReply *st = NULL;
        uint64_t t;

        /* What the thread mode acknowledged is there after the clean restart. */
        (void)table_with(1020, "1:a,2:b");
        restart_with("loop");
        touch(hold_path);               /* no syncer: holds nothing */
        t = tick(10);
        append_ok(g_fd, t, 1020, "8:loop", 1);
        unlink(hold_path);
        CU_ASSERT_EQUAL(status_value("syncs"), 0);
        CU_ASSERT_EQUAL(status_value("unsynced_appends"), 0);
        CU_ASSERT_EQUAL_FATAL(node_query_status(run_dir, COORD__ROLE__ROLE_CONTROLLER, 1000, &st), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(st->detail, "append_sync=loop"));
        coord__status_reply__free_unpacked(st, NULL);
        expect_table(g_fd, 1020, t, "(1,'a');(2,'b');(8,'loop')");

        restart_with("thread");
}

/* gid's read_frontier in coord_frontiers at ts; UINT64_MAX without a row. */
static uint64_t fr_read_frontier(uint64_t gid, uint64_t ts)
{
        Coord__PeekResult *res;
        Coord__Envelope *env;
        uint64_t v = UINT64_MAX;
        struct plan p;

        env = recv_for(g_fd, peek_send(g_fd, plan_build(&p, GID_FRONTIERS, 3, COORD__PLAN__FUNC__FUNC_EQ,
                                                        (int64_t)gid, false), ts, 1000), TIMEOUT_MS);
        CU_ASSERT_FATAL(env && env->type == COORD__MSG_TYPE__MSG_PEEK_RESULT);
        res = coord__peek_result__unpack(NULL, env->payload.len, env->payload.data);
        CU_ASSERT_PTR_NOT_NULL_FATAL(res);
        if (res->n_rows == 1) {
                struct row_datum d[3];

                CU_ASSERT_EQUAL_FATAL(row_decode(res->rows[0].data, res->rows[0].len, d, 3), 3);
                v = (uint64_t)d[1].i;
        }
        coord__peek_result__free_unpacked(res, NULL);
        coord__envelope__free_unpacked(env, NULL);
        return v;
}

/* controller-server-append.c note 4a: 300 tables created (their rows of coord_frontiers
 * wait for the next append), then two appends: the first inserts 256 of the rows (this
 * test's controller), the second the other 44.  controller-server-compact.c note 14a:
 * a permission for them all is applied a slice per loop turn (2 here): every since gets
 * where it is allowed, in many turns, and the queue empties. */
static void test_allow_slices(void)
{
        enum { N = 300, ROWS = 256 };
        Coord__AllowCompaction m = COORD__ALLOW_COMPACTION__INIT;
        static Coord__CatalogBoundRecord b[N], *bp[N];
        static uint64_t gids[N];
        int kinds[16];
        uint64_t born = g_ts, written, slices0, since = 0, start;
        size_t done = 0, shown = 0;

        for (size_t i = 0; i < N; i++)
                gids[i] = 3000 + i;
        for (size_t i = 0; i < 16; i++)
                kinds[i] = COORD__COLLECTION_KIND__COLLECTION_TABLE;
        for (size_t i = 0; i < N; i += 16)
                ensure(g_fd, &gids[i], kinds, i + 16 <= N ? 16 : N - i, born, false);
        append_ok(g_fd, tick(10), 0, "", 0);
        CU_ASSERT_EQUAL(status_value("last_append_frontier_rows"), ROWS + 2);
        append_ok(g_fd, tick(10), 0, "", 0);
        CU_ASSERT_EQUAL(status_value("last_append_frontier_rows"), N - ROWS + 2);
        for (size_t i = 0; i < N; i++)
                shown += fr_read_frontier(gids[i], g_ts) == born;
        CU_ASSERT_EQUAL(shown, N);

        written = tick(10);
        append_touch(g_fd, written, gids, N);   /* written: their rows not capped */
        append_ok(g_fd, tick(1000), 0, "", 0);
        slices0 = status_value("allow_slices");
        for (size_t i = 0; i < N; i++) {
                b[i] = (Coord__CatalogBoundRecord)COORD__CATALOG_BOUND_RECORD__INIT;
                b[i].gid = gids[i];
                b[i].bound = written;           /* a written table's since stops there */
                bp[i] = &b[i];
        }
        m.sinces = bp;
        m.n_sinces = N;
        expect_ok(request(g_fd, COORD__MSG_TYPE__MSG_ALLOW_COMPACTION, &m.base));
        start = now_ms();
        while (done < N && now_ms() - start < 5000) {
                for (done = 0; done < N; done++)
                        if (!frontiers_of(g_fd, gids[done], &since, NULL) || since != written)
                                break;
                if (done < N)
                        usleep(10000);
        }
        CU_ASSERT_EQUAL(done, N);
        CU_ASSERT(status_value("allow_slices") - slices0 >= N / 2);
        CU_ASSERT_EQUAL(status_value("allow_queued"), 0);
}

static void test_stop(void)
{
        Coord__StatusReply *s = NULL;

        CU_ASSERT_EQUAL(node_query_status(run_dir, COORD__ROLE__ROLE_CONTROLLER, 1000, &s), 0);
        if (s) {
                CU_ASSERT_PTR_NOT_NULL(strstr(s->detail, "storage=ok"));
                CU_ASSERT(s->ring_generation == s->incarnation);
                coord__status_reply__free_unpacked(s, NULL);
        }
        close(g_fd);
        g_fd = -1;
        CU_ASSERT_EQUAL(controller_stop(SIGTERM), 0);
}

static const struct t_case cases[] = {
        { "start: builtins ensured, idempotently", test_start },
        { "ensure + append + peek at several timestamps", test_round_trip },
        { "delete_filter retracts exactly the matching rows", test_delete },
        { "an update retracts the old rows and inserts the new", test_update },
        { "an insert-select inserts what its plan reads, atomically", test_insert_select },
        { "several writes in one append; diffs; bad retractions", test_mixed_group },
        { "below since: 55000; built-ins compacted only as permitted", test_below_since },
        { "peek at ts >= upper waits for the append, or times out (57014)", test_peek_waits },
        { "coord_frontiers shows every table's frontiers at a ts", test_frontiers_relation },
        { "appends touch what they write; tables follow the shared frontier", test_shared_frontier },
        { "built-in retractions checked against kept row counts", test_builtin_retractions },
        { "bad requests: error reply, nothing written, still serving", test_bad_requests },
        { "a replaced connection's parked peeks are dropped", test_reconnect },
        { "kill -9: acknowledged appends survive, uppers do not regress", test_kill9 },
        { "writer mark: kept with coord_objects, durably; listing some gids", test_writer_mark },
        { "frontier ring follows appends and drops", test_ring },
        { "drop and complete ensure", test_drop },
        { "group commit: nothing shown before its sync, in order", test_sync_held },
        { "group commit: kill -9 while a sync is held", test_sync_kill9 },
        { "group commit: a failed sync answers the held Ok with 58030", test_sync_failure },
        { "--append-sync=loop: synced on the loop, nothing held", test_sync_loop_mode },
        { "a streamed peek holds its input's since at its ts until it ends", test_peek_holds },
        { "a permission of many collections is applied in slices", test_allow_slices },
        { "status and clean stop", test_stop },
        { NULL, NULL },
};

int main(void)
{
        int r;

        build_dir = getenv("COORD_BUILD");
        if (!build_dir) {
                fprintf(stderr, "COORD_BUILD must be set (meson test does)\n");
                return T_EXIT_ERROR;
        }
        signal(SIGPIPE, SIG_IGN);
        snprintf(instance, sizeof(instance), "tctl%d", (int)getpid());
        home = t_mkdtemp("controller");
        if (!home || asprintf(&run_dir, "%s/run", home) < 0 || asprintf(&data_dir, "%s/data", home) < 0 ||
            asprintf(&log_path, "%s/controller.log", home) < 0 ||
            asprintf(&hold_path, "%s/sync-hold", home) < 0 ||
            asprintf(&fail_path, "%s/sync-hold-fail", home) < 0 ||
            fring_name(instance, ring_name, sizeof(ring_name)) < 0)
                return T_EXIT_ERROR;
        sock_path = node_socket_path(run_dir, COORD__ROLE__ROLE_CONTROLLER);
        if (!sock_path)
                return T_EXIT_ERROR;
        r = t_run_opts((const struct t_suite[]){ { "controller", cases }, { NULL, NULL } }, T_RUN_FIXTURES);
        if (ctl_pid > 0)
                controller_stop(SIGKILL);
        (void)fring_unlink(ring_name);
        if (r == T_EXIT_PASS)
                t_rmrf(home);
        else
                fprintf(stderr, "controller log kept in %s\n", log_path);
        for (size_t i = 0; i < ELEMENTSOF(stash); i++)
                if (stash[i])
                        coord__envelope__free_unpacked(stash[i], NULL);
        free(run_dir);
        free(data_dir);
        free(log_path);
        free(hold_path);
        free(fail_path);
        free(sock_path);
        free(home);
        return r;
}
