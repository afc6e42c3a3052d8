/* test-daemons -- the three real daemons, started and restarted with tools/coord, on real
 * RocksDB, real Unix sockets and real shared memory.
 *
 * The cases run in order on one instance under a fresh COORD_HOME:
 *   up -> all ready and connected; kill -9 of each daemon in turn and tools/coord up ->
 *   every connection back within 5 s, with the restarted daemon's new incarnation seen by
 *   its peers, and the frontier ring readers on the restarted controller's generation; garbage, oversized, truncated frames and a stale incarnation on a daemon's
 *   socket -> that connection closed, the other peers undisturbed; a second daemon of a
 *   role refused; bad flags refused; tools/coord down with a daemon that ignores SIGTERM
 *   and one just killed -> both gone when down returns, up at once starts all three;
 *   tools/coord down -> no process, socket or pid file.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <poll.h>

#include "ipc/ipc.h"
#include "node/node.h"
#include "t.h"
#include "util.h"

static char *home, *run_dir, *data_dir, *coord_cmd, *build_dir;
static const Coord__Role roles[] = {
        COORD__ROLE__ROLE_ADAPTER, COORD__ROLE__ROLE_LIFECYCLE, COORD__ROLE__ROLE_CONTROLLER,
};

static Coord__StatusReply *status_of(Coord__Role role)
{
        Coord__StatusReply *s = NULL;
        return node_query_status(run_dir, role, 1000, &s) < 0 ? NULL : s;
}

static pid_t pid_of(Coord__Role role)
{
        Coord__StatusReply *s = status_of(role);
        pid_t pid = s ? s->pid : -1;

        if (s)
                coord__status_reply__free_unpacked(s, NULL);
        return pid;
}

static const Coord__PeerStatus *peer_in(const Coord__StatusReply *s, Coord__Role role)
{
        for (size_t k = 0; k < s->n_peers; k++)
                if (s->peers[k]->role == role)
                        return s->peers[k];
        return NULL;
}

/* All three up, ready, and each connected to both peers at the incarnation the peer
 * itself reports; the ring readers (adapter, lifecycle) on the controller's current
 * ring generation (= its incarnation).  Fills inc[] (indexed like roles[]) when given. */
static bool all_connected(uint64_t *inc)
{
        Coord__StatusReply *st[3] = { NULL };
        bool ok = true;

        for (int i = 0; i < 3; i++)
                if (!(st[i] = status_of(roles[i])) || !st[i]->ready)
                        ok = false;
        for (int i = 0; ok && i < 3; i++) {
                if (st[i]->n_peers != 2)
                        ok = false;
                for (int j = 0; ok && j < 3; j++) {
                        const Coord__PeerStatus *p;
                        if (j == i)
                                continue;
                        p = peer_in(st[i], roles[j]);
                        if (!p || !p->connected || p->incarnation != st[j]->incarnation)
                                ok = false;
                }
                if (st[i]->ring_generation != st[2]->incarnation)
                        ok = false;
        }
        for (int i = 0; i < 3; i++) {
                if (inc)
                        inc[i] = st[i] ? st[i]->incarnation : 0;
                if (st[i])
                        coord__status_reply__free_unpacked(st[i], NULL);
        }
        return ok;
}

static bool wait_all_connected(uint64_t timeout_ms, uint64_t *inc, uint64_t *ret_elapsed)
{
        uint64_t start = now_ms();

        while (now_ms() - start < timeout_ms) {
                if (all_connected(inc)) {
                        if (ret_elapsed)
                                *ret_elapsed = now_ms() - start;
                        return true;
                }
                usleep(10000);
        }
        return false;
}

