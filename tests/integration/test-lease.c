/* test-lease -- leases in the catalog (issue 33, docs/lifecycle.md "Leases") on the
 * three real daemons started with tools/coord.
 *
 *   race        8 claimers, each with connections of its own, race for one key over
 *               50 rounds: exactly one wins each round (the others are BUSY and name
 *               it), the winners' epochs are 1, 2, ... 50, and each winner's commit
 *               advances the version by exactly one.
 *   lapse       a holder that stops renewing past its ttl is FENCED (renew and
 *               commit), another claims with a higher epoch, and the old holder's
 *               commit writes nothing (the version stays); coordctl's exit codes.
 *   kill_commit the adapter is killed (killpoint lease.write.after_commit) after a
 *               commit is durable and before its answer: the retried commit with the
 *               same id succeeds (retried=1), the version advanced exactly once.  The
 *               follower is down meanwhile: its duty claims cross the point too.
 *   restart     a held lease survives kill -9 of the adapter, as every other lease
 *               record (coord_leases the same before and after): it shows it
 *               live, another claimer is BUSY, its holder renews and releases it, and
 *               the next claim gets the next epoch.
 *   off_loop    the adapter started with --test-lease-commit-delay-ms 1000: while a
 *               claim's write waits on its committer thread, SELECT 1 and a claim of a
 *               held key (BUSY, nothing to write) are answered at once, and a second
 *               claim of the key being written waits for it and is BUSY, naming the
 *               first (adapter-lease.c note 4).
 *   bad_input   malformed requests (22023: a ttl of 0, an empty key, a space in a key,
 *               an empty commit id), coord_leases refused in a view (0A000).
 *   check       coordctl check matches with lease records in the log.
 */
#include <pthread.h>

#include "itest.h"
#include "itest-spawn.h"

#define N_CLAIMERS 8
#define N_ROUNDS   50

/* One request to the adapter; the LeaseReply in *ret (status >= 0), or -1 for no
 * answer / an error answer (its SQLSTATE in sqlstate when given). */
static int lease_call(Coord__MsgType type, const ProtobufCMessage *msg, Coord__LeaseReply **ret,
                      char *sqlstate)
{
        Coord__Envelope *env = NULL;
        int r;

        *ret = NULL;
        r = node_ctl_call(run_dir, COORD__ROLE__ROLE_ADAPTER, type, msg, 5000, &env);
        if (r < 0)
                return -1;
        if (env->type == COORD__MSG_TYPE__MSG_LEASE_REPLY)
                *ret = coord__lease_reply__unpack(NULL, env->payload.len, env->payload.data);
        else if (env->type == COORD__MSG_TYPE__MSG_ERROR && sqlstate) {
                Coord__Error *e = coord__error__unpack(NULL, env->payload.len, env->payload.data);
                if (e) {
                        snprintf(sqlstate, 6, "%s", e->sqlstate);
                        coord__error__free_unpacked(e, NULL);
                }
        }
        coord__envelope__free_unpacked(env, NULL);
        return *ret ? (int)(*ret)->status : -1;
}

static int claim(const char *key, const char *holder, uint32_t ttl_ms, Coord__LeaseReply **ret)
{
        Coord__LeaseClaim m = COORD__LEASE_CLAIM__INIT;

        m.key = (char *)key;
        m.holder = (char *)holder;
        m.ttl_ms = ttl_ms;
        return lease_call(COORD__MSG_TYPE__MSG_LEASE_CLAIM, &m.base, ret, NULL);
}

static int renew(const char *key, const char *holder, uint64_t epoch, Coord__LeaseReply **ret)
{
        Coord__LeaseRenew m = COORD__LEASE_RENEW__INIT;

        m.key = (char *)key;
        m.holder = (char *)holder;
        m.epoch = epoch;
        return lease_call(COORD__MSG_TYPE__MSG_LEASE_RENEW, &m.base, ret, NULL);
}

