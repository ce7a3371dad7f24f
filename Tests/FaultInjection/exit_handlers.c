// libexithandlers.so: records every handler a library registers to run at exit.
//
// Preloaded into the daemon by Tests/e2e/test_tls.py. A shared library's atexit() is glibc's
// __cxa_atexit(function, NULL, its __dso_handle), called through its PLT, so this definition is
// the one it reaches. Each registration appends "LIBRARY SYMBOL" (dladdr of the handler) to the
// file EXIT_HANDLERS_LOG names, then registers the handler as asked: nothing changes at exit.
// What the test looks for: libcrypto's OPENSSL_cleanup, which must not be there (OpenSSLProcess).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef int (*cxa_atexit_function)(void (*)(void *), void *, void *);

__attribute__((visibility("default"))) int __cxa_atexit(void (*handler)(void *), void *argument, void *dso) {
    static cxa_atexit_function next;
    if (next == NULL) {
        next = (cxa_atexit_function)dlsym(RTLD_NEXT, "__cxa_atexit");
    }
    const char *path = getenv("EXIT_HANDLERS_LOG");
    if (path != NULL) {
        Dl_info info = {0};
        int found = dladdr((void *)handler, &info);
        char line[1024];
        int length = snprintf(line, sizeof line, "%s %s\n", found && info.dli_fname ? info.dli_fname : "?",
                              found && info.dli_sname ? info.dli_sname : "?");
        // One write(2) per line with O_APPEND: lines from several threads never interleave.
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0) {
            if (length > 0 && write(fd, line, (size_t)length) < 0) {
                // Nothing to do: the test then misses a line and says what it found.
            }
            close(fd);
        }
    }
    return next(handler, argument, dso);
}
