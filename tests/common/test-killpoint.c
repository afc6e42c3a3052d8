/* test-killpoint -- common/killpoint.h: COORD_KILLPOINT=name[:N] kills the process by
 * SIGKILL at the Nth crossing of that point and not before; other points, a malformed
 * value or no value never kill.  The variable is read before main(), so each case runs
 * this binary again (`test-killpoint child CROSSINGS`) with the environment set. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "killpoint.h"
#include "t.h"

static char self[4096];

/* Run the child with COORD_KILLPOINT=spec (NULL: unset) crossing "t.a" n times and
 * "t.b" n times, in turn; its wait status. */
static int run_child(const char *spec, int n)
{
        char arg[16];
        int st = 0;
        pid_t pid;

        snprintf(arg, sizeof(arg), "%d", n);
        pid = fork();
        if (pid == 0) {
                int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);

                if (nul >= 0)
                        dup2(nul, 2);   /* the killpoint's log line */
                if (spec)
                        setenv("COORD_KILLPOINT", spec, 1);
                else
                        unsetenv("COORD_KILLPOINT");
                execl(self, self, "child", arg, (char *)NULL);
                _exit(127);
        }
        if (pid < 0 || waitpid(pid, &st, 0) != pid)
                return -1;
        return st;
}

static bool killed(int st)
{
        return st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
}

/* The child exits with the number of crossings of "t.a" it survived. */
static bool survived(int st, int n)
{
        return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == n;
}

static void test_nth(void)
{
        CU_ASSERT(killed(run_child("t.a", 1)));
        CU_ASSERT(killed(run_child("t.a:3", 3)));
        CU_ASSERT(survived(run_child("t.a:3", 2), 2));          /* only 2 crossings */
        CU_ASSERT(killed(run_child("t.b:2", 5)));
}

static void test_unarmed(void)
{
        CU_ASSERT(survived(run_child(NULL, 5), 5));
        CU_ASSERT(survived(run_child("", 5), 5));
        CU_ASSERT(survived(run_child("t.c", 5), 5));            /* another point */
        CU_ASSERT(survived(run_child("t", 5), 5));              /* a prefix is not the name */
        CU_ASSERT(survived(run_child("t.a:0", 5), 5));          /* malformed: unarmed */
        CU_ASSERT(survived(run_child("t.a:x", 5), 5));
        CU_ASSERT(survived(run_child("t.a:", 5), 5));
        CU_ASSERT(survived(run_child(":3", 5), 5));
}

static const struct t_case cases[] = {
        { "the Nth crossing kills", test_nth },
        { "unarmed or another point never kills", test_unarmed },
        { NULL, NULL },
};

int main(int argc, char **argv)
{
        ssize_t n;

        if (argc == 3 && strcmp(argv[1], "child") == 0) {
                int k = atoi(argv[2]), i;

                for (i = 0; i < k; i++)
                        KILLPOINT("t.a");
                for (int j = 0; j < k; j++)
                        KILLPOINT("t.b");
                return i;
        }
        n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0)
                return T_EXIT_ERROR;
        self[n] = '\0';
        return t_run((const struct t_suite[]){ { "killpoint", cases }, { NULL, NULL } });
}
