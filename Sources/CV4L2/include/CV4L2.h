// The V4L2 UAPI for Swift. VIDIOC_* and v4l2_fourcc are function-like macros, which
// Swift does not import, so each one used is exposed here as a static inline getter
// (see docs/SWIFT-ON-LINUX.md). Structs, enums and plain constants import as is.
#ifndef C_V4L2_H
#define C_V4L2_H

#include <stdint.h>
#include <linux/videodev2.h>

static inline unsigned long cv4l2_vidioc_querycap(void) { return VIDIOC_QUERYCAP; }
static inline unsigned long cv4l2_vidioc_enum_fmt(void) { return VIDIOC_ENUM_FMT; }
static inline unsigned long cv4l2_vidioc_enum_framesizes(void) { return VIDIOC_ENUM_FRAMESIZES; }
static inline unsigned long cv4l2_vidioc_enum_frameintervals(void) { return VIDIOC_ENUM_FRAMEINTERVALS; }
static inline unsigned long cv4l2_vidioc_g_fmt(void) { return VIDIOC_G_FMT; }
static inline unsigned long cv4l2_vidioc_s_fmt(void) { return VIDIOC_S_FMT; }
static inline unsigned long cv4l2_vidioc_g_parm(void) { return VIDIOC_G_PARM; }
static inline unsigned long cv4l2_vidioc_s_parm(void) { return VIDIOC_S_PARM; }
static inline unsigned long cv4l2_vidioc_reqbufs(void) { return VIDIOC_REQBUFS; }
static inline unsigned long cv4l2_vidioc_querybuf(void) { return VIDIOC_QUERYBUF; }
static inline unsigned long cv4l2_vidioc_qbuf(void) { return VIDIOC_QBUF; }
static inline unsigned long cv4l2_vidioc_dqbuf(void) { return VIDIOC_DQBUF; }
static inline unsigned long cv4l2_vidioc_streamon(void) { return VIDIOC_STREAMON; }
static inline unsigned long cv4l2_vidioc_streamoff(void) { return VIDIOC_STREAMOFF; }
static inline unsigned long cv4l2_vidioc_queryctrl(void) { return VIDIOC_QUERYCTRL; }
static inline unsigned long cv4l2_vidioc_query_ext_ctrl(void) { return VIDIOC_QUERY_EXT_CTRL; }
static inline unsigned long cv4l2_vidioc_querymenu(void) { return VIDIOC_QUERYMENU; }
static inline unsigned long cv4l2_vidioc_g_ctrl(void) { return VIDIOC_G_CTRL; }
static inline unsigned long cv4l2_vidioc_s_ctrl(void) { return VIDIOC_S_CTRL; }

static inline uint32_t cv4l2_cid_base(void) { return V4L2_CID_BASE; }
static inline uint32_t cv4l2_cid_lastp1(void) { return V4L2_CID_LASTP1; }
static inline uint32_t cv4l2_cid_camera_class_base(void) { return V4L2_CID_CAMERA_CLASS_BASE; }
static inline uint32_t cv4l2_cid_private_base(void) { return V4L2_CID_PRIVATE_BASE; }

static inline uint32_t cv4l2_pix_fmt_mjpeg(void) { return V4L2_PIX_FMT_MJPEG; }
static inline uint32_t cv4l2_pix_fmt_jpeg(void) { return V4L2_PIX_FMT_JPEG; }
static inline uint32_t cv4l2_pix_fmt_yuyv(void) { return V4L2_PIX_FMT_YUYV; }
static inline uint32_t cv4l2_pix_fmt_nv12(void) { return V4L2_PIX_FMT_NV12; }
static inline uint32_t cv4l2_pix_fmt_yuv420(void) { return V4L2_PIX_FMT_YUV420; }

#endif
