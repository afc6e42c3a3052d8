/* row.c -- the row encoding, datum text I/O, comparison, SQL errors and the arena.
 *
 * The layout is in row.h.  Canonical encoding is what lets storage consolidate by bytes,
 * so the decoder is strict: unknown tags, short data, trailing bytes and column counts
 * that do not match the datums are all -EBADMSG.  Every read is bounds-checked against
 * the length given by the caller; nothing here trusts a length read from the bytes.
 */
#include "row.h"

#include <assert.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
        TAG_NULL = 0x00,
        TAG_FALSE = 0x01,
        TAG_TRUE = 0x02,
        TAG_INT = 0x03,
        TAG_TEXT = 0x04,
        TAG_NUMERIC = 0x05,
};

#define NUMERIC_BYTES 17        /* u8 scale, i128 coefficient */

/* ---- Errors. ---- */

static void error_vset(char *buf, size_t size, const char *fmt, va_list ap)
{
        int n = vsnprintf(buf, size, fmt, ap);

        if (n < 0)
                buf[0] = '\0';
}

int row_error_set(struct row_error *err, int r, const char *sqlstate, const char *fmt, ...)
{
        va_list ap;

        assert(r < 0);
        assert(sqlstate && strlen(sqlstate) == 5);
        if (!err)
                return r;
        memcpy(err->sqlstate, sqlstate, 6);
        va_start(ap, fmt);
        error_vset(err->message, sizeof(err->message), fmt, ap);
        va_end(ap);
        err->detail[0] = '\0';
        err->hint[0] = '\0';
        err->position = 0;
        return r;
}

void row_error_detail(struct row_error *err, const char *fmt, ...)
{
        va_list ap;

        if (!err)
                return;
        va_start(ap, fmt);
        error_vset(err->detail, sizeof(err->detail), fmt, ap);
        va_end(ap);
}

void row_error_hint(struct row_error *err, const char *fmt, ...)
{
        va_list ap;

        if (!err)
                return;
        va_start(ap, fmt);
        error_vset(err->hint, sizeof(err->hint), fmt, ap);
        va_end(ap);
}

int row_error_oom(struct row_error *err)
{
        return row_error_set(err, -ENOMEM, "53200", "out of memory");
}

/* ---- Types. ---- */

bool row_type_valid(int type)
{
        switch (type) {
        case ROW_TYPE_BOOL:
        case ROW_TYPE_INT8:
        case ROW_TYPE_INT4:
        case ROW_TYPE_TEXT:
        case ROW_TYPE_NUMERIC:
        case ROW_TYPE_BPCHAR:
        case ROW_TYPE_BOOL_ARRAY:
        case ROW_TYPE_INT4_ARRAY:
        case ROW_TYPE_INT8_ARRAY:
        case ROW_TYPE_TEXT_ARRAY:
                return true;
        default:
                return false;
        }
}

const char *row_type_name(enum row_type type)
{
        switch (type) {
        case ROW_TYPE_BOOL:
                return "boolean";
        case ROW_TYPE_INT8:
                return "bigint";
        case ROW_TYPE_INT4:
                return "integer";
        case ROW_TYPE_TEXT:
                return "text";
        case ROW_TYPE_NUMERIC:
                return "numeric";
        case ROW_TYPE_BPCHAR:
                return "character";
        case ROW_TYPE_BOOL_ARRAY:
                return "boolean[]";
        case ROW_TYPE_INT4_ARRAY:
                return "integer[]";
        case ROW_TYPE_INT8_ARRAY:
                return "bigint[]";
        case ROW_TYPE_TEXT_ARRAY:
                return "text[]";
        default:
                return "unknown";
        }
}

bool row_datum_fits(const struct row_datum *d, enum row_type type)
{
        switch (type) {
        case ROW_TYPE_BOOL:
                return d->kind == ROW_KIND_BOOL;
        case ROW_TYPE_INT8:
                return d->kind == ROW_KIND_INT;
        case ROW_TYPE_INT4:
                return d->kind == ROW_KIND_INT && d->i >= INT32_MIN && d->i <= INT32_MAX;
        case ROW_TYPE_NUMERIC:
                return d->kind == ROW_KIND_NUMERIC;
        case ROW_TYPE_TEXT:
        case ROW_TYPE_BPCHAR:
        case ROW_TYPE_BOOL_ARRAY:
        case ROW_TYPE_INT4_ARRAY:
        case ROW_TYPE_INT8_ARRAY:
        case ROW_TYPE_TEXT_ARRAY:
                return d->kind == ROW_KIND_TEXT;
        default:
                return false;
        }
}

