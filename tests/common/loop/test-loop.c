/* test-loop.c -- the io_uring event loop (common/loop/loop.h).
 *
 * Timers (order, cancellation, a full SQ), wakers from a thread and from another
 * process, futex waits woken from a thread and from another process (and their value
 * check, cancellation and the "not supported" answer callers fall back on), signals
 * through signalfd, recv/send/cancel on a socketpair, loop_stop and the
 * stall probe.  Every wait is on an event; a watchdog timer turns a hang into a failure.
 * Exits 77 when io_uring is unavailable (ENOSYS, or EPERM under a seccomp policy).
 */
#include "loop/loop.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t-loop.h"
#include "t.h"
#include "util.h"

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

#define MS (UINT64_C(1000) * 1000)

static struct loop *L;

/* --- Helpers -------------------------------------------------------------------- */

static bool counter_reached(void *arg)
{
        const int *c = arg;
        return c[0] >= c[1];
}

/* --- Timers ---------------------------------------------------------------------- */

struct timer_log {
        int order[16];
        int n;
        int want;
};

struct timer_case {
        struct timer_log *log;
        int id;
        struct loop_timer *victim;      /* cancelled by this timer's callback */
        uint64_t due_ns;
};

static void timer_fire(struct loop *l, void *userdata)
{
        struct timer_case *tc = userdata;

        CU_ASSERT(loop_now_ns(l) >= tc->due_ns);
        tc->log->order[tc->log->n++] = tc->id;
        if (tc->victim)
                loop_timer_cancel(l, tc->victim);
        loop_stop(l);
}

static bool log_complete(void *arg)
{
        const struct timer_log *log = arg;
        return log->n >= log->want;
}

static void test_timer_order(void)
{
        static const uint64_t delay[] = { 30, 10, 20, 15, 25, 5 };
        struct timer_case tc[ELEMENTSOF(delay)];
        struct loop_timer *t[ELEMENTSOF(delay)];
        struct timer_log log = { .want = 4 };
        uint64_t start = now_ns();

        for (size_t i = 0; i < ELEMENTSOF(delay); i++) {
                tc[i] = (struct timer_case){ .log = &log, .id = (int)delay[i],
                                             .due_ns = start + delay[i] * MS };
                CU_ASSERT_EQUAL_FATAL(loop_timer_add(L, delay[i] * MS, timer_fire, &tc[i], &t[i]), 0);
        }
        /* 15 ms is cancelled before the loop runs, 25 ms by the 20 ms callback. */
        loop_timer_cancel(L, t[3]);
        tc[2].victim = t[4];

        /* 30 ms fires last, so once it did, a 15 or 25 ms callback would be logged. */
        CU_ASSERT_FATAL(t_run_until(L, log_complete, &log));
        CU_ASSERT_EQUAL(log.n, 4);
        CU_ASSERT_EQUAL(log.order[0], 5);
        CU_ASSERT_EQUAL(log.order[1], 10);
        CU_ASSERT_EQUAL(log.order[2], 20);
        CU_ASSERT_EQUAL(log.order[3], 30);
}

static void count_fire(struct loop *l, void *userdata)
{
        ((int *)userdata)[0]++;
        loop_stop(l);
}

static void test_timer_sq_full(void)
{
        struct loop *big = L, *small;
        int count[2] = { 0, 200 };

        /* Four SQ entries, two hundred timers: loop_timer_add() has to submit to get
         * SQEs (the SQ-full path), and every timer must still fire once. */
        CU_ASSERT_EQUAL_FATAL(loop_new(4, &small), 0);
        L = small;
        for (int i = 0; i < count[1]; i++)
                CU_ASSERT_EQUAL_FATAL(loop_timer_add(L, (uint64_t)(i % 7) * MS, count_fire,
                                                     count, NULL), 0);
        CU_ASSERT(t_run_until(L, counter_reached, count));
        CU_ASSERT_EQUAL(count[0], count[1]);
        L = loop_free(small);
        L = big;
}

