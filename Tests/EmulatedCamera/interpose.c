/*
 * The libc entry points libemucam.so interposes (LD_PRELOAD puts its definitions ahead of
 * libc's). Calls about the emulated device path or its descriptors go to device.c; everything
 * else goes to the next definition, found with dlsym(RTLD_NEXT, ...).
 *
 * poll, select and epoll are not interposed: the descriptor handed out is a real socket that
 * the device makes readable when a buffer is filled (device.c, open_socket_pair()).
 */
#include "emucam.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* struct stat64 and struct stat are the same on the 64-bit targets this runs on, so the 64
 * variants share the implementation. */
_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "struct stat64 differs from stat");

struct emu_libc emu_libc;

/* Pass-through targets that only this file needs. */
static struct {
    int (*open)(const char *, int, ...);
    int (*open64)(const char *, int, ...);
    int (*openat)(int, const char *, int, ...);
    int (*openat64)(int, const char *, int, ...);
    int (*open_2)(const char *, int);
    int (*open64_2)(const char *, int);
    int (*openat_2)(int, const char *, int);
    int (*openat64_2)(int, const char *, int);
    int (*ioctl)(int, unsigned long, ...);
    void *(*mmap64)(void *, size_t, int, int, int, off64_t);
    FILE *(*fopen)(const char *, const char *);
    FILE *(*fopen64)(const char *, const char *);
    ssize_t (*read)(int, void *, size_t);
    ssize_t (*read_chk)(int, void *, size_t, size_t);
    int (*access)(const char *, int);
    int (*faccessat)(int, const char *, int, int);
    int (*lstat)(const char *, struct stat *);
    int (*fstatat)(int, const char *, struct stat *, int);
    int (*statx)(int, const char *, int, unsigned int, struct statx *);
    struct dirent *(*readdir)(DIR *);
    struct dirent64 *(*readdir64)(DIR *);
    int (*closedir)(DIR *);
    void (*rewinddir)(DIR *);
} next;

static pthread_once_t ready_once = PTHREAD_ONCE_INIT;

#define RESOLVE(field, symbol) (*(void **)&(field) = dlsym(RTLD_NEXT, symbol))

void emu_libc_resolve(void) {
    RESOLVE(emu_libc.close, "close");
    RESOLVE(emu_libc.fstat, "fstat");
    RESOLVE(emu_libc.stat, "stat");
    RESOLVE(emu_libc.mmap, "mmap");
    RESOLVE(emu_libc.munmap, "munmap");
    RESOLVE(next.open, "open");
    RESOLVE(next.open64, "open64");
    RESOLVE(next.openat, "openat");
    RESOLVE(next.openat64, "openat64");
    RESOLVE(next.open_2, "__open_2");
    RESOLVE(next.open64_2, "__open64_2");
    RESOLVE(next.openat_2, "__openat_2");
    RESOLVE(next.openat64_2, "__openat64_2");
    RESOLVE(next.ioctl, "ioctl");
    RESOLVE(next.mmap64, "mmap64");
    RESOLVE(next.fopen, "fopen");
    RESOLVE(next.fopen64, "fopen64");
    RESOLVE(next.read, "read");
    RESOLVE(next.read_chk, "__read_chk");
    RESOLVE(next.access, "access");
    RESOLVE(next.faccessat, "faccessat");
    RESOLVE(next.lstat, "lstat");
    RESOLVE(next.fstatat, "fstatat");
    RESOLVE(next.statx, "statx");
    RESOLVE(next.readdir, "readdir");
    RESOLVE(next.readdir64, "readdir64");
    RESOLVE(next.closedir, "closedir");
    RESOLVE(next.rewinddir, "rewinddir");
}

static void lock_dirs_before_fork(void);
static void unlock_dirs_after_fork(void);

