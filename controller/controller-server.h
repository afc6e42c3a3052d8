/* controller-server.h -- what coord-controller serves in the tables milestone: storage
 * collections, appends, peeks and frontiers, over the messages of proto/coord.proto
 * (MSG_ENSURE_COLLECTIONS, MSG_DROP_COLLECTIONS, MSG_APPEND, MSG_PEEK,
 * MSG_LIST_COLLECTIONS), whose comments are the contract with the adapter.
 *
 * controller.c (main) creates the node and the frontier ring, then the server, and
 * forwards the node's callbacks to it.  The server owns the storage database
 * (controller-storage.h) and is the only writer of the ring.  Everything runs in the
 * node's loop thread; nothing here is thread-safe (storage's syncer thread only wakes
 * the loop, through a loop waker).
 *
 * Unlike common/, this is daemon code: it logs (one key=value line per event, log.h).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "builtins.h"
#include "coord.pb-c.h"
#include "node/node.h"

struct fring;
struct node;
struct cserver;         /* opaque */

/* coord_objects, written by the adapter (ACAT_GID_OBJECTS).  Its upper is also the
 * TABLES' SHARED FRONTIER T: every Append advances the built-ins (this one included) to
 * ts + 1, but a table only when the Append writes to it.  A table's upper, as every
 * answer of the server reports and uses it (peeks, MSG_LIST_COLLECTIONS), is
 * max(its stored upper, T); its contents at a t between the two are those at its stored
 * upper - 1.  The frontier ring shows stored uppers: a reader computes a table's upper
 * as max(its upper, the upper of this gid).  This collection cannot be dropped, and an
 * Append is refused while it does not exist. */
#define CSERVER_GID_OBJECTS COORD_GID_OBJECTS

/* The built-in relation the server maintains itself: coord_frontiers (object_id int8,
 * read_frontier int8, write_frontier int8), COORD_GID_FRONTIERS of common/builtins.h.  Rows:
 *   (gid, since, stored upper)  one per table, changed by an append only when the
 *                               table's stored frontiers changed: written, created or
 *                               dropped since the previous append;
 *   (0, 0, T)                   the tables' shared frontier, moved by every append.
 * A table's upper is max(its write_frontier, the write_frontier of object 0).  Creates
 * and drops show at the next append.  An append changes O(1) rows plus two per table
 * written, created or dropped, whatever the number of tables. */
#define CSERVER_GID_FRONTIERS COORD_GID_FRONTIERS
#define CSERVER_FRONTIERS_SHARED_ID 0u

/* The first GlobalId of a catalog item; below are built-ins (common/builtins.h).  Every
 * collection, built-ins included, and every index compacts only as far as
 * MSG_ALLOW_COMPACTION permits (controller-server-compact.c NOTE 14): an index keeps its whole
 * history until its first permission. */
#define CSERVER_FIRST_USER_GID COORD_FIRST_USER_GID

/* How often compaction runs, and how much work one run may do (updates read and
 * written), so that the loop never stalls on it. */
#define CSERVER_COMPACT_INTERVAL_MS 100u
#define CSERVER_COMPACT_BUDGET 4096u
#define CSERVER_COMPACT_BUDGET_US 2000u         /* per run too: the rest 5 ms later (6) */

/* A peek with timeout_ms = 0 waits this long for its inputs' uppers. */
#define CSERVER_PEEK_TIMEOUT_DEFAULT_MS 10000u
/* What one peek's evaluation may hold (controller-dataflow.c note 6), by default. */
#define CSERVER_PEEK_MEMORY_LIMIT_DEFAULT_MB 1024u
#define CSERVER_SUBSCRIBE_SNAPSHOT_DEFAULT_MB 16

/* How appends become durable (controller-server-append.c NOTE 2,
 * controller-server-out.c NOTE 16). */