static int commit(const char *key, const char *holder, uint64_t epoch, const char *id,
                  uint64_t version, Coord__LeaseReply **ret)
{
        Coord__LeaseCommit m = COORD__LEASE_COMMIT__INIT;

        m.key = (char *)key;
        m.holder = (char *)holder;
        m.epoch = epoch;
        m.commit_id = (char *)id;
        m.version = version;
        return lease_call(COORD__MSG_TYPE__MSG_LEASE_COMMIT, &m.base, ret, NULL);
}

static int release(const char *key, const char *holder, uint64_t epoch, Coord__LeaseReply **ret)
{
        Coord__LeaseRelease m = COORD__LEASE_RELEASE__INIT;

        m.key = (char *)key;
        m.holder = (char *)holder;
        m.epoch = epoch;
        return lease_call(COORD__MSG_TYPE__MSG_LEASE_RELEASE, &m.base, ret, NULL);
}

static void reply_free(Coord__LeaseReply **r)
{
        if (*r)
                coord__lease_reply__free_unpacked(*r, NULL);
        *r = NULL;
}

static void test_up(void)
{
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

/* ---- race ---- */

struct round_result {
        int status;                     /* the claim's */
        uint64_t epoch, version;        /* the claim's reply */
        char holder[32];                /* BUSY: who holds it */
        int commit_status;              /* the winner's commit, -2 if none */
        uint64_t commit_version;
};

static struct round_result results[N_ROUNDS][N_CLAIMERS];
static pthread_barrier_t race_barrier;

static void *claimer_main(void *arg)
{
        int id = (int)(intptr_t)arg;
        char holder[32], cid[32];

        snprintf(holder, sizeof(holder), "claimer-%d", id);
        for (int round = 0; round < N_ROUNDS; round++) {
                struct round_result *res = &results[round][id];
                Coord__LeaseReply *rep = NULL;

                pthread_barrier_wait(&race_barrier);
                res->status = claim("race", holder, 30000, &rep);
                res->commit_status = -2;
                if (rep) {
                        res->epoch = rep->epoch;
                        res->version = rep->version;
                        snprintf(res->holder, sizeof(res->holder), "%s", rep->holder);
                }
                reply_free(&rep);
                /* Everybody has claimed before the winner commits (which releases). */
                pthread_barrier_wait(&race_barrier);
                if (res->status == COORD__LEASE_REPLY__STATUS__OK) {
                        snprintf(cid, sizeof(cid), "round-%d", round);
                        res->commit_status = commit("race", holder, res->epoch, cid, res->version, &rep);
                        res->commit_version = rep ? rep->version : 0;
                        reply_free(&rep);
                }
        }
        return NULL;
}

static void test_race(void)
{
        pthread_t th[N_CLAIMERS];
        uint64_t last_epoch = 0, last_version = 0;

        CU_ASSERT_FATAL(pthread_barrier_init(&race_barrier, NULL, N_CLAIMERS) == 0);
        for (int i = 0; i < N_CLAIMERS; i++)
                CU_ASSERT_FATAL(pthread_create(&th[i], NULL, claimer_main, (void *)(intptr_t)i) == 0);
        for (int i = 0; i < N_CLAIMERS; i++)
                pthread_join(th[i], NULL);
        pthread_barrier_destroy(&race_barrier);
        for (int round = 0; round < N_ROUNDS; round++) {
                int winners = 0, busy = 0, w = -1;

                for (int i = 0; i < N_CLAIMERS; i++) {
                        if (results[round][i].status == COORD__LEASE_REPLY__STATUS__OK) {
                                winners++;
                                w = i;
                        } else if (results[round][i].status == COORD__LEASE_REPLY__STATUS__BUSY)
                                busy++;
                }
                CU_ASSERT_EQUAL(winners, 1);
                CU_ASSERT_EQUAL(busy, N_CLAIMERS - 1);
                if (winners != 1) {
                        fprintf(stderr, "round %d: %d winners\n", round, winners);
                        continue;
                }
                /* Epochs strictly increase: each round's winner gets the next one. */
                CU_ASSERT(results[round][w].epoch > last_epoch);
                CU_ASSERT_EQUAL(results[round][w].epoch, last_epoch + 1);
                last_epoch = results[round][w].epoch;
                /* The losers were told who won, and at which epoch. */
                for (int i = 0; i < N_CLAIMERS; i++) {
                        char h[32];

                        if (i == w)
                                continue;
                        snprintf(h, sizeof(h), "claimer-%d", w);
                        CU_ASSERT_STRING_EQUAL(results[round][i].holder, h);
                        CU_ASSERT_EQUAL(results[round][i].epoch, last_epoch);
                }
                /* Versions advance by exactly one per round. */
                CU_ASSERT_EQUAL(results[round][w].version, last_version);
                CU_ASSERT_EQUAL(results[round][w].commit_status, COORD__LEASE_REPLY__STATUS__OK);
                CU_ASSERT_EQUAL(results[round][w].commit_version, last_version + 1);
                last_version = results[round][w].commit_version;
        }
        CU_ASSERT_EQUAL(last_epoch, N_ROUNDS);
        CU_ASSERT_EQUAL(last_version, N_ROUNDS);
}

/* ---- lapse ---- */

static void test_lapse(void)
{
        Coord__LeaseReply *rep = NULL;
        uint64_t e1, e2;
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_EQUAL_FATAL(claim("lapse", "old", 300, &rep), COORD__LEASE_REPLY__STATUS__OK);
        e1 = rep->epoch;
        CU_ASSERT(rep->expires_in_ms > 0 && rep->expires_in_ms <= 300);
        reply_free(&rep);
        CU_ASSERT_EQUAL(renew("lapse", "old", e1, &rep), COORD__LEASE_REPLY__STATUS__OK);
        reply_free(&rep);
        CU_ASSERT_EQUAL(claim("lapse", "new", 60000, &rep), COORD__LEASE_REPLY__STATUS__BUSY);
        reply_free(&rep);
        sleep_ms(450);                  /* "old" stops renewing past its ttl */
        CU_ASSERT_EQUAL(renew("lapse", "old", e1, &rep), COORD__LEASE_REPLY__STATUS__FENCED);
        reply_free(&rep);
        CU_ASSERT_EQUAL_FATAL(claim("lapse", "new", 60000, &rep), COORD__LEASE_REPLY__STATUS__OK);
        e2 = rep->epoch;
        CU_ASSERT(e2 > e1);
        reply_free(&rep);
        /* The old holder's commit: fenced, nothing written. */
        CU_ASSERT_EQUAL(commit("lapse", "old", e1, "old-work", 0, &rep), COORD__LEASE_REPLY__STATUS__FENCED);
        CU_ASSERT(rep && rep->version == 0 && rep->epoch == e2);
        reply_free(&rep);
        CU_ASSERT(rows_are(c, "SELECT holder, epoch - 1, version, live FROM coord_leases WHERE key = 'lapse'",
                           "new|1|0|t"));
        CU_ASSERT(log_has(COORD__ROLE__ROLE_ADAPTER, "event=lease_fenced op=commit key=lapse holder=old"));
        /* coordctl: exit 2 when fenced, 3 when busy, 0 when ok. */
        CU_ASSERT_EQUAL(t_sh("%s/tools/coordctl --run-dir %s lease commit lapse old %" PRIu64
                             " old-work 0 | grep -q '^status=fenced key=lapse holder=new'",
                             build_dir, run_dir, e1), 0);
        CU_ASSERT_EQUAL(t_sh("%s/tools/coordctl --run-dir %s lease commit lapse old %" PRIu64
                             " old-work 0 >/dev/null", build_dir, run_dir, e1), 2);
        CU_ASSERT_EQUAL(t_sh("%s/tools/coordctl --run-dir %s lease claim lapse other 100 >/dev/null",
                             build_dir, run_dir), 3);
        CU_ASSERT_EQUAL(t_sh("%s/tools/coordctl --run-dir %s lease commit lapse new %" PRIu64
                             " new-work 0 | grep -q '^status=ok key=lapse holder=- epoch=%" PRIu64
                             " version=1 '", build_dir, run_dir, e2, e2), 0);
        CU_ASSERT(rows_are(c, "SELECT holder, version, live FROM coord_leases WHERE key = 'lapse'",
                           "NULL|1|f"));
        PQfinish(c);
}

/* ---- kill_commit ---- */

static void test_kill_commit(void)
{
        const char *envs[] = { "COORD_KILLPOINT=lease.write.after_commit:2", NULL };
        Coord__LeaseReply *rep = NULL;
        uint64_t epoch;
        int status = 0;
        pid_t pid;
        PGconn *c;

        /* The follower down meanwhile: its duty claim crosses the same point, and it
         * claims as soon as it reconnects when a renew failed or went unanswered over
         * the adapter's restart -- before this claim (which the kill then answers) or
         * between it and the commit (killed there, the commit is first written by the
         * retry, not retried).  `up` below starts it again. */
        CU_ASSERT_FATAL(stop_role(COORD__ROLE__ROLE_LIFECYCLE));
        CU_ASSERT_FATAL(stop_role(COORD__ROLE__ROLE_ADAPTER));
        pid = spawn_role(COORD__ROLE__ROLE_ADAPTER, envs);
        CU_ASSERT_FATAL(pid > 0);
        CU_ASSERT_FATAL(spawn_wait_serving(COORD__ROLE__ROLE_ADAPTER, pid, 20000, &status) > 0);
        /* The claim crosses the point once; the commit's crossing kills. */
        CU_ASSERT_EQUAL_FATAL(claim("crash", "h", 60000, &rep), COORD__LEASE_REPLY__STATUS__OK);
        epoch = rep->epoch;
        reply_free(&rep);
        CU_ASSERT_EQUAL(commit("crash", "h", epoch, "the-commit", 0, &rep), -1);
        reply_free(&rep);
        CU_ASSERT_FATAL(spawn_wait_exit(pid, 10000, &status));
        CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        CU_ASSERT(log_has(COORD__ROLE__ROLE_ADAPTER, "event=killpoint name=lease.write.after_commit"));
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
        /* The retry: the same success, nothing written again. */
        CU_ASSERT_EQUAL(commit("crash", "h", epoch, "the-commit", 0, &rep), COORD__LEASE_REPLY__STATUS__OK);
        CU_ASSERT(rep && rep->retried && rep->version == 1);
        reply_free(&rep);
        CU_ASSERT_EQUAL(commit("crash", "h", epoch, "the-commit", 0, &rep), COORD__LEASE_REPLY__STATUS__OK);
        CU_ASSERT(rep && rep->retried && rep->version == 1);
        reply_free(&rep);
        /* Another commit of that epoch: the lease was released by the first. */
        CU_ASSERT_EQUAL(commit("crash", "h", epoch, "another", 1, &rep), COORD__LEASE_REPLY__STATUS__FENCED);
        reply_free(&rep);
        c = db();
        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT(rows_are(c, "SELECT key, holder, epoch, version, live FROM coord_leases WHERE key = 'crash'",
                           "crash|NULL|1|1|f"));
        PQfinish(c);
}

/* ---- restart ---- */

static void test_restart(void)
{
        static const char *records = "SELECT key, holder, epoch, version FROM coord_leases "
                                     "WHERE key <> 'lifecycle/duty'";
        Coord__LeaseReply *rep = NULL;
        uint64_t epoch, e2;
        PGconn *c = db();
        char *before;

        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_EQUAL_FATAL(claim("durable", "keeper", 60000, &rep), COORD__LEASE_REPLY__STATUS__OK);
        epoch = rep->epoch;
        reply_free(&rep);
        /* and one released: its record stays too */
        CU_ASSERT_EQUAL_FATAL(claim("durable_gone", "keeper", 60000, &rep), COORD__LEASE_REPLY__STATUS__OK);
        e2 = rep->epoch;
        reply_free(&rep);
        CU_ASSERT_EQUAL_FATAL(release("durable_gone", "keeper", e2, &rep), COORD__LEASE_REPLY__STATUS__OK);
        reply_free(&rep);
        /* every record, those of the cases before too (crash, lapse, race in order) */
        before = rows_of(c, records);
        CU_ASSERT_PTR_NOT_NULL_FATAL(before);
        CU_ASSERT_PTR_NOT_NULL(strstr(before, "durable_gone|NULL|1|"));
        kill9_restart(COORD__ROLE__ROLE_ADAPTER, &c);
        CU_ASSERT(rows_are(c, records, before));
        free(before);
        CU_ASSERT(rows_are(c, "SELECT key, holder, epoch, version, live, expires_in_ms > 50000 "
                              "FROM coord_leases WHERE key = 'durable'", "durable|keeper|1|0|t|t"));
        CU_ASSERT_EQUAL(claim("durable", "intruder", 1000, &rep), COORD__LEASE_REPLY__STATUS__BUSY);
        CU_ASSERT(rep && strcmp(rep->holder, "keeper") == 0 && rep->epoch == epoch);
        reply_free(&rep);
        CU_ASSERT_EQUAL(renew("durable", "keeper", epoch, &rep), COORD__LEASE_REPLY__STATUS__OK);
        reply_free(&rep);
        CU_ASSERT_EQUAL(release("durable", "keeper", epoch, &rep), COORD__LEASE_REPLY__STATUS__OK);
        reply_free(&rep);
        CU_ASSERT_EQUAL(release("durable", "keeper", epoch, &rep), COORD__LEASE_REPLY__STATUS__FENCED);
        reply_free(&rep);
        CU_ASSERT_EQUAL(claim("durable", "intruder", 1000, &rep), COORD__LEASE_REPLY__STATUS__OK);
        CU_ASSERT(rep && rep->epoch == epoch + 1);
        reply_free(&rep);
        PQfinish(c);
}

/* ---- off_loop ---- */

struct timed_claim {
        const char *key, *holder;
        int status;
        uint64_t ms;
        char busy_holder[32];
};

static void *timed_claim_main(void *arg)
{
        struct timed_claim *c = arg;
        Coord__LeaseReply *rep = NULL;
        uint64_t t0 = now_ms();

        c->status = claim(c->key, c->holder, 60000, &rep);
        c->ms = now_ms() - t0;
        if (rep && rep->holder)
                snprintf(c->busy_holder, sizeof(c->busy_holder), "%s", rep->holder);
        reply_free(&rep);
        return NULL;
}

static void test_off_loop(void)
{
        struct timed_claim first = { .key = "slow", .holder = "first" }, second = { .key = "slow", .holder = "second" };
        Coord__LeaseReply *rep = NULL;
        pthread_t a, b;
        PGconn *c;
        uint64_t t0, select_ms, busy_ms;

        CU_ASSERT_FATAL(stop_role(COORD__ROLE__ROLE_ADAPTER));
        CU_ASSERT_EQUAL_FATAL(t_sh("COORD_ADAPTER_ARGS='--test-lease-commit-delay-ms 1000' %s up >/dev/null",
                                   coord_cmd), 0);
        c = db();
        CU_ASSERT_FATAL(c != NULL);
        CU_ASSERT_EQUAL_FATAL(claim("held", "owner", 60000, &rep), COORD__LEASE_REPLY__STATUS__OK);
        reply_free(&rep);
        CU_ASSERT_FATAL(pthread_create(&a, NULL, timed_claim_main, &first) == 0);
        /* Its write is in flight. */
        CU_ASSERT_FATAL(t_wait_for(stat_of(COORD__ROLE__ROLE_ADAPTER, "lease_writes") >= 1, 5000));
        CU_ASSERT_FATAL(pthread_create(&b, NULL, timed_claim_main, &second) == 0);
        t0 = now_ms();
        CU_ASSERT(ok(c, "SELECT 1"));
        select_ms = now_ms() - t0;
        t0 = now_ms();
        CU_ASSERT_EQUAL(claim("held", "intruder", 1000, &rep), COORD__LEASE_REPLY__STATUS__BUSY);
        busy_ms = now_ms() - t0;
        reply_free(&rep);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        printf("\n    a claim written in %" PRIu64 " ms; meanwhile SELECT 1 %" PRIu64 " ms, a BUSY claim %" PRIu64
               " ms; the same key's second claim %" PRIu64 " ms", first.ms, select_ms, busy_ms, second.ms);
        CU_ASSERT_EQUAL(first.status, COORD__LEASE_REPLY__STATUS__OK);
        CU_ASSERT(first.ms >= 1000);
        CU_ASSERT(select_ms < 500);
        CU_ASSERT(busy_ms < 500);
        CU_ASSERT_EQUAL(second.status, COORD__LEASE_REPLY__STATUS__BUSY);
        CU_ASSERT_STRING_EQUAL(second.busy_holder, "first");
        CU_ASSERT(second.ms >= 600);    /* it waited for the first's write */
        PQfinish(c);
        CU_ASSERT_FATAL(stop_role(COORD__ROLE__ROLE_ADAPTER));
        CU_ASSERT_EQUAL_FATAL(t_sh("%s up >/dev/null", coord_cmd), 0);
}

/* ---- bad_input ---- */

static void test_bad_input(void)
{
        Coord__LeaseClaim m = COORD__LEASE_CLAIM__INIT;
        Coord__LeaseReply *rep = NULL;
        char state[8] = "";
        PGconn *c = db();

        CU_ASSERT_FATAL(c != NULL);
        m.key = (char *)"k";
        m.holder = (char *)"h";
        m.ttl_ms = 0;
        CU_ASSERT_EQUAL(lease_call(COORD__MSG_TYPE__MSG_LEASE_CLAIM, &m.base, &rep, state), -1);
        CU_ASSERT_STRING_EQUAL(state, "22023");
        m.ttl_ms = 100;
        m.key = (char *)"";
        state[0] = '\0';
        CU_ASSERT_EQUAL(lease_call(COORD__MSG_TYPE__MSG_LEASE_CLAIM, &m.base, &rep, state), -1);
        CU_ASSERT_STRING_EQUAL(state, "22023");
        m.key = (char *)"two words";
        state[0] = '\0';
        CU_ASSERT_EQUAL(lease_call(COORD__MSG_TYPE__MSG_LEASE_CLAIM, &m.base, &rep, state), -1);
        CU_ASSERT_STRING_EQUAL(state, "22023");
        CU_ASSERT_EQUAL(t_sh("%s/tools/coordctl --run-dir %s lease commit k h 1 '' 0 "
                             "| grep -q 'status=error sqlstate=22023'", build_dir, run_dir), 0);
        CU_ASSERT_EQUAL(t_sh("%s/tools/coordctl --run-dir %s lease claim k h >/dev/null 2>&1",
                             build_dir, run_dir), 64);
        CU_ASSERT(rows_are(c, "SELECT count(*) FROM coord_leases WHERE key = 'k'", "0"));
        CU_ASSERT(fails_with(c, "CREATE VIEW lv AS SELECT * FROM coord_leases", "0A000"));
        CU_ASSERT(fails_with(c, "CREATE MATERIALIZED VIEW lmv AS SELECT * FROM coord_leases", "0A000"));
        PQfinish(c);
}

static void test_check(void)
{
        itest_check();
}

int main(void)
{
        static const struct t_case cases[] = {
                { "up", test_up },
                { "race", test_race },
                { "lapse", test_lapse },
                { "kill_commit", test_kill_commit },
                { "restart", test_restart },
                { "off_loop", test_off_loop },
                { "bad_input", test_bad_input },
                { "check", test_check },
                { NULL, NULL },
        };

        spawn_set_prefix("ls");
        return itest_main_only("lease", "ls", cases, "LEASE_ONLY");
}
