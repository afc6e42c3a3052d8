/* controller-dataflow-build.c -- building a dataflow (dataflow_new()): the plan is
 * validated operator by operator (inputs present, columns and keys in range, types
 * that agree: XX000 for a malformed plan, 0A000 for what is not supported) and
 * flattened into the nodes in post-order (1), the inputs numbered by ascending id.
 *
 * Contract: controller-dataflow.h; what the engine's files share:
 * controller-dataflow-internal.h.  The notes are numbered across the engine
 * (controller-dataflow.c lists where each stands); none stands here.
 */
#include "controller-dataflow-internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PLAN_DEPTH 512

/* ---- Building. ---- */

static int invalid(struct row_error *err, const char *what)
{
        return row_error_set(err, -EINVAL, "XX000", "invalid plan: %s", what);
}

static int types_from_plan(const Coord__Plan__Type *pt, size_t n, enum row_type **ret,
                           struct row_error *err)
{
        enum row_type *t;

        if (n > ROW_MAX_COLUMNS)
                return invalid(err, "too many columns");
        t = malloc((n ? n : 1) * sizeof(*t));
        if (!t)
                return row_error_oom(err);
        for (size_t i = 0; i < n; i++) {
                if (!row_type_valid((int)pt[i])) {
                        free(t);
                        return invalid(err, "column of an unknown type");
                }
                t[i] = (enum row_type)pt[i];
        }
        *ret = t;
        return 0;
}

static int types_copy(const enum row_type *src, size_t n, enum row_type **ret,
                      struct row_error *err)
{
        enum row_type *t = malloc((n ? n : 1) * sizeof(*t));

        if (!t)
                return row_error_oom(err);
        if (n)
                memcpy(t, src, n * sizeof(*t));
        *ret = t;
        return 0;
}

static bool is_int(enum row_type t)
{
        return t == ROW_TYPE_INT4 || t == ROW_TYPE_INT8;
}

/* Append a fresh node; returns its index.  Pointers into df->nodes are invalidated. */
static int node_add(struct dataflow *df, enum node_kind kind, const Coord__Plan__Relation *rel,
                    size_t *ret, struct row_error *err)
{
        if (df->n_nodes == df->cap_nodes) {
                /* From 2: most plans have two or three nodes, a node is 632 bytes, and a
                 * bulk install holds 100,000 dataflows (dataflow_new() trims the rest). */
                size_t cap = df->cap_nodes ? 2 * df->cap_nodes : 2;
                struct node *n = realloc(df->nodes, cap * sizeof(*n));

                if (!n)
                        return row_error_oom(err);
                df->nodes = n;
                df->cap_nodes = cap;
        }
        df->nodes[df->n_nodes] = (struct node){ .kind = kind, .rel = rel,
                                                .out = EVAL_BATCH_INIT,
                                                .arena = ROW_ARENA_INIT };
        bmap_init(&df->nodes[df->n_nodes].map, sizeof(struct dis_ent));
        bmap_init(&df->nodes[df->n_nodes].values, sizeof(struct vent));
        for (int s = 0; s < 2; s++) {
                bmap_init(&df->nodes[df->n_nodes].side[s].keys, sizeof(struct kgrp));
                bmap_init(&df->nodes[df->n_nodes].side[s].rows, sizeof(struct jrow));
        }
        *ret = df->n_nodes++;
        return 0;
}

static int input_add(struct dataflow *df, const Coord__Plan__Get *g, size_t *ret,
                     struct row_error *err)
{
        struct input *in;
        size_t i;

        for (i = 0; i < df->n_inputs; i++)
                if (df->inputs[i].id == g->id) {
                        in = &df->inputs[i];
                        if (in->n_types != g->n_column_types ||
                            (g->n_column_types &&
                             memcmp(in->types, g->column_types,
                                    g->n_column_types * sizeof(*g->column_types)) != 0))
                                return invalid(err, "Gets of one collection with different "
                                                    "columns");
                        *ret = i;
                        return 0;
                }
        in = realloc(df->inputs, (df->n_inputs + 1) * sizeof(*in));
        if (!in)
                return row_error_oom(err);
        df->inputs = in;
        in = &df->inputs[df->n_inputs];
        *in = (struct input){ .id = g->id, .types = g->column_types,
                              .n_types = g->n_column_types, .pending = EVAL_BATCH_INIT,
                              .sorted = true };
        if (types_from_plan(g->column_types, g->n_column_types, &in->rtypes, err) < 0)
                return -EINVAL;
        *ret = df->n_inputs++;
        return 0;
}

