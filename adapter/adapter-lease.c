/* adapter-lease.c -- leases in the catalog, served by the adapter (issue 33).  See
 * adapter-lease.h; the rules are common/lease/lease.c.
 *
 * NOTES ON THE DESIGN
 * (1) One owner, one clock.  The table lives on the adapter's loop thread, where every
 *     request is decided (lease_request()); a request on a key whose write is in
 *     flight waits for it (note 4), so a claim's "no live lease exists" and its write
 *     are one atomic step: no other request on the key is decided between them.  Expiry
 *     is the adapter's CLOCK_MONOTONIC (now_ns()) only; a holder's clock never counts.
 * (2) Durable before answered.  A request whose rule says write (claim, commit,
 *     release) commits the new record -- fsynced in the catalog's group commit -- and
 *     only then replaces the table's record and answers (lease_write(),
 *     lease_written()).  A failed commit answers 58030 and changes nothing.  So an epoch
 *     or a version a peer has seen is in the catalog, and a restart cannot hand it out
 *     again.  Renewals write nothing: the expiry is not stored (note 3).
 * (3) Restart.  lease_table_new() reads every record; a held lease counts as live for
 *     its full ttl from the adapter's start (lease_restarted()).  A lease's expiry
 *     before the restart was at most ttl after its last claim or renewal, which came
 *     before the restart: so the restart never shortens a lease, it may lengthen it by
 *     up to one ttl.
 * (4) The write off the loop.  A decision that writes is committed by a committer
 *     thread of the table's own (adapter-commit.h), so the loop does not wait for the
 *     fsync; the decision takes effect -- the table's record replaced, the answer sent --
 *     in lease_written(), on the loop, once it is durable (note 2 holds).  Meanwhile the
 *     key has a write in flight (struct lease_write) and every later request on that
 *     key waits behind it, in arrival order, and is decided against the record it
 *     leaves: so note 1's atomic claim still holds per key.  lease_table_fence_ok() says
 *     no for a key with a write in flight (a claim may be replacing its epoch).
 */
#include "adapter-lease.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter-commit.h"
#include "catalog/catalog.h"
#include "catalog.pb-c.h"
#include "killpoint.h"
#include "lease/lease.h"
#include "log.h"
#include "node/node.h"
#include "probes.h"
#include "util.h"

struct lease_req {
        int type;
        const char *key, *holder, *commit_id;
        uint64_t epoch, version;
        uint32_t ttl_ms;
        bool supersede;                 /* claim: lease.c note 4 */
};

/* A request that came while its key had a write in flight (note 4): a copy. */
struct lease_wait {
        struct lease_wait *next;
        node_peer_t from;
        uint64_t ctl_id, request_id;
        int type;
        size_t len;
        uint8_t payload[];
};

/* A decision being made durable (note 4). */
struct lease_write {
        struct lease_write *next;
        struct lease_table *t;
        ProtobufCMessage *msg;          /* q's strings point into it */
        struct lease_req q;
        struct lease cur, next_lease;
        enum lease_status st;
        bool found, retried;
        node_peer_t from;
        uint64_t ctl_id, request_id;
        struct lease_wait *waiters, **tail;
};

struct lease_table {
        struct node *node;
        struct catalog *store;
        struct committer *cm;           /* note 4; NULL: writes on the loop */
        struct lease *leases;           /* sorted by key (bytewise, as the catalog) */
        size_t n, cap, inserts;         /* inserts: writes in flight of new keys */
        struct lease_write *writes;     /* in flight */
        uint32_t test_delay_ms;
        uint64_t claims, busy, fenced, commits, retried, releases, renewals, errors;
};

bool lease_table_handles(int type)
{
        return type >= COORD__MSG_TYPE__MSG_LEASE_CLAIM && type <= COORD__MSG_TYPE__MSG_LEASE_RELEASE;
}

/* The index of key, or where it would go (*found false). */
static size_t lease_find(const struct lease_table *t, const char *key, bool *found)
{
        size_t lo = 0, hi = t->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(t->leases[mid].key, key);

                if (c == 0) {
                        *found = true;
                        return mid;
                }
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *found = false;
        return lo;
}

/* Room for one more record besides the inserts in flight, so that an insert after a
 * durable write cannot fail. */
