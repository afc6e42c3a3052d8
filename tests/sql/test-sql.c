/* test-sql -- adapter/adapter-sql*.c: parsing (batches, syntax errors and positions),
 * AS OF lifting, every statement kind, plans (checked through a compact EXPLAIN form),
 * and the SQLSTATE, message and position of every error the analyzer reports.
 *
 * The catalog is a fake with fixed GlobalIds:
 *   t (10): a integer NOT NULL, b text, c boolean, d bigint
 *   u (11): x bigint
 *   v (12): a view;  mv (13): a materialized view;  i (14): an index
 *   x (20): a integer -- only once a test has "created" it
 *   w (15): a view over v and u (two levels of views);  nd (16): a view calling mz_now()
 *   k (17): k integer, with index 18
 *   pk (22): id integer PRIMARY KEY, u text, n numeric(10,2), q bigint, UNIQUE (u, q) --
 *     only while the foreign key and ON CONFLICT DO UPDATE cases run
 * The views' stored plans are planned by the analyzer itself in main() (CREATE VIEW).
 */
#include <stdarg.h>
#include <stdint.h>

#include "adapter-sql.h"
#include "row/row.h"
#include "t.h"
#include "util.h"

/* ---- The fake catalog. ---- */

struct fake_object {
        const char *name;
        uint64_t id;
        enum sql_object_kind kind;
        struct sql_column columns[4];
        size_t n_columns;
        bool hidden;
        uint64_t index_id;
        /* Views: filled by plan_views(). */
        Coord__Plan__Relation *plan;
        uint64_t *inputs;
        size_t n_inputs;
        bool deterministic;
        const struct sql_unique *uniques;
        size_t n_uniques;
};

static uint32_t pk_pkey[] = { 0 }, pk_uq[] = { 1, 3 };
static const struct sql_unique pk_keys[] = {
        { "pk_pkey", pk_pkey, 1, true, false }, { "pk_u_q_key", pk_uq, 2, false, false },
};

static struct fake_object objects[] = {
        { "t", 10, SQL_OBJECT_TABLE,
          { { "a", ROW_TYPE_INT4, false }, { "b", ROW_TYPE_TEXT, true },
            { "c", ROW_TYPE_BOOL, true }, { "d", ROW_TYPE_INT8, true } }, 4, false },
        { "u", 11, SQL_OBJECT_TABLE, { { "x", ROW_TYPE_INT8, true } }, 1, false },
        { "v", 12, SQL_OBJECT_VIEW, { { "a", ROW_TYPE_INT4, true } }, 1, false },
        { "mv", 13, SQL_OBJECT_MATERIALIZED_VIEW, { { "a", ROW_TYPE_INT4, true } }, 1, false },
        { "i", 14, SQL_OBJECT_INDEX, { { "a", ROW_TYPE_INT4, true } }, 1, false },
        { "x", 20, SQL_OBJECT_TABLE, { { "a", ROW_TYPE_INT4, true } }, 1, true },
        { "w", 15, SQL_OBJECT_VIEW, { { "a", ROW_TYPE_INT4, true }, { "x", ROW_TYPE_INT8, true } },
          2, false },
        { "nd", 16, SQL_OBJECT_VIEW, { { "a", ROW_TYPE_INT4, false }, { "ts", ROW_TYPE_INT8, true } },
          2, false },
        { "k", 17, SQL_OBJECT_TABLE, { { "k", ROW_TYPE_INT4, true } }, 1, false, 18 },
        { "nt", 21, SQL_OBJECT_TABLE,
          { { "n", ROW_TYPE_NUMERIC, true },
            { "m", ROW_TYPE_NUMERIC, true, .max_chars = SQL_NUMERIC_TYPMOD(10, 2) } }, 2, false },
        { "pk", 22, SQL_OBJECT_TABLE,
          { { "id", ROW_TYPE_INT4, false }, { "u", ROW_TYPE_TEXT, true },
            { "n", ROW_TYPE_NUMERIC, true, .max_chars = SQL_NUMERIC_TYPMOD(10, 2) },
            { "q", ROW_TYPE_INT8, true } }, 4, true,
          .uniques = pk_keys, .n_uniques = 2 },
};

static int fake_error;          /* when set, every lookup fails with it */

static int fake_lookup(void *userdata, const char *name, struct sql_relation *ret)
{
        CU_ASSERT(userdata == objects);
        if (fake_error)
                return fake_error;
        for (size_t i = 0; i < ELEMENTSOF(objects); i++)
                if (!objects[i].hidden && strcmp(objects[i].name, name) == 0) {
                        *ret = (struct sql_relation){
                                .id = objects[i].id, .kind = objects[i].kind,
                                .columns = objects[i].columns, .n_columns = objects[i].n_columns,
                                .plan = objects[i].plan, .inputs = objects[i].inputs,
                                .n_inputs = objects[i].n_inputs,
                                .deterministic = objects[i].deterministic,
                                .index_id = objects[i].index_id,
                                .uniques = objects[i].uniques,
                                .n_uniques = objects[i].n_uniques,
                        };
                        return 0;
                }
        return -ENOENT;
}

/* The visible objects in ascending id order, as the pg_catalog relations list them. */
static int fake_each(void *userdata, sql_object_fn fn, void *arg)
{
        uint64_t last = 0;

        CU_ASSERT(userdata == objects);
        for (;;) {
                const struct fake_object *next = NULL;
                int r;

                for (size_t i = 0; i < ELEMENTSOF(objects); i++)
                        if (!objects[i].hidden && objects[i].id > last &&
                            (!next || objects[i].id < next->id))
                                next = &objects[i];
                if (!next)
                        return 0;
                r = fn(arg, &(struct sql_object){ .id = next->id, .name = next->name,
                                                  .kind = next->kind, .columns = next->columns,
                                                  .n_columns = next->n_columns,
                                                  .index_id = next->index_id });
                if (r < 0)
                        return r;
                last = next->id;
        }
}

static const struct sql_catalog_ops catalog = { fake_lookup, fake_each };

/* ---- Helpers. ---- */

static struct sql_stmt *analyze_params(const char *sql, const struct sql_params *params)
{
        struct row_error err = { 0 };
        struct sql_stmt *s = NULL;
        int r = sql_analyze_one(sql, &catalog, objects, params, &s, &err);

        if (r < 0)
                fprintf(stderr, "\n  %s: unexpected %s %s (%s)\n", sql, err.sqlstate,
                        err.message, err.detail);
        CU_ASSERT_EQUAL_FATAL(r, 0);
        CU_ASSERT_FATAL(s != NULL);
        return s;
}

static struct sql_stmt *analyze(const char *sql)
{
        return analyze_params(sql, NULL);
}

/* Expect an error: SQLSTATE, message (NULL: any) and position (-1: any, 0: none). */
static void expect_error_params(const char *sql, const struct sql_params *params,
                                const char *sqlstate, const char *message, int position)
{
        struct row_error err;
        struct sql_stmt *s = NULL;
        int r;

        memset(&err, 0, sizeof(err));
        r = sql_analyze_one(sql, &catalog, objects, params, &s, &err);
        CU_ASSERT(r < 0);
        CU_ASSERT(s == NULL);
        if (r >= 0) {
                fprintf(stderr, "\n  %s: expected %s, but it succeeded\n", sql, sqlstate);
                sql_stmt_free(s);
                return;
        }
        CU_ASSERT_EQUAL(strlen(err.sqlstate), 5);
        CU_ASSERT(err.message[0] != '\0');
        if (strcmp(err.sqlstate, sqlstate) != 0 || (message && strcmp(err.message, message)) ||
            (position >= 0 && err.position != (unsigned)position)) {
                fprintf(stderr, "\n  %s:\n    got      %s \"%s\" at %u\n    expected %s \"%s\" at %d\n",
                        sql, err.sqlstate, err.message, err.position, sqlstate,
                        message ? message : "*", position);
                CU_FAIL("wrong error");
        }
}

static void expect_error(const char *sql, const char *sqlstate, const char *message,
                         int position)
{
        expect_error_params(sql, NULL, sqlstate, message, position);
}

/* A compact EXPLAIN of plans, to compare them as strings. */
static const char *type_short(int type)
{
        switch (type) {
        case ROW_TYPE_INT4:
                return "int4";
        case ROW_TYPE_INT8:
                return "int8";
        case ROW_TYPE_TEXT:
                return "text";
        case ROW_TYPE_BPCHAR:
                return "bpchar";
        case ROW_TYPE_BOOL:
                return "bool";
        case ROW_TYPE_INT4_ARRAY:
                return "int4[]";
        case ROW_TYPE_TEXT_ARRAY:
                return "text[]";
        case ROW_TYPE_INT8_ARRAY:
                return "int8[]";
        case ROW_TYPE_NUMERIC:
                return "numeric";
        default:
                return "?";
        }
}

static void explain_expr(FILE *f, const Coord__Plan__Expr *e);

static void explain_exprs_(FILE *f, Coord__Plan__Expr **e, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                if (i)
                        fputs(", ", f);
                explain_expr(f, e[i]);
        }
}

static void explain_expr(FILE *f, const Coord__Plan__Expr *e)
{
        static const char *const ops[] = {
                [COORD__PLAN__FUNC__FUNC_ADD] = "+", [COORD__PLAN__FUNC__FUNC_SUB] = "-",
                [COORD__PLAN__FUNC__FUNC_MUL] = "*", [COORD__PLAN__FUNC__FUNC_DIV] = "/",
                [COORD__PLAN__FUNC__FUNC_MOD] = "%", [COORD__PLAN__FUNC__FUNC_EQ] = "=",
                [COORD__PLAN__FUNC__FUNC_NE] = "<>", [COORD__PLAN__FUNC__FUNC_LT] = "<",
                [COORD__PLAN__FUNC__FUNC_LE] = "<=", [COORD__PLAN__FUNC__FUNC_GT] = ">",
                [COORD__PLAN__FUNC__FUNC_GE] = ">=", [COORD__PLAN__FUNC__FUNC_AND] = "AND",
                [COORD__PLAN__FUNC__FUNC_OR] = "OR", [COORD__PLAN__FUNC__FUNC_LIKE] = "LIKE",
                [COORD__PLAN__FUNC__FUNC_ILIKE] = "ILIKE", [COORD__PLAN__FUNC__FUNC_CONCAT] = "||",
                [COORD__PLAN__FUNC__FUNC_REGEX_MATCH] = "~",
                [COORD__PLAN__FUNC__FUNC_REGEX_IMATCH] = "~*",
        };
        static const char *const named[] = {
                [COORD__PLAN__FUNC__FUNC_COALESCE] = "COALESCE", [COORD__PLAN__FUNC__FUNC_CASE] = "CASE",
                [COORD__PLAN__FUNC__FUNC_GREATEST] = "GREATEST", [COORD__PLAN__FUNC__FUNC_LEAST] = "LEAST",
                [COORD__PLAN__FUNC__FUNC_ABS] = "abs", [COORD__PLAN__FUNC__FUNC_LENGTH] = "length",
                [COORD__PLAN__FUNC__FUNC_LOWER] = "lower", [COORD__PLAN__FUNC__FUNC_UPPER] = "upper",
                [COORD__PLAN__FUNC__FUNC_ASSERT_NOT_NULL] = "ASSERT_NOT_NULL",
                [COORD__PLAN__FUNC__FUNC_SUBQUERY_TOO_MANY_ROWS] = "TOO_MANY_ROWS",
                [COORD__PLAN__FUNC__FUNC_VARCHAR] = "VARCHAR",
                [COORD__PLAN__FUNC__FUNC_BPCHAR] = "BPCHAR",
                [COORD__PLAN__FUNC__FUNC_ARRAY] = "ARRAY", [COORD__PLAN__FUNC__FUNC_ANY] = "ANY",
                [COORD__PLAN__FUNC__FUNC_ALL] = "ALL", [COORD__PLAN__FUNC__FUNC_SUBSCRIPT] = "SUBSCRIPT",
                [COORD__PLAN__FUNC__FUNC_ARRAY_TO_STRING] = "array_to_string",
                [COORD__PLAN__FUNC__FUNC_CARDINALITY] = "cardinality",
                [COORD__PLAN__FUNC__FUNC_ROUND] = "round", [COORD__PLAN__FUNC__FUNC_TRUNC] = "trunc",
                [COORD__PLAN__FUNC__FUNC_CEIL] = "ceil", [COORD__PLAN__FUNC__FUNC_FLOOR] = "floor",
                [COORD__PLAN__FUNC__FUNC_NUMERIC_TYPMOD] = "NUMERIC",
        };
        const Coord__Plan__Call *c;

        switch (e->kind_case) {
        case COORD__PLAN__EXPR__KIND_COLUMN:
                fprintf(f, "#%u", e->column);
                return;
        case COORD__PLAN__EXPR__KIND_LITERAL:
                switch (e->literal->value_case) {
                case COORD__PLAN__DATUM__VALUE_NULL_VALUE:
                        fprintf(f, "NULL::%s", type_short(e->type));
                        return;
                case COORD__PLAN__DATUM__VALUE_BOOL_VALUE:
                        fputs(e->literal->bool_value ? "true" : "false", f);
                        return;
                case COORD__PLAN__DATUM__VALUE_INT_VALUE:
                        fprintf(f, "%lld%s", (long long)e->literal->int_value,
                                (int)e->type == ROW_TYPE_INT8 ? "::int8" : "");
                        return;
                case COORD__PLAN__DATUM__VALUE_TEXT_VALUE:
                        fprintf(f, "'%.*s'", (int)e->literal->text_value.len,
                                (const char *)e->literal->text_value.data);
                        return;
                case COORD__PLAN__DATUM__VALUE_NUMERIC_VALUE:
                        fprintf(f, "%s::numeric", e->literal->numeric_value);
                        return;
                default:
                        fputs("<bad literal>", f);
                        return;
                }
        case COORD__PLAN__EXPR__KIND_CALL:
                c = e->call;
                switch (c->func) {
                case COORD__PLAN__FUNC__FUNC_NEG:
                        fputs("-", f);
                        explain_expr(f, c->args[0]);
                        return;
                case COORD__PLAN__FUNC__FUNC_NOT:
                        fputs("NOT ", f);
                        explain_expr(f, c->args[0]);
                        return;
                case COORD__PLAN__FUNC__FUNC_IS_NULL:
                case COORD__PLAN__FUNC__FUNC_IS_NOT_NULL:
                        fputs("(", f);
                        explain_expr(f, c->args[0]);
                        fputs(c->func == COORD__PLAN__FUNC__FUNC_IS_NULL ? " IS NULL)"
                                                                          : " IS NOT NULL)", f);
                        return;
                case COORD__PLAN__FUNC__FUNC_MZ_NOW:
                        fputs("mz_now()", f);
                        return;
                case COORD__PLAN__FUNC__FUNC_COALESCE:
                case COORD__PLAN__FUNC__FUNC_CASE:
                case COORD__PLAN__FUNC__FUNC_ABS:
                case COORD__PLAN__FUNC__FUNC_LENGTH:
                case COORD__PLAN__FUNC__FUNC_LOWER:
                case COORD__PLAN__FUNC__FUNC_UPPER:
                case COORD__PLAN__FUNC__FUNC_ASSERT_NOT_NULL:
                case COORD__PLAN__FUNC__FUNC_SUBQUERY_TOO_MANY_ROWS:
                case COORD__PLAN__FUNC__FUNC_VARCHAR:
                case COORD__PLAN__FUNC__FUNC_BPCHAR:
                case COORD__PLAN__FUNC__FUNC_ARRAY:
                case COORD__PLAN__FUNC__FUNC_ANY:
                case COORD__PLAN__FUNC__FUNC_ALL:
                case COORD__PLAN__FUNC__FUNC_SUBSCRIPT:
                case COORD__PLAN__FUNC__FUNC_ARRAY_TO_STRING:
                case COORD__PLAN__FUNC__FUNC_CARDINALITY:
                case COORD__PLAN__FUNC__FUNC_ROUND:
                case COORD__PLAN__FUNC__FUNC_TRUNC:
                case COORD__PLAN__FUNC__FUNC_CEIL:
                case COORD__PLAN__FUNC__FUNC_FLOOR:
                case COORD__PLAN__FUNC__FUNC_NUMERIC_TYPMOD:
                        fprintf(f, "%s(", named[c->func]);
                        explain_exprs_(f, c->args, c->n_args);
                        fputs(")", f);
                        return;
                case COORD__PLAN__FUNC__FUNC_CAST:
                        fputs("CAST(", f);
                        explain_expr(f, c->args[0]);
                        fprintf(f, " AS %s)", type_short(e->type));
                        return;
                default:
                        fputs("(", f);
                        for (size_t i = 0; i < c->n_args; i++) {
                                if (i)
                                        fprintf(f, " %s ", (unsigned)c->func < ELEMENTSOF(ops) &&
                                                                   ops[c->func] ? ops[c->func] : "?");
                                explain_expr(f, c->args[i]);
                        }
                        fputs(")", f);
                        return;
                }
        default:
                fputs("<bad expr>", f);
        }
}

static void explain_exprs(FILE *f, Coord__Plan__Expr **e, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                if (i)
                        fputs(", ", f);
                explain_expr(f, e[i]);
        }
}

static void explain_rel(FILE *f, const Coord__Plan__Relation *r)
{
        switch (r->kind_case) {
        case COORD__PLAN__RELATION__KIND_GET:
                fprintf(f, "Get %llu", (unsigned long long)r->get->id);
                return;
        case COORD__PLAN__RELATION__KIND_CONSTANT:
                if (r->constant->n_column_types) {
                        fputs("Constant[", f);
                        for (size_t i = 0; i < r->constant->n_column_types; i++)
                                fprintf(f, "%s%s", i ? "," : "",
                                        type_short(r->constant->column_types[i]));
                        fprintf(f, "](%zu)", r->constant->n_rows);
                        return;
                }
                fprintf(f, "Constant(%zu)", r->constant->n_rows);
                return;
        case COORD__PLAN__RELATION__KIND_JOIN:
                fputs("Join[", f);
                for (size_t i = 0; i < r->join->n_left_keys; i++)
                        fprintf(f, "%s%u=%u", i ? "," : "", r->join->left_keys[i],
                                i < r->join->n_right_keys ? r->join->right_keys[i] : 999);
                fputs("](", f);
                explain_rel(f, r->join->left);
                fputs(", ", f);
                explain_rel(f, r->join->right);
                fputs(")", f);
                return;
        case COORD__PLAN__RELATION__KIND_REDUCE: {
                static const char *const aggs[] = {
                        [COORD__PLAN__AGG_FUNC__AGG_COUNT_STAR] = "count(*)",
                        [COORD__PLAN__AGG_FUNC__AGG_COUNT] = "count",
                        [COORD__PLAN__AGG_FUNC__AGG_SUM] = "sum",
                        [COORD__PLAN__AGG_FUNC__AGG_MIN] = "min",
                        [COORD__PLAN__AGG_FUNC__AGG_MAX] = "max",
                        [COORD__PLAN__AGG_FUNC__AGG_ARRAY_AGG] = "array_agg",
                        [COORD__PLAN__AGG_FUNC__AGG_STRING_AGG] = "string_agg",
                };

                fputs("Reduce[", f);
                for (size_t i = 0; i < r->reduce->n_group_keys; i++)
                        fprintf(f, "%s#%u", i ? "," : "", r->reduce->group_keys[i]);
                fputs(";", f);
                for (size_t i = 0; i < r->reduce->n_aggregates; i++) {
                        const Coord__Plan__Aggregate *g = r->reduce->aggregates[i];

                        if (g->func == COORD__PLAN__AGG_FUNC__AGG_COUNT_STAR)
                                fprintf(f, " count(*)");
                        else if (g->func == COORD__PLAN__AGG_FUNC__AGG_STRING_AGG)
                                fprintf(f, " string_agg(#%u, '%s')", g->column, g->delimiter);
                        else
                                fprintf(f, " %s(#%u)", aggs[g->func], g->column);
                        fprintf(f, "::%s", type_short(g->type));
                }
                fputs("](", f);
                explain_rel(f, r->reduce->input);
                fputs(")", f);
                return;
        }
        case COORD__PLAN__RELATION__KIND_UNION:
                fputs("Union(", f);
                for (size_t i = 0; i < r->union_->n_inputs; i++) {
                        if (i)
                                fputs(", ", f);
                        explain_rel(f, r->union_->inputs[i]);
                }
                fputs(")", f);
                return;
        case COORD__PLAN__RELATION__KIND_DISTINCT:
                fputs("Distinct(", f);
                explain_rel(f, r->distinct->input);
                fputs(")", f);
                return;
        case COORD__PLAN__RELATION__KIND_NEGATE:
                fputs("Negate(", f);
                explain_rel(f, r->negate->input);
                fputs(")", f);
                return;
        case COORD__PLAN__RELATION__KIND_THRESHOLD:
                fputs("Threshold(", f);
                explain_rel(f, r->threshold->input);
                fputs(")", f);
                return;
        case COORD__PLAN__RELATION__KIND_TOP_K: {
                const Coord__Plan__TopK *k = r->top_k;

                /* TopK[#1 DESC,#0 NULLS FIRST; LIMIT n OFFSET m]: nulls only when not
                 * PostgreSQL's default for the direction. */
                fputs("TopK[", f);
                for (size_t i = 0; i < k->n_order; i++) {
                        const Coord__Plan__SortKey *sk = k->order[i];

                        fprintf(f, "%s#%u%s%s", i ? "," : "", sk->column, sk->descending ? " DESC" : "",
                                sk->nulls_first == sk->descending ? ""
                                : sk->nulls_first                 ? " NULLS FIRST"
                                                                  : " NULLS LAST");
                }
                fputs(";", f);
                if (k->has_limit)
                        fprintf(f, " LIMIT %llu", (unsigned long long)k->limit);
                if (k->offset)
                        fprintf(f, " OFFSET %llu", (unsigned long long)k->offset);
                fputs("](", f);
                explain_rel(f, k->input);
                fputs(")", f);
                return;
        }
        case COORD__PLAN__RELATION__KIND_FILTER:
                fputs("Filter[", f);
                explain_exprs(f, r->filter->predicates, r->filter->n_predicates);
                fputs("](", f);
                explain_rel(f, r->filter->input);
                fputs(")", f);
                return;
        case COORD__PLAN__RELATION__KIND_MAP:
                fputs("Map[", f);
                explain_exprs(f, r->map->exprs, r->map->n_exprs);
                fputs("](", f);
                explain_rel(f, r->map->input);
                fputs(")", f);
                return;
        case COORD__PLAN__RELATION__KIND_PROJECT:
                fputs("Project[", f);
                for (size_t i = 0; i < r->project->n_outputs; i++)
                        fprintf(f, "%s%u", i ? "," : "", r->project->outputs[i]);
                fputs("](", f);
                explain_rel(f, r->project->input);
                fputs(")", f);
                return;
        default:
                fputs("<bad relation>", f);
        }
}

static void expect_plan(const Coord__Plan__Relation *r, const char *want)
{
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        CU_ASSERT_FATAL(f != NULL);
        explain_rel(f, r);
        fclose(f);
        if (strcmp(buf, want) != 0) {
                fprintf(stderr, "\n  plan:     %s\n  expected: %s\n", buf, want);
                CU_FAIL("wrong plan");
        }
        free(buf);
}

/* Whether r's plan, as explain_rel() prints it, starts with `prefix`. */
static bool plan_starts(const Coord__Plan__Relation *r, const char *prefix)
{
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        bool yes;

        CU_ASSERT_FATAL(f != NULL);
        explain_rel(f, r);
        fclose(f);
        yes = strncmp(buf, prefix, strlen(prefix)) == 0;
        if (!yes)
                fprintf(stderr, "\n  plan:     %s\n  expected: %s...\n", buf, prefix);
        free(buf);
        return yes;
}

static void expect_select_plan(const char *sql, const char *want)
{
        struct sql_stmt *s = analyze(sql);

        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_SELECT);
        expect_plan(s->select.peek->plan, want);
        sql_stmt_free(s);
}

/* The INSERT's rows as row_to_string() texts, joined with " ". */
static void expect_rows(const struct sql_stmt *s, const char *want)
{
        char all[1024] = "";

        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_INSERT);
        for (size_t i = 0; i < s->insert.n_rows; i++) {
                char *one = NULL;

                CU_ASSERT_EQUAL_FATAL(row_to_string(s->insert.rows[i].data, s->insert.rows[i].len,
                                                    &one), 0);
                if (i)
                        strncat(all, " ", sizeof(all) - strlen(all) - 1);
                strncat(all, one, sizeof(all) - strlen(all) - 1);
                free(one);
        }
        if (strcmp(all, want) != 0) {
                fprintf(stderr, "\n  rows:     %s\n  expected: %s\n", all, want);
                CU_FAIL("wrong rows");
        }
}

static void expect_insert(const char *sql, const char *want)
{
        struct sql_stmt *s = analyze(sql);

        expect_rows(s, want);
        CU_ASSERT_EQUAL(s->n_inputs, 0);        /* the target is not an input */
        CU_ASSERT_EQUAL(s->insert.id, 10);
        sql_stmt_free(s);
}

/* ---- Parsing. ---- */

