/* test-lifecycle-follow -- the follower's catalog following (lifecycle-follow.c notes 1
 * and 6) without daemons: the follower lag and its percentiles, applying one
 * transaction, the ring path on a real catalog log ring (what it applies, and every
 * reason it gives the log the rest), a reload and the log path on a real RocksDB
 * primary and secondary, and the log path's catch-up on its thread with a real loop.
 * The node is a mock (mock-node.h).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "coord.pb-c.h"
#include "lifecycle-enact.h"
#include "lifecycle-internal.h"
#include "lifecycle-state.h"
#include "loop/loop.h"
#include "ring/lring.h"
#include "mock-node.h"
#include "t.h"
#include "util.h"

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
        rnd_state ^= rnd_state << 13;
        rnd_state ^= rnd_state >> 7;
        rnd_state ^= rnd_state << 17;
        return rnd_state;
}

static struct lifecycle *lc_make(struct node *n)
{
        struct lifecycle *lc = calloc(1, sizeof(*lc));

        CU_ASSERT_PTR_NOT_NULL_FATAL(lc);
        lc->node = n;
        CU_ASSERT_FATAL(lc_state_new(&lc->state) == 0);
        CU_ASSERT_FATAL(lc_enact_new(n, &lc->enact) == 0);
        /* A ring nobody creates, unless the test names another. */
        CU_ASSERT_FATAL(lring_name("lcfollow-none", lc->ring_name, sizeof(lc->ring_name)) == 0);
        return lc;
}

static void lc_drop(struct lifecycle *lc)
{
        lc->ring = lring_reader_free(lc->ring);
        lc->catalog = catalog_close(lc->catalog);
        lc_state_free(lc->state);
        lc_enact_free(lc->enact);
        lc_publication_done(&lc->pub);
        free(lc);
}

static void key9(uint8_t *k, char kind, uint64_t gid)
{
        k[0] = (uint8_t)kind;
        be64_put(k + 1, gid);
}

/* A table's item record: its key (9 bytes) into k, its value into v; the value's length. */
static size_t table_item(uint64_t gid, uint8_t *k, uint8_t *v, size_t size)
{
        Coord__CatalogItem it = COORD__CATALOG_ITEM__INIT;

        it.gid = gid;
        it.name = (char *)"t";
        it.kind = COORD__ITEM_KIND__ITEM_TABLE;
        key9(k, 'i', gid);
        CU_ASSERT_FATAL(coord__catalog_item__get_packed_size(&it) <= size);
        return coord__catalog_item__pack(&it, v);
}

/* The log entry of a transaction creating table gid, packed into buf (8-aligned). */
static size_t txn_create_table(uint64_t seq, uint64_t gid, uint64_t *buf, size_t size)
{
        Coord__CatalogTxn txn = COORD__CATALOG_TXN__INIT;
        Coord__CatalogOp op = COORD__CATALOG_OP__INIT, *ops[1] = { &op };
        uint8_t k[9], v[128];

        op.kind = COORD__CATALOG_OP__KIND__PUT;
        op.key.data = k;
        op.key.len = 9;
        op.value.data = v;
        op.value.len = table_item(gid, k, v, sizeof(v));
        txn.seq = seq;
        txn.ops = ops;
        txn.n_ops = 1;
        CU_ASSERT_FATAL(coord__catalog_txn__get_packed_size(&txn) <= size);
        return coord__catalog_txn__pack(&txn, (uint8_t *)buf);
}

static Coord__CatalogTxn *txn_unpacked(uint64_t seq, uint64_t gid)
{
        uint64_t buf[32];
        size_t len = txn_create_table(seq, gid, buf, sizeof(buf));

        return coord__catalog_txn__unpack(NULL, len, (const uint8_t *)buf);
}

/* The k-th smallest of v[0..n), by a sort. */
static uint64_t ref_nth(const uint64_t *v, size_t n, size_t k)
{
        uint64_t *c = malloc(n * sizeof(*c)), r;

        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        memcpy(c, v, n * sizeof(*c));
        qsort(c, n, sizeof(*c), t_cmp_u64);
        r = c[k];
        free(c);
        return r;
}

/* The percentiles by selection are the sorted samples' [(n - 1) * p / 100], over the
 * samples kept (the last LAG_SAMPLES once the ring of samples wrapped); the samples are
 * left as they were. */
