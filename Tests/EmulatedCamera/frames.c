/*
 * The picture: eight 75% colour bars with a white band moving down one step per frame, the
 * brightness, contrast and saturation controls applied, as YUYV, RGB24 or a real JPEG.
 *
 * YUYV samples are limited range ("video levels", Y' 16...235, Cb/Cr 16...240) as UVC cameras
 * deliver (V4L2 API "Colorspaces": V4L2_QUANTIZATION_DEFAULT for Y'CbCr is limited range).
 * JPEG (JFIF) samples are full range, so the MJPEG planes are expanded before encoding.
 * RGB24 is full-range R'G'B', the limited-range BT.601 colours converted once per template row.
 */
#include "emucam.h"

#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

struct ycbcr {
    int y, cb, cr;
};

/* 75% colour bars, ITU-R BT.601 limited range: white, yellow, cyan, green, magenta, red, blue,
 * black. */
static const struct ycbcr bar_colours[8] = {
    {180, 128, 128}, {162, 44, 142}, {131, 156, 44}, {112, 72, 58},
    {84, 184, 198},  {65, 100, 212}, {35, 212, 114}, {16, 128, 128},
};
static const struct ycbcr band_colour = {235, 128, 128};

/* Frame thread state; the thread that owns it is the only one touching it. The MJPEG ring is
 * keyed by everything the picture depends on except the phase, which indexes the ring. */
struct emu_frame_source {
    tjhandle encoder;
    uint32_t width;
    uint32_t height;
    int32_t brightness;
    int32_t contrast;
    int32_t saturation;
    /* Y, then Cb, then Cr, 4:2:2 (chroma at half width, full height); then two template rows
     * (draw_planes()). */
    uint8_t *planes;
    uint8_t *jpeg[EMU_RING_FRAMES];
    size_t jpeg_size[EMU_RING_FRAMES];
};

static int clamp(int value, int low, int high) {
    return value < low ? low : value > high ? high : value;
}

/* Contrast 32 and saturation 64 are the defaults and leave the colours unchanged. */
static struct ycbcr adjust(struct ycbcr colour, const struct emu_frame_request *request) {
    struct ycbcr out;
    out.y = clamp(16 + (colour.y - 16) * request->contrast / 32 + request->brightness, 16, 235);
    out.cb = clamp(128 + (colour.cb - 128) * request->saturation / 64, 16, 240);
    out.cr = clamp(128 + (colour.cr - 128) * request->saturation / 64, 16, 240);
    return out;
}

static struct ycbcr full_range(struct ycbcr colour) {
    struct ycbcr out;
    out.y = clamp((colour.y - 16) * 255 / 219, 0, 255);
    out.cb = clamp((colour.cb - 128) * 255 / 224 + 128, 0, 255);
    out.cr = clamp((colour.cr - 128) * 255 / 224 + 128, 0, 255);
    return out;
}

/* Rows [top, top + height/12) hold the band; it moves down by height/EMU_RING_FRAMES a frame. */
static void band_rows(const struct emu_frame_request *request, uint32_t *top, uint32_t *bottom) {
    *top = (uint32_t)((uint64_t)request->phase * request->height / EMU_RING_FRAMES);
    *bottom = *top + request->height / 12;
    if (*bottom > request->height) {
        *bottom = request->height;
    }
}

/* The colour of pixel pair x/2 (both pixels of a YUYV pair share their chroma). */
static struct ycbcr bar_at(uint32_t x, uint32_t width) {
    return bar_colours[(uint64_t)x * 8 / width];
}

