/* adapter-pgwire-extended.c -- the extended query protocol of the PostgreSQL wire
 * protocol server: prepared statements and portals, per connection, and the messages
 * the server answers itself (Parse hands the SQL to prepare(), Bind, Describe, Close,
 * Execute hands a portal to execute() or answers it from the portal's rows put aside).
 *
 * The numbered notes are in adapter-pgwire.c (NOTES ON THE DESIGN OF A CONNECTION),
 * this file's being adapter-pgwire.c note 5.  What the server's files share is
 * adapter-pgwire-internal.h.  Loop thread only; nothing logs.
 */
#include "adapter-pgwire-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes.h"

/* --- Statements and portals (adapter-pgwire.c note 5) ---------------------------- */

struct stmt *pgw_stmt_find(struct pgwire_conn *c, const char *name)
{
        for (struct stmt *st = c->stmts; st; st = st->next)
                if (strcmp(st->name, name) == 0)
                        return st;
        return NULL;
}

static struct portal *portal_find(struct pgwire_conn *c, const char *name)
{
        for (struct portal *p = c->portals; p; p = p->next)
                if (strcmp(p->name, name) == 0)
                        return p;
        return NULL;
}

static void stmt_destroy(struct stmt *st)
{
        free(st->name);
        free(st->param_types);
        free(st->columns);
        free(st);
}

/* Drop a reference; the last one moves st to c->dead, released by conn_settle(). */
void pgw_stmt_unref(struct pgwire_conn *c, struct stmt *st)
{
        assert(st->refs > 0);
        if (--st->refs > 0)
                return;
        st->next = c->dead;
        c->dead = st;
}

void pgw_stmt_unlink(struct pgwire_conn *c, struct stmt *st)
{
        for (struct stmt **p = &c->stmts; *p; p = &(*p)->next)
                if (*p == st) {
                        *p = st->next;
                        st->next = NULL;
                        pgw_stmt_unref(c, st);
                        return;
                }
        assert(!"statement not in the list");
}

/* Release the owner's statements of c->dead (runs stmt_free()). */
void conn_bury(struct pgwire_conn *c)
{
        struct pgwire_server *s = c->srv;

        while (c->dead) {
                struct stmt *st = c->dead;

                c->dead = st->next;
                if (st->owner && s->cb.stmt_free) {
                        s->in_callback++;
                        s->cb.stmt_free(st->owner, s->userdata);
                        s->in_callback--;
                }
                stmt_destroy(st);
        }
}

static void portal_free(struct pgwire_conn *c, struct portal *p)
{
        if (p->stmt)
                pgw_stmt_unref(c, p->stmt);
        pgcodec_buf_done(&p->spill);
        free(p->name);
        free(p->params);
        free(p->values);
        free(p->formats);
        free(p->tag);
        free(p);
}

static void portal_unlink(struct pgwire_conn *c, struct portal *p)
{
        assert(c->req_portal != p);
        for (struct portal **pp = &c->portals; *pp; pp = &(*pp)->next)
                if (*pp == p) {
                        *pp = p->next;
                        portal_free(c, p);
                        return;
                }
        assert(!"portal not in the list");
}

void pgw_portals_drop_all(struct pgwire_conn *c)
{
        assert(!c->req_portal);
        while (c->portals) {
                struct portal *p = c->portals;

                c->portals = p->next;
                portal_free(c, p);
        }
}

/* Drop every statement and every portal but the one an execute() still uses. */
void conn_drop_statements(struct pgwire_conn *c)
{
        struct portal **pp = &c->portals;

        while (*pp) {
                struct portal *p = *pp;

                if (p == c->req_portal) {
                        pp = &p->next;
                        continue;
                }
                *pp = p->next;
                portal_free(c, p);
        }
        while (c->stmts)
                pgw_stmt_unlink(c, c->stmts);
}

