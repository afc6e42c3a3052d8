/* lease.c -- the rules of a lease (issue 33).  See lease.h.
 *
 * NOTES ON THE DESIGN
 * (1) Epochs.  lease_claim() is the only function that changes an epoch, and only to
 *     epoch + 1, and only when no live lease exists: so a key's epochs strictly
 *     increase and each names one claim (one holder).  The caller makes the new epoch
 *     durable before the claimer learns it (adapter-lease.c note 2), so a restart
 *     never hands the same epoch out twice.
 * (2) Fencing.  lease_renew(), lease_commit() and lease_release() act only for the
 *     holder of the current epoch while its lease is live (lease_held()); anything
 *     else is LEASE_FENCED and changes nothing.  A commit also needs the version the
 *     holder claimed at: versions move by exactly one per successful commit.
 * (3) Repeated commits.  A commit records (commit id, epoch).  The same pair again --
 *     a holder that lost the answer -- is answered LEASE_OK with nothing written, as
 *     long as no later commit on the key replaced the record.
 * (4) Superseding.  A claim with supersede by the holder of a live lease takes it again
 *     at epoch + 1: the claimer vouches that no earlier life of it still works (a
 *     lifecycle follower holds its instance's lock, which dies with the process), and
 *     the new epoch fences whatever that life sent.  Another holder's live lease is
 *     BUSY as always (note 1 holds: one holder per epoch, epochs increase).
 */
#include "lease/lease.h"

#include <errno.h>
#include <string.h>

/* 1..max bytes of printable ASCII without spaces: keys, holders and commit ids go into
 * key=value log lines and text columns as they are. */
static bool str_ok(const char *s, size_t max)
{
        size_t n;

        if (!s)
                return false;
        n = strnlen(s, max + 1);
        if (n < 1 || n > max)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
                        return false;
        return true;
}

int lease_init(struct lease *l, const char *key)
{
        if (!str_ok(key, LEASE_KEY_MAX))
                return -EINVAL;
        memset(l, 0, sizeof(*l));
        strcpy(l->key, key);
        return 0;
}

bool lease_live(const struct lease *l, uint64_t now_ns)
{
        return l->holder[0] && now_ns < l->expires_ns;
}

uint64_t lease_expires_in_ms(const struct lease *l, uint64_t now_ns)
{
        if (!lease_live(l, now_ns))
                return 0;
        return (l->expires_ns - now_ns + 999999) / 1000000;
}

int lease_check_args(const char *holder, const char *commit_id, uint32_t ttl_ms)
{
        if (!str_ok(holder, LEASE_HOLDER_MAX))
                return -EINVAL;
        if (commit_id && !str_ok(commit_id, LEASE_COMMIT_ID_MAX))
                return -EINVAL;
        if (ttl_ms != UINT32_MAX && (ttl_ms == 0 || ttl_ms > LEASE_TTL_MAX_MS))
                return -EINVAL;
        return 0;
}

/* Note 2: holder holds the live lease of epoch. */
static bool lease_held(const struct lease *cur, const char *holder, uint64_t epoch,
                       uint64_t now_ns)
{
        return lease_live(cur, now_ns) && cur->epoch == epoch && strcmp(cur->holder, holder) == 0;
}

enum lease_status lease_claim(const struct lease *cur, const char *holder, uint32_t ttl_ms,
                              bool supersede, uint64_t now_ns, struct lease *next,
                              bool *ret_write)
{
        *next = *cur;
        *ret_write = false;
        if (lease_live(cur, now_ns) && !(supersede && strcmp(cur->holder, holder) == 0))
                return LEASE_BUSY;      /* note 4 */
        /* Note 1. */
        next->epoch = cur->epoch + 1;
        strncpy(next->holder, holder, LEASE_HOLDER_MAX);
        next->holder[LEASE_HOLDER_MAX] = '\0';
        next->ttl_ms = ttl_ms;
        next->expires_ns = now_ns + (uint64_t)ttl_ms * 1000000u;
        *ret_write = true;
        return LEASE_OK;
}

enum lease_status lease_renew(const struct lease *cur, const char *holder, uint64_t epoch,
                              uint64_t now_ns, struct lease *next, bool *ret_write)
{
        *next = *cur;
        *ret_write = false;
        if (!lease_held(cur, holder, epoch, now_ns))
                return LEASE_FENCED;
        next->expires_ns = now_ns + (uint64_t)cur->ttl_ms * 1000000u;
        return LEASE_OK;
}

enum lease_status lease_commit(const struct lease *cur, const char *holder, uint64_t epoch,
                               const char *commit_id, uint64_t version, uint64_t now_ns,
                               struct lease *next, bool *ret_write, bool *ret_retried)
{
        *next = *cur;
        *ret_write = false;
        *ret_retried = false;
        /* Note 3. */
        if (epoch != 0 && cur->last_commit_epoch == epoch &&
            strcmp(cur->last_commit_id, commit_id) == 0) {
                *ret_retried = true;
                return LEASE_OK;
        }
        if (!lease_held(cur, holder, epoch, now_ns) || cur->version != version)
                return LEASE_FENCED;
        next->version = cur->version + 1;
        strncpy(next->last_commit_id, commit_id, LEASE_COMMIT_ID_MAX);
        next->last_commit_id[LEASE_COMMIT_ID_MAX] = '\0';
        next->last_commit_epoch = epoch;
        next->holder[0] = '\0';
        next->expires_ns = 0;
        *ret_write = true;
        return LEASE_OK;
}

enum lease_status lease_release(const struct lease *cur, const char *holder, uint64_t epoch,
                                uint64_t now_ns, struct lease *next, bool *ret_write)
{
        *next = *cur;
        *ret_write = false;
        if (!lease_held(cur, holder, epoch, now_ns))
                return LEASE_FENCED;
        next->holder[0] = '\0';
        next->expires_ns = 0;
        *ret_write = true;
        return LEASE_OK;
}

void lease_restarted(struct lease *l, uint64_t now_ns)
{
        l->expires_ns = l->holder[0] ? now_ns + (uint64_t)l->ttl_ms * 1000000u : 0;
}

const char *lease_status_name(enum lease_status s)
{
        switch (s) {
        case LEASE_OK: return "ok";
        case LEASE_FENCED: return "fenced";
        case LEASE_BUSY: return "busy";
        }
        return "?";
}
