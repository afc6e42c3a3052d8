/* test-eval -- common/row/row-expr.c and controller/controller-eval.c: expression
 * semantics (three-valued logic, overflow, division by zero, casts, short circuits),
 * plans from the adapter run over an in-memory store (exact rows, several timestamps,
 * DELETE), plan validation against hostile input, the incremental form, consolidation,
 * and two seeded fuzzers:
 *   - differential: an expression over literals is folded by the adapter; the same
 *     expression over columns holding those literals is evaluated by the engine; both
 *     must agree (folding evaluates eagerly, so it may fail where a short circuit does
 *     not, never the other way round);
 *   - random SELECTs over a table: the analyzer's plans always validate, and running them
 *     fails only with SQL errors, never with a malformed-plan error or a crash.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>

#include "adapter-sql.h"
#include "controller-eval.h"
#include "plan-build.h"
#include "row/row-expr.h"
#include "row/row.h"
#include "t.h"
#include "util.h"

/* ---- Building expressions by hand. ---- */

static Coord__Plan__Expr *lit(int type, struct row_datum d)
{
        Coord__Plan__Expr *e = mk(type);
        Coord__Plan__Datum *v = malloc(sizeof(*v));

        if (!v)
                abort();
        coord__plan__datum__init(v);
        switch (d.kind) {
        case ROW_KIND_NULL:
                v->value_case = COORD__PLAN__DATUM__VALUE_NULL_VALUE;
                v->null_value = true;
                break;
        case ROW_KIND_BOOL:
                v->value_case = COORD__PLAN__DATUM__VALUE_BOOL_VALUE;
                v->bool_value = d.b;
                break;
        case ROW_KIND_INT:
                v->value_case = COORD__PLAN__DATUM__VALUE_INT_VALUE;
                v->int_value = d.i;
                break;
        default:
                v->value_case = COORD__PLAN__DATUM__VALUE_TEXT_VALUE;
                v->text_value.data = malloc(d.text.len + 1);
                if (!v->text_value.data)
                        abort();
                memcpy(v->text_value.data, d.text.ptr, d.text.len);
                v->text_value.len = d.text.len;
                break;
        }
        e->kind_case = COORD__PLAN__EXPR__KIND_LITERAL;
        e->literal = v;
        return e;
}

#define I4(v) lit(ROW_TYPE_INT4, ROW_DATUM_INT(v))
#define I8(v) lit(ROW_TYPE_INT8, ROW_DATUM_INT(v))
#define B(v) lit(ROW_TYPE_BOOL, ROW_DATUM_BOOL(v))
#define NUL(type) lit(type, ROW_DATUM_NULL)
#define TXT(s) lit(ROW_TYPE_TEXT, ROW_DATUM_TEXT(s, (uint32_t)strlen(s)))


/* Evaluate (and free) e over row; return 0 and *ret, or the error. */
static int run_expr(Coord__Plan__Expr *e, const struct row_datum *row, size_t n,
                    struct row_datum *ret, struct row_error *err, char *text, size_t text_size)
{
        struct row_arena arena = ROW_ARENA_INIT;
        struct row_expr_ctx ctx = { .now = 77, .has_now = true, .arena = &arena };
        int r;

        memset(err, 0, sizeof(*err));
        r = row_expr_eval(e, row, n, &ctx, ret, err);
        /* Keep a computed text past the arena. */
        if (r == 0 && ret->kind == ROW_KIND_TEXT && text) {
                snprintf(text, text_size, "%.*s", (int)ret->text.len, ret->text.ptr);
                ret->text.ptr = text;
        }
        row_arena_done(&arena);
        coord__plan__expr__free_unpacked(e, NULL);
        return r;
}

static void expect_datum(Coord__Plan__Expr *e, struct row_datum want)
{
        struct row_error err;
        struct row_datum got;
        char text[64];

        if (run_expr(e, NULL, 0, &got, &err, text, sizeof(text)) < 0) {
                fprintf(stderr, "\n  unexpected %s %s\n", err.sqlstate, err.message);
                CU_FAIL("evaluation failed");
                return;
        }
        CU_ASSERT_EQUAL(got.kind, want.kind);
        if (got.kind == want.kind)
                CU_ASSERT_EQUAL(row_datum_compare(&got, &want), 0);
}

static void expect_eval_error(Coord__Plan__Expr *e, const char *sqlstate, const char *message)
{
        struct row_error err;
        struct row_datum got;

        CU_ASSERT_EQUAL(run_expr(e, NULL, 0, &got, &err, NULL, 0), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, sqlstate);
        if (message)
                CU_ASSERT_STRING_EQUAL(err.message, message);
}

#define T ROW_DATUM_BOOL(true)
#define FA ROW_DATUM_BOOL(false)
#define N ROW_DATUM_NULL

static Coord__Plan__Expr *tv(int v)       /* 0 false, 1 true, 2 NULL */
{
        return v == 2 ? NUL(ROW_TYPE_BOOL) : B(v == 1);
}

/* ---- Expression semantics. ---- */

static void test_three_valued(void)
{
        /* Rows: a in {F, T, N}; columns: b in {F, T, N}. */
        const struct row_datum and_[3][3] = { { FA, FA, FA }, { FA, T, N }, { FA, N, N } };
        const struct row_datum or_[3][3] = { { FA, T, N }, { T, T, T }, { N, T, N } };
        const struct row_datum not_[3] = { T, FA, N };

        for (int a = 0; a < 3; a++) {
                for (int b = 0; b < 3; b++) {
                        expect_datum(call(ROW_TYPE_BOOL, F(AND), 2, tv(a), tv(b)), and_[a][b]);
                        expect_datum(call(ROW_TYPE_BOOL, F(OR), 2, tv(a), tv(b)), or_[a][b]);
                }
                expect_datum(call(ROW_TYPE_BOOL, F(NOT), 1, tv(a)), not_[a]);
                expect_datum(call(ROW_TYPE_BOOL, F(IS_NULL), 1, tv(a)), ROW_DATUM_BOOL(a == 2));
                expect_datum(call(ROW_TYPE_BOOL, F(IS_NOT_NULL), 1, tv(a)),
                             ROW_DATUM_BOOL(a != 2));
        }
        /* Variadic: one FALSE decides AND even after a NULL; all TRUE and a NULL is NULL. */
        expect_datum(call(ROW_TYPE_BOOL, F(AND), 3, tv(1), tv(2), tv(0)), FA);
        expect_datum(call(ROW_TYPE_BOOL, F(AND), 3, tv(1), tv(2), tv(1)), N);
        expect_datum(call(ROW_TYPE_BOOL, F(OR), 3, tv(0), tv(2), tv(1)), T);
}

static void test_comparisons(void)
{
        const Coord__Plan__Func fs[] = { F(EQ), F(NE), F(LT), F(LE), F(GT), F(GE) };
        /* For (1, 2), (2, 2), (3, 2). */
        const bool want[3][6] = {
                { false, true, true, true, false, false },
                { true, false, false, true, false, true },
                { false, true, false, false, true, true },
        };

        for (int i = 0; i < 3; i++)
                for (size_t k = 0; k < ELEMENTSOF(fs); k++) {
                        expect_datum(call(ROW_TYPE_BOOL, fs[k], 2, I8(i + 1), I8(2)),
                                     ROW_DATUM_BOOL(want[i][k]));
                        expect_datum(call(ROW_TYPE_BOOL, fs[k], 2, NUL(ROW_TYPE_INT8), I8(2)), N);
                }
        expect_datum(call(ROW_TYPE_BOOL, F(LT), 2, TXT("ab"), TXT("b")), T);
        expect_datum(call(ROW_TYPE_BOOL, F(LT), 2, TXT("ab"), TXT("abc")), T);
        expect_datum(call(ROW_TYPE_BOOL, F(EQ), 2, TXT(""), TXT("")), T);
        expect_datum(call(ROW_TYPE_BOOL, F(LT), 2, B(false), B(true)), T);
        expect_datum(call(ROW_TYPE_BOOL, F(EQ), 2, NUL(ROW_TYPE_TEXT), NUL(ROW_TYPE_TEXT)), N);
}

/* GREATEST / LEAST: NULLs skipped, NULL when all are, int4 and int8 mix by value, texts
 * by bytes, an error in any argument is the call's (every argument is evaluated). */
static void test_greatest_least(void)
{
        expect_datum(call(ROW_TYPE_INT8, F(GREATEST), 3, I8(1), NUL(ROW_TYPE_INT8), I8(3)), ROW_DATUM_INT(3));
        expect_datum(call(ROW_TYPE_INT8, F(LEAST), 3, I8(4), NUL(ROW_TYPE_INT8), I8(3)), ROW_DATUM_INT(3));
        expect_datum(call(ROW_TYPE_INT8, F(GREATEST), 2, NUL(ROW_TYPE_INT8), NUL(ROW_TYPE_INT8)), N);
        expect_datum(call(ROW_TYPE_INT8, F(GREATEST), 1, I8(-7)), ROW_DATUM_INT(-7));
        expect_datum(call(ROW_TYPE_TEXT, F(GREATEST), 3, TXT("a"), TXT("b"), TXT("B")), ROW_DATUM_TEXT("b", 1));
        expect_datum(call(ROW_TYPE_TEXT, F(LEAST), 3, TXT("a"), TXT("b"), TXT("B")), ROW_DATUM_TEXT("B", 1));
        expect_datum(call(ROW_TYPE_BOOL, F(LEAST), 2, B(true), B(false)), FA);
        expect_eval_error(call(ROW_TYPE_INT8, F(GREATEST), 2,
                               call(ROW_TYPE_INT8, F(DIV), 2, I8(1), I8(0)), I8(2)), "22012", NULL);
}

static void test_arithmetic(void)
{
        expect_datum(call(ROW_TYPE_INT4, F(ADD), 2, I4(2), I4(3)), ROW_DATUM_INT(5));
        expect_datum(call(ROW_TYPE_INT4, F(SUB), 2, I4(2), I4(3)), ROW_DATUM_INT(-1));
        expect_datum(call(ROW_TYPE_INT4, F(MUL), 2, I4(-4), I4(3)), ROW_DATUM_INT(-12));
        expect_datum(call(ROW_TYPE_INT4, F(DIV), 2, I4(-7), I4(2)), ROW_DATUM_INT(-3));
        expect_datum(call(ROW_TYPE_INT4, F(MOD), 2, I4(-7), I4(2)), ROW_DATUM_INT(-1));
        expect_datum(call(ROW_TYPE_INT4, F(MOD), 2, I4(7), I4(-2)), ROW_DATUM_INT(1));
        expect_datum(call(ROW_TYPE_INT4, F(NEG), 1, I4(5)), ROW_DATUM_INT(-5));
        expect_datum(call(ROW_TYPE_INT4, F(ADD), 2, I4(1), NUL(ROW_TYPE_INT4)), N);
        /* COALESCE: the first argument that is not NULL; the rest are not evaluated. */
        expect_datum(call(ROW_TYPE_INT4, F(COALESCE), 3, NUL(ROW_TYPE_INT4), I4(7), I4(8)),
                     ROW_DATUM_INT(7));
        expect_datum(call(ROW_TYPE_INT4, F(COALESCE), 2, NUL(ROW_TYPE_INT4), NUL(ROW_TYPE_INT4)), N);
        expect_datum(call(ROW_TYPE_INT4, F(COALESCE), 2, I4(1),
                          call(ROW_TYPE_INT4, F(DIV), 2, I4(1), I4(0))), ROW_DATUM_INT(1));
        expect_eval_error(call(ROW_TYPE_INT4, F(COALESCE), 2, NUL(ROW_TYPE_INT4),
                               call(ROW_TYPE_INT4, F(DIV), 2, I4(1), I4(0))), "22012", NULL);
        expect_eval_error(call(ROW_TYPE_INT4, F(COALESCE), 1, I8(INT64_MAX)), "22003", NULL);
        expect_datum(call(ROW_TYPE_INT4, F(DIV), 2, NUL(ROW_TYPE_INT4), I4(0)), N);

        /* int4 overflows at the int4 range, int8 at the int8 range. */
        expect_eval_error(call(ROW_TYPE_INT4, F(ADD), 2, I4(INT32_MAX), I4(1)), "22003",
                          "integer out of range");
        expect_datum(call(ROW_TYPE_INT8, F(ADD), 2, I8(INT32_MAX), I8(1)),
                     ROW_DATUM_INT((int64_t)INT32_MAX + 1));
        expect_eval_error(call(ROW_TYPE_INT8, F(ADD), 2, I8(INT64_MAX), I8(1)), "22003",
                          "bigint out of range");
        expect_eval_error(call(ROW_TYPE_INT8, F(SUB), 2, I8(INT64_MIN), I8(1)), "22003", NULL);
        expect_eval_error(call(ROW_TYPE_INT8, F(MUL), 2, I8(INT64_MAX / 2 + 1), I8(2)), "22003",
                          NULL);
        expect_eval_error(call(ROW_TYPE_INT4, F(MUL), 2, I4(65536), I4(65536)), "22003", NULL);
        expect_eval_error(call(ROW_TYPE_INT4, F(NEG), 1, I4(INT32_MIN)), "22003", NULL);
        expect_eval_error(call(ROW_TYPE_INT8, F(NEG), 1, I8(INT64_MIN)), "22003", NULL);
        expect_eval_error(call(ROW_TYPE_INT8, F(DIV), 2, I8(INT64_MIN), I8(-1)), "22003",
                          "bigint out of range");
        expect_eval_error(call(ROW_TYPE_INT4, F(DIV), 2, I4(INT32_MIN), I4(-1)), "22003",
                          "integer out of range");
        expect_datum(call(ROW_TYPE_INT8, F(MOD), 2, I8(INT64_MIN), I8(-1)), ROW_DATUM_INT(0));
        expect_eval_error(call(ROW_TYPE_INT4, F(DIV), 2, I4(1), I4(0)), "22012",
                          "division by zero");
        expect_eval_error(call(ROW_TYPE_INT8, F(MOD), 2, I8(1), I8(0)), "22012",
                          "division by zero");
}