static void test_batch(void)
{
        const char *q = "  CREATE TABLE x (a int);\n INSERT INTO x VALUES (1) ;SELECT a FROM x; ";
        struct row_error err = { 0 };
        struct sql_batch *b = NULL;
        struct sql_stmt *s = NULL;

        CU_ASSERT_EQUAL_FATAL(sql_parse(q, &b, &err), 0);
        CU_ASSERT_EQUAL_FATAL(sql_batch_size(b), 3);

        /* Statement 2 names x, which exists only once statement 1 has run. */
        CU_ASSERT_EQUAL(sql_analyze(b, 1, &catalog, objects, NULL, &s, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "42P01");

        CU_ASSERT_EQUAL_FATAL(sql_analyze(b, 0, &catalog, objects, NULL, &s, &err), 0);
        CU_ASSERT_EQUAL(s->kind, SQL_STMT_CREATE_TABLE);
        CU_ASSERT_STRING_EQUAL(s->sql, "CREATE TABLE x (a int)");
        s = sql_stmt_free(s);
        objects[5].hidden = false;              /* "run" the CREATE TABLE */

        CU_ASSERT_EQUAL_FATAL(sql_analyze(b, 1, &catalog, objects, NULL, &s, &err), 0);
        CU_ASSERT_STRING_EQUAL(s->sql, "INSERT INTO x VALUES (1)");
        CU_ASSERT_EQUAL(s->insert.id, 20);
        s = sql_stmt_free(s);
        CU_ASSERT_EQUAL_FATAL(sql_analyze(b, 2, &catalog, objects, NULL, &s, &err), 0);
        CU_ASSERT_STRING_EQUAL(s->sql, "SELECT a FROM x");
        CU_ASSERT(s->n_inputs == 1 && s->inputs[0] == 20);
        sql_stmt_free(s);
        objects[5].hidden = true;
        sql_batch_free(b);

        CU_ASSERT_EQUAL_FATAL(sql_parse("", &b, &err), 0);
        CU_ASSERT_EQUAL(sql_batch_size(b), 0);
        sql_batch_free(b);
        CU_ASSERT_EQUAL_FATAL(sql_parse(" ; ;; -- nothing\n", &b, &err), 0);
        CU_ASSERT_EQUAL(sql_batch_size(b), 0);
        sql_batch_free(b);
        CU_ASSERT(sql_batch_free(NULL) == NULL);
        CU_ASSERT(sql_stmt_free(NULL) == NULL);
}

static void test_syntax_errors(void)
{
        struct row_error err = { 0 };
        struct sql_batch *b = NULL;

        expect_error("select * fro t", "42601", "syntax error at or near \"fro\"", 10);
        /* Positions count characters, not bytes. */
        expect_error("SELECT 'h\xc3\xa9h\xc3\xa9' from from", "42601",
                     "syntax error at or near \"from\"", 20);
        expect_error("select 'abc", "42601", "unterminated quoted string at or near \"'abc\"", 8);
        expect_error("select 1 /* open", "42601", NULL, 10);
        expect_error("SELECT 1 +", "42601", "syntax error at end of input", 11);
        /* An error anywhere fails the whole string: nothing of it runs. */
        CU_ASSERT_EQUAL(sql_parse("select 1; selec 2", &b, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "42601");
        CU_ASSERT_EQUAL(err.position, 11);
        CU_ASSERT(b == NULL);

        expect_error("SELECT 1; SELECT 2", "42601",
                     "cannot insert multiple commands into a prepared statement", -1);
        expect_error("", "42601", NULL, -1);
}

/* ---- AS OF. ---- */

static void expect_as_of(const char *sql, bool has, uint64_t value)
{
        struct sql_stmt *s = analyze(sql);

        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_SELECT);
        CU_ASSERT_EQUAL(s->select.has_as_of, has);
        if (has)
                CU_ASSERT_EQUAL(s->select.as_of, value);
        /* The statement text keeps the clause. */
        CU_ASSERT_STRING_EQUAL(s->sql, sql);
        sql_stmt_free(s);
}

static void test_as_of(void)
{
        struct row_error err = { 0 };
        struct sql_batch *b = NULL;
        struct sql_stmt *s = NULL;

        expect_as_of("SELECT a FROM t AS OF 5", true, 5);
        expect_as_of("select a from t as of 2 + 3 * 4", true, 14);
        expect_as_of("SELECT a FROM t AS OF 9223372036854775807", true, INT64_MAX);
        expect_as_of("SELECT a FROM t WHERE a > 1 AS OF (7)", true, 7);
        expect_as_of("SELECT a FROM t AS OF '12'", true, 12);
        expect_as_of("SELECT a FROM t AS OF 5 -- trailing comment", true, 5);
        expect_as_of("SELECT 1 AS OF 3", true, 3);
        /* Not clauses: a string, a comment, an alias named "of". */
        expect_as_of("SELECT 'as of 5' FROM t", false, 0);
        expect_as_of("SELECT a FROM t /* as of 3 */", false, 0);
        expect_as_of("SELECT 1 AS of", false, 0);
        /* ...but after a FROM, `AS OF` ending the statement lacks its time. */
        expect_error("SELECT a FROM t AS OF", "42601", NULL, -1);
        expect_error("SELECT a FROM t AS OF;", "42601", NULL, -1);

        s = analyze("SELECT a AS of FROM t");
        CU_ASSERT_FALSE(s->select.has_as_of);
        CU_ASSERT_STRING_EQUAL(s->select.peek->columns[0]->name, "of");
        sql_stmt_free(s);
        s = analyze("SELECT 'as of 5' FROM t");
        CU_ASSERT_STRING_EQUAL(s->select.peek->columns[0]->name, "?column?");
        expect_plan(s->select.peek->plan, "Project[4](Map['as of 5'](Get 10))");
        sql_stmt_free(s);

        /* Per statement in a batch. */
        CU_ASSERT_EQUAL_FATAL(sql_parse("SELECT a FROM t AS OF 5; SELECT a FROM t; "
                                        "SELECT b FROM t AS OF 6",
                                        &b, &err), 0);
        CU_ASSERT_EQUAL_FATAL(sql_batch_size(b), 3);
        for (size_t i = 0; i < 3; i++) {
                CU_ASSERT_EQUAL_FATAL(sql_analyze(b, i, &catalog, objects, NULL, &s, &err), 0);
                CU_ASSERT_EQUAL(s->select.has_as_of, i != 1);
                CU_ASSERT_EQUAL(s->select.as_of, i == 0 ? 5 : i == 2 ? 6 : 0);
                s = sql_stmt_free(s);
        }
        sql_batch_free(b);

        expect_error("SELECT a FROM t AS OF -1", "22023", NULL, 23);
        expect_error("SELECT a FROM t AS OF 'x'", "22P02",
                     "invalid input syntax for type bigint: \"x\"", 23);
        expect_error("SELECT a FROM t AS OF a", "42703", "column \"a\" does not exist", 23);
        expect_error("SELECT a FROM t AS OF true", "42804", NULL, 23);
        expect_error("SELECT a FROM t AS OF NULL", "22023", NULL, 23);
        expect_error("SELECT a FROM t AS OF mz_now()", "0A000", NULL, 23);
        expect_error("SELECT a FROM t AS OF 1/0", "22012", "division by zero", -1);
        /* Only at the top level of a statement. */
        expect_error("SELECT (SELECT 1 AS OF 5)", "42601", NULL, -1);
        expect_error("INSERT INTO t VALUES (1) AS OF 5", "0A000",
                     "AS OF is only supported in SELECT and CREATE MATERIALIZED VIEW", 26);
        /* The blanked clause holds a 2-byte character: later positions still count
         * characters of the original. */
        CU_ASSERT_EQUAL(sql_parse("SELECT 1 AS OF '\xc3\xa9' ; selec 1", &b, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.message, "syntax error at or near \"selec\"");
        CU_ASSERT_EQUAL(err.position, 22);
}

/* A query of `n` copies of `item` between `head` and `tail` (malloc'ed). */
static char *repeat(const char *head, const char *item, size_t n, const char *tail)
{
        size_t hl = strlen(head), il = strlen(item), tl = strlen(tail);
        char *q = malloc(hl + n * il + tl + 1), *p = q;

        CU_ASSERT_PTR_NOT_NULL_FATAL(q);
        memcpy(p, head, hl);
        p += hl;
        for (size_t i = 0; i < n; i++, p += il)
                memcpy(p, item, il);
        memcpy(p, tail, tl + 1);
        return q;
}

/* adapter-sql.c note 11: what nests too deep for the parser's recursion is 54001 before
 * it parses; long flat lists are not. */
static void test_nesting(void)
{
        static const struct {
                const char *head, *item, *tail;
                size_t n;
                bool ok;
        } cases[] = {
                { "SELECT ", "1+", "1", 5000, false },          /* overflowed the stack */
                { "SELECT ", "NOT ", "true", 2000, false },
                { "SELECT ", "(", "1", 2000, false },
                { "SELECT 1", "::int", "", 2000, false },
                { "SELECT 1; SELECT ", "1+", "1", 200, true },  /* each statement alone */
                { "INSERT INTO t (a) VALUES (-1)", ", (-1)", "", 5000, true },
                { "SELECT a FROM t WHERE a = 1", " OR a = -2 AND b = 'x'", "", 3000, true },
                { "SELECT CASE a", " WHEN 1 THEN -1", " END FROM t", 3000, true },
                { "SELECT a FROM t WHERE a IN (1", ", -1", ")", 5000, true },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *q = repeat(cases[i].head, cases[i].item, cases[i].n, cases[i].tail);
                struct row_error err = { 0 };
                struct sql_batch *b = NULL;
                int r = sql_parse(q, &b, &err);

                if (cases[i].ok) {
                        CU_ASSERT_EQUAL(r, 0);
                } else {
                        CU_ASSERT_EQUAL(r, -EINVAL);
                        CU_ASSERT_STRING_EQUAL(err.sqlstate, "54001");
                        CU_ASSERT(err.position > 0 && err.position <= strlen(q));
                }
                if (r < 0 && cases[i].ok)
                        fprintf(stderr, "case %zu: %s %s\n", i, err.sqlstate, err.message);
                sql_batch_free(b);
                free(q);
        }
}

/* ---- DDL. ---- */

static void test_create_table(void)
{
        static const struct {
                const char *name;
                enum row_type type;
                bool nullable;
        } want[] = {
                { "a", ROW_TYPE_INT8, true },  { "b", ROW_TYPE_INT8, true },
                { "c", ROW_TYPE_INT4, true },  { "d", ROW_TYPE_INT4, true },
                { "e", ROW_TYPE_INT4, true },  { "f", ROW_TYPE_TEXT, true },
                { "g", ROW_TYPE_BOOL, true },  { "h", ROW_TYPE_BOOL, true },
                { "i", ROW_TYPE_INT4, false }, { "j", ROW_TYPE_TEXT, true },
        };
        const char *sql = "CREATE TABLE t2 (a bigint, b int8, c integer, d int4, e int, f text, "
                          "g boolean, h bool, i int NOT NULL, j text NULL)";
        struct sql_stmt *s = analyze(sql);

        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_CREATE_TABLE);
        CU_ASSERT_STRING_EQUAL(s->create_table.name, "t2");
        CU_ASSERT_STRING_EQUAL(s->sql, sql);
        CU_ASSERT_STRING_EQUAL(sql_stmt_tag(s), "CREATE TABLE");
        CU_ASSERT_FALSE(s->create_table.exists);
        CU_ASSERT_EQUAL(s->n_inputs, 0);
        CU_ASSERT_EQUAL_FATAL(s->create_table.n_columns, ELEMENTSOF(want));
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                CU_ASSERT_STRING_EQUAL(s->create_table.columns[i].name, want[i].name);
                CU_ASSERT_EQUAL(s->create_table.columns[i].type, want[i].type);
                CU_ASSERT_EQUAL(s->create_table.columns[i].nullable, want[i].nullable);
        }
        sql_stmt_free(s);

        s = analyze("CREATE TABLE public.t3 ()");
        CU_ASSERT_STRING_EQUAL(s->create_table.name, "t3");
        CU_ASSERT_EQUAL(s->create_table.n_columns, 0);
        sql_stmt_free(s);

        s = analyze("CREATE TABLE IF NOT EXISTS t (a int)");
        CU_ASSERT_TRUE(s->create_table.exists);
        CU_ASSERT_EQUAL_FATAL(s->n_notices, 1);
        CU_ASSERT_STRING_EQUAL(s->notices[0].sqlstate, "42P07");
        CU_ASSERT_STRING_EQUAL(s->notices[0].message, "relation \"t\" already exists, skipping");
        sql_stmt_free(s);

        expect_error("CREATE TABLE t (a int)", "42P07", "relation \"t\" already exists", 14);
        expect_error("CREATE TABLE n (a int, b text, a bool)", "42701",
                     "column \"a\" specified more than once", 32);
        /* varchar(n): text with a length; plain varchar is text. */
        s = analyze("CREATE TABLE n (a varchar(10), b character varying, c pg_catalog.varchar(1))");
        CU_ASSERT_EQUAL_FATAL(s->create_table.n_columns, 3);
        CU_ASSERT_EQUAL(s->create_table.columns[0].type, ROW_TYPE_TEXT);
        CU_ASSERT_EQUAL(s->create_table.columns[0].max_chars, 10);
        CU_ASSERT_EQUAL(s->create_table.columns[1].max_chars, 0);
        CU_ASSERT_EQUAL(s->create_table.columns[2].max_chars, 1);
        sql_stmt_free(s);
        expect_error("CREATE TABLE n (a varchar(0))", "22023", "length for type varchar must be at least 1", 19);
        expect_error("CREATE TABLE n (a varchar(10485761))", "22023", NULL, -1);
        expect_error("CREATE TABLE n (a varchar(2) DEFAULT 'abc')", "22001",
                     "value too long for type character varying(2)", -1);
        /* character(n): bpchar with n; char and character are character(1). */
        s = analyze("CREATE TABLE n (a char(4), b character(2), c char, d character, e bpchar(3))");
        CU_ASSERT_EQUAL_FATAL(s->create_table.n_columns, 5);
        for (size_t i = 0; i < 5; i++) {
                static const uint32_t n[] = { 4, 2, 1, 1, 3 };

                CU_ASSERT_EQUAL(s->create_table.columns[i].type, ROW_TYPE_BPCHAR);
                CU_ASSERT_EQUAL(s->create_table.columns[i].max_chars, n[i]);
        }
        sql_stmt_free(s);
        expect_error("CREATE TABLE n (a char(0))", "22023", "length for type char must be at least 1", 19);
        expect_error("CREATE TABLE n (a char(10485761))", "22023",
                     "length for type char cannot exceed 10485760", 19);
        expect_error("CREATE TABLE n (a bpchar)", "0A000", "type bpchar without a length is not supported", 19);
        expect_error("CREATE TABLE n (a char(2)[])", "0A000", "arrays of character(n) are not supported", 19);
        expect_error("CREATE TABLE n (a char(2) DEFAULT 'abc')", "22001",
                     "value too long for type character(2)", -1);
        /* Padded by casts; compared, concatenated and measured as text, which drops
         * trailing spaces; LIKE sees the padding (PostgreSQL's bpcharlike()). */
        expect_select_plan("SELECT 'ab'::char(4), 'abcdef'::char(3), 'a'::char(3) = 'a  '::char(5), "
                           "'a '::char(3) = 'a'::text, 'a'::char(3) = 'a '::text, 'a'::char(3) = 'a ', "
                           "length('a '::char(3)), 'a'::char(3) || 'b', 'ab'::char(4) LIKE 'ab', "
                           "'ab'::char(4) LIKE 'ab  ', 'a'::char(3) IN ('a ', 'b'), 'a'::char(3) IN ('a '::text) "
                           "FROM t",
                           "Project[4,5,6,7,8,9,10,11,12,13,14,15](Map['ab  ', 'abc', true, true, false, "
                           "true, 1, 'ab', false, true, true, false](Get 10))");
        expect_select_plan("SELECT b::char(3) = b, b::char(3) LIKE 'a%', upper(b::char(2)) FROM t",
                           "Project[4,5,6](Map[(CAST(BPCHAR(#1, 3, true) AS text) = #1), "
                           "(BPCHAR(#1, 3, true) LIKE 'a%'), upper(CAST(BPCHAR(#1, 2, true) AS text))](Get 10))");
        /* ORDER BY sorts by the text (a hidden column). */
        expect_select_plan("SELECT b::char(3) AS c FROM t ORDER BY c",
                           "Project[4,5](Map[BPCHAR(#1, 3, true), CAST(BPCHAR(#1, 3, true) AS text)](Get 10))");
        /* What would mix paddings in one column, or order by bytes, is refused. */
        expect_error("SELECT max(b::char(2)) FROM t", "0A000",
                     "character(n) values in max are not supported", 8);
        expect_error("SELECT COALESCE(b::char(2), 'x') FROM t", "0A000",
                     "character(n) values in COALESCE are not supported", -1);
        expect_error("SELECT CASE WHEN c THEN b::char(2) ELSE b::char(3) END FROM t", "0A000",
                     "character(n) values in CASE are not supported", -1);
        expect_error("SELECT b::char(2) FROM t UNION SELECT b::char(3) FROM t", "0A000",
                     "character(n) values in UNION are not supported", -1);
        expect_error("SELECT ARRAY[b::char(2)] FROM t", "0A000",
                     "character(n) values in ARRAY[] are not supported", 8);
        expect_error("SELECT x FROM (VALUES ('a'::char(2)), ('b'::char(3))) v(x)", "0A000",
                     "character(n) values in VALUES are not supported", -1);
        expect_error("SELECT 'a'::char(3) IN ('a '::text, 'b')", "0A000",
                     "character(n) values in IN with text values are not supported", 8);
        expect_error("SELECT 'a'::bpchar", "0A000", "type bpchar without a length is not supported", 13);
        expect_error("SELECT 'a'::char(2) + 1", "42883", "operator does not exist: character + integer", -1);
        expect_error("SELECT 'a'::char(2) = 1", "42883", "operator does not exist: character = integer", -1);
        expect_select_plan("SELECT b::varchar(2) FROM t", "Project[4](Map[VARCHAR(#1, 2, true)](Get 10))");
        expect_error("CREATE TABLE n (a double precision)", "0A000",
                     "type \"double precision\" is not supported", -1);
        expect_error("CREATE TABLE n (a float8)", "0A000", "type \"double precision\" is not supported", -1);
        expect_error("CREATE TABLE n (a foo)", "42704", "type \"foo\" does not exist", 19);
        /* Arrays: int[], int[3][], _int4 are all int4[] (PostgreSQL enforces neither
         * sizes nor dimensions of a column's type). */
        s = analyze("CREATE TABLE n (a int[], b text[3][], c _int8, d boolean ARRAY, e varchar[])");
        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_CREATE_TABLE);
        CU_ASSERT_EQUAL_FATAL(s->create_table.n_columns, 5);
        CU_ASSERT_EQUAL(s->create_table.columns[0].type, ROW_TYPE_INT4_ARRAY);
        CU_ASSERT_EQUAL(s->create_table.columns[1].type, ROW_TYPE_TEXT_ARRAY);
        CU_ASSERT_EQUAL(s->create_table.columns[2].type, ROW_TYPE_INT8_ARRAY);
        CU_ASSERT_EQUAL(s->create_table.columns[3].type, ROW_TYPE_BOOL_ARRAY);
        CU_ASSERT_EQUAL(s->create_table.columns[4].type, ROW_TYPE_TEXT_ARRAY);
        sql_stmt_free(s);
        expect_error("CREATE TABLE n (a varchar(3)[])", "0A000", "arrays of varchar(n) are not supported", -1);
        expect_error("CREATE TABLE n (a numeric[])", "0A000", "arrays of numeric are not supported", -1);
        expect_error("CREATE TABLE n (a int[] DEFAULT '{1,x}')", "22P02", NULL, -1);
        /* Array expressions fold, and what they cannot mean is refused. */
        expect_select_plan("SELECT a = ANY('{1,2}') FROM t",
                           "Project[4](Map[ANY(#0, '{1,2}', 10)](Get 10))");
        expect_select_plan("SELECT a <> ALL(ARRAY[1, d]) FROM t",
                           "Project[4](Map[ALL(#0, ARRAY(1::int8, #3), 11)](Get 10))");
        expect_select_plan("SELECT ARRAY[1, NULL]::text, (ARRAY['x'])[1], "
                           "array_to_string('{a}'::text[], ',') FROM t",
                           "Project[4,5,6](Map['{1,NULL}', 'x', 'a'](Get 10))");
        expect_error("SELECT ARRAY[]", "42P18", "cannot determine type of empty array", 8);
        expect_select_plan("SELECT cardinality(ARRAY[]::int[]) FROM t", "Project[4](Map[0](Get 10))");
        expect_error("SELECT ARRAY[ARRAY[1]]", "0A000", "multidimensional arrays are not supported", -1);
        expect_error("SELECT ARRAY[1, 'x']", "22P02", NULL, -1);
        expect_error("SELECT ARRAY[1, true]", "42804", NULL, -1);
        expect_error("SELECT (ARRAY[1])[1:2]", "0A000", NULL, -1);
        expect_error("SELECT a[1] FROM t", "42804",
                     "cannot subscript type integer because it does not support subscripting", -1);
        expect_error("SELECT 1 = ANY(2)", "42809", "op ANY/ALL (array) requires array on right side", -1);
        expect_error("SELECT 'x'::text = ANY(ARRAY[1])", "42883", NULL, -1);
        expect_error("SELECT 1 + ANY(ARRAY[1])", "0A000", NULL, -1);
        expect_error("SELECT '{1,x}'::int[]", "22P02", "invalid input syntax for type integer: \"x\"", 8);
        expect_error("SELECT x FROM (VALUES (ARRAY[2]), (ARRAY[10])) AS v(x) ORDER BY x", "0A000",
                     "ORDER BY of an array is not supported", -1);
        /* min/max of arrays order element-wise in the engine (value_better()). */
        expect_select_plan("SELECT max(x) FROM (VALUES (ARRAY[2])) AS v(x)",
                           "Reduce[; max(#0)::int4[]](Constant[int4[]](1))");
        /* array_agg / string_agg: the engine's order is the argument ascending, so only
         * that ORDER BY is accepted; a delimiter must be a constant. */
        expect_select_plan("SELECT b, array_agg(a), string_agg(b, ', ' ORDER BY b), "
                           "array_agg(a ORDER BY a), string_agg(b, NULL), string_agg(b, ';') FROM t GROUP BY b",
                           "Project[0,1,2,1,3,4](Reduce[#1; array_agg(#0)::int4[] "
                           "string_agg(#1, ', ')::text string_agg(#1, '')::text "
                           "string_agg(#1, ';')::text](Get 10))");
        expect_select_plan("SELECT ARRAY(SELECT a FROM t ORDER BY 1)",
                           "Project[1](Map[COALESCE(#0, '{}')](Join[](Constant(1), "
                           "Reduce[; array_agg(#0)::int4[]](Project[0](Get 10)))))");
        /* Correlated: each outer key's array, NULL-padded (attach_total()), then '{}'. */
        expect_select_plan("SELECT ARRAY(SELECT x FROM u WHERE u.x = t.a ORDER BY x) FROM t",
                           "Project[5](Map[COALESCE(#4, '{}')](Project[0,1,2,3,5](Join[0=0](Get 10, "
                           "Reduce[#0; max(#1)::int8[]](Union(Map[NULL::int8[]](Project[0](Get 10)), "
                           "Project[0,2](Join[0=0](Project[0](Get 10), Reduce[#0; "
                           "array_agg(#1)::int8[]](Project[0,0](Get 11))))))))))");
        expect_error("SELECT array_agg(a ORDER BY a DESC) FROM t", "0A000",
                     "ORDER BY in array_agg() other than its argument ascending is not supported", 8);
        expect_error("SELECT array_agg(a ORDER BY b) FROM t", "0A000", NULL, 8);
        expect_error("SELECT string_agg(b, b) FROM t", "0A000",
                     "string_agg() with a delimiter that is not a constant is not supported", 8);
        expect_error("SELECT string_agg(a, ',') FROM t", "42883",
                     "function string_agg(integer, unknown) does not exist", 8);
        expect_error("SELECT string_agg(b) FROM t", "42883", NULL, 8);
        expect_error("SELECT array_agg(ARRAY[a]) FROM t", "0A000",
                     "array_agg() of arrays (multidimensional arrays) is not supported", 8);
        expect_error("SELECT ARRAY(SELECT a FROM t ORDER BY a DESC)", "0A000",
                     "ARRAY(subquery) ordered other than by its column ascending is not supported", 8);
        expect_error("SELECT ARRAY(SELECT a, b FROM t)", "42601",
                     "subquery must return only one column", 8);
        expect_error("SELECT ARRAY(SELECT ARRAY[a] FROM t)", "0A000", NULL, 8);
        expect_error("SELECT ARRAY(SELECT count(*) FROM u WHERE u.x = t.a) FROM t", "0A000",
                     "a correlated ARRAY(subquery) with aggregates is not supported", 8);
        expect_error("CREATE TABLE n (a int4(5))", "42601", NULL, -1);
        /* Keys: PostgreSQL's names, a primary key's columns NOT NULL, one key per
         * column list (the primary key's or the given name wins). */
        s = analyze("CREATE TABLE n (a int PRIMARY KEY, b text UNIQUE, c int, UNIQUE (b, c), "
                    "UNIQUE (c, b), UNIQUE (a), CONSTRAINT bk UNIQUE (b), UNIQUE (b, c))");
        CU_ASSERT_EQUAL_FATAL(s->create_table.n_uniques, 4);
        CU_ASSERT_STRING_EQUAL(s->create_table.uniques[0].name, "n_pkey");
        CU_ASSERT(s->create_table.uniques[0].primary);
        CU_ASSERT_STRING_EQUAL(s->create_table.uniques[1].name, "bk");
        CU_ASSERT_STRING_EQUAL(s->create_table.uniques[2].name, "n_b_c_key");
        CU_ASSERT_EQUAL(s->create_table.uniques[2].n_columns, 2);
        CU_ASSERT_EQUAL(s->create_table.uniques[2].columns[1], 2);
        CU_ASSERT_STRING_EQUAL(s->create_table.uniques[3].name, "n_c_b_key");
        CU_ASSERT(!s->create_table.columns[0].nullable && s->create_table.columns[1].nullable);
        sql_stmt_free(s);
        s = analyze("CREATE TABLE n (a int UNIQUE, b int, PRIMARY KEY (a), CONSTRAINT n_pkey1 CHECK (b > 0), "
                    "UNIQUE (b), CONSTRAINT n_b_key1 UNIQUE (b), UNIQUE (a, b), UNIQUE (a, b))");
        CU_ASSERT_EQUAL_FATAL(s->create_table.n_uniques, 3);
        CU_ASSERT_STRING_EQUAL(s->create_table.uniques[0].name, "n_pkey");
        CU_ASSERT(s->create_table.uniques[0].primary && !s->create_table.columns[0].nullable);
        CU_ASSERT_STRING_EQUAL(s->create_table.uniques[1].name, "n_b_key1");
        CU_ASSERT_STRING_EQUAL(s->create_table.uniques[2].name, "n_a_b_key");
        sql_stmt_free(s);
        expect_error("CREATE TABLE n (a int PRIMARY KEY, b int, PRIMARY KEY (b))", "42P16",
                     "multiple primary keys for table \"n\" are not allowed", -1);
        expect_error("CREATE TABLE n (a int, UNIQUE (a, b))", "42703",
                     "column \"b\" named in key does not exist", -1);
        expect_error("CREATE TABLE n (a int, PRIMARY KEY (a, a))", "42701",
                     "column \"a\" appears twice in primary key constraint", -1);
        expect_error("CREATE TABLE n (a int CONSTRAINT k UNIQUE, b int CONSTRAINT k UNIQUE)", "42710",
                     "constraint \"k\" for relation \"n\" already exists", -1);
        expect_error("CREATE TABLE n (a int UNIQUE DEFERRABLE)", "0A000", NULL, -1);
        expect_error("CREATE TABLE n (a int, UNIQUE (a) DEFERRABLE INITIALLY DEFERRED)", "0A000", NULL, -1);
        expect_error("CREATE TABLE n (a int, UNIQUE NULLS NOT DISTINCT (a))", "0A000", NULL, -1);
        expect_error("CREATE TABLE n (a int, UNIQUE (a) INCLUDE (a))", "0A000", NULL, -1);
        /* Foreign keys: PostgreSQL's names and errors; what Coord cannot enforce exactly
         * is refused with 0A000. */
        objects[ELEMENTSOF(objects) - 1].hidden = false;
        s = analyze("CREATE TABLE n (a int REFERENCES pk, b text, c bigint, d int, "
                    "n_a_fkey int CHECK (d > 0), FOREIGN KEY (c, b) REFERENCES pk (q, u), "
                    "CONSTRAINT named FOREIGN KEY (d) REFERENCES pk (id) ON DELETE RESTRICT, "
                    "FOREIGN KEY (a) REFERENCES pk MATCH SIMPLE ON UPDATE NO ACTION)");
        CU_ASSERT_EQUAL_FATAL(s->create_table.n_fkeys, 4);
        CU_ASSERT_STRING_EQUAL(s->create_table.fkeys[0].name, "n_a_fkey");
        CU_ASSERT_EQUAL(s->create_table.fkeys[0].ref_id, 22);
        CU_ASSERT_EQUAL(s->create_table.fkeys[0].columns[0], 0);
        CU_ASSERT_EQUAL(s->create_table.fkeys[0].ref_columns[0], 0);
        /* the referenced columns as written: a key of pk as a set, paired in order */
        CU_ASSERT_STRING_EQUAL(s->create_table.fkeys[1].name, "n_c_b_fkey");
        CU_ASSERT_EQUAL(s->create_table.fkeys[1].n_columns, 2);
        CU_ASSERT_EQUAL(s->create_table.fkeys[1].columns[0], 2);
        CU_ASSERT_EQUAL(s->create_table.fkeys[1].ref_columns[0], 3);
        CU_ASSERT_EQUAL(s->create_table.fkeys[1].ref_columns[1], 1);
        CU_ASSERT_STRING_EQUAL(s->create_table.fkeys[2].name, "named");
        CU_ASSERT_STRING_EQUAL(s->create_table.fkeys[3].name, "n_a_fkey1");
        CU_ASSERT_STRING_EQUAL(s->create_table.checks[0].name, "n_d_check");
        sql_stmt_free(s);
        /* varchar(n) and text have the same bytes */
        s = analyze("CREATE TABLE n (id int REFERENCES pk (id) NOT DEFERRABLE, u varchar(5), q bigint, "
                    "FOREIGN KEY (u, q) REFERENCES pk (u, q))");
        CU_ASSERT_EQUAL_FATAL(s->create_table.n_fkeys, 2);
        CU_ASSERT_STRING_EQUAL(s->create_table.fkeys[1].name, "n_u_q_fkey");
        sql_stmt_free(s);
        expect_error("CREATE TABLE n (m numeric(10, 2) REFERENCES pk (n))", "42830", NULL, -1);
        expect_error("CREATE TABLE n (a int REFERENCES nosuch)", "42P01",
                     "relation \"nosuch\" does not exist", -1);
        expect_error("CREATE TABLE n (a int REFERENCES v)", "42809",
                     "referenced relation \"v\" is not a table", -1);
        expect_error("CREATE TABLE n (a int REFERENCES pk (nosuch))", "42703",
                     "column \"nosuch\" referenced in foreign key constraint does not exist", -1);
        expect_error("CREATE TABLE n (a int, FOREIGN KEY (z) REFERENCES pk)", "42703",
                     "column \"z\" referenced in foreign key constraint does not exist", -1);
        expect_error("CREATE TABLE n (a text REFERENCES pk (u))", "42830",
                     "there is no unique constraint matching given keys for referenced table \"pk\"", -1);
        expect_error("CREATE TABLE n (a int, b int, FOREIGN KEY (a, b) REFERENCES pk)", "42830",
                     "number of referencing and referenced columns for foreign key disagree", -1);
        expect_error("CREATE TABLE n (a int REFERENCES t)", "42704",
                     "there is no primary key for referenced table \"t\"", -1);
        expect_error("CREATE TABLE n (a text REFERENCES pk)", "42804",
                     "foreign key constraint \"n_a_fkey\" cannot be implemented", -1);
        expect_error("CREATE TABLE n (a bigint REFERENCES pk)", "0A000", NULL, -1);
        expect_error("CREATE TABLE n (a int REFERENCES pk ON DELETE CASCADE)", "0A000", NULL, -1);
        expect_error("CREATE TABLE n (a int REFERENCES pk ON UPDATE SET NULL)", "0A000", NULL, -1);
        expect_error("CREATE TABLE n (a int REFERENCES pk ON DELETE SET DEFAULT)", "0A000", NULL, -1);
        expect_error("CREATE TABLE n (a int REFERENCES pk MATCH FULL)", "0A000", NULL, -1);
        expect_error("CREATE TABLE n (a int REFERENCES pk DEFERRABLE)", "0A000", NULL, -1);
        expect_error("CREATE TABLE n (a int, FOREIGN KEY (a) REFERENCES pk INITIALLY DEFERRED)",
                     "0A000", NULL, -1);
        expect_error("CREATE TABLE n (a int, FOREIGN KEY (a) REFERENCES pk NOT VALID)", "0A000", NULL, -1);
        expect_error("CREATE TABLE n (a int PRIMARY KEY, b int REFERENCES n)", "0A000",
                     "a foreign key that references its own table is not supported", -1);
        expect_error("CREATE TABLE n (a int CONSTRAINT k UNIQUE, b int CONSTRAINT k REFERENCES pk)",
                     "42710", "constraint \"k\" for relation \"n\" already exists", -1);
        objects[ELEMENTSOF(objects) - 1].hidden = true;
        /* DEFAULT: a constant, folded and encoded with the column */
        s = analyze("CREATE TABLE n (a int DEFAULT 1 + 1, b text DEFAULT 'q', c int)");
        CU_ASSERT_PTR_NOT_NULL_FATAL(s->create_table.columns[0].default_row);
        {
                struct row_datum d;
                CU_ASSERT_EQUAL(row_decode(s->create_table.columns[0].default_row,
                                           s->create_table.columns[0].default_len, &d, 1), 1);
                CU_ASSERT(d.kind == ROW_KIND_INT && d.i == 2);
        }
        CU_ASSERT_PTR_NOT_NULL(s->create_table.columns[1].default_row);
        CU_ASSERT_PTR_NULL(s->create_table.columns[2].default_row);
        sql_stmt_free(s);
        expect_error("CREATE TABLE n (a int DEFAULT mz_now())", "0A000", NULL, -1);
        expect_error("CREATE TABLE n (a int DEFAULT 1/0)", "0A000", NULL, -1);
        expect_error("CREATE TABLE n (a int DEFAULT a)", "42703", NULL, -1);
        expect_error("CREATE TABLE n (a int DEFAULT 1 DEFAULT 2)", "42601", NULL, -1);
        expect_error("CREATE TABLE n (a int NULL NOT NULL)", "42601", NULL, -1);
        expect_error("CREATE TEMP TABLE n (a int)", "0A000", NULL, -1);
        expect_error("CREATE TABLE other.n (a int)", "3F000", "schema \"other\" does not exist", -1);
}

