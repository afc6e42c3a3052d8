/* adapter-sql-stmt.c -- statements: CREATE TABLE (columns, constraints, defaults), DROP,
 * INSERT's rows, a WHERE, and the names of output columns (adapter-sql-internal.h). */
#include "adapter-sql-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- Statements. ---- */

/* DEFAULT expr of a new column: a constant of the column's type (assignment casts),
 * evaluated now.  One that would depend on when or by whom a row is inserted (mz_now(),
 * current_user, ...) would be evaluated at CREATE TABLE instead: refused (0A000). */
static int column_default_of(struct analyzer *a, const PgQuery__Node *expr, struct sql_column *col)
{
        _cleanup_(typed_done) struct typed t = { .location = -1 };
        const char *no_mz_now = a->no_mz_now;
        bool materialize = a->materialize;
        struct row_datum d;
        int r;

        if (!expr)
                return FAIL(a, "XX000", "malformed DEFAULT");
        a->no_mz_now = "column defaults";
        a->materialize = true;
        r = analyze_expr(a, expr, &t);
        a->no_mz_now = no_mz_now;
        a->materialize = materialize;
        if (r >= 0) {
                bool strict = a->strict_fold;

                a->strict_fold = true;  /* a default too long for varchar(n): 22001 now */
                r = assign_column(a, &t, col);
                a->strict_fold = strict;
        }
        if (r < 0)
                return r;
        if (!is_literal(t.e))
                return FAIL_AT(a, t.location, "0A000", "column defaults must be constant expressions");
        r = row_expr_literal(t.e->literal, col->type, &d, a->err);
        if (r < 0)
                return r;
        r = row_encode(&d, 1, &col->default_row, &col->default_len);
        return r < 0 ? (r == -ENOMEM ? analyzer_oom(a) : FAIL(a, "54000", "default value is too big")) : 0;
}

/* Whether name is taken by a constraint of new table ct. */
static bool constraint_name_taken(const struct sql_create_table *ct, const char *name)
{
        for (size_t i = 0; i < ct->n_checks; i++)
                if (strcmp(ct->checks[i].name, name) == 0)
                        return true;
        for (size_t i = 0; i < ct->n_uniques; i++)
                if (ct->uniques[i].name && strcmp(ct->uniques[i].name, name) == 0)
                        return true;    /* (the one being named has none yet) */
        for (size_t i = 0; i < ct->n_fkeys; i++)
                if (ct->fkeys[i].name && strcmp(ct->fkeys[i].name, name) == 0)
                        return true;
        return false;
}

/* A CHECK constraint of new table ct (its columns all known): a boolean expression over
 * them, constant in everything else (no mz_now(), no session functions), packed into
 * the next of ct->checks, named `name` or PostgreSQL's default <table>[_<column>]_check
 * (with a number when taken), where <column> is the one column the expression reads --
 * none when it reads several or none, wherever the constraint was written. */
static int table_check(struct analyzer *a, const PgQuery__Constraint *con)
{
        struct sql_create_table *ct = &a->stmt->create_table;
        _cleanup_(scope_done) struct scope sc = { 0 };
        _cleanup_(typed_done) struct typed t = { .location = -1 };
        const struct scope *saved = a->scope;
        const char *no_agg = a->no_agg, *no_mz_now = a->no_mz_now;
        bool materialize = a->materialize;
        struct sql_check *chk, *v;
        char base[256], name[300];
        int r = 0;

        if (!con->raw_expr)
                return FAIL(a, "XX000", "malformed CHECK constraint");
        for (size_t i = 0; i < ct->n_columns && r >= 0; i++)
                r = scope_add_col(a, &sc, NULL, ct->columns[i].name, ct->columns[i].type,
                                  ct->columns[i].nullable, true);
        if (r < 0)
                return r;
        a->scope = &sc;
        a->no_agg = "check constraints";
        a->no_mz_now = "check constraints";
        a->materialize = true;
        r = analyze_expr(a, con->raw_expr, &t);
        if (r >= 0)
                r = require_bool(a, &t, "CHECK");
        a->scope = saved;
        a->no_agg = no_agg;
        a->no_mz_now = no_mz_now;
        a->materialize = materialize;
        if (r < 0)
                return r;
        if (con->conname && con->conname[0]) {
                snprintf(name, sizeof(name), "%s", con->conname);
                if (constraint_name_taken(ct, name))
                        return FAIL(a, "42710", "constraint \"%s\" for relation \"%s\" already exists",
                                    name, ct->name);
        } else {
                uint32_t lo = UINT32_MAX, hi = 0;
                const char *column = expr_columns(t.e, &lo, &hi) && lo == hi && lo < ct->n_columns
                                             ? ct->columns[lo].name
                                             : NULL;

                snprintf(base, sizeof(base), "%s%s%s_check", ct->name, column ? "_" : "", column ? column : "");
                snprintf(name, sizeof(name), "%s", base);
                for (unsigned k = 1; constraint_name_taken(ct, name); k++)
                        snprintf(name, sizeof(name), "%s%u", base, k);
        }
        v = realloc(ct->checks, (ct->n_checks + 1) * sizeof(*v));
        if (!v)
                return analyzer_oom(a);
        ct->checks = v;
        chk = &v[ct->n_checks];
        *chk = (struct sql_check){ .name = strdup(name) };
        chk->expr_len = coord__plan__expr__get_packed_size(t.e);
        chk->expr = malloc(chk->expr_len ? chk->expr_len : 1);
        if (!chk->name || !chk->expr) {
                free(chk->name);
                free(chk->expr);
                return analyzer_oom(a);
        }
        coord__plan__expr__pack(t.e, chk->expr);
        ct->n_checks++;
        return 0;
}

/* A PRIMARY KEY or UNIQUE constraint of new table ct (its columns all known), of the
 * column `column` or of the table (con->keys): the next of ct->uniques, named as
 * PostgreSQL names it (<table>_pkey, <table>_<columns>_key, a number added when taken).
 * A primary key's columns become NOT NULL.  Enforced by the controller on every write
 * (controller-server-unique.c), so nothing is accepted that PostgreSQL would refuse. */
