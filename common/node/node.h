/* node.h -- what every Coord daemon is: a role, an incarnation, a run directory with a
 * socket, peers it connects to or accepts, and an io_uring loop.
 *
 * Topology (docs/ARCHITECTURE.md): every daemon listens on <run-dir>/<role>.sock.
 * The adapter and the lifecycle connect to the controller; the lifecycle connects to
 * the adapter.  coordctl connects to any of them with role CTL.  So each daemon has
 * two peers, and exactly one side of each pair dials (and redials with backoff).
 *
 * Incarnation: <data-dir>/<role>/incarnation holds the last one; node_new() increments
 * it and makes it durable (write, fsync, rename, fsync dir) before the daemon talks to
 * anyone.  A lock file held with flock() for the life of the process refuses a second
 * daemon of the same role on the same data directory.
 *
 * Fencing: per peer role the node remembers the highest incarnation it has seen.  A
 * Hello or a message from a lower incarnation is ignored with one log line and counted
 * (stale_rejected).  The first frame on every connection must be a Hello.
 *
 * Threading: everything runs in the loop's thread.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "coord.pb-c.h"

struct loop;
struct node;            /* opaque */
struct fring_frontier;

/* A peer's address: its role and, for a lifecycle follower, its instance id
 * (--instance-id, 0 to NODE_FLEET_MAX - 1): a fleet of followers shares one adapter and
 * one controller (docs/lifecycle.md, "A fleet of followers").  Instance 0's address is
 * its role, so code that knows one follower reads as before; compare roles with
 * node_peer_role().  Only the lifecycle role has instances above 0. */
typedef uint32_t node_peer_t;
#define NODE_ROLES      5u      /* COORD__ROLE__ROLE_CTL + 1 */
#define NODE_FLEET_MAX  16u
#define NODE_PEERS      (NODE_ROLES * NODE_FLEET_MAX)

static inline node_peer_t node_peer(Coord__Role role, uint32_t id)
{
        return (node_peer_t)role + NODE_ROLES * id;
}

static inline Coord__Role node_peer_role(node_peer_t p)
{
        return (Coord__Role)(p % NODE_ROLES);
}

static inline uint32_t node_peer_id(node_peer_t p)
{
        return p / NODE_ROLES;
}

struct node_config {
        Coord__Role role;
        const char *instance;   /* names shared-memory regions */
        const char *data_dir;   /* the role keeps its files under <data-dir>/<role>/ */
        const char *run_dir;    /* sockets and pid files, created mode 0700 */
        uint32_t max_frame;
        uint16_t metrics_port;  /* GET /metrics on 127.0.0.1:port from the loop; 0: none */
        bool standby;           /* wait for the role's lock instead of -EBUSY (node-standby.c) */
        uint32_t instance_id;   /* lifecycle only: its files are <data-dir>/lifecycle-K/,
                                 * <run-dir>/lifecycle-K.{sock,pid} for K > 0 */
};

struct node_handler {
        /* A message from a current peer (Hello, status and ping are handled by the node). */
        void (*on_message)(struct node *n, node_peer_t from, const Coord__Envelope *env,
                           void *userdata);
        /* A peer completed its Hello / lost its connection. */
        void (*on_peer_up)(struct node *n, node_peer_t peer, uint64_t incarnation, void *userdata);
        void (*on_peer_down)(struct node *n, node_peer_t peer, void *userdata);
        /* Fill daemon-specific status fields (ring_generation, catalog_seq, detail). */
        void (*on_status)(struct node *n, Coord__StatusReply *reply, void *userdata);
        /* SIGTERM/SIGINT: default is node_stop(). */
        void (*on_terminate)(struct node *n, void *userdata);
        /* A request from a coordctl connection (role CTL) that the node does not serve
         * itself (status and ping it does).  ctl_id names the connection: answer with
         * node_ctl_send(), now or later.  Without this handler such messages are
         * ignored. */
        void (*on_ctl_message)(struct node *n, uint64_t ctl_id, const Coord__Envelope *env,
                               void *userdata);
        /* Frontier ring records (only after node_follow_ring()).  `resynced` says the
         * reader started a snapshot: treat everything known before as stale; the
         * snapshot's records follow in this and later calls. */
        void (*on_frontiers)(struct node *n, const struct fring_frontier *f, size_t count,
                             bool resynced, void *userdata);
};

