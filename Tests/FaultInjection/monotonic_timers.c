/*
 * libmonotonictimers.so: keeps absolute CLOCK_MONOTONIC and CLOCK_BOOTTIME timerfd deadlines as
 * the program set them, for running a program under libfaketime (Tests/e2e/test_faults.py).
 *
 * libfaketime's timerfd_settime() moves every TFD_TIMER_ABSTIME deadline by the faked wall
 * clock's offset, whatever clock the timer is on, even with FAKETIME_DONT_FAKE_MONOTONIC=1. A
 * wall clock stepped back an hour then holds a monotonic timer for an hour: Swift's Task.sleep
 * (libdispatch's timers) stalls, where a real NTP step would not touch it. Preloaded before
 * libfaketime, this sends such timers straight to the kernel and leaves the others (real-time
 * ones, whose faked deadlines libfaketime must translate) to it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_TRACKED_FDS 65536

/* Which descriptors are timers on a clock that wall-clock steps never move; set when created,
 * cleared when a descriptor is made again for another clock. */
static unsigned char steady_timer[MAX_TRACKED_FDS];

static int (*next_timerfd_create)(int, int);
static int (*next_timerfd_settime)(int, int, const struct itimerspec *, struct itimerspec *);
static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;

static void resolve(void) {
    *(void **)&next_timerfd_create = dlsym(RTLD_NEXT, "timerfd_create");
    *(void **)&next_timerfd_settime = dlsym(RTLD_NEXT, "timerfd_settime");
}

EXPORT int timerfd_create(int clock, int flags) {
    pthread_once(&resolve_once, resolve);
    int fd = next_timerfd_create(clock, flags);
    if (fd >= 0 && fd < MAX_TRACKED_FDS)
        steady_timer[fd] = clock == CLOCK_MONOTONIC || clock == CLOCK_BOOTTIME;
    return fd;
}

EXPORT int timerfd_settime(int fd, int flags, const struct itimerspec *new_value, struct itimerspec *old_value) {
    pthread_once(&resolve_once, resolve);
    if (fd >= 0 && fd < MAX_TRACKED_FDS && steady_timer[fd])
        return (int)syscall(SYS_timerfd_settime, fd, flags, new_value, old_value);
    return next_timerfd_settime(fd, flags, new_value, old_value);
}
