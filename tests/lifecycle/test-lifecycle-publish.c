/* test-lifecycle-publish -- the follower's publication (lifecycle-publish.c note 2)
 * without daemons: what goes to the adapter and when, what goes to the controller
 * (only after the adapter's Ok, I2; in chunks of ALLOW_CHUNK), and what an Error or a
 * failed send leaves.  The node is a mock (mock-node.h) that records what is sent.
 */
#include <stdlib.h>
#include <string.h>

#include "coord.pb-c.h"
#include "lifecycle-enact.h"
#include "lifecycle-internal.h"
#include "lifecycle-state.h"
#include "mock-node.h"
#include "t.h"
#include "util.h"

enum { T1 = 1000, T2 = 1003, SEQ = 7 };

/* A follower on node n, its state loaded at SEQ with two tables (T1's bound 100). */
static struct lifecycle *lc_make(struct node *n)
{
        static const struct lc_item_rec items[] = {
                { .gid = T1, .kind = COORD__ITEM_KIND__ITEM_TABLE },
                { .gid = T2, .kind = COORD__ITEM_KIND__ITEM_TABLE },
        };
        static const struct lc_bound_rec bounds[] = { { T1, 100 } };
        const struct lc_load_batch b = { items, ELEMENTSOF(items), bounds, ELEMENTSOF(bounds),
                                         NULL, 0 };
        struct lifecycle *lc = calloc(1, sizeof(*lc));

        CU_ASSERT_PTR_NOT_NULL_FATAL(lc);
        lc->node = n;
        lc->interval_ms = 1000;
        CU_ASSERT_FATAL(lc_state_new(&lc->state) == 0);
        CU_ASSERT_FATAL(lc_enact_new(n, &lc->enact) == 0);
        CU_ASSERT_EQUAL_FATAL(lc_state_load_batch(lc->state, &b), 0);
        lc_state_set_seq(lc->state, SEQ);
        lc->loaded = true;
        /* This follower holds the duty lease (lifecycle-duty.c note 7) for the test. */
        lc->duty_epoch = 1;
        lc->duty_active = true;
        lc->duty_deadline_ns = UINT64_MAX;
        return lc;
}

static void lc_drop(struct lifecycle *lc)
{
        lc_state_free(lc->state);
        lc_enact_free(lc->enact);
        lc_publication_done(&lc->pub);
        free(lc);
}

/* The frontiers that make the tick propose T1 -> 7999 and T2 -> 2999 (quiet tables:
 * each stops at its last write, below upper - 1 s). */
static void move_frontiers(struct lifecycle *lc)
{
        CU_ASSERT_EQUAL(lc_state_frontier(lc->state, 1, 10000, 0, false), 0);   /* T */
        CU_ASSERT_EQUAL(lc_state_frontier(lc->state, T1, 8000, 0, false), 0);
        CU_ASSERT_EQUAL(lc_state_frontier(lc->state, T2, 3000, 0, false), 0);
}

static uint64_t bound_of(struct lifecycle *lc, uint64_t gid)
{
        uint64_t v = UINT64_MAX;

        if (lc_state_bound(lc->state, gid, &v) < 0)
                return 0;
        return v;
}

/* The reply of the adapter to the publication in flight. */
static void reply_ok(struct lifecycle *lc, uint64_t upper)
{
        Coord__Envelope env = COORD__ENVELOPE__INIT;
        Coord__Ok ok = COORD__OK__INIT;
        uint8_t buf[64];

        ok.upper = upper;
        env.type = COORD__MSG_TYPE__MSG_OK;
        env.request_id = lc->pub_request_id;
        env.payload.data = buf;
        env.payload.len = coord__ok__pack(&ok, buf);
        lifecycle_publish_reply(lc, &env);
}

static void reply_error(struct lifecycle *lc)
{
        Coord__Envelope env = COORD__ENVELOPE__INIT;
        Coord__Error e = COORD__ERROR__INIT;
        uint8_t buf[128];

        e.sqlstate = (char *)"40001";
        e.message = (char *)"the catalog moved";
        env.type = COORD__MSG_TYPE__MSG_ERROR;
        env.request_id = lc->pub_request_id;
        env.payload.data = buf;
        env.payload.len = coord__error__pack(&e, buf);
        lifecycle_publish_reply(lc, &env);
}

