/* adapter-sql-plan.c -- statements that plan: DELETE, UPDATE, INSERT ... SELECT, SELECT;
 * SHOW, SET, transactions, ALTER ... RETAIN HISTORY; sql_analyze() over them all
 * (adapter-sql-internal.h). */
#include "adapter-sql-internal.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "builtins.h"
#include "util.h"

/* ---- Statements that plan. ---- */

/* The table a DELETE or UPDATE writes, its columns in scope, and the rows its WHERE
 * keeps: Filter(Get) into *ret_plan. */
static int analyze_target_rows(struct analyzer *a, const PgQuery__RangeVar *rv,
                               const PgQuery__WithClause *with, struct cte_level *level,
                               const PgQuery__Node *where, const char *verb,
                               struct sql_delete *sd, struct sql_relation *rel,
                               struct scope *sc, Coord__Plan__Relation **ret_plan)
{
        _cleanup_(attach_done) struct attach wat = { 0 };
        Coord__Plan__Relation *plan = NULL;
        Coord__Plan__Expr *pred = NULL;
        size_t n_from;
        const char *qual;
        int r;

        r = target_table(a, rv, verb, rel, &sd->table);
        if (r < 0)
                return r;
        sd->id = rel->id;
        if (rv->alias && rv->alias->n_colnames)
                return FAIL_AT(a, rv->location, "0A000", "column aliases are not supported here");
        qual = rv->alias && rv->alias->aliasname && rv->alias->aliasname[0] ? rv->alias->aliasname
                                                                              : sd->table;
        r = scope_add_qual(a, sc, qual, rv->location);
        for (size_t i = 0; r >= 0 && i < rel->n_columns; i++)
                r = scope_add_col(a, sc, qual, rel->columns[i].name, rel->columns[i].type,
                                  rel->columns[i].nullable, true);
        if (r >= 0)
                r = add_input(a, rel->id);
        if (r < 0)
                return r;
        plan = rel_get(rel);
        if (!plan)
                return analyzer_oom(a);
        /* The WHERE as a SELECT's (plan_select()): its subqueries attached as columns
         * past the table's, dropped after the filter.  The controller evaluates the plan
         * at the write timestamp, so a subquery reads tables only (a->write_reads). */
        n_from = sc->n;
        wat = (struct attach){ .scope = sc, .base_n = sc->n };
        a->scope = sc;
        a->no_agg = "WHERE";
        a->write_reads = verb[0] == 'd' ? "DELETE" : "UPDATE";
        /* WITH queries are seen by the subqueries (the caller pops *level); the target
         * is the table. */
        r = with ? with_push(a, with, level) : 0;
        if (r >= 0)
                r = truth_sublinks(a, where, &wat);
        a->attach = &wat;
        if (r >= 0)
                r = analyze_where(a, where, &pred);
        a->attach = NULL;
        if (r >= 0)
                r = plan_where(a, &plan, TAKE_PTR(pred), &wat, NULL, n_from);
        a->scope = NULL;
        a->no_agg = NULL;
        a->write_reads = NULL;
        if (r >= 0 && sc->n > n_from) {
                plan = rel_project_range(TAKE_PTR(plan), 0, n_from);
                sc->n = n_from;
                if (!plan)
                        r = analyzer_oom(a);
        }
        expr_free(pred);
        if (r < 0) {
                rel_free(plan);
                return r;
        }
        *ret_plan = plan;
        return 0;
}

/* DELETE ... RETURNING, INSERT ... SELECT ... RETURNING: the list's values over the
 * table's row (the plan's first n columns) after it (coord.proto TableWrite.returning),
 * so the controller evaluates them with the write; *ret_peek gets their columns. */
static int returning_after(struct analyzer *a, PgQuery__RangeVar *relation, PgQuery__Node **list,
                           size_t n_list, uint64_t id, size_t n, Coord__Plan__Peek **ret_peek,
                           Coord__Plan__Relation **plan)
{
        _cleanup_free_ Coord__Plan__Type *types = NULL;
        Coord__Plan__Expr **e = NULL;
        uint32_t *keep;
        size_t m = 0, width = 0;
        int r = rel_types(*plan, &types, &width);

        if (r < 0)
                return r == -ENOMEM ? analyzer_oom(a) : FAIL(a, "XX000", "cannot type a plan");
        r = write_returning(a, relation, list, n_list, id, n, ret_peek, &e, &m);
        if (r < 0)
                return r;
        keep = malloc((n + m) * sizeof(*keep));
        *plan = rel_map(*plan, e, m);
        if (!*plan || !keep) {
                free(keep);
                return analyzer_oom(a);
        }
        for (size_t c = 0; c < n + m; c++)
                keep[c] = (uint32_t)(c < n ? c : width + c - n);
        *plan = rel_project(*plan, keep, n + m);
        return *plan ? 0 : analyzer_oom(a);
}

/* DELETE FROM t [AS x] USING items WHERE cond: WHERE EXISTS (SELECT NULL FROM items
 * WHERE cond), each row of t once however many item rows match (adapter-sql-using.c). */
static int analyze_delete(struct analyzer *a, const PgQuery__DeleteStmt *d)
{
        struct sql_delete *sd = &a->stmt->delete_;
        _cleanup_(rel_freep) Coord__Plan__Relation *plan = NULL;
        _cleanup_(scope_done) struct scope sc = { 0 };
        PgQuery__Node *where = d->where_clause;
        struct write_from wf;
        struct sql_relation rel;
        struct cte_level level;
        int r;

        if (d->n_using_clause) {
                r = write_from_begin(a, &wf, "DELETE ... USING", "DELETE", d->relation,
                                     d->using_clause, d->n_using_clause, d->where_clause,
                                     d->with_clause, NULL, 0, d->returning_list,
                                     d->n_returning_list, &where);
                if (r < 0)
                        return r;
        }
        r = analyze_target_rows(a, d->relation, d->with_clause, &level, where,
                                "delete from", sd, &rel, &sc, &plan);
        a->ctes = NULL;
        if (d->n_using_clause)
                r = write_from_refusal(a, &wf, r);
        if (r >= 0 && d->n_returning_list) {
                r = returning_after(a, d->relation, d->returning_list, d->n_returning_list, sd->id,
                                    rel.n_columns, &sd->returning, &plan);
                if (d->n_using_clause)
                        r = write_from_returning(a, &wf, r);
        }
        if (r >= 0)
                r = finish_plan(a, &plan);
        if (r < 0)
                return r;
        sd->plan = TAKE_PTR(plan);
        return 0;
}

