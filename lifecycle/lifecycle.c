/* coord-lifecycle -- the lifecycle follower (DESIGN section 1): follows the catalog,
 * keeps the maintained state, publishes read protection in batches.
 *
 * Threads: everything runs in the node's loop thread except the catalog watcher, which
 * only sleeps on the catalog notification ring and wakes the loop (like the node's
 * frontier ring watcher).  Nothing polls: the catalog is read when the adapter says it
 * committed, the frontier ring when the controller published.
 *
 * NOTES ON THE DESIGN
 *
 * (1) Following.  The catalog is a RocksDB secondary.  At open (and after any error or
 *     a rejected publication) the state is rebuilt from a scan of the state column
 *     family at catalog_last_seq() (lc_state_load_record()); then each notification
 *     catches up and applies the log from the state's seq on (lc_state_apply_txn()).
 *     An adapter restart (a new generation of the notification ring) needs nothing
 *     special: the sequence numbers go on where the durable log left them.
 *
 * (2) Publication, every --publication-interval-ms.  At most one in flight: tick
 *     (lifecycle-state.h), send ONE PublishProtection to the adapter; on its Ok
 *     (Ok.upper = the commit's seq) the values become committed and AllowCompaction
 *     with the changed bounds goes to the controller -- never before (I2).  On an
 *     Error, a timeout or the adapter's disconnection, the proposal is abandoned and
 *     the state rebuilt from the catalog.  A controller that (re)connects gets every
 *     committed bound once (it keeps permissions in memory only).
 *
 * (3) Enactment (creating collections, installing dataflows) is still the adapter's
 *     (issue 5 slice 1); this daemon does not send Ensure or CreateDataflows yet.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "conf.h"
#include "fring.h"
#include "lifecycle-enact.h"
#include "lifecycle-state.h"
#include "log.h"
#include "loop.h"
#include "node.h"
#include "probes.h"
#include "util.h"

#define NS_PER_MS 1000000ull
/* A publication not answered this long is abandoned (2). */
#define PUBLISH_TIMEOUT_MS 10000u
/* Follower lag samples kept for status percentiles. */
#define LAG_SAMPLES 4096u

struct lifecycle {
        struct node *node;
        struct catalog *catalog;        /* secondary; NULL until the primary exists */
        char *primary_path, *secondary_path;
        struct loop_timer *open_retry, *tick_timer;
        uint64_t interval_ms;
        struct lc_state *state;
        struct lc_enact *enact;         /* what the controller must hold (3) */
        bool loaded;                    /* state built from the catalog */

        /* The catalog notification watcher (1). */
        char notify_name[128];
        struct loop_waker *notify_waker;
        pthread_t notify_thread;
        bool notify_started;
        atomic_bool notify_stop;
        atomic_uint_least64_t notify_generation;
        /* The last notification seen by the watcher: seq, and its monotonic time (us). */
        atomic_uint_least64_t notify_seq, notify_us;

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
        uint64_t lag_seq;                       /* the notification last measured */
        uint64_t lag[LAG_SAMPLES];              /* commit -> applied, us, a ring */
        size_t n_lag;
        uint64_t reloads;
        char detail[768];
};

/* ---- catalog following (1) ---- */

static int load_one(const void *key, size_t key_len, const void *value, size_t value_len,
                    void *userdata)
{
        struct lifecycle *lc = userdata;
        int r = lc_state_load_record(lc->state, key, key_len, value, value_len);

        return r < 0 ? r : lc_enact_load_record(lc->enact, key, key_len, value, value_len);
}