/* ---- Encoding. ---- */

static void le16_put(uint8_t *p, uint16_t v)
{
        p[0] = (uint8_t)v;
        p[1] = (uint8_t)(v >> 8);
}

static uint16_t le16_get(const uint8_t *p)
{
        return (uint16_t)(p[0] | p[1] << 8);
}

static void le32_put_(uint8_t *p, uint32_t v)
{
        for (int i = 0; i < 4; i++, v >>= 8)
                p[i] = (uint8_t)v;
}

static uint32_t le32_get_(const uint8_t *p)
{
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
               (uint32_t)p[3] << 24;
}

static void le64_put(uint8_t *p, uint64_t v)
{
        for (int i = 0; i < 8; i++, v >>= 8)
                p[i] = (uint8_t)v;
}

static uint64_t le64_get(const uint8_t *p)
{
        uint64_t v = 0;

        for (int i = 7; i >= 0; i--)
                v = v << 8 | p[i];
        return v;
}

int64_t row_encoded_size(const struct row_datum *datums, size_t n)
{
        int64_t size = 2;

        if (n > UINT16_MAX)
                return -E2BIG;
        for (size_t i = 0; i < n; i++) {
                switch (datums[i].kind) {
                case ROW_KIND_NULL:
                case ROW_KIND_BOOL:
                        size += 1;
                        break;
                case ROW_KIND_INT:
                        size += 9;
                        break;
                case ROW_KIND_TEXT:
                        size += 5 + (int64_t)datums[i].text.len;
                        break;
                case ROW_KIND_NUMERIC:
                        size += 1 + NUMERIC_BYTES;
                        break;
                default:
                        assert(!"bad datum kind");
                        return -EINVAL;
                }
        }
        return size;
}

size_t row_encode_into(const struct row_datum *datums, size_t n, uint8_t *buf)
{
        uint8_t *p = buf;

        assert(n <= UINT16_MAX);
        le16_put(p, (uint16_t)n);
        p += 2;
        for (size_t i = 0; i < n; i++) {
                const struct row_datum *d = &datums[i];

                switch (d->kind) {
                case ROW_KIND_NULL:
                        *p++ = TAG_NULL;
                        break;
                case ROW_KIND_BOOL:
                        *p++ = d->b ? TAG_TRUE : TAG_FALSE;
                        break;
                case ROW_KIND_INT:
                        *p++ = TAG_INT;
                        le64_put(p, (uint64_t)d->i);
                        p += 8;
                        break;
                case ROW_KIND_TEXT:
                        *p++ = TAG_TEXT;
                        le32_put_(p, d->text.len);
                        p += 4;
                        if (d->text.len)
                                memcpy(p, d->text.ptr, d->text.len);
                        p += d->text.len;
                        break;
                case ROW_KIND_NUMERIC:
                        *p++ = TAG_NUMERIC;
                        *p++ = d->num.scale;
                        le64_put(p, d->num.lo);
                        le64_put(p + 8, (uint64_t)d->num.hi);
                        p += 16;
                        break;
                default:
                        assert(!"bad datum kind");
                }
        }
        return (size_t)(p - buf);
}

int row_encode(const struct row_datum *datums, size_t n, uint8_t **ret, size_t *ret_len)
{
        int64_t size = row_encoded_size(datums, n);
        uint8_t *buf;

        if (size < 0)
                return (int)size;
        buf = malloc((size_t)size);
        if (!buf)
                return -ENOMEM;
        *ret_len = row_encode_into(datums, n, buf);
        assert(*ret_len == (size_t)size);
        *ret = buf;
        return 0;
}

/* ---- Decoding. ---- */

