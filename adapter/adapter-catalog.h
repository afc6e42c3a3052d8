/* adapter-catalog.h -- the catalog writer's view of the catalog: its items in memory,
 * and the DDL transactions that change them (DESIGN section 5).
 *
 * The adapter is the only writer of the catalog.  It loads every item at start and keeps
 * them in memory, indexed by GlobalId and by name.  A DDL statement is validated against
 * that in-memory state as it would be after the statement (names unique, objects that
 * exist), then committed as one catalog transaction (one fsynced batch with its log
 * entry) and only then applied to memory: memory never shows an uncommitted item.
 *
 * Built-in relations are not catalog items: they have fixed GlobalIds below
 * ACAT_FIRST_USER_GID and fixed columns, and their names are reserved.
 *
 * Single-threaded (the adapter's loop thread), except that catalog_commit() below may
 * share its fsync with other threads' commits.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter-sql.h"
#include "builtins.h"

struct catalog;
struct adapter_catalog;         /* opaque */

/* The built-ins' gids, defined once in common/builtins.h. */
#define ACAT_GID_OBJECTS     COORD_GID_OBJECTS      /* coord_objects (id, name, kind, create_sql) */
#define ACAT_GID_FRONTIERS   COORD_GID_FRONTIERS    /* coord_frontiers (object_id, read_frontier, write_frontier) */
#define ACAT_GID_BOUNDS      COORD_GID_BOUNDS       /* coord_bounds (object_id, bound) */
#define ACAT_GID_REQUIREMENTS COORD_GID_REQUIREMENTS /* coord_requirements (consumer_id, input_id, frontier) */
#define ACAT_FIRST_USER_GID  COORD_FIRST_USER_GID

struct acat_item {
        uint64_t gid;
        char *name;
        enum sql_object_kind kind;
        uint32_t n_indexes;             /* its committed indexes (index_refresh()) */
        char *create_sql;
        struct sql_column *columns;
        size_t n_columns;
        uint64_t created_at;            /* birth: the oracle timestamp of its creation */
        bool builtin;
        bool pending;                   /* created, commit in progress: name reserved,
                                         * invisible to statements */
        bool dropping;                  /* dropped, commit in progress */
        bool altering;                  /* ALTER SINK ... SET FROM, commit in progress */
        bool chunked;                   /* loaded into a load chunk (item_chunk_alloc()) */
        /* The other flags here too, not in their sections: 2,000,000 items at 1,000,000
         * objects, and each lone bool cost 8 bytes. */
        bool nondeterministic;
        bool refresh;                   /* a materialized view on a refresh schedule */
        bool sink_snapshot;
        bool has_bound;                 /* bound below is committed */
        size_t block_len;               /* loaded: the struct's allocation holds its strings
                                         * and arrays too (item_from_proto()); 0: each its own */

        /* Views, materialized views and indexes (CatalogItem fields 7-15). */
        Coord__Plan__Relation *plan;    /* a view's, unpacked from plan_bytes at its first
                                         * use (acat_relation()); NULL until then */
        uint8_t *plan_bytes;
        size_t plan_len;
        uint64_t *logical_inputs;       /* ascending */
        size_t n_logical;
        uint64_t *physical_inputs;      /* ascending */
        size_t n_physical;
        uint64_t *refs;                 /* objects named directly: its dependencies */
        size_t n_refs;
        uint64_t on_id;                 /* index: the object indexed */
        uint32_t *keys;                 /* index: key columns */
        size_t n_keys;
        uint64_t as_of;                 /* materialized view, index */
        uint64_t retain_history_ms;
        struct sql_check *checks;       /* a table's CHECK constraints (field 28) */
        size_t n_checks;
        struct sql_unique *uniques;     /* its PRIMARY KEY and UNIQUE constraints (29) */
        size_t n_uniques;
        struct sql_foreign_key *fkeys;  /* its FOREIGN KEY constraints (30) */
        size_t n_fkeys;
        /* A materialized view on a refresh schedule (CatalogItem fields 16-19; refresh
         * with the flags). */
        uint64_t *refresh_at;           /* ascending */
        size_t n_refresh_at;
        uint64_t refresh_every_ms, refresh_aligned_to;
        /* A sink (CatalogItem fields 20-21; sink_snapshot with the flags). */
        char *sink_path;
        /* A source (fields 22-27); progress_of: this is that source's progress. */
        uint64_t progress_of;
        uint32_t source_type, source_format;
        char *source_path;
        uint64_t source_tick_ms, source_up_to;

