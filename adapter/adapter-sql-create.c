/* adapter-sql-create.c -- CREATE VIEW, MATERIALIZED VIEW (REFRESH options), INDEX,
 * SOURCE and SINK, ALTER SINK (adapter-sql-internal.h). */
#include "adapter-sql-internal.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "builtins.h"
#include "util.h"

/* A new object's name must be free: 42P07, or with IF NOT EXISTS a notice. */
static int new_name(struct analyzer *a, const char *name, bool if_not_exists, int location,
                    bool *exists)
{
        struct sql_relation existing;
        int r = lookup_relation(a, name, &existing);

        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (!if_not_exists)
                return FAIL_AT(a, location, "42P07", "relation \"%s\" already exists", name);
        *exists = true;
        return add_notice(a, "42P07", "relation \"%s\" already exists, skipping", name);
}

static int copy_columns(struct analyzer *a, const struct scope *sc, PgQuery__Node **aliases,
                        size_t n_aliases, struct sql_column **ret, size_t *ret_n)
{
        struct sql_column *cols;

        if (n_aliases > sc->n)
                return FAIL(a, "42601", "too many column names were specified");
        cols = calloc(sc->n ? sc->n : 1, sizeof(*cols));
        if (!cols)
                return analyzer_oom(a);
        *ret = cols;
        for (size_t i = 0; i < sc->n; i++) {
                const char *name = i < n_aliases ? node_string(aliases[i]) : sc->cols[i].name;

                if (!name)
                        return FAIL(a, "XX000", "malformed column name list");
                for (size_t k = 0; k < i; k++)
                        if (strcmp(cols[k].name, name) == 0)
                                return FAIL(a, "42701", "column \"%s\" specified more than once",
                                            name);
                cols[i].name = strdup(name);
                if (!cols[i].name)
                        return analyzer_oom(a);
                cols[i].type = (enum row_type)sc->cols[i].type;
                cols[i].nullable = sc->cols[i].nullable;
                (*ret_n)++;
        }
        return 0;
}

/* A relation's columns, named as there, without their DEFAULTs (an index's or a sink's
 * output columns); *ret_n counts those copied, so sql_stmt_free() frees them on failure. */
static int relation_columns(struct analyzer *a, const struct sql_relation *rel,
                            struct sql_column **ret, size_t *ret_n)
{
        *ret = calloc(rel->n_columns ? rel->n_columns : 1, sizeof(**ret));
        if (!*ret)
                return analyzer_oom(a);
        for (size_t i = 0; i < rel->n_columns; i++) {
                struct sql_column *c = &(*ret)[i];

                *c = rel->columns[i];
                c->default_row = NULL;
                c->default_len = 0;
                c->name = strdup(rel->columns[i].name);
                if (!c->name)
                        return analyzer_oom(a);
                (*ret_n)++;
        }
        return 0;
}

/* The body of CREATE VIEW and CREATE MATERIALIZED VIEW. */
static int analyze_view_query(struct analyzer *a, const PgQuery__Node *query, PgQuery__Node **aliases,
                              size_t n_aliases, struct sql_create_view *cv)
{
        _cleanup_(scope_done) struct scope cols = { 0 };
        int r;

        r = plan_query(a, query, NULL, &cv->plan, &cols);
        if (r >= 0)
                r = copy_columns(a, &cols, aliases, n_aliases, &cv->columns, &cv->n_columns);
        if (r >= 0)
                r = finish_plan(a, &cv->plan);
        cv->deterministic = !a->nondeterministic;
        return r;
}

