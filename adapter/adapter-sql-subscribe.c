/* adapter-sql-subscribe.c -- SUBSCRIBE's analysis (lifted on tokens, adapter-sql.c
 * lift_subscribe()): which relation, which as-of.  The executor's side is
 * adapter-subscribe.c.
 */
#include "adapter-sql-internal.h"

#include "builtins.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int analyze_subscribe(struct analyzer *a, const struct lift *l, const struct as_of_clause *as_of)
{
        struct sql_subscribe *sb = &a->stmt->subscribe;
        struct sql_relation rel;
        int r;

        sb->copy = l->copy;
        if (l->unsupported)
                return FAIL_AT(a, (int)l->unsupported - 1, "0A000", "SUBSCRIBE supports only "
                               "[COPY (] SUBSCRIBE [TO] <relation> [AS OF <timestamp>] [) TO STDOUT]");
        sb->name = strdup(l->on);
        if (!sb->name)
                return analyzer_oom(a);
        r = lookup_relation(a, l->on, &rel);
        if (r == -ENOENT)
                return FAIL_AT(a, (int)l->location, "42P01", "relation \"%s\" does not exist", l->on);
        if (r < 0)
                return r;
        if (rel.builtin || rel.id < COORD_FIRST_USER_GID)
                return FAIL_AT(a, (int)l->location, "0A000", "cannot subscribe to built-in relation \"%s\"",
                               l->on);
        switch (rel.kind) {
        case SQL_OBJECT_TABLE:
        case SQL_OBJECT_MATERIALIZED_VIEW:
        case SQL_OBJECT_SOURCE:
                break;
        case SQL_OBJECT_VIEW:
                r = FAIL_AT(a, (int)l->location, "0A000", "SUBSCRIBE to a view is not supported");
                row_error_hint(a->err, "Create a materialized view over it and subscribe to that.");
                return r;
        default:
                return FAIL_AT(a, (int)l->location, "42809", "\"%s\" is not a relation one can subscribe to",
                               l->on);
        }
        sb->id = rel.id;
        sb->kind = rel.kind;
        r = add_input(a, rel.id);
        if (r < 0)
                return r;
        if (as_of && as_of->tree) {
                r = analyze_as_of(a, as_of, &sb->as_of);
                if (r < 0)
                        return r;
                sb->has_as_of = true;
        }
        return 0;
}
