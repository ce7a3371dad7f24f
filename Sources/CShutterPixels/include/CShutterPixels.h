// Per-pixel kernels that run on every encoded camera frame. They are in C because
// clang vectorises these byte loops (deinterleaving, fixed-point range expansion)
// far better than the Swift equivalents we measured (benchmarks/README.md).
#ifndef C_SHUTTER_PIXELS_H
#define C_SHUTTER_PIXELS_H

#include <stddef.h>
#include <stdint.h>

/// Packed YUYV 4:2:2 rows (`stride` bytes apart) into planar Y, Cb, Cr (4:2:2, tightly packed),
/// for an even `width`. With `full_range`, BT.601 limited-range samples are expanded to
/// JFIF's full range in the same pass.
void cshutter_yuyv_to_planar422(
    const uint8_t *source, size_t stride, int width, int height, uint8_t *luma, uint8_t *cb, uint8_t *cr,
    int full_range);

/// Writes a `width` x `height` plane of samples `sample_size` bytes each (1 for a Y'CbCr plane,
/// 3 for packed RGB), tightly packed, where output sample (x, y) is the source sample at
/// `source + (start + x * step_x + y * step_y) * sample_size`. Any rotation by a multiple of
/// 90 degrees and any flip is such an affine walk, so one loop does all eight orientations.
void cshutter_plane_transform(
    const uint8_t *source, ptrdiff_t start, ptrdiff_t step_x, ptrdiff_t step_y, uint8_t *destination, int width,
    int height, int sample_size);

#endif
