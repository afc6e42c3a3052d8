/* coord-drill -- the recovery drill (issue 30): the workload, the kills and restarts,
 * options and the report.  What it checks and why: coord-drill.h's notes; the checks:
 * coord-drill-check.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <libpq-fe.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf.h"
#include "coord-drill.h"
#include "node/node.h"
#include "util.h"

static const char *const daemon_name[N_DAEMONS] = { "adapter", "lifecycle", "controller" };
static const Coord__Role daemon_role[N_DAEMONS] = {
        COORD__ROLE__ROLE_ADAPTER, COORD__ROLE__ROLE_LIFECYCLE, COORD__ROLE__ROLE_CONTROLLER,
};

/* The kill schedule is a function of --seed alone. */
static uint64_t rnd(uint64_t *s)
{
        return splitmix64(s);
}

void msleep(uint64_t ms)
{
        struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

double ms_since(uint64_t t0_ns)
{
        return (double)(now_ns() - t0_ns) / 1e6;
}

/* A workload error, printed for the first 20 (the rest are counted). */
void note_error(struct drill *dr, const char *what, PGconn *c, PGresult *r)
{
        if (atomic_fetch_add(&dr->errors_printed, 1) >= 20)
                return;
        fprintf(stderr, "drill: %s failed: %s%s", what,
                r && PQresultErrorField(r, PG_DIAG_SQLSTATE) ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : "",
                r ? PQresultErrorMessage(r) : PQerrorMessage(c));
}

/* A connection, trying until it works or the drill stops (*backoff_ms: 10 doubling to
 * 500 between tries); NULL when stopping. */
PGconn *connect_backoff(struct drill *dr, uint64_t *backoff_ms)
{
        while (!atomic_load(&dr->stop)) {
                PGconn *c = PQconnectdb(dr->conninfo);

                if (PQstatus(c) == CONNECTION_OK) {
                        *backoff_ms = 10;
                        return c;
                }
                PQfinish(c);
                msleep(*backoff_ms);
                *backoff_ms = *backoff_ms * 2 > 500 ? 500 : *backoff_ms * 2;
        }
        return NULL;
}

/* Run sql; a good result or NULL.  On a failure the connection is dropped when it
 * broke (*c = NULL), and the error is printed when what is not NULL. */
PGresult *exec_sql(struct drill *dr, PGconn **c, const char *sql, const char *what)
{
        PGresult *r = PQexec(*c, sql);
        ExecStatusType st = PQresultStatus(r);

        if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
                return r;
        if (PQstatus(*c) != CONNECTION_OK) {
                PQfinish(*c);
                *c = NULL;
        } else if (what)
                note_error(dr, what, *c, r);
        PQclear(r);
        return NULL;
}

/* ---- the workload ---------------------------------------------------------------- */

static void *insert_client(void *arg)
{
        struct client *cl = arg;
        struct drill *dr = cl->dr;
        uint64_t backoff = 10;
        PGconn *c = NULL;
        char sql[512];

        while (!atomic_load(&dr->stop)) {
                unsigned table = (unsigned)(rnd(&cl->rng) % dr->tables), n = 1 + (unsigned)(rnd(&cl->rng) % 4);
                size_t first;
                PGresult *r;
                int len;

                if (!c && !(c = connect_backoff(dr, &backoff)))
                        break;
                /* coord-drill.h note 1: logged before it is sent. */
                pthread_mutex_lock(&dr->wlock);
                if (GROW_ARRAY(dr->w, dr->capw, dr->nw + n) < 0) {
                        pthread_mutex_unlock(&dr->wlock);
                        fprintf(stderr, "drill: out of memory\n");
                        break;
                }
                first = dr->nw;
                for (unsigned i = 0; i < n; i++)
                        dr->w[first + i] = (struct wrow){ .stmt = dr->stmts, .table = (uint8_t)table,
                                                          .state = S_INFLIGHT };
                dr->stmts++;
                dr->nw += n;
                pthread_mutex_unlock(&dr->wlock);

                len = snprintf(sql, sizeof(sql), "INSERT INTO drill_%s_t%u VALUES", dr->tag, table);
                for (unsigned i = 0; i < n; i++)
                        len += snprintf(sql + len, sizeof(sql) - (size_t)len, "%s (%zu, %zu)", i ? "," : "",
                                        first + i + 1, (first + i + 1) % 1000);
                r = exec_sql(dr, &c, sql, "INSERT");
                pthread_mutex_lock(&dr->wlock);
                for (unsigned i = 0; i < n; i++)
                        dr->w[first + i].state = r ? S_ACKED : S_MAYBE;
                pthread_mutex_unlock(&dr->wlock);
                if (r) {
                        atomic_fetch_add(&dr->ins_acked, 1);
                        atomic_fetch_add(&dr->rows_acked, n);
                        PQclear(r);
                } else
                        atomic_fetch_add(&dr->ins_failed, 1);
                if (!c)
                        atomic_fetch_add(&dr->reconnects, 1);
                msleep(dr->insert_pause_ms);
        }
        PQfinish(c);
        return NULL;
}

/* The index of a live object (ACKED or SEEN present, not base) of this kind, picked at
 * random, or -1.  Under dlock. */
static ssize_t pick_live(struct drill *dr, uint8_t kind, uint64_t *rng, size_t *ret_live)
{
        size_t live = 0;
        ssize_t pick = -1;

        for (size_t i = 0; i < dr->nd; i++) {
                struct dobj *o = &dr->d[i];
                if (o->kind != kind || o->base || !o->present || (o->state != S_ACKED && o->state != S_SEEN))
                        continue;
                /* reservoir sampling: each live one with probability 1/live */
                if (rnd(rng) % ++live == 0)
                        pick = (ssize_t)i;
        }
        *ret_live = live;
        return pick;
}

/* One DDL statement of the ddl/mv/index workload, of a kind picked at random among
 * those on: a CREATE while fewer than 3 objects of the kind live, a DROP above 6, either
 * in between.  Indexes are made only on the base tables and views, which are never
 * dropped (an index goes with what it indexes, behind the log's back). */
static void ddl_step(struct drill *dr, PGconn **c, uint64_t *rng)
{
        uint8_t kinds[3], kind;
        unsigned nk = 0, t = (unsigned)(rnd(rng) % dr->tables);
        char sql[384];
        size_t live, idx;
        ssize_t pick;
        bool create;
        PGresult *r;

        if (dr->w_ddl)
                kinds[nk++] = K_TABLE;
        if (dr->w_mv)
                kinds[nk++] = K_MV;
        if (dr->w_index)
                kinds[nk++] = K_INDEX;
        kind = kinds[rnd(rng) % nk];
        pthread_mutex_lock(&dr->dlock);
        pick = pick_live(dr, kind, rng, &live);
        create = live < 3 || (live <= 6 && rnd(rng) % 2);
        if (create) {
                struct dobj *o;

                if (GROW_ARRAY(dr->d, dr->capd, dr->nd + 1) < 0) {
                        pthread_mutex_unlock(&dr->dlock);
                        return;
                }
                idx = dr->nd++;
                o = &dr->d[idx];
                *o = (struct dobj){ .kind = kind, .state = S_INFLIGHT, .present = true };
                snprintf(o->name, sizeof(o->name), "drill_%s_%c%u", dr->tag, "dvi"[kind], dr->next_obj++);
                if (kind == K_MV) {
                        snprintf(o->def, sizeof(o->def), "SELECT count(*) AS n, sum(v) AS s FROM drill_%s_t%u "
                                 "WHERE v %% 5 = %u", dr->tag, t, (unsigned)(rnd(rng) % 5));
                        snprintf(sql, sizeof(sql), "CREATE MATERIALIZED VIEW %s AS %s", o->name, o->def);
                } else if (kind == K_INDEX && dr->w_mv && rnd(rng) % 2)
                        snprintf(sql, sizeof(sql), "CREATE INDEX %s ON drill_%s_m%u (n)", o->name, dr->tag, t);
                else if (kind == K_INDEX)
                        snprintf(sql, sizeof(sql), "CREATE INDEX %s ON drill_%s_t%u (v)", o->name, dr->tag, t);
                else
                        snprintf(sql, sizeof(sql), "CREATE TABLE %s (a int)", o->name);
        } else {
                idx = (size_t)pick;
                dr->d[idx].state = S_INFLIGHT;
                dr->d[idx].present = false;
                snprintf(sql, sizeof(sql), "DROP %s %s",
                         kind == K_MV ? "MATERIALIZED VIEW" : kind == K_INDEX ? "INDEX" : "TABLE", dr->d[idx].name);
        }
        pthread_mutex_unlock(&dr->dlock);

        r = exec_sql(dr, c, sql, create ? "CREATE" : "DROP");
        pthread_mutex_lock(&dr->dlock);
        dr->d[idx].state = r ? S_ACKED : S_MAYBE;
        pthread_mutex_unlock(&dr->dlock);
        atomic_fetch_add(r ? &dr->ddl_acked : &dr->ddl_failed, 1);
        PQclear(r);
}

static void *ddl_client(void *arg)
{
        struct client *cl = arg;
        struct drill *dr = cl->dr;
        uint64_t backoff = 10;
        PGconn *c = NULL;

        while (!atomic_load(&dr->stop)) {
                if (!c && !(c = connect_backoff(dr, &backoff)))
                        break;
                ddl_step(dr, &c, &cl->rng);
                if (!c)
                        atomic_fetch_add(&dr->reconnects, 1);
                msleep(dr->ddl_pause_ms);
        }
        PQfinish(c);
        return NULL;
}

/* ---- kills and restarts -------------------------------------------------------------- */

/* Follower k of the fleet is the active holder of the duty lease (lifecycle-duty.c
 * note 7): its pid and state seq. */
static bool follower_active(struct drill *dr, unsigned k, pid_t *pid, uint64_t *seq)
{
        _cleanup_free_ char *path = node_socket_path_id(dr->run_dir, COORD__ROLE__ROLE_LIFECYCLE, k);
        Coord__StatusReply *s = NULL;
        bool yes;

        if (!path || node_query_status_path(path, 1000, &s) < 0)
                return false;
        yes = s->ready && s->detail && strstr(s->detail, " duty=active ");
        *pid = s->pid;
        *seq = s->catalog_seq;
        coord__status_reply__free_unpacked(s, NULL);
        return yes;
}

/* The active follower of the fleet (the one to kill), or -1. */
static int fleet_holder(struct drill *dr, pid_t *pid, uint64_t *seq)
{
        for (unsigned k = 0; k < (dr->followers ? dr->followers : 1); k++)
                if (follower_active(dr, k, pid, seq))
                        return (int)k;
        return -1;
}

/* The daemon's pid from its status, else from its pid file; -1 when neither.  The
 * lifecycle's of a fleet: the active follower's. */
static pid_t daemon_pid(struct drill *dr, int d)
{
        Coord__StatusReply *s = NULL;
        _cleanup_free_ char *path = NULL;
        pid_t pid = -1;
        FILE *f;

        if (d == LIFECYCLE && dr->followers > 1) {
                uint64_t seq;

                return fleet_holder(dr, &pid, &seq) >= 0 ? pid : -1;
        }
        if (node_query_status(dr->run_dir, daemon_role[d], 1000, &s) == 0) {
                pid = s->pid;
                coord__status_reply__free_unpacked(s, NULL);
                return pid;
        }
        path = node_pid_path(dr->run_dir, daemon_role[d]);
        if (path && (f = fopen(path, "re"))) {
                int v;
                if (fscanf(f, "%d", &v) == 1 && v > 0)
                        pid = v;
                fclose(f);
        }
        return pid;
}

/* Status catalog_seq of a daemon; 0 when it does not answer. */
static uint64_t daemon_seq(struct drill *dr, int d)
{
        Coord__StatusReply *s = NULL;
        uint64_t v = 0;

        if (node_query_status(dr->run_dir, daemon_role[d], 1000, &s) == 0) {
                v = s->ready ? s->catalog_seq : 0;
                coord__status_reply__free_unpacked(s, NULL);
        }
        return v;
}

/* Serving again: the adapter answers a new connection's SELECT 1; the controller
 * serves a read of a table; a lifecycle follower holds the duty (enacts) and has
 * applied the adapter's last commit. */
static bool serving(struct drill *dr, int d, PGconn **c)
{
        char sql[128];
        PGresult *r;

        if (d == LIFECYCLE) {
                uint64_t a = daemon_seq(dr, ADAPTER), l = 0;
                pid_t pid;

                return a && fleet_holder(dr, &pid, &l) >= 0 && l >= a;
        }
        if (!*c) {
                *c = PQconnectdb(dr->conninfo);
                if (PQstatus(*c) != CONNECTION_OK) {
                        PQfinish(*c);
                        *c = NULL;
                        return false;
                }
        }
        snprintf(sql, sizeof(sql), d == ADAPTER ? "SELECT 1" : "SELECT count(*) FROM drill_%s_t0", dr->tag);
        r = exec_sql(dr, c, sql, NULL);
        PQclear(r);
        return r != NULL;
}

/* kill -9 daemon d, `tools/coord up`, wait until it serves: ms from the kill to
 * serving, or -1 (printed). */
static double kill_restart(struct drill *dr, int d, PGconn **c, pid_t *ret_pid, double *ret_exited_ms)
{
        pid_t pid = daemon_pid(dr, d);
        uint64_t t0, limit_ns = dr->restart_timeout_s * 1000000000ull;
        int r;

        *ret_pid = pid;
        if (pid <= 0) {
                fprintf(stderr, "drill: no pid for the %s (status and pid file)\n", daemon_name[d]);
                return -1;
        }
        t0 = now_ns();
        if (kill(pid, SIGKILL) < 0) {
                fprintf(stderr, "drill: kill %s pid %d: %s\n", daemon_name[d], (int)pid, strerror(errno));
                return -1;
        }
        /* The role lock goes with the last thread's files (proc_gone()): until then a
         * new daemon would exit with 75. */
        while (!proc_gone(pid)) {
                if (now_ns() - t0 > limit_ns) {
                        fprintf(stderr, "drill: %s pid %d still there after kill -9\n", daemon_name[d], (int)pid);
                        return -1;
                }
                msleep(1);
        }
        *ret_exited_ms = ms_since(t0);
        r = run_coord(dr, "up", NULL, 0);
        if (r != 0) {
                fprintf(stderr, "drill: tools/coord up exited %d after kill -9 of the %s (see %s)\n", r,
                        daemon_name[d], dr->log_path);
                return -1;
        }
        while (!serving(dr, d, c)) {
                if (now_ns() - t0 > limit_ns) {
                        fprintf(stderr, "drill: %s not serving %" PRIu64 " s after kill -9\n", daemon_name[d],
                                dr->restart_timeout_s);
                        return -1;
                }
                msleep(2);
        }
        return ms_since(t0);
}

/* --test-expect-loss: delete one acknowledged row through SQL, behind the workload's
 * back; the next check must report it lost. */
static void delete_acked_row(struct drill *dr, PGconn **c)
{
        char sql[128];
        bool found;
        size_t k;
        PGresult *r;

        pthread_mutex_lock(&dr->wlock);
        for (k = 0; k < dr->nw && (dr->w[k].state != S_ACKED || dr->w[k].trimmed); k++)
                ;
        found = k < dr->nw;
        if (found)
                snprintf(sql, sizeof(sql), "DELETE FROM drill_%s_t%u WHERE id = %zu", dr->tag, dr->w[k].table, k + 1);
        pthread_mutex_unlock(&dr->wlock);
        if (!found || !*c)
                return;
        r = exec_sql(dr, c, sql, "the test's DELETE");
        if (r) {
                dr->expect_lost_id = k + 1;
                printf("drill: test: deleted acknowledged row id=%zu behind the workload's back\n", k + 1);
        }
        PQclear(r);
}

/* ---- setup, options, report ---------------------------------------------------------- */

/* Run a statement of the drill's setup, which must succeed: -EIO, printed, if not. */
static int exec_setup(PGconn *c, const char *sql)
{
        PGresult *r = PQexec(c, sql);

        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
                fprintf(stderr, "drill: %s: %s", sql, PQresultErrorMessage(r));
                PQclear(r);
                return -EIO;
        }
        PQclear(r);
        return 0;
}

