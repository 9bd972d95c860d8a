#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

// Typed, non-variadic wrappers for the libcurl calls TextGateway uses. Swift cannot call
// C variadic functions, so each setopt/getinfo argument type gets one wrapper here.
#include <curl/curl.h>

typedef size_t (*CCurlDataCallback)(char *data, size_t size, size_t count, void *context);
typedef int (*CCurlSocketCallback)(CURL *easy, curl_socket_t socket, int what, void *context, void *socketContext);
typedef int (*CCurlTimerCallback)(CURLM *multi, long timeoutMilliseconds, void *context);

static inline CURLcode CCurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode CCurl_easy_setopt_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode CCurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode CCurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode CCurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode CCurl_easy_setopt_data_callback(CURL *handle, CURLoption option, CCurlDataCallback value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode CCurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode CCurl_easy_getinfo_offset(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLMcode CCurl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}
static inline CURLMcode CCurl_multi_setopt_pointer(CURLM *handle, CURLMoption option, void *value) {
    return curl_multi_setopt(handle, option, value);
}
static inline CURLMcode CCurl_multi_setopt_socket_callback(CURLM *handle, CCurlSocketCallback value) {
    return curl_multi_setopt(handle, CURLMOPT_SOCKETFUNCTION, value);
}
static inline CURLMcode CCurl_multi_setopt_timer_callback(CURLM *handle, CCurlTimerCallback value) {
    return curl_multi_setopt(handle, CURLMOPT_TIMERFUNCTION, value);
}

static const size_t CCurl_WRITEFUNC_PAUSE = CURL_WRITEFUNC_PAUSE;
static const int CCurl_PAUSE_CONT = CURLPAUSE_CONT;
static const curl_socket_t CCurl_SOCKET_TIMEOUT = CURL_SOCKET_TIMEOUT;
static const long CCurl_GLOBAL_DEFAULT = CURL_GLOBAL_DEFAULT;
static const CURLversion CCurl_VERSION_NOW = CURLVERSION_NOW;

#endif
