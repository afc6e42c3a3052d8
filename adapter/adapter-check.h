/* adapter-check.h -- the diagnostic reconstruction of the catalog (invariant I10):
 * "the catalog's in-memory state at sequence n equals a fresh reconstruction from the
 * durable log up to n".
 *
 * On MSG_CHECK_CATALOG from coordctl (role CTL) the checker waits for an aligned point
 * -- no catalog commit in flight, so memory is exactly the committed state up to
 * n = catalog_last_seq() -- and there, on the loop thread, copies every state record
 * the adapter holds (acat_export()) and its next GlobalId.  A thread of its own then
 * replays the durable log from sequence 1 up to n into a map of its own and compares
 * the two record by record.  The loop is woken with the result and answers
 * CheckResult{match, seq, records, differences, took_us}.  The loop never waits for the
 * replay.  Requests that arrive while a check runs share its answer.
 *
 * Errors are answered with MSG_ERROR: no aligned point within CHECK_ALIGN_TIMEOUT_MS
 * (commits never stop), the catalog in its sticky error state, a log that ends before
 * n or does not decode.
 *
 * Single-threaded (the adapter's loop) except for the replay thread, which touches
 * only its job (see adapter-check.c) and the catalog's log cursor (thread-safe).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "coord.pb-c.h"

struct node;
struct catalog;
struct exec;
struct check;

#define CHECK_ALIGN_TIMEOUT_MS 10000u   /* give up waiting for an aligned point */
#define CHECK_ALIGN_RETRY_MS   2u       /* look again this often while commits run */
#define CHECK_MAX_DIFFERENCES  32u      /* human lines in a CheckResult, at most */

/* test_corrupt: TEST ONLY (coord-adapter --test-check-corrupt).  The snapshot alters
 * one record (the item with the lowest GlobalId: its created_at plus one), so that
 * tests can see the check fail.  Never set it otherwise. */
int check_new(struct node *n, struct catalog *store, struct exec *ex, bool test_corrupt,
              struct check **ret);
/* Stops and joins a replay in progress (its requesters get no answer).  Must run before
 * the catalog is closed (a replay holds a log cursor).  NULL-safe; returns NULL. */
struct check *check_free(struct check *ck);

/* MSG_CHECK_CATALOG from the coordctl connection ctl_id (node's on_ctl_message). */
void check_on_request(struct check *ck, uint64_t ctl_id, const Coord__Envelope *env);
