/* test-commit -- the committer (adapter/adapter-commit.c) on a real catalog store and a
 * real event loop: jobs go to the store from several worker threads, so a later job
 * may reach it first -- unless it was submitted with after_earlier, which holds it
 * until every job submitted before it has returned from the store (Order).
 *
 *   a later job passes a slow one     without after_earlier: the job submitted second
 *                                     commits first (lower sequence number) while the
 *                                     first one's worker sleeps (test_delay_ms) -- the
 *                                     reordering the option exists for;
 *   after_earlier keeps the order     the same with after_earlier on the second job:
 *                                     it commits after the first, and its callback
 *                                     runs after the first's (completions in the order
 *                                     the store returned them).  Fails when the worker
 *                                     does not wait, or on_done() runs them LIFO.
 */
#include <errno.h>
#include <inttypes.h>

#include "adapter-commit.h"
#include "catalog/catalog.h"
#include "loop/loop.h"
#include "t.h"
#include "util.h"

struct done {
        struct loop *l;
        int order[2], n;
        uint64_t seq[2];
        int r[2];
};

struct ctx {
        struct done *d;
        int which;
};

static void on_commit(void *userdata, int r, uint64_t seq)
{
        struct ctx *c = userdata;

        c->d->seq[c->which] = seq;
        c->d->r[c->which] = r;
        c->d->order[c->d->n++] = c->which;
        if (c->d->n == 2)
                loop_stop(c->d->l);
}

/* Job 0: sleeps delay_ms in its worker, then commits; job 1, submitted right after,
 * with after_earlier or not.  Fills d. */
static void run_pair(bool after, struct done *d)
{
        char *dir = t_mkdtemp("commit");
        struct catalog *store = NULL;
        struct committer *cm = NULL;
        struct loop *l = NULL;
        struct ctx c0 = { d, 0 }, c1 = { d, 1 };
        const struct catalog_op op0 = { .kind = CATALOG_OP_PUT, .cf = CATALOG_CF_STATE,
                                        .key = "k0", .key_len = 2, .value = "v", .value_len = 1 };
        const struct catalog_op op1 = { .kind = CATALOG_OP_PUT, .cf = CATALOG_CF_STATE,
                                        .key = "k1", .key_len = 2, .value = "v", .value_len = 1 };

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        CU_ASSERT_EQUAL_FATAL(catalog_open(dir, &store), 0);
        CU_ASSERT_EQUAL_FATAL(loop_new(64, &l), 0);
        CU_ASSERT_EQUAL_FATAL(committer_new(l, store, 4, &cm), 0);
        *d = (struct done){ .l = l };
        CU_ASSERT_EQUAL_FATAL(committer_submit_opts(cm, &(struct catalog_txn_ops){ &op0, 1 }, 1,
                                                    &(struct commit_opts){ .test_delay_ms = 300 },
                                                    on_commit, &c0), 0);
        CU_ASSERT_EQUAL_FATAL(committer_submit_opts(cm, &(struct catalog_txn_ops){ &op1, 1 }, 1,
                                                    &(struct commit_opts){ .after_earlier = after },
                                                    on_commit, &c1), 0);
        CU_ASSERT_EQUAL(loop_run(l), 0);
        CU_ASSERT_EQUAL(d->n, 2);
        CU_ASSERT_EQUAL(d->r[0], 0);
        CU_ASSERT_EQUAL(d->r[1], 0);
        cm = committer_free(cm);
        l = loop_free(l);
        store = catalog_close(store);
        t_rmrf(dir);
        free(dir);
}

static void test_later_passes(void)
{
        struct done d;

        run_pair(false, &d);
        printf("\n    seq of the first %" PRIu64 ", of the second %" PRIu64, d.seq[0], d.seq[1]);
        CU_ASSERT(d.seq[1] < d.seq[0]);
        CU_ASSERT_EQUAL(d.order[0], 1);
}

static void test_after_earlier(void)
{
        struct done d;

        run_pair(true, &d);
        printf("\n    seq of the first %" PRIu64 ", of the second %" PRIu64, d.seq[0], d.seq[1]);
        CU_ASSERT(d.seq[1] > d.seq[0]);
        CU_ASSERT_EQUAL(d.order[0], 0);
        CU_ASSERT_EQUAL(d.order[1], 1);
}

int main(void)
{
        static const struct t_case cases[] = {
                { "a later job passes a slow one", test_later_passes },
                { "after_earlier keeps the order", test_after_earlier },
                { NULL, NULL },
        };
        static const struct t_suite suites[] = { { "committer", cases }, { NULL, NULL } };

        return t_run(suites);
}
