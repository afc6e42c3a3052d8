/* test-base -- common/ base: parse_u64, conf (flags and INI file), byte order helpers,
 * u64_nth() against a sort, GROW_ARRAY(), pb_varints(), refresh schedules against a walk
 * of every time. */
#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "oamap.h"
#include "refresh.h"
#include "t.h"
#include "util.h"

static char *s_opt;
static uint64_t u_opt;
static bool b_opt;
static const struct conf_option opts[] = {
        { "name", CONF_STR, &s_opt, 0, "a string" },
        { "count", CONF_U64, &u_opt, 1000, "a number up to 1000" },
        { "flag", CONF_BOOL, &b_opt, 0, "a bool" },
};

static void reset(void)
{
        conf_done(opts, ELEMENTSOF(opts));
        u_opt = 7;
        b_opt = false;
}

static int parse(int argc, char **argv, char *err, size_t errlen, int *nargs, char **args)
{
        return conf_parse(argc, argv, "test", opts, ELEMENTSOF(opts), args, nargs, err, errlen);
}

static void test_nth(void)
{
        static uint64_t v[4096], sorted[4096];
        uint64_t seed = 1;

        /* Random, many duplicates, ascending, descending, all equal; every size up to 40
         * and some large ones; each k checked against qsort. */
        for (int shape = 0; shape < 5; shape++) {
                for (size_t n = 1; n <= 4096; n = n < 40 ? n + 1 : n * 3) {
                        for (size_t i = 0; i < n; i++) {
                                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                                v[i] = shape == 0 ? seed >> 20 : shape == 1 ? (seed >> 33) % 5 :
                                       shape == 2 ? i : shape == 3 ? n - i : 42;
                        }
                        memcpy(sorted, v, n * sizeof(*v));
                        qsort(sorted, n, sizeof(*sorted), t_cmp_u64);
                        for (size_t k = 0; k < n; k += n < 40 ? 1 : n / 7 + 1) {
                                uint64_t w[4096];

                                memcpy(w, v, n * sizeof(*v));
                                CU_ASSERT_EQUAL(u64_nth(w, n, k), sorted[k]);
                                for (size_t i = 0; i < n; i++)
                                        CU_ASSERT(i < k ? w[i] <= w[k] : i > k ? w[i] >= w[k] : 1);
                        }
                }
        }
}

static void test_parse_u64(void)
{
        uint64_t v = 42;

        CU_ASSERT_EQUAL(parse_u64("123", UINT64_MAX, &v), 0);
        CU_ASSERT_EQUAL(v, 123);
        CU_ASSERT_EQUAL(parse_u64("18446744073709551615", UINT64_MAX, &v), 0);
        CU_ASSERT_EQUAL(v, UINT64_MAX);
        CU_ASSERT_EQUAL(parse_u64("18446744073709551616", UINT64_MAX, &v), -ERANGE);
        CU_ASSERT_EQUAL(parse_u64("11", 10, &v), -ERANGE);
        CU_ASSERT_EQUAL(parse_u64("", 10, &v), -EINVAL);
        CU_ASSERT_EQUAL(parse_u64("-1", UINT64_MAX, &v), -EINVAL);
        CU_ASSERT_EQUAL(parse_u64(" 1", UINT64_MAX, &v), -EINVAL);
        CU_ASSERT_EQUAL(parse_u64("12x", UINT64_MAX, &v), -EINVAL);
        CU_ASSERT_EQUAL(parse_u64(NULL, UINT64_MAX, &v), -EINVAL);
        CU_ASSERT_EQUAL(v, UINT64_MAX);         /* untouched on failure */
}

/* write_file_durable() then read_u64_file(): the round trip, a missing file, a
 * corrupt or out-of-range one (-EBADMSG, never a fresh 0). */
