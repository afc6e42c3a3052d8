/* test-frame.c -- the frame codec of common/ipc (ipc_frame_encode/decode): pure functions.
 *
 * Round trips, every truncation of a multi-frame stream, the length-prefix limit, the
 * type rule (0 and negative types are -EBADMSG), and a seeded fuzz of random and mutated
 * input that must never crash and only ever yield a valid frame, 0, -EBADMSG or
 * -EMSGSIZE.  Run under ASan/valgrind to make "never crashes" mean "never reads out of
 * bounds".
 */
#include "ipc/ipc.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "util.h"

/* xorshift64*: a seeded PRNG, so a failure reproduces. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * 0x2545f4914f6cdd1dull;
}

struct sample {
        Coord__MsgType type;
        Coord__Role sender;
        uint64_t incarnation, request_id;
        size_t payload_len;
};

static const struct sample samples[] = {
        { COORD__MSG_TYPE__MSG_HELLO, COORD__ROLE__ROLE_ADAPTER, 1, 0, 0 },
        { COORD__MSG_TYPE__MSG_PING, COORD__ROLE__ROLE_LIFECYCLE, UINT64_MAX, 42, 64 },
        { COORD__MSG_TYPE__MSG_PONG, COORD__ROLE__ROLE_CONTROLLER, 7, UINT64_MAX, 1 },
        { COORD__MSG_TYPE__MSG_ERROR, COORD__ROLE__ROLE_CTL, 0, 1, 3000 },
        { COORD__MSG_TYPE__MSG_STATUS_REPLY, COORD__ROLE__ROLE_UNKNOWN, 3, 3, 300 },
};

static void fill_env(const struct sample *s, uint8_t *payload, Coord__Envelope *env)
{
        *env = (Coord__Envelope)COORD__ENVELOPE__INIT;
        env->type = s->type;
        env->sender = s->sender;
        env->incarnation = s->incarnation;
        env->request_id = s->request_id;
        for (size_t i = 0; i < s->payload_len; i++)
                payload[i] = (uint8_t)(i * 31 + s->request_id);
        env->payload.data = s->payload_len ? payload : NULL;
        env->payload.len = s->payload_len;
}

static void check_env(const struct sample *s, const Coord__Envelope *env)
{
        CU_ASSERT_EQUAL(env->type, s->type);
        CU_ASSERT_EQUAL(env->sender, s->sender);
        CU_ASSERT_EQUAL(env->incarnation, s->incarnation);
        CU_ASSERT_EQUAL(env->request_id, s->request_id);
        CU_ASSERT_EQUAL_FATAL(env->payload.len, s->payload_len);
        for (size_t i = 0; i < s->payload_len; i++)
                if (env->payload.data[i] != (uint8_t)(i * 31 + s->request_id)) {
                        CU_FAIL("payload differs");
                        break;
                }
}

/* All samples as one stream; ends[i] is the offset just past frame i. */
static uint8_t *make_stream(size_t *ret_len, size_t ends[ELEMENTSOF(samples)])
{
        uint8_t *stream = NULL;
        size_t len = 0;

        for (size_t i = 0; i < ELEMENTSOF(samples); i++) {
                uint8_t payload[4096], *frame;
                Coord__Envelope env;
                size_t n;

                fill_env(&samples[i], payload, &env);
                CU_ASSERT_EQUAL_FATAL(ipc_frame_encode(&env, 0, &frame, &n), 0);
                CU_ASSERT_EQUAL(le32_get(frame), n - 4);
                stream = realloc(stream, len + n);
                CU_ASSERT_PTR_NOT_NULL_FATAL(stream);
                memcpy(stream + len, frame, n);
                free(frame);
                len += n;
                ends[i] = len;
        }
        *ret_len = len;
        return stream;
}

static void test_round_trip(void)
{
        size_t len, ends[ELEMENTSOF(samples)], off = 0;
        uint8_t *stream = make_stream(&len, ends);

        for (size_t i = 0; i < ELEMENTSOF(samples); i++) {
                Coord__Envelope *env = NULL;
                ssize_t n = ipc_frame_decode(stream + off, len - off, 0, &env);

                CU_ASSERT_EQUAL_FATAL(n, (ssize_t)(ends[i] - off));
                CU_ASSERT_PTR_NOT_NULL_FATAL(env);
                check_env(&samples[i], env);
                coord__envelope__free_unpacked(env, NULL);
                off += (size_t)n;
        }
        CU_ASSERT_EQUAL(off, len);
        free(stream);
}

