/* adapter-sql-expr.c -- the analyzer's core, types and expressions: names to columns,
 * operators, casts and coercion, constant folding (adapter-sql-internal.h).
 *
 * NOTES ON THE DESIGN
 *
 * (1) Types.  An analyzed expression is a plan Expr with a concrete type, except an
 *     untyped literal (a string constant, NULL, a parameter without a type) that stays
 *     "unknown" until its context decides, as in PostgreSQL: the other operand of an
 *     operator, the column an INSERT writes, boolean under AND/OR/NOT/WHERE, text for a
 *     SELECT output.  Deciding parses the literal's text for the type, so '12x' for an
 *     integer is 22P02 pointing at the literal.  Mixed int4/int8 operands are promoted
 *     to int8 with a cast, as PostgreSQL's int48 operators would compute.
 *
 * (2) Constant folding.  A call whose arguments are all literals is evaluated at once
 *     with row_expr_eval() (common/row), the code the controller runs, so the adapter
 *     can never fold to a different value.  mz_now() is not folded: its value is the
 *     statement's timestamp, chosen after planning.  A call that fails to fold (1/0) stays
 *     as it is and fails at run time only if a row reaches it, except where values must
 *     be constants (INSERT, AS OF, LIMIT: strict_fold).
 */
#include "adapter-sql-internal.h"

#include <ctype.h>
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- The analyzer. ---- */

static const char *const HINT_OPERATOR =
        "No operator matches the given name and argument types. "
        "You might need to add explicit type casts.";

static const char *const HINT_FUNCTION =
        "No function matches the given name and argument types. "
        "You might need to add explicit type casts.";

void typed_done(struct typed *t)
{
        expr_freep(&t->e);
}

/* Set the error's position from a node location. */
void error_at(struct analyzer *a, int location)
{
        long off = (long)location + a->loc_base;

        if (a->err && location >= 0 && off >= 0)
                a->err->position = char_position(a->b->query, a->b->len, (size_t)off);
}

int analyzer_oom(struct analyzer *a)
{
        return row_error_oom(a->err);
}

int add_input(struct analyzer *a, uint64_t id)
{
        struct sql_stmt *s = a->stmt;
        size_t i = 0;

        while (i < s->n_inputs && s->inputs[i] < id)
                i++;
        if (i < s->n_inputs && s->inputs[i] == id)
                return 0;
        if (s->n_inputs == a->cap_inputs) {
                size_t cap = a->cap_inputs ? 2 * a->cap_inputs : 4;
                uint64_t *p = realloc(s->inputs, cap * sizeof(*p));

                if (!p)
                        return analyzer_oom(a);
                s->inputs = p;
                a->cap_inputs = cap;
        }
        memmove(s->inputs + i + 1, s->inputs + i, (s->n_inputs - i) * sizeof(*s->inputs));
        s->inputs[i] = id;
        s->n_inputs++;
        return 0;
}

int add_notice(struct analyzer *a, const char *sqlstate, const char *fmt, ...)
{
        struct sql_stmt *s = a->stmt;
        struct row_error *n = realloc(s->notices, (s->n_notices + 1) * sizeof(*n));
        va_list ap;

        if (!n)
                return analyzer_oom(a);
        s->notices = n;
        n = &s->notices[s->n_notices++];
        memset(n, 0, sizeof(*n));
        memcpy(n->sqlstate, sqlstate, 6);
        va_start(ap, fmt);
        if (vsnprintf(n->message, sizeof(n->message), fmt, ap) < 0)
                n->message[0] = '\0';
        va_end(ap);
        return 0;
}

/* Look a name up in the catalog: 0, -ENOENT (err untouched), or an error. */
int lookup_relation(struct analyzer *a, const char *name, struct sql_relation *ret)
{
        struct sql_relation rel = { 0 };
        int r = a->ops && a->ops->lookup ? a->ops->lookup(a->userdata, name, &rel) : -ENOENT;

        if (r == -ENOENT)
                return r;
        if (r < 0)
                return row_error_set(a->err, r, "XX000", "catalog lookup of \"%s\" failed: %s",
                                     name, strerrordesc_np(-r) ? strerrordesc_np(-r) : "?");
        if (rel.id == 0 || rel.kind < 0 || rel.kind >= _SQL_OBJECT_KIND_MAX ||
            rel.n_columns > ROW_MAX_COLUMNS || (rel.n_columns && !rel.columns))
                return FAIL(a, "XX000", "catalog returned an invalid entry for \"%s\"", name);
        for (size_t i = 0; i < rel.n_columns; i++)
                if (!rel.columns[i].name || !row_type_valid(rel.columns[i].type))
                        return FAIL(a, "XX000", "catalog returned an invalid column for \"%s\"",
                                    name);
        *ret = rel;
        return 0;
}

const char *node_string(const PgQuery__Node *n)
{
        return n && n->node_case == PG_QUERY__NODE__NODE_STRING && n->string ? n->string->sval
                                                                            : NULL;
}

/* A relation name: schema "public" or none, no database. */
int range_var_name(struct analyzer *a, const PgQuery__RangeVar *rv, const char **ret)
{
        if (rv->catalogname && rv->catalogname[0])
                return FAIL_AT(a, rv->location, "0A000",
                               "cross-database references are not implemented: %s.%s.%s",
                               rv->catalogname, rv->schemaname, rv->relname);
        if (rv->schemaname && rv->schemaname[0] && strcmp(rv->schemaname, "public") != 0)
                return FAIL_AT(a, rv->location, "3F000", "schema \"%s\" does not exist",
                               rv->schemaname);
        *ret = rv->relname;
        return 0;
}

/* A name given as a list of strings (DROP): [public.]name. */
int list_name(struct analyzer *a, const PgQuery__Node *n, const char **ret)
{
        const PgQuery__List *l;
        const char *schema = NULL, *name;

        if (!n || n->node_case != PG_QUERY__NODE__NODE_LIST)
                return FAIL(a, "0A000", "unsupported object name");
        l = n->list;
        if (l->n_items < 1 || l->n_items > 2)
                return FAIL(a, "0A000", "qualified names with %zu parts are not supported",
                            l->n_items);
        if (l->n_items == 2)
                schema = node_string(l->items[0]);
        name = node_string(l->items[l->n_items - 1]);
        if (!name || (l->n_items == 2 && !schema))
                return FAIL(a, "0A000", "unsupported object name");
        if (schema && strcmp(schema, "public") != 0)
                return FAIL(a, "3F000", "schema \"%s\" does not exist", schema);
        *ret = name;
        return 0;
}

/* ---- Types. ---- */

const char *typed_name(const struct typed *t)
{
        return t->unknown ? "unknown" : row_type_name((enum row_type)t->e->type);
}

bool type_is_int(int type)
{
        return type == ROW_TYPE_INT4 || type == ROW_TYPE_INT8;
}

/* int4, int8 or numeric: what arithmetic takes. */
bool type_is_number(int type)
{
        return type_is_int(type) || type == ROW_TYPE_NUMERIC;
}

bool is_literal(const Coord__Plan__Expr *e)
{
        return e->kind_case == COORD__PLAN__EXPR__KIND_LITERAL;
}

/* Resolve a type name as CREATE TABLE and casts write it. */
/* PostgreSQL's largest varchar(n). */
#define VARCHAR_MAX_LENGTH 10485760u

