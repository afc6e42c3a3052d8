/* adapter-sql-build.c -- plan builders: Relations and Exprs from their parts, sets of ids,
 * kept names and plan copies (adapter-sql-internal.h).
 *
 * Builders that take children consume them even when they fail (adapter-sql.c note 5). */
#include "adapter-sql-internal.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- Plan builders (adapter-sql.c note 5). ---- */

void expr_free(Coord__Plan__Expr *e)
{
        if (e)
                coord__plan__expr__free_unpacked(e, NULL);
}

void expr_freep(Coord__Plan__Expr **e)
{
        expr_free(*e);
        *e = NULL;
}

void rel_free(Coord__Plan__Relation *r)
{
        if (r)
                coord__plan__relation__free_unpacked(r, NULL);
}

void rel_freep(Coord__Plan__Relation **r)
{
        rel_free(*r);
        *r = NULL;
}

static Coord__Plan__Expr *expr_new(int type)
{
        Coord__Plan__Expr *e = malloc(sizeof(*e));

        if (!e)
                return NULL;
        coord__plan__expr__init(e);
        e->type = (Coord__Plan__Type)type;
        return e;
}

Coord__Plan__Expr *expr_column(int type, uint32_t index)
{
        Coord__Plan__Expr *e = expr_new(type);

        if (!e)
                return NULL;
        e->kind_case = COORD__PLAN__EXPR__KIND_COLUMN;
        e->column = index;
        return e;
}

/* A literal holding a copy of the datum. */
Coord__Plan__Expr *expr_literal(int type, const struct row_datum *d)
{
        Coord__Plan__Expr *e = expr_new(type);
        Coord__Plan__Datum *lit = malloc(sizeof(*lit));

        if (!e || !lit)
                goto fail;
        coord__plan__datum__init(lit);
        switch (d->kind) {
        case ROW_KIND_NULL:
                lit->value_case = COORD__PLAN__DATUM__VALUE_NULL_VALUE;
                lit->null_value = true;
                break;
        case ROW_KIND_BOOL:
                lit->value_case = COORD__PLAN__DATUM__VALUE_BOOL_VALUE;
                lit->bool_value = d->b;
                break;
        case ROW_KIND_INT:
                lit->value_case = COORD__PLAN__DATUM__VALUE_INT_VALUE;
                lit->int_value = d->i;
                break;
        case ROW_KIND_TEXT:
                lit->value_case = COORD__PLAN__DATUM__VALUE_TEXT_VALUE;
                lit->text_value.data = malloc(d->text.len ? d->text.len : 1);
                if (!lit->text_value.data)
                        goto fail;
                if (d->text.len)
                        memcpy(lit->text_value.data, d->text.ptr, d->text.len);
                lit->text_value.len = d->text.len;
                break;
        case ROW_KIND_NUMERIC: {
                char buf[ROW_TEXT_SCRATCH];

                row_numeric_format(d, buf);
                lit->value_case = COORD__PLAN__DATUM__VALUE_NUMERIC_VALUE;
                lit->numeric_value = strdup(buf);
                if (!lit->numeric_value)
                        goto fail;
                break;
        }
        default:
                assert(!"bad datum kind");
                goto fail;
        }
        e->kind_case = COORD__PLAN__EXPR__KIND_LITERAL;
        e->literal = lit;
        return e;
fail:
        if (lit)
                coord__plan__datum__free_unpacked(lit, NULL);
        free(e);
        return NULL;
}

/* A call consuming args[0..n) whether it succeeds or not. */
Coord__Plan__Expr *expr_call(int type, Coord__Plan__Func func, Coord__Plan__Expr **args,
                                    size_t n)
{
        Coord__Plan__Expr *e = expr_new(type);
        Coord__Plan__Call *c = malloc(sizeof(*c));
        Coord__Plan__Expr **a = n ? malloc(n * sizeof(*a)) : NULL;

        if (!e || !c || (n && !a)) {
                for (size_t i = 0; i < n; i++)
                        expr_free(args[i]);
                free(e);
                free(c);
                free(a);
                return NULL;
        }
        coord__plan__call__init(c);
        c->func = func;
        c->n_args = n;
        c->args = a;
        for (size_t i = 0; i < n; i++)
                a[i] = args[i];
        e->kind_case = COORD__PLAN__EXPR__KIND_CALL;
        e->call = c;
        return e;
}

