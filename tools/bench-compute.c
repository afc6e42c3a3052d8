/* bench-compute -- the compute milestone's figures (issue 4), through libpq against
 * running daemons.
 *
 *   bench-compute --conninfo 'host=127.0.0.1 port=6875 user=coord dbname=coord'
 *                 [--duration-s S] [--clients N] [--batch N] [--join-keys N]
 *                 [--hydrate-rows N] [--load-batch N] [--read-rows N] [--reads N]
 *                 [--lookup-rows N,N...] [--poll-timeout-s S]
 *                 [--only throughput,hydrate,reads,lookups] [--quick]
 *
 * 1. Updates/s through a materialized view.  --clients clients send multi-row INSERTs of
 *    --batch rows for --duration-s seconds; then the bench polls the view at the current
 *    time until it reflects every acknowledged row.  updates/s = rows / (load + catch-up).
 *    Three targets, each on tables of its own:
 *      base: a table with nothing depending on it (the insert path alone);
 *      agg:  CREATE MATERIALIZED VIEW agg AS SELECT k % 100 AS g, count(*), sum(v),
 *            min(v), max(v) FROM f WHERE v > 10 GROUP BY k % 100
 *            (v uniform in 0..99, so 89% of rows pass; polled with SELECT sum(count) FROM agg);
 *      join: CREATE MATERIALIZED VIEW j AS SELECT l.k, a, b FROM l JOIN r ON l.k = r.k
 *            (r preloaded with --join-keys keys, each l row matches one; polled with
 *            SELECT count(*) FROM j).
 * 2. Hydration: --hydrate-rows rows loaded into big by --clients clients in INSERTs of
 *    --load-batch rows (load time reported), then CREATE MATERIALIZED VIEW h AS SELECT
 *    k % 1000 AS g, count(*) FROM big GROUP BY k % 1000 timed until SELECT sum(count)
 *    FROM h equals the row count.
 * 3. Read latency, one client, --reads reads of SELECT * FROM X WHERE k = 42 (after 10%
 *    as many warm-up reads) where X, each holding --read-rows rows, is: a table without
 *    an index (reads the storage collection); a table with CREATE DEFAULT INDEX (reads the
 *    arrangement); a view over the first table with a default index; a materialized view
 *    of the same SQL; a table with an index on (k) alone.
 * 4. Keyed lookups: for each --lookup-rows size, --reads reads of one random key of a
 *    table of that many rows with an index on (k), 3 s after the index held every row;
 *    then with a DEFAULT INDEX created before the index on (k) (section_lookups()).
 *
 * Prints raw lines as it goes, then a markdown table.  Asserts nothing about speed; exits
 * 1 when a statement failed or a poll timed out (that figure reads "failed").
 * tools/coord bench compute runs it on a fresh instance.
 */
#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf.h"
#include "util.h"

static char *conninfo;
static uint64_t poll_timeout_s = 600;

/* ---- helpers ---------------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return x < y ? -1 : x > y;
}

static double pct_us(const uint64_t *v, size_t n, double p)
{
        size_t i;

        if (n == 0)
                return 0;
        i = (size_t)(p * (double)(n - 1) + 0.5);
        return (double)v[i] / 1000.0;
}

static double secs_since(uint64_t t0) { return (double)(now_ns() - t0) / 1e9; }

static void sleep_ms(unsigned ms)
{
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

static PGconn *connect_db(void)
{
        PGconn *c = PQconnectdb(conninfo);

        if (PQstatus(c) != CONNECTION_OK) {
                fprintf(stderr, "bench-compute: connect: %s", PQerrorMessage(c));
                PQfinish(c);
                return NULL;
        }
        return c;
}

/* Run sql and wait at most timeout_ms for its result (cancelling after that).  The
 * result, or NULL on a failed statement or a timeout (reported on stderr). */
