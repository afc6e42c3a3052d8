/* adapter-exec-groups.c -- the statement executor's append groups (2): statements'
 * writes and the built-in rows of DDL and publications queued into groups, one Append
 * in flight at a time, a group nobody waits for held (6), the writer mark (8), the upper
 * tick; and the read fence (3).
 *
 * The numbered notes are in adapter-exec.c (NOTES ON THE DESIGN).  What the executor's
 * files share is adapter-exec-internal.h.  Loop thread only.
 */
#include "adapter-exec-internal.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter-commit.h"
#include "adapter-oracle.h"
#include "catalog/catalog.h"
#include "log.h"
#include "loop/loop.h"
#include "node/node.h"
#include "util.h"

/* ---- groups ---- */

struct group *group_open(struct exec *ex)
{
        struct group *g;

        for (g = ex->groups; g && g->next; g = g->next)
                ;
        if (g && !g->closed)
                return g;
        g = calloc(1, sizeof(*g));
        if (!g)
                return NULL;
        *ex->groups_tail = g;
        ex->groups_tail = &g->next;
        return g;
}

struct group *group_last(struct exec *ex)
{
        struct group *g = ex->groups;

        while (g && g->next)
                g = g->next;
        return g;
}

int group_add(struct exec *ex, struct write *w)
{
        struct group *g;

        if (w->kind == WRITE_DELETE) {
                /* A DELETE reads the table's contents: alone in its group, so every
                 * earlier write is applied before it reads. */
                struct group *last = ex->groups;
                while (last && last->next)
                        last = last->next;
                if (last && !last->closed && last->n > 0)
                        last->closed = true;
        }
        g = group_open(ex);
        if (!g)
                return -ENOMEM;
        if (g->n == g->cap) {
                size_t cap = g->cap ? g->cap * 2 : 8;
                struct write *nw = realloc(g->writes, cap * sizeof(*nw));
                if (!nw)
                        return -ENOMEM;
                g->writes = nw;
                g->cap = cap;
        }
        g->writes[g->n++] = *w;
        if (w->kind == WRITE_DELETE)
                g->closed = true;
        if (!ex->hold_kick)
                groups_kick(ex);
        return 0;
}

/* Writes w[0..n), one unit (w[n - 1].n_block == n), in a group of their own: one of
 * them reads the table (a plan write), so no other write may come before it in its
 * group (group_add()).  Takes the writes, also on failure. */
int group_add_unit(struct exec *ex, struct write *w, size_t n)
{
        struct group *last = ex->groups, *g;

        assert(n > 0 && w[n - 1].n_block == n);
        while (last && last->next)
                last = last->next;
        if (last && !last->closed && last->n > 0)
                last->closed = true;
        g = group_open(ex);
        if (g && g->n + n > g->cap) {
                size_t cap = g->cap ? g->cap * 2 : 8;
                struct write *nw;

                while (cap < g->n + n)
                        cap *= 2;
                nw = realloc(g->writes, cap * sizeof(*nw));
                if (nw) {
                        g->writes = nw;
                        g->cap = cap;
                }
        }
        if (!g || g->n + n > g->cap) {
                for (size_t i = 0; i < n; i++)
                        write_done(&w[i]);
                return -ENOMEM;
        }
        memcpy(g->writes + g->n, w, n * sizeof(*w));
        g->n += n;
        g->closed = true;
        if (!ex->hold_kick)
                groups_kick(ex);
        return 0;
}

uint64_t exec_appends_split(const struct exec *ex)
{
        return ex->appends_split;
}

uint64_t exec_requests_deferred(const struct exec *ex)
{
        return ex->requests_deferred;
}

size_t exec_client_writes_pending(const struct exec *ex)
{
        size_t n = 0;

        for (const struct group *g = ex->groups; g; g = g->next)
                for (size_t i = 0; i < g->n; i++)
                        n += g->writes[i].s != NULL;
        return n;
}

void write_done(struct write *w)
{
        free(w->table);
        for (size_t i = 0; i < w->n_rows; i++)
                free(w->rows[i]);
        free(w->rows);
        free(w->row_lens);
        free(w->diffs);
        free(w->conflict_key);
}

void group_free(struct group *g)
{
        for (size_t i = 0; i < g->n; i++)
                write_done(&g->writes[i]);
        free(g->writes);
        free(g);
}

static void group_acked(struct exec *ex, struct request *rq, const Coord__Envelope *reply);

