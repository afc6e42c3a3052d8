/* bench-publication -- the measurement workflow of issue 6 (read protection's
 * publication table, reproduced on Coord per object count), through libpq and the
 * daemons' status.
 *
 *   bench-publication --conninfo STR --run-dir DIR --collection-count N
 *                     [--active-collections N|all]
 *                     [--filler-kind indexes|tables|sources|sinks|refresh]
 *                     [--publication-interval-ms MS] [--publication-rounds N]
 *                     [--observation-seconds S] [--warmup-seconds S]
 *                     [--ddl-rate-hz R] [--observer none|poll] [--restarts=BOOL]
 *                     [--write-interval-ms MS] [--batch N] [--setup-connections N]
 *                     [--results FILE] [--quick]
 *   bench-publication --report FILE [--plot PNG]
 *
 * One row = one collection count on one (fresh) instance; tools/coord bench publication
 * loops over --collection-counts, a fresh instance per count, and then prints the
 * report of all rows (and the plot).
 *
 * The objects ("collections": what holds data and gets a bound):
 *   - N advancing tables t_0 .. t_{N-1} (N = --active-collections, `all` = the count);
 *   - filler up to the count, --filler-kind indexes: one support table and view
 *     (CREATE TABLE support (a int); CREATE VIEW sv AS SELECT a FROM support) and per
 *     filler object CREATE VIEW v_i AS SELECT a FROM sv; CREATE DEFAULT INDEX ON v_i
 *     (so the count holds N tables + (count - N) indexes; plus as many views);
 *     --filler-kind tables: quiet tables f_i, never written.  sources: counter sources s_i
 *     (UP TO 1: one row each, then only their uppers move, every 100 ms).  sinks: sinks
 *     k_i of a support table into files under <run-dir>/sinks.  refresh: materialized
 *     views r_i of a support table, REFRESH EVERY '1 hour'.
 *   Created in multi-statement query strings of --batch statements, the filler split in
 *   --setup-connections (default 4) disjoint ranges created in parallel, one connection
 *   each (after the support objects and the tables); the setup time is
 *   from the first CREATE to the last acknowledged, then to the follower having
 *   applied the last commit.
 *
 * The load, all through the rounds: one client INSERTs one row into the advancing
 * tables round-robin, paced so that each table gets one every --write-interval-ms
 * (default 100); a client that cannot keep up goes as fast as it can (the achieved rate
 * is reported).  After --warmup-seconds, --publication-rounds windows of
 * --observation-seconds each; in each:
 *   - DDL (--ddl-rate-hz R > 0): a client of its own runs CREATE TABLE d_K (a int) then
 *     DROP TABLE d_K (a fresh K each time, two round trips) on a fixed schedule, pair k
 *     due at round start + k / R.  Open loop: a late pair starts at once, and its
 *     latency is measured from its *scheduled* arrival, so a stall of any daemon shows
 *     as latency (and as pairs not completed).  Offered = pairs due in the window;
 *     completed = pairs finished in it.
 *   - Observer (--observer poll): another client runs SELECT * FROM coord_frontiers in
 *     a loop, as fast as answers come (polls/s reported).
 *   - The lifecycle's status is sampled every interval / 10 ms (10..100 ms):
 *     publications, records_total, bytes_total (exact deltas); per publication seen
 *     last_records, last_bytes, last_touched; lag_samples / lag_last_us: each new
 *     commit's follower lag (commit notification to applied).  A status request makes
 *     the follower catch up first, so sampling can shorten a lag, never lengthen it.
 *   - At the window's start and end, all three daemons' status: the adapter's catalog
 *     counters (commits, syncs, RocksDB WAL bytes), the controller's storage RocksDB
 *     WAL bytes, and each daemon's window_stall_us: the longest event-loop busy stretch
 *     since the previous status request (loop.c note 9) -- taken at the window's start,
 *     it covers exactly the window (the lifecycle's: max over the samples); the same
 *     way, the longest durable write of the catalog (catalog_sync_window_max_us: a
 *     group's sync log write and fdatasync) and of the controller's storage
 *     (storage_sync_window_max_us: a synced write or the syncer's WAL sync), so that a
 *     slow pair can be told from a slow disk without a tracer.
 *   - /proc/PID/stat of each daemon: CPU time used in the window.
 * Around the rounds: each daemon's VmRSS (/proc/PID/status; after setup also per
 * catalog item) and the catalog footprint (adapter status: SST + memtable bytes and
 * keys of the state column families and of the log) after setup and after the last
 * round; the longest stall of each daemon during setup.
 * After the rounds (--restarts, default on): each daemon in turn is killed with
 * SIGKILL and started again exactly as it ran (/proc/PID/cmdline, cwd, its stdout
 * file), and timed from the kill to serving again: adapter -- its status ready and a
 * new connection answers SELECT 1; controller -- its status ready and SELECT * FROM t_0
 * succeeds through the adapter; lifecycle -- status ready and caught up with the
 * adapter's last catalog commit (only those two are asked: a controller busy with the
 * follower's resync is not the follower's time).  The next kill waits until all three
 * serve and the controller holds as many dataflows as before this kill (its restart
 * is answered before the follower has re-installed them; at 100,000 that takes
 * seconds more, printed as "settled"), so that each restart starts from a quiet
 * instance, not in the wake of the one before.
 *
 * Output: raw lines per round, a markdown table row and a CSV line (appended to
 * --results, with a header when the file is new).  Ranges "a–b" are the envelope over
 * rounds; percentiles pool every round.  --report FILE prints the markdown table of
 * every row in FILE (columns found by header name); --plot PNG also draws DDL pair
 * p95, setup time and follower lag p99 against the collection count (log x) with
 * gnuplot.  Exit 1 when a statement, a status request or a restart failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-publication.h"
#include "conf.h"
#include "node/node.h"
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

/* A growable array of u64 (latencies). */
struct vec {
        uint64_t *v;
        size_t n, cap;
};

static bool vec_push(struct vec *a, uint64_t x)
{
        if (a->n == a->cap) {
                size_t cap = a->cap ? 2 * a->cap : 256;
                uint64_t *v = realloc(a->v, cap * sizeof(*v));
                if (!v)
                        return false;
                a->v = v, a->cap = cap;
        }
        a->v[a->n++] = x;
        return true;
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

/* VmRSS of pid, in kB; 0 when unreadable. */
static uint64_t rss_kb(int pid)
{
        char path[64], line[256];
        unsigned long long kb = 0;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", pid);
        if (!(f = fopen(path, "r")))
                return 0;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
                        break;
        fclose(f);
        return kb;
}

static PGconn *connect_db(bool quiet)
{
        PGconn *c = PQconnectdb(conninfo);

        if (PQstatus(c) != CONNECTION_OK) {
                if (!quiet)
                        fprintf(stderr, "bench-publication: connect: %s", PQerrorMessage(c));
                PQfinish(c);
                return NULL;
        }
        return c;
}

/* Run sql (maybe several statements); false (reported unless quiet) when any failed.
 * *rows (if given) gets the rows returned. */
static bool run_q(PGconn *c, const char *sql, bool quiet, uint64_t *rows)
{
        PGresult *r;
        bool ok = PQsendQuery(c, sql);

        if (!ok && !quiet)
                fprintf(stderr, "bench-publication: %.120s: %s", sql, PQerrorMessage(c));
        while (ok && (r = PQgetResult(c))) {
                if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
                        if (!quiet)
                                fprintf(stderr, "bench-publication: %.120s: %s", sql, PQresultErrorMessage(r));
                        ok = false;
                } else if (rows) {
                        *rows += (uint64_t)PQntuples(r);
                }
                PQclear(r);
        }
        while (!ok && (r = PQgetResult(c)))
                PQclear(r);
        return ok;
}