static void test_u64_file(void)
{
        char *dir = t_mkdtemp("u64file");
        uint64_t v = 7;

        CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
        CU_ASSERT_EQUAL(read_u64_file(dir, "n", UINT64_MAX, &v), -ENOENT);
        CU_ASSERT_EQUAL(v, 7);
        CU_ASSERT_EQUAL(write_file_durable(dir, "n", "18446744073709551615\n"), 0);
        CU_ASSERT_EQUAL(read_u64_file(dir, "n", UINT64_MAX, &v), 0);
        CU_ASSERT_EQUAL(v, UINT64_MAX);
        CU_ASSERT_EQUAL(read_u64_file(dir, "n", UINT64_MAX - 1, &v), -EBADMSG);
        CU_ASSERT_EQUAL(write_file_durable(dir, "n", "12x\n"), 0);
        CU_ASSERT_EQUAL(read_u64_file(dir, "n", UINT64_MAX, &v), -EBADMSG);
        CU_ASSERT_EQUAL(write_file_durable(dir, "n", ""), 0);
        CU_ASSERT_EQUAL(read_u64_file(dir, "n", UINT64_MAX, &v), -EBADMSG);
        CU_ASSERT_EQUAL(write_file_durable(dir, "n", "42"), 0);
        CU_ASSERT_EQUAL(read_u64_file(dir, "n", UINT64_MAX, &v), 0);
        CU_ASSERT_EQUAL(v, 42);
        t_rmrf(dir);
        free(dir);
}

static void test_kv(void)
{
        const char *d = "catalog=primary catalog_commits=12 commits=7 x_commits=9 empty= last=42";

        CU_ASSERT_EQUAL(kv_u64(d, "catalog_commits"), 12);
        CU_ASSERT_EQUAL(kv_u64(d, "commits"), 7);       /* not the tail of another key */
        CU_ASSERT_EQUAL(kv_u64(d, "last"), 42);
        CU_ASSERT_EQUAL(kv_u64(d, "empty"), 0);
        CU_ASSERT_EQUAL(kv_u64(d, "catalog"), 0);       /* not a number: 0, as strtoull */
        CU_ASSERT_EQUAL(kv_u64(d, "commit"), UINT64_MAX);      /* not a whole key */
        CU_ASSERT_EQUAL(kv_u64(d, "missing"), UINT64_MAX);
        CU_ASSERT_EQUAL(kv_u64(NULL, "x"), UINT64_MAX);
        CU_ASSERT_EQUAL(kv_u64(d, ""), UINT64_MAX);
}

static void test_bytes(void)
{
        uint8_t b[8];

        be64_put(b, 0x0102030405060708ull);
        CU_ASSERT_EQUAL(b[0], 1);
        CU_ASSERT_EQUAL(b[7], 8);
        CU_ASSERT_EQUAL(be64_get(b), 0x0102030405060708ull);
        le32_put(b, 0xa1b2c3d4u);
        CU_ASSERT_EQUAL(b[0], 0xd4);
        CU_ASSERT_EQUAL(le32_get(b), 0xa1b2c3d4u);
}

static void test_grow(void)
{
        uint32_t *v = NULL;
        size_t cap = 0;

        CU_ASSERT_EQUAL(GROW_ARRAY(v, cap, 0), 0);              /* nothing asked: no array */
        CU_ASSERT_PTR_NULL(v);
        for (uint32_t i = 0; i < 1000; i++) {
                CU_ASSERT_EQUAL_FATAL(GROW_ARRAY(v, cap, i + 1), 0);
                CU_ASSERT_FATAL(cap >= i + 1 && (cap & (cap - 1)) == 0);
                v[i] = i;
        }
        CU_ASSERT_EQUAL(cap, 1024);
        for (uint32_t i = 0; i < 1000; i++)
                CU_ASSERT_EQUAL(v[i], i);                       /* kept across moves */
        /* An impossible size fails and leaves the array as it was. */
        uint32_t *was = v;
        CU_ASSERT_EQUAL(GROW_ARRAY(v, cap, SIZE_MAX / 2), -ENOMEM);
        CU_ASSERT_PTR_EQUAL(v, was);
        CU_ASSERT_EQUAL(cap, 1024);
        free(v);
}

/* An id -> value table grown with oa_reserve() (oamap.h), its probe here. */
struct t_oa {
        uint64_t id, v;
};

static bool t_oa_used(const void *e)
{
        return ((const struct t_oa *)e)->id != 0;
}

static uint64_t t_oa_hash(const void *e)
{
        return oa_hash_id(((const struct t_oa *)e)->id);
}

static struct t_oa *t_oa_slot(struct t_oa *slots, size_t mask, uint64_t id)
{
        size_t i = oa_hash_id(id) & mask;

