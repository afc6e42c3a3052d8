/* lease.h -- the rules of a lease in the catalog (issue 33), as pure functions.
 *
 * A lease lets peers without a leader share work: one holder at a time per key, found
 * by a conditional claim; a holder keeps it by renewing within its ttl; its work
 * counts only through a fenced commit, which checks that the claim is still the
 * current one and live.  The adapter (adapter-lease.c) owns the leases, commits what
 * these functions say to the catalog and answers; this module decides, given a state
 * and a clock reading the caller injects (the adapter's monotonic clock), and does no
 * I/O, no logging, no allocation.  docs/lifecycle.md "Leases" states the promises.
 *
 * Every operation takes the current record `cur` and fills `*next` with the record
 * after it (a copy of cur when nothing changes); *ret_write says whether next must be
 * made durable before the answer is sent (claim, commit, release) or not (renew,
 * refused requests, a repeated commit).  The caller replaces cur by next only after
 * that write succeeded.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LEASE_KEY_MAX           256     /* bytes of a key */
#define LEASE_HOLDER_MAX        128     /* bytes of a holder's id */
#define LEASE_COMMIT_ID_MAX     128     /* bytes of a commit id */
#define LEASE_TTL_MAX_MS        3600000u

/* The lifecycle followers' duty lease: its holder enacts and publishes (lifecycle.md, "A
 * fleet of followers"); holders are "lifecycle-<instance id>". */
#define LEASE_KEY_LIFECYCLE_DUTY "lifecycle/duty"

enum lease_status {
        LEASE_OK = 0,
        LEASE_FENCED = 1,       /* not the current epoch, lapsed, or another version */
        LEASE_BUSY = 2,         /* claim: a live lease exists */
};

struct lease {
        char key[LEASE_KEY_MAX + 1];
        char holder[LEASE_HOLDER_MAX + 1];      /* "" when not held */
        uint64_t epoch;                         /* the last claim's; 0: never claimed */
        uint64_t version;                       /* +1 per fenced commit */
        uint32_t ttl_ms;                        /* the last claim's */
        char last_commit_id[LEASE_COMMIT_ID_MAX + 1];
        uint64_t last_commit_epoch;             /* 0: never committed */
        uint64_t expires_ns;                    /* the owner's monotonic clock; held only */
};

/* Keys, holders and commit ids are printable ASCII without spaces (0x21-0x7e). */

/* A key that was never claimed: epoch 0, version 0.  -EINVAL for a key that is empty,
 * too long or not printable ASCII. */
int lease_init(struct lease *l, const char *key);

/* Held and not lapsed at now_ns: now_ns < expires_ns. */
bool lease_live(const struct lease *l, uint64_t now_ns);
/* ms until it lapses (0 when not live). */
uint64_t lease_expires_in_ms(const struct lease *l, uint64_t now_ns);

/* Check a request's arguments: holder 1..LEASE_HOLDER_MAX bytes, commit_id (when not
 * NULL) 1..LEASE_COMMIT_ID_MAX bytes, ttl_ms (when not UINT32_MAX) 1..LEASE_TTL_MAX_MS.
 * 0 or -EINVAL. */
int lease_check_args(const char *holder, const char *commit_id, uint32_t ttl_ms);

/* Claim: LEASE_BUSY when a live lease exists (whoever holds it; with supersede, held
 * by another holder than this one); else the epoch goes up by one and holder holds it
 * until now + ttl (write).  supersede is for a holder that knows its earlier life is
 * over (lease.c note 4). */
enum lease_status lease_claim(const struct lease *cur, const char *holder, uint32_t ttl_ms,
                              bool supersede, uint64_t now_ns, struct lease *next,
                              bool *ret_write);

/* Renew: LEASE_FENCED unless holder holds the live lease of this epoch; else it lapses
 * ttl from now (no write: see lease_restarted()). */
enum lease_status lease_renew(const struct lease *cur, const char *holder, uint64_t epoch,
                              uint64_t now_ns, struct lease *next, bool *ret_write);

/* Commit: when commit_id is the last successful commit's, of this epoch, LEASE_OK
 * again with *ret_retried and nothing to write.  Else LEASE_FENCED unless holder holds
 * the live lease of this epoch and version is the current one; else version + 1, the
 * commit id recorded, the lease released (write). */
enum lease_status lease_commit(const struct lease *cur, const char *holder, uint64_t epoch,
                               const char *commit_id, uint64_t version, uint64_t now_ns,
                               struct lease *next, bool *ret_write, bool *ret_retried);

/* Release: LEASE_FENCED unless holder holds the live lease of this epoch; else it is
 * not held any more (write). */
enum lease_status lease_release(const struct lease *cur, const char *holder, uint64_t epoch,
                                uint64_t now_ns, struct lease *next, bool *ret_write);

/* A record read at the owner's start (now_ns): a held lease is live for its full ttl
 * from now, whatever the clock said before -- never shorter than it was. */
void lease_restarted(struct lease *l, uint64_t now_ns);

const char *lease_status_name(enum lease_status s);
