/* lifecycle-internal.h -- the follower's handle, shared by the files of the daemon:
 * lifecycle.c (main(), options, the node's callbacks), lifecycle-follow.c (following the
 * catalog), lifecycle-publish.c (publication) and their unit tests (tests/lifecycle).
 * Not a contract: the daemon's own.
 *
 * "(n)" in a comment is the follower's note of that number, in the file that enforces
 * it: (1) following, (4) waking up for a commit and (6) the catch-up thread in
 * lifecycle-follow.c; (2) publication in lifecycle-publish.c; (3) enactment and (5)
 * restarts in lifecycle.c; (7) the fleet's duty lease in lifecycle-duty.c; (8) refresh
 * leases in lifecycle-refresh.c.
 *
 * Not thread-safe: the lifecycle's loop thread only (the catch-up and watcher threads
 * touch only what lifecycle-follow.c notes 4 and 6 give them).
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog.pb-c.h"
#include "coord.pb-c.h"
#include "hist.h"
#include "lifecycle-load.h"
#include "lifecycle-state.h"
#include "loop/loop.h"

#define NS_PER_MS 1000000ull
/* Follower lag samples kept for status percentiles. */
#define LAG_SAMPLES 4096u

#define LC_REFRESH_JOBS 16      /* refresh jobs in flight per follower (lifecycle-refresh.c note 8) */

struct lifecycle {
        struct node *node;
        /* Reported by the node: publication (sent to its Ok) and follower lag. */
        struct hist pub_hist, lag_hist;
        uint64_t pub_sent_ns;
        struct catalog *catalog;        /* secondary; NULL until the primary exists */
        char *primary_path, *secondary_path;
        struct loop_timer *open_retry, *tick_timer;
        size_t tick_left;               /* dirty objects the last tick left (TICK_LIMIT) */
        uint64_t ticks_soon;            /* ticks brought forward for them */
        uint64_t interval_ms;
        struct lc_state *state;
        struct lc_enact *enact;         /* what the controller must hold (3) */
        bool loaded;                    /* state built from the catalog */

        /* The catalog log ring (1): the loop's reader, and the watcher thread that
         * sleeps on the ring with a reader of its own and wakes the loop. */
        char ring_name[128];
        struct lring_reader *ring;      /* NULL until attached */
        uint64_t ring_attach_ms;        /* the last attach attempt */
        int ring_err;                   /* the last ring trouble logged (0: none since) */
        struct loop_waker *notify_waker;
        pthread_t notify_thread;
        bool notify_started;
        atomic_bool notify_stop;
        /* The loop's own sleep on the ring (4). */
        bool wait_thread;               /* the watcher thread instead (fallback, option) */
        struct lring_reader *sleeper;   /* the loop's reader that only waits */
        struct loop_io sleep_io;        /* the futex wait in flight */
        bool sleeping;                  /* sleep_io in flight, counted as a sleeper */
        bool sleep_stopping;            /* lifecycle_notify_stop() ran: no re-arm */
        struct loop_timer *sleep_timer; /* attach retry or back-off */
        uint64_t loop_wakes;            /* completions of sleep_io */
        /* The secondary's catch-up timer (1). */
        struct loop_timer *catchup_timer;
        bool ring_dirty;                /* the ring applied since the last catch-up */
        uint64_t catchup_ms;            /* the last catch-up */
        uint64_t ring_applied, ring_fallbacks, log_applied, catchups;
        struct catchup_worker *catchup;  /* (6); NULL until first used */
        bool catchup_in_flight;         /* posted, catchup_done() not run yet */
        bool log_pending;               /* the log path waits for the thread's catch-up (6) */
        bool follow_again;              /* a follow came meanwhile: follow after it */
        uint64_t catchup_last_us, catchup_max_us;
        uint64_t test_catchup_delay_ms; /* TEST ONLY: each catch-up but a reload's sleeps this long */