static size_t render_yuyv(const struct emu_frame_request *request, uint8_t *dst,
                          size_t capacity, bool *error) {
    uint32_t width = request->width;
    size_t row_bytes = (size_t)width * 2;
    size_t size = row_bytes * request->height;
    if (size > capacity) {
        *error = true;
        return 0;
    }
    uint8_t *bars_row = malloc(row_bytes);
    uint8_t *band_row = malloc(row_bytes);
    if (bars_row == NULL || band_row == NULL) {
        free(bars_row);
        free(band_row);
        *error = true;
        return 0;
    }
    struct ycbcr band = adjust(band_colour, request);
    for (uint32_t x = 0; x < width; x += 2) {
        struct ycbcr bar = adjust(bar_at(x, width), request);
        uint8_t *pair = bars_row + (size_t)x * 2;
        pair[0] = (uint8_t)bar.y;
        pair[1] = (uint8_t)bar.cb;
        pair[2] = (uint8_t)bar.y;
        pair[3] = (uint8_t)bar.cr;
        pair = band_row + (size_t)x * 2;
        pair[0] = (uint8_t)band.y;
        pair[1] = (uint8_t)band.cb;
        pair[2] = (uint8_t)band.y;
        pair[3] = (uint8_t)band.cr;
    }
    uint32_t top, bottom;
    band_rows(request, &top, &bottom);
    for (uint32_t y = 0; y < request->height; y++) {
        memcpy(dst + row_bytes * y, (y >= top && y < bottom) ? band_row : bars_row, row_bytes);
    }
    free(bars_row);
    free(band_row);
    return size;
}

struct rgb {
    uint8_t r, g, b;
};

/* BT.601 limited-range Y'CbCr to full-range R'G'B' (the inverse of the matrix in ITU-R
 * BT.601 section 2.5), rounded to nearest. */
static struct rgb to_rgb(struct ycbcr colour) {
    double y = (colour.y - 16) * 255.0 / 219.0;
    double cb = (colour.cb - 128) * 255.0 / 224.0;
    double cr = (colour.cr - 128) * 255.0 / 224.0;
    struct rgb out;
    out.r = (uint8_t)clamp((int)(y + 1.402 * cr + 0.5), 0, 255);
    out.g = (uint8_t)clamp((int)(y - 0.344136 * cb - 0.714136 * cr + 0.5), 0, 255);
    out.b = (uint8_t)clamp((int)(y + 1.772 * cb + 0.5), 0, 255);
    return out;
}

/* V4L2_PIX_FMT_RGB24 ('RGB3'): R, G, B bytes per pixel, bytesperline = 3 x width. */
static size_t render_rgb24(const struct emu_frame_request *request, uint8_t *dst,
                           size_t capacity, bool *error) {
    uint32_t width = request->width;
    size_t row_bytes = (size_t)width * 3;
    size_t size = row_bytes * request->height;
    if (size > capacity) {
        *error = true;
        return 0;
    }
    uint8_t *bars_row = malloc(row_bytes);
    uint8_t *band_row = malloc(row_bytes);
    if (bars_row == NULL || band_row == NULL) {
        free(bars_row);
        free(band_row);
        *error = true;
        return 0;
    }
    struct rgb band = to_rgb(adjust(band_colour, request));
    struct rgb colours[8];
    for (int i = 0; i < 8; i++) {
        colours[i] = to_rgb(adjust(bar_colours[i], request));
    }
    for (uint32_t x = 0; x < width; x++) {
        /* Pairs share a bar, as in YUYV, so the bar edges fall on the same pixels. */
        struct rgb bar = colours[(uint64_t)(x & ~1u) * 8 / width];
        uint8_t *pixel = bars_row + (size_t)x * 3;
        pixel[0] = bar.r;
        pixel[1] = bar.g;
        pixel[2] = bar.b;
        pixel = band_row + (size_t)x * 3;
        pixel[0] = band.r;
        pixel[1] = band.g;
        pixel[2] = band.b;
    }
    uint32_t top, bottom;
    band_rows(request, &top, &bottom);
    for (uint32_t y = 0; y < request->height; y++) {
        memcpy(dst + row_bytes * y, (y >= top && y < bottom) ? band_row : bars_row, row_bytes);
    }
    free(bars_row);
    free(band_row);
    return size;
}

/* Bytes of one template row for the planes: Y, then Cb, then Cr. */
static size_t template_row_size(uint32_t width) {
    return (size_t)width * 2;
}