static void test_drop(void)
{
        struct sql_stmt *s = analyze("DROP TABLE t, public.u");

        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_DROP);
        CU_ASSERT_STRING_EQUAL(sql_stmt_tag(s), "DROP TABLE");
        CU_ASSERT_EQUAL(s->drop.kind, SQL_OBJECT_TABLE);
        CU_ASSERT_EQUAL_FATAL(s->drop.n_objects, 2);
        CU_ASSERT_STRING_EQUAL(s->drop.names[0], "t");
        CU_ASSERT_STRING_EQUAL(s->drop.names[1], "u");
        CU_ASSERT(s->drop.ids[0] == 10 && s->drop.ids[1] == 11);
        CU_ASSERT_FALSE(s->drop.if_exists);
        CU_ASSERT_FALSE(s->drop.cascade);
        CU_ASSERT_EQUAL(s->n_notices, 0);
        sql_stmt_free(s);

        s = analyze("DROP TABLE IF EXISTS zz, t CASCADE");
        CU_ASSERT_TRUE(s->drop.if_exists);
        CU_ASSERT_TRUE(s->drop.cascade);
        CU_ASSERT(s->drop.ids[0] == 0 && s->drop.ids[1] == 10);
        CU_ASSERT_EQUAL_FATAL(s->n_notices, 1);
        CU_ASSERT_STRING_EQUAL(s->notices[0].sqlstate, "00000");
        CU_ASSERT_STRING_EQUAL(s->notices[0].message, "table \"zz\" does not exist, skipping");
        sql_stmt_free(s);

        expect_error("DROP TABLE zz", "42P01", "table \"zz\" does not exist", -1);
        expect_error("DROP TABLE t, zz", "42P01", "table \"zz\" does not exist", -1);
        expect_error("DROP TABLE v", "42809", "\"v\" is not a table", -1);
        expect_error("DROP TABLE IF EXISTS mv", "42809", NULL, -1);
        expect_error("DROP VIEW t", "42809", "\"t\" is not a view", -1);
        expect_error("DROP TABLE other.t", "3F000", NULL, -1);
}

/* ---- INSERT. ---- */

static void test_insert(void)
{
        struct sql_params p1 = { 2, (const char *const[]){ "5", NULL }, NULL };
        struct sql_params p2 = { 1, (const char *const[]){ "x" }, (const uint32_t[]){ 25 } };
        struct sql_params p3 = { 1, (const char *const[]){ "7" }, (const uint32_t[]){ 20 } };
        struct sql_params p4 = { 1, (const char *const[]){ "\xff" }, NULL };
        struct sql_stmt *s;

        expect_insert("INSERT INTO t VALUES (1, 'x', true, 5), "
                      "(-2, NULL, false, -9223372036854775808)",
                      "(1,'x',t,5) (-2,NULL,f,-9223372036854775808)");
        expect_insert("INSERT INTO t (d, a) VALUES (7, 1)", "(1,NULL,NULL,7)");
        expect_insert("INSERT INTO t VALUES (1)", "(1,NULL,NULL,NULL)");
        expect_insert("INSERT INTO t VALUES (1, DEFAULT, DEFAULT, 2)", "(1,NULL,NULL,2)");
        /* Untyped literals take the column's type; ints and bools go into text. */
        expect_insert("INSERT INTO t VALUES ('5', 42, 'yes', ' 123 ')", "(5,'42',t,123)");
        expect_insert("INSERT INTO t (a, b) VALUES (1, true)", "(1,'true',NULL,NULL)");
        /* Constant expressions fold. */
        expect_insert("INSERT INTO t VALUES (1 + 2 * 3, 'a', NOT false, 2147483647::int8 + 1)",
                      "(7,'a',t,2147483648)");
        expect_insert("INSERT INTO t VALUES (-(3), '1'::int8::text, 1 < 2 AND NULL IS NULL, "
                      "CAST('9' AS bigint) % 4)",
                      "(-3,'1',t,1)");
        expect_insert("INSERT INTO t (a, d) VALUES (-2147483648, 3000000000)",
                      "(-2147483648,NULL,NULL,3000000000)");
        expect_insert("INSERT INTO t (a, c) VALUES (1, NULL::boolean)", "(1,NULL,NULL,NULL)");
        s = analyze("INSERT INTO u DEFAULT VALUES");
        expect_rows(s, "(NULL)");
        CU_ASSERT_STRING_EQUAL(sql_stmt_tag(s), "INSERT");
        sql_stmt_free(s);

        /* Parameters of the extended protocol. */
        s = analyze_params("INSERT INTO t (a, b) VALUES ($1, $2)", &p1);
        expect_rows(s, "(5,NULL,NULL,NULL)");
        sql_stmt_free(s);
        s = analyze_params("INSERT INTO t (a, d) VALUES (1, $1)", &p3);
        expect_rows(s, "(1,NULL,NULL,7)");
        sql_stmt_free(s);
        expect_error_params("INSERT INTO t (a) VALUES ($1)", &p2, "42804", NULL, 27);
        expect_error_params("INSERT INTO t (a) VALUES ($3)", &p1, "42P02",
                            "there is no parameter $3", 27);
        expect_error("INSERT INTO t (a) VALUES ($1)", "42P02", NULL, 27);
        expect_error_params("INSERT INTO t (a, b) VALUES (1, $1)", &p4, "22021", NULL, 33);

        expect_error("INSERT INTO t VALUES (1, 'x', true, 5, 6)", "42601",
                     "INSERT has more expressions than target columns", 40);
        expect_error("INSERT INTO t (a, b) VALUES (1)", "42601",
                     "INSERT has more target columns than expressions", 19);
        expect_error("INSERT INTO t (b) VALUES ('x')", "23502",
                     "null value in column \"a\" of relation \"t\" violates not-null constraint",
                     -1);
        expect_error("INSERT INTO t VALUES (NULL)", "23502", NULL, -1);
        expect_error("INSERT INTO t (a) VALUES ('abc')", "22P02",
                     "invalid input syntax for type integer: \"abc\"", 27);
        expect_error("INSERT INTO t (a) VALUES (true)", "42804",
                     "column \"a\" is of type integer but expression is of type boolean", 27);
        expect_error("INSERT INTO t (c) VALUES (1)", "42804", NULL, 27);
        expect_error("INSERT INTO t (a) VALUES (3000000000)", "22003", "integer out of range", -1);
        expect_error("INSERT INTO t (a) VALUES (2147483647 + 1)", "22003", "integer out of range",
                     -1);
        expect_error("INSERT INTO t (a) VALUES (1/0)", "22012", "division by zero", -1);
        expect_error("INSERT INTO t (c) VALUES (1.5)", "42804", NULL, 27);
        expect_error("INSERT INTO t (zz) VALUES (1)", "42703",
                     "column \"zz\" of relation \"t\" does not exist", 16);
        expect_error("INSERT INTO t (a, a) VALUES (1, 2)", "42701", NULL, 19);
        expect_error("INSERT INTO zz VALUES (1)", "42P01", "relation \"zz\" does not exist", 13);
        expect_error("INSERT INTO v VALUES (1)", "42809", "cannot insert into view \"v\"", 13);
        expect_error("INSERT INTO t (a) VALUES (mz_now())", "0A000", NULL, 27);
        expect_error("INSERT INTO t (a) VALUES (a)", "42703", "column \"a\" does not exist", 27);
        /* INSERT ... SELECT: a plan of the table's row, over one table or constants. */
        s = analyze("INSERT INTO t (d, a) SELECT a + 1, a FROM t WHERE c");
        CU_ASSERT_FATAL(s != NULL);
        CU_ASSERT(s->insert.plan && s->insert.n_rows == 0 && s->insert.id == 10);
        CU_ASSERT(s->n_physical_inputs == 1 && s->physical_inputs[0] == 10);
        sql_stmt_free(s);
        s = analyze("INSERT INTO t SELECT 1");
        CU_ASSERT(s && s->insert.plan);
        sql_stmt_free(s);
        s = analyze("INSERT INTO t SELECT count(*) FROM t, u");
        CU_ASSERT(s && s->insert.plan && s->n_physical_inputs == 2);
        sql_stmt_free(s);
        /* Subqueries in VALUES make it an INSERT ... SELECT, each row's attached to it. */
        s = analyze("INSERT INTO t (a, d) VALUES ((SELECT count(*) FROM u)::int, 1), (2, (SELECT max(x) FROM u))");
        CU_ASSERT_FATAL(s != NULL);
        CU_ASSERT(s->insert.plan && s->insert.n_rows == 0 && s->n_physical_inputs == 1);
        sql_stmt_free(s);
        expect_select_plan("SELECT * FROM (VALUES ((SELECT max(x) FROM u), 1)) v",
                           "Project[3,4](Map[#2, 1](Map[CASE((#0 > 1::int8), TOO_MANY_ROWS(), #1)](Join[](Constant(1), "
                           "Reduce[; count(*)::int8 max(#0)::int8](Reduce[; max(#0)::int8](Get 11))))))");
        expect_error("INSERT INTO t (a) VALUES ((SELECT a FROM mv))", "0A000", NULL, -1);
        expect_error("INSERT INTO t SELECT a FROM t LIMIT 1", "0A000", NULL, -1);
        expect_error("INSERT INTO t SELECT a FROM mv", "0A000", NULL, 29);
        expect_error("INSERT INTO t SELECT 1, 'x', true, 1, 2", "42601",
                     "INSERT has more expressions than target columns", -1);
        expect_error("INSERT INTO t (a, b) SELECT 1", "42601",
                     "INSERT has more target columns than expressions", 19);
        expect_error("INSERT INTO t (c) SELECT a FROM t", "42804", NULL, 26);
        {
                /* RETURNING: a Peek over a Constant of the rows inserted. */
                struct sql_stmt *r = analyze("INSERT INTO t (a) VALUES (1) RETURNING a, a + 1 AS b");

                CU_ASSERT_PTR_NOT_NULL_FATAL(r->insert.returning);
                CU_ASSERT_EQUAL(r->insert.returning->n_columns, 2);
                CU_ASSERT_STRING_EQUAL(r->insert.returning->columns[1]->name, "b");
                CU_ASSERT_EQUAL(r->n_inputs, 0);
                sql_stmt_free(r);
        }
        {
                /* INSERT ... SELECT ... RETURNING: its values after the row (returning). */
                struct sql_stmt *r = analyze("INSERT INTO t (a) SELECT 1 RETURNING a, a + 1 AS b");

                CU_ASSERT_PTR_NOT_NULL_FATAL(r->insert.plan);
                CU_ASSERT_PTR_NOT_NULL_FATAL(r->insert.select_returning);
                CU_ASSERT_EQUAL(r->insert.select_returning->n_columns, 2);
                CU_ASSERT_STRING_EQUAL(r->insert.select_returning->columns[1]->name, "b");
                sql_stmt_free(r);
        }
        expect_error("INSERT INTO t (a) VALUES (1) RETURNING count(*)", "42803", NULL, -1);
        sql_stmt_free(analyze("INSERT INTO t (a) VALUES (1) ON CONFLICT DO NOTHING"));
        expect_error("INSERT INTO t (a) VALUES (1) ON CONFLICT (a) DO NOTHING", "42P10", NULL, -1);
        expect_error("INSERT INTO t (a) VALUES (1) ON CONFLICT (a) DO UPDATE SET b = 'x'", "42P10",
                     NULL, -1);
        /* ON CONFLICT DO UPDATE (adapter-sql-upsert.c): an UPDATE plan beside the rows. */
        objects[ELEMENTSOF(objects) - 1].hidden = false;        /* pk */
        {
                struct sql_stmt *r = analyze("INSERT INTO pk VALUES (1, 'x', 1.5, 2), (2, NULL, 0, 3) "
                                             "ON CONFLICT (id) DO UPDATE SET u = excluded.u || pk.u");

                CU_ASSERT_PTR_NOT_NULL(r->insert.upsert);
                CU_ASSERT(r->insert.on_conflict_skip && r->insert.n_rows == 2);
                CU_ASSERT(r->insert.conflict_key && strcmp(r->insert.conflict_key, "pk_pkey") == 0);
                CU_ASSERT(r->n_inputs == 1 && r->inputs[0] == 22);
                sql_stmt_free(r);
        }
        expect_error("INSERT INTO pk VALUES (1) ON CONFLICT DO UPDATE SET u = 'x'", "42601",
                     "ON CONFLICT DO UPDATE requires inference specification or constraint name", -1);
        expect_error("INSERT INTO pk VALUES (1), (1) ON CONFLICT (id) DO UPDATE SET u = 'x'", "21000",
                     "ON CONFLICT DO UPDATE command cannot affect row a second time", -1);
        expect_error("INSERT INTO pk VALUES (1) ON CONFLICT (id) DO UPDATE SET u = u", "42702", NULL, -1);
        expect_error("INSERT INTO pk VALUES (1) ON CONFLICT (id) DO UPDATE SET id = 2", "0A000", NULL, -1);
        expect_error("INSERT INTO pk VALUES (1) ON CONFLICT (id) DO UPDATE SET u = 'x' RETURNING id",
                     "0A000", NULL, -1);
        expect_error("INSERT INTO pk SELECT 1 ON CONFLICT (id) DO UPDATE SET u = 'x'", "0A000", NULL, -1);
        objects[ELEMENTSOF(objects) - 1].hidden = true;
        expect_error("INSERT INTO t (a) SELECT 1 ON CONFLICT DO NOTHING", "0A000", NULL, -1);
        expect_error("INSERT INTO t (a) VALUES ((SELECT a FROM mv))", "0A000",
                     "INSERT ... VALUES with a subquery reading a materialized view is not "
                     "supported: it may read tables and views over tables", -1);
}

static void test_insert_not_null_detail(void)
{
        struct row_error err = { 0 };
        struct sql_stmt *s = NULL;

        CU_ASSERT_EQUAL(sql_analyze_one("INSERT INTO t (b, d) VALUES ('x', 4)", &catalog,
                                        objects, NULL, &s, &err),
                        -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "23502");
        CU_ASSERT_STRING_EQUAL(err.detail, "Failing row contains (null, x, null, 4).");
}

/* ---- Queries. ---- */

/* Output column names as PostgreSQL 15 names them (FigureColname), each checked
 * against psql on PostgreSQL 15. */
