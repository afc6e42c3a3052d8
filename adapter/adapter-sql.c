/* adapter-sql.c -- parse, analyze and plan SQL for the adapter (adapter-sql.h).
 *
 * The analysis and the planning are in the adapter-sql-*.c files beside this one
 * (adapter-sql-internal.h); this file holds names, positions and batches (parsing,
 * lifting AS OF).  The notes below hold for all of them.
 *
 * NOTES ON THE DESIGN
 *
 * (1) PostgreSQL's parser does all of the syntax.  This file reads tokens only to lift
 *     the AS OF clause, and then only pg_query_scan()'s tokens, so strings, quoted
 *     identifiers, comments and dollar quoting are PostgreSQL's business.
 *
 * (2) Positions.  libpg_query's node locations and scan tokens are byte offsets into the
 *     text it was given; PostgreSQL's error position counts characters from 1.  The copy
 *     with the AS OF clauses blanked has the same bytes everywhere else, so a byte offset
 *     names the same place in both; a lifted AS OF expression is parsed on its own as
 *     "SELECT <expr>", and loc_base shifts its locations back into the query.
 *
 * (3) Types: adapter-sql-expr.c note 1.
 *
 * (4) Constant folding: adapter-sql-expr.c note 2.
 *
 * (5) Ownership.  Every Expr, Relation and Peek is malloc'ed and has exactly one owner;
 *     protobuf-c's free_unpacked() frees a tree built this way (it frees every set
 *     member, skipping default strings).  Builders that take children consume them even
 *     when they fail, so callers never free twice.  Catalog answers are borrowed for one
 *     sql_analyze() call; anything kept is copied.
 *
 * (6) Logical inputs are collected while names resolve (add_input()), independently of
 *     the plan, so the optimizer may remove a Get without losing the input; physical
 *     inputs are the Gets left in the final plan (collect_gets()).
 *
 * (7) Queries.  FROM items become a scope (struct scope: qualified columns, what * expands
 *     to) and a plan: a cross Join of the items, JOIN ... ON / USING as a Filter over the
 *     Join; the optimizer orders the items by the WHERE's equalities (join_order()).  Views are inlined by copying their stored plans.  A grouped SELECT analyzes
 *     its list, HAVING and ORDER BY over the FROM columns with aggregates as placeholder
 *     columns, then regroup() rewrites them over the Reduce's output (keys, then
 *     aggregates); a column neither grouped nor aggregated is 42803 there.  The outputs
 *     (plus hidden ORDER BY columns of a peek) are a Map and a Project over the source.
 *
 * (8) The optimizer (optimize()) runs on every plan: see its section: adapter-sql-optimize.c note 1.
 *
 * (9) Parse trees live in the batch's arena.  libpg_query hands its tree over as
 *     protobuf, and unpacking it with malloc cost a malloc per field, then
 *     free_unpacked() walked every field of every node (a Node message has hundreds) to
 *     free them again: 13% of parsing a CREATE TABLE, a tenth of the adapter's loop
 *     during a bulk setup.  The trees and the scanner's tokens are unpacked into
 *     b->arena (row_arena_allocator()) and go with it in sql_batch_free(); nothing may
 *     free_unpacked() them, and nothing outlives the batch (as before: statements
 *     borrow the batch).  Plans (note 5) are not in the arena: they are handed on.
 *
 * (10) Derived forms: adapter-sql-func.c note 1.
 *
 * (11) Nesting.  PostgreSQL's parser builds a chain such as 1+1+...+1, NOT NOT ... x or
 *     x::int::int... as one node per operator without growing its own stack, but
 *     libpg_query's protobuf output and protobuf-c's unpack then recurse once per node:
 *     a 200 KB chain overflowed the loop thread's stack (tests/fuzz, sql corpus).  So
 *     before parsing, nesting_bound() bounds the tree's depth from the tokens alone, and
 *     a query over SQL_MAX_NESTING is 54001, as the analyzer's own limit would answer
 *     (ANALYZE_MAX_DEPTH is half of it: no query the analyzer accepts is refused).
 */
#include "adapter-sql-internal.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

/* Note 11: the deepest parse tree the tokens may make before the parser runs. */
#define SQL_MAX_NESTING ROW_EXPR_MAX_DEPTH

/* Chunks of a batch's parse arena (note 9); one holds a small statement's tree. */
#define PARSE_ARENA_CHUNK (64u << 10)

/* ---- Names. ---- */

const char *sql_object_kind_name(enum sql_object_kind kind)
{
        static const char *const names[_SQL_OBJECT_KIND_MAX] = {
                [SQL_OBJECT_TABLE] = "table",
                [SQL_OBJECT_VIEW] = "view",
                [SQL_OBJECT_MATERIALIZED_VIEW] = "materialized view",
                [SQL_OBJECT_INDEX] = "index",
                [SQL_OBJECT_SOURCE] = "source",
                [SQL_OBJECT_SINK] = "sink",
        };

        if (kind < 0 || kind >= _SQL_OBJECT_KIND_MAX)
                return "object";
        return names[kind];
}

const char *sql_stmt_tag(const struct sql_stmt *s)
{
        switch (s->kind) {
        case SQL_STMT_CREATE_TABLE:
                return "CREATE TABLE";
        case SQL_STMT_CREATE_VIEW:
                return "CREATE VIEW";
        case SQL_STMT_CREATE_MATERIALIZED_VIEW:
                return "CREATE MATERIALIZED VIEW";
        case SQL_STMT_CREATE_INDEX:
                return "CREATE INDEX";
        case SQL_STMT_CREATE_SINK:
                return "CREATE SINK";
        case SQL_STMT_SUBSCRIBE:
                return s->subscribe.copy ? "COPY" : "SUBSCRIBE";
        case SQL_STMT_CREATE_SOURCE:
                return "CREATE SOURCE";
        case SQL_STMT_ALTER_SINK:
                return "ALTER SINK";
        case SQL_STMT_ALTER_RETAIN_HISTORY:
                switch (s->alter_retain.kind) {
                case SQL_OBJECT_MATERIALIZED_VIEW:
                        return "ALTER MATERIALIZED VIEW";
                case SQL_OBJECT_INDEX:
                        return "ALTER INDEX";
                default:
                        return "ALTER TABLE";
                }
        case SQL_STMT_DROP:
                switch (s->drop.kind) {
                case SQL_OBJECT_VIEW:
                        return "DROP VIEW";
                case SQL_OBJECT_MATERIALIZED_VIEW:
                        return "DROP MATERIALIZED VIEW";
                case SQL_OBJECT_INDEX:
                        return "DROP INDEX";
                case SQL_OBJECT_SOURCE:
                        return "DROP SOURCE";
                case SQL_OBJECT_SINK:
                        return "DROP SINK";
                default:
                        return "DROP TABLE";
                }
        case SQL_STMT_INSERT:
                return "INSERT";
        case SQL_STMT_DELETE:
                return "DELETE";
        case SQL_STMT_UPDATE:
                return "UPDATE";
        case SQL_STMT_SELECT:
                return "SELECT";
        case SQL_STMT_SHOW_OBJECTS:
        case SQL_STMT_SHOW_VARIABLE:
                return "SHOW";
        case SQL_STMT_SET_VARIABLE:
                return s->set_variable.reset ? "RESET" : "SET";
        case SQL_STMT_TRANSACTION:
                switch (s->transaction) {
                case SQL_TXN_BEGIN:
                        return "BEGIN";
                case SQL_TXN_COMMIT:
                        return "COMMIT";
                default:
                        return "ROLLBACK";
                }
        default:
                return "";
        }
}

