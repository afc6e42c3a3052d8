/* adapter-sql.c -- parse, analyze and plan SQL for the adapter (adapter-sql.h).
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
 * (3) Types.  An analyzed expression is a plan Expr with a concrete type, except an
 *     untyped literal (a string constant, NULL, a parameter without a type) that stays
 *     "unknown" until its context decides, as in PostgreSQL: the other operand of an
 *     operator, the column an INSERT writes, boolean under AND/OR/NOT/WHERE, text for a
 *     SELECT output.  Deciding parses the literal's text for the type, so '12x' for an
 *     integer is 22P02 pointing at the literal.  Mixed int4/int8 operands are promoted
 *     to int8 with a cast, as PostgreSQL's int48 operators would compute.
 *
 * (4) Constant folding.  A call whose arguments are all literals is evaluated at once
 *     with row_expr_eval() (common/row), the code the controller runs, so the adapter
 *     can never fold to a different value.  mz_now() is not folded: its value is the
 *     statement's timestamp, chosen after planning.
 *
 * (5) Ownership.  Every Expr, Relation and Peek is malloc'ed and has exactly one owner;
 *     protobuf-c's free_unpacked() frees a tree built this way (it frees every set
 *     member, skipping default strings).  Builders that take children consume them even
 *     when they fail, so callers never free twice.  Catalog answers are borrowed for one
 *     sql_analyze() call; anything kept is copied.
 *
 * (6) Logical inputs are collected while names resolve (add_input()), independently of
 *     the plan, so a later optimizer may remove a Get without losing the input.
 */
#include "adapter-sql.h"

#include <assert.h>
#include <ctype.h>
#include <pg_query.h>
#include <pg_query/pg_query.pb-c.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "row-expr.h"
#include "util.h"

/* Analysis recursion bound: half of what the evaluator accepts, since promotion and
 * casts may add levels to the plan. */
#define ANALYZE_MAX_DEPTH (ROW_EXPR_MAX_DEPTH / 2)

#define AS_OF_PREFIX "SELECT "

static const char *const HINT_OPERATOR =
        "No operator matches the given name and argument types. "
        "You might need to add explicit type casts.";
static const char *const HINT_FUNCTION =
        "No function matches the given name and argument types. "
        "You might need to add explicit type casts.";

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
static unsigned char_position(const char *s, size_t len, size_t off)
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

struct as_of_clause {
        size_t begin;                   /* byte offset of the AS token */
        size_t expr_begin, expr_end;    /* the expression's bytes */
        PgQuery__ParseResult *tree;     /* AS_OF_PREFIX + expression */
};

struct batch_stmt {
        const PgQuery__RawStmt *raw;
        size_t begin, end;              /* the statement's trimmed text */
        const struct as_of_clause *as_of;
};

struct sql_batch {
        char *query;
        size_t len;
        PgQuery__ParseResult *tree;
        struct batch_stmt *stmts;
        size_t n_stmts;
        struct as_of_clause *clauses;
        size_t n_clauses;
};

struct sql_batch *sql_batch_free(struct sql_batch *b)
{
        if (!b)
                return NULL;
        for (size_t i = 0; i < b->n_clauses; i++)
                if (b->clauses[i].tree)
                        pg_query__parse_result__free_unpacked(b->clauses[i].tree, NULL);
        free(b->clauses);
        if (b->tree)
                pg_query__parse_result__free_unpacked(b->tree, NULL);
        free(b->stmts);
        free(b->query);
        free(b);
        return NULL;
}

static void sql_batch_freep(struct sql_batch **b)
{
        *b = sql_batch_free(*b);
}

size_t sql_batch_size(const struct sql_batch *b)
{
        return b->n_stmts;
}

/* Run PostgreSQL's parser.  A syntax error is 42601 with PostgreSQL's message and its
 * position as a character of `sql`. */
static int pg_parse(const char *sql, PgQuery__ParseResult **ret, struct row_error *err)
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
        *ret = pg_query__parse_result__unpack(NULL, pr.parse_tree.len,
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

/* One statement's tokens (comments removed): lift its AS OF clause, if it has one, into
 * b->clauses and blank it in `cleaned`. */
static int lift_segment(struct sql_batch *b, char *cleaned, PgQuery__ScanToken **t, size_t n,
                        struct row_error *err)
{
        _cleanup_free_ char *expr = NULL;
        PgQuery__ParseResult *tree = NULL;
        struct as_of_clause *c;
        size_t as = SIZE_MAX, begin, end;
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
                case PG_QUERY__TOKEN__AS:
                        /* AS OF and at least one token of expression after it. */
                        if (depth == 0 && i + 2 < n && t[i + 1]->token == PG_QUERY__TOKEN__OF)
                                as = i;
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
        if (asprintf(&expr, AS_OF_PREFIX "%.*s", (int)(end - begin), b->query + begin) < 0) {
                expr = NULL;
                return row_error_oom(err);
        }
        /* Not one expression (e.g. `SELECT a AS of FROM t`): leave the text alone and let
         * PostgreSQL judge it. */
        r = pg_parse(expr, &tree, NULL);
        if (r == -ENOMEM)
                return row_error_oom(err);
        if (r < 0)
                return 0;
        if (!is_single_expression(tree)) {
                pg_query__parse_result__free_unpacked(tree, NULL);
                return 0;
        }
        c = realloc(b->clauses, (b->n_clauses + 1) * sizeof(*c));
        if (!c) {
                pg_query__parse_result__free_unpacked(tree, NULL);
                return row_error_oom(err);
        }
        b->clauses = c;
        b->clauses[b->n_clauses++] = (struct as_of_clause){
                .begin = (size_t)t[as]->start, .expr_begin = begin, .expr_end = end, .tree = tree,
        };
        memset(cleaned + t[as]->start, ' ', end - (size_t)t[as]->start);
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
        s = pg_query__scan_result__unpack(NULL, sr.pbuf.len, (const uint8_t *)sr.pbuf.data);
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
        for (size_t i = 0; i <= n; i++) {
                if (i < n && t[i]->token != PG_QUERY__TOKEN__ASCII_59)
                        continue;
                r = lift_segment(b, cleaned, t + seg, i - seg, err);
                if (r < 0)
                        goto out;
                seg = i + 1;
        }
out:
        if (s)
                pg_query__scan_result__free_unpacked(s, NULL);
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
        b->query = strdup(query);
        cleaned = strdup(query);
        if (!b->query || !cleaned)
                return row_error_oom(err);
        b->len = strlen(query);

        r = lift_as_of(b, cleaned, err);
        if (r < 0)
                return r;
        r = pg_parse(cleaned, &b->tree, err);
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
                while (begin < end && isspace((unsigned char)query[begin]))
                        begin++;
                while (end > begin && isspace((unsigned char)query[end - 1]))
                        end--;
                *bs = (struct batch_stmt){ .raw = raw, .begin = begin, .end = end,
                                           .as_of = bs->as_of };
                b->n_stmts++;
        }
        *ret = TAKE_PTR(b);
        return 0;
}

/* ---- Plan builders (note 5). ---- */

static void expr_free(Coord__Plan__Expr *e)
{
        if (e)
                coord__plan__expr__free_unpacked(e, NULL);
}

static void expr_freep(Coord__Plan__Expr **e)
{
        expr_free(*e);
        *e = NULL;
}

static void rel_free(Coord__Plan__Relation *r)
{
        if (r)
                coord__plan__relation__free_unpacked(r, NULL);
}

static void rel_freep(Coord__Plan__Relation **r)
{
        rel_free(*r);
        *r = NULL;
}

static Coord__Plan__Expr *expr_new(int type)
{
        Coord__Plan__Expr *e = malloc(sizeof(*e));

        if (!e)
                return NULL;
        coord__plan__expr__init(e);
        e->type = (Coord__Plan__Type)type;
        return e;
}

static Coord__Plan__Expr *expr_column(int type, uint32_t index)
{
        Coord__Plan__Expr *e = expr_new(type);

        if (!e)
                return NULL;
        e->kind_case = COORD__PLAN__EXPR__KIND_COLUMN;
        e->column = index;
        return e;
}

/* A literal holding a copy of the datum. */
static Coord__Plan__Expr *expr_literal(int type, const struct row_datum *d)
{
        Coord__Plan__Expr *e = expr_new(type);
        Coord__Plan__Datum *lit = malloc(sizeof(*lit));

        if (!e || !lit)
                goto fail;
        coord__plan__datum__init(lit);
        switch (d->kind) {
        case ROW_KIND_NULL:
                lit->value_case = COORD__PLAN__DATUM__VALUE_NULL_VALUE;
                lit->null_value = true;
                break;
        case ROW_KIND_BOOL:
                lit->value_case = COORD__PLAN__DATUM__VALUE_BOOL_VALUE;
                lit->bool_value = d->b;
                break;
        case ROW_KIND_INT:
                lit->value_case = COORD__PLAN__DATUM__VALUE_INT_VALUE;
                lit->int_value = d->i;
                break;
        case ROW_KIND_TEXT:
                lit->value_case = COORD__PLAN__DATUM__VALUE_TEXT_VALUE;
                lit->text_value.data = malloc(d->text.len ? d->text.len : 1);
                if (!lit->text_value.data)
                        goto fail;
                if (d->text.len)
                        memcpy(lit->text_value.data, d->text.ptr, d->text.len);
                lit->text_value.len = d->text.len;
                break;
        default:
                assert(!"bad datum kind");
                goto fail;
        }
        e->kind_case = COORD__PLAN__EXPR__KIND_LITERAL;
        e->literal = lit;
        return e;
fail:
        if (lit)
                coord__plan__datum__free_unpacked(lit, NULL);
        free(e);
        return NULL;
}

/* A call consuming args[0..n) whether it succeeds or not. */
static Coord__Plan__Expr *expr_call(int type, Coord__Plan__Func func, Coord__Plan__Expr **args,
                                    size_t n)
{
        Coord__Plan__Expr *e = expr_new(type);
        Coord__Plan__Call *c = malloc(sizeof(*c));
        Coord__Plan__Expr **a = n ? malloc(n * sizeof(*a)) : NULL;

        if (!e || !c || (n && !a)) {
                for (size_t i = 0; i < n; i++)
                        expr_free(args[i]);
                free(e);
                free(c);
                free(a);
                return NULL;
        }
        coord__plan__call__init(c);
        c->func = func;
        c->n_args = n;
        c->args = a;
        for (size_t i = 0; i < n; i++)
                a[i] = args[i];
        e->kind_case = COORD__PLAN__EXPR__KIND_CALL;
        e->call = c;
        return e;
}

static Coord__Plan__Relation *rel_new(void)
{
        Coord__Plan__Relation *r = malloc(sizeof(*r));

        if (r)
                coord__plan__relation__init(r);
        return r;
}

static Coord__Plan__Relation *rel_get(const struct sql_relation *src)
{
        Coord__Plan__Relation *r = rel_new();
        Coord__Plan__Get *g = malloc(sizeof(*g));
        Coord__Plan__Type *types = malloc((src->n_columns ? src->n_columns : 1) * sizeof(*types));

        if (!r || !g || !types) {
                free(r);
                free(g);
                free(types);
                return NULL;
        }
        coord__plan__get__init(g);
        g->id = src->id;
        g->n_column_types = src->n_columns;
        g->column_types = types;
        for (size_t i = 0; i < src->n_columns; i++)
                types[i] = (Coord__Plan__Type)src->columns[i].type;
        r->kind_case = COORD__PLAN__RELATION__KIND_GET;
        r->get = g;
        return r;
}

