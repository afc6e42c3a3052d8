/* lifecycle-follow.c -- the follower follows the catalog: the catalog log ring, the
 * log from the RocksDB secondary after a catch-up, reloads, the follower lag, and the
 * loop's sleep on the ring (lifecycle-internal.h; main() in lifecycle.c).
 *
 * Threads: the loop thread, but for the catch-up thread (6) and the watcher thread (4),
 * each with what its note gives it.  The notes keep the numbers they had in lifecycle.c
 * (2, 3 and 5 stand there).
 *
 * NOTES ON THE DESIGN
 *
 * (1) Following.  The catalog is a RocksDB secondary.  At open (and after any error or a
 *     rejected publication) the state is rebuilt at catalog_last_seq() (lc_load(),
 *     lifecycle-load.c); then it applies every committed transaction in seq order
 *     (lc_state_apply_txn()) from the catalog log ring (lring.h: durable, in seq order,
 *     no gaps; seq <= the state's skipped, state + 1 applied) or, whenever the ring cannot
 *     vouch for being complete (not attached, lapped, a new generation, a gap, an omitted
 *     or undecodable payload, a damaged region, its last seq above what it delivered),
 *     from the log after catalog_catch_up().  Both apply the same bytes.  The secondary is
 *     still caught up about once a second, at least every CATCHUP_IDLE_MS, and always
 *     before the log path and a reload.  docs/lifecycle.md, "Following the catalog".
 *
 * (4) Waking up for a commit.  The adapter's FUTEX_WAKE on the ring's notify word
 *     completes an io_uring futex wait of the loop itself (loop_futex_wait(), Linux
 *     6.7+): one wake-up per commit.  The sleeper follows lring_wait()'s protocol in two
 *     halves: lring_sleep_begin(), the wait in the loop, lring_sleep_end() at its
 *     completion, then lring_skip() past what woke it *before* following, so no publish
 *     is lost.  Where the kernel lacks the opcode or refuses the wait (-EINVAL,
 *     -EOPNOTSUPP), or --catalog-wait-thread asks for it, a watcher thread (futex(2),
 *     eventfd) takes over for the life of the process (status catalog_wait=thread).  Both
 *     only trigger lifecycle_follow(), which trusts the ring only as far as (1) says.
 *
 * (6) The periodic catch-up runs off the loop.  catchup_tick() posts catalog_catch_up()
 *     (which replays the primary's new WAL into the secondary) to a thread of its own
 *     (struct catchup_worker, started on first use); the thread wakes the loop and
 *     catchup_done() drains the ring and applies the log the ring lacks.  At most one is
 *     in flight.  A reload's catch-up stays synchronous, and lifecycle_reload() first
 *     waits for one in flight: its four scans share no snapshot and assume the
 *     secondary's view does not move under them.  Without the thread it runs on the loop.
 *     The log path (1) goes the same way (follow_log_post()): until catchup_done() applies
 *     the log (log_pending), a follow only marks follow_again and the ring is left
 *     unread, so what it holds after the gap is still there to follow from.
 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "hist.h"
#include "lifecycle-enact.h"
#include "lifecycle-internal.h"
#include "lifecycle-load.h"
#include "lifecycle-state.h"
#include "log.h"
#include "loop/loop.h"
#include "ring/lring.h"
#include "node/node.h"
#include "probes.h"
#include "util.h"

/* Catch the secondary up this long after the ring applied something (1), and at least
 * this often anyway. */
#define CATCHUP_RING_MS 1000u
#define CATCHUP_IDLE_MS 10000u
/* The loop's reader: attach attempts this far apart while the ring is missing. */
#define RING_ATTACH_RETRY_MS 100u

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

/* The secondary's catalog_catch_up() on the loop thread, with its accounting.  A failure
 * is logged and leaves the view as it was. */
static int catch_up_now(struct lifecycle *lc)
{
        int r = catalog_catch_up(lc->catalog);

        if (r < 0)
                return log_warn_errno(r, "catalog_catch_up_failed", "why=\"%s\"", catalog_last_error());
        lc->catchups++;
        lc->catchup_ms = now_ms();
        lc->ring_dirty = false;
        return 0;
}

int lifecycle_reload(struct lifecycle *lc)
{
        uint64_t start = (now_ns() / 1000), seq;
        struct lc_load_stats st;
        int r;

        /* The scans below must not see the secondary move (6). */
        catchup_quiesce(lc);
        lc->loaded = false;
        lc_state_reset_catalog(lc->state);
        lc_enact_reset(lc->enact);
        r = catch_up_now(lc);
        if (r < 0)
                return r;
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
void lifecycle_lag_measure(struct lifecycle *lc, uint64_t seq, uint64_t at)
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
void lifecycle_lag_percentiles(const struct lifecycle *lc, uint64_t *ret_p50, uint64_t *ret_p99)
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
int lifecycle_apply_txn(struct lifecycle *lc, const Coord__CatalogTxn *txn, uint64_t *counter)
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

/* The secondary's catch-up on the loop thread, after the test delay a reload's does not
 * take (catch_up_now()). */
static int catch_up(struct lifecycle *lc)
{
        if (lc->test_catchup_delay_ms)
                usleep((useconds_t)(lc->test_catchup_delay_ms * 1000));
        return catch_up_now(lc);
}

/* Apply the log after the state's seq, as far as the secondary was caught up.  -errno
 * from applying (the caller reloads). */
int lifecycle_apply_log(struct lifecycle *lc)
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
                r = lifecycle_apply_txn(lc, txn, &lc->log_applied);
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
        return catch_up(lc) < 0 ? 0 : lifecycle_apply_log(lc);
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
int lifecycle_follow_ring(struct lifecycle *lc, uint64_t *ret_last, uint64_t *ret_us, int *ret_why)
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
                r = lifecycle_apply_txn(lc, txn, &lc->ring_applied);
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

/* The end of a follow: the enactments of what it applied go out; then a failed follow
 * (r < 0) reloads the state from the catalog, a good one measures the lag of the ring's
 * last seq (last, published at us; 0: none read). */
static void follow_finish(struct lifecycle *lc, int r, uint64_t last, uint64_t us)
{
        lc_enact_flush(lc->enact);
        if (r < 0) {
                log_warn_errno(r, "catalog_follow_failed", "seq=%llu action=reload",
                               (unsigned long long)lc_state_seq(lc->state));
                (void)lifecycle_reload(lc);
                return;
        }
        lifecycle_lag_measure(lc, last, us);
}

/* Bring the state up to the catalog: the ring first, the log for whatever the ring
 * cannot vouch for (1). */
void lifecycle_follow(struct lifecycle *lc)
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
        r = lifecycle_follow_ring(lc, &last, &us, &why);
        if (r == 0) {
                lc->ring_fallbacks++;
                COORD_LIFECYCLE_FALLBACK(lc_state_seq(lc->state), why);
                if (follow_log_post(lc)) {
                        lc_enact_flush(lc->enact);      /* what the ring applied */
                        return;
                }
                r = follow_log(lc);
        }
        follow_finish(lc, r, last, us);
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
                r = lifecycle_follow_ring(lc, &last, &us, &why);
                if (r >= 0 && catalog_last_seq(lc->catalog) > lc_state_seq(lc->state))
                        r = lifecycle_apply_log(lc);
                follow_finish(lc, r, last, us);
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

        /* lifecycle_notify_stop() took the count back already (a cancelled wait's completion). */
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

int lifecycle_notify_start(struct lifecycle *lc, const char *instance)
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

void lifecycle_notify_stop(struct lifecycle *lc)
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

void lifecycle_try_open(struct loop *l, void *userdata)
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
