/* rocks.h -- what the two RocksDB owners (common/catalog, controller storage) share.
 *
 * Library code: nothing here logs.
 */
#pragma once

#include <stdint.h>

typedef struct rocksdb_t rocksdb_t;
typedef struct rocksdb_options_t rocksdb_options_t;
typedef struct rocksdb_column_family_handle_t rocksdb_column_family_handle_t;

/* RocksDB reports errors as Status::ToString() text, e.g. "IO error: While lock file:
 * /x/LOCK: Resource temporarily unavailable".  Map the cases a caller may act on to a
 * negative errno; anything else is -EIO. */
int rocks_errno(const char *msg);

/* The RocksDB owners keep the last error text per thread (dlerror() style) in a buffer
 * of their own, so each module's *_last_error() stays its own. */
#define ROCKS_ERROR_MAX 256

/* Format into buf. */
void rocks_error_setf(char buf[ROCKS_ERROR_MAX], const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
/* Take a RocksDB error string: keep "<prefix><text>" in buf, free err with
 * rocksdb_free(), return rocks_errno(text). */
int rocks_error_take(char buf[ROCKS_ERROR_MAX], const char *prefix, char *err);

/* Bytes RocksDB wrote since open, from the statistics of options (which must have had
 * rocksdb_options_enable_statistics() before the open; all zero otherwise).  Reading
 * them formats every ticker and histogram (tens of microseconds): for status requests
 * and benchmarks, not hot paths. */
struct rocks_io_stats {
        uint64_t wal_bytes;             /* rocksdb.wal.bytes: written to the WAL */
        uint64_t flush_bytes;           /* rocksdb.flush.write.bytes: table files by flushes */
        uint64_t compact_bytes;         /* rocksdb.compact.write.bytes: ... by compactions */
};
void rocks_get_io_stats(rocksdb_options_t *o, struct rocks_io_stats *ret);

/* What column families hold now, from DB properties (added to *acc, so a caller can sum
 * several families): live table files, memtables (allocated arena, so coarse: a whole
 * block once anything is written), RocksDB's estimates of live data and of keys. */
struct rocks_cf_size {
        uint64_t sst_bytes;             /* rocksdb.total-sst-files-size */
        uint64_t mem_bytes;             /* rocksdb.size-all-mem-tables */
        uint64_t live_bytes;            /* rocksdb.estimate-live-data-size (table files) */
        uint64_t keys;                  /* rocksdb.estimate-num-keys */
};
void rocks_add_cf_size(rocksdb_t *db, rocksdb_column_family_handle_t *cf, struct rocks_cf_size *acc);

/* RocksDB's info LOG level for both stores: WARN (2; stalls, background errors) and up.
 * RocksDB 7.8's info logger (EnvLogger) asserts -- Debian's build keeps asserts, so the
 * daemon aborts -- when a line is written after a write of the LOG failed, which a full
 * or failing file system under the store makes happen; fewer lines, fewer chances. */
#define ROCKS_INFO_LOG_LEVEL 2
