/*
 * A VFS that is the default unix VFS with one addition: when a file's write, sync or truncate
 * fails, the errno of that failure is kept (per thread) until the connection's owner asks for it.
 *
 * Why: SQLite keeps a failed call's errno in the file (unixFile.lastErrno), but
 * sqlite3_system_errno() returns the errno found when the statement ends (sqlite3SystemError
 * calls xGetLastError, which is errno at that moment). After a WAL sync fails, the rollback
 * makes other calls first, so a full disk (ENOSPC from fsync, as delayed allocation reports it)
 * looked like an unexplained SQLITE_IOERR_FSYNC (https://www.sqlite.org/c3ref/system_errno.html).
 *
 * Every method forwards to the wrapped file; the wrapper's sqlite3_file is followed in the same
 * allocation by the real one (szOsFile covers both), as SQLite's own shims do
 * (https://www.sqlite.org/c3ref/io_methods.html, "VFS shims").
 */
#include "CShutterSQLite.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <string.h>

typedef struct {
    sqlite3_file base;
    sqlite3_file *real;
} shutter_file;

/* Written and read only by the thread that made the failing call: the connection's owner. */
static _Thread_local int last_io_errno;

static sqlite3_vfs *real_vfs;
static sqlite3_vfs shutter_vfs;
static pthread_once_t register_once = PTHREAD_ONCE_INIT;
static int register_result = SQLITE_ERROR;

#define REAL(file) (((shutter_file *)(file))->real)

/* Keeps errno when `rc` is a failure; called right after the real call, before anything else
 * can change errno. */
static int noted(int rc, int saved_errno) {
    if (rc != SQLITE_OK && saved_errno != 0) last_io_errno = saved_errno;
    return rc;
}

static int file_close(sqlite3_file *file) {
    return REAL(file)->pMethods->xClose(REAL(file));
}

static int file_read(sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset) {
    return REAL(file)->pMethods->xRead(REAL(file), buffer, amount, offset);
}

static int file_write(sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset) {
    errno = 0;
    int rc = REAL(file)->pMethods->xWrite(REAL(file), buffer, amount, offset);
    return noted(rc, errno);
}

static int file_truncate(sqlite3_file *file, sqlite3_int64 size) {
    errno = 0;
    int rc = REAL(file)->pMethods->xTruncate(REAL(file), size);
    return noted(rc, errno);
}

static int file_sync(sqlite3_file *file, int flags) {
    errno = 0;
    int rc = REAL(file)->pMethods->xSync(REAL(file), flags);
    return noted(rc, errno);
}

static int file_size(sqlite3_file *file, sqlite3_int64 *size) {
    return REAL(file)->pMethods->xFileSize(REAL(file), size);
}

static int file_lock(sqlite3_file *file, int level) {
    return REAL(file)->pMethods->xLock(REAL(file), level);
}

static int file_unlock(sqlite3_file *file, int level) {
    return REAL(file)->pMethods->xUnlock(REAL(file), level);
}

static int file_check_reserved_lock(sqlite3_file *file, int *result) {
    return REAL(file)->pMethods->xCheckReservedLock(REAL(file), result);
}

static int file_control(sqlite3_file *file, int op, void *argument) {
    int rc = REAL(file)->pMethods->xFileControl(REAL(file), op, argument);
    /* SQLITE_FCNTL_VFSNAME names every VFS in the stack, the shims' before the bottom one's;
     * SQLite's own shims (vfstrace) join them with a slash. */
    if (op == SQLITE_FCNTL_VFSNAME && rc == SQLITE_OK) {
        char **name = (char **)argument;
        *name = sqlite3_mprintf("%s/%z", SHUTTER_SQLITE_VFS_NAME, *name);
    }
    return rc;
}

static int file_sector_size(sqlite3_file *file) {
    return REAL(file)->pMethods->xSectorSize(REAL(file));
}

static int file_device_characteristics(sqlite3_file *file) {
    return REAL(file)->pMethods->xDeviceCharacteristics(REAL(file));
}