static int lifecycle_reload(struct lifecycle *lc)
{
        uint64_t start = (now_ns() / 1000), seq;
        int r;

        lc->loaded = false;
        lc_state_reset_catalog(lc->state);
        lc_enact_reset(lc->enact);
        r = catalog_catch_up(lc->catalog);
        if (r < 0)
                return log_warn_errno(r, "catalog_catch_up_failed", "why=\"%s\"", catalog_last_error());
        seq = catalog_last_seq(lc->catalog);
        r = catalog_scan(lc->catalog, CATALOG_CF_STATE, NULL, 0, load_one, lc);
        if (r < 0)
                return log_warn_errno(r, "catalog_load_failed", "why=\"%s\"", catalog_last_error());
        lc_state_set_seq(lc->state, seq);
        lc->loaded = true;
        lc->reloads++;
        lc_enact_resync(lc->enact);     /* the complete set, whatever was sent before */
        log_info("maintained_state_loaded", "seq=%llu items=%zu requirements=%zu took_us=%llu",
                 (unsigned long long)seq, lc_state_n_items(lc->state),
                 lc_state_n_requirements(lc->state), (unsigned long long)((now_ns() / 1000) - start));
        return 0;
}

/* Follower lag: from the adapter's notification (right after the commit group is
 * durable) to the state having applied that seq, on the same monotonic clock. */
static void lag_measure(struct lifecycle *lc)
{
        uint64_t seq = atomic_load(&lc->notify_seq), at = atomic_load(&lc->notify_us);
        uint64_t now = now_ns() / 1000;

        if (!seq || seq == lc->lag_seq || lc_state_seq(lc->state) < seq || now < at)
                return;
        lc->lag_seq = seq;
        lc->lag_last_us = now - at;
        if (lc->lag_last_us > lc->lag_max_us)
                lc->lag_max_us = lc->lag_last_us;
        lc->lag[lc->n_lag++ % LAG_SAMPLES] = lc->lag_last_us;
        COORD_LIFECYCLE_APPLIED(seq, lc->lag_last_us);
}

