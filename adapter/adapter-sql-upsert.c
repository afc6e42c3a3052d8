/* adapter-sql-upsert.c -- INSERT ... ON CONFLICT (key) DO UPDATE SET ... [WHERE ...]
 * (adapter-sql-internal.h), planned as an UPDATE ... FROM the proposed rows that the
 * controller applies first, and the INSERT ... ON CONFLICT DO NOTHING after it, in one
 * unit.
 *
 * NOTES ON THE DESIGN
 *
 * (1) The statement is planned as
 *         UPDATE t [AS x] SET <its SET list> FROM excluded
 *           WHERE x.k1 = excluded.k1 AND ... [AND (<its WHERE>)]
 *     over `excluded`, the proposed rows (defaults filled in) as a Constant in the
 *     table's columns (plan_preset() in adapter-sql-from.c), then the INSERT with
 *     on_conflict_skip on the same key.  The two are one unit (a block of two writes:
 *     exec_insert()): the UPDATE rewrites each existing row whose key a proposed row
 *     takes and the WHERE accepts, the INSERT then skips every proposed row whose key is
 *     taken -- updated, or kept by the WHERE -- and inserts the others; either both
 *     apply or neither.  The UPDATE ... FROM machinery (adapter-sql-using.c) gives
 *     PostgreSQL's names: `excluded.c` is the proposed row's, `t.c` (or the alias's)
 *     the target's, and a bare name both have is ambiguous (42702).  Constants fold
 *     as the INSERT's values do, so `SET n = 1/0` fails with 22012 whether or not a
 *     row conflicts, as in PostgreSQL, whose planner folds them.
 * (2) PostgreSQL fails with 21000 when one command would affect a row twice: two
 *     proposed rows with the same key (neither NULL-keyed).  They are found here, before
 *     anything is sent (proposed_keys_distinct()).
 * (3) Refused (0A000), never planned with another meaning: SET of a column of the
 *     conflict key (the INSERT would then insert the proposed row beside the updated
 *     one), RETURNING, a WHERE relating the target to excluded other than by the key's
 *     equalities (adapter-sql-using.c note 1), subqueries in SET, INSERT ... SELECT, a
 *     target table named excluded.
 */
#include "adapter-sql-internal.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

struct key_ref {
        const uint8_t *k;
        size_t len;
};

