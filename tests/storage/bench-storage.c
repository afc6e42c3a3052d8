/* bench-storage.c -- what the controller's storage collections cost on this disk
 * (DESIGN section 11).  Prints figures and asserts nothing.
 *
 *   bench-storage [--dir PATH] [--count N]
 *
 * PATH (default ./var/bench, created) should be on the disk the storage will live on;
 * a fresh directory is made under it and removed at the end.  N (default 2000) is the
 * number of measured operations per row:
 *   rocksdb sync put         the floor: one ~100-byte put through rocksdb_write(sync)
 *                            to a plain database in the same directory
 *   append 1 row             storage_append() of one 40-byte row: latency
 *   append, no updates       an upper tick: latency
 *   group of 8               storage_append_group() of 8 one-row appends to 8
 *                            collections: latency per group, appends/s
 *   read 1,000 rows          storage_read() at upper - 1 of a 1,000-row table written
 *                            by 1,000 one-row appends: uncompacted, and compacted
 *   read 100,000 rows        coord_frontiers' shape at 100,000 objects: two batches of
 *                            50,000 rows, then 300 appends that retract a row each and
 *                            insert its successor (fill_runs())
 *   compaction               tiered (one table) and full (another) compaction of
 *                            1,000 one-row batches
 *   open                     storage_open() with 10,000 collections
 *
 *   bench-storage --frontiers ROWS [--dir PATH] [--count N]
 *
 * instead models coord_frontiers at ROWS objects (issue 6): one append of ROWS rows,
 * then N compaction runs, each after 10 appends that move 2 "table" rows and row 0 (6
 * updates), with the since kept 100 appends behind the upper (the built-ins' window)
 * and storage_compact_pending() as the controller's timer calls it; then one since
 * move of every row (ROWS retractions and insertions, the first bound publication of
 * ROWS indexes) and the compaction run after it.  Prints the runs' latency over the
 * first and the last tenth of the N runs, and the big run's.
 */
#include <errno.h>
#include <inttypes.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "controller-storage.h"
#include "t.h"
#include "util.h"

#define ROW_LEN 40
#define READ_ROWS 1000u
#define READS 200u
#define RUN_ROWS 50000u         /* fill_runs(): rows per big batch */
#define RUN_CHURN 300u          /* and appends after them */
#define OPEN_COLLECTIONS 10000u

/* p50 / p99 / max of ns[0..n) in microseconds; sorts ns. */
static void report(const char *what, uint64_t *ns, size_t n, const char *extra)
{
        if (n == 0)
                return;
        qsort(ns, n, sizeof(*ns), t_cmp_u64);
        printf("%-34s p50 %8.1f us  p99 %8.1f us  max %8.1f us  (n=%zu)%s\n", what,
               (double)ns[n / 2] / 1e3, (double)ns[n * 99 / 100] / 1e3, (double)ns[n - 1] / 1e3, n,
               extra ? extra : "");
}

static void make_row(char row[ROW_LEN], uint64_t i)
{
        memset(row, 'r', ROW_LEN);
        be64_put((uint8_t *)row, i);
}

static int count_rows(const void *row, size_t len, int64_t count, void *userdata)
{
        (*(size_t *)userdata)++;
        return 0;
}

static int bench_reads(struct storage *s, uint64_t gid, uint64_t t, size_t expect, const char *what)
{
        uint64_t *ns = calloc(READS, sizeof(*ns));
        struct storage_collection_stats cs;
        char extra[64];
        int r = 0;

        if (!ns)
                return -ENOMEM;
        for (size_t i = 0; i < READS; i++) {
                uint64_t t0 = now_ns();
                size_t n = 0;

                r = storage_read(s, gid, t, count_rows, &n, NULL);
                ns[i] = now_ns() - t0;
                if (r < 0 || n != expect) {
                        r = r < 0 ? r : -EBADMSG;
                        goto out;
                }
        }
        r = storage_collection_stats(s, gid, &cs);
        if (r < 0)
                goto out;
        snprintf(extra, sizeof(extra), "  %" PRIu64 " batches", cs.batches);
        report(what, ns, READS, extra);
out:
        free(ns);
        return r;
}

