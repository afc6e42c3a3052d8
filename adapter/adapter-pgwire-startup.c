/* adapter-pgwire-startup.c -- the startup phase of a PostgreSQL wire protocol
 * connection: the StartupMessage (parameters, the ParameterStatus replies, connect()),
 * SSLRequest/GSSENCRequest ('N') and CancelRequest (keys checked in constant time).
 *
 * The numbered notes are in adapter-pgwire.c (NOTES ON THE DESIGN OF A CONNECTION).
 * What the server's files share is adapter-pgwire-internal.h.  Loop thread only;
 * nothing logs.
 */
#include "adapter-pgwire-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- Startup ---------------------------------------------------------------------- */

static int conn_copy_params(struct pgwire_conn *c, const struct pgcodec_startup *st,
                            const char *user)
{
        bool has_db = pgcodec_startup_param(st, "database") != NULL;
        unsigned n = st->nparams + !has_db;
        size_t size = 0;
        char *p;

        for (unsigned i = 0; i < st->nparams; i++)
                size += strlen(st->names[i]) + strlen(st->values[i]) + 2;
        if (!has_db)
                size += sizeof("database") + strlen(user) + 1;

        c->param_names = calloc(n, sizeof(char *));
        c->param_values = calloc(n, sizeof(char *));
        c->param_block = malloc(size);
        if (!c->param_names || !c->param_values || !c->param_block)
                return -ENOMEM;
        p = c->param_block;
        for (unsigned i = 0; i < n; i++) {
                const char *name = i < st->nparams ? st->names[i] : "database";
                const char *value = i < st->nparams ? st->values[i] : user;
                size_t ln = strlen(name) + 1, lv = strlen(value) + 1;

                c->param_names[i] = memcpy(p, name, ln);
                p += ln;
                c->param_values[i] = memcpy(p, value, lv);
                p += lv;
        }
        c->nparams = n;
        return 0;
}

static void conn_startup(struct pgwire_conn *c, const struct pgcodec_startup *st)
{
        struct pgwire_server *s = c->srv;
        const char *unrecognized[PGCODEC_STARTUP_PARAMS_MAX];
        const char *user = pgcodec_startup_param(st, "user");
        const char *app;
        unsigned nunrec = 0;
        int r;

        if (!user || !*user) {
                conn_fatal(c, PGCODEC_SQLSTATE_INVALID_AUTHORIZATION, -EPROTO,
                           "no PostgreSQL user name specified in startup packet");
                return;
        }
        if (conn_copy_params(c, st, user) < 0) {
                conn_fatal(c, PGCODEC_SQLSTATE_OUT_OF_MEMORY, -ENOMEM, "out of memory");
                return;
        }

        /* Protocol 3.x with x > 0 or "_pq_." options: say what we speak (3.0), as
         * PostgreSQL 11+ does, instead of refusing the client. */
        for (unsigned i = 0; i < st->nparams; i++)
                if (strncmp(st->names[i], "_pq_.", 5) == 0)
                        unrecognized[nunrec++] = st->names[i];
        if (PGCODEC_PROTOCOL_MINOR(st->code) > 0 || nunrec > 0)
                pgcodec_put_negotiate_version(&c->out, 0, nunrec, unrecognized);

        pgcodec_put_auth_ok(&c->out);
        app = pgcodec_startup_param(st, "application_name");
        pgcodec_put_parameter_status(&c->out, "application_name", app ? app : "");
        pgcodec_put_parameter_status(&c->out, "client_encoding", "UTF8");
        pgcodec_put_parameter_status(&c->out, "DateStyle", "ISO, MDY");
        pgcodec_put_parameter_status(&c->out, "default_transaction_read_only", "off");
        pgcodec_put_parameter_status(&c->out, "in_hot_standby", "off");
        pgcodec_put_parameter_status(&c->out, "integer_datetimes", "on");
        pgcodec_put_parameter_status(&c->out, "IntervalStyle", "postgres");
        pgcodec_put_parameter_status(&c->out, "is_superuser", "off");
        pgcodec_put_parameter_status(&c->out, "server_encoding", "UTF8");
        pgcodec_put_parameter_status(&c->out, "server_version", s->cfg.server_version);
        pgcodec_put_parameter_status(&c->out, "session_authorization", user);
        pgcodec_put_parameter_status(&c->out, "standard_conforming_strings", "on");
        pgcodec_put_parameter_status(&c->out, "TimeZone", "UTC");
        if (conn_out_check(c) < 0)
                return;

        if (s->cb.connect) {
                c->req = REQ_CONNECT;
                s->in_callback++;
                r = s->cb.connect(c, s->userdata);
                s->in_callback--;
                c->req = REQ_NONE;
                c->req_failed = false;
                if (r < 0 || !conn_open(c)) {
                        if (conn_open(c))
                                conn_fatal(c, PGCODEC_SQLSTATE_INVALID_AUTHORIZATION, -EPERM,
                                           "connection refused");
                        return;
                }
        }
        c->accepted = true;
        pgcodec_put_backend_key(&c->out, c->pid, c->secret);
        pgcodec_put_ready(&c->out, c->txn_status);
        if (conn_out_check(c) < 0)
                return;
        c->state = CONN_READY;
        conn_flush(c);
}