static void initialize(void) {
    emu_libc_resolve();
    emu_knobs_load();
    /* Registered after the device's handlers, so its prepare handler runs first and takes
     * dirs_lock before the device lock, the order list_device() takes them in. */
    emu_device_register_fork_handlers();
    pthread_atfork(lock_dirs_before_fork, unlock_dirs_after_fork, unlock_dirs_after_fork);
    emu_log("emucam: emulating %s", emu_knobs.device_path);
}

/* Every entry point calls this first: another library's constructor may open files before
 * ours has run. */
static void ready(void) {
    pthread_once(&ready_once, initialize);
}

__attribute__((constructor)) static void load(void) {
    ready();
}

/* Fails like a call to a libc function that does not exist. */
#define MISSING(result) (errno = ENOSYS, (result))

/* ---- Paths. ---- */

/* True if dirfd (or the working directory for AT_FDCWD) is the directory of the device. */
static bool is_device_dir(int dirfd) {
    struct stat st;
    int rc = dirfd == AT_FDCWD ? emu_libc.stat(".", &st) : emu_libc.fstat(dirfd, &st);
    return rc == 0 && emu_knobs.device_dir_known && st.st_dev == emu_knobs.device_dir_dev &&
           st.st_ino == emu_knobs.device_dir_ino;
}

/* The device path as given, or its file name relative to a descriptor of its directory. */
static bool is_device_at(int dirfd, const char *path) {
    if (path == NULL) {
        return false;
    }
    if (path[0] == '/') {
        return strcmp(path, emu_knobs.device_path) == 0;
    }
    return strcmp(path, emu_knobs.device_name) == 0 && is_device_dir(dirfd);
}

static bool is_device_path(const char *path) {
    return is_device_at(AT_FDCWD, path);
}

static bool is_emulated_fd(int fd) {
    return fd >= 0 && emu_device_owns_fd(fd);
}

/* The mode argument exists only with O_CREAT or O_TMPFILE (open(2)). */
static bool needs_mode(int flags) {
    return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
}

/* ---- The device's sysfs files ---- */

/* The few sysfs files programs read to identify a V4L2 node: v4l2-ctl and libv4l read
 * /sys/dev/char/MAJOR:MINOR/uevent and need DEVNAME=videoN to accept the node as a video device
 * (v4l-utils media-info.cpp, media_detect_type()); discovery code reads
 * /sys/class/video4linux/videoN/name for the card name. Returns the content, or NULL for any
 * other path and while the device is unplugged. */
static const char *sysfs_content(const char *path, char *content, size_t size) {
    if (path == NULL || strncmp(path, "/sys/", 5) != 0) {
        return NULL;
    }
    char candidate[320];
    snprintf(candidate, sizeof candidate, "/sys/dev/char/%u:%u/uevent", EMU_V4L_MAJOR,
             emu_knobs.minor);
    bool uevent = strcmp(path, candidate) == 0;
    snprintf(candidate, sizeof candidate, "/sys/class/video4linux/%s/uevent",
             emu_knobs.device_name);
    uevent = uevent || strcmp(path, candidate) == 0;
    snprintf(candidate, sizeof candidate, "/sys/class/video4linux/%s/name",
             emu_knobs.device_name);
    bool name = strcmp(path, candidate) == 0;
    if ((!uevent && !name) || emu_device_presence() != 0) {
        return NULL;
    }
    if (uevent) {
        snprintf(content, size, "MAJOR=%u\nMINOR=%u\nDEVNAME=%s\n", EMU_V4L_MAJOR,
                 emu_knobs.minor, emu_knobs.device_name);
    } else {
        snprintf(content, size, "Emulated UVC Camera\n");
    }
    return content;
}

