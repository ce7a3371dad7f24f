#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed
// wrapper per argument type (curl_easy_setopt(3), curl_easy_getinfo(3)).
static inline CURLcode shutter_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode shutter_curl_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode shutter_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode shutter_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode shutter_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

typedef size_t (*shutter_curl_write_callback)(char *data, size_t size, size_t count, void *context);

static inline CURLcode shutter_curl_setopt_write_function(CURL *handle, shutter_curl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}

static inline CURLcode shutter_curl_response_code(CURL *handle, long *code) {
    return curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, code);
}

static inline CURLcode shutter_curl_private(CURL *handle, char **pointer) {
    return curl_easy_getinfo(handle, CURLINFO_PRIVATE, pointer);
}

// CURLMsg's `data` is a union; Swift imports it, but reading it through a helper is clearer.
static inline CURLcode shutter_curl_message_result(const CURLMsg *message) {
    return message->data.result;
}
