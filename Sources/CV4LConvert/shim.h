// libv4lconvert for Swift, with device operations that go through glibc.
//
// libv4lconvert's default operations issue ioctl/read/write as raw syscalls (SYS_ioctl), which
// an LD_PRELOAD library such as Tests/EmulatedCamera cannot interpose. These call the glibc
// functions instead: the same kernel calls on real hardware, and the emulated camera in tests.
#ifndef C_V4LCONVERT_SHIM_H
#define C_V4LCONVERT_SHIM_H

#include <stddef.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/videodev2.h>
#include <libv4lconvert.h>
#include <libv4l-plugin.h>

static void *cv4lconvert_glibc_init(int fd) {
    (void)fd;
    return NULL;
}

static void cv4lconvert_glibc_close(void *priv) {
    (void)priv;
}

static int cv4lconvert_glibc_ioctl(void *priv, int fd, unsigned long int request, void *arg) {
    (void)priv;
    return ioctl(fd, request, arg);
}

static ssize_t cv4lconvert_glibc_read(void *priv, int fd, void *buffer, size_t n) {
    (void)priv;
    return read(fd, buffer, n);
}

static ssize_t cv4lconvert_glibc_write(void *priv, int fd, const void *buffer, size_t n) {
    (void)priv;
    return write(fd, buffer, n);
}

// The operations table for v4lconvert_create_with_dev_ops; the reserved fields stay NULL, as
// libv4l-plugin.h requires.
static inline const struct libv4l_dev_ops *cv4lconvert_glibc_dev_ops(void) {
    static const struct libv4l_dev_ops ops = {
        .init = cv4lconvert_glibc_init,
        .close = cv4lconvert_glibc_close,
        .ioctl = cv4lconvert_glibc_ioctl,
        .read = cv4lconvert_glibc_read,
        .write = cv4lconvert_glibc_write,
    };
    return &ops;
}

#endif
