/* Preloaded into the CLI by bench/process_timeline.sh: writes the wall-clock time at which the
   process's libraries were loaded ("load": just before main's static initialisers) and at which
   exit() had run every handler registered after it ("atexit": the CUDA runtime's teardown and
   the static destructors included), to the file named by $EXIT_MARKS. The rest, to the shell's
   end time, is the kernel's teardown of the process (its memory, the GPU driver's files). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void mark(const char* what) {
  const char* path = getenv("EXIT_MARKS");
  if (!path) return;
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  FILE* f = fopen(path, "a");
  if (!f) return;
  fprintf(f, "%s %.6f\n", what, (double)t.tv_sec + t.tv_nsec * 1e-9);
  fclose(f);
}

static void at_exit(void) { mark("atexit"); }

__attribute__((constructor)) static void on_load(void) {
  mark("load");
  atexit(at_exit); /* registered first, so run last */
}