/* The floor: a synced put of ~100 bytes to a plain RocksDB. */
static int bench_floor(const char *dir, uint64_t *ns, size_t count)
{
        _cleanup_free_ char *path = NULL;
        rocksdb_options_t *o = rocksdb_options_create();
        rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
        char key[8], val[100], *err = NULL;
        rocksdb_t *db;

        memset(val, 'v', sizeof(val));
        rocksdb_options_set_create_if_missing(o, 1);
        rocksdb_writeoptions_set_sync(wo, 1);
        if (asprintf(&path, "%s/floor", dir) < 0)
                path = NULL;
        db = path ? rocksdb_open(o, path, &err) : NULL;
        for (size_t i = 0; db && !err && i < count; i++) {
                uint64_t t0 = now_ns();

                be64_put((uint8_t *)key, i);
                rocksdb_put(db, wo, key, sizeof(key), val, sizeof(val), &err);
                ns[i] = now_ns() - t0;
        }
        if (db)
                rocksdb_close(db);
        rocksdb_writeoptions_destroy(wo);
        rocksdb_options_destroy(o);
        if (err || !db) {
                fprintf(stderr, "bench-storage: floor: %s\n", err ? err : "no path");
                rocksdb_free(err);
                return -EIO;
        }
        report("rocksdb sync put (the floor)", ns, count, NULL);
        return 0;
}

/* A table of READ_ROWS rows written by one-row appends: READ_ROWS batches. */
static int fill_table(struct storage *s, uint64_t gid)
{
        struct storage_update u = { .len = ROW_LEN, .diff = 1 };
        char row[ROW_LEN];
        int r;

        r = storage_create(s, gid, STORAGE_KIND_TABLE, 1, 1);
        for (uint64_t i = 0; r >= 0 && i < READ_ROWS; i++) {
                make_row(row, i);
                u.row = row;
                u.time = 1 + i;
                r = storage_append(s, gid, 1 + i, 2 + i, &u, 1, NULL);
        }
        if (r >= 0)
                r = storage_allow_compaction(s, gid, READ_ROWS / 2);
        return r < 0 ? r : 0;
}

/* coord_frontiers' shape at 100,000 objects (controller-storage-read.c NOTE 10): two big
 * batches in row order (even ids compacted, then odd ids in one append), then
 * RUN_CHURN appends that each retract a row and insert its successor.  *upper is the
 * collection's upper after. */
static int fill_runs(struct storage *s, uint64_t gid, uint64_t *upper)
{
        _cleanup_free_ struct storage_update *u = calloc(RUN_ROWS, sizeof(*u));
        _cleanup_free_ char (*rows)[ROW_LEN] = calloc(RUN_ROWS + 2 * RUN_CHURN, ROW_LEN);
        uint64_t t = 1;
        int r;

        if (!u || !rows)
                return -ENOMEM;
        r = storage_create(s, gid, STORAGE_KIND_TABLE, 1, 1);
        for (int half = 0; r >= 0 && half < 2; half++) {
                for (size_t i = 0; i < RUN_ROWS; i++) {
                        make_row(rows[i], 2 * i + (uint64_t)half);
                        u[i] = (struct storage_update){ .row = rows[i], .len = ROW_LEN, .time = t, .diff = 1 };
                }
                r = storage_append(s, gid, t, t + 1, u, RUN_ROWS, NULL);
                t++;
                if (r >= 0 && half == 0 && (r = storage_allow_compaction(s, gid, t - 1)) >= 0)
                        r = storage_compact(s, gid, STORAGE_COMPACT_FULL, NULL);
        }
        for (size_t k = 0; r >= 0 && k < RUN_CHURN; k++) {
                char *gone = rows[RUN_ROWS + 2 * k], *next = rows[RUN_ROWS + 2 * k + 1];
                struct storage_update v[2];
                uint64_t id = 2 * ((k * 7919) % RUN_ROWS);

                make_row(gone, id);
                make_row(next, id | 1ull << 40);
                v[0] = (struct storage_update){ .row = gone, .len = ROW_LEN, .time = t, .diff = -1 };
                v[1] = (struct storage_update){ .row = next, .len = ROW_LEN, .time = t, .diff = 1 };
                r = storage_append(s, gid, t, t + 1, v, 2, NULL);
                t++;
        }
        *upper = t;
        return r < 0 ? r : 0;
}

