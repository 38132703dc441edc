#ifndef STORESYNC_CLIBXML2_SHIM_H
#define STORESYNC_CLIBXML2_SHIM_H
// Debian's libxml2 is built with ICU; its ICU typedefs clash with the ones
// Foundation brings in ("UErrorCode has different definitions"), and
// storesync never uses libxml2's ICU encoders, so switch them off here.
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlwriter.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlreader.h>
// `xmlFree` is a global function pointer in libxml2; a plain function is
// what Swift can call without unwrapping it.
static inline void storesync_xmlFree(void *pointer) { xmlFree(pointer); }
#endif