static int lease_reserve(struct lease_table *t)
{
        if (t->n + t->inserts >= t->cap) {
                size_t cap = t->cap ? 2 * t->cap : 16;
                struct lease *p = realloc(t->leases, cap * sizeof(*p));

                if (!p)
                        return -ENOMEM;
                t->leases = p;
                t->cap = cap;
        }
        return 0;
}

static int lease_insert(struct lease_table *t, size_t at, const struct lease *l)
{
        int r = lease_reserve(t);

        if (r < 0)
                return r;
        memmove(&t->leases[at + 1], &t->leases[at], (t->n - at) * sizeof(*l));
        t->leases[at] = *l;
        t->n++;
        return 0;
}

static int lease_load_one(const void *key, size_t key_len, const void *value, size_t value_len,
                          void *userdata)
{
        struct lease_table *t = userdata;
        Coord__CatalogLease *m = coord__catalog_lease__unpack(NULL, value_len, value);
        struct lease l;
        int r = -EBADMSG;

        if (!m)
                return -EBADMSG;
        if (key_len != 1 + strlen(m->key) || memcmp((const char *)key + 1, m->key, key_len - 1) != 0 ||
            lease_init(&l, m->key) < 0 || strlen(m->holder) > LEASE_HOLDER_MAX ||
            strlen(m->last_commit_id) > LEASE_COMMIT_ID_MAX)
                goto out;
        strcpy(l.holder, m->holder);
        strcpy(l.last_commit_id, m->last_commit_id);
        l.epoch = m->epoch;
        l.version = m->version;
        l.ttl_ms = m->ttl_ms;
        l.last_commit_epoch = m->last_commit_epoch;
        lease_restarted(&l, now_ns());          /* note 3 */
        r = lease_insert(t, t->n, &l);          /* the scan is in key order */
out:
        coord__catalog_lease__free_unpacked(m, NULL);
        return r;
}

int lease_table_new(struct node *n, struct catalog *store, struct lease_table **ret)
{
        struct lease_table *t = calloc(1, sizeof(*t));
        const char prefix = CATALOG_STATE_LEASE;
        size_t held = 0;
        int r;

        if (!t)
                return -ENOMEM;
        t->node = n;
        t->store = store;
        r = catalog_scan(store, CATALOG_CF_STATE, &prefix, 1, lease_load_one, t);
        if (r >= 0 && n)
                r = committer_new(node_loop(n), store, 1, &t->cm);     /* note 4 */
        if (r < 0) {
                lease_table_free(t);
                return r;
        }
        for (size_t i = 0; i < t->n; i++)
                held += t->leases[i].holder[0] != '\0';
        log_info("leases_loaded", "leases=%zu held=%zu", t->n, held);
        *ret = t;
        return 0;
}

void lease_table_set_test_delay(struct lease_table *t, uint32_t ms)
{
        t->test_delay_ms = ms;
}

static void lease_write_free(struct lease_write *w)
{
        while (w->waiters) {
                struct lease_wait *x = w->waiters;

                w->waiters = x->next;
                free(x);
        }
        if (w->msg)
                protobuf_c_message_free_unpacked(w->msg, NULL);
        free(w);
}

struct lease_table *lease_table_free(struct lease_table *t)
{
        if (t) {
                t->cm = committer_free(t->cm);  /* waits; its callbacks do not run */
                while (t->writes) {
                        struct lease_write *w = t->writes;

                        t->writes = w->next;
                        lease_write_free(w);
                }
                free(t->leases);
                free(t);
        }
        return NULL;
}

/* The catalog record of l: key into key (1 + LEASE_KEY_MAX bytes), the value
 * allocated into *ret_val. */
