/* test-sink-file -- a sink's file (controller/controller-sink.c): the line format (COPY
 * text, ordered by time then row), appends, and the cut back to a durable length that
 * makes a resumed sink write each update once. */
#include <stdio.h>
#include <sys/stat.h>

#include "controller-sink.h"
#include "row/row.h"
#include "t.h"

static char *read_all(const char *path)
{
        FILE *f = fopen(path, "r");
        static char buf[4096];
        size_t n;

        if (!f)
                return NULL;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = '\0';
        fclose(f);
        return buf;
}

static void push(struct eval_batch *b, const struct row_datum *d, size_t n, uint64_t time, int64_t diff)
{
        uint8_t *row = NULL;
        size_t len = 0;

        CU_ASSERT_FATAL(row_encode(d, n, &row, &len) == 0);
        CU_ASSERT_FATAL(eval_batch_push(b, row, len, time, diff) == 0);
        free(row);
}

static void test_lines(void)
{
        char *dir = t_mkdtemp("sinkfile"), *path = NULL;
        struct eval_batch b = EVAL_BATCH_INIT;
        struct sink_file *f = NULL;
        uint64_t len1, len2;
        struct stat st;

        CU_ASSERT_FATAL(dir && asprintf(&path, "%s/out", dir) > 0);
        CU_ASSERT_FATAL(sink_file_open(path, 0, &f) == 0);
        push(&b, (struct row_datum[]){ ROW_DATUM_INT(2), ROW_DATUM_TEXT("a\tb\\c\nd", 7) }, 2, 20, 1);
        push(&b, (struct row_datum[]){ ROW_DATUM_INT(1), ROW_DATUM_NULL }, 2, 20, -1);
        push(&b, (struct row_datum[]){ ROW_DATUM_BOOL(true), ROW_DATUM_INT(-5) }, 2, 10, 3);
        CU_ASSERT_EQUAL(sink_file_append(f, &b, &len1), 0);
        CU_ASSERT_STRING_EQUAL(read_all(path), "10\t3\tt\t-5\n"
                                               "20\t-1\t1\t\\N\n"
                                               "20\t1\t2\ta\\tb\\\\c\\nd\n");
        CU_ASSERT_EQUAL(len1, strlen(read_all(path)));
        /* a second append, then a crash before its length was recorded */
        eval_batch_clear(&b);
        push(&b, (struct row_datum[]){ ROW_DATUM_INT(9) }, 1, 30, 1);
        CU_ASSERT_EQUAL(sink_file_append(f, &b, &len2), 0);
        CU_ASSERT(len2 > len1);
        f = sink_file_close(f);
        /* resumed at the recorded length: the unrecorded tail goes, the next append
         * writes there */
        CU_ASSERT_FATAL(sink_file_open(path, len1, &f) == 0);
        CU_ASSERT_EQUAL(sink_file_length(f), len1);
        CU_ASSERT(stat(path, &st) == 0 && (uint64_t)st.st_size == len1);
        CU_ASSERT_EQUAL(sink_file_append(f, &b, &len2), 0);
        CU_ASSERT_STRING_EQUAL(read_all(path), "10\t3\tt\t-5\n"
                                               "20\t-1\t1\t\\N\n"
                                               "20\t1\t2\ta\\tb\\\\c\\nd\n"
                                               "30\t1\t9\n");
        /* nothing to write: the length stays */
        eval_batch_clear(&b);
        CU_ASSERT_EQUAL(sink_file_append(f, &b, &len1), 0);
        CU_ASSERT_EQUAL(len1, len2);
        f = sink_file_close(f);
        /* a directory that does not exist */
        CU_ASSERT(sink_file_open("/nonexistent-dir/x", 0, &f) == -ENOENT);
        eval_batch_done(&b);
        t_rmrf(dir);
        free(dir);
        free(path);
}

int main(void)
{
        static const struct t_case cases[] = {
                { "lines, appends, cut back on resume", test_lines },
                { NULL, NULL },
        };
        return t_run((const struct t_suite[]){ { "sink-file", cases }, { NULL, NULL } });
}
