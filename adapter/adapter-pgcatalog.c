/* adapter-pgcatalog.c -- the pg_catalog and information_schema relations
 * (adapter-pgcatalog.h).
 *
 * Each relation is a column list and a generator.  pgcat_rows() first copies the
 * objects sql_catalog_ops.each lists into an array (ascending ids, borrowed names and
 * columns: they outlive the analysis); a generator walks it and emits one row of datums
 * per row of the relation; emit() checks the arity and row-encodes it into the
 * Constant's updates.  Texts in the datums are borrowed: row_encode() copies them.
 */
#include "adapter-pgcatalog.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "row/row.h"
#include "util.h"

struct gen {
        const struct pgcat_table *t;
        const struct sql_catalog_ops *ops;
        void *userdata;
        const char *database;
        struct sql_object *objs;        /* every object, ascending id */
        size_t n_objs, cap_objs;
        Coord__Plan__Update **rows;
        size_t n, cap;
};

struct pgcat_table {
        const char *schema, *name;
        const struct sql_column *columns;
        size_t n_columns;
        int (*generate)(struct gen *g);
};

#define I(v) ROW_DATUM_INT(v)
#define B(v) ROW_DATUM_BOOL(v)
#define T(s) ROW_DATUM_TEXT((s), (uint32_t)strlen(s))
#define NUL ROW_DATUM_NULL
#define COL(name, type) { (char *)(name), ROW_TYPE_##type, false, NULL, 0 }
#define COLN(name, type) { (char *)(name), ROW_TYPE_##type, true, NULL, 0 }

static int emit(struct gen *g, const struct row_datum *d, size_t n)
{
        Coord__Plan__Update *u;
        uint8_t *bytes = NULL;
        size_t len = 0;

        assert(n == g->t->n_columns);
        if (g->n == g->cap) {
                size_t cap = g->cap ? 2 * g->cap : 16;
                Coord__Plan__Update **p = realloc(g->rows, cap * sizeof(*p));

                if (!p)
                        return -ENOMEM;
                g->rows = p;
                g->cap = cap;
        }
        u = malloc(sizeof(*u));
        if (!u || row_encode(d, n, &bytes, &len) < 0) {
                free(u);
                return -ENOMEM;
        }
        coord__plan__update__init(u);
        u->row.data = bytes;
        u->row.len = len;
        u->diff = 1;
        g->rows[g->n++] = u;
        return 0;
}

#define EMIT(g, ...)                                                                        \
        ({                                                                                  \
                const struct row_datum _d_[] = { __VA_ARGS__ };                             \
                emit(g, _d_, ELEMENTSOF(_d_));                                              \
        })

/* ---- Shared facts about objects. ---- */

/* Sinks are not relations: pg_class and the information_schema leave them out. */
static bool is_relation(const struct sql_object *o)
{
        return o->kind != SQL_OBJECT_SINK;
}

static const char *relkind(const struct sql_object *o)
{
        switch (o->kind) {
        case SQL_OBJECT_VIEW:
                return "v";
        case SQL_OBJECT_MATERIALIZED_VIEW:
                return "m";
        case SQL_OBJECT_INDEX:
                return "i";
        default:
                return "r";             /* tables, sources */
        }
}

static int64_t namespace_of(const struct sql_object *o)
{
        return o->builtin ? PGCAT_NAMESPACE_PG_CATALOG : PGCAT_NAMESPACE_PUBLIC;
}

static const char *namespace_name(const struct sql_object *o)
{
        return o->builtin ? "pg_catalog" : "public";
}

/* pg_type's facts about our four types and their arrays (sql_name: information_schema's
 * data_type). */
static const struct type_info {
        enum row_type type;
        const char *name, *sql_name, *category, *align;
        int64_t len, array, elem;
        bool byval, preferred;
} types[] = {
        { ROW_TYPE_BOOL, "bool", "boolean", "B", "c", 1, 1000, 0, true, true },
        { ROW_TYPE_INT8, "int8", "bigint", "N", "d", 8, 1016, 0, true, false },
        { ROW_TYPE_INT4, "int4", "integer", "N", "i", 4, 1007, 0, true, false },
        { ROW_TYPE_TEXT, "text", "text", "S", "i", -1, 1009, 0, false, true },
        { ROW_TYPE_BOOL_ARRAY, "_bool", "ARRAY", "A", "i", -1, 0, ROW_TYPE_BOOL, false, false },
        { ROW_TYPE_INT8_ARRAY, "_int8", "ARRAY", "A", "d", -1, 0, ROW_TYPE_INT8, false, false },
        { ROW_TYPE_INT4_ARRAY, "_int4", "ARRAY", "A", "i", -1, 0, ROW_TYPE_INT4, false, false },
        { ROW_TYPE_TEXT_ARRAY, "_text", "ARRAY", "A", "i", -1, 0, ROW_TYPE_TEXT, false, false },
        { ROW_TYPE_NUMERIC, "numeric", "numeric", "N", "i", -1, PGCAT_TYPE_NUMERIC_ARRAY, 0,
          false, false },
        /* numeric[]: listed for format_type() and psql; Coord has no numeric arrays. */
        { (enum row_type)PGCAT_TYPE_NUMERIC_ARRAY, "_numeric", "ARRAY", "A", "i", -1, 0,
          ROW_TYPE_NUMERIC, false, false },
        /* varchar(n) columns: text with a length (adapter-sql.h, max_chars). */
        { (enum row_type)PGCAT_TYPE_VARCHAR, "varchar", "character varying", "S", "i", -1, 1015,
          0, false, false },
        /* character(n) columns: max_chars is n (adapter-sql-bpchar.c). */
        { ROW_TYPE_BPCHAR, "bpchar", "character", "S", "i", -1, 0, 0, false, false },
};

