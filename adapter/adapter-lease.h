/* adapter-lease.h -- leases in the catalog, served by the adapter (issue 33).
 *
 * Peers of role CTL (coordctl, tests) and LIFECYCLE send MSG_LEASE_CLAIM / _RENEW /
 * _COMMIT / _RELEASE; the adapter decides by the rules of common/lease/lease.h against
 * its own monotonic clock, makes what changes durable in the catalog (state key 'l' +
 * lease key -> CatalogLease) and only then answers LeaseReply{status, epoch, version,
 * ...}.  Bad requests get MSG_ERROR 22023, a failed catalog commit MSG_ERROR 58030 with
 * nothing changed.  The promises are in docs/lifecycle.md "Leases".
 *
 * Single-threaded: the adapter's loop thread owns the table; the catalog commits of
 * leases run on a committer thread of the table's own and take effect back on the loop
 * (adapter-lease.c note 4), so a lease's fsync never holds the loop.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "adapter-sql.h"
#include "coord.pb-c.h"
#include "node/node.h"

struct node;
struct catalog;
struct lease_table;

/* Loads every lease record; a held one is live for its full ttl from now
 * (lease_restarted()).  0, -ENOMEM, -EBADMSG (a record that does not decode), or the
 * scan's error. */
int lease_table_new(struct node *n, struct catalog *store, struct lease_table **ret);
struct lease_table *lease_table_free(struct lease_table *t);
/* TEST ONLY (--test-lease-commit-delay-ms): each lease write waits ms on its committer
 * thread before the commit. */
void lease_table_set_test_delay(struct lease_table *t, uint32_t ms);

/* Is type one of the lease requests (MSG_LEASE_CLAIM .. MSG_LEASE_RELEASE)? */
bool lease_table_handles(int type);
/* key's lease is live and of this epoch now (a fenced request's Envelope.fence). */
bool lease_table_fence_ok(struct lease_table *t, const char *key, uint64_t epoch);

/* A lease request from a peer of role `from` (CTL: answered on ctl_id, else on the
 * peer's connection). */
void lease_table_on_request(struct lease_table *t, node_peer_t from, uint64_t ctl_id,
                            const Coord__Envelope *env);

/* coord_leases: fn for every lease, in key order, judged at the adapter's clock now
 * (sql_catalog_ops.leases). */
int lease_table_each(void *t, sql_lease_fn fn, void *arg);

/* Counters for the status detail: "leases=N lease_claims=N lease_fenced=N ..." */
void lease_table_status(const struct lease_table *t, char *buf, size_t size);
