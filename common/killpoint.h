/* killpoint.h -- named crash points for recovery tests (issue 30).
 *
 * KILLPOINT("catalog.commit.after_write") marks a place where a crash must be
 * survivable.  With COORD_KILLPOINT=name[:N] in the environment (N >= 1, default 1) the
 * process writes one line to stderr and SIGKILLs itself at the Nth crossing of that
 * point, counting every thread's crossings.  The environment is read once, before
 * main() (a constructor), so a daemon needs no call of its own.  Unset, a crossing
 * costs one load and a predictable branch.  docs/operations.md lists the points.
 */
#pragma once

#include <stdbool.h>

/* Set once before main(), read-only afterwards: whether COORD_KILLPOINT named a point. */
extern bool killpoint_armed;

/* The slow path of KILLPOINT(): count a crossing of name, die at the chosen one. */
void killpoint_cross(const char *name);

#define KILLPOINT(name)                                                 \
        do {                                                            \
                if (__builtin_expect(killpoint_armed, 0))               \
                        killpoint_cross(name);                          \
        } while (0)