static int table_unique(struct analyzer *a, const PgQuery__Constraint *con, const char *column)
{
        struct sql_create_table *ct = &a->stmt->create_table;
        bool primary = con->contype == PG_QUERY__CONSTR_TYPE__CONSTR_PRIMARY;
        const char *what = primary ? "primary key" : "unique";
        size_t n = column ? 1 : con->n_keys;
        struct sql_unique *v, *u;
        char base[256], name[272];
        size_t off;

        if (con->deferrable || con->initdeferred)
                return FAIL_AT(a, con->location, "0A000", "DEFERRABLE %s constraints are not "
                               "supported", what);
        if (con->n_including || con->n_options || con->nulls_not_distinct ||
            (con->indexname && con->indexname[0]) || (con->indexspace && con->indexspace[0]))
                return FAIL_AT(a, con->location, "0A000", "INCLUDE, WITH, USING INDEX and NULLS "
                               "NOT DISTINCT of a %s constraint are not supported", what);
        if (n == 0 || n > ROW_MAX_COLUMNS)
                return FAIL_AT(a, con->location, "XX000", "malformed %s constraint", what);
        for (size_t i = 0; primary && i < ct->n_uniques; i++)
                if (ct->uniques[i].primary)
                        return FAIL_AT(a, con->location, "42P16", "multiple primary keys for table "
                                       "\"%s\" are not allowed", ct->name);
        v = realloc(ct->uniques, (ct->n_uniques + 1) * sizeof(*v));
        if (!v)
                return analyzer_oom(a);
        ct->uniques = v;
        u = &v[ct->n_uniques++];
        *u = (struct sql_unique){ .primary = primary, .columns = calloc(n, sizeof(uint32_t)) };
        if (!u->columns)
                return analyzer_oom(a);
        off = (size_t)snprintf(base, sizeof(base), "%s", ct->name);
        for (size_t i = 0; i < n; i++) {
                const char *cn = column;
                size_t k;

                if (!cn) {
                        if (con->keys[i]->node_case != PG_QUERY__NODE__NODE_STRING)
                                return FAIL_AT(a, con->location, "XX000", "malformed %s constraint",
                                               what);
                        cn = con->keys[i]->string->sval;
                }
                for (k = 0; k < ct->n_columns && strcmp(ct->columns[k].name, cn) != 0; k++)
                        ;
                if (k == ct->n_columns)
                        return FAIL_AT(a, con->location, "42703", "column \"%s\" named in key does "
                                       "not exist", cn);
                for (size_t j = 0; j < u->n_columns; j++)
                        if (u->columns[j] == k)
                                return FAIL_AT(a, con->location, "42701", "column \"%s\" appears "
                                               "twice in %s constraint", cn, what);
                u->columns[u->n_columns++] = (uint32_t)k;
                if (primary)
                        ct->columns[k].nullable = false;
                if (!primary && off < sizeof(base))
                        off += (size_t)snprintf(base + off, sizeof(base) - off, "_%s", cn);
        }
        /* As PostgreSQL: a key on the same columns as an earlier one is that one (a
         * primary key if either is; the name given, else the primary key's default). */
        for (size_t i = 0; i + 1 < ct->n_uniques; i++) {
                struct sql_unique *p = &ct->uniques[i];
                bool named = con->conname && con->conname[0] && !p->named;
                char *nn = NULL;

                if (p->n_columns != u->n_columns ||
                    memcmp(p->columns, u->columns, u->n_columns * sizeof(uint32_t)) != 0)
                        continue;
                if (named) {
                        if (constraint_name_taken(ct, con->conname))
                                return FAIL(a, "42710", "constraint \"%s\" for relation \"%s\" "
                                            "already exists", con->conname, ct->name);
                        if (!(nn = strdup(con->conname)))
                                return analyzer_oom(a);
                } else if (primary && !p->primary && !p->named &&
                           asprintf(&nn, "%s_pkey", ct->name) < 0) {
                        return analyzer_oom(a);
                }
                if (nn) {
                        free(p->name);
                        p->name = nn;
                        p->named = named;
                }
                p->primary |= primary;
                free(u->columns);
                ct->n_uniques--;
                return 0;
        }
        if (con->conname && con->conname[0]) {
                if (constraint_name_taken(ct, con->conname))
                        return FAIL(a, "42710", "constraint \"%s\" for relation \"%s\" already exists",
                                    con->conname, ct->name);
                snprintf(name, sizeof(name), "%s", con->conname);
                u->named = true;
        } else {
                /* PostgreSQL shortens the parts to fit 63 bytes; a longer name is kept
                 * whole here. */
                if (off < sizeof(base))
                        snprintf(base + off, sizeof(base) - off, "%s", primary ? "_pkey" : "_key");
                snprintf(name, sizeof(name), "%s", base);
                for (unsigned k = 1; constraint_name_taken(ct, name); k++)
                        snprintf(name, sizeof(name), "%s%u", base, k);
        }
        u->name = strdup(name);
        return u->name ? 0 : analyzer_oom(a);
}

/* The position of column `name` (NULL: not a name) of a foreign key in cols[0..n),
 * into *ret; 42703 when there is none. */
static int fkey_column(struct analyzer *a, const PgQuery__Constraint *con,
                       const struct sql_column *cols, size_t n, const char *name, uint32_t *ret)
{
        if (!name)
                return FAIL_AT(a, con->location, "XX000", "malformed foreign key constraint");
        for (size_t i = 0; i < n; i++)
                if (strcmp(cols[i].name, name) == 0) {
                        *ret = (uint32_t)i;
                        return 0;
                }
        return FAIL_AT(a, con->location, "42703", "column \"%s\" referenced in foreign key "
                       "constraint does not exist", name);
}

/* Whether PRIMARY KEY or UNIQUE u of the referenced table has exactly the columns
 * cols[0..n) (in any order, as PostgreSQL matches them). */
static bool unique_matches(const struct sql_unique *u, const uint32_t *cols, size_t n)
{
        if (u->n_columns != n)
                return false;
        for (size_t i = 0; i < n; i++) {
                bool found = false;

                for (size_t k = 0; k < n && !found; k++)
                        found = u->columns[k] == cols[i];
                if (!found)
                        return false;
        }
        return true;
}

/* The referencing columns of a FOREIGN KEY (the column's own, or con->fk_attrs) into
 * fk->columns, and the default name's part "_a_b" into base + off. */
static int fkey_columns(struct analyzer *a, const PgQuery__Constraint *con, const char *column,
                        struct sql_foreign_key *fk, char *base, size_t off, size_t size)
{
        const struct sql_create_table *ct = &a->stmt->create_table;
        size_t n = column ? 1 : con->n_fk_attrs;

        if (n == 0 || n > ROW_MAX_COLUMNS)
                return FAIL_AT(a, con->location, "XX000", "malformed foreign key constraint");
        fk->columns = calloc(n, sizeof(uint32_t));
        if (!fk->columns)
                return analyzer_oom(a);
        for (size_t i = 0; i < n; i++) {
                const char *cn = column ? column : node_string(con->fk_attrs[i]);
                int r = fkey_column(a, con, ct->columns, ct->n_columns, cn, &fk->columns[i]);

                if (r < 0)
                        return r;
                fk->n_columns++;        /* a column twice is allowed, as in PostgreSQL */
                if (off < size)
                        off += (size_t)snprintf(base + off, size - off, "_%s", cn);
        }
        return 0;
}

/* The referenced columns: con->pk_attrs, which must be a PRIMARY KEY or UNIQUE of p as
 * a set, or p's primary key.  *ret_n: how many. */
static int fkey_ref_columns(struct analyzer *a, const PgQuery__Constraint *con,
                            const char *pname, const struct sql_relation *p,
                            struct sql_foreign_key *fk, size_t *ret_n)
{
        size_t n = con->n_pk_attrs;

        if (n == 0) {
                for (size_t i = 0; i < p->n_uniques && !fk->ref_columns; i++)
                        if (p->uniques[i].primary) {
                                n = p->uniques[i].n_columns;
                                fk->ref_columns = calloc(n, sizeof(uint32_t));
                                if (!fk->ref_columns)
                                        return analyzer_oom(a);
                                memcpy(fk->ref_columns, p->uniques[i].columns, n * sizeof(uint32_t));
                        }
                if (!fk->ref_columns)
                        return FAIL_AT(a, con->location, "42704", "there is no primary key for "
                                       "referenced table \"%s\"", pname);
                *ret_n = n;
                return 0;
        }
        if (n > ROW_MAX_COLUMNS)
                return FAIL_AT(a, con->location, "XX000", "malformed foreign key constraint");
        fk->ref_columns = calloc(n, sizeof(uint32_t));
        if (!fk->ref_columns)
                return analyzer_oom(a);
        for (size_t i = 0; i < n; i++) {
                int r = fkey_column(a, con, p->columns, p->n_columns, node_string(con->pk_attrs[i]),
                                    &fk->ref_columns[i]);

                if (r < 0)
                        return r;
                for (size_t j = 0; j < i; j++)
                        if (fk->ref_columns[j] == fk->ref_columns[i])
                                return FAIL_AT(a, con->location, "42830", "foreign key "
                                               "referenced-columns list must not contain duplicates");
        }
        for (size_t i = 0; i < p->n_uniques; i++)
                if (unique_matches(&p->uniques[i], fk->ref_columns, n)) {
                        *ret_n = n;
                        return 0;
                }
        return FAIL_AT(a, con->location, "42830", "there is no unique constraint matching given "
                       "keys for referenced table \"%s\"", pname);
}