/* varchar [(n)]: text, and n into *max_chars (0 without). */
static int resolve_varchar(struct analyzer *a, const PgQuery__TypeName *tn, uint32_t *max_chars)
{
        const PgQuery__Node *m = tn->n_typmods == 1 ? tn->typmods[0] : NULL;
        int64_t n;

        *max_chars = 0;
        if (!tn->n_typmods)
                return 0;
        if (!m || m->node_case != PG_QUERY__NODE__NODE_A_CONST ||
            m->a_const->val_case != PG_QUERY__A__CONST__VAL_IVAL)
                return FAIL_AT(a, tn->location, "42601", "invalid type modifier");
        n = m->a_const->ival->ival;
        if (n < 1)
                return FAIL_AT(a, tn->location, "22023", "length for type varchar must be at least 1");
        if (n > VARCHAR_MAX_LENGTH)
                return FAIL_AT(a, tn->location, "22023", "length for type varchar cannot exceed %u",
                               VARCHAR_MAX_LENGTH);
        *max_chars = (uint32_t)n;
        return 0;
}

/* An integer type modifier: 0 with *ret, or 42601. */
static int typmod_int(struct analyzer *a, const PgQuery__TypeName *tn, const PgQuery__Node *m,
                      int64_t *ret)
{
        if (!m || m->node_case != PG_QUERY__NODE__NODE_A_CONST ||
            m->a_const->val_case != PG_QUERY__A__CONST__VAL_IVAL)
                return FAIL_AT(a, tn->location, "42601", "invalid type modifier");
        *ret = m->a_const->ival->ival;
        return 0;
}

/* numeric [(p [, s])]: SQL_NUMERIC_TYPMOD(p, s) into *typmod, 0 without. */
static int resolve_numeric(struct analyzer *a, const PgQuery__TypeName *tn, uint32_t *typmod)
{
        int64_t p = 0, s = 0;
        int r;

        *typmod = 0;
        if (!tn->n_typmods)
                return 0;
        if (tn->n_typmods > 2)
                return FAIL_AT(a, tn->location, "22023", "invalid NUMERIC type modifier");
        r = typmod_int(a, tn, tn->typmods[0], &p);
        if (r >= 0 && tn->n_typmods == 2)
                r = typmod_int(a, tn, tn->typmods[1], &s);
        if (r < 0)
                return r;
        if (p < 1 || p > ROW_NUMERIC_MAX_PRECISION)
                return FAIL_AT(a, tn->location, "22023",
                               "NUMERIC precision %lld must be between 1 and %d", (long long)p,
                               ROW_NUMERIC_MAX_PRECISION);
        if (s < 0 || s > p)
                return FAIL_AT(a, tn->location, "0A000",
                               "NUMERIC scale %lld outside 0 .. precision %lld is not supported",
                               (long long)s, (long long)p);
        *typmod = SQL_NUMERIC_TYPMOD(p, s);
        return 0;
}

int resolve_type(struct analyzer *a, const PgQuery__TypeName *tn, enum row_type *ret,
                        uint32_t *max_chars)
{
        static const struct {
                const char *name;
                enum row_type type;
        } ours[] = {
                { "int4", ROW_TYPE_INT4 }, { "integer", ROW_TYPE_INT4 }, { "int", ROW_TYPE_INT4 },
                { "int8", ROW_TYPE_INT8 }, { "bigint", ROW_TYPE_INT8 },
                { "text", ROW_TYPE_TEXT },
                { "bool", ROW_TYPE_BOOL }, { "boolean", ROW_TYPE_BOOL },
        };
        /* PostgreSQL types we know but do not support, by their PostgreSQL names. */
        static const struct {
                const char *name, *display;
        } theirs[] = {
                { "int2", "smallint" }, { "smallint", "smallint" },
                { "float4", "real" }, { "real", "real" },
                { "float8", "double precision" }, { "float", "double precision" },
                { "char", "\"char\"" }, { "name", "name" },
                { "timestamp", "timestamp without time zone" },
                { "timestamptz", "timestamp with time zone" },
                { "date", "date" }, { "time", "time without time zone" },
                { "timetz", "time with time zone" }, { "interval", "interval" },
                { "json", "json" }, { "jsonb", "jsonb" }, { "bytea", "bytea" },
                { "uuid", "uuid" }, { "oid", "oid" }, { "regclass", "regclass" },
                { "regtype", "regtype" }, { "bit", "bit" }, { "varbit", "bit varying" },
        };
        const char *name, *schema = NULL;
        bool array;

        *max_chars = 0;
        if (tn->n_names < 1 || tn->n_names > 2)
                return FAIL_AT(a, tn->location, "42704", "type does not exist");
        name = node_string(tn->names[tn->n_names - 1]);
        if (tn->n_names == 2)
                schema = node_string(tn->names[0]);
        if (!name || (tn->n_names == 2 && !schema))
                return FAIL_AT(a, tn->location, "42704", "type does not exist");
        if (schema && strcmp(schema, "pg_catalog") != 0)
                return FAIL_AT(a, tn->location, "42704", "type \"%s.%s\" does not exist", schema,
                               name);
        if (tn->setof || tn->pct_type)
                return FAIL_AT(a, tn->location, "0A000", "this type syntax is not supported");
        /* int[], int[3], int[][] and _int4 are all int4's array type, as in PostgreSQL
         * (declared sizes and dimensions are not enforced there either). */
        array = tn->n_array_bounds > 0;
        if (name[0] == '_' && !array) {
                array = true;
                name++;
        }
        if (strcmp(name, "varchar") == 0) {
                *ret = ROW_TYPE_TEXT;
                if (array && tn->n_typmods)
                        return FAIL_AT(a, tn->location, "0A000",
                                       "arrays of varchar(n) are not supported");
                if (array)
                        *ret = ROW_TYPE_TEXT_ARRAY;
                return resolve_varchar(a, tn, max_chars);
        }
        if (strcmp(name, "numeric") == 0 || strcmp(name, "decimal") == 0) {
                if (array)
                        return FAIL_AT(a, tn->location, "0A000",
                                       "arrays of numeric are not supported");
                *ret = ROW_TYPE_NUMERIC;
                return resolve_numeric(a, tn, max_chars);
        }
        if (strcmp(name, "bpchar") == 0) {
                *ret = ROW_TYPE_BPCHAR;
                return resolve_bpchar(a, tn, array, max_chars);
        }
        for (size_t i = 0; i < ELEMENTSOF(ours); i++) {
                if (strcmp(name, ours[i].name) != 0)
                        continue;
                if (tn->n_typmods)
                        return FAIL_AT(a, tn->location, "42601",
                                       "type modifier is not allowed for type \"%s\"", name);
                *ret = array ? row_type_array_of(ours[i].type) : ours[i].type;
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(theirs); i++)
                if (strcmp(name, theirs[i].name) == 0)
                        return FAIL_AT(a, tn->location, "0A000", "type \"%s\" is not supported",
                                       theirs[i].display);
        return FAIL_AT(a, tn->location, "42704", "type \"%s\" does not exist", name);
}

/* ---- Expressions. ---- */