        /* Read protection (issue 5), mirrored from the 'b' and 'r' records (has_bound with
         * the flags): */
        uint64_t bound;                 /* committed compaction bound */
        struct acat_req *reqs;          /* this consumer's requirements, by input */
        size_t n_reqs;

        /* In memory only, rebuilt at load: */
        uint64_t pending_bound;         /* a publication in flight raises the bound to this */
        struct acat_item **req_consumers;       /* items (pending ones too) with a
                                                 * requirement on this one */
        size_t n_req_consumers, cap_req_consumers;
        uint64_t index_id;              /* the oldest index on this object, 0 if none */
        uint64_t *dependents;           /* items (pending ones too) whose refs name it */
        size_t n_dependents, cap_dependents;
};

/* R(consumer, input) (DESIGN section 2). */
struct acat_req {
        uint64_t input;
        uint64_t frontier;
        uint64_t pending;       /* a publication in flight moves it here; 0: none */
        bool leaving;           /* an ALTER SINK in flight removes it: publications skip it */
};

/* What a transaction changes of bounds and requirements, for the built-in relations
 * coord_bounds and coord_requirements: had_old/old is the row to retract, has_new/new_
 * the row to insert. */
struct acat_bound_change {
        uint64_t gid;
        bool had_old, has_new;
        uint64_t old, new_;
};

struct acat_req_change {
        uint64_t consumer, input;
        bool had_old, has_new;
        uint64_t old, new_;
};

/* What a CREATE puts in a new item (everything is copied). */
struct acat_new_item {
        const char *name;
        enum sql_object_kind kind;
        const char *create_sql;
        const struct sql_column *columns;
        size_t n_columns;
        const Coord__Plan__Relation *plan;      /* NULL for a table */
        const uint64_t *logical_inputs;
        size_t n_logical;
        const uint64_t *physical_inputs;
        size_t n_physical;
        const uint64_t *refs;
        size_t n_refs;
        uint64_t on_id;
        const uint32_t *keys;
        size_t n_keys;
        uint64_t as_of;
        uint64_t retain_history_ms;
        bool nondeterministic;
        const struct sql_check *checks;         /* a table's CHECK constraints */
        size_t n_checks;
        const struct sql_unique *uniques;       /* its PRIMARY KEY and UNIQUE constraints */
        size_t n_uniques;
        const struct sql_foreign_key *fkeys;    /* its FOREIGN KEY constraints; each ref_id
                                                 * is one of refs */
        size_t n_fkeys;
        /* A materialized view's refresh schedule, its times evaluated (ascending): its
         * requirements and its birth bound are its first refresh at or after as_of. */
        bool refresh;
        const uint64_t *refresh_at;
        size_t n_refresh_at;
        uint64_t refresh_every_ms, refresh_aligned_to;
        /* A sink: its file; SNAPSHOT.  Its requirements are at as_of, as any consumer's. */
        const char *sink_path;
        bool sink_snapshot;
        /* A source: what it ingests (CatalogItem fields 23-27); a source's progress item:
         * the source's gid (set by acat_create_source_begin()). */
        uint64_t progress_of;
        uint32_t source_type, source_format;
        const char *source_path;
        uint64_t source_tick_ms, source_up_to;
};

int acat_open(struct catalog *store, struct adapter_catalog **ret);

/* Where acat_open()'s time went (microseconds), for its log line. */
struct acat_load_times {
        uint64_t scan_us;       /* the four scans, decoding (adapter-catalog-open.c NOTE 4) */
        uint64_t link_us;       /* the name index, dependencies and protection after them */
};
void acat_load_times(const struct adapter_catalog *ac, struct acat_load_times *ret);
struct adapter_catalog *acat_free(struct adapter_catalog *ac);

/* Lookups; NULL when absent.  Items stay valid until the DDL that removes them. */
const struct acat_item *acat_by_gid(const struct adapter_catalog *ac, uint64_t gid);
const struct acat_item *acat_by_name(const struct adapter_catalog *ac, const char *name);

/* Every item (built-ins first, then user items by GlobalId): *ret_items is a borrowed
 * array valid until the next DDL. */
size_t acat_items(struct adapter_catalog *ac, const struct acat_item *const **ret_items);
size_t acat_count_user(const struct adapter_catalog *ac);