/* Every prefix of the stream decodes exactly the frames it contains whole, then 0. */
static void test_truncations(void)
{
        size_t len, ends[ELEMENTSOF(samples)];
        uint8_t *stream = make_stream(&len, ends);

        for (size_t cut = 0; cut <= len; cut++) {
                /* A copy of exactly `cut` bytes, so ASan sees any read past the end. */
                uint8_t *buf = malloc(cut ? cut : 1);
                size_t off = 0, frames = 0, expect = 0;
                ssize_t n;

                CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
                memcpy(buf, stream, cut);
                while (expect < ELEMENTSOF(samples) && ends[expect] <= cut)
                        expect++;
                for (;;) {
                        Coord__Envelope *env = NULL;

                        n = ipc_frame_decode(buf + off, cut - off, 0, &env);
                        if (n <= 0)
                                break;
                        check_env(&samples[frames], env);
                        coord__envelope__free_unpacked(env, NULL);
                        off += (size_t)n;
                        frames++;
                }
                CU_ASSERT_EQUAL(n, 0);
                CU_ASSERT_EQUAL(frames, expect);
                free(buf);
        }
        free(stream);
}

static void test_oversized(void)
{
        Coord__Envelope *env = NULL, e = COORD__ENVELOPE__INIT;
        uint8_t buf[8] = { 0 }, payload[200] = { 0 }, *frame;
        uint32_t body;
        size_t n;

        /* Rejected from the prefix alone: no body needed. */
        le32_put(buf, 65);
        CU_ASSERT_EQUAL(ipc_frame_decode(buf, 4, 64, &env), -EMSGSIZE);
        CU_ASSERT_PTR_NULL(env);
        le32_put(buf, UINT32_MAX);
        CU_ASSERT_EQUAL(ipc_frame_decode(buf, 4, 0, &env), -EMSGSIZE);
        le32_put(buf, IPC_MAX_FRAME_DEFAULT + 1);
        CU_ASSERT_EQUAL(ipc_frame_decode(buf, sizeof(buf), 0, &env), -EMSGSIZE);
        /* At the limit it is merely incomplete. */
        le32_put(buf, 64);
        CU_ASSERT_EQUAL(ipc_frame_decode(buf, sizeof(buf), 64, &env), 0);
        /* Three bytes of prefix: need more. */
        CU_ASSERT_EQUAL(ipc_frame_decode(buf, 3, 64, &env), 0);
        CU_ASSERT_EQUAL(ipc_frame_decode(buf, 0, 64, &env), 0);

        /* The encoder enforces the same limit, exactly. */
        e.type = COORD__MSG_TYPE__MSG_PING;
        e.payload.data = payload;
        e.payload.len = sizeof(payload);
        body = (uint32_t)coord__envelope__get_packed_size(&e);
        CU_ASSERT_EQUAL(ipc_frame_encode(&e, body - 1, &frame, &n), -EMSGSIZE);
        CU_ASSERT_EQUAL_FATAL(ipc_frame_encode(&e, body, &frame, &n), 0);
        CU_ASSERT_EQUAL(n, body + 4);
        CU_ASSERT_EQUAL(ipc_frame_decode(frame, n, body, &env), (ssize_t)n);
        CU_ASSERT_PTR_NOT_NULL(env);
        coord__envelope__free_unpacked(env, NULL);
        env = NULL;
        CU_ASSERT_EQUAL(ipc_frame_decode(frame, n, body - 1, &env), -EMSGSIZE);
        CU_ASSERT_PTR_NULL(env);
        free(frame);
}

