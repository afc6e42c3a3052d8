/* test-row -- common/row/row.h: the row encoding (round trips, canonical bytes, malformed
 * input), schema checks, comparison, PostgreSQL text output and input, errors, arena. */
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>

#include "row/row.h"
#include "t.h"
#include "util.h"

/* Encode, check the size, decode, and check every datum came back. */
static void roundtrip(const struct row_datum *d, size_t n)
{
        struct row_datum back[16];
        uint8_t *bytes = NULL;
        size_t len = 0;

        CU_ASSERT_FATAL(n <= ELEMENTSOF(back));
        CU_ASSERT_EQUAL_FATAL(row_encode(d, n, &bytes, &len), 0);
        CU_ASSERT_EQUAL(row_encoded_size(d, n), (int64_t)len);
        CU_ASSERT_EQUAL(row_validate(bytes, len), (int)n);
        CU_ASSERT_EQUAL_FATAL(row_decode(bytes, len, back, ELEMENTSOF(back)), (int)n);
        for (size_t i = 0; i < n; i++) {
                CU_ASSERT_EQUAL(back[i].kind, d[i].kind);
                CU_ASSERT_EQUAL(row_datum_compare(&back[i], &d[i]), 0);
        }
        free(bytes);
}

static void test_roundtrip(void)
{
        const struct row_datum d[] = {
                ROW_DATUM_NULL,
                ROW_DATUM_BOOL(false),
                ROW_DATUM_BOOL(true),
                ROW_DATUM_INT(0),
                ROW_DATUM_INT(-1),
                ROW_DATUM_INT(INT64_MIN),
                ROW_DATUM_INT(INT64_MAX),
                ROW_DATUM_TEXT("", 0),
                ROW_DATUM_TEXT("it's", 4),
                ROW_DATUM_TEXT("h\xc3\xa9llo", 6),
        };

        roundtrip(d, 0);
        for (size_t i = 1; i <= ELEMENTSOF(d); i++)
                roundtrip(d, i);
        roundtrip(d + 3, 5);
}

static void test_layout(void)
{
        const struct row_datum d[] = { ROW_DATUM_INT(1), ROW_DATUM_NULL, ROW_DATUM_BOOL(true),
                                       ROW_DATUM_TEXT("ab", 2) };
        const uint8_t expect[] = { 4, 0,  3, 1, 0, 0, 0, 0, 0, 0, 0,  0,  2,
                                   4, 2, 0, 0, 0, 'a', 'b' };
        uint8_t *bytes = NULL;
        size_t len = 0;

        /* The layout is a contract with storage: pin it byte by byte. */
        CU_ASSERT_EQUAL_FATAL(row_encode(d, ELEMENTSOF(d), &bytes, &len), 0);
        CU_ASSERT_EQUAL_FATAL(len, sizeof(expect));
        CU_ASSERT_EQUAL(memcmp(bytes, expect, len), 0);
        free(bytes);
}

static void test_canonical(void)
{
        /* Equal rows, built from different buffers, have equal bytes; different rows
         * do not. */
        char s1[] = "abc", s2[] = "abc";
        const struct row_datum a[] = { ROW_DATUM_TEXT(s1, 3), ROW_DATUM_INT(7) };
        const struct row_datum b[] = { ROW_DATUM_TEXT(s2, 3), ROW_DATUM_INT(7) };
        const struct row_datum c[] = { ROW_DATUM_TEXT(s2, 2), ROW_DATUM_INT(7) };
        uint8_t *ba, *bb, *bc;
        size_t la, lb, lc;

        CU_ASSERT_EQUAL_FATAL(row_encode(a, 2, &ba, &la), 0);
        CU_ASSERT_EQUAL_FATAL(row_encode(b, 2, &bb, &lb), 0);
        CU_ASSERT_EQUAL_FATAL(row_encode(c, 2, &bc, &lc), 0);
        CU_ASSERT(la == lb && memcmp(ba, bb, la) == 0);
        CU_ASSERT(la != lc || memcmp(ba, bc, la) != 0);
        free(ba);
        free(bb);
        free(bc);
}