        /* Publication (2). */
        struct lc_publication pub;      /* the one in flight */
        bool in_flight;
        uint64_t pub_request_id, pub_sent_ms;
        uint64_t next_request_id;
        size_t pub_bytes;
        uint64_t publications, pub_errors, records_total, bytes_total;
        size_t last_records, last_bounds, last_reqs, last_bytes, last_touched;
        uint64_t last_commit_seq;
        uint64_t allow_sent;
        uint64_t applied_txns, lag_last_us, lag_max_us;
        uint64_t lag_seq;                       /* the commit last measured */
        uint64_t lag[LAG_SAMPLES];              /* commit -> applied, us, a ring */
        size_t n_lag;
        uint64_t reloads;
        uint64_t load_us;               /* the last reload's */
        /* The restart's phases (5), for its one log line. */
        uint64_t start_ns, open_ns, loaded_ns;
        struct lc_load_stats first_load;
        bool restart_logged;
        uint64_t resync_t0_ns;          /* the controller's connection: restart_timings' resync */
        /* The duty lease (7, lifecycle-duty.c). */
        char duty_holder[32];           /* "lifecycle-<instance id>" */
        char duty_seen_holder[64];      /* the holder a BUSY claim named */
        uint64_t duty_ttl_ms;
        uint64_t duty_epoch;            /* held: claimed and not lost; 0: not held */
        uint64_t duty_claim_seq;        /* the claim's catalog seq: act once the state has it */
        uint64_t duty_deadline_ns;      /* count it lost from then, by our clock */
        bool duty_active;               /* enacting and publishing */
        uint64_t duty_request_id;       /* the claim or renew in flight; 0: none */
        uint64_t duty_sent_ns, duty_requests;
        int duty_request_type;
        struct loop_timer *duty_timer;
        uint64_t duty_claims, duty_takeovers, duty_lost, duty_busy, duty_fenced;
        /* Refresh leases (8, lifecycle-refresh.c): LC_REFRESH_JOBS jobs at once, one per view. */
        struct lc_refresh_job {
                int phase;
                uint64_t gid, at, epoch, version;
                uint64_t request_id, sent_ns, hold_until_ns;
                char commit_id[24];
        } rjobs[LC_REFRESH_JOBS];
        struct { uint64_t gid, until_ms; } rskip[64];   /* BUSY views, skipped until then */
        uint64_t rlast, rrequests;
        uint64_t rclaims, rbusy, rreleases, rcommitted, rreconciled, rfenced, rretries, rerrors;
        uint64_t test_refresh_hold_ms;  /* TEST ONLY: wait this long between claim and release */
        struct loop_timer *refresh_timer;
        char detail[2560];
};

/* lifecycle-follow.c: following the catalog (1, 4, 6). */

/* Attach the ring's readers, start waiting on it (4) and the periodic catch-up (1, 6).
 * -errno, logged. */
int lifecycle_notify_start(struct lifecycle *lc, const char *instance);
/* Stop all of it: the wait, the watcher and catch-up threads, the readers. */
void lifecycle_notify_stop(struct lifecycle *lc);
/* A loop timer's callback (userdata: lc): open the secondary and load the state, or
 * retry in 100 ms while the adapter has not created the catalog. */
void lifecycle_try_open(struct loop *l, void *userdata);
/* Rebuild the state and the enactment set from the caught-up secondary (1).  -errno,
 * logged (lc->loaded stays false: the next follow tries again). */
int lifecycle_reload(struct lifecycle *lc);
/* Bring the state up to the catalog: the ring, the log for what it cannot vouch for. */
void lifecycle_follow(struct lifecycle *lc);
/* The follower lag of the state having applied seq, published on the ring at `at` us. */
void lifecycle_lag_measure(struct lifecycle *lc, uint64_t seq, uint64_t at);
/* The 50th and 99th percentiles of the kept lag samples (0 without samples). */
void lifecycle_lag_percentiles(const struct lifecycle *lc, uint64_t *ret_p50, uint64_t *ret_p99);
/* One transaction into the state and the enactment set; *counter counts it if applied.
 * < 0: the state can no longer be trusted. */
int lifecycle_apply_txn(struct lifecycle *lc, const Coord__CatalogTxn *txn, uint64_t *counter);
/* Apply the log after the state's seq, as far as the secondary was caught up. */
int lifecycle_apply_log(struct lifecycle *lc);
/* The ring path (1): 1 caught up to the ring's last seq, 0 the log must supply the rest
 * (*ret_why), -errno from applying. */