static void test_casts(void)
{
        expect_datum(call(ROW_TYPE_INT4, F(CAST), 1, TXT(" 12 ")), ROW_DATUM_INT(12));
        expect_eval_error(call(ROW_TYPE_INT4, F(CAST), 1, TXT("x")), "22P02",
                          "invalid input syntax for type integer: \"x\"");
        expect_eval_error(call(ROW_TYPE_INT4, F(CAST), 1, I8(INT32_MAX + 1LL)), "22003",
                          "integer out of range");
        expect_datum(call(ROW_TYPE_INT8, F(CAST), 1, I4(-3)), ROW_DATUM_INT(-3));
        expect_datum(call(ROW_TYPE_TEXT, F(CAST), 1, I8(-45)), ROW_DATUM_TEXT("-45", 3));
        expect_datum(call(ROW_TYPE_TEXT, F(CAST), 1, B(true)), ROW_DATUM_TEXT("true", 4));
        expect_datum(call(ROW_TYPE_TEXT, F(CAST), 1, B(false)), ROW_DATUM_TEXT("false", 5));
        expect_datum(call(ROW_TYPE_BOOL, F(CAST), 1, TXT("off")), FA);
        expect_datum(call(ROW_TYPE_BOOL, F(CAST), 1, I4(7)), T);
        expect_datum(call(ROW_TYPE_INT4, F(CAST), 1, B(true)), ROW_DATUM_INT(1));
        expect_datum(call(ROW_TYPE_INT8, F(CAST), 1, NUL(ROW_TYPE_TEXT)), N);

        CU_ASSERT(row_expr_cast_allowed(ROW_TYPE_INT4, ROW_TYPE_BOOL));
        CU_ASSERT(row_expr_cast_allowed(ROW_TYPE_TEXT, ROW_TYPE_INT8));
        CU_ASSERT(!row_expr_cast_allowed(ROW_TYPE_INT8, ROW_TYPE_BOOL));
        CU_ASSERT(!row_expr_cast_allowed(ROW_TYPE_BOOL, ROW_TYPE_INT8));
}

/* ---- Numeric. ---- */

static Coord__Plan__Expr *NUMV(const char *text)
{
        Coord__Plan__Expr *e = mk(ROW_TYPE_NUMERIC);
        Coord__Plan__Datum *v = malloc(sizeof(*v));

        if (!v || !(e->literal = v))
                abort();
        coord__plan__datum__init(v);
        v->value_case = COORD__PLAN__DATUM__VALUE_NUMERIC_VALUE;
        v->numeric_value = strdup(text);
        e->kind_case = COORD__PLAN__EXPR__KIND_LITERAL;
        return e;
}

#define NUMT ROW_TYPE_NUMERIC

/* Evaluate e (numeric) and compare its PostgreSQL text with want. */
static void expect_num(Coord__Plan__Expr *e, const char *want)
{
        struct row_error err;
        struct row_datum got;
        char buf[ROW_TEXT_SCRATCH];

        if (run_expr(e, NULL, 0, &got, &err, NULL, 0) < 0) {
                fprintf(stderr, "\n  unexpected %s %s (want %s)\n", err.sqlstate, err.message, want);
                CU_FAIL("evaluation failed");
                return;
        }
        CU_ASSERT_EQUAL_FATAL(got.kind, ROW_KIND_NUMERIC);
        row_numeric_format(&got, buf);
        if (strcmp(buf, want) != 0)
                fprintf(stderr, "\n  got %s, want %s\n", buf, want);
        CU_ASSERT_STRING_EQUAL(buf, want);
}

static void test_numeric_io(void)
{
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "1.50", "1.50" },     { ".5", "0.5" },        { "-0.00", "0.00" },
                { " +7 ", "7" },        { "1e3", "1000" },      { "1.5e-3", "0.0015" },
                { "1.50e1", "15.0" },   { "-12.345", "-12.345" }, { "0", "0" },
                { "5.", "5" },          { "1E+2", "100" },      { "0.000", "0.000" },
                { "99999999999999999999999999999999999999", "99999999999999999999999999999999999999" },
                { "-0.00000000000000000000000000000000000001",
                  "-0.00000000000000000000000000000000000001" },
        };
        static const struct {
                const char *in, *sqlstate;
        } bad[] = {
                { "abc", "22P02" }, { "", "22P02" },    { "1.2.3", "22P02" }, { "1e", "22P02" },
                { ".", "22P02" },   { "- 1", "22P02" }, { "NaN", "0A000" },   { "-Infinity", "0A000" },
                { "100000000000000000000000000000000000000", "22003" },
                { "0.000000000000000000000000000000000000001", "22003" },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct row_datum d;
                char buf[ROW_TEXT_SCRATCH];
                const char *s;
                size_t n;

                CU_ASSERT_EQUAL_FATAL(row_datum_parse(ROW_TYPE_NUMERIC, cases[i].in,
                                                      strlen(cases[i].in), &d, NULL), 0);
                CU_ASSERT_EQUAL(row_datum_format(&d, buf, &s, &n), 0);
                CU_ASSERT_EQUAL(n, strlen(cases[i].out));
                CU_ASSERT_STRING_EQUAL(s, cases[i].out);
        }
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct row_error err;
                struct row_datum d;

                CU_ASSERT_EQUAL(row_datum_parse(ROW_TYPE_NUMERIC, bad[i].in, strlen(bad[i].in),
                                                &d, &err), -EINVAL);
                CU_ASSERT_STRING_EQUAL(err.sqlstate, bad[i].sqlstate);
        }
        /* The encoding round-trips; 1.5 and 1.50 are different bytes, equal numbers. */
        {
                struct row_datum a, b, back[1];
                uint8_t *ra, *rb;
                size_t la, lb;

                CU_ASSERT_EQUAL(row_datum_parse(NUMT, "-1.5", 4, &a, NULL), 0);
                CU_ASSERT_EQUAL(row_datum_parse(NUMT, "-1.50", 5, &b, NULL), 0);
                CU_ASSERT_EQUAL_FATAL(row_encode(&a, 1, &ra, &la), 0);
                CU_ASSERT_EQUAL_FATAL(row_encode(&b, 1, &rb, &lb), 0);
                CU_ASSERT(la != lb || memcmp(ra, rb, la) != 0);
                CU_ASSERT_EQUAL(row_decode(ra, la, back, 1), 1);
                CU_ASSERT_EQUAL(row_datum_compare(&back[0], &a), 0);
                CU_ASSERT_EQUAL(row_numeric_cmp(&a, &b), 0);
                CU_ASSERT(row_datum_compare(&a, &b) < 0);
                CU_ASSERT_EQUAL(row_compare(ra, la, rb, lb), -1);
                {
                        struct row_datum n1 = row_numeric_normalize(&b);

                        CU_ASSERT_EQUAL(row_datum_compare(&n1, &a), 0);
                }
                /* A coefficient of 10^38 is not canonical: -EBADMSG. */
                ra[3] = 0;
                memset(ra + 4, 0xff, 16);
                ra[19] = 0x7f;
                CU_ASSERT_EQUAL(row_validate(ra, la), -EBADMSG);
                free(ra);
                free(rb);
        }
}

static void test_numeric_arith(void)
{
        expect_num(call(NUMT, F(ADD), 2, NUMV("1.5"), NUMV("2.25")), "3.75");
        expect_num(call(NUMT, F(ADD), 2, NUMV("1.50"), NUMV("-1.5")), "0.00");
        expect_num(call(NUMT, F(SUB), 2, NUMV("1"), NUMV("0.001")), "0.999");
        expect_num(call(NUMT, F(MUL), 2, NUMV("1.5"), NUMV("-2.25")), "-3.375");
        expect_num(call(NUMT, F(MUL), 2, NUMV("0.10"), NUMV("0")), "0.00");
        expect_num(call(NUMT, F(NEG), 1, NUMV("1.50")), "-1.50");
        expect_num(call(NUMT, F(NEG), 1, NUMV("0.0")), "0.0");
        expect_num(call(NUMT, F(ABS), 1, NUMV("-3.10")), "3.10");
        /* Division: PostgreSQL's select_div_scale(). */
        expect_num(call(NUMT, F(DIV), 2, NUMV("1.0"), NUMV("3")), "0.33333333333333333333");
        expect_num(call(NUMT, F(DIV), 2, NUMV("10"), NUMV("4.0")), "2.5000000000000000");
        expect_num(call(NUMT, F(DIV), 2, NUMV("3"), NUMV("2")), "1.5000000000000000");
        expect_num(call(NUMT, F(DIV), 2, NUMV("2"), NUMV("3")), "0.66666666666666666667");
        expect_num(call(NUMT, F(DIV), 2, NUMV("-2"), NUMV("3")), "-0.66666666666666666667");
        expect_num(call(NUMT, F(DIV), 2, NUMV("100000"), NUMV("3")), "33333.333333333333");
        expect_num(call(NUMT, F(DIV), 2, NUMV("1"), NUMV("7.000000")), "0.14285714285714285714");
        expect_num(call(NUMT, F(DIV), 2, NUMV("0"), NUMV("7")), "0.00000000000000000000");
        expect_num(call(NUMT, F(DIV), 2, NUMV("12345678"), NUMV("0.001")),
                   "12345678000.00000000");
        /* The rest as PostgreSQL 15 prints them. */
        expect_num(call(NUMT, F(DIV), 2, NUMV("1"), NUMV("3000000.0")),
                   "0.000000333333333333333333");
        expect_num(call(NUMT, F(DIV), 2, NUMV("5"), NUMV("0.0003")), "16666.666666666667");
        expect_num(call(NUMT, F(DIV), 2, NUMV("0.0001"), NUMV("3")),
                   "0.000033333333333333333333");
        expect_num(call(NUMT, F(DIV), 2, NUMV("9999"), NUMV("10000")), "0.99990000000000000000");
        expect_num(call(NUMT, F(DIV), 2, NUMV("10000"), NUMV("9999")), "1.0001000100010001");
        expect_num(call(NUMT, F(DIV), 2, NUMV("1"), NUMV("1")), "1.00000000000000000000");
        expect_num(call(NUMT, F(DIV), 2, NUMV("123456789.123"), NUMV("0.7")), "176366841.60428571");
        expect_eval_error(call(NUMT, F(DIV), 2, NUMV("1"), NUMV("0.00")), "22012",
                          "division by zero");
        expect_num(call(NUMT, F(MOD), 2, NUMV("-7.5"), NUMV("2")), "-1.5");
        expect_num(call(NUMT, F(MOD), 2, NUMV("7"), NUMV("-2.00")), "1.00");
        expect_eval_error(call(NUMT, F(MOD), 2, NUMV("1"), NUMV("0")), "22012", NULL);
        /* Overflow past 38 digits or scale 38: 22003, never rounded. */
        expect_eval_error(call(NUMT, F(ADD), 2, NUMV("99999999999999999999999999999999999999"),
                               NUMV("1")), "22003", "value overflows numeric format");
        expect_eval_error(call(NUMT, F(MUL), 2, NUMV("0.0000000000000000000001"),
                               NUMV("0.0000000000000000000001")), "22003", NULL);
        expect_eval_error(call(NUMT, F(MUL), 2, NUMV("10000000000000000000"),
                               NUMV("10000000000000000000")), "22003", NULL);
        expect_num(call(NUMT, F(ADD), 2, NUMV("99999999999999999999999999999999999998"),
                        NUMV("1")), "99999999999999999999999999999999999999");
        /* Comparisons by value. */
        expect_datum(call(ROW_TYPE_BOOL, F(EQ), 2, NUMV("1.5"), NUMV("1.50")), T);
        expect_datum(call(ROW_TYPE_BOOL, F(LT), 2, NUMV("-2"), NUMV("-1.99")), T);
        expect_datum(call(ROW_TYPE_BOOL, F(GT), 2, NUMV("10"), NUMV("9.999")), T);
        expect_datum(call(ROW_TYPE_BOOL, F(NE), 2, NUMV("0.0"), NUMV("-0")), FA);
        expect_datum(call(ROW_TYPE_BOOL, F(EQ), 2, NUMV("1"), NUL(NUMT)), N);
}

static void test_numeric_round_cast(void)
{
        expect_num(call(NUMT, F(ROUND), 2, NUMV("2.5"), I4(0)), "3");
        expect_num(call(NUMT, F(ROUND), 2, NUMV("-2.5"), I4(0)), "-3");
        expect_num(call(NUMT, F(ROUND), 2, NUMV("42.4382"), I4(2)), "42.44");
        expect_num(call(NUMT, F(ROUND), 2, NUMV("1.5"), I4(4)), "1.5000");
        expect_num(call(NUMT, F(ROUND), 2, NUMV("1250"), I4(-2)), "1300");
        expect_num(call(NUMT, F(ROUND), 2, NUMV("-1249.9"), I4(-2)), "-1200");
        expect_num(call(NUMT, F(ROUND), 2, NUMV("0.4"), I4(0)), "0");
        expect_num(call(NUMT, F(ROUND), 2, NUMV("5"), I4(-50)), "0");
        expect_num(call(NUMT, F(TRUNC), 2, NUMV("-2.99"), I4(1)), "-2.9");
        expect_num(call(NUMT, F(TRUNC), 2, NUMV("1299"), I4(-2)), "1200");
        expect_num(call(NUMT, F(CEIL), 1, NUMV("-2.5")), "-2");
        expect_num(call(NUMT, F(CEIL), 1, NUMV("2.01")), "3");
        expect_num(call(NUMT, F(CEIL), 1, NUMV("-0.5")), "0");
        expect_num(call(NUMT, F(FLOOR), 1, NUMV("-2.5")), "-3");
        expect_num(call(NUMT, F(FLOOR), 1, NUMV("2.00")), "2");
        /* numeric(p, s) */
        expect_num(call(NUMT, F(NUMERIC_TYPMOD), 3, NUMV("1.005"), I4(5), I4(2)), "1.01");
        expect_num(call(NUMT, F(NUMERIC_TYPMOD), 3, NUMV("-999.994"), I4(5), I4(2)), "-999.99");
        expect_num(call(NUMT, F(NUMERIC_TYPMOD), 3, NUMV("7"), I4(5), I4(2)), "7.00");
        expect_eval_error(call(NUMT, F(NUMERIC_TYPMOD), 3, NUMV("999.995"), I4(5), I4(2)),
                          "22003", "numeric field overflow");
        expect_eval_error(call(NUMT, F(NUMERIC_TYPMOD), 3, NUMV("1"), I4(2), I4(2)), "22003",
                          "numeric field overflow");
        /* Casts: to integers round half away from zero. */
        expect_datum(call(ROW_TYPE_INT4, F(CAST), 1, NUMV("2.5")), ROW_DATUM_INT(3));
        expect_datum(call(ROW_TYPE_INT4, F(CAST), 1, NUMV("-2.5")), ROW_DATUM_INT(-3));
        expect_datum(call(ROW_TYPE_INT8, F(CAST), 1, NUMV("-9223372036854775808.4")),
                     ROW_DATUM_INT(INT64_MIN));
        expect_eval_error(call(ROW_TYPE_INT8, F(CAST), 1, NUMV("9223372036854775807.5")), "22003",
                          "bigint out of range");
        expect_eval_error(call(ROW_TYPE_INT4, F(CAST), 1, NUMV("2147483647.5")), "22003",
                          "integer out of range");
        expect_num(call(NUMT, F(CAST), 1, I8(INT64_MIN)), "-9223372036854775808");
        expect_num(call(NUMT, F(CAST), 1, TXT(" 1.50 ")), "1.50");
        expect_datum(call(ROW_TYPE_TEXT, F(CAST), 1, NUMV("-0.50")), ROW_DATUM_TEXT("-0.50", 5));
        expect_eval_error(call(NUMT, F(CAST), 1, TXT("x")), "22P02",
                          "invalid input syntax for type numeric: \"x\"");
        CU_ASSERT(row_expr_cast_allowed(ROW_TYPE_NUMERIC, ROW_TYPE_INT4));
        CU_ASSERT(row_expr_cast_allowed(ROW_TYPE_INT8, ROW_TYPE_NUMERIC));
        CU_ASSERT(!row_expr_cast_allowed(ROW_TYPE_BOOL, ROW_TYPE_NUMERIC));
}

