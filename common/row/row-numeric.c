/* row-numeric.c -- the numeric datum (row.h "Numeric"): text I/O, comparison and
 * arithmetic with PostgreSQL's result scales over a 128-bit coefficient.
 *
 * Every operation works on magnitudes in 256 bits (struct u256, below): the operands'
 * coefficients are under 10^38 < 2^127, so an operand aligned to a common scale (times
 * at most 10^38) or a product of two of them is under 10^76 < 2^253 and never wraps.
 * A result is checked against 10^38 once, at the end (finish()), so an intermediate
 * never silently loses digits.
 */
#include "row.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef unsigned __int128 u128;

/* 10^k for k = 0..38 (10^38 < 2^127). */
static u128 pow10_(unsigned k)
{
        u128 v = 1;

        assert(k <= 38);
        while (k--)
                v *= 10;
        return v;
}

/* ---- 256-bit magnitudes: w[0] least significant. ---- */

struct u256 {
        uint64_t w[4];
};

static struct u256 u256_of(u128 v)
{
        return (struct u256){ { (uint64_t)v, (uint64_t)(v >> 64), 0, 0 } };
}

static bool u256_fits128(const struct u256 *a)
{
        return a->w[2] == 0 && a->w[3] == 0;
}

static u128 u256_low(const struct u256 *a)
{
        return (u128)a->w[1] << 64 | a->w[0];
}

static int u256_cmp(const struct u256 *a, const struct u256 *b)
{
        for (int i = 3; i >= 0; i--)
                if (a->w[i] != b->w[i])
                        return a->w[i] < b->w[i] ? -1 : 1;
        return 0;
}

static bool u256_is_zero(const struct u256 *a)
{
        return !(a->w[0] | a->w[1] | a->w[2] | a->w[3]);
}

static struct u256 u256_add(struct u256 a, const struct u256 *b)
{
        u128 carry = 0;

        for (int i = 0; i < 4; i++) {
                u128 s = (u128)a.w[i] + b->w[i] + carry;

                a.w[i] = (uint64_t)s;
                carry = s >> 64;
        }
        return a;
}

/* a - b for a >= b. */
static struct u256 u256_sub(struct u256 a, const struct u256 *b)
{
        uint64_t borrow = 0;

        for (int i = 0; i < 4; i++) {
                uint64_t x = a.w[i], y = b->w[i];
                uint64_t d = x - y - borrow;

                borrow = (x < y) || (x - y < borrow);
                a.w[i] = d;
        }
        return a;
}

/* a * b for a, b < 2^128: the full product always fits. */
static struct u256 u256_mul128(u128 a, u128 b)
{
        uint64_t x[2] = { (uint64_t)a, (uint64_t)(a >> 64) };
        uint64_t y[2] = { (uint64_t)b, (uint64_t)(b >> 64) };
        struct u256 r = { { 0 } };

        for (int i = 0; i < 2; i++) {
                u128 carry = 0;

                for (int j = 0; j < 2; j++) {
                        u128 t = (u128)x[i] * y[j] + r.w[i + j] + carry;

                        r.w[i + j] = (uint64_t)t;
                        carry = t >> 64;
                }
                r.w[i + 2] = (uint64_t)carry;
        }
        return r;
}

/* a * m for a small multiplier; *overflow when the product passes 2^256. */
static struct u256 u256_mul_small(struct u256 a, uint64_t m, bool *overflow)
{
        u128 carry = 0;

        for (int i = 0; i < 4; i++) {
                u128 t = (u128)a.w[i] * m + carry;

                a.w[i] = (uint64_t)t;
                carry = t >> 64;
        }
        if (carry)
                *overflow = true;
        return a;
}

/* a * 10^k (k <= 76 in practice); *overflow past 2^256. */
static struct u256 u256_scale10(struct u256 a, unsigned k, bool *overflow)
{
        while (k >= 19) {
                a = u256_mul_small(a, 10000000000000000000ull, overflow);
                k -= 19;
        }
        return k ? u256_mul_small(a, (uint64_t)pow10_(k), overflow) : a;
}

/* Quotient and remainder of a / b, b != 0: shift and subtract, bit by bit. */
static void u256_divmod(const struct u256 *a, const struct u256 *b, struct u256 *q,
                        struct u256 *r)
{
        struct u256 quo = { { 0 } }, rem = { { 0 } };