/* One row with no columns: the input of a SELECT without FROM. */
static Coord__Plan__Relation *rel_unit(void)
{
        Coord__Plan__Relation *r = rel_new();
        Coord__Plan__Constant *c = malloc(sizeof(*c));
        Coord__Plan__Update **rows = malloc(sizeof(*rows));
        Coord__Plan__Update *u = malloc(sizeof(*u));
        uint8_t *bytes = NULL;
        size_t len = 0;

        if (!r || !c || !rows || !u || row_encode(NULL, 0, &bytes, &len) < 0) {
                free(r);
                free(c);
                free(rows);
                free(u);
                return NULL;
        }
        coord__plan__constant__init(c);
        coord__plan__update__init(u);
        u->row.data = bytes;
        u->row.len = len;
        u->diff = 1;
        rows[0] = u;
        c->n_rows = 1;
        c->rows = rows;
        r->kind_case = COORD__PLAN__RELATION__KIND_CONSTANT;
        r->constant = c;
        return r;
}

/* Filter(input, [pred]); consumes both. */
static Coord__Plan__Relation *rel_filter(Coord__Plan__Relation *input, Coord__Plan__Expr *pred)
{
        Coord__Plan__Relation *r = rel_new();
        Coord__Plan__Filter *f = malloc(sizeof(*f));
        Coord__Plan__Expr **preds = malloc(sizeof(*preds));

        if (!r || !f || !preds) {
                free(r);
                free(f);
                free(preds);
                rel_free(input);
                expr_free(pred);
                return NULL;
        }
        coord__plan__filter__init(f);
        f->input = input;
        preds[0] = pred;
        f->n_predicates = 1;
        f->predicates = preds;
        r->kind_case = COORD__PLAN__RELATION__KIND_FILTER;
        r->filter = f;
        return r;
}

/* Map(input, exprs); consumes input and the exprs array with its contents. */
static Coord__Plan__Relation *rel_map(Coord__Plan__Relation *input, Coord__Plan__Expr **exprs,
                                      size_t n)
{
        Coord__Plan__Relation *r = rel_new();
        Coord__Plan__Map *m = malloc(sizeof(*m));

        if (!r || !m) {
                free(r);
                free(m);
                rel_free(input);
                for (size_t i = 0; i < n; i++)
                        expr_free(exprs[i]);
                free(exprs);
                return NULL;
        }
        coord__plan__map__init(m);
        m->input = input;
        m->n_exprs = n;
        m->exprs = exprs;
        r->kind_case = COORD__PLAN__RELATION__KIND_MAP;
        r->map = m;
        return r;
}

/* Project(input, outputs); consumes input and the outputs array. */
static Coord__Plan__Relation *rel_project(Coord__Plan__Relation *input, uint32_t *outputs,
                                          size_t n)
{
        Coord__Plan__Relation *r = rel_new();
        Coord__Plan__Project *p = malloc(sizeof(*p));

        if (!r || !p) {
                free(r);
                free(p);
                rel_free(input);
                free(outputs);
                return NULL;
        }
        coord__plan__project__init(p);
        p->input = input;
        p->n_outputs = n;
        p->outputs = outputs;
        r->kind_case = COORD__PLAN__RELATION__KIND_PROJECT;
        r->project = p;
        return r;
}

/* ---- The analyzer. ---- */

struct analyzer {
        const struct sql_batch *b;
        const struct sql_catalog_ops *ops;
        void *userdata;
        const struct sql_params *params;
        struct row_error *err;
        struct sql_stmt *stmt;

        /* Added to a node location to get a byte offset in the query (note 2). */
        long loc_base;
        unsigned depth;
        /* Non-NULL where mz_now() may not appear: names the place for the error. */
        const char *no_mz_now;

        /* The relation in FROM; NULL outside of it. */
        const struct sql_relation *scope;
        const char *scope_name;         /* its alias, or its name */

        struct row_arena arena;         /* texts computed while folding */
        size_t cap_inputs;
};

/* An expression under analysis (note 3). */
struct typed {
        Coord__Plan__Expr *e;
        bool unknown;           /* an untyped literal: a TEXT or NULL literal, undecided */
        int location;           /* in the parsed text, -1 if none */
};

static void typed_done(struct typed *t)
{
        expr_freep(&t->e);
}

/* Set the error's position from a node location. */
static void at(struct analyzer *a, int location)
{
        long off = (long)location + a->loc_base;

        if (a->err && location >= 0 && off >= 0)
                a->err->position = char_position(a->b->query, a->b->len, (size_t)off);
}

#define FAIL_AT(a, location, sqlstate, ...)                                               \
        ({                                                                                  \
                int _r_ = row_error_set((a)->err, -EINVAL, sqlstate, __VA_ARGS__);          \
                at(a, location);                                                            \
                _r_;                                                                        \
        })

#define FAIL(a, sqlstate, ...) row_error_set((a)->err, -EINVAL, sqlstate, __VA_ARGS__)

static int oom(struct analyzer *a)
{
        return row_error_oom(a->err);
}

static int add_input(struct analyzer *a, uint64_t id)
{
        struct sql_stmt *s = a->stmt;
        size_t i = 0;

        while (i < s->n_inputs && s->inputs[i] < id)
                i++;
        if (i < s->n_inputs && s->inputs[i] == id)
                return 0;
        if (s->n_inputs == a->cap_inputs) {
                size_t cap = a->cap_inputs ? 2 * a->cap_inputs : 4;
                uint64_t *p = realloc(s->inputs, cap * sizeof(*p));

                if (!p)
                        return oom(a);
                s->inputs = p;
                a->cap_inputs = cap;
        }
        memmove(s->inputs + i + 1, s->inputs + i, (s->n_inputs - i) * sizeof(*s->inputs));
        s->inputs[i] = id;
        s->n_inputs++;
        return 0;
}

