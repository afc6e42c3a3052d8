/* refresh.h -- the times of a materialized view's refresh schedule (REFRESH AT and
 * REFRESH EVERY ... ALIGNED TO), as pure functions: the adapter picks the first refresh
 * with them, the controller rounds a view's output times up to refresh times, the
 * lifecycle follower never needs them (a refresh view's upper IS its next refresh).
 *
 * A schedule is a set of times: every `at[i]`, and aligned_to + k * every_ms for every
 * integer k (negative ones too) when every_ms > 0.  REFRESH_NONE (UINT64_MAX) stands
 * for "no such time": after the last refresh a view's upper is empty.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REFRESH_NONE UINT64_MAX

struct refresh_schedule {
        const uint64_t *at;             /* any order */
        size_t n_at;
        uint64_t every_ms;              /* 0: no periodic refreshes */
        uint64_t aligned_to;
};

/* The first refresh time >= t, or REFRESH_NONE. */
static inline uint64_t refresh_next(const struct refresh_schedule *rs, uint64_t t)
{
        uint64_t best = REFRESH_NONE;

        for (size_t i = 0; i < rs->n_at; i++)
                if (rs->at[i] >= t && rs->at[i] < best)
                        best = rs->at[i];
        if (rs->every_ms) {
                uint64_t a = rs->aligned_to, e = rs->every_ms, p;

                if (t <= a)
                        p = a - (a - t) / e * e;        /* the last aligned time >= t */
                else {
                        uint64_t k = (t - a) / e + ((t - a) % e != 0);
                        if (k > (REFRESH_NONE - 1 - a) / e)
                                p = REFRESH_NONE;       /* beyond the representable */
                        else
                                p = a + k * e;
                }
                if (p < best)
                        best = p;
        }
        return best;
}

/* The last refresh time < t, or REFRESH_NONE when there is none. */
static inline uint64_t refresh_prev(const struct refresh_schedule *rs, uint64_t t)
{
        uint64_t best = REFRESH_NONE;

        for (size_t i = 0; i < rs->n_at; i++)
                if (rs->at[i] < t && (best == REFRESH_NONE || rs->at[i] > best))
                        best = rs->at[i];
        if (rs->every_ms && t > 0) {
                uint64_t a = rs->aligned_to, e = rs->every_ms, p = REFRESH_NONE;

                if (t - 1 >= a)
                        p = a + (t - 1 - a) / e * e;
                else {
                        /* a - m * e with m = ceil((a - (t - 1)) / e), if not negative */
                        uint64_t d = a - (t - 1), m = d / e + (d % e != 0);
                        if (m <= a / e)
                                p = a - m * e;
                }
                if (p != REFRESH_NONE && (best == REFRESH_NONE || p > best))
                        best = p;
        }
        return best;
}
