"""A minimal V4L2 capture client (fcntl.ioctl and mmap, nothing else) for tests that drive a
camera ioctl by ioctl, such as the emulated camera's. Structures and request codes follow
<linux/videodev2.h> on 64-bit Linux; the test file checks a few codes against their known
values."""

import ctypes
import errno
import fcntl
import mmap
import os
import select
import time

u8, u32, s32, s64 = ctypes.c_uint8, ctypes.c_uint32, ctypes.c_int32, ctypes.c_int64


def _ioc(direction, number, structure):
    """_IOC() of asm-generic/ioctl.h for type 'V'."""
    return (direction << 30) | (ctypes.sizeof(structure) << 16) | (ord("V") << 8) | number


_READ, _WRITE = 2, 1


def fourcc(text):
    return int.from_bytes(text.encode("ascii"), "little")


class Capability(ctypes.Structure):
    _fields_ = [("driver", ctypes.c_char * 16), ("card", ctypes.c_char * 32),
                ("bus_info", ctypes.c_char * 32), ("version", u32), ("capabilities", u32),
                ("device_caps", u32), ("reserved", u32 * 3)]


class PixFormat(ctypes.Structure):
    _fields_ = [("width", u32), ("height", u32), ("pixelformat", u32), ("field", u32),
                ("bytesperline", u32), ("sizeimage", u32), ("colorspace", u32), ("priv", u32),
                ("flags", u32), ("ycbcr_enc", u32), ("quantization", u32), ("xfer_func", u32)]


class _FormatUnion(ctypes.Union):
    # struct v4l2_window holds pointers, which gives the union 8-byte alignment.
    _fields_ = [("pix", PixFormat), ("raw_data", u8 * 200), ("_align", ctypes.c_void_p)]


class Format(ctypes.Structure):
    _fields_ = [("type", u32), ("fmt", _FormatUnion)]


class RequestBuffers(ctypes.Structure):
    _fields_ = [("count", u32), ("type", u32), ("memory", u32), ("capabilities", u32),
                ("flags", u8), ("reserved", u8 * 3)]


class _Timeval(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long)]


class _Timecode(ctypes.Structure):
    _fields_ = [("type", u32), ("flags", u32), ("frames", u8), ("seconds", u8),
                ("minutes", u8), ("hours", u8), ("userbits", u8 * 4)]


class _BufferLocation(ctypes.Union):
    _fields_ = [("offset", u32), ("userptr", ctypes.c_ulong), ("planes", ctypes.c_void_p),
                ("fd", s32)]


class Buffer(ctypes.Structure):
    _fields_ = [("index", u32), ("type", u32), ("bytesused", u32), ("flags", u32),
                ("field", u32), ("timestamp", _Timeval), ("timecode", _Timecode),
                ("sequence", u32), ("memory", u32), ("m", _BufferLocation), ("length", u32),
                ("reserved2", u32), ("request_fd", s32)]


class Control(ctypes.Structure):
    _fields_ = [("id", u32), ("value", s32)]


class QueryControl(ctypes.Structure):
    _fields_ = [("id", u32), ("type", u32), ("name", ctypes.c_char * 32), ("minimum", s32),
                ("maximum", s32), ("step", s32), ("default_value", s32), ("flags", u32),
                ("reserved", u32 * 2)]


class QueryMenu(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("id", u32), ("index", u32), ("name", ctypes.c_char * 32), ("reserved", u32)]


class ExtControl(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("id", u32), ("size", u32), ("reserved2", u32), ("value", s32),
                ("_high", s32)]


class ExtControls(ctypes.Structure):
    _fields_ = [("which", u32), ("count", u32), ("error_idx", u32), ("request_fd", s32),
                ("reserved", u32), ("controls", ctypes.POINTER(ExtControl))]


class Fraction(ctypes.Structure):
    _fields_ = [("numerator", u32), ("denominator", u32)]


class CaptureParm(ctypes.Structure):
    _fields_ = [("capability", u32), ("capturemode", u32), ("timeperframe", Fraction),
                ("extendedmode", u32), ("readbuffers", u32), ("reserved", u32 * 4)]


class _ParmUnion(ctypes.Union):
    _fields_ = [("capture", CaptureParm), ("raw_data", u8 * 200)]


class StreamParm(ctypes.Structure):
    _fields_ = [("type", u32), ("parm", _ParmUnion)]