static void test_column_names(void)
{
        static const struct {
                const char *sql, *name;
        } cases[] = {
                { "SELECT '5'::int::text", "text" },
                { "SELECT '5'::text::int", "int4" },
                { "SELECT a::text FROM t", "a" },
                { "SELECT a::text::int FROM t", "a" },
                { "SELECT (CASE WHEN true THEN 1 END)::text", "text" },
                { "SELECT CASE WHEN c THEN 1 ELSE a END FROM t", "a" },
                { "SELECT CASE WHEN c THEN 1 END FROM t", "case" },
                { "SELECT coalesce(a, 2)::text FROM t", "coalesce" },
                { "SELECT nullif(1, 2)::bigint", "nullif" },
                { "SELECT (SELECT 1 AS x)", "x" },
                { "SELECT (SELECT b FROM t WHERE a = 1)", "b" },
                { "SELECT (SELECT 1)", "?column?" },
                { "SELECT EXISTS (SELECT 1 FROM t)", "exists" },
                { "SELECT true", "?column?" },
                { "SELECT true::text", "text" },
                { "SELECT -a FROM t", "?column?" },
                { "SELECT length(b)::int8 FROM t", "length" },
                { "SELECT greatest(1, 2)", "greatest" },
                { "SELECT least(a, 2)::text FROM t", "least" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct sql_stmt *s = analyze(cases[i].sql);

                CU_ASSERT_PTR_NOT_NULL_FATAL(s);
                CU_ASSERT_FATAL(s->kind == SQL_STMT_SELECT && s->select.peek->n_columns >= 1);
                if (strcmp(s->select.peek->columns[0]->name, cases[i].name) != 0)
                        fprintf(stderr, "\n    %s: named %s, want %s", cases[i].sql,
                                s->select.peek->columns[0]->name, cases[i].name);
                CU_ASSERT_STRING_EQUAL(s->select.peek->columns[0]->name, cases[i].name);
                sql_stmt_free(s);
        }
}

static void test_select(void)
{
        static const struct {
                const char *name;
                enum row_type type;
        } want[] = {
                { "b", ROW_TYPE_TEXT },   { "next", ROW_TYPE_INT4 }, { "mz_now", ROW_TYPE_INT8 },
                { "int8", ROW_TYPE_INT8 }, { "?column?", ROW_TYPE_INT4 },
                { "?column?", ROW_TYPE_BOOL }, { "?column?", ROW_TYPE_TEXT }, { "d", ROW_TYPE_INT8 },
        };
        struct sql_stmt *s;

        s = analyze("SELECT b, a + 1 AS next, mz_now(), '1'::int8, 1, true, NULL, x.d "
                    "FROM t x WHERE a > 1 AND c");
        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_SELECT);
        CU_ASSERT_STRING_EQUAL(sql_stmt_tag(s), "SELECT");
        CU_ASSERT(s->n_inputs == 1 && s->inputs[0] == 10);
        CU_ASSERT_FALSE(s->select.has_as_of);
        CU_ASSERT_EQUAL(s->select.peek->timestamp, 0);
        CU_ASSERT_EQUAL_FATAL(s->select.peek->n_columns, ELEMENTSOF(want));
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                CU_ASSERT_STRING_EQUAL(s->select.peek->columns[i]->name, want[i].name);
                CU_ASSERT_EQUAL(s->select.peek->columns[i]->type, (int)want[i].type);
        }
        CU_ASSERT_TRUE(s->select.peek->columns[0]->nullable);
        expect_plan(s->select.peek->plan,
                    "Project[1,4,5,6,7,8,9,3](Map[(#0 + 1), mz_now(), 1::int8, 1, true, "
                    "NULL::text](Filter[((#0 > 1) AND #2)](Get 10)))");
        sql_stmt_free(s);

        s = analyze("SELECT * FROM t");
        expect_plan(s->select.peek->plan, "Get 10");
        CU_ASSERT_EQUAL_FATAL(s->select.peek->n_columns, 4);
        CU_ASSERT_STRING_EQUAL(s->select.peek->columns[3]->name, "d");
        CU_ASSERT_EQUAL(s->select.peek->columns[3]->type, ROW_TYPE_INT8);
        CU_ASSERT_FALSE(s->select.peek->columns[0]->nullable);
        sql_stmt_free(s);

        expect_select_plan("SELECT t.*, a FROM t", "Project[0,1,2,3,0](Get 10)");
        expect_select_plan("SELECT d, a FROM public.t", "Project[3,0](Get 10)");
        expect_select_plan("SELECT 1", "Map[1](Constant(1))");
        expect_select_plan("SELECT mz_now() - 1000", "Map[(mz_now() - 1000::int8)](Constant(1))");
        expect_select_plan("SELECT FROM t", "Project[](Get 10)");
        expect_select_plan("SELECT a FROM mv", "Get 13");
        /* Constant WHERE clauses fold; TRUE disappears, the rest stays a Filter. */
        expect_select_plan("SELECT * FROM t WHERE 1 = 1", "Get 10");
        expect_select_plan("SELECT * FROM t WHERE false", "Constant[int4,text,bool,int8](0)");
        expect_select_plan("SELECT * FROM t WHERE NULL", "Constant[int4,text,bool,int8](0)");
        /* Untyped literals take the other side's type; int4 meets int8 as int8. */
        expect_select_plan("SELECT * FROM t WHERE b = 'x'", "Filter[(#1 = 'x')](Get 10)");
        expect_select_plan("SELECT * FROM t WHERE a = '5'", "Filter[(#0 = 5)](Get 10)");
        expect_select_plan("SELECT * FROM t WHERE a < d", "Filter[(CAST(#0 AS int8) < #3)](Get 10)");
        expect_select_plan("SELECT * FROM t WHERE d = 1", "Filter[(#3 = 1::int8)](Get 10)");
        expect_select_plan("SELECT * FROM t WHERE c = 't'", "Filter[(#2 = true)](Get 10)");
        expect_select_plan("SELECT * FROM t WHERE b IS NULL OR NOT c OR d IS NOT NULL",
                           "Filter[((#1 IS NULL) OR NOT #2 OR (#3 IS NOT NULL))](Get 10)");
        expect_select_plan("SELECT -a, a % 3, a::text FROM t",
                           "Project[4,5,6](Map[-#0, (#0 % 3), CAST(#0 AS text)](Get 10))");
        expect_select_plan("SELECT 'a' = 'b', 1 + 2 * 3, 'x'::text",
                           "Map[false, 7, 'x'](Constant(1))");
}

/* numeric (row.h "Numeric"): type names and modifiers, literals, promotion of integers,
 * assignment to numeric(p, s), avg as sum / count, keys. */
static void test_numeric(void)
{
        struct sql_stmt *s;

        s = analyze("CREATE TABLE n (a numeric, b numeric(10,2), c decimal(5), d NUMERIC(38, 38))");
        CU_ASSERT_EQUAL_FATAL(s->create_table.n_columns, 4);
        CU_ASSERT_EQUAL(s->create_table.columns[0].type, ROW_TYPE_NUMERIC);
        CU_ASSERT_EQUAL(s->create_table.columns[0].max_chars, 0);
        CU_ASSERT_EQUAL(s->create_table.columns[1].max_chars, SQL_NUMERIC_TYPMOD(10, 2));
        CU_ASSERT_EQUAL(s->create_table.columns[2].max_chars, SQL_NUMERIC_TYPMOD(5, 0));
        CU_ASSERT_EQUAL(s->create_table.columns[3].max_chars, SQL_NUMERIC_TYPMOD(38, 38));
        sql_stmt_free(s);
        expect_error("CREATE TABLE n (a numeric(0))", "22023",
                     "NUMERIC precision 0 must be between 1 and 38", 19);
        expect_error("CREATE TABLE n (a numeric(39))", "22023", NULL, 19);
        expect_error("CREATE TABLE n (a numeric(5,6))", "0A000", NULL, 19);
        expect_error("CREATE TABLE n (a numeric(5,-1))", "0A000", NULL, 19);
        expect_error("CREATE TABLE n (a numeric(1,2,3))", "22023", "invalid NUMERIC type modifier", 19);
        expect_error("CREATE TABLE n (a numeric PRIMARY KEY)", "0A000", NULL, -1);
        expect_error("CREATE TABLE n (a int, b numeric, UNIQUE (a, b))", "0A000", NULL, -1);
        sql_stmt_free(analyze("CREATE TABLE n (a numeric(10,2) PRIMARY KEY)"));
        expect_error("CREATE TABLE n (a numeric(5,2) DEFAULT 1000)", "22003", "numeric field overflow", -1);

        /* Literals: decimals are numeric, integers past int8 too. */
        expect_select_plan("SELECT 1.50, .5, 1e3, -2.5e-3, 99999999999999999999",
                           "Map[1.50::numeric, 0.5::numeric, 1000::numeric, -0.0025::numeric, "
                           "99999999999999999999::numeric](Constant(1))");
        /* Integers meet numeric as numeric; constants fold with the engine's arithmetic. */
        expect_select_plan("SELECT 1 + 1.5, 1.0 / 3, 10 / 4.0, 7 % 2.5, -1.5, 1.5 = 1.50",
                           "Map[2.5::numeric, 0.33333333333333333333::numeric, "
                           "2.5000000000000000::numeric, 2.0::numeric, -1.5::numeric, true]"
                           "(Constant(1))");
        expect_select_plan("SELECT n + a, m > 2 FROM nt, t",
                           "Project[6,7](Map[(#0 + CAST(#2 AS numeric)), (#1 > 2::numeric)]"
                           "(Join[](Get 21, Get 10)))");
        expect_select_plan("SELECT round(n), round(m, 1), trunc(n, -1), ceil(m), floor(n), abs(n) FROM nt",
                           "Project[2,3,4,5,6,7](Map[round(#0, 0), round(#1, 1), trunc(#0, -1), "
                           "ceil(#1), floor(#0), abs(#0)](Get 21))");
        expect_select_plan("SELECT '1.50'::numeric, 1::numeric(5,2), 2.5::int, 1.5::text",
                           "Map[1.50::numeric, 1.00::numeric, 3, '1.5'](Constant(1))");
        expect_error("SELECT 'x'::numeric", "22P02", "invalid input syntax for type numeric: \"x\"", 8);
        expect_error("SELECT 'NaN'::numeric", "0A000", NULL, 8);
        /* A constant that fails to fold fails at run time, if a row reaches it. */
        expect_select_plan("SELECT 1::numeric(2,2)", "Map[NUMERIC(1::numeric, 2, 2)](Constant(1))");
        expect_error("SELECT round(1)", "0A000", NULL, 8);
        expect_error("SELECT sum(b) FROM t", "42883", "function sum(text) does not exist", 8);
        expect_error("SELECT n + b FROM nt, t", "42883", "operator does not exist: numeric + text", 10);
        expect_error("SELECT 1.5::boolean", "42846", "cannot cast type numeric to boolean", 11);
        expect_error("SELECT array_agg(n) FROM nt", "0A000", "arrays of numeric are not supported", 8);
        expect_error("SELECT ARRAY[1.5, 2]", "0A000", "arrays of numeric are not supported", -1);
        /* Assignment: integers to numeric, numeric to integers, numeric(p, s) rounding. */
        s = analyze("INSERT INTO nt VALUES (1, 1.005), (2.50, -7)");
        expect_rows(s, "(1,1.01) (2.50,-7.00)");
        sql_stmt_free(s);
        expect_error("INSERT INTO nt (m) VALUES (123456789.5)", "22003", "numeric field overflow", -1);
        expect_error("INSERT INTO t (a) VALUES (2147483647.5)", "22003", "integer out of range", -1);
        /* Aggregates: sum of numeric is numeric; avg is sum / count in numeric. */
        expect_select_plan("SELECT sum(n), min(m), max(m) FROM nt",
                           "Reduce[; sum(#0)::numeric min(#1)::numeric max(#1)::numeric](Get 21)");
        expect_select_plan("SELECT avg(a) FROM t",
                           "Project[2](Map[(#0 / CAST(#1 AS numeric))]"
                           "(Reduce[; sum(#0)::numeric count(#0)::int8](Get 10)))");
        /* sum(int) stays bigint beside avg's numeric sum of the same column. */
        expect_select_plan("SELECT sum(d), avg(d) FROM t",
                           "Project[0,3](Map[(#1 / CAST(#2 AS numeric))]"
                           "(Reduce[; sum(#3)::int8 sum(#3)::numeric count(#3)::int8](Get 10)))");
        expect_select_plan("SELECT avg(n), sum(n) FROM nt",
                           "Project[2,0](Map[(#0 / CAST(#1 AS numeric))]"
                           "(Reduce[; sum(#0)::numeric count(#0)::int8](Get 21)))");
        /* DISTINCT of numeric rows groups by value: a Reduce without aggregates. */
        expect_select_plan("SELECT DISTINCT n FROM nt", "Reduce[#0;](Project[0](Get 21))");
}

static void test_select_errors(void)
{
        expect_error("SELECT * FROM zz", "42P01", "relation \"zz\" does not exist", 15);
        expect_error("SELECT q FROM t", "42703", "column \"q\" does not exist", 8);
        expect_error("SELECT t.q FROM t", "42703", "column t.q does not exist", 8);
        expect_error("SELECT x.a FROM t", "42P01", "missing FROM-clause entry for table \"x\"", 8);
        expect_error("SELECT x.* FROM t", "42P01", NULL, 8);
        expect_error("SELECT a FROM t WHERE a", "42804",
                     "argument of WHERE must be type boolean, not type integer", 23);
        expect_error("SELECT a FROM t WHERE a AND c", "42804",
                     "argument of AND must be type boolean, not type integer", 23);
        expect_error("SELECT NOT 1", "42804", "argument of NOT must be type boolean, not type integer",
                     12);
        expect_error("SELECT a + b FROM t", "42883", "operator does not exist: integer + text", 10);
        expect_error("SELECT c < 1 FROM t", "42883", "operator does not exist: boolean < integer", 10);
        expect_error("SELECT -b FROM t", "42883", "operator does not exist: - text", 8);
        expect_error("SELECT 'a' + 'b'", "42725", NULL, 12);
        expect_error("SELECT foo(1, 'x')", "42883", "function foo(integer, unknown) does not exist", 8);
        expect_error("SELECT mz_now(1)", "42883", NULL, 8);
        expect_error("SELECT avg(b) FROM t", "42883", "function avg(text) does not exist", 8);
        /* Outer joins: ON equalities of the two sides (and, for LEFT, conditions on the
         * right alone); other conditions would change the matching: refused. */
        expect_error("SELECT * FROM t LEFT JOIN u ON t.a < u.x", "0A000", NULL, -1);
        expect_error("SELECT * FROM t LEFT JOIN u ON t.a = u.x AND t.a > 1", "0A000", NULL, -1);
        expect_error("SELECT * FROM t FULL JOIN u ON u.x = 1", "0A000", NULL, -1);
        expect_error("SELECT * FROM t RIGHT JOIN u ON t.a = u.x OR u.x = 2", "0A000", NULL, -1);
        /* FULL and RIGHT JOIN ... USING plan (test-compute checks their rows). */
        sql_stmt_free(analyze("SELECT * FROM t AS t1 FULL JOIN t AS t2 USING (a)"));
        sql_stmt_free(analyze("SELECT * FROM t AS t1 RIGHT JOIN t AS t2 USING (a)"));
        expect_error("SELECT * FROM i", "42809", NULL, 15);
        expect_error("SELECT *", "42601", "SELECT * with no tables specified is not valid", 8);
        /* Errors while folding stay for run time (only a row reaching them fails). */
        expect_select_plan("SELECT 1/0", "Map[(1 / 0)](Constant(1))");
        expect_select_plan("SELECT 2147483647 + 1", "Map[(2147483647 + 1)](Constant(1))");
        expect_select_plan("SELECT 1/0 FROM t WHERE false", "Constant[int4](0)");
        expect_error("SELECT 'abc'::int", "22P02", "invalid input syntax for type integer: \"abc\"", 8);
        expect_error("SELECT 1::real", "0A000", "type \"real\" is not supported", -1);
        expect_error("SELECT true::bigint", "42846", "cannot cast type boolean to bigint", 12);
        expect_error("SELECT 1e39", "22003", "value overflows numeric format", 8);
        sql_stmt_free(analyze("SELECT 1 INTERSECT SELECT 2"));
        sql_stmt_free(analyze("SELECT a FROM t EXCEPT SELECT x FROM u"));
        /* ALL: max(0, a - b) copies (EXCEPT), a - that (INTERSECT); numeric refused. */
        expect_select_plan("SELECT a FROM t EXCEPT ALL SELECT x FROM u",
                           "Threshold(Union(Project[1](Map[CAST(#0 AS int8)](Project[0](Get 10))), "
                           "Negate(Get 11)))");
        expect_select_plan("SELECT a FROM t INTERSECT ALL SELECT x FROM u",
                           "Union(Project[1](Map[CAST(#0 AS int8)](Project[0](Get 10))), "
                           "Negate(Threshold(Union(Project[1](Map[CAST(#0 AS int8)](Project[0](Get "
                           "10))), Negate(Get 11)))))");
        expect_error("SELECT 1 INTERSECT ALL SELECT 2.5", "0A000",
                     "INTERSECT ALL over a numeric column is not supported", -1);
        expect_error("SELECT a FROM t EXCEPT ALL SELECT b FROM t", "42804",
                     "EXCEPT types integer and text cannot be matched", -1);
        expect_error("SELECT a FROM t EXCEPT SELECT b FROM t", "42804",
                     "EXCEPT types integer and text cannot be matched", -1);
        expect_error("SELECT $1", "42P02", NULL, 8);
        expect_error("CREATE OR REPLACE VIEW w AS SELECT 1", "0A000", NULL, -1);
        expect_error("SELECT other.t.a FROM t", "0A000", NULL, -1);
}

static void test_delete(void)
{
        struct sql_stmt *s = analyze("DELETE FROM t WHERE a = 1");

        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_DELETE);
        CU_ASSERT_STRING_EQUAL(sql_stmt_tag(s), "DELETE");
        CU_ASSERT_EQUAL(s->delete_.id, 10);
        CU_ASSERT_STRING_EQUAL(s->delete_.table, "t");
        CU_ASSERT(s->n_inputs == 1 && s->inputs[0] == 10);
        expect_plan(s->delete_.plan, "Filter[(#0 = 1)](Get 10)");
        sql_stmt_free(s);

        s = analyze("DELETE FROM t");
        expect_plan(s->delete_.plan, "Get 10");
        sql_stmt_free(s);
        s = analyze("DELETE FROM t AS x WHERE x.b <> 'k' AND mz_now() > 5");
        expect_plan(s->delete_.plan, "Filter[((#1 <> 'k') AND (mz_now() > 5::int8))](Get 10)");
        sql_stmt_free(s);

        expect_error("DELETE FROM zz", "42P01", NULL, 13);
        expect_error("DELETE FROM v", "42809", "cannot delete from view \"v\"", 13);
        expect_error("DELETE FROM t WHERE q", "42703", NULL, 21);
        expect_error("DELETE FROM t WHERE a", "42804", NULL, 21);
        /* RETURNING: its values after the row, evaluated with the write. */
        s = analyze("DELETE FROM t AS r WHERE a = 1 RETURNING r.a + 1 AS n, *");
        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_DELETE);
        expect_plan(s->delete_.plan, "Map[(#0 + 1), #0, #1, #2, #3](Filter[(#0 = 1)](Get 10))");
        CU_ASSERT_EQUAL_FATAL(s->delete_.returning->n_columns, 5);
        CU_ASSERT_STRING_EQUAL(s->delete_.returning->columns[0]->name, "n");
        CU_ASSERT_STRING_EQUAL(s->delete_.returning->columns[4]->name, "d");
        sql_stmt_free(s);
        expect_error("DELETE FROM t RETURNING count(*)", "42803",
                     "aggregate functions are not allowed in RETURNING", -1);
        expect_error("DELETE FROM t RETURNING (SELECT 1)", "0A000", NULL, -1);
        expect_error("DELETE FROM t RETURNING q", "42703", NULL, -1);
        /* USING: a semi-join, WHERE EXISTS (SELECT NULL FROM u WHERE ...), so each row of t
         * at most once; names checked over one FROM list. */
        s = analyze("DELETE FROM t USING u WHERE t.a = u.x AND u.x > 2 AND t.b = 'k' RETURNING t.a");
        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_DELETE);
        CU_ASSERT(s->n_inputs == 2 && s->inputs[0] == 10 && s->inputs[1] == 11);
        /* t's rows with the EXISTS's flag (#4 IS NOT NULL), t's columns kept. */
        CU_ASSERT(plan_starts(s->delete_.plan, "Map[#0](Project[0,1,2,3](Filter[#5](Map[(#4 IS NOT "
                                               "NULL)](Project[0,1,2,3,8](Join[0=0,4=3,5=4](Map["));
        sql_stmt_free(s);
        sql_stmt_free(analyze("DELETE FROM t USING u"));
        sql_stmt_free(analyze("DELETE FROM t AS r USING t AS r2, u WHERE r.a = r2.a AND r2.a = u.x "
                              "RETURNING r.*"));
        expect_error("DELETE FROM t USING t AS t2 WHERE a = 1", "42702",
                     "column reference \"a\" is ambiguous", 35);
        expect_error("DELETE FROM t USING t", "42712", NULL, -1);
        expect_error("DELETE FROM t USING u WHERE t.q = u.x", "42703", NULL, -1);
        expect_error("DELETE FROM t USING u WHERE t.a < u.x", "0A000",
                     "DELETE ... USING is supported only when its WHERE relates the target to the "
                     "other tables by equalities (target.column = other.column) joined by AND", -1);
        expect_error("DELETE FROM t USING u WHERE t.a = u.x OR u.x = 1", "0A000", NULL, -1);
        expect_error("DELETE FROM t USING u WHERE t.a = u.x RETURNING *", "0A000", NULL, 49);
        expect_error("DELETE FROM t USING u WHERE t.a = u.x RETURNING x", "0A000",
                     "RETURNING of DELETE ... USING may name only the target's columns", -1);
        expect_error("DELETE FROM t USING u WHERE t.a = u.x RETURNING u.x", "0A000", NULL, -1);
}

/* ---- Session statements. ---- */

static void expect_show(const char *sql, const char *name)
{
        struct sql_stmt *s = analyze(sql);

        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_SHOW_VARIABLE);
        CU_ASSERT_STRING_EQUAL(s->show_variable.name, name);
        CU_ASSERT_STRING_EQUAL(sql_stmt_tag(s), "SHOW");
        sql_stmt_free(s);
}

static void expect_set(const char *sql, const char *name, const char *value, bool reset,
                       bool local)
{
        struct sql_stmt *s = analyze(sql);

        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_SET_VARIABLE);
        CU_ASSERT_STRING_EQUAL(s->set_variable.name, name);
        if (value) {
                CU_ASSERT_FATAL(s->set_variable.value != NULL);
                CU_ASSERT_STRING_EQUAL(s->set_variable.value, value);
        } else {
                CU_ASSERT(s->set_variable.value == NULL);
        }
        CU_ASSERT_EQUAL(s->set_variable.reset, reset);
        CU_ASSERT_EQUAL(s->set_variable.local, local);
        CU_ASSERT_STRING_EQUAL(sql_stmt_tag(s), reset ? "RESET" : "SET");
        sql_stmt_free(s);
}

static void expect_txn(const char *sql, enum sql_txn_kind kind, const char *tag)
{
        struct sql_stmt *s = analyze(sql);

        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_TRANSACTION);
        CU_ASSERT_EQUAL(s->transaction, kind);
        CU_ASSERT_STRING_EQUAL(sql_stmt_tag(s), tag);
        sql_stmt_free(s);
}

static void test_update(void)
{
        struct sql_stmt *s = analyze("UPDATE t SET b = b || 'x', a = a + 1 WHERE d > 3");

        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_UPDATE);
        CU_ASSERT_STRING_EQUAL(sql_stmt_tag(s), "UPDATE");
        CU_ASSERT_EQUAL(s->update.id, 10);
        CU_ASSERT_STRING_EQUAL(s->update.table, "t");
        /* The old row, then the new: a is NOT NULL, so its new value is checked. */
        expect_plan(s->update.plan,
                    "Map[ASSERT_NOT_NULL((#0 + 1), 'a', 't'), (#1 || 'x'), #2, #3]"
                    "(Filter[(#3 > 3::int8)](Get 10))");
        sql_stmt_free(s);
        s = analyze("UPDATE t AS x SET a = 7, d = DEFAULT, b = x.b");
        expect_plan(s->update.plan, "Map[7, #1, #2, NULL::int8](Get 10)");
        sql_stmt_free(s);
        s = analyze("UPDATE t SET d = a, c = NULL WHERE mz_now() > 0");
        expect_plan(s->update.plan,
                    "Map[#0, #1, NULL::bool, CAST(#0 AS int8)](Filter[(mz_now() > 0::int8)](Get 10))");
        sql_stmt_free(s);

        expect_error("UPDATE t SET zz = 1", "42703", "column \"zz\" of relation \"t\" does not exist", 14);
        expect_error("UPDATE t SET a = 1, a = 2", "42601", "multiple assignments to same column \"a\"", 21);
        expect_error("UPDATE t SET a = true", "42804",
                     "column \"a\" is of type integer but expression is of type boolean", 18);
        expect_error("UPDATE t SET a = 'x'", "22P02", NULL, 18);
        expect_error("UPDATE t SET a = count(*)", "42803",
                     "aggregate functions are not allowed in UPDATE", 18);
        expect_error("UPDATE v SET a = 1", "42809", "cannot update view \"v\"", 8);
        expect_error("UPDATE zz SET a = 1", "42P01", NULL, 8);
        expect_error("UPDATE t SET (a, d) = (1, 2)", "0A000", NULL, -1);
        /* FROM: the rows of an EXISTS, an item's column a scalar subquery (21000 when
         * several rows match); names over one FROM list. */
        s = analyze("UPDATE t SET d = u.x + a, b = 'k' FROM u WHERE t.a = u.x AND t.c RETURNING t.d");
        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_UPDATE);
        CU_ASSERT(s->n_inputs == 2 && s->inputs[0] == 10 && s->inputs[1] == 11);
        CU_ASSERT(plan_starts(s->update.plan, "Project[0,1,2,3,7,8,9,10,11](Map[#0, 'k', #2, "
                                              "(#6 + CAST(#0 AS int8)), (#6 + CAST(#0 AS int8))]"
                                              "(Map[CASE((#4 > 1::int8), TOO_MANY_ROWS(), #5)]"));
        sql_stmt_free(s);
        sql_stmt_free(analyze("UPDATE t SET a = 1 FROM u"));
        sql_stmt_free(analyze("UPDATE t AS r SET b = r2.b FROM t AS r2 WHERE r.a = r2.a"));
        expect_error("UPDATE t SET d = 1 FROM t AS t2 WHERE a = 1", "42702", NULL, 39);
        expect_error("UPDATE t SET d = x FROM u WHERE t.a < u.x", "0A000",
                     "UPDATE ... FROM is supported only when its WHERE relates the target to the "
                     "other tables by equalities (target.column = other.column) joined by AND", -1);
        expect_error("UPDATE t SET d = (SELECT x) FROM u WHERE t.a = u.x", "0A000", NULL, -1);
        expect_error("UPDATE t SET d = q FROM u WHERE t.a = u.x", "42703", NULL, 18);
        expect_error("UPDATE t SET d = 1 FROM u WHERE t.a = u.x RETURNING *", "0A000", NULL, -1);
        expect_error("UPDATE t SET d = 1 FROM u WHERE t.a = u.x RETURNING x", "0A000",
                     "RETURNING of UPDATE ... FROM may name only the target's columns", -1);
        /* RETURNING: over the new row, after the old and new rows. */
        s = analyze("UPDATE t SET a = a + 1 WHERE c RETURNING a, b");
        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_UPDATE);
        expect_plan(s->update.plan, "Map[ASSERT_NOT_NULL((#0 + 1), 'a', 't'), #1, #2, #3, "
                                    "ASSERT_NOT_NULL((#0 + 1), 'a', 't'), #1](Filter[#2](Get 10))");
        CU_ASSERT_EQUAL_FATAL(s->update.returning->n_columns, 2);
        sql_stmt_free(s);
        expect_error("UPDATE t SET a = 1 RETURNING sum(a)", "42803", NULL, -1);
        expect_error("UPDATE t SET a = 1 WHERE q = 1", "42703", NULL, 26);
}