static bool is_linear(const Coord__Plan__Relation *r)
{
        return (r->kind_case == COORD__PLAN__RELATION__KIND_FILTER && r->filter) ||
               (r->kind_case == COORD__PLAN__RELATION__KIND_MAP && r->map) ||
               (r->kind_case == COORD__PLAN__RELATION__KIND_PROJECT && r->project);
}

static const Coord__Plan__Relation *linear_input(const Coord__Plan__Relation *r)
{
        switch (r->kind_case) {
        case COORD__PLAN__RELATION__KIND_FILTER:
                return r->filter->input;
        case COORD__PLAN__RELATION__KIND_MAP:
                return r->map->input;
        default:
                return r->project->input;
        }
}

static int build(struct dataflow *df, const Coord__Plan__Relation *rel, unsigned depth,
                 size_t *ret, struct row_error *err);

static int build_reduce(struct dataflow *df, const Coord__Plan__Relation *rel, unsigned depth,
                        size_t *ret, struct row_error *err)
{
        const Coord__Plan__Reduce *rd = rel->reduce;
        size_t c, me, arity, in_arity;
        const enum row_type *ct;
        enum row_type *t;
        struct node *n;
        int r;

        r = build(df, rd->input, depth + 1, &c, err);
        if (r < 0)
                return r;
        in_arity = df->nodes[c].arity;
        ct = df->nodes[c].types;
        if (rd->n_group_keys > ROW_MAX_COLUMNS || rd->n_aggregates > ROW_MAX_COLUMNS)
                return invalid(err, "too many columns");
        arity = rd->n_group_keys + rd->n_aggregates;
        t = malloc((arity ? arity : 1) * sizeof(*t));
        if (!t)
                return row_error_oom(err);
        for (size_t i = 0; i < rd->n_group_keys; i++) {
                if (rd->group_keys[i] >= in_arity) {
                        free(t);
                        return invalid(err, "group key column out of range");
                }
                t[i] = ct[rd->group_keys[i]];
        }
        for (size_t i = 0; i < rd->n_aggregates; i++) {
                const Coord__Plan__Aggregate *a = rd->aggregates[i];
                enum row_type want;

                if (!a) {
                        free(t);
                        return invalid(err, "missing aggregate");
                }
                if (a->func != COORD__PLAN__AGG_FUNC__AGG_COUNT_STAR && a->column >= in_arity) {
                        free(t);
                        return invalid(err, "aggregated column out of range");
                }
                switch (a->func) {
                case COORD__PLAN__AGG_FUNC__AGG_COUNT_STAR:
                case COORD__PLAN__AGG_FUNC__AGG_COUNT:
                        want = ROW_TYPE_INT8;
                        break;
                case COORD__PLAN__AGG_FUNC__AGG_SUM:
                        if (ct[a->column] == ROW_TYPE_NUMERIC) {
                                want = ROW_TYPE_NUMERIC;
                                break;
                        }
                        if (!is_int(ct[a->column])) {
                                free(t);
                                return invalid(err, "sum over a column that is not a number");
                        }
                        /* Integers sum to bigint, or to numeric when asked (avg). */
                        want = (int)a->type == ROW_TYPE_NUMERIC ? ROW_TYPE_NUMERIC : ROW_TYPE_INT8;
                        break;
                case COORD__PLAN__AGG_FUNC__AGG_MIN:
                case COORD__PLAN__AGG_FUNC__AGG_MAX:
                        want = ct[a->column];
                        break;
                case COORD__PLAN__AGG_FUNC__AGG_ARRAY_AGG:
                        want = row_type_array_of(ct[a->column]);
                        if (!row_type_valid(want)) {
                                free(t);
                                return invalid(err, "array_agg of an array");
                        }
                        break;
                case COORD__PLAN__AGG_FUNC__AGG_STRING_AGG:
                        if (ct[a->column] != ROW_TYPE_TEXT) {
                                free(t);
                                return invalid(err, "string_agg over a column that is not text");
                        }
                        want = ROW_TYPE_TEXT;
                        break;
                default:
                        free(t);
                        return row_error_set(err, -EINVAL, "0A000",
                                             "aggregate function %d is not supported",
                                             (int)a->func);
                }
                if ((int)a->type != (int)want) {
                        free(t);
                        return invalid(err, "aggregate of the wrong result type");
                }
                t[rd->n_group_keys + i] = want;
        }
        r = node_add(df, NODE_REDUCE, rel, &me, err);
        if (r < 0) {
                free(t);
                return r;
        }
        n = &df->nodes[me];
        n->types = t;
        n->arity = arity;
        n->child[0] = c;
        n->reduce = rd;
        n->in_arity = in_arity;
        bmap_init(&n->map, sizeof(struct group) + rd->n_aggregates * sizeof(struct agg_state));
        n->datums = malloc((in_arity + arity + 1) * sizeof(*n->datums));
        if (!n->datums)
                return row_error_oom(err);
        *ret = me;
        return 0;
}

