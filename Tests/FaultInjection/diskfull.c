/*
 * libdiskfull.so: makes chosen file calls of an unmodified process fail with ENOSPC, switched
 * on and off while the process runs. For the end-to-end fault tests only (Tests/e2e/faults.py);
 * loaded with LD_PRELOAD, never part of the daemon's build.
 *
 * DISKFULL_CONTROL names a control file that this library reads again whenever it changes
 * (its inode, size or mtime; write it with rename(2) so it is never seen half-written). Each
 * line is a rule:
 *
 *     CALL SUBSTRING [COUNT]
 *
 * CALL is one of write, pwrite (also pwrite64), fsync, fdatasync, rename (also renameat and
 * renameat2). The call fails with ENOSPC, doing nothing, when the path it is about contains
 * SUBSTRING (or, when SUBSTRING ends with `$`, ends with the rest of it): for the descriptor calls the path the descriptor was opened with
 * (/proc/self/fd/N), for the renames the old or the new path (relative ones as given). COUNT
 * is how many failures the rule injects before it stays quiet (absent or 0: every matching
 * call until the file changes). An empty or missing control file injects nothing.
 *
 * DISKFULL_LOG, if set, names a file that gets one line "CALL PATH" per injected failure, so a
 * test can tell the fault was hit and where.
 *
 * A rename's libc entry points are interposed; the descriptor calls likewise (write, pwrite,
 * pwrite64, fsync, fdatasync). SQLite's unix VFS calls these through pointers to the same libc
 * symbols, which LD_PRELOAD resolves here too.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_RULES 16
#define MAX_PATTERN 256

enum call { CALL_WRITE, CALL_PWRITE, CALL_FSYNC, CALL_FDATASYNC, CALL_RENAME, CALL_COUNT };
static const char *const call_names[CALL_COUNT] = {"write", "pwrite", "fsync", "fdatasync", "rename"};

struct rule {
    enum call call;
    char pattern[MAX_PATTERN];
    long remaining; /* failures left; -1: unlimited */
};

static struct {
    ssize_t (*write)(int, const void *, size_t);
    ssize_t (*pwrite)(int, const void *, size_t, off_t);
    ssize_t (*pwrite64)(int, const void *, size_t, off64_t);
    int (*fsync)(int);
    int (*fdatasync)(int);
    int (*rename)(const char *, const char *);
    int (*renameat)(int, const char *, int, const char *);
    int (*renameat2)(int, const char *, int, const char *, unsigned int);
} next;

static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;
/* Guards everything below: the rules, what the control file looked like when read, the log. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct rule rules[MAX_RULES];
static int rule_count;
static int active_calls; /* bit per call with a rule that may still fire */
static struct stat control_seen;
static int control_present;

static void resolve(void) {
    *(void **)&next.write = dlsym(RTLD_NEXT, "write");
    *(void **)&next.pwrite = dlsym(RTLD_NEXT, "pwrite");
    *(void **)&next.pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
    *(void **)&next.fsync = dlsym(RTLD_NEXT, "fsync");
    *(void **)&next.fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    *(void **)&next.rename = dlsym(RTLD_NEXT, "rename");
    *(void **)&next.renameat = dlsym(RTLD_NEXT, "renameat");
    *(void **)&next.renameat2 = dlsym(RTLD_NEXT, "renameat2");
}

static void parse_control(const char *path) {
    rule_count = 0;
    active_calls = 0;
    FILE *file = fopen(path, "re");
    if (!file) return;
    char line[512];
    while (rule_count < MAX_RULES && fgets(line, sizeof line, file)) {
        char name[32], pattern[MAX_PATTERN];
        long count = 0;
        int fields = sscanf(line, "%31s %255s %ld", name, pattern, &count);
        if (fields < 2 || name[0] == '#') continue;
        for (int call = 0; call < CALL_COUNT; call++) {
            if (strcmp(name, call_names[call]) != 0) continue;
            struct rule *rule = &rules[rule_count++];
            rule->call = (enum call)call;
            memcpy(rule->pattern, pattern, sizeof rule->pattern);
            rule->remaining = count > 0 ? count : -1;
            active_calls |= 1 << call;
        }
    }
    fclose(file);
}

/* Rereads the control file if it is not the one read last. Called with `lock` held. */
static void refresh_rules(void) {
    const char *path = getenv("DISKFULL_CONTROL");
    if (!path) return;
    struct stat now;
    int present = stat(path, &now) == 0;
    if (present == control_present &&
        (!present || (now.st_ino == control_seen.st_ino && now.st_size == control_seen.st_size &&
                      now.st_mtim.tv_sec == control_seen.st_mtim.tv_sec &&
                      now.st_mtim.tv_nsec == control_seen.st_mtim.tv_nsec)))
        return;
    control_present = present;
    control_seen = now;
    if (present) {
        parse_control(path);
    } else {
        rule_count = 0;
        active_calls = 0;
    }
}

