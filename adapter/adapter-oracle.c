/* adapter-oracle.c -- the timestamp oracle.  See adapter-oracle.h.
 *
 * NOTES ON THE DESIGN
 * (1) last_write < hwm always, and hwm is durable before any timestamp <= hwm is handed
 *     out.  So after any crash a restarted oracle that begins at last_write = hwm hands
 *     out only timestamps above everything the previous life handed out.
 * (2) A write timestamp is max(wall clock, last_write + 1): it follows the wall clock
 *     while the clock moves forward, and keeps increasing by 1 ms steps when the clock
 *     stands still or steps back.
 * (3) Every step above the clock is a millisecond that the clock must catch up before
 *     timestamps follow it again, and meanwhile every upper moves 1 ms per append: a
 *     compaction window of W ms then takes W appends, not W ms, to pass.  A DDL takes a
 *     timestamp (its birth) and then appends its coord_objects rows; if the append took
 *     another one, every DDL would cost 2 ms and a burst of more than 500 DDL/s would
 *     run the timestamps away from the clock (10,000 views and indexes in 25 s: 15 s
 *     ahead, and no bound moved for 15 s).  So an append reuses the last timestamp
 *     handed out when no append has used it yet (oracle_append_ts()): append
 *     timestamps still strictly increase (last_append < last_write), and the DDL's
 *     catalog change and its rows become visible at the same timestamp.
 * (4) Since a DDL is answered after its catalog commit alone (adapter-exec.c note 3),
 *     one client runs more than 1,000 DDL a second, and a timestamp per DDL or per
 *     append would run the timestamps away from the clock again.  So a DDL's birth
 *     timestamp is the last one handed out in this life while the clock is not past it
 *     (oracle_birth_ts()): births need not be distinct, only >= every earlier write
 *     timestamp (a table born at a time already appended is empty there, which is
 *     true).  And appends that nobody waits for (the built-in rows of a DDL) are held
 *     a few milliseconds and go together (adapter-exec.c note 6).
 * (5) Extending the window without an fsync on the loop.  Commits of the mark used to
 *     happen in oracle_write_ts() once the window ran out: a synced catalog commit on
 *     the loop thread once a second (the table ticks take timestamps all the time), a
 *     0.2-2 ms stall for every client.  Now, once half of the window is used, the next
 *     mark (ts + ORACLE_HWM_AHEAD_MS) is committed through the persister, and hwm moves
 *     only when that commit is durable (oracle_hwm_committed()).  At most one such
 *     commit is in flight.  If the window runs out first, the loop commits the mark
 *     itself, but only after drain(): the catalog then holds the marks in the order they
 *     were submitted, each >= the one before, so the durable value is always the last
 *     one submitted and never below hwm.  Committing while the earlier extension is
 *     still in flight could let that smaller value land last.
 * (6) A read is never older than this life.  A restarted oracle's applied is the last
 *     life's hwm, and stays there until its first write is acknowledged.  But its
 *     first append (a tick, at the wall clock) moves every built-in's upper across
 *     the whole downtime at once, and the built-ins may be compacted to about
 *     upper - 1 s (their committed bounds follow a table's rule) soon after it is
 *     written -- before its Ok is back here.  A read at applied then asked for
 *     a time below their since: the first SELECT of coord_frontiers after a restart
 *     of a 100,000-object instance failed with 55000.  So oracle_read_ts() is at
 *     least the first timestamp handed out in this life: a later time than every
 *     acknowledged write (linearizable still), which the controller answers as soon
 *     as that first append is in (it waits for upper > ts).
 */
#include "adapter-oracle.h"

#include <assert.h>
#include <stdlib.h>

#include "catalog/catalog.h"
#include "util.h"


struct oracle {
        struct catalog *catalog;
        uint64_t last_write;    /* last timestamp handed out */
        uint64_t last_append;   /* last one given to an append; <= last_write (3) */
        uint64_t applied;       /* highest acknowledged write timestamp */
        uint64_t hwm;           /* durable: no timestamp above it was handed out */
        bool handed;            /* last_write was handed out in this life (4) */
        uint64_t first_write;   /* the first timestamp handed out in this life, 0: none (6) */
        int64_t clock_offset_ms;
        struct oracle_persister persister;      /* (5); submit == NULL: none */
        uint64_t extending;     /* mark being committed by the persister, 0: none */
        uint64_t sync_persists, async_persists;
};

static uint64_t oracle_clock(const struct oracle *o)
{
        int64_t t = (int64_t)wall_ms() + o->clock_offset_ms;
        return t > 0 ? (uint64_t)t : 0;
}

