/* log.c -- key=value event lines on stderr.  See log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum log_level log_max_level = LOG_LEVEL_INFO;
static const char *log_proc = "coord";

static const char *const level_names[_LOG_LEVEL_MAX] = {
        [LOG_LEVEL_ERROR] = "error",
        [LOG_LEVEL_WARN]  = "warn",
        [LOG_LEVEL_INFO]  = "info",
        [LOG_LEVEL_DEBUG] = "debug",
};

void log_setup(const char *proc_name, enum log_level level)
{
        log_proc = proc_name;
        log_max_level = level;
}

enum log_level log_level_from_string(const char *s)
{
        for (int i = 0; i < _LOG_LEVEL_MAX; i++)
                if (s && strcmp(s, level_names[i]) == 0)
                        return (enum log_level)i;
        return _LOG_LEVEL_INVALID;
}

static void log_vemit(enum log_level level, int r, const char *event, const char *fmt, va_list ap)
{
        char line[2048];
        struct timeval tv;
        struct tm tm;
        int n, m;

        gettimeofday(&tv, NULL);
        gmtime_r(&tv.tv_sec, &tm);
        n = snprintf(line, sizeof(line),
                     "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s proc=%s pid=%d event=%s",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, (long)(tv.tv_usec / 1000), level_names[level], log_proc,
                     (int)getpid(), event);
        if (n < 0 || (size_t)n >= sizeof(line))
                n = (int)sizeof(line) - 2;
        if (fmt && *fmt) {
                line[n++] = ' ';
                m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
                if (m > 0)
                        n += m < (int)(sizeof(line) - (size_t)n - 1) ? m : (int)(sizeof(line) - (size_t)n - 2);
        }
        if (r < 0) {
                m = snprintf(line + n, sizeof(line) - (size_t)n - 1, " err=\"%s\"", strerror(-r));
                if (m > 0)
                        n += m < (int)(sizeof(line) - (size_t)n - 1) ? m : (int)(sizeof(line) - (size_t)n - 2);
        }
        line[n++] = '\n';
        /* One write(2) per line so lines from several threads never interleave. */
        (void)!write(STDERR_FILENO, line, (size_t)n);
}

void log_emit(enum log_level level, const char *event, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        log_vemit(level, 0, event, fmt, ap);
        va_end(ap);
}

void log_emit_errno(enum log_level level, int r, const char *event, const char *fmt, ...)
{
        va_list ap;

        if (level > log_max_level)
                return;
        va_start(ap, fmt);
        log_vemit(level, r, event, fmt, ap);
        va_end(ap);
}
