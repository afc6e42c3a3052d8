/* util.c -- the few helpers in util.h that are not inline. */
#include "util.h"

#include <ctype.h>

int parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
        char *end;
        unsigned long long v;

        if (!s || !isdigit((unsigned char)*s))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE || v > max)
                return -ERANGE;
        if (*end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}
