/* adapter-check.c -- the diagnostic reconstruction (I10).  See adapter-check.h.
 *
 * NOTES ON THE DESIGN
 * (1) The aligned point.  DDL and publications commit on the committer's threads and
 *     change memory on the loop thread only after their commit (acat_txn_finish() in
 *     ddl_committed() and publication_committed()).  While exec_commits_in_flight() is
 *     0 no commit is between the two, so memory is the committed state at
 *     catalog_last_seq(): nothing newer is applied, nothing acknowledged is missing.
 *     The oracle's meta commits run on the loop thread itself and write only meta
 *     "oracle_hwm", which the check does not compare.  Snapshot and n are taken in the
 *     same loop callback, so they belong together.
 * (2) The replay reads the log through catalog_log_iter_new(c, 0): on the primary the
 *     iterator pins an implicit RocksDB snapshot at its creation, so commits made while
 *     the replay runs are not seen -- and it may see groups beyond n (commits after the
 *     aligned point), which the replay stops before.  The log is never truncated, so
 *     sequence 1 is there.
 * (3) Ownership of a job: the loop thread fills it (snapshot, n), then it belongs to the
 *     replay thread from pthread_create() until the thread has stored its result and
 *     woken the loop; the loop joins the thread before it reads the result.  The join
 *     is the only synchronization needed (it orders the thread's writes before the
 *     loop's reads).  `stop` is the one field both sides touch concurrently.
 * (4) The reconstruction applies each CatalogTxn's ops in order: PUT/DELETE on cf
 *     STATE into a hash map of its own (last write wins, a DELETE leaves a dead slot),
 *     and meta "next_gid".  The live records are then sorted by key and merged with the
 *     sorted snapshot.  Values compare as bytes (the adapter's encoding is
 *     deterministic); a difference is decoded to say which fields differ.
 * (5) next_gid.  acat_open() takes max(meta next_gid, largest item GlobalId + 1),
 *     because concurrent DDL may commit in any order within a group; the
 *     reconstruction applies the same rule and compares it with acat_next_gid().
 */
#include "adapter-check.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter-catalog.h"
#include "adapter-exec.h"
#include "catalog/catalog.h"
#include "catalog.pb-c.h"
#include "log.h"
#include "loop/loop.h"
#include "node/node.h"
#include "util.h"

#define META_NEXT_GID "next_gid"

struct rec {
        uint8_t *key;
        size_t key_len;
        uint8_t *val;
        size_t val_len;
        bool live;                      /* replay map: false after a DELETE */
};

struct waiter {
        uint64_t ctl_id, request_id;
};

struct job {
        struct catalog *store;
        uint64_t seq;                   /* n: replay up to and including it */
        uint64_t mem_next_gid;
        struct rec *mem;                /* the snapshot, unsorted until the thread sorts it */
        size_t n_mem, cap_mem;
        atomic_bool stop;               /* check_free(): give up */
        /* Results, written by the replay thread (note 3). */
        int r;
        char err[256];
        bool match;
        uint64_t records;
        char **diffs;
        size_t n_diffs;
        size_t n_more;                  /* differences beyond CHECK_MAX_DIFFERENCES */
};

enum check_state { CHECK_IDLE, CHECK_ALIGNING, CHECK_REPLAYING };

struct check {
        struct node *node;
        struct catalog *store;
        struct exec *ex;
        bool test_corrupt;
        enum check_state state;
        struct waiter *waiters;
        size_t n_waiters, cap_waiters;
        uint64_t start_ns;              /* when the first waiter asked */
        unsigned align_retries;         /* times commits were in flight, this check */
        uint64_t snapshot_us;           /* the loop's share: acat_export() copied */
        struct loop_timer *retry;
        struct loop_waker *waker;
        pthread_t thread;
        struct job *job;                /* CHECK_REPLAYING: owned by the thread */
        uint64_t checks;
};

/* ---- records ---- */

static void rec_done(struct rec *r)
{
        free(r->key);
        free(r->val);
}

static int rec_cmp(const void *a, const void *b)
{
        const struct rec *x = a, *y = b;
        size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
        int c = memcmp(x->key, y->key, n);

        if (c)
                return c;
        return x->key_len < y->key_len ? -1 : x->key_len > y->key_len;
}