static int lease_record_op(const struct lease *l, uint8_t *key, uint8_t **ret_val, struct catalog_op *op)
{
        Coord__CatalogLease m = COORD__CATALOG_LEASE__INIT;
        size_t klen = strlen(l->key), vlen;
        uint8_t *val;

        m.key = (char *)l->key;
        m.holder = (char *)l->holder;
        m.epoch = l->epoch;
        m.version = l->version;
        m.ttl_ms = l->ttl_ms;
        m.last_commit_id = (char *)l->last_commit_id;
        m.last_commit_epoch = l->last_commit_epoch;
        vlen = coord__catalog_lease__get_packed_size(&m);
        val = malloc(vlen ? vlen : 1);
        if (!val)
                return -ENOMEM;
        coord__catalog_lease__pack(&m, val);
        key[0] = CATALOG_STATE_LEASE;
        memcpy(key + 1, l->key, klen);
        *op = (struct catalog_op){ .kind = CATALOG_OP_PUT, .cf = CATALOG_CF_STATE,
                                   .key = key, .key_len = 1 + klen, .value = val, .value_len = vlen };
        *ret_val = val;
        return 0;
}

/* next, durable, replaces the table's record of its key (or is inserted: room was
 * reserved, lease_reserve()). */
static void lease_take(struct lease_table *t, const struct lease *next)
{
        bool found;
        size_t at = lease_find(t, next->key, &found);

        if (found)
                t->leases[at] = *next;
        else
                (void)lease_insert(t, at, next);        /* reserved: cannot fail */
}

static void lease_reply(struct lease_table *t, node_peer_t from, uint64_t ctl_id,
                        uint64_t request_id, int type, const ProtobufCMessage *msg)
{
        int r;

        if (from == COORD__ROLE__ROLE_CTL)
                r = node_ctl_send(t->node, ctl_id, type, request_id, msg);
        else
                r = node_send(t->node, from, type, request_id, msg);
        if (r < 0)
                log_debug("lease_reply_lost", "role=%s error=%d", node_role_name(node_peer_role(from)), r);
}

static void lease_error(struct lease_table *t, node_peer_t from, uint64_t ctl_id,
                        uint64_t request_id, const char *sqlstate, const char *message)
{
        Coord__Error e = COORD__ERROR__INIT;

        e.sqlstate = (char *)sqlstate;
        e.message = (char *)message;
        lease_reply(t, from, ctl_id, request_id, COORD__MSG_TYPE__MSG_ERROR, &e.base);
}

/* The request's fields, or -EINVAL (also for a payload that does not decode). */
static int lease_req_parse(const Coord__Envelope *env, ProtobufCMessage **ret_msg,
                           struct lease_req *q)
{
        const uint8_t *p = env->payload.data;
        size_t len = env->payload.len;

        *q = (struct lease_req){ .type = (int)env->type, .ttl_ms = UINT32_MAX };
        switch (env->type) {
        case COORD__MSG_TYPE__MSG_LEASE_CLAIM: {
                Coord__LeaseClaim *m = coord__lease_claim__unpack(NULL, len, p);
                if (!m)
                        return -EINVAL;
                *ret_msg = &m->base;
                *q = (struct lease_req){ .type = q->type, .key = m->key, .holder = m->holder,
                                         .ttl_ms = m->ttl_ms, .supersede = m->supersede };
                return lease_check_args(q->holder, NULL, q->ttl_ms);
        }
        case COORD__MSG_TYPE__MSG_LEASE_RENEW: {
                Coord__LeaseRenew *m = coord__lease_renew__unpack(NULL, len, p);
                if (!m)
                        return -EINVAL;
                *ret_msg = &m->base;
                *q = (struct lease_req){ .type = q->type, .key = m->key, .holder = m->holder,
                                         .epoch = m->epoch, .ttl_ms = UINT32_MAX };
                break;
        }
        case COORD__MSG_TYPE__MSG_LEASE_COMMIT: {
                Coord__LeaseCommit *m = coord__lease_commit__unpack(NULL, len, p);
                if (!m)
                        return -EINVAL;
                *ret_msg = &m->base;
                *q = (struct lease_req){ .type = q->type, .key = m->key, .holder = m->holder,
                                         .epoch = m->epoch, .commit_id = m->commit_id,
                                         .version = m->version, .ttl_ms = UINT32_MAX };
                return lease_check_args(q->holder, q->commit_id, UINT32_MAX);
        }
        case COORD__MSG_TYPE__MSG_LEASE_RELEASE: {
                Coord__LeaseRelease *m = coord__lease_release__unpack(NULL, len, p);
                if (!m)
                        return -EINVAL;
                *ret_msg = &m->base;
                *q = (struct lease_req){ .type = q->type, .key = m->key, .holder = m->holder,
                                         .epoch = m->epoch, .ttl_ms = UINT32_MAX };
                break;
        }
        default:
                return -EINVAL;
        }
        return lease_check_args(q->holder, NULL, UINT32_MAX);
}

