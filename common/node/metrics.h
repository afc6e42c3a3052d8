/* metrics.h -- a daemon's status reply in the Prometheus text exposition format (0.0.4).
 *
 * Used by the daemons' HTTP endpoint (node.h, --metrics-port) and by `coordctl metrics`,
 * so both print the same names.  Every metric is coord_<role>_<name>:
 *   - the reply's own fields: up, ready, incarnation, uptime_seconds, frames_rejected_total,
 *     stale_rejected_total, loop_stall_max_us, catalog_seq, ring_generation, and per peer
 *     peer_connected{peer=}, peer_incarnation{peer=}, peer_connects_total{peer=};
 *   - every numeric key=value of the detail line: a counter named <key>_total, or a gauge
 *     named <key> when metrics_key_is_gauge() says so (maxima, last values, sizes, states);
 *     "window" keys (reset by each status request) are left out;
 *   - the non-numeric values (ring=attached, append_sync=thread) as labels of
 *     coord_<role>_info, with instance and pid;
 *   - the histograms (common/hist.h) as Prometheus histograms in seconds.
 * Library code: no logging.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "coord.pb-c.h"

/* Render s into f.  0, or -errno when f fails. */
int metrics_render(FILE *f, const Coord__StatusReply *s);
/* coord_<role>_up 0, for a daemon that did not answer. */
int metrics_render_down(FILE *f, Coord__Role role);
/* Whether a detail key is a gauge (else a counter). */
bool metrics_key_is_gauge(const char *key);
