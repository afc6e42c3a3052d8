/* node-http.c -- GET /metrics on loopback, on the node's loop.  See node-http.h.
 *
 * A connection's life: accept -> recv until the head ends ("\r\n\r\n") or the buffer
 * is full -> one answer (status line, headers, body) -> send until all is sent ->
 * close.  Each step is one loop operation in flight at a time, so a connection is freed
 * only from its own completion (or by node_http_free() after the loop is gone), and a
 * timer closes it when HTTP_CONN_TIMEOUT_MS pass first: shutdown(2) makes the pending
 * recv or send complete, which frees it.
 */
#include "node-http.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "loop/loop.h"
#include "util.h"

#define HTTP_MAX_CONNS          8
#define HTTP_HEAD_MAX           4096
#define HTTP_CONN_TIMEOUT_MS    5000ull
#define HTTP_ACCEPT_RETRY_MS    100ull  /* after a failed accept (EMFILE): no busy loop */

struct http_conn {
        struct node_http *h;
        int fd;
        struct loop_io io;
        struct loop_timer *timer;
        char head[HTTP_HEAD_MAX];
        size_t head_len;
        char *out;                      /* the whole answer, owned */
        size_t out_len, out_sent;
        struct http_conn *prev, *next;
};

struct node_http {
        struct loop *loop;
        int fd;
        struct loop_io accept_io;
        bool accepting;                 /* accept_io in flight */
        char *path;
        node_http_body_fn body_fn;
        void *userdata;
        struct http_conn *conns;
        unsigned n_conns;
        uint64_t served, refused;
};

static void conn_free(struct http_conn *c)
{
        struct node_http *h = c->h;

        if (c->timer)
                loop_timer_cancel(h->loop, c->timer);
        if (c->fd >= 0)
                close(c->fd);
        if (c->prev)
                c->prev->next = c->next;
        else
                h->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        h->n_conns--;
        free(c->out);
        free(c);
}

static void conn_timeout(struct loop *l, void *userdata)
{
        struct http_conn *c = userdata;

        c->timer = NULL;                /* fired: freed by the loop */
        c->h->refused++;
        (void)shutdown(c->fd, SHUT_RDWR);       /* the recv or send in flight completes */
}

static void conn_send_done(struct loop *l, struct loop_io *io, int res);

static void conn_send_more(struct http_conn *c)
{
        if (loop_send(c->h->loop, &c->io, c->fd, c->out + c->out_sent, c->out_len - c->out_sent) < 0)
                conn_free(c);
}

static void conn_send_done(struct loop *l, struct loop_io *io, int res)
{
        struct http_conn *c = container_of(io, struct http_conn, io);

        if (res <= 0) {
                conn_free(c);
                return;
        }
        c->out_sent += (size_t)res;
        if (c->out_sent < c->out_len)
                conn_send_more(c);
        else
                conn_free(c);
}

/* head_only: a HEAD's answer, the length of the body it would get and no body. */
static int conn_answer(struct http_conn *c, int code, const char *reason, const char *ctype,
                       const char *body, size_t body_len, bool head_only)
{
        int n;

        n = asprintf(&c->out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                              "Connection: close\r\n\r\n%.*s",
                     code, reason, ctype, body_len, head_only ? 0 : (int)body_len, body);
        if (n < 0) {
                c->out = NULL;
                return -ENOMEM;
        }
        c->out_len = (size_t)n;
        if (code == 200)
                c->h->served++;
        else
                c->h->refused++;
        c->io.complete = conn_send_done;
        conn_send_more(c);
        return 0;
}

/* The request line of a complete head: "GET /metrics HTTP/1.1".  A query string is
 * ignored, as Prometheus sends none. */
static void conn_handle(struct http_conn *c)
{
        struct node_http *h = c->h;
        char method[16], target[256], version[16];
        const char *text = "text/plain; charset=utf-8";
        char *eol = memchr(c->head, '\r', c->head_len);
        char *q, *body;
        size_t len;

        if (!eol || (size_t)(eol - c->head) >= 300 ||
            sscanf(c->head, "%15s %255s %15s", method, target, version) != 3 ||
            strncmp(version, "HTTP/1.", 7) != 0 || target[0] != '/') {
                if (conn_answer(c, 400, "Bad Request", text, "bad request\n", 12, false) < 0)
                        conn_free(c);
                return;
        }
        q = strchr(target, '?');
        if (q)
                *q = '\0';
        if (strcmp(target, h->path) != 0) {
                if (conn_answer(c, 404, "Not Found", text, "not found: GET /metrics\n", 24, false) < 0)
                        conn_free(c);
                return;
        }
        if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
                if (conn_answer(c, 405, "Method Not Allowed", text, "GET only\n", 9, false) < 0)
                        conn_free(c);
                return;
        }
        body = h->body_fn(h->userdata, &len);
        if (!body) {
                if (conn_answer(c, 500, "Internal Server Error", text, "no metrics\n", 11, false) < 0)
                        conn_free(c);
                return;
        }
        if (conn_answer(c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", body, len,
                        strcmp(method, "HEAD") == 0) < 0)
                conn_free(c);
        free(body);
}

