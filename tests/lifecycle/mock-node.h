/* mock-node.h -- a stand-in for common/node in the unit tests of the follower's
 * following and publication (test-lifecycle-follow.c, test-lifecycle-publish.c).
 *
 * It defines the node functions liblifecycle calls (node_send(), node_peer_connected(),
 * node_loop(), node_set_ready()), so the linker never takes common/node's node.o from
 * its archive: what the follower sends is recorded, packed, for the test to unpack.
 * For unit tests only.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coord.pb-c.h"

struct loop;

struct mock_sent {
        Coord__Role to;
        Coord__MsgType type;
        uint64_t request_id;
        uint8_t *bytes;                 /* the message, packed */
        size_t len;
};

struct node {
        bool adapter_up, controller_up; /* node_peer_connected() */
        bool ready;                     /* node_set_ready() */
        uint64_t fence;                 /* node_set_fence() */
        struct loop *loop;              /* node_loop(); NULL unless the test made one */
        /* node_send(): send_err (0: success) from the fail_at-th call on (1-based; 0:
         * never); a failed send is not recorded. */
        int send_err;
        size_t fail_at, calls;
        struct mock_sent *sent;
        size_t n_sent, cap_sent;
};

/* A node with both peers connected and no loop. */
struct node *mock_node_new(void);
void mock_node_free(struct node *n);
/* Forget what was sent. */
void mock_node_clear(struct node *n);
/* How many of the sent messages went to `to` with `type`. */
size_t mock_node_count(const struct node *n, Coord__Role to, Coord__MsgType type);