static int run(const char *dir, size_t count)
{
        _cleanup_free_ char *path = NULL;
        _cleanup_free_ uint64_t *ns = calloc(count, sizeof(uint64_t));
        struct storage_update u = { .len = ROW_LEN, .diff = 1 };
        struct storage_append v[8];
        struct storage_update gu[8];
        char row[ROW_LEN], grow[8][ROW_LEN], extra[64];
        struct storage *s = NULL;
        uint64_t upper = 1, t0, total;
        int r;

        if (!ns || asprintf(&path, "%s/db", dir) < 0)
                return -ENOMEM;
        r = bench_floor(dir, ns, count);
        if (r < 0)
                return r;
        r = storage_open(path, &s);
        if (r < 0)
                return r;

        /* One row per append: one synced WriteBatch each. */
        r = storage_create(s, 1, STORAGE_KIND_TABLE, 1, 1);
        for (size_t i = 0; r >= 0 && i < count; i++, upper++) {
                make_row(row, i);
                u.row = row;
                u.time = upper;
                t0 = now_ns();
                r = storage_append(s, 1, upper, upper + 1, &u, 1, NULL);
                ns[i] = now_ns() - t0;
        }
        if (r < 0)
                goto out;
        report("append 1 row", ns, count, NULL);

        for (size_t i = 0; r >= 0 && i < count; i++, upper++) {
                t0 = now_ns();
                r = storage_append(s, 1, upper, upper + 1, NULL, 0, NULL);
                ns[i] = now_ns() - t0;
        }
        if (r < 0)
                goto out;
        report("append, no updates (upper tick)", ns, count, NULL);

        /* Group commit of 8 collections. */
        for (uint64_t g = 0; r >= 0 && g < 8; g++)
                r = storage_create(s, 100 + g, STORAGE_KIND_TABLE, 1, 1);
        total = now_ns();
        for (size_t i = 0; r >= 0 && i < count / 8; i++) {
                for (size_t g = 0; g < 8; g++) {
                        make_row(grow[g], i);
                        gu[g] = (struct storage_update){ grow[g], ROW_LEN, 1 + i, 1 };
                        v[g] = (struct storage_append){
                                .gid = 100 + g, .expected_upper = 1 + i, .new_upper = 2 + i,
                                .updates = &gu[g], .n_updates = 1,
                        };
                }
                t0 = now_ns();
                r = storage_append_group(s, v, 8);
                ns[i] = now_ns() - t0;
                if (r >= 0 && r != 8)
                        r = -EIO;
        }
        if (r < 0)
                goto out;
        total = now_ns() - total;
        snprintf(extra, sizeof(extra), "  %.0f appends/s", (double)(count / 8 * 8) / ((double)total / 1e9));
        report("group of 8 appends", ns, count / 8, extra);

        /* Reads of a 1,000-row table of 1,000 batches, then compacted. */
        r = fill_table(s, 2);
        if (r >= 0)
                r = fill_table(s, 3);
        if (r >= 0)
                r = bench_reads(s, 2, READ_ROWS, READ_ROWS, "read 1,000 rows, 1,000 batches");
        if (r >= 0) {
                t0 = now_ns();
                r = storage_compact(s, 2, 0, NULL);
                printf("%-34s %8.1f ms\n", "tiered compaction, 1,000 batches", (double)(now_ns() - t0) / 1e6);
        }
        if (r >= 0) {
                t0 = now_ns();
                r = storage_compact(s, 3, STORAGE_COMPACT_FULL, NULL);
                printf("%-34s %8.1f ms\n", "full compaction, 1,000 batches", (double)(now_ns() - t0) / 1e6);
        }
        if (r >= 0)
                r = bench_reads(s, 2, READ_ROWS, READ_ROWS, "read 1,000 rows, compacted");
        if (r >= 0)
                r = fill_runs(s, 4, &upper);
        if (r >= 0)
                r = bench_reads(s, 4, upper - 1, 2 * RUN_ROWS, "read 100,000 rows, 2 runs + churn");
        if (r < 0)
                goto out;

        /* Open with many collections. */
        for (uint64_t g = 0; r >= 0 && g < OPEN_COLLECTIONS; g++)
                r = storage_create(s, 1000000 + g, STORAGE_KIND_TABLE, 1, 1);
        if (r < 0)
                goto out;
        s = storage_close(s);
        for (int i = 0; i < 3; i++) {
                t0 = now_ns();
                r = storage_open(path, &s);
                ns[i] = now_ns() - t0;
                if (r < 0)
                        goto out;
                s = storage_close(s);
        }
        report("open, 10,000 collections", ns, 3, NULL);
out:
        if (r < 0)
                fprintf(stderr, "bench-storage: %s (%s)\n", strerror(-r), storage_last_error());
        storage_close(s);
        return r;
}

