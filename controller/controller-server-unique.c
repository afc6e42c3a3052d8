/* controller-server-unique.c -- PRIMARY KEY, UNIQUE and FOREIGN KEY constraints of
 * tables: the key mirrors and the check of each write.
 *
 * Contract: proto/coord.proto (TableWrite.unique_keys, TableWrite.foreign_keys,
 * TableWrite.block, Ok.failures);
 * what the server's files share: controller-server-internal.h.  The notes are numbered
 * across the server (controller-server.c lists where each stands).
 *
 * NOTES ON THE DESIGN
 *
 * (22) Unique keys.  The adapter attaches a table's keys to every write of it (adapter-
 *     exec.c write_keys()), so the controller needs no catalog and forgets nothing that
 *     matters: what it keeps is a cache.  A write or a block (TableWrite.block: the
 *     writes of one transaction, failing together) is a unit; append_prepare() stages
 *     each unit's rows -- an INSERT's, or what a DELETE or UPDATE retracts and inserts
 *     -- key by key (server_uniq_stage()), then server_uniq_commit() finds whether some
 *     key value with no NULL column would be in more than one row of the table as the
 *     contents before the append, the group's units accepted so far and this unit leave
 *     it.  If so the unit fails alone with 23505 (its rows taken out of the append, the
 *     rest of the group applied: Ok.failures); else its counts join the append's.
 *     The statement-level check is the SQL standard's; PostgreSQL checks non-deferrable
 *     keys row by row, so an UPDATE that swaps key values in one statement may fail
 *     there and passes here.
 *     Cost: a key mirror per (table, key) maps each key value to its count, valid at the
 *     table's stored upper (struct kmirror, built by one read of the table when missing
 *     or stale, then moved forward by each durable append, server_uniq_apply()): a
 *     write costs O(its rows), not O(the table); memory is O(distinct keys) per key of
 *     a table written since the controller started.  A restart or a dropped table
 *     loses the mirrors, never the truth: they are rebuilt from storage at first use.
 *
 * (25) Foreign keys (MATCH SIMPLE, NO ACTION).  The adapter attaches to every write of a
 *     table each foreign key whose referencing or referenced table it is
 *     (TableWrite.foreign_keys), so a unit that writes either side carries the
 *     constraint.  Each side is a (table, columns) entry like a unique key's -- the same
 *     entry when the referenced columns are a key of the write's table -- staged by
 *     server_uniq_stage() from the first write of either table in the append on (every
 *     write of either carries it), and read from its key mirror (22) when the append
 *     does not write that table.  server_uniq_commit() then checks, after the unique
 *     keys, against both tables as the contents before the append, the units accepted
 *     so far and this unit leave them (fk_check()): every key value with no NULL column
 *     whose count the unit raises in the referencing table is in the referenced one
 *     (else 23503 "insert or update on table ..."), and every key value whose count the
 *     unit lowers in the referenced table and that is gone from it is in no row of the
 *     referencing one (else 23503 "update or delete on table ... on table ...").  The
 *     unit then fails alone, as for a duplicate key.  Appends are applied one at a time
 *     against stored contents, so a concurrent delete of a parent and insert of a child
 *     cannot both pass.  The check is at the unit's end: a statement's, as PostgreSQL
 *     checks NO ACTION; a transaction block's at its COMMIT, where PostgreSQL checks
 *     each statement.  An update that leaves a referencing row's key as it was changes
 *     no count, so it needs no parent (PostgreSQL skips that check too).
 *     Cost: the key mirror of each side (memory O(distinct key values), built by one
 *     read of the table when missing or stale, as in (22)); a write costs O(its rows)
 *     per foreign key of its table, whichever side it is.
 */
#include "controller-server.h"
#include "controller-server-internal.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "row/row.h"
#include "util.h"

/* (22) The count of every key value of one key of a table, at `m.upper` (the table's
 * stored upper); m.gid is the table's. */
