/* util.c -- the few helpers in util.h that are not inline. */
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

uint64_t kv_u64(const char *list, const char *key)
{
        size_t kl = key ? strlen(key) : 0;

        if (!list || kl == 0)
                return UINT64_MAX;
        /* A whole key: at the start or after a space, and followed by '='. */
        for (const char *p = list; (p = strstr(p, key)); p += kl)
                if ((p == list || p[-1] == ' ') && p[kl] == '=')
                        return strtoull(p + kl + 1, NULL, 10);
        return UINT64_MAX;
}

/* The state letter of /proc/PID/stat comes after the last ')' (the name may hold one). */
bool proc_gone(pid_t pid)
{
        char path[64], buf[512], *p;
        struct dirent *e;
        bool open_fds = false;
        FILE *f;
        DIR *d;
        size_t n;

        waitpid(pid, NULL, WNOHANG);
        if (kill(pid, 0) < 0 && errno == ESRCH)
                return true;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        if (!(f = fopen(path, "re")))
                return true;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        p = strrchr(buf, ')');
        if (!p || (p[2] != 'Z' && p[2] != 'X'))
                return false;
        snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
        if ((d = opendir(path))) {
                int tasks = 0;
                while ((e = readdir(d)))
                        tasks += e->d_name[0] != '.';
                closedir(d);
                if (tasks > 1)
                        return false;
        }
        snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
        if ((d = opendir(path))) {
                while ((e = readdir(d)))
                        open_fds |= e->d_name[0] != '.';
                closedir(d);
        }
        return !open_fds;
}

int parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
        char *end;
        unsigned long long v;

        if (!s || !isdigit((unsigned char)*s))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE || v > max)
                return -ERANGE;
        if (*end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

int grow_array(void **p, size_t *cap, size_t need, size_t size)
{
        size_t n;
        void *q;

        if (need <= *cap)
                return 0;
        n = *cap ? *cap : 8;
        while (n < need) {
                if (n > SIZE_MAX / 2 / size)
                        return -ENOMEM;
                n *= 2;
        }
        q = realloc(*p, n * size);
        if (!q)
                return -ENOMEM;
        *p = q;
        *cap = n;
        return 0;
}

/* One varint at p[*i..len): 0 and *i past it, or -EBADMSG (truncated, or over 10 bytes). */
static int pb_varint(const uint8_t *p, size_t len, size_t *i, uint64_t *ret)
{
        uint64_t v = 0;

        for (unsigned shift = 0; shift < 70; shift += 7) {
                if (*i >= len)
                        return -EBADMSG;
                v |= (uint64_t)(p[*i] & 0x7f) << shift;
                if (!(p[(*i)++] & 0x80)) {
                        *ret = v;
                        return 0;
                }
        }
        return -EBADMSG;
}

int pb_varints(const void *msg, size_t len, uint32_t want, uint64_t *vals)
{
        const uint8_t *p = msg;
        size_t i = 0;

        while (i < len) {
                uint64_t tag, v;
                unsigned wt;
                bool ours;

                if (pb_varint(p, len, &i, &tag) < 0 || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX >> 3)
                        return -EBADMSG;
                wt = tag & 7;
                ours = tag >> 3 < 32 && (want >> (tag >> 3) & 1);
                if (ours && wt != 0)
                        return -EBADMSG;        /* one of ours, not a varint */
                switch (wt) {
                case 0:
                        if (pb_varint(p, len, &i, &v) < 0)
                                return -EBADMSG;
                        if (ours)
                                vals[tag >> 3] = v;     /* the last one wins */
                        break;
                case 1:
                        if (len - i < 8)
                                return -EBADMSG;
                        i += 8;
                        break;
                case 2:
                        if (pb_varint(p, len, &i, &v) < 0 || v > len - i)
                                return -EBADMSG;
                        i += v;
                        break;
                case 5:
                        if (len - i < 4)
                                return -EBADMSG;
                        i += 4;
                        break;
                default:
                        return -EBADMSG;        /* groups (3, 4) and the rest */
                }
        }
        return 0;
}

int thread_start(pthread_t *t, const char *name, void *(*fn)(void *), void *arg)
{
        int r = pthread_create(t, NULL, fn, arg);

        if (r != 0)
                return -r;
        if (name)
                (void)pthread_setname_np(*t, name);
        return 0;
}

int read_u64_file(const char *dir, const char *name, uint64_t max, uint64_t *ret)
{
        _cleanup_free_ char *path = NULL;
        char buf[32] = "";
        FILE *f;

        if (asprintf(&path, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        f = fopen(path, "re");
        if (!f)
                return -errno;
        if (!fgets(buf, sizeof(buf), f))
                buf[0] = '\0';
        fclose(f);
        buf[strcspn(buf, "\n")] = '\0';
        return parse_u64(buf, max, ret) < 0 ? -EBADMSG : 0;
}

int write_file_durable(const char *dir, const char *name, const char *content)
{
        _cleanup_free_ char *path = NULL, *tmp = NULL;
        _cleanup_close_ int fd = -EBADF, dfd = -EBADF;
        size_t len = strlen(content);

        if (asprintf(&path, "%s/%s", dir, name) < 0 || asprintf(&tmp, "%s/.%s.tmp", dir, name) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        if (write(fd, content, len) != (ssize_t)len)
                return errno ? -errno : -EIO;
        if (fsync(fd) < 0)
                return -errno;
        if (rename(tmp, path) < 0)
                return -errno;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        if (fsync(dfd) < 0)
                return -errno;
        return 0;
}
