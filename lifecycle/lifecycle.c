/* coord-lifecycle -- the lifecycle follower (DESIGN section 1): follows the catalog,
 * keeps the maintained state, publishes read protection in batches.
 *
 * Threads: everything runs in the node's loop thread (the node's frontier ring watcher
 * aside).  The loop sleeps on the catalog log ring itself (4); only where the kernel
 * cannot, a catalog watcher thread sleeps on it and wakes the loop.  The loop thread
 * owns the ring reader that reads; the sleeper (or the watcher) has a reader of its
 * own, which only waits.  Nothing polls: the catalog is read when the adapter says it
 * committed, the frontier ring when the controller published.
 *
 * NOTES ON THE DESIGN
 *
 * (1) Following.  The catalog is a RocksDB secondary.  At open (and after any error or
 *     a rejected publication) the state is rebuilt from the state column family at
 *     catalog_last_seq() (lc_load(): four scans at once, lifecycle-load.c).  From
 *     then on the state
 *     applies every committed transaction in seq order (lc_state_apply_txn()), from
 *     one of two sources:
 *       - the catalog log ring (lring.h), the usual one: the adapter's commit hook
 *         publishes each transaction's log entry after the group's synced write, so
 *         what the ring holds is durable and in seq order without gaps.  A record with
 *         seq <= the state's is skipped; seq == state + 1 is decoded and applied.  No
 *         RocksDB catch-up per commit (it was ~half of this daemon's CPU).
 *       - the log, read from the secondary after catalog_catch_up(): whenever the ring
 *         cannot vouch for being complete -- not attached yet, lapped, the adapter
 *         restarted (new generation), a gap, an omitted (too large) or undecodable
 *         payload, a damaged region, or the ring's last seq above what it delivered.
 *         This path is correct on its own; the ring only saves its cost.
 *     Both paths apply exactly the same bytes (the ring carries the log entry), so the
 *     state cannot tell them apart.  The secondary is still caught up about once a
 *     second while the ring is being used (RocksDB otherwise pins the WAL files the
 *     primary deleted), at least every CATCHUP_IDLE_MS anyway (a safety net should the
 *     ring ever go silent), always before the log path and before a reload; a catch-up
 *     that finds the log ahead of the state applies the difference.
 *
 * (2) Publication, every --publication-interval-ms.  At most one in flight: tick
 *     (lifecycle-state.h), send ONE PublishProtection to the adapter; on its Ok
 *     (Ok.upper = the commit's seq) the values become committed and AllowCompaction
 *     with the changed bounds goes to the controller -- never before (I2).  On an
 *     Error, a timeout or the adapter's disconnection, the proposal is abandoned and
 *     the state rebuilt from the catalog.  A controller that (re)connects gets every
 *     committed bound once (it keeps permissions in memory only).
 *
 * (3) Enactment (creating collections, installing dataflows) is this daemon's:
 *     lifecycle-enact.c follows the same transactions and sends EnsureCollections,
 *     CreateDataflows and DropCollections to the controller; a controller that
 *     (re)connects gets the complete set (a resync, installed in slices there:
 *     controller-server-install.c note 17).
 *
 * (4) Waking up for a commit.  The adapter's FUTEX_WAKE on the ring's notify word
 *     completes an io_uring futex wait of the loop itself (loop_futex_wait(), Linux
 *     6.7+): one wake-up per commit, the loop's.  Before, a watcher thread slept in
 *     futex(2) and woke the loop through an eventfd: two wake-ups in a row, each of
 *     which could wait for a CPU behind other work (on 2 vCPUs under load, the tail
 *     of the follower lag was mostly these run-queue waits).  The sleeper reader
 *     follows lring_wait()'s protocol in two halves: lring_sleep_begin() (counted as a
 *     sleeper, or "readable now"), the wait in the loop, lring_sleep_end() at its
 *     completion; then lring_skip() past what woke it *before* following, so a
 *     publish after the skip is seen by the next lring_sleep_begin() and none is lost.
 *     Where the kernel lacks the opcode, or refuses the wait (-EINVAL, -EOPNOTSUPP in
 *     the completion), or --catalog-wait-thread asks for it, the watcher thread of
 *     before takes over for the life of the process (status catalog_wait=thread).
 *     Nothing else differs: both only trigger lifecycle_follow(), which trusts the
 *     ring only as far as (1) says.
 *
 * (5) A restart (issue 6: serving within 1 s of a kill -9 at 100,000 objects): main()
 *     opens the secondary and loads the state before the loop runs, and reports ready
 *     right after; the loop then connects, and the controller's connection brings the
 *     complete enactment set and every committed bound (lifecycle_peer_up()).  One log
 *     line, restart_timings, gives the phases once the controller has them: open_us
 *     (main() to the secondary opened: its WAL replay, mostly), load_us (scan_us on
 *     threads, link_us into the state), resync_us (building and sending both
 *     resyncs), total_us (main() to then).
 *
 * (6) The periodic catch-up runs off the loop.  catalog_catch_up() replays the
 *     primary's new WAL into the secondary's memtable; during a setup of 100,000 objects
 *     (~11,000 commits/s) one second of WAL took the loop 100-250 ms, the follower's
 *     longest stall by far (perf: RocksDB's RecoverLogFiles under catchup_tick()).  So
 *     catchup_tick() posts the catch-up to a thread of its own (struct catchup_worker,
 *     started on first use) and returns; the thread catches up and wakes the loop, and
 *     catchup_done() does what followed the catch-up before (drain the ring, apply the
 *     log the ring lacks).  At most one is in flight.  A reload's catch-up stays
 *     synchronous (and the log path's, below, without the thread):
 *     catalog_catch_up() is serialized by the catalog's lock
 *     and RocksDB reads may run beside it -- except a reload's four scans, which share
 *     no snapshot and assume the secondary's view does not move under them, so
 *     lifecycle_reload() first waits for an in-flight catch-up to end (both are posted
 *     and started on the loop, so none starts during a reload).  Where the thread
 *     cannot be started, the catch-up runs on the loop as before.
 *     The log path (1) goes the same way (follow_log_post()): when the ring cannot
 *     vouch, lifecycle_follow() posts a catch-up (or joins the one in flight) and
 *     returns, and catchup_done() applies the log after it.  Until then (log_pending)
 *     a follow only marks follow_again, and catchup_done() follows once more; the ring
 *     is left unread meanwhile, so what it holds after the gap is still there to follow
 *     from and no record read in the wait has to come from yet another catch-up.  Why:
 *     during a setup of 100,000 objects the ring omits the largest transactions (a
 *     publication of 100,000 bounds is over its payload_max), and each such fallback
 *     caught up on the loop -- 8 catch-ups of 32-256 ms there, the follower's longest
 *     stalls (bpftrace, 2026-12-03).
 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "conf.h"
#include "fring.h"
#include "hist.h"
#include "killpoint.h"
#include "lifecycle-enact.h"
#include "lifecycle-load.h"
#include "lifecycle-state.h"
#include "log.h"
#include "loop.h"
#include "lring.h"
#include "node.h"
#include "probes.h"
#include "util.h"

#define NS_PER_MS 1000000ull
/* A publication not answered this long is abandoned (2). */
#define PUBLISH_TIMEOUT_MS 10000u
/* Follower lag samples kept for status percentiles. */
#define LAG_SAMPLES 4096u
/* Catch the secondary up this long after the ring applied something (1), and at least
 * this often anyway. */