static int add_notice(struct analyzer *a, const char *sqlstate, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static int add_notice(struct analyzer *a, const char *sqlstate, const char *fmt, ...)
{
        struct sql_stmt *s = a->stmt;
        struct row_error *n = realloc(s->notices, (s->n_notices + 1) * sizeof(*n));
        va_list ap;

        if (!n)
                return oom(a);
        s->notices = n;
        n = &s->notices[s->n_notices++];
        memset(n, 0, sizeof(*n));
        memcpy(n->sqlstate, sqlstate, 6);
        va_start(ap, fmt);
        if (vsnprintf(n->message, sizeof(n->message), fmt, ap) < 0)
                n->message[0] = '\0';
        va_end(ap);
        return 0;
}

/* Look a name up in the catalog: 0, -ENOENT (err untouched), or an error. */
static int lookup(struct analyzer *a, const char *name, struct sql_relation *ret)
{
        struct sql_relation rel = { 0 };
        int r = a->ops && a->ops->lookup ? a->ops->lookup(a->userdata, name, &rel) : -ENOENT;

        if (r == -ENOENT)
                return r;
        if (r < 0)
                return row_error_set(a->err, r, "XX000", "catalog lookup of \"%s\" failed: %s",
                                     name, strerrordesc_np(-r) ? strerrordesc_np(-r) : "?");
        if (rel.id == 0 || rel.kind < 0 || rel.kind >= _SQL_OBJECT_KIND_MAX ||
            rel.n_columns > ROW_MAX_COLUMNS || (rel.n_columns && !rel.columns))
                return FAIL(a, "XX000", "catalog returned an invalid entry for \"%s\"", name);
        for (size_t i = 0; i < rel.n_columns; i++)
                if (!rel.columns[i].name || !row_type_valid(rel.columns[i].type))
                        return FAIL(a, "XX000", "catalog returned an invalid column for \"%s\"",
                                    name);
        *ret = rel;
        return 0;
}

static const char *node_string(const PgQuery__Node *n)
{
        return n && n->node_case == PG_QUERY__NODE__NODE_STRING && n->string ? n->string->sval
                                                                            : NULL;
}

/* A relation name: schema "public" or none, no database. */
static int range_var_name(struct analyzer *a, const PgQuery__RangeVar *rv, const char **ret)
{
        if (rv->catalogname && rv->catalogname[0])
                return FAIL_AT(a, rv->location, "0A000",
                               "cross-database references are not implemented: %s.%s.%s",
                               rv->catalogname, rv->schemaname, rv->relname);
        if (rv->schemaname && rv->schemaname[0] && strcmp(rv->schemaname, "public") != 0)
                return FAIL_AT(a, rv->location, "3F000", "schema \"%s\" does not exist",
                               rv->schemaname);
        *ret = rv->relname;
        return 0;
}

/* A name given as a list of strings (DROP): [public.]name. */
static int list_name(struct analyzer *a, const PgQuery__Node *n, const char **ret)
{
        const PgQuery__List *l;
        const char *schema = NULL, *name;

        if (!n || n->node_case != PG_QUERY__NODE__NODE_LIST)
                return FAIL(a, "0A000", "unsupported object name");
        l = n->list;
        if (l->n_items < 1 || l->n_items > 2)
                return FAIL(a, "0A000", "qualified names with %zu parts are not supported",
                            l->n_items);
        if (l->n_items == 2)
                schema = node_string(l->items[0]);
        name = node_string(l->items[l->n_items - 1]);
        if (!name || (l->n_items == 2 && !schema))
                return FAIL(a, "0A000", "unsupported object name");
        if (schema && strcmp(schema, "public") != 0)
                return FAIL(a, "3F000", "schema \"%s\" does not exist", schema);
        *ret = name;
        return 0;
}

/* ---- Types. ---- */

static const char *typed_name(const struct typed *t)
{
        return t->unknown ? "unknown" : row_type_name((enum row_type)t->e->type);
}

static bool is_int(int type)
{
        return type == ROW_TYPE_INT4 || type == ROW_TYPE_INT8;
}

static bool is_literal(const Coord__Plan__Expr *e)
{
        return e->kind_case == COORD__PLAN__EXPR__KIND_LITERAL;
}

/* Resolve a type name as CREATE TABLE and casts write it. */
static int resolve_type(struct analyzer *a, const PgQuery__TypeName *tn, enum row_type *ret)
{
        static const struct {
                const char *name;
                enum row_type type;
        } ours[] = {
                { "int4", ROW_TYPE_INT4 }, { "integer", ROW_TYPE_INT4 }, { "int", ROW_TYPE_INT4 },
                { "int8", ROW_TYPE_INT8 }, { "bigint", ROW_TYPE_INT8 },
                { "text", ROW_TYPE_TEXT },
                { "bool", ROW_TYPE_BOOL }, { "boolean", ROW_TYPE_BOOL },
        };
        /* PostgreSQL types we know but do not support, by their PostgreSQL names. */
        static const struct {
                const char *name, *display;
        } theirs[] = {
                { "int2", "smallint" }, { "smallint", "smallint" },
                { "float4", "real" }, { "real", "real" },
                { "float8", "double precision" }, { "float", "double precision" },
                { "numeric", "numeric" }, { "decimal", "numeric" },
                { "varchar", "character varying" }, { "bpchar", "character" },
                { "char", "\"char\"" }, { "name", "name" },
                { "timestamp", "timestamp without time zone" },
                { "timestamptz", "timestamp with time zone" },
                { "date", "date" }, { "time", "time without time zone" },
                { "timetz", "time with time zone" }, { "interval", "interval" },
                { "json", "json" }, { "jsonb", "jsonb" }, { "bytea", "bytea" },
                { "uuid", "uuid" }, { "oid", "oid" }, { "regclass", "regclass" },
                { "regtype", "regtype" }, { "bit", "bit" }, { "varbit", "bit varying" },
        };
        const char *name, *schema = NULL;

        if (tn->n_names < 1 || tn->n_names > 2)
                return FAIL_AT(a, tn->location, "42704", "type does not exist");
        name = node_string(tn->names[tn->n_names - 1]);
        if (tn->n_names == 2)
                schema = node_string(tn->names[0]);
        if (!name || (tn->n_names == 2 && !schema))
                return FAIL_AT(a, tn->location, "42704", "type does not exist");
        if (schema && strcmp(schema, "pg_catalog") != 0)
                return FAIL_AT(a, tn->location, "42704", "type \"%s.%s\" does not exist", schema,
                               name);
        if (tn->n_array_bounds)
                return FAIL_AT(a, tn->location, "0A000", "array types are not supported");
        if (tn->setof || tn->pct_type)
                return FAIL_AT(a, tn->location, "0A000", "this type syntax is not supported");
        for (size_t i = 0; i < ELEMENTSOF(ours); i++) {
                if (strcmp(name, ours[i].name) != 0)
                        continue;
                if (tn->n_typmods)
                        return FAIL_AT(a, tn->location, "42601",
                                       "type modifier is not allowed for type \"%s\"", name);
                *ret = ours[i].type;
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(theirs); i++)
                if (strcmp(name, theirs[i].name) == 0)
                        return FAIL_AT(a, tn->location, "0A000", "type \"%s\" is not supported",
                                       theirs[i].display);
        return FAIL_AT(a, tn->location, "42704", "type \"%s\" does not exist", name);
}

/* ---- Expressions. ---- */

static int analyze_expr(struct analyzer *a, const PgQuery__Node *n, struct typed *ret);

/* Note 4: evaluate a call whose arguments are all literals. */
static int fold(struct analyzer *a, struct typed *t)
{
        const Coord__Plan__Expr *e = t->e;
        struct row_expr_ctx ctx = { .arena = &a->arena };
        struct row_datum d;
        Coord__Plan__Expr *lit;
        int r;

        if (e->kind_case != COORD__PLAN__EXPR__KIND_CALL ||
            e->call->func == COORD__PLAN__FUNC__FUNC_MZ_NOW)
                return 0;
        for (size_t i = 0; i < e->call->n_args; i++)
                if (!is_literal(e->call->args[i]))
                        return 0;
        r = row_expr_eval(e, NULL, 0, &ctx, &d, a->err);
        if (r < 0)
                return r;
        lit = expr_literal((int)e->type, &d);
        row_arena_reset(&a->arena);
        if (!lit)
                return oom(a);
        expr_free(t->e);
        t->e = lit;
        return 0;
}

/* Wrap t in a call of `func` with result type `type`, then fold. */
static int wrap(struct analyzer *a, struct typed *t, Coord__Plan__Func func, int type)
{
        Coord__Plan__Expr *e = TAKE_PTR(t->e);

        t->e = expr_call(type, func, &e, 1);
        if (!t->e)
                return oom(a);
        t->unknown = false;
        return fold(a, t);
}

/* Decide the type of an untyped literal (note 3). */
static int coerce_unknown(struct analyzer *a, struct typed *t, int type)
{
        const Coord__Plan__Datum *lit;
        struct row_datum d;
        Coord__Plan__Expr *e;
        int r;

        if (!t->unknown)
                return 0;
        assert(is_literal(t->e));
        lit = t->e->literal;
        t->unknown = false;
        if (lit->value_case == COORD__PLAN__DATUM__VALUE_NULL_VALUE) {
                t->e->type = (Coord__Plan__Type)type;
                return 0;
        }
        assert(lit->value_case == COORD__PLAN__DATUM__VALUE_TEXT_VALUE);
        /* For text too: a parameter's bytes come from the client unchecked (UTF-8). */
        r = row_datum_parse((enum row_type)type, (const char *)lit->text_value.data,
                            lit->text_value.len, &d, a->err);
        if (r < 0) {
                at(a, t->location);
                return r;
        }
        e = expr_literal(type, &d);
        if (!e)
                return oom(a);
        expr_free(t->e);
        t->e = e;
        return 0;
}

/* int4 -> int8 for mixed arithmetic and comparisons. */
static int promote(struct analyzer *a, struct typed *t, int type)
{
        if ((int)t->e->type == type)
                return 0;
        assert((int)t->e->type == ROW_TYPE_INT4 && type == ROW_TYPE_INT8);
        if (is_literal(t->e)) {
                t->e->type = (Coord__Plan__Type)type;
                return 0;
        }
        return wrap(a, t, COORD__PLAN__FUNC__FUNC_CAST, type);
}

/* An explicit cast (`x::type`, CAST(x AS type)). */
static int cast_to(struct analyzer *a, struct typed *t, int type, int location)
{
        int from;

        if (t->unknown)
                return coerce_unknown(a, t, type);
        from = (int)t->e->type;
        if (from == type)
                return 0;
        if (!row_expr_cast_allowed((enum row_type)from, (enum row_type)type))
                return FAIL_AT(a, location, "42846", "cannot cast type %s to %s",
                               row_type_name((enum row_type)from),
                               row_type_name((enum row_type)type));
        return wrap(a, t, COORD__PLAN__FUNC__FUNC_CAST, type);
}

static int require_bool(struct analyzer *a, struct typed *t, const char *what)
{
        int r = coerce_unknown(a, t, ROW_TYPE_BOOL);

        if (r < 0)
                return r;
        if ((int)t->e->type != ROW_TYPE_BOOL)
                return FAIL_AT(a, t->location, "42804",
                               "argument of %s must be type boolean, not type %s", what,
                               row_type_name((enum row_type)t->e->type));
        return 0;
}

static int no_operator(struct analyzer *a, const char *op, const struct typed *l,
                       const struct typed *r, int location)
{
        int rc;

        if (l)
                rc = FAIL_AT(a, location, "42883", "operator does not exist: %s %s %s",
                             typed_name(l), op, typed_name(r));
        else
                rc = FAIL_AT(a, location, "42883", "operator does not exist: %s %s", op,
                             typed_name(r));
        row_error_hint(a->err, "%s", HINT_OPERATOR);
        return rc;
}

static const struct {
        const char *name;
        Coord__Plan__Func func;
        bool comparison;
} binary_ops[] = {
        { "+", COORD__PLAN__FUNC__FUNC_ADD, false },
        { "-", COORD__PLAN__FUNC__FUNC_SUB, false },
        { "*", COORD__PLAN__FUNC__FUNC_MUL, false },
        { "/", COORD__PLAN__FUNC__FUNC_DIV, false },
        { "%", COORD__PLAN__FUNC__FUNC_MOD, false },
        { "=", COORD__PLAN__FUNC__FUNC_EQ, true },
        { "<>", COORD__PLAN__FUNC__FUNC_NE, true },
        { "<", COORD__PLAN__FUNC__FUNC_LT, true },
        { "<=", COORD__PLAN__FUNC__FUNC_LE, true },
        { ">", COORD__PLAN__FUNC__FUNC_GT, true },
        { ">=", COORD__PLAN__FUNC__FUNC_GE, true },
};

/* Resolve operand types for a binary operator, then build and fold the call into l. */
static int binary(struct analyzer *a, const char *op, struct typed *l, struct typed *r,
                  int location)
{
        Coord__Plan__Expr *args[2];
        Coord__Plan__Func func = COORD__PLAN__FUNC__FUNC_UNSPECIFIED;
        bool comparison = false;
        int type, rc;

        for (size_t i = 0; i < ELEMENTSOF(binary_ops); i++)
                if (strcmp(op, binary_ops[i].name) == 0) {
                        func = binary_ops[i].func;
                        comparison = binary_ops[i].comparison;
                }
        if (func == COORD__PLAN__FUNC__FUNC_UNSPECIFIED)
                return no_operator(a, op, l, r, location);

        if (l->unknown && r->unknown) {
                if (!comparison) {
                        rc = FAIL_AT(a, location, "42725",
                                     "operator is not unique: unknown %s unknown", op);
                        row_error_hint(a->err, "Could not choose a best candidate operator. "
                                               "You might need to add explicit type casts.");
                        return rc;
                }
                /* PostgreSQL compares two untyped literals as text. */
                rc = coerce_unknown(a, l, ROW_TYPE_TEXT);
                if (rc >= 0)
                        rc = coerce_unknown(a, r, ROW_TYPE_TEXT);
                if (rc < 0)
                        return rc;
        }
        /* An untyped operand takes the other's type, where the operator exists for it. */
        if (l->unknown && (comparison || is_int((int)r->e->type)))
                rc = coerce_unknown(a, l, (int)r->e->type);
        else if (r->unknown && (comparison || is_int((int)l->e->type)))
                rc = coerce_unknown(a, r, (int)l->e->type);
        else
                rc = 0;
        if (rc < 0)
                return rc;
        if (l->unknown || r->unknown)
                return no_operator(a, op, l, r, location);

        if (is_int((int)l->e->type) && is_int((int)r->e->type)) {
                bool wide = (int)l->e->type == ROW_TYPE_INT8 || (int)r->e->type == ROW_TYPE_INT8;

                type = wide ? ROW_TYPE_INT8 : ROW_TYPE_INT4;
                rc = promote(a, l, type);
                if (rc >= 0)
                        rc = promote(a, r, type);
                if (rc < 0)
                        return rc;
        } else if (!comparison || l->e->type != r->e->type) {
                return no_operator(a, op, l, r, location);
        }

        args[0] = TAKE_PTR(l->e);
        args[1] = TAKE_PTR(r->e);
        l->e = expr_call(comparison ? ROW_TYPE_BOOL : (int)args[0]->type, func, args, 2);
        if (!l->e)
                return oom(a);
        l->location = location;
        return fold(a, l);
}

static int analyze_a_expr(struct analyzer *a, const PgQuery__AExpr *x, struct typed *ret)
{
        _cleanup_(typed_done) struct typed l = { .location = -1 }, r = { .location = -1 };
        const char *op;
        int rc;

        if (x->kind != PG_QUERY__A__EXPR__KIND__AEXPR_OP) {
                static const char *const names[] = {
                        [PG_QUERY__A__EXPR__KIND__AEXPR_OP_ANY] = "ANY",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_OP_ALL] = "ALL",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_DISTINCT] = "IS DISTINCT FROM",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_NOT_DISTINCT] = "IS NOT DISTINCT FROM",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_NULLIF] = "NULLIF",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_IN] = "IN",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_LIKE] = "LIKE",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_ILIKE] = "ILIKE",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_SIMILAR] = "SIMILAR TO",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_BETWEEN] = "BETWEEN",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_NOT_BETWEEN] = "NOT BETWEEN",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_BETWEEN_SYM] = "BETWEEN SYMMETRIC",
                        [PG_QUERY__A__EXPR__KIND__AEXPR_NOT_BETWEEN_SYM] = "NOT BETWEEN SYMMETRIC",
                };
                const char *name = (unsigned)x->kind < ELEMENTSOF(names) ? names[x->kind] : NULL;

                return FAIL_AT(a, x->location, "0A000", "%s is not supported yet",
                               name ? name : "this operator");
        }
        op = x->n_name ? node_string(x->name[x->n_name - 1]) : NULL;
        if (!op || !x->rexpr)
                return FAIL_AT(a, x->location, "0A000", "this operator form is not supported");
        rc = analyze_expr(a, x->rexpr, &r);
        if (rc < 0)
                return rc;
        if (!x->lexpr) {
                /* Prefix operators: unary minus and plus. */
                if (r.unknown || !is_int((int)r.e->type) || (strcmp(op, "-") && strcmp(op, "+")))
                        return no_operator(a, op, NULL, &r, x->location);
                if (op[0] == '-') {
                        rc = wrap(a, &r, COORD__PLAN__FUNC__FUNC_NEG, (int)r.e->type);
                        if (rc < 0)
                                return rc;
                }
                r.location = x->location;
                *ret = r;
                r.e = NULL;
                return 0;
        }
        rc = analyze_expr(a, x->lexpr, &l);
        if (rc < 0)
                return rc;
        rc = binary(a, op, &l, &r, x->location);
        if (rc < 0)
                return rc;
        *ret = l;
        l.e = NULL;
        return 0;
}

