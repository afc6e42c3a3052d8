/* bench-tables -- the tables milestone's figures, through libpq against running daemons.
 *
 *   bench-tables --conninfo 'host=127.0.0.1 port=6875 user=coord dbname=coord'
 *                [--inserts N] [--clients N] [--seconds S] [--tables N] [--pairs N]
 *                [--idle-pairs N] [--idle-ms MS] [--reads-after-create N] [--sync-dir DIR]
 *                [--raw FILE]
 *
 * Prints: INSERT latency p50/p99 with one client; rows/s with --clients clients (one
 * row per INSERT); CREATE TABLE + DROP TABLE pair latency p50/p95/p99 with --tables
 * tables existing, back to back and each after an idle gap (--idle-ms, default 500: the
 * pace of the measurement workflow's 2 pairs/s; on this project's VMs memory left alone
 * that long is slow at its next touch, see bench-coldmem); and the latency of a SELECT of
 * a table right after its CREATE TABLE (the read's timestamp is the table's birth, so it
 * waits for the next append: adapter-exec.c note 6).  With --sync-dir, first the disk's
 * own floor there: pwrite + fdatasync of 4 KiB into blocks written before, for one
 * second (what the catalog's sync log does, catalog.c NOTE 8), because the DDL pair is
 * two such syncs and this VM's disk changes speed from hour to hour: a pair figure
 * means little without the sync figure of the same minute.  The floor is measured again
 * right after the pairs, so that a drift during them shows, and the pairs' p50/p95 is
 * printed per quarter of the run as well.  --raw FILE keeps every pair's start and
 * latency (ns, CLOCK_MONOTONIC, the clock bpftrace's nsecs reads), to line the slow ones
 * up with a trace of the daemons (docs/benchmarks.md).  Asserts nothing.
 * tools/coord bench tables runs it on a fresh instance, --sync-dir its data directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "util.h"

static char *conninfo;

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return x < y ? -1 : x > y;
}

static double pct_us(uint64_t *v, size_t n, double p)
{
        size_t i;

        if (n == 0)
                return 0;
        i = (size_t)(p * (double)(n - 1) + 0.5);
        return (double)v[i] / 1000.0;
}

static bool run(PGconn *c, const char *sql)
{
        PGresult *r = PQexec(c, sql);
        bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;

        if (!ok)
                fprintf(stderr, "bench-tables: %s: %s", sql, PQresultErrorMessage(r));
        PQclear(r);
        return ok;
}

static PGconn *connect_db(void)
{
        PGconn *c = PQconnectdb(conninfo);

        if (PQstatus(c) != CONNECTION_OK) {
                fprintf(stderr, "bench-tables: connect: %s", PQerrorMessage(c));
                PQfinish(c);
                exit(1);
        }
        return c;
}

#define SYNC_BLOCKS 1024u     /* 4 MiB written and synced first, then overwritten */

/* The disk's floor under dir: 4 KiB pwrite + fdatasync into written blocks for about a
 * second, printed as p50/p99.  0, or -errno. */
static int sync_floor(const char *dir, const char *when)
{
        static char buf[4096];
        char path[4096];
        uint64_t *lat, end;
        size_t n = 0, cap = 1u << 16;
        int fd, r = 0;

        if ((size_t)snprintf(path, sizeof(path), "%s/bench-tables-sync.dat", dir) >= sizeof(path))
                return -ENAMETOOLONG;
        lat = calloc(cap, sizeof(*lat));
        if (!lat)
                return -ENOMEM;
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) {
                r = -errno;
                goto out;
        }
        memset(buf, 'x', sizeof(buf));
        for (unsigned i = 0; i < SYNC_BLOCKS; i++)
                if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
                        r = -errno;
                        goto out;
                }
        if (fdatasync(fd) < 0) {
                r = -errno;
                goto out;
        }
        end = now_ns() + 1000000000ull;
        while (n < cap && now_ns() < end) {
                uint64_t t0 = now_ns();

                if (pwrite(fd, buf, sizeof(buf), (off_t)((n % SYNC_BLOCKS) * sizeof(buf))) !=
                            (ssize_t)sizeof(buf) || fdatasync(fd) < 0) {
                        r = -errno;
                        goto out;
                }
                lat[n++] = now_ns() - t0;
        }
        qsort(lat, n, sizeof(*lat), cmp_u64);
        printf("fdatasync 4 KiB overwrite  p50=%8.1f us  p99=%8.1f us  (n=%zu; this disk, %s)\n",
               pct_us(lat, n, 0.50), pct_us(lat, n, 0.99), n, when);
