/* adapter-sql.h -- the adapter's SQL front end: parse a query string with PostgreSQL's
 * own parser (libpg_query), analyze each statement against the catalog and plan reads as
 * proto/plan.proto relations.  No I/O, no logging, no global state.
 *
 * Two steps, because a simple-query string may hold several statements and PostgreSQL
 * parses all of them before running any, but analyzes each one only after the previous
 * one ran (`CREATE TABLE t (a int); INSERT INTO t VALUES (1)` must work):
 *
 *   sql_parse(query)          -> struct sql_batch   syntax only; a syntax error anywhere
 *                                                   fails the whole string (42601)
 *   sql_analyze(batch, i, ..) -> struct sql_stmt    names resolved through the catalog
 *                                                   callbacks as they are *now*
 *
 * AS OF.  `SELECT ... AS OF <expr>` is not PostgreSQL syntax.  sql_parse() finds the
 * clause on PostgreSQL's own tokens (pg_query_scan): the last `AS OF` at parenthesis
 * depth 0 of a statement, followed by one expression that runs to the end of the
 * statement.  It blanks the clause out of a copy of the query (same length, so every
 * position PostgreSQL reports still points into the user's text) and parses the rest.
 * `as of` inside a string, a quoted identifier or a comment is never a token pair, so it
 * is never lifted; `SELECT 1 AS of` (an alias named "of") is left alone too.
 *
 * Errors.  Every failure fills a struct row_error (row.h): SQLSTATE, PostgreSQL's message
 * where PostgreSQL has one, detail and hint where useful, and the 1-based character
 * position in the query string for errors tied to a place in it.
 *
 * Other lifted clauses.  The same token pass lifts `CREATE DEFAULT INDEX ...`, `CREATE
 * SINK | SOURCE ...` and `DROP SINK | SOURCE ...` (parsed on tokens; PostgreSQL sees a blank `SELECT` of
 * the same length), `SHOW MATERIALIZED VIEWS`, and `RETAIN HISTORY FOR '<duration>'` and
 * the REFRESH options inside a CREATE MATERIALIZED VIEW's WITH (...).
 *
 * Inputs.  A plan-carrying statement records its LOGICAL inputs (every storage
 * collection its SQL names, transitively through views, including inputs the optimizer
 * removed) apart from its PHYSICAL inputs (the Get ids of the final plan).  Views are
 * inlined: a view's stored plan is already over storage collections.  A SELECT (and only
 * a SELECT) reads an object that has an index from the index (Get{index_id}).
 *
 * Determinism.  mz_now() is the one non-deterministic function the planner knows;
 * now(), random(), current_timestamp and the like are refused everywhere (0A000), and
 * in a materialized view or index definition as "cannot materialize call to ...".
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.pb-c.h"
#include "row/row.h"

/* The PostgreSQL version Coord speaks, as version() reports it ("PostgreSQL " + this);
 * the server_version parameter defaults to the same (PGWIRE_SERVER_VERSION_DEFAULT). */
#define SQL_SERVER_VERSION "15.0 (Coord)"

/* ---- What the catalog tells the planner. ---- */

enum sql_object_kind {
        SQL_OBJECT_TABLE,
        SQL_OBJECT_VIEW,
        SQL_OBJECT_MATERIALIZED_VIEW,
        SQL_OBJECT_INDEX,
        SQL_OBJECT_SOURCE,
        SQL_OBJECT_SINK,
        _SQL_OBJECT_KIND_MAX,
        _SQL_OBJECT_KIND_INVALID = -EINVAL,
};

/* "table", "view", "materialized view", ... as PostgreSQL's messages say them. */
const char *sql_object_kind_name(enum sql_object_kind kind);

