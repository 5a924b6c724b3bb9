// libxml2 (Debian libxml2-dev) for Swift: the parser and the document tree, and a one-line function for what
// Swift cannot write (a variadic error handler).
#ifndef JAMBRIDGE_CLIBXML2_SHIM_H
#define JAMBRIDGE_CLIBXML2_SHIM_H
#include <libxml/parser.h>
#include <libxml/tree.h>

static void jambridge_xml_ignore_error(void *context, const char *message, ...) {
    (void)context; (void)message;
}

/// Stops libxml2 printing to stderr on this thread (its encoding errors ignore XML_PARSE_NOERROR): jambridge
/// reports the parser's last error itself.
static inline void jambridge_xml_silence(void) { xmlSetGenericErrorFunc(NULL, jambridge_xml_ignore_error); }
#endif
