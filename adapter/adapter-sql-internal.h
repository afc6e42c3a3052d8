/* adapter-sql-internal.h -- what the files of the SQL analyzer share; not part of the
 * adapter-sql.h contract.
 *
 * The analyzer is adapter-sql.c (names, positions, batches: parsing and lifting AS OF,
 * and the NOTES ON THE DESIGN that hold for all of it) and the adapter-sql-*.c files
 * beside it.  Here: the batch, the analyzer and its scopes, the macros they share, and
 * the functions one of those files calls in another, grouped by the file that defines
 * them.  A bare "note N" in a file is that file's note; the notes of another are named
 * with its file.  Single-threaded: one sql_analyze() call at a time per batch.
 */
#pragma once

#include <pg_query.h>
#include <pg_query/pg_query.pb-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter-sql.h"
#include "row/row-expr.h"

/* Analysis recursion bound: half of what the evaluator accepts, since promotion and
 * casts may add levels to the plan. */
#define ANALYZE_MAX_DEPTH (ROW_EXPR_MAX_DEPTH / 2)

#define AS_OF_PREFIX "SELECT "

struct as_of_clause {
        size_t begin;                   /* byte offset of the AS token */
        size_t expr_begin, expr_end;    /* the expression's bytes */
        PgQuery__ParseResult *tree;     /* AS_OF_PREFIX + expression */
};

/* One REFRESH option of a CREATE MATERIALIZED VIEW's WITH (...). */
struct lift_refresh {
        enum sql_refresh_kind kind;
        size_t location;                /* byte offset of the REFRESH token */
        struct as_of_clause expr;       /* AT <expr>, EVERY ... ALIGNED TO <expr>: tree NULL
                                         * when absent */
        char *interval;                 /* EVERY '<interval>' */
        size_t interval_location;
};

/* A Materialize clause lifted out of a statement on tokens (adapter-sql.h). */
enum lift_kind {
        LIFT_DEFAULT_INDEX,             /* the whole statement; PostgreSQL sees "SELECT" */
        LIFT_SHOW_MATERIALIZED_VIEWS,   /* PostgreSQL sees "SHOW VIEWS" */
        LIFT_MV_OPTIONS,                /* RETAIN HISTORY, REFRESH: PostgreSQL sees the
                                         * WITH (...) without them */
        LIFT_ALTER_RETAIN_HISTORY,      /* the whole statement; PostgreSQL sees "SELECT" */
        LIFT_CREATE_SINK,               /* the whole statement; PostgreSQL sees "SELECT" */
        LIFT_DROP_SINK,                 /* DROP SINK | SOURCE (alter_kind): the whole
                                         * statement; PostgreSQL sees "SELECT" */
        LIFT_CREATE_SOURCE,             /* the whole statement; PostgreSQL sees "SELECT" */
        LIFT_ALTER_SINK,                /* ALTER SINK name SET FROM relation: the whole
                                         * statement; PostgreSQL sees "SELECT" */
        LIFT_SUBSCRIBE,                 /* [COPY (] SUBSCRIBE ...: the whole statement;
                                         * PostgreSQL sees "SELECT" */
};

struct lift {
        size_t begin;                   /* byte offset of the statement's first token */
        enum lift_kind kind;
        bool if_not_exists;             /* DEFAULT INDEX */
        char *name;                     /* DEFAULT INDEX: its name, or NULL */
        char *on;                       /* DEFAULT INDEX: the object's name */
        char *on_schema;                /* DEFAULT INDEX: its schema, or NULL */
        char *duration;                 /* RETAIN HISTORY FOR '<duration>'; NULL: RESET */
        size_t location;                /* byte offset of the object / duration token */
        enum sql_object_kind alter_kind;        /* ALTER <kind> name SET/RESET (...) */
        struct lift_refresh *refresh;   /* MV options: the REFRESH options, in order */
        size_t n_refresh;
        char *path;                     /* CREATE SINK: INTO FILE '<path>' */
        int snapshot;                   /* CREATE SINK: WITH (SNAPSHOT = ...): 1, 0, or -1
                                         * when not given */
        int source_type;                /* CREATE SOURCE: enum sql_source_type */
        int format;                     /* CREATE SOURCE FILE: enum sql_source_format */
        uint64_t up_to, n_cols;         /* CREATE SOURCE: UP TO, CSV WITH n COLUMNS */
        char **names;                   /* DROP SINK: the names */
        size_t n_names;
        bool if_exists, cascade;        /* DROP SINK */
        bool copy;                      /* SUBSCRIBE: inside COPY (...) TO STDOUT */
        size_t unsupported;             /* SUBSCRIBE: 1 + offset of a clause we refuse
                                         * (0A000); 0: none */
        struct as_of_clause sub_as_of;  /* SUBSCRIBE inside COPY: its AS OF (tree NULL:
                                         * none); outside, the statement's as_of */
};

