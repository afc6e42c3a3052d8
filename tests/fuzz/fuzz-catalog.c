/* fuzz-catalog -- the catalog's records (common/catalog) from damaged storage.
 *
 * What a restarted coord-adapter reads before anything else: the sync log's segments
 * (synclog.h), each record a RocksDB WriteBatch of catalog records -- log entries
 * (coord.CatalogTxn under an 8-byte seq key) and state records ('i' items, 'b' bounds,
 * 'r' requirements: CatalogItem, CatalogBound, CatalogRequirement, an item's plan a
 * coord.plan.Relation).
 *
 * An input becomes the two segments (64 KiB each, on tmpfs) of a sync log.  Byte 0, bit
 * 0 set: the rest is the segments' raw bytes (first half seg-0, second half seg-1),
 * which exercises the header checks.  Otherwise it is a list of records the harness
 * lays out with valid magic and crc, so that the fuzzer reaches the payloads and the
 * ordering of segment uses: per record
 *     ctl(u8: bit 0 the segment, bits 1-3 its segno (counted down from UINT64_MAX
 *         with bit 5, from UINT64_MAX / 2 with bit 6), bit 4 a wrong crc)
 *     first_seq(u8) n(u8) len(u16 le) payload[len]
 * The log is opened and replayed; every payload is decoded as the catalog would apply
 * it (a WriteBatch, then each record by its key).  Then one record is appended, and a
 * second open must replay that record last: what the log acknowledged is found again.
 */
#include <errno.h>
#include <fcntl.h>
#include <rocksdb/c.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "catalog/catalog.h"
#include "fuzz.h"
#include "plan.pb-c.h"
#include "catalog/synclog.h"
#include "util.h"

#define SEG_SIZE        (64u << 10)
#define SYNCLOG_MAGIC_LE 0x474c5343u    /* "CSLG" as synclog.c writes it */

static char *dir, *seg_path[2];

static void cleanup(void)
{
        for (int i = 0; i < 2; i++) {
                if (seg_path[i])
                        unlink(seg_path[i]);
                free(seg_path[i]);
        }
        if (dir)
                rmdir(dir);
        free(dir);
}

static void setup(void)
{
        static bool done;
        char tmpl[] = "/dev/shm/coord-fuzz-catalog.XXXXXX";

        if (done)
                return;
        done = true;
        if (!mkdtemp(tmpl)) {
                char tmp[] = "/tmp/coord-fuzz-catalog.XXXXXX";

                FUZZ_CHECK(mkdtemp(tmp));
                dir = strdup(tmp);
        } else
                dir = strdup(tmpl);
        FUZZ_CHECK(dir);
        for (int i = 0; i < 2; i++)
                FUZZ_CHECK(asprintf(&seg_path[i], "%s/seg-%d", dir, i) > 0);
        atexit(cleanup);
}

/* --- Decoding what a record carries ------------------------------------------------- */

static void decode_plan(const uint8_t *data, size_t len)
{
        Coord__Plan__Relation *p = coord__plan__relation__unpack(NULL, len, data);

        if (p)
                coord__plan__relation__free_unpacked(p, NULL);
}

/* A state record, as the loaders (adapter-catalog-open.c, lifecycle-load.c) decode it. */
static void decode_state(const uint8_t *key, size_t klen, const uint8_t *v, size_t vlen)
{
        if (klen == 9 && key[0] == CATALOG_STATE_ITEM) {
                Coord__CatalogItem *it = coord__catalog_item__unpack(NULL, vlen, v);

                if (!it)
                        return;
                if (it->plan.len)
                        decode_plan(it->plan.data, it->plan.len);
                coord__catalog_item__free_unpacked(it, NULL);
        } else if (klen == 9 && key[0] == CATALOG_STATE_BOUND) {
                Coord__CatalogBound *b = coord__catalog_bound__unpack(NULL, vlen, v);

                if (b)
                        coord__catalog_bound__free_unpacked(b, NULL);
        } else if (klen == 17 && key[0] == CATALOG_STATE_REQ) {
                Coord__CatalogRequirement *q = coord__catalog_requirement__unpack(NULL, vlen, v);

                if (q)
                        coord__catalog_requirement__free_unpacked(q, NULL);
        }
}

static void batch_put(void *state, const char *k, size_t klen, const char *v, size_t vlen)
{
        const uint8_t *key = (const uint8_t *)k, *val = (const uint8_t *)v;

        if (klen == 8) {
                /* A log entry: a transaction whose ops are state and meta records. */
                Coord__CatalogTxn *txn = coord__catalog_txn__unpack(NULL, vlen, val);

                if (!txn)
                        return;
                for (size_t i = 0; i < txn->n_ops; i++) {
                        const Coord__CatalogOp *op = txn->ops[i];

                        if (op->kind == COORD__CATALOG_OP__KIND__PUT &&
                            op->cf == COORD__CATALOG_OP__CF__STATE)
                                decode_state(op->key.data, op->key.len, op->value.data, op->value.len);
                }
                coord__catalog_txn__free_unpacked(txn, NULL);
                return;
        }
        decode_state(key, klen, val, vlen);
}

static void batch_delete(void *state, const char *k, size_t klen)
{
}

/* --- The replays -------------------------------------------------------------------- */