struct kmirror {
        struct cmirror m;
        uint32_t *cols;
        size_t n_cols;
};

/* One (table, columns) that the append's units write or check against: a unique key,
 * or a side of a foreign key (25), or both. */
struct ukey {
        uint64_t gid;
        const uint32_t *cols;           /* borrowed from the Append */
        size_t n_cols;
        const Coord__UniqueKey *key;    /* the unique key on cols; NULL: none */
        struct kmirror *base;           /* the contents before the append; NULL: the
                                         * table has no collection (yet): empty */
        struct cmirror accepted;        /* the units accepted so far */
        struct cmirror unit;            /* the unit being staged */
};

/* (25) A foreign key that the append's writes carry: its two sides, as indexes in k. */
struct ufk {
        const Coord__ForeignKey *fk;    /* borrowed from the Append */
        size_t child, parent;
};

struct uniq {
        struct ukey *k;                 /* moves as it grows: held by index */
        size_t n, cap;
        struct ufk *fk;
        size_t n_fk, cap_fk;
};

static bool cols_equal(const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
        return na == nb && (na == 0 || memcmp(a, b, na * sizeof(*a)) == 0);
}

/* Keys of rows: the key columns `cols` of each row, encoded as a row, into m. */
struct key_load {
        struct cmirror *m;
        const uint32_t *cols;
        size_t n_cols;
        struct row_datum *d;            /* a decoded row, grown to the widest */
        size_t n_d;
        uint8_t *buf;                   /* the key's bytes, grown likewise */
        size_t cap;
};

/* The key of row into kl->buf and *ret_len: 1 when one of its columns is NULL (no key:
 * NULLs are distinct), 0, or -errno. */
static int key_of(struct key_load *kl, const void *row, size_t len, size_t *ret_len)
{
        const uint32_t *cols = kl->cols;
        size_t n_cols = kl->n_cols;
        struct row_datum key[64];
        struct row_datum *kd = n_cols <= 64 ? key : NULL;
        struct row_datum *scratch;
        int64_t size;
        int n, r = 0;

        n = row_validate(row, len);
        if (n < 0)
                return n;
        if ((size_t)n > kl->n_d) {
                scratch = realloc(kl->d, (size_t)n * sizeof(*scratch));
                if (!scratch)
                        return -ENOMEM;
                kl->d = scratch;
                kl->n_d = (size_t)n;
        }
        scratch = kl->d;
        n = row_decode(row, len, scratch, kl->n_d);
        if (n < 0)
                return n;
        if (!kd && !(kd = calloc(n_cols, sizeof(*kd))))
                return -ENOMEM;
        for (size_t i = 0; i < n_cols; i++) {
                if (cols[i] >= (size_t)n) {
                        r = -EINVAL;
                        goto out;
                }
                if (scratch[cols[i]].kind == ROW_KIND_NULL) {
                        r = 1;
                        goto out;
                }
                kd[i] = scratch[cols[i]];
        }
        size = row_encoded_size(kd, n_cols);
        if (size < 0) {
                r = (int)size;
                goto out;
        }
        if ((size_t)size > kl->cap) {
                uint8_t *nb = realloc(kl->buf, (size_t)size);
                if (!nb) {
                        r = -ENOMEM;
                        goto out;
                }
                kl->buf = nb;
                kl->cap = (size_t)size;
        }
        *ret_len = row_encode_into(kd, n_cols, kl->buf);
out:
        if (kd != key)
                free(kd);
        return r;
}

/* count(key of row) += diff, unless the key has a NULL.  -errno. */
static int key_add(struct key_load *kl, const void *row, size_t len, int64_t diff)
{
        size_t klen = 0;
        int r = key_of(kl, row, len, &klen);

        if (r != 0)
                return r > 0 ? 0 : r;
        return server_cm_add(kl->m, kl->buf, klen, diff);
}

static int key_load_row(const void *row, size_t len, int64_t count, void *userdata)
{
        return key_add(userdata, row, len, count);
}

