/* node-ring.c -- a daemon's loop following the frontier ring.  See node.h.
 *
 * NOTES ON THE DESIGN
 * (5) Following the frontier ring (adapter, lifecycle).  The loop thread sleeps on the
 *     ring's futex word itself, in its io_uring (loop_futex_wait(), Linux 6.7+), with its
 *     one reader: drain, fring_sleep_begin() (counted as a sleeper, or "readable now":
 *     drain again, a few rounds, then a timer of 0 so other work runs), the wait,
 *     fring_sleep_end() at its completion, drain, sleep again -- one wake-up per publish.
 *     Where the kernel lacks the opcode or refuses the wait (-EINVAL, -EOPNOTSUPP), or the
 *     daemon asks (node_follow_ring(n, true): --frontier-wait-thread), a watcher thread
 *     in fring_wait() takes over for the life of the process.  A tick every RING_TICK_MS
 *     drains in either mode and retries the attach while the ring does not exist.
 *     Status: node_ring_wait_mode(), node_ring_loop_wakes(), node_ring_reads().
 * (5a) A turn of the loop's sleep delivers at most RING_READ_BUDGET records, then
 *     yields (a timer of 0) and goes on at the next turn: the snapshot after a producer's
 *     restart or grow holds every live collection, up to a million, too many for one
 *     callback (docs/benchmarks.md, "Loop stalls at 100,000").  Both consumers take a
 *     snapshot in parts: the follower's uppers only grow (lc_state_frontiers_reset()),
 *     the adapter only re-checks its waiters (exec_on_frontiers()).  The watcher
 *     thread's mode and the tick still drain everything (rare, and the thread's own
 *     reader would not wake the loop again for what is left).
 */
#include "node-internal.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ring/fring.h"
#include "log.h"
#include "probes.h"
#include "util.h"

#define RING_TICK_MS     1000u          /* note 5: drain (or attach) at least this often */
#define RING_READ_BUDGET 16384u         /* note 5a: records one turn of ring_arm() delivers */
#define NS_PER_MS        1000000ull

/* The watcher thread (the fallback): its own reader (a reader is not shared between
 * threads), used only to sleep until the ring moves; the loop thread's reader does the
 * real reading.  It never touches node state but the waker and the stop flag. */
static void *ring_watch(void *userdata)
{
        struct node *n = userdata;
        struct fring_reader *rd = NULL;
        struct fring_frontier sink[64];
        bool resynced;
        int r;

        while (!atomic_load(&n->ring_thread_stop)) {
                if (!rd) {
                        if (fring_attach(n->ring_name, &rd) < 0) {
                                usleep(100 * 1000);
                                continue;
                        }
                        loop_waker_wake(n->ring_waker);
                }
                r = fring_wait(rd, 200);
                if (r == -ETIMEDOUT)
                        continue;
                do
                        r = fring_read(rd, sink, ELEMENTSOF(sink), &resynced);
                while (r > 0);
                loop_waker_wake(n->ring_waker);
                if (r < 0)
                        usleep(10 * 1000);      /* damaged or mid-restart: no spinning */
        }
        fring_reader_free(rd);
        return NULL;
}

/* Attach if not yet, then read what there is into on_frontiers, at most about budget
 * records (note 5a): 0 when all was read, 1 when some is left, or -ENOENT / -EAGAIN
 * while there is no ring to attach to, or another error of fring_read(). */
