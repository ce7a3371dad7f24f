import CSQLite

/// The catalog's tables, as an ordered list of migrations numbered by `PRAGMA user_version`.
enum CatalogSchema {
    /// One step of the schema, applied once, inside the transaction that records its version.
    struct Migration: Sendable {
        /// The `user_version` the database has after this step.
        let version: Int32
        let apply: @Sendable (Database) throws -> Void
    }

    /// Every migration, in order; append new versions, never edit one that has shipped.
    ///
    /// Version 2 adds the jobs table; `media.job_id` already existed in version 1 so that pictures
    /// taken before it need no rewrite. Version 3 stores the kind of a job's last failure beside
    /// its text, so nothing has to classify failures by their wording. Version 4 gives each
    /// picture the label it was taken with (a snap's or its job's), indexed for `?label=`.
    /// Version 5 adds the event history behind `/events` and the outbox sinks, and each sink's
    /// cursor into it.
    /// Version 6 indexes `taken_at` and kept pictures for `/library`'s `since`, `until` and
    /// `keep` filters; it touches only the media table, so it applies the same whether or not the
    /// change feed's version 5 ran before it.
    static let migrations: [Migration] = [
        Migration(version: 1) { database in
            // AUTOINCREMENT keeps the largest id ever used in sqlite_sequence, so the id of a
            // deleted newest picture is never handed out again (https://www.sqlite.org/autoinc.html).
            // STRICT makes SQLite reject a value of the wrong type instead of storing it
            // (https://www.sqlite.org/stricttables.html, SQLite 3.37 and later).
            try database.execute(
                sql: """
                    CREATE TABLE media (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        taken_at INTEGER NOT NULL,
                        width INTEGER NOT NULL CHECK (width > 0),
                        height INTEGER NOT NULL CHECK (height > 0),
                        bytes INTEGER NOT NULL CHECK (bytes >= 0),
                        sha256 TEXT NOT NULL,
                        source TEXT NOT NULL,
                        job_id INTEGER,
                        keep INTEGER NOT NULL DEFAULT 0 CHECK (keep IN (0, 1))
                    ) STRICT;
                    -- Every index entry ends with the rowid, so this index also serves
                    -- "WHERE job_id = ? AND id < ? ORDER BY id" without sorting
                    -- (https://www.sqlite.org/queryplanner.html).
                    CREATE INDEX media_job_id ON media (job_id);
                    """)
        },
        Migration(version: 2) { database in
            // Times are wall milliseconds: they must mean the same after a restart, which the
            // monotonic clock's arbitrary origin does not. `spec` is the job spec's Codable JSON,
            // so the catalog needs no knowledge of job kinds.
            try database.execute(
                sql: """
                    CREATE TABLE jobs (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        spec TEXT NOT NULL,
                        label TEXT,
                        state TEXT NOT NULL,
                        created_at INTEGER NOT NULL,
                        started_at INTEGER NOT NULL,
                        taken INTEGER NOT NULL DEFAULT 0 CHECK (taken >= 0),
                        missed INTEGER NOT NULL DEFAULT 0 CHECK (missed >= 0),
                        last_failure TEXT,
                        finished_at INTEGER
                    ) STRICT;
                    -- Start-up resumes the unfinished jobs; this keeps that a lookup, not a scan.
                    CREATE INDEX jobs_unfinished ON jobs (id) WHERE finished_at IS NULL;
                    """)
        },
        Migration(version: 3) { database in
            // NULL for jobs stored before: their failures had no kind (https://www.sqlite.org/lang_altertable.html).
            try database.execute(sql: "ALTER TABLE jobs ADD COLUMN last_failure_kind TEXT")
        },
        Migration(version: 4) { database in
            // NULL for pictures stored before: they had no label. As with media_job_id, each index
            // entry ends with the rowid, so "WHERE label = ? AND id < ? ORDER BY id" walks the index
            // without sorting, and the id cursors page it without OFFSET.
            try database.execute(
                sql: """
                    ALTER TABLE media ADD COLUMN label TEXT;
                    CREATE INDEX media_label ON media (label);
                    """)
        },
        Migration(version: 5) { database in
            // AUTOINCREMENT, as for media: an id is never handed out twice, even after the newest
            // events are pruned, so a client's Last-Event-ID and a sink's cursor keep their meaning
            // across restarts. `data` is the event's JSON object, as clients receive it.
            try database.execute(
                sql: """
                    CREATE TABLE events (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        type TEXT NOT NULL,
                        at INTEGER NOT NULL,
                        data TEXT NOT NULL
                    ) STRICT;
                    CREATE TABLE sink_cursors (
                        sink TEXT PRIMARY KEY,
                        event_id INTEGER NOT NULL
                    ) STRICT;
                    """)
        },
        Migration(version: 6) { database in
            // media_taken_at (each entry ending with the rowid) gives the smallest and largest id
            // taken in a time range from the index alone; the listing then walks the primary key
            // between them, in id order, without sorting (MediaCatalog.page). media_kept is the
            // partner of retention's media_unkept (keep = 0, created at every open): each holds
            // only the rows of one keep value, in id order, so "WHERE keep = 1 ORDER BY id" walks
            // one and stops after a page. Partial, where an index on (keep) would be chosen over
            // media_retention for retention's own queries (https://www.sqlite.org/partialindex.html).
            // IF NOT EXISTS: branches numbered apart and merged later may meet a database that
            // already has them.
            try database.execute(
                sql: """
                    CREATE INDEX IF NOT EXISTS media_taken_at ON media (taken_at);
                    CREATE INDEX IF NOT EXISTS media_kept ON media (id) WHERE keep = 1;
                    """)
        },
        Migration(version: 7) { database in
            // Offloading to S3: `uploaded` once the store has acknowledged the picture, `offloaded`
            // once retention freed its local file (the row stays; /media redirects to the store).
            try database.execute(
                sql: """
                    ALTER TABLE media ADD COLUMN uploaded INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE media ADD COLUMN offloaded INTEGER NOT NULL DEFAULT 0;
                    """)
        },
    ]

    /// The version a fully migrated database has.
    static var latestVersion: Int32 { migrations.last?.version ?? 0 }

    /// Brings `database` to `latestVersion`, one transaction per migration.
    ///
    /// Throws `CatalogError.unsupportedSchemaVersion` for a database written by a newer program,
    /// which this one must not modify.
    static func migrate(_ database: Database) throws {
        let current = try database.userVersion()
        guard current <= latestVersion else {
            throw CatalogError.unsupportedSchemaVersion(found: current, supported: latestVersion)
        }
        for migration in migrations where migration.version > current {
            try database.inTransaction {
                try migration.apply(database)
                try database.setUserVersion(migration.version)
            }
        }
    }
}
