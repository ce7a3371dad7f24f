extension MediaCatalog {
    static let jobColumns =
        "id, spec, label, state, created_at, started_at, taken, missed, last_failure, finished_at, last_failure_kind"

    /// Stores a new job and returns it with its id.
    public func createJob(
        specJSON: String, label: String?, state: String, createdAt: Int64, startedAt: Int64
    ) throws -> JobRecord {
        do {
            let (record, event) = try database.inTransaction {
                try database.cachedStatement(
                    sql:
                        "INSERT INTO jobs (spec, label, state, created_at, started_at) VALUES (?, ?, ?, ?, ?)"
                ).execute(arguments: [specJSON, label, state, createdAt, startedAt])
                let record = JobRecord(
                    id: database.lastInsertedRowID, specJSON: specJSON, label: label, state: state,
                    createdAt: createdAt, startedAt: startedAt)
                return (record, try insertEvent(.jobCreated, data: record.eventJSON))
            }
            published([event])
            return record
        } catch {
            throw CatalogError(error)
        }
    }

    /// Records a job's progress; `finishedAt` is set once, when the job ends. Returns false if there is no such job.
    @discardableResult
    public func updateJob(
        id: Int64, state: String, taken: Int, missed: Int, lastFailure: String?,
        lastFailureKind: String?,
        finishedAt: Int64?
    ) throws -> Bool {
        do {
            let (exists, event) = try database.inTransaction { () throws -> (Bool, CatalogEvent?) in
                let before = try job(id: id)
                try database.cachedStatement(
                    sql: """
                        UPDATE jobs SET state = ?, taken = ?, missed = ?, last_failure = ?, last_failure_kind = ?,
                            finished_at = coalesce(finished_at, ?)
                        WHERE id = ?
                        """
                ).execute(arguments: [state, taken, missed, lastFailure, lastFailureKind, finishedAt, id])
                guard let before, let after = try job(id: id) else { return (false, nil) }
                // Progress the job already reported is not news: a resumed job rewrites its row.
                guard after != before else { return (true, nil) }
                let ended = before.finishedAt == nil && after.finishedAt != nil
                return (true, try insertEvent(ended ? .jobEnded : .jobUpdated, data: after.eventJSON))
            }
            if let event { published([event]) }
            return exists
        } catch {
            throw CatalogError(error)
        }
    }

    /// The job with `id`, or nil if there is none.
    public func job(id: Int64) throws -> JobRecord? {
        do {
            return try database.fetchOne(
                sql: "SELECT \(Self.jobColumns) FROM jobs WHERE id = ?", arguments: [id], Self.decodeJob)
        } catch {
            throw CatalogError(error)
        }
    }

    /// At most `limit` jobs, newest first.
    public func jobs(limit: Int) throws -> [JobRecord] {
        guard limit >= 1 else { throw CatalogError.invalidArgument("limit \(limit) is below 1") }
        do {
            return try database.fetchAll(
                sql: "SELECT \(Self.jobColumns) FROM jobs ORDER BY id DESC LIMIT ?", arguments: [limit],
                Self.decodeJob)
        } catch {
            throw CatalogError(error)
        }
    }

    /// How many jobs are in each state (`scheduled`, `running`, `done`, …), for `/metrics`.
    public func jobCountsByState() throws -> [String: Int] {
        do {
            let rows = try database.fetchAll(sql: "SELECT state, COUNT(*) FROM jobs GROUP BY state") { row in
                (try row.decode(String.self, at: 0), Int(try row.decode(Int64.self, at: 1)))
            }
            return Dictionary(rows, uniquingKeysWith: +)
        } catch {
            throw CatalogError(error)
        }
    }

    /// Every job that has not ended, oldest first: what start-up resumes.
    public func unfinishedJobs() throws -> [JobRecord] {
        do {
            return try database.fetchAll(
                sql: "SELECT \(Self.jobColumns) FROM jobs WHERE finished_at IS NULL ORDER BY id",
                Self.decodeJob)
        } catch {
            throw CatalogError(error)
        }
    }

    private static func decodeJob(_ row: Row) throws -> JobRecord {
        JobRecord(
            id: try row.decode(at: 0), specJSON: try row.decode(at: 1), label: row[2],
            state: try row.decode(at: 3), createdAt: try row.decode(at: 4), startedAt: try row.decode(at: 5),
            taken: try row.decode(at: 6), missed: try row.decode(at: 7), lastFailure: row[8],
            lastFailureKind: row[10], finishedAt: row[9])
    }
}