struct batch_stmt {
        const PgQuery__RawStmt *raw;
        size_t begin, end;              /* the statement's trimmed text */
        const struct as_of_clause *as_of;
        const struct lift *lift;
};

struct sql_batch {
        char *query;
        size_t len;
        /* libpg_query's trees and tokens, unpacked into the arena (adapter-sql.c note 9) */
        struct row_arena arena;
        ProtobufCAllocator pa;
        PgQuery__ParseResult *tree;
        struct batch_stmt *stmts;
        size_t n_stmts;
        struct as_of_clause *clauses;
        size_t n_clauses;
        struct lift *lifts;
        size_t n_lifts;
};

struct analyzer {
        const struct sql_batch *b;
        const struct sql_catalog_ops *ops;
        void *userdata;
        const struct sql_params *params;
        struct row_error *err;
        struct sql_stmt *stmt;

        /* Added to a node location to get a byte offset in the query (adapter-sql.c note 2). */
        long loc_base;
        unsigned depth;
        /* Non-NULL where mz_now() may not appear: names the place for the error. */
        const char *no_mz_now;

        /* The columns in scope (FROM); NULL outside of it. */
        const struct scope *scope;
        /* Subqueries ("Subqueries"): where their columns attach (NULL: refused here),
         * the query a subquery is in, and the correlation of the subquery being planned. */
        struct attach *attach;
        struct outer *outer;
        struct subq *sub;
        uint32_t late_base;             /* regroup(): where LATE_MARK columns start */
        /* WITH queries in scope, innermost first ("WITH queries"). */
        const struct cte_level *ctes;
        /* Aggregates: collected here where they are allowed (a grouped SELECT's list,
         * HAVING, ORDER BY); otherwise no_agg names the place for the error. */
        struct agg_ctx *agg;
        const char *no_agg;
        bool in_agg;                    /* inside an aggregate's argument */
        /* Fold errors (1/0) are reported only where values must be constants (INSERT,
         * AS OF, LIMIT); elsewhere the expression stays and fails at run time if a row
         * reaches it. */
        bool strict_fold;
        bool materialize;               /* planning a materialized view or an index */
        bool in_view;                   /* planning a view (CREATE VIEW) */
        bool peek;                      /* planning a SELECT: objects may be read from indexes */
        uint64_t *indexed;              /* a SELECT's (object, index read) pairs: choose_indexes() */
        size_t n_indexed;
        /* ON CONFLICT DO UPDATE (adapter-sql-upsert.c): FROM `excluded` names this
         * relation, the proposed rows in the columns of preset_rel. */
        const char *preset_name;
        const Coord__Plan__Relation *preset_plan;
        const struct sql_relation *preset_rel;
        const char *write_reads;        /* planning what a write reads: tables only */
        bool no_limit;                  /* planning a subquery in an expression: no LIMIT */
        bool nondeterministic;          /* mz_now() somewhere, also through a view */
        unsigned ctes_planned;          /* WITH queries planned (CTE_MAX_PLANNED) */
        /* The next expression analyzed is a reg* cast where its text is all that is used
         * (analyze_reg_cast()); it clears the flag. */
        bool reg_ok;

        struct row_arena arena;         /* texts computed while folding */
        size_t cap_inputs;
        char **strings;                 /* names kept for the analysis (keep_string()) */
        size_t n_strings;
};

/* A column in scope.  Names are borrowed from the parse tree, the catalog's answer or
 * keep_string(); all outlive the analysis. */
