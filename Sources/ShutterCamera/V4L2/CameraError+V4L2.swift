import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

extension CameraError {
    /// What a failed system call on the V4L2 device at `path` means for the person running Shutter.
    ///
    /// Opening: EACCES/EPERM is a permission problem with a fix to suggest, ENOENT/ENODEV/ENXIO
    /// a camera that is not there (open(2), Documentation/userspace-api/media/v4l/func-open.rst).
    /// Any call: EBUSY means another process holds the device (vidioc-reqbufs.rst, vidioc-s-fmt.rst,
    /// vidioc-streamon.rst), ENODEV that it was unplugged. EIO from the buffer calls is an internal
    /// error after which the driver may have stopped capturing (vidioc-qbuf.rst); vb2 returns it
    /// once the queue is in its error state, which uvcvideo sets on unplug. Only reopening recovers.
    static func classifying(_ error: SystemError, path: String) -> CameraError {
        let opening = error.call == "open"
        let bufferCall = ["VIDIOC_DQBUF", "VIDIOC_QBUF", "VIDIOC_STREAMON", "poll"].contains(error.call)
        let code = error.errno
        if opening && (code == EACCES || code == EPERM) {
            return .permissionDenied(
                path,
                message:
                    "\(error); add the user running shutterd to the 'video' group (usermod -aG video USER), then log in again or restart the service"
            )
        }
        if code == EBUSY { return .busy(path, "another program is using the camera") }
        if code == ENODEV || (opening && (code == ENOENT || code == ENXIO)) || (bufferCall && code == EIO) {
            return .disconnected("\(path): \(error)")
        }
        return .device(error)
    }
}
