#ifndef CSHUTTERSQLITE_H
#define CSHUTTERSQLITE_H

/// The name of the VFS that `shutter_sqlite_register_vfs` registers: the default one (unix),
/// with the errno of every failed write, sync and truncate kept for the thread that made it.
#define SHUTTER_SQLITE_VFS_NAME "shutter-unix"

/// Registers the `shutter-unix` VFS (once; later calls return the first call's result), not as
/// the default. Returns SQLITE_OK, or SQLite's error if the default VFS is missing.
int shutter_sqlite_register_vfs(void);

/// The errno of the last write, sync or truncate through `shutter-unix` that failed on this
/// thread since the last call, or 0; clears it.
///
/// sqlite3_system_errno() reads errno when the statement ends, after SQLite's own recovery has
/// made other calls, so a failed WAL sync with ENOSPC can report another errno or none.
int shutter_sqlite_take_io_errno(void);

#endif