static void test_lag_percentiles(void)
{
        static const size_t sizes[] = { 1, 2, 3, 10, 99, 100, 101, 1000, LAG_SAMPLES - 1,
                                        LAG_SAMPLES, LAG_SAMPLES + 777 };
        struct lifecycle *lc = lc_make(NULL);
        uint64_t p50, p99, *copy;

        lifecycle_lag_percentiles(lc, &p50, &p99);      /* no samples */
        CU_ASSERT_EQUAL(p50, 0);
        CU_ASSERT_EQUAL(p99, 0);

        /* 1..100 shuffled: 50 and 99 */
        for (size_t i = 0; i < 100; i++)
                lc->lag[i] = i + 1;
        for (size_t i = 99; i > 0; i--) {
                size_t j = rnd() % (i + 1);
                uint64_t t = lc->lag[i];
                lc->lag[i] = lc->lag[j];
                lc->lag[j] = t;
        }
        lc->n_lag = 100;
        lifecycle_lag_percentiles(lc, &p50, &p99);
        CU_ASSERT_EQUAL(p50, 50);
        CU_ASSERT_EQUAL(p99, 99);

        copy = malloc(sizeof(lc->lag));
        CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
        for (size_t s = 0; s < ELEMENTSOF(sizes); s++) {
                size_t n = sizes[s] < LAG_SAMPLES ? sizes[s] : LAG_SAMPLES;

                for (size_t i = 0; i < LAG_SAMPLES; i++)
                        lc->lag[i] = rnd() % (s & 1 ? 50 : 1000000);    /* ties, or few */
                lc->n_lag = sizes[s];
                memcpy(copy, lc->lag, sizeof(lc->lag));
                lifecycle_lag_percentiles(lc, &p50, &p99);
                CU_ASSERT_EQUAL(p50, ref_nth(lc->lag, n, (n - 1) * 50 / 100));
                CU_ASSERT_EQUAL(p99, ref_nth(lc->lag, n, (n - 1) * 99 / 100));
                CU_ASSERT(memcmp(copy, lc->lag, sizeof(lc->lag)) == 0);
        }
        free(copy);
        lc_drop(lc);
}

/* A lag sample is taken once per commit, only when the state applied it and the time is
 * known and not in the future; the samples go round a ring of LAG_SAMPLES. */
static void test_lag_measure(void)
{
        struct lifecycle *lc = lc_make(NULL);
        uint64_t now_us = now_ns() / 1000, counts[HIST_BUCKETS], sum;

        lc_state_set_seq(lc->state, 10);
        lifecycle_lag_measure(lc, 0, now_us - 5000);            /* no seq */
        lifecycle_lag_measure(lc, 10, 0);                       /* no time */
        lifecycle_lag_measure(lc, 11, now_us - 5000);           /* not applied yet */
        lifecycle_lag_measure(lc, 10, now_us + 60000000);       /* in the future */
        CU_ASSERT_EQUAL(lc->n_lag, 0);
        CU_ASSERT_EQUAL(lc->lag_seq, 0);

        lifecycle_lag_measure(lc, 10, now_us - 5000);
        CU_ASSERT_EQUAL_FATAL(lc->n_lag, 1);
        CU_ASSERT(lc->lag_last_us >= 5000 && lc->lag_last_us < 5000 + 10000000);
        CU_ASSERT_EQUAL(lc->lag[0], lc->lag_last_us);
        CU_ASSERT_EQUAL(lc->lag_max_us, lc->lag_last_us);
        CU_ASSERT_EQUAL(lc->lag_seq, 10);
        hist_read(&lc->lag_hist, counts, &sum);
        CU_ASSERT_EQUAL(sum, lc->lag_last_us);

        /* The same commit again (nothing new applied): no second sample. */
        lifecycle_lag_measure(lc, 10, now_us - 7000);
        CU_ASSERT_EQUAL(lc->n_lag, 1);

        /* An earlier commit, once the state is past it: measured, the maximum kept. */
        lc_state_set_seq(lc->state, 12);
        lifecycle_lag_measure(lc, 11, now_us - 1000);
        CU_ASSERT_EQUAL(lc->n_lag, 2);
        CU_ASSERT(lc->lag_last_us >= 1000 && lc->lag_last_us < lc->lag[0] + 10000000);
        CU_ASSERT(lc->lag_max_us >= 5000);

        /* The ring of samples wraps. */
        lc->n_lag = LAG_SAMPLES;
        lifecycle_lag_measure(lc, 12, now_us - 3000);
        CU_ASSERT_EQUAL(lc->n_lag, LAG_SAMPLES + 1);
        CU_ASSERT_EQUAL(lc->lag[0], lc->lag_last_us);
        CU_ASSERT(lc->lag[0] >= 3000);
        lc_drop(lc);
}

