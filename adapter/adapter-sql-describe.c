/* adapter-sql-describe.c -- psql's \d NAME: reg* casts and pg_catalog's describe functions
 * (adapter-sql-internal.h). */
#include "adapter-sql-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter-pgcatalog.h"
#include "util.h"

/* ---- psql's \d NAME: reg* casts and pg_catalog's describe functions. ----
 *
 * Each is planned as CASE over a map from oids to texts made now from the catalog the
 * statement is analyzed against (adapter-pgcatalog.h, pgcat_map()), as the pg_catalog
 * relations themselves are: so not in a view or a materialized view, whose stored plan
 * would keep today's names. */

static int describe_allowed(struct analyzer *a, int location, const char *what)
{
        if (a->materialize)
                return cannot_materialize(a, location, what);
        if (a->in_view)
                return FAIL_AT(a, location, "0A000", "%s is not supported in views", what);
        return 0;
}

/* CASE x WHEN key THEN text ... ELSE else_ over map `which` (consumes x and else_). */
static int map_case(struct analyzer *a, enum pgcat_map which, Coord__Plan__Expr *x,
                    Coord__Plan__Expr *else_, Coord__Plan__Expr **ret)
{
        struct pgcat_names m;
        int r = x && else_ ? pgcat_map(which, a->ops, a->userdata, &m) : -ENOMEM;

        if (r < 0) {
                expr_free(x);
                expr_free(else_);
                return r == -ENOMEM ? analyzer_oom(a) : FAIL(a, "XX000", "catalog unavailable: %s",
                                                    strerror(-r));
        }
        if (m.n) {
                *ret = case_of(x, m.keys, (const char *const *)m.texts, m.n, ROW_TYPE_TEXT, else_);
        } else {
                expr_free(x);           /* a CASE has a WHEN */
                *ret = else_;
        }
        pgcat_names_done(&m);
        return *ret ? 0 : analyzer_oom(a);
}

/* fold_typed() bottom up: a tree made at once (CASE over a map) folds whole when its leaves
 * are literals. */
static int fold_tree(struct analyzer *a, Coord__Plan__Expr **e)
{
        struct typed t = { .location = -1 };
        int r = 0;

        if ((*e)->kind_case != COORD__PLAN__EXPR__KIND_CALL)
                return 0;
        for (size_t i = 0; r >= 0 && i < (*e)->call->n_args; i++)
                r = fold_tree(a, &(*e)->call->args[i]);
        if (r < 0)
                return r;
        t.e = *e;
        r = fold_typed(a, &t);
        *e = t.e;
        return r;
}

/* An oid argument: an integer, as int8. */
static int oid_arg(struct analyzer *a, const PgQuery__Node *n, const char *fn, struct typed *t)
{
        int r = analyze_expr(a, n, t);

        if (r >= 0)
                r = coerce_unknown(a, t, ROW_TYPE_INT8);
        if (r >= 0 && !type_is_int((int)t->e->type))
                r = FAIL_AT(a, t->location, "42883", "function %s(%s) does not exist", fn,
                            row_type_name((enum row_type)t->e->type));
        return r < 0 ? r : promote_to(a, t, ROW_TYPE_INT8);
}

/* Which reg* type a cast names: its map, or -1. */
static int reg_type(const PgQuery__TypeName *tn)
{
        const char *name = tn && tn->n_names >= 1 && tn->n_names <= 2
                                   ? node_string(tn->names[tn->n_names - 1]) : NULL;
        const char *schema = tn && tn->n_names == 2 ? node_string(tn->names[0]) : NULL;

        if (!name || tn->n_array_bounds || (tn->n_names == 2 && (!schema ||
                                                                 strcmp(schema, "pg_catalog"))))
                return -1;
        return strcmp(name, "regclass") == 0     ? PGCAT_MAP_REGCLASS
               : strcmp(name, "regtype") == 0    ? PGCAT_MAP_REGTYPE
               : strcmp(name, "regnamespace") == 0 ? PGCAT_MAP_REGNAMESPACE
                                                 : -1;
}

