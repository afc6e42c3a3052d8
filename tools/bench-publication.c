/* bench-publication -- read protection's publication figures (issue 5; the start of the
 * measurement workflow of issue 6), through libpq and the daemons' status.
 *
 *   bench-publication --conninfo STR --run-dir DIR --collection-count N
 *                     [--active-collections N|all] [--filler-kind indexes|tables]
 *                     [--publication-interval-ms MS] [--observation-seconds S]
 *                     [--warmup-seconds S] [--write-interval-ms MS] [--batch N]
 *                     [--results FILE] [--quick]
 *   bench-publication --report FILE
 *
 * One row = one collection count on one (fresh) instance; tools/coord bench publication
 * loops over --collection-counts, a fresh instance per count, and then prints the
 * report of all rows.
 *
 * The objects ("collections": what holds data and gets a bound):
 *   - N advancing tables t_0 .. t_{N-1} (N = --active-collections, `all` = the count);
 *   - filler up to the count, --filler-kind indexes: one support table and view
 *     (CREATE TABLE support (a int); CREATE VIEW sv AS SELECT a FROM support) and per
 *     filler object CREATE VIEW v_i AS SELECT a FROM sv; CREATE DEFAULT INDEX ON v_i
 *     (so the count holds N tables + (count - N) indexes; plus as many views);
 *     --filler-kind tables: quiet tables f_i, never written.
 *   Created in multi-statement query strings of --batch statements; the setup time is
 *   from the first CREATE to the last acknowledged, then to the follower having
 *   applied the last commit.
 *
 * The load: one client INSERTs one row into the advancing tables round-robin, paced so
 * that each table gets one every --write-interval-ms (default 100); a client that cannot
 * keep up goes as fast as it can (the achieved rate is reported).  After --warmup-seconds
 * (first bounds of the indexes published) the daemons' status is sampled for
 * --observation-seconds (every interval / 10 ms, 10..100 ms):
 *   lifecycle detail: publications, records_total, bytes_total (exact deltas), and per
 *     publication seen last_records, last_bytes, last_touched (max and mean of the
 *     publications seen; a sample seeing two new publications counts only the last);
 *     lag_samples / lag_last_us: each new commit's follower lag (commit notification to
 *     applied), so the window's p50/p99 are of the window's commits only (the daemon's
 *     own lag_p50_us/lag_p99_us are over its last 4096 commits, mostly setup DDL;
 *     reported as "setup lag");
 *   adapter detail: catalog_commits, catalog_syncs (deltas);
 *   /proc/PID/stat of each daemon: CPU time used in the window.
 * Note: a status request makes the follower catch up first (lifecycle_status()), so
 * sampling can shorten a lag it measures, never lengthen it.
 *
 * Output: raw lines, a markdown table row and a CSV line (appended to --results, with a
 * header when the file is new).  --report FILE prints the markdown table of every row
 * in FILE.  Exit 1 when a statement or a status request failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "node.h"
#include "util.h"

static char *conninfo, *run_dir;

static void sleep_ns(uint64_t ns)
{
        struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull) };
        nanosleep(&ts, NULL);
}

static double secs_since(uint64_t t0) { return (double)(now_ns() - t0) / 1e9; }

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return x < y ? -1 : x > y;
}

static uint64_t pct(const uint64_t *v, size_t n, unsigned p)
{
        return n ? v[(n - 1) * p / 100] : 0;
}

static double load1(void)
{
        double l = -1;
        FILE *f = fopen("/proc/loadavg", "r");

        if (f) {
                if (fscanf(f, "%lf", &l) != 1)
                        l = -1;
                fclose(f);
        }
        return l;
}

/* utime + stime of pid, in ms; 0 when unreadable. */
static uint64_t cpu_ms(int pid)
{
        char path[64], buf[1024], *p;
        unsigned long long ut = 0, st = 0;
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        if (!(f = fopen(path, "r")))
                return 0;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        p = strrchr(buf, ')');  /* the command may hold spaces */
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
                return 0;
        return (ut + st) * 1000ull / (unsigned long long)sysconf(_SC_CLK_TCK);
}