const char *node_role_name(Coord__Role role);
Coord__Role node_role_from_name(const char *name);

/* Takes the role lock, bumps the incarnation, creates the loop, listens, writes the pid
 * file and starts dialing the peers this role dials.  Returns -EBUSY when another
 * daemon of this role holds the lock; with cfg->standby it waits for the lock instead
 * (node-standby.c), and returns -ECANCELED when SIGTERM/SIGINT ends that wait. */
int node_new(const struct node_config *cfg, const struct node_handler *h, void *userdata,
             struct node **ret);
/* Closes everything, removes the socket and the pid file.  Accepts NULL. */
struct node *node_free(struct node *n);

int node_run(struct node *n);
void node_stop(struct node *n);
void node_set_ready(struct node *n, bool ready);

struct loop *node_loop(struct node *n);
/* The largest frame this node sends or accepts on its links (--max-frame-bytes). */
uint32_t node_max_frame(const struct node *n);
uint64_t node_incarnation(const struct node *n);
/* Make the incarnation at least above + 1, durably (the incarnation file), when it is
 * not above `above` yet: a writer epoch found in the catalog that an incarnation file
 * does not know of.  Before node_run() only: no Hello has gone out yet. */
int node_raise_incarnation(struct node *n, uint64_t above);
Coord__Role node_role(const struct node *n);
/* <data-dir>/<role>, created. */
const char *node_dir(const struct node *n);
bool node_peer_connected(const struct node *n, node_peer_t peer);
/* Bytes queued to peer and not yet written (ipc_conn_pending()); 0 when not connected. */
size_t node_peer_pending(const struct node *n, node_peer_t peer);
/* This daemon's --instance-id (0 but for a lifecycle follower of a fleet). */
uint32_t node_instance_id(const struct node *n);
/* From now on every message to a peer carries fence = epoch (Envelope.fence): the
 * epoch of the lease the sender's work is fenced by; 0: none. */
void node_set_fence(struct node *n, uint64_t epoch);

/* Send to the current connection of a peer; -ENOTCONN when it is down. */
int node_send(struct node *n, node_peer_t to, Coord__MsgType type, uint64_t request_id,
              const ProtobufCMessage *payload);

/* The same with an already encoded payload (kept by the caller, e.g. to resend after a
 * reconnect). */
int node_send_raw(struct node *n, node_peer_t to, Coord__MsgType type, uint64_t request_id,
                  const uint8_t *payload, size_t len);

/* Answer a coordctl connection (see on_ctl_message); -ENOTCONN when it has gone away
 * meanwhile (a coordctl that timed out). */
int node_ctl_send(struct node *n, uint64_t ctl_id, Coord__MsgType type, uint64_t request_id,
                  const ProtobufCMessage *payload);

/* Paths every tool agrees on.  Return malloc'ed strings or NULL. */
char *node_socket_path(const char *run_dir, Coord__Role role);
char *node_pid_path(const char *run_dir, Coord__Role role);
/* The same for instance id of role (lifecycle-K.sock for K > 0). */
char *node_socket_path_id(const char *run_dir, Coord__Role role, uint32_t id);
char *node_pid_path_id(const char *run_dir, Coord__Role role, uint32_t id);
/* A standby's status socket while it waits for the lock (node-standby.c note 2):
 * <run-dir>/<role>.standby.<pid>.sock. */
char *node_standby_socket_path(const char *run_dir, Coord__Role role, int pid);

/* ---- Metrics and the service manager (docs/operations.md). ----
 *
 * The node tells a service manager (sd_notify, common/sdnotify.h) READY=1 at the first
 * node_set_ready(true), STOPPING=1 at SIGTERM/SIGINT or when node_run() returns, and
 * WATCHDOG=1 from a loop timer at half of $WATCHDOG_USEC: a loop that stops turning
 * stops the pings.  With cfg->metrics_port it serves the status as Prometheus text
 * (common/node/metrics.h) over HTTP on 127.0.0.1, in its loop. */

struct hist;
#define NODE_HISTS_MAX 8

/* Report h (the caller's, alive as long as the node) in every status reply, and so in
 * the metrics, as coord_<role>_<name>.  Register at startup.  -ENOSPC past
 * NODE_HISTS_MAX. */
