/* stamp: the child of scenario 1. The first thing it does after exec is read
 * CLOCK_MONOTONIC; it writes the value (ns) to FILE.tmp, renames it to FILE (so a
 * reader never sees half a number), then waits for a signal (SIGTERM kills it by
 * its default action). Built static (`cc -O2 -static`) so that no dynamic loader
 * runs between exec and the clock read.
 *
 * usage: stamp FILE
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (argc < 2) return 2;
	char tmp[4096], buf[64];
	snprintf(tmp, sizeof tmp, "%s.tmp.%d", argv[1], (int)getpid());
	int n = snprintf(buf, sizeof buf, "%lld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) return 3;
	if (write(fd, buf, n) != n) return 4;
	close(fd);
	if (rename(tmp, argv[1]) != 0) return 5;
	for (;;) pause();
}
