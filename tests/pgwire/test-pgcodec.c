/* test-pgcodec.c -- the PostgreSQL wire protocol codec (adapter/adapter-pgcodec.h).
 *
 * Round trips of every frontend message the server parses and every backend message it
 * builds (backend ones decoded here by a small independent reader), the framing limits,
 * every truncation of every message, garbage, and a seeded fuzz of framing, body
 * parsers and value conversions that must never crash (run it under ASan: CI does).
 */
#include "adapter-pgcodec.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "t.h"
#include "util.h"

/* --- Helpers: frontend messages, built with the codec's primitives --------------- */

static struct pgcodec_buf B;

static void t_reset(void)
{
        pgcodec_buf_done(&B);
        pgcodec_buf_init(&B, 0);
}

static void t_startup(struct pgcodec_buf *b, uint32_t code, const char *const *kv)
{
        size_t m = pgcodec_msg_begin(b, 0);

        pgcodec_put_i32(b, (int32_t)code);
        for (; kv && *kv; kv += 2) {
                pgcodec_put_str(b, kv[0]);
                pgcodec_put_str(b, kv[1]);
        }
        pgcodec_put_u8(b, 0);
        pgcodec_msg_end(b, m);
}

static void t_query(struct pgcodec_buf *b, const char *sql)
{
        size_t m = pgcodec_msg_begin(b, 'Q');

        pgcodec_put_str(b, sql);
        pgcodec_msg_end(b, m);
}

static void t_parse(struct pgcodec_buf *b, const char *name, const char *sql, unsigned n,
                    const uint32_t *types)
{
        size_t m = pgcodec_msg_begin(b, 'P');

        pgcodec_put_str(b, name);
        pgcodec_put_str(b, sql);
        pgcodec_put_i16(b, (int16_t)n);
        for (unsigned i = 0; i < n; i++)
                pgcodec_put_i32(b, (int32_t)types[i]);
        pgcodec_msg_end(b, m);
}

static void t_bind(struct pgcodec_buf *b, const char *portal, const char *stmt, unsigned nf,
                   const int16_t *fmts, unsigned np, const char *const *vals,
                   const int32_t *lens, unsigned nrf, const int16_t *rfmts)
{
        size_t m = pgcodec_msg_begin(b, 'B');

        pgcodec_put_str(b, portal);
        pgcodec_put_str(b, stmt);
        pgcodec_put_i16(b, (int16_t)nf);
        for (unsigned i = 0; i < nf; i++)
                pgcodec_put_i16(b, fmts[i]);
        pgcodec_put_i16(b, (int16_t)np);
        for (unsigned i = 0; i < np; i++) {
                pgcodec_put_i32(b, lens[i]);
                if (lens[i] > 0)
                        pgcodec_put_bytes(b, vals[i], (size_t)lens[i]);
        }
        pgcodec_put_i16(b, (int16_t)nrf);
        for (unsigned i = 0; i < nrf; i++)
                pgcodec_put_i16(b, rfmts[i]);
        pgcodec_msg_end(b, m);
}

static void t_target(struct pgcodec_buf *b, uint8_t type, char kind, const char *name)
{
        size_t m = pgcodec_msg_begin(b, type);

        pgcodec_put_u8(b, (uint8_t)kind);
        pgcodec_put_str(b, name);
        pgcodec_msg_end(b, m);
}

static void t_execute(struct pgcodec_buf *b, const char *portal, int32_t max_rows)
{
        size_t m = pgcodec_msg_begin(b, 'E');

        pgcodec_put_str(b, portal);
        pgcodec_put_i32(b, max_rows);
        pgcodec_msg_end(b, m);
}

static void t_empty(struct pgcodec_buf *b, uint8_t type)
{
        pgcodec_msg_end(b, pgcodec_msg_begin(b, type));
}

/* One whole frame from the front of B. */
static struct pgcodec_frame t_frame(bool startup)
{
        struct pgcodec_frame f;

        CU_ASSERT_EQUAL_FATAL(pgcodec_buf_error(&B), 0);
        CU_ASSERT_EQUAL_FATAL(pgcodec_frame_next(B.data, B.len, startup, 1u << 20, &f), 1);
        CU_ASSERT_EQUAL(f.size, B.len);
        return f;
}

/* --- Helpers: a small independent reader of backend messages ------------------------ */

struct t_msg {
        uint8_t type;
        const uint8_t *p;
        size_t len, pos;
};

