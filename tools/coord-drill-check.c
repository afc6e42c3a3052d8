/* coord-drill-check.c -- the drill's checks after every restart: rows and objects
 * against the expected state, frontiers (I1, I2, I5, I6), materialized views (I9),
 * tools/coord check (I10), the sink and the source (coord-drill.h notes 2-8). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coord-drill.h"
#include "util.h"

/* ---- checks ------------------------------------------------------------------------ */

/* A read for a check: 5 tries over ~6 s, reconnecting (also once the workload has
 * stopped); NULL and a read failure counted when all failed. */
static PGresult *check_read(struct drill *dr, PGconn **c, const char *sql)
{
        for (int attempt = 0; attempt < 5; attempt++) {
                PGresult *r;

                if (attempt)
                        msleep(200u << attempt);
                if (!*c) {
                        *c = PQconnectdb(dr->conninfo);
                        if (PQstatus(*c) != CONNECTION_OK) {
                                if (attempt == 4)
                                        note_error(dr, "a check's connection", *c, NULL);
                                PQfinish(*c);
                                *c = NULL;
                                continue;
                        }
                }
                r = exec_sql(dr, c, sql, attempt == 4 ? sql : NULL);
                if (r)
                        return r;
        }
        dr->read_failures++;
        return NULL;
}

static uint64_t val_u64(PGresult *r, int row, int col)
{
        return PQgetisnull(r, row, col) ? 0 : strtoull(PQgetvalue(r, row, col), NULL, 10);
}

/* coord-drill.h note 2: every table read once; the insert log's states snapshotted before.  Returns
 * the violations found. */
static uint64_t check_rows(struct drill *dr, PGconn **c)
{
        uint64_t bad = 0, *ids = NULL, *tab = NULL;
        size_t n0, n1, nids = 0, capids = 0, cap2 = 0;
        uint8_t *st = NULL, *cnt = NULL;
        char sql[128];

        pthread_mutex_lock(&dr->wlock);
        n0 = dr->nw;
        st = malloc(n0 + 1);
        for (size_t i = 0; st && i < n0; i++)
                st[i] = dr->w[i].state;
        pthread_mutex_unlock(&dr->wlock);
        if (!st)
                return 1;
        for (unsigned t = 0; t < dr->tables; t++) {
                PGresult *r;

                snprintf(sql, sizeof(sql), "SELECT id FROM drill_%s_t%u", dr->tag, t);
                if (!(r = check_read(dr, c, sql))) {
                        bad++;
                        continue;
                }
                if (GROW_ARRAY(ids, capids, nids + (size_t)PQntuples(r)) < 0 ||
                    GROW_ARRAY(tab, cap2, nids + (size_t)PQntuples(r)) < 0) {
                        PQclear(r);
                        bad++;
                        goto out;
                }
                for (int i = 0; i < PQntuples(r); i++) {
                        tab[nids] = t;
                        ids[nids++] = val_u64(r, i, 0);
                }
                PQclear(r);
        }

        pthread_mutex_lock(&dr->wlock);
        n1 = dr->nw;
        cnt = calloc(n1 + 1, 1);
        if (!cnt) {
                pthread_mutex_unlock(&dr->wlock);
                bad++;
                goto out;
        }
        for (size_t i = 0; i < nids; i++) {
                size_t k = (size_t)ids[i] - 1;
                if (ids[i] == 0 || k >= n1 || dr->w[k].table != tab[i]) {
                        if (dr->phantoms++ < 5)
                                fprintf(stderr, "drill: VIOLATION phantom row id=%" PRIu64 " in table t%" PRIu64
                                        " (never written there)\n", ids[i], tab[i]);
                        bad++;
                } else if (cnt[k] < 255)
                        cnt[k]++;
        }
        for (size_t k = 0; k < n1; k++) {
                struct wrow *w = &dr->w[k];
                uint8_t s = k < n0 ? st[k] : S_INFLIGHT;
                bool must = s == S_ACKED || (s == S_SEEN && w->seen_present);
                const char *v = NULL;

                if (w->trimmed) {
                        if (cnt[k]) {
                                v = "deleted by the drill and there again";
                                dr->reappeared += !w->reported;
                        }
                } else if (cnt[k] > 1) {
                        v = "duplicate";
                        dr->dups += !w->reported;
                } else if (must && cnt[k] == 0) {
                        v = s == S_ACKED ? "acknowledged and missing" : "read at an earlier check and missing";
                        if (!w->reported)
                                *(s == S_ACKED ? &dr->lost : &dr->vanished) += 1;
                } else if (s == S_SEEN && !w->seen_present && cnt[k]) {
                        v = "absent at an earlier check and there now";
                        dr->reappeared += !w->reported;
                } else if (k > 0 && w->stmt == dr->w[k - 1].stmt && !cnt[k] != !cnt[k - 1]) {
                        /* coord-drill.h note 2: one statement, one table, one read: all its rows or none */
                        v = "half an INSERT (its other rows differ)";
                        dr->half += !w->reported;
                }
                if (v && !w->reported) {
                        fprintf(stderr, "drill: VIOLATION row id=%zu (table t%u, present %u times): %s\n", k + 1,
                                w->table, cnt[k], v);
                        w->reported = true;
                        bad++;
                }
                /* coord-drill.h note 3: resolve a failure recorded before this check */
                if (s == S_MAYBE && w->state == S_MAYBE) {
                        w->state = S_SEEN;
                        w->seen_present = cnt[k] > 0;
                        if (cnt[k])
                                dr->maybe_present++;
                        else
                                dr->maybe_absent++;
                }
        }
        /* coord-drill.h note 5: what a trim may delete, and whether it is time */
        for (dr->resolved = dr->trimmed; dr->resolved < n0; dr->resolved++)
                if (dr->w[dr->resolved].state == S_INFLIGHT || dr->w[dr->resolved].state == S_MAYBE)
                        break;
        dr->present = 0;
        for (size_t k = 0; k < n1; k++)
                dr->present += cnt[k] > 0;
        pthread_mutex_unlock(&dr->wlock);
out:
        free(st);
        free(cnt);
        free(ids);
        free(tab);
        return bad;
}