bool is_reg_cast(const PgQuery__Node *n)
{
        return n && n->node_case == PG_QUERY__NODE__NODE_TYPE_CAST &&
               reg_type(n->type_cast->type_name) >= 0;
}

/* A literal's reg* value (PostgreSQL's regclassin() & co.): digits are the oid itself,
 * otherwise a name (folded to lower case outside quotes; a relation's may be qualified
 * by its namespace) that must exist. */
static int reg_literal(struct analyzer *a, enum pgcat_map which, const struct typed *t,
                       struct typed *ret)
{
        const Coord__Plan__Datum *lit = t->e->literal;
        char name[256], num[32];
        size_t len = lit->text_value.len;
        const char *s = (const char *)lit->text_value.data, *text = NULL;
        struct pgcat_names m;
        struct row_datum d;
        bool digits = len > 0;
        int r;

        for (size_t i = 0; i < len; i++)
                digits = digits && s[i] >= '0' && s[i] <= '9';
        if (len == 0 || len >= sizeof(name) - 1)
                return FAIL_AT(a, t->location, "42602", "invalid name syntax");
        for (size_t i = 0, quoted = 0; i < len; i++) {
                quoted ^= s[i] == '"';  /* "" inside quotes toggles twice */
                name[i] = quoted || s[i] < 'A' || s[i] > 'Z' ? s[i] : (char)(s[i] - 'A' + 'a');
        }
        name[len] = 0;
        if (digits && (len > 10 || strtoll(name, NULL, 10) > UINT32_MAX))
                return FAIL_AT(a, t->location, "22003",
                               "value \"%s\" is out of range for type oid", name);
        r = pgcat_map(which, a->ops, a->userdata, &m);
        if (r < 0)
                return r == -ENOMEM ? analyzer_oom(a) : FAIL(a, "XX000", "catalog unavailable");
        for (size_t i = 0; i < m.n && !text; i++)
                if (digits ? m.keys[i] == strtoll(name, NULL, 10) : strcmp(m.texts[i], name) == 0)
                        text = m.texts[i];
        if (!text && !digits && which == PGCAT_MAP_REGCLASS && strchr(name, '.')) {
                /* schema.name: the relation of that name in that namespace. */
                const char *rel = strchr(name, '.') + 1;
                size_t nsp_len = (size_t)(rel - name - 1);
                struct pgcat_names ns;

                r = pgcat_map(PGCAT_MAP_RELNAMESPACE, a->ops, a->userdata, &ns);
                for (size_t i = 0; r >= 0 && i < m.n && !text; i++)
                        if (strcmp(m.texts[i], rel) == 0 && i < ns.n && ns.keys[i] == m.keys[i] &&
                            strlen(ns.texts[i]) == nsp_len &&
                            strncmp(ns.texts[i], name, nsp_len) == 0)
                                text = m.texts[i];
                if (r >= 0)
                        pgcat_names_done(&ns);
                if (r < 0) {
                        pgcat_names_done(&m);
                        return analyzer_oom(a);
                }
        }
        if (!text && !digits && which == PGCAT_MAP_REGTYPE) {
                /* A type's other names: its typname ('int4', '_text'), 'int'. */
                struct pgcat_names tn;

                r = pgcat_map(PGCAT_MAP_TYPNAME, a->ops, a->userdata, &tn);
                for (size_t i = 0; r >= 0 && i < tn.n && !text; i++)
                        if (strcmp(tn.texts[i], strcmp(name, "int") ? name : "int4") == 0)
                                for (size_t k = 0; k < m.n && !text; k++)
                                        if (m.keys[k] == tn.keys[i])
                                                text = m.texts[k];
                if (r >= 0)
                        pgcat_names_done(&tn);
                if (r < 0) {
                        pgcat_names_done(&m);
                        return analyzer_oom(a);
                }
        }
        if (digits && !text) {
                /* An oid no object has: its number, 0 as "-" (PostgreSQL's output). */
                snprintf(num, sizeof(num), "%lld", strtoll(name, NULL, 10));
                text = strcmp(num, "0") == 0 ? "-" : num;
        }
        if (!text) {
                pgcat_names_done(&m);
                return FAIL_AT(a, t->location,
                               which == PGCAT_MAP_REGCLASS ? "42P01" : "42704",
                               "%s \"%s\" does not exist",
                               which == PGCAT_MAP_REGCLASS ? "relation"
                               : which == PGCAT_MAP_REGTYPE ? "type" : "schema", name);
        }
        d = (struct row_datum)ROW_DATUM_TEXT(text, (uint32_t)strlen(text));
        r = typed_literal(a, ROW_TYPE_TEXT, &d, false, t->location, ret);
        pgcat_names_done(&m);
        return r;
}