/* UPDATE t SET c = e, ... [WHERE ...]: Map(Filter(Get t)) with the new value of every
 * column after the old row -- an unassigned column keeps its value, an assigned one
 * takes its expression coerced as an INSERT value is (DEFAULT: NULL), checked by
 * FUNC_ASSERT_NOT_NULL where the column is NOT NULL and the value may be NULL.  The
 * controller evaluates it at the write timestamp (also mz_now()'s value), so the rows
 * read and the rows written are one atomic step, as a DELETE's are. */
/* e with every column k replaced by a copy of vals[k]; NULL when out of memory. */
static Coord__Plan__Expr *expr_subst(const Coord__Plan__Expr *e, Coord__Plan__Expr *const *vals, size_t n)
{
        Coord__Plan__Expr *x;

        if (e->kind_case == COORD__PLAN__EXPR__KIND_COLUMN)
                return e->column < n ? expr_copy(vals[e->column]) : NULL;
        x = expr_copy(e);
        if (!x || x->kind_case != COORD__PLAN__EXPR__KIND_CALL)
                return x;
        for (size_t i = 0; i < x->call->n_args; i++) {
                Coord__Plan__Expr *s = expr_subst(e->call->args[i], vals, n);

                if (!s) {
                        expr_free(x);
                        return NULL;
                }
                expr_free(x->call->args[i]);
                x->call->args[i] = s;
        }
        return x;
}

/* vals[0] = FUNC_CHECK_CONSTRAINT(vals[0], chk over the new values vals, name, table). */
static int update_check(struct analyzer *a, const struct sql_check *chk, const char *table,
                        Coord__Plan__Expr **vals, size_t n)
{
        Coord__Plan__Expr *cond = coord__plan__expr__unpack(NULL, chk->expr_len, chk->expr), *args[4];
        struct row_datum dn = ROW_DATUM_TEXT(chk->name, (uint32_t)strlen(chk->name));
        struct row_datum dt = ROW_DATUM_TEXT(table, (uint32_t)strlen(table));
        int type = (int)vals[0]->type;

        if (!cond)
                return FAIL(a, "XX000", "the CHECK constraint \"%s\" of \"%s\" does not decode",
                            chk->name, table);
        args[1] = expr_subst(cond, vals, n);
        expr_free(cond);
        args[0] = vals[0];
        args[2] = expr_literal(ROW_TYPE_TEXT, &dn);
        args[3] = expr_literal(ROW_TYPE_TEXT, &dt);
        if (!args[1] || !args[2] || !args[3]) {
                for (size_t i = 1; i < 4; i++)
                        expr_free(args[i]);
                return analyzer_oom(a);
        }
        vals[0] = expr_call(type, COORD__PLAN__FUNC__FUNC_CHECK_CONSTRAINT, args, 4);
        return vals[0] ? 0 : analyzer_oom(a);
}

/* *e checked by FUNC_ASSERT_NOT_NULL (23502 when NULL) where col is NOT NULL and *e may
 * be NULL: the controller's check of an UPDATE's or an INSERT ... SELECT's new values. */
static int assert_not_null(struct analyzer *a, Coord__Plan__Expr **e, const struct sql_column *col,
                           const char *table)
{
        struct row_datum cn = ROW_DATUM_TEXT(col->name, (uint32_t)strlen(col->name));
        struct row_datum tn = ROW_DATUM_TEXT(table, (uint32_t)strlen(table));
        Coord__Plan__Expr *args[3];

        if (col->nullable ||
            (is_literal(*e) && (*e)->literal->value_case != COORD__PLAN__DATUM__VALUE_NULL_VALUE))
                return 0;
        args[0] = *e;
        args[1] = expr_literal(ROW_TYPE_TEXT, &cn);
        args[2] = expr_literal(ROW_TYPE_TEXT, &tn);
        *e = NULL;
        if (!args[1] || !args[2]) {
                for (size_t k = 0; k < 3; k++)
                        expr_free(args[k]);
                return analyzer_oom(a);
        }
        *e = expr_call((int)args[0]->type, COORD__PLAN__FUNC__FUNC_ASSERT_NOT_NULL, args, 3);
        return *e ? 0 : analyzer_oom(a);
}

/* UPDATE ... RETURNING: *vals (the n new values) grows by the list's m values over the
 * new row (expressions over the old one with each column replaced by its new value). */
static int update_returning(struct analyzer *a, const PgQuery__UpdateStmt *u,
                            Coord__Plan__Expr ***vals, size_t n, size_t *ret_m)
{
        struct sql_delete *su = &a->stmt->update;
        Coord__Plan__Expr **e = NULL, **v;
        size_t m = 0;
        int r = write_returning(a, u->relation, u->returning_list, u->n_returning_list, su->id, n,
                                &su->returning, &e, &m);

        if (r < 0)
                return r;
        v = realloc(*vals, (n + m ? n + m : 1) * sizeof(*v));
        if (v) {
                *vals = v;
                *ret_m = m;     /* the caller frees them all */
                for (size_t k = 0; k < m; k++)
                        v[n + k] = NULL;
        }
        for (size_t k = 0; v && k < m; k++) {
                v[n + k] = expr_subst(e[k], v, n);
                if (!v[n + k])
                        v = NULL;
        }
        for (size_t k = 0; k < m; k++)
                expr_free(e[k]);
        free(e);
        return v ? 0 : analyzer_oom(a);
}

/* UPDATE t SET ... FROM items WHERE cond: the rows of WHERE EXISTS (SELECT NULL FROM
 * items WHERE cond), each item's column in a SET value the scalar subquery of the one
 * matching row, 21000 when several match (adapter-sql-using.c note 3). */