/* A varchar(n) column: text with a length (max_chars is numeric's modifier for a
 * numeric column, adapter-sql.h). */
static bool is_varchar(const struct sql_column *c)
{
        return c->type == ROW_TYPE_TEXT && c->max_chars;
}

static const struct type_info *type_info(enum row_type t)
{
        for (size_t i = 0; i < ELEMENTSOF(types); i++)
                if (types[i].type == t)
                        return &types[i];
        return NULL;
}

/* A text column's collation is "default" (oid 100), text[]'s too; others have none. */
static int64_t collation_of(enum row_type t)
{
        return t == ROW_TYPE_TEXT || t == ROW_TYPE_TEXT_ARRAY || (int)t == PGCAT_TYPE_VARCHAR ||
                               t == ROW_TYPE_BPCHAR
                       ? 100
                       : 0;
}

static const struct sql_object *object_by_id(const struct gen *g, uint64_t id)
{
        size_t lo = LOWER_BOUND(g->n_objs, m, g->objs[m].id, id);

        return lo < g->n_objs && g->objs[lo].id == id ? &g->objs[lo] : NULL;
}

typedef int (*attr_fn)(struct gen *g, const struct sql_object *o, size_t attnum,
                       const struct sql_column *c);

/* fn for every column pg_attribute and information_schema.columns show of every
 * relation: its own, or for an index the columns of its object that it keys on. */
static int each_attribute(struct gen *g, attr_fn fn)
{
        int r = 0;

        for (size_t i = 0; r >= 0 && i < g->n_objs; i++) {
                const struct sql_object *o = &g->objs[i], *on;

                if (!is_relation(o))
                        continue;
                if (o->kind != SQL_OBJECT_INDEX) {
                        for (size_t k = 0; r >= 0 && k < o->n_columns; k++)
                                r = fn(g, o, k + 1, &o->columns[k]);
                        continue;
                }
                on = object_by_id(g, o->on_id);
                for (size_t k = 0; on && r >= 0 && k < o->n_keys; k++)
                        if (o->keys[k] < on->n_columns)
                                r = fn(g, o, k + 1, &on->columns[o->keys[k]]);
        }
        return r;
}

/* fn for every object. */
static int each_object(struct gen *g, int (*fn)(struct gen *g, const struct sql_object *o))
{
        int r = 0;

        for (size_t i = 0; r >= 0 && i < g->n_objs; i++)
                r = fn(g, &g->objs[i]);
        return r;
}

/* ---- pg_namespace ---- */

static const struct sql_column pg_namespace_cols[] = {
        COL("oid", INT8), COL("nspname", TEXT), COL("nspowner", INT8),
};

static int gen_pg_namespace(struct gen *g)
{
        static const struct {
                int64_t oid;
                const char *name;
        } spaces[] = {
                { PGCAT_NAMESPACE_PG_CATALOG, "pg_catalog" },
                { PGCAT_NAMESPACE_PUBLIC, "public" },
                { PGCAT_NAMESPACE_INFORMATION_SCHEMA, "information_schema" },
        };
        int r = 0;

        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(spaces); i++)
                r = EMIT(g, I(spaces[i].oid), T(spaces[i].name), I(PGCAT_ROLE_OID));
        return r;
}

/* ---- pg_class ---- */

static const struct sql_column pg_class_cols[] = {
        COL("oid", INT8),               COL("relname", TEXT),
        COL("relnamespace", INT8),      COL("reltype", INT8),
        COL("reloftype", INT8),         COL("relowner", INT8),
        COL("relam", INT8),             COL("relfilenode", INT8),
        COL("reltablespace", INT8),     COL("relpages", INT4),
        COL("relallvisible", INT4),     COL("reltoastrelid", INT8),
        COL("relhasindex", BOOL),       COL("relisshared", BOOL),
        COL("relpersistence", TEXT),    COL("relkind", TEXT),
        COL("relnatts", INT4),          COL("relchecks", INT4),
        COL("relhasrules", BOOL),       COL("relhastriggers", BOOL),
        COL("relhassubclass", BOOL),    COL("relrowsecurity", BOOL),
        COL("relforcerowsecurity", BOOL), COL("relispopulated", BOOL),
        COL("relreplident", TEXT),      COL("relispartition", BOOL),
        COL("relrewrite", INT8),        COLN("relpartbound", TEXT),
};

static int class_row(struct gen *g, const struct sql_object *o)
{
        if (!is_relation(o))
                return 0;
        return EMIT(g, I((int64_t)o->id), T(o->name), I(namespace_of(o)), I(0), I(0),
                    I(PGCAT_ROLE_OID), I(o->kind == SQL_OBJECT_INDEX ? PGCAT_AM_BTREE : 0), I(0),
                    I(0), I(0), I(0), I(0), B(o->index_id != 0), B(false), T("p"), T(relkind(o)),
                    I((int64_t)(o->kind == SQL_OBJECT_INDEX ? o->n_keys : o->n_columns)),
                    I((int64_t)o->n_checks), B(false), B(false), B(false), B(false), B(false),
                    B(true), T("d"), B(false), I(0), NUL);
}

static int gen_pg_class(struct gen *g)
{
        return each_object(g, class_row);
}

/* ---- pg_index ---- */

