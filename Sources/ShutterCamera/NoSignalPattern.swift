import ShutterSystem

/// The picture shown instead of the camera while it is gone: dark grey, "NO SIGNAL",
/// the time and the reason, so a viewer sees at a glance that the stream is alive
/// but the camera is not (ustreamer's and motion's habit).
public enum NoSignalPattern {
    /// Renders the frame at `width` x `height` for `wallMilliseconds`, with `reason` on the last line.
    public static func render(width: Int, height: Int, wallMilliseconds: Int64, reason: String) -> YUVImage {
        var image = YUVImage(width: width, height: height, subsampling: .yuv420)
        image.fill(
            x: 0, y: 0, width: width, height: height, luma: 40, cb: YUVImage.neutralChroma,
            cr: YUVImage.neutralChroma)
        let title = "NO SIGNAL"
        let titleScale = max(1, width / (BitmapFont.advance * title.count * 2))
        let titleSize = BitmapFont.size(of: title, scale: titleScale)
        let titleY = max(0, height / 2 - titleSize.height)
        BitmapFont.draw(
            title, into: &image, x: max(0, (width - titleSize.width) / 2), y: titleY, scale: titleScale,
            background: nil)
        let lineScale = max(1, titleScale / 4)
        let time = Timestamp.iso8601(millisecondsSince1970: wallMilliseconds)
        let timeSize = BitmapFont.size(of: time, scale: lineScale)
        let timeY = titleY + titleSize.height + 4 * lineScale
        BitmapFont.draw(
            time, into: &image, x: max(0, (width - timeSize.width) / 2), y: timeY, scale: lineScale,
            background: nil)
        // Long reasons are cut to what fits on one line.
        let fitting = max(1, width / (BitmapFont.advance * lineScale) - 2)
        let shown = String(reason.prefix(fitting))
        let reasonSize = BitmapFont.size(of: shown, scale: lineScale)
        BitmapFont.draw(
            shown, into: &image, x: max(0, (width - reasonSize.width) / 2),
            y: min(height - reasonSize.height, timeY + timeSize.height + 4 * lineScale), scale: lineScale,
            background: nil)
        return image
    }
}
