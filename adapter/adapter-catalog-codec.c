/* adapter-catalog-codec.c -- the catalog writer's items to and from their records
 * (Coord__CatalogItem, catalog.proto) and the keys of the state column family.
 *
 * What the catalog writer's files share is adapter-catalog-internal.h.
 */
#include "adapter-catalog-internal.h"

#include <assert.h>
#include <errno.h>
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

/* One allocation per loaded item (adapter-catalog-open.c note 4): the struct, then its
 * columns and arrays, then its bytes and strings, laid out by item_place() twice -- once
 * measuring (base NULL), once copying.  item_free() frees only what lies outside the
 * block (item_in_block()).  Constraints are rare: deep copies of their own. */
struct pack {
        char *base;             /* NULL: measuring */
        size_t off;
};

static void *pack_reserve(struct pack *pk, size_t len, size_t align)
{
        void *dst;

        pk->off = (pk->off + align - 1) & ~(align - 1);
        dst = pk->base ? pk->base + pk->off : NULL;
        pk->off += len;
        return dst;
}

static void *pack_put(struct pack *pk, const void *src, size_t len, size_t align)
{
        void *dst = pack_reserve(pk, len, align);

        if (dst && len)
                memcpy(dst, src, len);
        return dst;
}

/* An absent string is protobuf-c's empty string: "" either way. */
static char *pack_str(struct pack *pk, const char *s)
{
        s = s ? s : "";
        return pack_put(pk, s, strlen(s) + 1, 1);
}

/* Every pointer field of `it` the block holds, into pk (it NULL while measuring).
 * Zero-length arrays point into the block too (the strings come after them), so that
 * an item's arrays are never NULL, as item_set_definition() makes them. */
static void item_place(struct acat_item *it, const Coord__CatalogItem *p, struct pack *pk)
{
        struct sql_column *cols;

        cols = pack_reserve(pk, p->n_columns * sizeof(*cols), 8);
        it->logical_inputs = pack_put(pk, p->logical_inputs, p->n_logical_inputs * sizeof(uint64_t), 8);
        it->physical_inputs = pack_put(pk, p->physical_inputs, p->n_physical_inputs * sizeof(uint64_t), 8);
        it->refs = pack_put(pk, p->refs, p->n_refs * sizeof(uint64_t), 8);
        if (p->n_refresh_at)    /* most items have no schedule: NULL */
                it->refresh_at = pack_put(pk, p->refresh_at, p->n_refresh_at * sizeof(uint64_t), 8);
        it->keys = pack_put(pk, p->keys, p->n_keys * sizeof(uint32_t), 4);
        if (p->plan.len)        /* unpacked on first use (acat_relation()) */
                it->plan_bytes = pack_put(pk, p->plan.data, p->plan.len, 8);
        for (size_t i = 0; i < p->n_columns; i++) {
                const Coord__CatalogColumn *c = p->columns[i];
                uint8_t *def = c->default_value.len ?
                        pack_put(pk, c->default_value.data, c->default_value.len, 8) : NULL;

                if (cols)
                        cols[i] = (struct sql_column){
                                .type = (enum row_type)c->type, .nullable = c->nullable,
                                .max_chars = c->varchar_length, .default_row = def,
                                .default_len = def ? c->default_value.len : 0,
                        };
        }
        for (size_t i = 0; i < p->n_columns; i++) {
                char *name = pack_str(pk, p->columns[i]->name);

                if (cols)
                        cols[i].name = name;
        }
        it->columns = cols;
        it->name = pack_str(pk, p->name);
        it->create_sql = pack_str(pk, p->create_sql);
        if (it->kind == SQL_OBJECT_SOURCE && p->source_type)
                it->source_path = pack_str(pk, p->source_path);
        if (it->kind == SQL_OBJECT_SINK)
                it->sink_path = pack_str(pk, p->sink_path);
}