static PGresult *query(PGconn *c, const char *sql, uint64_t timeout_ms)
{
        uint64_t deadline = now_ms() + timeout_ms;
        PGresult *r, *last = NULL;
        bool failed = false;

        if (!PQsendQuery(c, sql)) {
                fprintf(stderr, "bench-compute: %.120s: %s", sql, PQerrorMessage(c));
                return NULL;
        }
        for (;;) {
                while (PQisBusy(c)) {
                        struct pollfd p = { .fd = PQsocket(c), .events = POLLIN };
                        uint64_t now = now_ms();
                        if (now >= deadline) {
                                PGcancel *cn = PQgetCancel(c);
                                char e[256];
                                if (cn) {
                                        PQcancel(cn, e, sizeof(e));
                                        PQfreeCancel(cn);
                                }
                                fprintf(stderr, "bench-compute: %.120s: no answer after %" PRIu64
                                        " ms, cancelled\n", sql, timeout_ms);
                                deadline = UINT64_MAX;     /* now wait for the cancel */
                                failed = true;
                                continue;
                        }
                        if (poll(&p, 1, (int)(deadline - now > 1000 ? 1000 : deadline - now)) < 0 &&
                            errno != EINTR)
                                break;
                        if (!PQconsumeInput(c)) {
                                fprintf(stderr, "bench-compute: %.120s: %s", sql, PQerrorMessage(c));
                                PQclear(last);
                                return NULL;
                        }
                }
                r = PQgetResult(c);
                if (!r)
                        break;
                if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
                        if (!failed)
                                fprintf(stderr, "bench-compute: %.120s: %s", sql, PQresultErrorMessage(r));
                        failed = true;
                }
                PQclear(last);
                last = r;
        }
        if (failed) {
                PQclear(last);
                return NULL;
        }
        return last;
}

static bool run(PGconn *c, const char *sql)
{
        PGresult *r = query(c, sql, poll_timeout_s * 1000);

        PQclear(r);
        return r != NULL;
}

/* The first column of the first row as an integer (NULL counts as 0).  False on error. */
static bool query_i64(PGconn *c, const char *sql, int64_t *out, uint64_t timeout_ms)
{
        PGresult *r = query(c, sql, timeout_ms);
        bool good = r && PQntuples(r) >= 1 && PQnfields(r) >= 1;

        if (good)
                *out = PQgetisnull(r, 0, 0) ? 0 : strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        else if (r)
                fprintf(stderr, "bench-compute: %s: no rows\n", sql);
        PQclear(r);
        return good;
}

/* Poll sql until it returns `want`, at most poll_timeout_s from t0.  Returns the
 * seconds from t0 to the answer that matched, or -1. */
static double poll_until(PGconn *c, const char *sql, int64_t want, uint64_t t0, unsigned *polls)
{
        uint64_t deadline = t0 + poll_timeout_s * 1000000000ull;
        int64_t got = -1;

        *polls = 0;
        while (now_ns() < deadline) {
                uint64_t left_ms = (deadline - now_ns()) / 1000000 + 1;
                if (!query_i64(c, sql, &got, left_ms))
                        return -1;
                ++*polls;
                if (got == want)
                        return secs_since(t0);
                if (got > want) {
                        fprintf(stderr, "bench-compute: %s = %" PRId64 ", more than the %" PRId64
                                " rows acknowledged\n", sql, got, want);
                        return -1;
                }
                sleep_ms(2);
        }
        fprintf(stderr, "bench-compute: %s still %" PRId64 " (want %" PRId64 ") after %" PRIu64 " s\n",
                sql, got, want, poll_timeout_s);
        return -1;
}

static uint64_t xorshift(uint64_t *s)
{
        uint64_t x = *s;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return *s = x;
}

/* ---- loaders ---------------------------------------------------------------------- */

enum gen {
        GEN_FV,         /* (k random 0..99999, v random 0..99): f and base */
        GEN_L,          /* (k random 0..join_keys-1, a = sequence): l */
        GEN_SEQ,        /* (k = first + i, v = (first + i) % 997): big, r, read tables */
};

struct loader {
        pthread_t th;
        const char *table;
        enum gen gen;
        uint64_t seed;
        uint64_t batch;
        uint64_t deadline_ns;   /* timed load: stop at this time */
        uint64_t first, count;  /* counted load: rows first .. first+count-1 (GEN_SEQ) */
        uint64_t keys;          /* GEN_L */
        uint64_t rows, passing; /* acknowledged rows; those with v > 10 */
        uint64_t *lat;          /* per-INSERT latency (timed loads) */
        size_t nlat, caplat;
        bool failed;
};

