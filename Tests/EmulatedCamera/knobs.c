/* The EMUCAM_* environment (README.md lists every knob with its default and unit). */
#include "emucam.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

struct emu_knobs emu_knobs;

static const struct {
    int error;
    const char *name;
} errno_names[] = {
    {EACCES, "EACCES"}, {EAGAIN, "EAGAIN"}, {EBUSY, "EBUSY"},   {EFAULT, "EFAULT"},
    {EINTR, "EINTR"},   {EINVAL, "EINVAL"}, {EIO, "EIO"},       {ENODEV, "ENODEV"},
    {ENOENT, "ENOENT"}, {ENOMEM, "ENOMEM"}, {ENOTTY, "ENOTTY"}, {ENXIO, "ENXIO"},
    {EPERM, "EPERM"},   {ERANGE, "ERANGE"}, {EMFILE, "EMFILE"},
};

const char *emu_errno_name(int error) {
    for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++) {
        if (errno_names[i].error == error) {
            return errno_names[i].name;
        }
    }
    return "E?";
}

void emu_log(const char *format, ...) {
    if (!emu_knobs.log) {
        return;
    }
    char line[512];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(line, sizeof line - 1, format, args);
    va_end(args);
    if (n < 0) {
        return;
    }
    if ((size_t)n > sizeof line - 2) {
        n = sizeof line - 2;
    }
    line[n++] = '\n';
    /* One write() per line so that lines of concurrent threads do not interleave. */
    ssize_t ignored = write(STDERR_FILENO, line, (size_t)n);
    (void)ignored;
}

/* A knob with a bad value ends the process at load time: a test with a typo in a knob must fail
 * loudly rather than run against a camera that ignores it. */
static void reject(const char *name, const char *value, const char *expected) {
    fprintf(stderr, "emucam: %s=%s: expected %s\n", name, value, expected);
    _exit(2);
}

static unsigned read_unsigned(const char *name, unsigned fallback, unsigned min, unsigned max) {
    const char *text = getenv(name);
    if (text == NULL || *text == '\0') {
        return fallback;
    }
    char *end;
    errno = 0;
    unsigned long value = strtoul(text, &end, 10);
    if (errno != 0 || *end != '\0' || !isdigit((unsigned char)text[0]) || value < min ||
        value > max) {
        char expected[64];
        snprintf(expected, sizeof expected, "an integer %u...%u", min, max);
        reject(name, text, expected);
    }
    return (unsigned)value;
}

static void load_device_path(void) {
    const char *path = getenv("EMUCAM_DEVICE");
    if (path == NULL || *path == '\0') {
        path = "/dev/video0";
    }
    const char *slash = strrchr(path, '/');
    if (path[0] != '/' || strlen(path) >= sizeof emu_knobs.device_path || slash[1] == '\0') {
        reject("EMUCAM_DEVICE", path, "an absolute path to a file name");
    }
    strcpy(emu_knobs.device_path, path);
    emu_knobs.device_name = emu_knobs.device_path + (slash - path) + 1;

    /* The minor number follows the node name like the kernel's numbering of videoN nodes. */
    const char *digits = emu_knobs.device_name + strlen(emu_knobs.device_name);
    while (digits > emu_knobs.device_name && isdigit((unsigned char)digits[-1])) {
        digits--;
    }
    emu_knobs.minor = (unsigned)strtoul(digits, NULL, 10) & 0xff;

    char dir[256];
    size_t dir_length = (size_t)(slash - path);
    memcpy(dir, path, dir_length);
    dir[dir_length] = '\0';
    struct stat st;
    if (emu_libc.stat(dir_length == 0 ? "/" : dir, &st) == 0) {
        emu_knobs.device_dir_known = true;
        emu_knobs.device_dir_dev = st.st_dev;
        emu_knobs.device_dir_ino = st.st_ino;
    }
}

static void load_formats(void) {
    const char *text = getenv("EMUCAM_FORMATS");
    if (text == NULL || *text == '\0') {
        /* Most UVC cameras list MJPEG first; programs that take the first format get it. */
        text = "mjpeg,yuyv";
    }
    char copy[64];
    if (strlen(text) >= sizeof copy) {
        reject("EMUCAM_FORMATS", text, "a list of mjpeg, yuyv and rgb24");
    }
    strcpy(copy, text);
    emu_knobs.format_count = 0;
    char *saveptr = NULL;
    for (char *item = strtok_r(copy, ",", &saveptr); item != NULL;
         item = strtok_r(NULL, ",", &saveptr)) {
        uint32_t format;
        if (strcasecmp(item, "mjpeg") == 0 || strcasecmp(item, "mjpg") == 0) {
            format = V4L2_PIX_FMT_MJPEG;
        } else if (strcasecmp(item, "yuyv") == 0) {
            format = V4L2_PIX_FMT_YUYV;
        } else if (strcasecmp(item, "rgb24") == 0 || strcasecmp(item, "rgb3") == 0) {
            format = V4L2_PIX_FMT_RGB24;
        } else {
            reject("EMUCAM_FORMATS", text, "a list of mjpeg, yuyv and rgb24");
            return;
        }
        for (unsigned i = 0; i < emu_knobs.format_count; i++) {
            if (emu_knobs.formats[i] == format) {
                reject("EMUCAM_FORMATS", text, "each format once");
            }
        }
        emu_knobs.formats[emu_knobs.format_count++] = format;
    }
    if (emu_knobs.format_count == 0) {
        reject("EMUCAM_FORMATS", text, "a list of mjpeg, yuyv and rgb24");
    }
}

