/* replay.c: a main for the libFuzzer targets, for builds without libFuzzer: it
 * feeds every file named on the command line (folders: every file in them) to
 * LLVMFuzzerTestOneInput once. Used to run the fuzz corpora under valgrind
 * (docs/reliability.md), e.g.
 *   cc -g -D_POSIX_C_SOURCE=200809L tests/fuzz/fuzz_read.c tests/fuzz/replay.c \
 *      support/support.c ir/*.c $(pkg-config --cflags --libs libcjson yaml-0.1 libcrypto) -lm
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long runs;

static void replay(const char *path)
{
	struct stat sb;
	if (stat(path, &sb) != 0)
		return;
	if (S_ISDIR(sb.st_mode)) {
		DIR *d = opendir(path);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			size_t n = strlen(path) + strlen(e->d_name) + 2;
			char *p = malloc(n);
			snprintf(p, n, "%s/%s", path, e->d_name);
			replay(p);
			free(p);
		}
		if (d)
			closedir(d);
		return;
	}
	FILE *f = fopen(path, "rb");
	if (!f)
		return;
	uint8_t *buf = malloc((size_t)sb.st_size + 1);
	size_t n = fread(buf, 1, (size_t)sb.st_size, f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	runs++;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		replay(argv[i]);
	printf("replayed %ld inputs\n", runs);
	return 0;
}
