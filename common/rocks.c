/* rocks.c -- RocksDB helpers.  See rocks.h. */
#include "rocks.h"

#include <assert.h>
#include <errno.h>
#include <rocksdb/c.h>
#include <stdarg.h>
#include <stdio.h>
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