/* x::regclass, x::regtype, x::regnamespace.  Coord has no such types: the value is
 * planned as its text (the name, or the number for an oid no object has, "-" for 0),
 * which is right only where the text is all that is used -- cast to text, or a SELECT
 * list's output column (sent as text).  Elsewhere (comparisons, ORDER BY the oid) it
 * would have another meaning, so it is 0A000 there (a->reg_ok says which). */
int analyze_reg_cast(struct analyzer *a, const PgQuery__TypeCast *tc, struct typed *ret)
{
        _cleanup_(typed_done) struct typed t = { .location = -1 };
        enum pgcat_map which = (enum pgcat_map)reg_type(tc->type_name);
        const char *type = which == PGCAT_MAP_REGCLASS ? "regclass"
                           : which == PGCAT_MAP_REGTYPE ? "regtype" : "regnamespace";
        bool ok = a->reg_ok;
        Coord__Plan__Expr *x, *x0, *num, *e;
        int r;

        a->reg_ok = false;
        if (!ok)
                return FAIL_AT(a, tc->location, "0A000",
                               "type \"%s\" is supported only cast to text or as an output "
                               "column", type);
        r = describe_allowed(a, tc->location, type);
        if (r >= 0)
                r = analyze_expr(a, tc->arg, &t);
        if (r < 0)
                return r;
        if (t.unknown && t.e->literal->value_case == COORD__PLAN__DATUM__VALUE_TEXT_VALUE)
                return reg_literal(a, which, &t, ret);
        r = coerce_unknown(a, &t, ROW_TYPE_INT8);
        if (r >= 0 && !type_is_int((int)t.e->type))
                r = FAIL_AT(a, tc->location, "42846", "cannot cast type %s to %s",
                            row_type_name((enum row_type)t.e->type), type);
        if (r >= 0)
                r = promote_to(a, &t, ROW_TYPE_INT8);
        if (r < 0)
                return r;
        /* CASE x WHEN 0 THEN '-' WHEN oid THEN name ... ELSE x::text END */
        x = expr_copy(t.e);
        num = x ? expr_call(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CAST, &x, 1) : NULL;
        x0 = expr_copy(t.e);
        r = map_case(a, which, TAKE_PTR(t.e), num, &e);
        if (r < 0) {
                expr_free(x0);
                return r;
        }
        ret->e = x0 ? case_of(x0, (const int64_t[]){ 0 }, (const char *const[]){ "-" }, 1,
                              ROW_TYPE_TEXT, e)
                    : (expr_free(e), NULL);
        if (!ret->e)
                return analyzer_oom(a);
        ret->unknown = false;
        ret->location = tc->location;
        return fold_tree(a, &ret->e);
}

/* pg_get_indexdef(x) and pg_get_indexdef(x, column, pretty); pretty must be a constant. */
static int analyze_indexdef(struct analyzer *a, const PgQuery__FuncCall *f, struct typed *x,
                            struct typed *pretty, struct typed *ret)
{
        _cleanup_(typed_done) struct typed col = { .location = -1 };
        struct pgcat_names m = { 0 };
        Coord__Plan__Expr *def, *cols = NULL, **args = NULL;
        size_t n = 0, k = 0;
        bool p = false;
        int r;

