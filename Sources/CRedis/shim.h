#ifndef CREDIS_SHIM_H
#define CREDIS_SHIM_H

// Typed, non-variadic helpers over hiredis 0.14's async API. The event-library hooks are set
// here so Swift never writes into the context's struct; every hook gets `data` back.
#include <hiredis/hiredis.h>
#include <hiredis/async.h>

typedef void (*CRedisEventHook)(void *data);
typedef void (*CRedisReplyCallback)(redisAsyncContext *context, void *reply, void *privdata);

/// Installs the event hooks (addRead, delRead, addWrite, delWrite, cleanup) and their `data`.
static inline void CRedis_attach(redisAsyncContext *context, void *data,
                                 CRedisEventHook addRead, CRedisEventHook delRead,
                                 CRedisEventHook addWrite, CRedisEventHook delWrite,
                                 CRedisEventHook cleanup) {
    context->ev.data = data;
    context->ev.addRead = addRead;
    context->ev.delRead = delRead;
    context->ev.addWrite = addWrite;
    context->ev.delWrite = delWrite;
    context->ev.cleanup = cleanup;
}

/// The context's socket.
static inline int CRedis_fd(const redisAsyncContext *context) { return context->c.fd; }

/// The context's error code (0: none) and text (may be NULL).
static inline int CRedis_err(const redisAsyncContext *context) { return context->err; }
static inline const char *CRedis_errstr(const redisAsyncContext *context) { return context->errstr; }

/// Queues one command given as binary-safe arguments; REDIS_OK or REDIS_ERR.
static inline int CRedis_command(redisAsyncContext *context, CRedisReplyCallback callback, void *privdata,
                                 int argc, const char **argv, const size_t *lengths) {
    return redisAsyncCommandArgv(context, callback, privdata, argc, argv, lengths);
}

/// A reply's parts, read without touching the struct from Swift.
static inline int CRedis_reply_type(const redisReply *reply) { return reply->type; }
static inline long long CRedis_reply_integer(const redisReply *reply) { return reply->integer; }
static inline const char *CRedis_reply_str(const redisReply *reply) { return reply->str; }
static inline size_t CRedis_reply_len(const redisReply *reply) { return reply->len; }
static inline size_t CRedis_reply_elements(const redisReply *reply) { return reply->elements; }
static inline const redisReply *CRedis_reply_element(const redisReply *reply, size_t index) {
    return reply->element[index];
}

static const int CRedis_OK = REDIS_OK;
static const int CRedis_REPLY_STRING = REDIS_REPLY_STRING;
static const int CRedis_REPLY_ARRAY = REDIS_REPLY_ARRAY;
static const int CRedis_REPLY_INTEGER = REDIS_REPLY_INTEGER;
static const int CRedis_REPLY_NIL = REDIS_REPLY_NIL;
static const int CRedis_REPLY_STATUS = REDIS_REPLY_STATUS;
static const int CRedis_REPLY_ERROR = REDIS_REPLY_ERROR;

#endif
