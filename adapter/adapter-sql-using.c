/* adapter-sql-using.c -- the FROM list of a write: DELETE ... USING and UPDATE ... FROM
 * (adapter-sql-internal.h), planned as the forms of DELETE and UPDATE that
 * adapter-sql-plan.c already plans.
 *
 * NOTES ON THE DESIGN
 *
 * (1) A write's FROM list is planned as an EXISTS, never as a join.  The controller
 *     deletes or updates exactly the rows of the target its plan returns, with their
 *     multiplicities (coord.proto TableWrite), and a join repeats a row of the target
 *     once per matching row of the list.  PostgreSQL deletes or updates each row of t
 *     that some row of the list matches once, so `... USING items WHERE cond` (`FROM`
 *     for UPDATE) is planned as `WHERE EXISTS (SELECT NULL FROM items WHERE cond)`:
 *     the same rows, each once.  The EXISTS takes cond's equalities between t and the
 *     items as its keys and its conditions on t alone as keys `true = cond`
 *     (adapter-sql-subquery.c, "Subqueries"); any other correlation is refused (0A000,
 *     write_from_refusal()), never planned wrong.
 *
 * (2) Names are resolved as PostgreSQL resolves them over one FROM list.  In the EXISTS
 *     the items' names hide the target's, where PostgreSQL calls a column name both
 *     have ambiguous (42702); so write_from_begin() first plans and throws away
 *     `[WITH ...] SELECT <the SET values and RETURNING list> FROM t, items WHERE cond`,
 *     which fails where the statement would fail in PostgreSQL for its names (42702,
 *     42712, 42703, 42P01).  After it, a name that is not one of t's is an item's.
 *
 * (3) UPDATE ... FROM: PostgreSQL updates a row of t that several rows of the list
 *     match with the values of one of them, which it does not say (the result depends
 *     on the plan).  Coord gives no such answer: each column of an item in a SET value
 *     is planned as the scalar subquery `(SELECT item.col FROM items WHERE cond)` over
 *     the row of t (write_from_value()), which fails with 21000 when more than one row
 *     of the list matches, and nothing is written.  A SET value that reads no item,
 *     and the choice of the rows (the EXISTS), mean the same with any number of
 *     matches.  A subquery in such a SET value is refused (0A000): its own names would
 *     be taken for the items'.
 *
 * (4) RETURNING lists the target's row (TableWrite.returning).  PostgreSQL's `*` adds
 *     the items' columns, and an item's column names one arbitrary matching row: both
 *     are refused (0A000, write_from_returning()).
 */
#include "adapter-sql-internal.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* `SELECT list FROM from WHERE where` in x->sel (list NULL: `SELECT NULL`). */
static PgQuery__Node *select_of(struct exists_node *x, PgQuery__Node **list, size_t n_list,
                                PgQuery__Node **from, size_t n_from, PgQuery__Node *where,
                                PgQuery__WithClause *with)
{
        x->rt = (PgQuery__ResTarget)PG_QUERY__RES_TARGET__INIT;
        x->null = (PgQuery__AConst)PG_QUERY__A__CONST__INIT;
        x->rtn = x->nulln = x->seln = (PgQuery__Node)PG_QUERY__NODE__INIT;
        x->sel = (PgQuery__SelectStmt)PG_QUERY__SELECT_STMT__INIT;
        x->null.isnull = true;
        x->null.location = -1;
        x->nulln.node_case = PG_QUERY__NODE__NODE_A_CONST;
        x->nulln.a_const = &x->null;
        x->rt.val = &x->nulln;
        x->rt.location = -1;
        x->rtn.node_case = PG_QUERY__NODE__NODE_RES_TARGET;
        x->rtn.res_target = &x->rt;
        x->list[0] = &x->rtn;
        x->sel.n_target_list = list ? n_list : 1;
        x->sel.target_list = list ? list : x->list;
        x->sel.n_from_clause = n_from;
        x->sel.from_clause = from;
        x->sel.where_clause = where;
        x->sel.with_clause = with;
        x->sel.op = PG_QUERY__SET_OPERATION__SETOP_NONE;
        x->sel.limit_option = PG_QUERY__LIMIT_OPTION__LIMIT_OPTION_DEFAULT;
        x->seln.node_case = PG_QUERY__NODE__NODE_SELECT_STMT;
        x->seln.select_stmt = &x->sel;
        return &x->seln;
}

