/* row.h -- rows and datums: the one encoding of SQL values that the adapter writes, the
 * controller stores and both evaluate, plus their PostgreSQL text form and SQL errors.
 *
 * Encoding.  A row is a byte string:
 *
 *     row   := u16 ncols (little endian)  datum{ncols}
 *     datum := 0x00                         NULL
 *            | 0x01 | 0x02                  boolean false | true
 *            | 0x03 i64 (little endian)     int4 or int8 (the schema says which)
 *            | 0x04 u32 len  byte{len}      text
 *            | 0x05 u8 scale  i128 coef (LE)  numeric: coef x 10^-scale, scale 0..38 and
 *                                           |coef| < 10^38 (row-numeric.c, "Numeric")
 *
 * Every value has exactly one encoding and nothing may follow the last datum, so two rows
 * are equal as SQL rows if and only if their bytes are equal: storage and consolidation
 * compare bytes, never values.  The decoder rejects anything else with -EBADMSG, so a
 * decoded row is always well formed; it does not know the schema (row_check() does).
 *
 * A decoded datum borrows: the text of a datum points into the row bytes (or the arena)
 * it came from and is valid as long as they are.  Text is not NUL-terminated.
 *
 * Errors.  Functions that can fail for a reason the SQL user should see fill a
 * struct row_error (SQLSTATE, message, optional detail, hint and position) and return a
 * negative errno: -EINVAL for a SQL error, -ENOMEM with SQLSTATE 53200.  The error is
 * always filled when such a function fails, so callers can send it as it is.
 *
 * Nothing here logs or keeps global state; everything is safe to call from any thread
 * on distinct objects.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* Column types.  The values are the PostgreSQL type OIDs (RowDescription) and equal
 * coord.plan.Type in proto/plan.proto, so conversion is a cast after row_type_valid(). */
enum row_type {
        ROW_TYPE_BOOL = 16,
        ROW_TYPE_INT8 = 20,
        ROW_TYPE_INT4 = 23,
        ROW_TYPE_TEXT = 25,
        ROW_TYPE_NUMERIC = 1700,        /* see "Numeric" below */
        ROW_TYPE_BPCHAR = 1042,         /* character(n): text, blank-padded; see "bpchar" */
        ROW_TYPE_BOOL_ARRAY = 1000,     /* arrays: see "Arrays" below */
        ROW_TYPE_INT4_ARRAY = 1007,
        ROW_TYPE_TEXT_ARRAY = 1009,
        ROW_TYPE_INT8_ARRAY = 1016,
        _ROW_TYPE_INVALID = -EINVAL,
};

/* What a datum holds; int4 and int8 are both ROW_KIND_INT, arrays ROW_KIND_TEXT. */
enum row_kind {
        ROW_KIND_NULL,
        ROW_KIND_BOOL,
        ROW_KIND_INT,
        ROW_KIND_TEXT,
        ROW_KIND_NUMERIC,
        _ROW_KIND_MAX,
        _ROW_KIND_INVALID = -EINVAL,
};

struct row_datum {
        enum row_kind kind;
        union {
                bool b;
                int64_t i;
                struct {
                        const char *ptr;        /* borrowed, not NUL-terminated */
                        uint32_t len;
                } text;
                struct {
                        /* coef = hi * 2^64 + lo (row_numeric_coef()): two halves, so the
                         * datum stays 8-byte aligned in arenas */
                        uint64_t lo;
                        int64_t hi;
                        uint8_t scale;
                } num;
        };
};

#define ROW_DATUM_NULL ((struct row_datum){ .kind = ROW_KIND_NULL })
#define ROW_DATUM_BOOL(v) ((struct row_datum){ .kind = ROW_KIND_BOOL, .b = (v) })
#define ROW_DATUM_INT(v) ((struct row_datum){ .kind = ROW_KIND_INT, .i = (v) })
#define ROW_DATUM_TEXT(p, l) \
        ((struct row_datum){ .kind = ROW_KIND_TEXT, .text = { .ptr = (p), .len = (l) } })

/* PostgreSQL's limit on the columns of a table (MaxHeapAttributeNumber). */
#define ROW_MAX_COLUMNS 1600u

/* ---- SQL errors. ---- */

struct row_error {
        char sqlstate[6];       /* five characters, NUL-terminated */
        char message[512];
        char detail[512];       /* "" when absent */
        char hint[256];         /* "" when absent */
        unsigned position;      /* 1-based character position in the query, 0 = none */
};

