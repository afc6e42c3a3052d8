/* test-fleet -- a fleet of lifecycle followers on one catalog (issue 33 items 1 and 5):
 * tools/coord up --followers 3, the duty lease (lifecycle-duty.c note 7), its fences in
 * the controller (controller-server-fence.c note 1) and the adapter.
 *
 *   up                 three followers: exactly one holds the duty lease and is active,
 *                      the two others are standbys (they were told BUSY).
 *   works              DDL, INSERT and a materialized view through the holder; its
 *                      publications move the table's bound.
 *                      coordctl status: a row per follower with its duty (JSON "followers").
 *   sigstop_holder     COORD_FLEET_ROUNDS times (default 2): the holder SIGSTOPped, DDL
 *                      and INSERTs meanwhile; another follower claims the lapsed lease
 *                      (epoch + 1) and enacts them; the stopped one, resumed, counts the
 *                      lease lost by its own clock, becomes a standby and changes nothing:
 *                      still one active follower, the lease's epoch unchanged.
 *   fenced_messages    a follower of an older epoch, on raw connections: the controller
 *                      refuses its DropCollections and AllowCompaction (55000) and the
 *                      table keeps its rows; the adapter refuses its publication (55000).
 *   kill9_holder       kill -9 of the holder: another takes over, DDL goes on; the killed
 *                      one, restarted, is a standby.
 *   restart_supersedes the holder killed and restarted at once takes the duty back
 *                      (epoch + 1) before its old lease could have lapsed.
 *   refresh_once       a view with three REFRESH AT times: the followers race for each
 *                      refresh's lease (BUSY for the losers); the lease's version ends at 3
 *                      -- each refresh committed once, none skipped -- and stays there.
 *   refresh_sigstop    per round, a new view: the follower holding a refresh's lease (held between claim and
 *                      release by --test-refresh-hold-ms) SIGSTOPped: another claims the
 *                      lapsed lease at a higher epoch, releases and commits the refresh;
 *                      the stopped one, resumed, releases with its old epoch and is
 *                      refused (controller refresh_fenced, its own refresh_fenced); the
 *                      view's two refreshes are committed once each.
 *   refresh_kill_commit the adapter killed by its killpoint right after a refresh's
 *                      commit is durable, before its answer: the follower sends the same
 *                      commit again to the restarted adapter (P5, retried) and the
 *                      refresh is committed exactly once (version 1).
 *   refresh_last_reconciled  the holder of a schedule's last refresh killed (kill point
 *                      refresh.before_commit) after the controller wrote it, before
 *                      its commit: another follower commits it (version 1).
 *   refresh_many       50 views refreshed every second: each has 3 refreshes or more
 *                      6 s later (LC_REFRESH_JOBS jobs per follower; the fleet without
 *                      the refresh hold meanwhile).
 *   check              coordctl check matches (I10).
 *
 * COORD_FLEET_FOLLOWERS (default 3, 2-16), COORD_FLEET_ROUNDS (sigstop_holder, default 2)
 * and COORD_FLEET_REFRESH_ROUNDS (refresh_sigstop, default 1) make the long runs;
 * COORD_FLEET_TTL_MS (default 4000) shortens them (the hold is a quarter of it).
 */
#include <inttypes.h>
#include <signal.h>
#include <time.h>

#include "ipc/ipc.h"
#include "itest.h"
#include "itest-spawn.h"

static unsigned followers = 3;  /* COORD_FLEET_FOLLOWERS (2-16) */
static unsigned ttl_ms = 4000;   /* --duty-ttl-ms, COORD_FLEET_TTL_MS (1000-60000) */
#define TTL_MS          ttl_ms
#define RENEW_MS        (TTL_MS / 4)    /* lifecycle-duty.c */
#define TAKEOVER_MAX_MS (2 * TTL_MS + 3000)

#define HOLD_MS         (TTL_MS / 4)    /* --test-refresh-hold-ms */
#define SECOND_MS       (2 * TTL_MS + 1000)     /* refresh_sigstop's second refresh */

/* The fleet up, each refresh held hold_ms between its claim and its release (0: not
 * held). */
static int fleet_up_hold(unsigned hold_ms)
{
        return t_sh("COORD_LIFECYCLE_ARGS='--duty-ttl-ms %u --test-refresh-hold-ms %u' %s up --followers %u "
                    ">/dev/null", TTL_MS, hold_ms, coord_cmd, followers);
}

static int fleet_up(void)
{
        return fleet_up_hold(HOLD_MS);
}

static uint64_t mono_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static Coord__StatusReply *follower_status(unsigned k)
{
        char *path = node_socket_path_id(run_dir, COORD__ROLE__ROLE_LIFECYCLE, k);
        Coord__StatusReply *s = NULL;

        if (!path || node_query_status_path(path, 2000, &s) < 0)
                s = NULL;
        free(path);
        return s;
}

/* A word of follower k's status detail ("duty=active"): its value, or "" */
static bool follower_says(unsigned k, const char *key, const char *value)
{
        Coord__StatusReply *s = follower_status(k);
        char pat[96];
        bool yes;

        if (!s)
                return false;
        snprintf(pat, sizeof(pat), " %s=%s ", key, value);
        yes = s->detail && strstr(s->detail, pat);
        coord__status_reply__free_unpacked(s, NULL);
        return yes;
}

