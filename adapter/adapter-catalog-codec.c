/* adapter-catalog-codec.c -- the catalog writer's items to and from their records
 * (Coord__CatalogItem, catalog.proto) and the keys of the state column family.
 *
 * What the catalog writer's files share is adapter-catalog-internal.h.
 */
#include "adapter-catalog-internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.pb-c.h"
#include "coord.pb-c.h"
#include "util.h"

/* ---- encoding ---- */

static enum sql_object_kind kind_from_item(Coord__ItemKind k)
{
        switch (k) {
        case COORD__ITEM_KIND__ITEM_VIEW: return SQL_OBJECT_VIEW;
        case COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW: return SQL_OBJECT_MATERIALIZED_VIEW;
        case COORD__ITEM_KIND__ITEM_INDEX: return SQL_OBJECT_INDEX;
        case COORD__ITEM_KIND__ITEM_SOURCE: return SQL_OBJECT_SOURCE;
        case COORD__ITEM_KIND__ITEM_SINK: return SQL_OBJECT_SINK;
        default: return SQL_OBJECT_TABLE;
        }
}

static Coord__ItemKind kind_to_item(enum sql_object_kind k)
{
        switch (k) {
        case SQL_OBJECT_VIEW: return COORD__ITEM_KIND__ITEM_VIEW;
        case SQL_OBJECT_MATERIALIZED_VIEW: return COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW;
        case SQL_OBJECT_INDEX: return COORD__ITEM_KIND__ITEM_INDEX;
        case SQL_OBJECT_SOURCE: return COORD__ITEM_KIND__ITEM_SOURCE;
        case SQL_OBJECT_SINK: return COORD__ITEM_KIND__ITEM_SINK;
        default: return COORD__ITEM_KIND__ITEM_TABLE;
        }
}

/* Take a string of an unpacked message (protobuf-c's malloc()ed memory), leaving NULL;
 * an absent one is protobuf-c's static empty string, copied. */
static char *str_take(char **s)
{
        if (!*s || *s == protobuf_c_empty_string)
                return strdup("");
        return TAKE_PTR(*s);
}

/* Take a repeated field of n elements of size `size`, leaving NULL; an empty one
 * becomes an allocation of one element, as u64_dup() makes. */
static void *array_take(void *field, size_t n, size_t size)
{
        void **v = field;

        return n ? TAKE_PTR(*v) : malloc(size);
}

/* An item from its record.  It takes the strings and arrays of p rather than copying
 * them (adapter-catalog-open.c note 4): at 200,000 items every allocation at load counts.  p is freed by the
 * caller as usual. */
struct acat_item *item_from_proto(Coord__CatalogItem *p)
{
        struct acat_item *it = calloc(1, sizeof(*it));

