/*
 * mjpeg_viewers: N viewers of one MJPEG stream (multipart/x-mixed-replace) in one process, for
 * benchmarks/preview_bench.py (issue 5).
 *
 * Each viewer is a TCP connection to 127.0.0.1:PORT that sends `GET PATH HTTP/1.1` and reads the
 * multipart stream: the boundary comes from the response's Content-Type, each part has headers
 * with Content-Length, and the `--boundary` line may come before a part's headers or right after
 * the previous frame (both are accepted, and CRLFs between parts are skipped). For each whole
 * part the receive time (CLOCK_REALTIME, taken once per read()) is compared with the capture
 * time the emulated camera wrote into the JPEG (EMUCAM_STAMP: a COM segment "emucam-t=<ns>"
 * right after SOI), giving the capture-to-viewer latency.
 *
 * It has to keep up with 100 viewers at 30 fps without being the bottleneck, so: one thread,
 * epoll, one shared 1 MiB read buffer; JPEG bytes are skipped in place (only the first bytes of
 * each part are looked at for the stamp), and nothing is copied but part header lines.
 *
 * Usage: mjpeg_viewers --port P [--path /stream] [--viewers N] [--seconds S] [--warmup W]
 *                      [--stalled K] [--host 127.0.0.1] [--fps F] [--pid PID]
 * Frames completed during [warmup, warmup + seconds] after all viewers connected count; the
 * result is one JSON object on stdout. With --pid, the server's CPU time (utime + stime, also
 * per thread name) is read from /proc at the window's start and end, and its VmRSS every
 * 100 ms in the window, so the server's figures cover exactly the frames counted. --stalled K opens K more connections that send the
 * request and never read (to watch the server's memory with slow clients); they are not counted.
 *
 * --tls 1 speaks HTTPS instead (OpenSSL; the handshake is done, blocking, before the window).
 *
 * Build: gcc -O2 -o mjpeg_viewers benchmarks/mjpeg_viewers.c -lssl -lcrypto
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
    READ_BUFFER = 1 << 20,
    LINE_MAX_BYTES = 2048,
    /* The stamp is looked for in a part's first bytes: right after SOI when passed through
     * untouched, a little later if a server put segments of its own before it. */
    STAMP_WINDOW = 1024,
    MAX_ERRORS_KEPT = 8,
};

static const char STAMP[] = "emucam-t=";

enum state {
    RESPONSE_HEADERS, /* the HTTP response head, up to the blank line */
    PART_HEADERS,     /* boundary line and part headers, up to the blank line */
    PART_BODY,        /* Content-Length bytes of JPEG */
    DONE,             /* closed or failed */
};

struct viewer {
    int fd;
    SSL *ssl; /* with --tls 1: the connection's TLS, else NULL */
    enum state state;
    char line[LINE_MAX_BYTES];
    size_t line_length;
    bool status_ok;
    char boundary[128]; /* "--" + the boundary parameter */
    bool part_has_length;
    bool part_header_seen;
    uint64_t remaining;  /* body bytes still to come */
    uint8_t head[STAMP_WINDOW];
    size_t head_length;
    /* Counted inside the measured window only. */
    uint64_t frames;
    uint64_t bytes;
    int64_t last_stamp;   /* of the previous whole part (any time), 0 = none */
    int64_t max_stamp_gap;
    uint64_t stamp_gaps;  /* consecutive frames more than 1.5 frame intervals apart */
    int64_t last_receive;
    int64_t max_receive_gap;
    uint64_t frames_total; /* whole parts since the start, warm-up included */
};

static struct {
    const char *host;
    int port;
    const char *path;
    int viewers;
    int stalled;
    double seconds;
    double warmup;
    double frame_interval_ms;
    int pid;
    int tls;
} options = {"127.0.0.1", 0, "/stream", 1, 0, 10, 2, 1000.0 / 30, 0, 0};

/* With --tls 1 every connection speaks TLS (the server's certificate is not checked: loopback). */
static SSL_CTX *tls_context;

static int64_t window_start, window_end; /* CLOCK_REALTIME ns */
static int64_t *latencies;
static size_t latency_count, latency_capacity;
static uint64_t no_stamp_frames;
static uint64_t error_count;
static char errors[MAX_ERRORS_KEPT][160];
static size_t errors_kept;

