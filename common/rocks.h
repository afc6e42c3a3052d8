/* rocks.h -- what the two RocksDB owners (common/catalog, controller storage) share.
 *
 * Library code: nothing here logs.
 */
#pragma once

/* RocksDB reports errors as Status::ToString() text, e.g. "IO error: While lock file:
 * /x/LOCK: Resource temporarily unavailable".  Map the cases a caller may act on to a
 * negative errno; anything else is -EIO. */
int rocks_errno(const char *msg);