        if (f->n_args == 3) {
                if (!is_literal(pretty->e))
                        return FAIL_AT(a, pretty->location, "0A000",
                                       "pg_get_indexdef()'s pretty that is not a constant is "
                                       "not supported");
                p = pretty->e->literal->value_case == COORD__PLAN__DATUM__VALUE_BOOL_VALUE &&
                    pretty->e->literal->bool_value;
                r = analyze_expr(a, f->args[1], &col);
                if (r >= 0)
                        r = coerce_unknown(a, &col, ROW_TYPE_INT4);
                if (r >= 0 && !type_is_int((int)col.e->type))
                        r = FAIL_AT(a, col.location, "42883",
                                    "function pg_get_indexdef(bigint, %s, boolean) does not exist",
                                    row_type_name((enum row_type)col.e->type));
                if (r >= 0)
                        r = promote_to(a, &col, ROW_TYPE_INT8);
                if (r < 0)
                        return r;
        }
        r = map_case(a, p ? PGCAT_MAP_INDEXDEF_PRETTY : PGCAT_MAP_INDEXDEF, expr_copy(x->e),
                     expr_literal(ROW_TYPE_TEXT, &ROW_DATUM_NULL), &def);
        if (r < 0 || f->n_args == 1) {
                if (r >= 0) {
                        ret->e = def;
                        ret->unknown = false;
                        ret->location = f->location;
                        r = fold_tree(a, &ret->e);
                }
                return r < 0 ? r : 1;
        }
        /* CASE WHEN col IS NULL THEN NULL WHEN col = 0 THEN def WHEN x = index_1 THEN
         * CASE col WHEN 1 THEN 'c' ... ELSE '' END ... ELSE NULL END (the map's keys
         * ascend, an index's together). */
        r = pgcat_map(PGCAT_MAP_INDEX_COLUMN, a->ops, a->userdata, &m);
        if (r < 0) {
                expr_free(def);
                return r == -ENOMEM ? analyzer_oom(a) : FAIL(a, "XX000", "catalog unavailable");
        }
        args = calloc(2 * m.n + 5, sizeof(*args));
        r = args ? 0 : -ENOMEM;
        if (r >= 0) {
                Coord__Plan__Expr *c = expr_copy(col.e);

                args[n++] = c ? expr_call(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_IS_NULL, &c, 1)
                              : NULL;
                args[n++] = expr_literal(ROW_TYPE_TEXT, &ROW_DATUM_NULL);
                args[n++] = expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_EQ, expr_copy(col.e),
                                  expr_literal(ROW_TYPE_INT8, &ROW_DATUM_INT(0)));
                args[n++] = def;
                def = NULL;
        }
        while (r >= 0 && k < m.n) {
                int64_t index = m.keys[k] / PGCAT_MAX_COLUMN;
                int64_t nums[PGCAT_MAX_COLUMN];
                size_t j = 0;

                for (; k + j < m.n && m.keys[k + j] / PGCAT_MAX_COLUMN == index; j++)
                        nums[j] = m.keys[k + j] % PGCAT_MAX_COLUMN;
                args[n++] = expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_EQ, expr_copy(x->e),
                                  expr_literal(ROW_TYPE_INT8, &ROW_DATUM_INT(index)));
                args[n++] = case_of(expr_copy(col.e), nums, (const char *const *)&m.texts[k], j,
                                    ROW_TYPE_TEXT,
                                    expr_literal(ROW_TYPE_TEXT, &ROW_DATUM_TEXT("", 0)));
                k += j;
        }
        if (r >= 0)
                args[n++] = expr_literal(ROW_TYPE_TEXT, &ROW_DATUM_NULL);
        for (size_t i = 0; r >= 0 && i < n; i++)
                if (!args[i])
                        r = -ENOMEM;
        if (r >= 0)
                cols = expr_call(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CASE, args, n);
        else
                for (size_t i = 0; args && i < n; i++)
                        expr_free(args[i]);
        free(args);
        expr_free(def);
        pgcat_names_done(&m);
        if (!cols)
                return analyzer_oom(a);
        ret->e = cols;
        ret->unknown = false;
        ret->location = f->location;
        r = fold_tree(a, &ret->e);
        return r < 0 ? r : 1;
}