static void test_up(void)
{
        uint64_t inc[3];

        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        CU_ASSERT_FATAL(wait_all_connected(5000, inc, NULL));
        for (int i = 0; i < 3; i++)
                CU_ASSERT(inc[i] >= 1);
        /* tools/coord status is coordctl status: exit 0 when all is well. */
        CU_ASSERT_EQUAL(t_sh("%s status >/dev/null", coord_cmd), 0);
        CU_ASSERT_EQUAL(t_sh("%s status --json | grep -q '\"all_connected\":true'", coord_cmd), 0);
        /* up again is a no-op that succeeds. */
        CU_ASSERT_EQUAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

static void kill9_and_up(int i)
{
        uint64_t before[3], after[3], elapsed = 0;
        pid_t pid;

        CU_ASSERT_FATAL(wait_all_connected(5000, before, NULL));
        pid = pid_of(roles[i]);
        CU_ASSERT_FATAL(pid > 0);
        CU_ASSERT_EQUAL_FATAL(kill(pid, SIGKILL), 0);
        /* reaped by init; gone from the process table */
        CU_ASSERT_FATAL(t_wait_for_every(kill(pid, 0) != 0, 10000, 1));
        /* While it is down, coordctl says so with a non-zero exit status. */
        CU_ASSERT_NOT_EQUAL(t_sh("%s status >/dev/null", coord_cmd), 0);
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        CU_ASSERT_FATAL(wait_all_connected(5000, after, &elapsed));
        printf("\n    %s restarted: incarnation %llu -> %llu, all connected %llu ms after up\n",
               node_role_name(roles[i]), (unsigned long long)before[i],
               (unsigned long long)after[i], (unsigned long long)elapsed);
        CU_ASSERT(after[i] == before[i] + 1);
        for (int j = 0; j < 3; j++)
                if (j != i)
                        CU_ASSERT_EQUAL(after[j], before[j]);
}

static void test_kill9_adapter(void) { kill9_and_up(0); }
static void test_kill9_lifecycle(void) { kill9_and_up(1); }
static void test_kill9_controller(void) { kill9_and_up(2); }

static int raw_connect(Coord__Role role)
{
        char *path = node_socket_path(run_dir, role);
        int fd = ipc_sync_connect(path);

        free(path);
        return fd;
}

/* After writing junk, the daemon must close this connection: read() sees EOF/reset. */
static bool closed_by_peer(int fd)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };
        char buf[256];

        for (;;) {
                if (poll(&p, 1, 2000) <= 0)
                        return false;
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n == 0 || (n < 0 && errno == ECONNRESET))
                        return true;
                if (n < 0)
                        return false;
                /* a Hello or reply before the close is fine; keep reading */
        }
}

struct peer_snapshot {
        uint64_t rejected, stale;
        uint32_t connects[3];
};

static void snapshot(Coord__Role role, struct peer_snapshot *ps)
{
        Coord__StatusReply *s = status_of(role);

        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        ps->rejected = s->frames_rejected;
        ps->stale = s->stale_rejected;
        for (int j = 0; j < 3; j++) {
                const Coord__PeerStatus *p = peer_in(s, roles[j]);
                ps->connects[j] = p ? p->reconnects : 0;
        }
        coord__status_reply__free_unpacked(s, NULL);
}

static void feed_and_check(Coord__Role victim, const void *bytes, size_t len, bool then_eof)
{
        struct peer_snapshot a, b;
        int fd;

        snapshot(victim, &a);
        fd = raw_connect(victim);
        CU_ASSERT_FATAL(fd >= 0);
        CU_ASSERT_EQUAL(write(fd, bytes, len), (ssize_t)len);
        if (then_eof)
                shutdown(fd, SHUT_WR);
        CU_ASSERT(closed_by_peer(fd));
        close(fd);
        /* The daemon still serves its peers: still connected, no reconnection. */
        CU_ASSERT(all_connected(NULL));
        snapshot(victim, &b);
        for (int j = 0; j < 3; j++)
                CU_ASSERT_EQUAL(a.connects[j], b.connects[j]);
        CU_ASSERT(b.rejected + b.stale > a.rejected + a.stale || then_eof);
}

static void test_garbage_frames(void)
{
        uint8_t oversized[8], garbage[64], truncated[16];

        CU_ASSERT_FATAL(wait_all_connected(5000, NULL, NULL));
        for (int i = 0; i < 3; i++) {
                le32_put(oversized, 0xfffffff0u);
                memset(oversized + 4, 0xab, 4);
                feed_and_check(roles[i], oversized, sizeof(oversized), false);

                le32_put(garbage, sizeof(garbage) - 4);
                for (size_t k = 4; k < sizeof(garbage); k++)
                        garbage[k] = (uint8_t)(k * 37 + 11);
                garbage[4] = 0xff;      /* invalid protobuf tag */
                feed_and_check(roles[i], garbage, sizeof(garbage), false);

                le32_put(truncated, 100);
                memset(truncated + 4, 0x08, sizeof(truncated) - 4);
                feed_and_check(roles[i], truncated, sizeof(truncated), true);
        }
}

