/* fuzz-sql -- the adapter's SQL front end (adapter/adapter-sql.h) on untrusted text,
 * without a controller: what a client's query string goes through before anything is
 * sent anywhere.
 *
 * Input: the query string up to the first NUL.  Without a NUL it is a simple query:
 * sql_parse(), then sql_analyze() of every statement.  With one, it is also an extended
 * protocol Parse + Bind: after the NUL, one byte choosing the parameters' types, then
 * the parameter values separated by NULs (a value "\xff" alone is SQL NULL), analyzed
 * with sql_analyze_one() and a session.
 *
 * The catalog is fixed (the one of tests/sql/test-sql.c): tables t(a int4 not null,
 * b text, c bool, d int8), u(x int8), k(k int4) with index 18; views v, w and nd, whose
 * plans the analyzer itself makes at set-up; a materialized view mv, an index i.
 *
 * What must hold: no crash, leak or UB; an error is a five-character SQLSTATE with a
 * message and a position within the string; every plan the analyzer hands out packs
 * and unpacks again (the adapter sends it to the controller and stores it).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "adapter-pgcodec.h"
#include "adapter-sql.h"
#include "fuzz.h"
#include "row/row.h"
#include "util.h"

#define MAX_QUERY       (256u << 10)
#define MAX_PARAMS      16

struct object {
        const char *name;
        uint64_t id;
        enum sql_object_kind kind;
        struct sql_column columns[4];
        size_t n_columns;
        uint64_t index_id;
        const char *definition;         /* views: planned at set-up */
        Coord__Plan__Relation *plan;
        uint64_t *inputs;
        size_t n_inputs;
        bool deterministic;
};

static struct object objects[] = {
        { "t", 10, SQL_OBJECT_TABLE,
          { { "a", ROW_TYPE_INT4, false }, { "b", ROW_TYPE_TEXT, true },
            { "c", ROW_TYPE_BOOL, true }, { "d", ROW_TYPE_INT8, true } }, 4 },
        { "u", 11, SQL_OBJECT_TABLE, { { "x", ROW_TYPE_INT8, true } }, 1 },
        { "v", 12, SQL_OBJECT_VIEW, { { "a", ROW_TYPE_INT4, true } }, 1, 0,
          "CREATE VIEW v_def AS SELECT a FROM t WHERE a > 1" },
        { "mv", 13, SQL_OBJECT_MATERIALIZED_VIEW, { { "a", ROW_TYPE_INT4, true } }, 1 },
        { "i", 14, SQL_OBJECT_INDEX, { { "a", ROW_TYPE_INT4, true } }, 1 },
        { "w", 15, SQL_OBJECT_VIEW, { { "a", ROW_TYPE_INT4, true }, { "x", ROW_TYPE_INT8, true } },
          2, 0, "CREATE VIEW w_def AS SELECT v.a, u.x FROM v, u WHERE v.a = u.x" },
        { "nd", 16, SQL_OBJECT_VIEW, { { "a", ROW_TYPE_INT4, false }, { "ts", ROW_TYPE_INT8, true } },
          2, 0, "CREATE VIEW nd_def AS SELECT a, mz_now() AS ts FROM t" },
        { "k", 17, SQL_OBJECT_TABLE, { { "k", ROW_TYPE_INT4, true } }, 1, 18 },
};

static int lookup(void *userdata, const char *name, struct sql_relation *ret)
{
        for (size_t i = 0; i < ELEMENTSOF(objects); i++)
                if (strcmp(objects[i].name, name) == 0) {
                        *ret = (struct sql_relation){
                                .id = objects[i].id, .kind = objects[i].kind,
                                .columns = objects[i].columns, .n_columns = objects[i].n_columns,
                                .plan = objects[i].plan, .inputs = objects[i].inputs,
                                .n_inputs = objects[i].n_inputs,
                                .deterministic = objects[i].deterministic,
                                .index_id = objects[i].index_id,
                        };
                        return 0;
                }
        return -ENOENT;
}

static const struct sql_catalog_ops catalog = { lookup };

static void cleanup(void)
{
        for (size_t i = 0; i < ELEMENTSOF(objects); i++) {
                if (objects[i].plan)
                        coord__plan__relation__free_unpacked(objects[i].plan, NULL);
                free(objects[i].inputs);
        }
}

/* The views' plans, made by the analyzer as CREATE VIEW makes them (in order: w uses v). */
static void setup(void)
{
        static bool done;

        if (done)
                return;
        done = true;
        for (size_t i = 0; i < ELEMENTSOF(objects); i++) {
                struct object *o = &objects[i];
                struct sql_stmt *s = NULL;
                struct row_error err;

                if (!o->definition)
                        continue;
                FUZZ_CHECK(sql_analyze_one(o->definition, &catalog, NULL, NULL, &s, &err) == 0);
                FUZZ_CHECK(s->kind == SQL_STMT_CREATE_VIEW);
                o->plan = TAKE_PTR(s->create_view.plan);
                o->inputs = TAKE_PTR(s->inputs);
                o->n_inputs = s->n_inputs;
                s->n_inputs = 0;
                o->deterministic = s->create_view.deterministic;
                sql_stmt_free(s);
        }
        atexit(cleanup);
}

static void check_error(const struct row_error *err, size_t query_len)
{
        FUZZ_CHECK(strlen(err->sqlstate) == 5);
        FUZZ_CHECK(err->message[0] != '\0');
        FUZZ_CHECK(err->position <= query_len + 1);
}