        while (slots[i].id && slots[i].id != id)
                i = (i + 1) & mask;
        return &slots[i];
}

static void test_oamap(void)
{
        static const struct oa_kind kind = {
                .entry_size = sizeof(struct t_oa), .min_slots = 8,
                .used = t_oa_used, .hash = t_oa_hash,
        };
        void *slots = NULL;
        size_t mask = 0, grows = 0;

        CU_ASSERT_EQUAL(oa_reserve(&kind, &slots, &mask, 0), 0);        /* none: no array */
        CU_ASSERT_PTR_NULL(slots);
        for (uint64_t id = 1; id <= 1000; id++) {
                int r = oa_reserve(&kind, &slots, &mask, (size_t)id);

                CU_ASSERT_FATAL(r == 0 || r == 1);
                grows += (size_t)r;
                CU_ASSERT_FATAL(2 * id <= mask + 1);            /* at most half full */
                *t_oa_slot(slots, mask, id) = (struct t_oa){ id, id * 3 };
        }
        CU_ASSERT_EQUAL(mask + 1, 2048);
        CU_ASSERT_EQUAL(grows, 9);                                      /* 8, 16, ... 2048 */
        for (uint64_t id = 1; id <= 1000; id++)
                CU_ASSERT_EQUAL(t_oa_slot(slots, mask, id)->v, id * 3); /* moved, findable */
        CU_ASSERT_EQUAL(oa_reserve(&kind, &slots, &mask, 1000), 0);     /* room already */
        /* An impossible size fails and leaves the table as it was. */
        void *was = slots;
        CU_ASSERT_EQUAL(oa_reserve(&kind, &slots, &mask, SIZE_MAX / 2), -ENOMEM);
        CU_ASSERT_PTR_EQUAL(slots, was);
        CU_ASSERT_EQUAL(mask + 1, 2048);
        free(slots);
}

/* A table grown in steps (oamap.c note 1), its find, insert and backward-shift deletion
 * over both arrays as the controller's gmap does them. */
struct t_st {
        struct t_oa *slots;
        size_t mask, n;
        struct oa_old old;
};

static struct t_oa *t_st_probe(struct t_oa *slots, size_t mask, uint64_t id)
{
        for (size_t i = oa_hash_id(id) & mask; slots[i].id; i = (i + 1) & mask)
                if (slots[i].id == id)
                        return &slots[i];
        return NULL;
}

static struct t_oa *t_st_find(const struct t_st *t, uint64_t id)
{
        struct t_oa *e = t->slots ? t_st_probe(t->slots, t->mask, id) : NULL;

        if (!e && t->old.slots)
                e = t_st_probe(t->old.slots, t->old.mask, id);
        return e;
}

