/* adapter-pgcodec.h -- the PostgreSQL v3 wire protocol as pure functions: no I/O.
 *
 * Owner: adapter.  Callers: adapter-pgwire.c (the server on the io_uring loop) and the
 * tests, which feed bytes and check messages without a socket.
 *
 * Decoding: pgcodec_frame_next() finds one whole message at the front of a byte buffer
 * and checks its type and length; pgcodec_parse_*() then split its body.  Every string
 * and array they return is *borrowed* from the input buffer: valid as long as those
 * bytes are.  A body that does not match its layout is -EBADMSG, never a crash.
 *
 * Encoding: messages are appended to a struct pgcodec_buf.  The buffer's error is sticky
 * (as SQLite's Pager.errCode): after the first failure (-ENOMEM, -ENOBUFS past the
 * buffer's limit, -EMSGSIZE for a message over 1 GiB) every put is a no-op, so a caller
 * builds a whole reply and checks pgcodec_buf_error() once.
 *
 * Value conversions between the text and binary formats cover the types a client is
 * likely to bind in binary (libpq, JDBC, pgx): bool, int2/4/8, oid, float4/8, the text
 * types and bytea.
 *
 * Nothing here logs, allocates global state or is thread-unsafe.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Protocol version and the special request codes of a startup packet. */
#define PGCODEC_PROTOCOL(major, minor)  ((uint32_t)(major) << 16 | (uint32_t)(minor))
#define PGCODEC_PROTOCOL_MAJOR(v)       ((v) >> 16)
#define PGCODEC_PROTOCOL_MINOR(v)       ((v) & 0xffffu)
#define PGCODEC_CANCEL_REQUEST_CODE     80877102u       /* 1234.5678 */
#define PGCODEC_SSL_REQUEST_CODE        80877103u       /* 1234.5679 */
#define PGCODEC_GSSENC_REQUEST_CODE     80877104u       /* 1234.5680 */

/* Limits.  A startup packet is at most 10000 bytes, as in PostgreSQL
 * (MAX_STARTUP_PACKET_LENGTH); so are the messages that carry only names and counts
 * (Close, Describe, Execute, Flush, Sync, Terminate, CopyDone, CopyFail), as
 * PQ_SMALL_MESSAGE_LIMIT.  No message may exceed 1 GiB (PQ_LARGE_MESSAGE_LIMIT). */
#define PGCODEC_STARTUP_MAX             10000u
#define PGCODEC_SMALL_MESSAGE_MAX       10000u
#define PGCODEC_MESSAGE_MAX             (1u << 30)
#define PGCODEC_STARTUP_PARAMS_MAX      64u
#define PGCODEC_CANCEL_SECRET_MAX       256u

/* Type OIDs (pg_type.dat). */
enum {
        PGCODEC_OID_BOOL        = 16,
        PGCODEC_OID_BYTEA       = 17,
        PGCODEC_OID_CHAR        = 18,
        PGCODEC_OID_NAME        = 19,
        PGCODEC_OID_INT8        = 20,
        PGCODEC_OID_INT2        = 21,
        PGCODEC_OID_INT4        = 23,
        PGCODEC_OID_TEXT        = 25,
        PGCODEC_OID_OID         = 26,
        PGCODEC_OID_JSON        = 114,
        PGCODEC_OID_FLOAT4      = 700,
        PGCODEC_OID_FLOAT8      = 701,
        PGCODEC_OID_UNKNOWN     = 705,
        PGCODEC_OID_BPCHAR      = 1042,
        PGCODEC_OID_VARCHAR     = 1043,
        PGCODEC_OID_DATE        = 1082,
        PGCODEC_OID_TIMESTAMP   = 1114,
        PGCODEC_OID_TIMESTAMPTZ = 1184,
        PGCODEC_OID_INTERVAL    = 1186,
        PGCODEC_OID_NUMERIC     = 1700,
        PGCODEC_OID_UUID        = 2950,
        PGCODEC_OID_JSONB       = 3802,
};

/* Format codes. */
enum {
        PGCODEC_FORMAT_TEXT     = 0,
        PGCODEC_FORMAT_BINARY   = 1,
};