static int build_join(struct dataflow *df, const Coord__Plan__Relation *rel, unsigned depth,
                      size_t *ret, struct row_error *err)
{
        const Coord__Plan__Join *j = rel->join;
        size_t l, rr, me, la, ra;
        struct node *n;
        int r;

        if (j->n_left_keys != j->n_right_keys)
                return invalid(err, "join keys of different lengths");
        r = build(df, j->left, depth + 1, &l, err);
        if (r < 0)
                return r;
        r = build(df, j->right, depth + 1, &rr, err);
        if (r < 0)
                return r;
        la = df->nodes[l].arity;
        ra = df->nodes[rr].arity;
        if (la + ra > UINT16_MAX)
                return invalid(err, "too many columns");
        for (size_t i = 0; i < j->n_left_keys; i++) {
                enum row_type a, b;

                if (j->left_keys[i] >= la || j->right_keys[i] >= ra)
                        return invalid(err, "join key column out of range");
                a = df->nodes[l].types[j->left_keys[i]];
                b = df->nodes[rr].types[j->right_keys[i]];
                if (a != b && !(is_int(a) && is_int(b)))
                        return invalid(err, "join keys of different types");
        }
        r = node_add(df, NODE_JOIN, rel, &me, err);
        if (r < 0)
                return r;
        n = &df->nodes[me];
        n->child[0] = l;
        n->child[1] = rr;
        n->arity = la + ra;
        n->types = malloc((la + ra ? la + ra : 1) * sizeof(*n->types));
        n->in_arity = la > ra ? la : ra;
        n->datums = malloc((n->in_arity + j->n_left_keys + 1) * sizeof(*n->datums));
        if (!n->types || !n->datums)
                return row_error_oom(err);
        if (la)
                memcpy(n->types, df->nodes[l].types, la * sizeof(*n->types));
        if (ra)
                memcpy(n->types + la, df->nodes[rr].types, ra * sizeof(*n->types));
        n->side[0].key_cols = j->left_keys;
        n->side[1].key_cols = j->right_keys;
        n->side[0].n_keys = n->side[1].n_keys = j->n_left_keys;
        *ret = me;
        return 0;
}

static int build_topk(struct dataflow *df, const Coord__Plan__Relation *rel, unsigned depth,
                      size_t *ret, struct row_error *err)
{
        const Coord__Plan__TopK *tk = rel->top_k;
        size_t c, me;
        struct node *n;
        int r;

        if (tk->n_order > ROW_MAX_COLUMNS)
                return invalid(err, "too many sort keys");
        if (!tk->has_limit && tk->limit)
                return invalid(err, "TopK with a limit but has_limit false");
        r = build(df, tk->input, depth + 1, &c, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < tk->n_order; i++) {
                if (!tk->order[i])
                        return invalid(err, "missing sort key");
                if (tk->order[i]->column >= df->nodes[c].arity)
                        return invalid(err, "sort key column out of range");
                if (!row_type_valid((int)df->nodes[c].types[tk->order[i]->column]))
                        return invalid(err, "sort key of an unknown type");
        }
        r = node_add(df, NODE_TOPK, rel, &me, err);
        if (r < 0)
                return r;
        n = &df->nodes[me];
        n->child[0] = c;
        n->arity = n->in_arity = df->nodes[c].arity;
        bmap_init(&n->values, sizeof(struct top_ent));
        n->datums = malloc((n->in_arity ? n->in_arity : 1) * sizeof(*n->datums));
        if (!n->datums)
                return row_error_oom(err);
        r = types_copy(df->nodes[c].types, n->arity, &n->types, err);
        if (r < 0)
                return r;
        *ret = me;
        return 0;
}

/* A chain of linear operators (Map, Filter, Project) over one input: one node that
 * evaluates the chain. */