/* Keys compared in constant time: the secret is the only thing guarding a cancel. */
static bool secret_matches(uint32_t secret, const uint8_t *p, size_t len)
{
        uint8_t want[4], diff = 0;

        if (len != sizeof(want))
                return false;
        pgw_set_be32(want, secret);
        for (size_t i = 0; i < sizeof(want); i++)
                diff |= (uint8_t)(want[i] ^ p[i]);
        return diff == 0;
}

static void conn_cancel_request(struct pgwire_conn *c, const struct pgcodec_startup *st)
{
        struct pgwire_server *s = c->srv;

        for (struct pgwire_conn *t = s->conns; t; t = t->next) {
                if (t == c || t->pid != st->cancel_pid)
                        continue;
                if (t->accepted && conn_open(t) &&
                    secret_matches(t->secret, st->cancel_secret, st->cancel_secret_len)) {
                        s->stats.cancels++;
                        if (s->cb.cancel) {
                                s->in_callback++;
                                s->cb.cancel(t, s->userdata);
                                s->in_callback--;
                        }
                }
                break;
        }
        /* PostgreSQL answers a CancelRequest with nothing but the close. */
        conn_close(c, 0);
}

void conn_handle_startup(struct pgwire_conn *c, const struct pgcodec_frame *f)
{
        struct pgcodec_startup st;
        uint32_t major;
        char msg[128];
        int r;

        r = pgcodec_parse_startup(f, &st);
        if (r == -E2BIG) {
                conn_protocol_violation(c, -EPROTO, "too many startup parameters");
                return;
        }
        if (r < 0) {
                conn_protocol_violation(c, -EBADMSG, "invalid startup packet layout");
                return;
        }
        switch (st.code) {
        case PGCODEC_SSL_REQUEST_CODE:
        case PGCODEC_GSSENC_REQUEST_CODE:
                /* No encryption: 'N', and the client goes on in the clear (or gives up,
                 * with sslmode=require). */
                pgcodec_put_u8(&c->out, 'N');
                if (conn_out_check(c) == 0)
                        conn_flush(c);
                return;
        case PGCODEC_CANCEL_REQUEST_CODE:
                conn_cancel_request(c, &st);
                return;
        default:
                break;
        }
        major = PGCODEC_PROTOCOL_MAJOR(st.code);
        if (major != 3) {
                snprintf(msg, sizeof(msg),
                         "unsupported frontend protocol %u.%u: server supports 3.0 to 3.0",
                         major, PGCODEC_PROTOCOL_MINOR(st.code));
                c->srv->stats.protocol_errors++;
                conn_fatal(c, PGCODEC_SQLSTATE_FEATURE_NOT_SUPPORTED, -EPROTO, msg);
                return;
        }
        conn_startup(c, &st);
}

