/* rocks.c -- RocksDB helpers.  See rocks.h. */
#include "rocks.h"

#include <assert.h>
#include <errno.h>
#include <rocksdb/c.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int rocks_errno(const char *msg)
{
        static const struct {
                const char *text;
                int err;
        } table[] = {
                { "No space left on device", -ENOSPC },
                { "While lock file", -EBUSY },             /* held by another process */
                { "lock hold by current process", -EBUSY },
                { "No such file or directory", -ENOENT },
                { "does not exist (create_if_missing is false)", -ENOENT },
                { "Permission denied", -EACCES },
                { "Read-only file system", -EROFS },
                { "Corruption: ", -EBADMSG },
                { "Column family not found", -ENOENT },
                { "Invalid argument: ", -EINVAL },
                { "Not implemented: ", -EOPNOTSUPP },
        };

        if (!msg)
                return -EIO;
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (strstr(msg, table[i].text))
                        return table[i].err;
        return -EIO;
}

void rocks_error_setf(char buf[ROCKS_ERROR_MAX], const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(buf, ROCKS_ERROR_MAX, fmt, ap);
        va_end(ap);
}

int rocks_error_take(char buf[ROCKS_ERROR_MAX], const char *prefix, char *err)
{
        int r;

        assert(err);
        r = rocks_errno(err);
        rocks_error_setf(buf, "%s%s", prefix, err);
        rocksdb_free(err);
        return r;
}

/* "rocksdb.wal.bytes COUNT : 123" in the statistics text; 0 when absent.  The name is
 * matched whole: it must be followed by " COUNT". */
static uint64_t ticker(const char *stats, const char *name)
{
        size_t n = strlen(name);

        for (const char *p = stats; (p = strstr(p, name)); p += n)
                if ((p == stats || p[-1] == '\n') && strncmp(p + n, " COUNT : ", 9) == 0)
                        return strtoull(p + n + 9, NULL, 10);
        return 0;
}

void rocks_get_io_stats(rocksdb_options_t *o, struct rocks_io_stats *ret)
{
        char *s;

        assert(ret);
        *ret = (struct rocks_io_stats){ 0 };
        if (!o || !(s = rocksdb_options_statistics_get_string(o)))
                return;
        ret->wal_bytes = ticker(s, "rocksdb.wal.bytes");
        ret->flush_bytes = ticker(s, "rocksdb.flush.write.bytes");
        ret->compact_bytes = ticker(s, "rocksdb.compact.write.bytes");
        rocksdb_free(s);
}

void rocks_add_cf_size(rocksdb_t *db, rocksdb_column_family_handle_t *cf, struct rocks_cf_size *acc)
{
        uint64_t v;

        assert(db && cf && acc);
        if (rocksdb_property_int_cf(db, cf, "rocksdb.total-sst-files-size", &v) == 0)
                acc->sst_bytes += v;
        if (rocksdb_property_int_cf(db, cf, "rocksdb.size-all-mem-tables", &v) == 0)
                acc->mem_bytes += v;
        if (rocksdb_property_int_cf(db, cf, "rocksdb.estimate-live-data-size", &v) == 0)
                acc->live_bytes += v;
        if (rocksdb_property_int_cf(db, cf, "rocksdb.estimate-num-keys", &v) == 0)
                acc->keys += v;
}