static void note_injected(enum call call, const char *path) {
    const char *log = getenv("DISKFULL_LOG");
    if (!log) return;
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char line[PATH_MAX + 64];
    int length = snprintf(line, sizeof line, "%s %s\n", call_names[call], path);
    if (length > (int)sizeof line - 1) length = (int)sizeof line - 1;
    if (length > 0) (void)next.write(fd, line, (size_t)length);
    close(fd);
}

/* Whether `path` contains `pattern`, or ends with it when it ends with `$`. */
static int matches(const char *path, const char *pattern) {
    size_t length = strlen(pattern);
    if (length > 0 && pattern[length - 1] == '$') {
        size_t path_length = strlen(path);
        return path_length >= length - 1 && memcmp(path + path_length - (length - 1), pattern, length - 1) == 0;
    }
    return strstr(path, pattern) != NULL;
}

/* Whether `call` about `first` (or `second`) must fail now; consumes one of the rule's failures. */
static int should_fail(enum call call, const char *first, const char *second) {
    int saved_errno = errno;
    int fail = 0;
    pthread_mutex_lock(&lock);
    refresh_rules();
    if (active_calls & (1 << call)) {
        for (int index = 0; index < rule_count; index++) {
            struct rule *rule = &rules[index];
            if (rule->call != call || rule->remaining == 0) continue;
            const char *matched = matches(first, rule->pattern) ? first
                                  : (second && matches(second, rule->pattern)) ? second
                                                                               : NULL;
            if (!matched) continue;
            if (rule->remaining > 0) rule->remaining--;
            note_injected(call, matched);
            fail = 1;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    errno = saved_errno;
    return fail;
}

/* Whether a call on descriptor `fd` must fail; the descriptor's path is looked up only when a
 * rule for the call exists, so an idle library costs one stat(2) per call. */
static int should_fail_fd(enum call call, int fd) {
    pthread_once(&resolve_once, resolve);
    /* The bookkeeping's own calls must not change errno: a caller may read it after a call
     * that succeeded (SQLite's sqlite3_system_errno reads it well after the failed one). */
    int saved_errno = errno;
    pthread_mutex_lock(&lock);
    refresh_rules();
    int wanted = active_calls & (1 << call);
    pthread_mutex_unlock(&lock);
    int fail = 0;
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t length = wanted ? readlink(link, path, sizeof path - 1) : -1;
    if (length >= 0) {
        path[length] = '\0';
        fail = should_fail(call, path, NULL);
    }
    errno = saved_errno;
    return fail;
}

EXPORT ssize_t write(int fd, const void *buffer, size_t count) {
    if (should_fail_fd(CALL_WRITE, fd)) {
        errno = ENOSPC;
        return -1;
    }
    return next.write(fd, buffer, count);
}

EXPORT ssize_t pwrite(int fd, const void *buffer, size_t count, off_t offset) {
    if (should_fail_fd(CALL_PWRITE, fd)) {
        errno = ENOSPC;
        return -1;
    }
    return next.pwrite(fd, buffer, count, offset);
}

EXPORT ssize_t pwrite64(int fd, const void *buffer, size_t count, off64_t offset) {
    if (should_fail_fd(CALL_PWRITE, fd)) {
        errno = ENOSPC;
        return -1;
    }
    return next.pwrite64(fd, buffer, count, offset);
}

EXPORT int fsync(int fd) {
    if (should_fail_fd(CALL_FSYNC, fd)) {
        errno = ENOSPC;
        return -1;
    }
    return next.fsync(fd);
}

EXPORT int fdatasync(int fd) {
    if (should_fail_fd(CALL_FDATASYNC, fd)) {
        errno = ENOSPC;
        return -1;
    }
    return next.fdatasync(fd);
}

EXPORT int rename(const char *old_path, const char *new_path) {
    pthread_once(&resolve_once, resolve);
    if (should_fail(CALL_RENAME, old_path, new_path)) {
        errno = ENOSPC;
        return -1;
    }
    return next.rename(old_path, new_path);
}

EXPORT int renameat(int old_dir, const char *old_path, int new_dir, const char *new_path) {
    pthread_once(&resolve_once, resolve);
    if (should_fail(CALL_RENAME, old_path, new_path)) {
        errno = ENOSPC;
        return -1;
    }
    return next.renameat(old_dir, old_path, new_dir, new_path);
}

EXPORT int renameat2(int old_dir, const char *old_path, int new_dir, const char *new_path,
                     unsigned int flags) {
    pthread_once(&resolve_once, resolve);
    if (should_fail(CALL_RENAME, old_path, new_path)) {
        errno = ENOSPC;
        return -1;
    }
    return next.renameat2(old_dir, old_path, new_dir, new_path, flags);
}
