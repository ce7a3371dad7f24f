/*
 * The emulated V4L2 capture device: open handles, format, frame rate, buffers, streaming, the
 * frame thread and the fault knobs. Behaviour follows the V4L2 API ("Video for Linux API" in the
 * kernel docs, userspace-api/media/v4l) and, where the API leaves a choice to the driver, what
 * uvcvideo (drivers/media/usb/uvc) with videobuf2 does.
 *
 * Locking: one mutex, `lock`, guards everything in this file: the camera, every device and
 * handle, the buffer states and the mapping records. The frame thread holds it except while it
 * draws into a buffer it has marked BUFFER_FILLING (no one else touches such a buffer) and
 * while it sleeps. DQBUF and the frame thread wait on condition variables of the lock.
 * handle_fds[] mirrors the open descriptors for lock-free lookups: written under the lock,
 * read without it.
 */
#include "emucam.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* Frame sizes every format offers, as discrete sizes (V4L2 API, VIDIOC_ENUM_FRAMESIZES). */
static const struct {
    uint32_t width;
    uint32_t height;
} frame_sizes[EMU_SIZE_COUNT] = {{640, 480}, {1280, 720}, {1920, 1080}};

/* videobuf2 buffer states as the V4L2 API exposes them ("Buffers": a buffer is in the incoming
 * queue after QBUF, in the outgoing queue once filled, and dequeued after DQBUF). FILLING is an
 * incoming buffer the frame thread is drawing into; it still reports V4L2_BUF_FLAG_QUEUED. */
enum buffer_state { BUFFER_DEQUEUED, BUFFER_QUEUED, BUFFER_FILLING, BUFFER_DONE };

struct buffer {
    enum buffer_state state;
    uint64_t order; /* FIFO position in the incoming or the outgoing queue */
    uint32_t bytesused;
    uint32_t sequence;
    bool error;
    struct timeval timestamp;
    unsigned mappings;
};

struct handle;

struct device {
    unsigned refs; /* the camera's reference plus one per open handle */
    /* Set by the frame thread at the unplug; every ioctl then fails with ENODEV, as
     * v4l2_ioctl() does once the video device is unregistered. */
    bool gone;
    bool unplug_armed;
    /* uvcvideo "privileges" (uvc_v4l2.c, uvc_acquire_privileges()): the first handle to call
     * S_FMT, S_PARM, S_INPUT or REQBUFS owns streaming until it frees the buffers or closes;
     * the others get EBUSY for those and for the buffer and streaming ioctls. */
    struct handle *privileged;
    /* With EMUCAM_STATE_DIR, the privileges also hold across processes, as a real device's do:
     * this descriptor of <state_dir>/<node>.owner carries a flock(LOCK_EX) while a handle of this
     * process is privileged, -1 otherwise. */
    int owner_lock_fd;

    uint32_t pixelformat;
    uint32_t width;
    uint32_t height;
    unsigned rate;
    struct emu_control_values controls;

    unsigned buffer_count;
    struct buffer buffers[EMU_MAX_BUFFERS];
    int memfd;          /* backs every buffer; mmap() of the device maps it */
    uint8_t *memory;    /* the frame thread's mapping of memfd */
    size_t memory_size;
    size_t buffer_stride;   /* page-aligned, so each buffer's offset is a valid mmap offset */
    uint32_t buffer_length; /* sizeimage */
    uint64_t allocation;    /* bumped at every REQBUFS, so stale mapping records are ignored */

    bool streaming;
    bool stopping;
    bool thread_running;
    pthread_t thread;
    uint64_t order_counter;
    uint64_t frames_delivered; /* over the device's life, for EMUCAM_UNPLUG_AFTER */
    uint64_t stream_frames;    /* since STREAMON, for stall, corrupt and DHT knobs */
    pthread_cond_t wake;       /* the frame thread sleeps on it until the next frame */
    pthread_cond_t done;       /* blocking DQBUF sleeps on it */
    pthread_cond_t stopped;    /* a second STREAMOFF waits on it for the first */
    struct emu_frame_source *source; /* used by the frame thread only */
};

struct handle {
    bool used;
    int fd;        /* returned to the program: one end of a socket pair */
    int notify_fd; /* the other end: one byte per filled buffer; closed at the unplug */
    struct device *device;
    uint32_t priority;
};

struct mapping {
    void *address;
    struct device *device;
    uint64_t allocation;
    unsigned index;
};