static int file_shm_map(sqlite3_file *file, int region, int size, int extend, void volatile **pointer) {
    return REAL(file)->pMethods->xShmMap(REAL(file), region, size, extend, pointer);
}

static int file_shm_lock(sqlite3_file *file, int offset, int count, int flags) {
    return REAL(file)->pMethods->xShmLock(REAL(file), offset, count, flags);
}

static void file_shm_barrier(sqlite3_file *file) {
    REAL(file)->pMethods->xShmBarrier(REAL(file));
}

static int file_shm_unmap(sqlite3_file *file, int delete_flag) {
    return REAL(file)->pMethods->xShmUnmap(REAL(file), delete_flag);
}

static int file_fetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **pointer) {
    return REAL(file)->pMethods->xFetch(REAL(file), offset, amount, pointer);
}

static int file_unfetch(sqlite3_file *file, sqlite3_int64 offset, void *pointer) {
    return REAL(file)->pMethods->xUnfetch(REAL(file), offset, pointer);
}

/* Version 3, as the unix VFS's files are; a file whose methods are older gets it wrapped with
 * the same version, so SQLite never calls a method the real file lacks. */
static const sqlite3_io_methods methods_v3 = {
    3, file_close, file_read, file_write, file_truncate, file_sync, file_size, file_lock, file_unlock,
    file_check_reserved_lock, file_control, file_sector_size, file_device_characteristics,
    file_shm_map, file_shm_lock, file_shm_barrier, file_shm_unmap, file_fetch, file_unfetch,
};
static const sqlite3_io_methods methods_v2 = {
    2, file_close, file_read, file_write, file_truncate, file_sync, file_size, file_lock, file_unlock,
    file_check_reserved_lock, file_control, file_sector_size, file_device_characteristics,
    file_shm_map, file_shm_lock, file_shm_barrier, file_shm_unmap, NULL, NULL,
};
static const sqlite3_io_methods methods_v1 = {
    1, file_close, file_read, file_write, file_truncate, file_sync, file_size, file_lock, file_unlock,
    file_check_reserved_lock, file_control, file_sector_size, file_device_characteristics,
    NULL, NULL, NULL, NULL, NULL, NULL,
};

static int vfs_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags) {
    (void)vfs;
    shutter_file *wrapper = (shutter_file *)file;
    wrapper->real = (sqlite3_file *)&wrapper[1];
    int rc = real_vfs->xOpen(real_vfs, name, wrapper->real, flags, out_flags);
    /* "If the xOpen method sets the sqlite3_file.pMethods element to a non-NULL value, then the
     * xClose method is called even if xOpen reports that it has failed": mirror the real file. */
    const sqlite3_io_methods *real_methods = wrapper->real->pMethods;
    if (!real_methods) {
        file->pMethods = NULL;
    } else if (real_methods->iVersion >= 3) {
        file->pMethods = &methods_v3;
    } else if (real_methods->iVersion == 2) {
        file->pMethods = &methods_v2;
    } else {
        file->pMethods = &methods_v1;
    }
    return rc;
}

static void register_vfs(void) {
    real_vfs = sqlite3_vfs_find(NULL);
    if (!real_vfs) return;
    /* The real VFS's other methods (delete, access, full path name, randomness, sleep, time)
     * are used as they are: the unix VFS's take the VFS only for its limits, copied here. */
    shutter_vfs = *real_vfs;
    shutter_vfs.pNext = NULL;
    shutter_vfs.zName = SHUTTER_SQLITE_VFS_NAME;
    shutter_vfs.szOsFile = (int)sizeof(shutter_file) + real_vfs->szOsFile;
    shutter_vfs.xOpen = vfs_open;
    register_result = sqlite3_vfs_register(&shutter_vfs, 0);
}

int shutter_sqlite_register_vfs(void) {
    pthread_once(&register_once, register_vfs);
    return register_result;
}

int shutter_sqlite_take_io_errno(void) {
    int value = last_io_errno;
    last_io_errno = 0;
    return value;
}