int node_add_hist(struct node *n, const char *name, const char *help, const struct hist *h);
/* True while on_status runs for a metrics scrape (HTTP, or coordctl metrics): report,
 * but do not start a new "since the previous status request" window. */
bool node_status_is_scrape(const struct node *n);

/* ---- The flags every daemon takes (docs/operations.md). ---- */

struct conf_option;

struct node_args {
        char *data_dir;         /* --data-dir (required) */
        char *run_dir;          /* --run-dir (required) */
        char *instance;         /* --instance, default "default" */
        char *log_level;        /* --log-level error|warn|info|debug */
        uint64_t max_frame;     /* --max-frame-bytes */
        uint64_t metrics_port;  /* --metrics-port, 0 = none */
};

/* Exit statuses of the daemons and coordctl. */
#define NODE_EXIT_FAILURE 1     /* runtime failure; see the log */
#define NODE_EXIT_USAGE   64    /* bad flag, config file or value (EX_USAGE) */
#define NODE_EXIT_RUNNING 75    /* another daemon of this role holds the data dir (EX_TEMPFAIL) */

/* Parse the common flags plus `extra` (the daemon's own), set up logging.  Returns 0,
 * or an exit status (0 after --help, NODE_EXIT_USAGE after a printed error) in
 * *ret_exit with a return of 1. */
int node_args_parse(int argc, char **argv, Coord__Role role, const struct conf_option *extra,
                    size_t n_extra, struct node_args *a, int *ret_exit);
void node_args_done(struct node_args *a);

/* ---- Following the controller's frontier ring (adapter, lifecycle). ---- */

struct fring_reader;

/* Follow this instance's frontier ring: attach read-only (retrying until the controller
 * has created it) and deliver its records to on_frontiers in the loop.  The loop thread
 * sleeps on the ring's futex in its io_uring; where the kernel cannot (before Linux
 * 6.7), or with wait_thread, a watcher thread sleeps on it with a reader of its own and
 * wakes the loop through an eventfd (node-ring.c note 5).  Nothing polls.  The mapping
 * survives controller restarts (the generation changes and the reader resyncs). */
int node_follow_ring(struct node *n, bool wait_thread);
/* "loop" or "thread"; the loop's wake-ups by the ring so far (0 in thread mode); the
 * reads of the ring that delivered records to on_frontiers, in either mode. */
const char *node_ring_wait_mode(const struct node *n);
uint64_t node_ring_loop_wakes(const struct node *n);
uint64_t node_ring_reads(const struct node *n);
/* Records one turn of the loop delivers before it yields (node-ring.c note 5a; 0: the
 * built-in 16384), set before node_follow_ring(); the turns that yielded so far. */
void node_ring_set_read_budget(struct node *n, size_t budget);
uint64_t node_ring_yields(const struct node *n);
/* The attached reader, or NULL while not attached yet. */
struct fring_reader *node_ring(struct node *n);

/* ---- Client side (coordctl, tests). ---- */

/* Ask the daemon of `role` under run_dir for its status (blocking, at most timeout_ms).
 * 0 with *ret set (free with coord__status_reply__free_unpacked), -ENOENT /
 * -ECONNREFUSED when it is down, -ETIMEDOUT when it does not answer. */
int node_query_status(const char *run_dir, Coord__Role role, int timeout_ms,
                      Coord__StatusReply **ret);
/* The same from the socket at sock_path (a standby's, node_standby_socket_path()). */
int node_query_status_path(const char *sock_path, int timeout_ms, Coord__StatusReply **ret);
/* The same as a metrics scrape: the daemon starts no new window (node_status_is_scrape()). */
int node_query_status_scrape(const char *run_dir, Coord__Role role, int timeout_ms,
                             Coord__StatusReply **ret);
/* Send one request of `type` as CTL and wait (at most timeout_ms) for the answer with
 * the same request id: 0 with the envelope in *ret (free with
 * coord__envelope__free_unpacked; its type is the daemon's answer, e.g. MSG_ERROR).
 * Errors as node_query_status(). */
int node_ctl_call(const char *run_dir, Coord__Role role, Coord__MsgType type,
                  const ProtobufCMessage *payload, int timeout_ms, Coord__Envelope **ret);