/* pg_get_expr(expr, relid[, pretty]): the text; the relation's oid is not needed for it. */
static int analyze_get_expr(struct analyzer *a, const PgQuery__FuncCall *f, const char *name,
                            struct typed *ret)
{
        _cleanup_(typed_done) struct typed x = { .location = -1 }, y = { .location = -1 },
                                           z = { .location = -1 };
        int r;

        r = analyze_expr(a, f->args[0], &x);
        if (r >= 0 && (x.unknown || (int)x.e->type != ROW_TYPE_TEXT))
                return FAIL_AT(a, f->location, "0A000",
                               "pg_get_expr() is supported only of the expression "
                               "columns of the pg_catalog relations");
        if (r >= 0)
                r = oid_arg(a, f->args[1], name, &y);
        if (r >= 0 && f->n_args == 3)
                r = analyze_expr(a, f->args[2], &z);
        if (r >= 0 && f->n_args == 3)
                r = require_bool(a, &z, "pg_get_expr()");
        if (r < 0)
                return r;
        *ret = x;
        x.e = NULL;
        ret->location = f->location;
        return 1;
}

/* numeric's typmod y as format_type() shows it: "p,s" of ((p << 16) | s) + 4. */
static Coord__Plan__Expr *numeric_typmod_text(const Coord__Plan__Expr *y)
{
        static const struct row_datum comma = ROW_DATUM_TEXT(",", 1);
        Coord__Plan__Expr *m[2];

        for (int i = 0; i < 2; i++) {
                Coord__Plan__Expr *v = expr_call2(ROW_TYPE_INT4, COORD__PLAN__FUNC__FUNC_SUB,
                                                  expr_copy(y),
                                                  expr_literal(ROW_TYPE_INT4, &ROW_DATUM_INT(4)));

                v = expr_call2(ROW_TYPE_INT4, i ? COORD__PLAN__FUNC__FUNC_MOD
                                                : COORD__PLAN__FUNC__FUNC_DIV,
                               v, expr_literal(ROW_TYPE_INT4, &ROW_DATUM_INT(65536)));
                m[i] = v ? expr_call(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CAST, &v, 1) : NULL;
        }
        return expr_call2(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CONCAT,
                          expr_call2(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CONCAT, m[0],
                                     expr_literal(ROW_TYPE_TEXT, &comma)),
                          m[1]);
}

/* format_type(oid, typmod); x: the oid, analyzed (the caller keeps it). */
static int analyze_format_type(struct analyzer *a, const PgQuery__FuncCall *f, struct typed *x,
                               struct typed *ret)
{
        _cleanup_(typed_done) struct typed y = { .location = -1 };
        Coord__Plan__Expr *base, *suffix, *plain, *tm;
        static const struct row_datum open = ROW_DATUM_TEXT("(", 1),
                                      close = ROW_DATUM_TEXT(")", 1);
        Coord__Plan__Expr *e = NULL;
        int r;