out:
        if (fd >= 0) {
                close(fd);
                unlink(path);
        }
        free(lat);
        return r;
}

struct worker {
        pthread_t th;
        int id;
        uint64_t deadline_ns;
        uint64_t rows;
};

static void *insert_worker(void *arg)
{
        struct worker *w = arg;
        PGconn *c = connect_db();
        char q[128];

        for (uint64_t k = 0; now_ns() < w->deadline_ns; k++) {
                snprintf(q, sizeof(q), "INSERT INTO bench_many VALUES (%d, %" PRIu64 ")", w->id, k);
                if (!run(c, q))
                        break;
                w->rows++;
        }
        PQfinish(c);
        return NULL;
}

/* 1. INSERT latency, one client, one row per statement. */
static bool insert_one(PGconn *c, uint64_t *lat, uint64_t inserts)
{
        uint64_t t0;
        char q[128];

        if (!run(c, "CREATE TABLE bench_one (a bigint, b text)"))
                return false;
        for (uint64_t i = 0; i < inserts; i++) {
                snprintf(q, sizeof(q), "INSERT INTO bench_one VALUES (%" PRIu64 ", 'row')", i);
                t0 = now_ns();
                if (!run(c, q))
                        return false;
                lat[i] = now_ns() - t0;
        }
        qsort(lat, inserts, sizeof(*lat), cmp_u64);
        printf("INSERT 1 client          p50=%8.1f us  p99=%8.1f us  (n=%" PRIu64 ")\n",
               pct_us(lat, inserts, 0.50), pct_us(lat, inserts, 0.99), inserts);
        return true;
}

/* 2. rows/s with many clients: group commit shares one append per group. */
static bool insert_many(PGconn *c, uint64_t clients, uint64_t seconds)
{
        struct worker *w;
        uint64_t t0;

        if (!run(c, "CREATE TABLE bench_many (client int, k bigint)"))
                return false;
        w = calloc(clients, sizeof(*w));
        t0 = now_ns();
        for (uint64_t i = 0; i < clients; i++) {
                w[i] = (struct worker){ .id = (int)i, .deadline_ns = t0 + seconds * 1000000000ull };
                pthread_create(&w[i].th, NULL, insert_worker, &w[i]);
        }
        {
                uint64_t rows = 0;
                double secs;
                for (uint64_t i = 0; i < clients; i++) {
                        pthread_join(w[i].th, NULL);
                        rows += w[i].rows;
                }
                secs = (double)(now_ns() - t0) / 1e9;
                printf("INSERT %3" PRIu64 " clients      %8.0f rows/s  (%" PRIu64 " rows in %.1f s)\n",
                       clients, (double)rows / secs, rows, secs);
        }
        free(w);
        return true;
}

/* 3. CREATE TABLE + DROP TABLE pairs with `tables` tables existing; each pair's start and
 * latency to raw, if given. */