/* A FOREIGN KEY constraint of new table ct (its columns and keys all known), of the
 * column `column` or of the table (con->fk_attrs): the next of ct->fkeys, named as
 * PostgreSQL names it (<table>_<columns>_fkey, a number added when taken).  Only what
 * the controller enforces exactly (controller-server-unique.c note 25) is accepted:
 * MATCH SIMPLE, NO ACTION or RESTRICT, not deferrable, validated; the referenced table
 * another table (not this one); paired columns of equal types, so that equal values
 * have equal bytes.  The referenced table becomes one of the new table's refs
 * (adapter-exec-run.c), so it cannot be dropped while this one references it. */
static int table_foreign_key(struct analyzer *a, const PgQuery__Constraint *con, const char *column)
{
        struct sql_create_table *ct = &a->stmt->create_table;
        const char *pname = NULL;
        const char *upd = con->fk_upd_action, *del = con->fk_del_action, *match = con->fk_matchtype;
        struct sql_relation p;
        struct sql_foreign_key *v, *fk;
        char base[256], name[272];
        size_t off, n_ref = 0;
        int r;

        if (con->deferrable || con->initdeferred)
                return FAIL_AT(a, con->location, "0A000", "DEFERRABLE foreign key constraints are "
                               "not supported");
        if (match && (match[0] == 'f' || match[0] == 'p'))
                return FAIL_AT(a, con->location, "0A000", "MATCH FULL and MATCH PARTIAL foreign "
                               "keys are not supported: Coord enforces MATCH SIMPLE only");
        if ((upd && upd[0] && upd[0] != 'a' && upd[0] != 'r') ||
            (del && del[0] && del[0] != 'a' && del[0] != 'r') || con->n_fk_del_set_cols)
                return FAIL_AT(a, con->location, "0A000", "foreign key actions ON DELETE and ON "
                               "UPDATE other than NO ACTION and RESTRICT (CASCADE, SET NULL, SET "
                               "DEFAULT) are not supported");
        if (con->skip_validation)
                return FAIL_AT(a, con->location, "0A000", "NOT VALID foreign key constraints are "
                               "not supported");
        if (!con->pktable)
                return FAIL_AT(a, con->location, "XX000", "malformed foreign key constraint");
        r = range_var_name(a, con->pktable, &pname);
        if (r < 0)
                return r;
        if (strcmp(pname, ct->name) == 0)
                return FAIL_AT(a, con->pktable->location, "0A000", "a foreign key that references "
                               "its own table is not supported");
        r = lookup_relation(a, pname, &p);
        if (r == -ENOENT)
                return FAIL_AT(a, con->pktable->location, "42P01", "relation \"%s\" does not exist",
                               pname);
        if (r < 0)
                return r;
        if (p.kind != SQL_OBJECT_TABLE || p.builtin)
                return FAIL_AT(a, con->pktable->location, "42809", "referenced relation \"%s\" is "
                               "not a table", pname);

        v = realloc(ct->fkeys, (ct->n_fkeys + 1) * sizeof(*v));
        if (!v)
                return analyzer_oom(a);
        ct->fkeys = v;
        fk = &v[ct->n_fkeys++];
        *fk = (struct sql_foreign_key){ .ref_id = p.id };
        off = (size_t)snprintf(base, sizeof(base), "%s", ct->name);
        r = fkey_columns(a, con, column, fk, base, off, sizeof(base));
        if (r < 0)
                return r;
        r = fkey_ref_columns(a, con, pname, &p, fk, &n_ref);
        if (r < 0)
                return r;
        if (n_ref != fk->n_columns)
                return FAIL_AT(a, con->location, "42830", "number of referencing and referenced "
                               "columns for foreign key disagree");
        if (con->conname && con->conname[0]) {
                if (constraint_name_taken(ct, con->conname))
                        return FAIL(a, "42710", "constraint \"%s\" for relation \"%s\" already exists",
                                    con->conname, ct->name);
                snprintf(name, sizeof(name), "%s", con->conname);
        } else {
                off = strlen(base);
                if (off < sizeof(base))
                        snprintf(base + off, sizeof(base) - off, "_fkey");
                snprintf(name, sizeof(name), "%s", base);
                for (unsigned k = 1; constraint_name_taken(ct, name); k++)
                        snprintf(name, sizeof(name), "%s%u", base, k);
        }
        fk->name = strdup(name);
        if (!fk->name)
                return analyzer_oom(a);
        for (size_t i = 0; i < fk->n_columns; i++) {
                const struct sql_column *c = &ct->columns[fk->columns[i]];
                const struct sql_column *pc = &p.columns[fk->ref_columns[i]];
                bool numbers = (c->type == ROW_TYPE_INT4 || c->type == ROW_TYPE_INT8 ||
                                c->type == ROW_TYPE_NUMERIC) &&
                               (pc->type == ROW_TYPE_INT4 || pc->type == ROW_TYPE_INT8 ||
                                pc->type == ROW_TYPE_NUMERIC);

                if (c->type == pc->type && c->max_chars == pc->max_chars)
                        continue;
                if (c->type == pc->type && c->type == ROW_TYPE_TEXT)
                        continue;       /* varchar(n) and text: the same bytes */
                if (c->type == pc->type || numbers)
                        return FAIL_AT(a, con->location, "0A000", "foreign key \"%s\": column \"%s\" "
                                       "(%s) and referenced column \"%s\" (%s) must have the same "
                                       "type and modifier (Coord compares key values by their "
                                       "bytes)", name, c->name, row_type_name(c->type), pc->name,
                                       row_type_name(pc->type));
                r = FAIL_AT(a, con->location, "42804", "foreign key constraint \"%s\" cannot be "
                            "implemented", name);
                row_error_detail(a->err, "Key columns \"%s\" and \"%s\" are of incompatible types: "
                                 "%s and %s.", c->name, pc->name, row_type_name(c->type),
                                 row_type_name(pc->type));
                return r;
        }
        return 0;
}

static bool table_constraint_supported(PgQuery__ConstrType t)
{
        return t == PG_QUERY__CONSTR_TYPE__CONSTR_CHECK || t == PG_QUERY__CONSTR_TYPE__CONSTR_PRIMARY ||
               t == PG_QUERY__CONSTR_TYPE__CONSTR_UNIQUE || t == PG_QUERY__CONSTR_TYPE__CONSTR_FOREIGN;
}

/* Pass 0: keys; pass 1: CHECK constraints; pass 2: foreign keys (named last, as
 * PostgreSQL names them).  Others were refused before. */
static int table_constraint(struct analyzer *a, const PgQuery__Constraint *con, const char *column,
                            int pass)
{
        if (con->contype == PG_QUERY__CONSTR_TYPE__CONSTR_CHECK)
                return pass == 1 ? table_check(a, con) : 0;
        if (con->contype == PG_QUERY__CONSTR_TYPE__CONSTR_PRIMARY ||
            con->contype == PG_QUERY__CONSTR_TYPE__CONSTR_UNIQUE)
                return pass == 0 ? table_unique(a, con, column) : 0;
        if (con->contype == PG_QUERY__CONSTR_TYPE__CONSTR_FOREIGN)
                return pass == 2 ? table_foreign_key(a, con, column) : 0;
        return 0;
}

/* The controller compares key values by their bytes (controller-server-unique.c), and
 * numerics of different scales are equal with different bytes (row.h "Numeric"): a
 * numeric key column must have a scale, numeric(p, s), so every value is stored at s. */
static int numeric_keys_fixed(struct analyzer *a, const struct sql_create_table *ct)
{
        for (size_t i = 0; i < ct->n_uniques; i++)
                for (size_t k = 0; k < ct->uniques[i].n_columns; k++) {
                        const struct sql_column *col = &ct->columns[ct->uniques[i].columns[k]];

                        if (col->type == ROW_TYPE_NUMERIC && !col->max_chars)
                                return FAIL(a, "0A000", "a %s constraint on numeric column \"%s\" "
                                            "without a precision and scale is not supported; "
                                            "declare it numeric(p, s)",
                                            ct->uniques[i].primary ? "PRIMARY KEY" : "UNIQUE",
                                            col->name);
                }
        return 0;
}

