/* bench-catalog.c -- what a durable catalog commit costs on this disk, and what group
 * commit buys (DESIGN section 11).  Prints figures and asserts nothing.
 *
 *   bench-catalog [--dir PATH] [--seconds S]
 *
 * PATH (default ./var/bench, created) should be on the disk the catalog will live on;
 * a fresh directory is made under it and removed at the end.  S (default 2) scales
 * every row; the whole run takes about 8 S:
 *   fdatasync 4 KiB append     the floor: write(2) + fdatasync(2) of an appending file
 *   fdatasync 4 KiB overwrite  the same into blocks written before: no metadata to
 *                              journal, what the catalog's sync log does (catalog.c
 *                              NOTE 8)
 *   catalog commit N writers   catalog_commit() of 2 state puts of ~100 bytes from N
 *                              threads: latency per commit, commits/s, transactions
 *                              per synced WriteBatch, time per synced write, time the
 *                              leader waited for its group (the commit window), and
 *                              the process's CPU time and context switches per commit
 *                              (every thread's: on a small VM, what a group of 8 costs
 *                              beyond its sync is mostly this)
 *   group commit 8 / 1 writer  the speed-up, from alternating 1- and 8-writer runs
 *   commit, rocksdb sync       the same rows with the sync log off: a synced RocksDB
 *                              write per group
 *   rocksdb sync write N       the same two puts through rocksdb_write(sync) from N
 *                              threads, grouped by RocksDB alone, for comparison
 *   secondary catch_up         catalog_catch_up() after each commit of one writer
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/catalog.h"
#include "t.h"
#include "util.h"

#define MAX_THREADS 8
#define MAX_SAMPLES (1u << 20)
#define VALUE_LEN 100

struct samples {
        uint64_t *ns;
        size_t n;
};

static int samples_add(struct samples *s, uint64_t ns)
{
        if (!s->ns) {
                s->ns = malloc(MAX_SAMPLES * sizeof(*s->ns));
                if (!s->ns)
                        return -ENOMEM;
        }
        if (s->n < MAX_SAMPLES)
                s->ns[s->n++] = ns;
        return 0;
}

/* p in [0, 100]; sorts s. */
static double percentile_us(struct samples *s, double p)
{
        size_t i;

        if (s->n == 0)
                return 0;
        qsort(s->ns, s->n, sizeof(*s->ns), t_cmp_u64);
        i = (size_t)(p / 100.0 * (double)(s->n - 1) + 0.5);
        return (double)s->ns[i] / 1000.0;
}

/* What the catalog's counters say about a run, per synced write. */
struct group_figures {
        double txns;                    /* transactions per synced WriteBatch */
        double sync_us;                 /* time in rocksdb_write(sync) */
        double window_us;               /* time the leader waited for its group */
        double cpu_us;                  /* the process's CPU time per commit */
        double switches;                /* its context switches per commit */
        double yielded;                 /* waits that ended while yielding, of all waits */
};

static void print_row(const char *what, struct samples *s, double per_s,
                      const struct group_figures *g)
{
        printf("%-32s p50=%6.0f us  p99=%6.0f us", what, percentile_us(s, 50),
               percentile_us(s, 99));
        if (per_s > 0)
                printf("  commits/s=%6.0f", per_s);
        if (g && g->txns > 0)
                printf("  txns/sync=%4.2f  sync=%4.0f us  window=%3.0f us  cpu=%3.0f us  csw=%4.2f"
                       "  yielded=%3.0f%%",
                       g->txns, g->sync_us, g->window_us, g->cpu_us, g->switches,
                       g->yielded * 100);
        printf("\n");
        fflush(stdout);
}

#define OVERWRITE_BLOCKS 4096u                  /* 16 MiB written first, then again */

