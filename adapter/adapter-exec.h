/* adapter-exec.h -- the adapter's statement executor: SQL sessions from the PostgreSQL
 * wire protocol, DDL through the catalog writer, writes and reads through the
 * controller (DESIGN section 4: INSERT, SELECT, DROP flows).
 *
 * Writes are group committed: statements' writes queue into an open group; one group at
 * a time is in flight to the controller as one Append at one oracle timestamp; the next
 * group is sent when the previous one is durable.  A DELETE travels in a group of its
 * own.  When nothing is written for a tick (default 100 ms), an empty group advances
 * every table's upper, so reads at "now" do not wait.
 *
 * Controller restarts: requests in flight are kept.  At reconnection the executor sends
 * the full set of collections, asks the controller for its frontiers to learn whether
 * the group in flight was applied (its tables' uppers passed its timestamp) -- acks it
 * if so, resends it at the same timestamp if not -- and resends pending reads.
 *
 * Single-threaded: the adapter's loop thread.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "coord.pb-c.h"
#include "node/node.h"

struct node;
struct catalog;
struct exec;

/* Note 9 of adapter-exec.c: a read's result in chunks of about this many bytes. */
#define EXEC_PEEK_CHUNK_BYTES_DEFAULT (64u << 10)

struct hist;

struct exec_config {
        struct hist *statement_hist;    /* each client request's latency; NULL: none */
        struct hist *commit_hist;       /* each catalog commit's; NULL: none */
        const char *pg_host;            /* TCP address for SQL clients; "" none */
        uint16_t pg_port;
        const char *pg_unix_dir;        /* directory for .s.PGSQL.<port>; NULL none */
        uint32_t tick_ms;               /* upper tick when idle */
        uint32_t peek_timeout_ms;       /* how long a read waits for its inputs */
        uint32_t peek_chunk_bytes;      /* a result's chunks from the controller; 0 one */
        bool no_direct_reply;           /* DDL answered by the loop, not its committer */
        int64_t test_clock_offset_ms;   /* test hook: shift the oracle's wall clock */
        bool test_hold_builtin_rows;    /* test hook: never send a group with built-in
                                         * rows (a kill -9 then always loses them) */
        uint32_t test_publication_delay_ms; /* test hook: a publication's commit waits */
        uint32_t test_reply_wake_delay_ms; /* test hook: a direct reply's loop wake-up waits */
};

int exec_new(struct node *n, struct catalog *store, const struct exec_config *cfg,
             struct exec **ret);
struct exec *exec_free(struct exec *ex);

/* From the node's handler. */
void exec_controller_up(struct exec *ex);
void exec_controller_down(struct exec *ex);
void exec_on_message(struct exec *ex, const Coord__Envelope *env);
/* The frontier ring changed: statements waiting for an object to reach the controller
 * may go on (or time out). */
void exec_on_frontiers(struct exec *ex);
/* MSG_PUBLISH_PROTECTION from the lifecycle follower: validate, commit, answer (issue 5). */
void exec_on_publication(struct exec *ex, node_peer_t from, const Coord__Envelope *env);
void exec_status(struct exec *ex, Coord__StatusReply *reply);

/* For the diagnostic reconstruction (adapter-check.c). */
struct adapter_catalog;
struct adapter_catalog *exec_catalog(struct exec *ex);
/* Catalog commits (DDL and publications) submitted and not yet applied to memory: at
 * 0, memory is exactly the committed state up to catalog_last_seq() -- an aligned
 * point. */
unsigned exec_commits_in_flight(const struct exec *ex);
/* The sticky catalog error that stopped DDL, or 0. */
int exec_catalog_error(const struct exec *ex);
/* High-water marks the oracle committed on the loop (a window ran out) and off it. */
void exec_oracle_persists(const struct exec *ex, uint64_t *ret_sync, uint64_t *ret_async);
/* (adapter-exec.c note 8) The seq of the last writer mark the controller acknowledged
 * (0: none yet in this life), and how many reconciliations read the built-ins. */
/* Clients' holds of running SUBSCRIBEs (adapter-subscribe.c). */
size_t exec_holds(const struct exec *ex);
/* Clients' writes in the append groups, sent or queued, not yet answered
 * (adapter-exec-groups.c). */
size_t exec_client_writes_pending(const struct exec *ex);
/* (adapter-exec.c note 2a) Groups split because their Append would not fit one frame. */
uint64_t exec_appends_split(const struct exec *ex);
/* (adapter-exec.c note 4) Requests the link's full send queue refused, sent later. */
uint64_t exec_requests_deferred(const struct exec *ex);
/* Inputs held by reads (blocks' snapshots, long reads) since start (adapter-readhold.c). */
uint64_t exec_read_holds_taken(const struct exec *ex);
uint64_t exec_builtin_mark(const struct exec *ex);
uint64_t exec_builtin_reads(const struct exec *ex);
/* DDL commits held until a publication in flight was committed (acat_txn_after_publication()). */
uint64_t exec_ddl_after_publication(const struct exec *ex);
/* DDL statements answered by their committer thread (adapter-pgwire.c note 7). */
uint64_t exec_ddl_direct_replies(const struct exec *ex);
/* (9) PeekResults that came as chunks of streams; pulls deferred until a client's
 * output drained (backpressure). */
void exec_stream_stats(const struct exec *ex, uint64_t *ret_chunks, uint64_t *ret_waits);
