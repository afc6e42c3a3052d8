/* rocks.h -- what the two RocksDB owners (common/catalog, controller storage) share.
 *
 * Library code: nothing here logs.
 */
#pragma once

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