/* `type (SELECT list FROM from WHERE where)` in x (EXISTS: list NULL). */
static PgQuery__Node *sublink_of(struct exists_node *x, PgQuery__SubLinkType type,
                                 PgQuery__Node **list, size_t n_list, PgQuery__Node **from,
                                 size_t n_from, PgQuery__Node *where, int location)
{
        x->sl = (PgQuery__SubLink)PG_QUERY__SUB_LINK__INIT;
        x->sln = (PgQuery__Node)PG_QUERY__NODE__INIT;
        x->sl.sub_link_type = type;
        x->sl.subselect = select_of(x, list, n_list, from, n_from, where, NULL);
        x->sl.location = location;
        x->sln.node_case = PG_QUERY__NODE__NODE_SUB_LINK;
        x->sln.sub_link = &x->sl;
        return &x->sln;
}

/* (4) RETURNING * with a FROM list. */
static int returning_star(struct analyzer *a, const struct write_from *wf, PgQuery__Node **list,
                          size_t n_list)
{
        for (size_t i = 0; i < n_list; i++) {
                const PgQuery__Node *n = list[i];
                const PgQuery__ResTarget *t = n && n->node_case == PG_QUERY__NODE__NODE_RES_TARGET
                                                      ? n->res_target
                                                      : NULL;
                const PgQuery__ColumnRef *c = t && t->val &&
                                                      t->val->node_case == PG_QUERY__NODE__NODE_COLUMN_REF
                                                      ? t->val->column_ref
                                                      : NULL;

                if (c && c->n_fields == 1 && c->fields[0]->node_case == PG_QUERY__NODE__NODE_A_STAR)
                        return FAIL_AT(a, c->location, "0A000",
                                       "RETURNING * of %s is not supported: it would list the "
                                       "other tables' columns too; name the target's "
                                       "(RETURNING %s.*)", wf->what, wf->qual);
        }
        return 0;
}

/* (2) The statement over one FROM list, planned and thrown away for its errors; the
 * statement's inputs and references stay as they were.  SET values that are not
 * expressions (DEFAULT, (a, b) = ...) are left to the write's analysis. */
static int from_list_check(struct analyzer *a, const struct write_from *wf, const char *verb,
                           PgQuery__Node *where, PgQuery__WithClause *with, PgQuery__Node **set,
                           size_t n_set, PgQuery__Node **ret, size_t n_ret)
{
        _cleanup_(rel_freep) Coord__Plan__Relation *plan = NULL;
        _cleanup_(scope_done) struct scope cols = { 0 };
        _cleanup_free_ PgQuery__Node **from = calloc(wf->n_items + 1, sizeof(*from));
        _cleanup_free_ PgQuery__Node **list = calloc(n_set + n_ret + 1, sizeof(*list));
        PgQuery__Node tnode = PG_QUERY__NODE__INIT;
        size_t n_inputs = a->stmt->n_inputs, n_refs = a->stmt->n_references, n = 0;
        const char *write_reads = a->write_reads;
        struct exists_node x;
        int r;

        if (!from || !list)
                return analyzer_oom(a);
        tnode.node_case = PG_QUERY__NODE__NODE_RANGE_VAR;
        tnode.range_var = (PgQuery__RangeVar *)wf->target;
        from[0] = &tnode;
        memcpy(from + 1, wf->items, wf->n_items * sizeof(*from));
        for (size_t i = 0; i < n_set; i++) {
                const PgQuery__ResTarget *t = set[i]->node_case == PG_QUERY__NODE__NODE_RES_TARGET
                                                      ? set[i]->res_target
                                                      : NULL;

                if (t && t->val && t->val->node_case != PG_QUERY__NODE__NODE_SET_TO_DEFAULT &&
                    t->val->node_case != PG_QUERY__NODE__NODE_MULTI_ASSIGN_REF)
                        list[n++] = set[i];
        }
        for (size_t i = 0; i < n_ret; i++)
                list[n++] = ret[i];
        a->write_reads = verb;
        r = plan_query(a, select_of(&x, n ? list : NULL, n, from, wf->n_items + 1, where, with),
                       NULL, &plan, &cols);
        a->write_reads = write_reads;
        a->stmt->n_inputs = n_inputs;
        a->stmt->n_references = n_refs;
        return r;
}

