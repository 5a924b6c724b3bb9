#include "kit_libraries.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

// One loader per library. `soname` is the one Debian 12's runtime package installs (libsndfile1, libsamplerate0,
// libxml2), the name the linker would have recorded. Each call is looked up by its own name; a library that lacks
// one is closed again and not used. `ready` runs once it is loaded.
#define JAMBRIDGE_KIT_LIBRARY(library, soname, CALLS, ready) \
    static struct jambridge_##library##_calls library##_calls; \
    static const struct jambridge_##library##_calls *library##_loaded; \
    static char library##_error[512]; \
    static pthread_once_t library##_once = PTHREAD_ONCE_INIT; \
    static void library##_load(void) { \
        struct jambridge_##library##_calls *calls = &library##_calls; \
        char *error = library##_error; \
        const char *name = soname; \
        void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL); \
        if (!handle) { \
            snprintf(error, sizeof library##_error, "cannot load %s (%s)", name, dlerror()); \
            return; \
        } \
        CALLS(JAMBRIDGE_KIT_LIBRARY_RESOLVE) \
        ready; \
        library##_loaded = calls; \
        return; \
    missing: \
        snprintf(error, sizeof library##_error, "%s lacks a call jambridge uses: %s", name, dlerror()); \
        dlclose(handle); \
    } \
    const struct jambridge_##library##_calls *jambridge_load_##library(const char **error) { \
        pthread_once(&library##_once, library##_load); \
        *error = library##_error; \
        return library##_loaded; \
    }
#define JAMBRIDGE_KIT_LIBRARY_RESOLVE(call) \
    if (!(calls->call = (__typeof__(call) *)dlsym(handle, #call))) goto missing;

JAMBRIDGE_KIT_LIBRARY(sndfile, "libsndfile.so.1", JAMBRIDGE_SNDFILE_CALLS, (void)0)
JAMBRIDGE_KIT_LIBRARY(samplerate, "libsamplerate.so.0", JAMBRIDGE_SAMPLERATE_CALLS, (void)0)
// libxml2 is set up before any thread parses.
JAMBRIDGE_KIT_LIBRARY(libxml2, "libxml2.so.2", JAMBRIDGE_LIBXML2_CALLS, calls->xmlInitParser())

static void jambridge_xml_ignore_error(void *context, const char *message, ...) {
    (void)context;
    (void)message;
}

void jambridge_xml_silence(void) {
    if (libxml2_loaded) libxml2_loaded->xmlSetGenericErrorFunc(NULL, jambridge_xml_ignore_error);
}