static bool run(PGconn *c, const char *sql) { return run_q(c, sql, false, NULL); }

/* ---- status --------------------------------------------------------------------- */

enum { ADAPTER, LIFECYCLE, CONTROLLER, N_DAEMONS };
static const char *const daemon_name[N_DAEMONS] = { "adapter", "lifecycle", "controller" };
static const Coord__Role daemon_role[N_DAEMONS] = {
        COORD__ROLE__ROLE_ADAPTER, COORD__ROLE__ROLE_LIFECYCLE, COORD__ROLE__ROLE_CONTROLLER,
};
#define ALL_DAEMONS ((1u << ADAPTER) | (1u << LIFECYCLE) | (1u << CONTROLLER))

struct snap {
        bool ok, ready[N_DAEMONS];
        int pid[N_DAEMONS];
        uint64_t adapter_seq, lifecycle_seq;
        /* adapter */
        uint64_t commits, syncs, cat_wal, cat_flush, cat_compact;
        uint64_t cat_state_sst, cat_state_mem, cat_state_keys, cat_log_sst, cat_log_mem, cat_log_keys;
        /* controller */
        uint64_t st_wal, st_flush, st_compact, dataflows;
        /* lifecycle */
        uint64_t publications, pub_errors, records_total, bytes_total;
        uint64_t last_records, last_bytes, last_touched;
        uint64_t lag_samples, lag_last_us, lag_p50_us, lag_p99_us, lag_max_us, reloads;
        uint64_t stall_us[N_DAEMONS], window_stall_us[N_DAEMONS];
        /* the longest durable write since the previous request, like window_stall_us */
        uint64_t cat_sync_window_us, st_sync_window_us;
};

/* A figure of a status detail; 0 when the daemon does not report it. */
static uint64_t detail_u64(const char *detail, const char *key)
{
        uint64_t v = kv_u64(detail, key);

        return v == UINT64_MAX ? 0 : v;
}

/* The status of the daemons in mask (bits ADAPTER..); ok = all of them answered.  Each
 * request resets that daemon's window_stall_us. */
static struct snap snapshot_of(unsigned mask, int timeout_ms)
{
        struct snap s = { .ok = true };

