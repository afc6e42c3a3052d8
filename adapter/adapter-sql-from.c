/* adapter-sql-from.c -- scopes, FROM items, WITH queries and outer joins
 * (adapter-sql-internal.h; adapter-sql.c note 7). */
#include "adapter-sql-internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "adapter-pgcatalog.h"
#include "util.h"

/* ---- Scopes (FROM). ---- */

void scope_done(struct scope *sc)
{
        free(sc->cols);
        free(sc->star);
        free(sc->quals);
        *sc = (struct scope){ 0 };
}

int scope_add_col(struct analyzer *a, struct scope *sc, const char *qual, const char *name,
                         int type, bool nullable, bool in_star)
{
        struct scope_col *c = realloc(sc->cols, (sc->n + 1) * sizeof(*c));
        uint32_t *st;

        if (!c)
                return analyzer_oom(a);
        sc->cols = c;
        st = realloc(sc->star, (sc->n + 1) * sizeof(*st));
        if (!st)
                return analyzer_oom(a);
        sc->star = st;
        sc->cols[sc->n] = (struct scope_col){ .qual = qual, .name = name, .type = type,
                                              .nullable = nullable };
        if (in_star)
                sc->star[sc->n_star++] = (uint32_t)sc->n;
        sc->n++;
        if (sc->n > ROW_MAX_COLUMNS)
                return FAIL(a, "54011", "joins can have at most %u columns", ROW_MAX_COLUMNS);
        return 0;
}

int scope_add_qual(struct analyzer *a, struct scope *sc, const char *q, int location)
{
        const char **p;

        if (!q)
                return 0;
        if (scope_has_qual(sc, q))
                return FAIL_AT(a, location, "42712", "table name \"%s\" specified more than once", q);
        p = realloc(sc->quals, (sc->n_quals + 1) * sizeof(*p));
        if (!p)
                return analyzer_oom(a);
        sc->quals = p;
        sc->quals[sc->n_quals++] = q;
        return 0;
}

/* dst ++ src (the columns of a Join's output). */
static int scope_concat(struct analyzer *a, struct scope *dst, const struct scope *src, int location)
{
        size_t base = dst->n;
        int r;

        for (size_t i = 0; i < src->n_quals; i++) {
                r = scope_add_qual(a, dst, src->quals[i], location);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < src->n; i++) {
                r = scope_add_col(a, dst, src->cols[i].qual, src->cols[i].name, src->cols[i].type,
                                  src->cols[i].nullable, false);
                if (r < 0)
                        return r;
                dst->cols[base + i].hidden = src->cols[i].hidden;
        }
        for (size_t i = 0; i < src->n_star; i++)
                dst->star[dst->n_star++] = (uint32_t)base + src->star[i];
        return 0;
}

/* ---- FROM. ---- */

/* Column names from an alias's column list for the range's columns [first, sc->n). */
static int apply_alias_columns(struct analyzer *a, struct scope *sc, size_t first,
                               const PgQuery__Alias *alias, const char *what, int location)
{
        if (!alias)
                return 0;
        if (alias->n_colnames > sc->n - first)
                return FAIL_AT(a, location, "42P10",
                               "table \"%s\" has %zu columns available but %zu columns specified",
                               what, sc->n - first, alias->n_colnames);
        for (size_t i = 0; i < alias->n_colnames; i++) {
                const char *name = node_string(alias->colnames[i]);

                if (!name)
                        return FAIL_AT(a, location, "XX000", "malformed column alias");
                sc->cols[first + i].name = name;
        }
        return 0;
}

int nondeterministic_view(struct analyzer *a, const char *name, int location)
{
        int r = cannot_materialize(a, location, "mz_now()");

        row_error_detail(a->err, "The call is in view \"%s\".", name);
        return r;
}

/* Which relation a FROM item names (adapter-pgcatalog.h): *ret_cat for a pg_catalog or
 * information_schema relation, else *ret_name for a catalog lookup.  pg_catalog.X is
 * one of pg_catalog's relations or a built-in coord_* relation; an unqualified name is
 * a user object first and a pg_catalog relation only when no object has that name
 * (PostgreSQL searches pg_catalog first; here an object made before a pg_catalog
 * relation existed keeps its name).  information_schema is never searched. */
static int resolve_range_var(struct analyzer *a, const PgQuery__RangeVar *rv,
                             const struct pgcat_table **ret_cat, const char **ret_name)
{
        const char *schema = rv->schemaname && rv->schemaname[0] ? rv->schemaname : NULL;
        struct sql_relation rel;
        int r;

        *ret_cat = NULL;
        if (schema && !(rv->catalogname && rv->catalogname[0]) &&
            (strcmp(schema, "pg_catalog") == 0 || strcmp(schema, "information_schema") == 0)) {
                *ret_cat = pgcat_find(schema, rv->relname);
                if (*ret_cat)
                        return 0;
                r = strcmp(schema, "pg_catalog") == 0 ? lookup_relation(a, rv->relname, &rel) : -ENOENT;
                if (r < 0 && r != -ENOENT)
                        return r;
                if (r == 0 && rel.builtin) {
                        *ret_name = rv->relname;
                        return 0;
                }
                return FAIL_AT(a, rv->location, "42P01", "relation \"%s.%s\" does not exist",
                               schema, rv->relname);
        }
        r = range_var_name(a, rv, ret_name);
        if (r < 0 || schema)
                return r;
        r = lookup_relation(a, *ret_name, &rel);
        if (r == -ENOENT)
                *ret_cat = pgcat_find("pg_catalog", *ret_name);
        return r == -ENOENT ? 0 : r;
}

/* A pg_catalog or information_schema relation: its rows now, as a Constant.  A view or
 * materialized view would freeze them, so neither may read one. */
static int plan_catalog_relation(struct analyzer *a, const struct pgcat_table *cat,
                                 const PgQuery__RangeVar *rv, struct scope *sc,
                                 Coord__Plan__Relation **ret)
{
        const char *qual = rv->alias && rv->alias->aliasname && rv->alias->aliasname[0]
                                   ? rv->alias->aliasname
                                   : rv->relname;
        const struct sql_column *cols;
        size_t n = pgcat_columns(cat, &cols);
        int r;

        if (a->in_view || a->materialize)
                return FAIL_AT(a, rv->location, "0A000",
                               "%s over the catalog relation \"%s\" is not supported",
                               a->in_view ? "a view" : "a materialized view or index",
                               rv->relname);
        r = scope_add_qual(a, sc, qual, rv->location);
        if (r < 0)
                return r;
        r = pgcat_rows(cat, a->ops, a->userdata, a->params ? a->params->session : NULL, ret);
        if (r == -ENOMEM)
                return analyzer_oom(a);
        if (r < 0)
                return row_error_set(a->err, r, "XX000", "catalog listing failed: %s",
                                     strerrordesc_np(-r) ? strerrordesc_np(-r) : "?");
        for (size_t i = 0; i < n; i++) {
                r = scope_add_col(a, sc, qual, cols[i].name, cols[i].type, cols[i].nullable, true);
                if (r < 0)
                        return r;
        }
        return apply_alias_columns(a, sc, 0, rv->alias, qual, rv->location);
}