static void *loader_main(void *arg)
{
        struct loader *w = arg;
        PGconn *c = connect_db();
        size_t cap = 64 + w->batch * 48;
        char *q = malloc(cap);
        uint64_t seq = 0;

        if (!c || !q) {
                w->failed = true;
                goto out;
        }
        for (;;) {
                uint64_t n = w->batch, pass = 0, t0;
                size_t len;
                if (w->deadline_ns) {
                        if (now_ns() >= w->deadline_ns)
                                break;
                } else {
                        if (w->rows >= w->count)
                                break;
                        if (n > w->count - w->rows)
                                n = w->count - w->rows;
                }
                len = (size_t)snprintf(q, cap, "INSERT INTO %s VALUES ", w->table);
                for (uint64_t i = 0; i < n; i++) {
                        uint64_t k, v;
                        switch (w->gen) {
                        case GEN_FV:
                                k = xorshift(&w->seed) % 100000;
                                v = xorshift(&w->seed) % 100;
                                pass += v > 10;
                                break;
                        case GEN_L:
                                k = xorshift(&w->seed) % w->keys;
                                v = seq++;
                                break;
                        default:
                                k = w->first + w->rows + i;
                                v = k % 997;
                                break;
                        }
                        len += (size_t)snprintf(q + len, cap - len, "%s(%" PRIu64 ",%" PRIu64 ")",
                                                i ? "," : "", k, v);
                }
                t0 = now_ns();
                if (!run(c, q)) {
                        w->failed = true;
                        break;
                }
                if (w->deadline_ns) {
                        if (w->nlat == w->caplat) {
                                w->caplat = w->caplat ? 2 * w->caplat : 1024;
                                w->lat = realloc(w->lat, w->caplat * sizeof(*w->lat));
                                if (!w->lat) {
                                        w->failed = true;
                                        break;
                                }
                        }
                        w->lat[w->nlat++] = now_ns() - t0;
                }
                w->rows += n;
                w->passing += pass;
        }
out:
        free(q);
        PQfinish(c);
        return NULL;
}

struct load_result {
        uint64_t rows, passing;
        double secs;
        double p50_us, p99_us;  /* per-INSERT latency (timed loads) */
        bool failed;
};

/* `clients` loaders into table: for `seconds` (timed) or `rows` rows in total (counted,
 * GEN_SEQ, disjoint key ranges starting at 0). */
static struct load_result load(const char *table, enum gen gen, uint64_t clients, uint64_t batch,
                               uint64_t seconds, uint64_t rows, uint64_t keys)
{
        struct loader *w = calloc(clients, sizeof(*w));
        struct load_result res = { 0 };
        uint64_t t0 = now_ns(), per = rows / clients, nlat = 0, *lat;

        if (!w) {
                res.failed = true;
                return res;
        }
        for (uint64_t i = 0; i < clients; i++) {
                w[i] = (struct loader){ .table = table, .gen = gen, .batch = batch, .keys = keys,
                                        .seed = 0x9E3779B97F4A7C15ull * (i + 1) };
                if (seconds)
                        w[i].deadline_ns = t0 + seconds * 1000000000ull;
                else {
                        w[i].first = i * per;
                        w[i].count = i + 1 == clients ? rows - i * per : per;
                }
                pthread_create(&w[i].th, NULL, loader_main, &w[i]);
        }
        for (uint64_t i = 0; i < clients; i++) {
                pthread_join(w[i].th, NULL);
                res.rows += w[i].rows;
                res.passing += w[i].passing;
                res.failed |= w[i].failed;
                nlat += w[i].nlat;
        }
        res.secs = secs_since(t0);
        lat = nlat ? malloc(nlat * sizeof(*lat)) : NULL;
        if (lat) {
                size_t o = 0;
                for (uint64_t i = 0; i < clients; i++) {
                        memcpy(lat + o, w[i].lat, w[i].nlat * sizeof(*lat));
                        o += w[i].nlat;
                }
                qsort(lat, nlat, sizeof(*lat), cmp_u64);
                res.p50_us = pct_us(lat, nlat, 0.50);
                res.p99_us = pct_us(lat, nlat, 0.99);
                free(lat);
        }
        for (uint64_t i = 0; i < clients; i++)
                free(w[i].lat);
        free(w);
        return res;
}

/* ---- the figures ------------------------------------------------------------------ */

#define MAX_ROWS 16
static struct {
        char figure[96], value[160], detail[240];
} out_rows[MAX_ROWS];
static int n_out;
static bool any_failed;

static void add_row(const char *figure, const char *value, const char *detail)
{
        if (n_out == MAX_ROWS)
                return;
        snprintf(out_rows[n_out].figure, sizeof(out_rows[n_out].figure), "%s", figure);
        snprintf(out_rows[n_out].value, sizeof(out_rows[n_out].value), "%s", value);
        snprintf(out_rows[n_out].detail, sizeof(out_rows[n_out].detail), "%s", detail);
        n_out++;
}

static void failed_row(const char *figure, const char *why)
{
        any_failed = true;
        add_row(figure, "**failed**", why);
}