int analyze_create_view(struct analyzer *a, const PgQuery__ViewStmt *v)
{
        struct sql_create_view *cv = &a->stmt->create_view;
        const char *name = NULL;
        int r;

        if (v->replace)
                return FAIL(a, "0A000", "CREATE OR REPLACE VIEW is not supported");
        if (v->n_options || v->with_check_option > PG_QUERY__VIEW_CHECK_OPTION__NO_CHECK_OPTION)
                return FAIL(a, "0A000", "view options are not supported");
        if (v->view->relpersistence && v->view->relpersistence[0] == 't')
                return FAIL_AT(a, v->view->location, "0A000", "temporary views are not supported");
        r = range_var_name(a, v->view, &name);
        if (r < 0)
                return r;
        cv->name = strdup(name);
        if (!cv->name)
                return analyzer_oom(a);
        a->in_view = true;
        r = analyze_view_query(a, v->query, v->aliases, v->n_aliases, cv);
        a->in_view = false;
        if (r < 0)
                return r;
        return new_name(a, name, false, v->view->location, &cv->exists);
}

/* '1s', '500ms', '2 min', '1h 30m', '1 day': milliseconds. */
int parse_duration(const char *s, uint64_t *ret)
{
        static const struct {
                const char *unit;
                uint64_t ms;
        } units[] = {
                { "ms", 1 }, { "msec", 1 }, { "msecs", 1 }, { "millisecond", 1 },
                { "milliseconds", 1 }, { "s", 1000 }, { "sec", 1000 }, { "secs", 1000 },
                { "second", 1000 }, { "seconds", 1000 }, { "m", 60000 }, { "min", 60000 },
                { "mins", 60000 }, { "minute", 60000 }, { "minutes", 60000 },
                { "h", 3600000 }, { "hr", 3600000 }, { "hrs", 3600000 }, { "hour", 3600000 },
                { "hours", 3600000 }, { "d", 86400000 }, { "day", 86400000 },
                { "days", 86400000 },
        };
        uint64_t total = 0;
        bool any = false;

        for (;;) {
                uint64_t n = 0, ms = 1000;     /* a bare number is seconds */
                size_t len;

                while (isspace((unsigned char)*s))
                        s++;
                if (!*s)
                        break;
                if (!isdigit((unsigned char)*s))
                        return -EINVAL;
                for (; isdigit((unsigned char)*s); s++) {
                        if (n > (UINT64_MAX - 9) / 10)
                                return -ERANGE;
                        n = n * 10 + (uint64_t)(*s - '0');
                }
                while (isspace((unsigned char)*s))
                        s++;
                for (len = 0; isalpha((unsigned char)s[len]); len++)
                        ;
                if (len) {
                        size_t i;

                        for (i = 0; i < ELEMENTSOF(units); i++)
                                if (strlen(units[i].unit) == len &&
                                    strncasecmp(s, units[i].unit, len) == 0)
                                        break;
                        if (i == ELEMENTSOF(units))
                                return -EINVAL;
                        ms = units[i].ms;
                        s += len;
                }
                if (n > (UINT64_MAX - total) / ms)
                        return -ERANGE;
                total += n * ms;
                any = true;
        }
        if (!any)
                return -EINVAL;
        *ret = total;
        return 0;
}

/* A REFRESH time (AT <expr>, ALIGNED TO <expr>): a bigint expression over constants and
 * mz_now(), kept unevaluated: mz_now() is the creation's timestamp, known only when the
 * adapter creates the view.  Parsed as an AS OF clause is (adapter-sql.c note 2). */
