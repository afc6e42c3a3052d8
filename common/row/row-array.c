/* row-array.c -- one-dimensional arrays of bool, int4, int8 and text (row.h, "Arrays").
 *
 * An array datum is a text datum holding the array's canonical text: PostgreSQL's
 * array_out() form of a one-dimensional array with lower bound 1.  Only
 * row_array_build() writes that form and every input goes through it, so two equal
 * arrays have equal bytes.  split() is the one reader of array text: it takes
 * PostgreSQL's array_in() syntax (whitespace, quoted elements, backslash escapes,
 * unquoted NULL) and refuses dimension decorations and nested braces with 0A000.
 */
#include "row.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum row_type row_type_element(enum row_type t)
{
        switch (t) {
        case ROW_TYPE_BOOL_ARRAY:
                return ROW_TYPE_BOOL;
        case ROW_TYPE_INT4_ARRAY:
                return ROW_TYPE_INT4;
        case ROW_TYPE_INT8_ARRAY:
                return ROW_TYPE_INT8;
        case ROW_TYPE_TEXT_ARRAY:
                return ROW_TYPE_TEXT;
        default:
                return _ROW_TYPE_INVALID;
        }
}

enum row_type row_type_array_of(enum row_type elem)
{
        switch (elem) {
        case ROW_TYPE_BOOL:
                return ROW_TYPE_BOOL_ARRAY;
        case ROW_TYPE_INT4:
                return ROW_TYPE_INT4_ARRAY;
        case ROW_TYPE_INT8:
                return ROW_TYPE_INT8_ARRAY;
        case ROW_TYPE_TEXT:
                return ROW_TYPE_TEXT_ARRAY;
        default:
                return _ROW_TYPE_INVALID;
        }
}

bool row_type_is_array(int t)
{
        return row_type_element((enum row_type)t) != _ROW_TYPE_INVALID;
}

/* Plans come over the wire: a non-array type here is a malformed plan, not a crash. */
static int not_array(struct row_error *err)
{
        return row_error_set(err, -EINVAL, "XX000", "invalid plan: array function of a non-array");
}

static bool array_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

#define SHOWN_MAX 200

static int malformed(struct row_error *err, const char *text, size_t len, const char *detail)
{
        size_t n = len < SHOWN_MAX ? len : SHOWN_MAX;

        row_error_set(err, -EINVAL, "22P02", "malformed array literal: \"%.*s%s\"", (int)n, text,
                      n < len ? "..." : "");
        row_error_detail(err, "%s", detail);
        return -EINVAL;
}

/* The elements of array text (any array_in() form, one dimension) into arena memory:
 * *ret[0..*ret_n), texts de-escaped.  Every element is checked by its type's input. */
static int split(enum row_type elem, const char *text, size_t len, struct row_arena *arena,
                 struct row_datum **ret, size_t *ret_n, struct row_error *err)
{
        struct row_datum *out = NULL;
        size_t n = 0, cap = 0, i = 0;
        char *buf;

        if (!arena)
                return row_error_set(err, -EINVAL, "XX000", "array input without an arena");
        /* An element is never longer than the text: one buffer serves them all. */
        buf = row_arena_alloc(arena, len + 1);
        if (!buf)
                return row_error_oom(err);
        while (i < len && array_space(text[i]))
                i++;
        if (i < len && text[i] == '[')
                return row_error_set(err, -EINVAL, "0A000",
                                     "array dimension decorations are not supported");
        if (i == len || text[i] != '{')
                return malformed(err, text, len,
                                 "Array value must start with \"{\" or dimension information.");
        i++;
        while (i < len && array_space(text[i]))
                i++;
        if (i < len && text[i] == '}') {
                i++;
                goto tail;
        }
        for (;;) {
                size_t blen = 0, keep = 0;
                bool quoted = false, escaped = false;
                struct row_datum d;
                int r;

                while (i < len && array_space(text[i]))
                        i++;
                if (i == len)
                        return malformed(err, text, len, "Unexpected end of input.");
                if (text[i] == '{')
                        return row_error_set(err, -EINVAL, "0A000",
                                             "multidimensional arrays are not supported");
                if (text[i] == '"') {
                        quoted = true;
                        for (i++;; i++) {
                                if (i == len)
                                        return malformed(err, text, len, "Unexpected end of input.");
                                if (text[i] == '"')
                                        break;
                                if (text[i] == '\\' && ++i == len)
                                        return malformed(err, text, len, "Unexpected end of input.");
                                buf[blen++] = text[i];
                        }
                        i++;
                        keep = blen;
                } else {
                        for (; i < len && text[i] != ',' && text[i] != '}'; i++) {
                                if (text[i] == '"')
                                        return malformed(err, text, len,
                                                         "Incorrectly quoted array element.");
                                if (text[i] == '{')
                                        return malformed(err, text, len,
                                                         "Unexpected \"{\" character.");
                                if (text[i] == '\\') {
                                        if (++i == len)
                                                return malformed(err, text, len,
                                                                 "Unexpected end of input.");
                                        escaped = true;
                                        buf[blen++] = text[i];
                                        keep = blen;
                                        continue;
                                }
                                buf[blen++] = text[i];
                                if (!array_space(text[i]))
                                        keep = blen;
                        }
                        /* Trailing unescaped whitespace is not part of the element. */
                        blen = keep;
                        if (blen == 0 && !escaped)
                                return malformed(err, text, len,
                                                 i == len ? "Unexpected end of input."
                                                 : text[i] == ',' ? "Unexpected \",\" character."
                                                                  : "Unexpected \"}\" character.");
                }
                while (i < len && array_space(text[i]))
                        i++;
                if (!quoted && !escaped && blen == 4 && strncasecmp(buf, "NULL", 4) == 0)
                        d = ROW_DATUM_NULL;
                else {
                        r = row_datum_parse(elem, blen ? buf : "", blen, &d, err);
                        if (r < 0)
                                return r;
                }
                if (n == cap) {
                        size_t ncap = cap ? 2 * cap : 8;
                        struct row_datum *p = row_arena_alloc(arena, ncap * sizeof(*p));

                        if (!p)
                                return row_error_oom(err);
                        if (n)
                                memcpy(p, out, n * sizeof(*p));
                        out = p;
                        cap = ncap;
                }
                out[n++] = d;
                /* A text element points into buf: the next one goes after it. */
                buf += blen;
                if (i == len)
                        return malformed(err, text, len, "Unexpected end of input.");
                if (text[i] == '}') {
                        i++;
                        break;
                }
                if (text[i] != ',')
                        return malformed(err, text, len,
                                         quoted ? "Incorrectly quoted array element."
                                                : "Unexpected array element.");
                i++;
        }
tail:
        while (i < len && array_space(text[i]))
                i++;
        if (i != len)
                return malformed(err, text, len, "Junk after closing right brace.");
        *ret = out;
        *ret_n = n;
        return 0;
}