static int bench_fdatasync(const char *dir, double seconds, bool overwrite)
{
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct samples s = { 0 };
        static char buf[4096];
        uint64_t end, block = 0;

        if (asprintf(&path, "%s/fdatasync.dat", dir) < 0)
                return -ENOMEM;
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        memset(buf, 'x', sizeof(buf));
        if (overwrite) {
                for (unsigned i = 0; i < OVERWRITE_BLOCKS; i++)
                        if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
                                return -errno;
                if (fdatasync(fd) < 0)
                        return -errno;
        }
        end = now_ns() + (uint64_t)(seconds * 1e9);
        while (now_ns() < end) {
                uint64_t t0 = now_ns();
                off_t at = (off_t)((overwrite ? block % OVERWRITE_BLOCKS : block) * sizeof(buf));

                if (pwrite(fd, buf, sizeof(buf), at) != (ssize_t)sizeof(buf) || fdatasync(fd) < 0)
                        return -errno;
                block++;
                if (samples_add(&s, now_ns() - t0) < 0)
                        return -ENOMEM;
        }
        print_row(overwrite ? "fdatasync 4 KiB overwrite" : "fdatasync 4 KiB append", &s, 0, NULL);
        free(s.ns);
        unlink(path);
        return 0;
}

/* Fresh pseudo-random bytes (xorshift64) for every commit: a catalog's values differ
 * from one transaction to the next and do not compress to nothing, so neither may the
 * benchmark's, or a compressed WAL would look better here than it is. */
static void value_fill(char *value, size_t len, uint64_t *rng)
{
        for (size_t i = 0; i < len; i++) {
                *rng ^= *rng << 13;
                *rng ^= *rng >> 7;
                *rng ^= *rng << 17;
                value[i] = (char)(*rng >> 56);
        }
}

/* N threads commit until told to stop; each records its commit latencies. */
struct run {
        struct catalog *c;              /* catalog mode */
        rocksdb_t *db;                  /* raw RocksDB mode */
        rocksdb_writeoptions_t *wo;
        pthread_barrier_t start;
        bool stop;
        uint64_t commits;
        int err;
};

struct worker {
        struct run *run;
        unsigned id;
        struct samples s;
};

static void *worker_main(void *p)
{
        struct worker *w = p;
        struct run *run = w->run;
        char ka[32], kb[32], value[VALUE_LEN];
        rocksdb_writebatch_t *batch = run->db ? rocksdb_writebatch_create() : NULL;
        uint64_t n = 0, rng = 0x9e3779b97f4a7c15ull * (w->id + 1);

        pthread_barrier_wait(&run->start);
        while (!__atomic_load_n(&run->stop, __ATOMIC_RELAXED)) {
                uint64_t t0;
                int r = 0;

                value_fill(value, sizeof(value), &rng);
                snprintf(ka, sizeof(ka), "bench/%u/%" PRIu64 "/a", w->id, n);
                snprintf(kb, sizeof(kb), "bench/%u/%" PRIu64 "/b", w->id, n);
                t0 = now_ns();
                if (run->c) {
                        const struct catalog_op ops[] = {
                                { .kind = CATALOG_OP_PUT, .cf = CATALOG_CF_STATE, .key = ka,
                                  .key_len = strlen(ka), .value = value, .value_len = sizeof(value) },
                                { .kind = CATALOG_OP_PUT, .cf = CATALOG_CF_STATE, .key = kb,
                                  .key_len = strlen(kb), .value = value, .value_len = sizeof(value) },
                        };

                        r = catalog_commit(run->c, ops, ELEMENTSOF(ops), NULL);
                } else {
                        char *err = NULL;

                        rocksdb_writebatch_clear(batch);
                        rocksdb_writebatch_put(batch, ka, strlen(ka), value, sizeof(value));
                        rocksdb_writebatch_put(batch, kb, strlen(kb), value, sizeof(value));
                        rocksdb_write(run->db, run->wo, batch, &err);
                        if (err) {
                                rocksdb_free(err);
                                r = -EIO;
                        }
                }
                if (r < 0) {
                        run->err = r;
                        break;
                }
                samples_add(&w->s, now_ns() - t0);
                n++;
        }
        __atomic_add_fetch(&run->commits, n, __ATOMIC_RELAXED);
        if (batch)
                rocksdb_writebatch_destroy(batch);
        return NULL;
}

/* The process's CPU time (every thread: the writers, RocksDB's and the sync log's) in
 * ns, and its context switches, voluntary or not. */
