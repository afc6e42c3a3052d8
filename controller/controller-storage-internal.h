/* controller-storage-internal.h -- shared by the files of the storage module
 * (controller-storage*.c); not part of the controller-storage.h contract.
 *
 * The handle and what it holds (collections, batch descriptors, the group being
 * staged, the merge and syncer threads' state), the helpers that run per update or
 * per key (inline), and the functions that one file of the module calls in another,
 * grouped by the file that defines them.  "NOTE n" is the module's note of that
 * number: controller-storage.c lists where each stands.
 */
#pragma once

#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "controller-storage.h"
#include "rocks.h"
#include "storage.pb-c.h"
#include "util.h"

enum {
        CF_DEFAULT,
        CF_COLLECTIONS,
        CF_BATCHES,
        CF_CHUNKS,
        _CF_MAX,
};

#define KEY_GID_LEN 8                           /* gid */
#define KEY_BATCH_LEN 16                        /* gid | lower */
#define KEY_CHUNK_LEN 20                        /* gid | lower | part */
#define KEY_END_LEN 24                          /* gid | 16 x 0xff: above every key of gid */

#define CHUNK_MAX_UPDATES 4096u
#define PENDING_NEW_BATCHES 8u                  /* controller-storage-compact.c NOTE 6 */

/* A batch descriptor (controller-storage.c NOTE 4), the in-memory StorageBatch. */
struct batch_desc {
        uint64_t lower, upper;
        uint64_t since;
        uint64_t updates;
        uint64_t bytes;
        uint32_t parts;
};

struct collection {
        uint64_t gid;
        enum storage_kind kind;
        uint64_t since, upper, physical_since;
        uint8_t mark[STORAGE_MARK_MAX];         /* storage_append.mark, durable with upper */
        uint8_t mark_len;

        /* Descriptors in lower order, valid once loaded (controller-storage.c NOTE 8).  Entries past
         * n_batches belong to the group being staged (controller-storage-write.c NOTE 7). */
        bool loaded;
        struct batch_desc *batches;
        size_t n_batches, cap_batches;
        size_t batches_at_compaction;           /* n_batches after the last compaction */

        /* On s->pending_* while queued for storage_compact_pending(). */
        bool pending;
        struct collection *pending_prev, *pending_next;

        /* s->merge is merging batches merge_j .. merge_end - 1 (controller-storage-compact.c NOTE 13); queue again
         * when it is applied (a compaction was asked for meanwhile). */
        bool merging, merge_repend;
        size_t merge_j, merge_end;

        /* s->stages[stage_idx] is ours while stage_gen == s->gen. */
        uint64_t stage_gen;
        size_t stage_idx;
};

/* One collection's state while a group is built (controller-storage-write.c NOTE 7). */
struct stage {
        struct collection *c;
        uint64_t since, upper;
        const uint8_t *mark;                    /* NULL: c's stays; borrowed from the append */
        size_t mark_len;
        size_t n_batches;                       /* committed ones plus staged new ones */
        struct batch_desc tail;                 /* the committed newest batch, as staged */
        bool tail_changed;
        bool changed;                           /* anything to write */
};

/* An update being sorted: a row borrowed from the caller or from a decoded chunk. */
struct upd {
        const uint8_t *row;
        uint32_t len;
        uint64_t time;
        int64_t diff;
};

/* gid -> collection, open addressing with linear probing; at most half full. */
struct gid_map {
        struct collection **slots;
        size_t mask;
        size_t n;
};

struct storage {
        rocksdb_t *db;
        rocksdb_options_t *options;
        rocksdb_column_family_handle_t *cf[_CF_MAX];
        rocksdb_writeoptions_t *write_options;  /* sync = 1 */
        rocksdb_writeoptions_t *write_nosync;   /* sync = 0: compactions only (1) */
        rocksdb_readoptions_t *read_options;
        rocksdb_flushoptions_t *flush_options;
        rocksdb_writebatch_t *wb;               /* empty between calls */

        int err;                                /* sticky error, 0 while OPEN (controller-storage-write.c NOTE 9) */
        char err_msg[256];
        bool fail_next_write;                   /* test hook */
        uint64_t sync_write_window_max_ns;      /* storage_take_sync_window_max_ns() */

        struct gid_map map;
        struct collection *pending_head, *pending_tail;
        size_t n_pending;

        uint64_t gen;                           /* of the group being staged */
        struct stage *stages;
        size_t n_stages, cap_stages;

        /* Scratch of one call. */
        struct upd *upd;
        size_t n_upd, cap_upd;
        struct upd *upd_tmp;            /* upds_sum_by_row()'s scratch */
        size_t cap_upd_tmp;
        struct upd_sum *sums;           /* rest_sum_by_row()'s */
        size_t cap_sums;
        uint32_t *slots;                /* its hash table: indexes into sums, or UINT32_MAX */
        size_t cap_slots;
        Coord__StorageChunk **chunks;           /* decoded chunks that upd[] points into */
        size_t n_chunks, cap_chunks;
        uint8_t *rows_buf, *pack_buf;
        size_t cap_rows, cap_pack;
        uint32_t chunk_lens[CHUNK_MAX_UPDATES];
        uint64_t chunk_times[CHUNK_MAX_UPDATES];
        int64_t chunk_diffs[CHUNK_MAX_UPDATES];