static void test_malformed(void)
{
        const struct row_datum d[] = { ROW_DATUM_INT(5), ROW_DATUM_TEXT("xyz", 3),
                                       ROW_DATUM_BOOL(true) };
        struct row_datum out[4];
        uint8_t *bytes, *longer;
        size_t len;

        CU_ASSERT_EQUAL_FATAL(row_encode(d, 3, &bytes, &len), 0);
        /* Every truncation is malformed. */
        for (size_t cut = 0; cut < len; cut++) {
                CU_ASSERT_EQUAL(row_decode(bytes, cut, out, 4), -EBADMSG);
                CU_ASSERT_EQUAL(row_validate(bytes, cut), -EBADMSG);
        }
        /* So is a trailing byte. */
        longer = malloc(len + 1);
        CU_ASSERT_FATAL(longer != NULL);
        memcpy(longer, bytes, len);
        longer[len] = 0;
        CU_ASSERT_EQUAL(row_decode(longer, len + 1, out, 4), -EBADMSG);
        /* An unknown tag. */
        longer[2] = 0x09;
        CU_ASSERT_EQUAL(row_decode(longer, len, out, 4), -EBADMSG);
        /* A text length running past the end (and one that would wrap a 32-bit sum). */
        memcpy(longer, bytes, len);
        longer[2 + 9 + 1] = 0xff;
        longer[2 + 9 + 4] = 0xff;
        CU_ASSERT_EQUAL(row_decode(longer, len, out, 4), -EBADMSG);
        /* A column count that does not match the datums. */
        memcpy(longer, bytes, len);
        longer[0] = 4;
        CU_ASSERT_EQUAL(row_decode(longer, len, out, 4), -EBADMSG);
        longer[0] = 2;
        CU_ASSERT_EQUAL(row_decode(longer, len, out, 4), -EBADMSG);
        /* Too many columns for the caller's array is not malformed, just too big. */
        CU_ASSERT_EQUAL(row_decode(bytes, len, out, 2), -E2BIG);
        CU_ASSERT_EQUAL(row_validate(bytes, len), 3);
        CU_ASSERT_EQUAL(row_decode(NULL, 0, out, 4), -EBADMSG);
        free(longer);
        free(bytes);
}

/* Random bytes never crash the decoder, and whatever decodes re-encodes to the very
 * same bytes (the encoding is canonical, so storage may compare bytes). */
static void test_fuzz_decode(void)
{
        unsigned seed = 12345;
        int decoded = 0;

        for (int iter = 0; iter < 200000; iter++) {
                uint8_t buf[24], *again;
                struct row_datum d[16];
                size_t len = (size_t)(rand_r(&seed) % (int)sizeof(buf)), again_len;
                int n;

                for (size_t i = 0; i < len; i++)
                        buf[i] = (uint8_t)(rand_r(&seed) % 6);   /* mostly valid tags */
                if (len >= 2)
                        buf[1] = 0, buf[0] = (uint8_t)(rand_r(&seed) % 5);
                n = row_decode(buf, len, d, ELEMENTSOF(d));
                if (n < 0) {
                        CU_ASSERT(n == -EBADMSG);
                        continue;
                }
                decoded++;
                CU_ASSERT_EQUAL_FATAL(row_encode(d, (size_t)n, &again, &again_len), 0);
                CU_ASSERT(again_len == len && memcmp(again, buf, len) == 0);
                free(again);
        }
        CU_ASSERT(decoded > 1000);      /* the generator does reach valid rows */
}