static int analyze_refresh_time(struct analyzer *a, const struct as_of_clause *c,
                                Coord__Plan__Expr **ret)
{
        const PgQuery__Node *val =
                c->tree->stmts[0]->stmt->select_stmt->target_list[0]->res_target->val;
        _cleanup_(typed_done) struct typed t = { .location = -1 };
        const struct scope *scope = a->scope;
        long base = a->loc_base;
        bool nondeterministic = a->nondeterministic;
        int r;

        a->loc_base = (long)c->expr_begin - (long)strlen(AS_OF_PREFIX);
        a->scope = NULL;
        a->strict_fold = true;
        r = analyze_expr(a, val, &t);
        if (r >= 0)
                r = coerce_unknown(a, &t, ROW_TYPE_INT8);
        if (r >= 0 && !type_is_int((int)t.e->type))
                r = FAIL_AT(a, t.location, "42804", "REFRESH time must be of type bigint, not type %s",
                            row_type_name((enum row_type)t.e->type));
        if (r >= 0)
                r = promote_to(a, &t, ROW_TYPE_INT8);
        if (r >= 0 && is_literal(t.e) &&
            (t.e->literal->value_case != COORD__PLAN__DATUM__VALUE_INT_VALUE || t.e->literal->int_value < 0))
                r = FAIL_AT(a, t.location, "22023", "REFRESH time must be a non-negative timestamp");
        if (r >= 0)
                *ret = TAKE_PTR(t.e);
        a->loc_base = base;
        a->scope = scope;
        a->strict_fold = false;
        a->nondeterministic = nondeterministic;         /* mz_now() here is a constant */
        return r;
}

/* The REFRESH options of a CREATE MATERIALIZED VIEW (lifted, adapter-sql.c note 1). */
static int analyze_refresh(struct analyzer *a, const struct lift *lift, struct sql_refresh *rf)
{
        bool on_commit = false, every = false;
        int r;

        for (size_t i = 0; i < lift->n_refresh; i++) {
                const struct lift_refresh *lr = &lift->refresh[i];
                Coord__Plan__Expr **times;

                switch (lr->kind) {
                case SQL_REFRESH_ON_COMMIT:
                        on_commit = true;
                        break;
                case SQL_REFRESH_AT_CREATION:
                        rf->at_creation = rf->on = true;
                        break;
                case SQL_REFRESH_AT:
                        times = realloc(rf->at, (rf->n_at + 1) * sizeof(*times));
                        if (!times)
                                return analyzer_oom(a);
                        rf->at = times;
                        r = analyze_refresh_time(a, &lr->expr, &rf->at[rf->n_at]);
                        if (r < 0)
                                return r;
                        rf->n_at++;
                        rf->on = true;
                        break;
                case SQL_REFRESH_EVERY:
                        if (every)
                                return FAIL_AT(a, (int)lr->location, "42601",
                                               "REFRESH EVERY may be given only once");
                        every = rf->on = true;
                        r = parse_duration(lr->interval, &rf->every_ms);
                        if (r == -ERANGE)
                                return FAIL_AT(a, (int)lr->interval_location, "22015",
                                               "interval out of range");
                        if (r < 0)
                                return FAIL_AT(a, (int)lr->interval_location, "22007",
                                               "invalid input syntax for type interval: \"%s\"",
                                               lr->interval);
                        if (rf->every_ms == 0)
                                return FAIL_AT(a, (int)lr->interval_location, "22023",
                                               "REFRESH EVERY interval must be positive");
                        if (lr->expr.tree) {
                                r = analyze_refresh_time(a, &lr->expr, &rf->aligned_to);
                                if (r < 0)
                                        return r;
                        }
                        break;
                }
        }
        if (on_commit && rf->on)
                return FAIL_AT(a, (int)lift->refresh[0].location, "42601",
                               "REFRESH ON COMMIT cannot be combined with other REFRESH options");
        return 0;
}

