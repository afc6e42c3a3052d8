/* controller-source.h -- what a source reads (CREATE SOURCE, controller-server-source.c NOTE
 * 20): a counter, or the lines of an append-only file, from an offset on, as rows.
 *
 * The offset is the source's progress in its own terms: for a counter the number of
 * values it has produced (the next is offset + 1), for a file the byte length of the
 * complete lines read.  The controller stores it in the source's remap collection with
 * every ingestion, in the same write as the rows, and gives it back here after a restart:
 * what was read before is never read again, nothing after it is skipped.
 *
 * A file source reads complete lines only (a line without its '\n' waits).  TEXT: a line
 * is a row of one text column (a '\r' before the '\n' is dropped).  CSV: a line is a
 * record of exactly n fields (RFC 4180 quoting; an unquoted empty field is NULL, a quoted
 * one ''); a line with another count stops the source there.  A file that disappears,
 * shrinks below the offset or is replaced stops the source too, with an error: nothing
 * past the offset is read until the file is back as it was (no data lost).
 *
 * Blocking I/O (pread of what is new), for the caller's thread.  Returns -errno; never
 * logs.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "controller-eval.h"
#include "coord.pb-c.h"

struct src_reader;

/* A reader of sp's source (DataflowSpec kind SOURCE) from `offset` on.  -EINVAL for a
 * spec it cannot read, -ENOMEM. */
int src_reader_new(const Coord__DataflowSpec *sp, uint64_t offset, struct src_reader **ret);
struct src_reader *src_reader_free(struct src_reader *r);

/* Read what is there at wall clock now_ms (a counter: one value per TICK INTERVAL since
 * the last; a file: the new complete lines, at most about max_bytes) into b as rows at
 * time ts with diff +1, and advance the offset.  0 (possibly no rows); -errno with err
 * (a sentence) when the source cannot go on now -- nothing was added then, and the next
 * poll tries again from the same offset. */
int src_reader_poll(struct src_reader *r, uint64_t now_ms, uint64_t ts, size_t max_bytes,
                    struct eval_batch *b, char *err, size_t errlen);
uint64_t src_reader_offset(const struct src_reader *r);

/* One CSV record (no line terminator) into n datums over `line` (texts point into it or
 * into scratch, which must hold len bytes).  The field count, or -EBADMSG for an open
 * quote or text after a closing quote. */
int src_csv_split(const char *line, size_t len, char *scratch, struct row_datum *d, size_t n);