static int build_linear(struct dataflow *df, const Coord__Plan__Relation *rel, unsigned depth,
                        size_t *ret, struct row_error *err)
{
        const Coord__Plan__Relation *in = rel;
        struct eval_plan *p = NULL;
        size_t c, me;
        struct node *n;
        int r;

        while (in && is_linear(in))
                in = linear_input(in);
        r = build(df, in, depth + 1, &c, err);
        if (r < 0)
                return r;
        r = eval_chain_new(rel, df->nodes[c].types, df->nodes[c].arity, &p, err);
        if (r < 0)
                return r;
        r = node_add(df, NODE_LINEAR, rel, &me, err);
        if (r < 0) {
                eval_plan_free(p);
                return r;
        }
        n = &df->nodes[me];
        n->plan = p;
        n->child[0] = c;
        n->arity = eval_plan_arity(p);
        r = types_copy(eval_plan_types(p), n->arity, &n->types, err);
        if (r < 0)
                return r;
        *ret = me;
        return 0;
}

static int build_get(struct dataflow *df, const Coord__Plan__Relation *rel, size_t *ret,
                     struct row_error *err)
{
        size_t in = 0, me;
        struct node *n;
        int r;

        if (!rel->get || rel->get->id == 0)
                return invalid(err, "Get without a collection");
        r = input_add(df, rel->get, &in, err);
        if (r < 0)
                return r;
        r = node_add(df, NODE_GET, rel, &me, err);
        if (r < 0)
                return r;
        n = &df->nodes[me];
        n->input = in;
        n->arity = df->inputs[in].n_types;
        r = types_copy(df->inputs[in].rtypes, n->arity, &n->types, err);
        if (r < 0)
                return r;
        *ret = me;
        return 0;
}

static int build_constant(struct dataflow *df, const Coord__Plan__Relation *rel, size_t *ret,
                          struct row_error *err)
{
        const Coord__Plan__Constant *k = rel->constant;
        size_t me;
        struct node *n;
        int r;

        if (!k)
                return invalid(err, "empty Constant");
        r = node_add(df, NODE_CONSTANT, rel, &me, err);
        if (r < 0)
                return r;
        n = &df->nodes[me];
        n->arity = k->n_column_types;
        r = types_from_plan(k->column_types, k->n_column_types, &n->types, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < k->n_rows; i++)
                if (!k->rows[i] || row_check(k->rows[i]->row.data, k->rows[i]->row.len,
                                             n->types, n->arity) < 0)
                        return invalid(err, "constant row does not match its types");
        *ret = me;
        return 0;
}

/* Union: every input of the same columns. */
static int build_union(struct dataflow *df, const Coord__Plan__Relation *rel, unsigned depth,
                       size_t *ret, struct row_error *err)
{
        const Coord__Plan__Union *u = rel->union_;
        size_t *kids, me;
        struct node *n;
        int r;

        if (!u || u->n_inputs == 0)
                return invalid(err, "Union without inputs");
        kids = malloc(u->n_inputs * sizeof(*kids));
        if (!kids)
                return row_error_oom(err);
        for (size_t i = 0; i < u->n_inputs; i++) {
                r = build(df, u->inputs[i], depth + 1, &kids[i], err);
                if (r >= 0 && i > 0 &&
                    (df->nodes[kids[i]].arity != df->nodes[kids[0]].arity ||
                     (df->nodes[kids[0]].arity &&
                      memcmp(df->nodes[kids[i]].types, df->nodes[kids[0]].types,
                             df->nodes[kids[0]].arity * sizeof(enum row_type)) != 0)))
                        r = invalid(err, "Union of inputs with different columns");
                if (r < 0) {
                        free(kids);
                        return r;
                }
        }
        r = node_add(df, NODE_UNION, rel, &me, err);
        if (r < 0) {
                free(kids);
                return r;
        }
        n = &df->nodes[me];
        n->children = kids;
        n->n_children = u->n_inputs;
        n->arity = df->nodes[kids[0]].arity;
        r = types_copy(df->nodes[kids[0]].types, n->arity, &n->types, err);
        if (r < 0)
                return r;
        *ret = me;
        return 0;
}

/* Negate, Distinct or Threshold: the columns of its input. */
static int build_unary(struct dataflow *df, const Coord__Plan__Relation *rel, unsigned depth,
                       size_t *ret, struct row_error *err)
{
        const Coord__Plan__Relation *in;
        enum node_kind kind;
        size_t c, me;
        struct node *n;
        int r;

        switch (rel->kind_case) {
        case COORD__PLAN__RELATION__KIND_NEGATE:
                kind = NODE_NEGATE;
                in = rel->negate ? rel->negate->input : NULL;
                break;
        case COORD__PLAN__RELATION__KIND_DISTINCT:
                kind = NODE_DISTINCT;
                in = rel->distinct ? rel->distinct->input : NULL;
                break;
        default:
                kind = NODE_THRESHOLD;
                in = rel->threshold ? rel->threshold->input : NULL;
                break;
        }
        if (!in)
                return invalid(err, "missing input");
        r = build(df, in, depth + 1, &c, err);
        if (r < 0)
                return r;
        r = node_add(df, kind, rel, &me, err);
        if (r < 0)
                return r;
        n = &df->nodes[me];
        n->child[0] = c;
        n->arity = df->nodes[c].arity;
        r = types_copy(df->nodes[c].types, n->arity, &n->types, err);
        if (r < 0)
                return r;
        *ret = me;
        return 0;
}