static void test_type_rule(void)
{
        Coord__Envelope *env = NULL, e = COORD__ENVELOPE__INIT;
        uint8_t buf[64], *frame;
        size_t n;

        /* A zero-length frame decodes as an all-defaults Envelope: type 0, rejected. */
        le32_put(buf, 0);
        CU_ASSERT_EQUAL(ipc_frame_decode(buf, 4, 0, &env), -EBADMSG);

        /* Type 0 with other fields set, encoded by hand (the encoder refuses it). */
        e.sender = COORD__ROLE__ROLE_ADAPTER;
        e.request_id = 9;
        CU_ASSERT_EQUAL(ipc_frame_encode(&e, 0, &frame, &n), -EINVAL);
        n = coord__envelope__pack(&e, buf + 4);
        le32_put(buf, (uint32_t)n);
        CU_ASSERT_EQUAL(ipc_frame_decode(buf, n + 4, 0, &env), -EBADMSG);

        /* A negative type (a 10-byte varint) is no type either. */
        e.type = (Coord__MsgType)-1;
        n = coord__envelope__pack(&e, buf + 4);
        le32_put(buf, (uint32_t)n);
        CU_ASSERT_EQUAL(ipc_frame_decode(buf, n + 4, 0, &env), -EBADMSG);

        /* An unknown positive type passes (forward compatibility, see frame.c). */
        e.type = (Coord__MsgType)1000;
        CU_ASSERT_EQUAL_FATAL(ipc_frame_encode(&e, 0, &frame, &n), 0);
        CU_ASSERT_EQUAL(ipc_frame_decode(frame, n, 0, &env), (ssize_t)n);
        CU_ASSERT_PTR_NOT_NULL_FATAL(env);
        CU_ASSERT_EQUAL((int)env->type, 1000);
        coord__envelope__free_unpacked(env, NULL);
        free(frame);

        /* Not an Envelope at all: a field with an invalid wire type (7). */
        buf[4] = 0x0f;
        le32_put(buf, 1);
        CU_ASSERT_EQUAL(ipc_frame_decode(buf, 5, 0, &env), -EBADMSG);
        /* A length-delimited field running past the body. */
        buf[4] = 0x2a;
        buf[5] = 0x7f;
        le32_put(buf, 2);
        CU_ASSERT_EQUAL(ipc_frame_decode(buf, 6, 0, &env), -EBADMSG);
}

/* A CreateDataflows whose plan is k Filters deep, framed: 3 + 2k levels of messages
 * (CreateDataflows, DataflowSpec, then Relation and Filter by turns). */
static void nested_frame(size_t k, uint8_t **ret, size_t *ret_len)
{
        Coord__Plan__Relation *rel = calloc(k + 1, sizeof(*rel));
        Coord__Plan__Filter *fil = calloc(k, sizeof(*fil));
        Coord__DataflowSpec spec = COORD__DATAFLOW_SPEC__INIT, *specs[1] = { &spec };
        Coord__CreateDataflows cd = COORD__CREATE_DATAFLOWS__INIT;
        Coord__Envelope e = COORD__ENVELOPE__INIT;

        CU_ASSERT_PTR_NOT_NULL_FATAL(rel);
        CU_ASSERT_PTR_NOT_NULL_FATAL(fil);
        for (size_t i = 0; i <= k; i++) {
                coord__plan__relation__init(&rel[i]);
                if (i < k) {
                        coord__plan__filter__init(&fil[i]);
                        fil[i].input = &rel[i + 1];
                        rel[i].kind_case = COORD__PLAN__RELATION__KIND_FILTER;
                        rel[i].filter = &fil[i];
                }
        }
        spec.gid = 1001;
        spec.plan = &rel[0];
        cd.n_dataflows = 1;
        cd.dataflows = specs;
        e.type = COORD__MSG_TYPE__MSG_CREATE_DATAFLOWS;
        e.payload.len = coord__create_dataflows__get_packed_size(&cd);
        e.payload.data = malloc(e.payload.len);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e.payload.data);
        coord__create_dataflows__pack(&cd, e.payload.data);
        CU_ASSERT_EQUAL_FATAL(ipc_frame_encode(&e, 0, ret, ret_len), 0);
        free(e.payload.data);
        free(fil);
        free(rel);
}

/* Rule 4: a payload nesting deeper than IPC_MAX_NESTING is refused before anybody
 * unpacks it (7,000 plan levels in 50 KiB overflowed protobuf-c's recursion). */