/* Note 2: evaluate a call whose arguments are all literals. */
int fold_typed(struct analyzer *a, struct typed *t)
{
        const Coord__Plan__Expr *e = t->e;
        struct row_expr_ctx ctx = { .arena = &a->arena };
        struct row_datum d;
        Coord__Plan__Expr *lit;
        int r;

        struct row_error scratch;

        if (e->kind_case != COORD__PLAN__EXPR__KIND_CALL ||
            e->call->func == COORD__PLAN__FUNC__FUNC_MZ_NOW)
                return 0;
        if (e->call->func == COORD__PLAN__FUNC__FUNC_COALESCE) {
                /* Leading NULL literals go; a leading non-NULL literal is the value. */
                Coord__Plan__Call *c = e->call;
                size_t k = 0;

                while (k + 1 < c->n_args && is_literal(c->args[k]) &&
                       c->args[k]->literal->value_case == COORD__PLAN__DATUM__VALUE_NULL_VALUE)
                        k++;
                if (k + 1 == c->n_args || is_literal(c->args[k])) {
                        lit = c->args[k];
                        c->args[k] = c->args[--c->n_args];
                        lit->type = e->type;
                        expr_free(t->e);
                        t->e = lit;
                }
                return 0;
        }
        for (size_t i = 0; i < e->call->n_args; i++)
                if (!is_literal(e->call->args[i]))
                        return 0;
        r = row_expr_eval(e, NULL, 0, &ctx, &d, a->strict_fold ? a->err : &scratch);
        if (r == -ENOMEM)
                return analyzer_oom(a);
        if (r < 0) {
                row_arena_reset(&a->arena);
                return a->strict_fold ? r : 0;
        }
        lit = expr_literal((int)e->type, &d);
        row_arena_reset(&a->arena);
        if (!lit)
                return analyzer_oom(a);
        expr_free(t->e);
        t->e = lit;
        return 0;
}

/* t becomes func(t, x, y) of result type `type`, with literals x and y, folded. */
static int call3_fold(struct analyzer *a, struct typed *t, int type, Coord__Plan__Func func,
                      int tx, const struct row_datum *x, int ty, const struct row_datum *y)
{
        Coord__Plan__Expr *args[3] = { TAKE_PTR(t->e), expr_literal(tx, x), expr_literal(ty, y) };

        if (!args[1] || !args[2]) {
                for (size_t i = 0; i < 3; i++)
                        expr_free(args[i]);
                return analyzer_oom(a);
        }
        t->e = expr_call(type, func, args, 3);
        return t->e ? fold_typed(a, t) : analyzer_oom(a);
}

/* FUNC_VARCHAR(t, n, explicit) (proto/plan.proto), folded: a cast to varchar(n)
 * (explicit: cut) or an assignment to a varchar(n) column (22001 when too long).
 * A numeric t takes n as its numeric(p, s) modifier instead (sql_column.max_chars):
 * FUNC_NUMERIC_TYPMOD(t, p, s), 22003 when the value does not fit. */
int varchar_of(struct analyzer *a, struct typed *t, uint32_t n, bool explicit_)
{
        const struct row_datum dn = ROW_DATUM_INT((int64_t)n), dx = ROW_DATUM_BOOL(explicit_),
                               dp = ROW_DATUM_INT(SQL_NUMERIC_PRECISION(n)),
                               ds = ROW_DATUM_INT(SQL_NUMERIC_SCALE(n));

        if ((int)t->e->type == ROW_TYPE_NUMERIC)
                return call3_fold(a, t, ROW_TYPE_NUMERIC, COORD__PLAN__FUNC__FUNC_NUMERIC_TYPMOD,
                                  ROW_TYPE_INT4, &dp, ROW_TYPE_INT4, &ds);
        assert((int)t->e->type == ROW_TYPE_TEXT);
        return call3_fold(a, t, ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_VARCHAR, ROW_TYPE_INT4, &dn,
                          ROW_TYPE_BOOL, &dx);
}

/* Wrap t in a call of `func` with result type `type`, then fold. */
int wrap_call(struct analyzer *a, struct typed *t, Coord__Plan__Func func, int type)
{
        Coord__Plan__Expr *e = TAKE_PTR(t->e);

        t->e = expr_call(type, func, &e, 1);
        if (!t->e)
                return analyzer_oom(a);
        t->unknown = false;
        return fold_typed(a, t);
}

/* Decide the type of an untyped literal (note 1). */
int coerce_unknown(struct analyzer *a, struct typed *t, int type)
{
        const Coord__Plan__Datum *lit;
        struct row_datum d;
        Coord__Plan__Expr *e;
        int r;

        if (!t->unknown)
                return 0;
        assert(is_literal(t->e));
        lit = t->e->literal;
        t->unknown = false;
        if (lit->value_case == COORD__PLAN__DATUM__VALUE_NULL_VALUE) {
                t->e->type = (Coord__Plan__Type)type;
                return 0;
        }
        assert(lit->value_case == COORD__PLAN__DATUM__VALUE_TEXT_VALUE);
        /* For text too: a parameter's bytes come from the client unchecked (UTF-8). */
        if (row_type_is_array(type))
                r = row_array_parse((enum row_type)type, (const char *)lit->text_value.data,
                                    lit->text_value.len, &a->arena, &d, a->err);
        else
                r = row_datum_parse((enum row_type)type, (const char *)lit->text_value.data,
                                    lit->text_value.len, &d, a->err);
        if (r < 0) {
                row_arena_reset(&a->arena);
                error_at(a, t->location);
                return r;
        }
        e = expr_literal(type, &d);
        row_arena_reset(&a->arena);
        if (!e)
                return analyzer_oom(a);
        expr_free(t->e);
        t->e = e;
        return 0;
}

/* int4 -> int8 (or an integer -> numeric) for mixed arithmetic and comparisons. */
int promote_to(struct analyzer *a, struct typed *t, int type)
{
        if ((int)t->e->type == type)
                return 0;
        if (type == ROW_TYPE_NUMERIC)
                return numeric_promote(a, t);
        assert((int)t->e->type == ROW_TYPE_INT4 && type == ROW_TYPE_INT8);
        if (is_literal(t->e)) {
                t->e->type = (Coord__Plan__Type)type;
                return 0;
        }
        return wrap_call(a, t, COORD__PLAN__FUNC__FUNC_CAST, type);
}

/* An integer operand of numeric arithmetic or comparison: cast to numeric (folded for
 * a literal). */
int numeric_promote(struct analyzer *a, struct typed *t)
{
        if ((int)t->e->type == ROW_TYPE_NUMERIC)
                return 0;
        assert(type_is_int((int)t->e->type));
        return wrap_call(a, t, COORD__PLAN__FUNC__FUNC_CAST, ROW_TYPE_NUMERIC);
}

/* An explicit cast (`x::type`, CAST(x AS type)). */
int cast_to(struct analyzer *a, struct typed *t, int type, int location)
{
        int from;

        if (t->unknown)
                return coerce_unknown(a, t, type);
        from = (int)t->e->type;
        if (from == type)
                return 0;
        if (!row_expr_cast_allowed((enum row_type)from, (enum row_type)type))
                return FAIL_AT(a, location, "42846", "cannot cast type %s to %s",
                               row_type_name((enum row_type)from),
                               row_type_name((enum row_type)type));
        return wrap_call(a, t, COORD__PLAN__FUNC__FUNC_CAST, type);
}

int require_bool(struct analyzer *a, struct typed *t, const char *what)
{
        int r = coerce_unknown(a, t, ROW_TYPE_BOOL);

        if (r < 0)
                return r;
        if ((int)t->e->type != ROW_TYPE_BOOL)
                return FAIL_AT(a, t->location, "42804",
                               "argument of %s must be type boolean, not type %s", what,
                               row_type_name((enum row_type)t->e->type));
        return 0;
}

int no_operator(struct analyzer *a, const char *op, const struct typed *l,
                       const struct typed *r, int location)
{
        int rc;

        if (l)
                rc = FAIL_AT(a, location, "42883", "operator does not exist: %s %s %s",
                             typed_name(l), op, typed_name(r));
        else
                rc = FAIL_AT(a, location, "42883", "operator does not exist: %s %s", op,
                             typed_name(r));
        row_error_hint(a->err, "%s", HINT_OPERATOR);
        return rc;
}

