/* conf.c -- flags plus an optional INI file (inih).  See conf.h. */
#include "conf.h"

#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

static const struct conf_option *conf_find(const struct conf_option *opts, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(opts[i].name, name) == 0)
                        return &opts[i];
        return NULL;
}

int conf_set(const struct conf_option *opts, size_t n_opts, const char *name, const char *value)
{
        const struct conf_option *o = conf_find(opts, n_opts, name);
        char *s;
        int r;

        if (!o)
                return -ENOENT;
        switch (o->type) {
        case CONF_STR:
                s = strdup(value);
                if (!s)
                        return -ENOMEM;
                free(*(char **)o->ptr);
                *(char **)o->ptr = s;
                return 0;
        case CONF_U64:
                r = parse_u64(value, o->max ? o->max : UINT64_MAX, (uint64_t *)o->ptr);
                return r;
        case CONF_BOOL:
                if (!strcasecmp(value, "true") || !strcasecmp(value, "yes") || !strcmp(value, "1"))
                        *(bool *)o->ptr = true;
                else if (!strcasecmp(value, "false") || !strcasecmp(value, "no") || !strcmp(value, "0"))
                        *(bool *)o->ptr = false;
                else
                        return -EINVAL;
                return 0;
        default:
                return -EINVAL;
        }
}

struct ini_ctx {
        const char *section;
        const struct conf_option *opts;
        size_t n_opts;
        char *err;
        size_t errlen;
        int r;
};

static int conf_ini_handler(void *user, const char *section, const char *name, const char *value)
{
        struct ini_ctx *c = user;
        int r;

        /* Options of other programs' sections are theirs; [coord] is everyone's. */
        if (strcmp(section, "coord") != 0 && strcmp(section, c->section) != 0)
                return 1;
        r = conf_set(c->opts, c->n_opts, name, value);
        if (r < 0) {
                snprintf(c->err, c->errlen, "config key '%s' in [%s]: %s", name, section,
                         r == -ENOENT ? "unknown option" : "bad value");
                c->r = r == -ENOENT ? -EINVAL : r;
                return 0;
        }
        return 1;
}

int conf_parse(int argc, char **argv, const char *section, const struct conf_option *opts,
               size_t n_opts, char **ret_args, int *ret_nargs, char *err, size_t errlen)
{
        const char *config = NULL;
        int nargs = 0, r;

        /* Pass 1: find --config so the file is applied before the flags. */
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
                        config = argv[i + 1];
                else if (strncmp(argv[i], "--config=", 9) == 0)
                        config = argv[i] + 9;
                else if (strcmp(argv[i], "--") == 0)
                        break;
        }
        if (config) {
                struct ini_ctx c = { section, opts, n_opts, err, errlen, 0 };
                r = ini_parse(config, conf_ini_handler, &c);
                if (c.r < 0)
                        return c.r;
                if (r == -1) {
                        snprintf(err, errlen, "cannot open config file '%s'", config);
                        return -EINVAL;
                }
                if (r != 0) {
                        snprintf(err, errlen, "config file '%s': syntax error on line %d", config, r);
                        return -EINVAL;
                }
        }

        /* Pass 2: flags. */
        for (int i = 1; i < argc; i++) {
                char name[128];
                const char *a = argv[i], *value = NULL, *eq;
                const struct conf_option *o;

                if (strcmp(a, "--") == 0) {
                        for (i++; i < argc; i++)
                                ret_args[nargs++] = argv[i];
                        break;
                }
                if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
                        if (a[0] == '-' && a[1] != '\0') {
                                snprintf(err, errlen, "unknown option '%s'", a);
                                return -EINVAL;
                        }
                        ret_args[nargs++] = argv[i];
                        continue;
                }
                a += 2;
                if (strcmp(a, "help") == 0)
                        return 1;
                eq = strchr(a, '=');
                if ((size_t)(eq ? eq - a : (ptrdiff_t)strlen(a)) >= sizeof(name)) {
                        snprintf(err, errlen, "option name too long");
                        return -EINVAL;
                }
                snprintf(name, sizeof(name), "%.*s", (int)(eq ? eq - a : (ptrdiff_t)strlen(a)), a);
                if (strcmp(name, "config") == 0) {
                        if (!eq)
                                i++;
                        continue;
                }
                o = conf_find(opts, n_opts, name);
                if (!o) {
                        snprintf(err, errlen, "unknown option '--%s'", name);
                        return -EINVAL;
                }
                if (eq)
                        value = eq + 1;
                else if (o->type == CONF_BOOL)
                        value = "true";         /* a bool takes a value only as --name=value */
                else if (i + 1 < argc)
                        value = argv[++i];
                else {
                        snprintf(err, errlen, "option '--%s' needs a value", name);
                        return -EINVAL;
                }
                r = conf_set(opts, n_opts, name, value);
                if (r < 0) {
                        snprintf(err, errlen, "option '--%s': bad value '%s'%s", name, value,
                                 r == -ERANGE ? " (out of range)" : "");
                        return -EINVAL;
                }
        }
        if (ret_nargs)
                *ret_nargs = nargs;
        return 0;
}

void conf_usage(FILE *f, const struct conf_option *opts, size_t n_opts)
{
        fprintf(f, "  --%-26s %s\n", "config FILE", "INI file; keys are option names, sections [coord] and the program's");
        for (size_t i = 0; i < n_opts; i++) {
                char left[64];
                snprintf(left, sizeof(left), "%s%s", opts[i].name,
                         opts[i].type == CONF_BOOL ? "" : opts[i].type == CONF_U64 ? " N" : " VALUE");
                fprintf(f, "  --%-26s %s\n", left, opts[i].help);
        }
}

void conf_done(const struct conf_option *opts, size_t n_opts)
{
        for (size_t i = 0; i < n_opts; i++)
                if (opts[i].type == CONF_STR) {
                        free(*(char **)opts[i].ptr);
                        *(char **)opts[i].ptr = NULL;
                }
}