        /* Deferred creates and drops (storage_create_deferred(), storage_drop_deferred()):
         * shown in memory at once, put into the next synced write after its own
         * records, in order; cleared by every write, successful or not. */
        struct storage_deferred *def;
        size_t n_def, cap_def;

        struct merge *merge;                    /* the merge in the background (controller-storage-compact.c NOTE 13) */
        bool shadow;                            /* a merge's or a reader's handle (controller-storage-compact.c NOTE 13, 15) */
        const rocksdb_snapshot_t *snap;         /* a reader's handle: what it reads (controller-storage-read.c NOTE 15) */
        atomic_uint readers;                    /* storage_reader_new() not freed yet (controller-storage-read.c NOTE 15) */

        /* Group commit (controller-storage-write.c NOTE 14). */
        uint64_t seq_written, seq_must, seq_durable;
        struct def_tagged *def_unsynced;        /* deferred changes of writes > seq_durable */
        size_t n_def_unsynced, cap_def_unsynced;
        struct syncer *syncer;                  /* NULL: every append is synced */
        char *sync_hold_path;                   /* test hook, for the syncer */

        struct storage_stats stats;
};

/* A merge of a run b_j .. b_end-1 in a thread of its own (controller-storage-compact.c NOTE 13).  The loop thread
 * fills everything above `done` before pthread_create() and reads the results only
 * after `done` is set (release/acquire) and the thread is joined; the worker touches
 * nothing else: not the collection (c->batches may move under appends), not s. */
struct merge {
        pthread_t thread;
        atomic_bool done;

        /* Inputs. */
        struct storage *w;                      /* db and cf of s, scratch and wb of its own */
        uint64_t gid;
        size_t j, end;
        struct batch_desc *run;                 /* copies of b_j .. b_end-1 */
        struct batch_desc merged;               /* lower, upper, since set; the rest out */

        /* Results. */
        int r;
        char msg[ROCKS_ERROR_MAX];
        uint64_t took_ns;
};

/* A deferred change written by a write that is not known durable yet (controller-storage-write.c NOTE 14). */
struct def_tagged {
        uint64_t seq;
        struct storage_deferred d;
};

/* The syncer thread (controller-storage-write.c NOTE 14).  The loop thread sets it up before pthread_create()
 * and frees it after pthread_join(); in between, everything below `lock` is guarded by
 * it, the rest is read-only. */
struct syncer {
        pthread_t thread;
        rocksdb_t *db;
        storage_sync_notify_fn notify;
        void *userdata;
        char *hold_path;                        /* test hook; owned */
        char *fail_path;                        /* test hook: hold_path + "-fail"; owned */

        pthread_mutex_t lock;
        pthread_cond_t cond;
        uint64_t want;                          /* loop: sync the writes up to this */
        uint64_t started;                       /* syncer: target of the sync running */
        uint64_t done;                          /* syncer: durable up to this */
        int err;                                /* syncer: a sync failed; no more syncs */
        bool writer_failed;                     /* loop: a write failed; no more syncs */
        char msg[ROCKS_ERROR_MAX];
        bool fail_next;                         /* test hook */
        bool stop;
        atomic_bool stopping;                   /* for the hold wait, outside lock */
        uint64_t syncs, sync_ns, sync_max_ns;
        uint64_t sync_window_max_ns;            /* storage_take_sync_window_max_ns() */
};


/* The text of the calling thread's last error (storage_last_error()). */
extern _Thread_local char storage_thread_error[ROCKS_ERROR_MAX];
#define set_thread_error(...) rocks_error_setf(storage_thread_error, __VA_ARGS__)

/* Small helpers, inline: they run per update or per key. */

static inline uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static inline uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

