/* coord-drill -- the recovery drill (issue 30): kill -9 one daemon at a time under a
 * workload, restart it the way an operator does (tools/coord up), and check after every
 * restart that nothing acknowledged was lost and no invariant broke.
 *
 *   coord-drill --coord PATH --run-dir DIR --pg-port N [--kills N] [--long]
 *               [--daemons adapter,lifecycle,controller] [--workload insert,ddl,mv,index]
 *               [--seed S] [--clients N] [--tables N] [--min-gap-ms MS] [--max-gap-ms MS]
 *               [--insert-pause-ms MS] [--ddl-pause-ms MS] [--restart-timeout-s S] [--keep]
 *
 * tools/coord drill runs it against the instance that tools/coord computes (COORD_HOME,
 * COORD_PG_PORT, ...), or against a fresh one under a temporary COORD_HOME with
 * --fresh; --coord is that script, used for `up` (restarts) and `check` (I10), with
 * the environment it was given.
 *
 * The workload (threads, one libpq connection each, reconnecting with backoff 10 ms
 * doubling to 500 ms whenever the adapter's death breaks it):
 *   insert  --clients clients INSERT 1-4 rows per statement into --tables tables
 *           drill_<tag>_t<K> (id bigint, v bigint); every id is unique in the run.
 *   ddl     one client: CREATE TABLE / DROP TABLE of tables of its own.
 *   mv      materialized views drill_<tag>_m<K> = count(*), sum(v) of each table from
 *           the start, and (the same DDL client) CREATE / DROP MATERIALIZED VIEW of
 *           filtered ones (WHERE v % 5 = r).
 *   index   (the same DDL client) CREATE INDEX / DROP INDEX on the tables and the
 *           materialized views of the start.
 *   sink    a sink drill_<tag>_k of the first table into <home>/drill_<tag>_k.out.
 *   source  a counter source drill_<tag>_c (TICK INTERVAL '20ms').
 *
 * NOTES ON THE EXPECTED STATE (RocksDB crash test's "expected state with pending marks").
 * (1) Every row and every object is written to the log before its statement is sent
 *     (INFLIGHT) and marked after the answer: ACKED on success, MAYBE on any failure (a
 *     broken connection, or an error: the write may have become durable before the
 *     answer was lost).  An id is never sent twice, so a MAYBE row is present at most
 *     once whatever happened.
 * (2) A check snapshots the states before it reads.  ACKED rows must be present exactly
 *     once; any row at most once; the rows of one statement all or none (one read is
 *     one timestamp); an id the log does not know is a phantom.
 * (3) The first check after a MAYBE was recorded resolves it to what it saw (SEEN
 *     PRESENT / SEEN ABSENT): the daemon that could still have written it has died and
 *     come back before that check, so from then on it is held like an acknowledged one
 *     (a row once read must stay; one once absent must not appear).
 * (4) Objects likewise: an acknowledged CREATE must be in coord_objects, an
 *     acknowledged DROP must not; the DDL client waits while a check holds the object
 *     log, so nothing but what was in flight before the check changes under it.
 * (5) The tables stay small enough to be read whole at every check: once they hold more
 *     than --max-rows rows, the drill itself deletes (DELETE ... WHERE id <= N, from
 *     the main thread between a check and the next kill, so no kill meets it) every row
 *     below the first one still unresolved, and expects those absent from then on.
 *
 * (6) The sink's file is complete below its progress P (coord_frontiers): each check
 *     reads the lines it has not read yet up to the first at or after P, adds their
 *     diffs per id, and compares with the first table AS OF P - 1 (readable there:
 *     R(sink, table) = P - 1, I6): every id there summed to 1, every other to 0; a sum
 *     above 1 or below 0 is a duplicate, a file shorter than what was read a loss.
 * (7) The counter source, read once at one timestamp: its rows are 1 .. n, each once,
 *     and its progress offset is n; n never goes back between checks.
 *
 * (8) A since and a bound (or requirement) are compared across two reads, the since
 *     first: coord_frontiers shows the controller's frontiers as they are when the
 *     read is served, coord_bounds the catalog at the read's timestamp, so one read
 *     joining both may pair a since with a bound older than the one that allowed it.
 *     A since read at t1 was allowed by a bound committed before t1, which a later
 *     read of coord_bounds shows (a publication's Ok is a read fence in the adapter,
 *     adapter-exec.c note 3), and bounds only grow: since(t1) > bound(t2) is a
 *     violation, whatever happened between.  Each I2 report is read again a second
 *     later (i2_recheck(), in the log) to tell a since still above from a lagging row.
 *
 * Checked after every restart (and once before the first kill and once after the
 * workload stopped): the rows and objects above (I7); I1 -- no bound, physical since
 * or stored upper in coord_bounds / coord_frontiers goes back between checks; I2 -- no
 * physical since (coord_frontiers.read_frontier) above its committed bound for
 * object_id >= 1000; I5 -- no requirement below its input's bound; I6 -- no input's
 * physical since above a consumer's requirement (an index's too); I9 -- each
 * materialized view read at T (mz_now()) equals its SQL over its table AS OF T;
 * I10 -- tools/coord check matches; the sink (note 6) and the source (note 7).  A read
 * that still fails after 5 tries over ~6 s
 * counts as a violation (I8: the contents or a clear error, and a serving instance
 * has no reason for the error).
 *
 * Exit status: 0 when every check held (0 lost, 0 violations, every restart served), 1
 * otherwise or on a runtime failure, 64 on a usage error.
 */
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
#include "node.h"
#include "util.h"