static void test_nesting_rule(void)
{
        size_t k = (IPC_MAX_NESTING - 3) / 2, n;
        Coord__Envelope *env = NULL;
        uint8_t *frame;

        nested_frame(k, &frame, &n);
        CU_ASSERT_EQUAL(ipc_frame_decode(frame, n, 0, &env), (ssize_t)n);
        CU_ASSERT_PTR_NOT_NULL(env);
        if (env)
                coord__envelope__free_unpacked(env, NULL);
        env = NULL;
        free(frame);

        nested_frame(k + 1, &frame, &n);
        CU_ASSERT_EQUAL(ipc_frame_decode(frame, n, 0, &env), -EBADMSG);
        CU_ASSERT_PTR_NULL(env);
        free(frame);
}

/* Check one decode result against the codec's contract. */
static void check_decode(const uint8_t *buf, size_t len, uint32_t max_frame)
{
        Coord__Envelope *env = NULL;
        ssize_t n = ipc_frame_decode(buf, len, max_frame, &env);

        if (n > 0) {
                CU_ASSERT((size_t)n <= len);
                CU_ASSERT((size_t)n == 4 + le32_get(buf));
                CU_ASSERT_PTR_NOT_NULL_FATAL(env);
                CU_ASSERT((int)env->type > 0);
                coord__envelope__free_unpacked(env, NULL);
        } else {
                CU_ASSERT(n == 0 || n == -EBADMSG || n == -EMSGSIZE);
                CU_ASSERT_PTR_NULL(env);
        }
}

static void test_fuzz_random(void)
{
        rng_state = 0x1234567ull;
        for (int iter = 0; iter < 20000; iter++) {
                size_t len = (size_t)(rng() % 600);
                uint8_t *buf = malloc(len ? len : 1);

                CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
                for (size_t i = 0; i < len; i++)
                        buf[i] = (uint8_t)rng();
                /* Half the time a plausible prefix, so protobuf-c sees the bytes. */
                if (len >= 4 && (iter & 1))
                        le32_put(buf, (uint32_t)(rng() % (len - 3)));
                check_decode(buf, len, (iter & 2) ? 0 : 256);
                free(buf);
        }
}

/* Valid frames with a few bytes flipped, inserted or cut: deeper into the decoder. */
static void test_fuzz_mutate(void)
{
        size_t len, ends[ELEMENTSOF(samples)];
        uint8_t *stream = make_stream(&len, ends);

        rng_state = 0xdeadbeefull;
        for (int iter = 0; iter < 20000; iter++) {
                size_t i = (size_t)(rng() % ELEMENTSOF(samples));
                size_t start = i ? ends[i - 1] : 0, flen = ends[i] - start;
                uint8_t *buf = malloc(flen);
                int flips = 1 + (int)(rng() % 4);

                CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
                memcpy(buf, stream + start, flen);
                for (int k = 0; k < flips; k++) {
                        /* Mostly the body; the prefix now and then. */
                        size_t at = 4 + (size_t)(rng() % (flen - 4));
                        if (rng() % 8 == 0)
                                at = (size_t)(rng() % 4);
                        buf[at] ^= (uint8_t)(1u << (rng() % 8));
                }
                check_decode(buf, flen, 0);
                /* And a cut at a random point. */
                check_decode(buf, (size_t)(rng() % flen), 0);
                free(buf);
        }
        free(stream);
}

static const struct t_case codec_cases[] = {
        { "round trip of several envelopes", test_round_trip },
        { "every truncation needs more", test_truncations },
        { "oversized prefix", test_oversized },
        { "type rule and undecodable bodies", test_type_rule },
        { "nesting rule", test_nesting_rule },
        { NULL, NULL },
};

static const struct t_case fuzz_cases[] = {
        { "random garbage", test_fuzz_random },
        { "mutated frames", test_fuzz_mutate },
        { NULL, NULL },
};

static const struct t_suite suites[] = {
        { "frame codec", codec_cases },
        { "frame fuzz", fuzz_cases },
        { NULL, NULL },
};

int main(void)
{
        return t_run(suites);
}