/* A statement from the owner's description; names and arrays are copied. */
int pgw_stmt_new(const char *name, const struct pgwire_statement_desc *d, struct stmt **ret)
{
        unsigned ncols = d->returns_rows ? d->ncolumns : 0;
        size_t names = 0;
        struct stmt *st;
        char *p;

        assert(d->nparams == 0 || d->param_types);
        assert(ncols == 0 || d->columns);
        if (d->nparams > UINT16_MAX || ncols > INT16_MAX)
                return -E2BIG;
        for (unsigned i = 0; i < ncols; i++)
                names += strlen(d->columns[i].name ? d->columns[i].name : "?column?") + 1;

        st = calloc(1, sizeof(*st));
        if (!st)
                return -ENOMEM;
        st->name = strdup(name);
        st->param_types = calloc(d->nparams ? d->nparams : 1, sizeof(uint32_t));
        st->columns = malloc(ncols * sizeof(struct pgcodec_column) + names + 1);
        if (!st->name || !st->param_types || !st->columns) {
                stmt_destroy(st);
                return -ENOMEM;
        }
        st->nparams = d->nparams;
        if (d->nparams)
                memcpy(st->param_types, d->param_types, d->nparams * sizeof(uint32_t));
        st->returns_rows = d->returns_rows;
        st->ncolumns = ncols;
        p = (char *)(st->columns + ncols);
        for (unsigned i = 0; i < ncols; i++) {
                const char *n = d->columns[i].name ? d->columns[i].name : "?column?";
                size_t len = strlen(n) + 1;

                st->columns[i] = d->columns[i];
                memcpy(p, n, len);
                st->columns[i].name = p;
                p += len;
        }
        st->refs = 1;
        *ret = st;
        return 0;
}

/* --- Extended protocol, answered by the server (adapter-pgwire.c note 5) ---------- */

/* An error in an extended-protocol message: ErrorResponse, then skip until Sync. */
void conn_ext_error(struct pgwire_conn *c, const char *sqlstate, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        conn_put_errorv(c, NULL, sqlstate, fmt, ap);
        va_end(ap);
        if (conn_out_check(c) < 0)
                return;
        conn_flush(c);          /* as PostgreSQL: an error is flushed at once */
        c->state = CONN_SKIP;
}

/* pgwire__request__start, and the clock for its __done, while someone traces or the
 * statement histogram is kept (one clock read per request then). */
void pgw_req_probe_start(struct pgwire_conn *c, int kind, const char *text)
{
        c->req_start_ns = 0;
        if (COORD_PGWIRE_REQUEST_START_ENABLED() || COORD_PGWIRE_REQUEST_DONE_ENABLED()) {
                c->req_start_ns = now_ns();
                COORD_PGWIRE_REQUEST_START(c->pid, kind, (char *)text);
        } else if (c->srv->cfg.statement_hist) {
                c->req_start_ns = now_ns();
        }
}

void conn_handle_parse(struct pgwire_conn *c, const struct pgcodec_frame *f)
{
        struct pgwire_server *s = c->srv;
        struct pgcodec_parse p;

        if (pgcodec_parse_parse(f, &p) < 0) {
                conn_protocol_violation(c, -EBADMSG, "invalid Parse message");
                return;
        }
        if (*p.name && pgw_stmt_find(c, p.name)) {
                conn_ext_error(c, PGCODEC_SQLSTATE_DUPLICATE_PSTATEMENT,
                               "prepared statement \"%s\" already exists", p.name);
                return;
        }
        if (!s->cb.prepare) {
                conn_ext_error(c, PGCODEC_SQLSTATE_FEATURE_NOT_SUPPORTED,
                               "the extended query protocol is not supported");
                return;
        }
        if (p.ntypes > c->types_cap) {
                uint32_t *t = realloc(c->types, p.ntypes * sizeof(uint32_t));

                if (!t) {
                        conn_ext_error(c, PGCODEC_SQLSTATE_OUT_OF_MEMORY, "out of memory");
                        return;
                }
                c->types = t;
                c->types_cap = p.ntypes;
        }
        for (unsigned i = 0; i < p.ntypes; i++)
                c->types[i] = pgcodec_parse_type(&p, i);

        c->req = REQ_PREPARE;
        c->req_name = p.name;
        pgw_req_probe_start(c, 'P', p.query);
        s->in_callback++;
        s->cb.prepare(c, p.query, p.ntypes, c->types, s->userdata);
        s->in_callback--;
}