/* A table's constraints, deep-copied from p (their records are read only here). */
static int item_constraints(struct acat_item *it, const Coord__CatalogItem *p)
{
        struct sql_check *ck = calloc(p->n_checks + 1, sizeof(*ck));
        struct sql_unique *uq = calloc(p->n_uniques + 1, sizeof(*uq));
        struct sql_foreign_key *fk = calloc(p->n_foreign_keys + 1, sizeof(*fk));
        int r = -ENOMEM;

        if (!ck || !uq || !fk)
                goto out;
        for (size_t i = 0; i < p->n_checks; i++)
                ck[i] = (struct sql_check){ p->checks[i]->name, p->checks[i]->expr.data,
                                            p->checks[i]->expr.len };
        for (size_t i = 0; i < p->n_uniques; i++)
                uq[i] = (struct sql_unique){ .name = p->uniques[i]->name, .columns = p->uniques[i]->columns,
                                             .n_columns = p->uniques[i]->n_columns,
                                             .primary = p->uniques[i]->primary };
        r = 0;
        for (size_t i = 0; i < p->n_foreign_keys; i++) {
                const Coord__CatalogForeignKey *f = p->foreign_keys[i];

                if (f->n_ref_columns != f->n_columns)
                        r = -EBADMSG;
                fk[i] = (struct sql_foreign_key){ .name = f->name, .columns = f->columns,
                                                  .ref_columns = f->ref_columns,
                                                  .n_columns = f->n_columns, .ref_id = f->ref_gid };
        }
        if (r >= 0)
                r = checks_dup(ck, p->n_checks, &it->checks);
        if (r >= 0)
                it->n_checks = p->n_checks;
        if (r >= 0)
                r = uniques_dup(uq, p->n_uniques, &it->uniques);
        if (r >= 0)
                it->n_uniques = p->n_uniques;
        if (r >= 0)
                r = fkeys_dup(fk, p->n_foreign_keys, &it->fkeys);
        if (r >= 0)
                it->n_fkeys = p->n_foreign_keys;
out:
        free(ck);
        free(uq);
        free(fk);
        return r;
}

/* An item from its record, in one block (above); p is left as it was, so it may live
 * in an arena (adapter-catalog-open.c note 4). */
struct acat_item *item_from_proto(const Coord__CatalogItem *p, struct item_chunk **chunk)
{
        struct acat_item probe = { .kind = kind_from_item(p->kind) }, *it;
        struct pack pk = { NULL, sizeof(struct acat_item) };
        bool chunked;

        item_place(&probe, p, &pk);
        it = item_chunk_alloc(chunk, pk.off, &chunked);
        if (!it)
                return NULL;
        it->chunked = chunked;
        it->block_len = pk.off;
        it->gid = p->gid;
        it->kind = probe.kind;
        it->created_at = p->created_at;
        pk = (struct pack){ (char *)it, sizeof(struct acat_item) };
        item_place(it, p, &pk);
        assert(pk.off == it->block_len);
        it->n_columns = p->n_columns;
        it->plan_len = p->plan.len;
        it->n_logical = p->n_logical_inputs;
        it->n_physical = p->n_physical_inputs;
        it->n_refs = p->n_refs;
        it->n_keys = p->n_keys;
        it->n_refresh_at = p->n_refresh_at;
        it->on_id = p->on_id;
        it->as_of = p->as_of;
        it->retain_history_ms = p->retain_history_ms;
        it->nondeterministic = p->nondeterministic;
        it->refresh = p->refresh;
        it->refresh_every_ms = p->refresh_every_ms;
        it->refresh_aligned_to = p->refresh_aligned_to;
        it->progress_of = p->progress_of;
        it->source_type = p->source_type;
        it->source_format = p->source_format;
        it->source_tick_ms = p->source_tick_ms;
        it->source_up_to = p->source_up_to;
        it->sink_snapshot = it->kind == SQL_OBJECT_SINK && p->sink_snapshot;
        if ((p->n_checks || p->n_uniques || p->n_foreign_keys) && item_constraints(it, p) < 0) {
                item_free(it);
                return NULL;
        }
        return it;
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