static int add_base(struct drill *dr, PGconn *c, uint8_t kind, unsigned t)
{
        struct dobj *o;
        char sql[384];

        if (GROW_ARRAY(dr->d, dr->capd, dr->nd + 1) < 0)
                return -ENOMEM;
        o = &dr->d[dr->nd];
        *o = (struct dobj){ .kind = kind, .state = S_ACKED, .present = true, .base = true };
        snprintf(o->name, sizeof(o->name), "drill_%s_%c%u", dr->tag, kind == K_MV ? 'm' : 't', t);
        if (kind == K_MV) {
                snprintf(o->def, sizeof(o->def), "SELECT count(*) AS n, sum(v) AS s FROM drill_%s_t%u", dr->tag, t);
                snprintf(sql, sizeof(sql), "CREATE MATERIALIZED VIEW %s AS %s", o->name, o->def);
        } else
                snprintf(sql, sizeof(sql), "CREATE TABLE %s (id bigint NOT NULL, v bigint)", o->name);
        if (exec_setup(c, sql) < 0)
                return -EIO;
        dr->nd++;
        return 0;
}

/* An object of the start that is neither table nor view (the sink, the source). */
static int add_other(struct drill *dr, const char *fmt, ...)
{
        struct dobj *o;
        va_list ap;

        if (GROW_ARRAY(dr->d, dr->capd, dr->nd + 1) < 0)
                return -ENOMEM;
        o = &dr->d[dr->nd++];
        *o = (struct dobj){ .kind = K_OTHER, .state = S_ACKED, .present = true, .base = true };
        va_start(ap, fmt);
        vsnprintf(o->name, sizeof(o->name), fmt, ap);
        va_end(ap);
        return 0;
}