/* A read-only descriptor holding `content`, positioned at its start. */
static int open_content(const char *content, int flags) {
    int fd = memfd_create("emucam-sysfs", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
    if (fd < 0) {
        return -1;
    }
    size_t length = strlen(content);
    if (write(fd, content, length) != (ssize_t)length || lseek(fd, 0, SEEK_SET) != 0) {
        int error = errno;
        emu_libc.close(fd);
        errno = error;
        return -1;
    }
    return fd;
}

/* open() of a sysfs file of the device: its content, or -1 with errno; -2 if not ours. */
static int open_sysfs(int dirfd, const char *path, int flags) {
    char content[160];
    if (dirfd != AT_FDCWD && (path == NULL || path[0] != '/')) {
        return -2;
    }
    if (sysfs_content(path, content, sizeof content) == NULL) {
        return -2;
    }
    if ((flags & O_ACCMODE) != O_RDONLY) {
        errno = EACCES;
        return -1;
    }
    return open_content(content, flags);
}

static FILE *fopen_sysfs(const char *path, const char *mode, bool *handled) {
    char content[160];
    *handled = sysfs_content(path, content, sizeof content) != NULL;
    if (!*handled) {
        return NULL;
    }
    if (strpbrk(mode, "wa+") != NULL) {
        errno = EACCES;
        return NULL;
    }
    int fd = open_content(content, strchr(mode, 'e') != NULL ? O_CLOEXEC : 0);
    FILE *file = fd < 0 ? NULL : fdopen(fd, "r");
    if (file == NULL && fd >= 0) {
        emu_libc.close(fd);
    }
    return file;
}

/* ---- open ---- */

#define MODE_ARGUMENT(flags, last)                                                             \
    mode_t mode = 0;                                                                           \
    if (needs_mode(flags)) {                                                                   \
        va_list arguments;                                                                     \
        va_start(arguments, last);                                                             \
        mode = va_arg(arguments, mode_t);                                                      \
        va_end(arguments);                                                                     \
    }

EMU_EXPORT int open(const char *path, int flags, ...) {
    MODE_ARGUMENT(flags, flags);
    ready();
    if (is_device_path(path)) {
        return emu_device_open(flags);
    }
    int sysfs = open_sysfs(AT_FDCWD, path, flags);
    if (sysfs != -2) {
        return sysfs;
    }
    return next.open ? next.open(path, flags, mode) : MISSING(-1);
}

EMU_EXPORT int open64(const char *path, int flags, ...) {
    MODE_ARGUMENT(flags, flags);
    ready();
    if (is_device_path(path)) {
        return emu_device_open(flags);
    }
    int sysfs = open_sysfs(AT_FDCWD, path, flags);
    if (sysfs != -2) {
        return sysfs;
    }
    return next.open64 ? next.open64(path, flags, mode) : MISSING(-1);
}

EMU_EXPORT int openat(int dirfd, const char *path, int flags, ...) {
    MODE_ARGUMENT(flags, flags);
    ready();
    if (is_device_at(dirfd, path)) {
        return emu_device_open(flags);
    }
    int sysfs = open_sysfs(dirfd, path, flags);
    if (sysfs != -2) {
        return sysfs;
    }
    return next.openat ? next.openat(dirfd, path, flags, mode) : MISSING(-1);
}

EMU_EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
    MODE_ARGUMENT(flags, flags);
    ready();
    if (is_device_at(dirfd, path)) {
        return emu_device_open(flags);
    }
    int sysfs = open_sysfs(dirfd, path, flags);
    if (sysfs != -2) {
        return sysfs;
    }
    return next.openat64 ? next.openat64(dirfd, path, flags, mode) : MISSING(-1);
}

/* The _FORTIFY_SOURCE variants, called for open() without a mode argument. */
EMU_EXPORT int __open_2(const char *path, int flags) {
    ready();
    if (is_device_path(path)) {
        return emu_device_open(flags);
    }
    int sysfs = open_sysfs(AT_FDCWD, path, flags);
    if (sysfs != -2) {
        return sysfs;
    }
    return next.open_2 ? next.open_2(path, flags) : MISSING(-1);
}

EMU_EXPORT int __open64_2(const char *path, int flags) {
    ready();
    if (is_device_path(path)) {
        return emu_device_open(flags);
    }
    int sysfs = open_sysfs(AT_FDCWD, path, flags);
    if (sysfs != -2) {
        return sysfs;
    }
    return next.open64_2 ? next.open64_2(path, flags) : MISSING(-1);
}