static uint32_t be32(const uint8_t *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The backend message at *off in B; advances *off. */
static struct t_msg t_next(size_t *off)
{
        struct t_msg m = { 0 };
        uint32_t n;

        CU_ASSERT_FATAL(*off + 5 <= B.len);
        m.type = B.data[*off];
        n = be32(B.data + *off + 1);
        CU_ASSERT_FATAL(n >= 4 && *off + 1 + n <= B.len);
        m.p = B.data + *off + 5;
        m.len = n - 4;
        *off += 1 + n;
        return m;
}

static int32_t m_i32(struct t_msg *m)
{
        CU_ASSERT_FATAL(m->pos + 4 <= m->len);
        m->pos += 4;
        return (int32_t)be32(m->p + m->pos - 4);
}

static int16_t m_i16(struct t_msg *m)
{
        CU_ASSERT_FATAL(m->pos + 2 <= m->len);
        m->pos += 2;
        return (int16_t)(m->p[m->pos - 2] << 8 | m->p[m->pos - 1]);
}

static const char *m_str(struct t_msg *m)
{
        const char *s = (const char *)m->p + m->pos;
        const uint8_t *nul = memchr(m->p + m->pos, 0, m->len - m->pos);

        CU_ASSERT_PTR_NOT_NULL_FATAL(nul);
        m->pos = (size_t)(nul - m->p) + 1;
        return s;
}

static bool m_done(const struct t_msg *m)
{
        return m->pos == m->len;
}

/* --- Output buffer ------------------------------------------------------------- */

static void test_buf_basics(void)
{
        struct pgcodec_buf b;
        size_t m;

        pgcodec_buf_init(&b, 0);
        pgcodec_put_u8(&b, 0xab);
        pgcodec_put_i16(&b, -2);
        pgcodec_put_i32(&b, 0x01020304);
        pgcodec_put_str(&b, "hi");
        CU_ASSERT_EQUAL(b.len, 1 + 2 + 4 + 3);
        CU_ASSERT_EQUAL(b.data[0], 0xab);
        CU_ASSERT_EQUAL(b.data[1], 0xff);
        CU_ASSERT_EQUAL(b.data[2], 0xfe);
        CU_ASSERT_EQUAL(be32(b.data + 3), 0x01020304u);
        CU_ASSERT_STRING_EQUAL((const char *)b.data + 7, "hi");

        pgcodec_buf_reset(&b);
        m = pgcodec_msg_begin(&b, 'X');
        pgcodec_put_bytes(&b, "abc", 3);
        pgcodec_msg_end(&b, m);
        CU_ASSERT_EQUAL(b.len, 8);
        CU_ASSERT_EQUAL(be32(b.data + 1), 7u);       /* length counts itself, not the type */

        /* Untyped (startup) framing. */
        pgcodec_buf_reset(&b);
        m = pgcodec_msg_begin(&b, 0);
        pgcodec_msg_end(&b, m);
        CU_ASSERT_EQUAL(b.len, 4);
        CU_ASSERT_EQUAL(be32(b.data), 4u);

        pgcodec_buf_truncate(&b, 1);
        CU_ASSERT_EQUAL(b.len, 1);
        pgcodec_buf_done(&b);
        CU_ASSERT_PTR_NULL(b.data);
        pgcodec_buf_done(&b);   /* twice is fine */
}

static void test_buf_limit_sticky(void)
{
        struct pgcodec_buf b;
        char big[100];

        memset(big, 'x', sizeof(big));
        pgcodec_buf_init(&b, 64);
        pgcodec_put_bytes(&b, big, 60);
        CU_ASSERT_EQUAL(pgcodec_buf_error(&b), 0);
        pgcodec_put_bytes(&b, big, 10);
        CU_ASSERT_EQUAL(pgcodec_buf_error(&b), -ENOBUFS);
        CU_ASSERT_EQUAL(b.len, 60);
        /* Sticky: even a put that would fit now does nothing. */
        pgcodec_put_u8(&b, 1);
        CU_ASSERT_EQUAL(b.len, 60);
        CU_ASSERT_EQUAL(pgcodec_buf_reserve(&b, 1), -ENOBUFS);
        pgcodec_buf_reset(&b);
        CU_ASSERT_EQUAL(pgcodec_buf_error(&b), 0);
        pgcodec_put_u8(&b, 1);
        CU_ASSERT_EQUAL(b.len, 1);
        pgcodec_buf_done(&b);
}

/* --- Framing ------------------------------------------------------------------- */

static void test_frame_partial(void)
{
        struct pgcodec_frame f;

        t_reset();
        t_query(&B, "SELECT 1");
        /* Every strict prefix needs more; once the header is in, the size is known. */
        for (size_t n = 0; n < B.len; n++) {
                CU_ASSERT_EQUAL(pgcodec_frame_next(B.data, n, false, 1u << 20, &f), 0);
                CU_ASSERT_EQUAL(f.size, n >= 5 ? B.len : 0);
        }
        CU_ASSERT_EQUAL(pgcodec_frame_next(B.data, B.len, false, 1u << 20, &f), 1);
        CU_ASSERT_EQUAL(f.type, 'Q');
        CU_ASSERT_EQUAL(f.len, strlen("SELECT 1") + 1);
        CU_ASSERT_EQUAL(f.body, B.data + 5);

        /* Two messages back to back: the first only. */
        t_empty(&B, 'S');
        CU_ASSERT_EQUAL(pgcodec_frame_next(B.data, B.len, false, 1u << 20, &f), 1);
        CU_ASSERT_EQUAL(f.type, 'Q');
        CU_ASSERT_EQUAL(pgcodec_frame_next(B.data + f.size, B.len - f.size, false, 1u << 20, &f), 1);
        CU_ASSERT_EQUAL(f.type, 'S');
        CU_ASSERT_EQUAL(f.len, 0);
}

static void test_frame_garbage(void)
{
        static const uint8_t unknown[] = { 'Z', 0, 0, 0, 4 };
        static const uint8_t short_len[] = { 'Q', 0, 0, 0, 3 };
        static const uint8_t huge[] = { 'Q', 0x7f, 0xff, 0xff, 0xff };
        static const uint8_t negative[] = { 'Q', 0xff, 0xff, 0xff, 0xff };
        static const uint8_t big_sync[] = { 'S', 0, 0, 0x27, 0x15 };     /* 10005 */
        static const uint8_t ok_sync[] = { 'S', 0, 0, 0x27, 0x10 };      /* 10000 */
        struct pgcodec_frame f;

        /* A bad type byte is refused from that byte alone. */
        CU_ASSERT_EQUAL(pgcodec_frame_next(unknown, 1, false, 1u << 20, &f), -EPROTO);
        CU_ASSERT_EQUAL(pgcodec_frame_next((const uint8_t *)"\0", 1, false, 1u << 20, &f), -EPROTO);
        CU_ASSERT_EQUAL(pgcodec_frame_next(short_len, 5, false, 1u << 20, &f), -EBADMSG);
        /* An oversized length is refused from the header, before any body byte. */
        CU_ASSERT_EQUAL(pgcodec_frame_next(huge, 5, false, 1u << 20, &f), -EMSGSIZE);
        CU_ASSERT_EQUAL(pgcodec_frame_next(negative, 5, false, 1u << 20, &f), -EMSGSIZE);
        CU_ASSERT_EQUAL(pgcodec_frame_next(huge, 5, false, SIZE_MAX, &f), -EMSGSIZE);
        /* Small types have the small limit whatever max says. */
        CU_ASSERT_EQUAL(pgcodec_frame_next(big_sync, 5, false, 1u << 30, &f), -EMSGSIZE);
        CU_ASSERT_EQUAL(pgcodec_frame_next(ok_sync, 5, false, 1u << 30, &f), 0);
        CU_ASSERT_EQUAL(f.size, 10001);

        /* The configured max, exactly. */
        t_reset();
        t_query(&B, "SELECT 1");
        CU_ASSERT_EQUAL(pgcodec_frame_next(B.data, B.len, false, B.len - 1, &f), 1);
        CU_ASSERT_EQUAL(pgcodec_frame_next(B.data, B.len, false, B.len - 2, &f), -EMSGSIZE);
}

static void test_frame_startup(void)
{
        static const uint8_t too_short[] = { 0, 0, 0, 7, 0, 3, 0 };
        static const uint8_t too_long[] = { 0, 0, 0x27, 0x11 };          /* 10001 */
        static const uint8_t http[] = "GET / HTTP/1.1\r\n";
        struct pgcodec_frame f;

        CU_ASSERT_EQUAL(pgcodec_frame_next(too_short, sizeof(too_short), true, 1u << 20, &f), -EBADMSG);
        CU_ASSERT_EQUAL(pgcodec_frame_next(too_long, 4, true, 1u << 20, &f), -EMSGSIZE);
        /* Someone speaking HTTP to us: "GET " is a length of 1.2 GB. */
        CU_ASSERT_EQUAL(pgcodec_frame_next(http, 4, true, 1u << 20, &f), -EMSGSIZE);
        CU_ASSERT_EQUAL(pgcodec_frame_next(http, 3, true, 1u << 20, &f), 0);
}

/* --- Frontend bodies: round trips --------------------------------------------------- */

static void test_startup_roundtrip(void)
{
        static const char *const kv[] = {
                "user", "alice", "database", "db", "application_name", "psql",
                "options", "-c search_path=x", NULL,
        };
        struct pgcodec_startup s;
        struct pgcodec_frame f;

        t_reset();
        t_startup(&B, PGCODEC_PROTOCOL(3, 0), kv);
        f = t_frame(true);
        CU_ASSERT_EQUAL(f.type, 0);
        CU_ASSERT_EQUAL_FATAL(pgcodec_parse_startup(&f, &s), 0);
        CU_ASSERT_EQUAL(s.code, PGCODEC_PROTOCOL(3, 0));
        CU_ASSERT_EQUAL(s.nparams, 4);
        CU_ASSERT_STRING_EQUAL(pgcodec_startup_param(&s, "user"), "alice");
        CU_ASSERT_STRING_EQUAL(pgcodec_startup_param(&s, "database"), "db");
        CU_ASSERT_STRING_EQUAL(pgcodec_startup_param(&s, "options"), "-c search_path=x");
        CU_ASSERT_PTR_NULL(pgcodec_startup_param(&s, "nope"));

        /* Protocol 3.2 parses: negotiating is the server's business. */
        t_reset();
        t_startup(&B, PGCODEC_PROTOCOL(3, 2), kv);
        f = t_frame(true);
        CU_ASSERT_EQUAL(pgcodec_parse_startup(&f, &s), 0);
        CU_ASSERT_EQUAL(PGCODEC_PROTOCOL_MINOR(s.code), 2);

        /* Protocol 2.0: the code, nothing else interpreted. */
        t_reset();
        t_startup(&B, PGCODEC_PROTOCOL(2, 0), NULL);
        f = t_frame(true);
        CU_ASSERT_EQUAL(pgcodec_parse_startup(&f, &s), 0);
        CU_ASSERT_EQUAL(PGCODEC_PROTOCOL_MAJOR(s.code), 2);
        CU_ASSERT_EQUAL(s.nparams, 0);
}

static void test_startup_special(void)
{
        struct pgcodec_startup s;
        struct pgcodec_frame f;
        size_t m;

        t_reset();
        m = pgcodec_msg_begin(&B, 0);
        pgcodec_put_i32(&B, (int32_t)PGCODEC_SSL_REQUEST_CODE);
        pgcodec_msg_end(&B, m);
        f = t_frame(true);
        CU_ASSERT_EQUAL(pgcodec_parse_startup(&f, &s), 0);
        CU_ASSERT_EQUAL(s.code, PGCODEC_SSL_REQUEST_CODE);

        /* An SSLRequest with trailing bytes is malformed. */
        t_reset();
        m = pgcodec_msg_begin(&B, 0);
        pgcodec_put_i32(&B, (int32_t)PGCODEC_GSSENC_REQUEST_CODE);
        pgcodec_put_u8(&B, 0);
        pgcodec_msg_end(&B, m);
        f = t_frame(true);
        CU_ASSERT_EQUAL(pgcodec_parse_startup(&f, &s), -EBADMSG);

        t_reset();
        m = pgcodec_msg_begin(&B, 0);
        pgcodec_put_i32(&B, (int32_t)PGCODEC_CANCEL_REQUEST_CODE);
        pgcodec_put_i32(&B, 4242);
        pgcodec_put_i32(&B, (int32_t)0xdeadbeef);
        pgcodec_msg_end(&B, m);
        f = t_frame(true);
        CU_ASSERT_EQUAL_FATAL(pgcodec_parse_startup(&f, &s), 0);
        CU_ASSERT_EQUAL(s.cancel_pid, 4242);
        CU_ASSERT_EQUAL(s.cancel_secret_len, 4);
        CU_ASSERT_EQUAL(be32(s.cancel_secret), 0xdeadbeefu);

        /* A cancel without its key. */
        t_reset();
        m = pgcodec_msg_begin(&B, 0);
        pgcodec_put_i32(&B, (int32_t)PGCODEC_CANCEL_REQUEST_CODE);
        pgcodec_put_i32(&B, 4242);
        pgcodec_msg_end(&B, m);
        f = t_frame(true);
        CU_ASSERT_EQUAL(pgcodec_parse_startup(&f, &s), -EBADMSG);
}

static void test_startup_malformed(void)
{
        struct pgcodec_startup s;
        struct pgcodec_frame f;
        size_t m;

        /* No terminator. */
        t_reset();
        m = pgcodec_msg_begin(&B, 0);
        pgcodec_put_i32(&B, (int32_t)PGCODEC_PROTOCOL(3, 0));
        pgcodec_put_str(&B, "user");
        pgcodec_put_str(&B, "x");
        pgcodec_msg_end(&B, m);
        f = t_frame(true);
        CU_ASSERT_EQUAL(pgcodec_parse_startup(&f, &s), -EBADMSG);

        /* A name without a value. */
        t_reset();
        m = pgcodec_msg_begin(&B, 0);
        pgcodec_put_i32(&B, (int32_t)PGCODEC_PROTOCOL(3, 0));
        pgcodec_put_str(&B, "user");
        pgcodec_msg_end(&B, m);
        f = t_frame(true);
        CU_ASSERT_EQUAL(pgcodec_parse_startup(&f, &s), -EBADMSG);

        /* Bytes after the terminator. */
        t_reset();
        m = pgcodec_msg_begin(&B, 0);
        pgcodec_put_i32(&B, (int32_t)PGCODEC_PROTOCOL(3, 0));
        pgcodec_put_u8(&B, 0);
        pgcodec_put_u8(&B, 'x');
        pgcodec_msg_end(&B, m);
        f = t_frame(true);
        CU_ASSERT_EQUAL(pgcodec_parse_startup(&f, &s), -EBADMSG);

        /* Too many parameters. */
        t_reset();
        m = pgcodec_msg_begin(&B, 0);
        pgcodec_put_i32(&B, (int32_t)PGCODEC_PROTOCOL(3, 0));
        for (unsigned i = 0; i <= PGCODEC_STARTUP_PARAMS_MAX; i++) {
                char k[16];

                snprintf(k, sizeof(k), "k%u", i);
                pgcodec_put_str(&B, k);
                pgcodec_put_str(&B, "v");
        }
        pgcodec_put_u8(&B, 0);
        pgcodec_msg_end(&B, m);
        f = t_frame(true);
        CU_ASSERT_EQUAL(pgcodec_parse_startup(&f, &s), -E2BIG);
}

static void test_query_parse_roundtrip(void)
{
        static const uint32_t types[] = { PGCODEC_OID_INT4, 0, PGCODEC_OID_TEXT };
        struct pgcodec_parse p;
        struct pgcodec_frame f;
        const char *sql;

        t_reset();
        t_query(&B, "SELECT 1; SELECT 2");
        f = t_frame(false);
        CU_ASSERT_EQUAL_FATAL(pgcodec_parse_query(&f, &sql), 0);
        CU_ASSERT_STRING_EQUAL(sql, "SELECT 1; SELECT 2");

        t_reset();
        t_parse(&B, "s1", "SELECT $1, $2, $3", 3, types);
        f = t_frame(false);
        CU_ASSERT_EQUAL_FATAL(pgcodec_parse_parse(&f, &p), 0);
        CU_ASSERT_STRING_EQUAL(p.name, "s1");
        CU_ASSERT_STRING_EQUAL(p.query, "SELECT $1, $2, $3");
        CU_ASSERT_EQUAL_FATAL(p.ntypes, 3);
        for (unsigned i = 0; i < 3; i++)
                CU_ASSERT_EQUAL(pgcodec_parse_type(&p, i), types[i]);

        /* A body parser refuses a frame of another type. */
        CU_ASSERT_EQUAL(pgcodec_parse_query(&f, &sql), -EBADMSG);
}

static void test_bind_roundtrip(void)
{
        static const char *const vals[] = { "42", NULL, "", "\x00\x00\x00\x07" };
        static const int32_t lens[] = { 2, -1, 0, 4 };
        static const int16_t fmts[] = { 0, 0, 0, 1 };
        static const int16_t rfmts[] = { 1 };
        struct pgcodec_value v[4];
        struct pgcodec_bind b;
        struct pgcodec_frame f;

        t_reset();
        t_bind(&B, "p1", "s1", 4, fmts, 4, vals, lens, 1, rfmts);
        f = t_frame(false);
        CU_ASSERT_EQUAL_FATAL(pgcodec_parse_bind(&f, &b), 0);
        CU_ASSERT_STRING_EQUAL(b.portal, "p1");
        CU_ASSERT_STRING_EQUAL(b.statement, "s1");
        CU_ASSERT_EQUAL_FATAL(b.nparams, 4);
        pgcodec_bind_params(&b, v);
        CU_ASSERT_EQUAL(v[0].len, 2);
        CU_ASSERT_EQUAL(memcmp(v[0].data, "42", 2), 0);
        CU_ASSERT_EQUAL(v[1].len, -1);
        CU_ASSERT_PTR_NULL(v[1].data);
        CU_ASSERT_EQUAL(v[2].len, 0);
        CU_ASSERT_EQUAL(v[3].len, 4);
        CU_ASSERT_EQUAL(be32(v[3].data), 7u);
        CU_ASSERT_EQUAL(pgcodec_bind_format(&b, 0), 0);
        CU_ASSERT_EQUAL(pgcodec_bind_format(&b, 3), 1);
        /* One result format applies to every column. */
        CU_ASSERT_EQUAL(pgcodec_bind_result_format(&b, 0), 1);
        CU_ASSERT_EQUAL(pgcodec_bind_result_format(&b, 5), 1);

        /* One parameter format applies to all; none means text. */
        t_reset();
        t_bind(&B, "", "", 1, rfmts, 2, vals, lens, 0, NULL);
        f = t_frame(false);
        CU_ASSERT_EQUAL_FATAL(pgcodec_parse_bind(&f, &b), 0);
        CU_ASSERT_EQUAL(pgcodec_bind_format(&b, 1), 1);
        CU_ASSERT_EQUAL(pgcodec_bind_result_format(&b, 3), 0);

        /* Two formats for three parameters. */
        t_reset();
        t_bind(&B, "", "", 2, fmts, 3, vals, lens, 0, NULL);
        f = t_frame(false);
        CU_ASSERT_EQUAL(pgcodec_parse_bind(&f, &b), -EBADMSG);
}

static void test_bind_bad_lengths(void)
{
        struct pgcodec_frame f;
        struct pgcodec_bind b;
        size_t m;

        /* A parameter length below -1. */
        t_reset();
        m = pgcodec_msg_begin(&B, 'B');
        pgcodec_put_str(&B, "");
        pgcodec_put_str(&B, "");
        pgcodec_put_i16(&B, 0);
        pgcodec_put_i16(&B, 1);
        pgcodec_put_i32(&B, -2);
        pgcodec_put_i16(&B, 0);
        pgcodec_msg_end(&B, m);
        f = t_frame(false);
        CU_ASSERT_EQUAL(pgcodec_parse_bind(&f, &b), -EBADMSG);

        /* A parameter longer than the message. */
        t_reset();
        m = pgcodec_msg_begin(&B, 'B');
        pgcodec_put_str(&B, "");
        pgcodec_put_str(&B, "");
        pgcodec_put_i16(&B, 0);
        pgcodec_put_i16(&B, 1);
        pgcodec_put_i32(&B, 0x7fffffff);
        pgcodec_put_i16(&B, 0);
        pgcodec_msg_end(&B, m);
        f = t_frame(false);
        CU_ASSERT_EQUAL(pgcodec_parse_bind(&f, &b), -EBADMSG);

        /* 65535 parameters announced, none present. */
        t_reset();
        m = pgcodec_msg_begin(&B, 'B');
        pgcodec_put_str(&B, "");
        pgcodec_put_str(&B, "");
        pgcodec_put_i16(&B, 0);
        pgcodec_put_i16(&B, -1);
        pgcodec_msg_end(&B, m);
        f = t_frame(false);
        CU_ASSERT_EQUAL(pgcodec_parse_bind(&f, &b), -EBADMSG);
}

static void test_small_messages(void)
{
        struct pgcodec_target t;
        struct pgcodec_execute e;
        struct pgcodec_frame f;

        t_reset();
        t_target(&B, 'D', 'S', "s1");
        f = t_frame(false);
        CU_ASSERT_EQUAL_FATAL(pgcodec_parse_target(&f, &t), 0);
        CU_ASSERT_EQUAL(t.kind, 'S');
        CU_ASSERT_STRING_EQUAL(t.name, "s1");

        t_reset();
        t_target(&B, 'C', 'P', "");
        f = t_frame(false);
        CU_ASSERT_EQUAL_FATAL(pgcodec_parse_target(&f, &t), 0);
        CU_ASSERT_EQUAL(t.kind, 'P');

        t_reset();
        t_target(&B, 'D', 'X', "s1");
        f = t_frame(false);
        CU_ASSERT_EQUAL(pgcodec_parse_target(&f, &t), -EBADMSG);

        t_reset();
        t_execute(&B, "p", 10);
        f = t_frame(false);
        CU_ASSERT_EQUAL_FATAL(pgcodec_parse_execute(&f, &e), 0);
        CU_ASSERT_STRING_EQUAL(e.portal, "p");
        CU_ASSERT_EQUAL(e.max_rows, 10);

        /* A negative row count means all. */
        t_reset();
        t_execute(&B, "", -5);
        f = t_frame(false);
        CU_ASSERT_EQUAL_FATAL(pgcodec_parse_execute(&f, &e), 0);
        CU_ASSERT_EQUAL(e.max_rows, 0);

        t_reset();
        t_empty(&B, 'S');
        f = t_frame(false);
        CU_ASSERT_EQUAL(pgcodec_parse_empty(&f), 0);
        t_reset();
        t_query(&B, "");
        f = t_frame(false);
        CU_ASSERT_EQUAL(pgcodec_parse_empty(&f), -EBADMSG);
}

/* Every truncation of every message, with its length word rewritten to match, must be
 * refused cleanly with -EBADMSG. */
typedef int (*t_parser)(const struct pgcodec_frame *f);

static int p_startup(const struct pgcodec_frame *f)
{
        struct pgcodec_startup s;
        return pgcodec_parse_startup(f, &s);
}

static int p_query(const struct pgcodec_frame *f)
{
        const char *q;
        return pgcodec_parse_query(f, &q);
}

static int p_parse(const struct pgcodec_frame *f)
{
        struct pgcodec_parse p;
        return pgcodec_parse_parse(f, &p);
}

static int p_bind(const struct pgcodec_frame *f)
{
        struct pgcodec_bind b;
        return pgcodec_parse_bind(f, &b);
}

static int p_target(const struct pgcodec_frame *f)
{
        struct pgcodec_target t;
        return pgcodec_parse_target(f, &t);
}

static int p_execute(const struct pgcodec_frame *f)
{
        struct pgcodec_execute e;
        return pgcodec_parse_execute(f, &e);
}

static void test_truncations(void)
{
        static const char *const kv[] = { "user", "u", "database", "d", NULL };
        static const uint32_t types[] = { 23, 25 };
        static const char *const vals[] = { "1", "abc" };
        static const int32_t lens[] = { 1, 3 };
        static const int16_t fmts[] = { 0, 1 };
        uint8_t copy[256];

        for (unsigned k = 0; k < 6; k++) {
                size_t hdr;
                t_parser parse;

                t_reset();
                switch (k) {
                case 0: t_startup(&B, PGCODEC_PROTOCOL(3, 0), kv); parse = p_startup; break;
                case 1: t_query(&B, "SELECT 1"); parse = p_query; break;
                case 2: t_parse(&B, "n", "SELECT $1, $2", 2, types); parse = p_parse; break;
                case 3: t_bind(&B, "p", "s", 2, fmts, 2, vals, lens, 2, fmts); parse = p_bind; break;
                case 4: t_target(&B, 'D', 'S', "name"); parse = p_target; break;
                default: t_execute(&B, "portal", 3); parse = p_execute; break;
                }
                hdr = k == 0 ? 4 : 5;
                CU_ASSERT_FATAL(B.len <= sizeof(copy));
                for (size_t body = 0; body < B.len - hdr; body++) {
                        struct pgcodec_frame f;
                        size_t n = hdr + body;
                        int r;

                        memcpy(copy, B.data, n);
                        copy[hdr - 4] = 0;
                        copy[hdr - 3] = 0;
                        copy[hdr - 2] = (uint8_t)((body + 4) >> 8);
                        copy[hdr - 1] = (uint8_t)(body + 4);
                        r = pgcodec_frame_next(copy, n, k == 0, 1u << 20, &f);
                        if (k == 0 && body < 4) {
                                CU_ASSERT_EQUAL(r, -EBADMSG);
                                continue;
                        }
                        CU_ASSERT_EQUAL_FATAL(r, 1);
                        CU_ASSERT_EQUAL(parse(&f), -EBADMSG);
                }
        }
}

/* --- Backend messages: round trips -------------------------------------------------- */

static void test_backend_startup_messages(void)
{
        static const char *const unrec[] = { "_pq_.x" };
        struct t_msg m;
        size_t off = 0;

        t_reset();
        pgcodec_put_negotiate_version(&B, 0, 1, unrec);
        pgcodec_put_auth_ok(&B);
        pgcodec_put_parameter_status(&B, "server_version", "15.0 (Coord)");
        pgcodec_put_backend_key(&B, 77, 0xfeedface);
        pgcodec_put_ready(&B, 'I');
        CU_ASSERT_EQUAL_FATAL(pgcodec_buf_error(&B), 0);

        m = t_next(&off);
        CU_ASSERT_EQUAL(m.type, 'v');
        CU_ASSERT_EQUAL(m_i32(&m), (int32_t)PGCODEC_PROTOCOL(3, 0));
        CU_ASSERT_EQUAL(m_i32(&m), 1);
        CU_ASSERT_STRING_EQUAL(m_str(&m), "_pq_.x");
        CU_ASSERT(m_done(&m));
        m = t_next(&off);
        CU_ASSERT_EQUAL(m.type, 'R');
        CU_ASSERT_EQUAL(m_i32(&m), 0);
        CU_ASSERT(m_done(&m));
        m = t_next(&off);
        CU_ASSERT_EQUAL(m.type, 'S');
        CU_ASSERT_STRING_EQUAL(m_str(&m), "server_version");
        CU_ASSERT_STRING_EQUAL(m_str(&m), "15.0 (Coord)");
        CU_ASSERT(m_done(&m));
        m = t_next(&off);
        CU_ASSERT_EQUAL(m.type, 'K');
        CU_ASSERT_EQUAL(m_i32(&m), 77);
        CU_ASSERT_EQUAL((uint32_t)m_i32(&m), 0xfeedfaceu);
        m = t_next(&off);
        CU_ASSERT_EQUAL(m.type, 'Z');
        CU_ASSERT_EQUAL(m.len, 1);
        CU_ASSERT_EQUAL(m.p[0], 'I');
        CU_ASSERT_EQUAL(off, B.len);
}

static void test_backend_result_messages(void)
{
        static const struct pgcodec_column cols[] = {
                { .name = "id", .type = PGCODEC_OID_INT8, .typmod = -1, .table = 16384, .attnum = 1 },
                { .name = "name", .type = PGCODEC_OID_VARCHAR, .typmod = 14 },
                { .name = NULL, .type = PGCODEC_OID_BOOL, .typlen = 0, .typmod = -1 },
        };
        static const int16_t fmts[] = { 1, 0, 0 };
        const struct pgcodec_value vals[] = {
                { (const uint8_t *)"7", 1 }, { NULL, -1 }, { (const uint8_t *)"", 0 },
        };
        static const uint32_t ptypes[] = { 23, 25 };
        struct t_msg m;
        size_t off = 0;

        t_reset();
        pgcodec_put_row_description(&B, 3, cols, fmts);
        pgcodec_put_data_row(&B, 3, vals);
        pgcodec_put_command_complete(&B, "SELECT 1");
        pgcodec_put_parameter_description(&B, 2, ptypes);
        pgcodec_put_empty(&B, '1');
        pgcodec_put_empty(&B, 'n');
        pgcodec_put_empty(&B, 'I');
        CU_ASSERT_EQUAL_FATAL(pgcodec_buf_error(&B), 0);

        m = t_next(&off);
        CU_ASSERT_EQUAL(m.type, 'T');
        CU_ASSERT_EQUAL(m_i16(&m), 3);
        CU_ASSERT_STRING_EQUAL(m_str(&m), "id");
        CU_ASSERT_EQUAL(m_i32(&m), 16384);
        CU_ASSERT_EQUAL(m_i16(&m), 1);
        CU_ASSERT_EQUAL(m_i32(&m), PGCODEC_OID_INT8);
        CU_ASSERT_EQUAL(m_i16(&m), 8);          /* typlen 0: from the type */
        CU_ASSERT_EQUAL(m_i32(&m), -1);
        CU_ASSERT_EQUAL(m_i16(&m), 1);
        CU_ASSERT_STRING_EQUAL(m_str(&m), "name");
        CU_ASSERT_EQUAL(m_i32(&m), 0);
        CU_ASSERT_EQUAL(m_i16(&m), 0);
        CU_ASSERT_EQUAL(m_i32(&m), PGCODEC_OID_VARCHAR);
        CU_ASSERT_EQUAL(m_i16(&m), -1);
        CU_ASSERT_EQUAL(m_i32(&m), 14);
        CU_ASSERT_EQUAL(m_i16(&m), 0);
        CU_ASSERT_STRING_EQUAL(m_str(&m), "?column?");
        (void)m_i32(&m);
        (void)m_i16(&m);
        CU_ASSERT_EQUAL(m_i32(&m), PGCODEC_OID_BOOL);
        CU_ASSERT_EQUAL(m_i16(&m), 1);
        CU_ASSERT_EQUAL(m_i32(&m), -1);
        CU_ASSERT_EQUAL(m_i16(&m), 0);
        CU_ASSERT(m_done(&m));

        m = t_next(&off);
        CU_ASSERT_EQUAL(m.type, 'D');
        CU_ASSERT_EQUAL(m_i16(&m), 3);
        CU_ASSERT_EQUAL(m_i32(&m), 1);
        CU_ASSERT_EQUAL(m.p[m.pos], '7');
        m.pos++;
        CU_ASSERT_EQUAL(m_i32(&m), -1);
        CU_ASSERT_EQUAL(m_i32(&m), 0);
        CU_ASSERT(m_done(&m));

        m = t_next(&off);
        CU_ASSERT_EQUAL(m.type, 'C');
        CU_ASSERT_STRING_EQUAL(m_str(&m), "SELECT 1");
        CU_ASSERT(m_done(&m));

        m = t_next(&off);
        CU_ASSERT_EQUAL(m.type, 't');
        CU_ASSERT_EQUAL(m_i16(&m), 2);
        CU_ASSERT_EQUAL(m_i32(&m), 23);
        CU_ASSERT_EQUAL(m_i32(&m), 25);
        CU_ASSERT(m_done(&m));

        for (const char *t = "1nI"; *t; t++) {
                m = t_next(&off);
                CU_ASSERT_EQUAL(m.type, (uint8_t)*t);
                CU_ASSERT_EQUAL(m.len, 0);
        }
        CU_ASSERT_EQUAL(off, B.len);
}

static void test_backend_error(void)
{
        struct t_msg m;
        size_t off = 0;
        char code;
        unsigned seen = 0;

        t_reset();
        pgcodec_put_error(&B, 'E', &(struct pgcodec_error){
                .sqlstate = "42601", .message = "syntax error", .detail = "d", .hint = "h",
                .position = 12 });
        pgcodec_put_error(&B, 'N', &(struct pgcodec_error){ .message = "note" });
        CU_ASSERT_EQUAL_FATAL(pgcodec_buf_error(&B), 0);

        m = t_next(&off);
        CU_ASSERT_EQUAL(m.type, 'E');
        while ((code = (char)m.p[m.pos++]) != 0) {
                const char *v = m_str(&m);

                switch (code) {
                case 'S': case 'V': CU_ASSERT_STRING_EQUAL(v, "ERROR"); break;
                case 'C': CU_ASSERT_STRING_EQUAL(v, "42601"); break;
                case 'M': CU_ASSERT_STRING_EQUAL(v, "syntax error"); break;
                case 'D': CU_ASSERT_STRING_EQUAL(v, "d"); break;
                case 'H': CU_ASSERT_STRING_EQUAL(v, "h"); break;
                case 'P': CU_ASSERT_STRING_EQUAL(v, "12"); break;
                default: CU_FAIL("unexpected field");
                }
                seen++;
        }
        CU_ASSERT_EQUAL(seen, 7);
        CU_ASSERT(m_done(&m));

        m = t_next(&off);
        CU_ASSERT_EQUAL(m.type, 'N');
        CU_ASSERT_EQUAL(m.p[0], 'S');
        CU_ASSERT_STRING_EQUAL((const char *)m.p + 1, "NOTICE");
        CU_ASSERT_PTR_NOT_NULL(memmem(m.p, m.len, "C00000", 7));
}

static void test_oversized_backend(void)
{
        struct pgcodec_buf b;
        size_t m;

        /* A message that would not fit the 1 GiB length is refused (and the cap of the
         * buffer is what makes this cheap to test: 1 KiB here). */
        pgcodec_buf_init(&b, 1024);
        m = pgcodec_msg_begin(&b, 'D');
        for (int i = 0; i < 300; i++)
                pgcodec_put_i32(&b, i);
        pgcodec_msg_end(&b, m);
        CU_ASSERT_EQUAL(pgcodec_buf_error(&b), -ENOBUFS);
        pgcodec_buf_done(&b);
}

/* --- Value conversions -------------------------------------------------------------- */

/* text -> binary -> text gives want (NULL: text itself). */
static void t_convert(uint32_t type, const char *text, const char *want)
{
        struct pgcodec_buf b1, b2;

        pgcodec_buf_init(&b1, 0);
        pgcodec_buf_init(&b2, 0);
        CU_ASSERT_EQUAL_FATAL(pgcodec_text_to_binary(type, text, strlen(text), &b1), 0);
        CU_ASSERT_EQUAL_FATAL(pgcodec_binary_to_text(type, b1.data, b1.len, &b2), 0);
        CU_ASSERT_EQUAL_FATAL(pgcodec_buf_error(&b2), 0);
        CU_ASSERT_STRING_EQUAL((const char *)b2.data, want ? want : text);
        if (strcmp((const char *)b2.data, want ? want : text) != 0)
                fprintf(stderr, "type %u: %s -> %s\n", type, text, (const char *)b2.data);
        pgcodec_buf_done(&b1);
        pgcodec_buf_done(&b2);
}

static void test_convert_roundtrip(void)
{
        t_convert(PGCODEC_OID_INT2, "-32768", NULL);
        t_convert(PGCODEC_OID_INT2, "32767", NULL);
        t_convert(PGCODEC_OID_INT4, "-2147483648", NULL);
        t_convert(PGCODEC_OID_INT4, " 42 ", "42");
        t_convert(PGCODEC_OID_INT8, "-9223372036854775808", NULL);
        t_convert(PGCODEC_OID_INT8, "9223372036854775807", NULL);
        t_convert(PGCODEC_OID_OID, "4294967295", NULL);
        t_convert(PGCODEC_OID_BOOL, "t", NULL);
        t_convert(PGCODEC_OID_BOOL, "FALSE", "f");
        t_convert(PGCODEC_OID_BOOL, "yes", "t");
        t_convert(PGCODEC_OID_FLOAT8, "0.1", NULL);
        t_convert(PGCODEC_OID_FLOAT8, "1e+300", NULL);
        t_convert(PGCODEC_OID_FLOAT8, "-0", NULL);
        t_convert(PGCODEC_OID_FLOAT8, "3.141592653589793", NULL);
        t_convert(PGCODEC_OID_FLOAT8, "NaN", NULL);
        t_convert(PGCODEC_OID_FLOAT8, "-Infinity", NULL);
        t_convert(PGCODEC_OID_FLOAT4, "0.1", NULL);
        t_convert(PGCODEC_OID_FLOAT4, "3.4028235e+38", NULL);
        t_convert(PGCODEC_OID_TEXT, "h\xc3\xa9llo", NULL);
        t_convert(PGCODEC_OID_VARCHAR, "", NULL);
        t_convert(PGCODEC_OID_BYTEA, "\\x00ff10", NULL);
        t_convert(PGCODEC_OID_BYTEA, "\\x", NULL);
        t_convert(PGCODEC_OID_JSONB, "{\"a\": 1}", NULL);
}

static void test_convert_binary_layout(void)
{
        struct pgcodec_buf b;

        pgcodec_buf_init(&b, 0);
        CU_ASSERT_EQUAL(pgcodec_text_to_binary(PGCODEC_OID_INT8, "258", 3, &b), 0);
        CU_ASSERT_EQUAL(b.len, 8);
        CU_ASSERT_EQUAL(b.data[6], 1);
        CU_ASSERT_EQUAL(b.data[7], 2);
        pgcodec_buf_reset(&b);
        CU_ASSERT_EQUAL(pgcodec_text_to_binary(PGCODEC_OID_BOOL, "t", 1, &b), 0);
        CU_ASSERT_EQUAL(b.len, 1);
        CU_ASSERT_EQUAL(b.data[0], 1);
        pgcodec_buf_reset(&b);
        CU_ASSERT_EQUAL(pgcodec_text_to_binary(PGCODEC_OID_FLOAT8, "1", 1, &b), 0);
        CU_ASSERT_EQUAL(b.len, 8);
        CU_ASSERT_EQUAL(b.data[0], 0x3f);
        CU_ASSERT_EQUAL(b.data[1], 0xf0);
        pgcodec_buf_done(&b);
}

static void test_convert_invalid(void)
{
        static const struct { uint32_t type; const char *text; } bad_text[] = {
                { PGCODEC_OID_INT2, "32768" }, { PGCODEC_OID_INT4, "2147483648" },
                { PGCODEC_OID_INT4, "" }, { PGCODEC_OID_INT4, "12x" }, { PGCODEC_OID_INT4, "1.5" },
                { PGCODEC_OID_INT8, "99999999999999999999" }, { PGCODEC_OID_OID, "-1" },
                { PGCODEC_OID_BOOL, "maybe" }, { PGCODEC_OID_FLOAT8, "1e999" },
                { PGCODEC_OID_FLOAT8, "abc" }, { PGCODEC_OID_FLOAT4, "1e39" },
                { PGCODEC_OID_BYTEA, "00ff" }, { PGCODEC_OID_BYTEA, "\\x0g" },
                { PGCODEC_OID_BYTEA, "\\x0" },
        };
        static const uint8_t two[2] = { 0, 1 }, nul_text[3] = { 'a', 0, 'b' };
        struct pgcodec_buf b;

        pgcodec_buf_init(&b, 0);
        for (size_t i = 0; i < ELEMENTSOF(bad_text); i++) {
                CU_ASSERT_EQUAL(pgcodec_text_to_binary(bad_text[i].type, bad_text[i].text,
                                                       strlen(bad_text[i].text), &b), -EINVAL);
                CU_ASSERT_EQUAL(b.len, 0);      /* unchanged on a value error */
        }
        CU_ASSERT_EQUAL(pgcodec_text_to_binary(PGCODEC_OID_DATE, "1", 1, &b), -EOPNOTSUPP);
        CU_ASSERT_FALSE(pgcodec_type_has_binary(PGCODEC_OID_DATE));
        CU_ASSERT_EQUAL(pgcodec_text_to_binary(PGCODEC_OID_NUMERIC, "1.2.3", 5, &b), -EINVAL);
        CU_ASSERT_EQUAL(pgcodec_binary_to_text(PGCODEC_OID_NUMERIC, two, 2, &b), -EINVAL);
        CU_ASSERT_TRUE(pgcodec_type_has_binary(PGCODEC_OID_INT4));

        CU_ASSERT_EQUAL(pgcodec_binary_to_text(PGCODEC_OID_INT4, two, 2, &b), -EINVAL);
        CU_ASSERT_EQUAL(pgcodec_binary_to_text(PGCODEC_OID_INT8, two, 2, &b), -EINVAL);
        CU_ASSERT_EQUAL(pgcodec_binary_to_text(PGCODEC_OID_BOOL, two, 2, &b), -EINVAL);
        CU_ASSERT_EQUAL(pgcodec_binary_to_text(PGCODEC_OID_TEXT, nul_text, 3, &b), -EINVAL);
        CU_ASSERT_EQUAL(pgcodec_binary_to_text(PGCODEC_OID_JSONB, two, 2, &b), -EINVAL);
        CU_ASSERT_EQUAL(pgcodec_binary_to_text(PGCODEC_OID_DATE, two, 2, &b), -EOPNOTSUPP);
        CU_ASSERT_EQUAL(b.len, 0);
        pgcodec_buf_done(&b);
}

/* numeric: numeric_send()'s bytes as PostgreSQL 15 gives them, and back to the text. */
static void test_numeric_binary(void)
{
        static const struct {
                const char *text, *hex;
        } cases[] = {
                { "13.50", "0002000000000002000d1388" },
                { "-0.0015", "0001ffff40000004000f" },
                { "123456789.01", "0004000200000002000109291a850064" },
                { "0.000", "0000000000000003" },
                { "10000", "00010001000000000001" },
                { "0.5", "0001ffff000000011388" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct pgcodec_buf b, t;
                char hex[128] = "";

                pgcodec_buf_init(&b, 0);
                pgcodec_buf_init(&t, 0);
                CU_ASSERT_EQUAL_FATAL(pgcodec_text_to_binary(PGCODEC_OID_NUMERIC, cases[i].text,
                                                             strlen(cases[i].text), &b), 0);
                for (size_t k = 0; k < b.len && 2 * k + 2 < sizeof(hex); k++)
                        snprintf(hex + 2 * k, 3, "%02x", b.data[k]);
                CU_ASSERT_STRING_EQUAL(hex, cases[i].hex);
                CU_ASSERT_EQUAL_FATAL(pgcodec_binary_to_text(PGCODEC_OID_NUMERIC, b.data, b.len, &t), 0);
                CU_ASSERT_STRING_EQUAL((const char *)t.data, cases[i].text);
                pgcodec_buf_done(&b);
                pgcodec_buf_done(&t);
        }
        CU_ASSERT_TRUE(pgcodec_type_has_binary(PGCODEC_OID_NUMERIC));
}

/* --- Fuzz --------------------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rng(void)
{
        /* xorshift64*: reproducible from the seed printed on failure. */
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * 2685821657736338717ull;
}

/* Parse whatever a frame claims to be; the result does not matter, surviving does. */
static void t_parse_any(const struct pgcodec_frame *f, bool startup)
{
        struct pgcodec_startup st;
        struct pgcodec_parse p;
        struct pgcodec_bind b;
        struct pgcodec_target t;
        struct pgcodec_execute e;
        const char *q;

        if (startup) {
                if (pgcodec_parse_startup(f, &st) == 0)
                        (void)pgcodec_startup_param(&st, "user");
                return;
        }
        switch (f->type) {
        case 'Q':
                if (pgcodec_parse_query(f, &q) == 0)
                        CU_ASSERT_PTR_NOT_NULL(memchr(f->body, 0, f->len));
                break;
        case 'P':
                if (pgcodec_parse_parse(f, &p) == 0)
                        for (unsigned i = 0; i < p.ntypes; i++)
                                (void)pgcodec_parse_type(&p, i);
                break;
        case 'B':
                if (pgcodec_parse_bind(f, &b) == 0) {
                        struct pgcodec_value v[64];

                        if (b.nparams <= 64) {
                                pgcodec_bind_params(&b, v);
                                for (unsigned i = 0; i < b.nparams; i++) {
                                        (void)pgcodec_bind_format(&b, i);
                                        CU_ASSERT(v[i].len < 0 ||
                                                  v[i].data + v[i].len <= f->body + f->len);
                                }
                        }
                }
                break;
        case 'D': case 'C':
                (void)pgcodec_parse_target(f, &t);
                break;
        case 'E':
                (void)pgcodec_parse_execute(f, &e);
                break;
        default:
                (void)pgcodec_parse_empty(f);
                break;
        }
}

static void t_fuzz_buffer(uint8_t *buf, size_t len, bool startup)
{
        size_t off = 0;

        while (off < len) {
                struct pgcodec_frame f;
                int r = pgcodec_frame_next(buf + off, len - off, startup, 4096, &f);

                CU_ASSERT(r == 0 || r == 1 || r == -EPROTO || r == -EBADMSG || r == -EMSGSIZE);
                if (r != 1)
                        break;
                CU_ASSERT(f.size <= len - off);
                t_parse_any(&f, startup);
                off += f.size;
        }
}

static void test_fuzz_random(void)
{
        static const uint8_t types[] = "QPBDECSHXFdcfp";
        uint8_t buf[512];

        rng_state = 0x9e3779b97f4a7c15ull;
        for (unsigned iter = 0; iter < 200000; iter++) {
                size_t len = rng() % sizeof(buf);
                bool startup = (iter & 7) == 0;

                for (size_t i = 0; i < len; i++)
                        buf[i] = (uint8_t)rng();
                /* Make most inputs look like a real header so bodies get parsed too. */
                if (!startup && len >= 5 && (iter & 1)) {
                        uint32_t n = (uint32_t)(4 + rng() % (len - 4));

                        buf[0] = types[rng() % (sizeof(types) - 1)];
                        buf[1] = 0;
                        buf[2] = 0;
                        buf[3] = (uint8_t)(n >> 8);
                        buf[4] = (uint8_t)n;
                }
                t_fuzz_buffer(buf, len, startup);
        }
}

static void test_fuzz_mutations(void)
{
        static const uint32_t types[] = { 23, 25, 0 };
        static const char *const vals[] = { "12", "hello", "x" };
        static const int32_t lens[] = { 2, 5, -1 };
        static const int16_t fmts[] = { 0, 1, 0 };
        uint8_t buf[1024];
        size_t len;

        /* A valid pipeline, then random bit flips, byte changes and cuts of it. */
        t_reset();
        t_parse(&B, "s", "SELECT $1, $2, $3", 3, types);
        t_bind(&B, "p", "s", 3, fmts, 3, vals, lens, 1, fmts);
        t_target(&B, 'D', 'P', "p");
        t_execute(&B, "p", 0);
        t_target(&B, 'C', 'S', "s");
        t_query(&B, "SELECT 1; SELECT 2");
        t_empty(&B, 'H');
        t_empty(&B, 'S');
        CU_ASSERT_FATAL(B.len <= sizeof(buf));
        t_fuzz_buffer(B.data, B.len, false);

        rng_state = 0xdecafbadull;
        for (unsigned iter = 0; iter < 100000; iter++) {
                unsigned flips = 1 + (unsigned)(rng() % 4);

                memcpy(buf, B.data, B.len);
                len = B.len;
                for (unsigned k = 0; k < flips; k++) {
                        size_t at = rng() % len;

                        if (rng() & 1)
                                buf[at] ^= (uint8_t)(1u << (rng() % 8));
                        else
                                buf[at] = (uint8_t)rng();
                }
                if ((iter & 3) == 0)
                        len = rng() % (len + 1);
                t_fuzz_buffer(buf, len, false);
        }
}

static void test_fuzz_conversions(void)
{
        static const uint32_t types[] = {
                PGCODEC_OID_BOOL, PGCODEC_OID_BYTEA, PGCODEC_OID_INT2, PGCODEC_OID_INT4,
                PGCODEC_OID_INT8, PGCODEC_OID_OID, PGCODEC_OID_FLOAT4, PGCODEC_OID_FLOAT8,
                PGCODEC_OID_TEXT, PGCODEC_OID_JSONB, PGCODEC_OID_NUMERIC,
        };
        struct pgcodec_buf b;
        uint8_t data[24];

        pgcodec_buf_init(&b, 0);
        rng_state = 0x5eedull;
        for (unsigned iter = 0; iter < 100000; iter++) {
                uint32_t type = types[rng() % ELEMENTSOF(types)];
                size_t len = rng() % sizeof(data);
                int r;

                for (size_t i = 0; i < len; i++)
                        data[i] = (iter & 1) ? (uint8_t)rng() : (uint8_t)("0123456789-.e\\xtfa "[rng() % 20]);
                pgcodec_buf_reset(&b);
                r = pgcodec_binary_to_text(type, data, len, &b);
                CU_ASSERT(r == 0 || r == -EINVAL || r == -EOPNOTSUPP);
                if (r == 0)
                        CU_ASSERT(b.len > 0 && b.data[b.len - 1] == 0);
                pgcodec_buf_reset(&b);
                r = pgcodec_text_to_binary(type, (const char *)data, len, &b);
                CU_ASSERT(r == 0 || r == -EINVAL || r == -EOPNOTSUPP);
        }
        pgcodec_buf_done(&b);
}

int main(void)
{
        static const struct t_case buf_cases[] = {
                { "basics", test_buf_basics },
                { "limit_sticky", test_buf_limit_sticky },
                { NULL, NULL },
        };
        static const struct t_case frame_cases[] = {
                { "partial", test_frame_partial },
                { "garbage", test_frame_garbage },
                { "startup", test_frame_startup },
                { NULL, NULL },
        };
        static const struct t_case frontend_cases[] = {
                { "startup_roundtrip", test_startup_roundtrip },
                { "startup_special", test_startup_special },
                { "startup_malformed", test_startup_malformed },
                { "query_parse", test_query_parse_roundtrip },
                { "bind", test_bind_roundtrip },
                { "bind_bad_lengths", test_bind_bad_lengths },
                { "small_messages", test_small_messages },
                { "truncations", test_truncations },
                { NULL, NULL },
        };
        static const struct t_case backend_cases[] = {
                { "startup_messages", test_backend_startup_messages },
                { "result_messages", test_backend_result_messages },
                { "error", test_backend_error },
                { "oversized", test_oversized_backend },
                { NULL, NULL },
        };
        static const struct t_case convert_cases[] = {
                { "roundtrip", test_convert_roundtrip },
                { "binary_layout", test_convert_binary_layout },
                { "invalid", test_convert_invalid },
                { "numeric binary", test_numeric_binary },
                { NULL, NULL },
        };
        static const struct t_case fuzz_cases[] = {
                { "random", test_fuzz_random },
                { "mutations", test_fuzz_mutations },
                { "conversions", test_fuzz_conversions },
                { NULL, NULL },
        };
        static const struct t_suite suites[] = {
                { "pgcodec_buf", buf_cases },
                { "pgcodec_frame", frame_cases },
                { "pgcodec_frontend", frontend_cases },
                { "pgcodec_backend", backend_cases },
                { "pgcodec_convert", convert_cases },
                { "pgcodec_fuzz", fuzz_cases },
                { NULL, NULL },
        };
        int r = t_run(suites);

        pgcodec_buf_done(&B);
        return r;
}