/* 1. Updates/s: timed load into `table`, then poll until `poll_sql` reflects it. */
static void throughput(PGconn *c, const char *label, const char *table, enum gen gen,
                       const char *poll_sql, bool want_passing, uint64_t clients, uint64_t batch,
                       uint64_t seconds, uint64_t keys)
{
        struct load_result lr = load(table, gen, clients, batch, seconds, 0, keys);
        uint64_t t_stop = now_ns();
        char v[160], d[240];
        double catchup = 0, read_s = 0;
        unsigned polls = 0;

        if (lr.failed) {
                failed_row(label, "an INSERT failed (see stderr)");
                return;
        }
        printf("%-5s load: %" PRIu64 " rows in %.2f s = %.0f rows/s acknowledged; INSERT of %" PRIu64
               " rows p50 %.0f us p99 %.0f us\n", label, lr.rows, lr.secs, (double)lr.rows / lr.secs,
               batch, lr.p50_us, lr.p99_us);
        if (poll_sql) {
                int64_t want = (int64_t)(want_passing ? lr.passing : lr.rows);
                catchup = poll_until(c, poll_sql, want, t_stop, &polls);
                if (catchup < 0) {
                        snprintf(d, sizeof(d), "%.0f rows/s acknowledged; view did not catch up",
                                 (double)lr.rows / lr.secs);
                        failed_row(label, d);
                        return;
                }
                /* The poll reads the whole view: time one more read, to tell its own cost
                 * from the view's lag. */
                {
                        uint64_t t1 = now_ns();
                        int64_t again;
                        if (query_i64(c, poll_sql, &again, poll_timeout_s * 1000))
                                read_s = secs_since(t1);
                }
                printf("%-5s catch-up: %.3f s (%u polls of `%s` until %" PRId64 "; the same read "
                       "afterwards %.3f s)\n", label, catchup, polls, poll_sql, want, read_s);
        }
        printf("%-5s updates/s end to end: %.0f\n", label, (double)lr.rows / (lr.secs + catchup));
        snprintf(v, sizeof(v), "%.0f updates/s", (double)lr.rows / (lr.secs + catchup));
        snprintf(d, sizeof(d), "%.0f rows/s acknowledged (%" PRIu64 " rows in %.2f s), catch-up %.3f s "
                 "(of which the poll's read ~%.3f s); INSERT p50 %.1f ms p99 %.1f ms",
                 (double)lr.rows / lr.secs, lr.rows, lr.secs, catchup, read_s, lr.p50_us / 1000,
                 lr.p99_us / 1000);
        add_row(label, v, d);
}

static void section_throughput(PGconn *c, uint64_t clients, uint64_t batch, uint64_t seconds,
                               uint64_t keys)
{
        char fig[96];
        struct load_result lr;

        printf("## updates/s: %" PRIu64 " clients, INSERTs of %" PRIu64 " rows, %" PRIu64 " s each\n",
               clients, batch, seconds);
        snprintf(fig, sizeof(fig), "table alone (no dependents)");
        if (!run(c, "CREATE TABLE base (k int, v int)"))
                failed_row(fig, "CREATE TABLE failed");
        else
                throughput(c, fig, "base", GEN_FV, NULL, false, clients, batch, seconds, 0);

        snprintf(fig, sizeof(fig), "filter+aggregate MV `agg`");
        if (!run(c, "CREATE TABLE f (k int, v int)") ||
            !run(c, "CREATE MATERIALIZED VIEW agg AS SELECT k % 100 AS g, count(*), sum(v), min(v), "
                    "max(v) FROM f WHERE v > 10 GROUP BY k % 100"))
                failed_row(fig, "CREATE failed (see stderr)");
        else
                throughput(c, fig, "f", GEN_FV, "SELECT sum(count) FROM agg", true, clients, batch,
                           seconds, 0);

        snprintf(fig, sizeof(fig), "2-way join MV `j` (r: %" PRIu64 " keys)", keys);
        if (!run(c, "CREATE TABLE l (k int, a int)") || !run(c, "CREATE TABLE r (k int, b int)")) {
                failed_row(fig, "CREATE TABLE failed");
                return;
        }
        lr = load("r", GEN_SEQ, 1, 1000, 0, keys, 0);
        if (lr.failed || !run(c, "CREATE MATERIALIZED VIEW j AS SELECT l.k, a, b FROM l JOIN r ON l.k = r.k")) {
                failed_row(fig, "preload or CREATE failed (see stderr)");
                return;
        }
        throughput(c, fig, "l", GEN_L, "SELECT count(*) FROM j", false, clients, batch, seconds, keys);
}

/* A client inserting single rows into `side` while the view hydrates: the longest
 * INSERT shows how long hydration holds the controller's loop. */
struct side_writer {
        pthread_t th;
        volatile bool stop;
        uint64_t n, max_ns;
        bool failed;
};