/* Decode one datum at *pos; the only place that reads datum bytes. */
static int datum_read(const uint8_t *p, size_t len, size_t *pos, struct row_datum *ret)
{
        size_t at = *pos;
        uint32_t n;

        if (at >= len)
                return -EBADMSG;
        switch (p[at++]) {
        case TAG_NULL:
                *ret = ROW_DATUM_NULL;
                break;
        case TAG_FALSE:
                *ret = ROW_DATUM_BOOL(false);
                break;
        case TAG_TRUE:
                *ret = ROW_DATUM_BOOL(true);
                break;
        case TAG_INT:
                if (len - at < 8)
                        return -EBADMSG;
                *ret = ROW_DATUM_INT((int64_t)le64_get(p + at));
                at += 8;
                break;
        case TAG_TEXT:
                if (len - at < 4)
                        return -EBADMSG;
                n = le32_get_(p + at);
                at += 4;
                if (len - at < n)
                        return -EBADMSG;
                *ret = ROW_DATUM_TEXT((const char *)p + at, n);
                at += n;
                break;
        case TAG_NUMERIC: {
                __int128 c;
                const __int128 lim = (__int128)10000000000000000000ull * 10000000000000000000ull;

                if (len - at < NUMERIC_BYTES || p[at] > ROW_NUMERIC_MAX_SCALE)
                        return -EBADMSG;
                *ret = row_numeric_make(0, p[at]);
                ret->num.lo = le64_get(p + at + 1);
                ret->num.hi = (int64_t)le64_get(p + at + 9);
                /* Canonical: |coef| < 10^38 (lim), so every value has one encoding. */
                c = row_numeric_coef(ret);
                if (c >= lim || c <= -lim)
                        return -EBADMSG;
                at += NUMERIC_BYTES;
                break;
        }
        default:
                return -EBADMSG;
        }
        *pos = at;
        return 0;
}

int row_decode(const void *row, size_t len, struct row_datum *datums, size_t n_datums)
{
        const uint8_t *p = row;
        size_t pos = 2;
        unsigned ncols;

        if (!p || len < 2)
                return -EBADMSG;
        ncols = le16_get(p);
        for (unsigned i = 0; i < ncols; i++) {
                struct row_datum d;
                int r = datum_read(p, len, &pos, &d);

                if (r < 0)
                        return r;
                if (i < n_datums)
                        datums[i] = d;
        }
        if (pos != len)
                return -EBADMSG;
        if (ncols > n_datums)
                return -E2BIG;
        return (int)ncols;
}

int row_validate(const void *row, size_t len)
{
        int r = row_decode(row, len, NULL, 0);

        return r == -E2BIG ? le16_get(row) : r;
}

int row_check(const void *row, size_t len, const enum row_type *types, size_t n_types)
{
        const uint8_t *p = row;
        size_t pos = 2;

        if (!p || len < 2 || le16_get(p) != n_types)
                return -EBADMSG;
        for (size_t i = 0; i < n_types; i++) {
                struct row_datum d;
                int r = datum_read(p, len, &pos, &d);

                if (r < 0)
                        return r;
                if (d.kind != ROW_KIND_NULL && !row_datum_fits(&d, types[i]))
                        return -EBADMSG;
        }
        return pos == len ? 0 : -EBADMSG;
}

/* ---- Comparison. ---- */

static int cmp_i64(int64_t a, int64_t b)
{
        return (a > b) - (a < b);
}

int row_datum_compare(const struct row_datum *a, const struct row_datum *b)
{
        int c;

        if (a->kind != b->kind) {
                if (a->kind == ROW_KIND_NULL)
                        return 1;
                if (b->kind == ROW_KIND_NULL)
                        return -1;
                return cmp_i64(a->kind, b->kind);
        }
        switch (a->kind) {
        case ROW_KIND_NULL:
                return 0;
        case ROW_KIND_BOOL:
                return (int)a->b - (int)b->b;
        case ROW_KIND_INT:
                return cmp_i64(a->i, b->i);
        case ROW_KIND_TEXT:
                c = memcmp(a->text.ptr, b->text.ptr,
                           a->text.len < b->text.len ? a->text.len : b->text.len);
                if (c)
                        return c < 0 ? -1 : 1;
                return cmp_i64(a->text.len, b->text.len);
        case ROW_KIND_NUMERIC:
                /* By value, then by scale: equal bytes exactly when 0 (row.h). */
                c = row_numeric_cmp(a, b);
                return c ? c : cmp_i64(a->num.scale, b->num.scale);
        default:
                assert(!"bad datum kind");
                return 0;
        }
}

static int bytes_compare(const void *a, size_t alen, const void *b, size_t blen)
{
        int c = memcmp(a, b, alen < blen ? alen : blen);

        if (c)
                return c < 0 ? -1 : 1;
        return cmp_i64((int64_t)alen, (int64_t)blen);
}

