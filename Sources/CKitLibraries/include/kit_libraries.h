// libsndfile, libsamplerate and libxml2, loaded (dlopen) when a drum kit from disk first needs them: a daemon that
// reads no kit from disk maps none of them, nor the codecs and ICU they bring in (1.7 MB resident, issue 34). Nothing
// links them: call them through these tables (ControlSocketTests checks the running daemon's mappings).
#ifndef JAMBRIDGE_KIT_LIBRARIES_H
#define JAMBRIDGE_KIT_LIBRARIES_H
#include <sndfile.h>
#include <samplerate.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#define JAMBRIDGE_SNDFILE_CALLS(X) X(sf_open_fd) X(sf_open) X(sf_close) X(sf_command) X(sf_error) \
    X(sf_format_check) X(sf_readf_float) X(sf_writef_float) X(sf_strerror)
#define JAMBRIDGE_SAMPLERATE_CALLS(X) X(src_is_valid_ratio) X(src_simple) X(src_strerror)
#define JAMBRIDGE_LIBXML2_CALLS(X) X(xmlInitParser) X(xmlSetGenericErrorFunc) X(xmlNewParserCtxt) \
    X(xmlFreeParserCtxt) X(xmlCtxtReadMemory) X(xmlCtxtGetLastError) X(xmlFreeDoc) X(xmlDocGetRootElement) \
    X(xmlGetLineNo)

#define JAMBRIDGE_KIT_LIBRARY_FIELD(name) __typeof__(name) *_Nonnull name;
/// A library's calls, by their own names and types.
struct jambridge_sndfile_calls { JAMBRIDGE_SNDFILE_CALLS(JAMBRIDGE_KIT_LIBRARY_FIELD) };
struct jambridge_samplerate_calls { JAMBRIDGE_SAMPLERATE_CALLS(JAMBRIDGE_KIT_LIBRARY_FIELD) };
struct jambridge_libxml2_calls { JAMBRIDGE_LIBXML2_CALLS(JAMBRIDGE_KIT_LIBRARY_FIELD) };
#undef JAMBRIDGE_KIT_LIBRARY_FIELD

/// The library's calls, loaded by the first caller (once, whichever thread); NULL if it cannot be loaded, and then
/// `*error` says why (always set: empty when loaded).
const struct jambridge_sndfile_calls *_Nullable jambridge_load_sndfile(const char *_Nullable *_Nonnull error);
const struct jambridge_samplerate_calls *_Nullable jambridge_load_samplerate(const char *_Nullable *_Nonnull error);
const struct jambridge_libxml2_calls *_Nullable jambridge_load_libxml2(const char *_Nullable *_Nonnull error);

/// Stops the loaded libxml2 printing to stderr on this thread (its encoding errors ignore XML_PARSE_NOERROR): jambridge
/// reports the parser's last error itself. The handler is variadic, which Swift cannot write.
void jambridge_xml_silence(void);
#endif