static void *side_main(void *arg)
{
        struct side_writer *s = arg;
        PGconn *c = connect_db();
        char q[96];

        if (!c) {
                s->failed = true;
                return NULL;
        }
        while (!s->stop) {
                uint64_t t0 = now_ns(), dt;
                snprintf(q, sizeof(q), "INSERT INTO side VALUES (%" PRIu64 ", 0)", s->n);
                if (!run(c, q)) {
                        s->failed = true;
                        break;
                }
                dt = now_ns() - t0;
                if (dt > s->max_ns)
                        s->max_ns = dt;
                s->n++;
        }
        PQfinish(c);
        return NULL;
}

static void section_hydrate(PGconn *c, uint64_t clients, uint64_t rows, uint64_t batch)
{
        struct load_result lr;
        uint64_t t0;
        double created, done;
        unsigned polls;
        char fig[96], v[160], d[240];
        struct side_writer side = { .stop = false };
        bool side_ok = false;

        printf("## hydration: %" PRIu64 " rows, loaded by %" PRIu64 " clients in INSERTs of %" PRIu64
               " rows\n", rows, clients, batch);
        snprintf(fig, sizeof(fig), "load %" PRIu64 " rows into `big`", rows);
        if (!run(c, "CREATE TABLE big (k int, v int)")) {
                failed_row(fig, "CREATE TABLE failed");
                return;
        }
        lr = load("big", GEN_SEQ, clients, batch, 0, rows, 0);
        if (lr.failed) {
                failed_row(fig, "an INSERT failed (see stderr)");
                return;
        }
        printf("load: %" PRIu64 " rows in %.2f s = %.0f rows/s\n", lr.rows, lr.secs, (double)lr.rows / lr.secs);
        snprintf(v, sizeof(v), "%.2f s", lr.secs);
        snprintf(d, sizeof(d), "%.0f rows/s; %" PRIu64 " clients, INSERTs of %" PRIu64 " rows",
                 (double)lr.rows / lr.secs, clients, batch);
        add_row(fig, v, d);

        snprintf(fig, sizeof(fig), "hydrate MV `h` over %" PRIu64 " rows", rows);
        if (!run(c, "CREATE TABLE side (k int, v int)")) {
                failed_row(fig, "CREATE TABLE side failed");
                return;
        }
        side_ok = pthread_create(&side.th, NULL, side_main, &side) == 0;
        sleep_ms(200);          /* the side writer's steady state before the CREATE */
        t0 = now_ns();
        if (!run(c, "CREATE MATERIALIZED VIEW h AS SELECT k % 1000 AS g, count(*) FROM big GROUP BY k % 1000")) {
                failed_row(fig, "CREATE MATERIALIZED VIEW failed (see stderr)");
                return;
        }
        created = secs_since(t0);
        done = poll_until(c, "SELECT sum(count) FROM h", (int64_t)rows, t0, &polls);
        if (side_ok) {
                sleep_ms(200);
                side.stop = true;
                pthread_join(side.th, NULL);
                printf("hydrate: a single-row INSERT into another table during it took at most %.1f ms "
                       "(%" PRIu64 " INSERTs)\n", (double)side.max_ns / 1e6, side.n);
        }
        if (done < 0) {
                failed_row(fig, "view did not reach the row count");
                return;
        }
        printf("hydrate: CREATE returned after %.3f s; SELECT sum(count) FROM h = %" PRIu64
               " after %.3f s (%u polls)\n", created, rows, done, polls);
        snprintf(v, sizeof(v), "%.2f s", done);
        snprintf(d, sizeof(d), "CREATE returned after %.3f s; %.0f rows/s hydrated; a concurrent "
                 "1-row INSERT elsewhere took up to %.0f ms", created, (double)rows / done,
                 (double)side.max_ns / 1e6);
        add_row(fig, v, d);
}

