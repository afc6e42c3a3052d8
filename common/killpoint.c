/* killpoint.c -- see killpoint.h.
 *
 * The armed name and count are written by the constructor before main(), when the
 * process has one thread, and only read afterwards; crossings are counted with an
 * atomic add, so points crossed by several threads (the adapter's committers) count
 * each crossing once.  The log line is written with one write(2), which the dying
 * process cannot tear.
 */
#include "killpoint.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

bool killpoint_armed;

static char armed_name[128];
static uint64_t armed_at = 1;           /* the crossing that kills */
static uint64_t crossings;              /* atomic */

__attribute__((constructor)) static void killpoint_init(void)
{
        const char *env = getenv("COORD_KILLPOINT");
        const char *colon;
        size_t len;

        if (!env || !*env)
                return;
        colon = strchr(env, ':');
        len = colon ? (size_t)(colon - env) : strlen(env);
        if (len == 0 || len >= sizeof(armed_name))
                return;
        if (colon) {
                char *end;
                unsigned long long n;

                errno = 0;
                n = strtoull(colon + 1, &end, 10);
                if (errno || *end || end == colon + 1 || n == 0)
                        return;         /* malformed: stays unarmed */
                armed_at = n;
        }
        memcpy(armed_name, env, len);
        armed_name[len] = '\0';
        killpoint_armed = true;
}

void killpoint_cross(const char *name)
{
        char line[256];
        uint64_t n;
        int len;

        if (strcmp(name, armed_name) != 0)
                return;
        n = __atomic_add_fetch(&crossings, 1, __ATOMIC_RELAXED);
        if (n != armed_at)
                return;
        len = snprintf(line, sizeof(line), "ts=%lld level=error pid=%d event=killpoint name=%s "
                       "crossing=%llu\n", (long long)time(NULL), (int)getpid(), name, (unsigned long long)n);
        if (len > 0 && (size_t)len >= sizeof(line))
                len = (int)sizeof(line) - 1;
        if (len > 0)
                (void)!write(STDERR_FILENO, line, (size_t)len);
        kill(getpid(), SIGKILL);
        for (;;)
                pause();        /* SIGKILL is delivered before kill() returns to us */
}
