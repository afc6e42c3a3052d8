/* controller-server-subscribe.c -- SUBSCRIBE's reads (coord.proto SubscribeRead): one
 * storage collection's updates from a time on, in batches of whole times.
 *
 * NOTES
 * (26) A subscription read keeps nothing.  Each SubscribeRead is answered at once from
 *      storage_read_updates(), on the loop thread, with the updates of [lo, upto): upto
 *      is the collection's effective upper (a table's: max(its own, the tables'
 *      frontier T), server_effective()) or, when the rows reach max_bytes, the time
 *      after the last one sent -- a time is never split (server_handle_subscribe_read()).
 *      Between two reads nothing holds the collection here: the adapter's catalog hold
 *      (catalog.proto CatalogHold) keeps its bound, so its since, at or below lo, and a
 *      read with lo below the since is refused (55000) rather than answered with
 *      collapsed history.  Replies go through the output gate (16) like a peek's.
 *      A time whose rows pass max_bytes (a snapshot) is split at a row (`partial`),
 *      and the next read resumes after that row (sub_window()): the message and the
 *      adapter's memory stay about max_bytes, while the read itself still collects
 *      that whole time here, once per batch -- so a snapshot larger than
 *      --subscribe-snapshot-max-mb fails with 54000 (sub_snapshot_max()) rather than
 *      hold the loop for a whole snapshot's read per batch.
 */
#include "controller-server-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "util.h"

struct sub_upd {
        uint8_t *row;
        size_t len;
        uint64_t time;
        int64_t diff;
};

struct sub_collect {
        struct sub_upd *v;
        size_t n, cap;
        uint64_t lo;            /* snapshot: times below lo are reported at lo */
        bool snapshot;
        size_t bytes, max_bytes;
        uint64_t full_at;       /* the time at which bytes reached max_bytes; 0: not yet */
        uint64_t stopped_at;    /* the first time not taken; 0: none */
};

#define SUB_STOP (-ECHILD)      /* the callback's "enough": not an error */

static int sub_add(const void *row, size_t len, uint64_t time, int64_t diff, void *userdata)
{
        struct sub_collect *c = userdata;
        struct sub_upd *u;

        if (c->snapshot && time < c->lo)
                time = c->lo;
        if (c->full_at && time > c->full_at) {
                c->stopped_at = time;
                return SUB_STOP;
        }
        if (c->n == c->cap) {
                size_t cap = c->cap ? c->cap * 2 : 64;
                struct sub_upd *v = realloc(c->v, cap * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                c->v = v;
                c->cap = cap;
        }
        u = &c->v[c->n];
        u->row = malloc(len ? len : 1);
        if (!u->row)
                return -ENOMEM;
        if (len)
                memcpy(u->row, row, len);
        u->len = len;
        u->time = time;
        u->diff = diff;
        c->n++;
        c->bytes += len + 16;
        if (!c->full_at && c->bytes >= c->max_bytes)
                c->full_at = time;
        return 0;
}

static int sub_cmp(const void *x, const void *y)
{
        const struct sub_upd *a = x, *b = y;

        if (a->time != b->time)
                return a->time < b->time ? -1 : 1;
        return row_bytes_cmp(a->row, a->len, b->row, b->len);
}

static void sub_collect_done(struct sub_collect *c)
{
        for (size_t i = 0; i < c->n; i++)
                free(c->v[i].row);
        free(c->v);
}

/* Sort by (time, row), sum equal ones, drop zeros: n in place. */
static size_t sub_consolidate(struct sub_collect *c)
{
        size_t k = 0;

        if (c->n)
                qsort(c->v, c->n, sizeof(*c->v), sub_cmp);
        for (size_t i = 0; i < c->n; i++) {
                if (k && c->v[k - 1].time == c->v[i].time &&
                    row_bytes_cmp(c->v[k - 1].row, c->v[k - 1].len, c->v[i].row, c->v[i].len) == 0) {
                        c->v[k - 1].diff += c->v[i].diff;
                        free(c->v[i].row);
                        continue;
                }
                if (k && c->v[k - 1].diff == 0) {
                        free(c->v[k - 1].row);
                        k--;
                }
                c->v[k++] = c->v[i];
        }
        if (k && c->v[k - 1].diff == 0) {
                free(c->v[k - 1].row);
                k--;
        }
        c->n = k;
        return k;
}

/* (26) The rows of c to send: from after the resume point (time lo, row after) on, until
 * they reach max_bytes -- inside a time too (*partial): [*first, *end). */
static void sub_window(const struct sub_collect *c, const Coord__SubscribeRead *m, size_t *first,
                       size_t *end, uint64_t *upto, bool *partial)
{
        size_t i = 0, bytes = 0;

        if (m->resume)
                while (i < c->n && (c->v[i].time < m->lo ||
                                    (c->v[i].time == m->lo &&
                                     row_bytes_cmp(c->v[i].row, c->v[i].len, m->after_row.data,
                                                   m->after_row.len) <= 0)))
                        i++;
        *first = i;
        for (; i < c->n && bytes < c->max_bytes; i++)
                bytes += c->v[i].len + 16;
        *end = i;
        *partial = false;
        if (i < c->n && i > *first) {
                if (c->v[i].time == c->v[i - 1].time) {
                        *partial = true;
                        *upto = c->v[i - 1].time;
                } else {
                        *upto = c->v[i].time;
                }
        }
}

static int sub_reply(struct cserver *s, node_peer_t from, uint64_t rid, struct sub_collect *c,
                     const Coord__SubscribeRead *m, uint64_t upto, uint64_t since)
{
        Coord__SubscribeBatch b = COORD__SUBSCRIBE_BATCH__INIT;
        size_t first = 0, end = 0, n;
        bool partial = false;
        int r;

        sub_window(c, m, &first, &end, &upto, &partial);
        n = end - first;

        b.rows = calloc(n ? n : 1, sizeof(*b.rows));
        b.times = calloc(n ? n : 1, sizeof(*b.times));
        b.diffs = calloc(n ? n : 1, sizeof(*b.diffs));
        if (!b.rows || !b.times || !b.diffs) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < n; i++) {
                const struct sub_upd *u = &c->v[first + i];

                b.rows[i] = (ProtobufCBinaryData){ .len = u->len, .data = u->row };
                b.times[i] = u->time;
                b.diffs[i] = u->diff;
        }
        b.n_rows = b.n_times = b.n_diffs = n;
        b.upto = upto;
        b.since = since;
        b.partial = partial;
        r = server_out_send(s, from, COORD__MSG_TYPE__MSG_SUBSCRIBE_BATCH, rid, &b.base);
out:
        free(b.rows);
        free(b.times);
        free(b.diffs);
        return r;
}