static bool read_latency(PGconn *c, const char *label, const char *obj, uint64_t reads)
{
        uint64_t *lat = calloc(reads, sizeof(*lat)), warm = reads / 10 + 1, t0;
        char q[128], v[160], d[200];
        PGresult *r;

        snprintf(q, sizeof(q), "SELECT * FROM %s WHERE k = 42", obj);
        for (uint64_t i = 0; lat && i < warm + reads; i++) {
                t0 = now_ns();
                r = query(c, q, poll_timeout_s * 1000);
                if (i >= warm)
                        lat[i - warm] = now_ns() - t0;
                if (!r || PQntuples(r) != 1) {
                        if (r)
                                fprintf(stderr, "bench-compute: %s: %d rows, want 1\n", q, PQntuples(r));
                        PQclear(r);
                        free(lat);
                        failed_row(label, "a read failed (see stderr)");
                        return false;
                }
                PQclear(r);
        }
        if (!lat)
                return false;
        qsort(lat, reads, sizeof(*lat), cmp_u64);
        printf("%-46s p50 %8.1f us  p95 %8.1f us  p99 %8.1f us  max %8.1f us  (n=%" PRIu64 ")\n",
               label, pct_us(lat, reads, 0.50), pct_us(lat, reads, 0.95), pct_us(lat, reads, 0.99),
               (double)lat[reads - 1] / 1000, reads);
        snprintf(v, sizeof(v), "p50 %.0f µs, p95 %.0f µs, p99 %.0f µs", pct_us(lat, reads, 0.50),
                 pct_us(lat, reads, 0.95), pct_us(lat, reads, 0.99));
        snprintf(d, sizeof(d), "`%s`; max %.0f µs", q, (double)lat[reads - 1] / 1000);
        add_row(label, v, d);
        free(lat);
        return true;
}

static void section_reads(PGconn *c, uint64_t rows, uint64_t reads)
{
        static const struct {
                const char *label, *obj, *count_sql;
        } targets[] = {
                { "read: table, no index (storage)", "t", NULL },
                { "read: table with DEFAULT INDEX (arrangement)", "ti", "SELECT count(*) FROM ti" },
                { "read: view with DEFAULT INDEX (arrangement)", "tv", "SELECT count(*) FROM tv" },
                { "read: materialized view (storage)", "tm", "SELECT count(*) FROM tm" },
                { "read: table with INDEX ON (k) (arrangement)", "tk", "SELECT count(*) FROM tk" },
        };
        struct load_result lr;
        unsigned polls;

        printf("## read latency: %" PRIu64 " rows each, %" PRIu64 " reads, 1 client\n", rows, reads);
        if (!run(c, "CREATE TABLE t (k int, v int)") || !run(c, "CREATE TABLE ti (k int, v int)") ||
            !run(c, "CREATE TABLE tk (k int, v int)")) {
                failed_row("read latency", "CREATE TABLE failed");
                return;
        }
        lr = load("t", GEN_SEQ, 1, 1000, 0, rows, 0);
        if (!lr.failed)
                lr = load("ti", GEN_SEQ, 1, 1000, 0, rows, 0);
        if (!lr.failed)
                lr = load("tk", GEN_SEQ, 1, 1000, 0, rows, 0);
        if (lr.failed) {
                failed_row("read latency", "loading t, ti or tk failed");
                return;
        }
        /* Each statement may fail on its own; the rows keep the order of targets[]. */
        const char *why[ELEMENTSOF(targets)] = { NULL };
        if (!run(c, "CREATE DEFAULT INDEX ON ti"))
                why[1] = "CREATE DEFAULT INDEX failed (see stderr)";
        if (!run(c, "CREATE VIEW tv AS SELECT k, v + 1 AS w FROM t") || !run(c, "CREATE DEFAULT INDEX ON tv"))
                why[2] = "CREATE VIEW / INDEX failed (see stderr)";
        if (!run(c, "CREATE MATERIALIZED VIEW tm AS SELECT k, v + 1 AS w FROM t"))
                why[3] = "CREATE MATERIALIZED VIEW failed (see stderr)";
        if (!run(c, "CREATE INDEX tk_k ON tk (k)"))
                why[4] = "CREATE INDEX failed (see stderr)";
        /* Wait until each holds every row (the table does: its INSERTs were acknowledged). */
        for (size_t i = 0; i < ELEMENTSOF(targets); i++)
                if (!why[i] && targets[i].count_sql &&
                    poll_until(c, targets[i].count_sql, (int64_t)rows, now_ns(), &polls) < 0)
                        why[i] = "never held every row (see stderr)";
        for (size_t i = 0; i < ELEMENTSOF(targets); i++)
                if (why[i])
                        failed_row(targets[i].label, why[i]);
                else
                        read_latency(c, targets[i].label, targets[i].obj, reads);
}

/* `reads` timed reads of SELECT * FROM lk WHERE k = <a random key below n>, each
 * answering its one row: a figure row under label. */
