/* fuzz-frame -- ipc frames (common/ipc) from untrusted bytes.
 *
 * The input is a byte stream as a peer would send it.  Three readers of it must agree:
 *   1. ipc_frame_decode() over the buffer, frame after frame, until it needs more
 *      (0) or fails (-EMSGSIZE / -EBADMSG, the only errors it may return);
 *   2. ipc_sync_recv() on a socket carrying the same bytes (coordctl's receiver);
 *   3. an ipc_conn on a loop receiving them (every daemon's receiver): on_frame() for
 *      the same frames in the same order, then on_close() -- with the decoder's error,
 *      at the end of the stream 0, or -ECONNRESET when it ends inside a frame.
 * Every decoded Envelope's payload is unpacked as the message its type names (what the
 * daemons do next), packed again, and the packed form must unpack and pack to the same
 * bytes; the Envelope itself must survive ipc_frame_encode() and decode again.
 */
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "ipc/ipc.h"
#include "loop/loop.h"
#include "util.h"

#define MAX_FRAME       (64u << 10)     /* small, so the fuzzer reaches -EMSGSIZE */
#define MAX_FRAMES      256

/* Whether m or a message inside it kept unknown fields. */
static bool has_unknown_fields(const ProtobufCMessage *m)
{
        const ProtobufCMessageDescriptor *d = m->descriptor;

        if (m->n_unknown_fields)
                return true;
        for (unsigned i = 0; i < d->n_fields; i++) {
                const ProtobufCFieldDescriptor *f = &d->fields[i];
                const char *member = (const char *)m + f->offset;

                if (f->type != PROTOBUF_C_TYPE_MESSAGE)
                        continue;
                if (f->label == PROTOBUF_C_LABEL_REPEATED) {
                        size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
                        ProtobufCMessage *const *v = *(ProtobufCMessage *const *const *)member;

                        for (size_t k = 0; k < n; k++)
                                if (v[k] && has_unknown_fields(v[k]))
                                        return true;
                } else {
                        const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)member;

                        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF &&
                            *(const uint32_t *)((const char *)m + f->quantifier_offset) != f->id)
                                continue;
                        if (sub && has_unknown_fields(sub))
                                return true;
                }
        }
        return false;
}

/* pack(unpack(bytes)) is a fixed point after one round: pack, unpack, pack again.  One
 * exception, protobuf-c's: it keeps an unknown field numbered 0 whose tag was encoded in
 * more bytes than needed, and packs it in one byte that it then refuses.  No daemon
 * re-encodes a message it received, so only messages without unknown fields must
 * survive the round. */
static void check_message(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len)
{
        ProtobufCMessage *m, *m2;
        uint8_t *p1, *p2;
        size_t n1, n2;

        m = protobuf_c_message_unpack(d, NULL, len, data);
        if (!m)
                return;         /* a receiver answers MSG_ERROR or closes; nothing to check */
        n1 = protobuf_c_message_get_packed_size(m);
        p1 = malloc(n1 + 1);
        FUZZ_CHECK(p1);
        FUZZ_CHECK(protobuf_c_message_pack(m, p1) == n1);
        m2 = protobuf_c_message_unpack(d, NULL, n1, p1);
        if (!m2 && has_unknown_fields(m)) {
                free(p1);
                protobuf_c_message_free_unpacked(m, NULL);
                return;
        }
        if (!m2) {
                fprintf(stderr, "fuzz-frame: a %s packs to %zu bytes that do not unpack:", d->name, n1);
                for (size_t i = 0; i < n1; i++)
                        fprintf(stderr, " %02x", p1[i]);
                fprintf(stderr, "\n");
        }
        FUZZ_CHECK(m2);
        n2 = protobuf_c_message_get_packed_size(m2);
        FUZZ_CHECK(n2 == n1);
        p2 = malloc(n2 + 1);
        FUZZ_CHECK(p2);
        FUZZ_CHECK(protobuf_c_message_pack(m2, p2) == n2);
        FUZZ_CHECK(memcmp(p1, p2, n1) == 0);
        free(p2);
        free(p1);
        protobuf_c_message_free_unpacked(m2, NULL);
        protobuf_c_message_free_unpacked(m, NULL);
}

/* What reader 1 found. */
struct decoded {
        size_t n;
        int type[MAX_FRAMES];
        uint64_t request_id[MAX_FRAMES];
        size_t payload_len[MAX_FRAMES];
        int end;                        /* 0 (needs more) or the error */
        size_t rest;                    /* bytes after the last whole frame */
};

static void decode_all(const uint8_t *data, size_t size, struct decoded *ret)
{
        size_t off = 0;

        ret->n = 0;
        ret->end = 0;
        while (ret->n < MAX_FRAMES) {
                Coord__Envelope *env = NULL, *again = NULL;
                const ProtobufCMessageDescriptor *d;
                uint8_t *buf = NULL;
                size_t len = 0;
                ssize_t r;

                r = ipc_frame_decode(data + off, size - off, MAX_FRAME, &env);
                if (r <= 0) {
                        FUZZ_CHECK(r == 0 || r == -EMSGSIZE || r == -EBADMSG || r == -ENOMEM);
                        FUZZ_CHECK(!env);
                        ret->end = (int)r;
                        ret->rest = size - off;
                        return;
                }
                FUZZ_CHECK((size_t)r <= size - off && r >= 4);
                FUZZ_CHECK(env && (int)env->type > 0);
                ret->type[ret->n] = (int)env->type;
                ret->request_id[ret->n] = env->request_id;
                ret->payload_len[ret->n] = env->payload.len;
                ret->n++;
                off += (size_t)r;

                d = ipc_payload_descriptor((int)env->type);
                if (d)
                        check_message(d, env->payload.data, env->payload.len);

                /* Re-encoded, the Envelope decodes to the same fields (unless it kept
                 * unknown fields: check_message()). */
                if (env->base.n_unknown_fields) {
                        coord__envelope__free_unpacked(env, NULL);
                        continue;
                }
                FUZZ_CHECK(ipc_frame_encode(env, MAX_FRAME, &buf, &len) == 0);
                FUZZ_CHECK(ipc_frame_decode(buf, len, MAX_FRAME, &again) == (ssize_t)len);
                FUZZ_CHECK(again->type == env->type && again->sender == env->sender &&
                           again->incarnation == env->incarnation &&
                           again->request_id == env->request_id &&
                           again->payload.len == env->payload.len &&
                           (env->payload.len == 0 ||
                            memcmp(again->payload.data, env->payload.data, env->payload.len) == 0));
                coord__envelope__free_unpacked(again, NULL);
                coord__envelope__free_unpacked(env, NULL);
                free(buf);
        }
}