int analyze_create_materialized_view(struct analyzer *a, const PgQuery__CreateTableAsStmt *c,
                                            const struct lift *lift)
{
        struct sql_create_view *cv = &a->stmt->create_view;
        const PgQuery__IntoClause *into = c->into;
        const char *name = NULL;
        int r;

        if (c->objtype != PG_QUERY__OBJECT_TYPE__OBJECT_MATVIEW)
                return FAIL(a, "0A000", "CREATE TABLE AS is not supported");
        if (!into || !into->rel)
                return FAIL(a, "XX000", "malformed CREATE MATERIALIZED VIEW");
        if (into->skip_data)
                return FAIL(a, "0A000", "WITH NO DATA is not supported");
        if ((into->access_method && into->access_method[0]) ||
            (into->table_space_name && into->table_space_name[0]))
                return FAIL(a, "0A000", "USING and TABLESPACE are not supported");
        for (size_t i = 0; i < into->n_options; i++) {
                const PgQuery__DefElem *d = into->options[i]->node_case == PG_QUERY__NODE__NODE_DEF_ELEM
                                                    ? into->options[i]->def_elem
                                                    : NULL;

                return FAIL_AT(a, d ? d->location : -1, "0A000",
                               "materialized view option \"%s\" is not supported",
                               d && d->defname ? d->defname : "?");
        }
        r = range_var_name(a, into->rel, &name);
        if (r < 0)
                return r;
        cv->name = strdup(name);
        if (!cv->name)
                return analyzer_oom(a);
        cv->if_not_exists = c->if_not_exists;
        if (lift && lift->kind == LIFT_MV_OPTIONS && lift->n_refresh) {
                r = analyze_refresh(a, lift, &cv->refresh);
                if (r < 0)
                        return r;
        }
        if (lift && lift->kind == LIFT_MV_OPTIONS && lift->duration) {
                r = parse_duration(lift->duration, &cv->retain_history_ms);
                if (r == -ERANGE)
                        r = FAIL_AT(a, (int)lift->location, "22015", "interval out of range");
                else if (r < 0)
                        r = FAIL_AT(a, (int)lift->location, "22007",
                                    "invalid input syntax for type interval: \"%s\"", lift->duration);
                else if (cv->retain_history_ms == 0)
                        r = FAIL_AT(a, (int)lift->location, "22023",
                                    "RETAIN HISTORY must be positive");
                if (r < 0)
                        return r;
        }
        a->materialize = true;
        r = analyze_view_query(a, c->query, into->col_names, into->n_col_names, cv);
        if (r < 0)
                return r;
        assert(cv->deterministic);
        return new_name(a, name, cv->if_not_exists, into->rel->location, &cv->exists);
}

/* CREATE [DEFAULT] INDEX: `keys` NULL for a default index (all columns). */
/* Materialize's (and PostgreSQL's) default index names: <on>_primary_idx for a default
 * index, <on>_<key>..._idx otherwise.  Built directly: open_memstream() was a tenth of
 * analyzing a CREATE DEFAULT INDEX.  NULL when out of memory. */
static char *default_index_name(const char *on, bool is_default, const struct sql_relation *rel,
                                const uint32_t *keys, size_t n_keys)
{
        size_t len = strlen(on) + strlen("_idx") + (is_default ? strlen("_primary") : 0);
        char *name, *p;

        for (size_t i = 0; !is_default && i < n_keys; i++)
                len += 1 + strlen(rel->columns[keys[i]].name);
        name = malloc(len + 1);
        if (!name)
                return NULL;
        p = stpcpy(name, on);
        if (is_default)
                p = stpcpy(p, "_primary");
        for (size_t i = 0; !is_default && i < n_keys; i++) {
                *p++ = '_';
                p = stpcpy(p, rel->columns[keys[i]].name);
        }
        p = stpcpy(p, "_idx");
        assert((size_t)(p - name) == len);
        return name;
}