static void lookup_reads(PGconn *c, const char *label, uint64_t n, uint64_t reads, unsigned *seed)
{
        uint64_t *lat, t0;
        char q[128], v[160], d[200];
        bool good = true;

        /* An arrangement folds updates into its keyed base only once its since passes
         * them (about a second, the default history); before that a lookup scans the
         * log, all of a fresh index's rows. */
        usleep(3 * 1000 * 1000);
        if (!(lat = calloc(reads, sizeof(*lat))))
                return;
        for (uint64_t i = 0; good && i < reads + reads / 10 + 1; i++) {
                PGresult *r;

                snprintf(q, sizeof(q), "SELECT * FROM lk WHERE k = %u",
                         (unsigned)((uint64_t)rand_r(seed) % n));
                t0 = now_ns();
                r = query(c, q, poll_timeout_s * 1000);
                if (i >= reads / 10 + 1)
                        lat[i - reads / 10 - 1] = now_ns() - t0;
                good = r && PQntuples(r) == 1;
                if (!good)
                        fprintf(stderr, "bench-compute: %s: %d rows, want 1\n", q, r ? PQntuples(r) : -1);
                PQclear(r);
        }
        if (good) {
                qsort(lat, reads, sizeof(*lat), cmp_u64);
                printf("%-56s p50 %8.1f us  p95 %8.1f us  p99 %8.1f us  max %8.1f us  (n=%" PRIu64 ")\n",
                       label, pct_us(lat, reads, 0.50), pct_us(lat, reads, 0.95),
                       pct_us(lat, reads, 0.99), (double)lat[reads - 1] / 1000, reads);
                snprintf(v, sizeof(v), "p50 %.0f µs, p95 %.0f µs, p99 %.0f µs", pct_us(lat, reads, 0.50),
                         pct_us(lat, reads, 0.95), pct_us(lat, reads, 0.99));
                snprintf(d, sizeof(d), "`SELECT * FROM lk WHERE k = <random>`; max %.0f µs",
                         (double)lat[reads - 1] / 1000);
                add_row(label, v, d);
        } else {
                failed_row(label, "a lookup failed (see stderr)");
        }
        free(lat);
}

/* 4. Keyed lookups (controller-server-lookup.c note 23): for each size in sizes, a table
 * lk of that many rows (k = 0..n-1) with CREATE INDEX ON lk (k), then `reads` reads of
 * one random key; then the same with a DEFAULT INDEX created before the index on (k),
 * which the read must not go through (adapter-sql-optimize.c, choose_indexes()). */
static void section_lookups(PGconn *c, const char *sizes, uint64_t clients, uint64_t load_batch,
                            uint64_t reads)
{
        unsigned seed = 4242, polls;
        const char *p = sizes;

        printf("## keyed lookups: %s rows, %" PRIu64 " reads each, 1 client\n", sizes, reads);
        while (*p) {
                uint64_t rows = strtoull(p, NULL, 10), t_load;
                char label[96];
                struct load_result lr;

                p += strcspn(p, ",");
                p += *p == ',';
                snprintf(label, sizeof(label), "lookup: INDEX ON (k), %" PRIu64 " rows", rows);
                if (!rows || !run(c, "DROP TABLE IF EXISTS lk") ||
                    !run(c, "CREATE TABLE lk (k int, v int)")) {
                        failed_row(label, "bad size or CREATE TABLE failed");
                        continue;
                }
                t_load = now_ns();
                lr = load("lk", GEN_SEQ, clients, load_batch, 0, rows, 0);
                if (lr.failed || !run(c, "CREATE INDEX lk_k ON lk (k)") ||
                    poll_until(c, "SELECT count(*) FROM lk", (int64_t)(rows / clients * clients),
                               now_ns(), &polls) < 0) {
                        failed_row(label, "loading or indexing failed (see stderr)");
                        continue;
                }
                printf("lookup: %" PRIu64 " rows loaded and indexed in %.1f s\n", rows,
                       secs_since(t_load));
                lookup_reads(c, label, rows / clients * clients, reads, &seed);
                snprintf(label, sizeof(label), "lookup: DEFAULT INDEX, then INDEX ON (k), %" PRIu64 " rows",
                         rows);
                if (!run(c, "DROP INDEX lk_k") || !run(c, "CREATE DEFAULT INDEX ON lk") ||
                    !run(c, "CREATE INDEX lk_k ON lk (k)") ||
                    poll_until(c, "SELECT count(*) FROM lk", (int64_t)(rows / clients * clients),
                               now_ns(), &polls) < 0) {
                        failed_row(label, "indexing failed (see stderr)");
                        continue;
                }
                lookup_reads(c, label, rows / clients * clients, reads, &seed);
        }
        (void)!run(c, "DROP TABLE IF EXISTS lk");
}