/* SQLSTATEs this layer and the server raise themselves, plus the common ones an
 * executor needs (errcodes.txt). */
#define PGCODEC_SQLSTATE_SUCCESSFUL_COMPLETION  "00000"
#define PGCODEC_SQLSTATE_PROTOCOL_VIOLATION     "08P01"
#define PGCODEC_SQLSTATE_FEATURE_NOT_SUPPORTED  "0A000"
#define PGCODEC_SQLSTATE_INVALID_PARAMETER_VALUE "22023"
#define PGCODEC_SQLSTATE_INVALID_TEXT_REPRESENTATION "22P02"
#define PGCODEC_SQLSTATE_INVALID_BINARY_REPRESENTATION "22P03"
#define PGCODEC_SQLSTATE_INVALID_SQL_STATEMENT_NAME "26000"
#define PGCODEC_SQLSTATE_INVALID_AUTHORIZATION  "28000"
#define PGCODEC_SQLSTATE_INVALID_CURSOR_NAME    "34000"
#define PGCODEC_SQLSTATE_SYNTAX_ERROR           "42601"
#define PGCODEC_SQLSTATE_UNDEFINED_FUNCTION     "42883"
#define PGCODEC_SQLSTATE_DUPLICATE_CURSOR       "42P03"
#define PGCODEC_SQLSTATE_DUPLICATE_PSTATEMENT   "42P05"
#define PGCODEC_SQLSTATE_OUT_OF_MEMORY          "53200"
#define PGCODEC_SQLSTATE_TOO_MANY_CONNECTIONS   "53300"
#define PGCODEC_SQLSTATE_QUERY_CANCELED         "57014"
#define PGCODEC_SQLSTATE_ADMIN_SHUTDOWN         "57P01"
#define PGCODEC_SQLSTATE_INTERNAL_ERROR         "XX000"

/* --- Shared value types ----------------------------------------------------------- */

/* One column of a RowDescription. */
struct pgcodec_column {
        const char *name;
        uint32_t type;          /* type OID */
        int16_t typlen;         /* 0: pgcodec_type_len(type) (0 is never a real typlen) */
        int32_t typmod;         /* -1 when the type has no modifier: set it explicitly */
        uint32_t table;         /* OID of the source table, 0 if none */
        int16_t attnum;         /* its column number, 0 if none */
};

/* The fields of an ErrorResponse or NoticeResponse. */
struct pgcodec_error {
        const char *severity;   /* NULL: "ERROR" ("NOTICE" for a notice), or "FATAL"... */
        const char *sqlstate;   /* NULL: "XX000" ("00000" for a notice); five characters */
        const char *message;    /* primary message, required */
        const char *detail;     /* optional */
        const char *hint;       /* optional */
        unsigned position;      /* 1-based character position in the query string; 0: none */
};

/* A field value: len -1 is SQL NULL (data then unused). */
struct pgcodec_value {
        const uint8_t *data;
        int32_t len;
};

/* --- Output buffer ----------------------------------------------------------------- */

struct pgcodec_buf {
        uint8_t *data;
        size_t len;             /* bytes written */
        size_t cap;             /* bytes allocated */
        size_t max;             /* growth past this fails with -ENOBUFS; 0: no limit */
        int error;              /* sticky: 0, or the first failure */
};

/* Empty buffer with limit max (0: none); owns nothing until the first put. */
void pgcodec_buf_init(struct pgcodec_buf *b, size_t max);
/* Free the memory; the buffer is empty (and reusable) afterwards. */
void pgcodec_buf_done(struct pgcodec_buf *b);
/* Forget the contents and the error, keep the memory. */
void pgcodec_buf_reset(struct pgcodec_buf *b);
/* Cut back to len bytes (len <= b->len); the error stays. */
void pgcodec_buf_truncate(struct pgcodec_buf *b, size_t len);
/* Room for n more bytes: 0, or the (now sticky) -ENOMEM / -ENOBUFS. */
int pgcodec_buf_reserve(struct pgcodec_buf *b, size_t n);
static inline int pgcodec_buf_error(const struct pgcodec_buf *b) { return b->error; }