int lifecycle_follow_ring(struct lifecycle *lc, uint64_t *ret_last, uint64_t *ret_us, int *ret_why);

/* lifecycle-publish.c: publication (2). */

/* AllowCompaction goes in messages of at most ALLOW_CHUNK records: the controller
 * moves each since in its loop, and one message of a setup's publication at 100,000
 * objects (3,500-5,600 records) held it 15-32 ms; the resync after a controller restart
 * sends every bound.  Splitting is safe: each record stands alone (a since moves to a
 * committed bound or stays, I2), and the controller handles the messages in order. */
#define ALLOW_CHUNK 1024u

/* Dirty objects one tick looks at (lifecycle-state.c note 9); with more left, the next
 * tick comes TICK_AGAIN_MS after the publication's Ok, not an interval later: 40,000
 * objects a second, where a setup makes about 10,000, and each publication is a catalog
 * commit that competes with the setup's own. */
#define TICK_LIMIT 2048u
#define TICK_AGAIN_MS 50u

/* Arm the publication timer: a tick every lc->interval_ms. */
void lifecycle_tick_arm(struct lifecycle *lc);
/* Tick and send the proposal, if any, as one PublishProtection to the adapter (in
 * flight from then on).  0 (also when nothing changed), -errno (the proposal is
 * abandoned). */
int lifecycle_publish(struct lifecycle *lc);
/* The adapter's answer to the publication in flight: Ok commits it and sends
 * AllowCompaction; Error fails it. */
void lifecycle_publish_reply(struct lifecycle *lc, const Coord__Envelope *env);
/* The publication in flight failed: abandon it; on the adapter's refusal (reload) also
 * rebuild the state from the catalog (lifecycle-publish.c note 2). */
void lifecycle_publication_failed(struct lifecycle *lc, const char *why, bool reload);
/* AllowCompaction of p's bounds to the controller, in messages of at most ALLOW_CHUNK
 * records.  0, -ENOMEM, or node_send()'s error (the messages before it went). */
int lifecycle_send_allow(struct lifecycle *lc, const struct lc_publication *p);
/* Every committed bound, after the controller (re)connected. */
void lifecycle_send_allow_all(struct lifecycle *lc);

/* lifecycle-duty.c: the duty lease (7). */

/* The holder's name from instance_id; gates enactment on lifecycle_duty_active(). */
void lifecycle_duty_init(struct lifecycle *lc, uint32_t instance_id, uint64_t ttl_ms);
/* A one-shot timer of the follower's loop in *t (nothing if one is armed); a failure
 * is logged (timer_failed what=...) and leaves *t NULL. */
void lifecycle_timer_arm(struct lifecycle *lc, struct loop_timer **t, uint64_t ms, loop_timer_fn fn,
                         const char *what);
void lifecycle_timer_stop(struct lifecycle *lc, struct loop_timer **t);
/* Claim or renew in ms, and then every ttl / 4. */
void lifecycle_duty_arm(struct lifecycle *lc, uint64_t ms);
/* Held, acting, and not expired by our clock (expiry loses it here).  Checked before
 * every send of enactment, publication or AllowCompaction (lifecycle-duty.c note 7). */
bool lifecycle_duty_active(struct lifecycle *lc);
/* Give it up: no more sends until the next claim succeeds. */
void lifecycle_duty_lose(struct lifecycle *lc, const char *why);
/* An answer from the adapter: true when it was the duty's (consumed). */
bool lifecycle_duty_reply(struct lifecycle *lc, const Coord__Envelope *env);

/* lifecycle-refresh.c: refresh leases (8). */

/* Work on due refreshes every REFRESH_TICK_MS. */
void lifecycle_refresh_arm(struct lifecycle *lc);
/* An answer from the adapter or the controller: true when it was a refresh job's. */
bool lifecycle_refresh_reply(struct lifecycle *lc, const Coord__Envelope *env);
/* The job's phase, for status. */
/* The jobs in flight by phase ("claim:2,wait:1"), or "none". */
void lifecycle_refresh_jobs(const struct lifecycle *lc, char *buf, size_t size);