static void load_rates(void) {
    static const unsigned standard[] = {30, 15, 5};
    emu_knobs.default_rate = read_unsigned("EMUCAM_FPS", 30, 1, 120);
    emu_knobs.rate_count = 0;
    bool inserted = false;
    for (size_t i = 0; i < sizeof standard / sizeof standard[0]; i++) {
        if (!inserted && emu_knobs.default_rate >= standard[i]) {
            if (emu_knobs.default_rate != standard[i]) {
                emu_knobs.rates[emu_knobs.rate_count++] = emu_knobs.default_rate;
            }
            inserted = true;
        }
        emu_knobs.rates[emu_knobs.rate_count++] = standard[i];
    }
    if (!inserted) {
        emu_knobs.rates[emu_knobs.rate_count++] = emu_knobs.default_rate;
    }
}

static double read_seconds(const char *name, double fallback) {
    const char *text = getenv(name);
    if (text == NULL || *text == '\0') {
        return fallback;
    }
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (errno != 0 || *end != '\0' || !(value >= 0 && value <= 3600)) {
        reject(name, text, "seconds between 0 and 3600");
    }
    return value;
}

static const int open_errors[] = {EACCES, EBUSY, ENODEV, ENXIO, EIO, EPERM, ENOENT};
#define OPEN_ERROR_NAMES "one of EACCES EBUSY ENODEV ENXIO EIO EPERM ENOENT"

/* The errno named by text, or 0 if it is none of open_errors. */
static int open_error_named(const char *text) {
    for (size_t i = 0; i < sizeof open_errors / sizeof open_errors[0]; i++) {
        if (strcmp(text, emu_errno_name(open_errors[i])) == 0) {
            return open_errors[i];
        }
    }
    return 0;
}

static void load_open_error(void) {
    const char *text = getenv("EMUCAM_OPEN_ERROR");
    emu_knobs.open_error = 0;
    if (text != NULL && *text != '\0') {
        emu_knobs.open_error = open_error_named(text);
        if (emu_knobs.open_error == 0) {
            reject("EMUCAM_OPEN_ERROR", text, OPEN_ERROR_NAMES);
        }
    }
    const char *file = getenv("EMUCAM_OPEN_ERROR_FILE");
    emu_knobs.open_error_file[0] = '\0';
    if (file != NULL && *file != '\0') {
        if (strlen(file) >= sizeof emu_knobs.open_error_file) {
            reject("EMUCAM_OPEN_ERROR_FILE", file, "a shorter path");
        }
        strcpy(emu_knobs.open_error_file, file);
    }
}

int emu_open_error_now(void) {
    if (emu_knobs.open_error != 0 || emu_knobs.open_error_file[0] == '\0') {
        return emu_knobs.open_error;
    }
    /* A missing or empty file is no error. The file is written by rename(2) in the tests, so
     * it is read whole or not at all. */
    int fd = open(emu_knobs.open_error_file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    char text[32];
    ssize_t length = read(fd, text, sizeof text - 1);
    emu_libc.close(fd);
    if (length <= 0) {
        return 0;
    }
    text[length] = '\0';
    text[strcspn(text, " \t\r\n")] = '\0';
    if (text[0] == '\0') {
        return 0;
    }
    int error = open_error_named(text);
    if (error == 0) {
        /* As for a malformed knob: a typo in a test must not pass unnoticed. */
        fprintf(stderr, "emucam: EMUCAM_OPEN_ERROR_FILE %s holds \"%s\"; expected %s\n",
                emu_knobs.open_error_file, text, OPEN_ERROR_NAMES);
        _exit(2);
    }
    return error;
}

static void load_no_dht(void) {
    const char *text = getenv("EMUCAM_MJPEG_NO_DHT");
    emu_knobs.no_dht_every = 0;
    if (text == NULL || *text == '\0' || strcmp(text, "0") == 0) {
        return;
    }
    if (strcmp(text, "1") == 0) {
        emu_knobs.no_dht_every = 1;
        return;
    }
    char *end;
    unsigned long every = strncmp(text, "every:", 6) == 0 ? strtoul(text + 6, &end, 10) : 0;
    if (every == 0 || every > 1000000 || *end != '\0') {
        reject("EMUCAM_MJPEG_NO_DHT", text, "0, 1 or every:N");
    }
    emu_knobs.no_dht_every = (unsigned)every;
}

void emu_knobs_load(void) {
    emu_knobs.loaded_at = time(NULL);
    load_device_path();
    load_formats();
    load_rates();
    emu_knobs.unplug_after = read_unsigned("EMUCAM_UNPLUG_AFTER", 0, 0, 1000000000);
    emu_knobs.unplug_seconds = read_seconds("EMUCAM_UNPLUG_SECONDS", 1.0);
    emu_knobs.unplug_times = read_unsigned("EMUCAM_UNPLUG_TIMES", 1, 0, 1000000000);
    emu_knobs.stall_after = read_unsigned("EMUCAM_STALL_AFTER", 0, 0, 1000000000);
    emu_knobs.hang_after = read_unsigned("EMUCAM_HANG_AFTER", 0, 0, 1000000000);
    load_open_error();
    load_no_dht();
    emu_knobs.corrupt_every = read_unsigned("EMUCAM_CORRUPT_EVERY", 0, 0, 1000000);
    emu_knobs.stamp = read_unsigned("EMUCAM_STAMP", 0, 0, 1) == 1;
    const char *log = getenv("EMUCAM_LOG");
    emu_knobs.log = log != NULL && *log != '\0' && strcmp(log, "0") != 0;
    const char *state_dir = getenv("EMUCAM_STATE_DIR");
    if (state_dir != NULL && *state_dir != '\0') {
        if (strlen(state_dir) >= sizeof emu_knobs.state_dir - 32) {
            reject("EMUCAM_STATE_DIR", state_dir, "a shorter path");
        }
        strcpy(emu_knobs.state_dir, state_dir);
    }
}