static int rec_set(struct rec *r, const void *key, size_t key_len, const void *val, size_t val_len)
{
        uint8_t *v = malloc(val_len ? val_len : 1);

        if (!v)
                return -ENOMEM;
        if (val_len)
                memcpy(v, val, val_len);
        if (!r->key) {
                r->key = malloc(key_len);
                if (!r->key) {
                        free(v);
                        return -ENOMEM;
                }
                memcpy(r->key, key, key_len);
                r->key_len = key_len;
        }
        free(r->val);
        r->val = v;
        r->val_len = val_len;
        r->live = true;
        return 0;
}

static struct job *job_free(struct job *j)
{
        if (!j)
                return NULL;
        for (size_t i = 0; i < j->n_mem; i++)
                rec_done(&j->mem[i]);
        free(j->mem);
        for (size_t i = 0; i < j->n_diffs; i++)
                free(j->diffs[i]);
        free(j->diffs);
        free(j);
        return NULL;
}

/* ---- the replay map (note 4): open addressing, linear probing ---- */

struct map {
        struct rec *slots;
        size_t cap, used;
};

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
        uint64_t h = 1469598103934665603ull;    /* FNV-1a */

        for (size_t i = 0; i < n; i++) {
                h ^= p[i];
                h *= 1099511628211ull;
        }
        return h;
}

static struct rec *map_slot(struct rec *slots, size_t cap, const void *key, size_t key_len)
{
        size_t i = hash_bytes(key, key_len) & (cap - 1);

        for (;; i = (i + 1) & (cap - 1)) {
                struct rec *s = &slots[i];
                if (!s->key || (s->key_len == key_len && memcmp(s->key, key, key_len) == 0))
                        return s;
        }
}

static int map_grow(struct map *m)
{
        size_t cap = m->cap ? m->cap * 2 : 1024;
        struct rec *slots = calloc(cap, sizeof(*slots));

        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < m->cap; i++)
                if (m->slots[i].key)
                        *map_slot(slots, cap, m->slots[i].key, m->slots[i].key_len) = m->slots[i];
        free(m->slots);
        m->slots = slots;
        m->cap = cap;
        return 0;
}

/* A slot for key: an existing one, or a fresh one (key NULL) the caller fills. */
static int map_find(struct map *m, const void *key, size_t key_len, struct rec **ret)
{
        int r;

        if ((m->used + 1) * 2 > m->cap) {
                r = map_grow(m);
                if (r < 0)
                        return r;
        }
        *ret = map_slot(m->slots, m->cap, key, key_len);
        return 0;
}

static void map_done(struct map *m)
{
        for (size_t i = 0; i < m->cap; i++)
                rec_done(&m->slots[i]);
        free(m->slots);
        *m = (struct map){ 0 };
}

/* ---- describing differences ---- */

