/* mock-node.c -- see mock-node.h. */
#include <errno.h>
#include <stdlib.h>

#include "mock-node.h"
#include "node/node.h"

struct node *mock_node_new(void)
{
        struct node *n = calloc(1, sizeof(*n));

        if (n)
                n->adapter_up = n->controller_up = true;
        return n;
}

void mock_node_clear(struct node *n)
{
        for (size_t i = 0; i < n->n_sent; i++)
                free(n->sent[i].bytes);
        n->n_sent = 0;
}

void mock_node_free(struct node *n)
{
        if (!n)
                return;
        mock_node_clear(n);
        free(n->sent);
        free(n);
}

size_t mock_node_count(const struct node *n, Coord__Role to, Coord__MsgType type)
{
        size_t k = 0;

        for (size_t i = 0; i < n->n_sent; i++)
                k += n->sent[i].to == to && n->sent[i].type == type;
        return k;
}

bool node_peer_connected(const struct node *n, node_peer_t role)
{
        if (!n)
                return false;
        if (role == COORD__ROLE__ROLE_ADAPTER)
                return n->adapter_up;
        if (role == COORD__ROLE__ROLE_CONTROLLER)
                return n->controller_up;
        return false;
}

size_t node_peer_pending(const struct node *n, node_peer_t peer)
{
        (void)n;
        (void)peer;
        return 0;       /* every send is written at once */
}

int node_send(struct node *n, node_peer_t to, Coord__MsgType type, uint64_t request_id,
              const ProtobufCMessage *msg)
{
        struct mock_sent *s;

        n->calls++;
        if (n->fail_at && n->calls >= n->fail_at)
                return n->send_err;
        if (!node_peer_connected(n, to))
                return -ENOTCONN;
        if (n->n_sent == n->cap_sent) {
                size_t cap = n->cap_sent ? 2 * n->cap_sent : 16;
                struct mock_sent *v = realloc(n->sent, cap * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                n->sent = v;
                n->cap_sent = cap;
        }
        s = &n->sent[n->n_sent];
        s->to = to;
        s->type = type;
        s->request_id = request_id;
        s->len = protobuf_c_message_get_packed_size(msg);
        s->bytes = malloc(s->len + 1);
        if (!s->bytes)
                return -ENOMEM;
        protobuf_c_message_pack(msg, s->bytes);
        n->n_sent++;
        return 0;
}

void node_set_fence(struct node *n, uint64_t epoch)
{
        n->fence = epoch;
}

uint32_t node_instance_id(const struct node *n)
{
        return 0;
}

struct loop *node_loop(struct node *n)
{
        return n->loop;
}

void node_set_ready(struct node *n, bool ready)
{
        n->ready = ready;
}