static PGconn *connect_db(void)
{
        PGconn *c = PQconnectdb(conninfo);

        if (PQstatus(c) != CONNECTION_OK) {
                fprintf(stderr, "bench-publication: connect: %s", PQerrorMessage(c));
                PQfinish(c);
                return NULL;
        }
        return c;
}

/* Run sql (maybe several statements); false (reported) when any failed. */
static bool run(PGconn *c, const char *sql)
{
        PGresult *r;
        bool ok = PQsendQuery(c, sql);

        if (!ok)
                fprintf(stderr, "bench-publication: %.120s: %s", sql, PQerrorMessage(c));
        while (ok && (r = PQgetResult(c))) {
                if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
                        fprintf(stderr, "bench-publication: %.120s: %s", sql, PQresultErrorMessage(r));
                        ok = false;
                }
                PQclear(r);
        }
        while (!ok && (r = PQgetResult(c)))
                PQclear(r);
        return ok;
}

/* ---- status --------------------------------------------------------------------- */

struct snap {
        bool ok;
        int pid[3];                     /* adapter, lifecycle, controller */
        uint64_t adapter_seq, lifecycle_seq;
        uint64_t commits, syncs;        /* adapter */
        uint64_t publications, pub_errors, records_total, bytes_total;
        uint64_t last_records, last_bytes, last_touched;
        uint64_t lag_samples, lag_last_us, lag_p50_us, lag_p99_us, lag_max_us, reloads;
        uint64_t stall_us[3];
};

static uint64_t detail_u64(const char *detail, const char *key)
{
        size_t kl = strlen(key);

        for (const char *p = detail; p && (p = strstr(p, key)); p += kl)
                if ((p == detail || p[-1] == ' ') && p[kl] == '=')
                        return strtoull(p + kl + 1, NULL, 10);
        return 0;
}

static struct snap snapshot(void)
{
        static const Coord__Role roles[3] = {
                COORD__ROLE__ROLE_ADAPTER, COORD__ROLE__ROLE_LIFECYCLE, COORD__ROLE__ROLE_CONTROLLER,
        };
        struct snap s = { .ok = true };

        for (int i = 0; i < 3; i++) {
                Coord__StatusReply *st = NULL;
                if (node_query_status(run_dir, roles[i], 5000, &st) < 0) {
                        s.ok = false;
                        continue;
                }
                s.pid[i] = st->pid;
                s.stall_us[i] = st->max_stall_us;
                if (i == 0) {
                        s.adapter_seq = st->catalog_seq;
                        s.commits = detail_u64(st->detail, "catalog_commits");
                        s.syncs = detail_u64(st->detail, "catalog_syncs");
                } else if (i == 1) {
                        const char *d = st->detail;
                        s.lifecycle_seq = st->catalog_seq;
                        s.publications = detail_u64(d, "publications");
                        s.pub_errors = detail_u64(d, "publication_errors");
                        s.records_total = detail_u64(d, "records_total");
                        s.bytes_total = detail_u64(d, "bytes_total");
                        s.last_records = detail_u64(d, "last_records");
                        s.last_bytes = detail_u64(d, "last_bytes");
                        s.last_touched = detail_u64(d, "last_touched");
                        s.lag_samples = detail_u64(d, "lag_samples");
                        s.lag_last_us = detail_u64(d, "lag_last_us");
                        s.lag_p50_us = detail_u64(d, "lag_p50_us");
                        s.lag_p99_us = detail_u64(d, "lag_p99_us");
                        s.lag_max_us = detail_u64(d, "lag_max_us");
                        s.reloads = detail_u64(d, "reloads");
                }
                coord__status_reply__free_unpacked(st, NULL);
        }
        return s;
}

/* ---- the writer ----------------------------------------------------------------- */

struct writer {
        pthread_t th;
        uint64_t tables, period_ns;     /* one INSERT per period_ns, round-robin */
        atomic_bool stop;
        atomic_uint_least64_t inserts;
        bool failed;
};

