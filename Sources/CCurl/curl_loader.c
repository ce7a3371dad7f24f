#include "CCurl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

// The soname of libcurl4's ABI, which libcurl4-openssl-dev's headers describe (Debian 12:
// libcurl4 8.x). Loaded RTLD_LOCAL: its symbols stay out of the daemon's global scope.
static const char LIBRARY[] = "libcurl.so.4";

static struct {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    const char *(*easy_strerror)(CURLcode);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_cleanup)(CURLM *);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned, int, int *);
    CURLMcode (*multi_wakeup)(CURLM *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    const char *(*multi_strerror)(CURLMcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
} curl;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int loaded;
static char load_error[256];

static int resolve(void *library, const char *name, void **slot) {
    *slot = dlsym(library, name);
    if (*slot == NULL) {
        snprintf(load_error, sizeof load_error, "%s: no symbol %s", LIBRARY, name);
        return 0;
    }
    return 1;
}

#define RESOLVE(field) resolve(library, "curl_" #field, (void **)&curl.field)

static void load(void) {
    void *library = dlopen(LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(load_error, sizeof load_error, "%s", reason ? reason : LIBRARY);
        return;
    }
    // Never dlclose'd: libcurl keeps global state (curl_global_init) for the process's life.
    loaded = RESOLVE(global_init) && RESOLVE(easy_init) && RESOLVE(easy_cleanup) && RESOLVE(easy_setopt) &&
             RESOLVE(easy_getinfo) && RESOLVE(easy_strerror) && RESOLVE(multi_init) && RESOLVE(multi_cleanup) &&
             RESOLVE(multi_add_handle) && RESOLVE(multi_remove_handle) && RESOLVE(multi_perform) &&
             RESOLVE(multi_poll) && RESOLVE(multi_wakeup) && RESOLVE(multi_info_read) &&
             RESOLVE(multi_strerror) && RESOLVE(slist_append) && RESOLVE(slist_free_all);
}

int shutter_curl_load(char *error, size_t error_size) {
    pthread_once(&load_once, load);
    if (!loaded && error != NULL && error_size > 0) {
        snprintf(error, error_size, "%s", load_error);
    }
    return loaded;
}

CURLcode shutter_curl_global_init(long flags) { return curl.global_init(flags); }
CURL *shutter_curl_easy_init(void) { return curl.easy_init(); }
void shutter_curl_easy_cleanup(CURL *handle) { curl.easy_cleanup(handle); }
const char *shutter_curl_easy_strerror(CURLcode code) { return curl.easy_strerror(code); }
CURLM *shutter_curl_multi_init(void) { return curl.multi_init(); }
CURLMcode shutter_curl_multi_cleanup(CURLM *multi) { return curl.multi_cleanup(multi); }
CURLMcode shutter_curl_multi_add_handle(CURLM *multi, CURL *handle) { return curl.multi_add_handle(multi, handle); }
CURLMcode shutter_curl_multi_remove_handle(CURLM *multi, CURL *handle) {
    return curl.multi_remove_handle(multi, handle);
}
CURLMcode shutter_curl_multi_perform(CURLM *multi, int *running) { return curl.multi_perform(multi, running); }
CURLMcode shutter_curl_multi_poll(CURLM *multi, struct curl_waitfd *extra, unsigned count, int timeout_ms,
                                  int *ready) {
    return curl.multi_poll(multi, extra, count, timeout_ms, ready);
}
CURLMcode shutter_curl_multi_wakeup(CURLM *multi) { return curl.multi_wakeup(multi); }
CURLMsg *shutter_curl_multi_info_read(CURLM *multi, int *remaining) { return curl.multi_info_read(multi, remaining); }
const char *shutter_curl_multi_strerror(CURLMcode code) { return curl.multi_strerror(code); }
struct curl_slist *shutter_curl_slist_append(struct curl_slist *list, const char *text) {
    return curl.slist_append(list, text);
}
void shutter_curl_slist_free_all(struct curl_slist *list) { curl.slist_free_all(list); }

CURLcode shutter_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode shutter_curl_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode shutter_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode shutter_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode shutter_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode shutter_curl_setopt_write_function(CURL *handle, shutter_curl_write_callback callback) {
    return curl.easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}
CURLcode shutter_curl_response_code(CURL *handle, long *code) {
    return curl.easy_getinfo(handle, CURLINFO_RESPONSE_CODE, code);
}