/* ---- WITH queries (common table expressions).
 *
 * A non-recursive WITH query is inlined: each reference plans it again as a subquery in
 * FROM (plan_cte()), in the context of its WITH clause -- its enclosing queries, and
 * the clause's earlier queries (PostgreSQL's visibility) -- never in the context of the
 * reference, so a name in it cannot bind to a column of the referencing query.  Every
 * query of a clause is planned once where the clause is met (with_push()), so its
 * errors are reported used or not.  Inlining gives PostgreSQL's meaning because a
 * query's plan is a function of the data at the one timestamp a statement reads at.
 * Refused (0A000): WITH RECURSIVE, data-modifying WITH queries, and a WITH query that
 * refers to a column of an enclosing query. ---- */

/* Inlining plans a query once per reference, and a query may refer to another twice:
 * a chain of such queries would take exponential time and memory, so a statement plans
 * at most this many WITH queries (54001). */
#define CTE_MAX_PLANNED 16384u

static const PgQuery__CommonTableExpr *cte_at(const struct cte_level *l, size_t i)
{
        const PgQuery__Node *n = l->with->ctes[i];

        return n && n->node_case == PG_QUERY__NODE__NODE_COMMON_TABLE_EXPR ? n->common_table_expr
                                                                          : NULL;
}

/* The WITH query `name` visible here: *ret_level and *ret_i; false for none. */
static bool cte_find(const struct analyzer *a, const char *name, const struct cte_level **ret_level,
                     size_t *ret_i)
{
        for (const struct cte_level *l = a->ctes; l; l = l->up)
                for (size_t i = 0; i < l->n_visible; i++) {
                        const PgQuery__CommonTableExpr *c = cte_at(l, i);

                        if (c && c->ctename && strcmp(c->ctename, name) == 0) {
                                *ret_level = l;
                                *ret_i = i;
                                return true;
                        }
                }
        return false;
}

/* 42P01 for a relation that does not exist, with PostgreSQL's DETAIL and HINT when a
 * WITH query of that name exists but is not visible here (itself, or a later one). */
static int no_relation(struct analyzer *a, const char *name, int location)
{
        FAIL_AT(a, location, "42P01", "relation \"%s\" does not exist", name);
        for (const struct cte_level *l = a->ctes; l; l = l->up)
                for (size_t i = l->n_visible; i < l->with->n_ctes; i++) {
                        const PgQuery__CommonTableExpr *c = cte_at(l, i);

                        if (c && c->ctename && strcmp(c->ctename, name) == 0) {
                                row_error_detail(a->err, "There is a WITH item named \"%s\", but it "
                                                 "cannot be referenced from this part of the query.",
                                                 name);
                                row_error_hint(a->err, "Use WITH RECURSIVE, or re-order the WITH "
                                               "items to remove forward references.");
                                return -EINVAL;
                        }
                }
        return -EINVAL;
}

/* Plan WITH query i of level l (seeing the queries before it) into *ret and out. */
static int plan_cte_query(struct analyzer *a, const struct cte_level *l, size_t i,
                          Coord__Plan__Relation **ret, struct scope *out)
{
        const PgQuery__CommonTableExpr *c = cte_at(l, i);
        const struct cte_level here = { .with = l->with, .n_visible = i, .outer = l->outer,
                                        .no_limit = l->no_limit, .up = l->up };
        const struct cte_level *ctes = a->ctes;
        struct outer wrap, *outer = a->outer;
        struct attach *attach = a->attach;
        struct subq *sub = a->sub;
        bool no_limit = a->no_limit;
        int r;

        assert(c);
        if (++a->ctes_planned > CTE_MAX_PLANNED)
                return FAIL_AT(a, c->location, "54001", "statement too complex: its WITH queries "
                               "are planned more than %u times", CTE_MAX_PLANNED);
        if (l->outer) {
                wrap = *l->outer;
                wrap.cte = true;
        }
        a->outer = l->outer ? &wrap : NULL;
        a->ctes = &here;
        a->attach = NULL;
        a->sub = NULL;
        a->no_limit = l->no_limit;
        r = plan_query(a, c->ctequery, NULL, ret, out);
        a->outer = outer;
        a->ctes = ctes;
        a->attach = attach;
        a->sub = sub;
        a->no_limit = no_limit;
        if (r >= 0 && c->n_aliascolnames > out->n)
                r = FAIL_AT(a, c->location, "42P10", "WITH query \"%s\" has %zu columns available "
                            "but %zu columns specified", c->ctename, out->n, c->n_aliascolnames);
        return r;
}

/* A reference to WITH query i of level l in FROM: the query inlined, its columns named
 * by the WITH's column list, then by the reference's alias. */
static int plan_cte(struct analyzer *a, const PgQuery__RangeVar *rv, const struct cte_level *l,
                    size_t i, struct scope *sc, Coord__Plan__Relation **ret)
{
        const PgQuery__CommonTableExpr *c = cte_at(l, i);
        const char *qual = rv->alias && rv->alias->aliasname && rv->alias->aliasname[0]
                                   ? rv->alias->aliasname
                                   : rv->relname;
        _cleanup_(scope_done) struct scope out = { 0 };
        int r = plan_cte_query(a, l, i, ret, &out);

        if (r >= 0)
                r = scope_add_qual(a, sc, qual, rv->location);
        for (size_t k = 0; r >= 0 && k < out.n; k++) {
                const char *name = k < c->n_aliascolnames ? node_string(c->aliascolnames[k])
                                                          : out.cols[k].name;

                if (!name)
                        return FAIL(a, "XX000", "malformed WITH column list");
                r = scope_add_col(a, sc, qual, name, out.cols[k].type, out.cols[k].nullable, true);
        }
        if (r >= 0)
                r = apply_alias_columns(a, sc, 0, rv->alias, qual, rv->location);
        return r;
}

/* Met a WITH clause: check it, plan each query once for its errors, and make its
 * queries visible (*level, pushed on a->ctes; the caller pops it). */
int with_push(struct analyzer *a, const PgQuery__WithClause *w, struct cte_level *level)
{
        if (w->recursive)
                return FAIL_AT(a, w->location, "0A000", "WITH RECURSIVE is not supported");
        *level = (struct cte_level){ .with = w, .n_visible = 0, .outer = a->outer,
                                     .no_limit = a->no_limit, .up = a->ctes };
        for (size_t i = 0; i < w->n_ctes; i++) {
                const PgQuery__CommonTableExpr *c = cte_at(level, i);
                _cleanup_(scope_done) struct scope out = { 0 };
                _cleanup_(rel_freep) Coord__Plan__Relation *plan = NULL;
                int r;

                if (!c || !c->ctename || !c->ctequery)
                        return FAIL(a, "XX000", "malformed WITH clause");
                if (c->ctequery->node_case != PG_QUERY__NODE__NODE_SELECT_STMT)
                        return FAIL_AT(a, c->location, "0A000", "data-modifying statements in WITH "
                                       "are not supported");
                for (size_t k = 0; k < i; k++)
                        if (strcmp(cte_at(level, k)->ctename, c->ctename) == 0)
                                return FAIL_AT(a, c->location, "42712", "WITH query name \"%s\" "
                                               "specified more than once", c->ctename);
                r = plan_cte_query(a, level, i, &plan, &out);
                if (r < 0)
                        return r;
        }
        level->n_visible = w->n_ctes;
        a->ctes = level;
        return 0;
}

