/* row-key.c -- the key a plan fixes for an index: what a peek may read by key
 * (controller-server-lookup.c NOTE 23) and what the adapter picks an index by
 * (adapter-sql-optimize.c choose_indexes()); one function, so the two agree. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "row-expr.h"
#include "util.h"

bool row_key_type(int t)
{
        return t == ROW_TYPE_BOOL || t == ROW_TYPE_INT4 || t == ROW_TYPE_INT8 || t == ROW_TYPE_TEXT;
}

struct lookup {
        uint64_t gid;
        const uint32_t *cols;           /* the arrangement's key columns */
        size_t n;
        const Coord__Plan__Get *get;    /* the Get being matched */
        struct row_datum *d;            /* n: its key from its Filters */
        bool *set;
        uint8_t *key;                   /* the first Get's key, malloc'ed */
        size_t klen;
        int state;                      /* 0: no Get seen, 1: key, -1: no key */
};

/* e: `column = literal` (either order) of a key column, with one type throughout: its
 * datum into l->d. */
static void match_eq(struct lookup *l, const Coord__Plan__Expr *e)
{
        const Coord__Plan__Expr *c, *v;
        struct row_datum d;
        struct row_error err;

        if (e->kind_case != COORD__PLAN__EXPR__KIND_CALL)
                return;
        if (e->call->func == COORD__PLAN__FUNC__FUNC_AND) {
                for (size_t i = 0; i < e->call->n_args; i++)
                        match_eq(l, e->call->args[i]);
                return;
        }
        if (e->call->func != COORD__PLAN__FUNC__FUNC_EQ || e->call->n_args != 2)
                return;
        c = e->call->args[0];
        v = e->call->args[1];
        if (c->kind_case != COORD__PLAN__EXPR__KIND_COLUMN) {
                c = e->call->args[1];
                v = e->call->args[0];
        }
        if (c->kind_case != COORD__PLAN__EXPR__KIND_COLUMN ||
            v->kind_case != COORD__PLAN__EXPR__KIND_LITERAL || c->type != v->type ||
            !row_key_type((int)c->type) || c->column >= l->get->n_column_types ||
            l->get->column_types[c->column] != c->type)
                return;
        if (row_expr_literal(v->literal, (enum row_type)v->type, &d, &err) < 0)
                return;
        for (size_t k = 0; k < l->n; k++)
                if (l->cols[k] == c->column && !l->set[k]) {
                        l->d[k] = d;
                        l->set[k] = true;
                }
}

/* A Get of l->gid under the Filters filters[0..n): its key, compared with the others'. */
static int match_get(struct lookup *l, const Coord__Plan__Get *g, const Coord__Plan__Filter **filters,
                     size_t n_filters)
{
        _cleanup_free_ uint8_t *key = NULL;
        size_t klen;
        int r;

        if (l->state < 0)
                return 0;
        l->get = g;
        memset(l->set, 0, l->n * sizeof(*l->set));
        for (size_t f = 0; f < n_filters; f++)
                for (size_t p = 0; p < filters[f]->n_predicates; p++)
                        match_eq(l, filters[f]->predicates[p]);
        for (size_t k = 0; k < l->n; k++)
                if (!l->set[k]) {
                        l->state = -1;
                        return 0;
                }
        r = row_encode(l->d, l->n, &key, &klen);
        if (r < 0)
                return r;
        if (l->state == 0) {
                l->key = TAKE_PTR(key);
                l->klen = klen;
                l->state = 1;
        } else if (klen != l->klen || memcmp(key, l->key, klen) != 0) {
                l->state = -1;
        }
        return 0;
}

enum { LOOKUP_MAX_FILTERS = 16 };

/* Every Get of l->gid under rel; filters: the Filter chain just above rel. */
static int walk(struct lookup *l, const Coord__Plan__Relation *rel, const Coord__Plan__Filter **filters,
                size_t n_filters)
{
        const Coord__Plan__Filter *chain[LOOKUP_MAX_FILTERS];
        int r = 0;

        if (!rel || l->state < 0)
                return 0;
        switch (rel->kind_case) {
        case COORD__PLAN__RELATION__KIND_GET:
                return rel->get->id == l->gid ? match_get(l, rel->get, filters, n_filters) : 0;
        case COORD__PLAN__RELATION__KIND_FILTER:
                if (n_filters == LOOKUP_MAX_FILTERS)
                        return walk(l, rel->filter->input, NULL, 0);
                if (n_filters)          /* filters is NULL below a node that ends a chain */
                        memcpy(chain, filters, n_filters * sizeof(*chain));
                chain[n_filters] = rel->filter;
                return walk(l, rel->filter->input, chain, n_filters + 1);
        case COORD__PLAN__RELATION__KIND_MAP:
                return walk(l, rel->map->input, NULL, 0);
        case COORD__PLAN__RELATION__KIND_PROJECT:
                return walk(l, rel->project->input, NULL, 0);
        case COORD__PLAN__RELATION__KIND_JOIN:
                r = walk(l, rel->join->left, NULL, 0);
                return r < 0 ? r : walk(l, rel->join->right, NULL, 0);
        case COORD__PLAN__RELATION__KIND_REDUCE:
                return walk(l, rel->reduce->input, NULL, 0);
        case COORD__PLAN__RELATION__KIND_UNION:
                for (size_t i = 0; r >= 0 && i < rel->union_->n_inputs; i++)
                        r = walk(l, rel->union_->inputs[i], NULL, 0);
                return r;
        case COORD__PLAN__RELATION__KIND_DISTINCT:
                return walk(l, rel->distinct->input, NULL, 0);
        case COORD__PLAN__RELATION__KIND_TOP_K:
                return walk(l, rel->top_k->input, NULL, 0);
        case COORD__PLAN__RELATION__KIND_NEGATE:
                return walk(l, rel->negate->input, NULL, 0);
        case COORD__PLAN__RELATION__KIND_THRESHOLD:
                return walk(l, rel->threshold->input, NULL, 0);
        case COORD__PLAN__RELATION__KIND_CONSTANT:
                return 0;
        default:
                l->state = -1;          /* a kind this walk does not know: no key */
                return 0;
        }
}

int row_plan_key(const Coord__Plan__Relation *plan, uint64_t gid, const uint32_t *cols, size_t n,
                 uint8_t **ret_key, size_t *ret_len)
{
        struct lookup l = { .gid = gid, .cols = cols, .n = n };
        int r;

        *ret_key = NULL;
        *ret_len = 0;
        if (!n)
                return 0;
        l.d = calloc(n, sizeof(*l.d));
        l.set = calloc(n, sizeof(*l.set));
        r = l.d && l.set ? walk(&l, plan, NULL, 0) : -ENOMEM;
        free(l.d);
        free(l.set);
        if (r < 0 || l.state <= 0) {
                free(l.key);
                return r < 0 ? r : 0;
        }
        *ret_key = l.key;
        *ret_len = l.klen;
        return 1;
}