static void diff_add(struct job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void diff_add(struct job *j, const char *fmt, ...)
{
        char *line = NULL, **d;
        va_list ap;
        int r;

        j->match = false;
        if (j->n_diffs >= CHECK_MAX_DIFFERENCES) {
                j->n_more++;
                return;
        }
        va_start(ap, fmt);
        r = vasprintf(&line, fmt, ap);
        va_end(ap);
        if (r < 0)
                return;
        d = realloc(j->diffs, (j->n_diffs + 1) * sizeof(*d));
        if (!d) {
                free(line);
                return;
        }
        j->diffs = d;
        j->diffs[j->n_diffs++] = line;
}

/* "item 1003 (t3)", "bound 1003", "requirement 1005 on 1003", or the key in hex. */
static void key_name(const struct rec *a, const struct rec *b, char *buf, size_t size)
{
        const struct rec *r = a ? a : b;
        const uint8_t *k = r->key;

        if (k[0] == 'i' && r->key_len == 9) {
                const struct rec *v[2] = { a, b };
                const char *name = NULL;
                Coord__CatalogItem *it = NULL;

                for (int i = 0; i < 2 && !name; i++) {
                        if (!v[i])
                                continue;
                        it = coord__catalog_item__unpack(NULL, v[i]->val_len, v[i]->val);
                        if (it && it->name && *it->name) {
                                snprintf(buf, size, "item %" PRIu64 " (%s)", be64_get(k + 1), it->name);
                                name = it->name;
                        }
                        if (it)
                                coord__catalog_item__free_unpacked(it, NULL);
                }
                if (!name)
                        snprintf(buf, size, "item %" PRIu64, be64_get(k + 1));
        } else if (k[0] == 'b' && r->key_len == 9) {
                snprintf(buf, size, "bound %" PRIu64, be64_get(k + 1));
        } else if (k[0] == 'r' && r->key_len == 17) {
                snprintf(buf, size, "requirement %" PRIu64 " on %" PRIu64, be64_get(k + 1),
                         be64_get(k + 9));
        } else {
                size_t o = (size_t)snprintf(buf, size, "key 0x");
                for (size_t i = 0; i < r->key_len && o + 3 < size; i++)
                        o += (size_t)snprintf(buf + o, size - o, "%02x", k[i]);
        }
}

static bool u64s_equal(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
        return na == nb && (na == 0 || memcmp(a, b, na * sizeof(*a)) == 0);
}

/* The fields of two items that differ, as "created_at memory=5 log=4; plan; ...". */
static void item_fields(const Coord__CatalogItem *m, const Coord__CatalogItem *l, char *buf,
                        size_t size)
{
        size_t o = 0;

#define FIELD(...) do {                                                                 \
                if (o < size)                                                           \
                        o += (size_t)snprintf(buf + o, size - o, "%s", o ? "; " : "");  \
                if (o < size)                                                           \
                        o += (size_t)snprintf(buf + o, size - o, __VA_ARGS__);          \
        } while (0)
#define SCALAR(f) do {                                                                  \
                if (m->f != l->f)                                                       \
                        FIELD(#f " memory=%" PRIu64 " log=%" PRIu64, (uint64_t)m->f,    \
                              (uint64_t)l->f);                                          \
        } while (0)

        buf[0] = '\0';
        SCALAR(gid);
        SCALAR(kind);
        SCALAR(created_at);
        SCALAR(as_of);
        SCALAR(on_id);
        SCALAR(retain_history_ms);
        SCALAR(nondeterministic);
        if (strcmp(m->name ? m->name : "", l->name ? l->name : "") != 0)
                FIELD("name memory='%s' log='%s'", m->name, l->name);
        if (strcmp(m->create_sql ? m->create_sql : "", l->create_sql ? l->create_sql : "") != 0)
                FIELD("create_sql");
        if (m->plan.len != l->plan.len ||
            (m->plan.len && memcmp(m->plan.data, l->plan.data, m->plan.len) != 0))
                FIELD("plan");
        if (!u64s_equal(m->logical_inputs, m->n_logical_inputs, l->logical_inputs, l->n_logical_inputs))
                FIELD("logical_inputs");
        if (!u64s_equal(m->physical_inputs, m->n_physical_inputs, l->physical_inputs,
                        l->n_physical_inputs))
                FIELD("physical_inputs");
        if (!u64s_equal(m->refs, m->n_refs, l->refs, l->n_refs))
                FIELD("refs");
        if (m->n_keys != l->n_keys ||
            (m->n_keys && memcmp(m->keys, l->keys, m->n_keys * sizeof(*m->keys)) != 0))
                FIELD("keys");
        if (m->n_foreign_keys != l->n_foreign_keys)
                FIELD("foreign_keys memory=%zu log=%zu", m->n_foreign_keys, l->n_foreign_keys);
        if (m->n_columns != l->n_columns) {
                FIELD("columns memory=%zu log=%zu", m->n_columns, l->n_columns);
        } else {
                for (size_t i = 0; i < m->n_columns; i++) {
                        const Coord__CatalogColumn *a = m->columns[i], *b = l->columns[i];
                        if (strcmp(a->name, b->name) != 0 || a->type != b->type ||
                            a->nullable != b->nullable) {
                                FIELD("column %zu", i);
                                break;
                        }
                }
        }
        if (o == 0)
                FIELD("encoding (the decoded fields are equal)");
#undef SCALAR
#undef FIELD
}

/* The message a catalog key kind holds (common/catalog/catalog.h), NULL for another key. */
static const ProtobufCMessageDescriptor *value_descriptor(const struct rec *m)
{
        switch (m->key[0]) {
        case 'i':
                return m->key_len == 9 ? &coord__catalog_item__descriptor : NULL;
        case 'b':
                return m->key_len == 9 ? &coord__catalog_bound__descriptor : NULL;
        case 'r':
                return m->key_len == 17 ? &coord__catalog_requirement__descriptor : NULL;
        default:
                return NULL;
        }
}