/* Drop what the drill made and still holds (tables with CASCADE take their views). */
static void drop_all(struct drill *dr, PGconn *c)
{
        for (size_t k = 0; k < dr->nd; k++) {
                const struct dobj *o = &dr->d[k];
                char sql[128];

                if (!o->present || o->kind != K_TABLE)
                        continue;
                snprintf(sql, sizeof(sql), "DROP TABLE IF EXISTS %s CASCADE", o->name);
                PQclear(PQexec(c, sql));
        }
        if (dr->w_source) {
                char sql[128];

                snprintf(sql, sizeof(sql), "DROP SOURCE IF EXISTS drill_%s_c CASCADE", dr->tag);
                PQclear(PQexec(c, sql));
        }
        if (dr->w_sink)
                (void)unlink(dr->sink_path);
}

/* A comma list of names into flags; -EINVAL on an unknown one. */
static int parse_list(const char *list, const char *const *names, size_t n, bool *ret)
{
        _cleanup_free_ char *copy = strdup(list);
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
                size_t i;
                for (i = 0; i < n && strcmp(p, names[i]) != 0; i++)
                        ;
                if (i == n)
                        return -EINVAL;
                ret[i] = true;
        }
        return 0;
}

static void pct(uint64_t *v, size_t n, uint64_t *p50, uint64_t *p99)
{
        *p50 = n ? u64_nth(v, n, (n - 1) / 2) : 0;
        *p99 = n ? u64_nth(v, n, (size_t)(0.99 * (double)(n - 1) + 0.5)) : 0;
}