static void *writer_main(void *arg)
{
        struct writer *w = arg;
        PGconn *c = connect_db();
        uint64_t due = now_ns(), k = 0;
        char q[96];

        if (!c) {
                w->failed = true;
                return NULL;
        }
        while (!atomic_load(&w->stop)) {
                uint64_t now = now_ns();
                if (now < due)
                        sleep_ns(due - now);
                else if (now - due > 1000000000ull)
                        due = now;      /* far behind: no burst to catch up */
                due += w->period_ns;
                snprintf(q, sizeof(q), "INSERT INTO t_%" PRIu64 " VALUES (%" PRIu64 ")",
                         k % w->tables, k / w->tables);
                if (!run(c, q)) {
                        w->failed = true;
                        break;
                }
                k++;
                atomic_store(&w->inserts, k);
        }
        PQfinish(c);
        return NULL;
}

/* ---- one row -------------------------------------------------------------------- */

#define CSV_HEADER                                                                              \
        "shape,collections,active,filler,interval_ms,setup_s,setup_applied_s,catalog_items,"   \
        "observe_s,inserts_per_s,table_write_interval_ms,publications,pubs_per_s,"             \
        "records_per_pub,records_per_pub_max,bytes_per_pub,bytes_per_pub_max,bytes_per_s,"     \
        "records_per_s,touched_per_pub,touched_per_pub_max,lag_p50_us,lag_p99_us,lag_n,"       \
        "setup_lag_p50_us,setup_lag_p99_us,commits_per_s,syncs_per_s,cpu_adapter_pct,"         \
        "cpu_lifecycle_pct,cpu_controller_pct,stall_max_us_lifecycle,pub_errors,load1_start,"  \
        "load1_end,nproc"

struct row {
        char shape[16], filler[16];
        uint64_t collections, active, interval_ms;
        double setup_s, setup_applied_s;
        uint64_t catalog_items;
        double observe_s, inserts_per_s, table_write_interval_ms;
        uint64_t publications;
        double pubs_per_s, records_per_pub;
        uint64_t records_per_pub_max;
        double bytes_per_pub;
        uint64_t bytes_per_pub_max;
        double bytes_per_s, records_per_s, touched_per_pub;
        uint64_t touched_per_pub_max, lag_p50_us, lag_p99_us, lag_n, setup_lag_p50_us, setup_lag_p99_us;
        double commits_per_s, syncs_per_s, cpu_pct[3];
        uint64_t stall_max_us_lifecycle, pub_errors;
        double load1_start, load1_end;
        long nproc;
};

static void csv_line(FILE *f, const struct row *r)
{
        fprintf(f, "%s,%" PRIu64 ",%" PRIu64 ",%s,%" PRIu64 ",%.3f,%.3f,%" PRIu64 ",%.2f,%.1f,%.1f,%" PRIu64
                   ",%.3f,%.2f,%" PRIu64 ",%.1f,%" PRIu64 ",%.1f,%.2f,%.1f,%" PRIu64 ",%" PRIu64 ",%" PRIu64
                   ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.2f,%.2f,%.1f,%.1f,%.1f,%" PRIu64 ",%" PRIu64
                   ",%.2f,%.2f,%ld\n",
                r->shape, r->collections, r->active, r->filler, r->interval_ms, r->setup_s,
                r->setup_applied_s, r->catalog_items, r->observe_s, r->inserts_per_s,
                r->table_write_interval_ms, r->publications, r->pubs_per_s, r->records_per_pub,
                r->records_per_pub_max, r->bytes_per_pub, r->bytes_per_pub_max, r->bytes_per_s,
                r->records_per_s, r->touched_per_pub, r->touched_per_pub_max, r->lag_p50_us,
                r->lag_p99_us, r->lag_n, r->setup_lag_p50_us, r->setup_lag_p99_us, r->commits_per_s,
                r->syncs_per_s, r->cpu_pct[0], r->cpu_pct[1], r->cpu_pct[2], r->stall_max_us_lifecycle,
                r->pub_errors, r->load1_start, r->load1_end, r->nproc);
}