Coord__Plan__Relation *rel_new(void)
{
        Coord__Plan__Relation *r = malloc(sizeof(*r));

        if (r)
                coord__plan__relation__init(r);
        return r;
}

/* A Relation of oneof kind `kind` holding a fresh empty node of that kind, or NULL. A kind's
 * value is its member's field number (protobuf-c), so the Relation descriptor names the
 * member's offset and message type: one allocation path for every node kind. */
Coord__Plan__Relation *rel_of(Coord__Plan__Relation__KindCase kind)
{
        const ProtobufCFieldDescriptor *f =
                protobuf_c_message_descriptor_get_field(&coord__plan__relation__descriptor,
                                                        (unsigned)kind);
        const ProtobufCMessageDescriptor *d = f ? f->descriptor : NULL;
        Coord__Plan__Relation *r;
        void *node;

        assert(d && f->type == PROTOBUF_C_TYPE_MESSAGE);
        r = rel_new();
        node = r ? malloc(d->sizeof_message) : NULL;
        if (!node) {
                free(r);
                return NULL;
        }
        protobuf_c_message_init(d, node);
        memcpy((char *)r + f->offset, &node, sizeof(node));
        r->kind_case = kind;
        return r;
}

Coord__Plan__Relation *rel_get(const struct sql_relation *src)
{
        Coord__Plan__Type *types = malloc((src->n_columns ? src->n_columns : 1) * sizeof(*types));
        Coord__Plan__Relation *r = types ? rel_of(COORD__PLAN__RELATION__KIND_GET) : NULL;

        if (!r) {
                free(types);
                return NULL;
        }
        r->get->id = src->id;
        r->get->n_column_types = src->n_columns;
        r->get->column_types = types;
        for (size_t i = 0; i < src->n_columns; i++)
                types[i] = (Coord__Plan__Type)src->columns[i].type;
        return r;
}

/* One row with no columns: the input of a SELECT without FROM. */
Coord__Plan__Relation *rel_unit(void)
{
        Coord__Plan__Update **rows = malloc(sizeof(*rows));

        if (!rows)
                return NULL;
        rows[0] = update_new(NULL, 0);
        if (!rows[0]) {
                free(rows);
                return NULL;
        }
        return rel_constant(NULL, 0, rows, 1);
}

/* Filter(input, [pred]); consumes both. */
Coord__Plan__Relation *rel_filter(Coord__Plan__Relation *input, Coord__Plan__Expr *pred)
{
        Coord__Plan__Expr **preds = malloc(sizeof(*preds));

        if (!preds) {
                rel_free(input);
                expr_free(pred);
                return NULL;
        }
        preds[0] = pred;
        return rel_filter_n(input, preds, 1);
}

/* Map(input, exprs); consumes input and the exprs array with its contents. */
Coord__Plan__Relation *rel_map(Coord__Plan__Relation *input, Coord__Plan__Expr **exprs,
                                      size_t n)
{
        Coord__Plan__Relation *r = rel_of(COORD__PLAN__RELATION__KIND_MAP);

        if (!r) {
                rel_free(input);
                for (size_t i = 0; i < n; i++)
                        expr_free(exprs[i]);
                free(exprs);
                return NULL;
        }
        r->map->input = input;
        r->map->n_exprs = n;
        r->map->exprs = exprs;
        return r;
}

/* Project(input, outputs); consumes input and the outputs array. */
Coord__Plan__Relation *rel_project(Coord__Plan__Relation *input, uint32_t *outputs,
                                          size_t n)
{
        Coord__Plan__Relation *r = rel_of(COORD__PLAN__RELATION__KIND_PROJECT);

        if (!r) {
                rel_free(input);
                free(outputs);
                return NULL;
        }
        r->project->input = input;
        r->project->n_outputs = n;
        r->project->outputs = outputs;
        return r;
}