static void test_timer_zero_and_restart(void)
{
        int count[2] = { 0, 1 };

        /* loop_stop() before loop_run(): run returns at once, and only once. */
        loop_stop(L);
        CU_ASSERT_EQUAL(loop_run(L), 0);
        /* A zero delay fires on the next iteration. */
        CU_ASSERT_EQUAL_FATAL(loop_timer_add(L, 0, count_fire, count, NULL), 0);
        CU_ASSERT(t_run_until(L, counter_reached, count));
        CU_ASSERT_EQUAL(count[0], 1);
        /* Cancelling NULL is allowed. */
        loop_timer_cancel(L, NULL);
}

static void stall_fire(struct loop *l, void *userdata)
{
        uint64_t until = now_ns() + 15 * MS;

        while (now_ns() < until)
                ;
        count_fire(l, userdata);
}

static void test_stall(void)
{
        int count[2] = { 0, 1 };

        CU_ASSERT_EQUAL_FATAL(loop_timer_add(L, 0, stall_fire, count, NULL), 0);
        CU_ASSERT(t_run_until(L, counter_reached, count));
        CU_ASSERT(loop_max_stall_ns(L) >= 15 * MS);
}

/* The window maximum: a take returns the 15 ms stretch and starts a new window, which
 * a quiet iteration leaves short; the maximum since start keeps it. */
static void test_stall_window(void)
{
        int count[2] = { 0, 1 };

        CU_ASSERT_EQUAL_FATAL(loop_timer_add(L, 0, stall_fire, count, NULL), 0);
        CU_ASSERT(t_run_until(L, counter_reached, count));
        CU_ASSERT(loop_take_window_stall_ns(L) >= 15 * MS);
        CU_ASSERT_EQUAL(loop_take_window_stall_ns(L), 0);
        count[0] = 0;
        CU_ASSERT_EQUAL_FATAL(loop_timer_add(L, 0, count_fire, count, NULL), 0);
        CU_ASSERT(t_run_until(L, counter_reached, count));
        CU_ASSERT(loop_take_window_stall_ns(L) < 15 * MS);
        CU_ASSERT(loop_max_stall_ns(L) >= 15 * MS);
}

/* --- Wakers ---------------------------------------------------------------------- */

struct wake_state {
        uint64_t total;
        uint64_t want;
        unsigned calls;
};

static void wake_fn(struct loop *l, uint64_t count, void *userdata)
{
        struct wake_state *ws = userdata;

        CU_ASSERT(count > 0);
        ws->total += count;
        ws->calls++;
        loop_stop(l);
}

static bool wake_done(void *arg)
{
        const struct wake_state *ws = arg;
        return ws->total >= ws->want;
}

static void *wake_thread(void *arg)
{
        struct loop_waker *w = arg;

        for (int i = 0; i < 1000; i++) {
                loop_waker_wake(w);
                if (i % 100 == 0)
                        usleep(100);    /* let some wakes be seen one at a time */
        }
        return NULL;
}

static void test_waker_thread(void)
{
        struct wake_state ws = { .want = 1000 };
        struct loop_waker *w;
        pthread_t th;

        /* Valgrind 3.19 holds its big lock across io_uring_enter(): no other thread
         * runs while the loop waits.  Covered by the native and ASan runs. */
        if (RUNNING_ON_VALGRIND) {
                fprintf(stderr, "(valgrind: skipped) ");
                return;
        }

        CU_ASSERT_EQUAL_FATAL(loop_waker_new(L, wake_fn, &ws, &w), 0);
        CU_ASSERT(loop_waker_fd(w) >= 0);
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, wake_thread, w), 0);
        CU_ASSERT(t_run_until(L, wake_done, &ws));
        pthread_join(th, NULL);
        /* Every wake counted exactly once, coalesced into fewer callbacks. */
        CU_ASSERT_EQUAL(ws.total, 1000);
        CU_ASSERT(ws.calls >= 1 && ws.calls <= 1000);
        loop_waker_free(L, w);
}

static void test_waker_process(void)
{
        struct wake_state ws = { .want = 5 };
        struct loop_waker *w;
        int status;
        pid_t pid;

        CU_ASSERT_EQUAL_FATAL(loop_waker_new(L, wake_fn, &ws, &w), 0);
        pid = fork();
        CU_ASSERT_FATAL(pid >= 0);
        if (pid == 0) {
                /* Another process holding the fd: a plain write of a u64. */
                uint64_t v = 5;
                _exit(write(loop_waker_fd(w), &v, sizeof(v)) == sizeof(v) ? 0 : 1);
        }
        CU_ASSERT(t_run_until(L, wake_done, &ws));
        CU_ASSERT_EQUAL(ws.total, 5);
        CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
        CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        loop_waker_free(L, w);
}