int analyze_update(struct analyzer *a, const PgQuery__UpdateStmt *u)
{
        struct sql_delete *su = &a->stmt->update;
        _cleanup_(rel_freep) Coord__Plan__Relation *plan = NULL;
        _cleanup_(scope_done) struct scope sc = { 0 };
        _cleanup_free_ Coord__Plan__Expr **vals = NULL;
        _cleanup_(attach_done) struct attach sat = { 0 };
        _cleanup_free_ uint32_t *keep = NULL;
        PgQuery__Node *where = u->where_clause;
        struct write_from wf;
        struct sql_relation rel;
        struct cte_level level;
        size_t n, width, m = 0;
        int r;

        if (u->n_from_clause) {
                r = write_from_begin(a, &wf, a->preset_name ? "ON CONFLICT DO UPDATE" : "UPDATE ... FROM",
                                     "UPDATE", u->relation,
                                     u->from_clause, u->n_from_clause, u->where_clause,
                                     u->with_clause, u->target_list, u->n_target_list,
                                     u->returning_list, u->n_returning_list, &where);
                if (r < 0)
                        return r;
        }
        r = analyze_target_rows(a, u->relation, u->with_clause, &level, where, "update",
                                su, &rel, &sc, &plan);
        if (u->n_from_clause)
                r = write_from_refusal(a, &wf, r);
        if (r < 0) {
                a->ctes = NULL;
                return r;
        }
        n = rel.n_columns;
        vals = calloc(n ? n : 1, sizeof(*vals));
        if (!vals)
                return analyzer_oom(a);
        /* The values' subqueries attach as columns past the table's (as a SELECT
         * list's, plan_select()), reading tables only (a->write_reads). */
        sat = (struct attach){ .scope = &sc, .base_n = sc.n };
        a->attach = &sat;
        a->write_reads = "UPDATE";
        a->scope = &sc;
        a->no_agg = "UPDATE";
        for (size_t i = 0; r >= 0 && i < u->n_target_list; i++) {
                const PgQuery__Node *tn = u->target_list[i];
                const PgQuery__ResTarget *t = tn && tn->node_case == PG_QUERY__NODE__NODE_RES_TARGET
                                                      ? tn->res_target
                                                      : NULL;
                struct typed v = { .location = -1 };
                size_t c = 0;

                if (!t || !t->name || !t->val) {
                        r = FAIL(a, "XX000", "malformed UPDATE");
                        break;
                }
                if (t->n_indirection ||
                    t->val->node_case == PG_QUERY__NODE__NODE_MULTI_ASSIGN_REF) {
                        r = FAIL_AT(a, t->location, "0A000",
                                    "this form of SET is not supported: write column = value");
                        break;
                }
                while (c < n && strcmp(rel.columns[c].name, t->name) != 0)
                        c++;
                if (c == n) {
                        r = FAIL_AT(a, t->location, "42703",
                                    "column \"%s\" of relation \"%s\" does not exist", t->name,
                                    su->table);
                        break;
                }
                if (vals[c]) {
                        r = FAIL_AT(a, t->location, "42601",
                                    "multiple assignments to same column \"%s\"", t->name);
                        break;
                }
                if (t->val->node_case == PG_QUERY__NODE__NODE_SET_TO_DEFAULT && rel.columns[c].default_row) {
                        struct row_datum d = column_default(&rel.columns[c]);
                        r = typed_literal(a, rel.columns[c].type, &d, false, t->location, &v);
                } else if (t->val->node_case == PG_QUERY__NODE__NODE_SET_TO_DEFAULT)
                        r = unknown_null(a, t->location, &v);
                else if (!u->n_from_clause)
                        r = analyze_expr(a, t->val, &v);
                else {
                        PgQuery__Node *val = NULL;

                        r = write_from_value(a, &wf, &rel, t->val, &val);
                        if (r >= 0)
                                r = write_from_refusal(a, &wf, analyze_expr(a, val, &v));
                        if (val)
                                pg_query__node__free_unpacked(val, NULL);
                }
                if (r >= 0)
                        r = assign_column(a, &v, &rel.columns[c]);
                if (r >= 0)
                        r = assert_not_null(a, &v.e, &rel.columns[c], su->table);
                if (r >= 0)
                        vals[c] = TAKE_PTR(v.e);
                typed_done(&v);
        }
        a->attach = NULL;
        a->write_reads = NULL;
        a->ctes = NULL;
        a->scope = NULL;
        a->no_agg = NULL;
        width = sc.n;
        if (r >= 0 && sat.n)
                r = attach_apply(a, &sat, &plan);
        for (size_t c = 0; r >= 0 && c < n; c++)
                if (!vals[c] && !(vals[c] = expr_column(rel.columns[c].type, (uint32_t)c)))
                        r = analyzer_oom(a);
        /* The controller computes the new rows: each CHECK, over the new values, guards
         * the first of them (FUNC_CHECK_CONSTRAINT: 23514 when FALSE). */
        for (size_t k = 0; r >= 0 && n && k < rel.n_checks; k++)
                r = update_check(a, &rel.checks[k], su->table, vals, n);
        /* RETURNING: the list over the new row, after it (TableWrite.returning). */
        if (r >= 0 && u->n_returning_list) {
                r = update_returning(a, u, &vals, n, &m);
                if (u->n_from_clause)
                        r = write_from_returning(a, &wf, r);
        }
        if (r < 0) {
                for (size_t c = 0; c < n + m; c++)
                        expr_free(vals[c]);
                return r;
        }
        plan = rel_map(TAKE_PTR(plan), TAKE_PTR(vals), n + m);
        if (plan && (width > n || m)) {
                /* The old row, then the new one (and RETURNING): the attached columns go. */
                keep = malloc((2 * n + m) * sizeof(*keep));
                if (!keep)
                        return analyzer_oom(a);
                for (size_t c = 0; c < n; c++) {
                        keep[c] = (uint32_t)c;
                        keep[n + c] = (uint32_t)(width + c);
                }
                for (size_t c = 0; c < m; c++)
                        keep[2 * n + c] = (uint32_t)(width + n + c);
                plan = rel_project(TAKE_PTR(plan), TAKE_PTR(keep), 2 * n + m);
        }
        if (!plan)
                return analyzer_oom(a);
        r = finish_plan(a, &plan);
        if (r < 0)
                return r;
        su->plan = TAKE_PTR(plan);
        return 0;
}

/* A SELECT list entry that is a string literal or NULL, without a cast. */
static bool untyped_literal(const PgQuery__Node *n)
{
        const PgQuery__ResTarget *rt = n->node_case == PG_QUERY__NODE__NODE_RES_TARGET
                                               ? n->res_target
                                               : NULL;
        const PgQuery__AConst *c = rt && rt->val && rt->val->node_case == PG_QUERY__NODE__NODE_A_CONST
                                           ? rt->val->a_const
                                           : NULL;

        return c && (c->isnull || c->val_case == PG_QUERY__A__CONST__VAL_SVAL);
}

/* INSERT ... SELECT: the query's rows, each output column coerced into its target column
 * as an INSERT value is (assign_column()), the other columns their defaults, then NOT NULL and
 * the CHECKs guarded as an UPDATE's new values are; Project keeps the table's row.  The
 * controller evaluates it at the write timestamp, after the group's earlier writes, and
 * inserts what it returns (TableWrite.insert_select): one atomic read-and-write, as a
 * DELETE.  So it may read only tables (and views over them: a->write_reads,
 * plan_range_var()), the collections complete at that timestamp. */