struct scope_col {
        const char *qual;               /* the range's name (alias), NULL for none */
        const char *name;
        int type;
        bool nullable;
        bool hidden;                    /* JOIN USING's right column: only qualified */
        bool unknown;                   /* a SELECT's untyped literal, output as text: a
                                         * UNION with a typed arm types it (plan_setop()) */
};

struct scope {
        struct scope_col *cols;
        size_t n;
        uint32_t *star;                 /* what * expands to, in order */
        size_t n_star;
        const char **quals;             /* range names of the FROM clause */
        size_t n_quals;
};

/* Subqueries (see "Subqueries" below).  In a correlated subquery's WHERE a column of the
 * enclosing query is the placeholder column OUTER_MARK | its index there, until the
 * WHERE's conjuncts are sorted into keys (plan_where()). */
#define OUTER_MARK 0x20000000u

#define LATE_MARK 0x10000000u

/* A correlated subquery planned over its domain ("Subqueries", the domain path): D, the
 * distinct values of the enclosing query's columns it reads over the rows it is attached
 * to, is joined to its FROM, and each reference reads D's column there. */
struct domain {
        uint32_t *cols;                 /* the enclosing scope's columns read, in order */
        size_t n;
        bool on;                        /* planning over D: references read its columns */
        bool wanted;                    /* the equality path refused a reference */
        bool grew;                      /* a reference outside cols met: plan again */
        const struct scope *scope;      /* the subquery's FROM, once D is joined to it */
        uint32_t base;                  /* D's first column there */
};

struct outer {
        const struct scope *scope;      /* the enclosing query's columns */
        const Coord__Plan__Relation *rows; /* its rows (rows_n wide), NULL: no domain path */
        size_t rows_n;
        struct domain *dom;             /* the subquery's domain, NULL: none */
        const struct outer *up;         /* further out: references to it are refused */
        bool collect;                   /* in the subquery's WHERE: references allowed */
        bool refuse;                    /* a grouped query's: no reference at all */
        bool cte;                       /* a WITH query's: no reference at all */
};

/* One WITH clause in scope: its first n_visible queries may be referenced; a WITH
 * query is planned where it is referenced, in the context the clause is in (outer,
 * no_limit), so each reference is the query inlined as a subquery in FROM. */
struct cte_level {
        const PgQuery__WithClause *with;
        size_t n_visible;
        struct outer *outer;
        bool no_limit;
        const struct cte_level *up;
};

/* What plan_select() found of a subquery's correlation. */
struct subq {
        bool empty;                     /* plan it over no rows, without keys */
        Coord__Plan__Expr **inner;      /* key i over the subquery's FROM ... */
        Coord__Plan__Expr **outer;      /* ... equals this over the enclosing scope */
        size_t n;
        size_t n_visible;               /* the subquery's own columns; its n keys follow */
        bool global;                    /* aggregates without GROUP BY */
        bool having;
        struct domain *dom;             /* the domain path's, when dom->on: keys are D's */
        /* Over the domain, global: its value over no rows, over the enclosing scope
         * (domain_default()); NULL where that cannot be had. */
        Coord__Plan__Expr *dflt;
};
void subq_done(struct subq *q);

/* A subquery's columns joined to the rows of its scope. */
struct attachment {
        Coord__Plan__Relation *t;       /* nk keys then np payload; nk = 0: one row */
        Coord__Plan__Expr **keys;       /* nk, over the scope */
        Coord__Plan__Type *ptypes;
        size_t nk, np;
        size_t n_safe;                  /* the first n_safe keys match NULL to NULL in T */
        Coord__Plan__Expr *value;       /* over the scope and payload, or NULL */
        uint32_t first;                 /* the payload's first column */
};

