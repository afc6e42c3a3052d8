/* rocks.c -- RocksDB helpers.  See rocks.h. */
#include "rocks.h"

#include <errno.h>
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
