// libcurl for the webhook and S3 sinks, loaded with dlopen(3) the first time a sink needs it
// rather than linked: linking it loads 24 more libraries at start-up (GnuTLS, Kerberos, LDAP,
// libssh2, librtmp... whose constructors run), 3.9 MiB of resident memory in a daemon that has
// no HTTP sink configured (benchmarks/README.md, "Where the resident memory goes").
//
// Every libcurl call goes through a `shutter_curl_` function here; calling a `curl_` function
// directly fails at link time, since the daemon does not link libcurl.
#ifndef C_CURL_H
#define C_CURL_H

#include <stddef.h>
#include <curl/curl.h>

/// Loads libcurl.so.4 and resolves every function below, once per process (later calls return
/// the first answer). Returns 1 when loaded; 0 with dlerror(3)'s reason in `error` otherwise.
/// No other function here may be called before it has returned 1.
int shutter_curl_load(char *error, size_t error_size);

CURLcode shutter_curl_global_init(long flags);
CURL *shutter_curl_easy_init(void);
void shutter_curl_easy_cleanup(CURL *handle);
const char *shutter_curl_easy_strerror(CURLcode code);
CURLM *shutter_curl_multi_init(void);
CURLMcode shutter_curl_multi_cleanup(CURLM *multi);
CURLMcode shutter_curl_multi_add_handle(CURLM *multi, CURL *handle);
CURLMcode shutter_curl_multi_remove_handle(CURLM *multi, CURL *handle);
CURLMcode shutter_curl_multi_perform(CURLM *multi, int *running);
CURLMcode shutter_curl_multi_poll(CURLM *multi, struct curl_waitfd *extra, unsigned count, int timeout_ms,
                                  int *ready);
CURLMcode shutter_curl_multi_wakeup(CURLM *multi);
CURLMsg *shutter_curl_multi_info_read(CURLM *multi, int *remaining);
const char *shutter_curl_multi_strerror(CURLMcode code);
struct curl_slist *shutter_curl_slist_append(struct curl_slist *list, const char *text);
void shutter_curl_slist_free_all(struct curl_slist *list);

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed
// wrapper per argument type (curl_easy_setopt(3), curl_easy_getinfo(3)).
CURLcode shutter_curl_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode shutter_curl_setopt_off(CURL *handle, CURLoption option, curl_off_t value);
CURLcode shutter_curl_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode shutter_curl_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode shutter_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);

typedef size_t (*shutter_curl_write_callback)(char *data, size_t size, size_t count, void *context);

CURLcode shutter_curl_setopt_write_function(CURL *handle, shutter_curl_write_callback callback);
CURLcode shutter_curl_response_code(CURL *handle, long *code);

// CURLMsg's `data` is a union; Swift imports it, but reading it through a helper is clearer.
static inline CURLcode shutter_curl_message_result(const CURLMsg *message) {
    return message->data.result;
}

#endif