#define CATCHUP_RING_MS 1000u
#define CATCHUP_IDLE_MS 10000u
/* The loop's reader: attach attempts this far apart while the ring is missing. */
#define RING_ATTACH_RETRY_MS 100u

struct lifecycle {
        struct node *node;
        /* Reported by the node: publication (sent to its Ok) and follower lag. */
        struct hist pub_hist, lag_hist;
        uint64_t pub_sent_ns;
        struct catalog *catalog;        /* secondary; NULL until the primary exists */
        char *primary_path, *secondary_path;
        struct loop_timer *open_retry, *tick_timer;
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
        bool sleep_stopping;            /* notify_stop() ran: do not re-arm */
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
        char detail[1536];
};

/* ---- catalog following (1) ---- */

/* The catch-up thread (6).  Everything under mu; posted and running are the request's
 * two halves (waiting for the thread, being caught up), done its answer for the loop. */
struct catchup_worker {
        pthread_t thread;
        pthread_mutex_t mu;
        pthread_cond_t cv;              /* posted, stop (to the thread); the end (from it) */
        struct loop_waker *waker;       /* catchup_done() on the loop */
        struct catalog *catalog;        /* of the posted request */
        uint64_t delay_ms;              /* --test-catchup-delay-ms */
        bool posted, running, done, stop;
        int result;
        uint64_t took_us;
        char err[256];                  /* catalog_last_error() is per thread */
};

static void *catchup_run(void *userdata)
{
        struct catchup_worker *w = userdata;

        pthread_mutex_lock(&w->mu);
        for (;;) {
                struct catalog *c;
                uint64_t start;
                int r;

                while (!w->posted && !w->stop)
                        pthread_cond_wait(&w->cv, &w->mu);
                if (w->stop)
                        break;
                c = w->catalog;
                w->posted = false;
                w->running = true;
                pthread_mutex_unlock(&w->mu);

                start = now_ns();
                if (w->delay_ms)
                        usleep((useconds_t)(w->delay_ms * 1000));
                r = catalog_catch_up(c);

                pthread_mutex_lock(&w->mu);
                w->running = false;
                w->done = true;
                w->result = r;
                w->took_us = (now_ns() - start) / 1000;
                snprintf(w->err, sizeof(w->err), "%s", r < 0 ? catalog_last_error() : "");
                pthread_cond_broadcast(&w->cv);
                pthread_mutex_unlock(&w->mu);
                loop_waker_wake(w->waker);
                pthread_mutex_lock(&w->mu);
        }
        pthread_mutex_unlock(&w->mu);
        return NULL;
}

static void catchup_done(struct loop *l, uint64_t count, void *userdata);

static int catchup_worker_start(struct lifecycle *lc)
{
        struct catchup_worker *w = calloc(1, sizeof(*w));
        int r;

        if (!w)
                return -ENOMEM;
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
        w->delay_ms = lc->test_catchup_delay_ms;
        r = loop_waker_new(node_loop(lc->node), catchup_done, lc, &w->waker);
        if (r == 0)
                r = thread_start(&w->thread, "catchup", catchup_run, w);
        if (r < 0) {
                if (w->waker)
                        loop_waker_free(node_loop(lc->node), w->waker);
                pthread_cond_destroy(&w->cv);
                pthread_mutex_destroy(&w->mu);
                free(w);
                return r;
        }
        lc->catchup = w;
        return 0;
}

/* Wait for the catch-up in flight, if any, to end (its catchup_done() still runs). */
static void catchup_quiesce(struct lifecycle *lc)
{
        struct catchup_worker *w = lc->catchup;

        if (!w)
                return;
        pthread_mutex_lock(&w->mu);
        while (w->posted || w->running)
                pthread_cond_wait(&w->cv, &w->mu);
        pthread_mutex_unlock(&w->mu);
}

static void catchup_worker_stop(struct lifecycle *lc)
{
        struct catchup_worker *w = lc->catchup;

        if (!w)
                return;
        pthread_mutex_lock(&w->mu);
        w->stop = true;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
        loop_waker_free(node_loop(lc->node), w->waker);
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        lc->catchup = NULL;
        lc->catchup_in_flight = false;
        lc->log_pending = false;
}

/* Hand the catch-up to the thread (6): 0 posted, -errno when it must run here. */
static int catchup_post(struct lifecycle *lc)
{
        struct catchup_worker *w;
        int r;

        assert(!lc->catchup_in_flight);
        if (!lc->catchup) {
                r = catchup_worker_start(lc);
                if (r < 0)
                        return log_warn_errno(r, "catalog_catchup_thread_failed", "action=loop");
                log_info("catalog_catchup", "mode=thread");
        }
        w = lc->catchup;
        pthread_mutex_lock(&w->mu);
        assert(!w->posted && !w->running);
        w->catalog = lc->catalog;
        w->posted = true;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        lc->catchup_in_flight = true;
        lc->ring_dirty = false;         /* what the ring applies from now on needs another */
        return 0;
}

static int lifecycle_reload(struct lifecycle *lc)
{
        uint64_t start = (now_ns() / 1000), seq;
        struct lc_load_stats st;
        int r;

        /* The scans below must not see the secondary move (6). */
        catchup_quiesce(lc);
        lc->loaded = false;
        lc_state_reset_catalog(lc->state);
        lc_enact_reset(lc->enact);
        r = catalog_catch_up(lc->catalog);
        if (r < 0)
                return log_warn_errno(r, "catalog_catch_up_failed", "why=\"%s\"", catalog_last_error());
        lc->catchups++;
        lc->catchup_ms = now_ms();
        lc->ring_dirty = false;
        seq = catalog_last_seq(lc->catalog);
        r = lc_load(lc->catalog, lc->state, lc->enact, &st);
        if (r < 0)
                return log_warn_errno(r, "catalog_load_failed", "why=\"%s\"", catalog_last_error());
        lc_state_set_seq(lc->state, seq);
        lc->loaded = true;
        if (!lc->reloads++) {
                lc->loaded_ns = now_ns();
                lc->first_load = st;
        }
        lc_enact_resync(lc->enact);     /* the complete set, whatever was sent before */
        lc->load_us = (now_ns() / 1000) - start;
        log_info("maintained_state_loaded", "seq=%llu items=%zu requirements=%zu objects=%zu "
                 "scan_us=%llu link_us=%llu took_us=%llu",
                 (unsigned long long)seq, lc_state_n_items(lc->state),
                 lc_state_n_requirements(lc->state), lc_state_n_objects(lc->state),
                 (unsigned long long)st.scan_us, (unsigned long long)st.link_us,
                 (unsigned long long)lc->load_us);
        return 0;
}