/* The i-th message sent, as a PublishProtection (NULL if it is not one). */
static Coord__PublishProtection *sent_publication(const struct node *n, size_t i)
{
        if (i >= n->n_sent || n->sent[i].type != COORD__MSG_TYPE__MSG_PUBLISH_PROTECTION)
                return NULL;
        return coord__publish_protection__unpack(NULL, n->sent[i].len, n->sent[i].bytes);
}

static Coord__AllowCompaction *sent_allow(const struct node *n, size_t i)
{
        if (i >= n->n_sent || n->sent[i].type != COORD__MSG_TYPE__MSG_ALLOW_COMPACTION)
                return NULL;
        return coord__allow_compaction__unpack(NULL, n->sent[i].len, n->sent[i].bytes);
}

static const Coord__CatalogBoundRecord *find_rec(Coord__CatalogBoundRecord **v, size_t n,
                                                 uint64_t gid)
{
        for (size_t i = 0; i < n; i++)
                if (v[i]->gid == gid)
                        return v[i];
        return NULL;
}

/* AllowCompaction of n bounds: ceil(n / ALLOW_CHUNK) messages to the controller, every
 * one but the last full, the records all there in order, each message its own request
 * id; allow_sent counts the messages. */
static void test_send_allow_chunks(void)
{
        static const size_t sizes[] = { 0, 1, ALLOW_CHUNK - 1, ALLOW_CHUNK, ALLOW_CHUNK + 1,
                                        2 * ALLOW_CHUNK + 452 };
        struct node *n = mock_node_new();
        struct lifecycle *lc;

        CU_ASSERT_PTR_NOT_NULL_FATAL(n);
        lc = lc_make(n);
        for (size_t k = 0; k < ELEMENTSOF(sizes); k++) {
                struct lc_publication p = { 0 };
                size_t want = (sizes[k] + ALLOW_CHUNK - 1) / ALLOW_CHUNK, next = 0;
                uint64_t last_id = 0, sent_before = lc->allow_sent;

                p.n_bounds = sizes[k];
                p.bounds = calloc(sizes[k] + 1, sizeof(*p.bounds));
                CU_ASSERT_PTR_NOT_NULL_FATAL(p.bounds);
                for (size_t i = 0; i < sizes[k]; i++)
                        p.bounds[i] = (struct lc_bound_rec){ 1000 + i, 5000 + 3 * i };
                mock_node_clear(n);
                CU_ASSERT_EQUAL(lifecycle_send_allow(lc, &p), 0);
                CU_ASSERT_EQUAL(n->n_sent, want);
                CU_ASSERT_EQUAL(lc->allow_sent - sent_before, want);
                for (size_t i = 0; i < n->n_sent; i++) {
                        Coord__AllowCompaction *m = sent_allow(n, i);

                        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
                        CU_ASSERT_EQUAL(n->sent[i].to, COORD__ROLE__ROLE_CONTROLLER);
                        CU_ASSERT(n->sent[i].request_id > last_id);
                        last_id = n->sent[i].request_id;
                        CU_ASSERT(m->n_sinces <= ALLOW_CHUNK);
                        if (i + 1 < n->n_sent)
                                CU_ASSERT_EQUAL(m->n_sinces, ALLOW_CHUNK);
                        for (size_t j = 0; j < m->n_sinces && next < sizes[k]; j++, next++) {
                                CU_ASSERT_EQUAL(m->sinces[j]->gid, p.bounds[next].gid);
                                CU_ASSERT_EQUAL(m->sinces[j]->bound, p.bounds[next].bound);
                        }
                        coord__allow_compaction__free_unpacked(m, NULL);
                }
                CU_ASSERT_EQUAL(next, sizes[k]);
                lc_publication_done(&p);
        }
        lc_drop(lc);
        mock_node_free(n);
}

/* A failed send stops the chunks there and says so; a controller that is down gets
 * nothing (-ENOTCONN: its (re)connection brings every bound, send_allow_all()). */
