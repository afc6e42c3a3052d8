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
 * Growing into issue 4.  A statement records its logical inputs (every collection it
 * names, by GlobalId) apart from its plan, so an optimizer may drop inputs from the plan
 * without losing them.  New statement kinds (CREATE VIEW, CREATE MATERIALIZED VIEW,
 * CREATE INDEX) add a member to the union; joins and GROUP BY extend the planner's
 * scope and the plan, not this interface.  A catalog object that is a view will carry
 * its definition in struct sql_relation so the planner can inline it.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.pb-c.h"
#include "row.h"

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
};

struct sql_relation {
        uint64_t id;                            /* GlobalId, never 0 */
        enum sql_object_kind kind;
        const struct sql_column *columns;       /* borrowed, see sql_catalog_ops */
        size_t n_columns;
};

struct sql_catalog_ops {
        /* Look an object up by name.  0 with *ret filled, -ENOENT when no object has
         * that name, another -errno when the catalog cannot answer (reported as XX000).
         * What *ret points to must stay valid until the sql_analyze() call that asked
         * returns; the analyzer copies what it keeps. */
        int (*lookup)(void *userdata, const char *name, struct sql_relation *ret);
};

/* Values of $1, $2, ... for the extended protocol (Bind), in text format.  A parameter
 * of type 0 takes the type its context needs, as an untyped literal would. */
struct sql_params {
        size_t n;
        const char *const *values;      /* NULL entry = SQL NULL */
        const uint32_t *types;          /* type OIDs, or NULL for all 0 */
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
        SQL_STMT_TRANSACTION,           /* BEGIN, COMMIT, ROLLBACK: no-ops for now */
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
        bool if_not_exists;
        bool exists;            /* IF NOT EXISTS and the name was taken: a no-op (notice) */
};

struct sql_drop {
        enum sql_object_kind kind;      /* DROP TABLE: SQL_OBJECT_TABLE */
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
};

struct sql_delete {
        char *table;
        uint64_t id;
        /* The rows to retract: evaluate at the read timestamp, then append every
         * (row, -diff).  Its output columns are the table's. */
        Coord__Plan__Relation *plan;
};

struct sql_select {
        /* Output columns, plan; the adapter fills peek->timestamp. */
        Coord__Plan__Peek *peek;
        bool has_as_of;
        uint64_t as_of;                 /* folded AS OF expression */
};

struct sql_show_objects {
        bool all;                       /* SHOW OBJECTS; otherwise only `kind` */
        enum sql_object_kind kind;      /* SHOW TABLES: SQL_OBJECT_TABLE */
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
        char *sql;              /* the statement's own text, trimmed (catalog create SQL) */
        /* Logical inputs: every collection the statement reads, by GlobalId, ascending,
         * without duplicates.  INSERT's target is not an input; DELETE reads its table. */
        uint64_t *inputs;
        size_t n_inputs;
        /* NoticeResponses to send before the result (e.g. DROP ... IF EXISTS of a
         * missing object: 00000 "table \"t\" does not exist, skipping"). */
        struct row_error *notices;
        size_t n_notices;
        union {
                struct sql_create_table create_table;
                struct sql_drop drop;
                struct sql_insert insert;
                struct sql_delete delete_;
                struct sql_select select;
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

/* The first word(s) of the CommandComplete tag: "CREATE TABLE", "DROP TABLE", "INSERT",
 * "DELETE", "SELECT", "SHOW", "SET", "RESET", "BEGIN", "COMMIT", "ROLLBACK".  INSERT
 * completes as "INSERT 0 <n>", DELETE and SELECT as "<tag> <n>". */
const char *sql_stmt_tag(const struct sql_stmt *s);
