/* loop.c -- the io_uring event loop (contract in loop.h).
 *
 * Owner: common/loop.  Callers: common/ipc and the three daemons, one loop per thread.
 *
 * NOTES ON THE DESIGN OF THE LOOP
 *
 * (1) One kind of completion.  Every operation the loop submits carries, as its
 *     user_data, the address of a struct loop_io.  Internal objects (timers, wakers, the
 *     signal source) embed a loop_io of their own whose `complete` is a static function
 *     here, so dispatch never has to guess what a CQE belongs to: it calls
 *     io->complete(l, io, res) for every CQE.  The one exception is user_data 0
 *     (LOOP_UD_NONE): the loop's own cancel and timeout-remove requests, whose CQEs only
 *     say whether the cancellation found its target and are dropped.
 *
 * (2) One submission per iteration.  Preparing an operation only fills an SQE; the
 *     iteration ends with one io_uring_submit_and_wait(), which submits everything the
 *     callbacks queued and sleeps until at least one completion exists.  When the SQ is
 *     full, loop_get_sqe() submits what is queued and takes a fresh SQE (no error unless
 *     the kernel refuses the submission).  Every completion ready at the start of a batch
 *     is dispatched before the next submission.
 *
 * (3) io->_inflight is 1 from the moment an operation is prepared until its CQE is
 *     dispatched; it is cleared *before* `complete` runs, so a callback may re-arm the
 *     same io.  Submitting an io that is in flight is a bug (asserted).  l->inflight
 *     counts all of them; loop_free() uses it to drain the ring (see (7)).
 *
 * (4) Timers are one IORING_OP_TIMEOUT each (relative, CLOCK_MONOTONIC, count 0), not a
 *     timerfd plus a heap: the daemons hold a handful of timers, the kernel's hrtimers
 *     keep them ordered, and cancellation is one IORING_OP_TIMEOUT_REMOVE.  A cancelled
 *     timer stays allocated until its CQE arrives (-ECANCELED, or -ETIME when the removal
 *     lost the race) and its callback never runs.  A timeout completes with -ETIME when
 *     it expires; that is success here, not an error.
 *
 * (5) Wakers are a *blocking* eventfd read by IORING_OP_READ, re-armed after each
 *     completion.  Blocking on purpose: io_uring returns -EAGAIN at once for a read on an
 *     O_NONBLOCK regular file instead of waiting, whereas on a blocking eventfd it arms a
 *     poll and waits.  Writers never block in practice (the counter saturates at 2^64-2).
 *
 * (6) Signals: one signalfd per loop (SFD_NONBLOCK), watched by a one-shot
 *     IORING_OP_POLL_ADD and drained with read(2) in the loop thread.  Not read through
 *     io_uring: a signalfd read dequeues the *calling* task's signals, and a read punted
 *     to an io-wq worker would run in another task.
 *
 * (7) loop_free() cancels everything still in flight (IORING_ASYNC_CANCEL_ANY) and waits
 *     for the CQEs (bounded), *without* running callbacks, so the kernel no longer
 *     writes into caller buffers once it returns.  Objects owned by the loop (timers,
 *     wakers, the signal source) are freed; callers' objects are theirs.
 *
 * (8) Ring setup.  No SQPOLL: on 2 vCPUs a spinning kernel thread per loop collapses
 *     latency (DESIGN.md section 11).  SUBMIT_ALL so one bad SQE does not hold back the
 *     rest; COOP_TASKRUN + TASKRUN_FLAG so completions are not delivered by IPIs
 *     interrupting the loop but when it next enters the kernel (it always does, once per
 *     iteration).  Each flag falls back gracefully on older kernels.  Not
 *     SINGLE_ISSUER + DEFER_TASKRUN (Linux 6.1), measured 2026-12-02: 64-byte round
 *     trips across vCPUs 1.78-1.81x -> 1.66-1.69x of plain sockets, but the ring then
 *     belongs to the thread that created it, and loops are created on one thread and
 *     run on another (tests, and loop_free() after the loop's thread ended): their
 *     submissions would fail with -EEXIST.
 *
 * (9) The stall probe.  A busy stretch runs from the return of a wait in
 *     io_uring_submit_and_wait() to the next call of it (batches run back to back while
 *     completions keep arriving); nothing else runs in the loop meanwhile, so its length
 *     is the worst delay a timer, request or wake-up can see -- the loop-lag figure.  The
 *     loop keeps the longest since loop_new() and the longest since the last
 *     loop_take_window_stall_ns() (taken by a daemon's status request), from the clock
 *     read at the start and end of each batch.  While loop__callback__slow is traced (its
 *     semaphore) each callback is timed and one over LOOP_CALLBACK_SLOW_NS fires it with
 *     its function; loop__callback marks each start (tools/trace/stalls.bt).
 *
 * (10) Futex waits.  IORING_OP_FUTEX_WAIT (Linux 6.7) lets a loop sleep on a futex word
 *     (a shared-memory ring's) in its one io_uring_enter(): one wake-up per event.
 *     liburing 2.3 has no helper, so loop_futex_wait() fills the SQE from the kernel's ABI
 *     (include/uapi/linux/io_uring.h, io_uring/futex.c): opcode 51; addr = the word, addr2
 *     = the value expected, addr3 = the bitset mask (not 0), fd = the futex2 flags
 *     (FUTEX2_SIZE_U32, plus FUTEX2_PRIVATE unless shared between processes); len, op
 *     flags, buf_index, file_index 0.  Semantics of FUTEX_WAIT_BITSET: -EAGAIN if *word
 *     differs, else it completes with 0 at a FUTEX_WAKE on the word.  loop_cancel() and
 *     loop_free() cancel it by user_data.  loop_new() probes the opcode (l->futex_ok); a
 *     kernel that lists it and still refuses completes with -EOPNOTSUPP or -EINVAL, which
 *     callers treat as the same "not here".
 *
 * (11) Deferred work.  loop_defer() queues a struct loop_defer on l->deferred; the loop
 *     runs the queue after each batch of callbacks, before it submits and waits, until it
 *     is empty (what a deferred fn queues runs in the same pass).  So a connection that
 *     queued output in several callbacks of one batch sends it with one send(2) (ipc.c
 *     note 4).  The list is doubly linked (pprev): loop_defer_cancel() is O(1) and safe
 *     from inside a deferred fn, for any entry.  Deferred fns count in the batch's busy
 *     stretch (9).
 *
 * Concurrency: everything runs in the loop thread except loop_waker_wake(), which only
 * write(2)s to an eventfd.
 */