/* ON CONFLICT DO UPDATE's `excluded` (a->preset_name): the proposed rows, in the
 * table's columns (adapter-sql-upsert.c note 1). */
static int plan_preset(struct analyzer *a, const PgQuery__RangeVar *rv, struct scope *sc,
                       Coord__Plan__Relation **ret)
{
        const struct sql_relation *t = a->preset_rel;
        const char *qual = rv->alias && rv->alias->aliasname && rv->alias->aliasname[0]
                                   ? rv->alias->aliasname
                                   : rv->relname;
        int r = scope_add_qual(a, sc, qual, rv->location);

        for (size_t i = 0; r >= 0 && i < t->n_columns; i++)
                r = scope_add_col(a, sc, qual, t->columns[i].name, t->columns[i].type,
                                  t->columns[i].nullable, true);
        if (r < 0)
                return r;
        *ret = rel_copy(a->preset_plan);
        return *ret ? 0 : analyzer_oom(a);
}

static int plan_range_var(struct analyzer *a, const PgQuery__RangeVar *rv, struct scope *sc,
                          Coord__Plan__Relation **ret)
{
        struct sql_relation rel;
        const struct pgcat_table *cat;
        const char *name = NULL, *qual;
        const struct cte_level *l;
        size_t cte;
        int r;

        if (a->preset_name && !(rv->schemaname && rv->schemaname[0]) && rv->relname &&
            strcmp(rv->relname, a->preset_name) == 0)
                return plan_preset(a, rv, sc, ret);
        /* A WITH query hides a relation of its name unless it is qualified. */
        if (!(rv->schemaname && rv->schemaname[0]) && !(rv->catalogname && rv->catalogname[0]) &&
            rv->relname && cte_find(a, rv->relname, &l, &cte))
                return plan_cte(a, rv, l, cte, sc, ret);
        r = resolve_range_var(a, rv, &cat, &name);
        if (r < 0)
                return r;
        if (cat)
                return plan_catalog_relation(a, cat, rv, sc, ret);
        r = lookup_relation(a, name, &rel);
        if (r == -ENOENT && rv->schemaname && rv->schemaname[0])
                return FAIL_AT(a, rv->location, "42P01", "relation \"%s.%s\" does not exist",
                               rv->schemaname, name);
        if (r == -ENOENT)
                return no_relation(a, name, rv->location);
        if (r < 0)
                return r;
        if (rel.kind == SQL_OBJECT_INDEX || rel.kind == SQL_OBJECT_SINK)
                return FAIL_AT(a, rv->location, "42809", "\"%s\" is a%s %s and cannot be read",
                               name, rel.kind == SQL_OBJECT_INDEX ? "n" : "",
                               sql_object_kind_name(rel.kind));
        if (rel.kind == SQL_OBJECT_VIEW && !rel.plan)
                return FAIL_AT(a, rv->location, "XX000", "view \"%s\" has no plan", name);
        /* The controller evaluates an INSERT's SELECT inside the append, where only
         * tables are at the write timestamp (analyze_insert_select(),
         * analyze_target_rows()). */
        if (a->write_reads && rel.kind != SQL_OBJECT_TABLE && rel.kind != SQL_OBJECT_VIEW)
                return FAIL_AT(a, rv->location, "0A000",
                               "%s reading a %s is not supported: it may read tables and "
                               "views over tables", a->write_reads,
                               sql_object_kind_name(rel.kind));
        qual = rv->alias && rv->alias->aliasname && rv->alias->aliasname[0] ? rv->alias->aliasname
                                                                            : rv->relname;
        r = scope_add_qual(a, sc, qual, rv->location);
        if (r >= 0)
                r = add_reference(a, rel.id);
        if (r < 0)
                return r;
        if (rel.kind == SQL_OBJECT_VIEW) {
                if (rel.n_inputs && !rel.inputs)
                        return FAIL_AT(a, rv->location, "XX000", "view \"%s\" has no inputs", name);
                for (size_t i = 0; i < rel.n_inputs; i++) {
                        r = add_input(a, rel.inputs[i]);
                        if (r < 0)
                                return r;
                }
                if (!rel.deterministic) {
                        if (a->materialize)
                                return nondeterministic_view(a, name, rv->location);
                        a->nondeterministic = true;
                }
        } else {
                r = add_input(a, rel.id);
                if (r < 0)
                        return r;
        }
        if (a->peek && rel.index_id) {
                r = rel.n_indexes > 1 ? note_index_read(a, rel.id, rel.index_id) : 0;
                if (r < 0)
                        return r;
                *ret = rel_get_id(rel.index_id, rel.columns, rel.n_columns);
        }
        else if (rel.kind == SQL_OBJECT_VIEW)
                *ret = rel_copy(rel.plan);
        else
                *ret = rel_get(&rel);
        if (!*ret)
                return analyzer_oom(a);
        for (size_t i = 0; i < rel.n_columns; i++) {
                r = scope_add_col(a, sc, qual, rel.columns[i].name, rel.columns[i].type,
                                  rel.columns[i].nullable, true);
                if (r < 0)
                        return r;
        }
        return apply_alias_columns(a, sc, 0, rv->alias, qual, rv->location);
}

static int plan_range_subselect(struct analyzer *a, const PgQuery__RangeSubselect *rs,
                                struct scope *sc, Coord__Plan__Relation **ret)
{
        _cleanup_(scope_done) struct scope out = { 0 };
        const char *qual = rs->alias && rs->alias->aliasname && rs->alias->aliasname[0]
                                   ? rs->alias->aliasname
                                   : NULL;
        int r;

        if (rs->lateral)
                return FAIL(a, "0A000", "LATERAL is not supported");
        r = plan_query(a, rs->subquery, NULL, ret, &out);
        if (r >= 0)
                r = scope_add_qual(a, sc, qual, -1);
        for (size_t i = 0; r >= 0 && i < out.n; i++)
                r = scope_add_col(a, sc, qual, out.cols[i].name, out.cols[i].type,
                                  out.cols[i].nullable, true);
        if (r >= 0)
                r = apply_alias_columns(a, sc, 0, rs->alias, qual ? qual : "subquery", -1);
        return r;
}

static int plan_from_item(struct analyzer *a, const PgQuery__Node *n, struct scope *sc,
                          Coord__Plan__Relation **ret);