static void usage(FILE *f, const struct conf_option *opts, size_t n)
{
        fprintf(f, "Usage: coord-drill --coord PATH --run-dir DIR --pg-port N [options]\n"
                   "       (tools/coord drill [--fresh] [options] sets the first three)\n\n");
        conf_usage(f, opts, n);
}

/* The run's connection string, tag, log and sink paths. */
static int drill_names(struct drill *dr)
{
        _cleanup_free_ char *home = NULL;

        snprintf(dr->conninfo, sizeof(dr->conninfo),
                 "host=127.0.0.1 port=%" PRIu64 " user=coord dbname=coord connect_timeout=5", dr->pg_port);
        /* Names of this run: drill_<tag>_..., so a drill on a used instance meets nothing. */
        snprintf(dr->tag, sizeof(dr->tag), "%" PRIx64, (uint64_t)((wall_ms() ^ ((uint64_t)getpid() << 20)) & 0xffffffffffull));
        /* tools/coord keeps <home>/run and <home>/log; the first `up` may create both */
        home = strdup(dr->run_dir);
        if (!home)
                return -ENOMEM;
        snprintf(dr->log_path, sizeof(dr->log_path), "%s/log", dirname(home));
        snprintf(dr->sink_path, sizeof(dr->sink_path), "%s/drill_%s_k.out", home, dr->tag);
        (void)mkdir(dr->log_path, 0755);
        strncat(dr->log_path, "/drill.log", sizeof(dr->log_path) - strlen(dr->log_path) - 1);
        return 0;
}