static const struct sql_column pg_index_cols[] = {
        COL("indexrelid", INT8),        COL("indrelid", INT8),
        COL("indnatts", INT4),          COL("indnkeyatts", INT4),
        COL("indisunique", BOOL),       COL("indnullsnotdistinct", BOOL),
        COL("indisprimary", BOOL),      COL("indisexclusion", BOOL),
        COL("indimmediate", BOOL),      COL("indisclustered", BOOL),
        COL("indisvalid", BOOL),        COL("indcheckxmin", BOOL),
        COL("indisready", BOOL),        COL("indislive", BOOL),
        COL("indisreplident", BOOL),    COLN("indexprs", TEXT),
        COLN("indpred", TEXT),
};

static int index_row(struct gen *g, const struct sql_object *o)
{
        if (o->kind != SQL_OBJECT_INDEX)
                return 0;
        return EMIT(g, I((int64_t)o->id), I((int64_t)o->on_id), I((int64_t)o->n_keys),
                    I((int64_t)o->n_keys), B(false), B(false), B(false), B(false), B(true),
                    B(false), B(true), B(false), B(true), B(true), B(false), NUL, NUL);
}

static int gen_pg_index(struct gen *g)
{
        return each_object(g, index_row);
}

/* ---- pg_attribute ---- */

static const struct sql_column pg_attribute_cols[] = {
        COL("attrelid", INT8),          COL("attname", TEXT),
        COL("atttypid", INT8),          COL("attstattarget", INT4),
        COL("attlen", INT4),            COL("attnum", INT4),
        COL("attndims", INT4),          COL("attcacheoff", INT4),
        COL("atttypmod", INT4),         COL("attbyval", BOOL),
        COL("attalign", TEXT),          COL("attstorage", TEXT),
        COL("attcompression", TEXT),    COL("attnotnull", BOOL),
        COL("atthasdef", BOOL),         COL("atthasmissing", BOOL),
        COL("attidentity", TEXT),       COL("attgenerated", TEXT),
        COL("attisdropped", BOOL),      COL("attislocal", BOOL),
        COL("attinhcount", INT4),       COL("attcollation", INT8),
};

static int attribute_row(struct gen *g, const struct sql_object *o, size_t attnum,
                         const struct sql_column *c)
{
        const struct type_info *ti = type_info(c->type);

        if (!ti)
                return 0;
        /* varchar(n): type varchar, typmod n + 4 (PostgreSQL's VARHDRSZ), as PostgreSQL;
         * numeric(p, s): ((p << 16) | s) + 4, max_chars + 4 too; character(n): type
         * bpchar, typmod n + 4. */
        return EMIT(g, I((int64_t)o->id), T(c->name),
                    I(is_varchar(c) ? PGCAT_TYPE_VARCHAR : c->type), I(-1), I(ti->len),
                    I((int64_t)attnum), I(0), I(-1),
                    I(c->max_chars ? (int64_t)c->max_chars + 4 : -1), B(ti->byval), T(ti->align),
                    T(ti->len < 0 ? "x" : "p"), T(""), B(relkind(o)[0] == 'r' && !c->nullable),
                    B(o->kind == SQL_OBJECT_TABLE && c->default_row != NULL), B(false), T(""),
                    T(""), B(false), B(true), I(0), I(collation_of(c->type)));
}

static int gen_pg_attribute(struct gen *g)
{
        return each_attribute(g, attribute_row);
}

/* ---- pg_type ---- */

static const struct sql_column pg_type_cols[] = {
        COL("oid", INT8),               COL("typname", TEXT),
        COL("typnamespace", INT8),      COL("typowner", INT8),
        COL("typlen", INT4),            COL("typbyval", BOOL),
        COL("typtype", TEXT),           COL("typcategory", TEXT),
        COL("typispreferred", BOOL),    COL("typisdefined", BOOL),
        COL("typdelim", TEXT),          COL("typrelid", INT8),
        COL("typelem", INT8),           COL("typarray", INT8),
        COL("typalign", TEXT),          COL("typstorage", TEXT),
        COL("typnotnull", BOOL),        COL("typbasetype", INT8),
        COL("typtypmod", INT4),         COL("typndims", INT4),
        COL("typcollation", INT8),
};

static int gen_pg_type(struct gen *g)
{
        int r = 0;

        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(types); i++) {
                const struct type_info *t = &types[i];

                r = EMIT(g, I(t->type), T(t->name), I(PGCAT_NAMESPACE_PG_CATALOG),
                         I(PGCAT_ROLE_OID), I(t->len), B(t->byval), T("b"), T(t->category),
                         B(t->preferred), B(true), T(","), I(0), I(t->elem), I(t->array), T(t->align),
                         T(t->len < 0 ? "x" : "p"), B(false), I(0), I(-1), I(0),
                         I(collation_of(t->type)));
        }
        return r;
}

/* ---- pg_am ---- */

static const struct sql_column pg_am_cols[] = {
        COL("oid", INT8), COL("amname", TEXT), COL("amtype", TEXT),
};

/* PostgreSQL's two.  An index names btree (what CREATE INDEX without USING makes in
 * PostgreSQL, and what pg_get_indexdef() says); other relations none (relam 0). */
static int gen_pg_am(struct gen *g)
{
        int r = EMIT(g, I(2), T("heap"), T("t"));

        return r < 0 ? r : EMIT(g, I(PGCAT_AM_BTREE), T("btree"), T("i"));
}

/* ---- pg_database ---- */

static const struct sql_column pg_database_cols[] = {
        COL("oid", INT8),               COL("datname", TEXT),
        COL("datdba", INT8),            COL("encoding", INT4),
        COL("datlocprovider", TEXT),    COL("datistemplate", BOOL),
        COL("datallowconn", BOOL),      COL("datconnlimit", INT4),
        COL("dattablespace", INT8),     COL("datcollate", TEXT),
        COL("datctype", TEXT),          COLN("daticulocale", TEXT),
        COLN("datcollversion", TEXT),   COLN("datacl", TEXT_ARRAY),
};

