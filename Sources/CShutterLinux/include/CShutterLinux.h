// Declarations Swift's Glibc module does not import on Linux, exposed as small
// functions and constants. docs/SWIFT-ON-LINUX.md says why each is here.
#ifndef C_SHUTTER_LINUX_H
#define C_SHUTTER_LINUX_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
// getrandom(2): the kernel's CSPRNG for secrets (Secrets.randomBytes), without libcrypto's
// DRBG and the provider tables it loads.
#include <sys/random.h>

/// accept4 is hidden behind _GNU_SOURCE in glibc's headers.
int cshutter_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);

/// Blocks SIGTERM, SIGINT, SIGHUP and SIGPIPE in the calling thread (call first thing in
/// main so every later thread inherits the mask) and returns a signalfd that
/// reads SIGTERM, SIGINT and SIGHUP, or -1 with errno set.
int cshutter_block_signals_and_open_signalfd(void);

/// Reads one signalfd_siginfo and returns its signal number, or -1 with errno set.
int cshutter_read_signalfd(int fd);

/// Starts a detached-free pthread running `body(context)`; returns 0 or an errno.
int cshutter_thread_start(void *(*body)(void *), void *context, uint64_t *thread_out);

/// Joins a thread started by cshutter_thread_start.
int cshutter_thread_join(uint64_t thread);

/// Detaches a thread started by cshutter_thread_start: it is never joined, and its
/// resources go back to the system when it ends.
int cshutter_thread_detach(uint64_t thread);

/// Copies the calling thread's name into `buffer` (at least 16 bytes).
void cshutter_thread_get_name(char *buffer, size_t size);

/// Sets the calling thread's name as shown by top and /proc (at most 15 bytes).
void cshutter_thread_set_name(const char *name);

/// Bytes in a TCP socket's send queue that the peer has not acknowledged yet (SIOCOUTQ), or -1.
/// A peer that reads makes it shrink even while the socket takes no new bytes.
static inline int cshutter_socket_unacknowledged_bytes(int fd) {
    int bytes = 0;
    return ioctl(fd, SIOCOUTQ, &bytes) == 0 ? bytes : -1;
}

static inline uint32_t cshutter_epollin(void) { return EPOLLIN; }
static inline uint32_t cshutter_epollout(void) { return EPOLLOUT; }
static inline uint32_t cshutter_epollerr(void) { return EPOLLERR; }
static inline uint32_t cshutter_epollhup(void) { return EPOLLHUP; }
static inline uint32_t cshutter_epollrdhup(void) { return EPOLLRDHUP; }

#endif