static void usage_now(uint64_t *ret_cpu_ns, uint64_t *ret_switches)
{
        struct rusage ru;

        (void)getrusage(RUSAGE_SELF, &ru);
        *ret_cpu_ns = ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
                      ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
        *ret_switches = (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}

/* Run n_threads writers for `seconds`, adding their latencies to *all and their CPU
 * time and context switches to *ret_cpu_ns and *ret_switches; commits/s, or < 0 on
 * error. */
static double run_writers(struct run *run, unsigned n_threads, double seconds,
                          struct samples *all, struct catalog_stats *ret_delta,
                          uint64_t *ret_cpu_ns, uint64_t *ret_switches)
{
        struct worker workers[MAX_THREADS] = { 0 };
        pthread_t threads[MAX_THREADS];
        struct catalog_stats st0, st1;
        struct timespec ts = { .tv_sec = (time_t)seconds,
                               .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9) };
        uint64_t t0, elapsed, cpu0, cpu1, csw0, csw1;

        run->stop = false;
        run->commits = 0;
        run->err = 0;
        pthread_barrier_init(&run->start, NULL, n_threads + 1);
        for (unsigned i = 0; i < n_threads; i++) {
                workers[i] = (struct worker){ .run = run, .id = i };
                pthread_create(&threads[i], NULL, worker_main, &workers[i]);
        }
        catalog_get_stats(run->c, &st0);
        pthread_barrier_wait(&run->start);
        usage_now(&cpu0, &csw0);
        t0 = now_ns();
        nanosleep(&ts, NULL);                   /* the measured interval */
        __atomic_store_n(&run->stop, true, __ATOMIC_RELAXED);
        for (unsigned i = 0; i < n_threads; i++)
                pthread_join(threads[i], NULL);
        elapsed = now_ns() - t0;
        usage_now(&cpu1, &csw1);
        *ret_cpu_ns += cpu1 - cpu0;
        *ret_switches += csw1 - csw0;
        catalog_get_stats(run->c, &st1);
        pthread_barrier_destroy(&run->start);

        for (unsigned i = 0; i < n_threads; i++) {
                for (size_t k = 0; k < workers[i].s.n; k++)
                        samples_add(all, workers[i].s.ns[k]);
                free(workers[i].s.ns);
        }
        ret_delta->commits += st1.commits - st0.commits;
        ret_delta->groups += st1.groups - st0.groups;
        ret_delta->sync_ns += st1.sync_ns - st0.sync_ns;
        ret_delta->window_ns += st1.window_ns - st0.window_ns;
        ret_delta->waits_yielded += st1.waits_yielded - st0.waits_yielded;
        ret_delta->waits_slept += st1.waits_slept - st0.waits_slept;
        if (run->err < 0)
                return -1;
        return (double)run->commits / ((double)elapsed / 1e9);
}

/* `rounds` runs of n_threads writers, one row for all of them. */
struct row {
        unsigned n_threads;
        bool sleep;                     /* waiters sleep at once (no yielding) */
        struct samples lat;
        struct catalog_stats delta;
        uint64_t cpu_ns, switches;      /* the process's, over all rounds */
        double per_s_sum;
        unsigned rounds;
        double per_s[8];
};

static int row_run(struct run *run, struct row *row, double seconds)
{
        double per_s;

        /* As the daemons run, or with waiters that sleep at once (catalog-write.c, GROUP
         * COMMIT, "Yielding before sleeping"). */
        catalog_set_wait_spin(run->c, row->sleep ? 0 : CATALOG_WAIT_SPIN_DEFAULT_NS);
        per_s = run_writers(run, row->n_threads, seconds, &row->lat, &row->delta,
                            &row->cpu_ns, &row->switches);

        if (per_s < 0)
                return -EIO;
        if (row->rounds < ELEMENTSOF(row->per_s))
                row->per_s[row->rounds] = per_s;
        row->rounds++;
        row->per_s_sum += per_s;
        return 0;
}