/* Column cd's own constraints (of table `table`) into col: NULL / NOT NULL (col->nullable)
 * and DEFAULT; CHECK, keys and references are the table's, planned after the columns. */
static int column_constraints(struct analyzer *a, const PgQuery__ColumnDef *cd, const char *table,
                              struct sql_column *col)
{
        bool saw_null = false, saw_not_null = false;
        int r;

        for (size_t k = 0; k < cd->n_constraints; k++) {
                const PgQuery__Constraint *con;

                if (cd->constraints[k]->node_case != PG_QUERY__NODE__NODE_CONSTRAINT)
                        return FAIL(a, "XX000", "malformed column constraint");
                con = cd->constraints[k]->constraint;
                switch (con->contype) {
                case PG_QUERY__CONSTR_TYPE__CONSTR_NULL:
                        saw_null = true;
                        break;
                case PG_QUERY__CONSTR_TYPE__CONSTR_NOTNULL:
                        saw_not_null = true;
                        break;
                case PG_QUERY__CONSTR_TYPE__CONSTR_DEFAULT:
                        if (col->default_row)
                                return FAIL_AT(a, con->location, "42601",
                                               "multiple default values specified for column "
                                               "\"%s\" of table \"%s\"", cd->colname, table);
                        r = column_default_of(a, con->raw_expr, col);
                        if (r < 0)
                                return r;
                        break;
                case PG_QUERY__CONSTR_TYPE__CONSTR_CHECK:
                case PG_QUERY__CONSTR_TYPE__CONSTR_PRIMARY:
                case PG_QUERY__CONSTR_TYPE__CONSTR_UNIQUE:
                case PG_QUERY__CONSTR_TYPE__CONSTR_FOREIGN:
                        break;          /* after the columns */
                case PG_QUERY__CONSTR_TYPE__CONSTR_ATTR_NOT_DEFERRABLE:
                case PG_QUERY__CONSTR_TYPE__CONSTR_ATTR_IMMEDIATE:
                        break;          /* what every constraint is */
                case PG_QUERY__CONSTR_TYPE__CONSTR_ATTR_DEFERRABLE:
                case PG_QUERY__CONSTR_TYPE__CONSTR_ATTR_DEFERRED:
                        return FAIL_AT(a, con->location, "0A000", "DEFERRABLE and "
                                       "INITIALLY DEFERRED constraints are not supported");
                default:
                        return FAIL_AT(a, con->location, "0A000",
                                       "only NULL, NOT NULL, DEFAULT, CHECK, PRIMARY KEY, "
                                       "UNIQUE and REFERENCES column constraints are "
                                       "supported (Coord cannot enforce the others yet)");
                }
                if (saw_null && saw_not_null)
                        return FAIL_AT(a, con->location, "42601",
                                       "conflicting NULL/NOT NULL declarations for column "
                                       "\"%s\" of table \"%s\"",
                                       cd->colname, table);
        }
        col->nullable = !saw_not_null && !cd->is_not_null;
        return 0;
}

int analyze_create_table(struct analyzer *a, const PgQuery__CreateStmt *c)
{
        struct sql_create_table *ct = &a->stmt->create_table;
        struct sql_relation existing;
        const char *name = NULL;
        int r;

        if (c->relation->relpersistence && c->relation->relpersistence[0] == 't')
                return FAIL_AT(a, c->relation->location, "0A000",
                               "temporary tables are not supported");
        if (c->n_inh_relations || c->partbound || c->partspec || c->of_typename)
                return FAIL(a, "0A000",
                            "inheritance, partitions and typed tables are not supported");
        for (size_t i = 0; i < c->n_constraints; i++)
                if (c->constraints[i]->node_case != PG_QUERY__NODE__NODE_CONSTRAINT ||
                    !table_constraint_supported(c->constraints[i]->constraint->contype))
                        return FAIL(a, "0A000", "table constraints other than CHECK, PRIMARY KEY, "
                                    "UNIQUE and FOREIGN KEY are not supported: Coord cannot "
                                    "enforce them yet");
        if (c->n_options || (c->access_method && c->access_method[0]) ||
            (c->tablespacename && c->tablespacename[0]))
                return FAIL(a, "0A000", "table options are not supported");
        r = range_var_name(a, c->relation, &name);
        if (r < 0)
                return r;
        if (c->n_table_elts > ROW_MAX_COLUMNS)
                return FAIL(a, "54011", "tables can have at most %u columns", ROW_MAX_COLUMNS);

        ct->if_not_exists = c->if_not_exists;
        ct->name = strdup(name);
        ct->columns = calloc(c->n_table_elts ? c->n_table_elts : 1, sizeof(*ct->columns));
        if (!ct->name || !ct->columns)
                return analyzer_oom(a);
        for (size_t i = 0; i < c->n_table_elts; i++) {
                const PgQuery__ColumnDef *cd;
                struct sql_column *col = &ct->columns[ct->n_columns];

                if (c->table_elts[i]->node_case == PG_QUERY__NODE__NODE_CONSTRAINT &&
                    table_constraint_supported(c->table_elts[i]->constraint->contype))
                        continue;       /* after the columns */
                if (c->table_elts[i]->node_case == PG_QUERY__NODE__NODE_CONSTRAINT)
                        return FAIL_AT(a, c->table_elts[i]->constraint->location, "0A000",
                                       "table constraints other than CHECK, PRIMARY KEY, UNIQUE and "
                                       "FOREIGN KEY are not supported: Coord cannot enforce them yet");
                if (c->table_elts[i]->node_case != PG_QUERY__NODE__NODE_COLUMN_DEF)
                        return FAIL(a, "0A000", "LIKE is not supported");
                cd = c->table_elts[i]->column_def;
                for (size_t k = 0; k < ct->n_columns; k++)
                        if (strcmp(ct->columns[k].name, cd->colname) == 0)
                                return FAIL_AT(a, cd->location, "42701",
                                               "column \"%s\" specified more than once",
                                               cd->colname);
                /* Named and counted now, so that sql_stmt_free() frees what a column
                 * that fails further on holds (its DEFAULT). */
                ct->n_columns++;
                col->name = strdup(cd->colname);
                if (!col->name)
                        return analyzer_oom(a);
                if (!cd->type_name)
                        return FAIL_AT(a, cd->location, "42601", "column \"%s\" has no type",
                                       cd->colname);
                r = resolve_type(a, cd->type_name, &col->type, &col->max_chars);
                if (r < 0)
                        return r;
                if ((cd->identity && cd->identity[0]) || (cd->generated && cd->generated[0]) ||
                    cd->coll_clause)
                        return FAIL_AT(a, cd->location, "0A000",
                                       "identity, generated columns and collations are not supported");
                if (cd->raw_default) {
                        r = column_default_of(a, cd->raw_default, col);
                        if (r < 0)
                                return r;
                }
                r = column_constraints(a, cd, name, col);
                if (r < 0)
                        return r;
        }
        /* Keys, then CHECK constraints (a primary key's columns are NOT NULL in them),
         * then foreign keys, each in the order written: the columns' own, then the
         * table's. */
        for (int pass = 0; pass < 3; pass++) {
                for (size_t i = 0; i < c->n_table_elts; i++) {
                        const PgQuery__Node *el = c->table_elts[i];

                        if (el->node_case == PG_QUERY__NODE__NODE_COLUMN_DEF) {
                                for (size_t k = 0; k < el->column_def->n_constraints; k++) {
                                        r = table_constraint(a, el->column_def->constraints[k]->constraint,
                                                             el->column_def->colname, pass);
                                        if (r < 0)
                                                return r;
                                }
                        } else if ((r = table_constraint(a, el->constraint, NULL, pass)) < 0) {
                                return r;
                        }
                }
                for (size_t i = 0; i < c->n_constraints; i++) {
                        r = table_constraint(a, c->constraints[i]->constraint, NULL, pass);
                        if (r < 0)
                                return r;
                }
        }
        r = numeric_keys_fixed(a, ct);
        if (r < 0)
                return r;

        r = lookup_relation(a, name, &existing);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (!ct->if_not_exists)
                return FAIL_AT(a, c->relation->location, "42P07", "relation \"%s\" already exists",
                               name);
        ct->exists = true;
        return add_notice(a, "42P07", "relation \"%s\" already exists, skipping", name);
}