static void free_self(struct loop *l, uint64_t count, void *userdata)
{
        struct loop_waker **w = userdata;

        *w = loop_waker_free(l, *w);
        loop_stop(l);
}

static bool ptr_null(void *arg)
{
        return *(void **)arg == NULL;
}

static void test_waker_free(void)
{
        struct loop_waker *w1, *w2;
        int count[2] = { 0, 1 };

        /* Freed while its read is in flight: completes and frees inside the loop. */
        CU_ASSERT_EQUAL_FATAL(loop_waker_new(L, wake_fn, NULL, &w1), 0);
        CU_ASSERT_PTR_NULL(loop_waker_free(L, w1));
        /* Freed from its own callback. */
        CU_ASSERT_EQUAL_FATAL(loop_waker_new(L, free_self, &w2, &w2), 0);
        loop_waker_wake(w2);
        CU_ASSERT(t_run_until(L, ptr_null, &w2));
        /* One more iteration for w1's completion; valgrind/ASan check the rest. */
        CU_ASSERT_EQUAL_FATAL(loop_timer_add(L, MS, count_fire, count, NULL), 0);
        CU_ASSERT(t_run_until(L, counter_reached, count));
        CU_ASSERT_PTR_NULL(loop_waker_free(L, NULL));
}

/* --- Futex waits ------------------------------------------------------------------- */

/* One operation's completion (futex waits here, recv/send below). */
struct op {
        struct loop_io io;
        int res;
        bool done;
};

static void op_done(struct loop *l, struct loop_io *io, int res)
{
        struct op *op = container_of(io, struct op, io);

        op->res = res;
        op->done = true;
        loop_stop(l);
}

static bool ops_done(void *arg)
{
        struct op **ops = arg;

        for (; *ops; ops++)
                if (!(*ops)->done)
                        return false;
        return true;
}

static bool op_completed(void *arg)
{
        return ((struct op *)arg)->done;
}

/* FUTEX_WAKE until it woke somebody: the loop's wait is then known to have been queued
 * (the word never changes, so the kernel cannot answer -EAGAIN instead). */
static int wake_until_woken(uint32_t *word, bool shared)
{
        for (int i = 0; i < 100000; i++) {
                long n = syscall(SYS_futex, word, shared ? FUTEX_WAKE : FUTEX_WAKE_PRIVATE,
                                 INT_MAX, NULL, NULL, 0);
                if (n > 0)
                        return 0;
                if (n < 0)
                        return -errno;
                usleep(100);
        }
        return -ETIMEDOUT;
}

static uint32_t futex_word;

static void *futex_wake_thread(void *arg)
{
        return (void *)(intptr_t)wake_until_woken(&futex_word, false);
}

static bool futex_skip(void)
{
        if (!loop_futex_supported(L)) {
                fprintf(stderr, "(no IORING_OP_FUTEX_WAIT: skipped) ");
                return true;
        }
        return false;
}

static void test_futex_thread(void)
{
        struct op fs = { .io.complete = op_done };
        pthread_t th;
        void *ret;

        /* Valgrind holds its big lock across io_uring_enter() (test_waker_thread). */
        if (futex_skip() || RUNNING_ON_VALGRIND)
                return;
        futex_word = 0;
        CU_ASSERT_EQUAL_FATAL(loop_futex_wait(L, &fs.io, &futex_word, 0, false), 0);
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, futex_wake_thread, NULL), 0);
        CU_ASSERT(t_run_until(L, op_completed, &fs));
        CU_ASSERT_EQUAL(pthread_join(th, &ret), 0);
        CU_ASSERT_EQUAL((intptr_t)ret, 0);
        CU_ASSERT_EQUAL(fs.res, 0);
}