static struct key_load *key_load_new(struct cmirror *m, const uint32_t *cols, size_t n_cols)
{
        struct key_load *kl = malloc(sizeof(*kl));

        if (kl)
                *kl = (struct key_load){ .m = m, .cols = cols, .n_cols = n_cols };
        return kl;
}

static void key_load_free(struct key_load *kl)
{
        if (kl) {
                free(kl->d);
                free(kl->buf);
        }
        free(kl);
}

static void km_free(struct kmirror *km)
{
        if (!km)
                return;
        server_cm_clear(&km->m);
        free(km->cols);
        free(km);
}

static void km_remove(struct cserver *s, size_t i)
{
        km_free(s->km[i]);
        s->km[i] = s->km[--s->n_km];
}

void server_km_drop(struct cserver *s, uint64_t gid)
{
        for (size_t i = 0; i < s->n_km;)
                if (s->km[i]->m.gid == gid)
                        km_remove(s, i);
                else
                        i++;
}

void server_km_drop_all(struct cserver *s)
{
        while (s->n_km)
                km_remove(s, 0);
        free(s->km);
        s->km = NULL;
        s->cap_km = 0;
}

/* The key mirror of (info->gid, cols), valid at its stored upper; built by one read
 * when missing or stale.  -errno (storage's, or -ENOMEM). */
static int km_get(struct cserver *s, const struct storage_info *info, const uint32_t *cols,
                  size_t n_cols, struct kmirror **ret)
{
        const struct storage_frontiers *f = &info->frontiers;
        struct kmirror *km = NULL;
        struct key_load *kl;
        int r;

        for (size_t i = 0; i < s->n_km && !km; i++)
                if (s->km[i]->m.gid == info->gid && cols_equal(s->km[i]->cols, s->km[i]->n_cols, cols, n_cols))
                        km = s->km[i];
        if (km && km->m.upper == f->upper) {
                *ret = km;
                return 0;
        }
        if (!km) {
                r = RESERVE(s->km, s->cap_km, s->n_km + 1);
                if (r < 0)
                        return r;
                km = calloc(1, sizeof(*km));
                if (!km)
                        return -ENOMEM;
                km->cols = malloc(n_cols * sizeof(*cols));
                if (!km->cols) {
                        free(km);
                        return -ENOMEM;
                }
                memcpy(km->cols, cols, n_cols * sizeof(*cols));
                km->n_cols = n_cols;
                km->m.gid = info->gid;
                s->km[s->n_km++] = km;
        }
        server_cm_clear(&km->m);
        km->m.upper = f->upper;
        kl = key_load_new(&km->m, km->cols, km->n_cols);
        r = kl ? 0 : -ENOMEM;
        if (r == 0 && f->upper > f->since) {
                s->mirror_reads++;
                r = storage_read(s->st, info->gid, f->upper - 1, key_load_row, kl, NULL);
        }
        key_load_free(kl);
        if (r < 0) {
                server_km_drop(s, info->gid);
                return r;
        }
        *ret = km;
        return 0;
}

struct uniq *server_uniq_new(void)
{
        return calloc(1, sizeof(struct uniq));
}

void server_uniq_free(struct uniq *u)
{
        if (!u)
                return;
        for (size_t i = 0; i < u->n; i++) {
                server_cm_clear(&u->k[i].accepted);
                server_cm_clear(&u->k[i].unit);
        }
        free(u->k);
        free(u->fk);
        free(u);
}

/* The append's entry of (gid, cols), made with its key mirror when new: its index in
 * u->k.  info: the table's, or NULL to look it up (a table the append does not write;
 * one with no collection yet is empty).  -errno with err. */