static void describe_value_diff(struct job *j, const struct rec *m, const struct rec *l)
{
        char name[96], what[512];
        const ProtobufCMessageDescriptor *d = value_descriptor(m);
        ProtobufCMessage *a = NULL, *b = NULL;

        key_name(m, l, name, sizeof(name));
        if (d) {
                a = protobuf_c_message_unpack(d, NULL, m->val_len, m->val);
                b = protobuf_c_message_unpack(d, NULL, l->val_len, l->val);
        }
        if (!d)
                snprintf(what, sizeof(what), "value memory=%zu bytes log=%zu bytes", m->val_len,
                         l->val_len);
        else if (!a || !b)
                snprintf(what, sizeof(what), "a value does not decode");
        else if (d == &coord__catalog_item__descriptor)
                item_fields((const Coord__CatalogItem *)a, (const Coord__CatalogItem *)b, what,
                            sizeof(what));
        else if (d == &coord__catalog_bound__descriptor)
                snprintf(what, sizeof(what), "bound memory=%" PRIu64 " log=%" PRIu64,
                         ((const Coord__CatalogBound *)a)->bound,
                         ((const Coord__CatalogBound *)b)->bound);
        else
                snprintf(what, sizeof(what), "frontier memory=%" PRIu64 " log=%" PRIu64,
                         ((const Coord__CatalogRequirement *)a)->frontier,
                         ((const Coord__CatalogRequirement *)b)->frontier);
        if (a)
                protobuf_c_message_free_unpacked(a, NULL);
        if (b)
                protobuf_c_message_free_unpacked(b, NULL);
        diff_add(j, "%s differs: %s", name, what);
}

/* ---- the replay thread ---- */

static int replay(struct job *j, struct map *m, uint64_t *ret_meta_next_gid)
{
        struct catalog_log_iter *it = NULL;
        Coord__CatalogTxn *txn;
        uint64_t last = 0, meta_next_gid = 0;
        int r;

        r = catalog_log_iter_new(j->store, 0, &it);
        if (r < 0) {
                snprintf(j->err, sizeof(j->err), "cannot read the log: %s", strerror(-r));
                return r;
        }
        while (last < j->seq && (r = catalog_log_next(it, &txn)) == 1) {
                if (atomic_load_explicit(&j->stop, memory_order_relaxed)) {
                        coord__catalog_txn__free_unpacked(txn, NULL);
                        r = -ECANCELED;
                        break;
                }
                last = txn->seq;
                for (size_t i = 0; r >= 0 && i < txn->n_ops; i++) {
                        const Coord__CatalogOp *op = txn->ops[i];
                        struct rec *s;

                        if (op->cf == COORD__CATALOG_OP__CF__META) {
                                if (op->key.len == strlen(META_NEXT_GID) &&
                                    memcmp(op->key.data, META_NEXT_GID, op->key.len) == 0)
                                        meta_next_gid = op->kind == COORD__CATALOG_OP__KIND__PUT &&
                                                        op->value.len == 8 ? be64_get(op->value.data) : 0;
                                continue;
                        }
                        if (op->cf != COORD__CATALOG_OP__CF__STATE || op->key.len == 0) {
                                snprintf(j->err, sizeof(j->err), "log entry %" PRIu64 " op %zu: bad cf or key",
                                         txn->seq, i);
                                r = -EBADMSG;
                                break;
                        }
                        if (op->key.data[0] == 'h')
                                continue;       /* clients' holds: session state (adapter-hold.c) */
                        /* Leases (adapter-lease.c) are not the catalog's items: memory
                         * (acat_export()) has none, so the replay leaves them out. */
                        if (op->key.data[0] == CATALOG_STATE_LEASE)
                                continue;
                        r = map_find(m, op->key.data, op->key.len, &s);
                        if (r < 0)
                                break;
                        if (op->kind == COORD__CATALOG_OP__KIND__PUT) {
                                if (!s->key)
                                        m->used++;
                                r = rec_set(s, op->key.data, op->key.len, op->value.data, op->value.len);
                        } else if (op->kind == COORD__CATALOG_OP__KIND__DELETE) {
                                if (s->key)
                                        s->live = false;
                        } else {
                                snprintf(j->err, sizeof(j->err), "log entry %" PRIu64 " op %zu: bad kind",
                                         txn->seq, i);
                                r = -EBADMSG;
                        }
                }
                coord__catalog_txn__free_unpacked(txn, NULL);
                if (r < 0)
                        break;
        }
        if (r < 0 && !j->err[0])
                snprintf(j->err, sizeof(j->err), "reading the log after seq %" PRIu64 ": %s%s%s", last,
                         strerror(-r), catalog_last_error()[0] ? ": " : "", catalog_last_error());
        else if (r >= 0 && last != j->seq) {
                snprintf(j->err, sizeof(j->err), "the log ends at seq %" PRIu64 ", before %" PRIu64,
                         last, j->seq);
                r = -EBADMSG;
        }
        catalog_log_iter_free(it);
        *ret_meta_next_gid = meta_next_gid;
        return r < 0 ? r : 0;
}