/* Find `name` among the visible columns [from, to) of sc: its index, or an error. */
static int using_column(struct analyzer *a, const struct scope *sc, size_t from, size_t to,
                        const char *name, const char *side, size_t *ret)
{
        size_t found = SIZE_MAX;

        for (size_t i = from; i < to; i++) {
                if (sc->cols[i].hidden || strcmp(sc->cols[i].name, name) != 0)
                        continue;
                if (found != SIZE_MAX)
                        return FAIL(a, "42702", "common column name \"%s\" appears more than once "
                                    "in %s table", name, side);
                found = i;
        }
        if (found == SIZE_MAX)
                return FAIL(a, "42703", "column \"%s\" specified in USING clause does not exist "
                            "in %s table", name, side);
        *ret = found;
        return 0;
}

/* Append `pred` (consumed) to a conjunction. */
int conj_add(struct analyzer *a, Coord__Plan__Expr ***preds, size_t *n, Coord__Plan__Expr *pred)
{
        Coord__Plan__Expr **p = realloc(*preds, (*n + 1) * sizeof(*p));

        if (!p) {
                expr_free(pred);
                return analyzer_oom(a);
        }
        p[(*n)++] = pred;
        *preds = p;
        return 0;
}

/* ---- Outer joins ----
 *
 * L LEFT JOIN R ON keys [AND conditions on R alone] is planned from inner joins, so it
 * is maintained incrementally like any plan:
 *   J  = L JOIN R' ON keys                      R' = R filtered by the conditions on R
 *   A  = DISTINCT L's keys (none NULL),  B = DISTINCT R''s keys (none NULL)
 *   NK = A - (A JOIN B ON keys)                 the keys of L that match nothing
 *   U  = L JOIN NK ON keys  +  L's rows with a NULL key
 *   result = J + U padded with NULLs for R's columns
 * Each row of L is in J (once per match) or in U (once): A and B are sets, so A JOIN B is
 * their intersection and NK a set.  With no keys (ON a condition on R alone), A and B
 * are the unit row or nothing: every L row is unmatched exactly when R' is empty.  RIGHT
 * JOIN is the mirror; FULL JOIN adds both sides' unmatched rows.  Other conditions
 * (on L alone, or on both sides but not an equality of columns) change which rows
 * match in ways this plan does not express: refused (0A000), never planned wrong. */

/* Project(input, [from, from + n)); consumes input. */
Coord__Plan__Relation *rel_project_range(Coord__Plan__Relation *input, uint32_t from, size_t n)
{
        uint32_t *out = malloc((n ? n : 1) * sizeof(*out));

        if (!out) {
                rel_free(input);
                return NULL;
        }
        for (size_t i = 0; i < n; i++)
                out[i] = from + (uint32_t)i;
        return rel_project(input, out, n);
}

/* Filter(input, x[i] = y[i] for every i) over Join(left, right) (y's columns counted
 * from the right's first); the optimizer makes them join keys.  Consumes both. */
static Coord__Plan__Relation *rel_join_on(Coord__Plan__Relation *left, Coord__Plan__Relation *right,
                                          size_t nleft, const uint32_t *x, const uint32_t *y,
                                          const Coord__Plan__Type *types, size_t m)
{
        Coord__Plan__Relation *j = rel_join(left, right);
        Coord__Plan__Expr **preds;

        if (!j || !m)
                return j;
        preds = calloc(m, sizeof(*preds));
        if (!preds) {
                rel_free(j);
                return NULL;
        }
        for (size_t i = 0; i < m; i++) {
                Coord__Plan__Expr *args[2] = { expr_column(types[i], x[i]),
                                               expr_column(types[i], (uint32_t)nleft + y[i]) };

                if (!args[0] || !args[1]) {
                        expr_free(args[0]);
                        expr_free(args[1]);
                        goto fail;
                }
                preds[i] = expr_call(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_EQ, args, 2);
                if (!preds[i])
                        goto fail;
        }
        return rel_filter_n(j, preds, m);
fail:
        for (size_t i = 0; i < m; i++)
                expr_free(preds[i]);
        free(preds);
        rel_free(j);
        return NULL;
}

/* DISTINCT of side's key columns, none NULL; consumes side. */
static Coord__Plan__Relation *keys_of(Coord__Plan__Relation *side, const uint32_t *k, size_t m,
                                      const Coord__Plan__Type *types)
{
        Coord__Plan__Expr **preds = m ? calloc(m, sizeof(*preds)) : NULL;
        uint32_t *out = malloc((m ? m : 1) * sizeof(*out));

        if ((m && !preds) || !out)
                goto fail;
        for (size_t i = 0; i < m; i++) {
                Coord__Plan__Expr *c = expr_column(types[i], k[i]);

                if (!c || !(preds[i] = expr_call(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_IS_NOT_NULL, &c, 1)))
                        goto fail;
                out[i] = k[i];
        }
        if (m && !(side = rel_filter_n(side, TAKE_PTR(preds), m))) {
                free(out);
                return NULL;
        }
        return rel_distinct(rel_project(side, out, m));
fail:
        for (size_t i = 0; preds && i < m; i++)
                expr_free(preds[i]);
        free(preds);
        free(out);
        rel_free(side);
        return NULL;
}

/* The rows of `side` (n columns) that match no row of `other` on side.k[i] = other.ok[i],
 * each once per copy, padded: side's columns then NULLs of other's types when
 * !side_right, NULLs then side's columns when side_right.  Consumes side and other. */
