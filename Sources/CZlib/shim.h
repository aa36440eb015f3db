// deflateInit2/inflateInit2 are C macros that Swift cannot call; these wrappers expose them.
#include <zlib.h>

static inline int czlib_deflate_init_raw_strategy(z_streamp stream, int level, int strategy) {
    // windowBits -15: raw DEFLATE (no zlib header), as docs/FORMAT.md requires.
    return deflateInit2(stream, level, Z_DEFLATED, -15, 8, strategy);
}

static inline int czlib_inflate_init_raw(z_streamp stream) {
    return inflateInit2(stream, -15);
}