#include "loop.h"

#include <assert.h>
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "probes.h"
#include "util.h"

/* Memcheck cannot see the kernel write into a buffer from io_uring, long after the
 * syscall that named it, and would flag every read of received data.  The loop knows
 * the buffer only when preparing the operation, so it is marked defined there.  A no-op
 * costing a few instructions outside valgrind; no build dependency without its headers. */
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define LOOP_MEM_WRITTEN_BY_KERNEL(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#else
#define LOOP_MEM_WRITTEN_BY_KERNEL(p, n) ((void)0)
#endif

/* user_data of requests whose completion nobody waits for (cancels, timeout removals). */
#define LOOP_UD_NONE 0ull

/* A busy stretch (note 9) longer than this fires COORD_LOOP_STALL. */
#define LOOP_STALL_NS (10ull * 1000 * 1000)
/* Note 9: one callback longer than this fires loop__callback__slow, while traced. */
#define LOOP_CALLBACK_SLOW_NS (1000ull * 1000)

/* loop_free() waits at most this long for cancelled operations to complete. */
#define LOOP_DRAIN_NS (1000ull * 1000 * 1000)

#define LOOP_ENTRIES_DEFAULT 256u

/* Kernel ABI facts for note 10 that liburing 2.3's headers predate.  The opcode is
 * counted from the last one those headers know. */
#define LOOP_OP_FUTEX_WAIT 51
_Static_assert(IORING_OP_SENDMSG_ZC == 48, "io_uring opcode numbering");
#define LOOP_FUTEX2_SIZE_U32 0x02u
#define LOOP_FUTEX2_PRIVATE 128u
#define LOOP_FUTEX_BITSET_MATCH_ANY 0xffffffffull

struct loop_timer {
        struct loop_io io;              /* user_data of the IORING_OP_TIMEOUT */
        struct __kernel_timespec ts;    /* read by the kernel at submission */
        loop_timer_fn fn;
        void *userdata;
        bool cancelled;                 /* loop_timer_cancel() ran: never call fn */
        bool firing;                    /* fn is running: cancelling now is a bug */
        struct loop_timer *prev, *next; /* l->timers, for loop_free() */
};

struct loop_waker {
        struct loop_io io;              /* the pending IORING_OP_READ */
        int fd;                         /* eventfd, blocking, O_CLOEXEC: see (5) */
        uint64_t count;                 /* read buffer of the pending read */
        loop_waker_fn fn;
        void *userdata;
        bool armed;                     /* a read is in flight */
        bool in_callback;
        bool freeing;                   /* loop_waker_free() ran: free at completion */
        struct loop_waker *prev, *next; /* l->wakers */
};

struct loop_signals {
        struct loop_io io;              /* the pending IORING_OP_POLL_ADD */
        int fd;                         /* signalfd, SFD_NONBLOCK|SFD_CLOEXEC */
        sigset_t mask;
        bool armed;
        struct {
                loop_signal_fn fn;
                void *userdata;
        } handlers[_NSIG];
};

struct loop {
        struct io_uring ring;
        bool ring_ready;                /* io_uring_queue_init succeeded */
        bool running;                   /* inside loop_run() */
        bool stop;                      /* loop_stop() was called */
        int error;                      /* sticky fatal error: loop_run() returns it */
        bool futex_ok;                  /* loop_futex_wait() may be tried: note 10 */
        uint64_t now;                   /* loop_now_ns() */
        uint64_t max_stall;             /* loop_max_stall_ns(): since loop_new() */
        uint64_t window_stall;          /* loop_take_window_stall_ns(): since the last take */
        unsigned inflight;              /* operations prepared and not yet dispatched */
        struct loop_timer *timers;      /* armed timers, for loop_free() */
        struct loop_waker *wakers;      /* live wakers and wakers waiting to be freed */
        struct loop_signals *signals;   /* NULL until loop_signal_add() */
        struct loop_defer *deferred;    /* loop_defer(): note 11 */
};

/* --- Submission ---------------------------------------------------------------- */

static int loop_flush(struct loop *l)
{
        int r = io_uring_submit(&l->ring);

        if (r > 0)
                COORD_URING_SUBMIT(r);
        return r;
}

/* An SQE, submitting what is queued when the SQ is full (design note 2). */
static int loop_get_sqe(struct loop *l, struct io_uring_sqe **ret)
{
        struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);

        if (!sqe) {
                int r = loop_flush(l);
                if (r < 0)
                        return r;
                sqe = io_uring_get_sqe(&l->ring);
                if (!sqe)
                        return -EBUSY;
        }
        *ret = sqe;
        return 0;
}