/* Apply the rule of q's type to cur. */
static enum lease_status lease_decide(const struct lease_req *q, const struct lease *cur,
                                      uint64_t now, struct lease *next, bool *write,
                                      bool *retried)
{
        *retried = false;
        switch (q->type) {
        case COORD__MSG_TYPE__MSG_LEASE_CLAIM:
                return lease_claim(cur, q->holder, q->ttl_ms, q->supersede, now, next, write);
        case COORD__MSG_TYPE__MSG_LEASE_RENEW:
                return lease_renew(cur, q->holder, q->epoch, now, next, write);
        case COORD__MSG_TYPE__MSG_LEASE_COMMIT:
                return lease_commit(cur, q->holder, q->epoch, q->commit_id, q->version, now,
                                    next, write, retried);
        default:
                return lease_release(cur, q->holder, q->epoch, now, next, write);
        }
}

static const char *lease_op_name(int type)
{
        switch (type) {
        case COORD__MSG_TYPE__MSG_LEASE_CLAIM: return "claim";
        case COORD__MSG_TYPE__MSG_LEASE_RENEW: return "renew";
        case COORD__MSG_TYPE__MSG_LEASE_COMMIT: return "commit";
        default: return "release";
        }
}

/* One line per decision that changes something or refuses; renewals and BUSY are
 * routine (debug). */
static void lease_log(struct lease_table *t, const struct lease_req *q, enum lease_status st,
                      const struct lease *cur, const struct lease *next, bool retried)
{
        if (st == LEASE_FENCED) {
                t->fenced++;
                COORD_LEASE_FENCED(q->key, q->holder, (unsigned long long)q->epoch, q->type);
                log_info("lease_fenced", "op=%s key=%s holder=%s epoch=%llu current_epoch=%llu "
                         "version=%llu current_version=%llu held=%d",
                         lease_op_name(q->type), q->key, q->holder, (unsigned long long)q->epoch,
                         (unsigned long long)cur->epoch, (unsigned long long)q->version,
                         (unsigned long long)cur->version, cur->holder[0] != '\0');
                return;
        }
        if (st == LEASE_BUSY) {
                t->busy++;
                log_debug("lease_busy", "key=%s holder=%s current_holder=%s epoch=%llu",
                          q->key, q->holder, cur->holder, (unsigned long long)cur->epoch);
                return;
        }
        switch (q->type) {
        case COORD__MSG_TYPE__MSG_LEASE_CLAIM:
                t->claims++;
                COORD_LEASE_CLAIM(q->key, q->holder, (unsigned long long)next->epoch);
                log_info("lease_claimed", "key=%s holder=%s epoch=%llu version=%llu ttl_ms=%u",
                         q->key, q->holder, (unsigned long long)next->epoch,
                         (unsigned long long)next->version, (unsigned)next->ttl_ms);
                break;
        case COORD__MSG_TYPE__MSG_LEASE_RENEW:
                t->renewals++;
                log_debug("lease_renewed", "key=%s holder=%s epoch=%llu", q->key, q->holder,
                          (unsigned long long)q->epoch);
                break;
        case COORD__MSG_TYPE__MSG_LEASE_COMMIT:
                if (retried)
                        t->retried++;
                else
                        t->commits++;
                log_info(retried ? "lease_commit_repeated" : "lease_committed",
                         "key=%s holder=%s epoch=%llu commit_id=%s version=%llu", q->key,
                         q->holder, (unsigned long long)q->epoch, q->commit_id,
                         (unsigned long long)next->version);
                break;
        default:
                t->releases++;
                log_info("lease_released", "key=%s holder=%s epoch=%llu", q->key, q->holder,
                         (unsigned long long)q->epoch);
                break;
        }
}

static struct lease_write *write_in_flight(const struct lease_table *t, const char *key)
{
        for (struct lease_write *w = t->writes; w; w = w->next)
                if (strcmp(w->q.key, key) == 0)
                        return w;
        return NULL;
}