static void compare(struct job *j, struct map *m, uint64_t meta_next_gid)
{
        struct rec *log = NULL;
        size_t n_log = 0, a = 0, b = 0;
        uint64_t next_gid = meta_next_gid ? meta_next_gid : ACAT_FIRST_USER_GID;
        char name[96];

        log = calloc(m->used ? m->used : 1, sizeof(*log));
        if (!log) {
                j->r = -ENOMEM;
                snprintf(j->err, sizeof(j->err), "out of memory");
                return;
        }
        for (size_t i = 0; i < m->cap; i++)
                if (m->slots[i].key && m->slots[i].live)
                        log[n_log++] = m->slots[i];     /* borrowed from the map */
        if (n_log)
                qsort(log, n_log, sizeof(*log), rec_cmp);
        if (j->n_mem)
                qsort(j->mem, j->n_mem, sizeof(*j->mem), rec_cmp);
        j->match = true;
        while (a < j->n_mem || b < n_log) {
                int c = a == j->n_mem ? 1 : b == n_log ? -1 : rec_cmp(&j->mem[a], &log[b]);

                j->records++;
                if (c < 0) {
                        key_name(&j->mem[a], NULL, name, sizeof(name));
                        diff_add(j, "%s: in memory only (not in the log)", name);
                        a++;
                        continue;
                }
                if (c > 0) {
                        key_name(NULL, &log[b], name, sizeof(name));
                        diff_add(j, "%s: in the log only (not in memory)", name);
                        b++;
                        continue;
                }
                if (j->mem[a].val_len != log[b].val_len ||
                    memcmp(j->mem[a].val, log[b].val, log[b].val_len) != 0)
                        describe_value_diff(j, &j->mem[a], &log[b]);
                a++;
                b++;
        }
        /* Note 5: the rule of acat_open(). */
        for (size_t i = n_log; i-- > 0;)
                if (log[i].key[0] == 'i' && log[i].key_len == 9) {
                        if (be64_get(log[i].key + 1) >= next_gid)
                                next_gid = be64_get(log[i].key + 1) + 1;
                        break;
                }
        if (next_gid != j->mem_next_gid)
                diff_add(j, "meta next_gid differs: memory=%" PRIu64 " log=%" PRIu64, j->mem_next_gid,
                         next_gid);
        free(log);
}

static void *replay_thread(void *userdata)
{
        struct check *ck = userdata;
        struct job *j = ck->job;        /* (note 3) ours until the wake below */
        struct loop_waker *waker = ck->waker;
        struct map m = { 0 };
        uint64_t meta_next_gid = 0;

        j->r = replay(j, &m, &meta_next_gid);
        if (j->r == 0)
                compare(j, &m, meta_next_gid);
        map_done(&m);
        loop_waker_wake(waker);
        return NULL;
}

/* ---- the loop side ---- */

