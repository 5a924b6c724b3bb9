// libxml2 (Debian libxml2-dev) for Swift: the parser and the document tree, used as they are.
#include <libxml/parser.h>
#include <libxml/tree.h>