/* coord-drill.h note 5: delete every row below the first unresolved one when the tables hold more
 * than --max-rows; a table whose DELETE failed is not trimmed again (and the failure
 * fails the drill: nothing kills a daemon meanwhile). */
static uint64_t trim_rows(struct drill *dr, PGconn **c)
{
        bool done[256] = { false };
        size_t upto = dr->resolved;
        uint64_t bad = 0;

        if (!dr->max_rows || dr->trim_failed || dr->present <= dr->max_rows || upto <= dr->trimmed)
                return 0;
        for (unsigned t = 0; t < dr->tables; t++) {
                char sql[128];
                PGresult *r;

                snprintf(sql, sizeof(sql), "DELETE FROM drill_%s_t%u WHERE id <= %zu", dr->tag, t, upto);
                if (!*c || !(r = exec_sql(dr, c, sql, "the drill's own DELETE"))) {
                        fprintf(stderr, "drill: VIOLATION %s failed; no more trims\n", sql);
                        dr->trim_failed = true;
                        bad++;
                        continue;
                }
                PQclear(r);
                done[t] = true;
        }
        pthread_mutex_lock(&dr->wlock);
        for (size_t k = dr->trimmed; k < upto; k++)
                dr->w[k].trimmed = done[dr->w[k].table];
        if (!dr->trim_failed)
                dr->trimmed = upto;
        pthread_mutex_unlock(&dr->wlock);
        printf("drill: trimmed the tables to ids above %zu (%zu rows were present)\n", upto, dr->present);
        return bad;
}

/* I9: a materialized view at T against its SQL over its table AS OF T. */
static uint64_t check_mv(struct drill *dr, PGconn **c, const struct dobj *o)
{
        char sql[320], *t = NULL, got[2][64];
        PGresult *r;
        uint64_t bad = 0;

        snprintf(sql, sizeof(sql), "SELECT mz_now(), n, s FROM %s", o->name);
        if (!(r = check_read(dr, c, sql)))
                return 1;
        if (PQntuples(r) != 1) {
                fprintf(stderr, "drill: VIOLATION I9 %s has %d rows, 1 expected\n", o->name, PQntuples(r));
                PQclear(r);
                dr->i9++;
                return 1;
        }
        t = strdup(PQgetvalue(r, 0, 0));
        snprintf(got[0], sizeof(got[0]), "%s|%s", PQgetvalue(r, 0, 1),
                 PQgetisnull(r, 0, 2) ? "NULL" : PQgetvalue(r, 0, 2));
        PQclear(r);
        snprintf(sql, sizeof(sql), "%s AS OF %s", o->def, t ? t : "0");
        if (!t || !(r = check_read(dr, c, sql))) {
                free(t);
                return 1;
        }
        snprintf(got[1], sizeof(got[1]), "%s|%s", PQntuples(r) ? PQgetvalue(r, 0, 0) : "-",
                 PQntuples(r) && !PQgetisnull(r, 0, 1) ? PQgetvalue(r, 0, 1) : "NULL");
        PQclear(r);
        dr->mv_compared++;
        if (strcmp(got[0], got[1]) != 0) {
                fprintf(stderr, "drill: VIOLATION I9 %s at %s is %s, its SQL gives %s\n", o->name, t, got[0], got[1]);
                dr->i9++;
                bad++;
        }
        free(t);
        return bad;
}

