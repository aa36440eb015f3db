#if canImport(Glibc)
import CMalloc
#endif

/// How the C allocator hands freed memory back to the system, for a process that runs for days.
public enum Allocator {
    /// After the first large buffer it frees, glibc raises its mmap and trim thresholds for
    /// the whole process (to about twice that buffer: a decoded block of 32,768 events is
    /// 3.9 MB). From then on every buffer below the new threshold comes from a thread's arena,
    /// and a free arena top under ~8 MB is never returned: a relay that opened one big board
    /// and served one late joiner kept ~18 MB it no longer used. A fixed threshold turns that
    /// adjustment off (mallopt(3)), so freed memory goes back as it did before the first big
    /// free. Measured on the 2 M-point board: +22 MB → +3.8 MB resident after its open and two
    /// catch-ups (docs/PERFORMANCE.md, "Relay memory per open board"). No-op off glibc.
    public static func returnFreedMemoryPromptly() {
        #if canImport(Glibc)
        _ = mallopt(M_TRIM_THRESHOLD, 128 << 10)
        #endif
    }
}