static int ring_read_some(struct node *n, size_t budget)
{
        struct fring_frontier buf[256];
        bool resynced, delivered = false;
        size_t read = 0;
        int r;

        if (!n->ring) {
                r = fring_attach(n->ring_name, &n->ring);
                if (r < 0) {
                        if (r != -ENOENT && r != -EAGAIN)
                                log_warn_errno(r, "ring_attach_failed", "name=%s", n->ring_name);
                        return r;
                }
                log_info("ring_attached", "name=%s", n->ring_name);
        }
        for (;;) {
                r = fring_read(n->ring, buf, ELEMENTSOF(buf), &resynced);
                if (r < 0) {
                        if (r != -EAGAIN)
                                log_warn_errno(r, "ring_read_failed", "name=%s", n->ring_name);
                        return r;
                }
                if (resynced)
                        log_info("ring_resync", "name=%s generation=%llu", n->ring_name,
                                 (unsigned long long)fring_reader_generation(n->ring));
                if (r == 0 && !resynced)
                        break;
                if (!delivered)
                        n->ring_reads++;
                delivered = true;
                if (n->h.on_frontiers)
                        n->h.on_frontiers(n, buf, (size_t)r, resynced, n->userdata);
                if (r == 0)
                        break;
                read += (size_t)r;
                if (read >= budget)
                        return 1;
        }
        return 0;
}

static int ring_read_all(struct node *n)
{
        int r = ring_read_some(n, SIZE_MAX);

        return r < 0 ? r : 0;
}

static void ring_drain(struct loop *l, uint64_t count, void *userdata)
{
        (void)ring_read_all(userdata);
}

/* Switch to the watcher thread, for the rest of the process's life. */
static int ring_thread_start(struct node *n)
{
        int r = thread_start(&n->ring_thread, "ring-watch", ring_watch, n);

        if (r < 0)
                return log_error_errno(r, "ring_thread_failed", "");
        n->ring_thread_started = true;
        return 0;
}

static void ring_arm(struct node *n);

static void ring_timer_fire(struct loop *l, void *userdata)
{
        struct node *n = userdata;

        n->ring_timer = NULL;
        ring_arm(n);
}

/* Come back to ring_arm() after ms (0: at the next loop iteration). */
static void ring_later(struct node *n, uint64_t ms)
{
        int r = loop_timer_add(n->loop, ms * NS_PER_MS, ring_timer_fire, n, &n->ring_timer);

        if (r < 0) {
                n->ring_timer = NULL;
                log_error_errno(r, "timer_failed", "what=ring_sleep");
        }
}

/* The loop's sleep on the ring (note 5): read what there is, then queue a futex wait. */
static void ring_arm(struct node *n)
{
        const uint32_t *word;
        uint32_t val;
        int r;

        assert(!n->ring_sleeping && !n->ring_timer && !n->ring_thread_started);
        if (n->ring_stopping)
                return;
        /* A few rounds while records keep coming; then yield to the rest of the loop. */
        for (int round = 0; round < 4; round++) {
                r = ring_read_some(n, n->ring_budget ? n->ring_budget : RING_READ_BUDGET);
                if (r == 1) {
                        n->ring_yields++;
                        ring_later(n, 0);               /* note 5a: the rest next turn */
                        return;
                }
                if (r == -ENOENT || r == -EAGAIN) {
                        ring_later(n, 100);             /* no ring (yet) */
                        return;
                }
                if (r < 0) {
                        ring_later(n, 10);              /* damaged: no spinning */
                        return;
                }
                r = fring_sleep_begin(n->ring, &word, &val);
                if (r == 0) {
                        r = loop_futex_wait(n->loop, &n->ring_io, word, val, true);
                        if (r == 0) {
                                n->ring_sleeping = true;
                                return;
                        }
                        fring_sleep_end(n->ring);
                        if (r == -EOPNOTSUPP || r == -EINVAL) {
                                log_info("ring_wait", "mode=thread error=%d", r);
                                (void)ring_thread_start(n);
                                return;
                        }
                        log_warn_errno(r, "ring_sleep_failed", "action=retry");
                        ring_later(n, 10);
                        return;
                }
                if (r < 0) {
                        ring_later(n, 10);              /* cannot happen: a reader */
                        return;
                }
                /* Readable already: read again. */
        }
        ring_later(n, 0);
}