/* Follower lag: from the adapter's publication of seq on the ring (at, right after the
 * commit group is durable) to the state having applied it, on the same monotonic clock.
 * at == 0: unknown (the ring's start). */
static void lag_measure(struct lifecycle *lc, uint64_t seq, uint64_t at)
{
        uint64_t now = now_ns() / 1000;

        if (!seq || !at || seq == lc->lag_seq || lc_state_seq(lc->state) < seq || now < at)
                return;
        lc->lag_seq = seq;
        lc->lag_last_us = now - at;
        if (lc->lag_last_us > lc->lag_max_us)
                lc->lag_max_us = lc->lag_last_us;
        lc->lag[lc->n_lag++ % LAG_SAMPLES] = lc->lag_last_us;
        hist_record(&lc->lag_hist, lc->lag_last_us);
        COORD_LIFECYCLE_APPLIED(seq, lc->lag_last_us);
}

/* The 50th and 99th percentiles of the kept lag samples (0 without samples), as the
 * sorted samples' [(n - 1) * p / 100]: by selection, not a sort -- a status request
 * sorted 4,096 samples twice, 0.5-2 ms of the loop per request once the ring was full
 * (the bench asks ten times a second). */
static void lag_percentiles(const struct lifecycle *lc, uint64_t *ret_p50, uint64_t *ret_p99)
{
        size_t n = lc->n_lag < LAG_SAMPLES ? lc->n_lag : LAG_SAMPLES, k50, k99;
        uint64_t v[LAG_SAMPLES];

        *ret_p50 = *ret_p99 = 0;
        if (!n)
                return;
        memcpy(v, lc->lag, n * sizeof(*v));
        k50 = (n - 1) * 50 / 100;
        k99 = (n - 1) * 99 / 100;
        *ret_p99 = u64_nth(v, n, k99);
        /* Everything below k99 is <= it now: the 50th lies among those. */
        *ret_p50 = k50 < k99 ? u64_nth(v, k99, k50) : *ret_p99;
}

/* One transaction, from the ring or the log: the state, then what the controller must
 * hold.  A transaction at or below the state's seq changes nothing.  < 0: the state can
 * no longer be trusted (the caller reloads). */
static int apply_txn(struct lifecycle *lc, const Coord__CatalogTxn *txn, uint64_t *counter)
{
        uint64_t before = lc_state_seq(lc->state);
        int r;

        r = lc_state_apply_txn(lc->state, txn);
        if (r == 0 && lc_state_seq(lc->state) > before) {
                lc->applied_txns++;
                (*counter)++;
                r = lc_enact_apply_txn(lc->enact, txn);
        }
        return r;
}

/* The secondary's catch-up.  A failure is logged and leaves the view as it was. */
static int catch_up(struct lifecycle *lc)
{
        int r;

        if (lc->test_catchup_delay_ms)
                usleep((useconds_t)(lc->test_catchup_delay_ms * 1000));
        r = catalog_catch_up(lc->catalog);

        if (r < 0)
                return log_warn_errno(r, "catalog_catch_up_failed", "why=\"%s\"", catalog_last_error());
        lc->catchups++;
        lc->catchup_ms = now_ms();
        lc->ring_dirty = false;
        return 0;
}

/* Apply the log after the state's seq, as far as the secondary was caught up.  -errno
 * from applying (the caller reloads). */
static int apply_log(struct lifecycle *lc)
{
        struct catalog_log_iter *it = NULL;
        Coord__CatalogTxn *txn;
        int r;

        if (catalog_last_seq(lc->catalog) <= lc_state_seq(lc->state))
                return 0;
        r = catalog_log_iter_new(lc->catalog, lc_state_seq(lc->state), &it);
        if (r < 0)
                return r;
        while ((r = catalog_log_next(it, &txn)) > 0) {
                r = apply_txn(lc, txn, &lc->log_applied);
                coord__catalog_txn__free_unpacked(txn, NULL);
                if (r < 0)
                        break;
        }
        it = catalog_log_iter_free(it);
        return r;
}

/* The log path (1): catch up, apply the log after the state's seq. */
static int follow_log(struct lifecycle *lc)
{
        return catch_up(lc) < 0 ? 0 : apply_log(lc);
}

/* The log path off the loop (6): true when the catch-up is on the thread, false when it
 * must run here.  One in flight already may have started before what the ring could not
 * vouch for was written: catchup_done() then follows once more, which posts another if
 * the state is still behind. */
static bool follow_log_post(struct lifecycle *lc)
{
        if (lc->catchup_in_flight)
                lc->follow_again = true;
        else if (catchup_post(lc) < 0)
                return false;
        lc->log_pending = true;
        return true;
}

/* The loop's ring reader, attached on first use (and retried while the adapter has not
 * created the ring). */
static struct lring_reader *ring_reader(struct lifecycle *lc)
{
        int r;

        if (lc->ring)
                return lc->ring;
        if (now_ms() - lc->ring_attach_ms < RING_ATTACH_RETRY_MS)
                return NULL;
        lc->ring_attach_ms = now_ms();
        r = lring_attach(lc->ring_name, &lc->ring);
        if (r < 0) {
                log_debug("catalog_ring_not_yet", "name=%s error=%d", lc->ring_name, r);
                return NULL;
        }
        log_info("catalog_ring_attached", "name=%s generation=%llu", lc->ring_name,
                 (unsigned long long)lring_reader_generation(lc->ring));
        return lc->ring;
}

/* Why the ring could not vouch for the state this time: one log line per change of
 * reason (a damaged region would otherwise log at every commit). */
static void ring_trouble(struct lifecycle *lc, int err, const char *what, uint64_t seq)
{
        bool warn = err == -EBADMSG || err == -EPROTO || err == -ENOMEM;

        if (err == lc->ring_err && err != -EPIPE && err != -ESTALE)
                return;
        lc->ring_err = err;
        if (warn)
                log_warn_errno(err, "catalog_ring_unusable", "what=%s state_seq=%llu action=log",
                               what, (unsigned long long)lc_state_seq(lc->state));
        else
                log_info("catalog_ring_resync", "what=%s state_seq=%llu seq=%llu generation=%llu "
                         "error=%d action=log", what, (unsigned long long)lc_state_seq(lc->state),
                         (unsigned long long)seq,
                         (unsigned long long)lring_reader_generation(lc->ring), err);
}