        if (!it)
                return NULL;
        it->gid = p->gid;
        it->kind = kind_from_item(p->kind);
        it->created_at = p->created_at;
        it->name = str_take(&p->name);
        it->create_sql = str_take(&p->create_sql);
        it->columns = calloc(p->n_columns ? p->n_columns : 1, sizeof(*it->columns));
        if (!it->name || !it->create_sql || !it->columns)
                goto fail;
        for (size_t i = 0; i < p->n_columns; i++) {
                it->columns[i].name = str_take(&p->columns[i]->name);
                it->columns[i].type = (enum row_type)p->columns[i]->type;
                it->columns[i].nullable = p->columns[i]->nullable;
                it->columns[i].max_chars = p->columns[i]->varchar_length;
                if (p->columns[i]->default_value.len) {
                        it->columns[i].default_row = TAKE_PTR(p->columns[i]->default_value.data);
                        it->columns[i].default_len = p->columns[i]->default_value.len;
                        p->columns[i]->default_value.len = 0;
                }
                it->n_columns++;
                if (!it->columns[i].name)
                        goto fail;
        }
        /* The definition, as item_set_definition() sets it (plan unpacked on use). */
        if (p->plan.len) {
                it->plan_bytes = TAKE_PTR(p->plan.data);
                it->plan_len = p->plan.len;
        }
        it->logical_inputs = array_take(&p->logical_inputs, p->n_logical_inputs, sizeof(uint64_t));
        it->physical_inputs = array_take(&p->physical_inputs, p->n_physical_inputs, sizeof(uint64_t));
        it->refs = array_take(&p->refs, p->n_refs, sizeof(uint64_t));
        it->keys = array_take(&p->keys, p->n_keys, sizeof(uint32_t));
        it->n_logical = p->n_logical_inputs;
        it->n_physical = p->n_physical_inputs;
        it->n_refs = p->n_refs;
        it->n_keys = p->n_keys;
        if (!it->logical_inputs || !it->physical_inputs || !it->refs || !it->keys)
                goto fail;
        it->on_id = p->on_id;
        it->as_of = p->as_of;
        it->retain_history_ms = p->retain_history_ms;
        it->nondeterministic = p->nondeterministic;
        if (p->n_checks) {
                it->checks = calloc(p->n_checks, sizeof(*it->checks));
                if (!it->checks)
                        goto fail;
                for (size_t i = 0; i < p->n_checks; i++, it->n_checks++) {
                        it->checks[i].name = str_take(&p->checks[i]->name);
                        it->checks[i].expr = TAKE_PTR(p->checks[i]->expr.data);
                        it->checks[i].expr_len = p->checks[i]->expr.len;
                        p->checks[i]->expr.len = 0;
                        if (!it->checks[i].name || !it->checks[i].expr)
                                goto fail;
                }
        }
        if (p->n_uniques) {
                it->uniques = calloc(p->n_uniques, sizeof(*it->uniques));
                if (!it->uniques)
                        goto fail;
                for (size_t i = 0; i < p->n_uniques; i++, it->n_uniques++) {
                        const Coord__CatalogUnique *u = p->uniques[i];

                        it->uniques[i].name = str_take(&p->uniques[i]->name);
                        it->uniques[i].columns = array_take(&p->uniques[i]->columns, u->n_columns,
                                                            sizeof(uint32_t));
                        it->uniques[i].n_columns = u->n_columns;
                        it->uniques[i].primary = u->primary;
                        if (!it->uniques[i].name || !it->uniques[i].columns)
                                goto fail;
                }
        }
        if (p->n_foreign_keys) {
                it->fkeys = calloc(p->n_foreign_keys, sizeof(*it->fkeys));
                if (!it->fkeys)
                        goto fail;
                for (size_t i = 0; i < p->n_foreign_keys; i++, it->n_fkeys++) {
                        Coord__CatalogForeignKey *f = p->foreign_keys[i];
                        struct sql_foreign_key *fk = &it->fkeys[i];

                        fk->name = str_take(&f->name);
                        fk->columns = array_take(&f->columns, f->n_columns, sizeof(uint32_t));
                        fk->ref_columns = array_take(&f->ref_columns, f->n_ref_columns, sizeof(uint32_t));
                        fk->n_columns = f->n_columns;
                        fk->ref_id = f->ref_gid;
                        if (!fk->name || !fk->columns || !fk->ref_columns ||
                            f->n_ref_columns != f->n_columns)
                                goto fail;
                }
        }
        it->refresh = p->refresh;
        /* Most items have no schedule: no allocation for an empty one. */
        it->refresh_at = TAKE_PTR(p->refresh_at);
        it->n_refresh_at = p->n_refresh_at;
        it->refresh_every_ms = p->refresh_every_ms;
        it->refresh_aligned_to = p->refresh_aligned_to;
        it->progress_of = p->progress_of;
        it->source_type = p->source_type;
        it->source_format = p->source_format;
        it->source_tick_ms = p->source_tick_ms;
        it->source_up_to = p->source_up_to;
        if (it->kind == SQL_OBJECT_SOURCE && p->source_type) {
                it->source_path = str_take(&p->source_path);
                if (!it->source_path)
                        goto fail;
        }
        if (it->kind == SQL_OBJECT_SINK) {
                it->sink_path = str_take(&p->sink_path);
                it->sink_snapshot = p->sink_snapshot;
                if (!it->sink_path)
                        goto fail;
        }
        return it;
fail:
        item_free(it);
        return NULL;
}