static void test_check(void)
{
        const enum row_type types[] = { ROW_TYPE_INT4, ROW_TYPE_TEXT, ROW_TYPE_BOOL };
        struct row_datum d[] = { ROW_DATUM_INT(1), ROW_DATUM_TEXT("a", 1), ROW_DATUM_NULL };
        uint8_t *bytes;
        size_t len;

        CU_ASSERT_EQUAL_FATAL(row_encode(d, 3, &bytes, &len), 0);
        CU_ASSERT_EQUAL(row_check(bytes, len, types, 3), 0);
        CU_ASSERT_EQUAL(row_check(bytes, len, types, 2), -EBADMSG);
        free(bytes);

        d[0] = ROW_DATUM_INT((int64_t)INT32_MAX + 1);   /* not an int4 */
        CU_ASSERT_EQUAL_FATAL(row_encode(d, 3, &bytes, &len), 0);
        CU_ASSERT_EQUAL(row_check(bytes, len, types, 3), -EBADMSG);
        free(bytes);

        d[0] = ROW_DATUM_BOOL(true);                    /* not an integer at all */
        CU_ASSERT_EQUAL_FATAL(row_encode(d, 3, &bytes, &len), 0);
        CU_ASSERT_EQUAL(row_check(bytes, len, types, 3), -EBADMSG);
        free(bytes);

        CU_ASSERT(row_type_valid(ROW_TYPE_INT8));
        CU_ASSERT(!row_type_valid(0));
        CU_ASSERT(row_type_valid(ROW_TYPE_NUMERIC));
        CU_ASSERT(!row_type_valid(1790));
        CU_ASSERT_STRING_EQUAL(row_type_name(ROW_TYPE_NUMERIC), "numeric");
        CU_ASSERT_STRING_EQUAL(row_type_name(ROW_TYPE_INT4), "integer");
        CU_ASSERT_STRING_EQUAL(row_type_name(ROW_TYPE_INT8), "bigint");
        CU_ASSERT_STRING_EQUAL(row_type_name(ROW_TYPE_BOOL), "boolean");
        CU_ASSERT_STRING_EQUAL(row_type_name(ROW_TYPE_TEXT), "text");
}

static int cmp_rows(const struct row_datum *a, size_t na, const struct row_datum *b, size_t nb)
{
        uint8_t *ba, *bb;
        size_t la, lb;
        int c;

        if (row_encode(a, na, &ba, &la) < 0 || row_encode(b, nb, &bb, &lb) < 0)
                abort();
        c = row_compare(ba, la, bb, lb);
        CU_ASSERT_EQUAL(row_compare(bb, lb, ba, la), -c);       /* antisymmetric */
        free(ba);
        free(bb);
        return c;
}

static void test_compare(void)
{
        const struct row_datum null = ROW_DATUM_NULL, one = ROW_DATUM_INT(1),
                               minus = ROW_DATUM_INT(-1), t = ROW_DATUM_BOOL(true),
                               f = ROW_DATUM_BOOL(false), ab = ROW_DATUM_TEXT("ab", 2),
                               abc = ROW_DATUM_TEXT("abc", 3), b = ROW_DATUM_TEXT("b", 1);
        const struct row_datum r1[] = { ROW_DATUM_INT(1), ROW_DATUM_TEXT("x", 1) };
        const struct row_datum r2[] = { ROW_DATUM_INT(1), ROW_DATUM_NULL };
        const uint8_t junk[] = { 1, 0, 9 };
        uint8_t *good;
        size_t glen;

        CU_ASSERT(row_datum_compare(&minus, &one) < 0);
        CU_ASSERT(row_datum_compare(&one, &null) < 0);          /* NULLS LAST */
        CU_ASSERT(row_datum_compare(&null, &null) == 0);
        CU_ASSERT(row_datum_compare(&f, &t) < 0);
        CU_ASSERT(row_datum_compare(&ab, &abc) < 0);            /* prefix first */
        CU_ASSERT(row_datum_compare(&abc, &b) < 0);             /* bytewise */
        CU_ASSERT(cmp_rows(r1, 2, r2, 2) < 0);
        CU_ASSERT(cmp_rows(r1, 1, r1, 2) < 0);
        CU_ASSERT(cmp_rows(r1, 2, r1, 2) == 0);

        CU_ASSERT_EQUAL_FATAL(row_encode(r1, 2, &good, &glen), 0);
        CU_ASSERT(row_compare(good, glen, junk, sizeof(junk)) < 0);  /* malformed last */
        CU_ASSERT(row_compare(junk, sizeof(junk), good, glen) > 0);
        CU_ASSERT(row_compare(junk, sizeof(junk), junk, sizeof(junk)) == 0);
        free(good);
}