/* The ring path (1): apply what the ring holds after the state's seq.  1 when the state
 * reached the ring's last seq (*ret_last, published at *ret_us); 0 when the log must
 * supply the rest, *ret_why saying why (-ENOENT not attached, -ERANGE a gap, -EMSGSIZE
 * an omitted payload, -EILSEQ an undecodable one, -ENODATA the ring's last seq not
 * reached, else the ring's error); -errno from applying (the caller reloads). */
static int follow_ring(struct lifecycle *lc, uint64_t *ret_last, uint64_t *ret_us, int *ret_why)
{
        struct lring_reader *rd = ring_reader(lc);
        struct lring_entry e;
        uint64_t last, us;
        int r;

        *ret_why = -ENOENT;
        if (!rd)
                return 0;
        /* Loaded before draining: every record up to last is visible then (lring.h). */
        r = lring_last(rd, &last, &us);
        if (r < 0) {
                ring_trouble(lc, r, "last", 0);
                *ret_why = r;
                return 0;
        }
        *ret_last = last;
        *ret_us = us;
        while ((r = lring_read(rd, lc_state_seq(lc->state), &e)) > 0) {
                Coord__CatalogTxn *txn;

                if (e.seq != lc_state_seq(lc->state) + 1) {
                        ring_trouble(lc, -ERANGE, "gap", e.seq);
                        *ret_why = -ERANGE;
                        return 0;
                }
                if (e.flags & LRING_ENTRY_OMITTED) {
                        log_debug("catalog_ring_omitted", "seq=%llu action=log",
                                  (unsigned long long)e.seq);
                        *ret_why = -EMSGSIZE;
                        return 0;
                }
                txn = coord__catalog_txn__unpack(NULL, e.len, e.payload);
                if (!txn || txn->seq != e.seq) {
                        log_warn("catalog_ring_undecodable", "seq=%llu bytes=%zu action=log",
                                 (unsigned long long)e.seq, e.len);
                        if (txn)
                                coord__catalog_txn__free_unpacked(txn, NULL);
                        *ret_why = -EILSEQ;
                        return 0;
                }
                r = apply_txn(lc, txn, &lc->ring_applied);
                coord__catalog_txn__free_unpacked(txn, NULL);
                if (r < 0)
                        return r;
                lc->ring_dirty = true;
        }
        if (r < 0) {
                ring_trouble(lc, r, "read", 0);
                *ret_why = r;
                return 0;
        }
        if (lc_state_seq(lc->state) < last) {
                /* The ring's producer knows of commits it does not hold: it restarted
                 * after them, or we came after a lap. */
                ring_trouble(lc, -ENODATA, "behind", last);
                *ret_why = -ENODATA;
                return 0;
        }
        lc->ring_err = 0;
        return 1;
}

/* Bring the state up to the catalog: the ring first, the log for whatever the ring
 * cannot vouch for (1). */
static void lifecycle_follow(struct lifecycle *lc)
{
        uint64_t last = 0, us = 0;
        int r, why;

        if (!lc->catalog)
                return;
        if (!lc->loaded) {
                (void)lifecycle_reload(lc);
                return;
        }
        if (lc->log_pending) {
                lc->follow_again = true;
                return;
        }
        r = follow_ring(lc, &last, &us, &why);
        if (r == 0) {
                lc->ring_fallbacks++;
                COORD_LIFECYCLE_FALLBACK(lc_state_seq(lc->state), why);
                if (follow_log_post(lc)) {
                        lc_enact_flush(lc->enact);      /* what the ring applied */
                        return;
                }
                r = follow_log(lc);
        }
        lc_enact_flush(lc->enact);
        if (r < 0) {
                log_warn_errno(r, "catalog_follow_failed", "seq=%llu action=reload",
                               (unsigned long long)lc_state_seq(lc->state));
                (void)lifecycle_reload(lc);
                return;
        }
        lag_measure(lc, last, us);
}

/* The secondary's catch-up (1), every CATCHUP_RING_MS: catches up if the ring applied
 * something since the last catch-up, or if the last one is CATCHUP_IDLE_MS old.  If the
 * secondary then shows commits beyond the state, the ring is drained first (they are
 * normally on it already) and the log applies what it still lacks -- the safety net for
 * a ring that went silent. */
static void catchup_follow(struct lifecycle *lc)
{
        uint64_t last = 0, us = 0;
        int r, why;

        if (lc->loaded && catalog_last_seq(lc->catalog) > lc_state_seq(lc->state)) {
                r = follow_ring(lc, &last, &us, &why);
                if (r >= 0 && catalog_last_seq(lc->catalog) > lc_state_seq(lc->state))
                        r = apply_log(lc);
                lc_enact_flush(lc->enact);
                if (r < 0) {
                        log_warn_errno(r, "catalog_follow_failed", "seq=%llu action=reload",
                                       (unsigned long long)lc_state_seq(lc->state));
                        (void)lifecycle_reload(lc);
                } else
                        lag_measure(lc, last, us);
        }
}

/* The thread's catch-up ended (6): account for it, then follow as catchup_tick() did. */
static void catchup_done(struct loop *l, uint64_t count, void *userdata)
{
        struct lifecycle *lc = userdata;
        struct catchup_worker *w = lc->catchup;
        uint64_t took;
        int r;

        pthread_mutex_lock(&w->mu);
        if (!w->done) {
                pthread_mutex_unlock(&w->mu);
                return;                 /* a wake-up already consumed */
        }
        w->done = false;
        r = w->result;
        took = w->took_us;
        if (r < 0)
                log_warn_errno(r, "catalog_catch_up_failed", "why=\"%s\" where=thread", w->err);
        pthread_mutex_unlock(&w->mu);
        lc->catchup_in_flight = false;
        lc->log_pending = false;
        lc->catchup_last_us = took;
        if (took > lc->catchup_max_us)
                lc->catchup_max_us = took;
        if (r == 0) {
                lc->catchups++;
                lc->catchup_ms = now_ms();
                catchup_follow(lc);
        }
        /* A follow came while the log path waited (6); after a failed catch-up it
         * posts again. */
        if (lc->follow_again) {
                lc->follow_again = false;
                lifecycle_follow(lc);
        }
}

static void catchup_tick(struct loop *l, void *userdata)
{
        struct lifecycle *lc = userdata;
        int r;

        lc->catchup_timer = NULL;
        if (lc->catalog && lc->loaded && !lc->catchup_in_flight &&
            (lc->ring_dirty || now_ms() - lc->catchup_ms >= CATCHUP_IDLE_MS) &&
            catchup_post(lc) < 0 && catch_up(lc) == 0)
                catchup_follow(lc);
        r = loop_timer_add(l, CATCHUP_RING_MS * NS_PER_MS, catchup_tick, lc, &lc->catchup_timer);
        if (r < 0) {
                lc->catchup_timer = NULL;
                log_error_errno(r, "timer_failed", "what=catalog_catch_up");
        }
}

