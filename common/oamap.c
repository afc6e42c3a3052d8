/* oamap.c -- the grow of the open-addressing tables (oamap.h).
 *
 * NOTES
 *
 * (1) Growing in steps.  Doubling a table rehashes every entry into a new array in one
 *     call, which holds a loop for as long as the table is large (docs/benchmarks.md,
 *     "Loop stalls at 100,000").  oa_reserve_stepped() instead allocates the
 *     new array and keeps the present one as `old`; each later call moves a few of old's
 *     clusters (oa_step()) and the table's own lookups look in the new array, then in
 *     old.  Invariants:
 *     - an entry is in exactly one of the two arrays (new keys go to the new one only
 *       after the caller found them in neither; an entry moves by a copy and a zeroing);
 *     - old is never inserted into, and loses entries only by a whole cluster moved or by
 *       the table's own backward-shift deletion, which moves entries within their cluster
 *       only: so every entry left in old is still found by probing old from its home;
 *     - the cursor starts at an empty slot and steps over whole clusters, so the slots
 *       behind it are all empty and those ahead hold old's remaining entries.
 *     The new array is sized for all n entries at most half full, so moving them never
 *     needs it to grow; a grow asked while one is under way finishes that one first.
 *     test-base "oa_reserve_stepped" checks it against a reference under random
 *     inserts, deletions and lookups.
 *
 * (2) Huge pages.  A probe lands on a random slot, so an array of many megabytes costs a
 *     TLB miss (a page walk) per lookup with 4 KB pages, and a page fault per 4 KB the
 *     first time a step or an insert writes there.  oa_calloc() hints the 2 MB-aligned
 *     interior of an array of OA_HUGE_MIN_BYTES or more with MADV_HUGEPAGE: one TLB entry
 *     and one fault per 2 MB where the kernel has transparent huge pages in its madvise
 *     mode (Debian's default).  A hint only: the array works the same on 4 KB pages, and
 *     free() returns it either way.
 */
#include "oamap.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define OA_HUGE_PAGE (2u << 20)
#define OA_HUGE_MIN_BYTES (4u << 20)    /* holds at least one aligned huge page */

/* calloc(), with the huge-page hint of note 2 for a large array. */
static void *oa_calloc(size_t n, size_t size)
{
        char *v = calloc(n, size);
        uintptr_t a, e;

        if (!v || n * size < OA_HUGE_MIN_BYTES)
                return v;
        a = ((uintptr_t)v + OA_HUGE_PAGE - 1) & ~(uintptr_t)(OA_HUGE_PAGE - 1);
        e = ((uintptr_t)v + n * size) & ~(uintptr_t)(OA_HUGE_PAGE - 1);
        if (e > a)
                (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
        return v;
}

/* Copies entry e into the first free slot from its home in slots. */
static void oa_place(const struct oa_kind *k, char *slots, size_t mask, const void *e)
{
        size_t j;

        for (j = k->hash(e) & mask; k->used(slots + j * k->entry_size); j = (j + 1) & mask)
                ;
        memcpy(slots + j * k->entry_size, e, k->entry_size);
}

int oa_grow(const struct oa_kind *k, void **slots, size_t *mask, size_t want)
{
        size_t cap = *slots ? *mask + 1 : 0, ncap = cap ? cap : k->min_slots;
        const char *old = *slots;
        char *v;

        if (want > SIZE_MAX / 4)
                return -ENOMEM;
        while (want * 2 > ncap)
                ncap *= 2;
        v = oa_calloc(ncap, k->entry_size);
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < cap; i++) {
                const void *e = old + i * k->entry_size;

                if (k->used(e))
                        oa_place(k, v, ncap - 1, e);
        }
        free(*slots);
        *slots = v;
        *mask = ncap - 1;
        return 1;
}

void oa_step(const struct oa_kind *k, void *slots, size_t mask, struct oa_old *old, size_t budget)
{
        char *o = old->slots;
        size_t es = k->entry_size;

        if (!o)
                return;
        while (old->n > 0 && budget > 0) {
                char *e = o + old->cursor * es;

                if (!k->used(e)) {
                        old->cursor = (old->cursor + 1) & old->mask;
                        budget--;
                        continue;
                }
                /* A cluster starts here (note 1): all of it moves now. */
                do {
                        oa_place(k, slots, mask, e);
                        memset(e, 0, es);
                        assert(old->n > 0);
                        old->n--;
                        old->cursor = (old->cursor + 1) & old->mask;
                        e = o + old->cursor * es;
                        budget -= budget > 0;
                } while (k->used(e));
        }
        if (old->n == 0)
                oa_old_free(old);
}

void *oa_each(const struct oa_kind *k, void *slots, size_t mask, const struct oa_old *old,
              size_t *i)
{
        size_t cap = slots ? mask + 1 : 0, ocap = old->slots ? old->mask + 1 : 0;

        while (*i < cap + ocap) {
                char *e = *i < cap ? (char *)slots + *i * k->entry_size
                                   : (char *)old->slots + (*i - cap) * k->entry_size;

                (*i)++;
                if (k->used(e))
                        return e;
        }
        return NULL;
}

void oa_old_free(struct oa_old *old)
{
        free(old->slots);
        *old = (struct oa_old){ 0 };
}

int oa_reserve_stepped(const struct oa_kind *k, void **slots, size_t *mask, struct oa_old *old,
                       size_t n, size_t more)
{
        size_t cap = *slots ? *mask + 1 : 0, ncap, want;
        char *v, *o;

        if (more > SIZE_MAX / 4 - n)
                return -ENOMEM;
        want = n + more;
        if (old->slots)
                oa_step(k, *slots, *mask, old, OA_STEP_SLOTS + 2 * more);
        if (want <= cap / 2)
                return 0;
        if (cap < OA_STEP_MIN_SLOTS) {
                assert(!old->slots);
                return oa_grow(k, slots, mask, want);
        }
        for (ncap = cap * 2; want * 2 > ncap; ncap *= 2)
                ;
        v = oa_calloc(ncap, k->entry_size);
        if (!v)
                return -ENOMEM;
        if (old->slots)
                oa_step(k, *slots, *mask, old, SIZE_MAX);       /* note 1: one at a time */
        assert(!old->slots);
        /* The cursor starts at an empty slot: there is one, the table is at most half
         * full. */
        o = *slots;
        *old = (struct oa_old){ .slots = o, .mask = cap - 1, .n = n };
        while (k->used(o + old->cursor * k->entry_size))
                old->cursor++;
        *slots = v;
        *mask = ncap - 1;
        if (n == 0)
                oa_old_free(old);
        return 1;
}