/* ---- Positions (note 2). ---- */

static bool utf8_cont(char c)
{
        return ((unsigned char)c & 0xc0) == 0x80;
}

/* The 1-based character position of byte offset `off` of s. */
unsigned char_position(const char *s, size_t len, size_t off)
{
        unsigned n = 1;

        if (off > len)
                off = len;
        for (size_t i = 0; i < off; i++)
                if (!utf8_cont(s[i]))
                        n++;
        return n;
}

/* The byte offset of the 1-based character position `pos` of s. */
static size_t byte_offset(const char *s, size_t len, unsigned pos)
{
        size_t i = 0;

        for (unsigned n = 1; n < pos && i < len; n++)
                for (i++; i < len && utf8_cont(s[i]); i++)
                        ;
        return i;
}

/* ---- Batches: parsing and lifting AS OF (note 1). ---- */

struct sql_batch *sql_batch_free(struct sql_batch *b)
{
        if (!b)
                return NULL;
        free(b->clauses);
        for (size_t i = 0; i < b->n_lifts; i++) {
                free(b->lifts[i].name);
                free(b->lifts[i].on);
                free(b->lifts[i].on_schema);
                free(b->lifts[i].duration);
                for (size_t k = 0; k < b->lifts[i].n_refresh; k++)
                        free(b->lifts[i].refresh[k].interval);
                free(b->lifts[i].refresh);
                free(b->lifts[i].path);
                for (size_t k = 0; k < b->lifts[i].n_names; k++)
                        free(b->lifts[i].names[k]);
                free(b->lifts[i].names);
        }
        free(b->lifts);
        free(b->stmts);
        row_arena_done(&b->arena);      /* every tree and token of the batch (note 9) */
        free(b->query);
        free(b);
        return NULL;
}

void sql_batch_freep(struct sql_batch **b)
{
        *b = sql_batch_free(*b);
}

size_t sql_batch_size(const struct sql_batch *b)
{
        return b->n_stmts;
}

/* Run PostgreSQL's parser; the tree goes into b's arena (note 9).  A syntax error is
 * 42601 with PostgreSQL's message and its position as a character of `sql`. */
static int pg_parse(struct sql_batch *b, const char *sql, PgQuery__ParseResult **ret,
                    struct row_error *err)
{
        PgQueryProtobufParseResult pr = pg_query_parse_protobuf(sql);
        int r = 0;

        if (pr.error) {
                r = row_error_set(err, -EINVAL, "42601", "%s", pr.error->message);
                if (err && pr.error->cursorpos > 0)
                        err->position = (unsigned)pr.error->cursorpos;
                goto out;
        }
        /* libpg_query wrote these bytes itself, so unpacking fails only for memory. */
        *ret = pg_query__parse_result__unpack(&b->pa, pr.parse_tree.len,
                                              (const uint8_t *)pr.parse_tree.data);
        if (!*ret)
                r = row_error_oom(err);
out:
        pg_query_free_protobuf_parse_result(pr);
        return r;
}

static bool token_is_comment(const PgQuery__ScanToken *t)
{
        return t->token == PG_QUERY__TOKEN__SQL_COMMENT || t->token == PG_QUERY__TOKEN__C_COMMENT;
}

/* Is `tree` "SELECT <one expression>" and nothing else? */
static bool is_single_expression(const PgQuery__ParseResult *tree)
{
        const PgQuery__SelectStmt *s;
        const PgQuery__ResTarget *rt;

        if (tree->n_stmts != 1 || !tree->stmts[0]->stmt ||
            tree->stmts[0]->stmt->node_case != PG_QUERY__NODE__NODE_SELECT_STMT)
                return false;
        s = tree->stmts[0]->stmt->select_stmt;
        if (s->n_target_list != 1 || s->n_from_clause || s->where_clause || s->n_group_clause ||
            s->having_clause || s->n_window_clause || s->n_values_lists || s->n_sort_clause ||
            s->limit_offset || s->limit_count || s->n_locking_clause || s->with_clause ||
            s->into_clause || s->n_distinct_clause || s->op != PG_QUERY__SET_OPERATION__SETOP_NONE)
                return false;
        if (s->target_list[0]->node_case != PG_QUERY__NODE__NODE_RES_TARGET)
                return false;
        rt = s->target_list[0]->res_target;
        return rt->val && (!rt->name || !rt->name[0]) && rt->n_indirection == 0;
}

/* The text of an identifier token as PostgreSQL folds it: unquoted lower case, quoted
 * without its quotes ("" is "). */
static char *token_ident(const struct sql_batch *b, const PgQuery__ScanToken *t)
{
        const char *p = b->query + t->start;
        size_t len = (size_t)(t->end - t->start);
        char *d = malloc(len + 1), *o = d;

        if (!d)
                return NULL;
        if (len >= 2 && p[0] == '"') {
                for (size_t i = 1; i + 1 < len; i++) {
                        *o++ = p[i];
                        if (p[i] == '"')
                                i++;
                }
        } else {
                for (size_t i = 0; i < len; i++)
                        *o++ = (char)tolower((unsigned char)p[i]);
        }
        *o = '\0';
        return d;
}

/* The value of a plain string constant token ('...', '' is '); NULL when it is another
 * kind of string (E'', $$, U&''). */
static char *token_string(const struct sql_batch *b, const PgQuery__ScanToken *t)
{
        const char *p = b->query + t->start;
        size_t len = (size_t)(t->end - t->start);
        char *d, *o;

        if (len < 2 || p[0] != '\'' || p[len - 1] != '\'')
                return NULL;
        d = o = malloc(len);
        if (!d)
                return NULL;
        for (size_t i = 1; i + 1 < len; i++) {
                *o++ = p[i];
                if (p[i] == '\'')
                        i++;
        }
        *o = '\0';
        return d;
}

/* A token that may name an object: an identifier or a non-reserved keyword. */
static bool token_is_name(const PgQuery__ScanToken *t)
{
        return t->token == PG_QUERY__TOKEN__IDENT ||
               (t->keyword_kind != PG_QUERY__KEYWORD_KIND__NO_KEYWORD &&
                t->keyword_kind != PG_QUERY__KEYWORD_KIND__RESERVED_KEYWORD);
}

static bool token_is_word(const struct sql_batch *b, const PgQuery__ScanToken *t, const char *w)
{
        size_t len = (size_t)(t->end - t->start);

        /* An identifier or a keyword spelled `w`, not a quoted identifier. */
        return (t->token == PG_QUERY__TOKEN__IDENT || t->keyword_kind) && len == strlen(w) &&
               strncasecmp(b->query + t->start, w, len) == 0;
}

static struct lift *lift_new(struct sql_batch *b, size_t begin, enum lift_kind kind)
{
        struct lift *l = realloc(b->lifts, (b->n_lifts + 1) * sizeof(*l));

        if (!l)
                return NULL;
        b->lifts = l;
        l = &b->lifts[b->n_lifts++];
        *l = (struct lift){ .begin = begin, .kind = kind };
        return l;
}

static void blank(char *cleaned, const PgQuery__ScanToken *from, const PgQuery__ScanToken *to)
{
        memset(cleaned + from->start, ' ', (size_t)(to->end - from->start));
}