struct attach {
        struct scope *scope;            /* gains hidden columns: payloads, values */
        size_t base_n;                  /* its width before the first attachment */
        /* Those rows (base_n wide), where a subquery may take its domain from them;
         * borrowed, valid while its expressions are analyzed.  NULL: no domain path. */
        const Coord__Plan__Relation *rows;
        /* A grouped SELECT's list and HAVING: uncorrelated subqueries only, joined to the
         * Reduce's rows; their columns are LATE_MARK | index in scope (empty at first)
         * until the Reduce's width is known (regroup()). */
        bool late;
        const struct scope *outer;      /* late: the FROM scope references are refused in */
        struct attachment *v;
        size_t n;
        const PgQuery__SubLink **truth; /* conjuncts of a WHERE: NULL counts as FALSE */
        size_t n_truth;
        /* The rows it attaches to are none, whatever the data (a FROM of an empty
         * pg_catalog relation): its subqueries are never evaluated (moot_sublink()). */
        bool empty;
};

/* Aggregates of a grouped SELECT.  An analyzed aggregate is a placeholder column
 * AGG_MARK | k until regroup() rewrites it to the Reduce's output column. */
#define AGG_MARK 0x40000000u

struct agg_ctx {
        Coord__Plan__AggFunc *funcs;
        Coord__Plan__Expr **args;       /* over the input; NULL for count(*) */
        int *types;
        char **delims;                  /* string_agg's delimiter, NULL for the others */
        size_t n, cap;
};

/* An expression under analysis (adapter-sql-expr.c note 1). */
struct typed {
        Coord__Plan__Expr *e;
        bool unknown;           /* an untyped literal: a TEXT or NULL literal, undecided */
        int location;           /* in the parsed text, -1 if none */
};

#define FAIL_AT(a, location, sqlstate, ...)                                               \
        ({                                                                                  \
                int _r_ = row_error_set((a)->err, -EINVAL, sqlstate, __VA_ARGS__);          \
                error_at(a, location);                                                            \
                _r_;                                                                        \
        })

#define FAIL(a, sqlstate, ...) row_error_set((a)->err, -EINVAL, sqlstate, __VA_ARGS__)

/* TopK(input) with the window of tk; consumes input and the sort keys. */
struct topk_spec {
        bool on;                        /* a window to cut: LIMIT, or OFFSET > 0 */
        bool has_limit;
        uint64_t limit, offset;
        Coord__Plan__SortKey **order;
        size_t n_order;
};

/* adapter-sql.c */
unsigned char_position(const char *s, size_t len, size_t off);
void sql_batch_freep(struct sql_batch **b);

/* adapter-sql-build.c */
void expr_free(Coord__Plan__Expr *e);
void expr_freep(Coord__Plan__Expr **e);
void rel_free(Coord__Plan__Relation *r);
void rel_freep(Coord__Plan__Relation **r);
Coord__Plan__Expr *expr_column(int type, uint32_t index);
Coord__Plan__Expr *expr_literal(int type, const struct row_datum *d);
Coord__Plan__Expr *expr_call(int type, Coord__Plan__Func func, Coord__Plan__Expr **args,
                                    size_t n);
Coord__Plan__Relation *rel_new(void);
Coord__Plan__Relation *rel_of(Coord__Plan__Relation__KindCase kind);
Coord__Plan__Relation *rel_get(const struct sql_relation *src);
Coord__Plan__Relation *rel_unit(void);
Coord__Plan__Relation *rel_filter(Coord__Plan__Relation *input, Coord__Plan__Expr *pred);
Coord__Plan__Relation *rel_map(Coord__Plan__Relation *input, Coord__Plan__Expr **exprs,
                                      size_t n);
Coord__Plan__Relation *rel_project(Coord__Plan__Relation *input, uint32_t *outputs,
                                          size_t n);
int add_sorted(struct analyzer *a, uint64_t **arr, size_t *n, uint64_t id);
int add_reference(struct analyzer *a, uint64_t id);
int keep_string(struct analyzer *a, char *s, const char **ret);
int keep_stringf(struct analyzer *a, const char **ret, const char *fmt, ...);
bool expr_equal(const Coord__Plan__Expr *x, const Coord__Plan__Expr *y);
Coord__Plan__Relation *rel_copy(const Coord__Plan__Relation *r);
Coord__Plan__Expr *expr_copy(const Coord__Plan__Expr *e);
Coord__Plan__Relation *rel_get_id(uint64_t id, const struct sql_column *cols, size_t n);
Coord__Plan__Relation *rel_filter_n(Coord__Plan__Relation *input, Coord__Plan__Expr **preds,
                                           size_t n);
