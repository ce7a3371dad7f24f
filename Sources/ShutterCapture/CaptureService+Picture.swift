import ShutterCamera

extension CaptureService {
    /// The file stored for `frame`: its JPEG with an EXIF block naming this camera, its driver,
    /// the time taken (local, with its offset) and `label`. Everything after the block is the
    /// frame's bytes unchanged, so an MJPEG camera's entropy-coded data is never touched.
    ///
    /// The catalog's `bytes` and `sha256` are computed from this, so they describe the file
    /// served; the live preview never goes through here and stays byte-exact.
    public nonisolated func storedPicture(of frame: EncodedFrame, label: String?) -> [UInt8] {
        frame.storedPicture(label: label, make: cameraDriver, model: cameraName, software: software)
    }
}

extension EncodedFrame {
    /// This frame's JPEG with the EXIF block for these names and its capture time, in local time.
    public func storedPicture(label: String?, make: String, model: String, software: String) -> [UInt8] {
        EXIFBlock(
            takenAtMilliseconds: wallMilliseconds,
            utcOffsetSeconds: EXIFBlock.localUTCOffsetSeconds(atMilliseconds: wallMilliseconds),
            make: make, model: model, software: software, imageDescription: label
        ).inserted(into: jpeg)
    }
}