static int build(struct dataflow *df, const Coord__Plan__Relation *rel, unsigned depth,
                 size_t *ret, struct row_error *err)
{
        if (!rel)
                return invalid(err, "missing input");
        if (depth > MAX_PLAN_DEPTH)
                return invalid(err, "plan nested too deeply");
        if (is_linear(rel))
                return build_linear(df, rel, depth, ret, err);
        switch (rel->kind_case) {
        case COORD__PLAN__RELATION__KIND_GET:
                return build_get(df, rel, ret, err);
        case COORD__PLAN__RELATION__KIND_CONSTANT:
                return build_constant(df, rel, ret, err);
        case COORD__PLAN__RELATION__KIND_UNION:
                return build_union(df, rel, depth, ret, err);
        case COORD__PLAN__RELATION__KIND_NEGATE:
        case COORD__PLAN__RELATION__KIND_DISTINCT:
        case COORD__PLAN__RELATION__KIND_THRESHOLD:
                return build_unary(df, rel, depth, ret, err);
        case COORD__PLAN__RELATION__KIND_REDUCE:
                if (!rel->reduce)
                        return invalid(err, "missing input");
                return build_reduce(df, rel, depth, ret, err);
        case COORD__PLAN__RELATION__KIND_JOIN:
                if (!rel->join)
                        return invalid(err, "missing input");
                return build_join(df, rel, depth, ret, err);
        case COORD__PLAN__RELATION__KIND_TOP_K:
                if (!rel->top_k)
                        return invalid(err, "missing input");
                return build_topk(df, rel, depth, ret, err);
        case COORD__PLAN__RELATION__KIND__NOT_SET:
                return invalid(err, "relation without an operator");
        default:
                return row_error_set(err, -EINVAL, "0A000", "plan operator %d is not supported",
                                     (int)rel->kind_case);
        }
}

static void dataflow_freep(struct dataflow **df)
{
        *df = dataflow_free(*df);
}

static int cmp_input(const void *x, const void *y)
{
        const struct input *a = x, *b = y;

        return (a->id > b->id) - (a->id < b->id);
}

int dataflow_new(const Coord__Plan__Relation *plan, uint64_t as_of, struct dataflow **ret,
                 struct row_error *err)
{
        _cleanup_(dataflow_freep) struct dataflow *df = NULL;
        size_t root;
        size_t *map = NULL;
        int r;

        df = calloc(1, sizeof(*df));
        if (!df)
                return row_error_oom(err);
        df->plan = plan;
        df->as_of = df->frontier = as_of;
        df->result = EVAL_BATCH_INIT;
        r = build(df, plan, 0, &root, err);
        if (r < 0)
                return r;
        assert(root == df->n_nodes - 1);
        if (df->cap_nodes > df->n_nodes) {
                struct node *n = realloc(df->nodes, df->n_nodes * sizeof(*n));

                if (n) {
                        df->nodes = n;
                        df->cap_nodes = df->n_nodes;
                }
        }
        /* Inputs ascending by id; renumber the Gets. */
        if (df->n_inputs > 1) {
                uint64_t *old = malloc(df->n_inputs * sizeof(*old));

                if (!old)
                        return row_error_oom(err);
                for (size_t i = 0; i < df->n_inputs; i++)
                        old[i] = df->inputs[i].id;
                qsort(df->inputs, df->n_inputs, sizeof(*df->inputs), cmp_input);
                map = malloc(df->n_inputs * sizeof(*map));
                if (!map) {
                        free(old);
                        return row_error_oom(err);
                }
                for (size_t i = 0; i < df->n_inputs; i++)
                        for (size_t k = 0; k < df->n_inputs; k++)
                                if (df->inputs[k].id == old[i])
                                        map[i] = k;
                for (size_t i = 0; i < df->n_nodes; i++)
                        if (df->nodes[i].kind == NODE_GET)
                                df->nodes[i].input = map[df->nodes[i].input];
                free(old);
                free(map);
        }
        *ret = TAKE_PTR(df);
        return 0;
}
