/* adapter-pgcodec.c -- the PostgreSQL v3 wire protocol codec (contract in
 * adapter-pgcodec.h).
 *
 * Owner: adapter.  Pure functions over caller memory; no I/O, no globals, no logging.
 *
 * NOTES
 *
 * (1) Decoding never trusts a length.  Framing checks the type byte first (one garbage
 *     byte is refused at once, without waiting for a header), then the length word
 *     against the per-type limit before any body byte is awaited, so an announced
 *     2 GiB message costs nothing.  Bodies are read through struct reader, whose error
 *     is sticky: a read past the end or a string without its NUL sets `bad`, every
 *     later read returns zeros, and the parser checks `bad` once at the end.
 *
 * (2) Encoding appends to a pgcodec_buf with a sticky error (header).  Lengths are
 *     written as a placeholder by pgcodec_msg_begin() and patched by pgcodec_msg_end(),
 *     so no message is measured twice.
 *
 * (3) Value conversions follow PostgreSQL's send/receive functions: integers and floats
 *     big-endian, bool one byte, text types as their bytes, bytea raw.  Float text is the
 *     shortest string that reads back to the same value (extra_float_digits = 1, the
 *     default since PostgreSQL 12).
 */
#include "adapter-pgcodec.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PGCODEC_BUF_MIN 256u

/* --- Big-endian helpers ---------------------------------------------------------- */

