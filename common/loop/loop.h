/* loop.h -- the io_uring event loop every daemon runs on.
 *
 * One loop per thread; nothing here is thread-safe except loop_waker_wake(), which any
 * thread or (through the eventfd) any process may call.  Completions are dispatched in
 * the loop's thread, in the order the kernel posts them.
 *
 * Low-level operations take a caller-owned `struct loop_io` (embed it in your own
 * struct, recover yours with container_of): its `complete` runs once with the result
 * (bytes, a new fd, or -errno).  The io must stay valid until then.  A cancelled
 * operation still completes, usually with -ECANCELED.
 *
 * Library code: nothing here logs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loop;            /* opaque */
struct loop_timer;      /* opaque, one-shot */
struct loop_waker;      /* opaque, an eventfd read by the loop */
struct loop_io;

typedef void (*loop_io_fn)(struct loop *l, struct loop_io *io, int res);
typedef void (*loop_timer_fn)(struct loop *l, void *userdata);
typedef void (*loop_waker_fn)(struct loop *l, uint64_t count, void *userdata);
typedef void (*loop_signal_fn)(struct loop *l, int signo, void *userdata);

struct loop_io {
        loop_io_fn complete;
        /* private to the loop */
        uint32_t _inflight;
};

#ifndef container_of
#define container_of(ptr, type, member) \
        ((type *)((char *)(ptr) - __builtin_offsetof(type, member)))
#endif

/* Create and destroy.  loop_free() accepts NULL and returns NULL. */
int loop_new(unsigned entries, struct loop **ret);
struct loop *loop_free(struct loop *l);

/* Run until loop_stop(); 0 then, -errno on a fatal io_uring error. */
int loop_run(struct loop *l);
void loop_stop(struct loop *l);
/* After loop_run() returned: run again for at most timeout_ns, or until loop_stop() --
 * to let closes and cancellations in flight complete before loop_free().  0 or -errno. */
int loop_run_for(struct loop *l, uint64_t timeout_ns);

/* Monotonic time cached at the start of the current iteration. */
uint64_t loop_now_ns(struct loop *l);
/* The stall probe (loop.c note 9): the longest busy stretch -- from the return of a
 * wait for completions to the next wait, i.e. callbacks and submissions run back to
 * back -- since loop_new(), and since the previous loop_take_window_stall_ns() (which
 * starts a new window).  A stretch still running counts up to its last batch's end. */
uint64_t loop_max_stall_ns(struct loop *l);
uint64_t loop_take_window_stall_ns(struct loop *l);

/* Deferred work (loop.c note 11): loop_defer() makes d->fn run once in the loop thread
 * after the callbacks of the current batch, before the loop next submits and sleeps --
 * Redis's beforeSleep.  Queuing a queued d does nothing; loop_defer_cancel() (a no-op
 * when d is not queued) must precede freeing a queued d.  fn may queue again, itself
 * included; it runs in the same pass then. */
struct loop_defer {
        void (*fn)(struct loop *l, struct loop_defer *d);
        /* private to the loop */
        struct loop_defer *_next, **_pprev;
};

void loop_defer(struct loop *l, struct loop_defer *d);
void loop_defer_cancel(struct loop *l, struct loop_defer *d);
static inline bool loop_defer_queued(const struct loop_defer *d)
{
        return d->_pprev != NULL;
}

/* Low-level operations on a non-blocking fd.  0 on submission, -errno otherwise. */
int loop_accept(struct loop *l, struct loop_io *io, int fd);     /* res: new fd, O_CLOEXEC|O_NONBLOCK */
int loop_recv(struct loop *l, struct loop_io *io, int fd, void *buf, size_t len);
int loop_send(struct loop *l, struct loop_io *io, int fd, const void *buf, size_t len);
int loop_cancel(struct loop *l, struct loop_io *io);             /* best effort */

/* One-shot timers.  The timer is freed after its callback returns; cancelling a timer
 * that has fired is a bug.  loop_timer_cancel() accepts NULL. */
int loop_timer_add(struct loop *l, uint64_t after_ns, loop_timer_fn fn, void *userdata,
                   struct loop_timer **ret);
void loop_timer_cancel(struct loop *l, struct loop_timer *t);

/* Wake-ups from other threads or processes: loop_waker_wake() (any thread) or a write
 * of a u64 to loop_waker_fd() (any process that holds the fd) makes fn run in the loop
 * with the number of wakes coalesced since the last run. */
int loop_waker_new(struct loop *l, loop_waker_fn fn, void *userdata, struct loop_waker **ret);
int loop_waker_fd(const struct loop_waker *w);
void loop_waker_wake(struct loop_waker *w);
struct loop_waker *loop_waker_free(struct loop *l, struct loop_waker *w);

/* Futex waits in the loop (loop.c note 10): io completes once a FUTEX_WAKE on word --
 * from another thread, or from another process if shared -- reached the wait (res 0);
 * with -EAGAIN when *word no longer held val as the kernel queued it (look again);
 * -ECANCELED after loop_cancel().  word (4-aligned) stays mapped until the completion;
 * a read-only mapping will do.  0 on submission.  -EOPNOTSUPP when this loop cannot
 * (IORING_OP_FUTEX_WAIT is Linux 6.7+, or loop_futex_disable()); a kernel may also
 * refuse only in the completion, with -EINVAL or -EOPNOTSUPP.  Either way the caller
 * sleeps in futex(2) on a thread of its own instead. */
int loop_futex_wait(struct loop *l, struct loop_io *io, const uint32_t *word, uint32_t val,
                    bool shared);
/* Whether loop_futex_wait() may be tried: the kernel lists the opcode, and no
 * loop_futex_disable() (tests of the callers' fallback) came first. */
bool loop_futex_supported(const struct loop *l);
void loop_futex_disable(struct loop *l);

/* Deliver signo (blocked in the calling thread) to fn in the loop, via signalfd. */
int loop_signal_add(struct loop *l, int signo, loop_signal_fn fn, void *userdata);