enum { MAX_MAPPINGS = 64 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct handle handles[EMU_MAX_HANDLES];
/* fd + 1 of each used handle, 0 when free; see the locking note at the top. */
static atomic_int handle_fds[EMU_MAX_HANDLES];
static struct mapping mappings[MAX_MAPPINGS];
static atomic_uint mapping_count;

/* The camera as the system sees it: the current device, or none during an unplug. */
static struct {
    struct device *current;
    unsigned unplugs;
    int64_t gone_at;
} camera;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct timespec to_timespec(int64_t ns) {
    struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
    return ts;
}

static bool format_supported(uint32_t pixelformat) {
    for (unsigned i = 0; i < emu_knobs.format_count; i++) {
        if (emu_knobs.formats[i] == pixelformat) {
            return true;
        }
    }
    return false;
}

static bool size_supported(uint32_t width, uint32_t height) {
    for (int i = 0; i < EMU_SIZE_COUNT; i++) {
        if (frame_sizes[i].width == width && frame_sizes[i].height == height) {
            return true;
        }
    }
    return false;
}

static bool rate_supported(unsigned rate) {
    for (unsigned i = 0; i < emu_knobs.rate_count; i++) {
        if (emu_knobs.rates[i] == rate) {
            return true;
        }
    }
    return false;
}

/* uvcvideo's choice of frame size for TRY_FMT/S_FMT (uvc_v4l2_try_format()): the size whose
 * area differs least from the requested one. */
static void nearest_size(uint32_t width, uint32_t height, uint32_t *out_width,
                         uint32_t *out_height) {
    uint64_t best = UINT64_MAX;
    *out_width = frame_sizes[0].width;
    *out_height = frame_sizes[0].height;
    for (int i = 0; i < EMU_SIZE_COUNT; i++) {
        uint64_t w = frame_sizes[i].width;
        uint64_t h = frame_sizes[i].height;
        uint64_t overlap = (w < width ? w : width) * (uint64_t)(h < height ? h : height);
        uint64_t distance = w * h + (uint64_t)width * height - 2 * overlap;
        if (distance < best) {
            best = distance;
            *out_width = (uint32_t)w;
            *out_height = (uint32_t)h;
        }
    }
}

static uint32_t size_image(uint32_t pixelformat, uint32_t width, uint32_t height) {
    /* RGB24 is 3 bytes a pixel, YUYV 2; UVC cameras report YUYV's size as the maximum for
     * MJPEG (dwMaxVideoFrameBufferSize), which a JPEG of this pattern never comes near. */
    return width * height * (pixelformat == V4L2_PIX_FMT_RGB24 ? 3 : 2);
}

/* V4L2 API "Image Formats": bytesperline is 0 for compressed formats. */
static uint32_t bytes_per_line(uint32_t pixelformat, uint32_t width) {
    switch (pixelformat) {
    case V4L2_PIX_FMT_YUYV:
        return width * 2;
    case V4L2_PIX_FMT_RGB24:
        return width * 3;
    default:
        return 0;
    }
}

static void fill_pix_format(struct v4l2_pix_format *pix, uint32_t pixelformat, uint32_t width,
                            uint32_t height) {
    memset(pix, 0, sizeof *pix);
    pix->width = width;
    pix->height = height;
    pix->pixelformat = pixelformat;
    pix->field = V4L2_FIELD_NONE;
    pix->bytesperline = bytes_per_line(pixelformat, width);
    pix->sizeimage = size_image(pixelformat, width, height);
    /* UVC's default colour matching descriptor means sRGB primaries (uvc_driver.c). */
    pix->colorspace = V4L2_COLORSPACE_SRGB;
    /* V4L2 API "Single-planar format structure": with V4L2_CAP_EXT_PIX_FORMAT the core sets
     * priv to the magic value to say the extended fields are valid. */
    pix->priv = V4L2_PIX_FMT_PRIV_MAGIC;
}

static unsigned nearest_rate(uint32_t numerator, uint32_t denominator) {
    /* V4L2 API, VIDIOC_S_PARM: "To reset manually applications can just set this field to
     * zero" - back to the nominal (default) rate. */
    if (numerator == 0 || denominator == 0) {
        return emu_knobs.default_rate;
    }
    double wanted = (double)numerator / denominator;
    unsigned best = emu_knobs.rates[0];
    double best_distance = -1;
    for (unsigned i = 0; i < emu_knobs.rate_count; i++) {
        double distance = 1.0 / emu_knobs.rates[i] - wanted;
        if (distance < 0) {
            distance = -distance;
        }
        if (best_distance < 0 || distance < best_distance) {
            best_distance = distance;
            best = emu_knobs.rates[i];
        }
    }
    return best;
}

/* ---- The state file: format, rate and controls shared by the processes of one test. ---- */

static bool state_path(char *path, size_t size) {
    if (emu_knobs.state_dir[0] == '\0') {
        return false;
    }
    return snprintf(path, size, "%s/%s.state", emu_knobs.state_dir, emu_knobs.device_name) <
           (int)size;
}

static void state_load(struct device *device) {
    char path[512];
    if (!state_path(path, sizeof path)) {
        return;
    }
    FILE *file = fopen(path, "r");
    if (file == NULL) {
        return;
    }
    char key[64];
    long long value;
    uint32_t width = device->width;
    uint32_t height = device->height;
    while (fscanf(file, "%63s %lli", key, &value) == 2) {
        if (strcmp(key, "pixelformat") == 0 && format_supported((uint32_t)value)) {
            device->pixelformat = (uint32_t)value;
        } else if (strcmp(key, "width") == 0) {
            width = (uint32_t)value;
        } else if (strcmp(key, "height") == 0) {
            height = (uint32_t)value;
        } else if (strcmp(key, "fps") == 0 && rate_supported((unsigned)value)) {
            device->rate = (unsigned)value;
        } else if (strncmp(key, "control.", 8) == 0) {
            int index = emu_controls_index((uint32_t)strtoul(key + 8, NULL, 0));
            if (index >= 0) {
                emu_controls_restore(&device->controls, index, (int32_t)value);
            }
        }
    }
    fclose(file);
    if (size_supported(width, height)) {
        device->width = width;
        device->height = height;
    }
}

/* Written to a temporary file and renamed, so a concurrent reader sees the old or new state. */
static void state_save(const struct device *device) {
    char path[512];
    char temporary[560];
    if (!state_path(path, sizeof path)) {
        return;
    }
    snprintf(temporary, sizeof temporary, "%s.%ld.tmp", path, (long)getpid());
    FILE *file = fopen(temporary, "w");
    if (file == NULL) {
        emu_log("emucam: cannot write %s: %s", temporary, strerror(errno));
        return;
    }
    fprintf(file, "pixelformat 0x%08x\nwidth %u\nheight %u\nfps %u\n", device->pixelformat,
            device->width, device->height, device->rate);
    for (int i = 0; i < EMU_CTRL_COUNT; i++) {
        fprintf(file, "control.0x%08x %d\n", emu_controls_id(i), device->controls.value[i]);
    }
    if (fclose(file) != 0 || rename(temporary, path) != 0) {
        emu_log("emucam: cannot write %s: %s", path, strerror(errno));
        unlink(temporary);
    }
}

/* ---- Devices and the camera. ---- */

static void init_monotonic_cond(pthread_cond_t *cond) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
}

static struct device *device_new(void) {
    struct device *device = calloc(1, sizeof *device);
    if (device == NULL) {
        return NULL;
    }
    device->refs = 1;
    device->memfd = -1;
    device->owner_lock_fd = -1;
    device->unplug_armed = emu_knobs.unplug_after > 0 &&
                           (emu_knobs.unplug_times == EMU_UNLIMITED ||
                            camera.unplugs < emu_knobs.unplug_times);
    device->pixelformat = emu_knobs.formats[0];
    device->width = frame_sizes[0].width;
    device->height = frame_sizes[0].height;
    device->rate = emu_knobs.default_rate;
    emu_controls_reset(&device->controls);
    state_load(device);
    init_monotonic_cond(&device->wake);
    init_monotonic_cond(&device->done);
    init_monotonic_cond(&device->stopped);
    return device;
}

/* Frees the buffers. Programs may keep their mappings: they map the memfd, which lives on
 * until the last mapping goes (videobuf2 "orphaned buffers",
 * V4L2_BUF_CAP_SUPPORTS_ORPHANED_BUFS). */
static void free_buffers(struct device *device) {
    if (device->memory != NULL) {
        emu_libc.munmap(device->memory, device->memory_size);
        device->memory = NULL;
    }
    if (device->memfd >= 0) {
        emu_libc.close(device->memfd);
        device->memfd = -1;
    }
    device->buffer_count = 0;
    device->allocation++;
}

static void device_unref(struct device *device) {
    if (--device->refs > 0) {
        return;
    }
    free_buffers(device);
    if (device->owner_lock_fd >= 0) {
        emu_libc.close(device->owner_lock_fd);
    }
    for (unsigned i = 0; i < MAX_MAPPINGS; i++) {
        if (mappings[i].device == device) {
            mappings[i].device = NULL;
            mappings[i].address = NULL;
            atomic_fetch_sub(&mapping_count, 1);
        }
    }
    emu_frame_source_free(device->source);
    pthread_cond_destroy(&device->wake);
    pthread_cond_destroy(&device->done);
    pthread_cond_destroy(&device->stopped);
    free(device);
}

/* True while the path is gone after an unplug; afterwards the old device is let go so the next
 * open() meets a fresh one. */
static bool camera_absent(void) {
    if (camera.current == NULL || !camera.current->gone) {
        return false;
    }
    if (now_ns() - camera.gone_at < (int64_t)(emu_knobs.unplug_seconds * 1e9)) {
        return true;
    }
    device_unref(camera.current);
    camera.current = NULL;
    return false;
}