/* ---- Helpers: sets of ids, kept names, plan copies. ---- */

/* Insert id into a sorted array without duplicates. */
int add_sorted(struct analyzer *a, uint64_t **arr, size_t *n, uint64_t id)
{
        size_t i = 0;
        uint64_t *p;

        while (i < *n && (*arr)[i] < id)
                i++;
        if (i < *n && (*arr)[i] == id)
                return 0;
        p = realloc(*arr, (*n + 1) * sizeof(*p));
        if (!p)
                return analyzer_oom(a);
        memmove(p + i + 1, p + i, (*n - i) * sizeof(*p));
        p[i] = id;
        *arr = p;
        (*n)++;
        return 0;
}

int add_reference(struct analyzer *a, uint64_t id)
{
        return add_sorted(a, &a->stmt->references, &a->stmt->n_references, id);
}

/* Keep a malloc'ed string until the analysis ends (takes s, also on failure). */
int keep_string(struct analyzer *a, char *s, const char **ret)
{
        char **p;

        if (!s)
                return analyzer_oom(a);
        p = realloc(a->strings, (a->n_strings + 1) * sizeof(*p));
        if (!p) {
                free(s);
                return analyzer_oom(a);
        }
        a->strings = p;
        p[a->n_strings++] = s;
        *ret = s;
        return 0;
}

int keep_stringf(struct analyzer *a, const char **ret, const char *fmt, ...)
{
        char *s = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        return keep_string(a, r < 0 ? NULL : s, ret);
}

/* Structural equality: the protobuf encoding of a tree is a function of the tree. */
bool expr_equal(const Coord__Plan__Expr *x, const Coord__Plan__Expr *y)
{
        size_t lx = coord__plan__expr__get_packed_size(x);
        size_t ly = coord__plan__expr__get_packed_size(y);
        uint8_t sx[256], sy[256];
        uint8_t *bx = lx <= sizeof(sx) ? sx : malloc(lx), *by = ly <= sizeof(sy) ? sy : malloc(ly);
        bool eq = false;

        if (lx == ly && bx && by) {
                coord__plan__expr__pack(x, bx);
                coord__plan__expr__pack(y, by);
                eq = memcmp(bx, by, lx) == 0;
        }
        if (bx != sx)
                free(bx);
        if (by != sy)
                free(by);
        return eq;
}

/* A deep copy of a plan tree through its encoding (a view's stored plan, inlined). */
static void *plan_copy(const ProtobufCMessage *m)
{
        size_t len = protobuf_c_message_get_packed_size(m);
        uint8_t *buf = malloc(len ? len : 1);
        ProtobufCMessage *c;

        if (!buf)
                return NULL;
        protobuf_c_message_pack(m, buf);
        c = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
        free(buf);
        return c;
}

Coord__Plan__Relation *rel_copy(const Coord__Plan__Relation *r)
{
        return plan_copy(&r->base);
}

Coord__Plan__Expr *expr_copy(const Coord__Plan__Expr *e)
{
        return plan_copy(&e->base);
}

/* ---- More plan builders. ---- */

Coord__Plan__Relation *rel_get_id(uint64_t id, const struct sql_column *cols, size_t n)
{
        struct sql_relation src = { .id = id, .columns = cols, .n_columns = n };

        return rel_get(&src);
}

/* Filter(input, preds[0..n)); consumes input and the preds array with its contents. */
Coord__Plan__Relation *rel_filter_n(Coord__Plan__Relation *input, Coord__Plan__Expr **preds,
                                           size_t n)
{
        Coord__Plan__Relation *r = rel_of(COORD__PLAN__RELATION__KIND_FILTER);

        if (!r) {
                rel_free(input);
                for (size_t i = 0; i < n; i++)
                        expr_free(preds[i]);
                free(preds);
                return NULL;
        }
        r->filter->input = input;
        r->filter->n_predicates = n;
        r->filter->predicates = preds;
        return r;
}