static void answer_all(struct check *ck, const struct job *j, int r, const char *err)
{
        uint64_t took_us = (now_ns() - ck->start_ns) / 1000;

        for (size_t i = 0; i < ck->n_waiters; i++) {
                struct waiter *w = &ck->waiters[i];
                int s;

                if (r < 0) {
                        Coord__Error e = COORD__ERROR__INIT;
                        e.sqlstate = (char *)"XX000";
                        e.message = (char *)err;
                        s = node_ctl_send(ck->node, w->ctl_id, COORD__MSG_TYPE__MSG_ERROR,
                                          w->request_id, &e.base);
                } else {
                        Coord__CheckResult res = COORD__CHECK_RESULT__INIT;
                        res.match = j->match;
                        res.seq = j->seq;
                        res.records = j->records;
                        res.differences = j->diffs;
                        res.n_differences = j->n_diffs;
                        res.took_us = took_us;
                        s = node_ctl_send(ck->node, w->ctl_id, COORD__MSG_TYPE__MSG_CHECK_RESULT,
                                          w->request_id, &res.base);
                }
                if (s < 0)
                        log_debug("check_requester_gone", "ctl=%" PRIu64, w->ctl_id);
        }
        if (r < 0)
                log_warn("catalog_check_failed", "reason=\"%s\" align_retries=%u took_us=%" PRIu64, err,
                         ck->align_retries, took_us);
        else if (j->match)
                log_info("catalog_check_match", "seq=%" PRIu64 " records=%" PRIu64 " align_retries=%u "
                         "snapshot_us=%" PRIu64 " took_us=%" PRIu64, j->seq, j->records,
                         ck->align_retries, ck->snapshot_us, took_us);
        else
                log_warn("catalog_check_mismatch", "seq=%" PRIu64 " records=%" PRIu64 " differences=%zu "
                         "first=\"%s\" align_retries=%u took_us=%" PRIu64, j->seq, j->records,
                         j->n_diffs + j->n_more, j->n_diffs ? j->diffs[0] : "", ck->align_retries, took_us);
        ck->n_waiters = 0;
        ck->state = CHECK_IDLE;
        ck->checks++;
}

static void on_replayed(struct loop *l, uint64_t count, void *userdata)
{
        struct check *ck = userdata;
        struct job *j = ck->job;

        if (ck->state != CHECK_REPLAYING)
                return;
        /* (note 3) the join orders the thread's writes to the job before our reads. */
        pthread_join(ck->thread, NULL);
        ck->job = NULL;
        if (j->n_more) {
                char **d = realloc(j->diffs, (j->n_diffs + 1) * sizeof(*d));
                if (d) {
                        j->diffs = d;
                        if (asprintf(&d[j->n_diffs], "... and %zu more", j->n_more) >= 0)
                                j->n_diffs++;
                }
        }
        answer_all(ck, j, j->r, j->err);
        job_free(j);
}

struct export_ctx {
        struct job *job;
        bool corrupt;                   /* TEST ONLY: alter the first item record */
};