/* The unplug (called by the frame thread). Closing the other end of each handle's socket pair
 * while it still holds unread bytes makes the program's descriptor report
 * POLLERR | POLLHUP (plus POLLIN), as v4l2_poll() does for an unregistered device; every
 * poll, select and epoll registration on the descriptor sees it. */
static void unplug(struct device *device) {
    device->gone = true;
    camera.unplugs++;
    camera.gone_at = now_ns();
    for (int i = 0; i < EMU_MAX_HANDLES; i++) {
        if (handles[i].used && handles[i].device == device && handles[i].notify_fd >= 0) {
            emu_libc.close(handles[i].notify_fd);
            handles[i].notify_fd = -1;
        }
    }
    pthread_cond_broadcast(&device->done);
    emu_log("emucam: %s unplugged after %llu frames", emu_knobs.device_path,
            (unsigned long long)device->frames_delivered);
}

int emu_device_presence(void) {
    pthread_mutex_lock(&lock);
    bool absent = camera_absent();
    pthread_mutex_unlock(&lock);
    return absent ? ENOENT : 0;
}

/* ---- fork() ---- */

/* A forked child has no frame thread, so it does not inherit the camera: its copies of the
 * descriptors are left as the plain sockets they are, and the lock (held across fork() so no
 * other thread leaves it locked mid-update) is released in both processes. */
static void lock_before_fork(void) {
    pthread_mutex_lock(&lock);
}

static void unlock_in_parent(void) {
    pthread_mutex_unlock(&lock);
}

static void forget_camera_in_child(void) {
    for (int i = 0; i < EMU_MAX_HANDLES; i++) {
        handles[i].used = false;
        atomic_store(&handle_fds[i], 0);
    }
    memset(mappings, 0, sizeof mappings);
    atomic_store(&mapping_count, 0);
    camera.current = NULL;
    pthread_mutex_unlock(&lock);
}

void emu_device_register_fork_handlers(void) {
    pthread_atfork(lock_before_fork, unlock_in_parent, forget_camera_in_child);
}

/* ---- Handles. ---- */

static struct handle *handle_for_fd(int fd) {
    for (int i = 0; i < EMU_MAX_HANDLES; i++) {
        if (handles[i].used && handles[i].fd == fd) {
            return &handles[i];
        }
    }
    return NULL;
}

bool emu_device_owns_fd(int fd) {
    for (int i = 0; i < EMU_MAX_HANDLES; i++) {
        if (atomic_load_explicit(&handle_fds[i], memory_order_acquire) == fd + 1) {
            return true;
        }
    }
    return false;
}

/* The descriptor is a socket: readable when a filled buffer waits (one byte per buffer), never
 * writable (its send buffer is filled once here, so poll() does not report POLLOUT, which a
 * capture device never does), and POLLERR | POLLHUP after the unplug. */
static int open_socket_pair(int flags, int *program_fd, int *notify_fd) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        return errno;
    }
    int smallest = 1;
    setsockopt(pair[0], SOL_SOCKET, SO_SNDBUF, &smallest, sizeof smallest);
    for (int i = 0; i < 4096; i++) {
        if (send(pair[0], "", 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1) {
            break;
        }
    }
    fcntl(pair[1], F_SETFL, O_NONBLOCK);
    if (!(flags & O_CLOEXEC)) {
        fcntl(pair[0], F_SETFD, 0);
    }
    if (flags & O_NONBLOCK) {
        fcntl(pair[0], F_SETFL, O_NONBLOCK);
    }
    *program_fd = pair[0];
    *notify_fd = pair[1];
    return 0;
}

int emu_device_open(int flags) {
    int open_error = emu_open_error_now();
    if (open_error != 0) {
        emu_log("emucam: open %s -> %s (EMUCAM_OPEN_ERROR%s)", emu_knobs.device_path,
                emu_errno_name(open_error), emu_knobs.open_error != 0 ? "" : "_FILE");
        errno = open_error;
        return -1;
    }
    if (flags & O_DIRECTORY) {
        errno = ENOTDIR;
        return -1;
    }
    pthread_mutex_lock(&lock);
    int error = 0;
    int slot = -1;
    for (int i = 0; i < EMU_MAX_HANDLES && slot < 0; i++) {
        if (!handles[i].used) {
            slot = i;
        }
    }
    if (camera_absent()) {
        error = ENOENT;
    } else if (slot < 0) {
        error = EMFILE;
    } else if (camera.current == NULL && (camera.current = device_new()) == NULL) {
        error = ENOMEM;
    }
    int fd = -1;
    int notify_fd = -1;
    if (error == 0) {
        error = open_socket_pair(flags, &fd, &notify_fd);
    }
    if (error == 0) {
        struct handle *handle = &handles[slot];
        memset(handle, 0, sizeof *handle);
        handle->used = true;
        handle->fd = fd;
        handle->notify_fd = notify_fd;
        handle->device = camera.current;
        handle->priority = V4L2_PRIORITY_DEFAULT;
        camera.current->refs++;
        atomic_store_explicit(&handle_fds[slot], fd + 1, memory_order_release);
    }
    pthread_mutex_unlock(&lock);
    emu_log("emucam: open %s -> %d%s%s", emu_knobs.device_path, error ? -1 : fd,
            error ? " " : "", error ? emu_errno_name(error) : "");
    if (error != 0) {
        errno = error;
        return -1;
    }
    return fd;
}

/* ---- Streaming. ---- */

static struct buffer *oldest(struct device *device, enum buffer_state state, unsigned *index) {
    struct buffer *found = NULL;
    for (unsigned i = 0; i < device->buffer_count; i++) {
        struct buffer *buffer = &device->buffers[i];
        if (buffer->state == state && (found == NULL || buffer->order < found->order)) {
            found = buffer;
            *index = i;
        }
    }
    return found;
}

static struct handle *streaming_handle(struct device *device) {
    return device->privileged;
}

/* One frame: a queued buffer is filled and moved to the outgoing queue. A tick with no queued
 * buffer drops the frame, which still uses up a sequence number (V4L2 API, struct v4l2_buffer
 * "sequence": gaps mean lost frames). Called with the lock held; drops it while drawing. */