/* One transaction: the state and the enactment set take it and the caller's counter
 * counts it; one the state has already is skipped and not counted; one beyond the
 * next is refused (-ESTALE: the caller reloads). */
static void test_apply_txn(void)
{
        struct node *n = mock_node_new();
        struct lifecycle *lc = lc_make(n);
        Coord__CatalogTxn *txn;
        uint64_t counter = 0;

        lc_state_set_seq(lc->state, 5);
        txn = txn_unpacked(6, 1000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(txn);
        CU_ASSERT_EQUAL(lifecycle_apply_txn(lc, txn, &counter), 0);
        CU_ASSERT_EQUAL(counter, 1);
        CU_ASSERT_EQUAL(lc->applied_txns, 1);
        CU_ASSERT_EQUAL(lc_state_seq(lc->state), 6);
        CU_ASSERT_EQUAL(lc_state_n_items(lc->state), 1);
        CU_ASSERT_EQUAL(lc_enact_n_items(lc->enact), 1);

        /* again: already applied */
        CU_ASSERT_EQUAL(lifecycle_apply_txn(lc, txn, &counter), 0);
        CU_ASSERT_EQUAL(counter, 1);
        CU_ASSERT_EQUAL(lc->applied_txns, 1);
        coord__catalog_txn__free_unpacked(txn, NULL);

        txn = txn_unpacked(8, 1001);
        CU_ASSERT_PTR_NOT_NULL_FATAL(txn);
        CU_ASSERT_EQUAL(lifecycle_apply_txn(lc, txn, &counter), -ESTALE);
        CU_ASSERT_EQUAL(counter, 1);
        CU_ASSERT_EQUAL(lc_state_seq(lc->state), 6);
        CU_ASSERT_EQUAL(lc_enact_n_items(lc->enact), 1);
        coord__catalog_txn__free_unpacked(txn, NULL);
        lc_drop(lc);
        mock_node_free(n);
}

/* A ring of our own, named after the test and the process. */
static struct lring *ring_make(struct lifecycle *lc, const char *tag)
{
        char instance[64];
        struct lring *r = NULL;

        snprintf(instance, sizeof(instance), "lcfollow-%s-%d", tag, (int)getpid());
        CU_ASSERT_FATAL(lring_name(instance, lc->ring_name, sizeof(lc->ring_name)) == 0);
        (void)lring_unlink(lc->ring_name);
        CU_ASSERT_EQUAL_FATAL(lring_create(lc->ring_name, LRING_CAPACITY_MIN, 1, 0, &r), 0);
        return r;
}

static void ring_drop(struct lifecycle *lc, struct lring *r)
{
        lring_free(r);
        (void)lring_unlink(lc->ring_name);
}

/* Publish the log entry of "create table gid" at seq on the ring, at commit_us. */
static void ring_put(struct lring *r, uint64_t seq, uint64_t gid, uint64_t commit_us)
{
        uint64_t buf[32];
        struct lring_entry e = { .seq = seq, .commit_us = commit_us, .payload = buf };

        e.len = txn_create_table(seq, gid, buf, sizeof(buf));
        CU_ASSERT_EQUAL_FATAL(lring_publish(r, &e, 1), 0);
}

static void ring_put_raw(struct lring *r, uint64_t seq, const void *payload, size_t len)
{
        struct lring_entry e = { .seq = seq, .commit_us = now_ns() / 1000, .payload = payload,
                                 .len = len };

        CU_ASSERT_EQUAL_FATAL(lring_publish(r, &e, 1), 0);
}

/* The ring path (lifecycle-follow.c note 1): what follows the state's seq without a gap
 * is applied, and the ring vouches (1) when the state reached its last seq; else the
 * log must supply the rest (0), and why says why: no ring, a gap, behind, a producer
 * restart. */
static void test_follow_ring(void)
{
        struct node *n = mock_node_new();
        struct lifecycle *lc = lc_make(n);
        uint64_t now_us = now_ns() / 1000, last = 0, us = 0;
        struct lring *r;
        int why = 0;

        /* No ring yet. */
        CU_ASSERT_EQUAL(lifecycle_follow_ring(lc, &last, &us, &why), 0);
        CU_ASSERT_EQUAL(why, -ENOENT);
        CU_ASSERT_PTR_NULL(lc->ring);

        r = ring_make(lc, "path");
        lc->ring_attach_ms = 0;         /* no wait before the next attach attempt */
        for (uint64_t seq = 1; seq <= 3; seq++)
                ring_put(r, seq, 1000 + seq, now_us - 1000 * (4 - seq));
        CU_ASSERT_EQUAL(lifecycle_follow_ring(lc, &last, &us, &why), 1);
        CU_ASSERT_PTR_NOT_NULL(lc->ring);
        CU_ASSERT_EQUAL(last, 3);
        CU_ASSERT_EQUAL(us, now_us - 1000);
        CU_ASSERT_EQUAL(lc_state_seq(lc->state), 3);
        CU_ASSERT_EQUAL(lc_state_n_items(lc->state), 3);
        CU_ASSERT_EQUAL(lc->ring_applied, 3);
        CU_ASSERT_EQUAL(lc->applied_txns, 3);
        CU_ASSERT_TRUE(lc->ring_dirty);

        /* Nothing new: still vouched for, nothing applied. */
        CU_ASSERT_EQUAL(lifecycle_follow_ring(lc, &last, &us, &why), 1);
        CU_ASSERT_EQUAL(lc->ring_applied, 3);

        /* A gap (4 is not on the ring): nothing applied, the log must give 4. */
        ring_put(r, 5, 1005, now_us);
        CU_ASSERT_EQUAL(lifecycle_follow_ring(lc, &last, &us, &why), 0);
        CU_ASSERT_EQUAL(why, -ERANGE);
        CU_ASSERT_EQUAL(lc_state_seq(lc->state), 3);
        CU_ASSERT_EQUAL(lc->ring_applied, 3);
        /* The ring holds nothing more after 5, but the state is behind its last seq. */
        CU_ASSERT_EQUAL(lifecycle_follow_ring(lc, &last, &us, &why), 0);
        CU_ASSERT_EQUAL(why, -ENODATA);
        CU_ASSERT_EQUAL(last, 5);

        /* The log applied 4 and 5 meanwhile (as the log path would). */
        {
                Coord__CatalogTxn *t4 = txn_unpacked(4, 1004), *t5 = txn_unpacked(5, 1005);

                CU_ASSERT_FATAL(t4 && t5);
                CU_ASSERT_EQUAL(lifecycle_apply_txn(lc, t4, &lc->log_applied), 0);
                CU_ASSERT_EQUAL(lifecycle_apply_txn(lc, t5, &lc->log_applied), 0);
                coord__catalog_txn__free_unpacked(t4, NULL);
                coord__catalog_txn__free_unpacked(t5, NULL);
        }
        ring_put(r, 6, 1006, now_us);
        CU_ASSERT_EQUAL(lifecycle_follow_ring(lc, &last, &us, &why), 1);
        CU_ASSERT_EQUAL(lc_state_seq(lc->state), 6);
        CU_ASSERT_EQUAL(lc->ring_applied, 4);

        /* The adapter restarted (the ring reinitialized, a new generation). */
        lring_free(r);
        r = NULL;
        CU_ASSERT_EQUAL_FATAL(lring_create(lc->ring_name, LRING_CAPACITY_MIN, 2, 6, &r), 0);
        ring_put(r, 7, 1007, now_us);
        CU_ASSERT_EQUAL(lifecycle_follow_ring(lc, &last, &us, &why), 0);
        CU_ASSERT_EQUAL(why, -EPIPE);
        CU_ASSERT_EQUAL(lc_state_seq(lc->state), 6);
        /* and from the new ring's start on, it is followed again */
        CU_ASSERT_EQUAL(lifecycle_follow_ring(lc, &last, &us, &why), 1);
        CU_ASSERT_EQUAL(lc_state_seq(lc->state), 7);

        ring_drop(lc, r);
        lc_drop(lc);
        mock_node_free(n);
}

/* What the ring cannot carry goes to the log: an omitted payload (too large for the
 * ring), one that does not decode, one whose seq is not its record's. */
static void test_follow_ring_unusable(void)
{
        static const struct {
                const char *tag;
                int why;
        } cases[] = { { "omitted", -EMSGSIZE }, { "garbage", -EILSEQ }, { "misseq", -EILSEQ } };

        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                struct node *n = mock_node_new();
                struct lifecycle *lc = lc_make(n);
                uint64_t last = 0, us = 0, buf[512];
                struct lring *r = ring_make(lc, cases[c].tag);
                int why = 0;

                memset(buf, 0xff, sizeof(buf));
                if (c == 0)
                        ring_put_raw(r, 1, buf, sizeof(buf));           /* > capacity / 4 */
                else if (c == 1)
                        ring_put_raw(r, 1, buf, 16);
                else
                        ring_put_raw(r, 1, buf, txn_create_table(2, 1000, buf, sizeof(buf)));
                CU_ASSERT_EQUAL(lifecycle_follow_ring(lc, &last, &us, &why), 0);
                CU_ASSERT_EQUAL(why, cases[c].why);
                CU_ASSERT_EQUAL(lc_state_seq(lc->state), 0);
                CU_ASSERT_EQUAL(lc->ring_applied, 0);
                ring_drop(lc, r);
                lc_drop(lc);
                mock_node_free(n);
        }
}