static uint64_t follower_stat(unsigned k, const char *key)
{
        char *path = node_socket_path_id(run_dir, COORD__ROLE__ROLE_LIFECYCLE, k);
        uint64_t v = path ? stat_at(path, key) : 0;

        free(path);
        return v;
}

static pid_t follower_pid(unsigned k)
{
        Coord__StatusReply *s = follower_status(k);
        pid_t pid = -1;

        if (s) {
                pid = s->pid;
                coord__status_reply__free_unpacked(s, NULL);
        }
        return pid;
}

static unsigned active_count(void)
{
        unsigned n = 0;

        for (unsigned k = 0; k < followers; k++)
                n += follower_says(k, "duty", "active");
        return n;
}

/* The live holder of the duty lease (its instance id) and its epoch; -1 when none. */
static int holder(PGconn *c, uint64_t *epoch)
{
        PGresult *r = PQexec(c, "SELECT holder, epoch FROM coord_leases WHERE key = 'lifecycle/duty' AND live");
        int k = -1;

        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
            sscanf(PQgetvalue(r, 0, 0), "lifecycle-%d", &k) == 1)
                *epoch = strtoull(PQgetvalue(r, 0, 1), NULL, 10);
        else
                k = -1;
        PQclear(r);
        return k;
}

/* Wait until a follower of an epoch above `above` is active; its id, or -1. */
static int wait_active_above(PGconn *c, uint64_t above, unsigned timeout_ms, uint64_t *epoch)
{
        for (uint64_t end = mono_ms() + timeout_ms; mono_ms() < end; sleep_ms(20)) {
                int k = holder(c, epoch);

                if (k >= 0 && *epoch > above && follower_says((unsigned)k, "duty", "active"))
                        return k;
        }
        return -1;
}

/* Send sig to the holder of the duty: its id (the case ends if there is none), its
 * epoch and pid; after SIGKILL, once the process is gone. */
static int signal_holder(PGconn *c, int sig, uint64_t *epoch, pid_t *pid)
{
        int h = holder(c, epoch);

        CU_ASSERT_FATAL(h >= 0);
        *pid = follower_pid((unsigned)h);
        CU_ASSERT_FATAL(*pid > 0 && kill(*pid, sig) == 0);
        if (sig == SIGKILL)
                CU_ASSERT_FATAL(t_wait_for_every(kill(*pid, 0) != 0, 10000, 1));
        return h;
}

static void test_up(void)
{
        PGconn *c;
        uint64_t e = 0;
        int h;

        CU_ASSERT_EQUAL_FATAL(fleet_up(), 0);
        c = db();
        CU_ASSERT_FATAL(c != NULL);
        h = wait_active_above(c, 0, 10000, &e);
        CU_ASSERT_FATAL(h >= 0);
        CU_ASSERT_EQUAL(active_count(), 1);
        for (unsigned k = 0; k < followers; k++) {
                if ((int)k == h)
                        continue;
                /* A standby asked and was told BUSY, naming the holder. */
                for (int w = 0; w < 200 && follower_stat(k, "duty_busy") == 0; w++)
                        sleep_ms(10);
                CU_ASSERT(follower_says(k, "duty", "standby"));
                CU_ASSERT(follower_stat(k, "duty_busy") > 0);
        }
        PQfinish(c);
}

/* Publications of follower k pass n more times (up to timeout_ms). */
static bool k_publications_pass(unsigned k, uint64_t n, unsigned timeout_ms)
{
        uint64_t want = follower_stat(k, "publications") + n;

        for (unsigned w = 0; w < timeout_ms / 10; w++, sleep_ms(10))
                if (follower_stat(k, "publications") >= want)
                        return true;
        return false;
}

