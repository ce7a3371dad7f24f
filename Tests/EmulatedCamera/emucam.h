/*
 * Internal interface of libemucam.so, the emulated UVC webcam loaded with LD_PRELOAD by tests
 * and benchmarks (never by the daemon in production). README.md describes the knobs and limits.
 *
 * Layout: interpose.c holds the libc entry points and hands calls on the emulated path or fds to
 * device.c (the V4L2 device: handles, formats, buffers, streaming, faults); controls.c holds the
 * control table and its ioctls; frames.c draws the test pattern and encodes the MJPEG ring;
 * knobs.c reads the EMUCAM_* environment once.
 */
#ifndef EMUCAM_H
#define EMUCAM_H

/* interpose.c defines open(), read() and friends itself; glibc's fortify wrappers would turn
 * those definitions into redefinitions of its always-inline versions. */
#undef _FORTIFY_SOURCE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <linux/videodev2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

/* Only the interposed libc symbols are exported; build.sh compiles with -fvisibility=hidden so
 * that no internal helper can shadow a symbol of the program it is loaded into. */
#define EMU_EXPORT __attribute__((visibility("default")))

enum {
    /* REQBUFS clamps the count to 1...EMU_MAX_BUFFERS. */
    EMU_MAX_BUFFERS = 8,
    /* Concurrently open emulated file descriptors in one process (v4l2-compliance opens
     * 100 to check that opens are not limited). */
    EMU_MAX_HANDLES = 256,
    EMU_MAX_FORMATS = 3,
    /* 30, 15 and 5 fps plus EMUCAM_FPS when it is none of those. */
    EMU_MAX_RATES = 4,
    EMU_SIZE_COUNT = 3,
    /* The moving bar repeats every EMU_RING_FRAMES frames, so that many MJPEG frames per size
     * cover the whole animation and are encoded once each. */
    EMU_RING_FRAMES = 30,
    /* The emulated device is a character device of the video4linux major (kernel doc
     * admin-guide/devices.txt: 81 char, video4linux). */
    EMU_V4L_MAJOR = 81,
};

/* EMUCAM_MJPEG_NO_DHT=every:N and EMUCAM_UNPLUG_TIMES=0 both mean "no limit" with this. */
#define EMU_UNLIMITED 0u

/* The EMUCAM_* environment, read once when the library loads (knobs.c). Never written after. */
struct emu_knobs {
    char device_path[256];
    /* st_dev/st_ino of the directory holding device_path, to recognise its readdir() streams. */
    bool device_dir_known;
    dev_t device_dir_dev;
    ino_t device_dir_ino;
    const char *device_name; /* points into device_path */
    unsigned minor;
    uint32_t formats[EMU_MAX_FORMATS];
    unsigned format_count;
    unsigned rates[EMU_MAX_RATES]; /* frames per second, highest first */
    unsigned rate_count;
    unsigned default_rate;
    unsigned unplug_after;   /* frames; 0 = never */
    double unplug_seconds;   /* how long the path is gone */
    unsigned unplug_times;   /* EMU_UNLIMITED or how many unplugs happen at most */
    unsigned stall_after;    /* frames per stream; 0 = never */
    unsigned hang_after;     /* buffers dequeued, then DQBUF never returns; 0 = never */
    int open_error;          /* errno for every open(), 0 = none */
    char open_error_file[256]; /* "" = none; else read at every open() (emu_open_error_now) */
    unsigned no_dht_every;   /* strip DHT from every Nth MJPEG frame; 0 = never */
    unsigned corrupt_every;  /* truncate every Nth MJPEG frame; 0 = never */
    bool stamp;              /* COM segment with the CLOCK_REALTIME delivery time in MJPEG */
    bool log;
    char state_dir[256];     /* "" = keep state in this process only */
    time_t loaded_at;        /* the device node's timestamps (stat) */
};

extern struct emu_knobs emu_knobs;

void emu_knobs_load(void);
void emu_log(const char *format, ...) __attribute__((format(printf, 1, 2)));
const char *emu_errno_name(int error);
/* The errno open() of the device fails with now: EMUCAM_OPEN_ERROR, else the name written in
 * EMUCAM_OPEN_ERROR_FILE when that file exists (read at every call, so a test can take the
 * device's permissions away and give them back while the program runs), else 0. */
int emu_open_error_now(void);

