/* node-internal.h -- the node's state, shared by node.c and node-ring.c only (the
 * daemons see struct node as opaque, node.h).  Notes (1)-(4) are in node.c, note 5 in
 * node-ring.c. */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "loop/loop.h"
#include "node.h"

#define N_ROLES          (COORD__ROLE__ROLE_CTL + 1)
_Static_assert(N_ROLES == NODE_ROLES, "node_peer_t packs a role in NODE_ROLES");

struct hist;
struct ipc_conn;
struct ipc_server;
struct node_http;

struct peer {
        struct node *node;
        Coord__Role role;               /* 0: a slot no peer has used */
        uint32_t id;                    /* instance id (lifecycle fleet) */
        bool dial;                      /* we connect to it (else it connects to us) */
        struct ipc_conn *conn;          /* current connection, after its Hello */
        struct ipc_conn *dialing;       /* our outgoing connection before its Hello */
        uint64_t max_incarnation;       /* highest seen, for fencing; 0 = never */
        uint64_t since_ms;
        uint32_t connects;
        uint64_t backoff_ns;
        struct loop_timer *redial;
};

/* Per-connection state, the ipc userdata. */
struct conn_state {
        struct node *node;
        Coord__Role role;               /* ROLE_UNKNOWN until its Hello */
        node_peer_t peer;               /* its address, from its Hello */
        uint64_t incarnation;
        bool outgoing;
        bool stale_logged;              /* its first stale message was logged: one line per connection */
        /* CTL connections only: linked in node->ctls from their Hello to on_close, so
         * that an answer given later (node_ctl_send) finds the connection or learns it
         * is gone.  ctl_id is never reused. */
        uint64_t ctl_id;
        struct ipc_conn *conn;
        struct conn_state *ctl_prev, *ctl_next;
};

struct node {
        struct node_config cfg;
        struct node_handler h;
        void *userdata;
        char *dir, *sock_path, *pid_path, *instance, *run_dir;
        int lock_fd;
        uint64_t incarnation;
        uint64_t start_mono_ms, start_wall_ms;
        bool ready;
        struct loop *loop;
        struct ipc_server *server;
        struct peer peers[NODE_PEERS];  /* by node_peer_t */
        uint64_t fence;                 /* Envelope.fence of what we send (node_set_fence) */
        uint64_t frames_rejected, stale_rejected;
        struct conn_state *ctls;        /* CTL connections after their Hello */
        uint64_t next_ctl_id;
        char *ring_name;
        struct fring_reader *ring;      /* the loop's reader */
        struct loop_waker *ring_waker;  /* the watcher thread's (node-ring.c note 5) */
        pthread_t ring_thread;
        bool ring_thread_started;
        atomic_bool ring_thread_stop;
        /* The loop's own sleep on the ring (node-ring.c note 5): */
        struct loop_io ring_io;         /* the futex wait in flight */
        bool ring_sleeping;             /* ring_io in flight, counted as a sleeper */
        bool ring_stopping;             /* node_free(): do not re-arm */
        struct loop_timer *ring_timer;  /* re-arm later */
        struct loop_timer *ring_tick;   /* the safety net */
        uint64_t ring_loop_wakes;       /* completions of ring_io */
        uint64_t ring_reads;            /* ring_read_some() calls that delivered records */
        uint64_t ring_yields;           /* turns that left records for the next
                                         * (node-ring.c note 5a) */
        size_t ring_budget;             /* records per turn; 0: RING_READ_BUDGET */
        bool draining;                  /* node_free(): closing, no redials */
        bool server_closing;            /* node_free(): the server's accept not ended yet */
        /* Metrics and the service manager (node.h): */
        struct { const char *name, *help; const struct hist *h; } hists[NODE_HISTS_MAX];
        size_t n_hists;
        bool scrape;                    /* on_status runs for a scrape (node_status_is_scrape) */
        struct node_http *http;         /* --metrics-port */
        bool notified_ready, notified_stopping;
        uint64_t watchdog_ns;           /* half of $WATCHDOG_USEC; 0: none */
        struct loop_timer *watchdog;
};

/* node-ring.c: stop following the frontier ring (node_free()). */
void node_ring_stop(struct node *n);