/* A plan packs, and the packed form unpacks to a message of the same size. */
static void check_plan(const ProtobufCMessage *m)
{
        ProtobufCMessage *back;
        uint8_t *buf;
        size_t n;

        if (!m)
                return;
        n = protobuf_c_message_get_packed_size(m);
        buf = malloc(n + 1);
        FUZZ_CHECK(buf);
        FUZZ_CHECK(protobuf_c_message_pack(m, buf) == n);
        back = protobuf_c_message_unpack(m->descriptor, NULL, n, buf);
        FUZZ_CHECK(back);
        FUZZ_CHECK(protobuf_c_message_get_packed_size(back) == n);
        protobuf_c_message_free_unpacked(back, NULL);
        free(buf);
}

static void check_stmt(const struct sql_stmt *s)
{
        FUZZ_CHECK(s->kind >= 0 && s->kind < _SQL_STMT_KIND_MAX);
        FUZZ_CHECK(sql_stmt_tag(s) && sql_stmt_tag(s)[0]);
        for (size_t i = 1; i < s->n_inputs; i++)
                FUZZ_CHECK(s->inputs[i - 1] < s->inputs[i]);
        switch (s->kind) {
        case SQL_STMT_SELECT:
                check_plan(&s->select.peek->base);
                break;
        case SQL_STMT_CREATE_VIEW:
        case SQL_STMT_CREATE_MATERIALIZED_VIEW:
                if (s->create_view.plan)
                        check_plan(&s->create_view.plan->base);
                break;
        case SQL_STMT_CREATE_INDEX:
                if (s->create_index.plan)
                        check_plan(&s->create_index.plan->base);
                break;
        case SQL_STMT_CREATE_SINK:
                if (s->create_sink.plan)
                        check_plan(&s->create_sink.plan->base);
                break;
        case SQL_STMT_DELETE:
                if (s->delete_.plan)
                        check_plan(&s->delete_.plan->base);
                break;
        case SQL_STMT_UPDATE:
                if (s->update.plan)
                        check_plan(&s->update.plan->base);
                break;
        default:
                break;
        }
}

static void simple_query(const char *q, size_t len)
{
        struct sql_batch *b = NULL;
        struct row_error err;

        memset(&err, 0, sizeof(err));
        if (sql_parse(q, &b, &err) < 0) {
                check_error(&err, len);
                FUZZ_CHECK(!b);
                return;
        }
        for (size_t i = 0; i < sql_batch_size(b); i++) {
                struct sql_stmt *s = NULL;

                memset(&err, 0, sizeof(err));
                if (sql_analyze(b, i, &catalog, NULL, NULL, &s, &err) < 0) {
                        check_error(&err, len);
                        FUZZ_CHECK(!s);
                        continue;
                }
                check_stmt(s);
                sql_stmt_free(s);
        }
        sql_batch_free(b);
}

static void extended_query(const char *q, size_t len, const uint8_t *rest, size_t n)
{
        static const uint32_t type_sets[4][4] = {
                { 0, 0, 0, 0 },
                { PGCODEC_OID_INT4, PGCODEC_OID_TEXT, PGCODEC_OID_BOOL, PGCODEC_OID_INT8 },
                { PGCODEC_OID_FLOAT8, PGCODEC_OID_INT2, PGCODEC_OID_UNKNOWN, PGCODEC_OID_VARCHAR },
                { PGCODEC_OID_NUMERIC, PGCODEC_OID_TIMESTAMP, PGCODEC_OID_BYTEA, PGCODEC_OID_JSON },
        };
        const struct sql_session session = { .user = "fuzz", .database = "fuzz", .backend_pid = 7 };
        const char *values[MAX_PARAMS];
        uint32_t types[MAX_PARAMS];
        struct sql_params params = { .values = values, .types = types, .session = &session };
        struct sql_stmt *s = NULL;
        struct row_error err;
        char *copy;
        uint8_t sel;

        if (n == 0)
                return;
        sel = rest[0];
        /* The values, NUL-terminated in a copy of their own. */
        copy = malloc(n);
        FUZZ_CHECK(copy);
        memcpy(copy, rest + 1, n - 1);
        copy[n - 1] = '\0';
        for (char *p = copy; params.n < MAX_PARAMS && p < copy + n;) {
                size_t l = strlen(p);

                values[params.n] = strcmp(p, "\xff") == 0 ? NULL : p;
                types[params.n] = type_sets[sel % 4][params.n % 4];
                params.n++;
                p += l + 1;
        }
        if (sel & 4)
                params.types = NULL;
        memset(&err, 0, sizeof(err));
        if (sql_analyze_one(q, &catalog, NULL, &params, &s, &err) < 0) {
                check_error(&err, len);
                FUZZ_CHECK(!s);
        } else {
                check_stmt(s);
                sql_stmt_free(s);
        }
        free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const uint8_t *nul;
        size_t len;
        char *q;

        if (size > MAX_QUERY)
                return 0;
        setup();
        nul = memchr(data, '\0', size);
        len = nul ? (size_t)(nul - data) : size;
        q = malloc(len + 1);
        FUZZ_CHECK(q);
        memcpy(q, data, len);
        q[len] = '\0';
        simple_query(q, len);
        if (nul)
                extended_query(q, len, nul + 1, size - len - 1);
        free(q);
        return 0;
}