static void test_oamap_stepped(void)
{
        static const struct oa_kind kind = {
                .entry_size = sizeof(struct t_oa), .min_slots = 8,
                .used = t_oa_used, .hash = t_oa_hash,
        };
        enum { KEYS = 60000 };
        static uint64_t ref[KEYS + 1];          /* id -> value, 0: absent */
        struct t_st t = { 0 };
        uint64_t rng = 88172645463325252ull;
        size_t stepped = 0, n_ref = 0, max_old = 0;

        for (size_t op = 0; op < 600000; op++) {
                uint64_t id, x;

                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                /* Mostly inserts at first, then as many deletions: the table grows
                 * through several steps and shrinks while a grow is under way. */
                id = 1 + (rng >> 20) % KEYS;
                x = (rng >> 8) & 0xff;
                if (x < (op < 300000 ? 200u : 90u)) {
                        void *slots = t.slots;
                        struct t_oa *e;
                        int r = oa_reserve_stepped(&kind, &slots, &t.mask, &t.old, t.n, 1);

                        CU_ASSERT_FATAL(r == 0 || r == 1);
                        t.slots = slots;
                        stepped += t.old.slots != NULL;
                        /* The cluster at the cursor is whole: each of its entries is
                         * found from its home (oamap.c note 1). */
                        for (size_t i = t.old.cursor; t.old.slots &&
                             ((struct t_oa *)t.old.slots)[i].id; i = (i + 1) & t.old.mask) {
                                struct t_oa *o = &((struct t_oa *)t.old.slots)[i];

                                CU_ASSERT_FATAL(t_st_probe(t.old.slots, t.old.mask, o->id) == o);
                        }
                        CU_ASSERT_FATAL(2 * (t.n + 1) <= t.mask + 1);
                        e = t_st_find(&t, id);
                        if (!e) {
                                size_t i = oa_hash_id(id) & t.mask;

                                while (t.slots[i].id)
                                        i = (i + 1) & t.mask;
                                e = &t.slots[i];
                                e->id = id;
                                t.n++;
                                n_ref++;
                        }
                        e->v = op;
                        ref[id] = op;
                } else if (x < 220u) {
                        struct t_oa *e;

                        if (t.slots && (e = t_st_probe(t.slots, t.mask, id)))
                                oa_delete_at(&kind, t.slots, t.mask, (size_t)(e - t.slots));
                        else if (t.old.slots && (e = t_st_probe(t.old.slots, t.old.mask, id))) {
                                oa_delete_at(&kind, t.old.slots, t.old.mask,
                                             (size_t)(e - (struct t_oa *)t.old.slots));
                                t.old.n--;
                        } else {
                                CU_ASSERT_FATAL(ref[id] == 0 && id != 1);
                                continue;
                        }
                        t.n--;
                        n_ref--;
                        ref[id] = 0;
                } else {
                        const struct t_oa *e = t_st_find(&t, id);

                        CU_ASSERT_FATAL(ref[id] ? e && e->v == ref[id] : !e);
                }
                if (t.old.n > max_old)
                        max_old = t.old.n;
        }
        /* Every key the reference holds is found, and nothing else is there. */
        size_t found = 0;

        for (uint64_t id = 1; id <= KEYS; id++) {
                const struct t_oa *e = t_st_find(&t, id);

                CU_ASSERT_FATAL(ref[id] ? e && e->v == ref[id] : !e);
                found += e != NULL;
        }
        CU_ASSERT_EQUAL(found, n_ref);
        CU_ASSERT_EQUAL(t.n, n_ref);
        CU_ASSERT(stepped > 0);                 /* grows did go in steps */
        CU_ASSERT(max_old >= OA_STEP_MIN_SLOTS / 4);
        /* Finishing a grow leaves every entry in the new array. */
        oa_step(&kind, t.slots, t.mask, &t.old, SIZE_MAX);
        CU_ASSERT_PTR_NULL(t.old.slots);
        for (uint64_t id = 1; id <= KEYS; id++)
                if (ref[id])
                        CU_ASSERT_FATAL(t_st_probe(t.slots, t.mask, id) != NULL);
        free(t.slots);
}

