/* ring-shm.h -- what the shared-memory rings of common/ring have in common (internal).
 *
 * Used by fring.c (the frontier ring) and lring.c (the catalog log ring) only: POSIX
 * shared-memory names derived from the instance id, the ownership check a producer makes
 * before it takes an object over, the wait page (NAME.wait) and the sleep/wake
 * handshake over it (fring.c note 7).  Nothing here
 * keeps state or logs; errors are -errno.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every ring has a second object NAME + this suffix: the page readers write (the count
 * of sleeping readers), since they map NAME itself read-only. */
#define RING_SHM_WAIT_SUFFIX    ".wait"

/* A POSIX shm name: "/" then 1..NAME_MAX bytes without "/", leaving room for the wait
 * suffix.  -EINVAL or -ENAMETOOLONG. */
int ring_shm_name_check(const char *name);

/* NAME.wait into buf; name passed ring_shm_name_check(). */
void ring_shm_wait_name(const char *name, char buf[static NAME_MAX + 2]);

/* Writes "/coord-<instance>-<what>" into buf.  The instance id is [A-Za-z0-9._-]+.
 * -EINVAL on a bad instance id, -ENAMETOOLONG if the name does not fit buf or NAME_MAX. */
int ring_shm_name_for(const char *instance, const char *what, char *buf, size_t size);

/* A producer takes over only objects of its own uid, and makes sure nobody else can open
 * them (a pre-created, world-writable object would let anybody forge what readers
 * trust): -EPERM for another owner; the mode is set back to 0600 if it differs. */
int ring_shm_secure(int fd);

/* FUTEX_WAIT on a shared futex word (no FUTEX_PRIVATE_FLAG: the word lives in a shared
 * object and the producer wakes it from another process; FUTEX_WAIT only reads the word,
 * so a read-only mapping is enough).  timeout_ms < 0: no timeout.  0 when woken, when the
 * word no longer held val or on a signal (look again); -ETIMEDOUT; other -errno. */
int ring_futex_wait(const uint32_t *word, uint32_t val, int timeout_ms);

/* FUTEX_WAKE every sleeper on a shared futex word; the number woken (0 on error). */
unsigned ring_futex_wake(uint32_t *word);

/* NAME.wait, the same 16 bytes for every ring (each layout header spells it out as its
 * own struct with its own magic; ring_waitpage_check_layout() keeps them equal):
 * written by the producer once (magic, version), by readers only afterwards (waiters,
 * +1 before sleeping, -1 after; the producer only reads it). */
struct ring_waitpage {
        uint64_t magic;
        uint32_t version;
        uint32_t waiters;
};
#define ring_waitpage_check_layout(T)                                                   \
        _Static_assert(sizeof(T) == sizeof(struct ring_waitpage) &&                     \
                       offsetof(T, magic) == offsetof(struct ring_waitpage, magic) &&   \
                       offsetof(T, version) == offsetof(struct ring_waitpage, version) && \
                       offsetof(T, waiters) == offsetof(struct ring_waitpage, waiters), \
                       "wait page layout")

/* Producer: opens (creating if needed) NAME.wait, mode 0600, own uid only.  A page that
 * is new or of another magic or version is initialized (waiters 0, the magic stored
 * last with release); a valid one is kept as is, waiters included.  On success *ret_fd
 * and *ret_page are set; on failure *ret_fd may hold a descriptor the caller closes. */
int ring_waitpage_create(const char *name, uint64_t magic, uint32_t version, int *ret_fd,
                         struct ring_waitpage **ret_page);
/* Reader: maps an existing NAME.wait read-write.  -EBADMSG if it is too small or its
 * magic is not `magic`, -EPROTO for another version; *ret_fd as above. */
int ring_waitpage_attach(const char *name, uint64_t magic, uint32_t version, int *ret_fd,
                         struct ring_waitpage **ret_page);
/* Unmaps a page from either of the above.  Accepts NULL. */
void ring_waitpage_unmap(struct ring_waitpage *w);

/* The producer's half of the sleeping protocol (fring.c note 7), after its stores that
 * readers look for: unless always, nothing when no reader sleeps; else bump *notify and
 * FUTEX_WAKE.  Returns the number woken, -1 when it did not wake (no sleeper). */
int ring_wake(uint32_t *notify, const struct ring_waitpage *w, bool always);
/* The reader's half: 0 at once if has_data(ctx), else sleeps on *notify (counted in
 * waiters) until woken, timeout_ms passes (-ETIMEDOUT; 0: just check, < 0: none) or
 * has_data() turns true between the count and the sleep. */
int ring_sleep(const uint32_t *notify, struct ring_waitpage *w, bool (*has_data)(const void *ctx),
               const void *ctx, int timeout_ms);
/* ring_sleep() in two halves, for a reader whose sleep is asynchronous (an event loop's
 * io_uring futex wait): begin returns 1 at once if has_data(ctx); else it counts the
 * reader in waiters, re-checks (1 after taking the count back if has_data() turned
 * true) and returns 0 with *ret_val, the value of *notify to FUTEX_WAIT on (shared).
 * After each 0 the reader sleeps however it likes and then calls ring_sleep_end()
 * exactly once, whatever the sleep's outcome. */
int ring_sleep_begin(const uint32_t *notify, struct ring_waitpage *w,
                     bool (*has_data)(const void *ctx), const void *ctx, uint32_t *ret_val);
void ring_sleep_end(struct ring_waitpage *w);

/* The header seqlock (fring.c note 4): hdr_seq is 0 never initialized, odd while the
 * producer (re)writes the region, even and new after.  begin returns the odd value that
 * end publishes as even; a reader that copied something after it loaded an even h
 * re-checks with ring_hdr_moved(). */
uint32_t ring_hdr_write_begin(uint32_t *hdr_seq);
void ring_hdr_write_end(uint32_t *hdr_seq, uint32_t seq);
bool ring_hdr_moved(const uint32_t *hdr_seq, uint32_t h);

static inline void ring_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield" ::: "memory");
#else
        __asm__ __volatile__("" ::: "memory");
#endif
}