/* Draws the planes row by row from two template rows (bars, band) kept after the planes. */
static void draw_planes(struct emu_frame_source *source, const struct emu_frame_request *request) {
    uint32_t width = request->width;
    uint32_t height = request->height;
    uint32_t chroma_width = width / 2;
    uint8_t *y_plane = source->planes;
    uint8_t *cb_plane = y_plane + (size_t)width * height;
    uint8_t *cr_plane = cb_plane + (size_t)chroma_width * height;
    uint8_t *bars = cr_plane + (size_t)chroma_width * height;
    uint8_t *band_row = bars + template_row_size(width);
    struct ycbcr band = full_range(adjust(band_colour, request));
    for (uint32_t x = 0; x < width; x += 2) {
        struct ycbcr bar = full_range(adjust(bar_at(x, width), request));
        bars[x] = bars[x + 1] = (uint8_t)bar.y;
        bars[width + x / 2] = (uint8_t)bar.cb;
        bars[width + chroma_width + x / 2] = (uint8_t)bar.cr;
        band_row[x] = band_row[x + 1] = (uint8_t)band.y;
        band_row[width + x / 2] = (uint8_t)band.cb;
        band_row[width + chroma_width + x / 2] = (uint8_t)band.cr;
    }
    uint32_t top, bottom;
    band_rows(request, &top, &bottom);
    for (uint32_t y = 0; y < height; y++) {
        const uint8_t *row = (y >= top && y < bottom) ? band_row : bars;
        memcpy(y_plane + (size_t)width * y, row, width);
        memcpy(cb_plane + (size_t)chroma_width * y, row + width, chroma_width);
        memcpy(cr_plane + (size_t)chroma_width * y, row + width + chroma_width, chroma_width);
    }
}

static void clear_ring(struct emu_frame_source *source) {
    for (int i = 0; i < EMU_RING_FRAMES; i++) {
        free(source->jpeg[i]);
        source->jpeg[i] = NULL;
        source->jpeg_size[i] = 0;
    }
}

/* The JPEG for this phase, encoded the first time it is needed. A change of size or of a
 * control that shows in the picture starts a new ring. */
static bool ring_frame(struct emu_frame_source *source, const struct emu_frame_request *request,
                       const uint8_t **jpeg, size_t *size) {
    if (source->width != request->width || source->height != request->height ||
        source->brightness != request->brightness || source->contrast != request->contrast ||
        source->saturation != request->saturation) {
        clear_ring(source);
        free(source->planes);
        source->planes = malloc((size_t)request->width * request->height * 2 +
                                2 * template_row_size(request->width));
        if (source->planes == NULL) {
            source->width = 0;
            return false;
        }
        source->width = request->width;
        source->height = request->height;
        source->brightness = request->brightness;
        source->contrast = request->contrast;
        source->saturation = request->saturation;
    }
    uint32_t phase = request->phase;
    if (source->jpeg[phase] == NULL) {
        if (source->encoder == NULL) {
            source->encoder = tjInitCompress();
            if (source->encoder == NULL) {
                return false;
            }
        }
        draw_planes(source, request);
        const uint8_t *y_plane = source->planes;
        const uint8_t *cb_plane = y_plane + (size_t)request->width * request->height;
        const uint8_t *cr_plane = cb_plane + (size_t)(request->width / 2) * request->height;
        const unsigned char *planes[3] = {y_plane, cb_plane, cr_plane};
        unsigned char *encoded = NULL;
        unsigned long encoded_size = 0;
        /* 4:2:2 like UVC cameras' MJPEG; libjpeg writes its default Huffman tables, which are
         * the standard tables of ITU-T T.81 Annex K.3 that a stripped frame implies. */
        if (tjCompressFromYUVPlanes(source->encoder, planes, (int)request->width, NULL,
                                    (int)request->height, TJSAMP_422, &encoded, &encoded_size,
                                    80, TJFLAG_FASTDCT) != 0) {
            tjFree(encoded);
            return false;
        }
        source->jpeg[phase] = malloc(encoded_size);
        if (source->jpeg[phase] == NULL) {
            tjFree(encoded);
            return false;
        }
        memcpy(source->jpeg[phase], encoded, encoded_size);
        source->jpeg_size[phase] = encoded_size;
        tjFree(encoded);
    }
    *jpeg = source->jpeg[phase];
    *size = source->jpeg_size[phase];
    return true;
}

