/* bench-sql.c -- what the adapter's loop spends parsing SQL (adapter-sql.c sql_parse():
 * the AS OF scan, PostgreSQL's parser through libpg_query, the batch's statements, and
 * freeing it all).  Prints figures and asserts nothing.
 *
 *   bench-sql [--seconds S]
 *
 * Rows (each for S seconds, default 1):
 *   setup batch        one query string of 200 statements, as the measurement
 *                      workflow's setup sends them: 100 x (CREATE VIEW v_i AS SELECT a
 *                      FROM sv; CREATE DEFAULT INDEX ON v_i) -- time per statement
 *   CREATE TABLE       a single "CREATE TABLE d_1 (a int)", as a DDL pair sends it
 *   INSERT             a single "INSERT INTO t VALUES (1, 'x')"
 *   SELECT ... AS OF   a single "SELECT a, b FROM t WHERE a > 1 AS OF 1000"
 * Each row: p50 and p99 microseconds per call (per statement for the batch) and calls/s.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter-sql.h"
#include "row/row.h"
#include "util.h"

#define MAX_SAMPLES (1u << 20)

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

        return x < y ? -1 : x > y;
}

static int row(const char *what, const char *sql, size_t per_call, double seconds)
{
        uint64_t *ns = malloc(MAX_SAMPLES * sizeof(*ns));
        uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9), t;
        size_t n = 0;

        if (!ns)
                return -ENOMEM;
        while ((t = now_ns()) < end && n < MAX_SAMPLES) {
                struct sql_batch *b = NULL;
                struct row_error err = { 0 };
                int r = sql_parse(sql, &b, &err);

                if (r < 0 || sql_batch_size(b) != per_call) {
                        fprintf(stderr, "bench-sql: %s: parse failed: %s\n", what, err.message);
                        sql_batch_free(b);
                        free(ns);
                        return r < 0 ? r : -EPROTO;
                }
                sql_batch_free(b);
                ns[n++] = now_ns() - t;
        }
        qsort(ns, n, sizeof(*ns), cmp_u64);
        printf("%-22s p50=%8.2f us  p99=%8.2f us  per statement; %9.0f statements/s  (n=%zu)\n",
               what, (double)ns[n / 2] / 1e3 / (double)per_call,
               (double)ns[(size_t)((double)(n - 1) * 0.99)] / 1e3 / (double)per_call,
               (double)(n * per_call) / ((double)(now_ns() - start) / 1e9), n);
        free(ns);
        return 0;
}

int main(int argc, char **argv)
{
        double seconds = 1.0;
        size_t cap = 100 * 96, off = 0;
        char *batch;
        int r = 0;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
                        seconds = atof(argv[++i]);
                else {
                        fprintf(stderr, "usage: bench-sql [--seconds S]\n");
                        return 64;
                }
        }
        if (!(seconds > 0)) {
                fprintf(stderr, "bench-sql: --seconds must be positive\n");
                return 64;
        }
        batch = malloc(cap);
        if (!batch)
                return 1;
        for (unsigned i = 0; i < 100; i++)
                off += (size_t)snprintf(batch + off, cap - off,
                                        "CREATE VIEW v_%u AS SELECT a FROM sv; CREATE DEFAULT INDEX ON v_%u; ",
                                        i, i);
        if (r == 0)
                r = row("setup batch (200)", batch, 200, seconds);
        if (r == 0)
                r = row("CREATE TABLE", "CREATE TABLE d_1 (a int)", 1, seconds);
        if (r == 0)
                r = row("INSERT", "INSERT INTO t VALUES (1, 'x')", 1, seconds);
        if (r == 0)
                r = row("SELECT ... AS OF", "SELECT a, b FROM t WHERE a > 1 AS OF 1000", 1, seconds);
        free(batch);
        return r < 0 ? 1 : 0;
}