struct sql_column {
        char *name;
        enum row_type type;
        bool nullable;
        /* A table column's DEFAULT: one datum, row-encoded (common/row), of `type`;
         * NULL when it has none.  Owned with the array's names (catalog items, a CREATE
         * TABLE statement); copies into other objects' columns leave it out. */
        uint8_t *default_row;
        size_t default_len;
        /* varchar(n): n, at most 10485760; 0 for no limit (text, varchar).  A table's
         * INSERT and UPDATE values pass FUNC_VARCHAR (22001 when too long).
         * A numeric column's modifier (the same field, by type): numeric(p, s) is
         * SQL_NUMERIC_TYPMOD(p, s), 0 for plain numeric; values pass
         * FUNC_NUMERIC_TYPMOD (22003 "numeric field overflow"). */
        uint32_t max_chars;
};

/* numeric(p, s)'s modifier in sql_column.max_chars: PostgreSQL's atttypmod less 4
 * (VARHDRSZ), never 0 since p >= 1. */
#define SQL_NUMERIC_TYPMOD(p, s) ((uint32_t)(p) << 16 | (uint32_t)(s))
#define SQL_NUMERIC_PRECISION(m) ((m) >> 16)
#define SQL_NUMERIC_SCALE(m) ((m) & 0xffff)

/* A table's CHECK constraint: a boolean coord.plan.Expr over its columns, packed. */
struct sql_check {
        char *name;
        uint8_t *expr;
        size_t expr_len;
};

/* A table's PRIMARY KEY or UNIQUE constraint: no two rows with the same values in
 * `columns` unless one of them is NULL.  The controller enforces it on every write
 * (coord.proto TableWrite.unique_keys). */
struct sql_unique {
        char *name;
        uint32_t *columns;              /* positions in the table, in key order */
        size_t n_columns;
        bool primary;
        bool named;                     /* CREATE TABLE: CONSTRAINT name given (not stored) */
};

/* A table's FOREIGN KEY constraint (MATCH SIMPLE, NO ACTION): every row whose `columns`
 * are all non-NULL has a row of table ref_id with those values in `ref_columns`.  The
 * analyzer accepts only equal column types (the controller compares key values by their
 * bytes) and ref_columns that are a PRIMARY KEY or UNIQUE of ref_id; the controller
 * enforces it on every write of either table (coord.proto TableWrite.foreign_keys). */
struct sql_foreign_key {
        char *name;
        uint32_t *columns;              /* positions in the table */
        uint32_t *ref_columns;          /* positions in ref_id, paired with columns */
        size_t n_columns;
        uint64_t ref_id;
};

struct sql_relation {
        uint64_t id;                            /* GlobalId, never 0 */
        enum sql_object_kind kind;
        const struct sql_column *columns;       /* borrowed, see sql_catalog_ops */
        size_t n_columns;
        /* Views only (borrowed like columns): the stored, optimized plan over storage
         * collections, whose output columns are `columns`; the view's logical inputs
         * (storage collections, ascending); whether it is free of mz_now() & co. */
        const Coord__Plan__Relation *plan;
        const uint64_t *inputs;
        size_t n_inputs;
        bool deterministic;
        /* Non-zero when an index exists on the object: a SELECT then reads it from
         * the index, Get{index_id, the object's column types}; n_indexes of them. */
        uint64_t index_id;
        uint32_t n_indexes;
        /* A built-in relation (coord_objects & co.): readable, written by Coord only. */
        bool builtin;
        /* A table's CHECK constraints (borrowed like columns). */
        const struct sql_check *checks;
        size_t n_checks;
        /* A table's PRIMARY KEY and UNIQUE constraints (borrowed like columns). */
        const struct sql_unique *uniques;
        size_t n_uniques;
        /* A table's FOREIGN KEY constraints (borrowed like columns). */
        const struct sql_foreign_key *fkeys;
        size_t n_fkeys;
};

/* An object as the pg_catalog relations show it (adapter-pgcatalog.h).  Borrowed like
 * a struct sql_relation's contents. */
