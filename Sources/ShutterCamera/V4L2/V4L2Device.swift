import CV4L2
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// An open V4L2 video node: owns the descriptor and wraps each ioctl the camera uses in a typed call.
///
/// Talks to the kernel with glibc's `open`, `ioctl`, `mmap` and `poll` (no libv4l2), so it works the
/// same on a real camera and under an LD_PRELOAD emulation. Every call goes through `syscall`, and
/// failures come back as `CameraError` (see `CameraError.classifying`). Only single-planar video
/// capture is used. Not Sendable: one owner makes every call, and `close` ends its life.
public final class V4L2Device {
    /// The node's path, such as `/dev/video0`.
    public let path: String
    /// The open descriptor, or -1 once closed.
    public private(set) var descriptor: Int32

    private static let captureType = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit { close() }

    /// Opens `path` read-write, non-blocking and close-on-exec.
    ///
    /// Non-blocking so that `VIDIOC_DQBUF` returns EAGAIN instead of sleeping and `poll` alone
    /// waits, with a timeout (Documentation/userspace-api/media/v4l/func-open.rst). Opening does not
    /// claim the camera; `VIDIOC_REQBUFS` does, so discovery can open a node another program streams from.
    public static func open(_ path: String) throws -> V4L2Device {
        let flags = O_RDWR | O_NONBLOCK | O_CLOEXEC
        do {
            let descriptor = try syscall("open") { Glibc.open(path, flags) }
            return V4L2Device(path: path, descriptor: descriptor)
        } catch let error as SystemError {
            throw CameraError.classifying(error, path: path)
        }
    }

    /// Closes the descriptor, which also stops streaming and frees the buffers; later calls are no-ops.
    public func close() {
        guard descriptor >= 0 else { return }
        closeDescriptor(descriptor)
        descriptor = -1
    }

    // MARK: - Capabilities and formats

    /// What the driver says the node is (`VIDIOC_QUERYCAP`).
    public struct Capabilities: Sendable, Equatable {
        /// The driver's name, such as `"uvcvideo"`.
        public var driver: String
        /// The device's name, such as `"HD Pro Webcam C920"`.
        public var card: String
        /// Where it is attached, such as `"usb-0000:00:14.0-1"`.
        public var busInfo: String
        /// `V4L2_CAP_*` flags of the whole physical device.
        public var capabilities: UInt32
        /// `V4L2_CAP_*` flags of this node.
        public var deviceCapabilities: UInt32

        /// A set of capabilities with every field given.
        public init(
            driver: String, card: String, busInfo: String, capabilities: UInt32, deviceCapabilities: UInt32
        ) {
            self.driver = driver
            self.card = card
            self.busInfo = busInfo
            self.capabilities = capabilities
            self.deviceCapabilities = deviceCapabilities
        }

        /// The flags that describe this node: `device_caps` when the driver fills it in, else `capabilities`.
        ///
        /// Documentation/userspace-api/media/v4l/vidioc-querycap.rst: `capabilities` covers the whole
        /// device, so a UVC camera's metadata node also claims VIDEO_CAPTURE there; only
        /// `device_caps` (valid when V4L2_CAP_DEVICE_CAPS is set) tells the two nodes apart.
        public var nodeCapabilities: UInt32 {
            capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0 ? deviceCapabilities : capabilities
        }

        /// Whether this node captures single-planar video with streaming I/O, as Shutter needs.
        public var isStreamingVideoCapture: Bool {
            let needed = UInt32(V4L2_CAP_VIDEO_CAPTURE) | UInt32(V4L2_CAP_STREAMING)
            return nodeCapabilities & needed == needed
        }
    }

    /// `VIDIOC_QUERYCAP`.
    public func capabilities() throws -> Capabilities {
        var caps = v4l2_capability()
        try ioctl("VIDIOC_QUERYCAP", cv4l2_vidioc_querycap(), &caps)
        return Capabilities(
            driver: cString(caps.driver), card: cString(caps.card), busInfo: cString(caps.bus_info),
            capabilities: caps.capabilities, deviceCapabilities: caps.device_caps)
    }

    /// One entry of `VIDIOC_ENUM_FMT`.
    public struct FormatEntry: Sendable, Equatable {
        /// The fourcc code.
        public var fourcc: UInt32
        /// The driver's description.
        public var description: String
        /// `V4L2_FMT_FLAG_*` flags.
        public var flags: UInt32
    }

    /// The capture pixel formats, in the driver's order (`VIDIOC_ENUM_FMT` until EINVAL).
    public func formats() throws -> [FormatEntry] {
        var entries: [FormatEntry] = []
        for index in 0..<UInt32(256) {
            var entry = v4l2_fmtdesc()
            entry.index = index
            entry.type = Self.captureType
            guard try enumerate("VIDIOC_ENUM_FMT", cv4l2_vidioc_enum_fmt(), &entry) else { break }
            entries.append(
                FormatEntry(
                    fourcc: entry.pixelformat, description: cString(entry.description), flags: entry.flags))
        }
        return entries
    }

