/* hist.h -- a log2-bucket latency histogram, cheap enough for every statement.
 *
 * Bucket i counts samples of at most 2^i microseconds (bucket 0: at most 1 us); the
 * last bucket counts the rest.  Counts are not cumulative here; the Prometheus
 * rendering (common/node/metrics.c) makes them so.  Any thread may hist_record()
 * (relaxed atomic adds: a reader may see a sample in sum before its bucket, never a
 * count that goes down); hist_read() takes a snapshot for a status reply.
 */
#pragma once

#include <stdatomic.h>
#include <stdint.h>

#define HIST_BUCKETS 28         /* 2^0 .. 2^26 us (about 67 s), then +Inf */

struct hist {
        atomic_uint_least64_t count[HIST_BUCKETS];
        atomic_uint_least64_t sum_us;
};

static inline unsigned hist_bucket(uint64_t us)
{
        unsigned b;

        if (us <= 1)
                return 0;
        b = 64u - (unsigned)__builtin_clzll(us - 1);    /* smallest b with 2^b >= us */
        return b < HIST_BUCKETS - 1 ? b : HIST_BUCKETS - 1;
}

static inline void hist_record(struct hist *h, uint64_t us)
{
        atomic_fetch_add_explicit(&h->count[hist_bucket(us)], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&h->sum_us, us, memory_order_relaxed);
}

/* A snapshot: counts[HIST_BUCKETS] and the sum, in microseconds. */
static inline void hist_read(const struct hist *h, uint64_t *counts, uint64_t *ret_sum_us)
{
        for (unsigned i = 0; i < HIST_BUCKETS; i++)
                counts[i] = atomic_load_explicit(&h->count[i], memory_order_relaxed);
        *ret_sum_us = atomic_load_explicit(&h->sum_us, memory_order_relaxed);
}