/* The watcher thread (4, the fallback): a reader of its own, used only to sleep until
 * the adapter publishes; the loop thread's reader does the reading. */
static void *notify_watch(void *userdata)
{
        struct lifecycle *lc = userdata;
        struct lring_reader *rd = NULL;
        int r;

        while (!atomic_load(&lc->notify_stop)) {
                if (!rd) {
                        if (lring_attach(lc->ring_name, &rd) < 0) {
                                usleep(100 * 1000);
                                continue;
                        }
                        (void)lring_skip(rd);
                        loop_waker_wake(lc->notify_waker);
                }
                r = lring_wait(rd, 500);
                if (r == -ETIMEDOUT)
                        continue;
                /* Move past what woke us before waking the loop: the loop then reads at
                 * least that far, and a later publish wakes us again. */
                r = lring_skip(rd);
                loop_waker_wake(lc->notify_waker);
                if (r < 0)
                        usleep(10 * 1000);      /* damaged: no spinning */
        }
        lring_reader_free(rd);
        return NULL;
}

static void notify_drain(struct loop *l, uint64_t count, void *userdata)
{
        lifecycle_follow(userdata);
}

/* Switch to the watcher thread (4), for the rest of the process's life. */
static int watcher_start(struct lifecycle *lc)
{
        int r;

        lc->wait_thread = true;
        r = loop_waker_new(node_loop(lc->node), notify_drain, lc, &lc->notify_waker);
        if (r < 0)
                return log_error_errno(r, "catalog_waker_failed", "");
        r = thread_start(&lc->notify_thread, "catalog-notify", notify_watch, lc);
        if (r < 0)
                return log_error_errno(r, "catalog_watcher_failed", "");
        lc->notify_started = true;
        return 0;
}

static void sleep_arm(struct lifecycle *lc);

static void sleep_timer_fire(struct loop *l, void *userdata)
{
        struct lifecycle *lc = userdata;

        lc->sleep_timer = NULL;
        sleep_arm(lc);
}

/* Come back to sleep_arm() after ms (0: at the next loop iteration). */
static void sleep_later(struct lifecycle *lc, uint64_t ms)
{
        int r = loop_timer_add(node_loop(lc->node), ms * NS_PER_MS, sleep_timer_fire, lc,
                               &lc->sleep_timer);
        if (r < 0) {
                lc->sleep_timer = NULL;
                log_error_errno(r, "timer_failed", "what=catalog_sleep");
        }
}

/* The loop's sleep on the ring (4): queue a futex wait, or follow first if something is
 * readable already.  Any time the state may be behind, lifecycle_follow() runs. */
static void sleep_arm(struct lifecycle *lc)
{
        struct loop *l = node_loop(lc->node);
        const uint32_t *word;
        uint32_t val;
        int r;

        assert(!lc->sleeping && !lc->sleep_timer && !lc->wait_thread);
        if (lc->sleep_stopping)
                return;
        if (!lc->sleeper) {
                r = lring_attach(lc->ring_name, &lc->sleeper);
                if (r < 0) {
                        sleep_later(lc, RING_ATTACH_RETRY_MS);  /* no ring yet */
                        return;
                }
                /* As the watcher did: whatever is there now is for the loop's reader. */
                (void)lring_skip(lc->sleeper);
                lifecycle_follow(lc);
        }
        /* A few rounds while commits keep coming; then yield to the rest of the loop. */
        for (int round = 0; round < 4; round++) {
                r = lring_sleep_begin(lc->sleeper, &word, &val);
                if (r == 0) {
                        r = loop_futex_wait(l, &lc->sleep_io, word, val, true);
                        if (r == 0) {
                                lc->sleeping = true;
                                return;
                        }
                        lring_sleep_end(lc->sleeper);
                        if (r == -EOPNOTSUPP || r == -EINVAL) {
                                log_info("catalog_wait", "mode=thread error=%d", r);
                                (void)watcher_start(lc);
                                return;
                        }
                        log_warn_errno(r, "catalog_sleep_failed", "action=retry");
                        sleep_later(lc, 10);
                        return;
                }
                if (r < 0) {
                        sleep_later(lc, 10);            /* cannot happen: a reader */
                        return;
                }
                /* Readable already: move past it, then read at least that far. */
                r = lring_skip(lc->sleeper);
                lifecycle_follow(lc);
                if (r < 0) {
                        sleep_later(lc, 10);            /* damaged: no spinning */
                        return;
                }
        }
        sleep_later(lc, 0);
}

static void sleep_complete(struct loop *l, struct loop_io *io, int res)
{
        struct lifecycle *lc = container_of(io, struct lifecycle, sleep_io);
        bool counted = lc->sleeping;
        int r;

        /* notify_stop() took the count back already (a cancelled wait's completion). */
        lc->sleeping = false;
        if (counted)
                lring_sleep_end(lc->sleeper);
        if (lc->sleep_stopping)
                return;
        if (res == -EINVAL || res == -EOPNOTSUPP) {
                /* The kernel lists the opcode but will not wait (4). */
                log_info("catalog_wait", "mode=thread error=%d", res);
                (void)watcher_start(lc);
                lifecycle_follow(lc);
                return;
        }
        lc->loop_wakes++;
        /* 0 woken, -EAGAIN the word had moved, anything else (-EINTR, -ECANCELED):
         * look, and sleep again. */
        r = lring_skip(lc->sleeper);
        lifecycle_follow(lc);
        if (r < 0)
                sleep_later(lc, 10);
        else
                sleep_arm(lc);
}

static int notify_start(struct lifecycle *lc, const char *instance)
{
        int r = lring_name(instance, lc->ring_name, sizeof(lc->ring_name));

        if (r < 0)
                return log_error_errno(r, "catalog_ring_name_failed", "instance=%s", instance);
        lc->sleep_io.complete = sleep_complete;
        if (lc->wait_thread || !loop_futex_supported(node_loop(lc->node))) {
                r = watcher_start(lc);
                if (r < 0)
                        return r;
        } else
                sleep_arm(lc);
        log_info("catalog_wait", "mode=%s", lc->wait_thread ? "thread" : "loop");
        r = loop_timer_add(node_loop(lc->node), CATCHUP_RING_MS * NS_PER_MS, catchup_tick, lc,
                           &lc->catchup_timer);
        if (r < 0)
                return log_error_errno(r, "timer_failed", "what=catalog_catch_up");
        return 0;
}