static int64_t realtime_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* The server's resources, from /proc (proc(5)). */
enum { MAX_THREAD_NAMES = 64 };

struct thread_time {
    char name[32];
    double end; /* CPU seconds in the window of all threads with this name */
};

static struct {
    double cpu_start, cpu_end;
    long rss_start, rss_end, rss_max, hwm_end; /* KiB */
    long samples;
    struct thread_time threads[MAX_THREAD_NAMES];
    int thread_count;
    double precise; /* schedstat sums over the threads */
} server;

static double ticks_per_second;

/* utime + stime from a stat file, in seconds; -1 if unreadable. */
static double stat_cpu(const char *path, char *name, size_t name_size) {
    char text[1024];
    FILE *file = fopen(path, "r");
    if (file == NULL) {
        return -1;
    }
    size_t n = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[n] = '\0';
    char *open = strchr(text, '(');
    char *close = strrchr(text, ')');
    if (open == NULL || close == NULL) {
        return -1;
    }
    if (name != NULL) {
        snprintf(name, name_size, "%.*s", (int)(close - open - 1), open + 1);
    }
    unsigned long long utime, stime;
    /* After ")": state, ppid, pgrp, session, tty_nr, tpgid, flags, minflt, cminflt, majflt,
     * cmajflt, utime, stime. */
    if (sscanf(close + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
               &stime) != 2) {
        return -1;
    }
    return (double)(utime + stime) / ticks_per_second;
}

static long status_kib(const char *key) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", options.pid);
    FILE *file = fopen(path, "r");
    if (file == NULL) {
        return -1;
    }
    long value = -1;
    size_t key_length = strlen(key);
    while (fgets(line, sizeof line, file) != NULL) {
        if (strncmp(line, key, key_length) == 0 && line[key_length] == ':') {
            value = strtol(line + key_length + 1, NULL, 10);
            break;
        }
    }
    fclose(file);
    return value;
}

/* A thread's time on CPU in nanoseconds (the first field of schedstat), -1 if unreadable. */
static double schedstat_seconds(const char *path) {
    FILE *file = fopen(path, "r");
    if (file == NULL) {
        return -1;
    }
    unsigned long long ns;
    int n = fscanf(file, "%llu", &ns);
    fclose(file);
    return n == 1 ? (double)ns / 1e9 : -1;
}

/* Every thread of the server seen in the window: its time on CPU when first seen (0 for a thread
 * born inside the window) and when last seen. Threads are read every 100 ms, so one that ends
 * in the window (a pool thread retiring) loses at most its last 100 ms, while the total stays
 * exact to the nanosecond; /proc/PID/stat counts clock ticks, 10 ms each, too coarse for one
 * viewer's 1% of a core. */
enum { MAX_THREADS = 1024 };
static struct {
    int tid;
    char name[32];
    double first, last;
} threads[MAX_THREADS];
static int threads_seen;

static void sample_threads(bool at_start) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", options.pid);
    DIR *directory = opendir(path);
    if (directory == NULL) {
        return;
    }
    struct dirent *entry;
    while ((entry = readdir(directory)) != NULL) {
        if (entry->d_name[0] == '.') {
            continue;
        }
        int tid = atoi(entry->d_name);
        int k = 0;
        while (k < threads_seen && threads[k].tid != tid) {
            k++;
        }
        char file[300];
        snprintf(file, sizeof file, "/proc/%d/task/%d/schedstat", options.pid, tid);
        double cpu = schedstat_seconds(file);
        if (cpu < 0) {
            continue;
        }
        if (k == threads_seen) {
            if (k == MAX_THREADS) {
                continue;
            }
            threads_seen++;
            threads[k].tid = tid;
            threads[k].first = at_start ? cpu : 0;
            snprintf(file, sizeof file, "/proc/%d/task/%d/stat", options.pid, tid);
            if (stat_cpu(file, threads[k].name, sizeof threads[k].name) < 0) {
                snprintf(threads[k].name, sizeof threads[k].name, "?");
            }
        }
        threads[k].last = cpu;
    }
    closedir(directory);
}