/* The sink and the source of the workload, as it asks. */
static int create_others(struct drill *dr, PGconn *chk)
{
        char sql[PATH_MAX + 128];

        if (dr->w_sink) {
                snprintf(sql, sizeof(sql), "CREATE SINK drill_%s_k FROM drill_%s_t0 INTO FILE '%s'", dr->tag,
                         dr->tag, dr->sink_path);
                if (exec_setup(chk, sql) < 0)
                        return -1;
                if (add_other(dr, "drill_%s_k", dr->tag) < 0)
                        return -1;
        }
        if (dr->w_source) {
                snprintf(sql, sizeof(sql), "CREATE SOURCE drill_%s_c FROM LOAD GENERATOR COUNTER "
                         "(TICK INTERVAL '20ms')", dr->tag);
                if (exec_setup(chk, sql) < 0)
                        return -1;
                if (add_other(dr, "drill_%s_c", dr->tag) < 0 ||
                    add_other(dr, "drill_%s_c_progress", dr->tag) < 0)
                        return -1;
        }
        return 0;
}

/* The kills, at random gaps, each followed by a check; the violations found. */
static uint64_t kill_loop(struct drill *dr, PGconn **chk, uint64_t *rng)
{
        uint64_t viol = 0;

        for (uint64_t k = 1; k <= dr->kills; k++) {
                uint64_t gap = dr->min_gap_ms + rnd(rng) % (dr->max_gap_ms - dr->min_gap_ms + 1), v;
                int d, roles = 0, pick;
                double ms, exited_ms = 0;
                pid_t pid;

                for (d = 0; d < N_DAEMONS; d++)
                        roles += dr->kill_role[d];
                pick = (int)(rnd(rng) % (uint64_t)roles);
                for (d = 0; d < N_DAEMONS; d++)
                        if (dr->kill_role[d] && pick-- == 0)
                                break;
                msleep(gap);
                ms = kill_restart(dr, d, chk, &pid, &exited_ms);
                if (ms < 0) {
                        dr->restart_failures++;
                        viol++;
                        /* one more try to bring it back, so the drill can go on */
                        if (run_coord(dr, "up", NULL, 0) != 0)
                                return viol;
                } else
                        dr->restart_ms[d][dr->nrestart[d]++] = (uint64_t)(ms + 0.5);
                v = check_all(dr, chk);
                viol += v;
                printf("drill: kill=%" PRIu64 "/%" PRIu64 " daemon=%s pid=%d after_ms=%" PRIu64 " exited_ms=%.1f "
                       "serving_ms=%.1f rows_acked=%" PRIu64 " ddl_acked=%" PRIu64 " violations=%" PRIu64 "\n",
                       k, dr->kills, daemon_name[d], (int)pid, gap, exited_ms, ms,
                       (uint64_t)atomic_load(&dr->rows_acked), (uint64_t)atomic_load(&dr->ddl_acked), v);
                fflush(stdout);
                if (dr->test_expect_loss && k == 1)
                        delete_acked_row(dr, chk);
        }
        return viol;
}

