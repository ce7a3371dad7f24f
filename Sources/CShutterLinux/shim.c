#define _GNU_SOURCE
#include "CShutterLinux.h"
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

int cshutter_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    return accept4(fd, addr, len, flags);
}

int cshutter_block_signals_and_open_signalfd(void) {
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGPIPE);
    int rc = pthread_sigmask(SIG_BLOCK, &mask, NULL);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    sigdelset(&mask, SIGPIPE);
    return signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
}

int cshutter_read_signalfd(int fd) {
    struct signalfd_siginfo info;
    ssize_t n = read(fd, &info, sizeof info);
    if (n != (ssize_t)sizeof info) {
        return -1;
    }
    return (int)info.ssi_signo;
}

int cshutter_thread_start(void *(*body)(void *), void *context, uint64_t *thread_out) {
    pthread_t thread;
    int rc = pthread_create(&thread, NULL, body, context);
    if (rc == 0) {
        *thread_out = (uint64_t)thread;
    }
    return rc;
}

int cshutter_thread_join(uint64_t thread) {
    return pthread_join((pthread_t)thread, NULL);
}

int cshutter_thread_detach(uint64_t thread) {
    return pthread_detach((pthread_t)thread);
}

void cshutter_thread_set_name(const char *name) {
    pthread_setname_np(pthread_self(), name);
}

void cshutter_thread_get_name(char *buffer, size_t size) {
    if (pthread_getname_np(pthread_self(), buffer, size) != 0 && size > 0) {
        buffer[0] = 0;
    }
}