static const struct {
        const char *name;
        Coord__Plan__Func func;
        bool comparison;
} binary_ops[] = {
        { "+", COORD__PLAN__FUNC__FUNC_ADD, false },
        { "-", COORD__PLAN__FUNC__FUNC_SUB, false },
        { "*", COORD__PLAN__FUNC__FUNC_MUL, false },
        { "/", COORD__PLAN__FUNC__FUNC_DIV, false },
        { "%", COORD__PLAN__FUNC__FUNC_MOD, false },
        { "=", COORD__PLAN__FUNC__FUNC_EQ, true },
        { "<>", COORD__PLAN__FUNC__FUNC_NE, true },
        { "<", COORD__PLAN__FUNC__FUNC_LT, true },
        { "<=", COORD__PLAN__FUNC__FUNC_LE, true },
        { ">", COORD__PLAN__FUNC__FUNC_GT, true },
        { ">=", COORD__PLAN__FUNC__FUNC_GE, true },
};

/* Resolve operand types for a binary operator, then build and fold the call into l. */
int binary_op(struct analyzer *a, const char *op, struct typed *l, struct typed *r,
                  int location)
{
        Coord__Plan__Expr *args[2];
        Coord__Plan__Func func = COORD__PLAN__FUNC__FUNC_UNSPECIFIED;
        bool comparison = false;
        int type, rc;

        for (size_t i = 0; i < ELEMENTSOF(binary_ops); i++)
                if (strcmp(op, binary_ops[i].name) == 0) {
                        func = binary_ops[i].func;
                        comparison = binary_ops[i].comparison;
                }
        if (func == COORD__PLAN__FUNC__FUNC_UNSPECIFIED)
                return no_operator(a, op, l, r, location);

        if (l->unknown && r->unknown) {
                if (!comparison) {
                        rc = FAIL_AT(a, location, "42725",
                                     "operator is not unique: unknown %s unknown", op);
                        row_error_hint(a->err, "Could not choose a best candidate operator. "
                                               "You might need to add explicit type casts.");
                        return rc;
                }
                /* PostgreSQL compares two untyped literals as text. */
                rc = coerce_unknown(a, l, ROW_TYPE_TEXT);
                if (rc >= 0)
                        rc = coerce_unknown(a, r, ROW_TYPE_TEXT);
                if (rc < 0)
                        return rc;
        }
        /* An untyped operand takes the other's type, where the operator exists for it. */
        if (l->unknown && (comparison || type_is_number((int)r->e->type)))
                rc = coerce_unknown(a, l, (int)r->e->type);
        else if (r->unknown && (comparison || type_is_number((int)l->e->type)))
                rc = coerce_unknown(a, r, (int)l->e->type);
        else
                rc = 0;
        if (rc < 0)
                return rc;
        if (l->unknown || r->unknown)
                return no_operator(a, op, l, r, location);
        rc = comparison ? bpchar_compare_operands(a, l, r) : 0;
        if (rc < 0)
                return rc;
        if (rc == 2)
                return no_operator(a, op, l, r, location);

        if (type_is_int((int)l->e->type) && type_is_int((int)r->e->type)) {
                bool wide = (int)l->e->type == ROW_TYPE_INT8 || (int)r->e->type == ROW_TYPE_INT8;

                type = wide ? ROW_TYPE_INT8 : ROW_TYPE_INT4;
                rc = promote_to(a, l, type);
                if (rc >= 0)
                        rc = promote_to(a, r, type);
                if (rc < 0)
                        return rc;
        } else if (type_is_number((int)l->e->type) && type_is_number((int)r->e->type)) {
                /* int op numeric: the integer is cast to numeric, as PostgreSQL's
                 * implicit int -> numeric cast resolves it. */
                rc = numeric_promote(a, l);
                if (rc >= 0)
                        rc = numeric_promote(a, r);
                if (rc < 0)
                        return rc;
        } else if (!comparison || l->e->type != r->e->type) {
                return no_operator(a, op, l, r, location);
        }

        args[0] = TAKE_PTR(l->e);
        args[1] = TAKE_PTR(r->e);
        l->e = expr_call(comparison ? ROW_TYPE_BOOL : (int)args[0]->type, func, args, 2);
        if (!l->e)
                return analyzer_oom(a);
        l->location = location;
        return fold_typed(a, l);
}

static int analyze_any_all(struct analyzer *a, const PgQuery__AExpr *x, const char *op,
                           struct typed *ret);
static bool is_like_op(const char *op)
{
        return strcmp(op, "~~") == 0 || strcmp(op, "!~~") == 0 || strcmp(op, "~~*") == 0 ||
               strcmp(op, "!~~*") == 0;
}

/* The regular expression match operators (FUNC_REGEX_MATCH), planned as LIKE is. */
bool is_regex_op(const char *op)
{
        return strcmp(op, "~") == 0 || strcmp(op, "!~") == 0 || strcmp(op, "~*") == 0 ||
               strcmp(op, "!~*") == 0;
}

int analyze_a_expr(struct analyzer *a, const PgQuery__AExpr *x, struct typed *ret)
{
        _cleanup_(typed_done) struct typed l = { .location = -1 }, r = { .location = -1 };
        const char *op = x->n_name ? node_string(x->name[x->n_name - 1]) : NULL;
        int rc;

        /* OPERATOR(schema.op): PostgreSQL's operators are all in pg_catalog. */
        if (x->n_name > 2 ||
            (x->n_name == 2 && strcmp(node_string(x->name[0]) ?: "", "pg_catalog") != 0))
                return FAIL_AT(a, x->location, "42883", "operator does not exist: %s",
                               op ? op : "?");
        switch (x->kind) {
        case PG_QUERY__A__EXPR__KIND__AEXPR_IN:
                return analyze_in(a, x, op ? op : "", ret);
        case PG_QUERY__A__EXPR__KIND__AEXPR_BETWEEN:
        case PG_QUERY__A__EXPR__KIND__AEXPR_NOT_BETWEEN:
        case PG_QUERY__A__EXPR__KIND__AEXPR_BETWEEN_SYM:
        case PG_QUERY__A__EXPR__KIND__AEXPR_NOT_BETWEEN_SYM:
                return analyze_between(a, x, ret);
        case PG_QUERY__A__EXPR__KIND__AEXPR_LIKE:
        case PG_QUERY__A__EXPR__KIND__AEXPR_ILIKE:
                if (!op || !is_like_op(op))
                        break;
                return analyze_like(a, x, op, ret);
        case PG_QUERY__A__EXPR__KIND__AEXPR_DISTINCT:
        case PG_QUERY__A__EXPR__KIND__AEXPR_NOT_DISTINCT:
                return analyze_distinct(a, x, ret);
        case PG_QUERY__A__EXPR__KIND__AEXPR_NULLIF:
                return analyze_nullif(a, x, ret);
        case PG_QUERY__A__EXPR__KIND__AEXPR_OP_ANY:
        case PG_QUERY__A__EXPR__KIND__AEXPR_OP_ALL:
                if (!op || !x->lexpr || !x->rexpr)
                        break;
                return analyze_any_all(a, x, op, ret);
        case PG_QUERY__A__EXPR__KIND__AEXPR_OP:
                if (op && x->lexpr && (is_like_op(op) || is_regex_op(op)))
                        return analyze_like(a, x, op, ret);
                break;
        default:
                break;
        }
        if (x->kind != PG_QUERY__A__EXPR__KIND__AEXPR_OP) {
                static const char *const names[] = {
                        [PG_QUERY__A__EXPR__KIND__AEXPR_OP_ANY] = "ANY",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_OP_ALL] = "ALL",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_DISTINCT] = "IS DISTINCT FROM",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_NOT_DISTINCT] = "IS NOT DISTINCT FROM",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_NULLIF] = "NULLIF",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_IN] = "IN",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_LIKE] = "LIKE",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_ILIKE] = "ILIKE",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_SIMILAR] = "SIMILAR TO",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_BETWEEN] = "BETWEEN",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_NOT_BETWEEN] = "NOT BETWEEN",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_BETWEEN_SYM] = "BETWEEN SYMMETRIC",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_NOT_BETWEEN_SYM] = "NOT BETWEEN SYMMETRIC",
                };
                const char *name = (unsigned)x->kind < ELEMENTSOF(names) ? names[x->kind] : NULL;

                return FAIL_AT(a, x->location, "0A000", "%s is not supported yet",
                               name ? name : "this operator");
        }
        if (!op || !x->rexpr)
                return FAIL_AT(a, x->location, "0A000", "this operator form is not supported");
        rc = analyze_expr(a, x->rexpr, &r);
        if (rc < 0)
                return rc;
        if (!x->lexpr) {
                /* Prefix operators: unary minus and plus. */
                if (r.unknown || !type_is_number((int)r.e->type) ||
                    (strcmp(op, "-") && strcmp(op, "+")))
                        return no_operator(a, op, NULL, &r, x->location);
                if (op[0] == '-') {
                        rc = wrap_call(a, &r, COORD__PLAN__FUNC__FUNC_NEG, (int)r.e->type);
                        if (rc < 0)
                                return rc;
                }
                r.location = x->location;
                *ret = r;
                r.e = NULL;
                return 0;
        }
        rc = analyze_expr(a, x->lexpr, &l);
        if (rc < 0)
                return rc;
        rc = strcmp(op, "||") == 0 ? concat_op(a, &l, &r, x->location)
                                   : binary_op(a, op, &l, &r, x->location);
        if (rc < 0)
                return rc;
        *ret = l;
        l.e = NULL;
        return 0;
}

