#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <signal.h>
#include <unistd.h>
#include <fcntl.h>
#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include "CEventLoop.h"

int CEventLoop_accept4(int fd, struct sockaddr *address, socklen_t *length) {
    return accept4(fd, address, length, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

void CEventLoop_setThreadName(const char *name) {
    pthread_setname_np(pthread_self(), name);
}

int CEventLoop_affinityCPUs(unsigned char *flags, int capacity) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
    int marked = 0;
    for (int cpu = 0; cpu < capacity; cpu++) {
        flags[cpu] = (cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set)) ? 1 : 0;
        marked += flags[cpu];
    }
    return marked;
}

long CEventLoop_getrandom(void *buffer, unsigned long length) {
    return getrandom(buffer, length, 0);
}

static int signalPipeWriteEnd = -1;

static void CEventLoop_signalHandler(int number) {
    int saved = errno;
    unsigned char byte = (unsigned char)number;
    if (signalPipeWriteEnd >= 0) { (void)write(signalPipeWriteEnd, &byte, 1); }
    errno = saved;
}

int CEventLoop_signalPipe(const int *signals, int count) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) { return -1; }
    fcntl(fds[1], F_SETFL, O_NONBLOCK);
    signalPipeWriteEnd = fds[1];
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = CEventLoop_signalHandler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (int index = 0; index < count; index++) {
        if (sigaction(signals[index], &action, NULL) != 0) { return -1; }
    }
    return fds[0];
}
