/* node-http.h -- internal to common/node: a minimal HTTP/1.x server on loopback, on the
 * node's loop, for GET /metrics (node.h).
 *
 * One request per connection (Connection: close).  GET of the one path gets 200 and the
 * body of body_fn; any other path 404, another method 405, a request line that does not
 * parse or a head over 4 KiB 400.  At most HTTP_MAX_CONNS connections at once (more are
 * closed at accept) and each lives at most HTTP_CONN_TIMEOUT_MS: a client can cost
 * the daemon a few fds and buffers, never a blocked loop.  Everything runs in the loop
 * thread.  Library code: it does not log; counters tell.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct loop;
struct node_http;

/* The body of a 200: malloc'ed, *ret_len bytes; NULL on failure (then 500). */
typedef char *(*node_http_body_fn)(void *userdata, size_t *ret_len);

/* Listen on 127.0.0.1:port (SO_REUSEADDR) and serve `path`.  -EADDRINUSE etc. */
int node_http_new(struct loop *l, uint16_t port, const char *path, node_http_body_fn fn,
                  void *userdata, struct node_http **ret);
/* Closes the listener and every connection and frees them.  Call it after loop_free():
 * the loop's drain at its free still writes to the loop_io of operations in flight,
 * which live in h.  Accepts NULL. */
struct node_http *node_http_free(struct node_http *h);

uint64_t node_http_served(const struct node_http *h);   /* 200s */
uint64_t node_http_refused(const struct node_http *h);  /* 4xx, 5xx and connections shed */