static void notify_stop(struct lifecycle *lc)
{
        struct loop *l = node_loop(lc->node);

        lc->sleep_stopping = true;
        if (lc->sleeping) {
                /* Not counted any longer; the wait itself is cancelled here or by
                 * loop_free(), whose drain runs no callbacks. */
                (void)loop_cancel(l, &lc->sleep_io);
                lring_sleep_end(lc->sleeper);
                lc->sleeping = false;
        }
        loop_timer_cancel(l, lc->sleep_timer);
        lc->sleep_timer = NULL;
        if (lc->notify_started) {
                atomic_store(&lc->notify_stop, true);
                pthread_join(lc->notify_thread, NULL);
                lc->notify_started = false;
        }
        if (lc->notify_waker)
                lc->notify_waker = loop_waker_free(l, lc->notify_waker);
        loop_timer_cancel(l, lc->catchup_timer);
        lc->catchup_timer = NULL;
        catchup_worker_stop(lc);
        lc->ring = lring_reader_free(lc->ring);
        lc->sleeper = lring_reader_free(lc->sleeper);
}

static void lifecycle_try_open(struct loop *l, void *userdata)
{
        struct lifecycle *lc = userdata;
        int r;

        lc->open_retry = NULL;
        r = catalog_open_secondary(lc->primary_path, lc->secondary_path, &lc->catalog);
        if (r >= 0) {
                lc->open_ns = now_ns();
                log_info("catalog_followed", "primary=%s last_seq=%llu", lc->primary_path,
                         (unsigned long long)catalog_last_seq(lc->catalog));
                (void)lifecycle_reload(lc);
                node_set_ready(lc->node, true);
                return;
        }
        /* The adapter creates the catalog on its first start; until then, wait. */
        log_debug("catalog_not_yet", "primary=%s", lc->primary_path);
        r = loop_timer_add(l, 100ull * NS_PER_MS, lifecycle_try_open, lc, &lc->open_retry);
        if (r < 0)
                log_error_errno(r, "timer_failed", "");
}

/* ---- publication (2) ---- */

/* AllowCompaction goes in messages of at most ALLOW_CHUNK records: the controller
 * moves each since in its loop, and one message of a setup's publication at 100,000
 * objects (3,500-5,600 records) held it 15-32 ms; the resync after a controller restart
 * sends every bound.  Splitting is safe: each record stands alone (a since moves to a
 * committed bound or stays, I2), and the controller handles the messages in order. */
#define ALLOW_CHUNK 1024u

static int send_allow(struct lifecycle *lc, const struct lc_publication *p)
{
        Coord__AllowCompaction m = COORD__ALLOW_COMPACTION__INIT;
        Coord__CatalogBoundRecord *recs, **ptrs;
        size_t cap = p->n_bounds < ALLOW_CHUNK ? p->n_bounds : ALLOW_CHUNK;
        int r = 0;

        if (!p->n_bounds)
                return 0;
        recs = calloc(cap, sizeof(*recs));
        ptrs = calloc(cap, sizeof(*ptrs));
        if (!recs || !ptrs) {
                free(recs);
                free(ptrs);
                return -ENOMEM;
        }
        for (size_t off = 0; off < p->n_bounds && r == 0; off += cap) {
                size_t n = p->n_bounds - off < cap ? p->n_bounds - off : cap;

                for (size_t i = 0; i < n; i++) {
                        coord__catalog_bound_record__init(&recs[i]);
                        recs[i].gid = p->bounds[off + i].gid;
                        recs[i].bound = p->bounds[off + i].bound;
                        ptrs[i] = &recs[i];
                }
                m.sinces = ptrs;
                m.n_sinces = n;
                r = node_send(lc->node, COORD__ROLE__ROLE_CONTROLLER,
                              COORD__MSG_TYPE__MSG_ALLOW_COMPACTION, ++lc->next_request_id, &m.base);
                if (r == 0)
                        lc->allow_sent++;
        }
        free(recs);
        free(ptrs);
        return r;
}

static void send_allow_all(struct lifecycle *lc)
{
        struct lc_publication all = { 0 };
        uint64_t start = now_ns();
        int r;

        if (!lc->loaded)
                return;
        r = lc_state_all_bounds(lc->state, &all);
        if (r == 0)
                r = send_allow(lc, &all);
        if (r < 0 && r != -ENOTCONN)
                log_warn_errno(r, "allow_compaction_failed", "what=all");
        else
                log_info("allow_compaction_resync", "bounds=%zu took_us=%llu", all.n_bounds,
                         (unsigned long long)((now_ns() - start) / 1000));
        lc_publication_done(&all);
}

static void publication_failed(struct lifecycle *lc, const char *why)
{
        lc->in_flight = false;
        lc->pub_errors++;
        lc_state_abandon(lc->state);
        log_warn("publication_failed", "why=\"%s\" records=%zu action=reload", why,
                 lc->pub.n_bounds + lc->pub.n_reqs);
        if (lc->catalog)
                (void)lifecycle_reload(lc);
}

static int publish(struct lifecycle *lc)
{
        Coord__PublishProtection m = COORD__PUBLISH_PROTECTION__INIT;
        Coord__CatalogBoundRecord *b = NULL, **bp = NULL;
        Coord__Requirement *q = NULL, **qp = NULL;
        struct lc_publication *p = &lc->pub;
        int r;

        r = lc_state_tick(lc->state, p);
        if (r < 0)
                return r;
        if (!p->n_bounds && !p->n_reqs)
                return 0;
        b = calloc(p->n_bounds + 1, sizeof(*b));
        bp = calloc(p->n_bounds + 1, sizeof(*bp));
        q = calloc(p->n_reqs + 1, sizeof(*q));
        qp = calloc(p->n_reqs + 1, sizeof(*qp));
        if (!b || !bp || !q || !qp) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < p->n_bounds; i++) {
                coord__catalog_bound_record__init(&b[i]);
                b[i].gid = p->bounds[i].gid;
                b[i].bound = p->bounds[i].bound;
                bp[i] = &b[i];
        }
        for (size_t i = 0; i < p->n_reqs; i++) {
                coord__requirement__init(&q[i]);
                q[i].consumer = p->reqs[i].consumer;
                q[i].input = p->reqs[i].input;
                q[i].frontier = p->reqs[i].frontier;
                qp[i] = &q[i];
        }
        m.based_on_seq = lc_state_seq(lc->state);
        m.bounds = bp;
        m.n_bounds = p->n_bounds;
        m.requirements = qp;
        m.n_requirements = p->n_reqs;
        lc->pub_bytes = coord__publish_protection__get_packed_size(&m);
        lc->pub_request_id = ++lc->next_request_id;
        KILLPOINT("publication.before_send");
        r = node_send(lc->node, COORD__ROLE__ROLE_ADAPTER, COORD__MSG_TYPE__MSG_PUBLISH_PROTECTION,
                      lc->pub_request_id, &m.base);
        if (r < 0)
                goto out;
        lc->in_flight = true;
        lc->pub_sent_ms = now_ms();
        lc->pub_sent_ns = now_ns();
        lc->last_bounds = p->n_bounds;
        lc->last_reqs = p->n_reqs;
        lc->last_records = p->n_bounds + p->n_reqs;
        lc->last_bytes = lc->pub_bytes;
        lc->last_touched = p->touched;
        COORD_LIFECYCLE_PUBLISH(m.based_on_seq, (unsigned)p->n_bounds, (unsigned)p->n_reqs,
                                (unsigned)lc->pub_bytes);