static void test_send_allow_fails(void)
{
        struct node *n = mock_node_new();
        struct lc_publication p = { 0 };
        struct lifecycle *lc;

        CU_ASSERT_PTR_NOT_NULL_FATAL(n);
        lc = lc_make(n);
        p.n_bounds = 3 * ALLOW_CHUNK;
        p.bounds = calloc(p.n_bounds, sizeof(*p.bounds));
        CU_ASSERT_PTR_NOT_NULL_FATAL(p.bounds);
        for (size_t i = 0; i < p.n_bounds; i++)
                p.bounds[i] = (struct lc_bound_rec){ 1000 + i, 1 };
        n->fail_at = 2;
        n->send_err = -EIO;
        CU_ASSERT_EQUAL(lifecycle_send_allow(lc, &p), -EIO);
        CU_ASSERT_EQUAL(n->calls, 2);           /* not a third */
        CU_ASSERT_EQUAL(n->n_sent, 1);
        CU_ASSERT_EQUAL(lc->allow_sent, 1);

        n->fail_at = 0;
        n->calls = 0;
        n->controller_up = false;
        mock_node_clear(n);
        CU_ASSERT_EQUAL(lifecycle_send_allow(lc, &p), -ENOTCONN);
        CU_ASSERT_EQUAL(n->n_sent, 0);
        lc_publication_done(&p);
        lc_drop(lc);
        mock_node_free(n);
}

/* One publication: the tick's records in ONE PublishProtection to the adapter, based
 * on the state's seq; nothing to the controller and nothing committed until the Ok;
 * then the bounds are committed and AllowCompaction carries them (I2).  Nothing new:
 * nothing sent. */