/* pb_varints() against hand-encoded messages (protobuf's wire format). */
static void test_pb_varints(void)
{
        static const uint8_t msg[] = {
                0x08, 0x96, 0x01,                       /* 1: 150 */
                0x12, 0x02, 'a', 'b',                   /* 2: "ab" */
                0x19, 1, 2, 3, 4, 5, 6, 7, 8,           /* 3: fixed64 */
                0x25, 1, 2, 3, 4,                       /* 4: fixed32 */
                0x70, 0x2a,                             /* 14: 42 */
                0x08, 0x03,                             /* 1 again: 3 wins */
                0xf8, 0x01, 0x07,                       /* 31: 7 */
                0x80, 0x02, 0x05,                       /* 32: 5, beyond what can be wanted */
        };
        static const uint8_t max[] = { 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
        static const uint8_t too_long[] = { 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
        static const uint8_t truncated[] = { 0x08, 0x96 };
        static const uint8_t past_end[] = { 0x12, 0x05, 'a' };
        static const uint8_t group[] = { 0x0b, 0x0c };
        static const uint8_t zero[] = { 0x00, 0x01 };
        static const uint8_t short64[] = { 0x19, 1, 2, 3 };
        uint64_t v[32] = { 0 };

        CU_ASSERT_EQUAL(pb_varints(msg, sizeof(msg), 1u << 1 | 1u << 14 | 1u << 31 | 1u << 5, v), 0);
        CU_ASSERT_EQUAL(v[1], 3);
        CU_ASSERT_EQUAL(v[14], 42);
        CU_ASSERT_EQUAL(v[31], 7);
        CU_ASSERT_EQUAL(v[5], 0);               /* absent: untouched */
        /* A wanted field that is not a varint (a string, a fixed64). */
        CU_ASSERT_EQUAL(pb_varints(msg, sizeof(msg), 1u << 2, v), -EBADMSG);
        CU_ASSERT_EQUAL(pb_varints(msg, sizeof(msg), 1u << 3, v), -EBADMSG);
        CU_ASSERT_EQUAL(pb_varints(max, sizeof(max), 1u << 1, v), 0);
        CU_ASSERT_EQUAL(v[1], UINT64_MAX);
        CU_ASSERT_EQUAL(pb_varints(too_long, sizeof(too_long), 1u << 1, v), -EBADMSG);
        CU_ASSERT_EQUAL(pb_varints(truncated, sizeof(truncated), 1u << 1, v), -EBADMSG);
        CU_ASSERT_EQUAL(pb_varints(truncated, 1, 0, v), -EBADMSG);      /* a tag alone */
        CU_ASSERT_EQUAL(pb_varints(past_end, sizeof(past_end), 0, v), -EBADMSG);
        CU_ASSERT_EQUAL(pb_varints(group, sizeof(group), 0, v), -EBADMSG);
        CU_ASSERT_EQUAL(pb_varints(zero, sizeof(zero), 0, v), -EBADMSG);
        CU_ASSERT_EQUAL(pb_varints(short64, sizeof(short64), 0, v), -EBADMSG);
        CU_ASSERT_EQUAL(pb_varints(NULL, 0, 1u << 1, v), 0);            /* empty: all defaults */
}

static void test_flags(void)
{
        char err[256], *args[8];
        int nargs = -1;
        char *argv1[] = { "p", "--name", "x", "--count=12", "--flag", "pos", NULL };
        char *argv2[] = { "p", "--count", "1001", NULL };
        char *argv3[] = { "p", "--nope", NULL };
        char *argv4[] = { "p", "--name", NULL };
        char *argv5[] = { "p", "--help", NULL };
        char *argv6[] = { "p", "--flag=maybe", NULL };

        reset();
        CU_ASSERT_EQUAL(parse(6, argv1, err, sizeof(err), &nargs, args), 0);
        CU_ASSERT_STRING_EQUAL(s_opt, "x");
        CU_ASSERT_EQUAL(u_opt, 12);
        CU_ASSERT(b_opt);
        CU_ASSERT_EQUAL(nargs, 1);
        CU_ASSERT_STRING_EQUAL(args[0], "pos");
        reset();
        CU_ASSERT_EQUAL(parse(3, argv2, err, sizeof(err), &nargs, args), -EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "out of range"));
        CU_ASSERT_EQUAL(parse(2, argv3, err, sizeof(err), &nargs, args), -EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "--nope"));
        CU_ASSERT_EQUAL(parse(2, argv4, err, sizeof(err), &nargs, args), -EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "needs a value"));
        CU_ASSERT_EQUAL(parse(2, argv5, err, sizeof(err), &nargs, args), 1);
        CU_ASSERT_EQUAL(parse(2, argv6, err, sizeof(err), &nargs, args), -EINVAL);
        reset();
}

static char *write_tmp(const char *content)
{
        char *path = NULL;
        FILE *f;
        int fd;

        if (asprintf(&path, "/tmp/coord-test-conf-XXXXXX") < 0)
                return NULL;
        fd = mkstemp(path);
        if (fd < 0 || !(f = fdopen(fd, "w")))
                return NULL;
        fputs(content, f);
        fclose(f);
        return path;
}