        r = analyze_expr(a, f->args[1], &y);
        if (r >= 0)
                r = coerce_unknown(a, &y, ROW_TYPE_INT4);
        if (r >= 0 && (int)y.e->type != ROW_TYPE_INT4)
                r = FAIL_AT(a, y.location, "42883",
                            "function format_type(bigint, %s) does not exist",
                            row_type_name((enum row_type)y.e->type));
        if (r >= 0)
                r = map_case(a, PGCAT_MAP_TYPE_ELEMENT, expr_copy(x->e),
                             expr_literal(ROW_TYPE_TEXT, &ROW_DATUM_TEXT("???", 3)), &base);
        if (r >= 0)
                r = map_case(a, PGCAT_MAP_TYPE_ARRAY, expr_copy(x->e),
                             expr_literal(ROW_TYPE_TEXT, &ROW_DATUM_TEXT("", 0)), &suffix);
        if (r < 0)
                return r;
        /* CASE WHEN x IS NULL THEN NULL WHEN typmod >= 0 THEN base || '(' ||
         * typmod::text || ')' || suffix ELSE base || suffix END */
        plain = expr_call2(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CONCAT, expr_copy(base),
                      expr_copy(suffix));
        /* varchar's and bpchar's typmod is the length + 4 (PostgreSQL's VARHDRSZ). */
        tm = expr_copy(y.e);
        tm = tm ? expr_call(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CAST, &tm, 1) : NULL;
        {
                const int64_t varchar = PGCAT_TYPE_VARCHAR;
                Coord__Plan__Expr *v = expr_call2(ROW_TYPE_INT4, COORD__PLAN__FUNC__FUNC_SUB,
                                             expr_copy(y.e),
                                             expr_literal(ROW_TYPE_INT4, &ROW_DATUM_INT(4)));
                const int64_t bpchar = ROW_TYPE_BPCHAR;
                Coord__Plan__Expr *is_varchar = expr_call2(
                        ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_OR,
                        expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_EQ, expr_copy(x->e),
                                   expr_literal(ROW_TYPE_INT8, &ROW_DATUM_INT(varchar))),
                        expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_EQ, expr_copy(x->e),
                                   expr_literal(ROW_TYPE_INT8, &ROW_DATUM_INT(bpchar))));

                Coord__Plan__Expr *nv = numeric_typmod_text(y.e);
                Coord__Plan__Expr *is_numeric =
                        expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_EQ, expr_copy(x->e),
                              expr_literal(ROW_TYPE_INT8, &ROW_DATUM_INT(ROW_TYPE_NUMERIC)));

                v = v ? expr_call(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CAST, &v, 1) : NULL;
                if (tm && v && is_varchar && nv && is_numeric) {
                        tm = expr_call(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CASE,
                                       (Coord__Plan__Expr *[]){ is_varchar, v, is_numeric, nv,
                                                                tm }, 5);
                } else {
                        expr_free(tm);
                        expr_free(v);
                        expr_free(is_varchar);
                        expr_free(nv);
                        expr_free(is_numeric);
                        tm = NULL;
                }
        }
        e = expr_call2(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CONCAT,
                  expr_call2(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CONCAT,
                        expr_call2(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CONCAT,
                              expr_call2(ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CONCAT, base,
                                    expr_literal(ROW_TYPE_TEXT, &open)),
                              tm),
                        expr_literal(ROW_TYPE_TEXT, &close)),
                  suffix);
        {
                Coord__Plan__Expr *args[7] = {
                        expr_call(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_IS_NULL,
                                  (Coord__Plan__Expr *[]){ expr_copy(x->e) }, 1),
                        expr_literal(ROW_TYPE_TEXT, &ROW_DATUM_NULL),
                        expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_GE, expr_copy(y.e),
                              expr_literal(ROW_TYPE_INT4, &ROW_DATUM_INT(0))),
                        e,
                        /* bpchar without a typmod is "bpchar" (PostgreSQL's
                         * format_type(), typmod -1; NULL gives "character"). */
                        expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_AND,
                                   expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_EQ, expr_copy(x->e),
                                              expr_literal(ROW_TYPE_INT8, &ROW_DATUM_INT(ROW_TYPE_BPCHAR))),
                                   expr_call2(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_LT, expr_copy(y.e),
                                              expr_literal(ROW_TYPE_INT4, &ROW_DATUM_INT(0)))),
                        expr_literal(ROW_TYPE_TEXT, &ROW_DATUM_TEXT("bpchar", 6)),
                        plain,
                };

                for (size_t k = 0; k < 7; k++)
                        if (!args[k]) {
                                for (size_t j = 0; j < 7; j++)
                                        expr_free(args[j]);
                                return analyzer_oom(a);
                        }
                r = build_call(a, ret, ROW_TYPE_TEXT, COORD__PLAN__FUNC__FUNC_CASE, args, 7,
                          f->location);
        }
        if (r >= 0)
                r = fold_tree(a, &ret->e);
        return r < 0 ? r : 1;
}