EMU_EXPORT int __openat_2(int dirfd, const char *path, int flags) {
    ready();
    if (is_device_at(dirfd, path)) {
        return emu_device_open(flags);
    }
    int sysfs = open_sysfs(dirfd, path, flags);
    if (sysfs != -2) {
        return sysfs;
    }
    return next.openat_2 ? next.openat_2(dirfd, path, flags) : MISSING(-1);
}

EMU_EXPORT int __openat64_2(int dirfd, const char *path, int flags) {
    ready();
    if (is_device_at(dirfd, path)) {
        return emu_device_open(flags);
    }
    int sysfs = open_sysfs(dirfd, path, flags);
    if (sysfs != -2) {
        return sysfs;
    }
    return next.openat64_2 ? next.openat64_2(dirfd, path, flags) : MISSING(-1);
}

EMU_EXPORT FILE *fopen(const char *path, const char *mode) {
    ready();
    bool handled;
    FILE *file = fopen_sysfs(path, mode, &handled);
    if (handled) {
        return file;
    }
    return next.fopen ? next.fopen(path, mode) : MISSING(NULL);
}

EMU_EXPORT FILE *fopen64(const char *path, const char *mode) {
    ready();
    bool handled;
    FILE *file = fopen_sysfs(path, mode, &handled);
    if (handled) {
        return file;
    }
    return next.fopen64 ? next.fopen64(path, mode) : MISSING(NULL);
}

/* ---- close, ioctl, read ---- */

EMU_EXPORT int close(int fd) {
    ready();
    if (is_emulated_fd(fd)) {
        return emu_device_close(fd);
    }
    return emu_libc.close ? emu_libc.close(fd) : MISSING(-1);
}

EMU_EXPORT int ioctl(int fd, unsigned long request, ...) {
    va_list arguments;
    va_start(arguments, request);
    void *arg = va_arg(arguments, void *);
    va_end(arguments);
    ready();
    if (is_emulated_fd(fd)) {
        uint32_t code = (uint32_t)request;
        /* The VFS handles these for every file before the driver sees them (fs/ioctl.c,
         * do_vfs_ioctl()), so they act on the real descriptor. Request codes are compared on
         * their low 32 bits: some programs pass them through a sign-extended int. */
        if (code == (uint32_t)FIONBIO || code == (uint32_t)FIOCLEX ||
            code == (uint32_t)FIONCLEX || code == (uint32_t)FIOASYNC) {
            return next.ioctl(fd, request, arg);
        }
        return emu_device_ioctl(fd, request, arg);
    }
    return next.ioctl ? next.ioctl(fd, request, arg) : MISSING(-1);
}

/* uvcvideo has no read() I/O (no V4L2_CAP_READWRITE) and fails it with EINVAL. */
EMU_EXPORT ssize_t read(int fd, void *buffer, size_t count) {
    ready();
    if (is_emulated_fd(fd)) {
        errno = EINVAL;
        return -1;
    }
    return next.read ? next.read(fd, buffer, count) : MISSING(-1);
}

EMU_EXPORT ssize_t __read_chk(int fd, void *buffer, size_t count, size_t buffer_size) {
    ready();
    if (is_emulated_fd(fd)) {
        errno = EINVAL;
        return -1;
    }
    return next.read_chk ? next.read_chk(fd, buffer, count, buffer_size) : MISSING(-1);
}

/* ---- mmap ---- */

EMU_EXPORT void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset) {
    ready();
    if (!(flags & MAP_ANONYMOUS) && is_emulated_fd(fd)) {
        return emu_device_mmap(addr, length, prot, flags, fd, offset);
    }
    return emu_libc.mmap ? emu_libc.mmap(addr, length, prot, flags, fd, offset)
                         : MISSING(MAP_FAILED);
}

