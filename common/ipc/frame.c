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
 *   4. The payload of a known type must not nest messages deeper than IPC_MAX_NESTING,
 *      else -EBADMSG: the receiver's unpack of it would recurse that deep (a plan is a
 *      tree of Relations and Exprs).  Checked on the wire format alone, iteratively;
 *      whether the payload decodes at all is left to the receiver's unpack.
 * The encoder refuses what the decoder would reject (-EINVAL for type <= 0) and bodies
 * above max_frame (-EMSGSIZE).
 */
#include "ipc.h"
#include "ipc-internal.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const ProtobufCMessageDescriptor *ipc_payload_descriptor(int type)
{
        switch (type) {
        case COORD__MSG_TYPE__MSG_HELLO:              return &coord__hello__descriptor;
        case COORD__MSG_TYPE__MSG_STATUS_REQUEST:     return &coord__status_request__descriptor;
        case COORD__MSG_TYPE__MSG_STATUS_REPLY:       return &coord__status_reply__descriptor;
        case COORD__MSG_TYPE__MSG_ERROR:              return &coord__error__descriptor;
        case COORD__MSG_TYPE__MSG_ENSURE_COLLECTIONS: return &coord__ensure_collections__descriptor;
        case COORD__MSG_TYPE__MSG_DROP_COLLECTIONS:   return &coord__drop_collections__descriptor;
        case COORD__MSG_TYPE__MSG_APPEND:             return &coord__append__descriptor;
        case COORD__MSG_TYPE__MSG_PEEK:               return &coord__peek_request__descriptor;
        case COORD__MSG_TYPE__MSG_PEEK_RESULT:        return &coord__peek_result__descriptor;
        case COORD__MSG_TYPE__MSG_OK:                 return &coord__ok__descriptor;
        case COORD__MSG_TYPE__MSG_LIST_COLLECTIONS:   return &coord__list_collections__descriptor;
        case COORD__MSG_TYPE__MSG_COLLECTION_LIST:    return &coord__collection_list__descriptor;
        case COORD__MSG_TYPE__MSG_CREATE_DATAFLOWS:   return &coord__create_dataflows__descriptor;
        case COORD__MSG_TYPE__MSG_PUBLISH_PROTECTION: return &coord__publish_protection__descriptor;
        case COORD__MSG_TYPE__MSG_ALLOW_COMPACTION:   return &coord__allow_compaction__descriptor;
        case COORD__MSG_TYPE__MSG_CHECK_CATALOG:      return &coord__check_catalog__descriptor;
        case COORD__MSG_TYPE__MSG_CHECK_RESULT:       return &coord__check_result__descriptor;
        case COORD__MSG_TYPE__MSG_PEEK_NEXT:          return &coord__peek_next__descriptor;
        case COORD__MSG_TYPE__MSG_LEASE_CLAIM:        return &coord__lease_claim__descriptor;
        case COORD__MSG_TYPE__MSG_LEASE_RENEW:        return &coord__lease_renew__descriptor;
        case COORD__MSG_TYPE__MSG_LEASE_COMMIT:       return &coord__lease_commit__descriptor;
        case COORD__MSG_TYPE__MSG_LEASE_RELEASE:      return &coord__lease_release__descriptor;
        case COORD__MSG_TYPE__MSG_LEASE_REPLY:        return &coord__lease_reply__descriptor;
        default:                                      return NULL;
        }
}

/* A varint at p[*at, end) into *ret; false when it does not end in time. */
static bool varint_get(const uint8_t *p, size_t end, size_t *at, uint64_t *ret)
{
        uint64_t v = 0;

        for (unsigned shift = 0; *at < end && shift < 64; shift += 7) {
                uint8_t b = p[(*at)++];

                v |= (uint64_t)(b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        *ret = v;
                        return true;
                }
        }
        return false;
}

/* Rule 4: 1 when the encoding p[0, len) of a message of type d nests messages at most
 * max levels deep (d is level 1), 0 when deeper, -ENOMEM.  A malformed encoding is 1:
 * the receiver's unpack refuses it.  Iterative: a level costs one entry of `stack`. */
static int nesting_ok(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t len,
                      unsigned max)
{
        struct level {
                const ProtobufCMessageDescriptor *d;
                size_t end, resume;             /* the parent's end, where it goes on */
        };
        _cleanup_free_ struct level *heap = NULL;
        struct level small[32], *stack = small;
        size_t at = 0, end = len, cap = ELEMENTSOF(small);
        unsigned depth = 0;                     /* levels open above the current one */

        for (;;) {
                const ProtobufCFieldDescriptor *f;
                uint64_t tag, n;

                if (at == end) {
                        if (depth == 0)
                                return 1;
                        depth--;
                        d = stack[depth].d;
                        at = stack[depth].resume;
                        end = stack[depth].end;
                        continue;
                }
                if (!varint_get(p, end, &at, &tag))
                        return 1;
                switch (tag & 7) {
                case 0:
                        if (!varint_get(p, end, &at, &n))
                                return 1;
                        break;
                case 1:
                        if (end - at < 8)
                                return 1;
                        at += 8;
                        break;
                case 5:
                        if (end - at < 4)
                                return 1;
                        at += 4;
                        break;
                case 2:
                        if (!varint_get(p, end, &at, &n) || n > end - at)
                                return 1;
                        f = tag >> 3 <= UINT32_MAX
                                ? protobuf_c_message_descriptor_get_field(d, (unsigned)(tag >> 3))
                                : NULL;
                        if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE) {
                                at += n;
                                break;
                        }
                        if (depth + 2 > max)
                                return 0;
                        if (depth == cap) {
                                struct level *h;

                                cap = max;
                                h = malloc(cap * sizeof(*h));
                                if (!h)
                                        return -ENOMEM;
                                memcpy(h, stack, depth * sizeof(*h));
                                free(heap);
                                stack = heap = h;
                        }
                        stack[depth++] = (struct level){ d, end, at + n };
                        d = f->descriptor;
                        end = at + n;
                        break;
                default:
                        return 1;       /* groups and reserved wire types: unpack refuses */
                }
        }
}

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
        const ProtobufCMessageDescriptor *d;
        Coord__Envelope *env;
        int r;

        /* protobuf-c never reads outside [body, body + n); with n == 0 body may be any
         * pointer, it is not dereferenced. */
        env = coord__envelope__unpack(NULL, n, body);
        if (!env)
                return -EBADMSG;
        if ((int)env->type <= (int)COORD__MSG_TYPE__MSG_INVALID) {
                coord__envelope__free_unpacked(env, NULL);
                return -EBADMSG;
        }
        d = ipc_payload_descriptor((int)env->type);
        if (d) {
                r = nesting_ok(d, env->payload.data, env->payload.len, IPC_MAX_NESTING);
                if (r <= 0) {
                        coord__envelope__free_unpacked(env, NULL);
                        return r < 0 ? r : -EBADMSG;
                }
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