/* The drill's figures and verdict. */
static int report(struct drill *dr, uint64_t t_start, uint64_t total_viol)
{
        _cleanup_free_ uint64_t *all = NULL;
        size_t nall = 0, at = 0;

        for (int d = 0; d < N_DAEMONS; d++)
                nall += dr->nrestart[d];
        all = calloc(nall + 1, sizeof(*all));
        if (!all)
                return -ENOMEM;
        printf("\ndrill: kills %zu of %" PRIu64 " in %.0f s:", nall, dr->kills, ms_since(t_start) / 1e3);
        for (int d = 0; d < N_DAEMONS; d++) {
                uint64_t p50, p99;
                if (!dr->nrestart[d])
                        continue;
                memcpy(all + at, dr->restart_ms[d], dr->nrestart[d] * sizeof(*all));
                at += dr->nrestart[d];
                pct(dr->restart_ms[d], dr->nrestart[d], &p50, &p99);
                printf(" %s %zu (p50 %" PRIu64 " ms, p99 %" PRIu64 " ms)", daemon_name[d], dr->nrestart[d], p50, p99);
        }
        {
                uint64_t p50, p99;
                pct(all, nall, &p50, &p99);
                printf("\ndrill: restart to serving (kill -9 to serving again): p50 %" PRIu64 " ms, p99 %" PRIu64
                       " ms; restarts failed %" PRIu64 "\n", p50, p99, dr->restart_failures);
        }
        printf("drill: INSERTs acknowledged %" PRIu64 " (%" PRIu64 " rows), failed %" PRIu64 " (afterwards present %"
               PRIu64 ", absent %" PRIu64 " rows); DDL acknowledged %" PRIu64 ", failed %" PRIu64 "; reconnects %"
               PRIu64 "\n", (uint64_t)atomic_load(&dr->ins_acked), (uint64_t)atomic_load(&dr->rows_acked),
               (uint64_t)atomic_load(&dr->ins_failed), dr->maybe_present, dr->maybe_absent,
               (uint64_t)atomic_load(&dr->ddl_acked), (uint64_t)atomic_load(&dr->ddl_failed),
               (uint64_t)atomic_load(&dr->reconnects));
        printf("drill: acknowledged writes lost %" PRIu64 ", duplicates %" PRIu64 ", half statements %" PRIu64
               ", phantoms %" PRIu64 ", read rows vanished %" PRIu64 ", absent rows reappeared %" PRIu64 "\n",
               dr->lost, dr->dups, dr->half, dr->phantoms, dr->vanished, dr->reappeared);
        printf("drill: DDL lost %" PRIu64 ", dropped objects back %" PRIu64 ", phantom objects %" PRIu64 "\n",
               dr->ddl_lost, dr->ddl_reappeared, dr->ddl_phantoms);
        printf("drill: checks %" PRIu64 ": I1 %" PRIu64 ", I2 %" PRIu64 ", I5 %" PRIu64 ", I6 %" PRIu64 ", I9 %" PRIu64
               " (%" PRIu64 " views compared), I10 %" PRIu64 " (%" PRIu64 " matches), reads failed %" PRIu64 "\n",
               dr->checks, dr->i1, dr->i2, dr->i5, dr->i6, dr->i9, dr->mv_compared, dr->i10, dr->check_matches,
               dr->read_failures);
        if (dr->w_sink || dr->w_source)
                printf("drill: sink checks %" PRIu64 " (%" PRIu64 " lines read), violations %" PRIu64
                       "; source checks %" PRIu64 " (%" PRIu64 " values), violations %" PRIu64 "\n", dr->sink_checks,
                       dr->sink_lines, dr->sink_bad, dr->source_checks, dr->source_n, dr->source_bad);
        printf("drill: verdict %s: lost %" PRIu64 ", violations %" PRIu64 " (seed %" PRIu64 ")\n",
               total_viol ? "FAIL" : "PASS", dr->lost, total_viol, dr->seed);
        return 0;
}