static void test_publish_commit(void)
{
        struct node *n = mock_node_new();
        Coord__PublishProtection *m;
        Coord__AllowCompaction *a;
        struct lifecycle *lc;

        CU_ASSERT_PTR_NOT_NULL_FATAL(n);
        lc = lc_make(n);
        /* Nothing known of frontiers: nothing to publish, nothing in flight. */
        CU_ASSERT_EQUAL(lifecycle_publish(lc), 0);
        CU_ASSERT_EQUAL(n->n_sent, 0);
        CU_ASSERT_FALSE(lc->in_flight);

        move_frontiers(lc);
        CU_ASSERT_EQUAL(lifecycle_publish(lc), 0);
        CU_ASSERT_TRUE(lc->in_flight);
        CU_ASSERT_EQUAL_FATAL(n->n_sent, 1);
        CU_ASSERT_EQUAL(n->sent[0].to, COORD__ROLE__ROLE_ADAPTER);
        CU_ASSERT_EQUAL(n->sent[0].request_id, lc->pub_request_id);
        CU_ASSERT_EQUAL(n->sent[0].len, lc->pub_bytes);
        m = sent_publication(n, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        CU_ASSERT_EQUAL(m->based_on_seq, SEQ);
        CU_ASSERT_EQUAL(m->n_bounds, 2);
        CU_ASSERT_EQUAL(m->n_requirements, 0);
        CU_ASSERT(find_rec(m->bounds, m->n_bounds, T1) && find_rec(m->bounds, m->n_bounds, T1)->bound == 7999);
        CU_ASSERT(find_rec(m->bounds, m->n_bounds, T2) && find_rec(m->bounds, m->n_bounds, T2)->bound == 2999);
        coord__publish_protection__free_unpacked(m, NULL);
        CU_ASSERT_EQUAL(lc->last_bounds, 2);
        CU_ASSERT_EQUAL(lc->last_records, 2);
        /* Not committed: the state and the controller know nothing of it yet. */
        CU_ASSERT_EQUAL(bound_of(lc, T1), 100);
        CU_ASSERT_EQUAL(mock_node_count(n, COORD__ROLE__ROLE_CONTROLLER,
                                        COORD__MSG_TYPE__MSG_ALLOW_COMPACTION), 0);

        reply_ok(lc, 42);
        CU_ASSERT_FALSE(lc->in_flight);
        CU_ASSERT_EQUAL(lc->publications, 1);
        CU_ASSERT_EQUAL(lc->pub_errors, 0);
        CU_ASSERT_EQUAL(lc->last_commit_seq, 42);
        CU_ASSERT_EQUAL(lc->records_total, 2);
        CU_ASSERT_EQUAL(lc->bytes_total, lc->pub_bytes);
        CU_ASSERT_EQUAL(bound_of(lc, T1), 7999);
        CU_ASSERT_EQUAL(bound_of(lc, T2), 2999);
        CU_ASSERT_EQUAL_FATAL(n->n_sent, 2);
        CU_ASSERT_EQUAL(n->sent[1].to, COORD__ROLE__ROLE_CONTROLLER);
        a = sent_allow(n, 1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_EQUAL(a->n_sinces, 2);
        CU_ASSERT(find_rec(a->sinces, a->n_sinces, T1) && find_rec(a->sinces, a->n_sinces, T1)->bound == 7999);
        CU_ASSERT(find_rec(a->sinces, a->n_sinces, T2) && find_rec(a->sinces, a->n_sinces, T2)->bound == 2999);
        coord__allow_compaction__free_unpacked(a, NULL);

        /* Nothing moved since: nothing to send. */
        mock_node_clear(n);
        CU_ASSERT_EQUAL(lifecycle_publish(lc), 0);
        CU_ASSERT_EQUAL(n->n_sent, 0);
        CU_ASSERT_FALSE(lc->in_flight);
        lc_drop(lc);
        mock_node_free(n);
}

/* The adapter says Error: nothing committed, nothing to the controller, counted; the
 * proposal is abandoned, so the next tick proposes the same records again.  Without a
 * catalog there is nothing to reload from (the daemon reloads). */
static void test_publish_error(void)
{
        struct node *n = mock_node_new();
        Coord__PublishProtection *m;
        struct lifecycle *lc;

        CU_ASSERT_PTR_NOT_NULL_FATAL(n);
        lc = lc_make(n);
        move_frontiers(lc);
        CU_ASSERT_EQUAL(lifecycle_publish(lc), 0);
        CU_ASSERT_TRUE(lc->in_flight);
        reply_error(lc);
        CU_ASSERT_FALSE(lc->in_flight);
        CU_ASSERT_EQUAL(lc->pub_errors, 1);
        CU_ASSERT_EQUAL(lc->publications, 0);
        CU_ASSERT_EQUAL(bound_of(lc, T1), 100);
        CU_ASSERT_EQUAL(mock_node_count(n, COORD__ROLE__ROLE_CONTROLLER,
                                        COORD__MSG_TYPE__MSG_ALLOW_COMPACTION), 0);

        mock_node_clear(n);
        CU_ASSERT_EQUAL(lifecycle_publish(lc), 0);
        CU_ASSERT_EQUAL_FATAL(n->n_sent, 1);
        m = sent_publication(n, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        CU_ASSERT_EQUAL(m->n_bounds, 2);
        coord__publish_protection__free_unpacked(m, NULL);
        lc_drop(lc);
        mock_node_free(n);
}

/* The send fails (the adapter is down): the error is returned, nothing is in flight,
 * and the proposal is abandoned: once the adapter is back, the same records go. */
static void test_publish_send_fails(void)
{
        struct node *n = mock_node_new();
        Coord__PublishProtection *m;
        struct lifecycle *lc;
        uint64_t id;

        CU_ASSERT_PTR_NOT_NULL_FATAL(n);
        lc = lc_make(n);
        move_frontiers(lc);
        n->adapter_up = false;
        CU_ASSERT_EQUAL(lifecycle_publish(lc), -ENOTCONN);
        CU_ASSERT_FALSE(lc->in_flight);
        CU_ASSERT_EQUAL(n->n_sent, 0);
        id = lc->pub_request_id;

        n->adapter_up = true;
        CU_ASSERT_EQUAL(lifecycle_publish(lc), 0);
        CU_ASSERT_TRUE(lc->in_flight);
        CU_ASSERT(lc->pub_request_id > id);
        CU_ASSERT_EQUAL_FATAL(n->n_sent, 1);
        m = sent_publication(n, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        CU_ASSERT_EQUAL(m->n_bounds, 2);
        coord__publish_protection__free_unpacked(m, NULL);
        lc_drop(lc);
        mock_node_free(n);
}

/* A controller that (re)connects gets every committed bound, the built-ins' too (the
 * catalog protects them: lifecycle-state.c NOTE 6), once the state is loaded; nothing
 * before. */
static void test_send_allow_all(void)
{
        static const struct lc_bound_rec more[] = { { 2, 50 }, { T2, 300 } };
        const struct lc_load_batch b = { NULL, 0, more, ELEMENTSOF(more), NULL, 0 };
        struct node *n = mock_node_new();
        Coord__AllowCompaction *a;
        struct lifecycle *lc;

        CU_ASSERT_PTR_NOT_NULL_FATAL(n);
        lc = lc_make(n);
        CU_ASSERT_EQUAL_FATAL(lc_state_load_batch(lc->state, &b), 0);
        lc->loaded = false;
        lifecycle_send_allow_all(lc);
        CU_ASSERT_EQUAL(n->n_sent, 0);

        lc->loaded = true;
        lifecycle_send_allow_all(lc);
        CU_ASSERT_EQUAL_FATAL(n->n_sent, 1);
        a = sent_allow(n, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_EQUAL(a->n_sinces, 3);
        CU_ASSERT(find_rec(a->sinces, a->n_sinces, T1) && find_rec(a->sinces, a->n_sinces, T1)->bound == 100);
        CU_ASSERT(find_rec(a->sinces, a->n_sinces, T2) && find_rec(a->sinces, a->n_sinces, T2)->bound == 300);
        CU_ASSERT(find_rec(a->sinces, a->n_sinces, 2) && find_rec(a->sinces, a->n_sinces, 2)->bound == 50);
        coord__allow_compaction__free_unpacked(a, NULL);
        lc_drop(lc);
        mock_node_free(n);
}

/* lifecycle-duty.c note 7: without the duty, or with it expired by the follower's own
 * clock, nothing goes out -- no publication, no AllowCompaction, no enactment -- and an
 * expired duty is lost on the spot. */
static void test_duty_gate(void)
{
        struct node *n = mock_node_new();
        struct lifecycle *lc;

        CU_ASSERT_PTR_NOT_NULL_FATAL(n);
        lc = lc_make(n);
        lifecycle_duty_init(lc, 0, 1000);
        lc->duty_epoch = 0;
        lc->duty_active = false;
        move_frontiers(lc);
        CU_ASSERT_EQUAL(lifecycle_publish(lc), 0);
        lifecycle_send_allow_all(lc);
        lc_enact_resync(lc->enact);
        CU_ASSERT_EQUAL(n->n_sent, 0);
        CU_ASSERT_FALSE(lc->in_flight);
        /* Held, but its deadline passed: lost, nothing sent, the fence cleared. */
        lc->duty_epoch = 3;
        lc->duty_active = true;
        lc->duty_deadline_ns = 1;
        n->fence = 3;
        CU_ASSERT_EQUAL(lifecycle_publish(lc), 0);
        CU_ASSERT_EQUAL(n->n_sent, 0);
        CU_ASSERT_FALSE(lc->duty_active);
        CU_ASSERT_EQUAL(lc->duty_epoch, 0);
        CU_ASSERT_EQUAL(lc->duty_lost, 1);
        CU_ASSERT_EQUAL(n->fence, 0);
        /* Held and live: the publication goes. */
        lc->duty_epoch = 4;
        lc->duty_active = true;
        lc->duty_deadline_ns = UINT64_MAX;
        CU_ASSERT_EQUAL(lifecycle_publish(lc), 0);
        CU_ASSERT_EQUAL(n->n_sent, 1);
        CU_ASSERT_TRUE(lc->in_flight);
        lc_drop(lc);
        mock_node_free(n);
}

int main(void)
{
        static const struct t_case allow[] = {
                { "chunks", test_send_allow_chunks },
                { "fails", test_send_allow_fails },
                { "all", test_send_allow_all },
                { NULL, NULL },
        };
        static const struct t_case publish[] = {
                { "commit", test_publish_commit },
                { "error", test_publish_error },
                { "send_fails", test_publish_send_fails },
                { "duty_gate", test_duty_gate },
                { NULL, NULL },
        };
        static const struct t_suite suites[] = {
                { "allow_compaction", allow },
                { "publish", publish },
                { NULL, NULL },
        };

        return t_run(suites);
}
