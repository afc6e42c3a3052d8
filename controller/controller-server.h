/* controller-server.h -- what coord-controller serves in the tables milestone: storage
 * collections, appends, peeks and frontiers, over the messages of proto/coord.proto
 * (MSG_ENSURE_COLLECTIONS, MSG_DROP_COLLECTIONS, MSG_APPEND, MSG_PEEK,
 * MSG_LIST_COLLECTIONS), whose comments are the contract with the adapter.
 *
 * controller.c (main) creates the node and the frontier ring, then the server, and
 * forwards the node's callbacks to it.  The server owns the storage database
 * (controller-storage.h) and is the only writer of the ring.  Everything runs in the
 * node's loop thread; nothing here is thread-safe.
 *
 * Unlike common/, this is daemon code: it logs (one key=value line per event, log.h).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coord.pb-c.h"

struct fring;
struct node;
struct cserver;         /* opaque */

/* The built-in relation the server maintains itself: coord_frontiers (object_id int8,
 * read_frontier int8, write_frontier int8), one row per table.  Same number as the
 * adapter's ACAT_GID_FRONTIERS; coord_objects (gid 1) is written by the adapter. */
#define CSERVER_GID_FRONTIERS 2u

/* The compaction window of built-in relations: the server itself allows them to be
 * compacted to upper - CSERVER_BUILTIN_WINDOW_MS.  Issue 5 moves this decision to the
 * catalog (a read policy per collection, committed as a bound); tables are not
 * compacted at all until then. */
#define CSERVER_BUILTIN_WINDOW_MS 1000u

/* How often compaction runs, and how much work one run may do (updates read and
 * written), so that the loop never stalls on it. */
#define CSERVER_COMPACT_INTERVAL_MS 100u
#define CSERVER_COMPACT_BUDGET 4096u

/* A peek with timeout_ms = 0 waits this long for its inputs' uppers. */
#define CSERVER_PEEK_TIMEOUT_DEFAULT_MS 10000u

/* Open (or create) the storage database in storage_path, publish every collection's
 * frontiers to ring (which may be NULL in tests that do not need one), and start the
 * compaction timer on the node's loop.  0, or -errno (logged). */
int cserver_new(struct node *n, struct fring *ring, const char *storage_path,
                struct cserver **ret);

/* Drop parked peeks without answering, stop the timer, close storage.  Accepts NULL;
 * returns NULL.  Call before node_free() (the timers live on the node's loop). */
struct cserver *cserver_free(struct cserver *s);

/* node_handler.on_message: serve one request.  Never fails: errors are answered with
 * MSG_ERROR carrying the request's request_id. */
void cserver_on_message(struct cserver *s, Coord__Role from, const Coord__Envelope *env);

/* node_handler.on_peer_up / on_peer_down: the peer's previous connection is gone, so
 * its parked peeks are dropped (their request ids mean nothing to a new connection). */
void cserver_on_peer_change(struct cserver *s, Coord__Role role);

/* One human line for StatusReply.detail, e.g. "collections=12 peeks_parked=0 ...". */
void cserver_describe(struct cserver *s, char *buf, size_t size);

/* True after storage failed and could not be reopened: the daemon should exit
 * non-zero (the server stopped the node). */
bool cserver_failed(const struct cserver *s);