/* Bind: check formats and counts, turn binary parameters into text, make the portal. */
void conn_handle_bind(struct pgwire_conn *c, const struct pgcodec_frame *f)
{
        _cleanup_free_ struct pgcodec_value *raw = NULL;
        _cleanup_free_ size_t *offs = NULL;
        struct pgcodec_buf vals;
        struct portal *p = NULL, *old;
        struct pgcodec_bind b;
        struct stmt *st;
        unsigned nres;

        if (pgcodec_parse_bind(f, &b) < 0) {
                conn_protocol_violation(c, -EBADMSG, "invalid Bind message");
                return;
        }
        st = pgw_stmt_find(c, b.statement);
        if (!st) {
                conn_ext_error(c, PGCODEC_SQLSTATE_INVALID_SQL_STATEMENT_NAME,
                               "prepared statement \"%s\" does not exist", b.statement);
                return;
        }
        if (b.nparams != st->nparams) {
                conn_ext_error(c, PGCODEC_SQLSTATE_PROTOCOL_VIOLATION,
                               "bind message supplies %u parameters, but prepared "
                               "statement \"%s\" requires %u",
                               b.nparams, b.statement, st->nparams);
                return;
        }
        nres = st->ncolumns;
        if (b.nresult_formats > 1 && b.nresult_formats != nres) {
                conn_ext_error(c, PGCODEC_SQLSTATE_PROTOCOL_VIOLATION,
                               "bind message has %u result formats but query has %u columns",
                               b.nresult_formats, nres);
                return;
        }
        for (unsigned i = 0; i < nres && b.nresult_formats > 0; i++) {
                int16_t fmt = pgcodec_bind_result_format(&b, i);

                if (fmt != PGCODEC_FORMAT_TEXT && fmt != PGCODEC_FORMAT_BINARY) {
                        conn_ext_error(c, PGCODEC_SQLSTATE_INVALID_PARAMETER_VALUE,
                                       "unsupported format code: %d", fmt);
                        return;
                }
                if (fmt == PGCODEC_FORMAT_BINARY && !pgcodec_type_has_binary(st->columns[i].type)) {
                        conn_ext_error(c, PGCODEC_SQLSTATE_UNDEFINED_FUNCTION,
                                       "no binary output function available for type %u",
                                       st->columns[i].type);
                        return;
                }
        }
        if (*b.portal && portal_find(c, b.portal)) {
                conn_ext_error(c, PGCODEC_SQLSTATE_DUPLICATE_CURSOR,
                               "portal \"%s\" already exists", b.portal);
                return;
        }

        /* Parameters: all as NUL-terminated text in one buffer. */
        pgcodec_buf_init(&vals, 0);
        raw = calloc(b.nparams ? b.nparams : 1, sizeof(*raw));
        offs = calloc(b.nparams ? b.nparams : 1, sizeof(*offs));
        if (!raw || !offs)
                goto nomem;
        pgcodec_bind_params(&b, raw);
        for (unsigned i = 0; i < b.nparams; i++) {
                int16_t fmt = pgcodec_bind_format(&b, i);
                uint32_t type = st->param_types[i] ? st->param_types[i] : PGCODEC_OID_UNKNOWN;
                int r;

                offs[i] = vals.len;
                if (raw[i].len < 0)
                        continue;
                if (fmt == PGCODEC_FORMAT_TEXT) {
                        if (memchr(raw[i].data, 0, (size_t)raw[i].len)) {
                                conn_ext_error(c, "22021",
                                               "invalid byte sequence for encoding \"UTF8\": 0x00");
                                goto fail;
                        }
                        pgcodec_put_bytes(&vals, raw[i].data, (size_t)raw[i].len);
                        pgcodec_put_u8(&vals, 0);
                        continue;
                }
                if (fmt != PGCODEC_FORMAT_BINARY) {
                        conn_ext_error(c, PGCODEC_SQLSTATE_INVALID_PARAMETER_VALUE,
                                       "unsupported format code: %d", fmt);
                        goto fail;
                }
                r = pgcodec_binary_to_text(type, raw[i].data, (size_t)raw[i].len, &vals);
                if (r == -EOPNOTSUPP) {
                        conn_ext_error(c, PGCODEC_SQLSTATE_UNDEFINED_FUNCTION,
                                       "no binary input function available for type %u", type);
                        goto fail;
                }
                if (r < 0) {
                        conn_ext_error(c, PGCODEC_SQLSTATE_INVALID_BINARY_REPRESENTATION,
                                       "incorrect binary data format in bind parameter %u", i + 1);
                        goto fail;
                }
        }
        if (pgcodec_buf_error(&vals) < 0)
                goto nomem;

        p = calloc(1, sizeof(*p));
        if (!p)
                goto nomem;
        pgcodec_buf_init(&p->spill, c->srv->cfg.max_output);
        p->name = strdup(b.portal);
        p->params = calloc(b.nparams ? b.nparams : 1, sizeof(*p->params));
        if (!p->name || !p->params)
                goto nomem;
        if (nres > 0 && b.nresult_formats > 0) {
                bool any_binary = false;

                for (unsigned i = 0; i < nres; i++)
                        any_binary |= pgcodec_bind_result_format(&b, i) == PGCODEC_FORMAT_BINARY;
                if (any_binary) {
                        p->formats = calloc(nres, sizeof(int16_t));
                        if (!p->formats)
                                goto nomem;
                        for (unsigned i = 0; i < nres; i++)
                                p->formats[i] = pgcodec_bind_result_format(&b, i);
                }
        }
        p->values = (char *)TAKE_PTR(vals.data);
        p->nparams = b.nparams;
        for (unsigned i = 0; i < b.nparams; i++) {
                p->params[i].type = st->param_types[i];
                if (raw[i].len < 0)
                        continue;
                p->params[i].value = p->values + offs[i];
                p->params[i].len = strlen(p->params[i].value);
        }
        p->stmt = st;
        st->refs++;

        /* The unnamed portal is replaced by the next Bind to it. */
        old = portal_find(c, p->name);
        if (old)
                portal_unlink(c, old);
        p->next = c->portals;
        c->portals = p;
        pgcodec_put_empty(&c->out, '2');
        (void)conn_out_check(c);
        pgcodec_buf_done(&vals);
        return;

nomem:
        conn_ext_error(c, PGCODEC_SQLSTATE_OUT_OF_MEMORY, "out of memory");
fail:
        if (p)
                portal_free(c, p);
        pgcodec_buf_done(&vals);
}