static Coord__Plan__Relation *unmatched(Coord__Plan__Relation *side, size_t n, Coord__Plan__Relation *other,
                                        const Coord__Plan__Type *other_types, size_t n_other,
                                        const uint32_t *k, const uint32_t *ok, size_t m,
                                        const Coord__Plan__Type *ktypes, bool side_right)
{
        Coord__Plan__Relation *A = NULL, *B = NULL, *AB = NULL, *NK = NULL, *U = NULL, **parts = NULL;
        _cleanup_free_ uint32_t *seq = malloc((m ? m : 1) * sizeof(uint32_t));
        Coord__Plan__Expr **nulls = NULL;
        uint32_t *order = NULL;

        if (!seq)
                goto fail;
        for (size_t i = 0; i < m; i++)
                seq[i] = (uint32_t)i;
        A = keys_of(rel_copy(side), k, m, ktypes);
        B = keys_of(other, ok, m, ktypes);
        other = NULL;
        if (!A || !B)
                goto fail;
        AB = rel_project_range(rel_join_on(rel_copy(A), TAKE_PTR(B), m, seq, seq, ktypes, m), 0, m);
        if (!AB || !(parts = calloc(2, sizeof(*parts))))
                goto fail;
        parts[0] = TAKE_PTR(A);
        parts[1] = rel_negate(TAKE_PTR(AB));
        NK = rel_union(TAKE_PTR(parts), 2);
        U = NK ? rel_project_range(rel_join_on(rel_copy(side), TAKE_PTR(NK), n, k, seq, ktypes, m), 0, n) : NULL;
        if (!U)
                goto fail;
        if (m) {
                /* ...and the rows with a NULL key, which match nothing. */
                Coord__Plan__Expr **ors = calloc(m, sizeof(*ors)), *any;
                Coord__Plan__Relation *nullkeyed;

                if (!ors)
                        goto fail;
                for (size_t i = 0; i < m; i++) {
                        Coord__Plan__Expr *c = expr_column(ktypes[i], k[i]);
                        if (!c || !(ors[i] = expr_call(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_IS_NULL, &c, 1))) {
                                for (size_t q = 0; q < i; q++)
                                        expr_free(ors[q]);
                                free(ors);
                                goto fail;
                        }
                }
                any = expr_call(ROW_TYPE_BOOL, COORD__PLAN__FUNC__FUNC_OR, ors, m);
                free(ors);
                nullkeyed = any ? rel_filter(TAKE_PTR(side), any) : NULL;
                if (!nullkeyed || !(parts = calloc(2, sizeof(*parts)))) {
                        rel_free(nullkeyed);
                        goto fail;
                }
                parts[0] = TAKE_PTR(U);
                parts[1] = nullkeyed;
                U = rel_union(TAKE_PTR(parts), 2);
                if (!U)
                        goto fail;
        }
        rel_free(TAKE_PTR(side));
        nulls = calloc(n_other ? n_other : 1, sizeof(*nulls));
        if (!nulls)
                goto fail;
        for (size_t i = 0; i < n_other; i++)
                if (!(nulls[i] = expr_literal(other_types[i], &ROW_DATUM_NULL))) {
                        for (size_t q = 0; q < i; q++)
                                expr_free(nulls[q]);
                        free(nulls);
                        goto fail;
                }
        U = rel_map(U, nulls, n_other);
        if (!U || !side_right)
                return U;
        /* (side's columns, NULLs) -> (NULLs, side's columns) */
        order = malloc((n + n_other ? n + n_other : 1) * sizeof(*order));
        if (!order) {
                rel_free(U);
                return NULL;
        }
        for (size_t i = 0; i < n_other; i++)
                order[i] = (uint32_t)(n + i);
        for (size_t i = 0; i < n; i++)
                order[n_other + i] = (uint32_t)i;
        return rel_project(U, order, n + n_other);
fail:
        rel_free(side);
        rel_free(other);
        rel_free(A);
        rel_free(B);
        rel_free(AB);
        rel_free(NK);
        rel_free(U);
        free(parts);
        return NULL;
}

/* Keys of one side whose type is not the key's (int4 against int8): cast into columns
 * appended to the side (a Map), which become the keys; *n and *types grow with them.  So
 * every join on the keys below compares columns of one type.  How many were added. */
static int widen_keys(struct analyzer *a, Coord__Plan__Relation **side, size_t *n,
                      Coord__Plan__Type **types, uint32_t *keys, const Coord__Plan__Type *kt,
                      size_t m)
{
        _cleanup_free_ Coord__Plan__Expr **exprs = calloc(m ? m : 1, sizeof(*exprs));
        Coord__Plan__Type *t = reallocarray(*types, *n + m + 1, sizeof(*t));
        size_t added = 0;
        int r;

        if (t)
                *types = t;
        if (!exprs || !t)
                return analyzer_oom(a);
        for (size_t i = 0; i < m; i++) {
                struct typed v = { .location = -1 };

                if ((*types)[keys[i]] == kt[i])
                        continue;
                v.e = expr_column((*types)[keys[i]], keys[i]);
                r = v.e ? promote_to(a, &v, (int)kt[i]) : analyzer_oom(a);
                if (r < 0) {
                        typed_done(&v);
                        goto fail;
                }
                exprs[added] = TAKE_PTR(v.e);
                (*types)[*n + added] = kt[i];
                keys[i] = (uint32_t)(*n + added);
                added++;
        }
        if (!added)
                return 0;
        *side = rel_map(*side, TAKE_PTR(exprs), added);
        if (!*side)
                return analyzer_oom(a);
        *n += added;
        return (int)added;
fail:
        for (size_t i = 0; i < added; i++)
                expr_free(exprs[i]);
        return r;
}

/* Plan lp (nl columns) {LEFT | RIGHT | FULL} JOIN rp (nr) on the conjunction preds
 * (consumed, over lp's columns then rp's) into *ret.  See the note above. */