EMU_EXPORT void *mmap64(void *addr, size_t length, int prot, int flags, int fd, off64_t offset) {
    ready();
    if (!(flags & MAP_ANONYMOUS) && is_emulated_fd(fd)) {
        return emu_device_mmap(addr, length, prot, flags, fd, (off_t)offset);
    }
    return next.mmap64 ? next.mmap64(addr, length, prot, flags, fd, offset)
                       : MISSING(MAP_FAILED);
}

/* Only watched to clear V4L2_BUF_FLAG_MAPPED; the unmapping itself is the real one. */
EMU_EXPORT int munmap(void *addr, size_t length) {
    ready();
    int rc = emu_libc.munmap ? emu_libc.munmap(addr, length) : MISSING(-1);
    if (rc == 0 && emu_device_has_mappings()) {
        emu_device_munmap(addr);
    }
    return rc;
}

/* ---- access ---- */

/* A 0660 character device: readable and writable, not executable; EMUCAM_OPEN_ERROR=EACCES
 * (or EACCES in EMUCAM_OPEN_ERROR_FILE) also denies read and write, as a node of another group
 * would. */
static int device_access(int mode) {
    int error = emu_device_presence();
    if (error == 0 && (mode & X_OK)) {
        error = EACCES;
    }
    if (error == 0 && (mode & (R_OK | W_OK)) && emu_open_error_now() == EACCES) {
        error = EACCES;
    }
    if (error != 0) {
        errno = error;
        return -1;
    }
    return 0;
}

EMU_EXPORT int access(const char *path, int mode) {
    ready();
    if (is_device_path(path)) {
        return device_access(mode);
    }
    return next.access ? next.access(path, mode) : MISSING(-1);
}

EMU_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags) {
    ready();
    if (is_device_at(dirfd, path)) {
        return device_access(mode);
    }
    return next.faccessat ? next.faccessat(dirfd, path, mode, flags) : MISSING(-1);
}

/* ---- stat ---- */

static int device_stat(struct stat *st) {
    int error = emu_device_presence();
    if (error != 0) {
        errno = error;
        return -1;
    }
    emu_device_fill_stat(st);
    return 0;
}

/* An open descriptor keeps answering fstat() after the unplug, like a real one. */
static int descriptor_stat(struct stat *st) {
    emu_device_fill_stat(st);
    return 0;
}

EMU_EXPORT int stat(const char *path, struct stat *st) {
    ready();
    if (is_device_path(path)) {
        return device_stat(st);
    }
    return emu_libc.stat ? emu_libc.stat(path, st) : MISSING(-1);
}

EMU_EXPORT int lstat(const char *path, struct stat *st) {
    ready();
    if (is_device_path(path)) {
        return device_stat(st);
    }
    return next.lstat ? next.lstat(path, st) : MISSING(-1);
}

EMU_EXPORT int fstat(int fd, struct stat *st) {
    ready();
    if (is_emulated_fd(fd)) {
        return descriptor_stat(st);
    }
    return emu_libc.fstat ? emu_libc.fstat(fd, st) : MISSING(-1);
}

EMU_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags) {
    ready();
    if ((flags & AT_EMPTY_PATH) && path[0] == '\0' && is_emulated_fd(dirfd)) {
        return descriptor_stat(st);
    }
    if (is_device_at(dirfd, path)) {
        return device_stat(st);
    }
    return next.fstatat ? next.fstatat(dirfd, path, st, flags) : MISSING(-1);
}

EMU_EXPORT int stat64(const char *path, struct stat64 *st) {
    return stat(path, (struct stat *)st);
}

EMU_EXPORT int lstat64(const char *path, struct stat64 *st) {
    return lstat(path, (struct stat *)st);
}

EMU_EXPORT int fstat64(int fd, struct stat64 *st) {
    return fstat(fd, (struct stat *)st);
}

EMU_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags) {
    return fstatat(dirfd, path, (struct stat *)st, flags);
}