int analyze_insert_select(struct analyzer *a, const PgQuery__InsertStmt *ins,
                                 const struct sql_relation *rel, const size_t *targets,
                                 size_t n_targets)
{
        struct sql_insert *si = &a->stmt->insert;
        const PgQuery__SelectStmt *sel = ins->select_stmt->select_stmt;
        _cleanup_(rel_freep) Coord__Plan__Relation *plan = NULL;
        _cleanup_(scope_done) struct scope cols = { 0 };
        _cleanup_free_ Coord__Plan__Expr **vals = NULL;
        size_t n = rel->n_columns, n_out;
        struct cte_level level;
        int r;

        if ((sel->limit_count || sel->limit_offset) && !sel->n_sort_clause)
                return FAIL(a, "0A000", "INSERT ... SELECT with LIMIT or OFFSET needs ORDER BY: "
                                        "which rows it inserts must not be left to chance");
        a->strict_fold = false;
        a->write_reads = sel->n_values_lists ? "INSERT ... VALUES with a subquery"
                                             : "INSERT ... SELECT";
        r = ins->with_clause ? with_push(a, ins->with_clause, &level) : 0;
        if (r >= 0)
                r = plan_query(a, ins->select_stmt, NULL, &plan, &cols);
        a->write_reads = NULL;
        a->ctes = NULL;
        if (r < 0)
                return r;
        n_out = cols.n;
        if (n_out > n_targets)
                return FAIL(a, "42601", "INSERT has more expressions than target columns");
        if (ins->n_cols && n_out < n_targets)
                return FAIL_AT(a, ins->cols[n_out]->res_target->location, "42601",
                               "INSERT has more target columns than expressions");
        vals = calloc(n ? n : 1, sizeof(*vals));
        if (!vals)
                return analyzer_oom(a);
        for (size_t i = 0; r >= 0 && i < n_out; i++) {
                const PgQuery__Node *tn = sel->n_target_list > i ? sel->target_list[i] : NULL;
                struct typed v = { .location = tn ? node_location(tn) : -1 };

                v.e = expr_column(cols.cols[i].type, (uint32_t)i);
                /* An untyped literal takes its column's type, as PostgreSQL's does: read
                 * by the type's input function (a cast, 22P02 when it does not parse). */
                if (v.e && tn && untyped_literal(tn) && (int)v.e->type == ROW_TYPE_TEXT &&
                    rel->columns[targets[i]].type != ROW_TYPE_TEXT)
                        r = wrap_call(a, &v, COORD__PLAN__FUNC__FUNC_CAST, rel->columns[targets[i]].type);
                if (r >= 0)
                        r = v.e ? assign_column(a, &v, &rel->columns[targets[i]]) : analyzer_oom(a);
                if (r >= 0)
                        vals[targets[i]] = TAKE_PTR(v.e);
                typed_done(&v);
        }
        for (size_t c = 0; r >= 0 && c < n; c++) {
                if (!vals[c]) {
                        struct row_datum d = column_default(&rel->columns[c]);

                        if (!(vals[c] = expr_literal(rel->columns[c].type, &d)))
                                r = analyzer_oom(a);
                }
                if (r >= 0)
                        r = assert_not_null(a, &vals[c], &rel->columns[c], si->table);
        }
        for (size_t k = 0; r >= 0 && n && k < rel->n_checks; k++)
                r = update_check(a, &rel->checks[k], si->table, vals, n);
        if (r < 0) {
                for (size_t c = 0; c < n; c++)
                        expr_free(vals[c]);
                return r;
        }
        plan = rel_project_range(rel_map(TAKE_PTR(plan), TAKE_PTR(vals), n), (uint32_t)n_out, n);
        if (!plan)
                return analyzer_oom(a);
        if (ins->n_returning_list) {
                r = returning_after(a, ins->relation, ins->returning_list, ins->n_returning_list,
                                    si->id, n, &si->select_returning, &plan);
                if (r < 0)
                        return r;
        }
        r = finish_plan(a, &plan);
        if (r < 0)
                return r;
        si->plan = TAKE_PTR(plan);
        return 0;
}

/* A Peek's output columns: cols's, copied. */
int peek_columns(struct analyzer *a, Coord__Plan__Peek *peek, const struct scope *cols)
{
        peek->columns = calloc(cols->n ? cols->n : 1, sizeof(*peek->columns));
        if (!peek->columns)
                return analyzer_oom(a);
        for (size_t i = 0; i < cols->n; i++) {
                Coord__Plan__Column *c = malloc(sizeof(*c));

                if (!c)
                        return analyzer_oom(a);
                coord__plan__column__init(c);
                peek->columns[peek->n_columns++] = c;
                c->name = strdup(cols->cols[i].name);
                if (!c->name)
                        return analyzer_oom(a);
                c->type = (Coord__Plan__Type)cols->cols[i].type;
                c->nullable = cols->cols[i].nullable;
        }
        return 0;
}

static int analyze_select(struct analyzer *a, const PgQuery__Node *n,
                          const struct as_of_clause *as_of)
{
        struct sql_select *ss = &a->stmt->select;
        _cleanup_(scope_done) struct scope cols = { 0 };
        Coord__Plan__Relation *plan = NULL;
        int r;

        ss->peek = malloc(sizeof(*ss->peek));
        if (!ss->peek)
                return analyzer_oom(a);
        coord__plan__peek__init(ss->peek);
        a->peek = true;
        r = plan_query(a, n, ss->peek, &plan, &cols);
        ss->peek->plan = plan;          /* freed with the statement */
        if (r < 0)
                return r;
        r = finish_plan(a, &ss->peek->plan);
        if (r < 0)
                return r;
        r = peek_columns(a, ss->peek, &cols);
        if (r < 0)
                return r;
        if (as_of) {
                r = analyze_as_of(a, as_of, &ss->as_of);
                if (r < 0)
                        return r;
                ss->has_as_of = true;
        }
        return 0;
}

static char *lowercase_dup(const char *s)
{
        char *d = strdup(s ? s : "");

        for (char *p = d; p && *p; p++)
                *p = (char)tolower((unsigned char)*p);
        return d;
}

