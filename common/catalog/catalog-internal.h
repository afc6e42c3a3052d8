/* catalog-internal.h -- what the files of the catalog store share; not part of the
 * catalog.h contract.
 *
 * The store is catalog.c (the NOTES ON THE DESIGN, errors, open and close, the sync
 * log) and the catalog-*.c files beside it.  Here: the handle, a caller's commit
 * request, the limits, and the functions one of those files calls in another, grouped
 * by the file that defines them.  common/ code: no daemon header.
 */
#pragma once

#include <pthread.h>
#include <rocksdb/c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog.h"
#include "catalog.pb-c.h"
#include "rocks.h"

/* Column family handles, in the order given to RocksDB. */
enum {
        CF_DEFAULT,
        CF_STATE,
        CF_LOG,
        CF_META,
        _CF_MAX,
};

#define GROUP_MAX 256u                          /* transactions in one WriteBatch */
/* ... unless a chain (catalog_commit_many(), at most GROUP_MAX long) ends past them:
 * the most transactions of one group, what the commit hook may get in one call. */
#define GROUP_MAX_CHAINED (2 * GROUP_MAX - 1)
#define GROUP_WINDOW_MAX_NS (200u * 1000u)      /* longest wait for a group to fill */
#define GROUP_SPINNERS_MAX 8u                   /* callers yielding at once, at most */
#define GROUP_YIELD_MIN 3u                      /* committers seen, at least, to yield */
#define WRITE_BUFFER_SIZE (4u << 20)
#define SYNCLOG_SEGMENT_SIZE (2u << 20)         /* catalog.c NOTE 8 */
#define SYNCLOG_SEGMENTS 4u
#define MAX_TOTAL_WAL_SIZE (16u << 20)
#define INFO_LOG_FILES 4
#define INFO_LOG_SIZE (1u << 20)

#define SEQ_KEY_LEN 8                           /* big-endian u64, log keys and last_seq */
#define PACK_BUF_KEEP (1u << 20)                /* a bigger pack_buf is freed after its group */

enum req_state {
        REQ_QUEUED,
        REQ_GROUPED,
        REQ_DONE,
};

/* One caller's transaction, on the caller's stack.  Who writes what:
 *   state    QUEUED -> GROUPED by a leader under c->lock; GROUPED -> DONE by the
 *            leader without it (a release store that publishes seq and result)
 *   seq, txn.seq, txn.commit_ms, entry_off, entry_len, result
 *            by the leader while the request is GROUPED
 *   next     by whoever holds c->lock while QUEUED; by the leader while GROUPED
 * The owner reads seq and result after it has seen DONE (acquire), and returns --
 * the request vanishes with its stack frame -- as soon as it has; so the leader
 * touches a request no more once it has stored DONE. */
struct commit_req {
        const struct catalog_op *ops;           /* borrowed from the caller */
        size_t n_ops;
        Coord__CatalogTxn txn;                  /* the log entry; ops point into ops[] */
        Coord__CatalogOp *pb_ops;
        Coord__CatalogOp **pb_op_ptrs;
        size_t entry_off, entry_len;            /* the packed log entry in c->pack_buf */
        uint64_t seq;
        int result;
        enum req_state state;
        bool chained;                           /* catalog_commit_many(): the next
                                                 * request goes in the same group */
        struct commit_req *next;                /* on c->queue, then in the group */
};

struct catalog {
        rocksdb_t *db;
        rocksdb_options_t *options;
        rocksdb_column_family_handle_t *cf[_CF_MAX];
        rocksdb_writeoptions_t *write_options;  /* sync = 1 */
        rocksdb_writeoptions_t *nosync_options; /* sync = 0: behind the sync log (8) */
        struct synclog *synclog;                /* primary only (catalog.c NOTE 8); NULL: off */
        rocksdb_readoptions_t *read_options;
        rocksdb_flushoptions_t *flush_options;
        bool secondary;

        /* Bumped (atomically, after the members are DONE) at the end of every group:
         * callers in catalog_commit() sleep on it as a futex. */
        uint32_t group_end;
        /* Callers yielding before they sleep, and what the waits came to (atomic). */
        unsigned spinners;
        uint64_t waits_yielded, waits_slept;

        /* catalog.c NOTE 8: RocksDB's WAL writer, between a leader and the sync log's thread. */
        pthread_mutex_t wal_lock;
        bool wal_failed;                        /* under wal_lock: never call it again */
        /* Leader only: group_write() handed the group's bytes to the file system (a
         * failure after that leaves a group that a restart may find whole). */
        bool group_written;

        pthread_mutex_t lock;
        /* Protected by lock: */
        int err;                                /* sticky error; 0 while OPEN */
        char err_msg[256];                      /* its message, handed to every caller */
        bool err_written;                       /* the failed group may be on disk */
        uint64_t last_seq;                      /* highest durable (caught-up) seq */
        bool writer_busy;                       /* a leader owns the write path */
        struct commit_req *queue_head, *queue_tail;
        size_t n_queued;
        size_t expect;                          /* committers seen at the last group end */
        uint64_t window_start_ns;               /* GATHERING since */
        uint64_t window_end_ns;                 /* GATHERING until; 0: not GATHERING */
        const struct commit_req *window_opener; /* sleeps with window_end_ns as timeout */
        uint64_t debug_window_ns;               /* test hook: every window this long */
        void (*debug_group_end)(void *);        /* test hook: after unlock, before the wake */
        void *debug_group_end_arg;
        void (*debug_group_write)(void *);      /* test hook: after the write, still BUSY */
        void *debug_group_write_arg;
        uint64_t sync_avg_ns;                   /* moving average of a group's write */
        uint64_t spin_max_ns;                   /* longest yielding wait; 0: sleep at once */
        uint64_t sync_window_max_ns;            /* catalog_take_sync_window_max_ns() */
        bool fail_next_sync;                    /* test hook */
        unsigned n_iters;                       /* live log iterators */
        struct catalog_stats stats;
        /* The commit hook (catalog_set_commit_hook()): set under c->lock, called by a
         * leader under c->lock, so calls are serialized and see the final last_seq. */
        catalog_commit_hook_fn hook;
        void *hook_userdata;

        /* Owned by the leader while writer_busy; nobody else touches them: */
        rocksdb_writebatch_t *batch;
        uint8_t *pack_buf;                      /* the group's log entries, end to end */
        size_t pack_size;
        struct catalog_committed committed[GROUP_MAX_CHAINED];  /* what the hook gets */
};

struct catalog_log_iter {
        struct catalog *c;
        rocksdb_iterator_t *it;
        uint64_t next_seq;                      /* the seq the next entry must carry */
};

/* The last error message per thread (dlerror() style): RocksDB's text, or ours. */
extern _Thread_local char catalog_thread_error[ROCKS_ERROR_MAX];
#define set_thread_error(...) rocks_error_setf(catalog_thread_error, __VA_ARGS__)

/* catalog.c */
int sticky_error_locked(struct catalog *c);
void wal_write(struct catalog *c, const rocksdb_writeoptions_t *options, char **err);
int rocks_error(char *err);
int sticky_error(struct catalog *c);
size_t cf_index(enum catalog_cf cf);
int read_meta_last_seq(struct catalog *c, uint64_t *ret);

/* catalog-write.c */
bool catalog_check(const struct catalog *c);     /* unless NDEBUG */