/* Sums the threads' time in the window by thread name. */
static double threads_total(void) {
    double total = 0;
    for (int k = 0; k < threads_seen; k++) {
        double cpu = threads[k].last - threads[k].first;
        total += cpu;
        int n = 0;
        while (n < server.thread_count && strcmp(server.threads[n].name, threads[k].name) != 0) {
            n++;
        }
        if (n == server.thread_count) {
            if (n == MAX_THREAD_NAMES) {
                continue;
            }
            server.thread_count++;
            snprintf(server.threads[n].name, sizeof server.threads[n].name, "%s", threads[k].name);
        }
        server.threads[n].end += cpu;
    }
    return total;
}

static void sample_rss(void) {
    long rss = status_kib("VmRSS");
    if (rss > server.rss_max) {
        server.rss_max = rss;
    }
    server.rss_end = rss;
    server.samples++;
}

static void sample_server(bool at_end) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", options.pid);
    double cpu = stat_cpu(path, NULL, 0);
    sample_threads(!at_end && server.samples == 0);
    sample_rss();
    if (at_end) {
        server.cpu_end = cpu;
        server.hwm_end = status_kib("VmHWM");
        server.precise = threads_total();
    } else {
        server.cpu_start = cpu;
        server.rss_start = server.rss_end;
    }
}