/* Take an SQE for io and mark io in flight; the caller fills in the operation. */
static int loop_prep(struct loop *l, struct loop_io *io, struct io_uring_sqe **ret)
{
        struct io_uring_sqe *sqe;
        int r;

        assert(io);
        assert(io->complete);
        assert(io->_inflight == 0);

        r = loop_get_sqe(l, &sqe);
        if (r < 0)
                return r;
        io->_inflight = 1;
        l->inflight++;
        *ret = sqe;
        return 0;
}

static void loop_set_data(struct io_uring_sqe *sqe, struct loop_io *io)
{
        io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)io);
}

/* Ask the kernel to cancel the request whose user_data is target. */
static int loop_cancel_ud(struct loop *l, uint64_t target)
{
        struct io_uring_sqe *sqe;
        int r = loop_get_sqe(l, &sqe);

        if (r < 0)
                return r;
        io_uring_prep_cancel64(sqe, target, 0);
        io_uring_sqe_set_data64(sqe, LOOP_UD_NONE);
        return 0;
}

/* --- Create, run, free --------------------------------------------------------- */

static int loop_ring_init(struct loop *l, unsigned entries)
{
        /* Best first; each step drops flags an older kernel rejects (design note 8). */
        static const unsigned flag_sets[] = {
                IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
                IORING_SETUP_SUBMIT_ALL,
                0,
        };
        int r = -EINVAL;

        for (size_t i = 0; i < ELEMENTSOF(flag_sets); i++) {
                struct io_uring_params p = {
                        .flags = flag_sets[i] | IORING_SETUP_CQSIZE,
                        /* Room for a burst of completions without relying on overflow. */
                        .cq_entries = entries * 4,
                };

                r = io_uring_queue_init_params(entries, &l->ring, &p);
                if (r == 0) {
                        /* Kernels without NODROP lose CQEs on overflow: not supported. */
                        if (!(p.features & IORING_FEAT_NODROP)) {
                                io_uring_queue_exit(&l->ring);
                                return -ENOTSUP;
                        }
                        return 0;
                }
                if (r != -EINVAL)
                        return r;
        }
        return r;
}