/* The sql_catalog_ops for sql_analyze(); userdata is the adapter_catalog. */
extern const struct sql_catalog_ops acat_sql_ops;
/* Where its leases op reads coord_leases (adapter-lease.c's lease_table_each() and the
 * table); unset: no leases. */
void acat_set_leases(struct adapter_catalog *ac, int (*each)(void *src, sql_lease_fn fn, void *arg),
                     void *src);
/* What the analyzer learns of an item (what acat_sql_ops' lookup returns for a
 * committed one); borrowed from it. */
void acat_relation(const struct acat_item *it, struct sql_relation *ret);

/* DDL, in two steps so that the commit can run off the loop thread (and share its
 * fsync with concurrent DDL):
 *   begin:  validate on the final state, reserve (a created name is taken, dropped
 *           items are marked), and build the transaction's ops: -EINVAL with err set
 *           is a SQL error and nothing changed;
 *   commit: the caller commits acat_txn_ops() (catalog_commit or the committer);
 *   finish: with the commit's result: 0 applies the change to memory, an error rolls
 *           the reservation back.  Frees the txn.
 * Memory never shows an uncommitted item to statements: a pending item only reserves
 * its name. */
struct acat_txn;
int acat_create_table_begin(struct adapter_catalog *ac, const struct sql_create_table *ct,
                            const char *create_sql, uint64_t ts, struct acat_txn **ret,
                            struct row_error *err);
/* Any kind of item.  Every ref must exist and not be on its way out (a concurrent DROP
 * of an input fails with 55006 until this commit finishes, and vice versa).  The new
 * item is a dependent of its refs from now on, so a DROP of one of them sees it. */
int acat_create_begin(struct adapter_catalog *ac, const struct acat_new_item *ni, uint64_t ts,
                      struct acat_txn **ret, struct row_error *err);
/* The same, where refs may also name the items of the creations `before` (begun, not
 * finished), because the caller commits this transaction in the same write as those
 * and after them (catalog_commit_many()), and finishes them first -- or, on failure,
 * this one first.  Logical inputs are committed items or items of `before`. */
int acat_create_begin_after(struct adapter_catalog *ac, const struct acat_new_item *ni, uint64_t ts,
                            struct acat_txn *const *before, size_t n_before,
                            struct acat_txn **ret, struct row_error *err);
/* A source (CREATE SOURCE): its progress item (the remap collection) and the source,
 * which requires it, in one transaction (items[0] the progress, items[1] the source);
 * source->logical_inputs are set here. */
int acat_create_source_begin(struct adapter_catalog *ac, const struct acat_new_item *source,
                             const struct acat_new_item *progress, uint64_t ts,
                             struct acat_txn *const *before, size_t n_before,
                             struct acat_txn **ret, struct row_error *err);
/* Drop gids.  An object's indexes go with it, a source's progress too.  Any other dependent (an item whose SQL
 * names a dropped object) fails the drop with 2BP01, unless `cascade`: then every
 * dependent, transitively, is dropped in the same transaction.  The txn's items are
 * in dependents-first order (what to retire first). */
int acat_drop_begin(struct adapter_catalog *ac, const uint64_t *gids, size_t n, bool cascade,
                    struct acat_txn **ret, struct row_error *err);
/* A publication of the lifecycle follower (PublishProtection): validated on the final
 * state -- no bound or requirement goes back (I1, I3), every requirement stays at or
 * above the bound of its input, counting creations still in flight (I5) -- else -EINVAL
 * with err and nothing changed.  Records naming objects that are gone are skipped; a
 * record equal to the committed value is dropped.  *ret_n_records: records kept.  One
 * publication at a time (55006 otherwise). */
struct Coord__PublishProtection;
int acat_publish_begin(struct adapter_catalog *ac, const struct Coord__PublishProtection *p,
                       struct acat_txn **ret, size_t *ret_n_records, struct row_error *err);

/* ALTER ... SET/RESET (RETAIN HISTORY): the item's read policy (0: the default window).
 * The follower sees the item put again and applies the new window at its next tick. */
int acat_alter_retain_begin(struct adapter_catalog *ac, uint64_t gid, uint64_t retain_ms,
                            struct acat_txn **ret, struct row_error *err);