static bool ddl_pairs(PGconn *c, uint64_t *lat, uint64_t tables, uint64_t pairs, FILE *raw)
{
        uint64_t t0;
        char q[128];

        t0 = now_ns();
        for (uint64_t i = 0; i < tables; i++) {
                snprintf(q, sizeof(q), "CREATE TABLE filler_%" PRIu64 " (a bigint)", i);
                if (!run(c, q))
                        return false;
        }
        printf("setup %" PRIu64 " tables        %8.2f s\n", tables, (double)(now_ns() - t0) / 1e9);
        for (uint64_t i = 0; i < pairs; i++) {
                t0 = now_ns();
                if (!run(c, "CREATE TABLE pair_t (a bigint)") || !run(c, "DROP TABLE pair_t"))
                        return false;
                lat[i] = now_ns() - t0;
                if (raw && fprintf(raw, "%" PRIu64 " %" PRIu64 "\n", t0, lat[i]) < 0)
                        return false;
        }
        if (raw && fclose(raw) != 0)
                return false;
        /* The run in quarters, each sorted in place before the whole: a p95 that moves
         * between them is the machine drifting (or the system still busy from the
         * setup), not the pairs. */
        if (pairs >= 400) {
                printf("DDL pair p50/p95 by quarter of the run:");
                for (uint64_t q4 = 0; q4 < 4; q4++) {
                        uint64_t *part = lat + q4 * (pairs / 4), n = pairs / 4;

                        qsort(part, n, sizeof(*part), cmp_u64);
                        printf(" %.0f/%.0f us", pct_us(part, n, 0.50), pct_us(part, n, 0.95));
                }
                printf("\n");
        }
        qsort(lat, pairs, sizeof(*lat), cmp_u64);
        printf("DDL pair at %" PRIu64 " tables  p50=%8.1f us  p95=%8.1f us  p99=%8.1f us  (n=%" PRIu64 ")\n",
               tables, pct_us(lat, pairs, 0.50), pct_us(lat, pairs, 0.95), pct_us(lat, pairs, 0.99), pairs);
        return true;
}

/* Pairs after an idle gap of idle_ms each. */
static bool ddl_pairs_idle(PGconn *c, uint64_t *lat, uint64_t idle_pairs, uint64_t idle_ms)
{
        uint64_t t0;

        for (uint64_t i = 0; i < idle_pairs; i++) {
                struct timespec ts = { .tv_sec = (time_t)(idle_ms / 1000),
                                       .tv_nsec = (long)(idle_ms % 1000) * 1000000L };

                while (nanosleep(&ts, &ts) < 0)
                        ;
                t0 = now_ns();
                if (!run(c, "CREATE TABLE pair_t (a bigint)") || !run(c, "DROP TABLE pair_t"))
                        return false;
                lat[i] = now_ns() - t0;
        }
        if (idle_pairs) {
                qsort(lat, idle_pairs, sizeof(*lat), cmp_u64);
                printf("DDL pair after %" PRIu64 " ms idle  p50=%8.1f us  p95=%8.1f us  max=%8.1f us  (n=%" PRIu64 ")\n",
                       idle_ms, pct_us(lat, idle_pairs, 0.50), pct_us(lat, idle_pairs, 0.95),
                       pct_us(lat, idle_pairs, 1.0), idle_pairs);
        }
        return true;
}

/* 4. A SELECT of a table right after its CREATE. */
static bool reads_after_create(PGconn *c, uint64_t *lat, uint64_t reads)
{
        uint64_t t0;

        for (uint64_t i = 0; i < reads; i++) {
                if (!run(c, "CREATE TABLE rac_t (a bigint)"))
                        return false;
                t0 = now_ns();
                if (!run(c, "SELECT * FROM rac_t"))
                        return false;
                lat[i] = now_ns() - t0;
                if (!run(c, "DROP TABLE rac_t"))
                        return false;
        }
        if (reads) {
                qsort(lat, reads, sizeof(*lat), cmp_u64);
                printf("SELECT after CREATE TABLE  p50=%8.1f us  p95=%8.1f us  p99=%8.1f us  (n=%" PRIu64 ")\n",
                       pct_us(lat, reads, 0.50), pct_us(lat, reads, 0.95), pct_us(lat, reads, 0.99), reads);
        }
        return true;
}