int write_from_begin(struct analyzer *a, struct write_from *wf, const char *what, const char *verb,
                     const PgQuery__RangeVar *target, PgQuery__Node **items, size_t n_items,
                     PgQuery__Node *where, PgQuery__WithClause *with, PgQuery__Node **set,
                     size_t n_set, PgQuery__Node **ret, size_t n_ret, PgQuery__Node **ret_where)
{
        int r;

        *wf = (struct write_from){ .what = what, .target = target, .items = items,
                                   .n_items = n_items, .cond = where };
        wf->qual = target->alias && target->alias->aliasname && target->alias->aliasname[0]
                           ? target->alias->aliasname
                           : target->relname;
        r = returning_star(a, wf, ret, n_ret);
        if (r >= 0)
                r = from_list_check(a, wf, verb, where, with, set, n_set, ret, n_ret);
        if (r < 0)
                return r;
        *ret_where = sublink_of(&wf->exists, PG_QUERY__SUB_LINK_TYPE__EXISTS_SUBLINK, NULL, 0,
                                items, n_items, where, -1);
        return 0;
}

int write_from_refusal(struct analyzer *a, const struct write_from *wf, int r)
{
        unsigned pos = a->err ? a->err->position : 0;

        if (r >= 0 || !a->err || strcmp(a->err->sqlstate, "0A000") != 0 ||
            strncmp(a->err->message, "a subquery may refer", 20) != 0)
                return r;
        r = FAIL(a, "0A000", "%s is supported only when its WHERE relates the target to the "
                 "other tables by equalities (target.column = other.column) joined by AND",
                 wf->what);
        a->err->position = pos;
        row_error_hint(a->err, "Conditions on the target alone or on the other tables alone "
                       "may be added with AND.");
        return r;
}

int write_from_returning(struct analyzer *a, const struct write_from *wf, int r)
{
        /* (2) The names resolved over the whole list: this one is an item's. */
        if (r >= 0 || !a->err ||
            (strcmp(a->err->sqlstate, "42703") != 0 && strcmp(a->err->sqlstate, "42P01") != 0))
                return r;
        return FAIL(a, "0A000", "RETURNING of %s may name only the target's columns", wf->what);
}

/* ---- (3) UPDATE ... FROM: the items' columns in a SET value. ---- */

struct ref_walk {
        struct analyzer *a;
        const struct write_from *wf;
        const struct sql_relation *rel;
};

/* Is the column reference c one of an item's (2)? */
static bool ref_is_item(const struct ref_walk *w, const PgQuery__ColumnRef *c)
{
        const PgQuery__Node *name = c->n_fields ? c->fields[c->n_fields - 1] : NULL;
        const PgQuery__Node *qual = c->n_fields >= 2 ? c->fields[c->n_fields - 2] : NULL;

        if (!name || name->node_case != PG_QUERY__NODE__NODE_STRING)
                return false;
        if (qual)
                return qual->node_case != PG_QUERY__NODE__NODE_STRING ||
                       strcmp(qual->string->sval, w->wf->qual) != 0;
        for (size_t i = 0; i < w->rel->n_columns; i++)
                if (strcmp(w->rel->columns[i].name, name->string->sval) == 0)
                        return false;
        return true;
}

