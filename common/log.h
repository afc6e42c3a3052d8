/* log.h -- one line per event, key=value, to stderr.
 *
 *   log_info("peer_connected", "role=%s incarnation=%llu", role, inc);
 * prints
 *   ts=2026-11-29T17:48:06.123Z level=info proc=adapter pid=42 event=peer_connected role=...
 *
 * Only daemons and tools log: common/ modules return -errno and let the caller log once.
 * The level check happens before the arguments are formatted, so a disabled level is
 * one compare.
 */
#pragma once

#include <errno.h>

enum log_level {
        LOG_LEVEL_ERROR,
        LOG_LEVEL_WARN,
        LOG_LEVEL_INFO,
        LOG_LEVEL_DEBUG,
        _LOG_LEVEL_MAX,
        _LOG_LEVEL_INVALID = -EINVAL,
};

extern enum log_level log_max_level;

void log_setup(const char *proc_name, enum log_level level);
enum log_level log_level_from_string(const char *s);

void log_emit(enum log_level level, const char *event, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

#define log_at(lvl, event, ...)                                 \
        do {                                                    \
                if ((lvl) <= log_max_level)                     \
                        log_emit((lvl), (event), __VA_ARGS__);  \
        } while (0)

#define log_error(event, ...) log_at(LOG_LEVEL_ERROR, event, __VA_ARGS__)
#define log_warn(event, ...)  log_at(LOG_LEVEL_WARN, event, __VA_ARGS__)
#define log_info(event, ...)  log_at(LOG_LEVEL_INFO, event, __VA_ARGS__)
#define log_debug(event, ...) log_at(LOG_LEVEL_DEBUG, event, __VA_ARGS__)

/* Log an error with err=<strerror(-r)> and return r (which is a negative errno). */
#define log_error_errno(r, event, ...)                                          \
        ({ int _r_ = (r); log_emit_errno(LOG_LEVEL_ERROR, _r_, event, __VA_ARGS__); _r_; })
#define log_warn_errno(r, event, ...)                                           \
        ({ int _r_ = (r); log_emit_errno(LOG_LEVEL_WARN, _r_, event, __VA_ARGS__); _r_; })
void log_emit_errno(enum log_level level, int r, const char *event, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