/* Programs built against glibc before 2.33 call these instead of stat(); glibc keeps them as
 * compatibility symbols. The version argument is _STAT_VER, whose struct is struct stat on the
 * 64-bit targets. */
EMU_EXPORT int __xstat(int version, const char *path, struct stat *st);
EMU_EXPORT int __lxstat(int version, const char *path, struct stat *st);
EMU_EXPORT int __fxstat(int version, int fd, struct stat *st);
EMU_EXPORT int __fxstatat(int version, int dirfd, const char *path, struct stat *st, int flags);
EMU_EXPORT int __xstat64(int version, const char *path, struct stat64 *st);
EMU_EXPORT int __lxstat64(int version, const char *path, struct stat64 *st);
EMU_EXPORT int __fxstat64(int version, int fd, struct stat64 *st);
EMU_EXPORT int __fxstatat64(int version, int dirfd, const char *path, struct stat64 *st,
                            int flags);

EMU_EXPORT int __xstat(int version, const char *path, struct stat *st) {
    (void)version;
    return stat(path, st);
}

EMU_EXPORT int __lxstat(int version, const char *path, struct stat *st) {
    (void)version;
    return lstat(path, st);
}

EMU_EXPORT int __fxstat(int version, int fd, struct stat *st) {
    (void)version;
    return fstat(fd, st);
}

EMU_EXPORT int __fxstatat(int version, int dirfd, const char *path, struct stat *st, int flags) {
    (void)version;
    return fstatat(dirfd, path, st, flags);
}

EMU_EXPORT int __xstat64(int version, const char *path, struct stat64 *st) {
    (void)version;
    return stat(path, (struct stat *)st);
}

EMU_EXPORT int __lxstat64(int version, const char *path, struct stat64 *st) {
    (void)version;
    return lstat(path, (struct stat *)st);
}

EMU_EXPORT int __fxstat64(int version, int fd, struct stat64 *st) {
    (void)version;
    return fstat(fd, (struct stat *)st);
}

EMU_EXPORT int __fxstatat64(int version, int dirfd, const char *path, struct stat64 *st,
                            int flags) {
    (void)version;
    return fstatat(dirfd, path, (struct stat *)st, flags);
}

static void fill_statx(struct statx *out) {
    struct stat st;
    emu_device_fill_stat(&st);
    memset(out, 0, sizeof *out);
    out->stx_mask = STATX_BASIC_STATS;
    out->stx_blksize = (uint32_t)st.st_blksize;
    out->stx_nlink = (uint32_t)st.st_nlink;
    out->stx_uid = st.st_uid;
    out->stx_gid = st.st_gid;
    out->stx_mode = (uint16_t)st.st_mode;
    out->stx_ino = st.st_ino;
    out->stx_atime.tv_sec = st.st_atim.tv_sec;
    out->stx_mtime.tv_sec = st.st_mtim.tv_sec;
    out->stx_ctime.tv_sec = st.st_ctim.tv_sec;
    out->stx_rdev_major = major(st.st_rdev);
    out->stx_rdev_minor = minor(st.st_rdev);
    out->stx_dev_major = major(st.st_dev);
    out->stx_dev_minor = minor(st.st_dev);
}

EMU_EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask,
                     struct statx *out) {
    ready();
    if ((flags & AT_EMPTY_PATH) && path[0] == '\0' && is_emulated_fd(dirfd)) {
        fill_statx(out);
        return 0;
    }
    if (is_device_at(dirfd, path)) {
        int error = emu_device_presence();
        if (error != 0) {
            errno = error;
            return -1;
        }
        fill_statx(out);
        return 0;
    }
    return next.statx ? next.statx(dirfd, path, flags, mask, out) : MISSING(-1);
}

/* ---- readdir: the device appears in a listing of its directory ---- */

/* Directory streams seen by readdir(), whether they list the device's directory, and whether
 * the device was listed in this pass. Guarded by dirs_lock. */
