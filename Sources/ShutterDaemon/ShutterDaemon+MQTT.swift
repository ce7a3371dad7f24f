import ShutterCapture
import ShutterCatalog
import ShutterJobRunner
import ShutterJobs
import ShutterMQTT
import ShutterSystem

extension ShutterDaemon {
    /// The MQTT sink `mqtt_url` asks for, started (it connects in the background), or nil.
    func makeMQTTSink(
        capture: CaptureService, catalog: MediaCatalog, jobs: JobService, clock: any Clock, logger: Logger
    ) throws -> MQTTSink? {
        guard let url = configuration.mqtt.url else { return nil }
        let name = configuration.effectiveName
        var settings = MQTTSink.Settings(
            url: url, name: name, topics: try MQTTTopics(prefix: configuration.effectiveMQTTTopicPrefix),
            softwareVersion: Self.version)
        settings.discoveryPrefix = configuration.mqtt.discoveryPrefix
        settings.publishJPEG = configuration.mqtt.publishJPEG
        settings.jpegMaximumBytes = configuration.mqtt.jpegMaximumBytes
        settings.jobEverySeconds = Double(configuration.mqtt.jobEverySeconds)
        let remote = DaemonCameraRemote(
            capture: capture, catalog: catalog, jobs: jobs, clock: clock,
            snapTimeoutMilliseconds: configuration.snapTimeoutMilliseconds,
            maxJobShots: configuration.maxJobShots)
        let sink = try MQTTSink(
            settings: settings, remote: remote, mediaPath: { catalog.mediaPath(id: $0) }, clock: clock,
            logger: logger.with("component", "mqtt"))
        try sink.start()
        return sink
    }
}

/// What MQTT commands and Home Assistant's sensors get from the daemon, done with the same
/// services, and the same way, as `POST /snap` and `POST /jobs`.
struct DaemonCameraRemote: CameraRemote {
    /// The label of the interval job the MQTT switch starts, which it alone stops.
    static let jobLabel = "mqtt"

    let capture: CaptureService
    let catalog: MediaCatalog
    let jobs: JobService
    let clock: any Clock
    let snapTimeoutMilliseconds: Int
    let maxJobShots: Int

    func snap(label: String?, delaySeconds: Double?) async throws -> Int64? {
        if let delaySeconds {
            let spec = JobSpec(
                kind: .delayed(delayNanoseconds: UInt64(delaySeconds * 1_000_000_000)), label: label)
            _ = try await jobs.create(spec: spec, frameIntervalNanoseconds: frameInterval)
            return nil
        }
        let frame = try await capture.frame(
            capturedAtOrAfter: clock.monotonicNow(), timeoutMilliseconds: snapTimeoutMilliseconds)
        let record = try await catalog.add(
            jpeg: try capture.storedPicture(of: frame, label: label), takenAt: frame.wallMilliseconds,
            width: frame.width, height: frame.height, source: capture.cameraName, label: label)
        return record.id
    }

    func startIntervalJob(everySeconds: Double) async throws {
        guard try await activeJobs().isEmpty else { return }
        let spec = JobSpec(
            kind: .interval(everyNanoseconds: UInt64(everySeconds * 1_000_000_000), end: .count(maxJobShots)),
            label: Self.jobLabel)
        _ = try await jobs.create(spec: spec, frameIntervalNanoseconds: frameInterval)
    }

    func stopIntervalJob() async throws {
        for job in try await activeJobs() { _ = try await jobs.cancel(id: job.record.id) }
    }

    func intervalJobRunning() async throws -> Bool {
        try await !activeJobs().isEmpty
    }

    func libraryState() async throws -> MQTTLibraryState {
        let statistics = try await catalog.statistics()
        var lastPictureAt: String?
        if let newest = statistics.newestID, let record = try await catalog.record(id: newest) {
            lastPictureAt = Timestamp.iso8601(millisecondsSince1970: record.takenAt)
        }
        return MQTTLibraryState(pictures: statistics.count, lastPictureAt: lastPictureAt)
    }

    /// The interval jobs the switch started that have not ended; the newest 100 jobs are looked at.
    private func activeJobs() async throws -> [JobSnapshot] {
        try await jobs.jobs(limit: 100).filter { snapshot in
            guard snapshot.record.label == Self.jobLabel, case .interval? = snapshot.spec?.kind else {
                return false
            }
            return !(JobState(rawValue: snapshot.record.state)?.isFinal ?? true)
        }
    }

    private var frameInterval: UInt64 { UInt64(1_000_000_000 / max(1, capture.status.mode.fps)) }
}