static int analyze_index(struct analyzer *a, const char *index_name, const char *on, int location,
                         PgQuery__Node **keys, size_t n_keys, bool is_default, bool if_not_exists)
{
        struct sql_create_index *ci = &a->stmt->create_index;
        struct sql_relation rel;
        int r;

        ci->is_default = is_default;
        ci->if_not_exists = if_not_exists;
        r = lookup_relation(a, on, &rel);
        if (r == -ENOENT)
                return FAIL_AT(a, location, "42P01", "relation \"%s\" does not exist", on);
        if (r < 0)
                return r;
        if (rel.kind == SQL_OBJECT_INDEX || rel.kind == SQL_OBJECT_SINK)
                return FAIL_AT(a, location, "42809", "cannot create index on %s \"%s\"",
                               sql_object_kind_name(rel.kind), on);
        if (rel.kind == SQL_OBJECT_VIEW && !rel.plan)
                return FAIL_AT(a, location, "XX000", "view \"%s\" has no plan", on);
        if (rel.kind == SQL_OBJECT_VIEW && !rel.deterministic)
                return nondeterministic_view(a, on, location);
        ci->on_name = strdup(on);
        ci->on_id = rel.id;
        ci->on_kind = rel.kind;
        ci->keys = calloc((keys ? n_keys : rel.n_columns) + 1, sizeof(*ci->keys));
        if (!ci->on_name || !ci->keys)
                return analyzer_oom(a);
        r = relation_columns(a, &rel, &ci->columns, &ci->n_columns);
        if (r < 0)
                return r;
        if (!keys)
                for (size_t i = 0; i < rel.n_columns; i++)
                        ci->keys[ci->n_keys++] = (uint32_t)i;
        for (size_t i = 0; keys && i < n_keys; i++) {
                const PgQuery__IndexElem *e = keys[i]->node_case == PG_QUERY__NODE__NODE_INDEX_ELEM
                                                      ? keys[i]->index_elem
                                                      : NULL;
                size_t k;

                if (!e)
                        return FAIL(a, "XX000", "malformed index key");
                if (e->expr || !e->name || !e->name[0])
                        return FAIL(a, "0A000", "index keys must be columns");
                if (e->n_opclass || e->n_collation)
                        return FAIL(a, "0A000", "operator classes and collations are not supported");
                for (k = 0; k < rel.n_columns; k++)
                        if (strcmp(rel.columns[k].name, e->name) == 0)
                                break;
                if (k == rel.n_columns)
                        return FAIL(a, "42703", "column \"%s\" does not exist", e->name);
                ci->keys[ci->n_keys++] = (uint32_t)k;
        }

        /* What the index arranges, and what that reads. */
        r = add_reference(a, rel.id);
        if (r < 0)
                return r;
        if (rel.kind == SQL_OBJECT_VIEW) {
                for (size_t i = 0; i < rel.n_inputs && r >= 0; i++)
                        r = add_input(a, rel.inputs[i]);
                ci->plan = rel_copy(rel.plan);
        } else {
                r = add_input(a, rel.id);
                ci->plan = rel_get(&rel);
        }
        if (r < 0)
                return r;
        if (!ci->plan)
                return analyzer_oom(a);
        r = finish_plan(a, &ci->plan);
        if (r < 0)
                return r;

        if (index_name && index_name[0]) {
                ci->name = strdup(index_name);
                if (!ci->name)
                        return analyzer_oom(a);
        } else {
                ci->name = default_index_name(on, is_default, &rel, ci->keys, ci->n_keys);
                if (!ci->name)
                        return analyzer_oom(a);
        }
        return new_name(a, ci->name, if_not_exists, -1, &ci->exists);
}

int analyze_create_index(struct analyzer *a, const PgQuery__IndexStmt *s)
{
        const char *on = NULL;
        int r;

        if (s->unique || s->primary || s->isconstraint)
                return FAIL(a, "0A000", "unique indexes are not supported");
        if (s->where_clause)
                return FAIL(a, "0A000", "partial indexes are not supported");
        if (s->n_index_including_params || s->n_options ||
            (s->table_space && s->table_space[0]))
                return FAIL(a, "0A000", "INCLUDE, WITH and TABLESPACE are not supported in "
                            "CREATE INDEX");
        if (s->access_method && s->access_method[0] && strcmp(s->access_method, "btree") != 0)
                return FAIL(a, "0A000", "index access method \"%s\" is not supported",
                            s->access_method);
        r = range_var_name(a, s->relation, &on);
        if (r < 0)
                return r;
        a->materialize = true;
        return analyze_index(a, s->idxname, on, s->relation->location, s->index_params,
                             s->n_index_params, false, s->if_not_exists);
}