static struct {
    DIR *dir;
    bool is_device_dir;
    bool listed;
    struct dirent64 entry;
} dirs[32];
static pthread_mutex_t dirs_lock = PTHREAD_MUTEX_INITIALIZER;

static void lock_dirs_before_fork(void) {
    pthread_mutex_lock(&dirs_lock);
}

static void unlock_dirs_after_fork(void) {
    pthread_mutex_unlock(&dirs_lock);
}

/* struct dirent and struct dirent64 are the same on the 64-bit targets this runs on. */
_Static_assert(sizeof(struct dirent) == sizeof(struct dirent64), "struct dirent64 differs");

typedef struct dirent64 *(*next_entry_function)(DIR *);

static struct dirent64 *next_readdir(DIR *dir) {
    return (struct dirent64 *)next.readdir(dir);
}

static struct dirent64 *next_readdir64(DIR *dir) {
    return next.readdir64(dir);
}

/* Passes the real entries through and adds the device after the last one, unless a real
 * node of that name was already listed; during an unplug the name is hidden. */
static struct dirent64 *list_device(DIR *dir, next_entry_function next_entry) {
    struct dirent64 *entry = next_entry(dir);
    if (!emu_knobs.device_dir_known) {
        return entry;
    }
    pthread_mutex_lock(&dirs_lock);
    int slot = -1;
    int free_slot = -1;
    for (int i = 0; i < (int)(sizeof dirs / sizeof dirs[0]); i++) {
        if (dirs[i].dir == dir) {
            slot = i;
        } else if (dirs[i].dir == NULL && free_slot < 0) {
            free_slot = i;
        }
    }
    if (slot < 0 && free_slot >= 0) {
        slot = free_slot;
        dirs[slot].dir = dir;
        dirs[slot].is_device_dir = is_device_dir(dirfd(dir));
        dirs[slot].listed = false;
    }
    if (slot < 0 || !dirs[slot].is_device_dir) {
        pthread_mutex_unlock(&dirs_lock);
        return entry;
    }
    bool present = emu_device_presence() == 0;
    while (entry != NULL && strcmp(entry->d_name, emu_knobs.device_name) == 0) {
        if (present) {
            dirs[slot].listed = true;
            break;
        }
        entry = next_entry(dir);
    }
    if (entry == NULL && present && !dirs[slot].listed) {
        dirs[slot].listed = true;
        struct dirent64 *made = &dirs[slot].entry;
        memset(made, 0, sizeof *made);
        made->d_ino = 1000 + emu_knobs.minor;
        made->d_reclen = sizeof *made;
        made->d_type = DT_CHR;
        snprintf(made->d_name, sizeof made->d_name, "%s", emu_knobs.device_name);
        entry = made;
    }
    pthread_mutex_unlock(&dirs_lock);
    return entry;
}

EMU_EXPORT struct dirent *readdir(DIR *dir) {
    ready();
    if (next.readdir == NULL) {
        return MISSING(NULL);
    }
    return (struct dirent *)list_device(dir, next_readdir);
}

EMU_EXPORT struct dirent64 *readdir64(DIR *dir) {
    ready();
    if (next.readdir64 == NULL) {
        return MISSING(NULL);
    }
    return list_device(dir, next_readdir64);
}

static void forget_dir(DIR *dir, bool keep) {
    pthread_mutex_lock(&dirs_lock);
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        if (dirs[i].dir == dir) {
            dirs[i].listed = false;
            if (!keep) {
                dirs[i].dir = NULL;
            }
        }
    }
    pthread_mutex_unlock(&dirs_lock);
}

EMU_EXPORT int closedir(DIR *dir) {
    ready();
    forget_dir(dir, false);
    return next.closedir ? next.closedir(dir) : MISSING(-1);
}

EMU_EXPORT void rewinddir(DIR *dir) {
    ready();
    forget_dir(dir, true);
    if (next.rewinddir != NULL) {
        next.rewinddir(dir);
    }
}
