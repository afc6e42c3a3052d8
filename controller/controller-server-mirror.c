/* controller-server-mirror.c -- what the server mirrors of storage: opening, listing and
 * recovery after a failed write, the tables' shared frontier, the frontier ring, the
 * rows of coord_frontiers and the row counts of built-ins.
 *
 * Contract: controller-server.h; what the server's files share:
 * controller-server-internal.h.  The notes are numbered across the server
 * (controller-server.c lists where each stands).
 *
 * NOTES ON THE DESIGN
 *
 * (7) The frontier ring shows every live collection's STORED (upper, since,
 *     physical_since).  A reader computes a table's effective upper as max(its upper,
 *     the upper of gid CSERVER_GID_OBJECTS) (10); built-ins and other kinds are shown
 *     as they are.  s->rc mirrors what was last published, so that a change is
 *     published once and an unchanged collection never.  At start everything is
 *     published (readers resync on our new generation anyway); after an append the
 *     built-ins and the tables written are; after a create the new collection; after
 *     a compaction the collections it rewrote; after a drop its slot is forgotten.
 *
 * (8) Storage errors are sticky (controller-storage.h); a failed sync of the syncer
 *     (2) is one, reported through storage_sync_poll().  After one, the server fails
 *     the held output (16) and reopens the database at once: RocksDB recovery then
 *     shows exactly what reached the disk, and the mirrors are rebuilt from it.  If the reopen fails, the server
 *     stops the node and the daemon exits non-zero.
 *
 * (10) The tables' shared frontier T (as in txn-wal).  An Append at ts advances only the
 *     built-ins and the tables it writes to ts + 1; T is the stored upper of coord_objects
 *     (gid CSERVER_GID_OBJECTS), advanced by every Append in the same WriteBatch, so it is
 *     durable with it.  A table's EFFECTIVE upper is max(stored upper, T): its contents at
 *     t in [stored upper, T) equal those at stored upper - 1 (empty when never written).
 *     Every answer about a table (a peek's readability and reads, a DELETE's read,
 *     MSG_LIST_COLLECTIONS) uses the effective upper (server_effective()); the ring and
 *     coord_frontiers show the stored one next to T (gid 1's upper, row 0).  After an
 *     append every stored upper is <= T but a table created with since > T
 *     (s->born_above).  coord_objects cannot be dropped (I1); an Append is refused while
 *     it does not exist.  A table's compaction must keep since <= stored upper - 1 once
 *     written (storage refuses reads below since).  docs/ARCHITECTURE.md, "Tables' shared
 *     frontier".
 *
 * (11) Row counts of built-ins.  (3) checks that a retraction finds its row; for a
 *     table that costs a read of the table (a DELETE reads it anyway), but coord_objects
 *     holds a row per object and the adapter retracts one at every DROP, so reading it
 *     all would make a DROP O(objects).  For a built-in the check consults s->cm
 *     instead: row -> count of its contents, made (empty) when the built-in is server_created
 *     and kept by every append (each one moves the built-ins, with their updates, in
 *     append_apply()); after a restart, built by one read on first use.  A mirror is valid only for the stored upper it was kept to; one
 *     that does not match is rebuilt, and a reopen or a drop discards it.  Rows are
 *     kept whole (compared byte for byte, no hash trust): memory is about the size of
 *     the relation's rows.
 */
#include "controller-server.h"
#include "controller-server-internal.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller-eval.h"
#include "controller-storage.h"
#include "ring/fring.h"
#include "log.h"
#include "node/node.h"
#include "row/row.h"
#include "util.h"

/* ---- Storage (re)opening and listing ------------------------------------------------ */

static int list_one(const struct storage_info *info, void *userdata)
{
        struct cserver *s = userdata;
        int r = RESERVE(s->cols, s->cap_cols, s->n_cols + 1);

        if (r < 0)
                return r;
        s->cols[s->n_cols++] = *info;
        return 0;
}

/* Every collection, by gid, into s->cols. */
int server_list_all(struct cserver *s)
{
        s->n_cols = 0;
        return storage_list(s->st, list_one, s);
}

static int cmp_gid(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return (x > y) - (x < y);
}

