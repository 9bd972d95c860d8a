#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H

// Typed wrappers for what Swift cannot use from sqlite3.h as it is: SQLITE_TRANSIENT is a
// macro casting -1 to a function pointer, and sqlite3_config and sqlite3_db_config are
// variadic.
#include <sqlite3.h>

static inline int CSQLite_bind_text_transient(sqlite3_stmt *statement, int index, const char *text, int length) {
    return sqlite3_bind_text(statement, index, text, length, SQLITE_TRANSIENT);
}
static inline int CSQLite_bind_blob_transient(sqlite3_stmt *statement, int index, const void *bytes, int length) {
    return sqlite3_bind_blob(statement, index, bytes, length, SQLITE_TRANSIENT);
}
static inline int CSQLite_db_config_defensive(sqlite3 *db, int on) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, on, (int *)0);
}

// Before the library is first used: whether SQLite keeps memory statistics (a global mutex
// taken on every allocation). Returns SQLITE_MISUSE once the library is initialised.
static inline int CSQLite_config_memstatus(int on) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, on);
}

#endif