static uint16_t get_be16(const uint8_t *p)
{
        return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get_be32(const uint8_t *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get_be64(const uint8_t *p)
{
        return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

static void set_be32(uint8_t *p, uint32_t v)
{
        p[0] = (uint8_t)(v >> 24);
        p[1] = (uint8_t)(v >> 16);
        p[2] = (uint8_t)(v >> 8);
        p[3] = (uint8_t)v;
}

/* --- Output buffer (note 2) -------------------------------------------------------- */

void pgcodec_buf_init(struct pgcodec_buf *b, size_t max)
{
        assert(b);
        *b = (struct pgcodec_buf){ .max = max };
}

void pgcodec_buf_done(struct pgcodec_buf *b)
{
        if (!b)
                return;
        free(b->data);
        b->data = NULL;
        b->len = b->cap = 0;
        b->error = 0;
}

void pgcodec_buf_reset(struct pgcodec_buf *b)
{
        assert(b);
        b->len = 0;
        b->error = 0;
}

void pgcodec_buf_truncate(struct pgcodec_buf *b, size_t len)
{
        assert(b);
        assert(len <= b->len);
        b->len = len;
}

int pgcodec_buf_reserve(struct pgcodec_buf *b, size_t n)
{
        size_t need, cap;
        uint8_t *p;

        assert(b);
        if (b->error)
                return b->error;
        if (b->cap - b->len >= n)
                return 0;
        if (n > SIZE_MAX - b->len || (b->max && b->len + n > b->max))
                return (b->error = -ENOBUFS);
        need = b->len + n;
        cap = b->cap ? b->cap : PGCODEC_BUF_MIN;
        while (cap < need)
                cap = cap > SIZE_MAX / 2 ? need : cap * 2;
        if (b->max && cap > b->max)
                cap = need > b->max ? need : b->max;
        p = realloc(b->data, cap);
        if (!p)
                return (b->error = -ENOMEM);
        b->data = p;
        b->cap = cap;
        return 0;
}

void pgcodec_put_bytes(struct pgcodec_buf *b, const void *p, size_t n)
{
        if (n == 0 || pgcodec_buf_reserve(b, n) < 0)
                return;
        memcpy(b->data + b->len, p, n);
        b->len += n;
}

void pgcodec_put_u8(struct pgcodec_buf *b, uint8_t v)
{
        pgcodec_put_bytes(b, &v, 1);
}

void pgcodec_put_i16(struct pgcodec_buf *b, int16_t v)
{
        uint8_t p[2] = { (uint8_t)((uint16_t)v >> 8), (uint8_t)v };

        pgcodec_put_bytes(b, p, sizeof(p));
}

void pgcodec_put_i32(struct pgcodec_buf *b, int32_t v)
{
        uint8_t p[4];

        set_be32(p, (uint32_t)v);
        pgcodec_put_bytes(b, p, sizeof(p));
}

void pgcodec_put_str(struct pgcodec_buf *b, const char *s)
{
        assert(s);
        pgcodec_put_bytes(b, s, strlen(s) + 1);
}

size_t pgcodec_msg_begin(struct pgcodec_buf *b, uint8_t type)
{
        size_t start;

        if (type)
                pgcodec_put_u8(b, type);
        start = b->len;
        pgcodec_put_i32(b, 0);
        return start;
}

void pgcodec_msg_end(struct pgcodec_buf *b, size_t start)
{
        size_t n;

        if (b->error)
                return;
        assert(start + 4 <= b->len);
        n = b->len - start;
        if (n > PGCODEC_MESSAGE_MAX) {
                b->error = -EMSGSIZE;
                return;
        }
        set_be32(b->data + start, (uint32_t)n);
}

/* --- Backend messages ------------------------------------------------------------ */

void pgcodec_put_auth_ok(struct pgcodec_buf *b)
{
        size_t m = pgcodec_msg_begin(b, 'R');

        pgcodec_put_i32(b, 0);
        pgcodec_msg_end(b, m);
}

void pgcodec_put_parameter_status(struct pgcodec_buf *b, const char *name, const char *value)
{
        size_t m = pgcodec_msg_begin(b, 'S');

        pgcodec_put_str(b, name);
        pgcodec_put_str(b, value);
        pgcodec_msg_end(b, m);
}

void pgcodec_put_backend_key(struct pgcodec_buf *b, int32_t pid, uint32_t secret)
{
        size_t m = pgcodec_msg_begin(b, 'K');

        pgcodec_put_i32(b, pid);
        pgcodec_put_i32(b, (int32_t)secret);
        pgcodec_msg_end(b, m);
}

void pgcodec_put_ready(struct pgcodec_buf *b, char txn_status)
{
        size_t m;

        assert(txn_status == 'I' || txn_status == 'T' || txn_status == 'E');
        m = pgcodec_msg_begin(b, 'Z');
        pgcodec_put_u8(b, (uint8_t)txn_status);
        pgcodec_msg_end(b, m);
}

void pgcodec_put_negotiate_version(struct pgcodec_buf *b, uint32_t newest_minor, unsigned n,
                                   const char *const *unrecognized)
{
        size_t m = pgcodec_msg_begin(b, 'v');

        pgcodec_put_i32(b, (int32_t)PGCODEC_PROTOCOL(3, newest_minor));
        pgcodec_put_i32(b, (int32_t)n);
        for (unsigned i = 0; i < n; i++)
                pgcodec_put_str(b, unrecognized[i]);
        pgcodec_msg_end(b, m);
}

void pgcodec_put_row_description(struct pgcodec_buf *b, unsigned n,
                                 const struct pgcodec_column *cols, const int16_t *formats)
{
        size_t m;

        assert(n <= INT16_MAX);
        assert(n == 0 || cols);
        m = pgcodec_msg_begin(b, 'T');
        pgcodec_put_i16(b, (int16_t)n);
        for (unsigned i = 0; i < n; i++) {
                const struct pgcodec_column *c = &cols[i];

                pgcodec_put_str(b, c->name ? c->name : "?column?");
                pgcodec_put_i32(b, (int32_t)c->table);
                pgcodec_put_i16(b, c->attnum);
                pgcodec_put_i32(b, (int32_t)c->type);
                pgcodec_put_i16(b, c->typlen ? c->typlen : pgcodec_type_len(c->type));
                pgcodec_put_i32(b, c->typmod);
                pgcodec_put_i16(b, formats ? formats[i] : PGCODEC_FORMAT_TEXT);
        }
        pgcodec_msg_end(b, m);
}

void pgcodec_put_data_row(struct pgcodec_buf *b, unsigned n, const struct pgcodec_value *values)
{
        size_t m;

        assert(n <= INT16_MAX);
        m = pgcodec_msg_begin(b, 'D');
        pgcodec_put_i16(b, (int16_t)n);
        for (unsigned i = 0; i < n; i++) {
                if (values[i].len < 0) {
                        pgcodec_put_i32(b, -1);
                        continue;
                }
                pgcodec_put_i32(b, values[i].len);
                pgcodec_put_bytes(b, values[i].data, (size_t)values[i].len);
        }
        pgcodec_msg_end(b, m);
}

void pgcodec_put_command_complete(struct pgcodec_buf *b, const char *tag)
{
        size_t m = pgcodec_msg_begin(b, 'C');

        pgcodec_put_str(b, tag);
        pgcodec_msg_end(b, m);
}

static void put_field(struct pgcodec_buf *b, char code, const char *value)
{
        if (!value)
                return;
        pgcodec_put_u8(b, (uint8_t)code);
        pgcodec_put_str(b, value);
}

void pgcodec_put_error(struct pgcodec_buf *b, uint8_t type, const struct pgcodec_error *e)
{
        bool notice = type == 'N';
        const char *severity, *sqlstate;
        char pos[16];
        size_t m;

        assert(type == 'E' || type == 'N');
        assert(e && e->message);
        severity = e->severity ? e->severity : notice ? "NOTICE" : "ERROR";
        sqlstate = e->sqlstate ? e->sqlstate : notice ? PGCODEC_SQLSTATE_SUCCESSFUL_COMPLETION
                                                      : PGCODEC_SQLSTATE_INTERNAL_ERROR;
        assert(strlen(sqlstate) == 5);

        m = pgcodec_msg_begin(b, type);
        put_field(b, 'S', severity);
        put_field(b, 'V', severity);    /* the non-localized copy, since 9.6 */
        put_field(b, 'C', sqlstate);
        put_field(b, 'M', e->message);
        put_field(b, 'D', e->detail);
        put_field(b, 'H', e->hint);
        if (e->position > 0) {
                snprintf(pos, sizeof(pos), "%u", e->position);
                put_field(b, 'P', pos);
        }
        pgcodec_put_u8(b, 0);
        pgcodec_msg_end(b, m);
}

void pgcodec_put_parameter_description(struct pgcodec_buf *b, unsigned n, const uint32_t *types)
{
        size_t m;

        assert(n <= UINT16_MAX);
        m = pgcodec_msg_begin(b, 't');
        pgcodec_put_i16(b, (int16_t)(uint16_t)n);
        for (unsigned i = 0; i < n; i++)
                pgcodec_put_i32(b, (int32_t)types[i]);
        pgcodec_msg_end(b, m);
}

void pgcodec_put_empty(struct pgcodec_buf *b, uint8_t type)
{
        assert(strchr("123nsI", type) && type);
        pgcodec_msg_end(b, pgcodec_msg_begin(b, type));
}

/* --- Framing (note 1) -------------------------------------------------------------- */

/* Whether a frontend sends messages of this type, and under which limit. */
static bool frontend_type(uint8_t type, bool *ret_small)
{
        switch (type) {
        case 'Q': case 'P': case 'B': case 'F': case 'd': case 'p':
                *ret_small = false;
                return true;
        case 'C': case 'D': case 'E': case 'H': case 'S': case 'X': case 'c': case 'f':
                *ret_small = true;
                return true;
        default:
                return false;
        }
}

int pgcodec_frame_next(const uint8_t *buf, size_t len, bool startup, size_t max,
                       struct pgcodec_frame *ret)
{
        size_t hdr = startup ? 4 : 5, limit, min = startup ? 8 : 4;
        uint8_t type = 0;
        uint32_t n;

        assert(buf || len == 0);
        assert(ret);

        ret->size = 0;
        limit = max < PGCODEC_MESSAGE_MAX ? max : PGCODEC_MESSAGE_MAX;
        if (startup) {
                if (limit > PGCODEC_STARTUP_MAX)
                        limit = PGCODEC_STARTUP_MAX;
        } else {
                bool small;

                if (len < 1)
                        return 0;
                type = buf[0];
                if (!frontend_type(type, &small))
                        return -EPROTO;
                if (small && limit > PGCODEC_SMALL_MESSAGE_MAX)
                        limit = PGCODEC_SMALL_MESSAGE_MAX;
        }
        if (len < hdr)
                return 0;
        n = get_be32(buf + hdr - 4);
        if (n < min)
                return -EBADMSG;
        if (n > limit)
                return -EMSGSIZE;
        ret->size = hdr - 4 + (size_t)n;
        if (len < ret->size)
                return 0;
        ret->type = type;
        ret->body = buf + hdr;
        ret->len = (size_t)n - 4;
        return 1;
}

/* --- Body reader (note 1) ---------------------------------------------------------- */

struct reader {
        const uint8_t *p;
        size_t len, pos;
        bool bad;
};

static struct reader reader_of(const struct pgcodec_frame *f)
{
        assert(f);
        return (struct reader){ .p = f->body, .len = f->len };
}

static const uint8_t *rd_bytes(struct reader *r, size_t n)
{
        const uint8_t *p;

        if (r->bad || n > r->len - r->pos) {
                r->bad = true;
                return NULL;
        }
        p = r->p + r->pos;
        r->pos += n;
        return p;
}

static uint8_t rd_u8(struct reader *r)
{
        const uint8_t *p = rd_bytes(r, 1);
        return p ? p[0] : 0;
}

static uint16_t rd_u16(struct reader *r)
{
        const uint8_t *p = rd_bytes(r, 2);
        return p ? get_be16(p) : 0;
}

static uint32_t rd_u32(struct reader *r)
{
        const uint8_t *p = rd_bytes(r, 4);
        return p ? get_be32(p) : 0;
}

/* A NUL-terminated string inside the body; "" (and bad) when there is none. */
static const char *rd_str(struct reader *r)
{
        const uint8_t *nul;
        const char *s;

        if (r->bad)
                return "";
        nul = memchr(r->p + r->pos, 0, r->len - r->pos);
        if (!nul) {
                r->bad = true;
                return "";
        }
        s = (const char *)(r->p + r->pos);
        r->pos = (size_t)(nul - r->p) + 1;
        return s;
}

/* 0 if everything was read and nothing is left over, else -EBADMSG. */
static int rd_end(const struct reader *r)
{
        return !r->bad && r->pos == r->len ? 0 : -EBADMSG;
}

/* --- Frontend bodies -------------------------------------------------------------- */

int pgcodec_parse_startup(const struct pgcodec_frame *f, struct pgcodec_startup *ret)
{
        struct reader r = reader_of(f);
        struct pgcodec_startup s = { 0 };

        assert(ret);
        if (f->type != 0)
                return -EBADMSG;
        s.code = rd_u32(&r);
        switch (s.code) {
        case PGCODEC_CANCEL_REQUEST_CODE:
                s.cancel_pid = (int32_t)rd_u32(&r);
                s.cancel_secret_len = r.len - r.pos;
                /* 4 bytes up to protocol 3.0; PostgreSQL 18 allows longer keys. */
                if (r.bad || s.cancel_secret_len < 4 ||
                    s.cancel_secret_len > PGCODEC_CANCEL_SECRET_MAX)
                        return -EBADMSG;
                s.cancel_secret = rd_bytes(&r, s.cancel_secret_len);
                break;
        case PGCODEC_SSL_REQUEST_CODE:
        case PGCODEC_GSSENC_REQUEST_CODE:
                break;
        default:
                if (PGCODEC_PROTOCOL_MAJOR(s.code) != 3) {
                        /* Another version: the rest is not ours to interpret. */
                        *ret = s;
                        return 0;
                }
                for (;;) {
                        const char *name = rd_str(&r), *value;

                        if (r.bad)
                                return -EBADMSG;
                        if (*name == '\0')
                                break;          /* the terminator: must be the last byte */
                        value = rd_str(&r);
                        if (r.bad)
                                return -EBADMSG;
                        if (s.nparams == PGCODEC_STARTUP_PARAMS_MAX)
                                return -E2BIG;
                        s.names[s.nparams] = name;
                        s.values[s.nparams] = value;
                        s.nparams++;
                }
                break;
        }
        if (rd_end(&r) < 0)
                return -EBADMSG;
        *ret = s;
        return 0;
}

const char *pgcodec_startup_param(const struct pgcodec_startup *s, const char *name)
{
        assert(s && name);
        for (unsigned i = 0; i < s->nparams; i++)
                if (strcmp(s->names[i], name) == 0)
                        return s->values[i];
        return NULL;
}

int pgcodec_parse_query(const struct pgcodec_frame *f, const char **ret_sql)
{
        struct reader r = reader_of(f);
        const char *sql;

        assert(ret_sql);
        if (f->type != 'Q')
                return -EBADMSG;
        sql = rd_str(&r);
        if (rd_end(&r) < 0)
                return -EBADMSG;
        *ret_sql = sql;
        return 0;
}

int pgcodec_parse_parse(const struct pgcodec_frame *f, struct pgcodec_parse *ret)
{
        struct reader r = reader_of(f);
        struct pgcodec_parse p;

        assert(ret);
        if (f->type != 'P')
                return -EBADMSG;
        p.name = rd_str(&r);
        p.query = rd_str(&r);
        p.ntypes = rd_u16(&r);
        p.types = rd_bytes(&r, (size_t)p.ntypes * 4);
        if (rd_end(&r) < 0)
                return -EBADMSG;
        *ret = p;
        return 0;
}

uint32_t pgcodec_parse_type(const struct pgcodec_parse *p, unsigned i)
{
        assert(p && i < p->ntypes);
        return get_be32(p->types + (size_t)i * 4);
}

int pgcodec_parse_bind(const struct pgcodec_frame *f, struct pgcodec_bind *ret)
{
        struct reader r = reader_of(f);
        struct pgcodec_bind b;

        assert(ret);
        if (f->type != 'B')
                return -EBADMSG;
        b.portal = rd_str(&r);
        b.statement = rd_str(&r);
        b.nformats = rd_u16(&r);
        b.formats = rd_bytes(&r, (size_t)b.nformats * 2);
        b.nparams = rd_u16(&r);
        if (b.nformats > 1 && b.nformats != b.nparams)
                return -EBADMSG;
        b.params = r.bad ? NULL : r.p + r.pos;
        for (unsigned i = 0; i < b.nparams && !r.bad; i++) {
                int32_t n = (int32_t)rd_u32(&r);

                if (n < -1)
                        return -EBADMSG;
                if (n > 0)
                        (void)rd_bytes(&r, (size_t)n);
        }
        b.nresult_formats = rd_u16(&r);
        b.result_formats = rd_bytes(&r, (size_t)b.nresult_formats * 2);
        if (rd_end(&r) < 0)
                return -EBADMSG;
        *ret = b;
        return 0;
}

int16_t pgcodec_bind_format(const struct pgcodec_bind *b, unsigned i)
{
        assert(b && i < b->nparams);
        if (b->nformats == 0)
                return PGCODEC_FORMAT_TEXT;
        return (int16_t)get_be16(b->formats + (b->nformats == 1 ? 0 : (size_t)i * 2));
}

int16_t pgcodec_bind_result_format(const struct pgcodec_bind *b, unsigned i)
{
        assert(b);
        if (b->nresult_formats == 0)
                return PGCODEC_FORMAT_TEXT;
        assert(b->nresult_formats == 1 || i < b->nresult_formats);
        return (int16_t)get_be16(b->result_formats + (b->nresult_formats == 1 ? 0 : (size_t)i * 2));
}

void pgcodec_bind_params(const struct pgcodec_bind *b, struct pgcodec_value *out)
{
        const uint8_t *p;

        assert(b);
        p = b->params;
        for (unsigned i = 0; i < b->nparams; i++) {
                int32_t n = (int32_t)get_be32(p);

                p += 4;
                out[i].len = n;
                out[i].data = n >= 0 ? p : NULL;
                if (n > 0)
                        p += n;
        }
}

int pgcodec_parse_target(const struct pgcodec_frame *f, struct pgcodec_target *ret)
{
        struct reader r = reader_of(f);
        struct pgcodec_target t;

        assert(ret);
        if (f->type != 'D' && f->type != 'C')
                return -EBADMSG;
        t.kind = (char)rd_u8(&r);
        t.name = rd_str(&r);
        if (rd_end(&r) < 0 || (t.kind != 'S' && t.kind != 'P'))
                return -EBADMSG;
        *ret = t;
        return 0;
}

int pgcodec_parse_execute(const struct pgcodec_frame *f, struct pgcodec_execute *ret)
{
        struct reader r = reader_of(f);
        struct pgcodec_execute e;
        int32_t n;

        assert(ret);
        if (f->type != 'E')
                return -EBADMSG;
        e.portal = rd_str(&r);
        n = (int32_t)rd_u32(&r);
        if (rd_end(&r) < 0)
                return -EBADMSG;
        e.max_rows = n > 0 ? (uint32_t)n : 0;
        *ret = e;
        return 0;
}

int pgcodec_parse_empty(const struct pgcodec_frame *f)
{
        assert(f);
        return f->len == 0 ? 0 : -EBADMSG;
}

/* --- Types and formats (note 3) --------------------------------------------------- */

int16_t pgcodec_type_len(uint32_t type)
{
        switch (type) {
        case PGCODEC_OID_BOOL:
        case PGCODEC_OID_CHAR:
                return 1;
        case PGCODEC_OID_INT2:
                return 2;
        case PGCODEC_OID_INT4:
        case PGCODEC_OID_OID:
        case PGCODEC_OID_FLOAT4:
        case PGCODEC_OID_DATE:
                return 4;
        case PGCODEC_OID_INT8:
        case PGCODEC_OID_FLOAT8:
        case PGCODEC_OID_TIMESTAMP:
        case PGCODEC_OID_TIMESTAMPTZ:
                return 8;
        case PGCODEC_OID_INTERVAL:
        case PGCODEC_OID_UUID:
                return 16;
        case PGCODEC_OID_NAME:
                return 64;
        case PGCODEC_OID_UNKNOWN:
                return -2;
        default:
                return -1;
        }
}

/* Types whose binary format is their text bytes. */
static bool type_is_textual(uint32_t type)
{
        switch (type) {
        case PGCODEC_OID_TEXT:
        case PGCODEC_OID_VARCHAR:
        case PGCODEC_OID_BPCHAR:
        case PGCODEC_OID_NAME:
        case PGCODEC_OID_UNKNOWN:
        case PGCODEC_OID_JSON:
                return true;
        default:
                return false;
        }
}

bool pgcodec_type_has_binary(uint32_t type)
{
        switch (type) {
        case PGCODEC_OID_BOOL:
        case PGCODEC_OID_BYTEA:
        case PGCODEC_OID_INT2:
        case PGCODEC_OID_INT4:
        case PGCODEC_OID_INT8:
        case PGCODEC_OID_OID:
        case PGCODEC_OID_FLOAT4:
        case PGCODEC_OID_FLOAT8:
        case PGCODEC_OID_JSONB:
        case PGCODEC_OID_NUMERIC:
                return true;
        default:
                return type_is_textual(type);
        }
}

/* Copy a short text value into a C string with surrounding whitespace trimmed, as
 * PostgreSQL's numeric input functions allow.  -EINVAL when empty or too long. */
static int text_token(const char *text, size_t len, char *out, size_t size)
{
        while (len > 0 && isspace((unsigned char)text[0]))
                text++, len--;
        while (len > 0 && isspace((unsigned char)text[len - 1]))
                len--;
        if (len == 0 || len >= size || memchr(text, 0, len))
                return -EINVAL;
        memcpy(out, text, len);
        out[len] = '\0';
        return 0;
}

static int text_to_int(const char *text, size_t len, long long min, long long max,
                       long long *ret)
{
        char s[32], *end;
        long long v;

        if (text_token(text, len, s, sizeof(s)) < 0)
                return -EINVAL;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno != 0 || *end != '\0' || end == s || v < min || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int text_to_bool(const char *text, size_t len, bool *ret)
{
        static const struct { const char *s; bool v; } words[] = {
                { "t", true }, { "true", true }, { "y", true }, { "yes", true },
                { "on", true }, { "1", true },
                { "f", false }, { "false", false }, { "n", false }, { "no", false },
                { "off", false }, { "0", false },
        };
        char s[8];

        if (text_token(text, len, s, sizeof(s)) < 0)
                return -EINVAL;
        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
                if (strcasecmp(s, words[i].s) == 0) {
                        *ret = words[i].v;
                        return 0;
                }
        return -EINVAL;
}

static int hexval(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* PostgreSQL's numeric_send() of a numeric's text (as numeric_out() prints it, no
 * exponent): int16 ndigits, int16 weight, uint16 sign (0x0000, 0x4000 negative),
 * uint16 dscale, then ndigits base-10000 digits, leading and trailing zero digits left
 * out (zero is no digits, weight 0). */
static int numeric_text_to_binary(const char *text, size_t len, struct pgcodec_buf *b)
{
        char s[96], dig[160];
        const char *p = s, *point;
        size_t ni, nf, at = 0;
        int16_t groups[40];
        int ng = 0, lead = 0, weight;
        bool neg;

        if (text_token(text, len, s, sizeof(s)) < 0)
                return -EINVAL;
        neg = *p == '-';
        p += neg || *p == '+';
        point = strchr(p, '.');
        ni = point ? (size_t)(point - p) : strlen(p);
        nf = point ? strlen(point + 1) : 0;
        if (ni == 0 || strspn(p, "0123456789") != ni ||
            (point && strspn(point + 1, "0123456789") != nf) || nf > 0xffff)
                return -EINVAL;
        /* The digits, the integer part left-padded and the fraction right-padded to
         * whole groups of 4. */
        for (size_t k = 0; k < (4 - ni % 4) % 4; k++)
                dig[at++] = '0';
        memcpy(dig + at, p, ni);
        at += ni;
        weight = (int)(at / 4) - 1;
        if (nf)
                memcpy(dig + at, point + 1, nf);
        at += nf;
        while (at % 4)
                dig[at++] = '0';
        if (at / 4 > sizeof(groups) / sizeof(groups[0]))
                return -EINVAL;
        for (size_t g = 0; g < at / 4; g++)
                groups[ng++] = (int16_t)((dig[4 * g] - '0') * 1000 + (dig[4 * g + 1] - '0') * 100 +
                                         (dig[4 * g + 2] - '0') * 10 + (dig[4 * g + 3] - '0'));
        while (lead < ng && groups[lead] == 0)
                lead++, weight--;
        while (ng > lead && groups[ng - 1] == 0)
                ng--;
        if (lead == ng)
                weight = 0, neg = false;
        pgcodec_put_i16(b, (int16_t)(ng - lead));
        pgcodec_put_i16(b, (int16_t)weight);
        pgcodec_put_i16(b, neg ? 0x4000 : 0);
        pgcodec_put_i16(b, (int16_t)nf);
        for (int g = lead; g < ng; g++)
                pgcodec_put_i16(b, groups[g]);
        return 0;
}

/* numeric_recv(): the binary form back to numeric_out()'s text. */
static int numeric_binary_to_text(const uint8_t *data, size_t len, struct pgcodec_buf *b)
{
        int ndigits, weight, sign, dscale;
        char s[192];    /* sign, 21 groups of 4, the point, 60 places */
        size_t at = 0;

        if (len < 8)
                return -EINVAL;
        ndigits = (int16_t)get_be16(data);
        weight = (int16_t)get_be16(data + 2);
        sign = get_be16(data + 4);
        dscale = get_be16(data + 6);
        if (ndigits < 0 || len != 8 + 2 * (size_t)ndigits || (sign != 0 && sign != 0x4000) ||
            weight > 20 || weight < -20 || dscale > 60)
                return -EINVAL;
        for (int i = 0; i < ndigits; i++)
                if (get_be16(data + 8 + 2 * i) > 9999)
                        return -EINVAL;
        if (sign)
                s[at++] = '-';
        if (weight < 0)
                s[at++] = '0';
        for (int w = weight; w >= 0; w--) {
                int i = weight - w;
                unsigned d = i < ndigits ? get_be16(data + 8 + 2 * i) : 0;

                at += (size_t)snprintf(s + at, sizeof(s) - at, w == weight ? "%u" : "%04u", d);
        }
        if (dscale > 0) {
                int left = dscale;

                s[at++] = '.';
                for (int w = -1; left > 0; w--) {
                        int i = weight - w;
                        unsigned d = i >= 0 && i < ndigits ? get_be16(data + 8 + 2 * i) : 0;
                        char g[8];

                        snprintf(g, sizeof(g), "%04u", d);
                        for (int k = 0; k < 4 && left > 0; k++, left--)
                                s[at++] = g[k];
                }
        }
        pgcodec_put_bytes(b, s, at);
        pgcodec_put_u8(b, 0);
        return 0;
}

int pgcodec_text_to_binary(uint32_t type, const char *text, size_t len, struct pgcodec_buf *b)
{
        long long v;
        bool bv;

        assert(text || len == 0);
        assert(b);

        if (type_is_textual(type)) {
                pgcodec_put_bytes(b, text, len);
                return 0;
        }
        switch (type) {
        case PGCODEC_OID_BOOL:
                if (text_to_bool(text, len, &bv) < 0)
                        return -EINVAL;
                pgcodec_put_u8(b, bv);
                return 0;
        case PGCODEC_OID_INT2:
                if (text_to_int(text, len, INT16_MIN, INT16_MAX, &v) < 0)
                        return -EINVAL;
                pgcodec_put_i16(b, (int16_t)v);
                return 0;
        case PGCODEC_OID_INT4:
                if (text_to_int(text, len, INT32_MIN, INT32_MAX, &v) < 0)
                        return -EINVAL;
                pgcodec_put_i32(b, (int32_t)v);
                return 0;
        case PGCODEC_OID_OID:
                if (text_to_int(text, len, 0, UINT32_MAX, &v) < 0)
                        return -EINVAL;
                pgcodec_put_i32(b, (int32_t)(uint32_t)v);
                return 0;
        case PGCODEC_OID_INT8:
                if (text_to_int(text, len, INT64_MIN, INT64_MAX, &v) < 0)
                        return -EINVAL;
                pgcodec_put_i32(b, (int32_t)((uint64_t)v >> 32));
                pgcodec_put_i32(b, (int32_t)(uint32_t)(uint64_t)v);
                return 0;
        case PGCODEC_OID_FLOAT4:
        case PGCODEC_OID_FLOAT8: {
                char s[64], *end;
                double d;

                if (text_token(text, len, s, sizeof(s)) < 0)
                        return -EINVAL;
                errno = 0;
                d = type == PGCODEC_OID_FLOAT4 ? strtof(s, &end) : strtod(s, &end);
                /* ERANGE for an underflow to a denormal is fine; an overflow is not. */
                if (*end != '\0' || end == s || (errno == ERANGE && isinf(d)))
                        return -EINVAL;
                if (type == PGCODEC_OID_FLOAT4) {
                        float fv = (float)d;
                        uint32_t u;

                        memcpy(&u, &fv, sizeof(u));
                        pgcodec_put_i32(b, (int32_t)u);
                } else {
                        uint64_t u;

                        memcpy(&u, &d, sizeof(u));
                        pgcodec_put_i32(b, (int32_t)(u >> 32));
                        pgcodec_put_i32(b, (int32_t)(uint32_t)u);
                }
                return 0;
        }
        case PGCODEC_OID_BYTEA: {
                size_t start = b->len;

                /* The hex format (bytea_output = hex, the default). */
                if (len < 2 || text[0] != '\\' || (text[1] != 'x' && text[1] != 'X') || len % 2)
                        return -EINVAL;
                if (pgcodec_buf_reserve(b, (len - 2) / 2) < 0)
                        return 0;       /* b->error tells */
                for (size_t i = 2; i < len; i += 2) {
                        int hi = hexval(text[i]), lo = hexval(text[i + 1]);

                        if (hi < 0 || lo < 0) {
                                pgcodec_buf_truncate(b, start);
                                return -EINVAL;
                        }
                        pgcodec_put_u8(b, (uint8_t)(hi << 4 | lo));
                }
                return 0;
        }
        case PGCODEC_OID_JSONB:
                pgcodec_put_u8(b, 1);   /* jsonb binary format version */
                pgcodec_put_bytes(b, text, len);
                return 0;
        case PGCODEC_OID_NUMERIC:
                return numeric_text_to_binary(text, len, b);
        default:
                return -EOPNOTSUPP;
        }
}

/* The shortest "%.*g" that reads back as v (PostgreSQL's extra_float_digits = 1). */
static void format_float(double v, bool single, char *out, size_t size)
{
        if (isnan(v)) {
                snprintf(out, size, "NaN");
                return;
        }
        if (isinf(v)) {
                snprintf(out, size, v > 0 ? "Infinity" : "-Infinity");
                return;
        }
        for (int p = 1; p <= (single ? 9 : 17); p++) {
                snprintf(out, size, "%.*g", p, v);
                if (single ? strtof(out, NULL) == (float)v : strtod(out, NULL) == v)
                        return;
        }
}

static void put_text(struct pgcodec_buf *b, const char *s)
{
        pgcodec_put_bytes(b, s, strlen(s) + 1);
}

int pgcodec_binary_to_text(uint32_t type, const uint8_t *data, size_t len, struct pgcodec_buf *b)
{
        char s[64];

        assert(data || len == 0);
        assert(b);

        if (type_is_textual(type) || type == PGCODEC_OID_JSONB) {
                if (type == PGCODEC_OID_JSONB) {
                        if (len < 1 || data[0] != 1)
                                return -EINVAL;
                        data++, len--;
                }
                if (len > 0 && memchr(data, 0, len))
                        return -EINVAL;
                pgcodec_put_bytes(b, data, len);
                pgcodec_put_u8(b, 0);
                return 0;
        }
        switch (type) {
        case PGCODEC_OID_BOOL:
                if (len != 1)
                        return -EINVAL;
                put_text(b, data[0] ? "t" : "f");
                return 0;
        case PGCODEC_OID_INT2:
                if (len != 2)
                        return -EINVAL;
                snprintf(s, sizeof(s), "%d", (int16_t)get_be16(data));
                put_text(b, s);
                return 0;
        case PGCODEC_OID_INT4:
                if (len != 4)
                        return -EINVAL;
                snprintf(s, sizeof(s), "%d", (int32_t)get_be32(data));
                put_text(b, s);
                return 0;
        case PGCODEC_OID_OID:
                if (len != 4)
                        return -EINVAL;
                snprintf(s, sizeof(s), "%u", get_be32(data));
                put_text(b, s);
                return 0;
        case PGCODEC_OID_INT8:
                if (len != 8)
                        return -EINVAL;
                snprintf(s, sizeof(s), "%lld", (long long)(int64_t)get_be64(data));
                put_text(b, s);
                return 0;
        case PGCODEC_OID_FLOAT4: {
                uint32_t u;
                float f;

                if (len != 4)
                        return -EINVAL;
                u = get_be32(data);
                memcpy(&f, &u, sizeof(f));
                format_float(f, true, s, sizeof(s));
                put_text(b, s);
                return 0;
        }
        case PGCODEC_OID_FLOAT8: {
                uint64_t u;
                double d;

                if (len != 8)
                        return -EINVAL;
                u = get_be64(data);
                memcpy(&d, &u, sizeof(d));
                format_float(d, false, s, sizeof(s));
                put_text(b, s);
                return 0;
        }
        case PGCODEC_OID_BYTEA: {
                static const char hex[] = "0123456789abcdef";

                if (len > (SIZE_MAX - 3) / 2) {
                        b->error = b->error ? b->error : -ENOBUFS;
                        return 0;
                }
                if (pgcodec_buf_reserve(b, 3 + 2 * len) < 0)
                        return 0;
                pgcodec_put_bytes(b, "\\x", 2);
                for (size_t i = 0; i < len; i++) {
                        uint8_t pair[2] = { (uint8_t)hex[data[i] >> 4],
                                            (uint8_t)hex[data[i] & 15] };
                        pgcodec_put_bytes(b, pair, 2);
                }
                pgcodec_put_u8(b, 0);
                return 0;
        }
        case PGCODEC_OID_NUMERIC:
                return numeric_binary_to_text(data, len, b);
        default:
                return -EOPNOTSUPP;
        }
}