static inline void be32_put(uint8_t *p, uint32_t v)
{
        p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16);
        p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static inline uint32_t be32_get(const uint8_t *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void key_batch(uint8_t k[KEY_BATCH_LEN], uint64_t gid, uint64_t lower)
{
        be64_put(k, gid);
        be64_put(k + 8, lower);
}

static inline void key_chunk(uint8_t k[KEY_CHUNK_LEN], uint64_t gid, uint64_t lower, uint32_t part)
{
        key_batch(k, gid, lower);
        be32_put(k + 16, part);
}

static inline void key_end(uint8_t k[KEY_END_LEN], uint64_t gid)
{
        be64_put(k, gid);
        memset(k + 8, 0xff, KEY_END_LEN - 8);
}

/* Rows compare as byte strings: memcmp, then the shorter first. */
static inline int row_cmp(const struct upd *a, const struct upd *b)
{
        uint32_t n = a->len < b->len ? a->len : b->len;
        int c = n ? memcmp(a->row, b->row, n) : 0;

        if (c)
                return c;
        return (a->len > b->len) - (a->len < b->len);
}

/* The i-th update of a decoded chunk; *off is the offset of its row in rows. */
static inline struct upd chunk_upd(const Coord__StorageChunk *ch, size_t i, size_t *off)
{
        struct upd u = {
                .row = ch->rows.data + *off,
                .len = ch->row_lens[i],
                .time = ch->times[i],
                .diff = ch->diffs[i],
        };

        *off += u.len;
        return u;
}

/* Called for every chunk of a scan; may take the chunk (set *chunk to NULL). */
typedef int (*chunk_fn)(struct storage *s, uint64_t lower, uint32_t part, size_t bytes,
                        Coord__StorageChunk **chunk, void *userdata);

/* A scan that keeps its chunks in s->chunks and their updates in s->upd: time > max
 * are skipped, times below advance_to are raised to it. */
struct collect {
        uint64_t max;
        uint64_t advance_to;
};


/* controller-storage.c: errors. */
int storage_rocks_error(char *err);
int storage_sticky_error(const struct storage *s);
int storage_corrupt(uint64_t gid, const char *what);

/* controller-storage.c: helpers, invariants (controller-storage.c NOTE 4), the gid map, the compaction queue. */
int storage_upd_cmp_time_row(const void *x, const void *y);
int storage_upds_consolidate(struct upd *v, size_t n, size_t *ret_n);
void storage_chunks_release(struct storage *s);
const char *storage_collection_invalid(const struct collection *c);
struct collection *storage_map_find(const struct gid_map *m, uint64_t gid);
int storage_map_reserve(struct gid_map *m);
void storage_map_insert(struct gid_map *m, struct collection *c);
void storage_map_remove(struct gid_map *m, const struct collection *c);
void storage_pending_add(struct storage *s, struct collection *c);
void storage_pending_remove(struct storage *s, struct collection *c);
struct collection *storage_collection_free(struct collection *c);

/* controller-storage.c: loading (controller-storage.c NOTE 8); the handles of merges and readers (NOTES 13, 15). */
int storage_collection_load(struct storage *s, struct collection *c);
struct storage *storage_shadow_new(const struct storage *s);
void storage_shadow_free(struct storage *w);

/* controller-storage-records.c: records, into s->wb and decoded. */
void storage_put_collection_mark(struct storage *s, const struct collection *c, uint64_t since,
                                 uint64_t upper, uint64_t physical_since, const uint8_t *mark,
                                 size_t mark_len);
void storage_put_collection(struct storage *s, const struct collection *c, uint64_t since,
                            uint64_t upper, uint64_t physical_since);
void storage_put_batch(struct storage *s, uint64_t gid, const struct batch_desc *b);
void storage_delete_batch(struct storage *s, uint64_t gid, uint64_t lower);
void storage_delete_chunks(struct storage *s, uint64_t gid, uint64_t lower, uint32_t from,
                           uint32_t to);
int storage_put_chunks(struct storage *s, uint64_t gid, uint64_t lower, const struct upd *v,
                       size_t n, uint32_t *ret_parts, uint64_t *ret_bytes);
int storage_chunk_decode(uint64_t gid, const char *val, size_t len, Coord__StorageChunk **ret);
int storage_batch_decode(uint64_t gid, const char *key, size_t klen, const char *val,
                         size_t vlen, struct batch_desc *ret);

/* controller-storage-records.c: iteration. */
rocksdb_iterator_t *storage_iter_new(struct storage *s, int cf, const uint8_t *lo, size_t lo_len,
                                     const uint8_t *hi, size_t hi_len, rocksdb_readoptions_t **ret_ro);
int storage_iter_free(rocksdb_iterator_t *it, rocksdb_readoptions_t *ro, int r);
int storage_scan_chunks(struct storage *s, uint64_t gid, uint64_t from, uint64_t to, chunk_fn fn,
                        void *userdata);
int storage_scan_batch(struct storage *s, uint64_t gid, const struct batch_desc *b, chunk_fn fn,
                       void *userdata);
int storage_collect_chunk(struct storage *s, uint64_t lower, uint32_t part, size_t bytes,
                          Coord__StorageChunk **chunk, void *userdata);

/* controller-storage-write.c: the write path (NOTES 1, 9), group commit (controller-storage-write.c NOTE 14). */
int storage_write_opts(struct storage *s, bool sync);
struct syncer *storage_syncer_stop(struct syncer *y);

/* controller-storage-compact.c: merges in the background (controller-storage-compact.c NOTE 13). */
int storage_merge_finish(struct storage *s, bool wait, storage_compacted_fn fn, void *userdata);
struct merge *storage_merge_free(struct merge *mg);

/* controller-storage-read.c: introspection. */
void storage_info_of(const struct collection *c, struct storage_info *ret);
int storage_collections_sorted(const struct storage *s, struct collection ***ret);