/* Does the kernel list IORING_OP_FUTEX_WAIT (note 10)?  No probe (before 5.6): no. */
static bool loop_probe_futex(struct loop *l)
{
        struct io_uring_probe *p = io_uring_get_probe_ring(&l->ring);
        bool ok;

        if (!p)
                return false;
        ok = io_uring_opcode_supported(p, LOOP_OP_FUTEX_WAIT);
        io_uring_free_probe(p);
        return ok;
}

int loop_new(unsigned entries, struct loop **ret)
{
        struct loop *l;
        int r;

        assert(ret);

        if (entries == 0)
                entries = LOOP_ENTRIES_DEFAULT;
        if (entries > 32768)
                return -EINVAL;

        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;

        r = loop_ring_init(l, entries);
        if (r < 0) {
                free(l);
                return r;
        }
        l->ring_ready = true;
        l->futex_ok = loop_probe_futex(l);
        l->now = now_ns();
        *ret = l;
        return 0;
}

static void loop_timer_unlink(struct loop *l, struct loop_timer *t)
{
        if (t->prev)
                t->prev->next = t->next;
        else
                l->timers = t->next;
        if (t->next)
                t->next->prev = t->prev;
        t->prev = t->next = NULL;
}

static void loop_waker_unlink(struct loop *l, struct loop_waker *w)
{
        if (w->prev)
                w->prev->next = w->next;
        else
                l->wakers = w->next;
        if (w->next)
                w->next->prev = w->prev;
        w->prev = w->next = NULL;
}

/* Design note 7: cancel everything and wait for the CQEs, without callbacks. */
static void loop_drain(struct loop *l)
{
        struct io_uring_sqe *sqe;
        uint64_t deadline;

        if (l->inflight == 0)
                return;
        if (loop_get_sqe(l, &sqe) == 0) {
                io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_ALL);
                io_uring_sqe_set_data64(sqe, LOOP_UD_NONE);
        }
        deadline = now_ns() + LOOP_DRAIN_NS;
        while (l->inflight > 0) {
                struct __kernel_timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
                struct io_uring_cqe *cqe;
                unsigned head, n = 0;
                int r;

                r = io_uring_submit_and_wait_timeout(&l->ring, &cqe, 1, &ts, NULL);
                if (r < 0 && r != -ETIME && r != -EINTR && r != -EAGAIN && r != -EBUSY)
                        break;
                io_uring_for_each_cqe(&l->ring, head, cqe) {
                        n++;
                        if (cqe->user_data != LOOP_UD_NONE) {
                                struct loop_io *io = (struct loop_io *)(uintptr_t)cqe->user_data;
                                io->_inflight = 0;
                                l->inflight--;
                        }
                }
                io_uring_cq_advance(&l->ring, n);
                if (now_ns() > deadline)
                        break;
        }
}

struct loop *loop_free(struct loop *l)
{
        if (!l)
                return NULL;
        assert(!l->running);

        while (l->deferred)
                loop_defer_cancel(l, l->deferred);
        if (l->ring_ready) {
                loop_drain(l);
                io_uring_queue_exit(&l->ring);
        }
        while (l->timers) {
                struct loop_timer *t = l->timers;
                loop_timer_unlink(l, t);
                free(t);
        }
        while (l->wakers) {
                struct loop_waker *w = l->wakers;
                loop_waker_unlink(l, w);
                closep(&w->fd);
                free(w);
        }
        if (l->signals) {
                /* The signals stay blocked: unblocking would deliver pending ones with
                 * their default action (SIGTERM would kill us after an orderly stop). */
                closep(&l->signals->fd);
                free(l->signals);
        }
        free(l);
        return NULL;
}

