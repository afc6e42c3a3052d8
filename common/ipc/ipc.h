/* ipc.h -- framed protobuf messages over Unix stream sockets, on the io_uring loop.
 *
 * Frame: u32 little-endian length N, then N bytes of one encoded coord.Envelope.
 * N is at most the connection's max_frame (configurable, default IPC_MAX_FRAME_DEFAULT).
 * A frame that is oversized (-EMSGSIZE) or does not decode (-EBADMSG) closes that one
 * connection: on_close() receives the reason, and the owner logs one line.  Every
 * other connection is untouched.
 *
 * Sockets: created in the run directory with mode 0600; every accepted peer must have
 * the same uid as the server (SO_PEERCRED), else it is closed with -EPERM.
 *
 * Ownership: an ipc_conn belongs to the ipc layer; it stays valid until on_close()
 * returns, after which it is freed.  The Envelope passed to on_frame() is borrowed:
 * valid only during the call.
 *
 * Library code: nothing here logs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "coord.pb-c.h"

#define IPC_MAX_FRAME_DEFAULT (16u << 20)
#define IPC_MAX_FRAME_MIN     64u

struct loop;
struct ipc_conn;        /* opaque */
struct ipc_server;      /* opaque */

struct ipc_conn_ops {
        /* A complete, decoded frame.  env is valid only during the call. */
        void (*on_frame)(struct ipc_conn *c, const Coord__Envelope *env, void *userdata);
        /* The connection is gone: reason 0 = orderly EOF or ipc_conn_close(),
         * -EMSGSIZE oversized frame, -EBADMSG undecodable frame, -EPERM wrong uid,
         * other -errno from recv/send.  The conn is freed after this returns. */
        void (*on_close)(struct ipc_conn *c, int reason, void *userdata);
};

/* --- Frame codec: pure functions, used by the loop and by tests. --- */

/* Deepest nesting of messages in a payload (frame.c rule 4): protobuf-c's unpack
 * recurses once per level, about 1 KiB of stack each, so a 50 KiB payload of 7,000
 * nested plans overflowed a daemon's 8 MiB stack. */
#define IPC_MAX_NESTING 4096u

/* The message the payload of an Envelope of this type holds (proto/coord.proto), or
 * NULL: no payload, raw bytes (PING, PONG) or a type this build does not know. */
const ProtobufCMessageDescriptor *ipc_payload_descriptor(int type);

/* Decode the first frame in buf.  Returns the bytes consumed (> 0) with *ret set,
 * 0 when buf holds no complete frame yet (*ret untouched), -EMSGSIZE when the length
 * prefix exceeds max_frame, -EBADMSG when the payload is not an Envelope or nests its
 * messages deeper than IPC_MAX_NESTING, -ENOMEM.
 * Free *ret with coord__envelope__free_unpacked(*ret, NULL). */
ssize_t ipc_frame_decode(const uint8_t *buf, size_t len, uint32_t max_frame,
                         Coord__Envelope **ret);

/* Encode env as one frame into a malloc'ed buffer.  -EMSGSIZE above max_frame. */
int ipc_frame_encode(const Coord__Envelope *env, uint32_t max_frame, uint8_t **ret_buf,
                     size_t *ret_len);

/* --- Asynchronous connections on a loop. --- */

/* A Unix socket address for path: -EINVAL when empty, -ENAMETOOLONG when too long. */
int ipc_sockaddr_fill(const char *path, struct sockaddr_un *sa, socklen_t *ret_len);

/* Make path free for bind(): remove a stale socket (one nobody listens on: connect()
 * refused), refuse to touch anything else (-EEXIST for a non-socket, -EADDRINUSE for
 * a live one).  Also the pgwire server's (adapter-pgwire-listen.c). */
int ipc_unlink_stale(const char *path, const struct sockaddr_un *sa, socklen_t salen);

/* Listen on path (a stale socket file is replaced), mode 0600.  on_accept runs for each
 * accepted connection that passed the uid check; it must call ipc_conn_set_ops(). */
int ipc_listen(struct loop *l, const char *path, uint32_t max_frame,
               void (*on_accept)(struct ipc_server *s, struct ipc_conn *c, void *userdata),
               void *userdata, struct ipc_server **ret);
struct ipc_server *ipc_server_free(struct ipc_server *s);  /* closes, unlinks the path */
/* Called when s is destroyed: within ipc_server_free(), or later from the loop when an
 * armed accept's completion had to come first.  A caller about to free the loop runs
 * it until then (loop_free() runs no completion, and s would be lost). */
void ipc_server_on_destroyed(struct ipc_server *s, void (*fn)(void *arg), void *arg);
/* Connections rejected at accept (uid mismatch) since start. */
uint64_t ipc_server_rejected(const struct ipc_server *s);

/* Connect to path (fails at once with -ENOENT / -ECONNREFUSED when nobody listens). */
int ipc_connect(struct loop *l, const char *path, uint32_t max_frame,
                const struct ipc_conn_ops *ops, void *userdata, struct ipc_conn **ret);

void ipc_conn_set_ops(struct ipc_conn *c, const struct ipc_conn_ops *ops, void *userdata);
void *ipc_conn_userdata(const struct ipc_conn *c);
pid_t ipc_conn_peer_pid(const struct ipc_conn *c);

/* Queue one frame; sends are pipelined and written in order.  -EMSGSIZE when the frame
 * is too big, -ENOBUFS when more than the send-queue limit is pending (a peer that does
 * not read), -EPIPE after close. */
int ipc_conn_send(struct ipc_conn *c, const Coord__Envelope *env);
/* Bytes queued and not yet written (what ipc_conn_send() measures against its limit):
 * a sender of many frames waits for it to fall before queueing more. */
size_t ipc_conn_pending(const struct ipc_conn *c);
/* Pack payload (may be NULL) into env (its other fields set by the caller) and send. */
int ipc_conn_send_payload(struct ipc_conn *c, Coord__Envelope *env, const ProtobufCMessage *payload);
/* Convenience: wrap payload (may be NULL) in an Envelope and send it. */
int ipc_conn_send_msg(struct ipc_conn *c, Coord__MsgType type, Coord__Role sender,
                      uint64_t incarnation, uint64_t request_id, const ProtobufCMessage *payload);

/* Close now; on_close(c, 0) follows from the loop, not from inside this call. */
void ipc_conn_close(struct ipc_conn *c);

/* --- Blocking client, for coordctl, tests and benchmarks (no loop). --- */

/* Connect (fd is O_CLOEXEC, blocking).  Returns the fd or -errno. */
int ipc_sync_connect(const char *path);
/* Send one envelope as a frame.  0 or -errno. */
int ipc_sync_send(int fd, const Coord__Envelope *env, uint32_t max_frame);
/* Receive one frame, waiting at most timeout_ms (-1 = forever): 0 with *ret set,
 * -ETIMEDOUT, -ECONNRESET on EOF, -EMSGSIZE / -EBADMSG on a bad frame. */
int ipc_sync_recv(int fd, uint32_t max_frame, int timeout_ms, Coord__Envelope **ret);