struct sql_object {
        uint64_t id;                            /* GlobalId: the object's oid */
        const char *name;
        enum sql_object_kind kind;
        const struct sql_column *columns;
        size_t n_columns;
        size_t n_checks;
        uint64_t index_id;                      /* an index on it, 0 if none */
        uint64_t on_id;                         /* an index: the object it indexes */
        const uint32_t *keys;                   /* an index: its key columns in on_id */
        size_t n_keys;
        bool builtin;                           /* coord_objects & co. */
};

typedef int (*sql_object_fn)(void *arg, const struct sql_object *o);

/* A lease as coord_leases shows it (adapter-lease.c, issue 33). */
struct sql_lease {
        const char *key, *holder;       /* holder "" when not held */
        uint64_t epoch, version, expires_in_ms;
        bool live;
};
typedef int (*sql_lease_fn)(void *arg, const struct sql_lease *l);

struct sql_catalog_ops {
        /* Look an object up by name.  0 with *ret filled, -ENOENT when no object has
         * that name, another -errno when the catalog cannot answer (reported as XX000).
         * What *ret points to must stay valid until the sql_analyze() call that asked
         * returns; the analyzer copies what it keeps. */
        int (*lookup)(void *userdata, const char *name, struct sql_relation *ret);
        /* Call fn for every object a lookup would find, in ascending id order; stop at
         * and return fn's first negative result.  NULL: there are none (the pg_catalog
         * relations then show no objects). */
        int (*each)(void *userdata, sql_object_fn fn, void *arg);
        /* Call fn for every index on object id (its key columns in keys), in ascending
         * id order, as each() would.  NULL: a SELECT reads an object from its oldest
         * index whatever its WHERE. */
        int (*indexes)(void *userdata, uint64_t id, sql_object_fn fn, void *arg);
        /* Call fn for every lease (coord_leases), in key order, as the adapter's clock
         * judges it now; stop at fn's first negative result.  NULL: there are none. */
        int (*leases)(void *userdata, sql_lease_fn fn, void *arg);
};

/* Who runs the statement: current_user, current_database(), pg_backend_pid() in a SELECT
 * or an INSERT's values (a view or materialized view may not name them: 0A000). */
struct sql_session {
        const char *user;
        const char *database;
        int32_t backend_pid;            /* the connection's BackendKeyData process id */
};

/* What a statement is analyzed with: the values of $1, $2, ... for the extended protocol
 * (Bind), in text format -- a parameter of type 0 takes the type its context needs, as
 * an untyped literal would -- and the session, if there is one. */
struct sql_params {
        size_t n;
        const char *const *values;      /* NULL entry = SQL NULL */
        const uint32_t *types;          /* type OIDs, or NULL for all 0 */
        const struct sql_session *session;      /* NULL: session functions are 0A000 */
        /* Parse (describe only): the values are placeholder NULLs and the statement is
         * not run, so an INSERT's NOT NULL columns are not checked (its RETURNING list
         * is described). */
        bool describe;
};

/* ---- Analyzed statements. ---- */

enum sql_stmt_kind {
        SQL_STMT_CREATE_TABLE,
        SQL_STMT_DROP,
        SQL_STMT_INSERT,
        SQL_STMT_DELETE,
        SQL_STMT_SELECT,
        SQL_STMT_SHOW_OBJECTS,          /* SHOW TABLES, SHOW OBJECTS */
        SQL_STMT_SHOW_VARIABLE,         /* SHOW name, SHOW ALL */
        SQL_STMT_SET_VARIABLE,          /* SET, RESET: accepted, a no-op for now */
        SQL_STMT_TRANSACTION,           /* BEGIN, COMMIT, ROLLBACK: adapter-exec.c note 10 */
        SQL_STMT_CREATE_VIEW,           /* union member create_view */
        SQL_STMT_CREATE_MATERIALIZED_VIEW, /* union member create_view too */
        SQL_STMT_CREATE_INDEX,          /* CREATE [DEFAULT] INDEX: create_index */
        SQL_STMT_ALTER_RETAIN_HISTORY,  /* ALTER ... SET/RESET (RETAIN HISTORY): alter_retain */
        SQL_STMT_UPDATE,                /* union member update */
        SQL_STMT_CREATE_SINK,           /* create_sink */
        SQL_STMT_CREATE_SOURCE,         /* create_source */
        SQL_STMT_ALTER_SINK,            /* ALTER SINK ... SET FROM: alter_sink */
        SQL_STMT_SUBSCRIBE,             /* [COPY (] SUBSCRIBE [TO] rel [AS OF t]: subscribe */
        _SQL_STMT_KIND_MAX,
        _SQL_STMT_KIND_INVALID = -EINVAL,
};