static int analyze_show(struct analyzer *a, const PgQuery__VariableShowStmt *v,
                        const struct lift *lift)
{
        static const struct {
                const char *name;
                enum sql_object_kind kind;
        } lists[] = {
                { "tables", SQL_OBJECT_TABLE },   { "views", SQL_OBJECT_VIEW },
                { "indexes", SQL_OBJECT_INDEX },  { "sources", SQL_OBJECT_SOURCE },
                { "sinks", SQL_OBJECT_SINK },
        };
        const char *name = v->name ? v->name : "";

        if (lift && lift->kind == LIFT_SHOW_MATERIALIZED_VIEWS) {
                a->stmt->kind = SQL_STMT_SHOW_OBJECTS;
                a->stmt->show_objects.kind = SQL_OBJECT_MATERIALIZED_VIEW;
                return 0;
        }
        if (strcmp(name, "objects") == 0) {
                a->stmt->kind = SQL_STMT_SHOW_OBJECTS;
                a->stmt->show_objects.all = true;
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(lists); i++)
                if (strcmp(name, lists[i].name) == 0) {
                        a->stmt->kind = SQL_STMT_SHOW_OBJECTS;
                        a->stmt->show_objects.kind = lists[i].kind;
                        return 0;
                }
        a->stmt->kind = SQL_STMT_SHOW_VARIABLE;
        a->stmt->show_variable.name = lowercase_dup(name);
        return a->stmt->show_variable.name ? 0 : analyzer_oom(a);
}

/* SET's value as text: the arguments joined with ", ", unquoted. */
static int set_value(struct analyzer *a, const PgQuery__VariableSetStmt *v, char **ret)
{
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return analyzer_oom(a);
        for (size_t i = 0; i < v->n_args; i++) {
                const PgQuery__AConst *c = v->args[i]->node_case == PG_QUERY__NODE__NODE_A_CONST
                                                   ? v->args[i]->a_const
                                                   : NULL;

                if (i)
                        fputs(", ", f);
                if (!c || c->isnull)
                        continue;
                switch (c->val_case) {
                case PG_QUERY__A__CONST__VAL_IVAL:
                        fprintf(f, "%d", c->ival->ival);
                        break;
                case PG_QUERY__A__CONST__VAL_FVAL:
                        fputs(c->fval->fval, f);
                        break;
                case PG_QUERY__A__CONST__VAL_SVAL:
                        fputs(c->sval->sval, f);
                        break;
                case PG_QUERY__A__CONST__VAL_BOOLVAL:
                        fputs(c->boolval->boolval ? "on" : "off", f);
                        break;
                default:
                        break;
                }
        }
        if (ferror(f) | fclose(f)) {
                free(buf);
                return analyzer_oom(a);
        }
        *ret = buf;
        return 0;
}

static int transaction_modes(struct analyzer *a, PgQuery__Node **opts, size_t n);

static int analyze_set(struct analyzer *a, const PgQuery__VariableSetStmt *v)
{
        struct sql_set_variable *sv = &a->stmt->set_variable;

        sv->local = v->is_local;
        switch (v->kind) {
        case PG_QUERY__VARIABLE_SET_KIND__VAR_SET_VALUE:
                sv->name = lowercase_dup(v->name);
                if (!sv->name)
                        return analyzer_oom(a);
                return set_value(a, v, &sv->value);
        case PG_QUERY__VARIABLE_SET_KIND__VAR_SET_MULTI:
                if (v->name && strcasecmp(v->name, "transaction") == 0) {
                        int r = transaction_modes(a, v->args, v->n_args);
                        if (r < 0)
                                return r;
                } else if (v->name && strcasecmp(v->name, "session characteristics") == 0) {
                        return FAIL(a, "0A000", "SET SESSION CHARACTERISTICS is not supported");
                }
                sv->name = lowercase_dup(v->name);
                break;
        case PG_QUERY__VARIABLE_SET_KIND__VAR_SET_DEFAULT:
                sv->name = lowercase_dup(v->name);
                break;
        case PG_QUERY__VARIABLE_SET_KIND__VAR_RESET:
                sv->reset = true;
                sv->name = lowercase_dup(v->name);
                break;
        case PG_QUERY__VARIABLE_SET_KIND__VAR_RESET_ALL:
                sv->reset = true;
                sv->name = lowercase_dup("all");
                break;
        default:
                return FAIL(a, "0A000", "SET ... FROM CURRENT is not supported");
        }
        return sv->name ? 0 : analyzer_oom(a);
}

/* An isolation level's name: 1 for one snapshot per block (REPEATABLE READ,
 * SERIALIZABLE), 0 for one per statement (READ COMMITTED, READ UNCOMMITTED), -1 none. */
int sql_isolation_snapshot(const char *level)
{
        if (!level)
                return -1;
        if (strcasecmp(level, "repeatable read") == 0 || strcasecmp(level, "serializable") == 0)
                return 1;
        if (strcasecmp(level, "read committed") == 0 || strcasecmp(level, "read uncommitted") == 0)
                return 0;
        return -1;
}

/* A transaction's modes (BEGIN, START TRANSACTION, SET TRANSACTION): READ ONLY / READ
 * WRITE into a->stmt->txn_read_only, the isolation level into a->stmt->txn_snapshot
 * (adapter-exec.c note 14); DEFERRABLE is taken (reads never wait for it). */
static int transaction_modes(struct analyzer *a, PgQuery__Node **opts, size_t n)
{
        a->stmt->txn_read_only = -1;
        a->stmt->txn_snapshot = -1;
        for (size_t i = 0; i < n; i++) {
                const PgQuery__DefElem *d = opts[i]->node_case == PG_QUERY__NODE__NODE_DEF_ELEM
                                                    ? opts[i]->def_elem : NULL;
                const PgQuery__Node *v = d ? d->arg : NULL;

                if (!d || !d->defname)
                        return FAIL(a, "XX000", "malformed transaction mode");
                if (strcmp(d->defname, "transaction_read_only") == 0) {
                        if (!v || v->node_case != PG_QUERY__NODE__NODE_A_CONST ||
                            v->a_const->val_case != PG_QUERY__A__CONST__VAL_IVAL)
                                return FAIL(a, "XX000", "malformed transaction mode");
                        a->stmt->txn_read_only = v->a_const->ival->ival != 0;
                } else if (strcmp(d->defname, "transaction_isolation") == 0) {
                        if (!v || v->node_case != PG_QUERY__NODE__NODE_A_CONST ||
                            v->a_const->val_case != PG_QUERY__A__CONST__VAL_SVAL ||
                            sql_isolation_snapshot(v->a_const->sval->sval) < 0)
                                return FAIL(a, "XX000", "malformed transaction mode");
                        a->stmt->txn_snapshot = sql_isolation_snapshot(v->a_const->sval->sval);
                } else if (strcmp(d->defname, "transaction_deferrable") != 0) {
                        return FAIL(a, "0A000", "transaction mode \"%s\" is not supported", d->defname);
                }
        }
        return 0;
}

