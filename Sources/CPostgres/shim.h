#ifndef CPOSTGRES_SHIM_H
#define CPOSTGRES_SHIM_H

// Typed helpers for what Swift cannot use from libpq-fe.h as it is: the notice processor is
// a C function pointer that must not print to stderr (notices may quote user values), and
// the diagnostic field codes are macros of type char.
#include <libpq-fe.h>

static void CPostgres_ignoreNotice(void *context, const char *message) {
    (void)context;
    (void)message;
}

// Drops the server's NOTICE and WARNING messages instead of printing them to stderr.
static inline void CPostgres_silenceNotices(PGconn *connection) {
    PQsetNoticeProcessor(connection, CPostgres_ignoreNotice, (void *)0);
}

static inline const char *CPostgres_sqlState(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_SQLSTATE);
}

// The primary message only: DETAIL and the statement position may quote bound values.
static inline const char *CPostgres_primaryMessage(const PGresult *result) {
    return PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
}

#endif
