/* sdnotify.h -- the service manager's notification protocol (sd_notify(3)), without
 * libsystemd: one datagram of "KEY=VALUE\n..." lines to the AF_UNIX socket named by
 * $NOTIFY_SOCKET (a path, or "@name" for the abstract namespace).  Library code: it
 * never logs. */
#pragma once

#include <stdint.h>

/* Send state (e.g. "READY=1").  1 when sent, 0 when $NOTIFY_SOCKET is not set (not
 * run by a service manager: nothing to do), -errno otherwise (-EAFNOSUPPORT for an
 * address this helper does not speak, such as vsock). */
int sdnotify_send(const char *state);

/* The watchdog interval the manager asked for ($WATCHDOG_USEC, for this process when
 * $WATCHDOG_PID is set): 1 with *ret_usec, 0 when none. */
int sdnotify_watchdog_usec(uint64_t *ret_usec);