/* *slot, an item's column reference, becomes `(SELECT it FROM items WHERE cond)`. */
static int ref_replace(struct ref_walk *w, PgQuery__Node **slot)
{
        PgQuery__ResTarget rt = PG_QUERY__RES_TARGET__INIT;
        PgQuery__Node rtn = PG_QUERY__NODE__INIT, *list[1] = { &rtn }, *sub, *copy;
        int location = (*slot)->column_ref->location;
        struct exists_node x;
        uint8_t *buf;
        size_t len;

        rt.val = *slot;
        rt.location = location;
        rtn.node_case = PG_QUERY__NODE__NODE_RES_TARGET;
        rtn.res_target = &rt;
        sub = sublink_of(&x, PG_QUERY__SUB_LINK_TYPE__EXPR_SUBLINK, list, 1, w->wf->items,
                         w->wf->n_items, w->wf->cond, location);
        len = pg_query__node__get_packed_size(sub);
        buf = malloc(len ? len : 1);
        if (!buf)
                return analyzer_oom(w->a);
        pg_query__node__pack(sub, buf);
        copy = pg_query__node__unpack(NULL, len, buf);
        free(buf);
        if (!copy)
                return analyzer_oom(w->a);
        pg_query__node__free_unpacked(*slot, NULL);
        *slot = copy;
        return 0;
}

/* Every item's column reference under *slot replaced (ref_replace()). */
static int refs_walk(struct ref_walk *w, ProtobufCMessage **slot, unsigned depth)
{
        const ProtobufCMessageDescriptor *d = (*slot)->descriptor;
        int r = 0;

        if (depth > 4 * ANALYZE_MAX_DEPTH)      /* a parse node or three per expression */
                return FAIL(w->a, "54001", "expression nesting exceeds %d levels",
                            ANALYZE_MAX_DEPTH);
        if (d == &pg_query__node__descriptor) {
                PgQuery__Node *n = (PgQuery__Node *)*slot;

                if (n->node_case == PG_QUERY__NODE__NODE_COLUMN_REF && ref_is_item(w, n->column_ref))
                        return ref_replace(w, (PgQuery__Node **)slot);
        }
        for (unsigned i = 0; r >= 0 && i < d->n_fields; i++) {
                const ProtobufCFieldDescriptor *f = &d->fields[i];
                char *field = (char *)*slot + f->offset;

                if (f->type != PROTOBUF_C_TYPE_MESSAGE)
                        continue;
                if (f->label == PROTOBUF_C_LABEL_REPEATED) {
                        size_t n = *(const size_t *)((const char *)*slot + f->quantifier_offset);
                        ProtobufCMessage **v = *(ProtobufCMessage ***)field;

                        for (size_t k = 0; r >= 0 && k < n; k++)
                                if (v[k])
                                        r = refs_walk(w, &v[k], depth + 1);
                        continue;
                }
                if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
                    *(const uint32_t *)((const char *)*slot + f->quantifier_offset) != f->id)
                        continue;
                if (*(ProtobufCMessage **)field)
                        r = refs_walk(w, (ProtobufCMessage **)field, depth + 1);
        }
        return r;
}

int write_from_value(struct analyzer *a, const struct write_from *wf, const struct sql_relation *rel,
                     const PgQuery__Node *val, PgQuery__Node **ret)
{
        struct ref_walk w = { .a = a, .wf = wf, .rel = rel };
        PgQuery__Node *copy;
        uint8_t *buf;
        size_t len;
        int r;

        if (has_sublink(&val->base))
                return FAIL(a, "0A000", "subqueries in the SET values of %s are not supported",
                            wf->what);
        len = pg_query__node__get_packed_size(val);
        buf = malloc(len ? len : 1);
        if (!buf)
                return analyzer_oom(a);
        pg_query__node__pack(val, buf);
        copy = pg_query__node__unpack(NULL, len, buf);
        free(buf);
        if (!copy)
                return analyzer_oom(a);
        r = refs_walk(&w, (ProtobufCMessage **)&copy, 0);
        if (r < 0) {
                pg_query__node__free_unpacked(copy, NULL);
                return r;
        }
        *ret = copy;
        return 0;
}