/* Dispatch the completions ready now; returns how many CQEs were consumed. */
static unsigned loop_dispatch(struct loop *l)
{
        unsigned ready = io_uring_cq_ready(&l->ring), n = 0;

        /* Only the CQEs ready at the start of the batch: completions that arrive while
         * callbacks run wait for the next iteration, so the SQEs queued meanwhile are
         * submitted without an unbounded delay. */
        while (n < ready) {
                struct io_uring_cqe *cqe;
                struct loop_io *io;
                uint64_t ud;
                int res;

                if (io_uring_peek_cqe(&l->ring, &cqe) < 0)
                        break;
                ud = cqe->user_data;
                res = cqe->res;
                /* Release the CQE slot before the callback: the callback may submit, and
                 * the kernel can then reuse the slot right away. */
                io_uring_cqe_seen(&l->ring, cqe);
                n++;

                if (ud == LOOP_UD_NONE)
                        continue;
                io = (struct loop_io *)(uintptr_t)ud;
                assert(io->_inflight == 1);
                assert(l->inflight > 0);
                io->_inflight = 0;
                l->inflight--;
                if (COORD_LOOP_CALLBACK_SLOW_ENABLED()) {
                        uint64_t t0 = now_ns(), took;
                        loop_io_fn fn = io->complete;

                        COORD_LOOP_CALLBACK((void *)(uintptr_t)fn);
                        fn(l, io, res);
                        took = now_ns() - t0;
                        if (took > LOOP_CALLBACK_SLOW_NS)
                                COORD_LOOP_CALLBACK_SLOW((void *)(uintptr_t)fn,
                                                         (unsigned long long)took);
                } else
                        io->complete(l, io, res);
        }
        return n;
}

/* --- Deferred work (note 11) -------------------------------------------------------- */

void loop_defer(struct loop *l, struct loop_defer *d)
{
        assert(l && d && d->fn);
        if (loop_defer_queued(d))
                return;
        d->_next = l->deferred;
        if (d->_next)
                d->_next->_pprev = &d->_next;
        d->_pprev = &l->deferred;
        l->deferred = d;
}

void loop_defer_cancel(struct loop *l, struct loop_defer *d)
{
        assert(l && d);
        (void)l;
        if (!loop_defer_queued(d))
                return;
        *d->_pprev = d->_next;
        if (d->_next)
                d->_next->_pprev = d->_pprev;
        d->_next = NULL;
        d->_pprev = NULL;
}

/* Run the queue until it is empty.  Each entry leaves the queue before its fn runs, so
 * the fn may queue it again or cancel any other entry. */
static void loop_run_deferred(struct loop *l)
{
        while (l->deferred) {
                struct loop_defer *d = l->deferred;

                loop_defer_cancel(l, d);
                d->fn(l, d);
        }
}

int loop_run(struct loop *l)
{
        uint64_t busy_since = 0, stretch = 0;   /* note 9 */
        int r = 0;

        assert(l);
        assert(!l->running);
        l->running = true;

        while (!l->stop && l->error == 0) {
                uint64_t start, spent;
                bool wait;

                loop_run_deferred(l);   /* what was queued before loop_run() */
                wait = io_uring_cq_ready(&l->ring) == 0;

                if (wait && stretch > LOOP_STALL_NS)
                        COORD_LOOP_STALL((unsigned long long)stretch);
                /* With completions already waiting (posted during the last batch), only
                 * submit; otherwise submit and sleep for the next one. */
                if (!wait)
                        r = io_uring_submit(&l->ring);
                else
                        r = io_uring_submit_and_wait(&l->ring, 1);
                if (r > 0)
                        COORD_URING_SUBMIT(r);
                else if (r < 0) {
                        /* -EINTR: a signal interrupted the wait.  -EAGAIN/-EBUSY: the
                         * kernel is short of memory for requests or the CQ overflowed;
                         * reaping completions below makes room.  -ETIME: a wait timed
                         * out (not used here, harmless).  Anything else is fatal. */
                        if (r != -EINTR && r != -EAGAIN && r != -EBUSY && r != -ETIME) {
                                l->error = r;
                                break;
                        }
                }

                start = now_ns();
                l->now = start;
                if (wait || busy_since == 0)
                        busy_since = start;
                if (loop_dispatch(l) == 0) {
                        if (wait)
                                stretch = 0;
                        continue;
                }
                loop_run_deferred(l);
                spent = now_ns() - busy_since;
                stretch = spent;
                if (spent > l->max_stall)
                        l->max_stall = spent;
                if (spent > l->window_stall)
                        l->window_stall = spent;
        }
        if (stretch > LOOP_STALL_NS)
                COORD_LOOP_STALL((unsigned long long)stretch);

        /* Hand the kernel what the last batch queued (a reply sent before loop_stop()). */
        (void)loop_flush(l);
        l->running = false;
        l->stop = false;
        r = l->error;
        return r;
}