/* Primitive puts, big-endian as the protocol wants. */
void pgcodec_put_u8(struct pgcodec_buf *b, uint8_t v);
void pgcodec_put_i16(struct pgcodec_buf *b, int16_t v);
void pgcodec_put_i32(struct pgcodec_buf *b, int32_t v);
void pgcodec_put_bytes(struct pgcodec_buf *b, const void *p, size_t n);
void pgcodec_put_str(struct pgcodec_buf *b, const char *s);     /* with its NUL */

/* Framing: begin writes the type byte (none when type is 0: a startup-phase packet) and
 * a length placeholder and returns the placeholder's offset; end fills it in. */
size_t pgcodec_msg_begin(struct pgcodec_buf *b, uint8_t type);
void pgcodec_msg_end(struct pgcodec_buf *b, size_t start);

/* --- Backend messages ----------------------------------------------------------- */

void pgcodec_put_auth_ok(struct pgcodec_buf *b);                                /* 'R' 0 */
void pgcodec_put_parameter_status(struct pgcodec_buf *b, const char *name,
                                  const char *value);                            /* 'S' */
void pgcodec_put_backend_key(struct pgcodec_buf *b, int32_t pid, uint32_t secret); /* 'K' */
void pgcodec_put_ready(struct pgcodec_buf *b, char txn_status);                 /* 'Z' I/T/E */
void pgcodec_put_negotiate_version(struct pgcodec_buf *b, uint32_t newest_minor,
                                   unsigned n, const char *const *unrecognized); /* 'v' */
/* 'T'.  formats: NULL for all text, else one per column. */
void pgcodec_put_row_description(struct pgcodec_buf *b, unsigned n,
                                 const struct pgcodec_column *cols, const int16_t *formats);
void pgcodec_put_data_row(struct pgcodec_buf *b, unsigned n,
                          const struct pgcodec_value *values);                  /* 'D' */
void pgcodec_put_command_complete(struct pgcodec_buf *b, const char *tag);      /* 'C' */
/* 'E' or 'N' (type); severity and SQLSTATE defaults as in struct pgcodec_error. */
void pgcodec_put_error(struct pgcodec_buf *b, uint8_t type, const struct pgcodec_error *e);
void pgcodec_put_parameter_description(struct pgcodec_buf *b, unsigned n,
                                       const uint32_t *types);                  /* 't' */
/* Messages without a body: ParseComplete '1', BindComplete '2', CloseComplete '3',
 * NoData 'n', PortalSuspended 's', EmptyQueryResponse 'I'. */
void pgcodec_put_empty(struct pgcodec_buf *b, uint8_t type);

/* --- Frontend messages: framing ---------------------------------------------------- */

struct pgcodec_frame {
        uint8_t type;           /* message type; 0 for a startup-phase packet */
        const uint8_t *body;    /* after the length word (borrowed) */
        size_t len;             /* body bytes */
        size_t size;            /* bytes of the whole message in the stream */
};

/* Find one whole message at the front of buf[0, len).  startup selects the untyped
 * packets of the startup phase (limit PGCODEC_STARTUP_MAX); otherwise the message type
 * must be one a frontend sends, and its length at most max (PGCODEC_SMALL_MESSAGE_MAX
 * for the small types).  Returns
 *   1   with *ret filled in;
 *   0   when more bytes are needed: ret->size is then the whole message's size once the
 *       header is known (so the caller can make room), else 0;
 *   -EPROTO   a type byte no frontend sends (found from that byte alone);
 *   -EBADMSG  a length below the minimum;
 *   -EMSGSIZE a length over the limit (found from the header alone, before the body). */
int pgcodec_frame_next(const uint8_t *buf, size_t len, bool startup, size_t max,
                       struct pgcodec_frame *ret);

/* --- Frontend messages: bodies (all strings borrowed from the frame) ---------------- */

