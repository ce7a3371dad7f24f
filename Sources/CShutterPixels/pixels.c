#include "CShutterPixels.h"

#if defined(__SSE2__)
#include <emmintrin.h>

// Sixteen pixels (32 bytes of YUYV) at a time with SSE2, which every x86-64 CPU has.
// Range expansion uses 16-bit fixed point: (t << 2) * 19077 >> 16 is t * 255/219 and
// (s << 2) * 18652 >> 16 is s * 255/224, truncated rather than rounded (at most one code
// value from the scalar path); packus clamps to 0...255.
static inline __m128i sse_expand_luma(__m128i y16) {
    __m128i t = _mm_subs_epu16(y16, _mm_set1_epi16(16));
    return _mm_mulhi_epu16(_mm_slli_epi16(t, 2), _mm_set1_epi16(19077));
}

static inline __m128i sse_expand_chroma(__m128i c16) {
    __m128i s = _mm_sub_epi16(c16, _mm_set1_epi16(128));
    return _mm_add_epi16(_mm_mulhi_epi16(_mm_slli_epi16(s, 2), _mm_set1_epi16(18652)), _mm_set1_epi16(128));
}

/// Converts the first `pairs & ~7` pixel pairs of a row; returns how many it did.
static int sse_yuyv_row(const uint8_t *in, int pairs, uint8_t *y, uint8_t *u, uint8_t *v, int full_range) {
    const __m128i low = _mm_set1_epi16(0x00FF);
    int i = 0;
    for (; i + 8 <= pairs; i += 8) {
        __m128i a = _mm_loadu_si128((const __m128i *)(in + 4 * i));
        __m128i b = _mm_loadu_si128((const __m128i *)(in + 4 * i + 16));
        __m128i ya = _mm_and_si128(a, low), yb = _mm_and_si128(b, low);
        __m128i ca = _mm_srli_epi16(a, 8), cb = _mm_srli_epi16(b, 8);
        // Chroma lanes alternate U, V: split them into their own 16-bit lanes.
        __m128i ua = _mm_and_si128(ca, _mm_set1_epi32(0x0000FFFF));
        __m128i ub = _mm_and_si128(cb, _mm_set1_epi32(0x0000FFFF));
        __m128i va = _mm_srli_epi32(ca, 16), vb = _mm_srli_epi32(cb, 16);
        // 32-bit lanes to 16-bit lanes (values are below 256, so signed packing is exact).
        __m128i u16 = _mm_packs_epi32(ua, ub);
        __m128i v16 = _mm_packs_epi32(va, vb);
        if (full_range) {
            ya = sse_expand_luma(ya);
            yb = sse_expand_luma(yb);
            u16 = sse_expand_chroma(u16);
            v16 = sse_expand_chroma(v16);
        }
        _mm_storeu_si128((__m128i *)(y + 2 * i), _mm_packus_epi16(ya, yb));
        _mm_storel_epi64((__m128i *)(u + i), _mm_packus_epi16(u16, u16));
        _mm_storel_epi64((__m128i *)(v + i), _mm_packus_epi16(v16, v16));
    }
    return i;
}
#endif

// JFIF (ITU-T T.871 section 7) is full range; BT.601 limited range puts luma at 16...235 and
// chroma at 16...240. 19077/2^14 = 255/219 and 18652/2^14 = 255/224, rounded; the same
// arithmetic as JPEGEncoder.fullRangeLuma/fullRangeChroma, so both paths give identical bytes.
static inline uint8_t clamp_byte(int32_t value) {
    return (uint8_t)(value < 0 ? 0 : (value > 255 ? 255 : value));
}

static inline uint8_t expand_luma(uint8_t value) {
    return clamp_byte((((int32_t)value - 16) * 19077 + 8192) >> 14);
}

static inline uint8_t expand_chroma(uint8_t value) {
    return clamp_byte(((((int32_t)value - 128) * 18652 + 8192) >> 14) + 128);
}

void cshutter_yuyv_to_planar422(
    const uint8_t *source, size_t stride, int width, int height, uint8_t *luma, uint8_t *cb, uint8_t *cr,
    int full_range) {
    const int pairs = width / 2;
    for (int row = 0; row < height; row++) {
        const uint8_t *restrict in = source + (size_t)row * stride;
        uint8_t *restrict y = luma + (size_t)row * (size_t)width;
        uint8_t *restrict u = cb + (size_t)row * (size_t)pairs;
        uint8_t *restrict v = cr + (size_t)row * (size_t)pairs;
        int done = 0;
#if defined(__SSE2__)
        done = sse_yuyv_row(in, pairs, y, u, v, full_range);
#endif
        if (full_range) {
            for (int i = done; i < pairs; i++) {
                y[2 * i] = expand_luma(in[4 * i]);
                u[i] = expand_chroma(in[4 * i + 1]);
                y[2 * i + 1] = expand_luma(in[4 * i + 2]);
                v[i] = expand_chroma(in[4 * i + 3]);
            }
        } else {
            for (int i = done; i < pairs; i++) {
                y[2 * i] = in[4 * i];
                u[i] = in[4 * i + 1];
                y[2 * i + 1] = in[4 * i + 2];
                v[i] = in[4 * i + 3];
            }
        }
    }
}

void cshutter_plane_transform(
    const uint8_t *source, ptrdiff_t start, ptrdiff_t step_x, ptrdiff_t step_y, uint8_t *destination, int width,
    int height, int sample_size) {
    if (sample_size == 1) {
        for (int y = 0; y < height; y++) {
            const uint8_t *in = source + start + (ptrdiff_t)y * step_y;
            uint8_t *out = destination + (size_t)y * (size_t)width;
            // A flip keeps step_x at +-1: contiguous reads the compiler can vectorise; a quarter
            // turn walks a column, one read per row of the source.
            for (int x = 0; x < width; x++) out[x] = in[(ptrdiff_t)x * step_x];
        }
        return;
    }
    for (int y = 0; y < height; y++) {
        const uint8_t *in = source + (start + (ptrdiff_t)y * step_y) * sample_size;
        uint8_t *out = destination + (size_t)y * (size_t)width * (size_t)sample_size;
        for (int x = 0; x < width; x++) {
            const uint8_t *sample = in + (ptrdiff_t)x * step_x * sample_size;
            for (int byte = 0; byte < sample_size; byte++) out[x * sample_size + byte] = sample[byte];
        }
    }
}