int main(int argc, char **argv)
{
        struct drill *dr = calloc(1, sizeof(*dr));
        struct client *cl = NULL;
        PGconn *chk = NULL;
        uint64_t backoff = 10, rng, v0, total_viol = 0, t_start = now_ns();
        size_t nclients = 0;
        int ex = NODE_EXIT_FAILURE, r, nargs = 0;
        char *args[8], err[256] = "";
        char *default_daemons = strdup("adapter,lifecycle,controller"), *default_workload = strdup("insert,ddl,mv,index,sink,source");
        static const char *const workloads[] = { "insert", "ddl", "mv", "index", "sink", "source" };
        bool w[6] = { false };

        if (!dr || !default_daemons || !default_workload)
                return NODE_EXIT_FAILURE;
        *dr = (struct drill){ .daemons = default_daemons, .workload = default_workload, .clients = 3, .tables = 3,
                              .min_gap_ms = 200, .max_gap_ms = 5000, .insert_pause_ms = 20, .ddl_pause_ms = 150,
                              .restart_timeout_s = 60, .max_rows = 100000, .seed = wall_ms() };
        const struct conf_option opts[] = {
                { "coord", CONF_STR, &dr->coord, 0, "tools/coord, run for `up` and `check`" },
                { "run-dir", CONF_STR, &dr->run_dir, 0, "the instance's run directory" },
                { "pg-port", CONF_U64, &dr->pg_port, 65535, "the adapter's SQL port" },
                { "kills", CONF_U64, &dr->kills, 10000000, "kills (default 30; --long: 2000 per daemon)" },
                { "long", CONF_BOOL, &dr->long_run, 0, "2000 kills per daemon unless --kills is given" },
                { "daemons", CONF_STR, &dr->daemons, 0, "which to kill (default adapter,lifecycle,controller)" },
                { "workload", CONF_STR, &dr->workload, 0, "insert,ddl,mv,index,sink,source (default all)" },
                { "seed", CONF_U64, &dr->seed, 0, "seed of the kill schedule (default: the clock, printed)" },
                { "clients", CONF_U64, &dr->clients, 64, "INSERT clients (default 3)" },
                { "tables", CONF_U64, &dr->tables, 255, "tables written (default 3)" },
                { "min-gap-ms", CONF_U64, &dr->min_gap_ms, 0, "shortest time between kills (default 200)" },
                { "max-gap-ms", CONF_U64, &dr->max_gap_ms, 0, "longest time between kills (default 5000)" },
                { "insert-pause-ms", CONF_U64, &dr->insert_pause_ms, 10000, "each INSERT client's pause (default 20)" },
                { "ddl-pause-ms", CONF_U64, &dr->ddl_pause_ms, 10000, "the DDL client's pause (default 150)" },
                { "restart-timeout-s", CONF_U64, &dr->restart_timeout_s, 3600, "kill to serving, at most (default 60)" },
                { "max-rows", CONF_U64, &dr->max_rows, 0,
                  "trim the tables above this many rows (default 100000; 0: never)" },
                { "followers", CONF_U64, &dr->followers, 16,
                  "lifecycle followers (tools/coord up --followers N; default 1): a lifecycle kill "
                  "kills the one holding the duty lease" },
                { "keep", CONF_BOOL, &dr->keep, 0, "keep the drill's tables and views at the end" },
                { "test-expect-loss", CONF_BOOL, &dr->test_expect_loss, 0,
                  "TEST ONLY: delete one acknowledged row after the first restart; the drill must fail" },
        };

        r = conf_parse(argc, argv, "drill", opts, ELEMENTSOF(opts), args, &nargs, err, sizeof(err));
        if (r == 1) {
                usage(stdout, opts, ELEMENTSOF(opts));
                ex = 0;
                goto out;
        }
        if (r < 0 || nargs || !dr->coord || !dr->run_dir || !dr->pg_port || !dr->clients || !dr->tables ||
            dr->tables > 255 ||
            dr->min_gap_ms > dr->max_gap_ms ||
            parse_list(dr->daemons, daemon_name, N_DAEMONS, dr->kill_role) < 0 ||
            parse_list(dr->workload, workloads, ELEMENTSOF(workloads), w) < 0) {
                fprintf(stderr, "coord-drill: %s\n", r < 0 ? err : "bad or missing arguments");
                usage(stderr, opts, ELEMENTSOF(opts));
                ex = NODE_EXIT_USAGE;
                goto out;
        }
        if (!dr->kill_role[ADAPTER] && !dr->kill_role[LIFECYCLE] && !dr->kill_role[CONTROLLER]) {
                fprintf(stderr, "coord-drill: --daemons names no daemon\n");
                ex = NODE_EXIT_USAGE;
                goto out;
        }
        dr->w_insert = w[0];
        dr->w_ddl = w[1];
        dr->w_mv = w[2];
        dr->w_index = w[3];
        dr->w_sink = w[4];
        dr->w_source = w[5];
        if (!dr->kills) {
                size_t roles = 0;
                for (int d = 0; d < N_DAEMONS; d++)
                        roles += dr->kill_role[d];
                dr->kills = dr->long_run ? 2000 * roles : 30;
        }
        if (drill_names(dr) < 0)
                goto out;
        pthread_mutex_init(&dr->wlock, NULL);
        pthread_mutex_init(&dr->dlock, NULL);
        for (int d = 0; d < N_DAEMONS; d++)
                if (!(dr->restart_ms[d] = calloc(dr->kills + 1, sizeof(uint64_t))))
                        goto out;

        printf("drill: seed=%" PRIu64 " kills=%" PRIu64 " daemons=%s workload=%s clients=%" PRIu64 " tables=%" PRIu64
               " gap_ms=%" PRIu64 "-%" PRIu64 " run_dir=%s port=%" PRIu64 " tag=%s followers=%" PRIu64 "\n", dr->seed,
               dr->kills, dr->daemons, dr->workload, dr->clients, dr->tables, dr->min_gap_ms, dr->max_gap_ms,
               dr->run_dir, dr->pg_port, dr->tag, dr->followers ? dr->followers : 1);
        fflush(stdout);
        if (run_coord(dr, "up", NULL, 0) != 0) {
                fprintf(stderr, "drill: tools/coord up failed (see %s)\n", dr->log_path);
                goto out;
        }
        if (!(chk = connect_backoff(dr, &backoff)))
                goto out;
        for (unsigned t = 0; t < dr->tables; t++)
                if (add_base(dr, chk, K_TABLE, t) < 0 || (dr->w_mv && add_base(dr, chk, K_MV, t) < 0))
                        goto out;
        if (create_others(dr, chk) < 0)
                goto out;

        rng = dr->seed;
        cl = calloc(dr->clients + 1, sizeof(*cl));
        if (!cl)
                goto out;
        for (size_t i = 0; i < dr->clients + 1; i++) {
                bool ddl = i == dr->clients;
                if (ddl ? !(dr->w_ddl || dr->w_mv || dr->w_index) : !dr->w_insert)
                        continue;
                cl[nclients] = (struct client){ .dr = dr, .rng = rnd(&rng) };
                if (pthread_create(&cl[nclients].thread, NULL, ddl ? ddl_client : insert_client, &cl[nclients]) != 0)
                        goto stop;
                nclients++;
        }
        msleep(1000);
        v0 = check_all(dr, &chk);
        total_viol += v0;
        printf("drill: check before the first kill: violations=%" PRIu64 "\n", v0);
        fflush(stdout);

        total_viol += kill_loop(dr, &chk, &rng);
stop:
        atomic_store(&dr->stop, true);
        for (size_t i = 0; i < nclients; i++)
                pthread_join(cl[i].thread, NULL);
        /* Quiet now: nothing in flight, every failure resolved by this last check. */
        v0 = check_all(dr, &chk);
        total_viol += v0;
        printf("drill: check after the workload stopped: violations=%" PRIu64 "\n", v0);
        if (!dr->keep && chk && !total_viol)
                drop_all(dr, chk);

        if (report(dr, t_start, total_viol) < 0)
                goto out;
        ex = total_viol ? NODE_EXIT_FAILURE : 0;
out:
        PQfinish(chk);
        free(cl);
        if (dr) {
                for (int d = 0; d < N_DAEMONS; d++)
                        free(dr->restart_ms[d]);
                free(dr->w);
                free(dr->d);
                free(dr->fr);
                free(dr->sink_sum);
                conf_done(opts, ELEMENTSOF(opts));
        }
        free(dr);
        return ex;
}
