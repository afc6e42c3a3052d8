/* adapter-pgcatalog.h -- the pg_catalog and information_schema relations that psql's
 * list commands (\dt \dv \dm \di \d \dn \l) and drivers' metadata queries read:
 * pg_namespace, pg_class, pg_index, pg_attribute, pg_type, pg_am, pg_database,
 * pg_roles, pg_user, information_schema.tables and information_schema.columns; for
 * \d NAME also pg_attrdef, pg_collation and the relations Coord has nothing in
 * (pg_constraint, pg_policy, pg_statistic_ext, pg_publication*, pg_inherits).
 *
 * Who calls it: the analyzer (adapter-sql-from.c), when a FROM item names one of them.  The
 * rows are computed there and then from the catalog the statement is analyzed against
 * (sql_catalog_ops.each) and planned as a Constant relation: they are consistent with
 * every other name the statement resolved, and the controller needs no collection for
 * them.  No I/O, no logging, no global state.
 *
 * What the rows say (docs/sql.md, "pg_catalog"):
 *   - an object's oid is its GlobalId (user objects from 1000 on, the built-in coord_*
 *     relations 1-6); oid columns are bigint, "char" and name columns text, int2
 *     columns integer, int2[] int4[], "char"[] text[]; pg_node_tree columns
 *     text (the expression as pg_get_expr() shows it); regproc, xid and float columns
 *     and most arrays are left out;
 *   - namespaces: pg_catalog (11, the built-in coord_* relations), public (2200, every
 *     user object), information_schema (13000);
 *   - relkind: 'r' table and source, 'v' view, 'm' materialized view, 'i' index; sinks
 *     are not relations and are not listed (as Materialize's pg_class);
 *   - one role, PGCAT_ROLE_NAME (oid 10), owns everything; one database, the session's.
 *     The pg_catalog relations themselves are not listed in pg_class.
 */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter-sql.h"
#include "plan.pb-c.h"

#define PGCAT_NAMESPACE_PG_CATALOG 11
#define PGCAT_NAMESPACE_PUBLIC 2200
#define PGCAT_NAMESPACE_INFORMATION_SCHEMA 13000
#define PGCAT_ROLE_OID 10
#define PGCAT_ROLE_NAME "coord"
#define PGCAT_DATABASE_OID 16384
#define PGCAT_ENCODING_UTF8 6
#define PGCAT_AM_BTREE 403
#define PGCAT_TYPE_VARCHAR 1043        /* a varchar(n) column's atttypid */
#define PGCAT_TYPE_NUMERIC_ARRAY 1231  /* numeric[]: only in pg_type (no such arrays) */

struct pgcat_table;     /* opaque: one relation's definition */

/* The relation `name` of schema `schema` ("pg_catalog" or "information_schema"), or
 * NULL when that schema has no such relation. */
const struct pgcat_table *pgcat_find(const char *schema, const char *name);

/* Its columns (static storage). */
size_t pgcat_columns(const struct pgcat_table *t, const struct sql_column **ret);

/* Its rows now: a Constant relation of its columns over the objects ops->each lists.
 * `session` names the database (NULL: "coord").  0 with *ret (the caller owns it), or
 * -ENOMEM, or each's error. */
int pgcat_rows(const struct pgcat_table *t, const struct sql_catalog_ops *ops, void *userdata,
               const struct sql_session *session, Coord__Plan__Relation **ret);

/* pg_encoding_to_char(): PostgreSQL's name of encoding number `n`, "" for none. */
const char *pgcat_encoding_name(int64_t n);

/* ---- Oids to texts, for what the analyzer plans as CASE over them. ---- */

enum pgcat_map {
        PGCAT_MAP_REGCLASS,             /* relation oid -> its name, quoted if needed */
        PGCAT_MAP_REGTYPE,              /* type oid -> format_type(oid, NULL) */
        PGCAT_MAP_REGNAMESPACE,         /* namespace oid -> its name */
        PGCAT_MAP_TYPNAME,              /* type oid -> pg_type.typname ("int4", "_text") */
        PGCAT_MAP_RELNAMESPACE,         /* relation oid -> its namespace's name */
        PGCAT_MAP_TYPE_ELEMENT,         /* type oid -> its (element's) SQL name, no [] */
        PGCAT_MAP_TYPE_ARRAY,           /* array type oid -> "[]" */
        PGCAT_MAP_INDEXDEF,             /* index oid -> pg_get_indexdef(oid) */
        PGCAT_MAP_INDEXDEF_PRETTY,      /* index oid -> pg_get_indexdef(oid, 0, true) */
        PGCAT_MAP_INDEX_COLUMN,         /* PGCAT_INDEX_COLUMN_KEY(oid, n) -> key column n */
        PGCAT_MAP_PUBLISHABLE,          /* relation oid -> "t" for a user table, else "f" */
        _PGCAT_MAP_MAX,
        _PGCAT_MAP_INVALID = -EINVAL,
};

/* Key columns numbered 1 .. PGCAT_MAX_COLUMN - 1 (an index has at most 32 in PostgreSQL). */
#define PGCAT_MAX_COLUMN 2048
#define PGCAT_INDEX_COLUMN_KEY(oid, n) ((oid) * PGCAT_MAX_COLUMN + (int64_t)(n))

struct pgcat_names {
        size_t n;
        int64_t *keys;                  /* distinct, ascending for the object maps */
        char **texts;
};

/* The map `which` now, over the objects ops->each lists: 0 with *ret (free with
 * pgcat_names_done()), -ENOMEM or each's error. */
int pgcat_map(enum pgcat_map which, const struct sql_catalog_ops *ops, void *userdata,
              struct pgcat_names *ret);
void pgcat_names_done(struct pgcat_names *n);