enum cserver_append_sync {
        CSERVER_APPEND_SYNC_THREAD,     /* unsynced write, storage's syncer thread syncs
                                         * (group commit); replies and ring held until */
        CSERVER_APPEND_SYNC_LOOP,       /* one synced write on the loop per append */
        _CSERVER_APPEND_SYNC_MAX,
        _CSERVER_APPEND_SYNC_INVALID = -EINVAL,
};

struct cserver_config {
        enum cserver_append_sync append_sync;
        /* MB one peek's evaluation may hold, then 53200; 0: the default. */
        uint64_t peek_memory_limit_mb;
        /* MB a SUBSCRIBE's snapshot may be, then 54000 (controller-server-subscribe.c
         * note 26); 0: the default. */
        uint64_t subscribe_snapshot_max_mb;
        /* TEST ONLY: the syncer holds every sync while this file exists
         * (storage_debug_sync_hold_file()); NULL: never. */
        const char *test_sync_hold_file;
        /* TEST ONLY: a bulk install goes 8 dataflows per slice, this many ms apart
         * (controller-server-install.c note 17); 0: slices of 5 ms, back to back. */
        uint32_t test_install_slice_ms;
        /* TEST ONLY: a permission of more collections than this is applied this many per
         * loop turn (controller-server-compact.c note 14a); 0: CSERVER_ALLOW_SLICE. */
        uint32_t test_allow_slice;
        /* TEST ONLY: an append rewrites at most this many waiting rows of coord_frontiers
         * (controller-server-append.c note 4a); 0: CSERVER_FRONTIER_ROWS. */
        uint32_t test_frontier_rows;
        /* TEST ONLY: a peek goes to the peek thread when it reads at least this many
         * stored updates (controller-server-peek.c note 18); 0: PEEK_BG_MIN_UPDATES. */
        uint64_t test_peek_bg_min_updates;
        /* TEST ONLY: the peek thread sleeps this long before each evaluation. */
        uint32_t test_peek_bg_delay_ms;
};

/* "thread" / "loop" and back; _CSERVER_APPEND_SYNC_INVALID for anything else. */
enum cserver_append_sync cserver_append_sync_from_name(const char *name);
const char *cserver_append_sync_name(enum cserver_append_sync m);

/* Open (or create) the storage database in storage_path, publish every collection's
 * frontiers to ring (which may be NULL in tests that do not need one), and start the
 * compaction timer on the node's loop.  cfg may be NULL (the defaults); it is copied
 * (test_sync_hold_file too).  0, or -errno (logged). */

/* Appends' latency, arrival to Ok sent (its sync included); alive with s. */
struct hist;
const struct hist *cserver_append_hist(const struct cserver *s);

int cserver_new(struct node *n, struct fring *ring, const char *storage_path,
                const struct cserver_config *cfg, struct cserver **ret);

/* Drop parked peeks without answering, stop the timer, close storage.  Accepts NULL;
 * returns NULL.  Call before node_free() (the timers live on the node's loop). */
struct cserver *cserver_free(struct cserver *s);

/* node_handler.on_message: serve one request.  Never fails: errors are answered with
 * MSG_ERROR carrying the request's request_id. */
void cserver_on_message(struct cserver *s, node_peer_t from, const Coord__Envelope *env);

/* node_handler.on_peer_up / on_peer_down: the peer's previous connection is gone, so
 * its parked peeks are dropped (their request ids mean nothing to a new connection). */
void cserver_on_peer_change(struct cserver *s, node_peer_t peer);

/* One human line for StatusReply.detail, e.g. "collections=12 appends=40
 * tables_frontier=T last_append_collections=3 last_append_frontier_rows=4
 * peeks_parked=0 ...": the last two say what the last Append wrote (collections moved,
 * updates of coord_frontiers), which stays O(collections written). */
void cserver_describe(struct cserver *s, char *buf, size_t size);

/* True after storage failed and could not be reopened: the daemon should exit
 * non-zero (the server stopped the node). */
bool cserver_failed(const struct cserver *s);
/* The storage now (NULL after a failed reopen); valid until the next loop iteration. */
struct storage *cserver_storage(struct cserver *s);
