/* fuzz-seeds -- writes the seed corpora of tests/fuzz from real messages, made by the
 * project's own encoders: ipc frames of real Envelopes (plans from the SQL analyzer),
 * pgwire sessions built with adapter-pgcodec's framing, sync log records whose payload
 * is a real RocksDB WriteBatch of catalog records, ring programs and SQL strings.
 *
 *     build/fuzz-seeds tests/fuzz/corpus     (writes <dir>/<harness>/seed-*)
 *
 * Built, not run by the tests; rerun it when a format changes, and keep the corpora
 * small (each seed a few KiB at most).
 */
#include <errno.h>
#include <rocksdb/c.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "adapter-pgcodec.h"
#include "adapter-sql.h"
#include "catalog/catalog.h"
#include "ipc/ipc.h"
#include "row/row.h"
#include "util.h"

static const char *out_dir;

static void put_file(const char *harness, const char *name, const void *data, size_t len)
{
        char path[4096];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", out_dir, harness);
        (void)mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/%s/seed-%s", out_dir, harness, name);
        f = fopen(path, "wbe");
        if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
                fprintf(stderr, "fuzz-seeds: %s: %s\n", path, strerror(errno));
                exit(1);
        }
}

/* --- Plans from the analyzer ---------------------------------------------------------- */

static const struct sql_column t_cols[] = {
        { "a", ROW_TYPE_INT4, false }, { "b", ROW_TYPE_TEXT, true },
        { "c", ROW_TYPE_BOOL, true }, { "d", ROW_TYPE_INT8, true },
};

static int lookup(void *userdata, const char *name, struct sql_relation *ret)
{
        if (strcmp(name, "t") != 0)
                return -ENOENT;
        *ret = (struct sql_relation){ .id = 10, .kind = SQL_OBJECT_TABLE, .columns = t_cols,
                                      .n_columns = 4 };
        return 0;
}

static const struct sql_catalog_ops catalog = { lookup };

static struct sql_stmt *analyze(const char *sql)
{
        struct sql_stmt *s = NULL;
        struct row_error err;

        if (sql_analyze_one(sql, &catalog, NULL, NULL, &s, &err) < 0) {
                fprintf(stderr, "fuzz-seeds: %s: %s\n", sql, err.message);
                exit(1);
        }
        return s;
}

/* --- frame ---------------------------------------------------------------------------- */

struct stream {
        uint8_t *data;
        size_t len;
};

static void add_frame(struct stream *st, Coord__MsgType type, uint64_t request_id,
                      const ProtobufCMessage *payload)
{
        Coord__Envelope env = COORD__ENVELOPE__INIT;
        uint8_t *buf = NULL, *body = NULL;
        size_t len = 0;

        env.type = type;
        env.sender = COORD__ROLE__ROLE_ADAPTER;
        env.incarnation = 3;
        env.request_id = request_id;
        if (payload) {
                env.payload.len = protobuf_c_message_get_packed_size(payload);
                body = malloc(env.payload.len + 1);
                protobuf_c_message_pack(payload, body);
                env.payload.data = body;
        }
        if (ipc_frame_encode(&env, 0, &buf, &len) < 0)
                exit(1);
        st->data = realloc(st->data, st->len + len);
        memcpy(st->data + st->len, buf, len);
        st->len += len;
        free(buf);
        free(body);
}