Coord__Plan__Relation *rel_join(Coord__Plan__Relation *left, Coord__Plan__Relation *right);
Coord__Plan__Relation *rel_union(Coord__Plan__Relation **inputs, size_t n);
Coord__Plan__Relation *rel_distinct(Coord__Plan__Relation *input);
Coord__Plan__Relation *rel_negate(Coord__Plan__Relation *input);
Coord__Plan__Relation *rel_threshold(Coord__Plan__Relation *input);
void topk_spec_done(struct topk_spec *tk);
Coord__Plan__Relation *rel_topk(Coord__Plan__Relation *input, struct topk_spec *tk);
Coord__Plan__Relation *rel_constant(Coord__Plan__Type *types, size_t n_types,
                                           Coord__Plan__Update **rows, size_t n_rows);
Coord__Plan__Update *update_new(const struct row_datum *row, size_t n);
int rel_types(const Coord__Plan__Relation *r, Coord__Plan__Type **ret, size_t *ret_n);
bool rel_is_empty(const Coord__Plan__Relation *r);
int rel_make_empty(struct analyzer *a, Coord__Plan__Relation **pr);
int rel_cast_columns(struct analyzer *a, Coord__Plan__Relation **plan, const int *from,
                            const int *to, size_t n);

/* adapter-sql-expr.c */
void typed_done(struct typed *t);
void error_at(struct analyzer *a, int location);
int analyzer_oom(struct analyzer *a);
int add_input(struct analyzer *a, uint64_t id);
int add_notice(struct analyzer *a, const char *sqlstate, const char *fmt, ...);
int lookup_relation(struct analyzer *a, const char *name, struct sql_relation *ret);
const char *node_string(const PgQuery__Node *n);
int range_var_name(struct analyzer *a, const PgQuery__RangeVar *rv, const char **ret);
int list_name(struct analyzer *a, const PgQuery__Node *n, const char **ret);
const char *typed_name(const struct typed *t);
bool type_is_int(int type);
bool type_is_number(int type);
int no_function(struct analyzer *a, const PgQuery__FuncCall *f, const char *name);
int numeric_promote(struct analyzer *a, struct typed *t);
bool is_literal(const Coord__Plan__Expr *e);
int resolve_type(struct analyzer *a, const PgQuery__TypeName *tn, enum row_type *ret,
                        uint32_t *max_chars);
int fold_typed(struct analyzer *a, struct typed *t);
int varchar_of(struct analyzer *a, struct typed *t, uint32_t n, bool explicit_);
/* adapter-sql-bpchar.c */
int resolve_bpchar(struct analyzer *a, const PgQuery__TypeName *tn, bool array,
                   uint32_t *max_chars);
int bpchar_of(struct analyzer *a, struct typed *t, uint32_t n, bool explicit_);
bool typed_is_bpchar(const struct typed *t);
int bpchar_as_text(struct analyzer *a, struct typed *t);
int bpchar_refuse(struct analyzer *a, int location, const char *what);
int bpchar_compare_operands(struct analyzer *a, struct typed *l, struct typed *r);
int bpchar_in_sublink(struct analyzer *a, struct typed *x, Coord__Plan__Relation **rel,
                      int *vtype);
int wrap_call(struct analyzer *a, struct typed *t, Coord__Plan__Func func, int type);
int coerce_unknown(struct analyzer *a, struct typed *t, int type);
int promote_to(struct analyzer *a, struct typed *t, int type);
int cast_to(struct analyzer *a, struct typed *t, int type, int location);
int require_bool(struct analyzer *a, struct typed *t, const char *what);
int no_operator(struct analyzer *a, const char *op, const struct typed *l,
                       const struct typed *r, int location);
int binary_op(struct analyzer *a, const char *op, struct typed *l, struct typed *r,
                  int location);
bool is_regex_op(const char *op);
int analyze_a_expr(struct analyzer *a, const PgQuery__AExpr *x, struct typed *ret);
int analyze_bool_expr(struct analyzer *a, const PgQuery__BoolExpr *x, struct typed *ret);
bool is_aggregate_name(const char *name);