/* pg_catalog and information_schema relations (adapter-pgcatalog.h): Constants of the
 * catalog as analyzed, the functions psql's list commands call, COLLATE. */
static void test_pg_catalog(void)
{
        /* pg_class: the 9 visible objects, as a Constant (its 27 columns). */
        expect_select_plan("SELECT relname, relkind FROM pg_catalog.pg_class WHERE relkind = 'v'",
                           "Project[1,15](Filter[(#15 = 'v')](Constant[int8,text,int8,int8,int8,"
                           "int8,int8,int8,int8,int4,int4,int8,bool,bool,text,text,int4,int4,bool,"
                           "bool,bool,bool,bool,bool,text,bool,int8,text](9)))");
        expect_select_plan("SELECT nspname FROM pg_namespace", "Project[1](Constant[int8,text,int8](3))");
        /* Tables and views, not materialized views or indexes: t u v w nd k nt. */
        expect_select_plan("SELECT table_name, table_type FROM information_schema.tables",
                           "Project[2,3](Constant[text,text,text,text,text,text,text,text,text,text,"
                           "text,text](7))");
        /* Columns of the relations; the fake index names no object (on_id 0): none. */
        expect_select_plan("SELECT attname FROM pg_attribute WHERE attrelid = 10",
                           "Project[1](Filter[(#0 = 10::int8)](Constant[int8,text,int8,int4,int4,"
                           "int4,int4,int4,int4,bool,text,text,text,bool,bool,bool,text,text,bool,"
                           "bool,int4,int8](14)))");
        expect_select_plan("SELECT pg_catalog.pg_get_userbyid(10), pg_get_userbyid(11), "
                           "pg_encoding_to_char(6), pg_encoding_to_char(99), "
                           "pg_table_is_visible(12), pg_table_is_visible(NULL)",
                           "Map['coord', 'unknown (OID=11)', 'UTF8', '', true, NULL::bool]"
                           "(Constant(1))");
        expect_select_plan("SELECT pg_get_userbyid(relowner) FROM pg_class",
                           "Project[28](Map[CASE((#5 = 10::int8), 'coord', (('unknown (OID=' || "
                           "CAST(#5 AS text)) || ')'))](Constant[int8,text,int8,int8,int8,int8,int8,"
                           "int8,int8,int4,int4,int8,bool,bool,text,text,int4,int4,bool,bool,bool,"
                           "bool,bool,bool,text,bool,int8,text](9)))");
        expect_select_plan("SELECT b COLLATE pg_catalog.default, b COLLATE \"C\" FROM t",
                           "Project[1,1](Get 10)");
        /* A user object keeps its name; pg_catalog.X always names the catalog's. */
        expect_select_plan("SELECT * FROM t", "Get 10");
        expect_error("CREATE VIEW vv AS SELECT relname FROM pg_class", "0A000", NULL, -1);
        expect_error("CREATE MATERIALIZED VIEW vv AS SELECT relname FROM pg_class", "0A000",
                     NULL, -1);
        expect_error("SELECT * FROM information_schema.nope", "42P01",
                     "relation \"information_schema.nope\" does not exist", 15);
        expect_error("SELECT * FROM pg_catalog.t", "42P01", NULL, 15);
        expect_error("SELECT * FROM tables", "42P01", NULL, 15);
        expect_error("SELECT b COLLATE \"de_DE\" FROM t", "0A000", NULL, -1);
        expect_error("SELECT a COLLATE \"C\" FROM t", "42804", NULL, -1);
        expect_error("SELECT pg_get_userbyid('x'::text)", "42883", NULL, 8);
        /* \l's array_to_string(d.datacl, E'\n'): datacl is a text[] (aclitem[] in
         * PostgreSQL), always NULL. */
        {
                struct sql_stmt *st = analyze("SELECT array_to_string(datacl, ',') FROM pg_database");

                CU_ASSERT_PTR_NOT_NULL_FATAL(st);
                CU_ASSERT_EQUAL(st->kind, SQL_STMT_SELECT);
                sql_stmt_free(st);
        }
        expect_error("SELECT array_to_string(datacl) FROM pg_database", "42883", NULL, 8);
}

/* psql's \d NAME (adapter-sql-describe.c "psql's \d NAME"): reg* casts as their text, the
 * describe functions as CASE over the catalog now, subqueries over no rows. */
static void test_pg_catalog_describe(void)
{
        /* Literals fold: a name or an oid; 0 is "-", an oid no object has its number. */
        expect_select_plan("SELECT 't'::regclass, 'T'::pg_catalog.regclass::text, 10::regclass, "
                           "0::regclass, 99999::regclass, 'integer'::regtype, 1007::regtype, "
                           "2200::regnamespace",
                           "Map['t', 't', 't', '-', '99999', 'integer', 'integer[]', 'public']"
                           "(Constant(1))");
        expect_error("SELECT 'nope'::regclass", "42P01", "relation \"nope\" does not exist", 8);
        expect_error("SELECT 'nope'::regtype", "42704", "type \"nope\" does not exist", 8);
        expect_error("SELECT 'nope'::regnamespace", "42704", "schema \"nope\" does not exist", 8);
        expect_error("SELECT '4294967296'::regclass", "22003", NULL, 8);
        expect_error("SELECT ''::regclass", "42602", NULL, 8);
        expect_error("SELECT 'pg_catalog.t'::regclass", "42P01", NULL, 8);
        expect_select_plan("SELECT 'public.t'::regclass", "Map['t'](Constant(1))");
        /* Only its text is PostgreSQL's meaning: not compared, sorted, nor in a subquery,
         * a UNION or a view. */
        expect_error("SELECT 1 WHERE 't'::regclass = 't'", "0A000", NULL, 19);
        expect_error("SELECT oid::regclass FROM pg_class ORDER BY 1", "0A000", NULL, -1);
        expect_error("SELECT * FROM (SELECT oid::regclass FROM pg_class) s", "0A000", NULL, -1);
        expect_error("SELECT 1::regclass UNION SELECT 2::regclass", "0A000", NULL, -1);
        expect_error("CREATE VIEW vv AS SELECT 'public'::regnamespace::text", "0A000", NULL, -1);
        expect_error("SELECT true::regclass", "42846", NULL, -1);
        /* Of a column: CASE over the objects, the number for another oid. */
        {
                struct sql_stmt *st = analyze("SELECT reloftype::regtype::text, oid::regclass "
                                              "FROM pg_class");

                CU_ASSERT_PTR_NOT_NULL_FATAL(st);
                sql_stmt_free(st);
        }
        expect_select_plan("SELECT format_type(23, -1), format_type(1007, 7), format_type(9, NULL), "
                           "format_type(NULL, 1)",
                           "Map['integer', 'integer(7)[]', '\?\?\?', NULL::text](Constant(1))");
        expect_select_plan("SELECT pg_get_constraintdef(1), pg_get_statisticsobjdef_columns(1)",
                           "Map[NULL::text, NULL::text](Constant(1))");
        expect_error("SELECT format_type('x'::text, 1)", "42883", NULL, -1);
        expect_error("SELECT pg_get_expr('x', 10)", "0A000", NULL, -1);
        expect_error("SELECT pg_get_indexdef(10, 1, a > 1) FROM t", "0A000", NULL, -1);
        /* The fixture's index names no object (on_id 0): no definition. */
        expect_select_plan("SELECT pg_get_indexdef(14), pg_get_indexdef(14, 0, true), "
                           "pg_get_indexdef(14, 1, true), pg_get_indexdef(14, 9, true), "
                           "pg_get_indexdef(10, 1, true), pg_relation_is_publishable(10), "
                           "pg_relation_is_publishable(12), pg_relation_is_publishable(99)",
                           "Map[NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, true, "
                           "false, NULL::bool](Constant(1))");
        /* pg_attrdef: t's DEFAULTs as PostgreSQL prints their literals. */
        {
                struct sql_stmt *st = analyze("SELECT pg_get_expr(adbin, adrelid, true) "
                                              "FROM pg_attrdef WHERE adrelid = 10");

                CU_ASSERT_PTR_NOT_NULL_FATAL(st);
                sql_stmt_free(st);
        }
        /* A correlated subquery's other conjuncts: one over the outer row only becomes a
         * key, one using a key's outer side reads its inner side instead. */
        {
                struct sql_stmt *st = analyze(
                        "SELECT a.attname, (SELECT d.adbin FROM pg_attrdef d WHERE "
                        "d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef), "
                        "(SELECT c.collname FROM pg_collation c, pg_type t WHERE "
                        "c.oid = a.attcollation AND t.oid = a.atttypid AND "
                        "a.attcollation <> t.typcollation) FROM pg_attribute a");

                CU_ASSERT_PTR_NOT_NULL_FATAL(st);
                sql_stmt_free(st);
        }
        /* Correlated by another comparison: planned over its domain (adapter-sql-correlate.c). */
        sql_stmt_free(analyze("SELECT (SELECT 1 FROM t x WHERE x.a < t.a) FROM t"));
        expect_error("SELECT (SELECT 1 FROM (SELECT a FROM t x WHERE x.a < t.a) y) FROM t", "0A000",
                     NULL, -1);
        /* Over no rows (pg_policy is empty), a subquery Coord cannot plan is NULL... */
        {
                struct sql_stmt *st = analyze(
                        "SELECT pg_catalog.array_to_string(array(SELECT rolname FROM pg_roles "
                        "WHERE oid = ANY (pol.polroles) ORDER BY 1), ',') FROM pg_policy pol");

                CU_ASSERT_PTR_NOT_NULL_FATAL(st);
                sql_stmt_free(st);
        }
        /* ... but not over rows, and PostgreSQL's errors in it are still errors. */
        expect_error("SELECT array(SELECT r.rolname FROM (SELECT rolname FROM pg_roles "
                     "WHERE oid < x.oid) r) FROM pg_roles x", "0A000", NULL, -1);
        expect_error("SELECT (SELECT 1 FROM nope WHERE oid = ANY (polroles)) "
                     "FROM pg_policy", "42P01", NULL, -1);
}

static void test_session(void)
{
        struct sql_stmt *s = analyze("SHOW TABLES");

        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_SHOW_OBJECTS);
        CU_ASSERT_FALSE(s->show_objects.all);
        CU_ASSERT_EQUAL(s->show_objects.kind, SQL_OBJECT_TABLE);
        sql_stmt_free(s);
        s = analyze("show objects");
        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_SHOW_OBJECTS);
        CU_ASSERT_TRUE(s->show_objects.all);
        sql_stmt_free(s);

        expect_show("SHOW server_version", "server_version");
        expect_show("SHOW TRANSACTION ISOLATION LEVEL", "transaction_isolation");
        expect_show("SHOW ALL", "all");
        expect_show("SHOW \"DateStyle\"", "datestyle");

        expect_set("SET x = 1", "x", "1", false, false);
        expect_set("SET application_name TO 'psql'", "application_name", "psql", false, false);
        expect_set("SET search_path = a, 'b'", "search_path", "a, b", false, false);
        expect_set("SET LOCAL statement_timeout = 0", "statement_timeout", "0", false, true);
        expect_set("SET TIME ZONE 'UTC'", "timezone", "UTC", false, false);
        expect_set("SET extra_float_digits = 3", "extra_float_digits", "3", false, false);
        expect_set("SET x TO DEFAULT", "x", NULL, false, false);
        expect_set("RESET x", "x", NULL, true, false);
        expect_set("RESET ALL", "all", NULL, true, false);

        expect_txn("BEGIN", SQL_TXN_BEGIN, "BEGIN");
        expect_txn("START TRANSACTION", SQL_TXN_BEGIN, "BEGIN");
        expect_txn("COMMIT", SQL_TXN_COMMIT, "COMMIT");
        expect_txn("END", SQL_TXN_COMMIT, "COMMIT");
        expect_txn("ROLLBACK", SQL_TXN_ROLLBACK, "ROLLBACK");
        expect_txn("ABORT", SQL_TXN_ROLLBACK, "ROLLBACK");
        expect_error("SAVEPOINT s", "0A000", NULL, -1);
}

static void test_catalog_failure(void)
{
        fake_error = -EIO;
        expect_error("SELECT * FROM t", "XX000", NULL, -1);
        expect_error("DROP TABLE t", "XX000", NULL, -1);
        fake_error = 0;
        CU_ASSERT_STRING_EQUAL(sql_object_kind_name(SQL_OBJECT_MATERIALIZED_VIEW),
                               "materialized view");
        CU_ASSERT_STRING_EQUAL(sql_object_kind_name(_SQL_OBJECT_KIND_INVALID), "object");
}

/* Random token soup: parsing and analysis never crash, and every failure carries a
 * five-character SQLSTATE and a message. */
static void test_fuzz_tokens(void)
{
        static const char *const words[] = {
                "SELECT", "FROM", "WHERE", "t", "u", "a", "b", "c", "d", "x", "*", "(", ")", ",",
                ";", "+", "-", "/", "%", "=", "<>", "<", "AND", "OR", "NOT", "IS", "NULL", "AS",
                "OF", "'x'", "'5'", "1", "0", "2147483647", "9223372036854775807", "::", "int8",
                "text", "bool", "mz_now()", "INSERT", "INTO", "VALUES", "DELETE", "CREATE",
                "TABLE", "DROP", "IF", "EXISTS", "true", "false", "$1", "SHOW", "SET", "TO",
                "'é'", "--", "\"q\"", "t.a", "DEFAULT", "BEGIN",
                "JOIN", "ON", "USING", "GROUP BY", "HAVING", "ORDER BY", "LIMIT", "OFFSET",
                "UNION", "ALL", "DISTINCT", "count(*)", "sum(a)", "max(b)", "VIEW",
                "MATERIALIZED", "INDEX", "v", "w", "nd", "k", "mv", "u.x", "x", "DESC",
                "NULLS FIRST", "COALESCE(a, 1)", "(SELECT a FROM t)", "VALUES (1)", "WITH",
                "RETAIN HISTORY FOR '1s'", ", u", "CROSS JOIN u", "now()", "2", "REFRESH AT CREATION",
                "REFRESH EVERY '1s'", "ALIGNED TO", "REFRESH AT mz_now() + 5", "SINK", "SOURCE",
                "INTO FILE '/tmp/x'", "FILE '/tmp/x'", "LOAD GENERATOR COUNTER", "(FORMAT TEXT)",
                "(FORMAT CSV WITH 2 COLUMNS)", "(TICK INTERVAL '1s', UP TO 3)", "WITH (SNAPSHOT = false)",
        };
        unsigned seed = 4242;
        size_t ok = 0;

        for (int iter = 0; iter < 40000; iter++) {
                char q[512] = "";
                int n = 1 + rand_r(&seed) % 14;
                struct row_error err;
                struct sql_batch *b = NULL;

                static const char *const starts[] = {
                        "SELECT ", "INSERT INTO t VALUES (", "SELECT a FROM t ", "SELECT * FROM ",
                        "CREATE MATERIALIZED VIEW m AS SELECT ", "CREATE VIEW m AS SELECT ",
                        "CREATE DEFAULT INDEX ON ", "CREATE INDEX ON ", "SELECT b, count(*) FROM t ",
                        "CREATE SINK k FROM ", "CREATE SOURCE s FROM ", "DROP SINK ", "DROP SOURCE ",
                        "ALTER SINK k SET FROM ", "ALTER SINK ",
                };

                if (rand_r(&seed) % 4)
                        strcpy(q, starts[(size_t)rand_r(&seed) % ELEMENTSOF(starts)]);
                for (int k = 0; k < n; k++) {
                        strncat(q, words[(size_t)rand_r(&seed) % ELEMENTSOF(words)], sizeof(q) - strlen(q) - 2);
                        strcat(q, " ");
                }
                memset(&err, 0, sizeof(err));
                if (sql_parse(q, &b, &err) < 0) {
                        CU_ASSERT_EQUAL(strlen(err.sqlstate), 5);
                        continue;
                }
                for (size_t i = 0; i < sql_batch_size(b); i++) {
                        struct sql_stmt *s = NULL;

                        memset(&err, 0, sizeof(err));
                        if (sql_analyze(b, i, &catalog, objects, NULL, &s, &err) < 0) {
                                CU_ASSERT_EQUAL(strlen(err.sqlstate), 5);
                                CU_ASSERT(err.message[0] != '\0');
                                CU_ASSERT(err.position <= strlen(q) + 1);
                                continue;
                        }
                        ok++;
                        sql_stmt_free(s);
                }
                sql_batch_free(b);
        }
        CU_ASSERT(ok > 100);    /* the soup does produce valid statements too */
}


/* ---- Views, materialized views, indexes and full queries. ---- */

/* "1,2,3" */
static void expect_ids(const uint64_t *ids, size_t n, const char *want, const char *what)
{
        char got[256] = "";

        for (size_t i = 0; i < n; i++)
                snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%llu", i ? "," : "",
                         (unsigned long long)ids[i]);
        if (strcmp(got, want) != 0) {
                fprintf(stderr, "\n  %s: got {%s}, expected {%s}\n", what, got, want);
                CU_FAIL("wrong ids");
        }
}

static void expect_inputs(const struct sql_stmt *s, const char *logical, const char *physical)
{
        expect_ids(s->inputs, s->n_inputs, logical, "logical inputs");
        expect_ids(s->physical_inputs, s->n_physical_inputs, physical, "physical inputs");
}

static void expect_error_hint(const char *sql, const char *sqlstate, const char *message,
                              const char *detail, const char *hint)
{
        struct row_error err;
        struct sql_stmt *s = NULL;

        memset(&err, 0, sizeof(err));
        CU_ASSERT(sql_analyze_one(sql, &catalog, objects, NULL, &s, &err) < 0);
        CU_ASSERT(s == NULL);
        if (strcmp(err.sqlstate, sqlstate) != 0 || (message && strcmp(err.message, message)) ||
            (detail && strcmp(err.detail, detail)) || (hint && strcmp(err.hint, hint))) {
                fprintf(stderr, "\n  %s:\n    got      %s \"%s\" detail \"%s\" hint \"%s\"\n", sql,
                        err.sqlstate, err.message, err.detail, err.hint);
                CU_FAIL("wrong error");
        }
}

static struct fake_object *object(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(objects); i++)
                if (strcmp(objects[i].name, name) == 0)
                        return &objects[i];
        CU_FAIL_FATAL("no such fake object");
        return NULL;
}

/* Give a fake view the plan the analyzer makes for `sql` (CREATE VIEW <other name>). */
static void plan_view(const char *name, const char *sql, bool deterministic)
{
        struct fake_object *o = object(name);
        struct sql_stmt *s = analyze(sql);

        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_CREATE_VIEW);
        CU_ASSERT_EQUAL(s->create_view.deterministic, deterministic);
        CU_ASSERT_EQUAL_FATAL(s->create_view.n_columns, o->n_columns);
        for (size_t i = 0; i < o->n_columns; i++)
                CU_ASSERT_EQUAL(s->create_view.columns[i].type, o->columns[i].type);
        o->plan = s->create_view.plan;
        s->create_view.plan = NULL;
        o->inputs = s->inputs;
        o->n_inputs = s->n_inputs;
        s->inputs = NULL;
        s->n_inputs = 0;
        o->deterministic = s->create_view.deterministic;
        sql_stmt_free(s);
}

static void test_plan_views(void)
{
        plan_view("v", "CREATE VIEW v_def AS SELECT a FROM t WHERE a > 1", true);
        plan_view("w", "CREATE VIEW w_def AS SELECT v.a, u.x FROM v, u WHERE v.a = u.x", true);
        plan_view("nd", "CREATE VIEW nd_def AS SELECT a, mz_now() AS ts FROM t", false);
        expect_plan(object("v")->plan, "Project[0](Filter[(#0 > 1)](Get 10))");
        expect_plan(object("w")->plan,
                    "Join[0=0](Project[0](Filter[(#0 > 1)](Get 10)), Get 11)");
        expect_ids(object("w")->inputs, object("w")->n_inputs, "10,11", "w's inputs");
}

static void free_views(void)
{
        for (size_t i = 0; i < ELEMENTSOF(objects); i++) {
                if (objects[i].plan)
                        coord__plan__relation__free_unpacked(objects[i].plan, NULL);
                free(objects[i].inputs);
        }
}

static void test_create_view(void)
{
        struct sql_stmt *s = analyze("CREATE VIEW vv (n) AS SELECT a + 1 FROM t");

        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_CREATE_VIEW);
        CU_ASSERT_STRING_EQUAL(sql_stmt_tag(s), "CREATE VIEW");
        CU_ASSERT_STRING_EQUAL(s->create_view.name, "vv");
        CU_ASSERT_EQUAL_FATAL(s->create_view.n_columns, 1);
        CU_ASSERT_STRING_EQUAL(s->create_view.columns[0].name, "n");
        CU_ASSERT_EQUAL(s->create_view.columns[0].type, ROW_TYPE_INT4);
        CU_ASSERT_TRUE(s->create_view.deterministic);
        CU_ASSERT_FALSE(s->create_view.exists);
        expect_plan(s->create_view.plan, "Project[4](Map[(#0 + 1)](Get 10))");
        expect_inputs(s, "10", "10");
        expect_ids(s->references, s->n_references, "10", "references");
        sql_stmt_free(s);

        /* Two levels of views, inlined; the logical inputs are storage collections. */
        s = analyze("CREATE VIEW ww AS SELECT x, a FROM w WHERE x > 5");
        /* x > 5 went down to u's side of the inlined join. */
        expect_plan(s->create_view.plan,
                    "Project[1,0](Join[0=0](Project[0](Filter[(#0 > 1)](Get 10)), "
                    "Filter[(#0 > 5::int8)](Get 11)))");
        expect_inputs(s, "10,11", "10,11");
        expect_ids(s->references, s->n_references, "15", "references");
        CU_ASSERT_STRING_EQUAL(s->create_view.columns[0].name, "x");
        sql_stmt_free(s);

        s = analyze("SELECT * FROM w");
        expect_inputs(s, "10,11", "10,11");
        sql_stmt_free(s);

        s = analyze("CREATE VIEW vn AS SELECT a, mz_now() FROM t");
        CU_ASSERT_FALSE(s->create_view.deterministic);
        sql_stmt_free(s);
        s = analyze("CREATE VIEW vn AS SELECT * FROM nd");      /* through a view */
        CU_ASSERT_FALSE(s->create_view.deterministic);
        sql_stmt_free(s);
        /* ORDER BY in a view cannot change a collection: ignored. */
        s = analyze("CREATE VIEW vo AS SELECT a FROM t ORDER BY a");
        expect_plan(s->create_view.plan, "Project[0](Get 10)");
        sql_stmt_free(s);

        expect_error("CREATE VIEW v AS SELECT 1", "42P07", "relation \"v\" already exists", -1);
        expect_error("CREATE VIEW vv AS SELECT a, a FROM t", "42701",
                     "column \"a\" specified more than once", -1);
        expect_error("CREATE VIEW vv (p, q) AS SELECT a FROM t", "42601", NULL, -1);
        expect_error("CREATE VIEW vv AS SELECT a FROM t LIMIT 1", "0A000",
                     "LIMIT without ORDER BY in a view is not deterministic", -1);
        expect_error("CREATE VIEW vv AS SELECT * FROM (SELECT a FROM t OFFSET 1) s", "0A000",
                     "LIMIT without ORDER BY in a view is not deterministic", -1);
        expect_error("CREATE VIEW vv AS SELECT now()", "0A000", "function now() is not supported",
                     -1);
}

