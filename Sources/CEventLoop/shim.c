#define _GNU_SOURCE
#include <pthread.h>
#include <sys/socket.h>
#include "CEventLoop.h"

int CEventLoop_accept4(int fd, struct sockaddr *address, socklen_t *length) {
    return accept4(fd, address, length, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

void CEventLoop_setThreadName(const char *name) {
    pthread_setname_np(pthread_self(), name);
}