/* The collections of gids[0..n) that exist, by gid, into s->cols. */
int server_list_some(struct cserver *s, const uint64_t *gids, size_t n)
{
        _cleanup_free_ uint64_t *v = malloc(n * sizeof(*v));
        int r = 0;

        if (!v)
                return -ENOMEM;
        memcpy(v, gids, n * sizeof(*v));
        qsort(v, n, sizeof(*v), cmp_gid);
        s->n_cols = 0;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                struct storage_info info;

                if (i > 0 && v[i] == v[i - 1])
                        continue;
                r = storage_get_info(s->st, v[i], &info);
                if (r == -ENOENT) {
                        r = 0;
                        continue;
                }
                if (r >= 0)
                        r = list_one(&info, s);
        }
        return r < 0 ? r : 0;
}

static const struct storage_info *cols_find(const struct storage_info *v, size_t n, uint64_t gid)
{
        size_t lo = LOWER_BOUND(n, m, v[m].gid, gid);

        return lo < n && v[lo].gid == gid ? &v[lo] : NULL;
}


/* ---- The tables' shared frontier (10) ----------------------------------------------- */

/* T: the stored upper of coord_objects; 0 while it does not exist. */
uint64_t server_tables_frontier(struct cserver *s)
{
        struct storage_info info;

        if (!s->st || storage_get_info(s->st, CSERVER_GID_OBJECTS, &info) < 0 ||
            info.kind != STORAGE_KIND_BUILTIN)
                return 0;
        return info.frontiers.upper;
}

/* The frontiers every answer uses: a table's upper is max(stored upper, T). */
void server_effective(struct storage_frontiers *f, enum storage_kind kind, uint64_t T)
{
        if (kind == STORAGE_KIND_TABLE && f->upper < T)
                f->upper = T;
}

static bool frontiers_exist(struct cserver *s)
{
        struct storage_info info;

        return s->st && storage_get_info(s->st, CSERVER_GID_FRONTIERS, &info) == 0 &&
               info.kind == STORAGE_KIND_BUILTIN;
}

/* ---- The ring mirror (7) ------------------------------------------------------------ */

void server_ring_set(struct cserver *s, uint64_t gid, const struct storage_frontiers *f)
{
        struct fring_frontier rec = {
                .id = gid, .upper = f->upper, .since = f->since,
                .physical_since = f->physical_since,
        };
        struct gent *e;
        int r;

        if (!s->ring)
                return;
        e = gmap_find(&s->rc, gid);
        if (e && e->a == rec.upper && e->b == rec.since && e->c == rec.physical_since)
                return;
        /* Room in the mirror first, so that a publish is never left unmirrored. */
        r = gmap_reserve(&s->rc, 1);
        if (r < 0)
                goto fail;
        if (server_out_holding(s)) {
                /* (16): shown once the appends it may derive from are durable. */
                struct out_ent o = { .kind = OUT_RING_SET, .seq = server_out_tag(s), .rec = rec };

                r = server_out_push(s, &o);
                if (r < 0)
                        goto fail;
                s->out_held_ring++;
        } else {
                assert(s->out_head == s->n_out);        /* G2 */
                r = fring_publish(s->ring, &rec);
                if (r < 0)
                        goto fail;
        }
        e = gmap_put(&s->rc, gid);
        e->a = rec.upper;
        e->b = rec.since;
        e->c = rec.physical_since;
        server_out_release(s);         /* a synced write may have covered what is held */
        return;
fail:
        /* Not mirrored, so the next change of this collection tries again. */
        if (server_ratelimit_ok(&s->rl_storage, now_ms()))
                log_warn_errno(r, "ring_publish_failed", "gid=%llu", (unsigned long long)gid);
}

void server_ring_forget(struct cserver *s, uint64_t gid)
{
        int r;

        if (!s->ring || !gmap_find(&s->rc, gid))
                return;
        if (server_out_holding(s)) {
                /* (16): in order with the records held before it. */
                struct out_ent o = { .kind = OUT_RING_FORGET, .seq = server_out_tag(s), .rec.id = gid };

                r = server_out_push(s, &o);
                if (r == 0) {
                        s->out_held_ring++;
                        gmap_remove(&s->rc, gid);
                        server_out_release(s);
                        return;
                }
                /* No memory to hold it: forget it now, nothing unsynced is shown. */
        }
        r = fring_forget(s->ring, gid);
        if (r < 0 && r != -ENOENT)
                log_warn_errno(r, "ring_forget_failed", "gid=%llu", (unsigned long long)gid);
        gmap_remove(&s->rc, gid);
}

/* Publish every collection that changed and forget the ones that are gone.  O(number
 * of collections): at open and after a failure only. */