/* coord-drill.h note 4, and I9 for every materialized view that must exist; holds dlock throughout. */
static uint64_t check_objects(struct drill *dr, PGconn **c)
{
        uint64_t bad = 0;
        PGresult *r;
        char sql[128];

        pthread_mutex_lock(&dr->dlock);
        snprintf(sql, sizeof(sql), "SELECT name FROM coord_objects WHERE name LIKE 'drill_%s_%%'", dr->tag);
        if (!(r = check_read(dr, c, sql))) {
                pthread_mutex_unlock(&dr->dlock);
                return 1;
        }
        for (int i = 0; i < PQntuples(r); i++) {
                size_t k;
                for (k = 0; k < dr->nd && strcmp(dr->d[k].name, PQgetvalue(r, i, 0)) != 0; k++)
                        ;
                if (k == dr->nd && strncmp(PQgetvalue(r, i, 0), "drill_", 6) == 0 &&
                    strncmp(PQgetvalue(r, i, 0) + 6, dr->tag, strlen(dr->tag)) == 0) {
                        fprintf(stderr, "drill: VIOLATION object %s exists, never created\n", PQgetvalue(r, i, 0));
                        dr->ddl_phantoms++;
                        bad++;
                }
        }
        for (size_t k = 0; k < dr->nd; k++) {
                struct dobj *o = &dr->d[k];
                bool there = false;

                for (int i = 0; i < PQntuples(r) && !there; i++)
                        there = strcmp(o->name, PQgetvalue(r, i, 0)) == 0;
                if (o->state == S_MAYBE) {
                        /* coord-drill.h note 3 */
                        o->state = S_SEEN;
                        o->present = there;
                        continue;
                }
                if ((o->state != S_ACKED && o->state != S_SEEN) || o->present == there || o->reported)
                        continue;
                o->reported = true;
                if (o->present)
                        dr->ddl_lost++;
                else
                        dr->ddl_reappeared++;
                fprintf(stderr, "drill: VIOLATION %s %s %s is %s\n",
                        o->state == S_ACKED ? "acknowledged" : "once-seen", o->present ? "CREATE of" : "DROP of",
                        o->name, there ? "still there" : "missing");
                bad++;
        }
        PQclear(r);
        for (size_t k = 0; k < dr->nd; k++) {
                struct dobj *o = &dr->d[k];
                if (o->kind == K_MV && o->present && (o->state == S_ACKED || o->state == S_SEEN))
                        bad += check_mv(dr, c, o);
        }
        pthread_mutex_unlock(&dr->dlock);
        return bad;
}

/* The last values seen of gid (for I1), created zeroed; NULL without memory. */
static struct front *front_of(struct drill *dr, uint64_t gid)
{
        for (size_t i = 0; i < dr->nfr; i++)
                if (dr->fr[i].gid == gid)
                        return &dr->fr[i];
        if (GROW_ARRAY(dr->fr, dr->capfr, dr->nfr + 1) < 0)
                return NULL;
        dr->fr[dr->nfr] = (struct front){ .gid = gid };
        return &dr->fr[dr->nfr++];
}

/* I1 for one value: it may only grow.  *last keeps the largest seen. */
static uint64_t forward(const char *what, uint64_t gid, uint64_t *last, uint64_t now)
{
        if (now < *last) {
                fprintf(stderr, "drill: VIOLATION I1 %s of %" PRIu64 " went back %" PRIu64 " -> %" PRIu64 "\n",
                        what, gid, *last, now);
                return 1;
        }
        *last = now;
        return 0;
}

/* A read whose every row is a violation of an invariant: each printed as column=value,
 * and counted in *counter.  The rows (1 when the read failed). */