    /// The frame sizes offered for `pixelFormat` (`VIDIOC_ENUM_FRAMESIZES`); an empty discrete
    /// list when the driver does not enumerate them.
    public func frameSizes(pixelFormat: UInt32) throws -> FrameSizes {
        var sizes: [FrameSize] = []
        for index in 0..<UInt32(1024) {
            var entry = v4l2_frmsizeenum()
            entry.index = index
            entry.pixel_format = pixelFormat
            guard try enumerate("VIDIOC_ENUM_FRAMESIZES", cv4l2_vidioc_enum_framesizes(), &entry) else {
                break
            }
            // vidioc-enum-framesizes.rst: a stepwise or continuous answer comes alone, at index 0.
            if entry.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                sizes.append(FrameSize(width: Int(entry.discrete.width), height: Int(entry.discrete.height)))
                continue
            }
            let range = entry.stepwise
            return .stepwise(
                minimum: FrameSize(width: Int(range.min_width), height: Int(range.min_height)),
                maximum: FrameSize(width: Int(range.max_width), height: Int(range.max_height)),
                stepWidth: max(Int(range.step_width), 1), stepHeight: max(Int(range.step_height), 1))
        }
        return .discrete(sizes)
    }

    /// The frame rates offered for `pixelFormat` at `width` x `height` (`VIDIOC_ENUM_FRAMEINTERVALS`).
    public func frameIntervals(pixelFormat: UInt32, width: Int, height: Int) throws -> FrameRates {
        var intervals: [FrameInterval] = []
        for index in 0..<UInt32(256) {
            var entry = v4l2_frmivalenum()
            entry.index = index
            entry.pixel_format = pixelFormat
            entry.width = UInt32(clamping: width)
            entry.height = UInt32(clamping: height)
            guard try enumerate("VIDIOC_ENUM_FRAMEINTERVALS", cv4l2_vidioc_enum_frameintervals(), &entry)
            else { break }
            if entry.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue {
                intervals.append(FrameInterval(entry.discrete))
                continue
            }
            return .range(
                fastest: FrameInterval(entry.stepwise.min), slowest: FrameInterval(entry.stepwise.max))
        }
        return intervals.isEmpty ? .unknown : .discrete(intervals)
    }

    /// Every capture format with its sizes and, per size, its rates; stepwise sizes become the
    /// candidates near `requested` (see `FrameSizes.candidates(near:)`). Only formats `include` accepts
    /// are enumerated in depth; the others are listed with no sizes.
    public func offeredFormats(near requested: FrameSize?, include: (UInt32) -> Bool = { _ in true }) throws
        -> [OfferedFormat]
    {
        try formats().map { entry in
            guard include(entry.fourcc) else {
                return OfferedFormat(fourcc: entry.fourcc, description: entry.description, sizes: [])
            }
            let sizes = try frameSizes(pixelFormat: entry.fourcc).candidates(near: requested).map { size in
                OfferedSize(
                    size: size,
                    rates: try frameIntervals(
                        pixelFormat: entry.fourcc, width: size.width, height: size.height))
            }
            return OfferedFormat(fourcc: entry.fourcc, description: entry.description, sizes: sizes)
        }
    }

    /// The single-planar capture format as the driver holds it.
    public struct ImageFormat: Sendable, Equatable {
        /// The fourcc code.
        public var fourcc: UInt32
        /// Width in pixels.
        public var width: Int
        /// Height in pixels.
        public var height: Int
        /// Bytes from one line to the next in the first plane (0 from some drivers for compressed formats).
        public var bytesPerLine: Int
        /// The most bytes a frame can take.
        public var sizeImage: Int
    }

    /// `VIDIOC_G_FMT`.
    public func format() throws -> ImageFormat {
        var format = v4l2_format()
        format.type = Self.captureType
        try ioctl("VIDIOC_G_FMT", cv4l2_vidioc_g_fmt(), &format)
        return ImageFormat(format.fmt.pix)
    }

    /// `VIDIOC_S_FMT`: asks for this format and size and returns what the driver chose instead,
    /// which may differ (vidioc-g-fmt.rst: drivers adjust rather than fail).
    public func setFormat(pixelFormat: UInt32, width: Int, height: Int) throws -> ImageFormat {
        var format = v4l2_format()
        format.type = Self.captureType
        format.fmt.pix.pixelformat = pixelFormat
        format.fmt.pix.width = UInt32(clamping: width)
        format.fmt.pix.height = UInt32(clamping: height)
        format.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        try ioctl("VIDIOC_S_FMT", cv4l2_vidioc_s_fmt(), &format)
        return ImageFormat(format.fmt.pix)
    }

    /// The current frame interval and whether it can be set (`VIDIOC_G_PARM`); nil interval when
    /// the driver does not report one.
    public func frameInterval() throws -> (interval: FrameInterval?, isSettable: Bool) {
        var parameters = v4l2_streamparm()
        parameters.type = Self.captureType
        do {
            try ioctl("VIDIOC_G_PARM", cv4l2_vidioc_g_parm(), &parameters)
        } catch CameraError.device(let error) where error.errno == ENOTTY {
            return (nil, false)
        }
        let capture = parameters.parm.capture
        let interval = FrameInterval(capture.timeperframe)
        return (
            interval.fps == nil ? nil : interval, capture.capability & UInt32(V4L2_CAP_TIMEPERFRAME) != 0
        )
    }

    /// `VIDIOC_S_PARM` with `timeperframe` = `interval`; returns the interval the driver chose
    /// (vidioc-g-parm.rst: it rounds to what it supports and writes that back), nil if it reports none.
    public func setFrameInterval(_ interval: FrameInterval) throws -> FrameInterval? {
        var parameters = v4l2_streamparm()
        parameters.type = Self.captureType
        parameters.parm.capture.timeperframe = v4l2_fract(
            numerator: interval.numerator, denominator: interval.denominator)
        try ioctl("VIDIOC_S_PARM", cv4l2_vidioc_s_parm(), &parameters)
        let chosen = FrameInterval(parameters.parm.capture.timeperframe)
        return chosen.fps == nil ? nil : chosen
    }

    // MARK: - Streaming I/O

    /// `VIDIOC_REQBUFS` for `count` memory-mapped buffers; returns how many the driver allocated
    /// (it may give fewer or more, vidioc-reqbufs.rst). A count of 0 frees them all.
    public func requestBuffers(count: Int) throws -> Int {
        var request = v4l2_requestbuffers()
        request.count = UInt32(clamping: count)
        request.type = Self.captureType
        request.memory = V4L2_MEMORY_MMAP.rawValue
        try ioctl("VIDIOC_REQBUFS", cv4l2_vidioc_reqbufs(), &request)
        return Int(request.count)
    }

    /// Where buffer `index` is to be mapped: its `mmap` offset and length (`VIDIOC_QUERYBUF`).
    public func queryBuffer(index: Int) throws -> (offset: Int, length: Int) {
        var buffer = makeBuffer(index: index)
        try ioctl("VIDIOC_QUERYBUF", cv4l2_vidioc_querybuf(), &buffer)
        return (Int(buffer.m.offset), Int(buffer.length))
    }

    /// Maps a buffer's memory into this process (mmap.rst: MAP_SHARED at the QUERYBUF offset).
    public func mapBuffer(offset: Int, length: Int) throws -> UnsafeMutableRawBufferPointer {
        let address = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, off_t(offset))
        guard let address, address != MAP_FAILED else {
            throw CameraError.classifying(SystemError(errno: errno, call: "mmap"), path: path)
        }
        return UnsafeMutableRawBufferPointer(start: address, count: length)
    }

    /// Unmaps a buffer mapped by `mapBuffer`.
    public static func unmapBuffer(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress else { return }
        // Only fails for an address that was never mapped, which `mapBuffer` rules out.
        _ = try? syscall("munmap") { munmap(base, buffer.count) }
    }

    /// Hands buffer `index` to the driver to fill (`VIDIOC_QBUF`).
    public func queue(index: Int) throws {
        var buffer = makeBuffer(index: index)
        try ioctl("VIDIOC_QBUF", cv4l2_vidioc_qbuf(), &buffer)
    }

    /// A filled buffer taken back from the driver.
    public struct DequeuedBuffer: Sendable, Equatable {
        /// Which buffer.
        public var index: Int
        /// How many bytes of it hold the frame.
        public var bytesUsed: Int
        /// `V4L2_BUF_FLAG_*` flags, including the timestamp type and whether the frame is damaged.
        public var flags: UInt32
        /// The driver's frame counter (it skips numbers for frames it dropped).
        public var sequence: UInt32
        /// The capture time in nanoseconds on the clock `flags` names.
        public var timestampNanoseconds: UInt64
    }

    /// Takes back the oldest filled buffer (`VIDIOC_DQBUF`), or nil if none is ready yet.
    public func dequeue() throws -> DequeuedBuffer? {
        var buffer = makeBuffer(index: 0)
        let outcome: IOResult<Int32>
        do {
            outcome = try nonBlockingSyscall("VIDIOC_DQBUF") {
                withUnsafeMutableBytes(of: &buffer) {
                    Glibc.ioctl(descriptor, cv4l2_vidioc_dqbuf(), $0.baseAddress!)
                }
            }
        } catch let error as SystemError {
            throw CameraError.classifying(error, path: path)
        }
        guard case .processed = outcome else { return nil }
        let seconds = UInt64(max(buffer.timestamp.tv_sec, 0))
        let microseconds = UInt64(max(buffer.timestamp.tv_usec, 0))
        return DequeuedBuffer(
            index: Int(buffer.index), bytesUsed: Int(buffer.bytesused), flags: buffer.flags,
            sequence: buffer.sequence, timestampNanoseconds: seconds * 1_000_000_000 + microseconds * 1000)
    }

    /// `VIDIOC_STREAMON`.
    public func streamOn() throws {
        var type = Int32(Self.captureType)
        try ioctl("VIDIOC_STREAMON", cv4l2_vidioc_streamon(), &type)
    }

    /// `VIDIOC_STREAMOFF`, which also returns every buffer to the dequeued state (vidioc-streamon.rst).
    public func streamOff() throws {
        var type = Int32(Self.captureType)
        try ioctl("VIDIOC_STREAMOFF", cv4l2_vidioc_streamoff(), &type)
    }

    /// What waiting for a frame ended with.
    public enum WaitOutcome: Sendable, Equatable {
        /// A buffer can be dequeued.
        case ready
        /// The timeout passed first.
        case timedOut
        /// The device reported an error or hang-up (these `poll` revents).
        case failed(Int16)
    }

    /// Waits up to `timeoutMilliseconds` for a filled buffer (`poll` for POLLIN).
    ///
    /// func-poll.rst: POLLERR means the queue is in error (uvcvideo sets it on unplug) or has no
    /// buffers queued, which cannot happen here since every buffer is requeued at once.
    public func waitForFrame(timeoutMilliseconds: Int) throws -> WaitOutcome {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let timeout = Int32(clamping: max(timeoutMilliseconds, 0))
        let count: Int32
        do {
            count = try syscall("poll") { poll(&entry, 1, timeout) }
        } catch let error as SystemError {
            throw CameraError.classifying(error, path: path)
        }
        if count == 0 { return .timedOut }
        let failure = Int16(POLLERR) | Int16(POLLHUP) | Int16(POLLNVAL)
        if entry.revents & failure != 0 { return .failed(entry.revents) }
        return .ready
    }

    // MARK: - Helpers

    private func makeBuffer(index: Int) -> v4l2_buffer {
        var buffer = v4l2_buffer()
        buffer.index = UInt32(clamping: index)
        buffer.type = Self.captureType
        buffer.memory = V4L2_MEMORY_MMAP.rawValue
        return buffer
    }

    /// One ioctl on the device, with failures classified into `CameraError`.
    func ioctl<Argument>(_ name: String, _ request: UInt, _ argument: inout Argument) throws {
        do {
            _ = try syscall(name) {
                withUnsafeMutableBytes(of: &argument) { Glibc.ioctl(descriptor, request, $0.baseAddress!) }
            }
        } catch let error as SystemError {
            throw CameraError.classifying(error, path: path)
        }
    }

    /// One step of an enumeration ioctl: false at the end of the list (EINVAL), or when the
    /// driver does not implement it (ENOTTY), as the VIDIOC_ENUM_* and QUERY* pages describe.
    func enumerate<Argument>(_ name: String, _ request: UInt, _ argument: inout Argument) throws -> Bool {
        do {
            _ = try syscall(name) {
                withUnsafeMutableBytes(of: &argument) { Glibc.ioctl(descriptor, request, $0.baseAddress!) }
            }
            return true
        } catch let error as SystemError {
            if error.errno == EINVAL || error.errno == ENOTTY { return false }
            throw CameraError.classifying(error, path: path)
        }
    }
}

extension FrameInterval {
    /// The interval a `struct v4l2_fract` holds.
    init(_ fraction: v4l2_fract) {
        self.init(numerator: fraction.numerator, denominator: fraction.denominator)
    }
}

extension V4L2Device.ImageFormat {
    /// The fields of a `struct v4l2_pix_format` Shutter uses.
    init(_ pix: v4l2_pix_format) {
        self.init(
            fourcc: pix.pixelformat, width: Int(pix.width), height: Int(pix.height),
            bytesPerLine: Int(pix.bytesperline), sizeImage: Int(pix.sizeimage))
    }
}

/// The text of a fixed-size, NUL-padded C char array that Swift imports as a tuple.
func cString<Tuple>(_ tuple: Tuple) -> String {
    withUnsafeBytes(of: tuple) { bytes in
        let end = bytes.firstIndex(of: 0) ?? bytes.count
        return String(decoding: bytes[0..<end], as: UTF8.self)
    }
}