static void conn_put_description(struct pgwire_conn *c, const struct stmt *st,
                                 const int16_t *formats)
{
        if (st->returns_rows)
                pgcodec_put_row_description(&c->out, st->ncolumns, st->columns, formats);
        else
                pgcodec_put_empty(&c->out, 'n');
}

void conn_handle_describe(struct pgwire_conn *c, const struct pgcodec_frame *f)
{
        struct pgcodec_target t;

        if (pgcodec_parse_target(f, &t) < 0) {
                conn_protocol_violation(c, -EBADMSG, "invalid Describe message");
                return;
        }
        if (t.kind == 'S') {
                struct stmt *st = pgw_stmt_find(c, t.name);

                if (!st) {
                        conn_ext_error(c, PGCODEC_SQLSTATE_INVALID_SQL_STATEMENT_NAME,
                                       "prepared statement \"%s\" does not exist", t.name);
                        return;
                }
                pgcodec_put_parameter_description(&c->out, st->nparams, st->param_types);
                conn_put_description(c, st, NULL);
        } else {
                struct portal *p = portal_find(c, t.name);

                if (!p) {
                        conn_ext_error(c, PGCODEC_SQLSTATE_INVALID_CURSOR_NAME,
                                       "portal \"%s\" does not exist", t.name);
                        return;
                }
                conn_put_description(c, p->stmt, p->formats);
        }
        (void)conn_out_check(c);
}