/* CREATE DEFAULT INDEX [IF NOT EXISTS] [name] ON [schema.]obj: parsed here, PostgreSQL
 * sees "SELECT" and blanks.  Anything else after DEFAULT INDEX is left to PostgreSQL (a
 * syntax error). */
static int lift_default_index(struct sql_batch *b, char *cleaned, PgQuery__ScanToken **t,
                              size_t n, struct row_error *err)
{
        struct lift *l;
        size_t i = 3, on;

        if (n > i + 2 && t[i]->token == PG_QUERY__TOKEN__IF_P &&
            t[i + 1]->token == PG_QUERY__TOKEN__NOT && t[i + 2]->token == PG_QUERY__TOKEN__EXISTS)
                i += 3;
        if (i < n && t[i]->token != PG_QUERY__TOKEN__ON && token_is_name(t[i]))
                i++;
        if (i >= n || t[i]->token != PG_QUERY__TOKEN__ON)
                return 0;
        on = i + 1;
        if (on < n && token_is_name(t[on]) && on + 1 == n)
                ;
        else if (on + 2 < n && token_is_name(t[on]) && t[on + 1]->token == PG_QUERY__TOKEN__ASCII_46 &&
                 token_is_name(t[on + 2]) && on + 3 == n)
                ;
        else
                return 0;
        l = lift_new(b, (size_t)t[0]->start, LIFT_DEFAULT_INDEX);
        if (!l)
                return row_error_oom(err);
        l->if_not_exists = i > 3 && t[3]->token == PG_QUERY__TOKEN__IF_P;
        if (i > (l->if_not_exists ? 6u : 3u) && !(l->name = token_ident(b, t[i - 1])))
                return row_error_oom(err);
        if (on + 1 == n) {
                l->on = token_ident(b, t[on]);
        } else {
                l->on_schema = token_ident(b, t[on]);
                l->on = token_ident(b, t[on + 2]);
                if (!l->on_schema)
                        return row_error_oom(err);
        }
        if (!l->on)
                return row_error_oom(err);
        l->location = (size_t)t[on]->start;
        blank(cleaned, t[0], t[n - 1]);
        memcpy(cleaned + t[0]->start, "SELECT", 6);
        return 0;
}

/* The query's bytes [begin, end) as one expression: parsed as AS_OF_PREFIX + them (note
 * 2); the tree stays in the arena.  1 with *ret when they are one expression, 0 when not
 * (*ret untouched), -ENOMEM. */
static int parse_expression(struct sql_batch *b, size_t begin, size_t end, PgQuery__ParseResult **ret)
{
        _cleanup_free_ char *expr = NULL;
        PgQuery__ParseResult *tree = NULL;
        int r;

        if (asprintf(&expr, AS_OF_PREFIX "%.*s", (int)(end - begin), b->query + begin) < 0) {
                expr = NULL;
                return -ENOMEM;
        }
        r = pg_parse(b, expr, &tree, NULL);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || !is_single_expression(tree))
                return 0;
        *ret = tree;
        return 1;
}

/* An expression of a lifted option, tokens [from, to).  0 with *ret; -EINVAL (42601)
 * when it is not one expression. */
static int lift_expr(struct sql_batch *b, PgQuery__ScanToken **t, size_t from, size_t to,
                     struct as_of_clause *ret, struct row_error *err)
{
        PgQuery__ParseResult *tree = NULL;
        size_t begin, end;
        int r = 0;

        if (from < to) {
                begin = (size_t)t[from]->start;
                end = (size_t)t[to - 1]->end;
                r = parse_expression(b, begin, end, &tree);
                if (r < 0)
                        return row_error_oom(err);
        }
        if (r == 1) {
                *ret = (struct as_of_clause){ .begin = begin, .expr_begin = begin, .expr_end = end,
                                              .tree = tree };
                return 0;
        }
        row_error_set(err, -EINVAL, "42601", "syntax error in REFRESH option: a single expression "
                      "was expected");
        if (err)
                err->position = char_position(b->query, b->len,
                                              from < to ? (size_t)t[from]->start : (size_t)t[to - 1]->end);
        return -EINVAL;
}

/* REFRESH ON COMMIT | AT CREATION | AT <expr> | EVERY '<interval>' [ALIGNED TO <expr>],
 * tokens [i, e) of one option.  0 with *ret filled, -EINVAL with err. */
static int lift_refresh_option(struct sql_batch *b, PgQuery__ScanToken **t, size_t i, size_t e,
                               struct lift_refresh *ret, struct row_error *err)
{
        size_t k = i + 1;

        *ret = (struct lift_refresh){ .location = (size_t)t[i]->start };
        if (k + 2 == e && token_is_word(b, t[k], "on") && token_is_word(b, t[k + 1], "commit")) {
                ret->kind = SQL_REFRESH_ON_COMMIT;
                return 0;
        }
        if (k + 2 == e && token_is_word(b, t[k], "at") && token_is_word(b, t[k + 1], "creation")) {
                ret->kind = SQL_REFRESH_AT_CREATION;
                return 0;
        }
        if (k + 1 < e && token_is_word(b, t[k], "at")) {
                ret->kind = SQL_REFRESH_AT;
                return lift_expr(b, t, k + 1, e, &ret->expr, err);
        }
        if (k + 1 < e && token_is_word(b, t[k], "every") && t[k + 1]->token == PG_QUERY__TOKEN__SCONST) {
                ret->kind = SQL_REFRESH_EVERY;
                ret->interval = token_string(b, t[k + 1]);
                ret->interval_location = (size_t)t[k + 1]->start;
                if (!ret->interval && !(ret->interval = strdup("")))
                        return row_error_oom(err);
                k += 2;
                if (k == e)
                        return 0;
                if (k + 2 < e && token_is_word(b, t[k], "aligned") && token_is_word(b, t[k + 1], "to"))
                        return lift_expr(b, t, k + 2, e, &ret->expr, err);
        }
        row_error_set(err, -EINVAL, "42601", "syntax error in REFRESH option");
        row_error_hint(err, "Write REFRESH ON COMMIT, REFRESH AT CREATION, REFRESH AT <time> or "
                       "REFRESH EVERY '<interval>' [ALIGNED TO <time>].");
        if (err)
                err->position = char_position(b->query, b->len, (size_t)t[i]->start);
        return -EINVAL;
}

/* CREATE MATERIALIZED VIEW ... WITH (..., RETAIN HISTORY FOR '<d>', REFRESH ..., ...) AS:
 * lift those options; PostgreSQL sees the others in place (and the analyzer refuses
 * them), or no WITH at all when nothing else is left in it. */
