/* frame.c -- the frame codec of ipc.h: pure functions, no I/O, no state.
 *
 * Owner: common/ipc.  Callers: ipc.c (connections, blocking client) and tests.
 *
 * A frame is a u32 little-endian length N followed by N bytes of one encoded
 * coord.Envelope.  Rules, in the order the decoder applies them:
 *   1. Fewer than 4 bytes, or fewer than 4 + N: incomplete, return 0 (need more).
 *      Exception: N > max_frame is rejected with -EMSGSIZE as soon as the prefix is
 *      there, so a receiver never buffers (or waits for) an oversized body.
 *   2. The body must unpack as an Envelope, else -EBADMSG.  N = 0 is a valid encoding
 *      (every field at its proto3 default) and is then caught by rule 3.
 *   3. type must be > MSG_INVALID (0), else -EBADMSG: every real frame names its type,
 *      and an all-defaults Envelope is what garbage most often decodes to.  Positive
 *      types this build does not know are passed up on purpose: a newer peer during a
 *      rolling restart should get an application-level error reply, not a dropped
 *      connection.
 * The encoder refuses what the decoder would reject (-EINVAL for type <= 0) and bodies
 * above max_frame (-EMSGSIZE).
 */
#include "ipc.h"
#include "ipc-internal.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "util.h"

uint32_t ipc_max_frame_resolve(uint32_t max_frame)
{
        return max_frame ? max_frame : IPC_MAX_FRAME_DEFAULT;
}

ssize_t ipc_frame_size(const Coord__Envelope *env, uint32_t max_frame)
{
        size_t body;

        assert(env);
        if ((int)env->type <= (int)COORD__MSG_TYPE__MSG_INVALID)
                return -EINVAL;
        body = coord__envelope__get_packed_size(env);
        if (body > ipc_max_frame_resolve(max_frame))
                return -EMSGSIZE;
        return (ssize_t)(IPC_FRAME_HEADER + body);
}

void ipc_frame_pack(const Coord__Envelope *env, size_t size, uint8_t *out)
{
        size_t body;

        assert(size >= IPC_FRAME_HEADER && size - IPC_FRAME_HEADER <= UINT32_MAX);
        le32_put(out, (uint32_t)(size - IPC_FRAME_HEADER));
        body = coord__envelope__pack(env, out + IPC_FRAME_HEADER);
        assert(body == size - IPC_FRAME_HEADER);
        (void)body;
}

int ipc_frame_unpack(const uint8_t *body, size_t n, Coord__Envelope **ret)
{
        Coord__Envelope *env;

        /* protobuf-c never reads outside [body, body + n); with n == 0 body may be any
         * pointer, it is not dereferenced. */
        env = coord__envelope__unpack(NULL, n, body);
        if (!env)
                return -EBADMSG;
        if ((int)env->type <= (int)COORD__MSG_TYPE__MSG_INVALID) {
                coord__envelope__free_unpacked(env, NULL);
                return -EBADMSG;
        }
        *ret = env;
        return 0;
}

ssize_t ipc_frame_decode(const uint8_t *buf, size_t len, uint32_t max_frame,
                         Coord__Envelope **ret)
{
        uint32_t n;
        int r;

        assert(buf || len == 0);
        assert(ret);

        if (len < IPC_FRAME_HEADER)
                return 0;
        n = le32_get(buf);
        if (n > ipc_max_frame_resolve(max_frame))
                return -EMSGSIZE;
        if (len - IPC_FRAME_HEADER < n)
                return 0;
        r = ipc_frame_unpack(buf + IPC_FRAME_HEADER, n, ret);
        if (r < 0)
                return r;
        return (ssize_t)(IPC_FRAME_HEADER + n);
}

int ipc_frame_encode(const Coord__Envelope *env, uint32_t max_frame, uint8_t **ret_buf,
                     size_t *ret_len)
{
        ssize_t size;
        uint8_t *buf;

        assert(ret_buf);
        assert(ret_len);

        size = ipc_frame_size(env, max_frame);
        if (size < 0)
                return (int)size;
        buf = malloc((size_t)size);
        if (!buf)
                return -ENOMEM;
        ipc_frame_pack(env, (size_t)size, buf);
        *ret_buf = buf;
        *ret_len = (size_t)size;
        return 0;
}