/* adapter-sql-agg.c */
int analyze_aggregate(struct analyzer *a, const PgQuery__FuncCall *f, const char *name,
                      struct typed *ret);

/* adapter-sql-expr.c, continued */
int cannot_materialize(struct analyzer *a, int location, const char *what);
int typed_literal(struct analyzer *a, int type, const struct row_datum *d, bool unknown,
                         int location, struct typed *ret);
int analyze_func_call(struct analyzer *a, const PgQuery__FuncCall *f, struct typed *ret);
const char *sql_value_function_name(PgQuery__SQLValueFunctionOp op);
int analyze_sql_value_function(struct analyzer *a, const PgQuery__SQLValueFunction *v,
                                      struct typed *ret);
int common_type(struct analyzer *a, struct typed *v, size_t n, const char *what, int *ret);
int analyze_coalesce(struct analyzer *a, const PgQuery__CoalesceExpr *c, struct typed *ret);
int analyze_minmax(struct analyzer *a, const PgQuery__MinMaxExpr *m, struct typed *ret);
bool scope_has_qual(const struct scope *sc, const char *q);
int analyze_column_ref(struct analyzer *a, const PgQuery__ColumnRef *c, struct typed *ret);
int analyze_const(struct analyzer *a, const PgQuery__AConst *c, struct typed *ret);
int analyze_param(struct analyzer *a, const PgQuery__ParamRef *p, struct typed *ret);

/* adapter-sql-func.c */
int build_call(struct analyzer *a, struct typed *ret, int type, Coord__Plan__Func func,
                 Coord__Plan__Expr **args, size_t n, int location);
int build_call_typed(struct analyzer *a, int r, struct typed *v, Coord__Plan__Expr **args, size_t n,
                     struct typed *ret, int type, Coord__Plan__Func func, int location);
Coord__Plan__Expr *bool_literal(bool v);
int unknown_null(struct analyzer *a, int location, struct typed *ret);
int analyze_in(struct analyzer *a, const PgQuery__AExpr *x, const char *op,
                      struct typed *ret);
int analyze_between(struct analyzer *a, const PgQuery__AExpr *x, struct typed *ret);
int analyze_distinct(struct analyzer *a, const PgQuery__AExpr *x, struct typed *ret);
int analyze_nullif(struct analyzer *a, const PgQuery__AExpr *x, struct typed *ret);
int analyze_like(struct analyzer *a, const PgQuery__AExpr *x, const char *op,
                        struct typed *ret);
int concat_op(struct analyzer *a, struct typed *l, struct typed *r, int location);
int analyze_scalar_func(struct analyzer *a, const PgQuery__FuncCall *f, const char *name,
                               struct typed *ret);
Coord__Plan__Expr *expr_call2(int type, Coord__Plan__Func func, Coord__Plan__Expr *x,
                                Coord__Plan__Expr *y);
Coord__Plan__Expr *case_of(Coord__Plan__Expr *x, const int64_t *v, const char *const *res,
                                  size_t k, int type, Coord__Plan__Expr *else_);
int analyze_catalog_func(struct analyzer *a, const PgQuery__FuncCall *f, const char *name,
                                struct typed *ret);
int analyze_array_func(struct analyzer *a, const PgQuery__FuncCall *f, const char *name,
                              struct typed *ret);
int analyze_expr(struct analyzer *a, const PgQuery__Node *n, struct typed *ret);

/* adapter-sql-describe.c */
bool is_reg_cast(const PgQuery__Node *n);
int analyze_reg_cast(struct analyzer *a, const PgQuery__TypeCast *tc, struct typed *ret);
int analyze_describe_func(struct analyzer *a, const PgQuery__FuncCall *f, const char *name,
                                 struct typed *ret);

/* adapter-sql-stmt.c */
int analyze_create_table(struct analyzer *a, const PgQuery__CreateStmt *c);
int analyze_drop(struct analyzer *a, const PgQuery__DropStmt *d);
int analyze_drop_sink(struct analyzer *a, const struct lift *l);
int target_table(struct analyzer *a, const PgQuery__RangeVar *rv, const char *verb,
                        struct sql_relation *ret, char **ret_name);
