/* util.c -- the few helpers in util.h that are not inline. */
#include "util.h"

#include <ctype.h>
#include <stdlib.h>

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

int grow_array(void **p, size_t *cap, size_t need, size_t size)
{
        size_t n;
        void *q;

        if (need <= *cap)
                return 0;
        n = *cap ? *cap : 8;
        while (n < need) {
                if (n > SIZE_MAX / 2 / size)
                        return -ENOMEM;
                n *= 2;
        }
        q = realloc(*p, n * size);
        if (!q)
                return -ENOMEM;
        *p = q;
        *cap = n;
        return 0;
}