static void ring_sync_all(struct cserver *s)
{
        _cleanup_free_ uint64_t *gone = NULL;
        size_t n_gone = 0, cap_gone = 0;
        const struct gent *ge;
        int r;

        if (!s->ring || !s->st)
                return;
        r = server_list_all(s);
        if (r < 0) {
                log_warn_errno(r, "ring_sync_failed", "");
                return;
        }
        for (size_t i = 0; (ge = gmap_each(&s->rc, &i)); ) {
                uint64_t gid = ge->key;

                if (!gid || cols_find(s->cols, s->n_cols, gid) || server_dfent_find(s, gid))
                        continue;
                if (RESERVE(gone, cap_gone, n_gone + 1) < 0) {
                        log_warn_errno(-ENOMEM, "ring_sync_failed", "");
                        break;
                }
                gone[n_gone++] = gid;
        }
        for (size_t i = 0; i < n_gone; i++)
                server_ring_forget(s, gone[i]);
        for (size_t i = 0; i < s->n_cols; i++)
                server_ring_set(s, s->cols[i].gid, &s->cols[i].frontiers);
}

/* ---- The frontiers mirror (4) ------------------------------------------------------- */

static int stray_push(struct cserver *s, const struct frow *f)
{
        int r = RESERVE(s->stray, s->cap_stray, s->n_stray + 1);

        if (r < 0)
                return r;
        s->stray[s->n_stray++] = *f;
        return 0;
}

static int frontiers_load_row(const void *row, size_t len, int64_t count, void *userdata)
{
        struct cserver *s = userdata;
        struct row_datum d[3];
        struct frow f;
        struct gent *e;
        int r;

        if (row_decode(row, len, d, 3) != 3 || d[0].kind != ROW_KIND_INT ||
            d[1].kind != ROW_KIND_INT || d[2].kind != ROW_KIND_INT) {
                /* Only this module writes the relation; such a row is damage. */
                log_error("frontiers_row_ignored", "gid=%u bytes=%zu count=%lld",
                          CSERVER_GID_FRONTIERS, len, (long long)count);
                return 0;
        }
        f = (struct frow){
                .gid = (uint64_t)d[0].i, .since = (uint64_t)d[1].i, .upper = (uint64_t)d[2].i,
                .count = count,
        };
        if (f.gid == CSERVER_FRONTIERS_SHARED_ID) {
                if (s->fr0 == 0 && count == 1 && f.since == 0 && f.upper > 0) {
                        s->fr0 = f.upper;
                        return 0;
                }
                return stray_push(s, &f);       /* a second row 0, or a damaged one */
        }
        if (gmap_find(&s->fr, f.gid))
                return stray_push(s, &f);       /* a second row of one table */
        r = gmap_reserve(&s->fr, 1);
        if (r < 0)
                return r;
        e = gmap_put(&s->fr, f.gid);
        e->a = f.since;
        e->b = f.upper;
        e->c = (uint64_t)count;
        return 0;
}

void server_frontiers_clear(struct cserver *s)
{
        gmap_clear(&s->fr);
        s->fr0 = 0;
        s->n_stray = 0;
        s->n_dirty = s->dirty_head = 0;
        s->fr_rebuild = false;
}

/* Read coord_frontiers back at its upper - 1 into s->fr, s->fr0 and s->stray. */
static int frontiers_load(struct cserver *s)
{
        struct storage_info info;
        int r;

        server_frontiers_clear(s);
        r = storage_get_info(s->st, CSERVER_GID_FRONTIERS, &info);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (info.frontiers.upper <= info.frontiers.since)
                return 0;       /* nothing readable yet: empty */
        r = storage_read(s->st, CSERVER_GID_FRONTIERS, info.frontiers.upper - 1,
                         frontiers_load_row, s, NULL);
        if (r < 0)
                server_frontiers_clear(s);
        return r;
}

/* The table's row may no longer match its stored frontiers: compare it at the next
 * append.  Never fails: without memory, every table is compared then. */
void server_frontiers_dirty(struct cserver *s, uint64_t gid)
{
        if (!frontiers_exist(s))
                return;
        if (RESERVE(s->dirty, s->cap_dirty, s->n_dirty + 1) < 0) {
                s->fr_rebuild = true;
                return;
        }
        s->dirty[s->n_dirty++] = gid;
}

/* coord_frontiers was (re)created empty: every table's row is to be inserted. */
void server_frontiers_reset(struct cserver *s)
{
        server_frontiers_clear(s);
        s->fr_rebuild = true;
}