/* Create tables gid from..to on the primary, one transaction each. */
static void commit_tables(struct catalog *p, uint64_t from, uint64_t to)
{
        for (uint64_t gid = from; gid <= to; gid++) {
                uint8_t k[9], v[128];
                struct catalog_op op = { CATALOG_OP_PUT, CATALOG_CF_STATE, k, 9, v, 0 };

                op.value_len = table_item(gid, k, v, sizeof(v));
                CU_ASSERT_EQUAL_FATAL(catalog_commit(p, &op, 1, NULL), 0);
        }
}

struct cat {
        char *dir, *primary, *secondary;
        struct catalog *p;
};

static void cat_open(struct cat *c, const char *tag)
{
        c->dir = t_mkdtemp(tag);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c->dir);
        CU_ASSERT_FATAL(asprintf(&c->primary, "%s/catalog", c->dir) > 0);
        CU_ASSERT_FATAL(asprintf(&c->secondary, "%s/secondary", c->dir) > 0);
        CU_ASSERT_EQUAL_FATAL(catalog_open(c->primary, &c->p), 0);
}

static void cat_close(struct cat *c)
{
        catalog_close(c->p);
        t_rmrf(c->dir);
        free(c->dir);
        free(c->primary);
        free(c->secondary);
}

/* A reload builds the state and the enactment set from the caught-up secondary at its
 * last seq, and resyncs the controller; the log path applies what the secondary shows
 * after a catch-up, and only that. */