static void test_create_materialized_view(void)
{
        static const struct {
                const char *with;
                uint64_t ms;
        } durations[] = {
                { "", 0 }, { " WITH (RETAIN HISTORY FOR '1s')", 1000 },
                { " WITH (RETAIN HISTORY FOR '500ms')", 500 },
                { " WITH (RETAIN HISTORY FOR '2 min')", 120000 },
                { " WITH (retain history for '1h')", 3600000 },
                { " WITH (RETAIN HISTORY FOR '1 hour 30 minutes')", 5400000 },
        };
        struct sql_stmt *s = analyze("CREATE MATERIALIZED VIEW m AS SELECT * FROM t WHERE false");

        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_CREATE_MATERIALIZED_VIEW);
        CU_ASSERT_STRING_EQUAL(sql_stmt_tag(s), "CREATE MATERIALIZED VIEW");
        CU_ASSERT_STRING_EQUAL(s->create_view.name, "m");
        CU_ASSERT_EQUAL(s->create_view.n_columns, 4);
        CU_ASSERT_TRUE(s->create_view.deterministic);
        CU_ASSERT_EQUAL(s->create_view.retain_history_ms, 0);
        expect_plan(s->create_view.plan, "Constant[int4,text,bool,int8](0)");
        expect_inputs(s, "10", "");
        sql_stmt_free(s);

        /* A requested as-of (admission checks it against the inputs' bounds). */
        s = analyze("CREATE MATERIALIZED VIEW m AS SELECT a FROM t AS OF 1000 + 234");
        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_CREATE_MATERIALIZED_VIEW);
        CU_ASSERT_TRUE(s->create_view.has_as_of);
        CU_ASSERT_EQUAL(s->create_view.as_of, 1234);
        CU_ASSERT_EQUAL(s->create_view.n_columns, 1);
        sql_stmt_free(s);
        s = analyze("CREATE MATERIALIZED VIEW m AS SELECT a FROM t");
        CU_ASSERT_FALSE(s->create_view.has_as_of);
        sql_stmt_free(s);

        for (size_t i = 0; i < ELEMENTSOF(durations); i++) {
                char sql[256];

                snprintf(sql, sizeof(sql), "CREATE MATERIALIZED VIEW m%s AS SELECT a FROM mv",
                         durations[i].with);
                s = analyze(sql);
                CU_ASSERT_EQUAL(s->create_view.retain_history_ms, durations[i].ms);
                expect_plan(s->create_view.plan, "Get 13");
                expect_inputs(s, "13", "13");
                CU_ASSERT_STRING_EQUAL(s->sql, sql);
                sql_stmt_free(s);
        }
        /* A join with an empty side drops the other input physically, not logically. */
        s = analyze("CREATE MATERIALIZED VIEW m AS SELECT t.a FROM t, "
                    "(SELECT * FROM (VALUES (1)) z (n) WHERE false) e WHERE t.a = e.n");
        expect_plan(s->create_view.plan, "Constant[int4](0)");
        expect_inputs(s, "10", "");
        sql_stmt_free(s);
        /* Views are inlined: inputs and plan are over storage collections. */
        s = analyze("CREATE MATERIALIZED VIEW m (n) AS SELECT a FROM v");
        expect_plan(s->create_view.plan, "Project[0](Filter[(#0 > 1)](Get 10))");
        expect_inputs(s, "10", "10");
        expect_ids(s->references, s->n_references, "12", "references");
        CU_ASSERT_STRING_EQUAL(s->create_view.columns[0].name, "n");
        sql_stmt_free(s);

        s = analyze("CREATE MATERIALIZED VIEW IF NOT EXISTS mv AS SELECT 1");
        CU_ASSERT_TRUE(s->create_view.exists);
        CU_ASSERT_TRUE(s->create_view.if_not_exists);
        CU_ASSERT_EQUAL(s->n_notices, 1);
        sql_stmt_free(s);

        /* Non-deterministic functions, directly and through a view. */
        expect_error("CREATE MATERIALIZED VIEW m AS SELECT now()", "0A000",
                     "cannot materialize call to now()", 38);
        expect_error("CREATE MATERIALIZED VIEW m AS SELECT a FROM t WHERE a > random()", "0A000",
                     "cannot materialize call to random()", -1);
        expect_error("CREATE MATERIALIZED VIEW m AS SELECT current_timestamp", "0A000",
                     "cannot materialize call to current_timestamp", -1);
        expect_error("CREATE MATERIALIZED VIEW m AS SELECT a FROM t WHERE mz_now() > 1", "0A000",
                     "cannot materialize call to mz_now()", -1);
        expect_error("CREATE MATERIALIZED VIEW m AS SELECT clock_timestamp() FROM t WHERE false",
                     "0A000", "cannot materialize call to clock_timestamp()", -1);
        expect_error_hint("CREATE MATERIALIZED VIEW m AS SELECT a FROM nd", "0A000",
                          "cannot materialize call to mz_now()", "The call is in view \"nd\".",
                          NULL);
        expect_error("CREATE MATERIALIZED VIEW m WITH (RETAIN HISTORY FOR 'soon') AS SELECT 1",
                     "22007", "invalid input syntax for type interval: \"soon\"", 53);
        expect_error("CREATE MATERIALIZED VIEW m WITH (RETAIN HISTORY FOR '0s') AS SELECT 1",
                     "22023", NULL, -1);
        expect_error("CREATE MATERIALIZED VIEW m WITH (fillfactor = 10) AS SELECT 1", "0A000",
                     NULL, -1);
        expect_error("CREATE MATERIALIZED VIEW m WITH (fillfactor = 10, RETAIN HISTORY FOR '1s') "
                     "AS SELECT 1", "0A000", "materialized view option \"fillfactor\" is not "
                     "supported", -1);
        expect_error("CREATE MATERIALIZED VIEW mv AS SELECT 1", "42P07", NULL, -1);
        expect_error("CREATE TABLE tt AS SELECT 1", "0A000", NULL, -1);

        /* REFRESH options: lifted on tokens among the others, in any order. */
        s = analyze("CREATE MATERIALIZED VIEW m WITH (REFRESH EVERY '1 day' ALIGNED TO 1000 + 5, "
                    "RETAIN HISTORY FOR '1s', REFRESH AT CREATION) AS SELECT a FROM mv");
        CU_ASSERT_TRUE(s->create_view.refresh.on);
        CU_ASSERT_TRUE(s->create_view.refresh.at_creation);
        CU_ASSERT_EQUAL(s->create_view.refresh.n_at, 0);
        CU_ASSERT_EQUAL(s->create_view.refresh.every_ms, 86400000);
        CU_ASSERT_EQUAL(s->create_view.retain_history_ms, 1000);
        CU_ASSERT_FATAL(s->create_view.refresh.aligned_to != NULL);
        CU_ASSERT_EQUAL(s->create_view.refresh.aligned_to->literal->int_value, 1005);
        CU_ASSERT_TRUE(s->create_view.deterministic);
        sql_stmt_free(s);
        /* mz_now() in a REFRESH time is the creation's (evaluated then), not the view's */
        s = analyze("CREATE MATERIALIZED VIEW m WITH (REFRESH AT mz_now() + 60000, REFRESH AT 7::int4) "
                    "AS SELECT a FROM t");
        CU_ASSERT_EQUAL_FATAL(s->create_view.refresh.n_at, 2);
        CU_ASSERT_EQUAL(s->create_view.refresh.at[0]->kind_case, COORD__PLAN__EXPR__KIND_CALL);
        CU_ASSERT_EQUAL(s->create_view.refresh.at[1]->type, COORD__PLAN__TYPE__TYPE_INT8);
        CU_ASSERT_TRUE(s->create_view.deterministic);
        sql_stmt_free(s);
        s = analyze("CREATE MATERIALIZED VIEW m WITH (REFRESH ON COMMIT) AS SELECT a FROM t");
        CU_ASSERT_FALSE(s->create_view.refresh.on);
        sql_stmt_free(s);
        /* what PostgreSQL still sees around lifted options is well formed */
        expect_error("CREATE MATERIALIZED VIEW m WITH (REFRESH AT CREATION, fillfactor = 10, "
                     "REFRESH AT coalesce(1, 2)) AS SELECT 1", "0A000",
                     "materialized view option \"fillfactor\" is not supported", -1);
        expect_error("CREATE MATERIALIZED VIEW m WITH (fillfactor = 10, REFRESH AT CREATION, "
                     "REFRESH EVERY '1s') AS SELECT 1", "0A000",
                     "materialized view option \"fillfactor\" is not supported", -1);
        expect_error("CREATE MATERIALIZED VIEW m WITH (REFRESH SOMETIMES) AS SELECT 1", "42601",
                     "syntax error in REFRESH option", 34);
        expect_error("CREATE MATERIALIZED VIEW m WITH (REFRESH AT 1 2) AS SELECT 1", "42601", NULL, -1);
        expect_error("CREATE MATERIALIZED VIEW m WITH (REFRESH EVERY '-1s') AS SELECT 1", "22007", NULL, -1);
        expect_error("CREATE MATERIALIZED VIEW m WITH (REFRESH EVERY '0 ms') AS SELECT 1", "22023", NULL, -1);
        expect_error("CREATE MATERIALIZED VIEW m WITH (REFRESH AT -5) AS SELECT 1", "22023", NULL, -1);
        expect_error("CREATE MATERIALIZED VIEW m WITH (REFRESH AT 'soon') AS SELECT 1", "22P02", NULL, -1);
        expect_error("CREATE MATERIALIZED VIEW m WITH (REFRESH AT CREATION) AS SELECT mz_now()", "0A000",
                     "cannot materialize call to mz_now()", -1);
        expect_error("CREATE MATERIALIZED VIEW m WITH (REFRESH ON COMMIT, REFRESH EVERY '1s') AS SELECT 1",
                     "42601", NULL, -1);
        expect_error("CREATE MATERIALIZED VIEW m AS SELECT a FROM t LIMIT 3", "0A000",
                     "LIMIT without ORDER BY in a view is not deterministic", -1);
}

static void test_create_index(void)
{
        struct sql_stmt *s = analyze("CREATE INDEX ON t (b, a)");

        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_CREATE_INDEX);
        CU_ASSERT_STRING_EQUAL(sql_stmt_tag(s), "CREATE INDEX");
        CU_ASSERT_STRING_EQUAL(s->create_index.name, "t_b_a_idx");
        CU_ASSERT_STRING_EQUAL(s->create_index.on_name, "t");
        CU_ASSERT_EQUAL(s->create_index.on_id, 10);
        CU_ASSERT_EQUAL(s->create_index.on_kind, SQL_OBJECT_TABLE);
        CU_ASSERT_FALSE(s->create_index.is_default);
        CU_ASSERT_EQUAL_FATAL(s->create_index.n_keys, 2);
        CU_ASSERT(s->create_index.keys[0] == 1 && s->create_index.keys[1] == 0);
        CU_ASSERT_EQUAL(s->create_index.n_columns, 4);
        expect_plan(s->create_index.plan, "Get 10");
        expect_inputs(s, "10", "10");
        sql_stmt_free(s);

        s = analyze("CREATE INDEX wi ON w (x)");
        CU_ASSERT_STRING_EQUAL(s->create_index.name, "wi");
        CU_ASSERT_EQUAL(s->create_index.on_kind, SQL_OBJECT_VIEW);
        CU_ASSERT(s->create_index.n_keys == 1 && s->create_index.keys[0] == 1);
        expect_plan(s->create_index.plan, "Join[0=0](Project[0](Filter[(#0 > 1)](Get 10)), Get 11)");
        expect_inputs(s, "10,11", "10,11");
        expect_ids(s->references, s->n_references, "15", "references");
        sql_stmt_free(s);

        s = analyze("CREATE DEFAULT INDEX ON t");
        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_CREATE_INDEX);
        CU_ASSERT_STRING_EQUAL(s->create_index.name, "t_primary_idx");
        CU_ASSERT_TRUE(s->create_index.is_default);
        CU_ASSERT_EQUAL(s->create_index.n_keys, 4);
        CU_ASSERT_STRING_EQUAL(s->sql, "CREATE DEFAULT INDEX ON t");
        sql_stmt_free(s);
        s = analyze("create default index if not exists \"My\" on public.mv");
        CU_ASSERT_STRING_EQUAL(s->create_index.name, "My");
        CU_ASSERT_TRUE(s->create_index.if_not_exists);
        CU_ASSERT_EQUAL(s->create_index.on_id, 13);
        expect_plan(s->create_index.plan, "Get 13");
        sql_stmt_free(s);
        s = analyze("CREATE INDEX IF NOT EXISTS i ON t (a)");
        CU_ASSERT_TRUE(s->create_index.exists);
        sql_stmt_free(s);

        expect_error("CREATE INDEX ON nd (a)", "0A000", "cannot materialize call to mz_now()", -1);
        expect_error("CREATE DEFAULT INDEX ON nd", "0A000", "cannot materialize call to mz_now()",
                     25);
        expect_error("CREATE INDEX ON t (q)", "42703", "column \"q\" does not exist", -1);
        expect_error("CREATE INDEX ON zz (a)", "42P01", "relation \"zz\" does not exist", 17);
        expect_error("CREATE DEFAULT INDEX ON zz", "42P01", "relation \"zz\" does not exist", 25);
        expect_error("CREATE INDEX ON i (a)", "42809", NULL, -1);
        expect_error("CREATE INDEX ON t ((a + 1))", "0A000", NULL, -1);
        expect_error("CREATE UNIQUE INDEX ON t (a)", "0A000", NULL, -1);
        expect_error("CREATE INDEX i ON t (a)", "42P07", NULL, -1);
        expect_error("CREATE DEFAULT INDEX ON t (a)", "42601", NULL, -1);

        /* A SELECT reads an indexed object from its index; definitions never do. */
        s = analyze("SELECT k FROM k WHERE k > 1");
        expect_plan(s->select.peek->plan, "Filter[(#0 > 1)](Get 18)");
        expect_inputs(s, "17", "18");
        sql_stmt_free(s);
        s = analyze("CREATE VIEW kv AS SELECT k FROM k");
        expect_plan(s->create_view.plan, "Get 17");
        sql_stmt_free(s);
        s = analyze("DELETE FROM k");
        expect_plan(s->delete_.plan, "Get 17");
        expect_inputs(s, "17", "17");
        sql_stmt_free(s);
}

static void test_drop_kinds(void)
{
        static const struct {
                const char *sql, *tag;
                enum sql_object_kind kind;
                uint64_t id;
        } ok[] = {
                { "DROP VIEW v", "DROP VIEW", SQL_OBJECT_VIEW, 12 },
                { "DROP MATERIALIZED VIEW mv CASCADE", "DROP MATERIALIZED VIEW",
                  SQL_OBJECT_MATERIALIZED_VIEW, 13 },
                { "DROP INDEX i RESTRICT", "DROP INDEX", SQL_OBJECT_INDEX, 14 },
                { "DROP TABLE IF EXISTS t", "DROP TABLE", SQL_OBJECT_TABLE, 10 },
        };
        struct sql_stmt *s;

        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                s = analyze(ok[i].sql);
                CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_DROP);
                CU_ASSERT_STRING_EQUAL(sql_stmt_tag(s), ok[i].tag);
                CU_ASSERT_EQUAL(s->drop.kind, ok[i].kind);
                CU_ASSERT(s->drop.n_objects == 1 && s->drop.ids[0] == ok[i].id);
                sql_stmt_free(s);
        }
        s = analyze("DROP VIEW IF EXISTS zz, w");
        CU_ASSERT(s->drop.ids[0] == 0 && s->drop.ids[1] == 15);
        CU_ASSERT_EQUAL_FATAL(s->n_notices, 1);
        CU_ASSERT_STRING_EQUAL(s->notices[0].message, "view \"zz\" does not exist, skipping");
        sql_stmt_free(s);
        s = analyze("DROP MATERIALIZED VIEW IF EXISTS zz");
        CU_ASSERT_STRING_EQUAL(s->notices[0].message,
                               "materialized view \"zz\" does not exist, skipping");
        sql_stmt_free(s);

        expect_error_hint("DROP VIEW t", "42809", "\"t\" is not a view", NULL,
                          "Use DROP TABLE to remove a table.");
        expect_error_hint("DROP INDEX t", "42809", "\"t\" is not an index", NULL,
                          "Use DROP TABLE to remove a table.");
        expect_error_hint("DROP TABLE i", "42809", "\"i\" is not a table", NULL,
                          "Use DROP INDEX to remove an index.");
        expect_error_hint("DROP VIEW mv", "42809", "\"mv\" is not a view", NULL,
                          "Use DROP MATERIALIZED VIEW to remove a materialized view.");
        expect_error("DROP VIEW zz", "42P01", "view \"zz\" does not exist", -1);
        expect_error("DROP INDEX zz", "42P01", "index \"zz\" does not exist", -1);
}

static void expect_show_objects(const char *sql, enum sql_object_kind kind)
{
        struct sql_stmt *s = analyze(sql);

        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_SHOW_OBJECTS);
        CU_ASSERT_FALSE(s->show_objects.all);
        CU_ASSERT_EQUAL(s->show_objects.kind, kind);
        CU_ASSERT_STRING_EQUAL(sql_stmt_tag(s), "SHOW");
        sql_stmt_free(s);
}

static void test_show_kinds(void)
{
        expect_show_objects("SHOW VIEWS", SQL_OBJECT_VIEW);
        expect_show_objects("SHOW MATERIALIZED VIEWS", SQL_OBJECT_MATERIALIZED_VIEW);
        expect_show_objects("show materialized views", SQL_OBJECT_MATERIALIZED_VIEW);
        expect_show_objects("SHOW INDEXES", SQL_OBJECT_INDEX);
        expect_show_objects("SHOW TABLES", SQL_OBJECT_TABLE);
}

/* The plan of sql has no Join without keys (a cross product). */
static void expect_no_cross_product(const char *sql)
{
        struct sql_stmt *s = analyze(sql);
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        CU_ASSERT_FATAL(f != NULL);
        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_SELECT);
        explain_rel(f, s->select.peek->plan);
        fclose(f);
        if (strstr(buf, "Join[]")) {
                fprintf(stderr, "\n  plan with a cross product: %s\n", buf);
                CU_FAIL("cross product");
        }
        CU_ASSERT_PTR_NOT_NULL(strstr(buf, "Join["));
        free(buf);
        sql_stmt_free(s);
}

static void test_joins(void)
{
        struct sql_stmt *s = analyze("SELECT * FROM t JOIN u ON t.a = u.x");

        expect_plan(s->select.peek->plan, "Join[0=0](Get 10, Get 11)");
        CU_ASSERT_EQUAL(s->select.peek->n_columns, 5);
        CU_ASSERT_STRING_EQUAL(s->select.peek->columns[4]->name, "x");
        expect_inputs(s, "10,11", "10,11");
        sql_stmt_free(s);

        /* Comma joins: WHERE equalities become keys, one-sided predicates go down. */
        expect_select_plan("SELECT t.b, u.x FROM t, u WHERE t.a = u.x AND t.b = 'k' AND u.x > 1",
                           "Project[1,4](Join[0=0](Filter[(#1 = 'k')](Get 10), "
                           "Filter[(#0 > 1::int8)](Get 11)))");
        expect_select_plan("SELECT * FROM t, u", "Join[](Get 10, Get 11)");
        expect_select_plan("SELECT * FROM t CROSS JOIN u", "Join[](Get 10, Get 11)");
        expect_select_plan("SELECT * FROM t JOIN u ON t.a < u.x",
                           "Filter[(CAST(#0 AS int8) < #4)](Join[](Get 10, Get 11))");
        /* Three ways, aliases, keys at both levels. */
        expect_select_plan("SELECT p.b, q.b FROM t p JOIN t q ON p.a = q.a JOIN u ON q.d = u.x",
                           "Project[1,5](Join[7=0](Join[0=0](Get 10, Get 10), Get 11))");
        expect_select_plan("SELECT p.b FROM t p, t q, u WHERE p.a = q.a AND u.x = q.d AND p.c",
                           "Project[1](Join[7=0](Join[0=0](Filter[#2](Get 10), Get 10), Get 11))");
        /* Join order (issue 36): never a cross product where an equality connects the
         * items; the columns keep the written order. */
        expect_select_plan("SELECT p.b, u.x, q.b FROM t p, u, t q WHERE p.a = q.a AND u.x = q.d",
                           "Project[1,8,5](Join[7=0](Join[0=0](Get 10, Get 10), Get 11))");
        expect_select_plan("SELECT * FROM t p, u, t q WHERE p.a = q.a AND u.x = q.d AND p.b = 'k'",
                           "Project[0,1,2,3,8,4,5,6,7](Join[7=0](Join[0=0](Filter[(#1 = 'k')]"
                           "(Get 10), Get 10), Get 11))");
        expect_select_plan("SELECT u.x FROM t p, u, t q WHERE p.a = q.a",
                           "Project[8](Join[](Join[0=0](Get 10, Get 10), Get 11))");
        expect_select_plan("SELECT count(*) FROM t p, u, t q WHERE p.a = q.a AND false",
                           "Constant[int8](1)");
        expect_no_cross_product("SELECT count(*) FROM t j1, t j3, t j5, t j7, t j9, t j11, t j13, "
                                "t j2, t j4, t j6, t j8, t j10, t j12 WHERE j1.d = j2.a AND "
                                "j2.d = j3.a AND j3.d = j4.a AND j4.d = j5.a AND j5.d = j6.a AND "
                                "j6.d = j7.a AND j7.d = j8.a AND j8.d = j9.a AND j9.d = j10.a AND "
                                "j10.d = j11.a AND j11.d = j12.a AND j12.d = j13.a");
        expect_no_cross_product("SELECT j1.b FROM t j1, t j3 JOIN t j4 ON j3.d = j4.a, t j2 "
                                "WHERE j1.d = j2.a AND j2.d = j3.a");
        /* In a view too (its stored plan), and through it. */
        s = analyze("CREATE VIEW vj AS SELECT p.a, q.b FROM t p, u, t q WHERE p.a = q.a AND u.x = q.d");
        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_CREATE_VIEW);
        expect_plan(s->create_view.plan, "Project[0,5](Join[7=0](Join[0=0](Get 10, Get 10), Get 11))");
        sql_stmt_free(s);
        /* USING: one column for both sides, first in *. */
        s = analyze("SELECT * FROM t JOIN v USING (a)");
        expect_plan(s->select.peek->plan,
                    "Project[0,1,2,3](Join[0=0](Get 10, Project[0](Filter[(#0 > 1)](Get 10))))");
        CU_ASSERT_EQUAL(s->select.peek->n_columns, 4);
        sql_stmt_free(s);
        expect_select_plan("SELECT v.a, t.a, a FROM t JOIN v USING (a)",
                           "Project[4,0,0](Join[0=0](Get 10, Project[0](Filter[(#0 > 1)](Get 10))))");
        expect_select_plan("SELECT * FROM u JOIN w USING (x)",
                           "Project[0,1](Join[0=1](Get 11, Join[0=0](Project[0](Filter[(#0 > 1)]"
                           "(Get 10)), Get 11)))");

        expect_error("SELECT a FROM t, v", "42702", "column reference \"a\" is ambiguous", 8);
        expect_error("SELECT * FROM t, t", "42712", "table name \"t\" specified more than once", -1);
        expect_error("SELECT * FROM t JOIN v USING (q)", "42703",
                     "column \"q\" specified in USING clause does not exist in left table", -1);
        expect_error("SELECT * FROM t JOIN u ON a", "42804", NULL, -1);
        expect_error("SELECT * FROM t JOIN u ON t.b = u.x", "42883", NULL, -1);
        expect_error("SELECT * FROM t JOIN u ON count(*) > 1", "42803",
                     "aggregate functions are not allowed in JOIN conditions", -1);
        /* NATURAL: USING the common names; none in common: a cross join. */
        expect_select_plan("SELECT * FROM t NATURAL JOIN v",
                           "Project[0,1,2,3](Join[0=0](Get 10, Project[0](Filter[(#0 > 1)](Get 10))))");
        expect_select_plan("SELECT * FROM u NATURAL JOIN k", "Join[](Get 11, Get 18)");
        /* FULL JOIN ... USING: COALESCE of both sides, first in *. */
        s = analyze("SELECT * FROM t FULL JOIN v USING (a)");
        CU_ASSERT(plan_starts(s->select.peek->plan, "Project[5,1,2,3](Map[COALESCE(#0, #4)]("));
        sql_stmt_free(s);
        /* USING (...) AS j: j names the merged column alone. */
        expect_select_plan("SELECT j.x, u.x FROM u JOIN w USING (x) AS j",
                           "Project[3,0](Map[#0](Join[0=1](Get 11, Join[0=0](Project[0](Filter[(#0 > 1)]"
                           "(Get 10)), Get 11))))");
        expect_error("SELECT j.a FROM u JOIN w USING (x) AS j", "42703", NULL, -1);
        expect_error("SELECT * FROM t JOIN v USING (a) AS t", "42712",
                     "table name \"t\" specified more than once", -1);
        expect_error("SELECT q.a FROM t p", "42P01", "missing FROM-clause entry for table \"q\"", 8);
}

static void test_group_by(void)
{
        struct sql_stmt *s = analyze("SELECT b, count(*), sum(a), min(d), max(b), count(c) "
                                     "FROM t GROUP BY b");
        static const char *const names[] = { "b", "count", "sum", "min", "max", "count" };

        expect_plan(s->select.peek->plan,
                    "Reduce[#1; count(*)::int8 sum(#0)::int8 min(#3)::int8 max(#1)::text "
                    "count(#2)::int8](Get 10)");
        CU_ASSERT_EQUAL_FATAL(s->select.peek->n_columns, 6);
        for (size_t i = 0; i < 6; i++)
                CU_ASSERT_STRING_EQUAL(s->select.peek->columns[i]->name, names[i]);
        CU_ASSERT_FALSE(s->select.peek->columns[1]->nullable);
        CU_ASSERT_TRUE(s->select.peek->columns[2]->nullable);
        CU_ASSERT_EQUAL(s->select.peek->columns[4]->type, ROW_TYPE_TEXT);
        sql_stmt_free(s);

        expect_select_plan("SELECT count(*) FROM t", "Reduce[; count(*)::int8](Get 10)");
        expect_select_plan("SELECT sum(a) + 1, sum(a) FROM t",
                           "Project[1,0](Map[(#0 + 1::int8)](Reduce[; sum(#0)::int8](Get 10)))");
        expect_select_plan("SELECT b FROM t GROUP BY b HAVING count(*) > 1",
                           "Project[0](Filter[(#1 > 1::int8)](Reduce[#1; count(*)::int8](Get 10)))");
        expect_select_plan("SELECT a % 2, count(b) FROM t GROUP BY a % 2",
                           "Reduce[#4; count(#1)::int8](Map[(#0 % 2)](Get 10))");
        expect_select_plan("SELECT a % 2 AS p, max(d + 1) FROM t GROUP BY p",
                           "Reduce[#4; max(#5)::int8](Map[(#0 % 2), (#3 + 1::int8)](Get 10))");
        expect_select_plan("SELECT b, count(*) FROM t GROUP BY 1",
                           "Reduce[#1; count(*)::int8](Get 10)");
        expect_select_plan("SELECT c FROM t GROUP BY c, b", "Project[0](Reduce[#2,#1;](Get 10))");
        expect_select_plan("SELECT t.b, count(u.x) FROM t JOIN u ON t.a = u.x GROUP BY t.b",
                           "Reduce[#1; count(#4)::int8](Join[0=0](Get 10, Get 11))");
        /* Nothing to aggregate: one default row without keys, no rows with keys. */
        expect_select_plan("SELECT count(*), sum(a) FROM t WHERE false", "Constant[int8,int8](1)");
        expect_select_plan("SELECT b, count(*) FROM t WHERE false GROUP BY b",
                           "Constant[text,int8](0)");

        expect_error("SELECT a, count(*) FROM t", "42803",
                     "column \"t.a\" must appear in the GROUP BY clause or be used in an "
                     "aggregate function", -1);
        expect_error("SELECT a FROM t GROUP BY b", "42803", NULL, -1);
        expect_error("SELECT b FROM t GROUP BY b HAVING a > 1", "42803", NULL, -1);
        expect_error("SELECT a FROM t WHERE count(*) > 1", "42803",
                     "aggregate functions are not allowed in WHERE", 23);
        expect_error("SELECT a FROM t GROUP BY count(*)", "42803",
                     "aggregate functions are not allowed in GROUP BY", -1);
        expect_error("SELECT sum(count(*)) FROM t", "42803",
                     "aggregate function calls cannot be nested", -1);
        expect_error("SELECT sum(b) FROM t", "42883", "function sum(text) does not exist", 8);
        expect_error("SELECT count(DISTINCT a) FROM t", "0A000", NULL, -1);
        expect_error("SELECT b FROM t GROUP BY 3", "42P10", NULL, -1);
        expect_error("SELECT a AS z, b AS z FROM t GROUP BY z", "42702", "GROUP BY \"z\" is ambiguous", 39);
        expect_error("SELECT a AS b FROM t GROUP BY b", "42803", NULL, -1);    /* FROM's b first */
}