static void frame_seeds(void)
{
        struct stream st = { 0 };
        Coord__Hello hello = COORD__HELLO__INIT;
        Coord__Error error = COORD__ERROR__INIT;
        Coord__Append append = COORD__APPEND__INIT;
        Coord__TableWrite write = COORD__TABLE_WRITE__INIT, *writes[1] = { &write };
        Coord__PeekRequest peek = COORD__PEEK_REQUEST__INIT;
        Coord__PeekResult result = COORD__PEEK_RESULT__INIT;
        Coord__CreateDataflows cd = COORD__CREATE_DATAFLOWS__INIT;
        Coord__DataflowSpec spec = COORD__DATAFLOW_SPEC__INIT, *specs[1] = { &spec };
        Coord__PublishProtection pp = COORD__PUBLISH_PROTECTION__INIT;
        Coord__CatalogBoundRecord bound = COORD__CATALOG_BOUND_RECORD__INIT, *bounds[1] = { &bound };
        Coord__Requirement req = COORD__REQUIREMENT__INIT, *reqs[1] = { &req };
        Coord__EnsureCollections ec = COORD__ENSURE_COLLECTIONS__INIT;
        Coord__CollectionSpec cs = COORD__COLLECTION_SPEC__INIT, *css[1] = { &cs };
        Coord__Ok ok = COORD__OK__INIT;
        uint64_t counts[2] = { 1, 2 };
        int64_t diffs[2] = { 1, -1 };
        ProtobufCBinaryData rows[2] = { { 3, (uint8_t *)"\x01\x02\x03" }, { 2, (uint8_t *)"\x04\x05" } };
        struct sql_stmt *sel = analyze("SELECT a, b FROM t WHERE a > 1 ORDER BY b LIMIT 3");
        struct sql_stmt *mv = analyze("CREATE MATERIALIZED VIEW m AS SELECT b, count(*) FROM t GROUP BY b");

        hello.role = COORD__ROLE__ROLE_ADAPTER;
        hello.incarnation = 3;
        hello.pid = 1234;
        hello.instance = "c1";
        add_frame(&st, COORD__MSG_TYPE__MSG_HELLO, 0, &hello.base);
        put_file("frame", "hello", st.data, st.len);

        add_frame(&st, COORD__MSG_TYPE__MSG_STATUS_REQUEST, 1, NULL);
        error.sqlstate = "42P01";
        error.message = "relation \"x\" does not exist";
        add_frame(&st, COORD__MSG_TYPE__MSG_ERROR, 1, &error.base);
        put_file("frame", "hello-status-error", st.data, st.len);
        st.len = 0;

        write.gid = 1000;
        write.n_rows = 2;
        write.rows = rows;
        write.n_diffs = 2;
        write.diffs = diffs;
        append.ts = 42;
        append.n_writes = 1;
        append.writes = writes;
        append.writer_mark.len = 4;
        append.writer_mark.data = (uint8_t *)"mark";
        add_frame(&st, COORD__MSG_TYPE__MSG_APPEND, 7, &append.base);
        ok.n_counts = 2;
        ok.counts = counts;
        ok.upper = 43;
        add_frame(&st, COORD__MSG_TYPE__MSG_OK, 7, &ok.base);
        put_file("frame", "append-ok", st.data, st.len);
        st.len = 0;

        peek.peek = sel->select.peek;
        peek.timeout_ms = 1000;
        peek.chunk_bytes = 4096;
        add_frame(&st, COORD__MSG_TYPE__MSG_PEEK, 8, &peek.base);
        result.n_rows = 2;
        result.rows = rows;
        result.n_counts = 2;
        result.counts = counts;
        result.more = true;
        add_frame(&st, COORD__MSG_TYPE__MSG_PEEK_RESULT, 8, &result.base);
        put_file("frame", "peek", st.data, st.len);
        st.len = 0;

        spec.gid = 1001;
        spec.kind = COORD__DATAFLOW_KIND__DATAFLOW_MATERIALIZED_VIEW;
        spec.plan = mv->create_view.plan;
        cd.n_dataflows = 1;
        cd.dataflows = specs;
        add_frame(&st, COORD__MSG_TYPE__MSG_CREATE_DATAFLOWS, 9, &cd.base);
        cs.gid = 1001;
        cs.kind = COORD__COLLECTION_KIND__COLLECTION_MATERIALIZED_VIEW;
        cs.since = 40;
        ec.n_collections = 1;
        ec.collections = css;
        add_frame(&st, COORD__MSG_TYPE__MSG_ENSURE_COLLECTIONS, 10, &ec.base);
        put_file("frame", "dataflows", st.data, st.len);
        st.len = 0;

        bound.gid = 1000;
        bound.bound = 30;
        req.consumer = 1001;
        req.input = 1000;
        req.frontier = 31;
        pp.based_on_seq = 12;
        pp.n_bounds = 1;
        pp.bounds = bounds;
        pp.n_requirements = 1;
        pp.requirements = reqs;
        add_frame(&st, COORD__MSG_TYPE__MSG_PUBLISH_PROTECTION, 11, &pp.base);
        /* A truncated second frame: the end of a stream inside a frame. */
        add_frame(&st, COORD__MSG_TYPE__MSG_PUBLISH_PROTECTION, 12, &pp.base);
        put_file("frame", "publish-truncated", st.data, st.len - 5);
        free(st.data);
        sql_stmt_free(sel);
        sql_stmt_free(mv);
}

/* --- pgwire ----------------------------------------------------------------------------- */