int analyze_bool_expr(struct analyzer *a, const PgQuery__BoolExpr *x, struct typed *ret)
{
        static const struct {
                const char *name;
                Coord__Plan__Func func;
        } ops[] = {
                [PG_QUERY__BOOL_EXPR_TYPE__AND_EXPR] = { "AND", COORD__PLAN__FUNC__FUNC_AND },
                [PG_QUERY__BOOL_EXPR_TYPE__OR_EXPR] = { "OR", COORD__PLAN__FUNC__FUNC_OR },
                [PG_QUERY__BOOL_EXPR_TYPE__NOT_EXPR] = { "NOT", COORD__PLAN__FUNC__FUNC_NOT },
        };
        _cleanup_free_ Coord__Plan__Expr **args = NULL;
        size_t n = 0;
        int rc = 0;

        if ((unsigned)x->boolop >= ELEMENTSOF(ops) || !ops[x->boolop].name || x->n_args < 1 ||
            (x->boolop == PG_QUERY__BOOL_EXPR_TYPE__NOT_EXPR && x->n_args != 1))
                return FAIL_AT(a, x->location, "XX000", "malformed boolean expression");
        args = malloc(x->n_args * sizeof(*args));
        if (!args)
                return analyzer_oom(a);
        for (; n < x->n_args; n++) {
                struct typed t = { .location = -1 };

                rc = analyze_expr(a, x->args[n], &t);
                if (rc >= 0)
                        rc = require_bool(a, &t, ops[x->boolop].name);
                if (rc < 0) {
                        typed_done(&t);
                        goto fail;
                }
                args[n] = t.e;
        }
        ret->e = expr_call(ROW_TYPE_BOOL, ops[x->boolop].func, args, n);
        n = 0;
        if (!ret->e)
                return analyzer_oom(a);
        ret->unknown = false;
        ret->location = x->location;
        return fold_typed(a, ret);
fail:
        for (size_t i = 0; i < n; i++)
                expr_free(args[i]);
        return rc;
}

/* Functions whose value is not a function of the data (Materialize refuses them in
 * materialized views); only mz_now() can be planned. */
static const char *const nondeterministic_functions[] = {
        "now", "random", "clock_timestamp", "statement_timestamp", "transaction_timestamp",
        "timeofday", "gen_random_uuid", "uuid_generate_v4", "setseed",
        "current_timestamp", "localtimestamp", "pg_postmaster_start_time",
};

/* Functions that psql's describe commands call and Coord does not have: refused by name
 * before their arguments are looked at (\d+ NAME's). */
static const struct {
        const char *name, *why;
} unsupported_functions[] = {
        { "unnest", "set-returning functions are not supported" },
        { "pg_get_viewdef", "view definitions are not available" },
        { "obj_description", "comments are not supported" },
        { "col_description", "comments are not supported" },
        { "pg_size_pretty", "sizes are not available" },
        { "pg_table_size", "sizes are not available" },
        { "pg_relation_size", "sizes are not available" },
        { "pg_total_relation_size", "sizes are not available" },
};

bool is_aggregate_name(const char *name)
{
        static const char *const aggregates[] = { "count", "sum", "min", "max", "avg",
                                                  "array_agg", "string_agg" };

        for (size_t i = 0; i < ELEMENTSOF(aggregates); i++)
                if (strcmp(name, aggregates[i]) == 0)
                        return true;
        return false;
}

/* 42883 for f, naming its argument types the way PostgreSQL does (an aggregate's
 * arguments are analyzed as inside it). */
int no_function(struct analyzer *a, const PgQuery__FuncCall *f, const char *name)
{
        bool in_agg = a->in_agg;
        char types[512] = "";
        size_t used = 0;

        a->in_agg = in_agg || is_aggregate_name(name);
        for (size_t i = 0; i < f->n_args; i++) {
                struct typed t = { .location = -1 };
                int rc = analyze_expr(a, f->args[i], &t), w;

                if (rc < 0) {
                        a->in_agg = in_agg;
                        return rc;
                }
                w = snprintf(types + used, sizeof(types) - used, "%s%s", i ? ", " : "",
                             typed_name(&t));
                typed_done(&t);
                if (w > 0 && (size_t)w < sizeof(types) - used)
                        used += (size_t)w;
        }
        a->in_agg = in_agg;
        FAIL_AT(a, f->location, "42883", "function %s(%s) does not exist", name, types);
        row_error_hint(a->err, "%s", HINT_FUNCTION);
        return -EINVAL;
}

int cannot_materialize(struct analyzer *a, int location, const char *what)
{
        return FAIL_AT(a, location, "0A000", "cannot materialize call to %s", what);
}

/* A literal of `type` holding a copy of d, into ret; unknown: an untyped one (note 1). */
int typed_literal(struct analyzer *a, int type, const struct row_datum *d, bool unknown,
                         int location, struct typed *ret)
{
        ret->e = expr_literal(type, d);
        if (!ret->e)
                return analyzer_oom(a);
        ret->unknown = unknown;
        ret->location = location;
        return 0;
}

/* current_user & co.: a literal of the session's value.  Not in a view or a
 * materialized view: a view's plan is stored and inlined, so it would keep its
 * creator's value, and Materialize refuses them in materialized views. */
static int session_value(struct analyzer *a, const char *what, int location, struct typed *ret)
{
        const struct sql_session *ss = a->params ? a->params->session : NULL;
        struct row_datum d;
        const char *v;

        if (a->materialize)
                return cannot_materialize(a, location, what);
        if (a->in_view)
                return FAIL_AT(a, location, "0A000", "%s is not supported in views", what);
        if (!ss)
                return FAIL_AT(a, location, "0A000", "%s is not supported here", what);
        if (strcmp(what, "pg_backend_pid()") == 0) {
                d = ROW_DATUM_INT(ss->backend_pid);
                return typed_literal(a, ROW_TYPE_INT4, &d, false, location, ret);
        }
        v = strcmp(what, "current_schema") == 0 || strcmp(what, "current_schema()") == 0
                    ? "public"
            : strcmp(what, "current_database()") == 0 || strcmp(what, "current_catalog") == 0
                    ? ss->database
                    : ss->user;
        v = v ? v : "";
        d = (struct row_datum)ROW_DATUM_TEXT(v, (uint32_t)strlen(v));
        return typed_literal(a, ROW_TYPE_TEXT, &d, false, location, ret);
}