static void ring_wait_complete(struct loop *l, struct loop_io *io, int res)
{
        struct node *n = container_of(io, struct node, ring_io);
        bool counted = n->ring_sleeping;

        /* ring_stop() took the count back already (a cancelled wait's completion). */
        n->ring_sleeping = false;
        if (counted)
                fring_sleep_end(n->ring);
        if (n->ring_stopping)
                return;
        if (res == -EINVAL || res == -EOPNOTSUPP) {
                /* The kernel lists the opcode but will not wait. */
                log_info("ring_wait", "mode=thread error=%d", res);
                (void)ring_thread_start(n);
                (void)ring_read_all(n);
                return;
        }
        n->ring_loop_wakes++;
        /* 0 woken, -EAGAIN the word had moved, anything else (-EINTR, -ECANCELED): read,
         * and sleep again. */
        ring_arm(n);
}

/* The safety net (note 5): read whatever a lost wake-up would have left, in either
 * mode; attach meanwhile if the watcher thread cannot. */
static void ring_tick_fire(struct loop *l, void *userdata)
{
        struct node *n = userdata;
        int r;

        n->ring_tick = NULL;
        if (n->ring_stopping)
                return;
        if (!n->ring_sleeping && !n->ring_timer && !n->ring_thread_started)
                ring_arm(n);            /* cannot happen: arm always leaves one of them */
        else
                (void)ring_read_all(n);
        r = loop_timer_add(l, RING_TICK_MS * NS_PER_MS, ring_tick_fire, n, &n->ring_tick);
        if (r < 0) {
                n->ring_tick = NULL;
                log_error_errno(r, "timer_failed", "what=ring_tick");
        }
}

/* node_free(): no more wake-ups, nothing left counted as a sleeper in the ring. */
void node_ring_stop(struct node *n)
{
        if (!n->ring_name)
                return;                 /* node_follow_ring() never ran */
        n->ring_stopping = true;
        if (n->ring_sleeping) {
                /* Not counted any longer; the wait itself is cancelled here or by
                 * loop_free(), whose drain runs no callbacks. */
                (void)loop_cancel(n->loop, &n->ring_io);
                fring_sleep_end(n->ring);
                n->ring_sleeping = false;
        }
        loop_timer_cancel(n->loop, n->ring_timer);
        n->ring_timer = NULL;
        loop_timer_cancel(n->loop, n->ring_tick);
        n->ring_tick = NULL;
        if (n->ring_thread_started) {
                atomic_store(&n->ring_thread_stop, true);
                pthread_join(n->ring_thread, NULL);
                n->ring_thread_started = false;
        }
}

int node_follow_ring(struct node *n, bool wait_thread)
{
        char name[128];
        int r;

        assert(!n->ring_name);
        r = fring_name(n->instance, name, sizeof(name));
        if (r < 0)
                return r;
        n->ring_name = strdup(name);
        if (!n->ring_name)
                return -ENOMEM;
        r = loop_waker_new(n->loop, ring_drain, n, &n->ring_waker);
        if (r < 0)
                return log_error_errno(r, "ring_waker_failed", "");
        n->ring_io.complete = ring_wait_complete;
        if (wait_thread || !loop_futex_supported(n->loop)) {
                r = ring_thread_start(n);
                if (r < 0)
                        return r;
        } else
                ring_arm(n);
        r = loop_timer_add(n->loop, RING_TICK_MS * NS_PER_MS, ring_tick_fire, n, &n->ring_tick);
        if (r < 0)
                return log_error_errno(r, "timer_failed", "what=ring_tick");
        log_info("ring_wait", "mode=%s", n->ring_thread_started ? "thread" : "loop");
        return 0;
}

const char *node_ring_wait_mode(const struct node *n)
{
        return n->ring_thread_started ? "thread" : "loop";
}

uint64_t node_ring_loop_wakes(const struct node *n)
{
        return n->ring_loop_wakes;
}

uint64_t node_ring_reads(const struct node *n)
{
        return n->ring_reads;
}

void node_ring_set_read_budget(struct node *n, size_t budget)
{
        n->ring_budget = budget;
}

uint64_t node_ring_yields(const struct node *n)
{
        return n->ring_yields;
}

struct fring_reader *node_ring(struct node *n)
{
        return n->ring;
}