int main(int argc, char **argv)
{
        uint64_t duration_s = 10, clients = 8, batch = 100, join_keys = 1000, hydrate_rows = 1000000,
                 load_batch = 2000, read_rows = 10000, reads = 2000;
        bool quick = false;
        char *only = NULL, *lookup_rows = NULL;
        const struct conf_option opts[] = {
                { "conninfo", CONF_STR, &conninfo, 0, "libpq connection string" },
                { "duration-s", CONF_U64, &duration_s, 3600, "seconds of load per updates/s figure (default 10)" },
                { "clients", CONF_U64, &clients, 1000, "concurrent inserting clients (default 8)" },
                { "batch", CONF_U64, &batch, 100000, "rows per INSERT during the timed loads (default 100)" },
                { "join-keys", CONF_U64, &join_keys, 100000000, "rows (keys) preloaded into r (default 1000)" },
                { "hydrate-rows", CONF_U64, &hydrate_rows, 1000000000, "rows under the hydrated MV (default 1000000)" },
                { "load-batch", CONF_U64, &load_batch, 100000, "rows per INSERT loading big (default 2000)" },
                { "read-rows", CONF_U64, &read_rows, 100000000, "rows in each read-latency relation (default 10000)" },
                { "reads", CONF_U64, &reads, 100000000, "timed reads per relation (default 2000)" },
                { "poll-timeout-s", CONF_U64, &poll_timeout_s, 86400, "give up waiting for a view after this (default 600)" },
                { "lookup-rows", CONF_STR, &lookup_rows, 0, "comma-separated table sizes for the keyed lookups (default 100000)" },
                { "only", CONF_STR, &only, 0, "comma-separated sections: throughput,hydrate,reads,lookups (default all)" },
                { "quick", CONF_BOOL, &quick, 0, "small sizes for a smoke run (explicit flags still win)" },
        };
        char *args[8], err[256];
        int nargs = 0, r;
        PGconn *c;
        uint64_t t_all;

        /* --quick sets smaller defaults first, so that explicit flags still win. */
        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--quick") == 0 || strcmp(argv[i], "--quick=true") == 0) {
                        duration_s = 1, clients = 4, hydrate_rows = 20000, read_rows = 1000,
                        reads = 200, poll_timeout_s = 60;
                }
        if (argc > 40 || (r = conf_parse(argc, argv, "bench", opts, ELEMENTSOF(opts), args, &nargs,
                                         err, sizeof(err))) < 0 || nargs || !conninfo) {
                fprintf(stderr, "usage: bench-compute --conninfo STR [--duration-s S] [--clients N] "
                                "[--batch N] [--join-keys N] [--hydrate-rows N] [--load-batch N] "
                                "[--read-rows N] [--reads N] [--lookup-rows N,...] [--poll-timeout-s S] "
                                "[--only LIST] [--quick]\n");
                return 64;
        }
        if (r == 1) {
                conf_usage(stdout, opts, ELEMENTSOF(opts));
                return 0;
        }
        if (!clients || !batch || !load_batch || !join_keys || !reads || hydrate_rows < clients ||
            read_rows <= 42) {
                fprintf(stderr, "bench-compute: --clients, --batch, --load-batch, --join-keys, --reads "
                                "must be > 0, --hydrate-rows >= --clients, --read-rows > 42\n");
                return 64;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (!(c = connect_db()))
                return 1;
        t_all = now_ns();
#define WANT(s) (!only || strstr(only, s))
        if (WANT("throughput"))
                section_throughput(c, clients, batch, duration_s, join_keys);
        if (WANT("hydrate"))
                section_hydrate(c, clients, hydrate_rows, load_batch);
        if (WANT("reads"))
                section_reads(c, read_rows, reads);
        if (WANT("lookups"))
                section_lookups(c, lookup_rows ? lookup_rows : quick ? "1000" : "100000", clients,
                                load_batch, reads);

        printf("\nParameters: --clients %" PRIu64 " --batch %" PRIu64 " --duration-s %" PRIu64
               " --join-keys %" PRIu64 " --hydrate-rows %" PRIu64 " --load-batch %" PRIu64
               " --read-rows %" PRIu64 " --reads %" PRIu64 "%s (%.1f s in all)\n\n",
               clients, batch, duration_s, join_keys, hydrate_rows, load_batch, read_rows, reads,
               quick ? " --quick" : "", secs_since(t_all));
        printf("| figure | value | detail |\n|---|---|---|\n");
        for (int i = 0; i < n_out; i++)
                printf("| %s | %s | %s |\n", out_rows[i].figure, out_rows[i].value, out_rows[i].detail);
        PQfinish(c);
        conf_done(opts, ELEMENTSOF(opts));
        return any_failed ? 1 : 0;
}
