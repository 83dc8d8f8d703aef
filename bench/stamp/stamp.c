/* stamp: the child of the launch and restart scenarios. The first thing it does
 * after exec is read CLOCK_MONOTONIC. Built static (`cc -O2 -static`) so that no
 * dynamic loader runs between exec and the clock read.
 *
 *   stamp FILE     writes the value (ns) to FILE.tmp.PID, renames it to FILE (so a
 *                  reader never sees half a number; exit 6 if FILE exists and is not
 *                  a regular file), then waits for a signal (SIGTERM
 *                  kills it by its default action). The N-services scenarios give
 *                  each service its own FILE.
 *   stamp -a FILE  restart turnaround: appends "EXEC_NS EXIT_NS\n" to FILE in one
 *                  write (O_APPEND: lines never interleave), EXIT_NS read right
 *                  before it exits 1 at once. The gap from one line's EXIT_NS to the
 *                  next line's EXEC_NS is the supervisor's exit -> reap -> restart.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long mono(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int append(const char *path, long long exec_ns) {
	char buf[64];
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) return 3;
	long long exit_ns = mono();
	int n = snprintf(buf, sizeof buf, "%lld %lld\n", exec_ns, exit_ns);
	if (write(fd, buf, n) != n) return 4;
	return 1; /* the restart scenario's child fails at once; close happens at exit */
}

int main(int argc, char **argv) {
	long long t = mono();
	if (argc == 3 && strcmp(argv[1], "-a") == 0) return append(argv[2], t);
	if (argc < 2) return 2;
	char tmp[4096], buf[64];
	snprintf(tmp, sizeof tmp, "%s.tmp.%d", argv[1], (int)getpid());
	int n = snprintf(buf, sizeof buf, "%lld\n", t);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) return 3;
	if (write(fd, buf, n) != n) return 4;
	close(fd);
	/* Never rename over something that is not a stamp (a device such as /dev/null
	 * given as FILE by mistake would become a regular file). After the clock read:
	 * the value is already taken. */
	struct stat st;
	if (lstat(argv[1], &st) == 0 && !S_ISREG(st.st_mode)) {
		unlink(tmp);
		return 6;
	}
	if (rename(tmp, argv[1]) != 0) return 5;
	for (;;) pause();
}