/* (8) Whether g may carry the mark (origin, catalog_last_seq()), into mark. */
static bool group_mark(const struct exec *ex, const struct group *g, uint8_t mark[MARK_LEN])
{
        if (!ex->mark_origin || g->next || ex->reconcile_needed || ex->reconciling ||
            committer_in_flight(ex->committer))
                return false;
        be64_put(mark, ex->mark_origin);
        be64_put(mark + 8, catalog_last_seq(ex->store));
        return true;
}

/* The PRIMARY KEY and UNIQUE constraints of the table w writes, from the catalog, for
 * the controller to enforce (coord.proto TableWrite.unique_keys).  Every write of the
 * table carries them, so no row is written unchecked whatever the controller remembers.
 * The keys borrow the catalog's strings; free with write_keys_free(). */
static int write_keys(struct exec *ex, const struct write *w, Coord__TableWrite *tw)
{
        const struct acat_item *it = acat_by_gid(ex->cat, w->gid);
        Coord__UniqueKey *uk, **ukp;

        if (!it || !it->n_uniques)
                return 0;
        uk = calloc(it->n_uniques, sizeof(*uk));
        ukp = calloc(it->n_uniques, sizeof(*ukp));
        if (!uk || !ukp)
                goto oom;
        tw->unique_keys = ukp;
        for (size_t i = 0; i < it->n_uniques; i++) {
                const struct sql_unique *u = &it->uniques[i];

                coord__unique_key__init(&uk[i]);
                ukp[i] = &uk[i];
                tw->n_unique_keys = i + 1;
                uk[i].name = u->name;
                uk[i].columns = u->columns;
                uk[i].n_columns = u->n_columns;
                uk[i].column_names = calloc(u->n_columns ? u->n_columns : 1, sizeof(char *));
                if (!uk[i].column_names)
                        return -ENOMEM;
                uk[i].n_column_names = u->n_columns;
                for (size_t k = 0; k < u->n_columns; k++)
                        uk[i].column_names[k] = u->columns[k] < it->n_columns
                                                        ? it->columns[u->columns[k]].name : "?";
        }
        return 0;
oom:
        free(uk);
        free(ukp);
        return -ENOMEM;
}

/* The names of columns cols[0..n) of table t (borrowed), into a new array. */
static char **column_names(const struct acat_item *t, const uint32_t *cols, size_t n)
{
        char **v = calloc(n ? n : 1, sizeof(*v));

        for (size_t k = 0; v && k < n; k++)
                v[k] = t && cols[k] < t->n_columns ? t->columns[cols[k]].name : "?";
        return v;
}

/* Foreign key f of table c as the controller wants it, into *out (borrowing). */
static int fkey_of(const struct acat_item *c, const struct acat_item *p,
                   const struct sql_foreign_key *f, Coord__ForeignKey *out)
{
        coord__foreign_key__init(out);
        out->name = f->name;
        out->table = c->gid;
        out->table_name = c->name;
        out->columns = f->columns;
        out->n_columns = f->n_columns;
        out->ref_table = f->ref_id;
        out->ref_table_name = p ? p->name : "?";
        out->ref_columns = f->ref_columns;
        out->n_ref_columns = f->n_columns;
        out->column_names = column_names(c, f->columns, f->n_columns);
        out->n_column_names = f->n_columns;
        out->ref_column_names = column_names(p, f->ref_columns, f->n_columns);
        out->n_ref_column_names = f->n_columns;
        return out->column_names && out->ref_column_names ? 0 : -ENOMEM;
}

/* The FOREIGN KEY constraints of the table w writes and of the tables that reference it
 * (its dependents that are tables: adapter-catalog-ddl.c acat_create_table_begin()),
 * from the catalog, for the controller to enforce (coord.proto TableWrite.foreign_keys).
 * Every write of either side carries them, as write_keys() does the unique keys.  A
 * pending creation that references the table is not there yet: it has no rows. */