/* CREATE SOURCE (lifted, adapter-sql.c note 1): its columns and its progress's name. */
int analyze_create_source(struct analyzer *a, const struct lift *l)
{
        struct sql_create_source *cs = &a->stmt->create_source;
        bool exists = false;
        size_t n;
        int r;

        cs->if_not_exists = l->if_not_exists;
        cs->type = (enum sql_source_type)l->source_type;
        cs->format = (enum sql_source_format)l->format;
        cs->up_to = l->up_to;
        cs->tick_ms = 1000;
        cs->name = strdup(l->name);
        if (!cs->name || asprintf(&cs->progress_name, "%s_progress", l->name) < 0) {
                cs->progress_name = NULL;
                return analyzer_oom(a);
        }
        if (l->duration) {
                r = parse_duration(l->duration, &cs->tick_ms);
                if (r == -ERANGE)
                        return FAIL(a, "22015", "interval out of range");
                if (r < 0)
                        return FAIL(a, "22007", "invalid input syntax for type interval: \"%s\"", l->duration);
                if (cs->tick_ms == 0)
                        return FAIL(a, "22023", "TICK INTERVAL must be positive");
        }
        if (cs->type == SQL_SOURCE_FILE) {
                if (!(cs->path = strdup(l->path)))
                        return analyzer_oom(a);
                if (!cs->path[0])
                        return FAIL(a, "22023", "the file of a source must be a plain, non-empty string");
                if (cs->format == SQL_FORMAT_CSV && (l->n_cols == 0 || l->n_cols > 1000))
                        return FAIL(a, "22023", "a CSV source has 1 to 1000 columns, not %llu",
                                    (unsigned long long)l->n_cols);
        }
        n = cs->type == SQL_SOURCE_FILE && cs->format == SQL_FORMAT_CSV ? (size_t)l->n_cols : 1;
        cs->columns = calloc(n, sizeof(*cs->columns));
        if (!cs->columns)
                return analyzer_oom(a);
        for (size_t i = 0; i < n; i++) {
                struct sql_column *c = &cs->columns[i];

                if (cs->type == SQL_SOURCE_COUNTER)
                        *c = (struct sql_column){ .name = strdup("counter"), .type = ROW_TYPE_INT8 };
                else if (cs->format == SQL_FORMAT_TEXT)
                        *c = (struct sql_column){ .name = strdup("text"), .type = ROW_TYPE_TEXT };
                else if (asprintf(&c->name, "column%zu", i + 1) < 0)
                        c->name = NULL;
                else
                        *c = (struct sql_column){ .name = c->name, .type = ROW_TYPE_TEXT, .nullable = true };
                if (!c->name)
                        return analyzer_oom(a);
                cs->n_columns++;
        }
        r = new_name(a, cs->name, cs->if_not_exists, (int)l->location, &cs->exists);
        if (r >= 0 && !cs->exists)
                r = new_name(a, cs->progress_name, false, (int)l->location, &exists);
        return r;
}

/* What a sink writes (CREATE SINK, ALTER SINK ... SET FROM): the relation `name` at
 * `location`, planned as an index's arrangement is (a collection's Get, or a view's
 * plan), deterministic, with its references and inputs added; *rel describes it. */
