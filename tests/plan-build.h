/* plan-build.h -- building plans (proto/plan.proto) by hand in a test: expressions (a
 * column, a call) and the relations every plan test needs (Get, Filter, Map).  What a
 * test alone uses (its literals, Project's form, Join, Reduce...) stays in the test.
 *
 * Nothing is freed: a plan built here is handed to the code under test, which frees it
 * (or the test does, with coord__plan__relation__free_unpacked()).  Out of memory
 * aborts the test.
 */
#pragma once

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>

#include "plan.pb-c.h"

static inline void *xmalloc(size_t n)
{
        void *p = malloc(n ? n : 1);

        if (!p)
                abort();
        return p;
}

/* ---- Expressions ---- */

static inline Coord__Plan__Expr *mk(int type)
{
        Coord__Plan__Expr *e = xmalloc(sizeof(*e));

        coord__plan__expr__init(e);
        e->type = (Coord__Plan__Type)type;
        return e;
}

static inline Coord__Plan__Expr *col(int type, uint32_t i)
{
        Coord__Plan__Expr *e = mk(type);

        e->kind_case = COORD__PLAN__EXPR__KIND_COLUMN;
        e->column = i;
        return e;
}

/* f(the n expressions that follow) of the given type. */
static inline Coord__Plan__Expr *call(int type, Coord__Plan__Func f, size_t n, ...)
{
        Coord__Plan__Expr *e = mk(type);
        Coord__Plan__Call *c = xmalloc(sizeof(*c));
        va_list ap;

        coord__plan__call__init(c);
        c->func = f;
        c->n_args = n;
        c->args = n ? xmalloc(n * sizeof(*c->args)) : NULL;
        va_start(ap, n);
        for (size_t i = 0; i < n; i++)
                c->args[i] = va_arg(ap, Coord__Plan__Expr *);
        va_end(ap);
        e->kind_case = COORD__PLAN__EXPR__KIND_CALL;
        e->call = c;
        return e;
}

#define F(name) COORD__PLAN__FUNC__FUNC_##name

/* ---- Relations ---- */

static inline Coord__Plan__Relation *rel(void)
{
        Coord__Plan__Relation *r = xmalloc(sizeof(*r));

        coord__plan__relation__init(r);
        return r;
}

/* Get of collection id, whose n columns have the given row_type types. */
static inline Coord__Plan__Relation *get(uint64_t id, size_t n, const int *types)
{
        Coord__Plan__Relation *r = rel();

        r->kind_case = COORD__PLAN__RELATION__KIND_GET;
        r->get = xmalloc(sizeof(*r->get));
        coord__plan__get__init(r->get);
        r->get->id = id;
        r->get->n_column_types = n;
        r->get->column_types = xmalloc(n * sizeof(*r->get->column_types));
        for (size_t i = 0; i < n; i++)
                r->get->column_types[i] = (Coord__Plan__Type)types[i];
        return r;
}

static inline Coord__Plan__Relation *filter(Coord__Plan__Relation *in, Coord__Plan__Expr *pred)
{
        Coord__Plan__Relation *r = rel();

        r->kind_case = COORD__PLAN__RELATION__KIND_FILTER;
        r->filter = xmalloc(sizeof(*r->filter));
        coord__plan__filter__init(r->filter);
        r->filter->input = in;
        r->filter->n_predicates = 1;
        r->filter->predicates = xmalloc(sizeof(*r->filter->predicates));
        r->filter->predicates[0] = pred;
        return r;
}

/* Map of one expression over in. */
static inline Coord__Plan__Relation *map1(Coord__Plan__Relation *in, Coord__Plan__Expr *e)
{
        Coord__Plan__Relation *r = rel();

        r->kind_case = COORD__PLAN__RELATION__KIND_MAP;
        r->map = xmalloc(sizeof(*r->map));
        coord__plan__map__init(r->map);
        r->map->input = in;
        r->map->n_exprs = 1;
        r->map->exprs = xmalloc(sizeof(*r->map->exprs));
        r->map->exprs[0] = e;
        return r;
}