static void expect_format(struct row_datum d, const char *want)
{
        char scratch[ROW_TEXT_SCRATCH];
        const char *s = NULL;
        size_t n = 0;

        CU_ASSERT_EQUAL_FATAL(row_datum_format(&d, scratch, &s, &n), 0);
        CU_ASSERT(n == strlen(want) && memcmp(s, want, n) == 0);
}

static void test_format(void)
{
        struct row_datum null = ROW_DATUM_NULL;
        char scratch[ROW_TEXT_SCRATCH];
        const char *s;
        size_t n;

        expect_format(ROW_DATUM_BOOL(true), "t");
        expect_format(ROW_DATUM_BOOL(false), "f");
        expect_format(ROW_DATUM_INT(-42), "-42");
        expect_format(ROW_DATUM_INT(INT64_MIN), "-9223372036854775808");
        expect_format(ROW_DATUM_TEXT("hi", 2), "hi");
        expect_format(ROW_DATUM_TEXT(NULL, 0), "");
        CU_ASSERT_EQUAL(row_datum_format(&null, scratch, &s, &n), 1);

        /* Integers as printf prints them: every value to 10,000, each power of ten and
         * its neighbours, both ends, and a walk over the range. */
        {
                char want[32];
                int64_t v = 1;

                for (int64_t i = -10000; i <= 10000; i++) {
                        snprintf(want, sizeof(want), "%" PRId64, i);
                        expect_format(ROW_DATUM_INT(i), want);
                }
                for (int k = 0; k < 19; k++, v = k < 19 ? v * 10 : v)   /* to 10^18 */
                        for (int64_t d = -1; d <= 1; d++) {
                                snprintf(want, sizeof(want), "%" PRId64, v + d);
                                expect_format(ROW_DATUM_INT(v + d), want);
                                snprintf(want, sizeof(want), "%" PRId64, -(v + d));
                                expect_format(ROW_DATUM_INT(-(v + d)), want);
                        }
                expect_format(ROW_DATUM_INT(INT64_MAX), "9223372036854775807");
                for (uint64_t x = 1; x < UINT64_MAX / 3; x = x * 3 + 7) {
                        snprintf(want, sizeof(want), "%" PRId64, (int64_t)x);
                        expect_format(ROW_DATUM_INT((int64_t)x), want);
                }
        }
}

/* Parse `text` as `type`: 0 and the datum, or the error's SQLSTATE and message. */
static void expect_parse_int(enum row_type type, const char *text, int64_t want)
{
        struct row_error err = { 0 };
        struct row_datum d;

        CU_ASSERT_EQUAL(row_datum_parse(type, text, strlen(text), &d, &err), 0);
        CU_ASSERT(d.kind == ROW_KIND_INT && d.i == want);
}