struct replay {
        size_t records;
        uint64_t last_first_seq;
        uint32_t last_n;
        size_t last_len;
        uint8_t last_payload[16];
};

static int on_record(uint64_t first_seq, uint32_t n, const void *payload, size_t len,
                     void *userdata)
{
        struct replay *rp = userdata;
        rocksdb_writebatch_t *b;

        FUZZ_CHECK(n > 0);              /* synclog.c never hands over an empty group */
        FUZZ_CHECK(len <= SEG_SIZE - SYNCLOG_HEADER_SIZE);
        rp->records++;
        rp->last_first_seq = first_seq;
        rp->last_n = n;
        rp->last_len = len;
        memcpy(rp->last_payload, payload, len < sizeof(rp->last_payload) ? len : sizeof(rp->last_payload));
        /* What catalog.c's synclog_replay_group() hands to RocksDB: only a checked
         * batch (RocksDB asserts on a malformed one). */
        if (catalog_batch_check(payload, len) == 0) {
                b = rocksdb_writebatch_create_from(payload, len);
                rocksdb_writebatch_iterate(b, NULL, batch_put, batch_delete);
                rocksdb_writebatch_destroy(b);
        }
        return 0;
}

static int store_sync(void *userdata)
{
        return 0;
}

/* --- Laying the input out ------------------------------------------------------------ */

static void le32_set(uint8_t *p, uint32_t v)
{
        p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

static void le64_set(uint8_t *p, uint64_t v)
{
        le32_set(p, (uint32_t)v);
        le32_set(p + 4, (uint32_t)(v >> 32));
}

static void lay_out(const uint8_t *data, size_t size, uint8_t *seg[2])
{
        size_t off[2] = { 0, 0 }, at = 0;

        while (size - at >= 5) {
                uint8_t ctl = data[at], first = data[at + 1], n = data[at + 2];
                size_t len = (size_t)data[at + 3] | (size_t)data[at + 4] << 8;
                int s = ctl & 1;
                uint8_t *h;
                uint32_t crc;

                at += 5;
                if (len > size - at)
                        len = size - at;
                if (SEG_SIZE - off[s] < SYNCLOG_HEADER_SIZE + len)
                        break;
                h = seg[s] + off[s];
                le32_set(h, SYNCLOG_MAGIC_LE);
                le64_set(h + 8, ctl & 64 ? UINT64_MAX / 2 - ((ctl >> 1) & 7) :   /* synclog.c's SEGNO_MAX */
                                ctl & 32 ? UINT64_MAX - ((ctl >> 1) & 7) : (ctl >> 1) & 7);
                le64_set(h + 16, first);
                le32_set(h + 24, n);
                le32_set(h + 28, (uint32_t)len);
                memcpy(h + SYNCLOG_HEADER_SIZE, data + at, len);
                crc = (uint32_t)crc32(crc32(0L, h + 8, SYNCLOG_HEADER_SIZE - 8),
                                      h + SYNCLOG_HEADER_SIZE, (uInt)len);
                le32_set(h + 4, ctl & 16 ? ~crc : crc);
                off[s] += SYNCLOG_HEADER_SIZE + len;
                at += len;
        }
}

static void write_segment(int i, const uint8_t *buf)
{
        int fd = open(seg_path[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        FUZZ_CHECK(fd >= 0);
        FUZZ_CHECK(write(fd, buf, SEG_SIZE) == (ssize_t)SEG_SIZE);
        close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static uint8_t segs[2][SEG_SIZE];
        uint8_t *seg[2] = { segs[0], segs[1] };
        static const uint8_t mark[] = "acknowledged";
        struct replay first = { 0 }, second = { 0 };
        struct synclog *l = NULL;
        int r;

        if (size == 0 || size > 2 * SEG_SIZE + 1)
                return 0;
        setup();
        memset(segs, 0, sizeof(segs));
        if (data[0] & 1) {
                size_t half = (size - 1) / 2;

                memcpy(seg[0], data + 1, half);
                memcpy(seg[1], data + 1 + half, size - 1 - half);
        } else
                lay_out(data + 1, size - 1, seg);
        write_segment(0, seg[0]);
        write_segment(1, seg[1]);

        FUZZ_CHECK(synclog_open(dir, SEG_SIZE, 2, store_sync, NULL, &l) == 0);
        FUZZ_CHECK(synclog_replay(l, on_record, &first) == 0);
        /* The log is ready: a new record is durable once this returns (-EBADMSG: the
         * damaged numbering of segment uses leaves none for it). */
        r = synclog_append(l, first.last_first_seq + 1000, 1, mark, sizeof(mark));
        FUZZ_CHECK(r == 0 || r == -EBADMSG);
        l = synclog_close(l);
        if (r < 0)
                return 0;

        FUZZ_CHECK(synclog_open(dir, SEG_SIZE, 2, store_sync, NULL, &l) == 0);
        FUZZ_CHECK(synclog_replay(l, on_record, &second) == 0);
        l = synclog_close(l);
        FUZZ_CHECK(second.records >= 1);
        FUZZ_CHECK(second.last_first_seq == first.last_first_seq + 1000 && second.last_n == 1 &&
                   second.last_len == sizeof(mark) &&
                   memcmp(second.last_payload, mark, sizeof(mark)) == 0);
        return 0;
}