static int plan_outer_join(struct analyzer *a, PgQuery__JoinType type, Coord__Plan__Relation *lp,
                           size_t nl, Coord__Plan__Relation *rp, size_t nr, Coord__Plan__Expr **preds,
                           size_t n_preds, Coord__Plan__Relation **ret)
{
        _cleanup_free_ uint32_t *lk = calloc(n_preds + 1, sizeof(uint32_t));
        _cleanup_free_ uint32_t *rk = calloc(n_preds + 1, sizeof(uint32_t));
        _cleanup_free_ Coord__Plan__Type *kt = calloc(n_preds + 1, sizeof(Coord__Plan__Type));
        _cleanup_free_ Coord__Plan__Type *lt = NULL, *rt = NULL;
        Coord__Plan__Expr **rpreds = NULL, **keyp = NULL;
        Coord__Plan__Relation *J = NULL, *UL = NULL, *UR = NULL, **parts = NULL;
        size_t m = 0, n_r = 0, n_lt = 0, n_rt = 0, k = 0, al = 0, ar = 0;
        bool left = type != PG_QUERY__JOIN_TYPE__JOIN_RIGHT, right = type != PG_QUERY__JOIN_TYPE__JOIN_LEFT;
        int r = 0;

        rpreds = calloc(n_preds + 1, sizeof(*rpreds));
        keyp = calloc(n_preds + 1, sizeof(*keyp));
        if (!lk || !rk || !kt || !rpreds || !keyp || rel_types(lp, &lt, &n_lt) < 0 ||
            rel_types(rp, &rt, &n_rt) < 0) {
                r = analyzer_oom(a);
                goto out;
        }
        assert(n_lt == nl && n_rt == nr);
        /* ON x AND y: each conjunct on its own. */
        for (size_t i = 0; i < n_preds; i++) {
                Coord__Plan__Expr *e = preds[i], **grown;
                Coord__Plan__Call *c = e->call;

                if (e->kind_case != COORD__PLAN__EXPR__KIND_CALL || c->func != COORD__PLAN__FUNC__FUNC_AND ||
                    c->n_args < 2)
                        continue;
                grown = realloc(preds, (n_preds + c->n_args - 1 + 1) * sizeof(*preds));
                if (!grown) {
                        r = analyzer_oom(a);
                        goto out;
                }
                preds = grown;
                for (size_t q = 1; q < c->n_args; q++)
                        preds[n_preds++] = TAKE_PTR(c->args[q]);
                preds[i] = TAKE_PTR(c->args[0]);
                c->n_args = 0;
                expr_free(e);
                i--;                    /* the first conjunct, again */
        }
        lk = reallocarray(TAKE_PTR(lk), n_preds + 1, sizeof(uint32_t));
        rk = reallocarray(TAKE_PTR(rk), n_preds + 1, sizeof(uint32_t));
        kt = reallocarray(TAKE_PTR(kt), n_preds + 1, sizeof(Coord__Plan__Type));
        free(rpreds);
        free(keyp);
        rpreds = calloc(n_preds + 1, sizeof(*rpreds));
        keyp = calloc(n_preds + 1, sizeof(*keyp));
        if (!lk || !rk || !kt || !rpreds || !keyp) {
                r = analyzer_oom(a);
                goto out;
        }
        for (size_t i = 0; i < n_preds; i++) {
                uint32_t lo = UINT32_MAX, hi = 0, x, y;

                if (join_key(preds[i], (uint32_t)nl, &x, &y)) {
                        lk[m] = x;
                        rk[m] = y;
                        kt[m] = lt[x] == rt[y] ? lt[x] : (Coord__Plan__Type)ROW_TYPE_INT8;
                        m++;
                        keyp[k++] = TAKE_PTR(preds[i]);
                } else if (type == PG_QUERY__JOIN_TYPE__JOIN_LEFT &&
                           (!expr_columns(preds[i], &lo, &hi) || lo >= nl)) {
                        expr_shift(preds[i], (uint32_t)nl);     /* a condition on R alone */
                        rpreds[n_r++] = TAKE_PTR(preds[i]);
                } else {
                        r = FAIL(a, "0A000", "this %s condition is not supported yet: only equalities of a "
                                 "left and a right column%s", type == PG_QUERY__JOIN_TYPE__JOIN_LEFT ? "LEFT JOIN"
                                 : type == PG_QUERY__JOIN_TYPE__JOIN_RIGHT ? "RIGHT JOIN" : "FULL JOIN",
                                 type == PG_QUERY__JOIN_TYPE__JOIN_LEFT ? ", and conditions on the right side "
                                                                         "alone" : "");
                        goto out;
                }
        }
        if (n_r && !(rp = rel_filter_n(rp, TAKE_PTR(rpreds), n_r))) {
                r = analyzer_oom(a);
                goto out;
        }
        r = widen_keys(a, &lp, &nl, &lt, lk, kt, m);
        if (r >= 0)
                al = (size_t)r;
        if (r >= 0)
                r = widen_keys(a, &rp, &nr, &rt, rk, kt, m);
        if (r < 0)
                goto out;
        ar = (size_t)r;
        if (al || ar)
                J = rel_join_on(rel_copy(lp), rel_copy(rp), nl, lk, rk, kt, m);
        else if ((J = rel_join(rel_copy(lp), rel_copy(rp))) && k)
                J = rel_filter_n(J, TAKE_PTR(keyp), k);
        if (left)
                UL = unmatched(rel_copy(lp), nl, rel_copy(rp), rt, nr, lk, rk, m, kt, false);
        if (right)
                UR = unmatched(rel_copy(rp), nr, rel_copy(lp), lt, nl, rk, lk, m, kt, true);
        parts = calloc(3, sizeof(*parts));
        if (!J || (left && !UL) || (right && !UR) || !parts) {
                r = analyzer_oom(a);
                goto out;
        }
        parts[0] = TAKE_PTR(J);
        n_r = 1;
        if (UL)
                parts[n_r++] = TAKE_PTR(UL);
        if (UR)
                parts[n_r++] = TAKE_PTR(UR);
        *ret = rel_union(TAKE_PTR(parts), n_r);
        if (*ret && (al || ar)) {
                /* Without the widened keys: left's columns, then right's. */
                uint32_t *cols = malloc((nl - al + nr - ar) * sizeof(*cols) + 1);
                size_t c = 0;

                for (size_t i = 0; cols && i < nl - al; i++)
                        cols[c++] = (uint32_t)i;
                for (size_t i = 0; cols && i < nr - ar; i++)
                        cols[c++] = (uint32_t)(nl + i);
                *ret = cols ? rel_project(*ret, cols, c) : (rel_free(*ret), NULL);
        }
        r = *ret ? 0 : analyzer_oom(a);
out:
        for (size_t i = 0; i < n_preds; i++)
                expr_free(preds[i]);
        free(preds);
        for (size_t i = 0; rpreds && i < n_preds; i++)
                expr_free(rpreds[i]);
        free(rpreds);
        for (size_t i = 0; keyp && i < n_preds; i++)
                expr_free(keyp[i]);
        free(keyp);
        rel_free(lp);
        rel_free(rp);
        rel_free(J);
        rel_free(UL);
        rel_free(UR);
        free(parts);
        return r;
}

/* (x JOIN y ...) AS j [(names)]: j names the join's columns and hides x's and y's names,
 * as in PostgreSQL; USING's right columns, reachable only as y.c, become unreachable. */
static int join_alias(struct analyzer *a, struct scope *sc, const PgQuery__Alias *alias)
{
        const char **q;

        if (!alias->aliasname || !alias->aliasname[0])
                return FAIL(a, "XX000", "malformed join alias");
        if (alias->n_colnames > sc->n_star)
                return FAIL(a, "42P10", "table \"%s\" has %zu columns available but %zu columns specified",
                            alias->aliasname, sc->n_star, alias->n_colnames);
        for (size_t i = 0; i < sc->n; i++)
                sc->cols[i].qual = sc->cols[i].hidden ? NULL : alias->aliasname;
        for (size_t i = 0; i < alias->n_colnames; i++) {
                const char *name = node_string(alias->colnames[i]);

                if (!name)
                        return FAIL(a, "XX000", "malformed column alias");
                sc->cols[sc->star[i]].name = name;
        }
        q = realloc(sc->quals, sizeof(*q));
        if (!q)
                return analyzer_oom(a);
        sc->quals = q;
        sc->quals[0] = alias->aliasname;
        sc->n_quals = 1;
        return 0;
}

/* A column USING (or NATURAL) merges: its name, the left and right columns it equates,
 * and the scope column that is the merged one. */
struct merged_col {
        const char *name;
        size_t l, r;
        size_t col;             /* sc->cols index: l, r, or a computed column after both */
        Coord__Plan__Expr *e;   /* computed: its value over the join's columns; else NULL */
};

/* The names a USING clause lists, or, for NATURAL, the left's visible column names that
 * the right also has, in the left's order (none: a cross join, as in PostgreSQL). */
static int using_names(struct analyzer *a, const PgQuery__JoinExpr *j, const struct scope *left,
                       const struct scope *right, const char ***ret, size_t *n_ret)
{
        size_t n = j->is_natural ? left->n_star : j->n_using_clause, k = 0;
        const char **names = calloc(n ? n : 1, sizeof(*names));

        if (!names)
                return analyzer_oom(a);
        for (size_t i = 0; i < n; i++) {
                const char *name;

                if (!j->is_natural) {
                        name = node_string(j->using_clause[i]);
                        if (!name) {
                                free(names);
                                return FAIL(a, "XX000", "malformed USING clause");
                        }
                        names[k++] = name;
                        continue;
                }
                name = left->cols[left->star[i]].name;
                for (size_t m = 0; m < right->n_star; m++)
                        if (strcmp(right->cols[right->star[m]].name, name) == 0) {
                                names[k++] = name;
                                break;
                        }
        }
        *ret = names;
        *n_ret = k;
        return 0;
}