/* Join(left, right) without keys; consumes both. */
Coord__Plan__Relation *rel_join(Coord__Plan__Relation *left, Coord__Plan__Relation *right)
{
        Coord__Plan__Relation *r = left && right ? rel_of(COORD__PLAN__RELATION__KIND_JOIN) : NULL;

        if (!r) {
                rel_free(left);
                rel_free(right);
                return NULL;
        }
        r->join->left = left;
        r->join->right = right;
        return r;
}

/* Union(inputs[0..n)); consumes the array and its contents. */
Coord__Plan__Relation *rel_union(Coord__Plan__Relation **inputs, size_t n)
{
        Coord__Plan__Relation *r = rel_of(COORD__PLAN__RELATION__KIND_UNION);

        if (!r) {
                for (size_t i = 0; i < n; i++)
                        rel_free(inputs[i]);
                free(inputs);
                return NULL;
        }
        r->union_->n_inputs = n;
        r->union_->inputs = inputs;
        return r;
}

/* Distinct compares whole rows by bytes; rows with a numeric column are grouped by
 * value instead (1.5 = 1.50): a Reduce on every column without aggregates, which the
 * engine keys by value (controller-dataflow-ops.c, struct group raw_head). */
static bool has_numeric_column(const Coord__Plan__Relation *input)
{
        Coord__Plan__Type *t = NULL;
        size_t n = 0;
        bool num = false;

        if (rel_types(input, &t, &n) < 0)
                return false;
        for (size_t i = 0; i < n; i++)
                num |= (int)t[i] == ROW_TYPE_NUMERIC;
        free(t);
        return num;
}

/* Distinct(input), Negate(input) or Threshold(input) (proto/plan.proto); consumes input. */
static Coord__Plan__Relation *rel_unary(Coord__Plan__Relation *input,
                                        Coord__Plan__Relation__KindCase kind)
{
        Coord__Plan__Relation *r = input ? rel_of(kind) : NULL;

        if (!r) {
                rel_free(input);
                return NULL;
        }
        if (kind == COORD__PLAN__RELATION__KIND_DISTINCT)
                r->distinct->input = input;
        else if (kind == COORD__PLAN__RELATION__KIND_NEGATE)
                r->negate->input = input;
        else
                r->threshold->input = input;
        return r;
}

Coord__Plan__Relation *rel_distinct(Coord__Plan__Relation *input)
{
        if (input && has_numeric_column(input)) {
                Coord__Plan__Type *t = NULL;
                size_t n = 0;

                if (rel_types(input, &t, &n) < 0) {
                        rel_free(input);
                        return NULL;
                }
                free(t);
                return rel_reduce(input, n, NULL, NULL, NULL, 0);
        }
        return rel_unary(input, COORD__PLAN__RELATION__KIND_DISTINCT);
}

Coord__Plan__Relation *rel_negate(Coord__Plan__Relation *input)
{
        return rel_unary(input, COORD__PLAN__RELATION__KIND_NEGATE);
}

Coord__Plan__Relation *rel_threshold(Coord__Plan__Relation *input)
{
        return rel_unary(input, COORD__PLAN__RELATION__KIND_THRESHOLD);
}

void topk_spec_done(struct topk_spec *tk)
{
        for (size_t i = 0; i < tk->n_order; i++)
                coord__plan__sort_key__free_unpacked(tk->order[i], NULL);
        free(tk->order);
        tk->order = NULL;
        tk->n_order = 0;
}

Coord__Plan__Relation *rel_topk(Coord__Plan__Relation *input, struct topk_spec *tk)
{
        Coord__Plan__Relation *r = input ? rel_of(COORD__PLAN__RELATION__KIND_TOP_K) : NULL;
        Coord__Plan__TopK *k;

        if (!r) {
                rel_free(input);
                topk_spec_done(tk);
                return NULL;
        }
        k = r->top_k;
        k->input = input;
        k->order = TAKE_PTR(tk->order);
        k->n_order = tk->n_order;
        tk->n_order = 0;
        k->has_limit = tk->has_limit;
        k->limit = tk->has_limit ? tk->limit : 0;
        k->offset = tk->offset;
        return r;
}