        assert(!u256_is_zero(b));
        for (int bit = 255; bit >= 0; bit--) {
                /* rem = rem << 1 | bit of a; rem < b before the shift, so it fits. */
                for (int i = 3; i > 0; i--)
                        rem.w[i] = rem.w[i] << 1 | rem.w[i - 1] >> 63;
                rem.w[0] = rem.w[0] << 1 | (a->w[bit / 64] >> (bit % 64) & 1);
                if (u256_cmp(&rem, b) >= 0) {
                        rem = u256_sub(rem, b);
                        quo.w[bit / 64] |= 1ull << (bit % 64);
                }
        }
        *q = quo;
        *r = rem;
}

/* ---- Values as sign and magnitude. ---- */

struct num {
        bool neg;
        struct u256 mag;
        unsigned scale;
};

static struct num num_of(const struct row_datum *d)
{
        __int128 c = row_numeric_coef(d);

        assert(d->kind == ROW_KIND_NUMERIC);
        return (struct num){ .neg = c < 0, .mag = u256_of(c < 0 ? -(u128)c : (u128)c),
                             .scale = d->num.scale };
}

static int overflow(struct row_error *err)
{
        return row_error_set(err, -EINVAL, "22003", "value overflows numeric format");
}

/* The datum of n, or 22003 when it has more than 38 digits or a scale past 38. */
static int finish(const struct num *n, struct row_datum *ret, struct row_error *err)
{
        struct u256 lim = u256_of(pow10_(ROW_NUMERIC_MAX_PRECISION));
        u128 m;

        if (n->scale > ROW_NUMERIC_MAX_SCALE || u256_cmp(&n->mag, &lim) >= 0)
                return overflow(err);
        m = u256_low(&n->mag);
        *ret = row_numeric_make(n->neg ? -(__int128)m : (__int128)m, n->scale);
        return 0;
}

/* n at a larger scale (exact). */
static struct num num_rescale_up(struct num n, unsigned scale, bool *of)
{
        assert(scale >= n.scale);
        n.mag = u256_scale10(n.mag, scale - n.scale, of);
        n.scale = scale;
        return n;
}

/* q = a / b rounded half away from zero (magnitudes). */
static struct u256 div_round(const struct u256 *a, const struct u256 *b)
{
        struct u256 q, r, one = u256_of(1);
        bool of = false;

        u256_divmod(a, b, &q, &r);
        r = u256_mul_small(r, 2, &of);
        if (of || u256_cmp(&r, b) >= 0)
                q = u256_add(q, &one);
        return q;
}

/* n at a smaller scale, rounded half away from zero (or truncated). */
static struct num num_rescale_down(struct num n, unsigned scale, bool truncate)
{
        struct u256 d, q, r;

        assert(scale <= n.scale);
        if (scale == n.scale)
                return n;
        /* The difference is at most 38 + 38 (round(x, -38) of a scale-38 value). */
        d = u256_of(1);
        {
                bool of = false;

                d = u256_scale10(d, n.scale - scale, &of);
                assert(!of);
        }
        if (truncate)
                u256_divmod(&n.mag, &d, &q, &r);
        else
                q = div_round(&n.mag, &d);
        n.mag = q;
        n.scale = scale;
        if (u256_is_zero(&n.mag))
                n.neg = false;
        return n;
}

/* ---- Text. ---- */

int row_numeric_parse(const char *text, size_t len, struct row_datum *ret,
                      struct row_error *err)
{
        size_t i = 0, end = len;
        struct num n = { 0 };
        bool digits = false, of = false;
        long frac = 0, exp = 0;