static void pg_startup(struct pgcodec_buf *b, const char *user)
{
        size_t at = pgcodec_msg_begin(b, 0);

        pgcodec_put_i32(b, (int32_t)PGCODEC_PROTOCOL(3, 0));
        pgcodec_put_str(b, "user");
        pgcodec_put_str(b, user);
        pgcodec_put_str(b, "database");
        pgcodec_put_str(b, "coord");
        pgcodec_put_u8(b, 0);
        pgcodec_msg_end(b, at);
}

static void pg_str_msg(struct pgcodec_buf *b, uint8_t type, const char *s)
{
        size_t at = pgcodec_msg_begin(b, type);

        if (s)
                pgcodec_put_str(b, s);
        pgcodec_msg_end(b, at);
}

static void pg_parse(struct pgcodec_buf *b, const char *name, const char *sql, int ntypes,
                     const uint32_t *types)
{
        size_t at = pgcodec_msg_begin(b, 'P');

        pgcodec_put_str(b, name);
        pgcodec_put_str(b, sql);
        pgcodec_put_i16(b, (int16_t)ntypes);
        for (int i = 0; i < ntypes; i++)
                pgcodec_put_i32(b, (int32_t)types[i]);
        pgcodec_msg_end(b, at);
}

/* Bind with one format code for the parameters and one for the results. */
static void pg_bind(struct pgcodec_buf *b, const char *portal, const char *stmt, int16_t fmt,
                    int n, const char *const *values, const size_t *lens, int16_t result_fmt)
{
        size_t at = pgcodec_msg_begin(b, 'B');

        pgcodec_put_str(b, portal);
        pgcodec_put_str(b, stmt);
        pgcodec_put_i16(b, 1);
        pgcodec_put_i16(b, fmt);
        pgcodec_put_i16(b, (int16_t)n);
        for (int i = 0; i < n; i++) {
                if (!values[i]) {
                        pgcodec_put_i32(b, -1);
                        continue;
                }
                pgcodec_put_i32(b, (int32_t)lens[i]);
                pgcodec_put_bytes(b, values[i], lens[i]);
        }
        pgcodec_put_i16(b, 1);
        pgcodec_put_i16(b, result_fmt);
        pgcodec_msg_end(b, at);
}

static void pg_target(struct pgcodec_buf *b, uint8_t type, char kind, const char *name)
{
        size_t at = pgcodec_msg_begin(b, type);

        pgcodec_put_u8(b, (uint8_t)kind);
        pgcodec_put_str(b, name);
        pgcodec_msg_end(b, at);
}

static void pg_execute(struct pgcodec_buf *b, const char *portal, int32_t max_rows)
{
        size_t at = pgcodec_msg_begin(b, 'E');

        pgcodec_put_str(b, portal);
        pgcodec_put_i32(b, max_rows);
        pgcodec_msg_end(b, at);
}

/* A seed: byte 0 says whether the harness sends the startup packet itself (1). */
static void pg_put(const char *name, uint8_t mode, const struct pgcodec_buf *b)
{
        uint8_t *data = malloc(b->len + 1);

        data[0] = mode;
        memcpy(data + 1, b->data, b->len);
        put_file("pgwire", name, data, b->len + 1);
        free(data);
}