static int analyze_transaction(struct analyzer *a, const PgQuery__TransactionStmt *t)
{
        int r = transaction_modes(a, t->options, t->n_options);

        if (r < 0)
                return r;
        if (t->chain)
                return FAIL(a, "0A000", "%s AND CHAIN is not supported",
                            t->kind == PG_QUERY__TRANSACTION_STMT_KIND__TRANS_STMT_COMMIT ? "COMMIT" : "ROLLBACK");
        switch (t->kind) {
        case PG_QUERY__TRANSACTION_STMT_KIND__TRANS_STMT_BEGIN:
        case PG_QUERY__TRANSACTION_STMT_KIND__TRANS_STMT_START:
                a->stmt->transaction = SQL_TXN_BEGIN;
                return 0;
        case PG_QUERY__TRANSACTION_STMT_KIND__TRANS_STMT_COMMIT:
                a->stmt->transaction = SQL_TXN_COMMIT;
                return 0;
        case PG_QUERY__TRANSACTION_STMT_KIND__TRANS_STMT_ROLLBACK:
                a->stmt->transaction = SQL_TXN_ROLLBACK;
                return 0;
        default:
                return FAIL(a, "0A000", "savepoints and two-phase commit are not supported");
        }
}

/* A name for an unsupported statement, for its error. */
static const char *statement_name(PgQuery__Node__NodeCase c)
{
        switch (c) {
        case PG_QUERY__NODE__NODE_VIEW_STMT:
                return "CREATE VIEW";
        case PG_QUERY__NODE__NODE_CREATE_TABLE_AS_STMT:
                return "CREATE MATERIALIZED VIEW and CREATE TABLE AS";
        case PG_QUERY__NODE__NODE_INDEX_STMT:
                return "CREATE INDEX";
        case PG_QUERY__NODE__NODE_COPY_STMT:
                return "COPY";
        case PG_QUERY__NODE__NODE_TRUNCATE_STMT:
                return "TRUNCATE";
        case PG_QUERY__NODE__NODE_EXPLAIN_STMT:
                return "EXPLAIN";
        default:
                return "this statement";
        }
}

/* ALTER ... SET (RETAIN HISTORY = FOR '<d>') / RESET (RETAIN HISTORY). */
static int analyze_alter_retain(struct analyzer *a, const struct lift *l)
{
        struct sql_alter_retain *ar = &a->stmt->alter_retain;
        struct sql_relation rel;
        int r;

        r = lookup_relation(a, l->name, &rel);
        if (r == -ENOENT)
                return FAIL_AT(a, (int)l->location, "42P01", "%s \"%s\" does not exist",
                               sql_object_kind_name(l->alter_kind), l->name);
        if (r < 0)
                return r;
        if (rel.kind != l->alter_kind)
                return FAIL_AT(a, (int)l->location, "42809", "\"%s\" is not a %s", l->name,
                               sql_object_kind_name(l->alter_kind));
        if (rel.id < 1000)
                return FAIL_AT(a, (int)l->location, "42809", "cannot alter built-in relation \"%s\"",
                               l->name);
        ar->kind = l->alter_kind;
        ar->id = rel.id;
        ar->name = strdup(l->name);
        if (!ar->name)
                return analyzer_oom(a);
        if (!l->duration)
                return 0;       /* RESET: the default window */
        r = parse_duration(l->duration, &ar->retain_history_ms);
        if (r < 0 || ar->retain_history_ms == 0)
                return FAIL_AT(a, (int)l->location, "22023", "invalid RETAIN HISTORY \"%s\"",
                               l->duration);
        return 0;
}

/* The table's CHECK constraints over every row of the INSERT (analyzed already): a row
 * for which one is FALSE fails the statement with 23514, as in PostgreSQL (NULL
 * passes).  Rows are constants, so this is the whole of the enforcement. */
static int insert_checks(struct analyzer *a)
{
        const struct sql_insert *si = &a->stmt->insert;
        struct row_arena arena = ROW_ARENA_INIT;
        struct row_expr_ctx ctx = { .arena = &arena };
        Coord__Plan__Expr **e = NULL;
        struct row_datum *row = NULL;
        struct sql_relation rel;
        int r = lookup_relation(a, si->table, &rel);

        if (r < 0 || !rel.n_checks)
                return r == -ENOENT ? 0 : r;
        e = calloc(rel.n_checks, sizeof(*e));
        row = calloc(rel.n_columns ? rel.n_columns : 1, sizeof(*row));
        if (!e || !row) {
                r = analyzer_oom(a);
                goto out;
        }
        for (size_t k = 0; k < rel.n_checks; k++)
                if (!(e[k] = coord__plan__expr__unpack(NULL, rel.checks[k].expr_len, rel.checks[k].expr))) {
                        r = FAIL(a, "XX000", "check constraint \"%s\" cannot be decoded", rel.checks[k].name);
                        goto out;
                }
        for (size_t i = 0; i < si->n_rows && r >= 0; i++) {
                if (row_decode(si->rows[i].data, si->rows[i].len, row, rel.n_columns) != (int)rel.n_columns) {
                        r = FAIL(a, "XX000", "malformed row");
                        break;
                }
                for (size_t k = 0; k < rel.n_checks && r >= 0; k++) {
                        struct row_datum v;
                        char failing[400];

                        r = row_expr_eval(e[k], row, rel.n_columns, &ctx, &v, a->err);
                        if (r < 0 || v.kind != ROW_KIND_BOOL || v.b)
                                continue;
                        row_format_failing(row, rel.n_columns, failing, sizeof(failing));
                        r = FAIL(a, "23514", "new row for relation \"%s\" violates check constraint \"%s\"",
                                 si->table, rel.checks[k].name);
                        row_error_detail(a->err, "Failing row contains (%s).", failing);
                }
                row_arena_reset(&arena);
        }
out:
        for (size_t k = 0; e && k < rel.n_checks; k++)
                if (e[k])
                        coord__plan__expr__free_unpacked(e[k], NULL);
        free(e);
        free(row);
        row_arena_done(&arena);
        return r;
}

