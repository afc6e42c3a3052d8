/* test-lease -- the rules of a lease (common/lease/lease.h) with an injected clock:
 * claim / renew / lapse / commit / fence / repeated commit / release / restart, and
 * epochs that strictly increase over many rounds. */
#include "t.h"

#include "lease/lease.h"

#define MS 1000000ull

static struct lease fresh(void)
{
        struct lease l;

        CU_ASSERT_EQUAL_FATAL(lease_init(&l, "view/1000"), 0);
        return l;
}

/* cur := the result of a claim that must succeed. */
static void claim_ok(struct lease *cur, const char *holder, uint32_t ttl, uint64_t now)
{
        struct lease next;
        bool w;

        CU_ASSERT_EQUAL_FATAL(lease_claim(cur, holder, ttl, false, now, &next, &w), LEASE_OK);
        CU_ASSERT_TRUE(w);
        *cur = next;
}

static void test_claim(void)
{
        struct lease l = fresh(), next;
        bool w;

        CU_ASSERT_EQUAL(l.epoch, 0);
        CU_ASSERT_FALSE(lease_live(&l, 0));
        claim_ok(&l, "a", 100, 1000 * MS);
        CU_ASSERT_EQUAL(l.epoch, 1);
        CU_ASSERT_STRING_EQUAL(l.holder, "a");
        CU_ASSERT_TRUE(lease_live(&l, 1099 * MS));
        CU_ASSERT_FALSE(lease_live(&l, 1100 * MS));
        CU_ASSERT_EQUAL(lease_expires_in_ms(&l, 1050 * MS), 50);
        /* Live: another claimer, and the holder itself, are refused; nothing to write. */
        CU_ASSERT_EQUAL(lease_claim(&l, "b", 100, false, 1050 * MS, &next, &w), LEASE_BUSY);
        CU_ASSERT_FALSE(w);
        CU_ASSERT_EQUAL(next.epoch, 1);
        CU_ASSERT_EQUAL(lease_claim(&l, "a", 100, false, 1099 * MS, &next, &w), LEASE_BUSY);
        /* Lapsed: the next claim gets epoch 2. */
        claim_ok(&l, "b", 100, 1100 * MS);
        CU_ASSERT_EQUAL(l.epoch, 2);
        CU_ASSERT_STRING_EQUAL(l.holder, "b");
}

/* lease.c note 4: a holder's supersede takes its own live lease at epoch + 1 and fences the
 * earlier epoch; another holder's supersede is BUSY. */
static void test_supersede(void)
{
        struct lease l = fresh(), next;
        bool w;

        claim_ok(&l, "a", 100, 1000 * MS);
        CU_ASSERT_EQUAL(lease_claim(&l, "b", 100, true, 1010 * MS, &next, &w), LEASE_BUSY);
        CU_ASSERT_FALSE(w);
        CU_ASSERT_EQUAL_FATAL(lease_claim(&l, "a", 100, true, 1020 * MS, &next, &w), LEASE_OK);
        CU_ASSERT_TRUE(w);
        CU_ASSERT_EQUAL(next.epoch, 2);
        CU_ASSERT_EQUAL(next.expires_ns, 1120 * MS);
        l = next;
        CU_ASSERT_EQUAL(lease_renew(&l, "a", 1, 1030 * MS, &next, &w), LEASE_FENCED);
        CU_ASSERT_EQUAL(lease_renew(&l, "a", 2, 1030 * MS, &next, &w), LEASE_OK);
}