out:
        free(b);
        free(bp);
        free(q);
        free(qp);
        if (r < 0)
                lc_state_abandon(lc->state);
        return r;
}

static void tick_arm(struct lifecycle *lc);

static void tick(struct loop *l, void *userdata)
{
        struct lifecycle *lc = userdata;
        int r;

        lc->tick_timer = NULL;
        if (lc->in_flight && now_ms() - lc->pub_sent_ms > PUBLISH_TIMEOUT_MS)
                publication_failed(lc, "no answer from the adapter");
        if (!lc->in_flight && lc->loaded && node_peer_connected(lc->node, COORD__ROLE__ROLE_ADAPTER)) {
                lifecycle_follow(lc);   /* cheap when nothing is new; a safety net */
                r = publish(lc);
                if (r < 0 && r != -ENOTCONN)
                        log_warn_errno(r, "publication_failed", "what=send");
        }
        tick_arm(lc);
}

static void tick_arm(struct lifecycle *lc)
{
        int r = loop_timer_add(node_loop(lc->node), lc->interval_ms * NS_PER_MS, tick, lc,
                               &lc->tick_timer);
        if (r < 0) {
                lc->tick_timer = NULL;
                log_error_errno(r, "timer_failed", "what=publication");
        }
}

static void on_publish_reply(struct lifecycle *lc, const Coord__Envelope *env)
{
        if (env->type == COORD__MSG_TYPE__MSG_OK) {
                Coord__Ok *ok = coord__ok__unpack(NULL, env->payload.len, env->payload.data);

                lc->last_commit_seq = ok ? ok->upper : 0;
                if (ok)
                        coord__ok__free_unpacked(ok, NULL);
                lc->in_flight = false;
                lc->publications++;
                hist_record(&lc->pub_hist, (now_ns() - lc->pub_sent_ns) / 1000);
                lc->records_total += lc->pub.n_bounds + lc->pub.n_reqs;
                lc->bytes_total += lc->pub_bytes;
                lc_state_committed(lc->state, &lc->pub);
                log_debug("publication_committed", "seq=%llu bounds=%zu requirements=%zu bytes=%zu",
                          (unsigned long long)lc->last_commit_seq, lc->pub.n_bounds, lc->pub.n_reqs,
                          lc->pub_bytes);
                KILLPOINT("publication.after_commit");  /* committed, not enacted */
                /* Only now may the controller compact (I2). */
                if (send_allow(lc, &lc->pub) < 0)
                        log_debug("allow_compaction_deferred", "reason=controller_down");
                return;
        }
        if (env->type == COORD__MSG_TYPE__MSG_ERROR) {
                Coord__Error *e = coord__error__unpack(NULL, env->payload.len, env->payload.data);
                char why[256];

                snprintf(why, sizeof(why), "%s: %s", e && e->sqlstate ? e->sqlstate : "?",
                         e && e->message ? e->message : "undecodable error");
                if (e)
                        coord__error__free_unpacked(e, NULL);
                publication_failed(lc, why);
        }
}

/* ---- node callbacks ---- */

static void lifecycle_message(struct node *n, Coord__Role from, const Coord__Envelope *env,
                              void *userdata)
{
        struct lifecycle *lc = userdata;

        if (from == COORD__ROLE__ROLE_ADAPTER && lc->in_flight && env->request_id == lc->pub_request_id)
                on_publish_reply(lc, env);
        if (from == COORD__ROLE__ROLE_CONTROLLER)
                (void)lc_enact_reply(lc->enact, env);
        /* The controller's Oks to AllowCompaction need nothing. */
}

static void lifecycle_peer_up(struct node *n, Coord__Role role, uint64_t incarnation, void *userdata)
{
        struct lifecycle *lc = userdata;

        if (role == COORD__ROLE__ROLE_ADAPTER)
                lifecycle_follow(lc);
        if (role == COORD__ROLE__ROLE_CONTROLLER) {
                uint64_t t = now_ns();

                lc_enact_resync(lc->enact);     /* before permissions: they name these */
                send_allow_all(lc);
                if (lc->loaded && !lc->restart_logged) {
                        /* (5): from main() to the controller holding what the catalog says. */
                        lc->restart_logged = true;
                        log_info("restart_timings", "open_us=%llu load_us=%llu scan_us=%llu link_us=%llu "
                                 "resync_us=%llu total_us=%llu objects=%zu",
                                 (unsigned long long)((lc->open_ns - lc->start_ns) / 1000),
                                 (unsigned long long)((lc->loaded_ns - lc->open_ns) / 1000),
                                 (unsigned long long)lc->first_load.scan_us,
                                 (unsigned long long)lc->first_load.link_us,
                                 (unsigned long long)((now_ns() - t) / 1000),
                                 (unsigned long long)((now_ns() - lc->start_ns) / 1000),
                                 lc_state_n_objects(lc->state));
                }
        }
}

static void lifecycle_peer_down(struct node *n, Coord__Role role, void *userdata)
{
        struct lifecycle *lc = userdata;

        if (role == COORD__ROLE__ROLE_ADAPTER && lc->in_flight)
                publication_failed(lc, "adapter disconnected");
}

static void lifecycle_frontiers(struct node *n, const struct fring_frontier *f, size_t count,
                                bool resynced, void *userdata)
{
        struct lifecycle *lc = userdata;

        if (resynced)
                lc_state_frontiers_reset(lc->state);
        for (size_t i = 0; i < count; i++)
                if (lc_state_frontier(lc->state, f[i].id, f[i].upper, f[i].since,
                                      f[i].flags & FRING_FRONTIER_FORGOTTEN) < 0)
                        log_warn_errno(-ENOMEM, "frontier_dropped", "gid=%llu",
                                       (unsigned long long)f[i].id);
}