static void test_distinct_union_values(void)
{
        struct sql_stmt *s;

        expect_select_plan("SELECT DISTINCT b FROM t", "Distinct(Project[1](Get 10))");
        expect_select_plan("SELECT a FROM t UNION ALL SELECT x FROM u",
                           "Union(Project[1](Map[CAST(#0 AS int8)](Project[0](Get 10))), Get 11)");
        expect_select_plan("SELECT b FROM t UNION SELECT b FROM t WHERE a > 1",
                           "Distinct(Union(Project[1](Get 10), Project[1](Filter[(#0 > 1)](Get 10))))");
        /* An empty input goes; with one input left, the Union goes too. */
        expect_select_plan("SELECT a FROM t UNION ALL SELECT a FROM t WHERE false",
                           "Project[0](Get 10)");
        expect_select_plan("SELECT 1 WHERE false UNION ALL SELECT 2 WHERE false",
                           "Constant[int4](0)");

        s = analyze("VALUES (1, 'a'), (2, NULL)");
        expect_plan(s->select.peek->plan, "Constant[int4,text](2)");
        CU_ASSERT_EQUAL_FATAL(s->select.peek->n_columns, 2);
        CU_ASSERT_STRING_EQUAL(s->select.peek->columns[0]->name, "column1");
        CU_ASSERT_STRING_EQUAL(s->select.peek->columns[1]->name, "column2");
        CU_ASSERT_FALSE(s->select.peek->columns[0]->nullable);
        CU_ASSERT_TRUE(s->select.peek->columns[1]->nullable);
        expect_inputs(s, "", "");
        sql_stmt_free(s);
        expect_select_plan("VALUES (1), (mz_now())",
                           "Union(Map[1::int8](Constant(1)), Map[mz_now()](Constant(1)))");
        expect_select_plan("SELECT * FROM (VALUES (1), (2)) AS z (n) WHERE n > 1",
                           "Filter[(#0 > 1)](Constant[int4](2))");
        expect_select_plan("SELECT column2 FROM (VALUES (1, true)) z", "Project[1](Constant[int4,bool](1))");

        expect_error("SELECT a FROM t UNION SELECT a, b FROM t", "42601",
                     "each UNION query must have the same number of columns", -1);
        expect_error("SELECT a FROM t UNION SELECT b FROM t", "42804",
                     "UNION types integer and text cannot be matched", -1);
        {
                /* An arm's untyped literal takes the other arm's type, as in PostgreSQL. */
                struct sql_stmt *u = analyze("SELECT a FROM t UNION ALL SELECT NULL");

                CU_ASSERT_EQUAL(u->select.peek->columns[0]->type, ROW_TYPE_INT4);
                sql_stmt_free(u);
                u = analyze("SELECT '4' UNION SELECT d FROM t");
                CU_ASSERT_EQUAL(u->select.peek->columns[0]->type, ROW_TYPE_INT8);
                sql_stmt_free(u);
        }
        expect_error("SELECT a FROM t UNION SELECT 'x'::text", "42804",
                     "UNION types integer and text cannot be matched", -1);
        expect_error("SELECT NULL UNION SELECT NULL UNION SELECT a FROM t", "42804",
                     "UNION types text and integer cannot be matched", -1);
        expect_error("VALUES (1), (1, 2)", "42601", "VALUES lists must all be the same length", -1);
        expect_error("VALUES (1), ('x')", "22P02", NULL, -1);
        expect_error("VALUES (1), (true)", "42804", "VALUES types integer and boolean cannot be matched",
                     -1);
        expect_error("SELECT DISTINCT ON (a) a FROM t", "0A000", NULL, -1);
}

/* WITH queries are inlined where referenced, planned in their clause's context. */
static void test_with(void)
{
        expect_select_plan("WITH c AS (SELECT a FROM t WHERE a > 1) SELECT c.a FROM c, c AS d "
                           "WHERE c.a = d.a",
                           "Project[0](Join[0=0](Project[0](Filter[(#0 > 1)](Get 10)), "
                           "Project[0](Filter[(#0 > 1)](Get 10))))");
        expect_select_plan("WITH c(k) AS (SELECT a, b FROM t), d AS (SELECT k FROM c) "
                           "SELECT k, b FROM c JOIN d USING (k)",
                           "Project[0,1](Join[0=0](Project[0,1](Get 10), Project[0](Get 10)))");
        /* A WITH query hides a table of its name; a qualified name is the table. */
        expect_select_plan("WITH t AS (SELECT 1 AS q) SELECT q FROM t", "Map[1](Constant(1))");
        expect_select_plan("WITH t AS (SELECT 1 AS q) SELECT a FROM public.t", "Project[0](Get 10)");
        expect_error("WITH c AS (SELECT 1 AS q) SELECT * FROM public.c", "42P01",
                     "relation \"public.c\" does not exist", 41);
        expect_error("WITH x(a, b, c) AS (SELECT 1, 2) SELECT * FROM x", "42P10",
                     "WITH query \"x\" has 2 columns available but 3 columns specified", 6);
        expect_error("WITH x AS (SELECT 1), x AS (SELECT 2) SELECT * FROM x", "42712",
                     "WITH query name \"x\" specified more than once", 23);
        expect_error("WITH x AS (SELECT * FROM y), y AS (SELECT 1) SELECT * FROM x", "42P01",
                     "relation \"y\" does not exist", 26);
        expect_error("WITH x AS (SELECT * FROM x) SELECT * FROM x", "42P01", NULL, 26);
        /* Its names bind in the clause's context, never the reference's. */
        expect_error("WITH c AS (SELECT b) SELECT (SELECT * FROM c) FROM t", "42703",
                     "column \"b\" does not exist", 19);
        expect_error("SELECT (WITH c AS (SELECT t.a) SELECT * FROM c) FROM t", "0A000", NULL, -1);
        /* Errors of an unused query are reported. */
        expect_error("WITH u AS (SELECT nosuch FROM t) SELECT 1", "42703", NULL, -1);
        expect_error("WITH RECURSIVE r(n) AS (SELECT 1) SELECT * FROM r", "0A000",
                     "WITH RECURSIVE is not supported", 1);
        expect_error("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "0A000",
                     "data-modifying statements in WITH are not supported", 6);
        /* Before DELETE and UPDATE: seen by the WHERE's subqueries; the target is the
         * table even when a WITH query has its name. */
        {
                struct sql_stmt *st = analyze("WITH t AS (SELECT 1 AS a) DELETE FROM t WHERE a IN "
                                              "(SELECT a FROM t)");

                CU_ASSERT_EQUAL_FATAL(st->kind, SQL_STMT_DELETE);
                CU_ASSERT_EQUAL(st->delete_.id, 10);
                sql_stmt_free(st);
        }
        expect_error("WITH m AS (SELECT a FROM mv) UPDATE t SET b = 'x' WHERE a IN (SELECT a FROM m)",
                     "0A000", NULL, -1);
        /* Inlining is bounded: a query read twice by the next, 20 deep, would be planned
         * 2^20 times. */
        {
                char q[4096];
                int n = snprintf(q, sizeof(q), "WITH a1 AS (SELECT 1 AS x)");

                for (int i = 2; i <= 20; i++)
                        n += snprintf(q + n, sizeof(q) - (size_t)n,
                                      ", a%d AS (SELECT p.x FROM a%d p, a%d q)", i, i - 1, i - 1);
                snprintf(q + n, sizeof(q) - (size_t)n, " SELECT count(*) FROM a20");
                expect_error(q, "54001", NULL, -1);
        }
}

static void test_subquery(void)
{
        struct sql_stmt *s = analyze("SELECT s.m FROM (SELECT a + 1 AS m FROM t) s WHERE s.m > 2");

        expect_plan(s->select.peek->plan, "Filter[(#0 > 2)](Project[4](Map[(#0 + 1)](Get 10)))");
        CU_ASSERT_STRING_EQUAL(s->select.peek->columns[0]->name, "m");
        sql_stmt_free(s);
        expect_select_plan("SELECT n, count(*) FROM (SELECT b AS n FROM t) q (n) GROUP BY n",
                           "Reduce[#0; count(*)::int8](Project[1](Get 10))");
        expect_select_plan("SELECT * FROM (SELECT b, count(*) AS c FROM t GROUP BY b) g WHERE c > 2",
                           "Filter[(#1 > 2::int8)](Reduce[#1; count(*)::int8](Get 10))");
        expect_select_plan("SELECT * FROM (SELECT b FROM t) s", "Project[1](Get 10)");
        expect_error("SELECT * FROM (SELECT b FROM t)", "42601", NULL, -1);  /* PostgreSQL 15 */
        expect_error("SELECT * FROM (SELECT a FROM t LIMIT 1) s", "0A000",
                     "LIMIT without ORDER BY in a subquery is not deterministic", -1);
        expect_error("SELECT s.q FROM (SELECT a FROM t) s", "42703", "column s.q does not exist", -1);

        /* Join aliases: the join's columns under one name, its tables' names hidden. */
        s = analyze("SELECT * FROM (t JOIN u ON t.d = u.x) AS j (p, q)");
        CU_ASSERT_EQUAL_FATAL(s->select.peek->n_columns, 5);
        CU_ASSERT_STRING_EQUAL(s->select.peek->columns[0]->name, "p");
        CU_ASSERT_STRING_EQUAL(s->select.peek->columns[1]->name, "q");
        CU_ASSERT_STRING_EQUAL(s->select.peek->columns[4]->name, "x");
        sql_stmt_free(s);
        expect_select_plan("SELECT j.x FROM (t JOIN u ON t.d = u.x) AS j", "Project[4](Join[3=0](Get 10, Get 11))");
        expect_error("SELECT t.a FROM (t JOIN u ON t.d = u.x) AS j", "42P01", NULL, -1);
        expect_error("SELECT * FROM (t JOIN t AS t2 USING (a)) AS j (a, b, c, d, e, f, g, h)", "42P10", NULL, -1);
        expect_error("SELECT j.b FROM (t JOIN t AS t2 ON t.a = t2.a) AS j", "42702", NULL, -1);
        expect_select_plan("SELECT j.a FROM (t JOIN t AS t2 USING (a)) AS j", "Project[0](Join[0=0](Get 10, Get 10))");
}

/* Subqueries in expressions: attached columns (adapter-sql-subquery.c "Subqueries"). */
static void test_sublink(void)
{
        struct sql_stmt *s;

        /* Uncorrelated EXISTS: a Reduce without keys joined to every row. */
        expect_select_plan("SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u)",
                           "Project[0](Filter[#5](Map[(#4 > 0::int8)](Join[](Get 10, "
                           "Reduce[; count(*)::int8](Project[1](Map[1](Get 11)))))))");
        /* The FROM's equalities still become join keys under a subquery in WHERE. */
        expect_select_plan("SELECT t.a FROM t, u WHERE t.d = u.x AND t.a IN (SELECT a FROM v)",
                           "Project[0](Filter[#6](Map[(#5 IS NOT NULL)](Project[0,1,2,3,4,6](Join[0=0]("
                           "Join[3=0](Get 10, Get 11), Reduce[#0; max(#1)::int4](Union("
                           "Map[NULL::int4](Project[0](Join[3=0](Get 10, Get 11))), Project[0,2](Join[0=0]("
                           "Project[0](Join[3=0](Get 10, Get 11)), Distinct(Map[1](Project[0](Filter[(#0 > 1)]"
                           "(Get 10)))))))))))))");
        /* Correlated: the key is t.a, not NULL (no NULL-safe pair). */
        expect_select_plan("SELECT a FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.x = t.a)",
                           "Project[0](Filter[NOT #5](Map[(#4 IS NOT NULL)](Project[0,1,2,3,5](Join[0=0]("
                           "Get 10, Reduce[#0; max(#1)::int4](Union(Map[NULL::int4](Project[0](Get 10)), "
                           "Project[0,2](Join[0=0](Project[0](Get 10), Distinct(Project[1,2](Map[1]("
                           "Project[1,0](Map[1](Get 11))))))))))))))");
        /* An aggregate without GROUP BY over no rows: count 0, not NULL (the default row,
         * joined without keys); a nullable key joins NULL-safely. */
        expect_select_plan("SELECT a, (SELECT count(*) FROM u WHERE u.x = t.d) FROM t",
                           "Project[0,7](Map[CASE((#5 IS NULL), #4, (#5 > 1::int8), TOO_MANY_ROWS(), #6)](Project["
                           "0,1,2,3,4,8,9](Join[5=3,6=4](Map[COALESCE(#3, 0::int8), (#3 IS NULL)](Join[]("
                           "Get 10, Reduce[; max(#0)::int8](Constant[int8](1)))), Map[COALESCE(#0, 0::int8), "
                           "(#0 IS NULL)](Reduce[#0; max(#1)::int8 max(#2)::int8](Union(Map[NULL::int8, "
                           "NULL::int8](Project[3](Get 10)), Project[0,2,3](Join[0=0](Project[3](Get 10), "
                           "Reduce[#0; count(*)::int8 max(#1)::int8](Reduce[#0; count(*)::int8](Get 11)))))"
                           "))))))");
        s = analyze("SELECT a, (SELECT max(x) FROM u) FROM t");
        CU_ASSERT_STRING_EQUAL(s->select.peek->columns[1]->name, "max");
        sql_stmt_free(s);
        s = analyze("SELECT EXISTS (SELECT 1 FROM u)");
        CU_ASSERT_STRING_EQUAL(s->select.peek->columns[0]->name, "exists");
        sql_stmt_free(s);

        expect_error("SELECT a FROM t WHERE a IN (SELECT a, b FROM t)", "42601",
                     "subquery has too many columns", -1);
        expect_error("SELECT a FROM t WHERE a = (SELECT a, b FROM t)", "42601",
                     "subquery must return only one column", -1);
        expect_error("SELECT a FROM t WHERE b IN (SELECT a FROM t)", "42883",
                     "operator does not exist: text = integer", -1);
        sql_stmt_free(analyze("SELECT a FROM t WHERE a < ANY (SELECT a FROM t)"));
        sql_stmt_free(analyze("SELECT a FROM t WHERE a > ALL (SELECT d FROM t)"));
        expect_error("SELECT a FROM t WHERE a > ALL (SELECT b FROM t)", "42883",
                     "operator does not exist: integer > text", -1);
        expect_error("SELECT a FROM t WHERE b ~~ ANY (SELECT b FROM t)", "0A000", NULL, -1);
        expect_error("SELECT a FROM t WHERE (a, b) IN (SELECT a, b FROM t)", "0A000", NULL, -1);
        /* Correlation other than equalities in WHERE: the domain D = Distinct(t.a) joined to
         * the subquery's FROM, the WHERE a filter over the product, D's column the key;
         * T joins A NULL-safely on it (the Maps of COALESCE and IS NULL on both sides). */
        expect_select_plan("SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.x > t.a)",
                           "Project[0](Filter[#5](Map[(#4 IS NOT NULL)](Project[0,1,2,3,5](Join[0=0]("
                           "Get 10, Reduce[#0; max(#1)::int4](Union(Map[NULL::int4](Project[0](Get 10)), "
                           "Project[0,4](Join[1=2,2=3](Map[COALESCE(#0, 0), (#0 IS NULL)](Project[0](Get 10)), "
                           "Map[COALESCE(#0, 0), (#0 IS NULL)](Distinct(Project[1,2](Map[1](Project[2,1](Map[1]("
                           "Filter[(#0 > CAST(#1 AS int8))](Join[](Get 11, Distinct(Project[0](Get 10)))))))"
                           "))))))))))))");
        sql_stmt_free(analyze("SELECT a FROM t WHERE EXISTS (SELECT t.a FROM u)"));
        sql_stmt_free(analyze("SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.x = t.a OR u.x = 1)"));
        sql_stmt_free(analyze("SELECT a, (SELECT u.x + t.a FROM u WHERE u.x = t.d) FROM t"));
        sql_stmt_free(analyze("SELECT a, (SELECT max(u.x) FROM u WHERE u.x = t.a AND u.x < t.d) FROM t"));
        sql_stmt_free(analyze("SELECT a, a > ALL (SELECT x FROM u WHERE u.x <> t.d) FROM t"));
        sql_stmt_free(analyze("SELECT a FROM t WHERE a IN (SELECT x FROM u WHERE u.x >= t.d)"));
        /* An aggregate without GROUP BY over the domain: its value over no rows per outer
         * row, the list with count 0 and D's columns read from the outer row. */
        expect_select_plan("SELECT a, (SELECT count(*) + t.a FROM u WHERE u.x > t.a) FROM t",
                           "Project[0,6](Map[CASE((#4 IS NULL), (0::int8 + CAST(#0 AS int8)), (#4 > 1::int8), TO"
                           "O_MANY_ROWS(), #5)](Project[0,1,2,3,5,6](Join[0=0](Get 10, Reduce[#0; max(#1)::int8 "
                           "max(#2)::int8](Union(Map[NULL::int8, NULL::int8](Project[0](Get 10)), Project[0,4,5]"
                           "(Join[1=3,2=4](Map[COALESCE(#0, 0), (#0 IS NULL)](Project[0](Get 10)), Map[COALESCE("
                           "#0, 0), (#0 IS NULL)](Reduce[#0; count(*)::int8 max(#1)::int8](Project[0,2](Map[(#1 "
                           "+ CAST(#0 AS int8))](Reduce[#1; count(*)::int8](Filter[(#0 > CAST(#1 AS int8))](Join"
                           "[](Get 11, Distinct(Project[0](Get 10)))))))))))))))))");
        /* EXISTS over such an aggregate is true; IN and ANY/ALL compare with its one value. */
        expect_select_plan("SELECT a, EXISTS (SELECT count(*) FROM u WHERE u.x = t.a) FROM t",
                           "Project[0,4](Map[true](Get 10))");
        expect_select_plan("SELECT a, 0 IN (SELECT count(*) FROM u WHERE u.x = t.a) FROM t",
                           "Project[0,8](Map[(0::int8 = #7)](Map[CASE((#5 IS NULL), #4, (#5 > 1::int8), TOO_MANY"
                           "_ROWS(), #6)](Project[0,1,2,3,4,6,7](Join[0=0](Join[](Get 10, Reduce[; max(#0)::int8"
                           "](Constant[int8](1))), Reduce[#0; max(#1)::int8 max(#2)::int8](Union(Map[NULL::int8,"
                           " NULL::int8](Project[0](Get 10)), Project[0,2,3](Join[0=0](Project[0](Get 10), Reduc"
                           "e[#0; count(*)::int8 max(#1)::int8](Reduce[#0; count(*)::int8](Get 11)))))))))))");
        /* Still refused: a reference from a subquery in the subquery's FROM (LATERAL), two
         * levels out, in a correlated aggregate's list outside its aggregates, HAVING in
         * one, and where the rows give no domain (a DELETE's WHERE, a UNION's arm). */
        expect_error("SELECT a FROM t WHERE EXISTS (SELECT 1 FROM (SELECT x FROM u WHERE x > t.a) s)",
                     "0A000", "a subquery in the FROM of a subquery may not refer to column \"a\" of an "
                     "enclosing query (LATERAL): not supported", -1);
        expect_error("SELECT a, (SELECT count(*) + (SELECT max(x) FROM u) FROM u WHERE u.x > t.a) FROM t",
                     "0A000", "a correlated subquery with aggregates and without GROUP BY whose list "
                     "reads a subquery's column is not supported", -1);
        expect_error("SELECT a, (SELECT count(*) FROM u WHERE u.x > t.a HAVING count(*) > 1) FROM t",
                     "0A000", NULL, -1);
        expect_error("DELETE FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.x > t.a)", "0A000",
                     "a subquery may refer to the query it is in only in equalities (inner = outer) "
                     "joined by AND in its WHERE", -1);
        expect_error("SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.x = t.a UNION SELECT 1)",
                     "0A000", "a subquery with UNION, INTERSECT, EXCEPT or VALUES may not refer to "
                     "column \"a\" of the query it is in: not supported", -1);
        expect_error("SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE EXISTS "
                     "(SELECT 1 FROM v WHERE v.a = t.a))", "0A000", NULL, -1);
        expect_error("SELECT a FROM t WHERE EXISTS (SELECT 1 FROM (SELECT * FROM u WHERE x = t.a) s)",
                     "0A000", NULL, -1);
        expect_error("SELECT a, (SELECT count(*) FROM u WHERE u.x = t.d HAVING count(*) > 1) FROM t",
                     "0A000", NULL, -1);
        /* Uncorrelated subqueries in a grouped SELECT's list and HAVING: after the Reduce. */
        s = analyze("SELECT b, count(*), (SELECT max(x) FROM u) AS mx, EXISTS (SELECT 1 FROM u WHERE x > 100) "
                    "FROM t GROUP BY b ORDER BY b");
        expect_plan(s->select.peek->plan,
                    "Project[0,1,4,6](Map[(#5 > 0::int8)](Join[](Map[CASE((#2 > 1::int8), TOO_MANY_ROWS(), #3)]("
                    "Join[](Reduce[#1; count(*)::int8](Get 10), Reduce[; count(*)::int8 max(#0)::int8](Reduce[; "
                    "max(#0)::int8](Get 11)))), Reduce[; count(*)::int8](Project[1](Map[1](Filter[(#0 > 100::int8)]"
                    "(Get 11)))))))");
        CU_ASSERT_STRING_EQUAL(s->select.peek->columns[2]->name, "mx");
        CU_ASSERT_STRING_EQUAL(s->select.peek->columns[3]->name, "exists");
        sql_stmt_free(s);
        expect_select_plan("SELECT b FROM t GROUP BY b HAVING count(*) > (SELECT count(*) FROM u)",
                           "Project[0](Filter[(#1 > #4)](Map[CASE((#2 > 1::int8), TOO_MANY_ROWS(), #3)](Join[]("
                           "Reduce[#1; count(*)::int8](Get 10), Reduce[; count(*)::int8 max(#0)::int8](Reduce[; "
                           "count(*)::int8](Get 11))))))");
        expect_error("SELECT b FROM t GROUP BY b HAVING b IN (SELECT b FROM t)", "0A000", NULL, -1);
        expect_error("SELECT b, (SELECT count(*) FROM u WHERE u.x = t.d) FROM t GROUP BY b", "0A000", NULL, -1);
        expect_error("SELECT b FROM t GROUP BY b HAVING EXISTS (SELECT 1 FROM u WHERE u.x = t.a)", "0A000",
                     NULL, -1);
        /* Where subqueries are not planned yet. */
        expect_error("SELECT a FROM t ORDER BY (SELECT 1)", "0A000", NULL, -1);
        expect_error("DELETE FROM t WHERE a IN (SELECT a FROM mv)", "0A000", NULL, 41);
        {
                struct sql_stmt *d = analyze("DELETE FROM t WHERE d IN (SELECT x FROM u)");

                CU_ASSERT(d && d->delete_.plan && d->n_physical_inputs == 2);
                sql_stmt_free(d);
        }
        /* An UPDATE's values take subqueries as a SELECT list does: attached past the
         * table's columns, which go again before the new row (old row, new row). */
        {
                struct sql_stmt *u = analyze("UPDATE t SET a = (SELECT count(*) FROM u WHERE u.x = t.d)::int");

                CU_ASSERT_EQUAL_FATAL(u->kind, SQL_STMT_UPDATE);
                expect_plan(u->update.plan,
                            "Project[0,1,2,3,8,9,10,11](Map[ASSERT_NOT_NULL(CAST(#7 AS int4), 'a', 't'), "
                            "#1, #2, #3](Map[CASE((#5 IS NULL), #4, (#5 > 1::int8), TOO_MANY_ROWS(), #6)]"
                            "(Project[0,1,2,3,4,8,9](Join[5=3,6=4](Map[COALESCE(#3, 0::int8), (#3 IS NULL)]"
                            "(Join[](Get 10, Reduce[; max(#0)::int8](Constant[int8](1)))), "
                            "Map[COALESCE(#0, 0::int8), (#0 IS NULL)](Reduce[#0; max(#1)::int8 "
                            "max(#2)::int8](Union(Map[NULL::int8, NULL::int8](Project[3](Get 10)), "
                            "Project[0,2,3](Join[0=0](Project[3](Get 10), Reduce[#0; count(*)::int8 "
                            "max(#1)::int8](Reduce[#0; count(*)::int8](Get 11))))))))))))");
                CU_ASSERT(u->n_physical_inputs == 2);
                sql_stmt_free(u);
        }
        expect_error("UPDATE t SET a = (SELECT a FROM mv)", "0A000", NULL, -1);
        expect_error("SELECT a FROM t JOIN u ON u.x IN (SELECT a FROM v)", "0A000", NULL, -1);
        expect_error("SELECT a FROM t WHERE EXISTS (SELECT nope FROM u)", "42703", NULL, -1);
        expect_error("SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.x = t.nope)", "42703", NULL, -1);
}

