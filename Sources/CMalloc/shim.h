// glibc's allocator controls (mallopt, M_TRIM_THRESHOLD), which Swift's Glibc module leaves out.
// Only JournalPlatform imports this (docs/ARCHITECTURE.md).
#if defined(__linux__)
#include <malloc.h>
#endif