/* The real libc functions, looked up with dlsym(RTLD_NEXT, ...) (interpose.c). */
struct emu_libc {
    int (*close)(int);
    int (*fstat)(int, struct stat *);
    int (*stat)(const char *, struct stat *);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    int (*munmap)(void *, size_t);
};

extern struct emu_libc emu_libc;
void emu_libc_resolve(void);

/* device.c: the emulated V4L2 device. Every function takes the library lock itself. */

void emu_device_register_fork_handlers(void);
/* 0 if the device path exists now, ENOENT while it is unplugged. */
int emu_device_presence(void);
/* open() of the device path: a new descriptor, or -1 with errno. */
int emu_device_open(int flags);
/* True if fd is an emulated descriptor. Lock-free, so read() and close() stay cheap. */
bool emu_device_owns_fd(int fd);
/* close() of an emulated descriptor; the caller checked emu_device_owns_fd. */
int emu_device_close(int fd);
int emu_device_ioctl(int fd, unsigned long request, void *arg);
void *emu_device_mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset);
/* Forgets a mapping of a buffer (for V4L2_BUF_FLAG_MAPPED); munmap itself is the caller's. */
void emu_device_munmap(void *addr);
bool emu_device_has_mappings(void);
/* What stat() of the device path and fstat() of its descriptors report. */
void emu_device_fill_stat(struct stat *st);

/* controls.c: the control table (V4L2 API "User Controls" and "Camera Control Reference"). */

enum emu_control_index {
    EMU_CTRL_BRIGHTNESS,
    EMU_CTRL_CONTRAST,
    EMU_CTRL_SATURATION,
    EMU_CTRL_WHITE_BALANCE_AUTOMATIC,
    EMU_CTRL_POWER_LINE_FREQUENCY,
    EMU_CTRL_EXPOSURE_AUTO,
    EMU_CTRL_EXPOSURE_ABSOLUTE,
    EMU_CTRL_COUNT,
};

/* Current values of the controls, indexed by enum emu_control_index. */
struct emu_control_values {
    int32_t value[EMU_CTRL_COUNT];
};

void emu_controls_reset(struct emu_control_values *values);
/* Handles the control ioctls; returns 0 or an errno, and sets *changed when a value changed. */
int emu_controls_ioctl(struct emu_control_values *values, uint32_t request, void *arg,
                       bool *changed);
bool emu_controls_is_request(uint32_t request);
/* Index of the control with this id, or -1; for the state file. */
int emu_controls_index(uint32_t id);
uint32_t emu_controls_id(int index);
/* Sets a value read from the state file if it is valid for the control. */
void emu_controls_restore(struct emu_control_values *values, int index, int32_t value);

/* frames.c: the picture. */

/* Everything a frame depends on, copied under the lock so drawing can run without it. */
struct emu_frame_request {
    uint32_t pixelformat;
    uint32_t width;
    uint32_t height;
    int32_t brightness;
    int32_t contrast;
    int32_t saturation;
    uint32_t phase;       /* position in the animation, 0...EMU_RING_FRAMES-1 */
    bool strip_dht;
    bool truncate;
    bool stamp; /* leave room for the delivery stamp (emu_frame_stamp) right after SOI */
};

/* Frame thread state: the encoder and the MJPEG ring. Owned by one frame thread at a time. */
struct emu_frame_source;

struct emu_frame_source *emu_frame_source_new(void);
void emu_frame_source_free(struct emu_frame_source *source);
/* Draws the frame into dst; returns bytesused. Sets *error if it did not fit (never for the
 * sizes offered) or could not be encoded. */
size_t emu_frame_render(struct emu_frame_source *source, const struct emu_frame_request *request,
                        uint8_t *dst, size_t capacity, bool *error);

/* EMUCAM_STAMP: an MJPEG frame starts with SOI and then this COM segment, its 19 digits zeros
 * until emu_frame_stamp() writes the time the frame became available to DQBUF. */
#define EMU_STAMP_PREFIX "emucam-t="
enum {
    EMU_STAMP_DIGITS = 19, /* nanoseconds since the epoch, zero-padded (enough until 2286) */
    /* FF FE, the 2-byte length (which counts itself), the text. */
    EMU_STAMP_SEGMENT_BYTES = 4 + (int)sizeof EMU_STAMP_PREFIX - 1 + EMU_STAMP_DIGITS,
};
/* Writes CLOCK_REALTIME now into the stamp of a frame rendered with request->stamp. */
void emu_frame_stamp(uint8_t *frame, size_t used);

#endif