static void test_works(void)
{
        PGconn *c = db();
        uint64_t e = 0, b0, b1;
        int h;

        CU_ASSERT_FATAL(c != NULL);
        h = holder(c, &e);
        CU_ASSERT_FATAL(h >= 0);
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE ft (v int)"));
        CU_ASSERT(ok(c, "INSERT INTO ft VALUES (1), (2), (3)"));
        CU_ASSERT_FATAL(ok(c, "CREATE MATERIALIZED VIEW fm AS SELECT count(*) AS n, sum(v) AS s FROM ft"));
        CU_ASSERT(rows_become(c, "SELECT n, s FROM fm", "3|6", 10000));
        CU_ASSERT(k_publications_pass((unsigned)h, 1, 10000));
        b0 = q_u64(c, "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, gid_of(c, "ft"));
        CU_ASSERT(ok(c, "INSERT INTO ft VALUES (4)"));
        CU_ASSERT(k_publications_pass((unsigned)h, 2, 10000));
        b1 = q_u64(c, "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, gid_of(c, "ft"));
        CU_ASSERT(b1 > b0);
        /* coordctl status: a row per follower, the holder's "duty active", the others'
         * "duty standby"; JSON "followers" with their instance ids. */
        CU_ASSERT_EQUAL(t_sh("%s status --rate-ms 0 | grep -c '^lifecycle.* duty active ' | grep -qx 1", coord_cmd), 0);
        CU_ASSERT_EQUAL(t_sh("%s status --rate-ms 0 | grep -c '^lifecycle.* duty standby ' | grep -qx %u", coord_cmd,
                             followers - 1), 0);
        CU_ASSERT_EQUAL(t_sh("%s status --rate-ms 0 | grep -q '^lifecycle-%u '", coord_cmd, followers - 1), 0);
        CU_ASSERT_EQUAL(t_sh("%s status --rate-ms 0 --json | python3 -c 'import json,sys; "
                             "d=json.load(sys.stdin); sys.exit(sorted(f[\"instance_id\"] for f in d[\"followers\"]) "
                             "!= list(range(1, %u)))'", coord_cmd, followers), 0);
        PQfinish(c);
}

static void test_sigstop_holder(void)
{
        const char *env = getenv("COORD_FLEET_ROUNDS");
        int rounds = env ? atoi(env) : 2;
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        for (int i = 0; i < rounds; i++) {
                uint64_t e = 0, e2 = 0, e3 = 0, t0 = mono_ms(), busy;
                pid_t pid;
                int h = signal_holder(c, SIGSTOP, &e, &pid), h2;

                /* DDL while the holder is stopped: enacted by whoever takes over. */
                CU_ASSERT(okf(c, "CREATE TABLE fs%d (v int)", i));
                CU_ASSERT(okf(c, "INSERT INTO fs%d VALUES (%d)", i, i));
                h2 = wait_active_above(c, e, TAKEOVER_MAX_MS, &e2);
                printf("\n    round %d: holder %d stopped, %d took over at epoch %" PRIu64 " after %" PRIu64 " ms",
                       i, h, h2, e2, mono_ms() - t0);
                CU_ASSERT(h2 >= 0 && h2 != h);
                CU_ASSERT_EQUAL(e2, e + 1);
                {
                        char *q, want[16];

                        CU_ASSERT(asprintf(&q, "SELECT v FROM fs%d", i) > 0);
                        snprintf(want, sizeof(want), "%d", i);
                        CU_ASSERT(rows_become(c, q, want, 10000));
                        free(q);
                }
                CU_ASSERT(k_publications_pass((unsigned)h2, 1, 10000));
                CU_ASSERT_FATAL(kill(pid, SIGCONT) == 0);
                /* The resumed one finds its lease lost by its own clock: a standby. */
                for (int w = 0; w < 300 && !follower_says((unsigned)h, "duty", "standby"); w++)
                        sleep_ms(10);
                CU_ASSERT(follower_says((unsigned)h, "duty", "standby"));
                CU_ASSERT(follower_stat((unsigned)h, "duty_lost") >= 1);
                /* By its own clock (lifecycle_duty_active()), before any renewal could
                 * be answered FENCED: nothing it built after its deadline went out. */
                CU_ASSERT_EQUAL(follower_stat((unsigned)h, "duty_fenced"), 0);
                /* Its next claim is answered (not OK: duty_busy counts it). */
                busy = follower_stat((unsigned)h, "duty_busy");
                CU_ASSERT(t_wait_for(follower_stat((unsigned)h, "duty_busy") > busy, RENEW_MS + 5000));
                CU_ASSERT_EQUAL(holder(c, &e3), h2);
                CU_ASSERT_EQUAL(e3, e2);
                CU_ASSERT_EQUAL(active_count(), 1);
                CU_ASSERT(okf(c, "INSERT INTO fs%d VALUES (%d)", i, i + 100));
        }
        PQfinish(c);
}

/* A raw connection to role's socket as lifecycle follower `id` (incarnation 1), after
 * the Hello exchange; -1 on failure. */
static int raw_follower(Coord__Role to, unsigned id)
{
        Coord__Hello hello = COORD__HELLO__INIT;
        Coord__Envelope env = COORD__ENVELOPE__INIT, *e = NULL;
        char *sock = node_socket_path(run_dir, to);
        uint8_t buf[128];
        int fd = sock ? ipc_sync_connect(sock) : -1;

        free(sock);
        if (fd < 0)
                return -1;
        hello.role = COORD__ROLE__ROLE_LIFECYCLE;
        hello.incarnation = 1;
        hello.pid = getpid();
        hello.instance = (char *)"fleet-test";
        hello.instance_id = id;
        env.type = COORD__MSG_TYPE__MSG_HELLO;
        env.sender = COORD__ROLE__ROLE_LIFECYCLE;
        env.incarnation = 1;
        env.payload.len = coord__hello__pack(&hello, buf);
        env.payload.data = buf;
        if (ipc_sync_send(fd, &env, IPC_MAX_FRAME_DEFAULT) < 0 ||
            ipc_sync_recv(fd, IPC_MAX_FRAME_DEFAULT, 5000, &e) < 0 || e->type != COORD__MSG_TYPE__MSG_HELLO) {
                if (e)
                        coord__envelope__free_unpacked(e, NULL);
                close(fd);
                return -1;
        }
        coord__envelope__free_unpacked(e, NULL);
        return fd;
}

/* Send payload with the fence; the answer's SQLSTATE ("" for an Ok). */
static void raw_call(int fd, Coord__MsgType type, uint64_t fence, const ProtobufCMessage *m, char *state,
                     size_t size)
{
        Coord__Envelope env = COORD__ENVELOPE__INIT, *e = NULL;
        uint8_t *buf = malloc(protobuf_c_message_get_packed_size(m) + 1);

        snprintf(state, size, "none");
        env.type = type;
        env.sender = COORD__ROLE__ROLE_LIFECYCLE;
        env.incarnation = 1;
        env.request_id = 77;
        env.fence = fence;
        env.payload.len = protobuf_c_message_pack(m, buf);
        env.payload.data = buf;
        if (ipc_sync_send(fd, &env, IPC_MAX_FRAME_DEFAULT) == 0 &&
            ipc_sync_recv(fd, IPC_MAX_FRAME_DEFAULT, 5000, &e) == 0) {
                if (e->type == COORD__MSG_TYPE__MSG_ERROR) {
                        Coord__Error *err = coord__error__unpack(NULL, e->payload.len, e->payload.data);
                        snprintf(state, size, "%s", err && err->sqlstate ? err->sqlstate : "?");
                        if (err)
                                coord__error__free_unpacked(err, NULL);
                } else {
                        snprintf(state, size, "%s", "");
                }
                coord__envelope__free_unpacked(e, NULL);
        }
        free(buf);
}

/* The duty lease past its first epoch, a takeover behind it (as after
 * test_sigstop_holder()): made here when no case before did (tools/test-alone). */
static void duty_taken_over(PGconn *c)
{
        uint64_t e = 0, e2 = 0;
        pid_t pid;

        CU_ASSERT_FATAL(holder(c, &e) >= 0);
        if (e >= 2)
                return;
        (void)signal_holder(c, SIGKILL, &e, &pid);
        CU_ASSERT_FATAL(wait_active_above(c, e, TAKEOVER_MAX_MS, &e2) >= 0);
        CU_ASSERT_EQUAL_FATAL(fleet_up(), 0);
        CU_ASSERT(t_wait_for(stat_of(COORD__ROLE__ROLE_CONTROLLER, "duty_fence") == e2, 10000));
}

static void test_fenced_messages(void)
{
        PGconn *c = db();
        uint64_t e = 0, gid, fenced0;
        char state[16];
        int fd;

        CU_ASSERT_FATAL(c != NULL);
        duty_taken_over(c);
        CU_ASSERT_FATAL(holder(c, &e) >= 0 && e >= 2);
        /* a table of its own */
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE ff (v int)"));
        CU_ASSERT(ok(c, "INSERT INTO ff VALUES (1), (2), (3), (4)"));
        gid = gid_of(c, "ff");
        CU_ASSERT_FATAL(gid > 0);
        CU_ASSERT_EQUAL(stat_of(COORD__ROLE__ROLE_CONTROLLER, "duty_fence"), e);
        fenced0 = stat_of(COORD__ROLE__ROLE_CONTROLLER, "duty_fenced");
        fd = raw_follower(COORD__ROLE__ROLE_CONTROLLER, 9);
        CU_ASSERT_FATAL(fd >= 0);
        {
                Coord__DropCollections m = COORD__DROP_COLLECTIONS__INIT;

                m.gids = &gid;
                m.n_gids = 1;
                raw_call(fd, COORD__MSG_TYPE__MSG_DROP_COLLECTIONS, e - 1, &m.base, state, sizeof(state));
                CU_ASSERT_STRING_EQUAL(state, "55000");
                raw_call(fd, COORD__MSG_TYPE__MSG_DROP_COLLECTIONS, 0, &m.base, state, sizeof(state));
                CU_ASSERT_STRING_EQUAL(state, "55000");
        }
        {
                Coord__AllowCompaction m = COORD__ALLOW_COMPACTION__INIT;
                Coord__CatalogBoundRecord b = COORD__CATALOG_BOUND_RECORD__INIT, *bp = &b;

                b.gid = gid;
                b.bound = UINT64_MAX - 1;
                m.sinces = &bp;
                m.n_sinces = 1;
                raw_call(fd, COORD__MSG_TYPE__MSG_ALLOW_COMPACTION, e - 1, &m.base, state, sizeof(state));
                CU_ASSERT_STRING_EQUAL(state, "55000");
        }
        close(fd);
        CU_ASSERT_EQUAL(stat_of(COORD__ROLE__ROLE_CONTROLLER, "duty_fenced"), fenced0 + 3);
        CU_ASSERT_EQUAL(stat_of(COORD__ROLE__ROLE_CONTROLLER, "duty_fence"), e);
        /* The table and its history are intact. */
        CU_ASSERT(rows_are(c, "SELECT v FROM ff", "1;2;3;4"));
        CU_ASSERT(ok(c, "INSERT INTO ff VALUES (5)"));
        CU_ASSERT(rows_are(c, "SELECT v FROM ff", "1;2;3;4;5"));
        /* The adapter: a publication of another epoch than the live one. */
        fd = raw_follower(COORD__ROLE__ROLE_ADAPTER, 9);
        CU_ASSERT_FATAL(fd >= 0);
        {
                Coord__PublishProtection m = COORD__PUBLISH_PROTECTION__INIT;
                Coord__CatalogBoundRecord b = COORD__CATALOG_BOUND_RECORD__INIT, *bp = &b;
                uint64_t pf0 = stat_of(COORD__ROLE__ROLE_ADAPTER, "publications_fenced");

                b.gid = gid;
                b.bound = q_u64(c, "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, gid) + 1;
                m.bounds = &bp;
                m.n_bounds = 1;
                raw_call(fd, COORD__MSG_TYPE__MSG_PUBLISH_PROTECTION, e - 1, &m.base, state, sizeof(state));
                CU_ASSERT_STRING_EQUAL(state, "55000");
                raw_call(fd, COORD__MSG_TYPE__MSG_PUBLISH_PROTECTION, e + 1, &m.base, state, sizeof(state));
                CU_ASSERT_STRING_EQUAL(state, "55000");
                CU_ASSERT_EQUAL(stat_of(COORD__ROLE__ROLE_ADAPTER, "publications_fenced"), pf0 + 2);
        }
        close(fd);
        PQfinish(c);
}

static void test_kill9_holder(void)
{
        PGconn *c = db();
        uint64_t e = 0, e2 = 0, t0;
        pid_t pid;
        int h, h2;

        CU_ASSERT_FATAL(c != NULL);
        t0 = mono_ms();
        h = signal_holder(c, SIGKILL, &e, &pid);
        CU_ASSERT(ok(c, "CREATE TABLE fk (v int)"));
        CU_ASSERT(ok(c, "INSERT INTO fk VALUES (7)"));
        h2 = wait_active_above(c, e, TAKEOVER_MAX_MS, &e2);
        printf("\n    holder %d killed, %d took over at epoch %" PRIu64 " after %" PRIu64 " ms", h, h2, e2,
               mono_ms() - t0);
        CU_ASSERT(h2 >= 0 && h2 != h);
        CU_ASSERT(rows_become(c, "SELECT v FROM fk", "7", 10000));
        CU_ASSERT_EQUAL_FATAL(fleet_up(), 0);
        for (int w = 0; w < 300 && follower_stat((unsigned)h, "duty_busy") == 0; w++)
                sleep_ms(10);
        CU_ASSERT(follower_says((unsigned)h, "duty", "standby"));
        CU_ASSERT_EQUAL(active_count(), 1);
        PQfinish(c);
}

/* Without supersede (lease.c note 4) the restarted holder would wait for its old lease to
 * lapse: at least TTL_MS - RENEW_MS after the kill. */
static void test_restart_supersedes(void)
{
        PGconn *c = db();
        uint64_t e = 0, e2 = 0, t0, took;
        pid_t pid;
        int h, h2;

        CU_ASSERT_FATAL(c != NULL);
        if (TTL_MS < 4000) {
                /* tools/coord up takes 1-2 s: a shorter lease lapses before it is back */
                printf("\n    skipped: COORD_FLEET_TTL_MS %u is below a restart's 4000", TTL_MS);
                PQfinish(c);
                return;
        }
        t0 = mono_ms();
        h = signal_holder(c, SIGKILL, &e, &pid);
        CU_ASSERT_EQUAL_FATAL(fleet_up(), 0);
        h2 = wait_active_above(c, e, TAKEOVER_MAX_MS, &e2);
        took = mono_ms() - t0;
        printf("\n    holder %d killed and restarted: %d active at epoch %" PRIu64 " after %" PRIu64 " ms", h,
               h2, e2, took);
        CU_ASSERT_EQUAL(h2, h);
        CU_ASSERT_EQUAL(e2, e + 1);
        CU_ASSERT(took < TTL_MS - RENEW_MS);
        CU_ASSERT(ok(c, "CREATE TABLE fr (v int)"));
        CU_ASSERT(ok(c, "INSERT INTO fr VALUES (8)"));
        CU_ASSERT(rows_become(c, "SELECT v FROM fr", "8", 10000));
        CU_ASSERT_EQUAL(active_count(), 1);
        PQfinish(c);
}

/* The lease refresh/<gid>: its version (refreshes committed), epoch, holder id (-1 when
 * not held) and whether it is live; false when there is no such lease yet. */
static bool refresh_lease(PGconn *c, uint64_t gid, uint64_t *version, uint64_t *epoch, int *holder_id)
{
        char q[160];
        PGresult *r;
        bool found;

        snprintf(q, sizeof(q), "SELECT version, epoch, holder, live FROM coord_leases WHERE key = 'refresh/%" PRIu64 "'",
                 gid);
        r = PQexec(c, q);
        found = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
        if (found) {
                *version = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
                *epoch = strtoull(PQgetvalue(r, 0, 1), NULL, 10);
                if (strcmp(PQgetvalue(r, 0, 3), "t") != 0 ||
                    sscanf(PQgetvalue(r, 0, 2), "lifecycle-%d", holder_id) != 1)
                        *holder_id = -1;
        }
        PQclear(r);
        return found;
}

/* Wait until the refresh lease's version is at least v (up to timeout_ms). */
static bool refreshes_reach(PGconn *c, uint64_t gid, uint64_t v, unsigned timeout_ms)
{
        uint64_t version = 0, epoch;
        int h;

        for (uint64_t end = mono_ms() + timeout_ms; mono_ms() < end; sleep_ms(20))
                if (refresh_lease(c, gid, &version, &epoch, &h) && version >= v)
                        return true;
        return false;
}

static uint64_t fleet_sum(const char *key)
{
        uint64_t n = 0;

        for (unsigned k = 0; k < followers; k++)
                n += follower_stat(k, key);
        return n;
}

/* Table rt of 1 and 2, which the refresh views read: made by the first refresh case
 * to run (each runs alone too, tools/test-alone). */
static void rt_ready(PGconn *c)
{
        if (q_u64(c, "SELECT count(*) FROM coord_objects WHERE name = 'rt'") > 0)
                return;
        CU_ASSERT_FATAL(ok(c, "CREATE TABLE rt (v int)"));
        CU_ASSERT(ok(c, "INSERT INTO rt VALUES (1), (2)"));
}

static void test_refresh_once(void)
{
        PGconn *c = db();
        uint64_t gid, version = 0, epoch = 0, busy0 = fleet_sum("refresh_busy");
        int h;

        CU_ASSERT_FATAL(c != NULL);
        rt_ready(c);
        CU_ASSERT_FATAL(ok(c, "CREATE MATERIALIZED VIEW r3 WITH (REFRESH AT mz_now() + 1000, "
                              "REFRESH AT mz_now() + 2000, REFRESH AT mz_now() + 3000) AS "
                              "SELECT count(*) AS n FROM rt"));
        gid = gid_of(c, "r3");
        CU_ASSERT(refreshes_reach(c, gid, 3, 30000));
        CU_ASSERT(rows_become(c, "SELECT n FROM r3", "2", 10000));
        sleep_ms(2 * HOLD_MS);                  /* time for a stray 4th refresh */
        CU_ASSERT(refresh_lease(c, gid, &version, &epoch, &h));
        printf("\n    3 refreshes: version %" PRIu64 ", epoch %" PRIu64 ", claims answered BUSY %" PRIu64, version,
               epoch, fleet_sum("refresh_busy") - busy0);
        CU_ASSERT_EQUAL(version, 3);
        CU_ASSERT(fleet_sum("refresh_busy") > busy0);
        PQfinish(c);
}

/* One round of refresh_sigstop, on a new view. */
static void refresh_sigstop_round(PGconn *c, int i)
{
        uint64_t gid, version = 0, epoch = 0, e2 = 0, cf0 = stat_of(COORD__ROLE__ROLE_CONTROLLER, "refresh_fenced");
        char *q;
        pid_t pid;
        int h = -1, h2;

        CU_ASSERT_FATAL(okf(c, "CREATE MATERIALIZED VIEW r2_%d WITH (REFRESH AT mz_now() + 500, "
                               "REFRESH AT mz_now() + %u) AS SELECT sum(v) AS s FROM rt", i, SECOND_MS));
        CU_ASSERT_FATAL(asprintf(&q, "r2_%d", i) > 0);
        gid = gid_of(c, q);
        free(q);
        /* The first refresh's holder, in its hold between claim and release. */
        for (uint64_t end = mono_ms() + 15000; mono_ms() < end && h < 0; sleep_ms(5))
                if (!refresh_lease(c, gid, &version, &epoch, &h) || version != 0)
                        h = -1;
        CU_ASSERT_FATAL(h >= 0);
        pid = follower_pid((unsigned)h);
        CU_ASSERT_FATAL(pid > 0 && kill(pid, SIGSTOP) == 0);
        /* Due, claimed, not released: not done, whatever the inputs
         * (controller-server-refresh.c note 1). */
        sleep_ms(HOLD_MS);
        CU_ASSERT(asprintf(&q, "SELECT last_refresh IS NULL FROM coord_refreshes WHERE object_id = %" PRIu64,
                           gid) > 0);
        CU_ASSERT(rows_are(c, q, "t"));
        free(q);
        CU_ASSERT(refreshes_reach(c, gid, 1, TAKEOVER_MAX_MS + 5000));
        CU_ASSERT(refresh_lease(c, gid, &version, &e2, &h2));
        printf("\n    round %d: refresh holder %d (epoch %" PRIu64 ") stopped: refreshed at epoch %" PRIu64, i, h,
               epoch, e2);
        CU_ASSERT(e2 > epoch);
        CU_ASSERT_FATAL(kill(pid, SIGCONT) == 0);
        /* Resumed, it releases with its old epoch: refused. */
        for (int w = 0; w < 500 && stat_of(COORD__ROLE__ROLE_CONTROLLER, "refresh_fenced") == cf0; w++)
                sleep_ms(10);
        CU_ASSERT(stat_of(COORD__ROLE__ROLE_CONTROLLER, "refresh_fenced") > cf0);
        CU_ASSERT(follower_stat((unsigned)h, "refresh_fenced") >= 1);
        CU_ASSERT(refreshes_reach(c, gid, 2, 30000));
        CU_ASSERT(asprintf(&q, "SELECT s FROM r2_%d", i) > 0);
        CU_ASSERT(rows_become(c, q, "3", 10000));
        free(q);
        sleep_ms(2 * HOLD_MS);                  /* time for a stray 3rd refresh */
        CU_ASSERT(refresh_lease(c, gid, &version, &e2, &h2));
        CU_ASSERT_EQUAL(version, 2);
}

static void test_refresh_sigstop(void)
{
        const char *env = getenv("COORD_FLEET_REFRESH_ROUNDS");
        int rounds = env ? atoi(env) : 1;
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        rt_ready(c);
        for (int i = 0; i < rounds; i++)
                refresh_sigstop_round(c, i);
        PQfinish(c);
}

static void test_refresh_kill_commit(void)
{
        /* The first lease commit from here: the refresh's (r2 and r3 are done). */
        const char *envs[] = { "COORD_KILLPOINT=lease.commit.after_write:1", NULL };
        uint64_t gid, version = 0, epoch = 0, retries0 = fleet_sum("refresh_retries");
        PGconn *c = db();
        pid_t pid;
        int status = 0, h;

        CU_ASSERT_FATAL(c != NULL);
        rt_ready(c);
        CU_ASSERT_FATAL(stop_role(COORD__ROLE__ROLE_ADAPTER));
        pid = spawn_role(COORD__ROLE__ROLE_ADAPTER, envs);
        CU_ASSERT_FATAL(pid > 0);
        CU_ASSERT_FATAL(spawn_wait_serving(COORD__ROLE__ROLE_ADAPTER, pid, 20000, &status) > 0);
        CU_ASSERT_FATAL((c = reconnect(c)) != NULL);
        CU_ASSERT_FATAL(ok(c, "CREATE MATERIALIZED VIEW rk WITH (REFRESH AT mz_now() + 1000) AS "
                              "SELECT count(*) AS n FROM rt"));
        gid = gid_of(c, "rk");
        CU_ASSERT_FATAL(spawn_wait_exit(pid, 20000, &status));
        CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        CU_ASSERT(log_has(COORD__ROLE__ROLE_ADAPTER, "event=killpoint name=lease.commit.after_write"));
        CU_ASSERT_EQUAL_FATAL(fleet_up(), 0);
        CU_ASSERT_FATAL((c = reconnect(c)) != NULL);
        CU_ASSERT(refreshes_reach(c, gid, 1, 3 * TTL_MS));
        for (int w = 0; w < 300 && fleet_sum("refresh_retries") == retries0; w++)
                sleep_ms(10);
        sleep_ms(TTL_MS);                       /* past the ttl: no retry left */
        CU_ASSERT(refresh_lease(c, gid, &version, &epoch, &h));
        printf("\n    adapter killed after the commit: version %" PRIu64 ", commits sent again %" PRIu64, version,
               fleet_sum("refresh_retries") - retries0);
        CU_ASSERT_EQUAL(version, 1);
        CU_ASSERT(fleet_sum("refresh_retries") > retries0);
        CU_ASSERT(rows_become(c, "SELECT n FROM rk", "2", 10000));
        PQfinish(c);
}

/* kill -9 every follower and wait until each is gone (not only silent: tools/coord up
 * starts only the followers whose process is gone). */
static void kill_fleet(void)
{
        pid_t pids[NODE_FLEET_MAX];

        for (unsigned k = 0; k < followers; k++) {
                pids[k] = follower_pid(k);
                if (pids[k] > 0)
                        CU_ASSERT(kill(pids[k], SIGKILL) == 0);
        }
        for (unsigned k = 0; k < followers; k++)
                for (int w = 0; w < 500 && pids[k] > 0 && kill(pids[k], 0) == 0; w++)
                        sleep_ms(10);
}

/* The fleet again (kill -9, then up) with refreshes held hold_ms; once a follower
 * took the duty (an epoch above the one before), so that DDL is enacted. */
static void fleet_restart(PGconn *c, unsigned hold_ms)
{
        uint64_t e = 0, e2 = 0;

        (void)holder(c, &e);
        kill_fleet();
        CU_ASSERT_EQUAL_FATAL(fleet_up_hold(hold_ms), 0);
        CU_ASSERT_FATAL(wait_active_above(c, e, TAKEOVER_MAX_MS, &e2) >= 0);
}

/* 50 views refreshed every second keep up: each has had at least 3 refreshes 6 s
 * later (with one job at a time per follower, 3 followers did about 8 a second in all:
 * lifecycle-refresh.c note 8, LC_REFRESH_JOBS).  Without the hold of refresh_sigstop
 * (HOLD_MS, 1 s a refresh): with it a view had a refresh every 1.5-2 s, the last ones
 * made exactly 3 on an idle machine and 2 under load. */
static void test_refresh_many(void)
{
        enum { VIEWS = 50 };
        uint64_t gids[VIEWS], behind = 0, sum = 0;
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        rt_ready(c);
        fleet_restart(c, 0);
        for (int i = 0; i < VIEWS; i++) {
                char name[32];

                CU_ASSERT_FATAL(okf(c, "CREATE MATERIALIZED VIEW rm_%d WITH (REFRESH EVERY '1 second') AS "
                                       "SELECT count(*) AS n FROM rt", i));
                snprintf(name, sizeof(name), "rm_%d", i);
                gids[i] = gid_of(c, name);
        }
        sleep_ms(6000);                         /* each view due 6 times */
        for (int i = 0; i < VIEWS; i++) {
                uint64_t version = 0, epoch = 0;
                int h;

                CU_ASSERT(refresh_lease(c, gids[i], &version, &epoch, &h));
                sum += version;
                behind += version < 3;
        }
        printf("\n    %d views every second: %" PRIu64 " refreshes committed in 6 s, %" PRIu64 " views under 3",
               VIEWS, sum, behind);
        CU_ASSERT_EQUAL(behind, 0);
        for (int i = 0; i < VIEWS; i++)
                CU_ASSERT(okf(c, "DROP MATERIALIZED VIEW rm_%d", i));
        fleet_restart(c, HOLD_MS);              /* as the other cases expect it */
        PQfinish(c);
}

/* Every follower armed with the kill point refresh.before_commit: the holder of a
 * one-time view's only refresh -- the last of its schedule -- dies after the controller
 * wrote it and before committing it.  Another follower, seeing the lease's last commit
 * behind the view's upper 2 ttl after the refresh time, claims the lapsed lease and
 * commits it (lifecycle-refresh.c note 8): the version is 1, not 0. */
static void test_refresh_last_reconciled(void)
{
        uint64_t gid, version = 0, epoch = 0, rec0;
        PGconn *c = db();
        unsigned alive;
        int h;

        CU_ASSERT_FATAL(c != NULL);
        rt_ready(c);
        kill_fleet();
        CU_ASSERT_EQUAL_FATAL(t_sh("COORD_KILLPOINT=refresh.before_commit:1 COORD_LIFECYCLE_ARGS='--duty-ttl-ms %u' "
                                   "%s up --followers %u >/dev/null", TTL_MS, coord_cmd, followers), 0);
        rec0 = fleet_sum("refresh_reconciled");
        CU_ASSERT_FATAL(ok(c, "CREATE MATERIALIZED VIEW rl WITH (REFRESH AT mz_now() + 1000) AS "
                              "SELECT count(*) AS n FROM rt"));
        gid = gid_of(c, "rl");
        /* The holder dies; its refresh is in the view. */
        for (int w = 0; w < 1500; w++, sleep_ms(10)) {
                alive = 0;
                for (unsigned k = 0; k < followers; k++)
                        alive += follower_pid(k) > 0;
                if (alive < followers)
                        break;
        }
        CU_ASSERT_FATAL(alive == followers - 1);
        CU_ASSERT(rows_become(c, "SELECT n FROM rl", "2", 10000));
        CU_ASSERT(refresh_lease(c, gid, &version, &epoch, &h));
        CU_ASSERT_EQUAL(version, 0);            /* written, not committed */
        CU_ASSERT(refreshes_reach(c, gid, 1, 4 * TTL_MS + 5000));
        sleep_ms(TTL_MS);                       /* past the ttl: no retry left */
        CU_ASSERT(refresh_lease(c, gid, &version, &epoch, &h));
        printf("\n    the last refresh's holder killed before its commit: version %" PRIu64 " at epoch %" PRIu64
               ", reconciled by another follower", version, epoch);
        CU_ASSERT_EQUAL(version, 1);
        CU_ASSERT(fleet_sum("refresh_reconciled") > rec0);
        /* The survivors are armed still: the fleet again without the kill point. */
        kill_fleet();
        CU_ASSERT_EQUAL(fleet_up(), 0);
        PQfinish(c);
}

int main(void)
{
        static const struct t_case cases[] = {
                { "up", test_up },
                { "works", test_works },
                { "sigstop_holder", test_sigstop_holder },
                { "fenced_messages", test_fenced_messages },
                { "kill9_holder", test_kill9_holder },
                { "restart_supersedes", test_restart_supersedes },
                { "refresh_once", test_refresh_once },
                { "refresh_sigstop", test_refresh_sigstop },
                { "refresh_kill_commit", test_refresh_kill_commit },
                { "refresh_last_reconciled", test_refresh_last_reconciled },
                { "refresh_many", test_refresh_many },
                { "check", itest_check },
                { NULL, NULL },
        };
        static const struct t_suite suites[] = { { "fleet", cases }, { NULL, NULL } };

        const char *n = getenv("COORD_FLEET_FOLLOWERS"), *ttl = getenv("COORD_FLEET_TTL_MS");

        if (n && atoi(n) >= 2 && atoi(n) <= 16)
                followers = (unsigned)atoi(n);
        if (ttl && atoi(ttl) >= 1000 && atoi(ttl) <= 60000)
                ttl_ms = (unsigned)atoi(ttl);
        spawn_set_prefix("fl");
        return itest_main("coord-fleet", "fl", suites);
}