/* Write all of data to fd (a socket with room for it: inputs are small), then EOF. */
static void feed(int fd, const uint8_t *data, size_t size)
{
        for (size_t off = 0; off < size;) {
                ssize_t n = send(fd, data + off, size - off, MSG_NOSIGNAL);

                FUZZ_CHECK(n > 0);
                off += (size_t)n;
        }
        FUZZ_CHECK(shutdown(fd, SHUT_WR) == 0);
}

/* Reader 2: the blocking receiver. */
static void check_sync(const uint8_t *data, size_t size, const struct decoded *want)
{
        int sv[2];
        size_t n = 0;
        int r;

        if (size > 128 * 1024)
                return;         /* more than a socket buffer holds without a reader */
        FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
        feed(sv[0], data, size);
        for (;;) {
                Coord__Envelope *env = NULL;

                r = ipc_sync_recv(sv[1], MAX_FRAME, 1000, &env);
                if (r < 0)
                        break;
                FUZZ_CHECK(n < want->n && (int)env->type == want->type[n] &&
                           env->request_id == want->request_id[n] &&
                           env->payload.len == want->payload_len[n]);
                coord__envelope__free_unpacked(env, NULL);
                n++;
                if (n == MAX_FRAMES)
                        break;
        }
        if (n < MAX_FRAMES) {
                FUZZ_CHECK(n == want->n);
                /* The end: EOF where the decoder wanted more, else the decoder's error. */
                FUZZ_CHECK(r == (want->end == 0 ? -ECONNRESET : want->end));
        }
        close(sv[0]);
        close(sv[1]);
}

/* Reader 3: a connection on the loop, accepted by a server listening once. */
static struct loop *L;
static struct ipc_server *S;
static char *dir, *path;

struct recv_state {
        const struct decoded *want;
        size_t n;
        bool closed;
        int reason;
};

static struct recv_state *current;

static void on_frame(struct ipc_conn *c, const Coord__Envelope *env, void *userdata)
{
        struct recv_state *st = userdata;

        if (st->n < MAX_FRAMES)
                FUZZ_CHECK(st->n < st->want->n && (int)env->type == st->want->type[st->n] &&
                           env->request_id == st->want->request_id[st->n] &&
                           env->payload.len == st->want->payload_len[st->n]);
        st->n++;
}

static void on_close(struct ipc_conn *c, int reason, void *userdata)
{
        struct recv_state *st = userdata;

        st->closed = true;
        st->reason = reason;
        loop_stop(L);
}

static const struct ipc_conn_ops conn_ops = { on_frame, on_close };

static void on_accept(struct ipc_server *s, struct ipc_conn *c, void *userdata)
{
        FUZZ_CHECK(current);
        ipc_conn_set_ops(c, &conn_ops, current);
}

static void cleanup(void)
{
        if (L) {
                S = ipc_server_free(S);
                loop_run_for(L, 100 * 1000 * 1000);
                L = loop_free(L);
        }
        if (dir)
                rmdir(dir);
        free(path);
        free(dir);
}

static bool setup(void)
{
        static bool done, ok;
        char tmpl[] = "/tmp/coord-fuzz-frame.XXXXXX";

        if (done)
                return ok;
        done = true;
        if (loop_new(64, &L) < 0)
                return false;   /* no io_uring here: readers 1 and 2 only */
        FUZZ_CHECK(mkdtemp(tmpl));
        dir = strdup(tmpl);
        FUZZ_CHECK(dir && asprintf(&path, "%s/ipc.sock", dir) > 0);
        FUZZ_CHECK(ipc_listen(L, path, MAX_FRAME, on_accept, NULL, &S) == 0);
        atexit(cleanup);
        ok = true;
        return ok;
}

static void check_conn(const uint8_t *data, size_t size, const struct decoded *want)
{
        struct recv_state st = { .want = want };
        int fd;

        if (size > 128 * 1024 || !setup())
                return;
        fd = ipc_sync_connect(path);
        FUZZ_CHECK(fd >= 0);
        feed(fd, data, size);
        current = &st;
        /* The server accepts, reads to the end or the first bad frame, and closes. */
        while (!st.closed)
                FUZZ_CHECK(loop_run_for(L, 10ull * 1000 * 1000 * 1000) == 0 && st.closed);
        current = NULL;
        close(fd);
        if (want->n < MAX_FRAMES) {
                FUZZ_CHECK(st.n == want->n);
                /* EOF between frames is orderly; inside one, the peer broke off. */
                FUZZ_CHECK(st.reason == (want->end ? want->end : want->rest ? -ECONNRESET : 0));
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct decoded want;

        decode_all(data, size, &want);
        check_sync(data, size, &want);
        check_conn(data, size, &want);
        return 0;
}