static int entry_get(struct cserver *s, struct uniq *u, uint64_t gid, const struct storage_info *info,
                     const uint32_t *cols, size_t n_cols, size_t *ret, struct row_error *err)
{
        struct storage_info other;
        struct ukey *k;
        int r;

        if (!n_cols || n_cols > ROW_MAX_COLUMNS)
                return row_error_set(err, -EINVAL, "XX000", "a key of collection %llu has %zu "
                                     "columns", (unsigned long long)gid, n_cols);
        for (size_t j = 0; j < u->n; j++)
                if (u->k[j].gid == gid && cols_equal(u->k[j].cols, u->k[j].n_cols, cols, n_cols)) {
                        *ret = j;
                        return 0;
                }
        if (RESERVE(u->k, u->cap, u->n + 1) < 0)
                return row_error_oom(err);
        k = &u->k[u->n];
        *k = (struct ukey){ .gid = gid, .cols = cols, .n_cols = n_cols };
        if (!info) {
                r = storage_get_info(s->st, gid, &other);
                if (r == -ENOENT) {
                        *ret = u->n++;
                        return 0;
                }
                if (r < 0)
                        return server_storage_failure(s, err, r, "looking up collection %llu",
                                                      (unsigned long long)gid);
                if (other.kind != STORAGE_KIND_TABLE)
                        return row_error_set(err, -EINVAL, "XX000", "collection %llu, referenced "
                                             "by a foreign key, is a %s, not a table",
                                             (unsigned long long)gid, server_kind_name(other.kind));
                info = &other;
        }
        r = km_get(s, info, cols, n_cols, &k->base);
        if (r == -ENOMEM)
                return row_error_oom(err);
        if (r < 0)
                return server_storage_failure(s, err, r, "reading collection %llu",
                                              (unsigned long long)gid);
        *ret = u->n++;
        return 0;
}

/* The append's entry of unique key `key` of info->gid.  -errno with err. */
static int ukey_get(struct cserver *s, struct uniq *u, const struct storage_info *info,
                    const Coord__UniqueKey *key, size_t *ret, struct row_error *err)
{
        int r = entry_get(s, u, info->gid, info, key->columns, key->n_columns, ret, err);

        if (r >= 0 && !u->k[*ret].key)
                u->k[*ret].key = key;
        return r;
}

/* (25) Foreign key fk joins the append's (once per constraint), both sides' entries
 * made; info is the written table's.  -errno with err. */
static int ufk_get(struct cserver *s, struct uniq *u, const struct storage_info *info,
                   const Coord__ForeignKey *fk, struct row_error *err)
{
        struct ufk f = { .fk = fk };
        int r;

        for (size_t j = 0; j < u->n_fk; j++)
                if (u->fk[j].fk->table == fk->table && strcmp(u->fk[j].fk->name, fk->name) == 0)
                        return 0;
        if (fk->n_columns != fk->n_ref_columns || fk->n_column_names != fk->n_columns ||
            fk->n_ref_column_names != fk->n_columns || fk->table == fk->ref_table ||
            (info->gid != fk->table && info->gid != fk->ref_table))
                return row_error_set(err, -EINVAL, "XX000", "malformed foreign key \"%s\" in a "
                                     "write of collection %llu", fk->name,
                                     (unsigned long long)info->gid);
        r = entry_get(s, u, fk->table, fk->table == info->gid ? info : NULL, fk->columns,
                      fk->n_columns, &f.child, err);
        if (r >= 0)
                r = entry_get(s, u, fk->ref_table, fk->ref_table == info->gid ? info : NULL,
                              fk->ref_columns, fk->n_ref_columns, &f.parent, err);
        if (r < 0)
                return r;
        if (RESERVE(u->fk, u->cap_fk, u->n_fk + 1) < 0)
                return row_error_oom(err);
        u->fk[u->n_fk++] = f;
        return 0;
}

static void index_add(size_t *v, size_t *n, size_t x)
{
        for (size_t i = 0; i < *n; i++)
                if (v[i] == x)
                        return;
        v[(*n)++] = x;
}

/* (22), (25) Stages the key values of pend[from..) -- the rows write w put in its
 * table's pend -- into the unit, once for each (table, columns) of w's unique keys and
 * of the sides of its foreign keys that are this table.  -errno with err (XX000: a key
 * that names no column of the rows; a storage error). */