        while (i < end && isspace((unsigned char)text[i]))
                i++;
        while (end > i && isspace((unsigned char)text[end - 1]))
                end--;
        if (i < end && (text[i] == '+' || text[i] == '-'))
                n.neg = text[i++] == '-';
        if ((end - i == 3 && strncasecmp(text + i, "nan", 3) == 0) ||
            (end - i == 8 && strncasecmp(text + i, "infinity", 8) == 0) ||
            (end - i == 3 && strncasecmp(text + i, "inf", 3) == 0))
                return row_error_set(err, -EINVAL, "0A000",
                                     "numeric NaN and Infinity are not supported");
        for (bool point = false; i < end; i++) {
                if (text[i] == '.' && !point) {
                        point = true;
                        continue;
                }
                if (!isdigit((unsigned char)text[i]))
                        break;
                digits = true;
                n.mag = u256_mul_small(n.mag, 10, &of);
                {
                        struct u256 dg = u256_of((u128)(text[i] - '0'));

                        n.mag = u256_add(n.mag, &dg);
                }
                if (point)
                        frac++;
                if (frac > 2 * ROW_NUMERIC_MAX_SCALE || (!u256_fits128(&n.mag)))
                        of = true;
        }
        if (!digits)
                goto syntax;
        if (i < end && (text[i] == 'e' || text[i] == 'E')) {
                bool eneg = false, edigits = false;

                i++;
                if (i < end && (text[i] == '+' || text[i] == '-'))
                        eneg = text[i++] == '-';
                for (; i < end && isdigit((unsigned char)text[i]); i++) {
                        edigits = true;
                        if (exp < 100000)
                                exp = exp * 10 + (text[i] - '0');
                }
                if (!edigits)
                        goto syntax;
                exp = eneg ? -exp : exp;
        }
        if (i != end)
                goto syntax;
        if (of)
                return overflow(err);
        /* value = mag x 10^-(frac - exp); the scale is never negative. */
        if (frac - exp >= 0) {
                if (frac - exp > ROW_NUMERIC_MAX_SCALE)
                        return overflow(err);
                n.scale = (unsigned)(frac - exp);
        } else {
                if (exp - frac > 2 * ROW_NUMERIC_MAX_PRECISION)
                        return u256_is_zero(&n.mag) ? finish(&n, ret, err) : overflow(err);
                n.mag = u256_scale10(n.mag, (unsigned)(exp - frac), &of);
                if (of)
                        return overflow(err);
        }
        if (u256_is_zero(&n.mag))
                n.neg = false;
        return finish(&n, ret, err);
syntax: {
        char shown[224];

        snprintf(shown, sizeof(shown), "%.*s%s", (int)(len < 200 ? len : 200), text,
                 len > 200 ? "..." : "");
        return row_error_set(err, -EINVAL, "22P02",
                             "invalid input syntax for type numeric: \"%s\"", shown);
}
}

size_t row_numeric_format(const struct row_datum *d, char *buf)
{
        __int128 c = row_numeric_coef(d);
        u128 m = c < 0 ? -(u128)c : (u128)c;
        unsigned scale = d->num.scale, nd = 0;
        char digits[48];
        size_t at = 0;

        do {
                digits[nd++] = (char)('0' + (unsigned)(m % 10));
                m /= 10;
        } while (m);
        while (nd <= scale)             /* at least one digit before the point */
                digits[nd++] = '0';
        if (c < 0)
                buf[at++] = '-';
        for (unsigned k = nd; k > 0; k--) {
                if (k == scale)
                        buf[at++] = '.';
                buf[at++] = digits[k - 1];
        }
        buf[at] = '\0';
        assert(at < ROW_TEXT_SCRATCH);
        return at;
}

/* ---- Comparison and conversion. ---- */

int row_numeric_cmp(const struct row_datum *a, const struct row_datum *b)
{
        struct num x = num_of(a), y = num_of(b);
        unsigned s = x.scale > y.scale ? x.scale : y.scale;
        bool of = false;
        int c;

        if (x.neg != y.neg)
                return x.neg ? -1 : 1;
        x = num_rescale_up(x, s, &of);
        y = num_rescale_up(y, s, &of);
        assert(!of);
        c = u256_cmp(&x.mag, &y.mag);
        return x.neg ? -c : c;
}

struct row_datum row_numeric_normalize(const struct row_datum *d)
{
        __int128 c = row_numeric_coef(d);
        unsigned s = d->num.scale;

        while (s > 0 && c % 10 == 0) {
                c /= 10;
                s--;
        }
        return row_numeric_make(c, c ? s : 0);
}

struct row_datum row_numeric_from_int(int64_t v)
{
        return row_numeric_make(v, 0);
}

int row_numeric_to_int(const struct row_datum *d, enum row_type type, struct row_datum *ret,
                       struct row_error *err)
{
        struct num n = num_rescale_down(num_of(d), 0, false);
        int64_t lo = type == ROW_TYPE_INT4 ? INT32_MIN : INT64_MIN;
        int64_t hi = type == ROW_TYPE_INT4 ? INT32_MAX : INT64_MAX;
        u128 m;

        if (!u256_fits128(&n.mag) || (m = u256_low(&n.mag)) > (u128)hi + (n.neg ? 1 : 0))
                return row_error_set(err, -EINVAL, "22003", "%s out of range",
                                     type == ROW_TYPE_INT4 ? "integer" : "bigint");
        *ret = ROW_DATUM_INT(n.neg ? (m == (u128)hi + 1 ? lo : -(int64_t)m) : (int64_t)m);
        return 0;
}