int analyze_func_call(struct analyzer *a, const PgQuery__FuncCall *f, struct typed *ret)
{
        const char *name = f->n_funcname ? node_string(f->funcname[f->n_funcname - 1]) : NULL;
        int r;

        if (!name)
                return FAIL_AT(a, f->location, "42883", "function does not exist");
        if (f->over)
                return FAIL_AT(a, f->location, "0A000", "window functions are not supported");
        if (f->agg_star || is_aggregate_name(name))
                return analyze_aggregate(a, f, name, ret);
        if (f->n_args == 0 && !f->agg_distinct && !f->n_agg_order && !f->agg_filter) {
                static const char *const session_functions[] = {
                        "current_database", "current_schema", "pg_backend_pid",
                };
                char what[32];

                for (size_t i = 0; i < ELEMENTSOF(session_functions); i++)
                        if (strcmp(name, session_functions[i]) == 0) {
                                snprintf(what, sizeof(what), "%s()", name);
                                return session_value(a, what, f->location, ret);
                        }
        }
        for (size_t i = 0; i < ELEMENTSOF(unsupported_functions); i++)
                if (strcmp(name, unsupported_functions[i].name) == 0)
                        return FAIL_AT(a, f->location, "0A000", "function %s() is not supported: %s",
                                       name, unsupported_functions[i].why);
        for (size_t i = 0; i < ELEMENTSOF(nondeterministic_functions); i++) {
                char what[80];

                if (strcmp(name, nondeterministic_functions[i]) != 0)
                        continue;
                snprintf(what, sizeof(what), "%s()", name);
                if (a->materialize)
                        return cannot_materialize(a, f->location, what);
                return FAIL_AT(a, f->location, "0A000", "function %s is not supported", what);
        }
        if (strcmp(name, "mz_now") == 0 && f->n_args == 0 && !f->agg_distinct &&
            !f->n_agg_order && !f->agg_filter) {
                if (a->no_mz_now)
                        return FAIL_AT(a, f->location, "0A000",
                                       "calls to mz_now() in %s are not supported", a->no_mz_now);
                if (a->materialize)
                        return cannot_materialize(a, f->location, "mz_now()");
                a->nondeterministic = true;
                ret->e = expr_call(ROW_TYPE_INT8, COORD__PLAN__FUNC__FUNC_MZ_NOW, NULL, 0);
                if (!ret->e)
                        return analyzer_oom(a);
                ret->unknown = false;
                ret->location = f->location;
                return 0;
        }
        r = analyze_scalar_func(a, f, name, ret);
        if (r == 0)
                r = analyze_catalog_func(a, f, name, ret);
        if (r == 0)
                r = analyze_describe_func(a, f, name, ret);
        if (r == 0)
                r = analyze_array_func(a, f, name, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        return no_function(a, f, name);
}

/* The SQL value functions' names, as PostgreSQL names their columns too. */
static const char *const sql_value_function_names[] = {
        [PG_QUERY__SQLVALUE_FUNCTION_OP__SVFOP_CURRENT_DATE] = "current_date",
        [PG_QUERY__SQLVALUE_FUNCTION_OP__SVFOP_CURRENT_TIME] = "current_time",
        [PG_QUERY__SQLVALUE_FUNCTION_OP__SVFOP_CURRENT_TIME_N] = "current_time",
        [PG_QUERY__SQLVALUE_FUNCTION_OP__SVFOP_CURRENT_TIMESTAMP] = "current_timestamp",
        [PG_QUERY__SQLVALUE_FUNCTION_OP__SVFOP_CURRENT_TIMESTAMP_N] = "current_timestamp",
        [PG_QUERY__SQLVALUE_FUNCTION_OP__SVFOP_LOCALTIME] = "localtime",
        [PG_QUERY__SQLVALUE_FUNCTION_OP__SVFOP_LOCALTIME_N] = "localtime",
        [PG_QUERY__SQLVALUE_FUNCTION_OP__SVFOP_LOCALTIMESTAMP] = "localtimestamp",
        [PG_QUERY__SQLVALUE_FUNCTION_OP__SVFOP_LOCALTIMESTAMP_N] = "localtimestamp",
        [PG_QUERY__SQLVALUE_FUNCTION_OP__SVFOP_CURRENT_ROLE] = "current_role",
        [PG_QUERY__SQLVALUE_FUNCTION_OP__SVFOP_CURRENT_USER] = "current_user",
        [PG_QUERY__SQLVALUE_FUNCTION_OP__SVFOP_USER] = "user",
        [PG_QUERY__SQLVALUE_FUNCTION_OP__SVFOP_SESSION_USER] = "session_user",
        [PG_QUERY__SQLVALUE_FUNCTION_OP__SVFOP_CURRENT_CATALOG] = "current_catalog",
        [PG_QUERY__SQLVALUE_FUNCTION_OP__SVFOP_CURRENT_SCHEMA] = "current_schema",
};

const char *sql_value_function_name(PgQuery__SQLValueFunctionOp op)
{
        return (unsigned)op < ELEMENTSOF(sql_value_function_names) ? sql_value_function_names[op]
                                                                    : NULL;
}

/* CURRENT_TIMESTAMP, CURRENT_USER & co.: the session's values; no clock functions. */
int analyze_sql_value_function(struct analyzer *a, const PgQuery__SQLValueFunction *v,
                                      struct typed *ret)
{
        const char *name = sql_value_function_name(v->op);

        if (v->op >= PG_QUERY__SQLVALUE_FUNCTION_OP__SVFOP_CURRENT_ROLE && name)
                return session_value(a, name, v->location, ret);
        if (name && a->materialize)
                return cannot_materialize(a, v->location, name);
        return FAIL_AT(a, v->location, "0A000", "%s is not supported", name ? name : "this function");
}

/* Common type of values that meet (COALESCE, VALUES, UNION): untyped literals take the
 * others' type (text if all are untyped), int4 and int8 meet as int8.  bpchar and text
 * meet as the first of them (PostgreSQL's select_common_type(): each casts implicitly to
 * the other), or as text where they are compared (IN: PostgreSQL resolves each `x = v`
 * as an operator, bpchar = text being text = text).  Where they are values of one column,
 * bpchar from more than one source is refused (adapter-sql-bpchar.c invariant 1).  -1 with err when two types cannot meet. */
int common_type(struct analyzer *a, struct typed *v, size_t n, const char *what, int *ret)
{
        bool compared = strcmp(what, "IN") == 0 || !isalpha((unsigned char)what[0]);
        size_t sources = 0;
        int type = -1;

        for (size_t i = 0; i < n; i++) {
                int t;

                if (v[i].unknown)
                        continue;
                t = (int)v[i].e->type;
                if (type < 0 || type == t)
                        type = t;
                else if (type_is_int(type) && type_is_int(t))
                        type = ROW_TYPE_INT8;
                else if (type_is_number(type) && type_is_number(t))
                        type = ROW_TYPE_NUMERIC;        /* integers and numeric: numeric */
                else if (type == ROW_TYPE_TEXT && t == ROW_TYPE_BPCHAR)
                        continue;
                else if (type == ROW_TYPE_BPCHAR && t == ROW_TYPE_TEXT)
                        type = compared ? ROW_TYPE_TEXT : type;   /* the first wins */
                else
                        return FAIL_AT(a, v[i].location, "42804",
                                       "%s types %s and %s cannot be matched", what,
                                       row_type_name((enum row_type)type),
                                       row_type_name((enum row_type)t));
        }
        if (type < 0)
                type = ROW_TYPE_TEXT;
        /* PostgreSQL compares x IN (v, w, ...) as the list's common type, bpchar when
         * bpchar comes first (text values then lose their trailing spaces too), but
         * x IN (v) and column values as operators: not made alike here. */
        for (size_t i = 0; n > 2 && strcmp(what, "IN") == 0 && i < n; i++)
                if (typed_is_bpchar(&v[i]) && type == ROW_TYPE_TEXT)
                        return bpchar_refuse(a, v[i].location, "IN with text values");
        for (size_t i = 0; type == ROW_TYPE_BPCHAR && !compared && i < n; i++)
                if (!(v[i].unknown && v[i].e->literal->value_case ==
                                              COORD__PLAN__DATUM__VALUE_NULL_VALUE) &&
                    ++sources > 1)
                        return bpchar_refuse(a, v[i].location, what);
        for (size_t i = 0; i < n; i++) {
                int r = v[i].unknown ? coerce_unknown(a, &v[i], type) : 0;

                if (r >= 0 && (compared || type == ROW_TYPE_TEXT))
                        r = bpchar_as_text(a, &v[i]);
                if (r >= 0)
                        r = promote_to(a, &v[i], type == ROW_TYPE_BPCHAR && compared
                                                         ? ROW_TYPE_TEXT : type);

                if (r < 0)
                        return r;
        }
        *ret = type == ROW_TYPE_BPCHAR && compared ? ROW_TYPE_TEXT : type;
        return 0;
}

/* COALESCE, GREATEST, LEAST: func(args) of the arguments' common type, folded.
 * character(n) is refused in GREATEST and LEAST (its comparisons drop trailing spaces,
 * its values keep them). */
static int analyze_variadic(struct analyzer *a, PgQuery__Node **in, size_t n_in, const char *what,
                            Coord__Plan__Func func, int location, struct typed *ret)
{
        _cleanup_free_ struct typed *v = calloc(n_in ? n_in : 1, sizeof(*v));
        _cleanup_free_ Coord__Plan__Expr **args = calloc(n_in ? n_in : 1, sizeof(*args));
        int r = 0, type;
        size_t n = 0;

        if (!v || !args)
                return analyzer_oom(a);
        for (; n < n_in && r >= 0; n++) {
                v[n].location = -1;
                r = analyze_expr(a, in[n], &v[n]);
        }
        if (r >= 0)
                r = common_type(a, v, n, what, &type);
        if (r >= 0 && type == ROW_TYPE_BPCHAR && func != COORD__PLAN__FUNC__FUNC_COALESCE)
                r = bpchar_refuse(a, location, what);
        return build_call_typed(a, r, v, args, n, ret, r < 0 ? 0 : type, func, location);
}

int analyze_minmax(struct analyzer *a, const PgQuery__MinMaxExpr *m, struct typed *ret)
{
        bool greatest = m->op == PG_QUERY__MIN_MAX_OP__IS_GREATEST;

        return analyze_variadic(a, m->args, m->n_args, greatest ? "GREATEST" : "LEAST",
                                greatest ? COORD__PLAN__FUNC__FUNC_GREATEST : COORD__PLAN__FUNC__FUNC_LEAST,
                                m->location, ret);
}

int analyze_coalesce(struct analyzer *a, const PgQuery__CoalesceExpr *c, struct typed *ret)
{
        return analyze_variadic(a, c->args, c->n_args, "COALESCE", COORD__PLAN__FUNC__FUNC_COALESCE,
                                c->location, ret);
}

bool scope_has_qual(const struct scope *sc, const char *q)
{
        for (size_t i = 0; sc && i < sc->n_quals; i++)
                if (strcmp(sc->quals[i], q) == 0)
                        return true;
        return false;
}

/* qualifier.name in sc: 1 and *found, 0 when it is not there, or the error (42702). */
static int scope_find(struct analyzer *a, const struct scope *sc, const char *qualifier,
                      const char *name, int location, size_t *found)
{
        *found = SIZE_MAX;
        if (qualifier && !scope_has_qual(sc, qualifier))
                return 0;
        for (size_t i = 0; sc && i < sc->n; i++) {
                const struct scope_col *col = &sc->cols[i];

                if (strcmp(col->name, name) != 0)
                        continue;
                if (qualifier ? !col->qual || strcmp(col->qual, qualifier) != 0 : col->hidden)
                        continue;
                if (*found != SIZE_MAX)
                        return FAIL_AT(a, location, "42702", "column reference \"%s\" is ambiguous",
                                       name);
                *found = i;
        }
        return *found != SIZE_MAX;
}

int analyze_column_ref(struct analyzer *a, const PgQuery__ColumnRef *c, struct typed *ret)
{
        const char *qualifier = NULL, *name = NULL;
        const struct scope *sc = a->scope;
        size_t found = SIZE_MAX;
        bool qual_known;
        unsigned level = 0;
        int r;

        if (c->n_fields < 1 || c->n_fields > 2)
                return FAIL_AT(a, c->location, "0A000",
                               "column references with %zu parts are not supported", c->n_fields);
        if (c->fields[c->n_fields - 1]->node_case == PG_QUERY__NODE__NODE_A_STAR)
                return FAIL_AT(a, c->location, "0A000", "* is not supported here");
        name = node_string(c->fields[c->n_fields - 1]);
        if (c->n_fields == 2)
                qualifier = node_string(c->fields[0]);
        if (!name || (c->n_fields == 2 && !qualifier))
                return FAIL_AT(a, c->location, "42601", "improper column reference");
        r = scope_find(a, sc, qualifier, name, c->location, &found);
        if (r < 0)
                return r;
        if (r > 0) {
                ret->e = expr_column(sc->cols[found].type, (uint32_t)found);
                if (!ret->e)
                        return analyzer_oom(a);
                ret->unknown = false;
                ret->location = c->location;
                return 0;
        }
        /* A column of an enclosing query: a correlated subquery ("Subqueries"). */
        qual_known = !qualifier || scope_has_qual(sc, qualifier);
        for (const struct outer *o = a->outer; o; o = o->up) {
                level++;
                qual_known = qual_known || scope_has_qual(o->scope, qualifier);
                r = scope_find(a, o->scope, qualifier, name, c->location, &found);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                if (level > 1)
                        return FAIL_AT(a, c->location, "0A000", "a reference to column \"%s\" of a "
                                       "query two or more levels out is not supported", name);
                if (o->cte)
                        return FAIL_AT(a, c->location, "0A000", "a WITH query may not refer to "
                                       "column \"%s\" of an enclosing query: not supported", name);
                if (o->refuse)
                        return FAIL_AT(a, c->location, "0A000", "a subquery in HAVING or in the list "
                                       "of a grouped SELECT may not refer to the query it is in "
                                       "(column \"%s\"): not supported yet", name);
                if (!o->dom)    /* plan_subquery(): a UNION's or VALUES' */
                        return FAIL_AT(a, c->location, "0A000", "a subquery with UNION, INTERSECT, "
                                       "EXCEPT or VALUES may not refer to column \"%s\" of the "
                                       "query it is in: not supported", name);
                r = domain_ref(a, o, found, name, c->location, ret);
                if (r != 0)
                        return r < 0 ? r : 0;
                if (!o->collect)
                        return FAIL_AT(a, c->location, "0A000", "a subquery may refer to column "
                                       "\"%s\" of the query it is in only in equalities joined by "
                                       "AND in its WHERE", name);
                ret->e = expr_column(o->scope->cols[found].type, OUTER_MARK | (uint32_t)found);
                if (!ret->e)
                        return analyzer_oom(a);
                ret->unknown = false;
                ret->location = c->location;
                return 0;
        }
        if (!qual_known)
                return FAIL_AT(a, c->location, "42P01",
                               "missing FROM-clause entry for table \"%s\"", qualifier);
        if (qualifier)
                return FAIL_AT(a, c->location, "42703", "column %s.%s does not exist", qualifier,
                               name);
        return FAIL_AT(a, c->location, "42703", "column \"%s\" does not exist", name);
}

/* An untyped literal holding text. */
static int unknown_literal(struct analyzer *a, const char *s, size_t len, int location,
                           struct typed *ret)
{
        struct row_datum d = ROW_DATUM_TEXT(s, (uint32_t)len);

        return typed_literal(a, ROW_TYPE_TEXT, &d, true, location, ret);
}

int analyze_const(struct analyzer *a, const PgQuery__AConst *c, struct typed *ret)
{
        struct row_datum d;
        int type, r;
        const char *s;

        ret->location = c->location;
        if (c->isnull) {
                d = ROW_DATUM_NULL;
                ret->e = expr_literal(ROW_TYPE_TEXT, &d);
                if (!ret->e)
                        return analyzer_oom(a);
                ret->unknown = true;
                return 0;
        }
        switch (c->val_case) {
        case PG_QUERY__A__CONST__VAL_IVAL:
                d = ROW_DATUM_INT(c->ival->ival);
                type = ROW_TYPE_INT4;
                break;
        case PG_QUERY__A__CONST__VAL_FVAL:
                /* The parser leaves integers beyond int4 as "float" strings, and
                 * decimals (1.5, .5, 1e3) are floats too.  As PostgreSQL's make_const():
                 * an integer is int4 when it fits (-2147483648 does), else int8, else
                 * numeric; anything else is numeric. */
                s = c->fval->fval ? c->fval->fval : "";
                if (s[s[0] == '-'] && strspn(s + (s[0] == '-'), "0123456789") ==
                                              strlen(s + (s[0] == '-')) &&
                    row_datum_parse(ROW_TYPE_INT8, s, strlen(s), &d, NULL) == 0) {
                        type = row_datum_fits(&d, ROW_TYPE_INT4) ? ROW_TYPE_INT4 : ROW_TYPE_INT8;
                        break;
                }
                r = row_datum_parse(ROW_TYPE_NUMERIC, s, strlen(s), &d, a->err);
                if (r < 0) {
                        error_at(a, c->location);
                        return r;
                }
                type = ROW_TYPE_NUMERIC;
                break;
        case PG_QUERY__A__CONST__VAL_BOOLVAL:
                d = ROW_DATUM_BOOL(c->boolval->boolval);
                type = ROW_TYPE_BOOL;
                break;
        case PG_QUERY__A__CONST__VAL_SVAL:
                s = c->sval->sval ? c->sval->sval : "";
                return unknown_literal(a, s, strlen(s), c->location, ret);
        default:
                return FAIL_AT(a, c->location, "0A000", "bit strings are not supported");
        }
        ret->e = expr_literal(type, &d);
        if (!ret->e)
                return analyzer_oom(a);
        ret->unknown = false;
        return 0;
}

int analyze_param(struct analyzer *a, const PgQuery__ParamRef *p, struct typed *ret)
{
        const struct sql_params *ps = a->params;
        const char *value;
        uint32_t oid;
        int r;

        if (!ps || p->number < 1 || (size_t)p->number > ps->n)
                return FAIL_AT(a, p->location, "42P02", "there is no parameter $%d", p->number);
        value = ps->values ? ps->values[p->number - 1] : NULL;
        oid = ps->types ? ps->types[p->number - 1] : 0;
        if (oid != 0 && !row_type_valid((int)oid))
                return FAIL_AT(a, p->location, "0A000", "parameter $%d has unsupported type %u",
                               p->number, oid);
        if (!value) {
                struct row_datum d = ROW_DATUM_NULL;

                ret->e = expr_literal(oid ? (int)oid : ROW_TYPE_TEXT, &d);
                if (!ret->e)
                        return analyzer_oom(a);
                ret->unknown = oid == 0;
                ret->location = p->location;
                return 0;
        }
        r = unknown_literal(a, value, strlen(value), p->location, ret);
        if (r < 0 || oid == 0)
                return r;
        return coerce_unknown(a, ret, (int)oid);
}

/* x op ANY (array) / x op ALL (array), op a comparison.  An untyped array takes x's array
 * type; an untyped x the array's element type (both untyped: text, as PostgreSQL). */
static int analyze_any_all(struct analyzer *a, const PgQuery__AExpr *x, const char *op,
                           struct typed *ret)
{
        _cleanup_(typed_done) struct typed l = { .location = -1 }, r = { .location = -1 };
        bool any = x->kind == PG_QUERY__A__EXPR__KIND__AEXPR_OP_ANY;
        Coord__Plan__Func func = COORD__PLAN__FUNC__FUNC_UNSPECIFIED;
        struct row_datum d;
        Coord__Plan__Expr *opl;
        int rc, elem;

        for (size_t i = 0; i < ELEMENTSOF(binary_ops); i++)
                if (strcmp(op, binary_ops[i].name) == 0 && binary_ops[i].comparison)
                        func = binary_ops[i].func;
        if (func == COORD__PLAN__FUNC__FUNC_UNSPECIFIED)
                return FAIL_AT(a, x->location, "0A000", "operator %s with %s is not supported", op,
                               any ? "ANY" : "ALL");
        rc = analyze_expr(a, x->lexpr, &l);
        if (rc >= 0)
                rc = analyze_expr(a, x->rexpr, &r);
        if (rc >= 0 && l.unknown && r.unknown)
                rc = coerce_unknown(a, &l, ROW_TYPE_TEXT);
        if (rc >= 0 && r.unknown)
                rc = row_type_valid(row_type_array_of((enum row_type)l.e->type))
                             ? coerce_unknown(a, &r, row_type_array_of((enum row_type)l.e->type))
                             : FAIL_AT(a, x->location, "0A000", "arrays of %s are not supported",
                                       typed_name(&l));
        if (rc < 0)
                return rc;
        if (!row_type_is_array((int)r.e->type))
                return FAIL_AT(a, x->location, "42809", "op ANY/ALL (array) requires array on "
                                                        "right side");
        elem = (int)row_type_element((enum row_type)r.e->type);
        rc = coerce_unknown(a, &l, elem);
        if (rc >= 0 && elem == ROW_TYPE_TEXT)
                rc = bpchar_as_text(a, &l);
        if (rc < 0)
                return rc;
        if ((int)l.e->type != elem && !(type_is_int((int)l.e->type) && type_is_int(elem))) {
                rc = FAIL_AT(a, x->location, "42883", "operator does not exist: %s %s %s",
                             typed_name(&l), op, row_type_name((enum row_type)elem));
                row_error_hint(a->err, "%s", HINT_OPERATOR);
                return rc;
        }
        d = ROW_DATUM_INT((int64_t)func);
        opl = expr_literal(ROW_TYPE_INT4, &d);
        if (!opl)
                return analyzer_oom(a);
        return build_call(a, ret, ROW_TYPE_BOOL,
                     any ? COORD__PLAN__FUNC__FUNC_ANY : COORD__PLAN__FUNC__FUNC_ALL,
                     (Coord__Plan__Expr *[]){ TAKE_PTR(l.e), TAKE_PTR(r.e), opl }, 3, x->location);
}