static void pgwire_seeds(void)
{
        static const uint32_t types[] = { PGCODEC_OID_INT4, PGCODEC_OID_TEXT, PGCODEC_OID_FLOAT8 };
        static const char *const text_values[] = { "42", "hello", NULL };
        static const size_t text_lens[] = { 2, 5, 0 };
        static const char *const bin_values[] = { "\x00\x00\x00\x2a", "hi", "\x40\x04\x00\x00\x00\x00\x00\x00" };
        static const size_t bin_lens[] = { 4, 2, 8 };
        struct pgcodec_buf b;

        pgcodec_buf_init(&b, 0);
        pg_startup(&b, "coord");
        pg_str_msg(&b, 'Q', "SELECT 3; BEGIN; NOTICE x; COMMIT");
        pg_str_msg(&b, 'X', NULL);
        pg_put("startup-simple", 0, &b);

        /* SSLRequest ('N'), then the startup. */
        pgcodec_buf_reset(&b);
        pgcodec_put_i32(&b, 8);
        pgcodec_put_i32(&b, (int32_t)PGCODEC_SSL_REQUEST_CODE);
        pg_startup(&b, "coord");
        pg_str_msg(&b, 'Q', "TYPES");
        pg_put("ssl-startup", 0, &b);

        pgcodec_buf_reset(&b);
        pgcodec_put_i32(&b, 16);
        pgcodec_put_i32(&b, (int32_t)PGCODEC_CANCEL_REQUEST_CODE);
        pgcodec_put_i32(&b, 1);
        pgcodec_put_i32(&b, 2);
        pg_put("cancel", 0, &b);

        pgcodec_buf_reset(&b);
        pg_str_msg(&b, 'Q', "ERR; SELECT 1");
        pg_str_msg(&b, 'Q', "");
        pg_str_msg(&b, 'Q', "INSERT INTO t VALUES (1); DIRECT 9");
        pg_str_msg(&b, 'Q', "FAIL");
        pg_put("simple-errors-direct", 1, &b);

        /* Extended protocol: text parameters, text results; then binary both ways. */
        pgcodec_buf_reset(&b);
        pg_parse(&b, "s1", "SELECT $1, $2, $3", 3, types);
        pg_target(&b, 'D', 'S', "s1");
        pg_bind(&b, "", "s1", 0, 3, text_values, text_lens, 0);
        pg_target(&b, 'D', 'P', "");
        pg_execute(&b, "", 0);
        pg_str_msg(&b, 'S', NULL);
        pg_bind(&b, "p1", "s1", 1, 3, bin_values, bin_lens, 1);
        pg_execute(&b, "p1", 1);
        pg_target(&b, 'C', 'P', "p1");
        pg_target(&b, 'C', 'S', "s1");
        pg_str_msg(&b, 'S', NULL);
        pg_str_msg(&b, 'X', NULL);
        pg_put("extended", 1, &b);

        /* Portal suspension and pipelining: SELECT 5 two rows at a time. */
        pgcodec_buf_reset(&b);
        pg_parse(&b, "", "SELECT 5", 0, NULL);
        pg_bind(&b, "c", "", 0, 0, NULL, NULL, 0);
        pg_execute(&b, "c", 2);
        pg_execute(&b, "c", 2);
        pg_execute(&b, "c", 0);
        pg_str_msg(&b, 'H', NULL);
        pg_parse(&b, "e", "ERR", 0, NULL);
        pg_bind(&b, "", "e", 0, 0, NULL, NULL, 0);
        pg_str_msg(&b, 'S', NULL);
        pg_put("suspend-pipeline", 1, &b);

        /* A protocol violation: a type byte no frontend sends. */
        pgcodec_buf_reset(&b);
        pg_str_msg(&b, 'Q', "SELECT 1");
        pg_str_msg(&b, 'Z', "x");
        pg_put("bad-type", 1, &b);
        pgcodec_buf_done(&b);
}

/* --- catalog ------------------------------------------------------------------------- */

static void be64_set(uint8_t *p, uint64_t v)
{
        for (int i = 7; i >= 0; i--, v >>= 8)
                p[i] = (uint8_t)v;
}

/* A WriteBatch as catalog.c writes one commit: the state record, the log entry. */
static void catalog_batch(rocksdb_writebatch_t *wb, uint64_t seq, const uint8_t *key, size_t klen,
                          const ProtobufCMessage *value)
{
        Coord__CatalogTxn txn = COORD__CATALOG_TXN__INIT;
        Coord__CatalogOp op = COORD__CATALOG_OP__INIT, *ops[1] = { &op };
        uint8_t seq_key[8], *v, *t;
        size_t vlen, tlen;

        vlen = protobuf_c_message_get_packed_size(value);
        v = malloc(vlen + 1);
        protobuf_c_message_pack(value, v);
        op.kind = COORD__CATALOG_OP__KIND__PUT;
        op.key.data = (uint8_t *)key;
        op.key.len = klen;
        op.value.data = v;
        op.value.len = vlen;
        txn.seq = seq;
        txn.commit_ms = 1700000000000ull + seq;
        txn.n_ops = 1;
        txn.ops = ops;
        tlen = coord__catalog_txn__get_packed_size(&txn);
        t = malloc(tlen + 1);
        coord__catalog_txn__pack(&txn, t);
        be64_set(seq_key, seq);
        rocksdb_writebatch_put(wb, (const char *)key, klen, (const char *)v, vlen);
        rocksdb_writebatch_put(wb, (const char *)seq_key, 8, (const char *)t, tlen);
        free(t);
        free(v);
}

/* One structured record of fuzz-catalog: ctl first_seq n len(le16) payload. */
static void add_record(struct stream *st, uint8_t ctl, uint8_t first, uint8_t n,
                       const void *payload, size_t len)
{
        st->data = realloc(st->data, st->len + 5 + len);
        st->data[st->len] = ctl;
        st->data[st->len + 1] = first;
        st->data[st->len + 2] = n;
        st->data[st->len + 3] = (uint8_t)len;
        st->data[st->len + 4] = (uint8_t)(len >> 8);
        memcpy(st->data + st->len + 5, payload, len);
        st->len += 5 + len;
}

