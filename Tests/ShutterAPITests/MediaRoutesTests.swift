import FoundationEssentials
import ShutterCamera
import ShutterCatalog
import ShutterHTTP
import ShutterTestSupport
import Testing

@testable import ShutterAPI

/// `GET /media/{id}.jpg?width=N`: thumbnails, and the bounds on their cache.
@Suite struct MediaRoutesTests {
    /// A stored 640x480 picture that a real decoder opens.
    private func storePicture(_ catalog: MediaCatalog) async throws -> MediaRecord {
        guard case .jpeg(let jpeg) = FakeCameraSource.frame(sequence: 1, width: 640, height: 480).image else {
            throw CameraError.unsupported("the fake frame is not a JPEG")
        }
        return try await catalog.add(jpeg: jpeg, takenAt: 0, width: 640, height: 480, source: "test")
    }

    private func thumbnails(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "\(directory)/media/thumbs")) ?? []).sorted()
    }

    /// Found in review: keyed by the width asked for, one picture could be made to hold a file for
    /// each of the 4081 widths `width` accepts. Keyed by the width made, it holds at most seven.
    @Test func theCacheHoldsOneFilePerWidthMadeNotPerWidthAskedFor() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            let record = try await storePicture(api.catalog)
            var tags: Set<String> = []
            for width in 81...160 {
                let response = await api.respond(.get, "/media/\(record.id).jpg?width=\(width)")
                #expect(response.status == .ok)
                tags.insert(response.headers["ETag"] ?? "")
            }
            // Every width from 81 to 160 is 2/8 of 640: one image, one file, one tag.
            #expect(thumbnails(directory) == ["\(record.id)-160.jpg"])
            #expect(tags.count == 1 && tags.first?.hasSuffix("-w160\"") == true)
            for width in Int(MediaRoutes.thumbnailWidths.lowerBound)...639 {
                _ = await api.respond(.get, "/media/\(record.id).jpg?width=\(width)")
            }
            #expect(thumbnails(directory).count == 7, "\(thumbnails(directory))")
        }
    }

    @Test func aWidthThatWouldNotShrinkThePictureServesTheOriginal() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            let record = try await storePicture(api.catalog)
            for width in [600, 640, 4096] {
                let response = await api.respond(.get, "/media/\(record.id).jpg?width=\(width)")
                #expect(response.status == .ok)
                #expect(response.headers["ETag"] == "\"\(record.id)-\(record.bytes)\"")
            }
            #expect(thumbnails(directory).isEmpty)
        }
    }

    /// A cache must not take the room pictures need: at the disk's floor the thumbnail is made and
    /// served, but not stored.
    @Test func atTheDiskFloorAThumbnailIsServedButNotCached() async throws {
        try await withTemporaryDirectory { directory in
            let record: MediaRecord
            do {
                record = try await storePicture(try TestAPI(directory: directory).catalog)
            }
            let api = try TestAPI(directory: directory, minimumFreeBytes: Int64.max / 2)
            let response = await api.respond(.get, "/media/\(record.id).jpg?width=320")
            #expect(response.status == .ok)
            guard case .bytes(let bytes) = response.body else {
                Issue.record("expected the thumbnail's bytes, got \(response.body)")
                return
            }
            #expect(try JPEGDecoder.header(of: bytes).width == 320)
            #expect(response.headers["ETag"] == "\"\(record.id)-\(bytes.count)-w320\"")
            #expect(thumbnails(directory).isEmpty)
        }
    }
}

/// `/healthz` says when snaps are refused for space, and why.
@Suite struct HealthTests {
    @Test func belowTheDiskFloorHealthIsDegradedWithTheReason() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory, minimumFreeBytes: Int64.max / 2)
            let response = await api.respond(.get, "/healthz")
            #expect(response.status == .serviceUnavailable)
            #expect(response.text.contains(#""status":"degraded""#))
            #expect(response.text.contains("storage full: snaps are refused with 507"))
            #expect(response.text.contains("min_free_bytes"))
        }
    }

    @Test func withRoomHealthIsOK() async throws {
        try await withTemporaryDirectory { directory in
            let response = await (try TestAPI(directory: directory)).respond(.get, "/healthz")
            #expect(response.status == .ok)
            #expect(response.text.contains(#""status":"ok""#))
        }
    }
}