/* An encoded row (row.h). */
struct sql_row {
        uint8_t *data;
        size_t len;
};

struct sql_create_table {
        char *name;
        struct sql_column *columns;
        size_t n_columns;
        struct sql_check *checks;
        size_t n_checks;
        struct sql_unique *uniques;     /* at most one PRIMARY KEY */
        size_t n_uniques;
        struct sql_foreign_key *fkeys;
        size_t n_fkeys;
        bool if_not_exists;
        bool exists;            /* IF NOT EXISTS and the name was taken: a no-op (notice) */
};

struct sql_drop {
        enum sql_object_kind kind;      /* TABLE, VIEW, MATERIALIZED_VIEW or INDEX */
        bool if_exists;
        bool cascade;
        size_t n_objects;
        char **names;
        uint64_t *ids;                  /* resolved; 0 for a missing name under IF EXISTS */
};

struct sql_insert {
        char *table;
        uint64_t id;
        struct sql_row *rows;           /* type-checked, in the table's column order */
        size_t n_rows;
        /* INSERT ... SELECT (no rows): evaluate at the write timestamp and insert what it
         * returns, whole rows of the table (coord.proto TableWrite.insert_select). */
        Coord__Plan__Relation *plan;
        /* INSERT ... SELECT ... RETURNING: its output columns (no plan); plan's rows carry
         * its values after the table's columns (TableWrite.returning).  NULL without. */
        Coord__Plan__Peek *select_returning;
        /* INSERT ... VALUES ... RETURNING: the list over the rows inserted -- a Peek whose
         * plan is Maps, Filters and Projects over a Constant of `rows` -- or NULL. */
        Coord__Plan__Peek *returning;
        /* ON CONFLICT DO NOTHING: skip rows whose key is taken (coord.proto TableWrite.
         * on_conflict_skip); conflict_key the targeted key's name, NULL: any key. */
        bool on_conflict_skip;
        char *conflict_key;
        /* ON CONFLICT DO UPDATE: the UPDATE of the rows whose key a proposed row takes
         * (as sql_delete.plan of an UPDATE), applied first and in one unit with the
         * INSERT, whose on_conflict_skip then skips those rows (adapter-sql-upsert.c). */
        Coord__Plan__Relation *upsert;
};

struct sql_delete {
        char *table;
        uint64_t id;
        /* DELETE: the rows to retract: evaluate at the write timestamp, then append
         * every (row, -diff); its output columns are the table's.  UPDATE: each row to
         * change followed by its new values (twice the table's columns): the first
         * half is retracted, the second inserted (coord.proto TableWrite.update).
         * With RETURNING the rows carry its values last (TableWrite.returning). */
        Coord__Plan__Relation *plan;
        /* RETURNING: its output columns (no plan); NULL without. */
        Coord__Plan__Peek *returning;
};

struct sql_select {
        /* Output columns, plan, ORDER BY / LIMIT; the adapter fills peek->timestamp.
         * peek->columns describes every column of the plan; when output_arity is
         * non-zero only the first output_arity are the result (RowDescription), the rest
         * are hidden ORDER BY keys. */
        Coord__Plan__Peek *peek;
        bool has_as_of;
        uint64_t as_of;                 /* folded AS OF expression */
};