int server_uniq_stage(struct cserver *s, struct uniq *u, const struct storage_info *info,
                      const Coord__TableWrite *w, const struct eval_batch *pend, size_t from,
                      struct row_error *err)
{
        _cleanup_free_ size_t *idx = calloc(w->n_unique_keys + w->n_foreign_keys + 1, sizeof(*idx));
        size_t n_idx = 0;
        int r = idx ? 0 : row_error_oom(err);

        for (size_t i = 0; i < w->n_unique_keys && r >= 0; i++) {
                size_t k = 0;

                r = ukey_get(s, u, info, w->unique_keys[i], &k, err);
                if (r >= 0)
                        index_add(idx, &n_idx, k);
        }
        for (size_t i = 0; i < w->n_foreign_keys && r >= 0; i++) {
                r = ufk_get(s, u, info, w->foreign_keys[i], err);
                for (size_t j = 0; r >= 0 && j < u->n_fk; j++) {
                        const struct ufk *f = &u->fk[j];

                        if (f->fk != w->foreign_keys[i] &&
                            !(f->fk->table == w->foreign_keys[i]->table &&
                              strcmp(f->fk->name, w->foreign_keys[i]->name) == 0))
                                continue;
                        if (u->k[f->child].gid == info->gid)
                                index_add(idx, &n_idx, f->child);
                        if (u->k[f->parent].gid == info->gid)
                                index_add(idx, &n_idx, f->parent);
                }
        }
        for (size_t i = 0; i < n_idx && r >= 0; i++) {
                struct ukey *k = &u->k[idx[i]];
                struct key_load *kl = key_load_new(&k->unit, k->cols, k->n_cols);

                if (!kl)
                        return row_error_oom(err);
                for (size_t j = from; j < pend->n && r >= 0; j++)
                        r = key_add(kl, pend->updates[j].row, pend->updates[j].len, pend->updates[j].diff);
                key_load_free(kl);
                if (r == -ENOMEM)
                        return row_error_oom(err);
                if (r < 0)
                        return row_error_set(err, r, "XX000", "key \"%s\" names a column that the "
                                             "rows of collection %llu do not have",
                                             k->key ? k->key->name : "(foreign)",
                                             (unsigned long long)info->gid);
        }
        return r;
}

/* The count of key value kb in k's table as the append leaves it so far: before it,
 * the units accepted, the unit staged. */
static int64_t ukey_total(const struct ukey *k, const void *kb, size_t klen)
{
        return (k->base ? server_cm_count(&k->base->m, kb, klen) : 0) +
               server_cm_count(&k->accepted, kb, klen) + server_cm_count(&k->unit, kb, klen);
}

/* (22) ON CONFLICT DO NOTHING (TableWrite.on_conflict_skip): drop from pend[from..) each
 * row whose value of the conflict key (w->conflict_key; empty: each of w's keys) is
 * taken -- in the table before the append, in the units accepted so far, in this unit
 * (a block's earlier writes), or in an earlier row of this write -- keeping the first
 * copy of a row inserted more than once.  Run before server_uniq_stage(), which then
 * checks the other keys as for any write.  The rows dropped, or -errno with err. */
int server_uniq_skip(struct cserver *s, struct uniq *u, const struct storage_info *info,
                     const Coord__TableWrite *w, struct eval_batch *pend, size_t from,
                     struct row_error *err)
{
        size_t ks[64];
        struct cmirror seen[64];
        struct key_load *kl[64] = { NULL };
        size_t n = 0, out = from, dropped = 0;
        int r = 0;