/* Fill err (which may be NULL) and return r, so that a caller can write
 * `return row_error_set(err, -EINVAL, "22P02", "...", ...);`.  Detail, hint and position
 * are cleared. */
int row_error_set(struct row_error *err, int r, const char *sqlstate, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
void row_error_detail(struct row_error *err, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
void row_error_hint(struct row_error *err, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
/* -ENOMEM with SQLSTATE 53200. */
int row_error_oom(struct row_error *err);

/* ---- Types. ---- */

bool row_type_valid(int type);
/* The SQL name PostgreSQL uses in messages: "integer", "bigint", "text", "boolean",
 * "integer[]". */
const char *row_type_name(enum row_type type);
/* Does a non-NULL datum of this kind belong to the type (int4 range included)? */
bool row_datum_fits(const struct row_datum *d, enum row_type type);

/* ---- Encoding and decoding. ---- */

/* Encoded size of a row, or -E2BIG when a text is longer than 4 GiB - 1 or there are
 * more than UINT16_MAX datums. */
int64_t row_encoded_size(const struct row_datum *datums, size_t n);
/* Encode into buf (of at least row_encoded_size() bytes).  Returns the size. */
size_t row_encode_into(const struct row_datum *datums, size_t n, uint8_t *buf);
/* Encode into a fresh malloc'ed buffer. */
int row_encode(const struct row_datum *datums, size_t n, uint8_t **ret, size_t *ret_len);

/* The number of columns of a well-formed row, or -EBADMSG. */
int row_validate(const void *row, size_t len);
/* Decode into datums[0..n_datums).  Returns the column count, -EBADMSG when the bytes
 * are not a well-formed row, -E2BIG when it has more than n_datums columns.  The texts
 * point into `row`. */
int row_decode(const void *row, size_t len, struct row_datum *datums, size_t n_datums);
/* Check a well-formed row against a schema: the arity and the kind of every non-NULL
 * datum.  Returns 0 or -EBADMSG. */
int row_check(const void *row, size_t len, const enum row_type *types, size_t n_types);

/* ---- Comparison (a total order, for sorting and tests). ---- */

/* NULL sorts after every value (PostgreSQL's ASC NULLS LAST); booleans false < true;
 * integers numerically; texts bytewise (the C collation).  Datums of different kinds
 * (which a schema never mixes) order by kind. */
int row_datum_compare(const struct row_datum *a, const struct row_datum *b);
/* Column by column; a shorter row that is a prefix sorts first.  Rows that do not
 * decode sort after the ones that do, among themselves by bytes, so this is a total
 * order on any byte strings. */
int row_compare(const void *a, size_t alen, const void *b, size_t blen);

/* ---- PostgreSQL text format. ---- */

/* Enough for the text of any bool, integer or numeric plus a NUL. */
#define ROW_TEXT_SCRATCH 48     /* also a numeric: sign, 38 digits, "0." and a NUL */

/* The text form of a datum, for DataRow.  Returns 0 with the bytes in
 * *ret and *ret_len (pointing into the datum's text or into `scratch`), or 1 for NULL (sent
 * as length -1).  Booleans are "t"/"f", integers decimal. */
int row_datum_format(const struct row_datum *d, char scratch[static ROW_TEXT_SCRATCH],
                     const char **ret, size_t *ret_len);

/* Parse text input for a scalar type as PostgreSQL's input functions do (surrounding
 * whitespace allowed for bool and integers; bool accepts t/true/y/yes/on/1 and their
 * negations, case-insensitively, and unique prefixes).  22P02 for bad syntax, 22003
 * when out of range of the type, 22021 for text that is not valid UTF-8 or holds NUL.
 * A text result points into `text`.  An array type is XX000 here: its canonical text
 * needs memory, row_array_parse() takes an arena. */
int row_datum_parse(enum row_type type, const char *text, size_t len, struct row_datum *ret,
                    struct row_error *err);

/* "(1,NULL,t,'it''s')": a row for messages and tests (types decide nothing: integers
 * print as integers, texts quoted).  Malloc'ed; -EBADMSG for a malformed row. */
int row_to_string(const void *row, size_t len, char **ret);
/* PostgreSQL's "Failing row contains (1, null, abc)." form, into buf (truncated). */
void row_format_failing(const struct row_datum *datums, size_t n, char *buf, size_t size);

/* ---- bpchar. ----
 *
 * character(n) (ROW_TYPE_BPCHAR) is a ROW_KIND_TEXT datum holding the padded value, as
 * PostgreSQL stores it: FUNC_BPCHAR pads to n (casts, INSERT, UPDATE).  Its comparisons
 * ignore trailing spaces; the planner gets them by casting each bpchar operand to text
 * (FUNC_CAST, which drops trailing spaces, as PostgreSQL's rtrim1()), so the evaluator
 * compares text only.  Keys compare bytes, so values of one key column agree as bpchar
 * only when they are padded alike: the planner keys only on bpchar of a known n
 * (adapter-sql-bpchar.c). */

/* ---- Arrays. ----
 *
 * One-dimensional, lower bound 1, of bool, int4, int8 or text.  A datum of an array type
 * is a ROW_KIND_TEXT datum holding the array's canonical text, PostgreSQL's array_out()
 * form ("{1,NULL,3}", "{\"a b\",c}").  Only row_array_build() writes it and every input
 * goes through it, so equal arrays have equal bytes: storage consolidation, join keys,
 * GROUP BY and DISTINCT compare arrays correctly by bytes, and the datum is its own text
 * form.  Ordering is NOT by bytes ({10} > {9}): row_array_compare() orders as
 * PostgreSQL does (the dataflow's min/max use it, value_better()), and what sorts datums
 * by row_datum_compare() (ORDER BY, top-k) must not be given arrays -- the planner
 * refuses them (adapter-sql-query.c sort_key_add()). */

struct row_arena;

/* The element type of an array type, or _ROW_TYPE_INVALID for a scalar type. */
enum row_type row_type_element(enum row_type t);
/* The array type of an element type, or _ROW_TYPE_INVALID. */
enum row_type row_type_array_of(enum row_type elem);
bool row_type_is_array(int t);
/* PostgreSQL's array_in() of a one-dimensional array (22P02 "malformed array literal"
 * with its DETAIL; element errors as the element type's input; 0A000 for dimension
 * decorations and nested braces) into the canonical text in `arena`. */
int row_array_parse(enum row_type type, const char *text, size_t len, struct row_arena *arena,
                    struct row_datum *ret, struct row_error *err);
/* The canonical text of elems[0..n) (each NULL or of the element type) in `arena`. */
int row_array_build(enum row_type type, const struct row_datum *elems, size_t n,
                    struct row_arena *arena, struct row_datum *ret, struct row_error *err);
/* The elements of a non-NULL array datum, in `arena` (texts de-escaped there). */
int row_array_elements(enum row_type type, const struct row_datum *d, struct row_arena *arena,
                       struct row_datum **ret, size_t *ret_n, struct row_error *err);
/* PostgreSQL's array order: element by element, NULL after values, shorter first. */
int row_array_compare(enum row_type type, const struct row_datum *a, const struct row_datum *b,
                      struct row_arena *arena, int *ret, struct row_error *err);

/* ---- Arena: memory for datums computed while evaluating (row-expr.h), and for
 * protobuf-c messages unpacked through row_arena_allocator(). ---- */

struct row_arena_chunk;

struct row_arena {
        struct row_arena_chunk *chunks;         /* newest first */
        size_t chunk;                           /* bytes per chunk; 0: 4 KiB */
};

#define ROW_ARENA_INIT ((struct row_arena){ NULL, 0 })

/* 8-byte aligned memory valid until the next reset or done; NULL when out of memory. */
void *row_arena_alloc(struct row_arena *a, size_t size);
/* Forget every allocation; keep the newest chunk for reuse unless it is larger than
 * 64 KiB and than a->chunk (one huge allocation does not stay pinned). */
void row_arena_reset(struct row_arena *a);
void row_arena_done(struct row_arena *a);

/* protobuf-c's allocator over `a`: a message unpacked with it lives in the arena and
 * goes with the arena's next reset or done -- never call free_unpacked() on it (its
 * free is a no-op).  Saves protobuf-c's malloc per field and walk of every field at
 * free time: libpg_query's trees (a Node message has hundreds of fields), PeekResults. */
ProtobufCAllocator row_arena_allocator(struct row_arena *a);

/* ---- Numeric. ----
 *
 * PostgreSQL's numeric with a bounded precision (as Materialize's): a value is a signed
 * coefficient and a display scale 0..38, value = coef x 10^-scale, |coef| < 10^38 (at
 * most 38 significant digits).  Anything a result would need beyond that is 22003
 * "value overflows numeric format", never a rounded answer.  NaN and Infinity are not
 * values (their input is 0A000).
 *
 * The scale is part of the value as in PostgreSQL (1.50 prints "1.50"), so 1.5 and 1.50
 * are different bytes but equal numbers: row_datum_compare() orders numerics by value
 * and then by scale (a total order consistent with the bytes), row_numeric_cmp() by
 * value only (SQL comparison), and row_numeric_normalize() gives the one encoding of
 * a number that keys which must match by value use (join keys, controller-dataflow). */

#define ROW_NUMERIC_MAX_PRECISION 38
#define ROW_NUMERIC_MAX_SCALE 38

static inline __int128 row_numeric_coef(const struct row_datum *d)
{
        return (__int128)(((unsigned __int128)(uint64_t)d->num.hi << 64) | d->num.lo);
}

static inline struct row_datum row_numeric_make(__int128 coef, unsigned scale)
{
        struct row_datum d = { .kind = ROW_KIND_NUMERIC };

        d.num.lo = (uint64_t)coef;
        d.num.hi = (int64_t)(coef >> 64);
        d.num.scale = (uint8_t)scale;
        return d;
}

/* PostgreSQL's numeric_in(): whitespace, sign, digits with an optional point, optional
 * exponent (1.5e-3); the scale is the digits after the point less the exponent (at
 * least 0).  22P02 for bad syntax, 22003 past 38 digits or scale 38, 0A000 for NaN and
 * Infinity. */
int row_numeric_parse(const char *text, size_t len, struct row_datum *ret,
                      struct row_error *err);
/* numeric_out(): "-12.50", "0.5", "0" (never "-0").  buf holds ROW_TEXT_SCRATCH
 * bytes; returns the length (NUL-terminated). */
size_t row_numeric_format(const struct row_datum *d, char *buf);
/* SQL comparison by value (1.5 = 1.50). */
int row_numeric_cmp(const struct row_datum *a, const struct row_datum *b);
/* The same number with no trailing fractional zeros (1.50 -> 1.5, 2.00 -> 2). */
struct row_datum row_numeric_normalize(const struct row_datum *d);
struct row_datum row_numeric_from_int(int64_t v);
/* To int4/int8, rounding half away from zero; 22003 "integer/bigint out of range". */
int row_numeric_to_int(const struct row_datum *d, enum row_type type, struct row_datum *ret,
                       struct row_error *err);
/* Arithmetic with PostgreSQL's result scales: + and - the larger scale, * the sum of
 * the scales, / PostgreSQL's select_div_scale() (rounded half away from zero), % the
 * larger scale with the dividend's sign.  22012 for / and % by zero, 22003 when the
 * result does not fit. */
int row_numeric_add(const struct row_datum *a, const struct row_datum *b, struct row_datum *ret,
                    struct row_error *err);
int row_numeric_sub(const struct row_datum *a, const struct row_datum *b, struct row_datum *ret,
                    struct row_error *err);
int row_numeric_mul(const struct row_datum *a, const struct row_datum *b, struct row_datum *ret,
                    struct row_error *err);
int row_numeric_div(const struct row_datum *a, const struct row_datum *b, struct row_datum *ret,
                    struct row_error *err);
int row_numeric_mod(const struct row_datum *a, const struct row_datum *b, struct row_datum *ret,
                    struct row_error *err);
/* round(x, n) (half away from zero) and trunc(x, n): n may be negative (round(1234, -2)
 * = 1200); the result's scale is max(n, 0).  ceil/floor: scale 0. */
int row_numeric_round(const struct row_datum *a, int64_t n, bool truncate,
                      struct row_datum *ret, struct row_error *err);
int row_numeric_ceil_floor(const struct row_datum *a, bool ceil_, struct row_datum *ret,
                           struct row_error *err);
/* Assignment to numeric(precision, scale): rounds to `scale`, then 22003 "numeric field
 * overflow" (PostgreSQL's DETAIL) when the integer part has more than precision - scale
 * digits.  1 <= precision <= 38, 0 <= scale <= precision. */
int row_numeric_typmod(const struct row_datum *a, unsigned precision, unsigned scale,
                       struct row_datum *ret, struct row_error *err);