static void md_header(void)
{
        printf("| shape | collections | setup | publications/s | records / publication (max) | "
               "bytes / publication (max) | payload | records/s | examined / tick (max) | "
               "follower lag p50 / p99 (n) | catalog commits/s (syncs/s) | lifecycle CPU | "
               "INSERTs/s | load avg |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
}

static void md_row(const struct row *r)
{
        printf("| %s (%" PRIu64 " advancing, filler %s) | %" PRIu64 " | %.2f s (applied %.2f s) | %.2f | "
               "%.1f (%" PRIu64 ") | %.0f (%" PRIu64 ") | %.2f kB/s | %.1f | %.1f (%" PRIu64 ") | "
               "%" PRIu64 " / %" PRIu64 " µs (%" PRIu64 ") | %.2f (%.2f) | %.1f%% | %.0f | %.2f–%.2f |\n",
               r->shape, r->active, r->filler, r->collections, r->setup_s, r->setup_applied_s,
               r->pubs_per_s, r->records_per_pub, r->records_per_pub_max, r->bytes_per_pub,
               r->bytes_per_pub_max, r->bytes_per_s / 1000.0, r->records_per_s, r->touched_per_pub,
               r->touched_per_pub_max, r->lag_p50_us, r->lag_p99_us, r->lag_n, r->commits_per_s,
               r->syncs_per_s, r->cpu_pct[1], r->inserts_per_s, r->load1_start, r->load1_end);
}

/* Create the objects; false on a failed statement. */
static bool setup(PGconn *c, uint64_t count, uint64_t active, bool filler_indexes, uint64_t batch)
{
        size_t cap = 256 + batch * 160, len = 0;
        char *q = malloc(cap);
        uint64_t in_batch = 0;
        bool ok = true;

#define FLUSH()                                                                         \
        do {                                                                            \
                if (in_batch && ok)                                                     \
                        ok = run(c, q);                                                 \
                len = 0, in_batch = 0, q[0] = 0;                                        \
        } while (0)
#define ADD(...)                                                                        \
        do {                                                                            \
                len += (size_t)snprintf(q + len, cap - len, __VA_ARGS__);               \
                if (++in_batch >= batch)                                                \
                        FLUSH();                                                        \
        } while (0)
        if (!q)
                return false;
        q[0] = 0;
        if (filler_indexes && count > active) {
                ADD("CREATE TABLE support (a int);");
                ADD("CREATE VIEW sv AS SELECT a FROM support;");
        }
        for (uint64_t i = 0; i < active; i++)
                ADD("CREATE TABLE t_%" PRIu64 " (a bigint);", i);
        for (uint64_t i = 0; i + active < count && ok; i++)
                if (filler_indexes) {
                        /* a view and its index in the same string */
                        if (in_batch + 2 > batch)
                                FLUSH();
                        len += (size_t)snprintf(q + len, cap - len,
                                                "CREATE VIEW v_%" PRIu64 " AS SELECT a FROM sv;", i);
                        in_batch++;
                        ADD("CREATE DEFAULT INDEX ON v_%" PRIu64 ";", i);
                } else {
                        ADD("CREATE TABLE f_%" PRIu64 " (a bigint);", i);
                }
        FLUSH();
#undef ADD
#undef FLUSH
        free(q);
        return ok;
}

static int run_row(uint64_t count, uint64_t active, bool filler_indexes, uint64_t interval_ms,
                   uint64_t observe_s, uint64_t warmup_s, uint64_t write_interval_ms, uint64_t batch,
                   const char *results)
{
        struct row r = { 0 };
        struct writer w = { 0 };
        struct snap a, b, s, prev;
        uint64_t t0, sample_ns, *lag = NULL, n_lag = 0, cap_lag = 0, seen_pubs = 0, sum_touched = 0,
                 lag_missed = 0, cpu0[3], cpu1[3];
        double window;
        PGconn *c;
        FILE *f;

        r.nproc = sysconf(_SC_NPROCESSORS_ONLN);
        r.load1_start = load1();
        r.collections = count;
        r.active = active;
        r.interval_ms = interval_ms;
        snprintf(r.filler, sizeof(r.filler), "%s", filler_indexes ? "indexes" : "tables");
        snprintf(r.shape, sizeof(r.shape), "%s", active >= count ? "active" : "sparse");
        if (!(c = connect_db()))
                return 1;

        printf("## %" PRIu64 " collections: %" PRIu64 " advancing tables, filler %s; publication every "
               "%" PRIu64 " ms; load average %.2f\n", count, active, r.filler, interval_ms, r.load1_start);
        t0 = now_ns();
        if (!setup(c, count, active, filler_indexes, batch)) {
                PQfinish(c);
                return 1;
        }
        r.setup_s = secs_since(t0);
        /* ...until the follower applied the last commit. */
        for (;;) {
                s = snapshot();
                if (!s.ok) {
                        fprintf(stderr, "bench-publication: status failed\n");
                        return 1;
                }
                if (s.lifecycle_seq >= s.adapter_seq || secs_since(t0) > 600)
                        break;
                sleep_ns(2000000);
        }
        r.setup_applied_s = secs_since(t0);
        r.setup_lag_p50_us = s.lag_p50_us;
        r.setup_lag_p99_us = s.lag_p99_us;
        r.catalog_items = active + (count > active ? (filler_indexes ? 2 * (count - active) + 2 : count - active) : 0);
        printf("setup: %" PRIu64 " catalog items in %.2f s (%.0f items/s); follower applied the last "
               "commit at %.2f s; its lag over the last %" PRIu64 " commits p50 %" PRIu64 " us p99 %"
               PRIu64 " us\n", r.catalog_items, r.setup_s, (double)r.catalog_items / r.setup_s,
               r.setup_applied_s, s.lag_samples < 4096 ? s.lag_samples : 4096, s.lag_p50_us,
               s.lag_p99_us);

        /* The load, a warm-up (the indexes' first bounds), then the window. */
        w.tables = active;
        w.period_ns = write_interval_ms * 1000000ull / (active ? active : 1);
        if (active && pthread_create(&w.th, NULL, writer_main, &w) != 0)
                return 1;
        sleep_ns(warmup_s * 1000000000ull);
        sample_ns = interval_ms * 1000000ull / 10;
        if (sample_ns < 10000000ull)
                sample_ns = 10000000ull;
        if (sample_ns > 100000000ull)
                sample_ns = 100000000ull;
        a = prev = snapshot();
        for (int i = 0; i < 3; i++)
                cpu0[i] = cpu_ms(a.pid[i]);
        uint64_t ins0 = atomic_load(&w.inserts);
        t0 = now_ns();
        while (now_ns() - t0 < observe_s * 1000000000ull && !w.failed) {
                sleep_ns(sample_ns);
                s = snapshot();
                if (!s.ok)
                        continue;
                if (s.lag_samples > prev.lag_samples) {
                        lag_missed += s.lag_samples - prev.lag_samples - 1;
                        if (n_lag == cap_lag) {
                                cap_lag = cap_lag ? 2 * cap_lag : 256;
                                lag = realloc(lag, cap_lag * sizeof(*lag));
                                if (!lag)
                                        return 1;
                        }
                        lag[n_lag++] = s.lag_last_us;
                }
                if (s.publications > prev.publications) {
                        seen_pubs++;
                        sum_touched += s.last_touched;
                        if (s.last_touched > r.touched_per_pub_max)
                                r.touched_per_pub_max = s.last_touched;
                        if (s.last_records > r.records_per_pub_max)
                                r.records_per_pub_max = s.last_records;
                        if (s.last_bytes > r.bytes_per_pub_max)
                                r.bytes_per_pub_max = s.last_bytes;
                }
                prev = s;
        }
        window = secs_since(t0);
        b = snapshot();
        for (int i = 0; i < 3; i++)
                cpu1[i] = cpu_ms(b.pid[i]);
        r.inserts_per_s = (double)(atomic_load(&w.inserts) - ins0) / window;
        atomic_store(&w.stop, true);
        if (active)
                pthread_join(w.th, NULL);
        r.load1_end = load1();
        if (w.failed || !b.ok) {
                fprintf(stderr, "bench-publication: the writer or a status request failed\n");
                PQfinish(c);
                free(lag);
                return 1;
        }
        r.observe_s = window;
        r.table_write_interval_ms = r.inserts_per_s > 0 ? 1000.0 * (double)active / r.inserts_per_s : 0;
        r.publications = b.publications - a.publications;
        r.pubs_per_s = (double)r.publications / window;
        r.records_per_pub = r.publications ? (double)(b.records_total - a.records_total) / (double)r.publications : 0;
        r.bytes_per_pub = r.publications ? (double)(b.bytes_total - a.bytes_total) / (double)r.publications : 0;
        r.bytes_per_s = (double)(b.bytes_total - a.bytes_total) / window;
        r.records_per_s = (double)(b.records_total - a.records_total) / window;
        r.touched_per_pub = seen_pubs ? (double)sum_touched / (double)seen_pubs : 0;
        qsort(lag, n_lag, sizeof(*lag), cmp_u64);
        r.lag_p50_us = pct(lag, n_lag, 50);
        r.lag_p99_us = pct(lag, n_lag, 99);
        r.lag_n = n_lag;
        r.commits_per_s = (double)(b.commits - a.commits) / window;
        r.syncs_per_s = (double)(b.syncs - a.syncs) / window;
        for (int i = 0; i < 3; i++)
                r.cpu_pct[i] = 100.0 * (double)(cpu1[i] - cpu0[i]) / 1000.0 / window;
        r.stall_max_us_lifecycle = b.stall_us[1];
        r.pub_errors = b.pub_errors;
        printf("window %.1f s: %" PRIu64 " INSERTs (%.0f/s; each table every %.0f ms), %" PRIu64
               " publications, %" PRIu64 " records, %" PRIu64 " bytes; %" PRIu64 " commits, %" PRIu64
               " syncs; lag samples %" PRIu64 " (%" PRIu64 " not seen), max %" PRIu64 " us; CPU adapter "
               "%.1f%% lifecycle %.1f%% controller %.1f%%; publication errors %" PRIu64 ", reloads %"
               PRIu64 "; load average %.2f\n",
               window, atomic_load(&w.inserts) - ins0, r.inserts_per_s, r.table_write_interval_ms,
               r.publications, b.records_total - a.records_total, b.bytes_total - a.bytes_total,
               b.commits - a.commits, b.syncs - a.syncs, n_lag, lag_missed,
               n_lag ? lag[n_lag - 1] : 0, r.cpu_pct[0], r.cpu_pct[1], r.cpu_pct[2], b.pub_errors,
               b.reloads, r.load1_end);
        printf("\n");
        md_header();
        md_row(&r);
        printf("\ncsv,%s\ncsv,", CSV_HEADER);
        csv_line(stdout, &r);
        if (results && (f = fopen(results, "a"))) {
                if (ftell(f) == 0)
                        fprintf(f, "%s\n", CSV_HEADER);
                csv_line(f, &r);
                fclose(f);
        }
        free(lag);
        PQfinish(c);
        return r.publications ? 0 : 1;
}

/* ---- the report ------------------------------------------------------------------ */

static int report(const char *path)
{
        FILE *f = fopen(path, "r");
        char line[2048];
        int n = 0;

        if (!f) {
                fprintf(stderr, "bench-publication: %s: %s\n", path, strerror(errno));
                return 1;
        }
        md_header();
        while (fgets(line, sizeof(line), f)) {
                struct row r = { 0 };
                char *save = NULL, *tok[64];
                int k = 0;

                if (strncmp(line, "shape,", 6) == 0)
                        continue;
                for (char *t = strtok_r(line, ",\n", &save); t && k < 64; t = strtok_r(NULL, ",\n", &save))
                        tok[k++] = t;
                if (k < 36)
                        continue;
#define U(i) strtoull(tok[i], NULL, 10)
#define D(i) strtod(tok[i], NULL)
                snprintf(r.shape, sizeof(r.shape), "%s", tok[0]);
                r.collections = U(1), r.active = U(2);
                snprintf(r.filler, sizeof(r.filler), "%s", tok[3]);
                r.interval_ms = U(4), r.setup_s = D(5), r.setup_applied_s = D(6), r.catalog_items = U(7);
                r.observe_s = D(8), r.inserts_per_s = D(9), r.table_write_interval_ms = D(10);
                r.publications = U(11), r.pubs_per_s = D(12), r.records_per_pub = D(13);
                r.records_per_pub_max = U(14), r.bytes_per_pub = D(15), r.bytes_per_pub_max = U(16);
                r.bytes_per_s = D(17), r.records_per_s = D(18), r.touched_per_pub = D(19);
                r.touched_per_pub_max = U(20), r.lag_p50_us = U(21), r.lag_p99_us = U(22), r.lag_n = U(23);
                r.setup_lag_p50_us = U(24), r.setup_lag_p99_us = U(25), r.commits_per_s = D(26);
                r.syncs_per_s = D(27), r.cpu_pct[0] = D(28), r.cpu_pct[1] = D(29), r.cpu_pct[2] = D(30);
                r.stall_max_us_lifecycle = U(31), r.pub_errors = U(32), r.load1_start = D(33);
                r.load1_end = D(34), r.nproc = (long)U(35);
#undef U
#undef D
                md_row(&r);
                n++;
        }
        fclose(f);
        return n ? 0 : 1;
}

int main(int argc, char **argv)
{
        uint64_t count = 1000, interval_ms = 1000, observe_s = 10, warmup_s = 3, write_interval_ms = 100,
                 batch = 200, active = 10;
        char *active_s = NULL, *filler = NULL, *results = NULL, *report_path = NULL;
        bool quick = false;
        const struct conf_option opts[] = {
                { "conninfo", CONF_STR, &conninfo, 0, "libpq connection string" },
                { "run-dir", CONF_STR, &run_dir, 0, "the instance's run directory (daemons' status)" },
                { "collection-count", CONF_U64, &count, 10000000, "collections (tables + indexes) (default 1000)" },
                { "active-collections", CONF_STR, &active_s, 0, "advancing tables, or `all` (default 10)" },
                { "filler-kind", CONF_STR, &filler, 0, "indexes (indexed views over a support view) or tables (default indexes)" },
                { "publication-interval-ms", CONF_U64, &interval_ms, 3600000, "the follower's cadence, as started (default 1000)" },
                { "observation-seconds", CONF_U64, &observe_s, 86400, "the measured window (default 10)" },
                { "warmup-seconds", CONF_U64, &warmup_s, 3600, "load before the window (default 3)" },
                { "write-interval-ms", CONF_U64, &write_interval_ms, 3600000, "each advancing table gets an INSERT this often (default 100)" },
                { "batch", CONF_U64, &batch, 100000, "statements per setup query string (default 200)" },
                { "results", CONF_STR, &results, 0, "append the CSV line to this file" },
                { "report", CONF_STR, &report_path, 0, "print the markdown table of a results file, nothing else" },
                { "quick", CONF_BOOL, &quick, 0, "a smoke run: 100 collections, 2 s window, 1 s warm-up" },
        };
        char *args[8], err[256];
        int nargs = 0, r, ex;

        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--quick") == 0 || strcmp(argv[i], "--quick=true") == 0)
                        count = 100, observe_s = 2, warmup_s = 1;
        if (argc > 40 || (r = conf_parse(argc, argv, "bench", opts, ELEMENTSOF(opts), args, &nargs,
                                         err, sizeof(err))) < 0 || nargs) {
                if (argc <= 40 && nargs == 0)
                        fprintf(stderr, "bench-publication: %s\n", err);
                fprintf(stderr, "usage: bench-publication --conninfo STR --run-dir DIR [--collection-count N] "
                                "[--active-collections N|all] [--filler-kind indexes|tables] "
                                "[--publication-interval-ms MS] [--observation-seconds S] [--warmup-seconds S] "
                                "[--write-interval-ms MS] [--batch N] [--results FILE] [--quick]\n"
                                "       bench-publication --report FILE\n");
                return 64;
        }
        if (r == 1) {
                conf_usage(stdout, opts, ELEMENTSOF(opts));
                return 0;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (report_path) {
                ex = report(report_path);
                goto out;
        }
        if (active_s)
                active = strcmp(active_s, "all") == 0 ? count : strtoull(active_s, NULL, 10);
        if (active > count)
                active = count;
        if (!conninfo || !run_dir || !count || !active || !batch || !observe_s ||
            (filler && strcmp(filler, "indexes") != 0 && strcmp(filler, "tables") != 0)) {
                fprintf(stderr, "bench-publication: --conninfo and --run-dir are needed; --collection-count, "
                                "--active-collections, --batch, --observation-seconds > 0; --filler-kind "
                                "indexes|tables\n");
                ex = 64;
                goto out;
        }
        ex = run_row(count, active, !filler || strcmp(filler, "indexes") == 0, interval_ms, observe_s,
                     warmup_s, write_interval_ms, batch, results);
out:
        conf_done(opts, ELEMENTSOF(opts));
        return ex;
}