static void test_short_circuit(void)
{
        /* 1/0 = 1 is never evaluated after a deciding value ... */
        expect_datum(call(ROW_TYPE_BOOL, F(AND), 2, B(false),
                          call(ROW_TYPE_BOOL, F(EQ), 2, call(ROW_TYPE_INT4, F(DIV), 2, I4(1), I4(0)),
                               I4(1))),
                     FA);
        expect_datum(call(ROW_TYPE_BOOL, F(OR), 2, B(true),
                          call(ROW_TYPE_BOOL, F(EQ), 2, call(ROW_TYPE_INT4, F(DIV), 2, I4(1), I4(0)),
                               I4(1))),
                     T);
        /* ... but NULL decides nothing, and order matters. */
        expect_eval_error(call(ROW_TYPE_BOOL, F(AND), 2, NUL(ROW_TYPE_BOOL),
                               call(ROW_TYPE_BOOL, F(EQ), 2,
                                    call(ROW_TYPE_INT4, F(DIV), 2, I4(1), I4(0)), I4(1))),
                          "22012", NULL);
        expect_eval_error(call(ROW_TYPE_BOOL, F(AND), 2,
                               call(ROW_TYPE_BOOL, F(EQ), 2,
                                    call(ROW_TYPE_INT4, F(DIV), 2, I4(1), I4(0)), I4(1)),
                               B(false)),
                          "22012", NULL);
}

