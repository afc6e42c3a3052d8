/* oamap.c -- the grow of the open-addressing tables (oamap.h). */
#include "oamap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int oa_grow(const struct oa_kind *k, void **slots, size_t *mask, size_t want)
{
        size_t cap = *slots ? *mask + 1 : 0, ncap = cap ? cap : k->min_slots;
        const char *old = *slots;
        char *v;

        if (want > SIZE_MAX / 4)
                return -ENOMEM;
        while (want * 2 > ncap)
                ncap *= 2;
        v = calloc(ncap, k->entry_size);
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < cap; i++) {
                const void *e = old + i * k->entry_size;
                size_t j;

                if (!k->used(e))
                        continue;
                for (j = k->hash(e) & (ncap - 1); k->used(v + j * k->entry_size);
                     j = (j + 1) & (ncap - 1))
                        ;
                memcpy(v + j * k->entry_size, e, k->entry_size);
        }
        free(*slots);
        *slots = v;
        *mask = ncap - 1;
        return 1;
}