        memset(seen, 0, sizeof(seen));
        for (size_t i = 0; i < w->n_unique_keys && r >= 0; i++) {
                const Coord__UniqueKey *key = w->unique_keys[i];

                if (w->conflict_key[0] && strcmp(key->name, w->conflict_key) != 0)
                        continue;
                if (n == ELEMENTSOF(ks)) {
                        r = row_error_set(err, -E2BIG, "54000", "too many unique keys");
                        break;
                }
                r = ukey_get(s, u, info, key, &ks[n], err);
                if (r >= 0 && !(kl[n] = key_load_new(&seen[n], key->columns, key->n_columns)))
                        r = row_error_oom(err);
                if (r >= 0)
                        n++;
        }
        for (size_t j = from; r >= 0 && j < pend->n; j++) {
                struct eval_update *up = &pend->updates[j];
                bool taken = false, keyed = false;

                for (size_t i = 0; i < n && !taken && up->diff > 0; i++) {
                        size_t klen = 0;
                        int q = key_of(kl[i], up->row, up->len, &klen);

                        if (q < 0) {
                                r = row_error_set(err, q, "XX000", "unique key \"%s\" names a "
                                                  "column that the rows of collection %llu do "
                                                  "not have", u->k[ks[i]].key->name,
                                                  (unsigned long long)info->gid);
                                break;
                        }
                        if (q > 0)
                                continue;       /* a NULL: conflicts with nothing */
                        keyed = true;
                        taken = ukey_total(&u->k[ks[i]], kl[i]->buf, klen) +
                                server_cm_count(&seen[i], kl[i]->buf, klen) > 0;
                }
                if (r < 0)
                        break;
                if (taken) {
                        dropped += (size_t)up->diff;
                        continue;
                }
                if (keyed && up->diff > 1) {
                        dropped += (size_t)up->diff - 1;        /* its copies conflict with it */
                        up->diff = 1;
                }
                for (size_t i = 0; i < n && r >= 0 && up->diff > 0; i++)
                        r = key_add(kl[i], up->row, up->len, up->diff);
                if (r == -ENOMEM)
                        r = row_error_oom(err);
                pend->updates[out++] = *up;
        }
        if (r >= 0)
                pend->n = out;
        for (size_t i = 0; i < n; i++) {
                key_load_free(kl[i]);
                server_cm_clear(&seen[i]);
        }
        return r < 0 ? r : (int)dropped;
}

/* PostgreSQL's "Key (a, b)=(1, x) already exists.": names, the key value kb, then what
 * follows it. */
static void key_detail(char *const *names, size_t n_names, const uint8_t *kb, size_t klen,
                       const char *tail, struct row_error *err)
{
        struct row_datum d[64];
        char scratch[ROW_TEXT_SCRATCH], buf[sizeof(err->detail)];
        size_t off = 0;
        int n = row_decode(kb, klen, d, 64);

        off += (size_t)snprintf(buf, sizeof(buf), "Key (");
        for (size_t i = 0; i < n_names && off < sizeof(buf); i++)
                off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s", i ? ", " : "",
                                        names[i]);
        if (off < sizeof(buf))
                off += (size_t)snprintf(buf + off, sizeof(buf) - off, ")=(");
        for (int i = 0; i < n && off < sizeof(buf); i++) {
                const char *t = "null";
                size_t tl = 4;

                if (row_datum_format(&d[i], scratch, &t, &tl) != 0)
                        t = "null", tl = 4;
                off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%.*s", i ? ", " : "",
                                        (int)tl, t);
        }
        if (off < sizeof(buf))
                snprintf(buf + off, sizeof(buf) - off, ")%s", tail);
        row_error_detail(err, "%s", buf);
}

/* (25) Whether the staged unit keeps every foreign key of the append: 0, or -EEXIST
 * with err (23503). */