/* ---- Arithmetic. ---- */

static int add_sub(const struct row_datum *a, const struct row_datum *b, bool sub,
                   struct row_datum *ret, struct row_error *err)
{
        struct num x = num_of(a), y = num_of(b), z;
        unsigned s = x.scale > y.scale ? x.scale : y.scale;
        bool of = false;

        x = num_rescale_up(x, s, &of);
        y = num_rescale_up(y, s, &of);
        assert(!of);
        if (sub)
                y.neg = !y.neg;
        z.scale = s;
        if (x.neg == y.neg) {
                z.neg = x.neg;
                z.mag = u256_add(x.mag, &y.mag);
        } else if (u256_cmp(&x.mag, &y.mag) >= 0) {
                z.neg = x.neg;
                z.mag = u256_sub(x.mag, &y.mag);
        } else {
                z.neg = y.neg;
                z.mag = u256_sub(y.mag, &x.mag);
        }
        if (u256_is_zero(&z.mag))
                z.neg = false;
        return finish(&z, ret, err);
}

int row_numeric_add(const struct row_datum *a, const struct row_datum *b, struct row_datum *ret,
                    struct row_error *err)
{
        return add_sub(a, b, false, ret, err);
}

int row_numeric_sub(const struct row_datum *a, const struct row_datum *b, struct row_datum *ret,
                    struct row_error *err)
{
        return add_sub(a, b, true, ret, err);
}

int row_numeric_mul(const struct row_datum *a, const struct row_datum *b, struct row_datum *ret,
                    struct row_error *err)
{
        struct num x = num_of(a), y = num_of(b), z;

        z.mag = u256_mul128(u256_low(&x.mag), u256_low(&y.mag));
        z.scale = x.scale + y.scale;
        z.neg = x.neg != y.neg && !u256_is_zero(&z.mag);
        return finish(&z, ret, err);
}

static int div_zero(struct row_error *err)
{
        return row_error_set(err, -EINVAL, "22012", "division by zero");
}

/* The base-10000 weight and first digit of a nonzero value, as PostgreSQL stores it:
 * |value| = firstdigit x 10000^weight + less, 1 <= firstdigit <= 9999. */
static void nbase_lead(const struct num *n, int *weight, unsigned *first)
{
        u128 m = u256_low(&n->mag);
        int e = -1;     /* decimal exponent of the leading digit: m has e + 1 + scale digits */
        int k;

        for (u128 t = m; t; t /= 10)
                e++;
        e -= (int)n->scale;
        *weight = e >= 0 ? e / 4 : -((-e + 3) / 4);
        k = 4 * *weight + (int)n->scale;        /* |value| / 10000^weight = m / 10^k */
        *first = k >= 0 ? (unsigned)(m / pow10_((unsigned)k)) : (unsigned)(m * pow10_((unsigned)-k));
}

/* PostgreSQL's select_div_scale() (numeric.c): enough digits for 16 significant ones
 * (NUMERIC_MIN_SIG_DIGITS) by the estimated base-10000 weight of the quotient, at least
 * either operand's scale. */
static int div_scale(const struct num *x, const struct num *y)
{
        int w1 = 0, w2 = 0, qweight, rscale;
        unsigned f1 = 0, f2 = 0;

        if (!u256_is_zero(&x->mag))
                nbase_lead(x, &w1, &f1);
        if (!u256_is_zero(&y->mag))
                nbase_lead(y, &w2, &f2);
        qweight = w1 - w2;
        if (f1 <= f2)
                qweight--;
        rscale = 16 - qweight * 4;
        if (rscale < (int)x->scale)
                rscale = (int)x->scale;
        if (rscale < (int)y->scale)
                rscale = (int)y->scale;
        return rscale < 0 ? 0 : rscale;
}

int row_numeric_div(const struct row_datum *a, const struct row_datum *b, struct row_datum *ret,
                    struct row_error *err)
{
        struct num x = num_of(a), y = num_of(b), z;
        struct u256 num, den;
        bool of = false;
        int rs, e;