struct sql_show_objects {
        bool all;                       /* SHOW OBJECTS; otherwise only `kind` */
        enum sql_object_kind kind;      /* SHOW TABLES: SQL_OBJECT_TABLE; SHOW VIEWS,
                                         * SHOW MATERIALIZED VIEWS, SHOW INDEXES */
};

enum sql_refresh_kind {
        SQL_REFRESH_ON_COMMIT,          /* continuous (the default) */
        SQL_REFRESH_AT_CREATION,
        SQL_REFRESH_AT,
        SQL_REFRESH_EVERY,
};

/* A materialized view's refresh schedule as written (WITH (REFRESH ...), lifted on
 * tokens like RETAIN HISTORY).  Times are bigint expressions that may call mz_now(),
 * whose value is the creation's timestamp: the adapter evaluates them when it creates
 * the view (adapter-exec-run.c), and refuses a time before it. */
struct sql_refresh {
        bool on;                        /* a schedule: REFRESH AT or EVERY was given */
        bool at_creation;               /* REFRESH AT CREATION */
        Coord__Plan__Expr **at;         /* REFRESH AT <expr> */
        size_t n_at;
        uint64_t every_ms;              /* REFRESH EVERY '<interval>'; 0: none */
        Coord__Plan__Expr *aligned_to;  /* ALIGNED TO <expr>; NULL: the view's as-of */
};

/* CREATE VIEW and CREATE MATERIALIZED VIEW.  The statement's inputs are the logical
 * inputs; physical_inputs the Gets of `plan` (only storage collections, never indexes). */
struct sql_create_view {
        char *name;
        struct sql_column *columns;     /* the output columns (names from the column list) */
        size_t n_columns;
        Coord__Plan__Relation *plan;    /* optimized, views inlined */
        bool deterministic;             /* always true for a materialized view */
        bool if_not_exists;
        bool exists;                    /* IF NOT EXISTS and the name was taken: a no-op */
        uint64_t retain_history_ms;     /* materialized view: RETAIN HISTORY; 0 = default */
        bool has_as_of;                 /* materialized view: `... AS OF <t>` requested */
        uint64_t as_of;
        struct sql_refresh refresh;     /* materialized view */
};

/* CREATE [DEFAULT] INDEX [name] ON obj (col, ...). */
struct sql_create_index {
        char *name;                     /* given, or <obj>_<col>[_<col>...]_idx, or
                                         * <obj>_primary_idx for a default index */
        char *on_name;
        uint64_t on_id;
        enum sql_object_kind on_kind;   /* table, view, materialized view or source */
        uint32_t *keys;                 /* key columns, indices into `columns` */
        size_t n_keys;
        /* What the index arranges: Get(on_id) for a collection, the view's plan (views
         * inlined) for a view.  Its output columns are `columns`. */
        Coord__Plan__Relation *plan;
        struct sql_column *columns;
        size_t n_columns;
        bool is_default;                /* CREATE DEFAULT INDEX: keys are all columns */
        bool if_not_exists;
        bool exists;
};

/* CREATE SINK [IF NOT EXISTS] name FROM relation INTO FILE '<path>' [WITH (SNAPSHOT =
 * true | false)] (lifted on tokens, like CREATE DEFAULT INDEX).  The statement's inputs
 * are the relation's logical inputs; its references the relation. */
struct sql_create_sink {
        char *name;
        char *from_name;
        uint64_t from_id;
        char *path;                     /* as written; the adapter checks the file system */
        bool snapshot;                  /* false: only changes after the inputs' bound */
        /* What it writes: Get(from) for a collection, the view's plan for a view; its
         * output columns are `columns`. */
        Coord__Plan__Relation *plan;
        struct sql_column *columns;
        size_t n_columns;
        bool if_not_exists;
        bool exists;                    /* IF NOT EXISTS and the name was taken: a no-op */
};