static void expect_parse_error(enum row_type type, const char *text, const char *sqlstate,
                               const char *message)
{
        struct row_error err = { 0 };
        struct row_datum d;

        CU_ASSERT_EQUAL(row_datum_parse(type, text, strlen(text), &d, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, sqlstate);
        if (message)
                CU_ASSERT_STRING_EQUAL(err.message, message);
}

static void expect_bool(const char *text, bool want)
{
        struct row_datum d;

        CU_ASSERT_EQUAL(row_datum_parse(ROW_TYPE_BOOL, text, strlen(text), &d, NULL), 0);
        CU_ASSERT(d.kind == ROW_KIND_BOOL && d.b == want);
}

static void test_parse(void)
{
        struct row_datum d;
        char scratch[ROW_TEXT_SCRATCH];
        const char *s;
        size_t n;

        expect_parse_int(ROW_TYPE_INT4, "42", 42);
        expect_parse_int(ROW_TYPE_INT4, "  -7 \n", -7);
        expect_parse_int(ROW_TYPE_INT4, "+7", 7);
        expect_parse_int(ROW_TYPE_INT4, "-2147483648", INT32_MIN);
        expect_parse_int(ROW_TYPE_INT4, "2147483647", INT32_MAX);
        expect_parse_int(ROW_TYPE_INT8, "-9223372036854775808", INT64_MIN);
        expect_parse_int(ROW_TYPE_INT8, "9223372036854775807", INT64_MAX);
        expect_parse_int(ROW_TYPE_INT8, "000123", 123);
        expect_parse_error(ROW_TYPE_INT4, "2147483648", "22003",
                           "value \"2147483648\" is out of range for type integer");
        expect_parse_error(ROW_TYPE_INT4, "-2147483649", "22003", NULL);
        expect_parse_error(ROW_TYPE_INT8, "9223372036854775808", "22003",
                           "value \"9223372036854775808\" is out of range for type bigint");
        expect_parse_error(ROW_TYPE_INT4, "abc", "22P02",
                           "invalid input syntax for type integer: \"abc\"");
        expect_parse_error(ROW_TYPE_INT8, "12x", "22P02",
                           "invalid input syntax for type bigint: \"12x\"");
        expect_parse_error(ROW_TYPE_INT4, "", "22P02", NULL);
        expect_parse_error(ROW_TYPE_INT4, "-", "22P02", NULL);
        expect_parse_error(ROW_TYPE_INT4, "1 2", "22P02", NULL);
        expect_parse_error(ROW_TYPE_INT4, "1.5", "22P02", NULL);
        /* Like PostgreSQL, overflow is reported before the junk that follows it. */
        expect_parse_error(ROW_TYPE_INT4, "99999999999x", "22003", NULL);

        expect_bool("t", true);
        expect_bool("TRUE", true);
        expect_bool(" yes ", true);
        expect_bool("on", true);
        expect_bool("1", true);
        expect_bool("f", false);
        expect_bool("fal", false);
        expect_bool("No", false);
        expect_bool("off", false);
        expect_bool("0", false);
        expect_parse_error(ROW_TYPE_BOOL, "o", "22P02",
                           "invalid input syntax for type boolean: \"o\"");
        expect_parse_error(ROW_TYPE_BOOL, "truex", "22P02", NULL);
        expect_parse_error(ROW_TYPE_BOOL, "2", "22P02", NULL);
        expect_parse_error(ROW_TYPE_BOOL, "", "22P02", NULL);

        CU_ASSERT_EQUAL(row_datum_parse(ROW_TYPE_TEXT, "h\xc3\xa9", 3, &d, NULL), 0);
        CU_ASSERT(d.kind == ROW_KIND_TEXT && d.text.len == 3);
        expect_parse_error(ROW_TYPE_TEXT, "\xc3", "22021", NULL);        /* truncated */
        expect_parse_error(ROW_TYPE_TEXT, "\xc0\xaf", "22021", NULL);    /* overlong */
        expect_parse_error(ROW_TYPE_TEXT, "\xed\xa0\x80", "22021", NULL); /* surrogate */
        CU_ASSERT_EQUAL(row_datum_parse(ROW_TYPE_TEXT, "a\0b", 3, &d, NULL), -EINVAL);

        /* Text round trip of integers through output and input. */
        for (int64_t v = INT64_MIN; ; v = v / 3 * 2 + 1) {
                struct row_datum in = ROW_DATUM_INT(v), out;

                CU_ASSERT_EQUAL_FATAL(row_datum_format(&in, scratch, &s, &n), 0);
                CU_ASSERT_EQUAL(row_datum_parse(ROW_TYPE_INT8, s, n, &out, NULL), 0);
                CU_ASSERT_EQUAL(out.i, v);
                if (v > -3 && v < 3)
                        break;
        }
}

static void test_strings(void)
{
        const struct row_datum d[] = { ROW_DATUM_INT(1), ROW_DATUM_NULL, ROW_DATUM_BOOL(true),
                                       ROW_DATUM_TEXT("it's", 4) };
        const uint8_t junk[] = { 1, 0, 7 };
        char failing[64], *s = NULL;
        uint8_t *bytes;
        size_t len;

        CU_ASSERT_EQUAL_FATAL(row_encode(d, 4, &bytes, &len), 0);
        CU_ASSERT_EQUAL_FATAL(row_to_string(bytes, len, &s), 0);
        CU_ASSERT_STRING_EQUAL(s, "(1,NULL,t,'it''s')");
        free(s);
        free(bytes);
        CU_ASSERT_EQUAL(row_to_string(junk, sizeof(junk), &s), -EBADMSG);

        row_format_failing(d, 4, failing, sizeof(failing));
        CU_ASSERT_STRING_EQUAL(failing, "1, null, t, it's");
        row_format_failing(d, 4, failing, 6);                   /* truncates safely */
        CU_ASSERT_STRING_EQUAL(failing, "1, nu");
}

static void test_error(void)
{
        struct row_error err;

        memset(&err, 'x', sizeof(err));
        CU_ASSERT_EQUAL(row_error_set(&err, -EINVAL, "22012", "division by %s", "zero"), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "22012");
        CU_ASSERT_STRING_EQUAL(err.message, "division by zero");
        CU_ASSERT_STRING_EQUAL(err.detail, "");
        CU_ASSERT_STRING_EQUAL(err.hint, "");
        CU_ASSERT_EQUAL(err.position, 0);
        row_error_detail(&err, "d%d", 1);
        row_error_hint(&err, "h");
        CU_ASSERT_STRING_EQUAL(err.detail, "d1");
        CU_ASSERT_STRING_EQUAL(err.hint, "h");
        CU_ASSERT_EQUAL(row_error_oom(&err), -ENOMEM);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "53200");
        /* A NULL error is allowed everywhere. */
        CU_ASSERT_EQUAL(row_error_set(NULL, -EINVAL, "22012", "x"), -EINVAL);
        row_error_detail(NULL, "x");
        row_error_hint(NULL, "x");
}