        if (u256_is_zero(&y.mag))
                return div_zero(err);
        rs = div_scale(&x, &y);
        if (rs > ROW_NUMERIC_MAX_SCALE)
                return overflow(err);
        /* x / y x 10^rs = (mx x 10^(rs - sx + sy)) / my. */
        e = rs - (int)x.scale + (int)y.scale;
        num = x.mag;
        den = y.mag;
        if (e >= 0)
                num = u256_scale10(num, (unsigned)e, &of);
        else
                den = u256_scale10(den, (unsigned)-e, &of);
        if (of)
                return overflow(err);
        z.mag = div_round(&num, &den);
        z.scale = (unsigned)rs;
        z.neg = x.neg != y.neg && !u256_is_zero(&z.mag);
        return finish(&z, ret, err);
}

int row_numeric_mod(const struct row_datum *a, const struct row_datum *b, struct row_datum *ret,
                    struct row_error *err)
{
        struct num x = num_of(a), y = num_of(b), z;
        unsigned s = x.scale > y.scale ? x.scale : y.scale;
        struct u256 q;
        bool of = false;

        if (u256_is_zero(&y.mag))
                return div_zero(err);
        x = num_rescale_up(x, s, &of);
        y = num_rescale_up(y, s, &of);
        assert(!of);
        u256_divmod(&x.mag, &y.mag, &q, &z.mag);
        z.scale = s;
        z.neg = x.neg && !u256_is_zero(&z.mag);
        return finish(&z, ret, err);
}

int row_numeric_round(const struct row_datum *a, int64_t n, bool truncate,
                      struct row_datum *ret, struct row_error *err)
{
        struct num x = num_of(a);
        bool of = false;

        /* PostgreSQL keeps n digits after the point; past 38 they cannot be shown. */
        if (n > ROW_NUMERIC_MAX_SCALE)
                return overflow(err);
        if (n >= (int64_t)x.scale) {
                x = num_rescale_up(x, (unsigned)n, &of);
                return of ? overflow(err) : finish(&x, ret, err);
        }
        if (n >= 0) {
                x = num_rescale_down(x, (unsigned)n, truncate);
                return finish(&x, ret, err);
        }
        /* n < 0: to a multiple of 10^-n, scale 0.  Past 39 places every value is 0. */
        if (n < -(ROW_NUMERIC_MAX_PRECISION + 1))
                n = -(ROW_NUMERIC_MAX_PRECISION + 1);
        x.scale += (unsigned)-n;        /* x / 10^-n, then rounded to an integer */
        x = num_rescale_down(x, 0, truncate);
        x = num_rescale_up(x, (unsigned)-n, &of);
        x.scale = 0;
        return of ? overflow(err) : finish(&x, ret, err);
}

int row_numeric_ceil_floor(const struct row_datum *a, bool ceil_, struct row_datum *ret,
                           struct row_error *err)
{
        struct num x = num_of(a), t = num_rescale_down(x, 0, true);
        struct u256 back, one = u256_of(1);
        bool of = false, exact;

        back = num_rescale_up(t, x.scale, &of).mag;
        exact = u256_cmp(&back, &x.mag) == 0;
        t.neg = x.neg;
        /* Truncation went toward zero: away from zero for ceil of a positive value and
         * floor of a negative one. */
        if (!exact && ceil_ != x.neg)
                t.mag = u256_add(t.mag, &one);
        if (u256_is_zero(&t.mag))
                t.neg = false;
        return finish(&t, ret, err);
}

int row_numeric_typmod(const struct row_datum *a, unsigned precision, unsigned scale,
                       struct row_datum *ret, struct row_error *err)
{
        struct num x = num_of(a);
        struct u256 lim;
        bool of = false;
        unsigned maxdigits = precision - scale;

        assert(precision >= 1 && precision <= ROW_NUMERIC_MAX_PRECISION && scale <= precision);
        if (scale >= x.scale)
                x = num_rescale_up(x, scale, &of);
        else
                x = num_rescale_down(x, scale, false);
        assert(!of);
        /* |x| < 10^(precision - scale) at this scale: mag < 10^precision. */
        lim = u256_of(pow10_(precision));
        if (u256_cmp(&x.mag, &lim) >= 0) {
                row_error_set(err, -EINVAL, "22003", "numeric field overflow");
                if (maxdigits)
                        row_error_detail(err, "A field with precision %u, scale %u must round "
                                         "to an absolute value less than 10^%u.", precision,
                                         scale, maxdigits);
                else
                        row_error_detail(err, "A field with precision %u, scale %u must round "
                                         "to an absolute value less than 1.", precision, scale);
                return -EINVAL;
        }
        return finish(&x, ret, err);
}
