/* lifecycle-bounds.h -- the rules of read protection as pure functions (DESIGN
 * section 2): requirements of consumers, read policies and the bound rule.  No state,
 * no I/O; lifecycle-state.c applies them to the maintained state and the tests check
 * them alone (tests/lifecycle/test-lifecycle-state.c).
 *
 * Every function returns a value >= the old one it is given: frontiers only move
 * forward (I1), whatever the inputs say.
 *
 * Quiet objects.  Every rule takes `last`: the last time at which the object's
 * contents (an input's, for a requirement) can have changed -- a table's stored upper
 * - 1, a view's max over its inputs and its as-of; UINT64_MAX when unknown.  Moving a
 * since or a requirement past `last` protects nothing more and compacts nothing more
 * (the contents are the same at every time in [last, upper)), so the rules stop
 * there.  This is what keeps a publication proportional to what CHANGED: with the
 * tables' shared frontier every upper moves at every append, but an object whose
 * inputs were not written keeps its bound and its requirements, and publishes
 * nothing.  Stopping lower is always safe: a lower bound or requirement protects
 * more (it is still >= the old value, so I1 holds, and a bound <= every requirement
 * on it, I5).
 */
#pragma once

#include <stdint.h>

/* The compaction window of an object without RETAIN HISTORY (ms). */
#define LC_DEFAULT_WINDOW_MS 1000u

static inline uint64_t lc_max(uint64_t a, uint64_t b) { return a > b ? a : b; }
static inline uint64_t lc_min(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* The window of an object: RETAIN HISTORY FOR retain_ms, or the default (0). */
static inline uint64_t lc_window(uint64_t retain_ms)
{
        return retain_ms ? retain_ms : LC_DEFAULT_WINDOW_MS;
}

/* Read policy proposal: upper - window, 0 when the collection is younger than that. */
static inline uint64_t lc_policy(uint64_t upper, uint64_t window_ms)
{
        return upper > window_ms ? upper - window_ms : 0;
}

/* R(mv, I) of a continuous materialized view whose durable upper is mv_upper: it
 * resumes from its inputs' snapshot at upper - 1.  An upper of 0 says nothing. */
static inline uint64_t lc_mv_requirement(uint64_t old, uint64_t mv_upper, uint64_t input_last)
{
        return mv_upper ? lc_max(old, lc_min(mv_upper - 1, input_last)) : old;
}

/* R(mv, I) of a materialized view on a refresh schedule: its durable upper IS its next
 * refresh time (the controller moves it from one refresh time to the next), at which it
 * reads its inputs next; the first one is committed at its creation.  After its last
 * refresh the upper is empty (UINT64_MAX) and the requirement only follows the input's
 * contents, protecting nothing of it (released). */
static inline uint64_t lc_refresh_requirement(uint64_t old, uint64_t mv_upper, uint64_t input_last)
{
        return mv_upper ? lc_max(old, lc_min(mv_upper, input_last)) : old;
}

/* An index's own bound: its arrangement keeps `window` of history behind its upper. */
static inline uint64_t lc_index_bound(uint64_t old, uint64_t upper, uint64_t window_ms,
                                      uint64_t last)
{
        return lc_max(old, lc_min(lc_policy(upper, window_ms), last));
}

/* The bound rule: max(old, min(policy proposal, min over consumers of R(C, X))),
 * stopped at `last`.  min_requirement is UINT64_MAX when nothing requires X. */
static inline uint64_t lc_bound(uint64_t old, uint64_t upper, uint64_t window_ms,
                                uint64_t min_requirement, uint64_t last)
{
        return lc_max(old, lc_min(lc_min(lc_policy(upper, window_ms), min_requirement), last));
}

/* A table's upper as the ring shows it: max(its stored upper, the tables' shared
 * frontier T = the upper of gid 1) (docs/ARCHITECTURE.md "Tables' shared frontier"). */
static inline uint64_t lc_table_upper(uint64_t stored_upper, uint64_t shared_frontier)
{
        return lc_max(stored_upper, shared_frontier);
}
