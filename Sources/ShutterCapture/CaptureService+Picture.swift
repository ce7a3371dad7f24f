import ShutterCamera

extension CaptureService {
    /// The file stored for `frame`: its JPEG, with the burned-in text drawn for this picture when
    /// it carries its own (its `label` and `jobID` fill `{label}` and `{job}`), and an EXIF block
    /// naming this camera, its driver, the time taken (local, with its offset) and `label`.
    ///
    /// Without an overlay of its own everything after the EXIF block is the frame's bytes
    /// unchanged, so an MJPEG camera's entropy-coded data is never touched. The catalog's `bytes`
    /// and `sha256` are computed from what this returns, so they describe the file served; the
    /// live preview never goes through here.
    public nonisolated func storedPicture(of frame: EncodedFrame, label: String?, jobID: Int64? = nil) throws
        -> [UInt8]
    {
        var jpeg = frame.jpeg
        if let overlay, let source = frame.pictureSource {
            var image: YUVImage
            switch source {
            case .yuv(let captured): image = captured
            case .jpeg(let bytes):
                // Text on the preview only: the picture is the camera's JPEG, untouched.
                guard pictureRenderer != nil else {
                    return frame.storedPicture(
                        jpeg: bytes, label: label, make: cameraDriver, model: cameraName, software: software)
                }
                image = try JPEGDecoder.decodeYUV(bytes)
            }
            guard let pictureRenderer else {
                jpeg = try JPEGEncoder(quality: quality).encode(image)
                return frame.storedPicture(
                    jpeg: jpeg, label: label, make: cameraDriver, model: cameraName, software: software)
            }
            let fields = OverlayTemplate.Fields(
                wallMilliseconds: frame.wallMilliseconds, camera: cameraName, label: label,
                frame: frame.sequence,
                job: jobID, width: image.width, height: image.height)
            let lines = overlay.template.expand(fields, utc: overlay.utc)
            pictureRenderer.withRenderer { $0.draw(lines, into: &image) }
            // Once per stored picture, off the capture thread: a handle of its own is cheap at that rate.
            jpeg = try JPEGEncoder(quality: quality).encode(image)
        }
        return frame.storedPicture(
            jpeg: jpeg, label: label, make: cameraDriver, model: cameraName, software: software)
    }
}

extension EncodedFrame {
    /// `jpeg` (by default this frame's) with the EXIF block for these names and its capture
    /// time, in local time.
    public func storedPicture(
        jpeg: [UInt8]? = nil, label: String?, make: String, model: String, software: String
    ) -> [UInt8] {
        EXIFBlock(
            takenAtMilliseconds: wallMilliseconds,
            utcOffsetSeconds: EXIFBlock.localUTCOffsetSeconds(atMilliseconds: wallMilliseconds),
            make: make, model: model, software: software, imageDescription: label
        ).inserted(into: jpeg ?? self.jpeg)
    }
}
