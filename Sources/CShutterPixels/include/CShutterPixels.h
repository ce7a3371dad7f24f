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

#endif