void loop_stop(struct loop *l)
{
        assert(l);
        l->stop = true;
}

static void drain_timeout(struct loop *l, void *userdata)
{
        *(bool *)userdata = true;
        loop_stop(l);
}

int loop_run_for(struct loop *l, uint64_t timeout_ns)
{
        struct loop_timer *t = NULL;
        bool fired = false;
        int r;

        assert(l && !l->running);
        l->stop = false;
        r = loop_timer_add(l, timeout_ns, drain_timeout, &fired, &t);
        if (r < 0) {
                l->stop = true;
                return r;
        }
        r = loop_run(l);
        if (!fired)
                loop_timer_cancel(l, t);
        l->stop = true;
        return r;
}

uint64_t loop_now_ns(struct loop *l)
{
        assert(l);
        return l->now;
}

uint64_t loop_max_stall_ns(struct loop *l)
{
        assert(l);
        return l->max_stall;
}

uint64_t loop_take_window_stall_ns(struct loop *l)
{
        uint64_t w;

        assert(l);
        w = l->window_stall;
        l->window_stall = 0;
        return w;
}

/* --- Low-level operations ------------------------------------------------------- */

int loop_accept(struct loop *l, struct loop_io *io, int fd)
{
        struct io_uring_sqe *sqe;
        int r = loop_prep(l, io, &sqe);

        if (r < 0)
                return r;
        io_uring_prep_accept(sqe, fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        loop_set_data(sqe, io);
        return 0;
}

int loop_recv(struct loop *l, struct loop_io *io, int fd, void *buf, size_t len)
{
        struct io_uring_sqe *sqe;
        int r;

        if (len > UINT32_MAX)
                len = UINT32_MAX;       /* a short read, which the caller handles anyway */
        r = loop_prep(l, io, &sqe);
        if (r < 0)
                return r;
        LOOP_MEM_WRITTEN_BY_KERNEL(buf, len);
        io_uring_prep_recv(sqe, fd, buf, len, 0);
        loop_set_data(sqe, io);
        return 0;
}

int loop_send(struct loop *l, struct loop_io *io, int fd, const void *buf, size_t len)
{
        struct io_uring_sqe *sqe;
        int r;

        if (len > UINT32_MAX)
                len = UINT32_MAX;
        r = loop_prep(l, io, &sqe);
        if (r < 0)
                return r;
        /* MSG_NOSIGNAL: a peer that went away is -EPIPE here, never a SIGPIPE. */
        io_uring_prep_send(sqe, fd, buf, len, MSG_NOSIGNAL);
        loop_set_data(sqe, io);
        return 0;
}

int loop_cancel(struct loop *l, struct loop_io *io)
{
        assert(l);
        assert(io);

        if (!io->_inflight)
                return -ENOENT;
        return loop_cancel_ud(l, (uint64_t)(uintptr_t)io);
}

/* --- Futex waits (design note 10) ----------------------------------------------- */

int loop_futex_wait(struct loop *l, struct loop_io *io, const uint32_t *word, uint32_t val,
                    bool shared)
{
        struct io_uring_sqe *sqe;
        int r;

        assert(l);
        assert(word);
        if (((uintptr_t)word & 3u) != 0)
                return -EINVAL;
        if (!l->futex_ok)
                return -EOPNOTSUPP;
        r = loop_prep(l, io, &sqe);
        if (r < 0)
                return r;
        /* Every field the kernel checks, from zero: note 10. */
        memset(sqe, 0, sizeof(*sqe));
        sqe->opcode = LOOP_OP_FUTEX_WAIT;
        sqe->fd = (int32_t)(LOOP_FUTEX2_SIZE_U32 | (shared ? 0u : LOOP_FUTEX2_PRIVATE));
        sqe->addr = (uint64_t)(uintptr_t)word;
        sqe->addr2 = val;
        sqe->addr3 = LOOP_FUTEX_BITSET_MATCH_ANY;
        loop_set_data(sqe, io);
        return 0;
}

bool loop_futex_supported(const struct loop *l)
{
        assert(l);
        return l->futex_ok;
}

void loop_futex_disable(struct loop *l)
{
        assert(l);
        l->futex_ok = false;
}

/* --- Timers (design note 4) ---------------------------------------------------- */

static void loop_timer_complete(struct loop *l, struct loop_io *io, int res)
{
        struct loop_timer *t = container_of(io, struct loop_timer, io);

        loop_timer_unlink(l, t);
        /* -ETIME: expired.  -ECANCELED: removed by loop_timer_cancel().  Any other result
         * (none is expected) still runs the callback: a timer that silently never fires
         * would hang whoever waits on it. */
        if (!t->cancelled && res != -ECANCELED) {
                t->firing = true;
                t->fn(l, t->userdata);
        }
        free(t);
}

int loop_timer_add(struct loop *l, uint64_t after_ns, loop_timer_fn fn, void *userdata,
                   struct loop_timer **ret)
{
        struct io_uring_sqe *sqe;
        struct loop_timer *t;
        int r;

        assert(l);
        assert(fn);

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->io.complete = loop_timer_complete;
        t->ts.tv_sec = (long long)(after_ns / 1000000000ull);
        t->ts.tv_nsec = (long long)(after_ns % 1000000000ull);
        t->fn = fn;
        t->userdata = userdata;

        r = loop_prep(l, &t->io, &sqe);
        if (r < 0) {
                free(t);
                return r;
        }
        /* count 0: a pure timeout, completed with -ETIME when it expires. */
        io_uring_prep_timeout(sqe, &t->ts, 0, 0);
        loop_set_data(sqe, &t->io);

        t->next = l->timers;
        if (l->timers)
                l->timers->prev = t;
        l->timers = t;
        if (ret)
                *ret = t;
        return 0;
}

void loop_timer_cancel(struct loop *l, struct loop_timer *t)
{
        struct io_uring_sqe *sqe;

        assert(l);
        if (!t)
                return;
        assert(!t->firing);     /* loop.h: cancelling a timer that has fired is a bug */
        assert(!t->cancelled);

        t->cancelled = true;
        /* If no SQE can be had the timer simply runs out; its callback is skipped all
         * the same, so this is only an optimisation of the kernel's timer list. */
        if (loop_get_sqe(l, &sqe) < 0)
                return;
        io_uring_prep_timeout_remove(sqe, (uint64_t)(uintptr_t)&t->io, 0);
        io_uring_sqe_set_data64(sqe, LOOP_UD_NONE);
}

/* --- Wakers (design note 5) ----------------------------------------------------- */

static int loop_waker_arm(struct loop *l, struct loop_waker *w)
{
        struct io_uring_sqe *sqe;
        int r = loop_prep(l, &w->io, &sqe);

        if (r < 0)
                return r;
        LOOP_MEM_WRITTEN_BY_KERNEL(&w->count, sizeof(w->count));
        io_uring_prep_read(sqe, w->fd, &w->count, sizeof(w->count), 0);
        loop_set_data(sqe, &w->io);
        w->armed = true;
        return 0;
}

static void loop_waker_destroy(struct loop *l, struct loop_waker *w)
{
        loop_waker_unlink(l, w);
        closep(&w->fd);
        free(w);
}

static void loop_waker_complete(struct loop *l, struct loop_io *io, int res)
{
        struct loop_waker *w = container_of(io, struct loop_waker, io);
        int r;

        w->armed = false;
        if (w->freeing) {
                loop_waker_destroy(l, w);
                return;
        }
        if (res == (int)sizeof(w->count) && w->count > 0) {
                w->in_callback = true;
                w->fn(l, w->count, w->userdata);
                w->in_callback = false;
                if (w->freeing) {
                        loop_waker_destroy(l, w);
                        return;
                }
        }
        /* Other results (-EINTR, -EAGAIN) carry no wake-up: just read again. */
        r = loop_waker_arm(l, w);
        if (r < 0)
                l->error = r;   /* a waker that no longer wakes: the loop cannot go on */
}

int loop_waker_new(struct loop *l, loop_waker_fn fn, void *userdata, struct loop_waker **ret)
{
        struct loop_waker *w;
        int r;

        assert(l);
        assert(fn);
        assert(ret);

        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->io.complete = loop_waker_complete;
        w->fn = fn;
        w->userdata = userdata;
        w->fd = eventfd(0, EFD_CLOEXEC);        /* blocking on purpose: design note 5 */
        if (w->fd < 0) {
                r = -errno;
                free(w);
                return r;
        }
        r = loop_waker_arm(l, w);
        if (r < 0) {
                closep(&w->fd);
                free(w);
                return r;
        }
        w->next = l->wakers;
        if (l->wakers)
                l->wakers->prev = w;
        l->wakers = w;
        *ret = w;
        return 0;
}

int loop_waker_fd(const struct loop_waker *w)
{
        assert(w);
        return w->fd;
}

void loop_waker_wake(struct loop_waker *w)
{
        uint64_t one = 1;
        ssize_t n;

        assert(w);
        /* Thread-safe: one write(2).  It only fails when the counter is saturated, and
         * then a wake-up is pending anyway. */
        do
                n = write(w->fd, &one, sizeof(one));
        while (n < 0 && errno == EINTR);
}

struct loop_waker *loop_waker_free(struct loop *l, struct loop_waker *w)
{
        assert(l);
        if (!w)
                return NULL;
        assert(!w->freeing);

        w->freeing = true;
        if (w->in_callback)
                return NULL;    /* loop_waker_complete() frees it when fn returns */
        if (!w->armed) {
                loop_waker_destroy(l, w);
                return NULL;
        }
        /* The pending read holds w: complete it by waking ourselves (cannot fail the way
         * a cancel SQE can), and free w in loop_waker_complete().  Until then w stays on
         * l->wakers, so loop_free() frees it if the loop never runs again. */
        loop_waker_wake(w);
        return NULL;
}

/* --- Signals (design note 6) --------------------------------------------------- */

static int loop_signals_arm(struct loop *l, struct loop_signals *s)
{
        struct io_uring_sqe *sqe;
        int r = loop_prep(l, &s->io, &sqe);

        if (r < 0)
                return r;
        io_uring_prep_poll_add(sqe, s->fd, POLLIN);
        loop_set_data(sqe, &s->io);
        s->armed = true;
        return 0;
}

static void loop_signals_complete(struct loop *l, struct loop_io *io, int res)
{
        struct loop_signals *s = container_of(io, struct loop_signals, io);
        int r;

        s->armed = false;
        if (res > 0) {
                for (;;) {
                        struct signalfd_siginfo si[8];
                        ssize_t n = read(s->fd, si, sizeof(si));

                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0)
                                break;  /* EAGAIN: drained */
                        for (size_t i = 0; i < (size_t)n / sizeof(si[0]); i++) {
                                unsigned signo = si[i].ssi_signo;
                                if (signo < _NSIG && s->handlers[signo].fn)
                                        s->handlers[signo].fn(l, (int)signo,
                                                              s->handlers[signo].userdata);
                        }
                }
        }
        r = loop_signals_arm(l, s);
        if (r < 0)
                l->error = r;
}

