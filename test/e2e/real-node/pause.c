// The pod sandbox's process for the real-node e2e (test/e2e/real-node.sh): no image can be
// pulled there, so the sandbox ("pause") image is this program, built static and packed
// FROM scratch. Like kubernetes' own build/pause/linux/pause.c it holds the pod's namespaces,
// reaps the children that are re-parented to it, and exits on SIGINT or SIGTERM.
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int signo) { _exit(signo == SIGTERM || signo == SIGINT ? 0 : 1); }

static void on_child(int signo) {
  (void)signo;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction stop = {.sa_handler = on_stop};
  struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGINT, &stop, NULL) != 0 || sigaction(SIGTERM, &stop, NULL) != 0 ||
      sigaction(SIGCHLD, &child, NULL) != 0) {
    return 1;
  }
  for (;;) pause();
}