static void deliver_frame(struct device *device, uint32_t sequence) {
    if (emu_knobs.stall_after > 0 && device->stream_frames >= emu_knobs.stall_after) {
        return;
    }
    unsigned index;
    struct buffer *buffer = oldest(device, BUFFER_QUEUED, &index);
    if (buffer == NULL) {
        return;
    }
    uint64_t count = ++device->stream_frames;
    bool mjpeg = device->pixelformat == V4L2_PIX_FMT_MJPEG;
    struct emu_frame_request request = {
        .pixelformat = device->pixelformat,
        .width = device->width,
        .height = device->height,
        .brightness = device->controls.value[EMU_CTRL_BRIGHTNESS],
        .contrast = device->controls.value[EMU_CTRL_CONTRAST],
        .saturation = device->controls.value[EMU_CTRL_SATURATION],
        .phase = sequence % EMU_RING_FRAMES,
        .strip_dht = mjpeg && emu_knobs.no_dht_every > 0 && count % emu_knobs.no_dht_every == 0,
        .truncate = mjpeg && emu_knobs.corrupt_every > 0 && count % emu_knobs.corrupt_every == 0,
        .stamp = mjpeg && emu_knobs.stamp,
    };
    buffer->state = BUFFER_FILLING;
    uint8_t *memory = device->memory + device->buffer_stride * index;
    size_t capacity = device->buffer_length;
    pthread_mutex_unlock(&lock);

    /* The timestamp is taken when drawing starts: V4L2_BUF_FLAG_TSTAMP_SRC_SOE, "start of
     * exposure", which is what uvcvideo reports. */
    struct timespec taken;
    clock_gettime(CLOCK_MONOTONIC, &taken);
    bool error;
    size_t used = emu_frame_render(device->source, &request, memory, capacity, &error);

    pthread_mutex_lock(&lock);
    if (device->stopping) {
        return;
    }
    if (request.stamp && !error) {
        /* Under the lock, just before DONE: DQBUF can hand the buffer out from this moment,
         * so the stamp is the frame's "capture" time as a V4L2 program sees it. */
        emu_frame_stamp(memory, used);
    }
    buffer->state = BUFFER_DONE;
    buffer->order = ++device->order_counter;
    buffer->bytesused = (uint32_t)used;
    buffer->sequence = sequence;
    buffer->error = error;
    buffer->timestamp.tv_sec = taken.tv_sec;
    buffer->timestamp.tv_usec = taken.tv_nsec / 1000;
    device->frames_delivered++;
    struct handle *handle = streaming_handle(device);
    if (handle != NULL && handle->notify_fd >= 0) {
        ssize_t sent = send(handle->notify_fd, "", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void)sent;
    }
    pthread_cond_broadcast(&device->done);
}

/* Frames at the configured rate, on absolute CLOCK_MONOTONIC deadlines so the rate does not
 * drift with the time spent drawing. After a delay (the process was stopped, the machine was
 * busy) missed ticks are skipped, not delivered in a burst, as a sensor would have done. */
