/* ipc-internal.h -- shared by frame.c and ipc.c; not part of the ipc.h contract.
 *
 * The codec in two halves, so a connection can encode straight into its send buffer
 * (no intermediate malloc and copy per frame) and the blocking client can decode a body
 * it read separately from its length prefix.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "coord.pb-c.h"

#define IPC_FRAME_HEADER 4u

/* max_frame 0 means IPC_MAX_FRAME_DEFAULT. */
uint32_t ipc_max_frame_resolve(uint32_t max_frame);

/* The whole frame size (prefix included) of env, or -EINVAL for an envelope no receiver
 * accepts (type <= MSG_INVALID), -EMSGSIZE when the body exceeds max_frame. */
ssize_t ipc_frame_size(const Coord__Envelope *env, uint32_t max_frame);

/* Write the frame of env into out, which holds exactly `size` bytes (ipc_frame_size()). */
void ipc_frame_pack(const Coord__Envelope *env, size_t size, uint8_t *out);

/* Decode one body of n bytes (prefix already stripped): 0 with *ret set, or -EBADMSG. */
int ipc_frame_unpack(const uint8_t *body, size_t n, Coord__Envelope **ret);