/* The built-ins and born_above follow s->cols (a fresh listing). */
int server_builtins_from_cols(struct cserver *s)
{
        uint64_t T = 0;
        int r;

        s->n_builtins = 0;
        s->born_above = s->born_above_gid = 0;
        for (size_t i = 0; i < s->n_cols; i++) {
                const struct storage_info *c = &s->cols[i];

                if (c->kind != STORAGE_KIND_BUILTIN)
                        continue;
                r = RESERVE(s->builtins, s->cap_builtins, s->n_builtins + 1);
                if (r < 0)
                        return r;
                s->builtins[s->n_builtins++] = c->gid;        /* cols are by gid */
                if (c->gid == CSERVER_GID_OBJECTS)
                        T = c->frontiers.upper;
        }
        for (size_t i = 0; i < s->n_cols; i++) {
                const struct storage_info *c = &s->cols[i];

                if (c->kind == STORAGE_KIND_TABLE && c->frontiers.upper > T &&
                    c->frontiers.upper > s->born_above) {
                        s->born_above = c->frontiers.upper;
                        s->born_above_gid = c->gid;
                }
        }
        return 0;
}

/* Every mirror from storage: built-ins, born_above, coord_frontiers and what of it
 * differs from the stored frontiers, the ring.  O(collections): at open, after a
 * reopen, after a partial append. */
int server_mirrors_rebuild(struct cserver *s)
{
        int r;

        server_cm_drop_all(s);
        server_km_drop_all(s);
        r = server_list_all(s);
        if (r >= 0)
                r = server_builtins_from_cols(s);
        if (r >= 0)
                r = frontiers_load(s);
        if (r < 0)
                return r;
        if (frontiers_exist(s)) {
                /* Tables whose row is missing or stale, and rows of tables that are
                 * gone (a create or drop not yet followed by an append). */
                for (size_t i = 0; i < s->n_cols; i++) {
                        const struct storage_info *c = &s->cols[i];
                        const struct gent *e;

                        if (c->kind != STORAGE_KIND_TABLE)
                                continue;
                        e = gmap_find(&s->fr, c->gid);
                        if (!e || e->a != c->frontiers.since || e->b != c->frontiers.upper ||
                            e->c != 1)
                                server_frontiers_dirty(s, c->gid);
                }
                const struct gent *fe;

                for (size_t i = 0; (fe = gmap_each(&s->fr, &i)); ) {
                        const struct storage_info *c;
                        uint64_t gid = fe->key;

                        if (!gid)
                                continue;
                        c = cols_find(s->cols, s->n_cols, gid);
                        if (!c || c->kind != STORAGE_KIND_TABLE)
                                server_frontiers_dirty(s, gid);
                }
        }
        ring_sync_all(s);
        return 0;
}

/* After storage_open(): the mirrors follow the disk. */
int server_storage_opened(struct cserver *s)
{
        int r = server_mirrors_rebuild(s);

        if (r < 0)
                return log_error_errno(r, "mirrors_load_failed", "path=%s why=\"%s\"", s->path,
                                       storage_last_error());
        return 0;
}

/* (12): make again, deferred, the creates and drops the failed write lost: the
 * adapter was told they were done and will not resend them while connected. */
static int deferred_redo(struct cserver *s, const struct storage_deferred *v, size_t n)
{
        int r;

        for (size_t i = 0; i < n; i++) {
                if (v[i].drop)
                        r = storage_drop_deferred(s->st, v[i].gid);
                else
                        r = storage_create_deferred(s->st, v[i].gid, v[i].kind, v[i].since,
                                                    v[i].upper);
                if (r < 0 && r != -ENOENT && r != -EEXIST)
                        return r;
        }
        return 0;
}