/* Copies a JPEG without its DHT segments, as many UVC cameras send MJPEG (the USB Video Class
 * "Payload Format for Motion-JPEG" lets a device omit the tables and rely on the standard
 * ones). Marker segments are walked from SOI up to SOS; the entropy-coded data after SOS is
 * copied unchanged. */
static size_t copy_without_dht(const uint8_t *jpeg, size_t size, uint8_t *dst) {
    size_t in = 2;
    size_t out = 2;
    memcpy(dst, jpeg, 2);
    while (in + 4 <= size && jpeg[in] == 0xFF) {
        uint8_t marker = jpeg[in + 1];
        if (marker == 0xDA) {
            break;
        }
        size_t segment = 2 + ((size_t)jpeg[in + 2] << 8 | jpeg[in + 3]);
        if (in + segment > size) {
            break;
        }
        if (marker != 0xC4) {
            memcpy(dst + out, jpeg + in, segment);
            out += segment;
        }
        in += segment;
    }
    memcpy(dst + out, jpeg + in, size - in);
    return out + size - in;
}

static size_t render_mjpeg(struct emu_frame_source *source,
                           const struct emu_frame_request *request, uint8_t *dst,
                           size_t capacity, bool *error) {
    const uint8_t *jpeg;
    size_t size;
    size_t stamp = request->stamp ? EMU_STAMP_SEGMENT_BYTES : 0;
    if (!ring_frame(source, request, &jpeg, &size) || size + stamp > capacity) {
        *error = true;
        return 0;
    }
    /* With a stamp, the frame is copied `stamp` bytes further on and the COM segment then
     * written over the copy's SOI, after a new SOI: SOI, COM, the frame's own segments. */
    uint8_t *out = dst + stamp;
    size_t used;
    if (request->strip_dht) {
        used = copy_without_dht(jpeg, size, out);
    } else {
        memcpy(out, jpeg, size);
        used = size;
    }
    if (stamp > 0) {
        size_t length = stamp - 2; /* the length field counts itself, not the marker */
        dst[0] = 0xFF;
        dst[1] = 0xD8;
        dst[2] = 0xFF;
        dst[3] = 0xFE;
        dst[4] = (uint8_t)(length >> 8);
        dst[5] = (uint8_t)(length & 0xFF);
        memcpy(dst + 6, EMU_STAMP_PREFIX, sizeof EMU_STAMP_PREFIX - 1);
        memset(dst + 6 + sizeof EMU_STAMP_PREFIX - 1, '0', EMU_STAMP_DIGITS);
        used += stamp;
    }
    if (request->truncate) {
        /* Half a frame: the EOI marker and most of the scan are missing, as when a camera
         * drops USB packets mid-frame. */
        used /= 2;
    }
    return used;
}

void emu_frame_stamp(uint8_t *frame, size_t used) {
    if (used < 2 + EMU_STAMP_SEGMENT_BYTES) {
        return;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    uint8_t *digit = frame + 2 + EMU_STAMP_SEGMENT_BYTES - 1;
    for (int i = 0; i < EMU_STAMP_DIGITS; i++) {
        *digit-- = (uint8_t)('0' + ns % 10);
        ns /= 10;
    }
}

struct emu_frame_source *emu_frame_source_new(void) {
    return calloc(1, sizeof(struct emu_frame_source));
}

void emu_frame_source_free(struct emu_frame_source *source) {
    if (source == NULL) {
        return;
    }
    clear_ring(source);
    free(source->planes);
    if (source->encoder != NULL) {
        tjDestroy(source->encoder);
    }
    free(source);
}

size_t emu_frame_render(struct emu_frame_source *source, const struct emu_frame_request *request,
                        uint8_t *dst, size_t capacity, bool *error) {
    *error = false;
    if (request->pixelformat == V4L2_PIX_FMT_MJPEG) {
        return render_mjpeg(source, request, dst, capacity, error);
    }
    if (request->pixelformat == V4L2_PIX_FMT_RGB24) {
        return render_rgb24(request, dst, capacity, error);
    }
    return render_yuyv(request, dst, capacity, error);
}