static void test_renew(void)
{
        struct lease l = fresh(), next;
        bool w;

        claim_ok(&l, "a", 100, 0);
        CU_ASSERT_EQUAL(lease_renew(&l, "a", 1, 90 * MS, &next, &w), LEASE_OK);
        CU_ASSERT_FALSE(w);                     /* renewals are not written */
        l = next;
        CU_ASSERT_TRUE(lease_live(&l, 189 * MS));
        CU_ASSERT_FALSE(lease_live(&l, 190 * MS));
        CU_ASSERT_EQUAL(lease_renew(&l, "a", 2, 100 * MS, &next, &w), LEASE_FENCED);
        CU_ASSERT_EQUAL(lease_renew(&l, "b", 1, 100 * MS, &next, &w), LEASE_FENCED);
        CU_ASSERT_EQUAL(next.expires_ns, l.expires_ns);
        /* Lapsed: too late to renew, even with no other claimer. */
        CU_ASSERT_EQUAL(lease_renew(&l, "a", 1, 190 * MS, &next, &w), LEASE_FENCED);
}

static void test_commit(void)
{
        struct lease l = fresh(), next;
        bool w, again;

        claim_ok(&l, "a", 100, 0);
        CU_ASSERT_EQUAL(lease_commit(&l, "a", 1, "c1", 1, 10 * MS, &next, &w, &again), LEASE_FENCED);
        CU_ASSERT_FALSE(w);                     /* another version */
        CU_ASSERT_EQUAL(lease_commit(&l, "a", 1, "c1", 0, 10 * MS, &next, &w, &again), LEASE_OK);
        CU_ASSERT_TRUE(w);
        CU_ASSERT_FALSE(again);
        l = next;
        CU_ASSERT_EQUAL(l.version, 1);
        CU_ASSERT_EQUAL(l.last_commit_epoch, 1);
        CU_ASSERT_STRING_EQUAL(l.last_commit_id, "c1");
        CU_ASSERT_FALSE(lease_live(&l, 10 * MS));       /* a commit releases */
        /* The same commit again (the answer was lost): ok, nothing written. */
        CU_ASSERT_EQUAL(lease_commit(&l, "a", 1, "c1", 0, 20 * MS, &next, &w, &again), LEASE_OK);
        CU_ASSERT_FALSE(w);
        CU_ASSERT_TRUE(again);
        CU_ASSERT_EQUAL(next.version, 1);
        /* ... also after another holder claimed, until it commits. */
        claim_ok(&l, "b", 100, 30 * MS);
        CU_ASSERT_EQUAL(lease_commit(&l, "a", 1, "c1", 0, 40 * MS, &next, &w, &again), LEASE_OK);
        CU_ASSERT_TRUE(again);
        /* Another id of the old epoch is fenced. */
        CU_ASSERT_EQUAL(lease_commit(&l, "a", 1, "c2", 1, 40 * MS, &next, &w, &again), LEASE_FENCED);
        CU_ASSERT_FALSE(w);
        CU_ASSERT_EQUAL(lease_commit(&l, "b", 2, "c2", 1, 40 * MS, &next, &w, &again), LEASE_OK);
        l = next;
        CU_ASSERT_EQUAL(l.version, 2);
        CU_ASSERT_EQUAL(lease_commit(&l, "a", 1, "c1", 0, 50 * MS, &next, &w, &again), LEASE_FENCED);
}

/* A holder that stopped renewing: another claims with a higher epoch; the old holder's
 * commit, even with the right version, is fenced and writes nothing. */
static void test_fence(void)
{
        struct lease l = fresh(), next;
        bool w, again;

        claim_ok(&l, "a", 100, 0);
        CU_ASSERT_EQUAL(lease_commit(&l, "a", 1, "x", 0, 100 * MS, &next, &w, &again), LEASE_FENCED);
        CU_ASSERT_FALSE(w);
        claim_ok(&l, "b", 100, 150 * MS);
        CU_ASSERT_EQUAL(lease_commit(&l, "a", 1, "x", 0, 160 * MS, &next, &w, &again), LEASE_FENCED);
        CU_ASSERT_FALSE(w);
        CU_ASSERT_EQUAL(next.version, 0);
        CU_ASSERT_EQUAL(lease_release(&l, "a", 1, 160 * MS, &next, &w), LEASE_FENCED);
        CU_ASSERT_FALSE(w);
        CU_ASSERT_EQUAL(lease_release(&l, "b", 2, 160 * MS, &next, &w), LEASE_OK);
        CU_ASSERT_TRUE(w);
        CU_ASSERT_FALSE(lease_live(&next, 160 * MS));
        CU_ASSERT_EQUAL(next.epoch, 2);
}