static void fail(struct viewer *viewer, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* Closes the viewer and records why; the run goes on with the others. */
static void fail(struct viewer *viewer, const char *format, ...) {
    error_count++;
    if (errors_kept < MAX_ERRORS_KEPT) {
        va_list args;
        va_start(args, format);
        vsnprintf(errors[errors_kept++], sizeof errors[0], format, args);
        va_end(args);
    }
    if (viewer->fd >= 0) {
        close(viewer->fd);
        viewer->fd = -1;
    }
    viewer->state = DONE;
}

static void record_latency(int64_t value) {
    if (latency_count == latency_capacity) {
        latency_capacity = latency_capacity ? latency_capacity * 2 : 65536;
        latencies = realloc(latencies, latency_capacity * sizeof *latencies);
        if (latencies == NULL) {
            perror("realloc");
            exit(1);
        }
    }
    latencies[latency_count++] = value;
}

/* The stamp's nanoseconds, or 0 if the part's first bytes hold none. */
static int64_t find_stamp(const uint8_t *head, size_t length) {
    const uint8_t *found = memmem(head, length, STAMP, sizeof STAMP - 1);
    if (found == NULL) {
        return 0;
    }
    int64_t value = 0;
    int digits = 0;
    for (const uint8_t *p = found + sizeof STAMP - 1; p < head + length && *p >= '0' && *p <= '9';
         p++, digits++) {
        value = value * 10 + (*p - '0');
    }
    return digits >= 10 ? value : 0;
}

static void part_complete(struct viewer *viewer, int64_t received) {
    int64_t stamp = find_stamp(viewer->head, viewer->head_length);
    bool counted = received >= window_start && received < window_end;
    viewer->frames_total++;
    if (counted) {
        viewer->frames++;
        if (stamp == 0) {
            no_stamp_frames++;
        } else {
            record_latency(received - stamp);
        }
        if (viewer->last_stamp != 0 && stamp != 0) {
            int64_t gap = stamp - viewer->last_stamp;
            if (gap > viewer->max_stamp_gap) {
                viewer->max_stamp_gap = gap;
            }
            if (gap > (int64_t)(1.5 * options.frame_interval_ms * 1e6)) {
                viewer->stamp_gaps++;
            }
        }
        if (viewer->last_receive != 0 && received - viewer->last_receive > viewer->max_receive_gap) {
            viewer->max_receive_gap = received - viewer->last_receive;
        }
    }
    viewer->last_stamp = stamp;
    viewer->last_receive = received;
}

/* Takes the boundary parameter out of a Content-Type value. */
static bool parse_boundary(struct viewer *viewer, const char *value) {
    const char *p = strcasestr(value, "boundary=");
    if (p == NULL) {
        return false;
    }
    p += strlen("boundary=");
    bool quoted = *p == '"';
    if (quoted) {
        p++;
    }
    size_t n = 0;
    while (p[n] != '\0' && (quoted ? p[n] != '"' : (p[n] != ';' && p[n] != ' ' && p[n] != '\t'))) {
        n++;
    }
    if (n == 0 || n + 3 > sizeof viewer->boundary) {
        return false;
    }
    /* RFC 2046: the delimiter line is "--" + boundary. */
    snprintf(viewer->boundary, sizeof viewer->boundary, "--%.*s", (int)n, p);
    return true;
}

static bool is_boundary_line(const struct viewer *viewer, const char *line) {
    return strncmp(line, viewer->boundary, strlen(viewer->boundary)) == 0;
}

/* One header line (CRLF removed). Returns false if the viewer failed. */
static bool header_line(struct viewer *viewer, char *line) {
    if (viewer->state == RESPONSE_HEADERS) {
        if (!viewer->status_ok) {
            int status = 0;
            if (sscanf(line, "HTTP/%*d.%*d %d", &status) != 1 || status != 200) {
                fail(viewer, "status line: %.100s", line);
                return false;
            }
            viewer->status_ok = true;
            return true;
        }
        if (*line == '\0') {
            if (viewer->boundary[0] == '\0') {
                fail(viewer, "no multipart boundary in the response");
                return false;
            }
            viewer->state = PART_HEADERS;
            viewer->part_header_seen = false;
            viewer->part_has_length = false;
            return true;
        }
        if (strncasecmp(line, "Content-Type:", 13) == 0 && !parse_boundary(viewer, line + 13)) {
            fail(viewer, "Content-Type without a boundary: %.100s", line);
            return false;
        }
        if (strncasecmp(line, "Transfer-Encoding:", 18) == 0 && strcasestr(line, "chunked")) {
            fail(viewer, "chunked transfer coding is not supported");
            return false;
        }
        return true;
    }
    /* PART_HEADERS */
    if (*line == '\0') {
        if (!viewer->part_header_seen) {
            return true; /* the CRLF after a part's body, before the boundary or the headers */
        }
        if (!viewer->part_has_length) {
            fail(viewer, "part without Content-Length");
            return false;
        }
        viewer->state = PART_BODY;
        viewer->head_length = 0;
        return true;
    }
    if (is_boundary_line(viewer, line)) {
        size_t n = strlen(line);
        if (n >= 2 && strcmp(line + n - 2, "--") == 0) {
            fail(viewer, "stream ended by the server (closing boundary)");
            return false;
        }
        return true;
    }
    viewer->part_header_seen = true;
    if (strncasecmp(line, "Content-Length:", 15) == 0) {
        char *end;
        unsigned long long length = strtoull(line + 15, &end, 10);
        if (end == line + 15 || length == 0 || length > (1ull << 30)) {
            fail(viewer, "bad Content-Length: %.100s", line);
            return false;
        }
        viewer->remaining = length;
        viewer->part_has_length = true;
    }
    return true;
}

/* Everything read() returned for this viewer, in place. */
static void consume(struct viewer *viewer, const uint8_t *data, size_t length, int64_t received) {
    size_t i = 0;
    bool counted = received >= window_start && received < window_end;
    if (counted) {
        viewer->bytes += length;
    }
    while (i < length && viewer->state != DONE) {
        if (viewer->state == PART_BODY) {
            size_t take = length - i;
            if (take > viewer->remaining) {
                take = (size_t)viewer->remaining;
            }
            if (viewer->head_length < STAMP_WINDOW) {
                size_t copy = STAMP_WINDOW - viewer->head_length;
                if (copy > take) {
                    copy = take;
                }
                memcpy(viewer->head + viewer->head_length, data + i, copy);
                viewer->head_length += copy;
            }
            i += take;
            viewer->remaining -= take;
            if (viewer->remaining == 0) {
                part_complete(viewer, received);
                viewer->state = PART_HEADERS;
                viewer->part_header_seen = false;
                viewer->part_has_length = false;
            }
            continue;
        }
        /* Header bytes: up to the next LF, into the line buffer. */
        const uint8_t *lf = memchr(data + i, '\n', length - i);
        size_t n = (lf != NULL ? (size_t)(lf - (data + i)) : length - i);
        if (viewer->line_length + n >= LINE_MAX_BYTES) {
            fail(viewer, "header line longer than %d bytes", LINE_MAX_BYTES);
            return;
        }
        memcpy(viewer->line + viewer->line_length, data + i, n);
        viewer->line_length += n;
        i += n;
        if (lf == NULL) {
            break;
        }
        i++; /* the LF */
        if (viewer->line_length > 0 && viewer->line[viewer->line_length - 1] == '\r') {
            viewer->line_length--;
        }
        viewer->line[viewer->line_length] = '\0';
        viewer->line_length = 0;
        if (!header_line(viewer, viewer->line)) {
            return;
        }
    }
}

/* Connects, handshakes (blocking) when --tls 1 (setting *ssl_out), sends the request and makes
 * the socket non-blocking; returns the descriptor or -1. */
static int connect_viewer(SSL **ssl_out) {
    *ssl_out = NULL;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return -1;
    }
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)options.port)};
    if (inet_pton(AF_INET, options.host, &address.sin_addr) != 1 ||
        connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        close(fd);
        return -1;
    }
    char request[1024];
    int n = snprintf(request, sizeof request,
                     "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: mjpeg_viewers\r\n"
                     "Accept: */*\r\n\r\n",
                     options.path, options.host, options.port);
    if (options.tls) {
        SSL *ssl = SSL_new(tls_context);
        if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 || SSL_connect(ssl) != 1 ||
            SSL_write(ssl, request, n) != n) {
            SSL_free(ssl);
            close(fd);
            errno = EPROTO;
            return -1;
        }
        *ssl_out = ssl;
    } else if (write(fd, request, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

static int compare_int64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted values, in milliseconds. */
static double percentile_ms(const int64_t *sorted, size_t count, double p) {
    if (count == 0) {
        return -1;
    }
    size_t rank = (size_t)(p / 100.0 * (double)count + 0.999999);
    if (rank < 1) {
        rank = 1;
    }
    if (rank > count) {
        rank = count;
    }
    return (double)sorted[rank - 1] / 1e6;
}

static void json_string(const char *text) {
    putchar('"');
    for (const char *p = text; *p; p++) {
        if (*p == '"' || *p == '\\') {
            printf("\\%c", *p);
        } else if ((unsigned char)*p < 0x20) {
            printf("\\u%04x", *p);
        } else {
            putchar(*p);
        }
    }
    putchar('"');
}

static void usage(void) {
    fprintf(stderr, "usage: mjpeg_viewers --port P [--path /stream] [--viewers N] [--seconds S] "
                    "[--warmup W] [--stalled K] [--host 127.0.0.1] [--fps F] [--pid PID] [--tls 1]\n");
    exit(2);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *name = argv[i];
        if (i + 1 >= argc) {
            usage();
        }
        const char *value = argv[++i];
        if (strcmp(name, "--port") == 0) {
            options.port = atoi(value);
        } else if (strcmp(name, "--path") == 0) {
            options.path = value;
        } else if (strcmp(name, "--viewers") == 0) {
            options.viewers = atoi(value);
        } else if (strcmp(name, "--stalled") == 0) {
            options.stalled = atoi(value);
        } else if (strcmp(name, "--seconds") == 0) {
            options.seconds = atof(value);
        } else if (strcmp(name, "--warmup") == 0) {
            options.warmup = atof(value);
        } else if (strcmp(name, "--host") == 0) {
            options.host = value;
        } else if (strcmp(name, "--pid") == 0) {
            options.pid = atoi(value);
        } else if (strcmp(name, "--tls") == 0) {
            options.tls = atoi(value);
        } else if (strcmp(name, "--fps") == 0) {
            options.frame_interval_ms = 1000.0 / atof(value);
        } else {
            usage();
        }
    }
    if (options.port <= 0 || options.viewers < 1 || options.stalled < 0 || options.seconds <= 0 ||
        options.warmup < 0) {
        usage();
    }
    ticks_per_second = (double)sysconf(_SC_CLK_TCK);
    if (options.tls) {
        tls_context = SSL_CTX_new(TLS_client_method());
        if (tls_context == NULL) {
            fprintf(stderr, "SSL_CTX_new failed\n");
            return 1;
        }
        SSL_CTX_set_verify(tls_context, SSL_VERIFY_NONE, NULL);
    }

    struct viewer *viewers = calloc((size_t)options.viewers, sizeof *viewers);
    int *stalled = calloc((size_t)options.stalled + 1, sizeof *stalled);
    uint8_t *buffer = malloc(READ_BUFFER);
    int epoll = epoll_create1(0);
    if (viewers == NULL || stalled == NULL || buffer == NULL || epoll < 0) {
        perror("setup");
        return 1;
    }
    int connect_failures = 0;
    for (int k = 0; k < options.stalled; k++) {
        SSL *ignored;
        stalled[k] = connect_viewer(&ignored);
        if (stalled[k] < 0) {
            connect_failures++;
        }
    }
    int64_t connected_at = realtime_ns();
    for (int k = 0; k < options.viewers; k++) {
        struct viewer *viewer = &viewers[k];
        viewer->fd = connect_viewer(&viewer->ssl);
        if (viewer->fd < 0) {
            connect_failures++;
            fail(viewer, "connect or request failed: %s", strerror(errno));
            continue;
        }
        struct epoll_event event = {.events = EPOLLIN, .data.ptr = viewer};
        epoll_ctl(epoll, EPOLL_CTL_ADD, viewer->fd, &event);
    }
    int64_t connect_ms = (realtime_ns() - connected_at) / 1000000;
    window_start = realtime_ns() + (int64_t)(options.warmup * 1e9);
    window_end = window_start + (int64_t)(options.seconds * 1e9);

    struct epoll_event events[256];
    bool window_open = false;
    int64_t next_sample = window_start;
    for (;;) {
        int64_t now = realtime_ns();
        if (options.pid > 0 && now >= next_sample) {
            if (!window_open) {
                sample_server(false);
                window_open = true;
            } else {
                sample_rss();
                sample_threads(false);
            }
            next_sample = now + 100000000;
        }
        if (now >= window_end) {
            break;
        }
        int64_t wake = window_end;
        if (options.pid > 0 && next_sample < wake) {
            wake = next_sample;
        }
        int timeout = (int)((wake - now + 999999) / 1000000);
        int ready = epoll_wait(epoll, events, 256, timeout);
        if (ready < 0) {
            if (errno == EINTR) {
                continue;
            }
            perror("epoll_wait");
            return 1;
        }
        for (int e = 0; e < ready; e++) {
            struct viewer *viewer = events[e].data.ptr;
            if (viewer->state == DONE) {
                continue;
            }
            if (viewer->ssl) {
                /* Every decrypted record now: bytes OpenSSL holds do not wake epoll again. */
                for (;;) {
                    int n = SSL_read(viewer->ssl, buffer, READ_BUFFER);
                    int64_t received = realtime_ns();
                    if (n > 0) {
                        consume(viewer, buffer, (size_t)n, received);
                        if (viewer->state == DONE) {
                            break;
                        }
                        continue;
                    }
                    int error = SSL_get_error(viewer->ssl, n);
                    if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE) {
                        fail(viewer, "TLS connection ended (SSL error %d) after %llu frames", error,
                             (unsigned long long)viewer->frames_total);
                    }
                    break;
                }
                continue;
            }
            ssize_t n = read(viewer->fd, buffer, READ_BUFFER);
            int64_t received = realtime_ns();
            if (n > 0) {
                consume(viewer, buffer, (size_t)n, received);
            } else if (n == 0) {
                fail(viewer, "connection closed by the server after %llu frames",
                     (unsigned long long)viewer->frames_total);
            } else if (errno != EAGAIN && errno != EINTR) {
                fail(viewer, "read: %s", strerror(errno));
            }
        }
    }

    if (options.pid > 0) {
        sample_server(true);
    }
    struct rusage usage_self;
    getrusage(RUSAGE_SELF, &usage_self);
    double client_cpu = (double)usage_self.ru_utime.tv_sec + usage_self.ru_utime.tv_usec / 1e6 +
                        (double)usage_self.ru_stime.tv_sec + usage_self.ru_stime.tv_usec / 1e6;

    /* Results. */
    double *fps = malloc((size_t)options.viewers * sizeof *fps);
    uint64_t frames = 0, bytes = 0, gaps = 0;
    int64_t max_stamp_gap = 0, max_receive_gap = 0;
    int alive = 0;
    for (int k = 0; k < options.viewers; k++) {
        fps[k] = (double)viewers[k].frames / options.seconds;
        frames += viewers[k].frames;
        bytes += viewers[k].bytes;
        gaps += viewers[k].stamp_gaps;
        if (viewers[k].max_stamp_gap > max_stamp_gap) {
            max_stamp_gap = viewers[k].max_stamp_gap;
        }
        if (viewers[k].max_receive_gap > max_receive_gap) {
            max_receive_gap = viewers[k].max_receive_gap;
        }
        alive += viewers[k].state != DONE;
    }
    double *sorted_fps = malloc((size_t)options.viewers * sizeof *sorted_fps);
    memcpy(sorted_fps, fps, (size_t)options.viewers * sizeof *fps);
    qsort(sorted_fps, (size_t)options.viewers, sizeof *sorted_fps, compare_double);
    double median_fps = options.viewers % 2 ? sorted_fps[options.viewers / 2]
                                            : (sorted_fps[options.viewers / 2 - 1] +
                                               sorted_fps[options.viewers / 2]) / 2;
    qsort(latencies, latency_count, sizeof *latencies, compare_int64);

    printf("{\"viewers\": %d, \"stalled\": %d, \"seconds\": %g, \"warmup\": %g, ", options.viewers,
           options.stalled, options.seconds, options.warmup);
    printf("\"connect_ms\": %lld, \"connect_failures\": %d, \"alive_at_end\": %d, ",
           (long long)connect_ms, connect_failures, alive);
    printf("\"frames\": %llu, \"bytes\": %llu, ", (unsigned long long)frames,
           (unsigned long long)bytes);
    printf("\"fps\": {\"min\": %.2f, \"median\": %.2f, \"max\": %.2f, \"mean\": %.2f}, ",
           sorted_fps[0], median_fps, sorted_fps[options.viewers - 1],
           (double)frames / options.seconds / options.viewers);
    printf("\"latency_ms\": {\"count\": %zu, \"min\": %.2f, \"p50\": %.2f, \"p95\": %.2f, "
           "\"p99\": %.2f, \"max\": %.2f}, ",
           latency_count, percentile_ms(latencies, latency_count, 0),
           percentile_ms(latencies, latency_count, 50), percentile_ms(latencies, latency_count, 95),
           percentile_ms(latencies, latency_count, 99),
           percentile_ms(latencies, latency_count, 100));
    printf("\"frames_without_stamp\": %llu, \"skips\": %llu, \"max_stamp_gap_ms\": %.1f, "
           "\"max_receive_gap_ms\": %.1f, ",
           (unsigned long long)no_stamp_frames, (unsigned long long)gaps, max_stamp_gap / 1e6,
           max_receive_gap / 1e6);
    printf("\"client_cpu_s\": %.3f, ", client_cpu);
    if (options.pid > 0) {
        bool precise = server.precise > 0;
        printf("\"server\": {\"pid\": %d, \"cpu_s\": %.4f, \"cpu_source\": \"%s\", "
               "\"cpu_s_ticks\": %.2f, \"rss_kib_start\": %ld, "
               "\"rss_kib_end\": %ld, \"rss_kib_max\": %ld, \"hwm_kib\": %ld, \"samples\": %ld, "
               "\"threads\": {",
               options.pid,
               precise ? server.precise : server.cpu_end - server.cpu_start,
               precise ? "schedstat" : "stat", server.cpu_end - server.cpu_start, server.rss_start,
               server.rss_end,
               server.rss_max, server.hwm_end, server.samples);
        for (int k = 0; k < server.thread_count; k++) {
            if (k) {
                printf(", ");
            }
            json_string(server.threads[k].name);
            printf(": %.4f", server.threads[k].end);
        }
        printf("}}, ");
    }
    printf("\"per_viewer_frames\": [");
    for (int k = 0; k < options.viewers; k++) {
        printf("%s%llu", k ? ", " : "", (unsigned long long)viewers[k].frames);
    }
    printf("], \"errors\": %llu, \"error_messages\": [", (unsigned long long)error_count);
    for (size_t k = 0; k < errors_kept; k++) {
        if (k) {
            printf(", ");
        }
        json_string(errors[k]);
    }
    printf("]}\n");
    return 0;
}