static int lift_mv_options(struct sql_batch *b, char *cleaned, PgQuery__ScanToken **t,
                           size_t n, struct row_error *err)
{
        size_t w = 3, open, close, retain = SIZE_MAX, kept = 0, last_kept = SIZE_MAX;
        _cleanup_free_ size_t *opt = NULL;      /* [begin, end) of each option */
        _cleanup_free_ bool *lifted = NULL;
        size_t n_opt = 0;
        int depth = 0;
        struct lift *l;

        while (w < n && t[w]->token != PG_QUERY__TOKEN__WITH && t[w]->token != PG_QUERY__TOKEN__AS)
                w++;
        if (w + 1 >= n || t[w]->token != PG_QUERY__TOKEN__WITH ||
            t[w + 1]->token != PG_QUERY__TOKEN__ASCII_40)
                return 0;
        open = w + 1;
        for (close = open; close < n; close++) {
                if (t[close]->token == PG_QUERY__TOKEN__ASCII_40)
                        depth++;
                else if (t[close]->token == PG_QUERY__TOKEN__ASCII_41 && --depth == 0)
                        break;
        }
        if (close >= n)
                return 0;
        opt = calloc(2 * (close - open) + 2, sizeof(*opt));
        lifted = calloc(close - open + 1, sizeof(*lifted));
        if (!opt || !lifted)
                return row_error_oom(err);
        /* Options are separated by commas at depth 1 (an expression may hold others). */
        for (size_t i = open + 1; i < close;) {
                size_t e = i;

                for (depth = 0; e < close && (depth || t[e]->token != PG_QUERY__TOKEN__ASCII_44); e++)
                        if (t[e]->token == PG_QUERY__TOKEN__ASCII_40)
                                depth++;
                        else if (t[e]->token == PG_QUERY__TOKEN__ASCII_41)
                                depth--;
                opt[2 * n_opt] = i;
                opt[2 * n_opt + 1] = e;
                n_opt++;
                i = e + 1;
        }
        for (size_t k = 0; k < n_opt; k++) {
                size_t i = opt[2 * k], e = opt[2 * k + 1];

                if (e == i + 4 && token_is_word(b, t[i], "retain") &&
                    token_is_word(b, t[i + 1], "history") && t[i + 2]->token == PG_QUERY__TOKEN__FOR &&
                    t[i + 3]->token == PG_QUERY__TOKEN__SCONST && retain == SIZE_MAX) {
                        retain = k;
                        lifted[k] = true;
                } else if (e > i && token_is_word(b, t[i], "refresh")) {
                        lifted[k] = true;
                }
        }
        for (size_t k = 0; k < n_opt; k++)
                if (lifted[k])
                        break;
                else if (k + 1 == n_opt)
                        return 0;
        if (!n_opt)
                return 0;
        l = lift_new(b, (size_t)t[0]->start, LIFT_MV_OPTIONS);
        if (!l)
                return row_error_oom(err);
        if (retain != SIZE_MAX) {
                size_t i = opt[2 * retain];

                l->duration = token_string(b, t[i + 3]);
                l->location = (size_t)t[i + 3]->start;
                /* E'..' and friends: say so at analysis, never misread them. */
                if (!l->duration && !(l->duration = strdup("")))
                        return row_error_oom(err);
        }
        for (size_t k = 0; k < n_opt; k++) {
                struct lift_refresh *lr;
                int r;

                if (!lifted[k] || k == retain)
                        continue;
                lr = realloc(l->refresh, (l->n_refresh + 1) * sizeof(*lr));
                if (!lr)
                        return row_error_oom(err);
                l->refresh = lr;
                r = lift_refresh_option(b, t, opt[2 * k], opt[2 * k + 1], &lr[l->n_refresh], err);
                if (r < 0) {
                        free(lr[l->n_refresh].interval);
                        return r;
                }
                l->n_refresh++;
        }
        /* Blank the whole list, then put back the options PostgreSQL is to see, each
         * with the comma after it but the last: same bytes at the same offsets. */
        for (size_t k = 0; k < n_opt; k++)
                if (!lifted[k]) {
                        kept++;
                        last_kept = k;
                }
        if (!kept) {
                blank(cleaned, t[w], t[close]);
                return 0;
        }
        memset(cleaned + t[open]->end, ' ', (size_t)(t[close]->start - t[open]->end));
        for (size_t k = 0; k < n_opt; k++) {
                size_t i = opt[2 * k], e = opt[2 * k + 1];
                size_t to = k == last_kept ? (size_t)t[e - 1]->end : (size_t)t[e]->end;

                if (lifted[k])
                        continue;
                memcpy(cleaned + t[i]->start, b->query + t[i]->start, to - (size_t)t[i]->start);
        }
        return 0;
}

/* ALTER {TABLE | MATERIALIZED VIEW | INDEX} name SET (RETAIN HISTORY = FOR '<d>') and
 * ... RESET (RETAIN HISTORY): parsed here, PostgreSQL sees "SELECT" and blanks.  Other
 * ALTERs are left to PostgreSQL (and refused as unsupported). */
static int lift_alter_retain(struct sql_batch *b, char *cleaned, PgQuery__ScanToken **t,
                             size_t n, struct row_error *err)
{
        enum sql_object_kind kind;
        size_t i = 1, name;
        bool set;
        struct lift *l;

        if (i < n && t[i]->token == PG_QUERY__TOKEN__TABLE)
                kind = SQL_OBJECT_TABLE, i += 1;
        else if (i + 1 < n && t[i]->token == PG_QUERY__TOKEN__MATERIALIZED &&
                 t[i + 1]->token == PG_QUERY__TOKEN__VIEW)
                kind = SQL_OBJECT_MATERIALIZED_VIEW, i += 2;
        else if (i < n && t[i]->token == PG_QUERY__TOKEN__INDEX)
                kind = SQL_OBJECT_INDEX, i += 1;
        else
                return 0;
        if (i >= n || !token_is_name(t[i]))
                return 0;
        name = i++;
        if (i + 1 >= n || t[i + 1]->token != PG_QUERY__TOKEN__ASCII_40)
                return 0;
        if (t[i]->token == PG_QUERY__TOKEN__SET)
                set = true;
        else if (t[i]->token == PG_QUERY__TOKEN__RESET)
                set = false;
        else
                return 0;
        i += 2;
        if (i + 1 >= n || !token_is_word(b, t[i], "retain") || !token_is_word(b, t[i + 1], "history"))
                return 0;
        i += 2;
        if (set) {
                /* = FOR '<d>' */
                if (i + 3 >= n || t[i]->token != PG_QUERY__TOKEN__ASCII_61 ||
                    t[i + 1]->token != PG_QUERY__TOKEN__FOR || t[i + 2]->token != PG_QUERY__TOKEN__SCONST)
                        return 0;
                i += 3;
        }
        if (i + 1 != n || t[i]->token != PG_QUERY__TOKEN__ASCII_41)
                return 0;
        l = lift_new(b, (size_t)t[0]->start, LIFT_ALTER_RETAIN_HISTORY);
        if (!l)
                return row_error_oom(err);
        l->alter_kind = kind;
        l->name = token_ident(b, t[name]);
        l->location = (size_t)t[name]->start;
        if (!l->name)
                return row_error_oom(err);
        if (set) {
                l->duration = token_string(b, t[i - 1]);
                if (!l->duration && !(l->duration = strdup("")))
                        return row_error_oom(err);
        }
        blank(cleaned, t[0], t[n - 1]);
        memcpy(cleaned + t[0]->start, "SELECT", 6);
        return 0;
}

/* A syntax error of a lifted statement at token t (42601, PostgreSQL's wording). */
static int lift_syntax_error(struct sql_batch *b, const PgQuery__ScanToken *t, struct row_error *err)
{
        row_error_set(err, -EINVAL, "42601", "syntax error at or near \"%.*s\"",
                      (int)(t->end - t->start), b->query + t->start);
        if (err)
                err->position = char_position(b->query, b->len, (size_t)t->start);
        return -EINVAL;
}

/* CREATE <kind> [IF NOT EXISTS] name FROM: *name the name's token (FROM follows it). */
static int lift_create_head(struct sql_batch *b, PgQuery__ScanToken **t, size_t n, size_t *name,
                            struct row_error *err)
{
        size_t i = 2;