/* A restart: a held lease counts from the restart for a full ttl (never shorter), a
 * released one stays released. */
static void test_restart(void)
{
        struct lease l = fresh(), r;
        bool w;

        claim_ok(&l, "a", 100, 5000 * MS);
        r = l;
        lease_restarted(&r, 10 * MS);           /* a new clock, smaller than before */
        CU_ASSERT_TRUE(lease_live(&r, 109 * MS));
        CU_ASSERT_FALSE(lease_live(&r, 110 * MS));
        CU_ASSERT_EQUAL(lease_release(&l, "a", 1, 5001 * MS, &r, &w), LEASE_OK);
        lease_restarted(&r, 10 * MS);
        CU_ASSERT_FALSE(lease_live(&r, 10 * MS));
}

static void test_epochs_increase(void)
{
        struct lease l = fresh(), next;
        uint64_t now = 0, last = 0, version = 0;
        bool w, again;

        for (int i = 0; i < 1000; i++) {
                char h[16];

                snprintf(h, sizeof(h), "h%d", i % 8);
                claim_ok(&l, h, 10, now);
                CU_ASSERT_EQUAL(l.epoch, last + 1);
                last = l.epoch;
                if (i % 3 == 0) {
                        CU_ASSERT_EQUAL(lease_commit(&l, h, l.epoch, h, version, now, &next, &w,
                                                     &again), LEASE_OK);
                        l = next;
                        version++;
                        CU_ASSERT_EQUAL(l.version, version);
                } else if (i % 3 == 1) {
                        now += 10 * MS;         /* lapses */
                } else {
                        CU_ASSERT_EQUAL(lease_release(&l, h, l.epoch, now, &next, &w), LEASE_OK);
                        l = next;
                }
        }
}

static void test_args(void)
{
        struct lease l;
        char big[LEASE_KEY_MAX + 2];

        memset(big, 'k', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        CU_ASSERT_EQUAL(lease_init(&l, ""), -EINVAL);
        CU_ASSERT_EQUAL(lease_init(&l, big), -EINVAL);
        big[LEASE_KEY_MAX] = '\0';
        CU_ASSERT_EQUAL(lease_init(&l, big), 0);
        CU_ASSERT_EQUAL(lease_check_args("a", NULL, 1), 0);
        CU_ASSERT_EQUAL(lease_check_args("", NULL, 1), -EINVAL);
        CU_ASSERT_EQUAL(lease_check_args("a", NULL, 0), -EINVAL);
        CU_ASSERT_EQUAL(lease_check_args("a", NULL, LEASE_TTL_MAX_MS + 1), -EINVAL);
        CU_ASSERT_EQUAL(lease_check_args("a", "", UINT32_MAX), -EINVAL);
        CU_ASSERT_EQUAL(lease_check_args("a", "c", UINT32_MAX), 0);
        CU_ASSERT_EQUAL(lease_check_args("a b", NULL, 1), -EINVAL);         /* a space */
        CU_ASSERT_EQUAL(lease_check_args("a", "c\n", UINT32_MAX), -EINVAL);
        CU_ASSERT_EQUAL(lease_init(&l, "v\xc3\xa9"), -EINVAL);             /* not ASCII */
}

int main(int argc, char **argv)
{
        static const struct t_case rules[] = {
                { "claim", test_claim },
                { "supersede", test_supersede },
                { "renew", test_renew },
                { "commit", test_commit },
                { "fence", test_fence },
                { "restart", test_restart },
                { "epochs_increase", test_epochs_increase },
                { "args", test_args },
                { NULL, NULL },
        };
        static const struct t_suite suites[] = { { "lease", rules }, { NULL, NULL } };

        return t_run(suites);
}