/* One database: every database name reaches the same objects. */
static int gen_pg_database(struct gen *g)
{
        return EMIT(g, I(PGCAT_DATABASE_OID), T(g->database), I(PGCAT_ROLE_OID),
                    I(PGCAT_ENCODING_UTF8), T("c"), B(false), B(true), I(-1), I(1663), T("C"),
                    T("C"), NUL, NUL, NUL);
}

/* ---- pg_roles, pg_user ---- */

static const struct sql_column pg_roles_cols[] = {
        COL("oid", INT8),               COL("rolname", TEXT),
        COL("rolsuper", BOOL),          COL("rolinherit", BOOL),
        COL("rolcreaterole", BOOL),     COL("rolcreatedb", BOOL),
        COL("rolcanlogin", BOOL),       COL("rolreplication", BOOL),
        COL("rolconnlimit", INT4),      COL("rolpassword", TEXT),
        COL("rolbypassrls", BOOL),
};

static int gen_pg_roles(struct gen *g)
{
        return EMIT(g, I(PGCAT_ROLE_OID), T(PGCAT_ROLE_NAME), B(true), B(true), B(true),
                    B(true), B(true), B(false), I(-1), T("********"), B(true));
}

static const struct sql_column pg_user_cols[] = {
        COL("usename", TEXT),           COL("usesysid", INT8),
        COL("usecreatedb", BOOL),       COL("usesuper", BOOL),
        COL("userepl", BOOL),           COL("usebypassrls", BOOL),
        COL("passwd", TEXT),
};

static int gen_pg_user(struct gen *g)
{
        return EMIT(g, T(PGCAT_ROLE_NAME), I(PGCAT_ROLE_OID), B(true), B(true), B(false),
                    B(true), T("********"));
}

/* ---- information_schema.tables, information_schema.columns ---- */

static const struct sql_column is_tables_cols[] = {
        COL("table_catalog", TEXT),     COL("table_schema", TEXT),
        COL("table_name", TEXT),        COL("table_type", TEXT),
        COLN("self_referencing_column_name", TEXT), COLN("reference_generation", TEXT),
        COLN("user_defined_type_catalog", TEXT), COLN("user_defined_type_schema", TEXT),
        COLN("user_defined_type_name", TEXT), COL("is_insertable_into", TEXT),
        COL("is_typed", TEXT),          COLN("commit_action", TEXT),
};

/* As PostgreSQL's: tables and views, not materialized views or indexes. */
static bool in_information_schema(const struct sql_object *o)
{
        return o->kind == SQL_OBJECT_TABLE || o->kind == SQL_OBJECT_SOURCE ||
               o->kind == SQL_OBJECT_VIEW;
}

static int is_table_row(struct gen *g, const struct sql_object *o)
{        bool view = o->kind == SQL_OBJECT_VIEW;
        bool insertable = o->kind == SQL_OBJECT_TABLE && !o->builtin;

        if (!in_information_schema(o))
                return 0;
        return EMIT(g, T(g->database), T(namespace_name(o)), T(o->name),
                    T(view ? "VIEW" : "BASE TABLE"), NUL, NUL, NUL, NUL, NUL,
                    T(insertable ? "YES" : "NO"), T("NO"), NUL);
}

static int gen_is_tables(struct gen *g)
{
        return each_object(g, is_table_row);
}

static const struct sql_column is_columns_cols[] = {
        COL("table_catalog", TEXT),     COL("table_schema", TEXT),
        COL("table_name", TEXT),        COL("column_name", TEXT),
        COL("ordinal_position", INT4),  COL("is_nullable", TEXT),
        COL("data_type", TEXT),         COLN("character_maximum_length", INT4),
        COLN("numeric_precision", INT4), COLN("numeric_precision_radix", INT4),
        COLN("numeric_scale", INT4),    COL("udt_catalog", TEXT),
        COL("udt_schema", TEXT),        COL("udt_name", TEXT),
        COL("is_updatable", TEXT),
};

static int is_column_row(struct gen *g, const struct sql_object *o, size_t attnum,
                         const struct sql_column *c)
{
        const struct type_info *ti = type_info(c->type);
        bool num = c->type == ROW_TYPE_INT4 || c->type == ROW_TYPE_INT8;
        bool dec = c->type == ROW_TYPE_NUMERIC, mod = dec && c->max_chars;

        if (!ti || !in_information_schema(o))
                return 0;
        /* varchar(n) is a text column with a length (adapter-sql.h, max_chars); numeric
         * has radix 10, and its precision and scale when declared. */
        return EMIT(g, T(g->database), T(namespace_name(o)), T(o->name), T(c->name),
                    I((int64_t)attnum), T(c->nullable ? "YES" : "NO"),
                    T(is_varchar(c) ? "character varying" : ti->sql_name),
                    is_varchar(c) || c->type == ROW_TYPE_BPCHAR ? I((int64_t)c->max_chars) : NUL,
                    num ? I(c->type == ROW_TYPE_INT4 ? 32 : 64)
                        : mod ? I(SQL_NUMERIC_PRECISION(c->max_chars)) : NUL,
                    num ? I(2) : dec ? I(10) : NUL,
                    num ? I(0) : mod ? I(SQL_NUMERIC_SCALE(c->max_chars)) : NUL,
                    T(g->database), T("pg_catalog"),
                    T(is_varchar(c) ? "varchar" : ti->name),
                    T(o->kind == SQL_OBJECT_TABLE && !o->builtin ? "YES" : "NO"));
}

static int gen_is_columns(struct gen *g)
{
        return each_attribute(g, is_column_row);
}

/* ---- pg_attrdef ---- */

