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
 */
#include "adapter-oracle.h"

#include <assert.h>
#include <stdlib.h>

#include "catalog.h"
#include "util.h"

#define META_HWM "oracle_hwm"

struct oracle {
        struct catalog *catalog;
        uint64_t last_write;    /* last timestamp handed out */
        uint64_t last_append;   /* last one given to an append; <= last_write (3) */
        uint64_t applied;       /* highest acknowledged write timestamp */
        uint64_t hwm;           /* durable: no timestamp above it was handed out */
        bool handed;            /* last_write was handed out in this life (4) */
        int64_t clock_offset_ms;
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
        r = catalog_meta_get(c, META_HWM, &v, &len);
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

int oracle_write_ts(struct oracle *o, uint64_t *ret)
{
        uint64_t ts = oracle_clock(o);
        int r;

        if (ts <= o->last_write)
                ts = o->last_write + 1;         /* (2) */
        if (ts >= o->hwm) {
                uint8_t v[8];
                uint64_t hwm = ts + ORACLE_HWM_AHEAD_MS;

                be64_put(v, hwm);
                r = catalog_meta_put(o->catalog, META_HWM, v, sizeof(v), NULL);
                if (r < 0)
                        return r;
                o->hwm = hwm;
        }
        assert(ts > o->last_write && ts < o->hwm);
        o->last_write = ts;
        o->handed = true;
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

uint64_t oracle_read_ts(const struct oracle *o) { return o->applied; }
uint64_t oracle_last_write_ts(const struct oracle *o) { return o->last_write; }
uint64_t oracle_hwm(const struct oracle *o) { return o->hwm; }

void oracle_set_clock_offset(struct oracle *o, int64_t offset_ms)
{
        o->clock_offset_ms = offset_ms;
}
