/* node.c -- the runtime every Coord daemon shares: incarnation, lock, socket, peers,
 * fencing, status.  See node.h.
 *
 * Unlike the rest of common/, this module logs: it is not a library but the daemons'
 * common body, and peer events must read the same in all three daemons' logs.
 *
 * NOTES ON THE DESIGN
 * (1) A peer is "up" only after its Hello arrived with an incarnation >= the highest
 *     seen for its role.  Until then its frames other than Hello close the connection.
 * (2) One current connection per peer role.  A newer Hello for a role replaces the
 *     current connection (the old one is closed): after a kill -9 the server may see
 *     the new connection before the old one's EOF.
 * (3) The dialing side redials with exponential backoff, 20 ms doubling to 200 ms, so a
 *     restarted peer is reconnected well within a second of its socket appearing.
 * (4) The incarnation is durable before the first frame is sent, so no two lives of a
 *     role ever share an incarnation (fencing depends on it).
 */
#include "node.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ring/fring.h"
#include "hist.h"
#include "ipc/ipc.h"
#include "log.h"
#include "loop/loop.h"
#include "metrics.h"
#include "node-http.h"
#include "node-standby.h"
#include "probes.h"
#include "sdnotify.h"
#include "util.h"

#define BACKOFF_MIN_NS   (20ull * 1000000ull)
#define BACKOFF_MAX_NS   (200ull * 1000000ull)
#define NODE_DRAIN_NS    (200ull * 1000000ull)   /* closes at exit */
/* What fring_name() accepts in a shared-memory name. */
#define INSTANCE_CHARS   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

#include "node-internal.h"


static const char *const role_names[N_ROLES] = {
        [COORD__ROLE__ROLE_UNKNOWN] = "unknown",
        [COORD__ROLE__ROLE_ADAPTER] = "adapter",
        [COORD__ROLE__ROLE_LIFECYCLE] = "lifecycle",
        [COORD__ROLE__ROLE_CONTROLLER] = "controller",
        [COORD__ROLE__ROLE_CTL] = "ctl",
};

const char *node_role_name(Coord__Role role)
{
        return (unsigned)role < N_ROLES ? role_names[role] : "invalid";
}

Coord__Role node_role_from_name(const char *name)
{
        for (unsigned i = 1; i < N_ROLES; i++)
                if (name && strcmp(name, role_names[i]) == 0)
                        return (Coord__Role)i;
        return COORD__ROLE__ROLE_UNKNOWN;
}

static bool role_is_daemon(Coord__Role r)
{
        return r == COORD__ROLE__ROLE_ADAPTER || r == COORD__ROLE__ROLE_LIFECYCLE ||
               r == COORD__ROLE__ROLE_CONTROLLER;
}

/* Who dials whom: adapter -> controller, lifecycle -> controller, lifecycle -> adapter. */
static bool role_dials(Coord__Role self, Coord__Role other)
{
        if (other == COORD__ROLE__ROLE_CONTROLLER)
                return self != COORD__ROLE__ROLE_CONTROLLER;
        return self == COORD__ROLE__ROLE_LIFECYCLE && other == COORD__ROLE__ROLE_ADAPTER;
}

/* The name of a member's files: its role, and -K for a lifecycle follower K > 0. */
static char *member_path(const char *dir, Coord__Role role, uint32_t id, const char *ext)
{
        char *p;

        if (id)
                return asprintf(&p, "%s/%s-%u%s", dir, node_role_name(role), id, ext) < 0 ? NULL : p;
        return asprintf(&p, "%s/%s%s", dir, node_role_name(role), ext) < 0 ? NULL : p;
}

char *node_socket_path_id(const char *run_dir, Coord__Role role, uint32_t id)
{
        return member_path(run_dir, role, id, ".sock");
}

char *node_pid_path_id(const char *run_dir, Coord__Role role, uint32_t id)
{
        return member_path(run_dir, role, id, ".pid");
}

char *node_socket_path(const char *run_dir, Coord__Role role)
{
        return node_socket_path_id(run_dir, role, 0);
}

char *node_pid_path(const char *run_dir, Coord__Role role)
{
        return node_pid_path_id(run_dir, role, 0);
}