/* (8): after a failed write, reopen so that memory follows what reached the disk. */
void server_storage_recover(struct cserver *s)
{
        _cleanup_free_ struct storage_deferred *lost = NULL;
        const struct storage_deferred *v;
        size_t n_lost;
        int r;

        if (!s->st || storage_error(s->st) == 0)
                return;
        log_error("storage_failed", "path=%s err=%d why=\"%s\" action=reopen", s->path,
                  storage_error(s->st), storage_last_error());
        /* (16): nothing held may be shown now; the reopen shows what reached the disk. */
        server_out_fail(s, storage_error(s->st));
        n_lost = storage_deferred_lost(s->st, &v);
        if (n_lost > 0) {
                lost = calloc(n_lost, sizeof(*lost));
                if (lost)
                        memcpy(lost, v, n_lost * sizeof(*lost));
                else
                        n_lost = 0;     /* the adapter's next resync repairs it */
        }
        s->st = storage_close(s->st);
        r = storage_open(s->path, &s->st);
        if (r >= 0)
                r = server_storage_attach(s);
        if (r >= 0)
                r = deferred_redo(s, lost, n_lost);
        if (r >= 0)
                r = server_storage_opened(s);
        if (r < 0) {
                log_error_errno(r, "storage_reopen_failed", "path=%s why=\"%s\"", s->path,
                                storage_last_error());
                s->st = storage_close(s->st);
                s->failed = true;
                node_stop(s->node);
                return;
        }
        log_info("storage_reopened", "path=%s", s->path);
        server_compute_reinstall_all(s);
}

int server_storage_failure(struct cserver *s, struct row_error *e, int r, const char *fmt, ...)
{
        char what[256];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        if (r == -ENOMEM)
                return row_error_oom(e);
        /* What the file system said as PostgreSQL says it: disk full 53100, an I/O
         * error 58030; anything else is ours (XX000). */
        row_error_set(e, r, r == -ENOSPC || r == -EDQUOT ? "53100" :
                            r == -EIO || r == -EFBIG || r == -EROFS ? "58030" : "XX000",
                      "%s: %s", what, strerrordesc_np(-r) ? strerrordesc_np(-r) : "?");
        if (storage_last_error()[0])
                row_error_detail(e, "%s", storage_last_error());
        server_storage_recover(s);
        return r;
}

int server_storage_unavailable(struct row_error *e)
{
        return row_error_set(e, -EIO, "58030", "the controller's storage is unavailable");
}

/* ---- Row counts of built-ins (11) ---------------------------------------------------- */

static uint64_t row_hash(const void *row, size_t len)
{
        const uint8_t *b = row;
        uint64_t h = 0xcbf29ce484222325ull ^ len;

        for (size_t i = 0; i < len; i++)
                h = (h ^ b[i]) * 0x100000001b3ull;
        return (uint64_t)oa_hash_id(h);
}

/* The slot of row in one array: its entry, or the empty slot ending its probe. */
static struct rcent *cm_probe(struct rcent *slots, size_t mask, uint64_t hash, const void *row,
                              size_t len)
{
        size_t i = hash & mask;

        for (; slots[i].row; i = (i + 1) & mask)
                if (slots[i].hash == hash && slots[i].len == len &&
                    (len == 0 || memcmp(slots[i].row, row, len) == 0))
                        break;
        return &slots[i];
}

/* The entry of row, in the new array or in old (oamap.c note 1); NULL if in neither. */
static struct rcent *cm_find_row(const struct cmirror *m, uint64_t hash, const void *row,
                                 size_t len)
{
        struct rcent *e;

        if (!m->slots)
                return NULL;
        e = cm_probe(m->slots, m->mask, hash, row, len);
        if (!e->row && m->old.slots)
                e = cm_probe(m->old.slots, m->old.mask, hash, row, len);
        return e->row ? e : NULL;
}

int64_t server_cm_count(const struct cmirror *m, const void *row, size_t len)
{
        const struct rcent *e = cm_find_row(m, row_hash(row, len), row, len);

        return e ? e->count : 0;
}

static bool rcent_used(const void *e)
{
        return ((const struct rcent *)e)->row != NULL;
}

static uint64_t rcent_hash(const void *e)
{
        return ((const struct rcent *)e)->hash;
}

static const struct oa_kind cm_kind = {
        .entry_size = sizeof(struct rcent), .min_slots = GMAP_MIN_SLOTS,
        .used = rcent_used, .hash = rcent_hash,
};

struct rcent *server_cm_each(const struct cmirror *m, size_t *i)
{
        return oa_each(&cm_kind, m->slots, m->mask, &m->old, i);
}

/* Room for one more row (oamap.h), and a step of a grow under way. */
static int cm_grow(struct cmirror *m)
{
        void *slots = m->slots;
        int r = oa_reserve_stepped(&cm_kind, &slots, &m->mask, &m->old, m->n, 1);

        m->slots = slots;
        return r < 0 ? r : 0;
}