static void catalog_seeds(void)
{
        struct stream st = { 0 };
        Coord__CatalogItem item = COORD__CATALOG_ITEM__INIT;
        Coord__CatalogColumn col = COORD__CATALOG_COLUMN__INIT, *cols[1] = { &col };
        Coord__CatalogBound bound = COORD__CATALOG_BOUND__INIT;
        Coord__CatalogRequirement req = COORD__CATALOG_REQUIREMENT__INIT;
        struct sql_stmt *mv = analyze("CREATE MATERIALIZED VIEW m AS SELECT b, count(*) FROM t GROUP BY b");
        uint64_t inputs[1] = { 1000 };
        uint8_t key[17], *plan;
        rocksdb_writebatch_t *wb;
        const char *rep;
        size_t len;

        st.data = malloc(1);
        st.data[0] = 0;         /* structured */
        st.len = 1;

        /* A table, then a materialized view over it with its plan, a bound and a
         * requirement: one WriteBatch each, in segment 0 (segno 1) then 1 (segno 2). */
        col.name = "a";
        col.type = PGCODEC_OID_INT4;
        item.gid = 1000;
        item.name = "t";
        item.kind = COORD__ITEM_KIND__ITEM_TABLE;
        item.create_sql = "CREATE TABLE t (a int)";
        item.n_columns = 1;
        item.columns = cols;
        key[0] = CATALOG_STATE_ITEM;
        be64_set(key + 1, 1000);
        wb = rocksdb_writebatch_create();
        catalog_batch(wb, 5, key, 9, &item.base);
        rep = rocksdb_writebatch_data(wb, &len);
        add_record(&st, 0 | 1 << 1, 5, 1, rep, len);
        rocksdb_writebatch_destroy(wb);

        len = coord__plan__relation__get_packed_size(mv->create_view.plan);
        plan = malloc(len + 1);
        coord__plan__relation__pack(mv->create_view.plan, plan);
        item.gid = 1001;
        item.name = "m";
        item.kind = COORD__ITEM_KIND__ITEM_MATERIALIZED_VIEW;
        item.create_sql = "CREATE MATERIALIZED VIEW m AS SELECT b, count(*) FROM t GROUP BY b";
        item.plan.data = plan;
        item.plan.len = len;
        item.n_logical_inputs = item.n_physical_inputs = item.n_refs = 1;
        item.logical_inputs = item.physical_inputs = item.refs = inputs;
        item.as_of = 40;
        be64_set(key + 1, 1001);
        wb = rocksdb_writebatch_create();
        catalog_batch(wb, 6, key, 9, &item.base);
        rep = rocksdb_writebatch_data(wb, &len);
        add_record(&st, 0 | 1 << 1, 6, 1, rep, len);
        rocksdb_writebatch_destroy(wb);
        put_file("catalog", "one-segment", st.data, st.len);

        bound.gid = 1000;
        bound.bound = 39;
        key[0] = CATALOG_STATE_BOUND;
        be64_set(key + 1, 1000);
        wb = rocksdb_writebatch_create();
        catalog_batch(wb, 7, key, 9, &bound.base);
        req.consumer = 1001;
        req.input = 1000;
        req.frontier = 40;
        key[0] = CATALOG_STATE_REQ;
        be64_set(key + 1, 1001);
        be64_set(key + 9, 1000);
        catalog_batch(wb, 8, key, 17, &req.base);
        rep = rocksdb_writebatch_data(wb, &len);
        add_record(&st, 1 | 2 << 1, 7, 2, rep, len);
        put_file("catalog", "two-segments", st.data, st.len);
        /* The same with the newer segment's record torn (bad crc). */
        st.data[st.len - len - 5] |= 16;
        put_file("catalog", "torn", st.data, st.len);
        rocksdb_writebatch_destroy(wb);

        /* Raw: a segment holding only zeros and a stray magic. */
        free(st.data);
        st.data = calloc(1, 200);
        st.data[0] = 1;
        memcpy(st.data + 1, "CSLG", 4);
        put_file("catalog", "raw", st.data, 200);
        free(st.data);
        free(plan);
        sql_stmt_free(mv);
}

/* --- ring and sql --------------------------------------------------------------------------- */