static void test_reload_and_log(void)
{
        struct node *n = mock_node_new();
        struct lifecycle *lc = lc_make(n);
        struct cat c;

        cat_open(&c, "lcfollow");
        commit_tables(c.p, 1000, 1002);
        CU_ASSERT_EQUAL_FATAL(catalog_open_secondary(c.primary, c.secondary, &lc->catalog), 0);
        CU_ASSERT_EQUAL(lifecycle_reload(lc), 0);
        CU_ASSERT_TRUE(lc->loaded);
        CU_ASSERT_EQUAL(lc_state_seq(lc->state), 3);
        CU_ASSERT_EQUAL(lc_state_n_items(lc->state), 3);
        CU_ASSERT_EQUAL(lc_enact_n_items(lc->enact), 3);
        CU_ASSERT_EQUAL(lc->reloads, 1);
        CU_ASSERT_EQUAL(lc->catchups, 1);
        CU_ASSERT_EQUAL(mock_node_count(n, COORD__ROLE__ROLE_CONTROLLER,
                                        COORD__MSG_TYPE__MSG_ENSURE_COLLECTIONS), 1);

        commit_tables(c.p, 1003, 1004);
        /* Not caught up: the secondary shows nothing new, nothing is applied. */
        CU_ASSERT_EQUAL(lifecycle_apply_log(lc), 0);
        CU_ASSERT_EQUAL(lc_state_seq(lc->state), 3);
        CU_ASSERT_EQUAL_FATAL(catalog_catch_up(lc->catalog), 0);
        CU_ASSERT_EQUAL(lifecycle_apply_log(lc), 0);
        CU_ASSERT_EQUAL(lc_state_seq(lc->state), 5);
        CU_ASSERT_EQUAL(lc_state_n_items(lc->state), 5);
        CU_ASSERT_EQUAL(lc_enact_n_items(lc->enact), 5);
        CU_ASSERT_EQUAL(lc->log_applied, 2);
        CU_ASSERT_EQUAL(lc->applied_txns, 2);
        /* Again: nothing more. */
        CU_ASSERT_EQUAL(lifecycle_apply_log(lc), 0);
        CU_ASSERT_EQUAL(lc->log_applied, 2);

        /* A reload after that sees the same. */
        CU_ASSERT_EQUAL(lifecycle_reload(lc), 0);
        CU_ASSERT_EQUAL(lc_state_seq(lc->state), 5);
        CU_ASSERT_EQUAL(lc_state_n_items(lc->state), 5);
        CU_ASSERT_EQUAL(lc->reloads, 2);
        lc_drop(lc);
        mock_node_free(n);
        cat_close(&c);
}