static void test_arena(void)
{
        struct row_arena a = ROW_ARENA_INIT;
        char *first, *big;

        first = row_arena_alloc(&a, 3);
        CU_ASSERT_FATAL(first != NULL);
        memcpy(first, "ab", 3);
        for (int i = 0; i < 10000; i++) {
                char *p = row_arena_alloc(&a, (size_t)(i % 37) + 1);

                CU_ASSERT_FATAL(p != NULL);
                CU_ASSERT_EQUAL((uintptr_t)p % 8, 0);
                memset(p, 0x5a, (size_t)(i % 37) + 1);
        }
        CU_ASSERT_STRING_EQUAL(first, "ab");    /* earlier allocations stay put */
        big = row_arena_alloc(&a, 100000);
        CU_ASSERT_FATAL(big != NULL);
        memset(big, 1, 100000);
        row_arena_reset(&a);
        CU_ASSERT(row_arena_alloc(&a, 10) != NULL);
        CU_ASSERT(row_arena_alloc(&a, SIZE_MAX) == NULL);
        row_arena_done(&a);
        row_arena_done(&a);
        CU_ASSERT(a.chunks == NULL);
}

/* Array text: the canonical form of an input, or its error. */
static void expect_array(enum row_type type, const char *in, const char *want)
{
        struct row_arena arena = ROW_ARENA_INIT;
        struct row_error err = { 0 };
        struct row_datum d;
        int r = row_array_parse(type, in, strlen(in), &arena, &d, &err);

        CU_ASSERT_EQUAL(r, 0);
        if (r == 0) {
                CU_ASSERT_EQUAL(d.kind, ROW_KIND_TEXT);
                CU_ASSERT(d.text.len == strlen(want) && memcmp(d.text.ptr, want, d.text.len) == 0);
                if (d.text.len != strlen(want) || memcmp(d.text.ptr, want, d.text.len) != 0)
                        fprintf(stderr, "\n    %s: got %.*s, want %s\n", in, (int)d.text.len,
                                d.text.ptr, want);
        } else
                fprintf(stderr, "\n    %s: %s %s\n", in, err.sqlstate, err.message);
        row_arena_done(&arena);
}