static int u64_cmp(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

/* The p-th percentile (0..100) of the kept lag samples; 0 without samples. */
static uint64_t lag_percentile(const struct lifecycle *lc, unsigned p)
{
        size_t n = lc->n_lag < LAG_SAMPLES ? lc->n_lag : LAG_SAMPLES;
        uint64_t v[LAG_SAMPLES], r;

        if (!n)
                return 0;
        memcpy(v, lc->lag, n * sizeof(*v));
        qsort(v, n, sizeof(*v), u64_cmp);
        r = v[(n - 1) * p / 100];
        return r;
}

/* Catch up and apply the log after the state's seq. */
static void lifecycle_follow(struct lifecycle *lc)
{
        struct catalog_log_iter *it = NULL;
        Coord__CatalogTxn *txn;
        int r;

        if (!lc->catalog)
                return;
        if (!lc->loaded) {
                (void)lifecycle_reload(lc);
                return;
        }
        r = catalog_catch_up(lc->catalog);
        if (r < 0) {
                log_warn_errno(r, "catalog_catch_up_failed", "why=\"%s\"", catalog_last_error());
                return;
        }
        if (catalog_last_seq(lc->catalog) <= lc_state_seq(lc->state))
                return;
        r = catalog_log_iter_new(lc->catalog, lc_state_seq(lc->state), &it);
        if (r < 0)
                goto fail;
        while ((r = catalog_log_next(it, &txn)) > 0) {
                uint64_t before = lc_state_seq(lc->state);

                r = lc_state_apply_txn(lc->state, txn);
                if (r == 0 && lc_state_seq(lc->state) > before) {
                        lc->applied_txns++;
                        r = lc_enact_apply_txn(lc->enact, txn);
                }
                coord__catalog_txn__free_unpacked(txn, NULL);
                if (r < 0)
                        break;
        }
        it = catalog_log_iter_free(it);
        lc_enact_flush(lc->enact);
        if (r < 0)
                goto fail;
        lag_measure(lc);
        return;
fail:
        it = catalog_log_iter_free(it);
        log_warn_errno(r, "catalog_follow_failed", "seq=%llu action=reload",
                       (unsigned long long)lc_state_seq(lc->state));
        (void)lifecycle_reload(lc);
}

/* The watcher thread: its own reader, used only to sleep until the adapter commits. */
static void *notify_watch(void *userdata)
{
        struct lifecycle *lc = userdata;
        struct fring_reader *rd = NULL;
        struct fring_frontier sink[8];
        bool resynced;
        int r;

        while (!atomic_load(&lc->notify_stop)) {
                if (!rd) {
                        if (fring_attach(lc->notify_name, &rd) < 0) {
                                usleep(100 * 1000);
                                continue;
                        }
                        loop_waker_wake(lc->notify_waker);
                }
                r = fring_wait(rd, 500);
                if (r == -ETIMEDOUT)
                        continue;
                do {
                        r = fring_read(rd, sink, ELEMENTSOF(sink), &resynced);
                        if (r > 0 && sink[r - 1].id == FRING_CATALOG_ID) {
                                atomic_store(&lc->notify_us, sink[r - 1].since);
                                atomic_store(&lc->notify_seq, sink[r - 1].upper);
                        }
                } while (r > 0);
                atomic_store(&lc->notify_generation, fring_reader_generation(rd));
                loop_waker_wake(lc->notify_waker);
                if (r < 0)
                        usleep(10 * 1000);      /* damaged or mid-restart: no spinning */
        }
        fring_reader_free(rd);
        return NULL;
}

static void notify_drain(struct loop *l, uint64_t count, void *userdata)
{
        lifecycle_follow(userdata);
}

static int notify_start(struct lifecycle *lc, const char *instance)
{
        int r = fring_name_catalog(instance, lc->notify_name, sizeof(lc->notify_name));

        if (r < 0)
                return log_error_errno(r, "catalog_ring_name_failed", "instance=%s", instance);
        r = loop_waker_new(node_loop(lc->node), notify_drain, lc, &lc->notify_waker);
        if (r < 0)
                return log_error_errno(r, "catalog_waker_failed", "");
        r = -pthread_create(&lc->notify_thread, NULL, notify_watch, lc);
        if (r < 0)
                return log_error_errno(r, "catalog_watcher_failed", "");
        lc->notify_started = true;
        return 0;
}

static void notify_stop(struct lifecycle *lc)
{
        if (lc->notify_started) {
                atomic_store(&lc->notify_stop, true);
                pthread_join(lc->notify_thread, NULL);
                lc->notify_started = false;
        }
        if (lc->notify_waker)
                lc->notify_waker = loop_waker_free(node_loop(lc->node), lc->notify_waker);
}

static void lifecycle_try_open(struct loop *l, void *userdata)
{
        struct lifecycle *lc = userdata;
        int r;

        lc->open_retry = NULL;
        r = catalog_open_secondary(lc->primary_path, lc->secondary_path, &lc->catalog);
        if (r >= 0) {
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

static int send_allow(struct lifecycle *lc, const struct lc_publication *p)
{
        Coord__AllowCompaction m = COORD__ALLOW_COMPACTION__INIT;
        Coord__CatalogBoundRecord *recs, **ptrs;
        int r;

        if (!p->n_bounds)
                return 0;
        recs = calloc(p->n_bounds, sizeof(*recs));
        ptrs = calloc(p->n_bounds, sizeof(*ptrs));
        if (!recs || !ptrs) {
                free(recs);
                free(ptrs);
                return -ENOMEM;
        }
        for (size_t i = 0; i < p->n_bounds; i++) {
                coord__catalog_bound_record__init(&recs[i]);
                recs[i].gid = p->bounds[i].gid;
                recs[i].bound = p->bounds[i].bound;
                ptrs[i] = &recs[i];
        }
        m.sinces = ptrs;
        m.n_sinces = p->n_bounds;
        r = node_send(lc->node, COORD__ROLE__ROLE_CONTROLLER, COORD__MSG_TYPE__MSG_ALLOW_COMPACTION,
                      ++lc->next_request_id, &m.base);
        if (r == 0)
                lc->allow_sent++;
        free(recs);
        free(ptrs);
        return r;
}

static void send_allow_all(struct lifecycle *lc)
{
        struct lc_publication all = { 0 };
        int r;

        if (!lc->loaded)
                return;
        r = lc_state_all_bounds(lc->state, &all);
        if (r == 0)
                r = send_allow(lc, &all);
        if (r < 0 && r != -ENOTCONN)
                log_warn_errno(r, "allow_compaction_failed", "what=all");
        else
                log_info("allow_compaction_resync", "bounds=%zu", all.n_bounds);
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
        r = node_send(lc->node, COORD__ROLE__ROLE_ADAPTER, COORD__MSG_TYPE__MSG_PUBLISH_PROTECTION,
                      lc->pub_request_id, &m.base);
        if (r < 0)
                goto out;
        lc->in_flight = true;
        lc->pub_sent_ms = now_ms();
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
                lc->records_total += lc->pub.n_bounds + lc->pub.n_reqs;
                lc->bytes_total += lc->pub_bytes;
                lc_state_committed(lc->state, &lc->pub);
                log_debug("publication_committed", "seq=%llu bounds=%zu requirements=%zu bytes=%zu",
                          (unsigned long long)lc->last_commit_seq, lc->pub.n_bounds, lc->pub.n_reqs,
                          lc->pub_bytes);
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
                lc_enact_resync(lc->enact);     /* before permissions: they name these */
                send_allow_all(lc);
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

        lifecycle_follow(lc);
        reply->catalog_seq = lc->loaded ? lc_state_seq(lc->state) : 0;
        reply->ring_generation = rd ? fring_reader_generation(rd) : 0;
        snprintf(lc->detail, sizeof(lc->detail),
                 "catalog=%s ring=%s items=%zu requirements=%zu publications=%llu "
                 "publication_errors=%llu last_records=%zu last_bounds=%zu last_requirements=%zu "
                 "last_bytes=%zu last_touched=%zu records_total=%llu bytes_total=%llu "
                 "last_commit_seq=%llu allow_sent=%llu applied=%llu lag_last_us=%llu "
                 "lag_p50_us=%llu lag_p99_us=%llu lag_samples=%zu "
                 "lag_max_us=%llu reloads=%llu catalog_generation=%llu",
                 lc->catalog ? "secondary" : "waiting", rd ? "attached" : "waiting",
                 lc_state_n_items(lc->state), lc_state_n_requirements(lc->state),
                 (unsigned long long)lc->publications, (unsigned long long)lc->pub_errors,
                 lc->last_records, lc->last_bounds, lc->last_reqs, lc->last_bytes, lc->last_touched,
                 (unsigned long long)lc->records_total, (unsigned long long)lc->bytes_total,
                 (unsigned long long)lc->last_commit_seq, (unsigned long long)lc->allow_sent,
                 (unsigned long long)lc->applied_txns, (unsigned long long)lc->lag_last_us,
                 (unsigned long long)lag_percentile(lc, 50), (unsigned long long)lag_percentile(lc, 99),
                 lc->n_lag, (unsigned long long)lc->lag_max_us, (unsigned long long)lc->reloads,
                 (unsigned long long)atomic_load(&lc->notify_generation));
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
        struct lifecycle lc = { .interval_ms = 1000 };
        const struct conf_option extra[] = {
                { "publication-interval-ms", CONF_U64, &lc.interval_ms, 3600000,
                  "publish read protection this often (default 1000)" },
        };
        struct node_args a;
        struct node_config cfg;
        int r, ex = NODE_EXIT_FAILURE;

        if (node_args_parse(argc, argv, COORD__ROLE__ROLE_LIFECYCLE, extra, ELEMENTSOF(extra), &a, &ex))
                return ex;
        if (!lc.interval_ms)
                lc.interval_ms = 1;
        if (lc_state_new(&lc.state) < 0) {
                log_error("out_of_memory", "");
                goto out;
        }
        cfg = (struct node_config){
                .role = COORD__ROLE__ROLE_LIFECYCLE, .instance = a.instance,
                .data_dir = a.data_dir, .run_dir = a.run_dir, .max_frame = (uint32_t)a.max_frame,
        };
        r = node_new(&cfg, &lifecycle_handler, &lc, &lc.node);
        if (r < 0) {
                ex = r == -EBUSY ? NODE_EXIT_RUNNING : NODE_EXIT_FAILURE;
                goto out;
        }
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
        r = node_follow_ring(lc.node);
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