static int mkdir_p(const char *path, mode_t mode)
{
        char buf[4096];
        size_t len = strlen(path);

        if (len == 0 || len >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, path, len + 1);
        for (char *p = buf + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(buf, mode) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

static int incarnation_bump(const char *dir, uint64_t *ret)
{
        char out[32];
        uint64_t last = 0;
        int r;

        r = read_u64_file(dir, "incarnation", UINT64_MAX - 1, &last);
        if (r < 0 && r != -ENOENT)
                return r;       /* a corrupt file (-EBADMSG) must not restart at 1 */
        snprintf(out, sizeof(out), "%llu\n", (unsigned long long)(last + 1));
        r = write_file_durable(dir, "incarnation", out);
        if (r < 0)
                return r;
        *ret = last + 1;
        return 0;
}

/* ---- peers ---- */

static void peer_schedule_redial(struct peer *p);

static void conn_on_frame(struct ipc_conn *c, const Coord__Envelope *env, void *userdata);
static void conn_on_close(struct ipc_conn *c, int reason, void *userdata);
static const struct ipc_conn_ops conn_ops = {
        .on_frame = conn_on_frame,
        .on_close = conn_on_close,
};

static int send_hello(struct node *n, struct ipc_conn *c)
{
        Coord__Hello hello = COORD__HELLO__INIT;

        hello.role = n->cfg.role;
        hello.incarnation = n->incarnation;
        hello.pid = (int32_t)getpid();
        hello.instance = n->instance;
        hello.start_ms = n->start_wall_ms;
        hello.instance_id = n->cfg.instance_id;
        return ipc_conn_send_msg(c, COORD__MSG_TYPE__MSG_HELLO, n->cfg.role, n->incarnation, 0,
                                 &hello.base);
}

static void peer_dial(struct loop *l, void *userdata)
{
        struct peer *p = userdata;
        struct node *n = p->node;
        _cleanup_free_ char *path = node_socket_path(n->run_dir, p->role);
        struct conn_state *cs;
        struct ipc_conn *c;
        int r;

        p->redial = NULL;
        assert(!p->conn && !p->dialing);
        if (!path)
                goto retry;
        cs = calloc(1, sizeof(*cs));
        if (!cs)
                goto retry;
        *cs = (struct conn_state){ .node = n, .role = COORD__ROLE__ROLE_UNKNOWN, .outgoing = true };
        r = ipc_connect(n->loop, path, n->cfg.max_frame, &conn_ops, cs, &c);
        if (r < 0) {
                free(cs);
                /* ENOENT/ECONNREFUSED are the normal "peer not up yet"; not worth a line. */
                if (r != -ENOENT && r != -ECONNREFUSED)
                        log_warn_errno(r, "peer_dial_failed", "role=%s path=%s",
                                       node_role_name(p->role), path);
                goto retry;
        }
        p->dialing = c;
        r = send_hello(n, c);
        if (r < 0)
                ipc_conn_close(c);      /* on_close schedules the redial */
        return;
retry:
        peer_schedule_redial(p);
}

static void peer_schedule_redial(struct peer *p)
{
        struct node *n = p->node;
        int r;

        if (p->redial || p->conn || p->dialing)
                return;
        r = loop_timer_add(n->loop, p->backoff_ns, peer_dial, p, &p->redial);
        if (r < 0)
                log_error_errno(r, "peer_redial_timer_failed", "role=%s", node_role_name(p->role));
        p->backoff_ns = p->backoff_ns * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : p->backoff_ns * 2;
}

static void node_reject(struct node *n, struct ipc_conn *c, const char *event, const char *why)
{
        n->frames_rejected++;
        log_warn(event, "peer_pid=%d reason=\"%s\"", (int)ipc_conn_peer_pid(c), why);
        ipc_conn_close(c);
}

static void handle_hello(struct node *n, struct ipc_conn *c, struct conn_state *cs,
                         const Coord__Envelope *env)
{
        Coord__Hello *hello;
        node_peer_t addr;
        struct peer *p;

        hello = coord__hello__unpack(NULL, env->payload.len, env->payload.data);
        if (!hello) {
                node_reject(n, c, "hello_rejected", "undecodable hello");
                return;
        }
        if (cs->role != COORD__ROLE__ROLE_UNKNOWN) {
                node_reject(n, c, "hello_rejected", "second hello on a connection");
                goto done;
        }
        if (hello->role == COORD__ROLE__ROLE_CTL) {
                cs->role = COORD__ROLE__ROLE_CTL;
                cs->ctl_id = ++n->next_ctl_id;
                cs->conn = c;
                cs->ctl_next = n->ctls;
                if (n->ctls)
                        n->ctls->ctl_prev = cs;
                n->ctls = cs;
                goto done;
        }
        if (!role_is_daemon(hello->role) || hello->role == n->cfg.role ||
            hello->incarnation == 0 || hello->incarnation != env->incarnation) {
                node_reject(n, c, "hello_rejected", "bad role or incarnation");
                goto done;
        }
        if (hello->instance_id >= NODE_FLEET_MAX ||
            (hello->instance_id && hello->role != COORD__ROLE__ROLE_LIFECYCLE)) {
                node_reject(n, c, "hello_rejected", "bad instance id");
                goto done;
        }
        addr = node_peer(hello->role, hello->instance_id);
        p = &n->peers[addr];
        if (!p->role) {
                /* A follower of the fleet this node has not met yet (node_new() sets up
                 * instance 0 of every role). */
                p->node = n;
                p->role = hello->role;
                p->id = hello->instance_id;
                p->backoff_ns = BACKOFF_MIN_NS;
        }
        if (cs->outgoing != p->dial) {
                node_reject(n, c, "hello_rejected", "peer on the wrong side of the connection");
                goto done;
        }
        if (hello->incarnation < p->max_incarnation) {
                /* Fencing: an older life of this peer.  Ignore it. */
                n->stale_rejected++;
                COORD_IPC_PEER_STALE((int)hello->role, (unsigned long long)hello->incarnation,
                                     (unsigned long long)p->max_incarnation);
                log_warn("stale_peer_ignored", "role=%s id=%u incarnation=%llu seen=%llu pid=%d",
                         node_role_name(hello->role), hello->instance_id,
                         (unsigned long long)hello->incarnation,
                         (unsigned long long)p->max_incarnation, hello->pid);
                ipc_conn_close(c);
                goto done;
        }
        if (p->conn && p->conn != c) {
                /* (2) a newer connection of this role replaces the current one. */
                struct conn_state *old = ipc_conn_userdata(p->conn);
                old->role = COORD__ROLE__ROLE_UNKNOWN;
                ipc_conn_close(p->conn);
                p->conn = NULL;
        }
        if (c == p->dialing)
                p->dialing = NULL;
        cs->role = hello->role;
        cs->peer = addr;
        cs->incarnation = hello->incarnation;
        p->max_incarnation = hello->incarnation;
        p->conn = c;
        p->since_ms = wall_ms();
        p->connects++;
        p->backoff_ns = BACKOFF_MIN_NS;
        if (!cs->outgoing && send_hello(n, c) < 0) {
                ipc_conn_close(c);
                goto done;
        }
        COORD_IPC_PEER_CONNECT((int)hello->role, (unsigned long long)hello->incarnation);
        log_info("peer_connected", "role=%s id=%u incarnation=%llu pid=%d",
                 node_role_name(hello->role), hello->instance_id,
                 (unsigned long long)hello->incarnation, hello->pid);
        if (n->h.on_peer_up)
                n->h.on_peer_up(n, addr, hello->incarnation, n->userdata);
done:
        coord__hello__free_unpacked(hello, NULL);
}

/* A status reply and what it points into; valid until the next status_build() (the
 * daemon's detail buffer is reused). */
struct status_buf {
        Coord__StatusReply reply;
        Coord__PeerStatus ps[NODE_PEERS], *psp[NODE_PEERS];
        Coord__Histogram hs[NODE_HISTS_MAX], *hsp[NODE_HISTS_MAX];
        uint64_t counts[NODE_HISTS_MAX][HIST_BUCKETS];
};

static void status_build(struct node *n, bool scrape, struct status_buf *b)
{
        Coord__StatusReply *reply = &b->reply;
        size_t k = 0;

        coord__status_reply__init(reply);
        reply->role = n->cfg.role;
        reply->pid = (int32_t)getpid();
        reply->incarnation = n->incarnation;
        reply->uptime_ms = now_ms() - n->start_mono_ms;
        reply->ready = n->ready;
        reply->instance = n->instance;
        reply->frames_rejected = n->frames_rejected + ipc_server_rejected(n->server);
        reply->stale_rejected = n->stale_rejected;
        reply->max_stall_us = loop_max_stall_ns(n->loop) / 1000;
        /* A scrape starts no new window (node_status_is_scrape()). */
        reply->window_stall_us = scrape ? 0 : loop_take_window_stall_ns(n->loop) / 1000;
        reply->detail = (char *)"";
        for (unsigned i = 0; i < NODE_PEERS; i++) {
                struct peer *p = &n->peers[i];
                if (!role_is_daemon(p->role) || p->role == n->cfg.role)
                        continue;
                coord__peer_status__init(&b->ps[k]);
                b->ps[k].role = p->role;
                b->ps[k].instance_id = p->id;
                b->ps[k].connected = p->conn != NULL;
                b->ps[k].incarnation = p->max_incarnation;
                b->ps[k].since_ms = p->since_ms;
                b->ps[k].reconnects = p->connects;
                b->psp[k] = &b->ps[k];
                k++;
        }
        reply->n_peers = k;
        reply->peers = b->psp;
        for (size_t i = 0; i < n->n_hists; i++) {
                Coord__Histogram *h = &b->hs[i];

                coord__histogram__init(h);
                h->name = (char *)n->hists[i].name;
                h->help = (char *)n->hists[i].help;
                hist_read(n->hists[i].h, b->counts[i], &h->sum_us);
                h->counts = b->counts[i];
                h->n_counts = HIST_BUCKETS;
                b->hsp[i] = h;
        }
        reply->n_histograms = n->n_hists;
        reply->histograms = b->hsp;
        n->scrape = scrape;
        if (n->h.on_status)
                n->h.on_status(n, reply, n->userdata);
        n->scrape = false;
}

static void handle_status(struct node *n, struct ipc_conn *c, const Coord__Envelope *env)
{
        Coord__StatusRequest *req;
        struct status_buf *b;
        bool scrape = false;

        /* An empty payload is a plain request (older coordctl); one that does not parse
         * is answered as one. */
        req = coord__status_request__unpack(NULL, env->payload.len, env->payload.data);
        if (req) {
                scrape = req->scrape;
                coord__status_request__free_unpacked(req, NULL);
        }
        b = malloc(sizeof(*b));
        if (!b)
                return;
        status_build(n, scrape, b);
        (void)ipc_conn_send_msg(c, COORD__MSG_TYPE__MSG_STATUS_REPLY, n->cfg.role, n->incarnation,
                                env->request_id, &b->reply.base);
        free(b);
}

/* The body of GET /metrics: this daemon's status as Prometheus text. */
static char *metrics_body(void *userdata, size_t *ret_len)
{
        struct node *n = userdata;
        struct status_buf *b = malloc(sizeof(*b));
        char *buf = NULL;
        size_t len = 0;
        FILE *f;
        int r;

        if (!b)
                return NULL;
        f = open_memstream(&buf, &len);
        if (!f) {
                free(b);
                return NULL;
        }
        status_build(n, true, b);
        r = metrics_render(f, &b->reply);
        if (fclose(f) != 0 || r < 0) {
                free(buf);
                buf = NULL;
        }
        free(b);
        *ret_len = len;
        return buf;
}

int node_add_hist(struct node *n, const char *name, const char *help, const struct hist *h)
{
        if (n->n_hists >= NODE_HISTS_MAX)
                return -ENOSPC;
        n->hists[n->n_hists].name = name;
        n->hists[n->n_hists].help = help;
        n->hists[n->n_hists].h = h;
        n->n_hists++;
        return 0;
}

bool node_status_is_scrape(const struct node *n)
{
        return n->scrape;
}

/* The service manager (node.h): each state once; a failure is logged once, as the
 * manager then times the daemon out, which the log must explain. */
static void notify(struct node *n, const char *state)
{
        int r = sdnotify_send(state);

        if (r < 0)
                log_warn_errno(r, "sd_notify_failed", "state=%s", state);
        else if (r > 0)
                log_debug("sd_notify", "state=%s", state);
}

static void watchdog_fire(struct loop *l, void *userdata)
{
        struct node *n = userdata;

        n->watchdog = NULL;
        (void)sdnotify_send("WATCHDOG=1");
        if (loop_timer_add(l, n->watchdog_ns, watchdog_fire, n, &n->watchdog) < 0)
                n->watchdog = NULL;
}

static void notify_stopping(struct node *n)
{
        if (n->notified_stopping)
                return;
        n->notified_stopping = true;
        notify(n, "STOPPING=1");
}

static void conn_on_frame(struct ipc_conn *c, const Coord__Envelope *env, void *userdata)
{
        struct conn_state *cs = userdata;
        struct node *n = cs->node;

        if (env->type == COORD__MSG_TYPE__MSG_HELLO) {
                handle_hello(n, c, cs, env);
                return;
        }
        if (cs->role == COORD__ROLE__ROLE_UNKNOWN) {
                node_reject(n, c, "frame_rejected", "first frame is not a hello");
                return;
        }
        if (cs->role != COORD__ROLE__ROLE_CTL) {
                struct peer *p = &n->peers[cs->peer];
                /* Fencing of messages: an older incarnation than one already seen. */
                if (env->sender != cs->role || env->incarnation < p->max_incarnation) {
                        n->stale_rejected++;
                        COORD_IPC_PEER_STALE((int)cs->role, (unsigned long long)env->incarnation,
                                             (unsigned long long)p->max_incarnation);
                        if (!cs->stale_logged)
                                log_warn("stale_message_ignored",
                                         "role=%s type=%d incarnation=%llu seen=%llu",
                                         node_role_name(cs->role), (int)env->type,
                                         (unsigned long long)env->incarnation,
                                         (unsigned long long)p->max_incarnation);
                        cs->stale_logged = true;
                        return;
                }
        }
        switch (env->type) {
        case COORD__MSG_TYPE__MSG_STATUS_REQUEST:
                handle_status(n, c, env);
                return;
        case COORD__MSG_TYPE__MSG_PING: {
                Coord__Envelope pong = COORD__ENVELOPE__INIT;
                pong.type = COORD__MSG_TYPE__MSG_PONG;
                pong.sender = n->cfg.role;
                pong.incarnation = n->incarnation;
                pong.request_id = env->request_id;
                pong.payload = env->payload;    /* echoed; borrowed for the call */
                (void)ipc_conn_send(c, &pong);
                return;
        }
        default:
                break;
        }
        if (cs->role == COORD__ROLE__ROLE_CTL) {
                if (n->h.on_ctl_message)
                        n->h.on_ctl_message(n, cs->ctl_id, env, n->userdata);
                return;
        }
        if (n->h.on_message)
                n->h.on_message(n, cs->peer, env, n->userdata);
}

static bool peer_conns_open(const struct node *n)
{
        for (unsigned i = 0; i < NODE_PEERS; i++)
                if (n->peers[i].conn || n->peers[i].dialing)
                        return true;
        return false;
}

int node_ctl_send(struct node *n, uint64_t ctl_id, Coord__MsgType type, uint64_t request_id,
                  const ProtobufCMessage *payload)
{
        for (struct conn_state *cs = n->ctls; cs; cs = cs->ctl_next)
                if (cs->ctl_id == ctl_id)
                        return ipc_conn_send_msg(cs->conn, type, n->cfg.role, n->incarnation,
                                                 request_id, payload);
        return -ENOTCONN;
}

static void conn_on_close(struct ipc_conn *c, int reason, void *userdata)
{
        struct conn_state *cs = userdata;
        struct node *n = cs->node;
        struct peer *p = NULL;

        if (reason == -EMSGSIZE || reason == -EBADMSG || reason == -EPROTO) {
                n->frames_rejected++;
                COORD_IPC_FRAME_REJECT(-1, reason);
                log_warn_errno(reason, "connection_closed_bad_frame", "role=%s peer_pid=%d",
                               node_role_name(cs->role), (int)ipc_conn_peer_pid(c));
        }
        if (cs->ctl_id) {
                if (cs->ctl_prev)
                        cs->ctl_prev->ctl_next = cs->ctl_next;
                else
                        n->ctls = cs->ctl_next;
                if (cs->ctl_next)
                        cs->ctl_next->ctl_prev = cs->ctl_prev;
        }
        if (role_is_daemon(cs->role))
                p = &n->peers[cs->peer];
        if (p && p->conn == c) {
                p->conn = NULL;
                p->since_ms = wall_ms();
                COORD_IPC_PEER_DISCONNECT((int)cs->role, (unsigned long long)cs->incarnation);
                log_info("peer_disconnected", "role=%s id=%u incarnation=%llu reason=%d",
                         node_role_name(cs->role), p->id, (unsigned long long)cs->incarnation, reason);
                if (n->h.on_peer_down)
                        n->h.on_peer_down(n, cs->peer, n->userdata);
        }
        for (unsigned i = 0; i < NODE_PEERS; i++)
                if (n->peers[i].dialing == c)
                        n->peers[i].dialing = NULL;
        free(cs);
        if (n->draining) {
                if (!peer_conns_open(n) && !n->server_closing)
                        loop_stop(n->loop);
                return;
        }
        for (unsigned i = 1; i < N_ROLES; i++)        /* only instance 0 is dialed */
                if (n->peers[i].dial && !n->peers[i].conn && !n->peers[i].dialing && n->loop)
                        peer_schedule_redial(&n->peers[i]);
}

static void on_accept(struct ipc_server *s, struct ipc_conn *c, void *userdata)
{
        struct node *n = userdata;
        struct conn_state *cs = calloc(1, sizeof(*cs));

        if (!cs) {
                ipc_conn_close(c);
                /* ipc still calls on_close with the ops it has; give it a state. */
                return;
        }
        *cs = (struct conn_state){ .node = n, .role = COORD__ROLE__ROLE_UNKNOWN };
        ipc_conn_set_ops(c, &conn_ops, cs);
}

static void on_signal(struct loop *l, int signo, void *userdata)
{
        struct node *n = userdata;

        log_info("signal_received", "signo=%d", signo);
        notify_stopping(n);
        if (n->h.on_terminate)
                n->h.on_terminate(n, n->userdata);
        else
                node_stop(n);
}

static int write_pid_file(struct node *n)
{
        char buf[32];
        _cleanup_free_ char *name = NULL;

        snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
        name = member_path("", n->cfg.role, n->cfg.instance_id, ".pid");
        if (!name)
                return -ENOMEM;
        return write_file_durable(n->run_dir, name + 1, buf);  /* past the "/" */
}

int node_new(const struct node_config *cfg, const struct node_handler *h, void *userdata,
             struct node **ret)
{
        struct node *n;
        _cleanup_free_ char *lock_path = NULL;
        int r;

        assert(role_is_daemon(cfg->role));
        assert(cfg->instance_id < NODE_FLEET_MAX &&
               (cfg->instance_id == 0 || cfg->role == COORD__ROLE__ROLE_LIFECYCLE));
        n = calloc(1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        n->lock_fd = -EBADF;
        n->cfg = *cfg;
        if (h)
                n->h = *h;
        n->userdata = userdata;
        n->start_mono_ms = now_ms();
        n->start_wall_ms = wall_ms();
        n->instance = strdup(cfg->instance);
        n->run_dir = strdup(cfg->run_dir);
        n->dir = member_path(cfg->data_dir, cfg->role, cfg->instance_id, "");
        if (!n->instance || !n->run_dir || !n->dir) {
                r = -ENOMEM;
                goto fail;
        }
        r = mkdir_p(n->dir, 0700);
        if (r < 0) {
                log_error_errno(r, "data_dir_failed", "path=%s", n->dir);
                goto fail;
        }
        r = mkdir_p(n->run_dir, 0700);
        if (r < 0) {
                log_error_errno(r, "run_dir_failed", "path=%s", n->run_dir);
                goto fail;
        }
        if (asprintf(&lock_path, "%s/lock", n->dir) < 0) {
                r = -ENOMEM;
                goto fail;
        }
        n->lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (n->lock_fd < 0) {
                r = log_error_errno(-errno, "lock_open_failed", "path=%s", lock_path);
                goto fail;
        }
        if (flock(n->lock_fd, LOCK_EX | LOCK_NB) < 0) {
                r = errno == EWOULDBLOCK ? -EBUSY : -errno;
                if (r == -EBUSY && cfg->standby)
                        r = node_standby_wait(n->lock_fd, &(struct node_standby_info){
                                .role = cfg->role, .run_dir = n->run_dir,
                                .instance = n->instance, .start_ms = n->start_mono_ms });
                if (r == -ECANCELED)
                        goto fail;
                if (r < 0) {
                        log_error_errno(r, "already_running", "role=%s lock=%s",
                                        node_role_name(cfg->role), lock_path);
                        goto fail;
                }
        }
        if (cfg->standby)
                log_info("standby_lock_taken", "role=%s waited_ms=%llu", node_role_name(cfg->role),
                         (unsigned long long)(now_ms() - n->start_mono_ms));
        /* (4) durable before we talk to anyone. */
        r = incarnation_bump(n->dir, &n->incarnation);
        if (r < 0) {
                log_error_errno(r, "incarnation_failed", "dir=%s", n->dir);
                goto fail;
        }
        r = loop_new(256, &n->loop);
        if (r < 0) {
                log_error_errno(r, "loop_failed", "");
                goto fail;
        }
        n->sock_path = node_socket_path_id(n->run_dir, cfg->role, cfg->instance_id);
        n->pid_path = node_pid_path_id(n->run_dir, cfg->role, cfg->instance_id);
        if (!n->sock_path || !n->pid_path) {
                r = -ENOMEM;
                goto fail;
        }
        /* We hold the role's lock, so a socket file at our path is a dead predecessor's:
         * remove it.  (ipc_listen() alone would take a socket that still accepts --
         * the kernel can keep a killed process's listener alive for a moment -- for a
         * live server and refuse with -EADDRINUSE.) */
        {
                struct stat st;
                if (lstat(n->sock_path, &st) == 0 && S_ISSOCK(st.st_mode))
                        (void)unlink(n->sock_path);
        }
        r = ipc_listen(n->loop, n->sock_path, cfg->max_frame, on_accept, n, &n->server);
        if (r < 0) {
                log_error_errno(r, "listen_failed", "path=%s", n->sock_path);
                goto fail;
        }
        r = write_pid_file(n);
        if (r < 0) {
                log_error_errno(r, "pid_file_failed", "path=%s", n->pid_path);
                goto fail;
        }
        r = loop_signal_add(n->loop, SIGTERM, on_signal, n);
        if (r >= 0)
                r = loop_signal_add(n->loop, SIGINT, on_signal, n);
        if (r < 0) {
                log_error_errno(r, "signal_setup_failed", "");
                goto fail;
        }
        signal(SIGPIPE, SIG_IGN);
        /* A write past RLIMIT_FSIZE fails with EFBIG, which the stores turn into their
         * sticky error (no more writes, reads go on, a restart recovers), instead of
         * the signal's default: the process killed mid-write. */
        signal(SIGXFSZ, SIG_IGN);
        for (unsigned i = 1; i < N_ROLES; i++) {
                struct peer *p = &n->peers[i];
                p->node = n;
                p->role = (Coord__Role)i;
                p->backoff_ns = BACKOFF_MIN_NS;
                p->dial = role_is_daemon(p->role) && p->role != cfg->role &&
                          role_dials(cfg->role, p->role);
                if (p->dial)
                        peer_dial(n->loop, p);
        }
        if (cfg->metrics_port) {
                r = node_http_new(n->loop, cfg->metrics_port, "/metrics", metrics_body, n, &n->http);
                if (r < 0) {
                        log_error_errno(r, "metrics_listen_failed", "addr=127.0.0.1:%u",
                                        (unsigned)cfg->metrics_port);
                        goto fail;
                }
                log_info("metrics_listening", "addr=127.0.0.1:%u path=/metrics",
                         (unsigned)cfg->metrics_port);
        }
        {
                uint64_t usec;
                if (sdnotify_watchdog_usec(&usec) > 0) {
                        n->watchdog_ns = usec * 1000 / 2;
                        if (loop_timer_add(n->loop, n->watchdog_ns, watchdog_fire, n, &n->watchdog) < 0)
                                n->watchdog = NULL;
                        /* The first ping now: startup (a catalog load) may take a while
                         * before the loop turns. */
                        (void)sdnotify_send("WATCHDOG=1");
                }
        }
        COORD_DAEMON_START((int)cfg->role, (unsigned long long)n->incarnation);
        log_info("daemon_started", "role=%s id=%u incarnation=%llu instance=%s data_dir=%s run_dir=%s",
                 node_role_name(cfg->role), cfg->instance_id, (unsigned long long)n->incarnation, n->instance,
                 cfg->data_dir, n->run_dir);
        *ret = n;
        return 0;
fail:
        node_free(n);
        return r;
}


static void server_closed(void *arg)
{
        struct node *n = arg;

        n->server_closing = false;
        if (n->draining && !peer_conns_open(n))
                loop_stop(n->loop);
}

struct node *node_free(struct node *n)
{
        if (!n)
                return NULL;
        for (unsigned i = 1; i < N_ROLES && n->loop; i++) {
                loop_timer_cancel(n->loop, n->peers[i].redial);
                n->peers[i].redial = NULL;
        }
        /* Freeing the server closes the listening socket and unlinks its path; the pid
         * file goes only if it is ours (a failed second start must not remove it).  An
         * armed accept ends from the loop (server_closed()), in the drain below. */
        if (n->server) {
                n->server_closing = true;
                ipc_server_on_destroyed(n->server, server_closed, n);
                n->server = ipc_server_free(n->server);
                if (n->pid_path)
                        unlink(n->pid_path);
        }
        /* Close the peer connections and let the loop finish the closes (a short drain),
         * so that nothing of them is left behind at exit. */
        if (n->loop && (peer_conns_open(n) || n->server_closing)) {
                n->draining = true;
                for (unsigned i = 0; i < NODE_PEERS; i++) {
                        ipc_conn_close(n->peers[i].conn);
                        ipc_conn_close(n->peers[i].dialing);
                }
                if (peer_conns_open(n) || n->server_closing)
                        (void)loop_run_for(n->loop, NODE_DRAIN_NS);
        }
        node_ring_stop(n);
        if (n->ring_waker)
                n->ring_waker = loop_waker_free(n->loop, n->ring_waker);
        n->ring = fring_reader_free(n->ring);
        free(n->ring_name);
        if (n->loop && n->watchdog)
                loop_timer_cancel(n->loop, n->watchdog);
        n->loop = loop_free(n->loop);
        n->http = node_http_free(n->http);      /* after the loop: its drain writes to http's ios */
        if (n->lock_fd >= 0)
                close(n->lock_fd);
        free(n->dir);
        free(n->sock_path);
        free(n->pid_path);
        free(n->instance);
        free(n->run_dir);
        free(n);
        return NULL;
}

int node_run(struct node *n)
{
        int r = loop_run(n->loop);

        notify_stopping(n);
        return r;
}

void node_stop(struct node *n)
{
        loop_stop(n->loop);
}

void node_set_ready(struct node *n, bool ready)
{
        if (ready && !n->ready) {
                COORD_DAEMON_READY((int)n->cfg.role);
                log_info("daemon_ready", "role=%s incarnation=%llu", node_role_name(n->cfg.role),
                         (unsigned long long)n->incarnation);
        }
        /* After the log line and the flag: a manager that sees READY=1 finds the
         * status ready too. */
        n->ready = ready;
        if (ready && !n->notified_ready) {
                n->notified_ready = true;
                notify(n, "READY=1");
        }
}

struct loop *node_loop(struct node *n) { return n->loop; }

uint32_t node_max_frame(const struct node *n)
{
        return n->cfg.max_frame ? n->cfg.max_frame : IPC_MAX_FRAME_DEFAULT;
}
uint64_t node_incarnation(const struct node *n) { return n->incarnation; }

int node_raise_incarnation(struct node *n, uint64_t above)
{
        char out[32];
        int r;

        if (n->incarnation > above)
                return 0;
        if (above >= UINT64_MAX - 1)
                return -EOVERFLOW;
        snprintf(out, sizeof(out), "%llu\n", (unsigned long long)(above + 1));
        r = write_file_durable(n->dir, "incarnation", out);
        if (r < 0)
                return r;
        log_warn("incarnation_raised", "role=%s from=%llu to=%llu", node_role_name(n->cfg.role),
                 (unsigned long long)n->incarnation, (unsigned long long)(above + 1));
        n->incarnation = above + 1;
        return 0;
}
Coord__Role node_role(const struct node *n) { return n->cfg.role; }
const char *node_dir(const struct node *n) { return n->dir; }

uint32_t node_instance_id(const struct node *n) { return n->cfg.instance_id; }
void node_set_fence(struct node *n, uint64_t epoch) { n->fence = epoch; }

static struct ipc_conn *peer_conn(const struct node *n, node_peer_t peer)
{
        return peer < NODE_PEERS && role_is_daemon(n->peers[peer].role) ? n->peers[peer].conn : NULL;
}

bool node_peer_connected(const struct node *n, node_peer_t peer)
{
        return peer_conn(n, peer) != NULL;
}

size_t node_peer_pending(const struct node *n, node_peer_t peer)
{
        const struct ipc_conn *c = peer_conn(n, peer);

        return c ? ipc_conn_pending(c) : 0;
}

static void envelope_init(const struct node *n, Coord__Envelope *env, Coord__MsgType type,
                          uint64_t request_id)
{
        coord__envelope__init(env);
        env->type = type;
        env->sender = n->cfg.role;
        env->incarnation = n->incarnation;
        env->request_id = request_id;
        env->fence = n->fence;
}

int node_send(struct node *n, node_peer_t to, Coord__MsgType type, uint64_t request_id,
              const ProtobufCMessage *payload)
{
        struct ipc_conn *c = peer_conn(n, to);
        Coord__Envelope env;

        if (!c)
                return -ENOTCONN;
        envelope_init(n, &env, type, request_id);
        return ipc_conn_send_payload(c, &env, payload);
}

int node_send_raw(struct node *n, node_peer_t to, Coord__MsgType type, uint64_t request_id,
                  const uint8_t *payload, size_t len)
{
        struct ipc_conn *c = peer_conn(n, to);
        Coord__Envelope env;

        if (!c)
                return -ENOTCONN;
        envelope_init(n, &env, type, request_id);
        env.payload.data = (uint8_t *)payload;
        env.payload.len = len;
        return ipc_conn_send(c, &env);
}

/* ---- flags ---- */

#include "conf.h"

int node_args_parse(int argc, char **argv, Coord__Role role, const struct conf_option *extra,
                    size_t n_extra, struct node_args *a, int *ret_exit)
{
        struct conf_option base[] = {
                { "data-dir", CONF_STR, &a->data_dir, 0, "durable state; the role uses <data-dir>/<role>/" },
                { "run-dir", CONF_STR, &a->run_dir, 0, "sockets and pid files (created mode 0700)" },
                { "instance", CONF_STR, &a->instance, 0, "instance id; names shared memory (default: default)" },
                { "log-level", CONF_STR, &a->log_level, 0, "error, warn, info (default) or debug" },
                { "max-frame-bytes", CONF_U64, &a->max_frame, UINT32_MAX, "largest IPC frame accepted (default 16 MiB)" },
                { "metrics-port", CONF_U64, &a->metrics_port, 65535, "serve GET /metrics (Prometheus text) on 127.0.0.1:N from the loop (default 0: off)" },
        };
        struct conf_option *all;
        char **args = NULL, err[512] = "";
        size_t n_all = ELEMENTSOF(base) + n_extra;
        int nargs = 0, r;
        enum log_level lvl;
        const char *name = node_role_name(role);

        *a = (struct node_args){ .max_frame = IPC_MAX_FRAME_DEFAULT };
        all = calloc(n_all, sizeof(*all));
        args = calloc((size_t)argc + 1, sizeof(char *));
        if (!all || !args) {
                free(all);
                free(args);
                fprintf(stderr, "coord-%s: out of memory\n", name);
                *ret_exit = NODE_EXIT_FAILURE;
                return 1;
        }
        memcpy(all, base, sizeof(base));
        if (n_extra)
                memcpy(all + ELEMENTSOF(base), extra, n_extra * sizeof(*extra));
        r = conf_parse(argc, argv, name, all, n_all, args, &nargs, err, sizeof(err));
        if (r == 1) {
                printf("Usage: coord-%s --data-dir DIR --run-dir DIR [options]\n\nOptions:\n", name);
                conf_usage(stdout, all, n_all);
                *ret_exit = 0;
                goto out;
        }
        if (r == 0 && nargs > 0) {
                snprintf(err, sizeof(err), "unexpected argument '%s'", args[0]);
                r = -EINVAL;
        }
        if (r == 0 && (!a->data_dir || !a->run_dir)) {
                snprintf(err, sizeof(err), "--data-dir and --run-dir are required");
                r = -EINVAL;
        }
        if (r == 0 && !a->instance && !(a->instance = strdup("default")))
                r = -ENOMEM;
        if (r == 0 && a->instance &&
            (!*a->instance || strlen(a->instance) > 64 || strspn(a->instance, INSTANCE_CHARS) != strlen(a->instance))) {
                snprintf(err, sizeof(err), "--instance must be 1 to 64 characters of [A-Za-z0-9._-]");
                r = -EINVAL;
        }
        if (r == 0 && a->max_frame < IPC_MAX_FRAME_MIN) {
                snprintf(err, sizeof(err), "--max-frame-bytes must be at least %u", IPC_MAX_FRAME_MIN);
                r = -EINVAL;
        }
        lvl = a->log_level ? log_level_from_string(a->log_level) : LOG_LEVEL_INFO;
        if (r == 0 && lvl < 0) {
                snprintf(err, sizeof(err), "--log-level must be error, warn, info or debug");
                r = -EINVAL;
        }
        if (r < 0) {
                fprintf(stderr, "coord-%s: %s (try --help)\n", name, err[0] ? err : strerror(-r));
                *ret_exit = NODE_EXIT_USAGE;
                goto out;
        }
        log_setup(name, lvl);
        free(all);
        free(args);
        return 0;
out:
        /* Free the base strings; the extra table's strings are the caller's to free. */
        conf_done(base, ELEMENTSOF(base));
        free(all);
        free(args);
        return 1;
}

void node_args_done(struct node_args *a)
{
        free(a->data_dir);
        free(a->run_dir);
        free(a->instance);
        free(a->log_level);
        *a = (struct node_args){ 0 };
}

/* ---- client side ---- */

static int ctl_call_path(const char *path, Coord__MsgType type, const ProtobufCMessage *payload,
                         int timeout_ms, Coord__Envelope **ret)
{
        _cleanup_free_ uint8_t *pbuf = NULL;
        _cleanup_close_ int fd = -EBADF;
        Coord__Hello hello = COORD__HELLO__INIT;
        Coord__Envelope env = COORD__ENVELOPE__INIT, *reply = NULL;
        uint8_t hbuf[128];
        uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
        size_t plen;
        int r;

        if (!path)
                return -ENOMEM;
        plen = protobuf_c_message_get_packed_size(payload);
        pbuf = malloc(plen ? plen : 1);
        if (!pbuf)
                return -ENOMEM;
        protobuf_c_message_pack(payload, pbuf);
        fd = ipc_sync_connect(path);
        if (fd < 0)
                return fd;
        hello.role = COORD__ROLE__ROLE_CTL;
        hello.pid = (int32_t)getpid();
        hello.instance = (char *)"";
        env.type = COORD__MSG_TYPE__MSG_HELLO;
        env.sender = COORD__ROLE__ROLE_CTL;
        env.payload.len = coord__hello__pack(&hello, hbuf);
        env.payload.data = hbuf;
        r = ipc_sync_send(fd, &env, IPC_MAX_FRAME_DEFAULT);
        if (r < 0)
                return r;
        env.type = type;
        env.request_id = 1;
        env.payload.len = plen;
        env.payload.data = pbuf;
        r = ipc_sync_send(fd, &env, IPC_MAX_FRAME_DEFAULT);
        if (r < 0)
                return r;
        for (;;) {
                uint64_t now = now_ms();

                if (now >= deadline)
                        return -ETIMEDOUT;
                r = ipc_sync_recv(fd, IPC_MAX_FRAME_DEFAULT, (int)(deadline - now), &reply);
                if (r < 0)
                        return r;
                if (reply->type == COORD__MSG_TYPE__MSG_HELLO || reply->request_id != 1) {
                        coord__envelope__free_unpacked(reply, NULL);    /* its Hello */
                        continue;
                }
                *ret = reply;
                return 0;
        }
}

int node_ctl_call(const char *run_dir, Coord__Role role, Coord__MsgType type,
                  const ProtobufCMessage *payload, int timeout_ms, Coord__Envelope **ret)
{
        _cleanup_free_ char *path = node_socket_path(run_dir, role);

        return ctl_call_path(path, type, payload, timeout_ms, ret);
}

static int query_status_path(const char *path, int timeout_ms, bool scrape,
                             Coord__StatusReply **ret)
{
        Coord__StatusRequest req = COORD__STATUS_REQUEST__INIT;
        Coord__Envelope *reply = NULL;
        Coord__StatusReply *s;
        int r;

        req.scrape = scrape;
        r = ctl_call_path(path, COORD__MSG_TYPE__MSG_STATUS_REQUEST, &req.base, timeout_ms, &reply);
        if (r < 0)
                return r;
        if (reply->type != COORD__MSG_TYPE__MSG_STATUS_REPLY) {
                coord__envelope__free_unpacked(reply, NULL);
                return -EBADMSG;
        }
        s = coord__status_reply__unpack(NULL, reply->payload.len, reply->payload.data);
        coord__envelope__free_unpacked(reply, NULL);
        if (!s)
                return -EBADMSG;
        *ret = s;
        return 0;
}

static int query_status(const char *run_dir, Coord__Role role, int timeout_ms, bool scrape,
                        Coord__StatusReply **ret)
{
        _cleanup_free_ char *path = node_socket_path(run_dir, role);

        return query_status_path(path, timeout_ms, scrape, ret);
}

int node_query_status(const char *run_dir, Coord__Role role, int timeout_ms,
                      Coord__StatusReply **ret)
{
        return query_status(run_dir, role, timeout_ms, false, ret);
}

int node_query_status_path(const char *sock_path, int timeout_ms, Coord__StatusReply **ret)
{
        return query_status_path(sock_path, timeout_ms, false, ret);
}

int node_query_status_scrape(const char *run_dir, Coord__Role role, int timeout_ms,
                             Coord__StatusReply **ret)
{
        return query_status(run_dir, role, timeout_ms, true, ret);
}