static void *frame_thread(void *argument) {
    struct device *device = argument;
    /* Named, so that a benchmark reading /proc/PID/task can tell the emulator's cost (it runs
     * inside the program under test) from the program's own threads. */
    pthread_setname_np(pthread_self(), "emucam-frames");
    pthread_mutex_lock(&lock);
    int64_t interval = 1000000000 / device->rate;
    int64_t start = now_ns();
    int64_t tick = 0;
    for (;;) {
        int64_t deadline = start + (tick + 1) * interval;
        struct timespec until = to_timespec(deadline);
        while (!device->stopping && now_ns() < deadline) {
            pthread_cond_timedwait(&device->wake, &lock, &until);
        }
        if (device->stopping) {
            break;
        }
        tick = (now_ns() - start) / interval;
        if (device->unplug_armed && device->frames_delivered >= emu_knobs.unplug_after) {
            unplug(device);
            break;
        }
        deliver_frame(device, (uint32_t)(tick - 1));
        if (device->stopping) {
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* Stops the frame thread and returns every buffer to the dequeued state (V4L2 API,
 * VIDIOC_STREAMOFF: "all buffers ... are removed from the incoming and outgoing queues").
 * Called with the lock held; drops it while joining the thread. */
static void stream_stop(struct device *device) {
    if (device->thread_running) {
        if (device->stopping) {
            while (device->thread_running) {
                pthread_cond_wait(&device->stopped, &lock);
            }
        } else {
            device->stopping = true;
            pthread_cond_broadcast(&device->wake);
            pthread_cond_broadcast(&device->done);
            pthread_t thread = device->thread;
            pthread_mutex_unlock(&lock);
            pthread_join(thread, NULL);
            pthread_mutex_lock(&lock);
            device->thread_running = false;
            device->stopping = false;
            pthread_cond_broadcast(&device->stopped);
        }
    }
    device->streaming = false;
    for (unsigned i = 0; i < device->buffer_count; i++) {
        device->buffers[i].state = BUFFER_DEQUEUED;
    }
    struct handle *handle = streaming_handle(device);
    if (!device->gone && handle != NULL) {
        char drain[EMU_MAX_BUFFERS * 2];
        while (recv(handle->fd, drain, sizeof drain, MSG_DONTWAIT) > 0) {
        }
    }
}

static int stream_start(struct device *device) {
    if (device->streaming) {
        return 0;
    }
    if (device->source == NULL && (device->source = emu_frame_source_new()) == NULL) {
        return ENOMEM;
    }
    device->streaming = true;
    device->stream_frames = 0;
    /* The frame thread blocks every signal, so a process-directed signal is never delivered to
     * it: programs that block signals and read them from a signalfd (as shutterd does) would
     * otherwise die of a SIGTERM taken by this thread with the default action. */
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    int error = pthread_create(&device->thread, NULL, frame_thread, device);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (error != 0) {
        device->streaming = false;
        return error;
    }
    device->thread_running = true;
    return 0;
}

/* Another process that loaded the library with the same EMUCAM_STATE_DIR owns the stream when
 * it holds the flock of <state_dir>/<node>.owner: what uvcvideo answers a second program is
 * EBUSY from the ioctl that would claim the device, while its open() succeeds. The lock goes
 * with the descriptor, so a process that ends (or is killed) frees the camera. */
static int lock_owner_file(struct device *device) {
    if (emu_knobs.state_dir[0] == '\0') {
        return 0;
    }
    char path[512];
    if (snprintf(path, sizeof path, "%s/%s.owner", emu_knobs.state_dir, emu_knobs.device_name) >=
        (int)sizeof path) {
        return ENAMETOOLONG;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        int error = errno;
        emu_log("emucam: cannot open %s: %s", path, strerror(error));
        return error;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int error = errno == EWOULDBLOCK ? EBUSY : errno;
        emu_libc.close(fd);
        emu_log("emucam: %s is held by another process -> %s", emu_knobs.device_path,
                emu_errno_name(error));
        return error;
    }
    device->owner_lock_fd = fd;
    return 0;
}

static void release_privileges(struct device *device) {
    device->privileged = NULL;
    if (device->owner_lock_fd >= 0) {
        emu_libc.close(device->owner_lock_fd); /* drops the flock */
        device->owner_lock_fd = -1;
    }
}

int emu_device_close(int fd) {
    pthread_mutex_lock(&lock);
    struct handle *handle = handle_for_fd(fd);
    int notify_fd = -1;
    if (handle != NULL) {
        struct device *device = handle->device;
        if (device->privileged == handle) {
            stream_stop(device);
            free_buffers(device);
            release_privileges(device);
        }
        notify_fd = handle->notify_fd;
        handle->used = false;
        atomic_store_explicit(&handle_fds[handle - handles], 0, memory_order_release);
        device_unref(device);
    }
    pthread_mutex_unlock(&lock);
    emu_log("emucam: close %d", fd);
    if (notify_fd >= 0) {
        emu_libc.close(notify_fd);
    }
    return emu_libc.close(fd);
}

/* ---- The ioctls. ---- */

static int acquire_privileges(struct handle *handle) {
    struct device *device = handle->device;
    if (device->privileged != NULL && device->privileged != handle) {
        return EBUSY;
    }
    if (device->privileged == NULL) {
        int error = lock_owner_file(device);
        if (error != 0) {
            return error;
        }
    }
    device->privileged = handle;
    return 0;
}

/* The buffer and streaming ioctls fail with EBUSY only while another handle owns the
 * buffers (videobuf2, vb2_queue_is_busy()); without an owner there are no buffers, and the
 * ioctl fails or succeeds as the V4L2 API says for that case. */
static int require_privileges(struct handle *handle) {
    struct device *device = handle->device;
    return device->privileged == NULL || device->privileged == handle ? 0 : EBUSY;
}

static uint32_t kernel_version(void) {
    struct utsname name;
    unsigned major = 0, minor = 0, patch = 0;
    if (uname(&name) == 0) {
        sscanf(name.release, "%u.%u.%u", &major, &minor, &patch);
    }
    return (major << 16) | (minor << 8) | (patch > 255 ? 255 : patch);
}

static int query_capabilities(struct v4l2_capability *capability) {
    memset(capability, 0, sizeof *capability);
    strncpy((char *)capability->driver, "uvcvideo", sizeof capability->driver - 1);
    strncpy((char *)capability->card, "Emulated UVC Camera", sizeof capability->card - 1);
    snprintf((char *)capability->bus_info, sizeof capability->bus_info, "usb-0000:00:14.0-%u",
             emu_knobs.minor + 1);
    capability->version = kernel_version();
    /* V4L2 API, VIDIOC_QUERYCAP: the core adds V4L2_CAP_EXT_PIX_FORMAT for every device. */
    capability->device_caps =
        V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING | V4L2_CAP_EXT_PIX_FORMAT;
    capability->capabilities = capability->device_caps | V4L2_CAP_DEVICE_CAPS;
    return 0;
}

static int enum_format(struct v4l2_fmtdesc *description) {
    if (description->type != V4L2_BUF_TYPE_VIDEO_CAPTURE ||
        description->index >= emu_knobs.format_count) {
        return EINVAL;
    }
    uint32_t index = description->index;
    uint32_t format = emu_knobs.formats[index];
    memset(description, 0, sizeof *description);
    description->index = index;
    description->type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    description->pixelformat = format;
    /* The descriptions the core fills in (v4l2-ioctl.c, v4l_fill_fmtdesc()). */
    if (format == V4L2_PIX_FMT_MJPEG) {
        description->flags = V4L2_FMT_FLAG_COMPRESSED;
        strncpy((char *)description->description, "Motion-JPEG",
                sizeof description->description - 1);
    } else if (format == V4L2_PIX_FMT_RGB24) {
        strncpy((char *)description->description, "24-bit RGB 8-8-8",
                sizeof description->description - 1);
    } else {
        strncpy((char *)description->description, "YUYV 4:2:2",
                sizeof description->description - 1);
    }
    return 0;
}

static int enum_frame_sizes(struct v4l2_frmsizeenum *sizes) {
    if (!format_supported(sizes->pixel_format) || sizes->index >= EMU_SIZE_COUNT) {
        return EINVAL;
    }
    uint32_t index = sizes->index;
    uint32_t format = sizes->pixel_format;
    memset(sizes, 0, sizeof *sizes);
    sizes->index = index;
    sizes->pixel_format = format;
    sizes->type = V4L2_FRMSIZE_TYPE_DISCRETE;
    sizes->discrete.width = frame_sizes[index].width;
    sizes->discrete.height = frame_sizes[index].height;
    return 0;
}

static int enum_frame_intervals(struct v4l2_frmivalenum *intervals) {
    if (!format_supported(intervals->pixel_format) ||
        !size_supported(intervals->width, intervals->height) ||
        intervals->index >= emu_knobs.rate_count) {
        return EINVAL;
    }
    uint32_t index = intervals->index;
    intervals->type = V4L2_FRMIVAL_TYPE_DISCRETE;
    intervals->discrete.numerator = 1;
    intervals->discrete.denominator = emu_knobs.rates[index];
    memset(intervals->reserved, 0, sizeof intervals->reserved);
    return 0;
}

static int get_format(struct device *device, struct v4l2_format *format) {
    if (format->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) {
        return EINVAL;
    }
    fill_pix_format(&format->fmt.pix, device->pixelformat, device->width, device->height);
    return 0;
}

/* TRY_FMT and S_FMT. uvcvideo takes the default format for an unsupported pixel format
 * (uvc_v4l2_try_format(): "use the default format otherwise") and the nearest frame size. */
static int set_format(struct handle *handle, struct v4l2_format *format, bool apply) {
    struct device *device = handle->device;
    if (format->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) {
        return EINVAL;
    }
    if (apply) {
        int error = acquire_privileges(handle);
        if (error != 0) {
            return error;
        }
    }
    uint32_t pixelformat = format_supported(format->fmt.pix.pixelformat)
                               ? format->fmt.pix.pixelformat
                               : emu_knobs.formats[0];
    uint32_t width, height;
    nearest_size(format->fmt.pix.width, format->fmt.pix.height, &width, &height);
    if (apply) {
        /* uvcvideo: the format cannot change while buffers are allocated. */
        if (device->buffer_count > 0) {
            return EBUSY;
        }
        device->pixelformat = pixelformat;
        device->width = width;
        device->height = height;
        state_save(device);
    }
    fill_pix_format(&format->fmt.pix, pixelformat, width, height);
    return 0;
}

static int get_parameters(struct device *device, struct v4l2_streamparm *parameters) {
    if (parameters->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) {
        return EINVAL;
    }
    memset(&parameters->parm, 0, sizeof parameters->parm);
    parameters->parm.capture.capability = V4L2_CAP_TIMEPERFRAME;
    parameters->parm.capture.timeperframe.numerator = 1;
    parameters->parm.capture.timeperframe.denominator = device->rate;
    return 0;
}

static int set_parameters(struct handle *handle, struct v4l2_streamparm *parameters) {
    struct device *device = handle->device;
    if (parameters->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) {
        return EINVAL;
    }
    int error = acquire_privileges(handle);
    if (error != 0) {
        return error;
    }
    /* uvcvideo refuses a new frame interval while streaming (uvc_v4l2_set_streamparm()). */
    if (device->streaming) {
        return EBUSY;
    }
    device->rate = nearest_rate(parameters->parm.capture.timeperframe.numerator,
                                parameters->parm.capture.timeperframe.denominator);
    state_save(device);
    return get_parameters(device, parameters);
}

static int request_buffers(struct handle *handle, struct v4l2_requestbuffers *request) {
    struct device *device = handle->device;
    if (request->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || request->memory != V4L2_MEMORY_MMAP) {
        return EINVAL;
    }
    int error = acquire_privileges(handle);
    if (error != 0) {
        return error;
    }
    /* V4L2 API, VIDIOC_REQBUFS: EBUSY while streaming. */
    if (device->streaming) {
        return EBUSY;
    }
    free_buffers(device);
    request->capabilities = V4L2_BUF_CAP_SUPPORTS_MMAP | V4L2_BUF_CAP_SUPPORTS_ORPHANED_BUFS;
    request->flags = 0;
    memset(request->reserved, 0, sizeof request->reserved);
    if (request->count == 0) {
        /* "Applications can call VIDIOC_REQBUFS again to change the number of buffers ...
         * A count value of zero frees or orphans all buffers"; uvcvideo then drops the
         * handle's privileges. */
        release_privileges(device);
        return 0;
    }
    unsigned count = request->count > EMU_MAX_BUFFERS ? EMU_MAX_BUFFERS : request->count;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint32_t length = size_image(device->pixelformat, device->width, device->height);
    size_t stride = (length + page - 1) / page * page;
    int memfd = memfd_create("emucam-buffers", MFD_CLOEXEC);
    if (memfd < 0) {
        return ENOMEM;
    }
    if (ftruncate(memfd, (off_t)(stride * count)) != 0) {
        emu_libc.close(memfd);
        return ENOMEM;
    }
    void *memory =
        emu_libc.mmap(NULL, stride * count, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    if (memory == MAP_FAILED) {
        emu_libc.close(memfd);
        return ENOMEM;
    }
    device->memfd = memfd;
    device->memory = memory;
    device->memory_size = stride * count;
    device->buffer_stride = stride;
    device->buffer_length = length;
    device->buffer_count = count;
    memset(device->buffers, 0, sizeof device->buffers);
    request->count = count;
    return 0;
}

static void describe_buffer(struct device *device, unsigned index, struct v4l2_buffer *out) {
    const struct buffer *buffer = &device->buffers[index];
    memset(out, 0, sizeof *out);
    out->index = index;
    out->type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    out->memory = V4L2_MEMORY_MMAP;
    out->bytesused = buffer->bytesused;
    out->flags = V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC | V4L2_BUF_FLAG_TSTAMP_SRC_SOE;
    if (buffer->state == BUFFER_QUEUED || buffer->state == BUFFER_FILLING) {
        out->flags |= V4L2_BUF_FLAG_QUEUED;
    } else if (buffer->state == BUFFER_DONE) {
        out->flags |= V4L2_BUF_FLAG_DONE;
    }
    if (buffer->mappings > 0) {
        out->flags |= V4L2_BUF_FLAG_MAPPED;
    }
    if (buffer->error) {
        out->flags |= V4L2_BUF_FLAG_ERROR;
    }
    out->field = V4L2_FIELD_NONE;
    out->timestamp = buffer->timestamp;
    out->sequence = buffer->sequence;
    out->m.offset = (uint32_t)(device->buffer_stride * index);
    out->length = device->buffer_length;
}

/* Checks shared by QUERYBUF, QBUF and DQBUF (videobuf2: vb2_queue_or_prepare_buf()). */
static int check_buffer(struct handle *handle, const struct v4l2_buffer *buffer, bool check_index,
                        bool check_memory) {
    int error = require_privileges(handle);
    if (error != 0) {
        return error;
    }
    struct device *device = handle->device;
    if (buffer->type != V4L2_BUF_TYPE_VIDEO_CAPTURE) {
        return EINVAL;
    }
    if (check_memory && buffer->memory != V4L2_MEMORY_MMAP) {
        return EINVAL;
    }
    if (check_index && buffer->index >= device->buffer_count) {
        return EINVAL;
    }
    return 0;
}

static int query_buffer(struct handle *handle, struct v4l2_buffer *buffer) {
    int error = check_buffer(handle, buffer, true, false);
    if (error == 0) {
        describe_buffer(handle->device, buffer->index, buffer);
    }
    return error;
}

static int queue_buffer(struct handle *handle, struct v4l2_buffer *buffer) {
    int error = check_buffer(handle, buffer, true, true);
    if (error != 0) {
        return error;
    }
    struct device *device = handle->device;
    struct buffer *state = &device->buffers[buffer->index];
    /* videobuf2 refuses a buffer that is already queued or not yet dequeued. */
    if (state->state != BUFFER_DEQUEUED) {
        return EINVAL;
    }
    state->state = BUFFER_QUEUED;
    state->order = ++device->order_counter;
    state->error = false;
    describe_buffer(device, buffer->index, buffer);
    return 0;
}

static bool is_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    return flags >= 0 && (flags & O_NONBLOCK);
}

/* V4L2 API, VIDIOC_DQBUF: "By default VIDIOC_DQBUF blocks when no buffer is in the outgoing
 * queue. When the O_NONBLOCK flag was given to the open() function, VIDIOC_DQBUF returns
 * immediately with an EAGAIN error code when no buffer is available." Not streaming is EINVAL
 * (videobuf2: "streaming off, will not wait for buffers"). */
/* Buffers dequeued since the library loaded, for EMUCAM_HANG_AFTER. */
static unsigned dequeued_total;
/* Never signalled: a hung DQBUF waits on it for good (it releases the lock, as a driver stuck
 * in the kernel would leave the rest of the process running). */
static pthread_cond_t never_signalled = PTHREAD_COND_INITIALIZER;

static int dequeue_buffer(struct handle *handle, struct v4l2_buffer *buffer) {
    int error = check_buffer(handle, buffer, false, false);
    if (error != 0) {
        return error;
    }
    if (emu_knobs.hang_after > 0 && dequeued_total >= emu_knobs.hang_after) {
        for (;;) {
            pthread_cond_wait(&never_signalled, &lock);
        }
    }
    struct device *device = handle->device;
    unsigned index;
    for (;;) {
        if (device->gone) {
            return ENODEV;
        }
        if (!device->streaming || device->stopping) {
            return EINVAL;
        }
        if (oldest(device, BUFFER_DONE, &index) != NULL) {
            break;
        }
        if (is_nonblocking(handle->fd)) {
            return EAGAIN;
        }
        pthread_cond_wait(&device->done, &lock);
    }
    device->buffers[index].state = BUFFER_DEQUEUED;
    dequeued_total++;
    char byte;
    ssize_t received = recv(handle->fd, &byte, 1, MSG_DONTWAIT);
    (void)received;
    describe_buffer(device, index, buffer);
    return 0;
}

static int stream_on(struct handle *handle, const int *type) {
    int error = require_privileges(handle);
    if (error != 0) {
        return error;
    }
    if (*type != V4L2_BUF_TYPE_VIDEO_CAPTURE) {
        return EINVAL;
    }
    /* videobuf2: "no buffers have been allocated" is EINVAL. */
    if (handle->device->buffer_count == 0) {
        return EINVAL;
    }
    return stream_start(handle->device);
}

static int stream_off(struct handle *handle, const int *type) {
    int error = require_privileges(handle);
    if (error != 0) {
        return error;
    }
    if (*type != V4L2_BUF_TYPE_VIDEO_CAPTURE) {
        return EINVAL;
    }
    stream_stop(handle->device);
    return 0;
}

static int enum_input(struct v4l2_input *input) {
    if (input->index != 0) {
        return EINVAL;
    }
    memset(input, 0, sizeof *input);
    /* uvcvideo names the single input after its input terminal, "Camera 1". */
    strncpy((char *)input->name, "Camera 1", sizeof input->name - 1);
    input->type = V4L2_INPUT_TYPE_CAMERA;
    return 0;
}

/* V4L2 API, VIDIOC_G_PRIORITY: the highest priority of all handles of the device. Priorities
 * are recorded but not enforced. */
static uint32_t device_priority(struct device *device) {
    uint32_t highest = V4L2_PRIORITY_UNSET;
    for (int i = 0; i < EMU_MAX_HANDLES; i++) {
        if (handles[i].used && handles[i].device == device && handles[i].priority > highest) {
            highest = handles[i].priority;
        }
    }
    return highest;
}

static int control_ioctl(struct device *device, uint32_t request, void *arg) {
    bool changed;
    int error = emu_controls_ioctl(&device->controls, request, arg, &changed);
    if (changed) {
        state_save(device);
    }
    return error;
}

/* The ioctls the device implements besides the control ioctls. */
static const uint32_t device_requests[] = {
    (uint32_t)VIDIOC_QUERYCAP,   (uint32_t)VIDIOC_ENUM_FMT,    (uint32_t)VIDIOC_ENUM_FRAMESIZES,
    (uint32_t)VIDIOC_ENUM_FRAMEINTERVALS, (uint32_t)VIDIOC_G_FMT, (uint32_t)VIDIOC_TRY_FMT,
    (uint32_t)VIDIOC_S_FMT,      (uint32_t)VIDIOC_G_PARM,      (uint32_t)VIDIOC_S_PARM,
    (uint32_t)VIDIOC_REQBUFS,    (uint32_t)VIDIOC_QUERYBUF,    (uint32_t)VIDIOC_QBUF,
    (uint32_t)VIDIOC_DQBUF,      (uint32_t)VIDIOC_STREAMON,    (uint32_t)VIDIOC_STREAMOFF,
    (uint32_t)VIDIOC_ENUMINPUT,  (uint32_t)VIDIOC_G_INPUT,     (uint32_t)VIDIOC_S_INPUT,
    (uint32_t)VIDIOC_G_PRIORITY, (uint32_t)VIDIOC_S_PRIORITY,
};

/* The ioctls that change the device and so are refused to a handle whose priority is below
 * the highest one (V4L2 API "Application Priority"; v4l2-ioctl.c marks them INFO_FL_PRIO). */
static const uint32_t priority_requests[] = {
    (uint32_t)VIDIOC_S_FMT,      (uint32_t)VIDIOC_S_PARM,    (uint32_t)VIDIOC_REQBUFS,
    (uint32_t)VIDIOC_STREAMON,   (uint32_t)VIDIOC_STREAMOFF, (uint32_t)VIDIOC_S_INPUT,
    (uint32_t)VIDIOC_S_CTRL,     (uint32_t)VIDIOC_S_EXT_CTRLS, (uint32_t)VIDIOC_S_PRIORITY,
};

static bool listed(const uint32_t *requests, size_t count, uint32_t request) {
    for (size_t i = 0; i < count; i++) {
        if (requests[i] == request) {
            return true;
        }
    }
    return false;
}

#define LISTED(requests, request) listed(requests, sizeof requests / sizeof requests[0], request)

static int dispatch(struct handle *handle, uint32_t request, void *arg) {
    struct device *device = handle->device;
    if (!emu_controls_is_request(request) && !LISTED(device_requests, request)) {
        /* V4L2 API "Generic Error Codes": ENOTTY for an ioctl the device does not support.
         * uvcvideo has no video standards, DV timings, JPEG compression parameters, crop or
         * selection, so those land here as they do on a real UVC camera. */
        return ENOTTY;
    }
    if (arg == NULL) {
        return EFAULT;
    }
    if (LISTED(priority_requests, request) && handle->priority < device_priority(device)) {
        return EBUSY;
    }
    if (emu_controls_is_request(request)) {
        return control_ioctl(device, request, arg);
    }
    switch (request) {
    case (uint32_t)VIDIOC_QUERYCAP:
        return query_capabilities(arg);
    case (uint32_t)VIDIOC_ENUM_FMT:
        return enum_format(arg);
    case (uint32_t)VIDIOC_ENUM_FRAMESIZES:
        return enum_frame_sizes(arg);
    case (uint32_t)VIDIOC_ENUM_FRAMEINTERVALS:
        return enum_frame_intervals(arg);
    case (uint32_t)VIDIOC_G_FMT:
        return get_format(device, arg);
    case (uint32_t)VIDIOC_TRY_FMT:
        return set_format(handle, arg, false);
    case (uint32_t)VIDIOC_S_FMT:
        return set_format(handle, arg, true);
    case (uint32_t)VIDIOC_G_PARM:
        return get_parameters(device, arg);
    case (uint32_t)VIDIOC_S_PARM:
        return set_parameters(handle, arg);
    case (uint32_t)VIDIOC_REQBUFS:
        return request_buffers(handle, arg);
    case (uint32_t)VIDIOC_QUERYBUF:
        return query_buffer(handle, arg);
    case (uint32_t)VIDIOC_QBUF:
        return queue_buffer(handle, arg);
    case (uint32_t)VIDIOC_DQBUF:
        return dequeue_buffer(handle, arg);
    case (uint32_t)VIDIOC_STREAMON:
        return stream_on(handle, arg);
    case (uint32_t)VIDIOC_STREAMOFF:
        return stream_off(handle, arg);
    case (uint32_t)VIDIOC_ENUMINPUT:
        return enum_input(arg);
    case (uint32_t)VIDIOC_G_INPUT:
        *(int *)arg = 0;
        return 0;
    case (uint32_t)VIDIOC_S_INPUT: {
        int error = acquire_privileges(handle);
        return error != 0 ? error : (*(int *)arg == 0 ? 0 : EINVAL);
    }
    case (uint32_t)VIDIOC_G_PRIORITY:
        *(uint32_t *)arg = device_priority(device);
        return 0;
    case (uint32_t)VIDIOC_S_PRIORITY: {
        uint32_t priority = *(uint32_t *)arg;
        if (priority < V4L2_PRIORITY_BACKGROUND || priority > V4L2_PRIORITY_RECORD) {
            return EINVAL;
        }
        handle->priority = priority;
        return 0;
    }
    default:
        return ENOTTY;
    }
}

static const char *request_name(uint32_t request) {
    static const struct {
        uint32_t request;
        const char *name;
    } names[] = {
#define NAME(r) {(uint32_t)(r), #r}
        NAME(VIDIOC_QUERYCAP),       NAME(VIDIOC_ENUM_FMT),        NAME(VIDIOC_G_FMT),
        NAME(VIDIOC_S_FMT),          NAME(VIDIOC_TRY_FMT),         NAME(VIDIOC_REQBUFS),
        NAME(VIDIOC_QUERYBUF),       NAME(VIDIOC_QBUF),            NAME(VIDIOC_DQBUF),
        NAME(VIDIOC_STREAMON),       NAME(VIDIOC_STREAMOFF),       NAME(VIDIOC_G_PARM),
        NAME(VIDIOC_S_PARM),         NAME(VIDIOC_ENUMINPUT),       NAME(VIDIOC_G_INPUT),
        NAME(VIDIOC_S_INPUT),        NAME(VIDIOC_QUERYCTRL),       NAME(VIDIOC_QUERY_EXT_CTRL),
        NAME(VIDIOC_QUERYMENU),      NAME(VIDIOC_G_CTRL),          NAME(VIDIOC_S_CTRL),
        NAME(VIDIOC_G_EXT_CTRLS),    NAME(VIDIOC_S_EXT_CTRLS),     NAME(VIDIOC_TRY_EXT_CTRLS),
        NAME(VIDIOC_ENUM_FRAMESIZES), NAME(VIDIOC_ENUM_FRAMEINTERVALS), NAME(VIDIOC_G_PRIORITY),
        NAME(VIDIOC_S_PRIORITY),     NAME(VIDIOC_G_STD),           NAME(VIDIOC_S_STD),
        NAME(VIDIOC_ENUMSTD),        NAME(VIDIOC_QUERYSTD),        NAME(VIDIOC_G_JPEGCOMP),
        NAME(VIDIOC_S_JPEGCOMP),     NAME(VIDIOC_G_SELECTION),     NAME(VIDIOC_S_SELECTION),
        NAME(VIDIOC_CROPCAP),        NAME(VIDIOC_G_CROP),          NAME(VIDIOC_S_CROP),
        NAME(VIDIOC_SUBSCRIBE_EVENT), NAME(VIDIOC_UNSUBSCRIBE_EVENT), NAME(VIDIOC_DQEVENT),
        NAME(VIDIOC_EXPBUF),         NAME(VIDIOC_CREATE_BUFS),     NAME(VIDIOC_PREPARE_BUF),
        NAME(VIDIOC_QUERY_DV_TIMINGS), NAME(VIDIOC_G_DV_TIMINGS),  NAME(VIDIOC_S_DV_TIMINGS),
        NAME(VIDIOC_ENUMAUDIO),      NAME(VIDIOC_G_AUDIO),         NAME(VIDIOC_LOG_STATUS),
        NAME(VIDIOC_G_EDID),         NAME(VIDIOC_G_FBUF),          NAME(VIDIOC_G_TUNER),
        NAME(VIDIOC_ENUMOUTPUT),     NAME(VIDIOC_G_OUTPUT),        NAME(VIDIOC_G_ENC_INDEX),
#undef NAME
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (names[i].request == request) {
            return names[i].name;
        }
    }
    return NULL;
}

static void log_ioctl(int fd, uint32_t request, const void *arg, int error) {
    if (!emu_knobs.log) {
        return;
    }
    const char *name = request_name(request);
    char unknown[24];
    if (name == NULL) {
        snprintf(unknown, sizeof unknown, "ioctl 0x%08x", request);
        name = unknown;
    }
    char detail[96] = "";
    if (error == 0 && (request == (uint32_t)VIDIOC_S_FMT || request == (uint32_t)VIDIOC_G_FMT)) {
        const struct v4l2_pix_format *pix = &((const struct v4l2_format *)arg)->fmt.pix;
        snprintf(detail, sizeof detail, " %ux%u %.4s", pix->width, pix->height,
                 (const char *)&pix->pixelformat);
    } else if (error == 0 && request == (uint32_t)VIDIOC_DQBUF) {
        const struct v4l2_buffer *buffer = arg;
        snprintf(detail, sizeof detail, " index=%u sequence=%u bytesused=%u", buffer->index,
                 buffer->sequence, buffer->bytesused);
    }
    emu_log("emucam: fd %d %s%s -> %s", fd, name, detail, error ? emu_errno_name(error) : "0");
}

int emu_device_ioctl(int fd, unsigned long request, void *arg) {
    uint32_t code = (uint32_t)request;
    pthread_mutex_lock(&lock);
    struct handle *handle = handle_for_fd(fd);
    int error;
    if (handle == NULL) {
        error = EBADF;
    } else if (handle->device->gone) {
        error = ENODEV;
    } else {
        error = dispatch(handle, code, arg);
    }
    log_ioctl(fd, code, arg, error);
    pthread_mutex_unlock(&lock);
    if (error != 0) {
        errno = error;
        return -1;
    }
    return 0;
}

/* ---- Memory mapping (V4L2 API "Streaming I/O (Memory Mapping)"). ---- */

void *emu_device_mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset) {
    pthread_mutex_lock(&lock);
    struct handle *handle = handle_for_fd(fd);
    int error = 0;
    void *result = MAP_FAILED;
    struct device *device = handle != NULL ? handle->device : NULL;
    unsigned index = 0;
    int type = flags & MAP_TYPE;
    if (device == NULL) {
        error = EBADF;
    } else if (device->gone) {
        error = ENODEV;
    } else if ((type != MAP_SHARED && type != MAP_SHARED_VALIDATE) || !(prot & PROT_READ)) {
        /* videobuf2 (vb2_mmap()): the mapping must be shared, and readable for capture. */
        error = EINVAL;
    } else if (device->buffer_count == 0 || offset < 0 ||
               (size_t)offset % device->buffer_stride != 0 ||
               (index = (unsigned)((size_t)offset / device->buffer_stride)) >=
                   device->buffer_count ||
               length == 0 || length > device->buffer_stride) {
        /* The offset must be one that QUERYBUF reported, and the length at most the buffer. */
        error = EINVAL;
    } else {
        result = emu_libc.mmap(addr, length, prot, flags, device->memfd, offset);
        if (result == MAP_FAILED) {
            error = errno;
        } else {
            device->buffers[index].mappings++;
            for (unsigned i = 0; i < MAX_MAPPINGS; i++) {
                if (mappings[i].device == NULL) {
                    mappings[i] = (struct mapping){result, device, device->allocation, index};
                    atomic_fetch_add(&mapping_count, 1);
                    break;
                }
            }
        }
    }
    emu_log("emucam: fd %d mmap offset=%lld length=%zu -> %s", fd, (long long)offset, length,
            error ? emu_errno_name(error) : "0");
    pthread_mutex_unlock(&lock);
    if (error != 0) {
        errno = error;
    }
    return result;
}

bool emu_device_has_mappings(void) {
    return atomic_load(&mapping_count) > 0;
}

void emu_device_munmap(void *addr) {
    pthread_mutex_lock(&lock);
    for (unsigned i = 0; i < MAX_MAPPINGS; i++) {
        struct mapping *mapping = &mappings[i];
        if (mapping->device != NULL && mapping->address == addr) {
            if (mapping->allocation == mapping->device->allocation &&
                mapping->device->buffers[mapping->index].mappings > 0) {
                mapping->device->buffers[mapping->index].mappings--;
            }
            mapping->device = NULL;
            mapping->address = NULL;
            atomic_fetch_sub(&mapping_count, 1);
            break;
        }
    }
    pthread_mutex_unlock(&lock);
}

/* A character device of the video4linux major, readable and writable by its owner and group
 * like udev's /dev/videoN (owner root, group video, 0660); here owned by the caller. */
void emu_device_fill_stat(struct stat *st) {
    memset(st, 0, sizeof *st);
    st->st_dev = makedev(0, 5);
    st->st_ino = 1000 + emu_knobs.minor;
    st->st_mode = S_IFCHR | 0660;
    st->st_nlink = 1;
    st->st_uid = getuid();
    st->st_gid = getgid();
    st->st_rdev = makedev(EMU_V4L_MAJOR, emu_knobs.minor);
    st->st_blksize = 4096;
    st->st_atim.tv_sec = emu_knobs.loaded_at;
    st->st_mtim.tv_sec = emu_knobs.loaded_at;
    st->st_ctim.tv_sec = emu_knobs.loaded_at;
}