/* A constant collection; consumes types and rows (arrays and contents). */
Coord__Plan__Relation *rel_constant(Coord__Plan__Type *types, size_t n_types,
                                           Coord__Plan__Update **rows, size_t n_rows)
{
        Coord__Plan__Relation *r = rel_of(COORD__PLAN__RELATION__KIND_CONSTANT);

        if (!r) {
                free(types);
                for (size_t i = 0; i < n_rows; i++)
                        coord__plan__update__free_unpacked(rows[i], NULL);
                free(rows);
                return NULL;
        }
        r->constant->n_column_types = n_types;
        r->constant->column_types = types;
        r->constant->n_rows = n_rows;
        r->constant->rows = rows;
        return r;
}

/* One update holding the encoding of datums. */
Coord__Plan__Update *update_new(const struct row_datum *row, size_t n)
{
        Coord__Plan__Update *u = malloc(sizeof(*u));
        uint8_t *bytes = NULL;
        size_t len = 0;

        if (!u)
                return NULL;
        if (row_encode(row, n, &bytes, &len) < 0) {
                free(u);
                return NULL;
        }
        coord__plan__update__init(u);
        u->row.data = bytes;
        u->row.len = len;
        u->diff = 1;
        return u;
}

/* The output column types of a plan the planner built (so well formed). */
int rel_types(const Coord__Plan__Relation *r, Coord__Plan__Type **ret, size_t *ret_n)
{
        Coord__Plan__Type *in = NULL, *out = NULL;
        size_t n_in = 0, n = 0;
        int rc = 0;

        switch (r->kind_case) {
        case COORD__PLAN__RELATION__KIND_GET:
                n = r->get->n_column_types;
                out = malloc((n ? n : 1) * sizeof(*out));
                if (out && n)
                        memcpy(out, r->get->column_types, n * sizeof(*out));
                break;
        case COORD__PLAN__RELATION__KIND_CONSTANT:
                n = r->constant->n_column_types;
                out = malloc((n ? n : 1) * sizeof(*out));
                if (out && n)
                        memcpy(out, r->constant->column_types, n * sizeof(*out));
                break;
        case COORD__PLAN__RELATION__KIND_FILTER:
                return rel_types(r->filter->input, ret, ret_n);
        case COORD__PLAN__RELATION__KIND_DISTINCT:
                return rel_types(r->distinct->input, ret, ret_n);
        case COORD__PLAN__RELATION__KIND_TOP_K:
                return rel_types(r->top_k->input, ret, ret_n);
        case COORD__PLAN__RELATION__KIND_NEGATE:
                return rel_types(r->negate->input, ret, ret_n);
        case COORD__PLAN__RELATION__KIND_THRESHOLD:
                return rel_types(r->threshold->input, ret, ret_n);
        case COORD__PLAN__RELATION__KIND_UNION:
                if (!r->union_->n_inputs)
                        return -EINVAL;
                return rel_types(r->union_->inputs[0], ret, ret_n);
        case COORD__PLAN__RELATION__KIND_MAP:
                rc = rel_types(r->map->input, &in, &n_in);
                if (rc < 0)
                        return rc;
                n = n_in + r->map->n_exprs;
                out = realloc(in, (n ? n : 1) * sizeof(*out));
                if (!out)
                        break;
                in = NULL;
                for (size_t i = 0; i < r->map->n_exprs; i++)
                        out[n_in + i] = r->map->exprs[i]->type;
                break;
        case COORD__PLAN__RELATION__KIND_PROJECT:
                rc = rel_types(r->project->input, &in, &n_in);
                if (rc < 0)
                        return rc;
                n = r->project->n_outputs;
                out = malloc((n ? n : 1) * sizeof(*out));
                for (size_t i = 0; out && i < n; i++)
                        out[i] = r->project->outputs[i] < n_in ? in[r->project->outputs[i]]
                                                                : COORD__PLAN__TYPE__TYPE_UNSPECIFIED;
                break;
        case COORD__PLAN__RELATION__KIND_JOIN: {
                Coord__Plan__Type *rt = NULL;
                size_t n_rt = 0;

                rc = rel_types(r->join->left, &in, &n_in);
                if (rc >= 0)
                        rc = rel_types(r->join->right, &rt, &n_rt);
                if (rc < 0) {
                        free(in);
                        return rc;
                }
                n = n_in + n_rt;
                out = malloc((n ? n : 1) * sizeof(*out));
                if (out) {
                        memcpy(out, in, n_in * sizeof(*out));
                        memcpy(out + n_in, rt, n_rt * sizeof(*out));
                }
                free(rt);
                break;
        }
        case COORD__PLAN__RELATION__KIND_REDUCE:
                rc = rel_types(r->reduce->input, &in, &n_in);
                if (rc < 0)
                        return rc;
                n = r->reduce->n_group_keys + r->reduce->n_aggregates;
                out = malloc((n ? n : 1) * sizeof(*out));
                for (size_t i = 0; out && i < r->reduce->n_group_keys; i++)
                        out[i] = r->reduce->group_keys[i] < n_in ? in[r->reduce->group_keys[i]]
                                                                  : COORD__PLAN__TYPE__TYPE_UNSPECIFIED;
                for (size_t i = 0; out && i < r->reduce->n_aggregates; i++)
                        out[r->reduce->n_group_keys + i] = r->reduce->aggregates[i]->type;
                break;
        default:
                return -EINVAL;
        }
        free(in);
        if (!out)
                return -ENOMEM;
        *ret = out;
        *ret_n = n;
        return 0;
}