static void test_futex_process(void)
{
        struct op fs = { .io.complete = op_done };
        uint32_t *word;
        int status;
        pid_t pid;

        if (futex_skip())
                return;
        /* A shared word: the kernel keys it by the object, not by this address space. */
        word = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        CU_ASSERT_FATAL(word != MAP_FAILED);
        *word = 7;
        CU_ASSERT_EQUAL_FATAL(loop_futex_wait(L, &fs.io, word, 7, true), 0);
        pid = fork();
        CU_ASSERT_FATAL(pid >= 0);
        if (pid == 0)
                _exit(wake_until_woken(word, true) == 0 ? 0 : 1);
        CU_ASSERT(t_run_until(L, op_completed, &fs));
        CU_ASSERT_EQUAL(fs.res, 0);
        CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
        CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        munmap(word, 4096);
}

static void test_futex_value_and_cancel(void)
{
        struct op fs = { .io.complete = op_done };
        struct loop *l2;

        if (futex_skip())
                return;
        /* The word no longer holds the value: at once, -EAGAIN. */
        futex_word = 1;
        CU_ASSERT_EQUAL_FATAL(loop_futex_wait(L, &fs.io, &futex_word, 0, false), 0);
        CU_ASSERT(t_run_until(L, op_completed, &fs));
        CU_ASSERT_EQUAL(fs.res, -EAGAIN);
        /* A wait nobody wakes: cancelled. */
        fs.done = false;
        CU_ASSERT_EQUAL_FATAL(loop_futex_wait(L, &fs.io, &futex_word, 1, false), 0);
        CU_ASSERT_EQUAL(loop_cancel(L, &fs.io), 0);
        CU_ASSERT(t_run_until(L, op_completed, &fs));
        CU_ASSERT_EQUAL(fs.res, -ECANCELED);
        /* Misaligned: refused before it reaches the kernel. */
        CU_ASSERT_EQUAL(loop_futex_wait(L, &fs.io, (const uint32_t *)((char *)&futex_word + 1), 0,
                                        false), -EINVAL);
        /* A wait still queued when the loop is freed: cancelled without its callback. */
        CU_ASSERT_EQUAL_FATAL(loop_new(8, &l2), 0);
        fs.done = false;
        CU_ASSERT_EQUAL(loop_futex_wait(l2, &fs.io, &futex_word, 1, false), 0);
        CU_ASSERT_EQUAL(loop_run_for(l2, MS), 0);
        l2 = loop_free(l2);
        CU_ASSERT(!fs.done);
}

static void test_futex_disabled(void)
{
        struct op fs = { .io.complete = op_done };
        struct loop *l2;

        CU_ASSERT_EQUAL_FATAL(loop_new(8, &l2), 0);
        loop_futex_disable(l2);
        CU_ASSERT(!loop_futex_supported(l2));
        /* What a caller falls back on: nothing submitted, io untouched. */
        CU_ASSERT_EQUAL(loop_futex_wait(l2, &fs.io, &futex_word, 0, false), -EOPNOTSUPP);
        CU_ASSERT_EQUAL(fs.io._inflight, 0);
        l2 = loop_free(l2);
}

/* --- Signals --------------------------------------------------------------------- */

struct sig_state {
        int got[3];
        int n;
};

static void sig_fn(struct loop *l, int signo, void *userdata)
{
        struct sig_state *ss = userdata;

        if (ss->n < (int)ELEMENTSOF(ss->got))
                ss->got[ss->n] = signo;
        ss->n++;
        loop_stop(l);
}

static bool sig_two(void *arg)
{
        return ((struct sig_state *)arg)->n >= 2;
}

static void raise_fire(struct loop *l, void *userdata)
{
        raise(SIGUSR2);
}