int item_encode(const struct acat_item *it, uint8_t **ret, size_t *ret_len)
{
        Coord__CatalogItem p = COORD__CATALOG_ITEM__INIT;
        Coord__CatalogColumn *cols = NULL, **colp = NULL;
        Coord__CatalogCheck *chks = NULL, **chkp = NULL;
        Coord__CatalogUnique *unq = NULL, **unqp = NULL;
        Coord__CatalogForeignKey *fks = NULL, **fkp = NULL;
        uint8_t *buf = NULL;
        size_t len = 0;

        /* One allocation check for the arrays of every repeated field (1 when empty). */
        cols = calloc(it->n_columns ? it->n_columns : 1, sizeof(*cols));
        colp = calloc(it->n_columns ? it->n_columns : 1, sizeof(*colp));
        chks = calloc(it->n_checks ? it->n_checks : 1, sizeof(*chks));
        chkp = calloc(it->n_checks ? it->n_checks : 1, sizeof(*chkp));
        unq = calloc(it->n_uniques ? it->n_uniques : 1, sizeof(*unq));
        unqp = calloc(it->n_uniques ? it->n_uniques : 1, sizeof(*unqp));
        fks = calloc(it->n_fkeys ? it->n_fkeys : 1, sizeof(*fks));
        fkp = calloc(it->n_fkeys ? it->n_fkeys : 1, sizeof(*fkp));
        if (!cols || !colp || !chks || !chkp || !unq || !unqp || !fks || !fkp)
                goto out;
        for (size_t i = 0; i < it->n_columns; i++) {
                coord__catalog_column__init(&cols[i]);
                cols[i].name = it->columns[i].name;
                cols[i].type = (uint32_t)it->columns[i].type;
                cols[i].nullable = it->columns[i].nullable;
                cols[i].varchar_length = it->columns[i].max_chars;
                cols[i].default_value.data = it->columns[i].default_row;
                cols[i].default_value.len = it->columns[i].default_len;
                colp[i] = &cols[i];
        }
        p.gid = it->gid;
        p.name = it->name;
        p.kind = kind_to_item(it->kind);
        p.create_sql = it->create_sql;
        p.created_at = it->created_at;
        p.n_columns = it->n_columns;
        p.columns = colp;
        p.plan.data = it->plan_bytes;
        p.plan.len = it->plan_len;
        p.logical_inputs = it->logical_inputs;
        p.n_logical_inputs = it->n_logical;
        p.physical_inputs = it->physical_inputs;
        p.n_physical_inputs = it->n_physical;
        p.refs = it->refs;
        p.n_refs = it->n_refs;
        p.on_id = it->on_id;
        p.keys = it->keys;
        p.n_keys = it->n_keys;
        p.as_of = it->as_of;
        p.retain_history_ms = it->retain_history_ms;
        p.nondeterministic = it->nondeterministic;
        if (it->n_checks) {
                for (size_t i = 0; i < it->n_checks; i++) {
                        coord__catalog_check__init(&chks[i]);
                        chks[i].name = it->checks[i].name;
                        chks[i].expr.data = it->checks[i].expr;
                        chks[i].expr.len = it->checks[i].expr_len;
                        chkp[i] = &chks[i];
                }
                p.checks = chkp;
                p.n_checks = it->n_checks;
        }
        if (it->n_uniques) {
                for (size_t i = 0; i < it->n_uniques; i++) {
                        coord__catalog_unique__init(&unq[i]);
                        unq[i].name = it->uniques[i].name;
                        unq[i].columns = it->uniques[i].columns;
                        unq[i].n_columns = it->uniques[i].n_columns;
                        unq[i].primary = it->uniques[i].primary;
                        unqp[i] = &unq[i];
                }
                p.uniques = unqp;
                p.n_uniques = it->n_uniques;
        }
        for (size_t i = 0; i < it->n_fkeys; i++) {
                coord__catalog_foreign_key__init(&fks[i]);
                fks[i].name = it->fkeys[i].name;
                fks[i].columns = it->fkeys[i].columns;
                fks[i].n_columns = it->fkeys[i].n_columns;
                fks[i].ref_gid = it->fkeys[i].ref_id;
                fks[i].ref_columns = it->fkeys[i].ref_columns;
                fks[i].n_ref_columns = it->fkeys[i].n_columns;
                fkp[i] = &fks[i];
        }
        p.foreign_keys = it->n_fkeys ? fkp : NULL;
        p.n_foreign_keys = it->n_fkeys;
        p.refresh = it->refresh;
        p.refresh_at = it->refresh_at;
        p.n_refresh_at = it->n_refresh_at;
        p.refresh_every_ms = it->refresh_every_ms;
        p.refresh_aligned_to = it->refresh_aligned_to;
        if (it->sink_path)
                p.sink_path = it->sink_path;
        p.sink_snapshot = it->sink_snapshot;
        p.progress_of = it->progress_of;
        p.source_type = it->source_type;
        p.source_format = it->source_format;
        if (it->source_path)
                p.source_path = it->source_path;
        p.source_tick_ms = it->source_tick_ms;
        p.source_up_to = it->source_up_to;
        len = coord__catalog_item__get_packed_size(&p);
        buf = malloc(len ? len : 1);
        if (buf)
                coord__catalog_item__pack(&p, buf);
out:
        free(unq);
        free(unqp);
        free(fks);
        free(fkp);
        free(chks);
        free(chkp);
        free(cols);
        free(colp);
        if (!buf)
                return -ENOMEM;
        *ret = buf;
        *ret_len = len;
        return 0;
}

void key_put(uint8_t key[9], char kind, uint64_t gid)
{
        key[0] = (uint8_t)kind;
        be64_put(key + 1, gid);
}