/* psql's describe functions (1 when planned into ret, 0 when `name` is none of them):
 *   format_type(oid, typmod)        the type's SQL name ("integer[]"), with (typmod) when
 *                                   typmod >= 0; '???' for an unknown oid, NULL for NULL
 *   pg_get_expr(expr, relid[, pretty])  expr: Coord's expression columns hold the text
 *                                   already (pg_attrdef.adbin)
 *   pg_get_indexdef(oid[, column, pretty])  CREATE INDEX ..., or key column `column`
 *                                   ('' past the last); NULL for an oid no index has
 *   pg_get_constraintdef(oid[, pretty]), pg_get_statisticsobjdef_columns(oid)
 *                                   NULL: Coord lists no constraints (pg_constraint) and has
 *                                   no statistics objects
 *   pg_relation_is_publishable(oid) true for a user table, false for another relation,
 *                                   NULL for an oid no relation has */
int analyze_describe_func(struct analyzer *a, const PgQuery__FuncCall *f, const char *name,
                                 struct typed *ret)
{
        _cleanup_(typed_done) struct typed x = { .location = -1 }, z = { .location = -1 };
        static const struct {
                const char *name;
                size_t min, max;
        } fns[] = {
                { "format_type", 2, 2 },        { "pg_get_expr", 2, 3 },
                { "pg_get_indexdef", 1, 3 },    { "pg_get_constraintdef", 1, 2 },
                { "pg_get_statisticsobjdef_columns", 1, 1 },
                { "pg_relation_is_publishable", 1, 1 },
        };
        char what[64];
        size_t i;
        Coord__Plan__Expr *e = NULL;
        int r;

        for (i = 0; i < ELEMENTSOF(fns); i++)
                if (strcmp(name, fns[i].name) == 0)
                        break;
        if (i == ELEMENTSOF(fns) || f->agg_distinct || f->n_agg_order || f->agg_filter ||
            f->n_args < fns[i].min || f->n_args > fns[i].max ||
            (strcmp(name, "pg_get_indexdef") == 0 && f->n_args == 2))
                return 0;
        snprintf(what, sizeof(what), "%s()", name);
        r = describe_allowed(a, f->location, what);
        if (r < 0)
                return r;
        if (i == 1)
                return analyze_get_expr(a, f, name, ret);
        r = oid_arg(a, f->args[0], name, &x);
        if (r < 0)
                return r;
        if (i == 0)
                return analyze_format_type(a, f, &x, ret);
        if (f->n_args >= 2) {
                r = analyze_expr(a, f->args[f->n_args - 1], &z);
                if (r >= 0)
                        r = require_bool(a, &z, what);
                if (r < 0)
                        return r;
        }
        if (i == 3 || i == 4) {
                /* No constraints are listed, no statistics objects exist: NULL for all. */
                r = typed_literal(a, ROW_TYPE_TEXT, &ROW_DATUM_NULL, false, f->location, ret);
                return r < 0 ? r : 1;
        }
        if (i == 5) {
                r = map_case(a, PGCAT_MAP_PUBLISHABLE, TAKE_PTR(x.e),
                             expr_literal(ROW_TYPE_TEXT, &ROW_DATUM_NULL), &e);
                if (r >= 0)
                        r = build_call(a, ret, ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_EQ,
                                  (Coord__Plan__Expr *[]){
                                          e, expr_literal(ROW_TYPE_TEXT, &ROW_DATUM_TEXT("t", 1)) },
                                  2, f->location);
                if (r >= 0)
                        r = fold_tree(a, &ret->e);
                return r < 0 ? r : 1;
        }
        return analyze_indexdef(a, f, &x, &z, ret);
}