static int analyze_stmt(struct analyzer *a, const struct batch_stmt *bs)
{
        const PgQuery__Node *n = bs->raw->stmt;
        struct sql_stmt *s = a->stmt;
        int r;

        if (bs->lift && bs->lift->kind == LIFT_DEFAULT_INDEX) {
                s->kind = SQL_STMT_CREATE_INDEX;
                return analyze_default_index(a, bs->lift);
        }
        if (bs->lift && bs->lift->kind == LIFT_CREATE_SINK) {
                s->kind = SQL_STMT_CREATE_SINK;
                return analyze_create_sink(a, bs->lift);
        }
        if (bs->lift && bs->lift->kind == LIFT_CREATE_SOURCE) {
                s->kind = SQL_STMT_CREATE_SOURCE;
                return analyze_create_source(a, bs->lift);
        }
        if (bs->lift && bs->lift->kind == LIFT_SUBSCRIBE) {
                s->kind = SQL_STMT_SUBSCRIBE;
                return analyze_subscribe(a, bs->lift, bs->lift->copy ? &bs->lift->sub_as_of : bs->as_of);
        }
        if (bs->lift && bs->lift->kind == LIFT_ALTER_SINK) {
                s->kind = SQL_STMT_ALTER_SINK;
                return analyze_alter_sink(a, bs->lift);
        }
        if (bs->lift && bs->lift->kind == LIFT_DROP_SINK) {
                s->kind = SQL_STMT_DROP;
                return analyze_drop_sink(a, bs->lift);
        }
        if (bs->lift && bs->lift->kind == LIFT_ALTER_RETAIN_HISTORY) {
                s->kind = SQL_STMT_ALTER_RETAIN_HISTORY;
                return analyze_alter_retain(a, bs->lift);
        }
        if (bs->as_of && n->node_case != PG_QUERY__NODE__NODE_SELECT_STMT &&
            n->node_case != PG_QUERY__NODE__NODE_CREATE_TABLE_AS_STMT)
                return FAIL_AT(a, (int)bs->as_of->begin, "0A000",
                               "AS OF is only supported in SELECT and CREATE MATERIALIZED VIEW");
        switch (n->node_case) {
        case PG_QUERY__NODE__NODE_VIEW_STMT:
                s->kind = SQL_STMT_CREATE_VIEW;
                return analyze_create_view(a, n->view_stmt);
        case PG_QUERY__NODE__NODE_CREATE_TABLE_AS_STMT:
                s->kind = SQL_STMT_CREATE_MATERIALIZED_VIEW;
                if (bs->as_of) {
                        /* A requested as-of (DESIGN section 4: "or the user's AS OF"):
                         * admission checks it against the inputs' committed bounds. */
                        int rc = analyze_as_of(a, bs->as_of, &s->create_view.as_of);
                        if (rc < 0)
                                return rc;
                        s->create_view.has_as_of = true;
                }
                return analyze_create_materialized_view(a, n->create_table_as_stmt, bs->lift);
        case PG_QUERY__NODE__NODE_INDEX_STMT:
                s->kind = SQL_STMT_CREATE_INDEX;
                return analyze_create_index(a, n->index_stmt);
        case PG_QUERY__NODE__NODE_CREATE_STMT:
                s->kind = SQL_STMT_CREATE_TABLE;
                return analyze_create_table(a, n->create_stmt);
        case PG_QUERY__NODE__NODE_DROP_STMT:
                s->kind = SQL_STMT_DROP;
                return analyze_drop(a, n->drop_stmt);
        case PG_QUERY__NODE__NODE_INSERT_STMT:
                s->kind = SQL_STMT_INSERT;
                r = analyze_insert(a, n->insert_stmt);
                return r < 0 ? r : insert_checks(a);
        case PG_QUERY__NODE__NODE_DELETE_STMT:
                s->kind = SQL_STMT_DELETE;
                return analyze_delete(a, n->delete_stmt);
        case PG_QUERY__NODE__NODE_UPDATE_STMT:
                s->kind = SQL_STMT_UPDATE;
                return analyze_update(a, n->update_stmt);
        case PG_QUERY__NODE__NODE_SELECT_STMT:
                s->kind = SQL_STMT_SELECT;
                return analyze_select(a, n, bs->as_of);
        case PG_QUERY__NODE__NODE_VARIABLE_SHOW_STMT:
                return analyze_show(a, n->variable_show_stmt, bs->lift);
        case PG_QUERY__NODE__NODE_VARIABLE_SET_STMT:
                s->kind = SQL_STMT_SET_VARIABLE;
                return analyze_set(a, n->variable_set_stmt);
        case PG_QUERY__NODE__NODE_TRANSACTION_STMT:
                s->kind = SQL_STMT_TRANSACTION;
                return analyze_transaction(a, n->transaction_stmt);
        default:
                return FAIL(a, "0A000", "%s is not supported", statement_name(n->node_case));
        }
}

/* An owned array of output columns with their names. */
static void columns_free(struct sql_column *cols, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(cols[i].name);
        free(cols);
}