static int write_fkeys(struct exec *ex, const struct write *w, Coord__TableWrite *tw)
{
        const struct acat_item *it = acat_by_gid(ex->cat, w->gid);
        Coord__ForeignKey *fk, **fkp;
        size_t n = 0, k = 0;

        if (!it || it->kind != SQL_OBJECT_TABLE)
                return 0;
        n = it->n_fkeys;
        for (size_t i = 0; i < it->n_dependents; i++) {
                const struct acat_item *d = acat_by_gid(ex->cat, it->dependents[i]);

                for (size_t j = 0; d && d->kind == SQL_OBJECT_TABLE && j < d->n_fkeys; j++)
                        n += d->fkeys[j].ref_id == it->gid;
        }
        if (!n)
                return 0;
        fk = calloc(n, sizeof(*fk));
        fkp = calloc(n, sizeof(*fkp));
        if (!fk || !fkp) {
                free(fk);
                free(fkp);
                return -ENOMEM;
        }
        tw->foreign_keys = fkp;
        for (size_t j = 0; j < it->n_fkeys; j++) {
                fkp[k] = &fk[k];
                tw->n_foreign_keys = ++k;
                if (fkey_of(it, acat_by_gid(ex->cat, it->fkeys[j].ref_id), &it->fkeys[j], &fk[k - 1]) < 0)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < it->n_dependents; i++) {
                const struct acat_item *d = acat_by_gid(ex->cat, it->dependents[i]);

                for (size_t j = 0; d && d->kind == SQL_OBJECT_TABLE && j < d->n_fkeys; j++) {
                        if (d->fkeys[j].ref_id != it->gid)
                                continue;
                        fkp[k] = &fk[k];
                        tw->n_foreign_keys = ++k;
                        if (fkey_of(d, it, &d->fkeys[j], &fk[k - 1]) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

static void write_keys_free(Coord__TableWrite *tw)
{
        for (size_t i = 0; i < tw->n_foreign_keys; i++) {
                free(tw->foreign_keys[i]->column_names);
                free(tw->foreign_keys[i]->ref_column_names);
        }
        if (tw->foreign_keys)
                free(tw->foreign_keys[0]);      /* the array of foreign keys */
        free(tw->foreign_keys);
        tw->foreign_keys = NULL;
        tw->n_foreign_keys = 0;
        for (size_t i = 0; i < tw->n_unique_keys; i++)
                free(tw->unique_keys[i]->column_names);
        if (tw->n_unique_keys)
                free(tw->unique_keys[0]);       /* the array of keys */
        free(tw->unique_keys);
        tw->unique_keys = NULL;
        tw->n_unique_keys = 0;
}

size_t exec_frame_budget(const struct exec *ex)
{
        uint32_t m = node_max_frame(ex->node);

        return m > 2 * EXEC_FRAME_SLACK ? m - EXEC_FRAME_SLACK : m / 2;
}

/* Moves g's writes from at on into a new group right after it; g is closed. */
static int group_split(struct exec *ex, struct group *g, size_t at)
{
        struct group *h = calloc(1, sizeof(*h));

        assert(at > 0 && at < g->n && !g->rq);
        if (!h || !(h->writes = malloc((g->n - at) * sizeof(*h->writes)))) {
                free(h);
                return -ENOMEM;
        }
        memcpy(h->writes, g->writes + at, (g->n - at) * sizeof(*h->writes));
        h->n = h->cap = g->n - at;
        g->n = at;
        h->closed = g->closed;
        g->closed = true;
        h->next = g->next;
        g->next = h;
        if (ex->groups_tail == &g->next)
                ex->groups_tail = &h->next;
        if (ex->fence == g)
                ex->fence = h;          /* (3) later, so still a fence for every row */
        return 0;
}

/* (2a) g's Append, whose writes are twp[0..g->n), would pass the budget.  g keeps the
 * longest run of whole units that fits -- a unit is a block's writes (the last one's
 * n_block counts them), else one write -- and the rest goes to a group after it:
 * -E2BIG, send g again.  When its first unit alone passes, g keeps just that one, its
 * size in g->oversize: -EMSGSIZE. */
static int group_fit(struct exec *ex, struct group *g, Coord__TableWrite *const *twp)
{
        _cleanup_free_ size_t *unit_end = malloc(g->n * sizeof(*unit_end));
        size_t budget = exec_frame_budget(ex), used = 64 + MARK_LEN, i = 0, ub = 0, at;
        int r;

        if (!unit_end)
                return -ENOMEM;
        for (size_t j = g->n; j > 0;) {
                size_t nb = g->writes[j - 1].n_block > 1 ? g->writes[j - 1].n_block : 1;

                assert(nb <= j);
                unit_end[j - nb] = j - 1;
                j -= nb;
        }
        while (i < g->n) {
                ub = 0;
                for (size_t k = i; k <= unit_end[i]; k++)
                        ub += coord__table_write__get_packed_size(twp[k]) + 8;
                if (used + ub > budget)
                        break;
                used += ub;
                i = unit_end[i] + 1;
        }
        assert(i < g->n);
        at = i ? i : unit_end[0] + 1;
        if (at < g->n) {
                r = group_split(ex, g, at);
                if (r < 0)
                        return r;
        }
        if (i) {
                ex->appends_split++;
                return -E2BIG;
        }
        g->oversize = ub;
        return -EMSGSIZE;
}

static int group_send_once(struct exec *ex, struct group *g)
{
        Coord__Append msg = COORD__APPEND__INIT;
        Coord__TableWrite *tw = NULL, **twp = NULL;
        ProtobufCBinaryData *rows = NULL;
        uint8_t mark[MARK_LEN];
        size_t n_rows = 0, k = 0, n_tw = 0, len;
        int r;

        assert(!g->rq);
        r = oracle_append_ts(ex->oracle, &g->ts);      /* may be a DDL's birth ts */
        if (r < 0)
                return r;
        for (size_t i = 0; i < g->n; i++)
                n_rows += g->writes[i].n_rows;
        if (g->n) {
                tw = calloc(g->n, sizeof(*tw));
                twp = calloc(g->n, sizeof(*twp));
                rows = calloc(n_rows ? n_rows : 1, sizeof(*rows));
                if (!tw || !twp || !rows) {
                        r = -ENOMEM;
                        goto out;
                }
        }
        for (size_t i = 0; i < g->n; i++) {
                struct write *w = &g->writes[i];
                coord__table_write__init(&tw[i]);
                n_tw = i + 1;
                tw[i].gid = w->gid;
                if (w->n_block > 1)
                        tw[i].block = w->n_block;
                r = write_keys(ex, w, &tw[i]);
                if (r >= 0)
                        r = write_fkeys(ex, w, &tw[i]);
                if (r < 0)
                        goto out;
                tw[i].rows = rows + k;
                tw[i].n_rows = w->n_rows;
                for (size_t j = 0; j < w->n_rows; j++, k++) {
                        rows[k].data = w->rows[j];
                        rows[k].len = w->row_lens[j];
                }
                if (w->diffs) {
                        tw[i].diffs = w->diffs;
                        tw[i].n_diffs = w->n_rows;
                }
                tw[i].delete_filter = w->delete_filter;
                tw[i].update = w->update;
                tw[i].insert_select = w->insert_select;
                tw[i].returning = w->returning;
                tw[i].on_conflict_skip = w->on_conflict_skip;
                tw[i].eval_timeout_ms = w->eval_timeout_ms;
                if (w->conflict_key)
                        tw[i].conflict_key = w->conflict_key;
                twp[i] = &tw[i];
        }
        msg.ts = g->ts;
        msg.n_writes = g->n;
        msg.writes = twp;
        g->mark = 0;
        if (group_mark(ex, g, mark)) {
                msg.writer_mark.data = mark;
                msg.writer_mark.len = MARK_LEN;
                g->mark = be64_get(mark + 8);
        }
        len = coord__append__get_packed_size(&msg);
        if (len > exec_frame_budget(ex)) {
                g->mark = 0;            /* not sent */
                r = group_fit(ex, g, twp);
                goto out;
        }
        g->closed = true;
        g->rq = request_new_sized(ex, COORD__MSG_TYPE__MSG_APPEND, &msg.base, len, group_acked, g);
        if (!g->rq)
                r = -ENOMEM;
        ex->groups_sent++;
        ex->last_group_ms = now_ms();
out:
        for (size_t i = 0; i < n_tw; i++)
                write_keys_free(&tw[i]);
        free(tw);
        free(twp);
        free(rows);
        return r;
}

/* Sends g, first split to fit (2a): <0 when nothing was sent, -EMSGSIZE when g holds
 * one unit too large to send. */
int group_send(struct exec *ex, struct group *g)
{
        int r;

        while ((r = group_send_once(ex, g)) == -E2BIG)
                ;
        return r;
}

/* Send the held group now instead of at the end of its hold (6). */
void hold_release(struct exec *ex)
{
        if (ex->hold) {
                loop_timer_cancel(node_loop(ex->node), ex->hold);
                ex->hold = NULL;
        }
        ex->hold_done = true;
        groups_kick(ex);
}

static void on_hold(struct loop *l, void *userdata)
{
        struct exec *ex = userdata;

        ex->hold = NULL;        /* fired: nothing to cancel */
        hold_release(ex);
}

/* Whether anybody waits for g: a statement, or a read for the fence. */
static bool group_awaited(const struct exec *ex, const struct group *g)
{
        if (ex->fence_waiters)
                return true;
        for (size_t i = 0; i < g->n; i++)
                if (g->writes[i].s)
                        return true;
        return false;
}

/* A group nobody waits for is held this long (6). */
#ifndef EXEC_HOLD_US
#define EXEC_HOLD_US 16000u
#endif

const uint64_t reconcile_gids[3] = { ACAT_GID_OBJECTS, ACAT_GID_BOUNDS, ACAT_GID_REQUIREMENTS };

bool group_writes_builtin_rows(const struct group *g)
{
        for (size_t i = 0; i < g->n; i++)
                for (size_t k = 0; k < ELEMENTSOF(reconcile_gids); k++)
                        if (g->writes[i].gid == reconcile_gids[k] && g->writes[i].n_rows)
                                return true;
        return false;
}

/* Send the head group when nothing is in flight.  A group nobody waits for is held (6). */
void groups_kick(struct exec *ex)
{
        struct group *g = ex->groups;
        int r;

        if (!g || g->rq || !ex->controller_up || ex->resyncing)
                return;
        /* (5) While the built-ins are read, only groups without their rows go: the upper
         * keeps moving (reads at "now" are served), their contents stay what is read. */
        if (ex->reconciling && group_writes_builtin_rows(g))
                return;
        if (ex->cfg.test_hold_builtin_rows && group_writes_builtin_rows(g))
                return;         /* TEST ONLY */
        if (!ex->hold_done && !group_awaited(ex, g)) {
                if (ex->hold)
                        return;
                r = loop_timer_add(node_loop(ex->node), EXEC_HOLD_US * 1000ull, on_hold, ex, &ex->hold);
                if (r >= 0)
                        return;
                log_error_errno(r, "hold_timer_failed", "");
        }
        ex->hold_done = false;
        r = group_send(ex, g);
        if (r < 0) {
                /* Not sent, and it would not be later either (its timestamp needs the
                 * oracle's mark in the catalog, or memory): answer its writers now,
                 * instead of leaving them -- and every group behind it -- waiting. */
                Coord__Error err = COORD__ERROR__INIT;
                bool cat = catalog_error(ex->store) < 0;
                char msg[320];

                /* Once per failing spell: the tick's empty groups fail every tick. */
                if (!ex->group_send_failing)
                        log_error_errno(r, "group_send_failed", "writes=%zu", g->n);
                ex->group_send_failing = true;
                if (cat)
                        snprintf(msg, sizeof(msg), "the catalog is not writable since a write failed "
                                 "(%s); restart coord-adapter to recover", catalog_reason(ex, r));
                else if (r == -EMSGSIZE)
                        snprintf(msg, sizeof(msg), "the write is %zu bytes encoded, over the %zu "
                                 "bytes one append to the controller may hold (--max-frame-bytes "
                                 "less %u): write it in smaller statements or transactions",
                                 g->oversize, exec_frame_budget(ex), EXEC_FRAME_SLACK);
                else
                        snprintf(msg, sizeof(msg), "the write could not be sent: %s", strerror(-r));
                err.sqlstate = (char *)(cat ? io_sqlstate(catalog_error(ex->store))
                                            : r == -EMSGSIZE ? "54000" : "XX000");
                err.message = msg;
                group_complete(ex, g, NULL, &err);      /* kicks the next group */
                return;
        }
        ex->group_send_failing = false;
        fence_check(ex);
}

/* Whether a statement's table is gone from the catalog, or going (a DROP committing). */
bool table_gone(const struct exec *ex, uint64_t gid)
{
        const struct acat_item *it = acat_by_gid(ex->cat, gid);

        return !it || it->dropping;
}

/* A write to a table dropped meanwhile, as PostgreSQL says it. */
void send_table_gone(struct pgwire_conn *c, const char *table)
{
        send_error(c, "42P01", "relation \"%s\" does not exist", table);
}

/* The error of a failed group for w's statement.  The controller names a collection
 * that does not exist by its gid (42P01): when it is w's table, dropped while w waited
 * in its group, the client gets the name it wrote to. */
static void send_write_error(struct exec *ex, const struct write *w, const Coord__Error *err)
{
        const char *sqlstate = err->sqlstate && *err->sqlstate ? err->sqlstate : "XX000";
        struct row_error re = { .position = 0 };

        if (strcmp(sqlstate, "42P01") == 0 && w->table && table_gone(ex, w->gid)) {
                send_table_gone(w->s->c, w->table);
                return;
        }
        snprintf(re.sqlstate, sizeof(re.sqlstate), "%s", sqlstate);
        snprintf(re.message, sizeof(re.message), "%s", err->message && *err->message ? err->message
                                                                               : "write failed");
        snprintf(re.detail, sizeof(re.detail), "%s", err->detail ? err->detail : "");
        snprintf(re.hint, sizeof(re.hint), "%s", err->hint ? err->hint : "");
        send_row_error(w->s->c, &re);
}

/* The error of write i of an applied group that failed alone (Ok.failures), or NULL. */
static const Coord__Error *write_failure(const Coord__Ok *ok, size_t i)
{
        for (size_t k = 0; ok && k < ok->n_failures; k++)
                if (ok->failures[k]->write == i)
                        return ok->failures[k]->error ? ok->failures[k]->error
                                                      : &(const Coord__Error)COORD__ERROR__INIT;
        return NULL;
}

/* DELETE / UPDATE ... RETURNING of an applied write i: its rows from the Ok.  Without
 * the Ok (the group was found applied after the controller went away) they are lost:
 * an error rather than no rows.  0, or -ECANCELED with the error sent. */
static int group_returned(struct session *s, const Coord__Ok *ok, size_t i)
{
        const struct sql_stmt *st = s->stmt;

        if (!ok) {
                send_error(s->c, "40003", "the write was applied, but its RETURNING rows were "
                           "lost with the controller's answer");
                return -ECANCELED;
        }
        return exec_write_returned(s, st->kind == SQL_STMT_UPDATE   ? st->update.returning
                                      : st->kind == SQL_STMT_INSERT ? st->insert.select_returning
                                                                    : st->delete_.returning,
                                   ok, i);
}

void group_complete(struct exec *ex, struct group *g, const Coord__Ok *ok,
                    const Coord__Error *err)
{
        assert(ex->groups == g);
        ex->groups = g->next;
        if (!ex->groups)
                ex->groups_tail = &ex->groups;
        if (!err)
                oracle_write_applied(ex->oracle, g->ts);
        if (!err && g->mark)
                ex->mark_acked = g->mark;
        if (ex->fence == g)
                ex->fence = NULL;       /* applied: the oracle's read ts covers it (3) */
        for (size_t i = 0; i < g->n; i++) {
                struct write *w = &g->writes[i];
                struct session *s = w->s;
                const Coord__Error *failed = NULL;

                if (err && w->kind == WRITE_OBJECTS) {
                        /* Built-in rows lost, maybe of an acknowledged DDL: (5). */
                        log_warn("builtin_rows_lost", "gid=%llu rows=%zu action=reconcile",
                                 (unsigned long long)w->gid, w->n_rows);
                        ex->reconcile_needed = true;
                }
                if (!s)
                        continue;
                if (err || (failed = write_failure(ok, i))) {
                        if (!s->gone)
                                send_write_error(ex, w, err ? err : failed);
                        s->stmt = sql_stmt_free(s->stmt);
                        s->next = SIZE_MAX;     /* skip the rest of the string */
                } else {
                        w->result = ok && i < ok->n_counts ? ok->counts[i] : w->n_rows;
                        if (w->add_prev_count && ok && i > 0 && i - 1 < ok->n_counts)
                                w->result += ok->counts[i - 1];
                        ex->writes_acked++;
                        if (w->commit)
                                snprintf(s->tag, sizeof(s->tag), "COMMIT");
                        else if (w->kind == WRITE_INSERT)
                                snprintf(s->tag, sizeof(s->tag), "INSERT 0 %" PRIu64, w->result);
                        if (!w->commit && w->kind == WRITE_INSERT && s->stmt &&
                            s->stmt->kind == SQL_STMT_INSERT && s->stmt->insert.returning &&
                            !s->gone && exec_returning(s, s->stmt->insert.returning, true) < 0) {
                                s->stmt = sql_stmt_free(s->stmt);       /* its error went */
                                s->next = SIZE_MAX;
                        }
                        else if (w->kind == WRITE_DELETE && w->returning && s->stmt && !s->gone &&
                                 group_returned(s, ok, i) < 0) {
                                s->stmt = sql_stmt_free(s->stmt);       /* its error went */
                                s->next = SIZE_MAX;
                        }
                        if (w->kind == WRITE_DELETE && w->insert_select)
                                snprintf(s->tag, sizeof(s->tag), "INSERT 0 %" PRIu64, w->result);
                        else if (w->kind == WRITE_DELETE)
                                snprintf(s->tag, sizeof(s->tag), "%s %" PRIu64,
                                         w->update ? "UPDATE" : "DELETE", w->result);
                }
                s->waiting = false;
                session_resume(s);
        }
        group_free(g);
        reconcile_maybe(ex);    /* before the next group goes */
        groups_kick(ex);
        fence_check(ex);
}

static void group_acked(struct exec *ex, struct request *rq, const Coord__Envelope *reply)
{
        struct group *g = rq->ctx;
        Coord__Ok *ok = NULL;
        Coord__Error *err = NULL;

        g->rq = NULL;
        if (reply->type == COORD__MSG_TYPE__MSG_OK)
                ok = coord__ok__unpack(NULL, reply->payload.len, reply->payload.data);
        else
                err = coord__error__unpack(NULL, reply->payload.len, reply->payload.data);
        if (!ok && !err)
                log_error("controller_reply_malformed", "type=%d", (int)reply->type);
        if (err)
                log_warn("append_failed", "ts=%llu sqlstate=%s message=\"%s\"",
                         (unsigned long long)g->ts, err->sqlstate, err->message);
        group_complete(ex, g, ok, err);
        if (ok)
                coord__ok__free_unpacked(ok, NULL);
        if (err)
                coord__error__free_unpacked(err, NULL);
}

/* The upper tick: an empty group when nothing was written for a tick. */
void on_tick(struct loop *l, void *userdata)
{
        struct exec *ex = userdata;
        int r;

        ex->tick = NULL;
        if (ex->enact_waiters)
                exec_on_frontiers(ex);          /* deadlines */
        reconcile_maybe(ex);
        if (ex->controller_up && ex->n_unsent)
                requests_retry(ex);
        if (ex->controller_up && !ex->groups && now_ms() - ex->last_group_ms >= ex->cfg.tick_ms) {
                struct group *g = group_open(ex);
                if (g)
                        groups_kick(ex);
        }
        r = loop_timer_add(l, (uint64_t)ex->cfg.tick_ms * 1000000ull, on_tick, ex, &ex->tick);
        if (r < 0)
                log_error_errno(r, "tick_timer_failed", "");
}

/* A coord_objects row: (id, name, kind, create_sql). */
int objects_write(struct exec *ex, struct session *s, const struct acat_item *it, int64_t diff)
{
        struct row_datum d[4] = {
                ROW_DATUM_INT((int64_t)it->gid),
                ROW_DATUM_TEXT(it->name, (uint32_t)strlen(it->name)),
                ROW_DATUM_TEXT(acat_kind_name(it->kind), (uint32_t)strlen(acat_kind_name(it->kind))),
                ROW_DATUM_TEXT(it->create_sql, (uint32_t)strlen(it->create_sql)),
        };
        struct write w = { .kind = WRITE_OBJECTS, .s = s, .gid = ACAT_GID_OBJECTS, .n_rows = 1 };
        int r;

        w.rows = calloc(1, sizeof(*w.rows));
        w.row_lens = calloc(1, sizeof(*w.row_lens));
        w.diffs = calloc(1, sizeof(*w.diffs));
        if (!w.rows || !w.row_lens || !w.diffs) {
                r = -ENOMEM;
                goto fail;
        }
        w.diffs[0] = diff;
        r = row_encode(d, ELEMENTSOF(d), &w.rows[0], &w.row_lens[0]);
        if (r < 0)
                goto fail;
        r = group_add(ex, &w);
        if (r < 0)
                goto fail;
        return 0;
fail:
        write_done(&w);
        return r;
}

/* Append n rows of `arity` int8 columns (vals, row by row) with their diffs to the
 * built-in gid, in the open group; nobody waits for them. */
static int int_rows_write(struct exec *ex, uint64_t gid, size_t arity, const int64_t *vals,
                          const int64_t *diffs, size_t n)
{
        struct write w = { .kind = WRITE_OBJECTS, .gid = gid };
        struct row_datum d[4];
        int r = 0;

        assert(arity <= ELEMENTSOF(d));
        if (!n)
                return 0;
        w.rows = calloc(n, sizeof(*w.rows));
        w.row_lens = calloc(n, sizeof(*w.row_lens));
        w.diffs = calloc(n, sizeof(*w.diffs));
        if (!w.rows || !w.row_lens || !w.diffs)
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                for (size_t c = 0; c < arity; c++)
                        d[c] = ROW_DATUM_INT(vals[i * arity + c]);
                w.diffs[i] = diffs[i];
                r = row_encode(d, arity, &w.rows[i], &w.row_lens[i]);
                if (r >= 0)
                        w.n_rows++;
        }
        if (r >= 0) {
                r = group_add(ex, &w);
                if (r >= 0)
                        return 0;
        }
        write_done(&w);
        return r;
}

/* The rows of coord_bounds (object_id, bound) and coord_requirements (consumer_id,
 * input_id, frontier) that a transaction changes: a retraction of the old row, an
 * insertion of the new one. */
static int protection_write(struct exec *ex, const struct acat_txn *txn)
{
        const struct acat_bound_change *bc;
        const struct acat_req_change *rc;
        size_t nb = acat_txn_bound_changes(txn, &bc), nr = acat_txn_req_changes(txn, &rc), k = 0;
        size_t most = 2 * (nb > nr ? nb : nr);
        _cleanup_free_ int64_t *vals = calloc(3 * (most ? most : 1), sizeof(*vals));
        _cleanup_free_ int64_t *diffs = calloc(most ? most : 1, sizeof(*diffs));
        int r;

        if (!vals || !diffs)
                return -ENOMEM;
        /* Timestamps and GlobalIds are below 2^63; int8 is signed. */
        for (size_t i = 0; i < nb; i++) {
                if (bc[i].had_old) {
                        vals[2 * k] = (int64_t)bc[i].gid, vals[2 * k + 1] = (int64_t)bc[i].old;
                        diffs[k++] = -1;
                }
                if (bc[i].has_new) {
                        vals[2 * k] = (int64_t)bc[i].gid, vals[2 * k + 1] = (int64_t)bc[i].new_;
                        diffs[k++] = +1;
                }
        }
        r = int_rows_write(ex, ACAT_GID_BOUNDS, 2, vals, diffs, k);
        if (r < 0)
                return r;
        k = 0;
        for (size_t i = 0; i < nr; i++)
                for (int side = 0; side < 2; side++) {
                        if (side == 0 ? !rc[i].had_old : !rc[i].has_new)
                                continue;
                        vals[3 * k] = (int64_t)rc[i].consumer;
                        vals[3 * k + 1] = (int64_t)rc[i].input;
                        vals[3 * k + 2] = (int64_t)(side == 0 ? rc[i].old : rc[i].new_);
                        diffs[k++] = side == 0 ? -1 : +1;
                }
        return int_rows_write(ex, ACAT_GID_REQUIREMENTS, 3, vals, diffs, k);
}

/* Committed, but (some of) its built-in rows could not be queued: the catalog has
 * them, reconciliation (5) writes them.  Set before the next group is sent, so that
 * no writer mark (8) claims them. */
void rows_not_queued(struct exec *ex, int r, const char *what)
{
        log_error_errno(r, "builtin_rows_not_queued", "what=%s action=reconcile", what);
        ex->reconcile_needed = true;
}

void protection_queue(struct exec *ex, const struct acat_txn *txn)
{
        int r = protection_write(ex, txn);

        if (r < 0)
                rows_not_queued(ex, r, "protection_rows");
}

/* ---- (3) the read fence ---- */

/* Resume the reads that waited for the fence to be sent (or applied), in arrival
 * order. */
void fence_check(struct exec *ex)
{
        struct session *ready = NULL;

        if (!ex->fence_waiters || (ex->fence && !ex->fence->rq) || ex->reconcile_needed ||
            ex->reconciling)
                return;
        while (ex->fence_waiters) {
                struct session *s = ex->fence_waiters;

                ex->fence_waiters = s->enact_next;
                s->enact_next = ready;
                ready = s;
        }
        while (ready) {
                struct session *s = ready;

                ready = s->enact_next;
                s->enact_next = NULL;
                enact_retry(s);
        }
}