/* Frees slot i's row and deletes it from one array (either one: oamap.c note 1). */
static void cm_delete_at(struct rcent *slots, size_t mask, size_t i)
{
        free(slots[i].row);
        oa_delete_at(&cm_kind, slots, mask, i);
}

/* count(row) += diff; a row whose count reaches 0 is removed.  A row still in old
 * (oamap.c note 1) is counted there.  -ENOMEM leaves the mirror unusable: the caller
 * discards it. */
int server_cm_add(struct cmirror *m, const void *row, size_t len, int64_t diff)
{
        uint64_t hash = row_hash(row, len);
        struct rcent *e;
        int r;

        r = cm_grow(m);
        if (r < 0)
                return r;
        e = cm_probe(m->slots, m->mask, hash, row, len);
        if (!e->row && m->old.slots) {
                struct rcent *o = cm_probe(m->old.slots, m->old.mask, hash, row, len);

                if (o->row) {
                        o->count += diff;
                        if (o->count == 0) {
                                cm_delete_at(m->old.slots, m->old.mask,
                                             (size_t)(o - (struct rcent *)m->old.slots));
                                m->old.n--;
                                m->n--;
                        }
                        return 0;
                }
        }
        if (!e->row) {
                if (diff == 0)
                        return 0;
                e->row = malloc(len ? len : 1);
                if (!e->row)
                        return -ENOMEM;
                if (len)
                        memcpy(e->row, row, len);
                e->hash = hash;
                e->len = len;
                e->count = 0;
                m->n++;
        }
        e->count += diff;
        if (e->count != 0)
                return 0;
        cm_delete_at(m->slots, m->mask, (size_t)(e - m->slots));
        m->n--;
        return 0;
}

void server_cm_clear(struct cmirror *m)
{
        struct rcent *e;

        for (size_t i = 0; (e = server_cm_each(m, &i)); )
                free(e->row);
        free(m->slots);
        oa_old_free(&m->old);
        m->slots = NULL;
        m->mask = m->n = 0;
}

static struct cmirror *cm_find(struct cserver *s, uint64_t gid)
{
        for (size_t i = 0; i < s->n_cm; i++)
                if (s->cm[i].gid == gid)
                        return &s->cm[i];
        return NULL;
}

void server_cm_drop(struct cserver *s, uint64_t gid)
{
        struct cmirror *m = cm_find(s, gid);

        if (!m)
                return;
        server_cm_clear(m);
        *m = s->cm[--s->n_cm];
}

void server_cm_drop_all(struct cserver *s)
{
        while (s->n_cm)
                server_cm_drop(s, s->cm[0].gid);
}

static int cm_load_row(const void *row, size_t len, int64_t count, void *userdata)
{
        return server_cm_add(userdata, row, len, count);
}

/* The mirror of the built-in info->gid, valid at its stored upper; built by one read
 * when missing or stale. */
int server_cm_get(struct cserver *s, const struct storage_info *info, struct cmirror **ret)
{
        const struct storage_frontiers *f = &info->frontiers;
        struct cmirror *m = cm_find(s, info->gid);
        int r;

        if (m && m->upper == f->upper) {
                *ret = m;
                return 0;
        }
        if (!m) {
                r = RESERVE(s->cm, s->cap_cm, s->n_cm + 1);
                if (r < 0)
                        return r;
                m = &s->cm[s->n_cm++];
                *m = (struct cmirror){ .gid = info->gid };
        }
        server_cm_clear(m);
        m->upper = f->upper;
        r = 0;
        if (f->upper > f->since) {
                s->mirror_reads++;
                r = storage_read(s->st, info->gid, f->upper - 1, cm_load_row, m, NULL);
        }
        if (r < 0) {
                server_cm_drop(s, info->gid);
                return r;
        }
        *ret = m;
        return 0;
}

/* After a durable append: the built-in's mirror (if any) takes the append's updates. */
void server_cm_apply(struct cserver *s, const struct storage_info *info, const struct eval_batch *pend,
                     uint64_t new_upper)
{
        struct cmirror *m = cm_find(s, info->gid);

        if (!m)
                return;
        if (m->upper != info->frontiers.upper) {
                server_cm_drop(s, info->gid);
                return;
        }
        for (size_t i = 0; i < pend->n; i++)
                if (server_cm_add(m, pend->updates[i].row, pend->updates[i].len, pend->updates[i].diff) < 0) {
                        server_cm_drop(s, info->gid);
                        return;
                }
        m->upper = new_upper;
}