VIDIOC_QUERYCAP = _ioc(_READ, 0, Capability)
VIDIOC_G_FMT = _ioc(_READ | _WRITE, 4, Format)
VIDIOC_S_FMT = _ioc(_READ | _WRITE, 5, Format)
VIDIOC_REQBUFS = _ioc(_READ | _WRITE, 8, RequestBuffers)
VIDIOC_QUERYBUF = _ioc(_READ | _WRITE, 9, Buffer)
VIDIOC_QBUF = _ioc(_READ | _WRITE, 15, Buffer)
VIDIOC_DQBUF = _ioc(_READ | _WRITE, 17, Buffer)
VIDIOC_STREAMON = _ioc(_WRITE, 18, ctypes.c_int)
VIDIOC_STREAMOFF = _ioc(_WRITE, 19, ctypes.c_int)
VIDIOC_G_PARM = _ioc(_READ | _WRITE, 21, StreamParm)
VIDIOC_S_PARM = _ioc(_READ | _WRITE, 22, StreamParm)
VIDIOC_G_CTRL = _ioc(_READ | _WRITE, 27, Control)
VIDIOC_S_CTRL = _ioc(_READ | _WRITE, 28, Control)
VIDIOC_QUERYCTRL = _ioc(_READ | _WRITE, 36, QueryControl)
VIDIOC_QUERYMENU = _ioc(_READ | _WRITE, 37, QueryMenu)
VIDIOC_G_EXT_CTRLS = _ioc(_READ | _WRITE, 71, ExtControls)
VIDIOC_S_EXT_CTRLS = _ioc(_READ | _WRITE, 72, ExtControls)
VIDIOC_TRY_EXT_CTRLS = _ioc(_READ | _WRITE, 73, ExtControls)

BUF_TYPE_VIDEO_CAPTURE = 1
MEMORY_MMAP = 1
BUF_FLAG_MAPPED = 0x1
BUF_FLAG_TIMESTAMP_MONOTONIC = 0x2000
CTRL_FLAG_NEXT_CTRL = 0x80000000
CID_BRIGHTNESS = 0x00980900
CID_POWER_LINE_FREQUENCY = 0x00980918
CID_EXPOSURE_AUTO = 0x009A0901


class Camera:
    """One open V4L2 capture device, streaming through mmap'd buffers."""

    def __init__(self, path="/dev/video0", nonblocking=True):
        self.fd = os.open(path, os.O_RDWR | (os.O_NONBLOCK if nonblocking else 0))
        self.maps = []

    def ioctl(self, request, structure):
        fcntl.ioctl(self.fd, request, structure)
        return structure

    def capability(self):
        return self.ioctl(VIDIOC_QUERYCAP, Capability())

    def set_format(self, width, height, pixelformat):
        fmt = Format(type=BUF_TYPE_VIDEO_CAPTURE)
        fmt.fmt.pix.width, fmt.fmt.pix.height = width, height
        fmt.fmt.pix.pixelformat = fourcc(pixelformat)
        return self.ioctl(VIDIOC_S_FMT, fmt).fmt.pix

    def get_control(self, cid):
        return self.ioctl(VIDIOC_G_CTRL, Control(id=cid)).value

    def set_control(self, cid, value):
        return self.ioctl(VIDIOC_S_CTRL, Control(id=cid, value=value)).value

    def request_buffers(self, count):
        return self.ioctl(VIDIOC_REQBUFS, RequestBuffers(count=count, type=BUF_TYPE_VIDEO_CAPTURE,
                                                         memory=MEMORY_MMAP))

    def start(self, count=4):
        """REQBUFS, QUERYBUF and mmap each buffer, QBUF them all, STREAMON."""
        granted = self.request_buffers(count).count
        for index in range(granted):
            buf = self.ioctl(VIDIOC_QUERYBUF, Buffer(index=index, type=BUF_TYPE_VIDEO_CAPTURE,
                                                     memory=MEMORY_MMAP))
            self.maps.append(mmap.mmap(self.fd, buf.length, mmap.MAP_SHARED, mmap.PROT_READ,
                                       offset=buf.m.offset))
            self.queue(index)
        self.ioctl(VIDIOC_STREAMON, ctypes.c_int(BUF_TYPE_VIDEO_CAPTURE))
        return granted

    def queue(self, index):
        self.ioctl(VIDIOC_QBUF, Buffer(index=index, type=BUF_TYPE_VIDEO_CAPTURE,
                                       memory=MEMORY_MMAP))

    def dequeue(self):
        """DQBUF: (buffer, bytes of the frame); raises OSError (EAGAIN when none is ready)."""
        buf = self.ioctl(VIDIOC_DQBUF, Buffer(type=BUF_TYPE_VIDEO_CAPTURE, memory=MEMORY_MMAP))
        return buf, bytes(self.maps[buf.index][:buf.bytesused])

    def poll(self, timeout):
        """poll() events of the descriptor within `timeout` seconds (0 if none)."""
        poller = select.poll()
        poller.register(self.fd, select.POLLIN | select.POLLPRI)
        events = poller.poll(timeout * 1000)
        return events[0][1] if events else 0

    def frames(self, count, timeout=5):
        """Waits for and returns `count` (buffer, data) pairs, requeueing each buffer."""
        result = []
        deadline = time.monotonic() + timeout
        while len(result) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.poll(remaining):
                raise TimeoutError(f"{len(result)} of {count} frames")
            try:
                buf, data = self.dequeue()
            except BlockingIOError:
                continue
            result.append((buf, data))
            self.queue(buf.index)
        return result

    def stop(self):
        self.ioctl(VIDIOC_STREAMOFF, ctypes.c_int(BUF_TYPE_VIDEO_CAPTURE))

    def close(self):
        for m in self.maps:
            m.close()
        self.maps = []
        os.close(self.fd)


def error_of(call, *args):
    """The errno name a call fails with, or None if it succeeds."""
    try:
        call(*args)
    except OSError as error:
        return errno.errorcode[error.errno]
    return None