int row_compare(const void *a, size_t alen, const void *b, size_t blen)
{
        const uint8_t *pa = a, *pb = b;
        size_t ia = 2, ib = 2;
        int va = row_validate(a, alen), vb = row_validate(b, blen);

        if (va < 0 || vb < 0) {
                if (va >= 0)
                        return -1;
                if (vb >= 0)
                        return 1;
                return bytes_compare(a, alen, b, blen);
        }
        for (int i = 0; i < va && i < vb; i++) {
                struct row_datum da, db;
                int c;

                /* Both rows validated above: reads cannot fail. */
                if (datum_read(pa, alen, &ia, &da) < 0 || datum_read(pb, blen, &ib, &db) < 0)
                        assert(!"validated row failed to decode");
                c = row_datum_compare(&da, &db);
                if (c)
                        return c;
        }
        return cmp_i64(va, vb);
}

/* ---- Text format. ---- */

static const char digit_pairs[201] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";

int row_datum_format(const struct row_datum *d, char scratch[static ROW_TEXT_SCRATCH],
                     const char **ret, size_t *ret_len)
{
        int n;

        switch (d->kind) {
        case ROW_KIND_NULL:
                return 1;
        case ROW_KIND_BOOL:
                *ret = d->b ? "t" : "f";
                *ret_len = 1;
                return 0;
        case ROW_KIND_INT: {
                /* By hand, right-aligned in scratch: snprintf's format machinery was 30%
                 * of the adapter's CPU turning a 100,000-row result into DataRows. */
                uint64_t mag = d->i < 0 ? -(uint64_t)d->i : (uint64_t)d->i;
                char *p = scratch + ROW_TEXT_SCRATCH - 1;

                static_assert(ROW_TEXT_SCRATCH >= 21, "scratch holds -9223372036854775808 and a NUL");
                *p = '\0';
                /* Two digits per division: timestamps (13 digits) are most of the
                 * integers a frontier or a catalog relation returns. */
                for (; mag >= 100; mag /= 100) {
                        p -= 2;
                        memcpy(p, &digit_pairs[(mag % 100) * 2], 2);
                }
                if (mag >= 10) {
                        p -= 2;
                        memcpy(p, &digit_pairs[mag * 2], 2);
                } else
                        *--p = (char)('0' + mag);
                if (d->i < 0)
                        *--p = '-';
                n = (int)(scratch + ROW_TEXT_SCRATCH - 1 - p);
                *ret = p;
                *ret_len = (size_t)n;
                return 0;
        }
        case ROW_KIND_TEXT:
                *ret = d->text.len ? d->text.ptr : "";
                *ret_len = d->text.len;
                return 0;
        case ROW_KIND_NUMERIC:
                *ret_len = row_numeric_format(d, scratch);
                *ret = scratch;
                return 0;
        default:
                assert(!"bad datum kind");
                return -EINVAL;
        }
}

/* The input text in an error message, quoted the way PostgreSQL prints it. */
#define QUOTE_MAX 200

static void quote_input(char *buf, size_t size, const char *text, size_t len)
{
        size_t n = len < QUOTE_MAX ? len : QUOTE_MAX;

        snprintf(buf, size, "%.*s%s", (int)n, text, n < len ? "..." : "");
}

static int parse_int(enum row_type type, const char *text, size_t len, struct row_datum *ret,
                     struct row_error *err)
{
        const char *name = type == ROW_TYPE_INT4 ? "integer" : "bigint";
        int64_t lo = type == ROW_TYPE_INT4 ? INT32_MIN : INT64_MIN;
        int64_t hi = type == ROW_TYPE_INT4 ? INT32_MAX : INT64_MAX;
        char shown[QUOTE_MAX + 4];
        size_t i = 0, end = len;
        bool neg = false;
        uint64_t mag = 0, limit;

        while (i < end && isspace((unsigned char)text[i]))
                i++;
        while (end > i && isspace((unsigned char)text[end - 1]))
                end--;
        if (i < end && (text[i] == '+' || text[i] == '-'))
                neg = text[i++] == '-';
        if (i == end)
                goto syntax;
        /* The magnitude may reach |lo| = hi + 1 for a negative number.  Like PostgreSQL's
         * pg_strtoint32(), overflow is reported as soon as it happens, before any junk
         * that follows. */
        limit = neg ? (uint64_t)hi + 1 : (uint64_t)hi;
        for (; i < end; i++) {
                unsigned digit;

                if (!isdigit((unsigned char)text[i]))
                        goto syntax;
                digit = (unsigned)(text[i] - '0');
                if (mag > (limit - digit) / 10) {
                        quote_input(shown, sizeof(shown), text, len);
                        return row_error_set(err, -EINVAL, "22003",
                                             "value \"%s\" is out of range for type %s",
                                             shown, name);
                }
                mag = mag * 10 + digit;
        }
        if (neg)
                *ret = ROW_DATUM_INT(mag == (uint64_t)hi + 1 ? lo : -(int64_t)mag);
        else
                *ret = ROW_DATUM_INT((int64_t)mag);
        return 0;
syntax:
        quote_input(shown, sizeof(shown), text, len);
        return row_error_set(err, -EINVAL, "22P02", "invalid input syntax for type %s: \"%s\"",
                             name, shown);
}