/* The decision's answer, after its write if it had one. */
static void lease_answer(struct lease_table *t, node_peer_t from, uint64_t ctl_id, uint64_t request_id,
                         enum lease_status st, const struct lease *next, bool retried, uint64_t seq)
{
        Coord__LeaseReply reply = COORD__LEASE_REPLY__INIT;

        reply.status = (Coord__LeaseReply__Status)st;
        reply.epoch = next->epoch;
        reply.version = next->version;
        reply.holder = (char *)next->holder;
        reply.expires_in_ms = lease_expires_in_ms(next, now_ns());
        reply.retried = retried;
        reply.last_commit_id = (char *)next->last_commit_id;
        reply.seq = seq;
        lease_reply(t, from, ctl_id, request_id, COORD__MSG_TYPE__MSG_LEASE_REPLY, &reply.base);
}

static void lease_request(struct lease_table *t, node_peer_t from, uint64_t ctl_id, uint64_t request_id,
                          int type, const uint8_t *payload, size_t len);

/* Note 4: a write durable (r = 0) or failed; then the requests that waited for it. */
static void lease_written(void *ctx, int r, uint64_t seq)
{
        struct lease_write *w = ctx, **pp;
        struct lease_table *t = w->t;
        struct lease_wait *x;

        for (pp = &t->writes; *pp != w; pp = &(*pp)->next)
                ;
        *pp = w->next;
        if (!w->found)
                t->inserts--;
        if (r < 0) {
                t->errors++;
                log_error_errno(r, "lease_write_failed", "op=%s key=%s holder=%s", lease_op_name(w->q.type),
                                w->q.key, w->q.holder);
                lease_error(t, w->from, w->ctl_id, w->request_id, "58030",
                            "the lease could not be written to the catalog");
        } else {
                KILLPOINT("lease.write.after_commit");          /* durable, not answered */
                lease_take(t, &w->next_lease);
                if (w->q.type == COORD__MSG_TYPE__MSG_LEASE_COMMIT)
                        KILLPOINT("lease.commit.after_write");  /* a commit durable, not answered */
                lease_log(t, &w->q, w->st, &w->cur, &w->next_lease, w->retried);
                lease_answer(t, w->from, w->ctl_id, w->request_id, w->st, &w->next_lease, w->retried, seq);
        }
        /* In arrival order; one that writes makes the rest wait behind it. */
        while ((x = w->waiters)) {
                w->waiters = x->next;
                lease_request(t, x->from, x->ctl_id, x->request_id, x->type, x->payload, x->len);
                free(x);
        }
        lease_write_free(w);
}

/* Note 2 (and 4 when t has a committer): make next durable, then take it and answer. */
static void lease_write(struct lease_table *t, struct lease_write *w)
{
        uint8_t key[1 + LEASE_KEY_MAX], *val = NULL;
        struct catalog_op op;
        uint64_t seq = 0;
        int r;

        r = w->found ? 0 : lease_reserve(t);
        if (r >= 0)
                r = lease_record_op(&w->next_lease, key, &val, &op);
        if (r >= 0 && t->cm) {
                r = committer_submit_opts(t->cm, &(struct catalog_txn_ops){ .ops = &op, .n_ops = 1 }, 1,
                                          &(struct commit_opts){ .test_delay_ms = t->test_delay_ms },
                                          lease_written, w);    /* copies the op */
                free(val);
                if (r >= 0) {
                        w->next = t->writes;
                        t->writes = w;
                        t->inserts += !w->found;
                        return;
                }
        } else if (r >= 0) {
                r = catalog_commit(t->store, &op, 1, &seq);
                free(val);
        }
        t->inserts += !w->found;        /* lease_written() takes it back */
        w->next = t->writes;
        t->writes = w;
        lease_written(w, r, seq);
}