enum { ADAPTER, LIFECYCLE, CONTROLLER, N_DAEMONS };
static const char *const daemon_name[N_DAEMONS] = { "adapter", "lifecycle", "controller" };
static const Coord__Role daemon_role[N_DAEMONS] = {
        COORD__ROLE__ROLE_ADAPTER, COORD__ROLE__ROLE_LIFECYCLE, COORD__ROLE__ROLE_CONTROLLER,
};

/* States of a row or an object (notes 1 and 3). */
enum {
        S_INFLIGHT,     /* sent, no answer yet */
        S_ACKED,        /* acknowledged: must stay (present, or absent for a DROP) */
        S_MAYBE,        /* failed: either, until a check resolves it */
        S_SEEN,         /* resolved by a check: must stay as seen */
};

/* One row of the insert log; its id is its index + 1. */
struct wrow {
        uint32_t stmt;          /* rows of one INSERT share it, and are adjacent */
        uint8_t table;
        uint8_t state;
        bool seen_present;      /* with S_SEEN */
        bool reported;          /* a violation of this row was counted: once is enough */
        bool trimmed;           /* deleted by the drill itself (note 5): must be absent */
};

enum { K_TABLE, K_MV, K_INDEX, K_OTHER };      /* K_OTHER: the sink, the source */

/* One object the drill created or dropped (note 4).  present: what its state holds
 * about it -- being created (or created), or being dropped (or dropped). */
struct dobj {
        char name[64];
        char def[192];          /* a materialized view's SELECT, "" for a table */
        uint8_t kind, state;
        bool present, base;     /* base: created at the start, never dropped */
        bool reported;          /* its violation was counted */
};

struct front {
        uint64_t gid, bound, since, upper;
        uint64_t since_at, bound_at;    /* the check that read them (I2: note 8) */
};

struct drill {
        /* options */
        char *run_dir, *coord, *daemons, *workload;
        uint64_t pg_port, kills, seed, clients, tables, min_gap_ms, max_gap_ms,
                 insert_pause_ms, ddl_pause_ms, restart_timeout_s, max_rows;
        bool long_run, keep, test_expect_loss;

        bool kill_role[N_DAEMONS], w_insert, w_ddl, w_mv, w_index, w_sink, w_source;
        char sink_path[PATH_MAX];
        uint64_t sink_off, sink_lines, source_n;        /* notes 6 and 7 */
        int8_t *sink_sum;                               /* by id - 1 */
        size_t sink_cap;
        char conninfo[256], tag[32], log_path[PATH_MAX];
        atomic_bool stop;

        pthread_mutex_t wlock;  /* the insert log */
        struct wrow *w;
        size_t nw, capw;
        uint32_t stmts;
        size_t resolved, trimmed, present;      /* note 5, from the last check */
        bool trim_failed;

        pthread_mutex_t dlock;  /* the object log; a check holds it (note 4) */
        struct dobj *d;
        size_t nd, capd;
        uint32_t next_obj;

        atomic_uint_fast64_t ins_acked, rows_acked, ins_failed, ddl_acked, ddl_failed,
                             reconnects, errors_printed;

        /* results */
        uint64_t lost, vanished, dups, half, phantoms, reappeared, maybe_present, maybe_absent,
                 ddl_lost, ddl_reappeared, ddl_phantoms, i1, i2, i5, i6, i9, i10, read_failures,
                 sink_bad, sink_checks, source_bad, source_checks,
                 restart_failures, mv_compared, checks, check_matches, expect_lost_id;
        uint64_t front_checks;          /* check_frontiers() calls: note 8's stamps */
        uint64_t *restart_ms[N_DAEMONS];
        size_t nrestart[N_DAEMONS];
        struct front *fr;
        size_t nfr, capfr;
};

struct client {
        struct drill *dr;
        uint64_t rng;
        pthread_t thread;
};