        for (int i = 0; i < N_DAEMONS; i++) {
                Coord__StatusReply *st = NULL;
                if (!(mask & (1u << i)))
                        continue;
                if (node_query_status(run_dir, daemon_role[i], timeout_ms, &st) < 0) {
                        s.ok = false;
                        continue;
                }
                const char *d = st->detail;
                s.pid[i] = st->pid;
                s.ready[i] = st->ready;
                s.stall_us[i] = st->max_stall_us;
                s.window_stall_us[i] = st->window_stall_us;
                if (i == ADAPTER) {
                        s.adapter_seq = st->catalog_seq;
                        s.commits = detail_u64(d, "catalog_commits");
                        s.syncs = detail_u64(d, "catalog_syncs");
                        /* Both logs the catalog writes: RocksDB's WAL and the sync log
                         * that makes it durable (catalog.c NOTE 8). */
                        s.cat_wal = detail_u64(d, "catalog_wal_bytes") +
                                    detail_u64(d, "catalog_synclog_bytes");
                        s.cat_flush = detail_u64(d, "catalog_flush_bytes");
                        s.cat_compact = detail_u64(d, "catalog_compact_bytes");
                        s.cat_state_sst = detail_u64(d, "catalog_state_sst_bytes");
                        s.cat_state_mem = detail_u64(d, "catalog_state_mem_bytes");
                        s.cat_state_keys = detail_u64(d, "catalog_state_keys");
                        s.cat_log_sst = detail_u64(d, "catalog_log_sst_bytes");
                        s.cat_log_mem = detail_u64(d, "catalog_log_mem_bytes");
                        s.cat_log_keys = detail_u64(d, "catalog_log_keys");
                        s.cat_sync_window_us = detail_u64(d, "catalog_sync_window_max_us");
                } else if (i == CONTROLLER) {
                        s.st_wal = detail_u64(d, "storage_wal_bytes");
                        s.st_flush = detail_u64(d, "storage_flush_bytes");
                        s.st_compact = detail_u64(d, "storage_compact_bytes");
                        s.dataflows = detail_u64(d, "dataflows");
                        s.st_sync_window_us = detail_u64(d, "storage_sync_window_max_us");
                } else {
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

static struct snap snapshot(unsigned mask) { return snapshot_of(mask, 5000); }

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
        PGconn *c = connect_db(false);
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

/* ---- DDL on a schedule ---------------------------------------------------------- */

struct ddl {
        pthread_t th;
        PGconn *c;                      /* connected before the window */
        double rate_hz;
        uint64_t t0, end;               /* the window, now_ns() */
        uint64_t *next_name;            /* fresh names across rounds */
        struct vec lat;                 /* ns from scheduled arrival to DROP answered */
        struct vec svc;                 /* ns from the CREATE's send to DROP answered */
        uint64_t offered, late_started, straddled;
        bool failed;
};

static void *ddl_main(void *arg)
{
        struct ddl *d = arg;
        char q[96];

        for (uint64_t k = 0;; k++) {
                uint64_t due = d->t0 + (uint64_t)((double)k * 1e9 / d->rate_hz), now, name, sent;
                if (due >= d->end)
                        break;
                now = now_ns();
                if (now < due)
                        sleep_ns(due - now);
                else if (now - due > 1000000ull)
                        d->late_started++;
                if (now_ns() >= d->end)
                        break;  /* counted as offered, not completed */
                name = (*d->next_name)++;
                sent = now_ns();
                snprintf(q, sizeof(q), "CREATE TABLE d_%" PRIu64 " (a int)", name);
                if (!run(d->c, q)) {
                        d->failed = true;
                        break;
                }
                snprintf(q, sizeof(q), "DROP TABLE d_%" PRIu64, name);
                if (!run(d->c, q)) {
                        d->failed = true;
                        break;
                }
                now = now_ns();
                if (now > d->end)
                        d->straddled++;
                else if (!vec_push(&d->lat, now - due) || !vec_push(&d->svc, now - sent)) {
                        d->failed = true;
                        break;
                }
        }
        return NULL;
}

/* Pairs due in [t0, end). */
static uint64_t ddl_offered(double rate_hz, uint64_t t0, uint64_t end)
{
        uint64_t n = 0;

        while (t0 + (uint64_t)((double)n * 1e9 / rate_hz) < end)
                n++;
        return n;
}

/* ---- the observer --------------------------------------------------------------- */

struct observer {
        pthread_t th;
        PGconn *c;
        atomic_bool stop;
        atomic_uint_least64_t polls, rows, errors;
};

static void *observer_main(void *arg)
{
        struct observer *o = arg;

        while (!atomic_load(&o->stop)) {
                uint64_t rows = 0;
                if (!run_q(o->c, "SELECT * FROM coord_frontiers", true, &rows)) {
                        atomic_fetch_add(&o->errors, 1);
                        sleep_ns(10000000ull);
                        continue;
                }
                atomic_fetch_add(&o->polls, 1);
                atomic_fetch_add(&o->rows, rows);
        }
        return NULL;
}

/* ---- restarts ------------------------------------------------------------------- */

/* How pid was started: argv from /proc/PID/cmdline (NUL-separated), its executable, cwd
 * and stdout file; false when unreadable. */
struct how {
        char buf[8192], *argv[64], exe[PATH_MAX], cwd[PATH_MAX], out[PATH_MAX];
};

static bool read_how(int pid, struct how *h)
{
        char path[64];
        ssize_t n;
        int fd, k = 0;

        snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
                return false;
        n = read(fd, h->buf, sizeof(h->buf) - 1);
        close(fd);
        if (n <= 0)
                return false;
        h->buf[n] = 0;
        for (char *p = h->buf; p < h->buf + n && k < 63; p += strlen(p) + 1)
                h->argv[k++] = p;
        h->argv[k] = NULL;
        snprintf(path, sizeof(path), "/proc/%d/exe", pid);
        n = readlink(path, h->exe, sizeof(h->exe) - 1);
        if (n <= 0)
                return false;
        h->exe[n] = 0;
        snprintf(path, sizeof(path), "/proc/%d/cwd", pid);
        n = readlink(path, h->cwd, sizeof(h->cwd) - 1);
        if (n <= 0)
                return false;
        h->cwd[n] = 0;
        snprintf(path, sizeof(path), "/proc/%d/fd/1", pid);
        n = readlink(path, h->out, sizeof(h->out) - 1);
        h->out[n > 0 ? n : 0] = 0;
        if (h->out[0] != '/')
                snprintf(h->out, sizeof(h->out), "/dev/null");
        return true;
}

/* Bytes of the regular files in dir (not recursive); 0 when unreadable. */
static uint64_t dir_bytes(const char *dir)
{
        DIR *d = opendir(dir);
        struct dirent *e;
        struct stat st;
        uint64_t sum = 0;

        if (!d)
                return 0;
        while ((e = readdir(d)))
                if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                        sum += (uint64_t)st.st_size;
        closedir(d);
        return sum;
}

/* The adapter's catalog directory on disk (<data-dir>/adapter/catalog, --data-dir from
 * its command line), into path; false when unknown. */
static bool catalog_dir(int adapter_pid, char *path, size_t size)
{
        struct how *h = calloc(1, sizeof(*h));
        bool ok = false;

        if (h && read_how(adapter_pid, h))
                for (int i = 0; h->argv[i]; i++) {
                        const char *v = NULL;
                        if (strcmp(h->argv[i], "--data-dir") == 0 && h->argv[i + 1])
                                v = h->argv[i + 1];
                        else if (strncmp(h->argv[i], "--data-dir=", 11) == 0)
                                v = h->argv[i] + 11;
                        if (v) {
                                int n = snprintf(path, size, "%s%s%s/adapter/catalog",
                                                 v[0] == '/' ? "" : h->cwd, v[0] == '/' ? "" : "/", v);
                                ok = n > 0 && (size_t)n < size;
                        }
                }
        free(h);
        return ok;
}

static int spawn(const struct how *h)
{
        pid_t pid = fork();

        if (pid != 0)
                return (int)pid;
        /* The child: a session of its own, as tools/coord up starts daemons. */
        setsid();
        int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int out = open(h->out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (in >= 0)
                dup2(in, 0);
        if (out >= 0) {
                dup2(out, 1);
                dup2(out, 2);
        }
        if (chdir(h->cwd) < 0)
                _exit(127);
        execv(h->exe, h->argv);
        execv(h->argv[0], h->argv);     /* the binary was replaced since: its path */
        _exit(127);
}

/* When serving() first saw the restarted daemon's status ready (restart()'s clock). */
static uint64_t serving_ready_ns;

/* Serving again, in the sense of the header. */
static bool serving(int d, PGconn **c)
{
        struct snap s = { 0 };

        /* Only the restarted daemon's status: asking all three counted the others'
         * busy time (the follower building its resync for a new controller, ~0.2 s at
         * 100,000) against this one. */
        if (d != LIFECYCLE)
                s = snapshot_of(1u << d, 200);

        if (d == LIFECYCLE) {
                s = snapshot_of((1u << ADAPTER) | (1u << LIFECYCLE), 200);
                return s.ok && s.ready[d] && s.lifecycle_seq >= s.adapter_seq;
        }
        if (!s.ready[d])
                return false;
        if (!serving_ready_ns)
                serving_ready_ns = now_ns();
        if (d == ADAPTER) {
                PGconn *n = connect_db(true);
                bool ok = n && run_q(n, "SELECT 1", true, NULL);
                PQfinish(n);
                return ok;
        }
        if (!*c && !(*c = connect_db(true)))
                return false;
        if (run_q(*c, "SELECT * FROM t_0", true, NULL))
                return true;
        if (PQstatus(*c) != CONNECTION_OK) {
                PQfinish(*c);
                *c = NULL;
        }
        return false;
}

/* kill -9 daemon d and start it again; ms from the kill to serving, -1 on failure. */
static double restart(int d, double timeout_s)
{
        struct snap s = snapshot(ALL_DAEMONS);
        struct how *h = calloc(1, sizeof(*h));
        PGconn *c = NULL;
        uint64_t t0;
        double ms = -1, exited_ms = 0;
        int pid;

        if (!h || !s.ok || !read_how(s.pid[d], h)) {
                fprintf(stderr, "bench-publication: restart %s: no status or /proc entry\n", daemon_name[d]);
                goto out;
        }
        t0 = now_ns();
        if (kill(s.pid[d], SIGKILL) < 0) {
                fprintf(stderr, "bench-publication: kill %s: %s\n", daemon_name[d], strerror(errno));
                goto out;
        }
        while (!proc_gone(s.pid[d])) {
                if (secs_since(t0) > timeout_s)
                        goto out;
                sleep_ns(500000ull);    /* not a spin: the kernel's teardown needs the CPU */
        }
        exited_ms = secs_since(t0) * 1e3;
        serving_ready_ns = 0;
        pid = spawn(h);
        if (pid < 0) {
                fprintf(stderr, "bench-publication: fork: %s\n", strerror(errno));
                goto out;
        }
        while (!serving(d, &c)) {
                int st;
                /* Exited at once (the predecessor's lock still held after all): again. */
                if (waitpid(pid, &st, WNOHANG) == pid) {
                        fprintf(stderr, "bench-publication: restarted %s exited (status %d); starting "
                                        "it again\n", daemon_name[d], st);
                        sleep_ns(5000000ull);
                        if ((pid = spawn(h)) < 0)
                                goto out;
                }
                if (secs_since(t0) > timeout_s) {
                        fprintf(stderr, "bench-publication: %s not serving %.0f s after kill -9\n",
                                daemon_name[d], timeout_s);
                        goto out;
                }
                sleep_ns(1000000ull);
        }
        ms = secs_since(t0) * 1e3;
        printf("restart: %s exited %.1f ms, status ready %.1f ms, serving %.1f ms after kill -9\n",
               daemon_name[d], exited_ms,
               serving_ready_ns ? (double)(serving_ready_ns - t0) / 1e6 : -1.0, ms);
        /* The other two serve as well, and the controller holds its dataflows again,
         * before the next kill (the header). */
        for (int k = 0; k < N_DAEMONS; k++)
                while (k != d && !serving(k, &c)) {
                        if (secs_since(t0) > 2 * timeout_s) {
                                ms = -1;
                                goto out;
                        }
                        sleep_ns(1000000ull);
                }
        for (;;) {
                struct snap now = snapshot_of(1u << CONTROLLER, 200);

                if (now.ok && now.dataflows >= s.dataflows)
                        break;
                if (secs_since(t0) > 2 * timeout_s) {
                        ms = -1;
                        goto out;
                }
                sleep_ns(10000000ull);
        }
        printf("restart: %s settled %.1f ms after kill -9 (controller holding %" PRIu64 " dataflows)\n",
               daemon_name[d], secs_since(t0) * 1e3, s.dataflows);
out:
        PQfinish(c);
        free(h);
        return ms;
}

/* ---- setup ---------------------------------------------------------------------- */

/* A multi-statement string being built and sent --batch statements at a time. */
struct qbuf {
        PGconn *c;
        char *q;
        size_t cap, len;
        uint64_t n, batch;
        bool ok;
};

static bool qbuf_init(struct qbuf *b, PGconn *c, uint64_t batch)
{
        *b = (struct qbuf){ .c = c, .cap = 256 + batch * 160, .batch = batch, .ok = true };
        b->q = malloc(b->cap);
        if (!b->q)
                return false;
        b->q[0] = 0;
        return true;
}

static void qbuf_flush(struct qbuf *b)
{
        if (b->n && b->ok)
                b->ok = run(b->c, b->q);
        b->len = 0, b->n = 0, b->q[0] = 0;
}

/* Append statements (n of them, all in this string); sent when the batch is full. */
static void qbuf_add(struct qbuf *b, uint64_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void qbuf_add(struct qbuf *b, uint64_t n, const char *fmt, ...)
{
        va_list ap;

        if (b->n && b->n + n > b->batch)
                qbuf_flush(b);
        va_start(ap, fmt);
        b->len += (size_t)vsnprintf(b->q + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        b->n += n;
        if (b->n >= b->batch)
                qbuf_flush(b);
}

/* --filler-kind: what the objects beyond the advancing tables are. */
enum filler {
        FILLER_INDEXES,         /* CREATE VIEW v_i AS SELECT a FROM sv; a default index on it */
        FILLER_TABLES,          /* quiet tables f_i */
        FILLER_SOURCES,         /* counter sources s_i (UP TO 1), each with its progress */
        FILLER_SINKS,           /* sinks k_i of the support table, into files */
        FILLER_REFRESH,         /* MVs r_i of the support table, REFRESH EVERY '1 hour' */
        _FILLER_MAX,
};

static const char *const filler_names[_FILLER_MAX] = {
        [FILLER_INDEXES] = "indexes", [FILLER_TABLES] = "tables", [FILLER_SOURCES] = "sources",
        [FILLER_SINKS] = "sinks", [FILLER_REFRESH] = "refresh",
};

/* Where the sinks' files go (FILLER_SINKS). */
static char sink_dir[128];

/* One setup connection's share of the filler objects: [lo, hi). */
struct setup_part {
        pthread_t th;
        PGconn *c;
        uint64_t lo, hi, active, batch;
        enum filler filler;
        bool ok;
};

static void *setup_part_main(void *userdata)
{
        struct setup_part *p = userdata;
        struct qbuf b;

        if (!qbuf_init(&b, p->c, p->batch))
                return NULL;
        for (uint64_t i = p->lo; i < p->hi && b.ok; i++)
                switch (p->filler) {
                case FILLER_INDEXES:
                        /* a view and its index in the same string */
                        qbuf_add(&b, 2, "CREATE VIEW v_%" PRIu64 " AS SELECT a FROM sv;"
                                        "CREATE DEFAULT INDEX ON v_%" PRIu64 ";", i, i);
                        break;
                case FILLER_TABLES:
                        qbuf_add(&b, 1, "CREATE TABLE f_%" PRIu64 " (a bigint);", i);
                        break;
                case FILLER_SOURCES:
                        qbuf_add(&b, 1, "CREATE SOURCE s_%" PRIu64 " FROM LOAD GENERATOR COUNTER "
                                        "(TICK INTERVAL '1s', UP TO 1);", i);
                        break;
                case FILLER_SINKS:
                        qbuf_add(&b, 1, "CREATE SINK k_%" PRIu64 " FROM support INTO FILE '%s/k_%" PRIu64 "';",
                                 i, sink_dir, i);
                        break;
                default:
                        qbuf_add(&b, 1, "CREATE MATERIALIZED VIEW r_%" PRIu64 " WITH (REFRESH EVERY '1 hour') "
                                        "AS SELECT a FROM support;", i);
                        break;
                }
        qbuf_flush(&b);
        p->ok = b.ok;
        free(b.q);
        return NULL;
}

/* Create the objects; false on a failed statement.  The support table and view and the
 * advancing tables first, on c; then the filler objects, split in `conns` disjoint
 * ranges, each created by a connection (and thread) of its own: one connection runs
 * its statements one after the other, each its own catalog commit, while statements of
 * several connections share the catalog's fsync (group commit) and overlap their round
 * trips.  The extra connections are opened before the first CREATE. */
static bool setup(PGconn *c, uint64_t count, uint64_t active, enum filler kind, uint64_t batch,
                  uint64_t conns, uint64_t *t0)
{
        uint64_t filler = count > active ? count - active : 0;
        struct setup_part *parts;
        struct qbuf b;
        bool ok;

        if (conns > filler)
                conns = filler ? filler : 1;
        parts = calloc(conns, sizeof(*parts));
        if (!parts)
                return false;
        for (uint64_t k = 0; k < conns; k++) {
                parts[k] = (struct setup_part){ .c = k ? connect_db(false) : c, .active = active,
                                                .batch = batch, .filler = kind,
                                                .lo = filler * k / conns, .hi = filler * (k + 1) / conns };
                if (!parts[k].c) {
                        ok = false;
                        goto out;
                }
        }
        *t0 = now_ns();
        if (!qbuf_init(&b, c, batch)) {
                ok = false;
                goto out;
        }
        if (kind == FILLER_INDEXES && filler)
                qbuf_add(&b, 2, "CREATE TABLE support (a int);CREATE VIEW sv AS SELECT a FROM support;");
        if ((kind == FILLER_SINKS || kind == FILLER_REFRESH) && filler)
                qbuf_add(&b, 1, "CREATE TABLE support (a int);");
        for (uint64_t i = 0; i < active; i++)
                qbuf_add(&b, 1, "CREATE TABLE t_%" PRIu64 " (a bigint);", i);
        qbuf_flush(&b);
        ok = b.ok;
        free(b.q);
        if (!ok)
                goto out;
        for (uint64_t k = 1; k < conns; k++)
                if (pthread_create(&parts[k].th, NULL, setup_part_main, &parts[k]) != 0) {
                        fprintf(stderr, "bench-publication: pthread_create failed\n");
                        parts[k].th = 0;
                        ok = false;
                }
        setup_part_main(&parts[0]);
        ok = ok && parts[0].ok;
        for (uint64_t k = 1; k < conns; k++)
                if (parts[k].th) {
                        pthread_join(parts[k].th, NULL);
                        ok = ok && parts[k].ok;
                }
out:
        for (uint64_t k = 1; k < conns; k++)
                if (parts[k].c)
                        PQfinish(parts[k].c);
        free(parts);
        return ok;
}

struct opts {
        uint64_t count, active, interval_ms, rounds, observe_s, warmup_s, write_interval_ms, batch,
                setup_conns;
        double ddl_rate_hz;
        enum filler filler;
        bool poll, restarts;
        const char *results;
};

static double maxd(double a, double b) { return a > b ? a : b; }

/* What the rounds add up to. */
struct totals {
        uint64_t seen_pubs, sum_touched, lag_missed, next_name;
        uint64_t cpu_sum[N_DAEMONS], d_pubs, d_recs, d_bytes, d_commits, d_syncs, d_cat_wal,
                 d_cat_all, d_st_wal, d_st_all, d_ins, polls, poll_rows, poll_errors;
        double total_s;
        struct vec lag, pairs;
};

/* The setup: o's collections created, then the wait until the follower applied the last
 * commit, and the catalog's size before the load (its directory in cat_dir). */
static bool run_setup(const struct opts *o, PGconn *c, struct row *r, char *cat_dir,
                      size_t cat_dir_size)
{
        struct snap s, before;
        uint64_t t0;

        t0 = now_ns();
        if (!setup(c, o->count, o->active, o->filler, o->batch, o->setup_conns, &t0))
                return false;
        r->setup_s = secs_since(t0);
        /* ...until the follower applied the last commit.  The first status request after
         * `up` covers the setup: its window stalls are the setup's. */
        for (;;) {
                s = snapshot(ALL_DAEMONS);
                if (!s.ok) {
                        fprintf(stderr, "bench-publication: status failed\n");
                        return false;
                }
                r->stall_setup_adapter_us = maxd(r->stall_setup_adapter_us, (double)s.window_stall_us[ADAPTER]);
                r->stall_setup_lifecycle_us = maxd(r->stall_setup_lifecycle_us, (double)s.window_stall_us[LIFECYCLE]);
                r->stall_setup_controller_us = maxd(r->stall_setup_controller_us, (double)s.window_stall_us[CONTROLLER]);
                if (s.lifecycle_seq >= s.adapter_seq || secs_since(t0) > 600)
                        break;
                sleep_ns(2000000);
        }
        r->setup_applied_s = secs_since(t0);
        r->setup_lag_p50_us = (double)s.lag_p50_us;
        r->setup_lag_p99_us = (double)s.lag_p99_us;
        r->catalog_items = (double)(o->active + (o->count <= o->active ? 0
                          : o->filler == FILLER_INDEXES ? 2 * (o->count - o->active) + 2
                          : o->filler == FILLER_SOURCES ? 2 * (o->count - o->active)
                          : o->filler == FILLER_TABLES ? o->count - o->active
                                                       : o->count - o->active + 1));
        printf("setup: %.0f catalog items in %.2f s (%.0f items/s, %.0f connection(s)); follower applied "
               "the last commit at "
               "%.2f s; its lag over the last %" PRIu64 " commits p50 %" PRIu64 " us p99 %" PRIu64 " us; "
               "longest stall adapter %.1f ms lifecycle %.1f ms controller %.1f ms; CPU since start "
               "adapter %.2f s lifecycle %.2f s controller %.2f s\n",
               r->catalog_items, r->setup_s, r->catalog_items / r->setup_s, r->setup_connections, r->setup_applied_s,
               s.lag_samples < 4096 ? s.lag_samples : 4096, s.lag_p50_us, s.lag_p99_us,
               r->stall_setup_adapter_us / 1e3, r->stall_setup_lifecycle_us / 1e3,
               r->stall_setup_controller_us / 1e3, (double)cpu_ms(s.pid[ADAPTER]) / 1e3,
               (double)cpu_ms(s.pid[LIFECYCLE]) / 1e3, (double)cpu_ms(s.pid[CONTROLLER]) / 1e3);
        before = snapshot(ALL_DAEMONS);
        r->rss_adapter_kb = (double)rss_kb(before.pid[ADAPTER]);
        r->rss_lifecycle_kb = (double)rss_kb(before.pid[LIFECYCLE]);
        r->rss_controller_kb = (double)rss_kb(before.pid[CONTROLLER]);
        printf("memory after setup (VmRSS): adapter %.1f MB lifecycle %.1f MB controller %.1f MB; %.0f bytes "
               "per catalog item (adapter %.0f, lifecycle %.0f, controller %.0f)\n",
               r->rss_adapter_kb / 1024, r->rss_lifecycle_kb / 1024, r->rss_controller_kb / 1024,
               (r->rss_adapter_kb + r->rss_lifecycle_kb + r->rss_controller_kb) * 1024 / r->catalog_items,
               r->rss_adapter_kb * 1024 / r->catalog_items, r->rss_lifecycle_kb * 1024 / r->catalog_items,
               r->rss_controller_kb * 1024 / r->catalog_items);
        r->cat_state_bytes_before = (double)(before.cat_state_sst + before.cat_state_mem);
        r->cat_state_keys_before = (double)before.cat_state_keys;
        r->cat_log_bytes_before = (double)(before.cat_log_sst + before.cat_log_mem);
        r->cat_log_keys_before = (double)before.cat_log_keys;
        if (catalog_dir(before.pid[ADAPTER], cat_dir, cat_dir_size))
                r->cat_disk_bytes_before = (double)dir_bytes(cat_dir);
        return true;
}

/* One round of o->observe_s seconds under the load of w, the lifecycle sampled every
 * sample_ns: its figures added to r and t, and printed.  False if something failed. */
static bool run_round(const struct opts *o, uint64_t round, uint64_t sample_ns, struct writer *w,
                      struct row *r, struct totals *t)
{
        struct ddl d = { .rate_hz = o->ddl_rate_hz, .next_name = &t->next_name };
        struct observer ob = { 0 };
        struct snap s, a, b, prev;
        uint64_t cpu0[N_DAEMONS], ins0, offered = 0, lstall = 0, t0;
        double window, bps;
        bool failed = false;

        if (o->poll && (!(ob.c = connect_db(false)) ||
                        pthread_create(&ob.th, NULL, observer_main, &ob) != 0)) {
                PQfinish(ob.c);
                return false;
        }
        if (o->ddl_rate_hz > 0 && !(d.c = connect_db(false)))
                failed = true;
        a = prev = snapshot(ALL_DAEMONS);
        for (int i = 0; i < N_DAEMONS; i++)
                cpu0[i] = cpu_ms(a.pid[i]);
        ins0 = atomic_load(&w->inserts);
        uint64_t polls0 = atomic_load(&ob.polls), rows0 = atomic_load(&ob.rows);
        t0 = now_ns();
        d.t0 = t0;
        d.end = t0 + o->observe_s * 1000000000ull;
        if (d.c && pthread_create(&d.th, NULL, ddl_main, &d) != 0) {
                PQfinish(d.c);
                d.c = NULL;
                failed = true;
        }
        while (now_ns() < d.end && !w->failed) {
                sleep_ns(sample_ns);
                s = snapshot(1u << LIFECYCLE);
                if (!s.ok)
                        continue;
                if (s.window_stall_us[LIFECYCLE] > lstall)
                        lstall = s.window_stall_us[LIFECYCLE];
                if (s.lag_samples > prev.lag_samples) {
                        t->lag_missed += s.lag_samples - prev.lag_samples - 1;
                        if (!vec_push(&t->lag, s.lag_last_us))
                                failed = true;
                }
                if (s.publications > prev.publications) {
                        t->seen_pubs++;
                        t->sum_touched += s.last_touched;
                        r->touched_per_pub_max = maxd(r->touched_per_pub_max, (double)s.last_touched);
                        r->records_per_pub_max = maxd(r->records_per_pub_max, (double)s.last_records);
                        r->bytes_per_pub_max = maxd(r->bytes_per_pub_max, (double)s.last_bytes);
                }
                prev = s;
        }
        b = snapshot(ALL_DAEMONS);
        window = secs_since(t0);
        for (int i = 0; i < N_DAEMONS; i++)
                t->cpu_sum[i] += cpu_ms(b.pid[i]) - cpu0[i];
        t->d_ins += atomic_load(&w->inserts) - ins0;
        if (d.c) {
                pthread_join(d.th, NULL);
                PQfinish(d.c);
                offered = ddl_offered(d.rate_hz, d.t0, d.end);
                failed |= d.failed;
        }
        if (ob.c) {
                atomic_store(&ob.stop, true);
                pthread_join(ob.th, NULL);
                PQfinish(ob.c);
                t->polls += atomic_load(&ob.polls) - polls0;
                t->poll_rows += atomic_load(&ob.rows) - rows0;
                t->poll_errors += atomic_load(&ob.errors);
        }
        if (!b.ok || !a.ok) {
                fprintf(stderr, "bench-publication: a status request failed\n");
                return false;
        }
        lstall = lstall > b.window_stall_us[LIFECYCLE] ? lstall : b.window_stall_us[LIFECYCLE];
        t->total_s += window;
        t->d_pubs += b.publications - a.publications;
        t->d_recs += b.records_total - a.records_total;
        t->d_bytes += b.bytes_total - a.bytes_total;
        t->d_commits += b.commits - a.commits;
        t->d_syncs += b.syncs - a.syncs;
        t->d_cat_wal += b.cat_wal - a.cat_wal;
        t->d_cat_all += (b.cat_wal + b.cat_flush + b.cat_compact) - (a.cat_wal + a.cat_flush + a.cat_compact);
        t->d_st_wal += b.st_wal - a.st_wal;
        t->d_st_all += (b.st_wal + b.st_flush + b.st_compact) - (a.st_wal + a.st_flush + a.st_compact);
        bps = (double)(b.bytes_total - a.bytes_total) / window;
        r->bytes_per_s_min = r->bytes_per_s_min < 0 || bps < r->bytes_per_s_min ? bps : r->bytes_per_s_min;
        r->bytes_per_s_max = maxd(r->bytes_per_s_max, bps);
        r->stall_adapter_us = maxd(r->stall_adapter_us, (double)b.window_stall_us[ADAPTER]);
        r->stall_lifecycle_us = maxd(r->stall_lifecycle_us, (double)lstall);
        r->stall_controller_us = maxd(r->stall_controller_us, (double)b.window_stall_us[CONTROLLER]);
        r->sync_catalog_us = maxd(r->sync_catalog_us, (double)b.cat_sync_window_us);
        r->sync_storage_us = maxd(r->sync_storage_us, (double)b.st_sync_window_us);
        r->ddl_offered += (double)offered;
        r->ddl_completed += (double)d.lat.n;
        r->ddl_late += (double)d.late_started;
        qsort(d.lat.v, d.lat.n, sizeof(*d.lat.v), cmp_u64);
        qsort(d.svc.v, d.svc.n, sizeof(*d.svc.v), cmp_u64);
        if (d.lat.n) {
                double p95 = (double)pct(d.lat.v, d.lat.n, 95) / 1e3;
                r->ddl_p95_min_us = r->ddl_p95_min_us < 0 || p95 < r->ddl_p95_min_us ? p95 : r->ddl_p95_min_us;
                r->ddl_p95_max_us = maxd(r->ddl_p95_max_us, p95);
        }
        for (size_t i = 0; i < d.lat.n && !failed; i++)
                failed = !vec_push(&t->pairs, d.lat.v[i]);
        printf("round %" PRIu64 ": %.1f s, %" PRIu64 " publications, %" PRIu64 " records, %" PRIu64
               " bytes (%.2f kB/s); catalog WAL %" PRIu64 " bytes, storage WAL %" PRIu64 " bytes; DDL "
               "pairs %zu/%" PRIu64 " (started late %" PRIu64 ", finished after the window %" PRIu64
               ") p50 %.0f us p95 %.0f us max %.0f us (service, from the CREATE's send: p50 %.0f "
               "us p95 %.0f us); observer polls %" PRIu64 "; longest stall "
               "adapter %.1f ms lifecycle %.1f ms controller %.1f ms; longest sync catalog %.1f "
               "ms storage %.1f ms\n",
               round + 1, window, b.publications - a.publications, b.records_total - a.records_total,
               b.bytes_total - a.bytes_total, bps / 1e3, b.cat_wal - a.cat_wal, b.st_wal - a.st_wal,
               d.lat.n, offered, d.late_started, d.straddled,
               (double)pct(d.lat.v, d.lat.n, 50) / 1e3, (double)pct(d.lat.v, d.lat.n, 95) / 1e3,
               d.lat.n ? (double)d.lat.v[d.lat.n - 1] / 1e3 : 0.0,
               (double)pct(d.svc.v, d.svc.n, 50) / 1e3, (double)pct(d.svc.v, d.svc.n, 95) / 1e3,
               ob.c ? atomic_load(&ob.polls) - polls0 : 0,
               (double)b.window_stall_us[ADAPTER] / 1e3, (double)lstall / 1e3,
               (double)b.window_stall_us[CONTROLLER] / 1e3, (double)b.cat_sync_window_us / 1e3,
               (double)b.st_sync_window_us / 1e3);
        free(d.lat.v);
        free(d.svc.v);
        return !failed;
}

/* Kill each daemon in turn; all three serve again before the next kill.  False if one
 * did not. */
static bool run_restarts(struct row *r)
{
        static const int order[N_DAEMONS] = { ADAPTER, CONTROLLER, LIFECYCLE };
        double *ms[N_DAEMONS] = { &r->restart_adapter_ms, &r->restart_lifecycle_ms,
                                  &r->restart_controller_ms };
        bool failed = false;

        for (int k = 0; k < N_DAEMONS; k++) {
                int dmn = order[k];
                *ms[dmn] = restart(dmn, 60);
                printf("restart: %s serving %.1f ms after kill -9\n", daemon_name[dmn], *ms[dmn]);
                if (*ms[dmn] < 0)
                        failed = true;
        }
        return !failed;
}

/* r's figures from the totals of the rounds, and their line. */
static void run_totals(const struct opts *o, struct row *r, struct totals *t,
                       const struct snap *after)
{
        r->observe_s = t->total_s;
        r->inserts_per_s = (double)t->d_ins / t->total_s;
        r->table_write_interval_ms = r->inserts_per_s > 0 ? 1000.0 * (double)o->active / r->inserts_per_s : 0;
        r->publications = (double)t->d_pubs;
        r->pubs_per_s = (double)t->d_pubs / t->total_s;
        r->records_per_pub = t->d_pubs ? (double)t->d_recs / (double)t->d_pubs : 0;
        r->bytes_per_pub = t->d_pubs ? (double)t->d_bytes / (double)t->d_pubs : 0;
        r->bytes_per_s = (double)t->d_bytes / t->total_s;
        r->records_per_s = (double)t->d_recs / t->total_s;
        r->touched_per_pub = t->seen_pubs ? (double)t->sum_touched / (double)t->seen_pubs : 0;
        r->catalog_wal_bps = (double)t->d_cat_wal / t->total_s;
        r->catalog_written_bps = (double)t->d_cat_all / t->total_s;
        r->storage_wal_bps = (double)t->d_st_wal / t->total_s;
        r->storage_written_bps = (double)t->d_st_all / t->total_s;
        qsort(t->pairs.v, t->pairs.n, sizeof(*t->pairs.v), cmp_u64);
        r->ddl_p50_us = (double)pct(t->pairs.v, t->pairs.n, 50) / 1e3;
        r->ddl_p95_us = (double)pct(t->pairs.v, t->pairs.n, 95) / 1e3;
        r->ddl_p99_us = (double)pct(t->pairs.v, t->pairs.n, 99) / 1e3;
        r->ddl_max_us = t->pairs.n ? (double)t->pairs.v[t->pairs.n - 1] / 1e3 : 0;
        if (r->ddl_p95_min_us < 0)
                r->ddl_p95_min_us = 0;
        if (r->bytes_per_s_min < 0)
                r->bytes_per_s_min = 0;
        r->observer_polls_per_s = (double)t->polls / t->total_s;
        r->observer_rows_per_poll = t->polls ? (double)t->poll_rows / (double)t->polls : 0;
        r->observer_errors = (double)t->poll_errors;
        qsort(t->lag.v, t->lag.n, sizeof(*t->lag.v), cmp_u64);
        r->lag_p50_us = (double)pct(t->lag.v, t->lag.n, 50);
        r->lag_p99_us = (double)pct(t->lag.v, t->lag.n, 99);
        r->lag_n = (double)t->lag.n;
        r->commits_per_s = (double)t->d_commits / t->total_s;
        r->syncs_per_s = (double)t->d_syncs / t->total_s;
        r->cpu_adapter_pct = 100.0 * (double)t->cpu_sum[ADAPTER] / 1000.0 / t->total_s;
        r->cpu_lifecycle_pct = 100.0 * (double)t->cpu_sum[LIFECYCLE] / 1000.0 / t->total_s;
        r->cpu_controller_pct = 100.0 * (double)t->cpu_sum[CONTROLLER] / 1000.0 / t->total_s;
        printf("all rounds, %.1f s: %" PRIu64 " INSERTs (%.0f/s; each table every %.0f ms), %" PRIu64
               " publications, %" PRIu64 " records, %" PRIu64 " bytes; %" PRIu64 " commits, %" PRIu64
               " syncs; catalog WAL %" PRIu64 " bytes (all writes %" PRIu64 "), storage WAL %" PRIu64
               " bytes (all writes %" PRIu64 "); DDL pairs %.0f/%.0f; lag samples %zu (%" PRIu64
               " not seen), max %" PRIu64 " us; observer %" PRIu64 " polls (%.0f rows each, %" PRIu64
               " errors); CPU adapter %.1f%% lifecycle %.1f%% controller %.1f%%; publication errors %"
               PRIu64 ", reloads %" PRIu64 "; load average %.2f\n",
               t->total_s, t->d_ins, r->inserts_per_s, r->table_write_interval_ms, t->d_pubs, t->d_recs, t->d_bytes,
               t->d_commits, t->d_syncs, t->d_cat_wal, t->d_cat_all, t->d_st_wal, t->d_st_all, r->ddl_completed,
               r->ddl_offered, t->lag.n, t->lag_missed, t->lag.n ? t->lag.v[t->lag.n - 1] : 0, t->polls,
               r->observer_rows_per_poll, t->poll_errors, r->cpu_adapter_pct, r->cpu_lifecycle_pct,
               r->cpu_controller_pct, after->pub_errors, after->reloads, r->load1_end);
}

static int run_row(const struct opts *o)
{
        struct row r = { 0 };
        struct writer w = { 0 };
        struct totals t = { 0 };
        struct snap after;
        uint64_t sample_ns;
        char cat_dir[PATH_MAX] = "";
        bool failed = false;
        PGconn *c;
        FILE *f;

        r.nproc = (double)sysconf(_SC_NPROCESSORS_ONLN);
        r.setup_connections = (double)o->setup_conns;
        r.load1_start = load1();
        r.collections = (double)o->count;
        r.active = (double)o->active;
        r.interval_ms = (double)o->interval_ms;
        r.rounds = (double)o->rounds;
        r.ddl_rate_hz = o->ddl_rate_hz;
        snprintf(r.filler, sizeof(r.filler), "%s", filler_names[o->filler]);
        snprintf(r.shape, sizeof(r.shape), "%s", o->active >= o->count ? "active" : "sparse");
        snprintf(r.observer, sizeof(r.observer), "%s", o->poll ? "poll" : "none");
        if (!(c = connect_db(false)))
                return 1;

        printf("## %" PRIu64 " collections: %" PRIu64 " advancing tables, filler %s; publication every "
               "%" PRIu64 " ms; %" PRIu64 " round(s) of %" PRIu64 " s; DDL %.2f pairs/s; observer %s; "
               "load average %.2f\n", o->count, o->active, r.filler, o->interval_ms, o->rounds,
               o->observe_s, o->ddl_rate_hz, r.observer, r.load1_start);
        if (!run_setup(o, c, &r, cat_dir, sizeof(cat_dir))) {
                PQfinish(c);
                return 1;
        }

        /* The load, a warm-up (the indexes' first bounds), then the rounds. */
        w.tables = o->active;
        w.period_ns = o->write_interval_ms * 1000000ull / (o->active ? o->active : 1);
        if (pthread_create(&w.th, NULL, writer_main, &w) != 0) {
                PQfinish(c);
                return 1;
        }
        sleep_ns(o->warmup_s * 1000000000ull);
        sample_ns = o->interval_ms * 1000000ull / 10;
        if (sample_ns < 10000000ull)
                sample_ns = 10000000ull;
        if (sample_ns > 100000000ull)
                sample_ns = 100000000ull;
        r.bytes_per_s_min = -1;
        r.ddl_p95_min_us = -1;
        for (uint64_t round = 0; round < o->rounds && !failed; round++)
                failed = !run_round(o, round, sample_ns, &w, &r, &t);
        atomic_store(&w.stop, true);
        pthread_join(w.th, NULL);
        r.load1_end = load1();
        after = snapshot(ALL_DAEMONS);
        if (failed || w.failed || !after.ok || t.total_s <= 0) {
                fprintf(stderr, "bench-publication: the writer, DDL, observer or a status request failed\n");
                goto out;
        }
        r.cat_state_bytes_after = (double)(after.cat_state_sst + after.cat_state_mem);
        r.cat_state_keys_after = (double)after.cat_state_keys;
        r.cat_log_bytes_after = (double)(after.cat_log_sst + after.cat_log_mem);
        r.cat_log_keys_after = (double)after.cat_log_keys;
        if (cat_dir[0])
                r.cat_disk_bytes_after = (double)dir_bytes(cat_dir);
        r.pub_errors = (double)after.pub_errors;
        r.rss_adapter_end_kb = (double)rss_kb(after.pid[ADAPTER]);
        r.rss_lifecycle_end_kb = (double)rss_kb(after.pid[LIFECYCLE]);
        r.rss_controller_end_kb = (double)rss_kb(after.pid[CONTROLLER]);
        printf("memory after the rounds (VmRSS): adapter %.1f MB lifecycle %.1f MB controller %.1f MB\n",
               r.rss_adapter_end_kb / 1024, r.rss_lifecycle_end_kb / 1024, r.rss_controller_end_kb / 1024);
        if (o->restarts) {
                PQfinish(c);
                c = NULL;
                if (!run_restarts(&r))
                        failed = true;
        }

        run_totals(o, &r, &t, &after);
        printf("\n");
        md_header();
        md_row(&r);
        printf("\ncsv,");
        csv_header(stdout);
        printf("csv,");
        csv_line(stdout, &r);
        if (o->results && (f = fopen(o->results, "a"))) {
                if (ftell(f) == 0)
                        csv_header(f);
                csv_line(f, &r);
                fclose(f);
        }
out:
        free(t.lag.v);
        free(t.pairs.v);
        PQfinish(c);
        return !failed && !w.failed && t.d_pubs ? 0 : 1;
}

int main(int argc, char **argv)
{
        struct opts o = { .count = 1000, .interval_ms = 1000, .rounds = 1, .observe_s = 10, .warmup_s = 3,
                          .write_interval_ms = 100, .batch = 200, .active = 10, .restarts = true,
                          .setup_conns = 4 };
        char *active_s = NULL, *filler = NULL, *results = NULL, *report_path = NULL, *plot_path = NULL,
             *rate_s = NULL, *observer = NULL;
        bool quick = false;
        const struct conf_option opts[] = {
                { "conninfo", CONF_STR, &conninfo, 0, "libpq connection string" },
                { "run-dir", CONF_STR, &run_dir, 0, "the instance's run directory (daemons' status)" },
                { "collection-count", CONF_U64, &o.count, 10000000, "collections (tables + indexes) (default 1000)" },
                { "active-collections", CONF_STR, &active_s, 0, "advancing tables, or `all` (default 10)" },
                { "filler-kind", CONF_STR, &filler, 0, "indexes (indexed views over a support view), tables, sources (counters, UP TO 1), sinks (of a support table) or refresh (MVs REFRESH EVERY '1 hour'); default indexes" },
                { "publication-interval-ms", CONF_U64, &o.interval_ms, 3600000, "the follower's cadence, as started (default 1000)" },
                { "publication-rounds", CONF_U64, &o.rounds, 1000, "observation windows (default 1)" },
                { "observation-seconds", CONF_U64, &o.observe_s, 86400, "each window (default 10)" },
                { "warmup-seconds", CONF_U64, &o.warmup_s, 3600, "load before the first window (default 3)" },
                { "ddl-rate-hz", CONF_STR, &rate_s, 0, "CREATE/DROP TABLE pairs per second on a fixed schedule (default 0: none)" },
                { "observer", CONF_STR, &observer, 0, "none, or poll: a client polling coord_frontiers (default none)" },
                { "restarts", CONF_BOOL, &o.restarts, 0, "kill -9 and restart each daemon after the rounds (default true)" },
                { "write-interval-ms", CONF_U64, &o.write_interval_ms, 3600000, "each advancing table gets an INSERT this often (default 100)" },
                { "batch", CONF_U64, &o.batch, 100000, "statements per setup query string (default 200)" },
                { "setup-connections", CONF_U64, &o.setup_conns, 64, "connections creating the filler objects in parallel (default 4)" },
                { "results", CONF_STR, &results, 0, "append the CSV line to this file" },
                { "report", CONF_STR, &report_path, 0, "print the markdown table of a results file, nothing else" },
                { "plot", CONF_STR, &plot_path, 0, "with --report: also draw this PNG with gnuplot" },
                { "quick", CONF_BOOL, &quick, 0, "a smoke run: 100 collections, one 2 s round, 1 s warm-up" },
        };
        char *args[8], err[256];
        int nargs = 0, r, ex;

        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--quick") == 0 || strcmp(argv[i], "--quick=true") == 0)
                        o.count = 100, o.observe_s = 2, o.warmup_s = 1, o.rounds = 1;
        if (argc > 48 || (r = conf_parse(argc, argv, "bench", opts, ELEMENTSOF(opts), args, &nargs,
                                         err, sizeof(err))) < 0 || nargs) {
                if (argc <= 48 && nargs == 0)
                        fprintf(stderr, "bench-publication: %s\n", err);
                fprintf(stderr, "usage: bench-publication --conninfo STR --run-dir DIR [--collection-count N] "
                                "[--active-collections N|all] "
                                "[--filler-kind indexes|tables|sources|sinks|refresh] [--publication-interval-ms MS] [--publication-rounds N] "
                                "[--observation-seconds S] [--warmup-seconds S] [--ddl-rate-hz R] "
                                "[--observer none|poll] [--restarts=BOOL] [--write-interval-ms MS] [--batch N] "
                                "[--setup-connections N] [--results FILE] [--quick]\n"
                                "       bench-publication --report FILE [--plot PNG]\n");
                return 64;
        }
        if (r == 1) {
                conf_usage(stdout, opts, ELEMENTSOF(opts));
                return 0;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (report_path) {
                ex = report(report_path);
                if (plot_path && plot(report_path, plot_path) != 0)
                        ex = 1;
                goto out;
        }
        if (active_s)
                o.active = strcmp(active_s, "all") == 0 ? o.count : strtoull(active_s, NULL, 10);
        if (o.active > o.count)
                o.active = o.count;
        if (rate_s) {
                char *end;
                o.ddl_rate_hz = strtod(rate_s, &end);
                if (*end || o.ddl_rate_hz < 0 || o.ddl_rate_hz > 10000)
                        o.ddl_rate_hz = -1;
        }
        o.poll = observer && strcmp(observer, "poll") == 0;
        o.filler = _FILLER_MAX;
        for (int k = 0; k < _FILLER_MAX; k++)
                if (!filler || strcmp(filler, filler_names[k]) == 0) {
                        o.filler = (enum filler)k;
                        break;
                }
        if (o.filler == FILLER_SINKS) {
                /* the adapter creates the files; the same user, the same machine */
                snprintf(sink_dir, sizeof(sink_dir), "%s/sinks", run_dir ? run_dir : "/tmp");
                (void)mkdir(sink_dir, 0755);
        }
        o.results = results;
        if (!conninfo || !run_dir || !o.count || !o.active || !o.batch || !o.setup_conns || !o.observe_s || !o.rounds ||
            o.ddl_rate_hz < 0 || (observer && !o.poll && strcmp(observer, "none") != 0) ||
            o.filler == _FILLER_MAX) {
                fprintf(stderr, "bench-publication: --conninfo and --run-dir are needed; --collection-count, "
                                "--active-collections, --batch, --setup-connections, --observation-seconds, --publication-rounds > 0; "
                                "--ddl-rate-hz 0..10000; --observer none|poll; --filler-kind indexes|tables|sources|sinks|refresh\n");
                ex = 64;
                goto out;
        }
        ex = run_row(&o);
out:
        conf_done(opts, ELEMENTSOF(opts));
        return ex;
}