/* array_out()'s rule: quote an empty text, "NULL" in any case, and a text holding a
 * brace, quote, backslash, comma or whitespace. */
static bool needs_quotes(const char *s, size_t n)
{
        if (n == 0 || (n == 4 && strncasecmp(s, "NULL", 4) == 0))
                return true;
        for (size_t i = 0; i < n; i++)
                if (s[i] == '{' || s[i] == '}' || s[i] == '"' || s[i] == '\\' || s[i] == ',' ||
                    array_space(s[i]))
                        return true;
        return false;
}

int row_array_build(enum row_type type, const struct row_datum *elems, size_t n,
                    struct row_arena *arena, struct row_datum *ret, struct row_error *err)
{
        enum row_type elem = row_type_element(type);
        size_t size = 2, at = 0;
        char *p;

        if (elem == _ROW_TYPE_INVALID)
                return not_array(err);
        if (!arena)
                return row_error_set(err, -EINVAL, "XX000", "array output without an arena");
        for (size_t i = 0; i < n; i++) {
                const struct row_datum *d = &elems[i];

                if (d->kind != ROW_KIND_NULL && !row_datum_fits(d, elem))
                        return row_error_set(err, -EINVAL, "XX000",
                                             "array element of the wrong type");
                /* The worst case of a text: every byte escaped, two quotes, a comma. */
                size += d->kind == ROW_KIND_TEXT ? 2 * (size_t)d->text.len + 3 : ROW_TEXT_SCRATCH + 1;
        }
        if (size > UINT32_MAX)
                return row_error_set(err, -EINVAL, "54000", "array too long");
        p = row_arena_alloc(arena, size);
        if (!p)
                return row_error_oom(err);
        p[at++] = '{';
        for (size_t i = 0; i < n; i++) {
                char scratch[ROW_TEXT_SCRATCH];
                const char *s;
                size_t len;

                if (i)
                        p[at++] = ',';
                if (row_datum_format(&elems[i], scratch, &s, &len) == 1) {
                        memcpy(p + at, "NULL", 4);
                        at += 4;
                        continue;
                }
                if (elems[i].kind != ROW_KIND_TEXT || !needs_quotes(s, len)) {
                        memcpy(p + at, s, len);
                        at += len;
                        continue;
                }
                p[at++] = '"';
                for (size_t k = 0; k < len; k++) {
                        if (s[k] == '"' || s[k] == '\\')
                                p[at++] = '\\';
                        p[at++] = s[k];
                }
                p[at++] = '"';
        }
        p[at++] = '}';
        assert(at <= size);
        *ret = ROW_DATUM_TEXT(p, (uint32_t)at);
        return 0;
}

int row_array_parse(enum row_type type, const char *text, size_t len, struct row_arena *arena,
                    struct row_datum *ret, struct row_error *err)
{
        enum row_type elem = row_type_element(type);
        struct row_datum *elems;
        size_t n;
        int r;

        if (elem == _ROW_TYPE_INVALID)
                return not_array(err);
        if (len > UINT32_MAX)
                return row_error_set(err, -EINVAL, "54000", "string too long (%zu bytes)", len);
        r = split(elem, text, len, arena, &elems, &n, err);
        if (r < 0)
                return r;
        return row_array_build(type, elems, n, arena, ret, err);
}

int row_array_elements(enum row_type type, const struct row_datum *d, struct row_arena *arena,
                       struct row_datum **ret, size_t *ret_n, struct row_error *err)
{
        enum row_type elem = row_type_element(type);

        if (elem == _ROW_TYPE_INVALID)
                return not_array(err);
        if (d->kind != ROW_KIND_TEXT)
                return row_error_set(err, -EINVAL, "XX000", "array datum that is not text");
        return split(elem, d->text.len ? d->text.ptr : "", d->text.len, arena, ret, ret_n, err);
}

int row_array_compare(enum row_type type, const struct row_datum *a, const struct row_datum *b,
                      struct row_arena *arena, int *ret, struct row_error *err)
{
        struct row_datum *x, *y;
        size_t nx, ny;
        int r = row_array_elements(type, a, arena, &x, &nx, err);

        if (r >= 0)
                r = row_array_elements(type, b, arena, &y, &ny, err);
        if (r < 0)
                return r;
        /* PostgreSQL's array_cmp(): element by element (NULL after any value), then the
         * shorter array first. */
        for (size_t i = 0; i < nx && i < ny; i++) {
                int c = row_datum_compare(&x[i], &y[i]);

                if (c) {
                        *ret = c;
                        return 0;
                }
        }
        *ret = (nx > ny) - (nx < ny);
        return 0;
}