static int analyze_bool_expr(struct analyzer *a, const PgQuery__BoolExpr *x, struct typed *ret)
{
        static const struct {
                const char *name;
                Coord__Plan__Func func;
        } ops[] = {
                [PG_QUERY__BOOL_EXPR_TYPE__AND_EXPR] = { "AND", COORD__PLAN__FUNC__FUNC_AND },
                [PG_QUERY__BOOL_EXPR_TYPE__OR_EXPR] = { "OR", COORD__PLAN__FUNC__FUNC_OR },
                [PG_QUERY__BOOL_EXPR_TYPE__NOT_EXPR] = { "NOT", COORD__PLAN__FUNC__FUNC_NOT },
        };
        _cleanup_free_ Coord__Plan__Expr **args = NULL;
        size_t n = 0;
        int rc = 0;

        if ((unsigned)x->boolop >= ELEMENTSOF(ops) || !ops[x->boolop].name || x->n_args < 1 ||
            (x->boolop == PG_QUERY__BOOL_EXPR_TYPE__NOT_EXPR && x->n_args != 1))
                return FAIL_AT(a, x->location, "XX000", "malformed boolean expression");
        args = malloc(x->n_args * sizeof(*args));
        if (!args)
                return oom(a);
        for (; n < x->n_args; n++) {
                struct typed t = { .location = -1 };

                rc = analyze_expr(a, x->args[n], &t);
                if (rc >= 0)
                        rc = require_bool(a, &t, ops[x->boolop].name);
                if (rc < 0) {
                        typed_done(&t);
                        goto fail;
                }
                args[n] = t.e;
        }
        ret->e = expr_call(ROW_TYPE_BOOL, ops[x->boolop].func, args, n);
        n = 0;
        if (!ret->e)
                return oom(a);
        ret->unknown = false;
        ret->location = x->location;
        return fold(a, ret);
fail:
        for (size_t i = 0; i < n; i++)
                expr_free(args[i]);
        return rc;
}

static int analyze_func_call(struct analyzer *a, const PgQuery__FuncCall *f, struct typed *ret)
{
        static const char *const aggregates[] = { "count", "sum", "min", "max", "avg" };
        const char *name = f->n_funcname ? node_string(f->funcname[f->n_funcname - 1]) : NULL;
        char types[256] = "";
        size_t used = 0;

        if (!name)
                return FAIL_AT(a, f->location, "42883", "function does not exist");
        for (size_t i = 0; i < ELEMENTSOF(aggregates); i++)
                if (f->agg_star || strcmp(name, aggregates[i]) == 0)
                        return FAIL_AT(a, f->location, "0A000",
                                       "aggregate functions are not supported yet");
        if (f->over)
                return FAIL_AT(a, f->location, "0A000", "window functions are not supported");
        if (strcmp(name, "mz_now") == 0 && f->n_args == 0 && !f->agg_distinct &&
            !f->n_agg_order && !f->agg_filter) {
                if (a->no_mz_now)
                        return FAIL_AT(a, f->location, "0A000",
                                       "calls to mz_now() in %s are not supported", a->no_mz_now);
                ret->e = expr_call(ROW_TYPE_INT8, COORD__PLAN__FUNC__FUNC_MZ_NOW, NULL, 0);
                if (!ret->e)
                        return oom(a);
                ret->unknown = false;
                ret->location = f->location;
                return 0;
        }
        /* Unknown: name the argument types the way PostgreSQL does. */
        for (size_t i = 0; i < f->n_args; i++) {
                struct typed t = { .location = -1 };
                int rc = analyze_expr(a, f->args[i], &t), w;

                if (rc < 0)
                        return rc;
                w = snprintf(types + used, sizeof(types) - used, "%s%s", i ? ", " : "",
                             typed_name(&t));
                typed_done(&t);
                if (w > 0 && (size_t)w < sizeof(types) - used)
                        used += (size_t)w;
        }
        FAIL_AT(a, f->location, "42883", "function %s(%s) does not exist", name, types);
        row_error_hint(a->err, "%s", HINT_FUNCTION);
        return -EINVAL;
}

static int analyze_column_ref(struct analyzer *a, const PgQuery__ColumnRef *c, struct typed *ret)
{
        const char *qualifier = NULL, *name = NULL;
        const struct sql_relation *rel = a->scope;

        if (c->n_fields < 1 || c->n_fields > 2)
                return FAIL_AT(a, c->location, "0A000",
                               "column references with %zu parts are not supported", c->n_fields);
        if (c->fields[c->n_fields - 1]->node_case == PG_QUERY__NODE__NODE_A_STAR)
                return FAIL_AT(a, c->location, "0A000", "* is not supported here");
        name = node_string(c->fields[c->n_fields - 1]);
        if (c->n_fields == 2)
                qualifier = node_string(c->fields[0]);
        if (!name || (c->n_fields == 2 && !qualifier))
                return FAIL_AT(a, c->location, "42601", "improper column reference");
        if (qualifier && (!rel || strcmp(qualifier, a->scope_name) != 0))
                return FAIL_AT(a, c->location, "42P01",
                               "missing FROM-clause entry for table \"%s\"", qualifier);
        for (size_t i = 0; rel && i < rel->n_columns; i++) {
                if (strcmp(rel->columns[i].name, name) != 0)
                        continue;
                ret->e = expr_column(rel->columns[i].type, (uint32_t)i);
                if (!ret->e)
                        return oom(a);
                ret->unknown = false;
                ret->location = c->location;
                return 0;
        }
        if (qualifier)
                return FAIL_AT(a, c->location, "42703", "column %s.%s does not exist", qualifier,
                               name);
        return FAIL_AT(a, c->location, "42703", "column \"%s\" does not exist", name);
}

/* An untyped literal holding text. */
static int unknown_literal(struct analyzer *a, const char *s, size_t len, int location,
                           struct typed *ret)
{
        struct row_datum d = ROW_DATUM_TEXT(s, (uint32_t)len);

        ret->e = expr_literal(ROW_TYPE_TEXT, &d);
        if (!ret->e)
                return oom(a);
        ret->unknown = true;
        ret->location = location;
        return 0;
}

static int analyze_const(struct analyzer *a, const PgQuery__AConst *c, struct typed *ret)
{
        struct row_datum d;
        int type, r;
        const char *s;

        ret->location = c->location;
        if (c->isnull) {
                d = ROW_DATUM_NULL;
                ret->e = expr_literal(ROW_TYPE_TEXT, &d);
                if (!ret->e)
                        return oom(a);
                ret->unknown = true;
                return 0;
        }
        switch (c->val_case) {
        case PG_QUERY__A__CONST__VAL_IVAL:
                d = ROW_DATUM_INT(c->ival->ival);
                type = ROW_TYPE_INT4;
                break;
        case PG_QUERY__A__CONST__VAL_FVAL:
                /* The parser leaves integers beyond int4 as "float" strings. */
                s = c->fval->fval;
                if (!s || !s[s[0] == '-'] || strspn(s + (s[0] == '-'), "0123456789") !=
                                                     strlen(s + (s[0] == '-')))
                        return FAIL_AT(a, c->location, "0A000",
                                       "type \"numeric\" is not supported");
                r = row_datum_parse(ROW_TYPE_INT8, s, strlen(s), &d, a->err);
                if (r < 0) {
                        at(a, c->location);
                        return r;
                }
                /* As PostgreSQL's make_const(): int4 when it fits (-2147483648 does). */
                type = row_datum_fits(&d, ROW_TYPE_INT4) ? ROW_TYPE_INT4 : ROW_TYPE_INT8;
                break;
        case PG_QUERY__A__CONST__VAL_BOOLVAL:
                d = ROW_DATUM_BOOL(c->boolval->boolval);
                type = ROW_TYPE_BOOL;
                break;
        case PG_QUERY__A__CONST__VAL_SVAL:
                s = c->sval->sval ? c->sval->sval : "";
                return unknown_literal(a, s, strlen(s), c->location, ret);
        default:
                return FAIL_AT(a, c->location, "0A000", "bit strings are not supported");
        }
        ret->e = expr_literal(type, &d);
        if (!ret->e)
                return oom(a);
        ret->unknown = false;
        return 0;
}

static int analyze_param(struct analyzer *a, const PgQuery__ParamRef *p, struct typed *ret)
{
        const struct sql_params *ps = a->params;
        const char *value;
        uint32_t oid;
        int r;

        if (!ps || p->number < 1 || (size_t)p->number > ps->n)
                return FAIL_AT(a, p->location, "42P02", "there is no parameter $%d", p->number);
        value = ps->values ? ps->values[p->number - 1] : NULL;
        oid = ps->types ? ps->types[p->number - 1] : 0;
        if (oid != 0 && !row_type_valid((int)oid))
                return FAIL_AT(a, p->location, "0A000", "parameter $%d has unsupported type %u",
                               p->number, oid);
        if (!value) {
                struct row_datum d = ROW_DATUM_NULL;

                ret->e = expr_literal(oid ? (int)oid : ROW_TYPE_TEXT, &d);
                if (!ret->e)
                        return oom(a);
                ret->unknown = oid == 0;
                ret->location = p->location;
                return 0;
        }
        r = unknown_literal(a, value, strlen(value), p->location, ret);
        if (r < 0 || oid == 0)
                return r;
        return coerce_unknown(a, ret, (int)oid);
}