/* One name of a DROP: resolved into the next of drop.names/ids (0: missing, IF EXISTS). */
static int drop_name(struct analyzer *a, const char *name)
{
        struct sql_drop *dr = &a->stmt->drop;
        const char *kind = sql_object_kind_name(dr->kind);
        size_t i = dr->n_objects;
        struct sql_relation rel;
        int r;

        dr->names[i] = strdup(name);
        if (!dr->names[i])
                return analyzer_oom(a);
        dr->n_objects++;
        r = lookup_relation(a, name, &rel);
        if (r == -ENOENT) {
                if (!dr->if_exists)
                        return FAIL(a, "42P01", "%s \"%s\" does not exist", kind, name);
                return add_notice(a, "00000", "%s \"%s\" does not exist, skipping", kind, name);
        }
        if (r < 0)
                return r;
        if (rel.kind != dr->kind) {
                r = FAIL(a, "42809", "\"%s\" is not a%s %s", name,
                         dr->kind == SQL_OBJECT_INDEX ? "n" : "", kind);
                row_error_hint(a->err, "Use DROP %s to remove a%s %s.",
                               rel.kind == SQL_OBJECT_VIEW ? "VIEW"
                               : rel.kind == SQL_OBJECT_MATERIALIZED_VIEW ? "MATERIALIZED VIEW"
                               : rel.kind == SQL_OBJECT_INDEX  ? "INDEX"
                               : rel.kind == SQL_OBJECT_SOURCE ? "SOURCE"
                               : rel.kind == SQL_OBJECT_SINK   ? "SINK"
                                                               : "TABLE",
                               rel.kind == SQL_OBJECT_INDEX ? "n" : "",
                               sql_object_kind_name(rel.kind));
                return r;
        }
        dr->ids[i] = rel.id;
        return 0;
}

