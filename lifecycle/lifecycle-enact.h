/* lifecycle-enact.h -- enactment: the follower makes the controller hold what the
 * catalog says exists (issue 5, item 1; DESIGN section 4).
 *
 * The adapter only commits DDL to the catalog.  The follower sees each committed item
 * (a 'i' record put or deleted, from its scan at load and then from the log) and tells
 * the controller: a table -> EnsureCollections; a materialized view or an index ->
 * CreateDataflows at the item's as-of (the controller raises it to its inputs' sinces,
 * or resumes a materialized view from its durable upper); a deleted item ->
 * DropCollections, dependents first as the DROP transaction listed them.  After every
 * (re)connection to the controller and every reload, it sends the complete set
 * (`complete` = true), which re-creates what a controller restart lost and drops what
 * was dropped meanwhile.  Messages are idempotent on the controller, so a resend is
 * harmless.
 *
 * Statements of the adapter that write or read a new object wait until the frontier
 * ring shows it (adapter-exec.c), so nobody waits for the follower synchronously.
 *
 * Not thread-safe: the lifecycle's loop thread only.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog.pb-c.h"
#include "coord.pb-c.h"

struct node;
struct lc_enact;

int lc_enact_new(struct node *n, struct lc_enact **ret);
struct lc_enact *lc_enact_free(struct lc_enact *e);

/* Forget the items (before a reload; the next lc_enact_resync() sends everything). */
void lc_enact_reset(struct lc_enact *e);
/* A record of the state column family at load ('i' items; others ignored). */
int lc_enact_load_record(struct lc_enact *e, const void *key, size_t key_len, const void *value,
                         size_t value_len);
/* Whether items of this kind are kept (tables, materialized views, indexes). */
bool lc_enact_wants(Coord__ItemKind kind);
/* What the set keeps of an item (lifecycle-enact.c note 1): made from the unpacked
 * item on any thread (a load's scans, lifecycle-load.h), which may then be freed.
 * 1 and *ret; 0 and NULL when the kind is not kept; -ENOMEM. */
struct lc_enact_item;
int lc_enact_item_new(const Coord__CatalogItem *p, struct lc_enact_item **ret);
struct lc_enact_item *lc_enact_item_free(struct lc_enact_item *it);
/* An item of the state column family at a load in bulk, ours from now on whatever
 * the result (NULL: nothing); the same as lc_enact_load_record() of its encoding.
 * -ENOMEM. */
int lc_enact_load_item(struct lc_enact *e, struct lc_enact_item *it);
/* The item puts and deletes of one log entry, queued for the next flush. */
int lc_enact_apply_txn(struct lc_enact *e, const Coord__CatalogTxn *txn);
/* Send what is queued (if the controller is connected; else the resync does it). */
void lc_enact_flush(struct lc_enact *e);
/* Send only while gate(arg) says so (the duty lease, lifecycle-duty.c note 7); without a
 * gate, whenever the controller is connected.  What is not sent is not kept: the
 * resync when the gate opens sends the complete set. */
void lc_enact_set_gate(struct lc_enact *e, bool (*gate)(void *arg), void *arg);
struct refresh_schedule;
/* The kept materialized views on a refresh schedule, in GlobalId order: the first
 * whose gid is above `after` (0: the first of all), its as-of and schedule (pointing
 * into the item: valid until the next change of the set).  -ENOENT when none is left. */
int lc_enact_next_refresh(const struct lc_enact *e, uint64_t after, uint64_t *ret_gid,
                          uint64_t *ret_as_of, struct refresh_schedule *ret_rs);
/* The refresh time the lease refresh/<gid> committed last (lifecycle-enact.c note 4;
 * 0 when none yet): 0, or -ENOENT when the view has no lease record. */
int lc_enact_refresh_committed(const struct lc_enact *e, uint64_t gid, uint64_t *ret_last);
/* Send the complete set (controller (re)connected, or state reloaded), in parts over
 * loop turns (lifecycle-enact.c note 5); a resync in progress starts over.  done(arg)
 * runs after the last part of each resync that ended (not one abandoned: the gate
 * closed or the controller left). */
void lc_enact_resync(struct lc_enact *e);
void lc_enact_set_resync_done(struct lc_enact *e, void (*done)(void *arg), void *arg);
/* At most n dataflows a part (default LC_ENACT_PART_ITEMS; --resync-part-items). */
#define LC_ENACT_PART_ITEMS 100000u
void lc_enact_set_part_items(struct lc_enact *e, size_t n);
/* A reply from the controller to one of ours: errors are logged. */
bool lc_enact_reply(struct lc_enact *e, const Coord__Envelope *env);

size_t lc_enact_n_items(const struct lc_enact *e);
/* The gid of the i-th item kept (in gid order); 0 past the end. */
uint64_t lc_enact_item_gid(const struct lc_enact *e, size_t i);
uint64_t lc_enact_sent(const struct lc_enact *e);
