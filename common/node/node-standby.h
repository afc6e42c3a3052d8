/* node-standby.h -- the wait of a standby daemon for its role's lock (node-standby.c).
 * Internal to common/node. */
#pragma once

#include <stdint.h>

#include "coord.pb-c.h"

struct node_standby_info {
        Coord__Role role;
        const char *run_dir;
        const char *instance;
        uint64_t start_ms;      /* now_ms() at the process's start: its uptime */
};

/* Wait until flock(lock_fd, LOCK_EX) is ours, answering status on the standby socket
 * meanwhile.  0 with the lock held; -ECANCELED on SIGTERM/SIGINT; other -errno. */
int node_standby_wait(int lock_fd, const struct node_standby_info *info);