static void lifecycle_status(struct node *n, Coord__StatusReply *reply, void *userdata)
{
        struct lifecycle *lc = userdata;
        struct fring_reader *rd = node_ring(n);
        uint64_t p50, p99;

        lifecycle_follow(lc);
        lag_percentiles(lc, &p50, &p99);
        reply->catalog_seq = lc->loaded ? lc_state_seq(lc->state) : 0;
        reply->ring_generation = rd ? fring_reader_generation(rd) : 0;
        snprintf(lc->detail, sizeof(lc->detail),
                 "catalog=%s ring=%s items=%zu requirements=%zu publications=%llu "
                 "publication_errors=%llu last_records=%zu last_bounds=%zu last_requirements=%zu "
                 "last_bytes=%zu last_touched=%zu records_total=%llu bytes_total=%llu "
                 "last_commit_seq=%llu allow_sent=%llu applied=%llu lag_last_us=%llu "
                 "lag_p50_us=%llu lag_p99_us=%llu lag_samples=%zu "
                 "lag_max_us=%llu reloads=%llu catalog_generation=%llu catalog_ring=%s "
                 "ring_applied=%llu ring_fallbacks=%llu log_applied=%llu catalog_catchups=%llu "
                 "catalog_wait=%s catalog_loop_wakes=%llu catalog_catchup=%s "
                 "catalog_catchup_last_us=%llu catalog_catchup_max_us=%llu "
                 "frontier_wait=%s frontier_loop_wakes=%llu frontier_reads=%llu",
                 lc->catalog ? "secondary" : "waiting", rd ? "attached" : "waiting",
                 lc_state_n_items(lc->state), lc_state_n_requirements(lc->state),
                 (unsigned long long)lc->publications, (unsigned long long)lc->pub_errors,
                 lc->last_records, lc->last_bounds, lc->last_reqs, lc->last_bytes, lc->last_touched,
                 (unsigned long long)lc->records_total, (unsigned long long)lc->bytes_total,
                 (unsigned long long)lc->last_commit_seq, (unsigned long long)lc->allow_sent,
                 (unsigned long long)lc->applied_txns, (unsigned long long)lc->lag_last_us,
                 (unsigned long long)p50, (unsigned long long)p99,
                 lc->n_lag, (unsigned long long)lc->lag_max_us, (unsigned long long)lc->reloads,
                 (unsigned long long)lring_reader_generation(lc->ring),
                 lc->ring ? "attached" : "waiting", (unsigned long long)lc->ring_applied,
                 (unsigned long long)lc->ring_fallbacks, (unsigned long long)lc->log_applied,
                 (unsigned long long)lc->catchups, lc->wait_thread ? "thread" : "loop",
                 (unsigned long long)lc->loop_wakes, lc->catchup ? "thread" : "loop",
                 (unsigned long long)lc->catchup_last_us, (unsigned long long)lc->catchup_max_us,
                 node_ring_wait_mode(n), (unsigned long long)node_ring_loop_wakes(n),
                 (unsigned long long)node_ring_reads(n));
        reply->detail = lc->detail;
}

static const struct node_handler lifecycle_handler = {
        .on_message = lifecycle_message,
        .on_peer_up = lifecycle_peer_up,
        .on_peer_down = lifecycle_peer_down,
        .on_status = lifecycle_status,
        .on_frontiers = lifecycle_frontiers,
};

int main(int argc, char **argv)
{
        struct lifecycle lc = { .interval_ms = 1000, .start_ns = now_ns() };
        bool frontier_wait_thread = false;
        const struct conf_option extra[] = {
                { "publication-interval-ms", CONF_U64, &lc.interval_ms, 3600000,
                  "publish read protection this often (default 1000)" },
                { "catalog-wait-thread", CONF_BOOL, &lc.wait_thread, 0,
                  "sleep on the catalog log ring in a watcher thread, not in the event loop "
                  "(what happens anyway where the kernel lacks IORING_OP_FUTEX_WAIT)" },
                { "frontier-wait-thread", CONF_BOOL, &frontier_wait_thread, 0,
                  "sleep on the controller's frontier ring in a watcher thread, not in the "
                  "event loop (what happens anyway where the kernel lacks IORING_OP_FUTEX_WAIT)" },
                { "test-catchup-delay-ms", CONF_U64, &lc.test_catchup_delay_ms, 60000,
                  "TEST ONLY: every catch-up of the secondary but a reload's (the timer's and the log path's, on their thread, or on the loop without one) first sleeps this long" },
        };
        struct node_args a;
        struct node_config cfg;
        int r, ex = NODE_EXIT_FAILURE;

        if (node_args_parse(argc, argv, COORD__ROLE__ROLE_LIFECYCLE, extra, ELEMENTSOF(extra), &a, &ex))
                return ex;
        if (!lc.interval_ms)
                lc.interval_ms = 1;
        if (lc_state_new(&lc.state) < 0 || lc_state_protect_builtins(lc.state) < 0) {
                log_error("out_of_memory", "");
                goto out;
        }
        cfg = (struct node_config){
                .role = COORD__ROLE__ROLE_LIFECYCLE, .instance = a.instance,
                .data_dir = a.data_dir, .run_dir = a.run_dir, .max_frame = (uint32_t)a.max_frame,
                .metrics_port = (uint16_t)a.metrics_port,
        };
        r = node_new(&cfg, &lifecycle_handler, &lc, &lc.node);
        if (r < 0) {
                ex = r == -EBUSY ? NODE_EXIT_RUNNING : NODE_EXIT_FAILURE;
                goto out;
        }
        (void)node_add_hist(lc.node, "publication_duration_seconds",
                            "a publication of read protection, sent to the adapter's Ok (its catalog commit)",
                            &lc.pub_hist);
        (void)node_add_hist(lc.node, "follower_lag_seconds",
                            "a catalog commit's publication on the catalog log ring to the follower's state applying it",
                            &lc.lag_hist);
        if (lc_enact_new(lc.node, &lc.enact) < 0) {
                log_error("out_of_memory", "");
                goto out;
        }
        if (asprintf(&lc.primary_path, "%s/adapter/catalog", a.data_dir) < 0 ||
            asprintf(&lc.secondary_path, "%s/catalog-secondary", node_dir(lc.node)) < 0) {
                log_error("out_of_memory", "");
                goto out;
        }
        lifecycle_try_open(node_loop(lc.node), &lc);
        r = notify_start(&lc, a.instance);
        if (r < 0)
                goto out;
        r = node_follow_ring(lc.node, frontier_wait_thread);
        if (r < 0)
                goto out;
        tick_arm(&lc);
        log_info("publication_configured", "interval_ms=%llu", (unsigned long long)lc.interval_ms);
        r = node_run(lc.node);
        if (r < 0) {
                log_error_errno(r, "loop_failed", "");
                goto out;
        }
        log_info("daemon_stopped", "role=lifecycle");
        ex = 0;
out:
        if (lc.node) {
                notify_stop(&lc);
                loop_timer_cancel(node_loop(lc.node), lc.open_retry);
                loop_timer_cancel(node_loop(lc.node), lc.tick_timer);
        }
        lc.node = node_free(lc.node);
        lc.catalog = catalog_close(lc.catalog);
        lc.state = lc_state_free(lc.state);
        lc.enact = lc_enact_free(lc.enact);
        lc_publication_done(&lc.pub);
        free(lc.primary_path);
        free(lc.secondary_path);
        node_args_done(&a);
        return ex;
}
