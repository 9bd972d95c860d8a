#ifndef C_EVENT_LOOP_H
#define C_EVENT_LOOP_H

// The Linux system headers the event loop needs that Glibc's Swift module does not export.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <malloc.h> // malloc_trim

static const unsigned int CEventLoop_EPOLLIN = EPOLLIN;
static const unsigned int CEventLoop_EPOLLOUT = EPOLLOUT;
static const unsigned int CEventLoop_EPOLLRDHUP = EPOLLRDHUP;
static const unsigned int CEventLoop_EPOLLHUP = EPOLLHUP;
static const unsigned int CEventLoop_EPOLLERR = EPOLLERR;
static const unsigned int CEventLoop_EPOLLEXCLUSIVE = EPOLLEXCLUSIVE;

/// accept4(2) with SOCK_NONBLOCK | SOCK_CLOEXEC (a GNU extension the Swift Glibc module hides).
int CEventLoop_accept4(int fd, struct sockaddr *address, socklen_t *length);

/// Names the calling thread (at most 15 bytes are kept).
void CEventLoop_setThreadName(const char *name);

/// Marks in `flags` (one byte per CPU number below `capacity`) the CPUs this process may run
/// on: 1 for each CPU in its affinity mask, 0 for the others. Returns how many it marked, or
/// -1 when the mask cannot be read.
int CEventLoop_affinityCPUs(unsigned char *flags, int capacity);

/// Fills `buffer` with `length` bytes from the kernel's random source (getrandom(2), which
/// the Swift Glibc module does not export); returns the bytes written or -1.
long CEventLoop_getrandom(void *buffer, unsigned long length);

/// Routes the given signals to a pipe: their handler writes the signal number as one byte
/// (async-signal-safe), so a thread can wait for them with read(2). Returns the pipe's read
/// end, or -1 on failure. Call once, before threads start.
int CEventLoop_signalPipe(const int *signals, int count);

#endif
