/* pgwire-fake.h -- what the fake executors of tests/pgwire/test-pgwire.c and
 * tests/fuzz/fuzz-pgwire.c share: their statements' first word, and the answers to
 * "SELECT n" (n rows 1..n of one int4 column) and TYPES (one row of int2, int4, int8,
 * bool, float8, text, bytea, NULL).  The answers return 0, or -1 when the server
 * refused a message (the rest of the request is skipped).
 */
#pragma once

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "adapter-pgwire.h"
#include "util.h"

static const struct pgcodec_column cols_types[] = {
        { .name = "a", .type = PGCODEC_OID_INT2, .typmod = -1 },
        { .name = "b", .type = PGCODEC_OID_INT4, .typmod = -1 },
        { .name = "c", .type = PGCODEC_OID_INT8, .typmod = -1 },
        { .name = "d", .type = PGCODEC_OID_BOOL, .typmod = -1 },
        { .name = "e", .type = PGCODEC_OID_FLOAT8, .typmod = -1 },
        { .name = "f", .type = PGCODEC_OID_TEXT, .typmod = -1 },
        { .name = "g", .type = PGCODEC_OID_BYTEA, .typmod = -1 },
        { .name = "h", .type = PGCODEC_OID_INT4, .typmod = -1 },
};
static const char *const vals_types[] = {
        "-7", "123456", "-9000000000", "t", "2.5", "h\xc3\xa9llo", "\\x0102", NULL,
};

/* stmt starts with word (any case), followed by its end or white space. */
static inline bool word_is(const char *stmt, const char *word)
{
        size_t n = strlen(word);

        return strncasecmp(stmt, word, n) == 0 && (stmt[n] == '\0' || isspace((unsigned char)stmt[n]));
}

/* "SELECT n": rows 1..n of the one int4 column col, and "SELECT n". */
static inline int fake_send_count(struct pgwire_conn *c, const struct pgcodec_column *col, long n)
{
        char tag[64];

        (void)pgwire_send_row_description(c, 1, col);
        for (long i = 1; i <= n; i++) {
                char v[24];
                const char *vp[1] = { v };

                snprintf(v, sizeof(v), "%ld", i);
                if (pgwire_send_data_row(c, 1, vp, NULL) < 0)
                        return -1;
        }
        snprintf(tag, sizeof(tag), "SELECT %ld", n);
        return pgwire_send_command_complete(c, tag) < 0 ? -1 : 0;
}

/* TYPES: the row of cols_types and vals_types, and "SELECT 1". */
static inline int fake_send_types(struct pgwire_conn *c)
{
        (void)pgwire_send_row_description(c, ELEMENTSOF(cols_types), cols_types);
        if (pgwire_send_data_row(c, ELEMENTSOF(cols_types), vals_types, NULL) < 0)
                return -1;
        return pgwire_send_command_complete(c, "SELECT 1") < 0 ? -1 : 0;
}