static int export_one(const void *key, size_t key_len, const void *value, size_t value_len,
                      void *userdata)
{
        struct export_ctx *x = userdata;
        struct job *j = x->job;
        struct rec *r;

        if (j->n_mem == j->cap_mem) {
                size_t cap = j->cap_mem ? j->cap_mem * 2 : 1024;
                struct rec *n = realloc(j->mem, cap * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                j->mem = n;
                j->cap_mem = cap;
        }
        r = &j->mem[j->n_mem];
        *r = (struct rec){ 0 };
        if (rec_set(r, key, key_len, value, value_len) < 0) {
                rec_done(r);
                return -ENOMEM;
        }
        j->n_mem++;
        if (x->corrupt && key_len == 9 && ((const uint8_t *)key)[0] == 'i') {
                /* TEST ONLY (--test-check-corrupt): memory "forgets" one tick of the
                 * first item's created_at, so the check must report this item. */
                Coord__CatalogItem *it = coord__catalog_item__unpack(NULL, value_len, value);
                if (it) {
                        size_t len;
                        uint8_t *buf;

                        it->created_at++;
                        len = coord__catalog_item__get_packed_size(it);
                        buf = malloc(len ? len : 1);
                        if (buf) {
                                coord__catalog_item__pack(it, buf);
                                free(r->val);
                                r->val = buf;
                                r->val_len = len;
                                x->corrupt = false;
                        }
                        coord__catalog_item__free_unpacked(it, NULL);
                }
        }
        return 0;
}

/* The aligned point (note 1): snapshot memory and n in this one loop callback, then
 * hand the job to a replay thread. */
static int start_replay(struct check *ck)
{
        struct adapter_catalog *ac = exec_catalog(ck->ex);
        struct export_ctx x = { .corrupt = ck->test_corrupt };
        uint64_t t0 = now_ns();
        struct job *j;
        int r;

        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->store = ck->store;
        j->seq = catalog_last_seq(ck->store);
        j->mem_next_gid = acat_next_gid(ac);
        atomic_init(&j->stop, false);
        x.job = j;
        r = acat_export(ac, export_one, &x);
        if (r < 0) {
                job_free(j);
                return r;
        }
        ck->snapshot_us = (now_ns() - t0) / 1000;
        ck->job = j;
        ck->state = CHECK_REPLAYING;
        r = thread_start(&ck->thread, "check-replay", replay_thread, ck);
        if (r < 0) {
                ck->job = NULL;
                ck->state = CHECK_ALIGNING;
                job_free(j);
                return r;
        }
        log_debug("catalog_check_started", "seq=%" PRIu64 " records=%zu", j->seq, j->n_mem);
        return 0;
}

static void try_align(struct loop *l, void *userdata)
{
        struct check *ck = userdata;
        uint64_t waited_ms = (now_ns() - ck->start_ns) / 1000000;
        char err[160];
        int r;

        ck->retry = NULL;
        r = exec_catalog_error(ck->ex);
        if (r < 0) {
                snprintf(err, sizeof(err), "the catalog is in its sticky error state (%s): restart the adapter",
                         strerror(-r));
                answer_all(ck, NULL, r, err);
                return;
        }
        if (exec_commits_in_flight(ck->ex) == 0) {
                r = start_replay(ck);
                if (r == 0)
                        return;
                snprintf(err, sizeof(err), "cannot start the check: %s", strerror(-r));
                answer_all(ck, NULL, r, err);
                return;
        }
        if (waited_ms >= CHECK_ALIGN_TIMEOUT_MS) {
                snprintf(err, sizeof(err), "no aligned point within %u ms: catalog commits were always in flight",
                         CHECK_ALIGN_TIMEOUT_MS);
                answer_all(ck, NULL, -ETIMEDOUT, err);
                return;
        }
        ck->align_retries++;
        r = loop_timer_add(node_loop(ck->node), CHECK_ALIGN_RETRY_MS * 1000000ull, try_align, ck,
                           &ck->retry);
        if (r < 0) {
                snprintf(err, sizeof(err), "cannot wait for an aligned point: %s", strerror(-r));
                answer_all(ck, NULL, r, err);
        }
}

void check_on_request(struct check *ck, uint64_t ctl_id, const Coord__Envelope *env)
{
        if (ck->n_waiters == ck->cap_waiters) {
                size_t cap = ck->cap_waiters ? ck->cap_waiters * 2 : 4;
                struct waiter *w = realloc(ck->waiters, cap * sizeof(*w));
                if (!w) {
                        log_error("out_of_memory", "what=check_request");
                        return;
                }
                ck->waiters = w;
                ck->cap_waiters = cap;
        }
        ck->waiters[ck->n_waiters++] = (struct waiter){ .ctl_id = ctl_id, .request_id = env->request_id };
        if (ck->state != CHECK_IDLE)
                return;         /* shares the answer of the check under way */
        ck->state = CHECK_ALIGNING;
        ck->start_ns = now_ns();
        ck->align_retries = 0;
        try_align(node_loop(ck->node), ck);
}

int check_new(struct node *n, struct catalog *store, struct exec *ex, bool test_corrupt,
              struct check **ret)
{
        struct check *ck = calloc(1, sizeof(*ck));
        int r;

        if (!ck)
                return -ENOMEM;
        *ck = (struct check){ .node = n, .store = store, .ex = ex, .test_corrupt = test_corrupt };
        r = loop_waker_new(node_loop(n), on_replayed, ck, &ck->waker);
        if (r < 0) {
                free(ck);
                return r;
        }
        if (test_corrupt)
                log_warn("test_check_corrupt", "note=\"TEST ONLY: coordctl check will see one altered record\"");
        *ret = ck;
        return 0;
}

struct check *check_free(struct check *ck)
{
        if (!ck)
                return NULL;
        if (ck->state == CHECK_REPLAYING) {
                atomic_store_explicit(&ck->job->stop, true, memory_order_relaxed);
                pthread_join(ck->thread, NULL);
                ck->job = job_free(ck->job);
        }
        loop_timer_cancel(node_loop(ck->node), ck->retry);
        loop_waker_free(node_loop(ck->node), ck->waker);
        free(ck->waiters);
        free(ck);
        return NULL;
}