        if (i + 2 < n && t[i]->token == PG_QUERY__TOKEN__IF_P && t[i + 1]->token == PG_QUERY__TOKEN__NOT &&
            t[i + 2]->token == PG_QUERY__TOKEN__EXISTS)
                i += 3;
        if (i >= n || !token_is_name(t[i]))
                return lift_syntax_error(b, t[i < n ? i : n - 1], err);
        *name = i++;
        if (i >= n || t[i]->token != PG_QUERY__TOKEN__FROM)
                return lift_syntax_error(b, t[i < n ? i : n - 1], err);
        return 0;
}

/* CREATE SINK [IF NOT EXISTS] name FROM [public.]relation INTO FILE '<path>'
 * [WITH (SNAPSHOT [=] true | false)]: parsed here, PostgreSQL sees "SELECT" and blanks.
 * PostgreSQL has no CREATE SINK, so anything else is a syntax error here. */
static int lift_create_sink(struct sql_batch *b, char *cleaned, PgQuery__ScanToken **t, size_t n,
                            struct row_error *err)
{
        struct lift *l;
        size_t i, name, from;
        int r = lift_create_head(b, t, n, &name, err);

        if (r < 0)
                return r;
        from = i = name + 2;
        if (i + 2 < n && token_is_word(b, t[i], "public") && t[i + 1]->token == PG_QUERY__TOKEN__ASCII_46)
                from = i += 2;
        if (i >= n || !token_is_name(t[i]))
                return lift_syntax_error(b, t[i < n ? i : n - 1], err);
        i++;
        if (i + 2 >= n || t[i]->token != PG_QUERY__TOKEN__INTO || !token_is_word(b, t[i + 1], "file") ||
            t[i + 2]->token != PG_QUERY__TOKEN__SCONST)
                return lift_syntax_error(b, t[i < n ? i : n - 1], err);
        l = lift_new(b, (size_t)t[0]->start, LIFT_CREATE_SINK);
        if (!l)
                return row_error_oom(err);
        l->snapshot = -1;
        l->if_not_exists = name > 2;
        l->name = token_ident(b, t[name]);
        l->on = token_ident(b, t[from]);
        l->path = token_string(b, t[i + 2]);
        l->location = (size_t)t[from]->start;
        if (!l->name || !l->on)
                return row_error_oom(err);
        if (!l->path && !(l->path = strdup("")))        /* E'..': refused at analysis */
                return row_error_oom(err);
        i += 3;
        if (i < n) {
                /* WITH ( SNAPSHOT [=] value ) */
                size_t v;

                if (i + 4 > n || t[i]->token != PG_QUERY__TOKEN__WITH ||
                    t[i + 1]->token != PG_QUERY__TOKEN__ASCII_40 || !token_is_word(b, t[i + 2], "snapshot"))
                        return lift_syntax_error(b, t[i + 2 < n ? i + 2 : i], err);
                v = i + 3;
                if (v < n && t[v]->token == PG_QUERY__TOKEN__ASCII_61)
                        v++;
                if (v + 2 != n || t[v + 1]->token != PG_QUERY__TOKEN__ASCII_41)
                        return lift_syntax_error(b, t[v < n ? v : n - 1], err);
                if (t[v]->token == PG_QUERY__TOKEN__TRUE_P || token_is_word(b, t[v], "on"))
                        l->snapshot = 1;
                else if (t[v]->token == PG_QUERY__TOKEN__FALSE_P || token_is_word(b, t[v], "off"))
                        l->snapshot = 0;
                else
                        return lift_syntax_error(b, t[v], err);
        }
        blank(cleaned, t[0], t[n - 1]);
        memcpy(cleaned + t[0]->start, "SELECT", 6);
        return 0;
}

/* ALTER SINK name SET FROM [public.]relation: parsed here, PostgreSQL sees "SELECT". */
static int lift_alter_sink(struct sql_batch *b, char *cleaned, PgQuery__ScanToken **t, size_t n,
                           struct row_error *err)
{
        struct lift *l;
        size_t i = 2, name, from;

        if (i >= n || !token_is_name(t[i]))
                return lift_syntax_error(b, t[i < n ? i : n - 1], err);
        name = i++;
        if (i + 1 >= n || t[i]->token != PG_QUERY__TOKEN__SET || t[i + 1]->token != PG_QUERY__TOKEN__FROM)
                return lift_syntax_error(b, t[i < n ? i : n - 1], err);
        from = i += 2;
        if (i + 2 < n && token_is_word(b, t[i], "public") && t[i + 1]->token == PG_QUERY__TOKEN__ASCII_46)
                from = i += 2;
        if (i >= n || !token_is_name(t[i]))
                return lift_syntax_error(b, t[i < n ? i : n - 1], err);
        if (i + 1 < n)
                return lift_syntax_error(b, t[i + 1], err);
        l = lift_new(b, (size_t)t[0]->start, LIFT_ALTER_SINK);
        if (!l)
                return row_error_oom(err);
        l->name = token_ident(b, t[name]);
        l->on = token_ident(b, t[from]);
        l->location = (size_t)t[from]->start;
        if (!l->name || !l->on)
                return row_error_oom(err);
        blank(cleaned, t[0], t[n - 1]);
        memcpy(cleaned + t[0]->start, "SELECT", 6);
        return 0;
}

/* DROP {SINK | SOURCE} [IF EXISTS] name [, ...] [CASCADE | RESTRICT]: parsed here,
 * PostgreSQL sees "SELECT" and blanks. */
static int lift_drop_sink(struct sql_batch *b, char *cleaned, PgQuery__ScanToken **t, size_t n,
                          enum sql_object_kind kind, struct row_error *err)
{
        struct lift *l;
        size_t i = 2;

        l = lift_new(b, (size_t)t[0]->start, LIFT_DROP_SINK);
        if (!l)
                return row_error_oom(err);
        l->alter_kind = kind;
        if (i + 1 < n && t[i]->token == PG_QUERY__TOKEN__IF_P && t[i + 1]->token == PG_QUERY__TOKEN__EXISTS) {
                l->if_exists = true;
                i += 2;
        }
        for (;;) {
                char **names;

                if (i >= n || !token_is_name(t[i]))
                        return lift_syntax_error(b, t[i < n ? i : n - 1], err);
                names = realloc(l->names, (l->n_names + 1) * sizeof(*names));
                if (!names)
                        return row_error_oom(err);
                l->names = names;
                if (!(l->names[l->n_names] = token_ident(b, t[i])))
                        return row_error_oom(err);
                l->n_names++;
                if (++i < n && t[i]->token == PG_QUERY__TOKEN__ASCII_44) {
                        i++;
                        continue;
                }
                break;
        }
        if (i < n && (t[i]->token == PG_QUERY__TOKEN__CASCADE || t[i]->token == PG_QUERY__TOKEN__RESTRICT)) {
                l->cascade = t[i]->token == PG_QUERY__TOKEN__CASCADE;
                i++;
        }
        if (i < n)
                return lift_syntax_error(b, t[i], err);
        blank(cleaned, t[0], t[n - 1]);
        memcpy(cleaned + t[0]->start, "SELECT", 6);
        return 0;
}