int analyze_drop(struct analyzer *a, const PgQuery__DropStmt *d)
{
        struct sql_drop *dr = &a->stmt->drop;

        switch (d->remove_type) {
        case PG_QUERY__OBJECT_TYPE__OBJECT_TABLE:
                dr->kind = SQL_OBJECT_TABLE;
                break;
        case PG_QUERY__OBJECT_TYPE__OBJECT_VIEW:
                dr->kind = SQL_OBJECT_VIEW;
                break;
        case PG_QUERY__OBJECT_TYPE__OBJECT_MATVIEW:
                dr->kind = SQL_OBJECT_MATERIALIZED_VIEW;
                break;
        case PG_QUERY__OBJECT_TYPE__OBJECT_INDEX:
                dr->kind = SQL_OBJECT_INDEX;
                break;
        default:
                return FAIL(a, "0A000", "this DROP is not supported");
        }
        if (d->concurrent)
                return FAIL(a, "0A000", "DROP ... CONCURRENTLY is not supported");
        dr->if_exists = d->missing_ok;
        dr->cascade = d->behavior == PG_QUERY__DROP_BEHAVIOR__DROP_CASCADE;
        dr->names = calloc(d->n_objects ? d->n_objects : 1, sizeof(*dr->names));
        dr->ids = calloc(d->n_objects ? d->n_objects : 1, sizeof(*dr->ids));
        if (!dr->names || !dr->ids)
                return analyzer_oom(a);
        for (size_t i = 0; i < d->n_objects; i++) {
                const char *name = NULL;
                int r = list_name(a, d->objects[i], &name);

                if (r >= 0)
                        r = drop_name(a, name);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* DROP SINK and DROP SOURCE (lifted, adapter-sql.c note 1). */
int analyze_drop_sink(struct analyzer *a, const struct lift *l)
{
        struct sql_drop *dr = &a->stmt->drop;

        dr->kind = l->alter_kind;
        dr->if_exists = l->if_exists;
        dr->cascade = l->cascade;
        dr->names = calloc(l->n_names ? l->n_names : 1, sizeof(*dr->names));
        dr->ids = calloc(l->n_names ? l->n_names : 1, sizeof(*dr->ids));
        if (!dr->names || !dr->ids)
                return analyzer_oom(a);
        for (size_t i = 0; i < l->n_names; i++) {
                int r = drop_name(a, l->names[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Resolve the relation written by INSERT or DELETE: a table. */
int target_table(struct analyzer *a, const PgQuery__RangeVar *rv, const char *verb,
                        struct sql_relation *ret, char **ret_name)
{
        const char *name = NULL;
        int r = range_var_name(a, rv, &name);

        if (r < 0)
                return r;
        r = lookup_relation(a, name, ret);
        if (r == -ENOENT)
                return FAIL_AT(a, rv->location, "42P01", "relation \"%s\" does not exist", name);
        if (r < 0)
                return r;
        if (ret->kind != SQL_OBJECT_TABLE)
                return FAIL_AT(a, rv->location, "42809", "cannot %s %s \"%s\"", verb,
                               sql_object_kind_name(ret->kind), name);
        /* The process that owns the facts writes a built-in (DESIGN section 8). */
        if (ret->builtin) {
                r = FAIL_AT(a, rv->location, "42501", "permission denied for table %s", name);
                row_error_detail(a->err, "%s is a built-in relation: Coord writes it, users "
                                         "read it.", name);
                return r;
        }
        *ret_name = strdup(name);
        return *ret_name ? 0 : analyzer_oom(a);
}

/* Assignment coercion of an INSERT value into its column (PostgreSQL's assignment
 * casts: between integers and numeric, and anything to text). */
int assign_column(struct analyzer *a, struct typed *t, const struct sql_column *col)
{
        int from, to = col->type, r;

        if (to == ROW_TYPE_BPCHAR) {
                /* Anything takes character(n) as it takes text (assignment casts). */
                r = coerce_unknown(a, t, ROW_TYPE_TEXT);
                return r < 0 ? r : bpchar_of(a, t, col->max_chars, false);
        }
        if (t->unknown) {
                r = coerce_unknown(a, t, to);
                return r < 0 || !col->max_chars ? r : varchar_of(a, t, col->max_chars, false);
        }
        from = (int)t->e->type;
        if (from == to)
                return col->max_chars ? varchar_of(a, t, col->max_chars, false) : 0;
        if ((type_is_int(from) && type_is_int(to)) || to == ROW_TYPE_TEXT ||
            (type_is_int(from) && to == ROW_TYPE_NUMERIC) ||
            (from == ROW_TYPE_NUMERIC && type_is_int(to))) {
                r = wrap_call(a, t, COORD__PLAN__FUNC__FUNC_CAST, to);
                return r < 0 || !col->max_chars ? r : varchar_of(a, t, col->max_chars, false);
        }
        r = FAIL_AT(a, t->location, "42804",
                    "column \"%s\" is of type %s but expression is of type %s", col->name,
                    row_type_name((enum row_type)to), row_type_name((enum row_type)from));
        row_error_hint(a->err, "You will need to rewrite or cast the expression.");
        return r;
}

int node_location(const PgQuery__Node *n)
{
        switch (n->node_case) {
        case PG_QUERY__NODE__NODE_A_CONST:
                return n->a_const->location;
        case PG_QUERY__NODE__NODE_COLUMN_REF:
                return n->column_ref->location;
        case PG_QUERY__NODE__NODE_A_EXPR:
                return n->a_expr->location;
        case PG_QUERY__NODE__NODE_FUNC_CALL:
                return n->func_call->location;
        case PG_QUERY__NODE__NODE_TYPE_CAST:
                return n->type_cast->location;
        case PG_QUERY__NODE__NODE_PARAM_REF:
                return n->param_ref->location;
        case PG_QUERY__NODE__NODE_BOOL_EXPR:
                return n->bool_expr->location;
        case PG_QUERY__NODE__NODE_RES_TARGET:
                return n->res_target->location;
        default:
                return -1;
        }
}

/* Column col's DEFAULT as a datum (pointing into the column's bytes), or NULL. */
struct row_datum column_default(const struct sql_column *col)
{
        struct row_datum d = ROW_DATUM_NULL;

        if (col->default_row && row_decode(col->default_row, col->default_len, &d, 1) != 1)
                d = ROW_DATUM_NULL;     /* checked when the table was created */
        return d;
}

/* One VALUES row into an encoded table row. */
static int insert_row(struct analyzer *a, const struct sql_relation *rel, const size_t *targets,
                      size_t n_targets, const PgQuery__List *values, struct sql_row *ret)
{
        _cleanup_free_ struct typed *vals = NULL;
        _cleanup_free_ struct row_datum *row = NULL;
        int r = 0;

        if (values->n_items > n_targets)
                return FAIL_AT(a, node_location(values->items[n_targets]), "42601",
                               "INSERT has more expressions than target columns");
        vals = calloc(n_targets ? n_targets : 1, sizeof(*vals));
        row = calloc(rel->n_columns ? rel->n_columns : 1, sizeof(*row));
        if (!vals || !row)
                return analyzer_oom(a);
        /* A column not written, or written DEFAULT, takes its default. */
        for (size_t i = 0; i < rel->n_columns; i++)
                row[i] = column_default(&rel->columns[i]);
        for (size_t i = 0; i < values->n_items; i++) {
                const PgQuery__Node *n = values->items[i];
                const struct sql_column *col = &rel->columns[targets[i]];

                vals[i].location = -1;
                if (n->node_case == PG_QUERY__NODE__NODE_SET_TO_DEFAULT)
                        continue;       /* its default, set above */
                r = analyze_expr(a, n, &vals[i]);
                if (r >= 0)
                        r = assign_column(a, &vals[i], col);
                if (r < 0)
                        goto out;
                if (!is_literal(vals[i].e)) {
                        r = FAIL_AT(a, vals[i].location, "0A000",
                                    "INSERT values must be constant expressions");
                        goto out;
                }
                r = row_expr_literal(vals[i].e->literal, col->type, &row[targets[i]], a->err);
                if (r < 0)
                        goto out;
        }
        for (size_t i = 0; i < rel->n_columns; i++) {
                char failing[400];

                if (rel->columns[i].nullable || row[i].kind != ROW_KIND_NULL)
                        continue;
                if (a->params && a->params->describe)
                        continue;       /* a placeholder NULL: checked when it is run */
                row_format_failing(row, rel->n_columns, failing, sizeof(failing));
                r = FAIL(a, "23502",
                         "null value in column \"%s\" of relation \"%s\" violates not-null "
                         "constraint",
                         rel->columns[i].name, a->stmt->insert.table);
                row_error_detail(a->err, "Failing row contains (%s).", failing);
                goto out;
        }
        r = row_encode(row, rel->n_columns, &ret->data, &ret->len);
        if (r < 0)
                r = r == -ENOMEM ? analyzer_oom(a) : FAIL(a, "54000", "row is too big");
out:
        /* The datums point into the literals: free them only now. */
        for (size_t i = 0; i < n_targets; i++)
                typed_done(&vals[i]);
        return r;
}

/* Does the parse tree under m hold a subquery (a SubLink)?  Walks every message field
 * through the protobuf-c descriptors; past `depth` levels it answers yes, which only
 * sends the statement down the general path. */
static bool has_sublink_at(const ProtobufCMessage *m, unsigned depth)
{
        const ProtobufCMessageDescriptor *d = m->descriptor;

        if (d == &pg_query__sub_link__descriptor || depth > 4096)
                return true;
        for (unsigned i = 0; i < d->n_fields; i++) {
                const ProtobufCFieldDescriptor *f = &d->fields[i];
                const char *field = (const char *)m + f->offset;

                if (f->type != PROTOBUF_C_TYPE_MESSAGE)
                        continue;
                if (f->label == PROTOBUF_C_LABEL_REPEATED) {
                        size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
                        ProtobufCMessage *const *v = *(ProtobufCMessage *const *const *)field;

                        for (size_t k = 0; k < n; k++)
                                if (v[k] && has_sublink_at(v[k], depth + 1))
                                        return true;
                        continue;
                }
                if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
                    *(const uint32_t *)((const char *)m + f->quantifier_offset) != f->id)
                        continue;
                if (*(ProtobufCMessage *const *)field &&
                    has_sublink_at(*(ProtobufCMessage *const *)field, depth + 1))
                        return true;
        }
        return false;
}

bool has_sublink(const ProtobufCMessage *m)
{
        return has_sublink_at(m, 0);
}

/* A Constant of rows[n], rows of table t (copied); NULL for memory. */
Coord__Plan__Relation *rows_constant(const struct sql_relation *t, const struct sql_row *rows, size_t n)
{
        Coord__Plan__Type *types;
        Coord__Plan__Update **u;

        types = calloc(t->n_columns ? t->n_columns : 1, sizeof(*types));
        u = calloc(n ? n : 1, sizeof(*u));
        for (size_t i = 0; types && i < t->n_columns; i++)
                types[i] = (Coord__Plan__Type)t->columns[i].type;
        for (size_t i = 0; u && i < n; i++) {
                u[i] = malloc(sizeof(*u[i]));
                if (!u[i])
                        break;
                coord__plan__update__init(u[i]);
                u[i]->diff = 1;
                u[i]->row.data = malloc(rows[i].len ? rows[i].len : 1);
                if (!u[i]->row.data) {
                        free(u[i]);
                        u[i] = NULL;
                        break;
                }
                memcpy(u[i]->row.data, rows[i].data, rows[i].len);
                u[i]->row.len = rows[i].len;
        }
        for (size_t i = 0; u && i < n; i++)
                if (!u[i]) {
                        for (size_t k = 0; k < i; k++)
                                coord__plan__update__free_unpacked(u[k], NULL);
                        free(u);
                        u = NULL;
                }
        if (!types || !u) {
                free(types);
                free(u);
                return NULL;
        }
        return rel_constant(types, t->n_columns, u, n);
}

/* Replace rel's Gets of the table `id` by `rows` (copied), under Maps, Filters and
 * Projects only: what the executor evaluates by itself (exec_returning()). */
static int returning_rows(struct analyzer *a, Coord__Plan__Relation *rel, uint64_t id,
                          const struct sql_relation *t, const struct sql_row *rows, size_t n)
{
        Coord__Plan__Relation *c;

        switch (rel->kind_case) {
        case COORD__PLAN__RELATION__KIND_MAP:
                return returning_rows(a, rel->map->input, id, t, rows, n);
        case COORD__PLAN__RELATION__KIND_FILTER:
                return returning_rows(a, rel->filter->input, id, t, rows, n);
        case COORD__PLAN__RELATION__KIND_PROJECT:
                return returning_rows(a, rel->project->input, id, t, rows, n);
        case COORD__PLAN__RELATION__KIND_GET:
                if (rel->get->id == id)
                        break;
                /* fall through */
        default:
                if (rel->kind_case == COORD__PLAN__RELATION__KIND_REDUCE)
                        return FAIL(a, "42803", "aggregate functions are not allowed in RETURNING");
                return FAIL(a, "0A000", "this RETURNING list is not supported: only expressions "
                            "over the inserted row");
        }
        c = rows_constant(t, rows, n);
        if (!c)
                return analyzer_oom(a);
        coord__plan__get__free_unpacked(rel->get, NULL);
        *rel = *c;
        free(c);
        return 0;
}

/* INSERT ... VALUES ... RETURNING list: planned as `SELECT list FROM table [AS alias]`
 * whose Get then reads the rows being inserted (returning_rows()), so the list means
 * what a SELECT list means, over the new rows in the table's column order.  mz_now(),
 * aggregates and subqueries are refused in it, as what they would read is not the
 * row.  The statement's inputs stay as they were: the INSERT reads nothing. */
static int plan_returning(struct analyzer *a, PgQuery__RangeVar *relation, PgQuery__Node **list,
                          size_t n_list, Coord__Plan__Peek *peek, struct scope *cols)
{
        PgQuery__SelectStmt sel = PG_QUERY__SELECT_STMT__INIT;
        PgQuery__Node from = PG_QUERY__NODE__INIT, node = PG_QUERY__NODE__INIT, *fromp = &from;
        size_t n_inputs = a->stmt->n_inputs, n_refs = a->stmt->n_references;
        const char *no_mz_now = a->no_mz_now, *no_agg = a->no_agg;
        Coord__Plan__Relation *plan = NULL;
        int r;

        for (size_t i = 0; i < n_list; i++)
                if (has_sublink(&list[i]->base))
                        return FAIL(a, "0A000", "subqueries in RETURNING are not supported");
        from.node_case = PG_QUERY__NODE__NODE_RANGE_VAR;
        from.range_var = relation;
        sel.n_from_clause = 1;
        sel.from_clause = &fromp;
        sel.n_target_list = n_list;
        sel.target_list = list;
        sel.op = PG_QUERY__SET_OPERATION__SETOP_NONE;
        sel.limit_option = PG_QUERY__LIMIT_OPTION__LIMIT_OPTION_DEFAULT;
        node.node_case = PG_QUERY__NODE__NODE_SELECT_STMT;
        node.select_stmt = &sel;
        a->no_mz_now = "RETURNING";
        a->no_agg = "RETURNING";
        r = plan_query(a, &node, peek, &plan, cols);
        a->no_mz_now = no_mz_now;
        a->no_agg = no_agg;
        peek->plan = plan;
        a->stmt->n_inputs = n_inputs;
        a->stmt->n_references = n_refs;
        return r;
}

static int insert_returning(struct analyzer *a, const PgQuery__InsertStmt *ins,
                            const struct sql_relation *rel)
{
        struct sql_insert *si = &a->stmt->insert;
        _cleanup_(scope_done) struct scope cols = { 0 };
        Coord__Plan__Peek *peek;
        int r;

        peek = si->returning = malloc(sizeof(*peek));
        if (!peek)
                return analyzer_oom(a);
        coord__plan__peek__init(peek);
        r = plan_returning(a, ins->relation, ins->returning_list, ins->n_returning_list, peek, &cols);
        if (r >= 0)
                r = returning_rows(a, peek->plan, si->id, rel, si->rows, si->n_rows);
        if (r < 0)
                return r;
        return peek_columns(a, peek, &cols);
}

/* Column k of a RETURNING plan as an expression over the table's row: the plan is what
 * plan_select() makes of a list over one table (Project over Map over Get, or less);
 * NULL for another shape (or out of memory). */
static Coord__Plan__Expr *returning_expr(const Coord__Plan__Relation *rel, uint64_t id,
                                         size_t width, uint32_t k, int type)
{
        switch (rel->kind_case) {
        case COORD__PLAN__RELATION__KIND_PROJECT:
                return k < rel->project->n_outputs
                               ? returning_expr(rel->project->input, id, width,
                                                rel->project->outputs[k], type)
                               : NULL;
        case COORD__PLAN__RELATION__KIND_MAP:
                if (rel->map->input->kind_case != COORD__PLAN__RELATION__KIND_GET)
                        return NULL;
                if (k < width)
                        return returning_expr(rel->map->input, id, width, k, type);
                if (k - width >= rel->map->n_exprs)
                        return NULL;
                return expr_copy(rel->map->exprs[k - width]);
        case COORD__PLAN__RELATION__KIND_GET:
                return rel->get->id == id && k < width ? expr_column(type, k) : NULL;
        default:
                return NULL;
        }
}

static bool rel_has_reduce(const Coord__Plan__Relation *rel)
{
        switch (rel->kind_case) {
        case COORD__PLAN__RELATION__KIND_REDUCE:
                return true;
        case COORD__PLAN__RELATION__KIND_MAP:
                return rel_has_reduce(rel->map->input);
        case COORD__PLAN__RELATION__KIND_FILTER:
                return rel_has_reduce(rel->filter->input);
        case COORD__PLAN__RELATION__KIND_PROJECT:
                return rel_has_reduce(rel->project->input);
        default:
                return false;
        }
}

/* DELETE / UPDATE ... RETURNING list: planned as INSERT's is (`SELECT list FROM table
 * [AS alias]`), then taken apart into expressions over the table's row, *ret_exprs[m]
 * (malloc'ed), which the controller evaluates with the write (coord.proto
 * TableWrite.returning); *ret_peek describes them and has no plan. */
int write_returning(struct analyzer *a, PgQuery__RangeVar *relation, PgQuery__Node **list,
                    size_t n_list, uint64_t id, size_t width, Coord__Plan__Peek **ret_peek,
                    Coord__Plan__Expr ***ret_exprs, size_t *ret_m)
{
        _cleanup_(scope_done) struct scope cols = { 0 };
        Coord__Plan__Peek *peek = malloc(sizeof(*peek));
        Coord__Plan__Expr **e = NULL;
        size_t m = 0;
        int r;

        if (!peek)
                return analyzer_oom(a);
        coord__plan__peek__init(peek);
        r = plan_returning(a, relation, list, n_list, peek, &cols);
        if (r >= 0)
                r = peek_columns(a, peek, &cols);
        if (r >= 0) {
                m = peek->n_columns;
                e = calloc(m ? m : 1, sizeof(*e));
                if (!e)
                        r = analyzer_oom(a);
        }
        for (size_t k = 0; r >= 0 && k < m; k++) {
                e[k] = returning_expr(peek->plan, id, width, (uint32_t)k, (int)peek->columns[k]->type);
                if (!e[k] && rel_has_reduce(peek->plan))
                        r = FAIL(a, "42803", "aggregate functions are not allowed in RETURNING");
                else if (!e[k])
                        r = FAIL(a, "0A000", "this RETURNING list is not supported: only "
                                 "expressions over the row");
        }
        rel_free(peek->plan);
        peek->plan = NULL;
        if (r < 0) {
                for (size_t k = 0; e && k < m; k++)
                        expr_free(e[k]);
                free(e);
                coord__plan__peek__free_unpacked(peek, NULL);
                return r;
        }
        *ret_peek = peek;
        *ret_exprs = e;
        *ret_m = m;
        return 0;
}

/* ON CONFLICT [(cols) | ON CONSTRAINT name] DO NOTHING | DO UPDATE: the key it names
 * (any key when it names none), as PostgreSQL infers it: the columns must be exactly a
 * PRIMARY KEY's or UNIQUE constraint's (42P10 otherwise).  The controller skips the rows
 * whose key is taken (controller-server-unique.c note 22); DO UPDATE first updates the
 * rows holding them (adapter-sql-upsert.c). */
static int on_conflict(struct analyzer *a, const PgQuery__OnConflictClause *oc,
                       const struct sql_relation *rel)
{
        struct sql_insert *si = &a->stmt->insert;
        const PgQuery__InferClause *inf = oc->infer;
        const struct sql_unique *key = NULL;
        _cleanup_free_ bool *in = NULL;
        size_t n_in = 0;

        si->on_conflict_skip = true;
        if (!inf)
                return 0;
        if (inf->where_clause)
                return FAIL_AT(a, inf->location, "0A000", "ON CONFLICT ... WHERE is not supported");
        if (inf->conname && inf->conname[0]) {
                for (size_t i = 0; i < rel->n_uniques && !key; i++)
                        if (strcmp(rel->uniques[i].name, inf->conname) == 0)
                                key = &rel->uniques[i];
                if (!key)
                        return FAIL(a, "42704", "constraint \"%s\" for table \"%s\" does not exist",
                                    inf->conname, si->table);
        } else {
                in = calloc(rel->n_columns ? rel->n_columns : 1, sizeof(*in));
                if (!in)
                        return analyzer_oom(a);
                for (size_t i = 0; i < inf->n_index_elems; i++) {
                        const PgQuery__IndexElem *e = inf->index_elems[i]->node_case ==
                                                                      PG_QUERY__NODE__NODE_INDEX_ELEM
                                                              ? inf->index_elems[i]->index_elem : NULL;
                        size_t k;

                        if (!e || !e->name || !e->name[0])
                                return FAIL_AT(a, inf->location, "0A000", "ON CONFLICT on "
                                               "expressions is not supported: name columns");
                        for (k = 0; k < rel->n_columns; k++)
                                if (strcmp(rel->columns[k].name, e->name) == 0)
                                        break;
                        if (k == rel->n_columns)
                                return FAIL_AT(a, inf->location, "42703", "column \"%s\" does "
                                               "not exist", e->name);
                        in[k] = true;
                }
                for (size_t k = 0; k < rel->n_columns; k++)
                        n_in += in[k];
                for (size_t i = 0; i < rel->n_uniques && !key; i++) {
                        const struct sql_unique *u = &rel->uniques[i];
                        bool all = u->n_columns == n_in;

                        for (size_t k = 0; k < u->n_columns && all; k++)
                                all = u->columns[k] < rel->n_columns && in[u->columns[k]];
                        if (all)
                                key = u;
                }
                if (!key)
                        return FAIL(a, "42P10", "there is no unique or exclusion constraint "
                                    "matching the ON CONFLICT specification");
        }
        si->conflict_key = strdup(key->name);
        return si->conflict_key ? 0 : analyzer_oom(a);
}

/* INSERT ... VALUES, its rows analyzed: RETURNING or ON CONFLICT DO UPDATE. */
static int insert_done(struct analyzer *a, const PgQuery__InsertStmt *ins, const struct sql_relation *rel)
{
        if (ins->on_conflict_clause &&
            ins->on_conflict_clause->action == PG_QUERY__ON_CONFLICT_ACTION__ONCONFLICT_UPDATE)
                return plan_upsert(a, ins, rel);
        return ins->n_returning_list ? insert_returning(a, ins, rel) : 0;
}

int analyze_insert(struct analyzer *a, const PgQuery__InsertStmt *ins)
{
        struct sql_insert *si = &a->stmt->insert;
        _cleanup_free_ size_t *targets = NULL;
        const PgQuery__SelectStmt *sel = NULL;
        struct sql_relation rel;
        size_t n_targets;
        int r;

        if (ins->on_conflict_clause &&
            ins->on_conflict_clause->action == PG_QUERY__ON_CONFLICT_ACTION__ONCONFLICT_UPDATE &&
            !ins->on_conflict_clause->infer) {
                r = FAIL_AT(a, ins->on_conflict_clause->location, "42601",
                            "ON CONFLICT DO UPDATE requires inference specification or "
                            "constraint name");
                row_error_hint(a->err, "For example, ON CONFLICT (column_name).");
                return r;
        }
        if (ins->on_conflict_clause && ins->n_returning_list)
                return FAIL(a, "0A000", "RETURNING with ON CONFLICT is not supported");
        if (ins->with_clause && !ins->select_stmt)
                return FAIL(a, "0A000", "WITH with INSERT ... DEFAULT VALUES is not supported");
        a->strict_fold = true;          /* INSERT values must fold, errors and all */
        r = target_table(a, ins->relation, "insert into", &rel, &si->table);
        if (r < 0)
                return r;
        si->id = rel.id;
        if (ins->on_conflict_clause) {
                r = on_conflict(a, ins->on_conflict_clause, &rel);
                if (r < 0)
                        return r;
        }

        n_targets = ins->n_cols ? ins->n_cols : rel.n_columns;
        targets = calloc(n_targets ? n_targets : 1, sizeof(*targets));
        if (!targets)
                return analyzer_oom(a);
        for (size_t i = 0; i < n_targets; i++) {
                const PgQuery__ResTarget *rt;
                size_t k;

                if (!ins->n_cols) {
                        targets[i] = i;
                        continue;
                }
                if (ins->cols[i]->node_case != PG_QUERY__NODE__NODE_RES_TARGET)
                        return FAIL(a, "XX000", "malformed INSERT column list");
                rt = ins->cols[i]->res_target;
                if (rt->n_indirection)
                        return FAIL_AT(a, rt->location, "0A000",
                                       "subscripts and fields in INSERT columns are not supported");
                for (k = 0; k < rel.n_columns; k++)
                        if (strcmp(rel.columns[k].name, rt->name) == 0)
                                break;
                if (k == rel.n_columns)
                        return FAIL_AT(a, rt->location, "42703",
                                       "column \"%s\" of relation \"%s\" does not exist", rt->name,
                                       si->table);
                for (size_t j = 0; j < i; j++)
                        if (targets[j] == k)
                                return FAIL_AT(a, rt->location, "42701",
                                               "column \"%s\" specified more than once", rt->name);
                targets[i] = k;
        }

        if (ins->select_stmt) {
                if (ins->select_stmt->node_case != PG_QUERY__NODE__NODE_SELECT_STMT)
                        return FAIL(a, "0A000", "this INSERT source is not supported");
                sel = ins->select_stmt->select_stmt;
                if (!sel->n_values_lists || sel->n_sort_clause || sel->limit_count ||
                    sel->limit_offset || sel->with_clause || ins->with_clause ||
                    has_sublink(&sel->base)) {
                        if (ins->on_conflict_clause)
                                return FAIL(a, "0A000", "ON CONFLICT is supported only for an "
                                            "INSERT of VALUES");
                        return analyze_insert_select(a, ins, &rel, targets, n_targets);
                }
        }
        si->rows = calloc(sel ? sel->n_values_lists : 1, sizeof(*si->rows));
        if (!si->rows)
                return analyzer_oom(a);
        if (!sel) {
                /* INSERT ... DEFAULT VALUES: one row of defaults (NULL for now). */
                static const PgQuery__List empty = PG_QUERY__LIST__INIT;

                r = insert_row(a, &rel, targets, n_targets, &empty, &si->rows[0]);
                if (r < 0)
                        return r;
                si->n_rows = 1;
                return insert_done(a, ins, &rel);
        }
        for (size_t i = 0; i < sel->n_values_lists; i++) {
                const PgQuery__Node *v = sel->values_lists[i];

                if (v->node_case != PG_QUERY__NODE__NODE_LIST)
                        return FAIL(a, "XX000", "malformed VALUES list");
                if (ins->n_cols && v->list->n_items < n_targets)
                        return FAIL_AT(a, ins->cols[v->list->n_items]->res_target->location,
                                       "42601", "INSERT has more target columns than expressions");
                r = insert_row(a, &rel, targets, n_targets, v->list, &si->rows[i]);
                if (r < 0)
                        return r;
                si->n_rows++;
        }
        return insert_done(a, ins, &rel);
}

/* WHERE: a boolean predicate, folded; NULL when it is the constant TRUE. */
int analyze_where(struct analyzer *a, const PgQuery__Node *where, Coord__Plan__Expr **ret)
{
        _cleanup_(typed_done) struct typed t = { .location = -1 };
        int r;

        *ret = NULL;
        if (!where)
                return 0;
        r = analyze_expr(a, where, &t);
        if (r >= 0)
                r = require_bool(a, &t, "WHERE");
        if (r < 0)
                return r;
        if (is_literal(t.e) && t.e->literal->value_case == COORD__PLAN__DATUM__VALUE_BOOL_VALUE &&
            t.e->literal->bool_value)
                return 0;
        *ret = TAKE_PTR(t.e);
        return 0;
}