static int sink_relation(struct analyzer *a, const char *name, int location, struct sql_relation *rel,
                         Coord__Plan__Relation **plan)
{
        int r;

        a->materialize = true;
        r = lookup_relation(a, name, rel);
        if (r == -ENOENT)
                return FAIL_AT(a, location, "42P01", "relation \"%s\" does not exist", name);
        if (r < 0)
                return r;
        if (rel->kind == SQL_OBJECT_INDEX || rel->kind == SQL_OBJECT_SINK)
                return FAIL_AT(a, location, "42809", "a sink cannot write %s \"%s\"",
                               sql_object_kind_name(rel->kind), name);
        if (rel->kind == SQL_OBJECT_VIEW && !rel->deterministic)
                return nondeterministic_view(a, name, location);
        if (coord_gid_is_live(rel->id))
                return FAIL_AT(a, location, "0A000", "a sink cannot read %s", name);
        r = add_reference(a, rel->id);
        if (rel->kind == SQL_OBJECT_VIEW) {
                for (size_t i = 0; i < rel->n_inputs && r >= 0; i++)
                        r = add_input(a, rel->inputs[i]);
                *plan = rel_copy(rel->plan);
        } else {
                if (r >= 0)
                        r = add_input(a, rel->id);
                *plan = rel_get(rel);
        }
        if (r < 0)
                return r;
        if (!*plan)
                return analyzer_oom(a);
        return finish_plan(a, plan);
}

/* CREATE SINK (lifted, adapter-sql.c note 1). */
int analyze_create_sink(struct analyzer *a, const struct lift *l)
{
        struct sql_create_sink *cs = &a->stmt->create_sink;
        struct sql_relation rel;
        int r;

        cs->if_not_exists = l->if_not_exists;
        cs->snapshot = l->snapshot != 0;
        cs->name = strdup(l->name);
        cs->from_name = strdup(l->on);
        cs->path = strdup(l->path);
        if (!cs->name || !cs->from_name || !cs->path)
                return analyzer_oom(a);
        if (!cs->path[0])
                return FAIL(a, "22023", "the file of a sink must be a plain, non-empty string");
        r = sink_relation(a, l->on, (int)l->location, &rel, &cs->plan);
        if (r < 0)
                return r;
        cs->from_id = rel.id;
        r = relation_columns(a, &rel, &cs->columns, &cs->n_columns);
        if (r < 0)
                return r;
        return new_name(a, l->name, cs->if_not_exists, -1, &cs->exists);
}

/* ALTER SINK name SET FROM relation (lifted): a relation with the sink's column types. */
int analyze_alter_sink(struct analyzer *a, const struct lift *l)
{
        struct sql_alter_sink *as = &a->stmt->alter_sink;
        struct sql_relation sink, rel;
        int r;

        as->name = strdup(l->name);
        as->from_name = strdup(l->on);
        if (!as->name || !as->from_name)
                return analyzer_oom(a);
        r = lookup_relation(a, l->name, &sink);
        if (r == -ENOENT)
                return FAIL(a, "42P01", "sink \"%s\" does not exist", l->name);
        if (r < 0)
                return r;
        if (sink.kind != SQL_OBJECT_SINK)
                return FAIL(a, "42809", "\"%s\" is not a sink", l->name);
        as->id = sink.id;
        r = sink_relation(a, l->on, (int)l->location, &rel, &as->plan);
        if (r < 0)
                return r;
        as->from_id = rel.id;
        /* The file's lines go on with the same columns. */
        for (size_t i = 0; i < rel.n_columns || i < sink.n_columns; i++)
                if (i >= rel.n_columns || i >= sink.n_columns || rel.columns[i].type != sink.columns[i].type) {
                        r = FAIL_AT(a, (int)l->location, "42804", "cannot change sink \"%s\" to \"%s\": "
                                    "their columns differ", l->name, l->on);
                        row_error_detail(a->err, "Sink \"%s\" writes %zu columns; \"%s\" has %zu%s.",
                                         l->name, sink.n_columns, l->on, rel.n_columns,
                                         rel.n_columns == sink.n_columns ? ", of other types" : "");
                        return r;
                }
        return 0;
}

int analyze_default_index(struct analyzer *a, const struct lift *l)
{
        if (l->on_schema && strcmp(l->on_schema, "public") != 0)
                return FAIL_AT(a, (int)l->location, "3F000", "schema \"%s\" does not exist",
                               l->on_schema);
        a->materialize = true;
        return analyze_index(a, l->name, l->on, (int)l->location, NULL, 0, true, l->if_not_exists);
}