/* adbin is PostgreSQL's pg_node_tree; here it is text holding what pg_get_expr() shows:
 * Coord keeps a DEFAULT as its value (folded when the table was created), so the
 * expression is that value as PostgreSQL prints a constant of the column's type. */
static const struct sql_column pg_attrdef_cols[] = {
        COL("adrelid", INT8), COL("adnum", INT4), COL("adbin", TEXT),
};

/* `'it''s'` into buf (size >= 2 * len + 3). */
static void quote_literal(char *buf, const char *p, size_t len)
{
        size_t k = 0;

        buf[k++] = '\'';
        for (size_t i = 0; i < len; i++) {
                if (p[i] == '\'')
                        buf[k++] = '\'';
                buf[k++] = p[i];
        }
        buf[k++] = '\'';
        buf[k] = 0;
}

/* PostgreSQL's text of the literal that gives a DEFAULT's value (ruleutils.c
 * get_const_expr(); an implicit cast to the column's type is not shown): true, false; an
 * integer bare if it fits int4 and is not negative, else '-5'::integer or
 * '5000000000'::bigint; 'text'::text, 'x'::character varying, '{1,2}'::integer[].
 * Malloc'ed into *ret, NULL for a NULL value (PostgreSQL keeps no DEFAULT NULL either). */