/* The kill schedule is a function of --seed alone. */
static uint64_t rnd(uint64_t *s)
{
        return splitmix64(s);
}

static void msleep(uint64_t ms)
{
        struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static double ms_since(uint64_t t0_ns)
{
        return (double)(now_ns() - t0_ns) / 1e6;
}

/* A workload error, printed for the first 20 (the rest are counted). */
static void note_error(struct drill *dr, const char *what, PGconn *c, PGresult *r)
{
        if (atomic_fetch_add(&dr->errors_printed, 1) >= 20)
                return;
        fprintf(stderr, "drill: %s failed: %s%s", what,
                r && PQresultErrorField(r, PG_DIAG_SQLSTATE) ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : "",
                r ? PQresultErrorMessage(r) : PQerrorMessage(c));
}

/* A connection, trying until it works or the drill stops (*backoff_ms: 10 doubling to
 * 500 between tries); NULL when stopping. */
static PGconn *connect_backoff(struct drill *dr, uint64_t *backoff_ms)
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
static PGresult *exec_sql(struct drill *dr, PGconn **c, const char *sql, const char *what)
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
                /* Note 1: logged before it is sent. */
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

/* ---- checks ------------------------------------------------------------------------ */

/* A read for a check: 5 tries over ~6 s, reconnecting (also once the workload has
 * stopped); NULL and a read failure counted when all failed. */
static PGresult *check_read(struct drill *dr, PGconn **c, const char *sql)
{
        for (int attempt = 0; attempt < 5; attempt++) {
                PGresult *r;

                if (attempt)
                        msleep(200u << attempt);
                if (!*c) {
                        *c = PQconnectdb(dr->conninfo);
                        if (PQstatus(*c) != CONNECTION_OK) {
                                if (attempt == 4)
                                        note_error(dr, "a check's connection", *c, NULL);
                                PQfinish(*c);
                                *c = NULL;
                                continue;
                        }
                }
                r = exec_sql(dr, c, sql, attempt == 4 ? sql : NULL);
                if (r)
                        return r;
        }
        dr->read_failures++;
        return NULL;
}

static uint64_t val_u64(PGresult *r, int row, int col)
{
        return PQgetisnull(r, row, col) ? 0 : strtoull(PQgetvalue(r, row, col), NULL, 10);
}

/* Note 2: every table read once; the insert log's states snapshotted before.  Returns
 * the violations found. */
static uint64_t check_rows(struct drill *dr, PGconn **c)
{
        uint64_t bad = 0, *ids = NULL, *tab = NULL;
        size_t n0, n1, nids = 0, capids = 0, cap2 = 0;
        uint8_t *st = NULL, *cnt = NULL;
        char sql[128];

        pthread_mutex_lock(&dr->wlock);
        n0 = dr->nw;
        st = malloc(n0 + 1);
        for (size_t i = 0; st && i < n0; i++)
                st[i] = dr->w[i].state;
        pthread_mutex_unlock(&dr->wlock);
        if (!st)
                return 1;
        for (unsigned t = 0; t < dr->tables; t++) {
                PGresult *r;

                snprintf(sql, sizeof(sql), "SELECT id FROM drill_%s_t%u", dr->tag, t);
                if (!(r = check_read(dr, c, sql))) {
                        bad++;
                        continue;
                }
                if (GROW_ARRAY(ids, capids, nids + (size_t)PQntuples(r)) < 0 ||
                    GROW_ARRAY(tab, cap2, nids + (size_t)PQntuples(r)) < 0) {
                        PQclear(r);
                        bad++;
                        goto out;
                }
                for (int i = 0; i < PQntuples(r); i++) {
                        tab[nids] = t;
                        ids[nids++] = val_u64(r, i, 0);
                }
                PQclear(r);
        }

        pthread_mutex_lock(&dr->wlock);
        n1 = dr->nw;
        cnt = calloc(n1 + 1, 1);
        if (!cnt) {
                pthread_mutex_unlock(&dr->wlock);
                bad++;
                goto out;
        }
        for (size_t i = 0; i < nids; i++) {
                size_t k = (size_t)ids[i] - 1;
                if (ids[i] == 0 || k >= n1 || dr->w[k].table != tab[i]) {
                        if (dr->phantoms++ < 5)
                                fprintf(stderr, "drill: VIOLATION phantom row id=%" PRIu64 " in table t%" PRIu64
                                        " (never written there)\n", ids[i], tab[i]);
                        bad++;
                } else if (cnt[k] < 255)
                        cnt[k]++;
        }
        for (size_t k = 0; k < n1; k++) {
                struct wrow *w = &dr->w[k];
                uint8_t s = k < n0 ? st[k] : S_INFLIGHT;
                bool must = s == S_ACKED || (s == S_SEEN && w->seen_present);
                const char *v = NULL;

                if (w->trimmed) {
                        if (cnt[k]) {
                                v = "deleted by the drill and there again";
                                dr->reappeared += !w->reported;
                        }
                } else if (cnt[k] > 1) {
                        v = "duplicate";
                        dr->dups += !w->reported;
                } else if (must && cnt[k] == 0) {
                        v = s == S_ACKED ? "acknowledged and missing" : "read at an earlier check and missing";
                        if (!w->reported)
                                *(s == S_ACKED ? &dr->lost : &dr->vanished) += 1;
                } else if (s == S_SEEN && !w->seen_present && cnt[k]) {
                        v = "absent at an earlier check and there now";
                        dr->reappeared += !w->reported;
                } else if (k > 0 && w->stmt == dr->w[k - 1].stmt && !cnt[k] != !cnt[k - 1]) {
                        /* note 2: one statement, one table, one read: all its rows or none */
                        v = "half an INSERT (its other rows differ)";
                        dr->half += !w->reported;
                }
                if (v && !w->reported) {
                        fprintf(stderr, "drill: VIOLATION row id=%zu (table t%u, present %u times): %s\n", k + 1,
                                w->table, cnt[k], v);
                        w->reported = true;
                        bad++;
                }
                /* note 3: resolve a failure recorded before this check */
                if (s == S_MAYBE && w->state == S_MAYBE) {
                        w->state = S_SEEN;
                        w->seen_present = cnt[k] > 0;
                        if (cnt[k])
                                dr->maybe_present++;
                        else
                                dr->maybe_absent++;
                }
        }
        /* note 5: what a trim may delete, and whether it is time */
        for (dr->resolved = dr->trimmed; dr->resolved < n0; dr->resolved++)
                if (dr->w[dr->resolved].state == S_INFLIGHT || dr->w[dr->resolved].state == S_MAYBE)
                        break;
        dr->present = 0;
        for (size_t k = 0; k < n1; k++)
                dr->present += cnt[k] > 0;
        pthread_mutex_unlock(&dr->wlock);
out:
        free(st);
        free(cnt);
        free(ids);
        free(tab);
        return bad;
}

/* Note 5: delete every row below the first unresolved one when the tables hold more
 * than --max-rows; a table whose DELETE failed is not trimmed again (and the failure
 * fails the drill: nothing kills a daemon meanwhile). */
static uint64_t trim_rows(struct drill *dr, PGconn **c)
{
        bool done[256] = { false };
        size_t upto = dr->resolved;
        uint64_t bad = 0;

        if (!dr->max_rows || dr->trim_failed || dr->present <= dr->max_rows || upto <= dr->trimmed)
                return 0;
        for (unsigned t = 0; t < dr->tables; t++) {
                char sql[128];
                PGresult *r;

                snprintf(sql, sizeof(sql), "DELETE FROM drill_%s_t%u WHERE id <= %zu", dr->tag, t, upto);
                if (!*c || !(r = exec_sql(dr, c, sql, "the drill's own DELETE"))) {
                        fprintf(stderr, "drill: VIOLATION %s failed; no more trims\n", sql);
                        dr->trim_failed = true;
                        bad++;
                        continue;
                }
                PQclear(r);
                done[t] = true;
        }
        pthread_mutex_lock(&dr->wlock);
        for (size_t k = dr->trimmed; k < upto; k++)
                dr->w[k].trimmed = done[dr->w[k].table];
        if (!dr->trim_failed)
                dr->trimmed = upto;
        pthread_mutex_unlock(&dr->wlock);
        printf("drill: trimmed the tables to ids above %zu (%zu rows were present)\n", upto, dr->present);
        return bad;
}

/* I9: a materialized view at T against its SQL over its table AS OF T. */
static uint64_t check_mv(struct drill *dr, PGconn **c, const struct dobj *o)
{
        char sql[320], *t = NULL, got[2][64];
        PGresult *r;
        uint64_t bad = 0;

        snprintf(sql, sizeof(sql), "SELECT mz_now(), n, s FROM %s", o->name);
        if (!(r = check_read(dr, c, sql)))
                return 1;
        if (PQntuples(r) != 1) {
                fprintf(stderr, "drill: VIOLATION I9 %s has %d rows, 1 expected\n", o->name, PQntuples(r));
                PQclear(r);
                dr->i9++;
                return 1;
        }
        t = strdup(PQgetvalue(r, 0, 0));
        snprintf(got[0], sizeof(got[0]), "%s|%s", PQgetvalue(r, 0, 1),
                 PQgetisnull(r, 0, 2) ? "NULL" : PQgetvalue(r, 0, 2));
        PQclear(r);
        snprintf(sql, sizeof(sql), "%s AS OF %s", o->def, t ? t : "0");
        if (!t || !(r = check_read(dr, c, sql))) {
                free(t);
                return 1;
        }
        snprintf(got[1], sizeof(got[1]), "%s|%s", PQntuples(r) ? PQgetvalue(r, 0, 0) : "-",
                 PQntuples(r) && !PQgetisnull(r, 0, 1) ? PQgetvalue(r, 0, 1) : "NULL");
        PQclear(r);
        dr->mv_compared++;
        if (strcmp(got[0], got[1]) != 0) {
                fprintf(stderr, "drill: VIOLATION I9 %s at %s is %s, its SQL gives %s\n", o->name, t, got[0], got[1]);
                dr->i9++;
                bad++;
        }
        free(t);
        return bad;
}

/* Note 4, and I9 for every materialized view that must exist; holds dlock throughout. */
static uint64_t check_objects(struct drill *dr, PGconn **c)
{
        uint64_t bad = 0;
        PGresult *r;
        char sql[128];

        pthread_mutex_lock(&dr->dlock);
        snprintf(sql, sizeof(sql), "SELECT name FROM coord_objects WHERE name LIKE 'drill_%s_%%'", dr->tag);
        if (!(r = check_read(dr, c, sql))) {
                pthread_mutex_unlock(&dr->dlock);
                return 1;
        }
        for (int i = 0; i < PQntuples(r); i++) {
                size_t k;
                for (k = 0; k < dr->nd && strcmp(dr->d[k].name, PQgetvalue(r, i, 0)) != 0; k++)
                        ;
                if (k == dr->nd && strncmp(PQgetvalue(r, i, 0), "drill_", 6) == 0 &&
                    strncmp(PQgetvalue(r, i, 0) + 6, dr->tag, strlen(dr->tag)) == 0) {
                        fprintf(stderr, "drill: VIOLATION object %s exists, never created\n", PQgetvalue(r, i, 0));
                        dr->ddl_phantoms++;
                        bad++;
                }
        }
        for (size_t k = 0; k < dr->nd; k++) {
                struct dobj *o = &dr->d[k];
                bool there = false;

                for (int i = 0; i < PQntuples(r) && !there; i++)
                        there = strcmp(o->name, PQgetvalue(r, i, 0)) == 0;
                if (o->state == S_MAYBE) {
                        /* note 3 */
                        o->state = S_SEEN;
                        o->present = there;
                        continue;
                }
                if ((o->state != S_ACKED && o->state != S_SEEN) || o->present == there || o->reported)
                        continue;
                o->reported = true;
                if (o->present)
                        dr->ddl_lost++;
                else
                        dr->ddl_reappeared++;
                fprintf(stderr, "drill: VIOLATION %s %s %s is %s\n",
                        o->state == S_ACKED ? "acknowledged" : "once-seen", o->present ? "CREATE of" : "DROP of",
                        o->name, there ? "still there" : "missing");
                bad++;
        }
        PQclear(r);
        for (size_t k = 0; k < dr->nd; k++) {
                struct dobj *o = &dr->d[k];
                if (o->kind == K_MV && o->present && (o->state == S_ACKED || o->state == S_SEEN))
                        bad += check_mv(dr, c, o);
        }
        pthread_mutex_unlock(&dr->dlock);
        return bad;
}

/* The last values seen of gid (for I1), created zeroed; NULL without memory. */
static struct front *front_of(struct drill *dr, uint64_t gid)
{
        for (size_t i = 0; i < dr->nfr; i++)
                if (dr->fr[i].gid == gid)
                        return &dr->fr[i];
        if (GROW_ARRAY(dr->fr, dr->capfr, dr->nfr + 1) < 0)
                return NULL;
        dr->fr[dr->nfr] = (struct front){ .gid = gid };
        return &dr->fr[dr->nfr++];
}

/* I1 for one value: it may only grow.  *last keeps the largest seen. */
static uint64_t forward(const char *what, uint64_t gid, uint64_t *last, uint64_t now)
{
        if (now < *last) {
                fprintf(stderr, "drill: VIOLATION I1 %s of %" PRIu64 " went back %" PRIu64 " -> %" PRIu64 "\n",
                        what, gid, *last, now);
                return 1;
        }
        *last = now;
        return 0;
}

/* A read whose every row is a violation of an invariant: each printed as column=value,
 * and counted in *counter.  The rows (1 when the read failed). */
static uint64_t violating_rows(struct drill *dr, PGconn **c, const char *what, const char *sql, uint64_t *counter)
{
        PGresult *r = check_read(dr, c, sql);
        uint64_t n;

        if (!r)
                return 1;
        n = (uint64_t)PQntuples(r);
        for (int i = 0; i < PQntuples(r); i++) {
                fprintf(stderr, "drill: VIOLATION %s:", what);
                for (int j = 0; j < PQnfields(r); j++)
                        fprintf(stderr, " %s=%s", PQfname(r, j), PQgetvalue(r, i, j));
                fputc('\n', stderr);
        }
        PQclear(r);
        *counter += n;
        return n;
}

/* I2, seen: read gid's since and bound again, a second later, and say whether the
 * since is still above the bound (compacted past it) or not any more (a read of
 * coord_bounds that lagged the catalog).  For the log: the verdict stays a violation. */
static void i2_recheck(struct drill *dr, PGconn **c, uint64_t gid)
{
        char sql[256];
        PGresult *r;

        msleep(1000);
        snprintf(sql, sizeof(sql), "SELECT f.read_frontier FROM coord_frontiers f WHERE f.object_id = %" PRIu64, gid);
        r = check_read(dr, c, sql);
        uint64_t since = r && PQntuples(r) == 1 ? val_u64(r, 0, 0) : 0;
        PQclear(r);
        snprintf(sql, sizeof(sql), "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, gid);
        r = check_read(dr, c, sql);
        uint64_t bound = r && PQntuples(r) == 1 ? val_u64(r, 0, 0) : 0;
        PQclear(r);
        fprintf(stderr, "drill: I2 recheck object_id=%" PRIu64 " read_frontier=%" PRIu64 " bound=%" PRIu64 " %s\n",
                gid, since, bound, since > bound ? "still above" : "no longer above");
}

/* I1, I2, I5 and I6 from the built-in relations (note 8). */
static uint64_t check_frontiers(struct drill *dr, PGconn **c)
{
        uint64_t bad = 0, i1 = 0, at = ++dr->front_checks;
        PGresult *r;

        if ((r = check_read(dr, c, "SELECT object_id, read_frontier, write_frontier FROM coord_frontiers"))) {
                for (int i = 0; i < PQntuples(r); i++) {
                        struct front *f = front_of(dr, val_u64(r, i, 0));
                        if (f) {
                                i1 += forward("physical since", f->gid, &f->since, val_u64(r, i, 1));
                                i1 += forward("stored upper", f->gid, &f->upper, val_u64(r, i, 2));
                                f->since_at = at;
                        }
                }
                PQclear(r);
        } else
                bad++;
        if ((r = check_read(dr, c, "SELECT object_id, bound FROM coord_bounds"))) {
                for (int i = 0; i < PQntuples(r); i++) {
                        struct front *f = front_of(dr, val_u64(r, i, 0));
                        if (f) {
                                i1 += forward("bound", f->gid, &f->bound, val_u64(r, i, 1));
                                f->bound_at = at;
                        }
                }
                PQclear(r);
        } else
                bad++;
        /* I2 (note 8): each since read above, against the bound read after it. */
        for (size_t i = 0; i < dr->nfr; i++) {
                struct front *f = &dr->fr[i];

                if (f->gid < 1000 || f->since_at != at || f->bound_at != at || f->since <= f->bound)
                        continue;
                fprintf(stderr, "drill: VIOLATION I2 physical since above the committed bound: object_id=%" PRIu64
                        " read_frontier=%" PRIu64 " bound=%" PRIu64 "\n", f->gid, f->since, f->bound);
                dr->i2++;
                bad++;
                i2_recheck(dr, c, f->gid);
        }
        bad += violating_rows(dr, c, "I5 requirement below its input's bound",
                              "SELECT q.consumer_id, q.input_id, q.frontier, b.bound FROM coord_requirements q "
                              "JOIN coord_bounds b ON q.input_id = b.object_id WHERE q.frontier < b.bound", &dr->i5);
        /* I6: no input compacted past a live requirement of a consumer (an index's
         * included, published or not) -- physical since <= bound <= requirement; each
         * since read above against the requirements read after it (note 8). */
        if ((r = check_read(dr, c, "SELECT consumer_id, input_id, frontier FROM coord_requirements"))) {
                for (int i = 0; i < PQntuples(r); i++) {
                        uint64_t input = val_u64(r, i, 1), req = val_u64(r, i, 2);
                        struct front *f = front_of(dr, input);

                        if (!f || f->since_at != at || f->since <= req)
                                continue;
                        fprintf(stderr, "drill: VIOLATION I6 input compacted past a requirement: consumer_id=%s "
                                "input_id=%" PRIu64 " frontier=%" PRIu64 " read_frontier=%" PRIu64 "\n",
                                PQgetvalue(r, i, 0), input, req, f->since);
                        dr->i6++;
                        bad++;
                }
                PQclear(r);
        } else
                bad++;
        dr->i1 += i1;
        return bad + i1;
}

/* Run `<coord> ARG` with the drill's environment, output appended to the drill's log
 * (or into out, at most size bytes, when out is not NULL); its exit status, -1 when it
 * did not exit. */
static int run_coord(struct drill *dr, const char *arg, char *out, size_t size)
{
        int pipefd[2] = { -1, -1 }, st;
        pid_t pid;

        if (out && pipe2(pipefd, O_CLOEXEC) < 0)
                return -1;
        pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                int fd = out ? pipefd[1] : open(dr->log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
                int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (fd >= 0) {
                        dup2(fd, 1);
                        dup2(fd, 2);
                }
                if (in >= 0)
                        dup2(in, 0);
                execl(dr->coord, dr->coord, arg, (char *)NULL);
                _exit(127);
        }
        if (out) {
                size_t n = 0;
                ssize_t k;

                close(pipefd[1]);
                while (n + 1 < size && (k = read(pipefd[0], out + n, size - 1 - n)) != 0)
                        if (k > 0)
                                n += (size_t)k;
                        else if (errno != EINTR)
                                break;
                out[n] = 0;
                /* drain the rest, so the child never blocks on a full pipe */
                for (char junk[256]; read(pipefd[0], junk, sizeof(junk)) > 0;)
                        ;
                close(pipefd[0]);
        }
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* I10: tools/coord check; "check failed" (e.g. no aligned point) is tried again. */
static uint64_t check_catalog(struct drill *dr)
{
        char out[4096];
        int r = -1;

        for (int attempt = 0; attempt < 3; attempt++) {
                r = run_coord(dr, "check", out, sizeof(out));
                if (r == 0 || strstr(out, "MISMATCH"))
                        break;
                msleep(500);
        }
        if (r == 0) {
                dr->check_matches++;
                return 0;
        }
        fprintf(stderr, "drill: VIOLATION I10 tools/coord check exited %d: %s", r, out);
        dr->i10++;
        return 1;
}

/* Note 6: the sink's new lines below its progress, and the table AS OF progress - 1. */
static uint64_t check_sink(struct drill *dr, PGconn **c)
{
        uint64_t P, bad = 0, ones = 0;
        char sql[256], line[256];
        PGresult *r;
        FILE *f;
        struct stat sb;

        snprintf(sql, sizeof(sql), "SELECT f.write_frontier FROM coord_frontiers f JOIN coord_objects o ON "
                 "o.id = f.object_id WHERE o.name = 'drill_%s_k'", dr->tag);
        if (!(r = check_read(dr, c, sql)))
                return 1;
        P = PQntuples(r) == 1 ? val_u64(r, 0, 0) : 0;
        PQclear(r);
        if (P < 2)
                return 0;       /* nothing written yet */
        if (stat(dr->sink_path, &sb) < 0 || (uint64_t)sb.st_size < dr->sink_off) {
                fprintf(stderr, "drill: VIOLATION sink file %s is shorter than the %" PRIu64 " complete bytes read\n",
                        dr->sink_path, dr->sink_off);
                dr->sink_bad++;
                return 1;
        }
        if (!(f = fopen(dr->sink_path, "re")) || fseeko(f, (off_t)dr->sink_off, SEEK_SET) < 0) {
                if (f)
                        fclose(f);
                fprintf(stderr, "drill: cannot read the sink file %s: %s\n", dr->sink_path, strerror(errno));
                dr->sink_bad++;
                return 1;
        }
        while (fgets(line, sizeof(line), f)) {
                size_t len = strlen(line);
                char *e;
                uint64_t t = strtoull(line, &e, 10), id;
                long diff;

                if (!len || line[len - 1] != '\n' || t >= P)
                        break;  /* past the progress: not complete yet */
                diff = *e == '\t' ? strtol(e + 1, &e, 10) : 0;
                id = *e == '\t' ? strtoull(e + 1, NULL, 10) : 0;
                if (!id || (diff != 1 && diff != -1)) {
                        fprintf(stderr, "drill: VIOLATION sink line below the progress %" PRIu64 ": %s", P, line);
                        bad++;
                        break;
                }
                if (id > dr->sink_cap) {
                        size_t cap = dr->sink_cap ? dr->sink_cap : 4096;
                        int8_t *n;
                        while (cap < id)
                                cap *= 2;
                        if (!(n = realloc(dr->sink_sum, cap))) {
                                fclose(f);
                                return 1;
                        }
                        memset(n + dr->sink_cap, 0, cap - dr->sink_cap);
                        dr->sink_sum = n;
                        dr->sink_cap = cap;
                }
                dr->sink_sum[id - 1] += (int8_t)diff;
                if ((dr->sink_sum[id - 1] > 1 || dr->sink_sum[id - 1] < 0) && bad++ < 5)
                        fprintf(stderr, "drill: VIOLATION sink id=%" PRIu64 " summed to %d: %s", id,
                                dr->sink_sum[id - 1], line);
                dr->sink_off += len;
                dr->sink_lines++;
        }
        fclose(f);
        snprintf(sql, sizeof(sql), "SELECT id FROM drill_%s_t0 AS OF %" PRIu64, dr->tag, P - 1);
        if (!(r = check_read(dr, c, sql)))
                return bad + 1;
        for (int i = 0; i < PQntuples(r); i++) {
                uint64_t id = val_u64(r, i, 0);
                if (id == 0 || id > dr->sink_cap || dr->sink_sum[id - 1] != 1) {
                        if (bad++ < 5)
                                fprintf(stderr, "drill: VIOLATION sink: id=%" PRIu64 " of the table AS OF %" PRIu64
                                        " is not in the file once\n", id, P - 1);
                }
        }
        for (size_t k = 0; k < dr->sink_cap; k++)
                ones += dr->sink_sum[k] == 1;
        if (ones != (uint64_t)PQntuples(r)) {
                fprintf(stderr, "drill: VIOLATION sink: %" PRIu64 " ids in the file, %d in the table AS OF %" PRIu64 "\n",
                        ones, PQntuples(r), P - 1);
                bad++;
        }
        PQclear(r);
        dr->sink_checks++;
        dr->sink_bad += bad;
        return bad;
}

/* Note 7: the counter source at one timestamp. */
static uint64_t check_source(struct drill *dr, PGconn **c)
{
        uint64_t n, m, d, off, bad = 0;
        char sql[512];
        PGresult *r;

        snprintf(sql, sizeof(sql), "SELECT c.n, c.m, d.n, p.\"offset\" FROM (SELECT count(*) AS n, max(counter) AS m "
                 "FROM drill_%s_c) c, (SELECT count(*) AS n FROM (SELECT DISTINCT counter FROM drill_%s_c) x) d, "
                 "drill_%s_c_progress p", dr->tag, dr->tag, dr->tag);
        if (!(r = check_read(dr, c, sql)))
                return 1;
        if (PQntuples(r) == 0) {        /* no remap row yet: nothing ingested */
                PQclear(r);
                return 0;
        }
        n = val_u64(r, 0, 0), m = val_u64(r, 0, 1), d = val_u64(r, 0, 2), off = val_u64(r, 0, 3);
        PQclear(r);
        if (n != m || n != d || n != off || n < dr->source_n) {
                fprintf(stderr, "drill: VIOLATION source: %" PRIu64 " rows, max %" PRIu64 ", %" PRIu64 " distinct, "
                        "offset %" PRIu64 ", %" PRIu64 " rows at the last check\n", n, m, d, off, dr->source_n);
                bad++;
        }
        dr->source_n = n;
        dr->source_checks++;
        dr->source_bad += bad;
        return bad;
}

static uint64_t check_all(struct drill *dr, PGconn **c)
{
        uint64_t bad = check_rows(dr, c);

        if (dr->w_sink)
                bad += check_sink(dr, c);
        if (dr->w_source)
                bad += check_source(dr, c);

        bad += trim_rows(dr, c);
        bad += check_objects(dr, c);
        bad += check_frontiers(dr, c);
        bad += check_catalog(dr);
        dr->checks++;
        return bad;
}

/* ---- kills and restarts -------------------------------------------------------------- */

/* The daemon's pid from its status, else from its pid file; -1 when neither. */
static pid_t daemon_pid(struct drill *dr, int d)
{
        Coord__StatusReply *s = NULL;
        _cleanup_free_ char *path = NULL;
        pid_t pid = -1;
        FILE *f;

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
 * serves a read of a table; the lifecycle is ready and has applied the adapter's last
 * commit. */
static bool serving(struct drill *dr, int d, PGconn **c)
{
        char sql[128];
        PGresult *r;

        if (d == LIFECYCLE) {
                uint64_t a = daemon_seq(dr, ADAPTER), l = daemon_seq(dr, LIFECYCLE);
                return a && l >= a;
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
               " gap_ms=%" PRIu64 "-%" PRIu64 " run_dir=%s port=%" PRIu64 " tag=%s\n", dr->seed, dr->kills,
               dr->daemons, dr->workload, dr->clients, dr->tables, dr->min_gap_ms, dr->max_gap_ms, dr->run_dir,
               dr->pg_port, dr->tag);
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