/* PostgreSQL's parse_bool_with_len(): whole words or unique prefixes. */
static int parse_bool(const char *text, size_t len, struct row_datum *ret, struct row_error *err)
{
        static const struct {
                const char *word;
                size_t min;     /* shortest unique prefix */
                bool value;
        } words[] = {
                { "true", 1, true }, { "false", 1, false }, { "yes", 1, true },
                { "no", 1, false }, { "on", 2, true }, { "off", 2, false },
                { "1", 1, true }, { "0", 1, false },
        };
        char shown[QUOTE_MAX + 4];
        size_t i = 0, end = len;

        while (i < end && isspace((unsigned char)text[i]))
                i++;
        while (end > i && isspace((unsigned char)text[end - 1]))
                end--;
        for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
                size_t n = end - i;

                if (n >= words[w].min && n <= strlen(words[w].word) &&
                    strncasecmp(text + i, words[w].word, n) == 0) {
                        *ret = ROW_DATUM_BOOL(words[w].value);
                        return 0;
                }
        }
        quote_input(shown, sizeof(shown), text, len);
        return row_error_set(err, -EINVAL, "22P02",
                             "invalid input syntax for type boolean: \"%s\"", shown);
}

/* Well-formed UTF-8 without NUL, as PostgreSQL's pg_verify_mbstr() requires. */
static bool utf8_valid(const char *text, size_t len)
{
        const unsigned char *s = (const unsigned char *)text;
        size_t i = 0;

        while (i < len) {
                unsigned c = s[i], n;
                uint32_t cp;

                if (c == 0)
                        return false;
                if (c < 0x80) {
                        i++;
                        continue;
                }
                if (c >= 0xc2 && c <= 0xdf)
                        n = 1, cp = c & 0x1f;
                else if (c >= 0xe0 && c <= 0xef)
                        n = 2, cp = c & 0x0f;
                else if (c >= 0xf0 && c <= 0xf4)
                        n = 3, cp = c & 0x07;
                else
                        return false;
                if (len - i <= n)
                        return false;
                for (unsigned k = 1; k <= n; k++) {
                        if ((s[i + k] & 0xc0) != 0x80)
                                return false;
                        cp = cp << 6 | (s[i + k] & 0x3f);
                }
                /* Overlong forms, surrogates and code points past U+10FFFF. */
                if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
                    (cp >= 0xd800 && cp <= 0xdfff))
                        return false;
                i += n + 1;
        }
        return true;
}

int row_datum_parse(enum row_type type, const char *text, size_t len, struct row_datum *ret,
                    struct row_error *err)
{
        assert(text || len == 0);
        if (len > UINT32_MAX)
                return row_error_set(err, -EINVAL, "54000", "string too long (%zu bytes)", len);
        switch (type) {
        case ROW_TYPE_BOOL:
                return parse_bool(text, len, ret, err);
        case ROW_TYPE_INT4:
        case ROW_TYPE_INT8:
                return parse_int(type, text, len, ret, err);
        case ROW_TYPE_NUMERIC:
                return row_numeric_parse(text, len, ret, err);
        case ROW_TYPE_TEXT:
        case ROW_TYPE_BPCHAR:   /* unbounded: as written, no padding */
                if (!utf8_valid(text, len))
                        return row_error_set(err, -EINVAL, "22021",
                                             "invalid byte sequence for encoding \"UTF8\"");
                *ret = ROW_DATUM_TEXT(len ? text : "", (uint32_t)len);
                return 0;
        default:
                /* Arrays too: row_array_parse(). */
                return row_error_set(err, -EINVAL, "XX000", "unknown type %d", (int)type);
        }
}

/* ---- Rendering rows for messages and tests. ---- */

/* A growing string; -ENOMEM is sticky in `failed`. */
struct strbuf {
        char *s;
        size_t len, cap;
        bool failed;
};