static int default_text(const struct sql_column *c, char **ret)
{
        struct row_datum d;
        const struct type_info *ti = type_info(c->type);
        const char *type = c->type == ROW_TYPE_BPCHAR ? "bpchar"
                           : is_varchar(c)             ? "character varying"
                           : ti                        ? ti->sql_name
                                                       : "text";
        char num[ROW_TEXT_SCRATCH];
        char *lit, *s;
        int n;

        *ret = NULL;
        if (row_decode(c->default_row, c->default_len, &d, 1) < 0)
                return -EBADMSG;
        switch (d.kind) {
        case ROW_KIND_NULL:
                return 0;
        case ROW_KIND_BOOL:
                *ret = strdup(d.b ? "true" : "false");
                return *ret ? 0 : -ENOMEM;
        case ROW_KIND_INT:
                /* As the literal that was written: int4 if it fits, else int8. */
                if (d.i >= 0 && d.i <= INT32_MAX)
                        n = asprintf(ret, "%lld", (long long)d.i);
                else
                        n = asprintf(ret, "'%lld'::%s", (long long)d.i,
                                     d.i >= INT32_MIN ? "integer" : "bigint");
                if (n < 0)
                        *ret = NULL;
                return n < 0 ? -ENOMEM : 0;
        case ROW_KIND_NUMERIC:
                /* ruleutils.c: bare when it starts with a digit and has a point. */
                row_numeric_format(&d, num);
                if (isdigit((unsigned char)num[0]) && strchr(num, '.'))
                        n = asprintf(ret, "%s", num);
                else
                        n = asprintf(ret, "'%s'::numeric", num);
                if (n < 0)
                        *ret = NULL;
                return n < 0 ? -ENOMEM : 0;
        default:
                break;
        }
        if (ti && ti->elem) {
                /* integer[], text[], boolean[]: the element's name and []. */
                const struct type_info *ei = type_info((enum row_type)ti->elem);

                type = ei ? ei->sql_name : "text";
        }
        /* A character(n) DEFAULT is kept padded; PostgreSQL shows the constant written,
         * which pads to the same value: shown without the padding. */
        while (c->type == ROW_TYPE_BPCHAR && d.text.len && d.text.ptr[d.text.len - 1] == ' ')
                d.text.len--;
        lit = malloc(2 * (size_t)d.text.len + 3);
        if (!lit)
                return -ENOMEM;
        quote_literal(lit, d.text.ptr, d.text.len);
        n = asprintf(&s, "%s::%s%s", lit, type, ti && ti->elem ? "[]" : "");
        free(lit);
        if (n < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int attrdef_row(struct gen *g, const struct sql_object *o, size_t attnum,
                       const struct sql_column *c)
{
        char *text;
        int r;

        if (o->kind != SQL_OBJECT_TABLE || !c->default_row)
                return 0;
        r = default_text(c, &text);
        if (r >= 0 && text)
                r = EMIT(g, I((int64_t)o->id), I((int64_t)attnum), T(text));
        free(text);
        return r;
}

static int gen_pg_attrdef(struct gen *g)
{
        return each_attribute(g, attrdef_row);
}

/* ---- pg_collation ---- */

static const struct sql_column pg_collation_cols[] = {
        COL("oid", INT8),               COL("collname", TEXT),
        COL("collnamespace", INT8),     COL("collowner", INT8),
        COL("collprovider", TEXT),      COL("collisdeterministic", BOOL),
        COL("collencoding", INT4),      COLN("collcollate", TEXT),
        COLN("collctype", TEXT),
};

/* PostgreSQL's three built-in ones; text columns have "default" (100). */
static int gen_pg_collation(struct gen *g)
{
        int r = EMIT(g, I(100), T("default"), I(PGCAT_NAMESPACE_PG_CATALOG), I(PGCAT_ROLE_OID),
                     T("d"), B(true), I(-1), NUL, NUL);

        if (r >= 0)
                r = EMIT(g, I(950), T("C"), I(PGCAT_NAMESPACE_PG_CATALOG), I(PGCAT_ROLE_OID),
                         T("c"), B(true), I(-1), T("C"), T("C"));
        if (r >= 0)
                r = EMIT(g, I(951), T("POSIX"), I(PGCAT_NAMESPACE_PG_CATALOG),
                         I(PGCAT_ROLE_OID), T("c"), B(true), I(-1), T("POSIX"), T("POSIX"));
        return r;
}

/* ---- Relations that are empty in Coord. ----
 *
 * Coord has no policies, extended statistics, publications or inheritance.  Its
 * PRIMARY KEY, UNIQUE and CHECK constraints are enforced, but they are not objects with
 * an oid, so pg_constraint lists none of them (docs/sql.md).  Expression columns
 * (pg_node_tree in PostgreSQL) are text, as pg_attrdef.adbin; "char"[] and int2[]
 * columns are text[] and int4[]. */

static const struct sql_column pg_constraint_cols[] = {
        COL("oid", INT8),               COL("conname", TEXT),
        COL("connamespace", INT8),      COL("contype", TEXT),
        COL("condeferrable", BOOL),     COL("condeferred", BOOL),
        COL("convalidated", BOOL),      COL("conrelid", INT8),
        COL("contypid", INT8),          COL("conindid", INT8),
        COL("conparentid", INT8),       COL("confrelid", INT8),
        COL("conislocal", BOOL),        COL("coninhcount", INT4),
        COL("connoinherit", BOOL),      COLN("conkey", INT4_ARRAY),
        COLN("confkey", INT4_ARRAY),    COLN("conbin", TEXT),
};

static const struct sql_column pg_policy_cols[] = {
        COL("oid", INT8),               COL("polname", TEXT),
        COL("polrelid", INT8),          COL("polcmd", TEXT),
        COL("polpermissive", BOOL),     COL("polroles", INT8_ARRAY),
        COLN("polqual", TEXT),          COLN("polwithcheck", TEXT),
};

static const struct sql_column pg_statistic_ext_cols[] = {
        COL("oid", INT8),               COL("stxrelid", INT8),
        COL("stxname", TEXT),           COL("stxnamespace", INT8),
        COL("stxowner", INT8),          COL("stxstattarget", INT4),
        COL("stxkeys", INT4_ARRAY),     COL("stxkind", TEXT_ARRAY),
        COLN("stxexprs", TEXT),
};

static const struct sql_column pg_publication_cols[] = {
        COL("oid", INT8),               COL("pubname", TEXT),
        COL("pubowner", INT8),          COL("puballtables", BOOL),
        COL("pubinsert", BOOL),         COL("pubupdate", BOOL),
        COL("pubdelete", BOOL),         COL("pubtruncate", BOOL),
        COL("pubviaroot", BOOL),
};

static const struct sql_column pg_publication_namespace_cols[] = {
        COL("oid", INT8), COL("pnpubid", INT8), COL("pnnspid", INT8),
};

static const struct sql_column pg_publication_rel_cols[] = {
        COL("oid", INT8),               COL("prpubid", INT8),
        COL("prrelid", INT8),           COLN("prqual", TEXT),
        COLN("prattrs", INT4_ARRAY),
};

static const struct sql_column pg_inherits_cols[] = {
        COL("inhrelid", INT8),          COL("inhparent", INT8),
        COL("inhseqno", INT4),          COL("inhdetachpending", BOOL),
};

/* ---- coord_leases (issue 33): the adapter's leases, as its clock judges them now. ---- */

static const struct sql_column coord_leases_cols[] = {
        COL("key", TEXT),               COLN("holder", TEXT),
        COL("epoch", INT8),             COL("version", INT8),
        COLN("expires_in_ms", INT8),    COL("live", BOOL),
};

static int emit_lease(void *arg, const struct sql_lease *l)
{
        struct gen *g = arg;

        return EMIT(g, T(l->key), l->holder[0] ? T(l->holder) : NUL, I((int64_t)l->epoch),
                    I((int64_t)l->version), l->live ? I((int64_t)l->expires_in_ms) : NUL,
                    B(l->live));
}

static int gen_coord_leases(struct gen *g)
{
        return g->ops && g->ops->leases ? g->ops->leases(g->userdata, emit_lease, g) : 0;
}

static int gen_empty(struct gen *g)
{
        (void)g;
        return 0;
}

/* ---- The table of relations. ---- */

#define TABLE(schema, name, cols, gen) { schema, name, cols, ELEMENTSOF(cols), gen }

static const struct pgcat_table tables[] = {
        TABLE("pg_catalog", "pg_namespace", pg_namespace_cols, gen_pg_namespace),
        TABLE("pg_catalog", "pg_class", pg_class_cols, gen_pg_class),
        TABLE("pg_catalog", "pg_index", pg_index_cols, gen_pg_index),
        TABLE("pg_catalog", "pg_attribute", pg_attribute_cols, gen_pg_attribute),
        TABLE("pg_catalog", "pg_type", pg_type_cols, gen_pg_type),
        TABLE("pg_catalog", "pg_am", pg_am_cols, gen_pg_am),
        TABLE("pg_catalog", "pg_database", pg_database_cols, gen_pg_database),
        TABLE("pg_catalog", "pg_roles", pg_roles_cols, gen_pg_roles),
        TABLE("pg_catalog", "pg_user", pg_user_cols, gen_pg_user),
        TABLE("pg_catalog", "pg_attrdef", pg_attrdef_cols, gen_pg_attrdef),
        TABLE("pg_catalog", "pg_collation", pg_collation_cols, gen_pg_collation),
        TABLE("pg_catalog", "pg_constraint", pg_constraint_cols, gen_empty),
        TABLE("pg_catalog", "pg_policy", pg_policy_cols, gen_empty),
        TABLE("pg_catalog", "pg_statistic_ext", pg_statistic_ext_cols, gen_empty),
        TABLE("pg_catalog", "pg_publication", pg_publication_cols, gen_empty),
        TABLE("pg_catalog", "pg_publication_namespace", pg_publication_namespace_cols, gen_empty),
        TABLE("pg_catalog", "pg_publication_rel", pg_publication_rel_cols, gen_empty),
        TABLE("pg_catalog", "pg_inherits", pg_inherits_cols, gen_empty),
        TABLE("pg_catalog", "coord_leases", coord_leases_cols, gen_coord_leases),
        TABLE("information_schema", "tables", is_tables_cols, gen_is_tables),
        TABLE("information_schema", "columns", is_columns_cols, gen_is_columns),
};

const struct pgcat_table *pgcat_find(const char *schema, const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(tables); i++)
                if (strcmp(tables[i].schema, schema) == 0 && strcmp(tables[i].name, name) == 0)
                        return &tables[i];
        return NULL;
}

size_t pgcat_columns(const struct pgcat_table *t, const struct sql_column **ret)
{
        *ret = t->columns;
        return t->n_columns;
}

static int snapshot(void *arg, const struct sql_object *o)
{
        struct gen *g = arg;

        if (g->n_objs == g->cap_objs) {
                size_t cap = g->cap_objs ? 2 * g->cap_objs : 64;
                struct sql_object *p = realloc(g->objs, cap * sizeof(*p));

                if (!p)
                        return -ENOMEM;
                g->objs = p;
                g->cap_objs = cap;
        }
        assert(g->n_objs == 0 || g->objs[g->n_objs - 1].id < o->id);
        g->objs[g->n_objs++] = *o;
        return 0;
}

int pgcat_rows(const struct pgcat_table *t, const struct sql_catalog_ops *ops, void *userdata,
               const struct sql_session *session, Coord__Plan__Relation **ret)
{
        struct gen g = {
                .t = t, .ops = ops, .userdata = userdata,
                .database = session && session->database ? session->database : "coord",
        };
        Coord__Plan__Relation *rel = malloc(sizeof(*rel));
        Coord__Plan__Constant *c = malloc(sizeof(*c));
        Coord__Plan__Type *ctypes = malloc(t->n_columns * sizeof(*ctypes));
        int r = rel && c && ctypes ? 0 : -ENOMEM;

        if (r >= 0 && ops && ops->each)
                r = ops->each(userdata, snapshot, &g);
        if (r >= 0)
                r = t->generate(&g);
        free(g.objs);
        if (r < 0) {
                for (size_t i = 0; i < g.n; i++)
                        coord__plan__update__free_unpacked(g.rows[i], NULL);
                free(g.rows);
                free(rel);
                free(c);
                free(ctypes);
                return r;
        }
        for (size_t i = 0; i < t->n_columns; i++)
                ctypes[i] = (Coord__Plan__Type)t->columns[i].type;
        coord__plan__relation__init(rel);
        coord__plan__constant__init(c);
        c->n_column_types = t->n_columns;
        c->column_types = ctypes;
        c->n_rows = g.n;
        c->rows = g.rows;
        rel->kind_case = COORD__PLAN__RELATION__KIND_CONSTANT;
        rel->constant = c;
        *ret = rel;
        return 0;
}

const char *pgcat_encoding_name(int64_t n)
{
        /* PostgreSQL's enum pg_enc (src/include/mb/pg_wchar.h), in order. */
        static const char *const names[] = {
                "SQL_ASCII", "EUC_JP", "EUC_CN", "EUC_KR", "EUC_TW", "EUC_JIS_2004", "UTF8",
                "MULE_INTERNAL", "LATIN1", "LATIN2", "LATIN3", "LATIN4", "LATIN5", "LATIN6",
                "LATIN7", "LATIN8", "LATIN9", "LATIN10", "WIN1256", "WIN1258", "WIN866",
                "WIN874", "KOI8R", "WIN1251", "WIN1252", "ISO_8859_5", "ISO_8859_6",
                "ISO_8859_7", "ISO_8859_8", "WIN1250", "WIN1253", "WIN1254", "WIN1255",
                "WIN1257", "KOI8U", "SJIS", "BIG5", "GBK", "UHC", "GB18030", "JOHAB",
                "SHIFT_JIS_2004",
        };

        return n >= 0 && (uint64_t)n < ELEMENTSOF(names) ? names[n] : "";
}

/* ---- Maps from oids to texts (reg* output, format_type(), pg_get_indexdef()). ---- */

struct map {
        int64_t *keys;
        char **texts;
        size_t n, cap;
};

static int map_add(struct map *m, int64_t key, char *text)
{
        if (!text)
                return -ENOMEM;
        if (m->n == m->cap) {
                size_t cap = m->cap ? 2 * m->cap : 16;
                int64_t *k = realloc(m->keys, cap * sizeof(*k));
                char **t;

                if (k)
                        m->keys = k;
                t = k ? realloc(m->texts, cap * sizeof(*t)) : NULL;
                if (!t) {
                        free(text);
                        return -ENOMEM;
                }
                m->texts = t;
                m->cap = cap;
        }
        m->keys[m->n] = key;
        m->texts[m->n++] = text;
        return 0;
}

/* PostgreSQL's quote_identifier() without its keyword list: a name of lower-case
 * letters, digits and _ not starting with a digit stays bare. */
static char *quote_ident(const char *name)
{
        bool bare = name[0] && !(name[0] >= '0' && name[0] <= '9');
        size_t len = strlen(name), k = 0;
        char *s;

        for (size_t i = 0; bare && i < len; i++)
                bare = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
                       name[i] == '_';
        if (bare)
                return strdup(name);
        s = malloc(2 * len + 3);
        if (!s)
                return NULL;
        s[k++] = '"';
        for (size_t i = 0; i < len; i++) {
                if (name[i] == '"')
                        s[k++] = '"';
                s[k++] = name[i];
        }
        s[k++] = '"';
        s[k] = 0;
        return s;
}

/* CREATE INDEX name ON [public.]on USING btree (k1, k2), as pg_get_indexdef(). */
static char *index_def(const struct gen *g, const struct sql_object *o, bool pretty)
{
        const struct sql_object *on = object_by_id(g, o->on_id);
        char *name = quote_ident(o->name), *onname = on ? quote_ident(on->name) : NULL;
        char *s = NULL, *keys = strdup("");

        for (size_t k = 0; keys && on && k < o->n_keys; k++) {
                char *col = o->keys[k] < on->n_columns ? quote_ident(on->columns[o->keys[k]].name)
                                                       : NULL;
                char *next = NULL;

                if (!col || asprintf(&next, "%s%s%s", keys, k ? ", " : "", col) < 0)
                        next = NULL;
                free(col);
                free(keys);
                keys = next;
        }
        if (name && onname && keys &&
            asprintf(&s, "CREATE INDEX %s ON %s%s%s USING btree (%s)", name,
                     pretty ? "" : namespace_name(on), pretty ? "" : ".", onname, keys) < 0)
                s = NULL;
        free(name);
        free(onname);
        free(keys);
        return s;
}

static int map_object(struct gen *g, struct map *m, enum pgcat_map which,
                      const struct sql_object *o)
{
        int r = 0;

        switch (which) {
        case PGCAT_MAP_REGCLASS:
                return is_relation(o) ? map_add(m, (int64_t)o->id, quote_ident(o->name)) : 0;
        case PGCAT_MAP_RELNAMESPACE:
                return is_relation(o) ? map_add(m, (int64_t)o->id, strdup(namespace_name(o))) : 0;
        case PGCAT_MAP_PUBLISHABLE:
                /* PostgreSQL's is_publishable_class(): ordinary user tables. */
                if (!is_relation(o))
                        return 0;
                return map_add(m, (int64_t)o->id,
                               strdup(o->kind == SQL_OBJECT_TABLE && !o->builtin ? "t" : "f"));
        case PGCAT_MAP_INDEXDEF:
        case PGCAT_MAP_INDEXDEF_PRETTY:
                if (o->kind != SQL_OBJECT_INDEX || !object_by_id(g, o->on_id))
                        return 0;
                return map_add(m, (int64_t)o->id,
                               index_def(g, o, which == PGCAT_MAP_INDEXDEF_PRETTY));
        case PGCAT_MAP_INDEX_COLUMN: {
                const struct sql_object *on = object_by_id(g, o->on_id);

                if (o->kind != SQL_OBJECT_INDEX || !on)
                        return 0;
                for (size_t k = 0; r >= 0 && k < o->n_keys && k < PGCAT_MAX_COLUMN; k++)
                        if (o->keys[k] < on->n_columns)
                                r = map_add(m, PGCAT_INDEX_COLUMN_KEY((int64_t)o->id, k + 1),
                                            quote_ident(on->columns[o->keys[k]].name));
                return r;
        }
        default:
                return 0;
        }
}

int pgcat_map(enum pgcat_map which, const struct sql_catalog_ops *ops, void *userdata,
              struct pgcat_names *ret)
{
        struct gen g = { .ops = ops, .userdata = userdata };
        struct map m = { 0 };
        int r = 0;

        switch (which) {
        case PGCAT_MAP_TYPNAME:
                for (size_t i = 0; r >= 0 && i < ELEMENTSOF(types); i++)
                        r = map_add(&m, types[i].type, strdup(types[i].name));
                break;
        case PGCAT_MAP_REGTYPE:
        case PGCAT_MAP_TYPE_ELEMENT:
        case PGCAT_MAP_TYPE_ARRAY:
                for (size_t i = 0; r >= 0 && i < ELEMENTSOF(types); i++) {
                        const struct type_info *t = &types[i];
                        const struct type_info *e = t->elem ? type_info((enum row_type)t->elem) : t;
                        char *s = NULL;

                        if (which == PGCAT_MAP_TYPE_ARRAY && !t->elem)
                                continue;
                        if (which == PGCAT_MAP_REGTYPE && t->elem)
                                r = asprintf(&s, "%s[]", e->sql_name) < 0 ? -ENOMEM : 0;
                        else
                                s = strdup(which == PGCAT_MAP_TYPE_ARRAY ? "[]" : e->sql_name);
                        if (r >= 0)
                                r = map_add(&m, t->type, s);
                }
                break;
        case PGCAT_MAP_REGNAMESPACE:
                r = map_add(&m, PGCAT_NAMESPACE_PG_CATALOG, strdup("pg_catalog"));
                if (r >= 0)
                        r = map_add(&m, PGCAT_NAMESPACE_PUBLIC, strdup("public"));
                if (r >= 0)
                        r = map_add(&m, PGCAT_NAMESPACE_INFORMATION_SCHEMA,
                                    strdup("information_schema"));
                break;
        default:
                if (ops && ops->each)
                        r = ops->each(userdata, snapshot, &g);
                for (size_t i = 0; r >= 0 && i < g.n_objs; i++)
                        r = map_object(&g, &m, which, &g.objs[i]);
                break;
        }
        free(g.objs);
        if (r < 0) {
                pgcat_names_done(&(struct pgcat_names){ m.n, m.keys, m.texts });
                return r;
        }
        *ret = (struct pgcat_names){ m.n, m.keys, m.texts };
        return 0;
}

void pgcat_names_done(struct pgcat_names *n)
{
        for (size_t i = 0; i < n->n; i++)
                free(n->texts[i]);
        free(n->keys);
        free(n->texts);
        *n = (struct pgcat_names){ 0 };
}
