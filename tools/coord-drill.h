/* coord-drill.h -- the recovery drill (issue 30): kill -9 one daemon at a time under a
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
#pragma once

#include <libpq-fe.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "node/node.h"

enum { ADAPTER, LIFECYCLE, CONTROLLER, N_DAEMONS };

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
                 insert_pause_ms, ddl_pause_ms, restart_timeout_s, max_rows,
                 followers;     /* lifecycle followers (tools/coord up --followers) */
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

/* coord-drill.c */
void msleep(uint64_t ms);
double ms_since(uint64_t t0_ns);
void note_error(struct drill *dr, const char *what, PGconn *c, PGresult *r);
PGconn *connect_backoff(struct drill *dr, uint64_t *backoff_ms);
PGresult *exec_sql(struct drill *dr, PGconn **c, const char *sql, const char *what);

/* coord-drill-check.c: the checks after every restart (notes 2-8) */
int run_coord(struct drill *dr, const char *arg, char *out, size_t size);
uint64_t check_all(struct drill *dr, PGconn **c);
