#ifndef STORESYNC_CZLIB_SHIM_H
#define STORESYNC_CZLIB_SHIM_H
#include <zlib.h>
// `deflateInit2` and `inflateInit2` are macros Swift cannot import; these
// pass the version and stream size the macros would.
static inline int storesync_deflateInit2(z_streamp stream, int level, int windowBits) {
    return deflateInit2_(stream, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, (int)sizeof(z_stream));
}
static inline int storesync_inflateInit2(z_streamp stream, int windowBits) {
    return inflateInit2_(stream, windowBits, ZLIB_VERSION, (int)sizeof(z_stream));
}
#endif