void conn_handle_close(struct pgwire_conn *c, const struct pgcodec_frame *f)
{
        struct pgcodec_target t;

        if (pgcodec_parse_target(f, &t) < 0) {
                conn_protocol_violation(c, -EBADMSG, "invalid Close message");
                return;
        }
        /* Closing something that does not exist is not an error. */
        if (t.kind == 'S') {
                struct stmt *st = pgw_stmt_find(c, t.name);
                if (st)
                        pgw_stmt_unlink(c, st);
        } else {
                struct portal *p = portal_find(c, t.name);
                if (p)
                        portal_unlink(c, p);
        }
        pgcodec_put_empty(&c->out, '3');
        (void)conn_out_check(c);
}

/* Send up to max_rows (0: all) of a suspended portal's rows, then the tag or
 * PortalSuspended. */
static void portal_resume(struct pgwire_conn *c, struct portal *p, uint32_t max_rows)
{
        size_t start = p->spill_off;
        uint64_t n = 0;

        assert(p->state == PORTAL_SUSPENDED);
        while (p->spill_off < p->spill.len && (max_rows == 0 || n < max_rows)) {
                /* Each entry is a whole DataRow: 'D', length, fields. */
                p->spill_off += 1 + pgw_get_be32(p->spill.data + p->spill_off + 1);
                n++;
        }
        assert(p->spill_off <= p->spill.len);
        pgcodec_put_bytes(&c->out, p->spill.data + start, p->spill_off - start);
        if (p->spill_off < p->spill.len) {
                pgcodec_put_empty(&c->out, 's');
        } else {
                pgcodec_buf_done(&p->spill);
                p->spill_off = 0;
                p->state = PORTAL_DONE;
                pgcodec_put_command_complete(&c->out, p->tag ? p->tag : "SELECT 0");
        }
        (void)conn_out_check(c);
}

void conn_handle_execute(struct pgwire_conn *c, const struct pgcodec_frame *f)
{
        struct pgwire_server *s = c->srv;
        struct pgcodec_execute e;
        struct portal *p;

        if (pgcodec_parse_execute(f, &e) < 0) {
                conn_protocol_violation(c, -EBADMSG, "invalid Execute message");
                return;
        }
        p = portal_find(c, e.portal);
        if (!p) {
                conn_ext_error(c, PGCODEC_SQLSTATE_INVALID_CURSOR_NAME,
                               "portal \"%s\" does not exist", e.portal);
                return;
        }
        switch (p->state) {
        case PORTAL_SUSPENDED:
                portal_resume(c, p, e.max_rows);
                return;
        case PORTAL_DONE:
                /* Run to completion already: nothing more to fetch. */
                if (p->empty)
                        pgcodec_put_empty(&c->out, 'I');
                else
                        pgcodec_put_command_complete(&c->out, p->tag ? p->tag : "SELECT 0");
                (void)conn_out_check(c);
                return;
        case PORTAL_READY:
                break;
        }
        if (!s->cb.execute) {
                conn_ext_error(c, PGCODEC_SQLSTATE_FEATURE_NOT_SUPPORTED,
                               "the extended query protocol is not supported");
                return;
        }
        c->req = REQ_EXECUTE;
        c->req_portal = p;
        pgw_req_probe_start(c, 'E', "");
        c->req_max_rows = e.max_rows;
        c->req_rows = 0;
        c->req_result = false;
        s->in_callback++;
        s->cb.execute(c, p->stmt->owner, p->nparams, p->params, s->userdata);
        s->in_callback--;
}