static int analyze_expr(struct analyzer *a, const PgQuery__Node *n, struct typed *ret)
{
        struct typed t = { .location = -1 };
        enum row_type type;
        int r;

        assert(!ret->e);
        if (!n)
                return FAIL(a, "XX000", "missing expression");
        if (a->depth >= ANALYZE_MAX_DEPTH)
                return FAIL(a, "54001", "expression nesting exceeds %d levels",
                            ANALYZE_MAX_DEPTH);
        a->depth++;
        switch (n->node_case) {
        case PG_QUERY__NODE__NODE_A_CONST:
                r = analyze_const(a, n->a_const, ret);
                break;
        case PG_QUERY__NODE__NODE_COLUMN_REF:
                r = analyze_column_ref(a, n->column_ref, ret);
                break;
        case PG_QUERY__NODE__NODE_PARAM_REF:
                r = analyze_param(a, n->param_ref, ret);
                break;
        case PG_QUERY__NODE__NODE_A_EXPR:
                r = analyze_a_expr(a, n->a_expr, ret);
                break;
        case PG_QUERY__NODE__NODE_BOOL_EXPR:
                r = analyze_bool_expr(a, n->bool_expr, ret);
                break;
        case PG_QUERY__NODE__NODE_NULL_TEST:
                r = analyze_expr(a, n->null_test->arg, &t);
                if (r >= 0)
                        r = coerce_unknown(a, &t, ROW_TYPE_TEXT);
                if (r >= 0)
                        r = wrap(a, &t,
                                 n->null_test->nulltesttype == PG_QUERY__NULL_TEST_TYPE__IS_NULL
                                         ? COORD__PLAN__FUNC__FUNC_IS_NULL
                                         : COORD__PLAN__FUNC__FUNC_IS_NOT_NULL,
                                 ROW_TYPE_BOOL);
                if (r >= 0) {
                        t.location = n->null_test->location;
                        *ret = t;
                        t.e = NULL;
                }
                break;
        case PG_QUERY__NODE__NODE_FUNC_CALL:
                r = analyze_func_call(a, n->func_call, ret);
                break;
        case PG_QUERY__NODE__NODE_TYPE_CAST:
                r = analyze_expr(a, n->type_cast->arg, &t);
                if (r >= 0)
                        r = resolve_type(a, n->type_cast->type_name, &type);
                if (r >= 0)
                        r = cast_to(a, &t, type, n->type_cast->location);
                if (r >= 0) {
                        *ret = t;
                        t.e = NULL;
                }
                break;
        case PG_QUERY__NODE__NODE_SET_TO_DEFAULT:
                r = FAIL(a, "42601", "DEFAULT is not allowed in this context");
                break;
        case PG_QUERY__NODE__NODE_SUB_LINK:
                r = FAIL(a, "0A000", "subqueries are not supported yet");
                break;
        case PG_QUERY__NODE__NODE_CASE_EXPR:
                r = FAIL(a, "0A000", "CASE is not supported yet");
                break;
        case PG_QUERY__NODE__NODE_COALESCE_EXPR:
                r = FAIL(a, "0A000", "COALESCE is not supported yet");
                break;
        case PG_QUERY__NODE__NODE_BOOLEAN_TEST:
                r = FAIL(a, "0A000", "IS [NOT] TRUE/FALSE/UNKNOWN is not supported yet");
                break;
        default:
                r = FAIL(a, "0A000", "this kind of expression is not supported");
                break;
        }
        a->depth--;
        typed_done(&t);
        assert(r < 0 || ret->e);
        return r;
}

/* ---- Statements. ---- */

static int analyze_create_table(struct analyzer *a, const PgQuery__CreateStmt *c)
{
        struct sql_create_table *ct = &a->stmt->create_table;
        struct sql_relation existing;
        const char *name = NULL;
        int r;

        if (c->relation->relpersistence && c->relation->relpersistence[0] == 't')
                return FAIL_AT(a, c->relation->location, "0A000",
                               "temporary tables are not supported");
        if (c->n_inh_relations || c->partbound || c->partspec || c->of_typename)
                return FAIL(a, "0A000",
                            "inheritance, partitions and typed tables are not supported");
        if (c->n_constraints)
                return FAIL(a, "0A000", "table constraints are not supported");
        if (c->n_options || (c->access_method && c->access_method[0]) ||
            (c->tablespacename && c->tablespacename[0]))
                return FAIL(a, "0A000", "table options are not supported");
        r = range_var_name(a, c->relation, &name);
        if (r < 0)
                return r;
        if (c->n_table_elts > ROW_MAX_COLUMNS)
                return FAIL(a, "54011", "tables can have at most %u columns", ROW_MAX_COLUMNS);

        ct->if_not_exists = c->if_not_exists;
        ct->name = strdup(name);
        ct->columns = calloc(c->n_table_elts ? c->n_table_elts : 1, sizeof(*ct->columns));
        if (!ct->name || !ct->columns)
                return oom(a);
        for (size_t i = 0; i < c->n_table_elts; i++) {
                const PgQuery__ColumnDef *cd;
                struct sql_column *col = &ct->columns[i];
                bool saw_null = false, saw_not_null = false;

                if (c->table_elts[i]->node_case != PG_QUERY__NODE__NODE_COLUMN_DEF)
                        return FAIL(a, "0A000", "LIKE and table constraints are not supported");
                cd = c->table_elts[i]->column_def;
                for (size_t k = 0; k < ct->n_columns; k++)
                        if (strcmp(ct->columns[k].name, cd->colname) == 0)
                                return FAIL_AT(a, cd->location, "42701",
                                               "column \"%s\" specified more than once",
                                               cd->colname);
                if (!cd->type_name)
                        return FAIL_AT(a, cd->location, "42601", "column \"%s\" has no type",
                                       cd->colname);
                r = resolve_type(a, cd->type_name, &col->type);
                if (r < 0)
                        return r;
                if (cd->raw_default || (cd->identity && cd->identity[0]) ||
                    (cd->generated && cd->generated[0]) || cd->coll_clause)
                        return FAIL_AT(a, cd->location, "0A000",
                                       "column defaults, identity, generated columns and "
                                       "collations are not supported");
                for (size_t k = 0; k < cd->n_constraints; k++) {
                        const PgQuery__Constraint *con;

                        if (cd->constraints[k]->node_case != PG_QUERY__NODE__NODE_CONSTRAINT)
                                return FAIL(a, "XX000", "malformed column constraint");
                        con = cd->constraints[k]->constraint;
                        switch (con->contype) {
                        case PG_QUERY__CONSTR_TYPE__CONSTR_NULL:
                                saw_null = true;
                                break;
                        case PG_QUERY__CONSTR_TYPE__CONSTR_NOTNULL:
                                saw_not_null = true;
                                break;
                        case PG_QUERY__CONSTR_TYPE__CONSTR_DEFAULT:
                                return FAIL_AT(a, con->location, "0A000",
                                               "column defaults are not supported");
                        default:
                                return FAIL_AT(a, con->location, "0A000",
                                               "only NULL and NOT NULL column constraints are "
                                               "supported");
                        }
                        if (saw_null && saw_not_null)
                                return FAIL_AT(a, con->location, "42601",
                                               "conflicting NULL/NOT NULL declarations for column "
                                               "\"%s\" of table \"%s\"",
                                               cd->colname, name);
                }
                col->nullable = !saw_not_null && !cd->is_not_null;
                col->name = strdup(cd->colname);
                if (!col->name)
                        return oom(a);
                ct->n_columns++;
        }

        r = lookup(a, name, &existing);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (!ct->if_not_exists)
                return FAIL_AT(a, c->relation->location, "42P07", "relation \"%s\" already exists",
                               name);
        ct->exists = true;
        return add_notice(a, "42P07", "relation \"%s\" already exists, skipping", name);
}

