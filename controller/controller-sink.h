/* controller-sink.h -- a sink's file (CREATE SINK ... INTO FILE, controller-server-source.c
 * controller-server-source.c NOTE 19): the lines of its updates, appended and made durable, cut back to its durable
 * progress when it resumes.
 *
 * A line is one update: `time <TAB> diff <TAB> col1 <TAB> col2 ...\n`, the columns in
 * PostgreSQL's COPY text format (NULL as \N; backslash, tab, newline and carriage return
 * escaped as \\, \t, \n, \r; booleans t / f).  The lines of one append are ordered by
 * time, then by row.
 *
 * Exactly once.  The file's length is part of the sink's durable progress (the mark of
 * its progress collection, written only after the lines it covers are fdatasync'ed), so
 * after a crash the file is cut back to that length and the sink writes from its
 * progress on: each update is in the file once, none is skipped.  A reader that must not
 * see lines a crash may take back reads up to the length its progress records.
 *
 * Blocking I/O, for the caller's thread.  Returns -errno; never logs.
 */
#pragma once

#include <stdint.h>

#include "controller-eval.h"

struct sink_file;

/* Open (create, mode 0644) the file at path and cut it back to `length` bytes, the
 * length its durable progress records; the next append goes there.  -errno. */
int sink_file_open(const char *path, uint64_t length, struct sink_file **ret);
struct sink_file *sink_file_close(struct sink_file *f);

/* Append the lines of b's updates (any order; rows well formed) and fdatasync.  0 with
 * the file's new length in *ret_length; -errno (-EBADMSG for a row that does not
 * decode), after which the file's length beyond the last good return is undefined: the
 * caller must not record it, and cuts it back when it reopens. */
int sink_file_append(struct sink_file *f, const struct eval_batch *b, uint64_t *ret_length);
uint64_t sink_file_length(const struct sink_file *f);
