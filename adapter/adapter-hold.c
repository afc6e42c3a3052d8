/* adapter-hold.c -- clients' durable holds (issue 33 item 3): a running SUBSCRIBE keeps
 * its input readable through a record in the catalog ('h' + be64 hold id,
 * catalog.proto CatalogHold), which the lifecycle follower treats as a requirement.
 *
 * NOTES
 * (1) A hold is a requirement without an item.  While a hold on X at f is in this
 *     table, no publication commits bound(X) > f: acat_publish_begin() refuses it
 *     (55000), as it refuses one that passes a requirement (I5).  The table holds a
 *     hold from acat_hold_add() on -- before its record is durable -- and a frontier
 *     only once it is committed (acat_hold_set() in the commit's completion), so
 *     whatever the follower proposes, the committed bound stays at or below the
 *     committed hold.  acat_hold_add() admits a frontier only at or above the input's
 *     committed or in-flight bound (I4), on the loop thread like every publication.
 * (2) Holds die with their adapter.  Clients are connections to one adapter process:
 *     when it restarts they are gone, so acat_holds_drop_stale() deletes every hold
 *     record at start, before the adapter serves anyone (adapter.c); the follower
 *     sees the deletions in the log and lets the bounds move.  A live adapter deletes
 *     a hold when its client leaves (cancel, close, error: adapter-subscribe.c).
 */
#include "adapter-catalog-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "util.h"

struct acat_hold {
        uint64_t id, input, frontier, incarnation;
};

static struct acat_hold *hold_find(const struct adapter_catalog *ac, uint64_t id)
{
        for (size_t i = 0; i < ac->n_holds; i++)
                if (ac->holds[i].id == id)
                        return &ac->holds[i];
        return NULL;
}

static int hold_encode(const struct acat_hold *h, uint64_t frontier, struct acat_hold_rec *ret)
{
        Coord__CatalogHold m = COORD__CATALOG_HOLD__INIT;

        m.hold_id = h->id;
        m.input = h->input;
        m.frontier = frontier;
        m.incarnation = h->incarnation;
        ret->key[0] = 'h';
        be64_put(ret->key + 1, h->id);
        ret->value_len = coord__catalog_hold__get_packed_size(&m);
        ret->value = malloc(ret->value_len ? ret->value_len : 1);
        if (!ret->value)
                return -ENOMEM;
        coord__catalog_hold__pack(&m, ret->value);
        return 0;
}

void acat_hold_rec_done(struct acat_hold_rec *rec)
{
        free(rec->value);
        rec->value = NULL;
        rec->value_len = 0;
}

/* (1) */
int acat_hold_add(struct adapter_catalog *ac, uint64_t input, uint64_t frontier,
                  uint64_t incarnation, uint64_t *ret_id, struct acat_hold_rec *ret_rec,
                  struct row_error *err)
{
        const struct acat_item *it = acat_by_gid(ac, input);
        struct acat_hold h;
        uint64_t b;
        int r;

        if (!it || it->dropping || it->pending)
                return row_error_set(err, -ENOENT, "42P01", "relation %llu does not exist",
                                     (unsigned long long)input);
        b = it->has_bound ? it->bound : 0;
        if (it->pending_bound > b)
                b = it->pending_bound;
        if (frontier < b) {
                row_error_set(err, -EDOM, "55000", "cannot subscribe to \"%s\" as of %llu: its bound is %llu",
                              it->name, (unsigned long long)frontier, (unsigned long long)b);
                row_error_detail(err, "The history of \"%s\" before %llu may be compacted already.",
                                 it->name, (unsigned long long)b);
                row_error_hint(err, "Subscribe AS OF %llu or later.", (unsigned long long)b);
                return -EDOM;
        }
        if (ac->n_holds == ac->cap_holds) {
                size_t cap = ac->cap_holds ? ac->cap_holds * 2 : 8;
                struct acat_hold *v = realloc(ac->holds, cap * sizeof(*v));

                if (!v)
                        return row_error_oom(err);
                ac->holds = v;
                ac->cap_holds = cap;
        }
        h = (struct acat_hold){ .id = incarnation << 32 | ++ac->next_hold, .input = input,
                                .frontier = frontier, .incarnation = incarnation };
        r = hold_encode(&h, frontier, ret_rec);
        if (r < 0)
                return row_error_oom(err);
        ac->holds[ac->n_holds++] = h;
        *ret_id = h.id;
        return 0;
}

int acat_hold_record(const struct adapter_catalog *ac, uint64_t id, uint64_t frontier,
                     struct acat_hold_rec *ret_rec)
{
        const struct acat_hold *h = hold_find(ac, id);

        if (!h)
                return -ENOENT;
        return hold_encode(h, frontier, ret_rec);
}

int acat_hold_set(struct adapter_catalog *ac, uint64_t id, uint64_t frontier)
{
        struct acat_hold *h = hold_find(ac, id);

        if (!h)
                return -ENOENT;
        if (frontier > h->frontier)
                h->frontier = frontier;
        return 0;
}

void acat_hold_remove(struct adapter_catalog *ac, uint64_t id)
{
        struct acat_hold *h = hold_find(ac, id);

        if (h)
                *h = ac->holds[--ac->n_holds];
}

uint64_t acat_hold_min(const struct adapter_catalog *ac, uint64_t gid)
{
        uint64_t m = UINT64_MAX;

        for (size_t i = 0; i < ac->n_holds; i++)
                if (ac->holds[i].input == gid && ac->holds[i].frontier < m)
                        m = ac->holds[i].frontier;
        return m;
}

size_t acat_n_holds(const struct adapter_catalog *ac)
{
        return ac->n_holds;
}

struct stale {
        uint8_t (*keys)[9];
        size_t n, cap;
};

static int stale_one(const void *key, size_t key_len, const void *value, size_t value_len,
                     void *userdata)
{
        struct stale *st = userdata;

        (void)value;
        (void)value_len;
        if (key_len != 9)
                return 0;
        if (st->n == st->cap) {
                size_t cap = st->cap ? st->cap * 2 : 16;
                uint8_t (*v)[9] = realloc(st->keys, cap * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                st->keys = v;
                st->cap = cap;
        }
        memcpy(st->keys[st->n++], key, 9);
        return 0;
}

/* (2) */
int acat_holds_drop_stale(struct adapter_catalog *ac)
{
        struct stale st = { 0 };
        struct catalog_op *ops = NULL;
        int r;

        r = catalog_scan(ac->store, CATALOG_CF_STATE, "h", 1, stale_one, &st);
        if (r < 0 || st.n == 0)
                goto out;
        ops = calloc(st.n, sizeof(*ops));
        if (!ops) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < st.n; i++)
                ops[i] = (struct catalog_op){ .kind = CATALOG_OP_DELETE, .cf = CATALOG_CF_STATE,
                                              .key = st.keys[i], .key_len = 9 };
        r = catalog_commit(ac->store, ops, st.n, NULL);
out:
        free(ops);
        free(st.keys);
        return r < 0 ? r : (int)st.n;
}