int loop_signal_add(struct loop *l, int signo, loop_signal_fn fn, void *userdata)
{
        struct loop_signals *s;
        sigset_t one, mask;
        int r, fd;

        assert(l);
        assert(fn);

        if (signo <= 0 || signo >= _NSIG || signo == SIGKILL || signo == SIGSTOP)
                return -EINVAL;

        s = l->signals;
        if (!s) {
                s = calloc(1, sizeof(*s));
                if (!s)
                        return -ENOMEM;
                s->io.complete = loop_signals_complete;
                s->fd = -EBADF;
                sigemptyset(&s->mask);
                l->signals = s;
        }
        if (s->handlers[signo].fn)
                return -EEXIST;

        /* Block first, so from now on the signal queues for the signalfd instead of
         * running its default action. */
        sigemptyset(&one);
        sigaddset(&one, signo);
        r = pthread_sigmask(SIG_BLOCK, &one, NULL);
        if (r != 0)
                return -r;

        mask = s->mask;
        sigaddset(&mask, signo);
        /* -1 creates the signalfd; with an fd, signalfd() replaces that fd's mask. */
        fd = signalfd(s->fd >= 0 ? s->fd : -1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        s->fd = fd;
        s->mask = mask;
        s->handlers[signo].fn = fn;
        s->handlers[signo].userdata = userdata;

        if (!s->armed) {
                r = loop_signals_arm(l, s);
                if (r < 0) {
                        s->handlers[signo].fn = NULL;
                        return r;
                }
        }
        return 0;
}