/* An unsigned integer constant token into *ret; false when it is not one. */
static bool token_u64(const struct sql_batch *b, const PgQuery__ScanToken *t, uint64_t *ret)
{
        char buf[32];
        size_t len = (size_t)(t->end - t->start);

        if (t->token != PG_QUERY__TOKEN__ICONST || len >= sizeof(buf))
                return false;
        memcpy(buf, b->query + t->start, len);
        buf[len] = '\0';
        return parse_u64(buf, UINT64_MAX, ret) == 0;
}

/* CREATE SOURCE [IF NOT EXISTS] name FROM LOAD GENERATOR COUNTER [(TICK INTERVAL '<d>' |
 * UP TO <n>, ...)] and CREATE SOURCE ... FROM FILE '<path>' (FORMAT TEXT | FORMAT CSV WITH
 * <n> COLUMNS): parsed here (PostgreSQL has no CREATE SOURCE), PostgreSQL sees "SELECT". */
static int lift_create_source(struct sql_batch *b, char *cleaned, PgQuery__ScanToken **t, size_t n,
                              struct row_error *err)
{
        struct lift *l;
        size_t i, name;
        int r = lift_create_head(b, t, n, &name, err);

        if (r < 0)
                return r;
        i = name + 2;
        l = lift_new(b, (size_t)t[0]->start, LIFT_CREATE_SOURCE);
        if (!l)
                return row_error_oom(err);
        l->if_not_exists = name > 2;
        l->location = (size_t)t[name]->start;
        if (!(l->name = token_ident(b, t[name])))
                return row_error_oom(err);
        if (i < n && token_is_word(b, t[i], "load")) {
                if (i + 2 >= n || !token_is_word(b, t[i + 1], "generator") || !token_is_word(b, t[i + 2], "counter"))
                        return lift_syntax_error(b, t[i + 1 < n ? i + 1 : i], err);
                l->source_type = SQL_SOURCE_COUNTER;
                i += 3;
                if (i < n) {
                        if (t[i]->token != PG_QUERY__TOKEN__ASCII_40)
                                return lift_syntax_error(b, t[i], err);
                        for (i++;; i++) {
                                if (i + 2 < n && token_is_word(b, t[i], "tick") &&
                                    token_is_word(b, t[i + 1], "interval") && t[i + 2]->token == PG_QUERY__TOKEN__SCONST &&
                                    !l->duration) {
                                        if (!(l->duration = token_string(b, t[i + 2])) && !(l->duration = strdup("")))
                                                return row_error_oom(err);
                                        i += 3;
                                } else if (i + 2 < n && token_is_word(b, t[i], "up") && token_is_word(b, t[i + 1], "to") &&
                                           !l->up_to && token_u64(b, t[i + 2], &l->up_to) && l->up_to) {
                                        i += 3;
                                } else
                                        return lift_syntax_error(b, t[i < n ? i : n - 1], err);
                                if (i < n && t[i]->token == PG_QUERY__TOKEN__ASCII_44)
                                        continue;
                                if (i + 1 == n && t[i]->token == PG_QUERY__TOKEN__ASCII_41)
                                        break;
                                return lift_syntax_error(b, t[i < n ? i : n - 1], err);
                        }
                }
        } else if (i + 1 < n && token_is_word(b, t[i], "file") && t[i + 1]->token == PG_QUERY__TOKEN__SCONST) {
                l->source_type = SQL_SOURCE_FILE;
                if (!(l->path = token_string(b, t[i + 1])) && !(l->path = strdup("")))
                        return row_error_oom(err);
                i += 2;
                /* ( FORMAT TEXT ) | ( FORMAT CSV WITH n COLUMNS ) */
                if (i + 3 < n && t[i]->token == PG_QUERY__TOKEN__ASCII_40 && token_is_word(b, t[i + 1], "format") &&
                    token_is_word(b, t[i + 2], "text") && i + 4 == n && t[i + 3]->token == PG_QUERY__TOKEN__ASCII_41) {
                        l->format = SQL_FORMAT_TEXT;
                } else if (i + 7 == n && t[i]->token == PG_QUERY__TOKEN__ASCII_40 &&
                           token_is_word(b, t[i + 1], "format") && token_is_word(b, t[i + 2], "csv") &&
                           t[i + 3]->token == PG_QUERY__TOKEN__WITH && token_u64(b, t[i + 4], &l->n_cols) &&
                           token_is_word(b, t[i + 5], "columns") && t[i + 6]->token == PG_QUERY__TOKEN__ASCII_41) {
                        l->format = SQL_FORMAT_CSV;
                } else {
                        lift_syntax_error(b, t[i < n ? i : n - 1], err);
                        row_error_hint(err, "Write (FORMAT TEXT) or (FORMAT CSV WITH <n> COLUMNS).");
                        return -EINVAL;
                }
        } else {
                lift_syntax_error(b, t[i < n ? i : n - 1], err);
                row_error_hint(err, "Write FROM LOAD GENERATOR COUNTER or FROM FILE '<path>'.");
                return -EINVAL;
        }
        blank(cleaned, t[0], t[n - 1]);
        memcpy(cleaned + t[0]->start, "SELECT", 6);
        return 0;
}

/* What SUBSCRIBE's tokens t[i, end) hold after [TO] relation: nothing, AS OF (lifted by
 * lift_segment() at depth 0, or taken here inside COPY (...), `copy`), or a clause we do
 * not implement (l->unsupported: 0A000 at analysis). */
static int lift_subscribe_tail(struct sql_batch *b, struct lift *l, PgQuery__ScanToken **t,
                               size_t i, size_t end, bool copy, struct row_error *err)
{
        if (i >= end)
                return 0;
        if (i + 2 < end && t[i]->token == PG_QUERY__TOKEN__AS && t[i + 1]->token == PG_QUERY__TOKEN__OF) {
                PgQuery__ParseResult *tree = NULL;
                size_t begin = (size_t)t[i + 2]->start, stop = (size_t)t[end - 1]->end;
                int r;

                if (!copy)
                        return 0;       /* lifted already: the batch statement's as_of */
                r = parse_expression(b, begin, stop, &tree);
                if (r < 0)
                        return row_error_oom(err);
                if (r == 0)
                        return lift_syntax_error(b, t[i + 2], err);
                l->sub_as_of = (struct as_of_clause){ .begin = (size_t)t[i]->start, .expr_begin = begin,
                                                      .expr_end = stop, .tree = tree };
                return 0;
        }
        if (i + 1 == end && t[i]->token == PG_QUERY__TOKEN__AS)
                return lift_syntax_error(b, t[i], err);
        l->unsupported = (size_t)t[i]->start + 1;
        return 0;
}

/* SUBSCRIBE [TO] [public.]relation [AS OF t] and COPY (SUBSCRIBE ...) TO STDOUT: parsed
 * here, PostgreSQL sees "SELECT".  SUBSCRIBE of a query, WITH options, ENVELOPE and the
 * like are lifted too, as l->unsupported (0A000 at analysis), not syntax errors. */
static int lift_subscribe(struct sql_batch *b, char *cleaned, PgQuery__ScanToken **t, size_t n,
                          struct row_error *err)
{
        bool copy = t[0]->token == PG_QUERY__TOKEN__COPY;
        size_t i = copy ? 3 : 1, end = n, name;
        struct lift *l;
        int r;