static void test_config_file(void)
{
        char err[256], *args[8];
        int nargs;
        char *good = write_tmp("; comment\n[coord]\nname = fromfile\ncount = 5\n[other]\nname = ignored\n[test]\nflag = yes\n");
        char *bad_key = write_tmp("[test]\nbogus = 1\n");
        char *bad_val = write_tmp("[coord]\ncount = lots\n");
        char *bad_syntax = write_tmp("[coord\nname\n");
        char *argv[] = { "p", "--config", good, "--count", "9", NULL };

        CU_ASSERT_FATAL(good && bad_key && bad_val && bad_syntax);
        reset();
        /* The file applies first; the flag wins. */
        CU_ASSERT_EQUAL(parse(5, argv, err, sizeof(err), &nargs, args), 0);
        CU_ASSERT_STRING_EQUAL(s_opt, "fromfile");
        CU_ASSERT_EQUAL(u_opt, 9);
        CU_ASSERT(b_opt);
        argv[2] = bad_key;
        CU_ASSERT_EQUAL(parse(3, argv, err, sizeof(err), &nargs, args), -EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "bogus"));
        argv[2] = bad_val;
        CU_ASSERT_EQUAL(parse(3, argv, err, sizeof(err), &nargs, args), -EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "count"));
        argv[2] = bad_syntax;
        CU_ASSERT_EQUAL(parse(3, argv, err, sizeof(err), &nargs, args), -EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "line"));
        argv[2] = (char *)"/nonexistent/coord.ini";
        CU_ASSERT_EQUAL(parse(3, argv, err, sizeof(err), &nargs, args), -EINVAL);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot open"));
        unlink(good);
        unlink(bad_key);
        unlink(bad_val);
        unlink(bad_syntax);
        free(good);
        free(bad_key);
        free(bad_val);
        free(bad_syntax);
        reset();
}

/* refresh_next()/refresh_prev() against a walk over every time of a small range. */
static void test_refresh(void)
{
        static const uint64_t at[] = { 7, 40, 41 };
        static const struct { size_t n_at; uint64_t every, aligned; } cases[] = {
                { 3, 0, 0 }, { 0, 5, 0 }, { 0, 5, 13 }, { 0, 7, 100 }, { 3, 6, 22 }, { 1, 1, 3 },
                { 0, 0, 0 },
        };

        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                struct refresh_schedule rs = { .at = at, .n_at = cases[c].n_at,
                                               .every_ms = cases[c].every, .aligned_to = cases[c].aligned };
                bool is[80] = { false };

                for (uint64_t t = 0; t < 80; t++) {
                        for (size_t i = 0; i < rs.n_at; i++)
                                is[t] |= at[i] == t;
                        if (rs.every_ms)
                                is[t] |= t % rs.every_ms == rs.aligned_to % rs.every_ms;
                }
                for (uint64_t t = 0; t < 60; t++) {
                        uint64_t next = REFRESH_NONE, prev = REFRESH_NONE;

                        for (uint64_t u = t; u < 80 && next == REFRESH_NONE; u++)
                                if (is[u])
                                        next = u;
                        for (uint64_t u = t; u-- > 0 && prev == REFRESH_NONE;)
                                if (is[u])
                                        prev = u;
                        if (next == REFRESH_NONE && rs.every_ms)
                                continue;       /* beyond the walk */
                        CU_ASSERT_EQUAL(refresh_next(&rs, t), next);
                        CU_ASSERT_EQUAL(refresh_prev(&rs, t), prev);
                }
        }
        /* no overflow at the top of the range: past the last representable one, none */
        {
                struct refresh_schedule rs = { .every_ms = 1000, .aligned_to = 5 };
                CU_ASSERT_EQUAL(refresh_next(&rs, UINT64_MAX - 10), REFRESH_NONE);
                CU_ASSERT(refresh_next(&rs, UINT64_MAX - 2000) < UINT64_MAX - 999);
                CU_ASSERT_EQUAL(refresh_prev(&rs, UINT64_MAX), (UINT64_MAX - 5) / 1000 * 1000 + 5);
        }
}

int main(void)
{
        static const struct t_case util_cases[] = {
                { "parse_u64", test_parse_u64 },
                { "u64_file", test_u64_file },
                { "byte order", test_bytes },
                { "kv_u64: key=N lists", test_kv },
                { "u64_nth against qsort", test_nth },
                { "GROW_ARRAY", test_grow },
                { "oa_reserve: open-addressing grow", test_oamap },
                { "oa_reserve_stepped: a grow in steps", test_oamap_stepped },
                { "pb_varints", test_pb_varints },
                { "refresh schedules", test_refresh },
                { NULL, NULL },
        };
        static const struct t_case conf_cases[] = {
                { "flags", test_flags },
                { "config file", test_config_file },
                { NULL, NULL },
        };
        return t_run((const struct t_suite[]){
                { "util", util_cases }, { "conf", conf_cases }, { NULL, NULL } });
}