/* A Hello claiming an older incarnation of a peer than the one connected is ignored. */
static void test_stale_incarnation(void)
{
        Coord__Hello hello = COORD__HELLO__INIT;
        Coord__Envelope env = COORD__ENVELOPE__INIT;
        struct peer_snapshot a, b;
        uint64_t inc[3];
        uint8_t buf[128];
        int fd;

        CU_ASSERT_FATAL(wait_all_connected(5000, inc, NULL));
        if (inc[0] < 2) {               /* not restarted by a case before: now */
                kill9_and_up(0);
                CU_ASSERT_FATAL(wait_all_connected(5000, inc, NULL));
        }
        CU_ASSERT_FATAL(inc[0] >= 2);
        snapshot(COORD__ROLE__ROLE_CONTROLLER, &a);
        fd = raw_connect(COORD__ROLE__ROLE_CONTROLLER);
        CU_ASSERT_FATAL(fd >= 0);
        hello.role = COORD__ROLE__ROLE_ADAPTER;
        hello.incarnation = inc[0] - 1;
        hello.pid = getpid();
        hello.instance = (char *)"stale";
        env.type = COORD__MSG_TYPE__MSG_HELLO;
        env.sender = COORD__ROLE__ROLE_ADAPTER;
        env.incarnation = inc[0] - 1;
        env.payload.len = coord__hello__pack(&hello, buf);
        env.payload.data = buf;
        CU_ASSERT_EQUAL(ipc_sync_send(fd, &env, IPC_MAX_FRAME_DEFAULT), 0);
        CU_ASSERT(closed_by_peer(fd));
        close(fd);
        snapshot(COORD__ROLE__ROLE_CONTROLLER, &b);
        CU_ASSERT_EQUAL(b.stale, a.stale + 1);
        CU_ASSERT(all_connected(NULL));
        for (int j = 0; j < 3; j++)
                CU_ASSERT_EQUAL(a.connects[j], b.connects[j]);
}

static void test_second_daemon_refused(void)
{
        int r = t_sh("%s/adapter/coord-adapter --data-dir %s --run-dir %s --instance x 2>/dev/null",
                   build_dir, data_dir, run_dir);

        CU_ASSERT_EQUAL(r, NODE_EXIT_RUNNING);
        CU_ASSERT(all_connected(NULL));         /* and it did not disturb the first */
}

static void test_bad_flags(void)
{
        CU_ASSERT_EQUAL(t_sh("%s/controller/coord-controller --data-dir %s 2>/dev/null", build_dir, data_dir),
                        NODE_EXIT_USAGE);
        CU_ASSERT_EQUAL(t_sh("%s/controller/coord-controller --data-dir %s --run-dir %s --bogus 2>/dev/null",
                           build_dir, data_dir, run_dir), NODE_EXIT_USAGE);
        CU_ASSERT_EQUAL(t_sh("%s/controller/coord-controller --data-dir %s --run-dir %s --max-frame-bytes 12x 2>/dev/null",
                           build_dir, data_dir, run_dir), NODE_EXIT_USAGE);
        CU_ASSERT_EQUAL(t_sh("%s/tools/coordctl --run-dir %s frobnicate 2>/dev/null", build_dir, run_dir),
                        NODE_EXIT_USAGE);
        CU_ASSERT_EQUAL(t_sh("%s/lifecycle/coord-lifecycle --data-dir %s --run-dir %s --instance 'a/b' 2>/dev/null",
                           build_dir, data_dir, run_dir), NODE_EXIT_USAGE);
        CU_ASSERT_EQUAL(t_sh("%s/controller/coord-controller --data-dir %s --run-dir %s --ring-slots 0 2>/dev/null",
                           build_dir, data_dir, run_dir), NODE_EXIT_USAGE);
        CU_ASSERT(all_connected(NULL));         /* refused flags disturbed nobody */
        CU_ASSERT_EQUAL(t_sh("%s/adapter/coord-adapter --help >/dev/null", build_dir), 0);
}

/* A daemon that down reported stopped: its process gone (reaped) and its lock free, so
 * a new one of its role can start. */
static bool daemon_gone(int i, pid_t pid)
{
        char path[PATH_MAX];
        bool gone = kill(pid, 0) < 0 && errno == ESRCH;
        int fd;

        snprintf(path, sizeof(path), "%s/%s/lock", data_dir, node_role_name(roles[i]));
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd >= 0) {
                if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                        gone = false;
                close(fd);
        }
        if (!gone)
                fprintf(stderr, "\n    %s (pid %d) is still there", node_role_name(roles[i]), (int)pid);
        return gone;
}

