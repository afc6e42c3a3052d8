/* ring-shm.h -- what the shared-memory rings of common/ring have in common (internal).
 *
 * Used by fring.c (the frontier ring) and lring.c (the catalog log ring) only: POSIX
 * shared-memory names derived from the instance id, the ownership check a producer makes
 * before it takes an object over, and the futex calls readers sleep with.  Nothing here
 * keeps state or logs; errors are -errno.
 */
#pragma once

#include <limits.h>
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