/* ALTER SINK name SET FROM relation: the sink writes the relation's updates from its
 * progress on (the adapter picks the cutover, adapter-exec-run.c).  The relation has the
 * sink's column types; plan, inputs and references as in sql_create_sink. */
struct sql_alter_sink {
        char *name;
        uint64_t id;
        char *from_name;
        uint64_t from_id;
        Coord__Plan__Relation *plan;
        uint64_t wait_deadline_ms;      /* the executor's: 0 until it first waits */
        uint64_t cutover_min;           /* the executor's: the read timestamp then + 1 */
};

/* SUBSCRIBE [TO] relation [AS OF t], or inside COPY (...) TO STDOUT: the relation's
 * contents at the as-of, then its changes (adapter-subscribe.c).  A storage collection
 * only (table, materialized view, source).  columns borrowed from the catalog item. */
struct sql_subscribe {
        char *name;
        uint64_t id;
        enum sql_object_kind kind;
        bool has_as_of;
        uint64_t as_of;
        bool copy;
};

enum sql_source_type {
        SQL_SOURCE_COUNTER = 1,         /* LOAD GENERATOR COUNTER: (counter bigint) 1, 2, ... */
        SQL_SOURCE_FILE = 2,            /* FILE: an append-only file's lines */
};

enum sql_source_format {
        SQL_FORMAT_TEXT = 1,            /* a line is a row (text text) */
        SQL_FORMAT_CSV = 2,             /* a line is a CSV record (column1 text, ...) */
};

/* CREATE SOURCE [IF NOT EXISTS] name FROM LOAD GENERATOR COUNTER [(TICK INTERVAL '<d>',
 * UP TO <n>)] or FROM FILE '<path>' (FORMAT TEXT | FORMAT CSV WITH <n> COLUMNS), lifted on
 * tokens.  Two objects: the source and "<name>_progress" (offset bigint), its remap. */
struct sql_create_source {
        char *name;
        char *progress_name;
        enum sql_source_type type;
        enum sql_source_format format;  /* FILE */
        char *path;                     /* FILE, as written; the adapter checks it */
        uint64_t tick_ms;               /* COUNTER; default 1 s */
        uint64_t up_to;                 /* COUNTER; 0: none */
        struct sql_column *columns;
        size_t n_columns;
        bool if_not_exists;
        bool exists;
};

/* ALTER {TABLE | MATERIALIZED VIEW | INDEX} name SET (RETAIN HISTORY = FOR '<d>') or
 * RESET (RETAIN HISTORY): the object's read policy (compaction window). */
struct sql_alter_retain {
        enum sql_object_kind kind;
        uint64_t id;
        char *name;
        uint64_t retain_history_ms;     /* 0: RESET, the default window */
};

struct sql_show_variable {
        char *name;                     /* lower case as the parser gives it; "all" */
};

struct sql_set_variable {
        char *name;                     /* lower case; "all" for RESET ALL; "transaction"
                                         * for SET TRANSACTION ... and the like */
        char *value;                    /* the value(s) as text, NULL for RESET and DEFAULT */
        bool local;                     /* SET LOCAL */
        bool reset;                     /* RESET (tag "RESET" rather than "SET") */
};

enum sql_txn_kind {
        SQL_TXN_BEGIN,
        SQL_TXN_COMMIT,
        SQL_TXN_ROLLBACK,
        _SQL_TXN_KIND_MAX,
        _SQL_TXN_KIND_INVALID = -EINVAL,
};