static void lease_request(struct lease_table *t, node_peer_t from, uint64_t ctl_id, uint64_t request_id,
                          int type, const uint8_t *payload, size_t len)
{
        const Coord__Envelope env = { .type = (Coord__MsgType)type, .request_id = request_id,
                                      .payload = { len, (uint8_t *)payload } };
        ProtobufCMessage *msg = NULL;
        struct lease cur, next;
        struct lease_write *w;
        struct lease_req q;
        bool found, write, retried;
        enum lease_status st;
        size_t at;
        int r;

        r = lease_req_parse(&env, &msg, &q);
        if (r >= 0)
                r = lease_init(&cur, q.key);
        if (r < 0) {
                t->errors++;
                lease_error(t, from, ctl_id, request_id, "22023",
                            "malformed lease request: key 1-256 bytes, holder 1-128, commit_id "
                            "1-128 (printable ASCII, no spaces), ttl_ms 1-3600000");
                goto out;
        }
        w = write_in_flight(t, q.key);
        if (w) {
                /* Note 4: after the write in flight, in arrival order. */
                struct lease_wait *x = malloc(sizeof(*x) + len);

                if (!x) {
                        t->errors++;
                        lease_error(t, from, ctl_id, request_id, "53200", "out of memory");
                        goto out;
                }
                *x = (struct lease_wait){ .from = from, .ctl_id = ctl_id, .request_id = request_id,
                                          .type = type, .len = len };
                if (len)
                        memcpy(x->payload, payload, len);
                *w->tail = x;
                w->tail = &x->next;
                goto out;
        }
        at = lease_find(t, q.key, &found);
        if (found)
                cur = t->leases[at];
        st = lease_decide(&q, &cur, now_ns(), &next, &write, &retried);
        if (write) {
                w = calloc(1, sizeof(*w));
                if (!w) {
                        t->errors++;
                        lease_error(t, from, ctl_id, request_id, "53200", "out of memory");
                        goto out;
                }
                *w = (struct lease_write){ .t = t, .msg = TAKE_PTR(msg), .q = q, .cur = cur, .next_lease = next,
                                           .st = st, .found = found, .retried = retried, .from = from,
                                           .ctl_id = ctl_id, .request_id = request_id };
                w->tail = &w->waiters;
                lease_write(t, w);
                goto out;
        }
        if (st == LEASE_OK && found)
                t->leases[at] = next;                   /* a renewal: memory only */
        lease_log(t, &q, st, &cur, &next, retried);
        lease_answer(t, from, ctl_id, request_id, st, &next, retried, 0);
out:
        if (msg)
                protobuf_c_message_free_unpacked(msg, NULL);
}

void lease_table_on_request(struct lease_table *t, node_peer_t from, uint64_t ctl_id,
                            const Coord__Envelope *env)
{
        lease_request(t, from, ctl_id, env->request_id, (int)env->type, env->payload.data, env->payload.len);
}

bool lease_table_fence_ok(struct lease_table *t, const char *key, uint64_t epoch)
{
        bool found;
        size_t at = lease_find(t, key, &found);

        return found && epoch && t->leases[at].epoch == epoch && lease_live(&t->leases[at], now_ns()) &&
               !write_in_flight(t, key);        /* note 4 */
}

int lease_table_each(void *userdata, sql_lease_fn fn, void *arg)
{
        struct lease_table *t = userdata;
        uint64_t now = now_ns();

        for (size_t i = 0; t && i < t->n; i++) {
                const struct lease *l = &t->leases[i];
                struct sql_lease s = {
                        .key = l->key, .holder = l->holder, .epoch = l->epoch,
                        .version = l->version, .expires_in_ms = lease_expires_in_ms(l, now),
                        .live = lease_live(l, now),
                };
                int r = fn(arg, &s);

                if (r < 0)
                        return r;
        }
        return 0;
}

void lease_table_status(const struct lease_table *t, char *buf, size_t size)
{
        size_t writes = 0;

        for (const struct lease_write *w = t->writes; w; w = w->next)
                writes++;
        snprintf(buf, size, "leases=%zu lease_claims=%llu lease_busy=%llu lease_fenced=%llu "
                 "lease_commits=%llu lease_commits_repeated=%llu lease_releases=%llu "
                 "lease_renewals=%llu lease_errors=%llu lease_writes=%zu", t->n,
                 (unsigned long long)t->claims, (unsigned long long)t->busy,
                 (unsigned long long)t->fenced, (unsigned long long)t->commits,
                 (unsigned long long)t->retried, (unsigned long long)t->releases,
                 (unsigned long long)t->renewals, (unsigned long long)t->errors, writes);
}