/* A coord_frontiers-like row: (id, since, upper), 24 bytes. */
static void frontier_row(uint8_t row[24], uint64_t id, uint64_t since, uint64_t upper)
{
        be64_put(row, id);
        be64_put(row + 8, since);
        be64_put(row + 16, upper);
}

#define FR_APPENDS_PER_RUN 10u
#define FR_WINDOW_APPENDS 100u
#define FR_TABLES 10u

static int run_frontiers(const char *dir, uint64_t rows, size_t count)
{
        _cleanup_free_ char *path = NULL;
        _cleanup_free_ uint64_t *ns = calloc(count, sizeof(uint64_t));
        _cleanup_free_ struct storage_update *u = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        uint64_t tsince[FR_TABLES] = { 0 }, tupper[FR_TABLES] = { 0 }, upper = 2, t0;
        uint64_t rows_since = 1;
        struct storage *s = NULL;
        size_t tenth = count / 10 ? count / 10 : 1, nu;
        char what[64];
        int r;

        u = calloc(2 * rows + 8, sizeof(*u));
        buf = malloc((2 * rows + 8) * 24);
        if (!ns || !u || !buf || asprintf(&path, "%s/db", dir) < 0)
                return -ENOMEM;
        r = storage_open(path, &s);
        if (r < 0)
                return r;
        r = storage_create(s, 2, STORAGE_KIND_BUILTIN, 1, 1);
        for (uint64_t i = 0; r >= 0 && i < rows; i++) {
                frontier_row(buf + 24 * i, FR_TABLES + 1 + i, 1, 2);
                u[i] = (struct storage_update){ buf + 24 * i, 24, 1, 1 };
        }
        if (r >= 0)
                r = storage_append(s, 2, 1, 2, u, rows, NULL);
        for (size_t run = 0; r >= 0 && run < count; run++) {
                for (unsigned a = 0; r >= 0 && a < FR_APPENDS_PER_RUN; a++, upper++) {
                        nu = 0;
                        for (unsigned k = 0; k < 2; k++) {
                                unsigned t = (unsigned)((run * FR_APPENDS_PER_RUN + a) * 2 + k) % FR_TABLES;

                                if (tupper[t]) {
                                        frontier_row(buf + 24 * nu, 1 + t, tsince[t], tupper[t]);
                                        u[nu] = (struct storage_update){ buf + 24 * nu, 24, upper, -1 };
                                        nu++;
                                }
                                tsince[t] = upper > 1000 ? upper - 1000 : 1;
                                tupper[t] = upper + 1;
                                frontier_row(buf + 24 * nu, 1 + t, tsince[t], tupper[t]);
                                u[nu] = (struct storage_update){ buf + 24 * nu, 24, upper, 1 };
                                nu++;
                        }
                        frontier_row(buf + 24 * nu, 0, 0, upper);
                        u[nu] = (struct storage_update){ buf + 24 * nu, 24, upper, -1 };
                        nu++;
                        frontier_row(buf + 24 * nu, 0, 0, upper + 1);
                        u[nu] = (struct storage_update){ buf + 24 * nu, 24, upper, 1 };
                        nu++;
                        r = storage_append(s, 2, upper, upper + 1, upper > 2 ? u : u + 1,
                                           upper > 2 ? nu : nu - 1, NULL);
                }
                if (r >= 0 && upper > FR_WINDOW_APPENDS)
                        r = storage_allow_compaction(s, 2, upper - FR_WINDOW_APPENDS);
                t0 = now_ns();
                if (r >= 0)
                        r = storage_compact_pending(s, 4096);
                ns[run] = now_ns() - t0;
        }
        if (r < 0)
                goto out;
        snprintf(what, sizeof(what), "frontiers %" PRIu64 ": first %zu runs", rows, tenth);
        report(what, ns, tenth, NULL);
        snprintf(what, sizeof(what), "frontiers %" PRIu64 ": last %zu runs", rows, tenth);
        report(what, ns + count - tenth, tenth, NULL);

        /* Every object's since moves at once, in one append. */
        for (uint64_t i = 0; i < rows; i++) {
                frontier_row(buf + 24 * i, FR_TABLES + 1 + i, rows_since, 2);
                u[i] = (struct storage_update){ buf + 24 * i, 24, upper, -1 };
                frontier_row(buf + 24 * (rows + i), FR_TABLES + 1 + i, upper - 1, 2);
                u[rows + i] = (struct storage_update){ buf + 24 * (rows + i), 24, upper, 1 };
        }
        r = storage_append(s, 2, upper, upper + 1, u, 2 * rows, NULL);
        upper++;
        if (r >= 0)
                r = storage_allow_compaction(s, 2, upper - 1);
        /* As the controller's timer: again 5 ms later while work remains. */
        if (r >= 0) {
                struct storage_stats st0, st1;
                uint64_t start = now_ns(), longest = 0;
                size_t runs = 0;

                storage_get_stats(s, &st0);
                do {
                        if (runs++)
                                usleep(5000);
                        t0 = now_ns();
                        r = storage_compact_pending(s, 4096);
                        if (now_ns() - t0 > longest)
                                longest = now_ns() - t0;
                } while (r > 0);
                storage_get_stats(s, &st1);
                if (r >= 0)
                        printf("frontiers %" PRIu64 ": after the since move of every row: %zu runs in %.1f ms, "
                               "longest %.1f ms, %" PRIu64 " updates rewritten, %" PRIu64
                               " merge(s) in the background (%.1f ms there)\n",
                               rows, runs, (double)(now_ns() - start) / 1e6, (double)longest / 1e6,
                               st1.updates_rewritten - st0.updates_rewritten,
                               st1.background_merges - st0.background_merges,
                               (double)(st1.background_merge_ns - st0.background_merge_ns) / 1e6);
        }
out:
        if (r < 0)
                fprintf(stderr, "bench-storage: %s (%s)\n", strerror(-r), storage_last_error());
        storage_close(s);
        return r;
}

int main(int argc, char **argv)
{
        const char *base = "./var/bench";
        _cleanup_free_ char *dir = NULL;
        uint64_t count = 2000, frontiers = 0;
        int r;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
                        base = argv[++i];
                else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc &&
                         parse_u64(argv[i + 1], 1u << 24, &count) == 0 && count >= 8)
                        i++;
                else if (strcmp(argv[i], "--frontiers") == 0 && i + 1 < argc &&
                         parse_u64(argv[i + 1], 1u << 24, &frontiers) == 0)
                        i++;
                else {
                        fprintf(stderr, "usage: bench-storage [--dir PATH] [--count N>=8] [--frontiers ROWS]\n");
                        return 2;
                }
        }
        r = t_mkdir2(base);
        if (r < 0) {
                fprintf(stderr, "bench-storage: %s: %s\n", base, strerror(-r));
                return 1;
        }
        if (asprintf(&dir, "%s/storage-XXXXXX", base) < 0 || !mkdtemp(dir)) {
                fprintf(stderr, "bench-storage: cannot make a directory under %s\n", base);
                return 1;
        }
        r = frontiers ? run_frontiers(dir, frontiers, count) : run(dir, count);
        t_rmrf(dir);
        return r < 0 ? 1 : 0;
}