/* (26) The most bytes a snapshot may collect. */
static size_t sub_snapshot_max(const struct cserver *s)
{
        uint64_t mb = s->cfg.subscribe_snapshot_max_mb ? s->cfg.subscribe_snapshot_max_mb
                                                       : CSERVER_SUBSCRIBE_SNAPSHOT_DEFAULT_MB;

        return (size_t)(mb << 20);
}

/* (26) */
void server_handle_subscribe_read(struct cserver *s, node_peer_t from, const Coord__Envelope *env)
{
        Coord__SubscribeRead *m;
        struct sub_collect c = { .max_bytes = 256u << 10 };
        struct storage_info info;
        struct row_error e;
        uint64_t upper, hi, upto;
        int r;

        m = coord__subscribe_read__unpack(NULL, env->payload.len, env->payload.data);
        if (!m) {
                server_reply_malformed(s, from, env);
                return;
        }
        s->subscribe_reads++;
        if (!s->st) {
                r = server_storage_unavailable(&e);
                goto fail;
        }
        r = storage_get_info(s->st, m->gid, &info);
        if (r == -ENOENT) {
                r = row_error_set(&e, -ENOENT, "42P01", "collection %llu does not exist",
                                  (unsigned long long)m->gid);
                goto fail;
        }
        if (r < 0) {
                r = server_storage_failure(s, &e, r, "reading a collection's frontiers");
                goto fail;
        }
        if (m->lo < info.frontiers.since) {
                r = row_error_set(&e, -EDOM, "55000", "cannot read the changes of collection %llu "
                                  "from %llu: its since is %llu", (unsigned long long)m->gid,
                                  (unsigned long long)m->lo, (unsigned long long)info.frontiers.since);
                goto fail;
        }
        upper = info.frontiers.upper;
        hi = upper;
        server_effective(&info.frontiers, info.kind, server_tables_frontier(s));
        upto = info.frontiers.upper;
        if (m->lo >= upto) {
                /* Nothing final from lo on yet (a snapshot at lo is not final either). */
                r = sub_reply(s, from, env->request_id, &c, m, m->lo, info.frontiers.since);
                goto out;
        }
        c.lo = m->lo;
        c.snapshot = m->snapshot;
        if (m->max_bytes)
                c.max_bytes = m->max_bytes;
        if (hi > m->lo || m->snapshot) {
                /* A table's stored upper may be below lo (and T above): nothing of
                 * [stored upper, T) is stored, it holds no update. */
                r = storage_read_updates(s->st, m->gid, m->snapshot ? 0 : m->lo, hi, sub_add, &c);
                if (r == SUB_STOP) {
                        upto = c.stopped_at;
                        r = 0;
                }
                if (r < 0) {
                        r = server_storage_failure(s, &e, r, "reading a collection's updates");
                        goto fail;
                }
        }
        if (c.snapshot && c.bytes > sub_snapshot_max(s)) {
                r = row_error_set(&e, -E2BIG, "54000", "the snapshot of collection %llu is over "
                                  "%llu MB, more than a SUBSCRIBE reads (coord-controller "
                                  "--subscribe-snapshot-max-mb)", (unsigned long long)m->gid,
                                  (unsigned long long)(sub_snapshot_max(s) >> 20));
                goto fail;
        }
        sub_consolidate(&c);
        r = sub_reply(s, from, env->request_id, &c, m, upto, info.frontiers.since);
        goto out;
fail:
        server_reply_error(s, from, env->request_id, &e);
        r = 0;
out:
        if (r < 0)
                log_warn_errno(r, "subscribe_read_reply_failed", "gid=%llu",
                               (unsigned long long)m->gid);
        sub_collect_done(&c);
        coord__subscribe_read__free_unpacked(m, NULL);
}