static Coord__Plan__Peek *peek_of(struct sql_stmt *s)
{
        CU_ASSERT_EQUAL_FATAL(s->kind, SQL_STMT_SELECT);
        return s->select.peek;
}

static void expect_sort(const Coord__Plan__Peek *p, size_t i, uint32_t column, bool desc,
                        bool nulls_first)
{
        CU_ASSERT_FATAL(i < p->n_order_by);
        CU_ASSERT_EQUAL(p->order_by[i]->column, column);
        CU_ASSERT_EQUAL(p->order_by[i]->descending, desc);
        CU_ASSERT_EQUAL(p->order_by[i]->nulls_first, nulls_first);
}

static void test_order_limit(void)
{
        struct sql_stmt *s = analyze("SELECT a, b FROM t ORDER BY b DESC, 1 LIMIT 5 OFFSET 2");
        Coord__Plan__Peek *p = peek_of(s);

        CU_ASSERT_EQUAL(p->n_order_by, 2);
        expect_sort(p, 0, 1, true, true);
        expect_sort(p, 1, 0, false, false);
        CU_ASSERT_FATAL(p->limit != NULL);
        CU_ASSERT(p->limit->count == 5 && p->limit->offset == 2);
        CU_ASSERT_EQUAL(p->output_arity, 0);
        sql_stmt_free(s);

        /* A sort key that is not shown: a hidden column after the shown ones. */
        s = analyze("SELECT a FROM t ORDER BY d NULLS FIRST, a + 1 DESC NULLS LAST");
        p = peek_of(s);
        expect_plan(p->plan, "Project[0,3,4](Map[(#0 + 1)](Get 10))");
        CU_ASSERT_EQUAL(p->output_arity, 1);
        CU_ASSERT_EQUAL(p->n_columns, 3);
        expect_sort(p, 0, 1, false, true);
        expect_sort(p, 1, 2, true, false);
        CU_ASSERT(p->limit == NULL);
        sql_stmt_free(s);

        s = analyze("SELECT a + 1 AS n, b FROM t ORDER BY a + 1, n, b");
        p = peek_of(s);
        CU_ASSERT_EQUAL(p->output_arity, 0);
        expect_sort(p, 0, 0, false, false);
        expect_sort(p, 1, 0, false, false);
        expect_sort(p, 2, 1, false, false);
        sql_stmt_free(s);

        s = analyze("SELECT b, count(*) FROM t GROUP BY b ORDER BY count(*) DESC, max(a)");
        p = peek_of(s);
        expect_plan(p->plan, "Reduce[#1; count(*)::int8 max(#0)::int4](Get 10)");
        CU_ASSERT_EQUAL(p->output_arity, 2);
        expect_sort(p, 0, 1, true, true);
        expect_sort(p, 1, 2, false, false);
        sql_stmt_free(s);

        s = analyze("SELECT 1 AS z UNION ALL SELECT 2 ORDER BY z DESC LIMIT 1");
        p = peek_of(s);
        expect_sort(p, 0, 0, true, true);
        CU_ASSERT(p->limit && p->limit->count == 1);
        sql_stmt_free(s);

        s = analyze("SELECT a FROM t LIMIT ALL OFFSET 3");
        p = peek_of(s);
        CU_ASSERT(p->limit && p->limit->count == UINT64_MAX && p->limit->offset == 3);
        sql_stmt_free(s);
        s = analyze("SELECT a FROM t LIMIT ALL");
        CU_ASSERT(peek_of(s)->limit == NULL);
        sql_stmt_free(s);
        s = analyze("VALUES (2), (1) ORDER BY 1 FETCH FIRST 1 ROWS ONLY");
        CU_ASSERT(peek_of(s)->limit && peek_of(s)->limit->count == 1);
        CU_ASSERT_EQUAL(peek_of(s)->n_order_by, 1);
        sql_stmt_free(s);

        expect_error("SELECT a FROM t ORDER BY 2", "42P10", "ORDER BY position 2 is not in select list",
                     26);
        expect_error("SELECT DISTINCT a FROM t ORDER BY d", "42P10", NULL, -1);
        expect_error("SELECT a FROM t LIMIT -1", "2201W", "LIMIT must not be negative", -1);
        expect_error("SELECT a FROM t OFFSET -1", "2201X", "OFFSET must not be negative", -1);
        expect_error("SELECT a FROM t LIMIT 'x'", "22P02", NULL, -1);
        expect_error("SELECT a FROM t LIMIT a", "42703", NULL, -1);
        expect_error("SELECT a FROM t LIMIT mz_now()", "0A000", NULL, -1);
        expect_error("SELECT a AS x, b AS x FROM t ORDER BY x", "42702",
                     "ORDER BY \"x\" is ambiguous", -1);
        expect_error("SELECT 1 UNION SELECT 2 ORDER BY 1 + 1", "0A000", NULL, -1);
        expect_error("SELECT b FROM t GROUP BY b ORDER BY a", "42803", NULL, -1);
}

static void test_empty_inputs(void)
{
        struct sql_stmt *s = analyze("SELECT * FROM t JOIN (SELECT 1 AS one WHERE false) e ON true");

        expect_plan(s->select.peek->plan, "Constant[int4,text,bool,int8,int4](0)");
        expect_inputs(s, "10", "");
        sql_stmt_free(s);
        s = analyze("SELECT * FROM t WHERE a > 1 AND false");
        expect_plan(s->select.peek->plan, "Constant[int4,text,bool,int8](0)");
        expect_inputs(s, "10", "");
        sql_stmt_free(s);
        s = analyze("SELECT a FROM t WHERE true OR a > 1");
        expect_plan(s->select.peek->plan, "Project[0](Get 10)");
        sql_stmt_free(s);
        s = analyze("SELECT count(*) FROM (SELECT * FROM w WHERE NULL) q");
        expect_plan(s->select.peek->plan, "Constant[int8](1)");
        expect_inputs(s, "10,11", "");
        sql_stmt_free(s);
        expect_select_plan("SELECT * FROM u WHERE x > 1 AND x > 1 + 1",
                           "Filter[((#0 > 1::int8) AND (#0 > 2::int8))](Get 11)");
}

static void test_expressions(void)
{
        expect_select_plan("SELECT COALESCE(b, 'x') FROM t", "Project[4](Map[COALESCE(#1, 'x')](Get 10))");
        expect_select_plan("SELECT COALESCE(NULL, 2, a) FROM t", "Project[4](Map[2](Get 10))");
        expect_select_plan("SELECT COALESCE(a, d) FROM t",
                           "Project[4](Map[COALESCE(CAST(#0 AS int8), #3)](Get 10))");
        expect_error("SELECT COALESCE(a, b) FROM t", "42804",
                     "COALESCE types integer and text cannot be matched", -1);
        expect_error("SELECT now()", "0A000", "function now() is not supported", 8);
        expect_error("SELECT current_timestamp", "0A000", "current_timestamp is not supported", 8);
        /* INSERT values fold strictly. */
        expect_error("INSERT INTO t (a) VALUES (1/0)", "22012", "division by zero", -1);

        /* IN, BETWEEN, IS DISTINCT FROM, NULLIF and IS TRUE are planned over comparisons,
         * AND/OR, CASE and COALESCE; each value meets the others' type. */
        expect_select_plan("SELECT a FROM t WHERE a IN (1, '2')",
                           "Project[0](Filter[((#0 = 1) OR (#0 = 2))](Get 10))");
        expect_select_plan("SELECT a FROM t WHERE a NOT IN (1, d)",
                           "Project[0](Filter[((CAST(#0 AS int8) <> 1::int8) AND "
                           "(CAST(#0 AS int8) <> #3))](Get 10))");
        expect_select_plan("SELECT a FROM t WHERE a IN (7)", "Project[0](Filter[(#0 = 7)](Get 10))");
        expect_select_plan("SELECT 3 IN (1, 2, 3), 3 NOT IN (1, NULL)",
                           "Map[true, NULL::bool](Constant(1))");
        expect_select_plan("SELECT a FROM t WHERE a BETWEEN 1 AND d",
                           "Project[0](Filter[((#0 >= 1) AND (CAST(#0 AS int8) <= #3))](Get 10))");
        expect_select_plan("SELECT a NOT BETWEEN 1 AND 2 FROM t",
                           "Project[4](Map[((#0 < 1) OR (#0 > 2))](Get 10))");
        expect_select_plan("SELECT a BETWEEN SYMMETRIC 2 AND 1 FROM t",
                           "Project[4](Map[(((#0 >= 2) AND (#0 <= 1)) OR ((#0 >= 1) AND "
                           "(#0 <= 2)))](Get 10))");
        expect_select_plan("SELECT b IS DISTINCT FROM 'x' FROM t",
                           "Project[4](Map[CASE((#1 IS NULL), true, false, true, (#1 <> 'x'))]"
                           "(Get 10))");
        expect_select_plan("SELECT 1 IS NOT DISTINCT FROM NULL, NULL IS DISTINCT FROM NULL",
                           "Map[false, false](Constant(1))");
        expect_select_plan("SELECT NULLIF(a, 1) FROM t",
                           "Project[4](Map[CASE((#0 = 1), NULL::int4, #0)](Get 10))");
        expect_select_plan("SELECT c IS TRUE, c IS NOT FALSE, c IS UNKNOWN FROM t",
                           "Project[4,5,6](Map[COALESCE(#2, false), COALESCE(#2, true), "
                           "(#2 IS NULL)](Get 10))");
        /* CASE: searched and simple; results meet in one type; no ELSE is NULL. */
        expect_select_plan("SELECT CASE WHEN a > 1 THEN d WHEN c THEN a END FROM t",
                           "Project[4](Map[CASE((#0 > 1), #3, #2, CAST(#0 AS int8), "
                           "NULL::int8)](Get 10))");
        expect_select_plan("SELECT CASE a WHEN 1 THEN 'one' ELSE b END FROM t",
                           "Project[4](Map[CASE((#0 = 1), 'one', #1)](Get 10))");
        expect_select_plan("SELECT CASE WHEN false THEN 1 ELSE 2 END", "Map[2](Constant(1))");
        /* Text: LIKE, ||, lower/upper/length; abs; concat; version(). */
        expect_select_plan("SELECT b LIKE 'a%', b NOT ILIKE 'A_', b ~~ 'x' FROM t",
                           "Project[4,5,6](Map[(#1 LIKE 'a%'), NOT (#1 ILIKE 'A_'), "
                           "(#1 LIKE 'x')](Get 10))");
        /* Regular expressions: ~, ~*, !~, !~*, OPERATOR(pg_catalog.~). */
        expect_select_plan("SELECT b ~ '^a', b !~* 'x', b OPERATOR(pg_catalog.~) 'y' FROM t",
                           "Project[4,5,6](Map[(#1 ~ '^a'), NOT (#1 ~* 'x'), (#1 ~ 'y')](Get 10))");
        expect_select_plan("SELECT 'pg_toast' ~ '^pg_', 'x' !~ 'x'",
                           "Map[true, false](Constant(1))");
        expect_error("SELECT a ~ 'x' FROM t", "42883", "operator does not exist: integer ~ text",
                     -1);
        expect_error("SELECT b OPERATOR(myschema.~) 'x' FROM t", "42883", NULL, -1);
        expect_select_plan("SELECT b || a, 'x' || b, c || '' FROM t",
                           "Project[4,5,6](Map[(#1 || CAST(#0 AS text)), ('x' || #1), "
                           "(CAST(#2 AS text) || '')](Get 10))");
        expect_select_plan("SELECT 'ab' || 'c', 'abc' LIKE 'a%', lower('AbC'), length('añb')",
                           "Map['abc', true, 'abc', 3](Constant(1))");
        expect_select_plan("SELECT abs(d), upper(b), length(b) FROM t",
                           "Project[4,5,6](Map[abs(#3), upper(#1), length(#1)](Get 10))");
        expect_select_plan("SELECT concat('b', 1, NULL, true)", "Map['b1t'](Constant(1))");
        expect_select_plan("SELECT concat(a, c) FROM t",
                           "Project[4](Map[(COALESCE(CAST(#0 AS text), '') || CASE(#2, 't', NOT #2, "
                           "'f', ''))](Get 10))");
        expect_select_plan("SELECT version()", "Map['PostgreSQL " SQL_SERVER_VERSION "'](Constant(1))");

        expect_error("SELECT a IN (1, b) FROM t", "42804",
                     "IN types integer and text cannot be matched", -1);
        expect_error("SELECT CASE WHEN a THEN 1 END FROM t", "42804",
                     "argument of CASE/WHEN must be type boolean, not type integer", 18);
        expect_error("SELECT CASE WHEN c THEN 1 ELSE b END FROM t", "42804",
                     "CASE types integer and text cannot be matched", -1);
        expect_error("SELECT CASE a WHEN b THEN 1 END FROM t", "42883",
                     "operator does not exist: integer = text", -1);
        expect_error("SELECT a LIKE 'x' FROM t", "42883",
                     "operator does not exist: integer ~~ text", -1);
        expect_error("SELECT b LIKE 'x' ESCAPE '#' FROM t", "0A000", NULL, -1);
        expect_error("SELECT a || d FROM t", "42883", "operator does not exist: integer || bigint", -1);
        expect_error("SELECT a IS TRUE FROM t", "42804",
                     "argument of IS TRUE must be type boolean, not type integer", 8);
        expect_error("SELECT a IS DISTINCT FROM b FROM t", "42883",
                     "operator does not exist: integer = text", -1);
        expect_error("SELECT abs(b) FROM t", "42883", "function abs(text) does not exist", 8);
        expect_error("SELECT abs(a, a) FROM t", "42883", NULL, 8);
        expect_error("SELECT lower(a) FROM t", "42883", "function lower(integer) does not exist", 8);
        expect_error("SELECT concat()", "42883", NULL, 8);
        expect_error("SELECT version(1)", "42883", NULL, 8);
        expect_error("SELECT abs(DISTINCT a) FROM t", "42809", NULL, 8);
        /* A bad pattern fails when evaluated (tests/sql/test-eval.c), not when planned. */
        expect_select_plan("SELECT 'a' LIKE 'a\\'", "Map[('a' LIKE 'a\\')](Constant(1))");
        /* The session's values, where there is a session: literals in a SELECT or an
         * INSERT, refused in views (their plans are stored) and materialized views. */
        {
                const struct sql_session who = { .user = "alice", .database = "prod",
                                                 .backend_pid = 4242 };
                const struct sql_params with = { .session = &who };
                struct sql_stmt *st = analyze_params("SELECT current_user, session_user, "
                                                     "current_database(), current_schema, "
                                                     "pg_backend_pid() + 1", &with);
                static const char *const names[] = { "current_user", "session_user",
                                                     "current_database", "current_schema",
                                                     "?column?" };

                CU_ASSERT_EQUAL_FATAL(st->select.peek->n_columns, 5);
                for (size_t i = 0; i < 5; i++)
                        CU_ASSERT_STRING_EQUAL(st->select.peek->columns[i]->name, names[i]);
                expect_plan(st->select.peek->plan,
                            "Map['alice', 'alice', 'prod', 'public', 4243](Constant(1))");
                sql_stmt_free(st);
                st = analyze_params("INSERT INTO t (a, b) VALUES (1, current_user)", &with);
                expect_rows(st, "(1,'alice',NULL,NULL)");
                sql_stmt_free(st);
                expect_error_params("CREATE VIEW w2 AS SELECT current_user", &with, "0A000",
                                    "current_user is not supported in views", 26);
                expect_error_params("CREATE MATERIALIZED VIEW m2 AS SELECT a FROM t WHERE "
                                    "b = current_database()", &with, "0A000",
                                    "cannot materialize call to current_database()", -1);
                expect_error("SELECT current_user", "0A000", "current_user is not supported here", 8);
                expect_error("SELECT pg_backend_pid()", "0A000", NULL, 8);
        }

        /* Deterministic: all of it may be materialized. */
        sql_stmt_free(analyze("CREATE MATERIALIZED VIEW mx AS SELECT CASE WHEN b LIKE 'a%' "
                              "THEN upper(b) || a ELSE concat(d) END, a IN (1, 2) FROM t"));
}

static void test_fuzz_tokens(void);

/* ORDER BY ... LIMIT/OFFSET below the outermost SELECT: a TopK (issue 35 item 4). */
static void test_topk(void)
{
        struct sql_stmt *s = analyze("CREATE VIEW vt AS SELECT a, b FROM t ORDER BY b DESC, a LIMIT 3");

        expect_plan(s->create_view.plan, "TopK[#1 DESC,#0; LIMIT 3](Project[0,1](Get 10))");
        CU_ASSERT_EQUAL(s->create_view.n_columns, 2);
        expect_inputs(s, "10", "10");
        sql_stmt_free(s);

        /* Sort keys the list does not show: hidden columns, projected away after. */
        s = analyze("CREATE MATERIALIZED VIEW mt AS SELECT a FROM t ORDER BY d NULLS FIRST, a + 1 DESC "
                    "LIMIT 2 OFFSET 1");
        expect_plan(s->create_view.plan, "Project[0](TopK[#1 NULLS FIRST,#2 DESC; LIMIT 2 OFFSET 1]"
                                         "(Project[0,3,4](Map[(#0 + 1)](Get 10))))");
        CU_ASSERT_EQUAL_FATAL(s->create_view.n_columns, 1);
        CU_ASSERT_STRING_EQUAL(s->create_view.columns[0].name, "a");
        sql_stmt_free(s);

        /* OFFSET alone; OFFSET 0 and LIMIT ALL cut nothing (no ORDER BY needed). */
        s = analyze("CREATE VIEW vt AS SELECT a FROM t ORDER BY a DESC NULLS LAST OFFSET 2");
        expect_plan(s->create_view.plan, "TopK[#0 DESC NULLS LAST; OFFSET 2](Project[0](Get 10))");
        sql_stmt_free(s);
        s = analyze("CREATE VIEW vt AS SELECT a FROM t LIMIT ALL OFFSET 0");
        expect_plan(s->create_view.plan, "Project[0](Get 10)");
        sql_stmt_free(s);

        /* Over a GROUP BY, ordered by an aggregate's output name. */
        s = analyze("CREATE VIEW vt AS SELECT b, count(*) AS n FROM t GROUP BY b ORDER BY n DESC, b LIMIT 2");
        expect_plan(s->create_view.plan, "TopK[#1 DESC,#0; LIMIT 2](Reduce[#1; count(*)::int8](Get 10))");
        sql_stmt_free(s);

        /* UNION and VALUES: output columns; a UNION's arms may have their own. */
        s = analyze("CREATE VIEW vt AS SELECT a FROM t UNION ALL SELECT a + 1 FROM t ORDER BY 1 DESC LIMIT 2");
        expect_plan(s->create_view.plan, "TopK[#0 DESC; LIMIT 2](Union(Project[0](Get 10), "
                                         "Project[4](Map[(#0 + 1)](Get 10))))");
        sql_stmt_free(s);
        s = analyze("CREATE VIEW vt AS (SELECT a FROM t ORDER BY a LIMIT 1) UNION ALL "
                    "(SELECT a FROM t ORDER BY a DESC LIMIT 1)");
        expect_plan(s->create_view.plan, "Union(TopK[#0; LIMIT 1](Project[0](Get 10)), "
                                         "TopK[#0 DESC; LIMIT 1](Project[0](Get 10)))");
        sql_stmt_free(s);
        s = analyze("CREATE VIEW vt AS VALUES (2), (1) ORDER BY column1 LIMIT 1");
        expect_plan(s->create_view.plan, "TopK[#0; LIMIT 1](Constant[int4](2))");
        sql_stmt_free(s);

        /* A subquery in FROM of a SELECT: a TopK in the peek's plan; the outermost
         * SELECT's ORDER BY and LIMIT stay the peek's. */
        s = analyze("SELECT * FROM (SELECT a, d FROM t ORDER BY d LIMIT 1) s ORDER BY a LIMIT 5");
        expect_plan(peek_of(s)->plan, "TopK[#1; LIMIT 1](Project[0,3](Get 10))");
        CU_ASSERT(peek_of(s)->limit && peek_of(s)->limit->count == 5);
        CU_ASSERT_EQUAL(peek_of(s)->n_order_by, 1);
        sql_stmt_free(s);
        /* An empty input: nothing to rank. */
        s = analyze("CREATE VIEW vt AS SELECT a FROM t WHERE false ORDER BY a LIMIT 1");
        expect_plan(s->create_view.plan, "Constant[int4](0)");
        sql_stmt_free(s);

        /* Refused: which rows LIMIT keeps without ORDER BY is arbitrary; LIMIT in a
         * subquery in an expression; forms the peek refuses too. */
        expect_error("CREATE VIEW vv AS SELECT a FROM t OFFSET 2", "0A000",
                     "LIMIT without ORDER BY in a view is not deterministic", -1);
        expect_error("CREATE VIEW vv AS SELECT a FROM t LIMIT 0", "0A000",
                     "LIMIT without ORDER BY in a view is not deterministic", -1);
        expect_error("SELECT a FROM t WHERE a IN (SELECT a FROM t ORDER BY a LIMIT 1)", "0A000",
                     "LIMIT and OFFSET are not supported in a subquery in an expression", -1);
        expect_error("SELECT (SELECT a FROM t ORDER BY a LIMIT 1)", "0A000",
                     "LIMIT and OFFSET are not supported in a subquery in an expression", -1);
        expect_error("CREATE VIEW vv AS SELECT a FROM t WHERE EXISTS "
                     "(SELECT 1 FROM (SELECT a FROM t ORDER BY a OFFSET 1) s)", "0A000",
                     "LIMIT and OFFSET are not supported in a subquery in an expression", -1);
        expect_error("CREATE VIEW vv AS SELECT a FROM t ORDER BY a LIMIT a", "42703", NULL, -1);
        expect_error("CREATE VIEW vv AS SELECT a FROM t ORDER BY a LIMIT -1", "2201W", NULL, -1);
        expect_error("CREATE VIEW vv AS SELECT a FROM t ORDER BY a OFFSET -1", "2201X", NULL, -1);
        expect_error("CREATE VIEW vv AS SELECT a FROM t ORDER BY a LIMIT mz_now()", "0A000", NULL, -1);
        expect_error("CREATE VIEW vv AS SELECT a FROM t ORDER BY a FETCH FIRST 1 ROWS WITH TIES", "0A000",
                     "FETCH ... WITH TIES is not supported", -1);
        expect_error("CREATE VIEW vv AS SELECT a FROM t ORDER BY a USING < LIMIT 1", "0A000",
                     "ORDER BY ... USING is not supported", -1);
        expect_error("CREATE VIEW vv AS SELECT a FROM t UNION SELECT a FROM t ORDER BY a + 1 LIMIT 1",
                     "0A000", "ORDER BY of a UNION or VALUES must name an output column", -1);
        expect_error("CREATE VIEW vv AS SELECT DISTINCT a FROM t ORDER BY d LIMIT 1", "42P10", NULL, -1);
        expect_error("CREATE VIEW vv AS SELECT a FROM t ORDER BY 3 LIMIT 1", "42P10", NULL, -1);
}

static const struct t_case query_cases[] = {
        { "plan views", test_plan_views },
        { "create view", test_create_view },
        { "create materialized view", test_create_materialized_view },
        { "create index", test_create_index },
        { "drop kinds", test_drop_kinds },
        { "show kinds", test_show_kinds },
        { "joins", test_joins },
        { "group by", test_group_by },
        { "distinct union values", test_distinct_union_values },
        { "subquery", test_subquery },
        { "WITH queries", test_with },
        { "subqueries in expressions", test_sublink },
        { "order by limit", test_order_limit },
        { "top-k in views and subqueries", test_topk },
        { "empty inputs", test_empty_inputs },
        { "expressions", test_expressions },
        { "fuzz tokens with views", test_fuzz_tokens },
        { NULL, NULL },
};

static const struct t_case parse_cases[] = {
        { "batch", test_batch },
        { "syntax errors", test_syntax_errors },
        { "nesting", test_nesting },
        { "as of", test_as_of },
        { "fuzz tokens", test_fuzz_tokens },
        { NULL, NULL },
};

static const struct t_case statement_cases[] = {
        { "create table", test_create_table },
        { "drop", test_drop },
        { "insert", test_insert },
        { "insert not null detail", test_insert_not_null_detail },
        { "select", test_select },
        { "column names", test_column_names },
        { "select errors", test_select_errors },
        { "numeric", test_numeric },
        { "delete", test_delete },
        { "update", test_update },
        { "session", test_session },
        { "pg_catalog", test_pg_catalog },
        { "pg_catalog describe", test_pg_catalog_describe },
        { "catalog failure", test_catalog_failure },
        { NULL, NULL },
};

int main(void)
{
        const struct t_suite suites[] = {
                { "sql parse", parse_cases },
                { "sql statements", statement_cases },
                { "sql queries", query_cases },
                { NULL, NULL },
        };
        /* Each suite's first case is its setup ("plan views" plans the views the
         * queries read): T_CASES keeps it, T_REVERSE leaves it first. */
        int r = t_run_opts(suites, T_RUN_FIXTURES);

        free_views();
        return r;
}