static int analyze_drop(struct analyzer *a, const PgQuery__DropStmt *d)
{
        struct sql_drop *dr = &a->stmt->drop;

        switch (d->remove_type) {
        case PG_QUERY__OBJECT_TYPE__OBJECT_TABLE:
                dr->kind = SQL_OBJECT_TABLE;
                break;
        case PG_QUERY__OBJECT_TYPE__OBJECT_VIEW:
                return FAIL(a, "0A000", "DROP VIEW is not supported yet");
        case PG_QUERY__OBJECT_TYPE__OBJECT_MATVIEW:
                return FAIL(a, "0A000", "DROP MATERIALIZED VIEW is not supported yet");
        case PG_QUERY__OBJECT_TYPE__OBJECT_INDEX:
                return FAIL(a, "0A000", "DROP INDEX is not supported yet");
        default:
                return FAIL(a, "0A000", "this DROP is not supported");
        }
        if (d->concurrent)
                return FAIL(a, "0A000", "DROP ... CONCURRENTLY is not supported");
        dr->if_exists = d->missing_ok;
        dr->cascade = d->behavior == PG_QUERY__DROP_BEHAVIOR__DROP_CASCADE;
        dr->names = calloc(d->n_objects ? d->n_objects : 1, sizeof(*dr->names));
        dr->ids = calloc(d->n_objects ? d->n_objects : 1, sizeof(*dr->ids));
        if (!dr->names || !dr->ids)
                return oom(a);
        for (size_t i = 0; i < d->n_objects; i++) {
                const char *kind = sql_object_kind_name(dr->kind);
                struct sql_relation rel;
                const char *name = NULL;
                int r = list_name(a, d->objects[i], &name);

                if (r < 0)
                        return r;
                dr->names[i] = strdup(name);
                if (!dr->names[i])
                        return oom(a);
                dr->n_objects++;
                r = lookup(a, name, &rel);
                if (r == -ENOENT) {
                        if (!dr->if_exists)
                                return FAIL(a, "42P01", "%s \"%s\" does not exist", kind, name);
                        r = add_notice(a, "00000", "%s \"%s\" does not exist, skipping", kind,
                                       name);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (r < 0)
                        return r;
                if (rel.kind != dr->kind) {
                        r = FAIL(a, "42809", "\"%s\" is not a %s", name, kind);
                        row_error_hint(a->err, "Use DROP %s to remove a %s.",
                                       rel.kind == SQL_OBJECT_VIEW ? "VIEW"
                                       : rel.kind == SQL_OBJECT_MATERIALIZED_VIEW
                                               ? "MATERIALIZED VIEW"
                                       : rel.kind == SQL_OBJECT_INDEX  ? "INDEX"
                                       : rel.kind == SQL_OBJECT_SOURCE ? "SOURCE"
                                       : rel.kind == SQL_OBJECT_SINK   ? "SINK"
                                                                       : "TABLE",
                                       sql_object_kind_name(rel.kind));
                        return r;
                }
                dr->ids[i] = rel.id;
        }
        return 0;
}

/* Resolve the relation written by INSERT or DELETE: a table. */
static int target_table(struct analyzer *a, const PgQuery__RangeVar *rv, const char *verb,
                        struct sql_relation *ret, char **ret_name)
{
        const char *name = NULL;
        int r = range_var_name(a, rv, &name);

        if (r < 0)
                return r;
        r = lookup(a, name, ret);
        if (r == -ENOENT)
                return FAIL_AT(a, rv->location, "42P01", "relation \"%s\" does not exist", name);
        if (r < 0)
                return r;
        if (ret->kind != SQL_OBJECT_TABLE)
                return FAIL_AT(a, rv->location, "42809", "cannot %s %s \"%s\"", verb,
                               sql_object_kind_name(ret->kind), name);
        *ret_name = strdup(name);
        return *ret_name ? 0 : oom(a);
}

/* Assignment coercion of an INSERT value into its column (PostgreSQL's assignment
 * casts: between integers, and anything to text). */
static int assign(struct analyzer *a, struct typed *t, const struct sql_column *col)
{
        int from, to = col->type, r;

        if (t->unknown)
                return coerce_unknown(a, t, to);
        from = (int)t->e->type;
        if (from == to)
                return 0;
        if ((is_int(from) && is_int(to)) || to == ROW_TYPE_TEXT) {
                r = wrap(a, t, COORD__PLAN__FUNC__FUNC_CAST, to);
                return r;
        }
        r = FAIL_AT(a, t->location, "42804",
                    "column \"%s\" is of type %s but expression is of type %s", col->name,
                    row_type_name((enum row_type)to), row_type_name((enum row_type)from));
        row_error_hint(a->err, "You will need to rewrite or cast the expression.");
        return r;
}

static int node_location(const PgQuery__Node *n)
{
        switch (n->node_case) {
        case PG_QUERY__NODE__NODE_A_CONST:
                return n->a_const->location;
        case PG_QUERY__NODE__NODE_COLUMN_REF:
                return n->column_ref->location;
        case PG_QUERY__NODE__NODE_A_EXPR:
                return n->a_expr->location;
        case PG_QUERY__NODE__NODE_FUNC_CALL:
                return n->func_call->location;
        case PG_QUERY__NODE__NODE_TYPE_CAST:
                return n->type_cast->location;
        case PG_QUERY__NODE__NODE_PARAM_REF:
                return n->param_ref->location;
        case PG_QUERY__NODE__NODE_BOOL_EXPR:
                return n->bool_expr->location;
        case PG_QUERY__NODE__NODE_RES_TARGET:
                return n->res_target->location;
        default:
                return -1;
        }
}

/* One VALUES row into an encoded table row. */
static int insert_row(struct analyzer *a, const struct sql_relation *rel, const size_t *targets,
                      size_t n_targets, const PgQuery__List *values, struct sql_row *ret)
{
        _cleanup_free_ struct typed *vals = NULL;
        _cleanup_free_ struct row_datum *row = NULL;
        int r = 0;

        if (values->n_items > n_targets)
                return FAIL_AT(a, node_location(values->items[n_targets]), "42601",
                               "INSERT has more expressions than target columns");
        vals = calloc(n_targets ? n_targets : 1, sizeof(*vals));
        row = calloc(rel->n_columns ? rel->n_columns : 1, sizeof(*row));
        if (!vals || !row)
                return oom(a);
        for (size_t i = 0; i < rel->n_columns; i++)
                row[i] = ROW_DATUM_NULL;
        for (size_t i = 0; i < values->n_items; i++) {
                const PgQuery__Node *n = values->items[i];
                const struct sql_column *col = &rel->columns[targets[i]];

                vals[i].location = -1;
                if (n->node_case == PG_QUERY__NODE__NODE_SET_TO_DEFAULT)
                        continue;       /* no defaults yet: DEFAULT is NULL */
                r = analyze_expr(a, n, &vals[i]);
                if (r >= 0)
                        r = assign(a, &vals[i], col);
                if (r < 0)
                        goto out;
                if (!is_literal(vals[i].e)) {
                        r = FAIL_AT(a, vals[i].location, "0A000",
                                    "INSERT values must be constant expressions");
                        goto out;
                }
                r = row_expr_literal(vals[i].e->literal, col->type, &row[targets[i]], a->err);
                if (r < 0)
                        goto out;
        }
        for (size_t i = 0; i < rel->n_columns; i++) {
                char failing[400];

                if (rel->columns[i].nullable || row[i].kind != ROW_KIND_NULL)
                        continue;
                row_format_failing(row, rel->n_columns, failing, sizeof(failing));
                r = FAIL(a, "23502",
                         "null value in column \"%s\" of relation \"%s\" violates not-null "
                         "constraint",
                         rel->columns[i].name, a->stmt->insert.table);
                row_error_detail(a->err, "Failing row contains (%s).", failing);
                goto out;
        }
        r = row_encode(row, rel->n_columns, &ret->data, &ret->len);
        if (r < 0)
                r = r == -ENOMEM ? oom(a) : FAIL(a, "54000", "row is too big");
out:
        /* The datums point into the literals: free them only now. */
        for (size_t i = 0; i < n_targets; i++)
                typed_done(&vals[i]);
        return r;
}

static int analyze_insert(struct analyzer *a, const PgQuery__InsertStmt *ins)
{
        struct sql_insert *si = &a->stmt->insert;
        _cleanup_free_ size_t *targets = NULL;
        const PgQuery__SelectStmt *sel = NULL;
        struct sql_relation rel;
        size_t n_targets;
        int r;

        if (ins->with_clause || ins->on_conflict_clause || ins->n_returning_list)
                return FAIL(a, "0A000", "WITH, ON CONFLICT and RETURNING are not supported");
        r = target_table(a, ins->relation, "insert into", &rel, &si->table);
        if (r < 0)
                return r;
        si->id = rel.id;

        n_targets = ins->n_cols ? ins->n_cols : rel.n_columns;
        targets = calloc(n_targets ? n_targets : 1, sizeof(*targets));
        if (!targets)
                return oom(a);
        for (size_t i = 0; i < n_targets; i++) {
                const PgQuery__ResTarget *rt;
                size_t k;

                if (!ins->n_cols) {
                        targets[i] = i;
                        continue;
                }
                if (ins->cols[i]->node_case != PG_QUERY__NODE__NODE_RES_TARGET)
                        return FAIL(a, "XX000", "malformed INSERT column list");
                rt = ins->cols[i]->res_target;
                if (rt->n_indirection)
                        return FAIL_AT(a, rt->location, "0A000",
                                       "subscripts and fields in INSERT columns are not supported");
                for (k = 0; k < rel.n_columns; k++)
                        if (strcmp(rel.columns[k].name, rt->name) == 0)
                                break;
                if (k == rel.n_columns)
                        return FAIL_AT(a, rt->location, "42703",
                                       "column \"%s\" of relation \"%s\" does not exist", rt->name,
                                       si->table);
                for (size_t j = 0; j < i; j++)
                        if (targets[j] == k)
                                return FAIL_AT(a, rt->location, "42701",
                                               "column \"%s\" specified more than once", rt->name);
                targets[i] = k;
        }

        if (ins->select_stmt) {
                if (ins->select_stmt->node_case != PG_QUERY__NODE__NODE_SELECT_STMT)
                        return FAIL(a, "0A000", "this INSERT source is not supported");
                sel = ins->select_stmt->select_stmt;
                if (!sel->n_values_lists)
                        return FAIL(a, "0A000", "INSERT ... SELECT is not supported yet");
                if (sel->n_sort_clause || sel->limit_count || sel->limit_offset || sel->with_clause)
                        return FAIL(a, "0A000",
                                    "ORDER BY, LIMIT and WITH on VALUES are not supported");
        }
        si->rows = calloc(sel ? sel->n_values_lists : 1, sizeof(*si->rows));
        if (!si->rows)
                return oom(a);
        if (!sel) {
                /* INSERT ... DEFAULT VALUES: one row of defaults (NULL for now). */
                static const PgQuery__List empty = PG_QUERY__LIST__INIT;

                r = insert_row(a, &rel, targets, n_targets, &empty, &si->rows[0]);
                if (r < 0)
                        return r;
                si->n_rows = 1;
                return 0;
        }
        for (size_t i = 0; i < sel->n_values_lists; i++) {
                const PgQuery__Node *v = sel->values_lists[i];

                if (v->node_case != PG_QUERY__NODE__NODE_LIST)
                        return FAIL(a, "XX000", "malformed VALUES list");
                if (ins->n_cols && v->list->n_items < n_targets)
                        return FAIL_AT(a, ins->cols[v->list->n_items]->res_target->location,
                                       "42601", "INSERT has more target columns than expressions");
                r = insert_row(a, &rel, targets, n_targets, v->list, &si->rows[i]);
                if (r < 0)
                        return r;
                si->n_rows++;
        }
        return 0;
}

/* Bring a relation into scope (FROM, DELETE's target). */
static int enter_scope(struct analyzer *a, const PgQuery__RangeVar *rv, const char *name,
                       const struct sql_relation *rel)
{
        a->scope = rel;
        a->scope_name = rv->alias && rv->alias->aliasname && rv->alias->aliasname[0]
                                ? rv->alias->aliasname
                                : name;
        if (rv->alias && rv->alias->n_colnames)
                return FAIL_AT(a, rv->location, "0A000", "column aliases are not supported yet");
        return add_input(a, rel->id);
}

/* WHERE: a boolean predicate, folded; NULL when it is the constant TRUE. */
static int analyze_where(struct analyzer *a, const PgQuery__Node *where, Coord__Plan__Expr **ret)
{
        _cleanup_(typed_done) struct typed t = { .location = -1 };
        int r;

        *ret = NULL;
        if (!where)
                return 0;
        r = analyze_expr(a, where, &t);
        if (r >= 0)
                r = require_bool(a, &t, "WHERE");
        if (r < 0)
                return r;
        if (is_literal(t.e) && t.e->literal->value_case == COORD__PLAN__DATUM__VALUE_BOOL_VALUE &&
            t.e->literal->bool_value)
                return 0;
        *ret = TAKE_PTR(t.e);
        return 0;
}

static int analyze_delete(struct analyzer *a, const PgQuery__DeleteStmt *d)
{
        struct sql_delete *sd = &a->stmt->delete_;
        _cleanup_(rel_freep) Coord__Plan__Relation *plan = NULL;
        Coord__Plan__Expr *pred = NULL;
        struct sql_relation rel;
        int r;

        if (d->n_using_clause || d->n_returning_list || d->with_clause)
                return FAIL(a, "0A000", "USING, RETURNING and WITH are not supported");
        r = target_table(a, d->relation, "delete from", &rel, &sd->table);
        if (r < 0)
                return r;
        sd->id = rel.id;
        r = enter_scope(a, d->relation, sd->table, &rel);
        if (r < 0)
                return r;
        r = analyze_where(a, d->where_clause, &pred);
        if (r < 0)
                return r;
        plan = rel_get(&rel);
        if (plan && pred)
                plan = rel_filter(TAKE_PTR(plan), TAKE_PTR(pred));
        expr_free(pred);
        if (!plan)
                return oom(a);
        sd->plan = TAKE_PTR(plan);
        return 0;
}

/* The output column name PostgreSQL would pick (FigureColname). */
static const char *figure_colname(const PgQuery__Node *n)
{
        const char *s;

        switch (n->node_case) {
        case PG_QUERY__NODE__NODE_COLUMN_REF:
                s = n->column_ref->n_fields
                            ? node_string(n->column_ref->fields[n->column_ref->n_fields - 1])
                            : NULL;
                return s ? s : "?column?";
        case PG_QUERY__NODE__NODE_FUNC_CALL:
                s = n->func_call->n_funcname
                            ? node_string(n->func_call->funcname[n->func_call->n_funcname - 1])
                            : NULL;
                return s ? s : "?column?";
        case PG_QUERY__NODE__NODE_TYPE_CAST:
                if (n->type_cast->arg &&
                    (n->type_cast->arg->node_case == PG_QUERY__NODE__NODE_COLUMN_REF ||
                     n->type_cast->arg->node_case == PG_QUERY__NODE__NODE_FUNC_CALL ||
                     n->type_cast->arg->node_case == PG_QUERY__NODE__NODE_TYPE_CAST))
                        return figure_colname(n->type_cast->arg);
                s = n->type_cast->type_name && n->type_cast->type_name->n_names
                            ? node_string(n->type_cast->type_name->names
                                                  [n->type_cast->type_name->n_names - 1])
                            : NULL;
                return s ? s : "?column?";
        case PG_QUERY__NODE__NODE_A_CONST:
                return n->a_const->val_case == PG_QUERY__A__CONST__VAL_BOOLVAL ? "bool"
                                                                                : "?column?";
        default:
                return "?column?";
        }
}

/* PostgreSQL's limit on the entries of a target list (MaxTupleAttributeNumber). */
#define MAX_TARGETS 1664u

/* An output that is computed column k of the Map: its index is only known once the
 * input's arity is, so it is tagged until analyze_select() resolves it. */
#define MAPPED 0x80000000u

/* The growing output of a SELECT list. */
struct select_list {
        uint32_t *outputs;                      /* Project's column indices, or MAPPED | k */
        Coord__Plan__Column **columns;          /* the Peek's output columns */
        size_t n;
        Coord__Plan__Expr **map;                /* computed columns, appended after the input's */
        size_t n_map;
        size_t cap;
};

static void select_list_done(struct select_list *l)
{
        for (size_t i = 0; i < l->n; i++)
                if (l->columns[i])
                        coord__plan__column__free_unpacked(l->columns[i], NULL);
        for (size_t i = 0; i < l->n_map; i++)
                expr_free(l->map[i]);
        free(l->outputs);
        free(l->columns);
        free(l->map);
}

/* Append an output column; takes `e` (may be NULL for a plain input column). */
static int select_list_add(struct analyzer *a, struct select_list *l, const char *name, int type,
                           bool nullable, uint32_t input_column, Coord__Plan__Expr *e)
{
        Coord__Plan__Column *col;

        if (l->n == l->cap) {
                size_t cap = l->cap ? 2 * l->cap : 8;
                uint32_t *o = realloc(l->outputs, cap * sizeof(*o));
                Coord__Plan__Column **c = o ? realloc(l->columns, cap * sizeof(*c)) : NULL;
                Coord__Plan__Expr **m = c ? realloc(l->map, cap * sizeof(*m)) : NULL;

                if (o)
                        l->outputs = o;
                if (c)
                        l->columns = c;
                if (m)
                        l->map = m;
                if (!m) {
                        expr_free(e);
                        return oom(a);
                }
                l->cap = cap;
        }
        col = malloc(sizeof(*col));
        if (col) {
                coord__plan__column__init(col);
                col->name = strdup(name);
        }
        if (!col || !col->name) {
                free(col);
                expr_free(e);
                return oom(a);
        }
        col->type = (Coord__Plan__Type)type;
        col->nullable = nullable;
        if (e) {
                l->outputs[l->n] = MAPPED | (uint32_t)l->n_map;
                l->map[l->n_map++] = e;
        } else {
                assert(input_column < MAPPED);
                l->outputs[l->n] = input_column;
        }
        l->columns[l->n++] = col;
        return 0;
}

static int select_target(struct analyzer *a, struct select_list *l, const PgQuery__ResTarget *rt)
{
        const struct sql_relation *rel = a->scope;
        _cleanup_(typed_done) struct typed t = { .location = -1 };
        const PgQuery__ColumnRef *cr;
        int r, type;

        if (!rt->val)
                return FAIL(a, "XX000", "malformed target list");
        cr = rt->val->node_case == PG_QUERY__NODE__NODE_COLUMN_REF ? rt->val->column_ref : NULL;
        if (cr && cr->n_fields &&
            cr->fields[cr->n_fields - 1]->node_case == PG_QUERY__NODE__NODE_A_STAR) {
                const char *qualifier = cr->n_fields == 2 ? node_string(cr->fields[0]) : NULL;

                if (cr->n_fields > 2 || (cr->n_fields == 2 && !qualifier))
                        return FAIL_AT(a, cr->location, "0A000", "this * is not supported");
                if (!rel && !qualifier)
                        return FAIL_AT(a, cr->location, "42601",
                                       "SELECT * with no tables specified is not valid");
                if (qualifier && (!rel || strcmp(qualifier, a->scope_name) != 0))
                        return FAIL_AT(a, cr->location, "42P01",
                                       "missing FROM-clause entry for table \"%s\"", qualifier);
                for (size_t i = 0; i < rel->n_columns; i++) {
                        r = select_list_add(a, l, rel->columns[i].name, rel->columns[i].type,
                                            rel->columns[i].nullable, (uint32_t)i, NULL);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        r = analyze_expr(a, rt->val, &t);
        if (r >= 0)
                r = coerce_unknown(a, &t, ROW_TYPE_TEXT);   /* PostgreSQL outputs unknown as text */
        if (r < 0)
                return r;
        if (t.e->kind_case == COORD__PLAN__EXPR__KIND_COLUMN) {
                const struct sql_column *c = &rel->columns[t.e->column];

                return select_list_add(a, l, rt->name && rt->name[0] ? rt->name : c->name, c->type,
                                       c->nullable, t.e->column, NULL);
        }
        type = (int)t.e->type;     /* before TAKE_PTR: argument order is unspecified */
        return select_list_add(a, l, rt->name && rt->name[0] ? rt->name : figure_colname(rt->val),
                               type, true, 0, TAKE_PTR(t.e));
}

static int analyze_as_of(struct analyzer *a, const struct as_of_clause *c, uint64_t *ret)
{
        const PgQuery__Node *val =
                c->tree->stmts[0]->stmt->select_stmt->target_list[0]->res_target->val;
        _cleanup_(typed_done) struct typed t = { .location = -1 };
        const struct sql_relation *scope = a->scope;
        long base = a->loc_base;
        const Coord__Plan__Datum *lit;
        int r;

        /* The expression was parsed as AS_OF_PREFIX + expression (note 2); it sees no
         * columns and cannot use mz_now(), whose value it would define. */
        a->loc_base = (long)c->expr_begin - (long)strlen(AS_OF_PREFIX);
        a->scope = NULL;
        a->no_mz_now = "AS OF";
        r = analyze_expr(a, val, &t);
        if (r >= 0)
                r = coerce_unknown(a, &t, ROW_TYPE_INT8);
        if (r >= 0 && !is_int((int)t.e->type))
                r = FAIL_AT(a, t.location, "42804", "AS OF must be of type bigint, not type %s",
                            row_type_name((enum row_type)t.e->type));
        if (r >= 0 && !is_literal(t.e))
                r = FAIL_AT(a, t.location, "0A000", "AS OF must be a constant expression");
        if (r >= 0) {
                lit = t.e->literal;
                if (lit->value_case != COORD__PLAN__DATUM__VALUE_INT_VALUE || lit->int_value < 0)
                        r = FAIL_AT(a, t.location, "22023",
                                    "AS OF must be a non-negative timestamp");
                else
                        *ret = (uint64_t)lit->int_value;
        }
        a->loc_base = base;
        a->scope = scope;
        a->no_mz_now = NULL;
        return r;
}

static int analyze_select(struct analyzer *a, const PgQuery__SelectStmt *s,
                          const struct as_of_clause *as_of)
{
        struct sql_select *ss = &a->stmt->select;
        _cleanup_(select_list_done) struct select_list l = { 0 };
        _cleanup_(rel_freep) Coord__Plan__Relation *plan = NULL;
        _cleanup_(expr_freep) Coord__Plan__Expr *pred = NULL;
        struct sql_relation rel;
        size_t n_in = 0, width;
        bool identity;
        int r;

        if (s->op != PG_QUERY__SET_OPERATION__SETOP_NONE)
                return FAIL(a, "0A000", "UNION, INTERSECT and EXCEPT are not supported yet");
        if (s->n_values_lists)
                return FAIL(a, "0A000", "VALUES is not supported yet");
        if (s->with_clause)
                return FAIL(a, "0A000", "WITH is not supported yet");
        if (s->into_clause)
                return FAIL(a, "0A000", "SELECT INTO is not supported");
        if (s->n_distinct_clause)
                return FAIL(a, "0A000", "DISTINCT is not supported yet");
        if (s->n_group_clause || s->having_clause)
                return FAIL(a, "0A000", "GROUP BY and HAVING are not supported yet");
        if (s->n_window_clause)
                return FAIL(a, "0A000", "window functions are not supported");
        if (s->n_sort_clause || s->limit_count || s->limit_offset)
                return FAIL(a, "0A000", "ORDER BY, LIMIT and OFFSET are not supported yet");
        if (s->n_locking_clause)
                return FAIL(a, "0A000", "FOR UPDATE and FOR SHARE are not supported");
        if (s->n_from_clause > 1)
                return FAIL(a, "0A000", "joins are not supported yet");

        if (s->n_from_clause == 1) {
                const PgQuery__Node *from = s->from_clause[0];
                const char *name = NULL;

                if (from->node_case != PG_QUERY__NODE__NODE_RANGE_VAR)
                        return FAIL(a, "0A000", from->node_case == PG_QUERY__NODE__NODE_JOIN_EXPR
                                                        ? "joins are not supported yet"
                                                        : "only tables are supported in FROM");
                r = range_var_name(a, from->range_var, &name);
                if (r < 0)
                        return r;
                r = lookup(a, name, &rel);
                if (r == -ENOENT)
                        return FAIL_AT(a, from->range_var->location, "42P01",
                                       "relation \"%s\" does not exist", name);
                if (r < 0)
                        return r;
                if (rel.kind == SQL_OBJECT_VIEW)
                        return FAIL_AT(a, from->range_var->location, "0A000",
                                       "reading views is not supported yet");
                if (rel.kind == SQL_OBJECT_INDEX || rel.kind == SQL_OBJECT_SINK)
                        return FAIL_AT(a, from->range_var->location, "42809",
                                       "\"%s\" is a %s and cannot be read", name,
                                       sql_object_kind_name(rel.kind));
                r = enter_scope(a, from->range_var, name, &rel);
                if (r < 0)
                        return r;
                n_in = rel.n_columns;
                plan = rel_get(&rel);
        } else {
                plan = rel_unit();
        }
        if (!plan)
                return oom(a);

        r = analyze_where(a, s->where_clause, &pred);
        if (r < 0)
                return r;
        for (size_t i = 0; i < s->n_target_list; i++) {
                if (s->target_list[i]->node_case != PG_QUERY__NODE__NODE_RES_TARGET)
                        return FAIL(a, "XX000", "malformed target list");
                r = select_target(a, &l, s->target_list[i]->res_target);
                if (r < 0)
                        return r;
                if (l.n > MAX_TARGETS)
                        return FAIL(a, "54011", "target lists can have at most %u entries",
                                    MAX_TARGETS);
        }
        if (as_of) {
                r = analyze_as_of(a, as_of, &ss->as_of);
                if (r < 0)
                        return r;
                ss->has_as_of = true;
        }

        /* Get/Constant -> Filter -> Map -> Project; Project only when not the identity. */
        width = n_in + l.n_map;
        if (pred)
                plan = rel_filter(TAKE_PTR(plan), TAKE_PTR(pred));
        if (plan && l.n_map) {
                plan = rel_map(TAKE_PTR(plan), TAKE_PTR(l.map), l.n_map);
                l.n_map = 0;
        }
        if (!plan)
                return oom(a);
        identity = l.n == width;
        for (size_t i = 0; i < l.n; i++) {
                if (l.outputs[i] & MAPPED)
                        l.outputs[i] = (uint32_t)n_in + (l.outputs[i] & ~MAPPED);
                identity = identity && l.outputs[i] == i;
        }
        if (!identity) {
                plan = rel_project(TAKE_PTR(plan), TAKE_PTR(l.outputs), l.n);
                if (!plan)
                        return oom(a);
        }

        ss->peek = malloc(sizeof(*ss->peek));
        if (!ss->peek)
                return oom(a);
        coord__plan__peek__init(ss->peek);
        ss->peek->plan = TAKE_PTR(plan);
        ss->peek->n_columns = l.n;
        ss->peek->columns = TAKE_PTR(l.columns);
        l.n = 0;
        return 0;
}

static char *lowercase_dup(const char *s)
{
        char *d = strdup(s ? s : "");

        for (char *p = d; p && *p; p++)
                *p = (char)tolower((unsigned char)*p);
        return d;
}

static int analyze_show(struct analyzer *a, const PgQuery__VariableShowStmt *v)
{
        static const struct {
                const char *name;
                enum sql_object_kind kind;
        } lists[] = {
                { "tables", SQL_OBJECT_TABLE },   { "views", SQL_OBJECT_VIEW },
                { "indexes", SQL_OBJECT_INDEX },  { "sources", SQL_OBJECT_SOURCE },
                { "sinks", SQL_OBJECT_SINK },
        };
        const char *name = v->name ? v->name : "";

        if (strcmp(name, "objects") == 0) {
                a->stmt->kind = SQL_STMT_SHOW_OBJECTS;
                a->stmt->show_objects.all = true;
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(lists); i++)
                if (strcmp(name, lists[i].name) == 0) {
                        a->stmt->kind = SQL_STMT_SHOW_OBJECTS;
                        a->stmt->show_objects.kind = lists[i].kind;
                        return 0;
                }
        a->stmt->kind = SQL_STMT_SHOW_VARIABLE;
        a->stmt->show_variable.name = lowercase_dup(name);
        return a->stmt->show_variable.name ? 0 : oom(a);
}

/* SET's value as text: the arguments joined with ", ", unquoted. */
static int set_value(struct analyzer *a, const PgQuery__VariableSetStmt *v, char **ret)
{
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return oom(a);
        for (size_t i = 0; i < v->n_args; i++) {
                const PgQuery__AConst *c = v->args[i]->node_case == PG_QUERY__NODE__NODE_A_CONST
                                                   ? v->args[i]->a_const
                                                   : NULL;

                if (i)
                        fputs(", ", f);
                if (!c || c->isnull)
                        continue;
                switch (c->val_case) {
                case PG_QUERY__A__CONST__VAL_IVAL:
                        fprintf(f, "%d", c->ival->ival);
                        break;
                case PG_QUERY__A__CONST__VAL_FVAL:
                        fputs(c->fval->fval, f);
                        break;
                case PG_QUERY__A__CONST__VAL_SVAL:
                        fputs(c->sval->sval, f);
                        break;
                case PG_QUERY__A__CONST__VAL_BOOLVAL:
                        fputs(c->boolval->boolval ? "on" : "off", f);
                        break;
                default:
                        break;
                }
        }
        if (ferror(f) | fclose(f)) {
                free(buf);
                return oom(a);
        }
        *ret = buf;
        return 0;
}

static int analyze_set(struct analyzer *a, const PgQuery__VariableSetStmt *v)
{
        struct sql_set_variable *sv = &a->stmt->set_variable;

        sv->local = v->is_local;
        switch (v->kind) {
        case PG_QUERY__VARIABLE_SET_KIND__VAR_SET_VALUE:
                sv->name = lowercase_dup(v->name);
                if (!sv->name)
                        return oom(a);
                return set_value(a, v, &sv->value);
        case PG_QUERY__VARIABLE_SET_KIND__VAR_SET_DEFAULT:
        case PG_QUERY__VARIABLE_SET_KIND__VAR_SET_MULTI:
                sv->name = lowercase_dup(v->name);
                break;
        case PG_QUERY__VARIABLE_SET_KIND__VAR_RESET:
                sv->reset = true;
                sv->name = lowercase_dup(v->name);
                break;
        case PG_QUERY__VARIABLE_SET_KIND__VAR_RESET_ALL:
                sv->reset = true;
                sv->name = lowercase_dup("all");
                break;
        default:
                return FAIL(a, "0A000", "SET ... FROM CURRENT is not supported");
        }
        return sv->name ? 0 : oom(a);
}

static int analyze_transaction(struct analyzer *a, const PgQuery__TransactionStmt *t)
{
        switch (t->kind) {
        case PG_QUERY__TRANSACTION_STMT_KIND__TRANS_STMT_BEGIN:
        case PG_QUERY__TRANSACTION_STMT_KIND__TRANS_STMT_START:
                a->stmt->transaction = SQL_TXN_BEGIN;
                return 0;
        case PG_QUERY__TRANSACTION_STMT_KIND__TRANS_STMT_COMMIT:
                a->stmt->transaction = SQL_TXN_COMMIT;
                return 0;
        case PG_QUERY__TRANSACTION_STMT_KIND__TRANS_STMT_ROLLBACK:
                a->stmt->transaction = SQL_TXN_ROLLBACK;
                return 0;
        default:
                return FAIL(a, "0A000", "savepoints and two-phase commit are not supported");
        }
}

/* A name for an unsupported statement, for its error. */
static const char *statement_name(PgQuery__Node__NodeCase c)
{
        switch (c) {
        case PG_QUERY__NODE__NODE_UPDATE_STMT:
                return "UPDATE";
        case PG_QUERY__NODE__NODE_VIEW_STMT:
                return "CREATE VIEW";
        case PG_QUERY__NODE__NODE_CREATE_TABLE_AS_STMT:
                return "CREATE MATERIALIZED VIEW and CREATE TABLE AS";
        case PG_QUERY__NODE__NODE_INDEX_STMT:
                return "CREATE INDEX";
        case PG_QUERY__NODE__NODE_COPY_STMT:
                return "COPY";
        case PG_QUERY__NODE__NODE_TRUNCATE_STMT:
                return "TRUNCATE";
        case PG_QUERY__NODE__NODE_EXPLAIN_STMT:
                return "EXPLAIN";
        default:
                return "this statement";
        }
}

static int analyze_stmt(struct analyzer *a, const struct batch_stmt *bs)
{
        const PgQuery__Node *n = bs->raw->stmt;
        struct sql_stmt *s = a->stmt;

        if (bs->as_of && n->node_case != PG_QUERY__NODE__NODE_SELECT_STMT)
                return FAIL_AT(a, (int)bs->as_of->begin, "0A000",
                               "AS OF is only supported in SELECT");
        switch (n->node_case) {
        case PG_QUERY__NODE__NODE_CREATE_STMT:
                s->kind = SQL_STMT_CREATE_TABLE;
                return analyze_create_table(a, n->create_stmt);
        case PG_QUERY__NODE__NODE_DROP_STMT:
                s->kind = SQL_STMT_DROP;
                return analyze_drop(a, n->drop_stmt);
        case PG_QUERY__NODE__NODE_INSERT_STMT:
                s->kind = SQL_STMT_INSERT;
                return analyze_insert(a, n->insert_stmt);
        case PG_QUERY__NODE__NODE_DELETE_STMT:
                s->kind = SQL_STMT_DELETE;
                return analyze_delete(a, n->delete_stmt);
        case PG_QUERY__NODE__NODE_SELECT_STMT:
                s->kind = SQL_STMT_SELECT;
                return analyze_select(a, n->select_stmt, bs->as_of);
        case PG_QUERY__NODE__NODE_VARIABLE_SHOW_STMT:
                return analyze_show(a, n->variable_show_stmt);
        case PG_QUERY__NODE__NODE_VARIABLE_SET_STMT:
                s->kind = SQL_STMT_SET_VARIABLE;
                return analyze_set(a, n->variable_set_stmt);
        case PG_QUERY__NODE__NODE_TRANSACTION_STMT:
                s->kind = SQL_STMT_TRANSACTION;
                return analyze_transaction(a, n->transaction_stmt);
        default:
                return FAIL(a, "0A000", "%s is not supported", statement_name(n->node_case));
        }
}

struct sql_stmt *sql_stmt_free(struct sql_stmt *s)
{
        if (!s)
                return NULL;
        switch (s->kind) {
        case SQL_STMT_CREATE_TABLE:
                for (size_t i = 0; i < s->create_table.n_columns; i++)
                        free(s->create_table.columns[i].name);
                free(s->create_table.columns);
                free(s->create_table.name);
                break;
        case SQL_STMT_DROP:
                for (size_t i = 0; i < s->drop.n_objects; i++)
                        free(s->drop.names[i]);
                free(s->drop.names);
                free(s->drop.ids);
                break;
        case SQL_STMT_INSERT:
                for (size_t i = 0; i < s->insert.n_rows; i++)
                        free(s->insert.rows[i].data);
                free(s->insert.rows);
                free(s->insert.table);
                break;
        case SQL_STMT_DELETE:
                rel_free(s->delete_.plan);
                free(s->delete_.table);
                break;
        case SQL_STMT_SELECT:
                if (s->select.peek)
                        coord__plan__peek__free_unpacked(s->select.peek, NULL);
                break;
        case SQL_STMT_SHOW_VARIABLE:
                free(s->show_variable.name);
                break;
        case SQL_STMT_SET_VARIABLE:
                free(s->set_variable.name);
                free(s->set_variable.value);
                break;
        default:
                break;
        }
        free(s->inputs);
        free(s->notices);
        free(s->sql);
        free(s);
        return NULL;
}

static void sql_stmt_freep(struct sql_stmt **s)
{
        *s = sql_stmt_free(*s);
}

int sql_analyze(const struct sql_batch *b, size_t i, const struct sql_catalog_ops *ops,
                void *userdata, const struct sql_params *params, struct sql_stmt **ret,
                struct row_error *err)
{
        _cleanup_(sql_stmt_freep) struct sql_stmt *s = NULL;
        struct analyzer a = {
                .b = b, .ops = ops, .userdata = userdata, .params = params, .err = err,
                .arena = ROW_ARENA_INIT,
        };
        const struct batch_stmt *bs;
        int r;

        assert(b && i < b->n_stmts);
        bs = &b->stmts[i];
        s = calloc(1, sizeof(*s));
        if (!s)
                return row_error_oom(err);
        /* The union members are all zero: sql_stmt_free() is safe at any point. */
        s->kind = _SQL_STMT_KIND_INVALID;
        s->sql = strndup(b->query + bs->begin, bs->end - bs->begin);
        if (!s->sql)
                return row_error_oom(err);
        a.stmt = s;
        r = analyze_stmt(&a, bs);
        row_arena_done(&a.arena);
        if (r < 0) {
                assert(!err || strlen(err->sqlstate) == 5);
                return r;
        }
        assert(s->kind >= 0 && s->kind < _SQL_STMT_KIND_MAX);
        *ret = TAKE_PTR(s);
        return 0;
}

int sql_analyze_one(const char *query, const struct sql_catalog_ops *ops, void *userdata,
                    const struct sql_params *params, struct sql_stmt **ret,
                    struct row_error *err)
{
        _cleanup_(sql_batch_freep) struct sql_batch *b = NULL;
        int r = sql_parse(query, &b, err);

        if (r < 0)
                return r;
        if (b->n_stmts != 1)
                return row_error_set(err, -EINVAL, "42601",
                                     b->n_stmts ? "cannot insert multiple commands into a "
                                                  "prepared statement"
                                                : "empty query");
        return sql_analyze(b, 0, ops, userdata, params, ret, err);
}