static void sb_add(struct strbuf *b, const char *p, size_t n)
{
        if (b->failed)
                return;
        if (b->len + n + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 64;
                char *s;

                while (cap < b->len + n + 1)
                        cap *= 2;
                s = realloc(b->s, cap);
                if (!s) {
                        b->failed = true;
                        return;
                }
                b->s = s;
                b->cap = cap;
        }
        memcpy(b->s + b->len, p, n);
        b->len += n;
        b->s[b->len] = '\0';
}

int row_to_string(const void *row, size_t len, char **ret)
{
        struct strbuf b = { 0 };
        const uint8_t *p = row;
        size_t pos = 2;
        int ncols = row_validate(row, len);

        if (ncols < 0)
                return ncols;
        sb_add(&b, "(", 1);
        for (int i = 0; i < ncols; i++) {
                char scratch[ROW_TEXT_SCRATCH];
                struct row_datum d;
                const char *s;
                size_t n;

                if (datum_read(p, len, &pos, &d) < 0)
                        assert(!"validated row failed to decode");
                if (i)
                        sb_add(&b, ",", 1);
                if (row_datum_format(&d, scratch, &s, &n) == 1) {
                        sb_add(&b, "NULL", 4);
                        continue;
                }
                if (d.kind != ROW_KIND_TEXT) {
                        sb_add(&b, s, n);
                        continue;
                }
                sb_add(&b, "'", 1);
                for (size_t k = 0; k < n; k++)
                        sb_add(&b, s[k] == '\'' ? "''" : &s[k], s[k] == '\'' ? 2 : 1);
                sb_add(&b, "'", 1);
        }
        sb_add(&b, ")", 1);
        if (b.failed) {
                free(b.s);
                return -ENOMEM;
        }
        *ret = b.s;
        return 0;
}

void row_format_failing(const struct row_datum *datums, size_t n, char *buf, size_t size)
{
        size_t at = 0;

        assert(size > 0);
        buf[0] = '\0';
        for (size_t i = 0; i < n && at < size; i++) {
                char scratch[ROW_TEXT_SCRATCH];
                const char *s = "null";
                size_t len = 4;
                int w;

                (void)row_datum_format(&datums[i], scratch, &s, &len);
                if (len > INT32_MAX)
                        len = INT32_MAX;
                w = snprintf(buf + at, size - at, "%s%.*s", i ? ", " : "", (int)len, s);
                if (w < 0)
                        break;
                at += (size_t)w;
        }
}

/* ---- Arena. ---- */

struct row_arena_chunk {
        struct row_arena_chunk *next;
        size_t size, used;
        max_align_t data[];
};

#define ARENA_CHUNK 4096u
#define ARENA_KEEP_MAX (64u << 10)

void *row_arena_alloc(struct row_arena *a, size_t size)
{
        struct row_arena_chunk *c = a->chunks;
        size_t need = (size + 7) & ~(size_t)7;

        if (need < size)
                return NULL;
        if (!c || c->size - c->used < need) {
                size_t chunk = a->chunk ? a->chunk : ARENA_CHUNK;
                size_t cap = need > chunk ? need : chunk;

                if (cap > SIZE_MAX - sizeof(*c))
                        return NULL;
                c = malloc(sizeof(*c) + cap);
                if (!c)
                        return NULL;
                c->size = cap;
                c->used = 0;
                c->next = a->chunks;
                a->chunks = c;
        }
        c->used += need;
        return (char *)c->data + c->used - need;
}

void row_arena_reset(struct row_arena *a)
{
        struct row_arena_chunk *keep = a->chunks;

        if (!keep)
                return;
        if (keep->size > ARENA_KEEP_MAX && keep->size > a->chunk) {
                row_arena_done(a);
                return;
        }
        a->chunks = keep->next;
        row_arena_done(a);
        keep->next = NULL;
        keep->used = 0;
        a->chunks = keep;
}

void row_arena_done(struct row_arena *a)
{
        while (a->chunks) {
                struct row_arena_chunk *c = a->chunks;

                a->chunks = c->next;
                free(c);
        }
}

static void *arena_pb_alloc(void *userdata, size_t size)
{
        return row_arena_alloc(userdata, size ? size : 1);
}

static void arena_pb_free(void *userdata, void *p)
{
        (void)userdata;
        (void)p;                /* everything goes at the arena's reset or done */
}

ProtobufCAllocator row_arena_allocator(struct row_arena *a)
{
        return (ProtobufCAllocator){ .alloc = arena_pb_alloc, .free = arena_pb_free,
                                     .allocator_data = a };
}