        if (copy) {
                int depth = 0;

                for (end = 1; end < n; end++) {
                        if (t[end]->token == PG_QUERY__TOKEN__ASCII_40)
                                depth++;
                        else if (t[end]->token == PG_QUERY__TOKEN__ASCII_41 && --depth == 0)
                                break;
                }
                if (end >= n)
                        return lift_syntax_error(b, t[n - 1], err);
        }
        l = lift_new(b, (size_t)t[0]->start, LIFT_SUBSCRIBE);
        if (!l)
                return row_error_oom(err);
        l->copy = copy;
        if (i < end && t[i]->token == PG_QUERY__TOKEN__TO)
                i++;
        if (i < end && t[i]->token == PG_QUERY__TOKEN__ASCII_40) {
                l->unsupported = (size_t)t[i]->start + 1;       /* SUBSCRIBE (query) */
                goto done;
        }
        if (i + 2 < end && token_is_word(b, t[i], "public") && t[i + 1]->token == PG_QUERY__TOKEN__ASCII_46)
                i += 2;
        if (i >= end || !token_is_name(t[i]))
                return lift_syntax_error(b, t[i < n ? i : n - 1], err);
        name = i++;
        l->on = token_ident(b, t[name]);
        if (!l->on)
                return row_error_oom(err);
        l->location = (size_t)t[name]->start;
        r = lift_subscribe_tail(b, l, t, i, end, copy, err);
        if (r < 0)
                return r;
        if (copy && !l->unsupported) {
                /* ) TO STDOUT, and nothing else (COPY's options: 0A000). */
                if (end + 2 >= n || t[end + 1]->token != PG_QUERY__TOKEN__TO ||
                    !token_is_word(b, t[end + 2], "stdout"))
                        l->unsupported = (size_t)t[end + 1 < n ? end + 1 : end]->start + 1;
                else if (end + 3 < n)
                        l->unsupported = (size_t)t[end + 3]->start + 1;
        }
done:
        blank(cleaned, t[0], t[n - 1]);
        memcpy(cleaned + t[0]->start, "SELECT", 6);
        return 0;
}

/* Lift the Materialize-only forms a statement's tokens begin with. */
static int lift_statement(struct sql_batch *b, char *cleaned, PgQuery__ScanToken **t, size_t n,
                          struct row_error *err)
{
        if (n >= 3 && t[0]->token == PG_QUERY__TOKEN__CREATE &&
            t[1]->token == PG_QUERY__TOKEN__DEFAULT && t[2]->token == PG_QUERY__TOKEN__INDEX)
                return lift_default_index(b, cleaned, t, n, err);
        if (n >= 3 && t[0]->token == PG_QUERY__TOKEN__CREATE &&
            t[1]->token == PG_QUERY__TOKEN__MATERIALIZED && t[2]->token == PG_QUERY__TOKEN__VIEW)
                return lift_mv_options(b, cleaned, t, n, err);
        if (n >= 2 && t[0]->token == PG_QUERY__TOKEN__ALTER && token_is_word(b, t[1], "sink"))
                return lift_alter_sink(b, cleaned, t, n, err);
        if (n >= 8 && t[0]->token == PG_QUERY__TOKEN__ALTER)
                return lift_alter_retain(b, cleaned, t, n, err);
        if (n >= 2 && t[0]->token == PG_QUERY__TOKEN__CREATE && token_is_word(b, t[1], "sink"))
                return lift_create_sink(b, cleaned, t, n, err);
        if (n >= 2 && t[0]->token == PG_QUERY__TOKEN__DROP && token_is_word(b, t[1], "sink"))
                return lift_drop_sink(b, cleaned, t, n, SQL_OBJECT_SINK, err);
        if (n >= 2 && t[0]->token == PG_QUERY__TOKEN__CREATE && token_is_word(b, t[1], "source"))
                return lift_create_source(b, cleaned, t, n, err);
        if (n >= 2 && t[0]->token == PG_QUERY__TOKEN__DROP && token_is_word(b, t[1], "source"))
                return lift_drop_sink(b, cleaned, t, n, SQL_OBJECT_SOURCE, err);
        if (n >= 2 && token_is_word(b, t[0], "subscribe"))
                return lift_subscribe(b, cleaned, t, n, err);
        if (n >= 4 && t[0]->token == PG_QUERY__TOKEN__COPY && t[1]->token == PG_QUERY__TOKEN__ASCII_40 &&
            token_is_word(b, t[2], "subscribe"))
                return lift_subscribe(b, cleaned, t, n, err);
        if (n == 3 && t[0]->token == PG_QUERY__TOKEN__SHOW &&
            t[1]->token == PG_QUERY__TOKEN__MATERIALIZED && token_is_word(b, t[2], "views")) {
                if (!lift_new(b, (size_t)t[0]->start, LIFT_SHOW_MATERIALIZED_VIEWS))
                        return row_error_oom(err);
                blank(cleaned, t[1], t[1]);
        }
        return 0;
}

/* One statement's tokens (comments removed): lift its AS OF clause, if it has one, into
 * b->clauses and blank it in `cleaned`. */
static int lift_segment(struct sql_batch *b, char *cleaned, PgQuery__ScanToken **t, size_t n,
                        struct row_error *err)
{
        PgQuery__ParseResult *tree = NULL;
        struct as_of_clause *c;
        size_t as = SIZE_MAX, begin, end;
        bool saw_from = false;
        int depth = 0, r;

        for (size_t i = 0; i < n; i++) {
                switch (t[i]->token) {
                case PG_QUERY__TOKEN__ASCII_40:
                case PG_QUERY__TOKEN__ASCII_91:
                        depth++;
                        break;
                case PG_QUERY__TOKEN__ASCII_41:
                case PG_QUERY__TOKEN__ASCII_93:
                        depth--;
                        break;
                case PG_QUERY__TOKEN__FROM:
                        saw_from = saw_from || depth == 0;
                        break;
                case PG_QUERY__TOKEN__AS:
                        /* AS OF and at least one token of expression after it. */
                        if (depth == 0 && i + 2 < n && t[i + 1]->token == PG_QUERY__TOKEN__OF)
                                as = i;
                        /* `... FROM ... AS OF` ending the statement: PostgreSQL would take
                         * `of` for a table's alias; here it is an AS OF without its time
                         * (`SELECT 1 AS of` stays a column's alias). */
                        if (depth == 0 && i + 2 == n && t[i + 1]->token == PG_QUERY__TOKEN__OF && saw_from) {
                                row_error_set(err, -EINVAL, "42601", "syntax error at end of input");
                                row_error_detail(err, "AS OF needs a timestamp.");
                                err->position = (unsigned)t[i + 1]->end + 1;
                                return -EINVAL;
                        }
                        break;
                default:
                        break;
                }
        }
        if (as == SIZE_MAX)
                return 0;
        begin = (size_t)t[as + 2]->start;
        end = (size_t)t[n - 1]->end;
        if (t[as]->start < 0 || begin > end || end > b->len)
                return row_error_set(err, -EINVAL, "XX000", "scanner returned bad offsets");
        /* Not one expression (e.g. `SELECT a AS of FROM t`): leave the text alone and let
         * PostgreSQL judge it. */
        r = parse_expression(b, begin, end, &tree);
        if (r < 0)
                return row_error_oom(err);
        if (r == 0)
                return 0;
        c = realloc(b->clauses, (b->n_clauses + 1) * sizeof(*c));
        if (!c)
                return row_error_oom(err);
        b->clauses = c;
        b->clauses[b->n_clauses++] = (struct as_of_clause){
                .begin = (size_t)t[as]->start, .expr_begin = begin, .expr_end = end, .tree = tree,
        };
        memset(cleaned + t[as]->start, ' ', end - (size_t)t[as]->start);
        return 0;
}