static void ring_seeds(void)
{
        /* fuzz-ring programs: mode, then ops (fuzz-ring.c). */
        static const uint8_t f_read[] = { 0, 1, 2, 15, 2, 15, 3, 2, 4, 5 };
        static const uint8_t f_patch[] = { 0, 1, 2, 3, 0, 0, 200, 8, 1, 2, 3, 4, 5, 6, 7, 8,
                                           2, 15, 3, 1, 0, 0, 12, 4, 0xff, 0xff, 0xff, 0xff,
                                           2, 15, 5, 6, 32, 1, 2, 4 };
        static const uint8_t l_read[] = { 1, 1, 2, 7, 2, 7, 2, 200, 3, 1, 4, 2, 7, 5 };
        static const uint8_t l_patch[] = { 1, 1, 2, 3, 0, 0, 136, 8, 0xff, 0, 0, 0, 0, 0, 0, 0,
                                           2, 7, 3, 0, 0, 1, 0, 16, 0xaa, 0xaa, 0xaa, 0xaa,
                                           0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa,
                                           0xaa, 0xaa, 0xaa, 0xaa, 2, 7, 5, 7, 8, 0, 4, 4,
                                           1, 0, 0, 0, 1, 2, 7 };

        put_file("ring", "fring-read", f_read, sizeof(f_read));
        put_file("ring", "fring-patch", f_patch, sizeof(f_patch));
        put_file("ring", "lring-read", l_read, sizeof(l_read));
        put_file("ring", "lring-patch", l_patch, sizeof(l_patch));
}

static void sql_seeds(void)
{
        static const char *const queries[] = {
                "SELECT a, b FROM t WHERE a > 1 AND c ORDER BY b DESC LIMIT 5 OFFSET 1",
                "SELECT b, count(*), sum(d), min(a) FROM t GROUP BY b HAVING count(*) > 1",
                "SELECT t.a, u.x FROM t JOIN u ON t.d = u.x UNION ALL SELECT a, 1 FROM v",
                "INSERT INTO t VALUES (1, 'x', true, 2), (2, NULL, false, NULL)",
                "DELETE FROM t WHERE b LIKE 'a%'; UPDATE t SET b = upper(b) WHERE a = 1",
                "CREATE TABLE z (a int NOT NULL, b text, c bigint)",
                "CREATE MATERIALIZED VIEW m WITH (REFRESH EVERY '1 minute') AS SELECT a FROM t",
                "CREATE VIEW vv AS SELECT CASE WHEN a > 0 THEN 'p' ELSE 'n' END, coalesce(b, '') FROM t",
                "CREATE DEFAULT INDEX ON t; CREATE INDEX ix ON u (x)",
                "DROP TABLE IF EXISTS t, u CASCADE; DROP VIEW v",
                "SHOW TABLES; SET x = 1; BEGIN; COMMIT; SHOW ALL",
                "SELECT a FROM t AS OF 5; SELECT mz_now(), current_user",
                "CREATE SINK k FROM t INTO FILE '/tmp/k' WITH (SNAPSHOT = false)",
                "CREATE SOURCE s FROM LOAD GENERATOR COUNTER (TICK INTERVAL '1s')",
                "ALTER MATERIALIZED VIEW mv SET (RETAIN HISTORY FOR '1h')",
        };
        /* Extended: the query, NUL, a type selector, the values. */
        static const char ext1[] = "SELECT $1::int + a, $2 FROM t WHERE b = $2\0\1" "5\0abc";
        static const char ext2[] = "INSERT INTO t VALUES ($1, $2, $3, $4)\0\1" "7\0\xff\0t\0" "9";
        static const char ext3[] = "SELECT current_database(), pg_backend_pid(), $1\0\0x";
        char name[16];

        for (size_t i = 0; i < ELEMENTSOF(queries); i++) {
                snprintf(name, sizeof(name), "q%02zu", i);
                put_file("sql", name, queries[i], strlen(queries[i]));
        }
        put_file("sql", "ext1", ext1, sizeof(ext1) - 1);
        put_file("sql", "ext2", ext2, sizeof(ext2) - 1);
        put_file("sql", "ext3", ext3, sizeof(ext3) - 1);
}

int main(int argc, char **argv)
{
        if (argc != 2) {
                fprintf(stderr, "usage: %s CORPUS-DIR\n", argv[0]);
                return 64;
        }
        out_dir = argv[1];
        frame_seeds();
        pgwire_seeds();
        catalog_seeds();
        ring_seeds();
        sql_seeds();
        return 0;
}
