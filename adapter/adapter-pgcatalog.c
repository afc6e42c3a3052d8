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
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "row.h"
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
};

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
        return t == ROW_TYPE_TEXT || t == ROW_TYPE_TEXT_ARRAY ? 100 : 0;
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
        COL("relrewrite", INT8),
};

static int class_row(struct gen *g, const struct sql_object *o)
{
        if (!is_relation(o))
                return 0;
        return EMIT(g, I((int64_t)o->id), T(o->name), I(namespace_of(o)), I(0), I(0),
                    I(PGCAT_ROLE_OID), I(0), I(0), I(0), I(0), I(0), I(0),
                    B(o->index_id != 0), B(false), T("p"), T(relkind(o)),
                    I((int64_t)(o->kind == SQL_OBJECT_INDEX ? o->n_keys : o->n_columns)),
                    I((int64_t)o->n_checks), B(false), B(false), B(false), B(false), B(false),
                    B(true), T("d"), B(false), I(0));
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
        COL("indisreplident", BOOL),
};

static int index_row(struct gen *g, const struct sql_object *o)
{
        if (o->kind != SQL_OBJECT_INDEX)
                return 0;
        return EMIT(g, I((int64_t)o->id), I((int64_t)o->on_id), I((int64_t)o->n_keys),
                    I((int64_t)o->n_keys), B(false), B(false), B(false), B(false), B(true),
                    B(false), B(true), B(false), B(true), B(true), B(false));
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
        return EMIT(g, I((int64_t)o->id), T(c->name), I(c->type), I(-1), I(ti->len),
                    I((int64_t)attnum), I(0), I(-1), I(-1), B(ti->byval), T(ti->align),
                    T(ti->len < 0 ? "x" : "p"), T(""), B(!c->nullable),
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

/* PostgreSQL's two: no object of ours names an access method (relam is 0). */
static int gen_pg_am(struct gen *g)
{
        int r = EMIT(g, I(2), T("heap"), T("t"));

        return r < 0 ? r : EMIT(g, I(403), T("btree"), T("i"));
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

        if (!ti || !in_information_schema(o))
                return 0;
        /* varchar(n) is a text column with a length (adapter-sql.h, max_chars). */
        return EMIT(g, T(g->database), T(namespace_name(o)), T(o->name), T(c->name),
                    I((int64_t)attnum), T(c->nullable ? "YES" : "NO"),
                    T(c->max_chars ? "character varying" : ti->sql_name),
                    c->max_chars ? I((int64_t)c->max_chars) : NUL,
                    num ? I(c->type == ROW_TYPE_INT4 ? 32 : 64) : NUL, num ? I(2) : NUL,
                    num ? I(0) : NUL, T(g->database), T("pg_catalog"),
                    T(c->max_chars ? "varchar" : ti->name),
                    T(o->kind == SQL_OBJECT_TABLE && !o->builtin ? "YES" : "NO"));
}

static int gen_is_columns(struct gen *g)
{
        return each_attribute(g, is_column_row);
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