int assign_column(struct analyzer *a, struct typed *t, const struct sql_column *col);
int node_location(const PgQuery__Node *n);
struct row_datum column_default(const struct sql_column *col);
bool has_sublink(const ProtobufCMessage *m);
int write_returning(struct analyzer *a, PgQuery__RangeVar *relation, PgQuery__Node **list,
                    size_t n_list, uint64_t id, size_t width, Coord__Plan__Peek **ret_peek,
                    Coord__Plan__Expr ***ret_exprs, size_t *ret_m);
int analyze_insert(struct analyzer *a, const PgQuery__InsertStmt *ins);
Coord__Plan__Relation *rows_constant(const struct sql_relation *t, const struct sql_row *rows, size_t n);
int analyze_where(struct analyzer *a, const PgQuery__Node *where, Coord__Plan__Expr **ret);

/* adapter-sql-upsert.c */
int plan_upsert(struct analyzer *a, const PgQuery__InsertStmt *ins, const struct sql_relation *rel);

/* adapter-sql-from.c */
void scope_done(struct scope *sc);
int scope_add_col(struct analyzer *a, struct scope *sc, const char *qual, const char *name,
                         int type, bool nullable, bool in_star);
int scope_add_qual(struct analyzer *a, struct scope *sc, const char *q, int location);
int nondeterministic_view(struct analyzer *a, const char *name, int location);
int with_push(struct analyzer *a, const PgQuery__WithClause *w, struct cte_level *level);
int conj_add(struct analyzer *a, Coord__Plan__Expr ***preds, size_t *n, Coord__Plan__Expr *pred);
Coord__Plan__Relation *rel_project_range(Coord__Plan__Relation *input, uint32_t from, size_t n);
int plan_from(struct analyzer *a, const PgQuery__SelectStmt *s, struct scope *sc,
                     Coord__Plan__Relation **ret);

/* adapter-sql-query.c */
const char *figure_colname(const PgQuery__Node *n);
bool has_limit(const PgQuery__SelectStmt *s);
int limit_offset(struct analyzer *a, const PgQuery__SelectStmt *s, bool *has_count,
                        uint64_t *count, bool *has_offset, uint64_t *offset);
int plan_query(struct analyzer *a, const PgQuery__Node *n, Coord__Plan__Peek *peek,
                      Coord__Plan__Relation **ret_plan, struct scope *ret_cols);

/* adapter-sql-setop.c */
int plan_values(struct analyzer *a, const PgQuery__SelectStmt *s,
                Coord__Plan__Relation **ret_plan, struct scope *ret_cols);
int plan_setop(struct analyzer *a, const PgQuery__SelectStmt *s,
               Coord__Plan__Relation **ret_plan, struct scope *ret_cols);

/* adapter-sql-subquery.c */
Coord__Plan__Relation *rel_reduce(Coord__Plan__Relation *input, size_t nk,
                                  const Coord__Plan__AggFunc *func, const uint32_t *col,
                                  const Coord__Plan__Type *type, size_t na);
void attach_done(struct attach *ac);
void late_unmark(Coord__Plan__Expr *e, uint32_t base);
int truth_sublinks(struct analyzer *a, const PgQuery__Node *n, struct attach *ac);
int attach_apply(struct analyzer *a, struct attach *ac, Coord__Plan__Relation **pr);
bool rel_known_empty(const Coord__Plan__Relation *rel);
int moot_sublink(struct analyzer *a, const PgQuery__SubLink *sl, struct typed *ret);
int plan_where(struct analyzer *a, Coord__Plan__Relation **pr, Coord__Plan__Expr *pred,
                      struct attach *ac, struct subq *sq, size_t n_from);
int plan_subquery(struct analyzer *a, const PgQuery__Node *sub, bool plain, struct subq *q,
                  Coord__Plan__Relation **ret, struct scope *out);

/* adapter-sql-correlate.c */
void domain_done(struct domain *d);
int domain_ref(struct analyzer *a, const struct outer *o, size_t col, const char *name,
               int location, struct typed *ret);
int domain_join(struct analyzer *a, const struct outer *o, struct subq *sq, struct scope *from,
                Coord__Plan__Relation **plan);
int plan_correlated(struct analyzer *a, const PgQuery__Node *sub, bool plain, struct subq *q,
                    Coord__Plan__Relation **ret, struct scope *out);