static void row_print(const char *label, struct row *row)
{
        struct group_figures g = { 0 };
        char what[80];

        if (row->delta.groups > 0)
                g = (struct group_figures){
                        .txns = (double)row->delta.commits / (double)row->delta.groups,
                        .sync_us = (double)row->delta.sync_ns / 1e3 / (double)row->delta.groups,
                        .window_us = (double)row->delta.window_ns / 1e3 / (double)row->delta.groups,
                        .cpu_us = (double)row->cpu_ns / 1e3 / (double)row->delta.commits,
                        .switches = (double)row->switches / (double)row->delta.commits,
                };
        if (row->delta.waits_yielded + row->delta.waits_slept > 0)
                g.yielded = (double)row->delta.waits_yielded /
                            (double)(row->delta.waits_yielded + row->delta.waits_slept);
        snprintf(what, sizeof(what), "%s %u writer%s%s", label, row->n_threads,
                 row->n_threads > 1 ? "s" : "", row->sleep ? ", sleep" : "");
        print_row(what, &row->lat, row->per_s_sum / row->rounds, &g);
        free(row->lat.ns);
        row->lat = (struct samples){ 0 };
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

/* The disk's speed drifts by tens of percent within seconds on a shared VM, so 1 and
 * 8 writers alternate (ROUNDS times) and the ratio is the median of the pairs. */
#define ROUNDS 5

/* The median of ROUNDS ratios, then each in the order run (ratio is sorted after). */
static void print_ratio(const char *what, double *ratio)
{
        double sorted[ROUNDS];

        memcpy(sorted, ratio, sizeof(sorted));
        qsort(sorted, ROUNDS, sizeof(sorted[0]), cmp_double);
        printf("%-32s %.1fx commits/s (median of %d alternating runs:", what, sorted[ROUNDS / 2],
               ROUNDS);
        for (unsigned k = 0; k < ROUNDS; k++)
                printf(" %.1fx", ratio[k]);
        printf(")\n");
}

/* synclog: the catalog's sync log on (the daemons' way) or off (a synced RocksDB write
 * per group, as before it): the rows are labelled "catalog commit" and "catalog
 * commit, rocksdb sync". */
static int bench_catalog(const char *dir, double seconds, bool synclog)
{
        const char *label = synclog ? "catalog commit" : "commit, rocksdb sync";
        _cleanup_free_ char *path = NULL;
        struct row rows[] = { { .n_threads = 1 }, { .n_threads = 2 }, { .n_threads = 4 },
                              { .n_threads = MAX_THREADS },
                              { .n_threads = MAX_THREADS, .sleep = true } };
        struct row *one = &rows[0], *eight = &rows[3], *eight_sleep = &rows[4];
        struct run run = { 0 };
        double ratio[ROUNDS], ratio_sleep[ROUNDS];
        int r;

        if (asprintf(&path, "%s/catalog%s", dir, synclog ? "" : "-nosynclog") < 0)
                return -ENOMEM;
        catalog_debug_synclog_segment_size(synclog ? 2u << 20 : 0);
        r = catalog_open(path, &run.c);
        catalog_debug_synclog_segment_size(2u << 20);
        if (r < 0)
                return r;
        for (unsigned k = 0; k < ROUNDS && r >= 0; k++) {
                r = row_run(&run, one, seconds / ROUNDS);
                if (r >= 0)
                        r = row_run(&run, eight, seconds / ROUNDS);
                if (r >= 0)
                        r = row_run(&run, eight_sleep, seconds / ROUNDS);
                if (r >= 0) {
                        ratio[k] = eight->per_s[k] / one->per_s[k];
                        ratio_sleep[k] = eight_sleep->per_s[k] / one->per_s[k];
                }
        }
        if (r >= 0)
                r = row_run(&run, &rows[1], seconds / 2);
        if (r >= 0)
                r = row_run(&run, &rows[2], seconds / 2);
        run.c = catalog_close(run.c);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                row_print(label, &rows[i]);
        print_ratio(synclog ? "group commit 8 / 1 writer" : "  the same, rocksdb sync", ratio);
        print_ratio("  8 sleeping / 1 writer", ratio_sleep);
        return 0;
}

static int bench_rocksdb(const char *dir, double seconds)
{
        _cleanup_free_ char *path = NULL;
        rocksdb_options_t *o = rocksdb_options_create();
        struct run run = { 0 };
        char *err = NULL;

        if (asprintf(&path, "%s/rocksdb", dir) < 0)
                return -ENOMEM;
        rocksdb_options_set_create_if_missing(o, 1);
        run.db = rocksdb_open(o, path, &err);
        if (err) {
                fprintf(stderr, "rocksdb_open: %s\n", err);
                rocksdb_free(err);
                rocksdb_options_destroy(o);
                return -EIO;
        }
        run.wo = rocksdb_writeoptions_create();
        rocksdb_writeoptions_set_sync(run.wo, 1);
        for (unsigned n = 1; n <= MAX_THREADS; n += MAX_THREADS - 1) {
                struct row row = { .n_threads = n };

                if (row_run(&run, &row, seconds / 2) < 0)
                        printf("rocksdb sync write: failed\n");
                else
                        row_print("rocksdb sync write", &row);
        }
        rocksdb_writeoptions_destroy(run.wo);
        rocksdb_close(run.db);
        rocksdb_options_destroy(o);
        return 0;
}

static int bench_catch_up(const char *dir, double seconds)
{
        _cleanup_free_ char *ppath = NULL, *spath = NULL;
        struct catalog *p = NULL, *s = NULL;
        struct samples lat = { 0 };
        char value[VALUE_LEN];
        uint64_t end;
        int r;

        if (asprintf(&ppath, "%s/catalog", dir) < 0 || asprintf(&spath, "%s/secondary", dir) < 0)
                return -ENOMEM;
        r = catalog_open(ppath, &p);
        if (r < 0)
                return r;
        r = catalog_open_secondary(ppath, spath, &s);
        if (r < 0)
                goto out;
        end = now_ns() + (uint64_t)(seconds * 1e9);
        for (uint64_t n = 0, rng = 1; now_ns() < end; n++) {
                struct catalog_op op = {
                        .kind = CATALOG_OP_PUT, .cf = CATALOG_CF_STATE, .key = &n,
                        .key_len = sizeof(n), .value = value, .value_len = sizeof(value),
                };
                uint64_t t0;

                value_fill(value, sizeof(value), &rng);
                r = catalog_commit(p, &op, 1, NULL);
                if (r < 0)
                        goto out;
                t0 = now_ns();
                r = catalog_catch_up(s);
                if (r < 0)
                        goto out;
                samples_add(&lat, now_ns() - t0);
        }
        print_row("secondary catch_up", &lat, 0, NULL);
out:
        free(lat.ns);
        s = catalog_close(s);
        p = catalog_close(p);
        return r;
}

int main(int argc, char **argv)
{
        const char *base = "./var/bench";
        _cleanup_free_ char *dir = NULL, *real = NULL;
        double seconds = 2;
        int r;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
                        base = argv[++i];
                else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
                        char *end;

                        seconds = strtod(argv[++i], &end);
                        if (*end || seconds <= 0 || seconds > 60) {
                                fprintf(stderr, "bench-catalog: bad --seconds\n");
                                return 2;
                        }
                } else {
                        fprintf(stderr, "usage: bench-catalog [--dir PATH] [--seconds S]\n");
                        return 2;
                }
        }
        r = t_mkdir2(base);
        if (r < 0 || asprintf(&dir, "%s/catalog-bench-XXXXXX", base) < 0 || !mkdtemp(dir)) {
                fprintf(stderr, "bench-catalog: cannot make a directory under %s\n", base);
                return 1;
        }
        real = realpath(dir, NULL);
        printf("bench-catalog: dir=%s, %.1f s per row\n", real ? real : dir, seconds);

        r = bench_fdatasync(dir, seconds / 2, false);
        if (r >= 0)
                r = bench_fdatasync(dir, seconds / 2, true);
        if (r >= 0)
                r = bench_catalog(dir, seconds, true);
        if (r >= 0)
                r = bench_catalog(dir, seconds, false);
        if (r >= 0)
                r = bench_rocksdb(dir, seconds);
        if (r >= 0)
                r = bench_catch_up(dir, seconds / 2);
        if (r < 0)
                fprintf(stderr, "bench-catalog: %s %s\n", strerror(-r), catalog_last_error());
        t_rmrf(dir);
        return r < 0 ? 1 : 0;
}