static void test_mz_now_and_columns(void)
{
        const struct row_datum row[] = { ROW_DATUM_INT(5), ROW_DATUM_TEXT("k", 1) };
        struct row_arena arena = ROW_ARENA_INIT;
        struct row_expr_ctx none = { .arena = &arena };
        struct row_error err;
        struct row_datum d;
        Coord__Plan__Expr *e;
        char text[8];
        bool keep;

        expect_datum(call(ROW_TYPE_INT8, F(MZ_NOW), 0), ROW_DATUM_INT(77));
        e = call(ROW_TYPE_INT8, F(MZ_NOW), 0);
        CU_ASSERT_EQUAL(row_expr_eval(e, NULL, 0, &none, &d, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "XX000");
        CU_ASSERT_EQUAL(row_expr_eval(e, NULL, 0, NULL, &d, &err), -EINVAL);
        coord__plan__expr__free_unpacked(e, NULL);
        row_arena_done(&arena);

        CU_ASSERT_EQUAL(run_expr(call(ROW_TYPE_INT4, F(MUL), 2, col(ROW_TYPE_INT4, 0), I4(3)),
                                 row, 2, &d, &err, NULL, 0), 0);
        CU_ASSERT_EQUAL(d.i, 15);
        CU_ASSERT_EQUAL(run_expr(col(ROW_TYPE_TEXT, 1), row, 2, &d, &err, text, sizeof(text)), 0);
        CU_ASSERT(d.kind == ROW_KIND_TEXT && d.text.len == 1 && d.text.ptr[0] == 'k');
        CU_ASSERT_EQUAL(run_expr(col(ROW_TYPE_TEXT, 2), row, 2, &d, &err, NULL, 0), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "XX000");

        e = call(ROW_TYPE_BOOL, F(GT), 2, col(ROW_TYPE_INT4, 0), I4(4));
        CU_ASSERT_EQUAL(row_expr_eval_predicate(e, row, 2, NULL, &keep, &err), 0);
        CU_ASSERT_TRUE(keep);
        coord__plan__expr__free_unpacked(e, NULL);
        e = NUL(ROW_TYPE_BOOL);
        CU_ASSERT_EQUAL(row_expr_eval_predicate(e, row, 2, NULL, &keep, &err), 0);
        CU_ASSERT_FALSE(keep);                  /* NULL drops the row */
        coord__plan__expr__free_unpacked(e, NULL);
        e = I4(1);
        CU_ASSERT_EQUAL(row_expr_eval_predicate(e, row, 2, NULL, &keep, &err), -EINVAL);
        coord__plan__expr__free_unpacked(e, NULL);
}

static void expect_like(const char *s, const char *p, bool fold, bool want)
{
        struct row_datum d;
        struct row_error err;
        int r = run_expr(call(ROW_TYPE_BOOL, fold ? F(ILIKE) : F(LIKE), 2, TXT(s), TXT(p)), NULL, 0,
                         &d, &err, NULL, 0);

        CU_ASSERT_EQUAL(r, 0);
        if (r == 0 && (d.kind != ROW_KIND_BOOL || d.b != want)) {
            fprintf(stderr, "\n  '%s' %s '%s': expected %s\n", s, fold ? "ILIKE" : "LIKE", p,
                    want ? "true" : "false");
            CU_FAIL("wrong LIKE");
        }
}

static void test_like(void)
{
        static const struct {
                const char *s, *p;
                bool want;
        } cases[] = {
                { "abc", "abc", true },   { "abc", "a%", true },      { "abc", "%c", true },
                { "abc", "%b%", true },   { "abc", "a_c", true },     { "abc", "a_", false },
                { "abc", "", false },     { "", "", true },           { "", "%", true },
                { "", "_", false },       { "abc", "%%%", true },     { "aaa", "a%a%a", true },
                { "aa", "a%a%a", false }, { "abc", "ab", false },     { "ab", "abc", false },
                { "a%b", "a\\%b", true }, { "axb", "a\\%b", false }, { "a_b", "a\\_b", true },
                { "axb", "a\\_b", false }, { "a\\b", "a\\\\b", true }, { "abc", "a\\bc", true },
                { "a\xc3\xb1" "b", "a_b", true }, { "a\xc3\xb1" "b", "a__b", false },
                { "\xc3\xb1", "_", true },
                { "\xe2\x82\xac", "%\xe2\x82\xac", true },
                { "mississippi", "%iss%ppi", true }, { "mississippi", "%iss%pp", false },
                { "mississippi", "m%s%s%s%i", true }, { "ABC", "abc", false },
        };
        struct row_datum d;
        struct row_error err;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                expect_like(cases[i].s, cases[i].p, false, cases[i].want);
        /* ILIKE lowers both sides as lower() does (PostgreSQL in a UTF-8 database). */
        expect_like("ABC", "abc", true, true);
        expect_like("aBc", "A%C", true, true);
        expect_like("\xc3\x91", "\xc3\xb1", true, true);         /* Ñ, ñ */
        expect_like("\xc3\x91X", "_x", true, true);
        expect_like("A%", "a\\%", true, true);
        expect_like("abd", "ABC", true, false);
        expect_datum(call(ROW_TYPE_BOOL, F(LIKE), 2, NUL(ROW_TYPE_TEXT), TXT("%")), N);
        expect_datum(call(ROW_TYPE_BOOL, F(LIKE), 2, TXT("a"), NUL(ROW_TYPE_TEXT)), N);
        expect_eval_error(call(ROW_TYPE_BOOL, F(LIKE), 2, TXT("a"), TXT("ab\\")), "22025",
                          "LIKE pattern must not end with escape character");
        /* Even where the text ends first, as PostgreSQL checks the whole pattern. */
        CU_ASSERT_EQUAL(run_expr(call(ROW_TYPE_BOOL, F(LIKE), 2, TXT("zz"), TXT("a\\")), NULL, 0,
                                 &d, &err, NULL, 0), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "22025");
}

static void expect_regex(const char *s, const char *p, bool fold, bool want)
{
        expect_datum(call(ROW_TYPE_BOOL, fold ? F(REGEX_IMATCH) : F(REGEX_MATCH), 2, TXT(s), TXT(p)),
                     ROW_DATUM_BOOL(want));
}

/* ~ and ~*: POSIX EREs as PostgreSQL's AREs read them; what the two read differently is
 * refused (0A000), a pattern that does not compile is 2201B. */
static void test_regex(void)
{
        static const struct {
                const char *s, *p;
                bool want;
        } cases[] = {
                { "abc", "b", true },            { "abc", "^b", false },
                { "abc", "^a.c$", true },         { "pg_toast", "^pg_toast", true },
                { "public", "^pg_toast", false }, { "public", "^pg_", false },
                { "", "", true },                 { "abc", "", true },
                { "t1", "^(t1)$", true },         { "t12", "^(t1)$", false },
                { "foo", "^(foo|bar)$", true },   { "abab", "^(ab)+$", true },
                { "a.c", "a\\.c", true },         { "abc", "a\\.c", false },
                { "x]y", "[]]", true },           { "ab", "[^a]", true },
                { "a1", "[[:digit:]]", true },    { "ab", "[[:digit:]]", false },
                { "a{", "a\\{", true },           { "aa", "^(a)\\1$", true },
                { "a\nb", "a.b", true },          /* . matches a newline, as in an ARE */
                { "\xc3\xb1", "^.$", true },      /* one character, two bytes */
                { "ABC", "abc", false },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                expect_regex(cases[i].s, cases[i].p, false, cases[i].want);
        expect_regex("ABC", "abc", true, true);
        expect_regex("aBc", "^A.C$", true, true);
        expect_regex("\xc3\x91", "\xc3\xb1", true, true);       /* Ñ, ñ */
        expect_regex("abd", "ABC", true, false);
        expect_datum(call(ROW_TYPE_BOOL, F(REGEX_MATCH), 2, NUL(ROW_TYPE_TEXT), TXT("a")), N);
        expect_datum(call(ROW_TYPE_BOOL, F(REGEX_MATCH), 2, TXT("a"), NUL(ROW_TYPE_TEXT)), N);
        /* NULL before the pattern is looked at, as for every strict function. */
        expect_datum(call(ROW_TYPE_BOOL, F(REGEX_MATCH), 2, NUL(ROW_TYPE_TEXT), TXT("(")), N);
        expect_eval_error(call(ROW_TYPE_BOOL, F(REGEX_MATCH), 2, TXT("a"), TXT("(")), "2201B",
                          NULL);
        expect_eval_error(call(ROW_TYPE_BOOL, F(REGEX_MATCH), 2, TXT("a"), TXT("a{2,1}")), "2201B",
                          NULL);
        static const char *const refused[] = {
                "\\d", "a\\w+", "\\m", "[\\d]", "[a\\]]", "(?:a)", "a(?=b)", "a*?", "a+?",
                "a??", "a{1,2}?", "***:a", "[[:<:]]a", "a[[:>:]]", "(?i)a",
        };
        for (size_t i = 0; i < ELEMENTSOF(refused); i++)
                expect_eval_error(call(ROW_TYPE_BOOL, F(REGEX_MATCH), 2, TXT("a"), TXT(refused[i])),
                                  "0A000", NULL);
        /* A backslash before a character that is not a letter is literal in both. */
        expect_regex("a*", "a\\*", false, true);
        expect_regex("a*?", "a\\*\\?", false, true);
        expect_regex("a?", "[*?]", false, true);
}

static void test_case_and_text(void)
{
        Coord__Plan__Expr *div0 = call(ROW_TYPE_INT4, F(DIV), 2, I4(1), I4(0));
        char text[64];
        struct row_datum d;
        struct row_error err;

        /* CASE evaluates the first TRUE condition's value, or the else, nothing more. */
        expect_datum(call(ROW_TYPE_INT4, F(CASE), 5, B(false), div0, B(true), I4(5),
                          call(ROW_TYPE_INT4, F(DIV), 2, I4(1), I4(0))),
                     ROW_DATUM_INT(5));
        expect_datum(call(ROW_TYPE_INT4, F(CASE), 5, NUL(ROW_TYPE_BOOL), I4(1), B(false), I4(2),
                          I4(3)),
                     ROW_DATUM_INT(3));
        expect_datum(call(ROW_TYPE_TEXT, F(CASE), 3, B(false), TXT("x"), NUL(ROW_TYPE_TEXT)), N);
        expect_eval_error(call(ROW_TYPE_INT4, F(CASE), 3,
                               call(ROW_TYPE_BOOL, F(EQ), 2,
                                    call(ROW_TYPE_INT4, F(DIV), 2, I4(1), I4(0)), I4(1)),
                               I4(1), I4(2)),
                          "22012", NULL);
        /* int4 values under an int8 CASE; an int8 value under an int4 CASE is range checked. */
        expect_datum(call(ROW_TYPE_INT8, F(CASE), 3, B(true), I4(7), I8(1)), ROW_DATUM_INT(7));
        expect_eval_error(call(ROW_TYPE_INT4, F(CASE), 3, B(true), I8(3000000000LL), I4(1)),
                          "22003", "integer out of range");

        CU_ASSERT_EQUAL(run_expr(call(ROW_TYPE_TEXT, F(CONCAT), 2, TXT("ab"), TXT("c")), NULL, 0,
                                 &d, &err, text, sizeof(text)), 0);
        CU_ASSERT(d.kind == ROW_KIND_TEXT && d.text.len == 3 && memcmp(d.text.ptr, "abc", 3) == 0);
        CU_ASSERT_EQUAL(run_expr(call(ROW_TYPE_TEXT, F(CONCAT), 2, TXT(""), TXT("")), NULL, 0, &d,
                                 &err, text, sizeof(text)), 0);
        CU_ASSERT(d.kind == ROW_KIND_TEXT && d.text.len == 0);
        expect_datum(call(ROW_TYPE_TEXT, F(CONCAT), 2, TXT("a"), NUL(ROW_TYPE_TEXT)), N);
        CU_ASSERT_EQUAL(run_expr(call(ROW_TYPE_TEXT, F(UPPER), 1, TXT("aB\xc3\xb1z")), NULL, 0, &d,
                                 &err, text, sizeof(text)), 0);
        CU_ASSERT(d.text.len == 5 && memcmp(d.text.ptr, "AB\xc3\x91Z", 5) == 0);   /* ñ -> Ñ */
        CU_ASSERT_EQUAL(run_expr(call(ROW_TYPE_TEXT, F(LOWER), 1, TXT("aB\xc3\x91Z")), NULL, 0, &d,
                                 &err, text, sizeof(text)), 0);
        CU_ASSERT(d.text.len == 5 && memcmp(d.text.ptr, "ab\xc3\xb1z", 5) == 0);
        /* A mapping may change a character's length: dotless i (2 bytes) -> I. */
        CU_ASSERT_EQUAL(run_expr(call(ROW_TYPE_TEXT, F(UPPER), 1, TXT("\xc4\xb1x")), NULL, 0, &d,
                                 &err, text, sizeof(text)), 0);
        CU_ASSERT(d.text.len == 2 && memcmp(d.text.ptr, "IX", 2) == 0);
        /* Bytes that are no UTF-8 character pass through. */
        CU_ASSERT_EQUAL(run_expr(call(ROW_TYPE_TEXT, F(UPPER), 1, TXT("a\xff\xc3")), NULL, 0, &d,
                                 &err, text, sizeof(text)), 0);
        CU_ASSERT(d.text.len == 3 && memcmp(d.text.ptr, "A\xff\xc3", 3) == 0);
        expect_datum(call(ROW_TYPE_TEXT, F(LOWER), 1, NUL(ROW_TYPE_TEXT)), N);
        expect_datum(call(ROW_TYPE_INT4, F(LENGTH), 1, TXT("a\xc3\xb1\xe2\x82\xac")), ROW_DATUM_INT(3));
        expect_datum(call(ROW_TYPE_INT4, F(LENGTH), 1, TXT("")), ROW_DATUM_INT(0));
        expect_datum(call(ROW_TYPE_INT4, F(ABS), 1, I4(-5)), ROW_DATUM_INT(5));
        expect_datum(call(ROW_TYPE_INT8, F(ABS), 1, I8(INT64_MAX)), ROW_DATUM_INT(INT64_MAX));
        expect_datum(call(ROW_TYPE_INT4, F(ABS), 1, NUL(ROW_TYPE_INT4)), N);
        expect_eval_error(call(ROW_TYPE_INT4, F(ABS), 1, I4(INT32_MIN)), "22003",
                          "integer out of range");
        expect_eval_error(call(ROW_TYPE_INT8, F(ABS), 1, I8(INT64_MIN)), "22003",
                          "bigint out of range");
        /* An UPDATE's NOT NULL check passes values through and names what NULL breaks. */
        expect_datum(call(ROW_TYPE_INT4, F(ASSERT_NOT_NULL), 3, I4(4), TXT("a"), TXT("t")),
                     ROW_DATUM_INT(4));
        expect_eval_error(call(ROW_TYPE_INT4, F(ASSERT_NOT_NULL), 3, NUL(ROW_TYPE_INT4), TXT("a"),
                               TXT("t")),
                          "23502", "null value in column \"a\" of relation \"t\" violates "
                                   "not-null constraint");
        expect_datum(call(ROW_TYPE_TEXT, F(VARCHAR), 3, TXT("abc"), I4(2), B(true)), ROW_DATUM_TEXT("ab", (uint32_t)strlen("ab")));
        expect_datum(call(ROW_TYPE_TEXT, F(VARCHAR), 3, TXT("ab  "), I4(2), B(false)), ROW_DATUM_TEXT("ab", (uint32_t)strlen("ab")));
        expect_datum(call(ROW_TYPE_TEXT, F(VARCHAR), 3, TXT("ab"), I4(5), B(false)), ROW_DATUM_TEXT("ab", (uint32_t)strlen("ab")));
        expect_datum(call(ROW_TYPE_TEXT, F(VARCHAR), 3, TXT("\xc3\xa9\xe2\x82\xacz"), I4(2), B(true)),
                     ROW_DATUM_TEXT("\xc3\xa9\xe2\x82\xac", (uint32_t)strlen("\xc3\xa9\xe2\x82\xac")));
        expect_datum(call(ROW_TYPE_TEXT, F(VARCHAR), 3, NUL(ROW_TYPE_TEXT), I4(1), B(false)), ROW_DATUM_NULL);
        expect_eval_error(call(ROW_TYPE_TEXT, F(VARCHAR), 3, TXT("abc"), I4(2), B(false)), "22001",
                          "value too long for type character varying(2)");
        /* character(n): padded to n characters, cut when explicit or past n is spaces. */
        expect_datum(call(ROW_TYPE_BPCHAR, F(BPCHAR), 3, TXT("ab"), I4(4), B(false)), ROW_DATUM_TEXT("ab  ", 4));
        expect_datum(call(ROW_TYPE_BPCHAR, F(BPCHAR), 3, TXT("abc"), I4(2), B(true)), ROW_DATUM_TEXT("ab", 2));
        expect_datum(call(ROW_TYPE_BPCHAR, F(BPCHAR), 3, TXT("ab   "), I4(3), B(false)), ROW_DATUM_TEXT("ab ", 3));
        expect_datum(call(ROW_TYPE_BPCHAR, F(BPCHAR), 3, TXT("\xc3\xa9"), I4(3), B(false)),
                     ROW_DATUM_TEXT("\xc3\xa9  ", 4));
        expect_datum(call(ROW_TYPE_BPCHAR, F(BPCHAR), 3, TXT(""), I4(2), B(false)), ROW_DATUM_TEXT("  ", 2));
        expect_datum(call(ROW_TYPE_BPCHAR, F(BPCHAR), 3, NUL(ROW_TYPE_TEXT), I4(1), B(false)), ROW_DATUM_NULL);
        expect_eval_error(call(ROW_TYPE_BPCHAR, F(BPCHAR), 3, TXT("abc"), I4(2), B(false)), "22001",
                          "value too long for type character(2)");
        /* bpchar to text drops trailing spaces (only spaces); to int parses the padded text. */
        expect_datum(call(ROW_TYPE_TEXT, F(CAST), 1, lit(ROW_TYPE_BPCHAR, ROW_DATUM_TEXT("a b  ", 5))),
                     ROW_DATUM_TEXT("a b", 3));
        expect_datum(call(ROW_TYPE_TEXT, F(CAST), 1, lit(ROW_TYPE_BPCHAR, ROW_DATUM_TEXT("a\t", 2))),
                     ROW_DATUM_TEXT("a\t", 2));
        expect_datum(call(ROW_TYPE_INT4, F(CAST), 1, lit(ROW_TYPE_BPCHAR, ROW_DATUM_TEXT("5  ", 3))),
                     ROW_DATUM_INT(5));
        expect_datum(call(ROW_TYPE_BPCHAR, F(CAST), 1, I4(12)), ROW_DATUM_TEXT("12", 2));
        expect_datum(call(ROW_TYPE_BOOL, F(LIKE), 2, lit(ROW_TYPE_BPCHAR, ROW_DATUM_TEXT("ab  ", 4)), TXT("ab")),
                     FA);
        expect_datum(call(ROW_TYPE_INT4, F(CHECK_CONSTRAINT), 4, I4(7), B(true), TXT("k"), TXT("t")),
                     ROW_DATUM_INT(7));
        expect_datum(call(ROW_TYPE_INT4, F(CHECK_CONSTRAINT), 4, I4(7), NUL(ROW_TYPE_BOOL), TXT("k"), TXT("t")),
                     ROW_DATUM_INT(7));
        expect_eval_error(call(ROW_TYPE_INT4, F(CHECK_CONSTRAINT), 4, I4(7), B(false), TXT("k"), TXT("t")),
                          "23514", "new row for relation \"t\" violates check constraint \"k\"");
        expect_eval_error(call(ROW_TYPE_TEXT, F(SUBQUERY_TOO_MANY_ROWS), 0), "21000",
                          "more than one row returned by a subquery used as an expression");
}

/* Check (against input types int4, text) and then evaluate; both must fail for these. */
static void expect_invalid(Coord__Plan__Expr *e, const char *sqlstate)
{
        const enum row_type types[] = { ROW_TYPE_INT4, ROW_TYPE_TEXT };
        const struct row_datum row[] = { ROW_DATUM_INT(1), ROW_DATUM_TEXT("x", 1) };
        struct row_error err = { 0 };

        CU_ASSERT_EQUAL(row_expr_check(e, types, 2, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, sqlstate);
        (void)!run_expr(e, row, 2, &(struct row_datum){ 0 }, &err, NULL, 0);
}

static void test_invalid_exprs(void)
{
        const enum row_type types[] = { ROW_TYPE_INT4, ROW_TYPE_TEXT };
        struct row_error err;
        struct row_datum d;
        Coord__Plan__Expr *deep, *e;
        int r;

        expect_invalid(col(ROW_TYPE_INT4, 5), "XX000");                 /* out of range */
        expect_invalid(col(ROW_TYPE_INT8, 0), "XX000");                 /* wrong type */
        expect_invalid(mk(ROW_TYPE_INT4), "XX000");                     /* no kind */
        expect_invalid(mk(0), "XX000");                                 /* no type */
        expect_invalid(I4(INT64_MAX), "XX000");                         /* not an int4 */
        expect_invalid(lit(ROW_TYPE_BOOL, ROW_DATUM_INT(1)), "XX000");
        expect_invalid(call(ROW_TYPE_INT4, F(ADD), 1, I4(1)), "XX000");  /* arity */
        expect_invalid(call(ROW_TYPE_INT4, F(ADD), 2, I4(1), I8(1)), "XX000");
        expect_invalid(call(ROW_TYPE_TEXT, F(ADD), 2, TXT("a"), TXT("b")), "XX000");
        expect_invalid(call(ROW_TYPE_BOOL, F(EQ), 2, I4(1), TXT("b")), "XX000");
        expect_invalid(call(ROW_TYPE_BOOL, F(AND), 2, I4(1), B(true)), "XX000");
        expect_invalid(call(ROW_TYPE_BOOL, F(AND), 0), "XX000");
        expect_invalid(call(ROW_TYPE_INT8, F(MZ_NOW), 1, I8(1)), "XX000");
        expect_invalid(call(ROW_TYPE_BOOL, F(CAST), 1, I8(1)), "XX000");    /* no such cast */
        expect_invalid(call(ROW_TYPE_INT4, (Coord__Plan__Func)999, 0), "0A000");
        expect_invalid(call(ROW_TYPE_INT4, F(CASE), 2, B(true), I4(1)), "XX000");     /* no else */
        expect_invalid(call(ROW_TYPE_INT4, F(CASE), 4, B(true), I4(1), B(false), I4(2)), "XX000");
        expect_invalid(call(ROW_TYPE_INT4, F(CASE), 3, I4(1), I4(1), I4(2)), "XX000"); /* cond */
        expect_invalid(call(ROW_TYPE_INT4, F(CASE), 3, B(true), TXT("a"), I4(2)), "XX000");
        expect_invalid(call(ROW_TYPE_TEXT, F(CONCAT), 2, TXT("a"), I4(1)), "XX000");
        expect_invalid(call(ROW_TYPE_TEXT, F(CONCAT), 1, TXT("a")), "XX000");
        expect_invalid(call(ROW_TYPE_BOOL, F(LIKE), 2, col(ROW_TYPE_INT4, 0), TXT("a")), "XX000");
        expect_invalid(call(ROW_TYPE_INT4, F(LIKE), 2, TXT("a"), TXT("a")), "XX000");
        expect_invalid(call(ROW_TYPE_INT4, F(ABS), 1, TXT("a")), "XX000");
        expect_invalid(call(ROW_TYPE_TEXT, F(ABS), 1, TXT("a")), "XX000");
        expect_invalid(call(ROW_TYPE_INT8, F(LENGTH), 1, TXT("a")), "XX000");
        expect_invalid(call(ROW_TYPE_TEXT, F(UPPER), 1, I4(1)), "XX000");
        expect_invalid(call(ROW_TYPE_INT4, F(ASSERT_NOT_NULL), 1, I4(1)), "XX000");
        expect_invalid(call(ROW_TYPE_TEXT, F(VARCHAR), 3, TXT("a"), I4(0), B(true)), "XX000");
        expect_invalid(call(ROW_TYPE_INT4, F(CHECK_CONSTRAINT), 4, I4(1), I4(1), TXT("k"), TXT("t")), "XX000");
        expect_invalid(call(ROW_TYPE_INT4, F(CHECK_CONSTRAINT), 4, I4(1), B(true), col(ROW_TYPE_TEXT, 2),
                            TXT("t")), "XX000");
        expect_invalid(call(ROW_TYPE_TEXT, F(VARCHAR), 3, TXT("a"), col(ROW_TYPE_INT4, 0), B(true)), "XX000");
        expect_invalid(call(ROW_TYPE_INT4, F(VARCHAR), 3, TXT("a"), I4(1), B(true)), "XX000");
        expect_invalid(call(ROW_TYPE_TEXT, F(BPCHAR), 3, TXT("a"), I4(1), B(true)), "XX000");
        expect_invalid(call(ROW_TYPE_BPCHAR, F(BPCHAR), 3, I4(1), I4(1), B(true)), "XX000");
        expect_invalid(call(ROW_TYPE_BPCHAR, F(BPCHAR), 3, TXT("a"), I4(0), B(true)), "XX000");
        expect_invalid(call(ROW_TYPE_TEXT, F(VARCHAR), 3, lit(ROW_TYPE_BPCHAR, ROW_DATUM_TEXT("a", 1)), I4(1),
                            B(true)), "XX000");
        expect_invalid(call(ROW_TYPE_INT4, F(ASSERT_NOT_NULL), 3, I4(1), col(ROW_TYPE_TEXT, 1),
                            TXT("t")), "XX000");        /* the names must be literals */
        expect_invalid(call(ROW_TYPE_INT8, F(ASSERT_NOT_NULL), 3, I4(1), TXT("a"), TXT("t")),
                       "XX000");
        e = mk(ROW_TYPE_INT4);
        e->kind_case = COORD__PLAN__EXPR__KIND_CALL;            /* a call without a Call */
        expect_invalid(e, "XX000");
        e = mk(ROW_TYPE_INT4);
        e->kind_case = COORD__PLAN__EXPR__KIND_LITERAL;         /* a literal without a Datum */
        expect_invalid(e, "XX000");

        /* Deep nesting is refused, not recursed into. */
        deep = B(true);
        for (int i = 0; i < 3 * ROW_EXPR_MAX_DEPTH; i++)
                deep = call(ROW_TYPE_BOOL, F(NOT), 1, deep);
        CU_ASSERT_EQUAL(row_expr_check(deep, types, 2, &err), -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "54001");
        r = row_expr_eval(deep, NULL, 0, NULL, &d, &err);
        CU_ASSERT_EQUAL(r, -EINVAL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "54001");
        coord__plan__expr__free_unpacked(deep, NULL);
}

/* Random trees, well- or ill-typed, over a random row: check and eval never crash, and
 * a tree that checks evaluates to its declared type or fails with a SQL error only. */
static Coord__Plan__Expr *random_expr(unsigned *seed, int depth)
{
        static const int types[] = { ROW_TYPE_INT4, ROW_TYPE_INT8, ROW_TYPE_TEXT, ROW_TYPE_BOOL,
                                     0, 1700 };
        static const Coord__Plan__Func funcs[] = {
                F(NEG), F(ADD), F(SUB), F(MUL), F(DIV), F(MOD), F(EQ), F(NE), F(LT), F(LE),
                F(GT), F(GE), F(AND), F(OR), F(NOT), F(IS_NULL), F(IS_NOT_NULL), F(MZ_NOW),
                F(CAST), F(COALESCE), F(CASE), F(CONCAT), F(LIKE), F(ILIKE), F(ABS), F(LENGTH),
                F(LOWER), F(UPPER), F(ASSERT_NOT_NULL), F(SUBQUERY_TOO_MANY_ROWS), F(VARCHAR),
                F(CHECK_CONSTRAINT),
                (Coord__Plan__Func)77,
        };
        static const int64_t ints[] = { 0, 1, -1, 2, 7, INT32_MAX, INT32_MIN, INT64_MAX,
                                        INT64_MIN, 1000000007 };
        static const char *const texts[] = { "", "1", "-5", "t", "abc", "99999999999", "a%",
                                             "_\\" };
        int type = types[rand_r(seed) % (rand_r(seed) % 16 ? 4 : 6)];
        unsigned pick = (unsigned)rand_r(seed) % 10;
        Coord__Plan__Expr *e;

        if (depth <= 0 || pick < 3) {
                switch (rand_r(seed) % 5) {
                case 0:
                        return col(type, (uint32_t)(rand_r(seed) % 5));
                case 1:
                        return lit(type, ROW_DATUM_NULL);
                case 2:
                        return lit(type, ROW_DATUM_BOOL(rand_r(seed) % 2));
                case 3:
                        return lit(type, ROW_DATUM_INT(ints[(size_t)rand_r(seed) % ELEMENTSOF(ints)]));
                default: {
                        const char *s = texts[(size_t)rand_r(seed) % ELEMENTSOF(texts)];

                        return lit(type, ROW_DATUM_TEXT(s, (uint32_t)strlen(s)));
                }
                }
        }
        e = call(type, funcs[(size_t)rand_r(seed) % ELEMENTSOF(funcs)], 0);
        e->call->n_args = (size_t)(rand_r(seed) % 4);
        e->call->args = e->call->n_args ? malloc(e->call->n_args * sizeof(*e->call->args)) : NULL;
        for (size_t i = 0; i < e->call->n_args; i++)
                e->call->args[i] = random_expr(seed, depth - 1);
        return e;
}

static void test_expr_fuzz(void)
{
        const enum row_type types[] = { ROW_TYPE_INT4, ROW_TYPE_INT8, ROW_TYPE_TEXT, ROW_TYPE_BOOL };
        const struct row_datum rows[][4] = {
                { ROW_DATUM_INT(3), ROW_DATUM_INT(-9), ROW_DATUM_TEXT("12", 2), ROW_DATUM_BOOL(true) },
                { ROW_DATUM_NULL, ROW_DATUM_INT(INT64_MAX), ROW_DATUM_TEXT("x", 1), ROW_DATUM_NULL },
                { ROW_DATUM_INT(INT32_MIN), ROW_DATUM_NULL, ROW_DATUM_NULL, ROW_DATUM_BOOL(false) },
        };
        unsigned seed = 99;
        int checked = 0, evaluated = 0;

        for (int iter = 0; iter < 40000; iter++) {
                Coord__Plan__Expr *e = random_expr(&seed, 5);
                struct row_arena arena = ROW_ARENA_INIT;
                struct row_expr_ctx ctx = { .now = 1, .has_now = true, .arena = &arena };
                struct row_error err;
                bool ok = row_expr_check(e, types, 4, &err) == 0;

                checked += ok;
                for (size_t k = 0; k < ELEMENTSOF(rows); k++) {
                        struct row_datum d;

                        memset(&err, 0, sizeof(err));
                        if (row_expr_eval(e, rows[k], 4, &ctx, &d, &err) < 0) {
                                CU_ASSERT_EQUAL(strlen(err.sqlstate), 5);
                                /* A checked tree fails only as SQL does. */
                                if (ok && strcmp(err.sqlstate, "22003") &&
                                    strcmp(err.sqlstate, "22012") && strcmp(err.sqlstate, "22P02") &&
                                    strcmp(err.sqlstate, "22025") && strcmp(err.sqlstate, "23502") &&
                                    strcmp(err.sqlstate, "21000") && strcmp(err.sqlstate, "22001") &&
                                    strcmp(err.sqlstate, "23514")) {
                                        fprintf(stderr, "\n  checked tree failed: %s %s\n",
                                                err.sqlstate, err.message);
                                        CU_FAIL("checked expression hit a plan error");
                                }
                        } else if (ok) {
                                evaluated++;
                                CU_ASSERT(d.kind == ROW_KIND_NULL ||
                                          row_datum_fits(&d, (enum row_type)e->type));
                        }
                        row_arena_reset(&arena);
                }
                row_arena_done(&arena);
                coord__plan__expr__free_unpacked(e, NULL);
        }
        CU_ASSERT(checked > 2000);
        CU_ASSERT(evaluated > 2000);
}

/* ---- An in-memory store and catalog for plans from the adapter. ---- */

struct stored {
        uint64_t id, time;
        int64_t diff;
        uint8_t *row;
        size_t len;
};

static struct stored store[256];
static size_t n_store;
static int store_failure;

static void store_reset(void)
{
        for (size_t i = 0; i < n_store; i++)
                free(store[i].row);
        n_store = 0;
        store_failure = 0;
}

static void store_add(uint64_t id, uint64_t time, int64_t diff, const struct row_datum *d,
                      size_t n)
{
        struct stored *s = &store[n_store++];

        CU_ASSERT_FATAL(n_store <= ELEMENTSOF(store));
        *s = (struct stored){ .id = id, .time = time, .diff = diff };
        CU_ASSERT_EQUAL_FATAL(row_encode(d, n, &s->row, &s->len), 0);
}

static void store_add_bytes(uint64_t id, uint64_t time, int64_t diff, const void *row,
                            size_t len)
{
        struct stored *s = &store[n_store++];

        *s = (struct stored){ .id = id, .time = time, .diff = diff, .row = malloc(len),
                              .len = len };
        memcpy(s->row, row, len);
}

static int store_snapshot(void *userdata, uint64_t id, uint64_t ts, eval_emit_fn emit,
                          void *emit_userdata)
{
        CU_ASSERT(userdata == store);
        if (store_failure)
                return store_failure;
        for (size_t i = 0; i < n_store; i++) {
                int r;

                if (store[i].id != id || store[i].time > ts)
                        continue;
                r = emit(emit_userdata, store[i].row, store[i].len, store[i].diff);
                if (r < 0)
                        return r;
        }
        return 0;
}

static const struct eval_source_ops source = { store_snapshot };

/* t (10): a int4 NOT NULL, b text, c bool, d int8;  r (30): set by the fuzzer. */
static struct sql_column t_columns[] = {
        { "a", ROW_TYPE_INT4, false }, { "b", ROW_TYPE_TEXT, true },
        { "c", ROW_TYPE_BOOL, true },  { "d", ROW_TYPE_INT8, true },
};
static struct sql_column r_columns[64];
static char r_names[64][8];
static size_t r_n;

static int lookup(void *userdata, const char *name, struct sql_relation *ret)
{
        if (strcmp(name, "t") == 0) {
                *ret = (struct sql_relation){ 10, SQL_OBJECT_TABLE, t_columns, 4 };
                return 0;
        }
        if (strcmp(name, "r") == 0) {
                *ret = (struct sql_relation){ 30, SQL_OBJECT_TABLE, r_columns, r_n };
                return 0;
        }
        return -ENOENT;
}

static const struct sql_catalog_ops catalog = { lookup };

static int cmp_updates(const void *x, const void *y)
{
        const struct eval_update *a = x, *b = y;

        return row_compare(a->row, a->len, b->row, b->len);
}

/* Render a batch as "(row)xN (row) ...", sorted by row_compare. */
static void render(struct eval_batch *b, char *out, size_t size)
{
        size_t at = 0;

        out[0] = '\0';
        if (b->n)
                qsort(b->updates, b->n, sizeof(*b->updates), cmp_updates);
        for (size_t i = 0; i < b->n; i++) {
                char *s = NULL;
                int w;

                CU_ASSERT_EQUAL_FATAL(row_to_string(b->updates[i].row, b->updates[i].len, &s), 0);
                if (b->updates[i].diff == 1)
                        w = snprintf(out + at, size - at, "%s%s", i ? " " : "", s);
                else
                        w = snprintf(out + at, size - at, "%s%sx%" PRId64, i ? " " : "", s,
                                     b->updates[i].diff);
                free(s);
                if (w < 0 || (size_t)w >= size - at)
                        return;
                at += (size_t)w;
        }
}

/* Analyze a SELECT, check that its plan validates with the declared output types,
 * and peek it at ts (or its AS OF).  0 with the rendered rows, or the error. */
static int query(const char *sql, uint64_t ts, char *out, size_t size, struct row_error *err)
{
        struct sql_stmt *s = NULL;
        struct eval_plan *p = NULL;
        struct eval_batch b = EVAL_BATCH_INIT;
        const Coord__Plan__Relation *plan;
        int r;

        memset(err, 0, sizeof(*err));
        r = sql_analyze_one(sql, &catalog, NULL, NULL, &s, err);
        if (r < 0)
                return r;
        CU_ASSERT_FATAL(s->kind == SQL_STMT_SELECT || s->kind == SQL_STMT_DELETE);
        plan = s->kind == SQL_STMT_SELECT ? s->select.peek->plan : s->delete_.plan;
        if (s->kind == SQL_STMT_SELECT && s->select.has_as_of)
                ts = s->select.as_of;
        r = eval_plan_new(plan, &p, err);
        if (r < 0) {
                fprintf(stderr, "\n  %s: the analyzer's plan does not validate: %s %s\n", sql,
                        err->sqlstate, err->message);
                CU_FAIL("invalid plan from the analyzer");
                goto out;
        }
        if (s->kind == SQL_STMT_SELECT) {
                CU_ASSERT_EQUAL_FATAL(eval_plan_arity(p), s->select.peek->n_columns);
                for (size_t i = 0; i < eval_plan_arity(p); i++)
                        CU_ASSERT_EQUAL(eval_plan_types(p)[i],
                                        (int)s->select.peek->columns[i]->type);
        }
        r = eval_peek(p, ts, &source, store, &b, err);
        if (r >= 0) {
                for (size_t i = 0; i < b.n; i++) {
                        CU_ASSERT(b.updates[i].diff > 0);
                        CU_ASSERT_EQUAL(b.updates[i].time, ts);
                        CU_ASSERT_EQUAL(row_check(b.updates[i].row, b.updates[i].len,
                                                  eval_plan_types(p), eval_plan_arity(p)), 0);
                }
                render(&b, out, size);
        }
out:
        eval_batch_done(&b);
        eval_plan_free(p);
        sql_stmt_free(s);
        return r;
}

static void expect_query(const char *sql, uint64_t ts, const char *want)
{
        struct row_error err;
        char got[2048];

        if (query(sql, ts, got, sizeof(got), &err) < 0) {
                fprintf(stderr, "\n  %s: unexpected %s %s\n", sql, err.sqlstate, err.message);
                CU_FAIL("query failed");
                return;
        }
        if (strcmp(got, want) != 0) {
                fprintf(stderr, "\n  %s @%" PRIu64 "\n    got      %s\n    expected %s\n", sql, ts,
                        got, want);
                CU_FAIL("wrong rows");
        }
}

static void expect_query_error(const char *sql, uint64_t ts, const char *sqlstate,
                               const char *message)
{
        struct row_error err;
        char got[2048];

        CU_ASSERT(query(sql, ts, got, sizeof(got), &err) < 0);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, sqlstate);
        if (message && strcmp(err.message, message) != 0) {
                fprintf(stderr, "\n  %s: got \"%s\"\n", sql, err.message);
                CU_FAIL("wrong message");
        }
}

#define ROW4(a, b, c, d) ((const struct row_datum[]){ a, b, c, d })
#define S(s) ROW_DATUM_TEXT(s, (uint32_t)strlen(s))
#define I(v) ROW_DATUM_INT(v)

static void fill_t(void)
{
        store_reset();
        /* t1: three rows;  t2: one more, one deleted;  t3: a duplicate. */
        store_add(10, 1, 1, ROW4(I(1), S("one"), T, I(10)), 4);
        store_add(10, 1, 1, ROW4(I(2), S("two"), FA, I(20)), 4);
        store_add(10, 1, 1, ROW4(I(3), N, N, N), 4);
        store_add(10, 2, 1, ROW4(I(4), S("four"), T, I(40)), 4);
        store_add(10, 2, -1, ROW4(I(2), S("two"), FA, I(20)), 4);
        store_add(10, 3, 1, ROW4(I(1), S("one"), T, I(10)), 4);
        /* Another collection's rows are never read. */
        store_add(11, 1, 1, ROW4(I(9), S("nine"), T, I(90)), 4);
}

static void test_peek(void)
{
        fill_t();
        expect_query("SELECT * FROM t", 0, "");
        expect_query("SELECT * FROM t", 1, "(1,'one',t,10) (2,'two',f,20) (3,NULL,NULL,NULL)");
        expect_query("SELECT * FROM t", 2, "(1,'one',t,10) (3,NULL,NULL,NULL) (4,'four',t,40)");
        expect_query("SELECT * FROM t", 3,
                     "(1,'one',t,10)x2 (3,NULL,NULL,NULL) (4,'four',t,40)");
        /* AS OF picks the time, whatever the caller's default. */
        expect_query("SELECT a FROM t AS OF 1", 3, "(1) (2) (3)");
        expect_query("SELECT a FROM t AS OF 1 + 1", 3, "(1) (3) (4)");

        expect_query("SELECT a, d * 2 AS dd FROM t WHERE c", 3, "(1,20)x2 (4,80)");
        expect_query("SELECT a FROM t WHERE b IS NULL", 3, "(3)");
        expect_query("SELECT a FROM t WHERE NOT c", 1, "(2)");
        expect_query("SELECT a FROM t WHERE c OR a > 3", 3, "(1)x2 (4)");  /* NULL drops 3 */
        expect_query("SELECT a FROM t WHERE c IS NULL OR d >= 40", 3, "(3) (4)");
        expect_query("SELECT b FROM t WHERE a = 1", 3, "('one')x2");
        expect_query("SELECT b FROM t WHERE b < 'p'", 3, "('four') ('one')x2");
        /* Projections merge rows that become equal. */
        expect_query("SELECT c FROM t", 3, "(t)x3 (NULL)");
        expect_query("SELECT c FROM t", 1, "(f) (t) (NULL)");
        expect_query("SELECT mz_now(), a FROM t WHERE a = 4", 7, "(7,4)");
        expect_query("SELECT a::text, -d, a % 2 = 0, d IS NULL FROM t", 2,
                     "('1',-10,f,f) ('3',NULL,f,t) ('4',-40,t,f)");
        expect_query("SELECT a + d FROM t WHERE a < 3", 3, "(11)x2");
        expect_query("SELECT a FROM t WHERE false", 3, "");
        expect_query("SELECT FROM t", 3, "()x4");
        expect_query("SELECT 1, 'x', NULL, mz_now()", 5, "(1,'x',NULL,5)");
        expect_query("SELECT 1 WHERE false", 5, "");

        /* A row that fails evaluation fails the read, as in PostgreSQL. */
        expect_query_error("SELECT a / (a - 3) FROM t", 3, "22012", "division by zero");
        expect_query_error("SELECT a * 2147483647 FROM t", 3, "22003", "integer out of range");
        expect_query_error("SELECT b::int FROM t WHERE a = 1", 3, "22P02", NULL);
        /* ... unless no row reaches it. */
        expect_query("SELECT a / (a - 3) FROM t WHERE a <> 3", 3, "(0)x2 (4)");   /* truncates */
        expect_query("SELECT a FROM t WHERE a <> 3 AND 6 / (a - 3) < 0", 3, "(1)x2");

        /* CASE, IN, BETWEEN, LIKE, IS DISTINCT FROM, NULLIF, IS TRUE, text functions. */
        expect_query("SELECT a, CASE WHEN d > 15 THEN 'big' WHEN d IS NULL THEN 'none' "
                     "ELSE 'small' END FROM t", 3, "(1,'small')x2 (3,'none') (4,'big')");
        expect_query("SELECT CASE a WHEN 1 THEN 'one' WHEN 4 THEN 'four' END FROM t", 3,
                     "('four') ('one')x2 (NULL)");
        expect_query("SELECT CASE WHEN a = 3 THEN 0 ELSE 12 / (a - 3) END FROM t", 3,
                     "(-6)x2 (0) (12)");
        expect_query("SELECT a FROM t WHERE b LIKE '%o%' AND a NOT IN (4)", 3, "(1)x2");
        expect_query("SELECT a FROM t WHERE b ILIKE 'F%' OR a IN (3, 7)", 3, "(3) (4)");
        expect_query("SELECT a FROM t WHERE d NOT IN (10, NULL)", 3, "");
        expect_query("SELECT a, d IN (40, NULL) FROM t", 3, "(1,NULL)x2 (3,NULL) (4,t)");
        expect_query("SELECT a FROM t WHERE a BETWEEN 2 AND 4", 3, "(3) (4)");
        expect_query("SELECT a FROM t WHERE d NOT BETWEEN SYMMETRIC 40 AND 20", 3, "(1)x2");
        expect_query("SELECT b || '!', upper(b), length(b), abs(-d) FROM t WHERE a > 1", 3,
                     "('four!','FOUR',4,40) (NULL,NULL,NULL,NULL)");
        expect_query("SELECT a, c IS NOT TRUE, b IS DISTINCT FROM 'one', NULLIF(a, 1) FROM t", 3,
                     "(1,f,f,NULL)x2 (3,t,t,3) (4,f,t,4)");
        expect_query("SELECT a FROM t WHERE b IS NOT DISTINCT FROM NULL", 3, "(3)");
        expect_query("SELECT concat(a, '-', b, '-', c), a || b FROM t", 3,
                     "('1-one-t','1one')x2 ('3--',NULL) ('4-four-t','4four')");
        expect_query_error("SELECT a FROM t WHERE b LIKE 'x\\'", 3, "22025", NULL);
        store_reset();
}

static void test_delete_plan(void)
{
        struct sql_stmt *s = NULL;
        struct eval_plan *p = NULL;
        struct eval_batch b = EVAL_BATCH_INIT;
        struct row_error err;
        char got[512];

        fill_t();
        CU_ASSERT_EQUAL_FATAL(sql_analyze_one("DELETE FROM t WHERE a < 3 OR b IS NULL", &catalog,
                                              NULL, NULL, &s, &err), 0);
        CU_ASSERT_EQUAL_FATAL(eval_plan_new(s->delete_.plan, &p, &err), 0);
        CU_ASSERT_EQUAL(eval_plan_input(p), 10);
        CU_ASSERT_EQUAL(eval_plan_arity(p), 4);
        CU_ASSERT_EQUAL_FATAL(eval_peek(p, 3, &source, store, &b, &err), 0);
        render(&b, got, sizeof(got));
        CU_ASSERT_STRING_EQUAL(got, "(1,'one',t,10)x2 (3,NULL,NULL,NULL)");
        /* Retract them at time 4, as the adapter would. */
        for (size_t i = 0; i < b.n; i++)
                store_add_bytes(10, 4, -b.updates[i].diff, b.updates[i].row, b.updates[i].len);
        expect_query("SELECT * FROM t", 4, "(4,'four',t,40)");
        expect_query("SELECT * FROM t", 3,
                     "(1,'one',t,10)x2 (3,NULL,NULL,NULL) (4,'four',t,40)");
        eval_batch_done(&b);
        eval_plan_free(p);
        sql_stmt_free(s);
        store_reset();
}

static void test_peek_errors(void)
{
        const uint8_t junk[] = { 4, 0, 3, 1 };
        const struct row_datum short_row[] = { I(1), S("x") };
        const struct row_datum bad_type[] = { S("1"), S("x"), T, I(1) };
        const struct row_datum big_int4[] = { I((int64_t)INT32_MAX + 1), N, N, N };
        struct row_error err;
        char got[256];

        store_reset();
        store_add_bytes(10, 1, 1, junk, sizeof(junk));
        expect_query_error("SELECT * FROM t", 1, "XX000", NULL);
        store_reset();
        store_add(10, 1, 1, short_row, 2);
        expect_query_error("SELECT * FROM t", 1, "XX000",
                           "collection 10 holds a row that does not match its columns");
        store_reset();
        store_add(10, 1, 1, bad_type, 4);
        expect_query_error("SELECT a FROM t", 1, "XX000", NULL);
        store_reset();
        store_add(10, 1, 1, big_int4, 4);
        expect_query_error("SELECT a FROM t", 1, "XX000", NULL);
        /* More retractions than insertions cannot be a read's answer. */
        store_reset();
        store_add(10, 1, -1, ROW4(I(1), N, N, N), 4);
        expect_query_error("SELECT * FROM t", 1, "XX000", NULL);
        /* The snapshot's own failure. */
        store_reset();
        store_failure = -EIO;
        CU_ASSERT(query("SELECT * FROM t", 1, got, sizeof(got), &err) == -EIO);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, "XX000");
        CU_ASSERT(strstr(err.message, "reading collection 10 failed") != NULL);
        store_reset();
}

/* ---- Plans built by hand: validation. ---- */

static Coord__Plan__Relation *project(Coord__Plan__Relation *in, size_t n, const uint32_t *cols)
{
        Coord__Plan__Relation *r = rel();

        r->kind_case = COORD__PLAN__RELATION__KIND_PROJECT;
        r->project = malloc(sizeof(*r->project));
        coord__plan__project__init(r->project);
        r->project->input = in;
        r->project->n_outputs = n;
        r->project->outputs = malloc((n ? n : 1) * sizeof(uint32_t));
        memcpy(r->project->outputs, cols, n * sizeof(uint32_t));
        return r;
}

static void expect_plan_error(Coord__Plan__Relation *r, const char *sqlstate)
{
        struct eval_plan *p = NULL;
        struct row_error err = { 0 };

        CU_ASSERT_EQUAL(eval_plan_new(r, &p, &err), -EINVAL);
        CU_ASSERT(p == NULL);
        CU_ASSERT_STRING_EQUAL(err.sqlstate, sqlstate);
        coord__plan__relation__free_unpacked(r, NULL);
}

static void test_plan_validation(void)
{
        const int types[] = { ROW_TYPE_INT4, ROW_TYPE_TEXT };
        const int bad_types[] = { ROW_TYPE_INT4, 1790 };
        const uint32_t cols[] = { 1, 0, 1 }, far[] = { 2 };
        struct eval_plan *p = NULL;
        struct row_error err;
        Coord__Plan__Relation *r, *c;
        Coord__Plan__Update *u;
        uint8_t *bytes;
        size_t len;

        /* A good one: Project[1,0,1](Map[#0 + 1](Filter[#0 > 1](Get))). */
        r = project(map1(filter(get(5, 2, types),
                                call(ROW_TYPE_BOOL, F(GT), 2, col(ROW_TYPE_INT4, 0), I4(1))),
                         call(ROW_TYPE_INT4, F(ADD), 2, col(ROW_TYPE_INT4, 0), I4(1))),
                    3, cols);
        CU_ASSERT_EQUAL_FATAL(eval_plan_new(r, &p, &err), 0);
        CU_ASSERT_EQUAL(eval_plan_arity(p), 3);
        CU_ASSERT_EQUAL(eval_plan_types(p)[0], ROW_TYPE_TEXT);
        CU_ASSERT_EQUAL(eval_plan_types(p)[1], ROW_TYPE_INT4);
        CU_ASSERT_EQUAL(eval_plan_input(p), 5);
        eval_plan_free(p);
        coord__plan__relation__free_unpacked(r, NULL);
        CU_ASSERT(eval_plan_free(NULL) == NULL);

        expect_plan_error(get(0, 2, types), "XX000");                      /* no id */
        expect_plan_error(get(5, 2, bad_types), "XX000");                  /* bad type */
        expect_plan_error(project(get(5, 2, types), 1, far), "XX000");     /* out of range */
        expect_plan_error(filter(get(5, 2, types), col(ROW_TYPE_INT4, 0)), "XX000"); /* not bool */
        expect_plan_error(filter(get(5, 2, types), col(ROW_TYPE_INT4, 1)), "XX000"); /* mistyped */
        expect_plan_error(map1(get(5, 2, types), col(ROW_TYPE_INT4, 2)), "XX000");  /* no col 2 */
        expect_plan_error(map1(get(5, 2, types), call(ROW_TYPE_INT4, (Coord__Plan__Func)999, 0)),
                          "0A000");
        expect_plan_error(rel(), "XX000");                                 /* no operator */
        r = rel();
        r->kind_case = COORD__PLAN__RELATION__KIND_FILTER;                 /* Filter, no input */
        r->filter = malloc(sizeof(*r->filter));
        coord__plan__filter__init(r->filter);
        expect_plan_error(r, "XX000");
        r = rel();
        r->kind_case = (Coord__Plan__Relation__KindCase)6;                 /* a future Join */
        expect_plan_error(r, "0A000");

        /* A Constant whose row does not match its types. */
        c = rel();
        c->kind_case = COORD__PLAN__RELATION__KIND_CONSTANT;
        c->constant = malloc(sizeof(*c->constant));
        coord__plan__constant__init(c->constant);
        c->constant->n_column_types = 1;
        c->constant->column_types = malloc(sizeof(*c->constant->column_types));
        c->constant->column_types[0] = COORD__PLAN__TYPE__TYPE_BOOL;
        c->constant->n_rows = 1;
        c->constant->rows = malloc(sizeof(*c->constant->rows));
        u = malloc(sizeof(*u));
        coord__plan__update__init(u);
        CU_ASSERT_EQUAL_FATAL(row_encode((const struct row_datum[]){ I(1) }, 1, &bytes, &len), 0);
        u->row.data = bytes;
        u->row.len = len;
        u->diff = 1;
        c->constant->rows[0] = u;
        expect_plan_error(c, "XX000");
}

/* ---- The incremental form and consolidation. ---- */

static void test_consolidate(void)
{
        struct eval_batch b = EVAL_BATCH_INIT;
        const uint8_t r1[] = { 0, 0 }, r2[] = { 1, 0, 0 };
        char got[128];

        CU_ASSERT_EQUAL(eval_batch_push(&b, r2, 3, 1, 2), 0);
        CU_ASSERT_EQUAL(eval_batch_push(&b, r1, 2, 1, 1), 0);
        CU_ASSERT_EQUAL(eval_batch_push(&b, r2, 3, 1, -2), 0);
        CU_ASSERT_EQUAL(eval_batch_push(&b, r1, 2, 2, 1), 0);   /* another time */
        CU_ASSERT_EQUAL(eval_batch_push(&b, r1, 2, 1, 4), 0);
        CU_ASSERT_EQUAL(eval_batch_consolidate(&b), 0);
        CU_ASSERT_EQUAL_FATAL(b.n, 2);
        CU_ASSERT(b.updates[0].len == 2 && b.updates[0].time == 1 && b.updates[0].diff == 5);
        CU_ASSERT(b.updates[1].len == 2 && b.updates[1].time == 2 && b.updates[1].diff == 1);
        render(&b, got, sizeof(got));
        CU_ASSERT_STRING_EQUAL(got, "()x5 ()");

        eval_batch_clear(&b);
        CU_ASSERT_EQUAL(b.n, 0);
        CU_ASSERT_EQUAL(eval_batch_push(&b, r1, 2, 1, INT64_MAX), 0);
        CU_ASSERT_EQUAL(eval_batch_push(&b, r1, 2, 1, 1), 0);
        CU_ASSERT_EQUAL(eval_batch_consolidate(&b), -EOVERFLOW);
        CU_ASSERT_EQUAL(b.n, 2);                                /* unchanged */
        eval_batch_clear(&b);
        CU_ASSERT_EQUAL(eval_batch_push(&b, r1, 2, 1, 0), 0);
        CU_ASSERT_EQUAL(eval_batch_consolidate(&b), 0);
        CU_ASSERT_EQUAL(b.n, 0);
        eval_batch_done(&b);
}

/* Two batches are equal once consolidated. */
static bool same_updates(struct eval_batch *a, struct eval_batch *b)
{
        CU_ASSERT_EQUAL_FATAL(eval_batch_consolidate(a), 0);
        CU_ASSERT_EQUAL_FATAL(eval_batch_consolidate(b), 0);
        if (a->n != b->n)
                return false;
        for (size_t i = 0; i < a->n; i++)
                if (a->updates[i].len != b->updates[i].len ||
                    memcmp(a->updates[i].row, b->updates[i].row, a->updates[i].len) ||
                    a->updates[i].time != b->updates[i].time ||
                    a->updates[i].diff != b->updates[i].diff)
                        return false;
        return true;
}

static void test_apply_linear(void)
{
        struct sql_stmt *s = NULL;
        struct eval_plan *p = NULL;
        struct row_error err;
        unsigned seed = 7;

        CU_ASSERT_EQUAL_FATAL(sql_analyze_one("SELECT a % 3, b FROM t WHERE a % 2 = 0 OR c",
                                              &catalog, NULL, NULL, &s, &err), 0);
        CU_ASSERT_EQUAL_FATAL(eval_plan_new(s->select.peek->plan, &p, &err), 0);
        for (int iter = 0; iter < 200; iter++) {
                struct eval_batch in = EVAL_BATCH_INIT, out1 = EVAL_BATCH_INIT,
                                  out2 = EVAL_BATCH_INIT, both = EVAL_BATCH_INIT;
                static const char *const texts[] = { "x", "y", "" };
                size_t n = (size_t)(rand_r(&seed) % 40), half;

                for (size_t i = 0; i < n; i++) {
                        struct row_datum d[4] = {
                                I(rand_r(&seed) % 7), S(texts[rand_r(&seed) % 3]),
                                rand_r(&seed) % 3 ? ROW_DATUM_BOOL(rand_r(&seed) % 2) : N,
                                I(rand_r(&seed) % 2),
                        };
                        uint8_t *bytes;
                        size_t len;

                        CU_ASSERT_EQUAL_FATAL(row_encode(d, 4, &bytes, &len), 0);
                        CU_ASSERT_EQUAL_FATAL(eval_batch_push(&in, bytes, len,
                                                              (uint64_t)(rand_r(&seed) % 3),
                                                              rand_r(&seed) % 5 - 2),
                                              0);
                        free(bytes);
                }
                /* apply(B) == apply(consolidate(B)), once consolidated. */
                CU_ASSERT_EQUAL_FATAL(eval_plan_apply(p, in.updates, in.n, 0, &out1, &err), 0);
                half = in.n / 2;
                /* apply(B1 ++ B2) == apply(B1) ++ apply(B2). */
                CU_ASSERT_EQUAL_FATAL(eval_plan_apply(p, in.updates, half, 0, &both, &err), 0);
                CU_ASSERT_EQUAL_FATAL(eval_plan_apply(p, in.updates + half, in.n - half, 0, &both,
                                                      &err), 0);
                CU_ASSERT_EQUAL_FATAL(eval_batch_consolidate(&in), 0);
                CU_ASSERT_EQUAL_FATAL(eval_plan_apply(p, in.updates, in.n, 0, &out2, &err), 0);
                for (size_t i = 0; i < out2.n; i++)
                        CU_ASSERT_EQUAL(row_check(out2.updates[i].row, out2.updates[i].len,
                                                  eval_plan_types(p), eval_plan_arity(p)), 0);
                CU_ASSERT(same_updates(&out1, &out2));
                CU_ASSERT(same_updates(&out1, &both));
                eval_batch_done(&in);
                eval_batch_done(&out1);
                eval_batch_done(&out2);
                eval_batch_done(&both);
        }
        eval_plan_free(p);
        sql_stmt_free(s);
}

/* ---- Differential fuzz: adapter folding against controller evaluation. ---- */

struct gen {
        unsigned seed;
        FILE *fold;     /* the expression over literals */
        FILE *cols;     /* the same expression over columns of r */
        struct row_datum vals[64];
        char texts[64][8];
        size_t n;
};

static void gen_expr(struct gen *g, int type, int depth);
static void gen_expr_more(struct gen *g, int type, int pick, int depth);

static void both(struct gen *g, const char *s)
{
        fputs(s, g->fold);
        fputs(s, g->cols);
}

/* A literal in one text, a column holding the same value in the other. */
static void gen_leaf(struct gen *g, int type)
{
        static const int64_t ints[] = { 0, 1, -1, 2, 3, 7, 100, INT32_MAX, INT32_MIN,
                                        3000000000LL, INT64_MAX, INT64_MIN, -5 };
        /* Texts that are patterns too: LIKE over them matches, misses and fails (22025). */
        static const char *const texts[] = { "", "a", "ab", "b", "12", "a%", "_b", "A", "%",
                                             "b\\" };
        static const char *const cast[] = { [ROW_TYPE_INT4] = "integer",
                                            [ROW_TYPE_INT8] = "bigint",
                                            [ROW_TYPE_TEXT] = "text",
                                            [ROW_TYPE_BOOL] = "boolean" };
        size_t k = g->n;
        struct row_datum d;

        if (k == ELEMENTSOF(g->vals)) {
                type = ROW_TYPE_BOOL;   /* out of columns: a literal in both */
                both(g, "true");
                return;
        }
        if (rand_r(&g->seed) % 8 == 0) {
                d = ROW_DATUM_NULL;
                fprintf(g->fold, "NULL::%s", cast[type]);
        } else if (type == ROW_TYPE_BOOL) {
                d = ROW_DATUM_BOOL(rand_r(&g->seed) % 2);
                fputs(d.b ? "true" : "false", g->fold);
        } else if (type == ROW_TYPE_TEXT) {
                snprintf(g->texts[k], sizeof(g->texts[k]), "%s",
                         texts[(size_t)rand_r(&g->seed) % ELEMENTSOF(texts)]);
                d = ROW_DATUM_TEXT(g->texts[k], (uint32_t)strlen(g->texts[k]));
                fprintf(g->fold, "'%s'::text", g->texts[k]);
        } else {
                int64_t v;

                do
                        v = ints[(size_t)rand_r(&g->seed) % ELEMENTSOF(ints)];
                while (type == ROW_TYPE_INT4 && (v < INT32_MIN || v > INT32_MAX));
                d = ROW_DATUM_INT(v);
                /* Always cast: the grammar folds a minus into a bare constant
                 * (-(-2147483648) is the int8 literal 2147483648, as in PostgreSQL), but
                 * not into a cast, so the literal keeps the column's type. */
                fprintf(g->fold, "(%" PRId64 ")::%s", v, cast[type]);
        }
        g->vals[k] = d;
        snprintf(r_names[k], sizeof(r_names[k]), "c%zu", k);
        r_columns[k] = (struct sql_column){ r_names[k], (enum row_type)type, true };
        fprintf(g->cols, "c%zu", k);
        g->n++;
}

/* CASE, IN, BETWEEN, LIKE, IS DISTINCT FROM, IS [NOT] TRUE, NULLIF, || and the text
 * and integer functions (picks 6..8 of gen_expr()). */
static void gen_expr_more(struct gen *g, int type, int pick, int depth)
{
        static const int any[] = { ROW_TYPE_INT4, ROW_TYPE_INT8, ROW_TYPE_TEXT, ROW_TYPE_BOOL };
        static const char *const likes[] = { " LIKE ", " NOT LIKE ", " ILIKE ", " NOT ILIKE " };
        static const char *const tests[] = { " IS TRUE", " IS NOT TRUE", " IS FALSE",
                                             " IS NOT FALSE", " IS UNKNOWN" };
        int t = any[rand_r(&g->seed) % 4], v = rand_r(&g->seed) % 3;

        if (pick == 6) {
                /* CASE of any type, simple or searched, with or without ELSE. */
                bool simple = v == 0;

                both(g, "CASE");
                if (simple) {
                        both(g, " ");
                        gen_expr(g, t, depth - 1);
                }
                for (int k = 0; k < 1 + rand_r(&g->seed) % 2; k++) {
                        both(g, " WHEN ");
                        gen_expr(g, simple ? t : ROW_TYPE_BOOL, depth - 1);
                        both(g, " THEN ");
                        gen_expr(g, type, depth - 1);
                }
                if (rand_r(&g->seed) % 2) {
                        both(g, " ELSE ");
                        gen_expr(g, type, depth - 1);
                }
                both(g, " END");
        } else if (type == ROW_TYPE_BOOL && pick == 7) {
                if (v == 0) {
                        gen_expr(g, ROW_TYPE_TEXT, depth - 1);
                        both(g, likes[rand_r(&g->seed) % 4]);
                        gen_expr(g, ROW_TYPE_TEXT, depth - 1);
                } else {
                        gen_expr(g, t, depth - 1);
                        both(g, v == 1 ? " IN (" : " NOT IN (");
                        for (int k = 0; k < 1 + rand_r(&g->seed) % 3; k++) {
                                if (k)
                                        both(g, ", ");
                                gen_expr(g, t, depth - 1);
                        }
                        both(g, ")");
                }
        } else if (type == ROW_TYPE_BOOL) {
                if (v == 0) {
                        gen_expr(g, ROW_TYPE_BOOL, depth - 1);
                        both(g, tests[rand_r(&g->seed) % 5]);
                        return;
                }
                gen_expr(g, t, depth - 1);
                if (v == 1) {
                        both(g, rand_r(&g->seed) % 2 ? " IS DISTINCT FROM " : " IS NOT DISTINCT FROM ");
                        gen_expr(g, t, depth - 1);
                        return;
                }
                both(g, rand_r(&g->seed) % 2 ? " BETWEEN " : " NOT BETWEEN SYMMETRIC ");
                gen_expr(g, t, depth - 1);
                both(g, " AND ");
                gen_expr(g, t, depth - 1);
        } else if (type == ROW_TYPE_TEXT) {
                if (pick == 7) {
                        gen_expr(g, ROW_TYPE_TEXT, depth - 1);
                        both(g, " || ");
                        gen_expr(g, v ? ROW_TYPE_TEXT : t, depth - 1);
                } else {
                        both(g, v == 0 ? "lower(" : v == 1 ? "upper(" : "NULLIF(");
                        gen_expr(g, ROW_TYPE_TEXT, depth - 1);
                        if (v == 2) {
                                both(g, ", ");
                                gen_expr(g, ROW_TYPE_TEXT, depth - 1);
                        }
                        both(g, ")");
                }
        } else if (pick == 7) {
                both(g, "abs(");
                gen_expr(g, type, depth - 1);
                both(g, ")");
        } else if (type == ROW_TYPE_INT4 && v == 0) {
                both(g, "length(");
                gen_expr(g, ROW_TYPE_TEXT, depth - 1);
                both(g, ")");
        } else {
                both(g, "NULLIF(");
                gen_expr(g, type, depth - 1);
                both(g, ", ");
                gen_expr(g, type, depth - 1);
                both(g, ")");
        }
}

static void gen_expr(struct gen *g, int type, int depth)
{
        static const char *const arith[] = { "+", "-", "*", "/", "%" };
        static const char *const cmps[] = { "=", "<>", "<", "<=", ">", ">=" };
        static const int any[] = { ROW_TYPE_INT4, ROW_TYPE_INT8, ROW_TYPE_TEXT, ROW_TYPE_BOOL };
        int pick = rand_r(&g->seed) % 9;

        if (depth == 0 || pick == 0) {
                gen_leaf(g, type);
                return;
        }
        both(g, "(");
        if (pick >= 6) {
                gen_expr_more(g, type, pick, depth);
        } else if (type == ROW_TYPE_INT4 || type == ROW_TYPE_INT8) {
                if (pick == 1) {
                        both(g, "-");
                        gen_expr(g, type, depth - 1);
                } else if (pick == 2) {
                        int from = type == ROW_TYPE_INT4 && rand_r(&g->seed) % 3 == 0
                                           ? ROW_TYPE_BOOL
                                           : (rand_r(&g->seed) % 2 ? ROW_TYPE_INT4 : ROW_TYPE_INT8);

                        both(g, "CAST(");
                        gen_expr(g, from, depth - 1);
                        both(g, type == ROW_TYPE_INT4 ? " AS integer)" : " AS bigint)");
                } else {
                        /* int8 results may mix int4 operands (promotion). */
                        int lt = type == ROW_TYPE_INT8 && rand_r(&g->seed) % 2 ? ROW_TYPE_INT4 : type;

                        gen_expr(g, lt, depth - 1);
                        both(g, " ");
                        both(g, arith[rand_r(&g->seed) % 5]);
                        both(g, " ");
                        gen_expr(g, type, depth - 1);
                }
        } else if (type == ROW_TYPE_TEXT) {
                both(g, "CAST(");
                gen_expr(g, any[rand_r(&g->seed) % 4], depth - 1);
                both(g, " AS text)");
        } else {
                int t = any[rand_r(&g->seed) % 4];

                switch (pick) {
                case 1:
                        both(g, "NOT ");
                        gen_expr(g, ROW_TYPE_BOOL, depth - 1);
                        break;
                case 2:
                        gen_expr(g, t, depth - 1);
                        both(g, rand_r(&g->seed) % 2 ? " IS NULL" : " IS NOT NULL");
                        break;
                case 3:
                        gen_expr(g, ROW_TYPE_BOOL, depth - 1);
                        both(g, rand_r(&g->seed) % 2 ? " AND " : " OR ");
                        gen_expr(g, ROW_TYPE_BOOL, depth - 1);
                        break;
                default:
                        gen_expr(g, t, depth - 1);
                        both(g, " ");
                        both(g, cmps[rand_r(&g->seed) % 6]);
                        both(g, " ");
                        gen_expr(g, t, depth - 1);
                        break;
                }
        }
        both(g, ")");
}

static void test_fold_vs_eval(void)
{
        static const int any[] = { ROW_TYPE_INT4, ROW_TYPE_INT8, ROW_TYPE_TEXT, ROW_TYPE_BOOL };
        unsigned seed = 2024;
        int agree = 0, short_circuits = 0, errors = 0;

        for (int iter = 0; iter < 3000; iter++) {
                struct gen g = { .seed = seed + (unsigned)iter };
                char *fold = NULL, *cols = NULL, *q1 = NULL, *q2 = NULL;
                size_t fold_size = 0, cols_size = 0;
                char got1[4096], got2[4096];
                struct row_error e1, e2;
                int r1, r2;

                g.fold = open_memstream(&fold, &fold_size);
                g.cols = open_memstream(&cols, &cols_size);
                CU_ASSERT_FATAL(g.fold && g.cols);
                gen_expr(&g, any[rand_r(&g.seed) % 4], 4);
                fclose(g.fold);
                fclose(g.cols);
                r_n = g.n;
                store_reset();
                store_add(30, 1, 1, g.vals, g.n);
                CU_ASSERT_FATAL(asprintf(&q1, "SELECT %s", fold) > 0);
                CU_ASSERT_FATAL(asprintf(&q2, "SELECT %s FROM r", cols) > 0);

                r1 = query(q1, 1, got1, sizeof(got1), &e1);
                r2 = query(q2, 1, got2, sizeof(got2), &e2);
                if (r1 == 0 && r2 == 0) {
                        agree++;
                        if (strcmp(got1, got2) != 0) {
                                fprintf(stderr, "\n  %s -> %s\n  %s -> %s\n", q1, got1, q2, got2);
                                CU_FAIL("folding and evaluation disagree");
                        }
                } else if (r1 < 0 && r2 == 0) {
                        /* Folding is eager; evaluation may have stopped at AND/OR. */
                        short_circuits++;
                        CU_ASSERT(strstr(q1, " AND ") || strstr(q1, " OR "));
                } else if (r1 == 0 && r2 < 0) {
                        fprintf(stderr, "\n  %s -> %s\n  %s -> %s %s\n", q1, got1, q2,
                                e2.sqlstate, e2.message);
                        CU_FAIL("evaluation failed where folding did not");
                } else {
                        errors++;
                        /* Only SQL errors: a plan error would be a bug on either side. */
                        CU_ASSERT(strcmp(e1.sqlstate, "XX000") != 0);
                        CU_ASSERT(strcmp(e2.sqlstate, "XX000") != 0);
                }
                free(fold);
                free(cols);
                free(q1);
                free(q2);
        }
        store_reset();
        if (getenv("FUZZ_VERBOSE"))
                fprintf(stderr, "fold vs eval: %d agree, %d short circuits, %d both fail\n",
                        agree, short_circuits, errors);
        CU_ASSERT(agree > 1000);
        CU_ASSERT(errors > 10);
        /* Folding leaves an expression that fails (1/0) for run time, so a constant
         * SELECT now short-circuits exactly as evaluation does: short_circuits may be 0. */
        (void)short_circuits;
}

/* ---- Random SELECTs over t: analyzer plans validate and run. ---- */

static void test_select_fuzz(void)
{
        static const char *const atoms[] = {
                "a", "b", "c", "d", "t.a", "1", "-1", "2147483647", "0", "'x'", "'5'", "NULL",
                "true", "mz_now()", "9223372036854775807", "(a - 3)", "''",
                "CASE WHEN c THEN a END", "CASE b WHEN 'x' THEN d ELSE a END", "upper(b)",
                "abs(d)", "length(b)", "concat(a, b, c)", "NULLIF(a, 3)", "(a IN (1, d, '3'))",
                "(b LIKE '%e')",
        };
        static const char *const ops[] = { " + ", " - ", " * ", " / ", " % ", " = ", " <> ",
                                           " < ", " >= ", " AND ", " OR ", " || ", " LIKE ",
                                           " IS DISTINCT FROM " };
        static const char *const postfix[] = { "", "", "", "", "::text", "::int8", "::int4",
                                               "::bool", " IS NULL", " IS NOT NULL",
                                               " IS NOT TRUE", " NOT BETWEEN 1 AND d" };
        unsigned seed = 31337;
        int ran = 0, analyzed = 0;

        fill_t();
        for (int iter = 0; iter < 20000; iter++) {
                char q[512] = "SELECT ";
                struct row_error err;
                char got[4096];
                int n = 1 + rand_r(&seed) % 3;

                for (int k = 0; k < n; k++) {
                        int terms = 1 + rand_r(&seed) % 4;

                        if (k)
                                strcat(q, ", ");
                        if (rand_r(&seed) % 4 == 0)
                                strcat(q, "NOT ");
                        for (int m = 0; m < terms; m++) {
                                if (m)
                                        strcat(q, ops[(size_t)rand_r(&seed) % ELEMENTSOF(ops)]);
                                strcat(q, atoms[(size_t)rand_r(&seed) % ELEMENTSOF(atoms)]);
                                strcat(q, postfix[(size_t)rand_r(&seed) % ELEMENTSOF(postfix)]);
                        }
                }
                strcat(q, " FROM t");
                if (rand_r(&seed) % 2) {
                        strcat(q, " WHERE ");
                        strcat(q, atoms[(size_t)rand_r(&seed) % ELEMENTSOF(atoms)]);
                        strcat(q, ops[(size_t)rand_r(&seed) % ELEMENTSOF(ops)]);
                        strcat(q, atoms[(size_t)rand_r(&seed) % ELEMENTSOF(atoms)]);
                }
                if (rand_r(&seed) % 4 == 0)
                        strcat(q, " AS OF 2");
                if (query(q, 3, got, sizeof(got), &err) == 0) {
                        ran++;
                        continue;
                }
                CU_ASSERT_EQUAL(strlen(err.sqlstate), 5);
                if (getenv("FUZZ_VERBOSE"))
                        fprintf(stderr, "%s %s | %s\n", err.sqlstate, err.message, q);
                /* Errors are the user's (analysis) or SQL's (evaluation), never XX000. */
                if (strcmp(err.sqlstate, "XX000") == 0) {
                        fprintf(stderr, "\n  %s: %s\n", q, err.message);
                        CU_FAIL("internal error");
                }
                analyzed++;
        }
        CU_ASSERT(ran > 500);
        CU_ASSERT(analyzed > 500);
        store_reset();
}

#define IA(s) lit(ROW_TYPE_INT4_ARRAY, ROW_DATUM_TEXT(s, (uint32_t)strlen(s)))
#define TA(s) lit(ROW_TYPE_TEXT_ARRAY, ROW_DATUM_TEXT(s, (uint32_t)strlen(s)))
#define TXTD(s) ROW_DATUM_TEXT(s, (uint32_t)strlen(s))

/* x op ANY/ALL (a): FUNC_ANY/ALL with the comparison as an int4 literal. */
static Coord__Plan__Expr *any_all(bool any, Coord__Plan__Func op, Coord__Plan__Expr *x,
                                  Coord__Plan__Expr *a)
{
        return call(ROW_TYPE_BOOL, any ? F(ANY) : F(ALL), 3, x, a, I4((int64_t)op));
}

static void test_arrays(void)
{
        /* ARRAY[...]: canonical text; int8 elements range-checked into int4[]. */
        expect_datum(call(ROW_TYPE_INT4_ARRAY, F(ARRAY), 3, I4(1), NUL(ROW_TYPE_INT4), I8(-3)),
                     TXTD("{1,NULL,-3}"));
        expect_datum(call(ROW_TYPE_TEXT_ARRAY, F(ARRAY), 2, TXT("a b"), TXT("")),
                     TXTD("{\"a b\",\"\"}"));
        expect_datum(call(ROW_TYPE_INT4_ARRAY, F(ARRAY), 0), TXTD("{}"));
        expect_eval_error(call(ROW_TYPE_INT4_ARRAY, F(ARRAY), 1, I8(1LL << 40)), "22003", NULL);
        /* Casts: text -> array parses into the canonical form, array -> text is it. */
        expect_datum(call(ROW_TYPE_INT4_ARRAY, F(CAST), 1, TXT(" { 1 , 2 } ")), TXTD("{1,2}"));
        expect_datum(call(ROW_TYPE_TEXT, F(CAST), 1, IA("{1,2}")), TXTD("{1,2}"));
        expect_eval_error(call(ROW_TYPE_INT4_ARRAY, F(CAST), 1, TXT("{x}")), "22P02", NULL);
        CU_ASSERT(row_expr_cast_allowed(ROW_TYPE_TEXT, ROW_TYPE_INT4_ARRAY));
        CU_ASSERT(!row_expr_cast_allowed(ROW_TYPE_INT4, ROW_TYPE_INT4_ARRAY));
        /* Comparisons order as arrays, not as bytes. */
        expect_datum(call(ROW_TYPE_BOOL, F(LT), 2, IA("{9}"), IA("{10}")), T);
        expect_datum(call(ROW_TYPE_BOOL, F(GT), 2, IA("{1,2}"), IA("{1}")), T);
        expect_datum(call(ROW_TYPE_BOOL, F(EQ), 2, IA("{1,2}"), IA("{1,2}")), T);
        /* ANY / ALL, three-valued. */
        expect_datum(any_all(true, F(EQ), I4(2), IA("{1,2}")), T);
        expect_datum(any_all(true, F(EQ), I4(3), IA("{1,2}")), FA);
        expect_datum(any_all(true, F(EQ), I4(3), IA("{1,NULL}")), N);
        expect_datum(any_all(true, F(EQ), I4(1), IA("{1,NULL}")), T);
        expect_datum(any_all(true, F(EQ), NUL(ROW_TYPE_INT4), IA("{}")), FA);
        expect_datum(any_all(true, F(EQ), I4(1), NUL(ROW_TYPE_INT4_ARRAY)), N);
        expect_datum(any_all(false, F(NE), I4(1), IA("{2,3}")), T);
        expect_datum(any_all(false, F(LT), I4(1), IA("{2,NULL}")), N);
        expect_datum(any_all(false, F(LT), I4(5), IA("{2,NULL}")), FA);
        expect_datum(any_all(false, F(EQ), NUL(ROW_TYPE_INT4), IA("{}")), T);
        expect_datum(any_all(true, F(EQ), TXT("b c"), TA("{a,\"b c\"}")), T);
        /* Subscripts, array_to_string, lengths. */
        expect_datum(call(ROW_TYPE_INT4, F(SUBSCRIPT), 2, IA("{10,20}"), I4(2)), ROW_DATUM_INT(20));
        expect_datum(call(ROW_TYPE_INT4, F(SUBSCRIPT), 2, IA("{10,20}"), I8(0)), N);
        expect_datum(call(ROW_TYPE_INT4, F(SUBSCRIPT), 2, IA("{10,20}"), I4(3)), N);
        expect_datum(call(ROW_TYPE_TEXT, F(SUBSCRIPT), 2, TA("{\"x\\\"y\"}"), I4(1)),
                     TXTD("x\"y"));
        expect_datum(call(ROW_TYPE_TEXT, F(ARRAY_TO_STRING), 2, TA("{a,NULL,b}"), TXT(", ")),
                     TXTD("a, b"));
        expect_datum(call(ROW_TYPE_TEXT, F(ARRAY_TO_STRING), 3, TA("{a,NULL,b}"), TXT(","),
                          TXT("*")), TXTD("a,*,b"));
        expect_datum(call(ROW_TYPE_TEXT, F(ARRAY_TO_STRING), 3, TA("{NULL}"), TXT(","),
                          NUL(ROW_TYPE_TEXT)), TXTD(""));
        expect_datum(call(ROW_TYPE_TEXT, F(ARRAY_TO_STRING), 2, NUL(ROW_TYPE_TEXT_ARRAY), TXT(",")), N);
        expect_datum(call(ROW_TYPE_INT4, F(ARRAY_LENGTH), 2, IA("{1,2,3}"), I4(1)), ROW_DATUM_INT(3));
        expect_datum(call(ROW_TYPE_INT4, F(ARRAY_LENGTH), 2, IA("{1,2,3}"), I4(2)), N);
        expect_datum(call(ROW_TYPE_INT4, F(ARRAY_UPPER), 2, IA("{}"), I4(1)), N);
        expect_datum(call(ROW_TYPE_INT4, F(ARRAY_LOWER), 2, IA("{5}"), I4(1)), ROW_DATUM_INT(1));
        expect_datum(call(ROW_TYPE_INT4, F(CARDINALITY), 1, IA("{}")), ROW_DATUM_INT(0));
        /* Malformed plans are refused by the check. */
        expect_invalid(call(ROW_TYPE_BOOL, F(ANY), 3, I4(1), I4(1), I4(F(EQ))), "XX000");
        expect_invalid(call(ROW_TYPE_BOOL, F(ANY), 3, I4(1), IA("{1}"), I4(F(AND))), "XX000");
        expect_invalid(call(ROW_TYPE_TEXT, F(SUBSCRIPT), 2, IA("{1}"), I4(1)), "XX000");
        expect_invalid(call(ROW_TYPE_INT4_ARRAY, F(ARRAY), 1, TXT("x")), "XX000");
}

static const struct t_case expr_cases[] = {
        { "three-valued logic", test_three_valued },
        { "comparisons", test_comparisons },
        { "greatest and least", test_greatest_least },
        { "arithmetic", test_arithmetic },
        { "casts", test_casts },
        { "numeric text and encoding", test_numeric_io },
        { "numeric arithmetic", test_numeric_arith },
        { "numeric round and casts", test_numeric_round_cast },
        { "arrays", test_arrays },
        { "short circuit", test_short_circuit },
        { "mz_now and columns", test_mz_now_and_columns },
        { "like", test_like },
        { "regex", test_regex },
        { "case and text functions", test_case_and_text },
        { "invalid expressions", test_invalid_exprs },
        { "expression fuzz", test_expr_fuzz },
        { NULL, NULL },
};

static const struct t_case engine_cases[] = {
        { "peek", test_peek },
        { "delete plan", test_delete_plan },
        { "peek errors", test_peek_errors },
        { "plan validation", test_plan_validation },
        { "consolidate", test_consolidate },
        { "apply is linear", test_apply_linear },
        { "fold vs eval fuzz", test_fold_vs_eval },
        { "select fuzz", test_select_fuzz },
        { NULL, NULL },
};

int main(void)
{
        const struct t_suite suites[] = {
                { "eval expressions", expr_cases },
                { "eval engine", engine_cases },
                { NULL, NULL },
        };

        return t_run(suites);
}