static void test_signals(void)
{
        struct sig_state ss = { 0 };

        CU_ASSERT_EQUAL_FATAL(loop_signal_add(L, SIGUSR1, sig_fn, &ss), 0);
        CU_ASSERT_EQUAL_FATAL(loop_signal_add(L, SIGUSR2, sig_fn, &ss), 0);
        CU_ASSERT_EQUAL(loop_signal_add(L, SIGUSR1, sig_fn, &ss), -EEXIST);
        CU_ASSERT_EQUAL(loop_signal_add(L, SIGKILL, sig_fn, &ss), -EINVAL);
        CU_ASSERT_EQUAL(loop_signal_add(L, 0, sig_fn, &ss), -EINVAL);

        /* Raised before the loop runs: blocked, so it waits in the signalfd. */
        CU_ASSERT_EQUAL(raise(SIGUSR1), 0);
        /* Raised from inside the loop. */
        CU_ASSERT_EQUAL_FATAL(loop_timer_add(L, MS, raise_fire, NULL, NULL), 0);
        CU_ASSERT(t_run_until(L, sig_two, &ss));
        CU_ASSERT_EQUAL(ss.n, 2);
        CU_ASSERT_EQUAL(ss.got[0], SIGUSR1);
        CU_ASSERT_EQUAL(ss.got[1], SIGUSR2);
}

/* --- recv / send / cancel ---------------------------------------------------------- */

static void test_socketpair(void)
{
        struct op rx = { .io.complete = op_done }, tx = { .io.complete = op_done };
        struct op *both[] = { &rx, &tx, NULL }, *one[] = { &rx, NULL };
        char in[64] = { 0 };
        int sv[2];

        CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                                         0, sv), 0);
        /* recv first, so it has to wait for the data. */
        CU_ASSERT_EQUAL_FATAL(loop_recv(L, &rx.io, sv[1], in, sizeof(in)), 0);
        CU_ASSERT_EQUAL_FATAL(loop_send(L, &tx.io, sv[0], "hello", 5), 0);
        CU_ASSERT(t_run_until(L, ops_done, both));
        CU_ASSERT_EQUAL(tx.res, 5);
        CU_ASSERT_EQUAL(rx.res, 5);
        CU_ASSERT(memcmp(in, "hello", 5) == 0);

        /* A recv with nothing to read is cancelled: it completes with -ECANCELED. */
        rx.done = false;
        CU_ASSERT_EQUAL_FATAL(loop_recv(L, &rx.io, sv[1], in, sizeof(in)), 0);
        CU_ASSERT_EQUAL(loop_cancel(L, &rx.io), 0);
        CU_ASSERT(t_run_until(L, ops_done, one));
        CU_ASSERT_EQUAL(rx.res, -ECANCELED);
        /* Nothing in flight any more: nothing to cancel. */
        CU_ASSERT_EQUAL(loop_cancel(L, &rx.io), -ENOENT);

        /* The peer's EOF: recv completes with 0. */
        rx.done = false;
        CU_ASSERT_EQUAL_FATAL(loop_recv(L, &rx.io, sv[1], in, sizeof(in)), 0);
        close(sv[0]);
        CU_ASSERT(t_run_until(L, ops_done, one));
        CU_ASSERT_EQUAL(rx.res, 0);

        /* Sending to a closed peer: -EPIPE, and no SIGPIPE kills us. */
        tx.done = false;
        CU_ASSERT_EQUAL_FATAL(loop_send(L, &tx.io, sv[1], "x", 1), 0);
        CU_ASSERT(t_run_until(L, ops_done, both + 1));
        CU_ASSERT_EQUAL(tx.res, -EPIPE);
        close(sv[1]);
}

/* --- Deferred work ----------------------------------------------------------------- */

struct defer_case {
        struct loop_defer d;
        int runs;
        int requeue;                    /* times fn queues itself again */
        struct loop_defer *victim;      /* cancelled by fn */
        bool stop;                      /* fn stops the loop */
};

static void defer_fire(struct loop *l, struct loop_defer *d)
{
        struct defer_case *dc = container_of(d, struct defer_case, d);

        CU_ASSERT_FALSE(loop_defer_queued(d));  /* off the queue before fn runs */
        dc->runs++;
        if (dc->victim)
                loop_defer_cancel(l, dc->victim);
        if (dc->requeue > 0) {
                dc->requeue--;
                loop_defer(l, d);
        }
        if (dc->stop)
                loop_stop(l);
}

static void defer_from_timer(struct loop *l, void *userdata)
{
        loop_defer(l, userdata);
}