struct pgcodec_startup {
        uint32_t code;          /* protocol version, or one of the request codes above */
        /* StartupMessage */
        unsigned nparams;
        const char *names[PGCODEC_STARTUP_PARAMS_MAX];
        const char *values[PGCODEC_STARTUP_PARAMS_MAX];
        /* CancelRequest */
        int32_t cancel_pid;
        const uint8_t *cancel_secret;
        size_t cancel_secret_len;
};
/* -EBADMSG on a bad layout, -E2BIG over PGCODEC_STARTUP_PARAMS_MAX parameters.  A
 * protocol version other than 3.x parses (nparams 0): deciding is the caller's job. */
int pgcodec_parse_startup(const struct pgcodec_frame *f, struct pgcodec_startup *ret);
/* Look a startup parameter up; NULL when absent. */
const char *pgcodec_startup_param(const struct pgcodec_startup *s, const char *name);

int pgcodec_parse_query(const struct pgcodec_frame *f, const char **ret_sql);   /* 'Q' */

struct pgcodec_parse {                                                          /* 'P' */
        const char *name;
        const char *query;
        uint16_t ntypes;
        const uint8_t *types;   /* ntypes big-endian OIDs: pgcodec_parse_type() */
};
int pgcodec_parse_parse(const struct pgcodec_frame *f, struct pgcodec_parse *ret);
uint32_t pgcodec_parse_type(const struct pgcodec_parse *p, unsigned i);

struct pgcodec_bind {                                                           /* 'B' */
        const char *portal;
        const char *statement;
        uint16_t nformats;              /* 0, 1 or nparams (checked) */
        const uint8_t *formats;
        uint16_t nparams;
        const uint8_t *params;          /* nparams x (int32 length, bytes): pgcodec_bind_params() */
        uint16_t nresult_formats;
        const uint8_t *result_formats;
};
int pgcodec_parse_bind(const struct pgcodec_frame *f, struct pgcodec_bind *ret);
/* The format code of parameter i (0 <= i < nparams), after the 0/1/n rule. */
int16_t pgcodec_bind_format(const struct pgcodec_bind *b, unsigned i);
/* The result format code of column i, after the 0/1/n rule; the caller checked that
 * nresult_formats is 0, 1 or the number of columns. */
int16_t pgcodec_bind_result_format(const struct pgcodec_bind *b, unsigned i);
/* The parameter values (out has room for b->nparams); cannot fail on a parsed bind. */
void pgcodec_bind_params(const struct pgcodec_bind *b, struct pgcodec_value *out);

struct pgcodec_target {                 /* Describe 'D' and Close 'C' */
        char kind;                      /* 'S' statement or 'P' portal (checked) */
        const char *name;
};
int pgcodec_parse_target(const struct pgcodec_frame *f, struct pgcodec_target *ret);

struct pgcodec_execute {                                                        /* 'E' */
        const char *portal;
        uint32_t max_rows;              /* 0: all (a negative count on the wire is all) */
};
int pgcodec_parse_execute(const struct pgcodec_frame *f, struct pgcodec_execute *ret);

/* Sync, Flush, Terminate, CopyDone: the body must be empty. */
int pgcodec_parse_empty(const struct pgcodec_frame *f);

/* --- Types and value formats ------------------------------------------------------ */

/* pg_type.typlen: > 0 fixed, -1 varlena, -2 C string; unknown types -1. */
int16_t pgcodec_type_len(uint32_t type);
/* Whether the conversions below handle type's binary format. */
bool pgcodec_type_has_binary(uint32_t type);
/* Append the binary form of text[0, len) (a value of type in PostgreSQL's text output
 * format).  -EINVAL: not a valid value of type; -EOPNOTSUPP: no binary format here;
 * a buffer failure is b->error.  On a non-buffer error b is unchanged. */
int pgcodec_text_to_binary(uint32_t type, const char *text, size_t len, struct pgcodec_buf *b);
/* Append the text form of a binary value, NUL-terminated (the NUL is not part of the
 * value but is written, so the text is a C string).  -EINVAL: bad binary data (wrong
 * length, or a NUL inside a text value); -EOPNOTSUPP; b unchanged on those. */
int pgcodec_binary_to_text(uint32_t type, const uint8_t *data, size_t len, struct pgcodec_buf *b);