int domain_default(const Coord__Plan__Expr *e, size_t nk, const struct agg_ctx *agg,
                   Coord__Plan__Expr *const *outer, Coord__Plan__Expr **ret);

/* adapter-sql-optimize.c */
bool expr_columns(const Coord__Plan__Expr *e, uint32_t *lo, uint32_t *hi);
void expr_shift(Coord__Plan__Expr *e, uint32_t by);
bool key_column(const Coord__Plan__Expr *e, uint32_t *ret);
bool join_key(const Coord__Plan__Expr *e, uint32_t nl, uint32_t *lk, uint32_t *rk);
int finish_plan(struct analyzer *a, Coord__Plan__Relation **plan);
int note_index_read(struct analyzer *a, uint64_t object, uint64_t index);
int analyze_as_of(struct analyzer *a, const struct as_of_clause *c, uint64_t *ret);

/* adapter-sql-plan.c */
int peek_columns(struct analyzer *a, Coord__Plan__Peek *peek, const struct scope *cols);
int analyze_update(struct analyzer *a, const PgQuery__UpdateStmt *u);
int analyze_insert_select(struct analyzer *a, const PgQuery__InsertStmt *ins,
                                 const struct sql_relation *rel, const size_t *targets,
                                 size_t n_targets);

/* adapter-sql-using.c: DELETE ... USING, UPDATE ... FROM (its notes) */
struct exists_node {            /* parse nodes of a subquery built there, on a caller's stack */
        PgQuery__ResTarget rt;
        PgQuery__AConst null;
        PgQuery__Node rtn, nulln, *list[1];
        PgQuery__SelectStmt sel;
        PgQuery__SubLink sl;
        PgQuery__Node seln, sln;
};

struct write_from {
        const char *what;                       /* "DELETE ... USING", for messages */
        const PgQuery__RangeVar *target;
        const char *qual;                       /* the target's name in the statement */
        PgQuery__Node **items;                  /* the FROM (USING) list, borrowed */
        size_t n_items;
        PgQuery__Node *cond;                    /* its WHERE, borrowed; NULL: none */
        struct exists_node exists;              /* the WHERE the write is planned with */
};

/* Check the statement's names over one FROM list, then *ret_where = EXISTS (SELECT NULL
 * FROM items WHERE where), valid while wf is.  set: an UPDATE's SET list. */
int write_from_begin(struct analyzer *a, struct write_from *wf, const char *what, const char *verb,
                     const PgQuery__RangeVar *target, PgQuery__Node **items, size_t n_items,
                     PgQuery__Node *where, PgQuery__WithClause *with, PgQuery__Node **set,
                     size_t n_set, PgQuery__Node **ret, size_t n_ret, PgQuery__Node **ret_where);
/* r, or the refusal in the statement's terms of a correlation the EXISTS cannot plan. */
int write_from_refusal(struct analyzer *a, const struct write_from *wf, int r);
/* r, or 0A000 when the RETURNING list's analysis failed on an item's column. */
int write_from_returning(struct analyzer *a, const struct write_from *wf, int r);
/* An UPDATE's SET value with each item's column a scalar subquery: *ret owned. */
int write_from_value(struct analyzer *a, const struct write_from *wf, const struct sql_relation *rel,
                     const PgQuery__Node *val, PgQuery__Node **ret);

/* adapter-sql-create.c */
int analyze_create_view(struct analyzer *a, const PgQuery__ViewStmt *v);
int parse_duration(const char *s, uint64_t *ret);
int analyze_create_materialized_view(struct analyzer *a, const PgQuery__CreateTableAsStmt *c,
                                            const struct lift *lift);
int analyze_create_index(struct analyzer *a, const PgQuery__IndexStmt *s);
int analyze_create_source(struct analyzer *a, const struct lift *l);
int analyze_create_sink(struct analyzer *a, const struct lift *l);
int analyze_alter_sink(struct analyzer *a, const struct lift *l);
int analyze_subscribe(struct analyzer *a, const struct lift *l, const struct as_of_clause *as_of);
int analyze_default_index(struct analyzer *a, const struct lift *l);
