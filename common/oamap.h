/* oamap.h -- growing the open-addressing tables the daemons keep by id or by row: linear
 * probing over a power of two of slots, kept at most half full, an all-zero slot free.
 *
 * Each table keeps its own entry type and probe; what they share is here, the grow and
 * the deletion: the controller's gmap and row mirror (controller-server-internal.h,
 * controller-server-mirror.c), its storage map (controller-storage.c), lifecycle's object
 * map (lifecycle-state.c) and the adapter's name index (adapter-catalog.c).  All but the
 * storage map grow in steps (oamap.c note 1), so that a table of a million entries never
 * doubles in one loop turn.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The home slot hash of an id (murmur3's 64-bit finalizer: sequential ids spread). */
static inline size_t oa_hash_id(uint64_t x)
{
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 33;
        x *= 0xc4ceb9fe1a85ec53ull;
        x ^= x >> 33;
        return (size_t)x;
}

/* What the grow needs to know of a table's entries. */
struct oa_kind {
        size_t entry_size;
        size_t min_slots;                       /* power of two >= 2: the first array */
        bool (*used)(const void *entry);        /* false for the all-zero entry */
        uint64_t (*hash)(const void *entry);    /* the home slot is hash & mask */
};

/* Out of line: makes room for want entries at most half full.  The new size is min_slots
 * when there are none yet, else the old size doubled until 2 * want fit; every used entry
 * moves to the first free slot from its home.  1 if it grew, -ENOMEM (the table as it
 * was) if the allocation failed. */
int oa_grow(const struct oa_kind *k, void **slots, size_t *mask, size_t want);

/* Room for want entries in all (the table's count plus the new ones), so that inserting
 * them cannot fail: 0 if there is room already, else oa_grow(). *slots is NULL (and *mask
 * meaningless) for a table without an array yet. */
static inline int oa_reserve(const struct oa_kind *k, void **slots, size_t *mask, size_t want)
{
        size_t cap = *slots ? *mask + 1 : 0;

        if (want <= cap / 2)
                return 0;
        return oa_grow(k, slots, mask, want);
}

/* A table growing in steps (oamap.c note 1): the array it had, holding the entries not
 * moved yet.  slots == NULL: not growing.  n counts the entries left in it; cursor is the
 * next slot the steps look at, always an empty slot or the first of a cluster (a run of
 * used slots between two empty ones). */
struct oa_old {
        void *slots;
        size_t mask, n, cursor;
};

/* Below this many slots a table still grows in one go (a few microseconds). */
#define OA_STEP_MIN_SLOTS 4096u

/* Slots a step looks at per call (plus whole clusters), and per entry asked for: a table
 * at most half full needs 2 per insert to finish a grow before the next one is due. */
#define OA_STEP_SLOTS 8u

/* oa_reserve() for a table that grows in steps, holding n entries in all (both arrays):
 * first moves some of old's clusters (OA_STEP_SLOTS + 2 * more slots' worth), then makes
 * room for n + more entries at most half full in *slots alone.  A table of at least
 * OA_STEP_MIN_SLOTS slots that must grow gets a new, empty array and its present one
 * becomes old (a grow still under way is finished first).  0, 1 if it grew, -ENOMEM (the
 * table as it was).  Entries in old stay where they are until a later call moves them:
 * a pointer to an entry lasts until the table's next reserve or deletion, as before. */
int oa_reserve_stepped(const struct oa_kind *k, void **slots, size_t *mask, struct oa_old *old,
                       size_t n, size_t more);

/* Moves old's clusters into slots until at least budget slots were looked at or none is
 * left (SIZE_MAX: all); frees old's array when it is empty. */
void oa_step(const struct oa_kind *k, void *slots, size_t mask, struct oa_old *old, size_t budget);

/* Forgets a growth (the caller frees what old's entries own first). */
void oa_old_free(struct oa_old *old);

/* The next used entry of a table growing in steps, from position *i on (0 first),
 * through its array then old's: every entry once, in no order.  NULL at the end.  No
 * insert or deletion meanwhile. */
void *oa_each(const struct oa_kind *k, void *slots, size_t mask, const struct oa_old *old,
              size_t *i);

/* Backward-shift deletion: empties slot i (the caller freed what its entry owns) and moves
 * each later entry of its cluster whose home does not lie cyclically in (hole, entry]
 * back into the hole, so that probing from its home still finds every entry left and no
 * tombstone is needed.  Entries move only within their cluster: on either array of a
 * table growing in steps (oamap.c note 1).  Inline, so that a table's constant kind
 * lets the compiler call its used() and hash() directly. */
static inline void oa_delete_at(const struct oa_kind *k, void *slots, size_t mask, size_t i)
{
        char *s = slots;
        const size_t es = k->entry_size;

        memset(s + i * es, 0, es);
        for (size_t j = (i + 1) & mask; k->used(s + j * es); j = (j + 1) & mask) {
                size_t home = k->hash(s + j * es) & mask;

                if (((j - home) & mask) >= ((j - i) & mask)) {
                        memcpy(s + i * es, s + j * es, es);
                        memset(s + j * es, 0, es);
                        i = j;
                }
        }
}