static uint64_t violating_rows(struct drill *dr, PGconn **c, const char *what, const char *sql, uint64_t *counter)
{
        PGresult *r = check_read(dr, c, sql);
        uint64_t n;

        if (!r)
                return 1;
        n = (uint64_t)PQntuples(r);
        for (int i = 0; i < PQntuples(r); i++) {
                fprintf(stderr, "drill: VIOLATION %s:", what);
                for (int j = 0; j < PQnfields(r); j++)
                        fprintf(stderr, " %s=%s", PQfname(r, j), PQgetvalue(r, i, j));
                fputc('\n', stderr);
        }
        PQclear(r);
        *counter += n;
        return n;
}

/* I2, seen: read gid's since and bound again, a second later, and say whether the
 * since is still above the bound (compacted past it) or not any more (a read of
 * coord_bounds that lagged the catalog).  For the log: the verdict stays a violation. */
static void i2_recheck(struct drill *dr, PGconn **c, uint64_t gid)
{
        char sql[256];
        PGresult *r;

        msleep(1000);
        snprintf(sql, sizeof(sql), "SELECT f.read_frontier FROM coord_frontiers f WHERE f.object_id = %" PRIu64, gid);
        r = check_read(dr, c, sql);
        uint64_t since = r && PQntuples(r) == 1 ? val_u64(r, 0, 0) : 0;
        PQclear(r);
        snprintf(sql, sizeof(sql), "SELECT bound FROM coord_bounds WHERE object_id = %" PRIu64, gid);
        r = check_read(dr, c, sql);
        uint64_t bound = r && PQntuples(r) == 1 ? val_u64(r, 0, 0) : 0;
        PQclear(r);
        fprintf(stderr, "drill: I2 recheck object_id=%" PRIu64 " read_frontier=%" PRIu64 " bound=%" PRIu64 " %s\n",
                gid, since, bound, since > bound ? "still above" : "no longer above");
}

/* I1, I2, I5 and I6 from the built-in relations (coord-drill.h note 8). */
static uint64_t check_frontiers(struct drill *dr, PGconn **c)
{
        uint64_t bad = 0, i1 = 0, at = ++dr->front_checks;
        PGresult *r;

        if ((r = check_read(dr, c, "SELECT object_id, read_frontier, write_frontier FROM coord_frontiers"))) {
                for (int i = 0; i < PQntuples(r); i++) {
                        struct front *f = front_of(dr, val_u64(r, i, 0));
                        if (f) {
                                i1 += forward("physical since", f->gid, &f->since, val_u64(r, i, 1));
                                i1 += forward("stored upper", f->gid, &f->upper, val_u64(r, i, 2));
                                f->since_at = at;
                        }
                }
                PQclear(r);
        } else
                bad++;
        if ((r = check_read(dr, c, "SELECT object_id, bound FROM coord_bounds"))) {
                for (int i = 0; i < PQntuples(r); i++) {
                        struct front *f = front_of(dr, val_u64(r, i, 0));
                        if (f) {
                                i1 += forward("bound", f->gid, &f->bound, val_u64(r, i, 1));
                                f->bound_at = at;
                        }
                }
                PQclear(r);
        } else
                bad++;
        /* I2 (coord-drill.h note 8): each since read above, against the bound read after it. */
        for (size_t i = 0; i < dr->nfr; i++) {
                struct front *f = &dr->fr[i];

                if (f->gid < 1000 || f->since_at != at || f->bound_at != at || f->since <= f->bound)
                        continue;
                fprintf(stderr, "drill: VIOLATION I2 physical since above the committed bound: object_id=%" PRIu64
                        " read_frontier=%" PRIu64 " bound=%" PRIu64 "\n", f->gid, f->since, f->bound);
                dr->i2++;
                bad++;
                i2_recheck(dr, c, f->gid);
        }
        bad += violating_rows(dr, c, "I5 requirement below its input's bound",
                              "SELECT q.consumer_id, q.input_id, q.frontier, b.bound FROM coord_requirements q "
                              "JOIN coord_bounds b ON q.input_id = b.object_id WHERE q.frontier < b.bound", &dr->i5);
        /* I6: no input compacted past a live requirement of a consumer (an index's
         * included, published or not) -- physical since <= bound <= requirement; each
         * since read above against the requirements read after it (coord-drill.h note 8). */
        if ((r = check_read(dr, c, "SELECT consumer_id, input_id, frontier FROM coord_requirements"))) {
                for (int i = 0; i < PQntuples(r); i++) {
                        uint64_t input = val_u64(r, i, 1), req = val_u64(r, i, 2);
                        struct front *f = front_of(dr, input);

                        if (!f || f->since_at != at || f->since <= req)
                                continue;
                        fprintf(stderr, "drill: VIOLATION I6 input compacted past a requirement: consumer_id=%s "
                                "input_id=%" PRIu64 " frontier=%" PRIu64 " read_frontier=%" PRIu64 "\n",
                                PQgetvalue(r, i, 0), input, req, f->since);
                        dr->i6++;
                        bad++;
                }
                PQclear(r);
        } else
                bad++;
        dr->i1 += i1;
        return bad + i1;
}

