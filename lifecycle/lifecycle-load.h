/* lifecycle-load.h -- building the maintained state and the enactment set from the
 * catalog in bulk (lifecycle-follow.c note 1: at open, after an error, after a rejected
 * publication).
 *
 * lc_load() scans the state column family of a caught-up secondary: the items
 * ('i'), bounds ('b') and requirements ('r'), into the (reset) state and enactment
 * set, exactly as lc_state_load_record() and lc_enact_load_record() of every record
 * would, only faster (lifecycle-load.c).  The state's seq is not set: the caller knows
 * which catalog_last_seq() the scan saw.
 *
 * Threads: called on the lifecycle's loop thread; it runs scans on threads of its own
 * and joins them before it returns.  Nothing may call catalog_catch_up() meanwhile
 * (only the loop thread does, and it is here), so every scan sees the same catalog.
 * Returns -errno (-EBADMSG: a record does not decode or contradicts its key; -ENOMEM;
 * the catalog's errors); on failure the state and the set hold part of the catalog
 * and must be reset before the next attempt.  Never logs.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct catalog;
struct lc_state;
struct lc_enact;

/* What a load did, for its log line. */
struct lc_load_stats {
        size_t items, bounds, requirements;
        uint64_t scan_us;       /* the scans (decoding, on threads) */
        uint64_t link_us;       /* the state and the set built from what they decoded */
};

int lc_load(struct catalog *c, struct lc_state *s, struct lc_enact *e, struct lc_load_stats *ret_stats);