struct sql_stmt {
        enum sql_stmt_kind kind;
        /* BEGIN / START TRANSACTION / SET TRANSACTION: READ ONLY (1), READ WRITE (0), or
         * not given (-1). */
        int txn_read_only;
        /* ... ISOLATION LEVEL REPEATABLE READ or SERIALIZABLE (1: the block reads at one
         * timestamp), READ COMMITTED or READ UNCOMMITTED (0), or not given (-1). */
        int txn_snapshot;
        char *sql;              /* the statement's own text, trimmed (catalog create SQL) */
        /* Logical inputs: every storage collection the statement's SQL names, through
         * views, by GlobalId, ascending, without duplicates -- including collections the
         * optimizer removed from the plan.  INSERT's target is not an input; DELETE reads
         * its table.  Views are not collections: a view contributes its inputs. */
        uint64_t *inputs;
        size_t n_inputs;
        /* Physical inputs: the Get ids of the final plan, ascending, unique (SELECT,
         * DELETE, CREATE VIEW / MATERIALIZED VIEW / INDEX).  In a SELECT these may be
         * index ids. */
        uint64_t *physical_inputs;
        size_t n_physical_inputs;
        /* Every catalog object the statement names directly in FROM (tables, views,
         * materialized views, sources) or indexes (CREATE INDEX's object), ascending:
         * what a new view, MV or index depends on. */
        uint64_t *references;
        size_t n_references;
        /* NoticeResponses to send before the result (e.g. DROP ... IF EXISTS of a
         * missing object: 00000 "table \"t\" does not exist, skipping"). */
        struct row_error *notices;
        size_t n_notices;
        union {
                struct sql_create_table create_table;
                struct sql_drop drop;
                struct sql_insert insert;
                struct sql_delete delete_;
                struct sql_delete update;
                struct sql_select select;
                struct sql_create_view create_view;
                struct sql_create_index create_index;
                struct sql_create_sink create_sink;
                struct sql_create_source create_source;
                struct sql_alter_sink alter_sink;
                struct sql_subscribe subscribe;
                struct sql_alter_retain alter_retain;
                struct sql_show_objects show_objects;
                struct sql_show_variable show_variable;
                struct sql_set_variable set_variable;
                enum sql_txn_kind transaction;
        };
};

/* ---- Parsing and analysis. ---- */

struct sql_batch;       /* opaque: the parsed statements of one query string */

/* Parse a query string (any number of statements, possibly none).  0 or -EINVAL with
 * err (42601 with PostgreSQL's message and position), -ENOMEM. */
int sql_parse(const char *query, struct sql_batch **ret, struct row_error *err);
struct sql_batch *sql_batch_free(struct sql_batch *b);
size_t sql_batch_size(const struct sql_batch *b);

/* Analyze statement i of the batch against the catalog as it is now.  `params` may be
 * NULL (then $n is error 42P02).  0 with *ret, or -EINVAL/-ENOMEM/-errno with err. */
int sql_analyze(const struct sql_batch *b, size_t i, const struct sql_catalog_ops *ops,
                void *userdata, const struct sql_params *params, struct sql_stmt **ret,
                struct row_error *err);

/* Parse and analyze a string that must hold exactly one statement (the extended
 * protocol's Parse; tests).  Several statements are 42601 "cannot insert multiple
 * commands into a prepared statement"; none is 42601 too. */
int sql_analyze_one(const char *query, const struct sql_catalog_ops *ops, void *userdata,
                    const struct sql_params *params, struct sql_stmt **ret,
                    struct row_error *err);

struct sql_stmt *sql_stmt_free(struct sql_stmt *s);

/* The first word(s) of the CommandComplete tag: "CREATE TABLE", "CREATE VIEW", "CREATE
 * MATERIALIZED VIEW", "CREATE INDEX", "DROP TABLE" (VIEW, ...), "INSERT",
 * "DELETE", "SELECT", "SHOW", "SET", "RESET", "BEGIN", "COMMIT", "ROLLBACK".  INSERT
 * completes as "INSERT 0 <n>", DELETE and SELECT as "<tag> <n>". */
const char *sql_stmt_tag(const struct sql_stmt *s);

/* An isolation level's name: 1 REPEATABLE READ / SERIALIZABLE (one snapshot per block),
 * 0 READ COMMITTED / READ UNCOMMITTED, -1 anything else. */
int sql_isolation_snapshot(const char *level);