static int key_ref_cmp(const void *x, const void *y)
{
        const struct key_ref *a = x, *b = y;
        int c = memcmp(a->k, b->k, a->len < b->len ? a->len : b->len);

        return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* (2) No two proposed rows with the same non-NULL key: 0, or 21000. */
static int proposed_keys_distinct(struct analyzer *a, const struct sql_relation *rel,
                                  const struct sql_unique *key)
{
        const struct sql_insert *si = &a->stmt->insert;
        _cleanup_free_ struct row_datum *d = calloc(rel->n_columns + 1, sizeof(*d));
        _cleanup_free_ struct row_datum *kd = calloc(key->n_columns + 1, sizeof(*kd));
        _cleanup_free_ struct key_ref *keys = calloc(si->n_rows + 1, sizeof(*keys));
        size_t n = 0;
        int r = 0;

        if (!d || !kd || !keys)
                return analyzer_oom(a);
        for (size_t i = 0; i < si->n_rows && r >= 0; i++) {
                bool null = false;
                uint8_t *k;
                size_t len;

                if (row_decode(si->rows[i].data, si->rows[i].len, d, rel->n_columns) !=
                    (int)rel->n_columns) {
                        r = FAIL(a, "XX000", "a proposed row does not have the table's columns");
                        break;
                }
                for (size_t c = 0; c < key->n_columns; c++) {
                        kd[c] = d[key->columns[c]];
                        null |= kd[c].kind == ROW_KIND_NULL;
                }
                if (null)
                        continue;       /* conflicts with nothing */
                if (row_encode(kd, key->n_columns, &k, &len) < 0) {
                        r = analyzer_oom(a);
                        break;
                }
                keys[n++] = (struct key_ref){ .k = k, .len = len };
        }
        if (r >= 0 && n > 1) {
                qsort(keys, n, sizeof(*keys), key_ref_cmp);
                for (size_t i = 1; i < n && r >= 0; i++)
                        if (key_ref_cmp(&keys[i - 1], &keys[i]) == 0) {
                                r = FAIL(a, "21000", "ON CONFLICT DO UPDATE command cannot affect "
                                         "row a second time");
                                row_error_hint(a->err, "Ensure that no rows proposed for insertion "
                                               "within the same command have duplicate "
                                               "constrained values.");
                        }
        }
        for (size_t i = 0; i < n; i++)
                free((void *)keys[i].k);
        return r;
}

/* Append "s" quoted as an identifier to buf. */
static int put_ident(char **buf, size_t *len, size_t *cap, const char *s)
{
        size_t need = *len + 2 * strlen(s) + 3;

        if (need > *cap) {
                char *b = realloc(*buf, need * 2);

                if (!b)
                        return -ENOMEM;
                *buf = b;
                *cap = need * 2;
        }
        (*buf)[(*len)++] = '"';
        for (; *s; s++) {
                if (*s == '"')
                        (*buf)[(*len)++] = '"';
                (*buf)[(*len)++] = *s;
        }
        (*buf)[(*len)++] = '"';
        (*buf)[*len] = '\0';
        return 0;
}

static int put_str(char **buf, size_t *len, size_t *cap, const char *s)
{
        size_t n = strlen(s);

        if (*len + n + 1 > *cap) {
                char *b = realloc(*buf, (*len + n + 1) * 2);

                if (!b)
                        return -ENOMEM;
                *buf = b;
                *cap = (*len + n + 1) * 2;
        }
        memcpy(*buf + *len, s, n + 1);
        *len += n;
        return 0;
}

/* (1) `UPDATE t SET c = 1 FROM excluded WHERE "qual"."k" = excluded."k" AND ... AND true`:
 * the statement's shape, whose relation, SET list and last conjunct the caller swaps
 * for the INSERT's. */
static char *update_text(const char *qual, const struct sql_relation *rel, const struct sql_unique *key)
{
        char *buf = NULL;
        size_t len = 0, cap = 0;
        int r = put_str(&buf, &len, &cap, "UPDATE t SET c = 1 FROM excluded WHERE ");

        for (size_t i = 0; r >= 0 && i < key->n_columns; i++) {
                const char *col = rel->columns[key->columns[i]].name;

                r = put_ident(&buf, &len, &cap, qual);
                if (r >= 0)
                        r = put_str(&buf, &len, &cap, ".");
                if (r >= 0)
                        r = put_ident(&buf, &len, &cap, col);
                if (r >= 0)
                        r = put_str(&buf, &len, &cap, " = excluded.");
                if (r >= 0)
                        r = put_ident(&buf, &len, &cap, col);
                if (r >= 0)
                        r = put_str(&buf, &len, &cap, " AND ");
        }
        if (r >= 0)
                r = put_str(&buf, &len, &cap, "true");
        if (r < 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* Take the ids of from[n] into *to (sorted, without duplicates). */
static int merge_ids(struct analyzer *a, uint64_t **to, size_t *n_to, const uint64_t *from, size_t n)
{
        int r = 0;

        for (size_t i = 0; i < n && r >= 0; i++)
                r = add_sorted(a, to, n_to, from[i]);
        return r;
}

/* (1) The UPDATE of a parsed update_text(), with the INSERT's parts swapped in, analyzed
 * into a statement of its own; its plan becomes si->upsert, its inputs the INSERT's. */
static int analyze_upsert_update(struct analyzer *a, const PgQuery__InsertStmt *ins,
                                 const struct sql_relation *rel, PgQuery__UpdateStmt *u)
{
        const PgQuery__OnConflictClause *oc = ins->on_conflict_clause;
        struct sql_stmt *outer = a->stmt, *tmp = calloc(1, sizeof(*tmp));
        PgQuery__RangeVar *relation = u->relation;
        PgQuery__Node **list = u->target_list, *last = NULL, **slot = NULL;
        size_t n_list = u->n_target_list;
        int r;

        if (!tmp)
                return analyzer_oom(a);
        tmp->kind = SQL_STMT_UPDATE;
        if (u->where_clause && u->where_clause->node_case == PG_QUERY__NODE__NODE_BOOL_EXPR &&
            u->where_clause->bool_expr->n_args) {
                slot = &u->where_clause->bool_expr->args[u->where_clause->bool_expr->n_args - 1];
                last = *slot;
        }
        if (!slot) {
                sql_stmt_free(tmp);
                return FAIL(a, "XX000", "ON CONFLICT DO UPDATE: unexpected parse");
        }
        /* Borrowed from the INSERT's tree for the analysis, given back below. */
        u->relation = ins->relation;
        u->target_list = oc->target_list;
        u->n_target_list = oc->n_target_list;
        if (oc->where_clause)
                *slot = oc->where_clause;
        a->stmt = tmp;
        a->preset_name = "excluded";
        a->preset_rel = rel;
        {
                Coord__Plan__Relation *c = rows_constant(rel, outer->insert.rows, outer->insert.n_rows);

                a->preset_plan = c;
                r = c ? analyze_update(a, u) : analyzer_oom(a);
                rel_free(c);
        }
        a->preset_name = NULL;
        a->preset_plan = NULL;
        a->preset_rel = NULL;
        a->stmt = outer;
        u->relation = relation;
        u->target_list = list;
        u->n_target_list = n_list;
        *slot = last;
        if (r >= 0)
                r = merge_ids(a, &outer->inputs, &outer->n_inputs, tmp->inputs, tmp->n_inputs);
        if (r >= 0)
                r = merge_ids(a, &outer->references, &outer->n_references, tmp->references,
                              tmp->n_references);
        if (r >= 0)
                r = merge_ids(a, &outer->physical_inputs, &outer->n_physical_inputs,
                              tmp->physical_inputs, tmp->n_physical_inputs);
        if (r >= 0)
                outer->insert.upsert = TAKE_PTR(tmp->update.plan);
        sql_stmt_free(tmp);
        return r;
}

int plan_upsert(struct analyzer *a, const PgQuery__InsertStmt *ins, const struct sql_relation *rel)
{
        const struct sql_insert *si = &a->stmt->insert;
        const PgQuery__OnConflictClause *oc = ins->on_conflict_clause;
        const struct sql_unique *key = NULL;
        const char *qual = ins->relation->alias && ins->relation->alias->aliasname &&
                                           ins->relation->alias->aliasname[0]
                                   ? ins->relation->alias->aliasname
                                   : ins->relation->relname;
        PgQueryProtobufParseResult pr = { 0 };
        PgQuery__ParseResult *tree = NULL;
        _cleanup_free_ char *text = NULL;
        int r;

        for (size_t i = 0; si->conflict_key && i < rel->n_uniques && !key; i++)
                if (strcmp(rel->uniques[i].name, si->conflict_key) == 0)
                        key = &rel->uniques[i];
        if (!key)
                return FAIL(a, "XX000", "ON CONFLICT DO UPDATE without its key");
        if (ins->n_returning_list)
                return FAIL(a, "0A000", "RETURNING with ON CONFLICT DO UPDATE is not supported");
        /* FROM excluded would name the target itself (plan_preset()). */
        if (strcmp(ins->relation->relname, "excluded") == 0)
                return FAIL_AT(a, ins->relation->location, "0A000", "ON CONFLICT DO UPDATE into a "
                               "table named \"excluded\" is not supported");
        /* (3) */
        for (size_t i = 0; i < oc->n_target_list; i++) {
                const PgQuery__ResTarget *t = oc->target_list[i]->node_case ==
                                                              PG_QUERY__NODE__NODE_RES_TARGET
                                                      ? oc->target_list[i]->res_target
                                                      : NULL;

                for (size_t k = 0; t && t->name && k < key->n_columns; k++)
                        if (strcmp(rel->columns[key->columns[k]].name, t->name) == 0)
                                return FAIL_AT(a, t->location, "0A000", "ON CONFLICT DO UPDATE SET "
                                               "of column \"%s\" of the conflict key is not "
                                               "supported", t->name);
        }
        r = proposed_keys_distinct(a, rel, key);
        if (r < 0)
                return r;
        text = update_text(qual, rel, key);
        if (!text)
                return analyzer_oom(a);
        pr = pg_query_parse_protobuf(text);
        if (!pr.error)
                tree = pg_query__parse_result__unpack(NULL, pr.parse_tree.len,
                                                      (const uint8_t *)pr.parse_tree.data);
        if (pr.error || !tree || tree->n_stmts != 1 ||
            tree->stmts[0]->stmt->node_case != PG_QUERY__NODE__NODE_UPDATE_STMT)
                r = pr.error || tree ? FAIL(a, "XX000", "ON CONFLICT DO UPDATE: cannot build its "
                                                        "UPDATE (%s)",
                                            pr.error ? pr.error->message : "not one UPDATE")
                                     : analyzer_oom(a);
        else
                r = analyze_upsert_update(a, ins, rel, tree->stmts[0]->stmt->update_stmt);
        if (tree)
                pg_query__parse_result__free_unpacked(tree, NULL);
        pg_query_free_protobuf_parse_result(pr);
        return r;
}