static void conn_recv_done(struct loop *l, struct loop_io *io, int res)
{
        struct http_conn *c = container_of(io, struct http_conn, io);

        if (res <= 0) {                 /* EOF before a whole head, an error, the timeout */
                conn_free(c);
                return;
        }
        c->head_len += (size_t)res;
        /* head[] keeps one byte for the NUL that sscanf needs. */
        c->head[c->head_len] = '\0';
        if (strstr(c->head, "\r\n\r\n") || strstr(c->head, "\n\n")) {
                conn_handle(c);
                return;
        }
        if (c->head_len >= sizeof(c->head) - 1) {
                if (conn_answer(c, 400, "Bad Request", "text/plain", "request head too long\n", 22, false) < 0)
                        conn_free(c);
                return;
        }
        if (loop_recv(l, &c->io, c->fd, c->head + c->head_len, sizeof(c->head) - 1 - c->head_len) < 0)
                conn_free(c);
}

static void accept_arm(struct node_http *h);

static void accept_retry(struct loop *l, void *userdata)
{
        accept_arm(userdata);
}

static void accept_done(struct loop *l, struct loop_io *io, int res)
{
        struct node_http *h = container_of(io, struct node_http, accept_io);
        struct http_conn *c;

        h->accepting = false;
        if (res >= 0) {
                if (h->n_conns >= HTTP_MAX_CONNS || !(c = calloc(1, sizeof(*c)))) {
                        h->refused++;
                        close(res);
                } else {
                        c->h = h;
                        c->fd = res;
                        c->next = h->conns;
                        if (h->conns)
                                h->conns->prev = c;
                        h->conns = c;
                        h->n_conns++;
                        c->io.complete = conn_recv_done;
                        if (loop_timer_add(l, HTTP_CONN_TIMEOUT_MS * 1000000ull, conn_timeout, c,
                                           &c->timer) < 0)
                                c->timer = NULL;
                        if (loop_recv(l, &c->io, c->fd, c->head, sizeof(c->head) - 1) < 0)
                                conn_free(c);
                }
        }
        if (res >= 0 || res == -EAGAIN || res == -EINTR || res == -ECONNABORTED)
                accept_arm(h);
        else if (res != -ECANCELED && loop_timer_add(l, HTTP_ACCEPT_RETRY_MS * 1000000ull,
                                                     accept_retry, h, NULL) < 0)
                accept_arm(h);

}

static void accept_arm(struct node_http *h)
{
        if (h->fd < 0 || h->accepting)
                return;
        h->accept_io.complete = accept_done;
        if (loop_accept(h->loop, &h->accept_io, h->fd) == 0)
                h->accepting = true;
}

int node_http_new(struct loop *l, uint16_t port, const char *path, node_http_body_fn fn,
                  void *userdata, struct node_http **ret)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        struct node_http *h;
        int one = 1, r;

        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->loop = l;
        h->body_fn = fn;
        h->userdata = userdata;
        h->path = strdup(path);
        h->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (!h->path || h->fd < 0) {
                r = h->path ? -errno : -ENOMEM;
                goto fail;
        }
        if (setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            bind(h->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(h->fd, 16) < 0) {
                r = -errno;
                goto fail;
        }
        accept_arm(h);
        if (!h->accepting) {
                r = -EIO;
                goto fail;
        }
        *ret = h;
        return 0;
fail:
        if (h->fd >= 0)
                close(h->fd);
        free(h->path);
        free(h);
        return r;
}

struct node_http *node_http_free(struct node_http *h)
{
        if (!h)
                return NULL;
        while (h->conns) {
                h->conns->timer = NULL;         /* the loop and its timers are gone */
                conn_free(h->conns);
        }
        if (h->fd >= 0)
                close(h->fd);
        free(h->path);
        free(h);
        return NULL;
}

uint64_t node_http_served(const struct node_http *h) { return h ? h->served : 0; }
uint64_t node_http_refused(const struct node_http *h) { return h ? h->refused : 0; }
