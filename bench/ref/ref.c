/*
 * Minimal reference loop for fsscale's harness-overhead benchmark.
 *
 * Does what fsscale's process-mode, --share private workers do, with nothing
 * around it: fork WORKERS processes, each makes DIR/w<i>/ and works on its own
 * file through a directory descriptor, counting ops in a cache-line-padded
 * shared slot; the parent opens the barrier, waits WARMUP, then measures
 * SECONDS of ops. Prints total ops/s.
 *
 *   cc -O2 -o ref ref.c && ./ref stat /dev/shm/x 2 1.0 0.1
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct slot { volatile uint64_t ops; char pad[120]; };
struct control { volatile int go; volatile int stop; volatile int ready; char pad[116]; };

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s) {
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };
	nanosleep(&ts, NULL);
}

static void die(const char *what) { perror(what); _exit(1); }

static void worker(const char *op, int dir, struct control *ctl, struct slot *slot) {
	struct stat st;
	uint64_t n = 0;
	if (strcmp(op, "creat-unlink") != 0) {
		int fd = openat(dir, "f", O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0) die("setup");
		close(fd);
	}
	__sync_fetch_and_add(&ctl->ready, 1);
	while (!ctl->go) usleep(100);
	if (strcmp(op, "stat") == 0) {
		while (!ctl->stop) {
			if (fstatat(dir, "f", &st, 0) < 0) die("fstatat");
			slot->ops = ++n;
		}
	} else if (strcmp(op, "open-close") == 0) {
		while (!ctl->stop) {
			int fd = openat(dir, "f", O_RDONLY | O_CLOEXEC);
			if (fd < 0) die("openat");
			close(fd);
			slot->ops = ++n;
		}
	} else if (strcmp(op, "creat-unlink") == 0) {
		while (!ctl->stop) {
			int fd = openat(dir, "c", O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
			if (fd < 0) die("openat");
			close(fd);
			if (unlinkat(dir, "c", 0) < 0) die("unlinkat");
			slot->ops = ++n;
		}
	} else {
		fprintf(stderr, "unknown op %s\n", op);
		_exit(2);
	}
	_exit(0);
}

int main(int argc, char **argv) {
	if (argc != 6) {
		fprintf(stderr, "usage: %s stat|open-close|creat-unlink DIR WORKERS SECONDS WARMUP\n", argv[0]);
		return 2;
	}
	const char *op = argv[1];
	int workers = atoi(argv[3]);
	double seconds = atof(argv[4]), warmup = atof(argv[5]);
	size_t len = sizeof(struct control) + workers * sizeof(struct slot);
	char *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) die("mmap");
	struct control *ctl = (struct control *)mem;
	struct slot *slots = (struct slot *)(mem + sizeof(struct control));
	if (mkdir(argv[2], 0700) < 0) die("mkdir DIR");
	int top = open(argv[2], O_RDONLY | O_DIRECTORY);
	pid_t *pids = calloc(workers, sizeof(pid_t));
	for (int i = 0; i < workers; i++) {
		char name[32];
		snprintf(name, sizeof name, "w%d", i);
		if (mkdirat(top, name, 0700) < 0) die("mkdirat");
		int dir = openat(top, name, O_RDONLY | O_DIRECTORY);
		pids[i] = fork();
		if (pids[i] == 0) worker(op, dir, ctl, &slots[i]);
		close(dir);
	}
	while (ctl->ready < workers) usleep(100);
	ctl->go = 1;
	sleep_s(warmup);
	uint64_t c0 = 0, c1 = 0;
	double t0 = now();
	for (int i = 0; i < workers; i++) c0 += slots[i].ops;
	sleep_s(seconds);
	for (int i = 0; i < workers; i++) c1 += slots[i].ops;
	double t1 = now();
	ctl->stop = 1;
	for (int i = 0; i < workers; i++) waitpid(pids[i], NULL, 0);
	printf("%.2f\n", (c1 - c0) / (t1 - t0));
	return 0;
}
