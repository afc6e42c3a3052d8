/* controller-server-lookup.c -- keyed index lookups: a peek that fixes an index's key
 * reads only that key's rows of the arrangement.
 *
 * NOTES ON THE DESIGN
 *
 * (23) Keyed lookups.  An index whose key columns are all bool, int4, int8 or text
 *      has a keyed arrangement (server_index_keys(), at install;
 *      controller-dataflow-arrange.c links its base rows per key).  A peek reads
 *      input i, such an index at or above its since, by key when every Get of it in
 *      the plan sits under a chain of Filters whose conjuncts (FUNC_AND nested too)
 *      hold `column = literal` for every key column, with the column's type on both
 *      sides, and all of them fix the same key (row_plan_key() in common/row/row-key.c, which
 *      the adapter also picks the index by).  The Filters
 *      stay in the plan: the rows skipped are exactly those whose key columns do not
 *      encode to the literals', and for these four types equal encodings are equal
 *      values (row.h), so each skipped row fails one of the equalities and the answer
 *      is the full read's.  A NULL literal makes the equality NULL: the rows read (NULL
 *      keys) are dropped by the Filter, as all rows would be.  Anything else -- numeric
 *      (1.5 = 1.50 with other bytes), bpchar (compared as text, trailing spaces
 *      dropped), casts, other operators, an unfiltered Get of the same index elsewhere
 *      in the plan -- reads the whole arrangement.  Status: peeks_keyed.
 */
#include "controller-server-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controller-dataflow.h"
#include "row/row-expr.h"
#include "util.h"

int server_index_keys(struct arrangement *arr, const Coord__DataflowSpec *sp)
{
        if (!sp->n_keys)
                return 0;
        for (size_t k = 0; k < sp->n_keys; k++)
                if (sp->keys[k] >= sp->n_column_types || !row_key_type((int)sp->column_types[sp->keys[k]]))
                        return 0;
        return arrangement_set_keys(arr, sp->keys, sp->n_keys, sp->n_column_types);
}

int server_lookup_key(const Coord__Plan__Relation *plan, uint64_t gid, const struct arrangement *arr,
                      uint8_t **ret_key, size_t *ret_len)
{
        const uint32_t *cols;
        size_t n;

        *ret_key = NULL;
        *ret_len = 0;
        if (!arrangement_keyed(arr, &cols, &n))
                return 0;
        return row_plan_key(plan, gid, cols, n, ret_key, ret_len);
}