static void expect_array_error(enum row_type type, const char *in, const char *sqlstate,
                               const char *detail)
{
        struct row_arena arena = ROW_ARENA_INIT;
        struct row_error err = { 0 };
        struct row_datum d;

        CU_ASSERT_EQUAL(row_array_parse(type, in, strlen(in), &arena, &d, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, sqlstate);
        if (detail)
                CU_ASSERT_STRING_EQUAL(err.detail, detail);
        row_arena_done(&arena);
}

/* PostgreSQL 15's array_in()/array_out() on the same inputs gave these. */
static void test_arrays(void)
{
        struct row_arena arena = ROW_ARENA_INIT;
        struct row_datum a, b, *el;
        size_t n;
        int c;

        expect_array(ROW_TYPE_INT4_ARRAY, "{1,2,3}", "{1,2,3}");
        expect_array(ROW_TYPE_INT4_ARRAY, "  { 1 , +2 ,NULL, null }  ", "{1,2,NULL,NULL}");
        expect_array(ROW_TYPE_INT4_ARRAY, "{}", "{}");
        expect_array(ROW_TYPE_INT4_ARRAY, "{ }", "{}");
        expect_array(ROW_TYPE_INT8_ARRAY, "{\"-9223372036854775808\"}", "{-9223372036854775808}");
        expect_array(ROW_TYPE_BOOL_ARRAY, "{true,f,yes}", "{t,f,t}");
        expect_array(ROW_TYPE_TEXT_ARRAY, "{a,\"b c\",NULL,\"NULL\",\"\"}",
                     "{a,\"b c\",NULL,\"NULL\",\"\"}");
        expect_array(ROW_TYPE_TEXT_ARRAY, "{ a b , c\\,d, \"x\\\"y\" }",
                     "{\"a b\",\"c,d\",\"x\\\"y\"}");
        expect_array(ROW_TYPE_TEXT_ARRAY, "{\\ }", "{\" \"}");     /* escaped space kept */
        expect_array(ROW_TYPE_TEXT_ARRAY, "{nULl2}", "{nULl2}");
        expect_array_error(ROW_TYPE_INT4_ARRAY, "1,2", "22P02",
                           "Array value must start with \"{\" or dimension information.");
        expect_array_error(ROW_TYPE_INT4_ARRAY, "{1,2", "22P02", "Unexpected end of input.");
        expect_array_error(ROW_TYPE_INT4_ARRAY, "{1,}", "22P02", "Unexpected \"}\" character.");
        expect_array_error(ROW_TYPE_INT4_ARRAY, "{,1}", "22P02", "Unexpected \",\" character.");
        expect_array_error(ROW_TYPE_INT4_ARRAY, "{1} x", "22P02", "Junk after closing right brace.");
        expect_array_error(ROW_TYPE_TEXT_ARRAY, "{a\"b}", "22P02", "Incorrectly quoted array element.");
        expect_array_error(ROW_TYPE_INT4_ARRAY, "{a}", "22P02", NULL);
        expect_array_error(ROW_TYPE_INT4_ARRAY, "{2147483648}", "22003", NULL);
        expect_array_error(ROW_TYPE_INT4_ARRAY, "{{1},{2}}", "0A000", NULL);
        expect_array_error(ROW_TYPE_INT4_ARRAY, "[1:2]={1,2}", "0A000", NULL);

        /* Elements back, de-escaped; the order is PostgreSQL's, not the bytes'. */
        CU_ASSERT_EQUAL_FATAL(row_array_parse(ROW_TYPE_TEXT_ARRAY, "{\"x\\\"y\",NULL}",
                                              strlen("{\"x\\\"y\",NULL}"), &arena, &a, NULL), 0);
        CU_ASSERT_EQUAL_FATAL(row_array_elements(ROW_TYPE_TEXT_ARRAY, &a, &arena, &el, &n, NULL), 0);
        CU_ASSERT_EQUAL(n, 2);
        CU_ASSERT(el[0].kind == ROW_KIND_TEXT && el[0].text.len == 3 &&
                  memcmp(el[0].text.ptr, "x\"y", 3) == 0);
        CU_ASSERT_EQUAL(el[1].kind, ROW_KIND_NULL);
        CU_ASSERT_EQUAL_FATAL(row_array_parse(ROW_TYPE_INT4_ARRAY, "{9}", 3, &arena, &a, NULL), 0);
        CU_ASSERT_EQUAL_FATAL(row_array_parse(ROW_TYPE_INT4_ARRAY, "{10}", 4, &arena, &b, NULL), 0);
        CU_ASSERT(row_datum_compare(&a, &b) > 0);               /* bytes: "{9}" > "{10}" */
        CU_ASSERT_EQUAL(row_array_compare(ROW_TYPE_INT4_ARRAY, &a, &b, &arena, &c, NULL), 0);
        CU_ASSERT(c < 0);                                       /* arrays: {9} < {10} */
        CU_ASSERT_EQUAL_FATAL(row_array_parse(ROW_TYPE_INT4_ARRAY, "{9,1}", 5, &arena, &b, NULL), 0);
        CU_ASSERT_EQUAL(row_array_compare(ROW_TYPE_INT4_ARRAY, &a, &b, &arena, &c, NULL), 0);
        CU_ASSERT(c < 0);                                       /* a prefix first */
        CU_ASSERT(row_datum_fits(&a, ROW_TYPE_INT4_ARRAY));
        CU_ASSERT_STRING_EQUAL(row_type_name(ROW_TYPE_TEXT_ARRAY), "text[]");
        CU_ASSERT_EQUAL(row_type_element(ROW_TYPE_INT8_ARRAY), ROW_TYPE_INT8);
        CU_ASSERT_EQUAL(row_type_array_of(ROW_TYPE_INT4_ARRAY), _ROW_TYPE_INVALID);
        CU_ASSERT_EQUAL(row_datum_parse(ROW_TYPE_INT4_ARRAY, "{1}", 3, &a, NULL), -EINVAL);
        row_arena_done(&arena);
}

static const struct t_case encoding_cases[] = {
        { "roundtrip", test_roundtrip },
        { "layout", test_layout },
        { "canonical", test_canonical },
        { "malformed", test_malformed },
        { "fuzz decode", test_fuzz_decode },
        { "check", test_check },
        { "compare", test_compare },
        { NULL, NULL },
};

static const struct t_case text_cases[] = {
        { "format", test_format },
        { "parse", test_parse },
        { "arrays", test_arrays },
        { "strings", test_strings },
        { NULL, NULL },
};

static const struct t_case misc_cases[] = {
        { "error", test_error },
        { "arena", test_arena },
        { NULL, NULL },
};

int main(void)
{
        const struct t_suite suites[] = {
                { "row encoding", encoding_cases },
                { "row text", text_cases },
                { "row misc", misc_cases },
                { NULL, NULL },
        };

        return t_run(suites);
}