/* Note 11: an upper bound on how deep the parse tree of t[0, n) nests, and in *ret_at
 * the first token where the bound passes `limit` (n if it never does).  Each bracket
 * and each CASE ... END is a level; within a level, every token may add one, except
 * names and constants, and the separators of siblings that the parser keeps in one
 * list: ',' and WHEN, and AND and OR, whose chains it flattens into one node. */
static int nesting_bound(PgQuery__ScanToken *const *t, size_t n, size_t limit, size_t *ret_at)
{
        _cleanup_free_ size_t *level = NULL;    /* tokens counted at each open level */
        size_t depth = 0, bound = 0;

        level = calloc(n + 1, sizeof(*level));
        if (!level)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                switch (t[i]->token) {
                case PG_QUERY__TOKEN__ASCII_40:         /* ( */
                case PG_QUERY__TOKEN__ASCII_91:         /* [ */
                case PG_QUERY__TOKEN__CASE:
                        level[++depth] = 0;
                        bound++;
                        break;
                case PG_QUERY__TOKEN__ASCII_41:         /* ) */
                case PG_QUERY__TOKEN__ASCII_93:         /* ] */
                case PG_QUERY__TOKEN__END_P:
                        /* An unbalanced close is the parser's error to report. */
                        if (depth > 0)
                                bound -= level[depth--] + 1;
                        break;
                case PG_QUERY__TOKEN__ASCII_44:         /* , */
                case PG_QUERY__TOKEN__WHEN:
                case PG_QUERY__TOKEN__AND:
                case PG_QUERY__TOKEN__OR:
                        bound -= level[depth];
                        level[depth] = 0;
                        break;
                case PG_QUERY__TOKEN__ASCII_59:         /* ; a new statement */
                        depth = bound = 0;
                        level[0] = 0;
                        break;
                case PG_QUERY__TOKEN__IDENT:
                case PG_QUERY__TOKEN__UIDENT:
                case PG_QUERY__TOKEN__FCONST:
                case PG_QUERY__TOKEN__SCONST:
                case PG_QUERY__TOKEN__USCONST:
                case PG_QUERY__TOKEN__BCONST:
                case PG_QUERY__TOKEN__XCONST:
                case PG_QUERY__TOKEN__ICONST:
                case PG_QUERY__TOKEN__PARAM:
                case PG_QUERY__TOKEN__ASCII_46:         /* . of a qualified name */
                        break;
                default:
                        level[depth]++;
                        bound++;
                        break;
                }
                if (bound > limit) {
                        *ret_at = i;
                        return 0;
                }
        }
        *ret_at = n;
        return 0;
}

/* Split the query into statements on PostgreSQL's tokens and lift AS OF from each. */
static int lift_as_of(struct sql_batch *b, char *cleaned, struct row_error *err)
{
        PgQueryScanResult sr = pg_query_scan(b->query);
        PgQuery__ScanResult *s = NULL;
        _cleanup_free_ PgQuery__ScanToken **t = NULL;
        size_t n = 0, seg = 0;
        int r = 0;

        if (sr.error) {
                r = row_error_set(err, -EINVAL, "42601", "%s", sr.error->message);
                if (err && sr.error->cursorpos > 0)
                        err->position = (unsigned)sr.error->cursorpos;
                goto out;
        }
        s = pg_query__scan_result__unpack(&b->pa, sr.pbuf.len, (const uint8_t *)sr.pbuf.data);
        if (!s) {
                r = row_error_oom(err);
                goto out;
        }
        t = malloc((s->n_tokens + 1) * sizeof(*t));
        if (!t) {
                r = row_error_oom(err);
                goto out;
        }
        for (size_t i = 0; i < s->n_tokens; i++)
                if (!token_is_comment(s->tokens[i]))
                        t[n++] = s->tokens[i];
        r = nesting_bound(t, n, SQL_MAX_NESTING, &seg);
        if (r < 0) {
                r = row_error_oom(err);
                goto out;
        }
        if (seg < n) {
                r = row_error_set(err, -EINVAL, "54001",
                                  "statement is too complex: it nests more than %d levels",
                                  SQL_MAX_NESTING);
                if (err)
                        err->position = char_position(b->query, b->len, (size_t)t[seg]->start);
                goto out;
        }
        seg = 0;
        for (size_t i = 0; i <= n; i++) {
                if (i < n && t[i]->token != PG_QUERY__TOKEN__ASCII_59)
                        continue;
                r = lift_segment(b, cleaned, t + seg, i - seg, err);
                if (r >= 0)
                        r = lift_statement(b, cleaned, t + seg, i - seg, err);
                if (r < 0)
                        goto out;
                seg = i + 1;
        }
out:
        /* s stays in the arena (note 9) */
        pg_query_free_scan_result(sr);
        return r;
}

int sql_parse(const char *query, struct sql_batch **ret, struct row_error *err)
{
        _cleanup_(sql_batch_freep) struct sql_batch *b = NULL;
        _cleanup_free_ char *cleaned = NULL;
        int r;

        assert(query);
        b = calloc(1, sizeof(*b));
        if (!b)
                return row_error_oom(err);
        b->arena = (struct row_arena){ .chunk = PARSE_ARENA_CHUNK };
        b->pa = row_arena_allocator(&b->arena);
        b->query = strdup(query);
        cleaned = strdup(query);
        if (!b->query || !cleaned)
                return row_error_oom(err);
        b->len = strlen(query);

        r = lift_as_of(b, cleaned, err);
        if (r < 0)
                return r;
        r = pg_parse(b, cleaned, &b->tree, err);
        if (r < 0) {
                /* A character of the blanked copy -> the same byte -> a character of the
                 * query (a blanked multibyte character became several spaces). */
                if (err && err->position)
                        err->position = char_position(
                                query, b->len, byte_offset(cleaned, b->len, err->position));
                return r;
        }

        b->stmts = calloc(b->tree->n_stmts ? b->tree->n_stmts : 1, sizeof(*b->stmts));
        if (!b->stmts)
                return row_error_oom(err);
        for (size_t i = 0; i < b->tree->n_stmts; i++) {
                const PgQuery__RawStmt *raw = b->tree->stmts[i];
                struct batch_stmt *bs = &b->stmts[i];
                size_t begin = (size_t)raw->stmt_location;
                size_t end = raw->stmt_len ? begin + (size_t)raw->stmt_len : b->len;

                if (raw->stmt_location < 0 || raw->stmt_len < 0 || end > b->len || !raw->stmt)
                        return row_error_set(err, -EINVAL, "XX000",
                                             "parser returned a bad statement location");
                for (size_t k = 0; k < b->n_clauses; k++)
                        if (b->clauses[k].begin >= begin && b->clauses[k].begin < end)
                                bs->as_of = &b->clauses[k];
                for (size_t k = 0; k < b->n_lifts; k++)
                        if (b->lifts[k].begin >= begin && b->lifts[k].begin < end)
                                bs->lift = &b->lifts[k];
                while (begin < end && isspace((unsigned char)query[begin]))
                        begin++;
                while (end > begin && isspace((unsigned char)query[end - 1]))
                        end--;
                *bs = (struct batch_stmt){ .raw = raw, .begin = begin, .end = end,
                                           .as_of = bs->as_of, .lift = bs->lift };
                b->n_stmts++;
        }
        *ret = TAKE_PTR(b);
        return 0;
}
