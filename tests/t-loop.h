/* t-loop.h -- what the tests of a struct loop (common/loop/loop.h) and of what runs on
 * one share: a loop or a skip, and running it until something happened.  Helpers are
 * named t_* as in t.h.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "loop/loop.h"
#include "t.h"

#define T_LOOP_WATCHDOG_NS (UINT64_C(10000) * 1000 * 1000)     /* 10 s */

/* A new loop of entries in *ret: 0, else the exit code for main() (77 where io_uring
 * is unavailable, said on stderr). */
static inline int t_loop_new(unsigned entries, struct loop **ret)
{
        int r = loop_new(entries, ret);

        if (r == -ENOSYS || r == -EPERM) {
                fprintf(stderr, "io_uring unavailable (%s): skipped\n", strerror(-r));
                return T_EXIT_SKIP;
        }
        if (r < 0) {
                fprintf(stderr, "loop_new: %s\n", strerror(-r));
                return T_EXIT_ERROR;
        }
        return 0;
}

static inline void t_watchdog_fire(struct loop *l, void *userdata)
{
        *(bool *)userdata = true;
        loop_stop(l);
}

/* Run l until pred(arg) holds; the callbacks under test call loop_stop() whenever
 * something happened.  False when the 10 s watchdog fired first. */
static inline bool t_run_until(struct loop *l, bool (*pred)(void *), void *arg)
{
        struct loop_timer *wd;
        bool expired = false;

        CU_ASSERT_EQUAL_FATAL(loop_timer_add(l, T_LOOP_WATCHDOG_NS, t_watchdog_fire, &expired, &wd), 0);
        while (!pred(arg) && !expired)
                CU_ASSERT_EQUAL_FATAL(loop_run(l), 0);
        if (!expired)
                loop_timer_cancel(l, wd);
        return !expired;
}