static void test_defer(void)
{
        struct defer_case a = { .d.fn = defer_fire, .requeue = 1 };
        struct defer_case b = { .d.fn = defer_fire }, c = { .d.fn = defer_fire };
        struct defer_case e = { .d.fn = defer_fire, .stop = true };
        struct loop_timer *late;
        struct loop *other;
        int count[2] = { 0, 1 };

        /* Queued before loop_run(): run before the first wait.  Queuing twice is one
         * run; a cancelled entry does not run; fn may cancel another queued entry and
         * queue itself again (it runs again in the same pass). */
        loop_defer(L, &c.d);
        loop_defer(L, &b.d);
        loop_defer(L, &a.d);
        loop_defer(L, &a.d);
        CU_ASSERT(loop_defer_queued(&a.d) && loop_defer_queued(&b.d));
        loop_defer_cancel(L, &b.d);
        loop_defer_cancel(L, &b.d);             /* not queued: a no-op */
        CU_ASSERT_FALSE(loop_defer_queued(&b.d));
        a.victim = &c.d;                        /* a runs first: it was queued last */
        CU_ASSERT_EQUAL_FATAL(loop_timer_add(L, 0, count_fire, count, NULL), 0);
        CU_ASSERT(t_run_until(L, counter_reached, count));
        CU_ASSERT_EQUAL(a.runs, 2);
        CU_ASSERT_EQUAL(b.runs, 0);
        CU_ASSERT_EQUAL(c.runs, 0);
        CU_ASSERT_FALSE(loop_defer_queued(&c.d));

        /* Queued from a callback: runs before the loop sleeps again (e stops the loop;
         * no other completion is due for a second). */
        CU_ASSERT_EQUAL_FATAL(loop_timer_add(L, MS, defer_from_timer, &e.d, NULL), 0);
        CU_ASSERT_EQUAL_FATAL(loop_timer_add(L, 1000 * MS, count_fire, count, &late), 0);
        CU_ASSERT_EQUAL(loop_run(L), 0);
        CU_ASSERT_EQUAL(e.runs, 1);
        CU_ASSERT_EQUAL(count[0], 1);           /* the 1 s timer has not fired */
        loop_timer_cancel(L, late);

        /* loop_free() drops what is still queued. */
        CU_ASSERT_EQUAL_FATAL(loop_new(4, &other), 0);
        loop_defer(other, &b.d);
        loop_free(other);
        CU_ASSERT_FALSE(loop_defer_queued(&b.d));
        CU_ASSERT_EQUAL(b.runs, 0);
}

/* --- Main ------------------------------------------------------------------------ */

static const struct t_case timer_cases[] = {
        { "timers fire in order, cancel works", test_timer_order },
        { "more timers than SQ entries", test_timer_sq_full },
        { "zero delay and stop before run", test_timer_zero_and_restart },
        { "max stall is tracked", test_stall },
        { "window stall: take and reset", test_stall_window },
        { NULL, NULL },
};

static const struct t_case waker_cases[] = {
        { "wake from another thread", test_waker_thread },
        { "wake from another process", test_waker_process },
        { "free in flight and from callback", test_waker_free },
        { NULL, NULL },
};

static const struct t_case futex_cases[] = {
        { "wait woken from another thread", test_futex_thread },
        { "shared wait woken from another process", test_futex_process },
        { "value changed, cancel, misaligned, freed in flight", test_futex_value_and_cancel },
        { "disabled: -EOPNOTSUPP", test_futex_disabled },
        { NULL, NULL },
};

static const struct t_case signal_cases[] = {
        { "SIGUSR1/SIGUSR2 through signalfd", test_signals },
        { NULL, NULL },
};

static const struct t_case io_cases[] = {
        { "recv, send, cancel, EOF, EPIPE", test_socketpair },
        { NULL, NULL },
};

static const struct t_case defer_cases[] = {
        { "queue, cancel, requeue from fn, loop_free", test_defer },
        { NULL, NULL },
};

static const struct t_suite suites[] = {
        { "timers", timer_cases },
        { "wakers", waker_cases },
        { "futex", futex_cases },
        { "signals", signal_cases },
        { "io", io_cases },
        { "defer", defer_cases },
        { NULL, NULL },
};

int main(void)
{
        int r;

        r = t_loop_new(64, &L);
        if (r)
                return r;
        r = t_run(suites);
        L = loop_free(L);
        return r;
}