/* Run `<coord> ARG` with the drill's environment, output appended to the drill's log
 * (or into out, at most size bytes, when out is not NULL); its exit status, -1 when it
 * did not exit. */
int run_coord(struct drill *dr, const char *arg, char *out, size_t size)
{
        int pipefd[2] = { -1, -1 }, st;
        pid_t pid;

        if (out && pipe2(pipefd, O_CLOEXEC) < 0)
                return -1;
        pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                int fd = out ? pipefd[1] : open(dr->log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
                int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (fd >= 0) {
                        dup2(fd, 1);
                        dup2(fd, 2);
                }
                if (in >= 0)
                        dup2(in, 0);
                if (strcmp(arg, "up") == 0 && dr->followers > 1) {
                        char n[24];

                        snprintf(n, sizeof(n), "%" PRIu64, dr->followers);
                        execl(dr->coord, dr->coord, arg, "--followers", n, (char *)NULL);
                } else {
                        execl(dr->coord, dr->coord, arg, (char *)NULL);
                }
                _exit(127);
        }
        if (out) {
                size_t n = 0;
                ssize_t k;

                close(pipefd[1]);
                while (n + 1 < size && (k = read(pipefd[0], out + n, size - 1 - n)) != 0)
                        if (k > 0)
                                n += (size_t)k;
                        else if (errno != EINTR)
                                break;
                out[n] = 0;
                /* drain the rest, so the child never blocks on a full pipe */
                for (char junk[256]; read(pipefd[0], junk, sizeof(junk)) > 0;)
                        ;
                close(pipefd[0]);
        }
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* I10: tools/coord check; "check failed" (e.g. no aligned point) is tried again. */
static uint64_t check_catalog(struct drill *dr)
{
        char out[4096];
        int r = -1;

        for (int attempt = 0; attempt < 3; attempt++) {
                r = run_coord(dr, "check", out, sizeof(out));
                if (r == 0 || strstr(out, "MISMATCH"))
                        break;
                msleep(500);
        }
        if (r == 0) {
                dr->check_matches++;
                return 0;
        }
        fprintf(stderr, "drill: VIOLATION I10 tools/coord check exited %d: %s", r, out);
        dr->i10++;
        return 1;
}

/* coord-drill.h note 6: the sink's new lines below its progress, and the table AS OF progress - 1. */
static uint64_t check_sink(struct drill *dr, PGconn **c)
{
        uint64_t P, bad = 0, ones = 0;
        char sql[256], line[256];
        PGresult *r;
        FILE *f;
        struct stat sb;

        snprintf(sql, sizeof(sql), "SELECT f.write_frontier FROM coord_frontiers f JOIN coord_objects o ON "
                 "o.id = f.object_id WHERE o.name = 'drill_%s_k'", dr->tag);
        if (!(r = check_read(dr, c, sql)))
                return 1;
        P = PQntuples(r) == 1 ? val_u64(r, 0, 0) : 0;
        PQclear(r);
        if (P < 2)
                return 0;       /* nothing written yet */
        if (stat(dr->sink_path, &sb) < 0 || (uint64_t)sb.st_size < dr->sink_off) {
                fprintf(stderr, "drill: VIOLATION sink file %s is shorter than the %" PRIu64 " complete bytes read\n",
                        dr->sink_path, dr->sink_off);
                dr->sink_bad++;
                return 1;
        }
        if (!(f = fopen(dr->sink_path, "re")) || fseeko(f, (off_t)dr->sink_off, SEEK_SET) < 0) {
                if (f)
                        fclose(f);
                fprintf(stderr, "drill: cannot read the sink file %s: %s\n", dr->sink_path, strerror(errno));
                dr->sink_bad++;
                return 1;
        }
        while (fgets(line, sizeof(line), f)) {
                size_t len = strlen(line);
                char *e;
                uint64_t t = strtoull(line, &e, 10), id;
                long diff;

                if (!len || line[len - 1] != '\n' || t >= P)
                        break;  /* past the progress: not complete yet */
                diff = *e == '\t' ? strtol(e + 1, &e, 10) : 0;
                id = *e == '\t' ? strtoull(e + 1, NULL, 10) : 0;
                if (!id || (diff != 1 && diff != -1)) {
                        fprintf(stderr, "drill: VIOLATION sink line below the progress %" PRIu64 ": %s", P, line);
                        bad++;
                        break;
                }
                if (id > dr->sink_cap) {
                        size_t cap = dr->sink_cap ? dr->sink_cap : 4096;
                        int8_t *n;
                        while (cap < id)
                                cap *= 2;
                        if (!(n = realloc(dr->sink_sum, cap))) {
                                fclose(f);
                                return 1;
                        }
                        memset(n + dr->sink_cap, 0, cap - dr->sink_cap);
                        dr->sink_sum = n;
                        dr->sink_cap = cap;
                }
                dr->sink_sum[id - 1] += (int8_t)diff;
                if ((dr->sink_sum[id - 1] > 1 || dr->sink_sum[id - 1] < 0) && bad++ < 5)
                        fprintf(stderr, "drill: VIOLATION sink id=%" PRIu64 " summed to %d: %s", id,
                                dr->sink_sum[id - 1], line);
                dr->sink_off += len;
                dr->sink_lines++;
        }
        fclose(f);
        snprintf(sql, sizeof(sql), "SELECT id FROM drill_%s_t0 AS OF %" PRIu64, dr->tag, P - 1);
        if (!(r = check_read(dr, c, sql)))
                return bad + 1;
        for (int i = 0; i < PQntuples(r); i++) {
                uint64_t id = val_u64(r, i, 0);
                if (id == 0 || id > dr->sink_cap || dr->sink_sum[id - 1] != 1) {
                        if (bad++ < 5)
                                fprintf(stderr, "drill: VIOLATION sink: id=%" PRIu64 " of the table AS OF %" PRIu64
                                        " is not in the file once\n", id, P - 1);
                }
        }
        for (size_t k = 0; k < dr->sink_cap; k++)
                ones += dr->sink_sum[k] == 1;
        if (ones != (uint64_t)PQntuples(r)) {
                fprintf(stderr, "drill: VIOLATION sink: %" PRIu64 " ids in the file, %d in the table AS OF %" PRIu64 "\n",
                        ones, PQntuples(r), P - 1);
                bad++;
        }
        PQclear(r);
        dr->sink_checks++;
        dr->sink_bad += bad;
        return bad;
}

/* coord-drill.h note 7: the counter source at one timestamp. */
static uint64_t check_source(struct drill *dr, PGconn **c)
{
        uint64_t n, m, d, off, bad = 0;
        char sql[512];
        PGresult *r;

        snprintf(sql, sizeof(sql), "SELECT c.n, c.m, d.n, p.\"offset\" FROM (SELECT count(*) AS n, max(counter) AS m "
                 "FROM drill_%s_c) c, (SELECT count(*) AS n FROM (SELECT DISTINCT counter FROM drill_%s_c) x) d, "
                 "drill_%s_c_progress p", dr->tag, dr->tag, dr->tag);
        if (!(r = check_read(dr, c, sql)))
                return 1;
        if (PQntuples(r) == 0) {        /* no remap row yet: nothing ingested */
                PQclear(r);
                return 0;
        }
        n = val_u64(r, 0, 0), m = val_u64(r, 0, 1), d = val_u64(r, 0, 2), off = val_u64(r, 0, 3);
        PQclear(r);
        if (n != m || n != d || n != off || n < dr->source_n) {
                fprintf(stderr, "drill: VIOLATION source: %" PRIu64 " rows, max %" PRIu64 ", %" PRIu64 " distinct, "
                        "offset %" PRIu64 ", %" PRIu64 " rows at the last check\n", n, m, d, off, dr->source_n);
                bad++;
        }
        dr->source_n = n;
        dr->source_checks++;
        dr->source_bad += bad;
        return bad;
}

uint64_t check_all(struct drill *dr, PGconn **c)
{
        uint64_t bad = check_rows(dr, c);

        if (dr->w_sink)
                bad += check_sink(dr, c);
        if (dr->w_source)
                bad += check_source(dr, c);

        bad += trim_rows(dr, c);
        bad += check_objects(dr, c);
        bad += check_frontiers(dr, c);
        bad += check_catalog(dr);
        dr->checks++;
        return bad;
}