/* PostgreSQL's merged USING column (buildMergedJoinVar()): the left column for an inner
 * or LEFT JOIN, the right one for a RIGHT JOIN, COALESCE(left, right) for a FULL JOIN,
 * each cast to the two columns' common type.  Where that is a column of one side as it
 * stands, it is that column; otherwise -- FULL JOIN, differing types, or USING (...) AS
 * alias, whose alias names the merged columns alone -- it is a scope column after the
 * join's own, computed by a Map over the join (using_map()).  The other columns answer
 * only to their table's name (hidden), and the merged ones lead the star, in USING's
 * order. */
static int using_merge(struct analyzer *a, const PgQuery__JoinExpr *j, struct scope *sc,
                       struct merged_col *mc, size_t n)
{
        const char *alias = j->join_using_alias ? j->join_using_alias->aliasname : NULL;
        bool full = j->jointype == PG_QUERY__JOIN_TYPE__JOIN_FULL;
        bool right = j->jointype == PG_QUERY__JOIN_TYPE__JOIN_RIGHT;
        int r;

        if (j->join_using_alias && (!alias || !alias[0]))
                return FAIL(a, "XX000", "malformed USING alias");
        if (alias) {
                r = scope_add_qual(a, sc, alias, -1);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n; i++) {
                struct typed v[2] = { { .location = -1 }, { .location = -1 } };
                const struct scope_col *l = &sc->cols[mc[i].l], *rc = &sc->cols[mc[i].r];
                size_t side = right ? mc[i].r : mc[i].l;
                bool nullable = full ? l->nullable || rc->nullable : sc->cols[side].nullable;
                int type;

                v[0].e = expr_column(l->type, (uint32_t)mc[i].l);
                v[1].e = expr_column(rc->type, (uint32_t)mc[i].r);
                r = v[0].e && v[1].e ? 0 : analyzer_oom(a);
                if (r < 0)
                        goto out;
                /* Its equality compares the columns' bytes (adapter-sql-bpchar.c). */
                if (l->type == ROW_TYPE_BPCHAR || rc->type == ROW_TYPE_BPCHAR)
                        r = bpchar_refuse(a, -1, "JOIN/USING");
                else
                        r = common_type(a, v, 2, "JOIN/USING", &type);
                if (r < 0)
                        goto out;
                if (!full && !alias && sc->cols[side].type == type) {
                        mc[i].col = side;
                        sc->cols[right ? mc[i].l : mc[i].r].hidden = true;
                        sc->star[sc->n_star++] = (uint32_t)side;
                        goto out;
                }
                if (full) {
                        Coord__Plan__Expr *args[2] = { TAKE_PTR(v[0].e), TAKE_PTR(v[1].e) };

                        mc[i].e = expr_call(type, COORD__PLAN__FUNC__FUNC_COALESCE, args, 2);
                        if (!mc[i].e) {
                                r = analyzer_oom(a);
                                goto out;
                        }
                } else {
                        mc[i].e = TAKE_PTR(v[right ? 1 : 0].e);
                }
                sc->cols[mc[i].l].hidden = sc->cols[mc[i].r].hidden = true;
                r = scope_add_col(a, sc, alias, mc[i].name, type, nullable, true);
                if (r >= 0)
                        mc[i].col = sc->n - 1;
out:
                typed_done(&v[0]);
                typed_done(&v[1]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The computed merged columns (using_merge()): a Map of them over the join's plan, in
 * the order of their scope columns. */
static int using_map(struct analyzer *a, struct merged_col *mc, size_t n, Coord__Plan__Relation **ret)
{
        Coord__Plan__Expr **exprs;
        size_t k = 0;

        for (size_t i = 0; i < n; i++)
                k += mc[i].e != NULL;
        if (!k)
                return 0;
        exprs = calloc(k, sizeof(*exprs));
        if (!exprs)
                return analyzer_oom(a);
        k = 0;
        for (size_t i = 0; i < n; i++)
                if (mc[i].e)
                        exprs[k++] = TAKE_PTR(mc[i].e);
        *ret = rel_map(*ret, exprs, k);
        return *ret ? 0 : analyzer_oom(a);
}

/* (x JOIN y ...) AS j: j.* is the join's star, in its order, as in PostgreSQL; a
 * qualified star lists a range's columns in column order, so the join's columns are
 * projected into star order, the ones only reachable qualified after them. */
static int join_star_order(struct analyzer *a, struct scope *sc, Coord__Plan__Relation **ret)
{
        _cleanup_free_ struct scope_col *cols = NULL;
        _cleanup_free_ bool *in_star = NULL;
        uint32_t *order;
        size_t k = 0;
        bool same = true;

        for (size_t i = 0; i < sc->n_star; i++)
                same = same && sc->star[i] == i;
        if (same)
                return 0;
        cols = malloc(sc->n * sizeof(*cols));
        in_star = calloc(sc->n, sizeof(*in_star));
        order = malloc(sc->n * sizeof(*order));
        if (!cols || !in_star || !order) {
                free(order);
                return analyzer_oom(a);
        }
        for (size_t i = 0; i < sc->n_star; i++) {
                in_star[sc->star[i]] = true;
                order[k++] = sc->star[i];
        }
        for (size_t i = 0; i < sc->n; i++)
                if (!in_star[i])
                        order[k++] = (uint32_t)i;
        assert(k == sc->n);
        for (size_t i = 0; i < sc->n; i++)
                cols[i] = sc->cols[order[i]];
        memcpy(sc->cols, cols, sc->n * sizeof(*cols));
        for (size_t i = 0; i < sc->n_star; i++)
                sc->star[i] = (uint32_t)i;
        *ret = rel_project(*ret, order, sc->n);
        return *ret ? 0 : analyzer_oom(a);
}

static void merged_free(struct merged_col *mc, size_t n)
{
        for (size_t i = 0; mc && i < n; i++)
                expr_free(mc[i].e);
        free(mc);
}

static int plan_join_expr(struct analyzer *a, const PgQuery__JoinExpr *j, struct scope *sc,
                          Coord__Plan__Relation **ret)
{
        static const char *const kinds[] = {
                [PG_QUERY__JOIN_TYPE__JOIN_LEFT] = "LEFT JOIN",
                [PG_QUERY__JOIN_TYPE__JOIN_FULL] = "FULL JOIN",
                [PG_QUERY__JOIN_TYPE__JOIN_RIGHT] = "RIGHT JOIN",
        };
        _cleanup_(scope_done) struct scope left = { 0 }, right = { 0 };
        _cleanup_(rel_freep) Coord__Plan__Relation *lp = NULL, *rp = NULL;
        Coord__Plan__Expr **preds = NULL;
        _cleanup_free_ bool *using_right = NULL;
        _cleanup_free_ bool *using_left = NULL;
        _cleanup_free_ const char **names = NULL;
        struct merged_col *merged = NULL;
        const struct scope *saved = a->scope;
        size_t n_preds = 0, nl, n_cols, n_names = 0;
        int r;

        bool outer = j->jointype == PG_QUERY__JOIN_TYPE__JOIN_LEFT || j->jointype == PG_QUERY__JOIN_TYPE__JOIN_RIGHT ||
                     j->jointype == PG_QUERY__JOIN_TYPE__JOIN_FULL;

        if (j->jointype != PG_QUERY__JOIN_TYPE__JOIN_INNER && !outer) {
                const char *k = (unsigned)j->jointype < ELEMENTSOF(kinds) ? kinds[j->jointype] : NULL;

                return FAIL(a, "0A000", "%s is not supported yet", k ? k : "this join");
        }
        r = plan_from_item(a, j->larg, &left, &lp);
        if (r >= 0)
                r = plan_from_item(a, j->rarg, &right, &rp);
        if (r < 0)
                return r;
        nl = left.n;
        r = scope_concat(a, sc, &left, -1);
        if (r >= 0)
                r = scope_concat(a, sc, &right, -1);
        if (r >= 0)
                r = using_names(a, j, &left, &right, &names, &n_names);
        if (r < 0)
                return r;
        n_cols = sc->n;
        /* The scope's star so far is left's then right's; USING reorders it. */
        sc->n_star = 0;
        using_left = calloc(sc->n ? sc->n : 1, sizeof(bool));
        using_right = calloc(sc->n ? sc->n : 1, sizeof(bool));
        merged = calloc(n_names ? n_names : 1, sizeof(*merged));
        if (!using_left || !using_right || !merged) {
                r = analyzer_oom(a);
                goto fail;
        }
        for (size_t i = 0; i < n_names; i++) {
                _cleanup_(typed_done) struct typed l = { .location = -1 }, rt = { .location = -1 };
                size_t li, ri;

                r = using_column(a, sc, 0, nl, names[i], "left", &li);
                if (r >= 0)
                        r = using_column(a, sc, nl, n_cols, names[i], "right", &ri);
                if (r < 0)
                        goto fail;
                l.e = expr_column(sc->cols[li].type, (uint32_t)li);
                rt.e = expr_column(sc->cols[ri].type, (uint32_t)ri);
                if (!l.e || !rt.e) {
                        r = analyzer_oom(a);
                        goto fail;
                }
                r = binary_op(a, "=", &l, &rt, -1);
                if (r >= 0)
                        r = conj_add(a, &preds, &n_preds, TAKE_PTR(l.e));
                if (r < 0)
                        goto fail;
                using_left[li] = using_right[ri] = true;
                merged[i] = (struct merged_col){ .name = names[i], .l = li, .r = ri };
        }
        r = using_merge(a, j, sc, merged, n_names);
        if (r < 0)
                goto fail;
        for (size_t i = 0; i < left.n_star; i++)
                if (!using_left[left.star[i]])
                        sc->star[sc->n_star++] = left.star[i];
        for (size_t i = 0; i < right.n_star; i++)
                if (!using_right[nl + right.star[i]])
                        sc->star[sc->n_star++] = (uint32_t)nl + right.star[i];
        if (j->quals) {
                _cleanup_(typed_done) struct typed t = { .location = -1 };
                const char *no_agg = a->no_agg;
                struct agg_ctx *agg = a->agg;

                a->scope = sc;
                a->no_agg = "JOIN conditions";
                a->agg = NULL;
                r = analyze_expr(a, j->quals, &t);
                if (r >= 0)
                        r = require_bool(a, &t, "JOIN/ON");
                a->scope = saved;
                a->no_agg = no_agg;
                a->agg = agg;
                if (r >= 0)
                        r = conj_add(a, &preds, &n_preds, TAKE_PTR(t.e));
                if (r < 0)
                        goto fail;
        }
        if (j->alias) {
                r = join_alias(a, sc, j->alias);
                if (r < 0)
                        goto fail;
        }
        if (outer) {
                /* The side that may be padded with NULLs: its columns are nullable (the
                 * merged columns after them say for themselves, using_merge()). */
                for (size_t i = 0; i < n_cols; i++)
                        if ((i < nl && j->jointype != PG_QUERY__JOIN_TYPE__JOIN_LEFT) ||
                            (i >= nl && j->jointype != PG_QUERY__JOIN_TYPE__JOIN_RIGHT))
                                sc->cols[i].nullable = true;
                r = plan_outer_join(a, j->jointype, TAKE_PTR(lp), nl, TAKE_PTR(rp), n_cols - nl,
                                    TAKE_PTR(preds), n_preds, ret);
                if (r >= 0)
                        r = using_map(a, merged, n_names, ret);
                if (r >= 0 && j->alias)
                        r = join_star_order(a, sc, ret);
                merged_free(merged, n_names);
                return r;
        }
        *ret = rel_join(TAKE_PTR(lp), TAKE_PTR(rp));
        if (*ret && n_preds)
                *ret = rel_filter_n(*ret, TAKE_PTR(preds), n_preds);
        else
                free(preds);
        r = *ret ? using_map(a, merged, n_names, ret) : analyzer_oom(a);
        if (r >= 0 && j->alias)
                r = join_star_order(a, sc, ret);
        merged_free(merged, n_names);
        return r;
fail:
        for (size_t i = 0; i < n_preds; i++)
                expr_free(preds[i]);
        free(preds);
        merged_free(merged, n_names);
        return r;
}

static int plan_from_item(struct analyzer *a, const PgQuery__Node *n, struct scope *sc,
                          Coord__Plan__Relation **ret)
{
        switch (n->node_case) {
        case PG_QUERY__NODE__NODE_RANGE_VAR:
                return plan_range_var(a, n->range_var, sc, ret);
        case PG_QUERY__NODE__NODE_RANGE_SUBSELECT:
                return plan_range_subselect(a, n->range_subselect, sc, ret);
        case PG_QUERY__NODE__NODE_JOIN_EXPR:
                return plan_join_expr(a, n->join_expr, sc, ret);
        case PG_QUERY__NODE__NODE_RANGE_FUNCTION:
                return FAIL(a, "0A000", "functions in FROM are not supported");
        default:
                return FAIL(a, "0A000", "this FROM item is not supported");
        }
}

/* The FROM clause: a cross join of its items in the written order (the optimizer
 * reorders them by the WHERE's equalities and turns those into join keys). */
int plan_from(struct analyzer *a, const PgQuery__SelectStmt *s, struct scope *sc,
                     Coord__Plan__Relation **ret)
{
        Coord__Plan__Relation *plan = NULL;

        for (size_t i = 0; i < s->n_from_clause; i++) {
                _cleanup_(scope_done) struct scope item = { 0 };
                Coord__Plan__Relation *p = NULL;
                int r = plan_from_item(a, s->from_clause[i], &item, &p);

                if (r >= 0)
                        r = scope_concat(a, sc, &item, node_location(s->from_clause[i]));
                if (r < 0) {
                        rel_free(p);
                        rel_free(plan);
                        return r;
                }
                plan = plan ? rel_join(plan, p) : p;
                if (!plan)
                        return analyzer_oom(a);
        }
        if (!plan)
                plan = rel_unit();
        if (!plan)
                return analyzer_oom(a);
        *ret = plan;
        return 0;
}