bool rel_is_empty(const Coord__Plan__Relation *r)
{
        return r->kind_case == COORD__PLAN__RELATION__KIND_CONSTANT && r->constant->n_rows == 0;
}

/* Replace *pr by an empty constant of its own column types. */
int rel_make_empty(struct analyzer *a, Coord__Plan__Relation **pr)
{
        Coord__Plan__Type *types = NULL;
        size_t n = 0;
        Coord__Plan__Relation *e;
        int r = rel_types(*pr, &types, &n);

        if (r < 0)
                return r == -ENOMEM ? analyzer_oom(a) : FAIL(a, "XX000", "cannot type a plan");
        e = rel_constant(types, n, NULL, 0);
        if (!e)
                return analyzer_oom(a);
        rel_free(*pr);
        *pr = e;
        return 0;
}

/* Map + Project over `plan` to cast the int4 columns listed in to[] to int8. */
int rel_cast_columns(struct analyzer *a, Coord__Plan__Relation **plan, const int *from,
                            const int *to, size_t n)
{
        _cleanup_free_ Coord__Plan__Expr **exprs = NULL;
        _cleanup_free_ uint32_t *outputs = NULL;
        size_t m = 0;

        exprs = calloc(n ? n : 1, sizeof(*exprs));
        outputs = calloc(n ? n : 1, sizeof(*outputs));
        if (!exprs || !outputs)
                return analyzer_oom(a);
        for (size_t i = 0; i < n; i++) {
                Coord__Plan__Expr *c;

                outputs[i] = (uint32_t)i;
                if (from[i] == to[i])
                        continue;
                c = expr_column(from[i], (uint32_t)i);
                exprs[m] = c ? expr_call(to[i], COORD__PLAN__FUNC__FUNC_CAST, &c, 1) : NULL;
                if (!exprs[m]) {
                        for (size_t k = 0; k < m; k++)
                                expr_free(exprs[k]);
                        return analyzer_oom(a);
                }
                outputs[i] = (uint32_t)(n + m++);
        }
        if (!m)
                return 0;
        *plan = rel_map(*plan, TAKE_PTR(exprs), m);
        if (*plan)
                *plan = rel_project(*plan, TAKE_PTR(outputs), n);
        return *plan ? 0 : analyzer_oom(a);
}