/* ALTER SINK ... SET FROM: sink gid writes ni's relation from `cutover` on (ni: plan,
 * logical/physical inputs, refs, on_id; its columns were checked by the analyzer).  One
 * transaction: the item put again (as_of = cutover - 1, no snapshot), R(sink, each new
 * input) = cutover - 1 (kept if higher), the requirements on inputs it no longer reads
 * deleted (I4: moved in the same transaction).  Every new input's bound must be <=
 * cutover - 1 (else -EAGAIN, nothing changed: the caller waits for the sink's progress).
 * Meanwhile the sink cannot be dropped or altered (55006), its new inputs not dropped
 * without it (2BP01), and publications leave the leaving requirements alone. */
int acat_alter_sink_begin(struct adapter_catalog *ac, uint64_t gid, const struct acat_new_item *ni,
                          uint64_t cutover, struct acat_txn **ret, struct row_error *err);

/* The largest of the committed (and in-flight) bounds of gids: the as-of of a new
 * consumer (DESIGN section 4); 0 if none has a bound. */
uint64_t acat_max_bound(const struct adapter_catalog *ac, const uint64_t *gids, size_t n);

/* Clients' holds (adapter-hold.c, catalog.proto CatalogHold): a running SUBSCRIBE keeps
 * its input readable from the hold's frontier on.  The in-memory table holds what is
 * committed (and a hold being created, from acat_hold_add() on); a publication whose
 * bound would pass one is refused.  acat_hold_add(): frontier must be at or above the
 * input's bound, committed or being published (else -EDOM with err, 55000).  ops:
 * the record to commit (put), valid until the next call on ac's holds. */
struct acat_hold_rec {
        uint8_t key[9];
        uint8_t *value;         /* owned: acat_hold_rec_done() */
        size_t value_len;
};
int acat_hold_add(struct adapter_catalog *ac, uint64_t input, uint64_t frontier,
                  uint64_t incarnation, uint64_t *ret_id, struct acat_hold_rec *ret_rec,
                  struct row_error *err);
/* Move hold id to frontier (forward only) once that is committed; the record to commit. */
int acat_hold_record(const struct adapter_catalog *ac, uint64_t id, uint64_t frontier,
                     struct acat_hold_rec *ret_rec);
int acat_hold_set(struct adapter_catalog *ac, uint64_t id, uint64_t frontier);
/* Forget hold id (the client left): its record is the caller's to delete. */
void acat_hold_remove(struct adapter_catalog *ac, uint64_t id);
void acat_hold_rec_done(struct acat_hold_rec *rec);
/* The lowest frontier of the holds on gid; UINT64_MAX when none. */
uint64_t acat_hold_min(const struct adapter_catalog *ac, uint64_t gid);
size_t acat_n_holds(const struct adapter_catalog *ac);
/* At start: delete every hold record in the catalog (all are of earlier adapter
 * incarnations, whose clients are gone).  How many, or -errno. */
int acat_holds_drop_stale(struct adapter_catalog *ac);

const struct catalog_op *acat_txn_ops(const struct acat_txn *t, size_t *ret_n);
/* Whether t must commit after the publication in flight (after_earlier,
 * committer_submit_opts()): it
 * drops something that publication moves, and its ops and built-in rows assume the
 * publication's values (a DROP during a publication's commit; committed in the other
 * order, the publication would write the bound of a dropped object, and the built-in
 * rows retracted the same bound twice). */
bool acat_txn_after_publication(const struct acat_txn *t);
size_t acat_txn_bound_changes(const struct acat_txn *t, const struct acat_bound_change **ret);
size_t acat_txn_req_changes(const struct acat_txn *t, const struct acat_req_change **ret);

/* Every state record the adapter holds in memory, as it would be in the catalog's state
 * column family ('i' items, 'b' bounds, 'r' requirements; in no particular order), for
 * the diagnostic reconstruction (I10).  fn returns 0 to go on. */
typedef int (*acat_record_fn)(const void *key, size_t key_len, const void *value, size_t value_len,
                              void *userdata);
int acat_export(const struct adapter_catalog *ac, acat_record_fn fn, void *userdata);
uint64_t acat_next_gid(const struct adapter_catalog *ac);
/* The created item (create) or the dropped items (drop), valid until finish. */
const struct acat_item *acat_txn_item(const struct acat_txn *t, size_t i);
size_t acat_txn_n_items(const struct acat_txn *t);
void acat_txn_finish(struct adapter_catalog *ac, struct acat_txn *t, int commit_result);

/* "table" for SQL_OBJECT_TABLE and so on, as in coord_objects.kind. */
const char *acat_kind_name(enum sql_object_kind kind);