int oracle_open(struct catalog *c, struct oracle **ret)
{
        struct oracle *o;
        void *v = NULL;
        size_t len = 0;
        int r;

        o = calloc(1, sizeof(*o));
        if (!o)
                return -ENOMEM;
        o->catalog = c;
        r = catalog_meta_get(c, ORACLE_META_HWM, &v, &len);
        if (r == 0) {
                if (len != 8) {
                        free(v);
                        free(o);
                        return -EBADMSG;
                }
                o->hwm = be64_get(v);
                free(v);
        } else if (r != -ENOENT) {
                free(o);
                return r;
        }
        /* (1) everything up to hwm may have been handed out by an earlier life. */
        o->last_write = o->hwm;
        o->last_append = o->hwm;
        o->applied = o->hwm;
        *ret = o;
        return 0;
}

struct oracle *oracle_free(struct oracle *o)
{
        free(o);
        return NULL;
}

/* Commit hwm = value on this thread (the window ran out): after the extension in
 * flight, if any, is durable (5). */
static int hwm_commit_sync(struct oracle *o, uint64_t value)
{
        uint8_t v[8];
        int r;

        if (o->extending) {
                assert(o->persister.drain);
                o->persister.drain(o->persister.ctx);
                if (o->extending > value)
                        value = o->extending;   /* never below what may land before */
        }
        be64_put(v, value);
        r = catalog_meta_put(o->catalog, ORACLE_META_HWM, v, sizeof(v), NULL);
        if (r < 0)
                return r;
        o->sync_persists++;
        if (value > o->hwm)
                o->hwm = value;
        return 0;
}

/* Half the window used and nothing in flight: start committing the next mark (5). */
static void hwm_extend_maybe(struct oracle *o, uint64_t ts)
{
        uint64_t value = ts + ORACLE_HWM_AHEAD_MS;

        if (!o->persister.submit || o->extending || ts + ORACLE_HWM_AHEAD_MS / 2 < o->hwm)
                return;
        assert(value > o->hwm);
        if (o->persister.submit(o->persister.ctx, value) == 0)
                o->extending = value;
}

int oracle_write_ts(struct oracle *o, uint64_t *ret)
{
        uint64_t ts = oracle_clock(o);
        int r;

        if (ts <= o->last_write)
                ts = o->last_write + 1;         /* (2) */
        if (ts >= o->hwm) {
                r = hwm_commit_sync(o, ts + ORACLE_HWM_AHEAD_MS);
                if (r < 0)
                        return r;
        }
        assert(ts > o->last_write && ts < o->hwm);
        hwm_extend_maybe(o, ts);
        o->last_write = ts;
        o->handed = true;
        if (!o->first_write)
                o->first_write = ts;
        *ret = ts;
        return 0;
}

int oracle_append_ts(struct oracle *o, uint64_t *ret)
{
        uint64_t ts;
        int r;

        assert(o->last_append <= o->last_write);
        /* (3) A timestamp handed out (a DDL's birth) that no append has used, while the
         * clock is not past it: the append takes it, the clock does not move away. */
        if (o->last_write > o->last_append && oracle_clock(o) <= o->last_write)
                ts = o->last_write;
        else {
                r = oracle_write_ts(o, &ts);
                if (r < 0)
                        return r;
        }
        assert(ts > o->last_append);
        o->last_append = ts;
        *ret = ts;
        return 0;
}

int oracle_birth_ts(struct oracle *o, uint64_t *ret)
{
        /* (4) */
        if (o->handed && oracle_clock(o) <= o->last_write) {
                *ret = o->last_write;
                return 0;
        }
        return oracle_write_ts(o, ret);
}

void oracle_write_applied(struct oracle *o, uint64_t ts)
{
        assert(ts <= o->last_write);
        if (ts > o->applied)
                o->applied = ts;
}

uint64_t oracle_read_ts(const struct oracle *o)
{
        return o->applied > o->first_write ? o->applied : o->first_write;       /* (6) */
}
uint64_t oracle_last_write_ts(const struct oracle *o) { return o->last_write; }
uint64_t oracle_hwm(const struct oracle *o) { return o->hwm; }

void oracle_set_persister(struct oracle *o, const struct oracle_persister *p)
{
        assert(!o->extending);
        o->persister = p ? *p : (struct oracle_persister){ 0 };
}

void oracle_hwm_committed(struct oracle *o, uint64_t value, int r)
{
        assert(o->extending == value);
        o->extending = 0;
        if (r < 0)
                return;         /* the store refuses writes now; the loop's commit will say so */
        o->async_persists++;
        if (value > o->hwm)
                o->hwm = value;
}

uint64_t oracle_sync_persists(const struct oracle *o) { return o->sync_persists; }
uint64_t oracle_async_persists(const struct oracle *o) { return o->async_persists; }

void oracle_set_clock_offset(struct oracle *o, int64_t offset_ms)
{
        o->clock_offset_ms = offset_ms;
}