struct sql_stmt *sql_stmt_free(struct sql_stmt *s)
{
        if (!s)
                return NULL;
        switch (s->kind) {
        case SQL_STMT_CREATE_TABLE:
                for (size_t i = 0; i < s->create_table.n_columns; i++) {
                        free(s->create_table.columns[i].name);
                        free(s->create_table.columns[i].default_row);
                }
                for (size_t i = 0; i < s->create_table.n_checks; i++) {
                        free(s->create_table.checks[i].name);
                        free(s->create_table.checks[i].expr);
                }
                free(s->create_table.checks);
                for (size_t i = 0; i < s->create_table.n_uniques; i++) {
                        free(s->create_table.uniques[i].name);
                        free(s->create_table.uniques[i].columns);
                }
                free(s->create_table.uniques);
                for (size_t i = 0; i < s->create_table.n_fkeys; i++) {
                        free(s->create_table.fkeys[i].name);
                        free(s->create_table.fkeys[i].columns);
                        free(s->create_table.fkeys[i].ref_columns);
                }
                free(s->create_table.fkeys);
                free(s->create_table.columns);
                free(s->create_table.name);
                break;
        case SQL_STMT_DROP:
                for (size_t i = 0; i < s->drop.n_objects; i++)
                        free(s->drop.names[i]);
                free(s->drop.names);
                free(s->drop.ids);
                break;
        case SQL_STMT_INSERT:
                rel_free(s->insert.plan);
                rel_free(s->insert.upsert);
                if (s->insert.select_returning)
                        coord__plan__peek__free_unpacked(s->insert.select_returning, NULL);
                if (s->insert.returning)
                        coord__plan__peek__free_unpacked(s->insert.returning, NULL);
                for (size_t i = 0; i < s->insert.n_rows; i++)
                        free(s->insert.rows[i].data);
                free(s->insert.rows);
                free(s->insert.table);
                free(s->insert.conflict_key);
                break;
        case SQL_STMT_DELETE:
        case SQL_STMT_UPDATE: {
                struct sql_delete *d = s->kind == SQL_STMT_DELETE ? &s->delete_ : &s->update;

                rel_free(d->plan);
                free(d->table);
                if (d->returning)
                        coord__plan__peek__free_unpacked(d->returning, NULL);
                break;
        }
        case SQL_STMT_SELECT:
                if (s->select.peek)
                        coord__plan__peek__free_unpacked(s->select.peek, NULL);
                break;
        case SQL_STMT_CREATE_VIEW:
        case SQL_STMT_CREATE_MATERIALIZED_VIEW:
                for (size_t i = 0; i < s->create_view.refresh.n_at; i++)
                        expr_free(s->create_view.refresh.at[i]);
                free(s->create_view.refresh.at);
                expr_free(s->create_view.refresh.aligned_to);
                free(s->create_view.name);
                columns_free(s->create_view.columns, s->create_view.n_columns);
                rel_free(s->create_view.plan);
                break;
        case SQL_STMT_CREATE_SOURCE:
                free(s->create_source.name);
                free(s->create_source.progress_name);
                free(s->create_source.path);
                columns_free(s->create_source.columns, s->create_source.n_columns);
                break;
        case SQL_STMT_CREATE_SINK:
                free(s->create_sink.name);
                free(s->create_sink.from_name);
                free(s->create_sink.path);
                columns_free(s->create_sink.columns, s->create_sink.n_columns);
                rel_free(s->create_sink.plan);
                break;
        case SQL_STMT_SUBSCRIBE:
                free(s->subscribe.name);
                break;
        case SQL_STMT_ALTER_SINK:
                free(s->alter_sink.name);
                free(s->alter_sink.from_name);
                rel_free(s->alter_sink.plan);
                break;
        case SQL_STMT_CREATE_INDEX:
                free(s->create_index.name);
                free(s->create_index.on_name);
                free(s->create_index.keys);
                columns_free(s->create_index.columns, s->create_index.n_columns);
                rel_free(s->create_index.plan);
                break;
        case SQL_STMT_ALTER_RETAIN_HISTORY:
                free(s->alter_retain.name);
                break;
        case SQL_STMT_SHOW_VARIABLE:
                free(s->show_variable.name);
                break;
        case SQL_STMT_SET_VARIABLE:
                free(s->set_variable.name);
                free(s->set_variable.value);
                break;
        default:
                break;
        }
        free(s->inputs);
        free(s->physical_inputs);
        free(s->references);
        free(s->notices);
        free(s->sql);
        free(s);
        return NULL;
}

static void sql_stmt_freep(struct sql_stmt **s)
{
        *s = sql_stmt_free(*s);
}

/* A live status relation (builtins.h) has no history: what reads it at a timestamp
 * other than now -- AS OF, or a maintained object, which reads every time -- would get
 * an answer with the wrong meaning, so those are refused. */
static int refuse_live_inputs(struct sql_stmt *s, struct row_error *err)
{
        const char *what;

        switch (s->kind) {
        case SQL_STMT_CREATE_MATERIALIZED_VIEW: what = "a materialized view"; break;
        case SQL_STMT_CREATE_INDEX:             what = "an index"; break;
        case SQL_STMT_CREATE_SINK:
        case SQL_STMT_ALTER_SINK:               what = "a sink"; break;
        case SQL_STMT_SELECT:
                if (!s->select.has_as_of)
                        return 0;
                what = "a read AS OF";
                break;
        default:
                return 0;
        }
        for (size_t k = 0; k < s->n_inputs + s->n_physical_inputs; k++) {
                uint64_t gid = k < s->n_inputs ? s->inputs[k] : s->physical_inputs[k - s->n_inputs];

                if (!coord_gid_is_live(gid))
                        continue;
                row_error_set(err, -EOPNOTSUPP, "0A000", "%s cannot read %s", what,
                              gid == COORD_GID_SOURCES ? "coord_sources" : "coord_refreshes");
                row_error_detail(err, "It is a live status relation: it shows the present state "
                                      "and keeps no history.");
                return -EOPNOTSUPP;
        }
        return 0;
}

int sql_analyze(const struct sql_batch *b, size_t i, const struct sql_catalog_ops *ops,
                void *userdata, const struct sql_params *params, struct sql_stmt **ret,
                struct row_error *err)
{
        _cleanup_(sql_stmt_freep) struct sql_stmt *s = NULL;
        struct analyzer a = {
                .b = b, .ops = ops, .userdata = userdata, .params = params, .err = err,
                .arena = ROW_ARENA_INIT,
        };
        const struct batch_stmt *bs;
        int r;

        assert(b && i < b->n_stmts);
        bs = &b->stmts[i];
        s = calloc(1, sizeof(*s));
        if (!s)
                return row_error_oom(err);
        /* The union members are all zero: sql_stmt_free() is safe at any point. */
        s->kind = _SQL_STMT_KIND_INVALID;
        s->sql = strndup(b->query + bs->begin, bs->end - bs->begin);
        if (!s->sql)
                return row_error_oom(err);
        a.stmt = s;
        r = analyze_stmt(&a, bs);
        row_arena_done(&a.arena);
        free(a.indexed);
        for (size_t k = 0; k < a.n_strings; k++)
                free(a.strings[k]);
        free(a.strings);
        if (r < 0) {
                assert(!err || strlen(err->sqlstate) == 5);
                return r;
        }
        assert(s->kind >= 0 && s->kind < _SQL_STMT_KIND_MAX);
        r = refuse_live_inputs(s, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

int sql_analyze_one(const char *query, const struct sql_catalog_ops *ops, void *userdata,
                    const struct sql_params *params, struct sql_stmt **ret,
                    struct row_error *err)
{
        _cleanup_(sql_batch_freep) struct sql_batch *b = NULL;
        int r = sql_parse(query, &b, err);

        if (r < 0)
                return r;
        if (b->n_stmts != 1)
                return row_error_set(err, -EINVAL, "42601",
                                     b->n_stmts ? "cannot insert multiple commands into a "
                                                  "prepared statement"
                                                : "empty query");
        return sql_analyze(b, 0, ops, userdata, params, ret, err);
}