static int fk_check(struct uniq *u, struct row_error *err)
{
        char tail[128];

        for (size_t i = 0; i < u->n_fk; i++) {
                const Coord__ForeignKey *fk = u->fk[i].fk;
                const struct ukey *c = &u->k[u->fk[i].child], *p = &u->k[u->fk[i].parent];

                /* A key value the unit adds to the referencing table needs a parent. */
                const struct rcent *e;

                for (size_t j = 0; (e = server_cm_each(&c->unit, &j)); ) {
                        if (e->count <= 0 || ukey_total(p, e->row, e->len) > 0)
                                continue;
                        row_error_set(err, -EEXIST, "23503", "insert or update on table \"%s\" "
                                      "violates foreign key constraint \"%s\"", fk->table_name,
                                      fk->name);
                        snprintf(tail, sizeof(tail), " is not present in table \"%s\".",
                                 fk->ref_table_name);
                        key_detail(fk->column_names, fk->n_column_names, e->row, e->len, tail, err);
                        return -EEXIST;
                }
                /* A key value the unit takes out of the referenced table, gone from it,
                 * must be referenced no more. */
                for (size_t j = 0; (e = server_cm_each(&p->unit, &j)); ) {
                        if (e->count >= 0 || ukey_total(p, e->row, e->len) > 0 ||
                            ukey_total(c, e->row, e->len) <= 0)
                                continue;
                        row_error_set(err, -EEXIST, "23503", "update or delete on table \"%s\" "
                                      "violates foreign key constraint \"%s\" on table \"%s\"",
                                      fk->ref_table_name, fk->name, fk->table_name);
                        snprintf(tail, sizeof(tail), " is still referenced from table \"%s\".",
                                 fk->table_name);
                        key_detail(fk->ref_column_names, fk->n_ref_column_names, e->row, e->len,
                                   tail, err);
                        return -EEXIST;
                }
        }
        return 0;
}

/* (22), (25) Whether the staged unit keeps every key unique and every foreign key: 0,
 * its counts now the append's; -EEXIST with err (23505, 23503), the unit forgotten;
 * -ENOMEM. */
int server_uniq_commit(struct uniq *u, struct row_error *err)
{
        int r = 0;

        for (size_t i = 0; i < u->n && r == 0; i++) {
                struct ukey *k = &u->k[i];

                const struct rcent *e;

                for (size_t j = 0; k->key && (e = server_cm_each(&k->unit, &j)); ) {
                        int64_t total;

                        if (e->count <= 0)
                                continue;
                        total = ukey_total(k, e->row, e->len);
                        if (total <= 1)
                                continue;
                        r = row_error_set(err, -EEXIST, "23505", "duplicate key value violates "
                                          "unique constraint \"%s\"", k->key->name);
                        key_detail(k->key->column_names, k->key->n_column_names, e->row, e->len,
                                   " already exists.", err);
                        break;
                }
        }
        if (r == 0)
                r = fk_check(u, err);
        for (size_t i = 0; i < u->n; i++) {
                struct ukey *k = &u->k[i];

                const struct rcent *e;

                for (size_t j = 0; r == 0 && (e = server_cm_each(&k->unit, &j)); ) {
                        if (server_cm_add(&k->accepted, e->row, e->len, e->count) < 0)
                                r = row_error_oom(err);
                }
                server_cm_clear(&k->unit);
        }
        return r;
}

/* (22) After a durable append: the key mirrors of the table take its rows; a mirror
 * that cannot goes (rebuilt at its next use). */
void server_uniq_apply(struct cserver *s, const struct storage_info *info, const struct eval_batch *pend,
                       uint64_t new_upper)
{
        for (size_t i = 0; i < s->n_km;) {
                struct kmirror *km = s->km[i];
                struct key_load *kl;
                int r = 0;

                if (km->m.gid != info->gid) {
                        i++;
                        continue;
                }
                if (km->m.upper != info->frontiers.upper) {
                        km_remove(s, i);
                        continue;
                }
                kl = key_load_new(&km->m, km->cols, km->n_cols);
                for (size_t j = 0; kl && r >= 0 && j < pend->n; j++)
                        r = key_add(kl, pend->updates[j].row, pend->updates[j].len, pend->updates[j].diff);
                key_load_free(kl);
                if (!kl || r < 0) {
                        km_remove(s, i);
                        continue;
                }
                km->m.upper = new_upper;
                i++;
        }
}