int main(int argc, char **argv)
{
        uint64_t inserts = 2000, clients = 32, seconds = 5, tables = 1000, pairs = 2000,
                 idle_pairs = 20, idle_ms = 500, reads = 200;
        char *sync_dir = NULL, *raw_path = NULL;
        FILE *raw = NULL;
        const struct conf_option opts[] = {
                { "conninfo", CONF_STR, &conninfo, 0, "libpq connection string" },
                { "inserts", CONF_U64, &inserts, 10000000, "single-client INSERTs (default 2000)" },
                { "clients", CONF_U64, &clients, 1000, "concurrent clients (default 32)" },
                { "seconds", CONF_U64, &seconds, 3600, "seconds of concurrent inserts (default 5)" },
                { "tables", CONF_U64, &tables, 1000000, "tables existing during the DDL pairs (default 1000)" },
                { "pairs", CONF_U64, &pairs, 1000000, "CREATE+DROP pairs timed (default 2000: a p95 from 100 pairs above it)" },
                { "idle-pairs", CONF_U64, &idle_pairs, 100000, "pairs timed after an idle gap each (default 20)" },
                { "reads-after-create", CONF_U64, &reads, 100000, "SELECTs timed right after their table's CREATE (default 200)" },
                { "idle-ms", CONF_U64, &idle_ms, 60000, "the idle gap before each of those (default 500)" },
                { "sync-dir", CONF_STR, &sync_dir, 0, "first time fdatasync of 4 KiB on this directory's disk" },
                { "raw", CONF_STR, &raw_path, 0, "write each DDL pair's start and latency (ns, CLOCK_MONOTONIC) to this file" },
        };
        char *args[8], err[256];
        int nargs = 0, r;
        uint64_t *lat;
        PGconn *c;

        if (argc > 30 || (r = conf_parse(argc, argv, "bench", opts, ELEMENTSOF(opts), args, &nargs,
                                         err, sizeof(err))) < 0 || nargs || !conninfo) {
                fprintf(stderr, "usage: bench-tables --conninfo STR [--inserts N] [--clients N] "
                                "[--seconds S] [--tables N] [--pairs N] [--idle-pairs N] [--idle-ms MS] "
                                "[--reads-after-create N] [--sync-dir DIR] [--raw FILE]\n");
                return 64;
        }
        if (r == 1) {
                conf_usage(stdout, opts, ELEMENTSOF(opts));
                return 0;
        }
        if (raw_path && !(raw = fopen(raw_path, "we"))) {
                fprintf(stderr, "bench-tables: %s: %s\n", raw_path, strerror(errno));
                return 1;
        }
        if (sync_dir && (r = sync_floor(sync_dir, "now")) < 0)
                fprintf(stderr, "bench-tables: fdatasync floor on %s: %s\n", sync_dir, strerror(-r));
        c = connect_db();
        {
                uint64_t n = inserts;

                if (pairs > n)
                        n = pairs;
                if (idle_pairs > n)
                        n = idle_pairs;
                if (reads > n)
                        n = reads;
                lat = calloc(n ? n : 1, sizeof(*lat));
        }
        if (!lat)
                return 1;

        if (!insert_one(c, lat, inserts) || !insert_many(c, clients, seconds) ||
            !ddl_pairs(c, lat, tables, pairs, raw))
                return 1;
        /* The disk again: the pairs took a while, and its speed drifts. */
        if (sync_dir && pairs && (r = sync_floor(sync_dir, "right after the pairs")) < 0)
                fprintf(stderr, "bench-tables: fdatasync floor on %s: %s\n", sync_dir, strerror(-r));
        if (!ddl_pairs_idle(c, lat, idle_pairs, idle_ms) || !reads_after_create(c, lat, reads))
                return 1;
        free(lat);
        PQfinish(c);
        conf_done(opts, ELEMENTSOF(opts));
        return 0;
}