/* The log path off the loop (lifecycle-follow.c note 6): with no ring, a follow posts
 * the catch-up to its thread and returns without applying; a follow meanwhile only asks
 * for another; the loop then applies the log after the catch-up, and follows once more. */
static void test_log_path_thread(void)
{
        struct node *n = mock_node_new();
        struct lifecycle *lc;
        struct cat c;

        CU_ASSERT_PTR_NOT_NULL_FATAL(n);
        CU_ASSERT_EQUAL_FATAL(loop_new(64, &n->loop), 0);
        lc = lc_make(n);
        lc->test_catchup_delay_ms = 200;        /* the thread's catch-up takes this long */
        cat_open(&c, "lcfollow-thread");
        commit_tables(c.p, 1000, 1001);
        CU_ASSERT_EQUAL_FATAL(catalog_open_secondary(c.primary, c.secondary, &lc->catalog), 0);
        CU_ASSERT_EQUAL_FATAL(lifecycle_reload(lc), 0);
        CU_ASSERT_EQUAL(lc_state_seq(lc->state), 2);

        commit_tables(c.p, 1002, 1004);
        lifecycle_follow(lc);
        CU_ASSERT_EQUAL(lc->ring_fallbacks, 1);
        CU_ASSERT_PTR_NOT_NULL(lc->catchup);
        CU_ASSERT_TRUE(lc->catchup_in_flight);
        CU_ASSERT_TRUE(lc->log_pending);
        CU_ASSERT_EQUAL(lc_state_seq(lc->state), 2);    /* applied on the loop, later */
        lifecycle_follow(lc);
        CU_ASSERT_TRUE(lc->follow_again);
        CU_ASSERT_EQUAL(lc->ring_fallbacks, 1);

        for (int i = 0; i < 100 && (lc->catchup_in_flight || lc_state_seq(lc->state) < 5); i++)
                CU_ASSERT_EQUAL(loop_run_for(n->loop, 50 * 1000000ull), 0);
        CU_ASSERT_EQUAL(lc_state_seq(lc->state), 5);
        CU_ASSERT_EQUAL(lc_state_n_items(lc->state), 5);
        CU_ASSERT_EQUAL(lc->log_applied, 3);
        CU_ASSERT_FALSE(lc->log_pending);
        CU_ASSERT_FALSE(lc->follow_again);
        CU_ASSERT(lc->catchups >= 2);           /* the reload's and the thread's */
        CU_ASSERT(lc->catchup_last_us >= 200000);

        lifecycle_notify_stop(lc);
        CU_ASSERT_PTR_NULL(lc->catchup);
        lc_drop(lc);
        n->loop = loop_free(n->loop);
        mock_node_free(n);
        cat_close(&c);
}

int main(void)
{
        static const struct t_case lag[] = {
                { "percentiles", test_lag_percentiles },
                { "measure", test_lag_measure },
                { NULL, NULL },
        };
        static const struct t_case follow[] = {
                { "apply_txn", test_apply_txn },
                { "ring", test_follow_ring },
                { "ring_unusable", test_follow_ring_unusable },
                { "reload_and_log", test_reload_and_log },
                { "log_path_thread", test_log_path_thread },
                { NULL, NULL },
        };
        static const struct t_suite suites[] = {
                { "lag", lag },
                { "follow", follow },
                { NULL, NULL },
        };

        return t_run(suites);
}