/* Issue 36 item 4: down returns only once every daemon is gone, so that up at once
 * starts all three (a daemon still exiting holds its lock: "lock busy", exit 75).  The
 * controller is stopped (SIGSTOP), so it cannot act on SIGTERM, as when its loop is
 * stuck: down kills it after COORD_DOWN_TIMEOUT and says so.  The lifecycle is killed
 * with -9 just before down: it may still be exiting when down looks. */
static void test_down_stuck(void)
{
        pid_t pids[3];
        uint64_t t0;

        CU_ASSERT_FATAL(wait_all_connected(5000, NULL, NULL));
        for (int i = 0; i < 3; i++)
                pids[i] = pid_of(roles[i]);
        CU_ASSERT_EQUAL_FATAL(kill(pids[2], SIGSTOP), 0);
        CU_ASSERT_EQUAL_FATAL(kill(pids[1], SIGKILL), 0);
        t0 = now_ms();
        CU_ASSERT_EQUAL(t_sh("COORD_DOWN_TIMEOUT=3 %s down >%s/down.out 2>&1", coord_cmd, home), 0);
        printf("\n    down took %llu ms\n", (unsigned long long)(now_ms() - t0));
        for (int i = 0; i < 3; i++)
                CU_ASSERT(pids[i] > 0 && daemon_gone(i, pids[i]));
        CU_ASSERT_EQUAL(t_sh("grep -q 'killed controller' %s/down.out", home), 0);
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        CU_ASSERT(wait_all_connected(5000, NULL, NULL));
}

static void test_down(void)
{
        pid_t pids[3];

        for (int i = 0; i < 3; i++)
                pids[i] = pid_of(roles[i]);
        CU_ASSERT_EQUAL(t_sh("%s down >/dev/null", coord_cmd), 0);
        for (int i = 0; i < 3; i++) {
                char *sock = node_socket_path(run_dir, roles[i]);
                char *pidf = node_pid_path(run_dir, roles[i]);
                CU_ASSERT(pids[i] > 0 && kill(pids[i], 0) < 0 && errno == ESRCH);
                CU_ASSERT(access(sock, F_OK) < 0);
                CU_ASSERT(access(pidf, F_OK) < 0);
                free(sock);
                free(pidf);
        }
        CU_ASSERT_NOT_EQUAL(t_sh("%s status >/dev/null 2>&1", coord_cmd), 0);
}

static const struct t_case cases[] = {
        { "up: three ready daemons, all connected", test_up },
        { "kill -9 adapter, up: all back within 5 s", test_kill9_adapter },
        { "kill -9 lifecycle, up: all back within 5 s", test_kill9_lifecycle },
        { "kill -9 controller, up: all back within 5 s", test_kill9_controller },
        { "garbage frames close one connection only", test_garbage_frames },
        { "stale incarnation ignored", test_stale_incarnation },
        { "second daemon of a role refused", test_second_daemon_refused },
        { "bad flags: exit 64", test_bad_flags },
        { "down with a daemon deaf to SIGTERM: killed, gone when down returns, up at once", test_down_stuck },
        { "down: no process, socket or pid file left", test_down },
        { NULL, NULL },
};

int main(void)
{
        const char *top = getenv("COORD_TOP");
        int r;

        build_dir = getenv("COORD_BUILD");
        if (!top || !build_dir) {
                fprintf(stderr, "COORD_TOP and COORD_BUILD must be set (meson test does)\n");
                return T_EXIT_ERROR;
        }
        home = t_mkdtemp("daemons");
        if (!home || asprintf(&run_dir, "%s/run", home) < 0 || asprintf(&data_dir, "%s/data", home) < 0 ||
            asprintf(&coord_cmd, "COORD_HOME=%s COORD_SKIP_SETUP=1 COORD_INSTANCE=t%d COORD_PG_PORT=%d %s/tools/coord",
                     home, (int)getpid(), t_free_port(), top) < 0)
                return T_EXIT_ERROR;
        r = t_run_opts((const struct t_suite[]){ { "daemons", cases }, { NULL, NULL } }, T_RUN_FIXTURES);
        /* Never leave daemons behind, whatever failed. */
        (void)!t_sh("%s down >/dev/null 2>&1", coord_cmd);
        if (r == T_EXIT_PASS)
                t_rmrf(home);
        else
                fprintf(stderr, "daemon logs kept in %s/log\n", home);
        free(run_dir);
        free(data_dir);
        free(coord_cmd);
        free(home);
        return r;
}
